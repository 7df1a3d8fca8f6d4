#![forbid(unsafe_code)]
//! quarry
pub mod analysis;
