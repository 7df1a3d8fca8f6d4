//! What query each clause means: Lucene's `QueryParserBase` (`addClause`, `getFieldQuery`,
//! `getPrefixQuery`, `getRangeQuery`, `handleBareTokenQuery`, `handleQuotedTerm`, `handleBoost`, boolean
//! construction with the clause limit) and `MultiFieldQueryParser`'s expansion over several
//! default fields.
use super::error::{ParseError, ParseErrorKind};
use super::escapes::{java_parse_float, unescape_str};
use super::grammar::{Conj, Mods, PResult, Parser, SUPPORTED};
use super::lexer::{Kind, Token};
use super::Operator;
use crate::query::ast::{Clause, Occur, Query, FUZZY_MAX_EDITS};

impl<'a> Parser<'a> {
    /// `handleBareTokenQuery`.
    pub(super) fn bare_token_query(
        &self,
        field: Option<&str>,
        t: Token,
        fuzzy: Option<Token>,
    ) -> PResult<Option<Query>> {
        let image = self.image(t);
        let image = if t.kind == Kind::BareOper {
            &image[..1]
        } else {
            image
        };
        let text = unescape_str(self.input, image, t.start)?;
        match t.kind {
            Kind::Star | Kind::WildTerm => self.wildcard_query(field, image, t),
            Kind::PrefixTerm => {
                let prefix = unescape_str(self.input, &image[..image.len() - 1], t.start)?;
                self.prefix_query(field, &prefix, t)
            }
            Kind::Regexp => {
                let pattern = image.strip_prefix('/').unwrap_or(image);
                let pattern = pattern.strip_suffix('/').unwrap_or(pattern);
                self.per_field(field, t.start, |p, f| Query::Regexp {
                    field: f.to_string(),
                    pattern: p.cfg.analysis.normalize(f, pattern),
                })
            }
            _ => match fuzzy {
                Some(f) => self.fuzzy_query(field, &text, f),
                None => self.field_query(field, &text, t.start),
            },
        }
    }

    /// `handleBareFuzzy` and `getFuzzyQuery`: `~` alone is 2 edits, `~N` N edits (at most 2),
    /// `~0.x` Lucene's old minimum similarity (`FuzzyQuery.floatToEdits`); the term is
    /// normalized, not tokenized.
    fn fuzzy_query(&self, field: Option<&str>, text: &str, slop: Token) -> PResult<Option<Query>> {
        let image = self.image(slop);
        let sim = java_parse_float(&image[1..]).unwrap_or(2.0);
        if sim < 0.0 {
            return Err(self.err(
                ParseErrorKind::InvalidValue,
                slop.start,
                "a minimum similarity between 0.0 and 1.0, or 0, 1 or 2 edits",
                format!("'{image}'"),
            ));
        }
        if sim >= 1.0 && sim != (sim as i32) as f32 {
            return Err(self.err(
                ParseErrorKind::InvalidValue,
                slop.start,
                "a whole number of edits (fractional edit distances are not allowed)",
                format!("'{image}'"),
            ));
        }
        self.per_field(field, slop.start, |p, f| {
            let term = p.cfg.analysis.normalize(f, text);
            let len = term.chars().count();
            let max_edits = if sim >= 1.0 {
                (sim as u32).min(FUZZY_MAX_EDITS)
            } else if sim == 0.0 {
                0
            } else {
                (((1.0 - f64::from(sim)) * len as f64) as u32).min(FUZZY_MAX_EDITS)
            };
            Query::fuzzy(f, term, max_edits)
        })
    }

    /// One query per field: in `field`, in the single default field, or (`MultiFieldQueryParser`)
    /// a SHOULD clause per default field, each with its field boost.
    fn per_field(
        &self,
        field: Option<&str>,
        at: usize,
        make: impl Fn(&Self, &str) -> Query,
    ) -> PResult<Option<Query>> {
        match field {
            Some(f) => Ok(Some(self.field_boosted(make(self, f), f))),
            None if !self.cfg.multi_field() => Ok(Some(make(self, self.single_default_field(at)?))),
            None => {
                let clauses = self
                    .cfg
                    .default_fields
                    .iter()
                    .map(|f| self.field_boosted(make(self, f), f))
                    .collect();
                self.multi_field_query(clauses, at)
            }
        }
    }

    /// `handleQuotedTerm`: the phrase text and its slop (`(int) Float.parseFloat(..)`, the
    /// default slop when it does not parse).
    pub(super) fn quoted_term(
        &self,
        field: Option<&str>,
        t: Token,
        fuzzy: Option<Token>,
    ) -> PResult<Option<Query>> {
        let mut slop = i64::from(self.cfg.phrase_slop);
        if let Some(f) = fuzzy {
            if let Some(v) = java_parse_float(&self.image(f)[1..]) {
                slop = i64::from(v as i32); // Java's saturating (int) cast, NaN -> 0
            }
        }
        let image = self.image(t);
        let text = unescape_str(self.input, &image[1..image.len() - 1], t.start + 1)?;
        let slop_at = fuzzy.map_or(t.start, |f| f.start);
        match field {
            Some(f) => {
                let q = self.new_field_query(f, &text, true, t.start)?;
                q.map(|q| self.apply_slop(q, slop, slop_at)).transpose()
            }
            None if !self.cfg.multi_field() => {
                let f = self.single_default_field(t.start)?;
                let q = self.new_field_query(f, &text, true, t.start)?;
                q.map(|q| self.apply_slop(q, slop, slop_at)).transpose()
            }
            None => {
                let mut clauses = Vec::new();
                for f in &self.cfg.default_fields {
                    if let Some(q) = self.new_field_query(f, &text, true, t.start)? {
                        let q = self.field_boosted(q, f);
                        clauses.push(self.apply_slop(q, slop, slop_at)?);
                    }
                }
                self.multi_field_query(clauses, t.start)
            }
        }
    }

    pub(super) fn apply_slop(&self, q: Query, slop: i64, at: usize) -> PResult<Query> {
        match q {
            Query::Phrase { field, terms, .. } => {
                if slop < 0 {
                    return Err(self.err(
                        ParseErrorKind::InvalidValue,
                        at,
                        "a phrase slop of 0 or more",
                        slop.to_string(),
                    ));
                }
                Ok(Query::Phrase {
                    field,
                    terms,
                    slop: slop as u32,
                })
            }
            Query::Boost { query, boost } => Ok(Query::Boost {
                query: Box::new(self.apply_slop(*query, slop, at)?),
                boost,
            }),
            other => Ok(other),
        }
    }

    /// `handleBoost`: a boost on a dropped (empty) query is ignored, as in Lucene.
    pub(super) fn handle_boost(
        &self,
        q: Option<Query>,
        boost: Option<Token>,
    ) -> PResult<Option<Query>> {
        let (Some(q), Some(b)) = (q.as_ref(), boost) else {
            return Ok(q);
        };
        let image = self.image(b);
        let value: f32 = image.parse().unwrap_or(1.0);
        if !value.is_finite() {
            return Err(self.err(
                ParseErrorKind::InvalidValue,
                b.start,
                "a finite boost",
                format!(
                    "'{}' (too large for a 32-bit float)",
                    image.chars().take(40).collect::<String>()
                ),
            ));
        }
        Ok(Some(Query::boosted(q.clone(), value)))
    }

    pub(super) fn single_default_field(&self, at: usize) -> PResult<&'a str> {
        match self.cfg.default_fields.first() {
            Some(f) => Ok(f.as_str()),
            None => Err(self.err(
                ParseErrorKind::NoDefaultField,
                at,
                "'field:' before the term (the parser has no default field)",
                "a term without a field",
            )),
        }
    }

    /// `getFieldQuery(field, text, quoted = false)`, with `MultiFieldQueryParser`'s
    /// per-token grouping when the field is the default and there are several.
    pub(super) fn field_query(
        &self,
        field: Option<&str>,
        text: &str,
        at: usize,
    ) -> PResult<Option<Query>> {
        if let Some(f) = field {
            if let Some(q) = self.one_sided_range(f, text, at)? {
                return Ok(Some(q));
            }
            return self.new_field_query(f, text, false, at);
        }
        if !self.cfg.multi_field() {
            let f = self.single_default_field(at)?;
            return self.new_field_query(f, text, false, at);
        }
        let mut per_field: Vec<(&str, Query)> = Vec::new();
        let mut max_terms = 0;
        for f in &self.cfg.default_fields {
            if let Some(q) = self.new_field_query(f, text, false, at)? {
                max_terms = max_terms.max(match &q {
                    Query::Boolean { clauses, .. } => clauses.len(),
                    _ => 1,
                });
                per_field.push((f.as_str(), q));
            }
        }
        let mut clauses = Vec::new();
        for term_num in 0..max_terms {
            let mut term_clauses = Vec::new();
            for (f, q) in &per_field {
                let sub = match q {
                    Query::Boolean { clauses, .. } => {
                        clauses.get(term_num).map(|c| c.query.clone())
                    }
                    other if term_num == 0 => Some(other.clone()),
                    _ => None,
                };
                if let Some(sub) = sub {
                    term_clauses.push(self.field_boosted(sub, f));
                }
            }
            if max_terms > 1 {
                if !term_clauses.is_empty() {
                    let group = term_clauses
                        .into_iter()
                        .map(|q| Clause::new(Occur::Should, q))
                        .collect();
                    clauses.push(self.checked_boolean(group, at)?);
                }
            } else {
                clauses.extend(term_clauses);
            }
        }
        self.multi_field_query(clauses, at)
    }

    /// `QueryBuilder.createFieldQuery` for a plain analyzer (one token per position).
    pub(super) fn new_field_query(
        &self,
        field: &str,
        text: &str,
        quoted: bool,
        at: usize,
    ) -> PResult<Option<Query>> {
        let mut tokens = self.cfg.analysis.tokens(field, text);
        match tokens.len() {
            0 => Ok(None),
            1 => Ok(Some(Query::term(field, tokens.pop().unwrap_or_default()))),
            _ if quoted => Ok(Some(Query::Phrase {
                field: field.to_string(),
                terms: tokens
                    .into_iter()
                    .enumerate()
                    .map(|(i, t)| (i as u32, t))
                    .collect(),
                slop: self.cfg.phrase_slop,
            })),
            _ => {
                let occur = self.cfg.operator_occur();
                let clauses = tokens
                    .into_iter()
                    .map(|t| Clause::new(occur, Query::term(field, t)))
                    .collect();
                Ok(Some(self.checked_boolean(clauses, at)?))
            }
        }
    }

    /// `getWildcardQuery`: `*:*` is every document; a pattern may not start with `*` or `?`
    /// (Lucene's `allowLeadingWildcard` is off by default); the text between wildcards and
    /// escapes is normalized (`analyzeWildcard`), the rest kept as written.
    pub(super) fn wildcard_query(
        &self,
        field: Option<&str>,
        image: &str,
        t: Token,
    ) -> PResult<Option<Query>> {
        let field_is_star = match field {
            Some(f) => f == "*",
            None => {
                !self.cfg.multi_field() && self.cfg.default_fields.first().is_some_and(|f| f == "*")
            }
        };
        if image == "*" && field_is_star {
            return Ok(Some(self.field_boosted(Query::MatchAll, "*")));
        }
        if image.starts_with('*') || image.starts_with('?') {
            let found = if image == "*" {
                "a lone '*' wildcard (use '*:*' to match all documents)".to_string()
            } else {
                format!("the wildcard term '{image}' ('*' or '?' is not allowed first)")
            };
            return Err(self.err(ParseErrorKind::Unsupported, t.start, SUPPORTED, found));
        }
        self.per_field(field, t.start, |p, f| Query::Wildcard {
            field: f.to_string(),
            pattern: p.analyze_wildcard(f, image),
        })
    }

    /// Lucene's `analyzeWildcard`: runs of `*`/`?` and escape pairs (`\x`) kept, the text
    /// between them normalized.
    fn analyze_wildcard(&self, field: &str, image: &str) -> String {
        let mut out = String::with_capacity(image.len());
        let mut chunk = String::new();
        let mut chars = image.chars();
        let flush = |chunk: &mut String, out: &mut String| {
            if !chunk.is_empty() {
                out.push_str(&self.cfg.analysis.normalize(field, chunk));
                chunk.clear();
            }
        };
        while let Some(c) = chars.next() {
            match c {
                '*' | '?' => {
                    flush(&mut chunk, &mut out);
                    out.push(c);
                }
                '\\' => match chars.next() {
                    Some(n) => {
                        flush(&mut chunk, &mut out);
                        out.push('\\');
                        out.push(n);
                    }
                    None => chunk.push(c),
                },
                c => chunk.push(c),
            }
        }
        flush(&mut chunk, &mut out);
        out
    }

    /// `getPrefixQuery`: the prefix is normalized, not tokenized.
    pub(super) fn prefix_query(
        &self,
        field: Option<&str>,
        prefix: &str,
        t: Token,
    ) -> PResult<Option<Query>> {
        if prefix.starts_with('*') {
            return Err(self.err(
                ParseErrorKind::InvalidValue,
                t.start,
                "a prefix that does not start with '*'",
                format!("'{}'", self.image(t)),
            ));
        }
        let make = |f: &str| Query::Prefix {
            field: f.to_string(),
            prefix: self.cfg.analysis.normalize(f, prefix),
        };
        match field {
            Some(f) => Ok(Some(self.field_boosted(make(f), f))),
            None if !self.cfg.multi_field() => Ok(Some(make(self.single_default_field(t.start)?))),
            None => {
                let clauses = self
                    .cfg
                    .default_fields
                    .iter()
                    .map(|f| self.field_boosted(make(f), f))
                    .collect();
                self.multi_field_query(clauses, t.start)
            }
        }
    }

    /// `getRangeQuery` (through `newRangeQuery`): each bound that is not open is normalized
    /// for the field (lowercased for a text field with the standard analyzer; kept as written
    /// for keyword, numeric, boolean and date fields, which is the analysis' business); with
    /// no field, one range per default field (`MultiFieldQueryParser`), each with its boost.
    /// Lucene's date detection (`DateFormat.SHORT` with a date resolution) is off by default
    /// and not reproduced.
    pub(super) fn range_query(
        &self,
        field: Option<&str>,
        lower: Option<String>,
        upper: Option<String>,
        include_lower: bool,
        include_upper: bool,
        at: usize,
    ) -> PResult<Option<Query>> {
        let make = |f: &str| Query::Range {
            field: f.to_string(),
            lower: lower.as_deref().map(|b| self.cfg.analysis.normalize(f, b)),
            upper: upper.as_deref().map(|b| self.cfg.analysis.normalize(f, b)),
            include_lower,
            include_upper,
            format: None,
            time_zone: None,
        };
        match field {
            Some(f) => Ok(Some(self.field_boosted(make(f), f))),
            None if !self.cfg.multi_field() => Ok(Some(make(self.single_default_field(at)?))),
            None => {
                let clauses = self
                    .cfg
                    .default_fields
                    .iter()
                    .map(|f| self.field_boosted(make(f), f))
                    .collect();
                self.multi_field_query(clauses, at)
            }
        }
    }

    /// Elasticsearch `query_string`'s one-sided ranges (`QueryStringQueryParser.getFieldQuery`):
    /// with an explicit field, unquoted text of two or more characters starting with `>`, `>=`
    /// (three or more), `<` or `<=` (three or more) is a range open on the other side; a bound
    /// that is exactly `*` is open too. `year:>=1990` is `year:[1990 TO *]`, `year:<10` is
    /// `year:[* TO 10}`. Lucene's own parser has no such form (it would search the term).
    pub(super) fn one_sided_range(
        &self,
        field: &str,
        text: &str,
        at: usize,
    ) -> PResult<Option<Query>> {
        let mut chars = text.chars();
        let Some(op) = chars.next().filter(|c| matches!(c, '>' | '<')) else {
            return Ok(None);
        };
        let rest = chars.as_str();
        if rest.is_empty() {
            return Ok(None);
        }
        let (bound, inclusive) = match rest.strip_prefix('=') {
            Some(after) if !after.is_empty() => (after, true),
            _ => (rest, false),
        };
        let bound = (bound != "*").then(|| bound.to_string());
        let (lower, upper, include_lower, include_upper) = if op == '>' {
            (bound, None, inclusive, true)
        } else {
            (None, bound, true, inclusive)
        };
        self.range_query(Some(field), lower, upper, include_lower, include_upper, at)
    }

    /// `MultiFieldQueryParser`'s boosts map (only in multi-field mode).
    pub(super) fn field_boosted(&self, q: Query, field: &str) -> Query {
        if !self.cfg.multi_field() {
            return q;
        }
        match self.cfg.field_boosts.get(field) {
            Some(b) => Query::boosted(q, *b),
            None => q,
        }
    }

    /// `getMultiFieldQuery`: SHOULD over the per-field queries, nothing when empty.
    pub(super) fn multi_field_query(
        &self,
        queries: Vec<Query>,
        at: usize,
    ) -> PResult<Option<Query>> {
        if queries.is_empty() {
            return Ok(None);
        }
        let clauses = queries
            .into_iter()
            .map(|q| Clause::new(Occur::Should, q))
            .collect();
        Ok(Some(self.checked_boolean(clauses, at)?))
    }

    pub(super) fn checked_boolean(&self, clauses: Vec<Clause>, at: usize) -> PResult<Query> {
        if clauses.len() > self.cfg.max_clause_count {
            return Err(self.too_many(at));
        }
        Ok(Query::boolean(clauses))
    }

    pub(super) fn too_many(&self, at: usize) -> ParseError {
        self.err(
            ParseErrorKind::TooManyClauses,
            at,
            format!(
                "at most {} clauses in one boolean query",
                self.cfg.max_clause_count
            ),
            "more",
        )
    }

    /// `getBooleanQuery`: nothing when every clause was dropped.
    pub(super) fn boolean_query(&self, clauses: Vec<Clause>) -> Option<Query> {
        if clauses.is_empty() {
            None
        } else {
            Some(Query::boolean(clauses))
        }
    }

    /// `QueryParserBase.addClause`, including its edits of the preceding clause.
    pub(super) fn add_clause(
        &self,
        clauses: &mut Vec<Clause>,
        conj: Conj,
        mods: Mods,
        q: Option<Query>,
        at: usize,
    ) -> PResult<()> {
        if let Some(last) = clauses.last_mut() {
            // AND makes the preceding clause required unless it is prohibited.
            if conj == Conj::And && last.occur != Occur::MustNot {
                last.occur = Occur::Must;
            }
            // With default AND, OR makes the preceding clause optional unless prohibited.
            if self.cfg.default_operator == Operator::And
                && conj == Conj::Or
                && last.occur != Occur::MustNot
            {
                last.occur = Occur::Should;
            }
        }
        let Some(q) = q else {
            return Ok(()); // analyzed away
        };
        let prohibited = mods == Mods::Not;
        let required = match self.cfg.default_operator {
            Operator::Or => mods == Mods::Req || (conj == Conj::And && !prohibited),
            Operator::And => !prohibited && conj != Conj::Or,
        };
        let occur = if prohibited {
            Occur::MustNot
        } else if required {
            Occur::Must
        } else {
            Occur::Should
        };
        if clauses.len() >= self.cfg.max_clause_count {
            return Err(self.too_many(at));
        }
        clauses.push(Clause::new(occur, q));
        Ok(())
    }

    /// `addMultiTermClauses`: flatten a boolean of term queries; otherwise add its clauses
    /// (or the query) with the default operator's occur.
    pub(super) fn add_multi_term_clauses(
        &self,
        clauses: &mut Vec<Clause>,
        q: Option<Query>,
        at: usize,
    ) -> PResult<()> {
        // Lucene 10.6 adds an analyzed run of terms as one clause (a nested boolean when it has
        // several tokens): `oil gas -coal` is `(body:oil body:gas) -body:coal`; a run that is
        // the whole query is returned as is by `Query()` (`oil gas` is `body:oil body:gas`).
        // Runs over several default fields give per-token groups, which are added one by one.
        let Some(q) = q else {
            return Ok(());
        };
        let occur = self.cfg.operator_occur();
        match q {
            // Per-token groups (several default fields): each group becomes a clause.
            Query::Boolean {
                clauses: nested, ..
            } if !nested.iter().all(|c| matches!(c.query, Query::Term { .. })) => {
                for c in nested {
                    clauses.push(Clause::new(occur, c.query));
                }
            }
            other => clauses.push(Clause::new(occur, other)),
        }
        if clauses.len() > self.cfg.max_clause_count {
            return Err(self.too_many(at));
        }
        Ok(())
    }
}
