//! The knowledge base's own test: every rule's examples run through the production scanner
//! (`analyze::Engine::signature_hits`, the path `analyze` takes: literal prefilter, ANSI and
//! `\r` handling, `kinds`, `preceded_by`), so a literal-extraction or prefilter bug that would
//! drop real lines fails here too. One scan per example serves every rule at once, which also
//! makes the cross-rule overlap check linear in the number of examples. Returns messages; the
//! CLI and `cargo test` decide what to do with them. Retired rules are not scanned by
//! `analyze`, so their examples are not checked. A built-in rule must also carry its Chinese
//! texts (`title_zh`, each fix's `text_zh`, `next_time_zh`, each condition's `why_zh`,
//! `doc.lookalikes_zh`), and a
//! Chinese template must use the same variables as its English twin, so the numbers a fix
//! computes appear in both; a user rule may leave them out (the report falls back to English).

use crate::analyze::Engine;
use crate::model::{Fact, RuleStatus};
use crate::rules::template::{Piece, Template};
use crate::rules::{ExampleCase, KnowledgeBase, Role, Rule};
use std::collections::BTreeSet;

/// The name an example is read under: a plain log, so its kind comes from its text.
const EXAMPLE_NAME: &str = "example.log";

/// Check every rule's examples: fire examples must fire, silent ones must not, every
/// signature must be exercised by some fire example, and no rule of another category may fire
/// on a rule's fire example unless one of the two declares the overlap. One message per failure.
pub fn test_examples(kb: &KnowledgeBase) -> Vec<String> {
    let engine = Engine::new(kb);
    let mut fails = Vec::new();
    for r in &kb.rules {
        chinese(r, &mut fails);
    }
    for (ri, r) in kb.rules.iter().enumerate() {
        if r.signatures.is_empty() || r.status == RuleStatus::Retired {
            continue;
        }
        let mut used: BTreeSet<usize> = BTreeSet::new();
        for ex in &r.examples_fire {
            let hits = engine.signature_hits(EXAMPLE_NAME, ex);
            let own: Vec<usize> = hits
                .iter()
                .filter(|(hr, _)| *hr == ri)
                .map(|(_, s)| *s)
                .collect();
            if own.is_empty() {
                fails.push(format!(
                    "{} {} ({}): fire example is not matched by any signature as `analyze` reads it: {ex:?}",
                    r.code, r.name, r.origin
                ));
            }
            used.extend(own);
            overlaps(kb, r, ex, &hits, &mut fails);
        }
        for ex in &r.examples_silent {
            if engine
                .signature_hits(EXAMPLE_NAME, ex)
                .iter()
                .any(|(hr, _)| *hr == ri)
            {
                fails.push(format!(
                    "{} {} ({}): silent example matches: {ex:?}",
                    r.code, r.name, r.origin
                ));
            }
        }
        for (i, c) in r.examples_cases.iter().enumerate() {
            let (hit, found) = run_case(&engine, kb, r, c);
            used.extend(hit);
            if let Err(why) = found {
                fails.push(format!(
                    "{} {} ({}): examples.case[{i}]: {why}",
                    r.code, r.name, r.origin
                ));
            }
        }
        for (i, s) in r.signatures.iter().enumerate() {
            if !used.contains(&i) {
                fails.push(format!(
                    "{} {} ({}): signature[{i}] `{}` is not exercised by any fire example",
                    r.code, r.name, r.origin, s.source
                ));
            }
        }
    }
    fails
}

/// The template's variables with their filters, sorted (`{a} {b|docker}` and `{b|docker} {a}`
/// agree; `{b}` and `{b|docker}` do not).
fn holes(t: &Template) -> Vec<String> {
    let mut v: Vec<String> = t
        .pieces
        .iter()
        .filter_map(|p| match p {
            Piece::Var { name, filter } => Some(format!("{name}{filter:?}")),
            Piece::Text(_) => None,
        })
        .collect();
    v.sort();
    v
}

/// A rule's Chinese texts: present for a built-in rule, and each Chinese template with the
/// variables of its English twin (for any rule that gives one).
fn chinese(r: &Rule, fails: &mut Vec<String>) {
    let builtin = r.origin.starts_with("builtin:");
    let mut fail =
        |what: String| fails.push(format!("{} {} ({}): {what}", r.code, r.name, r.origin));
    if builtin && r.title_zh.as_deref().is_none_or(|t| t.trim().is_empty()) {
        fail("no `title_zh`: a built-in rule carries its Chinese title".into());
    }
    if builtin && r.next_time.is_some() && r.next_time_zh.is_none() {
        fail("`next_time` has no `next_time_zh`".into());
    }
    if builtin && r.doc_lookalikes.is_some() && r.doc_lookalikes_zh.is_none() {
        fail("`doc.lookalikes` has no `doc.lookalikes_zh`".into());
    }
    let twins = r
        .fixes
        .iter()
        .enumerate()
        .map(|(i, f)| (format!("fix[{i}].text_zh"), &f.text, f.text_zh.as_ref()))
        .chain(
            r.conditions
                .iter()
                .enumerate()
                .map(|(i, c)| (format!("condition[{i}].why_zh"), &c.why, c.why_zh.as_ref())),
        );
    for (key, en, zh) in twins {
        match zh {
            None if builtin => fail(format!(
                "no `{key}`: a built-in rule carries the Chinese text next to the English"
            )),
            None => {}
            Some(zh) if holes(zh) != holes(en) => fail(format!(
                "`{key}` uses the variables {:?} but the English uses {:?}: both must show the same values",
                holes(zh),
                holes(en)
            )),
            Some(_) => {}
        }
    }
}

/// An overlap between rules of different categories fails unless one of the two declares it
/// in `overlaps`: otherwise two hypotheses would silently compete for the same line. Advice
/// rules are exempt (they suppress evidence rather than compete).
fn overlaps(
    kb: &KnowledgeBase,
    owner: &Rule,
    ex: &str,
    hits: &[(usize, usize)],
    fails: &mut Vec<String>,
) {
    if owner.role == Role::Advice {
        return;
    }
    let mut seen = BTreeSet::new();
    for &(oi, _) in hits {
        let other = &kb.rules[oi];
        if !seen.insert(oi)
            || other.role == Role::Advice
            || other.name == owner.name
            || other.category == owner.category
            || owner.overlaps.contains(&other.name)
            || other.overlaps.contains(&owner.name)
        {
            continue;
        }
        fails.push(format!(
            "{} {} ({}) also fires on a fire example of {} ({}): {ex:?}; narrow one \
             of them or declare `overlaps = [\"{}\"]`",
            other.code, other.name, other.category, owner.name, owner.category, owner.name
        ));
    }
}

/// Run one scenario through the production scan and the real correlation (the case's facts
/// added as if a snapshot had given them): the signatures of `r` it hit, and whether `r`'s
/// finding (its own or merged into another of its category) says what the case expects.
fn run_case(
    engine: &Engine,
    kb: &KnowledgeBase,
    r: &Rule,
    c: &ExampleCase,
) -> (Vec<usize>, Result<(), String>) {
    let mut a = engine.analyze_text(EXAMPLE_NAME, &c.text);
    let ri = kb.rules.iter().position(|x| x.name == r.name);
    let hit: Vec<usize> = a
        .hits
        .iter()
        .filter(|h| Some(h.rule) == ri)
        .map(|h| h.signature)
        .collect();
    for (name, v) in &c.facts {
        let mut f = Fact::new(name.clone(), v.clone());
        f.path = "case-facts".into();
        f.text = format!("{name} = {v}");
        a.facts.push(f);
    }
    let d = crate::correlate::correlate(kb, &a);
    let Some(f) = d
        .findings
        .iter()
        .find(|f| f.rule == r.name || f.merged_rules.contains(&r.name))
    else {
        let got: Vec<&str> = d.findings.iter().map(|f| f.rule.as_str()).collect();
        return (hit, Err(format!("no finding of this rule (found {got:?})")));
    };
    if let Some([lo, hi]) = c.confidence
        && !(lo..=hi).contains(&f.confidence)
    {
        return (
            hit,
            Err(format!(
                "confidence {} is outside [{lo}, {hi}] (score: {:?})",
                f.confidence, f.score
            )),
        );
    }
    if let Some(want) = &c.fix
        && !f.fix.contains(want.as_str())
    {
        return (
            hit,
            Err(format!("the fix does not contain {want:?}: {:?}", f.fix)),
        );
    }
    (hit, Ok(()))
}
