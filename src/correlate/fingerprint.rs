//! Failure fingerprints: a short stable id (`fp2:` + 16 hex digits) that groups identical
//! failures across jobs, nodes, days and rank counts, and keeps different failures apart.
//! A pure function of the findings and the analysis; it must not read files or format output.
//!
//! Algorithm `fp2` (README.md "Fingerprints"; any change to it bumps the version prefix):
//!
//! 1. A confident root cause (the report's top finding): the key is `rule` + `category` + the
//!    sorted set of the named captures its evidence lines gave (`op=ALLREDUCE`), normalised,
//!    keeping only values that still say something once numbers and sizes are gone. The rule
//!    is the failure class its author defined; whole evidence lines are not used because
//!    which lines and excerpts a run leaves varies with launcher, rank count and log layout.
//!    For the generic categories `python_exception` and `other` the unknown-failure key of
//!    step 2 is added, so two different exceptions caught by one generic rule stay apart.
//!    For `gpu_oom`, when the OOM message shows the card held by something other than this
//!    process's PyTorch (`derive::gpu_memory_holder`), `gpu_memory_holder=other-process` is
//!    added: that failure is fixed by freeing the card, not by a smaller batch (new in fp2).
//! 2. Otherwise (unknown failure): from each file's error tail (`errtail`), the last Python
//!    exception that is not a launcher wrapper (`ChildFailedError`, `CalledProcessError`),
//!    as `Type: normalised message @ frame > frame` with the innermost three frames outside
//!    PyTorch/CUDA/NCCL/site-packages internals (`file.py:function`, no line numbers);
//!    the set over files, sorted. With no exception anywhere: the last three error lines of
//!    each file, normalised, as a sorted set (at most 8).
//! 3. Otherwise a weak finding's rule and category; a run without any sign of failure has none.
//!
//! The key, seeded with [`KEY_SEED`], is hashed with 64-bit FNV-1a. [`normalise`] peels log prefixes (rank, host, pid,
//! time), replaces the run's own host names, URLs, temp and home paths, IPv4 addresses, hex
//! addresses, long mixed ids, sizes and numbers with placeholders, and collapses runs of
//! placeholders (`[0, 1, 2, 3]` and `[0, 1]` both become `[#]`).

use super::gated::Gated;
use super::traceback::{EXCEPTION, FRAME, WRAPPERS, bare, internal_frame};
use super::{Finding, RULED_OUT_BELOW};
use crate::analyze::Analysis;
use crate::errtail::TailLine;
use crate::model::{Category, Verdict};
use crate::rules::KnowledgeBase;
use crate::rules::derive::{GpuMemoryHolder, gpu_memory_holder};
use std::collections::{BTreeMap, BTreeSet};

/// The prefix of every fingerprint: the algorithm's version. `fp2` splits CUDA OOMs by who
/// holds the card; every other key is the same as in `fp1`.
pub const VERSION: &str = "fp2";

/// What the hashed key starts with. It stays `fp1` so that the failures fp2 did not change keep
/// their 16 hex digits (a history's `fp1:X` and `fp2:X` are the same failure).
const KEY_SEED: &str = "fp1";

/// A fingerprint written by an earlier version, as this version writes it: `fp1:X` is `fp2:X`
/// (fp2 changed no key but the OOMs' it split, and the fp1 OOM key is fp2's PyTorch-held one).
/// Anything else is returned as it is.
pub fn current(fp: &str) -> String {
    match fp.strip_prefix("fp1:") {
        Some(hex) => format!("{VERSION}:{hex}"),
        None => fp.to_string(),
    }
}

/// A fingerprint as a user types it (`fp2:` or the older `fp1:`, then 16 hex digits, case
/// ignored), in this version's form; `None` for anything else.
pub fn parse(fp: &str) -> Option<String> {
    let fp = fp.trim();
    let (version, hex) = fp.split_once(':')?;
    let ok = matches!(version, "fp1" | "fp2")
        && hex.len() == 16
        && hex.bytes().all(|b| b.is_ascii_hexdigit());
    ok.then(|| current(&format!("{version}:{}", hex.to_ascii_lowercase())))
}

/// Most normalised lines that enter one key.
const MAX_KEY_LINES: usize = 8;

/// Innermost user frames kept for a traceback.
const KEY_FRAMES: usize = 3;

fn fnv1a(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in data {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// Ordered replacements (`gated`: a regex is compiled only for a text holding one of its
/// literals); the patterns are constants checked by the unit tests.
pub(super) static SUBSTS: [(Gated, &str); 8] = [
    // A launcher's argv list (`['/usr/bin/python3', '-u', 'train.py', …]`).
    (
        Gated::new(r"\[(?:'[^']*',\s*)+'[^']*'\]", &[("',", false)]),
        "<argv>",
    ),
    (
        Gated::new(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://\S+", &[("://", false)]),
        "<url>",
    ),
    (
        Gated::new(
            r"(?:/tmp|/var/tmp|/dev/shm|/scratch|/run/user|/local_disk\d*)/[^\s'\x22:,)]*",
            &[
                ("/tmp", false),
                ("/var/tmp", false),
                ("/dev/shm", false),
                ("/scratch", false),
                ("/run/user", false),
                ("/local_disk", false),
            ],
        ),
        "<tmp>",
    ),
    (
        Gated::new(
            r"/(?:home|Users|users)/[^/\s'\x22]+",
            &[("home/", false), ("Users/", false), ("users/", false)],
        ),
        "/home/<user>",
    ),
    (
        Gated::new(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b", &[]),
        "<ip>",
    ),
    (
        Gated::new(r"\b0[xX][0-9a-fA-F]+\b", &[("0x", true)]),
        "<hex>",
    ),
    (
        Gated::new(
            r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?",
            &[],
        ),
        "<time>",
    ),
    (
        Gated::new(
            r"\b\d+(?:\.\d+)?\s*(?:[KMGTPE]i?B|[KMGTPE]|bytes?|B)\b",
            &[],
        ),
        "<size>",
    ),
];

pub(super) static COLLAPSE: Gated = Gated::new(r"#(?:[\s,.:;/_x*+-]*#)+", &[]);

/// Compile the replacements now (see `correlate::warm_up`).
pub(crate) fn warm_up() {
    for (g, _) in &SUBSTS {
        g.get();
    }
    COLLAPSE.get();
}

/// Replace tokens mixing letters and digits that look like ids (container ids, hashes, temp
/// names) and then every remaining digit run.
fn ids_and_numbers(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    while i < s.len() {
        let c = b[i];
        if c.is_ascii_alphanumeric() {
            let mut j = i;
            while j < b.len() && b[j].is_ascii_alphanumeric() {
                j += 1;
            }
            let tok = &s[i..j];
            let digits = tok.bytes().filter(u8::is_ascii_digit).count();
            let letters = tok.len() - digits;
            let hexish = tok.bytes().all(|c| c.is_ascii_hexdigit());
            let is_id = digits > 0
                && letters > 0
                && ((tok.len() >= 8 && digits >= 2) || (hexish && tok.len() >= 6));
            if is_id {
                out.push_str("<id>");
            } else {
                let mut in_num = false;
                for ch in tok.chars() {
                    if ch.is_ascii_digit() {
                        if !in_num {
                            out.push('#');
                        }
                        in_num = true;
                    } else {
                        out.push(ch);
                        in_num = false;
                    }
                }
            }
            i = j;
        } else {
            let ch_len = s[i..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&s[i..i + ch_len]);
            i += ch_len;
        }
    }
    out
}

/// Replace what varies between reruns of the same failure with placeholders. `hosts` are the
/// run's own host names (from attribution), replaced wherever they appear.
pub fn normalise_with(text: &str, hosts: &[String]) -> String {
    let (_, pos) = crate::sources::prefix::peel(text);
    let mut s = text.get(pos..).unwrap_or(text).trim().to_string();
    for h in hosts {
        if h.len() >= 3 {
            s = s.replace(h.as_str(), "<host>");
        }
    }
    for (sub, with) in &SUBSTS {
        if let Some(re) = sub.for_text(&s)
            && re.is_match(&s)
        {
            s = re.replace_all(&s, *with).into_owned();
        }
    }
    s = ids_and_numbers(&s);
    if let Some(re) = COLLAPSE.get() {
        s = re.replace_all(&s, "#").into_owned();
    }
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// [`normalise_with`] without known hosts.
#[cfg(test)]
pub fn normalise(text: &str) -> String {
    normalise_with(text, &[])
}

fn hash(kind: &str, parts: &[String]) -> String {
    let mut key = format!("{KEY_SEED}\n{kind}");
    for p in parts {
        key.push('\n');
        key.push_str(p);
    }
    format!("{VERSION}:{:016x}", fnv1a(key.as_bytes()))
}

/// Host names the analysis attributed lines to; longest first so `node12` goes before `node1`.
fn known_hosts(findings: &[Finding], a: &Analysis) -> Vec<String> {
    let mut set: BTreeSet<String> = BTreeSet::new();
    for h in &a.hits {
        if let Some(x) = &h.attr.host {
            set.insert(x.clone());
        }
    }
    for f in findings {
        if let Some(x) = &f.origin.host {
            set.insert(x.clone());
        }
        for e in &f.evidence {
            if let Some(x) = &e.host {
                set.insert(x.clone());
            }
        }
    }
    let mut v: Vec<String> = set.into_iter().collect();
    v.sort_by_key(|h| std::cmp::Reverse(h.len()));
    v
}

/// The fingerprint of a report: see the module documentation for the algorithm.
pub fn compute(
    kb: &KnowledgeBase,
    findings: &[Finding],
    a: &Analysis,
    verdict: Verdict,
) -> Option<String> {
    if verdict == Verdict::NoFailure {
        return None;
    }
    let hosts = known_hosts(findings, a);
    // An unknown failure (no rule's cause, at most the second tier's candidates) is grouped
    // by its own error lines, not by a guessed category.
    let top = findings.first().filter(|f| {
        verdict == Verdict::Diagnosed && f.symptom_of.is_none() && f.confidence >= RULED_OUT_BELOW
    });
    if let Some(root) = top {
        return Some(of_finding(kb, root, a, &hosts));
    }
    if let Some(fp) = of_tail(&a.error_tail, &hosts) {
        return Some(fp);
    }
    findings
        .iter()
        .find(|f| f.symptom_of.is_none())
        .or(findings.first())
        .map(|f| hash("rule", &[f.rule.clone(), f.category.to_string()]))
}

/// Categories whose rules catch many different failures: the exception tells them apart.
const GENERIC: &[Category] = &[Category::PythonException, Category::Other];

/// Does a normalised value still say something (a word, not only placeholders)?
fn informative(v: &str) -> bool {
    let mut rest = v.to_string();
    for p in [
        "<size>", "<hex>", "<ip>", "<id>", "<tmp>", "<url>", "<time>", "<host>", "<argv>",
    ] {
        rest = rest.replace(p, "");
    }
    rest.chars().any(|c| c.is_alphabetic())
}

fn of_finding(kb: &KnowledgeBase, root: &Finding, a: &Analysis, hosts: &[String]) -> String {
    let cited: BTreeSet<&str> = root.evidence.iter().map(|e| e.text.as_str()).collect();
    // A line is cited once (`cite_once`) though several signatures' hits may hold it, each
    // with its own excerpt: every hit of the finding's rules on a cited line counts.
    let own: BTreeSet<usize> = kb
        .rules
        .iter()
        .enumerate()
        .filter(|(_, r)| r.name == root.rule || root.merged_rules.contains(&r.name))
        .map(|(i, _)| i)
        .collect();
    let at: BTreeSet<(&str, u64)> = root
        .evidence
        .iter()
        .filter_map(|e| Some((e.path.as_str(), e.line?)))
        .collect();
    let is_cited = |h: &&crate::analyze::RuleHit| {
        cited.contains(h.text.as_str())
            || own.contains(&h.rule)
                && a.inputs
                    .get(h.input)
                    .is_some_and(|i| at.contains(&(i.path.as_str(), h.line)))
    };
    let captures: BTreeSet<String> = a
        .hits
        .iter()
        .filter(is_cited)
        .flat_map(|h| h.captures.iter())
        .filter_map(|(name, value)| {
            let v = normalise_with(value, hosts);
            informative(&v).then(|| format!("{name}={v}"))
        })
        .collect();
    let mut parts = vec![root.rule.clone(), root.category.to_string()];
    // A cause the run's own evidence argues against (a SIGBUS with a large, empty /dev/shm)
    // is not the confirmed case and must not group with it.
    if !root.against.is_empty() {
        parts.push("contradicted".into());
    }
    parts.extend(captures.into_iter().take(MAX_KEY_LINES));
    if root.category == Category::GpuOom {
        let caps: Vec<(String, String)> = a
            .hits
            .iter()
            .filter(is_cited)
            .flat_map(|h| h.captures.iter().cloned())
            .collect();
        let lines: Vec<&str> = cited.iter().copied().collect();
        if gpu_memory_holder(&caps, &lines) == Some(GpuMemoryHolder::OtherProcess) {
            parts.push("gpu_memory_holder=other-process".into());
        }
    }
    if (GENERIC.contains(&root.category) || root.rule == super::traceback::RULE)
        && let Some((kind, more)) = tail_parts(&a.error_tail, hosts)
    {
        parts.push(kind.to_string());
        parts.extend(more);
    }
    hash("rule", &parts)
}

/// Unknown failures: the last exception of each file, else the last error lines.
fn of_tail(tail: &[TailLine], hosts: &[String]) -> Option<String> {
    tail_parts(tail, hosts).map(|(kind, parts)| hash(kind, &parts))
}

fn tail_parts(tail: &[TailLine], hosts: &[String]) -> Option<(&'static str, Vec<String>)> {
    let (exc_re, frame_re) = (&EXCEPTION, &FRAME);
    let mut by_input: BTreeMap<usize, Vec<&TailLine>> = BTreeMap::new();
    for l in tail {
        by_input.entry(l.input).or_default().push(l);
    }
    let mut exceptions: BTreeSet<String> = BTreeSet::new();
    let mut last_lines: BTreeSet<String> = BTreeSet::new();
    for lines in by_input.values() {
        let mut frames: Vec<String> = Vec::new();
        let mut last: Option<String> = None;
        let mut plain: Vec<String> = Vec::new();
        for l in lines {
            let t = bare(&l.text);
            if t.starts_with("Traceback (most recent call last)") {
                frames.clear();
                continue;
            }
            if let Some(c) = frame_re.captures(t) {
                let path = c.get(1).map_or("", |m| m.as_str());
                if !internal_frame(path) {
                    let file = path.rsplit('/').next().unwrap_or(path);
                    let func = c.get(3).map_or("", |m| m.as_str());
                    frames.push(format!("{file}:{func}"));
                }
                continue;
            }
            if let Some(c) = exc_re.captures(t) {
                let ty = c.get(1).map_or("", |m| m.as_str());
                if !WRAPPERS.contains(&ty) {
                    let msg = c.get(2).map_or("", |m| m.as_str());
                    let inner: Vec<&str> = frames
                        .iter()
                        .rev()
                        .take(KEY_FRAMES)
                        .rev()
                        .map(String::as_str)
                        .collect();
                    last = Some(format!(
                        "{ty}: {} @ {}",
                        normalise_with(msg, hosts),
                        inner.join(" > ")
                    ));
                }
                frames.clear();
                continue;
            }
            plain.push(normalise_with(t, hosts));
        }
        match last {
            Some(e) => {
                exceptions.insert(e);
            }
            None => {
                let n = plain.len();
                last_lines.extend(plain.into_iter().skip(n.saturating_sub(3)));
            }
        }
    }
    if !exceptions.is_empty() {
        let parts: Vec<String> = exceptions.into_iter().take(MAX_KEY_LINES).collect();
        return Some(("exception", parts));
    }
    last_lines.retain(|l| !l.is_empty());
    if last_lines.is_empty() {
        return None;
    }
    let parts: Vec<String> = last_lines.into_iter().take(MAX_KEY_LINES).collect();
    Some(("lines", parts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_substitution_compiles() {
        assert_eq!(SUBSTS.len(), 8);
        assert!(COLLAPSE.get().is_some() && EXCEPTION.get().is_some() && FRAME.get().is_some());
    }

    #[test]
    fn normalise_strips_variable_parts() {
        assert_eq!(
            normalise("worker (pid 4232) at 0x7fc404600000 took 3.5s"),
            "worker (pid #) at <hex> took #s"
        );
    }

    #[test]
    fn sizes_ips_paths_ids_and_rank_lists_become_placeholders() {
        assert_eq!(
            normalise("Tried to allocate 2.00 GiB on 10.0.0.7:29500 in /tmp/tmpab3x_q/x.pt"),
            "Tried to allocate <size> on <ip> in <tmp>"
        );
        assert_eq!(
            normalise("ranks [0, 1, 2, 3] on c0a8f1e2d4b5"),
            normalise("ranks [0, 1] on 9f8e7d6c5b4a")
        );
        assert_eq!(
            normalise("/home/alice/proj/train.py failed"),
            "/home/<user>/proj/train.py failed"
        );
    }

    #[test]
    fn known_hosts_are_masked() {
        let hosts = vec!["gpu-node-a".to_string()];
        assert_eq!(
            normalise_with("connection to gpu-node-a refused", &hosts),
            "connection to <host> refused"
        );
    }

    fn tail(lines: &[&str]) -> Vec<TailLine> {
        lines
            .iter()
            .enumerate()
            .map(|(i, t)| TailLine {
                input: 0,
                line: i as u64 + 1,
                text: t.to_string(),
            })
            .collect()
    }

    #[test]
    fn unknown_failure_keys_on_exception_and_user_frames_not_library_frames() {
        let a = tail(&[
            "[rank0]: Traceback (most recent call last):",
            "[rank0]:   File \"/home/a/train.py\", line 10, in main",
            "[rank0]:   File \"/usr/lib/python3/site-packages/torch/nn/x.py\", line 5, in fwd",
            "[rank0]: KeyError: 'label'",
        ]);
        let b = tail(&[
            "[rank3]: Traceback (most recent call last):",
            "[rank3]:   File \"/home/b/train.py\", line 12, in main",
            "[rank3]:   File \"/opt/conda/lib/python3.11/site-packages/torch/y.py\", line 9, in g",
            "[rank3]: KeyError: 'label'",
        ]);
        let c = tail(&[
            "Traceback (most recent call last):",
            "  File \"/home/a/train.py\", line 10, in main",
            "ValueError: bad shape",
        ]);
        assert_eq!(of_tail(&a, &[]), of_tail(&b, &[]));
        assert_ne!(of_tail(&a, &[]), of_tail(&c, &[]));
    }
}
