//! How often does a phrase occur within a slop? Lucene's `SloppyPhraseMatcher`, for phrases
//! and multi-phrases alike: the plain walk, and the walk with repeat groups for a phrase whose
//! positions share a term (`"to be or not to be"~2`, a prefix that expands to an earlier word).
//!
//! Repeats are decided once per scorer ([`Repeats::of`]), so a phrase without them never pays
//! for them: [`sloppy_frequency`] is the plain walk, [`sloppy_frequency_repeats`] the other.
use std::collections::BTreeMap;

/// Lucene's sloppy frequency (SloppyPhraseMatcher): phrase positions `pos - offset` of all
/// terms sit in a queue ordered by (position, offset, term); the smallest is advanced until
/// it passes the next smallest, minimizing the match length `end - min` on the way; every
/// minimal match with length <= slop adds `1 / (1 + length)`. `positions[i]`: the document's
/// positions of phrase term `i` (sorted), `offsets[i]` its offset in the phrase.
pub(super) fn sloppy_frequency(positions: &[Vec<u32>], offsets: &[u32], slop: u32) -> f32 {
    let n = positions.len();
    let mut idx = vec![0usize; n];
    let pos_of = |i: usize, k: usize| -> Option<i64> {
        positions[i]
            .get(k)
            .map(|&p| i64::from(p) - i64::from(offsets[i]))
    };
    // (position, offset, ord) ordering, as Lucene's PhraseQueue.
    let key = |i: usize, p: i64| (p, offsets[i], i);
    let mut queue: std::collections::BinaryHeap<std::cmp::Reverse<(i64, u32, usize)>> =
        Default::default();
    let mut end = i64::MIN;
    for i in 0..n {
        let Some(p) = pos_of(i, 0) else { return 0.0 };
        end = end.max(p);
        queue.push(std::cmp::Reverse(key(i, p)));
    }
    let slop = i64::from(slop);
    let mut freq = 0f32;
    let std::cmp::Reverse((mut pos, _, mut i)) = queue.pop().expect("non-empty");
    let mut match_len = end - pos;
    let mut next = queue.peek().map_or(i64::MAX, |r| r.0 .0);
    loop {
        idx[i] += 1;
        let Some(p) = pos_of(i, idx[i]) else { break };
        pos = p;
        end = end.max(pos);
        if pos > next {
            queue.push(std::cmp::Reverse(key(i, pos)));
            if match_len <= slop {
                freq += 1.0 / (1.0 + match_len as f32);
            }
            let std::cmp::Reverse((p2, _, i2)) = queue.pop().expect("non-empty");
            pos = p2;
            i = i2;
            next = queue.peek().map_or(i64::MAX, |r| r.0 .0);
            match_len = end - pos;
        } else {
            match_len = match_len.min(end - pos);
        }
    }
    if match_len <= slop {
        freq += 1.0 / (1.0 + match_len as f32);
    }
    freq
}

/// The repeat groups of a phrase (Lucene's `rptGroups`): phrase positions that may land on
/// the same document position, because they share a term. Lucene never lets two of them sit
/// on one occurrence: that changes which matches are found, hence the frequency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repeats {
    /// Phrase position indexes, each group sorted by offset (ties by phrase order).
    groups: Vec<Vec<usize>>,
    /// Per phrase position: its (group, index in the group), if it repeats.
    member: Vec<Option<(usize, usize)>>,
    /// A repeating position has several terms (Lucene's `hasMultiTermRpts`): collisions at
    /// the start of a document are then resolved one at a time instead of by rank.
    multi_term: bool,
}

impl Repeats {
    /// The groups of a phrase whose position `i` matches any of `terms[i]` at `offsets[i]`,
    /// or `None` when no term occurs twice (the common case: [`sloppy_frequency`] applies).
    /// Only the query matters: Lucene's groups for single-term positions come from the first
    /// document's positions, which are equal exactly when the terms are.
    pub(crate) fn of<T: Ord>(terms: &[Vec<T>], offsets: &[u32]) -> Option<Self> {
        let mut count: BTreeMap<&T, usize> = BTreeMap::new();
        for t in terms.iter().flatten() {
            *count.entry(t).or_default() += 1;
        }
        let repeating = |t: &T| count.get(t).is_some_and(|&c| c > 1);
        let rpp: Vec<usize> = (0..terms.len())
            .filter(|&i| terms[i].iter().any(repeating))
            .collect();
        if rpp.is_empty() {
            return None;
        }
        let multi_term = rpp.iter().any(|&i| terms[i].len() > 1);
        let mut member: Vec<Option<(usize, usize)>> = vec![None; terms.len()];
        let mut groups: Vec<Vec<usize>> = Vec::new();
        if multi_term {
            // Connected regions of the positions-terms graph: positions sharing a repeating
            // term, transitively, form one group.
            let ords: BTreeMap<&T, usize> = count
                .iter()
                .filter(|(_, &c)| c > 1)
                .enumerate()
                .map(|(o, (&t, _))| (t, o))
                .collect();
            let mut parent: Vec<usize> = (0..ords.len()).collect();
            fn root(parent: &mut [usize], mut x: usize) -> usize {
                while parent[x] != x {
                    parent[x] = parent[parent[x]];
                    x = parent[x];
                }
                x
            }
            let pos_ords = |i: usize| terms[i].iter().filter_map(|t| ords.get(t).copied());
            for &i in &rpp {
                let mut it = pos_ords(i);
                let first = it.next().expect("a repeating position");
                for o in it {
                    let (a, b) = (root(&mut parent, first), root(&mut parent, o));
                    parent[b] = a;
                }
            }
            let mut group_of_root: BTreeMap<usize, usize> = BTreeMap::new();
            for &i in &rpp {
                let o = pos_ords(i).next().expect("a repeating position");
                let r = root(&mut parent, o);
                let g = *group_of_root.entry(r).or_insert_with(|| {
                    groups.push(Vec::new());
                    groups.len() - 1
                });
                groups[g].push(i);
            }
        } else {
            // Single-term positions: the same term at another offset repeats it (two at the
            // same offset do not, as in Lucene).
            let mut grouped = vec![false; terms.len()];
            for (a, &i) in rpp.iter().enumerate() {
                if grouped[i] {
                    continue;
                }
                let mut group = vec![i];
                for &j in &rpp[a + 1..] {
                    if !grouped[j] && offsets[j] != offsets[i] && terms[j][0] == terms[i][0] {
                        grouped[j] = true;
                        group.push(j);
                    }
                }
                if group.len() > 1 {
                    grouped[i] = true;
                    groups.push(group);
                }
            }
        }
        if groups.is_empty() {
            return None;
        }
        for (g, group) in groups.iter_mut().enumerate() {
            group.sort_by_key(|&i| (offsets[i], i));
            for (k, &i) in group.iter().enumerate() {
                member[i] = Some((g, k));
            }
        }
        Some(Self {
            groups,
            member,
            multi_term,
        })
    }
}

/// Lucene's `PriorityQueue` of phrase positions, replayed step for step: with repeats, the
/// matcher advances positions that are still in the queue and re-queues only some of them,
/// so which one is popped next depends on the heap's exact layout, not only on the order.
struct Heap {
    /// 1-based, as Lucene's (`heap[0]` unused).
    heap: Vec<usize>,
}

impl Heap {
    fn add(&mut self, pp: usize, st: &State) {
        self.heap.push(pp);
        let mut i = self.heap.len() - 1;
        let mut j = i >> 1;
        while j > 0 && st.less(pp, self.heap[j]) {
            self.heap[i] = self.heap[j];
            i = j;
            j >>= 1;
        }
        self.heap[i] = pp;
    }

    fn top(&self) -> Option<usize> {
        self.heap.get(1).copied()
    }

    fn pop(&mut self, st: &State) -> Option<usize> {
        let size = self.heap.len() - 1;
        if size == 0 {
            return None;
        }
        let result = self.heap[1];
        let last = self.heap.pop().expect("non-empty");
        if size > 1 {
            self.heap[1] = last;
            self.down(st);
        }
        Some(result)
    }

    fn down(&mut self, st: &State) {
        let size = self.heap.len() - 1;
        let node = self.heap[1];
        let mut i = 1;
        let mut j = 2;
        if j < size && st.less(self.heap[j + 1], self.heap[j]) {
            j += 1;
        }
        while j <= size && st.less(self.heap[j], node) {
            self.heap[i] = self.heap[j];
            i = j;
            j = i << 1;
            if j < size && st.less(self.heap[j + 1], self.heap[j]) {
                j += 1;
            }
        }
        self.heap[i] = node;
    }
}

/// The phrase positions of one document: where each stands (`pos - offset`) and what is left.
struct State<'a> {
    positions: &'a [Vec<u32>],
    offsets: &'a [u32],
    /// Index of each phrase position's current occurrence in `positions`.
    idx: Vec<usize>,
    pos: Vec<i64>,
    end: i64,
}

impl State<'_> {
    /// Lucene's `PhraseQueue.lessThan`: by position, then offset, then phrase order.
    fn less(&self, a: usize, b: usize) -> bool {
        (self.pos[a], self.offsets[a], a) < (self.pos[b], self.offsets[b], b)
    }

    /// The next occurrence of `pp`, `false` if it has none (`end` is left alone: Lucene's
    /// `nextPosition`).
    fn step(&mut self, pp: usize) -> bool {
        let k = self.idx[pp] + 1;
        let Some(&p) = self.positions[pp].get(k) else {
            return false;
        };
        self.idx[pp] = k;
        self.pos[pp] = i64::from(p) - i64::from(self.offsets[pp]);
        true
    }

    /// [`step`](Self::step) and raise `end` (Lucene's `advancePP`).
    fn advance(&mut self, pp: usize) -> bool {
        if !self.step(pp) {
            return false;
        }
        self.end = self.end.max(self.pos[pp]);
        true
    }

    /// The document position `pp` stands on.
    fn at(&self, pp: usize) -> i64 {
        self.pos[pp] + i64::from(self.offsets[pp])
    }

    /// The group index of another member of `group` on the same document position as `pp`.
    fn collide(&self, pp: usize, group: &[usize]) -> Option<usize> {
        let at = self.at(pp);
        group.iter().position(|&q| q != pp && self.at(q) == at)
    }

    /// Of two colliding positions, the one to move on: the lesser by (position, offset).
    fn lesser(&self, a: usize, b: usize) -> usize {
        if (self.pos[a], self.offsets[a]) < (self.pos[b], self.offsets[b]) {
            a
        } else {
            b
        }
    }
}

/// [`sloppy_frequency`] for a phrase with repeat groups `rep` (from [`Repeats::of`] on the
/// same phrase): Lucene's walk where a phrase position that lands on a document position
/// another member of its group holds moves the lesser of the two on, so two phrase positions
/// never match one occurrence.
pub(super) fn sloppy_frequency_repeats(
    positions: &[Vec<u32>],
    offsets: &[u32],
    slop: u32,
    rep: &Repeats,
) -> f32 {
    let n = positions.len();
    let mut pos = Vec::with_capacity(n);
    for (p, &off) in positions.iter().zip(offsets) {
        let Some(&first) = p.first() else { return 0.0 };
        pos.push(i64::from(first) - i64::from(off));
    }
    let mut st = State {
        positions,
        offsets,
        idx: vec![0; n],
        pos,
        end: i64::MIN,
    };
    if !separate_repeats(&mut st, rep) {
        return 0.0;
    }
    let mut pq = Heap {
        heap: Vec::with_capacity(n + 1),
    };
    pq.heap.push(usize::MAX);
    for pp in 0..n {
        st.end = st.end.max(st.pos[pp]);
        pq.add(pp, &st);
    }
    let slop = i64::from(slop);
    let mut freq = 0f32;
    let mut stack = Vec::with_capacity(n);
    let mut marks: Vec<bool> = Vec::new();
    let mut pp = pq.pop(&st).expect("non-empty");
    let mut match_len = st.end - st.pos[pp];
    let mut next = pq.top().map_or(i64::MAX, |t| st.pos[t]);
    while st.advance(pp) {
        if !advance_repeats(&mut st, rep, pp, &mut pq, &mut stack, &mut marks) {
            break;
        }
        if st.pos[pp] > next {
            pq.add(pp, &st);
            if match_len <= slop {
                freq += 1.0 / (1.0 + match_len as f32);
            }
            pp = pq.pop(&st).expect("non-empty");
            next = pq.top().map_or(i64::MAX, |t| st.pos[t]);
            match_len = st.end - st.pos[pp];
        } else {
            match_len = match_len.min(st.end - st.pos[pp]);
        }
    }
    if match_len <= slop {
        freq += 1.0 / (1.0 + match_len as f32);
    }
    freq
}

/// Moves the members of each repeat group apart at the start of a document (Lucene's
/// `advanceRepeatGroups`); `false` if one runs out of occurrences (no match then).
fn separate_repeats(st: &mut State, rep: &Repeats) -> bool {
    for group in &rep.groups {
        if rep.multi_term {
            let mut i = 0;
            while i < group.len() {
                let pp = group[i];
                let mut incr = 1;
                while let Some(k) = st.collide(pp, group) {
                    let moved = st.lesser(pp, group[k]);
                    if !st.advance(moved) {
                        return false;
                    }
                    let moved_ind = rep.member[moved].expect("a group member").1;
                    if moved_ind < i {
                        incr = 0;
                        break;
                    }
                }
                i += incr;
            }
        } else {
            // One term: the k-th member starts on the term's k-th occurrence.
            for (k, &pp) in group.iter().enumerate() {
                for _ in 0..k {
                    if !st.step(pp) {
                        return false;
                    }
                }
            }
        }
    }
    true
}

/// After `pp0` moved on, resolves a collision with another member of its group, moving on
/// the lesser of the colliding two until none is left, then re-queues the members that moved
/// while queued (Lucene's `advanceRpts`, including its stop test, which looks only at the
/// index within a group). `false` if a position runs out of occurrences.
fn advance_repeats(
    st: &mut State,
    rep: &Repeats,
    pp0: usize,
    pq: &mut Heap,
    stack: &mut Vec<usize>,
    marks: &mut Vec<bool>,
) -> bool {
    let Some((g, k0)) = rep.member[pp0] else {
        return true;
    };
    let group = &rep.groups[g];
    marks.clear();
    marks.resize(group.len(), false);
    let mut pending = 0usize;
    let mut pp = pp0;
    while let Some(k) = st.collide(pp, group) {
        pp = st.lesser(pp, group[k]);
        if !st.advance(pp) {
            return false;
        }
        if k != k0 && !marks[k] {
            marks[k] = true;
            pending += 1;
        }
    }
    stack.clear();
    while pending > 0 {
        let Some(q) = pq.pop(st) else { break };
        stack.push(q);
        if let Some((_, ind)) = rep.member[q] {
            if ind < marks.len() && marks[ind] {
                marks[ind] = false;
                pending -= 1;
            }
        }
    }
    for &q in stack.iter().rev() {
        pq.add(q, st);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The frequency quarry computes for `query` (positions split by spaces, a position's
    /// terms by `|`) in the document `doc` (words split by spaces), at consecutive offsets.
    fn freq(doc: &str, query: &str, slop: u32) -> f32 {
        freq_with(doc, query, slop, true)
    }

    /// [`freq`], or without repeat groups if `!repeats`.
    fn freq_with(doc: &str, query: &str, slop: u32, repeats: bool) -> f32 {
        let words: Vec<&str> = doc.split(' ').collect();
        let terms: Vec<Vec<&str>> = query.split(' ').map(|p| p.split('|').collect()).collect();
        let offsets: Vec<u32> = (0..terms.len() as u32).collect();
        let positions: Vec<Vec<u32>> = terms
            .iter()
            .map(|ts| {
                (0..words.len() as u32)
                    .filter(|&i| ts.contains(&words[i as usize]))
                    .collect()
            })
            .collect();
        if positions.iter().any(Vec::is_empty) {
            return 0.0;
        }
        match Repeats::of(&terms, &offsets).filter(|_| repeats) {
            None => sloppy_frequency(&positions, &offsets, slop),
            Some(r) => sloppy_frequency_repeats(&positions, &offsets, slop, &r),
        }
    }

    /// Random documents of a few words and sloppy phrases and multi-phrases over them, most
    /// with a repeated term, each with Lucene 10.6's `phraseFreq`
    /// (tests/fixtures/lucene-sloppy-phrases.tsv, from `bench/lucene/sloppy-probe`): the same
    /// frequency to the bit.
    #[test]
    fn matches_lucene_on_random_phrases() {
        let cases = include_str!("../../../../tests/fixtures/lucene-sloppy-phrases.tsv");
        let (mut n, mut plain_differs) = (0, 0);
        for line in cases.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            let [doc, query, slop, want] = f[..] else {
                panic!("bad line {line}")
            };
            let want: f32 = want.parse().unwrap();
            let slop = slop.parse().unwrap();
            let got = freq(doc, query, slop);
            assert_eq!(got, want, "doc {doc:?} query {query:?}~{slop}");
            n += 1;
            plain_differs += usize::from(freq_with(doc, query, slop, false) != want);
        }
        assert!(n >= 1000, "{n} cases");
        // The cases do exercise the repeat groups: the plain walk gets many of them wrong.
        assert!(
            plain_differs >= 100,
            "{plain_differs} cases need repeat groups"
        );
    }

    #[test]
    fn repeats_found_from_the_query() {
        // "to be or not to be": `to` at 0 and 4, `be` at 1 and 5.
        fn words(s: &str) -> Vec<Vec<&str>> {
            s.split(' ').map(|w| vec![w]).collect()
        }
        let r = Repeats::of(&words("to be or not to be"), &[0, 1, 2, 3, 4, 5]).unwrap();
        assert_eq!(r.groups, vec![vec![0, 4], vec![1, 5]]);
        assert!(!r.multi_term);
        assert_eq!(Repeats::of(&words("oil and gas"), &[0, 1, 2]), None);
        // The same word twice at one offset is not a repeat (Lucene's rule).
        assert_eq!(Repeats::of(&words("oil oil"), &[0, 0]), None);
        // A prefix expanding to an earlier word: one group of both positions.
        let q = vec![vec!["oil"], vec!["of", "oil", "on"]];
        let r = Repeats::of(&q, &[0, 1]).unwrap();
        assert_eq!(r.groups, vec![vec![0, 1]]);
        assert!(r.multi_term);
        // Positions linked through shared terms form one group.
        let q = vec![vec!["a", "b"], vec!["c"], vec!["b", "c"], vec!["c", "d"]];
        let r = Repeats::of(&q, &[0, 1, 2, 3]).unwrap();
        assert_eq!(r.groups, vec![vec![0, 1, 2, 3]]);
    }

    /// Cases checked by hand against Lucene 10.6 (its explain's `phraseFreq`).
    #[test]
    fn hand_checked_cases() {
        // Without repeat groups both `a`s of the query could sit on one `a` (6.83 then).
        assert_eq!(freq("b a b b b b a a a b b a b a a b a", "b a a", 2), 3.5);
        assert_eq!(freq("c a b d", "c a d b", 1), 0.0);
    }
}
