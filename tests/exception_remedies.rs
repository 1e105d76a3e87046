//! Exceptions read for their remedy (issue 29): the first sentence of the top fix is the step
//! the exception's own words and frames name — the library and the release skew behind an API
//! error, the labels behind `Target N is out of bounds`, the device behind a two-device error
//! — not "fix the code at this line". Each case is a traceback in the shape Python prints it,
//! with our own paths and names; the fixed words of each message are Python's and PyTorch's.

mod labelled;
use labelled::first_sentence;

use trainwreck::model::{Category, Verdict};
use trainwreck::rules::KnowledgeBase;

fn top_of(text: &str) -> trainwreck::correlate::Finding {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("train.log"), text).unwrap();
    let kb = KnowledgeBase::load(&[]).unwrap();
    let r = trainwreck::diagnose(&kb, &[d.path().display().to_string()], 1);
    assert_eq!(r.verdict, Verdict::Diagnosed, "{text}");
    r.findings
        .into_iter()
        .find(|f| f.symptom_of.is_none())
        .unwrap()
}

fn tb(frames: &[(&str, u32, &str)], exc: &str) -> String {
    let mut s = String::from("step 12 loss 2.31\nTraceback (most recent call last):\n");
    for (path, line, func) in frames {
        s.push_str(&format!(
            "  File \"{path}\", line {line}, in {func}\n    pass\n"
        ));
    }
    s.push_str(exc);
    s.push('\n');
    s
}

const SITE: &str = "/srv/envs/lm/lib/python3.11/site-packages";

fn first(text: &str) -> (trainwreck::correlate::Finding, String) {
    let f = top_of(text);
    let s = first_sentence(&f.fix.en).to_string();
    (f, s)
}

#[test]
fn a_library_calling_older_model_code_says_pin_the_library() {
    let (f, s) = first(&tb(
        &[
            ("/work/sft/run.py", 40, "main"),
            (
                &format!("{SITE}/transformers/modeling_utils.py"),
                1990,
                "gradient_checkpointing_enable",
            ),
        ],
        "TypeError: OwlPreTrainedModel._set_gradient_checkpointing() got an unexpected keyword argument 'enable'",
    ));
    assert_eq!(f.category, Category::PythonException, "{f:?}");
    assert!(s.contains("pin transformers"), "{s}");
    assert!(s.contains("rejects `enable`"), "{s}");
    // The location follows the step, and the generic advice after it is labelled.
    assert!(f.fix.en.contains("In general:"), "{}", f.fix.en);
    assert!(f.fix.zh().is_some_and(|z| z.contains("transformers")));
}

#[test]
fn an_import_of_a_missing_name_names_the_package_and_its_version() {
    let (_, s) = first(&tb(
        &[("/work/gen/trainer.py", 9, "<module>")],
        "ImportError: cannot import name 'shard_helper' from 'fancylib.utils' (/srv/envs/lm/lib/python3.11/site-packages/fancylib/utils.py)",
    ));
    assert!(
        s.contains("install the fancylib version the code was written for"),
        "{s}"
    );
    assert!(s.contains("upgrade fancylib"), "{s}");
}

#[test]
fn an_unexpected_keyword_from_the_users_call_gives_both_directions() {
    // Nothing names the library: the sentence says "the library", and both remedies.
    let (_, s) = first(&tb(
        &[("/work/ft/args.py", 77, "<module>")],
        "TypeError: RunConfig.__init__() got an unexpected keyword argument 'warmup_style'",
    ));
    assert!(
        s.contains("library version the code was written for"),
        "{s}"
    );
    assert!(s.contains("upgrade") && s.contains("older release"), "{s}");
}

#[test]
fn an_ipython_traceback_without_frames_is_still_read() {
    let text = "TypeError                                 Traceback (most recent call last)\n\
                <ipython-input-3-aa> in <module>\n\
                ----> 1 cfg = RunConfig(warmup_style='linear')\n\
                \n\
                TypeError: __init__() got an unexpected keyword argument 'warmup_style'\n";
    let (f, s) = first(text);
    assert_eq!(f.category, Category::PythonException, "{f:?}");
    assert!(s.contains("different releases"), "{s}");
}

#[test]
fn a_label_outside_the_class_range_says_remap_or_class_count() {
    let (_, s) = first(&tb(
        &[
            ("/work/seg/train.py", 51, "step"),
            (
                &format!("{SITE}/torch/nn/functional.py"),
                3104,
                "cross_entropy",
            ),
        ],
        "IndexError: Target 255 is out of bounds.",
    ));
    assert!(s.contains("remap the labels"), "{s}");
    assert!(s.contains("num_labels"), "{s}");
}

#[test]
fn two_devices_split_cpu_from_two_gpus() {
    let cpu = first(&tb(
        &[("/work/nmt/masks.py", 20, "make_mask")],
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
    ))
    .1;
    assert!(cpu.contains("t.to(device)"), "{cpu}");
    let gpus = first(&tb(
        &[("/work/vlm/modeling_owl.py", 300, "forward")],
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cuda:0! (when checking argument for argument tensors in method wrapper_CUDA_cat)",
    ))
    .1;
    assert!(gpus.contains("CUDA_VISIBLE_DEVICES=0"), "{gpus}");
    assert!(gpus.contains("device of the layer"), "{gpus}");
}

#[test]
fn batch_size_mismatch_and_no_grad_and_internal_assert() {
    let bs = first(&tb(
        &[("/work/pc/train.py", 80, "step")],
        "ValueError: Expected input batch_size (12) to match target batch_size (4).",
    ))
    .1;
    assert!(
        bs.contains("drop_last=True") && bs.contains("12 vs 4"),
        "{bs}"
    );
    let grad = first(&tb(
        &[
            ("/work/lora/train.py", 99, "step"),
            (
                &format!("{SITE}/torch/autograd/__init__.py"),
                200,
                "backward",
            ),
        ],
        "RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn",
    ))
    .1;
    assert!(grad.contains("enable_input_require_grads"), "{grad}");
    let internal = first(&tb(
        &[("/work/mega/kernels/softmax.py", 36, "forward")],
        "RuntimeError: rows % block == 0INTERNAL ASSERT FAILED at \"/work/mega/kernels/softmax.h\":50, please report a bug to PyTorch.",
    ))
    .1;
    assert!(internal.contains("upstream fix"), "{internal}");
}

#[test]
fn a_registry_key_error_and_a_generated_syntax_error() {
    let key = first(&tb(
        &[
            ("/work/chat/load.py", 12, "load"),
            (
                &format!("{SITE}/transformers/models/auto/configuration_auto.py"),
                700,
                "__getitem__",
            ),
        ],
        "KeyError: 'owl3'",
    ))
    .1;
    assert!(
        key.contains("upgrade transformers in the environment"),
        "{key}"
    );
    let text = "Traceback (most recent call last):\n  File \"/work/ft/train.py\", line 3, in <module>\n    import fastlib\n  File \"/work/ft/fastlib_compiled_cache/Trainer.py\", line 88\n    def f(a, b\n           ^\nSyntaxError: invalid syntax\n";
    let syn = first(text).1;
    assert!(syn.contains("delete that cache folder"), "{syn}");
}

#[test]
fn an_error_inside_a_library_with_a_none_says_pin_it() {
    let (_, s) = first(&tb(
        &[
            (&format!("{SITE}/trainkit/models/load.py"), 10, "load"),
            (
                &format!("{SITE}/transformers/modeling_utils.py"),
                5000,
                "from_pretrained",
            ),
            (
                &format!("{SITE}/transformers/modeling_utils.py"),
                5800,
                "warmup",
            ),
        ],
        "TypeError: 'NoneType' object is not iterable",
    ));
    assert!(s.contains("pin transformers"), "{s}");
}

#[test]
fn a_broken_invariant_inside_a_library_says_update_or_pin_it() {
    // A bare assert and a state error raised by an installed engine's own innermost frames,
    // under the user's call: its release is the step, in the first sentence.
    let engine = |exc: &str| {
        first(&tb(
            &[
                ("/work/serve/run.py", 40, "main"),
                (
                    &format!("{SITE}/gengine/core/scheduler.py"),
                    310,
                    "schedule",
                ),
                (&format!("{SITE}/gengine/core/blocks.py"), 77, "allocate"),
            ],
            exc,
        ))
        .1
    };
    for exc in [
        "AssertionError",
        "RuntimeError: no block table for this request",
        "KeyError: 'req-17'",
        "NotImplementedError",
    ] {
        let s = engine(exc);
        assert!(
            s.starts_with("Update gengine to a release with the fix, or pin gengine"),
            "{exc}: {s}"
        );
    }
    // A value the library refuses points at what it was given, not at its release.
    let refused = engine("ValueError: block_size must be a power of two");
    assert!(!refused.contains("pin gengine"), "{refused}");
    // Raised in the user's own frame beneath the library: the user's line.
    let own = first(&tb(
        &[
            (
                &format!("{SITE}/gengine/core/scheduler.py"),
                310,
                "schedule",
            ),
            ("/work/serve/hooks.py", 12, "on_step"),
        ],
        "AssertionError",
    ))
    .1;
    assert!(!own.contains("pin gengine"), "{own}");
}

#[test]
fn a_message_without_a_named_remedy_keeps_the_location_fix() {
    let (_, s) = first(&tb(
        &[
            ("/work/ft/train.py", 88, "main"),
            ("/work/ft/collate.py", 17, "pad"),
        ],
        "mypkg.PaddingMismatchError: sequence 3 is longer than max_len",
    ));
    assert!(s.starts_with("Fix the PaddingMismatchError at"), "{s}");
}

#[test]
fn an_object_pickle_refuses_on_its_way_to_workers_says_run_in_one_process() {
    let (f, s) = first(&tb(
        &[
            ("/work/prep/build_data.py", 61, "tokenize_all"),
            (&format!("{SITE}/datasets/arrow_dataset.py"), 3010, "map"),
            (
                &format!("{SITE}/multiprocess/pool.py"),
                540,
                "_handle_tasks",
            ),
            (&format!("{SITE}/dill/_dill.py"), 388, "dump"),
        ],
        "TypeError: cannot pickle 'builtins.Tokenizer' object",
    ));
    assert_eq!(f.category, Category::PythonException, "{f:?}");
    assert!(s.starts_with("Run this step in one process"), "{s}");
    assert!(s.contains("num_proc=1"), "{s}");
    assert!(s.contains("`builtins.Tokenizer`"), "{s}");
    // The same refusal outside any worker hand-off (a plain `pickle.dump` of the model) is not
    // about processes.
    let (_, s) = first(&tb(
        &[("/work/prep/save.py", 12, "save_all")],
        "TypeError: cannot pickle 'builtins.Tokenizer' object",
    ));
    assert!(!s.contains("one process"), "{s}");
}

/// Another installed package passing an argument the library does not know: the library is
/// the older side (upgrade it); a DataLoader calling a collate function is never that side.
#[test]
fn an_argument_passed_from_another_package_says_upgrade_the_callee() {
    let (_, s) = first(&tb(
        &[
            ("/work/rl/serve.py", 12, "main"),
            (&format!("{SITE}/rlkit/server.py"), 88, "start"),
            (&format!("{SITE}/fastgen/entry.py"), 140, "__init__"),
        ],
        "TypeError: EngineConfig.__init__() got an unexpected keyword argument 'extension_cls'",
    ));
    assert!(s.starts_with("rlkit passes fastgen an argument"), "{s}");
    assert!(
        s.contains("upgrade fastgen to the release rlkit supports"),
        "{s}"
    );
    let (_, s) = first(&tb(
        &[
            ("/work/sft/train.py", 70, "main"),
            (
                &format!("{SITE}/torch/utils/data/_utils/fetch.py"),
                55,
                "fetch",
            ),
            (&format!("{SITE}/toktools/collate.py"), 31, "__call__"),
        ],
        "TypeError: WordTokenizer._pad() got an unexpected keyword argument 'padding_side'",
    ));
    assert!(!s.contains("torch passes"), "{s}");
    assert!(s.contains("pin toktools"), "{s}");
}

/// A private module a newer release removed: upgrade the package that imports it (named from
/// its frames), or pin the release that still has it.
#[test]
fn a_removed_private_module_names_its_importer() {
    let (_, s) = first(&tb(
        &[
            ("/work/ft/train.py", 3, "<module>"),
            (&format!("{SITE}/fastzero/runtime/utils.py"), 18, "<module>"),
        ],
        "ModuleNotFoundError: No module named 'torch._six'",
    ));
    assert!(
        s.starts_with("Upgrade fastzero to a release written for this torch"),
        "{s}"
    );
    assert!(s.contains("torch 1.13.1"), "{s}");
}

/// A bare assertion over configuration values is a configuration check: the fix names the
/// settings it compares.
#[test]
fn a_bare_assertion_over_settings_is_a_configuration_check() {
    let text = "Traceback (most recent call last):\n  File \"train.py\", line 150, in <module>\n    main(args)\n  File \"train.py\", line 70, in main\n    assert args.global_batch % args.num_gpus == 0\nAssertionError\n";
    let (f, s) = first(text);
    assert_eq!(f.category, Category::ConfigError, "{f:?}");
    // The traceback reader is the one reader of a divisibility check (stop 55 folded the rule
    // `assert-divisibility-between-settings` into it): the settings by their own names.
    assert!(
        s.starts_with("Set `global_batch` to a multiple of `num_gpus`"),
        "{s}"
    );
    // An assertion over data is not.
    let text = "Traceback (most recent call last):\n  File \"train.py\", line 70, in main\n    assert x.shape[0] > 0\nAssertionError\n";
    assert_ne!(first(text).0.category, Category::ConfigError);
}

/// A bare divisibility check between two plain names is a configuration check whatever the
/// names are called (the library's own attributes, no `args.`/`cfg.` in them): the fix names
/// both settings, a product's factors each by its own name. An assert that calls a function,
/// or one that compares the data, is not read so.
#[test]
fn a_bare_divisibility_check_between_any_two_names_names_both_settings() {
    let text = "Traceback (most recent call last):\n  File \"run.py\", line 40, in <module>\n    agent.learn(total_timesteps=50000)\n  File \"/opt/venv/lib/python3.8/site-packages/rlkit/ppo.py\", line 212, in learn\n    assert self.rollout_size % self.minibatches == 0\nAssertionError\n";
    let (f, s) = first(text);
    assert_eq!(f.category, Category::ConfigError, "{f:?}");
    assert!(
        s.starts_with("Set `rollout_size` to a multiple of `minibatches`"),
        "{s}"
    );
    let text = "Traceback (most recent call last):\n  File \"/opt/venv/lib/python3.8/site-packages/rlkit/a2c.py\", line 90, in setup\n    assert (self.n_envs * self.n_steps) % self.n_minibatch == 0\nAssertionError\n";
    let (f, s) = first(text);
    assert_eq!(f.category, Category::ConfigError, "{f:?}");
    assert!(
        s.starts_with("Set `n_envs * n_steps` to a multiple of `n_minibatch`"),
        "{s}"
    );
    for code in [
        "assert check_sizes(self.plan) % 2 == 0",
        "assert x.shape[0] % 2 == 0",
    ] {
        let text = format!(
            "Traceback (most recent call last):\n  File \"/srv/lab/prep.py\", line 12, in prep\n    {code}\nAssertionError\n"
        );
        assert_ne!(first(&text).0.category, Category::ConfigError, "{code}");
    }
}

/// torch's CPU bound check of an embedding lookup: an id past the table. The step is resizing
/// the table to the tokenizer (or matching the two), never "fix the code at this line"; the
/// same words from another exception class are not this check.
#[test]
fn an_id_past_the_embedding_table_says_resize_the_embeddings() {
    let frames = [
        ("/work/relx/train.py", 88, "train_epoch"),
        ("/work/relx/model.py", 31, "forward"),
        (
            &format!("{SITE}/torch/nn/modules/sparse.py") as &str,
            163,
            "forward",
        ),
        (&format!("{SITE}/torch/nn/functional.py"), 2264, "embedding"),
    ];
    let (f, s) = first(&tb(&frames, "IndexError: index out of range in self"));
    assert_eq!(f.category, Category::PythonException, "{f:?}");
    assert!(s.contains("resize_token_embeddings(len(tokenizer))"), "{s}");
    let (_, other) = first(&tb(&frames, "KeyError: 'index out of range in self'"));
    assert!(!other.contains("resize_token_embeddings"), "{other}");
}

/// A library saying where it raises that a feature is not there yet: upgrade that library.
/// An abstract method the user's subclass did not override says nothing of the sort.
#[test]
fn a_library_saying_not_yet_says_upgrade_it_and_an_abstract_method_does_not() {
    let frames = [
        ("/work/llm/train.py", 301, "save"),
        (
            &format!("{SITE}/torch/distributed/checkpoint/state_dict.py") as &str,
            540,
            "_verify_options",
        ),
    ];
    let (f, s) = first(&tb(
        &frames,
        "NotImplementedError: 3D sharded state_dict is not supported yet.",
    ));
    assert_eq!(f.category, Category::CheckpointError, "{f:?}");
    assert!(s.starts_with("Upgrade torch to a release"), "{s}");
    let abstract_frames = [
        ("/work/llm/model.py", 12, "run"),
        (
            &format!("{SITE}/torch/nn/modules/module.py") as &str,
            394,
            "_forward_unimplemented",
        ),
    ];
    let (_, s) = first(&tb(
        &abstract_frames,
        "NotImplementedError: Module [Head] is missing the required \"forward\" function",
    ));
    assert!(!s.contains("Upgrade torch"), "{s}");
}

/// A checkpoint without the per-rank entry of a rank that loads it was saved by fewer ranks:
/// resume on the saved data-parallel size, not "check that the file is complete".
#[test]
fn a_checkpoint_missing_a_ranks_entry_says_resume_on_the_saved_world_size() {
    let frames = [
        ("/work/pt/trainer.py", 88, "resume"),
        (
            &format!("{SITE}/torch/distributed/checkpoint/default_planner.py") as &str,
            430,
            "create_default_local_load_plan",
        ),
    ];
    let (f, s) = first(&tb(
        &frames,
        "RuntimeError: Missing key in checkpoint state_dict: sampler.dp_rank_12.",
    ));
    assert_eq!(f.category, Category::CheckpointError, "{f:?}");
    assert!(
        s.starts_with("Resume with the same data-parallel size") && s.contains("`sampler` state"),
        "{s}"
    );
}

/// A library's own frame calls a method on the framework's core type that the installed
/// framework lacks: the framework is older than the library, so it is the one to upgrade —
/// not the library to pin. A user's own frame calling the same method is not this case.
#[test]
fn a_library_calling_a_method_the_frameworks_type_lacks_says_upgrade_the_framework() {
    let (f, s) = first(&tb(
        &[
            ("/work/cls/fit.py", 88, "main"),
            (&format!("{SITE}/lightlib/export.py"), 312, "to_half"),
        ],
        "AttributeError: 'Tensor' object has no attribute 'is_inference_safe'",
    ));
    assert_eq!(f.category, Category::PythonException, "{f:?}");
    assert!(
        s.starts_with("Upgrade torch to a release lightlib supports"),
        "{s}"
    );
    let (_, s) = first(&tb(
        &[
            ("/work/cls/fit.py", 88, "main"),
            (&format!("{SITE}/paddletext/saver.py"), 40, "dtype_of"),
        ],
        "AttributeError: 'EagerParamBase' object has no attribute 'is_floating_point'",
    ));
    assert!(
        s.starts_with("Upgrade paddlepaddle to a release paddletext supports"),
        "{s}"
    );
    let (_, s) = first(&tb(
        &[("/work/cls/fit.py", 88, "main")],
        "AttributeError: 'Tensor' object has no attribute 'is_inference_safe'",
    ));
    assert!(!s.starts_with("Upgrade torch"), "{s}");
}

#[test]
fn a_framework_failing_in_its_own_source_checkout_says_update_it() {
    // Every frame outside the installed packages is one package under a repository named for
    // it (run from its clone): the framework failed, not a script of the user's.
    let (f, s) = first(&tb(
        &[
            (
                "/data/clones/Bolt-Trainer/src/bolttrainer/cli.py",
                12,
                "<module>",
            ),
            (
                "/data/clones/Bolt-Trainer/src/bolttrainer/loop/runner.py",
                88,
                "fit",
            ),
            (
                &format!("{SITE}/transformers/trainer.py"),
                2400,
                "_inner_training_loop",
            ),
            (
                "/data/clones/Bolt-Trainer/src/bolttrainer/loop/hooks.py",
                51,
                "on_epoch_end",
            ),
        ],
        "TypeError: '<' not supported between instances of 'NoneType' and 'int'",
    ));
    assert_eq!(f.category, Category::PythonException, "{f:?}");
    assert!(
        s.starts_with("Update bolttrainer to its latest code"),
        "{s}"
    );

    // A project of the user's own (its directory not named for the package it holds) keeps the
    // line to fix.
    let (_, s) = first(&tb(
        &[
            ("/home/ana/experiments/seg/train.py", 30, "<module>"),
            ("/home/ana/experiments/seg/engine/loop.py", 61, "fit"),
        ],
        "TypeError: '<' not supported between instances of 'NoneType' and 'int'",
    ));
    assert!(!s.contains("latest code"), "{s}");

    // A project of the user's laid out as `repo/pkg/` cannot be told from a cloned framework by
    // its paths: the fix also names the raising line for that reading.
    let (f, _) = first(&tb(
        &[
            ("/home/ana/code/tinyllm/tinyllm/train.py", 88, "<module>"),
            ("/home/ana/code/tinyllm/tinyllm/data.py", 41, "build_batch"),
        ],
        "ValueError: sequence length 4096 exceeds block size 2048",
    ));
    assert!(
        f.fix.en.contains("your own project")
            && f.fix
                .en
                .contains("`/home/ana/code/tinyllm/tinyllm/data.py`, line 41"),
        "{}",
        f.fix.en
    );
}

#[test]
fn a_failure_inside_torchs_checkpoint_machinery_under_a_framework_names_the_version_pair() {
    // The framework (an installed package or a checkout named for it) drove a sharded save;
    // torch's planner raised: the two disagree about the layout, the file is not the question.
    let (f, s) = first(&tb(
        &[
            ("/opt/jobs/pretrain.py", 90, "<module>"),
            ("/opt/Kite-LM/kite/ckpt/sharded.py", 212, "save"),
            (
                &format!("{SITE}/torch/distributed/checkpoint/state_dict_saver.py"),
                150,
                "save",
            ),
            (
                &format!("{SITE}/torch/distributed/checkpoint/default_planner.py"),
                404,
                "create_global_plan",
            ),
        ],
        "AssertionError",
    ));
    assert_eq!(f.category, Category::CheckpointError, "{f:?}");
    assert!(
        s.starts_with("Pin torch to the release kite is written for"),
        "{s}"
    );

    // The user's own script calling the same machinery names no framework: no version pair.
    let (_, s) = first(&tb(
        &[
            ("/home/ana/exp/save.py", 20, "<module>"),
            (
                &format!("{SITE}/torch/distributed/checkpoint/default_planner.py"),
                404,
                "create_global_plan",
            ),
        ],
        "AssertionError",
    ));
    assert!(!s.contains("is written for"), "{s}");
}

/// An exception raised inside an RL reward (a verifier library under the reward function):
/// the step is the reward catching it, not updating the library that raised (T2823's
/// principle), while the same library raising outside any reward keeps the release step.
#[test]
fn an_exception_under_a_reward_function_says_catch_it_in_the_reward() {
    let frames = |with_reward: bool| {
        let mut v = vec![
            (
                format!("{SITE}/trl/trainer/grpo_trainer.py"),
                843,
                "_generate_and_score_completions".to_string(),
            ),
            (
                "/work/rl/rewards.py".to_string(),
                58,
                "answer_reward".to_string(),
            ),
            (
                format!("{SITE}/mathcheck/grader.py"),
                591,
                "verify".to_string(),
            ),
            (
                format!("{SITE}/symcalc/relational.py"),
                848,
                "__new__".to_string(),
            ),
        ];
        if !with_reward {
            v[1] = (
                "/work/rl/score.py".to_string(),
                58,
                "score_batch".to_string(),
            );
        }
        v
    };
    let text = |with_reward: bool| {
        let f = frames(with_reward);
        let refs: Vec<(&str, u32, &str)> = f
            .iter()
            .map(|(p, l, n)| (p.as_str(), *l, n.as_str()))
            .collect();
        tb(&refs, "TypeError: Can only compare inequalities with Expr")
    };
    let (f, s) = first(&text(true));
    assert_eq!(f.category, Category::PythonException, "{f:?}");
    assert!(s.contains("try/except"), "{s}");
    assert!(s.contains("answer_reward"), "{s}");
    let (_, s) = first(&text(false));
    assert!(!s.contains("try/except"), "{s}");
}
