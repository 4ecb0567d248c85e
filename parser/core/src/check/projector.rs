//! Rules on multimodal projectors (`mmproj` files, architecture `clip`) as
//! libmtmd loads them (llama.cpp's `tools/mtmd/clip.cpp`,
//! `clip_model_loader`): the projector type, the keys and tensors the
//! loader needs for it, the hyper-parameter values it refuses, and the
//! output width `clip_n_mmproj_embd` computes (for the pairing with a text
//! model). Every fact about llama.cpp comes from [`super::clip_table`],
//! generated from its sources; what the loader decides at run time from
//! values the table cannot express is reported as not checked.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use std::collections::HashMap;

use crate::parse::{GgufFile, KeyValue, TensorInfo, Value, type_label};
use crate::report::Sink;
use crate::rules::RuleId;
use crate::types::ValueType;

use super::clip_table::{
    Atom, Bound, COMMON_KEYS, Contract, Count, Factor, Index, KeyKind, KeyRead, Need, Op, PROJECTOR_TYPES, Rhs,
    TensorRead, When, Width,
};
use super::kv::kv_path;
use super::tensors::tensor_path;

/// What the projector check found, for the pairing with a text model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ProjectorFacts {
    /// The width `clip_n_mmproj_embd` returns (the vision encoder's, else
    /// the audio encoder's), when the table can compute it from the file.
    pub(crate) output_width: Option<u64>,
    /// The projector type names, vision then audio (`None` where absent).
    pub(crate) vision_type: Option<&'static str>,
    pub(crate) audio_type: Option<&'static str>,
    /// The token texts libmtmd looks up for the types in the text model's
    /// vocabulary (clip_table `lookups`), vision then audio.
    pub(crate) lookups: Vec<&'static str>,
    /// What was not checked, and why (empty when everything was).
    pub(crate) not_checked: Vec<String>,
    /// Nothing was judged (a file of metadata only).
    pub(crate) skipped: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Modality {
    Vision,
    Audio,
}

impl Modality {
    fn name(self) -> &'static str {
        match self {
            Modality::Vision => "vision",
            Modality::Audio => "audio",
        }
    }
}

const KEY_PROJ_TYPE: &str = "clip.projector_type";

/// Runs the `projector-*` rules on a projector file.
pub(crate) fn check(file: &GgufFile<'_>, tensors: &[&TensorInfo<'_>], sink: &mut Sink<'_>) -> ProjectorFacts {
    let mut facts = ProjectorFacts::default();
    if tensors.is_empty() {
        // as for a vocabulary-only model: metadata alone is not judged as a projector
        facts
            .not_checked
            .push("the file has no tensors (metadata only): the projector contract was not checked".into());
        facts.skipped = true;
        return facts;
    }
    let by_name: HashMap<&[u8], &TensorInfo<'_>> = tensors.iter().map(|t| (t.name.bytes, *t)).collect();
    let mut ctx = Ctx { file, tensors: &by_name, n_tensors: tensors.len(), sink, not_checked: &mut facts.not_checked };

    // the constructor's reads: modalities, name, description
    for read in &COMMON_KEYS {
        ctx.key(read, "every projector");
    }
    let has_vision = ctx.bool_key("clip.has_vision_encoder");
    let has_audio = ctx.bool_key("clip.has_audio_encoder");
    let has_gen_audio = ctx.bool_key("clip.has_gen_audio_encoder");
    if has_gen_audio {
        ctx.not_checked.push("the audio generation encoder (`clip.has_gen_audio_encoder`) is not checked".into());
    }
    if !has_vision && !has_audio {
        let offset = file.get("clip.has_vision_encoder").map_or(super::KV_SECTION, |kv| kv.value_offset());
        ctx.sink.emit(RuleId::ProjectorTypeUnknown, offset, || "kv".into(), || {
            "the projector has no vision and no audio encoder (`clip.has_vision_encoder` and `clip.has_audio_encoder` absent or false): libmtmd refuses it (\"Failed to load CLIP model\")".into()
        });
        return facts;
    }
    let mut widths: Vec<(Modality, u64)> = Vec::new();
    let mut vision_enum = None;
    let (mut vision_name, mut audio_name) = (None, None);
    for modality in [Modality::Vision, Modality::Audio] {
        let wanted = match modality {
            Modality::Vision => has_vision,
            // clip_init skips the audio encoder of a gemma3nv projector
            Modality::Audio => has_audio && vision_enum != Some("PROJECTOR_TYPE_GEMMA3NV"),
        };
        if !wanted {
            continue;
        }
        let Some((name, contract)) = ctx.projector_type(modality) else { continue };
        match modality {
            Modality::Vision => {
                vision_enum = Some(contract.enum_name.as_str());
                vision_name = Some(name);
            }
            Modality::Audio => audio_name = Some(name),
        }
        facts.lookups.extend(contract.lookups.slice().iter().map(|t| t.as_str()));
        if let Some(w) = ctx.contract(modality, name, contract) {
            widths.push((modality, w));
        }
    }
    if let [(_, v), (_, a)] = widths.as_slice()
        && v != a
    {
        ctx.sink.emit(RuleId::ProjectorHparams, super::KV_SECTION, || "tensors".into(), || {
            format!("the vision encoder's output width is {v} and the audio encoder's {a}: libmtmd refuses the projector (\"mismatch between vision and audio mmproj\")")
        });
    }
    facts.vision_type = vision_name;
    facts.audio_type = audio_name;
    facts.output_width = widths.first().map(|(_, w)| *w);
    facts
}

/// granite_speech's Shaw relative positions, read off clip.cpp by hand (no
/// generated bound expresses a tensor's rows): `clip_image_batch_encode`
/// fills `attn_dists` with `i - j + max_pos_emb` (i, j < chunk_size) and
/// `clip_graph_granite_speech::build` looks those rows up in each layer's
/// `attn_rel_pos_emb` (`ggml_get_rows`, whose CPU kernel asserts the row
/// is in range) and reshapes them to the head size.
struct RelativePositions {
    projector_type: &'static str,
    chunk_key: &'static str,
    max_pos_key: &'static str,
    tensor: &'static str,
    source: &'static str,
}

const RELATIVE_POSITIONS: RelativePositions = RelativePositions {
    projector_type: "granite_speech",
    chunk_key: "clip.audio.chunk_size",
    max_pos_key: "clip.audio.max_pos_emb",
    tensor: "a.blk.{}.attn_rel_pos_emb",
    source: "clip.cpp PROJECTOR_TYPE_GRANITE_SPEECH attn_dists, models/granite-speech.cpp ggml_get_rows and ggml_reshape_3d",
};

struct Ctx<'f, 'a, 's> {
    file: &'f GgufFile<'a>,
    tensors: &'f HashMap<&'a [u8], &'f TensorInfo<'a>>,
    n_tensors: usize,
    sink: &'f mut Sink<'s>,
    not_checked: &'f mut Vec<String>,
}

impl<'a> Ctx<'_, 'a, '_> {
    /// A bool key the constructor reads (false when absent or of another
    /// type; the type is judged by [`Ctx::key`]).
    fn bool_key(&self, key: &str) -> bool {
        matches!(self.file.get(key).map(|kv| kv.value), Some(Value::Bool(b)) if b != 0)
    }

    /// The projector type of a modality: `clip.projector_type`, else the
    /// modality's own key. Reports an unknown or refused type.
    fn projector_type(&mut self, modality: Modality) -> Option<(&'static str, &'static Contract)> {
        let own = match modality {
            Modality::Vision => "clip.vision.projector_type",
            Modality::Audio => "clip.audio.projector_type",
        };
        let common = self.file.get(KEY_PROJ_TYPE);
        let common_str = common.and_then(|kv| kv.value.as_string());
        let chosen = match common_str {
            Some(s) if !s.bytes.is_empty() => common,
            _ => self.file.get(own).or(common),
        };
        let Some(kv) = chosen else {
            self.sink.emit(RuleId::ProjectorTypeUnknown, super::KV_SECTION, || "kv".into(), || {
                format!("the projector has a {} encoder but names no projector type (`{KEY_PROJ_TYPE}` or `{own}`): libmtmd refuses it (\"unknown projector type\")", modality.name())
            });
            return None;
        };
        // a value of another type aborts in gguf_get_val_str: the key rule says so
        let s = kv.value.as_string()?;
        let found = PROJECTOR_TYPES.iter().find(|p| p.name.as_str().as_bytes() == s.bytes);
        let Some(p) = found else {
            self.sink.emit(RuleId::ProjectorTypeUnknown, kv.value_offset(), || kv_path(&kv), || {
                format!("projector type {} is not one llama.cpp knows (PROJECTOR_TYPE_NAMES): libmtmd refuses the projector (\"unknown projector type\")", s.display())
            });
            return None;
        };
        let contract = match modality {
            Modality::Vision => &p.vision,
            Modality::Audio => &p.audio,
        };
        if let Some(why) = contract.refused {
            self.sink.emit(
                RuleId::ProjectorTypeUnknown,
                kv.value_offset(),
                || kv_path(&kv),
                || {
                    format!(
                        "projector type `{}` cannot be a {} encoder: libmtmd refuses it ({why})",
                        p.name,
                        modality.name()
                    )
                },
            );
            return None;
        }
        Some((p.name.as_str(), contract))
    }

    /// Checks one key read: present when required, of the type it is read
    /// with. Returns the pair when present and of that type.
    fn key(&mut self, read: &KeyRead, ptype: &str) -> Option<KeyValue<'a>> {
        let kv = self.file.get(read.key.as_str());
        let Some(kv) = kv else {
            match read.need {
                Need::Required => self.sink.emit(RuleId::ProjectorKeyMissing, super::KV_SECTION, || "kv".into(), || {
                    format!("`{}` is missing; libmtmd requires it for projector type `{ptype}` and refuses the projector (\"Key not found\")", read.key)
                }),
                Need::NotChecked(why) => self.note(format!("key `{}` for `{ptype}`: {why}", read.key)),
                Need::Optional | Need::UnlessTensor(_) => {}
            }
            return None;
        };
        let ok = match (read.kind, &kv.value) {
            (KeyKind::U32, Value::U32(_))
            | (KeyKind::I32, Value::I32(_))
            | (KeyKind::F32, Value::F32(_))
            | (KeyKind::Bool, Value::Bool(_))
            | (KeyKind::Str, Value::String(_)) => true,
            (KeyKind::ArrInt, Value::Array(a)) => a.elem_type == ValueType::I32,
            (KeyKind::ArrF32, Value::Array(a)) => a.elem_type == ValueType::F32,
            _ => false,
        };
        if !ok {
            let (wanted, outcome) = match read.kind {
                KeyKind::U32 => ("u32", "gguf_get_val_u32 asserts on the type: the process aborts"),
                KeyKind::I32 => ("i32", "gguf_get_val_i32 asserts on the type: the process aborts"),
                KeyKind::F32 => ("f32", "gguf_get_val_f32 asserts on the type: the process aborts"),
                KeyKind::Bool => ("bool", "gguf_get_val_bool asserts on the type: the process aborts"),
                KeyKind::Str => ("string", "gguf_get_val_str asserts on the type: the process aborts"),
                KeyKind::ArrInt => ("array[i32]", "get_arr_int refuses the projector"),
                KeyKind::ArrF32 => ("array[f32]", "get_arr_f32 refuses the projector"),
            };
            let found = type_label(&kv.value);
            self.sink.emit(
                RuleId::ProjectorKeyType,
                kv.type_offset(),
                || kv_path(&kv),
                || format!("`{}` is {found}; libmtmd reads it as {wanted} ({ptype}): {outcome}", read.key),
            );
            return None;
        }
        if let Value::U32(v) = kv.value
            && v > 0x7fff_ffff
        {
            self.sink.emit(
                RuleId::ProjectorHparams,
                kv.value_offset(),
                || kv_path(&kv),
                || {
                    format!(
                        "`{}` is {v}, above INT32_MAX: libmtmd refuses the projector (\"exceeds INT32_MAX\")",
                        read.key
                    )
                },
            );
            return None;
        }
        Some(kv)
    }

    fn note(&mut self, why: String) {
        if !self.not_checked.contains(&why) {
            self.not_checked.push(why);
        }
    }

    fn u32_of(&self, key: &str) -> Option<u64> {
        match self.file.get(key).map(|kv| kv.value) {
            Some(Value::U32(v)) if v <= 0x7fff_ffff => Some(u64::from(v)),
            _ => None,
        }
    }

    fn array_len(&self, key: &str) -> Option<u64> {
        match self.file.get(key).map(|kv| kv.value) {
            Some(Value::Array(a)) => Some(a.len),
            _ => None,
        }
    }

    /// Checks one modality's contract; returns its output width when the
    /// table can compute it.
    fn contract(&mut self, modality: Modality, ptype: &'static str, c: &'static Contract) -> Option<u64> {
        let mut fields: HashMap<&'static str, KeyValue<'_>> = HashMap::new();
        for read in c.keys.slice() {
            if let Some(kv) = self.key(read, ptype) {
                fields.entry(read.field.as_str()).or_insert(kv);
            }
        }
        for &(key, n) in c.min_len.slice() {
            let key = key.as_str();
            let len = self.array_len(key).unwrap_or(0);
            if len < u64::from(n) {
                let offset = self.file.get(key).map_or(super::KV_SECTION, |kv| kv.value_offset());
                self.sink.emit(RuleId::ProjectorHparams, offset, || "kv".into(), || {
                    format!("`{key}` has {len} values (absent counts as 0); libmtmd needs at least {n} and refuses the projector")
                });
            }
        }
        for key in c.even.slice() {
            let key = key.as_str();
            if let Some(len) = self.array_len(key)
                && len.checked_rem(2) != Some(0)
            {
                self.sink.emit(RuleId::ProjectorHparams, super::KV_SECTION, || "kv".into(), || {
                    format!("`{key}` has {len} values; libmtmd needs an even number (width, height pairs) and refuses the projector")
                });
            }
        }
        for why in c.not_checked.slice() {
            self.note(format!("`{ptype}` ({}): run-time check not evaluated: {why}", modality.name()));
        }
        self.hparams(modality, ptype, c);
        for b in c.bounds.slice() {
            self.bound(ptype, c, b);
        }
        let layers = self.u32_of(&format!("clip.{}.block_count", modality.name()));
        if ptype == RELATIVE_POSITIONS.projector_type && modality == Modality::Audio {
            self.relative_positions(layers);
        }
        let mut missing_reported: Vec<&'static str> = Vec::new();
        for t in c.tensors.slice() {
            self.tensor(t, ptype, layers, &mut missing_reported);
        }
        self.width(modality, ptype, c, layers, &missing_reported)
    }

    /// granite_speech's relative positions ([`RELATIVE_POSITIONS`]): the
    /// rows of each layer's table the first encode looks up, and its width.
    fn relative_positions(&mut self, layers: Option<u64>) {
        let r = &RELATIVE_POSITIONS;
        let (Some(chunk), Some(max_pos)) = (self.u32_of(r.chunk_key), self.u32_of(r.max_pos_key)) else {
            return; // absent or of another type: the key rules say so
        };
        if chunk == 0 {
            return; // projector-load-bound's
        }
        // i - j over one chunk runs from -(chunk - 1) to chunk - 1
        let reach = chunk.saturating_sub(1);
        let head = match (self.u32_of("clip.audio.embedding_length"), self.u32_of("clip.audio.head_count")) {
            (Some(e), Some(h)) if h > 0 && e.checked_rem(h) == Some(0) => e.checked_div(h),
            _ => None,
        };
        let n = layers.unwrap_or(0).min(u64::try_from(self.n_tensors).unwrap_or(u64::MAX));
        for il in 0..n {
            let name = r.tensor.replace("{}", &il.to_string());
            let Some(t) = self.tensors.get(name.as_bytes()).copied() else { continue };
            let dims: Vec<u64> = t.dims().collect();
            let (Some(&width), Some(&rows)) = (dims.first(), dims.get(1)) else { continue };
            let (lowest, highest) = (max_pos.checked_sub(reach), max_pos.saturating_add(reach));
            if lowest.is_none() || highest >= rows {
                let row = match lowest {
                    None => format!("{}", i128::from(max_pos).saturating_sub(i128::from(reach))),
                    Some(_) => highest.to_string(),
                };
                self.sink.emit(RuleId::ProjectorFirstUseBound, t.dims_offset, || tensor_path(t, "dims"), || {
                    format!(
                        "`{}` ({} x {rows}) with `{}` {chunk} and `{}` {max_pos}: the first encode looks up row i - j + {max_pos} for i, j in one chunk, {} to {highest}, and row {row} is not in the table ({}); libmtmd aborts",
                        name,
                        width,
                        r.chunk_key,
                        r.max_pos_key,
                        i128::from(max_pos).saturating_sub(i128::from(reach)),
                        r.source
                    )
                });
            }
            if let Some(head) = head.filter(|h| *h != width) {
                self.sink.emit(RuleId::ProjectorFirstUseBound, t.dims_offset, || tensor_path(t, "dims"), || {
                    format!(
                        "`{name}` rows are {width} wide; the encoder reshapes them to its head size {head} (embedding_length / head_count) and libmtmd aborts ({})",
                        r.source
                    )
                });
            }
        }
    }

    /// The value checks load_hparams makes on every projector type (its
    /// "sanity check" block and the common reads), on the fields whose
    /// value is the file's (not set by the type's own code).
    fn hparams(&mut self, modality: Modality, ptype: &str, c: &Contract) {
        let field_value = |this: &Self, field: &str| -> Option<(String, u64)> {
            let field_name = field.trim_start_matches("hparams.");
            if c.overrides.slice().iter().any(|o| o.as_str() == field_name) {
                return None;
            }
            c.keys
                .slice()
                .iter()
                .filter(|r| r.field.as_str() == field && r.kind == KeyKind::U32)
                .find_map(|r| this.u32_of(r.key.as_str()).map(|v| (r.key.as_str().to_string(), v)))
        };
        let bad = |this: &mut Self, field: &str, ok: &dyn Fn(u64) -> bool, what: &str| {
            if let Some((key, v)) = field_value(this, field)
                && !ok(v)
            {
                let offset = this.file.get(&key).map_or(super::KV_SECTION, |kv| kv.value_offset());
                this.sink.emit(
                    RuleId::ProjectorHparams,
                    offset,
                    || "kv".into(),
                    || format!("`{key}` is {v}; libmtmd requires {what} ({ptype}) and refuses the projector"),
                );
            }
        };
        bad(self, "hparams.n_embd", &|v| v > 0, "a width greater than 0");
        if modality == Modality::Vision {
            bad(self, "hparams.image_size", &|v| v <= 8192, "an image size of at most 8192");
            bad(self, "hparams.patch_size", &|v| v > 0 && v < 65536, "a patch size from 1 to 65535");
        }
        bad(self, "hparams.n_merge", &|v| v > 0 && v < 65536, "a merge factor from 1 to 65535");
        bad(self, "hparams.attn_window_size", &|v| v <= 4096, "an attention window of at most 4096");
        if modality == Modality::Audio && !c.overrides.slice().iter().any(|o| o.as_str() == "n_mel_bins") {
            // pocket-tts's speaker encoder takes the raw waveform: no upper bound (clip.cpp `fft_based`)
            let upper = if c.enum_name.as_str() == "PROJECTOR_TYPE_POCKETTTS_SPKENC" { u64::MAX } else { 256 };
            bad(self, "hparams.n_mel_bins", &|v| v > 0 && v <= upper, "from 1 to 256 mel bins");
        }
        if let (Some((_, min)), Some((kmax, max))) =
            (field_value(self, "hparams.image_min_pixels"), field_value(self, "hparams.image_max_pixels"))
            && max < min
        {
            self.sink.emit(
                RuleId::ProjectorHparams,
                super::KV_SECTION,
                || "kv".into(),
                || format!("`{kmax}` is {max}, below the minimum pixel count {min}: libmtmd refuses the projector"),
            );
        }
        let gelu = self.bool_key("clip.use_gelu");
        if gelu && self.bool_key("clip.use_silu") {
            self.sink.emit(
                RuleId::ProjectorHparams,
                super::KV_SECTION,
                || "kv".into(),
                || "`clip.use_gelu` and `clip.use_silu` are both true: libmtmd refuses the projector".into(),
            );
        }
        // feature layers above the layer count are refused
        let layers_key = format!("clip.{}.block_count", modality.name());
        let feat_key = format!("clip.{}.feature_layer", modality.name());
        if let (Some(n), Some(kv)) = (self.u32_of(&layers_key), self.file.get(&feat_key))
            && let Value::Array(a) = kv.value
            && a.elem_type == ValueType::I32
            && let Some(e) = a
                .iter()
                .find(|e| matches!(e.value, Value::I32(v) if i64::from(v) > i64::try_from(n).unwrap_or(i64::MAX)))
        {
            self.sink.emit(RuleId::ProjectorHparams, e.offset, || kv_path(&kv), || {
                format!("`{feat_key}` names layer {:?} but `{layers_key}` is {n}: libmtmd refuses the projector (\"feature layer index out of range\")", e.value)
            });
        }
        // the encoder's heads split the width (build_vit reshapes by d_head = n_embd / n_head)
        if c.vit && self.file.get(&format!("clip.{}.attention.head_dim", modality.name())).is_none() {
            let embd = self.u32_of(&format!("clip.{}.embedding_length", modality.name()));
            let heads = self.u32_of(&format!("clip.{}.attention.head_count", modality.name()));
            if let (Some(e), Some(h)) = (embd, heads)
                && (h == 0 || e.checked_rem(h) != Some(0))
            {
                self.sink.emit(RuleId::ProjectorHparams, super::KV_SECTION, || "kv".into(), || {
                    format!("the {} encoder's width {e} is not a multiple of its head count {h}: libmtmd's encoder graph (build_vit) cannot split it into heads and aborts at warm-up", modality.name())
                });
            }
        }
    }

    /// The value a hyper-parameter (`hparams.F`) holds: the file's, from the
    /// key the contract reads into it, else the bound's default for it; with
    /// the key (None for a default).
    fn field(&self, c: &Contract, b: &Bound, field: &str) -> Option<(i64, Option<KeyValue<'a>>)> {
        let name = field.trim_start_matches("hparams.");
        if c.overrides.slice().iter().any(|o| o.as_str() == name) {
            return None;
        }
        let from_file = c.keys.slice().iter().filter(|r| r.field.as_str() == field).find_map(|r| {
            let kv = self.file.get(r.key.as_str())?;
            match (r.kind, kv.value) {
                (KeyKind::U32, Value::U32(v)) if v <= 0x7fff_ffff => Some((i64::from(v), Some(kv))),
                (KeyKind::I32, Value::I32(v)) => Some((i64::from(v), Some(kv))),
                _ => None,
            }
        });
        // a key present with another type or out of range is another rule's: no value
        let present =
            c.keys.slice().iter().any(|r| r.field.as_str() == field && self.file.get(r.key.as_str()).is_some());
        if from_file.is_some() || present {
            return from_file;
        }
        b.defaults.slice().iter().find(|(f, _)| f.as_str() == field).map(|&(_, v)| (v, None))
    }

    /// Evaluates one value bound; reports it when it fails.
    fn bound(&mut self, ptype: &str, c: &Contract, b: &Bound) {
        let mut seen: Vec<(&'static str, i64, Option<KeyValue<'a>>)> = Vec::new();
        let mut value = |this: &Self, f: &'static str| -> Option<i64> {
            if let Some((_, v, _)) = seen.iter().find(|(g, _, _)| *g == f) {
                return Some(*v);
            }
            let (v, kv) = this.field(c, b, f)?;
            seen.push((f, v, kv));
            Some(v)
        };
        let mut holds = false;
        for clause in b.clauses.slice() {
            let mut all = true;
            for atom in clause.atoms.slice() {
                let Some(ok) = self.atom(atom, &mut value) else {
                    return; // a field the file does not give: not evaluated
                };
                all &= ok;
            }
            holds |= all;
        }
        if holds {
            return;
        }
        let values: Vec<String> = seen
            .iter()
            .map(|(f, v, kv)| match kv {
                Some(kv) => format!("`{}` is {v}", String::from_utf8_lossy(kv.key.bytes)),
                None => format!("`{f}` is {v} (its default: the key is absent)"),
            })
            .collect();
        let at = seen.iter().find_map(|(_, _, kv)| *kv);
        let offset = at.map_or(super::KV_SECTION, |kv| kv.value_offset());
        let rule = match b.when {
            When::Load => RuleId::ProjectorLoadBound,
            When::FirstImage => RuleId::ProjectorFirstUseBound,
        };
        self.sink.emit(
            rule,
            offset,
            || at.map_or_else(|| "kv".into(), |kv| kv_path(&kv)),
            || format!("{} for projector type `{ptype}` fails {}: {}", values.join(", "), b.source, b.outcome),
        );
    }

    /// One comparison; None when a field it names has no value.
    fn atom(&self, atom: &Atom, value: &mut dyn FnMut(&Self, &'static str) -> Option<i64>) -> Option<bool> {
        let mut lhs = i128::from(atom.factor);
        for f in atom.lhs.slice() {
            lhs = lhs.checked_mul(i128::from(value(self, f.as_str())?))?;
        }
        if atom.modulus != 0 {
            lhs = lhs.checked_rem(i128::from(atom.modulus))?;
        }
        let rhs = match atom.rhs {
            Rhs::Const(v) => i128::from(v),
            Rhs::Field(f) => i128::from(value(self, f.as_str())?),
        };
        Some(match atom.op {
            Op::Lt => lhs < rhs,
            Op::Le => lhs <= rhs,
            Op::Gt => lhs > rhs,
            Op::Ge => lhs >= rhs,
            Op::Eq => lhs == rhs,
            Op::Ne => lhs != rhs,
        })
    }

    /// The values an index of a tensor name takes: `None` when not checked.
    fn index_values(&mut self, i: &Index, layers: Option<u64>) -> Option<(u64, Vec<u32>)> {
        let cap = u64::try_from(self.n_tensors).unwrap_or(u64::MAX).saturating_add(1);
        match i.count {
            Count::Layers => Some((layers?.min(cap), Vec::new())),
            Count::Fixed(n) => Some((u64::from(n).min(cap), Vec::new())),
            Count::List(l) => Some((0, l.slice().to_vec())),
            Count::Key(k) => Some((self.u32_of(k.as_str())?.min(cap), Vec::new())),
            Count::ArrayLen(k) => Some((self.array_len(k.as_str()).unwrap_or(0).min(cap), Vec::new())),
            Count::Probe | Count::NotChecked(_) => None,
        }
    }

    /// The names a tensor pattern gives, bounded by the tensors that exist
    /// (past as many names as there are tensors, one is surely missing).
    fn names(&mut self, t: &TensorRead, layers: Option<u64>) -> Option<Vec<String>> {
        let mut names = vec![String::new()];
        let mut parts = t.name.as_str().split("{}");
        let first = parts.next().unwrap_or("");
        for n in &mut names {
            n.push_str(first);
        }
        let cap = self.n_tensors.saturating_add(1);
        for (index, rest) in t.index.slice().iter().zip(parts) {
            let (count, list) = self.index_values(index, layers)?;
            let values: Vec<u64> = if list.is_empty() {
                (0..count).map(|v| v.saturating_add(u64::from(index.offset))).collect()
            } else {
                list.iter().map(|v| u64::from(*v).saturating_add(u64::from(index.offset))).collect()
            };
            let mut next = Vec::new();
            'outer: for n in &names {
                for v in &values {
                    if next.len() >= cap {
                        break 'outer;
                    }
                    next.push(format!("{n}{v}{rest}"));
                }
            }
            names = next;
        }
        Some(names)
    }

    fn tensor(&mut self, t: &TensorRead, ptype: &str, layers: Option<u64>, missing: &mut Vec<&'static str>) {
        let required = match t.need {
            Need::Required | Need::UnlessTensor(_) => true,
            Need::Optional => false,
            Need::NotChecked(why) => {
                self.note(format!("tensor `{}` for `{ptype}`: {why}", t.name));
                false
            }
        };
        if !required && t.ne0_key.is_none() {
            return;
        }
        let unreached = t.index.slice().iter().find_map(|i| match i.count {
            Count::NotChecked(why) => Some(why.as_str()),
            Count::Probe => Some("indices found by probing"),
            _ => None,
        });
        if let Some(why) = unreached {
            if required {
                self.note(format!("tensor `{}` for `{ptype}`: {why}", t.name));
            }
            return;
        }
        let Some(names) = self.names(t, layers) else {
            return;
        };
        let mut absent: Vec<&str> = Vec::new();
        let want = t.ne0_key.and_then(|k| self.u32_of(k.as_str()).map(|v| (k, v)));
        for name in &names {
            let found = self.tensors.get(name.as_bytes()).copied();
            match found {
                None => {
                    let excused = match t.need {
                        Need::UnlessTensor(other) => {
                            self.tensors.contains_key(instantiate(other.as_str(), t.name.as_str(), name).as_bytes())
                        }
                        _ => false,
                    };
                    if required && !excused {
                        absent.push(name);
                    }
                }
                Some(info) => {
                    if let Some((key, v)) = want {
                        let ne0 = info.dims().next().unwrap_or(1);
                        if ne0 != v {
                            self.sink.emit_span(
                                RuleId::ProjectorTensorShape,
                                info.dims_offset,
                                Some(u64::from(info.n_dims).saturating_mul(8)),
                                || format!("tensor[{}] {name}/dims", info.index),
                                || format!("`{name}` has ne[0] = {ne0}; the encoder multiplies its `{key}` = {v} wide input by it (ggml_mul_mat asserts equal widths): libmtmd aborts when it builds its warm-up graph"),
                            );
                        }
                    }
                }
            }
        }
        if let Some(first) = absent.first() {
            missing.push(t.name.as_str());
            let n = absent.len();
            let more =
                if n > 1 { format!(" (and {} more of `{}`)", n.saturating_sub(1), t.name) } else { String::new() };
            self.sink.emit(RuleId::ProjectorTensorMissing, super::KV_SECTION, || "tensors".into(), || {
                format!("projector type `{ptype}` requires the tensor `{first}`{more}; libmtmd refuses the projector without it (\"unable to find tensor\"), or, where only its graph builder asserts it, aborts when it builds the graph (its warm-up)")
            });
        }
    }

    fn dim(info: &TensorInfo<'_>, dim: u8) -> u64 {
        // ggml sets the dimensions past n_dims to 1
        info.dims().nth(usize::from(dim)).unwrap_or(1)
    }

    fn width(
        &mut self,
        modality: Modality,
        ptype: &str,
        c: &Contract,
        layers: Option<u64>,
        missing: &[&'static str],
    ) -> Option<u64> {
        let mut width = c.width;
        if let Some((present, other)) = c.retype
            && self.tensors.contains_key(present.as_str().as_bytes())
        {
            width = other;
        }
        match width {
            Width::NotChecked(why) => {
                self.note(format!("output width of `{ptype}` ({}): {why}", modality.name()));
                None
            }
            Width::ArrayLenTimesKey { array, key } => {
                let n = self.array_len(array.as_str()).unwrap_or(0);
                n.checked_mul(self.u32_of(key.as_str())?)
            }
            Width::Tensor { name, dim, factor } => {
                let Some(info) = self.tensors.get(name.as_str().as_bytes()).copied() else {
                    if !missing.contains(&name.as_str()) {
                        self.sink.emit(RuleId::ProjectorTensorMissing, super::KV_SECTION, || "tensors".into(), || {
                            format!("projector type `{ptype}` has no `{name}`, the tensor clip_n_mmproj_embd reads the output width from (ne[{dim}]): the loader accepts its absence, then libmtmd dereferences a null pointer and crashes")
                        });
                    }
                    return None;
                };
                let base = Self::dim(info, dim);
                match factor {
                    Factor::One => Some(base),
                    Factor::OnePlusLayersWith(pattern) => {
                        let n = layers?.min(u64::try_from(self.n_tensors).unwrap_or(u64::MAX));
                        let found = (0..n)
                            .filter(|l| {
                                self.tensors.contains_key(pattern.as_str().replacen("{}", &l.to_string(), 1).as_bytes())
                            })
                            .count();
                        base.checked_mul(u64::try_from(found).ok()?.checked_add(1)?)
                    }
                }
            }
        }
    }
}

/// `other` (a pattern with `{}`) with the indices `name` gave `pattern`.
fn instantiate(other: &str, pattern: &str, name: &str) -> String {
    let mut values = Vec::new();
    let mut rest = name;
    let mut parts = pattern.split("{}");
    if let Some(head) = parts.next() {
        rest = rest.strip_prefix(head).unwrap_or(rest);
    }
    for lit in parts {
        let end = if lit.is_empty() { rest.len() } else { rest.find(lit).unwrap_or(rest.len()) };
        let (v, tail) = rest.split_at(end);
        values.push(v.to_string());
        rest = tail.strip_prefix(lit).unwrap_or(tail);
    }
    let mut out = String::new();
    let mut vals = values.into_iter();
    let mut pieces = other.split("{}").peekable();
    while let Some(p) = pieces.next() {
        out.push_str(p);
        if pieces.peek().is_some() {
            out.push_str(&vals.next().unwrap_or_default());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    //! The class: every projector type the table lets load has its contract
    //! met by a file built from the table alone (its required keys and
    //! tensors, nothing else), and random projector metadata never panics.
    #![allow(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]
    use super::*;
    use crate::report::Options;
    use crate::rules::Profile;
    use crate::write::{GgufModel, OwnedTensor, OwnedValue};
    use proptest::prelude::*;

    /// The value a table-built file gives every u32 key (a layer count, a
    /// width, a size: 2 passes every value check the table knows).
    const SMALL: u32 = 2;

    fn value_of(kind: KeyKind) -> OwnedValue {
        match kind {
            KeyKind::U32 => OwnedValue::U32(SMALL),
            KeyKind::I32 => OwnedValue::I32(2),
            KeyKind::F32 => OwnedValue::F32(1e-6),
            KeyKind::Bool => OwnedValue::Bool(1),
            KeyKind::Str => OwnedValue::str("x"),
            KeyKind::ArrInt => OwnedValue::Array(ValueType::I32, vec![OwnedValue::I32(1), OwnedValue::I32(1)]),
            KeyKind::ArrF32 => OwnedValue::Array(ValueType::F32, vec![OwnedValue::F32(0.5); 3]),
        }
    }

    fn count_of(i: &Index) -> Vec<u64> {
        let n = match i.count {
            Count::Layers | Count::Key(_) | Count::ArrayLen(_) => u64::from(SMALL),
            Count::Fixed(n) => u64::from(n),
            Count::List(l) => return l.slice().iter().map(|v| u64::from(*v) + u64::from(i.offset)).collect(),
            Count::Probe | Count::NotChecked(_) => 0,
        };
        (0..n).map(|v| v + u64::from(i.offset)).collect()
    }

    fn names_of(t: &TensorRead) -> Vec<String> {
        let mut names = vec![String::new()];
        let mut parts = t.name.as_str().split("{}");
        let first = parts.next().unwrap_or("");
        names.iter_mut().for_each(|n| n.push_str(first));
        for (i, rest) in t.index.slice().iter().zip(parts) {
            names = names.iter().flat_map(|n| count_of(i).into_iter().map(move |v| format!("{n}{v}{rest}"))).collect();
        }
        names
    }

    /// A projector file with only what the table says `name` needs under `modality`.
    fn from_table(name: &str, c: &Contract, modality: Modality) -> Vec<u8> {
        from_table_without(name, c, modality, "")
    }

    /// [`from_table`] without the key or tensor `skip`.
    fn from_table_without(name: &str, c: &Contract, modality: Modality, skip: &str) -> Vec<u8> {
        table_model(name, c, modality, skip).to_bytes()
    }

    fn table_model(name: &str, c: &Contract, modality: Modality, skip: &str) -> GgufModel {
        let mut m = GgufModel::new();
        m.kv("general.architecture", OwnedValue::str("clip"));
        m.kv("general.type", OwnedValue::str("mmproj"));
        let has = match modality {
            Modality::Vision => "clip.has_vision_encoder",
            Modality::Audio => "clip.has_audio_encoder",
        };
        m.kv(has, OwnedValue::Bool(1));
        m.kv(KEY_PROJ_TYPE, OwnedValue::str(name));
        let passing = passing_values(c);
        let mut seen = Vec::new();
        for r in c.keys.slice() {
            let key = r.key.as_str();
            let needed = matches!(r.need, Need::Required) || c.min_len.slice().iter().any(|(k, _)| *k == r.key);
            if needed && !seen.contains(&key) && key != skip {
                seen.push(key);
                let value = match passing.iter().find(|(f, _)| *f == r.field.as_str()) {
                    Some(&(_, v)) if r.kind == KeyKind::U32 => OwnedValue::U32(v),
                    _ => value_of(r.kind),
                };
                m.kv(key, value);
            }
        }
        let mut tensors: Vec<String> = Vec::new();
        for t in c.tensors.slice() {
            if matches!(t.need, Need::Required | Need::UnlessTensor(_)) {
                tensors.extend(names_of(t));
            }
        }
        if let Width::Tensor { name, .. } = c.width {
            tensors.push(name.as_str().to_string());
        }
        tensors.sort();
        tensors.dedup();
        for n in tensors.into_iter().filter(|n| n != skip) {
            let mut dims = [u64::from(SMALL), u64::from(SMALL)];
            // granite_speech's relative positions: a row of the head size (SMALL / SMALL) for each
            // distance of one chunk (max_pos_emb and chunk_size SMALL)
            if name == RELATIVE_POSITIONS.projector_type && n.ends_with(".attn_rel_pos_emb") {
                dims = [1, u64::from(SMALL) * 2 + 1];
            }
            let t = OwnedTensor::zeroed(&n, &dims, crate::types::GgmlType::F32).expect("f32 tensor");
            m.tensor(t);
        }
        m
    }

    /// Values that meet the bounds' equalities (the other atoms hold at [`SMALL`]).
    fn passing_values(c: &Contract) -> Vec<(&'static str, u32)> {
        let mut out = Vec::new();
        for b in c.bounds.slice() {
            let Some(clause) = b.clauses.slice().first() else { continue };
            for a in clause.atoms.slice() {
                if let ([f], Rhs::Const(k), Op::Eq) = (a.lhs.slice(), a.rhs, a.op) {
                    let v = if a.modulus == 0 { k } else { i64::from(a.modulus) + k };
                    out.push((f.as_str(), u32::try_from(v).expect("a small constant")));
                }
            }
        }
        out
    }

    fn projector_rules(bytes: &[u8]) -> Vec<String> {
        let report = crate::Validator::new(Options::new(Profile::Strict)).validate_bytes(bytes).report;
        report
            .diagnostics
            .iter()
            .filter(|d| d.rule.rule().group == crate::rules::Group::Projector)
            .map(|d| format!("{}: {}", d.rule.id(), d.message))
            .collect()
    }

    #[test]
    fn every_type_meets_its_own_contract() {
        let mut loadable = 0;
        for p in &PROJECTOR_TYPES {
            for (modality, c) in [(Modality::Vision, &p.vision), (Modality::Audio, &p.audio)] {
                if c.refused.is_some() {
                    continue;
                }
                loadable += 1;
                let found = projector_rules(&from_table(p.name.as_str(), c, modality));
                assert!(found.is_empty(), "{} ({}): {found:#?}", p.name, modality.name());
            }
        }
        assert!(loadable > 55, "{loadable} loadable contracts");
    }

    #[test]
    fn every_type_requires_its_keys_and_tensors() {
        let mut checked = 0;
        for p in &PROJECTOR_TYPES {
            let name = p.name.as_str();
            for (modality, c) in [(Modality::Vision, &p.vision), (Modality::Audio, &p.audio)] {
                if c.refused.is_some() {
                    continue;
                }
                assert!(
                    c.keys
                        .slice()
                        .iter()
                        .any(|r| r.key.as_str().ends_with(".embedding_length") && r.need == Need::Required),
                    "{}: embedding_length not required",
                    p.name
                );
                for r in c.keys.slice().iter().filter(|r| r.need == Need::Required) {
                    let key = r.key.as_str();
                    let found = projector_rules(&from_table_without(name, c, modality, key));
                    assert!(
                        found.iter().any(|f| f.starts_with("projector-key-missing") && f.contains(key)),
                        "{} ({}): without {}: {found:#?}",
                        p.name,
                        modality.name(),
                        r.key
                    );
                    checked += 1;
                }
                for t in c.tensors.slice().iter().filter(|t| t.need == Need::Required && t.index.slice().is_empty()) {
                    let tensor = t.name.as_str();
                    let found = projector_rules(&from_table_without(name, c, modality, tensor));
                    assert!(
                        found.iter().any(|f| f.starts_with("projector-tensor-missing") && f.contains(tensor)),
                        "{} ({}): without {}: {found:#?}",
                        p.name,
                        modality.name(),
                        t.name
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 500, "{checked} drops checked");
    }

    /// Every bound the table holds on keys' values (compared with constants)
    /// has a value of its first key that breaks it, reported under its rule and naming the key; the
    /// rest of the file meets its contract.
    #[test]
    fn every_bound_on_a_key_is_enforced() {
        let mut checked = Vec::new();
        for p in &PROJECTOR_TYPES {
            for (modality, c) in [(Modality::Vision, &p.vision), (Modality::Audio, &p.audio)] {
                if c.refused.is_some() {
                    continue;
                }
                for b in c.bounds.slice() {
                    let atoms: Vec<&Atom> = b.clauses.slice().iter().flat_map(|cl| cl.atoms.slice()).collect();
                    let fields: Vec<&str> = atoms.iter().flat_map(|a| a.lhs.slice()).map(|t| t.as_str()).collect();
                    let Some(&field) = fields.first() else { continue };
                    let overridden = |f: &str| c.overrides.slice().iter().any(|o| f.ends_with(&format!(".{o}")));
                    if atoms.iter().any(|a| matches!(a.rhs, Rhs::Field(_))) || fields.iter().any(|f| overridden(f)) {
                        continue;
                    }
                    let Some(read) =
                        c.keys.slice().iter().find(|r| r.field.as_str() == field && r.kind == KeyKind::U32)
                    else {
                        continue;
                    };
                    let rule = match b.when {
                        When::Load => "projector-load-bound",
                        When::FirstImage => "projector-first-use-bound",
                    };
                    let key = read.key.as_str();
                    let broken = [0u32, 1, 3, 9, 8193, 100_000].into_iter().any(|v| {
                        let mut m = table_model(p.name.as_str(), c, modality, key);
                        // the bound's other fields from the file too (an optional key may be absent)
                        for f in &fields {
                            let other =
                                c.keys.slice().iter().find(|r| r.field.as_str() == *f && r.kind == KeyKind::U32);
                            if let Some(r) = other.filter(|r| r.key.as_str() != key)
                                && !m.kvs.iter().any(|(k, _)| k == r.key.as_str().as_bytes())
                            {
                                m.kv(r.key.as_str(), OwnedValue::U32(SMALL));
                            }
                        }
                        m.kv(key, OwnedValue::U32(v));
                        projector_rules(&m.to_bytes()).iter().any(|f| f.starts_with(rule) && f.contains(key))
                    });
                    assert!(broken, "{} ({}): no value of {key} breaks {}", p.name, modality.name(), b.source);
                    checked.push(format!("{} {key}", p.name));
                }
            }
        }
        for want in [
            "granite_speech clip.audio.chunk_size",
            "dots_ocr clip.vision.image_min_pixels",
            "qwen2vl_merger clip.vision.patch_size",
            "minimax_m3",
        ] {
            assert!(checked.iter().any(|c| c.starts_with(want)), "{want} not checked: {checked:?}");
        }
    }

    #[test]
    fn table_covers_every_name_once() {
        let mut names: Vec<&str> = PROJECTOR_TYPES.iter().map(|p| p.name.as_str()).collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n);
        assert!(n >= 60, "{n} projector types");
        for name in ["mlp", "gemma3", "qwen2.5o", "qwen3vl_merger", "ultravox", "granite4_vision"] {
            assert!(names.contains(&name), "{name}");
        }
    }

    #[test]
    fn qwen3vl_width_counts_deepstack_layers() {
        let p = PROJECTOR_TYPES.iter().find(|p| p.name.as_str() == "qwen3vl_merger").expect("qwen3vl");
        let Width::Tensor { factor: Factor::OnePlusLayersWith(pat), .. } = p.vision.width else {
            panic!("qwen3vl width: {:?}", p.vision.width)
        };
        assert_eq!(pat.as_str(), "v.deepstack.{}.fc1.weight");
    }

    fn arb_value() -> impl Strategy<Value = OwnedValue> {
        prop_oneof![
            any::<u32>().prop_map(OwnedValue::U32),
            any::<i32>().prop_map(OwnedValue::I32),
            any::<u64>().prop_map(OwnedValue::U64),
            any::<f32>().prop_map(OwnedValue::F32),
            (0u8..3).prop_map(OwnedValue::Bool),
            "[a-z0-9_.]{0,12}".prop_map(|s| OwnedValue::str(&s)),
            proptest::collection::vec(any::<i32>().prop_map(OwnedValue::I32), 0..8)
                .prop_map(|v| OwnedValue::Array(ValueType::I32, v)),
            proptest::collection::vec(any::<f32>().prop_map(OwnedValue::F32), 0..8)
                .prop_map(|v| OwnedValue::Array(ValueType::F32, v)),
        ]
    }

    fn all_keys() -> Vec<&'static str> {
        let mut keys: Vec<&'static str> = COMMON_KEYS.iter().map(|r| r.key.as_str()).collect();
        for p in &PROJECTOR_TYPES {
            keys.extend(p.vision.keys.slice().iter().chain(p.audio.keys.slice()).map(|r| r.key.as_str()));
        }
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    fn all_tensor_names() -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for p in PROJECTOR_TYPES.iter().take(12) {
            for t in p.vision.tensors.slice().iter().take(20) {
                names.push(t.name.as_str().replace("{}", "0"));
            }
        }
        names.sort();
        names.dedup();
        names
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        #[test]
        fn random_projector_metadata_never_panics(
            type_pick in 0usize..80,
            vision in any::<bool>(),
            audio in any::<bool>(),
            kvs in proptest::collection::vec((0usize..400, arb_value()), 0..40),
            tensors in proptest::collection::vec((0usize..400, proptest::collection::vec(1u64..40, 0..4)), 0..20),
        ) {
            let keys = all_keys();
            let names = all_tensor_names();
            let mut m = GgufModel::new();
            m.kv("general.architecture", OwnedValue::str("clip"));
            m.kv("clip.has_vision_encoder", OwnedValue::Bool(u8::from(vision)));
            m.kv("clip.has_audio_encoder", OwnedValue::Bool(u8::from(audio)));
            let ptype = PROJECTOR_TYPES.get(type_pick).map_or("nope", |p| p.name.as_str());
            m.kv(KEY_PROJ_TYPE, OwnedValue::str(ptype));
            let mut used = Vec::new();
            for (k, v) in kvs {
                let key = keys[k % keys.len()];
                if !used.contains(&key) {
                    used.push(key);
                    m.kv(key, v);
                }
            }
            let mut tused = Vec::new();
            for (t, dims) in tensors {
                let name = &names[t % names.len()];
                if !tused.contains(name) {
                    tused.push(name.clone());
                    if let Some(t) = OwnedTensor::zeroed(name, &dims, crate::types::GgmlType::F32) {
                        m.tensor(t);
                    }
                }
            }
            let _ = projector_rules(&m.to_bytes());
        }
    }
}
