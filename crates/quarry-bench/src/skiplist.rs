//! Would Marginalia's large-block deterministic skip list serve disk-resident intersections
//! better than quarry's 128-document blocks with a skip table? `quarry-bench skiplist` (issue 11
//! item 5, a study: no format change).
//!
//! From a W2 index (built from the prepared W2 documents when missing) it takes the postings of
//! every term of the W2 intersection queries (doc ids and freqs, read through quarry's public
//! API, segments concatenated into one doc-id space) and writes them twice:
//!
//! - **today**: quarry's `.post` term entry as `docs/format/postings.md` specifies it (varint
//!   header, a 48-byte skip entry per block when there is more than one, 128-document bit-packed
//!   blocks of doc deltas then freqs, a varint tail block); a seek binary-searches the skip
//!   table's `last_doc` fields after the current block, then decodes one block's doc deltas
//!   (freqs are stepped over, as `set_docs_only` does);
//! - **skip list**: Marginalia's layout: nodes of an 8-byte header (count, forward-pointer count,
//!   flags), forward pointers holding only the max doc id of the node they point at, then the
//!   doc ids and a 4-byte value (the freq) per document, uncompressed. A list's first node may
//!   start anywhere in a block, every later node starts on a block boundary, no node straddles
//!   one, the last node is truncated; so node `k >= 1` of a list is at a computable address and
//!   pointer `i` of a node targets the node `d(i)` further on: `d(i) = i + 1` for the first 16,
//!   then `16 + (i - 15)^2` (quadratic), at most 32 pointers.
//!
//! Both are read by the same leapfrog intersection (the rarest term leads), counting matches,
//! from a memory map (warm: the file is in the page cache) and through `O_DIRECT` (a fresh
//! `DirectFile` per query, so every page a query needs is read from disk once: the
//! disk-resident case with a query-scoped buffer). The term dictionary is kept in memory for
//! both (it is the same FST in either design). The report gives, per layout and read unit, the
//! bytes and 4 KiB pages a query touches, the reads and bytes it fetches under `O_DIRECT`, and
//! the latencies; counts are checked against quarry's own `Count` search.
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use quarry::query::{Occur, Query};
use quarry::{Index, IndexWriter, SearchMode, WriterOptions};
use quarry_codecs::bitpack::BlockCodec;
use quarry_store::{DirectDirectory, DirectOptions};

mod layout;

use layout::{
    intersect, write_skiplist, write_today, Counting, DirectSource, ListRef, MemSource, SkipCursor,
    Source, TodayCursor,
};

#[derive(Debug, Args)]
pub struct SkiplistArgs {
    /// A quarry index of W2 (body field). Default: bench/results/tmp/skiplist/index (or
    /// index-quick), built from the prepared W2 documents when missing.
    #[arg(long)]
    pub index: Option<PathBuf>,
    /// Block sizes of the skip-list layout, in KiB.
    #[arg(long, value_delimiter = ',', default_values_t = vec![4usize, 32, 128])]
    pub blocks_kib: Vec<usize>,
    /// Read units (buffer-pool page sizes) for today's layout under O_DIRECT, in KiB (64 is the
    /// direct directory's default page).
    #[arg(long, value_delimiter = ',', default_values_t = vec![4usize, 64])]
    pub units_kib: Vec<usize>,
    /// Timed repetitions per query with the file warm (the median is kept).
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// Smoke run: the first 100,000 W2 documents and 30 intersection queries.
    #[arg(long)]
    pub quick: bool,
    /// Repository root (default: found from the binary or the working directory).
    #[arg(long)]
    pub repo: Option<PathBuf>,
    /// Report path (default: bench/results/skiplist-<date>.md; with --quick under tmp/).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

// ---------------------------------------------------------------------------------------------
// The study.

/// One term's postings over the whole index.
struct Postings {
    docs: Vec<u32>,
    freqs: Vec<u32>,
}

/// A layout written to a file, with each term's place in it.
struct Layout {
    name: String,
    file: PathBuf,
    bytes: u64,
    /// Read unit under O_DIRECT.
    unit: u64,
    /// Today's layout read as the engine's pread/direct path reads it: the whole term entry at
    /// open (`SegmentReader::term_info`), instead of only what the seeks touch.
    whole_entry: bool,
    /// Today's layout: (offset, entry length) per term; skip list: the lists.
    today: HashMap<String, (u64, u64)>,
    lists: HashMap<String, ListRef>,
}

/// What one configuration measured over the query set.
#[derive(Default)]
struct Figures {
    bytes_touched: Vec<f64>,
    pages_touched: Vec<f64>,
    direct_reads: Vec<f64>,
    direct_us: Vec<f64>,
    warm_us: Vec<f64>,
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn quantile(v: &[f64], q: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    if s.is_empty() {
        return 0.0;
    }
    s[((s.len() - 1) as f64 * q).round() as usize]
}

/// The terms of a `+a +b ...` query (all MUST term clauses on one field), else `None`.
fn must_terms(q: &Query) -> Option<Vec<(String, String)>> {
    match q {
        Query::Boolean { clauses, .. } => clauses
            .iter()
            .map(|c| match (&c.occur, &c.query) {
                (Occur::Must, Query::Term { field, term }) => Some((field.clone(), term.clone())),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

/// Builds a W2 index of the first `limit` documents (0 = all) of `docs` in `dir`.
fn build_index(docs: &Path, dir: &Path, limit: usize) -> Result<()> {
    let schema = quarry::Schema::builder()
        .integer("id")
        .text("title", true)
        .text("body", true)
        .build();
    let tmp = dir.with_extension("partial");
    let _ = std::fs::remove_dir_all(&tmp);
    let mut w = IndexWriter::create(&tmp, schema.clone(), WriterOptions::default())?;
    let f = std::fs::File::open(docs).with_context(|| format!("opening {}", docs.display()))?;
    let t = Instant::now();
    let mut n = 0usize;
    for (i, line) in std::io::BufReader::with_capacity(1 << 20, f)
        .lines()
        .enumerate()
    {
        if limit > 0 && n >= limit {
            break;
        }
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(&line)
            .with_context(|| format!("{}:{}: not JSON", docs.display(), i + 1))?;
        let id = v["id"]
            .as_i64()
            .with_context(|| format!("{}:{}: no integer id", docs.display(), i + 1))?;
        let doc =
            crate::online_parity::document(&schema, id, v["title"].as_str(), v["body"].as_str())?;
        w.add_document(doc)?;
        n += 1;
    }
    w.commit()?;
    drop(w);
    std::fs::rename(&tmp, dir)?;
    eprintln!(
        "[skiplist] indexed {n} documents into {} in {:.0} s",
        dir.display(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Every document of `field:term`, segments concatenated in index order.
fn postings(index: &Index, field: &str, term: &str) -> Result<Postings> {
    let fid = index
        .schema()
        .field_id(field)
        .with_context(|| format!("no field {field}"))?;
    let (mut docs, mut freqs) = (Vec::new(), Vec::new());
    let mut base = 0u32;
    for seg in index.segments() {
        if let Some((info, bytes)) = seg.term_info(fid, term.as_bytes())? {
            let mut c = seg.postings(fid, &info, &bytes, false)?;
            let mut d = c.doc();
            while d != quarry::codec::postings::TERMINATED {
                docs.push(base + d);
                freqs.push(c.freq().max(1));
                d = c.next();
            }
            if let Some(why) = c.is_corrupt() {
                bail!("{field}:{term} in {}: {why}", seg.name());
            }
        }
        base += seg.doc_count();
    }
    Ok(Postings { docs, freqs })
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = std::fs::File::create(path).with_context(|| format!("{}", path.display()))?;
    f.write_all(bytes)?;
    f.sync_all()?;
    Ok(())
}

fn build_layouts(
    dir: &Path,
    terms: &[String],
    lists: &HashMap<String, Postings>,
    args: &SkiplistArgs,
) -> Result<Vec<Layout>> {
    let codec = BlockCodec::new();
    let mut out = Vec::new();
    let mut buf = Vec::new();
    let mut today = HashMap::new();
    for t in terms {
        let p = &lists[t];
        let at = buf.len() as u64;
        write_today(&mut buf, &codec, &p.docs, &p.freqs);
        today.insert(t.clone(), (at, buf.len() as u64 - at));
    }
    let file = dir.join("today.post");
    write_file(&file, &buf)?;
    for &u in &args.units_kib {
        out.push(Layout {
            name: format!("today: 128-doc blocks + skip table, {u} KiB reads, lazy"),
            file: file.clone(),
            bytes: buf.len() as u64,
            unit: (u as u64) << 10,
            whole_entry: false,
            today: today.clone(),
            lists: HashMap::new(),
        });
    }
    out.push(Layout {
        name: format!(
            "today as the engine reads it (whole entry at open), {} KiB reads",
            quarry_store::DEFAULT_PAGE_SIZE >> 10
        ),
        file: file.clone(),
        bytes: buf.len() as u64,
        unit: quarry_store::DEFAULT_PAGE_SIZE as u64,
        whole_entry: true,
        today: today.clone(),
        lists: HashMap::new(),
    });
    for &b in &args.blocks_kib {
        let block = (b as u64) << 10;
        let mut buf = Vec::new();
        let mut refs = HashMap::new();
        for t in terms {
            let p = &lists[t];
            refs.insert(
                t.clone(),
                write_skiplist(&mut buf, block, &p.docs, &p.freqs),
            );
        }
        let file = dir.join(format!("skiplist-{b}k.bin"));
        write_file(&file, &buf)?;
        out.push(Layout {
            name: format!("skip list, {b} KiB blocks"),
            file,
            bytes: buf.len() as u64,
            unit: block,
            whole_entry: false,
            today: HashMap::new(),
            lists: refs,
        });
    }
    Ok(out)
}

/// Runs one query on `layout` through `s`; returns the match count.
fn run_query<S: Source>(s: &mut S, layout: &Layout, terms: &[String]) -> Result<u64> {
    if layout.lists.is_empty() {
        let mut cs = terms
            .iter()
            .map(|t| {
                let (off, len) = layout.today[t];
                if layout.whole_entry {
                    s.read(off, len as usize)?;
                }
                TodayCursor::open(s, off, len)
            })
            .collect::<Result<Vec<_>>>()?;
        intersect(s, &mut cs)
    } else {
        let mut cs = terms
            .iter()
            .map(|t| SkipCursor::open(s, layout.lists[t]))
            .collect::<Result<Vec<_>>>()?;
        intersect(s, &mut cs)
    }
}

fn measure(layout: &Layout, queries: &[(Vec<String>, u64)], reps: usize) -> Result<Figures> {
    let mut fig = Figures::default();
    let dir = layout.file.parent().expect("file in a directory");
    let name = layout
        .file
        .file_name()
        .expect("file name")
        .to_string_lossy()
        .into_owned();
    let map = quarry_store::MmapDirectory::open(dir)?;
    let handle = quarry_store::Directory::open(&map, &name)?;
    let view = match handle.mapped_view() {
        Some(v) => v,
        None => handle.read_all()?,
    };
    let direct = DirectDirectory::open_with(
        dir,
        DirectOptions {
            page_size: layout.unit as usize,
            memory_limit: Some(512 << 20),
            copy_out: false,
            ..DirectOptions::default()
        },
    )?;
    for (terms, expected) in queries {
        // Touched bytes and pages (a counting pass, not timed).
        let mut counted = Counting {
            inner: MemSource(view.clone()),
            bytes: 0,
            pages: HashSet::new(),
        };
        let n = run_query(&mut counted, layout, terms)?;
        if n != *expected {
            bail!(
                "{}: {terms:?} matched {n} documents, quarry's search {expected}",
                layout.name
            );
        }
        fig.bytes_touched.push(counted.bytes as f64);
        fig.pages_touched.push(counted.pages.len() as f64);
        // Disk-resident: a new O_DIRECT file per query, so nothing is cached from before.
        let file = direct.open_file(&name)?;
        if !file.is_direct() {
            bail!(
                "{}: the file system refused O_DIRECT",
                layout.file.display()
            );
        }
        let mut src = DirectSource::new(file, layout.unit);
        let t = Instant::now();
        let n = run_query(&mut src, layout, terms)?;
        fig.direct_us.push(t.elapsed().as_secs_f64() * 1e6);
        fig.direct_reads.push(src.reads() as f64);
        if n != *expected {
            bail!("{}: {terms:?} direct count {n} != {expected}", layout.name);
        }
        // Warm: the memory map, the median of `reps` runs after one untimed.
        let mut mem = MemSource(view.clone());
        run_query(&mut mem, layout, terms)?;
        let mut times = Vec::with_capacity(reps);
        for _ in 0..reps.max(1) {
            let t = Instant::now();
            std::hint::black_box(run_query(&mut mem, layout, terms)?);
            times.push(t.elapsed().as_secs_f64() * 1e6);
        }
        fig.warm_us.push(quantile(&times, 0.5));
    }
    Ok(fig)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

pub fn run(args: SkiplistArgs) -> Result<()> {
    let repo = crate::orchestrator::find_repo(args.repo.clone())?;
    let load_start = loadavg();
    let tmp = repo.join("bench/results/tmp");
    let prepared = crate::workload::prepare("w2", &repo, &tmp, false)?;
    let work = tmp.join("skiplist");
    std::fs::create_dir_all(&work)?;
    let index_dir = args
        .index
        .clone()
        .unwrap_or_else(|| work.join(if args.quick { "index-quick" } else { "index" }));
    if !index_dir.exists() {
        let limit = if args.quick { 100_000 } else { 0 };
        eprintln!("[skiplist] building {}", index_dir.display());
        build_index(&prepared.docs_path, &index_dir, limit)?;
    }
    let index = Index::open(&index_dir)?;
    let searcher = index.searcher();
    let mut queries = Vec::new();
    let mut skipped = 0;
    let mut postings_of: HashMap<String, Postings> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    for q in prepared
        .queries
        .iter()
        .filter(|q| q.class == "intersection")
        .take(if args.quick { 30 } else { usize::MAX })
    {
        let parsed = searcher.parse_query(&q.query, &["body"])?;
        let Some(terms) = must_terms(&parsed) else {
            skipped += 1;
            continue;
        };
        let expected = searcher.search(&parsed, 0, SearchMode::Count)?.total_hits;
        let mut keys = Vec::new();
        for (field, term) in terms {
            let key = format!("{field}:{term}");
            if !postings_of.contains_key(&key) {
                postings_of.insert(key.clone(), postings(&index, &field, &term)?);
                order.push(key.clone());
            }
            keys.push(key);
        }
        if keys.iter().any(|k| postings_of[k].docs.is_empty()) {
            // A term absent from the index: nothing to intersect (quarry answers 0 too).
            skipped += 1;
            continue;
        }
        // The rarest term leads.
        keys.sort_by_key(|k| postings_of[k].docs.len());
        queries.push((keys, expected));
    }
    order.retain(|k| !postings_of[k].docs.is_empty());
    let total_postings: usize = order.iter().map(|k| postings_of[k].docs.len()).sum();
    eprintln!(
        "[skiplist] {} queries ({skipped} skipped), {} terms, {total_postings} postings",
        queries.len(),
        order.len()
    );
    let layouts = build_layouts(&work, &order, &postings_of, &args)?;
    let mut rows = Vec::new();
    for l in &layouts {
        eprintln!("[skiplist] measuring {}", l.name);
        let f = measure(l, &queries, args.reps)?;
        rows.push((l, f));
    }
    let load_end = loadavg();
    let report = render(
        &args,
        &repo,
        &index,
        &queries,
        &rows,
        &load_start,
        &load_end,
    );
    let out = args.out.clone().unwrap_or_else(|| {
        let name = format!("skiplist-{}.md", crate::orchestrator::today());
        if args.quick {
            tmp.join(name)
        } else {
            repo.join("bench/results").join(name)
        }
    });
    std::fs::write(&out, report)?;
    eprintln!("[skiplist] wrote {}", out.display());
    for l in &layouts {
        let _ = std::fs::remove_file(&l.file);
    }
    Ok(())
}

fn render(
    args: &SkiplistArgs,
    repo: &Path,
    index: &Index,
    queries: &[(Vec<String>, u64)],
    rows: &[(&Layout, Figures)],
    load_start: &str,
    load_end: &str,
) -> String {
    let mut s = String::new();
    s += &format!(
        "# Postings layout for disk-resident intersections: 128-doc blocks + skip table vs a \
         large-block skip list ({})\n\n",
        crate::orchestrator::today()
    );
    s += &format!(
        "Command: `quarry-bench skiplist{}{}` on commit {}; index: {} documents in {} segment(s); \
         {} W2 intersection queries (all `+a +b ...` of queries.txt whose terms all occur); load \
         average {load_start} at the start, {load_end} at the end (2 cores shared).\n\n",
        if args.quick { " --quick" } else { "" },
        if args.reps != 5 {
            format!(" --reps {}", args.reps)
        } else {
            String::new()
        },
        crate::orchestrator::git_head(repo),
        index.doc_count(),
        index.segment_count(),
        queries.len(),
    );
    s += "Both layouts hold the same postings (doc ids and freqs of every term of those queries, \
          segments concatenated) and are read by the same leapfrog intersection, counting \
          matches (checked against quarry's `Count` search for every query). *Touched*: bytes \
          the cursors read and distinct 4 KiB pages they fall in. *O_DIRECT*: a fresh direct \
          file per query, every read unit fetched once with `pread` and kept for the query (the \
          unit is the pool page: 4 or 64 KiB for today's layout, the block for the skip list). \
          *Warm*: the file memory-mapped and in the page cache, median of the timed runs. \
          *lazy*: today's cursor reads only what its seeks touch (the memory-mapped engine's \
          pattern); *whole entry*: the engine's pread/direct path, which reads a term's whole \
          entry when the query opens it. The skip list stores doc ids and freqs uncompressed (8 \
          bytes a document, as Marginalia does), today's layout bit-packs them. \
          Latencies per query, then mean / p50 / p99 over the queries.\n\n";
    s += "| layout | file MB | touched KB/query | 4 KiB pages/query | O_DIRECT reads/query | \
          O_DIRECT MB/query | O_DIRECT ms mean / p50 / p99 | warm µs mean / p50 / p99 |\n";
    s += "|---|---:|---:|---:|---:|---:|---:|---:|\n";
    for (l, f) in rows {
        s += &format!(
            "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2} | {:.2} / {:.2} / {:.2} | {:.0} / {:.0} / {:.0} |\n",
            l.name,
            l.bytes as f64 / 1e6,
            mean(&f.bytes_touched) / 1e3,
            mean(&f.pages_touched),
            mean(&f.direct_reads),
            mean(&f.direct_reads) * l.unit as f64 / 1e6,
            mean(&f.direct_us) / 1e3,
            quantile(&f.direct_us, 0.5) / 1e3,
            quantile(&f.direct_us, 0.99) / 1e3,
            mean(&f.warm_us),
            quantile(&f.warm_us, 0.5),
            quantile(&f.warm_us, 0.99),
        );
    }
    s += "\n";
    s += &verdict(rows);
    s
}

/// The decision rule of issue 11 item 5: adopt only if the skip list wins disk-resident
/// without losing warm.
fn verdict(rows: &[(&Layout, Figures)]) -> String {
    let best = |skip: bool, pick: fn(&Figures) -> f64| {
        rows.iter()
            .filter(|(l, _)| l.lists.is_empty() != skip)
            .map(|(l, f)| (l.name.clone(), pick(f)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    };
    let direct = |f: &Figures| mean(&f.direct_us);
    let warm = |f: &Figures| mean(&f.warm_us);
    let (Some(td), Some(sd), Some(tw), Some(sw)) = (
        best(false, direct),
        best(true, direct),
        best(false, warm),
        best(true, warm),
    ) else {
        return "No verdict: a layout is missing from the run.\n".into();
    };
    let d_ratio = sd.1 / td.1;
    let w_ratio = sw.1 / tw.1;
    let mut s = format!(
        "## Verdict\n\nDisk-resident (O_DIRECT, mean per query): best skip list ({}) {:.2} ms \
         against today's best ({}) {:.2} ms: ratio {d_ratio:.2}. Warm (mmap, mean): best skip \
         list ({}) {:.0} µs against today's best ({}) {:.0} µs: ratio {w_ratio:.2}.\n\n",
        sd.0,
        sd.1 / 1e3,
        td.0,
        td.1 / 1e3,
        sw.0,
        sw.1,
        tw.0,
        tw.1
    );
    s += if d_ratio < 0.95 && w_ratio <= 1.05 {
        "The skip list wins disk-resident without losing warm: a candidate for a later format \
         version (this round changes nothing).\n"
    } else if d_ratio < 0.95 {
        "The skip list wins disk-resident but loses warm (more than 5%): by the rule of issue 11 \
         (adopt only if it wins disk-resident without losing warm) it is not adopted.\n"
    } else {
        "The skip list does not win disk-resident: not adopted; today's layout stays.\n"
    };
    s
}
