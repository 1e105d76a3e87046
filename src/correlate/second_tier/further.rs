//! Ranks 2 and 3 when the first cause is weak (issue 27): a first cause that only says something
//! failed (`python_exception`, `other`), one the tokens proposed, or one resting on thin
//! evidence leaves the other kinds of failure the input's evidence points at unnamed. This
//! reads that evidence again, more widely than the tokens' candidates do: the lines that say
//! the run died for the subsystem their message names (`HINTS`: the CUDA stack, an extension
//! build, a transport, a failed write, a failed size or setting check, memory), how each log
//! stops (`stall`), and the error-tail lines that hold a token without saying the run died (a
//! metric turned NaN, a kill survived), each at half weight. Up to [`MAX_FURTHER`] categories
//! no finding names yet become the second tier's findings, always below the first cause and at
//! most [`CAP`]: candidates to check, never the answer. Only when a live cause exists (the run
//! failed by the other findings' account), so a run that did not fail gains nothing. Works on
//! the findings and the error tail the scan kept; it reads no file and formats nothing.

use super::{Candidate, RULE, finding};
use crate::analyze::Analysis;
use crate::correlate::{ErrorLine, Finding, GENERIC, RULED_OUT_BELOW, stall};
use crate::model::{Category, text};
use regex::Regex;
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// At most this many further categories are named.
pub const MAX_FURTHER: usize = 2;
/// A further candidate's strength is at most this (and below the first cause's).
pub const CAP: f64 = 0.35;
/// A first cause of a specific category at or above this strength, from a rule, is not weak.
pub const WEAK_BELOW: f64 = 0.6;
/// Weight kept by evidence that does not say the run died (a token on a survived or warning
/// line, a metric line).
const ASIDE: f64 = 0.5;

/// One hint: its id (cited in a finding's score), its regex, and the categories it weighs.
type Hint = (&'static str, &'static str, &'static [(Category, f64)]);

/// What a failing line's message says about the subsystem that failed, whatever program
/// printed it: (id, regex, categories and weights). Read only on the lines that say the run
/// died, and only when the first cause is weak: a hint names a place to look, never a cause.
const HINTS: &[Hint] = &[
    // The CUDA stack by name: the runtime, its libraries, the compiler, a GPU architecture
    // (not a device ordinal: `cuda:1` in a message about tensors names a device, not the stack).
    (
        "hint: names the CUDA stack",
        r"(?i:\bcuda[ _](?:version|runtime|toolkit|setup|home|driver|librar|capabilit|arch|compil)|(?:built|compiled) (?:for|with) cuda|\bcudnn|\bcublas|\bnvcc\b|compute capability|\bsm_\d{2}\b|\b(?:Ampere|Volta|Turing|Pascal|Hopper)\b|driver version|\blibcuda|\bcu\d{3}\b)",
        &[(Category::CudaDriverMismatch, 0.25)],
    ),
    // A native extension that did not build: the compiler or toolkit the build needs.
    (
        "hint: an extension build failed",
        r"(?i:error building extension|ninja: build stopped|nvcc\S*: not found|no cuda runtime is found)",
        &[(Category::CudaDriverMismatch, 0.35)],
    ),
    // A connection between processes: the transport or the rendezvous.
    (
        "hint: names a connection",
        r"(?i:connectFullMesh|\bgloo\b|\btcp\b|\bsocket\b|connection (?:refused|reset|closed|timed out)|(?:connect|connection) (?:failed|timeout))",
        &[
            (Category::NcclNetwork, 0.2),
            (Category::RendezvousFailure, 0.2),
        ],
    ),
    // A write that failed: the disk first.
    (
        "hint: a write failed",
        r"(?i:\berror (?:while )?writing\b|\bwrite failed|\b(?:failed to|could not|cannot|unable to) write\b)",
        &[
            (Category::DiskFull, 0.25),
            (Category::CheckpointError, 0.15),
        ],
    ),
    // A framework checking sizes or settings it was given.
    (
        "hint: a size or setting check failed",
        r"(?i:must be (?:divisible|a multiple|equal|less|greater|positive|between|one of)|must divide|divisible by|does not match|do not match|doesn't match|size mismatch|invalid (?:value|argument|choice|configuration))",
        &[(Category::ConfigError, 0.25)],
    ),
    // Memory by name.
    (
        "hint: names memory running out",
        r"(?i:resource exhausted|out of memory|\bOOM\b|failed to allocate)",
        &[(Category::GpuOom, 0.2), (Category::HostOom, 0.2)],
    ),
];

static COMPILED: LazyLock<Vec<Option<Regex>>> =
    LazyLock::new(|| HINTS.iter().map(|h| Regex::new(h.1).ok()).collect());

/// Where one line of evidence comes from.
#[derive(Clone, Copy, PartialEq)]
enum From {
    /// A line that says the run died.
    Death,
    /// How a log stopped.
    Stop(stall::Kind),
    /// An error-tail line that holds a token but does not say the run died.
    Aside,
}

/// Is `f` a cause that leaves ranks 2 and 3 to be filled: generic, the tokens' own, or weak?
fn weak(f: &Finding) -> bool {
    GENERIC.contains(&f.category) || f.rule == RULE || f.confidence < WEAK_BELOW
}

/// Add the further candidates to `findings` (see the module's head).
pub fn add(a: &Analysis, findings: &mut Vec<Finding>) {
    let mut order = findings.clone();
    crate::correlate::rank(&mut order);
    let Some(top) = order
        .iter()
        .find(|f| f.symptom_of.is_none())
        .filter(|f| f.confidence >= RULED_OUT_BELOW && weak(f))
    else {
        return;
    };
    let top_strength = top.confidence;
    // The categories already named: nothing to add for them.
    let named: Vec<Category> = findings.iter().map(|f| f.category).collect();

    let mut lines: Vec<ErrorLine> = Vec::new();
    let mut from: Vec<From> = Vec::new();
    for l in crate::correlate::verdict::death_signs(a) {
        lines.push(l);
        from.push(From::Death);
    }
    for s in stall::signs(a) {
        if !lines.iter().any(|l| l.text == s.line.text) {
            lines.push(s.line);
            from.push(From::Stop(s.kind));
        }
    }
    let table = crate::tokens::table();
    // A line a finding cites was read by what made it (a launcher's teardown of the other
    // ranks is that, not a cause of its own).
    let cited = |path: &str, line: u64| {
        findings
            .iter()
            .flat_map(|f| &f.evidence)
            .any(|e| e.path == path && e.line == Some(line))
    };
    for (t, input) in crate::correlate::verdict::run_tail(a) {
        if lines.iter().any(|l| l.text == t.text)
            || cited(&input.path, t.line)
            || table.hits(&t.text).next().is_none()
        {
            continue;
        }
        lines.push(ErrorLine {
            path: input.path.clone(),
            line: t.line,
            text: t.text.clone(),
        });
        from.push(From::Aside);
    }
    if lines.is_empty() {
        return;
    }

    let mut by_cat: BTreeMap<Category, Candidate> = BTreeMap::new();
    let mut add_term = |cat: Category, id: &str, w: f64, i: usize| {
        if named.contains(&cat) || cat == Category::Other {
            return;
        }
        let c = by_cat.entry(cat).or_insert_with(|| Candidate {
            terms: Vec::new(),
            against: Vec::new(),
        });
        match c.terms.iter_mut().find(|x| x.0 == id) {
            Some(x) => x.2 = i,
            None => c.terms.push((id.to_string(), w, i)),
        }
    };
    for (i, l) in lines.iter().enumerate() {
        let text = crate::correlate::traceback::bare(&l.text);
        let scale = if from[i] == From::Aside { ASIDE } else { 1.0 };
        for t in table.hits(text) {
            for &(cat, w) in &t.weights {
                add_term(cat, &t.id, w * scale, i);
            }
        }
        if let From::Stop(kind) = from[i] {
            for &(cat, w) in kind.weights() {
                add_term(cat, kind.id(), w, i);
            }
        }
        if from[i] == From::Aside {
            continue;
        }
        for (h, re) in HINTS.iter().zip(COMPILED.iter()) {
            if re.as_ref().is_some_and(|re| re.is_match(text)) {
                for &(cat, w) in h.2 {
                    add_term(cat, h.0, w, i);
                }
            }
        }
    }
    let mut ranked: Vec<(Category, Candidate)> = by_cat.into_iter().collect();
    ranked.sort_by(|(ca, x), (cb, y)| {
        y.confidence()
            .total_cmp(&x.confidence())
            .then_with(|| super::latest(y).cmp(&super::latest(x)))
            .then(ca.cmp(cb))
    });
    // Below the first cause and at most the cap: `finding` ranks a candidate below the
    // strength it is given as the explained one.
    let ceiling = top_strength.min(CAP + 0.01);
    let stops: Vec<Option<stall::Kind>> = from
        .iter()
        .map(|f| match f {
            From::Stop(k) => Some(*k),
            _ => None,
        })
        .collect();
    for (cat, cand) in ranked.into_iter().take(MAX_FURTHER) {
        let Some(mut f) = finding(&lines, &stops, cat, &cand, Some(ceiling)) else {
            continue;
        };
        if f.confidence <= 0.0 {
            continue;
        }
        f.title = text!(
            "Also possible, {cat}: other evidence in the input points at it",
            "另一种可能，{cat}：输入里的其他证据指向它"
        );
        let ids: Vec<&str> = cand.terms.iter().map(|t| t.0.as_str()).collect();
        for c in f.score.iter_mut().filter(|c| c.weight == 0.0) {
            c.what = format!(
                "the first cause is weak ({}, {:.2}); other evidence names {cat}: {} (at most {CAP}, below the first cause)",
                top.category,
                top_strength,
                ids.join(", ")
            );
        }
        findings.push(f);
    }
}
