//! NVIDIA's Xid catalog as data (`data/xid_catalog.toml`, embedded): what a code means, whether
//! it is usually hardware, the driver or the application, and whether it only follows another
//! event. Rules cite it through `derive.xid_explain`; `rules explain xid-79` prints an entry
//! (rendered by `report::rules`). Each action is a `Text`, written in the file in English and
//! Chinese (`action_zh`, required); the names stay NVIDIA's English, the identifiers users
//! search for.

use crate::model::{Text, text};
use serde::Deserialize;
use std::sync::OnceLock;

static CATALOG_TOML: &str = include_str!("../../data/xid_catalog.toml");

#[derive(Debug, Clone, Deserialize)]
#[serde(from = "XidKeys")]
pub struct XidEntry {
    pub code: u32,
    pub name: String,
    pub cause: XidCause,
    /// Only ever follows another Xid or event (45, 154): never a cause by itself.
    pub follows_other: bool,
    /// What the event means and what to do, in both languages, its commands and backticked
    /// spans the same in each.
    pub action: Text,
}

/// An entry as the catalog file writes it: `action` and `action_zh` (both required).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct XidKeys {
    code: u32,
    name: String,
    cause: XidCause,
    #[serde(default)]
    follows_other: bool,
    action: String,
    action_zh: String,
}

impl From<XidKeys> for XidEntry {
    fn from(k: XidKeys) -> XidEntry {
        XidEntry {
            code: k.code,
            name: k.name,
            cause: k.cause,
            follows_other: k.follows_other,
            action: Text::new(k.action, k.action_zh),
        }
    }
}

crate::model::vocabulary! {
    /// What usually causes an Xid.
    XidCause {
        Hardware = "hardware",
        Application = "application",
        Driver = "driver",
        /// Hardware, driver or application.
        Mixed = "mixed",
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CatalogFile {
    xid: Vec<XidEntry>,
}

/// Every entry, sorted by code. Panics only if the embedded file is malformed (a test loads it).
pub fn catalog() -> &'static [XidEntry] {
    static CAT: OnceLock<Vec<XidEntry>> = OnceLock::new();
    CAT.get_or_init(|| {
        let mut f: CatalogFile =
            toml::from_str(CATALOG_TOML).expect("data/xid_catalog.toml parses");
        f.xid.sort_by_key(|e| e.code);
        f.xid
    })
}

pub fn lookup(code: u32) -> Option<&'static XidEntry> {
    catalog().iter().find(|e| e.code == code)
}

/// `xid-79`, `Xid 79`, `xid79` → 79.
pub fn parse_id(s: &str) -> Option<u32> {
    let l = s.trim().to_ascii_lowercase();
    let rest = l.strip_prefix("xid")?;
    rest.trim_start_matches(['-', ' ', '_']).parse().ok()
}

/// One sentence for a report, in both languages: meaning, usual cause, action. The catalog's
/// name stays NVIDIA's English in both.
pub(crate) fn said(e: &XidEntry) -> Text {
    let cause = match e.cause {
        XidCause::Hardware => Text::new("usually hardware", "通常是硬件问题"),
        XidCause::Application => Text::new("usually the application", "通常是应用程序的问题"),
        XidCause::Driver => Text::new("usually the driver", "通常是驱动的问题"),
        XidCause::Mixed => Text::new(
            "hardware, driver or application",
            "可能是硬件、驱动或应用程序",
        ),
    };
    let (code, name) = (e.code, &e.name);
    // The action leads (issue 29: the first sentence is what to do); the catalog's action
    // opens with what the event means, then the step.
    if e.follows_other {
        text!(
            "Xid {code} ({name}; {cause}) only follows another event: look for the Xid before it. {action}",
            "Xid {code}（{name}）：{cause}。它只会跟在别的事件之后出现，先找它前面的那个 Xid。处理建议：{action}";
            cause = cause,
            action = e.action
        )
    } else {
        text!(
            "Xid {code} ({name}; {cause}): {action}",
            "Xid {code}（{name}；{cause}）：{action}";
            cause = cause,
            action = e.action
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_loads_sorted_and_unique() {
        let c = catalog();
        assert!(c.len() > 100);
        for w in c.windows(2) {
            assert!(w[0].code < w[1].code, "duplicate or unsorted {}", w[1].code);
        }
    }

    #[test]
    fn every_action_has_its_chinese_with_the_same_commands() {
        let mut bad = Vec::new();
        for e in catalog() {
            for f in crate::model::chinese_twin_faults(&e.action.en, &e.action.zh) {
                bad.push(format!("xid {}: {f}", e.code));
            }
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    #[test]
    fn an_entry_without_action_zh_is_refused() {
        let entry =
            "[[xid]]\ncode = 1\nname = \"n\"\ncause = \"driver\"\naction = \"Reset the GPU.\"\n";
        let e = toml::from_str::<CatalogFile>(entry)
            .err()
            .expect("action_zh is required");
        assert!(e.to_string().contains("action_zh"), "{e}");
        let with = format!("{entry}action_zh = \"重置 GPU。\"\n");
        assert!(toml::from_str::<CatalogFile>(&with).is_ok());
    }

    #[test]
    fn the_sentence_is_in_the_report_language() {
        let e = lookup(79).unwrap();
        let zh = said(e).get(crate::model::Lang::Zh).to_string();
        assert!(
            zh.contains(&e.action.zh) && !zh.contains(&e.action.en),
            "{zh}"
        );
        assert!(zh.contains(&e.name), "the name stays NVIDIA's: {zh}");
        let en = said(e).get(crate::model::Lang::En).to_string();
        assert!(
            en.contains(&e.action.en) && !en.contains(&e.action.zh),
            "{en}"
        );
    }

    /// Issue 29: the first sentence is the step. The cause ("usually hardware") is said in
    /// the same breath, never as a sentence of its own before the action.
    #[test]
    fn the_action_is_in_the_first_sentence() {
        let e = lookup(79).unwrap();
        let en = said(e).get(crate::model::Lang::En).to_string();
        let first = en.split(". ").next().unwrap();
        assert!(first.contains("drain the node"), "{en}");
        assert!(first.contains("usually hardware"), "{en}");
    }

    #[test]
    fn well_known_codes() {
        assert_eq!(lookup(79).unwrap().cause, XidCause::Hardware);
        assert_eq!(lookup(31).unwrap().cause, XidCause::Application);
        assert!(lookup(45).unwrap().follows_other);
        assert!(lookup(154).unwrap().follows_other);
        assert_eq!(parse_id("xid-79"), Some(79));
        assert_eq!(parse_id("Xid 48"), Some(48));
        assert_eq!(parse_id("TW0701"), None);
    }
}
