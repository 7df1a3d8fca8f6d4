//! What the user asked for: the query language (Lucene's classic syntax) and the query model
//! it parses into.

pub mod ast;
pub mod parser;

pub use ast::{Clause, Occur, Query};
pub use parser::{
    FieldAnalysis, Operator, ParseError, ParseErrorKind, QueryParser, SimpleAnalysis,
    StandardAnalysis,
};
