//! Quantizer campaigns: f32 rows in, blocks out, compared with the
//! reference quantizer of `gguf-numerics` (bit-exact with
//! `ggml_quantize_chunk` without an importance matrix).
//!
//! A quantizer under test is a command with placeholders `{type}` (ggml's
//! type name, `q4_K`), `{type_id}`, `{input}` (little-endian f32 rows),
//! `{output}` (the blocks it writes) and, optionally, `{row_len}` (values
//! per row). Without `{row_len}` each run gets one row; with it, a batch of
//! rows of that length.
//!
//! Each row gets a verdict: **identical** (bit for bit), **within bound**
//! (differs, but every block's round-trip error is within
//! [`error_bound`]), **unbounded** (differs where the bound does not apply:
//! non-finite input, or a block magnitude outside the bound's range),
//! **wrong** (beyond the bound where it applies) or **failed** (the command
//! failed, or wrote the wrong number of bytes). Wrong and failed rows are
//! findings; the other differences are reported with a reproducer too.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::Kind;
use crate::campaign_report::time;
use crate::process::{self, RunOutcome};
use gguf_validate_core::numerics::{self, GgmlType, dequantize_to_vec, error_bound, quantize_chunk};
use gguf_validate_core::seeded::SplitMix64;

/// The row classes the generator draws from.
pub const ROW_CLASSES: [&str; 7] = ["random", "edge", "nan-inf", "subnormal", "all-equal", "outliers", "zero"];

/// A quantizer under test.
pub trait Quantizer {
    /// What to call it in reports.
    fn name(&self) -> String;
    /// Whether it takes several rows per run (`{row_len}`).
    fn batched(&self) -> bool;
    /// Quantizes `rows` (each `row_len` values): the blocks, or how it failed.
    fn quantize(
        &mut self,
        ty: GgmlType,
        rows: &[f32],
        row_len: usize,
        dir: &Path,
    ) -> std::io::Result<Result<Vec<u8>, RunOutcome>>;
}

/// A command line (see the module documentation).
#[derive(Clone, Debug)]
pub struct CommandQuantizer {
    /// The template.
    pub template: String,
    /// Killed (with its process group) after this long.
    pub timeout: Duration,
}

impl Quantizer for CommandQuantizer {
    fn name(&self) -> String {
        self.template.clone()
    }
    fn batched(&self) -> bool {
        process::uses(&self.template, "row_len")
    }
    fn quantize(
        &mut self,
        ty: GgmlType,
        rows: &[f32],
        row_len: usize,
        dir: &Path,
    ) -> std::io::Result<Result<Vec<u8>, RunOutcome>> {
        let input = dir.join("input.f32");
        let output = dir.join("output.bin");
        let bytes: Vec<u8> = rows.iter().flat_map(|x| x.to_le_bytes()).collect();
        std::fs::write(&input, bytes)?;
        let _ = std::fs::remove_file(&output);
        let cmd = process::substitute(
            &self.template,
            &[
                ("type", ty.name()),
                ("type_id", &ty.id().to_string()),
                ("input", &input.to_string_lossy()),
                ("output", &output.to_string_lossy()),
                ("row_len", &row_len.to_string()),
            ],
        );
        let (outcome, _) = process::run(&cmd, Path::new("."), self.timeout)?;
        Ok(match outcome {
            RunOutcome::Success => match std::fs::read(&output) {
                Ok(b) => Ok(b),
                Err(_) => Err(RunOutcome::Failed { code: Some(0), stderr: "exit 0 without an output file".into() }),
            },
            other => Err(other),
        })
    }
}

/// A quantizer in this process (tests).
pub struct FnQuantizer<F: FnMut(GgmlType, &[f32], usize) -> Result<Vec<u8>, RunOutcome>> {
    /// Its name.
    pub name: String,
    /// The function.
    pub f: F,
}

impl<F: FnMut(GgmlType, &[f32], usize) -> Result<Vec<u8>, RunOutcome>> std::fmt::Debug for FnQuantizer<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnQuantizer").field("name", &self.name).finish()
    }
}

impl<F: FnMut(GgmlType, &[f32], usize) -> Result<Vec<u8>, RunOutcome>> Quantizer for FnQuantizer<F> {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn batched(&self) -> bool {
        true
    }
    fn quantize(
        &mut self,
        ty: GgmlType,
        rows: &[f32],
        row_len: usize,
        _dir: &Path,
    ) -> std::io::Result<Result<Vec<u8>, RunOutcome>> {
        Ok((self.f)(ty, rows, row_len))
    }
}

/// Whether a campaign can test `ty`: the reference quantizes it the way
/// `ggml_quantize_chunk` does, without an importance matrix (a campaign
/// passes none).
pub fn testable(ty: GgmlType) -> bool {
    numerics::has_chunk_quantizer(ty) && !numerics::requires_imatrix(ty)
}

/// Every [`testable`] type (asked of `gguf-numerics`, so new types join by
/// themselves).
pub fn default_types() -> Vec<GgmlType> {
    GgmlType::ALL.into_iter().filter(|t| testable(*t)).collect()
}

/// One row of class `class`.
pub fn row(rng: &mut SplitMix64, class: &str, len: usize) -> Vec<f32> {
    let scale = 10f32.powi(i32::try_from(rng.below(7)).unwrap_or(0) - 3);
    let normal = |rng: &mut SplitMix64| (rng.unit_f32() + rng.unit_f32() + rng.unit_f32() - 1.5) * scale;
    let mut out: Vec<f32> = (0..len).map(|_| normal(rng)).collect();
    let edges = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        65504.0,
        -65504.0,
        5.960_464_5e-8,
        -6.103_515_6e-5,
        1.0e-30,
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
        0.5,
        1.0e4,
    ];
    match class {
        "edge" => out.iter_mut().for_each(|x| {
            if rng.below(2) == 0 {
                *x = edges.get(usize::try_from(rng.below(14)).unwrap_or(0)).copied().unwrap_or(0.0);
            }
        }),
        "nan-inf" => {
            let n = 1 + rng.below(3);
            for _ in 0..n {
                let at = usize::try_from(rng.below(len as u64)).unwrap_or(0);
                let v = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, f32::from_bits(0x7FC0_0123)]
                    .get(usize::try_from(rng.below(4)).unwrap_or(0))
                    .copied()
                    .unwrap_or(f32::NAN);
                if let Some(x) = out.get_mut(at) {
                    *x = v;
                }
            }
        }
        "subnormal" => out.iter_mut().for_each(|x| {
            let bits = 1 + u32::try_from(rng.below(0x007F_FFFF)).unwrap_or(0);
            let sign = if rng.below(2) == 0 { 0 } else { 0x8000_0000 };
            *x = f32::from_bits(bits | sign);
        }),
        "all-equal" => {
            let v = if rng.below(2) == 0 {
                normal(rng)
            } else {
                edges.get(usize::try_from(rng.below(14)).unwrap_or(0)).copied().unwrap_or(1.0)
            };
            out.iter_mut().for_each(|x| *x = v);
        }
        "outliers" => {
            let n = 1 + rng.below(2);
            for _ in 0..n {
                let at = usize::try_from(rng.below(len as u64)).unwrap_or(0);
                if let Some(x) = out.get_mut(at) {
                    *x = scale * 1.0e3 * if rng.below(2) == 0 { 1.0 } else { -1.0 };
                }
            }
        }
        "zero" => out.iter_mut().for_each(|x| *x = 0.0),
        _ => {}
    }
    out
}

/// A row's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RowVerdict {
    /// Bit for bit.
    Identical,
    /// Differs within the error bound.
    WithinBound,
    /// Differs where the bound does not apply.
    Unbounded,
    /// Differs in bytes, but every block decodes to the same values as the
    /// reference's (bit for bit).
    SameValues,
    /// Beyond the bound.
    Wrong,
}

impl RowVerdict {
    fn label(self) -> &'static str {
        match self {
            RowVerdict::Identical => "identical",
            RowVerdict::WithinBound => "differs within the error bound",
            RowVerdict::Unbounded => "differs where no bound applies",
            RowVerdict::SameValues => "differs in bytes, decodes to the same values",
            RowVerdict::Wrong => "wrong (beyond the error bound)",
        }
    }
}

/// Judges one row's blocks against the reference: the verdict and a
/// one-line detail (first differing block, largest error against bound).
pub fn judge_row(ty: GgmlType, input: &[f32], expected: &[u8], got: &[u8]) -> (RowVerdict, String) {
    if expected == got {
        return (RowVerdict::Identical, String::new());
    }
    let bs = usize::try_from(ty.block_size()).unwrap_or(1).max(1);
    let ts = usize::try_from(ty.type_size()).unwrap_or(1).max(1);
    let first_block = expected.chunks(ts).zip(got.chunks(ts)).position(|(a, b)| a != b).unwrap_or(0);
    let (Ok(y_ref), Ok(y_got)) = (dequantize_to_vec(ty, expected), dequantize_to_vec(ty, got)) else {
        return (RowVerdict::Wrong, format!("block {first_block} differs and does not decode"));
    };
    let Some(bound) = error_bound(ty) else {
        return (RowVerdict::Unbounded, format!("block {first_block} differs; {ty} has no documented bound"));
    };
    let mut verdict = RowVerdict::SameValues;
    let mut worst = (0usize, 0f32, 0f32);
    for (b, ((x, r), g)) in input.chunks(bs).zip(y_ref.chunks(bs)).zip(y_got.chunks(bs)).enumerate() {
        let finite = x.iter().all(|v| v.is_finite());
        let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
        let limit = bound.rel * amax + bound.abs;
        let within = |y: &[f32]| x.iter().zip(y).all(|(a, b)| (a - b).abs() <= limit);
        // The bound applies where the reference itself meets it.
        let applies = finite && amax >= bound.min_amax && amax <= bound.max_amax && within(r);
        if r.iter().zip(g).all(|(a, b)| a.to_bits() == b.to_bits()) {
            continue;
        }
        if !applies {
            if matches!(verdict, RowVerdict::SameValues | RowVerdict::WithinBound) {
                verdict = RowVerdict::Unbounded;
            }
            continue;
        }
        if verdict == RowVerdict::SameValues {
            verdict = RowVerdict::WithinBound;
        }
        let err = x
            .iter()
            .zip(g)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, |m, e| if e.is_nan() { f32::INFINITY } else { m.max(e) });
        if err > limit {
            verdict = RowVerdict::Wrong;
        }
        if err / limit.max(f32::MIN_POSITIVE) > worst.1 / worst.2.max(f32::MIN_POSITIVE) || worst.2 == 0.0 {
            worst = (b, err, limit);
        }
    }
    let detail = if verdict == RowVerdict::SameValues {
        format!("first differing block {first_block}; every block decodes to the reference's values")
    } else if worst.2 == 0.0 {
        format!("first differing block {first_block}; the bound applies to none of the differing blocks")
    } else {
        format!(
            "first differing block {first_block}; largest error {:.3e} against bound {:.3e} (block {})",
            worst.1, worst.2, worst.0
        )
    };
    (verdict, detail)
}

/// Settings of a quantizer campaign.
#[derive(Clone, Debug)]
pub struct QuantOptions {
    /// Types to test.
    pub types: Vec<GgmlType>,
    /// Most rows in all.
    pub rows: u64,
    /// Rows per run for a batched quantizer.
    pub batch: usize,
    /// Seed.
    pub seed: u64,
    /// Stop starting runs after this long.
    pub time: Option<Duration>,
    /// Most quantizer runs to shrink one kind.
    pub shrink_runs: usize,
    /// Scratch directory.
    pub work_dir: PathBuf,
    /// Where to write reproducers.
    pub findings_dir: Option<PathBuf>,
}

/// Per-type counts.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct TypeCounts {
    /// Type name.
    pub ty: String,
    /// Rows judged.
    pub rows: u64,
    /// Bit-identical rows.
    pub identical: u64,
    /// Rows that differ in bytes but decode to the reference's values.
    pub same_values: u64,
    /// Rows within the bound.
    pub within_bound: u64,
    /// Rows that differ where no bound applies.
    pub unbounded: u64,
    /// Rows beyond the bound.
    pub wrong: u64,
    /// Rows the quantizer failed on.
    pub failed: u64,
}

/// One kind of quantizer finding.
#[derive(Clone, Debug, serde::Serialize)]
pub struct QuantGroup {
    /// What.
    pub kind: Kind,
    /// A failure (wrong, failed) rather than a difference within reason.
    pub finding: bool,
    /// Rows that showed it.
    pub rows: u64,
    /// Seconds from the start to the first.
    pub first_after_secs: f64,
    /// The first row's detail.
    pub detail: String,
    /// Values in the first row.
    pub original_len: usize,
    /// Values in the shrunk row.
    pub shrunk_len: usize,
    /// Quantizer runs spent shrinking.
    pub shrink_runs: usize,
    /// Seconds spent shrinking.
    pub shrink_secs: f64,
    /// The reproducer's directory, relative to the findings directory.
    pub dir: Option<String>,
    /// The shrunk row.
    #[serde(skip)]
    pub row: Vec<f32>,
}

/// A quantizer campaign's results.
#[derive(Clone, Debug, serde::Serialize)]
pub struct QuantReport {
    /// The command.
    pub quantizer: String,
    /// Seed.
    pub seed: u64,
    /// Rows judged.
    pub rows: u64,
    /// Quantizer runs (campaign only, not shrinking).
    pub runs: u64,
    /// Wall time.
    #[serde(serialize_with = "crate::campaign_report::secs")]
    pub elapsed: Duration,
    /// `rows` or `time`.
    pub stopped_by: &'static str,
    /// Per type.
    pub types: Vec<TypeCounts>,
    /// Kinds, in order of discovery.
    pub findings: Vec<QuantGroup>,
}

impl QuantReport {
    /// 0 when no row was wrong or failed, else 1.
    pub fn exit_code(&self) -> u8 {
        u8::from(self.findings.iter().any(|g| g.finding))
    }
}

/// Row length for a type: 1..=4 blocks of 256 for super-block types, 1..=8
/// blocks otherwise.
fn row_len(rng: &mut SplitMix64, ty: GgmlType) -> usize {
    let bs = usize::try_from(ty.block_size()).unwrap_or(1).max(1);
    let max_blocks = if bs >= 256 { 4 } else { 8 };
    bs * (1 + usize::try_from(rng.below(max_blocks)).unwrap_or(0))
}

const CANNOT_RUN: &str = "command cannot be run";

fn failed_kind(ty: GgmlType, o: &RunOutcome) -> Kind {
    let what = match o {
        RunOutcome::TimedOut => "timed out".to_string(),
        RunOutcome::Failed { code: Some(126 | 127), .. } => CANNOT_RUN.to_string(),
        RunOutcome::Failed { stderr, .. } => {
            let line = crate::writer::telling_line(stderr);
            let line: String = line.chars().map(|c| if c.is_ascii_digit() { 'N' } else { c }).take(100).collect();
            format!("failed: {line}")
        }
        RunOutcome::Success => "wrong output size".to_string(),
    };
    Kind::new("quantizer", ty.name(), what)
}

/// Judges `rows` against the reference: one verdict (or failure) per row.
fn run_batch(
    q: &mut dyn Quantizer,
    ty: GgmlType,
    rows: &[Vec<f32>],
    len: usize,
    dir: &Path,
) -> std::io::Result<Vec<Result<(RowVerdict, String), Kind>>> {
    let flat: Vec<f32> = rows.iter().flatten().copied().collect();
    let got = q.quantize(ty, &flat, len, dir)?;
    if got.is_err() && rows.len() > 1 {
        // A failed batch says nothing of which row failed: run each alone.
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            out.extend(run_batch(q, ty, std::slice::from_ref(r), len, dir)?);
        }
        return Ok(out);
    }
    let mut out = Vec::with_capacity(rows.len());
    let row_bytes = ty.row_size(len as u64).and_then(|b| usize::try_from(b).ok()).unwrap_or(0);
    for (i, r) in rows.iter().enumerate() {
        let mut expected = Vec::new();
        if quantize_chunk(ty, r, len, None, &mut expected).is_err() {
            out.push(Err(Kind::new("quantizer", ty.name(), "reference cannot quantize this row")));
            continue;
        }
        out.push(match &got {
            Err(o) => Err(failed_kind(ty, o)),
            Ok(bytes) if bytes.len() != row_bytes.saturating_mul(rows.len()) => {
                Err(failed_kind(ty, &RunOutcome::Success))
            }
            Ok(bytes) => {
                let start = i.saturating_mul(row_bytes);
                Ok(judge_row(ty, r, &expected, bytes.get(start..start + row_bytes).unwrap_or_default()))
            }
        });
    }
    Ok(out)
}

fn verdict_kind(ty: GgmlType, class: &str, v: RowVerdict) -> Kind {
    Kind::new("blocks", ty.name(), format!("{} on {class} rows", v.label()))
}

/// Shrinks a row while `same(row)` holds: single blocks first, then
/// zeroing chunks of values.
fn shrink_row(
    row: &[f32],
    bs: usize,
    max_runs: usize,
    same: &mut dyn FnMut(&[f32]) -> std::io::Result<bool>,
) -> std::io::Result<(Vec<f32>, usize)> {
    let mut runs = 0;
    let mut cur = row.to_vec();
    if cur.len() > bs {
        // Super-block types keep whole rows of one block.
        for block in row.chunks(bs) {
            if runs >= max_runs {
                break;
            }
            runs += 1;
            if same(block)? {
                cur = block.to_vec();
                break;
            }
        }
    }
    let mut chunk = cur.len() / 2;
    while chunk >= 1 && runs < max_runs {
        let mut changed = false;
        let mut start = 0;
        while start < cur.len() && runs < max_runs {
            let end = (start + chunk).min(cur.len());
            if cur.get(start..end).is_some_and(|s| s.iter().any(|x| x.to_bits() != 0)) {
                let mut c = cur.clone();
                c.iter_mut().skip(start).take(end - start).for_each(|x| *x = 0.0);
                runs += 1;
                if same(&c)? {
                    cur = c;
                    changed = true;
                }
            }
            start = end;
        }
        if !changed {
            chunk /= 2;
        }
    }
    Ok((cur, runs))
}

/// Runs a quantizer campaign.
pub fn run_quant_campaign(q: &mut dyn Quantizer, opts: &QuantOptions) -> Result<QuantReport, String> {
    let start = Instant::now();
    std::fs::create_dir_all(&opts.work_dir).map_err(|e| format!("{}: {e}", opts.work_dir.display()))?;
    if let Some(d) = &opts.findings_dir {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let mut counts: BTreeMap<GgmlType, TypeCounts> =
        opts.types.iter().map(|t| (*t, TypeCounts { ty: t.name().to_string(), ..TypeCounts::default() })).collect();
    let mut report = QuantReport {
        quantizer: q.name(),
        seed: opts.seed,
        rows: 0,
        runs: 0,
        elapsed: Duration::ZERO,
        stopped_by: "rows",
        types: Vec::new(),
        findings: Vec::new(),
    };
    if opts.types.is_empty() {
        return Err("no types to test".into());
    }
    let per_run = if q.batched() { opts.batch.max(1) } else { 1 };
    let mut rng = SplitMix64::new(opts.seed);
    let mut batch_index = 0usize;
    'outer: while report.rows < opts.rows {
        if opts.time.is_some_and(|t| start.elapsed() >= t) {
            report.stopped_by = "time";
            break;
        }
        let ty = opts.types.get(batch_index % opts.types.len()).copied().ok_or("no types")?;
        batch_index += 1;
        let len = row_len(&mut rng, ty);
        let n = per_run.min(usize::try_from(opts.rows - report.rows).unwrap_or(per_run));
        let classes: Vec<&str> = (0..n)
            .map(|_| ROW_CLASSES.get(usize::try_from(rng.below(7)).unwrap_or(0)).copied().unwrap_or("random"))
            .collect();
        let rows: Vec<Vec<f32>> = classes.iter().map(|c| row(&mut rng, c, len)).collect();
        let verdicts =
            run_batch(q, ty, &rows, len, &opts.work_dir).map_err(|e| format!("cannot run the quantizer: {e}"))?;
        report.runs += 1;
        if report.runs == 1 {
            if let Err(k) = verdicts.first().unwrap_or(&Ok((RowVerdict::Identical, String::new()))) {
                if k.what == CANNOT_RUN {
                    return Err(format!("the quantizer command cannot be run (exit 126 or 127): {}", q.name()));
                }
            }
        }
        for ((r, class), v) in rows.iter().zip(&classes).zip(verdicts) {
            report.rows += 1;
            let c = counts.entry(ty).or_default();
            c.rows += 1;
            let (kind, finding, detail) = match &v {
                Ok((RowVerdict::Identical, _)) => {
                    c.identical += 1;
                    continue;
                }
                Ok((verdict, detail)) => {
                    match verdict {
                        RowVerdict::SameValues => c.same_values += 1,
                        RowVerdict::WithinBound => c.within_bound += 1,
                        RowVerdict::Unbounded => c.unbounded += 1,
                        _ => c.wrong += 1,
                    }
                    (verdict_kind(ty, class, *verdict), *verdict == RowVerdict::Wrong, detail.clone())
                }
                Err(k) => {
                    c.failed += 1;
                    (k.clone(), true, k.what.clone())
                }
            };
            if let Some(g) = report.findings.iter_mut().find(|g| g.kind == kind) {
                g.rows += 1;
                continue;
            }
            let first_after_secs = start.elapsed().as_secs_f64();
            let shrink_start = Instant::now();
            let target = kind.clone();
            let bs = usize::try_from(ty.block_size()).unwrap_or(1).max(1);
            let mut same = |cand: &[f32]| -> std::io::Result<bool> {
                let v = run_batch(q, ty, &[cand.to_vec()], cand.len(), &opts.work_dir)?;
                Ok(match v.first() {
                    Some(Ok((verdict, _))) => verdict_kind(ty, class, *verdict) == target,
                    Some(Err(k)) => *k == target,
                    None => false,
                })
            };
            let (small, shrink_runs) = shrink_row(r, bs, opts.shrink_runs, &mut same).map_err(|e| e.to_string())?;
            let mut group = QuantGroup {
                kind,
                finding,
                rows: 1,
                first_after_secs,
                detail,
                original_len: r.len(),
                shrunk_len: small.len(),
                shrink_runs,
                shrink_secs: shrink_start.elapsed().as_secs_f64(),
                dir: None,
                row: small,
            };
            if let Some(dir) = &opts.findings_dir {
                save_quant(q, ty, dir, report.findings.len() + 1, &mut group, &opts.work_dir)?;
            }
            report.findings.push(group);
            if opts.time.is_some_and(|t| start.elapsed() >= t) {
                report.stopped_by = "time";
                break 'outer;
            }
        }
    }
    report.types = counts.into_values().collect();
    report.elapsed = start.elapsed();
    if let Some(dir) = &opts.findings_dir {
        let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("summary.json"), json).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("summary.txt"), quant_text(&report, true)).map_err(|e| e.to_string())?;
    }
    Ok(report)
}

fn save_quant(
    q: &mut dyn Quantizer,
    ty: GgmlType,
    dir: &Path,
    index: usize,
    g: &mut QuantGroup,
    work: &Path,
) -> Result<(), String> {
    let name = format!("{index:02}-{}", g.kind.slug());
    let sub = dir.join(&name);
    std::fs::create_dir_all(&sub).map_err(|e| e.to_string())?;
    let f32_bytes: Vec<u8> = g.row.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(sub.join("row.f32"), f32_bytes).map_err(|e| e.to_string())?;
    let mut expected = Vec::new();
    if quantize_chunk(ty, &g.row, g.row.len(), None, &mut expected).is_ok() {
        std::fs::write(sub.join("expected.bin"), &expected).map_err(|e| e.to_string())?;
    }
    let mut detail = g.detail.clone();
    if let Ok(Ok(got)) = q.quantize(ty, &g.row, g.row.len(), work) {
        if expected.len() == got.len() {
            detail = judge_row(ty, &g.row, &expected, &got).1;
        }
        std::fs::write(sub.join("got.bin"), &got).map_err(|e| e.to_string())?;
    }
    let text = format!(
        "kind:     {}\nquantizer: {}\ntype:     {} (id {})\nrows:     {}\nshrunk:   {} -> {} values in {} runs ({:.1} s)\nreproducer: {}\nfiles:    {name}/row.f32 (input, f32 LE), expected.bin (reference), got.bin\n",
        g.kind,
        q.name(),
        ty.name(),
        ty.id(),
        g.rows,
        g.original_len,
        g.shrunk_len,
        g.shrink_runs,
        g.shrink_secs,
        detail
    );
    std::fs::write(sub.join("report.txt"), text).map_err(|e| e.to_string())?;
    g.dir = Some(name);
    Ok(())
}

/// A quantizer campaign's summary.
pub fn quant_text(r: &QuantReport, timings: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "fuzz-quantizer: {}", r.quantizer);
    let _ = writeln!(
        s,
        "  {} rows in {} runs, {}, stopped by {}; seed {}",
        r.rows,
        r.runs,
        time(r.elapsed.as_secs_f64(), timings),
        r.stopped_by,
        r.seed
    );
    let _ = writeln!(
        s,
        "  {:<8} {:>7} {:>10} {:>11} {:>12} {:>10} {:>7} {:>7}",
        "type", "rows", "identical", "same-values", "within-bound", "unbounded", "wrong", "failed"
    );
    for t in &r.types {
        let _ = writeln!(
            s,
            "  {:<8} {:>7} {:>10} {:>11} {:>12} {:>10} {:>7} {:>7}",
            t.ty, t.rows, t.identical, t.same_values, t.within_bound, t.unbounded, t.wrong, t.failed
        );
    }
    for (i, g) in r.findings.iter().enumerate() {
        let _ = writeln!(
            s,
            "  [{}] {} ({} row{}; first after {}; shrunk from {} to {} values in {} runs)",
            i + 1,
            g.kind,
            g.rows,
            if g.rows == 1 { "" } else { "s" },
            time(g.first_after_secs, timings),
            g.original_len,
            g.shrunk_len,
            g.shrink_runs
        );
        let _ = writeln!(s, "      {}", g.detail);
        if let Some(dir) = &g.dir {
            let _ = writeln!(s, "      reproducer: {dir}/");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(ty: GgmlType, rows: &[f32], len: usize) -> Result<Vec<u8>, RunOutcome> {
        let mut out = Vec::new();
        quantize_chunk(ty, rows, len, None, &mut out)
            .map_err(|e| RunOutcome::Failed { code: Some(1), stderr: e.to_string() })?;
        Ok(out)
    }

    fn opts(types: Vec<GgmlType>, rows: u64) -> QuantOptions {
        QuantOptions {
            types,
            rows,
            batch: 8,
            seed: 5,
            time: None,
            shrink_runs: 200,
            work_dir: std::env::temp_dir().join(format!("gguf-fq-{}", std::process::id())),
            findings_dir: None,
        }
    }

    #[test]
    fn the_reference_against_itself_is_identical() {
        let mut q = FnQuantizer { name: "reference".into(), f: reference };
        let r = run_quant_campaign(&mut q, &opts(default_types(), 300)).unwrap();
        assert_eq!(r.rows, 300);
        assert!(r.findings.is_empty(), "{:#?}", r.findings);
        assert!(r.types.iter().all(|t| t.identical == t.rows));
        assert_eq!(r.exit_code(), 0);
    }

    #[test]
    fn a_broken_quantizer_is_found_and_shrunk() {
        // Flips the low nibble of the first quant byte of every Q4_0 block
        // whose input holds a value above 1 (a wrong code, beyond the bound).
        let mut q = FnQuantizer {
            name: "broken".into(),
            f: |ty: GgmlType, rows: &[f32], len: usize| {
                let mut out = reference(ty, rows, len)?;
                for (b, x) in out.chunks_mut(18).zip(rows.chunks(32)) {
                    if x.iter().any(|v| v.is_finite() && v.abs() > 1.0) && x.iter().all(|v| v.is_finite()) {
                        b[2] ^= 0x08;
                    }
                }
                Ok(out)
            },
        };
        let r = run_quant_campaign(&mut q, &opts(vec![GgmlType::Q4_0], 200)).unwrap();
        insta::assert_snapshot!("quant_broken_q4_0", quant_text(&r, false));
        let wrong: Vec<&QuantGroup> = r.findings.iter().filter(|g| g.finding).collect();
        assert!(!wrong.is_empty(), "{:#?}", r.findings);
        assert_eq!(r.exit_code(), 1);
        for g in wrong {
            assert!(g.kind.what.starts_with("wrong"), "{}", g.kind);
            // One block, and at most a few non-zero values left.
            assert_eq!(g.shrunk_len, 32, "{g:?}");
            assert!(g.row.iter().filter(|x| **x != 0.0).count() <= 2, "{:?}", g.row);
        }
    }

    #[test]
    fn a_failed_batch_is_split_to_find_the_rows_that_fail() {
        let mut q = FnQuantizer {
            name: "nan-refusing".into(),
            f: |ty: GgmlType, rows: &[f32], len: usize| {
                if rows.iter().any(|x| x.is_nan()) {
                    return Err(RunOutcome::Failed { code: Some(1), stderr: "error: NaN in input".into() });
                }
                reference(ty, rows, len)
            },
        };
        let r = run_quant_campaign(&mut q, &opts(vec![GgmlType::Q8_0], 300)).unwrap();
        let t = &r.types[0];
        assert!(t.failed > 0 && t.identical > 0 && t.failed + t.identical == t.rows, "{t:?}");
        let g = r.findings.iter().find(|g| g.kind.what == "failed: error: NaN in input").unwrap();
        // Shrunk to the one value that matters in one block.
        assert_eq!(g.shrunk_len, 32);
        assert_eq!(g.row.iter().filter(|x| x.to_bits() != 0).count(), 1, "{:?}", g.row);
        assert!(g.row.iter().any(|x| x.is_nan()));
    }

    #[test]
    fn verdicts() {
        let ty = GgmlType::Q8_0;
        let x: Vec<f32> = (0..32).map(|i| i as f32 / 7.0).collect();
        let e = reference(ty, &x, 32).unwrap();
        assert_eq!(judge_row(ty, &x, &e, &e).0, RowVerdict::Identical);
        let mut wrong = e.clone();
        wrong[5] ^= 0x40;
        assert_eq!(judge_row(ty, &x, &e, &wrong).0, RowVerdict::Wrong);
        let mut nan = x.clone();
        nan[3] = f32::NAN;
        let en = reference(ty, &nan, 32).unwrap();
        let mut other = en.clone();
        other[0] ^= 1;
        assert_eq!(judge_row(ty, &nan, &en, &other).0, RowVerdict::Unbounded);
        // A block with d = 0 decodes to zeros whatever its codes.
        let zeros = vec![0f32; 32];
        let ez = reference(ty, &zeros, 32).unwrap();
        let mut codes = ez.clone();
        codes[7] = 5;
        assert_eq!(judge_row(ty, &zeros, &ez, &codes).0, RowVerdict::SameValues);
        assert!(ROW_CLASSES.iter().all(|c| row(&mut SplitMix64::new(1), c, 64).len() == 64));
    }
}
