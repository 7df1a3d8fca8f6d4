//! Bit-packed blocks of 128 integers: the unit of postings storage.
//!
//! Packing goes through the `bitpacking` crate's `BitPacker4x`; unpacking through the
//! [`Kernel`] chosen once per process (AVX2 where available, see [`crate::simd`]), all of which
//! decode that same layout. A packed block of `b` bits per value is exactly `16 * b` bytes.
use bitpacking::{BitPacker, BitPacker4x};

use crate::simd::{Kernel, Table};
use crate::CodecError;

/// Integers per block.
pub const BLOCK_LEN: usize = 128;

/// Packs and unpacks blocks; cheap to copy (holds only the CPU-feature choice).
#[derive(Clone, Copy)]
pub struct BlockCodec {
    kernel: Kernel,
    /// The unpack entry points, `None` when unpacking goes through `packer` (kernel `sse`).
    table: Option<&'static Table>,
}

impl std::fmt::Debug for BlockCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BlockCodec({})", self.kernel)
    }
}

impl Default for BlockCodec {
    fn default() -> Self {
        Self::new()
    }
}

/// Bytes used by one packed block of `num_bits` bits per value.
#[inline]
pub const fn packed_len(num_bits: u8) -> usize {
    num_bits as usize * BLOCK_LEN / 8
}

impl BlockCodec {
    /// A codec unpacking with the process-wide kernel ([`Kernel::default_kernel`]).
    pub fn new() -> Self {
        Self::with_kernel(Kernel::default_kernel())
    }

    /// A codec unpacking with `kernel`, or with the process-wide one when this CPU cannot run
    /// `kernel` (see [`kernel`](Self::kernel) for the one in use).
    pub fn with_kernel(kernel: Kernel) -> Self {
        let kernel = if kernel.available() {
            kernel
        } else {
            Kernel::default_kernel()
        };
        Self {
            kernel,
            table: kernel.table(),
        }
    }

    /// The `bitpacking` crate's packer, made where it is used, not with the codec: its
    /// constructor asks std's feature detection (for SSE3), whose first use costs a fresh
    /// process ~90 µs of `cpuid` traps on VMs (see [`crate::cpu`]), and a postings cursor, which
    /// unpacks with `kernel`, never needs it. Cheap once std has detected.
    #[inline]
    fn packer() -> BitPacker4x {
        BitPacker4x::new()
    }

    /// The kernel this codec unpacks with.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Appends `values` packed with the minimal width; returns that width.
    pub fn pack(&self, values: &[u32; BLOCK_LEN], out: &mut Vec<u8>) -> u8 {
        let bits = Self::packer().num_bits(values);
        let start = out.len();
        out.resize(start + packed_len(bits), 0);
        let n = Self::packer().compress(values, &mut out[start..], bits);
        debug_assert_eq!(n, packed_len(bits));
        bits
    }

    /// Appends strictly increasing `values` as deltas from `base` (the previous block's last
    /// value); returns the width of the deltas.
    pub fn pack_sorted(&self, base: u32, values: &[u32; BLOCK_LEN], out: &mut Vec<u8>) -> u8 {
        let bits = Self::packer().num_bits_sorted(base, values);
        let start = out.len();
        out.resize(start + packed_len(bits), 0);
        let n = Self::packer().compress_sorted(base, values, &mut out[start..], bits);
        debug_assert_eq!(n, packed_len(bits));
        bits
    }

    /// Unpacks one block written by [`pack`](Self::pack); returns the bytes consumed.
    #[inline]
    pub fn unpack(
        &self,
        bytes: &[u8],
        bits: u8,
        out: &mut [u32; BLOCK_LEN],
    ) -> Result<usize, CodecError> {
        let len = checked_len(bytes, bits)?;
        match self.table {
            Some(t) => (t.unpack[usize::from(bits)])(&bytes[..len], out),
            None => {
                Self::packer().decompress(&bytes[..len], out, bits);
            }
        }
        Ok(len)
    }

    /// Unpacks one block written by [`pack_sorted`](Self::pack_sorted) back to absolute values.
    #[inline]
    pub fn unpack_sorted(
        &self,
        base: u32,
        bytes: &[u8],
        bits: u8,
        out: &mut [u32; BLOCK_LEN],
    ) -> Result<usize, CodecError> {
        let len = checked_len(bytes, bits)?;
        match self.table {
            Some(t) => (t.unpack_sorted[usize::from(bits)])(base, &bytes[..len], out),
            None => {
                Self::packer().decompress_sorted(base, &bytes[..len], out, bits);
            }
        }
        Ok(len)
    }
}

/// The length of a block packed with `bits` bits per value, checked against the bytes available
/// (`bits <= 32`, enough bytes): lets a reader step over a block without unpacking it.
#[inline]
pub fn checked_len(bytes: &[u8], bits: u8) -> Result<usize, CodecError> {
    if bits > 32 {
        return Err(CodecError::Invalid {
            what: format!("bit width {bits} > 32"),
        });
    }
    let len = packed_len(bits);
    if bytes.len() < len {
        return Err(CodecError::Truncated {
            offset: 0,
            needed: len,
            available: bytes.len(),
        });
    }
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn block(v: Vec<u32>) -> [u32; BLOCK_LEN] {
        v.try_into().unwrap()
    }

    proptest! {
        #[test]
        fn roundtrip_any_width(bits in 0u32..=32, seed in proptest::collection::vec(any::<u32>(), BLOCK_LEN)) {
            let mask = if bits == 32 { u32::MAX } else { (1u32 << bits) - 1 };
            let values = block(seed.into_iter().map(|x| x & mask).collect());
            for kernel in Kernel::available_kernels() {
                let codec = BlockCodec::with_kernel(kernel);
                prop_assert_eq!(codec.kernel(), kernel);
                let mut buf = Vec::new();
                let b = codec.pack(&values, &mut buf);
                prop_assert!(u32::from(b) <= bits);
                prop_assert_eq!(buf.len(), packed_len(b));
                let mut out = [0u32; BLOCK_LEN];
                prop_assert_eq!(codec.unpack(&buf, b, &mut out).unwrap(), buf.len());
                prop_assert_eq!(out, values, "{}", kernel);
            }
        }

        #[test]
        fn roundtrip_sorted(base in 0u32..1000, gaps in proptest::collection::vec(1u32..5000, BLOCK_LEN)) {
            let mut acc = base;
            let values = block(gaps.into_iter().map(|g| { acc += g; acc }).collect());
            for kernel in Kernel::available_kernels() {
                let codec = BlockCodec::with_kernel(kernel);
                let mut buf = Vec::new();
                let b = codec.pack_sorted(base, &values, &mut buf);
                let mut out = [0u32; BLOCK_LEN];
                codec.unpack_sorted(base, &buf, b, &mut out).unwrap();
                prop_assert_eq!(out, values, "{}", kernel);
            }
        }

        /// Any bytes at any width decode the same with every kernel, plain and as a sorted
        /// block (wrapping prefix sum from any base), as with the `bitpacking` crate.
        #[test]
        fn kernels_agree_on_arbitrary_blocks(
            bits in 0u8..=32,
            base in any::<u32>(),
            bytes in proptest::collection::vec(any::<u8>(), 16 * 32),
        ) {
            let reference = BlockCodec::with_kernel(Kernel::Sse);
            let len = packed_len(bits);
            let mut want = [0u32; BLOCK_LEN];
            let mut want_sorted = [0u32; BLOCK_LEN];
            reference.unpack(&bytes[..len], bits, &mut want).unwrap();
            reference.unpack_sorted(base, &bytes[..len], bits, &mut want_sorted).unwrap();
            for kernel in Kernel::available_kernels() {
                let codec = BlockCodec::with_kernel(kernel);
                let mut got = [0u32; BLOCK_LEN];
                prop_assert_eq!(codec.unpack(&bytes[..len], bits, &mut got).unwrap(), len);
                prop_assert_eq!(got, want, "{} width {}", kernel, bits);
                codec.unpack_sorted(base, &bytes[..len], bits, &mut got).unwrap();
                prop_assert_eq!(got, want_sorted, "{} sorted width {}", kernel, bits);
            }
        }
    }

    #[test]
    fn short_input_is_an_error() {
        for kernel in Kernel::available_kernels() {
            let codec = BlockCodec::with_kernel(kernel);
            let mut out = [0u32; BLOCK_LEN];
            assert!(codec.unpack(&[0u8; 10], 7, &mut out).is_err());
            assert!(codec.unpack(&[0u8; 1000], 33, &mut out).is_err());
            assert!(codec.unpack_sorted(1, &[0u8; 10], 7, &mut out).is_err());
        }
    }
}
