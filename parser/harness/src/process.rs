//! Running a command under test: a shell command line with placeholders
//! (`{model}`, `{out}`, `{type}`, ...) substituted by shell-quoted values,
//! run by `sh -c` in a process group of its own, and killed with the whole
//! group when it outlives its timeout.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use wait_timeout::ChildExt;

/// Most bytes of a command's stderr kept for reports.
pub const MAX_STDERR: usize = 4096;

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunOutcome {
    /// Exit status 0.
    Success,
    /// Another exit status, or a signal (`None`).
    Failed {
        /// The exit code, if it exited.
        code: Option<i32>,
        /// The last bytes of its stderr (lossy UTF-8).
        stderr: String,
    },
    /// Killed after the timeout.
    TimedOut,
}

/// Quotes `s` for `sh` (single quotes; a `'` becomes `'\''`).
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Substitutes `{name}` placeholders with shell-quoted values. Unknown
/// placeholders are left as they are.
pub fn substitute(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (name, value) in vars {
        out = out.replace(&format!("{{{name}}}"), &shell_quote(value));
    }
    out
}

/// The placeholders a template uses, of those in `names`.
pub fn uses(template: &str, name: &str) -> bool {
    template.contains(&format!("{{{name}}}"))
}

/// Runs `command` with `sh -c` in `dir`, killing its process group after
/// `timeout`. Errors only when it cannot be started or waited for.
pub fn run(command: &str, dir: &Path, timeout: Duration) -> std::io::Result<(RunOutcome, Duration)> {
    let start = Instant::now();
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(command).current_dir(dir).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let mut child = cmd.spawn()?;
    // stderr is drained by a thread so a chatty writer cannot block on a full pipe.
    let stderr = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut kept = Vec::new();
        if let Some(mut s) = stderr {
            let mut buf = [0u8; 8192];
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 {
                    break;
                }
                kept.extend_from_slice(buf.get(..n).unwrap_or_default());
                if kept.len() > 2 * MAX_STDERR {
                    let cut = kept.len() - MAX_STDERR;
                    kept.drain(..cut);
                }
            }
        }
        kept
    });
    let status = child.wait_timeout(timeout)?;
    let outcome = match status {
        None => {
            kill_group(&child);
            let _ = child.kill();
            let _ = child.wait();
            RunOutcome::TimedOut
        }
        Some(s) => {
            // Children of the shell may still hold the pipe: end them too.
            kill_group(&child);
            if s.success() { RunOutcome::Success } else { RunOutcome::Failed { code: s.code(), stderr: String::new() } }
        }
    };
    if outcome == RunOutcome::TimedOut {
        // The reader ends when the group is gone; do not wait on a stuck pipe.
        drop(reader);
        return Ok((outcome, start.elapsed()));
    }
    let kept = reader.join().unwrap_or_default();
    let tail = kept.get(kept.len().saturating_sub(MAX_STDERR)..).unwrap_or_default();
    let outcome = match outcome {
        RunOutcome::Failed { code, .. } => {
            RunOutcome::Failed { code, stderr: String::from_utf8_lossy(tail).into_owned() }
        }
        o => o,
    };
    Ok((outcome, start.elapsed()))
}

#[cfg(unix)]
fn kill_group(child: &std::process::Child) {
    let pid = rustix::process::Pid::from_child(child);
    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
}

#[cfg(not(unix))]
fn kill_group(_child: &std::process::Child) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_the_shell() {
        let dir = std::env::temp_dir();
        let tricky = "a b'c$d";
        let cmd = substitute("test {x} = 'a b'\\''c$d'", &[("x", tricky)]);
        assert_eq!(run(&cmd, &dir, Duration::from_secs(10)).unwrap().0, RunOutcome::Success);
        assert!(uses("w {model} {out}", "out") && !uses("w {model}", "out"));
    }

    #[test]
    fn failures_keep_stderr_and_timeouts_kill_the_group() {
        let dir = std::env::temp_dir();
        let (o, _) = run("echo boom >&2; exit 3", &dir, Duration::from_secs(10)).unwrap();
        assert_eq!(o, RunOutcome::Failed { code: Some(3), stderr: "boom\n".into() });
        // A grandchild holding the pipe open must not keep the run alive.
        let (o, took) = run("sleep 30 & sleep 30", &dir, Duration::from_millis(300)).unwrap();
        assert_eq!(o, RunOutcome::TimedOut);
        assert!(took < Duration::from_secs(10), "{took:?}");
    }
}
