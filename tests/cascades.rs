//! Causes before their cascades: a rank's own failure outranks what its death makes its peers
//! print, a full disk outranks the truncated checkpoint the next start trips on, and a rule's
//! action class is its own where the category's default would send CI the wrong way.

use std::path::Path;
use trainwreck::model::{Action, Category};
use trainwreck::rules::KnowledgeBase;

fn diagnose(dir: &Path) -> trainwreck::report::Report {
    let kb = KnowledgeBase::load(&[]).unwrap();
    trainwreck::diagnose(&kb, &[dir.display().to_string()], 1)
}

#[test]
fn a_cuda_oom_on_one_rank_outranks_the_remote_errors_it_causes_on_the_others() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("rank1.log"),
        "[rank1]: Traceback (most recent call last):\n[rank1]:   File \"/work/train.py\", line 88, in <module>\n[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 1 has a total capacity of 79.19 GiB of which 1.25 GiB is free. Including non-PyTorch memory, this process has 77.93 GiB memory in use.\n",
    )
    .unwrap();
    std::fs::write(
        d.path().join("rank0.log"),
        "[rank0]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3356, remote process exited or there was a network error, NCCL version 2.28.9\n[rank0]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.0.7]:46511\n",
    )
    .unwrap();
    let r = diagnose(d.path());
    let top = r.top().unwrap();
    assert_eq!(top.category, Category::GpuOom);
    assert_eq!(top.origin.rank, Some(1));
    let net = r
        .findings
        .iter()
        .find(|f| f.category == Category::NcclNetwork)
        .expect("the peer's error is kept, as a symptom");
    assert_eq!(net.symptom_of.as_deref(), Some(top.rule.as_str()));
    // Alone, the same peer error is a network failure of its own.
    std::fs::remove_file(d.path().join("rank1.log")).unwrap();
    let r = diagnose(d.path());
    assert_eq!(r.top().unwrap().category, Category::NcclNetwork);
    assert_eq!(r.top().unwrap().symptom_of, None);
}

#[test]
fn a_full_disk_outranks_the_truncated_checkpoint_found_on_the_next_start() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("attempt1.log"),
        "[rank0]: RuntimeError: [enforce fail at inline_container.cc:603] . PytorchStreamWriter failed writing file data/12: file write failed\n",
    )
    .unwrap();
    std::fs::write(
        d.path().join("attempt2.log"),
        "[rank0]: RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory\n",
    )
    .unwrap();
    let r = diagnose(d.path());
    let top = r.top().unwrap();
    assert_eq!(top.category, Category::DiskFull, "{:?}", r.findings);
    let ck = r
        .findings
        .iter()
        .find(|f| f.category == Category::CheckpointError)
        .unwrap();
    assert_eq!(ck.symptom_of.as_deref(), Some(top.rule.as_str()));
}

#[test]
fn a_missing_socket_interface_is_fixed_in_the_config_not_by_retrying_elsewhere() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("nccl.log"),
        "node7:4242:4300 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to ens1f0\nnode7:4242:4300 [0] bootstrap.cc:77 NCCL WARN Bootstrap : no socket interface found\n",
    )
    .unwrap();
    let r = diagnose(d.path());
    let top = r.top().unwrap();
    assert_eq!(top.category, Category::NcclNetwork);
    assert_eq!(top.action, Action::FixConfig);
    assert_ne!(
        top.category.action(),
        Action::FixConfig,
        "the category's default differs"
    );
}

/// An abort whose `what()` is the communicator NCCL aborted on its own error is how the
/// process died of that error, not a native crash of its own (issue 27 item 3: causal order
/// from what each message means): the IB completion error is the cause. An abort whose
/// `what()` names another error stays a cause.
#[test]
fn an_abort_on_the_communicator_nccl_aborted_follows_the_nccl_failure() {
    let warn = "hostb:5120:5177 [1] transport/net_ib.cc:843 NCCL WARN NET/IB : Got completion from peer 10.9.0.4<41230> with error 12, opcode 0, len 0, vendor err 129\n";
    let abort = |what: &str| {
        format!(
            "{warn}terminate called after throwing an instance of 'std::runtime_error'\n  what():  {what}\nERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -6) local_rank: 1 (pid: 5120) of binary: /venv/bin/python3\n"
        )
    };
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("worker.log"),
        abort("NCCL communicator was aborted on rank 1.  Original reason for failure was: NCCL error: unhandled system error, NCCL version 2.10.3"),
    )
    .unwrap();
    let r = diagnose(d.path());
    assert_eq!(
        r.top().unwrap().category,
        Category::NcclNetwork,
        "{:?}",
        r.findings
    );
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("worker.log"),
        abort("basic_string::_M_construct null not valid"),
    )
    .unwrap();
    let r = diagnose(d.path());
    assert!(
        r.findings
            .iter()
            .any(|f| f.category == Category::SegfaultNative && f.symptom_of.is_none()),
        "{:?}",
        r.findings
    );
}
