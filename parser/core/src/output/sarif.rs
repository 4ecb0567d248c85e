//! `--format sarif` (and `--output-sarif`): SARIF 2.1.0 for code-scanning
//! dashboards, built with `serde-sarif`: one run with the whole rule
//! catalogue, one artifact per file, one result per finding, written at
//! the end of the run.

use std::collections::BTreeMap;

use crate::report::Diagnostic;
use crate::rules::{Level, Profile, RULES, RuleId};
use serde_sarif::sarif;

use super::{Entry, EntryOutcome, Skipped};

/// Where the rules reference of the book (`parser/docs/`, chapter
/// `rules.md`) is published: each rule's SARIF `helpUri` is this with
/// `#<rule id>`, an anchor `gguf-validate rules --format markdown` writes.
pub const RULES_REFERENCE_URL: &str = "https://gguf-validate.github.io/gguf-validate/rules.html";

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

fn rule_descriptor(r: &crate::rules::Rule, profile: Profile) -> sarif::ReportingDescriptor {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_case_names() {
        assert_eq!(camel("tensor-data-overlap"), "TensorDataOverlap");
        assert_eq!(camel("magic"), "Magic");
    }
}
