//! Across ranks: the initiating rank and cause come first, the waiting ranks' timeouts are
//! its symptoms; collective mismatches and lagging ranks are named from watchdog lines
//! alone; attribution holds at 64–512 ranks; `--timeline` reads in order.

use std::path::Path;
use trainwreck::correlate::cascade::{LAGGING_RULE, MISMATCH_RULE};
use trainwreck::model::Category;
use trainwreck::report::Report;
use trainwreck::rules::KnowledgeBase;

fn run(paths: &[&Path]) -> Report {
    let kb = KnowledgeBase::load(&[]).expect("built-in rules load");
    let p: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    trainwreck::diagnose(&kb, &p, 2)
}

fn corpus(case: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/corpus")
        .join(case)
        .join("run")
}

/// The run is diagnosed, and every watchdog/timeout finding other than the cause is its symptom.
fn timeouts_are_symptoms(case: &str, r: &Report) {
    let top = r.top().unwrap_or_else(|| panic!("{case}: no cause found"));
    for f in &r.findings {
        if f.rule != top.rule && f.category == Category::NcclTimeout {
            assert_eq!(
                f.symptom_of.as_deref(),
                Some(top.rule.as_str()),
                "{case}: {}",
                f.rule
            );
        }
    }
}

#[test]
fn case04_names_rank0_not_torchruns_victim() {
    let r = run(&[&corpus("04_nccl_collective_timeout")]);
    let top = r.top().expect("a cause");
    assert_eq!(top.rule, LAGGING_RULE);
    assert_eq!(top.origin.rank, Some(0));
    assert_eq!(top.origin.pid, Some(10645));
    assert_eq!(top.origin.time.as_deref(), Some("2026-11-29T18:59:34.729"));
    assert_eq!(top.affected_ranks, vec![1]);
    let dog = r
        .findings
        .iter()
        .find(|f| f.rule == "nccl-watchdog-timeout")
        .expect("watchdog finding");
    assert_eq!(dog.symptom_of.as_deref(), Some(LAGGING_RULE));
    timeouts_are_symptoms("04", &r);
    // The flight recorder dumps were read, not skipped.
    assert!(
        !r.warnings
            .iter()
            .any(|w| w.message.en.contains("not scanned"))
    );
}

#[test]
fn case17a_mismatch_from_fingerprints() {
    let r = run(&[&corpus("17a_collective_mismatch_debug_detail")]);
    let top = r.top().expect("a cause");
    // The knowledge base's own mismatch rule or the synthetic one: either way one finding.
    assert!(top.rule == MISMATCH_RULE || top.category == Category::CollectiveMismatch);
    assert_eq!(top.category, Category::CollectiveMismatch);
    assert!(
        top.title.en.contains("rank 0 ran ALLREDUCE"),
        "{}",
        top.title.en
    );
    assert!(
        top.title.en.contains("rank 1 ran BROADCAST"),
        "{}",
        top.title.en
    );
}

/// Ground truth of the corpus (GROUND_TRUTH.md): which rank started it.
#[test]
fn multi_rank_fixtures_origin() {
    for (case, rank) in [
        ("04_nccl_collective_timeout", 0),
        ("05_rank1_sigsegv_cascade", 1),
        ("06b_cgroup_oom_kill_rank1_only", 1),
        ("09_rank0_keyerror_record", 0),
        ("20_dataloader_worker_segfault", 1),
    ] {
        let r = run(&[&corpus(case)]);
        timeouts_are_symptoms(case, &r);
        let top = r.top().expect("a cause");
        assert_eq!(top.origin.rank, Some(rank), "{case}: origin rank");
    }
    for case in [
        "01b_dataloader_shm_torchrun",
        "01c_dataloader_shm_sigbus_torchrun",
        "02b_nccl_shm_transport_devshm64m_cumemhost0",
        "14a_disk_full_torch_save_torchrun",
    ] {
        timeouts_are_symptoms(case, &run(&[&corpus(case)]));
    }
}

fn write(dir: &Path, name: &str, text: &str) {
    let p = dir.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

#[test]
fn lagging_rank_from_watchdog_lines_alone() {
    let d = tempfile::tempdir().unwrap();
    let mut s = String::new();
    for r in 0..8u32 {
        if r == 5 {
            s.push_str("[rank5]:[E1129 19:00:05.469696585 ProcessGroupNCCL.cpp:1914] [PG ID 0 PG GUID 0(default_pg) Rank 5] Received a dump signal due to a collective timeout from  rank 1 and we will try our best to dump the debug info. Last enqueued NCCL work: 99, last completed NCCL work: 99.\n");
            continue;
        }
        s.push_str(&format!("[rank{r}]:[E1129 19:00:04.0205 ProcessGroupNCCL.cpp:689] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=100, OpType=ALLREDUCE, NumelIn=84618, NumelOut=84618, Timeout(ms)=30000) ran for 30049 milliseconds before timing out.\n"));
        s.push_str(&format!("[rank{r}]:[E1129 19:00:04.0207 ProcessGroupNCCL.cpp:1914] [Rank {r}] Last enqueued NCCL work: 104, last completed NCCL work: 99.\n"));
    }
    write(d.path(), "excerpt.log", &s);
    let r = run(&[d.path()]);
    let top = r.top().expect("a cause");
    assert_eq!(top.rule, LAGGING_RULE);
    assert_eq!(top.origin.rank, Some(5));
    assert!(
        top.title.en.contains("collective #100 (ALLREDUCE)"),
        "{}",
        top.title.en
    );
    assert_eq!(top.affected_ranks, vec![0, 1, 2, 3, 4, 6, 7]);
    timeouts_are_symptoms("lagging excerpt", &r);
}

#[test]
fn mismatch_from_watchdog_lines_alone() {
    let d = tempfile::tempdir().unwrap();
    let mut s = String::new();
    for r in 0..4u32 {
        let op = if r == 3 { "BROADCAST" } else { "ALLREDUCE" };
        s.push_str(&format!("[rank{r}]: RuntimeError: Detected mismatch between collectives on ranks. Rank {r} is running collective: CollectiveFingerPrint(SequenceNumber=7, OpType={op}, TensorShape=[2], TensorDtypes=Float)\n"));
    }
    write(d.path(), "excerpt.log", &s);
    let r = run(&[d.path()]);
    let top = r.top().expect("a cause");
    // The knowledge base's own mismatch rule or the synthetic one: either way one finding.
    assert!(top.rule == MISMATCH_RULE || top.category == Category::CollectiveMismatch);
    assert_eq!(top.origin.rank, Some(3));
    assert!(
        top.title.en.contains("ranks 0,1,2 ran ALLREDUCE"),
        "{}",
        top.title.en
    );
}

/// Case 04 replicated to `n` ranks: every rank's log is rank 1's (it kept training and timed
/// out) with its prefixes and pid renumbered, except `culprit`, which gets rank 0's log
/// (stops at `running validation`). The console holds every waiter's watchdog line.
fn synthetic(n: u32, culprit: u32) -> tempfile::TempDir {
    let src = corpus("04_nccl_collective_timeout");
    let r0 = std::fs::read_to_string(src.join("logs/rank0.log")).unwrap();
    let r1 = std::fs::read_to_string(src.join("logs/rank1.log")).unwrap();
    let d = tempfile::tempdir().unwrap();
    let mut console = String::new();
    for r in 0..n {
        let (text, from) = if r == culprit { (&r0, 0) } else { (&r1, 1) };
        let renum = text
            .replace(&format!("[rank{from}]"), &format!("[rank{r}]"))
            .replace(
                &format!("pid 1064{}", 5 + from),
                &format!("pid {}", 20000 + r),
            );
        write(
            d.path(),
            &format!("node-{:02}/logs/rank{r}.log", r / 8),
            &renum,
        );
        if r != culprit {
            console.push_str(&format!("[rank{r}]:[E1129 19:00:04.{:06} ProcessGroupNCCL.cpp:689] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=26, OpType=ALLREDUCE, NumelIn=84618, NumelOut=84618, Timeout(ms)=30000) ran for 30049 milliseconds before timing out.\n", 20000 + r));
        }
    }
    write(d.path(), "console.log", &console);
    d
}

#[test]
fn attribution_at_scale() {
    for (n, culprit) in [(64u32, 0u32), (256, 137), (512, 511)] {
        let d = synthetic(n, culprit);
        let r = run(&[d.path()]);
        let top = r.top().expect("a cause");
        assert_eq!(top.origin.rank, Some(culprit), "{n} ranks");
        assert_eq!(top.affected_ranks.len() as u32, n - 1, "{n} ranks");
        assert_eq!(
            top.origin.host.as_deref(),
            Some(format!("node-{:02}", culprit / 8).as_str())
        );
        timeouts_are_symptoms("scaled", &r);
    }
}

#[test]
fn timeline_flag_reads_in_order() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .args(["analyze", "--timeline"])
        .arg(corpus("04_nccl_collective_timeout"))
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains("started: rank 0, host localhost,")
            && s.contains("; 1 other rank affected as symptom")
            && !s.contains("initiated by"),
        "{s}"
    );
    let tl = s.split("Timeline").nth(1).expect("timeline section");
    let first = tl.lines().nth(1).unwrap_or("");
    assert!(
        first.starts_with("▶ 2026-11-29 18:59:34.729  rank 0")
            && first.contains("running validation at step 20"),
        "{tl}"
    );
    let dog = tl
        .find("collective #26 ALLREDUCE timed out after 30049 ms")
        .expect("watchdog row");
    let term = tl
        .find("launcher sends SIGTERM to pid 10645")
        .expect("teardown row");
    assert!(dog < term);
}

/// The kernel killed rank 1's process first; torchrun, polling its workers, lists rank 0 as
/// the "first observed failure". The OOM kill's pid joined to the launcher's pid→rank table
/// names rank 1.
#[test]
fn a_kernel_oom_kill_is_attributed_to_the_rank_it_killed_first_by_pid() {
    let d = tempfile::tempdir().unwrap();
    write(
        d.path(),
        "dmesg.txt",
        "[Sun Nov 29 19:10:16 2026] python invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0\n\
         [Sun Nov 29 19:10:17 2026] Out of memory: Killed process 5001 (python) total-vm:92516044kB, anon-rss:61204400kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:121000kB oom_score_adj:0\n\
         [Sun Nov 29 19:10:18 2026] Out of memory: Killed process 5000 (python) total-vm:90516044kB, anon-rss:60204400kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:120000kB oom_score_adj:0\n",
    );
    let block = |rank: u32, pid: u32| {
        format!(
            "[{rank}]:\n  time      : 2026-11-29_19:10:18\n  host      : node7\n  rank      : {rank} (local_rank: {rank})\n  exitcode  : -9 (pid: {pid})\n  error_file: <N/A>\n  traceback : Signal 9 (SIGKILL) received by PID {pid}\n"
        )
    };
    write(
        d.path(),
        "console.log",
        &format!(
            "2026-11-29 19:10:15,100 [rank0] INFO train: step 40 loss 2.1\n\
             E1129 19:10:18.200000 4999 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: -9) local_rank: 0 (pid: 5000) of binary: /usr/bin/python3\n\
             Failures:\n{}------------------------------------------------------------\nRoot Cause (first observed failure):\n{}",
            block(1, 5001),
            block(0, 5000)
        ),
    );
    let r = run(&[d.path()]);
    let top = r.top().expect("a cause");
    assert_eq!(
        top.category,
        trainwreck::model::Category::HostOom,
        "{:?}",
        r.findings
    );
    assert_eq!(top.origin.rank, Some(1), "{:?}", top.origin);
    assert_eq!(top.origin.pid, Some(5001));
    assert_eq!(top.origin.host.as_deref(), Some("node7"));
}
