//! Tracebacks understood: when no specific rule explains a failure, the exception and the
//! innermost frames of its traceback pick the category, weaker than a rule and saying why.
//! Each case is a traceback in the shape Python prints it (frames of the user's code, then of
//! the libraries), with messages no rule matches.

use trainwreck::model::{Category, Verdict};
use trainwreck::rules::KnowledgeBase;

fn top_of(text: &str) -> trainwreck::correlate::Finding {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("train.log"), text).unwrap();
    let kb = KnowledgeBase::load(&[]).unwrap();
    let r = trainwreck::diagnose(&kb, &[d.path().display().to_string()], 1);
    assert_eq!(r.verdict, Verdict::Diagnosed, "{text}");
    r.findings.into_iter().next().unwrap()
}

fn tb(frames: &[(&str, u32, &str)], exc: &str) -> String {
    let mut s = String::from("step 41 loss 1.9\nTraceback (most recent call last):\n");
    for (path, line, func) in frames {
        s.push_str(&format!(
            "  File \"{path}\", line {line}, in {func}\n    pass\n"
        ));
    }
    s.push_str(exc);
    s.push('\n');
    s
}

const SITE: &str = "/opt/conda/envs/ft/lib/python3.10/site-packages";

#[test]
fn a_missing_dataset_file_is_config() {
    let f = top_of(&tb(
        &[
            ("/work/ft/train.py", 88, "main"),
            (&format!("{SITE}/datasets/load.py"), 1785, "load_dataset"),
            (
                &format!("{SITE}/datasets/data_files.py"),
                410,
                "resolve_pattern",
            ),
        ],
        "datasets.exceptions.DataFilesNotFoundError: No (supported) data files found in /data/sft_zh",
    ));
    assert_eq!(f.category, Category::ConfigError, "{f:?}");
    assert!(f.score[0].what.contains("while loading"), "{:?}", f.score);
}

#[test]
fn an_error_inside_checkpoint_loading_is_checkpoint_error() {
    let f = top_of(&tb(
        &[
            ("/work/ft/train.py", 120, "resume"),
            (
                &format!("{SITE}/torch/nn/modules/module.py"),
                2153,
                "load_state_dict",
            ),
            (&format!("{SITE}/torch/nn/modules/module.py"), 2141, "load"),
            ("/work/ft/model.py", 61, "_load_from_state_dict"),
        ],
        "KeyError: 'model.layers.31.mlp.up_proj.weight'",
    ));
    assert_eq!(f.category, Category::CheckpointError, "{f:?}");
    assert!(f.fix.en.contains("torch.load"), "{}", f.fix.en);
}

#[test]
fn errno_28_is_the_disk_unless_shared_memory_is_named() {
    let disk = top_of(&tb(
        &[
            ("/work/ft/export.py", 30, "dump"),
            ("/work/ft/export.py", 12, "write_rows"),
        ],
        "OSError: [Errno 28] writing rows to /scratch/out/rows.parquet",
    ));
    assert_eq!(disk.category, Category::DiskFull, "{disk:?}");
    let shm = top_of(&tb(
        &[
            ("/work/ft/cache.py", 51, "put"),
            (
                "/usr/lib/python3.10/multiprocessing/shared_memory.py",
                104,
                "__init__",
            ),
        ],
        "OSError: [Errno 28] while growing the segment at /dev/shm/psm_3f2a",
    ));
    assert_eq!(shm.category, Category::ShmExhausted, "{shm:?}");
}

#[test]
fn an_exception_in_user_code_or_in_a_library_says_where() {
    let user = top_of(&tb(
        &[
            ("/work/ft/train.py", 88, "main"),
            ("/work/ft/collate.py", 17, "pad"),
        ],
        "mypkg.PaddingMismatchError: sequence 3 is longer than max_len",
    ));
    assert_eq!(user.category, Category::PythonException, "{user:?}");
    assert!(
        user.score[0].what.contains("ft/collate.py:17 in pad"),
        "{:?}",
        user.score
    );
    assert!(user.strength < 0.5);
    let lib = top_of(&tb(
        &[
            (
                &format!("{SITE}/accelerate/accelerator.py"),
                2100,
                "prepare",
            ),
            (&format!("{SITE}/accelerate/utils/other.py"), 300, "check"),
        ],
        "accelerate.utils.SomeInternalError: unexpected state 7",
    ));
    assert_eq!(lib.category, Category::Other, "{lib:?}");
    assert!(lib.score[0].what.contains("inside a library"));
}

#[test]
fn a_specific_rule_wins_over_the_traceback() {
    // CUDA OOM has its own rule; the traceback reading must not replace it.
    let f = top_of(&tb(
        &[("/work/ft/train.py", 88, "main")],
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.11 GiB of which 1.02 GiB is free.",
    ));
    assert_eq!(f.category, Category::GpuOom);
    assert_ne!(f.rule, "traceback-classified");
}

/// A library's own set-up code refusing the configuration (DeepSpeed's `_configure_optimizer`,
/// a config class's `__post_init__`) is config_error, and the fix names both ways out: the
/// setting, or the release the configuration was written for. The same code raising a
/// `TypeError` is an API clash, not a refusal.
#[test]
fn a_library_refusing_the_configuration_in_its_set_up_code_is_config() {
    let refused = top_of(&tb(
        &[
            ("/work/ft/train.py", 88, "main"),
            (
                &format!("{SITE}/deepspeed/runtime/engine.py"),
                1204,
                "_configure_optimizer",
            ),
        ],
        "deepspeed.runtime.zero.utils.ZeRORuntimeException: offload needs the optimizer from the config",
    ));
    assert_eq!(refused.category, Category::ConfigError, "{refused:?}");
    assert!(
        refused.fix.en.contains("pin `deepspeed`"),
        "{}",
        refused.fix.en
    );
    let post_init = top_of(&tb(
        &[
            ("/work/ft/train.py", 12, "<module>"),
            (
                &format!("{SITE}/mytrainer/training_args.py"),
                310,
                "__post_init__",
            ),
        ],
        "ValueError: eval_steps must be set when evaluation is on",
    ));
    assert_eq!(post_init.category, Category::ConfigError, "{post_init:?}");
    let clash = top_of(&tb(
        &[
            ("/work/ft/train.py", 88, "main"),
            (
                &format!("{SITE}/deepspeed/runtime/engine.py"),
                1204,
                "_configure_optimizer",
            ),
        ],
        "TypeError: __init__() got an unexpected keyword argument 'fused'",
    ));
    assert_ne!(clash.category, Category::ConfigError, "{clash:?}");
    // The user's own `configure()` is not a library's check.
    let own = top_of(&tb(
        &[("/work/ft/train.py", 88, "configure_model")],
        "ValueError: unknown head type 'mlp3'",
    ));
    assert_ne!(own.category, Category::ConfigError, "{own:?}");
    assert!(!own.fix.en.contains("pin `"), "{}", own.fix.en);
}

fn diagnose_log(text: &str) -> trainwreck::report::Report {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("train.log"), text).unwrap();
    let kb = KnowledgeBase::load(&[]).unwrap();
    trainwreck::diagnose(&kb, &[d.path().display().to_string()], 1)
}

/// An exception Python printed under `Exception ignored in: …` (raised in a `__del__` or an
/// exit callback, reported and ignored) after the run finished is not an uncaught exception.
#[test]
fn a_traceback_python_ignored_at_exit_is_no_failure() {
    for header in [
        "Exception ignored in: <function Prefetcher.__del__ at 0x7fe1c2a0b9d0>",
        "Exception ignored in sys.unraisablehook: <built-in function unraisablehook>",
        "[rank0]: Exception ignored in atexit callback: <function shutdown_workers at 0x7f00aa11bb80>",
    ] {
        let text = format!(
            "step 300/300 loss 0.412\nsaved checkpoint to out/step_300\nTraining finished.\n{header}\n\
             Traceback (most recent call last):\n  File \"/usr/lib/python3.11/weakref.py\", line 666, in _exitfunc\n    f()\n\
             \x20 File \"/srv/job/prefetch.py\", line 52, in close\n    self.pool.join()\n\
             AttributeError: 'NoneType' object has no attribute 'join'\n"
        );
        let r = diagnose_log(&text);
        assert_eq!(r.verdict, Verdict::NoFailure, "{header}: {:?}", r.findings);
        assert!(
            r.findings
                .iter()
                .all(|f| f.strength < trainwreck::correlate::RULED_OUT_BELOW),
            "{header}"
        );
    }
}

/// The header covers only its own report: an uncaught traceback after it still ends the run.
#[test]
fn an_uncaught_traceback_after_an_ignored_one_still_counts() {
    let text = "step 12 loss 2.2\n\
        Exception ignored in: <function Loader.__del__ at 0x7fe1c2a0b9d0>\n\
        Traceback (most recent call last):\n  File \"/srv/job/loader.py\", line 80, in __del__\n    self.close()\n\
        AttributeError: 'Loader' object has no attribute 'fh'\n\
        step 13 loss 2.1\nstep 14 loss 2.1\nstep 15 loss 2.0\nstep 16 loss 2.0\nstep 17 loss 2.0\n\
        Traceback (most recent call last):\n  File \"/srv/job/train.py\", line 140, in <module>\n    batch = collate(rows)\n\
        KeyError: 'pixel_values'\n";
    let r = diagnose_log(text);
    assert_eq!(r.verdict, Verdict::Diagnosed, "{:?}", r.findings);
    let top = &r.findings[0];
    assert_eq!(top.category, Category::PythonException);
    assert!(
        top.evidence.iter().any(|e| e.text.contains("pixel_values")),
        "{:?}",
        top.evidence
    );
    assert!(
        top.evidence.iter().all(|e| !e.text.contains("'fh'")),
        "{:?}",
        top.evidence
    );
}
