//! Reading JSON Lines input, plain or compressed (by extension: .gz, .zst), line by line with
//! line numbers and byte counts for progress.
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

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
