//! Reports in Chinese (`--lang`, LANG=zh_CN.UTF-8) and the rule files' Chinese texts: the
//! seed story pinned in Chinese, `--lang en` winning over the locale, JSON the same in both
//! languages, and `rules test` holding built-in rules to their Chinese title and fix.

mod clean_env;
use clean_env::{ZH, tw};

fn seed() -> String {
    format!("{}/fixtures/seed-bus-error", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn seed_story_terminal_report_in_chinese_is_pinned() {
    let (code, out, err) = tw(ZH, &["analyze", &seed(), "--color", "never"]);
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!(out);
}

#[test]
fn seed_story_markdown_in_chinese_is_pinned() {
    let (code, out, err) = tw(ZH, &["analyze", &seed(), "--format", "markdown"]);
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!(out);
}

#[test]
fn chinese_report_keeps_evidence_commands_and_numbers_as_they_are() {
    let (_, zh, _) = tw(ZH, &["analyze", &seed(), "--color", "never"]);
    for kept in [
        "train.log:27  [c0a8f1e2d4b5:2383 :0:2419] Caught signal 7 (Bus error: nonexistent physical address)",
        "snapshots/df-h_dev_shm.txt:2  shm              64M   64M     0 100% /dev/shm",
        "`docker run --shm-size=8g …`",
        "`sizeLimit: 8Gi`",
        "shm_exhausted",
        "TW0104 ucx-bus-error",
    ] {
        assert!(zh.contains(kept), "{kept:?} missing from:\n{zh}");
    }
    for translated in [
        "原因",
        "证据",
        "修复建议",
        "给容器更大的 /dev/shm",
        "64 MiB",
    ] {
        assert!(
            zh.contains(translated),
            "{translated:?} missing from:\n{zh}"
        );
    }
    assert!(
        !zh.contains("Evidence") && !zh.contains("Give the container"),
        "{zh}"
    );
}

#[test]
fn a_contradicted_finding_says_what_else_fits_and_what_to_collect_in_chinese() {
    let large = format!(
        "{}/fixtures/seed-bus-error-large-shm",
        env!("CARGO_MANIFEST_DIR")
    );
    let (_, zh, _) = tw(ZH, &["analyze", &large, "--color", "never"]);
    for said in [
        "反面证据",
        "✗ /dev/shm 有 64 GiB，不是容器默认的小尺寸",
        "其他可能：/dev/shm 很大且空着",
        "下次如何确认",
        "/dev/shm 很大而且没满",
    ] {
        assert!(zh.contains(said), "{said:?} missing from:\n{zh}");
    }
    assert!(
        !zh.contains("points elsewhere") && !zh.contains("What else fits"),
        "{zh}"
    );
}

#[test]
fn lang_en_wins_over_a_chinese_locale_and_json_is_the_same_in_both() {
    let (_, en, _) = tw(
        ZH,
        &["analyze", &seed(), "--color", "never", "--lang", "en"],
    );
    let (_, plain, _) = tw(&[], &["analyze", &seed(), "--color", "never"]);
    assert_eq!(
        en, plain,
        "--lang en under LANG=zh_CN is the English report"
    );
    assert!(
        en.contains("Cause: shm_exhausted") && en.contains("\nEvidence\n"),
        "{en}"
    );
    // --lang zh without any locale gives the Chinese one.
    let (_, zh, _) = tw(
        &[],
        &["analyze", &seed(), "--color", "never", "--lang", "zh"],
    );
    let (_, zh_env, _) = tw(ZH, &["analyze", &seed(), "--color", "never"]);
    assert_eq!(zh, zh_env);

    let (_, json_zh, _) = tw(ZH, &["analyze", &seed(), "--format", "json"]);
    let (_, json_en, _) = tw(
        &[],
        &["analyze", &seed(), "--format", "json", "--lang", "en"],
    );
    assert_eq!(json_zh, json_en, "JSON does not depend on the language");
    // The Chinese texts are additions beside the English keys; removing them gives the
    // English-only report.
    let mut v: serde_json::Value = serde_json::from_str(&json_zh).unwrap();
    let top = &v["findings"][0];
    assert!(
        top["title_zh"]
            .as_str()
            .is_some_and(|t| t.contains("SIGBUS")),
        "{top}"
    );
    assert!(
        top["fix_zh"]
            .as_str()
            .is_some_and(|t| t.contains("--shm-size=8g")),
        "{top}"
    );
    assert!(
        top["title"]
            .as_str()
            .is_some_and(|t| t.starts_with("A process caught SIGBUS"))
    );
    strip_zh(&mut v);
    let s = v.to_string();
    assert!(!s.contains("_zh\""), "{s}");
    assert!(
        !s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)),
        "{s}"
    );
}

fn strip_zh(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            m.retain(|k, _| !k.ends_with("_zh"));
            m.values_mut().for_each(strip_zh);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip_zh),
        _ => {}
    }
}

fn kb_of(origin: &str, text: &str) -> trainwreck::rules::KnowledgeBase {
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    trainwreck::rules::load_text(origin, text, &mut rules, &mut errors);
    assert!(errors.is_empty(), "{errors:?}");
    trainwreck::rules::KnowledgeBase::from_rules(rules)
}

const RULE: &str = r#"
[[rule]]
code = "CODE"
name = "test-widget-failed"
category = "other"
role = "root"
title = "The widget failed"
TITLE_ZH
[rule.doc]
what = "w"
why = "w"
DOC_ZH
[[rule.signature]]
regex = 'widget (?P<part>\w+) failed'
weight = 0.8
[[rule.fix]]
text = "Replace the {part} part."
FIX_ZH
[rule.examples]
fire = ["widget gear failed"]
silent = ["widget gear ok"]
"#;

/// The rule with its Chinese lines (its documentation's with the title's); built-in codes
/// start with TW, a user's never do.
fn rule(builtin: bool, title_zh: &str, fix_zh: &str) -> String {
    let doc_zh = if title_zh.is_empty() {
        ""
    } else {
        "what_zh = \"小部件\"\nwhy_zh = \"磨损\""
    };
    RULE.replace("CODE", if builtin { "TW8001" } else { "ACME001" })
        .replace("TITLE_ZH", title_zh)
        .replace("FIX_ZH", fix_zh)
        .replace("DOC_ZH", doc_zh)
}

#[test]
fn rules_test_fails_a_builtin_rule_without_its_chinese_texts_and_spares_a_user_rule() {
    let fails = trainwreck::kbtest::test_examples(&kb_of("builtin:test.toml", &rule(true, "", "")));
    assert!(
        fails.iter().any(|f| f.en.contains("no `title_zh`")),
        "{fails:?}"
    );
    assert!(
        fails.iter().any(|f| f.en.contains("no `fix[0].text_zh`")),
        "{fails:?}"
    );
    for doc in ["no `doc.what_zh`", "no `doc.why_zh`"] {
        assert!(fails.iter().any(|f| f.en.contains(doc)), "{doc}: {fails:?}");
    }
    let user = rule(false, "", "");
    let fails = trainwreck::kbtest::test_examples(&kb_of("/user/rules/test.toml", &user));
    assert!(fails.is_empty(), "a user rule may omit them: {fails:?}");
    let full = rule(
        true,
        "title_zh = \"小部件坏了\"",
        "text_zh = \"更换 {part} 部件。\"",
    );
    let fails = trainwreck::kbtest::test_examples(&kb_of("builtin:test.toml", &full));
    assert!(fails.is_empty(), "{fails:?}");
}

#[test]
fn a_chinese_fix_must_use_the_english_fixs_variables() {
    let wrong = rule(
        false,
        "title_zh = \"小部件坏了\"",
        "text_zh = \"更换部件。\"",
    );
    let fails = trainwreck::kbtest::test_examples(&kb_of("/user/rules/test.toml", &wrong));
    assert!(
        fails
            .iter()
            .any(|f| f.en.contains("fix[0].text_zh") && f.en.contains("part")),
        "{fails:?}"
    );
}

#[test]
fn a_user_rule_without_chinese_falls_back_to_english_in_a_chinese_report() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("widget.toml"), rule(false, "", "")).unwrap();
    let log = d.path().join("run.log");
    std::fs::write(&log, "step 3\nwidget gear failed\n").unwrap();
    let (code, out, err) = tw(
        ZH,
        &[
            "analyze",
            log.to_str().unwrap(),
            "--rules",
            d.path().to_str().unwrap(),
            "--color",
            "never",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("原因：other — The widget failed") && out.contains("Replace the gear part."),
        "{out}"
    );
}

#[test]
fn builtin_rules_pass_their_chinese_checks() {
    let kb = trainwreck::rules::KnowledgeBase::load(&[]).unwrap();
    let fails: Vec<String> = trainwreck::kbtest::test_examples(&kb)
        .into_iter()
        .map(|f| f.en)
        .filter(|f| f.contains("_zh"))
        .collect();
    assert!(fails.is_empty(), "{fails:#?}");
    // The Chinese fix of a computed plan carries the same numbers as the English one.
    let oom = format!(
        "{}/fixtures/corpus/03a_cuda_oom_python",
        env!("CARGO_MANIFEST_DIR")
    );
    let r = trainwreck::diagnose(&kb, &[oom], 2);
    let top = r.top().expect("the OOM");
    let zh = top.fix.zh().expect("a Chinese fix");
    for n in [
        "140.5 GiB",
        "139.8 GiB",
        "138.5 GiB",
        "2 GiB",
        "11%",
        "0.90",
    ] {
        assert!(
            top.fix.en.contains(n) && zh.contains(n),
            "{n}: {} / {zh}",
            top.fix.en
        );
    }
}

#[test]
fn rules_test_reports_in_the_users_language_and_keeps_fail_for_scripts() {
    let d = tempfile::tempdir().unwrap();
    let wrong = rule(
        false,
        "title_zh = \"小部件坏了\"",
        "text_zh = \"更换部件。\"",
    );
    std::fs::write(d.path().join("widget.toml"), wrong).unwrap();
    let dir = d.path().to_str().unwrap();
    let (code, out, err) = tw(ZH, &["rules", "test", "--rules", dir]);
    assert_eq!(code, 1, "{out}{err}");
    let fail = err
        .lines()
        .find(|l| l.contains("fix[0].text_zh"))
        .unwrap_or("");
    assert!(
        fail.starts_with("FAIL ")
            && fail.contains("用的变量是")
            && !fail.contains("uses the variables"),
        "{err}"
    );
    assert!(out.contains("失败 1 个"), "{out}");
    let (code, out, err) = tw(ZH, &["rules", "test", "--rules", dir, "--lang", "en"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("uses the variables") && !err.contains("用的变量是"),
        "{err}"
    );
    assert!(out.contains(", 1 failed"), "{out}");
}
