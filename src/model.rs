//! The shared vocabulary every stage speaks: source kinds, facts with provenance, warnings.
//! Plain data only: nothing here reads files, runs regexes or prints.

use serde::Serialize;
use std::fmt;

/// What kind of artefact a file is. Detection (`sources::detect`) picks one per input;
/// rules may limit a signature to some kinds; fact parsers are chosen by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    /// PyTorch / torchrun / torch.distributed.elastic console output.
    TorchLog,
    /// DeepSpeed launcher and runtime output.
    DeepspeedLog,
    /// Hugging Face Trainer / accelerate / LLaMA-Factory logs.
    HfTrainerLog,
    /// NCCL debug output (`NCCL INFO` / `NCCL WARN`).
    NcclLog,
    /// UCX / Open MPI output.
    UcxMpiLog,
    /// Slurm job output, `sacct`, `scontrol show job`.
    SlurmLog,
    /// Kernel log: dmesg (raw, -T, -H), journalctl -k, kern.log/syslog.
    Dmesg,
    /// `df` output.
    Df,
    /// `/proc/meminfo`.
    Meminfo,
    /// `free -b` / `free -h`.
    Free,
    /// A cgroup v1 or v2 memory file (`memory.events`, `memory.max`, …).
    CgroupMemory,
    /// `nvidia-smi` default table.
    NvidiaSmi,
    /// `nvidia-smi -q`.
    NvidiaSmiQ,
    /// `nvidia-smi --query-gpu=… --format=csv`.
    NvidiaSmiCsv,
    /// `ulimit -a` or `/proc/<pid>/limits`.
    Ulimit,
    /// torchelastic error file (JSON written by `@record`).
    TorchelasticError,
    /// `kubectl describe pod` / `kubectl get pod -o json|yaml`.
    K8sPod,
    /// `docker inspect` JSON.
    DockerInspect,
    /// `env` dumps, `pip list`, `python -m torch.utils.collect_env`.
    EnvDump,
    /// `coredumpctl info`, systemd-coredump journal fields, gdb backtraces.
    CoreText,
    /// PyTorch Flight Recorder dump (pickle).
    FlightRecorder,
    /// ELF core dump.
    ElfCore,
    /// `trainwreck run`'s `peaks.txt`: highest usage seen while the run was watched.
    CapturePeaks,
    /// `trainwreck run`'s `exit_status.txt`: how the wrapped command ended.
    CaptureExit,
    /// `trainwreck run`/`capture`'s `manifest.json`: what was captured (not evidence).
    CaptureManifest,
    /// `trainwreck run`'s `samples.csv` time series (its peaks are in `peaks.txt`).
    CaptureSamples,
    /// Text we could not classify more precisely: still scanned.
    Text,
    /// Binary data that is not a format we read: not scanned.
    Binary,
}

impl SourceKind {
    pub const ALL: &'static [SourceKind] = &[
        SourceKind::TorchLog,
        SourceKind::DeepspeedLog,
        SourceKind::HfTrainerLog,
        SourceKind::NcclLog,
        SourceKind::UcxMpiLog,
        SourceKind::SlurmLog,
        SourceKind::Dmesg,
        SourceKind::Df,
        SourceKind::Meminfo,
        SourceKind::Free,
        SourceKind::CgroupMemory,
        SourceKind::NvidiaSmi,
        SourceKind::NvidiaSmiQ,
        SourceKind::NvidiaSmiCsv,
        SourceKind::Ulimit,
        SourceKind::TorchelasticError,
        SourceKind::K8sPod,
        SourceKind::DockerInspect,
        SourceKind::EnvDump,
        SourceKind::CoreText,
        SourceKind::FlightRecorder,
        SourceKind::ElfCore,
        SourceKind::CapturePeaks,
        SourceKind::CaptureExit,
        SourceKind::CaptureManifest,
        SourceKind::CaptureSamples,
        SourceKind::Text,
        SourceKind::Binary,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::TorchLog => "torch-log",
            SourceKind::DeepspeedLog => "deepspeed-log",
            SourceKind::HfTrainerLog => "hf-trainer-log",
            SourceKind::NcclLog => "nccl-log",
            SourceKind::UcxMpiLog => "ucx-mpi-log",
            SourceKind::SlurmLog => "slurm-log",
            SourceKind::Dmesg => "dmesg",
            SourceKind::Df => "df",
            SourceKind::Meminfo => "meminfo",
            SourceKind::Free => "free",
            SourceKind::CgroupMemory => "cgroup-memory",
            SourceKind::NvidiaSmi => "nvidia-smi",
            SourceKind::NvidiaSmiQ => "nvidia-smi-q",
            SourceKind::NvidiaSmiCsv => "nvidia-smi-csv",
            SourceKind::Ulimit => "ulimit",
            SourceKind::TorchelasticError => "torchelastic-error",
            SourceKind::K8sPod => "k8s-pod",
            SourceKind::DockerInspect => "docker-inspect",
            SourceKind::EnvDump => "env-dump",
            SourceKind::CoreText => "core-text",
            SourceKind::FlightRecorder => "flight-recorder",
            SourceKind::ElfCore => "elf-core",
            SourceKind::CapturePeaks => "capture-peaks",
            SourceKind::CaptureExit => "capture-exit-status",
            SourceKind::CaptureManifest => "capture-manifest",
            SourceKind::CaptureSamples => "capture-samples",
            SourceKind::Text => "text",
            SourceKind::Binary => "binary",
        }
    }

    pub fn parse(s: &str) -> Option<SourceKind> {
        SourceKind::ALL.iter().copied().find(|k| k.as_str() == s)
    }

    /// Kinds whose text is a log that rules scan (as opposed to snapshots read only for facts).
    /// Snapshots are still scanned: an nvidia-smi `ERR!` or a dmesg Xid line is evidence.
    pub fn is_scanned(self) -> bool {
        !matches!(
            self,
            SourceKind::ElfCore
                | SourceKind::Binary
                | SourceKind::FlightRecorder
                | SourceKind::CaptureManifest
                | SourceKind::CaptureSamples
        )
    }
}

impl fmt::Display for SourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A fact's value. Sizes are bytes, times are seconds, counts are integers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum FactValue {
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(String),
}

impl FactValue {
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            FactValue::Int(i) => Some(*i as f64),
            FactValue::Float(f) => Some(*f),
            FactValue::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
            FactValue::Text(_) => None,
        }
    }
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            FactValue::Int(i) => Some(*i),
            FactValue::Float(f) => Some(*f as i64),
            _ => None,
        }
    }
    pub fn as_text(&self) -> Option<&str> {
        match self {
            FactValue::Text(s) => Some(s),
            _ => None,
        }
    }
}

impl fmt::Display for FactValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FactValue::Int(i) => write!(f, "{i}"),
            FactValue::Float(x) => write!(f, "{x}"),
            FactValue::Bool(b) => write!(f, "{b}"),
            FactValue::Text(s) => f.write_str(s),
        }
    }
}

impl From<i64> for FactValue {
    fn from(v: i64) -> Self {
        FactValue::Int(v)
    }
}
impl From<u64> for FactValue {
    fn from(v: u64) -> Self {
        FactValue::Int(v.min(i64::MAX as u64) as i64)
    }
}
impl From<f64> for FactValue {
    fn from(v: f64) -> Self {
        FactValue::Float(v)
    }
}
impl From<bool> for FactValue {
    fn from(v: bool) -> Self {
        FactValue::Bool(v)
    }
}
impl From<String> for FactValue {
    fn from(v: String) -> Self {
        FactValue::Text(v)
    }
}
impl From<&str> for FactValue {
    fn from(v: &str) -> Self {
        FactValue::Text(v.to_string())
    }
}

/// One typed thing the inputs tell us, with where it was read.
/// Names are dotted and stable once published (see `facts::CATALOG`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fact {
    pub name: String,
    pub value: FactValue,
    /// Path relative to the input the user gave.
    pub path: String,
    /// 1-based line, when the fact comes from a line of text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// The line's text (or a short description for binary sources), for citing.
    #[serde(skip)]
    pub text: String,
    /// The phase of the input it was read from (set by the analysis with `path`).
    #[serde(skip)]
    pub phase: Phase,
}

impl Fact {
    pub fn new(name: impl Into<String>, value: impl Into<FactValue>) -> Fact {
        Fact {
            name: name.into(),
            value: value.into(),
            path: String::new(),
            line: None,
            text: String::new(),
            phase: Phase::During,
        }
    }
    /// Attach provenance: the line number and the text it was read from.
    pub fn at(mut self, line: u64, text: &str) -> Fact {
        self.line = Some(line);
        self.text = text.trim_end().to_string();
        self
    }
    pub fn with_text(mut self, text: impl Into<String>) -> Fact {
        self.text = text.into();
        self
    }
}

/// Something the tool could not read, or read only in part. Never fatal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub message: String,
}

impl Warning {
    pub fn new(path: Option<&str>, message: impl Into<String>) -> Warning {
        Warning {
            path: path.map(str::to_string),
            message: message.into(),
        }
    }
}

/// Where a line came from and who said it, as far as its prefix and file name tell.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Attribution {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_rank: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Wall-clock time as `YYYY-MM-DDTHH:MM:SS[.fff]` when the line carries a full date,
    /// or seconds since boot for raw dmesg (`boot+1843.308145`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
}

/// The fixed category vocabulary of DESIGN.md with each category's action class.
/// New categories are added to DESIGN.md first, then here.
#[derive(Debug)]
pub struct Category {
    pub name: &'static str,
    pub action: &'static str,
    pub meaning: &'static str,
}

macro_rules! cat {
    ($n:expr, $a:expr, $m:expr) => {
        Category {
            name: $n,
            action: $a,
            meaning: $m,
        }
    };
}

pub static CATEGORIES: &[Category] = &[
    cat!(
        "shm_exhausted",
        "fix-config",
        "/dev/shm (or the IPC namespace's shared memory) too small or full"
    ),
    cat!(
        "host_oom",
        "fix-config",
        "host or cgroup/container memory limit hit"
    ),
    cat!("gpu_oom", "fix-config", "CUDA / accelerator out of memory"),
    cat!(
        "nccl_timeout",
        "retry-or-investigate",
        "a collective did not finish in time (watchdog); usually a symptom"
    ),
    cat!(
        "collective_mismatch",
        "fix-code",
        "ranks called different collectives, or the same one with different sizes or order"
    ),
    cat!(
        "nccl_network",
        "retry-elsewhere",
        "NCCL/IB/RoCE/socket transport errors"
    ),
    cat!(
        "gpu_hardware_xid",
        "replace-hardware",
        "NVIDIA Xid events: GPU fell off the bus, NVLink errors, GSP errors"
    ),
    cat!(
        "ecc_error",
        "replace-hardware",
        "uncorrectable ECC / HBM errors, row-remap failures"
    ),
    cat!(
        "cuda_illegal_access",
        "fix-code",
        "illegal memory access, misaligned address, unspecified launch failure"
    ),
    cat!(
        "device_side_assert",
        "fix-code",
        "device-side assertion (index out of range in embedding/loss, …)"
    ),
    cat!(
        "cuda_driver_mismatch",
        "fix-environment",
        "driver too old for the CUDA runtime, no kernel image, library not found"
    ),
    cat!(
        "disk_full",
        "fix-config",
        "no space left on the disk (checkpoint/cache writes); not /dev/shm"
    ),
    cat!(
        "too_many_open_files",
        "fix-config",
        "EMFILE / file-descriptor limit"
    ),
    cat!(
        "memlock_limit",
        "fix-config",
        "locked-memory ulimit too low for RDMA registration"
    ),
    cat!(
        "port_in_use",
        "fix-config",
        "rendezvous / master port already in use"
    ),
    cat!(
        "rendezvous_failure",
        "fix-config",
        "workers could not rendezvous: master unreachable, timeout, wrong address"
    ),
    cat!(
        "dataloader_worker_crash",
        "investigate",
        "a DataLoader worker died and nothing explains why"
    ),
    cat!(
        "segfault_native",
        "fix-code",
        "SIGSEGV/SIGABRT in native code (extension, driver library)"
    ),
    cat!(
        "loss_scale_overflow",
        "fix-config",
        "fp16 loss scale collapsed"
    ),
    cat!(
        "nan_loss",
        "fix-config",
        "loss became NaN/inf and the run stopped on it"
    ),
    cat!(
        "config_error",
        "fix-config",
        "invalid launch/training configuration"
    ),
    cat!(
        "preempted_or_time_limit",
        "retry",
        "killed by the scheduler: time limit, preemption, eviction, SIGTERM"
    ),
    cat!(
        "checkpoint_error",
        "fix-config",
        "checkpoint missing, corrupt, or incompatible at load or save"
    ),
    cat!(
        "python_exception",
        "fix-code",
        "an ordinary Python exception in user code"
    ),
    cat!(
        "other",
        "investigate",
        "a failure that matches none of the above"
    ),
];

pub fn category(name: &str) -> Option<&'static Category> {
    CATEGORIES.iter().find(|c| c.name == name)
}

/// When an input was taken relative to the run: a snapshot from before it started describes
/// the machine, never the failure. Decided once, when the inputs are collected
/// (`inputs::phase_of`), and carried by every input and fact read from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    Before,
    #[default]
    During,
    After,
}

impl Phase {
    pub fn is_during(&self) -> bool {
        *self == Phase::During
    }
}
