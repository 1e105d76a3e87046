//! External commands for snapshots (`df`, `nvidia-smi`, `dmesg`, `python3`): looked up on PATH,
//! run with a timeout in their own process group, output captured with a size cap.
//! It must never block past the timeout (df on a dead NFS mount hangs) nor inherit our stdin.

use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Output kept per stream; a runaway command cannot fill memory.
const MAX_OUTPUT: u64 = 16 << 20;

/// Where `prog` would be found the way `execvp` finds it, if it is an executable file.
pub(crate) fn which(prog: &str) -> Option<PathBuf> {
    if prog.contains('/') {
        let p = PathBuf::from(prog);
        return is_executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(prog))
        .find(|p| is_executable(p))
}

pub(crate) fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[derive(Debug)]
pub(crate) struct CmdOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// None when it timed out and was killed.
    pub status: Option<ExitStatus>,
}

impl CmdOutput {
    pub fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// Why it failed, for the manifest: the exit status and the first line of stderr.
    pub fn failure(&self, timeout: Duration) -> String {
        let first = String::from_utf8_lossy(&self.stderr)
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim()
            .to_string();
        let status = match self.status {
            None => format!("timed out after {} s and was killed", timeout.as_secs_f32()),
            Some(s) => format!("{s}"),
        };
        if first.is_empty() {
            status
        } else {
            format!("{status}: {first}")
        }
    }
}

/// Run `argv` with stdin closed, capturing stdout and stderr, killing its process group at
/// `timeout`. Err only when it could not be started.
pub(crate) fn run_with_timeout(argv: &[&str], timeout: Duration) -> io::Result<CmdOutput> {
    let (prog, args) = argv
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty command"))?;
    let mut child = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("LC_ALL", "C")
        .process_group(0)
        .spawn()?;
    let pgid = child.id() as libc::pid_t;
    let out = child.stdout.take().map(reader_thread);
    let err = child.stderr.take().map(reader_thread);
    let start = Instant::now();
    let mut nap = Duration::from_millis(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if start.elapsed() >= timeout => {
                // SAFETY: plain syscall on a process group we created.
                unsafe { libc::killpg(pgid, libc::SIGKILL) };
                let _ = child.wait();
                break None;
            }
            Ok(None) => {
                std::thread::sleep(nap);
                nap = (nap * 2).min(Duration::from_millis(20));
            }
            Err(_) => break None,
        }
    };
    // The group is killed on timeout; on a normal exit a leftover grandchild holding the pipe
    // would block the readers, so kill what is left of the group (we created it) first.
    // SAFETY: as above; ESRCH when the group is already gone is fine.
    unsafe { libc::killpg(pgid, libc::SIGKILL) };
    let join = |h: Option<std::thread::JoinHandle<Vec<u8>>>| {
        h.and_then(|h| h.join().ok()).unwrap_or_default()
    };
    Ok(CmdOutput {
        stdout: join(out),
        stderr: join(err),
        status,
    })
}

fn reader_thread<R: Read + Send + 'static>(r: R) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.take(MAX_OUTPUT).read_to_end(&mut buf);
        buf
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hanging_command_is_killed_at_the_timeout() {
        let t = Instant::now();
        let out = run_with_timeout(&["sleep", "10"], Duration::from_millis(200)).unwrap();
        assert!(out.status.is_none());
        assert!(t.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn output_and_status_are_captured() {
        let out = run_with_timeout(
            &["sh", "-c", "echo hi; echo oops >&2; exit 2"],
            Duration::from_secs(5),
        )
        .unwrap();
        assert_eq!(out.stdout, b"hi\n");
        assert_eq!(out.stderr, b"oops\n");
        assert_eq!(out.status.and_then(|s| s.code()), Some(2));
        assert!(out.failure(Duration::from_secs(5)).contains("oops"));
    }

    #[test]
    fn which_finds_sh_and_not_nonsense() {
        assert!(which("sh").is_some());
        assert!(which("tw-no-such-tool-xyz").is_none());
    }
}
