//! `gguf-validate.toml` through [`Config::parse`], then applied to the
//! reports of a small project of real files, as the CLI does.
//!
//! Every input is used twice: as the text of a config (raw bytes, lossy
//! UTF-8), and as the [`Unstructured`] source of a generated config that
//! uses every table and key of the format (`profile`, `deny-warnings`,
//! `container-only`, `[rules]`, `[[overrides]]` with globs, `[[suppress]]`
//! with reasons, `sha256` pins and `until` dates), valid or with known
//! mistakes, whose outcome is computed independently.
//!
//! For any text, under both origins:
//! - no panic; the same answer twice; an error is a message that names the
//!   config file;
//! - applying is deterministic and keeps a report consistent: offsets in
//!   order, severities as the options say, `valid` as the counts say, at
//!   most [`MAX_DIAGNOSTICS_PER_RULE`] listed per rule, only
//!   `suppression-not-applied` findings added;
//! - a *discovered* config can neither lower a security rule
//!   ([`SECURITY_RULES`]) below the level the run has without it (whatever
//!   profile the command line gives), nor skip the layers that report
//!   them, nor suppress one: every security finding of a file without the
//!   config is still counted with it.
//!
//! For a generated config, in addition: it is refused exactly when it has a
//! mistake (whatever its origin), the levels per path are the `[rules]`
//! then the matching `[[overrides]]` in file order, and each file's
//! findings are those of a simulation of the `[[suppress]]` entries (glob
//! match, `until`, pin).
#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use arbitrary::Unstructured;
use gguf_validate_core::config::{Config, Origin, SECURITY_RULES, metadata_sha256};
use gguf_validate_core::limits::MAX_DIAGNOSTICS_PER_RULE;
use gguf_validate_core::{Level, Options, Profile, RULES, Report, RuleId, Validator};

/// A civil date: year, month, day.
type Date = (i32, u32, u32);

/// The day the suppressions are applied on.
pub const TODAY: Date = (2026, 11, 22);

/// The project: each file's path (under the config's directory unless
/// absolute) and contents.
const FILES: [(&str, &[u8]); 5] = [
    ("models/a.gguf", include_bytes!("../../corpus/gguf/i_key_uppercase.gguf")),
    ("models/bad.gguf", include_bytes!("../../corpus/gguf/n_key_empty.gguf")),
    ("vendor/old.gguf", include_bytes!("../../corpus/gguf/i_key_escape_sequence.gguf")),
    ("legacy/x/t.gguf", include_bytes!("../../corpus/gguf/i_template_exec_os_system.gguf")),
    ("/elsewhere/e.gguf", include_bytes!("../../corpus/gguf/i_template_exec_os_system.gguf")),
];

/// Directories the config may sit in (absolute, as the CLI makes them),
/// some with characters that globs would read as patterns.
pub const BASES: [&str; 6] = ["/proj", "/", "/work dir/p", "/proj[1]", "/x/{a,b}", "/s/*?/**"];

/// Globs of the generated configs, with the files (bits of [`FILES`]) they
/// match; `None`: not a glob. globset's defaults: `*` also matches `/`.
const GLOBS: [(&str, Option<u8>); 16] = [
    ("models/a.gguf", Some(0b00001)),
    ("models/*.gguf", Some(0b00011)),
    ("models/**", Some(0b00011)),
    ("**/old.gguf", Some(0b00100)),
    ("{vendor,legacy}/**", Some(0b01100)),
    ("legacy/*", Some(0b01000)),
    ("**", Some(0b01111)),
    ("*.gguf", Some(0b01111)),
    ("/elsewhere/*.gguf", Some(0b10000)),
    ("nothing/**", Some(0)),
    ("models/?.gguf", Some(0b00001)),
    ("models/[ab]*.gguf", Some(0b00011)),
    ("models/[!a].gguf", Some(0)),
    ("", Some(0)),
    ("models/[a.gguf", None),
    ("{models,vendor/old.gguf", None),
];

/// Rules the project's files have findings of, and neighbours.
const LIKELY: [RuleId; 8] = [
    RuleId::KeyNaming,
    RuleId::KeyEmpty,
    RuleId::KeyControl,
    RuleId::TemplateCodeExecution,
    RuleId::SuppressionNotApplied,
    RuleId::TemplateAnalysisLimit,
    RuleId::ModelArchitectureUnknown,
    RuleId::TemplateHiddenText,
];

/// `until` values: text, and the date when it is one.
const DATES: [(&str, Option<Date>); 9] = [
    ("2026-11-21", Some((2026, 11, 21))),
    ("2026-11-22", Some((2026, 11, 22))),
    ("2026-11-23", Some((2026, 11, 23))),
    ("2001-01-01", Some((2001, 1, 1))),
    ("2999-12-31", Some((2999, 12, 31))),
    ("2026-13-01", None),
    ("2026-11", None),
    ("tomorrow", None),
    ("2026-00-10", None),
];

/// Levels as written: text, and the level when it is one.
const LEVELS: [(&str, Option<Level>); 8] = [
    ("error", Some(Level::Error)),
    ("deny", Some(Level::Error)),
    ("warning", Some(Level::Warning)),
    ("warn", Some(Level::Warning)),
    ("info", Some(Level::Info)),
    ("allow", Some(Level::Allow)),
    ("Error", None),
    ("", None),
];

/// The files of the project, with their metadata hashes.
struct Project {
    files: Vec<(&'static str, &'static [u8], Option<String>)>,
}

fn project() -> &'static Project {
    static P: OnceLock<Project> = OnceLock::new();
    P.get_or_init(|| Project {
        files: FILES
            .iter()
            .map(|(rel, bytes)| (*rel, *bytes, metadata_sha256(bytes, u64::try_from(bytes.len()).unwrap_or(0))))
            .collect(),
    })
}

/// `validate_bytes` of a project file, remembered (validation is
/// deterministic, `parse_validate` checks it): most configs lead to the
/// same few options.
fn validated(file: &[u8], opts: &Options) -> Report {
    type Cache = std::sync::Mutex<std::collections::HashMap<(usize, usize, String), Report>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let key = (file.as_ptr() as usize, file.len(), format!("{opts:?}"));
    let cache = CACHE.get_or_init(Default::default);
    if let Some(r) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
        return r;
    }
    let r = Validator::new(opts.clone()).validate_bytes(file).report;
    if let Ok(mut c) = cache.lock() {
        if c.len() >= 4096 {
            c.clear();
        }
        c.insert(key, r.clone());
    }
    r
}

fn file_path(base: &str, rel: &str) -> PathBuf {
    if rel.starts_with('/') { PathBuf::from(rel) } else { Path::new(base).join(rel) }
}

/// The property: `data` as a config's text, and as the source of a
/// generated one.
pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let base = BASES.get(data.len() % BASES.len()).copied().unwrap_or("/proj");
    for origin in [Origin::Explicit, Origin::Discovered] {
        check_text(&text, base, origin);
    }
    let mut u = Unstructured::new(data);
    let _ = run_generated(&mut u);
}

/// A generated config, checked against its model.
pub fn run_generated(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let model = Model::arbitrary(u)?;
    let base = *u.choose(&BASES)?;
    let text = model.render();
    for origin in [Origin::Explicit, Origin::Discovered] {
        let parsed = check_text(&text, base, origin);
        check_model(&model, &text, base, origin, parsed.as_ref());
    }
    Ok(())
}

/// Parses `text` as `BASE/gguf-validate.toml` and checks what holds for
/// any text; returns the config when it was accepted.
pub fn check_text(text: &str, base: &str, origin: Origin) -> Option<Config> {
    let path = Path::new(base).join("gguf-validate.toml");
    let first = Config::parse(text, &path, origin);
    let again = Config::parse(text, &path, origin);
    match (&first, &again) {
        (Ok(a), Ok(b)) => assert_eq!(summary(a, base), summary(b, base), "parsed differently twice"),
        (Err(a), Err(b)) => assert_eq!(a, b, "refused differently twice"),
        _ => panic!("not deterministic: {:?} then {:?}", first.as_ref().err(), again.as_ref().err()),
    }
    // The directory's name changes nothing for the files below it (unless
    // the config names absolute paths).
    if base != BASES[0] && !text.contains("\"/") && !text.contains("'/") {
        let plain = Config::parse(text, &Path::new(BASES[0]).join("gguf-validate.toml"), origin);
        assert_eq!(first.is_ok(), plain.is_ok(), "accepted in {base} xor in {}: {:?}", BASES[0], first.as_ref().err());
        if let (Ok(here), Ok(plain)) = (&first, &plain) {
            for (rel, _, _) in project().files.iter().filter(|(rel, _, _)| !rel.starts_with('/')) {
                assert_eq!(
                    here.levels_for(&file_path(base, rel)),
                    plain.levels_for(&file_path(BASES[0], rel)),
                    "levels for {rel} differ between a config in {base} and one in {}",
                    BASES[0]
                );
            }
        }
    }
    let config = match first {
        Err(e) => {
            let shown = path.display().to_string();
            assert!(e.starts_with(&format!("{shown}: ")), "the error does not name the config: {e}");
            assert!(e.len() > shown.len() + 2, "an empty error");
            assert!(
                e.len() <= 4 * text.len() + 4096,
                "an error of {} bytes for {} bytes of config",
                e.len(),
                text.len()
            );
            return None;
        }
        Ok(c) => c,
    };
    assert_eq!(config.origin, origin);
    for (rel, bytes, sha) in &project().files {
        let file = file_path(base, rel);
        for pin in [sha.as_deref(), None] {
            check_apply(&config, &file, bytes, pin);
        }
        if origin == Origin::Discovered {
            check_security(&config, &file, bytes, sha.as_deref());
        }
    }
    Some(config)
}

/// What a config decides, for comparing two parses.
fn summary(c: &Config, base: &str) -> String {
    let mut s =
        format!("{:?} {:?} {:?} {:?} {}", c.profile, c.deny_warnings, c.container_only, c.ignored, c.has_pins());
    for (rel, _, _) in &project().files {
        let _ = write!(s, " {:?}", c.levels_for(&file_path(base, rel)));
    }
    s
}

/// The options the CLI runs a file with under `config` (no command-line
/// profile or levels).
fn options_for(config: &Config, file: &Path, cli_profile: Option<Profile>) -> Options {
    Options {
        profile: cli_profile.or(config.profile).unwrap_or_default(),
        overrides: config.levels_for(file),
        deny_warnings: config.deny_warnings.unwrap_or(false),
        container_only: config.container_only.unwrap_or(false),
        ..Options::default()
    }
}

/// Validates and applies; checks determinism and the report's consistency.
fn check_apply(config: &Config, file: &Path, bytes: &[u8], pin: Option<&str>) -> (Options, Report, Report) {
    let opts = options_for(config, file, None);
    let before = validated(bytes, &opts);
    let mut after = before.clone();
    config.apply(file, &mut after, &opts, pin, TODAY);
    let mut again = before.clone();
    config.apply(file, &mut again, &opts, pin, TODAY);
    assert_eq!(after, again, "applying is not deterministic");
    check_consistent(&after, &opts);
    // Only the config's own findings are added, and those about the config.
    let config_path = format!("config {}", config.path.display());
    for d in &after.diagnostics {
        if !before.diagnostics.contains(d) {
            assert_eq!(d.rule, RuleId::SuppressionNotApplied, "apply added a `{}` finding", d.rule);
            assert_eq!(d.path, config_path);
            assert!(!d.message.is_empty());
        }
    }
    // What is gone was set aside, and is listed as such.
    for d in &before.diagnostics {
        if !after.diagnostics.contains(d) {
            assert!(
                after.applied.iter().any(|a| a.rule == d.rule.id() && a.set_aside.contains(d)),
                "`{}` at {} vanished without being listed as set aside",
                d.rule,
                d.path
            );
        }
    }
    for a in &after.applied {
        assert_eq!(a.source, "config");
        assert!(a.findings > 0 && a.findings >= a.set_aside.len() as u64, "{a:?}");
        assert!(!a.reason.trim().is_empty(), "a suppression without a reason was applied");
        if config.origin == Origin::Discovered {
            let rule = RuleId::from_id(a.rule).unwrap_or_else(|| panic!("unknown rule {}", a.rule));
            assert!(!SECURITY_RULES.contains(&rule), "a discovered config suppressed `{}`", a.rule);
        }
    }
    (opts, before, after)
}

/// The report invariants after applying a config: order, levels, counts,
/// verdict, the per-rule cap.
pub fn check_consistent(r: &Report, opts: &Options) {
    let mut last = 0u64;
    let mut listed: BTreeMap<RuleId, usize> = BTreeMap::new();
    let (mut errors, mut warnings) = (0u64, 0u64);
    for d in &r.diagnostics {
        assert!(d.offset >= last, "`{}` at {} after a finding at {last}: not in file order", d.rule, d.offset);
        last = d.offset;
        assert_eq!(d.severity, opts.level(d.rule), "`{}` at the wrong level", d.rule);
        assert_ne!(d.severity, Level::Allow);
        errors += u64::from(d.severity == Level::Error);
        warnings += u64::from(d.severity == Level::Warning);
        *listed.entry(d.rule).or_default() += 1;
    }
    for (rule, n) in &listed {
        assert!(*n <= MAX_DIAGNOSTICS_PER_RULE, "{n} `{rule}` findings listed (cap {MAX_DIAGNOSTICS_PER_RULE})");
    }
    for (id, n) in &r.suppressed {
        let rule = RuleId::from_id(id).unwrap_or_else(|| panic!("unknown rule {id}"));
        errors += if opts.level(rule) == Level::Error { *n } else { 0 };
        warnings += if opts.level(rule) == Level::Warning { *n } else { 0 };
    }
    assert_eq!(r.counts.errors, errors, "errors counted {} for {errors} findings", r.counts.errors);
    assert_eq!(r.counts.warnings, warnings, "warnings counted {} for {warnings} findings", r.counts.warnings);
    assert_eq!(r.valid, r.counts.errors == 0 && !(opts.deny_warnings && r.counts.warnings > 0), "verdict");
}

/// Findings of `rule` in a report, listed or only counted.
fn count(r: &Report, rule: RuleId) -> u64 {
    let listed = r.diagnostics.iter().filter(|d| d.rule == rule).count() as u64;
    listed + r.suppressed.get(rule.id()).copied().unwrap_or(0)
}

/// A discovered config neither lowers nor hides a security rule, whatever
/// the command line's profile.
fn check_security(config: &Config, file: &Path, bytes: &[u8], pin: Option<&str>) {
    for cli in [None, Some(Profile::Strict), Some(Profile::Spec), Some(Profile::Ggml)] {
        let with = options_for(config, file, cli);
        let without = Options::new(cli.unwrap_or_default());
        assert!(!with.container_only, "a discovered config turned the model and template checks off");
        for &rule in SECURITY_RULES {
            assert!(
                with.level(rule) >= without.level(rule),
                "a discovered config lowered `{rule}` from {} to {} (command-line profile {cli:?}, config profile {:?})",
                without.level(rule).name(),
                with.level(rule).name(),
                config.profile
            );
        }
        if cli.is_some() {
            continue;
        }
        let plain = validated(bytes, &without);
        let mut configured = validated(bytes, &with);
        config.apply(file, &mut configured, &with, pin, TODAY);
        for &rule in SECURITY_RULES {
            assert!(
                count(&configured, rule) >= count(&plain, rule),
                "`{rule}`: {} findings without the discovered config, {} with it",
                count(&plain, rule),
                count(&configured, rule)
            );
        }
    }
}

/// A rule id as written in a generated config.
#[derive(Clone, Debug)]
struct RuleText {
    text: String,
    /// The rule, when the text names one whose level may change.
    rule: Option<RuleId>,
}

impl RuleText {
    /// `bad`: may be unknown, or a decoding rule (whose level is fixed).
    fn arbitrary(u: &mut Unstructured<'_>, bad: bool) -> arbitrary::Result<RuleText> {
        let rule = match u.int_in_range(0..=7u8)? {
            0..=4 => Some(*u.choose(&LIKELY)?),
            5 | 6 if bad => Some(u.choose(RULES)?.code),
            5 | 6 => Some(u.choose(RULES)?.code).filter(|r| !r.rule().fatal).or(Some(RuleId::KeyNaming)),
            _ if bad => None,
            _ => Some(RuleId::TrailingBytes),
        };
        Ok(match rule {
            Some(r) => RuleText { text: r.id().to_string(), rule: (!r.rule().fatal).then_some(r) },
            None => {
                let text = (*u.choose(&["no-such-rule", "Key-Naming", "", "key naming"])?).to_string();
                RuleText { text, rule: None }
            }
        })
    }
}

/// `[rules]` or an override's `rules`: id text to (rule, level text, level).
type Levels = BTreeMap<String, (Option<RuleId>, &'static str, Option<Level>)>;

fn arbitrary_levels(u: &mut Unstructured<'_>, bad: bool) -> arbitrary::Result<Levels> {
    let mut out = Levels::new();
    for _ in 0..u.int_in_range(0..=4u8)? {
        let r = RuleText::arbitrary(u, bad)?;
        let (text, level) = if bad && u.ratio(1u8, 12)? { *u.choose(&LEVELS[6..])? } else { *u.choose(&LEVELS[..6])? };
        out.insert(r.text, (r.rule, text, level));
    }
    Ok(out)
}

fn levels_valid(l: &Levels) -> bool {
    l.values().all(|(r, _, lvl)| r.is_some() && lvl.is_some())
}

#[derive(Clone, Debug)]
struct Override {
    globs: Vec<usize>,
    rules: Levels,
    /// `[overrides.rules]` rather than an inline table.
    subtable: bool,
}

#[derive(Clone, Debug)]
enum Pin {
    /// The metadata hash of one of the files (in capitals when `upper`).
    Of(usize, bool),
    /// Not any file's.
    Other(&'static str),
}

#[derive(Clone, Debug)]
struct Suppress {
    rule: RuleText,
    globs: Vec<usize>,
    reason: String,
    pin: Option<Pin>,
    until: Option<usize>,
}

/// A generated config.
#[derive(Clone, Debug)]
pub struct Model {
    profile: Option<(&'static str, Option<Profile>)>,
    deny_warnings: Option<bool>,
    container_only: Option<bool>,
    unknown_key: bool,
    rules: Levels,
    overrides: Vec<Override>,
    suppress: Vec<Suppress>,
}

fn arbitrary_globs(u: &mut Unstructured<'_>, bad: bool) -> arbitrary::Result<Vec<usize>> {
    let mut out = Vec::new();
    for _ in 0..u.int_in_range(0..=3u8)? {
        // Invalid globs (the last two) are rare.
        let n = if bad && u.ratio(1u8, 16)? { GLOBS.len() } else { GLOBS.len() - 2 };
        out.push(u.choose_index(n)?);
    }
    Ok(out)
}

fn globs_valid(g: &[usize]) -> bool {
    g.iter().all(|i| GLOBS.get(*i).is_some_and(|(_, m)| m.is_some()))
}

/// Whether a file matches: by the table, and under the root `/` the
/// globs that match anything below the base match `/elsewhere/e.gguf` too.
fn globs_match(g: &[usize], file: usize, base: &str) -> bool {
    g.iter().any(|i| {
        let Some((glob, Some(m))) = GLOBS.get(*i) else { return false };
        let everything = base == "/" && (*glob == "**" || *glob == "*.gguf");
        m & (1 << file) != 0 || everything
    })
}

impl Model {
    /// Generates a config, sometimes with a mistake in it.
    pub fn arbitrary(u: &mut Unstructured<'_>) -> arbitrary::Result<Model> {
        const PROFILES: [(&str, Option<Profile>); 5] = [
            ("strict", Some(Profile::Strict)),
            ("spec", Some(Profile::Spec)),
            ("ggml", Some(Profile::Ggml)),
            ("ggml", Some(Profile::Ggml)),
            ("lax", None),
        ];
        // A third of the configs may have mistakes, the rest have none.
        let bad = u.ratio(1u8, 3)?;
        let profile = if u.arbitrary()? { Some(*u.choose(&PROFILES[..if bad { 5 } else { 4 }])?) } else { None };
        let deny_warnings = u.arbitrary()?;
        let container_only = u.arbitrary()?;
        let unknown_key = bad && u.ratio(1u8, 32)?;
        let rules = arbitrary_levels(u, bad)?;
        let mut overrides = Vec::new();
        for _ in 0..u.int_in_range(0..=3u8)? {
            overrides.push(Override {
                globs: arbitrary_globs(u, bad)?,
                rules: arbitrary_levels(u, bad)?,
                subtable: u.arbitrary()?,
            });
        }
        let mut suppress = Vec::new();
        for _ in 0..u.int_in_range(0..=4u8)? {
            let rule = RuleText::arbitrary(u, bad)?;
            let globs = arbitrary_globs(u, bad)?;
            let reason = match u.int_in_range(0..=9u8)? {
                0 if bad => String::new(),
                1 if bad => " \t".to_string(),
                0..=5 => "upstream file, reported".to_string(),
                _ => u.arbitrary::<String>()?,
            };
            let pin = match u.int_in_range(0..=5u8)? {
                0 | 1 => Some(Pin::Of(u.choose_index(FILES.len())?, u.arbitrary()?)),
                2 => Some(Pin::Other(u.choose(&["00", "", "not hex"])?)),
                _ => None,
            };
            let until = if u.arbitrary()? {
                Some(if bad && u.ratio(1u8, 8)? { u.int_in_range(5..=DATES.len() - 1)? } else { u.choose_index(5)? })
            } else {
                None
            };
            suppress.push(Suppress { rule, globs, reason, pin, until });
        }
        Ok(Model { profile, deny_warnings, container_only, unknown_key, rules, overrides, suppress })
    }

    /// Whether the config has a mistake (and must be refused).
    fn valid(&self) -> bool {
        self.profile.is_none_or(|(_, p)| p.is_some())
            && !self.unknown_key
            && levels_valid(&self.rules)
            && self.overrides.iter().all(|o| globs_valid(&o.globs) && levels_valid(&o.rules))
            && self.suppress.iter().all(|s| {
                s.rule.rule.is_some()
                    && !s.reason.trim().is_empty()
                    && globs_valid(&s.globs)
                    && s.until.is_none_or(|i| DATES.get(i).is_some_and(|(_, d)| d.is_some()))
            })
    }

    /// The config's text.
    pub fn render(&self) -> String {
        let mut s = String::new();
        if let Some((p, _)) = self.profile {
            let _ = writeln!(s, "profile = {}", quote(p));
        }
        if let Some(b) = self.deny_warnings {
            let _ = writeln!(s, "deny-warnings = {b}");
        }
        if let Some(b) = self.container_only {
            let _ = writeln!(s, "container-only = {b}");
        }
        if self.unknown_key {
            s.push_str("colour = true\n");
        }
        if !self.rules.is_empty() {
            s.push_str("[rules]\n");
            for (id, (_, lvl, _)) in &self.rules {
                let _ = writeln!(s, "{} = {}", quote(id), quote(lvl));
            }
        }
        let paths = |g: &[usize]| {
            let items: Vec<String> = g.iter().filter_map(|i| GLOBS.get(*i)).map(|(p, _)| quote(p)).collect();
            format!("paths = [{}]\n", items.join(", "))
        };
        for o in &self.overrides {
            s.push_str("\n[[overrides]]\n");
            s.push_str(&paths(&o.globs));
            let items: Vec<String> =
                o.rules.iter().map(|(id, (_, lvl, _))| format!("{} = {}", quote(id), quote(lvl))).collect();
            if o.subtable {
                s.push_str("[overrides.rules]\n");
                items.iter().for_each(|i| {
                    s.push_str(i);
                    s.push('\n');
                });
            } else {
                let _ = writeln!(s, "rules = {{ {} }}", items.join(", "));
            }
        }
        for x in &self.suppress {
            s.push_str("\n[[suppress]]\n");
            let _ = writeln!(s, "rule = {}", quote(&x.rule.text));
            s.push_str(&paths(&x.globs));
            let _ = writeln!(s, "reason = {}", quote(&x.reason));
            match &x.pin {
                Some(Pin::Of(f, upper)) => {
                    let sha = project().files.get(*f).and_then(|(_, _, h)| h.clone()).unwrap_or_default();
                    let sha = if *upper { sha.to_ascii_uppercase() } else { sha };
                    let _ = writeln!(s, "sha256 = {}", quote(&sha));
                }
                Some(Pin::Other(p)) => {
                    let _ = writeln!(s, "sha256 = {}", quote(p));
                }
                None => {}
            }
            if let Some((d, _)) = x.until.and_then(|i| DATES.get(i)) {
                let _ = writeln!(s, "until = {}", quote(d));
            }
        }
        s
    }

    /// Whether an entry of `rule` at `level` is kept from a config of `origin`.
    fn keeps(origin: Origin, rule: RuleId, level: Level) -> bool {
        origin == Origin::Explicit || !SECURITY_RULES.contains(&rule) || level >= rule.rule().level(Profile::Strict)
    }

    /// The levels a config of `origin` gives a file (`FILES[file]`).
    fn levels_for(&self, origin: Origin, file: usize, base: &str) -> Vec<(RuleId, Level)> {
        let mut out = self.floors(origin);
        let kept = |l: &Levels| -> Vec<(RuleId, Level)> {
            l.values()
                .filter_map(|(r, _, lvl)| Some(((*r)?, (*lvl)?)))
                .filter(|(r, l)| Model::keeps(origin, *r, *l))
                .collect()
        };
        out.extend(kept(&self.rules));
        for o in &self.overrides {
            if globs_match(&o.globs, file, base) {
                out.extend(kept(&o.rules));
            }
        }
        out
    }

    /// A discovered config's profile keeps the security rules at their
    /// strict levels.
    fn floors(&self, origin: Origin) -> Vec<(RuleId, Level)> {
        let Some((_, Some(p))) = self.profile else { return Vec::new() };
        if origin == Origin::Explicit {
            return Vec::new();
        }
        SECURITY_RULES
            .iter()
            .map(|r| (*r, r.rule().level(Profile::Strict)))
            .filter(|(r, strict)| r.rule().level(p) < *strict)
            .collect()
    }

    /// How many settings a config of `origin` ignores (one message each).
    fn ignored(&self, origin: Origin) -> usize {
        if origin == Origin::Explicit {
            return 0;
        }
        let lowered = |l: &Levels| {
            l.values().filter(|(r, _, lvl)| r.zip(*lvl).is_some_and(|(r, l)| !Model::keeps(origin, r, l))).count()
        };
        lowered(&self.rules)
            + self.overrides.iter().map(|o| lowered(&o.rules)).sum::<usize>()
            + self
                .suppress
                .iter()
                .filter(|s| s.rule.rule.is_some_and(|r| !Model::keeps(origin, r, Level::Allow)))
                .count()
            + usize::from(!self.floors(origin).is_empty())
            + usize::from(self.container_only == Some(true))
    }
}

/// A TOML basic string.
fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The generated config's outcome against its model.
fn check_model(m: &Model, text: &str, base: &str, origin: Origin, parsed: Option<&Config>) {
    let Some(c) = parsed else {
        assert!(!m.valid(), "a valid config was refused ({origin:?}):\n{text}\n{:?}", m);
        return;
    };
    assert!(m.valid(), "a config with a mistake was accepted ({origin:?}):\n{text}");
    assert_eq!(c.profile, m.profile.and_then(|(_, p)| p));
    assert_eq!(c.deny_warnings, m.deny_warnings);
    let container_only =
        if origin == Origin::Discovered && m.container_only == Some(true) { None } else { m.container_only };
    assert_eq!(c.container_only, container_only, "container-only ({origin:?})");
    assert_eq!(c.ignored.len(), m.ignored(origin), "ignored settings ({origin:?}): {:?}\n{text}", c.ignored);
    let kept: Vec<&Suppress> =
        m.suppress.iter().filter(|s| s.rule.rule.is_some_and(|r| Model::keeps(origin, r, Level::Allow))).collect();
    assert_eq!(c.has_pins(), kept.iter().any(|s| s.pin.is_some()));
    for (i, (rel, bytes, sha)) in project().files.iter().enumerate() {
        let file = file_path(base, rel);
        assert_eq!(
            c.levels_for(&file),
            m.levels_for(origin, i, base),
            "levels for {rel} under {base} ({origin:?}):\n{text}"
        );
        let (opts, before, after) = check_apply(c, &file, bytes, sha.as_deref());
        // The simulation: suppressions in file order.
        let mut want: Vec<(RuleId, String)> = before.diagnostics.iter().map(|d| (d.rule, d.path.clone())).collect();
        for s in kept.iter().filter(|s| globs_match(&s.globs, i, base)) {
            let Some(rule) = s.rule.rule else { continue };
            let expired = s.until.and_then(|d| DATES.get(d)).and_then(|(_, d)| *d).is_some_and(|d| TODAY > d);
            let pinned_elsewhere = match &s.pin {
                None => false,
                Some(Pin::Of(f, _)) => project().files.get(*f).map(|(_, _, h)| h) != Some(sha),
                Some(Pin::Other(_)) => true,
            };
            if expired || pinned_elsewhere {
                if opts.level(RuleId::SuppressionNotApplied) != Level::Allow {
                    want.push((RuleId::SuppressionNotApplied, format!("config {}", c.path.display())));
                }
            } else {
                want.retain(|(r, _)| *r != rule);
            }
        }
        let mut got: Vec<(RuleId, String)> = after.diagnostics.iter().map(|d| (d.rule, d.path.clone())).collect();
        want.sort();
        got.sort();
        assert_eq!(got, want, "findings of {rel} after the suppressions ({origin:?}):\n{text}");
    }
}

/// The seeds committed under `fuzz/seeds/config_file/`.
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/config_file");
    read_dir(&dir)
}

/// The files of a directory, by name (none when it is missing).
pub fn read_dir(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).ok()?)))
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, origin: Origin) -> Result<Config, String> {
        Config::parse(text, Path::new("/proj/gguf-validate.toml"), origin)
    }

    #[test]
    fn seeds_are_valid_configs() {
        let seeds = seeds();
        assert!(seeds.len() >= 3, "seeds missing");
        for (name, s) in seeds {
            let text = std::str::from_utf8(&s).unwrap();
            parse(text, Origin::Explicit).unwrap_or_else(|e| panic!("{name}: {e}"));
            run(&s);
        }
    }

    /// Generated configs, checked against their model.
    #[test]
    fn smoke_generated() {
        crate::test_n_times(400, run_generated);
    }

    /// Seeds with random bytes flipped, cut or spliced; and noise.
    #[test]
    fn smoke() {
        let mut rng = crate::SplitMix64::new(crate::smoke_seed());
        let seeds = seeds();
        for i in 0..300u64 {
            let mut b = seeds
                .get(usize::try_from(i).unwrap_or(0) % (seeds.len() + 1))
                .map(|s| s.1.clone())
                .unwrap_or_else(|| rng.bytes_below(256));
            for _ in 0..rng.below(3) {
                if b.is_empty() {
                    break;
                }
                let at = usize::try_from(rng.below(b.len() as u64)).unwrap_or(0);
                let pick = usize::try_from(rng.below(14)).unwrap_or(0);
                b[at] = b"[]{}\"=,.*\n#x0-".get(pick).copied().unwrap_or(b'x');
            }
            run(&b);
        }
    }

    /// The corpus of the 10-minute cargo-fuzz run, minimised to its edges
    /// (`-merge=1 -use_counters=0`), under fuzz/seeds/config_file/min/.
    #[test]
    fn minimised_corpus() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/config_file/min");
        let files = crate::config_file::read_dir(&dir);
        assert!(files.len() >= 50, "{} files in {}", files.len(), dir.display());
        for (_, data) in files {
            run(&data);
        }
    }

    /// Findings kept under fuzz/regressions/config_file/.
    #[test]
    fn regressions() {
        for (_, data) in read_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions/config_file")) {
            run(&data);
        }
    }

    /// The generator mostly writes configs that are accepted, and uses
    /// every part of the format.
    #[test]
    fn generated_configs_are_mostly_valid_and_complete() {
        let mut rng = crate::SplitMix64::new(crate::smoke_seed());
        let (mut valid, mut n, mut text) = (0, 0, String::new());
        for _ in 0..200 {
            let buf = rng.bytes_below(4096);
            let Ok(m) = Model::arbitrary(&mut Unstructured::new(&buf)) else { continue };
            n += 1;
            valid += usize::from(m.valid());
            text.push_str(&m.render());
        }
        assert!(valid * 3 >= n, "{valid} of {n} generated configs are valid");
        for part in [
            "profile =",
            "deny-warnings",
            "container-only",
            "[rules]",
            "[[overrides]]",
            "[overrides.rules]",
            "rules = {",
            "[[suppress]]",
            "sha256 =",
            "until =",
        ] {
            assert!(text.contains(part), "no `{part}` generated");
        }
    }

    #[test]
    fn the_model_sees_mistakes() {
        let m = Model {
            profile: Some(("lax", None)),
            deny_warnings: None,
            container_only: None,
            unknown_key: false,
            rules: Levels::new(),
            overrides: Vec::new(),
            suppress: Vec::new(),
        };
        assert!(!m.valid());
        let e = parse(&m.render(), Origin::Explicit).unwrap_err();
        assert!(e.contains("unknown profile"), "{e}");
    }

    #[test]
    fn toml_strings_are_quoted() {
        let text =
            format!("[[suppress]]\nrule = \"key-naming\"\npaths = []\nreason = {}\n", quote("a\"b\\c\nd\u{1}\u{7f}é"));
        parse(&text, Origin::Explicit).unwrap();
    }
}
