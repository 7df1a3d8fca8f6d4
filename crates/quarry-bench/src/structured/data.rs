//! Where do the structured benchmark's documents come from: the 336,776 flights of nycflights13
//! joined with their airline's and airports' names, and Reuters-21578 with its dates, topics and
//! places; parsed once into typed rows (what the oracle reads) and written as JSON lines with a
//! schema (what every driver indexes).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::spec::{FieldDef, Kind};

/// One field's value in a row.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    Long(Option<i64>),
    Keywords(Vec<String>),
    Text(String),
}

/// A dataset: its fields and its rows (each row has one value per field, in field order; the
/// first field is `id`, equal to the row's position).
pub struct Dataset {
    pub name: String,
    pub fields: Vec<FieldDef>,
    pub rows: Vec<Vec<Val>>,
}

/// The schema file the drivers read next to the documents.
#[derive(Serialize, Deserialize)]
pub struct SchemaFile {
    pub fields: Vec<FieldDef>,
}

impl Dataset {
    /// The position of field `name`.
    pub fn field(&self, name: &str) -> Result<usize> {
        self.fields
            .iter()
            .position(|f| f.name == name)
            .with_context(|| format!("dataset {} has no field {name:?}", self.name))
    }

    /// The row as the JSON object the drivers index (missing values left out).
    pub fn doc_json(&self, row: &[Val]) -> Map<String, Value> {
        let mut m = Map::new();
        for (f, v) in self.fields.iter().zip(row) {
            match v {
                Val::Long(Some(x)) => {
                    m.insert(f.name.clone(), Value::from(*x));
                }
                Val::Long(None) => {}
                Val::Keywords(ks) if ks.is_empty() => {}
                Val::Keywords(ks) if f.multi => {
                    m.insert(f.name.clone(), Value::from(ks.clone()));
                }
                Val::Keywords(ks) => {
                    m.insert(f.name.clone(), Value::from(ks[0].clone()));
                }
                Val::Text(t) => {
                    m.insert(f.name.clone(), Value::from(t.clone()));
                }
            }
        }
        m
    }

    /// Writes `<dir>/<name>.jsonl` and `<dir>/<name>.schema.json`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("{}.jsonl", self.name));
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path)?);
        for row in &self.rows {
            serde_json::to_writer(&mut out, &self.doc_json(row))?;
            out.write_all(b"\n")?;
        }
        out.flush()?;
        let schema = SchemaFile {
            fields: self.fields.clone(),
        };
        std::fs::write(
            dir.join(format!("{}.schema.json", self.name)),
            serde_json::to_vec_pretty(&schema)?,
        )?;
        Ok(())
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `(year, month)` of a day number (inverse of [`days_from_civil`], day dropped).
pub fn civil_month(days: i64) -> (i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m)
}

pub const DAY_MS: i64 = 86_400_000;

/// Epoch milliseconds of a UTC wall-clock time.
pub fn epoch_ms(y: i64, mo: i64, d: i64, h: i64, mi: i64, s: i64, ms: i64) -> i64 {
    ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60_000 + s * 1000 + ms
}

/// Unpacks `flights.csv` from the zip into `cache` (once) with the system's `unzip`.
fn flights_csv(data: &Path, cache: &Path) -> Result<PathBuf> {
    let csv = cache.join("flights.csv");
    if csv.exists() {
        return Ok(csv);
    }
    std::fs::create_dir_all(cache)?;
    let zip = data.join("flights.csv.zip");
    let st = Command::new("unzip")
        .arg("-o")
        .arg("-q")
        .arg(&zip)
        .arg("-d")
        .arg(cache)
        .status()
        .context("running `unzip` (install it: apt-get install unzip)")?;
    if !st.success() || !csv.exists() {
        bail!("unzip {} failed ({st})", zip.display());
    }
    Ok(csv)
}

/// Two-column lookup (`code -> name`) from a CSV without quotes.
fn lookup(path: &Path) -> Result<HashMap<String, String>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut it = l.split(',');
            Some((it.next()?.to_string(), it.next()?.to_string()))
        })
        .collect())
}

fn num(s: &str) -> Result<Option<i64>> {
    if s == "NA" || s.is_empty() {
        return Ok(None);
    }
    Ok(Some(
        s.parse()
            .with_context(|| format!("not an integer: {s:?}"))?,
    ))
}

/// The flights (every `every`-th row when subsampling), joined with the names of their airline
/// and airports. `sched` is the scheduled departure's local wall-clock time written as UTC
/// (year, month, day, hour, minute), so that calendar months and days are New York's.
pub fn flights(data: &Path, cache: &Path, every: usize) -> Result<Dataset> {
    let airlines = lookup(&data.join("airlines.csv"))?;
    let airports = lookup(&data.join("airports.csv"))?;
    let csv = flights_csv(data, cache)?;
    let f = |name: &str, kind| FieldDef {
        name: name.into(),
        kind,
        multi: false,
    };
    let fields = vec![
        f("id", Kind::Long),
        f("sched", Kind::Date),
        f("dep_delay", Kind::Long),
        f("arr_delay", Kind::Long),
        f("air_time", Kind::Long),
        f("distance", Kind::Long),
        f("carrier", Kind::Keyword),
        f("tailnum", Kind::Keyword),
        f("origin", Kind::Keyword),
        f("dest", Kind::Keyword),
        f("text", Kind::Text),
    ];
    let reader = BufReader::new(std::fs::File::open(&csv)?);
    let mut rows = Vec::new();
    for (i, line) in reader.lines().enumerate().skip(1) {
        if (i - 1) % every != 0 {
            continue;
        }
        let line = line?;
        let c: Vec<&str> = line.split(',').collect();
        if c.len() != 19 {
            bail!(
                "{}: line {} has {} columns, not 19",
                csv.display(),
                i + 1,
                c.len()
            );
        }
        let need = |s: &str| -> Result<i64> { num(s)?.context("missing date part") };
        let sched = epoch_ms(
            need(c[0])?,
            need(c[1])?,
            need(c[2])?,
            need(c[16])?,
            need(c[17])?,
            0,
            0,
        );
        let name = |m: &HashMap<String, String>, k: &str| m.get(k).cloned().unwrap_or_default();
        let text = format!(
            "{} {} {}",
            name(&airlines, c[9]),
            name(&airports, c[12]),
            name(&airports, c[13])
        );
        let kw = |s: &str| {
            if s == "NA" || s.is_empty() {
                Val::Keywords(vec![])
            } else {
                Val::Keywords(vec![s.to_string()])
            }
        };
        rows.push(vec![
            Val::Long(Some(rows.len() as i64)),
            Val::Long(Some(sched)),
            Val::Long(num(c[5])?),
            Val::Long(num(c[8])?),
            Val::Long(num(c[14])?),
            Val::Long(num(c[15])?),
            kw(c[9]),
            kw(c[11]),
            kw(c[12]),
            kw(c[13]),
            Val::Text(text),
        ]);
    }
    Ok(Dataset {
        name: "flights".into(),
        fields,
        rows,
    })
}

/// `NEWID -> places` from the SGML files (the JSON lines have no places).
fn reuters_places(sgm_dir: &Path) -> Result<HashMap<i64, Vec<String>>> {
    let mut out = HashMap::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(sgm_dir)
        .with_context(|| format!("reading {}", sgm_dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "sgm"))
        .collect();
    files.sort();
    for path in files {
        // The files are Latin-1 in places: read bytes, decode lossily (tags are ASCII).
        let text = String::from_utf8_lossy(&std::fs::read(&path)?).into_owned();
        for art in text.split("<REUTERS ").skip(1) {
            let Some(id) = art
                .split("NEWID=\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .and_then(|s| s.parse::<i64>().ok())
            else {
                continue;
            };
            let places = art
                .split("<PLACES>")
                .nth(1)
                .and_then(|r| r.split("</PLACES>").next())
                .map(|p| {
                    p.split("<D>")
                        .skip(1)
                        .filter_map(|d| d.split("</D>").next())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            out.insert(id, places);
        }
    }
    Ok(out)
}

/// `26-FEB-1987 15:01:01.79` as epoch milliseconds (UTC).
pub fn reuters_date(s: &str) -> Option<i64> {
    let s = s.trim();
    let (date, time) = s.split_once(' ')?;
    let mut d = date.split('-');
    let day: i64 = d.next()?.parse().ok()?;
    let mon = match d.next()?.to_ascii_uppercase().as_str() {
        "JAN" => 1,
        "FEB" => 2,
        "MAR" => 3,
        "APR" => 4,
        "MAY" => 5,
        "JUN" => 6,
        "JUL" => 7,
        "AUG" => 8,
        "SEP" => 9,
        "OCT" => 10,
        "NOV" => 11,
        "DEC" => 12,
        _ => return None,
    };
    let year: i64 = d.next()?.parse().ok()?;
    let mut t = time.split(':');
    let h: i64 = t.next()?.parse().ok()?;
    let mi: i64 = t.next()?.parse().ok()?;
    let sec = t.next()?;
    let (s, frac) = sec.split_once('.').unwrap_or((sec, "0"));
    let s: i64 = s.parse().ok()?;
    let cs: i64 = format!("{frac:0<2}").get(..2)?.parse().ok()?;
    if !(1..=31).contains(&day) || h > 23 || mi > 59 || s > 59 {
        return None;
    }
    Some(epoch_ms(year, mon, day, h, mi, s, cs * 10))
}

/// Reuters-21578: `id` (NEWID), `date`, `topics`, `places`, and `text` = title + body; every
/// `every`-th story when subsampling (ids renumbered by position).
pub fn reuters(data: &Path, every: usize) -> Result<Dataset> {
    let places = reuters_places(&data.join("sgm"))?;
    let path = data.join("reuters.jsonl");
    let reader = BufReader::new(
        std::fs::File::open(&path).with_context(|| format!("opening {}", path.display()))?,
    );
    let f = |name: &str, kind, multi| FieldDef {
        name: name.into(),
        kind,
        multi,
    };
    let fields = vec![
        f("id", Kind::Long, false),
        f("date", Kind::Date, false),
        f("topics", Kind::Keyword, true),
        f("places", Kind::Keyword, true),
        f("text", Kind::Text, false),
    ];
    let mut rows = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line = line?;
        if i % every != 0 {
            continue;
        }
        let v: Value = serde_json::from_str(&line)
            .with_context(|| format!("{} line {}", path.display(), i + 1))?;
        let newid = v["id"].as_i64().context("story without id")?;
        let strs = |v: &Value| -> Vec<String> {
            let mut s: Vec<String> = v
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            s.sort();
            s.dedup();
            s
        };
        let mut pl = places.get(&newid).cloned().unwrap_or_default();
        pl.sort();
        pl.dedup();
        let text = format!(
            "{}\n{}",
            v["title"].as_str().unwrap_or(""),
            v["body"].as_str().unwrap_or("")
        );
        rows.push(vec![
            Val::Long(Some(rows.len() as i64)),
            Val::Long(v["date"].as_str().and_then(reuters_date)),
            Val::Keywords(strs(&v["topics"])),
            Val::Keywords(pl),
            Val::Text(text),
        ]);
    }
    Ok(Dataset {
        name: "reuters".into(),
        fields,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_round_trip() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2013, 1, 1), 15_706);
        assert_eq!(civil_month(days_from_civil(2013, 12, 31)), (2013, 12));
        assert_eq!(civil_month(days_from_civil(2012, 2, 29)), (2012, 2));
        assert_eq!(
            reuters_date("26-FEB-1987 15:01:01.79"),
            Some(epoch_ms(1987, 2, 26, 15, 1, 1, 790))
        );
        assert_eq!(reuters_date("garbage"), None);
    }
}
