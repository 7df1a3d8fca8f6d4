//! Which passages of a text show its matches best? Passages bounded by sentence breaks (and by
//! word breaks inside sentences longer than the fragment size), formed around the matches and
//! scored as Lucene's unified highlighter does, then formatted with tags.
//!
//! Lengths and offsets here are in UTF-16 code units, as in Java, so that `fragment_size` and
//! the passage scores are the ones Lucene and Elasticsearch compute; byte offsets are converted
//! on the way in and out.

use unicode_segmentation::UnicodeSegmentation;

use super::matcher::Match;
use super::sentences::{first_non_ascii, SentenceStarts};
use super::words::ascii_word_starts;
use super::Encoder;

/// Lucene's `PassageScorer` defaults.
const K1: f32 = 1.2;
const B: f32 = 0.75;
const PIVOT: f32 = 87.0;

/// A text with conversions between byte offsets and UTF-16 offsets (identity for ASCII).
pub(crate) struct Units<'a> {
    text: &'a str,
    /// The non-ASCII characters, in order: between them bytes and units advance alike, so
    /// a conversion is a binary search. (Tables of every byte and unit were 4 % of
    /// highlighting W2 top-10s, one paragraph in five having a non-ASCII character.)
    marks: Vec<Mark>,
}

/// A non-ASCII character: where it starts in bytes and in UTF-16 units, and its lengths.
#[derive(Clone, Copy, Debug)]
struct Mark {
    byte: u32,
    unit: u32,
    bytes: u8,
    units: u8,
}

impl Mark {
    fn byte_end(&self) -> u32 {
        self.byte + u32::from(self.bytes)
    }
    fn unit_end(&self) -> u32 {
        self.unit + u32::from(self.units)
    }
}

impl<'a> Units<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        let b = text.as_bytes();
        let mut marks = Vec::new();
        // Bytes minus units of the characters so far.
        let mut delta = 0u32;
        let mut i = first_non_ascii(b, 0);
        while i < b.len() {
            let c = text[i..]
                .chars()
                .next()
                .expect("a char starts at a non-ASCII byte");
            let (bytes, units) = (c.len_utf8() as u8, c.len_utf16() as u8);
            marks.push(Mark {
                byte: i as u32,
                unit: i as u32 - delta,
                bytes,
                units,
            });
            delta += u32::from(bytes - units);
            i = first_non_ascii(b, i + usize::from(bytes));
        }
        Units { text, marks }
    }
    /// The UTF-16 offset of the character boundary at byte `byte`.
    fn unit(&self, byte: usize) -> u32 {
        let byte = byte as u32;
        match self.marks.partition_point(|m| m.byte < byte) {
            0 => byte,
            i => {
                let m = &self.marks[i - 1];
                m.unit_end() + (byte - m.byte_end())
            }
        }
    }
    /// The byte offset of UTF-16 offset `unit` (the start of the character it falls in).
    fn byte(&self, unit: u32) -> usize {
        let i = self.marks.partition_point(|m| m.unit_end() <= unit);
        if let Some(m) = self.marks.get(i).filter(|m| m.unit <= unit) {
            return m.byte as usize;
        }
        match i {
            0 => unit as usize,
            i => {
                let m = &self.marks[i - 1];
                (m.byte_end() + (unit - m.unit_end())) as usize
            }
        }
    }
    fn len(&self) -> u32 {
        self.unit(self.text.len())
    }
}

/// Elasticsearch's bounded sentence scanner: passages are whole sentences while they fit in
/// `max` units; a longer sentence is cut at word breaks around the match.
struct BoundedBreaks<'a> {
    units: &'a Units<'a>,
    range: (usize, usize),
    /// Sentence breaks found so far (UTF-16 offsets, ascending): found as far as the matches
    /// need, since segmenting is the costly part of highlighting.
    sentences: Vec<u32>,
    /// Where the sentence breaks after the last of `sentences` come from; `None` once every
    /// break (and the value's end) is in `sentences`.
    more: Option<SentenceStarts<'a>>,
    /// Tests: the whole value's word breaks.
    #[cfg(test)]
    words: Option<Vec<u32>>,
    max: i64,
    /// The start of the value (a passage's earliest start).
    first: i64,
    /// The end of the value.
    len: i64,
    window: (i64, i64),
    inner: (i64, i64),
    /// Tests: segment the whole value's words (the slow twin of the window's own).
    #[cfg(test)]
    whole_value_words: bool,
}

/// The last break before `offset` (the first break when there is none).
fn preceding(breaks: &[u32], offset: i64) -> i64 {
    let i = breaks.partition_point(|&b| i64::from(b) < offset);
    i64::from(breaks[i.saturating_sub(1)])
}

/// The first break after `offset` (`len` when there is none).
fn following(breaks: &[u32], offset: i64, len: i64) -> i64 {
    let i = breaks.partition_point(|&b| i64::from(b) <= offset);
    breaks.get(i).map_or(len, |&b| i64::from(b))
}

impl<'a> BoundedBreaks<'a> {
    /// The breaks of the value at bytes `range` of the text.
    fn new(units: &'a Units<'a>, range: (usize, usize), max: usize) -> Self {
        let text = &units.text[range.0..range.1];
        BoundedBreaks {
            units,
            range,
            sentences: Vec::new(),
            more: Some(SentenceStarts::new(text)),
            #[cfg(test)]
            words: None,
            max: max as i64,
            first: i64::from(units.unit(range.0)),
            len: i64::from(units.unit(range.1)),
            window: (-1, -1),
            inner: (-1, 0),
            #[cfg(test)]
            whole_value_words: false,
        }
    }

    /// The sentence breaks, found at least up to the first one after `offset` (or all).
    fn sentences_past(&mut self, offset: i64) -> &[u32] {
        while self
            .sentences
            .last()
            .is_none_or(|&b| i64::from(b) <= offset)
        {
            let Some(iter) = self.more.as_mut() else {
                break;
            };
            match iter.next() {
                Some(b) => {
                    let u = self.units.unit(self.range.0 + b);
                    self.sentences.push(u);
                }
                None => {
                    self.sentences.push(self.units.unit(self.range.1));
                    self.more = None;
                }
            }
        }
        &self.sentences
    }

    /// The start of the passage for a match near `offset`; [`BoundedBreaks::end`] is its end.
    /// Called with increasing offsets.
    fn start(&mut self, offset: i64) -> i64 {
        let (max, len) = (self.max, self.len);
        if offset > self.window.0 && offset < self.window.1 {
            // Inside the long sentence of the previous passage: go on from where it ended.
            self.inner = (self.inner.1, self.window.1);
        } else {
            let start = preceding(self.sentences_past(offset), offset).max(self.first);
            let target = offset + (max - (offset - start)).max(0);
            let mut end = if target + 1 > len {
                len
            } else {
                preceding(self.sentences_past(target + 1), target + 1)
            };
            if start == end {
                // No sentence ends within `max`: take the one this match is in.
                end = if target >= len {
                    len
                } else {
                    following(self.sentences_past(target), target, len)
                };
            }
            self.inner = (start, end);
            self.window = (start, end);
        }
        if self.inner.1 - self.inner.0 > max {
            // Too long: cut at word breaks, first on the left, then on the right.
            if offset - max > self.inner.0 {
                let cut = self.word_before(offset - max);
                self.inner.0 = self.inner.0.max(cut);
            }
            let remaining = (max - (offset - self.inner.0)).max(0);
            if offset + remaining < self.window.1 {
                let cut = self.word_after(offset + remaining, len);
                self.inner.1 = self.window.1.min(cut);
            }
        }
        self.inner.0
    }

    fn end(&self) -> i64 {
        self.inner.1
    }

    /// The last word break before `x` (in the window, or the window's end), as
    /// `preceding(words, x)` over the window's breaks ([`BoundedBreaks::words`]).
    fn word_before(&mut self, x: i64) -> i64 {
        #[cfg(test)]
        if self.whole_value_words {
            return preceding(self.words(), x);
        }
        if x > self.window.1 {
            return self.window.1;
        }
        let mut last = None;
        self.window_words(x - 1, |b| {
            if b < x {
                last = Some(b);
                true
            } else {
                false
            }
        });
        last.unwrap_or(self.window.0)
    }

    /// The first word break after `y` (in the window, or the window's end; `len` past it), as
    /// `following(words, y, len)` over the window's breaks.
    fn word_after(&mut self, y: i64, len: i64) -> i64 {
        #[cfg(test)]
        if self.whole_value_words {
            return following(self.words(), y, len);
        }
        if y >= self.window.1 {
            return len;
        }
        let mut first = None;
        self.window_words(y, |b| {
            if b > y {
                first = Some(b);
                false
            } else {
                true
            }
        });
        first.unwrap_or(self.window.1)
    }

    /// Calls `f` with the window's word breaks (UTF-16 offsets, ascending, below the window's
    /// end) from a restart point at or before `at` on, while it returns true.
    ///
    /// Only the words around the cut are segmented: the restart point is the last word after
    /// an ASCII space at or before `at` (or the window's start). UAX #29's word rules look
    /// back past neither (a space is no letter, digit or joiner, and an ASCII character after
    /// it is no extending mark), so breaks from there are the whole value's. The window's
    /// start is a sentence start, which they do not look back past either: the character
    /// before it is a space, closing punctuation, a terminator or a separator. The text after
    /// the window is passed as look-ahead. (`words_of_window_are_the_values`, a property test,
    /// holds this to the whole value's segmentation.)
    fn window_words(&self, at: i64, mut f: impl FnMut(i64) -> bool) {
        let units = self.units;
        let lo = units.byte(self.window.0 as u32);
        let hi = units.byte(self.window.1 as u32);
        let bytes = units.text.as_bytes();
        let mut from = units.byte(at.clamp(self.window.0, self.window.1) as u32);
        while from > lo {
            if from < bytes.len()
                && bytes[from - 1] == b' '
                && bytes[from].is_ascii()
                && bytes[from] != b' '
            {
                break;
            }
            from -= 1;
        }
        // The rules look one character past a break: an ASCII stretch to just past the
        // window's end takes the ASCII twin.
        let ahead = (hi + 2).min(self.range.1);
        if bytes[from..ahead].is_ascii() {
            for b in ascii_word_starts(&bytes[from..ahead]) {
                if from + b >= hi || !f(i64::from(units.unit(from + b))) {
                    return;
                }
            }
            return;
        }
        for (b, _) in units.text[from..self.range.1].split_word_bound_indices() {
            if from + b >= hi || !f(i64::from(units.unit(from + b))) {
                return;
            }
        }
    }

    /// The whole value's word breaks (tests: the slow twin of [`BoundedBreaks::window_words`]).
    #[cfg(test)]
    fn words(&mut self) -> &[u32] {
        let (units, range) = (self.units, self.range);
        self.words.get_or_insert_with(|| {
            let mut words: Vec<u32> = units.text[range.0..range.1]
                .split_word_bound_indices()
                .map(|(b, _)| units.unit(range.0 + b))
                .collect();
            words.push(units.unit(range.1));
            words
        })
    }
}

/// A passage: a stretch of the text (UTF-16 units) and the matches in it.
#[derive(Debug, Clone)]
pub(crate) struct Passage<'m> {
    pub start: i64,
    pub end: i64,
    /// (start, end, key) in UTF-16 units: consecutive matches of the text, borrowed (a frequent
    /// term makes a passage of nearly every sentence).
    pub matches: &'m [(i64, i64, usize)],
    pub score: f32,
}

/// Lucene's `PassageScorer.weight`: a term's importance from its count in the whole text.
fn term_weight(content_len: i64, freq_in_doc: usize) -> f32 {
    let num_docs = 1.0 + content_len as f32 / PIVOT;
    (K1 + 1.0) * (1.0 + (f64::from(num_docs) + 0.5) / (freq_in_doc as f64 + 0.5)).ln() as f32
}

/// Lucene's `PassageScorer.tf`: saturating term frequency over the passage length.
fn tf(freq: usize, passage_len: i64) -> f32 {
    let norm = K1 * ((1.0 - B) + B * (passage_len as f32 / PIVOT));
    freq as f32 / (freq as f32 + norm)
}

/// Lucene's `PassageScorer.norm`: passages near the start count a little more.
fn position_norm(start: i64) -> f32 {
    1.0 + 1.0 / (PIVOT + start as f32).ln()
}

/// `keys`: scratch space, reused from passage to passage.
fn score(
    p: &Passage<'_>,
    content_len: i64,
    freq_in_doc: &[usize],
    keys: &mut Vec<(usize, usize)>,
) -> f32 {
    keys.clear(); // (key, freq in passage), in order of first match
    for &(_, _, k) in p.matches {
        match keys.iter_mut().find(|(key, _)| *key == k) {
            Some((_, f)) => *f += 1,
            None => keys.push((k, 1)),
        }
    }
    let mut s = 0f64;
    for &(k, f) in keys.iter() {
        s += f64::from(tf(f, p.end - p.start) * term_weight(content_len, freq_in_doc[k]));
    }
    (s * f64::from(position_norm(p.start))) as f32
}

/// How passages are chosen and rendered.
pub(crate) struct PassageOptions<'a> {
    pub fragment_size: usize,
    /// At most this many passages; 0: the whole text is one passage.
    pub number_of_fragments: usize,
    pub pre_tag: &'a str,
    pub post_tag: &'a str,
    pub encoder: Encoder,
    /// Best score first instead of text order.
    pub by_score: bool,
}

/// The best passages of `text` for `matches` (byte offsets, sorted by start), formatted, each
/// with its score. `values` are the byte ranges of the field's values in `text`, ascending: no
/// passage spans two of them.
pub(crate) fn best_passages(
    text: &str,
    values: &[(usize, usize)],
    matches: &[Match],
    opts: &PassageOptions<'_>,
) -> Vec<(String, f32)> {
    if matches.is_empty() || text.is_empty() {
        return Vec::new();
    }
    let units = Units::new(text);
    let content_len = i64::from(units.len());
    // Each distinct key, and how often it matches in the whole text.
    let mut keys: Vec<&str> = Vec::new();
    let mut freq: Vec<usize> = Vec::new();
    let mut keyed: Vec<(i64, i64, usize)> = Vec::with_capacity(matches.len());
    for m in matches {
        // Keys borrowed from the query compare by address first.
        let same =
            |k: &&str| (k.as_ptr() == m.key.as_ptr() && k.len() == m.key.len()) || **k == m.key;
        let k = match keys.iter().position(same) {
            Some(k) => k,
            None => {
                keys.push(&m.key);
                freq.push(0);
                keys.len() - 1
            }
        };
        freq[k] += 1;
        keyed.push((
            i64::from(units.unit(m.start)),
            i64::from(units.unit(m.end)),
            k,
        ));
    }
    let passages = if opts.number_of_fragments == 0 {
        vec![Passage {
            start: 0,
            end: content_len,
            matches: &keyed,
            score: 0.0,
        }]
    } else {
        let mut candidates = Vec::new();
        let mut rest = &keyed[..];
        for &(vs, ve) in values {
            let (vs, ve) = (i64::from(units.unit(vs)), i64::from(units.unit(ve)));
            let skip = rest.partition_point(|m| m.0 < vs);
            let n = rest[skip..].partition_point(|m| m.0 < ve);
            if n > 0 {
                let range = (units.byte(vs as u32), units.byte(ve as u32));
                candidates.extend(form_passages(
                    &units,
                    range,
                    &rest[skip..skip + n],
                    opts.fragment_size,
                ));
            }
            rest = &rest[skip + n..];
        }
        let mut scratch = Vec::new();
        for p in &mut candidates {
            p.score = score(p, content_len, &freq, &mut scratch);
        }
        // The top n by score; on equal scores the later passage wins (Lucene's queue).
        candidates.sort_by(|a, b| b.score.total_cmp(&a.score).then(b.start.cmp(&a.start)));
        candidates.truncate(opts.number_of_fragments);
        if opts.by_score {
            candidates
        } else {
            candidates.sort_by_key(|p| p.start);
            candidates
        }
    };
    passages
        .iter()
        .map(|p| (format(&units, p, opts), p.score))
        .filter(|(s, _)| !s.is_empty())
        .collect()
}

/// Lucene's `FieldHighlighter.highlightOffsetsEnums`: a match past the current passage's end
/// starts a new passage, bounded by the break iterator around the match's middle.
fn form_passages<'m>(
    units: &Units<'_>,
    value: (usize, usize),
    matches: &'m [(i64, i64, usize)],
    fragment_size: usize,
) -> Vec<Passage<'m>> {
    form_passages_with(BoundedBreaks::new(units, value, fragment_size), matches)
}

fn form_passages_with<'m>(
    mut breaks: BoundedBreaks<'_>,
    matches: &'m [(i64, i64, usize)],
) -> Vec<Passage<'m>> {
    let content_len = breaks.len;
    // (start, end, index of the first match) per passage.
    let mut spans: Vec<(i64, i64, usize)> = Vec::new();
    let mut last_end = breaks.first;
    for (i, &(start, end, _)) in matches.iter().enumerate() {
        let needs_new = spans.last().is_none_or(|p| start >= p.1);
        if needs_new {
            let center = start + (end - start) / 2;
            let bstart = breaks.start((start + 1).max(center));
            let pstart = start.min(bstart.max(last_end));
            last_end = end.max(breaks.end().min(content_len));
            spans.push((pstart, last_end, i));
        }
    }
    let ends = spans.iter().skip(1).map(|p| p.2).chain([matches.len()]);
    spans
        .iter()
        .zip(ends)
        .map(|(&(start, end, first), last)| Passage {
            start,
            end,
            matches: &matches[first..last],
            score: 0.0,
        })
        .collect()
}

/// Elasticsearch's `CustomPassageFormatter`: overlapping matches are one highlight, text is
/// encoded, a trailing value separator dropped, and fragments trimmed (not the whole field).
fn format(units: &Units<'_>, p: &Passage<'_>, opts: &PassageOptions<'_>) -> String {
    let text = units.text;
    let slice = |s: i64, e: i64| &text[units.byte(s as u32)..units.byte(e as u32)];
    let mut out = String::with_capacity(
        units.byte(p.end as u32) - units.byte(p.start as u32)
            + p.matches.len() * (opts.pre_tag.len() + opts.post_tag.len()),
    );
    let mut pos = p.start;
    let mut i = 0;
    while i < p.matches.len() {
        let (start, mut end, _) = p.matches[i];
        let start = start.max(pos);
        while i + 1 < p.matches.len() && p.matches[i + 1].0 < end {
            i += 1;
            end = end.max(p.matches[i].1);
        }
        i += 1;
        let end = end.min(p.end);
        if end <= start {
            continue;
        }
        opts.encoder.push(&mut out, slice(pos, start));
        out.push_str(opts.pre_tag);
        opts.encoder.push(&mut out, slice(start, end));
        out.push_str(opts.post_tag);
        pos = end;
    }
    opts.encoder.push(&mut out, slice(pos, pos.max(p.end)));
    let mut end = out.trim_end_matches(super::VALUE_SEPARATOR).len();
    if opts.number_of_fragments != 0 {
        end = out[..end].trim_end().len();
    }
    out.truncate(end);
    if opts.number_of_fragments != 0 {
        let lead = out.len() - out.trim_start().len();
        out.drain(..lead);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn m(text: &str, word: &str) -> Vec<Match<'static>> {
        text.match_indices(word)
            .map(|(s, w)| Match {
                start: s,
                end: s + w.len(),
                key: w.to_string().into(),
            })
            .collect()
    }

    fn opts(size: usize, n: usize) -> PassageOptions<'static> {
        PassageOptions {
            fragment_size: size,
            number_of_fragments: n,
            pre_tag: "<em>",
            post_tag: "</em>",
            encoder: Encoder::Default,
            by_score: false,
        }
    }

    fn frags(text: &str, word: &str, o: &PassageOptions<'_>) -> Vec<String> {
        best_passages(text, &[(0, text.len())], &m(text, word), o)
            .into_iter()
            .map(|(s, _)| s)
            .collect()
    }

    #[test]
    fn sentences_are_passages() {
        let text = "Oil rose today. Gas fell. Traders sold oil again.";
        assert_eq!(
            frags(text, "oil", &opts(100, 5)),
            ["Traders sold <em>oil</em> again."]
        );
        // From the match's sentence on, as many whole sentences as fit.
        assert_eq!(
            frags(text, "Gas", &opts(100, 5)),
            ["<em>Gas</em> fell. Traders sold oil again."]
        );
        assert_eq!(frags(text, "Gas", &opts(20, 5)), ["<em>Gas</em> fell."]);
        // Whole field: every match, the text untrimmed.
        assert_eq!(
            frags(" a oil b oil ", "oil", &opts(100, 0)),
            [" a <em>oil</em> b <em>oil</em> "]
        );
    }

    #[test]
    fn several_sentences_fit_in_a_fragment() {
        let text = "One. Two oil. Three. Four.";
        assert_eq!(
            frags(text, "oil", &opts(100, 5)),
            ["Two <em>oil</em>. Three. Four."]
        );
        assert_eq!(frags(text, "oil", &opts(9, 5)), ["Two <em>oil</em>."]);
    }

    #[test]
    fn long_sentences_are_cut_at_words() {
        let words: Vec<String> = (0..60).map(|i| format!("w{i}")).collect();
        let text = format!("{} oil {}.", words.join(" "), words.join(" "));
        let f = frags(&text, "oil", &opts(40, 5));
        assert_eq!(f.len(), 1);
        assert!(f[0].contains("<em>oil</em>"), "{f:?}");
        let plain = f[0].replace("<em>", "").replace("</em>", "");
        assert!(plain.len() <= 45, "{} > 40: {plain:?}", plain.len());
        assert!(!plain.starts_with(' ') && text.contains(&plain));
        // Words are whole.
        for w in plain.split(' ') {
            assert!(w == "oil" || words.contains(&w.to_string()), "{w:?}");
        }
    }

    #[test]
    fn best_passages_in_text_order_or_by_score() {
        // Sentences of 19-21 units: one passage each with a fragment size of 20.
        // (A sentence ends before a capital, not before a lowercase word: UAX#29.)
        let text = "Oil is here today. Gas is here too now. Oil Oil Oil again. \
                    Gas gas gas is here. Oil at the very end.";
        let mut o = opts(20, 2);
        let three = "<em>Oil</em> <em>Oil</em> <em>Oil</em> again.";
        let first = "<em>Oil</em> is here today.";
        assert_eq!(frags(text, "Oil", &o), [first, three]);
        o.by_score = true;
        assert_eq!(frags(text, "Oil", &o), [three, first]);
    }

    #[test]
    fn overlapping_matches_are_one_highlight_and_html_is_encoded() {
        let text = "a <b>oil</b> & co";
        let mut ms = m(text, "oil");
        ms.extend(m(text, "il</b"));
        ms.sort();
        let mut o = opts(100, 1);
        o.encoder = Encoder::Html;
        assert_eq!(
            best_passages(text, &[(0, text.len())], &ms, &o)[0].0,
            "a &lt;b&gt;<em>oil&lt;&#x2F;b</em>&gt; &amp; co"
        );
    }

    #[test]
    fn scores_follow_lucene_passage_scorer() {
        // One match of a term found once in an 87-unit text, in a 10-unit passage at 0.
        let w = term_weight(87, 1);
        assert!((w - 2.2 * (1.0f64 + 2.5 / 1.5).ln() as f32).abs() < 1e-6);
        let t = tf(1, 10);
        assert!((t - 1.0 / (1.0 + 1.2 * (0.25 + 0.75 * 10.0 / 87.0))).abs() < 1e-6);
        assert!((position_norm(0) - (1.0 + 1.0 / 87f32.ln())).abs() < 1e-6);
    }

    fn mixed_text() -> impl Strategy<Value = String> {
        // Words and the characters UAX #29's word and sentence rules treat specially: Hebrew
        // and Arabic letters (sentence OLetter, word letters), mid-word punctuation, quotes,
        // digits, terminators, ZWJ and pictographs, regional indicators, combining marks.
        let piece = prop_oneof![
            4 => "[a-zA-Z]{1,7}",
            1 => "[0-9]{1,3}",
            3 => Just(" ".to_string()),
            2 => prop::sample::select(vec![".", ". ", "! ", "? ", ".\"", ":", ",", "'", "\"", ")"])
                .prop_map(str::to_string),
            1 => prop::sample::select(vec!["\u{5d0}\u{5d1}", "\u{627}\u{644}", "\u{200d}", "\u{1f600}",
                "\u{1f1fa}\u{1f1f8}", "\u{301}", "\n", "\u{2029}", "\u{3002}", "\u{4e2d}"])
                .prop_map(str::to_string),
        ];
        proptest::collection::vec(piece, 0..60).prop_map(|v| v.concat())
    }

    proptest! {
        /// The conversions agree with tables of every byte and unit.
        #[test]
        fn units_are_the_tables(text in mixed_text()) {
            let units = Units::new(&text);
            let mut unit_of_byte = std::collections::BTreeMap::new();
            let mut byte_of_unit = Vec::new();
            let mut u = 0u32;
            for (b, c) in text.char_indices() {
                unit_of_byte.insert(b, u);
                for _ in 0..c.len_utf16() {
                    byte_of_unit.push(b);
                }
                u += c.len_utf16() as u32;
            }
            unit_of_byte.insert(text.len(), u);
            byte_of_unit.push(text.len());
            for (&b, &u) in &unit_of_byte {
                prop_assert_eq!(units.unit(b), u, "byte {}", b);
            }
            for (u, &b) in byte_of_unit.iter().enumerate() {
                prop_assert_eq!(units.byte(u as u32), b, "unit {}", u);
            }
            prop_assert_eq!(units.len(), u);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Passages cut at the words of the window alone are the ones cut at the whole value's
        /// words.
        #[test]
        fn words_of_window_are_the_values(
            text in mixed_text(),
            picks in proptest::collection::vec(any::<prop::sample::Index>(), 1..6),
            size in 1usize..40,
        ) {
            let units = Units::new(&text);
            let len = units.len();
            prop_assume!(len > 0);
            let starts: Vec<usize> = text.char_indices().map(|(b, _)| b).collect();
            let mut ms: Vec<(i64, i64, usize)> = picks
                .iter()
                .map(|i| {
                    let b = starts[i.index(starts.len())];
                    let e = b + text[b..].chars().next().map_or(0, char::len_utf8);
                    (i64::from(units.unit(b)), i64::from(units.unit(e)), 0)
                })
                .collect();
            ms.sort();
            ms.dedup();
            let fast = form_passages(&units, (0, text.len()), &ms, size);
            let mut slow = BoundedBreaks::new(&units, (0, text.len()), size);
            slow.whole_value_words = true;
            let slow = form_passages_with(slow, &ms);
            let spans = |ps: &[Passage]| ps.iter().map(|p| (p.start, p.end)).collect::<Vec<_>>();
            prop_assert_eq!(spans(&fast), spans(&slow), "{:?}", text);
        }
    }

    #[test]
    fn utf16_lengths() {
        let text = "é".repeat(10) + " oil. " + &"ü".repeat(3);
        let f = frags(&text, "oil", &opts(100, 1));
        assert_eq!(
            f,
            [format!(
                "{} <em>oil</em>. {}",
                "é".repeat(10),
                "ü".repeat(3)
            )]
        );
        let u = Units::new(&text);
        assert_eq!(u.len(), 10 + 6 + 3);
        assert_eq!(u.byte(10), 20);
    }
}
