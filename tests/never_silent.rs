//! A dead run is never called healthy: every one-line paste of a fatal shape (a shell's or a
//! scheduler's death by signal, an uncaught exception, a C++ terminate, MPI's abort, an
//! unreadable GPU, an error line at the very end) gets at least `unknown_failure`, with the line
//! shown; harmless lines stay `no_failure`; and order matters: a clean end after an error
//! outweighs it, an error after the last progress does not.

use trainwreck::model::Verdict;
use trainwreck::rules::KnowledgeBase;

fn diagnose_text(name: &str, text: &str) -> trainwreck::report::Report {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(name), text).unwrap();
    let kb = KnowledgeBase::load(&[]).unwrap();
    trainwreck::diagnose(&kb, &[dir.path().display().to_string()], 1)
}

#[test]
fn every_fatal_one_liner_is_a_failure_and_is_shown() {
    for line in [
        "Aborted (core dumped)",
        "Aborted",
        "Bus error (core dumped)",
        "Illegal instruction (core dumped)",
        "Floating point exception",
        "./run.sh: line 12: 48213 Killed                  python train.py",
        "srun: error: node3: task 0: Killed",
        "srun: error: gpu-a17: tasks 0-3: Exited with exit code 1",
        "terminate called after throwing an instance of 'std::runtime_error'",
        "Fatal Python error: Segmentation fault",
        "mpirun noticed that process rank 3 with PID 4242 on node n7 exited on signal 9 (Killed).",
        "MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD with errorcode 1",
        "|   1  NVIDIA A100-SXM4-80GB    On  | 00000000:07:00.0 Off |                  ERR! |",
        "ValueError: too many values to unpack (expected 2)",
        "ERROR: the job step was cancelled",
        "[2026-11-29 18:57:00] [ERROR] worker group failed",
        "error: could not open shard 17",
        // Any layer's death word (issue 27): NCCL result codes and IB statuses, CUDA enums,
        // errno texts, kill reasons, scheduler end states, exception classes, any shell.
        "node4:2201:2290 [3] misc/ibvwrap.cc:190 NCCL WARN Call to ibv_create_qp failed with error Cannot allocate memory errno 12",
        "ncclInternalError: Internal check failed.",
        "write failed: Input/output error",
        "Process exited with status 139",
        "exit status 134",
        "State: TIMEOUT",
        "Traceback (most recent call last):",
        "MemoryError",
        "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.00 GiB for an array with shape (1000,) and data type float64",
        "zsh: segmentation fault (core dumped)  python train.py",
        "fish: Job 1, 'python train.py' terminated by signal SIGSEGV (Address boundary error)",
        "[1]    4242 abort (core dumped)  python train.py",
        "[1]    2718281 killed     python train.py --epochs 3",
        "[2]  + 31337 segmentation fault  python eval.py",
        "ERROR: error code -9",
        "KeyboardInterrupt",
        "Reason: CrashLoopBackOff",
        "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
        // The rest of item 1's shapes, one line each: a platform's kill reason and exit
        // statuses, a scheduler's end state, an NCCL WARN with a completion status, a
        // socket's errno text, a CUDA error enum, a signal's death alone.
        "      Reason:       OOMKilled",
        "command terminated with exit code 137",
        "failed (exitcode: -7) local_rank: 0 (pid: 881) of binary: /opt/venv/bin/python",
        "slurmstepd: error: *** STEP 7731.0 ON gpu-b04 CANCELLED AT 2026-11-30T02:11:09 ***",
        "gpu-b04:3312:3390 [1] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.1.2.3<40122> with status=12 opcode=0 len=0 vendor err 129 (Recv)",
        "recv: Connection reset by peer",
        "cudaErrorLaunchFailure: unspecified launch failure",
        "Segmentation fault",
        "Bus error",
        "Killed",
        "Segmentation fault (core dumped)",
    ] {
        let r = diagnose_text("paste.txt", &format!("{line}\n"));
        assert_ne!(r.verdict, Verdict::NoFailure, "{line:?}");
        if r.verdict == Verdict::UnknownFailure && r.findings.is_empty() {
            assert!(
                r.last_errors.iter().any(|e| e.text == line),
                "{line:?} is shown: {:?}",
                r.last_errors
            );
        }
    }
}

#[test]
fn harmless_lines_stay_healthy() {
    for text in [
        "step 100/1000 loss 1.23 lr 2e-5\n",
        "UserWarning: torch.cuda.amp.GradScaler(args...) is deprecated. Please use torch.amp.GradScaler('cuda', args...) instead.\n",
        "Epoch 3: 100%|██████████| 50/50 [00:10<00:00, 4.9it/s, loss=0.12]\n",
        "NCCL INFO comm 0x55d0 rank 0 nranks 2 cudaDev 0 busId 60 - Destroy COMPLETE\n",
        "error_rate: 0.02 after epoch 3\n",
        // Errno texts and transport words logged as warnings, and fallbacks, are handled.
        "[W socket.cpp:558] [c10d] The client socket cannot be initialized to connect to [localhost]:29512 (errno: 97 - Address family not supported by protocol).\n",
        "box-01:41022:41022 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n",
        "{'loss': '0.4121', 'grad_norm': '1.07', 'learning_rate': '1.9e-05', 'epoch': '0.52'}\n",
    ] {
        let r = diagnose_text("train.log", text);
        assert_eq!(
            r.verdict,
            Verdict::NoFailure,
            "{text:?}: {:?}",
            r.last_errors
        );
    }
}

#[test]
fn a_clean_end_after_an_error_outweighs_it_but_not_the_other_way_round() {
    let survived = "\
2026-11-29 10:00:01 WARNING retrying download (attempt 1)
ERROR: connection reset by peer while fetching tokenizer.json
2026-11-29 10:00:09 step 10 loss 2.1
{'train_runtime': '812.4', 'train_samples_per_second': '41.2', 'train_loss': '1.83', 'epoch': '3.0'}
";
    assert_eq!(
        diagnose_text("train.log", survived).verdict,
        Verdict::NoFailure
    );
    let died = "\
2026-11-29 10:00:09 step 10 loss 2.1
2026-11-29 10:00:10 step 11 loss 2.0
Aborted (core dumped)
";
    let r = diagnose_text("train.log", died);
    assert_eq!(r.verdict, Verdict::UnknownFailure);
    assert!(
        r.last_errors
            .iter()
            .any(|e| e.text == "Aborted (core dumped)")
    );
    // An error word deep inside a long healthy log is history, not the end of the run.
    let mut long = String::from("ERROR: could not reach wandb, continuing offline\n");
    for i in 0..200 {
        long.push_str(&format!("step {i} loss 1.0\n"));
    }
    assert_eq!(
        diagnose_text("train.log", &long).verdict,
        Verdict::NoFailure
    );
}

#[test]
fn an_exit_status_of_zero_outweighs_caught_errors_and_a_nonzero_one_is_a_failure() {
    let caught = "\
Traceback (most recent call last):
  File \"train.py\", line 40, in fetch
ConnectionError: timed out
[launch.py:351:main] Process 4242 exits successfully.
";
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("console.log"), caught).unwrap();
    std::fs::write(d.path().join("exit_status.txt"), "exit_code: 0\n").unwrap();
    let kb = KnowledgeBase::load(&[]).unwrap();
    let r = trainwreck::diagnose(&kb, &[d.path().display().to_string()], 1);
    assert_eq!(r.verdict, Verdict::NoFailure, "{:?}", r.facts);
    std::fs::write(d.path().join("exit_status.txt"), "exit_code: 3\n").unwrap();
    let r = trainwreck::diagnose(&kb, &[d.path().display().to_string()], 1);
    assert_ne!(r.verdict, Verdict::NoFailure);
}

/// A warning the run survived is history: the same c10d name-resolution warnings are the
/// cause when nothing follows them, and ruled out when the training goes on and finishes.
#[test]
fn a_warning_followed_by_a_clean_end_is_survived_not_the_cause() {
    let warn = "[W1204 10:02:11.118220532 socket.cpp:764] [c10d] The IPv4 network addresses of (master-0.trainer, 23456) cannot be retrieved (gai error: -2 - Name or service not known).\n";
    let died = diagnose_text("worker-1.log", &warn.repeat(3));
    assert_eq!(died.verdict, Verdict::Diagnosed);
    assert_eq!(
        died.top().unwrap().category,
        trainwreck::model::Category::RendezvousFailure
    );
    let survived = diagnose_text(
        "worker-1.log",
        &format!(
            "{}[rank1]: epoch 0 step 50 loss 2.4410\n[rank1]: training finished, saving final model to /ckpt/final\n",
            warn.repeat(3)
        ),
    );
    assert_eq!(
        survived.verdict,
        Verdict::NoFailure,
        "{:?}",
        survived.findings
    );
    let f = &survived.findings[0];
    assert!(f.strength < 0.3 && f.against.iter().any(|a| a.text.contains("ended cleanly")));
    // The verdict and the shown findings agree (issue 27): the ruled-out finding is shown as
    // ruled out, not at the confidence its rule would have had (0.89 before).
    for f in &survived.findings {
        assert!(f.confidence <= f.strength, "{}: {}", f.rule, f.confidence);
    }
}

/// A non-strict load's report that the program went on past names no failure (issue 27): the
/// same size-mismatch lines are the cause when a traceback follows them or the log ends on
/// them, and ruled out when the program prints more of its own output after them and nothing
/// says it died.
#[test]
fn a_load_report_the_program_went_on_past_is_no_failure() {
    let report = concat!(
        "loading pretrained weights from backbone-imagenet.pth\n",
        "The model and loaded state dict do not match exactly\n",
        "size mismatch for cls_head.fc.weight: copying a param with shape torch.Size([1000, 768]) from checkpoint, the shape in current model is torch.Size([7, 768]).\n",
        "size mismatch for cls_head.fc.bias: copying a param with shape torch.Size([1000]) from checkpoint, the shape in current model is torch.Size([7]).\n",
    );
    let went_on = diagnose_text(
        "train.log",
        &format!(
            "{report}freezing backbone\nepoch 1 | train loss 1.9021 | val acc 0.41\nepoch 2 | train loss 1.2210 | val acc 0.58\nepoch 3 | train loss 0.9813 | val acc 0.66\n"
        ),
    );
    assert_eq!(
        went_on.verdict,
        Verdict::NoFailure,
        "{:?}",
        went_on.findings
    );
    let f = &went_on.findings[0];
    assert!(f.strength < 0.3 && f.against.iter().any(|a| a.text.contains("went on")));
    let ended = diagnose_text("train.log", report);
    assert_ne!(ended.verdict, Verdict::NoFailure);
    assert_eq!(
        ended.top().unwrap().category,
        trainwreck::model::Category::CheckpointError
    );
    let raised = diagnose_text(
        "train.log",
        &format!(
            "{report}epoch 1 | train loss 1.9021 | val acc 0.41\nTraceback (most recent call last):\n  File \"train.py\", line 88, in <module>\n    model.load_state_dict(state)\nRuntimeError: Error(s) in loading state_dict for Classifier:\n"
        ),
    );
    assert_eq!(
        raised.top().unwrap().category,
        trainwreck::model::Category::CheckpointError
    );
    // A kind a run shows while it goes on keeps its weight: NaN metrics then more steps.
    let nan = diagnose_text(
        "train.log",
        "step 10 loss: nan\nstep 20 loss: nan\nstep 30 loss: nan\nstep 40 | lr 1e-4\nstep 50 | lr 1e-4\nstep 60 | lr 1e-4\n",
    );
    assert_ne!(nan.verdict, Verdict::NoFailure, "{:?}", nan.findings);
}

/// The top finding's category and its first evidence line number, for the stall cases.
fn top(r: &trainwreck::report::Report) -> (String, Option<u64>) {
    let f = r.findings.first().expect("a finding");
    (
        f.category.to_string(),
        f.evidence.first().and_then(|e| e.line),
    )
}

#[test]
fn a_log_that_stops_mid_run_with_the_prompt_back_is_a_death_cited_at_its_last_progress() {
    let r = diagnose_text(
        "train.log",
        concat!(
            "2025-02-03 10:00:00 | INFO | loop:88 - epoch: 12/200, iter: 300/1200, loss: 2.71\n",
            "2025-02-03 10:00:05 | INFO | loop:88 - epoch: 12/200, iter: 310/1200, loss: 2.69\n",
            "(det) kai@rig01:~/proj$ \n",
        ),
    );
    assert_eq!(r.verdict, Verdict::UnknownFailure);
    assert_eq!(top(&r), ("host_oom".to_string(), Some(2)));
    let f = &r.findings[0];
    assert!(
        f.fix.en.starts_with("Look for the kernel's OOM killer"),
        "{}",
        f.fix.en
    );
    assert!(
        r.last_errors.iter().any(|e| e.line == 2),
        "{:?}",
        r.last_errors
    );
}

#[test]
fn an_interrupt_after_start_up_and_after_a_step_name_different_hangs() {
    let start = diagnose_text(
        "console.txt",
        concat!(
            // Set-up that mentions a loss is still set-up; the query's CSV after the ^C
            // makes the file sniff as nvidia-smi output, and it still ends as its log did.
            "[2025-05-06 07:08:09,010] [INFO] [engine.py:77] Creating fp16 optimizer with dynamic loss scale\n",
            "^C\n",
            "$ nvidia-smi --query-gpu=index,name,utilization.gpu,memory.used --format=csv\n",
            "index, name, utilization.gpu [%], memory.used [MiB]\n",
            "0, NVIDIA GeForce RTX 4090, 100 %, 6120 MiB\n",
        ),
    );
    assert_eq!(top(&start), ("nccl_network".to_string(), Some(1)));
    assert!(start.findings[0].fix.en.contains("NCCL_P2P_DISABLE=1"));
    let step = diagnose_text(
        "console.txt",
        "rank=1: entering backward (step=0)\n^C\n# nothing for ten minutes\n",
    );
    assert_eq!(top(&step), ("nccl_timeout".to_string(), Some(1)));
}

#[test]
fn a_log_ending_in_distributed_start_up_or_on_a_repeated_failure_warning_is_stuck() {
    let init = diagnose_text(
        "workerlog.0",
        "I0101 00:00:01.000001  4242 nccl_context.cc:83] init nccl context nranks: 8 local rank: 0 gpu id: 0 ring id: 0\n",
    );
    assert_eq!(init.verdict, Verdict::UnknownFailure);
    assert_eq!(top(&init), ("nccl_network".to_string(), Some(1)));
    assert!(init.findings[0].fix.en.contains("NCCL_SOCKET_IFNAME"));
    let w = "[W socket.cpp:663] [c10d] The client socket has failed to connect to [::ffff:10.9.8.7]:29400 (errno: 110 - Connection timed out).";
    let retry = diagnose_text("run.txt", &format!("$ bash launch.sh\n{w}\n{w}\n{w}\n"));
    assert_eq!(top(&retry), ("rendezvous_failure".to_string(), Some(4)));
    // Twice is not yet stuck.
    let twice = diagnose_text(
        "run.txt",
        &format!("$ bash launch.sh\n{w}\n{w}\nstep 1/10 loss 2.0\n"),
    );
    assert_eq!(twice.verdict, Verdict::NoFailure);
}

/// A log that stops while `nvidia-smi`, typed after its last line, shows the GPUs held (busy,
/// or their memory in use) is a run alive and silent: a hang, read for its transport first.
/// The same log with idle GPUs may still be going, and stays healthy.
#[test]
fn a_log_that_stops_while_nvidia_smi_shows_the_gpus_held_is_a_hang() {
    let log = concat!(
        "$ torchrun --nproc_per_node=2 fit.py\n",
        "[rank0]: model ready\n",
        "[rank1]: model ready\n",
        "$ nvidia-smi --query-gpu=index,name,utilization.gpu,memory.used --format=csv\n",
        "index, name, utilization.gpu [%], memory.used [MiB]\n",
        "0, NVIDIA RTX 6000, 100 %, 1300 MiB\n",
        "1, NVIDIA RTX 6000, 100 %, 1300 MiB\n",
    );
    let r = diagnose_text("console.txt", log);
    assert_eq!(r.verdict, Verdict::UnknownFailure);
    assert_eq!(top(&r), ("nccl_network".to_string(), Some(3)));
    assert!(r.findings[0].fix.en.contains("NCCL_P2P_DISABLE=1"));
    let idle = log.replace("100 %, 1300 MiB", "0 %, 3 MiB");
    let r = diagnose_text("console.txt", &idle);
    assert_eq!(r.verdict, Verdict::NoFailure, "{:?}", r.findings);
}

/// Logged metrics that turn NaN and stay so to the end of the log are a failed run (nan_loss),
/// though nothing raised; an fp16 loss scaler's NaN in the first logged steps, finite after,
/// and a single NaN, are not.
#[test]
fn metrics_nan_to_the_end_fail_the_run_but_a_warm_up_nan_does_not() {
    let nan = |s: u32| {
        format!("{{'loss': 2.41, 'grad_norm': nan, 'learning_rate': 2e-05, 'epoch': 0.{s}}}\n")
    };
    let ok = |s: u32| {
        format!("{{'loss': 2.{s}, 'grad_norm': 1.3, 'learning_rate': 2e-05, 'epoch': 0.{s}}}\n")
    };
    let failed: String = (1..=4).map(ok).chain((5..=8).map(nan)).collect();
    let r = diagnose_text("train.log", &failed);
    assert_eq!(r.verdict, Verdict::UnknownFailure);
    assert_eq!(top(&r), ("nan_loss".to_string(), Some(8)));
    let warm: String = (1..=2).map(nan).chain((3..=40).map(ok)).collect();
    let r = diagnose_text("train.log", &warm);
    assert_eq!(r.verdict, Verdict::NoFailure, "{:?}", r.findings);
    let once: String = (1..=30).map(ok).chain(std::iter::once(nan(31))).collect();
    let r = diagnose_text("train.log", &once);
    assert_eq!(r.verdict, Verdict::NoFailure, "{:?}", r.findings);
}

#[test]
fn runs_that_end_well_or_may_still_be_going_stay_healthy() {
    for text in [
        // Still going: the log just ends mid-epoch, no prompt, no interrupt.
        "Epoch 4/40:  37%|###7      | 79/212 [00:59<01:39,  1.33it/s, loss=0.366]\n",
        // A side command typed afterwards does not say the run ended.
        "epoch 3/10 step 200/500 loss 1.2\n$ ls log/\nworkerlog.0  workerlog.1\n",
        // The bar reached its total, then the prompt.
        "100%|##########| 500/500 [10:00<00:00,  1.2it/s]\nu@h:~/x$ \n",
        // A clean end, then the prompt.
        "step 9/10 loss 0.8\nTraining completed.\nu@h:~/x$ \n",
    ] {
        let r = diagnose_text("train.log", text);
        assert_eq!(r.verdict, Verdict::NoFailure, "{text:?}: {:?}", r.findings);
    }
}

/// What ended the process decides (issue 27, T2318/T2319): a thread's or a child process's
/// traceback (CPython prints it from `threading.py`'s `_bootstrap_inner` or
/// `multiprocessing/process.py`'s `_bootstrap`, and the main program goes on) in a run that
/// reports its own completion, before or after it, is not the run's failure; the main
/// program's traceback after its completion line is still a failure at exit, and a child's
/// traceback with no completion anywhere still says the run died.
#[test]
fn a_threads_or_childs_traceback_in_a_completed_run_is_not_its_failure_but_a_main_one_is() {
    let child = "\
Traceback (most recent call last):
  File \"/opt/py/lib/python3.11/multiprocessing/process.py\", line 314, in _bootstrap
    self.run()
  File \"/opt/py/lib/python3.11/multiprocessing/process.py\", line 108, in run
    self._target(*self._args, **self._kwargs)
  File \"/srv/job/writer.py\", line 52, in drain
    rec = q.get()
EOFError
";
    let thread = "\
Exception in thread prefetch-2:
Traceback (most recent call last):
  File \"/opt/py/lib/python3.11/threading.py\", line 1045, in _bootstrap_inner
    self.run()
  File \"/srv/job/prefetch.py\", line 88, in run
    batch = self.source.next_batch()
BrokenPipeError: [Errno 32] Broken pipe
";
    let main = "\
Traceback (most recent call last):
  File \"/srv/job/train.py\", line 310, in <module>
    export(model)
  File \"/srv/job/train.py\", line 270, in export
    torch.save(model.state_dict(), out)
RuntimeError: File /ckpt/final.pt cannot be opened.
";
    let steps = "epoch 9 step 4000 loss 0.41\nepoch 9 step 4001 loss 0.40\n";
    let done = "Training finished after 10 epochs\n";
    for (name, text) in [
        ("child after completion", format!("{steps}{done}{child}")),
        ("thread after completion", format!("{steps}{done}{thread}")),
        ("thread before completion", format!("{steps}{thread}{done}")),
    ] {
        let r = diagnose_text("train.log", &text);
        assert_eq!(r.verdict, Verdict::NoFailure, "{name}: {:?}", r.findings);
        assert!(
            r.findings.iter().all(|f| f.confidence < 0.3),
            "{name}: {:?}",
            r.findings
        );
    }
    for (name, text) in [
        ("main after completion", format!("{steps}{done}{main}")),
        ("child, no completion", format!("{steps}{child}")),
        ("thread, no completion", format!("{steps}{thread}")),
    ] {
        let r = diagnose_text("train.log", &text);
        assert_ne!(r.verdict, Verdict::NoFailure, "{name}");
    }
}

/// Stack dumps of a run that stopped printing (issue 27): someone dumps a stuck run, so a
/// dump is a hang, never a healthy run. Where each process stands decides the kind: ranks in
/// different places never meet (collective_mismatch); every dumped process in the same
/// collective waits on its transport (nccl_network first); a dump after a clean end is not a
/// hang. py-spy's, faulthandler's and gdb's formats, written here in our own words.
#[test]
fn stack_dumps_of_a_stuck_run_say_where_its_ranks_stand() {
    let apart = diagnose_text(
        "hang.txt",
        concat!(
            "epoch 2 step 400/900 loss 0.91\n",
            "# silent for an hour\n",
            "$ py-spy dump --pid 9001\n",
            "Process 9001: python run.py\n",
            "Python v3.11.2 (/usr/bin/python3.11)\n",
            "\n",
            "Thread 9001 (active): \"MainThread\"\n",
            "    all_gather_object (torch/distributed/distributed_c10d.py:2410)\n",
            "    sync_metrics (myproj/eval.py:77)\n",
            "    run_eval (myproj/loop.py:140)\n",
            "$ py-spy dump --pid 9002\n",
            "Process 9002: python run.py\n",
            "Thread 9002 (active): \"MainThread\"\n",
            "    forward (myproj/model.py:31)\n",
            "    train_step (myproj/loop.py:96)\n",
        ),
    );
    assert_eq!(apart.verdict, Verdict::UnknownFailure);
    assert_eq!(top(&apart), ("collective_mismatch".to_string(), Some(8)));
    let f = &apart.findings[0];
    assert!(
        f.fix
            .en
            .starts_with("Make every rank call the same collectives"),
        "{}",
        f.fix.en
    );
    assert!(f.fix.en.contains("all_gather_object ("), "{}", f.fix.en);

    // One rank's faulthandler dump, prefixed by the launcher, inside the collective.
    let one = diagnose_text(
        "rank0.log",
        concat!(
            "[rank0]: loading shards done\n",
            "[rank0]:Current thread 0x00007f3a1c (most recent call first):\n",
            "[rank0]:  File \"/env/torch/distributed/distributed_c10d.py\", line 1999 in all_reduce\n",
            "[rank0]:  File \"/srv/job/main.py\", line 12 in <module>\n",
        ),
    );
    assert_eq!(one.verdict, Verdict::UnknownFailure);
    let cats: Vec<String> = one
        .findings
        .iter()
        .map(|f| f.category.to_string())
        .collect();
    assert_eq!(cats[..2], ["nccl_network", "nccl_timeout"], "{cats:?}");
    assert!(one.findings[0].fix.en.contains("NCCL_P2P_DISABLE=1"));

    // gdb's backtrace of NCCL's proxy thread in its socket transport.
    let gdb = diagnose_text(
        "bt.txt",
        concat!(
            "Thread 9 (Thread 0x7fa0 (LWP 5120)):\n",
            "#0  0x00007fa1 in poll () from /lib64/libc.so.6\n",
            "#1  0x00007fa2 in socketPollConnect () from /opt/nccl/lib/libnccl.so.2\n",
            "#2  0x00007fa3 in start_thread () from /lib64/libpthread.so.0\n",
        ),
    );
    assert_eq!(top(&gdb), ("nccl_network".to_string(), Some(3)));
}

#[test]
fn a_stack_dump_after_a_clean_end_or_a_traceback_is_no_hang() {
    let done = diagnose_text(
        "train.log",
        concat!(
            "step 10/10 loss 0.2\n",
            "Training completed.\n",
            "Thread 77 (idle): \"MainThread\"\n",
            "    wait (threading.py:320)\n",
        ),
    );
    assert_eq!(done.verdict, Verdict::NoFailure, "{:?}", done.findings);
    // A traceback's frames are not a dump: the exception decides, as always.
    let tb = diagnose_text(
        "train.log",
        concat!(
            "Traceback (most recent call last):\n",
            "  File \"/srv/job/main.py\", line 12, in <module>\n",
            "    dist.all_reduce(t)\n",
            "KeyError: 'rank'\n",
        ),
    );
    assert!(
        tb.findings
            .iter()
            .all(|f| f.category.to_string() != "collective_mismatch"),
        "{:?}",
        tb.findings
    );
}
