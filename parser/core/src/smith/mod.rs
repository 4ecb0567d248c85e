//! `gguf-smith`: a generator of valid GGUF files driven by
//! [`arbitrary::Unstructured`], in the manner of `wasm-smith`.
//!
//! A [`Config`] is itself [`Arbitrary`]: every fuzz run picks its own
//! profile, limits and switches (swarm testing), and [`generate`] builds a
//! [`GgufModel`] that is valid under [`Config::profile`] (zero errors;
//! warnings and infos are allowed). Bytes come from the library's own
//! writer, [`GgufModel::to_bytes`].
//!
//! [`mutate`] breaks exactly one thing in a generated file and says which
//! rule must then fire.
//!
//! Everything the generator produces is bounded by the constants below, so
//! a run never allocates more than a few hundred kilobytes, whatever the
//! input.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod mutate;

use std::collections::HashSet;

use arbitrary::{Arbitrary, Error, Result, Unstructured};

use crate::limits;
use crate::parse::ByteOrder;
use crate::parse::align_up;
use crate::rules::{Level, Profile, RuleId};
use crate::seeded::SplitMix64;
use crate::types::{GgmlType, ValueType};
use crate::write::{GgufModel, OwnedTensor, OwnedValue};

/// Upper bound of [`Config::max_kvs`].
pub const MAX_KVS: usize = 24;
/// Upper bound of [`Config::max_array_len`].
pub const MAX_ARRAY_LEN: usize = 48;
/// Upper bound of [`Config::max_string_len`].
pub const MAX_STRING_LEN: usize = 40;
/// Upper bound of [`Config::max_values`].
pub const MAX_VALUES: usize = 1024;
/// Upper bound of [`Config::max_tensors`].
pub const MAX_TENSORS: usize = 12;
/// Upper bound of [`Config::max_tensor_bytes`].
pub const MAX_TENSOR_BYTES: u64 = 4096;
/// Largest `log2` of a generated `general.alignment` (4 KiB).
pub const MAX_ALIGNMENT_LOG2: u32 = 12;
/// Upper bound of [`Config::max_nesting`]: the parser decodes arrays at
/// most [`limits::MAX_ARRAY_DEPTH`] deep, the outermost one included.
pub const MAX_NESTING: u32 = limits::MAX_ARRAY_DEPTH - 1;

/// What a generated file looks like. Each field is one swarm-testing
/// switch or limit; [`Arbitrary`] picks all of them per run, consistently
/// with [`Config::profile`] (a switch that would make the file invalid
/// under the profile is never turned on).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The profile the file must be valid under. `strict` files are also
    /// valid under `spec` (unless [`Config::naming_warnings`]) and under
    /// `ggml` (unless big-endian); see [`Config::valid_under`].
    pub profile: Profile,
    /// Header version: 2 or 3 (same layout).
    pub version: u32,
    /// Byte order of every number. Big-endian only when the profile allows
    /// it (not `ggml`, which rejects it on little-endian hosts).
    pub byte_order: ByteOrder,
    /// `general.alignment`, or `None` for no key (the default 32). `strict`:
    /// powers of two from 8; `spec`: any multiple of 8; `ggml`: any power
    /// of two, 1 included.
    pub alignment: Option<u32>,
    /// Write `general.architecture` (always on for `strict` and `spec`,
    /// where it is required).
    pub architecture: bool,
    /// Write well-known keys with their standard types (`general.name`,
    /// `general.file_type`, `{arch}.context_length`, ...).
    pub standard_keys: bool,
    /// Write a consistent tokenizer: `tokenizer.ggml.tokens`, `scores` and
    /// `token_type` of one length, and special token ids below it.
    pub tokenizer: bool,
    /// Write `general.quantization_version` when some tensor is
    /// block-quantized (always on for `strict` and `spec`, where it is
    /// required).
    pub quantization_version: bool,
    /// Most additional random key/value pairs.
    pub max_kvs: usize,
    /// Value types the random pairs may use (never empty; `array` means
    /// arrays of any element type in this list).
    pub value_types: Vec<ValueType>,
    /// Longest array.
    pub max_array_len: usize,
    /// Longest string, in characters.
    pub max_string_len: usize,
    /// Deepest nesting of arrays inside arrays: 0 = no nesting. Only the
    /// `spec` profile allows nesting.
    pub max_nesting: u32,
    /// Budget of values (scalars, strings and array elements) over the
    /// whole file, to bound nested arrays.
    pub max_values: usize,
    /// Most tensors.
    pub max_tensors: usize,
    /// Tensor types to draw from (never empty): live ggml types only.
    pub tensor_types: Vec<GgmlType>,
    /// Most dimensions of a tensor (1..=4).
    pub max_dims: u32,
    /// Allow `n_dims` = 0 (a scalar; only for types with block size 1).
    pub zero_n_dims: bool,
    /// Allow dimensions of 0 (empty tensors).
    pub zero_dims: bool,
    /// Largest tensor, in bytes (the shape is shrunk to fit).
    pub max_tensor_bytes: u64,
    /// Lay tensor data out in an order other than the infos' (`spec` only;
    /// ggml requires info order).
    pub shuffle_data: bool,
    /// Leave aligned gaps between tensors (`spec` only).
    pub data_gaps: bool,
    /// Pad the end of the file to the alignment. `strict` and `ggml`
    /// require it when there are tensors; it is optional otherwise.
    pub pad_end: bool,
    /// Bytes of garbage after the end of the data (a warning under
    /// `strict`, an info under `spec`).
    pub trailing_bytes: usize,
    /// Keys and architecture names that only draw warnings under `strict`
    /// (upper case, `-`): errors under `spec`, so never with it.
    pub naming_warnings: bool,
    /// Multi-byte UTF-8 in strings and tensor names.
    pub unicode: bool,
    /// Tensor names of exactly 64 bytes and an empty tensor name (`spec`
    /// only: ggml allows at most 63, `strict` rejects both).
    pub spec_tensor_names: bool,
    /// Bytes only ggml accepts (`ggml` only): strings that are not UTF-8,
    /// bool bytes above 1, non-ASCII keys, tensor names with a NUL byte,
    /// an empty tensor name.
    pub lax_bytes: bool,
    /// Draw a third of scalar values from each type's edge values (0, ±1,
    /// the extremes, -0.0, infinities, NaNs with payloads, subnormals,
    /// empty strings and strings with NUL bytes) instead of uniformly. Off
    /// in [`Arbitrary`] configurations; the writer fuzzing harness turns it
    /// on.
    pub edge_values: bool,
}

impl Default for Config {
    /// A small `strict` little-endian v3 configuration with every type.
    fn default() -> Config {
        Config {
            profile: Profile::Strict,
            version: 3,
            byte_order: ByteOrder::LittleEndian,
            alignment: None,
            architecture: true,
            standard_keys: true,
            tokenizer: true,
            quantization_version: true,
            max_kvs: 8,
            value_types: ValueType::ALL.to_vec(),
            max_array_len: 8,
            max_string_len: 16,
            max_nesting: 0,
            max_values: 256,
            max_tensors: 4,
            tensor_types: GgmlType::ALL.to_vec(),
            max_dims: 4,
            zero_n_dims: false,
            zero_dims: false,
            max_tensor_bytes: 1024,
            shuffle_data: false,
            data_gaps: false,
            pad_end: true,
            trailing_bytes: 0,
            naming_warnings: false,
            unicode: false,
            spec_tensor_names: false,
            lax_bytes: false,
            edge_values: false,
        }
    }
}

impl<'a> Arbitrary<'a> for Config {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Config> {
        // Mostly strict: that is the profile the mutator works from and the
        // one most users run.
        let profile = match u.int_in_range(0u8..=9)? {
            0..=5 => Profile::Strict,
            6..=7 => Profile::Spec,
            _ => Profile::Ggml,
        };
        Config::arbitrary_for(u, profile)
    }
}

/// Picks a non-empty subset of `all` from a bit mask (all of it when the
/// mask selects nothing, e.g. when the input is exhausted).
fn subset<T: Copy>(u: &mut Unstructured<'_>, all: &[T]) -> Result<Vec<T>> {
    let mask: u64 = u.arbitrary()?;
    let picked: Vec<T> = all
        .iter()
        .enumerate()
        .filter(|(i, _)| mask.checked_shr(u32::try_from(*i).unwrap_or(63)).unwrap_or(0) & 1 == 1)
        .map(|(_, t)| *t)
        .collect();
    Ok(if picked.is_empty() { all.to_vec() } else { picked })
}

impl Config {
    /// An arbitrary configuration for a given profile.
    pub fn arbitrary_for(u: &mut Unstructured<'_>, profile: Profile) -> Result<Config> {
        let strict = profile == Profile::Strict;
        let spec = profile == Profile::Spec;
        let ggml = profile == Profile::Ggml;
        let version = if u.ratio(1u8, 4)? { 2 } else { 3 };
        // Big-endian files load nowhere common: an error under strict and ggml.
        let byte_order = if spec && u.ratio(1u8, 4)? { ByteOrder::BigEndian } else { ByteOrder::LittleEndian };
        let alignment = if u.arbitrary()? {
            None
        } else if spec && u.ratio(1u8, 2)? {
            // Any multiple of 8, powers of two or not (24, 40, ...).
            Some(8 * u.int_in_range(1u32..=64)?)
        } else {
            let lo = if ggml { 0 } else { 3 };
            Some(1u32 << u.int_in_range(lo..=MAX_ALIGNMENT_LOG2)?)
        };
        let max_nesting = if spec && u.ratio(1u8, 3)? { u.int_in_range(1..=MAX_NESTING)? } else { 0 };
        let tensor_count_cap = u.int_in_range(0..=MAX_TENSORS)?;
        Ok(Config {
            profile,
            version,
            byte_order,
            alignment,
            architecture: !ggml || u.arbitrary()?,
            standard_keys: u.arbitrary()?,
            tokenizer: u.arbitrary()?,
            quantization_version: !ggml || u.arbitrary()?,
            max_kvs: u.int_in_range(0..=MAX_KVS)?,
            value_types: subset(u, &ValueType::ALL)?,
            max_array_len: u.int_in_range(0..=MAX_ARRAY_LEN)?,
            max_string_len: u.int_in_range(0..=MAX_STRING_LEN)?,
            max_nesting,
            max_values: u.int_in_range(16..=MAX_VALUES)?,
            max_tensors: tensor_count_cap,
            tensor_types: subset(u, &GgmlType::ALL)?,
            max_dims: u.int_in_range(1..=limits::MAX_DIMS)?,
            zero_n_dims: u.arbitrary()?,
            zero_dims: u.arbitrary()?,
            max_tensor_bytes: u.int_in_range(1..=MAX_TENSOR_BYTES)?,
            shuffle_data: spec && u.arbitrary()?,
            data_gaps: spec && u.arbitrary()?,
            pad_end: !spec || u.arbitrary()?,
            trailing_bytes: if u.ratio(1u8, 5)? { u.int_in_range(1..=64)? } else { 0 },
            naming_warnings: !spec && u.ratio(1u8, 4)?,
            unicode: u.arbitrary()?,
            spec_tensor_names: spec && u.arbitrary()?,
            lax_bytes: ggml && u.arbitrary()?,
            edge_values: false,
        })
        .map(|c| Config { architecture: c.architecture || strict || spec, ..c })
    }

    /// Every profile under which a file generated with this configuration
    /// must have zero errors: its own, and for a `strict` configuration
    /// every profile under which none of the findings it may provoke on
    /// purpose (see [`Config::provoked`]) is an error, as the catalogue says.
    pub fn valid_under(&self) -> Vec<Profile> {
        let provoked = self.provoked();
        Profile::ALL
            .into_iter()
            .filter(|p| {
                *p == self.profile
                    || (self.profile == Profile::Strict && provoked.iter().all(|r| r.rule().level(*p) != Level::Error))
            })
            .collect()
    }

    /// Rules a file generated with this configuration may report on
    /// purpose, beyond what every valid file may: naming that the spec
    /// forbids, big-endian byte order.
    pub fn provoked(&self) -> Vec<RuleId> {
        let mut out = Vec::new();
        if self.naming_warnings {
            out.extend([RuleId::KeyNaming, RuleId::ArchitectureCharset]);
        }
        if self.byte_order == ByteOrder::BigEndian {
            out.push(RuleId::ByteOrderBigEndian);
        }
        out
    }

    /// The alignment in effect.
    pub fn effective_alignment(&self) -> u64 {
        self.alignment.map_or(limits::DEFAULT_ALIGNMENT, u64::from)
    }
}

/// First key segments of random pairs: never `general`, `tokenizer`,
/// `split` or a generated architecture name, so a random pair is never
/// mistaken for a standard key.
const KEY_ROOTS: &[&str] = &["custom", "fuzz", "meta", "train", "quant_info", "x0"];

/// Architecture names: all `[a-z0-9]+`, none of them a [`KEY_ROOTS`]
/// entry, and none an architecture llama.cpp knows: the generator writes
/// containers, not models, so the model layer reports them "not checked"
/// instead of judging random tensors against a real architecture.
const ARCHES: &[&str] = &["plain", "toy", "synth", "demo0", "arch7", "sample", "neutral", "widget", "blob", "zz9"];

/// Architecture names outside `[a-z0-9]+` (a warning under strict), shaped
/// like real ones (`command-r`, `nemotron_h`) but unknown to llama.cpp.
const ARCHES_WARN: &[&str] = &["toy-r", "synth_h", "demo-oss", "plain4_5-moe"];

const ASCII_CHARS: &[u8] =
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-.,:;!?/\\'\"()[]{}<>=+*#@$%^&|~`\n\t";
const UNICODE_CHARS: &[char] =
    &['é', 'ß', 'Ж', 'ю', '日', '本', '語', '\u{2581}', '🦀', '\u{fffd}', '\u{0}', '\u{7f}', '\u{200b}'];

/// Mutable state of one generation run.
struct Gen<'c> {
    cfg: &'c Config,
    keys: HashSet<Vec<u8>>,
    values_left: usize,
}

/// Token texts are distinct (tokenizer-duplicate-token): a repeat, or an
/// empty text (llama.cpp's `[EMPTY_i]`), gets `#i` appended until it is new
/// (an earlier token may itself be spelled `x#i`: fuzz finding F12).
fn make_distinct(seen: &mut HashSet<Vec<u8>>, t: &mut Vec<u8>, i: usize) {
    while t.is_empty() || seen.contains(t.as_slice()) {
        t.extend_from_slice(format!("#{i}").as_bytes());
    }
    seen.insert(t.clone());
}

/// Generates a file valid under `cfg.profile` (see [`Config::valid_under`]).
pub fn generate(u: &mut Unstructured<'_>, cfg: &Config) -> Result<GgufModel> {
    let mut g = Gen { cfg, keys: HashSet::new(), values_left: cfg.max_values.min(MAX_VALUES) };
    let tensors = g.tensors(u)?;
    let any_quantized = tensors.iter().any(|t| GgmlType::from_id(t.type_id).is_some_and(GgmlType::is_quantized));
    let mut kvs = g.well_known(u, any_quantized)?;
    let n_random = u.int_in_range(0..=cfg.max_kvs.min(MAX_KVS))?;
    for _ in 0..n_random {
        let key = g.random_key(u)?;
        let value = g.value(u, 0)?;
        kvs.push((key, value));
    }
    shuffle(u, &mut kvs)?;
    let mut model = GgufModel {
        version: cfg.version,
        order: cfg.byte_order,
        kvs,
        tensors,
        pad_end: cfg.pad_end || cfg.trailing_bytes > 0,
        trailing: Vec::new(),
    };
    if cfg.profile != Profile::Spec && !model.tensors.is_empty() {
        // ggml reads the padded blob: the final padding is required.
        model.pad_end = true;
    }
    g.layout(u, &mut model)?;
    if cfg.trailing_bytes > 0 {
        let mut t = vec![0u8; cfg.trailing_bytes.min(64)];
        u.fill_buffer(&mut t)?;
        // A non-zero first byte: trailing garbage, not more padding.
        if let Some(first) = t.first_mut() {
            *first |= 1;
        }
        model.trailing = t;
    }
    Ok(model)
}

/// An arbitrary configuration and a file generated from it.
pub fn arbitrary_file(u: &mut Unstructured<'_>) -> Result<(Config, GgufModel)> {
    let cfg = Config::arbitrary(u)?;
    let model = generate(u, &cfg)?;
    Ok((cfg, model))
}

fn shuffle<T>(u: &mut Unstructured<'_>, items: &mut [T]) -> Result<()> {
    for i in (1..items.len()).rev() {
        let j = u.int_in_range(0..=i)?;
        items.swap(i, j);
    }
    Ok(())
}

impl Gen<'_> {
    fn take_values(&mut self, n: usize) -> usize {
        let n = n.min(self.values_left);
        self.values_left -= n;
        n
    }

    /// Registers a key; false if it is already used.
    fn claim(&mut self, key: &[u8]) -> bool {
        self.keys.insert(key.to_vec())
    }

    fn well_known(&mut self, u: &mut Unstructured<'_>, any_quantized: bool) -> Result<Vec<(Vec<u8>, OwnedValue)>> {
        let cfg = self.cfg;
        let mut kvs: Vec<(Vec<u8>, OwnedValue)> = Vec::new();
        let mut push = |g: &mut Gen<'_>, key: String, value: OwnedValue| {
            if g.claim(key.as_bytes()) {
                kvs.push((key.into_bytes(), value));
            }
        };
        let arch = if cfg.naming_warnings && u.ratio(1u8, 3)? { *u.choose(ARCHES_WARN)? } else { *u.choose(ARCHES)? };
        if cfg.architecture {
            push(self, "general.architecture".into(), OwnedValue::str(arch));
        }
        if let Some(a) = cfg.alignment {
            push(self, "general.alignment".into(), OwnedValue::U32(a));
        }
        if any_quantized && cfg.quantization_version {
            push(self, "general.quantization_version".into(), OwnedValue::U32(2));
        }
        if cfg.standard_keys {
            let name = self.string(u)?;
            push(self, "general.name".into(), name);
            push(self, "general.file_type".into(), OwnedValue::U32(u.int_in_range(0..=40)?));
            let n = u.int_in_range(0..=cfg.max_array_len.min(4))?;
            let n = self.take_values(n);
            let mut tags = Vec::with_capacity(n);
            for _ in 0..n {
                tags.push(self.string(u)?);
            }
            push(self, "general.tags".into(), OwnedValue::Array(ValueType::String, tags));
            if cfg.architecture {
                push(self, format!("{arch}.context_length"), OwnedValue::U32(u.arbitrary()?));
                let layers = u.int_in_range(1..=8u32)?;
                push(self, format!("{arch}.block_count"), OwnedValue::U32(layers));
                let heads = if u.arbitrary()? {
                    OwnedValue::U32(u.arbitrary()?)
                } else {
                    let elem = if u.arbitrary()? { ValueType::I32 } else { ValueType::U32 };
                    // One value per layer (model-layer-array): all of them
                    // or, when the value budget is short, none.
                    let want = usize::try_from(layers).unwrap_or(1);
                    let n = self.take_values(want);
                    let n = if n == want { n } else { 0 };
                    let mut items = Vec::with_capacity(n);
                    for _ in 0..n {
                        let v: u16 = u.arbitrary()?;
                        items.push(if elem == ValueType::I32 {
                            OwnedValue::I32(i32::from(v))
                        } else {
                            OwnedValue::U32(u32::from(v))
                        });
                    }
                    if items.is_empty() { OwnedValue::U32(u.arbitrary()?) } else { OwnedValue::Array(elem, items) }
                };
                push(self, format!("{arch}.attention.head_count"), heads);
                push(self, format!("{arch}.rope.freq_base"), OwnedValue::F32(u.arbitrary()?));
            }
        }
        if cfg.tokenizer {
            let n = u.int_in_range(0..=cfg.max_array_len.min(MAX_ARRAY_LEN))?;
            let n = self.take_values(n.saturating_mul(3)) / 3;
            let mut tokens = Vec::with_capacity(n);
            let mut scores = Vec::with_capacity(n);
            let mut types = Vec::with_capacity(n);
            let mut seen: HashSet<Vec<u8>> = HashSet::new();
            for i in 0..n {
                let mut token = self.string(u)?;
                if let OwnedValue::String(t) = &mut token {
                    // Six bytes shaped `<0x..>` read as a byte token
                    // (tokenizer-byte-token): keep text tokens clear of it.
                    if t.len() == 6 && t.starts_with(b"<0x") {
                        t.push(b'_');
                    }
                    make_distinct(&mut seen, t, i);
                }
                tokens.push(token);
                scores.push(OwnedValue::F32(u.arbitrary()?));
                // NORMAL..UNUSED: a BYTE token (6) must be spelled `<0xHH>`.
                types.push(OwnedValue::I32(u.int_in_range(1..=5)?));
            }
            // A BPE model (gpt2) needs merges (tokenizer-merges-missing).
            let bpe: bool = u.arbitrary()?;
            if !bpe {
                // A SentencePiece vocabulary spells any text with its 256
                // byte tokens (tokenizer-byte-fallback); no text token above
                // has their shape.
                for b in 0..=255u8 {
                    tokens.push(OwnedValue::String(format!("<0x{b:02X}>").into_bytes()));
                    scores.push(OwnedValue::F32(0.0));
                    types.push(OwnedValue::I32(limits::LLAMA_TOKEN_TYPE_BYTE));
                }
            }
            push(self, "tokenizer.ggml.model".into(), OwnedValue::str(if bpe { "gpt2" } else { "llama" }));
            if bpe {
                push(self, "tokenizer.ggml.merges".into(), OwnedValue::Array(ValueType::String, Vec::new()));
            }
            push(self, "tokenizer.ggml.tokens".into(), OwnedValue::Array(ValueType::String, tokens));
            push(self, "tokenizer.ggml.scores".into(), OwnedValue::Array(ValueType::F32, scores));
            push(self, "tokenizer.ggml.token_type".into(), OwnedValue::Array(ValueType::I32, types));
            if n > 0 {
                let top = u32::try_from(n - 1).unwrap_or(0);
                push(self, "tokenizer.ggml.bos_token_id".into(), OwnedValue::U32(u.int_in_range(0..=top)?));
                push(self, "tokenizer.ggml.eos_token_id".into(), OwnedValue::U32(u.int_in_range(0..=top)?));
            }
            push(self, "tokenizer.ggml.add_bos_token".into(), OwnedValue::Bool(u8::from(u.arbitrary::<bool>()?)));
        }
        Ok(kvs)
    }

    /// A fresh random key under one of [`KEY_ROOTS`].
    fn random_key(&mut self, u: &mut Unstructured<'_>) -> Result<Vec<u8>> {
        let cfg = self.cfg;
        let mut key = u.choose(KEY_ROOTS)?.as_bytes().to_vec();
        let segments = u.int_in_range(1..=3)?;
        for _ in 0..segments {
            key.extend_from_slice(b".");
            let len = u.int_in_range(1..=10)?;
            for _ in 0..len {
                let b = match u.int_in_range(0u8..=19)? {
                    0 if cfg.naming_warnings => *u.choose(b"ABCXYZ-")?,
                    1 if cfg.lax_bytes => u.int_in_range(0x80..=0xFF)?,
                    2..=4 => *u.choose(b"0123456789_")?,
                    _ => u.int_in_range(b'a'..=b'z')?,
                };
                key.push(b);
            }
        }
        // On a clash, a numeric suffix makes the key unique.
        let mut candidate = key.clone();
        let mut n = 0u32;
        while !self.claim(&candidate) {
            n = n.saturating_add(1);
            candidate = key.clone();
            candidate.extend_from_slice(format!("_{n}").as_bytes());
        }
        Ok(candidate)
    }

    /// A string value: UTF-8 (with multi-byte characters if configured),
    /// or any bytes under `lax_bytes`.
    fn string(&mut self, u: &mut Unstructured<'_>) -> Result<OwnedValue> {
        let len = u.int_in_range(0..=self.cfg.max_string_len.min(MAX_STRING_LEN))?;
        if self.cfg.lax_bytes && u.ratio(1u8, 4)? {
            let mut b = vec![0u8; len];
            u.fill_buffer(&mut b)?;
            return Ok(OwnedValue::String(b));
        }
        let mut s = String::with_capacity(len);
        for _ in 0..len {
            if self.cfg.unicode && u.ratio(1u8, 4)? {
                s.push(*u.choose(UNICODE_CHARS)?);
            } else {
                s.push(char::from(*u.choose(ASCII_CHARS)?));
            }
        }
        Ok(OwnedValue::String(s.into_bytes()))
    }

    /// A value of an allowed type; `depth` is the array nesting so far.
    fn value(&mut self, u: &mut Unstructured<'_>, depth: u32) -> Result<OwnedValue> {
        let ty = *u.choose(&self.cfg.value_types)?;
        self.value_of(u, ty, depth)
    }

    fn value_of(&mut self, u: &mut Unstructured<'_>, ty: ValueType, depth: u32) -> Result<OwnedValue> {
        if self.cfg.edge_values && ty != ValueType::Array && u.ratio(1u8, 3)? {
            self.take_values(1);
            return edge_value(u, ty, self.cfg.lax_bytes);
        }
        self.take_values(1);
        Ok(match ty {
            ValueType::U8 => OwnedValue::U8(u.arbitrary()?),
            ValueType::I8 => OwnedValue::I8(u.arbitrary()?),
            ValueType::U16 => OwnedValue::U16(u.arbitrary()?),
            ValueType::I16 => OwnedValue::I16(u.arbitrary()?),
            ValueType::U32 => OwnedValue::U32(u.arbitrary()?),
            ValueType::I32 => OwnedValue::I32(u.arbitrary()?),
            ValueType::U64 => OwnedValue::U64(u.arbitrary()?),
            ValueType::I64 => OwnedValue::I64(u.arbitrary()?),
            // Any bit pattern, NaN payloads included: the writer and the
            // round trip must keep the bits.
            ValueType::F32 => OwnedValue::F32(f32::from_bits(u.arbitrary()?)),
            ValueType::F64 => OwnedValue::F64(f64::from_bits(u.arbitrary()?)),
            ValueType::Bool => {
                let b: u8 = u.arbitrary()?;
                OwnedValue::Bool(if self.cfg.lax_bytes { b } else { b & 1 })
            }
            ValueType::String => self.string(u)?,
            ValueType::Array => {
                let nest = depth < self.cfg.max_nesting;
                let choices: Vec<ValueType> =
                    self.cfg.value_types.iter().copied().filter(|t| *t != ValueType::Array || nest).collect();
                // Only `array` allowed and no nesting: arrays of u8.
                let elem = if choices.is_empty() { ValueType::U8 } else { *u.choose(&choices)? };
                let len = u.int_in_range(0..=self.cfg.max_array_len.min(MAX_ARRAY_LEN))?;
                let len = self.take_values(len);
                let mut items = Vec::with_capacity(len);
                for _ in 0..len {
                    items.push(self.value_of(u, elem, depth.saturating_add(1))?);
                }
                OwnedValue::Array(elem, items)
            }
        })
    }

    /// A unique tensor name, at most 63 bytes (64 under `spec_tensor_names`).
    fn tensor_name(
        &mut self,
        u: &mut Unstructured<'_>,
        index: usize,
        names: &mut HashSet<Vec<u8>>,
        prefixes: &mut HashSet<Vec<u8>>,
    ) -> Result<Vec<u8>> {
        let cfg = self.cfg;
        let max =
            if cfg.spec_tensor_names { limits::MAX_TENSOR_NAME_LEN_SPEC } else { limits::MAX_TENSOR_NAME_LEN_GGML };
        let empty_ok = cfg.spec_tensor_names || cfg.lax_bytes;
        let mut name: Vec<u8> = match u.int_in_range(0u8..=9)? {
            0 if empty_ok => Vec::new(),
            1..=4 => format!(
                "blk.{}.{}.weight",
                u.int_in_range(0..=99u32)?,
                u.choose(&["attn_q", "attn_k", "ffn_up", "ffn_down", "attn_norm"])?
            )
            .into_bytes(),
            _ => {
                let len = u.int_in_range(1..=max)?;
                let mut s = String::new();
                while s.len() < len {
                    let c = if cfg.unicode && u.ratio(1u8, 5)? {
                        *u.choose(&UNICODE_CHARS[..10])?
                    } else {
                        char::from(*u.choose(b"abcdefghijklmnopqrstuvwxyz0123456789_.")?)
                    };
                    if s.len() + c.len_utf8() > len {
                        break;
                    }
                    s.push(c);
                }
                if s.is_empty() {
                    s.push('t');
                }
                s.into_bytes()
            }
        };
        if cfg.lax_bytes && !name.is_empty() && u.ratio(1u8, 6)? {
            let at = u.int_in_range(0..=name.len() - 1)?;
            if let Some(b) = name.get_mut(at) {
                *b = if u.arbitrary()? { 0 } else { u.int_in_range(0x80..=0xFF)? };
            }
        }
        // Make it unique (and unique up to a NUL byte, as ggml compares
        // names with strcmp), keeping within the length limit.
        let prefix_of = |n: &[u8]| n.split(|b| *b == 0).next().unwrap_or_default().to_vec();
        if names.contains(&name) || prefixes.contains(&prefix_of(&name)) {
            let suffix = format!(".{index}");
            let mut base: Vec<u8> = name.iter().copied().filter(|b| *b != 0).collect();
            base.truncate(max.saturating_sub(suffix.len()));
            // Keep UTF-8 intact after truncation.
            while std::str::from_utf8(&base).is_err() && !cfg.lax_bytes && !base.is_empty() {
                base.pop();
            }
            base.extend_from_slice(suffix.as_bytes());
            name = base;
            if names.contains(&name) || prefixes.contains(&prefix_of(&name)) {
                name = format!("t{index}").into_bytes();
            }
        }
        prefixes.insert(prefix_of(&name));
        names.insert(name.clone());
        Ok(name)
    }

    fn tensors(&mut self, u: &mut Unstructured<'_>) -> Result<Vec<OwnedTensor>> {
        let cfg = self.cfg;
        let count = u.int_in_range(0..=cfg.max_tensors.min(MAX_TENSORS))?;
        let mut names = HashSet::new();
        let mut prefixes = HashSet::new();
        // Bulk bytes (tensor data) from a seeded generator, seeded from the
        // input so that data does not eat the fuzzer's bytes.
        let mut rng = SplitMix64::new(u.arbitrary()?);
        let mut out = Vec::with_capacity(count);
        for index in 0..count {
            let ty = *u.choose(&cfg.tensor_types)?;
            let name = self.tensor_name(u, index, &mut names, &mut prefixes)?;
            let dims = shape(u, cfg, ty)?;
            let elements = dims.iter().try_fold(1u64, |a, d| a.checked_mul(*d)).ok_or(Error::IncorrectFormat)?;
            let nbytes = ty.row_size(elements).ok_or(Error::IncorrectFormat)?;
            let mut data = vec![0u8; usize::try_from(nbytes).map_err(|_| Error::IncorrectFormat)?];
            rng.fill(&mut data);
            out.push(OwnedTensor { name, dims, type_id: ty.id(), offset: 0, data });
        }
        Ok(out)
    }

    /// Sets data offsets: ggml's running padded size, or (under `spec`) a
    /// shuffled order with aligned gaps.
    fn layout(&mut self, u: &mut Unstructured<'_>, model: &mut GgufModel) -> Result<()> {
        let cfg = self.cfg;
        if !(cfg.shuffle_data || cfg.data_gaps) {
            model.canonical().ok_or(Error::IncorrectFormat)?;
            return Ok(());
        }
        let align = model.alignment();
        let mut order: Vec<usize> = (0..model.tensors.len()).collect();
        if cfg.shuffle_data {
            shuffle(u, &mut order)?;
        }
        let mut next = 0u64;
        for i in order {
            if cfg.data_gaps && u.ratio(1u8, 3)? {
                next = next.checked_add(align.saturating_mul(u.int_in_range(1..=2)?)).ok_or(Error::IncorrectFormat)?;
            }
            let t = model.tensors.get_mut(i).ok_or(Error::IncorrectFormat)?;
            t.offset = next;
            let len = u64::try_from(t.data.len()).map_err(|_| Error::IncorrectFormat)?;
            next =
                next.checked_add(align_up(len, align).ok_or(Error::IncorrectFormat)?).ok_or(Error::IncorrectFormat)?;
        }
        Ok(())
    }
}

/// Bit patterns of f32 edge values: ±0, ±1, the smallest and largest
/// subnormals, the smallest normal, the largest finite, ±infinity, quiet
/// and signalling NaNs with and without payloads, a negative NaN.
pub const F32_EDGES: [u32; 16] = [
    0x0000_0000,
    0x8000_0000,
    0x3F80_0000,
    0xBF80_0000,
    0x0000_0001,
    0x807F_FFFF,
    0x0080_0000,
    0x7F7F_FFFF,
    0xFF7F_FFFF,
    0x7F80_0000,
    0xFF80_0000,
    0x7FC0_0000,
    0x7FC0_0001,
    0x7F80_0001,
    0xFFC0_0000,
    0x7FFF_FFFF,
];

/// Bit patterns of f64 edge values, as [`F32_EDGES`].
pub const F64_EDGES: [u64; 16] = [
    0,
    0x8000_0000_0000_0000,
    0x3FF0_0000_0000_0000,
    0xBFF0_0000_0000_0000,
    1,
    0x800F_FFFF_FFFF_FFFF,
    0x0010_0000_0000_0000,
    0x7FEF_FFFF_FFFF_FFFF,
    0xFFEF_FFFF_FFFF_FFFF,
    0x7FF0_0000_0000_0000,
    0xFFF0_0000_0000_0000,
    0x7FF8_0000_0000_0000,
    0x7FF8_0000_0000_0001,
    0x7FF0_0000_0000_0001,
    0xFFF8_0000_0000_0000,
    // 0.1, which has no exact binary form (a writer printing decimals rounds it).
    0x3FB9_9999_9999_999A,
];

/// One edge value of a scalar type (`ty` is never `array`).
fn edge_value(u: &mut Unstructured<'_>, ty: ValueType, lax_bytes: bool) -> Result<OwnedValue> {
    macro_rules! int_edges {
        ($t:ty, $v:ident) => {{
            let edges: [$t; 7] =
                [0, 1, <$t>::MAX, <$t>::MIN, <$t>::MAX.wrapping_sub(1), <$t>::MIN.wrapping_add(1), 0x7F];
            OwnedValue::$v(*u.choose(&edges)?)
        }};
    }
    Ok(match ty {
        ValueType::U8 => int_edges!(u8, U8),
        ValueType::I8 => OwnedValue::I8(*u.choose(&[0i8, 1, -1, i8::MAX, i8::MIN, i8::MIN + 1])?),
        ValueType::U16 => int_edges!(u16, U16),
        ValueType::I16 => OwnedValue::I16(*u.choose(&[0i16, 1, -1, i16::MAX, i16::MIN, 0x80, -0x81])?),
        ValueType::U32 => int_edges!(u32, U32),
        ValueType::I32 => OwnedValue::I32(*u.choose(&[0i32, 1, -1, i32::MAX, i32::MIN, 0x8000, 1 << 24])?),
        ValueType::U64 => {
            OwnedValue::U64(*u.choose(&[0u64, 1, u64::MAX, u64::MAX - 1, 1 << 53, (1 << 53) + 1, 1 << 32, 1 << 63])?)
        }
        ValueType::I64 => {
            OwnedValue::I64(*u.choose(&[0i64, 1, -1, i64::MAX, i64::MIN, (1 << 53) + 1, -((1 << 53) + 1), 1 << 32])?)
        }
        ValueType::F32 => OwnedValue::F32(f32::from_bits(*u.choose(&F32_EDGES)?)),
        ValueType::F64 => OwnedValue::F64(f64::from_bits(*u.choose(&F64_EDGES)?)),
        ValueType::Bool => {
            OwnedValue::Bool(*u.choose(if lax_bytes { &[0u8, 1, 2, 0xFF][..] } else { &[0u8, 1][..] })?)
        }
        ValueType::String => OwnedValue::String(
            u.choose(&["", "\0", "a\0b", "\u{10ffff}", "\u{feff}bom", " ", "\n", "\u{7f}"])?.as_bytes().to_vec(),
        ),
        ValueType::Array => OwnedValue::Array(ValueType::U8, Vec::new()),
    })
}

/// Dims for a tensor of type `ty`: `ne[0]` a whole number of blocks, the
/// byte size at most `cfg.max_tensor_bytes` (at least one block).
fn shape(u: &mut Unstructured<'_>, cfg: &Config, ty: GgmlType) -> Result<Vec<u64>> {
    let bs = u64::from(ty.block_size());
    let ts = u64::from(ty.type_size()).max(1);
    let budget = (cfg.max_tensor_bytes.min(MAX_TENSOR_BYTES) / ts).max(1);
    if bs == 1 && cfg.zero_n_dims && u.ratio(1u8, 6)? {
        return Ok(Vec::new());
    }
    let n_dims = u.int_in_range(1..=cfg.max_dims.clamp(1, limits::MAX_DIMS))?;
    let mut rest = Vec::new();
    for _ in 1..n_dims {
        rest.push(if cfg.zero_dims && u.ratio(1u8, 8)? { 0 } else { u.int_in_range(1..=4u64)? });
    }
    let mut product = rest.iter().product::<u64>().max(1);
    if product > budget {
        rest.iter_mut().for_each(|d| *d = (*d).min(1));
        product = 1;
    }
    let blocks = if cfg.zero_dims && u.ratio(1u8, 8)? { 0 } else { u.int_in_range(1..=(budget / product).max(1))? };
    let mut dims = vec![blocks.saturating_mul(bs)];
    dims.extend(rest);
    Ok(dims)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Validator;
    use crate::report::Options;

    fn bytes(seed: u64, len: usize) -> Vec<u8> {
        SplitMix64::new(seed).bytes(len)
    }

    /// F12: token 2 spelled `x#5` and token 5 spelled `x` used to give two
    /// `x#5`; empty texts and chains of repeats stay distinct too.
    #[test]
    fn token_texts_are_made_distinct() {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for (i, t) in ["x", "", "x#5", "#1", "y", "x", "x", "x#5#6"].iter().enumerate() {
            let mut t = t.as_bytes().to_vec();
            make_distinct(&mut seen, &mut t, i);
            out.push(String::from_utf8(t).unwrap());
        }
        let distinct: HashSet<&String> = out.iter().collect();
        assert_eq!(distinct.len(), out.len(), "{out:?}");
        assert!(out.iter().all(|t| !t.is_empty()));
        assert_eq!(out[5], "x#5#5");
    }

    #[test]
    fn default_config_generates_a_strict_valid_file() {
        let data = bytes(1, 4096);
        let mut u = Unstructured::new(&data);
        let model = generate(&mut u, &Config::default()).unwrap();
        let r = Validator::new(Options::new(Profile::Strict)).validate_bytes(&model.to_bytes()).report;
        assert_eq!(r.counts.errors, 0, "{:#?}", r.diagnostics);
    }

    #[test]
    fn exhausted_input_still_generates() {
        let mut u = Unstructured::new(&[]);
        let (cfg, model) = arbitrary_file(&mut u).unwrap();
        let r = Validator::new(Options::new(cfg.profile)).validate_bytes(&model.to_bytes()).report;
        assert_eq!(r.counts.errors, 0, "{:#?}", r.diagnostics);
    }

    #[test]
    fn many_seeds_are_valid_under_their_profiles() {
        for seed in 0..300 {
            let data = bytes(seed, 2048 + (seed as usize % 7) * 1024);
            let mut u = Unstructured::new(&data);
            let (cfg, model) = arbitrary_file(&mut u).unwrap();
            let file = model.to_bytes();
            for p in cfg.valid_under() {
                let r = Validator::new(Options::new(p)).validate_bytes(&file).report;
                assert_eq!(r.counts.errors, 0, "seed {seed} profile {p} {cfg:#?} {:#?}", r.diagnostics);
            }
        }
    }

    #[test]
    fn configs_vary() {
        let mut profiles = HashSet::new();
        let mut orders = HashSet::new();
        for seed in 0..64 {
            let data = bytes(seed, 256);
            let cfg = Config::arbitrary(&mut Unstructured::new(&data)).unwrap();
            profiles.insert(cfg.profile);
            orders.insert(cfg.byte_order);
            assert!(!cfg.value_types.is_empty() && !cfg.tensor_types.is_empty());
            if cfg.profile != Profile::Spec {
                assert_eq!(cfg.max_nesting, 0);
            }
        }
        assert_eq!(profiles.len(), 3);
        assert_eq!(orders.len(), 2);
    }
}
