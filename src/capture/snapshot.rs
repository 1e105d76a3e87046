//! One snapshot of the machine: df, meminfo, cgroup memory files, ulimit, nvidia-smi, dmesg,
//! system and container hints, training environment, versions: written as plain files with the
//! names and forms the corpus captures use, so `sources` parses them back. External commands run
//! in parallel, each with a timeout. Missing tools and unreadable files go in the manifest; the
//! only errors are a directory that cannot be created or a manifest that cannot be written.

use super::cgroup::{self, CgroupVersion};
use super::env::training_env;
use super::exec::{run_with_timeout, which};
use super::manifest::{Manifest, utc_now_rfc3339};
use super::ulimit::ulimit_a;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What a snapshot takes besides the fixed set.
#[derive(Debug, Clone)]
pub struct SnapshotOptions {
    /// Directories whose filesystems matter besides /dev/shm, the working directory and the
    /// snapshot directory: checkpoint and cache directories (`df-h_<name>.txt`).
    pub extra_dirs: Vec<PathBuf>,
    /// Ask a `python3` on PATH for python/torch/CUDA/NCCL/DeepSpeed versions (one process).
    pub versions: bool,
    /// Limit for each external command (df on a hung NFS mount, a wedged nvidia-smi).
    pub command_timeout: Duration,
    /// Limit for the versions probe (importing torch from a cold network filesystem is slow).
    pub versions_timeout: Duration,
    /// Lines of `dmesg -T` kept.
    pub dmesg_lines: usize,
}

impl Default for SnapshotOptions {
    fn default() -> SnapshotOptions {
        SnapshotOptions {
            extra_dirs: Vec::new(),
            versions: true,
            command_timeout: Duration::from_secs(20),
            versions_timeout: Duration::from_secs(45),
            dmesg_lines: 200,
        }
    }
}

/// An external command whose output becomes one file.
struct Job {
    file: String,
    argv: Vec<String>,
    timeout: Duration,
    /// Keep only the last n lines (dmesg).
    tail: Option<usize>,
    /// A failing command's output is still evidence (`Failed to initialize NVML: Driver/library
    /// version mismatch`) and is written, except where it is only a permission message.
    keep_failed_output: bool,
    /// What the manifest names as the source, when the command line is not readable (a script).
    source: Option<&'static str>,
}

/// Take a snapshot into `dir` (created if needed) and write `dir/manifest.json`.
pub fn snapshot(dir: &Path, opts: &SnapshotOptions) -> io::Result<Manifest> {
    std::fs::create_dir_all(dir).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot create snapshot directory {}: {e}", dir.display()),
        )
    })?;
    let mut m = Manifest::new("snapshot");
    let jobs = plan_jobs(dir, opts, &mut m);

    // Run every external command at once: the slowest (nvidia-smi -q, importing torch) sets
    // the snapshot's duration instead of their sum.
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .iter()
            .map(|job| {
                s.spawn(move || {
                    let argv: Vec<&str> = job.argv.iter().map(String::as_str).collect();
                    run_with_timeout(&argv, job.timeout)
                })
            })
            .collect();
        // Meanwhile, the files and computed parts.
        write_local_parts(dir, &mut m);
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("capture thread panicked")))
            })
            .collect()
    });

    for (job, res) in jobs.iter().zip(results) {
        let cmdline = job
            .source
            .map_or_else(|| job.argv.join(" "), str::to_string);
        match res {
            Err(e) => m.unreadable(&cmdline, format!("could not start: {e}")),
            Ok(out) => {
                let ok = out.success();
                if !ok {
                    m.unreadable(&cmdline, out.failure(job.timeout));
                }
                if ok || job.keep_failed_output {
                    let mut bytes = out.stdout;
                    if !ok {
                        bytes.extend_from_slice(&out.stderr);
                    }
                    if let Some(n) = job.tail {
                        bytes = tail_lines(&bytes, n).to_vec();
                    }
                    if ok || !bytes.is_empty() {
                        m.put(dir, &job.file, &cmdline, &bytes);
                    }
                }
            }
        }
    }
    m.save(dir)?;
    Ok(m)
}

fn plan_jobs(dir: &Path, opts: &SnapshotOptions, m: &mut Manifest) -> Vec<Job> {
    let mut jobs = Vec::new();
    let job = |file: &str, argv: &[&str], timeout: Duration| Job {
        file: file.to_string(),
        argv: argv.iter().map(|s| s.to_string()).collect(),
        timeout,
        tail: None,
        keep_failed_output: true,
        source: None,
    };
    let t = opts.command_timeout;

    if which("df").is_some() {
        let mut targets: Vec<(String, PathBuf)> = vec![("dev_shm".into(), "/dev/shm".into())];
        if let Ok(cwd) = std::env::current_dir() {
            targets.push(("cwd".into(), cwd));
        }
        targets.push(("out".into(), dir.to_path_buf()));
        for d in &opts.extra_dirs {
            targets.push((label_for(d), d.clone()));
        }
        for (label, path) in targets {
            let p = path.to_string_lossy().into_owned();
            jobs.push(job(&format!("df-h_{label}.txt"), &["df", "-h", &p], t));
            jobs.push(job(&format!("df-B1_{label}.txt"), &["df", "-B1", &p], t));
        }
    } else {
        m.missing("df", "not found on PATH");
    }

    if which("nvidia-smi").is_some() {
        jobs.push(job("nvidia-smi.txt", &["nvidia-smi"], t));
        jobs.push(job("nvidia-smi-q.txt", &["nvidia-smi", "-q"], t));
        jobs.push(job(
            "nvidia-smi-query-gpu.csv",
            &[
                "nvidia-smi",
                "--query-gpu=index,name,pci.bus_id,memory.used,memory.total,utilization.gpu,temperature.gpu,ecc.errors.uncorrected.volatile.total",
                "--format=csv",
            ],
            t,
        ));
        jobs.push(job(
            "nvidia-smi-topo-m.txt",
            &["nvidia-smi", "topo", "-m"],
            t,
        ));
    } else {
        m.missing(
            "nvidia-smi",
            "not found on PATH: no NVIDIA driver here, or not mounted into this container",
        );
    }

    if which("dmesg").is_some() {
        jobs.push(Job {
            tail: Some(opts.dmesg_lines),
            // Without CAP_SYSLOG dmesg only says "Operation not permitted": not a kernel log.
            keep_failed_output: false,
            ..job("dmesg-tail.txt", &["dmesg", "-T"], t)
        });
    } else {
        m.missing("dmesg", "not found on PATH");
    }

    if opts.versions {
        match which("python3").or_else(|| which("python")) {
            Some(py) => jobs.push(Job {
                keep_failed_output: false,
                source: Some(
                    "python3 -c <versions probe: python, torch, CUDA, NCCL, cuDNN, packages>",
                ),
                ..job(
                    "versions-python.txt",
                    &[&py.to_string_lossy(), "-c", VERSIONS_PY],
                    opts.versions_timeout,
                )
            }),
            None => m.missing("python3", "not found on PATH: no python/torch versions"),
        }
    }
    jobs
}

/// Everything that needs no fork: files copied from /proc and /sys, and computed text.
fn write_local_parts(dir: &Path, m: &mut Manifest) {
    copy_file(dir, m, "/proc/meminfo", "proc_meminfo.txt");
    m.put(
        dir,
        "ulimit-a.txt",
        "getrlimit (bash `ulimit -a` format)",
        ulimit_a().as_bytes(),
    );

    let cg = cgroup::locate();
    match &cg {
        Ok(cg) => {
            let listing = format!("{}\n", cg.dir.display());
            m.put(
                dir,
                "cgroup/_cgroup_path.txt",
                "/proc/self/cgroup",
                listing.as_bytes(),
            );
            let mut copied = 0;
            for f in cgroup::FILES {
                let src = cg.dir.join(f);
                if src.exists() {
                    copy_file(dir, m, &src.to_string_lossy(), &format!("cgroup/{f}"));
                    copied += 1;
                }
            }
            m.note(format!(
                "cgroup {}: {} ({copied} memory files)",
                match cg.version {
                    CgroupVersion::V1 => "v1",
                    CgroupVersion::V2 => "v2",
                },
                cg.dir.display()
            ));
        }
        Err(why) => m.unreadable("memory cgroup", why.clone()),
    }

    let mut env: Vec<(String, String)> = training_env(std::env::vars_os());
    let mut text = String::new();
    for (k, v) in env.drain(..) {
        text.push_str(&k);
        text.push('=');
        text.push_str(&v);
        text.push('\n');
    }
    m.put(
        dir,
        "environment.txt",
        "environment (training-relevant, secrets redacted)",
        text.as_bytes(),
    );

    m.put(
        dir,
        "system.txt",
        "/proc, /etc/os-release, container hints",
        system_text(cg.as_ref().ok()).as_bytes(),
    );

    let mut versions = format!("trainwreck version: {}\n", env!("CARGO_PKG_VERSION"));
    match std::fs::read_to_string("/proc/driver/nvidia/version") {
        Ok(t) => {
            let first = t.lines().next().unwrap_or("").trim();
            versions.push_str(&format!("NVIDIA driver: {first}\n"));
        }
        Err(_) => {
            versions.push_str("NVIDIA driver: not loaded (/proc/driver/nvidia/version absent)\n")
        }
    }
    m.put(
        dir,
        "versions.txt",
        "/proc/driver/nvidia/version",
        versions.as_bytes(),
    );
}

fn copy_file(dir: &Path, m: &mut Manifest, src: &str, name: &str) {
    match std::fs::read(src) {
        Ok(bytes) => m.put(dir, name, src, &bytes),
        Err(e) => m.unreadable(src, e.to_string()),
    }
}

fn system_text(cg: Option<&cgroup::MemoryCgroup>) -> String {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let mut out = String::new();
    let mut kv = |k: &str, v: &str| {
        if !v.is_empty() {
            out.push_str(k);
            out.push_str(": ");
            out.push_str(v);
            out.push('\n');
        }
    };
    kv("captured_at", &utc_now_rfc3339());
    kv("hostname", &read("/proc/sys/kernel/hostname"));
    kv("kernel_release", &read("/proc/sys/kernel/osrelease"));
    kv("kernel_version", &read("/proc/version"));
    let os = read("/etc/os-release");
    let pretty = os
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .unwrap_or("")
        .trim_matches('"');
    kv("os", pretty);
    kv("arch", std::env::consts::ARCH);
    let cpus = std::thread::available_parallelism()
        .map(|n| n.to_string())
        .unwrap_or_default();
    kv("cpus_available", &cpus);
    kv(
        "uptime_s",
        read("/proc/uptime").split_whitespace().next().unwrap_or(""),
    );
    kv("core_pattern", &read("/proc/sys/kernel/core_pattern"));
    kv("pid", &std::process::id().to_string());
    let cwd = std::env::current_dir()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    kv("cwd", &cwd);
    let yes = |b: bool| if b { "yes" } else { "no" };
    kv(
        "container.dockerenv",
        yes(Path::new("/.dockerenv").exists()),
    );
    kv(
        "container.podman",
        yes(Path::new("/run/.containerenv").exists()),
    );
    let k8s = std::env::var("KUBERNETES_SERVICE_HOST").ok();
    kv(
        "container.kubernetes",
        &k8s.map(|h| format!("yes (KUBERNETES_SERVICE_HOST={h})"))
            .unwrap_or_else(|| "no".into()),
    );
    if let Ok(job) = std::env::var("SLURM_JOB_ID") {
        kv("slurm.job_id", &job);
    }
    match cg {
        Some(cg) => {
            kv(
                "cgroup.version",
                match cg.version {
                    CgroupVersion::V1 => "v1",
                    CgroupVersion::V2 => "v2",
                },
            );
            kv("cgroup.path", &cg.listed);
            kv("cgroup.dir", &cg.dir.display().to_string());
        }
        None => kv("cgroup.version", "none found"),
    }
    out
}

/// `df-h_<label>.txt` label for a directory: its path with separators turned into `_`.
fn label_for(p: &Path) -> String {
    let s: String = p
        .to_string_lossy()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let s = s.trim_matches('_');
    let s = if s.is_empty() { "root" } else { s };
    s.chars().take(60).collect()
}

fn tail_lines(bytes: &[u8], n: usize) -> &[u8] {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let mut seen = 0;
    for (i, &b) in body.iter().enumerate().rev() {
        if b == b'\n' {
            seen += 1;
            if seen == n {
                return &bytes[i + 1..];
            }
        }
    }
    bytes
}

/// One python process for all versions. `PyTorch version:` lines follow
/// `torch.utils.collect_env` so the environment-dump parser recognises the file. Packages other
/// than torch are looked up by metadata, not imported (importing deepspeed probes accelerators).
const VERSIONS_PY: &str = r#"
import sys
print("Python version: " + sys.version.split()[0])
print("Python executable: " + sys.executable)
try:
    import torch
    print("PyTorch version: " + str(torch.__version__))
    print("CUDA used to build PyTorch: " + str(torch.version.cuda))
    try:
        print("NCCL version: " + ".".join(str(x) for x in torch.cuda.nccl.version()))
    except Exception as e:
        print("NCCL version: unknown (%s)" % e)
    try:
        print("cuDNN version: " + str(torch.backends.cudnn.version()))
    except Exception as e:
        print("cuDNN version: unknown (%s)" % e)
except Exception as e:
    print("PyTorch version: not importable (%s: %s)" % (type(e).__name__, e))
try:
    from importlib import metadata
except Exception:
    metadata = None
for d in ("deepspeed", "transformers", "accelerate", "llamafactory", "peft", "datasets",
          "flash_attn", "bitsandbytes", "triton", "numpy", "nvidia-nccl-cu12", "nvidia-nccl-cu13",
          "vllm", "megatron-core"):
    try:
        print("%s version: %s" % (d, metadata.version(d)))
    except Exception:
        pass
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail_lines(b"a\nb\nc\n", 2), b"b\nc\n");
        assert_eq!(tail_lines(b"a\nb\nc", 2), b"b\nc");
        assert_eq!(tail_lines(b"a\n", 5), b"a\n");
    }

    #[test]
    fn labels_are_file_name_safe() {
        assert_eq!(label_for(Path::new("/logs/run-1")), "logs_run-1");
        assert_eq!(label_for(Path::new("/")), "root");
    }

    #[test]
    fn snapshot_writes_the_core_files_and_a_manifest() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("snap");
        let opts = SnapshotOptions {
            versions: false,
            ..SnapshotOptions::default()
        };
        let m = snapshot(&d, &opts).unwrap();
        for f in [
            "proc_meminfo.txt",
            "ulimit-a.txt",
            "environment.txt",
            "system.txt",
            "versions.txt",
            "manifest.json",
        ] {
            assert!(d.join(f).exists(), "{f} missing; manifest: {m:?}");
        }
        if which("df").is_some() {
            let df = std::fs::read_to_string(d.join("df-B1_dev_shm.txt")).unwrap();
            assert!(df.starts_with("Filesystem"), "{df}");
        }
        if which("nvidia-smi").is_none() {
            assert!(m.missing.iter().any(|n| n.what == "nvidia-smi"));
        }
    }

    #[test]
    fn an_uncreatable_directory_is_a_clear_error() {
        let e = snapshot(Path::new("/proc/nope/snap"), &SnapshotOptions::default()).unwrap_err();
        assert!(e.to_string().contains("/proc/nope/snap"), "{e}");
    }
}
