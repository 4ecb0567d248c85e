//! `gguf-validate.toml`: a project's profile, rule levels, per-path levels
//! and justified suppressions, and baselines of accepted findings.
//!
//! ```toml
//! profile = "strict"
//! deny-warnings = false
//! [rules]
//! key-naming = "error"          # error | warning | info | allow
//! [[overrides]]                 # per-path levels, globs relative to the config file
//! paths = ["legacy/**"]
//! rules = { trailing-bytes = "allow" }
//! [[suppress]]                  # one finding class on some files, with a reason
//! rule = "tensor-name-nul"
//! paths = ["vendor/old.gguf"]
//! reason = "upstream file, reported"
//! sha256 = "..."                # optional: only while the file's metadata has this hash
//! until = "2027-06-30"          # optional: an expired suppression is itself reported
//! ```
//!
//! Precedence, lowest first: the profile's levels, `[rules]`, matching
//! `[[overrides]]` in file order, then the command line's `--allow`,
//! `--warn`, `--deny`. A config *discovered* next to the models (which
//! whoever supplies a model could also supply) cannot lower the level of a
//! security rule ([`SECURITY_RULES`]) or suppress one: only a config given
//! with `--config`, or the command line, can. So its `profile` leaves the
//! security rules at their strict levels (when it would lower them) and its
//! `container-only = true` (which would skip the layers that report most of
//! them) is ignored, each with a message in [`Config::ignored`]. `sha256` pins the file's
//! metadata (header, key/values, tensor infos), never its data, so pinning
//! costs no scan of a 100 GB file. For a URL it is the hash of the metadata
//! fetched: the pin holds while the remote file's metadata is unchanged and
//! says nothing of its tensor data (`hash --check` pins that). Globs match
//! a URL by its text without query.
#![forbid(unsafe_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;

use crate::report::{Applied, Diagnostic, Options, Report};
use crate::rules::{Level, Profile, RuleId};

/// The file name looked for in the working directory and its parents.
pub const CONFIG_FILE_NAME: &str = "gguf-validate.toml";

/// Rules a discovered config may neither lower nor suppress: findings that
/// mean code execution or memory-unsafe loading (beyond the fatal decoding
/// rules, which nothing can lower).
pub const SECURITY_RULES: &[RuleId] = &[
    RuleId::TemplateCodeExecution,
    RuleId::TemplateAnalysisLimit,
    RuleId::ModelBlockCount,
    RuleId::ModelLayerArray,
    RuleId::ModelExpertCount,
    RuleId::TokenizerArrayLength,
    RuleId::TokenIdRange,
    RuleId::TokenizerByteToken,
    RuleId::TokenizerTokenType,
    RuleId::TokenizerDuplicateToken,
    RuleId::StandardKeyType,
    RuleId::KeyControl,
    RuleId::TensorElementCountOverflow,
    RuleId::TensorByteSizeOverflow,
    RuleId::DataSizeOverflow,
    RuleId::TensorDataOutOfBounds,
    RuleId::TensorDataOverlap,
    RuleId::TensorNameDuplicateAfterNul,
];

/// Where a config came from: given on the command line (trusted), or found
/// next to the files (not trusted to weaken security rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// `--config FILE`.
    Explicit,
    /// Found in the working directory or a parent.
    Discovered,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawConfig {
    profile: Option<String>,
    deny_warnings: Option<bool>,
    container_only: Option<bool>,
    llama_cpp: Option<String>,
    loader: Option<String>,
    #[serde(default)]
    rules: BTreeMap<String, String>,
    #[serde(default)]
    overrides: Vec<RawOverride>,
    #[serde(default)]
    suppress: Vec<RawSuppress>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOverride {
    paths: Vec<String>,
    rules: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSuppress {
    rule: String,
    paths: Vec<String>,
    reason: String,
    sha256: Option<String>,
    until: Option<String>,
}

/// A parsed, checked config.
#[derive(Debug)]
pub struct Config {
    /// The file it was read from.
    pub path: PathBuf,
    /// How it was found.
    pub origin: Origin,
    /// `profile`, when set.
    pub profile: Option<Profile>,
    /// `deny-warnings`, when set.
    pub deny_warnings: Option<bool>,
    /// `container-only`, when set.
    pub container_only: Option<bool>,
    /// `llama-cpp` (`"b4600"`, `"b4600.."`), when set: the llama.cpp
    /// releases judged against.
    pub llama_cpp: Option<crate::llama_cpp::Releases>,
    /// `loader` (`"sd.cpp"`), when set: the loader every file is judged
    /// against ([`crate::loader`]).
    pub loader: Option<crate::loader::Loader>,
    rules: Vec<(RuleId, Level)>,
    overrides: Vec<(GlobSet, Vec<(RuleId, Level)>)>,
    suppressions: Vec<Suppression>,
    /// Settings that were ignored (a discovered config lowering a security
    /// rule), one message each.
    pub ignored: Vec<String>,
}

/// One `[[suppress]]` entry.
#[derive(Debug)]
pub struct Suppression {
    rule: RuleId,
    globs: GlobSet,
    reason: String,
    sha256: Option<String>,
    until: Option<(i32, u32, u32)>,
    until_text: Option<String>,
}

fn level_of(s: &str) -> Result<Level, String> {
    match s {
        "error" | "deny" => Ok(Level::Error),
        "warning" | "warn" => Ok(Level::Warning),
        "info" => Ok(Level::Info),
        "allow" => Ok(Level::Allow),
        _ => Err(format!("unknown level `{s}` (error, warning, info, allow)")),
    }
}

fn rule_of(s: &str) -> Result<RuleId, String> {
    let r = RuleId::from_id(s).ok_or_else(|| format!("unknown rule `{s}` (see `gguf-validate rules`)"))?;
    if r.rule().fatal {
        return Err(format!("rule `{s}` is a decoding error: its level cannot be changed"));
    }
    Ok(r)
}

fn globs(base: &Path, patterns: &[String]) -> Result<GlobSet, String> {
    // Globs are relative to the config file's directory, taken literally:
    // a directory named `models[v2]` or `{a,b}` is no pattern. The root
    // (`/`) gives `/PATTERN`, not `//PATTERN`.
    let dir = base.display().to_string();
    let dir = globset::escape(dir.strip_suffix('/').unwrap_or(&dir));
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        let full = if Path::new(p).is_absolute() { p.clone() } else { format!("{dir}/{p}") };
        b.add(Glob::new(&full).map_err(|e| format!("glob `{p}`: {e}"))?);
    }
    b.build().map_err(|e| e.to_string())
}

/// `YYYY-MM-DD`.
fn date_of(s: &str) -> Result<(i32, u32, u32), String> {
    let bad = || format!("`{s}` is not a date (YYYY-MM-DD)");
    let mut it = s.splitn(3, '-');
    let y: i32 = it.next().and_then(|v| v.parse().ok()).ok_or_else(bad)?;
    let m: u32 = it.next().and_then(|v| v.parse().ok()).filter(|m| (1..=12).contains(m)).ok_or_else(bad)?;
    let d: u32 = it.next().and_then(|v| v.parse().ok()).filter(|d| (1..=31).contains(d)).ok_or_else(bad)?;
    Ok((y, m, d))
}

/// Today's civil date (UTC), from the system clock.
pub fn today() -> (i32, u32, u32) {
    let secs = web_time::SystemTime::now().duration_since(web_time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    civil_from_days(i64::try_from(secs / 86_400).unwrap_or(0))
}

/// Days since 1970-01-01 to (year, month, day) (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i32, u32, u32) {
    let z = z.saturating_add(719_468);
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    (i32::try_from(y).unwrap_or(0), u32::try_from(m).unwrap_or(1), u32::try_from(d).unwrap_or(1))
}

impl Config {
    /// Parses `text` (the contents of `path`).
    pub fn parse(text: &str, path: &Path, origin: Origin) -> Result<Config, String> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| format!("{}: {e}", path.display()))?;
        let at = |e: String| format!("{}: {e}", path.display());
        let base = path.parent().unwrap_or(Path::new("."));
        let base = if base.as_os_str().is_empty() { Path::new(".") } else { base };
        let mut ignored = Vec::new();
        let profile = raw.profile.as_deref().map(str::parse::<Profile>).transpose().map_err(at)?;
        let llama_cpp = raw.llama_cpp.as_deref().map(str::parse).transpose().map_err(at)?;
        let loader = raw.loader.as_deref().map(str::parse).transpose().map_err(at)?;
        let mut rules = Vec::new();
        // A discovered config's profile applies, except to the security
        // rules it would lower: those stay at their strict levels (first in
        // `[rules]`, so that the config may still raise them).
        if let Some(p) = profile.filter(|_| origin == Origin::Discovered) {
            let floors: Vec<(RuleId, Level)> = SECURITY_RULES
                .iter()
                .map(|r| (*r, r.rule().level(Profile::Strict)))
                .filter(|(r, strict)| r.rule().level(p) < *strict)
                .collect();
            if !floors.is_empty() {
                let names: Vec<&str> = floors.iter().map(|(r, _)| r.id()).collect();
                ignored.push(format!(
                    "{}: profile `{}` does not lower the security rules {} here: a config found next to the files keeps them at their strict levels (name the config explicitly to trust it)",
                    path.display(),
                    p.name(),
                    names.join(", ")
                ));
                rules.extend(floors);
            }
        }
        // Skipping the model and template layers would hide their security
        // findings.
        let container_only = match raw.container_only {
            Some(true) if origin == Origin::Discovered => {
                ignored.push(format!(
                    "{}: container-only = true ignored: a config found next to the files cannot turn off the model and template checks (name the config explicitly to trust it)",
                    path.display()
                ));
                None
            }
            c => c,
        };
        let mut keep = |rule: RuleId, level: Level, what: &str| -> bool {
            let lowers = level < rule.rule().levels.strict.min(Level::Error);
            if origin == Origin::Discovered && SECURITY_RULES.contains(&rule) && lowers {
                ignored.push(format!(
                    "{}: {what} `{}` = {} ignored: a config found next to the files cannot lower a security rule (name the config explicitly to trust it)",
                    path.display(),
                    rule.id(),
                    level.name()
                ));
                return false;
            }
            true
        };
        for (id, lvl) in &raw.rules {
            let (r, l) = (rule_of(id).map_err(at)?, level_of(lvl).map_err(at)?);
            if keep(r, l, "[rules]") {
                rules.push((r, l));
            }
        }
        let mut overrides = Vec::new();
        for o in &raw.overrides {
            let mut levels = Vec::new();
            for (id, lvl) in &o.rules {
                let (r, l) = (rule_of(id).map_err(at)?, level_of(lvl).map_err(at)?);
                if keep(r, l, "[[overrides]]") {
                    levels.push((r, l));
                }
            }
            overrides.push((globs(base, &o.paths).map_err(at)?, levels));
        }
        let mut suppressions = Vec::new();
        for s in &raw.suppress {
            let rule = rule_of(&s.rule).map_err(at)?;
            if s.reason.trim().is_empty() {
                return Err(at(format!("[[suppress]] of `{}` needs a reason", s.rule)));
            }
            // Checked whether or not the entry is kept: whether a config is
            // refused does not depend on where it was found.
            let until = s.until.as_deref().map(date_of).transpose().map_err(at)?;
            let entry_globs = globs(base, &s.paths).map_err(at)?;
            if !keep(rule, Level::Allow, "[[suppress]]") {
                continue;
            }
            suppressions.push(Suppression {
                rule,
                globs: entry_globs,
                reason: s.reason.clone(),
                sha256: s.sha256.as_ref().map(|h| h.to_ascii_lowercase()),
                until,
                until_text: s.until.clone(),
            });
        }
        Ok(Config {
            path: path.to_path_buf(),
            origin,
            profile,
            deny_warnings: raw.deny_warnings,
            container_only,
            llama_cpp,
            loader,
            rules,
            overrides,
            suppressions,
            ignored,
        })
    }

    /// Whether any suppression is pinned to a metadata sha256 (the files'
    /// metadata must then be hashed).
    pub fn has_pins(&self) -> bool {
        self.suppressions.iter().any(|s| s.sha256.is_some())
    }

    /// Reads `path` (`--config`).
    pub fn load(path: &Path, origin: Origin) -> Result<Config, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Config::parse(&text, path, origin)
    }

    /// The nearest `gguf-validate.toml` in `dir` or its parents.
    pub fn discover(dir: &Path) -> Option<PathBuf> {
        dir.ancestors().map(|d| d.join(CONFIG_FILE_NAME)).find(|p| p.is_file())
    }

    /// The config of a run: `explicit` (trusted) when given, else the
    /// nearest `gguf-validate.toml` from the working directory up when
    /// `discover`, else none. Every front end resolves its config here.
    pub fn for_run(explicit: Option<&Path>, discover: bool) -> Result<Option<Config>, String> {
        if let Some(p) = explicit {
            let p = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
            return Config::load(&p, Origin::Explicit).map(Some);
        }
        if !discover {
            return Ok(None);
        }
        let cwd = std::env::current_dir().unwrap_or_default();
        Config::discover(&cwd).map(|p| Config::load(&p, Origin::Discovered)).transpose()
    }

    /// The rule levels of the config for a file at `path`, to apply before
    /// the command line's (`[rules]`, then matching `[[overrides]]`).
    pub fn levels_for(&self, path: &Path) -> Vec<(RuleId, Level)> {
        let mut out = self.rules.clone();
        for (g, levels) in &self.overrides {
            if g.is_match(path) {
                out.extend(levels.iter().copied());
            }
        }
        out
    }

    /// Applies the suppressions matching `path` to its report: matching
    /// findings are set aside (counts and verdict recomputed) and listed as
    /// [`Applied`]. `metadata_sha256` is the hash of the file's metadata
    /// (for pinned entries). An entry past its `until` date, or pinned to
    /// another hash, is not applied and is reported as a
    /// `suppression-not-applied` finding of its own.
    pub fn apply(
        &self,
        path: &Path,
        report: &mut Report,
        opts: &Options,
        metadata_sha256: Option<&str>,
        today: (i32, u32, u32),
    ) {
        for s in &self.suppressions {
            if !s.globs.is_match(path) {
                continue;
            }
            let why_not = if s.until.is_some_and(|until| today > until) {
                Some(format!(
                    "the suppression of `{}` ({}) expired on {}",
                    s.rule.id(),
                    s.reason,
                    s.until_text.as_deref().unwrap_or("")
                ))
            } else {
                s.sha256.as_ref().filter(|pin| metadata_sha256 != Some(pin.as_str())).map(|pin| {
                    format!(
                        "the suppression of `{}` ({}) is pinned to metadata sha256 {pin}; this file's is {}",
                        s.rule.id(),
                        s.reason,
                        metadata_sha256.unwrap_or("unknown")
                    )
                })
            };
            match why_not {
                Some(message) => add_finding(report, opts, RuleId::SuppressionNotApplied, &self.path, message),
                None => {
                    set_aside(report, opts, s.rule, None, "config", &s.reason);
                }
            }
        }
    }
}

/// Adds a finding about the run itself (offset 0, path `config FILE`).
fn add_finding(report: &mut Report, opts: &Options, rule: RuleId, config: &Path, message: String) {
    let severity = opts.level(rule);
    let c = &mut report.counts;
    match severity {
        Level::Error => c.errors = c.errors.saturating_add(1),
        Level::Warning => c.warnings = c.warnings.saturating_add(1),
        Level::Info => c.infos = c.infos.saturating_add(1),
        Level::Allow => return,
    }
    // Offset 0: before the file's own findings (the list stays in file
    // order), and at most `MAX_DIAGNOSTICS_PER_RULE` listed, the rest
    // counted, as the validator's own rules.
    let listed = report.diagnostics.iter().filter(|d| d.rule == rule).count();
    if listed < crate::limits::MAX_DIAGNOSTICS_PER_RULE {
        let at = report.diagnostics.partition_point(|d| d.offset == 0);
        let d = Diagnostic {
            rule,
            severity,
            offset: 0,
            length: None,
            path: format!("config {}", config.display()),
            message,
            caused_by: None,
        };
        report.diagnostics.insert(at, d);
    } else {
        let n = report.suppressed.entry(rule.id()).or_insert(0);
        *n = n.saturating_add(1);
    }
    report.valid = c.errors == 0 && !(opts.deny_warnings && c.warnings > 0);
}

/// Removes the findings of `rule` (at `field` when given: listed findings
/// with that path only) from `report`, recomputing counts and the verdict,
/// and lists what was set aside.
pub fn set_aside(
    report: &mut Report,
    opts: &Options,
    rule: RuleId,
    field: Option<&str>,
    source: &'static str,
    reason: &str,
) -> u64 {
    let (gone, kept): (Vec<Diagnostic>, Vec<Diagnostic>) = std::mem::take(&mut report.diagnostics)
        .into_iter()
        .partition(|d| d.rule == rule && field.is_none_or(|f| d.path == f));
    report.diagnostics = kept;
    let mut n = u64::try_from(gone.len()).unwrap_or(u64::MAX);
    if field.is_none() {
        n = n.saturating_add(report.suppressed.remove(rule.id()).unwrap_or(0));
    }
    if n == 0 {
        return 0;
    }
    let c = &mut report.counts;
    match opts.level(rule) {
        Level::Error => c.errors = c.errors.saturating_sub(n),
        Level::Warning => c.warnings = c.warnings.saturating_sub(n),
        Level::Info => c.infos = c.infos.saturating_sub(n),
        Level::Allow => {}
    }
    report.valid = c.errors == 0 && !(opts.deny_warnings && c.warnings > 0);
    match report.applied.iter_mut().find(|a| a.rule == rule.id() && a.source == source && a.reason == reason) {
        Some(a) => {
            a.findings = a.findings.saturating_add(n);
            a.set_aside.extend(gone);
        }
        None => report.applied.push(Applied {
            rule: rule.id(),
            source,
            reason: reason.to_string(),
            findings: n,
            set_aside: gone,
        }),
    }
    n
}

/// The sha256 of a GGUF file's metadata (header, key/values and tensor
/// infos: the first `metadata_end` bytes, `validate::Layout::metadata_end`),
/// which config pins name; `None` when `metadata` is shorter.
pub fn metadata_sha256(metadata: &[u8], metadata_end: u64) -> Option<String> {
    use sha2::Digest;
    let bytes = metadata.get(..usize::try_from(metadata_end).ok()?)?;
    let digest = sha2::Sha256::digest(bytes);
    Some(digest.iter().map(|b| format!("{b:02x}")).collect())
}

/// Accepted findings: `rule|file|field path` identities, one per line, as
/// `--write-baseline` writes them (offsets are not part of an identity).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Baseline {
    ids: BTreeSet<String>,
}

impl Baseline {
    /// The identity of a finding: one line, whatever the file's name (a
    /// newline or carriage return in it is written `\n`, `\r`; field
    /// paths are already escaped by the validator).
    pub fn identity(rule: RuleId, file: &str, field: &str) -> String {
        let one_line = |s: &str| s.replace('\n', "\\n").replace('\r', "\\r");
        format!("{}|{}|{}", rule.id(), one_line(file), one_line(field))
    }

    /// Parses a baseline file (`#` comments and blank lines allowed).
    pub fn parse(text: &str) -> Baseline {
        // Field paths may end in a space (`kv[1] ` for an empty key): lines
        // are taken as written, less a `\r`.
        let ids = text
            .lines()
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
            .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .map(String::from);
        Baseline { ids: ids.collect() }
    }

    /// Whether `identity` (as [`Baseline::identity`] makes it) is accepted.
    pub fn contains(&self, identity: &str) -> bool {
        self.ids.contains(identity)
    }

    /// How many identities the baseline holds.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The identities of a report's listed findings.
    pub fn of_report(file: &str, report: &Report) -> Vec<String> {
        report.diagnostics.iter().map(|d| Baseline::identity(d.rule, file, &d.path)).collect()
    }

    /// Sets aside the findings of `report` already in the baseline.
    pub fn apply(&self, file: &str, report: &mut Report, opts: &Options) {
        let known: Vec<(RuleId, String)> = report
            .diagnostics
            .iter()
            .filter(|d| self.ids.contains(&Baseline::identity(d.rule, file, &d.path)))
            .map(|d| (d.rule, d.path.clone()))
            .collect();
        for (rule, field) in known {
            set_aside(report, opts, rule, Some(&field), "baseline", "accepted in the baseline");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_779), (2026, 11, 22));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn a_discovered_config_cannot_lower_a_security_rule() {
        let text = "[rules]\ntemplate-code-execution = \"allow\"\nkey-naming = \"allow\"\n";
        let found = Config::parse(text, Path::new("x/gguf-validate.toml"), Origin::Discovered).unwrap();
        assert_eq!(found.levels_for(Path::new("x/a.gguf")), vec![(RuleId::KeyNaming, Level::Allow)]);
        assert_eq!(found.ignored.len(), 1);
        let given = Config::parse(text, Path::new("x/gguf-validate.toml"), Origin::Explicit).unwrap();
        assert_eq!(given.levels_for(Path::new("x/a.gguf")).len(), 2);
        assert!(given.ignored.is_empty());
    }

    #[test]
    fn bad_configs_are_refused_with_the_reason() {
        let p = Path::new("gguf-validate.toml");
        for (text, want) in [
            ("[rules]\nno-such-rule = \"allow\"\n", "unknown rule"),
            ("[rules]\nkey-naming = \"loud\"\n", "unknown level"),
            ("[rules]\nmagic = \"allow\"\n", "decoding error"),
            ("profile = \"lax\"\n", "unknown profile"),
            ("[[suppress]]\nrule = \"key-naming\"\npaths = [\"a\"]\nreason = \" \"\n", "needs a reason"),
            (
                "[[suppress]]\nrule = \"key-naming\"\npaths = [\"a\"]\nreason = \"r\"\nuntil = \"2027-13-01\"\n",
                "not a date",
            ),
            ("colour = true\n", "unknown field"),
        ] {
            let e = Config::parse(text, p, Origin::Explicit).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    fn report_with(findings: &[(RuleId, u64)], opts: &Options) -> Report {
        let mut r = crate::Validator::new(opts.clone()).validate_bytes(b"").report;
        r.diagnostics.clear();
        r.counts = crate::report::Counts::default();
        r.suppressed.clear();
        for (rule, offset) in findings {
            r.diagnostics.push(Diagnostic {
                rule: *rule,
                severity: opts.level(*rule),
                offset: *offset,
                length: None,
                path: "kv[0] x".into(),
                message: "m".into(),
                caused_by: None,
            });
            match opts.level(*rule) {
                Level::Error => r.counts.errors += 1,
                Level::Warning => r.counts.warnings += 1,
                Level::Info => r.counts.infos += 1,
                Level::Allow => {}
            }
        }
        r.valid = r.counts.errors == 0;
        r
    }

    /// Found by the `config_file` fuzz property: `profile = "ggml"` (or
    /// `spec`) in a discovered config made `template-code-execution` a
    /// warning, so a file with a code-executing template passed.
    #[test]
    fn a_discovered_profile_keeps_the_security_rules_at_their_strict_levels() {
        let p = Path::new("/proj/gguf-validate.toml");
        for profile in [Profile::Spec, Profile::Ggml] {
            let text = format!("profile = \"{}\"\n", profile.name());
            let found = Config::parse(&text, p, Origin::Discovered).unwrap();
            assert_eq!(found.profile, Some(profile), "the profile itself applies");
            let opts =
                Options { profile, overrides: found.levels_for(Path::new("/proj/a.gguf")), ..Options::default() };
            for r in SECURITY_RULES {
                assert!(opts.level(*r) >= r.rule().level(Profile::Strict), "{r} lowered by a discovered {profile}");
            }
            assert_eq!(opts.level(RuleId::TemplateCodeExecution), Level::Error);
            assert_eq!(found.ignored.len(), 1, "{:?}", found.ignored);
            assert!(found.ignored[0].contains("template-code-execution"), "{}", found.ignored[0]);
            let given = Config::parse(&text, p, Origin::Explicit).unwrap();
            assert!(given.levels_for(Path::new("/proj/a.gguf")).is_empty(), "--config is trusted");
        }
        let strict = Config::parse("profile = \"strict\"\n", p, Origin::Discovered).unwrap();
        assert!(strict.levels_for(Path::new("/proj/a.gguf")).is_empty() && strict.ignored.is_empty());
    }

    /// Found by the `config_file` fuzz property: `container-only = true`
    /// in a discovered config skipped the template and model layers, and
    /// with them their security findings.
    #[test]
    fn a_discovered_config_cannot_turn_off_the_model_and_template_checks() {
        let p = Path::new("/proj/gguf-validate.toml");
        let found = Config::parse("container-only = true\n", p, Origin::Discovered).unwrap();
        assert_eq!(found.container_only, None);
        assert!(found.ignored.iter().any(|m| m.contains("container-only")), "{:?}", found.ignored);
        let off = Config::parse("container-only = false\n", p, Origin::Discovered).unwrap();
        assert_eq!(off.container_only, Some(false));
        assert!(off.ignored.is_empty());
        let given = Config::parse("container-only = true\n", p, Origin::Explicit).unwrap();
        assert_eq!(given.container_only, Some(true));
    }

    /// Found by the `config_file` fuzz property: the config's directory was
    /// pasted into the glob unescaped, so a config in `/proj[1]` or
    /// `/x/{a,b}` matched no file below it, and one in `/` none at all
    /// (`//models/**`).
    #[test]
    fn globs_take_the_config_directory_literally() {
        for dir in ["/proj[1]", "/x/{a,b}", "/s/*?/**", "/", "/plain"] {
            let config = Path::new(dir).join("gguf-validate.toml");
            let text = "[[overrides]]\npaths = [\"models/*.gguf\"]\nrules = { key-naming = \"allow\" }\n";
            let c = Config::parse(text, &config, Origin::Explicit).unwrap();
            let inside = Path::new(dir).join("models/a.gguf");
            assert_eq!(c.levels_for(&inside), vec![(RuleId::KeyNaming, Level::Allow)], "{}", inside.display());
            assert!(c.levels_for(Path::new("/proj1/models/a.gguf")).is_empty() || dir == "/", "{dir}");
        }
        let c = Config::parse(
            "[[overrides]]\npaths = [\"**\"]\nrules = {}\n",
            Path::new("/x/{a,b}/c.toml"),
            Origin::Explicit,
        );
        assert!(c.is_ok());
    }

    /// Found by the `config_file` fuzz property: a discovered config's
    /// suppression of a security rule was skipped before its `until` and
    /// globs were checked, so the same file was refused with `--config` and
    /// accepted when discovered.
    #[test]
    fn a_config_is_refused_whatever_its_origin() {
        let text = "[[suppress]]\nrule = \"key-control\"\npaths = [\"a\"]\nreason = \"r\"\nuntil = \"2027-13-01\"\n";
        let bad_glob = "[[suppress]]\nrule = \"key-control\"\npaths = [\"[a\"]\nreason = \"r\"\n";
        for t in [text, bad_glob] {
            for origin in [Origin::Explicit, Origin::Discovered] {
                assert!(Config::parse(t, Path::new("/p/c.toml"), origin).is_err(), "{origin:?}: {t}");
            }
        }
    }

    /// Found by the `config_file` fuzz property: findings about the config
    /// were appended after the file's own (the list is in offset order),
    /// and any number of them were listed (the cap is 50 per rule).
    #[test]
    fn config_findings_keep_the_report_in_order_and_capped() {
        let mut text = String::new();
        for _ in 0..crate::limits::MAX_DIAGNOSTICS_PER_RULE + 5 {
            text.push_str(
                "[[suppress]]\nrule = \"key-naming\"\npaths = [\"**\"]\nreason = \"r\"\nuntil = \"2001-01-01\"\n",
            );
        }
        let c = Config::parse(&text, Path::new("/p/gguf-validate.toml"), Origin::Explicit).unwrap();
        let opts = Options::new(Profile::Strict);
        let mut r = report_with(&[(RuleId::KeyEmpty, 0), (RuleId::KeyNaming, 40)], &opts);
        c.apply(Path::new("/p/a.gguf"), &mut r, &opts, None, (2026, 11, 22));
        let offsets: Vec<u64> = r.diagnostics.iter().map(|d| d.offset).collect();
        assert!(offsets.windows(2).all(|w| w[0] <= w[1]), "{offsets:?}");
        let listed = r.diagnostics.iter().filter(|d| d.rule == RuleId::SuppressionNotApplied).count();
        assert_eq!(listed, crate::limits::MAX_DIAGNOSTICS_PER_RULE);
        assert_eq!(r.suppressed.get("suppression-not-applied"), Some(&5));
        assert_eq!(r.counts.errors + r.counts.warnings + r.counts.infos, 2 + 55, "every finding counted");
        assert_eq!(r.diagnostics.first().map(|d| d.rule), Some(RuleId::KeyEmpty), "after the file's findings at 0");
        assert_eq!(r.diagnostics.last().map(|d| d.rule), Some(RuleId::KeyNaming));
    }

    /// Found by the `baseline` fuzz property: a file name with a newline
    /// gave an identity of two lines, which `--baseline` read back as two
    /// other identities, so the finding was never accepted.
    #[test]
    fn baseline_identities_are_one_line() {
        let opts = Options::new(Profile::Strict);
        let r = report_with(&[(RuleId::KeyNaming, 8)], &opts);
        for name in ["new\nline.gguf", "cr\r.gguf", "end\r", "plain.gguf"] {
            let ids = Baseline::of_report(name, &r);
            assert!(ids.iter().all(|id| !id.contains(['\n', '\r'])), "{ids:?}");
            let b = Baseline::parse(&format!("# header\n{}\n", ids.join("\n")));
            assert_eq!(b.len(), 1);
            let mut after = r.clone();
            b.apply(name, &mut after, &opts);
            assert!(after.diagnostics.is_empty() && after.valid, "{name:?}");
        }
        assert_eq!(Baseline::identity(RuleId::KeyEmpty, "a.gguf", "kv[1] "), "key-empty|a.gguf|kv[1] ");
    }
}
