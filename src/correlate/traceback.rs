//! Tracebacks understood, not just matched: when no rule explains a failure, the innermost
//! frames and the exception at the end of each Python traceback in the error tail say what
//! kind of failure it was — the disk (`[Errno 28]`, `file write failed`) or shared memory when
//! the message implies it, a checkpoint being loaded or saved (`torch.load`, `load_state_dict`,
//! safetensors, DeepSpeed's `load_checkpoint`, `PytorchStreamReader/Writer`), a missing file or
//! name while a dataset, model or config is loaded, an exception in the user's own code, or one
//! raised inside a library. The finding it makes (`traceback-classified`, TW9903) is weaker than
//! any specific rule's and says why it chose its category. Works on the analysis as data; it
//! never reads files or formats output. The traceback line shapes are written here once and
//! shared with the fingerprint.

use super::{Contribution, Evidence, Finding, Origin};
use crate::analyze::Analysis;
use crate::errtail::TailLine;
use crate::model::{Category, Phase};
use crate::rules::Role;
use crate::sources::prefix;
use regex::Regex;
use std::sync::LazyLock;

/// The engine-made finding's name and code.
pub const RULE: &str = "traceback-classified";
pub const CODE: &str = "TW9903";

/// What `rules explain traceback-classified` says.
pub const WHAT: &str = "No rule explains the failure, but a Python traceback does: its exception and innermost \
     frames decide the category — `[Errno 28]`/`file write failed` is the disk (shared memory \
     when /dev/shm or a SemLock is named), an error inside checkpoint loading or saving is \
     checkpoint_error, a missing file or name while a dataset, model or config loads is \
     config_error, an exception in your own code is python_exception, one raised inside a \
     library is other. Weaker than any specific rule; the score says why.";
/// `WHAT` in Chinese.
pub const WHAT_ZH: &str = "没有规则能解释这次失败，但 Python traceback 可以：由异常和最内层的栈帧决定类别——\
     `[Errno 28]`/`file write failed` 是磁盘问题（提到 /dev/shm 或 SemLock 时是共享内存），\
     加载或保存 checkpoint 时出错是 checkpoint_error，加载数据集、模型或配置时缺文件或名称是 \
     config_error，你自己代码里的异常是 python_exception，库内部抛出的是 other。\
     比任何具体规则都弱；分数说明了原因。";

/// The exception line that ends a traceback: `pkg.mod.SomeError: message`.
pub static EXCEPTION: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"^(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit|Failure|Fault))(?::\s*(.*))?$",
    )
    .ok()
});

/// A frame line: `File "path", line N, in func`.
pub static FRAME: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#"^File "([^"]+)", line (\d+), in (\S+)"#).ok());

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

/// Every traceback of the run's own logs in the error tail, in order.
fn tracebacks(a: &Analysis) -> Vec<Traceback> {
    let (Some(exc_re), Some(frame_re)) = (EXCEPTION.as_ref(), FRAME.as_ref()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut frames: Vec<Frame> = Vec::new();
    let mut input = usize::MAX;
    for (at, l) in a.error_tail.iter().enumerate() {
        if l.input != input {
            frames.clear();
            input = l.input;
        }
        let Some(info) = a.inputs.get(l.input) else {
            continue;
        };
        if info.phase == Phase::Before || !info.kind.is_scanned() {
            continue;
        }
        let t = bare(&l.text);
        if t.starts_with("Traceback (most recent call last)") {
            frames.clear();
        } else if let Some(c) = frame_re.captures(t) {
            frames.push(Frame {
                path: c[1].to_string(),
                src_line: c[2].parse().unwrap_or(0),
                func: c[3].to_string(),
                at,
            });
        } else if let Some(c) = exc_re.captures(t) {
            let ty = c[1].to_string();
            if !WRAPPERS.contains(&ty.as_str()) && !frames.is_empty() {
                out.push(Traceback {
                    frames: std::mem::take(&mut frames),
                    ty,
                    msg: c.get(2).map_or("", |m| m.as_str()).to_string(),
                    at,
                });
            }
            frames.clear();
        }
    }
    out
}

/// What a traceback says: the category, why, how sure, and what to do.
struct Reading {
    category: Category,
    why: String,
    /// `why` and `fix` in Chinese (`report` picks the language).
    why_zh: String,
    confidence: f64,
    fix: String,
    fix_zh: String,
    /// Higher is more specific: the best reading of a run wins.
    rank: u8,
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
    let msg = tb.msg.as_str();
    let lower = msg.to_ascii_lowercase();
    let inner = tb.frames.last().expect("a traceback has frames");
    let place = format!(
        "{}:{} in {}",
        short(&inner.path),
        inner.src_line,
        inner.func
    );
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
        return if shm {
            Reading {
                category: Category::ShmExhausted,
                why: format!("{}: the write that failed is to shared memory ({place})", tb.ty),
                why_zh: format!("{}：写失败的目标是共享内存（{place}）", tb.ty),
                confidence: 0.55,
                fix: "Give the container a larger /dev/shm (`docker run --shm-size=8g` or `--ipc=host`; on Kubernetes an `emptyDir` with `medium: Memory`), or lower the DataLoader's `num_workers`.".into(),
                fix_zh: "给容器更大的 /dev/shm（`docker run --shm-size=8g` 或 `--ipc=host`；Kubernetes 上挂一个 `medium: Memory` 的 `emptyDir`），或者调小 DataLoader 的 `num_workers`。".into(),
                rank: 5,
            }
        } else {
            Reading {
                category: Category::DiskFull,
                why: format!("{}: no space left on the device written to ({place})", tb.ty),
                why_zh: format!("{}：写入的设备没有剩余空间了（{place}）", tb.ty),
                confidence: 0.55,
                fix: "Free space on the filesystem the run writes to (`df -h` on the output and checkpoint directory, and on $TMPDIR and the HF cache), point the output at a larger one, or keep fewer checkpoints (`save_total_limit`).".into(),
                fix_zh: "清理训练写入的文件系统（对输出目录、checkpoint 目录以及 $TMPDIR 和 HF 缓存执行 `df -h`），把输出指到更大的盘上，或者少保留几个 checkpoint（`save_total_limit`）。".into(),
                rank: 5,
            }
        };
    }
    let stream = msg.contains("PytorchStreamReader") || msg.contains("PytorchStreamWriter");
    if let Some(at) = any_frame(tb, CHECKPOINT_CODE).or_else(|| stream.then(|| place.clone())) {
        return Reading {
            category: Category::CheckpointError,
            why: format!(
                "{} raised while a checkpoint was loaded or saved ({at})",
                tb.ty
            ),
            why_zh: format!("{} 在加载或保存 checkpoint 时抛出（{at}）", tb.ty),
            confidence: 0.5,
            fix: format!(
                "The checkpoint could not be read or written ({}: {}): check that the file is complete and matches this model and library version (load it alone: `python -c \"import torch; torch.load(PATH, map_location='cpu')\"`), and resume from the previous checkpoint if it is truncated.",
                tb.ty,
                clip(msg)
            ),
            fix_zh: format!(
                "checkpoint 读写失败（{}: {}）：确认文件完整，并且和当前模型、库版本匹配（单独加载试试：`python -c \"import torch; torch.load(PATH, map_location='cpu')\"`）；如果文件被截断了，就从上一个 checkpoint 恢复。",
                tb.ty,
                clip(msg)
            ),
            rank: 4,
        };
    }
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
        return Reading {
            category: Category::ConfigError,
            why: format!(
                "{}: something the configuration names is missing, raised while loading ({at})",
                tb.ty
            ),
            why_zh: format!("{}：配置里指定的东西不存在，在加载时抛出（{at}）", tb.ty),
            confidence: 0.5,
            fix: format!(
                "A path or name in the configuration does not resolve ({}: {}): check the dataset/model name or path (`--model_name_or_path`, `data_files`, `dataset_dir`), that it exists on every node, and that an offline run has it in its cache.",
                tb.ty,
                clip(msg)
            ),
            fix_zh: format!(
                "配置里的某个路径或名称找不到（{}: {}）：检查数据集/模型的名称或路径（`--model_name_or_path`、`data_files`、`dataset_dir`），确认每个节点上都有，离线运行时确认缓存里有。",
                tb.ty,
                clip(msg)
            ),
            rank: 3,
        };
    }
    if let Some(user) = tb.frames.iter().rev().find(|f| !internal_frame(&f.path)) {
        let at = format!("{}:{} in {}", short(&user.path), user.src_line, user.func);
        let raised_here = std::ptr::eq(user, inner);
        return Reading {
            category: Category::PythonException,
            why: if raised_here {
                format!("{} raised in your code ({at})", tb.ty)
            } else {
                format!(
                    "{} raised from your code's call at {at} (innermost: {place})",
                    tb.ty
                )
            },
            why_zh: if raised_here {
                format!("{} 在你的代码里抛出（{at}）", tb.ty)
            } else {
                format!("{} 由你的代码在 {at} 的调用引发（最内层：{place}）", tb.ty)
            },
            confidence: if raised_here { 0.45 } else { 0.4 },
            fix: format!("Fix the {} at {at}: `{}: {}`.", tb.ty, tb.ty, clip(msg)),
            fix_zh: format!("修复 {at} 处的 {}：`{}: {}`。", tb.ty, tb.ty, clip(msg)),
            rank: 2,
        };
    }
    Reading {
        category: Category::Other,
        why: format!(
            "{} raised inside a library ({place}), with no frame of your code kept",
            tb.ty
        ),
        why_zh: format!(
            "{} 在某个库内部抛出（{place}），日志里没有保留你代码的栈帧",
            tb.ty
        ),
        confidence: 0.35,
        fix: format!(
            "The exception was raised inside a library ({place}: `{}: {}`): check the arguments it was given and the library's version; the full traceback (not only its tail) shows the call from your code.",
            tb.ty,
            clip(msg)
        ),
        fix_zh: format!(
            "异常在库内部抛出（{place}：`{}: {}`）：检查传给它的参数和库的版本；完整的 traceback（而不只是结尾几行）能看到是你代码的哪一处调用的。",
            tb.ty,
            clip(msg)
        ),
        rank: 1,
    }
}

fn clip(s: &str) -> String {
    let s = s.trim();
    if s.chars().count() <= 160 {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(160).collect::<String>())
    }
}

fn evidence(a: &Analysis, l: &TailLine, why: Option<(String, String)>) -> Evidence {
    let (why, why_zh) = why.map_or((None, None), |(en, zh)| (Some(en), Some(zh)));
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
        why_zh,
    }
}

/// The finding the run's tracebacks support, when there is one: the most specific reading
/// (the last traceback among equals, the one nearest the end).
pub fn finding(a: &Analysis) -> Option<Finding> {
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
    let (tb, r) = tbs
        .iter()
        .map(|tb| (tb, read(tb)))
        .max_by_key(|(tb, r)| (r.rank, tb.at))?;
    let exc = &a.error_tail[tb.at];
    let mut ev = vec![evidence(a, exc, Some((r.why.clone(), r.why_zh.clone())))];
    if let Some(f) = tb.frames.last() {
        ev.push(evidence(a, &a.error_tail[f.at], None));
    }
    let origin = Origin {
        rank: ev[0].rank,
        host: ev[0].host.clone(),
        pid: None,
        time: ev[0].time.clone(),
    };
    Some(Finding {
        rule: RULE.into(),
        code: CODE.into(),
        category: r.category,
        action: r.category.action(),
        title: format!("Uncaught {}", r.why),
        title_zh: Some(format!("未捕获的异常：{}", r.why_zh)),
        confidence: r.confidence,
        symptom_of: None,
        origin,
        evidence: ev,
        against: Vec::new(),
        fix: r.fix,
        fix_zh: Some(r.fix_zh),
        role: Role::Root,
        merged_rules: Vec::new(),
        score: vec![Contribution {
            what: format!(
                "no rule matched; the traceback says {} ({})",
                r.category, r.why
            ),
            weight: r.confidence,
        }],
        more_lines: 0,
        next_time: Some(
            "Keep the whole traceback (every frame) in the log: the tail kept here is bounded."
                .into(),
        ),
        next_time_zh: Some(
            "在日志里保留完整的 traceback（每一帧）：这里只保留了有限的结尾部分。".into(),
        ),
        alternatives: None,
        alternatives_zh: None,
        affected_ranks: Vec::new(),
    })
}

/// Categories whose rules catch any exception: a traceback can say more than they do.
const GENERIC: &[Category] = &[Category::PythonException, Category::Other];

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
    let Some(tb) = finding(a) else { return };
    match findings
        .iter_mut()
        .find(|f| root(f) && f.category == tb.category)
    {
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
            same.fix = format!("{} {}", tb.fix, same.fix);
            // Both languages or neither: a Chinese fix missing half its content would mislead.
            same.fix_zh = match (tb.fix_zh, same.fix_zh.take()) {
                (Some(a), Some(b)) => Some(format!("{a}{b}")),
                _ => None,
            };
        }
        None => findings.insert(0, tb),
    }
}
