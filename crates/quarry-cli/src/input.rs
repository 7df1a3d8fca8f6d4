//! Where `quarry index` reads documents from: one JSON Lines file (plain or compressed by
//! extension: .gz, .zst), a directory of them, or a glob; each file line by line with line numbers
//! and byte counts for progress, by `mmap` when it is small and plain, by streaming reads otherwise.
//! A `.json` file may instead hold a JSON array of documents or one document over several lines
//! (native-vector-store's layout: `[{"id", "text", "metadata": {"embedding": [...]}}, ...]`):
//! it is read whole and yields each object's text with the line it starts on ([`JsonDocs`]).
//! A Markdown or plain-text file (`.md`, `.markdown`, `.txt`) named as the input or matched by
//! a glob is one document `{"path", "title", "body"}` ([`TextDoc`]): `'notes/**/*.md'` indexes a
//! folder of notes as it is. A directory's listing takes only JSON files (a README.txt beside
//! data files is not a document).
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// Which plain files `--read-mode auto` memory-maps: those of `min..=max` bytes. Smaller files
/// are streamed because mapping costs more than copying them (500 files of 0.9 MB: streaming 1.2x
/// to 1.3x faster; 240 of 2 MB: even; 120 of 4 MB: mmap 0.9x warm but 1.5x with the input
/// evicted), medium ones are mapped (60 files of 7.9 MB: mmap 0.6x to 0.8x the time),
/// larger ones are streamed again to bound memory: a mapped file's resident pages count against
/// the process (2 files of 237 MB: mmap 0.7x to 0.8x the time but 469 MiB peak RSS instead of
/// 32). Compressed files are always streamed. Measured by `scripts/input-study.py`
/// (`bench/results/input-2026-11-23*.md`).
#[derive(Clone, Copy, Debug)]
pub struct MmapRange {
    pub min: u64,
    pub max: u64,
}

impl MmapRange {
    pub const DEFAULT: MmapRange = MmapRange {
        min: 6 << 20,
        max: 64 << 20,
    };
}

/// How input files are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ReadMode {
    /// mmap for plain files of `--mmap-min` to `--mmap-max` bytes, streaming reads otherwise.
    Auto,
    /// mmap for every plain file (compressed files are always streamed).
    Mmap,
    /// Streaming reads for every file.
    Stream,
}

/// File names taken from a directory: JSON Lines, plain or compressed.
const INPUT_EXTENSIONS: &[&str] = &[
    ".jsonl",
    ".ndjson",
    ".json",
    ".jsonl.gz",
    ".ndjson.gz",
    ".json.gz",
    ".jsonl.zst",
    ".ndjson.zst",
    ".json.zst",
    ".jsonl.zstd",
    ".gz",
    ".zst",
    ".zstd",
];

/// File names read as one document each when named or matched by a glob: Markdown and text.
const TEXT_EXTENSIONS: &[&str] = &[".md", ".markdown", ".txt"];

/// The files an `--input` argument names, in a fixed order: the file itself; a directory's
/// JSON Lines files (by the extensions above, not recursive, sorted by name); or the files a glob
/// pattern (`*`, `?`, `[...]`, `**`) matches, sorted. Naming nothing is an error.
pub fn expand(input: &Path) -> Result<Vec<PathBuf>> {
    let text = input.to_string_lossy();
    let is_pattern = text.contains(['*', '?', '[']);
    if !is_pattern || input.exists() {
        let meta = std::fs::metadata(input)
            .with_context(|| format!("cannot open input {}", input.display()))?;
        if !meta.is_dir() {
            return Ok(vec![input.to_path_buf()]);
        }
        let mut files = Vec::new();
        for entry in std::fs::read_dir(input)
            .with_context(|| format!("cannot list input directory {}", input.display()))?
        {
            let entry = entry
                .with_context(|| format!("cannot list input directory {}", input.display()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let is_file = entry.file_type().map(|t| t.is_file()).unwrap_or(false)
                || std::fs::metadata(entry.path()).is_ok_and(|m| m.is_file());
            if is_file
                && !name.starts_with('.')
                && INPUT_EXTENSIONS.iter().any(|e| name.ends_with(e))
            {
                files.push(entry.path());
            }
        }
        if files.is_empty() {
            bail!(
                "no input files in {}: expected names ending in .jsonl, .ndjson or .json (optionally .gz or .zst); name Markdown or text files with a pattern such as 'DIR/*.md'",
                input.display()
            );
        }
        files.sort();
        return Ok(files);
    }
    let entries = glob::glob(&text).with_context(|| format!("bad input pattern {text:?}"))?;
    let mut files = Vec::new();
    for e in entries {
        let p = e.with_context(|| format!("input pattern {text:?}"))?;
        if p.is_file() {
            files.push(p);
        }
    }
    if files.is_empty() {
        bail!("no input files match {text:?}");
    }
    files.sort();
    Ok(files)
}

/// Lines of one input file, whichever way it is read.
pub enum Lines {
    Mapped(MappedLines),
    Streamed(Box<JsonLines>),
    /// A `.json` file of one array of documents, or of documents spread over several lines.
    Documents(JsonDocs),
    /// A Markdown or text file: one document.
    Text(TextDoc),
}

impl Lines {
    /// Opens `path` for reading by `mode` (`range`: the sizes [`ReadMode::Auto`] maps). A `.json`
    /// file (also compressed) whose first line is not a whole JSON object is read as
    /// [`JsonDocs`].
    pub fn open(path: &Path, mode: ReadMode, range: MmapRange) -> Result<Self> {
        let name = path.to_string_lossy();
        let compressed = name.ends_with(".gz") || name.ends_with(".zst") || name.ends_with(".zstd");
        let base = name
            .strip_suffix(".gz")
            .or_else(|| name.strip_suffix(".zstd"))
            .or_else(|| name.strip_suffix(".zst"))
            .unwrap_or(&name);
        if !compressed && TEXT_EXTENSIONS.iter().any(|e| name.ends_with(e)) {
            return Ok(Lines::Text(TextDoc::open(path)?));
        }
        if base.ends_with(".json") && !first_line_is_an_object(path)? {
            return Ok(Lines::Documents(JsonDocs::open(path)?));
        }
        let map = !compressed
            && match mode {
                ReadMode::Stream => false,
                ReadMode::Mmap => true,
                ReadMode::Auto => (range.min..=range.max).contains(
                    &std::fs::metadata(path)
                        .with_context(|| format!("cannot open input {}", path.display()))?
                        .len(),
                ),
            };
        if map {
            let bytes = quarry_store::map_for_sequential_read(path)
                .with_context(|| format!("cannot open input {}", path.display()))?;
            Ok(Lines::Mapped(MappedLines {
                path: path.to_path_buf(),
                bytes,
                pos: 0,
                line_no: 0,
            }))
        } else {
            Ok(Lines::Streamed(Box::new(JsonLines::open(path)?)))
        }
    }

    /// The next non-empty line and its 1-based number (without a byte-order mark on line 1).
    pub fn next_line(&mut self) -> Result<Option<(u64, &str)>> {
        match self {
            Lines::Mapped(m) => m.next_line(),
            Lines::Streamed(s) => s.next_line(),
            Lines::Documents(d) => d.next_doc(),
            Lines::Text(t) => Ok(t.next_doc()),
        }
    }

    /// Uncompressed bytes consumed so far.
    pub fn bytes_read(&self) -> u64 {
        match self {
            Lines::Mapped(m) => m.pos as u64,
            Lines::Streamed(s) => s.bytes_read(),
            Lines::Documents(d) => d.pos as u64,
            Lines::Text(t) => t.bytes_read(),
        }
    }
}

/// A Markdown or plain-text file as one JSON document: `path` (as given on the command line or
/// found in the directory), `title` (the first Markdown heading, else the file name without its
/// extension) and `body` (the whole text). Not UTF-8 is an error naming the file and byte.
pub struct TextDoc {
    json: String,
    size: u64,
    done: bool,
}

impl TextDoc {
    pub fn open(path: &Path) -> Result<Self> {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot open input {}", path.display()))?;
        let size = bytes.len() as u64;
        let text = String::from_utf8(bytes).map_err(|e| {
            anyhow::anyhow!(
                "{}: not UTF-8 text (invalid byte at offset {})",
                path.display(),
                e.utf8_error().valid_up_to()
            )
        })?;
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let title = text
            .lines()
            .map(str::trim)
            .find_map(|l| {
                l.strip_prefix('#')
                    .map(|h| h.trim_start_matches('#').trim())
            })
            .filter(|h| !h.is_empty())
            .map(str::to_string)
            .unwrap_or_else(|| {
                path.file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default()
            });
        let json = serde_json::json!({
            "path": path.to_string_lossy(),
            "title": title,
            "body": text,
        })
        .to_string();
        Ok(TextDoc {
            json,
            size,
            done: false,
        })
    }

    fn next_doc(&mut self) -> Option<(u64, &str)> {
        if std::mem::replace(&mut self.done, true) {
            None
        } else {
            Some((1, &self.json))
        }
    }

    fn bytes_read(&self) -> u64 {
        if self.done {
            self.size
        } else {
            0
        }
    }
}

/// Whether `path` (decompressed) reads as JSON Lines: its first non-blank line neither opens an
/// array nor starts an object that goes on over the next lines (a line malformed otherwise
/// stays a bad line of JSON Lines, which `--skip-bad` can skip). Otherwise the file is read
/// whole ([`JsonDocs`]).
fn first_line_is_an_object(path: &Path) -> Result<bool> {
    let mut lines = JsonLines::open(path)?;
    Ok(match lines.next_line() {
        Ok(Some((_, line))) => {
            let line = line.trim_start();
            !line.starts_with('[')
                && match serde_json::from_str::<serde::de::IgnoredAny>(line) {
                    Ok(_) => true,
                    Err(e) => !e.is_eof(),
                }
        }
        // Empty, or not text: the line reader reports it as it does for any file.
        Ok(None) | Err(_) => true,
    })
}

/// The documents of a `.json` file read whole: the elements of a top-level array, or top-level
/// objects separated by whitespace (one object over several lines, or several), each yielded as
/// its JSON text with the line it starts on. Malformed JSON stops the file: it cannot be
/// resynchronized, unlike a bad line of JSON Lines.
pub struct JsonDocs {
    path: PathBuf,
    text: String,
    pos: usize,
    /// The line `pos` is on (1-based).
    line: u64,
    /// Inside the top-level array: `Some(elements so far)`.
    array: Option<u64>,
}

impl JsonDocs {
    pub fn open(path: &Path) -> Result<Self> {
        let mut text = String::new();
        let mut lines = JsonLines::open(path)?;
        lines
            .reader
            .read_to_string(&mut text)
            .with_context(|| format!("{}: cannot read (not UTF-8 or I/O error)", path.display()))?;
        let pos = if text.starts_with('\u{feff}') {
            '\u{feff}'.len_utf8()
        } else {
            0
        };
        Ok(Self {
            path: path.to_path_buf(),
            text,
            pos,
            line: 1,
            array: None,
        })
    }

    fn skip_space(&mut self) {
        let rest = &self.text.as_bytes()[self.pos..];
        let n = rest
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .unwrap_or(rest.len());
        self.line += memchr::memchr_iter(b'\n', &rest[..n]).count() as u64;
        self.pos += n;
    }

    fn error(&self, line: u64, what: String) -> anyhow::Error {
        let at = match self.array {
            Some(i) => format!("line {line} (object {} of the array)", i + 1),
            None => format!("line {line}"),
        };
        anyhow::anyhow!("{}: {at}: {what}", self.path.display())
    }

    /// The next document's JSON text and the line it starts on.
    pub fn next_doc(&mut self) -> Result<Option<(u64, &str)>> {
        loop {
            self.skip_space();
            let Some(&b) = self.text.as_bytes().get(self.pos) else {
                if self.array.is_some() {
                    return Err(
                        self.error(self.line, "the array is not closed (missing ']')".into())
                    );
                }
                return Ok(None);
            };
            match (b, self.array) {
                (b'[', None) => {
                    self.array = Some(0);
                    self.pos += 1;
                    continue;
                }
                (b']', Some(_)) => {
                    self.array = None;
                    self.pos += 1;
                    continue;
                }
                _ => {}
            }
            let start = self.pos;
            let line = self.line;
            let mut values = serde_json::Deserializer::from_str(&self.text[start..])
                .into_iter::<serde::de::IgnoredAny>();
            match values.next() {
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    return Err(
                        self.error(line + e.line() as u64 - 1, format!("malformed JSON: {e}"))
                    )
                }
                None => return Ok(None),
            }
            let end = start + values.byte_offset();
            self.line +=
                memchr::memchr_iter(b'\n', &self.text.as_bytes()[start..end]).count() as u64;
            self.pos = end;
            if let Some(i) = self.array {
                self.skip_space();
                match self.text.as_bytes().get(self.pos) {
                    Some(b',') => self.pos += 1,
                    Some(b']') => {}
                    _ => {
                        return Err(self.error(
                            self.line,
                            format!("expected ',' or ']' after object {} of the array", i + 1),
                        ))
                    }
                }
                self.array = Some(i + 1);
            }
            return Ok(Some((line, &self.text[start..end])));
        }
    }
}

/// Lines of a memory-mapped plain file: each line is a view into the mapping, validated as UTF-8.
pub struct MappedLines {
    path: PathBuf,
    bytes: quarry_store::Bytes,
    pos: usize,
    line_no: u64,
}

impl MappedLines {
    fn next_line(&mut self) -> Result<Option<(u64, &str)>> {
        let all = self.bytes.as_slice();
        loop {
            if self.pos >= all.len() {
                return Ok(None);
            }
            let start = self.pos;
            let end = memchr::memchr(b'\n', &all[start..]).map_or(all.len(), |i| start + i);
            self.pos = (end + 1).min(all.len());
            self.line_no += 1;
            let mut raw = &all[start..end];
            if raw.last() == Some(&b'\r') {
                raw = &raw[..raw.len() - 1];
            }
            if self.line_no == 1 {
                raw = raw.strip_prefix("\u{feff}".as_bytes()).unwrap_or(raw);
            }
            let line = std::str::from_utf8(raw).map_err(|e| {
                anyhow::anyhow!(
                    "{}: line {}: cannot read (not UTF-8 at byte {} of the line)",
                    self.path.display(),
                    self.line_no,
                    e.valid_up_to() + 1
                )
            })?;
            if !line.trim().is_empty() {
                return Ok(Some((self.line_no, line)));
            }
        }
    }
}

/// Counts bytes as they are read (uncompressed bytes, for MB/s).
pub struct Counting<R> {
    inner: R,
    pub bytes: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
}

/// Line reader over a possibly compressed file.
pub struct JsonLines {
    path: PathBuf,
    reader: BufReader<Counting<Box<dyn Read + Send>>>,
    line_no: u64,
    buf: String,
}

impl JsonLines {
    pub fn open(path: &Path) -> Result<Self> {
        let file =
            File::open(path).with_context(|| format!("cannot open input {}", path.display()))?;
        let name = path.to_string_lossy();
        let inner: Box<dyn Read + Send> = if name.ends_with(".gz") {
            Box::new(flate2::read::MultiGzDecoder::new(BufReader::new(file)))
        } else if name.ends_with(".zst") || name.ends_with(".zstd") {
            Box::new(
                zstd::Decoder::new(file)
                    .with_context(|| format!("cannot read zstd input {}", path.display()))?,
            )
        } else {
            Box::new(file)
        };
        Ok(Self {
            path: path.to_path_buf(),
            reader: BufReader::with_capacity(1 << 20, Counting { inner, bytes: 0 }),
            line_no: 0,
            buf: String::new(),
        })
    }

    /// The next non-empty line and its 1-based number (without a byte-order mark on line 1).
    pub fn next_line(&mut self) -> Result<Option<(u64, &str)>> {
        loop {
            self.buf.clear();
            let n = self.reader.read_line(&mut self.buf).with_context(|| {
                format!(
                    "{}: line {}: cannot read (not UTF-8 or I/O error)",
                    self.path.display(),
                    self.line_no + 1
                )
            })?;
            if n == 0 {
                return Ok(None);
            }
            self.line_no += 1;
            // A UTF-8 byte-order mark may start the file; it is not part of the first line.
            let skip = if self.line_no == 1 && self.buf.starts_with('\u{feff}') {
                '\u{feff}'.len_utf8()
            } else {
                0
            };
            let end = self.buf.trim_end_matches(['\n', '\r']).len();
            if !self.buf[skip..end].trim().is_empty() {
                return Ok(Some((self.line_no, &self.buf[skip..end])));
            }
        }
    }

    /// Uncompressed bytes consumed so far.
    pub fn bytes_read(&self) -> u64 {
        self.reader.get_ref().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc_of(path: &Path) -> serde_json::Value {
        let mut lines = Lines::open(path, ReadMode::Auto, MmapRange::DEFAULT).unwrap();
        let (line, text) = lines.next_line().unwrap().unwrap();
        assert_eq!(line, 1);
        let v = serde_json::from_str(text).unwrap();
        assert!(
            lines.next_line().unwrap().is_none(),
            "one document per file"
        );
        assert_eq!(lines.bytes_read(), std::fs::metadata(path).unwrap().len());
        v
    }

    #[test]
    fn a_folder_of_notes_is_one_document_per_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::write(
            p.join("a.md"),
            "intro\n\n## Wheat exports\n\nGrain moved.\n",
        )
        .unwrap();
        std::fs::write(p.join("b.txt"), "\u{feff}plain words").unwrap();
        std::fs::write(p.join("c.bin"), [0u8, 1, 2]).unwrap();
        std::fs::write(p.join("d.jsonl"), "{\"body\": \"x\"}\n").unwrap();
        let listed = expand(p).unwrap();
        assert_eq!(
            listed,
            [p.join("d.jsonl")],
            "a directory lists its JSON files only"
        );
        let files = expand(&p.join("*.[mt][dx]*")).unwrap();
        let names: Vec<_> = files
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.md", "b.txt"]);
        let a = doc_of(&files[0]);
        assert_eq!(a["title"], "Wheat exports");
        assert_eq!(a["body"], "intro\n\n## Wheat exports\n\nGrain moved.\n");
        assert_eq!(a["path"], files[0].to_string_lossy().as_ref());
        let b = doc_of(&files[1]);
        assert_eq!(b["title"], "b", "no heading: the file name");
        assert_eq!(b["body"], "plain words", "without the byte-order mark");
    }

    #[test]
    fn a_text_file_that_is_not_utf8_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("bad.md");
        std::fs::write(&f, b"ok \xff\xfe").unwrap();
        let e = Lines::open(&f, ReadMode::Auto, MmapRange::DEFAULT)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("bad.md") && e.contains("offset 3"), "{e}");
    }
}
