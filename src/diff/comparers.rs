//! The comparers, one per source of truth (versions, environment, /dev/shm, memory limits,
//! ulimits, GPUs, launcher, training configuration, trajectory), and the table of what a
//! difference in each can explain (`EXPLAINS`), as data beside them. A comparer reads one
//! run into items (key, value, where it was read); `pair` lists the keys whose values differ.
//! Values within a comparer's stated jitter, and noise (times, pids, hosts, ports, paths that
//! differ only in run ids, dates or hashes), are never listed.

use super::{Cite, Difference, Run, Side, UNLIMITED, Unit, Value};
use crate::model::{Category, Fact, FactValue, Text};
use Category::*;

/// One thing a run tells, ready to compare.
#[derive(Debug, Clone)]
pub struct Item {
    pub key: String,
    /// For people; the Chinese is the same text where the label is the input's own name.
    pub what: Text,
    pub value: Value,
    pub unit: Unit,
    /// Relative difference below which two numbers count as the same (run-to-run jitter).
    pub tolerance: f64,
    pub cite: Option<Cite>,
}

/// What a comparer read from one run.
#[derive(Debug, Default)]
pub struct Reading {
    pub items: Vec<Item>,
    /// The value of a key this run does not have, when the run has the source at all (an
    /// environment dump without `NCCL_DEBUG`: `unset`). `None`: a missing key is not known.
    pub absent: Option<Value>,
}

pub struct Comparer {
    pub name: &'static str,
    pub read: fn(&Run) -> Reading,
}

/// Every comparer, in the order their differences are listed at equal relevance.
pub static COMPARERS: &[Comparer] = &[
    Comparer {
        name: "shm",
        read: shm,
    },
    Comparer {
        name: "config",
        read: config,
    },
    Comparer {
        name: "memory",
        read: memory,
    },
    Comparer {
        name: "ulimits",
        read: ulimits,
    },
    Comparer {
        name: "launch",
        read: launch,
    },
    Comparer {
        name: "gpus",
        read: gpus,
    },
    Comparer {
        name: "versions",
        read: versions,
    },
    Comparer {
        name: "environment",
        read: environment,
    },
    Comparer {
        name: "trajectory",
        read: trajectory,
    },
];

/// Which way a difference must go to explain a category.
#[derive(Debug, Clone, Copy)]
pub enum When {
    /// Any change.
    Changed,
    /// The bad run's number is lower (less /dev/shm, a lower ulimit).
    Lower,
    /// The bad run's number is higher (more workers, a larger micro-batch).
    Higher,
    /// The bad run's value is this text (`fp16`).
    BadIs(&'static str),
}

/// One row of the relevance table: a key (exact, or a prefix ending in `*`), the direction,
/// the categories it can explain and how strongly (0..1) it is a cause rather than an effect.
pub struct Explains {
    pub key: &'static str,
    pub when: When,
    pub categories: &'static [Category],
    pub weight: f64,
}

macro_rules! ex {
    ($key:literal, $when:expr, [$($c:ident),*], $w:expr) => {
        Explains { key: $key, when: $when, categories: &[$($c),*], weight: $w }
    };
}

/// What each difference can explain. The first row whose key matches and whose direction
/// holds decides; a key no row matches explains nothing, at weight `DEFAULT_WEIGHT`.
pub static EXPLAINS: &[Explains] = &[
    // /dev/shm
    ex!(
        "shm.size_bytes",
        When::Lower,
        [ShmExhausted, DataloaderWorkerCrash, NcclNetwork],
        1.0
    ),
    ex!(
        "docker.shm_size_bytes",
        When::Lower,
        [ShmExhausted, DataloaderWorkerCrash, NcclNetwork],
        1.0
    ),
    ex!(
        "k8s.shm_size_limit_bytes",
        When::Lower,
        [ShmExhausted, DataloaderWorkerCrash, NcclNetwork],
        1.0
    ),
    ex!(
        "docker.ipc_mode",
        When::Changed,
        [ShmExhausted, NcclNetwork],
        0.9
    ),
    // memory limits
    ex!(
        "cgroup.memory_limit_bytes",
        When::Lower,
        [HostOom, ShmExhausted],
        1.0
    ),
    ex!("docker.memory_limit_bytes", When::Lower, [HostOom], 1.0),
    ex!("pod.memory_limit_bytes", When::Lower, [HostOom], 1.0),
    ex!("host.mem_total_bytes", When::Lower, [HostOom], 0.8),
    ex!("host.swap_total_bytes", When::Lower, [HostOom], 0.5),
    // ulimits
    ex!(
        "ulimit.open_files",
        When::Lower,
        [TooManyOpenFiles, DataloaderWorkerCrash],
        1.0
    ),
    ex!(
        "ulimit.open_files_hard",
        When::Lower,
        [TooManyOpenFiles, DataloaderWorkerCrash],
        0.9
    ),
    ex!(
        "docker.ulimit.nofile.*",
        When::Lower,
        [TooManyOpenFiles, DataloaderWorkerCrash],
        1.0
    ),
    ex!(
        "ulimit.max_locked_memory_bytes",
        When::Lower,
        [MemlockLimit, NcclNetwork],
        1.0
    ),
    ex!(
        "ulimit.max_locked_memory_hard_bytes",
        When::Lower,
        [MemlockLimit, NcclNetwork],
        0.9
    ),
    ex!(
        "docker.ulimit.memlock.*",
        When::Lower,
        [MemlockLimit, NcclNetwork],
        1.0
    ),
    ex!(
        "ulimit.max_user_processes",
        When::Lower,
        [DataloaderWorkerCrash],
        0.7
    ),
    ex!(
        "ulimit.stack_size_bytes",
        When::Lower,
        [SegfaultNative],
        0.5
    ),
    ex!(
        "ulimit.virtual_memory_bytes",
        When::Lower,
        [HostOom, GpuOom],
        0.6
    ),
    // training configuration
    ex!(
        "config.precision",
        When::BadIs("fp16"),
        [LossScaleOverflow, NanLoss],
        1.0
    ),
    ex!("config.precision", When::Changed, [NanLoss, GpuOom], 0.6),
    ex!(
        "config.micro_batch",
        When::Higher,
        [GpuOom, ShmExhausted, HostOom],
        0.9
    ),
    ex!("config.seq_len", When::Higher, [GpuOom, HostOom], 0.9),
    ex!(
        "config.workers",
        When::Higher,
        [
            ShmExhausted,
            HostOom,
            TooManyOpenFiles,
            DataloaderWorkerCrash
        ],
        0.9
    ),
    ex!(
        "config.preprocessing_workers",
        When::Higher,
        [HostOom, TooManyOpenFiles],
        0.6
    ),
    ex!("config.zero_stage", When::Lower, [GpuOom], 0.8),
    ex!(
        "config.zero_stage",
        When::Changed,
        [HostOom, ConfigError],
        0.5
    ),
    ex!("config.offload", When::Changed, [HostOom, GpuOom], 0.7),
    ex!("config.grad_accum", When::Changed, [ConfigError], 0.6),
    ex!("config.global_batch", When::Changed, [ConfigError], 0.6),
    ex!(
        "config.learning_rate",
        When::Higher,
        [NanLoss, LossScaleOverflow],
        0.8
    ),
    ex!(
        "config.prefetch_factor",
        When::Higher,
        [ShmExhausted, HostOom],
        0.6
    ),
    // launcher
    ex!(
        "launch.nproc_per_node",
        When::Higher,
        [ShmExhausted, HostOom, GpuOom],
        0.7
    ),
    ex!(
        "launch.world_size",
        When::Changed,
        [ConfigError, NcclTimeout],
        0.6
    ),
    ex!(
        "launch.nnodes",
        When::Changed,
        [NcclNetwork, RendezvousFailure, NcclTimeout],
        0.6
    ),
    ex!("launch.launcher", When::Changed, [ConfigError], 0.4),
    // GPUs
    ex!("gpus.count", When::Lower, [GpuOom, ConfigError], 0.7),
    ex!(
        "gpus.model",
        When::Changed,
        [GpuOom, CudaDriverMismatch],
        0.7
    ),
    ex!("gpus.memory_total_bytes", When::Lower, [GpuOom], 0.8),
    // versions
    ex!(
        "version.nccl",
        When::Changed,
        [NcclNetwork, NcclTimeout, CollectiveMismatch],
        0.9
    ),
    ex!(
        "version.driver",
        When::Changed,
        [CudaDriverMismatch, GpuHardwareXid],
        0.9
    ),
    ex!(
        "version.cuda_driver",
        When::Changed,
        [CudaDriverMismatch],
        0.9
    ),
    ex!(
        "version.cuda_runtime",
        When::Changed,
        [CudaDriverMismatch],
        0.9
    ),
    ex!(
        "version.torch_cuda",
        When::Changed,
        [CudaDriverMismatch],
        0.9
    ),
    ex!(
        "version.cuda_toolkit",
        When::Changed,
        [CudaDriverMismatch],
        0.7
    ),
    ex!(
        "version.torch",
        When::Changed,
        [CudaDriverMismatch, SegfaultNative, PythonException],
        0.6
    ),
    ex!(
        "version.deepspeed",
        When::Changed,
        [ConfigError, LossScaleOverflow, PythonException],
        0.6
    ),
    ex!(
        "version.transformers",
        When::Changed,
        [ConfigError, PythonException],
        0.5
    ),
    ex!(
        "version.accelerate",
        When::Changed,
        [ConfigError, PythonException],
        0.5
    ),
    ex!(
        "version.python",
        When::Changed,
        [PythonException, SegfaultNative],
        0.5
    ),
    ex!(
        "version.triton",
        When::Changed,
        [SegfaultNative, CudaIllegalAccess],
        0.5
    ),
    ex!(
        "version.flash_attn",
        When::Changed,
        [SegfaultNative, CudaIllegalAccess],
        0.5
    ),
    // environment
    ex!(
        "env.NCCL_SHM_DISABLE",
        When::Changed,
        [ShmExhausted, NcclNetwork],
        0.9
    ),
    ex!(
        "env.NCCL_CUMEM_HOST_ENABLE",
        When::Changed,
        [ShmExhausted, NcclNetwork],
        0.9
    ),
    ex!(
        "env.NCCL_P2P_DISABLE",
        When::Changed,
        [NcclNetwork, ShmExhausted],
        0.8
    ),
    ex!("env.NCCL_*", When::Changed, [NcclNetwork, NcclTimeout], 0.8),
    ex!(
        "env.TORCH_NCCL_*",
        When::Changed,
        [NcclTimeout, NcclNetwork],
        0.8
    ),
    ex!("env.PYTORCH_CUDA_ALLOC_CONF", When::Changed, [GpuOom], 0.9),
    ex!(
        "env.CUDA_VISIBLE_DEVICES",
        When::Changed,
        [ConfigError, GpuOom],
        0.6
    ),
    ex!("env.OMP_NUM_THREADS", When::Higher, [HostOom], 0.3),
    // the trajectory: effects more than causes, so weighed low
    ex!(
        "trajectory.shm_peak_bytes",
        When::Higher,
        [ShmExhausted],
        0.4
    ),
    ex!(
        "trajectory.gpu_memory_peak_bytes",
        When::Higher,
        [GpuOom],
        0.4
    ),
    ex!(
        "trajectory.cgroup_memory_peak_bytes",
        When::Higher,
        [HostOom],
        0.4
    ),
    ex!(
        "trajectory.final_loss",
        When::Higher,
        [NanLoss, LossScaleOverflow],
        0.3
    ),
    ex!(
        "trajectory.max_grad_norm",
        When::Higher,
        [NanLoss, LossScaleOverflow],
        0.3
    ),
    ex!(
        "trajectory.step_time",
        When::Higher,
        [NcclTimeout, DataloaderWorkerCrash],
        0.3
    ),
    ex!("trajectory.steps", When::Changed, [], 0.2),
];

/// Weight of a key no row of `EXPLAINS` matches (a setting that changed, cause unknown).
pub const DEFAULT_WEIGHT: f64 = 0.3;

fn key_matches(pattern: &str, key: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => key.starts_with(prefix),
        None => pattern == key,
    }
}

fn holds(when: When, good: &Value, bad: &Value) -> bool {
    match (when, good, bad) {
        (When::Changed, _, _) => true,
        (When::Lower, Value::Num(g), Value::Num(b)) => b < g,
        (When::Higher, Value::Num(g), Value::Num(b)) => b > g || (b.is_nan() && !g.is_nan()),
        (When::BadIs(s), _, Value::Text(b)) => b.eq_ignore_ascii_case(s),
        _ => false,
    }
}

/// The categories a difference of `key` from `good` to `bad` can explain, and its weight.
pub fn explains(key: &str, good: &Value, bad: &Value) -> (Vec<Category>, f64) {
    let mut matched = false;
    for row in EXPLAINS.iter().filter(|r| key_matches(r.key, key)) {
        matched = true;
        if holds(row.when, good, bad) {
            return (row.categories.to_vec(), row.weight);
        }
    }
    // A known key changed the other way (more /dev/shm): explains nothing, still listed.
    (Vec::new(), if matched { 0.2 } else { DEFAULT_WEIGHT })
}

/// Runs of digits and hex that mark a run id, a date or a hash, so that two values that
/// differ only in those are the same (`/ckpt/run-20261129-a3f9e1/` vs `/ckpt/run-20261130-77b2c0/`).
pub fn without_noise(v: &str) -> String {
    // A number is a value, never an id.
    if v.trim().parse::<f64>().is_ok() {
        return v.to_string();
    }
    let mut out = String::with_capacity(v.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        let digits = run.bytes().filter(|b| b.is_ascii_digit()).count();
        if run.len() >= 6 && digits > 0 || digits >= 4 {
            out.push('#');
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in v.chars() {
        if c.is_ascii_hexdigit() {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

/// Setting names that are noise between two runs of the same job.
pub fn is_noise_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    const WORDS: &[&str] = &[
        "port",
        "pid",
        "host",
        "addr",
        "time",
        "date",
        "run_id",
        "run_name",
        "job_id",
        "uuid",
        "local_rank",
        "node_rank",
        "world_info",
        "output_dir",
        "logging_dir",
        "out_dir",
        "log_dir",
        "error_file",
        "hub_token",
        "restart_count",
    ];
    WORDS.iter().any(|w| k.contains(w))
}

fn truthy(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" | "none" => Some(false),
        _ => None,
    }
}

fn same(a: &Item, b: &Item) -> bool {
    match (&a.value, &b.value) {
        (Value::Num(x), Value::Num(y)) => {
            if x.is_nan() || y.is_nan() {
                return x.is_nan() && y.is_nan();
            }
            (x - y).abs() <= a.tolerance.max(b.tolerance) * x.abs().max(y.abs())
        }
        (Value::Text(x), Value::Text(y)) => {
            if x == y || without_noise(x) == without_noise(y) {
                return true;
            }
            if let (Some(p), Some(q)) = (truthy(x), truthy(y)) {
                return p == q;
            }
            if let (Ok(p), Ok(q)) = (x.trim().parse::<f64>(), y.trim().parse::<f64>()) {
                return p == q;
            }
            // `2.11.0` (pip list) and `2.11.0+cu130` (collect_env) name one version.
            a.key.starts_with("version.")
                && (x.contains('+') != y.contains('+'))
                && x.split('+').next() == y.split('+').next()
        }
        (Value::Num(x), Value::Text(y)) | (Value::Text(y), Value::Num(x)) => {
            y.trim().parse::<f64>().is_ok_and(|v| v == *x)
        }
    }
}

/// The differences between two readings of one comparer: keys whose values differ, in the
/// good run's order, then keys only the bad run has.
pub fn pair(c: &Comparer, good: &Reading, bad: &Reading) -> Vec<Difference> {
    let mut out = Vec::new();
    let mut keys: Vec<&str> = good.items.iter().map(|i| i.key.as_str()).collect();
    for i in &bad.items {
        if !keys.contains(&i.key.as_str()) {
            keys.push(&i.key);
        }
    }
    for key in keys {
        let g = good.items.iter().find(|i| i.key == key);
        let b = bad.items.iter().find(|i| i.key == key);
        let (gv, bv, proto, absent) = match (g, b) {
            (Some(g), Some(b)) => {
                if same(g, b) {
                    continue;
                }
                (g.value.clone(), b.value.clone(), g, None)
            }
            (Some(g), None) => match &bad.absent {
                Some(a) => (g.value.clone(), a.clone(), g, Some(Side::Bad)),
                None => continue,
            },
            (None, Some(b)) => match &good.absent {
                Some(a) => (a.clone(), b.value.clone(), b, Some(Side::Good)),
                None => continue,
            },
            (None, None) => continue,
        };
        let mut evidence = Vec::new();
        for (side, item) in [(Side::Good, g), (Side::Bad, b)] {
            if let Some(mut cite) = item.and_then(|i| i.cite.clone()) {
                cite.side = side;
                evidence.push(cite);
            }
        }
        out.push(Difference {
            // A label that is the input's own name has no Chinese of its own.
            what: Text::given(
                &proto.what.en,
                (proto.what.zh != proto.what.en).then_some(&proto.what.zh),
            ),
            key: key.to_string(),
            source: c.name,
            good: gv,
            bad: bv,
            unit: proto.unit,
            explains: Vec::new(),
            relevance: 0.0,
            evidence,
            absent,
        });
    }
    out
}

fn cite(f: &Fact) -> Cite {
    Cite {
        side: Side::Good,
        path: f.path.clone(),
        line: f.line,
        text: f.text.clone(),
    }
}

fn value_of(f: &Fact, unit: Unit) -> Value {
    if unit == Unit::Text {
        return Value::Text(f.value.to_string());
    }
    match &f.value {
        FactValue::Int(_) | FactValue::Float(_) => Value::Num(f.value.as_f64().unwrap_or(f64::NAN)),
        FactValue::Bool(b) => Value::Text(b.to_string()),
        FactValue::Text(t) => match t.trim().parse::<f64>() {
            Ok(n) => Value::Num(n),
            Err(_) => Value::Text(t.clone()),
        },
    }
}

/// A label for people, in English and Chinese (`what`, `what_zh`).
type Label<'a> = (&'a str, &'a str);

fn item(key: &str, (what, what_zh): Label, unit: Unit, f: &Fact) -> Item {
    Item {
        key: key.to_string(),
        what: Text::new(what, what_zh),
        value: value_of(f, unit),
        unit,
        tolerance: 0.0,
        cite: Some(cite(f)),
    }
}

/// The fact `name` as an item (its latest telling value, as `FactSet::get` picks it).
fn fact(run: &Run, name: &str, what: Label, unit: Unit) -> Option<Item> {
    run.facts.get(name).map(|f| item(name, what, unit, f))
}

/// The smallest value among facts matching `pattern` (the tightest limit binds).
fn min_of(run: &Run, pattern: &str, key: &str, what: Label, unit: Unit) -> Option<Item> {
    run.facts
        .matching(pattern)
        .filter_map(|f| f.value.as_f64().map(|v| (v, f)))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, f)| item(key, what, unit, f))
}

fn versions(run: &Run) -> Reading {
    const VERSIONS: &[(&str, Label)] = &[
        ("version.torch", ("torch version", "torch 版本")),
        (
            "version.torch_cuda",
            (
                "CUDA version torch was built with",
                "torch 编译所用的 CUDA 版本",
            ),
        ),
        (
            "version.cuda_runtime",
            ("CUDA runtime version", "CUDA 运行时版本"),
        ),
        (
            "version.cuda_driver",
            ("CUDA version the driver supports", "驱动支持的 CUDA 版本"),
        ),
        (
            "version.driver",
            ("NVIDIA driver version", "NVIDIA 驱动版本"),
        ),
        ("version.cuda_toolkit", ("nvcc version", "nvcc 版本")),
        ("version.nccl", ("NCCL version", "NCCL 版本")),
        ("version.deepspeed", ("DeepSpeed version", "DeepSpeed 版本")),
        (
            "version.transformers",
            ("transformers version", "transformers 版本"),
        ),
        (
            "version.accelerate",
            ("accelerate version", "accelerate 版本"),
        ),
        ("version.python", ("Python version", "Python 版本")),
        ("version.triton", ("Triton version", "Triton 版本")),
        (
            "version.flash_attn",
            ("flash-attn version", "flash-attn 版本"),
        ),
    ];
    Reading {
        items: VERSIONS
            .iter()
            .filter_map(|(n, w)| fact(run, n, *w, Unit::Text))
            .collect(),
        absent: None,
    }
}

/// Environment variable prefixes compared (others in a dump are not about training).
const ENV_PREFIXES: &[&str] = &["NCCL_", "TORCH_", "CUDA_", "OMP_", "PYTORCH_"];

fn environment(run: &Run) -> Reading {
    let mut items: Vec<Item> = Vec::new();
    let mut any = false;
    for f in run.facts.matching("env.<name>") {
        any = true;
        let var = &f.name["env.".len()..];
        if !ENV_PREFIXES.iter().any(|p| var.starts_with(p)) || is_noise_key(var) {
            continue;
        }
        if items.iter().any(|i| i.key == f.name) {
            continue;
        }
        if let Some(latest) = run.facts.get(&f.name) {
            items.push(item(&f.name, (var, var), Unit::Text, latest));
        }
    }
    Reading {
        items,
        absent: any.then(|| Value::Text("unset".into())),
    }
}

fn shm(run: &Run) -> Reading {
    let items = [
        min_of(
            run,
            "shm.size_bytes",
            "shm.size_bytes",
            ("/dev/shm size", "/dev/shm 大小"),
            Unit::Bytes,
        ),
        fact(
            run,
            "docker.shm_size_bytes",
            ("container --shm-size", "容器的 --shm-size"),
            Unit::Bytes,
        ),
        fact(
            run,
            "k8s.shm_size_limit_bytes",
            (
                "/dev/shm emptyDir sizeLimit",
                "/dev/shm 的 emptyDir sizeLimit",
            ),
            Unit::Bytes,
        ),
        fact(
            run,
            "docker.ipc_mode",
            ("container IPC mode", "容器 IPC 模式"),
            Unit::Text,
        ),
    ];
    Reading {
        items: items.into_iter().flatten().collect(),
        absent: None,
    }
}

fn memory(run: &Run) -> Reading {
    let mut items = Vec::new();
    for (name, what) in [
        ("host.mem_total_bytes", ("host memory", "主机内存")),
        ("host.swap_total_bytes", ("host swap", "主机 swap")),
    ] {
        if let Some(mut i) = fact(run, name, what, Unit::Bytes) {
            // Two boots of one machine report a few KiB apart.
            i.tolerance = 0.01;
            items.push(i);
        }
    }
    let limit = min_of(
        run,
        "cgroup.memory_limit_bytes",
        "cgroup.memory_limit_bytes",
        ("cgroup memory limit", "cgroup 内存上限"),
        Unit::Bytes,
    );
    // The cgroup parser leaves the limit out when it is `max`: a run whose cgroup files were
    // read without one had no limit.
    let cgroup_read = run.facts.get("cgroup.memory_current_bytes");
    match (limit, cgroup_read) {
        (Some(i), _) => items.push(i),
        (None, Some(f)) => items.push(Item {
            value: Value::Num(UNLIMITED),
            ..item(
                "cgroup.memory_limit_bytes",
                ("cgroup memory limit", "cgroup 内存上限"),
                Unit::Bytes,
                f,
            )
        }),
        _ => {}
    }
    items.extend(fact(
        run,
        "docker.memory_limit_bytes",
        ("container memory limit", "容器内存上限"),
        Unit::Bytes,
    ));
    items.extend(min_of(
        run,
        "k8s.container.<name>.memory_limit_bytes",
        "pod.memory_limit_bytes",
        ("pod memory limit", "Pod 内存上限"),
        Unit::Bytes,
    ));
    Reading {
        items,
        absent: None,
    }
}

fn ulimits(run: &Run) -> Reading {
    const LIMITS: &[(&str, Label, Unit)] = &[
        (
            "ulimit.open_files",
            ("open files (ulimit -n)", "可打开文件数（ulimit -n）"),
            Unit::Count,
        ),
        (
            "ulimit.open_files_hard",
            ("open files, hard limit", "可打开文件数硬上限"),
            Unit::Count,
        ),
        (
            "ulimit.max_locked_memory_bytes",
            ("locked memory (ulimit -l)", "锁定内存（ulimit -l）"),
            Unit::Bytes,
        ),
        (
            "ulimit.max_locked_memory_hard_bytes",
            ("locked memory, hard limit", "锁定内存硬上限"),
            Unit::Bytes,
        ),
        (
            "ulimit.core_file_size_bytes",
            ("core file size (ulimit -c)", "core 文件大小（ulimit -c）"),
            Unit::Bytes,
        ),
        (
            "ulimit.max_user_processes",
            ("processes (ulimit -u)", "进程数（ulimit -u）"),
            Unit::Count,
        ),
        (
            "ulimit.stack_size_bytes",
            ("stack size (ulimit -s)", "栈大小（ulimit -s）"),
            Unit::Bytes,
        ),
        (
            "ulimit.virtual_memory_bytes",
            ("address space (ulimit -v)", "地址空间（ulimit -v）"),
            Unit::Bytes,
        ),
    ];
    let mut items: Vec<Item> = LIMITS
        .iter()
        .filter_map(|(n, w, u)| fact(run, n, *w, *u))
        .collect();
    for f in run.facts.matching("docker.ulimit.<name>.<bound>") {
        if !items.iter().any(|i| i.key == f.name)
            && let Some(latest) = run.facts.get(&f.name)
        {
            let name = &f.name["docker.ulimit.".len()..];
            let (what, zh) = (
                format!("container ulimit {name}"),
                format!("容器 ulimit {name}"),
            );
            items.push(item(&f.name, (&what, &zh), Unit::Count, latest));
        }
    }
    Reading {
        items,
        absent: None,
    }
}

fn gpus(run: &Run) -> Reading {
    let mut names: Vec<(u32, &Fact)> = Vec::new();
    for f in run.facts.matching("gpu.<index>.name") {
        if let Some(ix) = f.name.split('.').nth(1).and_then(|s| s.parse().ok())
            && !names.iter().any(|(i, _)| *i == ix)
        {
            names.push((ix, f));
        }
    }
    let mut items = Vec::new();
    if let Some((_, first)) = names.first() {
        items.push(Item {
            value: Value::Num(names.len() as f64),
            ..item("gpus.count", ("GPUs", "GPU 数量"), Unit::Count, first)
        });
        let mut models: Vec<String> = names.iter().map(|(_, f)| f.value.to_string()).collect();
        models.sort();
        models.dedup();
        items.push(Item {
            value: Value::Text(models.join(", ")),
            ..item("gpus.model", ("GPU model", "GPU 型号"), Unit::Text, first)
        });
    }
    items.extend(min_of(
        run,
        "gpu.<index>.memory_total_bytes",
        "gpus.memory_total_bytes",
        ("GPU memory", "GPU 显存"),
        Unit::Bytes,
    ));
    Reading {
        items,
        absent: None,
    }
}

fn launch(run: &Run) -> Reading {
    let items = [
        fact(run, "launch.launcher", ("launcher", "启动器"), Unit::Text),
        fact(
            run,
            "launch.nproc_per_node",
            (
                "processes per node (--nproc-per-node)",
                "每节点进程数（--nproc-per-node）",
            ),
            Unit::Count,
        ),
        fact(
            run,
            "launch.nnodes",
            ("nodes (--nnodes)", "节点数（--nnodes）"),
            Unit::Count,
        ),
        fact(
            run,
            "launch.world_size",
            ("world size", "world size（总进程数）"),
            Unit::Count,
        ),
    ];
    Reading {
        items: items.into_iter().flatten().collect(),
        absent: None,
    }
}

/// Canonical training settings: the names each is printed under, in the order tried.
const CANON: &[(&str, Label, Unit, &[&str])] = &[
    (
        "config.micro_batch",
        ("micro-batch size per GPU", "每卡 micro-batch 大小"),
        Unit::Count,
        &[
            "train_micro_batch_size_per_gpu",
            "per_device_train_batch_size",
            "micro_batch_size",
            "batch_size",
        ],
    ),
    (
        "config.global_batch",
        ("global batch size", "全局 batch 大小"),
        Unit::Count,
        &["train_batch_size", "global_batch_size"],
    ),
    (
        "config.grad_accum",
        ("gradient accumulation steps", "梯度累积步数"),
        Unit::Count,
        &[
            "gradient_accumulation_steps",
            "grad_accum",
            "gradient_accumulation",
        ],
    ),
    (
        "config.workers",
        ("DataLoader workers", "DataLoader worker 数"),
        Unit::Count,
        &["dataloader_num_workers", "num_workers", "workers"],
    ),
    (
        "config.preprocessing_workers",
        ("preprocessing workers", "预处理 worker 数"),
        Unit::Count,
        &["preprocessing_num_workers"],
    ),
    (
        "config.prefetch_factor",
        ("DataLoader prefetch factor", "DataLoader 预取因子"),
        Unit::Count,
        &["dataloader_prefetch_factor", "prefetch_factor"],
    ),
    (
        "config.seq_len",
        ("sequence length", "序列长度"),
        Unit::Count,
        &[
            "cutoff_len",
            "max_seq_length",
            "max_seq_len",
            "seq_len",
            "seq_length",
            "model_max_length",
            "block_size",
            "max_length",
        ],
    ),
    (
        "config.zero_stage",
        ("ZeRO stage", "ZeRO stage"),
        Unit::Count,
        &["zero_optimization_stage", "zero_stage"],
    ),
    (
        "config.offload",
        ("ZeRO offload", "ZeRO offload"),
        Unit::Text,
        &[
            "zero_optimization_offload_optimizer_device",
            "zero_optimization_offload_param_device",
            "offload_optimizer_device",
            "offload",
        ],
    ),
    (
        "config.learning_rate",
        ("learning rate", "学习率"),
        Unit::Count,
        &["learning_rate", "lr"],
    ),
];

/// Names that say the precision.
const PRECISION_KEYS: &[&str] = &[
    "bf16",
    "bf16_enabled",
    "fp16",
    "fp16_enabled",
    "mixed_precision",
    "precision",
    "torch_dtype",
    "dtype",
    "half",
];

fn precision(run: &Run) -> Option<Item> {
    let get = |k: &str| run.facts.get(&format!("config.{k}"));
    let on = |k: &str| {
        get(k)
            .and_then(|f| truthy(&f.value.to_string()))
            .unwrap_or(false)
    };
    let pick = |f: &Fact, v: &str| Item {
        value: Value::Text(v.into()),
        ..item("config.precision", ("precision", "精度"), Unit::Text, f)
    };
    for (keys, name) in [
        (["bf16", "bf16_enabled"], "bf16"),
        (["fp16", "fp16_enabled"], "fp16"),
    ] {
        if let Some(k) = keys.iter().find(|k| on(k)) {
            return get(k).map(|f| pick(f, name));
        }
    }
    for k in ["mixed_precision", "precision", "torch_dtype", "dtype"] {
        if let Some(f) = get(k) {
            let v = f.value.to_string().to_ascii_lowercase();
            let v = match v.trim_start_matches("torch.") {
                "float16" | "half" | "16" | "16-mixed" => "fp16",
                "bfloat16" | "bf16-mixed" => "bf16",
                "float32" | "no" | "32" | "fp32" => "fp32",
                other => return Some(pick(f, other)),
            };
            return Some(pick(f, v));
        }
    }
    ["bf16", "bf16_enabled", "fp16", "fp16_enabled"]
        .iter()
        .find_map(|k| get(k))
        .map(|f| pick(f, "fp32"))
}

fn config(run: &Run) -> Reading {
    let mut items = Vec::new();
    let mut used: Vec<String> = PRECISION_KEYS
        .iter()
        .map(|k| format!("config.{k}"))
        .collect();
    items.extend(precision(run));
    for (key, what, unit, names) in CANON {
        for n in names.iter() {
            used.push(format!("config.{n}"));
        }
        if let Some(f) = names
            .iter()
            .find_map(|n| run.facts.get(&format!("config.{n}")))
        {
            items.push(item(key, *what, *unit, f));
        }
    }
    // `run.workers` (a log stating its DataLoader workers) when no setting says it.
    if !items.iter().any(|i| i.key == "config.workers")
        && let Some(f) = run.facts.get("run.workers")
    {
        items.push(item(
            "config.workers",
            ("DataLoader workers", "DataLoader worker 数"),
            Unit::Count,
            f,
        ));
    }
    let mut any = false;
    for f in run.facts.matching("config.<key>") {
        any = true;
        let k = &f.name["config.".len()..];
        if used.contains(&f.name) || is_noise_key(k) || items.iter().any(|i| i.key == f.name) {
            continue;
        }
        if let Some(latest) = run.facts.get(&f.name) {
            let (what, zh) = (format!("setting {k}"), format!("配置项 {k}"));
            items.push(item(&f.name, (&what, &zh), Unit::Text, latest));
        }
    }
    Reading {
        items,
        absent: any.then(|| Value::Text("not set".into())),
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

fn trajectory(run: &Run) -> Reading {
    let mut items = Vec::new();
    let step_cite = |p: &crate::sources::trainlog::StepPoint| {
        Some(Cite {
            side: Side::Good,
            path: run.steps_path.clone(),
            line: Some(p.line),
            text: p.text.clone(),
        })
    };
    let mut traj = |key: &str, (what, zh): Label, unit: Unit, v: f64, tol: f64, c: Option<Cite>| {
        items.push(Item {
            key: key.to_string(),
            what: Text::new(what, zh),
            value: Value::Num(v),
            unit,
            tolerance: tol,
            cite: c,
        })
    };
    if let Some(last) = run.steps.iter().max_by_key(|p| p.step) {
        traj(
            "trajectory.steps",
            ("steps reached", "训练到的步数"),
            Unit::Count,
            last.step as f64,
            0.0,
            step_cite(last),
        );
        if let Some(l) = run.steps.iter().rev().find_map(|p| p.loss.map(|l| (l, p))) {
            // Two healthy runs of one job end up to ~15 % apart in loss (11a vs 11b: 2.26
            // and 1.95); a NaN or a doubled loss is what tells.
            traj(
                "trajectory.final_loss",
                ("last logged loss", "最后记录的 loss"),
                Unit::Count,
                l.0,
                0.25,
                step_cite(l.1),
            );
        }
        if let Some(g) = run
            .steps
            .iter()
            .filter_map(|p| p.grad_norm.map(|g| (g, p)))
            .max_by(|a, b| a.0.total_cmp(&b.0))
        {
            traj(
                "trajectory.max_grad_norm",
                ("largest grad norm", "最大 grad norm"),
                Unit::Count,
                g.0,
                0.25,
                step_cite(g.1),
            );
        }
        if let Some(t) = median(run.steps.iter().filter_map(|p| p.step_time).collect()) {
            traj(
                "trajectory.step_time",
                ("median step time", "每步耗时中位数"),
                Unit::Seconds,
                t,
                0.25,
                step_cite(last),
            );
        }
    } else if !run.paths.is_empty()
        && run
            .facts
            .all()
            .iter()
            .any(|f| f.name.starts_with("config."))
    {
        // A run that printed its settings but logged no step died before its first.
        items.push(Item {
            key: "trajectory.steps".into(),
            what: Text::new("steps reached", "训练到的步数"),
            value: Value::Num(0.0),
            unit: Unit::Count,
            tolerance: 0.0,
            cite: None,
        });
    }
    let peaks: [(&str, &str, Label); 3] = [
        (
            "shm.peak_bytes",
            "trajectory.shm_peak_bytes",
            ("peak /dev/shm use", "/dev/shm 峰值用量"),
        ),
        (
            "gpu.<index>.memory_peak_bytes",
            "trajectory.gpu_memory_peak_bytes",
            ("peak GPU memory", "显存峰值"),
        ),
        (
            "cgroup.memory_peak_bytes",
            "trajectory.cgroup_memory_peak_bytes",
            ("peak cgroup memory", "cgroup 内存峰值"),
        ),
    ];
    for (pattern, key, what) in peaks {
        if let Some((v, f)) = run.facts.max_num(pattern) {
            items.push(Item {
                value: Value::Num(v),
                // Page cache and allocator slack move peaks by a fifth between healthy runs.
                tolerance: 0.25,
                ..item(key, what, Unit::Bytes, f)
            });
        }
    }
    Reading {
        items,
        absent: None,
    }
}

#[cfg(test)]
mod tests;
