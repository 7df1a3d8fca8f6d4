//! Integers and bytes for quarry's on-disk structures: bit-packed blocks of 128 (with run-time
//! chosen SIMD unpack kernels, the CPU's features found by [`cpu`]), LEB128 varints, bitset
//! popcounts, a bounds-checked little-endian reader, CRC32C, the header/footer every file
//! carries, compressed integer columns read by row in place ([`column`](mod@column)), and the vector
//! similarity kernels ([`distance`]) that exact and approximate nearest-neighbour search share.
//!
//! Nothing here knows about documents or queries; every decoder treats its input as untrusted and
//! returns [`CodecError`] instead of panicking.

pub mod bitpack;
pub mod cast;
pub mod checksum;
pub mod column;
pub mod cpu;
pub mod dense;
pub mod distance;
pub mod error;
pub mod framing;
pub mod popcount;
pub mod reader;
pub mod simd;
pub mod varint;

pub use bitpack::{BlockCodec, BLOCK_LEN};
pub use checksum::crc32c;
pub use error::CodecError;
pub use framing::{ChunkSums, FileKind, Header, CHUNK_SIZE, FOOTER_LEN, HEADER_LEN};
pub use reader::ByteReader;
pub use simd::Kernel;
