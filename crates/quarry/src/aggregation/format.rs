//! How values are written in responses, as Elasticsearch (a Java program) writes them: doubles
//! as Java's `Double.toString` (range keys `"*-100.0"`, keyed histogram buckets, percentile
//! names), dates in a field's format, booleans as `true`/`false`.
use jiff::tz::TimeZone;
use serde_json::Value;

use crate::date::DateFormat;
use crate::{Error, Result};

/// `d` as Java's `Double.toString` writes it (JDK 19 and later: the shortest decimal that reads
/// back as `d`): `100.0`, `0.001`, `1.0E7`, `1.4436576E12`, `1.0E-4`, `NaN`, `-Infinity`.
pub fn java_double(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // Rust's `{:e}` writes the shortest round-trip digits: `d.ddde±x`.
    let sci = format!("{:e}", d.abs());
    let (mantissa, exp) = sci.split_once('e').expect("exponent");
    let exp: i32 = exp.parse().expect("exponent digits");
    let mut digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let mut exp = exp;
    if digits.len() == 1 {
        // Java considers two-digit decimals too when one digit suffices, and takes the closest
        // (`4.9E-324`, not `5e-324`): the correctly rounded two-digit decimal, if it reads back.
        let two = format!("{:.1e}", d.abs());
        if two.parse::<f64>() == Ok(d.abs()) {
            let (m2, e2) = two.split_once('e').expect("exponent");
            let m2: String = m2.chars().filter(|c| *c != '.').collect();
            if !m2.ends_with('0') {
                digits = m2;
                exp = e2.parse().expect("exponent digits");
            }
        }
    }
    let sign = if d < 0.0 { "-" } else { "" };
    let a = d.abs();
    if (1e-3..1e7).contains(&a) {
        // Plain notation with at least one digit after the point.
        let point = exp + 1; // digits before the point
        let (int, frac) = if point <= 0 {
            (
                "0".to_string(),
                format!("{}{}", "0".repeat((-point) as usize), digits),
            )
        } else if point as usize >= digits.len() {
            (
                format!("{digits}{}", "0".repeat(point as usize - digits.len())),
                String::new(),
            )
        } else {
            (
                digits[..point as usize].to_string(),
                digits[point as usize..].to_string(),
            )
        };
        let frac = if frac.is_empty() {
            "0".to_string()
        } else {
            frac
        };
        format!("{sign}{int}.{frac}")
    } else {
        let (first, rest) = digits.split_at(1);
        let rest = if rest.is_empty() { "0" } else { rest };
        format!("{sign}{first}.{rest}E{exp}")
    }
}

/// A JSON number for a double, `null` when it is not finite (JSON has no infinities).
pub fn json_f64(d: f64) -> Value {
    serde_json::Number::from_f64(d).map_or(Value::Null, Value::Number)
}

/// How a field's values are written as strings (`key_as_string`, `value_as_string`).
#[derive(Clone, Debug)]
pub enum ValueFormat {
    /// Numbers and keywords: no `_as_string` companions (Elasticsearch's `RAW`).
    Raw,
    /// Dates: milliseconds written in a format, in a time zone.
    Date(DateFormat, TimeZone),
    /// Booleans: `false` for 0, `true` otherwise.
    Bool,
}

impl ValueFormat {
    /// Whether values carry an `_as_string` companion.
    pub fn is_raw(&self) -> bool {
        matches!(self, ValueFormat::Raw)
    }

    /// A double as Elasticsearch's `DocValueFormat.format(double)` writes it (dates: the
    /// milliseconds truncated toward zero, as Java's `(long)` cast). A date beyond the years
    /// the formats write (the sum of many dates) is written as its milliseconds.
    pub fn format_f64(&self, v: f64) -> Result<String> {
        match self {
            ValueFormat::Raw => Ok(java_double(v)),
            ValueFormat::Bool => Ok((v != 0.0).to_string()),
            ValueFormat::Date(f, tz) => Ok(f
                .format(v as i64, tz)
                .unwrap_or_else(|_| (v as i64).to_string())),
        }
    }

    /// A long as `DocValueFormat.format(long)` writes it.
    pub fn format_i64(&self, v: i64) -> Result<String> {
        match self {
            ValueFormat::Raw => Ok(v.to_string()),
            ValueFormat::Bool => Ok((v != 0).to_string()),
            ValueFormat::Date(f, tz) => f.format(v, tz).map_err(|e| Error::Query(format!("{e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_as_strings() {
        let d = ValueFormat::Date(DateFormat::default_format(), TimeZone::UTC);
        assert_eq!(d.format_f64(1.5e12).unwrap(), "2017-07-14T02:40:00.000Z");
        assert_eq!(d.format_i64(0).unwrap(), "1970-01-01T00:00:00.000Z");
        assert_eq!(d.format_f64(9e18).unwrap(), "9000000000000000000");
        assert_eq!(ValueFormat::Bool.format_f64(0.5).unwrap(), "true");
        assert_eq!(ValueFormat::Bool.format_i64(0).unwrap(), "false");
        assert_eq!(ValueFormat::Raw.format_f64(2.0).unwrap(), "2.0");
    }

    #[test]
    fn doubles_are_written_as_java_does() {
        for (d, want) in [
            (100.0, "100.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.5, "1.5"),
            (-2.25, "-2.25"),
            (0.001, "0.001"),
            (0.000_1, "1.0E-4"),
            (1e7, "1.0E7"),
            (9_999_999.0, "9999999.0"),
            (1_443_657_600_000.0, "1.4436576E12"),
            (123_456.789, "123456.789"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e21, "1.0E21"),
            (1.2345e-7, "1.2345E-7"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
            (5e-324, "4.9E-324"),
            (f64::MAX, "1.7976931348623157E308"),
            (25.0, "25.0"),
            (99.9, "99.9"),
        ] {
            assert_eq!(java_double(d), want, "{d:e}");
        }
    }
}
