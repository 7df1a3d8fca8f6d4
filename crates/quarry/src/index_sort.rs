//! In what order does an index keep its documents? The index sort (Lucene's
//! `IndexWriterConfig.setIndexSort`, Elasticsearch's `index.sort.*`): one or more column fields,
//! each ascending or descending, fixed when the index is created. Every segment written (flush
//! and merge) holds its documents in that order, ties in the order they were added, so a sorted
//! search whose leading keys are the index sort's can stop reading a segment after its first
//! `k` competitive documents ([`crate::Searcher::search_sorted`]).
//!
//! Values compare as a sorted search compares them: a multi-valued field by its smallest value
//! ascending and its largest descending; documents without a value last (Elasticsearch's
//! default `_last`) unless `missing_first`, whatever the direction.
use serde::{Deserialize, Serialize};

use crate::schema::Schema;
use crate::{Error, Result};

/// One key of an index sort.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexSortField {
    /// A field with a column (integer, float, date, boolean or keyword, `doc_values` on).
    pub field: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub descending: bool,
    /// Documents without a value first (default: last, in both directions).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub missing_first: bool,
}

impl IndexSortField {
    /// Ascending by `field`, missing values last.
    pub fn asc(field: &str) -> Self {
        Self {
            field: field.into(),
            descending: false,
            missing_first: false,
        }
    }
    /// Descending by `field`, missing values last.
    pub fn desc(field: &str) -> Self {
        Self {
            descending: true,
            ..Self::asc(field)
        }
    }

    /// Parses `field`, `field:asc` or `field:desc` (the command line's `--index-sort`).
    pub fn parse(spec: &str) -> Result<Self> {
        let (field, order) = match spec.rsplit_once(':') {
            Some((f, o)) => (f, Some(o)),
            None => (spec, None),
        };
        if field.is_empty() {
            return Err(Error::IndexSort {
                field: spec.into(),
                reason: "no field name; write `field`, `field:asc` or `field:desc`".into(),
            });
        }
        match order {
            None | Some("asc") => Ok(Self::asc(field)),
            Some("desc") => Ok(Self::desc(field)),
            Some(o) => Err(Error::IndexSort {
                field: field.into(),
                reason: format!("order {o:?} is neither \"asc\" nor \"desc\""),
            }),
        }
    }
}

impl std::fmt::Display for IndexSortField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}",
            self.field,
            if self.descending { "desc" } else { "asc" }
        )?;
        if self.missing_first {
            f.write_str(" (missing first)")?;
        }
        Ok(())
    }
}

/// The order an index keeps its documents in: at least one key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct IndexSort {
    pub fields: Vec<IndexSortField>,
}

impl IndexSort {
    pub fn new(fields: Vec<IndexSortField>) -> Self {
        Self { fields }
    }

    /// Parses a list of `field[:asc|desc]` specs, each possibly comma-separated.
    pub fn parse<S: AsRef<str>>(specs: &[S]) -> Result<Self> {
        let mut fields = Vec::new();
        for s in specs {
            for part in s.as_ref().split(',') {
                fields.push(IndexSortField::parse(part.trim())?);
            }
        }
        Ok(Self { fields })
    }

    /// Checks the sort against `schema`: at least one key, every field known, with a column,
    /// and named once. An index sort is checked when the index is created and when it is
    /// opened (a commit point naming a field the schema lacks is refused, not ignored).
    pub fn validate(&self, schema: &Schema) -> Result<()> {
        if self.fields.is_empty() {
            return Err(Error::IndexSort {
                field: String::new(),
                reason: "an index sort needs at least one field".into(),
            });
        }
        for (i, k) in self.fields.iter().enumerate() {
            let bad = |reason: String| Error::IndexSort {
                field: k.field.clone(),
                reason,
            };
            let Some(id) = schema.field_id(&k.field) else {
                let known: Vec<&str> = schema
                    .fields()
                    .iter()
                    .filter(|f| f.has_column())
                    .map(|f| f.name.as_str())
                    .collect();
                return Err(bad(format!(
                    "the schema has no such field; fields with a column: {}",
                    known.join(", ")
                )));
            };
            let entry = schema.field(id);
            if !entry.has_column() {
                return Err(bad(format!(
                    "{} fields have no column{}; sort by an integer, float, date, boolean or keyword field",
                    entry.field_type,
                    if entry.field_type.columnar() {
                        " when \"doc_values\" is false"
                    } else {
                        ""
                    }
                )));
            }
            if self.fields[..i].iter().any(|p| p.field == k.field) {
                return Err(bad("the field is named twice".into()));
            }
        }
        Ok(())
    }

    /// Each key's field id in `schema` (the sort must be [valid](Self::validate) for it).
    pub fn field_ids(&self, schema: &Schema) -> Result<Vec<u32>> {
        self.fields
            .iter()
            .map(|k| {
                schema
                    .field_id(&k.field)
                    .ok_or_else(|| Error::unknown_field(schema, &k.field))
            })
            .collect()
    }
}

impl std::fmt::Display for IndexSort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, k) in self.fields.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{k}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Schema {
        Schema::builder()
            .integer("n")
            .keyword("k")
            .text("body", false)
            .build()
    }

    #[test]
    fn parses_specs_and_refuses_bad_orders() {
        let s = IndexSort::parse(&["n:desc,k", "body:asc"]).unwrap();
        assert_eq!(
            s.fields,
            vec![
                IndexSortField::desc("n"),
                IndexSortField::asc("k"),
                IndexSortField::asc("body")
            ]
        );
        assert_eq!(s.to_string(), "n:desc, k:asc, body:asc");
        for bad in ["n:down", ":desc", ""] {
            assert!(
                matches!(IndexSort::parse(&[bad]), Err(Error::IndexSort { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn validates_against_the_schema() {
        let s = schema();
        IndexSort::parse(&["n:desc", "k"])
            .unwrap()
            .validate(&s)
            .unwrap();
        let err = |specs: &[&str]| IndexSort::parse(specs).unwrap().validate(&s).unwrap_err();
        assert!(err(&["body"])
            .to_string()
            .contains("text fields have no column"));
        assert!(err(&["nope"]).to_string().contains("no such field"));
        assert!(err(&["n", "n:desc"]).to_string().contains("named twice"));
        let e = IndexSort::new(vec![]).validate(&s).unwrap_err();
        assert!(e.to_string().contains("at least one field"), "{e}");
        assert!(e.is_client_error());
    }

    #[test]
    fn serializes_compactly() {
        let s = IndexSort::new(vec![IndexSortField::desc("n"), IndexSortField::asc("k")]);
        let j = serde_json::to_string(&s).unwrap();
        assert_eq!(j, r#"[{"field":"n","descending":true},{"field":"k"}]"#);
        assert_eq!(serde_json::from_str::<IndexSort>(&j).unwrap(), s);
        assert!(serde_json::from_str::<IndexSort>(r#"[{"field":"n","mode":"x"}]"#).is_err());
    }
}
