//! Readable messages: what other programs print keeps what identifies the
//! failure and loses what identifies the machine that built or ran them.
//!
//! `readable` rewrites one captured text: a source path inside a build tree
//! (`/tmp/pip-req-build-qno8rgdf/vendor/llama.cpp/ggml/src/gguf.cpp:1637`)
//! becomes the path inside its project (`ggml/src/gguf.cpp:1637`), a path
//! into an installed package keeps the part from `site-packages/` (or the
//! crate directory of a Cargo registry) on, the workspace root is dropped
//! (`corpus/gguf/x.gguf`), a temporary file becomes `<tmp>`, and a home
//! directory becomes `~`. Line numbers, messages and names stay.

/// Markers inside a path and what the path becomes: the text before the
/// marker (back to the start of the path) is dropped, and the marker is
/// replaced by the second element.
/// The third element drops the path component that follows the marker
/// too (a Cargo registry's index directory).
const MARKERS: &[(&str, &str, bool)] = &[
    ("/vendor/llama.cpp/", "", false),
    ("/vendor/ggml/", "ggml/", false),
    ("/site-packages/", "site-packages/", false),
    ("/dist-packages/", "dist-packages/", false),
    ("/.cargo/registry/src/", "", true),
    ("/node_modules/", "node_modules/", false),
    ("/rustc/", "", true),
];

/// Where a path that contains byte `at` of `s` starts: after the last
/// character before it that cannot be part of a path.
fn path_start(s: &str, at: usize) -> usize {
    s.get(..at)
        .and_then(|head| {
            head.char_indices()
                .rev()
                .find(|(_, c)| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '(' | '[' | '<' | '=' | ','))
                .map(|(i, c)| i + c.len_utf8())
        })
        .unwrap_or(0)
}

/// Where a path that starts at byte `from` ends (exclusive).
fn path_end(s: &str, from: usize) -> usize {
    s.get(from..)
        .and_then(|tail| {
            tail.char_indices()
                .find(|(_, c)| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | ')' | ']' | '>' | ',' | ':'))
                .map(|(i, _)| from + i)
        })
        .unwrap_or(s.len())
}

/// Drops the build-tree part of every path that contains `marker`.
fn strip_marker(s: &str, marker: &str, with: &str, drop_next: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find(marker) {
        let start = path_start(rest, at);
        out.push_str(rest.get(..start).unwrap_or_default());
        out.push_str(with);
        rest = rest.get(at + marker.len()..).unwrap_or_default();
        if drop_next {
            let end = path_end(rest, 0);
            if let Some(slash) = rest.get(..end).and_then(|c| c.find('/')) {
                rest = rest.get(slash + 1..).unwrap_or_default();
            }
        }
    }
    out.push_str(rest);
    out
}

/// Replaces every path that starts with `prefix` (a directory that differs
/// from machine to machine) by `with` followed by what comes after the
/// directory's own name component (for a temporary directory) or after the
/// prefix (for a home directory).
fn replace_dir(s: &str, prefix: &str, with: &str, drop_component: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find(prefix) {
        let starts_path = at == 0 || path_start(rest, at) == at;
        let after = at + prefix.len();
        if !starts_path {
            out.push_str(rest.get(..after).unwrap_or_default());
            rest = rest.get(after..).unwrap_or_default();
            continue;
        }
        out.push_str(rest.get(..at).unwrap_or_default());
        out.push_str(with);
        let tail = rest.get(after..).unwrap_or_default();
        rest = if drop_component {
            let end = path_end(tail, 0);
            let comp = tail.get(..end).unwrap_or_default();
            // keep what follows the temporary name inside the path
            match comp.find('/') {
                // an empty replacement leaves the path relative: no leading slash
                Some(slash) if with.is_empty() => tail.get(slash + 1..).unwrap_or_default(),
                Some(slash) => tail.get(slash..).unwrap_or_default(),
                None => tail.get(end..).unwrap_or_default(),
            }
        } else {
            tail
        };
    }
    out.push_str(rest);
    out
}

/// `text` with machine-identifying paths rewritten (see the module docs).
/// `root` is the workspace root as the runner saw it (dropped, with its
/// trailing slash, wherever it appears).
pub fn readable(text: &str, root: Option<&str>) -> String {
    let mut s = text.to_string();
    if let Some(root) = root.filter(|r| r.len() > 1) {
        let root = root.trim_end_matches('/');
        s = s.replace(&format!("{root}/"), "").replace(root, ".");
    }
    for (marker, with, drop_next) in MARKERS {
        if s.contains(marker) {
            s = strip_marker(&s, marker, with, *drop_next);
        }
    }
    // A pip build directory without a vendored tree (the package's own sources).
    s = replace_dir(&s, "/tmp/pip-", "", true);
    s = replace_dir(&s, "/tmp/", "<tmp>", true);
    s = replace_dir(&s, "/root/", "~/", false);
    s = replace_dir(&s, "/home/", "~", true);
    drop_thread_ids(&s)
}

/// `thread 'main' (12904) panicked at`: the thread's id differs from run to
/// run and says nothing about the failure.
fn drop_thread_ids(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find("' (") {
        let after = rest.get(at + 3..).unwrap_or_default();
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        let tail = after.get(digits..).unwrap_or_default();
        if digits > 0 && tail.starts_with(") panicked") {
            out.push_str(rest.get(..at + 1).unwrap_or_default());
            rest = tail.get(1..).unwrap_or_default();
        } else {
            out.push_str(rest.get(..at + 3).unwrap_or_default());
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// True when `text` still names a machine: a pip build directory, a
/// temporary directory, a home directory or an installed package's path.
pub fn names_a_machine(text: &str) -> Vec<&'static str> {
    ["pip-req-build", "pip-install-", "/tmp/", "/root/", "/home/", "/site-packages/", "/.cargo/registry/"]
        .into_iter()
        .filter(|m| text.contains(m))
        .collect()
}

/// A file or folder name made from a message, as the writer campaigns name
/// their findings (`08-writer-exit-failed-tmp-pip-req-build-…`): the same
/// rewrite, for the slug's spelling (`tmp-pip-req-build-<id>-vendor-llama-cpp-`
/// is dropped).
pub fn readable_slug(slug: &str) -> String {
    let mut s = slug.to_string();
    while let Some(at) = s.find("tmp-pip-req-build-") {
        let tail = s.get(at..).unwrap_or_default();
        let cut = tail.find("-vendor-llama-cpp-").map(|v| v + "-vendor-llama-cpp-".len()).unwrap_or_else(|| {
            "tmp-pip-req-build-".len() + tail.get(18..).and_then(|t| t.find('-')).map_or(0, |d| d + 1)
        });
        s = format!("{}{}", s.get(..at).unwrap_or_default(), tail.get(cut..).unwrap_or_default());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vendored_source_path_keeps_its_place_in_the_project() {
        let msg = "failed: /tmp/pip-req-build-qno8rgdf/vendor/llama.cpp/ggml/src/gguf.cpp:1637: GGML_ASSERT(info.t.data) failed";
        assert_eq!(readable(msg, None), "failed: ggml/src/gguf.cpp:1637: GGML_ASSERT(info.t.data) failed");
        // the spelling without the leading slash, as a finding quotes it
        assert_eq!(readable("(pip-req-build-x/vendor/llama.cpp/src/llama.cpp:10)", None), "(src/llama.cpp:10)");
    }

    #[test]
    fn packages_roots_homes_and_temporary_files() {
        let root = "/work/wt";
        assert_eq!(
            readable("File \"/work/venv/lib/python3.11/site-packages/gguf/gguf_reader.py\", line 3", Some(root)),
            "File \"site-packages/gguf/gguf_reader.py\", line 3"
        );
        assert_eq!(readable("/work/wt/corpus/gguf/n_x.gguf: bad", Some(root)), "corpus/gguf/n_x.gguf: bad");
        assert_eq!(
            readable(
                "panicked at /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/ggus-0.5.1/src/file.rs:9:5",
                None
            ),
            "panicked at ggus-0.5.1/src/file.rs:9:5"
        );
        assert_eq!(readable("open /tmp/gguflib-adapter-AbC123 failed", None), "open <tmp> failed");
        assert_eq!(
            readable("thread 'main' (19709) panicked at /rustc/5980761/library/alloc/src/raw_vec/mod.rs:28:5:", None),
            "thread 'main' panicked at library/alloc/src/raw_vec/mod.rs:28:5:"
        );
        assert_eq!(readable("f('x' (3) items) and 'y' (z)", None), "f('x' (3) items) and 'y' (z)");
        assert_eq!(readable("copy to /tmp/tmpab12/out.gguf", None), "copy to <tmp>/out.gguf");
        assert_eq!(readable("see /home/alice/x.txt", None), "see ~/x.txt");
        assert_eq!(readable("ratio 3/tmp/ and a/root/b stay", None), "ratio 3/tmp/ and a/root/b stay");
        for s in ["no path here", "GGML_ASSERT(n_dims <= 4) failed", "ggml/src/gguf.cpp:12"] {
            assert_eq!(readable(s, Some(root)), s);
        }
        assert!(names_a_machine(&readable("/tmp/pip-req-build-1/vendor/llama.cpp/a.c /root/x", None)).is_empty());
    }

    #[test]
    fn finding_folder_names() {
        assert_eq!(
            readable_slug("08-writer-exit-failed-tmp-pip-req-build-qno8rgdf-vendor-llama-cpp-ggml-src-gguf-cpp"),
            "08-writer-exit-failed-ggml-src-gguf-cpp"
        );
        assert_eq!(readable_slug("02-quantizer-iq3-s-failed"), "02-quantizer-iq3-s-failed");
    }
}
