//! What only the whole run can say, once every input is in: lines that carry framework advice
//! are evidence for nothing else, a line already in a before-run snapshot is history, and each
//! core is tied to the rank or worker its pid names. Edits the analysis in place; reads nothing.

use super::{Analysis, Engine};
use crate::model::{Phase, Warning, text};
use crate::rules::Role;
use crate::sources::SourceKind;
use crate::sources::elfcore;

impl Engine<'_> {
    /// Lines that carry framework advice are never evidence for anything else.
    pub(super) fn suppress_advice(&self, a: &mut Analysis) {
        let advice: std::collections::HashSet<(usize, u64)> = a
            .hits
            .iter()
            .filter(|h| self.kb.rules[h.rule].role == Role::Advice)
            .map(|h| (h.input, h.line))
            .collect();
        if advice.is_empty() {
            return;
        }
        a.hits.retain(|h| {
            self.kb.rules[h.rule].role == Role::Advice || !advice.contains(&(h.input, h.line))
        });
        a.advice_lines = advice.into_iter().collect();
        a.advice_lines.sort_unstable();
    }
}

/// Kernel logs keep old events: a line of a log that was already in a before-run snapshot is
/// history, not this run's failure. Such hits are removed, and the input they were in says
/// which line it was and where it stood before the run, never silently. A snapshot of state
/// (`ulimit -a`, `df`, meminfo, nvidia-smi) is not discounted: the same limit before and
/// after is still the limit the run had, not an old event. Nothing in a before-run input is
/// evidence.
pub(super) fn discount_preexisting(a: &mut Analysis) {
    let before_inputs: Vec<bool> = a.inputs.iter().map(|i| i.phase == Phase::Before).collect();
    if !before_inputs.iter().any(|b| *b) {
        return;
    }
    let events: Vec<bool> = a
        .inputs
        .iter()
        .map(|i| i.kind == SourceKind::Dmesg || i.kind.is_log())
        .collect();
    let mut old: std::collections::HashMap<(usize, &str), (usize, u64)> = Default::default();
    for h in a.hits.iter().filter(|h| before_inputs[h.input]) {
        old.entry((h.rule, h.text.as_str()))
            .or_insert((h.input, h.line));
    }
    // Per input: (its line, the text, the before input and line it was at).
    type SetAside = Vec<(u64, String, (usize, u64))>;
    let mut removed: std::collections::BTreeMap<usize, SetAside> = Default::default();
    for h in &a.hits {
        if !before_inputs[h.input]
            && events[h.input]
            && let Some(&was) = old.get(&(h.rule, h.text.as_str()))
        {
            let r = removed.entry(h.input).or_default();
            if !r.iter().any(|(l, _, _)| *l == h.line) {
                r.push((h.line, h.text.clone(), was));
            }
        }
    }
    drop(old);
    a.hits.retain(|h| {
        !before_inputs[h.input]
            && removed
                .get(&h.input)
                .is_none_or(|r| !r.iter().any(|(l, _, _)| *l == h.line))
    });
    for (input, lines) in removed {
        let (line, text, (was_in, was_at)) = &lines[0];
        let text: String = text.trim().chars().take(120).collect();
        let before = format!("{}:{was_at}", a.inputs[*was_in].path);
        let n = lines.len() - 1;
        let (more, more_zh) = if n == 0 {
            (String::new(), String::new())
        } else {
            (
                format!(" (and {n} more such line{})", if n == 1 { "" } else { "s" }),
                format!("（另有 {n} 行同样如此）"),
            )
        };
        a.warnings.push(Warning::new(
            Some(&format!("{}:{line}", a.inputs[input].path)),
            text!(
                "\"{text}\" was already at {before}, a snapshot taken before the run started: an older event, not counted as evidence of this failure{more}",
                "\"{text}\" 在训练开始前的快照 {before} 中就已存在：是更早的事件，不计为这次失败的证据{more_zh}"
            ),
        ));
    }
}

/// Tie each core to the rank or DataLoader worker its pid names, and to its `coredumpctl info`
/// entry, from every input's launcher lines (`elfcore::owner`); the tie becomes `core.owner`.
pub(super) fn tie_cores(a: &mut Analysis) {
    if a.cores.is_empty() {
        return;
    }
    let said: Vec<elfcore::owner::Said> = a
        .launch
        .iter()
        .filter_map(|(i, e)| {
            Some(elfcore::owner::Said {
                path: &a.inputs.get(*i)?.path,
                event: e,
            })
        })
        .collect();
    let logs: Vec<&str> = a
        .inputs
        .iter()
        .filter(|i| i.kind.is_log())
        .map(|i| i.path.as_str())
        .collect();
    let texts: Vec<&str> = a
        .inputs
        .iter()
        .filter(|i| i.kind == SourceKind::CoreText)
        .map(|i| i.path.as_str())
        .collect();
    let entries = elfcore::owner::coredumpctl_entries(a.facts.all(), &texts);
    let mut facts = Vec::new();
    for c in &mut a.cores {
        elfcore::owner::tie(&c.path, &mut c.summary, &said, &logs, &entries);
        if let Some(f) = c.summary.owner.as_ref().and_then(|o| o.fact(&c.path)) {
            facts.push(f);
        }
    }
    for f in facts {
        a.facts.push(f);
    }
}
