//! `gguf_validate._native`: the extension module of the `gguf-validate`
//! wheel. It is a thin layer: every call goes to the library's pipeline
//! (`dump`, `derive`, `hash`, the rule rows), the numerics or the harness's
//! writer fuzzer, with the GIL released while Rust works. The command line
//! is not in it: the wheel ships the CLI crate's own binary as its
//! `gguf-validate` script (parser/python/cli-binary.sh), so this crate
//! links no clap, indicatif or ignore.
//! Results cross as JSON text (the same JSON the command line prints) or
//! NumPy arrays; the Python package `gguf_validate` wraps them in typed
//! classes and raises its own exceptions (`gguf_validate._errors`), so
//! everything a caller sees is picklable.
//!
//! Like every crate of the workspace, `#![forbid(unsafe_code)]`: pyo3
//! 0.30's macros expand without `unsafe` in this crate, the buffer is
//! copied with `PyBuffer::to_vec` and NumPy arrays are read through
//! `PyReadonlyArray::as_slice` (both safe).
#![forbid(unsafe_code)]

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gguf_numerics::{GgmlType, TypeStatus};
use gguf_validate_core::config::Config;
use gguf_validate_core::data_scan::{DEFAULT_MAX_LISTED_PER_TENSOR, DataOptions};
use gguf_validate_core::hash::{Algo, Algos, HashOptions};
use gguf_validate_core::limits::MetadataLimits;
use gguf_validate_core::llama_cpp::Releases;
use gguf_validate_core::loader::Loader;
use gguf_validate_core::pipeline::{Input, Item, Outcome, Pipeline, Settings};
use gguf_validate_core::remote::UrlOpener;
use gguf_validate_core::rewrite::Request;
use gguf_validate_core::rules::Profile;
use gguf_validate_core::{Options, Validator};
use gguf_validate_http::{HttpOptions, Opener};
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyStopIteration;
use pyo3::prelude::*;

mod scan;

/// What goes wrong, as the Python package's exceptions name it: a kind
/// (`usage`, `unreadable`) and a message. The package raises
/// `UsageError`/`UnreadableError` from it.
fn failure(kind: &str, message: impl Into<String>) -> PyErr {
    pyo3::exceptions::PyValueError::new_err((kind.to_string(), message.into()))
}

fn usage(message: impl Into<String>) -> PyErr {
    failure("usage", message)
}

fn unreadable(message: impl Into<String>) -> PyErr {
    failure("unreadable", message)
}

/// A source as the package passes it: a path or URL, or bytes (a
/// one-byte-item buffer: the package casts other buffers to bytes).
#[derive(FromPyObject)]
enum Source {
    Path(PathBuf),
    Bytes(PyBuffer<u8>),
}

impl Source {
    fn input(&self, py: Python<'_>) -> PyResult<Input> {
        match self {
            Source::Path(p) => Ok(Input::from_path(p.clone())),
            Source::Bytes(b) => Ok(Input::bytes("<bytes>", b.to_vec(py)?)),
        }
    }
}

/// The HTTP settings of a call that may read URLs: items of the options
/// dict the package builds (`gguf_validate._options`).
#[derive(Clone, Debug, FromPyObject)]
#[pyo3(from_item_all)]
struct HttpArgs {
    headers: Vec<(String, String)>,
    ca_certs: Vec<PathBuf>,
    http_timeout: Option<f64>,
}

impl HttpArgs {
    /// The URL opener for `inputs`, only when one of them is a URL (as the
    /// command line does), `connections` per host.
    fn opener<'a>(
        &self,
        inputs: impl IntoIterator<Item = &'a Input>,
        connections: usize,
    ) -> PyResult<Option<Arc<dyn UrlOpener>>> {
        if !inputs.into_iter().any(|i| i.url().is_some()) {
            return Ok(None);
        }
        let mut http = HttpOptions { headers: self.headers.clone(), connections, ..HttpOptions::default() };
        if let Some(t) =
            self.http_timeout.filter(|t| t.is_finite() && *t > 0.0).and_then(|t| Duration::try_from_secs_f64(t).ok())
        {
            http.timeout = t;
            http.request_deadline = http.timeout;
        }
        Ok(Some(Arc::new(Opener::from_env(http, &self.ca_certs).map_err(usage)?)))
    }
}

/// A run's settings: the options dict the package builds from the keyword
/// arguments of `validate` / `validate_many` (one definition, shared by
/// both; the HTTP items are read as [`HttpArgs`]).
#[derive(Clone, Debug, FromPyObject)]
#[pyo3(from_item_all)]
struct RunOptions {
    profile: Option<String>,
    check_data: bool,
    container_only: bool,
    config: Option<PathBuf>,
    discover_config: bool,
    deny_warnings: bool,
    timeout: Option<f64>,
    with_models: Vec<String>,
    llama_cpp: Option<String>,
    loader: Option<String>,
}

/// A time limit in seconds (`timeout=`): a positive number a `Duration`
/// holds, or none.
fn time_limit(seconds: Option<f64>) -> PyResult<Option<Duration>> {
    match seconds {
        None => Ok(None),
        Some(t) => match Duration::try_from_secs_f64(t) {
            Ok(d) if t > 0.0 => Ok(Some(d)),
            _ => Err(usage(format!("timeout {t}: a positive number of seconds"))),
        },
    }
}

/// The pipeline of a run, as the command line's `validate` builds it
/// (config, profile, options, URL opener only when an input is a URL).
fn pipeline(o: &RunOptions, http: &HttpArgs, inputs: &[Input], jobs: usize) -> PyResult<(Pipeline, Profile)> {
    let config = Config::for_run(o.config.as_deref(), o.discover_config).map_err(usage)?;
    let profile = match &o.profile {
        Some(name) => profile_named(name)?,
        None => config.as_ref().and_then(|c| c.profile).unwrap_or_default(),
    };
    let timeout = time_limit(o.timeout)?;
    let with: Vec<Input> = o.with_models.iter().map(|m| Input::from_path(PathBuf::from(m))).collect();
    let options = Options {
        profile,
        overrides: Vec::new(),
        deny_warnings: o.deny_warnings || config.as_ref().and_then(|c| c.deny_warnings).unwrap_or(false),
        container_only: o.container_only || config.as_ref().and_then(|c| c.container_only).unwrap_or(false),
        limits: MetadataLimits::default(),
    };
    // Under `--container-only` nothing after the report is needed.
    let report_only = options.container_only;
    // `llama_cpp=` over the config's `llama-cpp`.
    let llama_cpp = match o.llama_cpp.as_deref().map(str::parse::<Releases>).transpose() {
        Ok(r) => r.or_else(|| config.as_ref().and_then(|c| c.llama_cpp)),
        Err(e) => return Err(usage(format!("llama_cpp: {e}"))),
    };
    // `loader=` over the config's `loader`.
    let loader = match o.loader.as_deref().map(str::parse::<Loader>).transpose() {
        Ok(l) => l.or_else(|| config.as_ref().and_then(|c| c.loader)),
        Err(e) => return Err(usage(format!("loader: {e}"))),
    };
    let settings = Settings {
        validator: Validator::new(options).with_llama_cpp(llama_cpp).with_loader(loader).report_only(report_only),
        check_data: o.check_data.then(|| DataOptions::listing(DEFAULT_MAX_LISTED_PER_TENSOR)),
        timeout,
        metadata_hash: config.as_ref().is_some_and(Config::has_pins),
        opener: http.opener(&[inputs, with.as_slice()].concat(), jobs)?,
        with,
        ..Settings::default()
    };
    Ok((Pipeline { settings, config, ..Pipeline::default() }, profile))
}

fn profile_named(name: &str) -> PyResult<Profile> {
    Profile::ALL
        .into_iter()
        .find(|p| p.name() == name)
        .ok_or_else(|| usage(format!("profile `{name}`: expected `strict`, `spec` or `ggml`")))
}

/// One entry of a run: its kind (`file`, `unreadable` or `set`, a split
/// set's own entry after its shards') and its JSON (`pipeline::json`), the
/// command line's entry.
type Entry = (&'static str, String);

fn file_entry(input: &Input, outcome: &Outcome, profile: Profile, set: Option<&str>) -> Entry {
    let kind = if matches!(outcome, Outcome::Unreadable(_)) { "unreadable" } else { "file" };
    (kind, gguf_validate_core::pipeline::json::file(&input.json_name(), outcome, profile, set).to_string())
}

#[pyfunction]
fn validate(py: Python<'_>, source: Source, options: &Bound<'_, PyAny>) -> PyResult<Entry> {
    let (o, http): (RunOptions, HttpArgs) = (options.extract()?, options.extract()?);
    let input = source.input(py)?;
    py.detach(|| {
        let (p, profile) = pipeline(&o, &http, std::slice::from_ref(&input), 1)?;
        let v = p.validate(&input);
        Ok(file_entry(&input, &v.outcome, profile, None))
    })
}

/// The results of `validate_many`, in input order, as the pipeline's
/// worker thread produces them (at most `2 * jobs` ahead of the reader).
#[pyclass(module = "gguf_validate._native")]
struct Results {
    rx: Mutex<Receiver<PyResult<Entry>>>,
}

#[pymethods]
impl Results {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Entry> {
        let next = py.detach(|| self.rx.lock().map(|rx| rx.recv().ok()).unwrap_or(None));
        next.unwrap_or_else(|| Err(PyStopIteration::new_err(())))
    }
}

#[pyfunction]
fn validate_many(py: Python<'_>, sources: Vec<Source>, jobs: usize, options: &Bound<'_, PyAny>) -> PyResult<Results> {
    let (o, http): (RunOptions, HttpArgs) = (options.extract()?, options.extract()?);
    let inputs = sources.iter().map(|s| s.input(py)).collect::<PyResult<Vec<Input>>>()?;
    let jobs = jobs.max(1);
    let (p, profile) = py.detach(|| pipeline(&o, &http, &inputs, jobs))?;
    let (tx, rx): (SyncSender<PyResult<Entry>>, _) = sync_channel(jobs.saturating_mul(2));
    std::thread::spawn(move || {
        // A reader that went away (the iterator dropped) stops the run.
        let _ = p.run::<()>(&inputs, jobs, |item| {
            let e = match item {
                Item::File { input, outcome, set, .. } => file_entry(input, outcome, profile, set),
                Item::Set(set) => ("set", gguf_validate_core::pipeline::json::set(set).to_string()),
            };
            if tx.send(Ok(e)).is_ok() { ControlFlow::Continue(()) } else { ControlFlow::Break(()) }
        });
    });
    Ok(Results { rx: Mutex::new(rx) })
}

/// The rule catalogue, as `gguf-validate rules --format json` prints it.
#[pyfunction]
fn rules() -> String {
    serde_json::Value::Array(gguf_validate_core::rules::catalogue_rows()).to_string()
}

/// `dump`'s JSON and whether the file was read completely.
#[pyfunction]
#[pyo3(signature = (source, full, http, timeout=None))]
fn dump(py: Python<'_>, source: Source, full: bool, http: HttpArgs, timeout: Option<f64>) -> PyResult<(String, bool)> {
    use gguf_validate_core::pipeline::commands::{DumpError, dump};
    let input = source.input(py)?;
    let limit = time_limit(timeout)?;
    py.detach(|| {
        let opener = http.opener([&input], 1)?;
        match dump(&input, full, opener.as_deref(), limit) {
            Ok((v, complete)) => Ok((v.to_string(), complete)),
            Err(DumpError::Unreadable(e)) => Err(unreadable(e)),
            Err(DumpError::NotGguf(e)) => Err(failure("invalid", e)),
        }
    })
}

/// `derive`'s per-tensor results as JSON.
#[pyfunction]
#[pyo3(signature = (base, quant, imatrix, http, timeout=None))]
fn derive(
    py: Python<'_>,
    base: Source,
    quant: Source,
    imatrix: Option<Source>,
    http: HttpArgs,
    timeout: Option<f64>,
) -> PyResult<String> {
    let (base, quant) = (base.input(py)?, quant.input(py)?);
    let imatrix = imatrix.map(|s| s.input(py)).transpose()?;
    let limit = time_limit(timeout)?;
    py.detach(|| {
        let opener = http.opener([&base, &quant].into_iter().chain(imatrix.as_ref()), 2)?;
        let results =
            gguf_validate_core::pipeline::commands::derive(&base, &quant, imatrix.as_ref(), opener.as_deref(), limit)
                .map_err(unreadable)?;
        serde_json::to_string(&results).map_err(|e| unreadable(e.to_string()))
    })
}

/// The digest of a model's tensor data (llama-gguf-hash's model line: a
/// shard stands for its split set, as the command line has it), and per
/// tensor when asked.
#[pyfunction]
#[pyo3(signature = (source, algo, per_tensor, http, timeout=None))]
fn hash(
    py: Python<'_>,
    source: Source,
    algo: &str,
    per_tensor: bool,
    http: HttpArgs,
    timeout: Option<f64>,
) -> PyResult<(String, Vec<(String, String)>)> {
    let limit = time_limit(timeout)?;
    let algo = Algo::from_name(algo).ok_or_else(|| {
        usage(format!(
            "algorithm `{algo}`: expected one of {}",
            Algo::ALL.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ")
        ))
    })?;
    let input = source.input(py)?;
    py.detach(|| {
        let connections = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        let opener = http.opener([&input], connections)?;
        let opts = HashOptions { algos: Algos::NONE.with(algo), per_tensor };
        let (_, d) =
            gguf_validate_core::pipeline::commands::model_digests(&input, false, &opts, opener.as_deref(), limit)
                .map_err(unreadable)?;
        let model = d.model.first().map(ToString::to_string).unwrap_or_default();
        let per = d.tensors.iter().filter_map(|t| Some((t.name.clone(), t.digests.first()?.to_string()))).collect();
        Ok((model, per))
    })
}

fn ggml_type(name: &str) -> PyResult<GgmlType> {
    GgmlType::from_name(name).ok_or_else(|| usage(format!("ggml type `{name}`: see ggml_types()")))
}

/// `(name, id, block_size, type_size, status)` of every ggml type id.
#[pyfunction]
fn ggml_types() -> Vec<(&'static str, u32, u32, u32, &'static str)> {
    gguf_numerics::GGML_TYPES
        .iter()
        .map(|t| {
            let status = match t.status {
                TypeStatus::Live => "live",
                TypeStatus::Removed => "removed",
                _ => "intermediate",
            };
            (t.name, t.id, t.block_size, t.type_size, status)
        })
        .collect()
}

/// Blocks of `ggml_type` to float32 (zero-copy input).
#[pyfunction]
fn dequantize<'py>(
    py: Python<'py>,
    ggml_type_name: &str,
    data: PyReadonlyArray1<'py, u8>,
) -> PyResult<Bound<'py, PyArray1<f32>>> {
    let ty = ggml_type(ggml_type_name)?;
    let src = data.as_slice().map_err(|e| usage(e.to_string()))?;
    let out = py.detach(|| gguf_numerics::dequantize_to_vec(ty, src)).map_err(|e| usage(e.to_string()))?;
    Ok(PyArray1::from_vec(py, out))
}

/// Float32 values to blocks of `ggml_type`, through
/// `gguf_numerics::quantize_tensor` (the command line's `quantize`):
/// `n_per_row` values per row (default: the importance matrix's row, or
/// the whole input), `imatrix` weights per column for each of `experts`
/// slices, `reference` `chunk` (`ggml_quantize_chunk`) or `row`.
#[pyfunction]
#[pyo3(signature = (ggml_type_name, data, n_per_row=None, imatrix=None, reference="chunk", experts=1))]
fn quantize<'py>(
    py: Python<'py>,
    ggml_type_name: &str,
    data: PyReadonlyArray1<'py, f32>,
    n_per_row: Option<usize>,
    imatrix: Option<PyReadonlyArray1<'py, f32>>,
    reference: &str,
    experts: usize,
) -> PyResult<Bound<'py, PyArray1<u8>>> {
    let ty = ggml_type(ggml_type_name)?;
    let reference = gguf_numerics::Reference::from_name(reference)
        .ok_or_else(|| usage(format!("reference `{reference}`: expected `chunk` or `row`")))?;
    let src = data.as_slice().map_err(|e| usage(e.to_string()))?;
    let weights = imatrix.as_ref().map(|w| w.as_slice()).transpose().map_err(|e| usage(e.to_string()))?;
    let opts = gguf_numerics::QuantizeOptions { reference, n_per_row, imatrix: weights, experts };
    let out = py
        .detach(|| {
            let mut dst = Vec::new();
            gguf_numerics::quantize_tensor(ty, src, &opts, &mut dst).map(|()| dst)
        })
        .map_err(|e| usage(e.to_string()))?;
    Ok(PyArray1::from_vec(py, out))
}

/// A writer fuzzing campaign against a Python callable
/// `write(model_json_path, out_path)`; the report as JSON and its text.
#[pyfunction]
#[pyo3(signature = (write, cases, seed, profile, work_dir, findings_dir=None))]
fn fuzz_writer(
    py: Python<'_>,
    write: Py<PyAny>,
    cases: u64,
    seed: u64,
    profile: &str,
    work_dir: PathBuf,
    findings_dir: Option<PathBuf>,
) -> PyResult<(String, String)> {
    use gguf_validate_harness::process::RunOutcome;
    use gguf_validate_harness::writer::{CampaignOptions, FnWriter, campaign_text, run_campaign};
    let profile = profile_named(profile)?;
    let opts = CampaignOptions {
        cases,
        seed,
        time: None,
        profile,
        caps: Default::default(),
        shrink: Default::default(),
        work_dir,
        findings_dir,
    };
    let name = write.bind(py).repr().map(|r| r.to_string()).unwrap_or_else(|_| "python writer".into());
    // The writer is Python: each call takes the GIL, the rest runs without.
    let call = |model: &Path, out: &Path| -> RunOutcome {
        Python::attach(|py| match write.call1(py, (model, out)) {
            Ok(_) => RunOutcome::Success,
            Err(e) => RunOutcome::Failed { code: None, stderr: e.to_string() },
        })
    };
    let mut w = FnWriter { name, f: call };
    let report = py.detach(|| run_campaign(&mut w, &opts, &mut |_| {})).map_err(|e| usage(e.0))?;
    let json = serde_json::to_string(&report).map_err(|e| usage(e.to_string()))?;
    Ok((json, campaign_text(&report, true)))
}

/// A request of `edit` as the package passes it: (kind, a, b), kind one of
/// `set` (key, text), `remove` (key), `chat_template` (text),
/// `named_chat_template` (name, text),
/// `pre_tokenizer` (name), `special_token` (role, id or text).
fn request_of((kind, a, b): (String, String, String)) -> PyResult<Request> {
    Ok(match kind.as_str() {
        "set" => Request::Set { key: a, text: b },
        "remove" => Request::Remove { key: a },
        "chat_template" => Request::ChatTemplate(a),
        "named_chat_template" => Request::NamedChatTemplate { name: a, text: b },
        "pre_tokenizer" => Request::PreTokenizer(a),
        "special_token" => Request::SpecialToken { role: a, token: b },
        other => return Err(usage(format!("unknown edit `{other}`"))),
    })
}

/// `edit` and `fix`: with `requests`, the edit; without, the fixes
/// (`unsafe_fixes`, `dry_run`). A path is written to `output` (or in
/// place) by the command line's own `pipeline::commands::edit`, and its
/// JSON document returned; bytes are rewritten in memory and returned
/// with their document (`fix::fix_bytes`, `fix::edit_bytes`).
#[pyfunction]
#[pyo3(signature = (source, output, in_place, requests, unsafe_fixes, dry_run, force, options))]
#[allow(clippy::too_many_arguments)]
fn rewrite(
    py: Python<'_>,
    source: Source,
    output: Option<PathBuf>,
    in_place: bool,
    requests: Option<Vec<(String, String, String)>>,
    unsafe_fixes: bool,
    dry_run: bool,
    force: bool,
    options: &Bound<'_, PyAny>,
) -> PyResult<(String, Option<Vec<u8>>)> {
    use gguf_validate_core::pipeline::commands::{Edit, EditError, EditTarget, edit};
    let (o, http): (RunOptions, HttpArgs) = (options.extract()?, options.extract()?);
    let requests = requests.map(|r| r.into_iter().map(request_of).collect::<PyResult<Vec<Request>>>()).transpose()?;
    let input = source.input(py)?;
    let bytes = match &source {
        Source::Bytes(b) => Some(b.to_vec(py)?),
        Source::Path(_) => None,
    };
    py.detach(|| {
        let (p, _) = pipeline(&o, &http, std::slice::from_ref(&input), 1)?;
        let validator = p.settings.validator.clone();
        if let Some(bytes) = bytes {
            let done = match &requests {
                Some(r) => gguf_validate_core::fix::edit_bytes(&bytes, &validator, r),
                None => gguf_validate_core::fix::fix_bytes(&bytes, &validator, unsafe_fixes),
            };
            let done = done.map_err(|e| usage(e.to_string()))?;
            return Ok((done.json().to_string(), Some(done.bytes)));
        }
        let Some(path) = input.path().map(std::path::Path::to_path_buf) else {
            return Err(usage("edit and fix take a local path or bytes, not a URL"));
        };
        let (out, target) = match (&output, in_place || (dry_run && output.is_none())) {
            (_, true) => (path.clone(), EditTarget::InPlace),
            (Some(o), false) => (o.clone(), EditTarget::Other),
            (None, false) => return Err(usage("give output=, in_place=True or dry_run=True")),
        };
        let what = match &requests {
            Some(r) => Edit::Requests(r),
            None => Edit::Fixes { unsafe_fixes, dry_run },
        };
        match edit(&path, &out, target, what, &validator, force, None) {
            Ok(e) => Ok((e.json(&path, &out, target == EditTarget::InPlace).to_string(), None)),
            Err(EditError::Refused(m)) => Err(usage(format!("{m}; nothing was written"))),
            Err(EditError::Unreadable(m) | EditError::Write(m)) => Err(unreadable(m)),
        }
    })
}

/// The package version (the workspace's).
const VERSION: &str = env!("CARGO_PKG_VERSION");

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", VERSION)?;
    m.add_class::<Results>()?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(validate_many, m)?)?;
    m.add_function(wrap_pyfunction!(rules, m)?)?;
    m.add_function(wrap_pyfunction!(dump, m)?)?;
    m.add_function(wrap_pyfunction!(derive, m)?)?;
    m.add_function(wrap_pyfunction!(hash, m)?)?;
    m.add_function(wrap_pyfunction!(ggml_types, m)?)?;
    m.add_function(wrap_pyfunction!(dequantize, m)?)?;
    m.add_function(wrap_pyfunction!(quantize, m)?)?;
    m.add_function(wrap_pyfunction!(fuzz_writer, m)?)?;
    m.add_function(wrap_pyfunction!(rewrite, m)?)?;
    scan::register(m)?;
    Ok(())
}
