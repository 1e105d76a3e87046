//! The outputs for people beyond the analyze report, in Chinese: `diff` (and the diff section
//! of `analyze --baseline`), `rules list` / `rules explain`, the CLI's own messages, and the
//! triage, history and timeline tables. Run on the real pairs of fixtures/pairs and the
//! built-in rules; the Chinese must replace the English headings while the values read from
//! the inputs (sizes, paths, setting names) stay as they are, and JSON stays the same in both
//! languages.

mod clean_env;
use clean_env::{ZH, tw};

use std::process::Command;

fn root() -> &'static str {
    env!("CARGO_MANIFEST_DIR")
}

const GOOD: &str = "fixtures/pairs/shm_size/good";
const BAD: &str = "fixtures/pairs/shm_size/bad";

fn diff(env: &[(&str, &str)], extra: &[&str]) -> String {
    let mut args = vec!["diff", GOOD, BAD];
    args.extend_from_slice(extra);
    let (code, out, err) = tw(env, &args);
    assert_eq!(code, 0, "{err}");
    out
}

#[test]
fn diff_in_chinese_names_the_culprit_and_keeps_the_values() {
    let zh = diff(&[], &["--lang", "zh"]);
    let first = zh.lines().next().unwrap_or_default();
    assert!(first.starts_with("正常运行："), "{zh}");
    assert!(zh.contains("\n失败运行："), "{zh}");
    // The headline: the culprit in Chinese, both sizes as the runs tell them.
    let headline = zh
        .lines()
        .find(|l| l.starts_with("最可能的原因："))
        .unwrap_or_else(|| panic!("no Chinese headline in:\n{zh}"));
    for kept in ["/dev/shm 大小", "64 MiB", "128 GiB", "shm_exhausted"] {
        assert!(
            headline.contains(kept),
            "{kept:?} missing from {headline:?}"
        );
    }
    // The table's heading and the row's label in Chinese; values, categories and the cited
    // file unchanged.
    assert!(zh.contains("项目") && zh.contains("可解释"), "{zh}");
    let row = zh
        .lines()
        .find(|l| l.starts_with("/dev/shm 大小"))
        .unwrap_or_else(|| panic!("no /dev/shm row in:\n{zh}"));
    for kept in ["128 GiB", "64 MiB", "shm_exhausted"] {
        assert!(row.contains(kept), "{kept:?} missing from {row:?}");
    }
    assert!(zh.contains("snapshot_after/df-B1_dev_shm.txt:2"), "{zh}");
    for english in ["Likely culprit", "can explain", "good run", "/dev/shm size"] {
        assert!(!zh.contains(english), "{english:?} left in:\n{zh}");
    }
}

#[test]
fn diff_in_english_is_what_it_was() {
    // A Chinese locale, overridden by --lang en.
    let en = diff(ZH, &["--lang", "en"]);
    assert!(
        en.starts_with("good: fixtures/pairs/shm_size/good ("),
        "{en}"
    );
    assert!(en.contains("\nbad : fixtures/pairs/shm_size/bad ("), "{en}");
    assert!(
        en.contains("Likely culprit: /dev/shm size 64 MiB here vs 128 GiB in the good run"),
        "{en}"
    );
    assert!(en.contains("what  ") && en.contains("can explain"), "{en}");
    assert!(!en.contains("最可能"), "{en}");
}

#[test]
fn diff_markdown_in_chinese_is_pinned() {
    let md = diff(ZH, &["--format", "markdown"]);
    assert!(md.starts_with("### 与正常运行相比的变化\n"), "{md}");
    insta::assert_snapshot!(md);
}

#[test]
fn diff_json_is_the_same_in_both_languages_and_carries_the_chinese_beside() {
    let en = diff(&[], &["--format", "json", "--lang", "en"]);
    let zh = diff(ZH, &["--format", "json"]);
    assert_eq!(en, zh, "diff JSON differs between languages");
    let v: serde_json::Value = serde_json::from_str(&en).expect("JSON");
    assert!(
        v["headline"]
            .as_str()
            .is_some_and(|h| h.starts_with("Likely culprit: "))
    );
    assert!(
        v["headline_zh"]
            .as_str()
            .is_some_and(|h| h.starts_with("最可能的原因："))
    );
    let first = &v["differences"][0];
    assert_eq!(first["what"], "/dev/shm size");
    assert_eq!(first["what_zh"], "/dev/shm 大小");
}

#[test]
fn analyze_with_a_baseline_puts_the_chinese_diff_after_the_report() {
    let (code, out, err) = tw(
        ZH,
        &["analyze", BAD, "--baseline", GOOD, "--color", "never"],
    );
    assert_eq!(code, 0, "{err}");
    let at = out
        .find("与正常运行相比的变化")
        .unwrap_or_else(|| panic!("no Chinese diff section in:\n{out}"));
    assert!(out[at..].contains("最可能的原因："), "{out}");
    assert!(!out.contains("What changed since the good run"), "{out}");
}

#[test]
fn rules_list_in_chinese_shows_the_chinese_titles_one_line_per_rule() {
    let kb = trainwreck::rules::KnowledgeBase::load(&[]).expect("built-in rules");
    let r = kb.find("TW0104").expect("TW0104");
    let title_zh = r.title.zh().expect("TW0104 has a Chinese title");
    // Piped: plain rows, so `rules list | grep` gives the rule's whole line.
    let (code, out, err) = tw(&[], &["rules", "list", "--lang", "zh"]);
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("TW0104 "))
        .unwrap_or_else(|| panic!("no TW0104 row in:\n{out}"));
    assert!(line.contains(title_zh), "{line}");
    assert!(line.contains("ucx-bus-error") && line.contains("shm_exhausted"));
    assert!(out.starts_with("代码"), "{out}");
    assert!(!out.contains('│'), "piped rows are plain: {out}");
    let (_, en, _) = tw(&[], &["rules", "list"]);
    assert!(en.contains(&r.title.en) && !en.contains(title_zh));
}

#[test]
fn rules_explain_in_chinese_shows_the_chinese_fix() {
    let kb = trainwreck::rules::KnowledgeBase::load(&[]).expect("built-in rules");
    let r = kb.find("TW0104").expect("TW0104");
    let fix_zh = r.fixes[0].text.given_zh().expect("a Chinese fix");
    // The fix as explain shows it: template variables as `{name}`.
    let fix_zh: String = fix_zh
        .pieces
        .iter()
        .map(|p| match p {
            trainwreck::rules::template::Piece::Text(t) => t.clone(),
            trainwreck::rules::template::Piece::Var { name, .. } => format!("{{{name}}}"),
        })
        .collect();
    let (code, out, err) = tw(ZH, &["rules", "explain", "TW0104"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&fix_zh), "{fix_zh:?} missing from:\n{out}");
    assert!(out.contains("## 修复建议"), "{out}");
    // The regexes as they are.
    assert!(out.contains(&r.signatures[0].source), "{out}");
    assert!(!out.contains("## Fix"), "{out}");
    // Its documentation in Chinese, not in English.
    let what_zh = r.doc_what.zh().expect("TW0104 documents itself in Chinese");
    let why_zh = r.doc_why.zh().expect("and why in Chinese");
    assert!(out.contains(what_zh) && out.contains(why_zh), "{out}");
    assert!(!out.contains(&r.doc_why.en), "{out}");
    // An engine-made finding's description too.
    let engine = trainwreck::correlate::ENGINE_FINDINGS
        .iter()
        .find(|e| e.code == "TW9902")
        .expect("TW9902 is made by the engine");
    let (_, out, _) = tw(ZH, &["rules", "explain", "TW9902"]);
    assert!(
        out.contains(engine.what.zh) && !out.contains(engine.what.en),
        "{out}"
    );
}

#[test]
fn a_missing_path_is_said_in_the_locales_language() {
    let missing = "fixtures/no-such-run-i18n";
    let (code, out, err) = tw(ZH, &["analyze", missing]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains(&format!("trainwreck：{missing}：文件或目录不存在")),
        "{err}"
    );
    let (code, _, err) = tw(ZH, &["diff", missing, "fixtures/pairs/shm_size/bad"]);
    assert_eq!(code, 2);
    assert!(err.contains("文件或目录不存在"), "{err}");
    // No Chinese locale: English, as before.
    let (code, _, err) = tw(&[], &["analyze", missing]);
    assert_eq!(code, 2);
    assert!(
        err.contains(&format!("trainwreck: {missing}: no such file or directory")),
        "{err}"
    );
}

#[test]
fn an_unknown_rule_is_said_in_chinese_with_what_to_do() {
    let (code, _, err) = tw(ZH, &["rules", "explain", "TW0000-no-such"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("trainwreck：没有代码或名称为 \"TW0000-no-such\" 的规则"),
        "{err}"
    );
    assert!(err.contains("`trainwreck rules list`"), "{err}");
}

#[test]
fn triage_in_chinese_keeps_the_groups_and_translates_the_headings() {
    let (code, zh, err) = tw(ZH, &["triage", "fixtures/pairs"]);
    assert_eq!(code, 0, "{err}");
    let (_, en, _) = tw(&[], &["triage", "fixtures/pairs"]);
    assert!(zh.starts_with("运行数"), "{zh}");
    assert!(en.starts_with("runs"), "{en}");
    // The same groups, fingerprints and categories in both.
    let fps = |s: &str| -> Vec<String> {
        s.split_whitespace()
            .filter(|w| w.starts_with("fp2:"))
            .map(String::from)
            .collect()
    };
    assert!(!fps(&en).is_empty(), "{en}");
    assert_eq!(fps(&zh), fps(&en));
    assert!(zh.contains("shm_exhausted") && zh.contains("fixtures/pairs/shm_size/bad"));
    let totals = en.lines().last().unwrap_or_default();
    let (runs, groups) = totals
        .split_once(" runs, ")
        .unwrap_or_else(|| panic!("totals line: {totals:?}"));
    let groups = groups.trim_end_matches(" groups");
    assert!(
        zh.contains(&format!("{runs} 次运行，{groups} 组")),
        "{totals:?} vs\n{zh}"
    );
    let (code, md, _) = tw(ZH, &["triage", "fixtures/pairs", "--format", "markdown"]);
    assert_eq!(code, 0);
    assert!(md.starts_with("## trainwreck 分诊："), "{md}");
    // Each group's title is its rule's Chinese title (JSON carries both).
    let (_, j, _) = tw(&[], &["triage", "fixtures/pairs", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    let titled: Vec<_> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["title_zh"].is_string())
        .collect();
    assert!(!titled.is_empty(), "{j}");
    for g in titled {
        let (en, zh) = (
            g["title"].as_str().unwrap(),
            g["title_zh"].as_str().unwrap(),
        );
        assert!(md.contains(&format!("\n\n{zh}\n")), "{zh} not in\n{md}");
        assert!(!md.contains(en), "{en} in\n{md}");
    }
}

#[test]
fn the_timeline_in_chinese_says_what_the_launcher_logged_with_its_numbers() {
    let run = "fixtures/corpus/04_nccl_collective_timeout";
    let (code, zh, err) = tw(ZH, &["analyze", run, "--timeline", "--color", "never"]);
    assert_eq!(code, 0, "{err}");
    let (_, en, _) = tw(&[], &["analyze", run, "--timeline", "--color", "never"]);
    let en_tl = en
        .split("\nTimeline (")
        .nth(1)
        .unwrap_or_else(|| panic!("no timeline in:\n{en}"));
    let zh_tl = zh
        .split("\n时间线（")
        .nth(1)
        .unwrap_or_else(|| panic!("no Chinese timeline in:\n{zh}"));
    // Each watchdog row in English has its Chinese row with the same collective and op.
    let watchdog: Vec<&str> = en_tl
        .lines()
        .filter_map(|l| l.split("collective #").nth(1))
        .filter_map(|r| r.split(" timed out").next())
        .collect();
    assert!(!watchdog.is_empty(), "{en_tl}");
    for w in watchdog {
        assert!(
            zh_tl.contains(&format!("集合通信 #{w} 超时")),
            "{w:?} missing from:\n{zh_tl}"
        );
    }
    // (Matched lines are the logs' own, English where the logs are.)
    assert!(!zh_tl.contains("last line") && !zh_tl.contains("where the failure started"));
    // The same number of rows, in the same order of times.
    let times = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.contains("2026-"))
            .map(|l| l.chars().take(27).collect())
            .collect()
    };
    assert_eq!(times(zh_tl), times(en_tl));
}

#[test]
fn history_list_in_chinese_has_chinese_headings_and_the_same_fingerprints() {
    let dir = std::env::temp_dir().join(format!("tw-i18n-history-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("h.sqlite").display().to_string();
    let mut titles = Vec::new();
    for p in ["shm_size", "batch_size"] {
        let bad = format!("fixtures/pairs/{p}/bad");
        let (code, _, err) = tw(&[], &["analyze", &bad, "--record", "--db", &db]);
        assert_eq!(code, 0, "{err}");
        let (_, json, _) = tw(&[], &["analyze", &bad, "--format", "json"]);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let t = |k: &str| -> String {
            v["findings"][0][k]
                .as_str()
                .unwrap()
                .chars()
                .take(12)
                .collect()
        };
        titles.push((t("title"), t("title_zh")));
    }
    let (code, zh, err) = tw(ZH, &["history", "--db", &db, "list"]);
    assert_eq!(code, 0, "{err}");
    let (_, en, _) = tw(&[], &["history", "--db", &db, "list"]);
    assert!(zh.contains("指纹") && zh.contains("首次出现"), "{zh}");
    assert!(en.contains("fingerprint") && !en.contains("指纹"), "{en}");
    // Each failure's title in the report's language (the Chinese one from the stored report).
    for (title, title_zh) in &titles {
        assert!(
            zh.contains(title_zh.as_str()) && !zh.contains(title.as_str()),
            "{zh}"
        );
        assert!(
            en.contains(title.as_str()) && !en.contains(title_zh.as_str()),
            "{en}"
        );
    }
    let fps = |s: &str| -> Vec<String> {
        s.split_whitespace()
            .filter(|w| w.starts_with("fp2:"))
            .map(String::from)
            .collect()
    };
    assert_eq!(fps(&zh).len(), 2, "{zh}");
    assert_eq!(fps(&zh), fps(&en));
    let (code, hosts, err) = tw(ZH, &["history", "--db", &db, "hosts"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        hosts.contains("次运行；") && hosts.contains("作业数"),
        "{hosts}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The warnings of a diff's sides come in both languages, one for one, each with its side and
/// with the path and the OS error unchanged; the JSON is the same in both languages, and the
/// terminal's count line follows the language.
#[test]
fn a_diff_warning_is_said_in_chinese_with_its_side() {
    let d = tempfile::tempdir().unwrap();
    let bad = d.path().join("bad");
    let src = format!("{}/fixtures/pairs/shm_size/bad", root());
    let out = Command::new("cp")
        .args(["-r", &src, bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    std::os::unix::fs::symlink(bad.join("gone.log"), bad.join("dangling.log")).unwrap();
    let good = format!("{}/fixtures/pairs/shm_size/good", root());
    let bad = bad.to_str().unwrap();
    let (_, j_zh, _) = tw(
        &[],
        &["diff", &good, bad, "--format", "json", "--lang", "zh"],
    );
    let (code, j_en, err) = tw(
        &[],
        &["diff", &good, bad, "--format", "json", "--lang", "en"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(j_zh, j_en);
    let v: serde_json::Value = serde_json::from_str(&j_en).unwrap();
    let (en, zh) = (
        v["warnings"].as_array().unwrap(),
        v["warnings_zh"].as_array().unwrap(),
    );
    assert_eq!(en.len(), zh.len(), "{en:?} {zh:?}");
    let at = en
        .iter()
        .position(|w| w == "bad: dangling.log: cannot read: No such file or directory (os error 2)")
        .unwrap_or_else(|| panic!("{en:?}"));
    assert_eq!(
        zh[at],
        "失败运行：dangling.log: 无法读取：No such file or directory (os error 2)"
    );
    assert!(
        zh.iter()
            .all(|w| w.as_str().unwrap().starts_with("正常运行：")
                || w.as_str().unwrap().starts_with("失败运行：")),
        "{zh:?}"
    );
    // The dangling link is the only warning (snapshots no longer warn of lines seen before
    // the run), so the text says it whole, with its side, rather than a count.
    assert_eq!(en.len(), 1, "{en:?}");
    let (_, text, _) = tw(&[], &["diff", &good, bad, "--lang", "zh"]);
    assert!(
        text.contains("警告：失败运行：dangling.log: 无法读取：No such file or directory"),
        "{text}"
    );
}

fn has_cjk(s: &str) -> bool {
    s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
}

/// NVIDIA's Xid entry: the action in the report's language, the name in NVIDIA's English in
/// both (users search for it).
#[test]
fn rules_explain_xid_gives_the_action_in_the_report_language() {
    let e = trainwreck::rules::xid::lookup(79).expect("Xid 79 in the catalog");
    let (code, zh, err) = tw(&[], &["rules", "explain", "xid-79", "--lang", "zh"]);
    assert_eq!(code, 0, "{err}");
    assert!(zh.contains(&format!("处理方式：{}", e.action.zh)), "{zh}");
    assert!(!zh.contains(&e.action.en), "English action left in:\n{zh}");
    assert!(zh.contains(&e.name), "{zh}");
    // A Chinese locale, overridden by --lang en.
    let (code, en, err) = tw(ZH, &["rules", "explain", "xid-79", "--lang", "en"]);
    assert_eq!(code, 0, "{err}");
    assert!(en.contains(&format!("action: {}", e.action.en)), "{en}");
    assert!(!has_cjk(&en), "Chinese in the English entry:\n{en}");
}

/// `facts --catalog`: names and units as they are, the descriptions in the report's language.
#[test]
fn the_fact_catalog_is_described_in_the_report_language() {
    let (code, zh, err) = tw(ZH, &["facts", "--catalog"]);
    assert_eq!(code, 0, "{err}");
    let (code, en, err) = tw(ZH, &["facts", "--catalog", "--lang", "en"]);
    assert_eq!(code, 0, "{err}");
    let catalog = trainwreck::facts::CATALOG;
    assert_eq!(zh.lines().count(), catalog.len(), "{zh}");
    assert_eq!(en.lines().count(), catalog.len(), "{en}");
    let line = |out: &str, name: &str| -> String {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} line in:\n{out}"))
            .to_string()
    };
    let shm = line(&zh, "shm.size_bytes");
    assert!(
        shm.contains("Bytes") && shm.contains("/dev/shm 挂载点的大小（df 快照）"),
        "{shm}"
    );
    assert!(!shm.contains("size of the /dev/shm mount"), "{shm}");
    for spec in catalog {
        let (z, e) = (line(&zh, spec.name), line(&en, spec.name));
        assert!(
            z.ends_with(spec.doc.zh) && e.ends_with(spec.doc.en),
            "{z}\n{e}"
        );
    }
    assert!(!has_cjk(&en), "Chinese in the English catalog:\n{en}");
    // The facts as JSON carry no description: the same bytes in both languages.
    let seed = "fixtures/seed-bus-error";
    let (_, j_zh, _) = tw(ZH, &["facts", seed, "--format", "json"]);
    let (code, j_en, err) = tw(&[], &["facts", seed, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    assert!(j_en.contains("shm.size_bytes"), "{j_en}");
    assert_eq!(j_zh, j_en);
}
