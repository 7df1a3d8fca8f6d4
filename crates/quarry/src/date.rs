//! Dates as Elasticsearch's `date` field takes them: text in one of several formats (`format`,
//! alternatives joined by `||`, default `strict_date_optional_time||epoch_millis`), stored as
//! milliseconds since the epoch (UTC); date math (`now-1d/d`, `2020-01-01||+1M/d`) with the
//! rounding rules of range queries; and calendar units in a time zone for date histograms.
//!
//! Formats: the named formats of Elasticsearch that applications use (`strict_date_optional_time`,
//! `date_optional_time`, `strict_date`, `date`, `strict_date_time`, `date_time`, the `_no_millis`
//! variants, `basic_date`, `basic_date_time`, `year_month_day`, `year_month`, `year`,
//! `date_hour_minute_second` and its `_millis` / `_fraction` variants, `date_hour_minute`,
//! `date_hour`, `hour_minute_second`, `hour_minute`, `epoch_millis`, `epoch_second`) and custom
//! patterns in the letters of Java's `DateTimeFormatter` that Elasticsearch accepts: `y`/`u`
//! year, `M` month (`MMM`, `MMMM` English names), `d` day, `H` hour, `h` + `a` 12-hour clock, `m`,
//! `s`, `S` fraction, `X`/`Z`/`x` offset, `E` day name, `'quoted'` literals and `[optional]`
//! sections. The `strict_` formats want exactly the digits the pattern shows; the others take
//! one digit and up.
//!
//! A text without an offset is read in the time zone given (UTC by default), as Elasticsearch's
//! `time_zone` parameter does. Fields a text leaves out take their smallest value, or, when the
//! date is the upper end of a range (`lte`, `gt`: [`Rounding::Up`]), their largest, as
//! Elasticsearch's round-up parser does: `lte: "2020-01"` includes all of January.
//!
//! Calendar arithmetic and time zones are `jiff`'s.
use jiff::civil::{Date, DateTime, Time};
use jiff::tz::{Offset, TimeZone};
use jiff::{Timestamp, ToSpan, ZonedDateTime};

/// What can go wrong with a date, a format or date math; messages as Elasticsearch's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DateError {
    #[error("failed to parse date field [{input}] with format [{format}]")]
    Parse { input: String, format: String },
    #[error("invalid date format [{format}]: {reason}")]
    Format { format: String, reason: String },
    #[error("invalid date math [{input}]: {reason}")]
    Math { input: String, reason: String },
    #[error("unknown time zone [{0}]")]
    TimeZone(String),
    #[error("date [{0}] is outside the supported range")]
    OutOfRange(String),
}

/// Whether missing fields and `/unit` rounding go to the start or the end of their unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rounding {
    /// The first millisecond (`gte`, `lt`, and every stored value).
    Down,
    /// The last millisecond (`lte`, `gt`).
    Up,
}

/// A calendar unit of date math and of calendar-interval date histograms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
}

impl Unit {
    /// The unit of a date-math letter (`y M w d h H m s`).
    pub fn from_math(c: char) -> Option<Unit> {
        Some(match c {
            'y' => Unit::Year,
            'M' => Unit::Month,
            'w' => Unit::Week,
            'd' => Unit::Day,
            'h' | 'H' => Unit::Hour,
            'm' => Unit::Minute,
            's' => Unit::Second,
            _ => return None,
        })
    }

    /// The unit of a `calendar_interval` (`1d`, `day`, `month`, `1q`, ...).
    pub fn from_calendar_interval(s: &str) -> Option<Unit> {
        Some(match s {
            "1s" | "second" => Unit::Second,
            "1m" | "minute" => Unit::Minute,
            "1h" | "hour" => Unit::Hour,
            "1d" | "day" => Unit::Day,
            "1w" | "week" => Unit::Week,
            "1M" | "month" => Unit::Month,
            "1q" | "quarter" => Unit::Quarter,
            "1y" | "year" => Unit::Year,
            _ => return None,
        })
    }
}

/// One piece of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Year { width: usize },
    Month { width: usize },
    MonthName { full: bool },
    Day { width: usize },
    DayName { full: bool },
    Hour { width: usize, twelve: bool },
    Minute { width: usize },
    Second { width: usize },
    Fraction { width: usize },
    AmPm,
    Offset,
    Literal(char),
    Optional(Vec<Piece>),
}

impl Piece {
    fn is_numeric(&self) -> bool {
        matches!(
            self,
            Piece::Year { .. }
                | Piece::Month { .. }
                | Piece::Day { .. }
                | Piece::Hour { .. }
                | Piece::Minute { .. }
                | Piece::Second { .. }
                | Piece::Fraction { .. }
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Alternative {
    EpochMillis,
    EpochSecond,
    Pattern { pieces: Vec<Piece>, strict: bool },
}

/// A `format`: alternatives tried in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DateFormat {
    spec: String,
    alternatives: Vec<Alternative>,
}

/// The default format of a `date` field.
pub const DEFAULT_FORMAT: &str = "strict_date_optional_time||epoch_millis";

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// The pattern behind a named format, and whether it is strict.
fn named(name: &str) -> Option<(&'static str, bool)> {
    let (base, strict) = match name.strip_prefix("strict_") {
        Some(b) => (b, true),
        None => (name, false),
    };
    let p = match base {
        "date_optional_time" => "yyyy[-MM[-dd]]['T'HH[:mm[:ss[.SSSSSSSSS]]]][XXX]",
        "date" | "year_month_day" => "yyyy-MM-dd",
        "date_time" => "yyyy-MM-dd'T'HH:mm:ss.SSSXXX",
        "date_time_no_millis" => "yyyy-MM-dd'T'HH:mm:ssXXX",
        "basic_date" => "yyyyMMdd",
        "basic_date_time" => "yyyyMMdd'T'HHmmss.SSSXXX",
        "basic_date_time_no_millis" => "yyyyMMdd'T'HHmmssXXX",
        "year_month" => "yyyy-MM",
        "year" => "yyyy",
        "date_hour" => "yyyy-MM-dd'T'HH",
        "date_hour_minute" => "yyyy-MM-dd'T'HH:mm",
        "date_hour_minute_second" => "yyyy-MM-dd'T'HH:mm:ss",
        "date_hour_minute_second_millis" => "yyyy-MM-dd'T'HH:mm:ss.SSS",
        "date_hour_minute_second_fraction" => "yyyy-MM-dd'T'HH:mm:ss.SSSSSSSSS",
        "hour_minute_second" => "HH:mm:ss",
        "hour_minute" => "HH:mm",
        "hour" => "HH",
        _ => return None,
    };
    Some((p, strict))
}

fn compile(pattern: &str, spec: &str) -> Result<Vec<Piece>, DateError> {
    let bad = |reason: String| DateError::Format {
        format: spec.to_string(),
        reason,
    };
    let chars: Vec<char> = pattern.chars().collect();
    let mut stack: Vec<Vec<Piece>> = vec![Vec::new()];
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let mut run = 1;
        while i + run < chars.len() && chars[i + run] == c && c.is_ascii_alphabetic() {
            run += 1;
        }
        let piece = match c {
            'y' | 'u' => Some(Piece::Year { width: run }),
            'M' | 'L' if run >= 3 => Some(Piece::MonthName { full: run >= 4 }),
            'M' | 'L' => Some(Piece::Month { width: run }),
            'd' => Some(Piece::Day { width: run }),
            'E' => Some(Piece::DayName { full: run >= 4 }),
            'H' => Some(Piece::Hour {
                width: run,
                twelve: false,
            }),
            'h' => Some(Piece::Hour {
                width: run,
                twelve: true,
            }),
            'm' => Some(Piece::Minute { width: run }),
            's' => Some(Piece::Second { width: run }),
            'S' => Some(Piece::Fraction { width: run }),
            'a' => Some(Piece::AmPm),
            'X' | 'Z' | 'x' => Some(Piece::Offset),
            '[' => {
                stack.push(Vec::new());
                None
            }
            ']' => {
                let inner = stack
                    .pop()
                    .filter(|_| !stack.is_empty())
                    .ok_or_else(|| bad("unbalanced ']'".into()))?;
                Some(Piece::Optional(inner))
            }
            '\'' => {
                let end = chars[i + 1..]
                    .iter()
                    .position(|&x| x == '\'')
                    .ok_or_else(|| bad("unterminated quote".into()))?;
                let top = stack.last_mut().expect("never empty");
                if end == 0 {
                    top.push(Piece::Literal('\''));
                }
                for &l in &chars[i + 1..i + 1 + end] {
                    top.push(Piece::Literal(l));
                }
                i += end + 2;
                continue;
            }
            c if c.is_ascii_alphabetic() => {
                return Err(bad(format!("unsupported pattern letter '{c}'")));
            }
            c => Some(Piece::Literal(c)),
        };
        if let Some(p) = piece {
            stack.last_mut().expect("never empty").push(p);
        }
        i += if c.is_ascii_alphabetic() { run } else { 1 };
    }
    if stack.len() != 1 {
        return Err(bad("unbalanced '['".into()));
    }
    Ok(stack.pop().expect("one level"))
}

/// The fields a text gave; `None` where it left one out.
#[derive(Debug, Default, Clone)]
struct Fields {
    year: Option<i64>,
    month: Option<i64>,
    day: Option<i64>,
    hour: Option<i64>,
    minute: Option<i64>,
    second: Option<i64>,
    nanos: Option<i64>,
    pm: Option<bool>,
    offset_seconds: Option<i32>,
}

struct Cursor<'t> {
    text: &'t [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn digits(&mut self, min: usize, max: usize) -> Option<i64> {
        let start = self.pos;
        while self.pos < self.text.len()
            && self.pos - start < max
            && self.text[self.pos].is_ascii_digit()
        {
            self.pos += 1;
        }
        let n = self.pos - start;
        if n < min {
            self.pos = start;
            return None;
        }
        std::str::from_utf8(&self.text[start..self.pos])
            .ok()?
            .parse()
            .ok()
    }

    fn word(&mut self, words: &[&str], full: bool) -> Option<usize> {
        let rest = &self.text[self.pos..];
        for (i, w) in words.iter().enumerate() {
            let w = if full { *w } else { &w[..3] };
            if rest.len() >= w.len() && rest[..w.len()].eq_ignore_ascii_case(w.as_bytes()) {
                self.pos += w.len();
                return Some(i);
            }
        }
        None
    }

    fn offset(&mut self) -> Option<i32> {
        match self.text.get(self.pos)? {
            b'Z' | b'z' => {
                self.pos += 1;
                Some(0)
            }
            &s @ (b'+' | b'-') => {
                let start = self.pos;
                self.pos += 1;
                let h = self.digits(2, 2);
                let Some(h) = h else {
                    self.pos = start;
                    return None;
                };
                if self.text.get(self.pos) == Some(&b':') {
                    self.pos += 1;
                }
                let m = self.digits(2, 2).unwrap_or(0);
                let secs = (h * 3600 + m * 60) as i32;
                Some(if s == b'-' { -secs } else { secs })
            }
            _ => None,
        }
    }
}

fn parse_pieces(pieces: &[Piece], strict: bool, cur: &mut Cursor, f: &mut Fields) -> bool {
    for (i, p) in pieces.iter().enumerate() {
        // A number followed directly by another (`yyyyMMdd`) takes exactly its pattern's digits.
        let adjacent = pieces.get(i + 1).is_some_and(Piece::is_numeric);
        let strict = strict || adjacent;
        // Digits a numeric field takes: `M` one or two; `MM` exactly two when strict, one or
        // two otherwise.
        let (min, max) = match p {
            Piece::Month { width }
            | Piece::Day { width }
            | Piece::Hour { width, .. }
            | Piece::Minute { width }
            | Piece::Second { width } => match (*width, strict) {
                (1, _) => (1, 2),
                (w, true) => (w, w),
                (w, false) => (1, w),
            },
            _ => (1, 2),
        };
        let ok = match p {
            Piece::Year { width } => {
                let (lo, hi) = if strict {
                    (4.max(*width), 4.max(*width))
                } else {
                    (1, 9)
                };
                let neg = !strict && cur.text.get(cur.pos) == Some(&b'-');
                if neg {
                    cur.pos += 1;
                }
                cur.digits(
                    if *width == 2 { 2 } else { lo },
                    if *width == 2 { 2 } else { hi },
                )
                .map(|y| {
                    let y = if *width == 2 { 2000 + y } else { y };
                    f.year = Some(if neg { -y } else { y })
                })
                .is_some()
            }
            Piece::Month { .. } => cur.digits(min, max).map(|v| f.month = Some(v)).is_some(),
            Piece::MonthName { full } => cur
                .word(&MONTHS, *full)
                .map(|i| f.month = Some(i as i64 + 1))
                .is_some(),
            Piece::Day { .. } => cur.digits(min, max).map(|v| f.day = Some(v)).is_some(),
            Piece::DayName { full } => cur.word(&DAYS, *full).is_some(),
            Piece::Hour { .. } => cur.digits(min, max).map(|v| f.hour = Some(v)).is_some(),
            Piece::Minute { .. } => cur.digits(min, max).map(|v| f.minute = Some(v)).is_some(),
            Piece::Second { .. } => cur.digits(min, max).map(|v| f.second = Some(v)).is_some(),
            Piece::Fraction { .. } => {
                let start = cur.pos;
                match cur.digits(1, 9) {
                    Some(v) => {
                        let n = cur.pos - start;
                        f.nanos = Some(v * 10i64.pow((9 - n) as u32));
                        true
                    }
                    None => false,
                }
            }
            Piece::AmPm => match cur.word(&["AM", "PM"], true) {
                Some(i) => {
                    f.pm = Some(i == 1);
                    true
                }
                None => false,
            },
            Piece::Offset => cur.offset().map(|o| f.offset_seconds = Some(o)).is_some(),
            Piece::Literal(c) => {
                let mut buf = [0u8; 4];
                let s = c.encode_utf8(&mut buf).as_bytes();
                if cur.text[cur.pos..].starts_with(s) {
                    cur.pos += s.len();
                    true
                } else {
                    false
                }
            }
            Piece::Optional(inner) => {
                let (save_pos, save_f) = (cur.pos, f.clone());
                if !parse_pieces(inner, strict, cur, f) {
                    cur.pos = save_pos;
                    *f = save_f;
                }
                true
            }
        };
        if !ok {
            return false;
        }
    }
    true
}

fn days_in_month(year: i16, month: i8) -> i8 {
    Date::new(year, month, 1).map_or(31, |d| d.days_in_month())
}

/// Millis of the fields in `tz`, missing ones at their smallest or largest.
fn resolve(f: &Fields, tz: &TimeZone, rounding: Rounding) -> Option<i64> {
    let up = rounding == Rounding::Up;
    let year = i16::try_from(f.year.unwrap_or(1970)).ok()?;
    let month = i8::try_from(f.month.unwrap_or(if up { 12 } else { 1 })).ok()?;
    if !(1..=12).contains(&month) {
        return None;
    }
    let day = match f.day {
        Some(d) => i8::try_from(d).ok()?,
        None if up => days_in_month(year, month),
        None => 1,
    };
    let mut hour = f.hour.unwrap_or(if up { 23 } else { 0 });
    if let Some(pm) = f.pm {
        if !(1..=12).contains(&hour) {
            return None;
        }
        hour = hour % 12 + if pm { 12 } else { 0 };
    }
    let minute = f.minute.unwrap_or(if up { 59 } else { 0 });
    let second = f.second.unwrap_or(if up { 59 } else { 0 });
    let nanos = f.nanos.unwrap_or(if up { 999_999_999 } else { 0 });
    let date = Date::new(year, month, day).ok()?;
    let time = Time::new(
        i8::try_from(hour).ok()?,
        i8::try_from(minute).ok()?,
        i8::try_from(second).ok()?,
        i32::try_from(nanos).ok()?,
    )
    .ok()?;
    let dt = DateTime::from_parts(date, time);
    let ts = match f.offset_seconds {
        Some(o) => dt
            .to_zoned_datetime(TimeZone::fixed(Offset::from_seconds(o).ok()?))
            .ok()?
            .timestamp(),
        None => tz
            .to_ambiguous_zoned_datetime(dt)
            .compatible()
            .ok()?
            .timestamp(),
    };
    // Whole milliseconds, toward negative infinity.
    Some(ts.as_millisecond())
}

fn parse_epoch(text: &str, scale: i64) -> Option<i64> {
    let (int, frac) = match text.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (text, None),
    };
    let neg = int.starts_with('-');
    let digits = int.strip_prefix('-').unwrap_or(int);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: i64 = digits.parse().ok()?;
    let mut millis = whole.checked_mul(scale)?;
    if let Some(frac) = frac {
        if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let nanos: i64 = format!("{frac:0<9}").parse().ok()?;
        millis = millis.checked_add(nanos * scale / 1_000_000_000)?;
    }
    let v = if neg { -millis } else { millis };
    // jiff's (and so quarry's) supported range: years -9999 to 9999.
    Timestamp::from_millisecond(v).ok().map(|_| v)
}

impl DateFormat {
    /// Compiles a `format` (`||`-separated named formats or patterns).
    pub fn new(spec: &str) -> Result<DateFormat, DateError> {
        let mut alternatives = Vec::new();
        for part in spec.split("||").map(str::trim) {
            let alt = match part {
                "" => {
                    return Err(DateError::Format {
                        format: spec.to_string(),
                        reason: "empty alternative".into(),
                    })
                }
                "epoch_millis" => Alternative::EpochMillis,
                "epoch_second" => Alternative::EpochSecond,
                p => match named(p) {
                    Some((pattern, strict)) => Alternative::Pattern {
                        pieces: compile(pattern, spec)?,
                        strict,
                    },
                    None => Alternative::Pattern {
                        pieces: compile(p, spec)?,
                        strict: false,
                    },
                },
            };
            alternatives.push(alt);
        }
        Ok(DateFormat {
            spec: spec.to_string(),
            alternatives,
        })
    }

    /// The default format of `date` fields.
    pub fn default_format() -> DateFormat {
        DateFormat::new(DEFAULT_FORMAT).expect("the default format compiles")
    }

    /// The format as written.
    pub fn spec(&self) -> &str {
        &self.spec
    }

    /// Milliseconds since the epoch of `text`, read with the first alternative that takes all
    /// of it, in `tz` when the text has no offset.
    pub fn parse(&self, text: &str, tz: &TimeZone, rounding: Rounding) -> Result<i64, DateError> {
        for alt in &self.alternatives {
            let got = match alt {
                Alternative::EpochMillis => parse_epoch(text, 1),
                Alternative::EpochSecond => parse_epoch(text, 1000),
                Alternative::Pattern { pieces, strict } => {
                    let mut cur = Cursor {
                        text: text.as_bytes(),
                        pos: 0,
                    };
                    let mut f = Fields::default();
                    if parse_pieces(pieces, *strict, &mut cur, &mut f) && cur.pos == text.len() {
                        resolve(&f, tz, rounding)
                    } else {
                        None
                    }
                }
            };
            if let Some(v) = got {
                return Ok(v);
            }
        }
        Err(DateError::Parse {
            input: text.to_string(),
            format: self.spec.clone(),
        })
    }

    /// `millis` written in the first alternative (every optional section written out, the
    /// offset as `Z` in UTC), in `tz`.
    pub fn format(&self, millis: i64, tz: &TimeZone) -> Result<String, DateError> {
        let ts = Timestamp::from_millisecond(millis)
            .map_err(|_| DateError::OutOfRange(millis.to_string()))?;
        Ok(match &self.alternatives[0] {
            Alternative::EpochMillis => millis.to_string(),
            Alternative::EpochSecond => millis.div_euclid(1000).to_string(),
            Alternative::Pattern { pieces, .. } => {
                let z = ts.to_zoned_datetime(tz.clone());
                let mut out = String::new();
                write_pieces(pieces, &z, &mut out);
                out
            }
        })
    }
}

fn write_pieces(pieces: &[Piece], z: &ZonedDateTime, out: &mut String) {
    use std::fmt::Write;
    for p in pieces {
        match p {
            Piece::Year { width } if *width == 2 => {
                let _ = write!(out, "{:02}", z.year().rem_euclid(100));
            }
            Piece::Year { .. } => {
                let _ = write!(out, "{:04}", z.year());
            }
            Piece::Month { width } => {
                let _ = write!(out, "{:0w$}", z.month(), w = *width);
            }
            Piece::MonthName { full } => {
                let m = MONTHS[z.month() as usize - 1];
                out.push_str(if *full { m } else { &m[..3] });
            }
            Piece::Day { width } => {
                let _ = write!(out, "{:0w$}", z.day(), w = *width);
            }
            Piece::DayName { full } => {
                let d = DAYS[z.weekday().to_monday_zero_offset() as usize];
                out.push_str(if *full { d } else { &d[..3] });
            }
            Piece::Hour { width, twelve } => {
                let h = if *twelve {
                    (z.hour() + 11) % 12 + 1
                } else {
                    z.hour()
                };
                let _ = write!(out, "{:0w$}", h, w = *width);
            }
            Piece::Minute { width } => {
                let _ = write!(out, "{:0w$}", z.minute(), w = *width);
            }
            Piece::Second { width } => {
                let _ = write!(out, "{:0w$}", z.second(), w = *width);
            }
            Piece::Fraction { width } => {
                let millis = z.millisecond() as i64;
                let digits = format!("{millis:03}000000");
                out.push_str(&digits[..(*width).clamp(1, 3)]);
            }
            Piece::AmPm => out.push_str(if z.hour() < 12 { "AM" } else { "PM" }),
            Piece::Offset => {
                let secs = z.offset().seconds();
                if secs == 0 {
                    out.push('Z');
                } else {
                    let sign = if secs < 0 { '-' } else { '+' };
                    let a = secs.abs();
                    let _ = write!(out, "{sign}{:02}:{:02}", a / 3600, a % 3600 / 60);
                }
            }
            Piece::Literal(c) => out.push(*c),
            Piece::Optional(inner) => write_pieces(inner, z, out),
        }
    }
}

/// A time zone by IANA name (`Europe/Paris`), `UTC`/`Z`, or fixed offset (`+01:00`, `-0530`).
pub fn time_zone(name: &str) -> Result<TimeZone, DateError> {
    if matches!(name, "UTC" | "Z" | "utc" | "GMT") {
        return Ok(TimeZone::UTC);
    }
    let mut cur = Cursor {
        text: name.as_bytes(),
        pos: 0,
    };
    if let Some(o) = cur.offset() {
        if cur.pos == name.len() {
            return Offset::from_seconds(o)
                .map(TimeZone::fixed)
                .map_err(|_| DateError::TimeZone(name.to_string()));
        }
    }
    TimeZone::get(name).map_err(|_| DateError::TimeZone(name.to_string()))
}

fn span_of(unit: Unit, n: i64) -> Option<jiff::Span> {
    let n = i32::try_from(n).ok()?;
    Some(match unit {
        Unit::Second => n.seconds(),
        Unit::Minute => n.minutes(),
        Unit::Hour => n.hours(),
        Unit::Day => n.days(),
        Unit::Week => n.weeks(),
        Unit::Month => n.months(),
        Unit::Quarter => (n.checked_mul(3)?).months(),
        Unit::Year => n.years(),
    })
}

/// The start of the `unit` holding `millis`, in `tz` (weeks start on Monday, as in
/// Elasticsearch).
pub fn round_down(millis: i64, unit: Unit, tz: &TimeZone) -> Result<i64, DateError> {
    let out_of_range = || DateError::OutOfRange(millis.to_string());
    let z = Timestamp::from_millisecond(millis)
        .map_err(|_| out_of_range())?
        .to_zoned_datetime(tz.clone());
    let dt = z.datetime();
    let date = dt.date();
    let start = match unit {
        Unit::Second => dt.with().subsec_nanosecond(0).build(),
        Unit::Minute => dt.with().second(0).subsec_nanosecond(0).build(),
        Unit::Hour => dt.with().minute(0).second(0).subsec_nanosecond(0).build(),
        Unit::Day => Ok(date.to_datetime(Time::midnight())),
        Unit::Week => date
            .checked_sub((date.weekday().to_monday_zero_offset() as i32).days())
            .map(|d| d.to_datetime(Time::midnight())),
        Unit::Month => Ok(date.first_of_month().to_datetime(Time::midnight())),
        Unit::Quarter => Date::new(date.year(), (date.month() - 1) / 3 * 3 + 1, 1)
            .map(|d| d.to_datetime(Time::midnight())),
        Unit::Year => Ok(date.first_of_year().to_datetime(Time::midnight())),
    }
    .map_err(|_| out_of_range())?;
    let zoned = tz
        .to_ambiguous_zoned_datetime(start)
        .compatible()
        .map_err(|_| out_of_range())?;
    let ms = zoned.timestamp().as_millisecond();
    // A unit that starts in a gap of the zone (a DST jump at midnight) starts at the gap's end,
    // which never lies after the value itself.
    Ok(ms.min(millis))
}

/// `millis` moved by `n` units in `tz` (calendar-aware for days and longer).
pub fn add(millis: i64, unit: Unit, n: i64, tz: &TimeZone) -> Result<i64, DateError> {
    let out_of_range = || DateError::OutOfRange(millis.to_string());
    let z = Timestamp::from_millisecond(millis)
        .map_err(|_| out_of_range())?
        .to_zoned_datetime(tz.clone());
    let span = span_of(unit, n).ok_or_else(out_of_range)?;
    Ok(z.checked_add(span)
        .map_err(|_| out_of_range())?
        .timestamp()
        .as_millisecond())
}

/// Evaluates date math: `now` or `<date>||` followed by `+N<unit>`, `-N<unit>` and `/<unit>`
/// operations, or a plain date. Rounding (`/d`) and missing fields go down or up as `rounding`
/// says (see [`Rounding`]); `now_millis` is the request's `now`.
pub fn eval_math(
    expr: &str,
    format: &DateFormat,
    tz: &TimeZone,
    now_millis: i64,
    rounding: Rounding,
) -> Result<i64, DateError> {
    let (mut v, ops) = if let Some(rest) = expr.strip_prefix("now") {
        (now_millis, rest)
    } else if let Some((date, rest)) = expr.split_once("||") {
        (format.parse(date, tz, rounding)?, rest)
    } else {
        return format.parse(expr, tz, rounding);
    };
    let bad = |reason: &str| DateError::Math {
        input: expr.to_string(),
        reason: reason.to_string(),
    };
    let ops = ops.as_bytes();
    let mut i = 0;
    while i < ops.len() {
        let op = ops[i];
        i += 1;
        match op {
            b'/' => {
                let unit = ops
                    .get(i)
                    .and_then(|&c| Unit::from_math(c as char))
                    .ok_or_else(|| bad("'/' must be followed by a unit (y M w d h H m s)"))?;
                i += 1;
                let start = round_down(v, unit, tz)?;
                v = match rounding {
                    Rounding::Down => start,
                    Rounding::Up => add(start, unit, 1, tz)? - 1,
                };
            }
            b'+' | b'-' => {
                let start = i;
                while i < ops.len() && ops[i].is_ascii_digit() {
                    i += 1;
                }
                let n: i64 = if i == start {
                    1
                } else {
                    std::str::from_utf8(&ops[start..i])
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .ok_or_else(|| bad("number too large"))?
                };
                let unit = ops
                    .get(i)
                    .and_then(|&c| Unit::from_math(c as char))
                    .ok_or_else(|| bad("an amount must be followed by a unit (y M w d h H m s)"))?;
                i += 1;
                v = add(v, unit, if op == b'-' { -n } else { n }, tz)?;
            }
            _ => return Err(bad(&format!("unexpected '{}'", op as char))),
        }
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(s: &str) -> i64 {
        s.parse::<Timestamp>().unwrap().as_millisecond()
    }

    fn parse(format: &str, text: &str) -> Result<i64, DateError> {
        DateFormat::new(format)
            .unwrap()
            .parse(text, &TimeZone::UTC, Rounding::Down)
    }

    #[test]
    fn the_default_format_takes_iso_dates_and_epoch_millis() {
        let f = DateFormat::default_format();
        let utc = TimeZone::UTC;
        let p = |t: &str| f.parse(t, &utc, Rounding::Down);
        assert_eq!(p("2020-01-02"), Ok(ms("2020-01-02T00:00:00Z")));
        assert_eq!(p("2020-01-02T03:04:05Z"), Ok(ms("2020-01-02T03:04:05Z")));
        assert_eq!(
            p("2020-01-02T03:04:05.123+02:00"),
            Ok(ms("2020-01-02T01:04:05.123Z"))
        );
        assert_eq!(
            p("2020-01-02T03:04:05.123456789Z"),
            Ok(ms("2020-01-02T03:04:05.123Z"))
        );
        assert_eq!(p("2020-01-02T03:04"), Ok(ms("2020-01-02T03:04:00Z")));
        assert_eq!(p("2020"), Ok(ms("2020-01-01T00:00:00Z")));
        assert_eq!(p("1577836800000"), Ok(1_577_836_800_000));
        assert_eq!(p("-1000"), Ok(-1000));
        for bad in [
            "2020-13-01",
            "2020-02-30",
            "2020-1-2",
            "yesterday",
            "",
            "2020-01-02T25:00",
        ] {
            assert_eq!(
                p(bad),
                Err(DateError::Parse {
                    input: bad.into(),
                    format: DEFAULT_FORMAT.into()
                }),
                "{bad}"
            );
        }
        assert_eq!(
            parse("date_optional_time", "2020-1-2"),
            Ok(ms("2020-01-02T00:00:00Z"))
        );
    }

    #[test]
    fn named_and_custom_formats() {
        assert_eq!(parse("epoch_second", "1577836800"), Ok(1_577_836_800_000));
        assert_eq!(parse("epoch_second", "1577836800.5"), Ok(1_577_836_800_500));
        assert_eq!(
            parse("basic_date", "20200102"),
            Ok(ms("2020-01-02T00:00:00Z"))
        );
        assert_eq!(
            parse("yyyy/MM/dd HH:mm:ss", "2013/04/01 13:14:15"),
            Ok(ms("2013-04-01T13:14:15Z"))
        );
        assert_eq!(
            parse("dd-MMM-yyyy HH:mm:ss.SS", "26-FEB-1987 15:01:01.79"),
            Ok(ms("1987-02-26T15:01:01.790Z"))
        );
        assert_eq!(
            parse("h:mm a, MMMM d yyyy", "3:05 PM, March 4 2021"),
            Ok(ms("2021-03-04T15:05:00Z"))
        );
        assert_eq!(
            parse("yyyy-MM-dd'T'HH:mm:ssZ", "2020-06-01T12:00:00-0530"),
            Ok(ms("2020-06-01T17:30:00Z"))
        );
        assert_eq!(
            parse("EEE, dd MMM yyyy", "Mon, 06 Jul 2026"),
            Ok(ms("2026-07-06T00:00:00Z"))
        );
        assert!(matches!(
            DateFormat::new("yyyy-QQ"),
            Err(DateError::Format { .. })
        ));
        assert!(matches!(
            DateFormat::new("yyyy['T'HH"),
            Err(DateError::Format { .. })
        ));
        assert!(matches!(
            DateFormat::new("yyyy||"),
            Err(DateError::Format { .. })
        ));
    }

    #[test]
    fn formats_write_what_they_read() {
        let utc = TimeZone::UTC;
        let v = ms("2020-03-04T05:06:07.089Z");
        for (f, want) in [
            ("strict_date_optional_time", "2020-03-04T05:06:07.089Z"),
            ("date", "2020-03-04"),
            ("epoch_millis", "1583298367089"),
            ("epoch_second", "1583298367"),
            ("dd MMM yyyy hh:mm a", "04 Mar 2020 05:06 AM"),
        ] {
            let f = DateFormat::new(f).unwrap();
            assert_eq!(f.format(v, &utc).unwrap(), want);
        }
        let paris = time_zone("Europe/Paris").unwrap();
        let f = DateFormat::new("strict_date_time").unwrap();
        assert_eq!(
            f.format(v, &paris).unwrap(),
            "2020-03-04T06:06:07.089+01:00"
        );
        assert_eq!(
            f.parse("2020-03-04T06:06:07.089+01:00", &utc, Rounding::Down),
            Ok(v)
        );
    }

    #[test]
    fn missing_fields_round_up_for_upper_bounds() {
        let f = DateFormat::default_format();
        let utc = TimeZone::UTC;
        assert_eq!(
            f.parse("2020-02", &utc, Rounding::Up),
            Ok(ms("2020-02-29T23:59:59.999Z"))
        );
        assert_eq!(
            f.parse("2020-01-01", &utc, Rounding::Up),
            Ok(ms("2020-01-01T23:59:59.999Z"))
        );
        assert_eq!(
            f.parse("2020-01-01T10:00", &utc, Rounding::Up),
            Ok(ms("2020-01-01T10:00:59.999Z"))
        );
    }

    #[test]
    fn texts_without_offset_are_read_in_the_time_zone() {
        let f = DateFormat::default_format();
        let tz = time_zone("+01:00").unwrap();
        assert_eq!(
            f.parse("2020-01-01T00:00:00", &tz, Rounding::Down),
            Ok(ms("2019-12-31T23:00:00Z"))
        );
        // An explicit offset wins over the time zone.
        assert_eq!(
            f.parse("2020-01-01T00:00:00Z", &tz, Rounding::Down),
            Ok(ms("2020-01-01T00:00:00Z"))
        );
        assert!(matches!(
            time_zone("Mars/Olympus"),
            Err(DateError::TimeZone(_))
        ));
    }

    #[test]
    fn date_math_as_elasticsearch_documents_it() {
        let f = DateFormat::default_format();
        let utc = TimeZone::UTC;
        let now = ms("2014-11-18T14:27:32.123Z");
        let m = |e: &str, r| eval_math(e, &f, &utc, now, r);
        assert_eq!(m("now", Rounding::Down), Ok(now));
        assert_eq!(
            m("now-1d/d", Rounding::Down),
            Ok(ms("2014-11-17T00:00:00Z"))
        );
        assert_eq!(
            m("now-1d/d", Rounding::Up),
            Ok(ms("2014-11-17T23:59:59.999Z"))
        );
        assert_eq!(
            m("now+1h", Rounding::Down),
            Ok(ms("2014-11-18T15:27:32.123Z"))
        );
        assert_eq!(
            m("now-1M", Rounding::Down),
            Ok(ms("2014-10-18T14:27:32.123Z"))
        );
        assert_eq!(m("now/w", Rounding::Down), Ok(ms("2014-11-17T00:00:00Z")));
        // The four range rounding rules of the Elasticsearch reference on 2014-11-18||/M:
        // gte rounds down, lte up, gt up (then exclusive), lt down (then exclusive).
        assert_eq!(
            m("2014-11-18||/M", Rounding::Down),
            Ok(ms("2014-11-01T00:00:00Z"))
        );
        assert_eq!(
            m("2014-11-18||/M", Rounding::Up),
            Ok(ms("2014-11-30T23:59:59.999Z"))
        );
        assert_eq!(
            m("2014-01-31||+1M", Rounding::Down),
            Ok(ms("2014-02-28T00:00:00Z"))
        );
        assert_eq!(
            m("2014-11-18||+1y-2d/d", Rounding::Down),
            Ok(ms("2015-11-16T00:00:00Z"))
        );
        assert_eq!(
            m("2014-11-18", Rounding::Down),
            Ok(ms("2014-11-18T00:00:00Z"))
        );
        for bad in ["now-1", "now/x", "now*2", "now-1q"] {
            assert!(
                matches!(m(bad, Rounding::Down), Err(DateError::Math { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn calendar_units_in_a_time_zone() {
        let paris = time_zone("Europe/Paris").unwrap();
        let v = ms("2021-03-28T12:00:00Z"); // the day Paris moves to summer time
        assert_eq!(
            round_down(v, Unit::Day, &paris),
            Ok(ms("2021-03-27T23:00:00Z"))
        );
        let next = add(ms("2021-03-27T23:00:00Z"), Unit::Day, 1, &paris).unwrap();
        assert_eq!(next, ms("2021-03-28T22:00:00Z"), "a 23-hour day");
        assert_eq!(
            round_down(v, Unit::Month, &paris),
            Ok(ms("2021-02-28T23:00:00Z"))
        );
        assert_eq!(
            round_down(v, Unit::Quarter, &TimeZone::UTC),
            Ok(ms("2021-01-01T00:00:00Z"))
        );
        assert_eq!(
            round_down(v, Unit::Year, &TimeZone::UTC),
            Ok(ms("2021-01-01T00:00:00Z"))
        );
        assert_eq!(
            round_down(v, Unit::Week, &TimeZone::UTC),
            Ok(ms("2021-03-22T00:00:00Z"))
        );
        assert_eq!(Unit::from_calendar_interval("1q"), Some(Unit::Quarter));
        assert_eq!(Unit::from_calendar_interval("2d"), None);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]

        /// Every date a format writes, it reads back (to the millisecond it can express).
        #[test]
        fn formats_read_back_what_they_write(millis in -62_000_000_000_000i64..250_000_000_000_000) {
            let utc = TimeZone::UTC;
            for (spec, unit) in [
                ("strict_date_optional_time", 1),
                ("strict_date_time", 1),
                ("epoch_millis", 1),
                ("epoch_second", 1000),
                ("basic_date_time_no_millis", 1000),
                ("yyyy/MM/dd HH:mm:ss.SSS", 1),
                ("dd MMMM yyyy hh:mm:ss a", 1000),
            ] {
                let f = DateFormat::new(spec).unwrap();
                let text = f.format(millis, &utc).unwrap();
                let want = millis.div_euclid(unit) * unit;
                proptest::prop_assert_eq!(f.parse(&text, &utc, Rounding::Down), Ok(want), "{} {}", spec, text);
            }
        }

        /// Any text is read or refused, never a panic.
        #[test]
        fn any_text_is_read_or_refused(text in "[0-9TZ:.+\\-/ a-zA-Z]{0,40}") {
            let utc = TimeZone::UTC;
            for spec in [DEFAULT_FORMAT, "date_optional_time", "dd-MMM-yyyy h:mm a", "basic_date_time"] {
                let _ = DateFormat::new(spec).unwrap().parse(&text, &utc, Rounding::Up);
            }
            let f = DateFormat::default_format();
            let _ = eval_math(&text, &f, &utc, 0, Rounding::Down);
            let _ = eval_math(&format!("now{text}"), &f, &utc, 0, Rounding::Up);
        }
    }
}
