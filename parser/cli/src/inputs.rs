//! Which files a run validates: the paths on the command line and in
//! `--files-from`, with directories walked recursively.
//!
//! Walking follows ripgrep's conventions through the `ignore` crate:
//! `.gitignore` / `.ignore` files and hidden entries are skipped (unless
//! `--no-ignore`), symbolic links inside a directory are not followed,
//! entries are sorted by name so runs are reproducible. A walked file is a
//! candidate when its name ends in `.gguf` or its first bytes are the
//! magic of a format the validator knows (GGML, GGMF, GGJT, rwkv.cpp, GGUF
//! under another name): `pytorch_model.bin` is not an rwkv.cpp file.
//! Special files met in a walk (FIFOs, sockets, devices) are never opened.
//! A path named explicitly is always validated, whatever it is (the file
//! policy then decides).

use std::io::BufRead;
use std::path::{Path, PathBuf};

use gguf_validate_core::io::{self as gio, ByteSource};
use gguf_validate_core::parse::{self, Detected};
use gguf_validate_core::pipeline::Input;

/// How directories are walked.
#[derive(Clone, Copy, Debug, Default)]
pub struct WalkOptions {
    /// Also walk what `.gitignore`, `.ignore` and hidden names would skip.
    pub no_ignore: bool,
}

/// An input that could not be expanded (an unreadable `--files-from`, a
/// directory entry that cannot be read).
#[derive(Debug)]
pub struct InputError {
    pub input: Input,
    pub message: String,
}

/// What the inputs of a run expand to.
#[derive(Debug, Default)]
pub struct Expanded {
    /// The files to validate, in order.
    pub files: Vec<Input>,
    /// Inputs that could not be expanded.
    pub errors: Vec<InputError>,
    /// `*.gguf` files under the walked directories that ignore files or
    /// hidden names kept out of the walk (without `--no-ignore`).
    pub skipped_by_ignore: Vec<Input>,
}

/// Expands the command line's paths and `--files-from` into the files to
/// validate, in order (arguments first, then the list), with directories
/// replaced by the candidates under them. A file named explicitly is
/// always kept, whatever the ignore files say.
pub fn expand(paths: &[PathBuf], files_from: Option<&Path>, walk: WalkOptions) -> Result<Expanded, String> {
    let mut named: Vec<PathBuf> = paths.to_vec();
    if let Some(list) = files_from {
        named.extend(read_list(list)?);
    }
    let mut x = Expanded::default();
    for input in named.into_iter().map(Input::from_path) {
        // A directory named on the command line (or a link to one) is walked.
        match input {
            Input::Path(p) if std::fs::metadata(&p).is_ok_and(|m| m.is_dir()) => {
                let mut found = Vec::new();
                walk_dir(&p, walk, &mut found, &mut x.errors);
                if !walk.no_ignore {
                    x.skipped_by_ignore.extend(ignored_gguf(&p, &found).into_iter().map(Input::Path));
                }
                x.files.extend(found.into_iter().map(Input::Path));
            }
            other => x.files.push(other),
        }
    }
    Ok(x)
}

/// The `*.gguf` files under `dir` that a walk with the ignore rules left
/// out (`found` is what it kept).
fn ignored_gguf(dir: &Path, found: &[PathBuf]) -> Vec<PathBuf> {
    let kept: std::collections::HashSet<&PathBuf> = found.iter().collect();
    let mut b = ignore::WalkBuilder::new(dir);
    b.follow_links(false).sort_by_file_name(|a, b| a.cmp(b)).standard_filters(false);
    b.build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(ignore::DirEntry::into_path)
        .filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("gguf")) && !kept.contains(p))
        .collect()
}

/// One path per line (`-` reads stdin); blank lines and lines whose first
/// non-blank character is `#` (comments) are skipped, and blanks around a
/// path and a trailing `\r` are dropped (a path that starts with `#` is
/// listed as `./#name`).
fn read_list(list: &Path) -> Result<Vec<PathBuf>, String> {
    let reader: Box<dyn BufRead> = if list.as_os_str() == "-" {
        Box::new(std::io::BufReader::new(std::io::stdin()))
    } else {
        let f = std::fs::File::open(list).map_err(|e| format!("--files-from {}: {e}", list.display()))?;
        Box::new(std::io::BufReader::new(f))
    };
    let mut out = Vec::new();
    for line in reader.split(b'\n') {
        let mut line = line.map_err(|e| format!("--files-from {}: {e}", list.display()))?;
        while line.last().is_some_and(u8::is_ascii_whitespace) {
            line.pop();
        }
        let start = line.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(line.len());
        if start == line.len() || line.get(start) == Some(&b'#') {
            continue;
        }
        line.drain(..start);
        out.push(path_of_bytes(line));
    }
    Ok(out)
}

#[cfg(unix)]
fn path_of_bytes(b: Vec<u8>) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    PathBuf::from(std::ffi::OsString::from_vec(b))
}

#[cfg(not(unix))]
fn path_of_bytes(b: Vec<u8>) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(&b).into_owned())
}

fn walk_dir(dir: &Path, opts: WalkOptions, out: &mut Vec<PathBuf>, errors: &mut Vec<InputError>) {
    let mut b = ignore::WalkBuilder::new(dir);
    b.follow_links(false).sort_by_file_name(|a, b| a.cmp(b));
    if opts.no_ignore {
        b.standard_filters(false);
    }
    for entry in b.build() {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                errors.push(InputError { input: Input::Path(dir.to_path_buf()), message: e.to_string() });
                continue;
            }
        };
        // Regular files only: links are not followed, and a FIFO, socket
        // or device met in a walk is never opened.
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.into_path();
        if is_candidate(&path) {
            out.push(path);
        }
    }
}

/// `.gguf` by name, or a known format by its magic. The magic is read
/// through the library's file policy (regular files only, opened without
/// blocking), so a file swapped for a FIFO since the walk is not read.
fn is_candidate(path: &Path) -> bool {
    if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("gguf")) {
        return true;
    }
    let Ok(src) = gio::open(path, &gio::OpenPolicy::default()) else { return false };
    let n = usize::try_from(src.len().min(8)).unwrap_or(0);
    let mut head = [0u8; 8];
    let Some(buf) = head.get_mut(..n) else { return false };
    if src.read_exact_at(0, buf).is_err() {
        return false;
    }
    !matches!(parse::detect(buf), Detected::Unknown { .. } | Detected::TooShort)
}
