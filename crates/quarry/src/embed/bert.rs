//! quarry's own BERT encoder: the forward pass of candle-transformers 0.11.1's
//! `models::bert::BertModel` (same weights, same arithmetic up to float rounding), laid out
//! for CPU throughput.
//!
//! Why not candle-transformers' module: it pads every text of a batch to the longest, runs the
//! bias additions, GELU, softmax and layer norms as separate scalar single-threaded tensor
//! steps (a new tensor each), and copies Q, K, V and the attention output between layouts; the
//! release-build profile in `bench/results/2026-12-04-embed-release.md` has 30% of the time in
//! the matrix products and most of the rest there and in page faults. Here:
//!
//! - the tokens of all texts of a batch are packed one after the other (no padding: a text
//!   attends to its own tokens only, which is what the attention mask does in BERT);
//! - every matrix product is candle's (`Tensor::matmul`, the `gemm` crate), on 2-D matrices:
//!   one fused Q|K|V projection per layer, and per text and head the two attention products;
//! - bias, residual, GELU, softmax and layer norm are fused passes over plain slices
//!   ([`super::kernels`], vectorized and chosen at run time).
use candle_core::{Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{Config, HiddenAct};

use super::kernels;

type CResult<T> = candle_core::Result<T>;

/// A linear layer: the weight transposed to (in, out) for `x · w`, and the bias.
struct Dense {
    w: Tensor,
    b: Vec<f32>,
}

struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

struct Layer {
    /// Q, K and V side by side: (hidden, 3 * hidden).
    qkv: Dense,
    attn_out: Dense,
    attn_norm: Norm,
    up: Dense,
    down: Dense,
    out_norm: Norm,
}

/// The encoder's weights and shape.
pub(crate) struct Encoder {
    hidden: usize,
    heads: usize,
    act: HiddenAct,
    eps: f32,
    vocab: usize,
    max_positions: usize,
    word: Vec<f32>,
    position: Vec<f32>,
    /// The first token-type embedding (quarry embeds single texts: all token types are 0).
    token_type: Vec<f32>,
    emb_norm: Norm,
    layers: Vec<Layer>,
}

fn vec(t: &Tensor) -> CResult<Vec<f32>> {
    t.flatten_all()?.to_vec1::<f32>()
}

fn dense(vb: &VarBuilder, n_in: usize, n_out: usize) -> CResult<Dense> {
    Ok(Dense {
        w: vb.get((n_out, n_in), "weight")?.t()?.contiguous()?,
        b: vec(&vb.get(n_out, "bias")?)?,
    })
}

fn norm(vb: &VarBuilder, n: usize) -> CResult<Norm> {
    // Old checkpoints name them gamma and beta (as candle-nn's `layer_norm` accepts).
    let (g, b) = if vb.contains_tensor("gamma") {
        ("gamma", "beta")
    } else {
        ("weight", "bias")
    };
    Ok(Norm {
        gamma: vec(&vb.get(n, g)?)?,
        beta: vec(&vb.get(n, b)?)?,
    })
}

/// `x` (m rows of `w`'s input width) times `w`: a new row-major (m, out) matrix.
fn matmul(x: &[f32], m: usize, w: &Tensor) -> CResult<Vec<f32>> {
    let (k, _) = w.dims2()?;
    let x = Tensor::from_slice(x, (m, k), &Device::Cpu)?;
    vec(&x.matmul(w)?)
}

impl Encoder {
    /// Loads the weights under `vb` (the prefix holding `embeddings.` and `encoder.`).
    pub(crate) fn load(vb: VarBuilder, config: &Config) -> CResult<Self> {
        let h = config.hidden_size;
        if config.num_attention_heads == 0 || !h.is_multiple_of(config.num_attention_heads) {
            candle_core::bail!(
                "hidden_size {h} is not a multiple of num_attention_heads {}",
                config.num_attention_heads
            );
        }
        let e = vb.pp("embeddings");
        let word = vec(&e.get((config.vocab_size, h), "word_embeddings.weight")?)?;
        let position = vec(&e.get(
            (config.max_position_embeddings, h),
            "position_embeddings.weight",
        )?)?;
        let token_type = vec(&e
            .get((config.type_vocab_size, h), "token_type_embeddings.weight")?
            .get(0)?)?;
        let emb_norm = norm(&e.pp("LayerNorm"), h)?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let l = vb.pp(format!("encoder.layer.{i}"));
            let a = l.pp("attention");
            let parts = ["query", "key", "value"]
                .map(|p| dense(&a.pp("self").pp(p), h, h))
                .into_iter()
                .collect::<CResult<Vec<_>>>()?;
            let w = Tensor::cat(&[&parts[0].w, &parts[1].w, &parts[2].w], 1)?.contiguous()?;
            let b = parts.iter().flat_map(|p| p.b.iter().copied()).collect();
            layers.push(Layer {
                qkv: Dense { w, b },
                attn_out: dense(&a.pp("output.dense"), h, h)?,
                attn_norm: norm(&a.pp("output.LayerNorm"), h)?,
                up: dense(&l.pp("intermediate.dense"), h, config.intermediate_size)?,
                down: dense(&l.pp("output.dense"), config.intermediate_size, h)?,
                out_norm: norm(&l.pp("output.LayerNorm"), h)?,
            });
        }
        Ok(Self {
            hidden: h,
            heads: config.num_attention_heads,
            act: config.hidden_act,
            eps: config.layer_norm_eps as f32,
            vocab: config.vocab_size,
            max_positions: config.max_position_embeddings,
            word,
            position,
            token_type,
            emb_norm,
            layers,
        })
    }

    /// The hidden states of the last layer for the texts `seqs` (token ids, special tokens
    /// included): one row of `hidden` per token, the texts' tokens one after the other.
    pub(crate) fn forward(&self, seqs: &[&[u32]]) -> CResult<Vec<f32>> {
        let h = self.hidden;
        let total: usize = seqs.iter().map(|s| s.len()).sum();
        let mut x = vec![0f32; total * h];
        let mut row = 0;
        for seq in seqs {
            if seq.len() > self.max_positions {
                candle_core::bail!(
                    "a text of {} tokens is longer than the model's {} positions",
                    seq.len(),
                    self.max_positions
                );
            }
            for (pos, &id) in seq.iter().enumerate() {
                let id = id as usize;
                if id >= self.vocab {
                    candle_core::bail!("token id {id} is outside the vocabulary ({})", self.vocab);
                }
                let out = &mut x[row * h..(row + 1) * h];
                let word = &self.word[id * h..(id + 1) * h];
                let position = &self.position[pos * h..(pos + 1) * h];
                for (((o, w), t), p) in out.iter_mut().zip(word).zip(&self.token_type).zip(position)
                {
                    *o = (w + t) + p;
                }
                row += 1;
            }
        }
        let zeros = vec![0f32; h];
        let n = &self.emb_norm;
        kernels::add_norm_rows(&mut x, &zeros, &[], &n.gamma, &n.beta, self.eps);
        for layer in &self.layers {
            x = self.layer(layer, seqs, x, total)?;
        }
        Ok(x)
    }

    fn layer(
        &self,
        layer: &Layer,
        seqs: &[&[u32]],
        x: Vec<f32>,
        total: usize,
    ) -> CResult<Vec<f32>> {
        let h = self.hidden;
        let qkv = matmul(&x, total, &layer.qkv.w)?;
        let ctx = self.attention(&qkv, &layer.qkv.b, seqs)?;
        let mut a = matmul(&ctx, total, &layer.attn_out.w)?;
        let n = &layer.attn_norm;
        kernels::add_norm_rows(&mut a, &layer.attn_out.b, &x, &n.gamma, &n.beta, self.eps);
        let mut up = matmul(&a, total, &layer.up.w)?;
        match self.act {
            HiddenAct::Gelu => kernels::bias_gelu_erf(&mut up, &layer.up.b),
            HiddenAct::GeluApproximate => kernels::bias_gelu_tanh(&mut up, &layer.up.b),
            HiddenAct::Relu => kernels::bias_relu(&mut up, &layer.up.b),
        }
        let mut out = matmul(&up, total, &layer.down.w)?;
        let n = &layer.out_norm;
        kernels::add_norm_rows(&mut out, &layer.down.b, &a, &n.gamma, &n.beta, self.eps);
        debug_assert_eq!(out.len(), total * h);
        Ok(out)
    }

    /// Self-attention of every text over its own tokens: `qkv` holds a row of Q|K|V (without
    /// their bias, `bias`) per token; the result a row of the heads' contexts per token.
    fn attention(&self, qkv: &[f32], bias: &[f32], seqs: &[&[u32]]) -> CResult<Vec<f32>> {
        let h = self.hidden;
        let heads = self.heads;
        let d = h / heads;
        let scale = 1.0 / (d as f32).sqrt();
        let mut ctx = vec![0f32; qkv.len() / 3];
        let mut start = 0;
        for seq in seqs {
            let l = seq.len();
            // Per head: Q scaled (l, d), K transposed (d, l), V (l, d), biases added.
            let mut q = vec![0f32; heads * l * d];
            let mut kt = vec![0f32; heads * d * l];
            let mut v = vec![0f32; heads * l * d];
            for t in 0..l {
                let r = &qkv[(start + t) * 3 * h..(start + t + 1) * 3 * h];
                for g in 0..heads {
                    for j in 0..d {
                        let c = g * d + j;
                        q[(g * l + t) * d + j] = (r[c] + bias[c]) * scale;
                        kt[(g * d + j) * l + t] = r[h + c] + bias[h + c];
                        v[(g * l + t) * d + j] = r[2 * h + c] + bias[2 * h + c];
                    }
                }
            }
            let dev = &Device::Cpu;
            let q = Tensor::from_vec(q, (heads, l, d), dev)?;
            let kt = Tensor::from_vec(kt, (heads, d, l), dev)?;
            let v = Tensor::from_vec(v, (heads, l, d), dev)?;
            let mut scores = vec(&q.matmul(&kt)?)?;
            kernels::softmax_rows(&mut scores, l);
            let probs = Tensor::from_vec(scores, (heads, l, l), dev)?;
            let out = vec(&probs.matmul(&v)?)?;
            for g in 0..heads {
                for t in 0..l {
                    let src = &out[(g * l + t) * d..(g * l + t + 1) * d];
                    let dst = (start + t) * h + g * d;
                    ctx[dst..dst + d].copy_from_slice(src);
                }
            }
            start += l;
        }
        Ok(ctx)
    }
}
