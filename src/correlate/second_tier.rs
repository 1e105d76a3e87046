//! The second tier: the lines that say the run died (`verdict::death_signs`, from the error
//! tail the one scan pass kept; without one, how a log stops, or its metrics turned NaN to
//! its end) are classified by the invariant tokens they hold (`tokens`):
//! each token's category weights are combined per category (noisy-OR over distinct tokens,
//! capped at `tokens::MAX_CONFIDENCE`), and up to three candidate categories become findings
//! (`token-classified`, TW9905) with the tokens as evidence, a fix that quotes the line, and
//! what to collect next. When no specific rule explains the failure they are the answer; when
//! one does, they are its alternatives, ranked below it (every kind of failure the lines name
//! is among the ranked findings, not only the rule's). Such findings never make a run
//! `diagnosed` (a rule that knows the failure does), and a specific rule's finding always
//! outranks them. Works on the analysis as data; it never reads files or formats output.

use super::{Contribution, Evidence, Finding, GENERIC, Origin, RULED_OUT_BELOW, stall};

mod further;
use crate::analyze::Analysis;
use crate::model::{Category, Text};
use crate::rules::Role;
use crate::sources::prefix;
use std::collections::BTreeMap;

/// The engine-made finding's name and code.
pub const RULE: &str = "token-classified";
pub const CODE: &str = "TW9905";

/// What `rules explain token-classified` says.
pub const WHAT: Text<&str> = Text {
    en: "No rule explains the failure, but the lines that say the run died hold invariant \
     tokens (exception classes, errno names and texts, NCCL result codes, IB completion \
     statuses, CUDA error enums, signal names, Kubernetes/Slurm/Ray reasons: \
     data/tokens.toml). Each token weighs the categories it points at; up to three \
     candidates are named, with low confidence, the tokens as evidence, and what to collect \
     to know for sure.",
    zh: "没有规则能解释这次失败，但说明训练死掉的那些行里有不变的标记词（异常类名、errno \
     名称和文字、NCCL 返回码、IB 完成状态、CUDA 错误枚举、信号名、Kubernetes/Slurm/Ray \
     给出的原因：data/tokens.toml）。每个标记词对它指向的类别加权；最多给出三个候选类别，\
     置信度较低，附上作为证据的标记词，以及要确认还需收集什么。",
};

/// At most this many candidate categories are named.
pub const MAX_CANDIDATES: usize = 3;

/// One candidate category: its score, the (token, weight, line index) terms behind it, and
/// the evidence against the category that a rule's finding of it already weighed.
struct Candidate {
    terms: Vec<(String, f64, usize)>,
    against: Vec<Contribution>,
}

impl Candidate {
    fn confidence(&self) -> f64 {
        let p_not: f64 = self.terms.iter().map(|t| 1.0 - t.1).product();
        let mut p = (1.0 - p_not).min(crate::tokens::MAX_CONFIDENCE);
        for c in &self.against {
            p *= 1.0 + c.weight;
        }
        (p * 100.0).round() / 100.0
    }
}

/// What weighs against `cat` in the findings already made: each rule condition that
/// contradicted a finding of that category (a 32 GiB /dev/shm against shm_exhausted). Evidence
/// against a kind of failure holds whoever proposes it, so the tokens' candidate of that kind
/// is scaled down the same way. A warning discounted as survived says nothing about the kind.
fn against(findings: &[Finding], cat: Category) -> Vec<Contribution> {
    let mut out: Vec<Contribution> = Vec::new();
    for f in findings.iter().filter(|f| f.category == cat) {
        for c in &f.score {
            let contra = c.weight < 0.0 && c.weight > -1.0 && c.what != super::verdict::SURVIVED;
            if contra && !out.iter().any(|o| o.what == c.what) {
                out.push(c.clone());
            }
        }
    }
    out
}

/// Add the second tier's candidates. When no specific rule's finding explains the failure
/// they are the answer (low, calibrated confidence); when one does, every other category that
/// the lines saying the run died hold a token of is named too, as an alternative ranked below
/// that rule's finding (the strongest specific finding keeps the top: the tokens never decide
/// over a rule that knows the failure).
pub fn apply(a: &Analysis, findings: &mut Vec<Finding>) {
    by_tokens(a, findings);
    further::add(a, findings);
}

/// The tokens' candidates (see [`apply`]).
fn by_tokens(a: &Analysis, findings: &mut Vec<Finding>) {
    let live = |f: &Finding| f.symptom_of.is_none() && f.confidence >= RULED_OUT_BELOW;
    // The strongest specific cause a rule found, if any: the candidates rank below it.
    let explained = findings
        .iter()
        .filter(|f| live(f) && !GENERIC.contains(&f.category) && !user_interrupt(f))
        .map(|f| f.confidence)
        .reduce(f64::max);
    // A Ctrl-C is the user's act, not a cause: when the logs stopped in distributed start-up
    // before it, that hang is what the user stopped, and it is read as if nothing had said
    // the run died (the interrupt's own lines say only that it was interrupted).
    let interrupted = explained.is_none() && findings.iter().any(|f| live(f) && user_interrupt(f));
    let mut lines = if interrupted {
        Vec::new()
    } else {
        super::verdict::death_signs(a)
    };
    // With no line that says the run died, how its logs stop may (`stall`): those lines are
    // read the same way, and the ending itself weighs in where they hold no token. A run a
    // rule explains is not read for how it stopped: the rule said.
    let mut stops: Vec<Option<stall::Kind>> = vec![None; lines.len()];
    if lines.is_empty() && explained.is_none() {
        for s in stall::signs(a) {
            if interrupted && s.kind != stall::Kind::StalledStarting {
                continue;
            }
            lines.push(s.line);
            stops.push(Some(s.kind));
        }
    }
    // With neither, a metric that turned non-finite and stayed so to the end of its log (a
    // loss or gradient norm logged NaN step after step) says the run failed without dying.
    if lines.is_empty() && explained.is_none() && !interrupted {
        lines = nan_to_the_end(a);
        stops = vec![None; lines.len()];
    }
    if lines.is_empty() {
        return;
    }
    let table = crate::tokens::table();
    // Per category, each token once (its latest line): many lines of one token are one clue.
    let mut by_cat: BTreeMap<Category, Candidate> = BTreeMap::new();
    let mut add = |cat: Category, id: &str, w: f64, i: usize| {
        let c = by_cat.entry(cat).or_insert_with(|| Candidate {
            terms: Vec::new(),
            against: against(findings, cat),
        });
        match c.terms.iter_mut().find(|x| x.0 == id) {
            Some(x) => x.2 = i,
            None => c.terms.push((id.to_string(), w, i)),
        }
    };
    // Framework advice (a list of what could have happened) names no cause of its own.
    let advice: std::collections::HashSet<(&str, u64)> = a
        .advice_lines
        .iter()
        .filter_map(|(i, l)| a.inputs.get(*i).map(|x| (x.path.as_str(), *l)))
        .collect();
    for (i, l) in lines.iter().enumerate() {
        if advice.contains(&(l.path.as_str(), l.line)) {
            continue;
        }
        // NCCL reports failures as WARN; what follows `NCCL INFO` is information (the
        // optional net plugin it did not find, the transport it fell back to), never a cause.
        let text = l
            .text
            .find("NCCL INFO")
            .map_or(l.text.as_str(), |at| &l.text[..at]);
        let mut held = false;
        for t in table.hits(text) {
            held = true;
            for &(cat, w) in &t.weights {
                add(cat, &t.id, w, i);
            }
        }
        if let (false, Some(kind)) = (held, stops[i]) {
            for &(cat, w) in kind.weights() {
                add(cat, kind.id(), w, i);
            }
        }
    }
    let mut ranked: Vec<(Category, Candidate)> = by_cat.into_iter().collect();
    // Surest first; among equals, the one whose evidence is latest (nearest the death).
    ranked.sort_by(|(ca, a), (cb, b)| {
        b.confidence()
            .total_cmp(&a.confidence())
            .then_with(|| latest(b).cmp(&latest(a)))
            .then(ca.cmp(cb))
    });
    // What the tokens say about how an unexplained failure surfaced; where a rule explains
    // it, the order among the rule's findings is the rule's.
    if explained.is_none() {
        demote_carriers(findings, &ranked);
        if interrupted {
            demote_interrupt(findings, &ranked);
        }
    }
    // A category a live finding already names (a traceback reading, a rule's cause) gets
    // nothing from the tokens it lacks, nor one the cascade already read as a consequence
    // (a watchdog's abort is a symptom of its timeout, not another cause); every other one
    // is named, up to the cap.
    ranked.retain(|(cat, _)| {
        !findings
            .iter()
            .any(|f| f.category == *cat && (live(f) || f.symptom_of.is_some()))
    });
    for (cat, cand) in ranked.into_iter().take(MAX_CANDIDATES) {
        if let Some(mut f) = finding(&lines, &stops, cat, &cand, explained) {
            // The lines that weighed against the kind, as the rule's finding cited them.
            if !cand.against.is_empty() {
                for x in findings.iter().filter(|x| x.category == cat) {
                    for ag in &x.against {
                        if !f.against.iter().any(|y| y.why.en == ag.why.en) {
                            f.against.push(ag.clone());
                        }
                    }
                }
            }
            findings.push(f);
        }
    }
    if explained.is_none() {
        below_the_kinds(findings);
    }
}

/// The score term of a carrier (see [`demote_carriers`]).
const CARRIER: &str = "the exception is how that failure surfaced";

/// A carrier says how the failure surfaced, not a kind of failure: every candidate kind the
/// tokens named outranks it, the weakest too (a generic exception ahead of them would take a
/// place among the first three that a kind to check should have).
fn below_the_kinds(findings: &mut [Finding]) {
    let Some(weakest) = findings
        .iter()
        .filter(|f| f.rule == RULE && f.confidence > 0.0)
        .map(|f| f.confidence)
        .reduce(f64::min)
    else {
        return;
    };
    let below = ((weakest - 0.01) * 100.0).round() / 100.0;
    if below <= 0.0 {
        return;
    }
    for f in findings.iter_mut().filter(|f| {
        f.rule != RULE && f.confidence > below && f.score.iter().any(|c| c.what.ends_with(CARRIER))
    }) {
        f.score.push(Contribution {
            what:
                "ranked below every kind of failure its lines' tokens name: it carries one of them"
                    .into(),
            weight: below / f.confidence - 1.0,
        });
        f.confidence = below;
    }
}

/// Metric lines of at least this many logged steps, non-finite, end a log that failed.
const NAN_STEPS: usize = 2;
/// The last of them is at most this many lines from its file's end (a bar or a blank after
/// it): a finite step logged after it would be a recovery (H08: an AMP scaler settling).
const NAN_AT_END: u64 = 3;

/// The lines of a log whose logged metrics turned non-finite (a `nan_loss` token that does not
/// say the run died: `'grad_norm': nan`) and stayed so to its end: at least [`NAN_STEPS`] such
/// lines, the last among its final [`NAN_AT_END`] lines, with no clean end after
/// them and no clean exit. One NaN logged early and finite steps after it (an fp16 loss
/// scaler skipping its first steps) is not this: its last NaN line is far from the end.
fn nan_to_the_end(a: &Analysis) -> Vec<super::ErrorLine> {
    if super::verdict::exited_cleanly(a) {
        return Vec::new();
    }
    let table = crate::tokens::table();
    let mut per_input: BTreeMap<usize, Vec<super::ErrorLine>> = BTreeMap::new();
    let mut ends: BTreeMap<usize, u64> = BTreeMap::new();
    for (t, input) in super::verdict::run_tail(a) {
        let hits: Vec<_> = table.hits(&t.text).collect();
        let metric = !hits.is_empty()
            && hits.iter().all(|k| !k.fatal)
            && hits
                .iter()
                .any(|k| k.weights.first().is_some_and(|w| w.0 == Category::NanLoss));
        let survived = a
            .clean_end
            .iter()
            .any(|(i, l)| *i == t.input && *l > t.line);
        if metric && !survived {
            ends.insert(t.input, input.lines);
            per_input
                .entry(t.input)
                .or_default()
                .push(super::ErrorLine {
                    path: input.path.clone(),
                    line: t.line,
                    text: t.text.clone(),
                });
        }
    }
    let mut out = Vec::new();
    for (i, mut v) in per_input {
        let last = v.iter().map(|l| l.line).max().unwrap_or(0);
        if v.len() >= NAN_STEPS && last + NAN_AT_END > ends[&i] {
            out.append(&mut v);
        }
    }
    out
}

/// A generic finding (an uncaught exception, an unknown error) whose every cited line (but a
/// traceback's frames) holds a token of a specific kind (`DistBackendError: … unhandled system error` is an NCCL failure
/// carried by an exception) says how the failure surfaced, not what it was: it ranks below
/// the strongest specific candidate its lines point at, and its score says why.
fn demote_carriers(findings: &mut [Finding], ranked: &[(Category, Candidate)]) {
    let table = crate::tokens::table();
    let Some((best_cat, best)) = ranked.iter().find(|(c, _)| !GENERIC.contains(c)) else {
        return;
    };
    let below = best.confidence() - 0.01;
    for f in findings
        .iter_mut()
        .filter(|f| GENERIC.contains(&f.category) && f.symptom_of.is_none())
    {
        // A traceback's frame lines say where it surfaced; the lines that say what it was
        // (the exception, the messages) decide.
        let said: Vec<&Evidence> = f.evidence.iter().filter(|e| !frame_line(&e.text)).collect();
        let carried = !said.is_empty()
            && said.iter().all(|e| {
                table
                    .hits(&e.text)
                    .any(|t| t.weights.first().is_some_and(|w| w.0 == *best_cat))
            });
        if carried && f.confidence > below && below > 0.0 {
            f.score.push(Contribution {
                what: format!("its lines carry a {best_cat} token: {CARRIER}"),
                weight: below / f.confidence - 1.0,
            });
            f.confidence = (below * 100.0).round() / 100.0;
        }
    }
}

/// A Python traceback's frame line (`File "…", line N, in f`), whatever its prefix.
fn frame_line(text: &str) -> bool {
    let t = super::traceback::bare(text);
    t.starts_with("File \"") && t.contains("\", line ")
}

/// A finding of the launcher's Ctrl-C (`sources::ending::torchrun_interrupt`).
fn user_interrupt(f: &Finding) -> bool {
    f.category == Category::PreemptedOrTimeLimit
        && f.evidence
            .iter()
            .any(|e| crate::sources::ending::torchrun_interrupt(&e.text))
}

/// The interrupt ranks below the hang the user interrupted, and its score says why.
fn demote_interrupt(findings: &mut [Finding], ranked: &[(Category, Candidate)]) {
    let Some((_, best)) = ranked.iter().find(|(c, _)| !GENERIC.contains(c)) else {
        return;
    };
    let below = best.confidence() - 0.01;
    for f in findings.iter_mut().filter(|f| user_interrupt(f)) {
        if f.confidence > below && below > 0.0 {
            f.score.push(Contribution {
                what: "a Ctrl-C after the logs stopped in distributed start-up: the hang came first, the interrupt only ended it".into(),
                weight: below / f.confidence - 1.0,
            });
            f.confidence = (below * 100.0).round() / 100.0;
        }
    }
}

fn latest(c: &Candidate) -> usize {
    c.terms.iter().map(|t| t.2).max().unwrap_or(0)
}

fn finding(
    lines: &[super::ErrorLine],
    stops: &[Option<stall::Kind>],
    cat: Category,
    cand: &Candidate,
    explained: Option<f64>,
) -> Option<Finding> {
    let advice = crate::tokens::table().advice(cat)?;
    // The ending that weighed in for this category, if one did (its terms are its `id`).
    let ending = cand
        .terms
        .iter()
        .find_map(|t| stops[t.2].filter(|k| k.id() == t.0));
    // Below the rule's finding that explains the run, where one does: an alternative.
    let below = explained.map(|top| ((top - 0.01) * 100.0).round() / 100.0);
    let conf = match below {
        Some(b) => cand.confidence().min(b),
        None => cand.confidence(),
    };
    // The evidence: each line that gave a token, latest first (closest to the death).
    let mut at: Vec<usize> = cand.terms.iter().map(|t| t.2).collect();
    at.sort_unstable_by(|x, y| y.cmp(x));
    at.dedup();
    let evidence: Vec<Evidence> = at
        .iter()
        .map(|&i| {
            let l = &lines[i];
            let toks: Vec<&str> = cand
                .terms
                .iter()
                .filter(|t| t.2 == i)
                .map(|t| t.0.as_str())
                .collect();
            let (attr, _) = prefix::peel(&l.text);
            let base = prefix::from_path(&l.path);
            Evidence {
                path: l.path.clone(),
                line: Some(l.line),
                rank: attr.rank.or(base.rank),
                host: attr.host.or(base.host),
                time: attr.time,
                text: l.text.clone(),
                why: Some(match stops[i] {
                    Some(k) if toks == [k.id()] => {
                        let name = k.name();
                        Text::new(
                            format!("{} (→ {cat})", name.en),
                            format!("{}（→ {cat}）", name.zh),
                        )
                    }
                    _ => Text::new(
                        format!("holds {} (→ {cat})", toks.join(", ")),
                        format!("含有 {}（→ {cat}）", toks.join("、")),
                    ),
                }),
            }
        })
        .collect();
    let quoted = clip(super::traceback::bare(&lines[at[0]].text));
    let ids: Vec<&str> = cand.terms.iter().map(|t| t.0.as_str()).collect();
    let fill = |t: &str| t.replace("{line}", &quoted);
    let fix = match ending.and_then(|k| k.fix(cat)) {
        Some(t) => t.map(fill),
        None => advice.fix.map(fill),
    };
    let title = if explained.is_some() {
        Text::new(
            format!("Also possible, {cat}: the lines that say the run died hold its tokens"),
            format!("另一种可能，{cat}：说明训练死掉的那些行里有指向它的标记词"),
        )
    } else if ending.is_some() {
        Text::new(
            format!("The run stopped without an error; how it stopped points at {cat}"),
            format!("训练没有报错就停了；它停下的方式指向 {cat}"),
        )
    } else {
        Text::new(
            format!("Unexplained failure; its lines' tokens point at {cat}"),
            format!("未能解释的失败；这些行里的标记词指向 {cat}"),
        )
    };
    Some(Finding {
        rule: RULE.into(),
        code: CODE.into(),
        category: cat,
        action: cat.action(),
        title,
        confidence: conf,
        strength: conf,
        symptom_of: None,
        origin: Origin {
            rank: evidence[0].rank,
            host: evidence[0].host.clone(),
            pid: None,
            time: evidence[0].time.clone(),
        },
        evidence,
        against: Vec::new(),
        fix,
        role: Role::Root,
        merged_rules: Vec::new(),
        score: cand
            .terms
            .iter()
            .map(|(id, w, i)| Contribution {
                what: if stops[*i].is_some_and(|k| k.id() == id) {
                    format!("{id} → {cat}")
                } else {
                    format!("token {id} → {cat}")
                },
                weight: *w,
            })
            .chain(std::iter::once(Contribution {
                what: match explained {
                    None => format!(
                        "no rule matched; tokens {} (capped at {})",
                        ids.join(", "),
                        crate::tokens::MAX_CONFIDENCE
                    ),
                    Some(_) => format!(
                        "a rule's finding explains the run; tokens {} name {cat} as an alternative (capped at {})",
                        ids.join(", "),
                        crate::tokens::MAX_CONFIDENCE
                    ),
                },
                weight: 0.0,
            }))
            .chain(cand.against.iter().cloned())
            .chain(below.filter(|b| cand.confidence() > *b).map(|b| Contribution {
                what: "ranked below the rule's finding that explains the run".into(),
                weight: b / cand.confidence() - 1.0,
            }))
            .collect(),
        more_lines: 0,
        next_time: Some(advice.collect.clone()),
        alternatives: None,
        affected_ranks: Vec::new(),
    })
}

/// The quoted line, short enough for a fix sentence, with backticks that would break its
/// quoting taken out.
fn clip(s: &str) -> String {
    let s = s.trim().replace('`', "'");
    if s.chars().count() <= 160 {
        s
    } else {
        format!("{}…", s.chars().take(160).collect::<String>())
    }
}
