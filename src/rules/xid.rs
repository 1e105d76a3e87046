//! NVIDIA's Xid catalog as data (`data/xid_catalog.toml`, embedded): what a code means, whether
//! it is usually hardware, the driver or the application, and whether it only follows another
//! event. Rules cite it through `derive.xid_explain`; `rules explain xid-79` prints an entry
//! (rendered by `report::rules`). Each action is written in English and Chinese
//! (`action_zh`, required); the names stay NVIDIA's English, the identifiers users search for.

use serde::Deserialize;
use std::sync::OnceLock;

static CATALOG_TOML: &str = include_str!("../../data/xid_catalog.toml");

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XidEntry {
    pub code: u32,
    pub name: String,
    pub cause: XidCause,
    /// Only ever follows another Xid or event (45, 154): never a cause by itself.
    #[serde(default)]
    pub follows_other: bool,
    pub action: String,
    /// `action` in Chinese, with its commands and backticked spans unchanged.
    pub action_zh: String,
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

/// One sentence for a report: meaning, usual cause, action, in `lang`. The catalog's name
/// stays NVIDIA's English in both languages.
pub fn sentence(e: &XidEntry, lang: crate::model::Lang) -> String {
    let zh = lang == crate::model::Lang::Zh;
    let cause = match (e.cause, zh) {
        (XidCause::Hardware, false) => "usually hardware",
        (XidCause::Application, false) => "usually the application",
        (XidCause::Driver, false) => "usually the driver",
        (XidCause::Mixed, false) => "hardware, driver or application",
        (XidCause::Hardware, true) => "通常是硬件问题",
        (XidCause::Application, true) => "通常是应用程序的问题",
        (XidCause::Driver, true) => "通常是驱动的问题",
        (XidCause::Mixed, true) => "可能是硬件、驱动或应用程序",
    };
    // The action leads (issue 29: the first sentence is what to do); the catalog's action
    // opens with what the event means, then the step.
    match (e.follows_other, zh) {
        (false, false) => format!("Xid {} ({}; {cause}): {}", e.code, e.name, e.action),
        (true, false) => format!(
            "Xid {} ({}; {cause}) only follows another event: look for the Xid before it. {}",
            e.code, e.name, e.action
        ),
        (false, true) => format!("Xid {}（{}；{cause}）：{}", e.code, e.name, e.action_zh),
        (true, true) => format!(
            "Xid {}（{}）：{cause}。它只会跟在别的事件之后出现，先找它前面的那个 Xid。处理建议：{}",
            e.code, e.name, e.action_zh
        ),
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
            for f in crate::model::chinese_twin_faults(&e.action, &e.action_zh) {
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
        let zh = sentence(e, crate::model::Lang::Zh);
        assert!(zh.contains(&e.action_zh) && !zh.contains(&e.action), "{zh}");
        assert!(zh.contains(&e.name), "the name stays NVIDIA's: {zh}");
        let en = sentence(e, crate::model::Lang::En);
        assert!(en.contains(&e.action) && !en.contains(&e.action_zh), "{en}");
    }

    /// Issue 29: the first sentence is the step. The cause ("usually hardware") is said in
    /// the same breath, never as a sentence of its own before the action.
    #[test]
    fn the_action_is_in_the_first_sentence() {
        let e = lookup(79).unwrap();
        let en = sentence(e, crate::model::Lang::En);
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
