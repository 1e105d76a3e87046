//! Renderings of the knowledge base: `rules list`, `rules explain` (an [`Explain`] built from
//! a rule or an engine-made finding, serializable, then rendered; or an Xid catalog entry)
//! and `rules patterns` (every signature as a line `rg -f` accepts). Formats only; it reads
//! rules, never logs.

use crate::model::{Action, Category, RuleStatus};
use crate::rules::xid::XidEntry;
use crate::rules::{KnowledgeBase, Role, Rule, template::Piece};
use serde::Serialize;

/// `rules list`: one row per rule (code, name, category, role, title), then the count; rows
/// laid out as `tables` says (one greppable line per rule when piped).
pub fn list(kb: &KnowledgeBase, tables: super::table::Tables) -> String {
    let mut t = tables.table();
    t.set_header(vec!["code", "name", "category", "role", "title"]);
    for r in &kb.rules {
        tables.row(
            &mut t,
            vec![
                r.code.clone(),
                r.name.clone(),
                r.category.to_string(),
                format!("{:?}", r.role).to_lowercase(),
                r.title.clone(),
            ],
        );
    }
    let engine = crate::correlate::ENGINE_FINDINGS;
    for e in engine {
        tables.row(
            &mut t,
            vec![
                e.code.to_string(),
                e.name.to_string(),
                e.category.to_string(),
                "engine".to_string(),
                format!("made by the engine ({})", e.module),
            ],
        );
    }
    format!(
        "{}\n{} rules, {} findings made by the engine\n",
        tables.finish(t),
        kb.rules.len(),
        engine.len()
    )
}

/// A signature as `rules explain` shows it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ExplainSignature {
    pub weight: f64,
    pub regex: String,
}

/// A condition on facts as `rules explain` shows it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ExplainCondition {
    pub weight: f64,
    pub fact: String,
    /// The comparison's name (`Lt`, `Contains`, …).
    pub op: String,
    pub value: Option<String>,
    /// Raises the finding on its own, without a signature hit.
    pub trigger: bool,
}

/// What `rules explain` says about a rule or an engine-made finding.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Explain {
    pub code: String,
    pub name: String,
    /// True for findings the engine makes itself (TW99xx): no rule file behind them, and
    /// only code, name, category and `what` are known.
    pub engine: bool,
    pub title: Option<String>,
    pub category: Category,
    pub action: Action,
    pub role: Option<Role>,
    pub status: Option<RuleStatus>,
    /// The rule file (`builtin:shm_exhausted.toml` or a path).
    pub source: Option<String>,
    pub what: String,
    pub why: Option<String>,
    pub lookalikes: Option<String>,
    pub signatures: Vec<ExplainSignature>,
    pub conditions: Vec<ExplainCondition>,
    /// Fix texts with their template variables as `{name}`.
    pub fixes: Vec<String>,
    pub next_time: Option<String>,
    pub references: Vec<String>,
}

impl Explain {
    pub fn of_rule(r: &Rule) -> Explain {
        Explain {
            code: r.code.clone(),
            name: r.name.clone(),
            engine: false,
            title: Some(r.title.clone()),
            category: r.category,
            action: r.category.action(),
            role: Some(r.role),
            status: Some(r.status),
            source: Some(r.origin.clone()),
            what: r.doc_what.clone(),
            why: Some(r.doc_why.clone()),
            lookalikes: r.doc_lookalikes.clone(),
            signatures: r
                .signatures
                .iter()
                .map(|s| ExplainSignature {
                    weight: s.weight,
                    regex: s.source.clone(),
                })
                .collect(),
            conditions: r
                .conditions
                .iter()
                .map(|c| ExplainCondition {
                    weight: c.weight,
                    fact: c.fact.clone(),
                    op: format!("{:?}", c.op),
                    value: c.value.as_ref().map(|v| v.to_string()),
                    trigger: c.trigger,
                })
                .collect(),
            fixes: r
                .fixes
                .iter()
                .map(|f| {
                    f.text
                        .pieces
                        .iter()
                        .map(|p| match p {
                            Piece::Text(t) => t.clone(),
                            Piece::Var { name, .. } => format!("{{{name}}}"),
                        })
                        .collect()
                })
                .collect(),
            next_time: r.next_time.clone(),
            references: r.references.clone(),
        }
    }

    /// A finding the engine makes itself (`correlate::ENGINE_FINDINGS`).
    pub fn of_engine(e: &crate::correlate::EngineFinding) -> Explain {
        Explain {
            code: e.code.to_string(),
            name: e.name.to_string(),
            engine: true,
            title: None,
            category: e.category,
            action: e.category.action(),
            role: None,
            status: None,
            source: Some(e.module.to_string()),
            what: e.what.to_string(),
            why: None,
            lookalikes: None,
            signatures: Vec::new(),
            conditions: Vec::new(),
            fixes: Vec::new(),
            next_time: None,
            references: Vec::new(),
        }
    }
}

/// `rules explain` for people.
pub fn explain(e: &Explain) -> String {
    if e.engine {
        return format!(
            "{} {}\ncategory: {}\nmade by the engine ({}), not a rule file\n\n## What it detects\n{}\n",
            e.code,
            e.name,
            e.category,
            e.source.as_deref().unwrap_or("src/correlate"),
            e.what
        );
    }
    let opt = |o: &Option<String>| o.clone().unwrap_or_default();
    let mut s = format!(
        "{} {} — {}\ncategory: {} (action: {})\nrole: {}\nstatus: {}\nsource: {}\n\n## What it detects\n{}\n\n## Why it happens\n{}\n",
        e.code,
        e.name,
        opt(&e.title),
        e.category,
        e.action,
        e.role.map(|r| format!("{r:?}")).unwrap_or_default(),
        e.status.map(|s| s.to_string()).unwrap_or_default(),
        opt(&e.source),
        e.what,
        opt(&e.why)
    );
    if let Some(l) = &e.lookalikes {
        s.push_str(&format!("\n## Known look-alikes\n{l}\n"));
    }
    if !e.signatures.is_empty() {
        s.push_str("\n## Signatures\n");
        for sig in &e.signatures {
            s.push_str(&format!("  [{:.2}] {}\n", sig.weight, sig.regex));
        }
    }
    if !e.conditions.is_empty() {
        s.push_str("\n## Conditions on facts\n");
        for c in &e.conditions {
            s.push_str(&format!(
                "  [{:+.2}] {} {} {}{}\n",
                c.weight,
                c.fact,
                c.op,
                c.value.clone().unwrap_or_default(),
                if c.trigger {
                    " (raises the finding alone)"
                } else {
                    ""
                }
            ));
        }
    }
    s.push_str("\n## Fix\n");
    for f in &e.fixes {
        s.push_str(&format!("  - {f}\n"));
    }
    if let Some(n) = &e.next_time {
        s.push_str(&format!("\n## What to collect next time\n{n}\n"));
    }
    if !e.references.is_empty() {
        s.push_str("\n## References\n");
        for x in &e.references {
            s.push_str(&format!("  {x}\n"));
        }
    }
    s
}

/// The multi-line entry `rules explain xid-N` prints.
pub fn explain_xid(e: &XidEntry) -> String {
    format!(
        "Xid {}: {}\n\ncause: {}{}\naction: {}\nreference: https://docs.nvidia.com/deploy/xid-errors/index.html\n",
        e.code,
        e.name,
        e.cause,
        if e.follows_other {
            " (follows another event; not a cause by itself)"
        } else {
            ""
        },
        e.action
    )
}

/// `rules patterns`: every signature regex, one per line, named groups unnamed (`rg -f`
/// refuses a capture name used twice in one pattern set).
pub fn patterns(kb: &KnowledgeBase) -> String {
    let mut s = String::new();
    for r in &kb.rules {
        for sig in &r.signatures {
            s.push_str(&unname_groups(&sig.source));
            s.push('\n');
        }
    }
    s
}

/// `(?P<name>…)` and `(?<name>…)` become `(?:…)`; escaped parentheses are left alone.
fn unname_groups(re: &str) -> String {
    let b = re.as_bytes();
    let mut out = String::with_capacity(re.len());
    let mut i = 0;
    while i < b.len() {
        let escaped = out.bytes().rev().take_while(|&c| c == b'\\').count() % 2 == 1;
        let rest = &re[i..];
        let head = if rest.starts_with("(?P<") {
            4
        } else if rest.starts_with("(?<") && !rest.starts_with("(?<=") && !rest.starts_with("(?<!")
        {
            3
        } else {
            0
        };
        if head > 0
            && !escaped
            && let Some(close) = rest[head..].find('>')
        {
            out.push_str("(?:");
            i += head + close + 1;
            continue;
        }
        let c = rest.chars().next().unwrap_or(' ');
        out.push(c);
        i += c.len_utf8();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explain_is_data_before_it_is_text() {
        let kb = KnowledgeBase::load(&[]).expect("builtin rules");
        let r = kb.find("TW0101").expect("a rule TW0101");
        let e = Explain::of_rule(r);
        let v = serde_json::to_value(&e).expect("serializable");
        assert_eq!(v["category"], r.category.as_str());
        assert_eq!(v["action"], r.category.action().as_str());
        assert!(explain(&e).starts_with(&format!("{} {} — ", r.code, r.name)));
        for f in crate::correlate::ENGINE_FINDINGS {
            let e = Explain::of_engine(f);
            assert!(e.engine && explain(&e).contains("made by the engine"));
            assert!(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join(f.module)
                    .is_file(),
                "{} names its module {}",
                f.code,
                f.module
            );
        }
    }

    #[test]
    fn group_names_are_removed_for_rg() {
        assert_eq!(
            super::unname_groups(r"a (?P<x>\d+) \(?P<y> (?<z>b)"),
            r"a (?:\d+) \(?P<y> (?:b)"
        );
    }
}
