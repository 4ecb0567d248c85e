//! Text renderings of campaign results (the CLI prints these; findings
//! directories hold them as `summary.txt` and `report.txt`).

use std::fmt::Write as _;
use std::time::Duration;

use crate::harness::Mismatch;
use crate::harness::quant::QuantReport;
use crate::harness::writer::{CampaignReport, FindingGroup};

/// Serialises a duration as seconds (f64, millisecond precision).
pub fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 1000.0).round() / 1000.0)
}

fn time(d: f64, timings: bool) -> String {
    if timings { format!("{d:.1} s") } else { "T s".to_string() }
}

fn mismatch_line(m: &Mismatch) -> String {
    let at = m.offset.map(|o| format!(" (offset 0x{o:x})")).unwrap_or_default();
    format!("{}: expected {}, got {}{at}", m.path, m.expected, m.got)
}

/// One finding's report (`report.txt`). `timings: false` prints `T` for
/// every time, for snapshots.
pub fn finding_text(g: &FindingGroup, r: &CampaignReport, timings: bool) -> String {
    let mut s = String::new();
    let st = &g.shrunk.stats;
    let _ = writeln!(s, "kind:     {}", g.label());
    if g.types.len() > 1 {
        let per: Vec<String> = g.types.iter().map(|(t, n)| format!("{t} {n}")).collect();
        let _ = writeln!(s, "types:    {}", per.join(", "));
    }
    let _ = writeln!(s, "writer:   {}", r.writer);
    let _ = writeln!(
        s,
        "cases:    {} (first: case {} of seed {}, after {})",
        g.cases,
        g.first_case,
        r.seed,
        time(g.first_after_secs, timings)
    );
    let _ = writeln!(s, "first:    {}", mismatch_line(&g.first));
    let _ = writeln!(
        s,
        "shrunk:   {} -> {} ({} writer runs, {}{})",
        st.before,
        st.after,
        st.runs,
        time(st.elapsed.as_secs_f64(), timings),
        if st.budget_exhausted { ", budget exhausted" } else { "" }
    );
    if let Some(dir) = &g.shrunk.dir {
        let out = if g.shrunk.out.is_empty() { "" } else { ", out.gguf" };
        let _ = writeln!(s, "files:    {dir}/model.json{out}");
    }
    if g.shrunk.mismatches.is_empty() {
        let _ = writeln!(s, "reproducer: (the shrunk description no longer shows it on a re-run: flaky)");
    }
    for m in &g.shrunk.mismatches {
        let _ = writeln!(s, "reproducer: {}", mismatch_line(m));
    }
    s
}

/// A campaign's summary.
pub fn campaign_text(r: &CampaignReport, timings: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "fuzz-writer: {}", r.writer);
    let _ = writeln!(
        s,
        "  {} cases ({} skipped), {}, stopped by {}; profile {}, seed {}",
        r.cases,
        r.skipped,
        time(r.elapsed.as_secs_f64(), timings),
        r.stopped_by,
        r.profile,
        r.seed
    );
    let _ = writeln!(s, "  claims: {}", r.capabilities);
    if r.findings.is_empty() {
        let _ = writeln!(s, "  no findings");
    } else {
        let _ = writeln!(
            s,
            "  {} kind{} of finding in {} case{}:",
            r.findings.len(),
            if r.findings.len() == 1 { "" } else { "s" },
            r.cases_with_findings,
            if r.cases_with_findings == 1 { "" } else { "s" }
        );
    }
    for (i, g) in r.findings.iter().enumerate() {
        let _ = writeln!(
            s,
            "  [{}] {} ({} case{}; first at case {}, {}; shrunk to {} in {} runs)",
            i + 1,
            g.label(),
            g.cases,
            if g.cases == 1 { "" } else { "s" },
            g.first_case,
            time(g.first_after_secs, timings),
            g.shrunk.stats.after,
            g.shrunk.stats.runs
        );
        if let Some(m) = g.shrunk.mismatches.first() {
            let _ = writeln!(s, "      {}", mismatch_line(m));
        }
        if let Some(dir) = &g.shrunk.dir {
            let _ = writeln!(s, "      reproducer: {dir}/");
        }
    }
    for (k, n) in &r.infos {
        let _ = writeln!(s, "  info: {k} ({n} case{})", if *n == 1 { "" } else { "s" });
    }
    s
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
