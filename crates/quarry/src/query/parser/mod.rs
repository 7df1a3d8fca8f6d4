//! How a query string becomes a [`Query`]: Lucene's classic `QueryParser` syntax and
//! semantics (and `MultiFieldQueryParser`'s, with several default fields), reproduced quirk
//! for quirk.
//!
//! # Syntax
//! Terms (`oil`), fields (`title:oil`, `title:(oil gas)`), `AND`/`OR`/`NOT` and `&&`/`||`/`!`,
//! `+`/`-`, parentheses, phrases (`"oil prices"`, `"oil prices"~2`), trailing-`*` prefixes
//! (`oil*`), ranges (`year:[1990 TO 2000]`, `{a TO b}`, mixed `[a TO b}`, `*` for an open end
//! as in `price:{* TO 10]`, quoted bounds `["a b" TO c]`, boosts `[1 TO 2]^2`), Elasticsearch
//! `query_string`'s one-sided ranges (`year:>1990`, `year:>=1990`, `price:<10`,
//! `price:<=10`), boosts (`oil^2`, `(a b)^0.5`, `"a b"^3`), backslash escapes (`\:` and
//! `\u0041`), `*:*`, wildcards (`o?l`, `o*l`: `WildcardQuery`, the text between wildcards
//! normalized), regular expressions (`/o.l/`: `RegexpQuery`, normalized whole) and fuzzy terms
//! (`oil~1`, `oil~` = 2 edits, `oil~0.7` Lucene's old similarity: `FuzzyQuery`, normalized). A
//! leading wildcard (`*oil`, `?il`) is refused with a [`ParseErrorKind::Unsupported`] error, as
//! Lucene refuses it unless `allowLeadingWildcard` is set.
//!
//! # Semantics (all as in Lucene 10's classic `QueryParser`)
//! * Clauses are combined by `QueryParserBase.addClause`: `a AND b` gives `+a +b`; `AND`
//!   also makes the *preceding* clause required unless it is prohibited, so with the default
//!   operator OR `a AND b OR c` gives `+a +b c`; with the default operator AND, `OR` makes
//!   the preceding clause optional, so `a AND b OR c` gives `+a b c`. Only one modifier is
//!   allowed per clause (`+-a` is an error).
//! * A query of a single unmodified clause is that clause's query (`(a)` is `a`); `NOT a` alone
//!   is a boolean with one prohibited clause (which matches nothing, as in Lucene).
//! * A term is analyzed with the field's analysis: no token drops the clause (an all-dropped
//!   query is an empty boolean, rendered `""`); one token is a term query; several tokens
//!   (`wi-fi`) are a boolean of SHOULD term clauses (MUST with the default operator AND).
//!   A quoted phrase that analyzes to one token is a term query; to several, a phrase query.
//!   Prefix terms are normalized, not tokenized.
//! * A range (`getRangeQuery`) is a [`Query::Range`]: between the brackets a bound is any run
//!   of characters but ' ', `]` and `}` (Lucene's RANGE_GOOP: `:`, `-`, `+`, `.` need no
//!   escape, so `date:[2020-01-01T00:00:00Z TO *]` works) or a quoted string; only an unquoted
//!   `*` is open (`\*` and `"*"` are a literal star). Escapes are resolved, then each bound
//!   goes through [`FieldAnalysis::normalize`] (lowercased on a text field with the standard
//!   analyzer, kept as written on keyword, numeric, boolean and date fields). A range without
//!   a field uses the default field(s), with `MultiFieldQueryParser`'s field boosts.
//! * `field:>x`, `field:>=x`, `field:<x`, `field:<=x` (an explicit field, unquoted text of at
//!   least two characters; `>=`/`<=` need a third) are ranges open on the other side, as in
//!   Elasticsearch's `QueryStringQueryParser`; Lucene would search the term. Written without a
//!   field they stay terms. A `:` in the bound must be escaped (`date:>2020-01-01T10\:00`).
//! * Like Lucene 10 (`splitOnWhitespace = false` by default), a run of two or more plain
//!   terms (`a b c`, not followed by `:`, `*`, `~`, `^`, `AND` or `OR`) is analyzed as one
//!   text and its tokens become sibling clauses: `x wi-fi` gives `x wi fi`, whereas with
//!   [`QueryParser::with_split_on_whitespace`]`(true)` it gives `x (wi fi)`.
//! * Several default fields (or any field boost) give `MultiFieldQueryParser` semantics: a
//!   bare term `a` becomes `(title:a body:a)`; a multi-token term groups per token
//!   (`(title:wi body:wi) (title:fi body:fi)`); a phrase becomes one phrase per field;
//!   explicit `field:` clauses are unaffected, except that prefix queries get the field boost.
//!
//! Lucene quirks kept on purpose: `a:b` with whitespace `a: b` still means field `a`;
//! `&&x` and `||x` are terms; `+ a`/`- a`/`! a` (operator then whitespace) are a term `+`/`-`/
//! `!` that analyzes to nothing; `a!b` is `a NOT b`; `foo*~2` is the prefix `foo*` (the fuzzy
//! suffix is ignored); `"a b"~x` has slop 0 and `"a b"~2.7` slop 2; `a^2.` boosts `a` by 2
//! and `.` is a separate term; an empty query is an error; inside a range only a space
//! separates (a tab or newline next to bound characters is part of the bound, so
//! `[a<tab>TO b]` is an error), `TOx` is a bound, `["ab"x TO c]` has the lower bound `"ab"x`
//! with its quotes, and a range needs no space after it (`[a TO b]oil` is two clauses).

mod analysis;
mod error;
mod escapes;
mod grammar;
mod lexer;
mod semantics;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

pub use analysis::{SimpleAnalysis, StandardAnalysis};
pub use error::{ParseError, ParseErrorKind};

use super::ast::{Occur, Query};
use grammar::Parser;
use lexer::lex;

/// The per-field analysis the parser needs. The engine implements it over the schema; it
/// must not panic for any field name or text.
pub trait FieldAnalysis: Send + Sync {
    /// The tokens of `text` in `field`, in position order (positions 0, 1, 2, ...). An
    /// empty result drops the clause.
    fn tokens(&self, field: &str, text: &str) -> Vec<String>;
    /// What a prefix term or a range bound becomes in `field` (Lucene's `Analyzer.normalize`;
    /// the standard analyzer: lowercase). Fields that are not text (keyword, numeric, boolean,
    /// date) should return `text` unchanged, so that `2020-01-01T00:00:00Z` stays intact.
    fn normalize(&self, field: &str, text: &str) -> String;
    /// Whether `field` exists; consulted only when unknown fields are rejected
    /// ([`QueryParser::with_unknown_fields_rejected`]).
    fn has_field(&self, field: &str) -> bool {
        let _ = field;
        true
    }
}

/// The operator between clauses that have neither `AND`/`OR` nor `+`/`-`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Operator {
    /// `a b` means `a OR b` (Lucene's default).
    #[default]
    Or,
    /// `a b` means `a AND b`.
    And,
}

/// Parses Lucene classic query syntax into [`Query`] values. Cheap to share: `parse` takes
/// `&self`.
#[derive(Clone)]
pub struct QueryParser {
    default_fields: Vec<String>,
    default_operator: Operator,
    analysis: Arc<dyn FieldAnalysis>,
    field_boosts: HashMap<String, f32>,
    split_on_whitespace: bool,
    phrase_slop: u32,
    max_clause_count: usize,
    max_depth: usize,
    reject_unknown_fields: bool,
}

impl fmt::Debug for QueryParser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueryParser")
            .field("default_fields", &self.default_fields)
            .field("default_operator", &self.default_operator)
            .field("field_boosts", &self.field_boosts)
            .field("split_on_whitespace", &self.split_on_whitespace)
            .field("phrase_slop", &self.phrase_slop)
            .field("max_clause_count", &self.max_clause_count)
            .field("max_depth", &self.max_depth)
            .field("reject_unknown_fields", &self.reject_unknown_fields)
            .finish_non_exhaustive()
    }
}

/// Lucene's `IndexSearcher.getMaxClauseCount()` default.
pub const DEFAULT_MAX_CLAUSE_COUNT: usize = 1024;
/// The default limit on nested parentheses.
pub const DEFAULT_MAX_DEPTH: usize = 256;

impl QueryParser {
    /// A parser whose bare terms search `default_field` (Lucene `new QueryParser(field, a)`).
    pub fn new(default_field: impl Into<String>, analysis: Arc<dyn FieldAnalysis>) -> Self {
        Self::with_default_fields(vec![default_field.into()], analysis)
    }

    /// A parser whose bare terms search every field in `fields`: with more than one field it
    /// follows Lucene's `MultiFieldQueryParser`; with none, bare terms are an error.
    pub fn with_default_fields(fields: Vec<String>, analysis: Arc<dyn FieldAnalysis>) -> Self {
        QueryParser {
            default_fields: fields,
            default_operator: Operator::Or,
            analysis,
            field_boosts: HashMap::new(),
            split_on_whitespace: false,
            phrase_slop: 0,
            max_clause_count: DEFAULT_MAX_CLAUSE_COUNT,
            max_depth: DEFAULT_MAX_DEPTH,
            reject_unknown_fields: false,
        }
    }

    /// Sets the operator between unmarked clauses (default [`Operator::Or`]).
    pub fn with_default_operator(mut self, operator: Operator) -> Self {
        self.default_operator = operator;
        self
    }

    /// Boosts a default field when a bare term is expanded over the default fields
    /// (`MultiFieldQueryParser`'s boosts map; turns on its semantics even for one field).
    /// A boost that is not finite or is negative is ignored (Lucene's `BoostQuery` refuses it).
    pub fn with_field_boost(mut self, field: impl Into<String>, boost: f32) -> Self {
        if boost.is_finite() && boost >= 0.0 {
            self.field_boosts.insert(field.into(), boost);
        }
        self
    }

    /// Lucene's `setSplitOnWhitespace` (default false, as in Lucene 10): when true, each
    /// whitespace-separated term is analyzed on its own.
    pub fn with_split_on_whitespace(mut self, split: bool) -> Self {
        self.split_on_whitespace = split;
        self
    }

    /// Lucene's `setPhraseSlop`: the slop of phrases written without `~N` (default 0).
    pub fn with_phrase_slop(mut self, slop: u32) -> Self {
        self.phrase_slop = slop;
        self
    }

    /// The most clauses one boolean query may have (default 1024, Lucene's limit).
    pub fn with_max_clause_count(mut self, max: usize) -> Self {
        self.max_clause_count = max.max(1);
        self
    }

    /// The deepest nesting of parentheses accepted (default 256).
    pub fn with_max_depth(mut self, max: usize) -> Self {
        self.max_depth = max;
        self
    }

    /// When true, `field:` prefixes naming a field the analysis does not know are an error
    /// (Lucene accepts them and the clause matches nothing).
    pub fn with_unknown_fields_rejected(mut self, reject: bool) -> Self {
        self.reject_unknown_fields = reject;
        self
    }

    /// The default fields.
    pub fn default_fields(&self) -> &[String] {
        &self.default_fields
    }

    /// The default operator.
    pub fn default_operator(&self) -> Operator {
        self.default_operator
    }

    /// Parses `input`. Never panics; every failure is a [`ParseError`].
    pub fn parse(&self, input: &str) -> Result<Query, ParseError> {
        let (tokens, lex_error) = lex(input);
        let mut parser = Parser {
            cfg: self,
            input,
            tokens,
            lex_error,
            pos: 0,
        };
        parser.top_level()
    }

    fn multi_field(&self) -> bool {
        self.default_fields.len() > 1 || !self.field_boosts.is_empty()
    }

    fn operator_occur(&self) -> Occur {
        match self.default_operator {
            Operator::Or => Occur::Should,
            Operator::And => Occur::Must,
        }
    }
}
