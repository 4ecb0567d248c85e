//! Named limits. Every bound the parser or validator applies is here, with
//! where it comes from.
#![forbid(unsafe_code)]

/// The four magic bytes of a GGUF file (`docs/gguf.md`, "File Structure").
pub const GGUF_MAGIC: [u8; 4] = *b"GGUF";

/// Size of the fixed v2/v3 header: magic, version, tensor count, kv count.
pub const HEADER_SIZE: u64 = 24;

/// Longest string ggml's reader accepts (`GGUF_MAX_STRING_LENGTH`, 1 GiB).
pub const MAX_STRING_LEN: u64 = 1 << 30;

/// Most elements ggml's reader accepts in one array (`GGUF_MAX_ARRAY_ELEMENTS`).
pub const MAX_ARRAY_LEN: u64 = 1 << 30;

/// Longest key the spec allows ("at most 2^16-1 bytes", `gguf_metadata_kv_t`).
pub const MAX_KEY_LEN: usize = 65_535;

/// Longest tensor name ggml's reader accepts: `GGML_MAX_NAME` (64) minus the NUL.
pub const MAX_TENSOR_NAME_LEN_GGML: usize = 63;

/// Longest tensor name the spec allows ("at most 64 bytes").
pub const MAX_TENSOR_NAME_LEN_SPEC: usize = 64;

/// Most dimensions of a tensor (`GGML_MAX_DIMS`; the spec says "currently at most 4").
pub const MAX_DIMS: u32 = 4;

/// Largest dimension ggml accepts: dims are read as int64 and must be >= 0.
pub const MAX_DIM: u64 = i64::MAX as u64;

/// Largest element count ggml accepts (`INT64_MAX` guard of the reader).
pub const MAX_ELEMENTS: u64 = i64::MAX as u64;

/// Deepest nesting of arrays we decode. The spec allows nesting without a
/// bound and ggml allows none; this is our own bound so that recursion is
/// bounded on hostile input (SafeGGUF uses 16, candle 64).
pub const MAX_ARRAY_DEPTH: u32 = 16;

/// Alignment used when `general.alignment` is absent (`GGUF_DEFAULT_ALIGNMENT`).
pub const DEFAULT_ALIGNMENT: u64 = 32;

/// Largest alignment we accept without a warning. Not in the spec; open
/// upstream work (llama.cpp#24997, ggml#1516) proposes 1 MiB because
/// `GGML_PAD` overflows on 32-bit hosts.
pub const MAX_SANE_ALIGNMENT: u64 = 1 << 20;

// What a file's metadata may declare (see [`MetadataLimits`]): resource caps
// of this tool, not rules of the format. ggml allows a 1 GiB string and a
// 2^30-element array (the `string-length-limit` and `array-length-limit`
// rules); reading what a file declares up to those sizes would let a 1 TiB
// sparse file of zeros take gigabytes of memory and minutes. The largest
// real metadata seen (gemma-3: a 262,144-token vocabulary) is 6.5 MB, 40
// times under the total; a file beyond a cap gets the fatal diagnostic
// `metadata-limit` after reading at most the cap.

/// Most bytes of metadata (header, key/values, tensor infos) read into
/// memory. `--max-metadata` raises it, and the other caps with it.
pub const MAX_METADATA_BYTES: u64 = 256 << 20;

/// Longest string of the metadata read: a quarter of the total (64 MiB;
/// the longest real strings, a tokenizer's JSON or a chat template, are
/// a few MB and 30 KB).
pub const MAX_METADATA_STRING: u64 = MAX_METADATA_BYTES / 4;

/// Most elements of one metadata array: 16 Mi (real vocabularies and
/// merge lists have at most a few hundred thousand).
pub const MAX_METADATA_ARRAY: u64 = MAX_METADATA_BYTES / 16;

/// Most key/value pairs: 65,536 (real files have under a hundred; each
/// one parsed is a record in memory).
pub const MAX_METADATA_KVS: u64 = MAX_METADATA_BYTES / 4096;

/// Most tensor infos: 262,144 (llama.cpp fuses experts, so the largest
/// real models have a few thousand tensors).
pub const MAX_METADATA_TENSORS: u64 = MAX_METADATA_BYTES / 1024;

/// The caps on what a file's metadata declares, applied by the parser
/// before it reads or walks anything: a declared count or length beyond a
/// cap stops decoding at once (`metadata-limit`), so time and memory are
/// bounded by the caps whatever the file says and however much of it is
/// a sparse run of zeros.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetadataLimits {
    /// Most bytes of metadata read ([`MAX_METADATA_BYTES`]).
    pub bytes: u64,
    /// Longest string ([`MAX_METADATA_STRING`]).
    pub string_bytes: u64,
    /// Most elements of one array ([`MAX_METADATA_ARRAY`]).
    pub array_len: u64,
    /// Most key/value pairs ([`MAX_METADATA_KVS`]).
    pub kv_count: u64,
    /// Most tensor infos ([`MAX_METADATA_TENSORS`]).
    pub tensor_count: u64,
}

impl MetadataLimits {
    /// The documented defaults.
    pub const DEFAULT: MetadataLimits = MetadataLimits {
        bytes: MAX_METADATA_BYTES,
        string_bytes: MAX_METADATA_STRING,
        array_len: MAX_METADATA_ARRAY,
        kv_count: MAX_METADATA_KVS,
        tensor_count: MAX_METADATA_TENSORS,
    };

    /// The caps for a total of `bytes` of metadata: every other cap in the
    /// same proportion to the total as the defaults (at least 1 each).
    pub fn with_total(bytes: u64) -> MetadataLimits {
        let scale = |default: u64| {
            let v = u128::from(default).saturating_mul(u128::from(bytes)) / u128::from(MAX_METADATA_BYTES);
            u64::try_from(v).unwrap_or(u64::MAX).max(1)
        };
        MetadataLimits {
            bytes,
            string_bytes: scale(MAX_METADATA_STRING),
            array_len: scale(MAX_METADATA_ARRAY),
            kv_count: scale(MAX_METADATA_KVS),
            tensor_count: scale(MAX_METADATA_TENSORS),
        }
    }

    /// No cap but the bytes at hand: for metadata already in memory.
    pub const UNBOUNDED: MetadataLimits = MetadataLimits {
        bytes: u64::MAX,
        string_bytes: u64::MAX,
        array_len: u64::MAX,
        kv_count: u64::MAX,
        tensor_count: u64::MAX,
    };
}

impl Default for MetadataLimits {
    fn default() -> Self {
        MetadataLimits::DEFAULT
    }
}

/// Smallest possible key/value pair: u64 key length, an empty key, u32
/// type, one byte of value. Counts are checked against this before any loop.
pub const MIN_KV_SIZE: u64 = 8 + 4 + 1;

/// `GgufFile::get` on a file of more pairs than this looks keys up in an
/// index of their hashes (`parse::KeyIndex`: 4 bytes a pair and a bitmap,
/// built once and shared with the duplicate-key rule) rather than comparing
/// the key with every pair; below it the plain comparison is as fast.
pub const KEY_INDEX_MIN_PAIRS: usize = 64;

/// Packed entries (a hash above a position) from which they are sorted by
/// radix rather than by comparison (`parse::sort_packed`): below it the
/// counting arrays cost more than they save.
pub const RADIX_SORT_MIN_ENTRIES: usize = 1 << 12;

/// Smallest possible tensor info: u64 name length, empty name, u32 n_dims
/// (0), u32 type, u64 offset.
pub const MIN_TENSOR_INFO_SIZE: u64 = 8 + 4 + 4 + 8;

/// Largest initial capacity of a vector whose final length comes from the
/// file (as nom's `MAX_INITIAL_CAPACITY_BYTES`): the vector grows past it
/// only as elements are really decoded.
pub const MAX_INITIAL_CAPACITY: usize = 4096;

/// Diagnostics kept per rule and file; further ones are only counted.
pub const MAX_DIAGNOSTICS_PER_RULE: usize = 50;

/// Keys of a report's `tensor_types` summary: the 43 ggml type names and a
/// few `unknown(N)` ids; further unknown ids are counted as `unknown(other)`.
pub const MAX_SUMMARY_TYPE_KEYS: usize = 64;

/// Longest name or key quoted in a message or path before it is shortened.
pub const MAX_QUOTED_LEN: usize = 96;

/// Array elements shown by `dump` before the rest is summarised (without `--full`).
pub const DUMP_ARRAY_PREVIEW: usize = 16;

// Legacy formats (rwkv.cpp, GGML, GGMF, GGJT); see `crate::legacy`, where each
// format's layout and its sources are described.

/// rwkv.cpp's file magic (`RWKV_FILE_MAGIC`, `rwkv.h`): the u32 0x67676d66, bytes `fmgg` on disk.
pub const RWKV_MAGIC: u32 = 0x6767_6d66;

/// The rwkv.cpp file versions its loader reads (`RWKV_FILE_VERSION_0` and `_1`, `rwkv.h`).
pub const RWKV_VERSIONS: [u32; 2] = [100, 101];

/// The original rwkv.cpp file version (`RWKV_FILE_VERSION_0`), whose quantized blocks predate ggml `00b49ec7`.
pub const RWKV_VERSION_ORIGINAL: u32 = 100;

/// The rwkv.cpp version whose quantized blocks have the current ggml layout (`RWKV_FILE_VERSION_1`).
pub const RWKV_VERSION_QUANTIZED: u32 = 101;

/// Size of the rwkv.cpp file header: six u32 (`struct rwkv_file_header`).
pub const RWKV_HEADER_SIZE: u64 = 24;

/// Smallest rwkv.cpp parameter header: dim_count, key_length, data_type.
pub const RWKV_PARAM_HEADER_SIZE: u64 = 12;

/// Number of rwkv.cpp data types (`TYPE_COUNT`, `rwkv_file_format.inc`): ids 0..=16.
pub const RWKV_TYPE_COUNT: u32 = 17;

/// Most dimensions rwkv.cpp reads for a parameter (`rwkv_fread_tensor_header`).
pub const RWKV_MAX_DIMS: u32 = 3;

/// Number of llama hyper-parameters of GGML, GGMF and GGJT files (n_vocab,
/// n_embd, n_mult, n_head, n_layer, n_rot, ftype; `convert_llama_ggml_to_gguf.py`).
pub const LEGACY_HPARAMS: usize = 7;

/// Longest vocabulary entry llama.cpp's converter accepts is one byte less
/// (`itemlen < 4096`, "Absurd vocab item length").
pub const LEGACY_MAX_VOCAB_ITEM_LEN: u32 = 4096;

/// Longest tensor name llama.cpp's converter accepts is one byte less
/// (`name_len < 4096`, "Absurd tensor name length").
pub const LEGACY_MAX_NAME_LEN: u32 = 4096;

/// Most dimensions of a GGML/GGMF/GGJT tensor (the converter's `n_dims <= 4`).
pub const LEGACY_MAX_DIMS: u32 = 4;

/// GGJT pads each tensor's data start to this absolute file offset multiple.
pub const GGJT_ALIGNMENT: u64 = 32;

/// Vocabulary entries shown by `dump` for a legacy file.
pub const LEGACY_VOCAB_PREVIEW: usize = 16;

// Reading (see `crate::io`): what the tool holds in memory and reads at once.

/// A lean read (`--container-only` of a local file, nothing after the
/// report needing the metadata) reads the metadata this much at a time,
/// through one buffer it reuses for the large string arrays it walks and
/// does not keep; a string longer than it ends the lean read (the
/// metadata is then read whole).
pub const LEAN_READ_CHUNK: u64 = 64 << 10;

/// A lean read does not read the elements of a fixed-size array (not of
/// bools) of at least this many bytes: the container's checks never read
/// them.
pub const LEAN_UNREAD_MIN_BYTES: u64 = 64 << 10;

/// A first read of a local file's metadata at least this large goes into
/// anonymous pages advised for transparent huge pages (`io::MetadataBytes`)
/// rather than the heap: one page fault per 2 MiB instead of 512.
pub const PAGED_METADATA_MIN: u64 = 2 << 20;

/// The size of a transparent huge page on x86-64 and most arm64 kernels:
/// a paged metadata buffer is reserved in multiples of it, so the kernel
/// can align it and back all of it with huge pages.
pub const HUGE_PAGE_BYTES: u64 = 2 << 20;

/// Working memory of a check at least this large (the hashes and bitmap of
/// a vocabulary's duplicate search) is taken in huge pages rather than from
/// the heap: a huge page costs about as much as 140 small page faults, so
/// below about 1 MiB the heap's small pages are as cheap.
pub const HUGE_SCRATCH_MIN: u64 = 1 << 20;

/// First read of a file's metadata: most models' header, key/values and
/// tensor infos fit in it (a 262,144-token vocabulary takes about 6.5 MB).
/// A larger metadata section is read on to its end as a walk of it says
/// (local files, see [`METADATA_MIN_STEP`]) or by doubling (remote files,
/// where each read that falls short costs a parse of the prefix).
pub const METADATA_FIRST_READ: u64 = 4 << 20;

/// Smallest read after the first when the metadata's reads are sized by a
/// walk of it (`validate_source` on a local file): each read adds at least
/// this much, so small items past the first read (key/value pairs, the
/// first tensor info, before the walk can extrapolate their size) take a
/// few reads, not one each.
pub const METADATA_MIN_STEP: u64 = 64 << 10;

/// Bytes read at a time when a check scans a range beyond the metadata
/// (padding and gaps between tensors).
pub const SCAN_READ_CHUNK: u64 = 1 << 16;

// Remote files (`crate::remote`, feature `remote`): every byte is a
// transfer and every read a request.

/// First range request for a remote file's metadata (then doubling while
/// the parser asks for more, as for a file): small models' metadata fits,
/// and a 6.5 MB vocabulary costs six requests and at most twice its size.
/// `@huggingface/gguf` reads 2 MB chunks.
pub const REMOTE_FIRST_READ: u64 = 256 << 10;

/// Bytes of fetched ranges a remote source keeps, so that no byte is
/// fetched twice (the metadata: the first range, read again by the
/// validator, and the doubling reads). Ranges past this are not kept.
pub const REMOTE_CACHE_BYTES: u64 = 64 << 20;

/// Requests a remote source spends on optional reads (padding between
/// tensors, which lies in the data section) before declining them: a file
/// with a million gaps does not cost a million requests.
pub const REMOTE_OPTIONAL_REQUESTS: u32 = 16;

/// Redirects followed for one request (a hub's `resolve/` URL redirects
/// once, to its CDN).
pub const REMOTE_MAX_REDIRECTS: u32 = 10;

/// Retries of a request that failed in a way that may pass (a connection
/// error, a timeout, HTTP 408, 429, 500, 502, 503, 504) by default.
pub const REMOTE_RETRIES: u32 = 3;

/// Wait before the first retry; doubled for each next one (a
/// `Retry-After` of the server is honoured up to [`REMOTE_MAX_BACKOFF_MS`]).
pub const REMOTE_BACKOFF_MS: u64 = 250;

/// Longest wait between two tries (never past the file's deadline).
pub const REMOTE_MAX_BACKOFF_MS: u64 = 30_000;

/// Default time for one request to a server (`--http-timeout`): connecting,
/// the status line and headers (and any `1xx` interim answers), and the
/// body, together. A server that sends a byte just before each read times
/// out fails the request at this bound; an 8 MiB data-scan range needs
/// 280 KB/s within it.
pub const REMOTE_TIMEOUT_SECS: u64 = 30;

/// A request that ran out of its time (`--http-timeout`) is tried again at
/// most this many times, whatever `--retries` allows for other failures
/// that may pass: a read of a file then waits at most
/// `(1 + REMOTE_TIMEOUT_RETRIES) x --http-timeout` on a server that never
/// answers in time, and the file at most `--http-deadline`.
pub const REMOTE_TIMEOUT_RETRIES: u32 = 1;

/// Most bytes of a response header.
pub const REMOTE_MAX_HEADER_BYTES: usize = 64 << 10;

/// Default time for everything read from one remote file (`--http-deadline`):
/// its requests, retries and backoff sleeps. Metadata of the largest models
/// is tens of MB, a minute at a slow link; a `--check-data` or `hash` of a
/// large remote file may need it raised. A split set named by URL shares
/// one such deadline for all its shards.
pub const REMOTE_FILE_DEADLINE_SECS: u64 = 600;

/// Longest `Retry-After` honoured: a server asking for more than what is
/// left of the deadline is an error at once (no sleep); one asking for
/// more than this (but within the deadline) is retried after this.
pub const REMOTE_MAX_RETRY_AFTER_SECS: u64 = 5;

/// Most shards of a split set named by URL (`NAME-00001-of-0000n.gguf`):
/// a remote folder cannot be listed, so the count comes from the name, and
/// each shard is at least one request. Sets on the hub have tens of shards
/// (gguf-split's default is 50 GB each: 256 shards is 12 TB); a name saying
/// more than this is refused without a request for any sibling (only the
/// given shard is read, and the set's report says why).
pub const REMOTE_MAX_SET_SHARDS: usize = 256;

/// Longest pause a server's `RateLimit` header (no requests left until its
/// reset) imposes on later requests to its host (a `Retry-After` pauses
/// them for at most [`REMOTE_MAX_RETRY_AFTER_SECS`]); a rate cap per host
/// never spaces requests further apart than this either.
pub const REMOTE_MAX_RATE_LIMIT_WAIT_SECS: u64 = 60;

/// Hosts whose next request time is remembered (a rate cap, a pause): a
/// run naming more hosts than this forgets those whose time passed, and
/// does not pace the rest.
pub const REMOTE_MAX_PACED_HOSTS: usize = 1024;

/// Most bytes read from a FIFO, socket or device (only with
/// `--allow-special-files`; `--special-file-limit` changes it).
pub const MAX_SPECIAL_FILE_BYTES: u64 = 1 << 30;

/// rwkv.cpp, GGML, GGMF and GGJT files interleave headers and data, so they
/// are validated from memory; larger ones are refused with a clear error.
pub const MAX_LEGACY_FILE_BYTES: u64 = 8 << 30;

/// Bytes `hash` reads at a time from one tensor (one task of the reading
/// pool; a larger tensor is several chunks).
pub const HASH_CHUNK_BYTES: u64 = 4 << 20;

/// Bytes of tensor data `hash` holds per batch. One batch is hashed while
/// the next one is read, so memory is twice this whatever the model.
pub const HASH_BATCH_BYTES: u64 = 32 << 20;

/// Largest manifest `hash --check` reads (a 10,000-tensor model with
/// `--all` takes about 4 MB).
pub const MAX_MANIFEST_BYTES: u64 = 256 << 20;

/// Chunks per batch at most (many tiny tensors: a task per chunk and chain).
pub const HASH_BATCH_CHUNKS: usize = 4096;

/// Largest `--max-data-findings` (data findings listed per tensor).
pub const MAX_DATA_FINDINGS: usize = 10_000;

/// Tensors listed in the `--check-data` report (those with findings or not
/// checked); the rest are counted.
pub const MAX_LISTED_DATA_TENSORS: usize = 100;

// llama.cpp's loader (the model-layer rules; `src/llama-hparams.h` of the
// llama.cpp vendored by llama-cpp-python 0.3.36).

/// Layers llama.cpp's per-layer arrays hold (`LLAMA_MAX_LAYERS`).
pub const LLAMA_MAX_LAYERS: u64 = 512;

/// Experts llama.cpp allows (`LLAMA_MAX_EXPERTS`).
pub const LLAMA_MAX_EXPERTS: u64 = 1024;

/// Token types of llama.cpp's `enum llama_token_type` (0 UNDEFINED .. 6 BYTE).
pub const LLAMA_TOKEN_TYPES: std::ops::RangeInclusive<i32> = 0..=6;

/// `LLAMA_TOKEN_TYPE_BYTE`.
pub const LLAMA_TOKEN_TYPE_BYTE: i32 = 6;

/// A vocabulary of at least this many tokens has its duplicate search's
/// walk split between two threads (the second half on a thread of its own,
/// which first steps over the first half's length fields); a smaller one is
/// walked on the caller's thread, where a thread would cost more than it
/// saves. One extra thread per file at most, for the walk's time only.
pub const VOCAB_SPLIT_MIN_TOKENS: u64 = 1 << 16;

/// Where the extent's walk notes a vocabulary is split in two
/// ([`crate::parse::StringSpan::mid`]) is a token whose index is a multiple
/// of this (the tokenizer keeps the offset of every this-many-th token).
pub const VOCAB_SPLIT_ALIGN: u64 = 64;

// Split sets (`gguf-split`; see `crate::split_set`).

/// Most shards of one split set that are read. `split.count` is a u16 and
/// a file name says `-of-65535`, but sets are found by listing the names
/// that exist, never by trying every number; a set with more shards than
/// this (gguf-split's largest real sets have a few hundred) has its shards
/// past the limit reported missing rather than read.
pub const MAX_SPLIT_SHARDS: usize = 4096;
// Chat-template analysis (`check/template/`): every bound keeps the work
// linear in the template's length; hitting one is the finding
// `template-analysis-limit`, never a silent pass.

/// Largest template analysed (1 MiB; the largest template llama.cpp ships
/// is about 30 KiB).
pub const MAX_TEMPLATE_BYTES: usize = 1 << 20;

/// Longest line of a template analysed, in characters: minijinja's spans
/// count columns in a u16 and overflow at an error past it (real
/// templates' lines are under 2 KiB).
pub const MAX_TEMPLATE_LINE_CHARS: usize = 65_000;

/// Most nesting tokens (operators, `.`, `[`, `(`, `{`, `|`, `not`, `is`,
/// `if`, ...) inside one `{{ }}` or `{% %}` tag: an upper bound on how deep
/// that tag's expression tree can be, checked before the parser recurses
/// (real templates use at most 27).
pub const MAX_TEMPLATE_TAG_NESTING: usize = 512;

/// Deepest statement and expression nesting the analysis walks.
pub const MAX_TEMPLATE_AST_DEPTH: u32 = 1024;

/// Longest string the constant folder builds (`'a' * 10**9` stops here).
pub const MAX_TEMPLATE_FOLD_STRING: usize = 4096;

/// Longest list the constant folder builds.
pub const MAX_TEMPLATE_FOLD_LIST: usize = 256;

/// Most alternative constant values a variable holds (one per branch that
/// assigns it) before the folder gives up on it.
pub const MAX_TEMPLATE_ALTERNATIVES: usize = 16;

/// Work units (AST nodes visited plus bytes folded) the analysis spends:
/// this base plus [`TEMPLATE_FUEL_PER_BYTE`] per byte of template.
pub const TEMPLATE_FUEL_BASE: u64 = 1 << 20;

/// See [`TEMPLATE_FUEL_BASE`].
pub const TEMPLATE_FUEL_PER_BYTE: u64 = 64;

/// Deepest macro recursion from constant arguments the template analysis
/// accepts (`template-recursion`): llama.cpp's Jinja engine recurses on the
/// C++ stack, one frame chain per call (#19085), and Jinja2 stops at Python's
/// recursion limit (1000) on every request; no real template recurses from
/// constants this deep.
pub const MAX_TEMPLATE_MACRO_RECURSION: u32 = 64;

/// Largest buffer a control vector may size in llama.cpp's
/// `common_control_vector_load_one` (`n_embd * layer_idx` floats) before
/// `control-vector-overflow` calls it hostile: 1 GiB, 512 layers of a
/// 524,288-wide model; real control vectors size a few MiB.
pub const CONTROL_VECTOR_MAX_BYTES: u64 = 1 << 30;

/// Byte size from which a size kept in 32 bits is truncated (`size-32-bit`).
pub const SIZE_32_BIT: u64 = 1 << 32;

/// Most `.gguf` files of a folder read as the models a projector, adapter
/// or control vector there may be paired with (their metadata only, once
/// per run).
pub const MAX_COMPANION_CANDIDATES: usize = 64;
