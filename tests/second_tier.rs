//! The second tier (issue 27): a failure no specific rule explains still gets up to three
//! ranked candidate categories from the invariant tokens of the lines that say the run died
//! (data/tokens.toml), with low confidence, the tokens as evidence, a fix quoting the line and
//! what to collect next; the verdict stays `unknown_failure`; a specific rule still wins.

mod labelled;
use labelled::first_sentence;

use trainwreck::model::{Category, Verdict};
use trainwreck::rules::KnowledgeBase;

fn diagnose_text(text: &str) -> trainwreck::report::Report {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("paste.txt"), text).unwrap();
    let kb = KnowledgeBase::load(&[]).unwrap();
    trainwreck::diagnose(&kb, &[dir.path().display().to_string()], 1)
}

fn roots(r: &trainwreck::report::Report) -> Vec<Category> {
    let mut v = Vec::new();
    for f in r.findings.iter().filter(|f| f.symptom_of.is_none()) {
        if !v.contains(&f.category) {
            v.push(f.category);
        }
    }
    v
}

#[test]
fn unexplained_one_liners_get_candidates_from_their_tokens() {
    for (line, want) in [
        ("MemoryError", Category::HostOom),
        (
            "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.00 GiB for an array with shape (1000,) and data type float64",
            Category::HostOom,
        ),
        (
            "fish: Job 1, 'python train.py' terminated by signal SIGSEGV (Address boundary error)",
            Category::SegfaultNative,
        ),
        (
            "zsh: segmentation fault (core dumped)  python train.py",
            Category::SegfaultNative,
        ),
        ("Process exited with status 139", Category::SegfaultNative),
        ("State: TIMEOUT", Category::PreemptedOrTimeLimit),
        ("write failed: Input/output error", Category::DiskFull),
        (
            "ncclInternalError: Internal check failed.",
            Category::NcclNetwork,
        ),
        (
            "FileNotFoundError: [Errno 2] No such file or directory: '/data/train.jsonl'",
            Category::ConfigError,
        ),
        (
            "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
            Category::ConfigError,
        ),
        (
            "ValueError: micro batch 6 must divide the global batch 20",
            Category::ConfigError,
        ),
    ] {
        let r = diagnose_text(&format!("{line}\n"));
        assert_ne!(r.verdict, Verdict::NoFailure, "{line}");
        let cats = roots(&r);
        assert!(
            cats.iter().take(3).any(|c| *c == want),
            "{line}: {want} in the top three of {cats:?}"
        );
        let tier: Vec<_> = r
            .findings
            .iter()
            .filter(|f| f.rule == trainwreck::correlate::second_tier::RULE)
            .collect();
        assert!(tier.len() <= 3, "{line}: at most three candidates");
        for f in &tier {
            assert!(
                f.strength <= trainwreck::tokens::MAX_CONFIDENCE,
                "{line}: low"
            );
            assert!(
                f.fix.en.contains(line.trim()) || f.fix.en.contains(&line[..60.min(line.len())]),
                "{line}: the fix quotes the line: {}",
                f.fix.en
            );
            assert!(f.next_time.is_some(), "{line}: says what to collect");
            assert!(
                f.evidence.iter().all(|e| e
                    .why
                    .as_ref()
                    .map(|t| t.en.as_str())
                    .is_some_and(|w| w.starts_with("holds "))),
                "{line}: the tokens are the evidence"
            );
        }
        if cats.first() == Some(&want) && tier.first().is_some_and(|f| f.category == want) {
            // Only candidates: the run is not called diagnosed on tokens alone.
            let rule_cause = r
                .findings
                .iter()
                .any(|f| f.rule != trainwreck::correlate::second_tier::RULE && f.strength >= 0.3);
            if !rule_cause {
                assert_eq!(r.verdict, Verdict::UnknownFailure, "{line}");
            }
        }
    }
}

#[test]
fn a_specific_rule_wins_over_the_tokens() {
    // A kernel OOM line is a rule's: no token candidate repeats the category it names.
    let r = diagnose_text(
        "[ 1843.308145] Out of memory: Killed process 5151 (python) total-vm:1234kB, anon-rss:100kB\nMemoryError\n",
    );
    assert_eq!(r.verdict, Verdict::Diagnosed);
    assert_eq!(r.findings[0].category, Category::HostOom);
    assert!(
        r.findings
            .iter()
            .all(|f| f.rule != trainwreck::correlate::second_tier::RULE)
    );
}

#[test]
fn a_rule_explained_run_still_names_the_other_kinds_its_death_lines_hold() {
    // A cuBLAS execution failure is a rule's (a kernel fault); the CUDA error it is raised as
    // also names a driver/build mismatch, which a reader would check second: it is named as
    // an alternative, ranked below the rule's finding, and the verdict is the rule's.
    let r = diagnose_text(concat!(
        "Traceback (most recent call last):\n",
        "  File \"train.py\", line 88, in <module>\n",
        "    out = model(batch)\n",
        "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`\n",
    ));
    assert_eq!(r.verdict, Verdict::Diagnosed);
    let top = &r.findings[0];
    assert_eq!(top.category, Category::CudaIllegalAccess);
    assert_ne!(top.rule, trainwreck::correlate::second_tier::RULE);
    let cats = roots(&r);
    assert!(
        cats[..3.min(cats.len())].contains(&Category::CudaDriverMismatch),
        "{cats:?}"
    );
    let alt = r
        .findings
        .iter()
        .find(|f| f.category == Category::CudaDriverMismatch)
        .unwrap();
    assert_eq!(alt.rule, trainwreck::correlate::second_tier::RULE);
    assert!(alt.strength < top.strength && alt.confidence <= top.confidence);
    assert!(
        alt.title
            .en
            .starts_with("Also possible, cuda_driver_mismatch"),
        "{}",
        alt.title.en
    );
    assert!(
        alt.evidence
            .iter()
            .any(|e| e.text.contains("CUBLAS_STATUS_EXECUTION_FAILED"))
    );
}

#[test]
fn a_consequence_the_cascade_read_is_not_proposed_again() {
    // The abort after an NCCL error is read as a consequence (a symptom); the tokens of the
    // abort's lines do not propose its category again as another cause.
    let r = diagnose_text(concat!(
        "host-7:311:402 [0] transport/net_ib.cc:1021 NCCL WARN NET/IB : Got completion from peer 10.1.2.3<41234> with error 12, opcode 1, len 0, vendor err 129\n",
        "terminate called after throwing an instance of 'std::runtime_error'\n",
        "  what():  NCCL error: unhandled system error, NCCL version 2.18.1\n",
        "Aborted (core dumped)\n",
    ));
    assert!(
        r.findings.iter().any(|f| f.symptom_of.is_some()),
        "{:?}",
        r.findings
    );
    for f in r.findings.iter().filter(|f| f.symptom_of.is_some()) {
        assert!(
            !r.findings
                .iter()
                .any(|x| x.category == f.category
                    && x.rule == trainwreck::correlate::second_tier::RULE),
            "{:?} is a symptom and a token candidate",
            f.category
        );
    }
}

#[test]
fn a_rule_explained_run_with_no_other_kind_gets_no_alternative() {
    // Every death line names the rule's own kind: nothing is added beside it.
    let r = diagnose_text(concat!(
        "Traceback (most recent call last):\n",
        "  File \"train.py\", line 40, in <module>\n",
        "    loss.backward()\n",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.02 GiB is free.\n",
    ));
    assert_eq!(r.findings[0].category, Category::GpuOom);
    let tier: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.rule == trainwreck::correlate::second_tier::RULE)
        .map(|f| f.category)
        .collect();
    assert!(tier.is_empty(), "{tier:?}");
}

#[test]
fn a_healthy_run_gets_no_candidates() {
    let r = diagnose_text(
        "step 10 loss 2.1\nKeyboardInterrupt handler installed\n{'train_runtime': '812.4', 'train_loss': '1.83'}\n",
    );
    assert_eq!(r.verdict, Verdict::NoFailure);
    assert!(r.findings.is_empty(), "{:?}", r.findings);
}

#[test]
fn a_token_is_found_in_every_shape_a_paste_takes() {
    for line in [
        // Glued to Chinese prose.
        "训练中途报错内存不足MemoryError: Unable to allocate 2.0 GiB",
        // A JSON log record with the traceback flattened into literal `\n`.
        r#"{"level":"error","message":"Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\nMemoryError\n"}"#,
        // A Python repr of the same.
        r#"RuntimeError('Traceback (most recent call last):\n  File "x.py", line 1\nMemoryError: cannot allocate')"#,
        // A container runtime's prefix.
        "2024-01-01T00:00:00.123456789Z stderr F MemoryError",
        // Wrapped in a log viewer's quotes.
        "job failed: \"MemoryError\"",
    ] {
        let r = diagnose_text(&format!("{line}\n"));
        assert_ne!(r.verdict, Verdict::NoFailure, "{line}");
        assert!(
            roots(&r).iter().take(3).any(|c| *c == Category::HostOom),
            "{line}: {:?}",
            roots(&r)
        );
    }
}

/// Issue 29: the first sentence of a fix is what a user does first. Every category's advice in
/// the token table opens with its step; the quoted line and what it means come after it.
#[test]
fn every_token_fix_opens_with_the_step_not_the_quoted_line() {
    let t = trainwreck::tokens::table();
    let mut seen = 0;
    for &c in Category::ALL {
        let Some(a) = t.advice(c) else { continue };
        seen += 1;
        for fix in [&a.fix.en, &a.fix.zh] {
            assert!(
                fix.contains("{line}"),
                "{c}: the fix quotes the line: {fix}"
            );
            assert!(
                !first_sentence(fix).contains("{line}"),
                "{c}: the first sentence is the quote, not the step: {fix}"
            );
        }
        assert!(a.fix.en.contains("Why: "), "{c}: {}", a.fix.en);
    }
    assert!(seen >= 15, "advice for {seen} categories");
}

#[test]
fn a_token_fix_through_the_engine_leads_with_the_step() {
    // An NCCL network failure carried by a bare exception no rule knows: the token tier
    // names the interface settings first and quotes the line after.
    let r = diagnose_text(
        "step 9 loss 1.2\nSomeFramework.ExternalError: Nccl error, unhandled system error (at /src/collective.cc:68)\n",
    );
    let f = r
        .findings
        .iter()
        .find(|f| f.category == Category::NcclNetwork)
        .expect("an NCCL network candidate");
    let first = first_sentence(&f.fix.en);
    assert!(first.contains("NCCL_SOCKET_IFNAME"), "{}", f.fix.en);
    assert!(!first.contains("unhandled system error"), "{}", f.fix.en);
}

/// Issue 29 item 5: NCCL's `NET/Plugin` INFO line (the optional `libnccl-net.so` not found,
/// internal transport used) is no missing CUDA library and no missing file, even glued to the
/// traceback that follows it.
#[test]
fn the_nccl_net_plugin_info_line_drives_nothing() {
    let r = diagnose_text(
        "host-a:7:7 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or directory No plugin found (libnccl-net.so), using internal implementationTraceback (most recent call last):\n  File \"/work/t/train.py\", line 9, in <module>\n    dist.barrier()\nSomeFramework.CommError: ncclInternalError: Internal check failed.\n",
    );
    let cats = roots(&r);
    assert!(!cats.contains(&Category::CudaDriverMismatch), "{cats:?}");
    assert!(!cats.contains(&Category::ConfigError), "{cats:?}");
}

/// Ray's list of what may kill a worker (SIGKILL by the OOM killer, SIGSEGV) is the same for
/// every death: its words are no candidate, though the run still failed.
#[test]
fn a_frameworks_list_of_possible_causes_is_no_candidate() {
    let text = "(pid=2211) step 0 - generating\n(raylet) A worker died or was killed while executing a task by an unexpected system error. Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file. There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force is called. (3) The worker is crashed unexpectedly due to SIGSEGV or other unexpected errors.\n";
    let r = diagnose_text(text);
    assert_ne!(r.verdict, Verdict::NoFailure, "the worker did die");
    let got = roots(&r);
    assert!(
        !got.contains(&Category::SegfaultNative) && !got.contains(&Category::HostOom),
        "{got:?}"
    );
}

/// An actor's death as Ray reports it (issue 27): the death a Ray traceback ends in is how the
/// failure surfaced, not a code bug, so what Ray says killed it leads — a node preempted by
/// the autoscaler, a worker past its pod's memory — and, where Ray names nothing, the deaths a
/// process has without a word of its own (host OOM, a native crash) are in the top three. The
/// traceback's frame lines do not keep the exception above the token its own line holds.
#[test]
fn an_actors_death_names_what_ray_says_killed_it_or_the_deaths_of_its_kind() {
    let tb = |tail: &str| {
        format!(
            "Traceback (most recent call last):\n  File \"/jobs/rl/main.py\", line 51, in <module>\n    out = ray.get(worker.step.remote(batch))\n  File \"/venv/lib/python3.11/site-packages/ray/_private/worker.py\", line 2771, in get\n    raise value\nray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n\tclass_name: Rollout\n{tail}"
        )
    };
    let preempted = diagnose_text(&tb(concat!(
        "The actor died because its node has died. Node Id: 77aa01\n",
        "\tthe actor's node was preempted: reclaimed by the cloud provider\n",
    )));
    assert_eq!(
        roots(&preempted).first(),
        Some(&Category::PreemptedOrTimeLimit),
        "{:?}",
        roots(&preempted)
    );
    let k8s = diagnose_text(&tb(
        "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: Worker exits unexpectedly. Worker exits with an exit code None. The worker may have exceeded K8s pod memory limits.\n",
    ));
    assert_eq!(roots(&k8s).first(), Some(&Category::HostOom));
    let bare = diagnose_text(&tb(""));
    let cats = roots(&bare);
    assert_eq!(cats.first(), Some(&Category::HostOom), "{cats:?}");
    assert!(cats[..3].contains(&Category::SegfaultNative), "{cats:?}");
    // A remote task's own exception keeps its kind: the wrapper says only that it was remote.
    let remote = diagnose_text(
        "ray.exceptions.RayTaskError(FileNotFoundError): ray::load() (pid=31, ip=10.0.0.4)\nFileNotFoundError: [Errno 2] No such file or directory: '/data/shard-0001.parquet'\n",
    );
    assert_eq!(roots(&remote).first(), Some(&Category::ConfigError));
}

/// The exception a token's failure surfaced through (a carrier) ranks below every kind of
/// failure the tokens name, the weakest too: it says how the failure surfaced, and a place
/// among the first three belongs to a kind to check (T0919: a generic exception at rank 2 kept
/// the driver mismatch out of them).
#[test]
fn the_exception_that_carried_a_failure_ranks_below_every_kind_named() {
    let r = diagnose_text(concat!(
        "Traceback (most recent call last):\n",
        "  File \"/jobs/rl/main.py\", line 51, in <module>\n",
        "    out = ray.get(worker.step.remote(batch))\n",
        "  File \"/venv/lib/python3.11/site-packages/ray/_private/worker.py\", line 2771, in get\n",
        "    raise value\n",
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n",
    ));
    // The order the mechanism decides: `rank` sorts on the pre-calibration score (`strength`)
    // and the report keeps that order, so a calibration refit that moves the shown
    // confidences cannot reorder them. Asserted on positions and strengths, not on the
    // calibrated confidences.
    let kinds: Vec<(usize, f64)> = r
        .findings
        .iter()
        .enumerate()
        .filter(|(_, f)| f.rule == "token-classified")
        .map(|(i, f)| (i, f.strength))
        .collect();
    assert!(kinds.len() >= 2, "{:?}", roots(&r));
    let (at, carrier) = r
        .findings
        .iter()
        .enumerate()
        .find(|(_, f)| f.category == Category::PythonException)
        .expect("the traceback's reading");
    let last_kind = kinds.iter().map(|k| k.0).max().unwrap();
    assert!(
        at > last_kind,
        "the carrier ranks {at}, a kind ranks {last_kind}: {:?}",
        roots(&r)
    );
    let weakest = kinds.iter().map(|k| k.1).fold(f64::MAX, f64::min);
    assert!(
        carrier.strength < weakest,
        "{} vs {weakest}",
        carrier.strength
    );
    assert!(
        carrier
            .score
            .iter()
            .any(|c| c.what.starts_with("ranked below every kind of failure")),
        "the demotion says why: {:?}",
        carrier.score
    );
}

/// Issue 27, ranks 2 and 3: a weak first cause (an uncaught exception raised inside a library)
/// keeps the first rank, and the kinds of failure its failing line's message names follow it as
/// low candidates; a strong specific cause and a run that did not fail gain none.
#[test]
fn a_weak_first_cause_is_followed_by_what_its_lines_name() {
    let weak = "Traceback (most recent call last):\n  \
        File \"/opt/venv/lib/python3.11/site-packages/kernels_x/build.py\", line 88, in load_ops\n    \
        raise RuntimeError(msg)\n\
        RuntimeError: Error building extension 'fused_norm_ops'\n";
    let r = diagnose_text(weak);
    let cats = roots(&r);
    let first = r.findings.iter().find(|f| f.symptom_of.is_none()).unwrap();
    assert!(
        [Category::Other, Category::PythonException].contains(&first.category),
        "{cats:?}"
    );
    let pos = cats.iter().position(|c| *c == Category::CudaDriverMismatch);
    assert!(
        pos.is_some_and(|p| (1..3).contains(&p)),
        "the extension build names the CUDA toolkit at rank 2 or 3: {cats:?}"
    );
    let cand = r
        .findings
        .iter()
        .find(|f| f.category == Category::CudaDriverMismatch)
        .unwrap();
    assert!(
        cand.strength <= 0.35 && cand.strength < first.strength,
        "{cand:?}"
    );
    assert!(cand.confidence < first.confidence, "{cand:?}");
    assert!(
        cand.evidence
            .iter()
            .any(|e| e.text.contains("Error building extension")),
        "{:?}",
        cand.evidence
    );

    // A specific rule's strong cause: nothing further is added beside it.
    let strong = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.02 GiB is free.\n";
    let r = diagnose_text(strong);
    assert_eq!(roots(&r).first(), Some(&Category::GpuOom));
    assert!(
        !r.findings
            .iter()
            .any(|f| f.title.en.starts_with("Also possible")
                && f.title.en.contains("other evidence")),
        "{:?}",
        roots(&r)
    );

    // A run that did not fail: no candidate, still no failure.
    let healthy = "step 10/100 loss 2.31\nstep 20/100 loss 2.02\ntraining complete\n";
    let r = diagnose_text(healthy);
    assert_eq!(r.verdict, Verdict::NoFailure);
    assert!(
        r.findings.iter().all(|f| f.confidence < 0.3),
        "{:?}",
        roots(&r)
    );
}
