//! `--format junit` (and `--output-junit`): JUnit XML for CI test tabs,
//! built with `quick-junit`: one test case per file, written at the end of
//! the run.

use crate::report::Diagnostic;
use crate::rules::Profile;
use quick_junit::{NonSuccessKind, TestCase, TestCaseStatus, TestSuite};

use super::{Entry, EntryOutcome, Skipped};

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
