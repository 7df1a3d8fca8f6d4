//! Query -> Weight: resolves fields, gathers collection statistics once for the whole searcher
//! (so scores are the same whatever the segmentation), then builds per-segment scorers.
use std::sync::Arc;

use quarry_store::Bytes;

use super::automaton::{self as automaton, Nfa};
use super::bm25::{Bm25, FieldStats, SimScorer};
use super::collector::Budget;
use super::count::{self, CountTerm, DenseAnd};
use super::multi_phrase::{self, MultiPhraseScorer};
use super::multiterm::{self, FuzzySpec};
use super::phrase::{PhraseScorer, PhraseTerms};
use super::range::{self, RangeSpec};
use super::scorer::*;
use super::sloppy::Repeats;
use super::stats::CollectionStats;
use crate::codec::postings::{PostingsCursor, TermInfo};
use crate::index::SegmentReader;
use crate::query::ast::{Clause, Occur, Query};
use crate::schema::{FieldType, Schema};
use crate::{Error, Result};

/// A query prepared for execution over a fixed set of segments.
pub enum Weight {
    /// `infos[segment]`: the term's entry in each segment, looked up once.
    Term {
        field: u32,
        term: String,
        sim: Arc<SimScorer>,
        infos: Vec<Option<(TermInfo, Bytes)>>,
    },
    /// `slots`: (distinct word, offset) of each phrase term, in phrase order.
    /// `segs[segment]`: the entries of the distinct words, looked up once, or, where the
    /// segment has pairs of frequent words and two adjacent terms form one, of the pieces of
    /// the phrase's cover by pairs and words ([`crate::pairs::cover`]); `None` for a segment
    /// that lacks one of them.
    Phrase {
        field: u32,
        slots: Vec<(usize, u32)>,
        slop: u32,
        sim: Arc<SimScorer>,
        segs: Vec<Option<PhraseEntries>>,
    },
    /// A multi-phrase of at least two positions, not all of one term (scored by the union
    /// of each position's postings):
    /// `offsets[position]`; `segs[segment][position]`: the entries of the position's terms
    /// present in the segment (`None`: a position has none there).
    MultiPhrase {
        field: u32,
        offsets: Vec<u32>,
        slop: u32,
        /// Sloppy only: positions sharing a term (`"oil o*"~2`), from the query's terms as
        /// Lucene's, present in the segment or not.
        repeats: Option<Arc<Repeats>>,
        sim: Arc<SimScorer>,
        segs: Vec<Option<PositionEntries>>,
    },
    Prefix {
        field: u32,
        prefix: String,
        score: f32,
    },
    /// Terms accepted by a wildcard or regexp automaton: constant `score`.
    Automaton {
        field: u32,
        nfa: Arc<Nfa>,
        /// The NFA on bit sets, for a pattern that fits one (built once per query, walked per
        /// segment); larger patterns with a loop walk a [`automaton::LazyDfa`].
        bits: Option<Arc<automaton::BitNfa>>,
        score: f32,
    },
    /// The matches of `inner`, each scored `score`.
    Const {
        inner: Box<Weight>,
        score: f32,
    },
    /// The best of `subs` plus `tie` times the others.
    DisMax {
        subs: Vec<Weight>,
        tie: f32,
    },
    /// `positive`, its score times `factor` where `negative` matches too.
    Boosting {
        positive: Box<Weight>,
        negative: Box<Weight>,
        factor: f32,
    },
    /// A range on a field ([`super::range`]): constant `score`.
    Range {
        field: u32,
        spec: RangeSpec,
        score: f32,
    },
    Bool {
        must: Vec<Weight>,
        filter: Vec<Weight>,
        should: Vec<Weight>,
        must_not: Vec<Weight>,
        min_should: u32,
    },
    All {
        score: f32,
    },
    Nothing,
}

/// A multi-phrase's entries in one segment: per position, those of its terms found there.
pub type PositionEntries = Vec<Vec<(TermInfo, Bytes)>>;

/// A phrase's entries in one segment: of its distinct words, or of the distinct pieces of its
/// cover by pairs, whose (piece, offset) per piece are then `piece_slots` (the words' are the
/// weight's `slots`).
pub struct PhraseEntries {
    pub infos: Vec<(TermInfo, Bytes)>,
    pub piece_slots: Option<Vec<(usize, u32)>>,
}

impl PhraseEntries {
    /// The (entry, offset) of each piece: the pieces' own, or the words' `slots`.
    fn slots<'a>(&'a self, words: &'a [(usize, u32)]) -> &'a [(usize, u32)] {
        self.piece_slots.as_deref().unwrap_or(words)
    }
}

/// The index of `x` in `v`, pushed at the end if it is not there (the distinct words or pieces
/// of a phrase: a handful, so a scan).
fn intern<T: PartialEq>(v: &mut Vec<T>, x: T) -> usize {
    match v.iter().position(|y| *y == x) {
        Some(i) => i,
        None => {
            v.push(x);
            v.len() - 1
        }
    }
}

/// What building a weight needs to know about the searcher.
pub struct Context<'a> {
    pub schema: &'a Schema,
    pub segments: &'a [Arc<SegmentReader>],
    pub stats: &'a [FieldStats],
    pub norm_caches: &'a [Arc<[f32; 256]>],
    pub bm25: Bm25,
    /// Supplied collection statistics (a shard scored as part of a larger index).
    pub global: Option<&'a CollectionStats>,
    /// How range bounds on dates are read (format, time zone, `now`).
    pub range_options: range::RangeOptions,
}

impl Context<'_> {
    fn field(&self, name: &str) -> Result<u32> {
        self.schema
            .field_id(name)
            .ok_or_else(|| Error::unknown_field(self.schema, name))
    }

    /// A text or keyword field for a multi-term query of kind `what` (their terms are what
    /// patterns match; numbers and dates have none).
    fn text_field(&self, name: &str, what: &str) -> Result<u32> {
        let f = self.field(name)?;
        match self.schema.field(f).field_type {
            FieldType::Text | FieldType::Keyword => Ok(f),
            other => Err(Error::Query(format!(
                "{what} query on field {name:?}: only text and keyword fields can be searched \
                 this way, and {name:?} is a {} field",
                other.name()
            ))),
        }
    }

    /// A field indexed with positions, for a query of kind `what` that reads them.
    fn positions_field(&self, name: &str, what: &str) -> Result<u32> {
        let f = self.field(name)?;
        if self.schema.field(f).has_positions() {
            Ok(f)
        } else {
            Err(Error::Query(format!(
                "field {name:?} has no positions: {what} queries need a text field"
            )))
        }
    }

    /// The document frequency to score with: the supplied one when statistics were supplied
    /// (an error if they lack the term), else `local`.
    pub(crate) fn scoring_doc_freq(&self, field: u32, term: &str, local: u64) -> Result<u64> {
        let Some(g) = self.global else {
            return Ok(local);
        };
        let name = &self.schema.field(field).name;
        g.doc_freq(name, term).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "supplied collection statistics lack term {name}:{term}; gather them for this query"
            ))
        })
    }
}

/// The phrase of a multi-phrase whose every position holds one term, at strictly increasing
/// positions (what Lucene's `PhraseQuery` scores the same way); `None` otherwise.
pub(crate) fn single_terms(terms: &[(u32, Vec<String>)]) -> Option<Vec<(u32, String)>> {
    let increasing = terms.windows(2).all(|w| w[0].0 < w[1].0);
    (increasing && terms.iter().all(|(_, ts)| ts.len() == 1))
        .then(|| terms.iter().map(|(p, ts)| (*p, ts[0].clone())).collect())
}

/// The clauses of one `occur` with identical ones merged into one whose boost is the sum of
/// theirs, in order of first appearance, as Lucene's `BooleanQuery.rewrite` does for MUST and
/// (with at most one SHOULD required) SHOULD clauses: `+to +be +or +not +to +be` scores
/// exactly the same with four scorers instead of six.
fn summed_boosts(clauses: &[Clause], occur: Occur) -> Vec<(&Query, f32)> {
    let mut out: Vec<(&Query, f64)> = Vec::new();
    for c in clauses.iter().filter(|c| c.occur == occur) {
        let (mut q, mut b) = (&c.query, 1f64);
        while let Query::Boost { query, boost } = q {
            b *= f64::from(*boost);
            q = query;
        }
        match out.iter_mut().find(|(seen, _)| *seen == q) {
            Some((_, sum)) => *sum += b,
            None => out.push((q, b)),
        }
    }
    if out.len() == clauses.iter().filter(|c| c.occur == occur).count() {
        // Nothing to merge: the clauses stay as written (nested boosts multiplied in f32).
        return clauses
            .iter()
            .filter(|c| c.occur == occur)
            .map(|c| (&c.query, 1.0))
            .collect();
    }
    out.into_iter().map(|(q, b)| (q, b as f32)).collect()
}

/// `field`'s norms on `seg` for a scorer over `cursors`: when they are handed out unverified,
/// each cursor checks the norms of the blocks it loads (see
/// [`SegmentReader::scoring_norms`]).
fn scoring_norms(
    seg: &SegmentReader,
    field: u32,
    cursors: &mut [PostingsCursor],
) -> Result<Option<Bytes>> {
    Ok(seg.scoring_norms(field)?.map(|(bytes, check)| {
        if let Some(check) = check {
            for c in cursors.iter_mut() {
                c.set_norms_check(Some(check.clone()));
            }
        }
        bytes
    }))
}

/// The pair terms an exact phrase with adjacent frequent words can read instead of the words'
/// postings, where a segment has them.
struct PhrasePairs {
    /// Per adjacent pair of phrase terms: both frequent and at adjacent positions.
    pairable: Vec<bool>,
    /// The distinct pair terms (none for a sloppy phrase).
    terms: Vec<String>,
    /// Per adjacent pair: its index into `terms` (`usize::MAX`: not read as a pair).
    of: Vec<usize>,
}

impl PhrasePairs {
    /// The pairs of `terms` (a phrase with `slop`; only exact phrases read pairs).
    fn of(terms: &[(u32, String)], slop: u32) -> Self {
        let pairable: Vec<bool> = terms
            .windows(2)
            .map(|w| {
                w[1].0 == w[0].0.wrapping_add(1)
                    && crate::pairs::is_frequent(&w[0].1)
                    && crate::pairs::is_frequent(&w[1].1)
            })
            .collect();
        let mut pair_terms: Vec<String> = Vec::new();
        let mut pair_of = vec![usize::MAX; pairable.len()];
        if slop == 0 {
            for (i, _) in pairable.iter().enumerate().filter(|(_, &p)| p) {
                let t = crate::pairs::pair_term(&terms[i].1, &terms[i + 1].1);
                pair_of[i] = intern(&mut pair_terms, t);
            }
        }
        Self {
            pairable,
            terms: pair_terms,
            of: pair_of,
        }
    }
}

/// A phrase's entries in `seg` (`None`: a word is missing there), each word's document
/// frequency added to `dfs`.
fn phrase_segment(
    seg: &SegmentReader,
    f: u32,
    terms: &[(u32, String)],
    words: &[&str],
    slots: &[(usize, u32)],
    pairs: &PhrasePairs,
    dfs: &mut [u64],
) -> Result<Option<PhraseEntries>> {
    let mut found = Vec::with_capacity(words.len());
    for (w, df) in words.iter().zip(dfs.iter_mut()) {
        if let Some(entry) = seg.term_info(f, w.as_bytes())? {
            *df += u64::from(entry.0.doc_freq);
            found.push(entry);
        }
    }
    if found.len() != words.len() {
        Ok(None)
    } else if !pairs.terms.is_empty() && seg.has_pairs(f) {
        phrase_pieces(
            seg,
            f,
            terms,
            slots,
            &pairs.pairable,
            &pairs.terms,
            &pairs.of,
            found,
        )
    } else {
        Ok(Some(PhraseEntries {
            infos: found,
            piece_slots: None,
        }))
    }
}

impl Weight {
    /// The one score every match gets, for weights whose matches all score alike (prefix,
    /// wildcard, regexp and range rewrites, `constant_score`, match-all): a top-k search whose
    /// k-th hit already has that score, and wins its ties against all of a segment, can pass
    /// that segment over without building its scorer (a dictionary walk per segment).
    pub(crate) fn constant_score(&self) -> Option<f32> {
        match self {
            Weight::Prefix { score, .. }
            | Weight::Automaton { score, .. }
            | Weight::Const { score, .. }
            | Weight::Range { score, .. }
            | Weight::All { score } => Some(*score),
            _ => None,
        }
    }

    /// A wildcard's or regexp's weight: its NFA, and the bit-set form when it applies.
    fn automaton(field: u32, nfa: Nfa, score: f32) -> Weight {
        let bits = automaton::BitNfa::new(&nfa).map(Arc::new);
        Weight::Automaton {
            field,
            nfa: Arc::new(nfa),
            bits,
            score,
        }
    }

    /// The weight of `q` over `ctx`'s segments, its scores multiplied by `boost`.
    pub fn build(q: &Query, ctx: &Context, boost: f32) -> Result<Weight> {
        Ok(match q {
            Query::Term { field, term } => {
                let f = ctx.field(field)?;
                if matches!(
                    ctx.schema.field(f).field_type,
                    FieldType::Date | FieldType::Integer | FieldType::Float
                ) {
                    // As Elasticsearch and Lucene's points: a number or date term is the range
                    // of that one value, scored as a constant (a date text rounded down and up:
                    // `day:2020-01-01` is that whole day).
                    let b = Some((term.as_str(), true));
                    Weight::build_range(f, b, b, ctx, boost)?
                } else {
                    Weight::build_term(field, term, ctx, boost)?
                }
            }
            Query::Phrase { field, terms, slop } => {
                Weight::build_phrase(field, terms, *slop, ctx, boost)?
            }
            Query::MultiPhrase { field, terms, slop } => {
                Weight::build_multi_phrase(field, terms, *slop, ctx, boost)?
            }
            Query::PhrasePrefix { field, .. } => {
                let f = ctx.positions_field(field, "phrase prefix")?;
                let q = multi_phrase::rewrite_phrase_prefix(ctx.segments, f, q)?;
                Weight::build(&q, ctx, boost)?
            }
            Query::Prefix { field, prefix } => Weight::Prefix {
                field: ctx.field(field)?,
                prefix: prefix.clone(),
                score: boost,
            },
            Query::Boost { query, boost: b } => Weight::build(query, ctx, boost * b)?,
            Query::Wildcard { field, pattern } => {
                let f = ctx.text_field(field, "wildcard")?;
                let nfa = automaton::wildcard(pattern).map_err(|e| {
                    Error::Query(format!("wildcard {pattern:?} on field {field:?}: {e}"))
                })?;
                Weight::automaton(f, nfa, boost)
            }
            Query::Regexp { field, pattern } => {
                let f = ctx.text_field(field, "regexp")?;
                let nfa = automaton::regexp::compile(pattern).map_err(|e| {
                    Error::Query(format!("regexp /{pattern}/ on field {field:?}: {e}"))
                })?;
                Weight::automaton(f, nfa, boost)
            }
            Query::Fuzzy { .. } => {
                let (field, spec) = FuzzySpec::of(q).expect("a fuzzy query");
                Weight::build_fuzzy(field, &spec, ctx, boost)?
            }
            Query::ConstantScore { query } => match Weight::build(query, ctx, 1.0)? {
                Weight::Nothing => Weight::Nothing,
                inner => Weight::Const {
                    inner: Box::new(inner),
                    score: boost,
                },
            },
            Query::DisMax {
                queries,
                tie_breaker,
            } => {
                let subs: Vec<Weight> = queries
                    .iter()
                    .map(|q| Weight::build(q, ctx, boost))
                    .collect::<Result<_>>()?;
                Weight::DisMax {
                    subs,
                    tie: *tie_breaker,
                }
            }
            Query::Boosting {
                positive,
                negative,
                negative_boost,
            } => match Weight::build(positive, ctx, boost)? {
                Weight::Nothing => Weight::Nothing,
                pos => Weight::Boosting {
                    positive: Box::new(pos),
                    negative: Box::new(Weight::build(negative, ctx, 1.0)?),
                    factor: *negative_boost,
                },
            },
            Query::MatchAll => Weight::All { score: boost },
            Query::MatchNone => Weight::Nothing,
            Query::Range {
                field,
                lower,
                upper,
                include_lower,
                include_upper,
                format,
                time_zone,
            } => {
                let f = ctx.field(field)?;
                let mut opts = ctx.range_options.clone();
                let date_opt = |what: &str| {
                    Error::Query(format!(
                        "range on field {field:?}: [{what}] applies to date fields only"
                    ))
                };
                let is_date = ctx.schema.field(f).field_type == FieldType::Date;
                if let Some(spec) = format {
                    if !is_date {
                        return Err(date_opt("format"));
                    }
                    opts.format = Some(
                        crate::date::DateFormat::new(spec)
                            .map_err(|e| Error::Query(format!("range on field {field:?}: {e}")))?,
                    );
                }
                if let Some(tz) = time_zone {
                    if !is_date {
                        return Err(date_opt("time_zone"));
                    }
                    opts.time_zone = crate::date::time_zone(tz)
                        .map_err(|e| Error::Query(format!("range on field {field:?}: {e}")))?;
                }
                let spec = range::resolve(
                    ctx.schema,
                    f,
                    lower.as_deref().map(|l| (l, *include_lower)),
                    upper.as_deref().map(|u| (u, *include_upper)),
                    &opts,
                )?;
                match spec {
                    RangeSpec::Empty => Weight::Nothing,
                    spec => Weight::Range {
                        field: f,
                        spec,
                        score: boost,
                    },
                }
            }
            Query::Boolean {
                clauses,
                minimum_should_match,
            } => Weight::build_boolean(clauses, *minimum_should_match, ctx, boost)?,
        })
    }

    /// A range's weight: its bounds read by the field's type (now: this instant, UTC).
    pub(crate) fn build_range(
        field: u32,
        lower: Option<(&str, bool)>,
        upper: Option<(&str, bool)>,
        ctx: &Context,
        boost: f32,
    ) -> Result<Weight> {
        let spec = range::resolve(ctx.schema, field, lower, upper, &ctx.range_options)?;
        Ok(match spec {
            RangeSpec::Empty => Weight::Nothing,
            spec => Weight::Range {
                field,
                spec,
                score: boost,
            },
        })
    }

    /// A term's weight: its entry in each segment and its IDF over the whole index.
    fn build_term(field: &str, term: &str, ctx: &Context, boost: f32) -> Result<Weight> {
        Weight::build_term_df(ctx.field(field)?, term, ctx, boost, None)
    }

    /// A term's weight scored with `blended_df` instead of its own document frequency when
    /// given (the expansions of a fuzzy query, [`Weight::build_fuzzy`]).
    pub(crate) fn build_term_df(
        f: u32,
        term: &str,
        ctx: &Context,
        boost: f32,
        blended_df: Option<u64>,
    ) -> Result<Weight> {
        let mut infos = Vec::with_capacity(ctx.segments.len());
        let mut df = 0u64;
        for seg in ctx.segments {
            let info = seg.term_info(f, term.as_bytes())?;
            df += info.as_ref().map_or(0, |(i, _)| u64::from(i.doc_freq));
            infos.push(info);
        }
        if df == 0 {
            return Ok(Weight::Nothing);
        }
        let df = match blended_df {
            Some(b) => b,
            None => ctx.scoring_doc_freq(f, term, df)?,
        };
        let stats = &ctx.stats[f as usize];
        let sim = SimScorer::with_cache(
            boost,
            Bm25::idf(df, stats.doc_count),
            ctx.norm_caches[f as usize].clone(),
        );
        Ok(Weight::Term {
            field: f,
            term: term.to_string(),
            sim: Arc::new(sim),
            infos,
        })
    }

    /// A fuzzy query's weight (Lucene's `TopTermsBlendedFreqScoringRewrite`): a disjunction of
    /// its expansions, each boosted by its similarity and scored with the largest document
    /// frequency among them, so that a rare misspelling does not outscore the common word.
    fn build_fuzzy(field: &str, spec: &FuzzySpec, ctx: &Context, boost: f32) -> Result<Weight> {
        spec.check(field)?;
        let f = ctx.text_field(field, "fuzzy")?;
        let expansions = multiterm::fuzzy_expansions(ctx.segments, f, spec)?;
        let mut df = 0u64;
        for e in &expansions {
            df = df.max(ctx.scoring_doc_freq(f, &e.term, e.doc_freq)?);
        }
        let mut should = Vec::with_capacity(expansions.len());
        for e in &expansions {
            should.push(Weight::build_term_df(
                f,
                &e.term,
                ctx,
                boost * e.boost,
                Some(df),
            )?);
        }
        Ok(match should.len() {
            0 => Weight::Nothing,
            1 => should.pop().expect("one"),
            _ => Weight::Bool {
                must: vec![],
                filter: vec![],
                should,
                must_not: vec![],
                min_should: 0,
            },
        })
    }

    /// A phrase's weight: its words' entries in each segment (or the pair terms that cover
    /// it, where a segment has them) and the sum of its terms' IDFs.
    fn build_phrase(
        field: &str,
        terms: &[(u32, String)],
        slop: u32,
        ctx: &Context,
        boost: f32,
    ) -> Result<Weight> {
        let f = ctx.field(field)?;
        if !ctx.schema.field(f).has_positions() {
            return Err(Error::Query(format!(
                "field {field:?} has no positions: phrase queries need a text field"
            )));
        }
        if terms.is_empty() {
            return Ok(Weight::Nothing);
        }
        // One lookup per distinct word and segment; each phrase term points at its
        // word's slot.
        let mut words: Vec<&str> = Vec::with_capacity(terms.len());
        let mut slots = Vec::with_capacity(terms.len());
        for (offset, t) in terms {
            slots.push((intern(&mut words, t.as_str()), *offset));
        }
        let pairs = PhrasePairs::of(terms, slop);
        let mut dfs = vec![0u64; words.len()];
        let mut segs = Vec::with_capacity(ctx.segments.len());
        for seg in ctx.segments {
            segs.push(phrase_segment(
                seg, f, terms, &words, &slots, &pairs, &mut dfs,
            )?);
        }
        let stats = &ctx.stats[f as usize];
        let mut idf = 0f32;
        for (&(slot, _), (_, t)) in slots.iter().zip(terms) {
            let df = ctx.scoring_doc_freq(f, t, dfs[slot])?;
            if df == 0 {
                return Ok(Weight::Nothing);
            }
            idf += Bm25::idf(df, stats.doc_count);
        }
        let sim = SimScorer::with_cache(boost, idf, ctx.norm_caches[f as usize].clone());
        Ok(Weight::Phrase {
            field: f,
            slots,
            slop,
            sim: Arc::new(sim),
            segs,
        })
    }

    /// A multi-phrase's weight (Lucene's `MultiPhraseQuery`): one position is the disjunction
    /// of its terms and one term per position a phrase, as Lucene rewrites and scores them;
    /// otherwise the idf is the sum over every term of every position found in the index.
    fn build_multi_phrase(
        field: &str,
        terms: &[(u32, Vec<String>)],
        slop: u32,
        ctx: &Context,
        boost: f32,
    ) -> Result<Weight> {
        if let [(_, only)] = terms {
            let clauses = only
                .iter()
                .map(|t| Clause::new(Occur::Should, Query::term(field, t.clone())))
                .collect();
            return Weight::build(&Query::boolean(clauses), ctx, boost);
        }
        let f = ctx.positions_field(field, "multi-phrase")?;
        if terms.is_empty() || terms.iter().any(|(_, ts)| ts.is_empty()) {
            return Ok(Weight::Nothing);
        }
        if let Some(phrase) = single_terms(terms) {
            return Weight::build_phrase(field, &phrase, slop, ctx, boost);
        }
        let stats = &ctx.stats[f as usize];
        let mut idf = 0f32;
        let mut segs: Vec<Option<PositionEntries>> =
            vec![Some(Vec::with_capacity(terms.len())); ctx.segments.len()];
        for (_, ts) in terms {
            for seg in segs.iter_mut().flatten() {
                seg.push(Vec::with_capacity(ts.len()));
            }
            let mut found = false;
            for t in ts {
                let mut df = 0u64;
                for (seg, entries) in ctx.segments.iter().zip(segs.iter_mut()) {
                    if let Some(e) = seg.term_info(f, t.as_bytes())? {
                        df += u64::from(e.0.doc_freq);
                        if let Some(entries) = entries {
                            entries.last_mut().expect("pushed").push(e);
                        }
                    }
                }
                if df > 0 {
                    found = true;
                    idf += Bm25::idf(ctx.scoring_doc_freq(f, t, df)?, stats.doc_count);
                }
            }
            if !found {
                return Ok(Weight::Nothing);
            }
            // A segment where this position has no term cannot match.
            for entries in segs.iter_mut() {
                if entries
                    .as_ref()
                    .is_some_and(|e| e.last().is_some_and(Vec::is_empty))
                {
                    *entries = None;
                }
            }
        }
        let sim = SimScorer::with_cache(boost, idf, ctx.norm_caches[f as usize].clone());
        let offsets: Vec<u32> = terms.iter().map(|(p, _)| *p).collect();
        let repeats = if slop > 0 {
            let sets: Vec<Vec<String>> = terms.iter().map(|(_, ts)| ts.clone()).collect();
            Repeats::of(&sets, &offsets).map(Arc::new)
        } else {
            None
        };
        Ok(Weight::MultiPhrase {
            field: f,
            offsets,
            slop,
            repeats,
            sim: Arc::new(sim),
            segs,
        })
    }

    /// A boolean query's weight: its clauses' weights by occurrence, the boosts of repeated
    /// required and optional clauses summed (as Lucene rewrites them) unless
    /// `minimum_should_match` counts the optional ones.
    fn build_boolean(
        clauses: &[Clause],
        minimum_should_match: u32,
        ctx: &Context,
        boost: f32,
    ) -> Result<Weight> {
        let (mut must, mut filter, mut should, mut must_not) = (vec![], vec![], vec![], vec![]);
        for c in clauses
            .iter()
            .filter(|c| matches!(c.occur, Occur::Filter | Occur::MustNot))
        {
            let w = Weight::build(&c.query, ctx, boost)?;
            match c.occur {
                Occur::Filter => filter.push(w),
                _ => must_not.push(w),
            }
        }
        for (q, b) in summed_boosts(clauses, Occur::Must) {
            must.push(Weight::build(q, ctx, boost * b)?);
        }
        if minimum_should_match <= 1 {
            for (q, b) in summed_boosts(clauses, Occur::Should) {
                should.push(Weight::build(q, ctx, boost * b)?);
            }
        } else {
            for c in clauses.iter().filter(|c| c.occur == Occur::Should) {
                should.push(Weight::build(&c.query, ctx, boost)?);
            }
        }
        Ok(Weight::Bool {
            must,
            filter,
            should,
            must_not,
            min_should: minimum_should_match,
        })
    }

    /// The exact number of matches in `seg` when it is known without iterating.
    pub fn fast_count(
        &self,
        seg: &SegmentReader,
        ord: usize,
        budget: &mut Budget,
    ) -> Result<Option<u64>> {
        Ok(match self {
            Weight::Nothing => Some(0),
            Weight::All { .. } => Some(u64::from(seg.doc_count())),
            Weight::Term { infos, .. } => Some(
                infos
                    .get(ord)
                    .and_then(|i| i.as_ref())
                    .map_or(0, |(i, _)| u64::from(i.doc_freq)),
            ),
            Weight::Phrase { .. } => self
                .count_term(ord)
                .map(|t| t.map_or(0, |t| u64::from(t.info.doc_freq))),
            Weight::Range { field, spec, .. } => range::range_count(seg, *field, spec)?,
            Weight::Bool {
                must,
                filter,
                should,
                must_not,
                min_should,
            } => {
                fn terms<'w>(
                    ws: impl Iterator<Item = &'w Weight>,
                    ord: usize,
                ) -> Option<Vec<Option<CountTerm<'w>>>> {
                    ws.map(|w| w.count_term(ord)).collect()
                }
                let has_required = !must.is_empty() || !filter.is_empty();
                if let ([only], []) | ([], [only]) = (&must[..], &filter[..]) {
                    // One required clause and no exclusion: its matches, whatever the
                    // optional clauses (a range given as a filter counts by its points).
                    if must_not.is_empty() && *min_should == 0 {
                        if let Some(n) = only.fast_count(seg, ord, budget)? {
                            return Ok(Some(n));
                        }
                    }
                }
                if has_required && *min_should == 0 {
                    // Optional clauses never change which documents match here.
                    let Some(req) = terms(must.iter().chain(filter), ord) else {
                        return Ok(None);
                    };
                    let Some(req) = req.into_iter().collect::<Option<Vec<_>>>() else {
                        return Ok(Some(0));
                    };
                    let Some(excl) = terms(must_not.iter(), ord) else {
                        return Ok(None);
                    };
                    let excl: Vec<CountTerm> = excl.into_iter().flatten().collect();
                    if excl.len() > count::MAX_EXCLUDED {
                        return Ok(None);
                    }
                    Some(count::count_req_excl(seg, &req, &excl, budget)?)
                } else if !has_required && must_not.is_empty() && *min_should <= 1 {
                    let Some(opt) = terms(should.iter(), ord) else {
                        return Ok(None);
                    };
                    let opt: Vec<CountTerm> = opt.into_iter().flatten().collect();
                    match opt.as_slice() {
                        [] => Some(0),
                        [a] => Some(u64::from(a.info.doc_freq)),
                        [a, b] => count::count_or2(seg, a, b, budget)?,
                        _ => None,
                    }
                } else {
                    None
                }
            }
            _ => None,
        })
    }

    /// For counting: `Some(Some(term))` for a term weight with an entry in segment `ord`,
    /// `Some(None)` for one that matches nothing there, `None` for any other weight.
    fn count_term(&self, ord: usize) -> Option<Option<CountTerm<'_>>> {
        match self {
            Weight::Nothing => Some(None),
            Weight::Term { field, infos, .. } => Some(infos.get(ord).and_then(|i| i.as_ref()).map(
                |(info, bytes)| CountTerm {
                    field: *field,
                    info,
                    bytes,
                },
            )),
            // A phrase read as one list (one pair, or one word) matches that list's documents.
            Weight::Phrase {
                field, slots, segs, ..
            } => match segs.get(ord).and_then(|e| e.as_ref()) {
                None => Some(None),
                Some(e) => match (&e.infos[..], e.slots(slots)) {
                    ([(info, bytes)], [_]) => Some(Some(CountTerm {
                        field: *field,
                        info,
                        bytes,
                    })),
                    _ => None,
                },
            },
            _ => None,
        }
    }

    /// The number of matches in `seg` (without deletions) when it costs nothing to know: a term
    /// (its document frequency) or one required term with optional clauses (which never change
    /// which documents match). A search that wants the top k and the count then runs pruned and
    /// takes the count from here.
    pub fn free_count(&self, ord: usize) -> Option<u64> {
        match self {
            Weight::Nothing | Weight::Term { .. } | Weight::Phrase { .. } => self
                .count_term(ord)
                .map(|t| t.map_or(0, |t| u64::from(t.info.doc_freq))),
            Weight::Bool {
                must,
                filter,
                must_not,
                min_should: 0,
                ..
            } if must.len() == 1 && filter.is_empty() && must_not.is_empty() => {
                must[0].free_count(ord)
            }
            _ => None,
        }
    }

    /// The term weights of a pure disjunction of terms (the MaxScore fast path), if this is one;
    /// a single term is a union of one.
    pub fn term_union(&self) -> Option<Vec<&Weight>> {
        match self {
            Weight::Term { .. } => Some(vec![self]),
            Weight::Bool {
                must,
                filter,
                should,
                must_not,
                min_should,
            } if must.is_empty()
                && filter.is_empty()
                && must_not.is_empty()
                && *min_should <= 1
                && should.len() > 1 =>
            {
                let terms: Vec<&Weight> = should
                    .iter()
                    .filter(|w| !matches!(w, Weight::Nothing))
                    .collect();
                terms
                    .iter()
                    .all(|w| matches!(w, Weight::Term { .. }))
                    .then_some(terms)
            }
            _ => None,
        }
    }

    /// The term weights of a pure conjunction of terms (`+a +b`, at least two, nothing else),
    /// if this is one: its top k is `conjunction::top_k`.
    pub(crate) fn term_conjunction(&self) -> Option<&[Weight]> {
        match self {
            Weight::Bool {
                must,
                filter,
                should,
                must_not,
                min_should: 0,
            } if must.len() > 1
                && filter.is_empty()
                && should.is_empty()
                && must_not.is_empty()
                && must.iter().all(|w| matches!(w, Weight::Term { .. })) =>
            {
                Some(must)
            }
            _ => None,
        }
    }

    /// The documents of every one of `terms` (term weights) in `seg` as a `DenseAnd`, when
    /// their rarest is common enough for bitsets to pay (`DenseAnd::pays`).
    pub(crate) fn term_dense_and(
        terms: &[Weight],
        seg: &SegmentReader,
        ord: usize,
    ) -> Result<Option<DenseAnd>> {
        let mut entries = Vec::with_capacity(terms.len());
        for w in terms {
            let Weight::Term { field, infos, .. } = w else {
                return Ok(None);
            };
            let Some((info, bytes)) = infos.get(ord).and_then(|i| i.as_ref()) else {
                return Ok(None);
            };
            entries.push((*field, info, bytes));
        }
        let min_df = entries.iter().map(|e| e.1.doc_freq).min().unwrap_or(0);
        if entries.len() < 2 || !DenseAnd::pays(min_df, seg.doc_count()) {
            return Ok(None);
        }
        let cursors = entries
            .into_iter()
            .map(|(field, info, bytes)| seg.postings(field, info, bytes, false))
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(DenseAnd::new(cursors)))
    }

    /// `+a -b -c …`: the required term and the prohibited terms, if this is such a query (one
    /// required term, no optional or filter clause, every prohibited clause a term). Its top k
    /// is the term's pruned walk with a check of the prohibited terms for competitive
    /// documents only.
    pub fn term_exclusion(&self) -> Option<(&Weight, Vec<&Weight>)> {
        let Weight::Bool {
            must,
            filter,
            should,
            must_not,
            ..
        } = self
        else {
            return None;
        };
        let [req @ Weight::Term { .. }] = must.as_slice() else {
            return None;
        };
        if !filter.is_empty() || !should.is_empty() || must_not.is_empty() {
            return None;
        }
        let not: Vec<&Weight> = must_not
            .iter()
            .filter(|w| !matches!(w, Weight::Nothing))
            .collect();
        not.iter()
            .all(|w| matches!(w, Weight::Term { .. }))
            .then_some((req, not))
    }

    /// The concrete scorer of a term weight on `seg`.
    pub fn term_scorer(&self, seg: &SegmentReader, ord: usize) -> Result<Option<TermScorer>> {
        let Weight::Term {
            field, sim, infos, ..
        } = self
        else {
            return Ok(None);
        };
        Ok(match infos.get(ord).and_then(|i| i.as_ref()) {
            None => None,
            Some((info, bytes)) => {
                let mut cursor = seg.postings(*field, info, bytes, false)?;
                let norms = scoring_norms(seg, *field, std::slice::from_mut(&mut cursor))?;
                Some(TermScorer::new(cursor, (**sim).clone(), norms))
            }
        })
    }

    /// The scorer of this weight on `seg`, or `None` if nothing can match there.
    pub fn scorer(&self, seg: &SegmentReader, ord: usize) -> Result<Option<Box<dyn Scorer>>> {
        Ok(match self {
            Weight::Nothing => None,
            Weight::All { score } => Some(Box::new(AllScorer::new(seg.doc_count(), *score))),
            Weight::Term { .. } => self
                .term_scorer(seg, ord)?
                .map(|t| Box::new(t) as Box<dyn Scorer>),
            Weight::Phrase {
                field,
                slots,
                slop,
                sim,
                segs,
            } => {
                let Some(entries) = segs.get(ord).and_then(|i| i.as_ref()) else {
                    return Ok(None);
                };
                let (infos, slots) = (&entries.infos, entries.slots(slots));
                if let ([(info, bytes)], [_]) = (&infos[..], slots) {
                    // One pair (`"the who"`): its frequency in a document is the phrase's.
                    let mut cursor = seg.postings(*field, info, bytes, false)?;
                    let norms = scoring_norms(seg, *field, std::slice::from_mut(&mut cursor))?;
                    return Ok(Some(Box::new(TermScorer::new(
                        cursor,
                        (**sim).clone(),
                        norms,
                    ))));
                }
                // One batched read of every term's positions when they are not mapped.
                let mut pts = PhraseTerms {
                    cursors: seg.phrase_postings(*field, infos)?,
                    terms: slots.to_vec(),
                };
                // Every cursor checks the norms it may be scored with: the phrase reads the norm
                // of a document all of them are on.
                let norms = scoring_norms(seg, *field, &mut pts.cursors)?;
                // Common words only (`"to be or not to be"`): candidates from bitsets.
                let min_df = infos.iter().map(|(i, _)| i.doc_freq).min().unwrap_or(0);
                let filter = if infos.len() > 1 && DenseAnd::pays(min_df, seg.doc_count()) {
                    let cursors = infos
                        .iter()
                        .map(|(i, b)| seg.postings(*field, i, b, false))
                        .collect::<Result<Vec<_>>>()?;
                    Some(DenseAnd::new(cursors))
                } else {
                    None
                };
                Some(Box::new(PhraseScorer::new(
                    pts,
                    *slop,
                    (**sim).clone(),
                    norms,
                    filter,
                )))
            }
            Weight::MultiPhrase {
                field,
                offsets,
                slop,
                repeats,
                sim,
                segs,
            } => {
                let Some(entries) = segs.get(ord).and_then(|e| e.as_ref()) else {
                    return Ok(None);
                };
                let mut positions = Vec::with_capacity(entries.len());
                let mut norms = None;
                for (es, off) in entries.iter().zip(offsets) {
                    let mut cursors = es
                        .iter()
                        .map(|(info, bytes)| seg.postings(*field, info, bytes, true))
                        .collect::<Result<Vec<_>>>()?;
                    // Every cursor checks the norms it may be scored with.
                    norms = scoring_norms(seg, *field, &mut cursors)?;
                    positions.push((cursors, *off));
                }
                Some(Box::new(MultiPhraseScorer::new(
                    positions,
                    *slop,
                    repeats.clone(),
                    (**sim).clone(),
                    norms,
                )))
            }
            Weight::Prefix {
                field,
                prefix,
                score,
            } => {
                let docs = prefix_docs(seg, *field, prefix)?;
                if docs.is_empty() {
                    None
                } else {
                    Some(Box::new(DocListScorer::new(docs, *score)))
                }
            }
            Weight::Automaton {
                field,
                nfa,
                bits,
                score,
            } => {
                let docs = if let Some(bits) = bits {
                    multiterm::automaton_docs(seg, *field, &automaton::Utf8(&**bits))?
                } else if nfa.has_loop() {
                    multiterm::automaton_docs(seg, *field, &automaton::LazyDfa::new(nfa))?
                } else {
                    multiterm::automaton_docs(seg, *field, &automaton::Utf8(&**nfa))?
                };
                if docs.is_empty() {
                    None
                } else {
                    Some(Box::new(DocListScorer::new(docs, *score)))
                }
            }
            Weight::Const { inner, score } => inner
                .scorer(seg, ord)?
                .map(|s| Box::new(ConstScorer::new(s, *score)) as Box<dyn Scorer>),
            Weight::DisMax { subs, tie } => {
                let subs: Vec<Box<dyn Scorer>> =
                    scorers(seg, ord, subs)?.into_iter().flatten().collect();
                if subs.is_empty() {
                    None
                } else {
                    Some(Box::new(DisjunctionScorer::dis_max(subs, *tie)))
                }
            }
            Weight::Boosting {
                positive,
                negative,
                factor,
            } => match positive.scorer(seg, ord)? {
                None => None,
                Some(pos) => match negative.scorer(seg, ord)? {
                    None => Some(pos),
                    Some(neg) => Some(Box::new(BoostingScorer::new(pos, neg, *factor))),
                },
            },
            Weight::Range { field, spec, score } => {
                let docs = range::range_docs(seg, *field, spec)?;
                if docs.is_empty() {
                    None
                } else {
                    Some(Box::new(DocListScorer::new(docs, *score)))
                }
            }
            Weight::Bool {
                must,
                filter,
                should,
                must_not,
                min_should,
            } => bool_scorer(seg, ord, must, filter, should, must_not, *min_should)?,
        })
    }
}

/// All documents of `seg` holding a term of `field` that starts with `prefix`, sorted.
fn prefix_docs(seg: &SegmentReader, field: u32, prefix: &str) -> Result<Vec<u32>> {
    use fst::{IntoStreamer, Streamer};
    let Some(dict) = seg.terms(field)? else {
        return Ok(Vec::new());
    };
    let mut docs = range::DocUnion::new(seg);
    let mut stream = dict.map().range().ge(prefix.as_bytes()).into_stream();
    while let Some((key, offset)) = stream.next() {
        if !key.starts_with(prefix.as_bytes()) {
            break;
        }
        docs.add_term(field, offset)?;
    }
    Ok(docs.finish())
}

fn scorers(seg: &SegmentReader, ord: usize, ws: &[Weight]) -> Result<Vec<Option<Box<dyn Scorer>>>> {
    ws.iter().map(|w| w.scorer(seg, ord)).collect()
}

/// Lucene's BooleanWeight logic: required (must + filter) AND'ed, optional (should) summed in
/// when required exist or OR'ed with `min_should` otherwise, prohibited (must_not) excluded.
fn bool_scorer(
    seg: &SegmentReader,
    ord: usize,
    must: &[Weight],
    filter: &[Weight],
    should: &[Weight],
    must_not: &[Weight],
    min_should: u32,
) -> Result<Option<Box<dyn Scorer>>> {
    if must.len() > 1
        && min_should == 0
        && filter.is_empty()
        && should.is_empty()
        && must_not.is_empty()
        && must.iter().all(|w| matches!(w, Weight::Term { .. }))
    {
        // A pure conjunction of terms: monomorphic leapfrog.
        let mut terms = Vec::with_capacity(must.len());
        for w in must {
            match w.term_scorer(seg, ord)? {
                Some(t) => terms.push(t),
                None => return Ok(None),
            }
        }
        return Ok(Some(Box::new(TermConjunction::new(terms))));
    }
    let mut required: Vec<(Box<dyn Scorer>, bool)> = Vec::new();
    for s in scorers(seg, ord, must)? {
        match s {
            Some(s) => required.push((s, true)),
            None => return Ok(None),
        }
    }
    for s in scorers(seg, ord, filter)? {
        match s {
            Some(s) => required.push((s, false)),
            None => return Ok(None),
        }
    }
    let optional: Vec<Box<dyn Scorer>> = scorers(seg, ord, should)?.into_iter().flatten().collect();
    let min_should = min_should as usize;
    if min_should > optional.len() {
        return Ok(None);
    }
    let main: Box<dyn Scorer> = if required.is_empty() {
        if optional.is_empty() {
            return Ok(None);
        }
        disjunction(optional, min_should.max(1))
    } else {
        if min_should > 0 {
            required.push((disjunction(optional, min_should), true));
            conjunction(required)
        } else if optional.is_empty() {
            conjunction(required)
        } else {
            Box::new(ReqOptScorer::new(
                conjunction(required),
                disjunction(optional, 1),
            ))
        }
    };
    let prohibited: Vec<Box<dyn Scorer>> =
        scorers(seg, ord, must_not)?.into_iter().flatten().collect();
    if prohibited.is_empty() {
        return Ok(Some(main));
    }
    Ok(Some(Box::new(ExclusionScorer::new(
        main,
        disjunction(prohibited, 1),
    ))))
}

fn disjunction(mut subs: Vec<Box<dyn Scorer>>, min: usize) -> Box<dyn Scorer> {
    if subs.len() == 1 && min <= 1 {
        return subs.pop().expect("one");
    }
    Box::new(DisjunctionScorer::new(subs, min))
}

fn conjunction(mut subs: Vec<(Box<dyn Scorer>, bool)>) -> Box<dyn Scorer> {
    if subs.len() == 1 {
        let (s, scoring) = subs.pop().expect("one");
        return if scoring {
            s
        } else {
            Box::new(ConstScorer::new(s, 0.0))
        };
    }
    Box::new(ConjunctionScorer::new(subs))
}

/// A phrase's entries in a segment with pairs: the pair terms looked up (one missing: the
/// phrase does not occur here), then the cover by the rarest pairs and the other words.
#[allow(clippy::too_many_arguments)]
fn phrase_pieces(
    seg: &SegmentReader,
    f: u32,
    terms: &[(u32, String)],
    slots: &[(usize, u32)],
    pairable: &[bool],
    pair_terms: &[String],
    pair_of: &[usize],
    words: Vec<(TermInfo, Bytes)>,
) -> Result<Option<PhraseEntries>> {
    let mut pairs = Vec::with_capacity(pair_terms.len());
    for t in pair_terms {
        match seg.pair_info(f, t.as_bytes())? {
            Some(e) => pairs.push(e),
            None => return Ok(None),
        }
    }
    let pieces = crate::pairs::cover(pairable, terms.len(), |pc| {
        u64::from(if pc.pair {
            pairs[pair_of[pc.term]].0.doc_freq
        } else {
            words[slots[pc.term].0].0.doc_freq
        })
    });
    // Distinct pieces: `Ok(pair index)` or `Err(word slot)`.
    let mut keys: Vec<std::result::Result<usize, usize>> = Vec::with_capacity(pieces.len());
    let mut piece_slots = Vec::with_capacity(pieces.len());
    for pc in pieces {
        let key = if pc.pair {
            Ok(pair_of[pc.term])
        } else {
            Err(slots[pc.term].0)
        };
        piece_slots.push((intern(&mut keys, key), terms[pc.term].0));
    }
    let infos = keys
        .iter()
        .map(|k| match *k {
            Ok(p) => pairs[p].clone(),
            Err(w) => words[w].clone(),
        })
        .collect();
    Ok(Some(PhraseEntries {
        infos,
        piece_slots: Some(piece_slots),
    }))
}
