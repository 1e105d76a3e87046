//! Renderings of the knowledge base: `rules list`, `rules explain` (an [`Explain`] built from
//! a rule or an engine-made finding, serializable, then rendered; or an Xid catalog entry)
//! and `rules patterns` (every signature as a line `rg -f` accepts). Formats only; it reads
//! rules, never logs.

use crate::model::{Action, Category, RuleStatus, Text};
use crate::report::i18n::{Lang, Tr};
use crate::rules::xid::XidEntry;
use crate::rules::{KnowledgeBase, Role, Rule, template::Piece, template::Template};
use serde::Serialize;

/// `rules list`: one row per rule (code, name, category, role, title), then the count; rows
/// laid out as `tables` says (one greppable line per rule when piped). Titles and headings
/// in `lang` (a rule without a Chinese title keeps its English one); codes, names,
/// categories and roles are identifiers and stay as they are.
pub fn list(kb: &KnowledgeBase, tables: super::table::Tables, lang: Lang) -> String {
    let tr = Tr(lang);
    let mut t = tables.table();
    t.set_header(tr.rules_list_header().to_vec());
    for r in &kb.rules {
        tables.row(
            &mut t,
            vec![
                r.code.clone(),
                r.name.clone(),
                r.category.to_string(),
                format!("{:?}", r.role).to_lowercase(),
                tr.rule_title(r).to_string(),
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
                tr.made_by_the_engine(e.module),
            ],
        );
    }
    format!(
        "{}\n{}\n",
        tables.finish(t),
        tr.rules_count(kb.rules.len(), engine.len())
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
    #[serde(flatten, with = "crate::model::keys::title")]
    pub title: Option<Text>,
    pub category: Category,
    pub action: Action,
    pub role: Option<Role>,
    pub status: Option<RuleStatus>,
    /// The rule file (`builtin:shm_exhausted.toml` or a path).
    pub source: Option<String>,
    #[serde(flatten, with = "crate::model::keys::what")]
    pub what: Text,
    #[serde(flatten, with = "crate::model::keys::why")]
    pub why: Option<Text>,
    #[serde(flatten, with = "crate::model::keys::lookalikes")]
    pub lookalikes: Option<Text>,
    pub signatures: Vec<ExplainSignature>,
    pub conditions: Vec<ExplainCondition>,
    /// Fix texts with their template variables as `{name}`; `fixes_zh` has each one's
    /// Chinese where the rule gives it (`null` where not).
    #[serde(flatten, with = "crate::model::keys::fixes")]
    pub fixes: Vec<Text>,
    /// Each `derive.*` value the fix templates use, with what it computes (in English, as
    /// the source documents it); absent when they use none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub computed: Vec<ExplainComputed>,
    #[serde(flatten, with = "crate::model::keys::next_time")]
    pub next_time: Option<Text>,
    pub references: Vec<String>,
}

/// A computed template value (`{derive.shm_size}`) and what it is.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ExplainComputed {
    pub name: String,
    pub doc: String,
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
                    Text::given(
                        template_text(&f.text.en),
                        f.text.given_zh().map(template_text),
                    )
                })
                .collect(),
            computed: computed_values(r),
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
            what: e.what.owned(),
            why: None,
            lookalikes: None,
            signatures: Vec::new(),
            conditions: Vec::new(),
            fixes: Vec::new(),
            computed: Vec::new(),
            next_time: None,
            references: Vec::new(),
        }
    }
}

/// The `derive.*` values a rule's fix templates use, each once, in order of first use.
fn computed_values(r: &Rule) -> Vec<ExplainComputed> {
    let mut out: Vec<ExplainComputed> = Vec::new();
    for f in &r.fixes {
        for p in &f.text.en.pieces {
            if let Piece::Var { name, .. } = p
                && let Some(doc) = crate::rules::derive::doc(name)
                && !out.iter().any(|c| &c.name == name)
            {
                out.push(ExplainComputed {
                    name: name.clone(),
                    doc: doc.to_string(),
                });
            }
        }
    }
    out
}

/// A template with its variables as `{name}`.
fn template_text(t: &Template) -> String {
    t.pieces
        .iter()
        .map(|p| match p {
            Piece::Text(t) => t.clone(),
            Piece::Var { name, .. } => format!("{{{name}}}"),
        })
        .collect()
}

/// `rules explain` for people, in `lang` where the rule gives its texts in it (English
/// otherwise); codes, names, categories, regexes and fact names stay as they are.
pub fn explain(e: &Explain, lang: Lang) -> String {
    let tr = Tr(lang);
    fn pick(t: &Option<Text>, lang: Lang) -> &str {
        t.as_ref().map_or("", |t| t.get(lang))
    }
    let sep = tr.after_label();
    if e.engine {
        return format!(
            "{} {}\n{}{sep}{}\n{}\n\n## {}\n{}\n",
            e.code,
            e.name,
            tr.explain_category(),
            e.category,
            tr.made_by_the_engine_not_a_file(e.source.as_deref().unwrap_or("src/correlate")),
            tr.explain_what(),
            e.what.get(lang)
        );
    }
    let mut s = format!(
        "{} {} — {}\n{}{sep}{}{}\n{}{sep}{}\n{}{sep}{}\n{}{sep}{}\n\n## {}\n{}\n\n## {}\n{}\n",
        e.code,
        e.name,
        pick(&e.title, lang),
        tr.explain_category(),
        e.category,
        tr.explain_action(e.action),
        tr.explain_role(),
        e.role.map(|r| format!("{r:?}")).unwrap_or_default(),
        tr.explain_status(),
        e.status.map(|s| s.to_string()).unwrap_or_default(),
        tr.explain_source(),
        e.source.clone().unwrap_or_default(),
        tr.explain_what(),
        e.what.get(lang),
        tr.explain_why(),
        pick(&e.why, lang)
    );
    if e.lookalikes.is_some() {
        s.push_str(&format!(
            "\n## {}\n{}\n",
            tr.explain_lookalikes(),
            pick(&e.lookalikes, lang)
        ));
    }
    if !e.signatures.is_empty() {
        s.push_str(&format!("\n## {}\n", tr.explain_signatures()));
        for sig in &e.signatures {
            s.push_str(&format!("  [{:.2}] {}\n", sig.weight, sig.regex));
        }
    }
    if !e.conditions.is_empty() {
        s.push_str(&format!("\n## {}\n", tr.explain_conditions()));
        for c in &e.conditions {
            s.push_str(&format!(
                "  [{:+.2}] {} {} {}{}\n",
                c.weight,
                c.fact,
                c.op,
                c.value.clone().unwrap_or_default(),
                if c.trigger { tr.explain_trigger() } else { "" }
            ));
        }
    }
    s.push_str(&format!("\n## {}\n", tr.fix_heading()));
    for f in &e.fixes {
        s.push_str(&format!("  - {}\n", f.get(lang)));
    }
    for c in &e.computed {
        s.push_str(&format!(
            "    {{{}}}{}{}\n",
            c.name,
            tr.computed_colon(),
            c.doc
        ));
    }
    if e.next_time.is_some() {
        s.push_str(&format!(
            "\n## {}\n{}\n",
            tr.explain_next_time(),
            pick(&e.next_time, lang)
        ));
    }
    if !e.references.is_empty() {
        s.push_str(&format!("\n## {}\n", tr.explain_references()));
        for x in &e.references {
            s.push_str(&format!("  {x}\n"));
        }
    }
    s
}

/// The multi-line entry `rules explain xid-N` prints: the labels and the action in `lang`,
/// NVIDIA's name and the cause word as they are.
pub fn explain_xid(e: &XidEntry, lang: Lang) -> String {
    let tr = Tr(lang);
    let sep = tr.after_label();
    format!(
        "Xid {}: {}\n\n{}{sep}{}{}\n{}{sep}{}\n{}{sep}https://docs.nvidia.com/deploy/xid-errors/index.html\n",
        e.code,
        e.name,
        tr.xid_cause(),
        e.cause,
        if e.follows_other {
            tr.xid_follows_other()
        } else {
            ""
        },
        tr.xid_action(),
        e.action.get(lang),
        tr.xid_reference()
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
        assert!(explain(&e, Lang::En).starts_with(&format!("{} {} — ", r.code, r.name)));
        for f in crate::correlate::ENGINE_FINDINGS {
            let e = Explain::of_engine(f);
            assert!(e.engine && explain(&e, Lang::En).contains("made by the engine"));
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
    fn every_engine_finding_has_a_code_of_its_own() {
        // Two engine findings once shared TW9904: `rules explain TW9904` could show only one.
        let kb = KnowledgeBase::load(&[]).expect("builtin rules");
        let mut seen = std::collections::BTreeSet::new();
        for f in crate::correlate::ENGINE_FINDINGS {
            assert!(seen.insert(f.code), "{} is used twice", f.code);
            assert!(
                kb.find(f.code).is_none(),
                "{} is also a rule's code",
                f.code
            );
        }
    }

    #[test]
    fn computed_values_a_fix_uses_are_explained_once() {
        let kb = KnowledgeBase::load(&[]).expect("builtin rules");
        // The /dev/shm fixes use the computed size twice and its basis once.
        let e = Explain::of_rule(kb.find("TW0101").expect("a rule TW0101"));
        let names: Vec<&str> = e.computed.iter().map(|c| c.name.as_str()).collect();
        assert!(names.contains(&"derive.shm_size_bytes"), "{names:?}");
        assert_eq!(
            names
                .iter()
                .filter(|n| **n == "derive.shm_size_bytes")
                .count(),
            1
        );
        let text = explain(&e, Lang::En);
        let doc = crate::rules::derive::doc("derive.shm_size_bytes").expect("documented");
        assert!(
            text.contains(&format!("{{derive.shm_size_bytes}}: {doc}")),
            "{text}"
        );
        let v = serde_json::to_value(&e).expect("serializable");
        assert_eq!(v["computed"][0]["name"], names[0]);
        // A rule whose fixes use no computed value has no `computed` key.
        let plain = kb
            .rules
            .iter()
            .find(|r| {
                r.fixes.iter().all(|f| {
                    f.text
                        .en
                        .vars()
                        .all(|v| !crate::rules::derive::is_derived(v))
                })
            })
            .expect("a rule without computed values");
        let v = serde_json::to_value(Explain::of_rule(plain)).expect("serializable");
        assert!(v.get("computed").is_none());
    }

    #[test]
    fn group_names_are_removed_for_rg() {
        assert_eq!(
            super::unname_groups(r"a (?P<x>\d+) \(?P<y> (?<z>b)"),
            r"a (?:\d+) \(?P<y> (?:b)"
        );
    }
}
