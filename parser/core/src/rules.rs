//! The rule catalogue: every check `gguf-validate` makes, with a stable id,
//! a one-line description, a citation and a level under each profile.
//!
//! This table is the single source of truth: `gguf-validate rules` prints
//! it and `parser/docs/rules.md` is generated from it (a test fails when the two
//! drift).
//!
//! Citations name the spec (`gguf.md` = ggml `docs/gguf.md`) or ggml's
//! reader (`gguf.cpp` = ggml `src/gguf.cpp`, commit `d99724f2`), with the
//! tag of the reader's check in brackets (`[T3]`): `parser/docs/ggml-reader.md`
//! says what each tag checks.
#![forbid(unsafe_code)]

use std::fmt;
use std::str::FromStr;

/// How a finding counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Not reported.
    Allow,
    /// Reported for information.
    Info,
    /// Reported; the file stays valid unless `--deny-warnings`.
    Warning,
    /// The file is invalid.
    Error,
}

impl Level {
    /// `error`, `warning`, `info` or `allow`.
    pub fn name(self) -> &'static str {
        match self {
            Level::Allow => "allow",
            Level::Info => "info",
            Level::Warning => "warning",
            Level::Error => "error",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A validation profile: which reader's idea of "valid" to apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Valid by the spec AND loadable by ggml's reader ("loads everywhere").
    #[default]
    Strict,
    /// Exactly the spec's requirements.
    Spec,
    /// The verdict of ggml's `gguf_init_from_file` (full load), except where
    /// ggml accepts something dangerous (documented divergences).
    Ggml,
}

impl Profile {
    /// Every profile.
    pub const ALL: [Profile; 3] = [Profile::Strict, Profile::Spec, Profile::Ggml];

    /// `strict`, `spec` or `ggml`.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Strict => "strict",
            Profile::Spec => "spec",
            Profile::Ggml => "ggml",
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Profile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Profile::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("unknown profile `{s}` (strict, spec, ggml)"))
    }
}

/// The part of a file a rule is about (the catalogue's sections).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Group {
    /// Magic, version, byte order, counts, and fatal decoding failures.
    Header,
    /// Keys and values as such (naming, strings, bools, arrays).
    Kv,
    /// Well-known keys (`general.*`, tokenizer arrays).
    Keys,
    /// Tensor infos (names, dims, types, sizes).
    Tensor,
    /// The data section (offsets, order, overlaps, padding).
    Layout,
    /// Tensor values (`--check-data`).
    Data,
    /// What llama.cpp's loader assumes of a model's hyper-parameters.
    Model,
    /// What llama.cpp's tokenizer assumes of the vocabulary.
    Tokenizer,
    /// Split sets (`gguf-split` shards).
    Split,
    /// Multimodal projectors (`mmproj`), as llama.cpp's `tools/mtmd` loads them.
    Projector,
    /// LoRA adapters, as `llama_adapter_lora_init` loads them.
    Adapter,
    /// Control vectors, as `common_control_vector_load_one` loads them.
    ControlVector,
    /// Importance matrices, as llama-quantize reads them (`--imatrix`).
    Imatrix,
    /// Diffusion models, as stable-diffusion.cpp and ComfyUI-GGUF load them.
    Diffusion,
    /// Chat templates (`tokenizer.chat_template*` and Jinja found in other values).
    Template,
    /// The run's own configuration (suppressions not applied).
    Config,
    /// rwkv.cpp files.
    Rwkv,
    /// GGML, GGMF and GGJT files.
    Legacy,
}

impl Group {
    /// `header`, `kv`, `keys`, `tensor`, `layout`, `data`, `model`,
    /// `tokenizer`, `split`, `projector`, `adapter`, `control-vector`,
    /// `imatrix`, `template`, `config`, `rwkv` or `legacy`.
    pub fn name(self) -> &'static str {
        match self {
            Group::Header => "header",
            Group::Kv => "kv",
            Group::Keys => "keys",
            Group::Tensor => "tensor",
            Group::Layout => "layout",
            Group::Data => "data",
            Group::Model => "model",
            Group::Tokenizer => "tokenizer",
            Group::Split => "split",
            Group::Projector => "projector",
            Group::Adapter => "adapter",
            Group::ControlVector => "control-vector",
            Group::Imatrix => "imatrix",
            Group::Diffusion => "diffusion",
            Group::Template => "template",
            Group::Config => "config",
            Group::Rwkv => "rwkv",
            Group::Legacy => "legacy",
        }
    }
}

impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A rule's level under each profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Levels {
    /// Under `strict`.
    pub strict: Level,
    /// Under `spec`.
    pub spec: Level,
    /// Under `ggml`.
    pub ggml: Level,
}

impl Levels {
    /// The level under `profile`.
    pub fn get(&self, profile: Profile) -> Level {
        match profile {
            Profile::Strict => self.strict,
            Profile::Spec => self.spec,
            Profile::Ggml => self.ggml,
        }
    }
}

/// One rule of the catalogue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The rule's enum value.
    pub code: RuleId,
    /// Stable kebab-case id, used in reports and on the command line.
    pub id: &'static str,
    /// Part of the file the rule is about.
    pub group: Group,
    /// A decoding failure: the rest of the file cannot be read, so the
    /// rule cannot be allowed or downgraded.
    pub fatal: bool,
    /// Level under each profile.
    pub levels: Levels,
    /// Where the rule comes from.
    pub citation: &'static str,
    /// What the rule requires, in one line.
    pub description: &'static str,
    /// For the `ggml` profile: why we reject where ggml accepts, if we do.
    pub divergence: Option<&'static str>,
}

impl Rule {
    /// The rule's level under a profile.
    pub fn level(&self, profile: Profile) -> Level {
        self.levels.get(profile)
    }
}

/// Whether a fix leaves the file meaning the same to every reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FixKind {
    /// Every reader sees the same model afterwards (`gguf-validate fix`
    /// applies it).
    Safe,
    /// Changes what some reader sees (applied with `--unsafe` only).
    Unsafe,
}

impl FixKind {
    /// `safe` or `unsafe`.
    pub fn name(self) -> &'static str {
        match self {
            FixKind::Safe => "safe",
            FixKind::Unsafe => "unsafe",
        }
    }
}

impl fmt::Display for FixKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A fix a rule's findings can have (`gguf-validate fix`,
/// [`crate::fix`]): a row of the catalogue's fix column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fix {
    /// The rule whose findings it fixes.
    pub rule: RuleId,
    /// Safe or unsafe.
    pub kind: FixKind,
    /// What it does, in one line.
    pub does: &'static str,
}

/// The fixes: a rule has at most one of each kind, and which applies to a
/// finding depends on the finding (a duplicated key whose copies are equal
/// or not).
pub const FIXES: &[Fix] = &[
    Fix {
        rule: RuleId::KeyDuplicate,
        kind: FixKind::Safe,
        does: "the later copies of the key removed, when every copy holds the same value.",
    },
    Fix {
        rule: RuleId::KeyDuplicate,
        kind: FixKind::Unsafe,
        does: "the later copies of the key removed, keeping the first value, when the copies differ (readers disagree on which wins).",
    },
    Fix {
        rule: RuleId::StandardKeyType,
        kind: FixKind::Safe,
        does: "the value written again as the type llama.cpp reads, when that type holds the same number.",
    },
    Fix {
        rule: RuleId::MetadataKeyType,
        kind: FixKind::Safe,
        does: "the value written again as the spec's type, when that type holds the same number.",
    },
    Fix {
        rule: RuleId::QuantVersionType,
        kind: FixKind::Safe,
        does: "`general.quantization_version` written again as a u32, when it holds the same number.",
    },
    Fix {
        rule: RuleId::QuantVersionMissing,
        kind: FixKind::Safe,
        does: "`general.quantization_version` added as the u32 2, ggml's `GGML_QNT_VERSION` since before GGUF: the version of every block layout a GGUF file holds.",
    },
    Fix {
        rule: RuleId::TokenIdRange,
        kind: FixKind::Unsafe,
        does: "the special-token key removed, so llama.cpp uses its vocabulary type's default for the role.",
    },
    Fix {
        rule: RuleId::TemplateHiddenText,
        kind: FixKind::Unsafe,
        does: "the invisible and bidi-reordering code points removed from the string.",
    },
    Fix {
        rule: RuleId::TensorOffsetMisaligned,
        kind: FixKind::Safe,
        does: "tensor data laid out again: each tensor's bytes unchanged, in tensor-info order, at offsets aligned to `general.alignment`, zero padding.",
    },
    Fix {
        rule: RuleId::TensorDataGap,
        kind: FixKind::Safe,
        does: "tensor data laid out again, without the gap (each tensor's bytes unchanged).",
    },
    Fix {
        rule: RuleId::TensorDataOrder,
        kind: FixKind::Safe,
        does: "tensor data laid out again in tensor-info order (each tensor's bytes unchanged).",
    },
    Fix {
        rule: RuleId::PaddingNonZero,
        kind: FixKind::Safe,
        does: "tensor data laid out again with zero padding (each tensor's bytes unchanged).",
    },
    Fix {
        rule: RuleId::PaddingFinalMissing,
        kind: FixKind::Safe,
        does: "the padding after the last tensor added (zeros to `general.alignment`).",
    },
    Fix {
        rule: RuleId::TrailingBytes,
        kind: FixKind::Safe,
        does: "the bytes after the last tensor's padding dropped.",
    },
];

macro_rules! catalogue {
    ($( $code:ident = $id:literal, $group:ident, [$s:ident, $p:ident, $g:ident] $(, fatal=$fatal:literal)? $(, divergence=$div:literal)?,
        cite: $cite:literal, $desc:literal; )*) => {
        /// Identifies a rule; see [`RULES`] for the catalogue.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[allow(missing_docs)]
        pub enum RuleId { $($code,)* }

        /// The catalogue, in the order the docs list it.
        pub static RULES: &[Rule] = &[
            $(Rule {
                code: RuleId::$code,
                id: $id,
                group: Group::$group,
                fatal: catalogue!(@fatal $($fatal)?),
                levels: Levels { strict: Level::$s, spec: Level::$p, ggml: Level::$g },
                citation: $cite,
                description: $desc,
                divergence: catalogue!(@div $($div)?),
            },)*
        ];
    };
    (@fatal) => { false };
    (@fatal $f:literal) => { $f };
    (@div) => { None };
    (@div $d:literal) => { Some($d) };
}

catalogue! {
    // ---- Decoding (fatal: the rest of the file cannot be read) ----
    FileTruncated = "file-truncated", Header, [Error, Error, Error], fatal=true,
        cite: "gguf.md File Structure; gguf.cpp every read checks the bytes left [H1]",
        "Every field must lie inside the file; a read past the end means the file is truncated.";
    Magic = "magic", Header, [Error, Error, Error], fatal=true,
        cite: "gguf.md File Structure; gguf.cpp magic check [H2]",
        "The file starts with the four bytes `GGUF`.";
    PointerFile = "pointer-file", Header, [Error, Error, Error], fatal=true,
        cite: "Git LFS pointer files (https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md: `version https://git-lfs.github.com/spec/v1`, `oid`, `size`); git-xet pointer files (`# xet version 0`)",
        "The file is not a Git LFS or Xet pointer: a checkout without its large-file objects (`actions/checkout` without `lfs: true`, a clone without git-lfs) leaves a small text file naming the model where the model should be.";
    LegacyFormat = "legacy-format", Header, [Error, Error, Error], fatal=true,
        cite: "gguf.md Historical State of Affairs; llama.cpp convert_llama_ggml_to_gguf.py",
        "GGML, GGMF, GGJT and GGLA files (and llama.cpp session files) are not GGUF and must be converted before current llama.cpp can load them; rwkv.cpp files are validated as their own format.";
    VersionUnsupported = "version-unsupported", Header, [Error, Error, Error], fatal=true,
        cite: "gguf.md Version History; gguf.cpp rejects 0 and versions above GGUF_VERSION (3) [H3, H4, H6]",
        "The version is 2 or 3 (read in either byte order); 0, future versions and words whose low 16 bits are zero are rejected.";
    VersionObsolete = "version-obsolete", Header, [Error, Error, Error], fatal=true,
        cite: "gguf.md Version History (v1); gguf.cpp \"GGUFv1 is no longer supported\" [H5]",
        "GGUF v1 (2023: u32 counts and lengths) is read by no current reader.";
    CountExceedsFile = "count-exceeds-file", Header, [Error, Error, Error], fatal=true,
        cite: "gguf.cpp n_tensors / n_kv checks [H8, H9]; TALOS-2024-1915, TALOS-2024-1916",
        "tensor_count and kv_count fit in the bytes that remain (a key/value pair takes at least 13 bytes, a tensor info at least 24).";
    StringExceedsFile = "string-length-exceeds-file", Kv, [Error, Error, Error], fatal=true,
        cite: "gguf.cpp string length <= bytes remaining [K1]; TALOS-2024-1913",
        "A string's length fits in the bytes that remain.";
    ValueTypeUnknown = "value-type-unknown", Kv, [Error, Error, Error], fatal=true,
        cite: "gguf.md gguf_metadata_value_type; gguf.cpp [K4]",
        "A value type id is one of 0..=12.";
    ArrayTypeUnknown = "array-type-unknown", Kv, [Error, Error, Error], fatal=true,
        cite: "gguf.md gguf_metadata_value_type; gguf.cpp [K4, K5]",
        "An array's element type id is one of 0..=12.";
    ArrayExceedsFile = "array-length-exceeds-file", Kv, [Error, Error, Error], fatal=true,
        cite: "gguf.cpp n * sizeof(T) <= bytes remaining [K5]; TALOS-2024-1912",
        "An array's element count, times the smallest element size, fits in the bytes that remain.";
    ArrayTooDeep = "array-nesting-too-deep", Kv, [Error, Error, Error], fatal=true,
        cite: "limits::MAX_ARRAY_DEPTH (16); gguf-py RecursionError DoS",
        "Arrays nest at most 16 deep (our bound: the spec sets none, ggml allows no nesting at all).";
    MetadataLimit = "metadata-limit", Header, [Error, Error, Error], fatal=true,
        cite: "limits::MetadataLimits (256 MiB of metadata, 64 MiB strings, 16 Mi array elements, 65,536 keys, 262,144 tensors by default)",
        "The metadata declares no more than this tool reads: a resource limit, not a rule of the format (the largest real metadata, a 262,144-token vocabulary, is 6.5 MB). A file beyond it is not examined further; raise the limit to examine it.";
    DimsExceedFile = "n-dims-exceeds-file", Tensor, [Error, Error, Error], fatal=true,
        cite: "gguf.md gguf_tensor_info_t; TALOS-2024-1914",
        "A tensor's dims (n_dims x 8 bytes) fit in the bytes that remain.";

    // ---- Header ----
    ByteOrderBigEndian = "byte-order-big-endian", Header, [Error, Info, Error],
        cite: "gguf.md Version History (v3 adds big-endian); gguf.cpp endianness check [H4]",
        "The file is big-endian: valid by the spec, but ggml (and so llama.cpp) on a little-endian host - every common one - rejects it, so strict (\"loads everywhere\") rejects it too.";
    VersionTwo = "version-2", Header, [Info, Info, Allow],
        cite: "gguf.md Version History",
        "GGUF v2 has the v3 layout and is still read, but current writers produce v3.";

    // ---- Keys and values ----
    KeyEmpty = "key-empty", Kv, [Error, Error, Error],
        cite: "gguf.md gguf_metadata_kv_t (lower_snake_case segments); gguf.cpp rejects empty keys [K2]",
        "A key is not empty.";
    KeyAscii = "key-ascii", Kv, [Error, Error, Allow],
        cite: "gguf.md gguf_metadata_kv_t: \"the key must be a valid ASCII string\"",
        "A key is ASCII (and so valid UTF-8).";
    KeyNaming = "key-naming", Kv, [Warning, Error, Allow],
        cite: "gguf.md gguf_metadata_kv_t: hierarchical lower_snake_case segments separated by `.`",
        "A key is lower_snake_case segments ([a-z0-9_]+) joined by `.`; real files use `-` (gpt-oss) and upper case (chat template names), so strict only warns.";
    KeyControl = "key-control", Kv, [Error, Allow, Allow],
        cite: "gguf.cpp gguf_find_key and llama.cpp compare keys as C strings (strcmp / std::string from const char *)",
        "A key holds no NUL or other control byte: a C-string reader cuts `tokenizer.chat_template\\0x` at the NUL and sees a second `tokenizer.chat_template`, so a scanner and a loader read different values (spec: covered by key-naming).";
    KeyTooLong = "key-too-long", Kv, [Error, Error, Allow],
        cite: "gguf.md gguf_metadata_kv_t: \"at most 2^16-1 bytes\"",
        "A key is at most 65,535 bytes.";
    KeyDuplicate = "key-duplicate", Kv, [Error, Error, Error],
        cite: "gguf.cpp duplicate key check [K3]; gguf-py KeyError",
        "No key appears twice (readers disagree on which copy wins).";
    StringTooLong = "string-length-limit", Kv, [Error, Allow, Error],
        cite: "gguf.cpp GGUF_MAX_STRING_LENGTH = 2^30 [K1]",
        "A string is at most 2^30 bytes (ggml's limit; the spec sets none).";
    StringUtf8 = "string-utf8", Kv, [Error, Error, Allow],
        cite: "gguf.md gguf_string_t: \"UTF-8 non-null-terminated string\"",
        "Every string value (and string array element) is valid UTF-8.";
    BoolValue = "bool-value", Kv, [Error, Error, Allow],
        cite: "gguf.md GGUF_METADATA_VALUE_TYPE_BOOL: \"1-byte value where 0 is false and 1 is true. Anything else is invalid\"",
        "A bool byte is 0 or 1 (ggml reads any non-zero byte as true).";
    ArrayNested = "array-nested", Kv, [Error, Allow, Error],
        cite: "gguf.md \"Arrays can be nested\"; gguf.cpp rejects ARRAY as element type [K4]",
        "Arrays do not contain arrays (the spec allows it, ggml rejects it).";
    ArrayTooLong = "array-length-limit", Kv, [Error, Allow, Error],
        cite: "gguf.cpp GGUF_MAX_ARRAY_ELEMENTS = 2^30 [K5]",
        "An array has at most 2^30 elements (ggml's limit; the spec sets none).";

    // ---- Well-known keys ----
    AlignmentType = "alignment-type", Keys, [Error, Error, Error],
        cite: "gguf.md general.alignment: uint32; gguf.cpp [A1]",
        "`general.alignment`, when present, is a scalar u32.";
    AlignmentZero = "alignment-zero", Keys, [Error, Error, Error],
        cite: "gguf.cpp alignment == 0 rejected [A2]",
        "`general.alignment` is not zero.";
    AlignmentPowerOfTwo = "alignment-power-of-two", Keys, [Error, Allow, Error],
        cite: "gguf.cpp alignment must be a power of two [A2]",
        "`general.alignment` is a power of two (ggml requires it; the spec allows e.g. 24).";
    AlignmentMultipleOf8 = "alignment-multiple-of-8", Keys, [Error, Error, Allow],
        cite: "gguf.md general.alignment: \"must be a multiple of 8\"",
        "`general.alignment` is a multiple of 8 (ggml accepts 1, 2 and 4).";
    AlignmentLarge = "alignment-large", Keys, [Warning, Allow, Allow],
        cite: "llama.cpp#24997, oss-security 2026/q2 \"V-01\" (general.alignment 0x80000000, no upper bound); ggml#1516 (GGML_PAD overflow on 32-bit hosts)",
        "`general.alignment` is at most 1 MiB.";
    ArchitectureMissing = "architecture-missing", Keys, [Error, Error, Allow],
        cite: "gguf.md Required: general.architecture; llama.cpp tools/gguf-split (metadata in the first shard only)",
        "`general.architecture` is present (in a split set, in the first shard: gguf-split writes the metadata there only, and later shards are exempt). Importance matrices have their own rule (`imatrix-architecture-missing`).";
    ImatrixArchitectureMissing = "imatrix-architecture-missing", Keys, [Allow, Error, Allow],
        cite: "gguf.md Required: general.architecture; llama.cpp tools/imatrix (imatrix files carry general.type = imatrix and no architecture)",
        "An importance matrix (`general.type` = `imatrix`) has `general.architecture`. llama-imatrix writes none, and no model loader reads the file, so only the spec profile requires the key.";
    DiffusionArchitectureMissing = "diffusion-architecture-missing", Keys, [Allow, Error, Allow],
        cite: "gguf.md Required: general.architecture; stable-diffusion.cpp src/model_io/gguf_io.cpp (reads no key); its converter (`sd convert`) writes none; ComfyUI-GGUF loader.py (no architecture: \"sd.cpp\" compatibility mode)",
        "A diffusion model stable-diffusion.cpp recognises by its tensor names has `general.architecture`. Its own converter writes none and neither it nor ComfyUI-GGUF needs one, so only the spec profile requires the key.";
    DiffusionQuantVersionMissing = "diffusion-quantization-version-missing", Keys, [Allow, Error, Allow],
        cite: "gguf.md Required: general.quantization_version \"if any tensors are quantized\"; stable-diffusion.cpp src/model_io/gguf_io.cpp (reads no key)",
        "A block-quantized diffusion model has `general.quantization_version`. stable-diffusion.cpp's converter writes none and neither loader reads it, so only the spec profile requires it.";
    ArchitectureType = "architecture-type", Keys, [Error, Error, Allow],
        cite: "gguf.md general.architecture: string",
        "`general.architecture` is a string.";
    ArchitectureCharset = "architecture-charset", Keys, [Warning, Error, Allow],
        cite: "gguf.md general.architecture: \"lowercase ASCII, [a-z0-9]+\"",
        "`general.architecture` is [a-z0-9]+; real names contain `-` and `_` (command-r, nemotron_h), so strict only warns.";
    QuantVersionMissing = "quantization-version-missing", Keys, [Error, Error, Allow],
        cite: "gguf.md Required: general.quantization_version \"if any tensors are quantized\"",
        "`general.quantization_version` is present when any tensor is block-quantized.";
    QuantVersionType = "quantization-version-type", Keys, [Warning, Error, Allow],
        cite: "gguf.md general.quantization_version: uint32",
        "`general.quantization_version` is a u32.";
    StandardKeyType = "standard-key-type", Keys, [Error, Warning, Allow],
        cite: "llama.cpp src/llama-model-loader.cpp GKV::get_kv (\"key has wrong type\"), get_arr (\"wrong array element type\"); src/llama-vocab.cpp load (\"invalid gguf type\"); PR #26690 (scores as u8: out-of-bounds read); types generated by conformance/tools/llama-arch/gen_arch_table.py",
        "A key llama.cpp reads with a fixed type has that type (`ARCH.block_count` u32, `ARCH.rope.freq_base` f32, `tokenizer.ggml.scores` array[f32] or array[i32], special token ids u32, `split.count` u16, ...): llama.cpp refuses the file otherwise, and older versions read past the value.";
    TokenizerArrayLength = "tokenizer-array-length", Keys, [Error, Error, Allow],
        cite: "gguf.md tokenizer.ggml.scores/token_type: same length as tokens; llama.cpp#26690 (OOB read)",
        "`tokenizer.ggml.scores` and `token_type` have one element per entry of `tokenizer.ggml.tokens`.";
    MetadataKeyType = "metadata-key-type", Keys, [Warning, Warning, Allow],
        cite: "gguf.md Standardized key-value pairs (general.*, tokenizer.huggingface.json, ...)",
        "A standard key that llama.cpp does not read (general.author, general.tags, ...) has the type the spec gives it; other programs may misread it, but llama.cpp loads the file, so this is a warning.";
    TokenIdRange = "token-id-range", Keys, [Error, Allow, Allow],
        cite: "GHSA-g4cc-763q-h9h6 (special token id >= n_vocab, heap OOB read); llama.cpp src/llama-vocab.cpp load (current versions warn and fall back)",
        "Special token ids (`tokenizer.ggml.*_token_id`) are below the vocabulary size: older loaders read past the vocabulary; current llama.cpp loads the file but replaces the value by its vocabulary type's default (or no token), so the model does not behave as written and strict rejects it.";
    TokenizerSpecialDefault = "tokenizer-special-default", Keys, [Warning, Allow, Allow],
        cite: "llama.cpp src/llama-vocab.cpp load (each tokenizer model's default special-token ids; llama.cpp#25508: `special_eog_ids` read past the vocabulary)",
        "A special-token id llama.cpp substitutes (a tokenizer model's default, taken when `tokenizer.ggml.*_token_id` is absent or outside the vocabulary: eos 2 for `llama`, 11 for `gpt2`) is inside the vocabulary: the pinned llama.cpp disables one outside it, so the model has no such token; older releases read past the vocabulary, or refuse the file at load (`--llama-cpp` judges them).";

    // ---- Tensor infos ----
    TensorTypeDialect = "tensor-type-dialect", Tensor, [Error, Error, Error],
        cite: "PrismML-Eng/llama.cpp#167, #130; llama.cpp#29058; unixsysdev/llama-turboquant#6 (type ids a fork gives another layout)",
        "A tensor type id has upstream ggml's layout: a file whose data lines up only with a fork's layout for its ids (PrismML's Q2_0 with 128-element groups under id 42, its early Q1_0 under 40, PQ2_0 142, PTQ1_0 143) is named as that fork's, which upstream llama.cpp cannot load.";
    TensorNameEmpty = "tensor-name-empty", Tensor, [Error, Allow, Allow],
        cite: "gguf.md gguf_tensor_info_t name",
        "A tensor name is not empty.";
    TensorName64 = "tensor-name-64-bytes", Tensor, [Error, Allow, Error],
        cite: "gguf.md: name \"at most 64 bytes\"; gguf.cpp name length < GGML_MAX_NAME (64) [T1]",
        "A tensor name of exactly 64 bytes: the spec allows it, ggml (room for the NUL) rejects it.";
    TensorNameTooLong = "tensor-name-too-long", Tensor, [Error, Error, Error],
        cite: "gguf.md: name \"at most 64 bytes\"; gguf.cpp [T1]",
        "A tensor name is at most 64 bytes.";
    TensorNameNul = "tensor-name-nul", Tensor, [Error, Warning, Allow],
        cite: "ggml ggml_set_name copies up to the first NUL [T2]",
        "A tensor name contains no NUL byte (ggml silently truncates the name there).";
    TensorNameUtf8 = "tensor-name-utf8", Tensor, [Error, Error, Allow],
        cite: "gguf.md gguf_string_t: UTF-8",
        "A tensor name is valid UTF-8.";
    TensorNameControl = "tensor-name-control", Tensor, [Warning, Allow, Allow],
        cite: "gguf.md gguf_tensor_info_t name (any UTF-8); names are printed in logs by every loader",
        "A tensor name holds no control character other than NUL (reported by tensor-name-nul) and no invisible or bidi-reordering character: such names can rewrite terminal output and log lines (ESC sequences, newlines, U+202E).";
    TensorNameDuplicate = "tensor-name-duplicate", Tensor, [Error, Error, Error],
        cite: "gguf.md: \"tensor names must be unique\"; gguf.cpp [T3]",
        "No two tensors have the same name.";
    TensorNameDuplicateAfterNul = "tensor-name-duplicate-after-nul", Tensor, [Error, Allow, Error],
        divergence = "ggml 0.25.3 compares full names and accepts `w\\0a` and `w\\0b`, but ggml_set_name truncates both to `w`, so lookups by name see one tensor twice",
        cite: "gguf.cpp compares names with strcmp after NUL truncation [T3]",
        "No two tensor names are equal up to their first NUL byte (ggml sees them as duplicates).";
    TensorNDims = "tensor-n-dims", Tensor, [Error, Error, Error],
        cite: "gguf.md n_dimensions \"currently at most 4\"; gguf.cpp GGML_MAX_DIMS [T4]",
        "A tensor has at most 4 dimensions.";
    TensorNDimsZero = "tensor-n-dims-zero", Tensor, [Warning, Info, Allow],
        cite: "gguf.cpp accepts n_dims 0 as shape [1,1,1,1] [T4]",
        "A tensor has at least one dimension.";
    TensorDimRange = "tensor-dim-range", Tensor, [Error, Error, Error],
        cite: "gguf.cpp reads dims as int64 and rejects negatives [T5]",
        "Every dimension is below 2^63.";
    TensorDimZero = "tensor-dim-zero", Tensor, [Warning, Info, Allow],
        cite: "gguf.cpp accepts zero dims since 2026 (test-gguf TENSORS_ZERO_DIM) [T5]",
        "No dimension is zero (an empty tensor).";
    TensorElementCountOverflow = "tensor-element-count-overflow", Tensor, [Error, Error, Error],

        cite: "gguf.cpp INT64_MAX guards [T6]; TALOS-2024-1914",
        "The product of the dimensions is below 2^63, computed exactly (ggml d99724f skipped its guard when the product wrapped to 0; ggml 0.25.3 rejects it too).";
    TensorTypeUnknown = "tensor-type-unknown", Tensor, [Error, Error, Error],
        cite: "ggml.h GGML_TYPE_COUNT = 43; gguf.cpp [T7]",
        "A tensor type id is below 43.";
    TensorTypeRemoved = "tensor-type-removed", Tensor, [Error, Error, Error],
        cite: "ggml.c type_traits with blck_size 0 (ids 4, 5, 31-33, 36-38) [T8]",
        "A tensor type is not one of the removed ids 4, 5, 31, 32, 33, 36, 37, 38.";
    TensorTypeIntermediate = "tensor-type-intermediate", Tensor, [Warning, Allow, Allow],
        cite: "ggml.c: Q8_1 and Q8_K have no to_float in the CPU type traits",
        "A tensor is not stored as Q8_1 or Q8_K, which ggml uses only as dot-product intermediates.";
    TensorRowBlock = "tensor-row-block", Tensor, [Error, Error, Error],
        cite: "gguf.cpp ne[0] % blck_size [T9]",
        "The row length ne[0] is a multiple of the type's block size.";
    TensorByteSizeOverflow = "tensor-byte-size-overflow", Tensor, [Error, Error, Error],
        divergence = "ggml's metadata-only load accepts sizes up to SIZE_MAX; its full load then aborts (GGML_ASSERT) on the failed allocation",
        cite: "gguf.cpp nbytes guard [T10]; CVE-2026-33298 / GHSA-96jg-mvhq-q7q7 (ggml_nbytes wraps on a huge ne of a quantized type); llama.cpp #24759 (GGML_PAD wraps to 0 for F32 with ne[0] = SIZE_MAX/4)",
        "The tensor's size in bytes fits in 63 bits.";
    Size32Bit = "size-32-bit", Tensor, [Warning, Allow, Allow],
        cite: "GHSA-2284-h945-8w3c (MLX's GGUF loader truncated sizes to 32 bits: heap out-of-bounds write); ggml on 32-bit hosts (size_t of 32 bits)",
        "No tensor's byte size is 2^32 or more: valid, and read by llama.cpp on 64-bit hosts, but a reader that keeps sizes in 32 bits truncates them and misreads or overflows (strings that long are past `metadata-limit`'s caps already).";

    // ---- Data layout ----
    DataSizeOverflow = "data-size-overflow", Layout, [Error, Error, Error],
        divergence = "ggml's metadata-only load accepts totals up to SIZE_MAX; its full load then aborts (GGML_ASSERT) on the failed allocation",
        cite: "gguf.cpp running size guard [D3]; CVE-2025-53630, CVE-2026-27940 / GHSA-3p4r-fq3f-q74v (gguf_init_from_file_impl: the context overhead plus the tensor sizes wrap)",
        "The sum of the padded tensor sizes fits in 63 bits.";
    DataSectionStart = "data-section-start", Layout, [Error, Error, Error],
        cite: "gguf.md: tensor_data starts at the next multiple of ALIGNMENT; gguf.cpp [D1]",
        "The aligned start of the data section lies inside the file.";
    TensorOffsetMisaligned = "tensor-offset-misaligned", Layout, [Error, Error, Error],
        cite: "gguf.md gguf_tensor_info_t offset: \"must be a multiple of ALIGNMENT\"",
        "Every tensor's data offset is a multiple of the alignment.";
    TensorDataOverlap = "tensor-data-overlap", Layout, [Error, Error, Error],
        cite: "gguf.cpp exact offsets [D2]; safetensors Metadata::validate",
        "No two tensors' data ranges overlap.";
    TensorDataGap = "tensor-data-gap", Layout, [Error, Allow, Error],
        cite: "gguf.cpp offset == running padded size [D2]",
        "Tensor data is contiguous: each tensor starts at the padded end of the previous one (the first at 0).";
    TensorDataOrder = "tensor-data-order", Layout, [Error, Allow, Error],
        cite: "gguf.cpp offset == running padded size, in tensor-info order [D2]",
        "Tensor data appears in the order of the tensor infos.";
    TensorDataOutOfBounds = "tensor-data-out-of-bounds", Layout, [Error, Error, Error],
        divergence = "ggml's metadata-only load (no_alloc) does not check it; llama.cpp's loader and the full load do",
        cite: "llama.cpp loader \"data is not within the file bounds\"; Ollama CVE-2026-7482",
        "Every tensor's data lies inside the file.";
    PaddingNonZero = "padding-nonzero", Layout, [Error, Error, Allow],
        cite: "gguf.md: padding is 0x00 bytes",
        "Padding (before the data section and between tensors) is zero bytes.";
    PaddingFinalMissing = "padding-final-missing", Layout, [Error, Allow, Error],
        cite: "gguf.cpp reads the whole padded blob when loading data [D5]",
        "The file includes the padding after the last tensor.";
    TrailingBytes = "trailing-bytes", Layout, [Warning, Info, Allow],
        cite: "gguf.cpp ignores bytes after the data [D6]; safetensors MetadataIncompleteBuffer (polyglot files)",
        "Nothing follows the padded end of the tensor data.";

    // ---- rwkv.cpp checkpoints (`.bin`, magic 0x67676d66 `fmgg`, versions 100/101) ----
    // rwkv.cpp's native format, so a valid file is VALID. Profiles for it:
    // `strict` = rwkv.cpp loads it and it is well formed; `spec` = rwkv.cpp
    // docs/FILE_FORMAT.md plus the loader's hard checks; `ggml` = the verdict
    // of rwkv.cpp's loader (`rwkv_load_model_from_file`, commit 4358e709).
    RwkvTruncated = "rwkv-truncated", Rwkv, [Error, Error, Error], fatal=true,
        cite: "rwkv.cpp rwkv_file_format.inc rwkv_fread_file_header, rwkv_fread_tensor_header, rwkv_fread_ggml_tensor_data (short reads fail)",
        "The header and every parameter (header, shape, key and data) lie inside the file; nothing is cut short.";
    RwkvVersion = "rwkv-version", Rwkv, [Error, Error, Error],
        cite: "rwkv.cpp rwkv.h RWKV_FILE_VERSION_MIN/MAX; rwkv_file_format.inc rwkv_fread_file_header",
        "The file version is 100 or 101.";
    RwkvDataType = "rwkv-data-type", Rwkv, [Error, Error, Error], fatal=true,
        cite: "rwkv.cpp rwkv_file_format.inc enum rwkv_type, rwkv_type_to_ggml; rwkv_fread_file_header, rwkv_fread_tensor_header",
        "Header and parameter data types are rwkv.cpp types still supported: 0-3 and 7-16 (4-6 were removed, 17 and above are unknown).";
    RwkvQuantizedV100 = "rwkv-quantized-v100", Rwkv, [Error, Error, Error],
        cite: "rwkv.cpp docs/FILE_FORMAT.md File versions; rwkv_fread_file_header (\"created with an old version of rwkv.cpp\")",
        "Quantized data appears only in version 101 files: version 100 quantized blocks have a layout current ggml cannot read.";
    RwkvDimCount = "rwkv-dim-count", Rwkv, [Error, Warning, Error],
        cite: "rwkv.cpp rwkv_file_format.inc rwkv_fread_tensor_header (dim_count 1, 2 or 3); FILE_FORMAT.md sets no bound",
        "A parameter has 1, 2 or 3 dimensions.";
    RwkvRowBlock = "rwkv-row-block", Rwkv, [Error, Error, Error], fatal=true,
        cite: "ggml ggml_row_size asserts ne0 % block size == 0 (rwkv_fread_ggml_tensor_info creates the tensor); FILE_FORMAT.md data length",
        "A quantized parameter's row length ne0 is a multiple of its type's block size.";
    RwkvKeyUtf8 = "rwkv-key-utf8", Rwkv, [Error, Error, Allow],
        cite: "rwkv.cpp docs/FILE_FORMAT.md Parameter: uint8[key_length] key_utf8 (the loader does not check)",
        "A parameter key is valid UTF-8.";
    RwkvKeyDuplicate = "rwkv-key-duplicate", Rwkv, [Error, Error, Warning],
        cite: "rwkv.cpp rwkv_load_model_from_file: the name map keeps the last copy, and the data pass reads every copy with the last copy's size",
        "No parameter key appears twice.";
    RwkvHeaderValue = "rwkv-header-value", Rwkv, [Error, Error, Error],
        cite: "rwkv.cpp rwkv_set_params (one layer per n_layer, v5+ read layer 0) and the emb.weight dimension check",
        "The header's n_vocab, n_embed and n_layer are not zero.";
    RwkvMissingParameter = "rwkv-missing-parameter", Rwkv, [Error, Error, Error],
        cite: "rwkv.cpp rwkv_model_loading.inc rwkv_set_params (\"Model parameter %s not found\")",
        "Every parameter rwkv.cpp needs for the detected architecture is present: emb.weight, blocks.0.ln0.*, the names of every layer below n_layer, ln_out.* and head.weight.";
    RwkvUnusedParameter = "rwkv-unused-parameter", Rwkv, [Warning, Allow, Allow],
        cite: "rwkv.cpp rwkv_set_params (parameters it does not name are read and never used)",
        "Every parameter is one rwkv.cpp uses for the detected architecture and n_layer.";
    RwkvShape = "rwkv-shape", Rwkv, [Error, Error, Error],
        cite: "rwkv.cpp rwkv_load_model_from_file (\"Unexpected dimension of embedding matrix\")",
        "emb.weight is a 2-D matrix with ne0 = n_embed and ne1 = n_vocab.";
    RwkvParameterShape = "rwkv-parameter-shape", Rwkv, [Error, Error, Warning],
        cite: "rwkv.cpp rwkv_graph.inc (layer norms over n_embed, head maps n_embed to n_vocab; ggml asserts shapes when the graph is built)",
        "head.weight is [n_embed, n_vocab] and the layer norms (ln0, ln1, ln2, ln_out; weight and bias) are vectors of n_embed.";
    RwkvArchitecture = "rwkv-architecture", Rwkv, [Info, Info, Info],
        cite: "rwkv.cpp rwkv_load_model_from_file (arch_version_major/minor from blocks.0 names)",
        "Reports the RWKV architecture version (v4, v5.1, v5.2, v6, v7), detected from the parameter names as rwkv.cpp does.";

    // ---- GGML, GGMF, GGJT (the llama.cpp formats GGUF replaced) ----
    // `legacy-format` (fatal) always fires for these: current llama.cpp
    // cannot load them. The rules below say whether the file is intact and
    // convertible with llama.cpp's convert_llama_ggml_to_gguf.py.
    LegacyVersion = "legacy-version", Legacy, [Error, Error, Error], fatal=true,
        cite: "llama.cpp convert_llama_ggml_to_gguf.py GGMLModel.validate_header",
        "A GGMF file has version 1 and a GGJT file version 1, 2 or 3; other versions have no known layout.";
    LegacyTruncated = "legacy-truncated", Legacy, [Error, Error, Error], fatal=true,
        cite: "llama.cpp convert_llama_ggml_to_gguf.py (hyper-parameters, vocabulary, then tensors to the end of the file)",
        "The hyper-parameters, every vocabulary entry and every tensor (header, padding and data) lie inside the file.";
    LegacyFtype = "legacy-ftype", Legacy, [Error, Error, Error],
        cite: "llama.cpp convert_llama_ggml_to_gguf.py GGMLFType (\"Invalid ftype\")",
        "The hyper-parameter ftype is a known llama.cpp file type (0-4 or 7-18).";
    LegacyVocabLength = "legacy-vocab-length", Legacy, [Error, Error, Error],
        cite: "llama.cpp convert_llama_ggml_to_gguf.py Vocab.load (\"Absurd vocab item length\")",
        "A vocabulary entry is shorter than 4096 bytes.";
    LegacyNameLength = "legacy-name-length", Legacy, [Error, Error, Error],
        cite: "llama.cpp convert_llama_ggml_to_gguf.py Tensor.load (\"Absurd tensor name length\")",
        "A tensor name is shorter than 4096 bytes.";
    LegacyNameDuplicate = "legacy-name-duplicate", Legacy, [Error, Error, Error],
        cite: "llama.cpp convert_llama_ggml_to_gguf.py (tensor_map keeps the last tensor of a name, the converter writes both)",
        "No two tensors have the same name.";
    LegacyNDims = "legacy-n-dims", Legacy, [Error, Error, Error],
        cite: "llama.cpp convert_llama_ggml_to_gguf.py Tensor.load (\"Invalid tensor dimensions\"); GGML_MAX_DIMS",
        "A tensor has at most 4 dimensions.";
    LegacyTensorType = "legacy-tensor-type", Legacy, [Error, Error, Error], fatal=true,
        cite: "ggml include/ggml/ggml.h enum ggml_type of the file's era (ggml abea4b76, fe48e22f, b0d536bb, 93b94a2d)",
        "A tensor's type id exists in the type table of the file's era (otherwise its data size is unknown).";
    LegacyRowBlock = "legacy-row-block", Legacy, [Error, Error, Error], fatal=true,
        cite: "ggml ggml_row_size asserts ne0 % block size == 0",
        "A quantized tensor's row length ne0 is a multiple of its type's block size.";
    LegacyQuantLayout = "legacy-quant-layout", Legacy, [Error, Error, Error],
        cite: "llama.cpp convert_llama_ggml_to_gguf.py validate_conversion (\"Quantizations changed in GGJTv2\", \"Q4 and Q8 quantizations changed in GGJTv3\")",
        "Quantized tensors use block layouts that current ggml reads: none do before GGJT v2, only Q5_0 and Q5_1 do in GGJT v2, and Q8_1 (40-byte blocks) never does.";
    LegacyPaddingNonZero = "legacy-padding-nonzero", Legacy, [Warning, Info, Allow],
        cite: "llama.cpp GGJT writer (llama_file_saver::write_tensor seeks to the next 32-byte boundary, leaving zeros)",
        "The padding before a GGJT tensor's data is zero bytes.";
    LegacyTypeTable = "legacy-type-table", Legacy, [Info, Info, Info],
        cite: "ggml include/ggml/ggml.h history (type ids and block layouts moved in 2023); rwkv.cpp rwkv_type_to_ggml",
        "Reports the tensor type table applied: type ids and block layouts changed between ggml versions, so the table depends on the format and its version.";

    // ---- Tensor data (only with `--check-data`) ----
    // What ggml's `ggml_validate_row_data` rejects, i.e. what makes
    // llama.cpp's `--check-tensors` refuse a model. The spec says nothing
    // about values, so `spec` only warns (NaN weights are almost certainly
    // corruption) and `strict` / `ggml` follow ggml.
    DataNonFinite = "data-non-finite", Data, [Error, Warning, Error],
        cite: "ggml-quants.c ggml_validate_row_data (validate_float, validate_fp16, validate_bf16); llama.cpp --check-tensors",
        "Every F32, F16, BF16 and F64 element is finite (no NaN, no infinity).";
    DataScaleNonFinite = "data-scale-non-finite", Data, [Error, Warning, Error],
        cite: "ggml-quants.c ggml_validate_row_data (VALIDATE_ROW_DATA_D_F16_IMPL, _DM_F16_IMPL, Q8_K's f32 d, IQ1_M's packed scale); llama.cpp --check-tensors",
        "Every block scale of a quantized tensor (d, and m / dmin where the type has one) is finite.";
    DataMxfp4Exponent = "data-mxfp4-exponent", Data, [Error, Warning, Error],
        cite: "ggml-quants.c ggml_validate_row_data (VALIDATE_ROW_DATA_E_E8M0_IMPL); OCP MX spec: E8M0 0xFF is NaN",
        "No MXFP4 block has the shared exponent byte 0xFF (E8M0's NaN).";
    DataF64Overflow = "data-f64-overflow", Data, [Error, Info, Error],
        cite: "ggml-quants.c ggml_validate_row_data (validate_float on F64 data narrowed to float); llama.cpp --check-tensors",
        "Every F64 element fits in f32: ggml narrows F64 values to float before testing them, so a finite value beyond f32's range is rejected as infinite.";
    DataTypeNotValidatable = "data-type-not-validatable", Data, [Warning, Info, Error],
        cite: "ggml-quants.c ggml_validate_row_data (no case for GGML_TYPE_Q8_1: \"invalid type\", returns false)",
        "The tensor's type is one ggml's data validator can check: it has no case for Q8_1 and refuses any such tensor, so under the ggml profile this is an error while strict only warns (the values themselves are not known to be wrong).";

    // ---- Model: what llama.cpp's loader assumes (strict only: the spec and ggml's reader do not) ----
    LlamaCppRelease = "llama-cpp-release", Model, [Error, Allow, Allow],
        cite: "each release's src/llama-arch.cpp LLM_ARCH_NAMES, src/llama-vocab.cpp (unknown tokenizer / \"unknown pre-tokenizer type\"), ggml/include/ggml.h enum ggml_type (\"invalid ggml type\"), tools/mtmd/clip-impl.h PROJECTOR_TYPE_NAMES; for b3889..b8390 src/llama.cpp or src/llama-model.cpp load_hparams and load_tensors (\"key not found\", \"missing tensor\", \"wrong shape\", \"wrong number of tensors\") (parser/core/src/llama_cpp/table.rs, generated by conformance/tools/llama-releases/)",
        "Judged against llama.cpp releases (`--llama-cpp R` or `R..`): each release knows the file's architecture, tokenizer model, pre-tokenizer, projector type and tensor types, and a model has the keys and tensors the release's model loader requires, no tensor it never creates and the shapes it expects; a release that does not refuses the file at load. Reported only when releases are asked for.";
    ModelArchitectureUnknown = "model-architecture-unknown", Model, [Info, Allow, Allow],
        cite: "llama.cpp src/llama-arch.cpp LLM_ARCH_NAMES (parser/core/src/check/llama_arches.rs, generated)",
        "The architecture is one llama.cpp knows; for any other, the report says its hyper-parameters were not checked (an info, never an error: other programs use GGUF too).";
    ModelBlockCount = "model-block-count", Model, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-model.cpp load_hparams: GGML_ASSERT(n_layer > 0 && n_layer <= LLAMA_MAX_LAYERS), src/llama-hparams.h LLAMA_MAX_LAYERS = 512; llama.cpp #25821, #26051",
        "`ARCH.block_count` is between 1 and 512: llama.cpp keeps per-layer arrays of LLAMA_MAX_LAYERS (512) entries and aborts the process (GGML_ASSERT) outside that range; older versions wrote past the arrays.";
    ModelLayerArray = "model-layer-array", Model, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-model-loader.cpp get_key_or_arr (\"wrong array length\", n > N_MAX)",
        "A per-layer hyper-parameter given as an array (`ARCH.feed_forward_length`, `attention.head_count`, `attention.head_count_kv`, `expert_used_count`) has exactly `block_count` elements (at most 512); llama.cpp refuses any other length.";
    ModelExpertCount = "model-expert-count", Model, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-model.cpp load_hparams: GGML_ASSERT(n_expert <= LLAMA_MAX_EXPERTS), GGML_ASSERT(n_expert_used <= n_expert); src/llama-hparams.h LLAMA_MAX_EXPERTS = 1024",
        "`ARCH.expert_count` is at most 1024, and `ARCH.expert_used_count` is at most `expert_count` and above 0 when there are experts: llama.cpp aborts the process (GGML_ASSERT) otherwise.";

    ModelTensorExtra = "model-tensor-extra", Model, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-model.cpp llama_prec_policy::load (pinned tree; not in the releases of the table)",
        "With `general.tensor_extra.name`, `general.tensor_extra.prec_a4` is an array of bool of the same length: the pinned llama.cpp refuses the model at load otherwise (older releases do not read these keys).";
    ModelTensorExtraUnknown = "model-tensor-extra-unknown", Model, [Warning, Allow, Allow],
        cite: "llama.cpp src/llama-model.cpp llama_prec_policy::load (names resolved against the model's tensors)",
        "Every name of `general.tensor_extra.name` is a tensor of the model: llama.cpp skips one that is not, so its flag applies to nothing.";
    ModelKeyMissing = "model-key-missing", Model, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-model.cpp llama_model_base::load_hparams and src/models/ARCH.cpp load_arch_hparams: get_key(..., required=true) throws \"key not found in model\" (table generated by conformance/tools/llama-arch/gen_arch_table.py)",
        "A model file (one with tensors) has every hyper-parameter key llama.cpp reads as required for its architecture (`ARCH.context_length`, `embedding_length`, `block_count`, and e.g. `attention.layer_norm_rms_epsilon` for llama); vocabulary-only files are exempt.";
    ModelTensorUnexpected = "model-tensor-unexpected", Model, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-model-loader.cpp done_getting_tensors (\"wrong number of tensors\"); src/models/ARCH.cpp load_arch_tensors (names generated by conformance/tools/llama-arch/gen_arch_table.py)",
        "Every tensor is one llama.cpp creates for the architecture, in a layer below `block_count`: the loader counts the tensors it created and refuses a file holding any other. Checked for the architectures whose loader names every tensor literally (the table's `complete` flag).";
    ModelTensorMissing = "model-tensor-missing", Model, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-model-loader.cpp create_tensor (\"missing tensor\"); src/models/ARCH.cpp load_arch_tensors (flags 0 outside a condition, or under `n_expert == 0` / its else)",
        "Every tensor the architecture's loader creates unconditionally (flags 0) is present, for every layer below `block_count` (less `nextn_predict_layers`); dense or expert feed-forward tensors according to `ARCH.expert_count`.";
    ModelTensorShape = "model-tensor-shape", Model, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-model-loader.cpp check_tensor_dims (\"tensor has wrong shape\"); src/models/ARCH.cpp create_tensor shapes",
        "A tensor's shape is the one llama.cpp computes from the hyper-parameters (`token_embd` is [embedding_length, n_vocab], `attn_q` [n_embd, head_dim x head_count], ...); dimensions whose expression uses values the table does not evaluate are not judged.";
    ModelFileType = "model-file-type", Model, [Warning, Allow, Allow],
        cite: "llama.cpp src/llama-model-loader.cpp (general.file_type is only printed; the type mix of the tensors decides); include/llama.h enum llama_ftype; src/llama-quant.cpp (fallback types)",
        "`general.file_type` names a type mix some tensor actually has (e.g. MOSTLY_Q4_K_M has Q4_K tensors), or no matrix's rows fit that type's block (the quantizer then falls back to another type for every tensor, as for a tiny model); llama.cpp ignores the key, so a mismatch is a warning (mixed quantizations such as Q4_K_M are normal).";
    ModelHeadCount = "model-head-count", Model, [Warning, Allow, Allow],
        cite: "llama.cpp src/llama-model.cpp n_embd_head = n_embd / n_head",
        "Without `attention.key_length`, `embedding_length` is a multiple of `head_count`: llama.cpp loads such a file but rounds its head size down, so its attention cannot run as intended.";
    ModelHeadGroups = "model-head-groups", Model, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-graph.cpp build_attn (ggml_mul_mat(k, q) broadcasts key/value heads over query heads); ggml.c GGML_ASSERT(ggml_can_mul_mat(a, b)); a llama of 4 heads and 3 key/value heads, converted and loaded with llama-cpp-python 0.3.36, aborts",
        "In every layer with attention, `attention.head_count` is a multiple of `attention.head_count_kv` (each value per layer when they are arrays): llama.cpp loads such a file, then aborts the process when it builds the attention graph (as a context is created).";
    ModelExpertGating = "model-expert-gating", Model, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-graph.cpp build_moe_ffn (switch (gating_op) ... default: GGML_ABORT(\"fatal error\")); src/models/ARCH.cpp load_arch_hparams (get_key(LLM_KV_EXPERT_GATING_FUNC, ...), NONE replaced by a default for some architectures); src/llama-hparams.h enum llama_expert_gating_func_type",
        "A model with expert layers (`blk.N.ffn_gate_inp`) whose architecture's graph takes `ARCH.expert_gating_func` has a gating function `build_moe_ffn` handles (1 softmax, 2 sigmoid, 3 softmax_weight, 4 sqrt_softplus): absent, it is NONE, which only some architectures replace by a default; llama.cpp loads such a file, then aborts the process when it builds the graph (as a context is created).";
    ModelVocabLogits = "model-vocab-logits", Model, [Error, Allow, Allow],
        cite: "llama.cpp src/models/chameleon.cpp (ggml_set_1d of -FLT_MAX over the logits of image tokens 4..8196); ggml.c ggml_set_impl GGML_ASSERT(ggml_nelements(a) >= ggml_nelements(b))",
        "The vocabulary holds every token id the architecture's graph writes logits for by literal (chameleon masks ids 4..8196): with fewer tokens llama.cpp loads the model, then aborts as a context is created, or writes past the logits.";
    ModelGraphInput = "model-graph-input", Model, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-graph.cpp build_attn_inp_no_cache (a full and a sliding-window mask), llm_graph_input_attn_no_cache::set_input; src/models/llama4.cpp (build_inp_attn_scale, used only where (il + 1) % n_no_rope_layer_step == 0); ggml-backend.cpp GGML_ASSERT(buffer), GGML_ASSERT(buf != NULL && \"tensor buffer not set\")",
        "Every input the architecture's graph builds is used by some layer: an encoder with sliding-window attention (gemma-embedding, modern-bert) has both sliding-window and full-attention layers, and llama4 with chunked attention has a NoPE layer (at least 4 layers). An input no layer uses gets no buffer, and llama.cpp aborts when it sets it at the first evaluation.";
    ModelRope = "model-rope", Model, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-model.cpp load_hparams: GGML_ASSERT(rope_scaling_type_train != UNSPECIFIED) over LLAMA_ROPE_SCALING_TYPES; \"invalid n_rot\" for llama, deci, falcon, llama-embed",
        "`ARCH.rope.scaling.type` is none, linear, yarn or longrope (llama.cpp aborts on any other), and for llama, deci, falcon and llama-embed `rope.dimension_count` equals the head size (llama.cpp refuses the file otherwise).";
    ModelNotChecked = "model-not-checked", Model, [Info, Allow, Allow],
        cite: "gguf-validate: the report says what was and was not examined",
        "A part of the model layer was not checked for this file (vocabulary-only file, or an architecture whose tensors the table cannot list); the message says which part and why.";

    // ---- Projector: multimodal projectors (`general.type` mmproj/clip, architecture `clip`) as libmtmd loads them
    // (tools/mtmd/clip.cpp clip_model_loader; contract generated by conformance/tools/mtmd/gen_clip_table.py) ----
    ProjectorTypeUnknown = "projector-type-unknown", Projector, [Error, Allow, Allow],
        cite: "llama.cpp tools/mtmd/clip-impl.h PROJECTOR_TYPE_NAMES; clip.cpp clip_model_loader (\"unknown projector type\"); llama.cpp #27166",
        "A projector names its projector type (`clip.projector_type`, or `clip.vision.projector_type` / `clip.audio.projector_type`) with one llama.cpp knows, and has a vision or audio encoder (`clip.has_vision_encoder`, `clip.has_audio_encoder`): libmtmd refuses any other.";
    ProjectorKeyMissing = "projector-key-missing", Projector, [Error, Allow, Allow],
        cite: "llama.cpp tools/mtmd/clip.cpp clip_model_loader::load_hparams get_u32/get_f32/get_arr_int (required = true throws \"Key not found\")",
        "A projector has every hyper-parameter key libmtmd reads as required for its projector type (`clip.vision.embedding_length`, `block_count`, `image_size`, `patch_size`, ...).";
    ProjectorKeyType = "projector-key-type", Projector, [Error, Allow, Allow],
        cite: "llama.cpp tools/mtmd/clip.cpp get_u32/get_f32/get_bool/get_string read with gguf_get_val_* (GGML_ASSERT on the type: the process aborts); get_arr_int",
        "A key libmtmd reads has the type it reads it with (u32, f32, bool, string, array of integers or floats): for a scalar ggml aborts the process on any other type, and an array of the wrong type is refused.";
    ProjectorTensorMissing = "projector-tensor-missing", Projector, [Error, Allow, Allow],
        cite: "llama.cpp tools/mtmd/clip.cpp clip_model_loader::load_tensors get_tensor(name, required) (\"unable to find tensor\"); tools/mtmd/models/*.cpp clip_graph_*::build GGML_ASSERT(... != nullptr)",
        "A projector has every tensor libmtmd requires for its projector type, in every encoder layer below `block_count`: the loader's required tensors, and those its graph builder asserts (libmtmd aborts at warm-up without them).";
    ProjectorTensorShape = "projector-tensor-shape", Projector, [Error, Allow, Allow],
        cite: "llama.cpp tools/mtmd/clip.cpp build_vit / build_* graphs (ggml_mul_mat, ggml_add asserts at the warm-up graph); mtmd.cpp",
        "A projector's attention input widths (`attn_q`, `attn_k`, `attn_v`, `attn_qkv` ne[0]) equal `embedding_length` for the projector types whose graph is a ViT (`build_vit`): a mismatch aborts the process (GGML_ASSERT in ggml_mul_mat) when libmtmd builds its warm-up graph. Other shapes are not judged.";
    ProjectorHparams = "projector-hparams", Projector, [Error, Allow, Allow],
        cite: "llama.cpp tools/mtmd/clip.cpp load_hparams (image_mean/image_std of 3 values, patch size dividing the image size, head count dividing the width)",
        "A projector's hyper-parameters are ones libmtmd can run: values within `int`, three-channel image mean and std, an image size up to 8192, a patch size and merge factor of 1..65535, a positive width, a head count that divides the width (ViT types), feature layers below the layer count, at most one activation, and vision and audio encoders of one output width.";
    ProjectorLoadBound = "projector-load-bound", Projector, [Error, Allow, Allow],
        cite: "llama.cpp tools/mtmd/clip.cpp load_hparams (GGML_ASSERT on hyper-parameters: granite_speech audio_chunk_size, minicpmv4_6 and minimax_m3 n_merge, deepseekocr and internvl tiles, parakeet); clip-model.h clip_hparams::set_limit_image_tokens",
        "A projector's hyper-parameters pass the assertions libmtmd's loader makes on them (a failed GGML_ASSERT aborts the process while it loads, it does not refuse the file), and the pixel budget a type derives from them (`N x patch_size^2 x n_merge^2`, computed in `int`) does not overflow. The conditions are generated from clip.cpp (clip_table.rs).";
    ProjectorFirstUseBound = "projector-first-use-bound", Projector, [Error, Allow, Allow],
        cite: "llama.cpp tools/mtmd/mtmd-image.cpp mtmd_image_preprocessor_dyn_size::preprocess, mtmd_image_preprocessor_glm5v::preprocess, mtmd_image_preprocessor_longest_edge::preprocess (GGML_ASSERT); mtmd.cpp init_vision (which preprocessor a type gets)",
        "A projector's hyper-parameters pass the assertions of the image preprocessor its type gets: libmtmd loads a projector with `image_min_pixels` or `image_max_pixels` of 0 (a dynamic-resolution type) or `image_longest_edge` of 0, then aborts the process at the first image. The conditions are generated from mtmd-image.cpp and mtmd.cpp (clip_table.rs). Not bounds of the pinned tree: DOTS_OCR's `image_min_pixels` and `image_max_pixels` are compared, never multiplied (the `int` product of llama.cpp #27224 is gone; `calc_size_preserved_ratio` multiplies the aligned sides of the image, not file values), and MiniCPM-V's position buckets are a fixed 70 x 70 grid (clip.cpp, PROJECTOR_TYPE_MINICPMV inputs) sized by no file value.";
    ProjectorTextTokens = "projector-text-tokens", Projector, [Error, Allow, Allow],
        cite: "llama.cpp tools/mtmd/mtmd.cpp init_vision (lookup_token: LLAMA_TOKEN_NULL when absent), mtmd_tokenize (the tokens around a tiled image's slices and overview); mtmd-helper.cpp mtmd_helper_eval_chunk_single (GGML_ASSERT(idx >= 0))",
        "A projector's text model has every token libmtmd looks up for the projector type (idefics3: `\\n\\n`, `<fake_token_around_image>`, `<global-img>`, `\\n`; lfm2: `<|img_thumbnail|>`; minicpmv4_6, step3vl: their slice tokens): libmtmd loads a pair whose vocabulary lacks one, puts id -1 around the slices of the first image it tiles, and the process aborts. The token texts are generated from mtmd.cpp (clip_table.rs); a lookup under a condition (MiniCPM-V versions, a token the code tests) is not listed. Checked when the run has the text model (`--with MODEL`, the same folder).";
    ProjectorTextWidth = "projector-text-width", Projector, [Error, Allow, Allow],
        cite: "llama.cpp tools/mtmd/mtmd.cpp mtmd_context (\"mismatch between text model (n_embd = %d) and mmproj (n_embd = %d)\"); clip.cpp clip_n_mmproj_embd",
        "A projector's output width equals its text model's input width (`ARCH.embedding_length`): libmtmd refuses the pair otherwise. Checked when the run has the text model (`--with MODEL`, the same folder).";

    // ---- Adapter: LoRA adapters (`general.type` adapter) as llama_adapter_lora_init loads them (src/llama-adapter.cpp) ----
    AdapterType = "adapter-type", Adapter, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-adapter.cpp llama_adapter_lora_init_impl (\"expect general.type to be 'adapter'\", \"expect adapter.type to be 'lora'\")",
        "An adapter has `adapter.type` = `lora`: llama.cpp loads no other kind of adapter.";
    AdapterKeyType = "adapter-key-type", Adapter, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-adapter.cpp get_kv_str / get_kv_f32 (gguf_get_val_str, gguf_get_val_f32: GGML_ASSERT on the type), \"invalid gguf type for adapter.alora.invocation_tokens\"",
        "The keys the adapter loader reads have its types: `general.type`, `general.architecture` and `adapter.type` strings, `adapter.lora.alpha` f32, `adapter.alora.invocation_tokens` an array of u32; llama.cpp aborts the process or refuses the adapter otherwise.";
    AdapterArchitecture = "adapter-architecture", Adapter, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-adapter.cpp (\"model arch and LoRA arch mismatch\"); src/llama-arch.cpp llm_arch_from_string",
        "An adapter names an architecture llama.cpp knows (no base model can match any other), and, when the run has its base model (`--with BASE`, the same folder), the base's architecture.";
    AdapterTensorName = "adapter-tensor-name", Adapter, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-adapter.cpp (\"LoRA tensor '%s' has unexpected suffix\")",
        "Every adapter tensor's name ends in `.lora_a` or `.lora_b` (or `_norm.weight`, which the loader skips).";
    AdapterTensorPair = "adapter-tensor-pair", Adapter, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-adapter.cpp (\"LoRA tensor pair for '%s' is missing one component\")",
        "Every `X.lora_a` has its `X.lora_b` and every `X.lora_b` its `X.lora_a`.";
    AdapterRank = "adapter-rank", Adapter, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-adapter.cpp (\"lora_a tensor is not transposed\"); src/llama-graph.cpp build_lora_mm (ggml_mul_mat) and build_lora_mm_id (ggml_mul_mat_id: GGML_ASSERT(as->ne[3] == 1)); convert_lora_to_gguf.py",
        "A pair's ranks agree: `lora_a` is [in, rank] and `lora_b` [rank, out] (for `token_embd`, [rank, n_vocab] and [n_embd, rank]), both 2-D, or both 3-D (one matrix per expert, [in, rank, n_expert] and [rank, out, n_expert]) on an expert tensor (`ffn_gate_exps`, `ffn_up_exps`, `ffn_down_exps`, `ffn_gate_up_exps`), which llama.cpp applies with ggml_mul_mat_id; ggml aborts at the first evaluation on a 3-D matrix elsewhere and on a 4-D one anywhere.";
    AdapterExpertCount = "adapter-expert-count", Adapter, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-adapter.cpp (compares ne[0] and ne[1] only); src/llama-graph.cpp build_lora_mm_id; ggml/src/ggml-cpu/ggml-cpu.c ggml_compute_forward_mul_mat_id (the expert id is checked by an assert that release builds compile out); llama.cpp #29128",
        "A pair on an expert tensor has as many matrices (ne2) in `lora_a` as in `lora_b`, and, when the run has the base model, no fewer than the base tensor has experts (a 2-D pair has one). llama.cpp loads such an adapter, then applies it with ggml_mul_mat_id to the experts the router picks, and for an expert id past the adapter's count the CPU kernel writes out of bounds (a segmentation fault at the first decode).";
    AdapterExpertUnused = "adapter-expert-unused", Adapter, [Warning, Allow, Allow],
        cite: "llama.cpp src/llama-adapter.cpp (compares ne[0] and ne[1] only); src/llama-graph.cpp build_lora_mm_id (the base's router picks the expert ids)",
        "A pair on an expert tensor has no more matrices than the base tensor has experts. llama.cpp loads and runs it, but the matrices past the base's count are never selected: the adapter was made for another base model. Checked when the run has the base model.";
    AdapterBaseTensor = "adapter-base-tensor", Adapter, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-adapter.cpp (\"LoRA tensor '%s' does not exist in base model (hint: maybe wrong base model?)\")",
        "Every adapted tensor exists in the base model. Checked when the run has the base model (`--with BASE`, the same folder).";
    AdapterBaseShape = "adapter-base-shape", Adapter, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-adapter.cpp (\"tensor '%s' has incorrect shape (hint: maybe wrong base model?)\")",
        "Each pair's outer dimensions are the base tensor's (`lora_a` ne0 = the base's ne0, `lora_b` ne1 = the base's ne1). Checked when the run has the base model.";
    AdapterInvocationToken = "adapter-invocation-token", Adapter, [Error, Allow, Allow],
        cite: "llama.cpp tools/server/server-context.cpp (the prompt is scanned for the aLoRA sequence from invocation_tokens[n_invocation_tokens - 1]); src/llama-adapter.cpp (adapter.alora.invocation_tokens, never checked)",
        "`adapter.alora.invocation_tokens`, when present, is not empty: llama-server scans each prompt for the sequence from its last id, and for an empty one reads before the array.";
    AdapterInvocationUnreachable = "adapter-invocation-unreachable", Adapter, [Warning, Allow, Allow],
        cite: "llama.cpp src/llama-adapter.cpp (invocation tokens copied as signed token ids); tools/server/server-context.cpp (\"alora requested, but not found. deactivating\")",
        "Every aLoRA invocation token id is a token of the vocabulary: below 2^31 (llama.cpp reads them as signed ids), and below the base model's vocabulary size when the run has it. llama.cpp loads the adapter either way, but no prompt holds such a sequence, so llama-server never activates it.";

    // ---- Control vectors (architecture `controlvector`, tensors `direction.N`) as common_control_vector_load_one loads them ----
    ControlVectorDirection = "control-vector-direction", ControlVector, [Error, Allow, Allow],
        cite: "llama.cpp common/common.cpp common_control_vector_load_one (\"invalid/unparsable direction tensor layer index\", \"invalid (zero) direction tensor layer index\", \"invalid (non-F32) direction tensor type\", \"invalid (non-1D) direction tensor shape\", \"does not match previous dimensions\")",
        "Every tensor of a control vector is `direction.N` with N a layer index from 1 (as `std::stoi` reads it), of type F32, 1-D, all of one width: llama.cpp skips the whole file otherwise.";
    ControlVectorOverflow = "control-vector-overflow", ControlVector, [Error, Allow, Allow],
        cite: "llama.cpp common/common.cpp common_control_vector_load_one: data.resize(n_embd * layer_idx) and dst = data + n_embd * (layer_idx - 1) in `int` arithmetic (a large `direction.N` overflows: heap write out of bounds)",
        "For every direction, width x layer index fits in a signed 32-bit integer and the buffer it sizes (4 bytes an element) fits in `limits::CONTROL_VECTOR_MAX_BYTES`: a larger index overflows llama.cpp's `int` arithmetic and writes out of bounds.";
    ControlVectorLayerCount = "control-vector-layer-count", ControlVector, [Warning, Allow, Allow],
        cite: "llama.cpp tools/cvector-generator (writes controlvector.layer_count, one direction per layer from 1); src/llama-adapter.cpp llama_adapter_cvec::apply (layers at or past n_layer are never applied)",
        "Every direction's layer index is at most `controlvector.layer_count`, and below the base model's `block_count` when the run has it: a direction past it is never applied.";
    ControlVectorWidth = "control-vector-width", ControlVector, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-adapter.cpp llama_adapter_cvec::apply (\"control vector n_embd does not match model\")",
        "A control vector's width equals its base model's `embedding_length`: llama.cpp refuses to apply it otherwise. Checked when the run has the base model (`--with BASE`, the same folder).";

    // ---- Importance matrices (`general.type` = `imatrix`) as llama-quantize --imatrix reads them (contract: check/imatrix_table.rs, generated) ----
    ImatrixMetadataMissing = "imatrix-metadata-missing", Imatrix, [Error, Allow, Allow],
        cite: "llama.cpp common/imatrix-loader.cpp common_imatrix_load (has_metadata); tools/quantize/quantize.cpp load_imatrix (\"missing imatrix metadata\")",
        "An importance matrix has `imatrix.datasets`, `imatrix.chunk_count` and `imatrix.chunk_size` (the keys llama-imatrix writes): llama-quantize refuses a GGUF importance matrix that lacks any of them.";
    ImatrixKeyType = "imatrix-key-type", Imatrix, [Error, Allow, Allow],
        cite: "llama.cpp common/imatrix-loader.cpp common_imatrix_load (gguf_get_val_u32: GGML_ASSERT on the type)",
        "`imatrix.chunk_count` and `imatrix.chunk_size` are u32: llama.cpp reads them with gguf_get_val_u32, which aborts the process (llama-quantize dies) on any other type.";
    ImatrixDatasetsType = "imatrix-datasets-type", Imatrix, [Warning, Allow, Allow],
        cite: "llama.cpp common/imatrix-loader.cpp common_imatrix_load (datasets read only when GGUF_TYPE_ARRAY of GGUF_TYPE_STRING)",
        "`imatrix.datasets` is an array of strings: llama-quantize ignores it otherwise, and the quantized model records no dataset.";
    ImatrixEmpty = "imatrix-empty", Imatrix, [Error, Allow, Allow],
        cite: "llama.cpp common/imatrix-loader.cpp common_imatrix_load (\"no data in file\")",
        "An importance matrix has at least one tensor: llama-quantize refuses one without.";
    ImatrixStrayTensor = "imatrix-stray-tensor", Imatrix, [Warning, Allow, Allow],
        cite: "llama.cpp common/imatrix-loader.cpp common_imatrix_load (only `.in_sum2` and `.counts` tensors are read); tools/quantize/quantize.cpp prepare_imatrix (no entry: no importance matrix)",
        "Every tensor of an importance matrix ends in `.in_sum2` or `.counts`: the loader ignores any other, and a file with no such pair makes llama-quantize quantize without weights, silently.";
    ImatrixPairMissing = "imatrix-pair-missing", Imatrix, [Error, Allow, Allow],
        cite: "llama.cpp common/imatrix-loader.cpp common_imatrix_load (\"mismatched sums and counts for %s\")",
        "Every `X.in_sum2` has its `X.counts` and every `X.counts` its `X.in_sum2`: llama-quantize refuses the file otherwise.";
    ImatrixTensorType = "imatrix-tensor-type", Imatrix, [Error, Allow, Allow],
        cite: "llama.cpp common/imatrix-loader.cpp common_imatrix_load (\"sums and counts for %s must be F32\")",
        "The sums and counts of every entry are F32: llama-quantize refuses the file otherwise.";
    ImatrixCountsEmpty = "imatrix-counts-empty", Imatrix, [Error, Allow, Allow],
        cite: "llama.cpp tools/quantize/quantize.cpp load_imatrix (ne0 = sums.size() / ncounts: an integer division by the number of counts)",
        "Every `X.counts` has at least one element: llama-quantize divides by their number, and zero kills it (SIGFPE) before it quantizes anything.";
    ImatrixSlices = "imatrix-slices", Imatrix, [Warning, Allow, Allow],
        cite: "llama.cpp tools/quantize/quantize.cpp load_imatrix (one slice of sums.size() / ncounts values per count); tools/imatrix/imatrix.cpp save_imatrix (in_sum2 [ne0, n_mat], counts [1, n_mat])",
        "The number of sums of an entry is a multiple of its number of counts, as llama-imatrix writes them: llama-quantize cuts the sums into one slice per count, and the values past the last whole slice get weight 0.";
    ImatrixModelSize = "imatrix-model-size", Imatrix, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-quant.cpp llama_model_quantize_impl (\"imatrix size %d is different from tensor size %d for %s\"; tensor_name_match_token_embd is exempt)",
        "Against its model (`--with MODEL`, the same folder): an entry for a tensor llama-quantize quantizes (a 2-D or 3-D `*weight`, not a norm) holds `ne[0]` x `ne[2]` sums, one row per expert; llama-quantize refuses the quantization otherwise (the token embeddings excepted: it quantizes them without weights).";
    ImatrixExpertCount = "imatrix-expert-count", Imatrix, [Warning, Allow, Allow],
        cite: "llama.cpp tools/quantize/quantize.cpp load_imatrix (normalised per count slice); tools/imatrix/imatrix.cpp (counts: one per expert, or one when all experts saw as many tokens)",
        "Against its model: an entry has one count, or one per expert of its tensor (`ne[2]`); with another number llama-quantize divides slices that are not the experts' by counts that are not theirs (quantized with wrong weights, silently).";
    ImatrixTensorUnknown = "imatrix-tensor-unknown", Imatrix, [Warning, Allow, Allow],
        cite: "llama.cpp src/llama-quant.cpp llama_model_quantize_impl (entries looked up by the model's tensor names; others never read)",
        "Against its model: every entry names a tensor of the model; llama-quantize never reads the others (an importance matrix computed on another model leaves this one quantized without weights).";

    // ---- Diffusion: what stable-diffusion.cpp and ComfyUI-GGUF hold a diffusion model to ----
    DiffusionVersionUnknown = "diffusion-version-unknown", Diffusion, [Error, Allow, Allow],
        cite: "stable-diffusion.cpp src/model.cpp ModelLoader::get_sd_version; src/stable-diffusion.cpp (\"get sd version from file failed\"); replayed from diffusion_table.rs",
        "A file judged as a diffusion model has tensors stable-diffusion.cpp recognises a model version by (FLUX, SD3, SD1/SD2/SDXL UNet, Wan, Qwen-Image, ...); it refuses a file in which it finds none. Detection reads the tensor names (and some shapes) in file order, never the metadata.";
    DiffusionCrash = "diffusion-crash", Diffusion, [Error, Allow, Allow],
        cite: "stable-diffusion.cpp src/flux.hpp (num_heads = hidden_size / head_dim), src/wan.hpp (GGML_ABORT on the block count; the VACE step), diffusion_table.rs PRECONDITIONS",
        "The values stable-diffusion.cpp's builder derives from the tensors do not crash or hang it: FLUX's head size comes from a `key_norm.scale` tensor and divides its width (none: SIGFPE, as a two-tensor FLUX file shows), Wan has 30 or 40 blocks (else an abort) and no more VACE blocks than blocks (else an endless loop).";
    DiffusionTensorMissing = "diffusion-tensor-missing", Diffusion, [Error, Allow, Allow],
        cite: "stable-diffusion.cpp src/model.cpp ModelLoader::load_tensors (\"tensor not in model file\"); the builders of src/flux.hpp, mmdit.hpp, unet.hpp, wan.hpp, qwen_image.hpp (diffusion_table.rs)",
        "Every tensor stable-diffusion.cpp's builder creates for the detected version (its sizes read from the file where the builder reads them, hard-coded elsewhere) is in the file; it refuses the file otherwise. Tensors it does not create are skipped.";
    DiffusionTensorShape = "diffusion-tensor-shape", Diffusion, [Error, Allow, Allow],
        cite: "stable-diffusion.cpp src/model.cpp ModelLoader::load_tensors (\"has wrong shape in model file\"); diffusion_table.rs",
        "Each tensor the builder creates has the shape it gives it (dims past the fourth folded into the fourth, as its reader does); it refuses the file otherwise. Builders with hard-coded sizes (SD3's 64 x depth width, the UNets, Wan's two sizes, Qwen-Image) refuse any smaller model.";
    ComfyuiArchitecture = "comfyui-architecture", Diffusion, [Warning, Allow, Allow],
        cite: "ComfyUI-GGUF loader.py gguf_sd_loader (IMG_ARCH_LIST; \"Unexpected architecture type in GGUF file\"), tools/convert.py detect_arch (\"Unknown model architecture!\", \"Model architecture not allowed for conversion!\")",
        "ComfyUI-GGUF loads the file as a diffusion model: `general.architecture` is one of its list, or absent (or `pig`/`cow`) with tensor names its detect_arch recognises in the reference layout. An error when judged for ComfyUI-GGUF (`--loader comfyui-gguf`), a warning otherwise.";
    ComfyuiKeyType = "comfyui-key-type", Diffusion, [Warning, Allow, Allow],
        cite: "ComfyUI-GGUF loader.py get_field (\"Bad type for GGUF {key} key: expected string\")",
        "`general.architecture` and `general.type`, when present, are strings: ComfyUI-GGUF refuses the file otherwise (an error for `--loader comfyui-gguf`).";
    ComfyuiOrigShape = "comfyui-orig-shape", Diffusion, [Warning, Allow, Allow],
        cite: "ComfyUI-GGUF loader.py get_orig_shape (\"Bad original shape metadata ... Expected ARRAY of INT32\"); ops.py (the tensor is viewed as that shape)",
        "Each `comfy.gguf.orig_shape.<tensor>` is an array of INT32 whose product is the tensor's element count: ComfyUI-GGUF refuses another type and fails on a shape of another size (an error for `--loader comfyui-gguf`).";
    ComfyuiTensorType = "comfyui-tensor-type", Diffusion, [Warning, Allow, Allow],
        cite: "ComfyUI-GGUF dequant.py (dequantize_functions; other types: gguf.quants.dequantize, NumPy on the CPU)",
        "Every tensor's type is one ComfyUI-GGUF uses as is (F32, F16) or dequantizes itself on the GPU (BF16, Q8_0, Q5_1, Q5_0, Q4_1, Q4_0, the K-quants Q2_K to Q6_K, IQ4_NL, IQ4_XS): any other falls back to gguf-py's NumPy dequantizer on the CPU at every use (and fails for a type gguf-py cannot dequantize). A warning: the file loads, slowly.";
    ModelArchitectureRefused = "model-architecture-refused", Model, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-arch.cpp llm_arch_from_string (\"unknown model architecture\")",
        "Judged for llama.cpp (`--loader llama.cpp`), the file's `general.architecture` is one llama.cpp knows; it refuses any other. Without `--loader`, an architecture llama.cpp does not know is left unexamined (the file may be for another program: a diffusion model is judged for stable-diffusion.cpp).";

    // ---- Tokenizer: what llama.cpp's tokenizer assumes of the vocabulary ----
    TokenizerModelUnknown = "tokenizer-model-unknown", Tokenizer, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-vocab.cpp load (\"unknown tokenizer\"; list generated by conformance/tools/llama-arch/gen_arch_table.py)",
        "`tokenizer.ggml.model` is one llama.cpp knows (llama, gpt2, bert, t5, rwkv, ...); it refuses any other.";
    TokenizerPreUnknown = "tokenizer-pre-unknown", Tokenizer, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-vocab.cpp load (\"unknown pre-tokenizer type\")",
        "For a BPE vocabulary, `tokenizer.ggml.pre` is one llama.cpp knows; it refuses any other (an absent one falls back to `default` with a warning in its log).";
    TokenizerPreMissing = "tokenizer-pre-missing", Tokenizer, [Warning, Allow, Allow],
        cite: "llama.cpp src/llama-vocab.cpp load (\"missing pre-tokenizer type, using: 'default'\" ... \"GENERATION QUALITY WILL BE DEGRADED! CONSIDER REGENERATING THE MODEL\"); llama.cpp #7627",
        "A BPE vocabulary names its pre-tokenizer (`tokenizer.ggml.pre`): without one (or with an empty one) llama.cpp loads the file with the `default` pre-tokenizer and splits text as the model was not trained to (garbled output). `gguf-validate edit FILE -o OUT --pre-tokenizer NAME` sets it without converting again.";
    TokenizerVocabMissing = "tokenizer-vocab-missing", Tokenizer, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-vocab.cpp load: get_key(tokenizer.ggml.model) required; \"cannot find tokenizer vocab in model file\"",
        "A model (a file with tensors, of an architecture llama.cpp knows) has a vocabulary: `tokenizer.ggml.model`, and `tokenizer.ggml.tokens` unless the model is `none`; llama.cpp refuses it otherwise.";
    TokenizerNameQuirk = "tokenizer-name-quirk", Tokenizer, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-vocab.cpp load: for general.name containing phi3/phi-3, _set_token_attr uses token_to_id.at(\"</s>\", \"<unk>\", \"<s>\", \"<|endoftext|>\")",
        "When `general.name` contains `phi3` or `phi-3` (any case), the vocabulary has `</s>`, `<unk>`, `<s>` and `<|endoftext|>`: llama.cpp looks them up by name for such models and refuses the file when one is missing (a renamed model becomes unloadable).";
    TokenizerDuplicateToken = "tokenizer-duplicate-token", Tokenizer, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-vocab.cpp load: GGML_ASSERT(id_to_token.size() == token_to_id.size()) (an empty token is renamed [EMPTY_i])",
        "Token texts in `tokenizer.ggml.tokens` are distinct: llama.cpp maps each text to one id and aborts the process when two tokens share a text.";
    TokenizerMergesMissing = "tokenizer-merges-missing", Tokenizer, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-vocab.cpp load (\"cannot find tokenizer merges in model file\")",
        "A BPE vocabulary (`gpt2`, `gemma4`, ...) has `tokenizer.ggml.merges` (except the pre-tokenizers llama.cpp exempts, e.g. `kimi-k2`).";
    TokenizerTokenType = "tokenizer-token-type", Tokenizer, [Error, Allow, Allow],
        cite: "llama.cpp include/llama.h enum llama_token_type (0 UNDEFINED .. 6 BYTE); src/llama-vocab.cpp load",
        "Every `tokenizer.ggml.token_type` value is one of llama.cpp's token types 0..=6; the tokenizer dispatches on it.";
    TokenizerByteToken = "tokenizer-byte-token", Tokenizer, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-vocab.cpp byte tokens `<0xHH>`; llama.cpp #26511 (plamo2: `<0x-1>` gave a heap write with a chosen value), lmstudio-bug-tracker #2289",
        "A byte token is spelled `<0xHH>` with two hex digits: a token of that shape with other characters (`<0x-1>`), or a token of type BYTE spelled otherwise, is parsed into an out-of-range byte by some tokenizers.";
    TokenizerByteFallback = "tokenizer-byte-fallback", Tokenizer, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-vocab.cpp llm_tokenizer_spm_session::resegment (a piece with no token is emitted byte by byte) and llama_vocab::byte_to_token (`<0xHH>`, else token_to_id.at of the one-byte text: std::out_of_range, uncaught through llama_tokenize)",
        "A SentencePiece vocabulary (`tokenizer.ggml.model` `llama`) has, for every byte UTF-8 text is made of (0x00..0x7F but the space, which it writes as U+2581, the continuation bytes 0x80..0xBF and the lead bytes 0xC2..0xF4), a byte token `<0xHH>` or a token whose text is that one byte: llama.cpp tokenizes a character it has no token for byte by byte and, on a byte with neither, throws an exception no caller catches; the process aborts on the first prompt holding such a character.";

    // ---- Split sets ----
    SplitIndex = "split-index", Split, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-model-loader.cpp (\"illegal split file idx\" for a first file whose split.no is not 0, \"missing key split.no in GGUF split\", \"invalid split file idx\"); src/llama.cpp llama_split_path (NAME-%05d-of-%05d.gguf, 1-based)",
        "`split.no` (0-based) is below `split.count`; in a set, every shard has `split.no` and it equals the shard's position (its file name `NAME-0000k-of-0000n.gguf` less one): llama.cpp refuses a shard whose index is missing or differs.";
    SplitShardMissing = "split-shard-missing", Split, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-model-loader.cpp llama_get_list_splits (\"invalid split file name\"), \"failed to load GGUF split\"",
        "Every shard of a split set is present: one file per position 0..`split.count`, named `NAME-0000k-of-0000n.gguf` (siblings are found by that name); llama.cpp fails to load a set with a shard missing, or a first shard whose name does not follow the pattern.";
    SplitCountMismatch = "split-count-mismatch", Split, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-model-loader.cpp (split.count read from the first shard; \"invalid split count\"); tools/gguf-split (writes the same split.count in every shard)",
        "Every shard has `split.count`, the same in all shards and equal to the `-of-0000n` of its file name: a shard that disagrees belongs to another split of the model.";
    SplitNoDuplicate = "split-no-duplicate", Split, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-model-loader.cpp (\"invalid split file idx\")",
        "No two shards of a set carry the same `split.no`: llama.cpp refuses the one not at that position.";
    SplitTensorsCount = "split-tensors-count", Split, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-model-loader.cpp get_key(split.tensors.count) (required), \"corrupted model: N tensors expected but M found\"; tools/gguf-split",
        "The first shard has `split.tensors.count`, it equals the number of tensors in all shards together, and every shard that has the key agrees with the first.";
    SplitTensorDuplicate = "split-tensor-duplicate", Split, [Error, Allow, Allow],
        cite: "llama.cpp src/llama-model-loader.cpp (\"invalid model: tensor '%s' is duplicated\")",
        "A tensor name appears in only one shard of a set (a name twice inside one file is tensor-name-duplicate).";
    SplitMetadataLocation = "split-metadata-location", Split, [Warning, Allow, Allow],
        cite: "llama.cpp src/llama-model-loader.cpp (metadata is read from the first shard only); tools/gguf-split (writes all metadata to the first shard)",
        "Model metadata (`general.architecture`, hyper-parameters, `tokenizer.*`, chat templates) is in the first shard: a later shard's key that the first lacks is never read by llama.cpp (a required one then also fails model-key-missing or tokenizer-vocab-missing).";
    // ---- Template: chat templates (`tokenizer.chat_template`, `tokenizer.chat_template.<name>`, keys that alias them
    // through a NUL, and Jinja found in any other metadata string). Servers render them for every request; the
    // spec and ggml's reader do not look inside, so under `spec` and `ggml` the security findings are warnings
    // (they never change those verdicts) and the rest is allowed or informational.
    TemplateCodeExecution = "template-code-execution", Template, [Error, Warning, Warning],
        cite: "CVE-2024-34359 (llama-cpp-python renders tokenizer.chat_template without a sandbox); CVE-2025-27516 (Jinja sandbox escape through |attr and str.format); SGLang CVE-2026-5760",
        "A template reaches Python internals: attribute or item access to `__class__`, `__globals__`, `__subclasses__` and other dunder or private names, `|attr` with a name that is not a constant, calls to `os`/`subprocess`/`eval`/`exec`/`open`/`__import__`/`getattr`, or a Jinja global (`cycler`, `joiner`, `lipsum`, `namespace`, `self`) walked with a name that cannot be resolved statically; names built from constants (`~`, `+`, `*`, `|join`, `|replace`, `|reverse`, `|lower`, `%`, `format`, slices, `{% set %}` chains) are resolved first. Unsandboxed renderers run such a chain as code.";
    TemplateUnparseable = "template-unparseable", Template, [Error, Warning, Allow],
        cite: "gguf.md tokenizer.chat_template (\"a Jinja template\"); llama.cpp common/jinja/parser.cpp (unknown statements and unclosed blocks throw)",
        "A template parses: a template that neither minijinja nor llama.cpp's Jinja engine can parse fails at load (llama.cpp) or at the first request (Jinja2 servers).";
    TemplateSyntax = "template-syntax", Template, [Warning, Info, Allow],
        cite: "llama.cpp common/jinja/parser.cpp; minijinja 3.1.0 parser; Jinja2",
        "A template uses syntax that minijinja (and so Jinja2-compatible renderers) refuses while llama.cpp's more permissive engine accepts it; it was checked by a token scan only.";
    TemplateValueType = "template-value-type", Template, [Error, Warning, Allow],
        cite: "gguf.md tokenizer.chat_template: string; llama.cpp llama_model_chat_template reads it with gguf_get_val_str (asserts the type)",
        "A template key (`tokenizer.chat_template`, `tokenizer.chat_template.<name>`) holds a string (standard-key-type leaves these keys to this rule).";
    TemplateHiddenText = "template-hidden-text", Template, [Warning, Warning, Warning],
        cite: "Unicode TR36 / CVE-2021-42574 (Trojan Source: bidi overrides); invisible tag characters U+E0000..U+E007F used for hidden prompt injection",
        "A template, or any other free-text metadata string (not the vocabulary), holds no invisible or bidi-reordering code points (zero-width characters, bidi embeddings, overrides and isolates, BOM, tag characters): they hide instructions from a human reviewer that the model still reads.";
    TemplateTrigger = "template-trigger", Template, [Warning, Warning, Warning],
        cite: "hidden-instruction backdoors in chat templates (a branch on the user's text or the date that injects instructions, links or install commands)",
        "No branch that tests the user's message content or the date (`strftime_now`) emits constant text holding a system instruction, a URL or an install / download / exfiltration command: such a branch injects instructions only when a trigger appears.";
    TemplateInjectedInstruction = "template-injected-instruction", Template, [Warning, Warning, Warning],
        cite: "hidden-instruction backdoors in chat templates (a system turn that overrides the user's instructions, or a download-and-run command, written into every prompt)",
        "A template writes into the prompt no constant text that tells the model to ignore, disregard or forget its instructions, and no download-and-run command (`curl ... | sh`, `bash -c`, `/dev/tcp/`, `nc -e`): such text reaches the model in every conversation, unseen by the user. Text under a branch on the message content, the date, a custom role or a message field is judged by `template-trigger` and `template-role-branch`.";
    TemplateRoleBranch = "template-role-branch", Template, [Warning, Warning, Warning],
        cite: "hidden-instruction backdoors in chat templates (a branch on a role the conversation never uses, or on a message's name, that swaps what the message says for text the template wrote)",
        "No branch on a message role outside the chat roles a template is written for (`system`, `user`, `assistant`, `tool`, `ipython`, `developer`, ...), or on another field of a message (`name`), emits constant text in place of the message's content, or constant text holding an instruction, a URL or a command: such a branch turns a message sent under a chosen role or name into text the template's author wrote.";
    TemplateSpecialToken = "template-special-token", Template, [Warning, Allow, Allow],
        cite: "llama.cpp src/llama-vocab.cpp tokenize with parse_special: a text matches a special token only when the vocabulary holds it",
        "Every special token a template emits (`<|im_start|>`, `<start_of_turn>`, ...) is in `tokenizer.ggml.tokens`: a missing one is tokenised as plain text and the model never sees the turn marker it was trained on.";
    TemplateAnalysisLimit = "template-analysis-limit", Template, [Error, Warning, Warning],
        cite: "limits::MAX_TEMPLATE_BYTES, MAX_TEMPLATE_TAG_NESTING, MAX_TEMPLATE_AST_DEPTH, MAX_TEMPLATE_FOLD_STRING, TEMPLATE_FUEL_BASE",
        "The template analysis finished within its bounds (size, nesting, folded string length, work): where a bound was hit the report says what was not examined, and under strict the template is not accepted unexamined.";
    TemplateRecursion = "template-recursion", Template, [Error, Warning, Warning],
        cite: "llama.cpp #19085 (a macro that calls itself without end exhausts the stack of llama.cpp's Jinja engine); limits::MAX_TEMPLATE_MACRO_RECURSION",
        "No macro calls itself (directly or through other macros) on a path without a condition, and no recursion from constant arguments goes deeper than `limits::MAX_TEMPLATE_MACRO_RECURSION` (64) calls: C++ Jinja engines exhaust their stack and crash the server, Python's raise RecursionError on every request.";

    // ---- Config: the run's own configuration ----
    SuppressionNotApplied = "suppression-not-applied", Config, [Warning, Warning, Warning],
        cite: "gguf-validate.toml [[suppress]] (until, sha256)",
        "A `[[suppress]]` entry of the config matches the file but was not applied: it expired (`until` is past) or the file's metadata no longer has the pinned `sha256`; its findings count again.";
}

impl RuleId {
    /// Whether a finding of this rule means the pinned tree refuses (or
    /// aborts on) the file while loading it: a key of another type, a
    /// key, tensor or vocabulary its loaders require, a tensor they never
    /// create or expect otherwise. [`crate::llama_cpp`]'s summary counts
    /// such a file as loaded by no release (the finding is the verdict
    /// whichever release is judged); the rules of harm at the first
    /// evaluation or token are not among them.
    pub fn refuses_at_load(self) -> bool {
        matches!(
            self,
            RuleId::StandardKeyType
                | RuleId::TokenizerArrayLength
                | RuleId::ModelKeyMissing
                | RuleId::ModelTensorMissing
                | RuleId::ModelTensorUnexpected
                | RuleId::ModelTensorShape
                | RuleId::ModelBlockCount
                | RuleId::ModelLayerArray
                | RuleId::ModelExpertCount
                | RuleId::ModelRope
                | RuleId::TokenizerVocabMissing
                | RuleId::TokenizerNameQuirk
                | RuleId::TokenizerDuplicateToken
                | RuleId::TokenizerMergesMissing
                | RuleId::TokenizerByteFallback
        )
    }

    /// This rule's row of the catalogue.
    pub fn rule(self) -> &'static Rule {
        // The catalogue is generated in enum order, so the index matches;
        // fall back to a search should that ever change.
        RULES
            .get(self as usize)
            .filter(|r| r.code == self)
            .unwrap_or_else(|| RULES.iter().find(|r| r.code == self).unwrap_or(&RULES[0]))
    }

    /// The fixes its findings can have ([`FIXES`]).
    pub fn fixes(self) -> impl Iterator<Item = &'static Fix> {
        FIXES.iter().filter(move |f| f.rule == self)
    }

    /// The stable id.
    pub fn id(self) -> &'static str {
        self.rule().id
    }

    /// Looks a rule up by its id.
    pub fn from_id(id: &str) -> Option<RuleId> {
        RULES.iter().find(|r| r.id == id).map(|r| r.code)
    }
}

/// Serialised as the stable id, as in reports.
impl serde::Serialize for RuleId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

/// Compares with a stable id (`diagnostic.rule == "key-empty"`).
impl PartialEq<&str> for RuleId {
    fn eq(&self, other: &&str) -> bool {
        self.id() == *other
    }
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// The catalogue as JSON rows (`gguf-validate rules --format json`, the
/// Python `rules()`): id, group, fatal, the level under each profile,
/// citation, description and how ggml's reader differs.
pub fn catalogue_rows() -> Vec<serde_json::Value> {
    RULES
        .iter()
        .map(|r| {
            serde_json::json!({
                "id": r.id,
                "group": r.group,
                "fatal": r.fatal,
                "strict": r.levels.strict,
                "spec": r.levels.spec,
                "ggml": r.levels.ggml,
                "citation": r.citation,
                "description": r.description,
                "ggml_divergence": r.divergence,
                "fixes": r.code.fixes().map(|f| serde_json::json!({"kind": f.kind, "does": f.does})).collect::<Vec<_>>(),
            })
        })
        .collect()
}

/// The catalogue as Markdown: `parser/docs/rules.md`, the rules reference
/// chapter of the book (`parser/docs/`). Rules are listed by group, and each
/// row carries an anchor named after its id (`<a id="metadata-limit"></a>`), so
/// `rules.html#metadata-limit` (SARIF's `helpUri`) and `rules.md#metadata-limit`
/// lead to it.
pub fn catalogue_markdown() -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "# Rule catalogue\n");
    let _ = writeln!(
        out,
        "Generated from `parser/core/src/rules.rs` by `gguf-validate rules --format markdown`; do not edit by hand.\n\n\
         Levels per profile: **E** error (the file is invalid), **W** warning, **I** info, **-** not reported. \
         Fatal rules stop decoding and cannot be allowed. Bracketed tags in citations (`[T3]`) are the checks of ggml's \
         reader listed in [ggml-reader.md](ggml-reader.md). A rule whose findings `gguf-validate fix` can fix says so \
         (**Fix (safe)**: every reader sees the same model afterwards; **Fix (unsafe)**: applied with `--unsafe` only). Every rule has an anchor named after its id: \
         `rules.md#metadata-limit` (in the book, `rules.html#metadata-limit`) leads to its row.\n"
    );
    // Groups in the order they first appear in the catalogue, each once.
    let mut groups: Vec<Group> = Vec::new();
    for r in RULES {
        if !groups.contains(&r.group) {
            groups.push(r.group);
        }
    }
    let index: Vec<String> =
        groups.iter().map(|g| format!("[{g}](#{g}) ({})", RULES.iter().filter(|r| r.group == *g).count())).collect();
    let _ = writeln!(out, "{} rules in {} groups: {}.", RULES.len(), groups.len(), index.join(", "));
    let lv = |l: Level| match l {
        Level::Error => "E",
        Level::Warning => "W",
        Level::Info => "I",
        Level::Allow => "-",
    };
    for group in groups {
        let _ = writeln!(out, "\n## {group}\n");
        let _ = writeln!(out, "| id | strict | spec | ggml | description | citation |");
        let _ = writeln!(out, "|---|---|---|---|---|---|");
        for r in RULES.iter().filter(|r| r.group == group) {
            let mut desc = r.description.replace('|', "\\|");
            if r.fatal {
                desc.push_str(" *(fatal)*");
            }
            if let Some(d) = r.divergence {
                let _ = write!(desc, " **ggml divergence:** {}", d.replace('|', "\\|"));
            }
            for f in r.code.fixes() {
                let _ = write!(desc, " **Fix ({}):** {}", f.kind, f.does.replace('|', "\\|"));
            }
            let _ = writeln!(
                out,
                "| <a id=\"{id}\"></a>`{id}` | {} | {} | {} | {} | {} |",
                lv(r.levels.strict),
                lv(r.levels.spec),
                lv(r.levels.ggml),
                desc,
                r.citation.replace('|', "\\|"),
                id = r.id,
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_unique_kebab_case_and_indexed() {
        let mut seen = HashSet::new();
        for (i, r) in RULES.iter().enumerate() {
            assert!(seen.insert(r.id), "duplicate id {}", r.id);
            assert!(r.id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'), "{}", r.id);
            assert_eq!(r.code as usize, i);
            assert_eq!(RuleId::from_id(r.id), Some(r.code));
            assert!(r.description.ends_with('.'), "{}", r.id);
            if r.fatal {
                assert_eq!(
                    r.levels,
                    Levels { strict: Level::Error, spec: Level::Error, ggml: Level::Error },
                    "{}",
                    r.id
                );
            }
        }
    }

    /// Every bracketed tag of a citation (`[T3]`, `[H8, H9]`) has a row in
    /// `parser/docs/ggml-reader.md`, so citations resolve in the repository.
    #[test]
    fn citation_tags_resolve_in_the_repository() {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/ggml-reader.md")).unwrap();
        for r in RULES {
            let mut rest = r.citation;
            while let Some(open) = rest.find('[') {
                let Some(close) = rest[open..].find(']') else { break };
                for tag in rest[open + 1..open + close].split(',').map(str::trim) {
                    if tag.len() >= 2
                        && tag.as_bytes()[0].is_ascii_uppercase()
                        && tag[1..].bytes().all(|b| b.is_ascii_digit())
                    {
                        assert!(doc.contains(&format!("| {tag} |")), "{}: tag {tag} is not in ggml-reader.md", r.id);
                    }
                }
                rest = &rest[open + close..];
            }
        }
    }

    #[test]
    fn strict_is_at_least_as_strict_as_ggml_on_errors() {
        // "strict" = valid by the spec AND loadable by ggml. Exceptions are
        // rules where real files decide (documented in the description).
        // data-type-not-validatable: ggml refuses Q8_1 data only because its
        // validator has no case for the type, not because the data is bad.
        let exceptions = ["byte-order-big-endian", "data-type-not-validatable"];
        for r in RULES {
            if r.level(Profile::Ggml) == Level::Error && !exceptions.contains(&r.id) {
                assert_eq!(r.level(Profile::Strict), Level::Error, "{}", r.id);
            }
        }
    }
}
