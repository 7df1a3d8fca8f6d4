//! Where does the next token start and end? The Unicode path of the standard tokenizer: a
//! longest-match scanner equivalent to Lucene 10's JFlex grammar `StandardTokenizerImpl.jflex`
//! (UAX#29 word-break rules plus TR#51 emoji sequences, Unicode 12.1 properties).
//!
//! At each position the scanner tries every token rule of the grammar and keeps the longest match
//! (JFlex semantics); when no token rule matches, one code point is skipped (the grammar's `[^]`
//! rule, whose matches are not emitted). The token rules are:
//!
//! * word / number (`ALPHANUM`, `NUM`, `HANGUL`, `KATAKANA`): WB5-WB13b as written in Lucene's
//!   grammar, e.g. `ExtendNumLet* (Katakana-run | (Hebrew-quote | Numeric-run | AHLetter-run)+)
//!   (ExtendNumLet+ ...)* ExtendNumLet*`, implemented by the DFA in [`word_match`];
//! * emoji sequences (`EMOJI`): the grammar's `emoji_sequence` rule, implemented by the small NFA
//!   in [`emoji_match`];
//! * `ComplexContext+` (`SOUTHEAST_ASIAN`), and single `Han` / `Hiragana` characters.
//!
//! Every base character absorbs the Format / Extend / ZWJ characters that follow it (WB4).

use std::sync::OnceLock;

use super::tables::RANGES;

pub(crate) const F_ALETTER: u32 = 1;
pub(crate) const F_HEBREW: u32 = 1 << 1;
pub(crate) const F_NUMERIC: u32 = 1 << 2;
pub(crate) const F_KATAKANA: u32 = 1 << 3;
pub(crate) const F_MIDLETTER: u32 = 1 << 4;
pub(crate) const F_MIDNUM: u32 = 1 << 5;
pub(crate) const F_MIDNUMLET: u32 = 1 << 6;
pub(crate) const F_SQUOTE: u32 = 1 << 7;
pub(crate) const F_DQUOTE: u32 = 1 << 8;
pub(crate) const F_EXTNUMLET: u32 = 1 << 9;
/// WB Format, Extend or ZWJ.
pub(crate) const F_EXT: u32 = 1 << 10;
pub(crate) const F_ZWJ: u32 = 1 << 11;
pub(crate) const F_HAN: u32 = 1 << 12;
pub(crate) const F_HIRAGANA: u32 = 1 << 13;
/// Line_Break = Complex_Context (Thai, Lao, Myanmar, Khmer, ...).
pub(crate) const F_SA: u32 = 1 << 14;
pub(crate) const F_RI: u32 = 1 << 15;
/// The grammar's `EmojiChar`: Extended_Pictographic, or Emoji minus (regional indicators,
/// keycap bases `[0-9#*]`, `©®™〰〽` and emoji modifiers).
pub(crate) const F_EMOJI_CHAR: u32 = 1 << 16;
pub(crate) const F_EMOJI_MOD: u32 = 1 << 18;
pub(crate) const F_EMOJI_MOD_BASE: u32 = 1 << 19;
/// Changed by Java's `Character.toLowerCase(int)`.
pub(crate) const F_LOWER_CHANGES: u32 = 1 << 20;

/// Flags of every BMP code point by direct lookup (an index into the few distinct flag sets),
/// built once from [`RANGES`]; supplementary code points are binary-searched.
pub(crate) struct FlagTable {
    bmp: Vec<u8>,
    values: Vec<u32>,
}

static FLAG_TABLE: OnceLock<FlagTable> = OnceLock::new();

impl FlagTable {
    pub(crate) fn get() -> &'static FlagTable {
        FLAG_TABLE.get_or_init(|| {
            let mut values = vec![0u32];
            let mut bmp = vec![0u8; 0x10000];
            for &(lo, hi, f) in RANGES.iter().take_while(|r| r.0 < 0x10000) {
                let k = match values.iter().position(|&v| v == f) {
                    Some(k) => k,
                    None => {
                        values.push(f);
                        values.len() - 1
                    }
                };
                let k = u8::try_from(k).expect("at most 256 distinct flag sets in tables.rs");
                bmp[lo as usize..=hi.min(0xffff) as usize].fill(k);
            }
            FlagTable { bmp, values }
        })
    }

    #[inline]
    pub(crate) fn flags(&self, c: char) -> u32 {
        let c = c as u32;
        if c < 0x10000 {
            return self.values[self.bmp[c as usize] as usize];
        }
        match RANGES.binary_search_by(|&(lo, hi, _)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        }) {
            Ok(i) => RANGES[i].2,
            Err(_) => 0,
        }
    }
}

/// One decoded code point of the text being scanned.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cp {
    pub(crate) c: char,
    pub(crate) flags: u32,
}

/// Longest token match starting at `start`, looking at no code point at or after `limit`.
/// Returns the end index (exclusive), or `None` if no token rule matches.
pub(crate) fn longest_match(cps: &[Cp], start: usize, limit: usize) -> Option<usize> {
    let cps = &cps[..limit];
    let f = cps[start].flags;
    let mut best = word_match(cps, start);
    if f & (F_EMOJI_CHAR | F_EMOJI_MOD | F_EMOJI_MOD_BASE | F_ZWJ | F_RI) != 0
        || matches!(cps[start].c, '0'..='9' | '#' | '*')
    {
        best = best.max(emoji_match(cps, start));
    }
    if f & F_SA != 0 {
        let mut i = start + 1;
        while i < cps.len() && cps[i].flags & (F_SA | F_EXT) != 0 {
            i += 1;
        }
        best = best.max(Some(i));
    }
    if f & (F_HAN | F_HIRAGANA) != 0 {
        best = best.max(Some(skip_ext(cps, start + 1)));
    }
    best
}

#[inline]
fn skip_ext(cps: &[Cp], mut i: usize) -> usize {
    while i < cps.len() && cps[i].flags & F_EXT != 0 {
        i += 1;
    }
    i
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum W {
    Start,
    /// Only ExtendNumLet seen so far.
    LeadE,
    /// Last base: an ALetter (not Hebrew).
    A,
    /// Last base: a Hebrew letter that can begin the grammar's `Hebrew (SingleQuote | DoubleQuote
    /// Hebrew)` element (it is not the right-hand side of a mid-letter join).
    H,
    /// Last base: a Hebrew letter joined by a mid-letter (`A ' H`): behaves like `A`, so a
    /// following single quote is not part of the token unless a letter follows it.
    HJ,
    /// Hebrew + Double_Quote + Hebrew (WB7b/c): complete; no mid-letter may follow.
    HDqH,
    N,
    K,
    /// ExtendNumLet after some content.
    E,
    /// AHLetter + (MidLetter | MidNumLet | Single_Quote): needs an AHLetter.
    AMid,
    /// Numeric + (MidNum | MidNumLet | Single_Quote): needs a Numeric.
    NMid,
    /// Hebrew + Single_Quote: complete (WB7a), or continues like AMid.
    HSq,
    /// Hebrew + Double_Quote: needs a Hebrew letter (WB7b/c).
    HDq,
}

/// The word / number rule: WB5-WB13b with WB4, as in Lucene's grammar.
pub(crate) fn word_match(cps: &[Cp], start: usize) -> Option<usize> {
    let mut st = W::Start;
    let mut accepted = None;
    let mut i = start;
    while i < cps.len() {
        let f = cps[i].flags;
        if f & F_EXT != 0 && st != W::Start {
            // WB4: Extend/Format/ZWJ attach to whatever precedes them.
            i += 1;
            if matches!(
                st,
                W::A | W::H | W::HJ | W::HDqH | W::N | W::K | W::E | W::HSq
            ) {
                accepted = Some(i);
            }
            continue;
        }
        let is_a = f & F_ALETTER != 0;
        let is_h = f & F_HEBREW != 0;
        let is_n = f & F_NUMERIC != 0;
        let is_k = f & F_KATAKANA != 0;
        let is_e = f & F_EXTNUMLET != 0;
        let letter = if is_h {
            Some(W::H)
        } else if is_a {
            Some(W::A)
        } else {
            None
        };
        let next = match st {
            W::Start | W::LeadE | W::E => {
                if let Some(l) = letter {
                    Some(l)
                } else if is_n {
                    Some(W::N)
                } else if is_k {
                    Some(W::K)
                } else if is_e {
                    Some(if st == W::Start || st == W::LeadE {
                        W::LeadE
                    } else {
                        W::E
                    })
                } else {
                    None
                }
            }
            W::A | W::H | W::HJ | W::HSq | W::HDqH => {
                if let Some(l) = letter {
                    Some(l)
                } else if is_n {
                    Some(W::N)
                } else if is_e {
                    Some(W::E)
                } else if st == W::HSq || st == W::HDqH {
                    None
                } else if st == W::H && f & F_SQUOTE != 0 {
                    Some(W::HSq)
                } else if st == W::H && f & F_DQUOTE != 0 {
                    Some(W::HDq)
                } else if f & (F_MIDLETTER | F_MIDNUMLET | F_SQUOTE) != 0 {
                    Some(W::AMid)
                } else {
                    None
                }
            }
            W::N => {
                if let Some(l) = letter {
                    Some(l)
                } else if is_n {
                    Some(W::N)
                } else if is_e {
                    Some(W::E)
                } else if f & (F_MIDNUM | F_MIDNUMLET | F_SQUOTE) != 0 {
                    Some(W::NMid)
                } else {
                    None
                }
            }
            W::K => {
                if is_k {
                    Some(W::K)
                } else if is_e {
                    Some(W::E)
                } else {
                    None
                }
            }
            W::AMid => letter.map(|l| if l == W::H { W::HJ } else { l }),
            W::NMid => is_n.then_some(W::N),
            W::HDq => is_h.then_some(W::HDqH),
        };
        match next {
            Some(s) => {
                st = s;
                i += 1;
                if !matches!(st, W::LeadE | W::AMid | W::NMid | W::HDq) {
                    accepted = Some(i);
                }
            }
            None => break,
        }
    }
    accepted
}

// Emoji NFA states (bit positions). F_* = first element of a sequence, N_* = a later one.
const P0: u32 = 0; // start of an element: ZWJ* (EmojiChar FE0F? | MBase? Mod)
const P0Z: u32 = 1; // after ZWJ*: needs EmojiChar or a modifier base
const PC: u32 = 2; // after EmojiChar Ext*: complete
const PF: u32 = 3; // after EmojiChar Ext* FE0F: complete
const PB: u32 = 4; // after modifier base Ext*: needs a modifier
const PM: u32 = 5; // after modifier Ext*: complete
const NEXT: u32 = 6; // offset of the N_* copy of the six states above
const TAG: u32 = 12; // inside TagSpec+
const DONE: u32 = 13; // after TagTerm
const KB: u32 = 14; // keycap base Ext*
const KF: u32 = 15; // keycap base Ext* FE0F
const KC: u32 = 16; // keycap complete
const R1: u32 = 17; // one regional indicator
const R2: u32 = 18; // two regional indicators: complete

const fn bit(s: u32) -> u32 {
    1 << s
}

const ACCEPTING: u32 = bit(PC)
    | bit(PF)
    | bit(PM)
    | bit(PC + NEXT)
    | bit(PF + NEXT)
    | bit(PM + NEXT)
    | bit(DONE)
    | bit(KC)
    | bit(R2);

/// The emoji rule of Lucene's grammar:
/// `Elem ((ZWJ Elem)* | TagSpec+ TagTerm) | KeyCapBase Ext* FE0F? 20E3 Ext* | RI Ext* RI Ext*`.
pub(crate) fn emoji_match(cps: &[Cp], start: usize) -> Option<usize> {
    let mut set = bit(P0);
    let mut accepted = None;
    let mut i = start;
    let mut first = true;
    while i < cps.len() {
        let Cp { c, flags: f } = cps[i];
        let ext_sans = f & F_EXT != 0 && c != '\u{FE0E}' && c != '\u{FE0F}';
        let zwj = f & F_ZWJ != 0;
        let mut next = 0u32;
        if first {
            // Alternatives that can only start at the first code point.
            if matches!(c, '0'..='9' | '#' | '*') {
                next |= bit(KB);
            }
            if f & F_RI != 0 {
                next |= bit(R1);
            }
            first = false;
        }
        for base in [0, NEXT] {
            if set & bit(P0 + base) != 0 {
                if zwj {
                    next |= bit(P0Z + base);
                }
                if f & F_EMOJI_CHAR != 0 {
                    next |= bit(PC + base);
                }
                if f & F_EMOJI_MOD_BASE != 0 {
                    next |= bit(PB + base);
                }
                if f & F_EMOJI_MOD != 0 {
                    next |= bit(PM + base);
                }
            }
            if set & bit(P0Z + base) != 0 {
                if zwj {
                    next |= bit(P0Z + base);
                }
                if f & F_EMOJI_CHAR != 0 {
                    next |= bit(PC + base);
                }
                if f & F_EMOJI_MOD_BASE != 0 {
                    next |= bit(PB + base);
                }
            }
            if set & bit(PC + base) != 0 {
                if ext_sans {
                    next |= bit(PC + base);
                }
                if c == '\u{FE0F}' {
                    next |= bit(PF + base);
                }
            }
            if set & bit(PB + base) != 0 {
                if ext_sans {
                    next |= bit(PB + base);
                }
                if f & F_EMOJI_MOD != 0 {
                    next |= bit(PM + base);
                }
            }
            if set & bit(PM + base) != 0 && ext_sans {
                next |= bit(PM + base);
            }
            if set & (bit(PC + base) | bit(PF + base) | bit(PM + base)) != 0 {
                if zwj {
                    next |= bit(P0 + NEXT);
                }
                if base == 0 && ('\u{E0020}'..='\u{E007E}').contains(&c) {
                    next |= bit(TAG);
                }
            }
        }
        if set & bit(TAG) != 0 {
            if ('\u{E0020}'..='\u{E007E}').contains(&c) {
                next |= bit(TAG);
            }
            if c == '\u{E007F}' {
                next |= bit(DONE);
            }
        }
        if set & bit(KB) != 0 {
            if ext_sans {
                next |= bit(KB);
            }
            if c == '\u{FE0F}' {
                next |= bit(KF);
            }
            if c == '\u{20E3}' {
                next |= bit(KC);
            }
        }
        if set & bit(KF) != 0 && c == '\u{20E3}' {
            next |= bit(KC);
        }
        if set & bit(KC) != 0 && ext_sans {
            next |= bit(KC);
        }
        if set & bit(R1) != 0 {
            if f & F_EXT != 0 {
                next |= bit(R1);
            }
            if f & F_RI != 0 {
                next |= bit(R2);
            }
        }
        if set & bit(R2) != 0 && f & F_EXT != 0 {
            next |= bit(R2);
        }
        set = next;
        if set == 0 {
            break;
        }
        i += 1;
        if set & ACCEPTING != 0 {
            accepted = Some(i);
        }
    }
    accepted
}
