//! Lucene's regular expression syntax (`org.apache.lucene.util.automaton.RegExp` with the flags
//! a `RegexpQuery` gets by default, `RegExp.ALL`): what a pattern means, compiled to an [`Nfa`].
//!
//! Supported: `|`, concatenation, `?`, `*`, `+`, `{n}`, `{n,}`, `{n,m}`, `.`, `[...]` and
//! `[^...]` with ranges, `\d \D \s \S \w \W`, `"literal"`, `()` (the empty string), `#` (no
//! string), `@` (any string) and `\` before any character. The whole term must match: there
//! are no anchors, and `^`/`$` are ordinary characters, as is `~` (Lucene 10 no longer treats it
//! as complement by default). Refused with an error: intersection `&` and `<...>` (numeric
//! intervals, named automata).
use super::{Frag, Nfa, NfaBuilder, ANY_CHAR};

/// A parsed expression.
#[derive(Debug, Clone)]
enum Re {
    /// One character within the ranges.
    Class(Vec<(u32, u32)>),
    /// A sequence (empty: the empty string).
    Concat(Vec<Re>),
    Union(Box<Re>, Box<Re>),
    /// `min` or more (`max: None`), or between `min` and `max`, repetitions.
    Repeat {
        re: Box<Re>,
        min: u32,
        max: Option<u32>,
    },
    /// No string at all (`#`).
    Nothing,
}

/// The largest count a `{n,m}` may use: repetitions are copies of the automaton.
const MAX_REPEAT: u32 = 1000;

/// Compiles a Lucene regular expression (without the enclosing `/`).
pub fn compile(pattern: &str) -> Result<Nfa, String> {
    let re = parse(pattern)?;
    let mut b = NfaBuilder::new();
    let frag = build(&re, &mut b)?;
    b.finish(frag)
}

fn parse(pattern: &str) -> Result<Re, String> {
    let mut p = ReParser {
        chars: pattern.chars().collect(),
        pos: 0,
    };
    if p.chars.is_empty() {
        return Ok(Re::Concat(Vec::new()));
    }
    let re = p.union()?;
    if p.pos < p.chars.len() {
        return Err(p.err("end of expression expected"));
    }
    Ok(re)
}

struct ReParser {
    chars: Vec<char>,
    pos: usize,
}

impl ReParser {
    fn err(&self, what: &str) -> String {
        format!("{what} at position {}", self.pos)
    }
    fn more(&self) -> bool {
        self.pos < self.chars.len()
    }
    fn peek(&self, set: &str) -> bool {
        self.chars.get(self.pos).is_some_and(|c| set.contains(*c))
    }
    fn eat(&mut self, c: char) -> bool {
        if self.chars.get(self.pos) == Some(&c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn next(&mut self) -> Result<char, String> {
        let c = self
            .chars
            .get(self.pos)
            .copied()
            .ok_or_else(|| self.err("unexpected end of expression"))?;
        self.pos += 1;
        Ok(c)
    }

    fn union(&mut self) -> Result<Re, String> {
        let e = self.inter()?;
        if self.eat('|') {
            return Ok(Re::Union(Box::new(e), Box::new(self.union()?)));
        }
        Ok(e)
    }

    fn inter(&mut self) -> Result<Re, String> {
        let e = self.concat()?;
        if self.peek("&") {
            return Err(self.err("intersection ('&') is not supported"));
        }
        Ok(e)
    }

    fn concat(&mut self) -> Result<Re, String> {
        let mut parts = vec![self.repeat()?];
        while self.more() && !self.peek(")|&") {
            parts.push(self.repeat()?);
        }
        Ok(if parts.len() == 1 {
            parts.pop().expect("one")
        } else {
            Re::Concat(parts)
        })
    }

    fn number(&mut self) -> Result<u32, String> {
        let start = self.pos;
        while self.peek("0123456789") {
            self.pos += 1;
        }
        if start == self.pos {
            return Err(self.err("integer expected"));
        }
        let text: String = self.chars[start..self.pos].iter().collect();
        text.parse::<u32>()
            .ok()
            .filter(|n| *n <= MAX_REPEAT)
            .ok_or_else(|| {
                format!("repetition count {text} is over {MAX_REPEAT} at position {start}")
            })
    }

    fn repeat(&mut self) -> Result<Re, String> {
        let mut e = self.simple()?;
        while self.peek("?*+{") {
            let rep = |e: Re, min, max| Re::Repeat {
                re: Box::new(e),
                min,
                max,
            };
            e = match self.next()? {
                '?' => rep(e, 0, Some(1)),
                '*' => rep(e, 0, None),
                '+' => rep(e, 1, None),
                _ => {
                    let n = self.number()?;
                    let max = if self.eat(',') {
                        if self.peek("0123456789") {
                            Some(self.number()?)
                        } else {
                            None
                        }
                    } else {
                        Some(n)
                    };
                    if !self.eat('}') {
                        return Err(self.err("expected '}'"));
                    }
                    if let Some(m) = max {
                        if n > m {
                            return Err(self.err(&format!(
                                "invalid repetition range {n}..{m} (out of order)"
                            )));
                        }
                    }
                    rep(e, n, max)
                }
            };
        }
        Ok(e)
    }

    fn simple(&mut self) -> Result<Re, String> {
        if self.eat('[') {
            let negate = self.eat('^');
            let mut ranges = self.class_item()?;
            while self.more() && !self.peek("]") {
                ranges.extend(self.class_item()?);
            }
            if !self.eat(']') {
                return Err(self.err("expected ']'"));
            }
            let ranges = normalize(ranges);
            return Ok(Re::Class(if negate { complement(&ranges) } else { ranges }));
        }
        if self.eat('.') {
            return Ok(Re::Class(vec![ANY_CHAR]));
        }
        if self.eat('#') {
            return Ok(Re::Nothing);
        }
        if self.eat('@') {
            return Ok(Re::Repeat {
                re: Box::new(Re::Class(vec![ANY_CHAR])),
                min: 0,
                max: None,
            });
        }
        if self.eat('"') {
            let start = self.pos;
            while self.more() && !self.peek("\"") {
                self.pos += 1;
            }
            let lit: Vec<Re> = self.chars[start..self.pos]
                .iter()
                .map(|&c| Re::Class(vec![(u32::from(c), u32::from(c))]))
                .collect();
            if !self.eat('"') {
                return Err(self.err("expected '\"'"));
            }
            return Ok(Re::Concat(lit));
        }
        if self.eat('(') {
            if self.eat(')') {
                return Ok(Re::Concat(Vec::new()));
            }
            let e = self.union()?;
            if !self.eat(')') {
                return Err(self.err("expected ')'"));
            }
            return Ok(e);
        }
        if self.peek("<") {
            return Err(self.err("'<...>' (numeric intervals, named automata) is not supported"));
        }
        if let Some(class) = self.predefined() {
            return Ok(Re::Class(class));
        }
        let c = self.char_exp()?;
        Ok(Re::Class(vec![(u32::from(c), u32::from(c))]))
    }

    /// `\d \D \s \S \w \W` at the current position, consumed.
    fn predefined(&mut self) -> Option<Vec<(u32, u32)>> {
        if self.chars.get(self.pos) != Some(&'\\') {
            return None;
        }
        let c = *self.chars.get(self.pos + 1)?;
        let base: Vec<(u32, u32)> = match c.to_ascii_lowercase() {
            'd' => vec![(0x30, 0x39)],
            's' => vec![(0x09, 0x0d), (0x20, 0x20)],
            'w' => vec![(0x30, 0x39), (0x41, 0x5a), (0x5f, 0x5f), (0x61, 0x7a)],
            _ => return None,
        };
        self.pos += 2;
        Some(if c.is_ascii_uppercase() {
            complement(&base)
        } else {
            base
        })
    }

    fn char_exp(&mut self) -> Result<char, String> {
        self.eat('\\');
        self.next()
    }

    fn class_item(&mut self) -> Result<Vec<(u32, u32)>, String> {
        if let Some(class) = self.predefined() {
            return Ok(class);
        }
        let from = self.char_exp()?;
        if self.eat('-') {
            let to = self.char_exp()?;
            if from > to {
                return Err(self.err(&format!(
                    "invalid range: from ({from}) cannot be > to ({to})"
                )));
            }
            return Ok(vec![(u32::from(from), u32::from(to))]);
        }
        Ok(vec![(u32::from(from), u32::from(from))])
    }
}

/// Sorted, merged ranges.
fn normalize(mut ranges: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    ranges.sort_unstable();
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(ranges.len());
    for (lo, hi) in ranges {
        match out.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// The code points outside sorted, merged `ranges`.
fn complement(ranges: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut next = 0u32;
    for &(lo, hi) in ranges {
        if lo > next {
            out.push((next, lo - 1));
        }
        next = hi.saturating_add(1);
    }
    if next <= ANY_CHAR.1 {
        out.push((next, ANY_CHAR.1));
    }
    out
}

fn build(re: &Re, b: &mut NfaBuilder) -> Result<Frag, String> {
    Ok(match re {
        Re::Class(ranges) => b.class(ranges.clone())?,
        Re::Nothing => b.nothing()?,
        Re::Concat(parts) => {
            let mut f = b.empty()?;
            for p in parts {
                let next = build(p, b)?;
                f = b.concat(f, next);
            }
            f
        }
        Re::Union(x, y) => {
            let (x, y) = (build(x, b)?, build(y, b)?);
            b.union(x, y)?
        }
        Re::Repeat { re, min, max } => {
            let mut f = b.empty()?;
            for _ in 0..*min {
                let next = build(re, b)?;
                f = b.concat(f, next);
            }
            match max {
                None => {
                    let body = build(re, b)?;
                    let star = b.star(body)?;
                    b.concat(f, star)
                }
                Some(max) => {
                    for _ in *min..*max {
                        let body = build(re, b)?;
                        let opt = b.optional(body)?;
                        f = b.concat(f, opt);
                    }
                    f
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use fst::{IntoStreamer, Streamer};
    use proptest::prelude::*;

    use super::super::Utf8;
    use super::*;

    fn m(p: &str, t: &str) -> bool {
        compile(p).unwrap().matches(t)
    }

    #[test]
    fn lucene_examples() {
        assert!(m("joh?n(ath[oa]n)", "jonathan"));
        assert!(m("joh?n(ath[oa]n)", "johnathon"));
        assert!(!m("joh?n(ath[oa]n)", "john"));
        assert!(m("ab+", "abbb"));
        assert!(!m("ab+", "a"));
        assert!(m("a{2,3}", "aaa"));
        assert!(!m("a{2,3}", "aaaa"));
        assert!(m("a{2,}", "aaaaa"));
        assert!(m("a{2}", "aa"));
        assert!(m("[^a-c]x", "dx"));
        assert!(!m("[^a-c]x", "bx"));
        assert!(m("\\d+", "1987"));
        assert!(!m("\\D", "1"));
        assert!(m("\"a.b\"", "a.b"));
        assert!(!m("\"a.b\"", "axb"));
        assert!(m("@", "anything"));
        assert!(!m("#", ""));
        assert!(m("a()b", "ab"));
        assert!(m("", ""));
        assert!(m("a~", "a~"), "~ is literal in Lucene 10");
        assert!(m("*a", "*a"), "a leading repeat operator is a literal");
        assert!(m("\\.", "."));
        assert!(m("oil|gas", "gas"));
        assert!(m("é.", "éx"));
    }

    #[test]
    fn errors_name_the_position() {
        let e = |p: &str| compile(p).unwrap_err();
        assert_eq!(e("a("), "unexpected end of expression at position 2");
        assert_eq!(e("(a"), "expected ')' at position 2");
        assert_eq!(e("a)"), "end of expression expected at position 1");
        assert_eq!(e("[ab"), "expected ']' at position 3");
        assert_eq!(e("a{x}"), "integer expected at position 2");
        assert_eq!(
            e("a{3,1}"),
            "invalid repetition range 3..1 (out of order) at position 6"
        );
        assert!(e("a&b").contains("intersection"));
        assert!(e("<1-5>").contains("not supported"));
        assert!(e("[z-a]").contains("invalid range"));
        assert!(e("a|").contains("unexpected end"));
        assert!(e("(a{1000}){1000}").contains("automaton states"));
    }

    fn word() -> impl Strategy<Value = String> {
        proptest::collection::vec(prop_oneof![6 => 97u32..101, 1 => 0xe0u32..0xe2], 0..6)
            .prop_map(|v| v.into_iter().filter_map(char::from_u32).collect())
    }

    /// A random expression over a small alphabet, and a reference matcher for it.
    #[derive(Debug, Clone)]
    enum Gen {
        Lit(char),
        Any,
        Class(Vec<char>, bool),
        Cat(Box<Gen>, Box<Gen>),
        Or(Box<Gen>, Box<Gen>),
        Star(Box<Gen>),
        Opt(Box<Gen>),
    }

    impl Gen {
        fn render(&self) -> String {
            match self {
                Gen::Lit(c) => c.to_string(),
                Gen::Any => ".".into(),
                Gen::Class(cs, neg) => {
                    format!(
                        "[{}{}]",
                        if *neg { "^" } else { "" },
                        cs.iter().collect::<String>()
                    )
                }
                Gen::Cat(a, b) => format!("{}{}", a.render(), b.render()),
                Gen::Or(a, b) => format!("({}|{})", a.render(), b.render()),
                Gen::Star(a) => format!("({})*", a.render()),
                Gen::Opt(a) => format!("({})?", a.render()),
            }
        }
        /// The suffixes of `t` left after this expression matches a prefix of it.
        fn ends(&self, t: &[char]) -> Vec<usize> {
            match self {
                Gen::Lit(c) => (t.first() == Some(c)).then_some(1).into_iter().collect(),
                Gen::Any => (!t.is_empty()).then_some(1).into_iter().collect(),
                Gen::Class(cs, neg) => t
                    .first()
                    .filter(|c| cs.contains(c) != *neg)
                    .map(|_| 1)
                    .into_iter()
                    .collect(),
                Gen::Cat(a, b) => {
                    let mut out = Vec::new();
                    for i in a.ends(t) {
                        out.extend(b.ends(&t[i..]).into_iter().map(|j| i + j));
                    }
                    out
                }
                Gen::Or(a, b) => {
                    let mut out = a.ends(t);
                    out.extend(b.ends(t));
                    out
                }
                Gen::Opt(a) => {
                    let mut out = vec![0];
                    out.extend(a.ends(t));
                    out
                }
                Gen::Star(a) => {
                    let mut seen = BTreeSet::from([0usize]);
                    let mut todo = vec![0usize];
                    while let Some(i) = todo.pop() {
                        for j in a.ends(&t[i..]) {
                            if j > 0 && seen.insert(i + j) {
                                todo.push(i + j);
                            }
                        }
                    }
                    seen.into_iter().collect()
                }
            }
        }
        fn full(&self, t: &str) -> bool {
            let t: Vec<char> = t.chars().collect();
            self.ends(&t).contains(&t.len())
        }
    }

    fn gen() -> impl Strategy<Value = Gen> {
        let leaf = prop_oneof![
            4 => prop_oneof![Just('a'), Just('b'), Just('c'), Just('\u{e0}')].prop_map(Gen::Lit),
            1 => Just(Gen::Any),
            1 => (proptest::collection::vec(prop_oneof![Just('a'), Just('c')], 1..3), any::<bool>())
                .prop_map(|(cs, n)| Gen::Class(cs, n)),
        ];
        leaf.prop_recursive(4, 16, 2, |inner| {
            prop_oneof![
                (inner.clone(), inner.clone())
                    .prop_map(|(a, b)| Gen::Cat(Box::new(a), Box::new(b))),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| Gen::Or(Box::new(a), Box::new(b))),
                inner.clone().prop_map(|a| Gen::Star(Box::new(a))),
                inner.prop_map(|a| Gen::Opt(Box::new(a))),
            ]
        })
    }

    proptest! {
        /// A regexp's automaton intersected with a dictionary finds exactly the terms a scan
        /// with a reference backtracking matcher finds.
        #[test]
        fn regexp_intersection_is_a_scan(
            terms in proptest::collection::btree_set(word(), 0..60),
            g in gen(),
        ) {
            let nfa = compile(&g.render()).unwrap();
            let want: BTreeSet<String> = terms.iter().filter(|t| g.full(t)).cloned().collect();
            let set = fst::Set::from_iter(terms.iter()).unwrap();
            // The lazy DFA the search walks accepts what the NFA does.
            let lazy: BTreeSet<String> = set
                .search(super::super::LazyDfa::new(&nfa))
                .into_stream()
                .into_strs()
                .unwrap()
                .into_iter()
                .collect();
            let mut got = BTreeSet::new();
            let mut stream = set.search(Utf8(nfa)).into_stream();
            while let Some(k) = stream.next() {
                got.insert(String::from_utf8(k.to_vec()).unwrap());
            }
            prop_assert_eq!(&got, &want, "pattern {}", g.render());
            prop_assert_eq!(lazy, want, "pattern {} (lazy DFA)", g.render());
        }
    }
}
