//! `gguf-validate fix` against its catalogue and the corpus: every fix of
//! the catalogue has a case in corpus/fixes whose fixed file is what the fix
//! makes (up to date), is valid under strict and holds the same tensor
//! data; unsafe fixes are held back unless asked for; and fixing every file
//! of the corpus leaves its tensor data byte-identical and, when all its
//! errors had fixes, the result without an error.

use std::collections::BTreeSet;
use std::path::Path;

use gguf_conformance::fixes::{cases, check_fixes, fixes_dir};
use gguf_validate_core::fix::{edit_bytes, fix_bytes};
use gguf_validate_core::rewrite::Request;
use gguf_validate_core::rules::{FIXES, FixKind, Level, Profile, RuleId};
use gguf_validate_core::{Options, Validator};

fn strict() -> Validator {
    Validator::new(Options::new(Profile::Strict))
}

#[test]
fn corpus_fixes_is_up_to_date() {
    let n = check_fixes(&fixes_dir()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(n, cases().len());
}

#[test]
fn every_fix_of_the_catalogue_has_a_case() {
    let covered: BTreeSet<(&str, FixKind)> = cases().iter().filter_map(|c| c.kind.map(|k| (c.rule, k))).collect();
    for f in FIXES {
        assert!(
            covered.contains(&(f.rule.id(), f.kind)),
            "no case in corpus/fixes for the {} fix of {}",
            f.kind,
            f.rule
        );
    }
    for c in cases() {
        let rule = RuleId::from_id(c.rule).unwrap_or_else(|| panic!("{}: unknown rule {}", c.slug, c.rule));
        if let Some(kind) = c.kind {
            assert!(rule.fixes().any(|f| f.kind == kind), "{}: {} has no {kind} fix", c.slug, c.rule);
        }
    }
}

#[test]
fn each_case_breaks_its_rule_and_the_fix_mends_exactly_it() {
    for c in cases() {
        let broken = (c.build)();
        let unsafe_fixes = c.kind == Some(FixKind::Unsafe);
        let fixed = fix_bytes(&broken, &strict(), unsafe_fixes).unwrap_or_else(|e| panic!("{}: {e}", c.slug));
        let errors = |r: &gguf_validate_core::Report| -> Vec<String> {
            r.diagnostics.iter().filter(|d| d.severity >= Level::Warning).map(|d| d.rule.id().to_string()).collect()
        };
        assert!(errors(&fixed.before).iter().any(|r| r == c.rule), "{}: does not break {}", c.slug, c.rule);
        let (a, b) = &fixed.digests;
        assert_eq!(a.as_ref().ok(), b.as_ref().ok(), "{}: tensor data changed", c.slug);
        assert!(a.is_ok(), "{}: no digest", c.slug);
        match c.kind {
            Some(kind) => {
                assert!(
                    fixed.fixes.iter().any(|f| f.rule.id() == c.rule && f.kind == kind && f.applied),
                    "{}: no {kind} fix of {} made: {:?}",
                    c.slug,
                    c.rule,
                    fixed.fixes
                );
                assert!(errors(&fixed.after).is_empty(), "{}: left {:?}", c.slug, errors(&fixed.after));
                assert!(fixed.after.valid, "{}", c.slug);
                let on_disk = std::fs::read(fixes_dir().join(format!("{}.fixed.gguf", c.slug))).unwrap_or_default();
                assert!(on_disk == fixed.bytes, "{}: corpus/fixes holds another fixed file", c.slug);
                // Fixing the fixed file changes nothing.
                let again = fix_bytes(&fixed.bytes, &strict(), unsafe_fixes).unwrap_or_else(|e| panic!("{e}"));
                assert!(again.fixes.is_empty(), "{}: a second fix: {:?}", c.slug, again.fixes);
                assert!(again.bytes == fixed.bytes, "{}: not a fixed point", c.slug);
            }
            // The boundary: no fix is planned, the finding stays.
            None => {
                assert!(fixed.fixes.iter().all(|f| f.rule.id() != c.rule), "{}: {:?}", c.slug, fixed.fixes);
                assert!(errors(&fixed.after).iter().any(|r| r == c.rule), "{}", c.slug);
                assert!(fixed.bytes == broken, "{}: nothing to fix, yet the bytes changed", c.slug);
            }
        }
        // The report of each, before and after, with the fixes and digests
        // (`fix --format json`'s document for the file in memory).
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path("snapshots/fixes");
        settings.set_prepend_module_to_snapshot(false);
        settings.bind(|| insta::assert_json_snapshot!(c.slug, fixed.json()));
        // Without --unsafe, an unsafe fix is listed, held back, and the finding stays.
        if unsafe_fixes {
            let held = fix_bytes(&broken, &strict(), false).unwrap_or_else(|e| panic!("{e}"));
            assert!(held.fixes.iter().any(|f| f.rule.id() == c.rule && !f.applied), "{}: not held back", c.slug);
            assert!(errors(&held.after).iter().any(|r| r == c.rule), "{}: fixed without --unsafe", c.slug);
        }
    }
}

fn gguf_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            gguf_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "gguf") && e.metadata().is_ok_and(|m| m.len() <= 4 << 20) {
            out.push(p);
        }
    }
}

/// `fix` (and an `edit` of `general.name`) on every corpus file: tensor
/// data byte-identical (digest equal), and no error left when every error
/// of the file had a fix that was made.
#[test]
fn fixing_or_editing_any_corpus_file_keeps_its_tensor_data() {
    let mut files = Vec::new();
    gguf_files(&gguf_conformance::workspace_root().join("corpus"), &mut files);
    assert!(files.len() > 900, "{} corpus files", files.len());
    let (mut fixed_files, mut mended, mut edits) = (0usize, 0usize, 0usize);
    for path in &files {
        let bytes = std::fs::read(path).unwrap_or_default();
        let Ok(fixed) = fix_bytes(&bytes, &strict(), true) else { continue };
        if let (Ok(a), Ok(b)) = &fixed.digests {
            assert_eq!(a, b, "{}: tensor data changed", path.display());
        }
        // An edit of the metadata leaves the tensor data as it was too.
        let set = [Request::Set { key: "general.name".into(), text: "str:edited".into() }];
        if let Ok(edited) = edit_bytes(&bytes, &strict(), &set)
            && let (Ok(a), Ok(b)) = &edited.digests
        {
            assert_eq!(a, b, "{}: tensor data changed by an edit", path.display());
            edits += 1;
        }
        if fixed.fixes.is_empty() {
            assert!(fixed.bytes == bytes, "{}: nothing fixed, yet the bytes changed", path.display());
            continue;
        }
        fixed_files += 1;
        let made: BTreeSet<RuleId> = fixed.fixes.iter().filter(|f| f.applied).map(|f| f.rule).collect();
        let all_fixable = fixed.before.diagnostics.iter().filter(|d| d.severity == Level::Error).all(|d| made.contains(&d.rule))
            // listed findings are capped per rule: a file with more is not judged here
            && fixed.before.counts.errors == fixed.before.diagnostics.iter().filter(|d| d.severity == Level::Error).count() as u64;
        if all_fixable {
            let left: Vec<&str> =
                fixed.after.diagnostics.iter().filter(|d| d.severity == Level::Error).map(|d| d.rule.id()).collect();
            assert!(left.is_empty(), "{}: errors left after fixing every error: {left:?}", path.display());
            mended += 1;
        }
    }
    assert!(fixed_files >= 30 && mended >= 20, "{fixed_files} files fixed, {mended} mended");
    assert!(edits > 700, "{edits} files edited");
}
