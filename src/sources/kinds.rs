//! The input kinds, one row each: a kind's spelling, whether its lines are the run's own log,
//! how it is read (scanned lines with or without a fact parser, a core, a Flight Recorder
//! dump, a capture's samples, listed only) and how it is recognised (its file names and the
//! patterns sniffed in its first bytes, or by content around the table). `open`, detection,
//! the planner and the rule loader ask the row; nothing else decides per kind what a kind is.
//! It holds data only: the detection machinery is `detect`'s, the parsers their modules'.

use super::{
    FactParser, capture_files, cgroup, detect::assignments, df, dmesg, docker, elfcore, envdump,
    k8s, meminfo, nvidia_smi, slurm, torchelastic, ulimit,
};
use serde::Serialize;
use std::fmt;

/// Makes a kind's fact parser for a file of this bare name.
pub(crate) type MakeParser = fn(&str) -> Box<dyn FactParser>;

/// How the files of a kind are read.
#[derive(Clone, Copy)]
pub(crate) enum Reading {
    /// Line by line, the rules scanning every line; the fact parser made for the file's bare
    /// name (cgroup files say what they hold only through it) is fed the same lines.
    Lines(Option<MakeParser>),
    /// An ELF core: the core reader, from the file itself.
    Core,
    /// A PyTorch Flight Recorder dump (pickle).
    FlightRecorder,
    /// A capture's time series, for the report's curves.
    Samples,
    /// Listed among the inputs, never evidence: read for nothing.
    Listed,
    /// Binary data of no format we read: listed as not scanned.
    NotRead,
}

/// How a kind is recognised.
pub(crate) enum Detect {
    /// A row of detection's table (`detect::detect`): earlier rows win ties.
    Table(Table),
    /// By the first bytes, around the table: ELF magic, a pickle header, binary bytes, plain
    /// text when no row agrees.
    ByContent,
}

/// A kind's row in the detection table.
pub(crate) struct Table {
    /// Case-insensitive regexes over the file name (not the directory).
    pub names: &'static [&'static str],
    /// Regexes over the first `detect::SNIFF_BYTES`; each one that matches adds one point.
    pub sniff: &'static [&'static str],
    /// Points needed from sniffing alone.
    pub min_points: usize,
    /// What a matching name alone says.
    pub by_name: ByName,
}

/// What a file name matching a kind's `names` says when the head is sniffed too.
#[derive(Clone, Copy)]
pub(crate) enum ByName {
    /// The name decides whatever the content (notes quote anything; cgroup and limits files
    /// are too short to sniff).
    Decides,
    /// A generic name (`console.log` can hold anything): used only when no row's sniffing
    /// matched.
    Hints,
    /// The name decides unless the content contradicts it: a head that is not empty and
    /// matches none of the row's sniffs is not that snapshot (a `df.txt` holding an error
    /// message is plain text), unless the check given agrees with the head.
    UnlessContradicted(Option<fn(&[u8]) -> bool>),
}

/// Everything a kind is, from its row.
pub(crate) struct Kind {
    pub kind: SourceKind,
    pub read: Reading,
    pub detect: Detect,
}

/// One row per kind: `Variant = "spelling" { log: …, read: …, detect: … };`, its doc
/// comment above it. Generates `SourceKind` (variants in row order: the detection table's
/// order), `SourceKind::ALL`, its spelling, `is_log`, and `KINDS`, the rows themselves.
macro_rules! kinds {
    ($($(#[$m:meta])* $v:ident = $s:literal {
        log: $log:literal,
        read: $read:expr,
        detect: $detect:expr $(,)?
    };)+) => {
        /// What kind of artefact a file is. Detection (`sources::detect`) picks one per input;
        /// rules may limit a signature to some kinds; how a file is read is its kind's row's.
        /// (Serialised in kebab-case of the variant, as the report's `inputs` have always
        /// shown it; `as_str` is the row's spelling, which rule files use.)
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        #[serde(rename_all = "kebab-case")]
        pub enum SourceKind {
            $($(#[$m])* $v,)+
        }

        impl SourceKind {
            pub const ALL: &'static [SourceKind] = &[$(SourceKind::$v,)+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(SourceKind::$v => $s,)+
                }
            }

            /// A log a program writes as it runs (its lines are the run's own words: signs of
            /// life, settings, steps), not a snapshot, a structured dump or a binary.
            pub fn is_log(self) -> bool {
                match self {
                    $(SourceKind::$v => $log,)+
                }
            }
        }

        /// The rows, in `SourceKind`'s order.
        pub(crate) static KINDS: &[Kind] = &[$(Kind {
            kind: SourceKind::$v,
            read: $read,
            detect: $detect,
        },)+];
    };
}

impl SourceKind {
    pub fn parse(s: &str) -> Option<SourceKind> {
        SourceKind::ALL.iter().copied().find(|k| k.as_str() == s)
    }

    /// The kind's row.
    pub(crate) fn row(self) -> &'static Kind {
        &KINDS[self as usize]
    }

    /// How files of this kind are read.
    pub(crate) fn read(self) -> Reading {
        self.row().read
    }

    /// Kinds whose lines the rules scan: every kind read line by line. Snapshots are scanned
    /// too (an nvidia-smi `ERR!` or a dmesg Xid line is evidence); cores, dumps, samples,
    /// binaries and what is only listed are not.
    pub fn is_scanned(self) -> bool {
        matches!(self.read(), Reading::Lines(_))
    }
}

impl fmt::Display for SourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

kinds! {
    /// trainwreck's own saved output (`--format json|markdown|junit|table`): what it concluded
    /// once, never evidence of what happened.
    OwnReport = "trainwreck-report" {
        log: false,
        read: Reading::Listed,
        detect: Detect::Table(Table {
            names: &[r"^trainwreck[\w.-]*\.(json|md|xml|txt|log)$"],
            sniff: &[
                // --format json (analyze) and triage's JSON
                r#""schema"\s*:\s*"trainwreck\.(report|triage)/"#,
                // --format markdown
                r"\A\s*## trainwreck: ",
                // --format junit
                r#"<testsuites name="trainwreck""#,
                // the terminal table, saved with `> report.txt`
                r"\Atrainwreck: (no failure|\S+ (—|-) |.{0,80} in \d+ inputs?\.)",
            ],
            min_points: 1,
            by_name: ByName::UnlessContradicted(None),
        }),
    };
    /// Notes kept beside a run (`*.md`, `label.json`, `GROUND_TRUTH.md`): someone's words
    /// about the run, quoting its errors, never evidence.
    Notes = "notes" {
        log: false,
        read: Reading::Listed,
        detect: Detect::Table(Table {
            names: &[
                r"\.(md|markdown)$",
                r"^label\.json$",
                r"^GROUND_TRUTH",
                r"^(README|NOTES)(\.txt)?$",
            ],
            // A label file by content: the fixture format (`category` and `accept`).
            sniff: &[
                r#"\A\s*\{\s*"category"\s*:\s*"\w+""#,
                r#""accept"\s*:\s*\["#,
            ],
            min_points: 2,
            by_name: ByName::Decides,
        }),
    };
    /// `trainwreck run`/`capture`'s `manifest.json`: what was captured (not evidence).
    CaptureManifest = "capture-manifest" {
        log: false,
        read: Reading::Listed,
        detect: Detect::Table(Table {
            names: &[r"^manifest\.json$"],
            sniff: &[r#""schema"\s*:\s*"trainwreck\.capture/"#],
            min_points: 1,
            by_name: ByName::UnlessContradicted(None),
        }),
    };
    /// `trainwreck run`'s `peaks.txt`: highest usage seen while the run was watched.
    CapturePeaks = "capture-peaks" {
        log: false,
        read: Reading::Lines(Some(|_| Box::new(capture_files::PeaksParser))),
        detect: Detect::Table(Table {
            names: &[r"^peaks\.txt$"],
            sniff: &[r"(?m)^(shm|cgroup|host|gpu)\.[\w.]+: \d+$"],
            min_points: 1,
            by_name: ByName::UnlessContradicted(None),
        }),
    };
    /// `trainwreck run`'s `exit_status.txt`: how the wrapped command ended.
    CaptureExit = "capture-exit-status" {
        log: false,
        read: Reading::Lines(Some(|_| Box::new(capture_files::ExitStatusParser))),
        detect: Detect::Table(Table {
            names: &[r"^exit_status\.txt$"],
            sniff: &[r"(?m)^(exit_code: -?\d+|signal: SIG[A-Z]+ \(\d+\))$"],
            min_points: 1,
            by_name: ByName::UnlessContradicted(None),
        }),
    };
    /// `trainwreck run`'s `samples.csv` time series (its peaks are in `peaks.txt`).
    CaptureSamples = "capture-samples" {
        log: false,
        read: Reading::Samples,
        detect: Detect::Table(Table {
            names: &[r"^samples\.csv$"],
            sniff: &[r"^t_ms,"],
            min_points: 1,
            by_name: ByName::UnlessContradicted(None),
        }),
    };
    /// torchelastic error file (JSON written by `@record`).
    TorchelasticError = "torchelastic-error" {
        log: false,
        read: Reading::Lines(Some(|_| Box::new(torchelastic::ErrorFileParser::default()))),
        detect: Detect::Table(Table {
            names: &[r"^error\.json$", r"torchelastic.*\.json$"],
            sniff: &[
                r#"^\s*\{\s*"message"\s*:"#,
                r#""errorTraits""#,
                r#""extraInfo"\s*:\s*\{"#,
            ],
            min_points: 2,
            by_name: ByName::UnlessContradicted(None),
        }),
    };
    /// `docker inspect` JSON.
    DockerInspect = "docker-inspect" {
        log: false,
        read: Reading::Lines(Some(|_| Box::new(docker::InspectParser::default()))),
        detect: Detect::Table(Table {
            names: &[r"docker.?inspect"],
            sniff: &[r#""HostConfig"\s*:"#, r#""ShmSize"\s*:"#],
            min_points: 2,
            by_name: ByName::UnlessContradicted(None),
        }),
    };
    /// `kubectl describe pod` / `kubectl get pod -o json|yaml`.
    K8sPod = "k8s-pod" {
        log: false,
        read: Reading::Lines(Some(|_| Box::new(k8s::PodParser::default()))),
        detect: Detect::Table(Table {
            names: &[r"(kubectl|describe|pod).*\.(txt|log|ya?ml|json)$"],
            sniff: &[
                r"(?m)^Name:\s+\S+\n(?:.*\n){0,3}?Namespace:",
                r"(?m)^\s*Last State:\s+Terminated",
                r#"(?m)^\s*(kind:\s*Pod|"kind":\s*"Pod")"#,
                r"(?m)^\s*Reason:\s+OOMKilled",
            ],
            min_points: 2,
            by_name: ByName::UnlessContradicted(None),
        }),
    };
    /// `nvidia-smi --query-gpu=… --format=csv`.
    NvidiaSmiCsv = "nvidia-smi-csv" {
        log: false,
        read: Reading::Lines(Some(|_| Box::new(nvidia_smi::CsvParser::default()))),
        detect: Detect::Table(Table {
            names: &[r"nvidia.?smi.*(query|csv)", r"\.csv$"],
            sniff: &[
                r"(?m)^index, ?name",
                r"memory\.(used|total)( \[MiB\])?",
                // --query-compute-apps, --query-remapped-rows
                r"(?m)^pid, ?process_name",
                r"(?m)^gpu_bus_id, ?remapped_rows\.",
                // noheader: a row with a PCI bus id among comma-separated fields
                r"(?m)^\d+, [^,\n]+, [0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.\d",
            ],
            min_points: 1,
            by_name: ByName::UnlessContradicted(None),
        }),
    };
    /// `nvidia-smi -q`.
    NvidiaSmiQ = "nvidia-smi-q" {
        log: false,
        read: Reading::Lines(Some(|_| Box::new(nvidia_smi::QueryParser::default()))),
        detect: Detect::Table(Table {
            names: &[r"nvidia.?smi.*[-_]q\b", r"nvidia.?smi.*-q\.txt$"],
            sniff: &[
                r"==============NVSMI LOG==============",
                r"(?m)^Attached GPUs\s+:",
            ],
            min_points: 1,
            by_name: ByName::UnlessContradicted(None),
        }),
    };
    /// `nvidia-smi` default table.
    NvidiaSmi = "nvidia-smi" {
        log: false,
        read: Reading::Lines(Some(|_| Box::new(nvidia_smi::TableParser::default()))),
        detect: Detect::Table(Table {
            names: &[r"^nvidia.?smi(\.txt|\.log|)$"],
            sniff: &[r"NVIDIA-SMI \d", r"\| GPU\s+Name\s+"],
            min_points: 1,
            by_name: ByName::UnlessContradicted(None),
        }),
    };
    /// `df` output.
    Df = "df" {
        log: false,
        read: Reading::Lines(Some(|_| Box::new(df::DfParser::new()))),
        detect: Detect::Table(Table {
            names: &[r"^df([-_.].*)?$"],
            sniff: &[r"(?m)^Filesystem\s+(Size|1[KM]?-blocks|1B-blocks|Type|\d+[KMG]?-blocks)"],
            min_points: 1,
            by_name: ByName::UnlessContradicted(None),
        }),
    };
    /// `/proc/meminfo`.
    Meminfo = "meminfo" {
        log: false,
        read: Reading::Lines(Some(|_| Box::new(meminfo::MeminfoParser::default()))),
        detect: Detect::Table(Table {
            names: &[r"meminfo"],
            sniff: &[r"(?m)^MemTotal:\s+\d+ kB", r"(?m)^MemAvailable:"],
            min_points: 1,
            by_name: ByName::UnlessContradicted(None),
        }),
    };
    /// `free -b` / `free -h`.
    Free = "free" {
        log: false,
        read: Reading::Lines(Some(|name| Box::new(meminfo::FreeParser::for_file(name)))),
        detect: Detect::Table(Table {
            names: &[r"^free([-_.].*)?$"],
            sniff: &[r"(?m)^\s+total\s+used\s+free\s+shared\s+buff"],
            min_points: 1,
            by_name: ByName::UnlessContradicted(None),
        }),
    };
    /// A cgroup v1 or v2 memory file (`memory.events`, `memory.max`, …).
    CgroupMemory = "cgroup-memory" {
        log: false,
        read: Reading::Lines(Some(|name| Box::new(cgroup::CgroupParser::for_file(name)))),
        detect: Detect::Table(Table {
            names: &[
                r"^memory\.(events(\.local)?|max|current|peak|high|low|min|stat|swap\.\w+|oom\.group|pressure)$",
                r"^memory\.(limit_in_bytes|usage_in_bytes|max_usage_in_bytes|failcnt|oom_control|memsw\.\w+)$",
            ],
            sniff: &[r"(?m)^oom_kill \d+\n", r"(?m)^oom_kill_disable \d"],
            min_points: 1,
            by_name: ByName::Decides,
        }),
    };
    /// `ulimit -a` or `/proc/<pid>/limits`.
    Ulimit = "ulimit" {
        log: false,
        read: Reading::Lines(Some(|_| Box::new(ulimit::UlimitParser::default()))),
        detect: Detect::Table(Table {
            names: &[r"ulimit", r"^limits(\.txt)?$", r"proc_limits"],
            sniff: &[
                r"(?m)^open files\s+\(-n\)",
                r"(?m)^max locked memory\s+\(",
                r"(?m)^Limit\s+Soft Limit\s+Hard Limit",
            ],
            min_points: 1,
            by_name: ByName::Decides,
        }),
    };
    /// Kernel log: dmesg (raw, -T, -H), journalctl -k, kern.log/syslog.
    Dmesg = "dmesg" {
        log: false,
        read: Reading::Lines(Some(|_| Box::new(dmesg::DmesgParser::default()))),
        detect: Detect::Table(Table {
            names: &[
                r"dmesg",
                r"kern\.log",
                r"^syslog",
                r"journal.*-k",
                r"^messages$",
            ],
            sniff: &[
                r"(?m)^\[\s*\d+\.\d{6}\] ",
                // dmesg -H: deltas and minute headers
                r"(?m)^\[\s*\+\d+\.\d{6}\] ",
                r"(?m)^\[[A-Z][a-z]{2}\d{1,2} \d\d:\d\d\] ",
                // dmesg --time-format iso
                r"(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d{6}[+-]\d\d:\d\d ",
                // journalctl/syslog with localized (CJK) month names
                r"(?m)^\d{1,2}[月월] +\d+ \d\d:\d\d:\d\d \S+ kernel: ",
                r"(?m)^\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\] ",
                r"(?m)^\S+ +\d+ \d\d:\d\d:\d\d \S+ kernel: ",
                r"(?m)^\d{4}-\d\d-\d\dT\S+ \S+ kernel: ",
                r"NVRM: ",
            ],
            min_points: 1,
            by_name: ByName::UnlessContradicted(None),
        }),
    };
    /// `coredumpctl info`, systemd-coredump journal fields, gdb backtraces.
    CoreText = "core-text" {
        log: false,
        read: Reading::Lines(Some(|_| Box::new(elfcore::text::CoreTextParser::new()))),
        detect: Detect::Table(Table {
            names: &[r"coredumpctl", r"gdb.*(bt|backtrace)", r"backtrace"],
            sniff: &[
                r"(?m)^\s*PID: \d+ \(.*\)\n\s*UID:",
                r"(?m)^#\d+\s+0x[0-9a-f]+ in ",
                r"(?m)^COREDUMP_SIGNAL=",
                r"(?m)^Program terminated with signal SIG",
            ],
            min_points: 1,
            by_name: ByName::UnlessContradicted(None),
        }),
    };
    /// Slurm job output, `sacct`, `scontrol show job`.
    SlurmLog = "slurm-log" {
        log: true,
        read: Reading::Lines(Some(|_| Box::new(slurm::SlurmParser::default()))),
        detect: Detect::Table(Table {
            names: &[r"^slurm-\d+(_\d+)?\.out$", r"sacct", r"scontrol"],
            sniff: &[
                r"slurmstepd: error:",
                r"(?m)^\s*JobId=\d+ JobName=",
                r"(?m)^JobID\s+JobName",
                r"(?m)^JobID\|",
            ],
            min_points: 1,
            by_name: ByName::UnlessContradicted(None),
        }),
    };
    /// `env` dumps, `pip list`, `python -m torch.utils.collect_env`.
    EnvDump = "env-dump" {
        log: false,
        read: Reading::Lines(Some(|_| Box::new(envdump::EnvDumpParser::default()))),
        detect: Detect::Table(Table {
            names: &[
                r"^env(iron(ment)?)?(\.txt)?$",
                r"pip.?(list|freeze)",
                r"collect.?env",
                r"ds.?report",
            ],
            sniff: &[
                r"(?m)^PyTorch version: ",
                r"(?m)^Package\s+Version\n-+ -+",
                r"(?m)^(PATH|HOME|HOSTNAME)=",
                r"(?m)^torch==\d",
                // pip freeze: two `name==version` lines in a row
                r"(?m)^[A-Za-z0-9_.\-]+==\d\S*\n[A-Za-z0-9_.\-]+==\d",
                r"DeepSpeed general environment info:",
            ],
            min_points: 1,
            by_name: ByName::UnlessContradicted(Some(assignments)),
        }),
    };
    /// UCX / Open MPI output.
    UcxMpiLog = "ucx-mpi-log" {
        log: true,
        read: Reading::Lines(None),
        detect: Detect::Table(Table {
            names: &[],
            sniff: &[
                r"(?m)^\[\S+:\d+:\d+:\d+\] +\S+\.c:\d+ ",
                r"\[\d+,\d+\]<std(out|err)>:",
                r"==== backtrace \(tid:",
                r"Caught signal \d+ \(",
            ],
            min_points: 1,
            by_name: ByName::UnlessContradicted(None),
        }),
    };
    /// DeepSpeed launcher and runtime output.
    DeepspeedLog = "deepspeed-log" {
        log: true,
        read: Reading::Lines(None),
        detect: Detect::Table(Table {
            names: &[],
            sniff: &[
                r"\[(INFO|WARNING|ERROR)\] \[(launch|runner|engine|logging|config|utils)\.py:\d+:",
                r"deepspeed\.launcher",
                r"DeepSpeed ",
            ],
            min_points: 1,
            by_name: ByName::UnlessContradicted(None),
        }),
    };
    /// Hugging Face Trainer / accelerate / LLaMA-Factory logs.
    HfTrainerLog = "hf-trainer-log" {
        log: true,
        read: Reading::Lines(None),
        detect: Detect::Table(Table {
            names: &[],
            sniff: &[
                r"\[(INFO|WARNING)\|(trainer|training_args|modeling_utils)\.py:\d+\]",
                r"\{'loss': ",
                r"llamafactory",
                r"\*\*\*\*\* Running training \*\*\*\*\*",
            ],
            min_points: 1,
            by_name: ByName::UnlessContradicted(None),
        }),
    };
    /// PyTorch / torchrun / torch.distributed.elastic console output.
    TorchLog = "torch-log" {
        log: true,
        read: Reading::Lines(None),
        detect: Detect::Table(Table {
            names: &[r"^(std(out|err)|console|train|rank\d+|.*rank.?\d+.*)\.(log|txt)$"],
            sniff: &[
                r"\[rank\d+\]:",
                r"\[default\d+\]:",
                r"torch/distributed/",
                r"torch\.distributed",
                r"ProcessGroupNCCL",
                r"Traceback \(most recent call last\)",
            ],
            min_points: 1,
            by_name: ByName::Hints,
        }),
    };
    /// NCCL debug output (`NCCL INFO` / `NCCL WARN`).
    NcclLog = "nccl-log" {
        log: true,
        read: Reading::Lines(None),
        detect: Detect::Table(Table {
            names: &[r"nccl.*\.(log|txt)$"],
            sniff: &[r"NCCL (INFO|WARN) "],
            min_points: 1,
            by_name: ByName::Hints,
        }),
    };
    /// ELF core dump.
    ElfCore = "elf-core" {
        log: false,
        read: Reading::Core,
        detect: Detect::ByContent,
    };
    /// PyTorch Flight Recorder dump (pickle).
    FlightRecorder = "flight-recorder" {
        log: false,
        read: Reading::FlightRecorder,
        detect: Detect::ByContent,
    };
    /// Binary data that is not a format we read: not scanned.
    Binary = "binary" {
        log: false,
        read: Reading::NotRead,
        detect: Detect::ByContent,
    };
    /// Text we could not classify more precisely: still scanned.
    Text = "text" {
        log: true,
        read: Reading::Lines(None),
        detect: Detect::ByContent,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_in_the_enums_order() {
        for (i, k) in KINDS.iter().enumerate() {
            assert_eq!(k.kind as usize, i);
            assert_eq!(SourceKind::ALL[i], k.kind);
        }
    }
}
