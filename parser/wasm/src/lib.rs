//! `gguf_validate_wasm`: the library for browsers and JavaScript, through
//! `wasm-bindgen`. The npm package (`npm/index.js`) is the API people use;
//! this crate is what it calls.
//!
//! A browser reads a `Blob` or a URL only asynchronously, and the library
//! reads through a synchronous [`ByteSource`]. So the bytes come in rounds:
//! a [`Reads`] holds, per source, the ranges read so far; a validation runs
//! over them, and when it reads a range that is not there yet, the range is
//! noted and the run's result dropped. JavaScript reads the noted ranges
//! and runs it again. Each round asks for the reads the native reader makes
//! over HTTP (the first read, then as far as the walk of the metadata
//! projects it to end), so a file costs its metadata's bytes and a few
//! rounds, never its size. The last round is the native validation of the
//! same bytes: the report's JSON is the command line's.
#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use gguf_numerics::GgmlType;
use gguf_validate_core::fix;
use gguf_validate_core::io::{ByteSource, ReadError};
use gguf_validate_core::output::{Format, render};
use gguf_validate_core::pipeline::commands::{DumpError, dump};
use gguf_validate_core::pipeline::{Input, Outcome, Pipeline, Settings, SharedSource, json, scan};
use gguf_validate_core::remote::RemoteSummary;
use gguf_validate_core::{Options, Profile, Validator, limits, remote};
use serde_json::json;
use wasm_bindgen::prelude::*;

/// The ranges of one source read so far, and the ranges a run wanted that
/// were not there.
#[derive(Debug, Default)]
struct Held {
    /// Disjoint, not adjacent ranges by start.
    ranges: BTreeMap<u64, Vec<u8>>,
    /// Bytes held in all.
    bytes: u64,
    /// Ranges wanted by the current run.
    missing: Vec<(u64, u64)>,
    /// Optional reads asked for so far (a URL's are limited as the native
    /// reader limits them).
    optional_asked: u32,
}

impl Held {
    /// Copies `buf.len()` bytes at `offset` when one held range covers them.
    fn copy(&self, offset: u64, buf: &mut [u8]) -> bool {
        if buf.is_empty() {
            return true;
        }
        let Some((start, bytes)) = self.ranges.range(..=offset).next_back() else {
            return false;
        };
        let Ok(from) = usize::try_from(offset.saturating_sub(*start)) else {
            return false;
        };
        match bytes.get(from..).and_then(|rest| rest.get(..buf.len())) {
            Some(src) => {
                buf.copy_from_slice(src);
                true
            }
            None => false,
        }
    }

    /// Adds the bytes at `offset`, merged with the ranges they touch.
    fn insert(&mut self, offset: u64, data: &[u8]) -> Result<(), String> {
        let len = u64::try_from(data.len()).map_err(|_| "a read too large for this machine".to_string())?;
        let end = offset.checked_add(len).ok_or("a read past the largest offset")?;
        let mut start = offset;
        let mut touched: Vec<u64> = Vec::new();
        // The range that starts at or before `offset` and reaches it, and
        // every range starting within `offset..=end`.
        if let Some((s, b)) = self.ranges.range(..=offset).next_back() {
            let b_end = s.saturating_add(u64::try_from(b.len()).unwrap_or(u64::MAX));
            if b_end >= offset {
                start = *s;
                touched.push(*s);
            }
        }
        let first = touched.first().copied();
        touched.extend(self.ranges.range(offset..=end).map(|(s, _)| *s).filter(|s| Some(*s) != first));
        let mut new_end = end;
        for s in &touched {
            if let Some(b) = self.ranges.get(s) {
                new_end = new_end.max(s.saturating_add(u64::try_from(b.len()).unwrap_or(u64::MAX)));
            }
        }
        let size = usize::try_from(new_end.saturating_sub(start)).map_err(|_| "a range too large for this machine")?;
        let mut merged = vec![0u8; size];
        for s in &touched {
            if let Some(b) = self.ranges.remove(s) {
                self.bytes = self.bytes.saturating_sub(u64::try_from(b.len()).unwrap_or(0));
                let at = usize::try_from(s.saturating_sub(start)).map_err(|_| "a range too large")?;
                if let Some(dst) = merged.get_mut(at..).and_then(|d| d.get_mut(..b.len())) {
                    dst.copy_from_slice(&b);
                }
            }
        }
        let at = usize::try_from(offset.saturating_sub(start)).map_err(|_| "a range too large")?;
        if let Some(dst) = merged.get_mut(at..).and_then(|d| d.get_mut(..data.len())) {
            dst.copy_from_slice(data);
        }
        self.bytes = self.bytes.saturating_add(u64::try_from(merged.len()).unwrap_or(u64::MAX));
        self.ranges.insert(start, merged);
        Ok(())
    }
}

/// One source's bytes as far as they were read: a `Blob` (`remote` false:
/// read as a local file is) or a URL (`remote`: read as the native reader
/// reads over HTTP).
#[derive(Debug)]
struct Pieces {
    len: u64,
    remote: bool,
    held: Mutex<Held>,
    /// What reading a URL cost, as JavaScript counts it.
    cost: Mutex<Option<RemoteSummary>>,
}

impl Pieces {
    /// The length of a read of `len` bytes at `offset`, when they lie inside
    /// the source (a read past its end fails as a file's would).
    fn within(&self, offset: u64, len: usize) -> Result<u64, ReadError> {
        let len = u64::try_from(len).unwrap_or(u64::MAX);
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(len),
            _ => Err(ReadError::Shrunk { offset, len, opened_len: self.len }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ByteSource for Pieces {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        let len = self.within(offset, buf.len())?;
        let mut held = self.lock();
        if held.copy(offset, buf) {
            return Ok(());
        }
        held.missing.push((offset, len));
        // Not read yet: the round ends here, and JavaScript reads it.
        Err(ReadError::Cancelled)
    }

    fn first_read(&self) -> u64 {
        if self.remote { limits::REMOTE_FIRST_READ } else { limits::METADATA_FIRST_READ }
    }

    fn sized_reads(&self) -> bool {
        true
    }

    /// Each read of a byte not held is a round (a rerun of the
    /// validation), so reads are sized as for a round trip to a server.
    fn round_trips(&self) -> bool {
        true
    }

    fn read_optional_at(&self, offset: u64, buf: &mut [u8]) -> Result<bool, ReadError> {
        let len = self.within(offset, buf.len())?;
        let mut held = self.lock();
        if held.copy(offset, buf) {
            return Ok(true);
        }
        // A URL declines what the native reader declines (one request each,
        // at most `REMOTE_OPTIONAL_REQUESTS`); a Blob reads them all.
        if self.remote {
            if held.optional_asked >= limits::REMOTE_OPTIONAL_REQUESTS {
                return Ok(false);
            }
            held.optional_asked = held.optional_asked.saturating_add(1);
        }
        held.missing.push((offset, len));
        // This run goes on without it; the next has it.
        Ok(false)
    }
}

/// The sources of one call of the npm package, and what was read of them.
#[wasm_bindgen]
#[derive(Debug, Default)]
pub struct Reads {
    sources: Vec<Arc<Pieces>>,
    names: Vec<String>,
    /// The outcome of the last finished validation, for [`Run::add`].
    last: RefCell<Option<(String, Outcome)>>,
}

fn js_error(message: impl std::fmt::Display) -> JsError {
    JsError::new(&message.to_string())
}

/// The options of a validation, as the npm package passes them (JSON).
#[derive(Debug, Default)]
struct RunOptions {
    profile: Profile,
    container_only: bool,
    deny_warnings: bool,
    /// Also say what the metadata says besides the report.
    facts: bool,
    /// The llama.cpp releases judged against (`llamaCpp`: `"b4600"`, `"b4600.."`).
    llama_cpp: Option<gguf_validate_core::llama_cpp::Releases>,
    /// The loader judged against (`loader`: `"llama.cpp"`, `"sd.cpp"`, `"comfyui-gguf"`).
    loader: Option<gguf_validate_core::loader::Loader>,
    /// Also plan the fixes of the findings (`fixable`): what `fix` would
    /// make of them without `unsafe`.
    fixable: bool,
}

impl RunOptions {
    fn validator(&self) -> Validator {
        let options = Options {
            profile: self.profile,
            container_only: self.container_only,
            deny_warnings: self.deny_warnings,
            ..Options::default()
        };
        Validator::new(options).with_llama_cpp(self.llama_cpp).with_loader(self.loader)
    }
}

fn run_options(options: &str) -> Result<RunOptions, JsError> {
    let v: serde_json::Value = serde_json::from_str(options).map_err(js_error)?;
    let profile = match v.get("profile").and_then(serde_json::Value::as_str) {
        None => Profile::default(),
        Some(name) => Profile::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| js_error(format!("profile `{name}`: expected `strict`, `spec` or `ggml`")))?,
    };
    let flag = |k: &str| v.get(k).and_then(serde_json::Value::as_bool).unwrap_or(false);
    let llama_cpp = match v.get("llamaCpp").and_then(serde_json::Value::as_str) {
        None => None,
        Some(name) => Some(name.parse().map_err(|e: String| js_error(format!("llamaCpp: {e}")))?),
    };
    let loader = match v.get("loader").and_then(serde_json::Value::as_str) {
        None => None,
        Some(name) => Some(name.parse().map_err(|e: String| js_error(format!("loader: {e}")))?),
    };
    Ok(RunOptions {
        profile,
        container_only: flag("containerOnly"),
        deny_warnings: flag("denyWarnings"),
        facts: flag("facts"),
        llama_cpp,
        loader,
        fixable: flag("fixable"),
    })
}

#[wasm_bindgen]
impl Reads {
    /// No sources yet.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Reads {
        Reads::default()
    }

    /// A source of `len` bytes (`remote`: a URL); its number.
    #[wasm_bindgen(js_name = addSource)]
    pub fn add_source(&mut self, len: u64, remote: bool) -> usize {
        self.sources.push(Arc::new(Pieces { len, remote, held: Mutex::new(Held::default()), cost: Mutex::new(None) }));
        self.names.push(format!("source {}", self.names.len()));
        self.sources.len().saturating_sub(1)
    }

    /// The bytes read at `offset` of source `source`.
    pub fn supply(&self, source: usize, offset: u64, bytes: &[u8]) -> Result<(), JsError> {
        let s = self.source(source)?;
        let len = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        if offset.checked_add(len).is_none_or(|end| end > s.len) {
            return Err(js_error(format!("{len} bytes at offset {offset} lie past the source's {} bytes", s.len)));
        }
        s.lock().insert(offset, bytes).map_err(js_error)
    }

    /// What reading URL source `source` has cost so far (JSON: `url`,
    /// `bytesFetched`, `requests`, `rangeRequests`, `etag`, `revision`,
    /// `sha256`), carried by its report's `summary.remote`.
    #[wasm_bindgen(js_name = setRemoteCost)]
    pub fn set_remote_cost(&self, source: usize, cost: &str) -> Result<(), JsError> {
        let v: serde_json::Value = serde_json::from_str(cost).map_err(js_error)?;
        let text = |k: &str| v.get(k).and_then(serde_json::Value::as_str).map(str::to_string);
        let number = |k: &str| v.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
        let summary = RemoteSummary {
            url: text("url").unwrap_or_default(),
            bytes_fetched: number("bytesFetched"),
            requests: number("requests"),
            range_requests: v.get("rangeRequests").and_then(serde_json::Value::as_bool).unwrap_or(true),
            revision: text("revision"),
            etag: text("etag"),
            sha256: text("sha256"),
        };
        *self.source(source)?.cost.lock().unwrap_or_else(PoisonError::into_inner) = Some(summary);
        Ok(())
    }

    /// Bytes held for all sources (what the call cost in memory).
    #[wasm_bindgen(js_name = bytesHeld)]
    pub fn bytes_held(&self) -> u64 {
        self.sources.iter().map(|s| s.lock().bytes).fold(0, u64::saturating_add)
    }

    /// Names source `source` (what reports call it; a model paired with a
    /// projector is named by it).
    pub fn name(&mut self, source: usize, name: &str) -> Result<(), JsError> {
        let n = self.sources.len();
        let slot = self.names.get_mut(source).ok_or_else(|| js_error(format!("no source {source} of {n}")))?;
        *slot = name.to_string();
        Ok(())
    }

    /// Validates source `source`. A projector, adapter or control vector
    /// is paired with the models `with` (source numbers), else with the
    /// models among `folder` (the files given together, as the files of a
    /// folder are). JSON: `{"need": [[source, offset, length], ...]}` when
    /// bytes not read yet are wanted (read them, `supply` them, call
    /// again), else `{"entry": ...}`, the command line's JSON entry.
    pub fn validate(
        &self,
        source: usize,
        with: Vec<usize>,
        folder: Vec<usize>,
        options: &str,
    ) -> Result<String, JsError> {
        let o = run_options(options)?;
        let input = self.input(source)?;
        let inputs = |ns: &[usize]| ns.iter().map(|n| self.input(*n)).collect::<Result<Vec<_>, _>>();
        let (with, folder) = (inputs(&with)?, inputs(&folder)?);
        self.begin_round();
        let settings = Settings {
            validator: o.validator(),
            with,
            folder: (!folder.is_empty()).then_some(folder),
            ..Settings::default()
        };
        let pipeline = Pipeline::new(settings);
        let mut v = pipeline.validate(&input);
        if let Some(need) = self.need() {
            return Ok(need);
        }
        // What a URL cost, in the summary, as the command line has it.
        let cost = self.source(source)?.cost.lock().unwrap_or_else(PoisonError::into_inner).clone();
        if let (Outcome::Report(r, _), Some(cost)) = (&mut v.outcome, cost) {
            r.summary.remote = Some(cost);
        }
        let name = input.json_name();
        let entry = json::file(&name, &v.outcome, o.profile, None);
        // The fixes `fix` would make (safe ones), planned from this parse:
        // no read of the tensor data.
        let fixable = o.fixable.then(|| {
            let parsed = v.validated.as_ref().and_then(|val| val.parsed());
            match (&v.outcome, parsed) {
                (Outcome::Report(r, _), Some(p)) => json!(fix::plan(&p, &r.diagnostics, false).fixes),
                _ => json!([]),
            }
        });
        *self.last.borrow_mut() = Some((name, v.outcome));
        // What the metadata says besides the report (`general.file_type`, the
        // chat templates' SHA-256), from the validation's own parse.
        let facts = o.facts.then(|| {
            let f = v.validated.as_ref().map(scan::facts).unwrap_or_default();
            json!({ "file_type": f.file_type, "templates": f.templates })
        });
        Ok(json!({ "entry": entry, "facts": facts, "fixable": fixable }).to_string())
    }

    /// `dump`'s JSON of source `source` (`full`: every array element):
    /// `{"need": ...}` as for [`Reads::validate`], else `{"dump": ...,
    /// "complete": bool}` or `{"error": ..., "kind": "unreadable" | "invalid"}`.
    pub fn dump(&self, source: usize, full: bool) -> Result<String, JsError> {
        let input = self.input(source)?;
        self.begin_round();
        let out = dump(&input, full, None, None);
        if let Some(need) = self.need() {
            return Ok(need);
        }
        Ok(match out {
            Ok((v, complete)) => json!({ "dump": v, "complete": complete }),
            Err(DumpError::Unreadable(e)) => json!({ "error": e, "kind": "unreadable" }),
            Err(DumpError::NotGguf(e)) => json!({ "error": e, "kind": "invalid" }),
        }
        .to_string())
    }
}

impl Reads {
    fn source(&self, n: usize) -> Result<&Arc<Pieces>, JsError> {
        self.sources.get(n).ok_or_else(|| js_error(format!("no source {n}")))
    }

    fn input(&self, n: usize) -> Result<Input, JsError> {
        let s = Arc::clone(self.source(n)?);
        let name = self.names.get(n).cloned().unwrap_or_default();
        Ok(Input::Source { name, source: SharedSource(s) })
    }

    fn begin_round(&self) {
        for s in &self.sources {
            s.lock().missing.clear();
        }
    }

    /// The ranges the round wanted and did not have, merged per source.
    fn need(&self) -> Option<String> {
        let mut need = Vec::new();
        for (i, s) in self.sources.iter().enumerate() {
            let mut missing = std::mem::take(&mut s.lock().missing);
            missing.sort_unstable();
            missing.dedup();
            for (offset, len) in missing {
                need.push(json!([i, offset, len]));
            }
        }
        (!need.is_empty()).then(|| json!({ "need": need }).to_string())
    }
}

/// A run of several files held in memory, rendered in any output format
/// (the page's downloads: JSON, SARIF, ...): the command line's output for
/// the same files.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Run {
    profile: Profile,
    files: Vec<(Input, Outcome)>,
}

#[wasm_bindgen]
impl Run {
    /// An empty run under the options' profile.
    #[wasm_bindgen(constructor)]
    pub fn new(options: &str) -> Result<Run, JsError> {
        Ok(Run { profile: run_options(options)?.profile, files: Vec::new() })
    }

    /// Files in the run.
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> usize {
        self.files.len()
    }

    /// Adds the file `reads` validated last (nothing when none finished).
    pub fn add(&mut self, reads: &Reads) {
        if let Some((name, outcome)) = reads.last.borrow_mut().take() {
            // Only the name is kept: the run's output names each file.
            self.files.push((Input::bytes(name, Vec::new()), outcome));
        }
    }

    /// Adds a file that could not be read.
    #[wasm_bindgen(js_name = addUnreadable)]
    pub fn add_unreadable(&mut self, name: &str, error: &str) {
        self.files.push((Input::bytes(name, Vec::new()), Outcome::Unreadable(error.to_string())));
    }

    /// The run's output in `format` (`json`, `jsonl`, `sarif`, `junit`,
    /// `github`, `human`).
    pub fn render(&self, format: &str) -> Result<String, JsError> {
        let f = Format::ALL.into_iter().find(|f| f.name() == format).ok_or_else(|| {
            js_error(format!("format `{format}`: expected json, jsonl, sarif, junit, github or human"))
        })?;
        Ok(render(f, self.profile, &self.files))
    }
}

/// The JSON entry of a file that could not be read (`error`), as the
/// command line writes it.
#[wasm_bindgen(js_name = unreadableEntry)]
pub fn unreadable_entry(name: &str, error: &str, options: &str) -> Result<String, JsError> {
    let o = run_options(options)?;
    Ok(json::file(name, &Outcome::Unreadable(error.to_string()), o.profile, None).to_string())
}

/// A file's bytes gathered in the module's memory for [`fix_file`], piece
/// by piece: JavaScript reads a `Blob` a slice at a time and never holds
/// it whole.
#[wasm_bindgen]
#[derive(Debug)]
pub struct FixInput {
    bytes: Vec<u8>,
    len: usize,
}

#[wasm_bindgen]
impl FixInput {
    /// Room for a file of `len` bytes (refused when the memory cannot hold it).
    #[wasm_bindgen(constructor)]
    pub fn new(len: usize) -> Result<FixInput, JsError> {
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(len).map_err(|_| js_error(format!("{len} bytes do not fit in memory here")))?;
        Ok(FixInput { bytes, len })
    }

    /// Appends the file's next bytes.
    pub fn push(&mut self, piece: &[u8]) -> Result<(), JsError> {
        if self.bytes.len().checked_add(piece.len()).is_none_or(|end| end > self.len) {
            return Err(js_error(format!("more than the {} bytes announced", self.len)));
        }
        self.bytes.extend_from_slice(piece);
        Ok(())
    }
}

/// A file fixed in memory ([`fix_file`]): the fixed bytes and what was done.
#[wasm_bindgen]
#[derive(Debug)]
pub struct FixResult {
    bytes: Vec<u8>,
    json: String,
}

#[wasm_bindgen]
impl FixResult {
    /// What was done (JSON): `{"error": ..., "kind": "invalid"}` when the
    /// file cannot be fixed, else [`fix::FixedBytes::json`] (`valid`: the
    /// fixed file's verdict, `fixes`: each finding's fix, held-back unsafe
    /// ones with `applied` false, `changes`, `before` and `report`: the
    /// reports before and after, `tensor_data`: the tensor data's SHA-256
    /// before and after) and `changed` (false: the fixed file is the
    /// input's bytes).
    #[wasm_bindgen(getter)]
    pub fn json(&self) -> String {
        self.json.clone()
    }

    /// The fixed file's length (0 when nothing changed).
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> usize {
        self.bytes.len()
    }

    /// `len` bytes of the fixed file at `offset` (fewer at its end), so that
    /// JavaScript copies it out a piece at a time.
    pub fn read(&self, offset: usize, len: usize) -> Vec<u8> {
        let end = offset.saturating_add(len).min(self.bytes.len());
        self.bytes.get(offset..end).map(<[u8]>::to_vec).unwrap_or_default()
    }
}

/// Fixes the findings of the file `input` (validated under `options`, as
/// [`Reads::validate`] takes them): safe fixes, unsafe ones too when
/// `allow_unsafe`; the result validated again.
#[wasm_bindgen(js_name = fix)]
pub fn fix_file(input: &FixInput, options: &str, allow_unsafe: bool) -> Result<FixResult, JsError> {
    if input.bytes.len() != input.len {
        return Err(js_error(format!("{} of the {} bytes announced were given", input.bytes.len(), input.len)));
    }
    fix_slice(&input.bytes, options, allow_unsafe)
}

fn fix_slice(data: &[u8], options: &str, allow_unsafe: bool) -> Result<FixResult, JsError> {
    let o = run_options(options)?;
    let fixed = match fix::fix_bytes(data, &o.validator(), allow_unsafe) {
        Ok(f) => f,
        Err(e) => {
            let json = json!({ "error": e.to_string(), "kind": "invalid" }).to_string();
            return Ok(FixResult { bytes: Vec::new(), json });
        }
    };
    // The document the Python package gives too, and whether the bytes changed.
    let changed = fixed.changed;
    let mut doc = fixed.json();
    if let Some(m) = doc.as_object_mut() {
        m.insert("changed".into(), json!(changed));
    }
    Ok(FixResult { bytes: if changed { fixed.bytes } else { Vec::new() }, json: doc.to_string() })
}

/// The rule catalogue, as `gguf-validate rules --format json` prints it.
#[wasm_bindgen]
pub fn rules() -> String {
    serde_json::Value::Array(gguf_validate_core::rules::catalogue_rows()).to_string()
}

/// The limits of remote reads the native reader keeps, for the package's
/// `fetch` loop (JSON).
#[wasm_bindgen(js_name = remoteLimits)]
pub fn remote_limits() -> String {
    json!({
        "firstRead": limits::REMOTE_FIRST_READ,
        "localFirstRead": limits::METADATA_FIRST_READ,
        "retries": limits::REMOTE_RETRIES,
        "timeoutRetries": limits::REMOTE_TIMEOUT_RETRIES,
        "backoffMs": limits::REMOTE_BACKOFF_MS,
        "maxBackoffMs": limits::REMOTE_MAX_BACKOFF_MS,
        "timeoutSecs": limits::REMOTE_TIMEOUT_SECS,
        "fileDeadlineSecs": limits::REMOTE_FILE_DEADLINE_SECS,
        "maxRetryAfterSecs": limits::REMOTE_MAX_RETRY_AFTER_SECS,
        "maxReadBytes": limits::MAX_METADATA_BYTES,
    })
    .to_string()
}

/// The URL to read for `input` (`hf://ORG/REPO/FILE[@REV]` to the Hub's
/// resolve URL) and the name reports show (query redacted), as JSON
/// `{"url": ..., "shown": ...}`.
#[wasm_bindgen(js_name = resolveUrl)]
pub fn resolve_url(input: &str) -> Result<String, JsError> {
    let target = remote::resolve(input, None).map_err(js_error)?;
    Ok(json!({ "url": target.url.as_request(), "shown": remote::shown(input), "hub": target.hub }).to_string())
}

fn ggml_type(name: &str) -> Result<GgmlType, JsError> {
    GgmlType::from_name(name).ok_or_else(|| js_error(format!("ggml type `{name}`: see ggmlTypes()")))
}

/// Every ggml type: `[{name, id, blockSize, typeSize}]` (JSON).
#[wasm_bindgen(js_name = ggmlTypes)]
pub fn ggml_types() -> String {
    let rows: Vec<_> = gguf_numerics::GGML_TYPES
        .iter()
        .map(|t| json!({ "name": t.name, "id": t.id, "blockSize": t.block_size, "typeSize": t.type_size }))
        .collect();
    serde_json::Value::Array(rows).to_string()
}

/// Blocks of `type_name` to float32, bit-exact with ggml.
pub fn dequantize_blocks(type_name: &str, data: &[u8]) -> Result<Vec<f32>, JsError> {
    gguf_numerics::dequantize_to_vec(ggml_type(type_name)?, data).map_err(js_error)
}

/// [`dequantize_blocks`] for JavaScript (a `Float32Array`).
#[wasm_bindgen]
pub fn dequantize(type_name: &str, data: &[u8]) -> Result<Vec<f32>, JsError> {
    dequantize_blocks(type_name, data)
}

/// Float32 values to blocks of `type_name`, through
/// `gguf_numerics::quantize_tensor` (the command line's `quantize`):
/// `n_per_row` values per row (default: the importance matrix's row, or the
/// whole input), `imatrix` weights per column for each of `experts` slices
/// (default 1), `reference` `chunk` (default, `ggml_quantize_chunk`) or `row`.
pub fn quantize_values(
    type_name: &str,
    data: &[f32],
    n_per_row: Option<usize>,
    imatrix: Option<&[f32]>,
    reference: Option<&str>,
    experts: Option<usize>,
) -> Result<Vec<u8>, JsError> {
    let ty = ggml_type(type_name)?;
    let reference = match reference {
        None => gguf_numerics::Reference::Chunk,
        Some(name) => gguf_numerics::Reference::from_name(name)
            .ok_or_else(|| js_error(format!("reference `{name}`: expected `chunk` or `row`")))?,
    };
    let opts = gguf_numerics::QuantizeOptions { reference, n_per_row, imatrix, experts: experts.unwrap_or(1) };
    let mut dst = Vec::new();
    gguf_numerics::quantize_tensor(ty, data, &opts, &mut dst).map_err(js_error)?;
    Ok(dst)
}

/// [`quantize_values`] for JavaScript (a `Uint8Array`).
#[wasm_bindgen]
pub fn quantize(
    type_name: &str,
    data: &[f32],
    n_per_row: Option<usize>,
    imatrix: Option<Vec<f32>>,
    reference: Option<String>,
    experts: Option<usize>,
) -> Result<Vec<u8>, JsError> {
    quantize_values(type_name, data, n_per_row, imatrix.as_deref(), reference.as_deref(), experts)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn held_ranges_merge_and_serve_reads_inside_one_range() {
        let mut h = Held::default();
        assert!(h.insert(10, &[1, 2, 3]).is_ok());
        assert!(h.insert(20, &[9]).is_ok());
        assert!(h.insert(13, &[4, 5, 6, 7, 8, 0, 0]).is_ok());
        assert_eq!(h.ranges.len(), 1, "{:?}", h.ranges);
        let mut buf = [0u8; 5];
        assert!(h.copy(12, &mut buf));
        assert_eq!(buf, [3, 4, 5, 6, 7]);
        assert!(!h.copy(18, &mut [0u8; 4]), "past the held bytes");
        assert!(!h.copy(5, &mut [0u8; 2]), "before them");
        assert_eq!(h.bytes, 11);
        // Overlapping from before, with a gap kept apart.
        assert!(h.insert(8, &[7, 7, 1]).is_ok());
        assert!(h.insert(40, &[1]).is_ok());
        assert_eq!(h.ranges.keys().copied().collect::<Vec<_>>(), [8, 40]);
        assert_eq!(h.bytes, 14);
    }

    #[test]
    fn a_file_read_in_rounds_gets_the_report_of_the_whole_file() {
        let Ok(bytes) = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../corpus/samples/tiny-llama.gguf"))
        else {
            return;
        };
        let mut reads = Reads::new();
        let n = reads.add_source(u64::try_from(bytes.len()).unwrap_or(0), false);
        assert!(reads.name(n, "m.gguf").is_ok());
        let mut rounds = 0;
        let entry = loop {
            rounds += 1;
            assert!(rounds < 16, "too many rounds");
            let out: serde_json::Value =
                serde_json::from_str(&reads.validate(n, Vec::new(), Vec::new(), "{}").unwrap_or_default())
                    .unwrap_or_default();
            let Some(need) = out.get("need").and_then(|n| n.as_array()) else {
                break out["entry"].clone();
            };
            for r in need {
                let (o, l) = (r[1].as_u64().unwrap_or(0), r[2].as_u64().unwrap_or(0));
                let (o, l) = (usize::try_from(o).unwrap_or(0), usize::try_from(l).unwrap_or(0));
                assert!(reads.supply(n, r[1].as_u64().unwrap_or(0), &bytes[o..o + l]).is_ok());
            }
        };
        let whole = gguf_validate_core::pipeline::json::file(
            "m.gguf",
            &Outcome::Report(Box::new(Validator::new(Options::default()).validate_bytes(&bytes).report), None),
            Profile::Strict,
            None,
        );
        assert_eq!(entry["diagnostics"], whole["diagnostics"]);
        assert_eq!(entry["summary"]["tensor_count"], whole["summary"]["tensor_count"]);
        assert!(reads.bytes_held() <= u64::try_from(bytes.len()).unwrap_or(0));
    }

    #[test]
    fn fix_gives_the_corpus_fixed_file_and_the_planned_fixes() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../corpus/fixes/");
        let (Ok(broken), Ok(want)) = (
            std::fs::read(format!("{dir}trailing_bytes.gguf")),
            std::fs::read(format!("{dir}trailing_bytes.fixed.gguf")),
        ) else {
            return;
        };
        let Ok(mut input) = FixInput::new(broken.len()) else { panic!("no room") };
        for piece in broken.chunks(1000) {
            assert!(input.push(piece).is_ok());
        }
        let Ok(out) = fix_file(&input, "{}", false) else { panic!("fix refused its options") };
        let doc: serde_json::Value = serde_json::from_str(&out.json()).unwrap_or_default();
        assert_eq!(doc["changed"], true);
        assert_eq!(doc["valid"], true);
        assert_eq!(doc["fixes"][0]["rule"], "trailing-bytes");
        assert_eq!(doc["tensor_data"]["unchanged"], true);
        assert_eq!(out.length(), want.len());
        let pieces: Vec<u8> = (0..want.len()).step_by(4096).flat_map(|at| out.read(at, 4096)).collect();
        assert!(pieces == want);
        assert!(out.read(want.len(), 10).is_empty() && out.read(usize::MAX, usize::MAX).is_empty());
        // A validation plans the same fixes from the metadata alone.
        let mut reads = Reads::new();
        let n = reads.add_source(u64::try_from(broken.len()).unwrap_or(0), false);
        assert!(reads.supply(n, 0, &broken).is_ok());
        let planned: serde_json::Value =
            serde_json::from_str(&reads.validate(n, Vec::new(), Vec::new(), r#"{"fixable":true}"#).unwrap_or_default())
                .unwrap_or_default();
        assert_eq!(planned["fixable"], doc["fixes"]);
        // Nothing to fix: no bytes come back, `changed` is false.
        let Ok(same) = fix_slice(&want, "{}", false) else { panic!("fix refused its options") };
        assert_eq!(same.length(), 0);
        assert!(same.json().contains(r#""changed":false"#));
        let Ok(not_gguf) = fix_slice(b"nope", "{}", false) else { panic!("fix refused its options") };
        assert!(not_gguf.json().contains(r#""kind":"invalid""#));
    }
}
