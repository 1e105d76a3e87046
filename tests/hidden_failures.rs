//! Failures that hide: a run can die or go wrong with no error line. HF Trainer's NaN filter
//! logs a loss of exactly 0 beside a NaN grad norm and exits 0; a worker ends by a SIGTERM
//! nothing in the run sent; a Flight Recorder dump is already there, so the report must not
//! advise turning it on. (Collective mismatches from watchdog lines alone: tests/ranks.rs.)

use std::path::Path;
use trainwreck::model::{Category, Verdict};
use trainwreck::rules::KnowledgeBase;

fn diagnose(dir: &Path) -> trainwreck::report::Report {
    let kb = KnowledgeBase::load(&[]).unwrap();
    trainwreck::diagnose(&kb, &[dir.display().to_string()], 1)
}

#[test]
fn hf_trainer_hiding_nan_losses_as_zero_is_nan_loss_even_at_exit_0() {
    let d = tempfile::tempdir().unwrap();
    let mut log = String::new();
    for i in 1..=6 {
        log.push_str(&format!(
            " {i}0%|██        | {i}0/60 [00:0{i}<00:40, 1.2it/s]{{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 1.9e-05, 'epoch': 0.{i}}}\n"
        ));
    }
    log.push_str("{'train_runtime': '61.2', 'train_samples_per_second': '15.7', 'train_steps_per_second': '0.98', 'train_loss': '0.0', 'epoch': '1.0'}\n");
    std::fs::write(d.path().join("train.log"), log).unwrap();
    std::fs::write(d.path().join("exit_status.txt"), "exit_code: 0\n").unwrap();
    let r = diagnose(d.path());
    assert_eq!(r.verdict, Verdict::Diagnosed);
    assert_eq!(r.top().unwrap().category, Category::NanLoss);
    // A NaN grad norm beside a real loss is the AMP scaler skipping a step: healthy.
    std::fs::write(
        d.path().join("train.log"),
        "{'loss': 2.3184, 'grad_norm': nan, 'learning_rate': 2e-05, 'epoch': 0.01}\n{'loss': 2.2, 'grad_norm': 1.4, 'learning_rate': 2e-05, 'epoch': 0.02}\n{'train_runtime': '61.2', 'train_loss': '2.25', 'epoch': '1.0'}\n",
    )
    .unwrap();
    assert_eq!(diagnose(d.path()).verdict, Verdict::NoFailure);
}

#[test]
fn a_sigterm_nothing_in_the_run_sent_is_terminated_from_outside() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("console.log"),
        "2026-11-29 10:00:01,000 [rank0] INFO train: step 400 loss 1.2\n\
         E1129 10:00:05.100000 4999 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: -15) local_rank: 0 (pid: 5000) of binary: /usr/bin/python3\n",
    )
    .unwrap();
    let r = diagnose(d.path());
    let top = r.top().expect("a cause");
    assert_eq!(top.rule, "terminated-from-outside");
    assert_eq!(top.category, Category::PreemptedOrTimeLimit);
    assert_eq!(top.origin.rank, Some(0));
    assert_eq!(top.origin.pid, Some(5000));
    assert!(top.fix.en.contains("sacct") && top.fix.en.contains("kubectl describe pod"));
}

#[test]
fn a_sigterm_the_launcher_sent_to_survivors_is_not_from_outside() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("console.log"),
        "W1129 10:00:05.000000 4999 torch/distributed/elastic/multiprocessing/api.py:900] Sending process 5001 closing signal SIGTERM\n\
         E1129 10:00:05.100000 4999 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: 1) local_rank: 0 (pid: 5000) of binary: /usr/bin/python3\n\
         Failures:\n[1]:\n  time      : 2026-11-29_10:00:05\n  host      : node7\n  rank      : 1 (local_rank: 1)\n  exitcode  : -15 (pid: 5001)\n  error_file: <N/A>\n  traceback : Signal 15 (SIGTERM) received by PID 5001\n",
    )
    .unwrap();
    let r = diagnose(d.path());
    assert!(
        r.findings
            .iter()
            .all(|f| f.rule != "terminated-from-outside"),
        "{:?}",
        r.findings
    );
}

#[test]
fn a_flight_recorder_already_in_the_folder_is_not_advised_again() {
    let case = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/corpus/04_nccl_collective_timeout/run");
    let r = diagnose(&case);
    assert!(
        r.inputs
            .iter()
            .any(|i| i.kind.as_str() == "flight-recorder")
    );
    for f in &r.findings {
        assert!(
            !f.next_time
                .as_ref()
                .map(|t| t.en.as_str())
                .unwrap_or("")
                .contains("TORCH_NCCL_DUMP_ON_TIMEOUT"),
            "{}: {:?}",
            f.rule,
            f.next_time
        );
    }
    // Without the dumps, the same watchdog lines do get the advice.
    let t = tempfile::tempdir().unwrap();
    std::fs::copy(case.join("console.log"), t.path().join("console.log")).unwrap();
    let r = diagnose(t.path());
    assert!(
        r.findings.iter().any(|f| f
            .next_time
            .as_ref()
            .map(|t| t.en.as_str())
            .unwrap_or("")
            .contains("TORCH_NCCL_DUMP_ON_TIMEOUT")),
        "{:?}",
        r.findings
            .iter()
            .map(|f| (&f.rule, &f.next_time))
            .collect::<Vec<_>>()
    );
}

/// nvidia-smi's table beside a CUDA error with no ECC words of its own: a non-zero
/// `Volatile Uncorr. ECC` count on a card is the cause; all zeros are not.
fn smi_table(uncorr: u32) -> String {
    format!(
        "$ nvidia-smi\n\
+-----------------------------------------------------------------------------+\n\
| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2     |\n\
|-------------------------------+----------------------+----------------------+\n\
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n\
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n\
|===============================+======================+======================|\n\
|   0  Tesla T4            Off  | 00000000:00:1E.0 Off |                  {uncorr:>3} |\n\
| N/A   41C    P0    27W /  70W |      0MiB / 15360MiB |      0%      Default |\n\
+-------------------------------+----------------------+----------------------+\n"
    )
}

#[test]
fn an_uncorrectable_ecc_count_in_an_attached_nvidia_smi_table_explains_a_cuda_error() {
    let d = tempfile::tempdir().unwrap();
    let log = "Traceback (most recent call last):\n  File \"/srv/cls/fit.py\", line 40, in <module>\n    net = net.cuda()\nRuntimeError: CUDA error: Cannot allocate memory\n";
    std::fs::write(d.path().join("job.log"), log).unwrap();
    std::fs::write(d.path().join("nvidia-smi.txt"), smi_table(3)).unwrap();
    let r = diagnose(d.path());
    assert_eq!(
        r.top().unwrap().category,
        Category::EccError,
        "{:?}",
        r.top()
    );
    // With no uncorrectable count the table says nothing of ECC: whatever the run is read as
    // (an unknown failure whose candidates the error's tokens name), it is not that.
    std::fs::write(d.path().join("nvidia-smi.txt"), smi_table(0)).unwrap();
    let r = diagnose(d.path());
    assert!(
        r.findings.iter().all(|f| f.category != Category::EccError),
        "{:?}",
        r.findings
    );
}
