//! Report formats for pipelines: SARIF 2.1.0 for code-scanning dashboards
//! (built with `serde-sarif`), JUnit XML for CI test tabs (`quick-junit`),
//! and GitHub workflow-command annotations. Each takes the outcomes of a
//! whole run and returns text; `render.rs` writes it.

use std::collections::BTreeMap;

use gguf_validate::report::Diagnostic;
use gguf_validate::rules::{Level, Profile, RULES, RuleId};
use gguf_validate::split_set::SetReport;
use quick_junit::{NonSuccessKind, TestCase, TestCaseStatus, TestSuite};
use serde_sarif::sarif;

use crate::render::FileOutcome;

/// Where the rules reference of the book (`parser/docs/`, chapter
/// `rules.md`) is published: each rule's SARIF `helpUri` is this with
/// `#<rule id>`, an anchor `gguf-validate rules --format markdown` writes.
pub const RULES_REFERENCE_URL: &str = "https://gguf-validate.github.io/gguf-validate/rules.html";

/// One entry of a run as the pipeline formats see it: a file, or a split
/// set (whose findings name their shard in the field path).
#[derive(Clone, Debug)]
pub struct Entry {
    /// The path (or the set's `NAME-*-of-0000n.gguf`).
    pub path: String,
    /// What came of it.
    pub outcome: EntryOutcome,
}

/// A checked entry's verdict and findings, or why it could not be read.
#[derive(Clone, Debug)]
pub enum EntryOutcome {
    /// Validated (`waived`: findings a suppression or the baseline set
    /// aside, with the reason).
    Checked { valid: bool, diagnostics: Vec<Diagnostic>, errors: u64, warnings: u64, waived: Vec<(Diagnostic, String)> },
    /// Could not be read.
    Unreadable(String),
}

impl Entry {
    pub fn of_file(path: String, outcome: &FileOutcome) -> Entry {
        let outcome = match outcome {
            FileOutcome::Report(r, _) => EntryOutcome::Checked {
                valid: r.valid,
                diagnostics: r.diagnostics.clone(),
                errors: r.counts.errors,
                warnings: r.counts.warnings,
                waived: r
                    .applied
                    .iter()
                    .flat_map(|a| a.set_aside.iter().map(move |d| (d.clone(), format!("{} ({})", a.reason, a.source))))
                    .collect(),
            },
            FileOutcome::Unreadable(e) => EntryOutcome::Unreadable(e.clone()),
        };
        Entry { path, outcome }
    }

    pub fn of_set(set: &SetReport) -> Entry {
        Entry {
            path: set.name.clone(),
            outcome: EntryOutcome::Checked {
                valid: set.valid,
                diagnostics: set.diagnostics.clone(),
                errors: set.counts.errors,
                warnings: set.counts.warnings,
                waived: Vec::new(),
            },
        }
    }
}

/// The stable identity of a finding across runs: rule, file and field
/// path, never offsets (a finding keeps its identity when bytes move).
pub fn fingerprint(rule: RuleId, file: &str, path: &str) -> String {
    format!("{}|{file}|{path}", rule.id())
}

fn sarif_level(l: Level) -> &'static str {
    match l {
        Level::Error => "error",
        Level::Warning => "warning",
        Level::Info => "note",
        Level::Allow => "none",
    }
}

fn result_level(l: Level) -> sarif::ResultLevel {
    match l {
        Level::Error => sarif::ResultLevel::Error,
        Level::Warning => sarif::ResultLevel::Warning,
        Level::Info => sarif::ResultLevel::Note,
        Level::Allow => sarif::ResultLevel::None,
    }
}

fn rule_descriptor(r: &gguf_validate::rules::Rule, profile: Profile) -> sarif::ReportingDescriptor {
    let mut props = BTreeMap::new();
    props.insert("group".to_string(), serde_json::json!(r.group.name()));
    props.insert("citation".to_string(), serde_json::json!(r.citation));
    props.insert("fatal".to_string(), serde_json::json!(r.fatal));
    let levels: BTreeMap<&str, &str> = Profile::ALL.iter().map(|p| (p.name(), r.level(*p).name())).collect();
    props.insert("levels".to_string(), serde_json::json!(levels));
    let help = format!("{}\n\nSource: {}", r.description, r.citation);
    sarif::ReportingDescriptor::builder()
        .id(r.id)
        .name(camel(r.id))
        .short_description(sarif::MultiformatMessageString::builder().text(r.description).build())
        .full_description(sarif::MultiformatMessageString::builder().text(r.description).build())
        .help(sarif::MultiformatMessageString::builder().text(help).build())
        .help_uri(format!("{RULES_REFERENCE_URL}#{}", r.id))
        .default_configuration(
            sarif::ReportingConfiguration::builder()
                .level(serde_json::json!(sarif_level(r.level(profile))))
                .enabled(r.level(profile) != Level::Allow)
                .build(),
        )
        .properties(
            sarif::PropertyBag::builder().tags(vec![r.group.name().to_string()]).additional_properties(props).build(),
        )
        .build()
}

/// `tensor-data-overlap` -> `TensorDataOverlap` (SARIF's rule `name`).
fn camel(id: &str) -> String {
    id.split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
        })
        .collect()
}

fn sarif_result(d: &Diagnostic, file: &str, artifact: i64) -> sarif::Result {
    let rule_index = RULES.iter().position(|r| r.code == d.rule).and_then(|i| i64::try_from(i).ok());
    let region = sarif::Region::builder()
        .byte_offset(i64::try_from(d.offset).unwrap_or(i64::MAX))
        .byte_length(d.length.and_then(|l| i64::try_from(l).ok()).unwrap_or(1))
        // Code scanning rejects results without a line: a binary file has one.
        .start_line(1)
        .build();
    let location = sarif::Location::builder()
        .physical_location(
            sarif::PhysicalLocation::builder()
                .artifact_location(sarif::ArtifactLocation::builder().uri(file).index(artifact).build())
                .region(region)
                .build(),
        )
        .logical_locations(vec![sarif::LogicalLocation::builder().fully_qualified_name(d.path.clone()).build()])
        .build();
    let mut fp = BTreeMap::new();
    fp.insert("ggufFinding/v1".to_string(), fingerprint(d.rule, file, &d.path));
    let message = if d.path.is_empty() { d.message.clone() } else { format!("{}: {}", d.path, d.message) };
    sarif::Result::builder()
        .rule_id(d.rule.id())
        .rule_index(rule_index.unwrap_or(-1))
        .level(result_level(d.severity))
        .message(sarif::Message::builder().text(message).build())
        .locations(vec![location])
        .partial_fingerprints(fp)
        .build()
}

/// One SARIF log with one run: the tool with its whole rule catalogue, one
/// artifact per file, one result per finding, and a notification per file
/// that could not be read.
pub fn sarif(entries: &[Entry], profile: Profile, skipped: &Skipped<'_>) -> String {
    let rules: Vec<_> = RULES.iter().map(|r| rule_descriptor(r, profile)).collect();
    let driver = sarif::ToolComponent::builder()
        .name("gguf-validate")
        .version(env!("CARGO_PKG_VERSION"))
        .semantic_version(env!("CARGO_PKG_VERSION"))
        .information_uri("https://github.com/gguf-validate/gguf-validate")
        .rules(rules)
        .build();
    let mut artifacts = Vec::new();
    let mut results = Vec::new();
    let mut notifications = Vec::new();
    for (i, Entry { path, outcome }) in entries.iter().enumerate() {
        let index = i64::try_from(i).unwrap_or(i64::MAX);
        artifacts.push(
            sarif::Artifact::builder().location(sarif::ArtifactLocation::builder().uri(path.as_str()).build()).build(),
        );
        match outcome {
            EntryOutcome::Checked { diagnostics, waived, .. } => {
                results.extend(diagnostics.iter().map(|d| sarif_result(d, path, index)));
                // Findings set aside by a suppression or the baseline are
                // results with a SARIF suppression (kind external).
                results.extend(waived.iter().map(|(d, why)| {
                    let mut r = sarif_result(d, path, index);
                    r.suppressions = Some(vec![
                        sarif::Suppression::builder()
                            .kind(serde_json::json!("external"))
                            .status(serde_json::json!("accepted"))
                            .justification(why.as_str())
                            .build(),
                    ]);
                    r
                }));
            }
            EntryOutcome::Unreadable(e) => notifications.push(
                sarif::Notification::builder()
                    .level(serde_json::json!("error"))
                    .message(sarif::Message::builder().text(format!("{path}: {e}")).build())
                    .locations(vec![
                        sarif::Location::builder()
                            .physical_location(
                                sarif::PhysicalLocation::builder()
                                    .artifact_location(
                                        sarif::ArtifactLocation::builder().uri(path.as_str()).index(index).build(),
                                    )
                                    .build(),
                            )
                            .build(),
                    ])
                    .build(),
            ),
        }
    }
    let successful = notifications.is_empty();
    if skipped.count > 0 {
        notifications.push(
            sarif::Notification::builder()
                .level(serde_json::json!("note"))
                .message(sarif::Message::builder().text(skipped.sentence()).build())
                .build(),
        );
    }
    let invocation = sarif::Invocation::builder()
        .execution_successful(successful)
        .tool_execution_notifications(notifications)
        .build();
    let run = sarif::Run::builder()
        .tool(sarif::Tool::builder().driver(driver).build())
        .artifacts(artifacts)
        .results(results)
        .invocations(vec![invocation])
        .properties(
            sarif::PropertyBag::builder()
                .additional_properties(BTreeMap::from([("profile".to_string(), serde_json::json!(profile.name()))]))
                .build(),
        )
        .build();
    let log = sarif::Sarif::builder()
        .schema("https://json.schemastore.org/sarif-2.1.0.json")
        .version(serde_json::json!("2.1.0"))
        .runs(vec![run])
        .build();
    let mut s = serde_json::to_string_pretty(&log).unwrap_or_default();
    s.push('\n');
    s
}

/// The `*.gguf` files the walk's ignore rules left out: how many, and the
/// first ones by name.
#[derive(Debug)]
pub struct Skipped<'a> {
    pub count: u64,
    pub listed: &'a [String],
}

impl Skipped<'_> {
    /// `2 .gguf files skipped by ignore rules (--no-ignore includes them): a.gguf, b.gguf`.
    pub fn sentence(&self) -> String {
        let more = self.count.saturating_sub(u64::try_from(self.listed.len()).unwrap_or(0));
        let tail = if more > 0 { format!(" and {more} more") } else { String::new() };
        format!(
            "{} .gguf {} skipped by ignore rules (.gitignore, .ignore, hidden names; --no-ignore includes them): {}{tail}",
            self.count,
            if self.count == 1 { "file" } else { "files" },
            self.listed.join(", ")
        )
    }
}

/// A workflow notice naming the skipped files.
pub fn github_skipped(skipped: &Skipped<'_>) -> String {
    format!("::notice title=gguf-validate::{}\n", gh_escape(&skipped.sentence(), false))
}

/// One finding as a line of the JUnit failure text.
fn finding_line(d: &Diagnostic) -> String {
    let path = if d.path.is_empty() { String::new() } else { format!(" {}", d.path) };
    format!("{}[{}] 0x{:08x}{path}: {}", d.severity, d.rule, d.offset, d.message)
}

/// One JUnit report: one `testsuite`, one `testcase` per file; an invalid
/// file is a `failure` listing its findings, an unreadable one an `error`.
pub fn junit(entries: &[Entry], profile: Profile, skipped: &Skipped<'_>) -> String {
    let mut suite = TestSuite::new(format!("gguf-validate --profile {profile}"));
    if skipped.count > 0 {
        suite.add_property(quick_junit::Property::new("skipped-by-ignore", skipped.count.to_string()));
        suite.set_system_out(skipped.sentence());
    }
    for Entry { path, outcome } in entries {
        let case = match outcome {
            EntryOutcome::Checked { valid, diagnostics, errors, warnings, .. } => {
                junit_case(path, *valid, diagnostics, *errors, *warnings)
            }
            EntryOutcome::Unreadable(e) => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
                status.set_message(e.as_str()).set_type("unreadable");
                let mut case = TestCase::new(path.as_str(), status);
                case.set_classname("gguf-validate");
                case
            }
        };
        suite.add_test_case(case);
    }
    let mut report = quick_junit::Report::new("gguf-validate");
    report.add_test_suite(suite);
    report.to_string().unwrap_or_default()
}

fn junit_case(path: &str, valid: bool, diagnostics: &[Diagnostic], errors: u64, warnings: u64) -> TestCase {
    let lines: Vec<String> = diagnostics.iter().map(finding_line).collect();
    let mut case = if valid {
        TestCase::new(path, TestCaseStatus::success())
    } else {
        let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
        status
            .set_message(format!("{errors} errors, {warnings} warnings"))
            .set_type("invalid")
            .set_description(lines.join("\n"));
        TestCase::new(path, status)
    };
    case.set_classname("gguf-validate");
    if valid && !lines.is_empty() {
        case.set_system_out(lines.join("\n"));
    }
    case
}

/// `%`, CR and LF escaped as GitHub's workflow commands require (and `:`
/// and `,` in properties).
fn gh_escape(s: &str, property: bool) -> String {
    let mut out = s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A");
    if property {
        out = out.replace(':', "%3A").replace(',', "%2C");
    }
    out
}

/// GitHub Actions workflow commands: one `::error` / `::warning` /
/// `::notice` line per finding, one `::error` per unreadable file.
pub fn github(entry: &Entry) -> String {
    let mut out = String::new();
    let path = entry.path.as_str();
    match &entry.outcome {
        EntryOutcome::Checked { diagnostics, .. } => {
            for d in diagnostics {
                let cmd = match d.severity {
                    Level::Error => "error",
                    Level::Warning => "warning",
                    _ => "notice",
                };
                let title = format!("{} at 0x{:x}", d.rule, d.offset);
                let msg = if d.path.is_empty() { d.message.clone() } else { format!("{}: {}", d.path, d.message) };
                out.push_str(&format!(
                    "::{cmd} file={},title={}::{}\n",
                    gh_escape(path, true),
                    gh_escape(&title, true),
                    gh_escape(&msg, false)
                ));
            }
        }
        EntryOutcome::Unreadable(e) => {
            out.push_str(&format!(
                "::error file={},title=unreadable::{}\n",
                gh_escape(path, true),
                gh_escape(e, false)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_case_names() {
        assert_eq!(camel("tensor-data-overlap"), "TensorDataOverlap");
        assert_eq!(camel("magic"), "Magic");
    }

    #[test]
    fn github_escapes_newlines_and_separators() {
        assert_eq!(gh_escape("a%b\nc", false), "a%25b%0Ac");
        assert_eq!(gh_escape("x:y,z", true), "x%3Ay%2Cz");
    }
}
