//! Correlation: rule hits and facts become findings. Each finding's confidence is built from
//! named contributions (which signature or fact added what, which contradicted it), causes of
//! one category are merged into one hypothesis, symptoms point at their root, and findings
//! are ranked; then the cascade across ranks, the verdict and the fingerprint make one
//! [`Diagnosis`]. Every decision about a run is made here; it returns data and never
//! formats output (that is `report`).

pub mod calibrate;
pub mod cascade;
pub(crate) mod fingerprint;
mod gated;
pub(crate) mod outside;
pub mod second_tier;
pub(crate) mod stall;
pub(crate) mod traceback;
pub(crate) mod verdict;

pub use verdict::ErrorLine;

use crate::analyze::{Analysis, RuleHit};
use crate::facts::{self, FactSet, Unit};
use crate::model::{
    Action, Attribution, Category, Fact, FactValue, Lang, RuleStatus, Text, Verdict,
};
use crate::rules::derive::{self, DeriveCtx};
use crate::rules::{Condition, KnowledgeBase, Op, Role, Rule};
use serde::Serialize;
use std::collections::BTreeMap;

/// Findings below this confidence are shown as considered-and-ruled-out, not as causes.
pub const RULED_OUT_BELOW: f64 = 0.3;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Evidence {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    pub rank: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    pub text: String,
    /// For fact evidence: why it matters (`why`, and `why_zh` where the rule gives it:
    /// docs/json-schema.md).
    #[serde(
        flatten,
        with = "crate::model::keys::why",
        skip_serializing_if = "Option::is_none"
    )]
    pub why: Option<Text>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Against {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    pub text: String,
    /// Why it argues against (`why`, and `why_zh` where the rule gives it).
    #[serde(flatten, with = "crate::model::keys::why")]
    pub why: Text,
}

/// One term of the explainable score.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Contribution {
    pub what: String,
    /// Weight applied: positive supports (noisy-OR), negative contradicts (scales down).
    pub weight: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct Origin {
    pub rank: Option<u32>,
    pub host: Option<String>,
    pub pid: Option<u32>,
    pub time: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Finding {
    pub rule: String,
    pub code: String,
    pub category: Category,
    pub action: Action,
    /// `title`, and `title_zh` where one exists (an addition to the contract).
    #[serde(flatten, with = "crate::model::keys::title")]
    pub title: Text,
    /// The chance that `category` is the run's cause, calibrated by [`calibrate::apply`], the
    /// last step of [`correlate`]. Until then it is the evidence strength every decision reads.
    pub confidence: f64,
    /// The evidence strength the finding was ranked on (its contributions' sum, after the
    /// cascade), kept by [`calibrate::apply`]: after it, the ruled-out floor
    /// [`RULED_OUT_BELOW`] and "why it ranks lower" read this.
    pub strength: f64,
    pub symptom_of: Option<String>,
    pub origin: Origin,
    pub evidence: Vec<Evidence>,
    pub against: Vec<Against>,
    /// `fix`, and `fix_zh` where one exists, with the same computed numbers.
    #[serde(flatten, with = "crate::model::keys::fix")]
    pub fix: Text,
    /// Extra fields (the contract allows additions).
    pub role: Role,
    /// Other rules whose evidence was merged into this finding (same category).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub merged_rules: Vec<String>,
    pub score: Vec<Contribution>,
    /// Matching lines beyond those cited.
    #[serde(skip_serializing_if = "is_zero")]
    pub more_lines: u64,
    /// What to collect next time (`next_time`, `next_time_zh`); absent when not needed.
    #[serde(
        flatten,
        with = "crate::model::keys::next_time",
        skip_serializing_if = "Option::is_none"
    )]
    pub next_time: Option<Text>,
    /// When evidence argues against the finding: what else fits (the rule's look-alikes;
    /// `alternatives`, `alternatives_zh`).
    #[serde(
        flatten,
        with = "crate::model::keys::alternatives",
        skip_serializing_if = "Option::is_none"
    )]
    pub alternatives: Option<Text>,
    /// For a root cause: the other ranks whose findings are its symptoms.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub affected_ranks: Vec<u32>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Evaluate one condition; returns the facts that satisfy it.
fn holds<'a>(c: &'a Condition, facts: &'a FactSet) -> Vec<&'a Fact> {
    facts
        .matching(&c.fact)
        .filter(|f| match &c.pattern {
            Some(re) => re.is_match(&f.value.to_string()),
            None => compare(&f.value, c.op, c.value.as_ref()),
        })
        .collect()
}

fn compare(v: &FactValue, op: Op, want: Option<&FactValue>) -> bool {
    if op == Op::Exists {
        return true;
    }
    let Some(want) = want else { return false };
    if let (Some(a), Some(b)) = (v.as_f64(), want.as_f64()) {
        return match op {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Eq => a == b,
            Op::Ne => a != b,
            Op::Contains | Op::Matches | Op::Exists => false,
        };
    }
    let (a, b) = (v.to_string(), want.to_string());
    match op {
        Op::Eq => a.eq_ignore_ascii_case(&b),
        Op::Ne => !a.eq_ignore_ascii_case(&b),
        Op::Contains => a.contains(&b),
        _ => false,
    }
}

/// What a template is rendered with: the run's facts, the finding's captures and cited lines.
struct Vars<'a> {
    facts: &'a FactSet,
    captures: &'a [(String, String)],
    lines: &'a [&'a str],
}

impl Vars<'_> {
    /// `t` rendered in `lang` (derived values are put in it in that language too); `None`
    /// when a variable is unknown.
    fn render(&self, t: &crate::rules::template::Template, lang: Lang) -> Option<String> {
        t.render(&|n| {
            self.lookup(n)
                .map(|(v, unit)| (v.get(lang).to_string(), unit))
        })
    }

    /// Look up a template variable: a capture, a derived value, a fact (formatted by its unit).
    fn lookup(&self, name: &str) -> Option<(Text, Unit)> {
        lookup(name, self.facts, self.captures, self.lines)
    }
}

/// A traceback frame line, in CPython's or IPython's shape.
fn is_frame(text: &str) -> bool {
    text.contains("File \"") || (text.trim_start().starts_with("File /") && text.contains(", in "))
}

/// Look up a template variable: a fact (formatted by its unit), a derived value (in every
/// language), a capture. A capture and a fact read the same in every language.
fn lookup(
    name: &str,
    facts: &FactSet,
    captures: &[(String, String)],
    lines: &[&str],
) -> Option<(Text, Unit)> {
    if let Some((_, v)) = captures.iter().find(|(n, _)| n == name) {
        return Some((Text::plain(v.clone()), Unit::Text));
    }
    if derive::is_derived(name) {
        let ctx = DeriveCtx {
            facts,
            captures,
            lines,
        };
        return derive::derive(name, &ctx);
    }
    let f = facts.get(name)?;
    let unit = facts::spec_for(name).map_or(Unit::Text, |s| s.unit);
    Some((Text::plain(f.value.to_string()), unit))
}

/// A hypothesis while it is being built.
struct Draft<'a> {
    lead: &'a Rule,
    rules: Vec<&'a Rule>,
    hits: Vec<&'a RuleHit>,
    /// (key, weight, description) — key dedupes the same term across merged rules.
    terms: Vec<(String, f64, String)>,
    fact_evidence: Vec<Evidence>,
    against: Vec<Against>,
    dropped: u64,
}

/// Everything decided about one run, for `report` to render.
#[derive(Debug, Clone)]
pub struct Diagnosis {
    pub verdict: Verdict,
    /// Most likely root cause first; symptoms name their root.
    pub findings: Vec<Finding>,
    /// `fp1:…` (see [`fingerprint`]); none for a run that did not fail.
    pub fingerprint: Option<String>,
    /// The merged per-rank timeline the cascade was read from.
    pub timeline: crate::timeline::Timeline,
    /// For an unknown failure: the last error lines of the run's logs.
    pub last_errors: Vec<ErrorLine>,
}

/// A finding the engine makes itself (no rule file behind it; codes TW99xx are reserved).
#[derive(Debug, Clone, Copy)]
pub struct EngineFinding {
    pub code: &'static str,
    pub name: &'static str,
    /// The category it usually takes (the traceback reading's depends on the run).
    pub category: Category,
    /// The source file that makes it.
    pub module: &'static str,
    /// What it detects and why.
    pub what: Text<&'static str>,
}

/// Every engine-made finding, for `rules list` and `rules explain`.
pub static ENGINE_FINDINGS: &[EngineFinding] = &[
    EngineFinding {
        code: "TW9901",
        name: cascade::MISMATCH_RULE,
        category: Category::CollectiveMismatch,
        module: "src/correlate/cascade.rs",
        what: cascade::MISMATCH_WHAT,
    },
    EngineFinding {
        code: "TW9902",
        name: cascade::LAGGING_RULE,
        category: Category::NcclTimeout,
        module: "src/correlate/cascade.rs",
        what: cascade::LAGGING_WHAT,
    },
    EngineFinding {
        code: traceback::CODE,
        name: traceback::RULE,
        category: Category::PythonException,
        module: "src/correlate/traceback.rs",
        what: traceback::WHAT,
    },
    EngineFinding {
        code: second_tier::CODE,
        name: second_tier::RULE,
        category: Category::Other,
        module: "src/correlate/second_tier.rs",
        what: second_tier::WHAT,
    },
    EngineFinding {
        code: outside::CODE,
        name: outside::RULE,
        category: Category::PreemptedOrTimeLimit,
        module: "src/correlate/outside.rs",
        what: outside::WHAT,
    },
];

/// Compile the regexes `correlate` reads every run with (the fingerprint's replacements, the
/// traceback lines, the verdict's death and warning signs) now, so a command can do it on a
/// spare thread while the files are scanned: correlation, which runs after the scan on one
/// thread, then finds them ready (about 29 M instructions, a third of that thread's work on
/// a 100 MB run). Each is also compiled on its own when a line that could match it is read
/// (`gated`): a small input's correlation needs none of them, and waits for none.
pub fn warm_up() {
    fingerprint::warm_up();
    traceback::warm_up();
    verdict::warm_up();
}

/// Every gated regex of correlation (for the test that checks their literals).
#[cfg(test)]
fn gated_regexes() -> Vec<&'static gated::Gated> {
    let mut all = vec![
        &verdict::FATAL,
        &verdict::WORD,
        &traceback::EXCEPTION,
        &traceback::FRAME,
        &traceback::SYNTAX_AT,
        &fingerprint::COLLAPSE,
        &stall::STARTING_UP,
        &stall::IN_TRAINING,
    ];
    all.extend(fingerprint::SUBSTS.iter().map(|(g, _)| g));
    all
}

/// Findings, cascade across ranks, verdict and fingerprint of one analysis. When no specific
/// rule explains the failure, the run's tracebacks may (`traceback`).
pub fn correlate(kb: &KnowledgeBase, a: &Analysis) -> Diagnosis {
    let mut findings = findings(kb, a);
    verdict::discount_survived(a, &mut findings);
    verdict::discount_ignored(a, &mut findings);
    verdict::discount_went_on(a, &mut findings);
    let timeline = crate::timeline::build(a, kb);
    cascade::apply(kb, a, &timeline, &mut findings);
    traceback::apply(a, &mut findings);
    second_tier::apply(a, &mut findings);
    if let Some(f) = outside::finding(a, &findings) {
        findings.push(f);
    }
    cascade::date_origins(a, &timeline, &mut findings);
    rank(&mut findings);
    let verdict = verdict::verdict(&findings, a);
    let fingerprint = fingerprint::compute(kb, &findings, a, verdict);
    calibrate::apply(
        calibrate::shipped(),
        &mut findings,
        verdict == Verdict::NoFailure,
    );
    let last_errors = if verdict == Verdict::UnknownFailure {
        verdict::last_errors(a)
    } else {
        Vec::new()
    };
    Diagnosis {
        verdict,
        findings,
        fingerprint,
        timeline,
        last_errors,
    }
}

/// The findings of one analysis, merged and ranked (before the cascade across ranks).
pub fn findings(kb: &KnowledgeBase, a: &Analysis) -> Vec<Finding> {
    let mut by_rule: BTreeMap<usize, Vec<&RuleHit>> = BTreeMap::new();
    for h in &a.hits {
        by_rule.entry(h.rule).or_default().push(h);
    }
    let mut drafts: Vec<Draft> = Vec::new();
    for (ri, rule) in kb.rules.iter().enumerate() {
        if rule.role == Role::Advice || rule.status == RuleStatus::Retired {
            continue;
        }
        let hits = by_rule.remove(&ri).unwrap_or_default();
        drafts.extend(draft(ri, rule, hits, a));
    }
    let mut merged = merge_by_category(drafts);

    // A confirmation (a ulimit row, a df row, a follow-up Xid) only strengthens a cause of
    // its own category; alone it is not a finding.
    merged.retain(|d| d.rules.iter().any(|r| r.role != Role::Confirmation));
    let mut findings: Vec<Finding> = merged.into_iter().map(|d| finish(kb, d, a)).collect();

    // The root the symptoms follow from is the first cause in the one order (`rank`), and
    // they are then placed after it by the same function.
    rank(&mut findings);
    let root = findings
        .iter()
        .find(|f| f.role != Role::Symptom && f.confidence >= RULED_OUT_BELOW)
        .map(|f| (f.rule.clone(), f.category));
    if let Some((root_rule, root_cat)) = root {
        for f in findings.iter_mut().filter(|f| f.role == Role::Symptom) {
            let rule = kb.find(&f.rule);
            let allowed =
                rule.is_none_or(|r| r.symptom_of.is_empty() || r.symptom_of.contains(&root_cat));
            if allowed {
                f.symptom_of = Some(root_rule.clone());
            }
        }
    }
    rank(&mut findings);
    findings
}

/// One rule's hypothesis: its signatures' hits and its conditions on the facts, each a term of
/// the score. None when nothing matched and no trigger condition held.
fn draft<'a>(ri: usize, rule: &'a Rule, hits: Vec<&'a RuleHit>, a: &Analysis) -> Option<Draft<'a>> {
    let mut terms = signature_terms(rule, &hits);
    let mut fact_evidence = Vec::new();
    let mut against = Vec::new();
    let mut triggered = false;
    let first_caps: Vec<(String, String)> =
        hits.first().map(|h| h.captures.clone()).unwrap_or_default();
    let first_line: Vec<&str> = hits.first().map(|h| h.text.as_str()).into_iter().collect();
    let vars = Vars {
        facts: &a.facts,
        captures: &first_caps,
        lines: &first_line,
    };
    for c in &rule.conditions {
        let ok = holds(c, &a.facts);
        let Some(f) = ok.first() else { continue };
        let why = Text {
            en: vars
                .render(&c.why.en, Lang::En)
                .unwrap_or_else(|| format!("{} {}", c.fact, f.value)),
            zh: vars.render(&c.why.zh, Lang::Zh).unwrap_or_default(),
        };
        let key = format!("{}{:?}{:?}", c.fact, c.op, c.value);
        let text = if f.text.is_empty() {
            format!("{} = {}", f.name, f.value)
        } else {
            f.text.clone()
        };
        terms.push((key, c.weight, why.en.clone()));
        if c.weight > 0.0 {
            triggered |= c.trigger;
            fact_evidence.push(Evidence {
                path: f.path.clone(),
                line: f.line,
                rank: None,
                host: None,
                time: None,
                text,
                why: Some(why),
            });
        } else {
            against.push(Against {
                path: f.path.clone(),
                line: f.line,
                text,
                why,
            });
        }
    }
    if hits.is_empty() && !triggered {
        return None;
    }
    let dropped = a
        .dropped_hits
        .iter()
        .filter(|(r, _)| *r == ri)
        .map(|(_, n)| *n)
        .sum();
    Some(Draft {
        lead: rule,
        rules: vec![rule],
        hits,
        terms,
        fact_evidence,
        against,
        dropped,
    })
}

/// Signatures: each distinct signature counts once, however many lines it matched.
fn signature_terms(rule: &Rule, hits: &[&RuleHit]) -> Vec<(String, f64, String)> {
    let mut terms = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for h in hits {
        if seen.insert(h.signature) {
            let n = hits.iter().filter(|x| x.signature == h.signature).count();
            let s = &rule.signatures[h.signature];
            terms.push((
                format!("{}#{}", rule.name, h.signature),
                s.weight,
                format!(
                    "{}: `{}` matched {n} line{}",
                    rule.name,
                    s.source,
                    if n == 1 { "" } else { "s" }
                ),
            ));
        }
    }
    terms
}

/// Causes of one category are one hypothesis: merge their evidence.
fn merge_by_category(drafts: Vec<Draft<'_>>) -> Vec<Draft<'_>> {
    let mut merged: Vec<Draft> = Vec::new();
    for d in drafts {
        let mergeable = d.lead.role != Role::Symptom;
        let target = merged.iter_mut().find(|m| {
            mergeable && m.lead.role != Role::Symptom && m.lead.category == d.lead.category
        });
        match target {
            Some(m) => m.absorb(d),
            None => merged.push(d),
        }
    }
    merged
}

impl<'a> Draft<'a> {
    /// Take in another rule's draft of the same category: its rules, hits, and the terms and
    /// evidence not already here; it leads when its evidence is stronger.
    fn absorb(&mut self, d: Draft<'a>) {
        let lead_weight = |x: &Draft| {
            x.terms
                .iter()
                .filter(|t| t.1 > 0.0)
                .map(|t| t.1)
                .fold(0.0, f64::max)
        };
        // A confirmation never leads a hypothesis that has a cause of its own.
        let conf = |x: &Draft| x.lead.role == Role::Confirmation;
        if (conf(self) && !conf(&d))
            || (conf(self) == conf(&d) && lead_weight(&d) > lead_weight(self))
        {
            self.lead = d.lead;
        }
        self.rules.extend(d.rules);
        self.hits.extend(d.hits);
        for t in d.terms {
            if !self.terms.iter().any(|x| x.0 == t.0) {
                self.terms.push(t);
            }
        }
        for e in d.fact_evidence {
            if !self
                .fact_evidence
                .iter()
                .any(|x| x.text == e.text && x.path == e.path)
            {
                self.fact_evidence.push(e);
            }
        }
        for e in d.against {
            if !self.against.iter().any(|x| x.why.en == e.why.en) {
                self.against.push(e);
            }
        }
        self.dropped += d.dropped;
    }
}

/// Categories that say only that something failed, not what kind of failure it was.
pub const GENERIC: &[Category] = &[Category::PythonException, Category::Other];

/// Where a finding comes from, for breaking ties in [`rank`]: a rule file's (built-in or the
/// user's own) before one the engine makes itself, the second tier's candidates last.
fn provenance(f: &Finding) -> u8 {
    if f.rule == second_tier::RULE {
        2
    } else if ENGINE_FINDINGS.iter().any(|e| e.name == f.rule) {
        1
    } else {
        0
    }
}

/// The one order of findings, used by every view (terminal, JSON, Markdown, GitHub, JUnit,
/// HTML), the fingerprint and the choice of the root that symptoms point at, so none can
/// contradict another; nothing else orders findings (engine-made findings are pushed, and
/// placed here). Written once, in this order:
/// causes before symptoms (a finding with `symptom_of` follows its root); causes at or above
/// [`RULED_OUT_BELOW`] before the ruled-out, and among the ruled-out those with nothing against
/// them before those the evidence contradicts (`against`: a 32 GiB /dev/shm is not the
/// "closest" cause of a SIGBUS, however many lines name it); then higher confidence first; at equal
/// confidence a specific category before a generic one (`python_exception`, `other`: "an
/// exception" says less than what kind), then a rule file's finding before an engine-made
/// one, the second tier's candidates last; then the order they were made in (the sort is stable). "Why it ranks lower" in the
/// reports reads these same keys (`why_lower`).
pub fn rank(findings: &mut [Finding]) {
    findings.sort_by(|x, y| {
        let key = |f: &Finding| {
            let out = f.confidence < RULED_OUT_BELOW;
            (f.symptom_of.is_some(), out, out && !f.against.is_empty())
        };
        let generic = |f: &Finding| GENERIC.contains(&f.category);
        key(x)
            .cmp(&key(y))
            .then(y.confidence.total_cmp(&x.confidence))
            .then(generic(x).cmp(&generic(y)))
            .then(provenance(x).cmp(&provenance(y)))
    });
}

/// Why `f` ranks below `top` in [`rank`]'s order, in the terms of that order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lower {
    /// Evidence argues against it (its `against`).
    Against,
    /// Below the floor: considered and ruled out for lack of evidence.
    Weak,
    /// Less confidence than the top cause.
    LessEvidence,
    /// As much confidence; ranked after by where it comes from or the order it was made in.
    Tie,
}

/// The reason `f` ranks below `top`, true by construction: read from the same keys as [`rank`].
/// It reads `strength`, which [`calibrate::apply`] keeps: the value [`rank`] sorted on.
pub fn why_lower(f: &Finding, top: &Finding) -> Lower {
    if !f.against.is_empty() {
        Lower::Against
    } else if f.strength < RULED_OUT_BELOW {
        Lower::Weak
    } else if f.strength < top.strength {
        Lower::LessEvidence
    } else {
        Lower::Tie
    }
}

fn finish(kb: &KnowledgeBase, d: Draft, a: &Analysis) -> Finding {
    let conf = score(&d.terms);
    let hits = cited_order(kb, &d.hits);
    let evidence = cite(&hits, d.fact_evidence, a);

    let origin = origin_of(&hits);
    let caps: Vec<(String, String)> = hits
        .iter()
        .flat_map(|h| h.captures.iter().cloned())
        .collect();
    let mut lines: Vec<&str> = evidence.iter().map(|e| e.text.as_str()).collect();
    // The traceback frames kept in the error tail of the hits' files, after the cited lines:
    // a derived value may name the library whose frame raised (`derive.kernel_library`) or
    // the phase that failed (`derive.gpu_oom_phase`). CPython's `File "…", line N, in f` and
    // IPython's `File /…:N, in f(…)`.
    lines.extend(
        a.error_tail
            .iter()
            .filter(|l| hits.iter().any(|h| h.input == l.input) && is_frame(&l.text))
            .map(|l| l.text.as_str()),
    );
    let vars = Vars {
        facts: &a.facts,
        captures: &caps,
        lines: &lines,
    };
    let contradicted = !d.against.is_empty();
    let fix = choose_fix(d.lead, &d.rules, &vars, contradicted);
    // A symptom is thin evidence however many lines show it: the cause is elsewhere.
    let next_time = if conf < 0.7 || d.lead.role == Role::Symptom {
        d.rules
            .iter()
            .filter(|r| {
                !r.next_time_unless
                    .iter()
                    .any(|k| a.inputs.iter().any(|i| i.kind == *k))
            })
            .find_map(|r| r.next_time.clone())
    } else {
        None
    };
    let alternatives = if d.against.is_empty() {
        None
    } else {
        d.rules.iter().find_map(|r| r.doc_lookalikes.clone())
    };
    Finding {
        alternatives,
        rule: d.lead.name.clone(),
        code: d.lead.code.clone(),
        category: d.lead.category,
        // Evidence against the cause (a large, empty /dev/shm against a SIGBUS): its usual
        // remedy is not what the run needs; look first.
        action: if contradicted {
            Action::Investigate
        } else {
            d.lead.action.unwrap_or(d.lead.category.action())
        },
        title: d.lead.title.clone(),
        confidence: conf,
        strength: conf,
        symptom_of: None,
        origin,
        evidence,
        against: d.against,
        fix,
        role: d.lead.role,
        merged_rules: d
            .rules
            .iter()
            .filter(|r| r.name != d.lead.name)
            .map(|r| r.name.clone())
            .collect(),
        score: d
            .terms
            .into_iter()
            .map(|(_, weight, what)| Contribution { what, weight })
            .collect(),
        more_lines: d.dropped,
        next_time,
        affected_ranks: Vec::new(),
    }
}

/// Noisy-OR over supporting terms, then each contradiction scales the result down; rounded to
/// hundredths, at most 0.99.
fn score(terms: &[(String, f64, String)]) -> f64 {
    let mut p_not = 1.0;
    for (_, w, _) in terms.iter().filter(|t| t.1 > 0.0) {
        p_not *= 1.0 - w;
    }
    let mut conf = 1.0 - p_not;
    for (_, w, _) in terms.iter().filter(|t| t.1 < 0.0) {
        conf *= 1.0 + w;
    }
    (conf.clamp(0.0, 0.99) * 100.0).round() / 100.0
}

/// The decisive lines first (the kernel's `Killed process` before the launcher's exit code),
/// one line of each signature before a second of any, then in file order.
fn cited_order<'a>(kb: &KnowledgeBase, hits: &[&'a RuleHit]) -> Vec<&'a RuleHit> {
    let mut hits = hits.to_vec();
    let weight = |h: &RuleHit| {
        kb.rules
            .get(h.rule)
            .and_then(|r| r.signatures.get(h.signature))
            .map_or(0.0, |s| s.weight)
    };
    hits.sort_by_key(|h| (h.input, h.line));
    let mut nth: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    let mut keyed: Vec<(usize, &RuleHit)> = hits
        .iter()
        .map(|h| {
            let n = nth.entry((h.rule, h.signature)).or_default();
            *n += 1;
            (*n, *h)
        })
        .collect();
    keyed.sort_by(|(nx, x), (ny, y)| {
        nx.cmp(ny)
            .then(weight(y).total_cmp(&weight(x)))
            .then((x.input, x.line).cmp(&(y.input, y.line)))
    });
    keyed.into_iter().map(|(_, h)| h).collect()
}

/// The evidence cited: each hit's line once, then the facts' lines (a fact read from a line
/// already cited adds its reason to that citation).
fn cite(hits: &[&RuleHit], fact_evidence: Vec<Evidence>, a: &Analysis) -> Vec<Evidence> {
    let mut evidence: Vec<Evidence> = Vec::new();
    for h in hits {
        // The same text repeated (thousands of identical assert lines, a kernel line in both
        // a dmesg file and a dmesg snapshot) is cited once.
        if evidence.iter().any(|e| e.text == h.text) {
            continue;
        }
        evidence.push(hit_evidence(h, a));
    }
    // One line matched by two signatures gives two hits whose excerpts of a long line are
    // windows around different matches: cite the line once.
    cite_once(&mut evidence);
    for fe in fact_evidence {
        // A fact read from a line already cited (a launcher's exit line) adds its reason to
        // that citation instead of citing the line twice.
        match evidence
            .iter_mut()
            .find(|e| e.path == fe.path && e.line.is_some() && e.line == fe.line)
        {
            Some(e) if e.why.is_none() => e.why = fe.why,
            Some(_) => {}
            None => evidence.push(fe),
        }
    }
    evidence
}

/// The fix: the first variant of the lead's (then the merged rules') whose variables are all
/// known, of the contradicted kind when there is evidence against and such a variant exists.
/// The variant is chosen in English; its Chinese twin is rendered from the same variables (a
/// missing twin leaves the report to fall back to English).
fn choose_fix(lead: &Rule, rules: &[&Rule], vars: &Vars, contradicted: bool) -> Text {
    let has_contradicted_variant = rules
        .iter()
        .flat_map(|r| r.fixes.iter())
        .any(|f| f.contradicted);
    let chosen = lead
        .fixes
        .iter()
        .chain(rules.iter().flat_map(|r| r.fixes.iter()))
        .filter(|f| f.contradicted == (contradicted && has_contradicted_variant))
        .find_map(|f| {
            if f.when.iter().any(|w| vars.lookup(w).is_none()) {
                return None;
            }
            vars.render(&f.text.en, Lang::En).map(|text| (f, text))
        });
    match chosen {
        Some((f, text)) => Text::given(text, vars.render(&f.text.zh, Lang::Zh)),
        None => Text::new(
            "See `trainwreck rules explain` for this rule.",
            "规则说明见 `trainwreck rules explain`。",
        ),
    }
}

/// Each line (path and line number) cited once, where it was first cited: with the longest
/// text any of its copies has (a long line is cut to a window around each signature's match,
/// so copies differ) and the first reason given for it.
pub fn cite_once(evidence: &mut Vec<Evidence>) {
    let mut kept: Vec<Evidence> = Vec::with_capacity(evidence.len());
    for e in evidence.drain(..) {
        let same = kept
            .iter_mut()
            .find(|k| e.line.is_some() && k.line == e.line && k.path == e.path);
        match same {
            Some(k) => {
                if e.text.chars().count() > k.text.chars().count() {
                    k.text = e.text;
                }
                if k.why.is_none() {
                    k.why = e.why;
                }
            }
            None => kept.push(e),
        }
    }
    *evidence = kept;
}

fn hit_evidence(h: &RuleHit, a: &Analysis) -> Evidence {
    Evidence {
        path: a.inputs[h.input].path.clone(),
        line: Some(h.line),
        rank: h.attr.rank,
        host: h.attr.host.clone(),
        time: h.attr.time.clone(),
        text: h.text.clone(),
        why: None,
    }
}

/// Where the failure started, as far as the hits tell: the earliest timed hit that names a
/// rank or host; else the first hit.
fn origin_of(hits: &[&RuleHit]) -> Origin {
    let attr: Option<&Attribution> = hits
        .iter()
        .filter(|h| h.attr.time.is_some() && (h.attr.rank.is_some() || h.attr.host.is_some()))
        .min_by(|x, y| x.attr.time.cmp(&y.attr.time))
        .or_else(|| hits.iter().find(|h| h.attr.rank.is_some()))
        .or_else(|| hits.first())
        .map(|h| &h.attr);
    match attr {
        Some(a) => Origin {
            rank: a.rank.or(a.local_rank),
            host: a.host.clone(),
            pid: a.pid,
            time: a.time.clone(),
        },
        None => Origin::default(),
    }
}
