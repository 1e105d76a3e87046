//! What changed between a run that worked and one that failed (`trainwreck diff GOOD BAD`,
//! `analyze BAD --baseline GOOD`). Each side is analysed as `analyze` does it; its settings
//! and step trajectory are read once more from its logs and config files
//! (`sources::trainlog`). One comparer per source of truth pairs what both sides tell
//! (`comparers`), each difference is tagged from the comparers' table with the categories it
//! can explain, and the list is ranked against the bad run's top finding; `trajectory` finds
//! where the runs' losses, grad norms or step times part. Returns data only: `report::diff`
//! renders it. Identical values are never listed, noise (times, pids, hosts, ports, paths
//! with run ids, dates or hashes) never compared.

pub(crate) mod comparers;
pub(crate) mod memory;
pub(crate) mod trajectory;

use crate::analyze::Engine;
use crate::correlate::{Finding, RULED_OUT_BELOW};
use crate::facts::FactSet;
use crate::model::{Category, Fact, Lang, Text, Verdict, Warning};
use crate::sources::SourceKind;
use crate::sources::trainlog::{self, StepPoint};
use serde::Serialize;

pub const SCHEMA: &str = "trainwreck.diff/1";

/// One analysed run, as the comparers read it.
#[derive(Debug, Default)]
pub struct Run {
    /// The paths given for it.
    pub paths: Vec<String>,
    pub verdict: Option<Verdict>,
    pub findings: Vec<Finding>,
    /// Facts of the analysis and the settings read from its logs and config files.
    pub facts: FactSet,
    /// The step trajectory of the log that logged the most steps, with its path.
    pub steps: Vec<StepPoint>,
    pub steps_path: String,
    /// Its memory sampled over time (`trainwreck run`, a polled nvidia-smi), for the page.
    pub samples: Vec<crate::sources::samples::Samples>,
    pub warnings: Vec<Warning>,
}

impl Run {
    /// A run from an analysis already made (its facts, verdict and findings), plus the
    /// settings and steps of its inputs.
    pub fn from_parts(
        paths: &[String],
        facts: &[Fact],
        verdict: Verdict,
        findings: &[Finding],
    ) -> Run {
        let mut run = Run {
            paths: paths.to_vec(),
            verdict: Some(verdict),
            findings: findings.to_vec(),
            ..Run::default()
        };
        for f in facts {
            run.facts.push(f.clone());
        }
        read_settings(&mut run);
        run
    }

    /// Analyse `paths` as `analyze` does, then read their settings and steps.
    pub fn analyse(engine: &Engine, paths: &[String], threads: usize) -> Run {
        let (inputs, mut warnings) = crate::inputs::collect(paths);
        let mut a = engine.run(&inputs, threads);
        warnings.append(&mut a.warnings);
        let d = crate::correlate::correlate(engine.kb, &a);
        let mut run = Run::from_parts(paths, a.facts.all(), d.verdict, &d.findings);
        run.samples = std::mem::take(&mut a.samples);
        run.warnings.splice(0..0, warnings);
        run
    }

    /// The most likely root cause, as the report names it.
    pub fn top(&self) -> Option<&Finding> {
        self.findings
            .first()
            .filter(|f| f.symptom_of.is_none() && f.strength >= RULED_OUT_BELOW)
    }
}

/// The second read of a run's inputs, for settings and steps only: log lines through
/// `trainlog::TrainLogParser`, small `.json`/`.yaml` files as configs. Through the one
/// opener, so archives and compressed files read as they do for `analyze`.
fn read_settings(run: &mut Run) {
    let (inputs, _) = crate::inputs::collect(&run.paths);
    let mut best: Option<(String, Vec<StepPoint>)> = None;
    for input in &inputs {
        let path = input.display.as_str();
        let opened = match crate::sources::open::open(input) {
            Ok(o) => o,
            Err(_) => continue, // the analysis already warned about it
        };
        let name = opened.name.to_ascii_lowercase();
        let config = [".json", ".yaml", ".yml"].iter().any(|e| name.ends_with(e));
        let mut facts = Vec::new();
        let mut stream = opened.stream;
        if config && matches!(opened.kind, SourceKind::Text) {
            let mut text = String::new();
            let mut limited = std::io::Read::take(stream.as_mut(), trainlog::MAX_CONFIG_BYTES);
            if std::io::Read::read_to_string(&mut limited, &mut text).is_err() {
                continue;
            }
            let parsed = if name.ends_with(".json") {
                trainlog::json_config(&text)
            } else {
                trainlog::yaml_config(&text)
            };
            facts = parsed.unwrap_or_default();
        } else if opened.kind.is_log() {
            let mut p = trainlog::TrainLogParser::default();
            let mut reader = crate::sources::reader::ChunkReader::new(stream.as_mut());
            let mut buf = String::new();
            while let Ok(Some((chunk, first))) = reader.next_chunk() {
                for (lineno, line) in crate::sources::reader::lines(chunk, first) {
                    buf.clear();
                    buf.push_str(&String::from_utf8_lossy(line));
                    p.line(lineno, &buf);
                }
            }
            let t = p.finish();
            facts = t.facts;
            if best.as_ref().is_none_or(|(_, s)| t.steps.len() > s.len()) && !t.steps.is_empty() {
                best = Some((path.to_string(), t.steps));
            }
        }
        for mut f in facts {
            f.path = path.to_string();
            f.phase = input.phase;
            run.facts.push(f);
        }
    }
    if let Some((p, s)) = best {
        run.steps_path = p;
        run.steps = s;
    }
}

/// A value as compared: a number (bytes, a count, seconds) or a text.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Num(f64),
    Text(String),
}

impl Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Num(n) if n.is_finite() && n.fract() == 0.0 && n.abs() < 9e15 => {
                s.serialize_i64(*n as i64)
            }
            Value::Num(n) if n.is_finite() => s.serialize_f64(*n),
            Value::Num(n) => s.serialize_str(&n.to_string()),
            Value::Text(t) => s.serialize_str(t),
        }
    }
}

/// How a value reads for people.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Bytes,
    Count,
    Seconds,
    Text,
}

/// "Unlimited" as the ulimit and cgroup parsers store it.
pub const UNLIMITED: f64 = i64::MAX as f64;

/// `64 MiB`, `unlimited`, `0.0094 s`, `4`.
pub fn display(v: &Value, unit: Unit) -> String {
    match (v, unit) {
        (Value::Num(n), _) if *n >= UNLIMITED => "unlimited".into(),
        (Value::Num(n), Unit::Bytes) => crate::rules::template::human_bytes(*n),
        (Value::Num(n), Unit::Seconds) => format!("{} s", short_num(*n)),
        (Value::Num(n), _) => short_num(*n),
        (Value::Text(t), _) => t.clone(),
    }
}

/// A number with at most 4 significant digits after the point, integers as integers.
pub fn short_num(n: f64) -> String {
    if !n.is_finite() {
        return n.to_string();
    }
    if n.fract() == 0.0 && n.abs() < 1e15 {
        return format!("{}", n as i64);
    }
    let s = format!("{n:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "0" || s == "-0" {
        format!("{n:.3e}")
    } else {
        s.to_string()
    }
}

/// Where a value was read: which side, file and line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cite {
    pub side: Side,
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// The line's text.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Good,
    Bad,
}

/// One thing that differs.
#[derive(Debug, Clone, Serialize)]
pub struct Difference {
    /// For people: `/dev/shm size`, `DataLoader workers`; in Chinese (`what_zh`:
    /// `/dev/shm 大小`) except where the label is the input's own name (an environment
    /// variable).
    #[serde(flatten, with = "crate::model::keys::what")]
    pub what: Text,
    /// Stable: `shm.size_bytes`, `config.micro_batch`, `env.NCCL_DEBUG`.
    pub key: String,
    /// The comparer that found it.
    pub source: &'static str,
    pub good: Value,
    pub bad: Value,
    pub unit: Unit,
    /// Categories this difference can explain, in the direction it went.
    pub explains: Vec<Category>,
    /// 0..1: how likely this difference explains the bad run's failure (docs/diff.md).
    pub relevance: f64,
    pub evidence: Vec<Cite>,
    /// The side whose value is the comparer's word for "this run does not have it"
    /// (`unset`, `not set`), not a value it read.
    #[serde(skip)]
    pub absent: Option<Side>,
}

impl Difference {
    /// One side's value for people, in English (`display`).
    pub fn shown(&self, side: Side) -> String {
        display(self.value(side), self.unit)
    }

    /// One side's value for people, in Chinese: what `shown` says, but our own words
    /// (`unlimited`, a value the side does not have) in Chinese; values read stay as read.
    pub fn shown_zh(&self, side: Side) -> String {
        match self.value(side) {
            _ if self.absent == Some(side) => "未设置".to_string(),
            Value::Num(n) if *n >= UNLIMITED => "不限".to_string(),
            v => display(v, self.unit),
        }
    }

    fn value(&self, side: Side) -> &Value {
        match side {
            Side::Good => &self.good,
            Side::Bad => &self.bad,
        }
    }
}

/// A run as the comparison names it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunSummary {
    pub paths: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// The top finding: its rule and category.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top: Option<TopFinding>,
    /// Highest step the run logged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TopFinding {
    pub rule: String,
    pub category: Category,
    #[serde(flatten, with = "crate::model::keys::title")]
    pub title: Text,
}

impl RunSummary {
    fn of(run: &Run) -> RunSummary {
        RunSummary {
            paths: run.paths.clone(),
            verdict: run.verdict,
            top: run.top().map(|f| TopFinding {
                rule: f.rule.clone(),
                category: f.category,
                title: f.title.clone(),
            }),
            steps: run.steps.iter().map(|p| p.step).max(),
        }
    }
}

/// The comparison: `trainwreck.diff/1`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Diff {
    pub schema: &'static str,
    pub good: RunSummary,
    pub bad: RunSummary,
    /// "Likely culprit: …" when the most relevant difference explains the bad run's top
    /// finding; else what can be said.
    /// In both languages (`headline`, `headline_zh`).
    #[serde(flatten, with = "crate::model::keys::headline")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headline: Option<Text>,
    /// Most relevant first.
    pub differences: Vec<Difference>,
    /// Where the bad run's trajectory left the good run's band, when both logged steps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parting: Option<trajectory::Parting>,
    /// Both runs' logged losses, grad norms and step times (numbers only), for the HTML
    /// page's charts; not part of `trainwreck.diff/1`.
    #[serde(skip)]
    pub curves: trajectory::Curves,
    /// Both runs' memory over time where both sampled it, for the HTML page's charts; not
    /// part of `trainwreck.diff/1`.
    #[serde(skip)]
    pub memory: memory::MemoryCurves,
    /// Inputs either side could not read (each says which side), in both languages
    /// (`warnings`, `warnings_zh`, one for one).
    #[serde(flatten, with = "crate::model::keys::warnings")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Text>,
}

/// How strongly a difference counts, by what it explains (docs/diff.md "Relevance").
pub(crate) mod weight {
    /// It explains the bad run's top finding.
    pub const TOP: f64 = 1.0;
    /// It explains another finding of the bad run.
    pub const OTHER_FINDING: f64 = 0.6;
    /// It can explain a failure, none of which the bad run shows.
    pub const SOME: f64 = 0.3;
    /// It explains nothing in the table.
    pub const NOTHING: f64 = 0.15;
}

/// Compare two analysed runs.
pub fn compare(good: &Run, bad: &Run) -> Diff {
    let top = bad.top().map(|f| f.category);
    let others: Vec<Category> = bad
        .findings
        .iter()
        .filter(|f| f.strength >= RULED_OUT_BELOW)
        .map(|f| f.category)
        .collect();
    let mut differences = Vec::new();
    for c in comparers::COMPARERS {
        let g = (c.read)(good);
        let b = (c.read)(bad);
        for d in comparers::pair(c, &g, &b) {
            differences.push(d);
        }
    }
    for d in &mut differences {
        let (explains, w) = comparers::explains(&d.key, &d.good, &d.bad);
        d.explains = explains;
        let f = if top.is_some_and(|t| d.explains.contains(&t)) {
            weight::TOP
        } else if d.explains.iter().any(|c| others.contains(c)) {
            weight::OTHER_FINDING
        } else if !d.explains.is_empty() {
            weight::SOME
        } else {
            weight::NOTHING
        };
        d.relevance = (w * f * 1000.0).round() / 1000.0;
    }
    // Most relevant first; ties keep the comparers' order (stable sort).
    differences.sort_by(|a, b| b.relevance.total_cmp(&a.relevance));
    let headline = headline(&differences, bad, top);
    let parting = trajectory::parting(good, bad);
    let curves = trajectory::curves(good, bad);
    let memory = memory::curves(good, bad);
    let mut warnings = Vec::new();
    for (side, side_zh, run) in [("good", "正常运行", good), ("bad", "失败运行", bad)] {
        for w in &run.warnings {
            let zh = match &w.path {
                Some(p) => format!("{side_zh}：{p}: {}", w.message.zh),
                None => format!("{side_zh}：{}", w.message.zh),
            };
            warnings.push(Text::new(format!("{side}: {w}"), zh));
        }
    }
    Diff {
        schema: SCHEMA,
        good: RunSummary::of(good),
        bad: RunSummary::of(bad),
        headline,
        differences,
        parting,
        curves,
        memory,
        warnings,
    }
}

/// The headline in English and in Chinese: both are data of the comparison, as a finding's
/// `title` and `title_zh` are (the report picks one; the JSON carries both).
fn headline(diffs: &[Difference], bad: &Run, top: Option<Category>) -> Option<Text> {
    let first = diffs.first();
    let n = diffs.len();
    match (top, first) {
        (Some(t), Some(d)) if d.explains.contains(&t) => {
            let (b, g) = (d.shown(Side::Bad), d.shown(Side::Good));
            let (bz, gz) = (d.shown_zh(Side::Bad), d.shown_zh(Side::Good));
            Some(Text::new(
                format!(
                    "Likely culprit: {} {b} here vs {g} in the good run (can explain {t}, the top finding)",
                    d.what.en
                ),
                format!(
                    "最可能的原因：{}，本次为 {bz}，正常那次为 {gz}（能解释首要发现 {t}）",
                    d.what.get(Lang::Zh)
                ),
            ))
        }
        (Some(t), _) => Some(Text::new(
            format!(
                "No difference found explains {t} (the top finding); {} listed",
                plural(n, "difference")
            ),
            format!("没有哪项差异能解释首要发现 {t}；共列出 {n} 项差异"),
        )),
        (None, _) if bad.verdict == Some(Verdict::NoFailure) => Some(Text::new(
            format!(
                "The second run did not fail either; {} listed",
                plural(n, "difference")
            ),
            format!("第二次运行也没有失败；共列出 {n} 项差异"),
        )),
        _ => None,
    }
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

impl Diff {
    /// Every text from the inputs (values, cited lines and paths, the headline), for the
    /// report's one walk (redaction, terminal neutralising).
    pub fn map_texts(&mut self, f: &mut dyn FnMut(Option<&str>, &str) -> String) {
        fn each(f: &mut dyn FnMut(Option<&str>, &str) -> String, t: &mut String) {
            *t = f(None, t);
        }
        for t in self.headline.iter_mut().flat_map(Text::each_mut) {
            each(f, t);
        }
        for s in [&mut self.good, &mut self.bad] {
            s.paths.iter_mut().for_each(|t| each(f, t));
        }
        for d in &mut self.differences {
            d.what.each_mut().for_each(|t| each(f, t));
            for (side, v) in [(Side::Good, &mut d.good), (Side::Bad, &mut d.bad)] {
                // A value is masked by its key (`config.db_password`) as well as by its shape;
                // the comparer's own word for "not set" is not a value.
                if let Value::Text(t) = v
                    && d.absent != Some(side)
                {
                    *t = f(Some(&d.key), t);
                }
            }
            for c in &mut d.evidence {
                each(f, &mut c.text);
                each(f, &mut c.path);
            }
        }
        if let Some(p) = &mut self.parting {
            for c in &mut p.evidence {
                each(f, &mut c.text);
                each(f, &mut c.path);
            }
        }
        each(f, &mut self.curves.good_path);
        each(f, &mut self.curves.bad_path);
        each(f, &mut self.memory.good_path);
        each(f, &mut self.memory.bad_path);
        // Every English warning, then every Chinese one (the order pseudonyms are given in).
        for t in self.warnings.iter_mut().map(|w| &mut w.en) {
            each(f, t);
        }
        for t in self.warnings.iter_mut().map(|w| &mut w.zh) {
            each(f, t);
        }
    }

    /// Every text of the comparison through the one redactor (values by their key too).
    pub fn redact(&mut self, red: &mut crate::redact::Redactor) {
        self.map_texts(&mut |name, s| match name {
            Some(n) => red.value_of(n, s),
            None => red.text(s),
        });
    }
}
