//! Are the norms a scorer loads verified? [`NormsCheck`] checks one field's norms a group of
//! documents at a time against the group sums stored after them (format v7).
use std::sync::Arc;

use quarry_store::Bytes;

use super::VerifiedBitmap;
use crate::codec::norms::GROUP;
use crate::{Error, Result};

/// Checks one field's norms (format v7) a group of [`GROUP`] documents at a time against the
/// group sums that follow them in the file: a scorer's cursor checks the groups of the
/// documents it loads, so a fresh process's first query reads a few hundred cache lines of
/// norms instead of the whole run (whose 4 KiB chunk checks cost 150 µs on W2). Shared by the
/// scorers of the field (bits are only ever set, after a successful check).
#[derive(Clone, Debug)]
pub struct NormsCheck(Arc<NormsGroups>);

#[derive(Debug)]
struct NormsGroups {
    file: String,
    /// The file offset of the field's first norm (for error positions).
    base: u64,
    /// The field's norms (a view of the mapping, unverified).
    norms: Bytes,
    /// The group sums, verified by the read that returned them.
    sums: Bytes,
    verified: VerifiedBitmap,
}

impl NormsCheck {
    /// The check of `norms` (the field's run, at file offset `base` of `file`) against `sums`
    /// (its group sums, verified); `None` when the lengths disagree.
    pub fn new(file: &str, base: u64, norms: Bytes, sums: Bytes) -> Option<Self> {
        let groups = norms.len().div_ceil(GROUP);
        (sums.len() == 4 * groups).then(|| {
            Self(Arc::new(NormsGroups {
                file: file.to_string(),
                base,
                norms,
                sums,
                verified: VerifiedBitmap::new(groups as u64),
            }))
        })
    }

    /// Verifies the groups of documents `first..=last`.
    #[inline]
    pub fn check_range(&self, first: u32, last: u32) -> Result<()> {
        let g = &self.0;
        let groups = first as u64 / GROUP as u64..last as u64 / GROUP as u64 + 1;
        if g.verified.all_set(groups.clone()) {
            return Ok(());
        }
        groups.into_iter().try_for_each(|i| self.check_group(i))
    }

    /// Verifies the groups of `docs` (ascending): one bitmap probe per distinct group.
    pub fn check_each(&self, docs: &[u32]) -> Result<()> {
        let mut last = u64::MAX;
        for &d in docs {
            let i = d as u64 / GROUP as u64;
            if i != last {
                last = i;
                self.check_group(i)?;
            }
        }
        Ok(())
    }

    /// True when every group was verified.
    pub fn is_complete(&self) -> bool {
        let g = &self.0;
        g.verified.all_set(0..g.verified.len())
    }

    #[inline]
    fn check_group(&self, i: u64) -> Result<()> {
        if self.0.verified.is_set(i) {
            return Ok(());
        }
        self.check_group_cold(i)
    }

    #[cold]
    fn check_group_cold(&self, i: u64) -> Result<()> {
        let g = &self.0;
        let at = i as usize * GROUP;
        let (Some(piece), Some(sum)) = (
            g.norms.get(at..(at + GROUP).min(g.norms.len())),
            g.sums.get(4 * at / GROUP..4 * at / GROUP + 4),
        ) else {
            return Err(Error::corrupt(
                &g.file,
                format!("norm group {i} is past the field's {} norms", g.norms.len()),
            ));
        };
        let stored = u32::from_le_bytes(sum.try_into().expect("4 bytes"));
        let computed = quarry_codecs::crc32c(piece);
        if stored != computed {
            return Err(Error::corrupt_at(
                &g.file,
                g.base + at as u64,
                format!(
                    "norms of documents {at}..{} have checksum {computed:#010x}, \
                     the group sums say {stored:#010x}",
                    at + piece.len()
                ),
            ));
        }
        g.verified.set(i);
        Ok(())
    }
}
