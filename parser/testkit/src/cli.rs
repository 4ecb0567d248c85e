//! The `gguf-validate` binary as the CLI tests run it: in the workspace
//! root (so corpus paths are relative and outputs hold no machine path),
//! with stdin closed and a clean environment, plus the readers of its
//! output (exit code, stdout, stderr, JSON).
//!
//! The clean environment is the union of what the test files removed
//! before they shared this module: `NO_COLOR` (colour is decided by the
//! flags alone), the proxy variables (`HTTP_PROXY`, `HTTPS_PROXY`,
//! `ALL_PROXY`, `NO_PROXY`, in both cases), `HF_TOKEN` and `HF_ENDPOINT`
//! (no credential or hub of the machine running the tests), and
//! `SSL_CERT_FILE` / `SSL_CERT_DIR` (the platform's roots only). A test
//! that needs one of them sets it on the command ([`run_env`]).

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::root;

/// The binary under test: `GGUF_VALIDATE_BIN` when set, else the
/// `gguf-validate` that cargo built beside the running test or benchmark
/// (`target/<profile>/deps/<test>` runs it from `target/<profile>/`; cargo
/// builds a package's binaries before its integration tests, and only the
/// `gguf-validate` package's tests use this module).
pub static BIN: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    if let Some(bin) = std::env::var_os("GGUF_VALIDATE_BIN") {
        return bin.to_string_lossy().into_owned();
    }
    let exe = std::env::current_exe().expect("the test's own path");
    let dir = exe.parent().and_then(Path::parent).expect("target/<profile>/deps");
    let bin = dir.join(format!("gguf-validate{}", std::env::consts::EXE_SUFFIX));
    assert!(bin.is_file(), "{} is missing: run the tests of the gguf-validate package (parser/cli)", bin.display());
    bin.to_string_lossy().into_owned()
});

/// The variables removed from every command's environment (see the module
/// documentation for why).
pub const REMOVED_ENV: [&str; 13] = [
    "NO_COLOR",
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
    "HF_TOKEN",
    "HF_ENDPOINT",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// Removes [`REMOVED_ENV`] from `c`'s environment (for a command that is
/// not the binary itself, like `sh -c 'ulimit ...; exec gguf-validate'`).
pub fn clean(c: &mut Command) -> &mut Command {
    for v in REMOVED_ENV {
        c.env_remove(v);
    }
    c
}

/// The binary with a clean environment, in the workspace root, stdin
/// closed; stdout and stderr as the caller sets them (`output()` captures
/// both).
pub fn command() -> Command {
    let mut c = Command::new(&*BIN);
    clean(&mut c).current_dir(root()).stdin(Stdio::null());
    c
}

/// Runs the binary with `args` in the workspace root.
pub fn run(args: &[&str]) -> Output {
    command().args(args).output().expect("run gguf-validate")
}

/// Runs the binary with `args` in `dir` (where a config may be discovered,
/// or where relative paths keep the output free of machine paths).
pub fn run_in(dir: &Path, args: &[&str]) -> Output {
    command().args(args).current_dir(dir).output().expect("run gguf-validate")
}

/// Runs the binary with `args` in the workspace root, with `env` set on
/// top of the clean environment.
pub fn run_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = command();
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run gguf-validate")
}

/// The exit code (a run killed by a signal fails the test).
pub fn code(o: &Output) -> i32 {
    o.status.code().expect("exit code")
}

/// stdout, which must be UTF-8.
pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8 stdout")
}

/// stderr, which must be UTF-8.
pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("utf-8 stderr")
}

/// stdout and stderr together, lossily (for searching both and for
/// failure messages).
pub fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// stdout as one JSON document (a failure shows both streams).
pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(o)))
}

/// stdout as JSON lines (`--format jsonl`), one object per line.
pub fn json_lines(o: &Output) -> Vec<serde_json::Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: one JSON object per line: {l}")))
        .collect()
}
