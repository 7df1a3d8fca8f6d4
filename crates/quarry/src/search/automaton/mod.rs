//! Which terms does a multi-term query match? Wildcard patterns, Lucene regular expressions and
//! Levenshtein (fuzzy) balls as automata over a term's bytes, so the `fst` term dictionary can be
//! intersected with them: only the dictionary's paths the automaton can still accept are walked.
//!
//! Patterns are defined over Unicode code points (as Lucene's are); [`CharAutomaton`]s see whole
//! characters and [`Utf8`] adapts one to the byte-at-a-time [`fst::Automaton`] by buffering a
//! character's UTF-8 bytes.
pub mod regexp;

use std::sync::Arc;

/// An automaton over Unicode code points.
pub trait CharAutomaton {
    type State: Clone;
    fn start(&self) -> Self::State;
    fn is_match(&self, state: &Self::State) -> bool;
    /// False only when no continuation can match (prunes the dictionary walk).
    fn can_match(&self, state: &Self::State) -> bool;
    fn accept(&self, state: &Self::State, c: char) -> Self::State;
    /// The one character every continuation from `state` starts with, when there is exactly
    /// one (a literal of a pattern): a dictionary walk then looks its transition up instead of
    /// trying every transition of the node.
    fn literal_char(&self, _state: &Self::State) -> Option<char> {
        None
    }
}

impl<A: CharAutomaton> CharAutomaton for &A {
    type State = A::State;
    fn start(&self) -> Self::State {
        (**self).start()
    }
    fn is_match(&self, s: &Self::State) -> bool {
        (**self).is_match(s)
    }
    fn can_match(&self, s: &Self::State) -> bool {
        (**self).can_match(s)
    }
    fn accept(&self, s: &Self::State, c: char) -> Self::State {
        (**self).accept(s, c)
    }
    fn literal_char(&self, s: &Self::State) -> Option<char> {
        (**self).literal_char(s)
    }
}

/// What a dictionary walk ([`crate::search::multiterm`]) may ask an automaton besides
/// [`fst::Automaton`]'s questions.
pub trait LiteralByte: fst::Automaton {
    /// The one byte every continuation from `state` starts with, when there is exactly one:
    /// the walk finds that transition of a node by a lookup instead of stepping the automaton
    /// through each of the node's transitions (`w?arton` after its `?`: one lookup instead of
    /// thirty steps).
    fn literal_byte(&self, _state: &Self::State) -> Option<u8> {
        None
    }
}

impl<T: LiteralByte> LiteralByte for &T {
    fn literal_byte(&self, state: &Self::State) -> Option<u8> {
        (**self).literal_byte(state)
    }
}

impl<A: CharAutomaton> LiteralByte for Utf8<A> {
    fn literal_byte(&self, s: &Self::State) -> Option<u8> {
        if s.len != 0 {
            return None;
        }
        let c = self.0.literal_char(s.inner.as_ref()?)?;
        let mut buf = [0u8; 4];
        Some(c.encode_utf8(&mut buf).as_bytes()[0])
    }
}

impl LiteralByte for LazyDfa<'_> {}

/// A [`CharAutomaton`] read a byte at a time: the state carries the bytes of a character not
/// yet complete. Bytes that are not UTF-8 lead to a dead state.
pub struct Utf8<A>(pub A);

#[derive(Clone)]
pub struct Utf8State<S> {
    inner: Option<S>,
    pending: [u8; 4],
    len: u8,
}

impl<A: CharAutomaton> fst::Automaton for Utf8<A> {
    type State = Utf8State<A::State>;
    fn start(&self) -> Self::State {
        Utf8State {
            inner: Some(self.0.start()),
            pending: [0; 4],
            len: 0,
        }
    }
    fn is_match(&self, s: &Self::State) -> bool {
        s.len == 0 && s.inner.as_ref().is_some_and(|i| self.0.is_match(i))
    }
    fn can_match(&self, s: &Self::State) -> bool {
        s.inner.as_ref().is_some_and(|i| self.0.can_match(i))
    }
    fn accept(&self, s: &Self::State, byte: u8) -> Self::State {
        let Some(inner) = &s.inner else {
            return s.clone();
        };
        if s.len == 0 && byte < 0x80 {
            // A whole ASCII character: no buffering, no UTF-8 decoding.
            return Utf8State {
                inner: Some(self.0.accept(inner, char::from(byte))),
                pending: s.pending,
                len: 0,
            };
        }
        let mut next = Utf8State {
            inner: None,
            pending: s.pending,
            len: s.len,
        };
        if usize::from(next.len) >= 4 {
            return next;
        }
        next.pending[usize::from(next.len)] = byte;
        next.len += 1;
        let bytes = &next.pending[..usize::from(next.len)];
        let want = match bytes[0] {
            0x00..=0x7f => 1,
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xf7 => 4,
            _ => return next,
        };
        if bytes.len() < want {
            next.inner = Some(inner.clone());
            return next;
        }
        if let Some(c) = std::str::from_utf8(bytes)
            .ok()
            .and_then(|t| t.chars().next())
        {
            next.inner = Some(self.0.accept(inner, c));
            next.len = 0;
        }
        next
    }
}

/// A nondeterministic automaton over code points (Thompson's construction): states are
/// character-class transitions, epsilon splits and the one accepting state.
#[derive(Debug, Clone)]
pub struct Nfa {
    states: Vec<NState>,
    start: u32,
}

#[derive(Debug, Clone)]
enum NState {
    /// On a character within one of the inclusive ranges, go to the target.
    Class(Vec<(u32, u32)>, u32),
    /// Epsilon moves to every target.
    Split(Vec<u32>),
    Match,
}

/// The most NFA states a pattern may compile to (Lucene's analogue is its determinize work
/// limit): `a{1000}{1000}` is refused rather than built.
pub const MAX_NFA_STATES: usize = 100_000;

/// A sorted set of NFA states closed under epsilon moves.
pub type NfaState = Arc<[u32]>;

impl Nfa {
    fn closure(&self, seeds: impl IntoIterator<Item = u32>) -> NfaState {
        let mut seen = vec![false; self.states.len()];
        let mut stack: Vec<u32> = seeds.into_iter().collect();
        let mut out = Vec::new();
        while let Some(s) = stack.pop() {
            if std::mem::replace(&mut seen[s as usize], true) {
                continue;
            }
            match &self.states[s as usize] {
                NState::Split(ts) => stack.extend(ts.iter().copied()),
                _ => out.push(s),
            }
        }
        out.sort_unstable();
        out.into()
    }

    /// Whether the automaton has a loop (a `*`, `+` or `{n,}`): only then can a walk of the
    /// dictionary come back to a state often enough for [`LazyDfa`]'s tables to pay for
    /// themselves (for patterns too large for a [`BitNfa`]). A finite language is walked to a
    /// bounded depth, each state reached a few times: a plain [`Utf8`] walk is cheaper there
    /// (`quarry-bench` A/B of `wo?d` queries on W2: 15 % slower through the lazy DFA).
    pub fn has_loop(&self) -> bool {
        // Iterative depth-first search for a back edge: 0 unseen, 1 on the path, 2 done.
        let mut mark = vec![0u8; self.states.len()];
        let targets = |s: u32| -> Vec<u32> {
            match &self.states[s as usize] {
                NState::Class(_, t) => vec![*t],
                NState::Split(ts) => ts.clone(),
                NState::Match => Vec::new(),
            }
        };
        let mut stack: Vec<(u32, Vec<u32>)> = vec![(self.start, targets(self.start))];
        mark[self.start as usize] = 1;
        while let Some((s, rest)) = stack.last_mut() {
            match rest.pop() {
                Some(t) if (t as usize) < mark.len() => match mark[t as usize] {
                    1 => return true,
                    0 => {
                        mark[t as usize] = 1;
                        let next = targets(t);
                        stack.push((t, next));
                    }
                    _ => {}
                },
                Some(_) => {}
                None => {
                    mark[*s as usize] = 2;
                    stack.pop();
                }
            }
        }
        false
    }

    /// Whether the whole of `text` is accepted (the reference for tests and single checks).
    pub fn matches(&self, text: &str) -> bool {
        let mut s = CharAutomaton::start(self);
        for c in text.chars() {
            s = CharAutomaton::accept(self, &s, c);
            if s.is_empty() {
                return false;
            }
        }
        CharAutomaton::is_match(self, &s)
    }
}

impl CharAutomaton for Nfa {
    type State = NfaState;
    fn start(&self) -> NfaState {
        self.closure([self.start])
    }
    fn is_match(&self, s: &NfaState) -> bool {
        s.iter()
            .any(|&i| matches!(self.states[i as usize], NState::Match))
    }
    fn can_match(&self, s: &NfaState) -> bool {
        !s.is_empty()
    }
    fn accept(&self, s: &NfaState, c: char) -> NfaState {
        let c = u32::from(c);
        let targets = s.iter().filter_map(|&i| match &self.states[i as usize] {
            NState::Class(ranges, t) if ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) => {
                Some(*t)
            }
            _ => None,
        });
        self.closure(targets)
    }
    fn literal_char(&self, s: &NfaState) -> Option<char> {
        literal_of(s.iter().map(|&i| &self.states[i as usize]))
    }
}

/// The single character all class states of a set take, if they take exactly one and the
/// same (a match state in the set is no continuation and does not count).
fn literal_of<'s>(states: impl Iterator<Item = &'s NState>) -> Option<char> {
    let mut lit: Option<u32> = None;
    for st in states {
        match st {
            NState::Class(ranges, _) => match ranges.as_slice() {
                [(lo, hi)] if lo == hi && lit.is_none_or(|l| l == *lo) => lit = Some(*lo),
                _ => return None,
            },
            NState::Split(_) => return None,
            NState::Match => {}
        }
    }
    char::from_u32(lit?)
}

/// An [`Nfa`] of at most 128 states run on a bit set: a step ORs the precomputed epsilon
/// closures of the class states that take the character, where [`Nfa`]'s own step builds and
/// allocates a sorted state list. Wildcard patterns without `*` (`wo?d`) spent most of their
/// time in those allocations (`perf record` of the `?` queries of the W2 fuzzy/wildcard class:
/// `Arc` drops, `malloc` and `free` ~35 %). Patterns with `*` walk it too: a step costs a few
/// bit operations, less than a [`LazyDfa`]'s interning of the states it reaches (the `*`
/// queries of the class in count mode, interleaved A/B: `ob*y` 77 -> 17 µs, geomean 0.70).
#[derive(Debug, Clone)]
pub struct BitNfa {
    /// Per state: the closure of its target when it is a class state.
    next: Vec<u128>,
    /// The class states.
    classes: u128,
    /// The match state.
    matches: u128,
    start: u128,
    /// The NFA's states (their character classes).
    states: Vec<NState>,
}

impl BitNfa {
    /// The most states a [`BitNfa`] holds.
    pub const MAX_STATES: usize = 128;

    /// `nfa` on bit sets; `None` when it has more than [`BitNfa::MAX_STATES`] states.
    pub fn new(nfa: &Nfa) -> Option<BitNfa> {
        let n = nfa.states.len();
        if n > Self::MAX_STATES {
            return None;
        }
        let mask = |set: NfaState| set.iter().fold(0u128, |m, &i| m | 1 << i);
        let mut b = BitNfa {
            next: vec![0; n],
            classes: 0,
            matches: 0,
            start: mask(nfa.closure([nfa.start])),
            states: nfa.states.clone(),
        };
        for (i, st) in nfa.states.iter().enumerate() {
            match st {
                NState::Class(_, t) => {
                    b.classes |= 1 << i;
                    b.next[i] = mask(nfa.closure([*t]));
                }
                NState::Match => b.matches |= 1 << i,
                NState::Split(_) => {}
            }
        }
        Some(b)
    }
}

/// The indexes of the set bits of `m`, lowest first.
fn bits(mut m: u128) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (m != 0).then(|| {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            i
        })
    })
}

impl CharAutomaton for BitNfa {
    type State = u128;
    fn start(&self) -> u128 {
        self.start
    }
    fn is_match(&self, s: &u128) -> bool {
        s & self.matches != 0
    }
    fn can_match(&self, s: &u128) -> bool {
        s & self.classes != 0
    }
    fn accept(&self, s: &u128, c: char) -> u128 {
        let c = u32::from(c);
        bits(s & self.classes)
            .filter(|&i| {
                matches!(&self.states[i], NState::Class(ranges, _)
                    if ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi))
            })
            .fold(0, |next, i| next | self.next[i])
    }
    fn literal_char(&self, s: &u128) -> Option<char> {
        literal_of(bits(s & self.classes).map(|i| &self.states[i]))
    }
}

/// An [`Nfa`] read a byte at a time with its states determinized as the dictionary walk reaches
/// them: a state seen before is a number and its transitions a table lookup, where
/// [`Utf8`]`<&Nfa>` computes (and allocates) an epsilon closure per byte. The transitions are
/// the ones `Utf8<&Nfa>` computes, memoized, so both accept the same terms. At most
/// [`LazyDfa::MAX_STATES`] states are kept; past them the walk goes on with uncached states.
pub struct LazyDfa<'a> {
    nfa: &'a Nfa,
    /// How many states may be kept.
    cap: usize,
    cache: std::cell::RefCell<DfaCache>,
}

/// Interned states: `Utf8<&Nfa>`'s states (equal when their pending bytes are), each with
/// its 256 transitions (`UNSEEN` until first taken) and whether it matches / can still match.
#[derive(Default)]
struct DfaCache {
    ids: rustc_hash::FxHashMap<Utf8State<NfaState>, u32>,
    states: Vec<Utf8State<NfaState>>,
    next: Vec<[u32; 256]>,
    is_match: Vec<bool>,
    can_match: Vec<bool>,
    /// Per state, the ASCII bytes that lead somewhere (bit per byte): another ASCII byte
    /// from a state between characters leads to the empty set, found without the NFA. Most
    /// transitions the walk tries are of this kind (every first byte of the dictionary, from
    /// the start state).
    live_ascii: Vec<u128>,
    /// The empty set between characters, once interned.
    dead: Option<u32>,
}

const UNSEEN: u32 = u32::MAX;

impl std::hash::Hash for Utf8State<NfaState> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.inner.hash(h);
        self.pending[..usize::from(self.len.min(4))].hash(h);
    }
}

impl PartialEq for Utf8State<NfaState> {
    fn eq(&self, o: &Self) -> bool {
        let (a, b) = (usize::from(self.len.min(4)), usize::from(o.len.min(4)));
        self.inner == o.inner && self.pending[..a] == o.pending[..b]
    }
}

impl Eq for Utf8State<NfaState> {}

/// A [`LazyDfa`] state: interned, or (past the cap) computed as `Utf8<&Nfa>` would.
#[derive(Clone)]
pub enum LazyState {
    Cached(u32),
    Raw(Utf8State<NfaState>),
}

impl<'a> LazyDfa<'a> {
    /// States kept: 4,096 tables of 1 KiB.
    pub const MAX_STATES: usize = 4096;

    pub fn new(nfa: &'a Nfa) -> Self {
        Self::with_cap(nfa, Self::MAX_STATES)
    }

    /// A lazy DFA keeping at most `cap` states (tests use a small cap).
    pub(crate) fn with_cap(nfa: &'a Nfa, cap: usize) -> Self {
        LazyDfa {
            nfa,
            cap,
            cache: Default::default(),
        }
    }

    /// The id of `s` (interned now if there is room), or `s` itself.
    fn intern(&self, cache: &mut DfaCache, s: Utf8State<NfaState>) -> LazyState {
        if let Some(&id) = cache.ids.get(&s) {
            return LazyState::Cached(id);
        }
        if cache.states.len() >= self.cap {
            return LazyState::Raw(s);
        }
        let slow = Utf8(self.nfa);
        let id = cache.states.len() as u32;
        let mut live = u128::MAX;
        if let (Some(set), 0) = (&s.inner, s.len) {
            live = 0;
            for &i in set.iter() {
                if let NState::Class(ranges, _) = &self.nfa.states[i as usize] {
                    for &(lo, hi) in ranges {
                        for c in lo..=hi.min(127) {
                            live |= 1 << c;
                        }
                    }
                }
            }
        }
        cache.live_ascii.push(live);
        cache.is_match.push(fst::Automaton::is_match(&slow, &s));
        cache.can_match.push(fst::Automaton::can_match(&slow, &s));
        cache.next.push([UNSEEN; 256]);
        cache.states.push(s.clone());
        cache.ids.insert(s, id);
        LazyState::Cached(id)
    }
}

impl fst::Automaton for LazyDfa<'_> {
    type State = LazyState;
    fn start(&self) -> LazyState {
        let s = fst::Automaton::start(&Utf8(self.nfa));
        self.intern(&mut self.cache.borrow_mut(), s)
    }
    fn is_match(&self, s: &LazyState) -> bool {
        match s {
            LazyState::Cached(id) => self.cache.borrow().is_match[*id as usize],
            LazyState::Raw(r) => fst::Automaton::is_match(&Utf8(self.nfa), r),
        }
    }
    fn can_match(&self, s: &LazyState) -> bool {
        match s {
            LazyState::Cached(id) => self.cache.borrow().can_match[*id as usize],
            LazyState::Raw(r) => fst::Automaton::can_match(&Utf8(self.nfa), r),
        }
    }
    fn accept(&self, s: &LazyState, byte: u8) -> LazyState {
        let slow = Utf8(self.nfa);
        match s {
            LazyState::Raw(r) => {
                let next = fst::Automaton::accept(&slow, r, byte);
                self.intern(&mut self.cache.borrow_mut(), next)
            }
            LazyState::Cached(id) => {
                let mut cache = self.cache.borrow_mut();
                let known = cache.next[*id as usize][usize::from(byte)];
                if known != UNSEEN {
                    return LazyState::Cached(known);
                }
                let out = if byte < 128 && cache.live_ascii[*id as usize] & (1 << byte) == 0 {
                    // What `Utf8<&Nfa>` gives: a whole character no class takes, the empty set.
                    match cache.dead {
                        Some(dead) => LazyState::Cached(dead),
                        None => {
                            let empty = Utf8State {
                                inner: Some(NfaState::from([])),
                                pending: [0; 4],
                                len: 0,
                            };
                            let out = self.intern(&mut cache, empty);
                            if let LazyState::Cached(d) = out {
                                cache.dead = Some(d);
                            }
                            out
                        }
                    }
                } else {
                    let next = fst::Automaton::accept(&slow, &cache.states[*id as usize], byte);
                    self.intern(&mut cache, next)
                };
                if let LazyState::Cached(to) = out {
                    cache.next[*id as usize][usize::from(byte)] = to;
                }
                out
            }
        }
    }
}

/// Builds an [`Nfa`] from fragments: each fragment is a start state and the list of states
/// whose (still unset) target is its exit.
pub(crate) struct NfaBuilder {
    states: Vec<NState>,
}

/// A piece of automaton under construction: its entry state and its dangling exits (state
/// indexes whose target, or one of whose split targets, is `HOLE`).
#[derive(Clone)]
pub(crate) struct Frag {
    start: u32,
    exits: Vec<u32>,
}

const HOLE: u32 = u32::MAX;

pub(crate) const ANY_CHAR: (u32, u32) = (0, 0x10ffff);

impl NfaBuilder {
    pub(crate) fn new() -> Self {
        Self { states: Vec::new() }
    }
    fn push(&mut self, s: NState) -> Result<u32, String> {
        if self.states.len() >= MAX_NFA_STATES {
            return Err(format!(
                "the pattern needs more than {MAX_NFA_STATES} automaton states"
            ));
        }
        self.states.push(s);
        Ok((self.states.len() - 1) as u32)
    }
    /// One character within `ranges`.
    pub(crate) fn class(&mut self, ranges: Vec<(u32, u32)>) -> Result<Frag, String> {
        let s = self.push(NState::Class(ranges, HOLE))?;
        Ok(Frag {
            start: s,
            exits: vec![s],
        })
    }
    /// The empty string.
    pub(crate) fn empty(&mut self) -> Result<Frag, String> {
        let s = self.push(NState::Split(vec![HOLE]))?;
        Ok(Frag {
            start: s,
            exits: vec![s],
        })
    }
    /// The empty language (matches nothing).
    pub(crate) fn nothing(&mut self) -> Result<Frag, String> {
        let s = self.push(NState::Class(Vec::new(), HOLE))?;
        Ok(Frag {
            start: s,
            exits: vec![],
        })
    }
    fn patch(&mut self, exits: &[u32], target: u32) {
        for &e in exits {
            match &mut self.states[e as usize] {
                NState::Class(_, t) if *t == HOLE => *t = target,
                NState::Split(ts) => {
                    for t in ts.iter_mut().filter(|t| **t == HOLE) {
                        *t = target;
                    }
                }
                _ => {}
            }
        }
    }
    pub(crate) fn concat(&mut self, a: Frag, b: Frag) -> Frag {
        self.patch(&a.exits, b.start);
        Frag {
            start: a.start,
            exits: b.exits,
        }
    }
    pub(crate) fn union(&mut self, a: Frag, b: Frag) -> Result<Frag, String> {
        let s = self.push(NState::Split(vec![a.start, b.start]))?;
        let mut exits = a.exits;
        exits.extend(b.exits);
        Ok(Frag { start: s, exits })
    }
    /// Zero or more of `a`.
    pub(crate) fn star(&mut self, a: Frag) -> Result<Frag, String> {
        let s = self.push(NState::Split(vec![a.start, HOLE]))?;
        self.patch(&a.exits, s);
        Ok(Frag {
            start: s,
            exits: vec![s],
        })
    }
    /// Zero or one of `a`.
    pub(crate) fn optional(&mut self, a: Frag) -> Result<Frag, String> {
        let s = self.push(NState::Split(vec![a.start, HOLE]))?;
        let mut exits = a.exits;
        exits.push(s);
        Ok(Frag { start: s, exits })
    }
    pub(crate) fn finish(mut self, f: Frag) -> Result<Nfa, String> {
        let m = self.push(NState::Match)?;
        self.patch(&f.exits, m);
        Ok(Nfa {
            states: self.states,
            start: f.start,
        })
    }
}

/// Lucene's `WildcardQuery.toAutomaton`: `*` is any string, `?` any one character, `\`
/// makes the next character literal (a trailing `\` is itself).
pub fn wildcard(pattern: &str) -> Result<Nfa, String> {
    let mut b = NfaBuilder::new();
    let mut frag = b.empty()?;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        let next = match c {
            '*' => {
                let any = b.class(vec![ANY_CHAR])?;
                b.star(any)?
            }
            '?' => b.class(vec![ANY_CHAR])?,
            '\\' => {
                let lit = chars.next().unwrap_or('\\');
                b.class(vec![(u32::from(lit), u32::from(lit))])?
            }
            c => b.class(vec![(u32::from(c), u32::from(c))])?,
        };
        frag = b.concat(frag, next);
    }
    b.finish(frag)
}

/// Lucene's `FuzzyAutomatonBuilder`: terms starting with the first `prefix_length` characters
/// of `term` whose rest is within `max_edits` of `term`'s rest (each insertion, deletion,
/// substitution and, with `transpositions`, swap of two adjacent characters one edit: the
/// optimal string alignment distance).
#[derive(Debug, Clone)]
pub struct Levenshtein {
    prefix: Vec<char>,
    suffix: Vec<char>,
    max_edits: u8,
    transpositions: bool,
}

/// A [`Levenshtein`] state: in the prefix (how many characters matched), or a row of the
/// edit-distance table over the suffix with the previous row and character (transpositions).
#[derive(Debug, Clone)]
pub enum LevState {
    Prefix(usize),
    Row {
        cur: Arc<[u8]>,
        prev: Option<Arc<[u8]>>,
        last: Option<char>,
    },
    Dead,
}

impl Levenshtein {
    pub fn new(term: &str, max_edits: u32, prefix_length: u32, transpositions: bool) -> Self {
        let chars: Vec<char> = term.chars().collect();
        let p = (prefix_length as usize).min(chars.len());
        Self {
            prefix: chars[..p].to_vec(),
            suffix: chars[p..].to_vec(),
            max_edits: max_edits.min(u32::from(u8::MAX - 1)) as u8,
            transpositions,
        }
    }
    fn first_row(&self) -> LevState {
        let cap = self.max_edits + 1;
        let cur: Vec<u8> = (0..=self.suffix.len())
            .map(|j| (j.min(usize::from(cap))) as u8)
            .collect();
        LevState::Row {
            cur: cur.into(),
            prev: None,
            last: None,
        }
    }
}

impl CharAutomaton for Levenshtein {
    type State = LevState;
    fn start(&self) -> LevState {
        if self.prefix.is_empty() {
            self.first_row()
        } else {
            LevState::Prefix(0)
        }
    }
    fn is_match(&self, s: &LevState) -> bool {
        match s {
            LevState::Row { cur, .. } => cur[self.suffix.len()] <= self.max_edits,
            _ => false,
        }
    }
    fn can_match(&self, s: &LevState) -> bool {
        match s {
            LevState::Prefix(_) => true,
            LevState::Dead => false,
            LevState::Row { cur, prev, .. } => {
                // Later cells derive from this row's cells, or (a transposition) from the
                // previous row's plus one.
                let min_cur = cur.iter().copied().min().unwrap_or(u8::MAX);
                let min_prev = prev
                    .as_ref()
                    .and_then(|p| p.iter().copied().min())
                    .map_or(u8::MAX, |m| m.saturating_add(1));
                min_cur.min(min_prev) <= self.max_edits
            }
        }
    }
    fn accept(&self, s: &LevState, c: char) -> LevState {
        match s {
            LevState::Dead => LevState::Dead,
            LevState::Prefix(i) => {
                if self.prefix[*i] != c {
                    LevState::Dead
                } else if i + 1 == self.prefix.len() {
                    self.first_row()
                } else {
                    LevState::Prefix(i + 1)
                }
            }
            LevState::Row { cur, prev, last } => {
                let cap = self.max_edits + 1;
                let q = &self.suffix;
                let mut row = vec![0u8; q.len() + 1];
                row[0] = cur[0].saturating_add(1).min(cap);
                for j in 1..=q.len() {
                    let sub = cur[j - 1] + u8::from(q[j - 1] != c);
                    let mut v = (cur[j] + 1).min(row[j - 1] + 1).min(sub);
                    if self.transpositions && j > 1 {
                        if let (Some(p), Some(l)) = (prev, last) {
                            if c == q[j - 2] && *l == q[j - 1] {
                                v = v.min(p[j - 2] + 1);
                            }
                        }
                    }
                    row[j] = v.min(cap);
                }
                LevState::Row {
                    cur: row.into(),
                    prev: Some(cur.clone()),
                    last: Some(c),
                }
            }
        }
    }
    fn literal_char(&self, s: &LevState) -> Option<char> {
        match s {
            LevState::Prefix(i) => self.prefix.get(*i).copied(),
            _ => None,
        }
    }
}

/// The optimal string alignment distance between `a` and `b` (Damerau–Levenshtein where no
/// substring is edited twice): insertions, deletions, substitutions and, with `transpositions`,
/// swaps of adjacent characters each cost one.
pub fn osa_distance(a: &[char], b: &[char], transpositions: bool) -> usize {
    // Three rolling rows of the table (rows i-2, i-1, i), on the stack for terms of up to 63
    // characters: fuzzy expansion computes this once per accepted dictionary term.
    let m = b.len();
    let mut stack = [[0usize; 64]; 3];
    let mut heap;
    let (r2, r1, r0): (&mut [usize], &mut [usize], &mut [usize]) = if m < 64 {
        let [x, y, z] = &mut stack;
        (&mut x[..=m], &mut y[..=m], &mut z[..=m])
    } else {
        heap = vec![0usize; 3 * (m + 1)];
        let (x, rest) = heap.split_at_mut(m + 1);
        let (y, z) = rest.split_at_mut(m + 1);
        (x, y, z)
    };
    let (mut before, mut prev, mut cur) = (r2, r1, r0);
    for (j, cell) in prev.iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=m {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if transpositions && i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(before[j - 2] + 1);
            }
            cur[j] = v;
        }
        // Rotate: row i becomes i-1, i-1 becomes i-2; the old i-2 is overwritten next.
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[m]
}

/// The reference table-filling [`osa_distance`] (tests).
#[cfg(test)]
fn osa_distance_table(a: &[char], b: &[char], transpositions: bool) -> usize {
    let (n, m) = (a.len(), b.len());
    let mut d = vec![vec![0usize; m + 1]; n + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=n {
        for j in 1..=m {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if transpositions && i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[n][m]
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use fst::{IntoStreamer, Streamer};
    use proptest::prelude::*;

    use super::*;

    /// The terms of `set` the automaton accepts, by intersecting it with an FST of them.
    fn fst_matches<A: CharAutomaton>(set: &BTreeSet<String>, a: A) -> BTreeSet<String> {
        let fst = fst::Set::from_iter(set.iter()).unwrap();
        let mut out = BTreeSet::new();
        let mut stream = fst.search(Utf8(a)).into_stream();
        while let Some(k) = stream.next() {
            out.insert(String::from_utf8(k.to_vec()).unwrap());
        }
        out
    }

    fn lev_reference(
        term: &str,
        cand: &str,
        max_edits: u32,
        prefix_length: u32,
        transpositions: bool,
    ) -> bool {
        let t: Vec<char> = term.chars().collect();
        let c: Vec<char> = cand.chars().collect();
        let p = (prefix_length as usize).min(t.len());
        c.len() >= p
            && c[..p] == t[..p]
            && osa_distance(&t[p..], &c[p..], transpositions) <= max_edits as usize
    }

    #[test]
    fn osa_examples() {
        let d = |a: &str, b: &str, t| {
            osa_distance(
                &a.chars().collect::<Vec<_>>(),
                &b.chars().collect::<Vec<_>>(),
                t,
            )
        };
        assert_eq!(d("roam", "roam", true), 0);
        assert_eq!(d("roam", "foam", true), 1);
        assert_eq!(d("roam", "raom", true), 1);
        assert_eq!(d("roam", "raom", false), 2);
        assert_eq!(d("ca", "abc", true), 3); // OSA, not unrestricted Damerau (2)
        assert_eq!(d("", "ab", true), 2);
    }

    #[test]
    fn loops() {
        assert!(wildcard("a*b").unwrap().has_loop());
        assert!(!wildcard("a?b").unwrap().has_loop());
        assert!(!wildcard("").unwrap().has_loop());
        assert!(regexp::compile("ab+").unwrap().has_loop());
        assert!(!regexp::compile("a(b|c)?d").unwrap().has_loop());
    }

    #[test]
    fn wildcard_examples() {
        let w = |p: &str, t: &str| wildcard(p).unwrap().matches(t);
        assert!(w("te?t", "test"));
        assert!(!w("te?t", "tet"));
        assert!(w("t*st", "tst"));
        assert!(w("t*st", "toast"));
        assert!(!w("t*st", "toasts"));
        assert!(w("*", ""));
        assert!(w("é?", "éü"));
        assert!(w("a\\*", "a*"));
        assert!(!w("a\\*", "ab"));
        assert!(w("a\\", "a\\"));
    }

    fn small_word() -> impl Strategy<Value = String> {
        proptest::collection::vec(prop_oneof![5 => 97u32..101, 1 => 0xe0u32..0xe3], 0..7)
            .prop_map(|v| v.into_iter().filter_map(char::from_u32).collect())
    }

    proptest! {
        /// The rolling-rows distance is the table's, short and long terms alike.
        #[test]
        fn osa_rows_are_the_table(
            a in proptest::collection::vec(prop_oneof![97u32..100, 0xe0u32..0xe2], 0..70),
            b in proptest::collection::vec(prop_oneof![97u32..100, 0xe0u32..0xe2], 0..70),
            transpositions in any::<bool>(),
        ) {
            let a: Vec<char> = a.into_iter().filter_map(char::from_u32).collect();
            let b: Vec<char> = b.into_iter().filter_map(char::from_u32).collect();
            prop_assert_eq!(
                osa_distance(&a, &b, transpositions),
                osa_distance_table(&a, &b, transpositions)
            );
        }

        /// A wildcard pattern's automaton, intersected with a dictionary, finds exactly the
        /// terms a scan with the plain matcher finds.
        #[test]
        fn wildcard_intersection_is_a_scan(
            terms in proptest::collection::btree_set(small_word(), 0..60),
            pattern in proptest::collection::vec(
                prop_oneof![4 => (97u8..101).prop_map(|b| (b as char).to_string()),
                            1 => Just("*".to_string()), 1 => Just("?".to_string()),
                            1 => Just("\u{e1}".to_string())], 0..6)
                .prop_map(|v| v.concat()),
        ) {
            let nfa = wildcard(&pattern).unwrap();
            let want: BTreeSet<String> = terms.iter().filter(|t| glob(&pattern, t)).cloned().collect();
            let scan: BTreeSet<String> = terms.iter().filter(|t| nfa.matches(t)).cloned().collect();
            prop_assert_eq!(&scan, &want);
            let set = fst::Set::from_iter(terms.iter()).unwrap();
            let lazy: BTreeSet<String> =
                set.search(LazyDfa::new(&nfa)).into_stream().into_strs().unwrap().into_iter().collect();
            prop_assert_eq!(&lazy, &want);
            prop_assert_eq!(fst_matches(&terms, nfa), want);
        }

        /// Past its cap of kept states, the lazy DFA goes on with uncached states and still
        /// accepts what the NFA does.
        #[test]
        fn lazy_dfa_past_its_cap_is_the_nfa(
            terms in proptest::collection::btree_set(small_word(), 0..60),
            pattern in proptest::collection::vec(
                prop_oneof![4 => (97u8..101).prop_map(|b| (b as char).to_string()),
                            1 => Just("*".to_string()), 1 => Just("?".to_string()),
                            1 => Just("\u{e1}".to_string())], 0..6)
                .prop_map(|v| v.concat()),
            cap in 0usize..4,
        ) {
            let nfa = wildcard(&pattern).unwrap();
            let want: BTreeSet<String> = terms.iter().filter(|t| nfa.matches(t)).cloned().collect();
            let set = fst::Set::from_iter(terms.iter()).unwrap();
            let dfa = LazyDfa::with_cap(&nfa, cap);
            let lazy: BTreeSet<String> =
                set.search(&dfa).into_stream().into_strs().unwrap().into_iter().collect();
            prop_assert_eq!(lazy, want);
        }

        /// A Levenshtein automaton finds exactly the terms within the distance (by the optimal
        /// string alignment distance), with and without a fixed prefix and transpositions.
        #[test]
        fn levenshtein_is_the_distance(
            terms in proptest::collection::btree_set(small_word(), 0..60),
            term in small_word(),
            max_edits in 0u32..3,
            prefix_length in 0u32..3,
            transpositions in any::<bool>(),
        ) {
            let lev = Levenshtein::new(&term, max_edits, prefix_length, transpositions);
            let want: BTreeSet<String> = terms
                .iter()
                .filter(|c| lev_reference(&term, c, max_edits, prefix_length, transpositions))
                .cloned()
                .collect();
            prop_assert_eq!(fst_matches(&terms, lev), want);
        }

        /// The DFA fuzzy queries walk without a prefix accepts the same terms.
        #[test]
        fn levenshtein_dfa_is_the_distance(
            terms in proptest::collection::btree_set(small_word(), 0..60),
            term in small_word(),
            max_edits in 0u32..3,
            transpositions in any::<bool>(),
        ) {
            let want: Vec<String> = terms
                .iter()
                .filter(|c| lev_reference(&term, c, max_edits, 0, transpositions))
                .cloned()
                .collect();
            let set = fst::Set::from_iter(terms.iter()).unwrap();
            let dfa = crate::search::multiterm::LevDfa::new(&term, max_edits, transpositions);
            let got: Vec<String> = set.search(&dfa).into_stream().into_strs().unwrap();
            prop_assert_eq!(got, want);
        }
    }

    /// A recursive wildcard matcher (the reference).
    fn glob(p: &str, t: &str) -> bool {
        fn go(p: &[char], t: &[char]) -> bool {
            match p.split_first() {
                None => t.is_empty(),
                Some(('*', rest)) => (0..=t.len()).any(|i| go(rest, &t[i..])),
                Some(('?', rest)) => !t.is_empty() && go(rest, &t[1..]),
                Some((c, rest)) => t.first() == Some(c) && go(rest, &t[1..]),
            }
        }
        go(
            &p.chars().collect::<Vec<_>>(),
            &t.chars().collect::<Vec<_>>(),
        )
    }
}
