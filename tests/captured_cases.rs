//! Behaviour pinned on the cases captured for this project (fixtures/captured), beyond the
//! top category that tests/fixtures.rs checks.

use trainwreck::model::Category;
use trainwreck::rules::KnowledgeBase;

fn diagnose(case: &str) -> trainwreck::report::Report {
    let kb = KnowledgeBase::load(&[]).unwrap();
    let path = format!(
        "{}/fixtures/captured/{case}/run",
        env!("CARGO_MANIFEST_DIR")
    );
    trainwreck::diagnose(&kb, &[path], 2)
}

#[test]
fn bare_sigkill_of_a_worker_is_not_a_confirmed_oom() {
    let r = diagnose("25_dataloader_worker_sigkill_external");
    let top = r.findings.first().expect("something is reported");
    assert!(
        top.strength < 0.6,
        "{} at strength {}",
        top.category,
        top.strength
    );
    assert!(
        r.findings.iter().any(|f| f.next_time.is_some()),
        "says what to capture next time"
    );
}

#[test]
fn gpu_oom_with_another_process_holding_the_card_points_at_that_process() {
    let r = diagnose("24_cuda_oom_other_process");
    let top = r.top().unwrap();
    assert_eq!(top.category, Category::GpuOom);
    assert!(
        top.fix.en.contains("outside this process"),
        "{}",
        top.fix.en
    );
    assert!(
        !top.fix.en.contains("micro-batch (or sequence"),
        "{}",
        top.fix.en
    );
}

/// `trainwreck run`'s own folder of a real SIGBUS in a 64 MiB /dev/shm: the peak it sampled
/// (63.3 MiB) reached the mount's size, so the fix says the real need is unknown and sizes from
/// what the host can spare, instead of "peak plus margin" from a peak that was the ceiling.
#[test]
fn a_wrapped_run_whose_shm_peak_hit_the_mount_size_is_sized_from_the_host() {
    let r = diagnose("27_run_shm_sigbus_samples");
    let top = r.top().unwrap();
    assert_eq!(top.category, Category::ShmExhausted);
    assert!(top.fix.en.contains("--shm-size"), "{}", top.fix.en);
    assert!(
        top.fix.en.contains("63.3 MiB"),
        "the sampled peak: {}",
        top.fix.en
    );
    assert!(
        top.fix.en.contains("ceiling"),
        "the peak was the limit: {}",
        top.fix.en
    );
    let peak = r
        .facts
        .iter()
        .find(|f| f.name == "shm.peak_bytes")
        .expect("peaks.txt read");
    assert_eq!(peak.value.as_i64(), Some(66_342_912));
}

/// A real training loop that keeps every step's logits on the GPU (on one H200, wrapped by
/// `trainwreck run`, nvidia-smi polled beside it): GPU memory climbs all run long until CUDA
/// runs out, so the fix leads with what is kept across steps, citing the samples, not with a
/// smaller micro-batch. The same OOM line without the samples gets the numbers' plan, and the
/// same program's healthy run (no logits kept) is no failure.
#[test]
fn a_gpu_oom_after_memory_climbed_all_run_says_find_what_is_kept_across_steps() {
    let r = diagnose("28_cuda_oom_logits_leak_polled");
    let top = r.top().unwrap();
    assert_eq!(top.category, Category::GpuOom);
    assert!(
        top.fix
            .en
            .starts_with("Find what the training loop keeps from one step to the next"),
        "{}",
        top.fix.en
    );
    assert!(
        !top.fix.en.contains("micro-batch (or sequence"),
        "{}",
        top.fix.en
    );
    assert!(
        r.facts
            .iter()
            .any(|f| f.name == "gpu.0.memory_climb_from_bytes" && f.path == "samples.csv"),
        "the wrapper's samples show the climb too"
    );

    let d = tempfile::tempdir().unwrap();
    let src = format!(
        "{}/fixtures/captured/28_cuda_oom_logits_leak_polled/run/console.log",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::copy(&src, d.path().join("console.log")).unwrap();
    let kb = KnowledgeBase::load(&[]).unwrap();
    let bare = trainwreck::diagnose(&kb, &[d.path().display().to_string()], 1);
    let top = bare.top().unwrap();
    assert_eq!(top.category, Category::GpuOom);
    assert!(
        top.fix.en.contains("micro-batch (or sequence"),
        "{}",
        top.fix.en
    );

    let good = diagnose("29_run_healthy_gpt");
    assert_eq!(good.verdict, trainwreck::model::Verdict::NoFailure);
    assert!(
        !good
            .facts
            .iter()
            .any(|f| f.name.ends_with("memory_climb_from_bytes")),
        "a run that loads and then trains at a flat level does not climb"
    );
}
