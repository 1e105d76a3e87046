//! `ulimit -a` computed from getrlimit, printed exactly as bash prints it, so the `Ulimit`
//! parser reads it back. No fork: `sh` may be dash, whose `ulimit -a` has another format.
//! It must not change any limit.

/// One row: bash's label (with its padding), the resource, and the unit divisor.
struct Row {
    label: &'static str,
    resource: Option<libc::__rlimit_resource_t>,
    divisor: u64,
}

const fn row(label: &'static str, resource: libc::__rlimit_resource_t, divisor: u64) -> Row {
    Row {
        label,
        resource: Some(resource),
        divisor,
    }
}

static ROWS: &[Row] = &[
    row(
        "real-time non-blocking time  (microseconds, -R) ",
        libc::RLIMIT_RTTIME,
        1,
    ),
    row(
        "core file size              (blocks, -c) ",
        libc::RLIMIT_CORE,
        1024,
    ),
    row(
        "data seg size               (kbytes, -d) ",
        libc::RLIMIT_DATA,
        1024,
    ),
    row(
        "scheduling priority                 (-e) ",
        libc::RLIMIT_NICE,
        1,
    ),
    row(
        "file size                   (blocks, -f) ",
        libc::RLIMIT_FSIZE,
        1024,
    ),
    row(
        "pending signals                     (-i) ",
        libc::RLIMIT_SIGPENDING,
        1,
    ),
    row(
        "max locked memory           (kbytes, -l) ",
        libc::RLIMIT_MEMLOCK,
        1024,
    ),
    row(
        "max memory size             (kbytes, -m) ",
        libc::RLIMIT_RSS,
        1024,
    ),
    row(
        "open files                          (-n) ",
        libc::RLIMIT_NOFILE,
        1,
    ),
    // Not a resource limit: bash prints the pipe buffer in 512-byte units, always 8 on Linux.
    Row {
        label: "pipe size                (512 bytes, -p) ",
        resource: None,
        divisor: 1,
    },
    row(
        "POSIX message queues         (bytes, -q) ",
        libc::RLIMIT_MSGQUEUE,
        1,
    ),
    row(
        "real-time priority                  (-r) ",
        libc::RLIMIT_RTPRIO,
        1,
    ),
    row(
        "stack size                  (kbytes, -s) ",
        libc::RLIMIT_STACK,
        1024,
    ),
    row(
        "cpu time                   (seconds, -t) ",
        libc::RLIMIT_CPU,
        1,
    ),
    row(
        "max user processes                  (-u) ",
        libc::RLIMIT_NPROC,
        1,
    ),
    row(
        "virtual memory              (kbytes, -v) ",
        libc::RLIMIT_AS,
        1024,
    ),
    row(
        "file locks                          (-x) ",
        libc::RLIMIT_LOCKS,
        1,
    ),
];

/// The soft limits of this process in bash's `ulimit -a` format (children inherit them).
pub fn ulimit_a() -> String {
    let mut out = String::with_capacity(1024);
    for r in ROWS {
        out.push_str(r.label);
        match r.resource {
            None => out.push('8'),
            Some(res) => {
                let mut lim = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                // SAFETY: getrlimit writes into the struct we own.
                let rc = unsafe { libc::getrlimit(res, &mut lim) };
                if rc != 0 {
                    out.push_str("error");
                } else if lim.rlim_cur == libc::RLIM_INFINITY {
                    out.push_str("unlimited");
                } else {
                    out.push_str(&(lim.rlim_cur / r.divisor).to_string());
                }
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_bash_ulimit_a() {
        // bash runs .ci/run itself, so it is always there to compare with.
        let out = std::process::Command::new("bash")
            .args(["-c", "ulimit -a"])
            .output()
            .expect("bash");
        // Bash before 5.2 has no -R row; every row bash prints must be ours, byte for byte.
        let ours = ulimit_a();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            assert!(
                ours.lines().any(|l| l == line),
                "bash: {line:?}\nours:\n{ours}"
            );
        }
    }

    #[test]
    fn every_row_has_a_flag() {
        for line in ulimit_a().lines() {
            assert!(line.contains(", -") || line.contains("(-"), "{line}");
        }
    }
}
