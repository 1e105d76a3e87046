//! Tracebacks understood, not just matched: when no rule explains a failure, the innermost
//! frames and the exception at the end of each Python traceback in the error tail say what
//! kind of failure it was — the disk (`[Errno 28]`, `file write failed`) or shared memory when
//! the message implies it, a checkpoint being loaded or saved (`torch.load`, `load_state_dict`,
//! safetensors, DeepSpeed's `load_checkpoint`, `PytorchStreamReader/Writer`), a missing file or
//! name while a dataset, model or config is loaded, an exception in the user's own code, or one
//! raised inside a library. The finding it makes (`traceback-classified`, TW9903) is weaker than
//! any specific rule's and says why it chose its category. The exception is also read for its
//! remedy (`remedy`: an API the installed library lacks, a label outside the class range,
//! tensors on two devices, a library's internal assertion…): that step leads the fix of every
//! generic finding, before where it was raised and the general advice. Works on the analysis as data; it
//! never reads files or formats output. The traceback line shapes are written here once and
//! shared with the fingerprint.

use super::gated::Gated;
use super::{Contribution, Evidence, Finding, Origin};
use crate::analyze::Analysis;
use crate::errtail::TailLine;
use crate::model::{Category, Phase, Text, text};
use crate::rules::Role;
use crate::sources::prefix;
use regex::Regex;
use std::sync::LazyLock;

/// The engine-made finding's name and code.
pub const RULE: &str = "traceback-classified";
pub const CODE: &str = "TW9903";

/// What `rules explain traceback-classified` says.
pub const WHAT: Text<&str> = Text {
    en: "No rule explains the failure, but a Python traceback does: its exception and innermost \
     frames decide the category — `[Errno 28]`/`file write failed` is the disk (shared memory \
     when /dev/shm or a SemLock is named), an error inside checkpoint loading or saving is \
     checkpoint_error, a missing file or name while a dataset, model or config loads is \
     config_error, an exception in your own code is python_exception, one raised inside a \
     library is other. Weaker than any specific rule; the score says why.",
    zh: "没有规则能解释这次失败，但 Python traceback 可以：由异常和最内层的栈帧决定类别——\
     `[Errno 28]`/`file write failed` 是磁盘问题（提到 /dev/shm 或 SemLock 时是共享内存），\
     加载或保存 checkpoint 时出错是 checkpoint_error，加载数据集、模型或配置时缺文件或名称是 \
     config_error，你自己代码里的异常是 python_exception，库内部抛出的是 other。\
     比任何具体规则都弱；分数说明了原因。",
};

/// The exception line that ends a traceback: `pkg.mod.SomeError: message`. Like the other two
/// line shapes, compiled only for a line holding one of its literals (`gated`).
pub static EXCEPTION: Gated = Gated::new(
    r"^(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit|Failure|Fault))(?::\s*(.*))?$",
    &[
        ("Error", false),
        ("Exception", false),
        ("Interrupt", false),
        ("Exit", false),
        ("Failure", false),
        ("Fault", false),
    ],
);

/// A frame line: `File "path", line N, in func`.
pub static FRAME: Gated = Gated::new(
    r#"^File "([^"]+)", line (\d+), in (\S+)"#,
    &[(", in ", false)],
);

/// Compile the regexes every run's tail is read with now (see `correlate::warm_up`).
pub(crate) fn warm_up() {
    EXCEPTION.get();
    FRAME.get();
}

/// A SyntaxError's location line: `File "path", line N` (no function: the file did not load).
pub(super) static SYNTAX_AT: Gated =
    Gated::new(r#"^File "([^"]+)", line (\d+)$"#, &[("\", line ", false)]);

/// Launcher exceptions that only say "a child failed": never the failure itself.
pub const WRAPPERS: &[&str] = &["ChildFailedError", "CalledProcessError"];

/// Frames inside libraries (PyTorch, CUDA/NCCL bindings, DeepSpeed, HF, the standard
/// library) say where the failure surfaced, not which code caused it.
pub fn internal_frame(path: &str) -> bool {
    let p = path.to_ascii_lowercase();
    [
        "site-packages/",
        "dist-packages/",
        "/torch/",
        "/lib/python",
        "<frozen",
        "/deepspeed/",
        "nccl",
        "cuda",
    ]
    .iter()
    .any(|x| p.contains(x))
}

/// A line's text after its rank/host/time prefix.
pub fn bare(text: &str) -> &str {
    let (_, pos) = prefix::peel(text);
    text.get(pos..).unwrap_or(text).trim()
}

/// One frame of a traceback as the tail kept it.
#[derive(Debug, Clone)]
struct Frame {
    path: String,
    func: String,
    src_line: u64,
    at: usize,
    /// The source line Python prints under the frame (`assert args.batch_size % n == 0`).
    code: Option<String>,
}

/// One traceback: its frames (outermost first, as printed) and the exception ending it.
#[derive(Debug, Clone)]
struct Traceback {
    frames: Vec<Frame>,
    ty: String,
    msg: String,
    /// Index into the error tail of the exception line.
    at: usize,
}

/// Python's report of an exception it could not raise and ignored (CPython's unraisable hook,
/// `Python/errors.c`): a header `Exception ignored in: <obj>` (or `… in sys.unraisablehook`,
/// `… on calling ctypes callback function`, `… while …`), then a traceback, then the exception
/// line. An exception in a `__del__` or an `atexit` callback is printed so, and the program
/// goes on: it is not an uncaught exception, and its lines never say the run died.
fn unraisable_header(t: &str) -> bool {
    t.starts_with("Exception ignored ")
}

/// A traceback printed by a thread or a child process, not by the main program: CPython
/// prints an uncaught exception in a `threading.Thread` from `Lib/threading.py`'s
/// `_bootstrap_inner` under `Exception in thread NAME:`, and one in a `multiprocessing.Process`
/// from `Lib/multiprocessing/process.py`'s `_bootstrap` under `Process NAME:`. The thread or
/// the child ends there; the main program goes on. The header, or the traceback's outermost
/// frame, says so.
fn thread_header(t: &str) -> bool {
    t.starts_with("Exception in thread ")
}

fn detached_frame(path: &str, func: &str) -> bool {
    let p = path.replace('\\', "/");
    (p.ends_with("/threading.py") && func == "_bootstrap_inner")
        || (p.ends_with("/multiprocessing/process.py") && func == "_bootstrap")
}

/// Why a report's exception did not end the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotFatal {
    /// Python's unraisable hook: an exception in a `__del__` or at exit, ignored.
    Ignored,
    /// A thread's or a child process's traceback in a run that reports its own completion
    /// (before it or after it, `errtail::CLEAN_END`): logged, and the main program went on.
    Detached,
}

/// The lines of every such report in the run's error tail, as (input, first line, last line)
/// and why it did not end the run: an ignored report from its header to the exception line
/// that ends it, and a thread's or child's traceback (from its header or its `Traceback` line)
/// to its exception line, where the same file says the run completed. A main program's
/// traceback after its completion line is still a failure at exit: the process's last word.
/// A report is printed in one piece, so a gap of more than a few lines between kept lines ends
/// it too.
pub fn ignored_reports(a: &Analysis) -> &[Ignored] {
    a.ignored.get_or_init(|| read_ignored(a))
}

/// One report that did not end the run: (input, first line, last line, why).
pub type Ignored = (usize, u64, u64, NotFatal);

fn read_ignored(a: &Analysis) -> Vec<Ignored> {
    const GAP: u64 = 4;
    let (exc_re, frame_re) = (&EXCEPTION, &FRAME);
    let completed = |input: usize| a.clean_end.iter().any(|(i, _)| *i == input);
    let mut out: Vec<(usize, u64, u64, NotFatal)> = Vec::new();
    let mut open: Option<(usize, u64, u64, NotFatal)> = None;
    // A `Traceback` line whose first frame is not read yet: (input, its line).
    let mut header: Option<(usize, u64)> = None;
    for l in &a.error_tail {
        let t = bare(&l.text);
        if let Some((input, first, last, why)) = open {
            if input != l.input || l.line > last + GAP {
                open = None;
            } else {
                open = Some((input, first, l.line, why));
                if exc_re.is_match(t) {
                    out.push((input, first, l.line, why));
                    open = None;
                }
                continue;
            }
        }
        let first_frame = header.take();
        if unraisable_header(t) {
            open = Some((l.input, l.line, l.line, NotFatal::Ignored));
        } else if thread_header(t) && completed(l.input) {
            open = Some((l.input, l.line, l.line, NotFatal::Detached));
        } else if t.contains("Traceback (most recent call last)") {
            header = Some((l.input, l.line));
        } else if let Some((input, at)) = first_frame
            && input == l.input
            && completed(input)
            && frame_re
                .captures(t)
                .is_some_and(|c| detached_frame(&c[1], &c[3]))
        {
            open = Some((input, at, l.line, NotFatal::Detached));
        }
    }
    // A header whose exception line was not kept: the header alone is the report.
    if let Some(span) = open {
        out.push(span);
    }
    out
}

/// Whether line `line` of input `input` lies in one of `spans` ([`ignored_reports`]).
pub fn in_ignored(spans: &[(usize, u64, u64, NotFatal)], input: usize, line: u64) -> bool {
    spans
        .iter()
        .any(|&(i, first, last, _)| i == input && (first..=last).contains(&line))
}

/// Every traceback of the run's own logs in the error tail, in order.
fn tracebacks(a: &Analysis) -> Vec<Traceback> {
    // (An empty tail needs no regex compiled: a clean small log's start-up.)
    if a.error_tail.is_empty() {
        return Vec::new();
    }
    let (exc_re, frame_re) = (&EXCEPTION, &FRAME);
    let ignored = ignored_reports(a);
    let mut out = Vec::new();
    let mut frames: Vec<Frame> = Vec::new();
    let mut input = usize::MAX;
    // A traceback header was seen: its exception counts even with no frame kept (IPython
    // prints `TypeError   Traceback (most recent call last)` and frames of another shape).
    let mut header = false;
    for (at, l) in a.error_tail.iter().enumerate() {
        if l.input != input {
            frames.clear();
            header = false;
            input = l.input;
        }
        let Some(info) = a.inputs.get(l.input) else {
            continue;
        };
        if info.phase == Phase::Before || !info.kind.is_scanned() {
            continue;
        }
        let t = bare(&l.text);
        if t.contains("Traceback (most recent call last)") {
            frames.clear();
            header = true;
        } else if let Some(c) = frame_re.captures(t) {
            frames.push(Frame {
                path: c[1].to_string(),
                src_line: c[2].parse().unwrap_or(0),
                func: c[3].to_string(),
                at,
                code: None,
            });
        } else if let Some(c) = SYNTAX_AT.captures(t) {
            frames.push(Frame {
                path: c[1].to_string(),
                src_line: c[2].parse().unwrap_or(0),
                func: "<module>".to_string(),
                at,
                code: None,
            });
        } else if let Some(c) = exc_re.captures(t) {
            let ty = c[1].to_string();
            let raised = !in_ignored(ignored, l.input, l.line);
            if raised && !WRAPPERS.contains(&ty.as_str()) && (!frames.is_empty() || header) {
                out.push(Traceback {
                    frames: std::mem::take(&mut frames),
                    ty,
                    msg: c.get(2).map_or("", |m| m.as_str()).to_string(),
                    at,
                });
            }
            frames.clear();
            header = false;
        } else if let Some(f) = frames.last_mut()
            && f.code.is_none()
            && a.error_tail[f.at].line + 1 == l.line
        {
            // The line right under a frame is its source line.
            f.code = Some(t.trim().to_string());
        }
    }
    out
}

/// What a traceback says: the category, why, how sure, and what to do.
struct Reading {
    category: Category,
    why: Text,
    confidence: f64,
    fix: Text,
    /// Higher is more specific: the best reading of a run wins.
    rank: u8,
    /// The remedy the exception itself names (`remedy`), when it names one.
    remedy: Option<Remedy>,
}

fn any_frame(tb: &Traceback, words: &[&str]) -> Option<String> {
    tb.frames.iter().rev().find_map(|f| {
        let hay = format!("{} {}", f.path, f.func);
        words
            .iter()
            .any(|w| hay.contains(w))
            .then(|| format!("{}:{} in {}", short(&f.path), f.src_line, f.func))
    })
}

fn short(path: &str) -> &str {
    let mut parts = path.rsplitn(3, '/');
    let last = parts.next().unwrap_or(path);
    match parts.next() {
        Some(dir) => &path[path.len() - last.len() - dir.len() - 1..],
        None => last,
    }
}

const CHECKPOINT_CODE: &[&str] = &[
    "torch/serialization.py",
    "load_state_dict",
    "_load_from_state_dict",
    "load_checkpoint",
    "save_checkpoint",
    "_load_checkpoint",
    "_save_checkpoint",
    "safetensors",
    "load_sharded_checkpoint",
    "_load_rng_state",
    // Distributed checkpoints: Megatron-core's and torch.distributed.checkpoint's writers.
    "dist_checkpointing",
    "distributed/checkpoint/",
    "save_state_dict",
];
const LOADING_CODE: &[&str] = &[
    "load_dataset",
    "datasets/",
    "from_pretrained",
    "cached_file",
    "hf_hub_download",
    "snapshot_download",
    "tokenization",
    "load_config",
    "config",
    "yaml",
    "json",
    "omegaconf",
    "hydra",
    "data_files",
    "get_dataset",
    "load_model",
];

fn read(tb: &Traceback) -> Reading {
    let x = Raised::new(tb);
    out_of_space(&x)
        .or_else(|| checkpoint_failed(&x))
        .or_else(|| missing_while_loading(&x))
        .or_else(|| rejected_by_library(&x))
        .or_else(|| failed_config_check(&x))
        .unwrap_or_else(|| where_raised(&x))
}

/// A write that found no space left: shared memory when the message or frames name it, else the
/// disk.
fn out_of_space(x: &Raised<'_>) -> Option<Reading> {
    let Raised {
        tb,
        msg,
        lower,
        place,
        ..
    } = x;
    let enospc = msg.contains("[Errno 28]")
        || lower.contains("no space left on device")
        || msg.contains("ENOSPC")
        || lower.contains("file write failed");
    if enospc {
        let shm = lower.contains("/dev/shm")
            || lower.contains("shared memory")
            || any_frame(
                tb,
                &[
                    "SemLock",
                    "shared_memory",
                    "_share_filename",
                    "share_memory",
                ],
            )
            .is_some();
        return Some(if shm {
            Reading {
                category: Category::ShmExhausted,
                why: Text::new(
                    format!(
                        "{}: the write that failed is to shared memory ({place})",
                        tb.ty
                    ),
                    format!("{}：写失败的目标是共享内存（{place}）", tb.ty),
                ),
                confidence: 0.55,
                fix: Text::new(
                    "Give the container a larger /dev/shm (`docker run --shm-size=8g` or `--ipc=host`; on Kubernetes an `emptyDir` with `medium: Memory`), or lower the DataLoader's `num_workers`.",
                    "给容器更大的 /dev/shm（`docker run --shm-size=8g` 或 `--ipc=host`；Kubernetes 上挂一个 `medium: Memory` 的 `emptyDir`），或者调小 DataLoader 的 `num_workers`。",
                ),
                rank: 5,
                remedy: None,
            }
        } else {
            Reading {
                category: Category::DiskFull,
                why: Text::new(
                    format!(
                        "{}: no space left on the device written to ({place})",
                        tb.ty
                    ),
                    format!("{}：写入的设备没有剩余空间了（{place}）", tb.ty),
                ),
                confidence: 0.55,
                fix: Text::new(
                    "Free space on the filesystem the run writes to (`df -h` on the output and checkpoint directory, and on $TMPDIR and the HF cache), point the output at a larger one, or keep fewer checkpoints (`save_total_limit`).",
                    "清理训练写入的文件系统（对输出目录、checkpoint 目录以及 $TMPDIR 和 HF 缓存执行 `df -h`），把输出指到更大的盘上，或者少保留几个 checkpoint（`save_total_limit`）。",
                ),
                rank: 5,
                remedy: None,
            }
        });
    }
    None
}

/// An exception raised while a checkpoint was loaded or saved.
fn checkpoint_failed(x: &Raised<'_>) -> Option<Reading> {
    let Raised { tb, msg, place, .. } = x;
    let stream = msg.contains("PytorchStreamReader") || msg.contains("PytorchStreamWriter");
    if let Some(at) = any_frame(tb, CHECKPOINT_CODE).or_else(|| stream.then(|| place.clone())) {
        // A remedy the message names (a checkpoint saved by fewer ranks) replaces the advice
        // for a damaged file, which would send the user to a file that is whole.
        if let Some(cure) = remedy(tb) {
            return Some(Reading {
                category: Category::CheckpointError,
                why: Text::new(
                    format!(
                        "{} raised while a checkpoint was loaded or saved ({at})",
                        tb.ty
                    ),
                    format!("{} 在加载或保存 checkpoint 时抛出（{at}）", tb.ty),
                ),
                confidence: 0.5,
                fix: cure.clone(),
                rank: 4,
                remedy: Some(cure),
            });
        }
        return Some(Reading {
            category: Category::CheckpointError,
            why: Text::new(
                format!(
                    "{} raised while a checkpoint was loaded or saved ({at})",
                    tb.ty
                ),
                format!("{} 在加载或保存 checkpoint 时抛出（{at}）", tb.ty),
            ),
            confidence: 0.5,
            fix: Text::new(
                format!(
                    "The checkpoint could not be read or written ({}: {}): check that the file is complete and matches this model and library version (load it alone: `python -c \"import torch; torch.load(PATH, map_location='cpu')\"`), and resume from the previous checkpoint if it is truncated.",
                    tb.ty,
                    clip(msg)
                ),
                format!(
                    "checkpoint 读写失败（{}: {}）：确认文件完整，并且和当前模型、库版本匹配（单独加载试试：`python -c \"import torch; torch.load(PATH, map_location='cpu')\"`）；如果文件被截断了，就从上一个 checkpoint 恢复。",
                    tb.ty,
                    clip(msg)
                ),
            ),
            rank: 4,
            remedy: None,
        });
    }
    None
}

/// Something the configuration names is missing, raised while a dataset, model or config was
/// loaded.
fn missing_while_loading(x: &Raised<'_>) -> Option<Reading> {
    let Raised { tb, msg, lower, .. } = x;
    let missing = matches!(
        tb.ty.as_str(),
        "FileNotFoundError" | "IsADirectoryError" | "NotADirectoryError"
    ) || tb.ty.contains("NotFound")
        || [
            "not found",
            "does not exist",
            "no such file",
            "can't load",
            "couldn't find",
            "cannot find",
            "unable to find",
            "files found",
            "is not a local folder",
        ]
        .iter()
        .any(|w| lower.contains(w));
    if missing && let Some(at) = any_frame(tb, LOADING_CODE) {
        return Some(Reading {
            category: Category::ConfigError,
            why: Text::new(
                format!(
                    "{}: something the configuration names is missing, raised while loading ({at})",
                    tb.ty
                ),
                format!("{}：配置里指定的东西不存在，在加载时抛出（{at}）", tb.ty),
            ),
            confidence: 0.5,
            fix: Text::new(
                format!(
                    "A path or name in the configuration does not resolve ({}: {}): check the dataset/model name or path (`--model_name_or_path`, `data_files`, `dataset_dir`), that it exists on every node, and that an offline run has it in its cache.",
                    tb.ty,
                    clip(msg)
                ),
                format!(
                    "配置里的某个路径或名称找不到（{}: {}）：检查数据集/模型的名称或路径（`--model_name_or_path`、`data_files`、`dataset_dir`），确认每个节点上都有，离线运行时确认缓存里有。",
                    tb.ty,
                    clip(msg)
                ),
            ),
            rank: 3,
            remedy: None,
        });
    }
    None
}

/// A library rejected the configuration in its own set-up code.
fn rejected_by_library(x: &Raised<'_>) -> Option<Reading> {
    let Raised { tb, msg, .. } = x;
    if let Some((pkg, at)) = config_rejected(tb) {
        return Some(Reading {
            category: Category::ConfigError,
            why: Text::new(
                format!(
                    "{}: `{pkg}` rejected the configuration in its own set-up code ({at})",
                    tb.ty
                ),
                format!(
                    "{}：`{pkg}` 在它自己的配置检查代码里拒绝了这份配置（{at}）",
                    tb.ty
                ),
            ),
            confidence: 0.5,
            fix: Text::new(
                format!(
                    "Change the setting the message asks for, or, if this configuration ran with an earlier `{pkg}`, pin `{pkg}` to that release: `{pkg}` rejects the configuration in its set-up code ({at}: {}).",
                    clip(msg)
                ),
                format!(
                    "按报错信息修改它要求的设置；如果这份配置在更早的 `{pkg}` 版本上能跑，就把 `{pkg}` 固定到那个版本：`{pkg}` 在配置检查代码里拒绝了这份配置（{at}：{}）。",
                    clip(msg)
                ),
            ),
            rank: 3,
            remedy: None,
        });
    }
    None
}

/// A bare assertion over configuration values failed.
fn failed_config_check(x: &Raised<'_>) -> Option<Reading> {
    let Raised { tb, .. } = x;
    if let Some(check) = config_assertion(tb) {
        let at = tb.frames.last().map_or_else(String::new, |f| {
            format!("{}:{} in {}", short(&f.path), f.src_line, f.func)
        });
        let (fix, fix_zh) = if let Some((a, b)) = modulo_sides(&check) {
            (
                format!(
                    "Set `{a}` to a multiple of `{b}` (or change `{b}`): the configuration fails the check `{}` ({at}).",
                    clip(&check)
                ),
                format!(
                    "把 `{a}` 设成 `{b}` 的整数倍（或者改 `{b}`）：配置没通过检查 `{}`（{at}）。",
                    clip(&check)
                ),
            )
        } else if let Some((small, large)) = order_sides(&check) {
            (
                format!(
                    "Set `{small}` no larger than `{large}` (or raise `{large}`): the configuration fails the check `{}` ({at}).",
                    clip(&check)
                ),
                format!(
                    "把 `{small}` 设成不大于 `{large}`（或者调大 `{large}`）：配置没通过检查 `{}`（{at}）。",
                    clip(&check)
                ),
            )
        } else {
            (
                format!(
                    "Make the configuration pass `{}` ({at}): set the values it compares (flags, config keys, the device count) so the check holds.",
                    clip(&check)
                ),
                format!(
                    "让配置通过 `{}`（{at}）：调整它比较的那些值（命令行参数、配置项、设备数），使检查成立。",
                    clip(&check)
                ),
            )
        };
        return Some(Reading {
            category: Category::ConfigError,
            why: Text::new(
                format!(
                    "a bare assertion over configuration values failed: `{}`",
                    clip(&check)
                ),
                format!("一个针对配置值的断言失败了：`{}`", clip(&check)),
            ),
            confidence: 0.5,
            fix: Text::new(fix, fix_zh),
            rank: 3,
            remedy: None,
        });
    }
    None
}

/// No more specific reading: where it was raised — the script, the user's code, or inside a
/// library — led by the remedy the exception names.
fn where_raised(x: &Raised<'_>) -> Reading {
    let Raised { tb, msg, place, .. } = x;
    let cure = remedy(tb);
    // The remedy the exception's words and frames name leads; where it was raised follows.
    let lead = |en: String, zh: String| match &cure {
        Some(c) => (format!("{} {en}", c.en), format!("{}{zh}", c.zh)),
        None => (en, zh),
    };
    if tb.frames.is_empty() {
        // An empty message continues on the lines after it (a rich box traceback).
        let (fix, fix_zh) = if msg.trim().is_empty() {
            lead(
                format!("Fix the {}: its message is on the lines after it.", tb.ty),
                format!("修复这个 {}：它的报错信息在后面几行。", tb.ty),
            )
        } else {
            lead(
                format!("Fix the {}: `{}: {}`.", tb.ty, tb.ty, clip(msg)),
                format!("修复这个 {}：`{}: {}`。", tb.ty, tb.ty, clip(msg)),
            )
        };
        return Reading {
            category: Category::PythonException,
            why: Text::new(
                format!("{} raised in your cell or script", tb.ty),
                format!("{} 在你的 cell 或脚本里抛出", tb.ty),
            ),
            confidence: 0.4,
            fix: Text::new(fix, fix_zh),
            rank: 2,
            remedy: cure,
        };
    }
    if let Some(user) = tb.frames.iter().rev().find(|f| !internal_frame(&f.path)) {
        let at = format!("{}:{} in {}", short(&user.path), user.src_line, user.func);
        let raised_here = tb.frames.last().is_some_and(|f| std::ptr::eq(user, f));
        let (fix, fix_zh) = lead(
            format!("It was raised at {at}: `{}: {}`.", tb.ty, clip(msg)),
            format!("异常位置 {at}：`{}: {}`。", tb.ty, clip(msg)),
        );
        let (fix, fix_zh) = if cure.is_some() {
            (fix, fix_zh)
        } else {
            (
                format!("Fix the {} at {at}: `{}: {}`.", tb.ty, tb.ty, clip(msg)),
                format!("修复 {at} 处的 {}：`{}: {}`。", tb.ty, tb.ty, clip(msg)),
            )
        };
        return Reading {
            category: Category::PythonException,
            why: Text::new(
                if raised_here {
                    format!("{} raised in your code ({at})", tb.ty)
                } else {
                    format!(
                        "{} raised from your code's call at {at} (innermost: {place})",
                        tb.ty
                    )
                },
                if raised_here {
                    format!("{} 在你的代码里抛出（{at}）", tb.ty)
                } else {
                    format!("{} 由你的代码在 {at} 的调用引发（最内层：{place}）", tb.ty)
                },
            ),
            confidence: if raised_here { 0.45 } else { 0.4 },
            fix: Text::new(fix, fix_zh),
            rank: 2,
            remedy: cure,
        };
    }
    let (fix, fix_zh) = match &cure {
        Some(_) => lead(
            format!(
                "It was raised inside a library ({place}: `{}: {}`).",
                tb.ty,
                clip(msg)
            ),
            format!("异常在库内部抛出（{place}：`{}: {}`）。", tb.ty, clip(msg)),
        ),
        None => (
            format!(
                "The exception was raised inside a library ({place}: `{}: {}`): check the arguments it was given and the library's version; the full traceback (not only its tail) shows the call from your code.",
                tb.ty,
                clip(msg)
            ),
            format!(
                "异常在库内部抛出（{place}：`{}: {}`）：检查传给它的参数和库的版本；完整的 traceback（而不只是结尾几行）能看到是你代码的哪一处调用的。",
                tb.ty,
                clip(msg)
            ),
        ),
    };
    Reading {
        category: Category::Other,
        why: Text::new(
            format!(
                "{} raised inside a library ({place}), with no frame of your code kept",
                tb.ty
            ),
            format!(
                "{} 在某个库内部抛出（{place}），日志里没有保留你代码的栈帧",
                tb.ty
            ),
        ),
        confidence: 0.35,
        fix: Text::new(fix, fix_zh),
        rank: 1,
        remedy: cure,
    }
}

/// Names that make an assertion a check of the run's configuration rather than of its data or
/// code: the parsed arguments or config object, and the sizes a launch sets.
const CONFIG_NAMES: &[&str] = &[
    "args.",
    "opt.",
    "opts.",
    "cfg.",
    "config.",
    "conf.",
    "hparams",
    "flags.",
    "batch_size",
    "world_size",
    "num_gpus",
    "n_gpu",
    "ngpu",
    "gpus",
    "devices",
    "num_processes",
    "num_heads",
    "n_head",
    "accumulation",
    "micro_batch",
    "parallel_size",
];

/// A bare `AssertionError` (no message) whose innermost source line is an `assert` comparing
/// configuration values (`assert args.batch_size % len(devices) == 0`), or a bare divisibility
/// check between two plain names (`bare_divisibility`): the check, as written. The one reader of
/// this shape: the rule `assert-divisibility-between-settings` (TW2171) that read the bare
/// divisibility line on its own was folded in here (stop 55).
fn config_assertion(tb: &Traceback) -> Option<String> {
    if tb.ty != "AssertionError" || !tb.msg.trim().is_empty() {
        return None;
    }
    let code = tb.frames.last()?.code.as_deref()?;
    let check = code.strip_prefix("assert ")?.trim();
    let compares = ["%", "==", "<=", ">=", "<", ">", "!="]
        .iter()
        .any(|op| check.contains(op));
    let settings = CONFIG_NAMES.iter().any(|n| check.contains(n)) || bare_divisibility(check);
    (compares && settings).then(|| code.to_string())
}

/// `A % B == 0` over plain names or attributes (A may be a parenthesised product of them,
/// `(n_envs * n_steps)`), calling nothing and carrying no message: the library's check that one
/// setting splits evenly into another, whatever the settings are called (stable-baselines'
/// `assert self.n_batch % self.nminibatches == 0`, T2909). An assert that calls a function can
/// fail inside the call, and one with a message is read by its message.
fn bare_divisibility(check: &str) -> bool {
    let Some((a, rest)) = check.split_once('%') else {
        return false;
    };
    let Some((b, tail)) = rest.split_once("==") else {
        return false;
    };
    let plain = |side: &str| {
        let s = side.trim();
        let inner = s
            .strip_prefix('(')
            .and_then(|x| x.strip_suffix(')'))
            .unwrap_or(s);
        inner.split('*').all(|f| {
            let f = f.trim();
            f.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && f.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        })
    };
    tail.trim() == "0" && plain(a) && plain(b)
}

/// Exceptions that say something other than "this configuration is refused" even when a
/// library's set-up code raises them: an API or version clash, a missing module, a failure of
/// the machine.
const NOT_A_CONFIG_CHECK: &[&str] = &[
    "TypeError",
    "AttributeError",
    "ImportError",
    "ModuleNotFoundError",
    "NameError",
    "RuntimeError",
    "OSError",
    "MemoryError",
    "OutOfMemoryError",
    "NotImplementedError",
];

/// A library refusing the configuration: the exception is raised by an installed package's
/// own set-up code — the last frame is in `site-packages/<pkg>/` and its function is one that
/// builds or checks a configuration (`_configure_optimizer`, `validate_config`, a config or
/// arguments class's `__post_init__`). Gives the package and where.
fn config_rejected(tb: &Traceback) -> Option<(String, String)> {
    if NOT_A_CONFIG_CHECK.iter().any(|t| tb.ty.ends_with(t)) {
        return None;
    }
    let f = tb.frames.last()?;
    let pkg = package_of(f)?;
    let func = f.func.to_ascii_lowercase();
    let file = short(&f.path).to_ascii_lowercase();
    let setup = func.contains("config")
        || (func == "__post_init__" && (file.contains("config") || file.contains("arg")));
    setup.then(|| {
        (
            pkg,
            format!("{}:{} in {}", short(&f.path), f.src_line, f.func),
        )
    })
}

/// The setting a check names: the last part of a dotted name (`config.data.train_batch_size`
/// → `train_batch_size`), a call kept whole (`len(devices)`).
fn setting_name(side: &str) -> String {
    let side = side.trim().trim_matches(|c| c == '(' || c == ')');
    if side.contains('(') {
        return side.to_string();
    }
    // A product of settings (`self.n_envs * self.n_steps`): each factor's own name.
    side.split('*')
        .map(|f| f.rsplit('.').next().unwrap_or(f).trim())
        .collect::<Vec<_>>()
        .join(" * ")
}

/// `assert A % B == 0` → the names of A and B.
fn modulo_sides(check: &str) -> Option<(String, String)> {
    let body = check.strip_prefix("assert ")?;
    let body = body.split(',').next()?;
    let (a, rest) = body.split_once('%')?;
    let (b, tail) = rest.split_once("==")?;
    (tail.trim() == "0").then(|| (setting_name(a), setting_name(b)))
}

/// `assert A >= B` (or `B <= A`, `A > B`, `B < A`) → (B, A): the one that must not be larger
/// first.
fn order_sides(check: &str) -> Option<(String, String)> {
    let body = check.strip_prefix("assert ")?.split(',').next()?;
    for (op, small_first) in [(">=", false), ("<=", true), (">", false), ("<", true)] {
        if let Some((l, r)) = body.split_once(op)
            && !l.trim().is_empty()
            && !r.trim().is_empty()
            && !r.starts_with('=')
        {
            let (l, r) = (setting_name(l), setting_name(r));
            return Some(if small_first { (l, r) } else { (r, l) });
        }
    }
    None
}

/// The step an exception names by what it says, in both languages: one sentence, written
/// to lead the fix.
type Remedy = Text;

/// `site-packages/<pkg>/…` (or `dist-packages`, either slash): the installed package a
/// frame's file belongs to.
static PACKAGE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?:site|dist)-packages[/\\]([A-Za-z_][\w]*)[/\\]").ok());

/// The installed package a frame's file belongs to (`site-packages/<pkg>/…`).
fn package_of(f: &Frame) -> Option<String> {
    PACKAGE
        .as_ref()?
        .captures(&f.path)
        .map(|c| c[1].to_string())
}

/// Who is on which side of a version clash an exception shows.
enum Skew {
    /// The library calls its own code written for its older API (a model's remote code).
    Own,
    /// Another installed package (named) passes the library what it does not know: the
    /// library is older than that package expects.
    From(String),
    /// The code (yours, or a name imported from the library) and the library disagree.
    Code,
    /// A package's newer release removed a module another package still imports.
    Removed,
}

/// torch.distributed's refusal of a collective its backend lacks: `ProcessGroup nccldoes not
/// support _reduce_scatter_base` (older releases print no space after the backend).
static PG_UNSUPPORTED: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"ProcessGroup ?([A-Za-z]+?) ?does not support (\w+)").ok());

/// A private submodule that is not there: `No module named 'torch._six'`.
static PRIVATE_MODULE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"No module named '([A-Za-z]\w*)\.((?:\w+\.)*_[A-Za-z]\w*)'").ok());

/// The installed package whose frame called into the innermost package's frames, when it is
/// another package (not the user's code, not the same package).
fn caller_package(tb: &Traceback) -> Option<String> {
    let inner = package_of(tb.frames.last()?)?;
    let outside = tb
        .frames
        .iter()
        .rev()
        .find(|f| package_of(f).as_deref() != Some(inner.as_str()))?;
    package_of(outside).filter(|p| p != &inner && !DISPATCHERS.contains(&p.as_str()))
}

/// Packages that call the function they are given (a collate function, a module's forward, a
/// training step, a task) with the caller's arguments, not their own: never the side of a
/// version clash that passed the argument.
const DISPATCHERS: &[&str] = &[
    "torch",
    "accelerate",
    "lightning",
    "pytorch_lightning",
    "ray",
    "hydra",
    "fire",
    "click",
    "typer",
    "multiprocess",
    "concurrent",
    "threading",
    "runpy",
    "importlib",
];

/// Messages whose words name their remedy. Each is one failure mode of Python or PyTorch, read
/// from the message (the kernel of truth is the message's fixed words, never a user's text).
static UNEXPECTED_KW: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"([\w.]+)\(\) (?:got an unexpected keyword argument '(\w+)'|missing \d+ required (?:positional |keyword-only )?arguments?: '(\w+)'|takes \d+ positional arguments? but \d+ (?:were|was) given)").ok()
});
static NO_ATTR: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?:module '([\w.]+)'|'(\w+)' object) has no attribute '(\w+)'").ok()
});
static CANNOT_IMPORT: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"cannot import name '(\w+)' from '([\w.]+)'").ok());
/// pickle's refusal: `cannot pickle 'X' object` (TypeError), `Can't pickle local object 'f'` /
/// `Can't pickle <function f …>` (AttributeError / PicklingError).
static CANNOT_PICKLE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?:cannot pickle '([^']+)' object|Can't pickle (?:local object )?'?([^':']+))")
        .ok()
});
static TARGET_OOB: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"Target (-?\d+) is out of bounds").ok());
/// torch's bound check of an embedding (or `index_select`) lookup on the CPU: an id at or past
/// the table's size (on a GPU the same lookup is a device-side assert).
static LOOKUP_OOB: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^index out of range in self").ok());
/// torch.distributed.checkpoint's load plan finding no per-rank entry for a rank
/// (`dataloader.dp_rank_8`): the checkpoint was saved by fewer ranks than load it.
static PER_RANK_KEY: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"Missing key in checkpoint state_dict: (\S*?)\b((?:dp_)?rank)_?(\d+)\b").ok()
});
/// A library saying a feature is not there *yet*: a later release has it.
static NOT_YET: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)\bunder development\b|\bnot (?:yet )?(?:supported|implemented) yet\b|\bnot yet (?:supported|implemented|available)\b").ok()
});
static BATCH_MISMATCH: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"Expected input batch_size \((\d+)\) to match target batch_size \((\d+)\)").ok()
});
static TWO_DEVICES: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"Expected all tensors to be on the same device, but found at least two devices, (\S+?) and (\S+?)[!,.]").ok()
});

/// The package that owns the innermost library frame, and whether the frame that raised (the
/// call site) is inside it.
fn library_of(tb: &Traceback) -> Option<String> {
    tb.frames.iter().rev().find_map(|f| {
        package_of(f).filter(|p| p != "torch" || tb.frames.iter().all(|f| f.path.contains("torch")))
    })
}

/// The framework that defines a core type named in an AttributeError (`'ParamBase' object has
/// no attribute …`), as pip names it: the types a library calls methods on, whose methods
/// arrive with framework releases. `Tensor` and `Parameter` are PaddlePaddle's when the
/// traceback runs through paddle, else torch's.
fn framework_of_type(ty: &str, tb: &Traceback) -> Option<&'static str> {
    let paddle = tb
        .frames
        .iter()
        .any(|f| f.path.contains("/paddle") || f.path.contains("\\paddle"));
    match ty {
        "ParamBase" | "EagerParamBase" | "VarBase" => Some("paddlepaddle"),
        "Tensor" | "Parameter" if paddle => Some("paddlepaddle"),
        "Tensor" | "Parameter" => Some("torch"),
        "ndarray" => Some("numpy"),
        _ => None,
    }
}

/// An exception as its readings and remedies see it: the traceback, its message (also in
/// lower case), where it was raised, and the installed package of its innermost frame.
struct Raised<'a> {
    tb: &'a Traceback,
    msg: &'a str,
    lower: String,
    place: String,
    inner_lib: Option<String>,
}

impl<'a> Raised<'a> {
    fn new(tb: &'a Traceback) -> Self {
        let msg = tb.msg.as_str();
        Raised {
            tb,
            msg,
            lower: msg.to_ascii_lowercase(),
            place: tb.frames.last().map_or_else(
                || "the cell or script that raised it".to_string(),
                |f| format!("{}:{} in {}", short(&f.path), f.src_line, f.func),
            ),
            inner_lib: tb.frames.last().and_then(package_of),
        }
    }

    /// The message's captures by one of the remedies' patterns.
    fn caps(&self, re: &LazyLock<Option<Regex>>) -> Option<regex::Captures<'a>> {
        re.as_ref().and_then(|r| r.captures(self.msg))
    }
}

/// The remedies in the order they are tried; the first that reads the exception names the step.
const REMEDIES: &[fn(&Raised<'_>) -> Option<Remedy>] = &[
    label_outside_classes,
    collective_missing,
    per_rank_state_missing,
    not_implemented_yet,
    id_past_table,
    batch_sizes_differ,
    two_devices,
    cannot_pickle,
    no_gradient,
    internal_assert,
    unknown_registry_name,
    generated_syntax_error,
    framework_older_than_library,
    checkpoint_machinery_skew,
    api_skew,
    reward_raised,
    library_own_code,
    checkout_own_code,
];

/// An installed library's own frame calls a method on the framework's core type (a
/// parameter, a tensor, an array) that this framework does not have: the library was written
/// for a newer framework, so the framework is what to upgrade.
fn framework_older_than_library(r: &Raised<'_>) -> Option<Remedy> {
    if r.tb.ty != "AttributeError" {
        return None;
    }
    let c = r.caps(&NO_ATTR)?;
    let ty = c.get(2)?.as_str();
    let lib = r.inner_lib.as_deref()?;
    let fw = framework_of_type(ty, r.tb)?;
    if lib.starts_with(fw) || fw.starts_with(lib) {
        return None;
    }
    let attr = &c[3];
    Some(Remedy {
        en: format!(
            "Upgrade {fw} to a release {lib} supports (its requirements give the minimum): {lib}'s own code calls `{attr}` on {fw}'s `{ty}`, which this {fw} does not have yet, so the installed {fw} is older than {lib} expects. Pinning {lib} to a release written for this {fw} also works."
        ),
        zh: format!(
            "把 {fw} 升级到 {lib} 支持的版本（它的 requirements 写了最低版本）：{lib} 自己的代码在 {fw} 的 `{ty}` 上调用 `{attr}`，而这个 {fw} 还没有它，说明安装的 {fw} 比 {lib} 需要的旧。把 {lib} 固定到适配这个 {fw} 的版本也可以。"
        ),
    })
}

/// What the exception's own words and frames say to do, when they say it. Each remedy is a
/// principle (an API the installed library does not have, a label outside the class range,
/// tensors on two devices, a library's internal assertion), never one case's wording.
fn remedy(tb: &Traceback) -> Option<Remedy> {
    let r = Raised::new(tb);
    REMEDIES.iter().find_map(|f| f(&r))
}

/// A label outside the loss's class range (cross_entropy / nll_loss).
fn label_outside_classes(r: &Raised<'_>) -> Option<Remedy> {
    if let Some(c) = r.caps(&TARGET_OOB) {
        let n = &c[1];
        return Some(Remedy {
            en: format!(
                "A label ({n}) is outside the loss's class range 0..C-1: remap the labels (or mask pixels) to class indices starting at 0, or set the model's class count (`num_labels`/`num_classes`) to the dataset's number of classes."
            ),
            zh: format!(
                "有标签（{n}）超出了 loss 的类别范围 0..C-1：把标签（或 mask 像素值）重新映射成从 0 开始的类别下标，或者把模型的类别数（`num_labels`/`num_classes`）设成数据集真实的类别数。"
            ),
        });
    }
    None
}

/// A process group without a collective a library calls: torch older than the library.
fn collective_missing(r: &Raised<'_>) -> Option<Remedy> {
    let Raised { tb, .. } = r;
    if let Some(c) = r.caps(&PG_UNSUPPORTED) {
        let (backend, op) = (&c[1], &c[2]);
        // (torch is a dispatcher, never the caller named here.)
        let caller = caller_package(tb).unwrap_or_else(|| "the library calling it".into());
        return Some(Remedy {
            en: format!(
                "Upgrade torch to a release whose {backend} process group has `{op}` (the one {caller} is written for, from its requirements), or pin {caller} to a release written for this torch: the installed torch is older than {caller} expects."
            ),
            zh: format!(
                "把 torch 升级到 {backend} 进程组支持 `{op}` 的版本（{caller} 的 requirements 里写的那个），或者把 {caller} 固定到适配当前 torch 的版本：安装的 torch 比 {caller} 需要的旧。"
            ),
        });
    }
    None
}

/// Per-rank state the checkpoint lacks: the world size changed since it was saved. Model
/// and optimizer state reshard; a state kept per rank (a dataloader's position) does not.
fn per_rank_state_missing(r: &Raised<'_>) -> Option<Remedy> {
    if let Some(c) = r.caps(&PER_RANK_KEY) {
        let (owner, kind, n) = (c[1].trim_end_matches('.'), &c[2], &c[3]);
        let what = if owner.is_empty() {
            "per-rank state".to_string()
        } else {
            format!("`{owner}` state")
        };
        return Some(Remedy {
            en: format!(
                "Resume with the same data-parallel size the checkpoint was saved with, or leave its {what} out of the load (it is kept per rank and does not reshard; torchtitan: `checkpoint.exclude_from_loading`): the checkpoint has no `{kind}_{n}` entry, so it was saved by fewer ranks than this run has."
            ),
            zh: format!(
                "用保存 checkpoint 时相同的数据并行规模恢复，或者加载时跳过其中的 {what}（它按 rank 保存，不能重新切分；torchtitan 用 `checkpoint.exclude_from_loading`）：checkpoint 里没有 `{kind}_{n}` 这一项，说明保存它的 rank 比这次运行的少。"
            ),
        });
    }
    None
}

/// A library that says, where it raises, that the feature is not there yet: the installed
/// release predates it. (A NotImplementedError of a method the user's subclass was meant
/// to override says nothing of the sort.)
fn not_implemented_yet(r: &Raised<'_>) -> Option<Remedy> {
    let Raised {
        tb, msg, inner_lib, ..
    } = r;
    if tb.ty == "NotImplementedError"
        && r.caps(&NOT_YET).is_some()
        && let Some(lib) = inner_lib.as_deref()
    {
        return Some(Remedy {
            en: format!(
                "Upgrade {lib} to a release that implements this, or avoid the combination that reaches it: the installed {lib} says so itself where it raises (`{}`).",
                clip(msg)
            ),
            zh: format!(
                "把 {lib} 升级到已经实现了这个功能的版本，或者避开走到这里的那种组合：安装的 {lib} 在抛出异常的地方自己就是这么说的（`{}`）。",
                clip(msg)
            ),
        });
    }
    None
}

/// An id past an embedding table: most often tokens added to the tokenizer and not to the
/// model, else a tokenizer of another model, else positions past the model's length.
fn id_past_table(r: &Raised<'_>) -> Option<Remedy> {
    let Raised { tb, .. } = r;
    if tb.ty == "IndexError" && r.caps(&LOOKUP_OOB).is_some() {
        return Some(Remedy {
            en: "An id is at or past the size of the embedding table it indexes: if tokens were added to the tokenizer, call `model.resize_token_embeddings(len(tokenizer))` after adding them; otherwise check that the tokenizer is the model's own (`len(tokenizer)` against `config.vocab_size`) and that inputs are cut to `max_position_embeddings`.".into(),
            zh: "某个 id 等于或超过了它所索引的 embedding 表的大小：如果往 tokenizer 里加过 token，加完之后调用 `model.resize_token_embeddings(len(tokenizer))`；否则检查 tokenizer 是不是这个模型自己的（比较 `len(tokenizer)` 和 `config.vocab_size`），以及输入有没有截断到 `max_position_embeddings` 以内。".into(),
        });
    }
    None
}

/// The model's output and the targets disagree on the batch size.
fn batch_sizes_differ(r: &Raised<'_>) -> Option<Remedy> {
    if let Some(c) = r.caps(&BATCH_MISMATCH) {
        let (i, t) = (&c[1], &c[2]);
        return Some(Remedy {
            en: format!(
                "The model's output and the targets have different batch sizes ({i} vs {t}): when it fails on the last, incomplete batch, reshape with the real batch size (`labels.shape[0]`, not the configured one) or pass `drop_last=True` to the DataLoader; otherwise a `view`/`reshape` before the loss folds the wrong dimension."
            ),
            zh: format!(
                "模型输出和标签的 batch 大小不一致（{i} 对 {t}）：如果是在最后一个不完整的 batch 上出错，就按真实的 batch 大小（`labels.shape[0]`，而不是配置里的值）来 reshape，或者给 DataLoader 传 `drop_last=True`；否则是 loss 之前的 `view`/`reshape` 折错了维度。"
            ),
        });
    }
    None
}

/// Operands on two devices: two GPUs, or a tensor left behind on another device.
fn two_devices(r: &Raised<'_>) -> Option<Remedy> {
    if let Some(c) = r.caps(&TWO_DEVICES) {
        let (x, y) = (&c[1], &c[2]);
        let gpus = x.starts_with("cuda") && y.starts_with("cuda");
        return Some(if gpus {
            Remedy {
                en: format!(
                    "The operands sit on two GPUs ({x} and {y}): run the process on one GPU (`CUDA_VISIBLE_DEVICES=0`, or one process per GPU with torchrun), or, when the model is split over GPUs on purpose (`device_map=\"auto\"`), move the inputs to the device of the layer that uses them (`x.to(layer.weight.device)`) or update the model code that concatenates them."
                ),
                zh: format!(
                    "参与运算的张量在两张 GPU 上（{x} 和 {y}）：让进程只用一张卡（`CUDA_VISIBLE_DEVICES=0`，或者用 torchrun 每卡一个进程）；如果是有意把模型切到多张卡上（`device_map=\"auto\"`），就把输入移到使用它的那一层所在的设备（`x.to(layer.weight.device)`），或者更新做拼接的模型代码。"
                ),
            }
        } else {
            Remedy {
                en: format!(
                    "A tensor was left on another device ({x} and {y}): move it to the model's device before the call (`t.to(device)` / `.cuda()` on the inputs, masks and labels built at the line below)."
                ),
                zh: format!(
                    "有张量留在了另一个设备上（{x} 和 {y}）：在调用之前把它移到模型所在的设备（对下面那一行构造的输入、mask、标签调用 `t.to(device)` / `.cuda()`）。"
                ),
            }
        });
    }
    None
}

/// An object that pickle cannot serialise on its way to worker processes (datasets' `map`
/// with `num_proc`, a DataLoader's workers, a multiprocessing pool): the step is one process,
/// or building the object inside the worker.
fn cannot_pickle(r: &Raised<'_>) -> Option<Remedy> {
    let Raised { tb, .. } = r;
    if let Some(c) = r.caps(&CANNOT_PICKLE)
        && tb.frames.iter().any(|f| {
            let p = f.path.to_ascii_lowercase();
            [
                "multiprocess",
                "dataloader",
                "arrow_dataset",
                "reduction.py",
                "popen_spawn",
            ]
            .iter()
            .any(|w| p.contains(w))
        })
    {
        let obj = c.get(1).or(c.get(2)).map_or("", |x| x.as_str()).trim();
        return Some(Remedy {
            en: format!(
                "Run this step in one process (no `num_proc` or `num_proc=1` for datasets' `map`, `preprocessing_num_workers=1` in LLaMA-Factory, `num_workers=0` for a DataLoader), or build the `{obj}` object inside the worker function instead of passing it in: it cannot be pickled, and worker processes receive their arguments pickled."
            ),
            zh: format!(
                "让这一步在单个进程里跑（datasets 的 `map` 不传 `num_proc` 或设 `num_proc=1`，LLaMA-Factory 设 `preprocessing_num_workers=1`，DataLoader 设 `num_workers=0`），或者在 worker 函数内部创建 `{obj}` 对象而不是把它传进去：它无法被 pickle，而传给 worker 进程的参数都要先 pickle。"
            ),
        });
    }
    None
}

/// No input of the loss carries gradients.
fn no_gradient(r: &Raised<'_>) -> Option<Remedy> {
    let Raised { msg, .. } = r;
    if msg.contains("does not require grad and does not have a grad_fn") {
        return Some(Remedy {
            en: "No input of the loss carries gradients: with gradient checkpointing on a frozen base model (LoRA/PEFT) call `model.enable_input_require_grads()` before training (or use non-reentrant checkpointing); otherwise something detached the graph (`torch.no_grad()`, `.detach()`, every parameter frozen).".into(),
            zh: "loss 的输入都不带梯度：在冻结的基座模型上（LoRA/PEFT）开了 gradient checkpointing 时，训练前调用 `model.enable_input_require_grads()`（或者用 non-reentrant checkpointing）；否则是有东西切断了计算图（`torch.no_grad()`、`.detach()`、所有参数都被冻结）。".into(),
        });
    }
    None
}

/// A library's internal assertion failed: its bug, not the user's.
fn internal_assert(r: &Raised<'_>) -> Option<Remedy> {
    let Raised {
        tb, msg, inner_lib, ..
    } = r;
    if msg.contains("INTERNAL ASSERT FAILED") {
        let owner = inner_lib.clone().or_else(|| {
            tb.frames
                .last()
                .and_then(|f| f.path.split('/').find(|s| !s.is_empty() && *s != "home"))
                .map(str::to_string)
        });
        let owner = owner.unwrap_or_else(|| "the library".into());
        return Some(Remedy {
            en: format!(
                "An internal check of {owner} failed (a bug in it, not in your code): update {owner} to a release with the upstream fix (or apply that fix), or avoid the input shape it rejects."
            ),
            zh: format!(
                "{owner} 内部的检查没通过（这是它的 bug，不是你的代码）：把 {owner} 升级到带上游修复的版本（或者打上那个修复），或者避开它拒绝的输入形状。"
            ),
        });
    }
    None
}

/// A KeyError raised by a library's name registry (`transformers/models/auto/…`): the
/// installed release does not know the name yet.
fn unknown_registry_name(r: &Raised<'_>) -> Option<Remedy> {
    let Raised {
        tb, msg, inner_lib, ..
    } = r;
    if tb.ty == "KeyError"
        && let Some(f) = tb.frames.last()
        && (f.path.contains("/auto/") || f.path.contains("\\auto\\"))
        && let Some(lib) = inner_lib.clone()
    {
        let key = msg.trim();
        return Some(Remedy {
            en: format!(
                "The installed {lib} does not know {key} (its registry has no such name yet): upgrade {lib} in the environment that actually runs the script (`python -m pip install -U {lib}` with that interpreter; `which python` shows which one)."
            ),
            zh: format!(
                "安装的 {lib} 不认识 {key}（它的注册表里还没有这个名字）：在真正运行脚本的那个环境里升级 {lib}（用那个解释器执行 `python -m pip install -U {lib}`；`which python` 可以看到是哪个）。"
            ),
        });
    }
    None
}

/// A SyntaxError in generated code (a package's compiled cache), not in the user's script.
fn generated_syntax_error(r: &Raised<'_>) -> Option<Remedy> {
    let Raised { tb, .. } = r;
    if tb.ty == "SyntaxError"
        && let Some(f) = tb.frames.last()
        && f.path.to_ascii_lowercase().contains("cache")
    {
        let dir = f
            .path
            .rsplit_once(['/', '\\'])
            .map_or(f.path.as_str(), |(d, _)| d);
        return Some(Remedy {
            en: format!(
                "The syntax error is in generated code (`{dir}`), not in your script: delete that cache folder and upgrade the package that generates it (its companion packages too), so it is regenerated by a matching release."
            ),
            zh: format!(
                "语法错误出在自动生成的代码里（`{dir}`），不在你的脚本里：删掉这个缓存目录，并升级生成它的包（连同配套的包），让版本匹配的新版本重新生成。"
            ),
        });
    }
    None
}

/// An API the installed library does not have: the code and the library are from
/// different releases.
fn api_skew(r: &Raised<'_>) -> Option<Remedy> {
    let Raised { tb, inner_lib, .. } = r;
    let api = if let Some(c) = r.caps(&CANNOT_IMPORT) {
        let lib = c[2].split('.').next().unwrap_or(&c[2]).to_string();
        Some((
            format!("`{}` from `{}`", &c[1], &c[2]),
            Some(lib),
            Skew::Code,
        ))
    } else if let Some(c) = r.caps(&UNEXPECTED_KW) {
        // TypeError's own wording, also when a wrapper re-raises it (`RuntimeError: Worker
        // failure: _write_item() missing 1 required positional argument: …`).
        // The call site inside the library: the library calls code (a model's remote code, a
        // plugin) written for its older API.
        let what = match (c.get(2), c.get(3)) {
            (Some(k), _) => format!("`{}()` rejects `{}`", &c[1], k.as_str()),
            (_, Some(k)) => format!("`{}()` wants `{}`", &c[1], k.as_str()),
            _ => format!("`{}()` takes other arguments", &c[1]),
        };
        // Who passed the arguments: another installed package calling into the library (its
        // frames just outside the library's) is newer than the library it calls.
        let skew = match (&inner_lib, caller_package(tb)) {
            (Some(_), Some(a)) => Skew::From(a),
            (Some(_), None) => Skew::Own,
            (None, _) => Skew::Code,
        };
        Some((what, inner_lib.clone(), skew))
    } else if tb.ty == "AttributeError"
        && let Some(c) = r.caps(&NO_ATTR)
        && !matches!(
            c.get(2).map(|x| x.as_str()),
            Some("NoneType" | "dict" | "list" | "str" | "tuple" | "int" | "float")
        )
    {
        let lib = c
            .get(1)
            .map(|x| x.as_str().split('.').next().unwrap_or("").to_string())
            .or_else(|| inner_lib.clone());
        let owner = c.get(1).or(c.get(2)).map_or("", |x| x.as_str());
        Some((format!("`{owner}` has no `{}`", &c[3]), lib, Skew::Code))
    } else if let Some(c) = r.caps(&PRIVATE_MODULE) {
        // A package's private module is gone: its newer release dropped what another
        // package still imports.
        let (pkg, module) = (&c[1], &c[2]);
        Some((
            format!("`{pkg}.{module}` no longer exists"),
            Some(pkg.to_string()),
            Skew::Removed,
        ))
    } else {
        None
    };
    if let Some((what, lib, skew)) = api {
        let lib = lib.filter(|l| !l.is_empty() && l != "builtins");
        let name = lib.clone().unwrap_or_else(|| "the library".into());
        if let Skew::From(caller) = &skew {
            return Some(Remedy {
                en: format!(
                    "{caller} passes {name} an argument this {name} does not know ({what}): the installed {name} is older than {caller} expects — upgrade {name} to the release {caller} supports (its requirements pin, or an extra such as `pip install '{caller}[{name}]'`), or pin {caller} to a release written for this {name}."
                ),
                zh: format!(
                    "{caller} 传给 {name} 的参数是这个 {name} 不认识的（{what}）：安装的 {name} 比 {caller} 需要的旧——把 {name} 升级到 {caller} 支持的版本（它 requirements 里的版本，或者 `pip install '{caller}[{name}]'` 这样的 extra），或者把 {caller} 固定到适配这个 {name} 的版本。"
                ),
            });
        }
        if let Skew::Removed = skew {
            // The package whose import failed: the innermost installed package that is not
            // the one missing the module (nor the import machinery).
            let importer = tb.frames.iter().rev().find_map(|f| {
                package_of(f).filter(|p| p != &name && !DISPATCHERS.contains(&p.as_str()))
            });
            let who = importer.unwrap_or_else(|| "the package that imports it".into());
            let (last, last_zh) = if what.starts_with("`torch._six`") {
                (
                    " (torch 1.13.1 for torch._six, which torch 2.0 removed)",
                    "（torch._six 对应 torch 1.13.1，torch 2.0 删掉了它）",
                )
            } else {
                ("", "")
            };
            return Some(Remedy {
                en: format!(
                    "Upgrade {who} to a release written for this {name}, or pin {name} to the last release that still has it{last}: {what} in this {name}, and {who} still imports it."
                ),
                zh: format!(
                    "把 {who} 升级到适配这个 {name} 的版本，或者把 {name} 固定到还保留它的最后一个版本{last_zh}：这个 {name} 里 {what}，而 {who} 仍在导入它。"
                ),
            });
        }
        return Some(if let Skew::Own = skew {
            Remedy {
                en: format!(
                    "{name} calls code written for an older {name} ({what}): pin {name} to the release that code was written for (the previous one, or the project's requirements pin), or update the calling model code to the new API."
                ),
                zh: format!(
                    "{name} 调用的代码是按更老的 {name} 写的（{what}）：把 {name} 固定到那份代码对应的版本（上一个版本，或者项目 requirements 里的版本），或者把调用它的模型代码更新到新接口。"
                ),
            }
        } else {
            // Unnamed, the library reads "the library" in English and "库" in Chinese.
            let the = lib
                .as_deref()
                .map_or_else(|| "the library".to_string(), |l| format!("the {l}"));
            let zh_name = lib.as_deref().unwrap_or("库");
            Remedy {
                en: format!(
                    "The code and the installed {} are from different releases ({what}): install {the} version the code was written for (the project's requirements pin) — upgrade {name} if the code is newer, or pin {name} to an older release if the name was removed.",
                    lib.as_deref().unwrap_or("library")
                ),
                zh: format!(
                    "代码和安装的 {zh_name} 不是同一个版本（{what}）：安装代码对应的 {zh_name} 版本（项目 requirements 里的版本）——代码较新就升级 {zh_name}，这个名字已被删除就把 {zh_name} 固定到更老的版本。"
                ),
            }
        });
    }
    None
}

/// A frame that computes an RL reward: a reward function called by the trainer (TRL's and
/// Open-R1's `*_reward` functions, verl's `compute_score`, a `reward_fn`/`reward_func`), or
/// the trainer's line that calls one (`reward_func(…)`).
fn reward_frame(f: &Frame) -> bool {
    let func = f.func.to_ascii_lowercase();
    func.ends_with("_reward")
        || matches!(
            func.as_str(),
            "reward_func" | "reward_fn" | "compute_score" | "compute_reward" | "reward_function"
        )
        || f.code
            .as_deref()
            .is_some_and(|c| c.contains("reward_func(") || c.contains("reward_fn("))
}

/// An exception raised inside a reward function, below the trainer's call to it: one
/// completion the reward cannot judge (a verifier or parser raising on odd output) ends the
/// whole run, so the step is the reward catching it, whichever library raised (T2823: sympy
/// under math-verify under Open-R1's accuracy reward). Out-of-memory errors are not a
/// reward's to catch.
fn reward_raised(r: &Raised<'_>) -> Option<Remedy> {
    let Raised { tb, msg, lower, .. } = r;
    if lower.contains("out of memory") || tb.ty.contains("OutOfMemory") {
        return None;
    }
    // The innermost reward frame: the reward itself, or the trainer's line calling it.
    let f = tb.frames.iter().rev().find(|f| reward_frame(f))?;
    let name = if f.func.to_ascii_lowercase().ends_with("_reward") {
        format!("the reward function `{}`", f.func)
    } else {
        "the reward function".to_string()
    };
    Some(Remedy {
        en: format!(
            "Catch the exception inside {name}: wrap its verification in try/except and score a completion it cannot judge as 0 (log the sample), so one odd completion does not end the run — `{}: {}` was raised under the reward. Then update the library that raised it if it is a known bug.",
            tb.ty,
            clip(msg)
        ),
        zh: format!(
            "在 {name} 里捕获这个异常：把校验包在 try/except 里，判不了的回答记 0 分（并记下这个样本），别让一条奇怪的回答终止整个训练——`{}: {}` 是在奖励函数下面抛出的。之后如果是已知 bug，再升级抛出它的那个库。",
            tb.ty,
            clip(msg)
        ),
    })
}

/// Exceptions that, raised by an installed library's own innermost frames, say its code failed
/// rather than that it refused what it was given: a call or attribute that does not fit
/// (`TypeError`, `AttributeError`), a broken invariant (a bare `assert`, a missing key), a path
/// the library has not implemented for this platform or caller, a state it cannot go on from
/// (`RuntimeError` raised by its Python code; torch's own are left to their rules). Not
/// `ValueError`: a library refusing a value it was given points at the caller.
const OWN_CODE_FAILED: &[&str] = &[
    "TypeError",
    "AttributeError",
    "AssertionError",
    "KeyError",
    "NotImplementedError",
    "RuntimeError",
];

/// An exception of [`OWN_CODE_FAILED`] raised inside a library's own frames (its two innermost):
/// the library's own code failed (a regression or a version clash with its caller), so the
/// step is that library's release.
fn library_own_code(r: &Raised<'_>) -> Option<Remedy> {
    let Raised {
        tb, msg, inner_lib, ..
    } = r;
    if OWN_CODE_FAILED.contains(&tb.ty.as_str())
        && tb.frames.len() >= 2
        && let Some(lib) = library_of(tb)
        && inner_lib.as_deref() == Some(lib.as_str())
        && lib != "torch"
        && tb
            .frames
            .iter()
            .rev()
            .take(2)
            .all(|f| internal_frame(&f.path))
    {
        return Some(Remedy {
            en: format!(
                "Update {lib} to a release with the fix, or pin {lib} to the release that worked before: its own code failed (`{}: {}` inside it), which is usually a regression or a version clash between {lib} and the framework calling it.",
                tb.ty,
                clip(msg)
            ),
            zh: format!(
                "把 {lib} 升级到带修复的版本，或者固定到之前能用的版本：{lib} 自己的代码出错了（其内部的 `{}: {}`），通常是回归问题，或 {lib} 与调用它的框架版本不匹配。",
                tb.ty,
                clip(msg)
            ),
        });
    }
    None
}

/// The package a path outside the installed packages belongs to when it sits in a source
/// checkout named for it: a directory under a repository directory whose name holds the
/// package's (`LLaMA-Factory/src/llamafactory`, `ms-swift/swift`, `Megatron-LM/megatron`,
/// `torchtitan/torchtitan`). Returns the package name and its directory.
fn checkout_of(path: &str) -> Option<(String, String)> {
    let mut segs: Vec<&str> = path.split(['/', '\\']).collect();
    segs.pop(); // the file
    let norm = |s: &str| -> String {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    (1..segs.len()).find_map(|i| {
        let pkg = segs[i];
        let repo = match segs[i - 1] {
            "src" if i >= 2 => segs[i - 2],
            r => r,
        };
        let (p, r) = (norm(pkg), norm(repo));
        let named = p.len() >= 3
            && r.contains(&p)
            && pkg.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        named.then(|| (pkg.to_string(), segs[..=i].join("/")))
    })
}

/// The framework whose source checkout (`checkout_of`) holds every frame of the traceback
/// outside the installed packages, the innermost included: the script that ran is the
/// framework's own entry point and no code of the user's is on the stack.
fn checkout_package(tb: &Traceback) -> Option<(String, String)> {
    let own: Vec<&Frame> = tb
        .frames
        .iter()
        .filter(|f| !internal_frame(&f.path))
        .collect();
    let innermost_own = tb.frames.last().is_some_and(|f| !internal_frame(&f.path));
    if own.len() < 2 || !innermost_own {
        return None;
    }
    let first = checkout_of(&own[0].path)?;
    own.iter()
        .all(|f| checkout_of(&f.path).as_ref() == Some(&first))
        .then_some(first)
}

/// torch's own distributed-checkpoint and FSDP state-dict code, which plans, gathers and
/// matches a sharded checkpoint's entries.
const TORCH_CHECKPOINT_MACHINERY: &[&str] =
    &["/torch/distributed/checkpoint/", "/torch/distributed/fsdp/"];

/// An exception raised inside torch's distributed-checkpoint or FSDP state-dict machinery (its
/// innermost frame there) while a training framework drove the save or load (the nearest frame
/// outside torch is an installed package or a framework's checkout, not a script of the
/// user's): that machinery reads the plan the framework built, not the bytes of a file, so
/// a missing key, an assertion or a wrong type there is the framework and this torch
/// disagreeing about the checkpoint's layout: a version pair, not a damaged file.
fn checkpoint_machinery_skew(r: &Raised<'_>) -> Option<Remedy> {
    let Raised { tb, msg, .. } = r;
    let in_machinery = |f: &Frame| {
        let p = f.path.replace('\\', "/");
        TORCH_CHECKPOINT_MACHINERY.iter().any(|m| p.contains(m))
    };
    let inner = tb.frames.last()?;
    if !in_machinery(inner) {
        return None;
    }
    let caller = tb
        .frames
        .iter()
        .rev()
        .find(|f| package_of(f).as_deref() != Some("torch"))?;
    let fw = package_of(caller)
        .filter(|p| !DISPATCHERS.contains(&p.as_str()))
        .or_else(|| checkout_of(&caller.path).map(|(p, _)| p))?;
    Some(Remedy {
        en: format!(
            "Pin torch to the release {fw} is written for (its requirements or release notes name it), or update {fw} to a release that supports this torch: the failure is inside torch's own checkpoint machinery as {fw} drives it (`{}: {}`), which plans and matches the checkpoint's entries rather than reading a file's bytes, so the two disagree about the layout; the checkpoint itself is most likely whole.",
            tb.ty,
            clip(msg)
        ),
        zh: format!(
            "把 torch 固定到 {fw} 适配的版本（它的 requirements 或发布说明里写着），或者把 {fw} 升级到支持当前 torch 的版本：出错的是 {fw} 调用的 torch 自己的 checkpoint 逻辑（`{}: {}`），它处理的是 checkpoint 条目的规划和匹配，不是文件的字节，说明两者对 checkpoint 的布局理解不一致；checkpoint 文件本身多半是完整的。",
            tb.ty,
            clip(msg)
        ),
    })
}

/// An exception raised in a framework's own code run from its source checkout (`checkout_package`):
/// no frame of the user's is on the stack, so the framework failed on its own (a regression, or a
/// clash with the libraries installed beside it), and its newer code or the release that worked is
/// the step, not a line to fix.
fn checkout_own_code(r: &Raised<'_>) -> Option<Remedy> {
    let Raised { tb, msg, .. } = r;
    if !(OWN_CODE_FAILED.contains(&tb.ty.as_str()) || tb.ty == "ValueError") {
        return None;
    }
    let (pkg, dir) = checkout_package(tb)?;
    // A project of the user's laid out as `repo/pkg/` looks the same by its paths: the remedy
    // names the raising line for that reading too.
    let inner = tb.frames.last()?;
    Some(Remedy {
        en: format!(
            "Update {pkg} to its latest code (`git pull` in `{dir}`'s checkout and reinstall it, e.g. `pip install -e .`), or check out the release that worked: every frame outside the installed packages is {pkg}'s own code run from that checkout, so {pkg} itself failed (`{}: {}`), which a newer commit often fixes (search its issues for the message). If `{dir}` is your own project rather than a clone of someone's framework, the error is raised at `{}`, line {}: fix it there.",
            tb.ty,
            clip(msg),
            inner.path,
            inner.src_line
        ),
        zh: format!(
            "把 {pkg} 更新到最新代码（在 `{dir}` 所在的仓库里 `git pull` 再重新安装，比如 `pip install -e .`），或者切回之前能用的版本：已安装的包之外的每一个栈帧都是从这个源码目录运行的 {pkg} 自己的代码，所以是 {pkg} 本身出错了（`{}: {}`），新的提交往往已经修复（用报错信息搜一下它的 issue）。如果 `{dir}` 是你自己的项目而不是克隆来的框架，错误抛出在 `{}` 第 {} 行：在那里修。",
            tb.ty,
            clip(msg),
            inner.path,
            inner.src_line
        ),
    })
}

fn clip(s: &str) -> String {
    let s = s.trim();
    if s.chars().count() <= 160 {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(160).collect::<String>())
    }
}

fn evidence(a: &Analysis, l: &TailLine, why: Option<Text>) -> Evidence {
    let (attr, _) = prefix::peel(&l.text);
    let path = a.inputs.get(l.input).map_or("", |i| i.path.as_str());
    let base = prefix::from_path(path);
    Evidence {
        path: path.to_string(),
        line: Some(l.line),
        rank: attr.rank.or(base.rank),
        host: attr.host.or(base.host),
        time: attr.time,
        text: l.text.clone(),
        why,
    }
}

/// The finding the run's tracebacks support, when there is one: the most specific reading
/// (the last traceback among equals, the one nearest the end).
fn finding(a: &Analysis) -> Option<(Finding, Option<Remedy>)> {
    // Only tracebacks the run died of: not one survived (a clean end after it, a clean exit).
    let deaths = super::verdict::death_signs(a);
    let died = |tb: &Traceback| {
        let l = &a.error_tail[tb.at];
        let path = a.inputs.get(l.input).map(|i| i.path.as_str());
        deaths
            .iter()
            .any(|d| Some(d.path.as_str()) == path && d.line == l.line)
    };
    let tbs: Vec<Traceback> = tracebacks(a).into_iter().filter(died).collect();
    // Among equally specific readings, one whose message names its remedy (a chained
    // exception's cause often does, the wrapper raised from it does not), then the latest.
    let (tb, r) = tbs
        .iter()
        .map(|tb| (tb, read(tb)))
        .max_by_key(|(tb, r)| (r.rank, r.remedy.is_some(), tb.at))?;
    let exc = &a.error_tail[tb.at];
    let cure = r.remedy.clone();
    let mut ev = vec![evidence(a, exc, Some(r.why.clone()))];
    if let Some(f) = tb.frames.last() {
        ev.push(evidence(a, &a.error_tail[f.at], None));
    }
    let origin = Origin {
        rank: ev[0].rank,
        host: ev[0].host.clone(),
        pid: None,
        time: ev[0].time.clone(),
    };
    let f = Finding {
        rule: RULE.into(),
        code: CODE.into(),
        category: r.category,
        action: r.category.action(),
        title: text!("Uncaught {why}", "未捕获的异常：{why}"; why = r.why),
        confidence: r.confidence,
        strength: r.confidence,
        symptom_of: None,
        origin,
        evidence: ev,
        against: Vec::new(),
        fix: r.fix,
        role: Role::Root,
        merged_rules: Vec::new(),
        score: vec![Contribution {
            what: format!(
                "no rule matched; the traceback says {} ({})",
                r.category, r.why.en
            ),
            weight: r.confidence,
        }],
        more_lines: 0,
        next_time: Some(Text::new(
            "Keep the whole traceback (every frame) in the log: the tail kept here is bounded.",
            "在日志里保留完整的 traceback（每一帧）：这里只保留了有限的结尾部分。",
        )),
        alternatives: None,
        affected_ranks: Vec::new(),
    };
    Some((f, cure))
}

/// The remedy `first`, then a finding's own fix `fix` as the general advice. Its Chinese only
/// where both have one: a Chinese fix missing half its content would mislead.
fn general(first: &Text, fix: &Text) -> Text {
    Text {
        en: format!("{} In general: {}", first.en, fix.en),
        zh: match (first.zh(), fix.zh()) {
            (Some(a), Some(b)) => format!("{a}一般建议：{b}"),
            _ => String::new(),
        },
    }
}

/// Categories whose rules catch any exception: a traceback can say more than they do.
const GENERIC: &[Category] = &[Category::PythonException, Category::Other];

/// The rules that report an exception without knowing it: their fix is a template, which the
/// traceback's reading sharpens. A rule that names a specific failure of a generic category
/// (DDP's unused parameters, a shape mismatch) has its own remedy, which stays first.
const FALLBACK_RULES: &[&str] = &["uncaught-python-exception", super::second_tier::RULE];

/// When no specific rule explains the failure (only generic ones, or none), read the run's
/// tracebacks: a more specific category goes first as its own finding (the generic one stays
/// as the alternative); the same category sharpens the generic finding's fix with where the
/// exception was raised.
pub fn apply(a: &Analysis, findings: &mut Vec<Finding>) {
    let root = |f: &Finding| f.symptom_of.is_none() && f.confidence >= super::RULED_OUT_BELOW;
    if findings
        .iter()
        .any(|f| root(f) && !GENERIC.contains(&f.category))
    {
        return;
    }
    let Some((tb, cure)) = finding(a) else { return };
    // The remedy the exception names leads every generic finding's fix (an exception the
    // reading files under `other` is still what the uncaught-exception rule reports); their
    // own template follows, labelled as the general advice it is.
    let fallback = |f: &Finding| FALLBACK_RULES.contains(&f.rule.as_str());
    if let Some(c) = &cure {
        for f in findings
            .iter_mut()
            .filter(|f| root(f) && f.category != tb.category && fallback(f))
        {
            f.fix = general(c, &f.fix);
        }
    }
    match findings
        .iter_mut()
        .find(|f| root(f) && f.category == tb.category)
    {
        // A specific rule of the reading's category already says more than where it was raised.
        Some(same) if !fallback(same) => {}
        Some(same) => {
            for e in tb.evidence.into_iter().skip(1) {
                if !same
                    .evidence
                    .iter()
                    .any(|x| x.text == e.text && x.path == e.path)
                {
                    same.evidence.push(e);
                }
            }
            same.fix = general(&tb.fix, &same.fix);
        }
        // Where it goes among the findings is `rank`'s decision, made once in `correlate`.
        None => findings.push(tb),
    }
}
