//! Sources: what each kind of input file is and what it says. Detection, the streaming line
//! reader, prefix peeling (rank/host/time), and one fact parser per snapshot kind.
//! Sources emit lines, facts and events; they never import the rule engine.

pub mod detect;
pub mod elfcore;
pub mod launcher;
pub mod prefix;
pub mod reader;

use crate::model::{Fact, SourceKind};
use std::collections::BTreeMap;

/// A structured record read from a source: an OOM kill, an Xid, a segfault line, a
/// launcher's exit report. Events feed the timeline and cross-rank correlation.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Event {
    /// `oom_kill`, `xid`, `segfault`, `aer`, `mce`, `nvlink`, `exit`, …
    pub kind: String,
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
    pub warnings: Vec<String>,
}

/// A parser that turns one snapshot's lines into facts. Fed every line of the file in order
/// (without the newline, lossily decoded), then `finish`.
pub trait FactParser {
    fn line(&mut self, lineno: u64, line: &str, out: &mut FactOut);
    fn finish(&mut self, _out: &mut FactOut) {}
}

/// The fact parser for a kind of file, if that kind carries facts.
/// `file_name` is the bare name (cgroup files say what they hold only through their name).
pub fn fact_parser(kind: SourceKind, file_name: &str) -> Option<Box<dyn FactParser>> {
    // Snapshot parsers register here, one arm per kind.
    let _ = file_name;
    match kind {
        SourceKind::CoreText => Some(Box::new(elfcore::text::CoreTextParser::new())),
        _ => None,
    }
}
