//! What users paste is messy: excerpts cut mid-line, ranks interleaved on one line, tqdm bars
//! glued to errors with `\r`, rich tracebacks with box-drawing characters, localized dates and
//! non-English text around the messages, lines hard-wrapped by a terminal. Each test writes a
//! log shaped that way to a temp file and runs the whole pipeline on it.

use std::io::Write;
use trainwreck::model::{Category, Verdict};
use trainwreck::rules::KnowledgeBase;

fn diagnose_text(name: &str, text: &str) -> trainwreck::report::Report {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let kb = KnowledgeBase::load(&[]).unwrap();
    trainwreck::diagnose(&kb, &[path.display().to_string()], 1)
}

fn top_category(r: &trainwreck::report::Report) -> String {
    r.top()
        .map(|f| f.category.to_string())
        .unwrap_or_else(|| r.verdict.to_string())
}

#[test]
fn excerpt_cut_mid_line_still_diagnoses() {
    let text = "ry of which 289.12 MiB is free. Including non-PyTorch memory\n\
                torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capa";
    let r = diagnose_text("paste.txt", text);
    assert_eq!(top_category(&r), "gpu_oom");
}

#[test]
fn ranks_interleaved_on_one_line() {
    let text = "[rank1]:[E1129 19:00:04.020 ProcessGroupNCCL.cpp:689] [Rank 1] Watchdog caught collective [rank0]: Traceback (most recent call last):\n\
                [rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. [rank1]: operation timeout: WorkNCCL(SeqNum=26, OpType=ALLREDUCE) ran for 30049 milliseconds\n";
    let r = diagnose_text("console.log", text);
    assert_eq!(top_category(&r), "gpu_oom");
}

#[test]
fn tqdm_bar_glued_to_error_with_carriage_return() {
    let text = " 45%|████▌     | 9/20 [00:03<00:04,  2.61it/s]\r 50%|█████     | 10/20 [00:03<00:03,  2.70it/s]\rTraceback (most recent call last):\r\n\
                  File \"train.py\", line 10, in <module>\n\
                 50%|█████     | 10/20 [00:04<00:03,  2.70it/s]\rRuntimeError: CUDA error: an illegal memory access was encountered\n";
    let r = diagnose_text("console.log", text);
    assert_eq!(top_category(&r), "cuda_illegal_access");
    let ev = &r.top().unwrap().evidence[0].text;
    assert!(
        !ev.contains("it/s"),
        "evidence should be the error segment, got {ev:?}"
    );
}

#[test]
fn rich_traceback_with_box_drawing() {
    let text = "╭───────────────────── Traceback (most recent call last) ─────────────────────╮\n\
                │ /workspace/train.py:83 in __getitem__                                        │\n\
                │ ❱  83 │   label = rec[\"label_id\"]                                             │\n\
                ╰──────────────────────────────────────────────────────────────────────────────╯\n\
                KeyError: 'label_id'\n";
    let r = diagnose_text("console.log", text);
    assert_eq!(top_category(&r), "python_exception");
}

#[test]
fn localized_months_and_cjk_text_around_messages() {
    let text = "12月 17 10:04:41 gpu-07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, GPU has fallen off the bus.\n\
                训练失败：[rank3]: RuntimeError: NCCL communicator was aborted on rank 3. 원인: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, Timeout(ms)=600000)\n\
                에러 발생 [rank0]: torch.distributed.DistBackendError: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE)\n";
    let r = diagnose_text("paste.txt", text);
    let top = r.top().unwrap();
    assert_eq!(top.category, Category::GpuHardwareXid);
    assert!(top.fix.en.contains("Xid 79"), "{}", top.fix.en);
    // The timeouts on other ranks are consequences of the hardware fault.
    assert!(
        r.findings
            .iter()
            .filter(|f| f.category == Category::NcclTimeout)
            .all(|f| f.symptom_of.as_deref() == Some(top.rule.as_str()))
    );
}

#[test]
fn line_hard_wrapped_by_a_terminal() {
    // A terminal 80 columns wide broke the message; the signature's literal survives on the
    // first physical line.
    let text = "[rank0]: Exception: Current loss scale already at minimum - cannot decrease sca\n\
                le anymore. Exiting run.\n";
    let r = diagnose_text("console.log", text);
    assert_eq!(top_category(&r), "loss_scale_overflow");
}

#[test]
fn advice_lines_alone_are_not_a_diagnosis() {
    let text = "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n\
                For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n\
                Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n";
    let r = diagnose_text("console.log", text);
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    assert_eq!(r.verdict, Verdict::NoFailure);
}

#[test]
fn bare_killed_is_not_proof_of_oom() {
    let r = diagnose_text("slurm-123.out", "step 100 loss 2.31\nKilled\n");
    let f = r
        .findings
        .iter()
        .find(|f| f.category == Category::HostOom)
        .unwrap();
    assert!(f.strength < 0.3, "a bare Killed must stay a hypothesis");
    assert_ne!(r.verdict, Verdict::Diagnosed);
    assert!(
        f.next_time.is_some(),
        "thin evidence must say what to collect"
    );
    assert_ne!(r.verdict, Verdict::Diagnosed);
}

#[test]
fn semlock_enospc_is_shm_not_disk() {
    let text = "    sl = self._semlock = _multiprocessing.SemLock(\nOSError: [Errno 28] No space left on device\n";
    let r = diagnose_text("console.log", text);
    assert_eq!(top_category(&r), "shm_exhausted");
}

#[test]
fn watchdog_timeout_alone_says_what_to_collect() {
    let text = "[rank1]:[E1129 19:00:04.020587669 ProcessGroupNCCL.cpp:689] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=26, OpType=ALLREDUCE, NumelIn=84618, NumelOut=84618, Timeout(ms)=30000) ran for 30049 milliseconds before timing out.\n";
    let r = diagnose_text("rank1.log", text);
    let top = r.top().unwrap();
    assert_eq!(top.category, Category::NcclTimeout);
    assert!(
        top.next_time
            .as_ref()
            .map(|t| t.en.as_str())
            .unwrap_or("")
            .contains("TORCH_NCCL_DUMP_ON_TIMEOUT")
    );
}

#[test]
fn nan_loss_in_a_run_that_exited_zero_is_a_failure() {
    let text = "{'loss': 'nan', 'grad_norm': 'nan', 'learning_rate': '333.3', 'epoch': '0.0048'}\n\
                {'train_runtime': '2.192', 'train_loss': 'nan', 'epoch': '0.0048'}\n";
    let r = diagnose_text("console.log", text);
    assert_eq!(r.verdict, Verdict::Diagnosed);
    assert_eq!(top_category(&r), "nan_loss");
}

/// A line a terminal wrapped is read joined; a signature that needs a line before it
/// (`preceded_by`) looks back from the joined line's first row, over the lines before it, as
/// for any line. TensorFlow's second refused pool allocation is known only after the first.
#[test]
fn a_wrapped_line_looks_back_over_the_lines_before_its_first_row() {
    // (A terminal 120 columns wide: no line of the paste is longer.)
    let first = "E0304 cuda_driver.cc:806] failed to allocate 10.34G (11101225472 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY";
    let second = "2021-03-04 09:12:40.551288: E tensorflow/stream_executor/cuda/cuda_driver.cc:806] failed to allocate 9.30G (9991102924 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory";
    let wrapped: Vec<String> = second
        .as_bytes()
        .chunks(120)
        .map(|c| String::from_utf8(c.to_vec()).unwrap())
        .collect();
    assert!(wrapped.len() > 1 && first.len() < 120);
    let r = diagnose_text("run.log", &format!("{first}\n{}\n", wrapped.join("\n")));
    let top = r.top().expect("a finding");
    assert_eq!(top.rule, "framework-pool-allocation-refused", "{top:?}");
    // One refusal alone, wrapped or not, is TensorFlow's first try: no such finding.
    let r = diagnose_text("run.log", &format!("{}\n", wrapped.join("\n")));
    assert!(
        r.findings
            .iter()
            .all(|f| f.rule != "framework-pool-allocation-refused"),
        "{:?}",
        r.findings.iter().map(|f| &f.rule).collect::<Vec<_>>()
    );
}
