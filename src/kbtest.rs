//! The knowledge base's own test: every rule's examples run through the production scanner
//! (`analyze::Engine::signature_hits`, the path `analyze` takes: literal prefilter, ANSI and
//! `\r` handling, `kinds`, `preceded_by`), so a literal-extraction or prefilter bug that would
//! drop real lines fails here too. One scan per example serves every rule at once, which also
//! makes the cross-rule overlap check linear in the number of examples. Returns messages, in
//! English and Chinese; the CLI and `cargo test` decide what to do with them. Retired rules are not scanned by
//! `analyze`, so their examples are not checked. A built-in rule must also carry its Chinese
//! texts (`title_zh`, each fix's `text_zh`, `next_time_zh`, each condition's `why_zh`,
//! `doc.lookalikes_zh`), and a
//! Chinese template must use the same variables as its English twin, so the numbers a fix
//! computes appear in both; a user rule may leave them out (the report falls back to English).

use crate::analyze::Engine;
use crate::model::{Fact, RuleStatus, Text, text};
use crate::rules::template::{Piece, Template};
use crate::rules::{ExampleCase, KnowledgeBase, Role, Rule};
use std::collections::BTreeSet;

/// The name an example is read under: a plain log, so its kind comes from its text.
const EXAMPLE_NAME: &str = "example.log";

/// Rules per scanner while testing. Each chunk's scanner (with the built-in rules, which every
/// chunk includes) is built, runs every example, and is dropped before the next is built, so
/// `rules test` holds one chunk's compiled patterns at a time however many rules are loaded.
/// With no local rules there is one chunk: exactly the scanner `analyze` uses.
const CHUNK_RULES: usize = 512;

/// What one example gave: the (rule, signature) pairs hit, rule indices into the whole base.
type Hits = Vec<(usize, usize)>;

/// What one scenario gave: the signatures of its rule it hit, and whether it said what it must.
type CaseResult = (Vec<usize>, Result<(), Text>);

/// Check every rule's examples: fire examples must fire, silent ones must not, every
/// signature must be exercised by some fire example, and no rule of another category may fire
/// on a rule's fire example unless one of the two declares the overlap. One message per failure.
/// A scenario (`examples.case`) is correlated with the rules of its own chunk (the built-ins
/// and up to `CHUNK_RULES` local rules loaded beside it).
pub fn test_examples(kb: &KnowledgeBase) -> Vec<Text> {
    test_examples_in(kb, CHUNK_RULES)
}

fn test_examples_in(kb: &KnowledgeBase, chunk_rules: usize) -> Vec<Text> {
    let tested = |r: &Rule| !r.signatures.is_empty() && r.status != RuleStatus::Retired;
    let (builtin, local): (Vec<usize>, Vec<usize>) =
        (0..kb.rules.len()).partition(|&i| kb.rules[i].origin.starts_with("builtin:"));
    let chunks: Vec<Vec<usize>> = if local.is_empty() {
        vec![builtin]
    } else {
        local
            .chunks(chunk_rules)
            .map(|c| builtin.iter().chain(c).copied().collect())
            .collect()
    };
    let mut fire: Vec<Vec<Hits>> = kb
        .rules
        .iter()
        .map(|r| vec![Hits::new(); r.examples_fire.len()])
        .collect();
    let mut silent: Vec<Vec<Hits>> = kb
        .rules
        .iter()
        .map(|r| vec![Hits::new(); r.examples_silent.len()])
        .collect();
    let mut cases: Vec<Vec<CaseResult>> = vec![Vec::new(); kb.rules.len()];
    let mut cased = vec![false; kb.rules.len()];
    for chunk in &chunks {
        let sub = KnowledgeBase::from_rules(chunk.iter().map(|&i| kb.rules[i].clone()).collect());
        let engine = Engine::new(&sub);
        let global =
            |hits: Hits| -> Hits { hits.into_iter().map(|(r, s)| (chunk[r], s)).collect() };
        for (ri, r) in kb.rules.iter().enumerate() {
            if !tested(r) {
                continue;
            }
            for (e, ex) in r.examples_fire.iter().enumerate() {
                fire[ri][e].extend(global(engine.signature_hits(EXAMPLE_NAME, ex)));
            }
            for (e, ex) in r.examples_silent.iter().enumerate() {
                silent[ri][e].extend(global(engine.signature_hits(EXAMPLE_NAME, ex)));
            }
            if !cased[ri]
                && let Some(li) = chunk.iter().position(|&i| i == ri)
            {
                cased[ri] = true;
                cases[ri] = r
                    .examples_cases
                    .iter()
                    .map(|c| run_case(&engine, &sub, &sub.rules[li], c))
                    .collect();
            }
        }
    }
    let mut fails = Vec::new();
    for r in &kb.rules {
        chinese(r, &mut fails);
    }
    for (ri, r) in kb.rules.iter().enumerate() {
        if !tested(r) {
            continue;
        }
        let mut used: BTreeSet<usize> = BTreeSet::new();
        for (ex, hits) in r.examples_fire.iter().zip(&mut fire[ri]) {
            hits.sort_unstable();
            hits.dedup();
            let own: Vec<usize> = hits
                .iter()
                .filter(|(hr, _)| *hr == ri)
                .map(|(_, s)| *s)
                .collect();
            if own.is_empty() {
                fails.push(about(
                    r,
                    text!(
                        "fire example is not matched by any signature as `analyze` reads it: {ex:?}",
                        "fire 示例没有被任何 signature 匹配（按 `analyze` 读取的方式）：{ex:?}"
                    ),
                ));
            }
            used.extend(own);
            overlaps(kb, r, ex, hits, &mut fails);
        }
        for (ex, hits) in r.examples_silent.iter().zip(&silent[ri]) {
            if hits.iter().any(|(hr, _)| *hr == ri) {
                fails.push(about(
                    r,
                    text!(
                        "silent example matches: {ex:?}",
                        "silent 示例被匹配了：{ex:?}"
                    ),
                ));
            }
        }
        for (i, (hit, found)) in std::mem::take(&mut cases[ri]).into_iter().enumerate() {
            used.extend(hit);
            if let Err(why) = found {
                fails.push(about(
                    r,
                    why.prefixed(
                        &format!("examples.case[{i}]: "),
                        &format!("examples.case[{i}]："),
                    ),
                ));
            }
        }
        for (i, s) in r.signatures.iter().enumerate() {
            if !used.contains(&i) {
                let src = &s.source;
                fails.push(about(
                    r,
                    text!(
                        "signature[{i}] `{src}` is not exercised by any fire example",
                        "signature[{i}] `{src}` 没有被任何 fire 示例用到"
                    ),
                ));
            }
        }
    }
    fails
}

/// A message about rule `r`, after what names it: `TW0104 ucx-bus-error (builtin:shm.toml): `.
fn about(r: &Rule, t: Text) -> Text {
    let name = format!("{} {} ({}): ", r.code, r.name, r.origin);
    t.prefixed(&name, &name)
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
fn chinese(r: &Rule, fails: &mut Vec<Text>) {
    let builtin = r.origin.starts_with("builtin:");
    let mut fail = |what: Text| fails.push(about(r, what));
    if builtin && r.title.zh.trim().is_empty() {
        fail(text!(
            "no `title_zh`: a built-in rule carries its Chinese title",
            "没有 `title_zh`：内置规则必须带中文标题"
        ));
    }
    if builtin && r.next_time.as_ref().is_some_and(|n| n.zh().is_none()) {
        fail(text!(
            "`next_time` has no `next_time_zh`",
            "有 `next_time` 却没有 `next_time_zh`"
        ));
    }
    if builtin && r.doc_what.zh().is_none_or(|t| t.trim().is_empty()) {
        fail(text!(
            "no `doc.what_zh`: a built-in rule documents what it detects in Chinese too",
            "没有 `doc.what_zh`：内置规则也要用中文说明它检测什么"
        ));
    }
    if builtin && r.doc_why.zh().is_none_or(|t| t.trim().is_empty()) {
        fail(text!(
            "no `doc.why_zh`: a built-in rule documents why it happens in Chinese too",
            "没有 `doc.why_zh`：内置规则也要用中文说明它为什么会发生"
        ));
    }
    if builtin && r.doc_lookalikes.as_ref().is_some_and(|l| l.zh().is_none()) {
        fail(text!(
            "`doc.lookalikes` has no `doc.lookalikes_zh`",
            "有 `doc.lookalikes` 却没有 `doc.lookalikes_zh`"
        ));
    }
    let twins = r
        .fixes
        .iter()
        .enumerate()
        .map(|(i, f)| (format!("fix[{i}].text_zh"), &f.text.en, f.text.given_zh()))
        .chain(r.conditions.iter().enumerate().map(|(i, c)| {
            (
                format!("condition[{i}].why_zh"),
                &c.why.en,
                c.why.given_zh(),
            )
        }));
    for (key, en, zh) in twins {
        match zh {
            None if builtin => fail(text!(
                "no `{key}`: a built-in rule carries the Chinese text next to the English",
                "没有 `{key}`：内置规则要在英文旁边带上中文"
            )),
            None => {}
            Some(zh) if holes(zh) != holes(en) => {
                let (zh, en) = (holes(zh), holes(en));
                fail(text!(
                    "`{key}` uses the variables {zh:?} but the English uses {en:?}: both must show the same values",
                    "`{key}` 用的变量是 {zh:?}，英文用的是 {en:?}：两者必须显示同样的数值"
                ))
            }
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
    fails: &mut Vec<Text>,
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
        let (code, name, cat) = (&other.code, &other.name, other.category);
        let (owner_name, owner_cat) = (&owner.name, owner.category);
        fails.push(text!(
            "{code} {name} ({cat}) also fires on a fire example of {owner_name} ({owner_cat}): {ex:?}; narrow one of them or declare `overlaps = [\"{owner_name}\"]`",
            "{code} {name}（{cat}）也在 {owner_name}（{owner_cat}）的 fire 示例上触发了：{ex:?}；把其中一个收窄，或者声明 `overlaps = [\"{owner_name}\"]`"
        ));
    }
}

/// Run one scenario through the production scan and the real correlation (the case's facts
/// added as if a snapshot had given them): the signatures of `r` it hit, and whether `r`'s
/// finding (its own or merged into another of its category) says what the case expects.
fn run_case(engine: &Engine, kb: &KnowledgeBase, r: &Rule, c: &ExampleCase) -> CaseResult {
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
        return (
            hit,
            Err(text!(
                "no finding of this rule (found {got:?})",
                "没有这条规则的发现（找到的是 {got:?}）"
            )),
        );
    };
    if let Some([lo, hi]) = c.confidence
        && !(lo..=hi).contains(&f.strength)
    {
        // A scenario's band is the rule's own evidence strength, before calibration.
        let (conf, score) = (f.strength, &f.score);
        return (
            hit,
            Err(text!(
                "confidence {conf} (evidence strength, before calibration) is outside [{lo}, {hi}] (score: {score:?})",
                "置信度 {conf}（校准前的证据强度）不在 [{lo}, {hi}] 之内（得分：{score:?}）"
            )),
        );
    }
    if let Some(want) = &c.fix
        && !f.fix.en.contains(want.as_str())
    {
        let fix = &f.fix.en;
        return (
            hit,
            Err(text!(
                "the fix does not contain {want:?}: {fix:?}",
                "修复建议里没有 {want:?}：{fix:?}"
            )),
        );
    }
    (hit, Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Five local rules: two of other categories fire on each other's examples (an undeclared
    /// overlap), one has a silent example that fires, one a signature no example exercises.
    const LOCAL: &str = r#"
[[rule]]
code = "ACME001"
name = "acme-widget-jam"
category = "other"
role = "root"
title = "The widget feeder jammed"
[rule.doc]
what = "widget jams"
why = "a jam"
lookalikes = "none"
[[rule.signature]]
regex = 'widget feeder jammed at slot \d+'
weight = 0.7
[[rule.fix]]
text = "Clear the feeder."
[rule.examples]
fire = ["ERROR widget feeder jammed at slot 4"]
silent = ["widget feeder cleared"]

[[rule]]
code = "ACME002"
name = "acme-feeder-disk"
category = "disk_full"
role = "root"
title = "The feeder's spool disk filled"
[rule.doc]
what = "spool full"
why = "a full spool"
lookalikes = "none"
[[rule.signature]]
regex = 'feeder jammed at slot'
weight = 0.5
[[rule.fix]]
text = "Empty the spool."
[rule.examples]
fire = ["WARN feeder jammed at slot 9"]
silent = ["feeder ok"]

[[rule]]
code = "ACME003"
name = "acme-gear-slip"
category = "other"
role = "root"
title = "A gear slipped"
[rule.doc]
what = "gear slips"
why = "a slip"
lookalikes = "none"
[[rule.signature]]
regex = 'gear \d+ slipped'
weight = 0.6
[[rule.signature]]
regex = 'cog (?:lost|gone)'
weight = 0.6
[[rule.fix]]
text = "Tighten the gear."
[rule.examples]
fire = ["gear 3 slipped"]
silent = ["gear 7 slipped again"]

[[rule]]
code = "ACME004"
name = "acme-belt-snap"
category = "other"
role = "root"
title = "A belt snapped"
[rule.doc]
what = "belt snaps"
why = "a snap"
lookalikes = "none"
[[rule.signature]]
regex = 'belt snapped'
weight = 0.6
[[rule.fix]]
text = "Replace the belt."
[rule.examples]
fire = ["the belt snapped"]
silent = ["the belt hums"]

[[rule]]
code = "ACME005"
name = "acme-lamp-out"
category = "other"
role = "root"
title = "A lamp went out"
[rule.doc]
what = "lamps"
why = "a lamp"
lookalikes = "none"
[[rule.signature]]
regex = 'lamp \d+ out'
weight = 0.6
[[rule.fix]]
text = "Change the lamp."
[rule.examples]
fire = ["lamp 2 out"]
silent = ["lamp 2 on"]
"#;

    #[test]
    fn chunked_scanners_find_exactly_what_one_scanner_finds() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("acme.toml"), LOCAL).unwrap();
        let kb = KnowledgeBase::load(&[d.path()]).expect("local rules load");
        let whole = test_examples_in(&kb, usize::MAX);
        // The planted problems are found, the cross-chunk overlap included.
        assert!(
            whole.iter().any(|f| f.en.contains("acme-feeder-disk")
                && f.en
                    .contains("also fires on a fire example of acme-widget-jam")),
            "{whole:#?}"
        );
        assert!(
            whole
                .iter()
                .any(|f| f.en.contains("silent example matches: \"gear 7"))
        );
        assert!(
            whole
                .iter()
                .any(|f| f.en.contains("signature[1] `cog (?:lost|gone)`"))
        );
        assert_eq!(whole.len(), 3, "{whole:#?}");
        for chunk in [1, 2, 3] {
            assert_eq!(test_examples_in(&kb, chunk), whole, "chunks of {chunk}");
        }
    }
}
