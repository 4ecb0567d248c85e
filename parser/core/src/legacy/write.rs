//! A minimal writer of rwkv.cpp, GGML, GGMF and GGJT files, for tests, the
//! corpus and fuzzing. It writes what it is given, valid or not: every
//! field can be set by hand to build a file that breaks one rule.
//!
//! [`TinyRwkv`] builds a small real-shaped rwkv.cpp model (the parameter
//! names and shapes rwkv.cpp's converter and loader use, for RWKV v4, v5.1,
//! v5.2, v6 and v7) and [`GgmlWriter::tiny_llama`] a small llama model in
//! the legacy llama.cpp formats.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use super::ggml::type_table;
use super::rwkv::{GLOBAL_NAMES, RwkvArch, rwkv_type};
use crate::limits;
use crate::parse::LegacyFormat;
use crate::types::GgmlType;

/// One rwkv.cpp parameter to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RwkvParamSpec {
    /// The key bytes.
    pub key: Vec<u8>,
    /// rwkv.cpp data type id.
    pub data_type: u32,
    /// Shape, ne0 first.
    pub dims: Vec<u32>,
    /// dim_count to write instead of `dims.len()`.
    pub dim_count: Option<u32>,
    /// key_length to write instead of `key.len()`.
    pub key_length: Option<u32>,
    /// The data bytes.
    pub data: Vec<u8>,
}

impl RwkvParamSpec {
    /// A parameter of `data_type` with zeroed data of the right size (none
    /// for removed or unknown types).
    pub fn zeroed(key: &str, data_type: u32, dims: &[u32]) -> RwkvParamSpec {
        let n = dims.iter().try_fold(1u64, |a, d| a.checked_mul(u64::from(*d))).unwrap_or(0);
        let size = rwkv_type(data_type).and_then(|t| t.ggml).and_then(|t| t.row_size(n)).unwrap_or(0);
        RwkvParamSpec {
            key: key.as_bytes().to_vec(),
            data_type,
            dims: dims.to_vec(),
            dim_count: None,
            key_length: None,
            data: vec![0; usize::try_from(size).unwrap_or(0)],
        }
    }
}

/// An rwkv.cpp file to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RwkvWriter {
    /// Magic (rwkv.cpp's is [`limits::RWKV_MAGIC`]).
    pub magic: u32,
    /// File version.
    pub version: u32,
    /// Vocabulary size.
    pub n_vocab: u32,
    /// Embedding width.
    pub n_embed: u32,
    /// Layer count.
    pub n_layer: u32,
    /// Model data type (rwkv.cpp id).
    pub data_type: u32,
    /// Parameters in order.
    pub params: Vec<RwkvParamSpec>,
}

fn u32_of(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl RwkvWriter {
    /// The file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for v in [self.magic, self.version, self.n_vocab, self.n_embed, self.n_layer, self.data_type] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for p in &self.params {
            let dim_count = p.dim_count.unwrap_or_else(|| u32_of(p.dims.len()));
            let key_length = p.key_length.unwrap_or_else(|| u32_of(p.key.len()));
            for v in [dim_count, key_length, p.data_type] {
                out.extend_from_slice(&v.to_le_bytes());
            }
            for d in &p.dims {
                out.extend_from_slice(&d.to_le_bytes());
            }
            out.extend_from_slice(&p.key);
            out.extend_from_slice(&p.data);
        }
        out
    }

    /// The parameter named `key`.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut RwkvParamSpec> {
        self.params.iter_mut().find(|p| p.key == key.as_bytes())
    }

    /// Removes the parameter named `key`.
    pub fn remove(&mut self, key: &str) -> Option<RwkvParamSpec> {
        let i = self.params.iter().position(|p| p.key == key.as_bytes())?;
        Some(self.params.remove(i))
    }

    /// Absolute offset of the parameter named `key` (its dim_count field).
    pub fn offset_of(&self, key: &str) -> Option<u64> {
        let mut at = limits::RWKV_HEADER_SIZE;
        for p in &self.params {
            if p.key == key.as_bytes() {
                return Some(at);
            }
            let len = 12usize
                .saturating_add(p.dims.len().saturating_mul(4))
                .saturating_add(p.key.len())
                .saturating_add(p.data.len());
            at = at.saturating_add(u64::try_from(len).unwrap_or(u64::MAX));
        }
        None
    }
}

/// Deterministic pseudo-random values in [-0.5, 0.5), seeded by a name.
fn values(seed: &str, n: usize) -> Vec<f32> {
    let mut state =
        seed.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)) | 1;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let top = u32::try_from(state >> 40).unwrap_or(0);
            // 24 random bits -> [0, 1) exactly representable in f32.
            f32::from_bits(0x3f80_0000 | (top >> 1)) - 1.5
        })
        .collect()
}

fn encode(ty: GgmlType, vals: &[f32]) -> Vec<u8> {
    match ty {
        GgmlType::F32 => vals.iter().flat_map(|v| v.to_le_bytes()).collect(),
        GgmlType::F16 => vals.iter().flat_map(|v| half::f16::from_f32(*v).to_le_bytes()).collect(),
        _ => {
            let mut out = Vec::new();
            match crate::numerics::quantize(ty, vals, &mut out) {
                Ok(()) => out,
                Err(_) => {
                    let n = u64::try_from(vals.len()).unwrap_or(0);
                    vec![0; usize::try_from(ty.row_size(n).unwrap_or(0)).unwrap_or(0)]
                }
            }
        }
    }
}

/// A small rwkv.cpp model with the parameter names and shapes of the
/// architecture version (as rwkv.cpp's converter writes them, ne0 first),
/// and deterministic pseudo-random data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TinyRwkv {
    /// Architecture version.
    pub arch: RwkvArch,
    /// File version (100 or 101).
    pub version: u32,
    /// Layers.
    pub n_layer: u32,
    /// Embedding width; a multiple of 8 (the head size).
    pub n_embed: u32,
    /// Vocabulary size.
    pub n_vocab: u32,
    /// rwkv.cpp data type of the 2-D matrices (0 FP32, 1 FP16, or a quantized id).
    pub matrix_type: u32,
}

impl TinyRwkv {
    /// RWKV v4, version 101, 2 layers, n_embed 64, n_vocab 256, FP16 matrices.
    pub fn new(arch: RwkvArch) -> TinyRwkv {
        TinyRwkv { arch, version: 101, n_layer: 2, n_embed: 64, n_vocab: 256, matrix_type: 1 }
    }

    /// The shape (ne0 first) of a parameter, by its name without `blocks.N.`.
    fn shape(&self, name: &str) -> Vec<u32> {
        let e = self.n_embed;
        let (v, f, hs) = (self.n_vocab, e.saturating_mul(4), 8u32);
        let h = e.checked_div(hs).unwrap_or(1).max(1);
        let v6 = self.arch == RwkvArch::V6;
        match name {
            "emb.weight" | "head.weight" => vec![e, v],
            "ffn.key.weight" => vec![e, f],
            "ffn.value.weight" => vec![f, e],
            n if n.ends_with(".weight") && (n.starts_with("att.") || n.starts_with("ffn.")) && !n.contains("ln_x") => {
                vec![e, e]
            }
            "att.time_decay" | "att.time_first" if self.arch == RwkvArch::V5_1 => vec![1, 1, h],
            "att.time_decay" | "att.time_faaaa" if self.arch == RwkvArch::V5_2 || v6 => {
                vec![1, hs, h]
            }
            "att.time_maa_w1" => vec![e, 160],
            "att.time_maa_w2" => vec![32, e, 5],
            "att.time_decay_w1" => vec![e, 64],
            "att.time_decay_w2" => vec![64, e],
            "att.x_rwkvag" => vec![e, 1, 6],
            "att.w1" | "att.a1" | "att.g1" | "att.v1" => vec![e, 32],
            "att.w2" | "att.a2" | "att.g2" | "att.v2" => vec![32, e],
            "att.w0" | "att.a0" | "att.v0" | "att.k_k" | "att.k_a" | "ffn.x_k" => vec![e, 1, 1],
            "att.r_k" => vec![hs, h],
            _ => vec![e],
        }
    }

    /// The rwkv.cpp type a parameter gets: quantized 2-D matrices where
    /// rwkv.cpp's quantizer would quantize, FP16 where its converter would
    /// use FP16, FP32 otherwise.
    fn type_of(&self, full: &str, short: &str, dims: &[u32]) -> u32 {
        let two_d = dims.len() == 2;
        let fp16_ok = two_d && !short.starts_with("att.time_") && short != "att.r_k";
        let quant = rwkv_type(self.matrix_type).and_then(|t| t.ggml).filter(|t| t.is_quantized());
        if let Some(q) = quant {
            let v7_lora = ["att.w1", "att.w2", "att.a1", "att.a2", "att.v1", "att.v2", "att.g1", "att.g2", "att.r_k"]
                .contains(&short);
            let fits = dims.first().is_some_and(|d| d.checked_rem(q.block_size()) == Some(0));
            if two_d && fits && full != "emb.weight" && full != "head.weight" && !v7_lora {
                return self.matrix_type;
            }
            return if fp16_ok { 1 } else { 0 };
        }
        if self.matrix_type == 1 && fp16_ok { 1 } else { 0 }
    }

    fn param(&self, full: &str, short: &str) -> RwkvParamSpec {
        let dims = self.shape(short);
        let data_type = self.type_of(full, short, &dims);
        let n = dims.iter().map(|d| usize::try_from(*d).unwrap_or(0)).product::<usize>();
        let mut vals = values(full, n);
        if short.ends_with("ln0.weight")
            || short.ends_with("ln1.weight")
            || short.ends_with("ln2.weight")
            || full == "ln_out.weight"
        {
            vals.iter_mut().for_each(|x| *x += 1.0);
        }
        let ty = rwkv_type(data_type).and_then(|t| t.ggml).unwrap_or(GgmlType::F32);
        RwkvParamSpec {
            key: full.as_bytes().to_vec(),
            data_type,
            dims,
            dim_count: None,
            key_length: None,
            data: encode(ty, &vals),
        }
    }

    /// Builds the model.
    pub fn build(&self) -> RwkvWriter {
        let mut params = Vec::new();
        let [emb, ln0w, ln0b, out_w, out_b, head] = GLOBAL_NAMES;
        params.push(self.param(emb, emb));
        params.push(self.param(ln0w, "ln0.weight"));
        params.push(self.param(ln0b, "ln0.bias"));
        for layer in 0..self.n_layer {
            for short in self.arch.layer_names(u64::from(layer)) {
                params.push(self.param(&format!("blocks.{layer}.{short}"), short));
            }
        }
        for name in [out_w, out_b, head] {
            params.push(self.param(name, name));
        }
        RwkvWriter {
            magic: limits::RWKV_MAGIC,
            version: self.version,
            n_vocab: self.n_vocab,
            n_embed: self.n_embed,
            n_layer: self.n_layer,
            data_type: self.matrix_type,
            params,
        }
    }
}

/// One GGML/GGMF/GGJT tensor to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GgmlTensorSpec {
    /// Name bytes.
    pub name: Vec<u8>,
    /// Type id (of the era table).
    pub type_id: u32,
    /// ne[], ne0 first.
    pub dims: Vec<u32>,
    /// n_dims to write instead of `dims.len()`.
    pub n_dims: Option<u32>,
    /// name_len to write instead of `name.len()`.
    pub name_len: Option<u32>,
    /// Data bytes.
    pub data: Vec<u8>,
}

/// A GGML, GGMF or GGJT file to write (llama layout).
#[derive(Clone, Debug, PartialEq)]
pub struct GgmlWriter {
    /// Which format (GGML, GGMF or GGJT).
    pub format: LegacyFormat,
    /// Version written after the magic (not for GGML).
    pub version: u32,
    /// n_vocab, n_embd, n_mult, n_head, n_layer, n_rot, ftype.
    pub hparams: [u32; limits::LEGACY_HPARAMS],
    /// Vocabulary: text and score (the score is written for GGMF and GGJT).
    pub vocab: Vec<(Vec<u8>, f32)>,
    /// Tensors in order.
    pub tensors: Vec<GgmlTensorSpec>,
    /// The byte GGJT padding is filled with (0 in a valid file).
    pub pad_byte: u8,
}

/// The llama.cpp ftype for a tensor type id of GGJT v3 (and earlier for 0-3).
fn ftype_for(type_id: u32) -> u32 {
    match type_id {
        0..=3 => type_id,
        8 => 7,
        6 => 8,
        7 => 9,
        10 => 10,
        11 => 12,
        12 => 15,
        13 => 17,
        14 => 18,
        _ => 0,
    }
}

impl GgmlWriter {
    /// A one-layer llama model: vocabulary of 8, n_embd 32 (256 for
    /// k-quants), norms in F32 and matrices of `matrix_type` (an id of the
    /// format's era table), with pseudo-random data.
    pub fn tiny_llama(format: LegacyFormat, version: u32, matrix_type: u32) -> GgmlWriter {
        let table = type_table(format, Some(version));
        let era = table.and_then(|t| t.get(matrix_type));
        let e = era.map_or(32, |t| t.block_size.max(32));
        let ff = e.saturating_mul(2);
        let vocab: Vec<(Vec<u8>, f32)> = ["<unk>", "<s>", "</s>", " the", "a", "b", "c", "d"]
            .iter()
            .enumerate()
            .map(|(i, t)| (t.as_bytes().to_vec(), -(f32::from(u8::try_from(i).unwrap_or(0)))))
            .collect();
        let mut w = GgmlWriter {
            format,
            version,
            hparams: [8, e, 32, 4, 1, 8, ftype_for(matrix_type)],
            vocab,
            tensors: Vec::new(),
            pad_byte: 0,
        };
        let shapes: [(&str, Vec<u32>); 12] = [
            ("tok_embeddings.weight", vec![e, 8]),
            ("norm.weight", vec![e]),
            ("output.weight", vec![e, 8]),
            ("layers.0.attention_norm.weight", vec![e]),
            ("layers.0.attention.wq.weight", vec![e, e]),
            ("layers.0.attention.wk.weight", vec![e, e]),
            ("layers.0.attention.wv.weight", vec![e, e]),
            ("layers.0.attention.wo.weight", vec![e, e]),
            ("layers.0.ffn_norm.weight", vec![e]),
            ("layers.0.feed_forward.w1.weight", vec![e, ff]),
            ("layers.0.feed_forward.w2.weight", vec![ff, e]),
            ("layers.0.feed_forward.w3.weight", vec![e, ff]),
        ];
        for (name, dims) in shapes {
            let type_id = if dims.len() == 2 { matrix_type } else { 0 };
            w.tensors.push(w.tensor(name, type_id, &dims));
        }
        w
    }

    /// A tensor of this file's era with pseudo-random data of the right size.
    pub fn tensor(&self, name: &str, type_id: u32, dims: &[u32]) -> GgmlTensorSpec {
        let n = dims.iter().map(|d| usize::try_from(*d).unwrap_or(0)).product::<usize>();
        let era = type_table(self.format, Some(self.version)).and_then(|t| t.get(type_id));
        let data = match era {
            Some(t) => match t.current {
                Some(ty) => encode(ty, &values(name, n)),
                None => {
                    // An old block layout: opaque bytes of the era's size.
                    let blocks = n.checked_div(usize::try_from(t.block_size).unwrap_or(1)).unwrap_or(0);
                    let size = blocks.saturating_mul(usize::try_from(t.type_size).unwrap_or(0));
                    values(name, size)
                        .iter()
                        .map(|v| v.to_bits().to_le_bytes().first().copied().unwrap_or(0) & 0x77)
                        .collect()
                }
            },
            None => Vec::new(),
        };
        GgmlTensorSpec {
            name: name.as_bytes().to_vec(),
            type_id,
            dims: dims.to_vec(),
            n_dims: None,
            name_len: None,
            data,
        }
    }

    /// The file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let magic: &[u8; 4] = match self.format {
            LegacyFormat::Ggml => b"lmgg",
            LegacyFormat::Ggmf => b"fmgg",
            _ => b"tjgg",
        };
        out.extend_from_slice(magic);
        if self.format != LegacyFormat::Ggml {
            out.extend_from_slice(&self.version.to_le_bytes());
        }
        for v in self.hparams {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for (text, score) in &self.vocab {
            out.extend_from_slice(&u32_of(text.len()).to_le_bytes());
            out.extend_from_slice(text);
            if self.format != LegacyFormat::Ggml {
                out.extend_from_slice(&score.to_le_bytes());
            }
        }
        for t in &self.tensors {
            let n_dims = t.n_dims.unwrap_or_else(|| u32_of(t.dims.len()));
            let name_len = t.name_len.unwrap_or_else(|| u32_of(t.name.len()));
            for v in [n_dims, name_len, t.type_id] {
                out.extend_from_slice(&v.to_le_bytes());
            }
            for d in &t.dims {
                out.extend_from_slice(&d.to_le_bytes());
            }
            out.extend_from_slice(&t.name);
            if self.format == LegacyFormat::Ggjt {
                let align = usize::try_from(limits::GGJT_ALIGNMENT).unwrap_or(32);
                let pad = out.len().wrapping_neg().checked_rem(align).unwrap_or(0);
                out.resize(out.len().saturating_add(pad), self.pad_byte);
            }
            out.extend_from_slice(&t.data);
        }
        out
    }
}
