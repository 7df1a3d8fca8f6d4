//! Summaries of the documents a query matches, computed next to the search (Elasticsearch's
//! aggregations). Each piece keeps a partial result that merges exactly across segments and
//! shards, so that a sharded search (Ray) answers as one index would.
//!
//! - [`cardinality`]: distinct counts, exact below a threshold, HyperLogLog above it.
pub mod cardinality;
