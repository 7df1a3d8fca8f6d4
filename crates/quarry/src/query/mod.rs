//! What the user asked for: the query languages (Lucene's classic syntax and its
//! `SimpleQueryParser` syntax) and the query model they parse into.

pub mod ast;
pub mod parser;
pub mod simple;

pub use ast::{Clause, Occur, Query};
pub use parser::{
    FieldAnalysis, Operator, ParseError, ParseErrorKind, QueryParser, SimpleAnalysis,
    StandardAnalysis,
};
pub use simple::{SimpleFlags, SimpleQueryParser};
