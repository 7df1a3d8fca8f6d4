//! Which stored vectors are nearest a query, found by walking a hierarchical navigable
//! small-world graph (HNSW, Malkov and Yashunin 2016) instead of comparing the query with every
//! vector.
//!
//! Every vector is a node. A node lives on levels `0..=L`, `L` drawn at random so that each
//! level holds about `1 / m` of the level below; on each level it links to at most `m` others
//! (`2 m` on level 0, as hnswlib and Lucene do). A search descends greedily from the one entry
//! node on the top level, then explores level 0 with a beam of `ef` (Elasticsearch's
//! `num_candidates`) and keeps the best `k`.
//!
//! - [`HnswBuilder`] inserts vectors one at a time: each new node searches the graph built so
//!   far with a beam of `ef_construction` and keeps a *diverse* set of neighbours (a candidate
//!   is kept only if it is closer to the new node than to every neighbour already kept: the
//!   paper's heuristic, which keeps clusters connected); a neighbour whose list overflows is
//!   pruned with the same rule. A builder can start from an existing graph whose nodes keep
//!   their links ([`HnswBuilder::with_initial_graph`]): what a merge does with the largest
//!   segment's graph, as Lucene's `HnswGraphBuilder` with an initializer graph.
//! - [`HnswGraph`] is the frozen result: per level, the nodes it holds and their neighbour
//!   lists as flat arrays (offsets and ids), the shape a segment file can hold and read in
//!   place.
//! - A filtered search walks through every node but collects only those the filter accepts (as
//!   Lucene does), and reports how many nodes it visited so that the caller can stop and scan the
//!   accepted documents exactly when the filter is selective (`visit_limit`).
//!
//! Ties between equal comparison values are broken by ordinal (lower first), so a graph built
//! from the same vectors with the same seed, and every search on it, is deterministic.
use std::cmp::Ordering;
use std::collections::BinaryHeap;

use quarry_codecs::distance::VectorKernel;

use super::{Similarity, VectorSource};

/// The highest level a node may be drawn on (the chance of reaching it with `m = 2` is 2⁻³¹).
const MAX_LEVEL: usize = 31;

/// Graph construction parameters; the defaults are Lucene's and Elasticsearch's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HnswParams {
    /// The maximum number of neighbours per node on the levels above 0 (twice this on level 0).
    pub m: usize,
    /// The beam width of the search that finds a new node's neighbours.
    pub ef_construction: usize,
    /// The seed of the level draws.
    pub seed: u64,
}

impl Default for HnswParams {
    fn default() -> Self {
        HnswParams {
            m: 16,
            ef_construction: 100,
            seed: 42,
        }
    }
}

impl HnswParams {
    fn max_links(&self, level: usize) -> usize {
        if level == 0 {
            2 * self.m
        } else {
            self.m
        }
    }
}

/// A node and its comparison value with the query: higher is closer; equal values rank the
/// lower ordinal first.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    /// The comparison value ([`Similarity::compare`]).
    pub value: f32,
    /// The node's ordinal.
    pub ord: u32,
}

impl Eq for Scored {}

impl Ord for Scored {
    /// "Greater" is closer.
    fn cmp(&self, other: &Self) -> Ordering {
        self.value
            .total_cmp(&other.value)
            .then_with(|| other.ord.cmp(&self.ord))
    }
}

impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// What a search found.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchOutcome {
    /// At most `k` nodes, closest first.
    pub hits: Vec<Scored>,
    /// How many nodes were compared with the query.
    pub visited: usize,
    /// False when the search stopped at `visit_limit` before converging: the caller should
    /// answer another way (an exact scan of the accepted nodes).
    pub complete: bool,
}

/// Nodes already compared in one search, by ordinal: a stamp per node, so that starting the
/// next search is one increment instead of clearing (or allocating) `n` entries.
struct Visited {
    stamp: Vec<u32>,
    current: u32,
}

impl Visited {
    fn new(n: usize) -> Visited {
        Visited {
            stamp: vec![0; n],
            current: 0,
        }
    }

    fn reset(&mut self, n: usize) {
        if self.stamp.len() < n {
            self.stamp.resize(n, 0);
        }
        self.current = self.current.wrapping_add(1);
        if self.current == 0 {
            self.stamp.fill(0);
            self.current = 1;
        }
    }

    /// Marks `ord`; true if it was not marked before.
    #[inline]
    fn insert(&mut self, ord: u32) -> bool {
        let slot = &mut self.stamp[ord as usize];
        let fresh = *slot != self.current;
        *slot = self.current;
        fresh
    }
}

/// What one search needs besides the graph, kept between searches (per thread for
/// [`GraphView::search_with`], per builder while building) so that a query allocates nothing
/// but its answer.
struct Scratch {
    visited: Visited,
    candidates: BinaryHeap<Scored>,
    results: BinaryHeap<std::cmp::Reverse<Scored>>,
    /// The not yet visited neighbours of the node being expanded.
    fresh: Vec<u32>,
}

impl Scratch {
    fn new(n: usize) -> Scratch {
        Scratch {
            visited: Visited::new(n),
            candidates: BinaryHeap::new(),
            results: BinaryHeap::new(),
            fresh: Vec::new(),
        }
    }
}

thread_local! {
    /// The searches' scratch on this thread (a query thread searches segment after segment).
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::new(0));
}

/// How many comparisons ahead a search asks for a vector ([`search_level`]): far enough that
/// the vector has arrived when its turn comes (a 384-dim `f32` vector is 24 cache lines), near
/// enough not to flood the CPU's outstanding-miss slots. Measured: 4 beat 1, 2, 3, 8 and the
/// whole list at once (bench/results/2026-12-05-hnsw-search-speed.md).
const PREFETCH_AHEAD: usize = 4;

/// Neighbour lists, however they are held.
trait Links {
    fn for_each_neighbor(&self, level: usize, node: u32, f: impl FnMut(u32));
    /// Hints that `node`'s list on `level` will be read soon (no effect on results).
    #[inline]
    fn prefetch_neighbors(&self, _level: usize, _node: u32) {}
}

/// One beam search on one level from `entry`: the `ef` closest nodes found, closest first.
/// `accept` limits which nodes may be results (every node is still walked through); the search
/// gives up, incomplete, once it has compared `visit_limit` nodes. `prefetch` is told which
/// node will be compared [`PREFETCH_AHEAD`] comparisons from now, so that its vector is on its
/// way into the cache (a hint: it changes no result).
///
/// A node's unvisited neighbours are gathered first and then compared in list order, as if one
/// by one: the same comparisons in the same order, so the same answer, but the next vectors'
/// addresses are known ahead. The list of the candidate expanded next is prefetched too: it is
/// the best candidate, known before the current one's neighbours are compared.
#[allow(clippy::too_many_arguments)]
fn search_level(
    links: &impl Links,
    level: usize,
    entry: &[Scored],
    ef: usize,
    compare: impl Fn(u32) -> f32,
    prefetch: impl Fn(u32),
    scratch: &mut Scratch,
    accept: Option<&dyn Fn(u32) -> bool>,
    visit_limit: usize,
    count: &mut usize,
) -> (Vec<Scored>, bool) {
    let accepts = |ord: u32| accept.is_none_or(|f| f(ord));
    let Scratch {
        visited,
        candidates,
        results,
        fresh,
    } = scratch;
    candidates.clear();
    results.clear();
    for &e in entry {
        if visited.insert(e.ord) {
            candidates.push(e);
            if accepts(e.ord) {
                results.push(std::cmp::Reverse(e));
            }
        }
    }
    while results.len() > ef {
        results.pop();
    }
    let mut complete = true;
    while let Some(c) = candidates.pop() {
        if results.len() >= ef && results.peek().is_some_and(|w| c < w.0) {
            break;
        }
        if *count >= visit_limit {
            complete = false;
            break;
        }
        // The next candidate's list is read after this one's neighbours are compared: start
        // loading it now (again below when a closer node takes its place).
        if let Some(next) = candidates.peek() {
            links.prefetch_neighbors(level, next.ord);
        }
        fresh.clear();
        links.for_each_neighbor(level, c.ord, |n| {
            if visited.insert(n) {
                fresh.push(n);
            }
        });
        for &f in fresh.iter().take(PREFETCH_AHEAD) {
            prefetch(f);
        }
        for i in 0..fresh.len() {
            if let Some(&next) = fresh.get(i + PREFETCH_AHEAD) {
                prefetch(next);
            }
            let n = fresh[i];
            *count += 1;
            let s = Scored {
                value: compare(n),
                ord: n,
            };
            let worst = results.peek().map(|w| w.0);
            if results.len() < ef || worst.is_some_and(|w| s > w) {
                candidates.push(s);
                if candidates.peek() == Some(&s) {
                    links.prefetch_neighbors(level, n);
                }
                if accepts(n) {
                    results.push(std::cmp::Reverse(s));
                    if results.len() > ef {
                        results.pop();
                    }
                }
            }
        }
    }
    let mut out: Vec<Scored> = results.drain().map(|r| r.0).collect();
    out.sort_unstable_by(|a, b| b.cmp(a));
    (out, complete)
}

/// Greedy descent on one level: the closest node reachable from `from` by always moving to a
/// closer neighbour.
fn descend(
    links: &impl Links,
    level: usize,
    mut best: Scored,
    mut compare: impl FnMut(u32) -> f32,
    count: &mut usize,
) -> Scored {
    loop {
        let mut moved = false;
        let from = best.ord;
        links.for_each_neighbor(level, from, |n| {
            *count += 1;
            let s = Scored {
                value: compare(n),
                ord: n,
            };
            if s > best {
                best = s;
                moved = true;
            }
        });
        if !moved {
            return best;
        }
    }
}

/// The frozen graph: per level, its nodes and their neighbour lists as flat arrays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HnswGraph {
    /// The node every search starts from (on the top level); `None` for an empty graph.
    entry: Option<u32>,
    /// `levels[0]` holds every node `0..n`; upper levels only theirs.
    levels: Vec<Level>,
    /// The number of nodes on level 0.
    len: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Level {
    /// The ordinals on this level, ascending (empty on level 0, which holds them all).
    nodes: Vec<u32>,
    /// Node `i`'s neighbours are `neighbors[offsets[i]..offsets[i + 1]]`.
    offsets: Vec<u32>,
    neighbors: Vec<u32>,
}

impl Links for HnswGraph {
    #[inline]
    fn for_each_neighbor(&self, level: usize, node: u32, mut f: impl FnMut(u32)) {
        for &n in self.neighbors(level, node) {
            f(n)
        }
    }
}

impl HnswGraph {
    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the graph has no node.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The number of levels (0 for an empty graph).
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// The entry node of every search.
    pub fn entry_point(&self) -> Option<u32> {
        self.entry
    }

    /// The nodes on `level`, ascending.
    pub fn nodes_on_level(&self, level: usize) -> Vec<u32> {
        match self.levels.get(level) {
            Some(_) if level == 0 => (0..self.len as u32).collect(),
            Some(l) => l.nodes.clone(),
            None => Vec::new(),
        }
    }

    /// The neighbours of `node` on `level`, closest first; empty when the node is not on it.
    pub fn neighbors(&self, level: usize, node: u32) -> &[u32] {
        let Some(l) = self.levels.get(level) else {
            return &[];
        };
        let i = if level == 0 {
            node as usize
        } else {
            match l.nodes.binary_search(&node) {
                Ok(i) => i,
                Err(_) => return &[],
            }
        };
        match (l.offsets.get(i), l.offsets.get(i + 1)) {
            (Some(&a), Some(&b)) => &l.neighbors[a as usize..b as usize],
            _ => &[],
        }
    }

    /// The `k` nodes closest to `query` that `accept` takes (all when `None`), found with a
    /// beam of `max(ef, k)` on level 0. The search compares at most `visit_limit` nodes and
    /// says so when it had to stop ([`SearchOutcome::complete`]).
    #[allow(clippy::too_many_arguments)]
    pub fn search<S: VectorSource + ?Sized>(
        &self,
        source: &S,
        similarity: Similarity,
        query: &[f32],
        k: usize,
        ef: usize,
        accept: Option<&dyn Fn(u32) -> bool>,
        visit_limit: usize,
    ) -> SearchOutcome {
        let kernel = VectorKernel::default_kernel();
        let compare = |ord: u32| similarity.compare(kernel, query, source.vector(ord));
        self.view().search_with(compare, k, ef, accept, visit_limit)
    }

    /// The graph as borrowed arrays: what a segment file holds.
    pub fn view(&self) -> GraphView<'_> {
        GraphView {
            entry: self.entry,
            len: self.len,
            levels: self
                .levels
                .iter()
                .map(|l| LevelView {
                    nodes: &l.nodes,
                    offsets: &l.offsets,
                    neighbors: &l.neighbors,
                })
                .collect(),
        }
    }

    /// A graph copied from a view (a merge seeds its builder with a segment's graph).
    pub fn from_view(view: &GraphView<'_>) -> HnswGraph {
        HnswGraph {
            entry: view.entry,
            len: view.len,
            levels: view
                .levels
                .iter()
                .map(|l| Level {
                    nodes: l.nodes.to_vec(),
                    offsets: l.offsets.to_vec(),
                    neighbors: l.neighbors.to_vec(),
                })
                .collect(),
        }
    }
}

/// One level of a graph as arrays: `nodes` (ascending; empty on level 0, which holds every
/// node), and node `i`'s neighbours `neighbors[offsets[i]..offsets[i + 1]]`.
#[derive(Debug, Clone, Copy)]
pub struct LevelView<'a> {
    pub nodes: &'a [u32],
    pub offsets: &'a [u32],
    pub neighbors: &'a [u32],
}

/// A graph read in place: its entry node, node count and levels.
#[derive(Debug, Clone)]
pub struct GraphView<'a> {
    pub entry: Option<u32>,
    pub len: usize,
    pub levels: Vec<LevelView<'a>>,
}

impl<'a> GraphView<'a> {
    /// Checks what a search relies on (for arrays read from a file): offsets that start at 0,
    /// never decrease and end at the neighbour count; ascending upper-level nodes, each on the
    /// level below; neighbours that are nodes of their level; an entry on the top level. The
    /// error says what is wrong.
    pub fn validate(&self) -> std::result::Result<(), String> {
        let n = self.len;
        if self.levels.is_empty() != self.entry.is_none() || (n == 0) != self.entry.is_none() {
            return Err("graph entry point and node count disagree".into());
        }
        for (li, l) in self.levels.iter().enumerate() {
            let count = if li == 0 { n } else { l.nodes.len() };
            if li == 0 && !l.nodes.is_empty() {
                return Err("level 0 lists nodes".into());
            }
            if l.offsets.len() != count + 1
                || l.offsets[0] != 0
                || l.offsets.windows(2).any(|w| w[0] > w[1])
                || l.offsets[count] as usize != l.neighbors.len()
            {
                return Err(format!("level {li}: neighbour offsets are inconsistent"));
            }
            if li > 0 {
                let below = &self.levels[li - 1];
                if l.nodes.windows(2).any(|w| w[0] >= w[1])
                    || l.nodes.iter().any(|&x| x as usize >= n)
                    || (li > 1
                        && l.nodes
                            .iter()
                            .any(|x| below.nodes.binary_search(x).is_err()))
                {
                    return Err(format!(
                        "level {li}: nodes are not ascending nodes of the level below"
                    ));
                }
            }
            let on_level = |x: u32| {
                if li == 0 {
                    (x as usize) < n
                } else {
                    l.nodes.binary_search(&x).is_ok()
                }
            };
            if let Some(bad) = l.neighbors.iter().find(|&&x| !on_level(x)) {
                return Err(format!(
                    "level {li}: neighbour {bad} is not a node of the level"
                ));
            }
        }
        if let (Some(e), Some(top)) = (self.entry, self.levels.last()) {
            let ok = if self.levels.len() == 1 {
                (e as usize) < n
            } else {
                top.nodes.binary_search(&e).is_ok()
            };
            if !ok {
                return Err(format!("entry point {e} is not on the top level"));
            }
        }
        Ok(())
    }

    /// The neighbours of `node` on `level`; empty when it is not on it.
    #[inline]
    pub fn neighbors(&self, level: usize, node: u32) -> &'a [u32] {
        let Some(l) = self.levels.get(level) else {
            return &[];
        };
        let i = if level == 0 {
            node as usize
        } else {
            match l.nodes.binary_search(&node) {
                Ok(i) => i,
                Err(_) => return &[],
            }
        };
        match (l.offsets.get(i), l.offsets.get(i + 1)) {
            (Some(&a), Some(&b)) if a <= b && b as usize <= l.neighbors.len() => {
                &l.neighbors[a as usize..b as usize]
            }
            _ => &[],
        }
    }

    /// [`HnswGraph::search`] with any comparison (higher is closer): the full vectors, or
    /// quantized estimates that the caller re-scores.
    pub fn search_with(
        &self,
        compare: impl Fn(u32) -> f32,
        k: usize,
        ef: usize,
        accept: Option<&dyn Fn(u32) -> bool>,
        visit_limit: usize,
    ) -> SearchOutcome {
        self.search_with_prefetch(compare, |_| {}, k, ef, accept, visit_limit)
    }

    /// [`search_with`](Self::search_with), told through `prefetch` which node will be compared
    /// next so that its vector can be fetched into the cache meanwhile (see
    /// [`prefetch_vector`]): a graph walk reads vectors in an order no hardware prefetcher
    /// guesses, and waiting for each one from memory is most of its time.
    pub fn search_with_prefetch(
        &self,
        compare: impl Fn(u32) -> f32,
        prefetch: impl Fn(u32),
        k: usize,
        ef: usize,
        accept: Option<&dyn Fn(u32) -> bool>,
        visit_limit: usize,
    ) -> SearchOutcome {
        let Some(entry) = self.entry else {
            return SearchOutcome {
                hits: Vec::new(),
                visited: 0,
                complete: true,
            };
        };
        let mut count = 1;
        let mut best = Scored {
            value: compare(entry),
            ord: entry,
        };
        for level in (1..self.levels.len()).rev() {
            best = descend(self, level, best, &compare, &mut count);
        }
        let mut run = |scratch: &mut Scratch| {
            scratch.visited.reset(self.len);
            search_level(
                self,
                0,
                &[best],
                ef.max(k),
                &compare,
                &prefetch,
                scratch,
                accept,
                visit_limit,
                &mut count,
            )
        };
        // A comparison or filter that itself searches a graph on this thread finds the scratch
        // borrowed and gets its own.
        let (mut hits, complete) = SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut scratch) => run(&mut scratch),
            Err(_) => run(&mut Scratch::new(self.len)),
        });
        hits.truncate(k);
        SearchOutcome {
            hits,
            visited: count,
            complete,
        }
    }
}

/// Asks the CPU to start loading `values` (a vector about to be compared) into its caches: one
/// hint per 64-byte line. No effect on any result.
#[inline]
pub fn prefetch_vector<T>(values: &[T]) {
    let per_line = (64 / std::mem::size_of::<T>().max(1)).max(1);
    for x in values.iter().step_by(per_line) {
        quarry_codecs::simd::prefetch(x);
    }
}

impl Links for GraphView<'_> {
    #[inline]
    fn for_each_neighbor(&self, level: usize, node: u32, mut f: impl FnMut(u32)) {
        for &n in self.neighbors(level, node) {
            f(n)
        }
    }

    #[inline]
    fn prefetch_neighbors(&self, level: usize, node: u32) {
        // Level 0 only: upper levels are few nodes, searched greedily and cached.
        if level == 0 {
            if let Some(l) = self.levels.first() {
                if let Some(&a) = l.offsets.get(node as usize) {
                    if let Some(list) = l.neighbors.get(a as usize..) {
                        prefetch_vector(&list[..list.len().min(32)]);
                    }
                }
            }
        }
    }
}

/// Builds an [`HnswGraph`] over the vectors of a [`VectorSource`], one insertion at a time.
pub struct HnswBuilder<'a, S: VectorSource + ?Sized> {
    source: &'a S,
    similarity: Similarity,
    kernel: VectorKernel,
    params: HnswParams,
    rng: u64,
    /// `1 / ln(m)`: the scale of the level draws.
    level_scale: f64,
    /// Per node, per level it lives on, its neighbours with their comparison values, closest
    /// first; empty for a node not inserted yet.
    links: Vec<Vec<Vec<Scored>>>,
    entry: Option<u32>,
    scratch: Scratch,
}

struct BuilderLinks<'b>(&'b [Vec<Vec<Scored>>]);

impl Links for BuilderLinks<'_> {
    #[inline]
    fn for_each_neighbor(&self, level: usize, node: u32, mut f: impl FnMut(u32)) {
        if let Some(l) = self.0[node as usize].get(level) {
            for s in l {
                f(s.ord)
            }
        }
    }
}

impl<'a, S: VectorSource + ?Sized> HnswBuilder<'a, S> {
    /// A builder for the vectors of `source`, none inserted yet.
    pub fn new(source: &'a S, similarity: Similarity, params: HnswParams) -> Self {
        let params = HnswParams {
            m: params.m.max(2),
            ef_construction: params.ef_construction.max(1),
            ..params
        };
        HnswBuilder {
            source,
            similarity,
            kernel: VectorKernel::default_kernel(),
            params,
            rng: params.seed ^ 0x9E37_79B9_7F4A_7C15,
            level_scale: 1.0 / (params.m as f64).ln(),
            links: vec![Vec::new(); source.len()],
            entry: None,
            scratch: Scratch::new(source.len()),
        }
    }

    /// A builder that starts from `initial`, a graph over other ordinals: node `old` of it
    /// becomes node `map[old]` here with its levels and links (links to nodes that map to
    /// `None` are dropped), and the nodes not reached by `map` are left to
    /// [`insert`](Self::insert). Comparison values are recomputed with this builder's source. Best used
    /// when few nodes are dropped (a merge seeds from the largest segment without deletions).
    pub fn with_initial_graph(
        source: &'a S,
        similarity: Similarity,
        params: HnswParams,
        initial: &HnswGraph,
        map: &[Option<u32>],
    ) -> Self {
        let mut b = Self::new(source, similarity, params);
        let mut top: Option<(usize, u32)> = None;
        for level in 0..initial.num_levels() {
            for old in initial.nodes_on_level(level) {
                let Some(&Some(new)) = map.get(old as usize) else {
                    continue;
                };
                let mut list: Vec<Scored> = initial
                    .neighbors(level, old)
                    .iter()
                    .filter_map(|&n| map.get(n as usize).copied().flatten())
                    .map(|n| Scored {
                        value: b.compare(new, n),
                        ord: n,
                    })
                    .collect();
                list.sort_unstable_by(|x, y| y.cmp(x));
                let node = &mut b.links[new as usize];
                debug_assert_eq!(node.len(), level);
                node.push(list);
                if top.is_none_or(|(l, _)| level > l) {
                    top = Some((level, new));
                }
            }
        }
        // The old entry point if it survived, else the first node of the highest level.
        b.entry = initial
            .entry_point()
            .and_then(|e| map.get(e as usize).copied().flatten())
            .or(top.map(|(_, n)| n));
        b
    }

    fn compare(&self, a: u32, b: u32) -> f32 {
        self.similarity
            .compare(self.kernel, self.source.vector(a), self.source.vector(b))
    }

    /// Whether node `ord` is already in the graph.
    pub fn contains(&self, ord: u32) -> bool {
        !self.links[ord as usize].is_empty()
    }

    fn draw_level(&mut self) -> usize {
        // splitmix64
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // A uniform draw in (0, 1].
        let u = ((z >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        ((-u.ln() * self.level_scale) as usize).min(MAX_LEVEL)
    }

    /// Adds node `ord` (< `source.len()`); a node already in the graph is left as it is.
    pub fn insert(&mut self, ord: u32) {
        if self.contains(ord) {
            return;
        }
        let level = self.draw_level();
        let Some(entry) = self.entry else {
            self.links[ord as usize] = vec![Vec::new(); level + 1];
            self.entry = Some(ord);
            return;
        };
        let top = self.links[entry as usize].len() - 1;
        let (sim, kernel, source) = (self.similarity, self.kernel, self.source);
        let query = source.vector(ord);
        let compare = |n: u32| sim.compare(kernel, query, source.vector(n));
        let mut count = 0;
        let mut best = Scored {
            value: compare(entry),
            ord: entry,
        };
        for l in (level + 1..=top).rev() {
            best = descend(&BuilderLinks(&self.links), l, best, compare, &mut count);
        }
        let mut entries = vec![best];
        let mut found: Vec<Vec<Scored>> = vec![Vec::new(); level.min(top) + 1];
        for l in (0..=level.min(top)).rev() {
            self.scratch.visited.reset(self.links.len());
            let (cands, _) = search_level(
                &BuilderLinks(&self.links),
                l,
                &entries,
                self.params.ef_construction,
                compare,
                |n| prefetch_vector(source.vector(n)),
                &mut self.scratch,
                None,
                usize::MAX,
                &mut count,
            );
            found[l] = self.diverse(&cands, self.params.max_links(l));
            entries = cands;
        }
        let mut mine = found;
        mine.resize(level + 1, Vec::new());
        self.links[ord as usize] = mine;
        for l in 0..=level.min(top) {
            let neighbors = self.links[ord as usize][l].clone();
            for n in neighbors {
                self.link_back(
                    n.ord,
                    l,
                    Scored {
                        value: n.value,
                        ord,
                    },
                );
            }
        }
        if level > top {
            self.entry = Some(ord);
        }
    }

    /// The paper's neighbour selection: walking `cands` closest first, keep a candidate only if
    /// it is closer to the base node than to every candidate kept so far; at most `max`.
    fn diverse(&self, cands: &[Scored], max: usize) -> Vec<Scored> {
        let mut kept: Vec<Scored> = Vec::with_capacity(max.min(cands.len()));
        for &c in cands {
            if kept.len() >= max {
                break;
            }
            if kept.iter().all(|r| self.compare(c.ord, r.ord) < c.value) {
                kept.push(c);
            }
        }
        kept
    }

    /// Adds `new` to `node`'s list on `level`, pruning the list with [`diverse`](Self::diverse)
    /// when it overflows.
    fn link_back(&mut self, node: u32, level: usize, new: Scored) {
        let max = self.params.max_links(level);
        let list = &mut self.links[node as usize][level];
        let at = list.partition_point(|s| *s > new);
        list.insert(at, new);
        if list.len() > max {
            let cands = std::mem::take(list);
            let pruned = self.diverse(&cands, max);
            self.links[node as usize][level] = pruned;
        }
    }

    /// Inserts every node of the source not yet in the graph, in ordinal order, and freezes it.
    pub fn build(mut self) -> HnswGraph {
        for ord in 0..self.source.len() as u32 {
            self.insert(ord);
        }
        self.finish()
    }

    /// Freezes the graph as it is. Every node must have been inserted.
    ///
    /// # Panics
    /// When a node of the source was not inserted.
    pub fn finish(self) -> HnswGraph {
        let n = self.links.len();
        assert!(
            self.links.iter().all(|l| !l.is_empty()),
            "every node must be inserted before the graph is frozen"
        );
        let num_levels = self.entry.map_or(0, |e| self.links[e as usize].len());
        let mut levels = Vec::with_capacity(num_levels);
        for level in 0..num_levels {
            let nodes: Vec<u32> = if level == 0 {
                Vec::new()
            } else {
                (0..n as u32)
                    .filter(|&o| self.links[o as usize].len() > level)
                    .collect()
            };
            let mut offsets = vec![0u32];
            let mut neighbors = Vec::new();
            let mut push = |o: u32| {
                neighbors.extend(self.links[o as usize][level].iter().map(|s| s.ord));
                offsets.push(neighbors.len() as u32);
            };
            if level == 0 {
                (0..n as u32).for_each(&mut push);
            } else {
                nodes.iter().copied().for_each(&mut push);
            }
            levels.push(Level {
                nodes,
                offsets,
                neighbors,
            });
        }
        HnswGraph {
            entry: self.entry,
            levels,
            len: n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::FlatVectors;
    use super::*;

    /// `n` unit vectors around 20 centres, from a seed (see `testdata::clustered`).
    fn clustered(n: usize, dims: usize, seed: u64) -> Vec<f32> {
        super::super::testdata::clustered(n, dims, 20, 0.6, seed)
    }

    fn exact(
        src: &FlatVectors,
        sim: Similarity,
        q: &[f32],
        k: usize,
        accept: impl Fn(u32) -> bool,
    ) -> Vec<Scored> {
        let kernel = VectorKernel::Scalar;
        let mut all: Vec<Scored> = (0..src.len() as u32)
            .filter(|&o| accept(o))
            .map(|o| Scored {
                value: sim.compare(kernel, q, src.vector(o)),
                ord: o,
            })
            .collect();
        all.sort_unstable_by(|a, b| b.cmp(a));
        all.truncate(k);
        all
    }

    fn recall(got: &[Scored], want: &[Scored]) -> f64 {
        let hit = got
            .iter()
            .filter(|g| want.iter().any(|w| w.ord == g.ord))
            .count();
        hit as f64 / want.len().max(1) as f64
    }

    #[test]
    fn empty_and_single_node_graphs() {
        let values: Vec<f32> = Vec::new();
        let src = FlatVectors::new(&values, 4).unwrap();
        let g = HnswBuilder::new(&src, Similarity::DotProduct, HnswParams::default()).build();
        assert!(g.is_empty());
        let out = g.search(
            &src,
            Similarity::DotProduct,
            &[1.0; 4],
            10,
            10,
            None,
            usize::MAX,
        );
        assert!(out.hits.is_empty() && out.complete);

        let values = vec![0.5f32; 4];
        let src = FlatVectors::new(&values, 4).unwrap();
        let g = HnswBuilder::new(&src, Similarity::DotProduct, HnswParams::default()).build();
        let out = g.search(
            &src,
            Similarity::DotProduct,
            &[1.0; 4],
            10,
            10,
            None,
            usize::MAX,
        );
        assert_eq!(out.hits.len(), 1);
        assert_eq!(out.hits[0].ord, 0);
        assert_eq!(out.hits[0].value, 2.0);
    }

    #[test]
    fn links_respect_their_bounds() {
        let values = clustered(2000, 16, 7);
        let src = FlatVectors::new(&values, 16).unwrap();
        let params = HnswParams {
            m: 8,
            ef_construction: 50,
            seed: 3,
        };
        let g = HnswBuilder::new(&src, Similarity::Cosine, params).build();
        assert_eq!(g.len(), 2000);
        assert!(g.num_levels() >= 2, "2,000 nodes with m = 8 reach level 1");
        for level in 0..g.num_levels() {
            let nodes = g.nodes_on_level(level);
            if level > 0 {
                // Each level holds a subset of the one below.
                let below = g.nodes_on_level(level - 1);
                assert!(nodes.iter().all(|n| below.binary_search(n).is_ok()));
            }
            for &n in &nodes {
                let list = g.neighbors(level, n);
                assert!(list.len() <= params.max_links(level));
                assert!(!list.contains(&n), "no self links");
                assert!(list.iter().all(|m| nodes.binary_search(m).is_ok()));
                if nodes.len() > 1 {
                    assert!(!list.is_empty(), "node {n} on level {level} is isolated");
                }
            }
        }
    }

    #[test]
    fn recall_at_10_on_clustered_vectors() {
        for sim in [Similarity::Cosine, Similarity::L2Norm] {
            let (n, dims) = (5000, 32);
            let values = clustered(n, dims, 11);
            let src = FlatVectors::new(&values, dims).unwrap();
            let g = HnswBuilder::new(&src, sim, HnswParams::default()).build();
            let queries = clustered(100, dims, 99);
            let mut total = 0.0;
            for q in queries.chunks_exact(dims) {
                let out = g.search(&src, sim, q, 10, 100, None, usize::MAX);
                assert!(out.complete);
                assert!(
                    out.visited < n,
                    "a graph search compares fewer than all nodes"
                );
                total += recall(&out.hits, &exact(&src, sim, q, 10, |_| true));
            }
            let r = total / 100.0;
            eprintln!("{sim}: recall@10 {r:.3} (m 16, ef_construction 100, ef 100)");
            assert!(r >= 0.95, "{sim}: recall@10 {r}");
        }
    }

    #[test]
    fn a_filtered_search_returns_only_accepted_nodes() {
        let (n, dims) = (3000, 24);
        let values = clustered(n, dims, 5);
        let src = FlatVectors::new(&values, dims).unwrap();
        let sim = Similarity::DotProduct;
        let g = HnswBuilder::new(&src, sim, HnswParams::default()).build();
        let queries = clustered(50, dims, 17);
        for modulus in [2u32, 10] {
            let accept = move |o: u32| o % modulus == 1;
            let mut total = 0.0;
            for q in queries.chunks_exact(dims) {
                let out = g.search(&src, sim, q, 10, 100, Some(&accept), usize::MAX);
                assert!(out.hits.iter().all(|h| accept(h.ord)));
                assert_eq!(out.hits.len(), 10);
                total += recall(&out.hits, &exact(&src, sim, q, 10, accept));
            }
            let r = total / 50.0;
            eprintln!("1/{modulus} accepted: recall@10 {r:.3}");
            assert!(r >= 0.9, "1/{modulus} accepted: recall@10 {r}");
        }
    }

    #[test]
    fn prefetching_and_scratch_reuse_change_no_result() {
        let dims = 16;
        let (big, small) = (clustered(3000, dims, 31), clustered(500, dims, 32));
        let sim = Similarity::Cosine;
        let sb = FlatVectors::new(&big, dims).unwrap();
        let ss = FlatVectors::new(&small, dims).unwrap();
        let gb = HnswBuilder::new(&sb, sim, HnswParams::default()).build();
        let gs = HnswBuilder::new(&ss, sim, HnswParams::default()).build();
        let kernel = VectorKernel::default_kernel();
        let queries = clustered(20, dims, 33);
        for q in queries.chunks_exact(dims) {
            // The thread's scratch goes from a large graph to a small one and back.
            for (g, src) in [(&gb, &sb), (&gs, &ss), (&gb, &sb)] {
                let compare = |o: u32| sim.compare(kernel, q, src.vector(o));
                let plain = g.view().search_with(compare, 10, 50, None, usize::MAX);
                let fetched = g.view().search_with_prefetch(
                    compare,
                    |o| prefetch_vector(src.vector(o)),
                    10,
                    50,
                    None,
                    usize::MAX,
                );
                // With the thread's scratch held (a search inside a comparison), a fresh one.
                let nested = SCRATCH.with(|c| {
                    let _held = c.borrow_mut();
                    g.view().search_with(compare, 10, 50, None, usize::MAX)
                });
                assert_eq!(plain, fetched);
                assert_eq!(plain, nested);
                assert_eq!(plain.hits.len(), 10);
            }
        }
    }

    #[test]
    fn a_visit_limit_stops_the_search_and_says_so() {
        let values = clustered(2000, 16, 9);
        let src = FlatVectors::new(&values, 16).unwrap();
        let sim = Similarity::Cosine;
        let g = HnswBuilder::new(&src, sim, HnswParams::default()).build();
        let q = &values[..16];
        // Accepting almost nothing forces a long walk.
        let accept = |o: u32| o == 1999;
        let out = g.search(&src, sim, q, 10, 100, Some(&accept), 50);
        assert!(!out.complete);
        assert!(out.visited < 2000);
    }

    #[test]
    fn the_same_seed_builds_the_same_graph() {
        let values = clustered(500, 8, 1);
        let src = FlatVectors::new(&values, 8).unwrap();
        let a = HnswBuilder::new(&src, Similarity::L2Norm, HnswParams::default()).build();
        let b = HnswBuilder::new(&src, Similarity::L2Norm, HnswParams::default()).build();
        assert_eq!(a, b);
    }

    #[test]
    fn a_graph_seeded_from_another_keeps_its_links_and_its_recall() {
        let (n, dims) = (4000, 32);
        let values = clustered(n, dims, 21);
        let sim = Similarity::Cosine;
        // The "largest segment": the first 3,000 vectors; the merged segment puts them after
        // 1,000 others.
        let first = FlatVectors::new(&values[..3000 * dims], dims).unwrap();
        let g1 = HnswBuilder::new(&first, sim, HnswParams::default()).build();
        let mut merged_values = values[3000 * dims..].to_vec();
        merged_values.extend_from_slice(&values[..3000 * dims]);
        let merged = FlatVectors::new(&merged_values, dims).unwrap();
        let map: Vec<Option<u32>> = (0..3000u32).map(|o| Some(o + 1000)).collect();
        let b = HnswBuilder::with_initial_graph(&merged, sim, HnswParams::default(), &g1, &map);
        assert!(b.contains(1000) && b.contains(3999) && !b.contains(0));
        let g = b.build();
        // The seeded nodes kept (at least) their old neighbours' identities where not pruned.
        let kept = g1
            .neighbors(0, 5)
            .iter()
            .filter(|&&m| g.neighbors(0, 1005).contains(&(m + 1000)));
        assert!(kept.count() > 0);
        let queries = clustered(50, dims, 77);
        let mut total = 0.0;
        for q in queries.chunks_exact(dims) {
            let out = g.search(&merged, sim, q, 10, 100, None, usize::MAX);
            total += recall(&out.hits, &exact(&merged, sim, q, 10, |_| true));
        }
        let r = total / 50.0;
        eprintln!("seeded graph: recall@10 {r:.3}");
        assert!(r >= 0.95, "recall@10 {r}");
    }
}

/// Seeding a merged graph with the largest source's graph against rebuilding it: time and
/// recall (`cargo test -p quarry --lib merge_seeding_vs_rebuild -- --ignored --nocapture`).
#[cfg(test)]
mod merge_measure {
    use super::super::FlatVectors;
    use super::*;

    #[test]
    #[ignore = "a measurement, not a check"]
    fn merge_seeding_vs_rebuild() {
        let (n, big, dims) = (12_000usize, 9_000usize, 64usize);
        let values = super::super::testdata::clustered(n, dims, 50, 0.6, 5);
        let sim = Similarity::Cosine;
        let p = HnswParams::default();
        let first = FlatVectors::new(&values[..big * dims], dims).unwrap();
        let g1 = HnswBuilder::new(&first, sim, p).build();
        let all = FlatVectors::new(&values, dims).unwrap();
        let map: Vec<Option<u32>> = (0..big as u32).map(Some).collect();
        let t = std::time::Instant::now();
        let seeded = HnswBuilder::with_initial_graph(&all, sim, p, &g1, &map).build();
        let t_seeded = t.elapsed();
        let t = std::time::Instant::now();
        let rebuilt = HnswBuilder::new(&all, sim, p).build();
        let t_rebuilt = t.elapsed();
        let queries = super::super::testdata::clustered(200, dims, 50, 0.6, 99);
        let recall = |g: &HnswGraph| {
            let mut hit = 0;
            for q in queries.chunks_exact(dims) {
                let want = crate::vector::scan::exact_top_k(&all, sim, q, 10, None);
                let got = g.search(&all, sim, q, 10, 100, None, usize::MAX).hits;
                hit += got.iter().filter(|g| want.contains(g)).count();
            }
            hit as f64 / 2000.0
        };
        eprintln!(
            "merge of {big} + {} vectors of {dims} dims: seeded {t_seeded:?} (recall@10 {:.3}), rebuilt {t_rebuilt:?} (recall@10 {:.3})",
            n - big,
            recall(&seeded),
            recall(&rebuilt)
        );
    }
}
