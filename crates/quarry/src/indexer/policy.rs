//! Which segments should be merged next? The merge policies: tiered (Lucene's
//! `TieredMergePolicy`, the default), log-doc, or none.

/// How segments are merged after a commit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MergePolicy {
    /// Never merge on commit (force_merge still works).
    None,
    /// Lucene's log-doc policy: segments fall into levels by `log_factor(doc count)`; when a
    /// level holds `factor` segments they are merged into one of the next level.
    Log { factor: usize },
    /// Lucene's `TieredMergePolicy`: segments are sized by their live bytes; the index may hold
    /// about `segments_per_tier` segments per tier of sizes (tiers grow by
    /// `max_merge_at_once`, from `floor_segment_bytes`); beyond that budget the merge of up to
    /// `max_merge_at_once` size-adjacent segments with the least skew is chosen, never producing
    /// more than `max_merged_segment_bytes`. Segments with many deletions count smaller, so they
    /// are merged (and their deletions dropped) sooner.
    Tiered {
        segments_per_tier: usize,
        max_merge_at_once: usize,
        floor_segment_bytes: u64,
        max_merged_segment_bytes: u64,
    },
}

impl MergePolicy {
    /// The tiered policy with Lucene's defaults (10 per tier, 10 at once, 2 MiB floor, 5 GiB
    /// largest merged segment).
    pub const fn tiered() -> Self {
        MergePolicy::Tiered {
            segments_per_tier: 10,
            max_merge_at_once: 10,
            floor_segment_bytes: 2 << 20,
            max_merged_segment_bytes: 5 << 30,
        }
    }
}

impl Default for MergePolicy {
    fn default() -> Self {
        Self::tiered()
    }
}

/// What a policy knows of a segment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SegmentSize {
    pub docs: u32,
    pub deleted: u32,
    pub bytes: u64,
}

impl SegmentSize {
    /// Bytes prorated to the live documents.
    fn live_bytes(&self) -> u64 {
        if self.docs == 0 {
            return 0;
        }
        let live = f64::from(self.docs - self.deleted.min(self.docs)) / f64::from(self.docs);
        (self.bytes as f64 * live) as u64
    }
}

impl MergePolicy {
    /// The next merge to run over `segments` (indexes into it), if any.
    pub fn find_merge(&self, segments: &[SegmentSize]) -> Option<Vec<usize>> {
        match *self {
            MergePolicy::None => None,
            MergePolicy::Log { factor } => log_merge(segments, factor.max(2)),
            MergePolicy::Tiered {
                segments_per_tier,
                max_merge_at_once,
                floor_segment_bytes,
                max_merged_segment_bytes,
            } => tiered_merge(
                segments,
                segments_per_tier.max(2),
                max_merge_at_once.max(2),
                floor_segment_bytes.max(1),
                max_merged_segment_bytes,
            ),
        }
    }
}

fn log_merge(segments: &[SegmentSize], factor: usize) -> Option<Vec<usize>> {
    let level = |docs: u32| ((docs.max(1) as f64).ln() / (factor as f64).ln()).floor() as i64;
    let mut by_level: std::collections::BTreeMap<i64, Vec<usize>> = Default::default();
    for (i, s) in segments.iter().enumerate() {
        by_level.entry(level(s.docs)).or_default().push(i);
    }
    let group = by_level.values().find(|g| g.len() >= factor)?;
    Some(group[..factor].to_vec())
}

fn tiered_merge(
    segments: &[SegmentSize],
    per_tier: usize,
    at_once: usize,
    floor: u64,
    max_merged: u64,
) -> Option<Vec<usize>> {
    let floored = |b: u64| b.max(floor);
    // Largest first; segments already at least half the largest allowed size are left alone
    // (unless they are mostly deletions, which makes them count smaller).
    let mut order: Vec<usize> = (0..segments.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(segments[i].live_bytes()));
    let eligible: Vec<usize> = order
        .into_iter()
        .filter(|&i| segments[i].live_bytes() < max_merged / 2)
        .collect();
    let total: u64 = segments.iter().map(|s| s.live_bytes()).sum();
    let min_seg = eligible
        .iter()
        .map(|&i| segments[i].live_bytes())
        .min()
        .unwrap_or(0);
    // How many segments the index may have: `per_tier` per tier, tiers growing by `at_once`.
    let mut level = floored(min_seg) as f64;
    let mut left = total as f64;
    let mut allowed = 0f64;
    loop {
        let at_level = left / level;
        if at_level < per_tier as f64 || level >= max_merged as f64 {
            allowed += at_level.ceil();
            break;
        }
        allowed += per_tier as f64;
        left -= per_tier as f64 * level;
        level *= at_once as f64;
    }
    let allowed = (allowed as usize).max(per_tier);
    if eligible.len() <= allowed {
        return None;
    }
    // Among windows of size-adjacent segments, the merge with the least skew (largest / total),
    // slightly favouring smaller results and more segments at once.
    let mut best: Option<(f64, Vec<usize>)> = None;
    for start in 0..eligible.len().saturating_sub(1) {
        let mut picked = Vec::new();
        let mut bytes = 0u64;
        for &i in &eligible[start..] {
            if picked.len() == at_once {
                break;
            }
            let b = segments[i].live_bytes();
            if bytes + b > max_merged && !picked.is_empty() {
                continue;
            }
            bytes += b;
            picked.push(i);
        }
        if picked.len() < 2 {
            continue;
        }
        let largest = floored(segments[picked[0]].live_bytes()) as f64;
        let sum: f64 = picked
            .iter()
            .map(|&i| floored(segments[i].live_bytes()) as f64)
            .sum();
        let skew = if picked.len() < at_once {
            // A short merge must justify itself: treat it as if it were a full one.
            1.0 / picked.len() as f64 * (at_once as f64 / picked.len() as f64)
        } else {
            largest / sum
        };
        // Merges that reclaim deletions are favoured (Lucene's non-deleted ratio squared).
        let raw: u64 = picked.iter().map(|&i| segments[i].bytes).sum();
        let kept = bytes as f64 / raw.max(1) as f64;
        let score = skew * (bytes.max(1) as f64).powf(0.05) * kept * kept;
        if best.as_ref().map_or(true, |(s, _)| score < *s) {
            best = Some((score, picked));
        }
    }
    best.map(|(_, mut p)| {
        p.sort_unstable();
        p
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segs(sizes: &[u64]) -> Vec<SegmentSize> {
        sizes
            .iter()
            .map(|&b| SegmentSize {
                docs: 1000,
                deleted: 0,
                bytes: b,
            })
            .collect()
    }

    /// Simulates flushes of equal segments with the policy applied after each; returns the
    /// segment count at the end.
    fn simulate(policy: MergePolicy, flushes: usize, size: u64) -> usize {
        let mut s: Vec<SegmentSize> = Vec::new();
        for _ in 0..flushes {
            s.push(SegmentSize {
                docs: 1000,
                deleted: 0,
                bytes: size,
            });
            while let Some(m) = policy.find_merge(&s) {
                assert!(m.len() >= 2 && m.windows(2).all(|w| w[0] < w[1]));
                let merged = SegmentSize {
                    docs: m.iter().map(|&i| s[i].docs).sum(),
                    deleted: 0,
                    bytes: m.iter().map(|&i| s[i].bytes).sum(),
                };
                for &i in m.iter().rev() {
                    s.remove(i);
                }
                s.push(merged);
            }
        }
        s.len()
    }

    #[test]
    fn tiered_keeps_few_segments_over_many_flushes() {
        let n = simulate(MergePolicy::tiered(), 200, 30 << 20);
        assert!(n <= 30, "{n} segments after 200 flushes");
        assert!(n >= 2);
        assert_eq!(simulate(MergePolicy::tiered(), 5, 30 << 20), 5);
    }

    #[test]
    fn tiered_leaves_an_index_within_budget_alone() {
        assert_eq!(MergePolicy::tiered().find_merge(&segs(&[1 << 20; 9])), None);
        assert!(MergePolicy::tiered()
            .find_merge(&segs(&[1 << 20; 12]))
            .is_some());
    }

    #[test]
    fn tiered_prefers_segments_with_many_deletions() {
        let mut s = segs(&[100 << 20; 25]);
        s[3].deleted = 900;
        let m = MergePolicy::tiered().find_merge(&s).unwrap();
        assert!(m.contains(&3), "{m:?}");
    }

    #[test]
    fn log_policy_and_none() {
        assert_eq!(
            MergePolicy::Log { factor: 3 }.find_merge(&segs(&[1; 3])),
            Some(vec![0, 1, 2])
        );
        assert_eq!(MergePolicy::None.find_merge(&segs(&[1; 50])), None);
    }
}
