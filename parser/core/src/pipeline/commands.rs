//! The commands other than `validate`, each a function over [`Input`]s
//! opened at the front door ([`Input::open`]): `dump` (a file's header,
//! metadata and tensor table), `derive` (every tensor of a quant against
//! its base's) and `hash` (tensor-data digests of a model, a split set
//! hashed as one). The command line and the Python bindings render what
//! these return; nothing here prints.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::time::Duration;

use web_time::Instant;

use super::{Input, Opened, ScanProgress, TimeLimit, TimedSource};
use crate::derive::TensorResult;
use crate::hash::{HashOptions, ModelDigests, Part};
use crate::io::{ByteSource, OpenPolicy};
use crate::limits::MAX_SPLIT_SHARDS;
use crate::remote::UrlOpener;
use crate::split_name;
use crate::{Options, Validator};

/// Opens one input on its own under the default policy; a failure is a
/// message naming it.
fn open_named<'a>(
    input: &'a Input,
    opener: Option<&dyn UrlOpener>,
    deadline: Option<Instant>,
) -> Result<Opened<'a>, String> {
    input.open(&OpenPolicy::default(), opener, deadline).map_err(|f| format!("{}: {}", input.shown(), f.message))
}

/// Why a file has no dump: it could not be read, or it is not a GGUF
/// v2/v3 file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DumpError {
    /// The file could not be read (the message names it).
    Unreadable(String),
    /// Read, but not a GGUF v2/v3 file.
    NotGguf(String),
}

/// A file's header, metadata and tensor table as `dump` prints it, with
/// `path` (the input's JSON name) and `file_size`; and whether the file was
/// read completely. `full`: every array element, not a summary of long
/// arrays. `limit`: the time limit (the URL's open and every read).
pub fn dump(
    input: &Input,
    full: bool,
    opener: Option<&dyn UrlOpener>,
    limit: Option<Duration>,
) -> Result<(serde_json::Value, bool), DumpError> {
    let shown = input.shown();
    let limit = limit.map(TimeLimit::start);
    let opened = open_named(input, opener, limit.as_ref().map(TimeLimit::deadline)).map_err(DumpError::Unreadable)?;
    let src = TimedSource::new(opened.source(), limit.as_ref());
    let file_len = src.len();
    // The metadata read as validation reads it (sized reads, the caps);
    // only the container's checks run, whose report is not used (the
    // model, tokenizer and template layers would be work for nothing), and
    // the description comes from that validation's parse.
    let validated = Validator::new(Options { container_only: true, ..Options::default() })
        .validate(&src)
        .map_err(|e| DumpError::Unreadable(TimeLimit::explain(limit.as_ref(), &shown, &e)))?;
    let Some((mut value, complete)) = crate::dump::describe(&validated, full) else {
        return Err(DumpError::NotGguf(format!(
            "{shown}: not a GGUF v2/v3 file (run `gguf-validate` on it for details)"
        )));
    };
    if let Some(o) = value.as_object_mut() {
        o.insert("path".into(), serde_json::json!(input.json_name()));
        o.insert("file_size".into(), serde_json::json!(file_len));
    }
    Ok((value, complete))
}

/// Why `dump --tensor` has no data to give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TensorError {
    /// The file could not be read, or the time limit passed (the message
    /// names the file).
    Unreadable(String),
    /// The file has no tensor of that name with readable data, or its data
    /// cannot be decoded as asked (the message says which).
    Invalid(String),
}

/// One tensor's data located in an opened file (`dump --tensor`): write it
/// with [`TensorData::write`].
#[derive(Debug)]
pub struct TensorData<'a> {
    opened: Opened<'a>,
    limit: Option<TimeLimit>,
    shown: String,
    /// Where the data lies, its type and shape.
    pub tensor: crate::data::DataTensor,
}

/// Opens `input` and finds the tensor `name` (its metadata read and parsed
/// once, container checks only); `dequant` when it is to be decoded to
/// f32 (refused for quantized data of a big-endian file, which has no
/// agreed layout). `limit` bounds the open, the metadata read and the
/// copy that follows.
pub fn tensor_data<'a>(
    input: &'a Input,
    name: &str,
    dequant: bool,
    opener: Option<&dyn UrlOpener>,
    limit: Option<Duration>,
) -> Result<TensorData<'a>, TensorError> {
    let shown = input.shown();
    let limit = limit.map(TimeLimit::start);
    let opened = open_named(input, opener, limit.as_ref().map(TimeLimit::deadline)).map_err(TensorError::Unreadable)?;
    let len = opened.source().len();
    let validated = Validator::new(Options { container_only: true, ..Options::default() })
        .validate(&TimedSource::new(opened.source(), limit.as_ref()))
        .map_err(|e| TensorError::Unreadable(TimeLimit::explain(limit.as_ref(), &shown, &e)))?;
    let quoted = crate::parse::quote_bytes(name.as_bytes());
    let Some(tensor) = validated.layout().tensors.into_iter().find(|t| t.name == name) else {
        // Only to tell an unreadable tensor from a missing one.
        let parsed = validated.parsed();
        let listed = parsed.as_ref().is_some_and(|p| p.file.tensors.iter().any(|t| t.name.bytes == name.as_bytes()));
        return Err(TensorError::Invalid(if listed {
            format!(
                "{shown}: tensor `{quoted}` has no readable data (invalid type, shape or range; run `gguf-validate` on the file)"
            )
        } else {
            format!("{shown}: no tensor named `{quoted}`")
        }));
    };
    if tensor.offset.checked_add(tensor.nbytes).is_none_or(|end| end > len) {
        return Err(TensorError::Invalid(format!("{shown}: tensor `{quoted}` lies outside the file")));
    }
    if dequant && tensor.order == crate::parse::ByteOrder::BigEndian && tensor.ty.is_quantized() {
        return Err(TensorError::Invalid(format!(
            "{shown}: tensor `{quoted}` is {} data of a big-endian file, which has no agreed layout to decode",
            tensor.ty
        )));
    }
    opened.before_data().map_err(|e| TensorError::Unreadable(format!("{shown}: {e}")))?;
    Ok(TensorData { opened, limit, shown, tensor })
}

/// Input bytes copied (or decoded) per step, so that buffers stay small.
const TENSOR_STEP_BYTES: u64 = 1 << 20;

/// Why a tensor's copy stopped.
#[derive(Debug)]
pub enum CopyError {
    /// Reading the file failed, or the time limit passed (the message
    /// names the file).
    Read(String),
    /// Writing the output failed.
    Write(std::io::Error),
}

impl TensorData<'_> {
    /// Writes the tensor's bytes as stored, or (`dequant`) decoded to
    /// little-endian f32, to `out` in steps of whole blocks; the number of
    /// bytes written.
    pub fn write(&self, dequant: bool, out: &mut dyn std::io::Write) -> Result<u64, CopyError> {
        let t = &self.tensor;
        let src = TimedSource::new(self.opened.source(), self.limit.as_ref());
        let read_failed =
            |e: crate::io::ReadError| CopyError::Read(TimeLimit::explain(self.limit.as_ref(), &self.shown, &e));
        let type_size = usize::try_from(t.ty.type_size()).unwrap_or(1).max(1);
        let ts = u64::try_from(type_size).unwrap_or(1);
        let step = (TENSOR_STEP_BYTES / ts).max(1).saturating_mul(ts);
        let mut buf = Vec::new();
        let mut done = 0u64;
        let mut written = 0u64;
        while done < t.nbytes {
            let n = step.min(t.nbytes - done);
            let at = t.offset.saturating_add(done);
            let buf = crate::io::placed_window(&mut buf, at, usize::try_from(n).unwrap_or(0));
            src.read_exact_at(at, buf).map_err(read_failed)?;
            if dequant {
                if t.order == crate::parse::ByteOrder::BigEndian {
                    for e in buf.chunks_exact_mut(type_size) {
                        e.reverse();
                    }
                }
                written = written.saturating_add(write_dequantized(t.ty, buf, out).map_err(CopyError::Write)?);
            } else {
                out.write_all(buf).map_err(CopyError::Write)?;
                written = written.saturating_add(n);
            }
            done = done.saturating_add(n);
        }
        out.flush().map_err(CopyError::Write)?;
        Ok(written)
    }
}

/// Decodes whole blocks of `ty` (`blocks`) in steps and writes them to
/// `out` as little-endian f32 (`dequant`, `dump --tensor --dequant`); the
/// number of bytes written.
pub fn write_dequantized(
    ty: crate::types::GgmlType,
    blocks: &[u8],
    out: &mut dyn std::io::Write,
) -> std::io::Result<u64> {
    let type_size = usize::try_from(ty.type_size()).unwrap_or(1).max(1);
    let step = usize::try_from(TENSOR_STEP_BYTES).unwrap_or(usize::MAX).checked_div(type_size).unwrap_or(1).max(1);
    let (mut values, mut bytes) = (Vec::new(), Vec::new());
    let mut written = 0u64;
    for chunk in blocks.chunks(step.saturating_mul(type_size)) {
        values.clear();
        values.resize(crate::numerics::element_count(ty, chunk.len()).unwrap_or(0), 0.0f32);
        crate::numerics::dequantize(ty, chunk, &mut values).map_err(std::io::Error::other)?;
        bytes.clear();
        bytes.extend(values.iter().flat_map(|v| v.to_le_bytes()));
        out.write_all(&bytes)?;
        written = written.saturating_add(u64::try_from(bytes.len()).unwrap_or(u64::MAX));
    }
    out.flush()?;
    Ok(written)
}

/// Every tensor of `quant` against `base`'s (`derive`'s results), with the
/// importance matrix llama-quantize was given when there is one; or why a
/// file could not be read.
pub fn derive(
    base: &Input,
    quant: &Input,
    imatrix: Option<&Input>,
    opener: Option<&dyn UrlOpener>,
    limit: Option<Duration>,
) -> Result<Vec<TensorResult>, String> {
    let limit = limit.map(TimeLimit::start);
    let deadline = limit.as_ref().map(TimeLimit::deadline);
    let tensors = |f: &Input, src: &dyn ByteSource| -> Result<Vec<crate::data::DataTensor>, String> {
        let validator = Validator::new(Options { container_only: true, ..Options::default() });
        let v = validator.validate(src).map_err(|e| format!("{}: {e}", f.shown()))?;
        Ok(v.layout().tensors)
    };
    let bsrc = open_named(base, opener, deadline)?;
    let btensors = tensors(base, bsrc.source())?;
    let qsrc = open_named(quant, opener, deadline)?;
    let qtensors = tensors(quant, qsrc.source())?;
    let imatrix = match imatrix {
        Some(f) => {
            let src = open_named(f, opener, deadline)?;
            Some(
                crate::imatrix::Imatrix::read(src.source())
                    .map_err(|e| format!("{}: not an importance matrix llama-quantize accepts: {e}", f.shown()))?,
            )
        }
        None => None,
    };
    bsrc.before_data().map_err(|e| format!("{}: {e}", base.shown()))?;
    qsrc.before_data().map_err(|e| format!("{}: {e}", quant.shown()))?;
    let cancel = limit.as_ref().map(TimeLimit::flag);
    let results = crate::derive::derive(bsrc.source(), &btensors, qsrc.source(), &qtensors, imatrix.as_ref(), cancel);
    match &limit {
        Some(l) if l.passed() => Err(format!("{}: {}", quant.shown(), l.message())),
        _ => Ok(results),
    }
}

/// One model to hash: its name in the output (the first shard's for a
/// split set) and its files in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashTarget {
    /// The name its lines carry.
    pub name: String,
    /// Its files: one, or the shards of its split set in order.
    pub files: Vec<Input>,
    /// Why it is not hashed (a split set named by URL with more shards
    /// than are read): no request is made for it.
    pub refused: Option<String>,
}

/// `PREFIX-KKKKK-of-NNNNN.gguf` (`llama_split_path`): the prefix and the
/// shard count, for a shard of a set of at least two and at most
/// [`MAX_SPLIT_SHARDS`] (a count from a name never sizes more than that).
fn split_shard(path: &std::path::Path) -> Option<(String, u32)> {
    let name = split_name::parse(path.to_str()?)?;
    let count = name.count;
    (count >= 2 && usize::try_from(count).is_ok_and(|c| c <= MAX_SPLIT_SHARDS))
        .then(|| (name.prefix.to_string(), count))
}

/// The models `files` name for `hash`: a file, or (unless `no_split`) the
/// split set a shard belongs to, once however many of its shards are
/// named. A local set is every name its count gives (a missing shard is an
/// error when it is hashed); a set named by URL is [`Input::shards`].
pub fn hash_targets(files: &[Input], no_split: bool) -> Vec<HashTarget> {
    let mut out: Vec<HashTarget> = Vec::new();
    for f in files {
        let (files, refused) = match f {
            _ if no_split => (vec![f.clone()], None),
            Input::Url(_) => match f.shards() {
                Ok(shards) => (shards, None),
                Err(why) => (vec![f.clone()], Some(why)),
            },
            Input::Path(p) => match split_shard(p) {
                Some((prefix, n)) => {
                    ((0..n).map(|k| Input::Path(PathBuf::from(split_name::shard_name(&prefix, k, n)))).collect(), None)
                }
                None => (vec![f.clone()], None),
            },
            Input::Bytes { .. } | Input::Source { .. } => (vec![f.clone()], None),
        };
        let name = files.first().map_or_else(|| f.shown(), Input::shown);
        let target = HashTarget { name, files, refused };
        if target.files.len() > 1 && out.iter().any(|t| t.files == target.files) {
            continue;
        }
        out.push(target);
    }
    out
}

/// Opens and hashes one model (every shard of a split set, in order, as
/// one model); `progress` shows the bytes hashed. Errors are messages
/// naming the file.
pub fn hash_target(
    target: &HashTarget,
    opts: &HashOptions,
    opener: Option<&dyn UrlOpener>,
    progress: Option<&dyn ScanProgress>,
    limit: Option<Duration>,
) -> Result<ModelDigests, String> {
    if let Some(why) = &target.refused {
        return Err(format!("{}: {why}", target.name));
    }
    let limit = limit.map(TimeLimit::start);
    // A split set named by URL: one deadline for all its shards; and the
    // time limit's.
    let set_deadline = match opener {
        Some(o) if target.files.len() > 1 && target.files.iter().any(|f| f.url().is_some()) => {
            let now = Instant::now();
            Some(now.checked_add(o.file_deadline()).unwrap_or(now))
        }
        _ => None,
    };
    let deadline = [set_deadline, limit.as_ref().map(TimeLimit::deadline)].into_iter().flatten().min();
    let mut sources = Vec::with_capacity(target.files.len());
    for f in &target.files {
        let shown = f.shown();
        let opened = f.open(&OpenPolicy::default(), opener, deadline).map_err(|e| {
            if target.files.len() > 1 && e.not_found {
                format!("{shown}: shard of the split set {} is missing: {}", target.name, e.message)
            } else {
                format!("{shown}: {}", e.message)
            }
        })?;
        sources.push((shown, opened));
    }
    let mut parts = Vec::with_capacity(sources.len());
    let mut total = 0u64;
    for (shown, src) in &sources {
        let tensors = crate::hash::tensor_ranges(src.source()).map_err(|e| format!("{shown}: {e}"))?;
        total = tensors.iter().fold(total, |t, r| t.saturating_add(r.nbytes));
        src.before_data().map_err(|e| format!("{shown}: {e}"))?;
        parts.push(Part { source: src.source(), tensors });
    }
    let bar = progress.map(|p| p.begin(&target.name, total));
    let inc = |n| {
        if let Some(b) = &bar {
            b.inc(n);
        }
    };
    let cancel = limit.as_ref().map(TimeLimit::flag);
    let digests = crate::hash::hash_model(&parts, opts, &inc, cancel)
        .map_err(|e| TimeLimit::explain(limit.as_ref(), &target.name, &e));
    if let Some(b) = &bar {
        b.finish();
    }
    digests
}

/// The digests of the model `input` names, as `hash` prints them: the
/// model's name (the first shard's for a split set) and its digests. A
/// shard stands for its whole split set unless `no_split`.
pub fn model_digests(
    input: &Input,
    no_split: bool,
    opts: &HashOptions,
    opener: Option<&dyn UrlOpener>,
    limit: Option<Duration>,
) -> Result<(String, ModelDigests), String> {
    let target = hash_targets(std::slice::from_ref(input), no_split)
        .into_iter()
        .next()
        .ok_or_else(|| format!("{}: nothing to hash", input.shown()))?;
    let digests = hash_target(&target, opts, opener, None, limit)?;
    Ok((target.name, digests))
}

/// What `edit` did: the changes (key, before, after), the tensor-data
/// digest before and after (the `hash` command's whole-model SHA-256; a
/// message when the data cannot be hashed), the result's report under the
/// validator's profile, and whether the result was kept.
#[derive(Debug)]
pub struct Edited {
    /// The changes as made.
    pub changes: Vec<crate::rewrite::Applied>,
    /// The tensor-data digest of the input.
    pub digest_before: Result<crate::hash::Digest, String>,
    /// The tensor-data digest of the result.
    pub digest_after: Result<crate::hash::Digest, String>,
    /// The result's report.
    pub report: crate::Report,
    /// Whether the result was renamed into place (false: it had an error
    /// under the profile and was not forced; nothing was left behind).
    pub written: bool,
    /// The result's length.
    pub bytes: u64,
    /// Where the data section starts, before and after.
    pub data_start: (u64, u64),
    /// Whether the data section was copied by the kernel (file to file).
    pub kernel_copy: bool,
    /// For [`Edit::Fixes`]: each finding's fix (held-back unsafe ones too).
    pub fixes: Vec<crate::fix::Fixed>,
    /// For [`Edit::Fixes`]: the input's report, whose findings were fixed.
    pub before: Option<crate::Report>,
    /// Nothing was written because nothing was asked to be (`--dry-run`);
    /// `report` is then the input's.
    pub dry_run: bool,
    /// For [`Edit::Fixes`]: nothing needed fixing (in place the file was
    /// left alone, `report` is the input's; to another file it was copied
    /// as it is).
    pub unchanged: bool,
    /// The validation (metadata and parse kept) of the file that stands
    /// afterwards: the result when it was written, else the input. A
    /// later step (a split set judged whole) reads it instead of the file.
    pub standing: crate::Validated,
}

impl Edited {
    /// The `--format json` document of `edit` and `fix` (the command line,
    /// Python): the changes (and fixes), the tensor-data digests, the
    /// result's report.
    pub fn json(&self, input: &std::path::Path, output: &std::path::Path, in_place: bool) -> serde_json::Value {
        use crate::rewrite::{changes_json, digests_json};
        let not_hashed = [&self.digest_before, &self.digest_after].into_iter().find_map(|d| d.as_ref().err());
        let mut tensor_data = digests_json(&self.digest_before, &self.digest_after);
        if let Some(map) = tensor_data.as_object_mut() {
            map.insert("not_hashed".into(), serde_json::json!(not_hashed));
            map.insert(
                "data_start".into(),
                serde_json::json!({"before": self.data_start.0, "after": self.data_start.1}),
            );
            map.insert("kernel_copy".into(), serde_json::json!(self.kernel_copy));
        }
        let mut doc = serde_json::json!({
            "input": input.to_string_lossy(),
            "output": output.to_string_lossy(),
            "in_place": in_place,
            "written": self.written,
            "valid": self.report.valid,
            "changes": changes_json(&self.changes),
            "tensor_data": tensor_data,
            "bytes": self.bytes,
            "report": self.report,
        });
        if let (Some(before), Some(map)) = (&self.before, doc.as_object_mut()) {
            map.insert("dry_run".into(), serde_json::json!(self.dry_run));
            map.insert("unchanged".into(), serde_json::json!(self.unchanged));
            map.insert("fixes".into(), serde_json::json!(self.fixes));
            map.insert("before".into(), serde_json::json!(before));
        }
        doc
    }
}

/// What [`edit`] changes.
#[derive(Clone, Copy, Debug)]
pub enum Edit<'a> {
    /// What a person asks for (`gguf-validate edit`).
    Requests(&'a [crate::rewrite::Request]),
    /// The fixes of the findings of the input's validation
    /// (`gguf-validate fix`, [`crate::fix`]): unsafe ones only when
    /// `unsafe_fixes`; with `dry_run` nothing is written.
    Fixes {
        /// Make unsafe fixes too.
        unsafe_fixes: bool,
        /// Plan only.
        dry_run: bool,
    },
}

/// Why `edit` wrote nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditError {
    /// The input could not be read, or is not a GGUF file whose metadata
    /// decodes (the message names it).
    Unreadable(String),
    /// A change that cannot be made (a value that does not parse, a key to
    /// remove that is absent, a change of the alignment, OUT the same
    /// file as the input).
    Refused(String),
    /// Writing the result failed (nothing was left behind).
    Write(String),
}

impl std::fmt::Display for EditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EditError::Unreadable(m) | EditError::Refused(m) | EditError::Write(m) => f.write_str(m),
        }
    }
}

/// Whether `a` and `b` name the same existing file (a link, `./x` and `x`).
fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) else { return false };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        ma.dev() == mb.dev() && ma.ino() == mb.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (ma, mb);
        matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
    }
}

/// Where [`edit`] writes: another file, or the input itself (replaced by
/// an atomic rename once the new file is complete, validated and synced).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EditTarget {
    /// `out` is another file than the input.
    Other,
    /// `out` is the input, replaced in place.
    InPlace,
}

/// A temporary file beside `out` (same folder, so the rename is atomic),
/// created new; removed on drop unless kept.
struct Temp {
    path: PathBuf,
    file: Option<std::fs::File>,
    keep: bool,
}

impl Temp {
    fn beside(out: &std::path::Path) -> std::io::Result<Temp> {
        let dir = match out.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
        let pid = std::process::id();
        let mut last = None;
        for attempt in 0u32..16 {
            let path = dir.join(format!(".{name}.edit-{pid}-{attempt}.tmp"));
            match std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&path) {
                Ok(file) => return Ok(Temp { path, file: Some(file), keep: false }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no temporary name is free")))
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        drop(self.file.take());
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// `gguf-validate edit` and `fix`: writes `out`, a copy of the GGUF file
/// `input` with the changes `what` asks for (a person's requests, or the
/// fixes of its findings) made to its metadata and its tensor data
/// copied byte for byte ([`crate::rewrite`]). The result is written to a
/// temporary file in `out`'s folder, validated by `validator`, and renamed
/// into place only when it has no error under the profile, or `force`;
/// otherwise it is removed and the report says why. `out` naming the
/// input itself is refused unless `target` is [`EditTarget::InPlace`]:
/// the input is then replaced only by the rename, so that stopping the
/// command at any moment leaves it intact. `progress` shows the copy and
/// the digests.
pub fn edit(
    input: &std::path::Path,
    out: &std::path::Path,
    target: EditTarget,
    what: Edit<'_>,
    validator: &Validator,
    force: bool,
    progress: Option<&dyn ScanProgress>,
) -> Result<Edited, EditError> {
    use crate::rewrite::{self, Rewrite};
    let shown = Input::Path(input.to_path_buf()).shown();
    let shown_out = Input::Path(out.to_path_buf()).shown();
    let same = input == out || same_file(input, out);
    match target {
        EditTarget::Other if same => {
            return Err(EditError::Refused(format!(
                "-o {shown_out} is the input itself; write to another file, or edit it with --in-place"
            )));
        }
        EditTarget::InPlace if !same => {
            return Err(EditError::Refused(format!("{shown_out} is not the input to replace in place")));
        }
        _ => {}
    }
    let validator = validator.clone().report_only(false).with_every_profile(false);
    let from = Input::Path(input.to_path_buf());
    let opened = from
        .open(&OpenPolicy::default(), None, None)
        .map_err(|f| EditError::Unreadable(format!("{shown}: {}", f.message)))?;
    let src = opened.source();
    let validated = validator.validate(src).map_err(|e| EditError::Unreadable(format!("{shown}: {e}")))?;
    let parsed = validated.parsed().ok_or_else(|| {
        EditError::Unreadable(format!("{shown}: not a GGUF v2/v3 file (run `gguf-validate` on it for details)"))
    })?;
    let asked_dry_run = matches!(what, Edit::Fixes { dry_run: true, .. });
    let input_len = validated.file_len();
    let (changes, layout, fixes, before, dry_run, unchanged) = match what {
        Edit::Requests(requests) => {
            let changes =
                rewrite::resolve(&parsed, requests).map_err(|e| EditError::Refused(format!("{shown}: {e}")))?;
            (changes, rewrite::Layout::Kept, Vec::new(), None, false, false)
        }
        Edit::Fixes { unsafe_fixes, dry_run } => {
            let planned = crate::fix::plan(&parsed, &validated.report.diagnostics, unsafe_fixes);
            // Nothing to fix: in place the file is left alone; to another
            // file it is copied as it is (a split set's folder stays whole).
            let unchanged = !planned.changes_anything();
            let idle = dry_run || (unchanged && target == EditTarget::InPlace);
            (planned.changes, planned.layout, planned.fixes, Some(validated.report.clone()), idle, unchanged)
        }
    };
    let plan =
        Rewrite::plan_laid_out(&parsed, validated.metadata.as_slice(), &changes, layout).map_err(|e| match e {
            rewrite::RewriteError::NotGguf(_) => EditError::Unreadable(format!("{shown}: {e}")),
            _ => EditError::Refused(format!("{shown}: {e}")),
        })?;
    if dry_run {
        let digest_before = rewrite::tensor_digest(src, &parsed).map_err(|e| e.to_string());
        drop(parsed);
        return Ok(Edited {
            changes: plan.changes().to_vec(),
            digest_after: Err("nothing was written".into()),
            digest_before,
            report: validated.report.clone(),
            written: false,
            bytes: plan.len(),
            data_start: plan.data_start(),
            kernel_copy: false,
            fixes,
            before,
            dry_run: asked_dry_run,
            unchanged,
            standing: validated,
        });
    }
    let total = if unchanged { input_len } else { plan.copied_bytes() };
    let bar = progress.map(|p| p.begin(&shown, total));
    let inc = |n| {
        if let Some(b) = &bar {
            b.inc(n);
        }
    };
    let digest_before = rewrite::tensor_digest(src, &parsed).map_err(|e| e.to_string());
    drop(parsed);
    let write_failed = |e: String| EditError::Write(format!("{shown_out}: {e}"));
    let mut temp =
        Temp::beside(out).map_err(|e| write_failed(format!("cannot create a temporary file beside it: {e}")))?;
    let kernel_copy = opened.file().is_some();
    {
        let Some(file) = temp.file.as_mut() else { return Err(write_failed("no temporary file".into())) };
        let written = match opened.file() {
            // The file byte for byte (the kernel's copy).
            Some(from) if unchanged => {
                let mut reader = from;
                std::io::Seek::seek(&mut reader, std::io::SeekFrom::Start(0))
                    .and_then(|_| std::io::copy(&mut reader, file))
                    .inspect(|&n| inc(n))
                    .map_err(rewrite::RewriteError::Write)
            }
            Some(from) => plan.write_file(from, file, &inc),
            None => {
                let mut w = std::io::BufWriter::new(&mut *file);
                plan.write(src, &mut w, &inc)
            }
        };
        written.map_err(|e| write_failed(e.to_string()))?;
        file.sync_all().map_err(|e| write_failed(e.to_string()))?;
    }
    if let Some(b) = &bar {
        b.finish();
    }
    // The result, validated as any file is; its digest from that validation's parse.
    let written_input = Input::Path(temp.path.clone());
    let reopened = written_input
        .open(&OpenPolicy::default(), None, None)
        .map_err(|f| write_failed(format!("the written file cannot be read back: {}", f.message)))?;
    let result = reopened.source();
    let checked = validator.validate(result).map_err(|e| write_failed(format!("reading it back: {e}")))?;
    let digest_after = match checked.parsed() {
        Some(p) => rewrite::tensor_digest(result, &p).map_err(|e| e.to_string()),
        None => Err("the result is not a GGUF v2/v3 file".to_string()),
    };
    if let (Ok(a), Ok(b)) = (&digest_before, &digest_after)
        && a != b
    {
        return Err(write_failed(format!(
            "tensor data changed in the copy (sha256 {a} before, {b} after); nothing was kept"
        )));
    }
    let report = checked.report.clone();
    drop(reopened);
    let written = report.valid || force;
    if written {
        std::fs::rename(&temp.path, out).map_err(|e| write_failed(format!("renaming the result into place: {e}")))?;
        temp.keep = true;
        // the rename itself on disk: the folder synced (where it can be opened)
        if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty())
            && let Ok(d) = std::fs::File::open(dir)
        {
            let _ = d.sync_all();
        }
    }
    Ok(Edited {
        changes: plan.changes().to_vec(),
        digest_before,
        digest_after,
        report,
        written,
        bytes: if unchanged { input_len } else { plan.len() },
        data_start: plan.data_start(),
        kernel_copy,
        fixes,
        before,
        dry_run: false,
        unchanged,
        standing: if written { checked } else { validated },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Input {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../corpus/samples/tiny-llama.gguf");
        Input::bytes("tiny-llama.gguf", std::fs::read(path).unwrap_or_default())
    }

    #[test]
    fn a_shard_stands_for_its_set_once_however_many_of_its_shards_are_named() {
        let shard = |k: u32| Input::Path(PathBuf::from(split_name::shard_name("dir/m", k, 3)));
        let targets = hash_targets(&[shard(1), shard(0), Input::Path("one.gguf".into())], false);
        assert_eq!(targets.len(), 2);
        assert_eq!(targets[0].files, (0..3).map(shard).collect::<Vec<_>>());
        assert_eq!(targets[0].name, shard(0).shown());
        assert_eq!(targets[1].files, vec![Input::Path("one.gguf".into())]);
        // --no-split: each file its own model.
        assert_eq!(hash_targets(&[shard(1), shard(0)], true).len(), 2);
    }

    /// The sample's bytes, each read taking `delay`.
    #[derive(Debug)]
    struct Slow {
        bytes: Vec<u8>,
        delay: Duration,
    }

    impl ByteSource for Slow {
        fn len(&self) -> u64 {
            u64::try_from(self.bytes.len()).unwrap_or(0)
        }

        fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), crate::io::ReadError> {
            std::thread::sleep(self.delay);
            crate::io::SliceSource(&self.bytes).read_exact_at(offset, buf)
        }
    }

    fn slow_sample(delay: Duration) -> Input {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../corpus/samples/tiny-llama.gguf");
        let bytes = std::fs::read(path).unwrap_or_default();
        Input::Source {
            name: "slow.gguf".into(),
            source: super::super::SharedSource(std::sync::Arc::new(Slow { bytes, delay })),
        }
    }

    #[test]
    fn hash_and_derive_stop_at_their_time_limit() {
        let opts = HashOptions { algos: crate::hash::Algos::DEFAULT, per_tensor: false };
        let input = slow_sample(Duration::from_millis(300));
        let target = hash_targets(std::slice::from_ref(&input), true).remove(0);
        // Each read takes 300 ms: a limit of 100 ms has passed before the
        // data's first batch.
        let started = Instant::now();
        let err = hash_target(&target, &opts, None, None, Some(Duration::from_millis(100))).err().unwrap_or_default();
        assert!(err.contains("timed out after 0.1 s"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        // Without a limit, or with a generous one, the same model hashes.
        let fast = slow_sample(Duration::ZERO);
        let target = hash_targets(std::slice::from_ref(&fast), true).remove(0);
        assert!(hash_target(&target, &opts, None, None, Some(Duration::from_secs(60))).is_ok());
        // derive: the quant against itself as base stops too.
        let err = derive(&input, &input, None, None, Some(Duration::from_millis(100))).err().unwrap_or_default();
        assert!(err.contains("timed out"), "{err}");
        let results = derive(&fast, &fast, None, None, Some(Duration::from_secs(60))).unwrap_or_default();
        assert_eq!(results.len(), 11);
    }

    #[test]
    fn a_missing_shard_is_named_as_the_sets() {
        let shard = |k: u32| Input::Path(PathBuf::from(split_name::shard_name("no/such/dir/m", k, 2)));
        let target = hash_targets(&[shard(0)], false).remove(0);
        let opts = HashOptions { algos: crate::hash::Algos::DEFAULT, per_tensor: false };
        let err = hash_target(&target, &opts, None, None, None).err().unwrap_or_default();
        assert!(err.contains("shard of the split set"), "{err}");
    }

    #[test]
    fn dump_and_hash_read_bytes_through_the_front_door() {
        let input = sample();
        let (value, complete) = dump(&input, false, None, None).map_err(|e| format!("{e:?}")).unwrap_or_default();
        assert!(complete);
        assert_eq!(value["path"], "tiny-llama.gguf");
        assert_eq!(value["tensors"].as_array().map(Vec::len), Some(11));
        let opts = HashOptions { algos: crate::hash::Algos::DEFAULT, per_tensor: true };
        let hashed = model_digests(&input, false, &opts, None, None);
        assert_eq!(
            hashed.as_ref().map(|(name, d)| (name.as_str(), d.tensors.len())).ok(),
            Some(("tiny-llama.gguf", 11))
        );
        assert_eq!(dump(&Input::bytes("x", b"GGUF".to_vec()), false, None, None).ok(), None);
    }

    #[test]
    fn dump_and_a_tensors_copy_stop_at_their_time_limit() {
        let slow = slow_sample(Duration::from_millis(300));
        let started = Instant::now();
        let err = dump(&slow, false, None, Some(Duration::from_millis(100))).err();
        assert!(matches!(&err, Some(DumpError::Unreadable(e)) if e.contains("timed out after 0.1 s")), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        let err = tensor_data(&slow, "token_embd.weight", false, None, Some(Duration::from_millis(100))).err();
        assert!(matches!(&err, Some(TensorError::Unreadable(e)) if e.contains("timed out")), "{err:?}");
        // A limit that passes during the copy stops the copy at its next read.
        let medium = slow_sample(Duration::from_millis(150));
        let data = tensor_data(&medium, "token_embd.weight", false, None, Some(Duration::from_millis(1200)));
        let data = data.map_err(|e| format!("{e:?}"));
        assert!(data.is_ok(), "{data:?}");
        if let Ok(data) = data {
            std::thread::sleep(Duration::from_millis(1300));
            let copied = data.write(false, &mut Vec::new());
            assert!(matches!(&copied, Err(CopyError::Read(e)) if e.contains("timed out")), "{copied:?}");
        }
        // Without a limit: the description, and the tensor's bytes as stored
        // (its offset and size from the layout) or decoded to f32.
        let fast = sample();
        let (value, _) =
            dump(&fast, true, None, Some(Duration::from_secs(60))).map_err(|e| format!("{e:?}")).unwrap_or_default();
        assert_eq!(value["tensors"].as_array().map(Vec::len), Some(11));
        let data = tensor_data(&fast, "blk.0.attn_q.weight", true, None, None).map_err(|e| format!("{e:?}"));
        let (mut raw, mut f32s) = (Vec::new(), Vec::new());
        if let Ok(d) = &data {
            assert_eq!(d.write(false, &mut raw).ok(), Some(d.tensor.nbytes));
            let n = d.write(true, &mut f32s).unwrap_or(0);
            assert_eq!(n, u64::try_from(f32s.len()).unwrap_or(0));
            assert_eq!(n, d.tensor.dims.iter().product::<u64>() * 4);
        }
        assert!(data.is_ok() && !raw.is_empty(), "{data:?}");
        let missing = tensor_data(&fast, "no.such.weight", false, None, None).err();
        assert!(matches!(&missing, Some(TensorError::Invalid(e)) if e.contains("no tensor named")), "{missing:?}");
    }
}
