//! Whose core it is: a core is tied by its pid to the rank or DataLoader worker the run's own
//! lines name (torchrun's failure table, the DataLoader's report of a dead worker, NCCL's
//! `host:pid:tid` prefix), or by lying beside one rank's log, and joined with the
//! `coredumpctl info` entry of the same pid and executable. The cores are real: the committed
//! PyTorch worker core (fixtures/cores/torch-worker/) with the parent's stderr as it was, and
//! cores of tests/core_helpers/crash.c crashed at test time. The launcher and coredumpctl lines
//! are written here in the shapes those programs print, around the real core's own pid and
//! executable; each test also checks that another pid does not tie.

mod core_helpers;

use std::path::{Path, PathBuf};
use trainwreck::report::Report;
use trainwreck::report::terminal::Style;
use trainwreck::rules::KnowledgeBase;
use trainwreck::sources::elfcore::{CoreOptions, analyze_core};

fn diagnose_dir(dir: &Path) -> Report {
    let kb = KnowledgeBase::load(&[]).expect("rules");
    trainwreck::diagnose(&kb, &[dir.display().to_string()], 1)
}

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The 1-based line of `text` holding `what`.
fn line_of(text: &str, what: &str) -> u64 {
    text.lines()
        .position(|l| l.contains(what))
        .map(|i| i as u64 + 1)
        .unwrap_or_else(|| panic!("{what:?} in the text"))
}

/// A real core of the crash helper (SIGSEGV), copied into `dir` as `core.PID`; its pid and
/// executable as the core says.
fn real_core_in(dir: &Path) -> (PathBuf, u32, String) {
    let core = core_helpers::crash_core("segv", &[]);
    let s = analyze_core(&core, &CoreOptions::default()).summary;
    let pid = u32::try_from(s.pid.expect("the core's pid")).expect("pid");
    let exe = s.exe.or(s.execfn).expect("the core's executable");
    std::fs::create_dir_all(dir).expect("dir");
    let to = dir.join(format!("core.{pid}"));
    std::fs::copy(&core, &to).expect("copy core");
    (to, pid, exe)
}

fn owner(r: &Report) -> &trainwreck::sources::elfcore::owner::CoreOwner {
    r.cores[0]
        .summary
        .owner
        .as_ref()
        .unwrap_or_else(|| panic!("the core has an owner: {:#?}", r.cores[0].summary))
}

#[test]
fn the_real_torch_worker_core_is_the_worker_its_parent_reported_dead() {
    let d = core_helpers::scratch("owner-torch");
    let fx = fixture("fixtures/cores/torch-worker");
    for f in ["worker.core.gz", "stderr.log"] {
        std::fs::copy(fx.join(f), d.join(f)).expect("copy fixture");
    }
    let r = diagnose_dir(&d);
    let o = owner(&r);
    let log = std::fs::read_to_string(fx.join("stderr.log")).expect("log");
    assert_eq!(o.role, "dataloader-worker");
    assert_eq!(
        o.who.pid,
        Some(542),
        "the pid both the core and the log name"
    );
    assert_eq!(o.exit.as_deref(), Some("Segmentation fault"));
    // The parent printed no rank: none is made up.
    assert_eq!((o.who.rank, o.who.local_rank), (None, None));
    let ev = &o.evidence[0];
    assert_eq!(
        (ev.path.as_str(), ev.line, ev.says),
        (
            "stderr.log",
            Some(line_of(&log, "DataLoader worker (pid 542) is killed")),
            "dataloader-worker"
        )
    );
    let fact = r
        .facts
        .iter()
        .find(|f| f.name == "core.owner")
        .expect("core.owner fact");
    assert_eq!(fact.value.to_string(), "DataLoader worker pid 542");
    let out = trainwreck::report::terminal::render(&r, &Style { color: false });
    assert!(
        out.contains("the core of DataLoader worker pid 542, which ended with Segmentation fault"),
        "{out}"
    );
}

#[test]
fn torchruns_failure_table_ties_a_real_core_to_its_rank_and_host() {
    let d = core_helpers::scratch("owner-torchrun");
    let (_, pid, _) = real_core_in(&d);
    let other = pid + 1;
    // torchrun's `Root Cause` table for two failed ranks: the core's pid is rank 1's.
    let console = format!(
        "[rank1]: Fatal Python error: Segmentation fault\n\
         E1201 10:00:07.123000 700 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: -11) local_rank: 1 (pid: {pid}) of binary: /usr/bin/python3\n\
         Traceback (most recent call last):\n\
         torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n\
         ============================================================\n\
         train.py FAILED\n\
         ------------------------------------------------------------\n\
         Failures:\n\
         [1]:\n\
         \x20 time      : 2026-12-01_10:00:07\n\
         \x20 host      : node7\n\
         \x20 rank      : 0 (local_rank: 0)\n\
         \x20 exitcode  : -15 (pid: {other})\n\
         \x20 error_file: <N/A>\n\
         \x20 traceback : Signal 15 (SIGTERM) received by PID {other}\n\
         ------------------------------------------------------------\n\
         Root Cause (first observed failure):\n\
         [0]:\n\
         \x20 time      : 2026-12-01_10:00:07\n\
         \x20 host      : node7\n\
         \x20 rank      : 1 (local_rank: 1)\n\
         \x20 exitcode  : -11 (pid: {pid})\n\
         \x20 error_file: <N/A>\n\
         \x20 traceback : Signal 11 (SIGSEGV) received by PID {pid}\n\
         ============================================================\n"
    );
    std::fs::write(d.join("console.log"), &console).expect("log");
    let r = diagnose_dir(&d);
    let o = owner(&r);
    assert_eq!(o.role, "rank");
    assert_eq!(
        (o.who.pid, o.who.rank, o.who.local_rank),
        (Some(pid), Some(1), Some(1))
    );
    assert_eq!(o.who.host.as_deref(), Some("node7"));
    assert_eq!(o.evidence[0].says, "launcher-exit");
    assert_eq!(o.evidence[0].path, "console.log");
    // Every line naming the pid is cited; rank 0's (another pid) is not.
    let lines: Vec<u64> = o.evidence.iter().filter_map(|e| e.line).collect();
    for want in [
        format!("(pid: {pid}) of binary"),
        format!("exitcode  : -11 (pid: {pid})"),
    ] {
        assert!(lines.contains(&line_of(&console, &want)), "{want}: {o:#?}");
    }
    assert!(
        !lines.contains(&line_of(&console, &format!("(pid: {other})"))),
        "{o:#?}"
    );
    assert_eq!(o.describe(), format!("rank 1 (host node7) pid {pid}"));
}

#[test]
fn a_ranks_nccl_prefix_names_the_pid_of_a_real_core() {
    let d = core_helpers::scratch("owner-nccl");
    let (_, pid, _) = real_core_in(&d.join("out"));
    let logs = d.join("logs");
    std::fs::create_dir_all(&logs).expect("dir");
    for (rank, p) in [(0, pid + 7), (1, pid)] {
        std::fs::write(
            logs.join(format!("rank{rank}.log")),
            format!(
                "step 1 loss 2.5\n\
                 node7:{p}:{p} [{rank}] NCCL INFO comm 0x55d1c0a0 rank {rank} nRanks 2 nNodes 1 localRanks 2 localRank {rank} MNNVL 0\n\
                 step 2 loss 2.4\n"
            ),
        )
        .expect("log");
    }
    let r = diagnose_dir(&d);
    let o = owner(&r);
    assert_eq!(
        (o.role, o.who.pid, o.who.rank),
        ("rank", Some(pid), Some(1))
    );
    assert_eq!(o.evidence[0].says, "rank-pid");
    assert_eq!(
        (o.evidence[0].path.as_str(), o.evidence[0].line),
        ("logs/rank1.log", Some(2))
    );
}

#[test]
fn a_real_core_beside_one_ranks_log_is_that_ranks_and_beside_two_is_nobodys() {
    let d = core_helpers::scratch("owner-beside");
    let (_, pid, _) = real_core_in(&d.join("rank3"));
    std::fs::write(d.join("rank3/train.log"), "step 1 loss 2.5\n").expect("log");
    let r = diagnose_dir(&d);
    let o = owner(&r);
    assert_eq!(
        (o.role, o.who.pid, o.who.rank),
        ("rank", Some(pid), Some(3))
    );
    assert_eq!(o.evidence[0].says, "beside-log");

    let d = core_helpers::scratch("owner-beside-two");
    real_core_in(&d);
    for r in [3, 4] {
        std::fs::write(d.join(format!("rank{r}.log")), "step 1 loss 2.5\n").expect("log");
    }
    let r = diagnose_dir(&d);
    assert_eq!(r.cores[0].summary.owner, None, "two ranks' logs: no guess");
    std::fs::remove_file(d.join("rank4.log")).expect("rm");
    let r = diagnose_dir(&d);
    assert_eq!(owner(&r).who.rank, Some(3));
}

/// `coredumpctl info` as systemd prints it (src/coredump/coredumpctl.c), one entry per core.
fn coredumpctl_entry(pid: u32, comm: &str, exe: &str, signal: &str, signo: u32) -> String {
    format!(
        "           PID: {pid} ({comm})\n\
         \x20          UID: 1000 (trainer)\n\
         \x20          GID: 1000 (trainer)\n\
         \x20       Signal: {signo} ({signal})\n\
         \x20    Timestamp: Tue 2026-12-01 10:00:07 UTC (3min ago)\n\
         \x20 Command Line: {exe} segv --epochs 3\n\
         \x20   Executable: {exe}\n\
         \x20Control Group: /user.slice/user-1000.slice/session-4.scope\n\
         \x20         Unit: session-4.scope\n\
         \x20        Slice: user-1000.slice\n\
         \x20      Boot ID: 8c1f0c3c6f6c4a8e9d2b7a1e5f3c9d10\n\
         \x20   Machine ID: 0f1e2d3c4b5a69788796a5b4c3d2e1f0\n\
         \x20     Hostname: node7\n\
         \x20      Storage: /var/lib/systemd/coredump/core.{comm}.1000.8c1f0c3c6f6c4a8e9d2b7a1e5f3c9d10.{pid}.1796119207000000.zst (present)\n\
         \x20 Size on Disk: 60.5K\n\
         \x20      Message: Process {pid} ({comm}) of user 1000 dumped core.\n\
         \n\
         \x20               Stack trace of thread {pid}:\n\
         \x20               #0  0x00005a03100f669a crash_segv ({comm} + 0x11a9)\n\
         \x20               #1  0x000070ef25041c88 n/a (libc.so.6 + 0x2a1ca)\n\
         \n"
    )
}

#[test]
fn the_coredumpctl_entry_of_the_same_pid_and_executable_joins_the_real_core() {
    let d = core_helpers::scratch("owner-coredumpctl");
    let (_, pid, exe) = real_core_in(&d);
    let comm = Path::new(&exe)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("crash")
        .chars()
        .take(15)
        .collect::<String>();
    // Another crash first (another pid), then the core's own entry.
    let info = format!(
        "{}{}",
        coredumpctl_entry(pid + 3, "python3", "/usr/bin/python3.12", "ABRT", 6),
        coredumpctl_entry(pid, &comm, &exe, "SEGV", 11)
    );
    std::fs::write(d.join("coredumpctl-info.txt"), &info).expect("info");
    let r = diagnose_dir(&d);
    let j = r.cores[0]
        .summary
        .coredumpctl
        .as_ref()
        .unwrap_or_else(|| panic!("joined: {:#?}", r.cores[0].summary));
    assert_eq!(j.pid, pid);
    assert_eq!(
        j.signal.as_deref(),
        Some("SIGSEGV"),
        "its own entry's signal"
    );
    assert_eq!(j.time.as_deref(), Some("Tue 2026-12-01 10:00:07 UTC"));
    assert_eq!(
        j.command_line.as_deref(),
        Some(format!("{exe} segv --epochs 3").as_str())
    );
    assert_eq!(j.path, "coredumpctl-info.txt");
    assert_eq!(j.line, Some(line_of(&info, &format!("PID: {pid} ("))));
    let out = trainwreck::report::terminal::render(&r, &Style { color: false });
    assert!(
        out.contains("coredumpctl: SIGSEGV, at Tue 2026-12-01 10:00:07 UTC, command line"),
        "{out}"
    );

    // The same pid for another executable (a pid reused on another boot) does not join.
    let d = core_helpers::scratch("owner-coredumpctl-other");
    let (_, pid, _) = real_core_in(&d);
    std::fs::write(
        d.join("coredumpctl-info.txt"),
        coredumpctl_entry(pid, "python3", "/usr/bin/python3.12", "ABRT", 6),
    )
    .expect("info");
    let r = diagnose_dir(&d);
    assert_eq!(r.cores[0].summary.coredumpctl, None);
}

/// The real torchrun rank (fixtures/cores/torch-rank-cuda/, captured on an H200 machine): one
/// rank with CUDA and NCCL loaded, killed by SIGSEGV in a ctypes-loaded decoder. torchrun's
/// own output names its pid three ways (its failure header, its `Root Cause` table, NCCL's
/// prefix); the core is that rank's, and its stack starts at the faulting line of our decoder.
#[test]
fn the_real_torchrun_rank_core_with_cuda_loaded_is_the_rank_torchrun_reported() {
    let fx = fixture("fixtures/cores/torch-rank-cuda");
    let d = core_helpers::scratch("owner-rank-cuda");
    for f in ["rank0.core.xz", "console.log"] {
        std::fs::copy(fx.join(f), d.join(f)).expect("copy fixture");
    }
    let console = std::fs::read_to_string(fx.join("console.log")).expect("log");
    let r = diagnose_dir(&d);
    let o = owner(&r);
    assert_eq!(
        (
            o.role,
            o.who.pid,
            o.who.rank,
            o.who.local_rank,
            o.who.host.as_deref()
        ),
        ("rank", Some(537), Some(0), Some(0), Some("localhost"))
    );
    assert_eq!(o.exit.as_deref(), Some("exitcode -11"));
    let cited = |says: &str, what: &str| {
        o.evidence
            .iter()
            .any(|e| e.says == says && e.line == Some(line_of(&console, what)))
    };
    assert!(cited("launcher-exit", "(pid: 537) of binary"), "{o:#?}");
    assert!(
        cited("launcher-exit", "exitcode  : -11 (pid: 537)"),
        "{o:#?}"
    );
    assert!(
        cited(
            "rank-pid",
            "ncclCommInitRankConfig comm 0x152700c0 rank 0 nranks 1"
        ),
        "{o:#?}"
    );
    assert_eq!(o.evidence[0].says, "launcher-exit");

    // With our decoder at hand (its path on that machine), frame 0 is its faulting line; the
    // other threads run in the CUDA driver and NCCL.
    let root = core_helpers::scratch("rank-cuda-sysroot");
    std::fs::create_dir_all(root.join("tmp/w")).expect("dir");
    std::fs::copy(fx.join("libdecode.so"), root.join("tmp/w/libdecode.so")).expect("copy");
    let a = analyze_core(
        &fx.join("rank0.core.xz"),
        &CoreOptions {
            sysroot: Some(root),
            ..CoreOptions::default()
        },
    );
    let s = &a.summary;
    assert_eq!(
        (
            s.signal.as_deref(),
            s.code.as_deref(),
            s.fault_addr.as_deref()
        ),
        (Some("SIGSEGV"), Some("SEGV_MAPERR"), Some("0xdead0000"))
    );
    let src = std::fs::read_to_string(fx.join("decode.c")).expect("source");
    let f0 = &s.frames[0];
    assert!(
        f0.symbol
            .as_deref()
            .is_some_and(|n| n.starts_with("checksum")),
        "{f0:?}"
    );
    assert_eq!(f0.line, Some(line_of(&src, "float checksum") as u32));
    let components: Vec<&str> = s
        .other_threads
        .iter()
        .flat_map(|t| t.frames.iter().filter_map(|f| f.component))
        .collect();
    for want in ["CUDA driver", "NCCL"] {
        assert!(components.contains(&want), "{want}: {components:?}");
    }
}
