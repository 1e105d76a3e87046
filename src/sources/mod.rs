//! Sources: what each kind of input file is (`kinds`, one row per kind) and what it says. Opening an input (`open`: the one
//! place that opens, decompresses, decodes and detects; `archive`: the members of a tar or zip;
//! `encoding`: text not in UTF-8; `holes`: runs of NULs in a log), the streaming line reader, prefix peeling (rank/host/time), one fact parser per snapshot kind, the launcher/NCCL line reader and each
//! log's last lines. Sources emit lines, facts and typed events; they never import the rule
//! engine.

pub(crate) mod archive;
pub(crate) mod capture_files;
pub(crate) mod cgroup;
pub(crate) mod decompress;
pub mod detect;
pub(crate) mod df;
pub(crate) mod dmesg;
pub(crate) mod docker;
pub mod elfcore;
pub mod encoding;
pub(crate) mod ending;
pub(crate) mod envdump;
pub mod flight_recorder;
pub(crate) mod holes;
pub(crate) mod k8s;
pub(crate) mod kinds;
pub(crate) mod last_lines;
pub mod launcher;
pub(crate) mod meminfo;
pub(crate) mod nvidia_smi;
pub mod open;
pub(crate) mod prefix;
pub mod reader;
pub(crate) mod rewrap;
pub(crate) mod samples;
pub(crate) mod slurm;
pub(crate) mod stackdump;
pub(crate) mod torchelastic;
pub(crate) mod trainlog;
pub(crate) mod ulimit;
pub(crate) mod units;
pub(crate) mod unmangle;

use crate::model::{Fact, Text};
pub use kinds::SourceKind;
use std::collections::BTreeMap;

/// What a source event is. Closed: a parser that reads something new adds a kind here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// The kernel (or a cgroup) OOM killer killed a process.
    #[default]
    OomKill,
    /// systemd-oomd killed a unit under memory pressure.
    OomdKill,
    /// An NVIDIA Xid error.
    Xid,
    /// A user process faulted (`segfault at`, `general protection fault`).
    Segfault,
    /// A PCIe Advanced Error Reporting line.
    Aer,
    /// A machine-check / EDAC memory error.
    Mce,
    /// An NVLink error.
    Nvlink,
    /// Slurm cancelled the job or step (time limit, preemption, by user).
    SlurmCancel,
    /// A Slurm task ended badly (`srun: error: node: task N: …`).
    SlurmTask,
    /// nvidia-smi reported an error for a GPU (`ERR!`, `Unknown Error`).
    SmiError,
    /// A process holding GPU memory, from nvidia-smi's process table.
    GpuProcess,
}

impl EventKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            EventKind::OomKill => "oom_kill",
            EventKind::OomdKill => "oomd_kill",
            EventKind::Xid => "xid",
            EventKind::Segfault => "segfault",
            EventKind::Aer => "aer",
            EventKind::Mce => "mce",
            EventKind::Nvlink => "nvlink",
            EventKind::SlurmCancel => "slurm_cancel",
            EventKind::SlurmTask => "slurm_task",
            EventKind::SmiError => "smi_error",
            EventKind::GpuProcess => "gpu_process",
        }
    }
}

/// A structured record read from a source: an OOM kill, an Xid, a segfault line, a Slurm
/// task's end. Events feed the timeline and cross-rank correlation.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Event {
    pub kind: EventKind,
    /// 1-based line in the file it came from.
    pub line: u64,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, String>,
}

/// What a fact parser hands back. Facts carry their own line; the caller fills in the path.
#[derive(Debug, Default)]
pub struct FactOut {
    pub facts: Vec<Fact>,
    pub events: Vec<Event>,
    /// Parts of the file that could not be read (a truncated row, an unknown column):
    /// reported, never guessed.
    pub warnings: Vec<Text>,
    /// Memory sampled over time in the file (`nvidia-smi` polled with `-l`), for the report's
    /// curves.
    pub samples: Option<samples::Samples>,
}

/// A parser that turns one snapshot's lines into facts. Fed every line of the file in order
/// (without the newline, lossily decoded), then `finish`.
pub trait FactParser {
    fn line(&mut self, lineno: u64, line: &str, out: &mut FactOut);
    fn finish(&mut self, _out: &mut FactOut) {}
}

/// The fact parser for a kind of file (its row's), if that kind carries facts.
/// `file_name` is the bare name (cgroup files say what they hold only through their name).
pub fn fact_parser(kind: SourceKind, file_name: &str) -> Option<Box<dyn FactParser>> {
    match kind.read() {
        kinds::Reading::Lines(Some(parser)) => Some(parser(file_name)),
        _ => None,
    }
}

/// Feed a whole text through a parser, as the analyzer does with a file's lines.
pub fn feed(parser: &mut dyn FactParser, text: &str) -> FactOut {
    let mut out = FactOut::default();
    for (i, line) in text.lines().enumerate() {
        parser.line(
            i as u64 + 1,
            line.strip_suffix('\r').unwrap_or(line),
            &mut out,
        );
    }
    parser.finish(&mut out);
    out
}

/// Parse a text as a file of `kind` named `file_name`; an empty result for kinds without facts.
pub fn parse_text(kind: SourceKind, file_name: &str, text: &str) -> FactOut {
    match fact_parser(kind, file_name) {
        Some(mut p) => feed(p.as_mut(), text),
        None => FactOut::default(),
    }
}
