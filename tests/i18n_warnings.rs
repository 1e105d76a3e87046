//! Warnings in the report's language: a run with real bad inputs made at test time (a dangling
//! link, a .gz cut in half, a core from the fixtures cut short, a tar cut inside a member) read
//! with `--lang zh` and `--lang en`. Each warning line is the Chinese sentence in a Chinese
//! report and the English one in an English report, with the paths, numbers and OS error
//! texts unchanged in both; the JSON is byte-identical across languages and carries
//! `message_zh`; rule-directory warnings follow the language too.

mod clean_env;
use clean_env::tw;

use std::io::{Read, Write};
use std::path::Path;

const BUS: &str = "RuntimeError: DataLoader worker (pid 4232) is killed by signal: Bus error.\n";

fn has_cjk(s: &str) -> bool {
    s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
}

/// A run directory of bad inputs; returns the size of the whole core (what the cut one lacks).
fn bad_run(dir: &Path) -> u64 {
    std::fs::write(dir.join("train.log"), BUS).unwrap();
    std::os::unix::fs::symlink(dir.join("gone.log"), dir.join("dangling.log")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    for i in 0..2000 {
        writeln!(gz, "step {i} loss 2.0 some ordinary training line").unwrap();
    }
    let gz = gz.finish().unwrap();
    std::fs::write(dir.join("cut.log.gz"), &gz[..gz.len() / 2]).unwrap();
    let fixture = format!(
        "{}/fixtures/cores/bus-static.core.gz",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut core = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(fixture).unwrap())
        .read_to_end(&mut core)
        .unwrap();
    assert!(core.len() > 20_000, "the fixture core is whole");
    std::fs::write(dir.join("cut.core"), &core[..20_000]).unwrap();
    let mut tar = tar::Builder::new(Vec::new());
    for r in 0..2 {
        let body: String = (0..3000)
            .map(|i| format!("line {i} of rank{r}\n"))
            .collect();
        let mut h = tar::Header::new_gnu();
        h.set_size(body.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        tar.append_data(&mut h, format!("m/rank{r}.log"), body.as_bytes())
            .unwrap();
    }
    let tar = tar.into_inner().unwrap();
    std::fs::write(dir.join("cut.tar"), &tar[..40_000]).unwrap();
    core.len() as u64
}

/// The terminal report's warning lines (after its label), in order.
fn warning_lines<'a>(out: &'a str, label: &str) -> Vec<&'a str> {
    out.lines()
        .filter_map(|l| l.trim_start().strip_prefix(label))
        .collect()
}

#[test]
fn warnings_are_in_the_report_language_with_input_values_unchanged() {
    let d = tempfile::tempdir().unwrap();
    let core_len = bad_run(d.path());
    let run = d.path().display().to_string();
    let (code_zh, zh, err) = tw(&[], &["analyze", &run, "--lang", "zh", "--color", "never"]);
    assert_eq!(code_zh, 0, "{err}");
    let (code_en, en, err) = tw(&[], &["analyze", &run, "--lang", "en", "--color", "never"]);
    assert_eq!(code_en, 0, "{err}");

    let zh_lines = warning_lines(&zh, "警告：");
    let en_lines = warning_lines(&en, "warning: ");
    assert_eq!(zh_lines.len(), en_lines.len(), "{zh}\n{en}");
    assert!(zh_lines.len() >= 4, "{zh}");
    for l in &zh_lines {
        assert!(has_cjk(l), "a Chinese warning line: {l}");
    }
    for l in &en_lines {
        assert!(!has_cjk(l), "an English warning line: {l}");
    }
    // (path and start of the Chinese message, start of the English one) for each bad input;
    // the OS error, paths and byte counts are the input's, in both.
    let expected = [
        (
            "dangling.log: 无法读取：No such file or directory (os error 2)".to_string(),
            "dangling.log: cannot read: No such file or directory (os error 2)".to_string(),
        ),
        (
            format!("cut.core: core 被截断：只有 20000 字节，而其各段需要 {core_len} 字节"),
            format!("cut.core: core is truncated: 20000 bytes, its segments need {core_len}"),
        ),
        (
            "cut.log.gz: 读到 ".to_string(),
            "cut.log.gz: read error after ".to_string(),
        ),
        (
            "cut.tar!/m/rank0.log: 归档在这个成员中间就结束了：只读到它 ".to_string(),
            "cut.tar!/m/rank0.log: the archive ends inside this member: ".to_string(),
        ),
    ];
    for (want_zh, want_en) in &expected {
        assert!(
            zh_lines.iter().any(|l| l.starts_with(want_zh.as_str())),
            "{want_zh:?} in\n{zh}"
        );
        assert!(
            en_lines.iter().any(|l| l.starts_with(want_en.as_str())),
            "{want_en:?} in\n{en}"
        );
        // The English sentence is not in the Chinese report.
        let sentence = want_en.split_once(": ").unwrap().1;
        assert!(!zh.contains(sentence), "{sentence:?} in the Chinese report");
    }
    // The gzip line keeps the decoder's numbers and error text in both languages.
    let gz_en = en_lines
        .iter()
        .find(|l| l.starts_with("cut.log.gz"))
        .unwrap();
    let gz_zh = zh_lines
        .iter()
        .find(|l| l.starts_with("cut.log.gz"))
        .unwrap();
    let bytes = gz_en
        .strip_prefix("cut.log.gz: read error after ")
        .and_then(|r| r.split_once(' '))
        .unwrap()
        .0;
    let cause = gz_en.rsplit_once(": ").unwrap().1;
    assert_eq!(
        *gz_zh,
        format!("cut.log.gz: 读到 {bytes} 字节后出错，其余部分未分析：{cause}")
    );
}

#[test]
fn json_is_the_same_in_both_languages_and_carries_message_zh() {
    let d = tempfile::tempdir().unwrap();
    let core_len = bad_run(d.path());
    let run = d.path().display().to_string();
    let (_, zh, _) = tw(&[], &["analyze", &run, "--format", "json", "--lang", "zh"]);
    let (_, en, _) = tw(&[], &["analyze", &run, "--format", "json", "--lang", "en"]);
    assert_eq!(zh, en, "the JSON does not depend on the language");
    let v: serde_json::Value = serde_json::from_str(&en).unwrap();
    let w = v["warnings"].as_array().unwrap();
    assert!(w.len() >= 4, "{v}");
    for x in w {
        let (m, mz) = (
            x["message"].as_str().unwrap(),
            x["message_zh"].as_str().unwrap(),
        );
        assert!(!has_cjk(m) && has_cjk(mz), "{x}");
    }
    let core = w.iter().find(|x| x["path"] == "cut.core").unwrap();
    assert!(
        core["message_zh"]
            .as_str()
            .unwrap()
            .contains(&format!("{core_len} 字节")),
        "{core}"
    );
}

#[test]
fn markdown_github_and_facts_print_warnings_in_the_report_language() {
    let d = tempfile::tempdir().unwrap();
    bad_run(d.path());
    let run = d.path().display().to_string();
    let zh_core = "cut.core: core 被截断：只有 20000 字节";
    let en_core = "cut.core: core is truncated: 20000 bytes";
    for lang in ["zh", "en"] {
        let (want, not) = if lang == "zh" {
            (zh_core, en_core)
        } else {
            (en_core, zh_core)
        };
        let (_, md, _) = tw(
            &[],
            &["analyze", &run, "--format", "markdown", "--lang", lang],
        );
        assert!(md.contains(want) && !md.contains(not), "{lang}:\n{md}");
        let (_, gh, _) = tw(
            &[],
            &["analyze", &run, "--format", "github", "--lang", lang],
        );
        let notice = gh
            .lines()
            .find(|l| l.contains("cut.core: "))
            .unwrap_or_else(|| panic!("{lang}:\n{gh}"));
        assert!(
            notice.starts_with("::notice title=trainwreck") && notice.contains(want),
            "{lang}: {notice}"
        );
        let (_, facts, err) = tw(&[], &["facts", &run, "--lang", lang]);
        let label = if lang == "zh" {
            "警告："
        } else {
            "warning: "
        };
        assert!(
            facts
                .lines()
                .any(|l| l.starts_with(&format!("{label}{want}"))),
            "{lang}:\n{facts}{err}"
        );
        // The table's columns are named in the same language.
        let head: Vec<&str> = facts
            .lines()
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        let want_head = if lang == "zh" {
            ["事实", "值", "出处"]
        } else {
            ["fact", "value", "source"]
        };
        assert_eq!(head, want_head, "{lang}:\n{facts}");
    }
    // A Chinese locale gives the Chinese warnings without --lang.
    let (_, md, _) = tw(
        &[("LANG", "zh_CN.UTF-8")],
        &["analyze", &run, "--format", "markdown"],
    );
    assert!(md.contains(zh_core), "{md}");
}

#[test]
fn a_rule_directory_warning_follows_the_language() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("train.log"), BUS).unwrap();
    let rules = tempfile::tempdir().unwrap();
    let (r, run) = (
        rules.path().display().to_string(),
        d.path().display().to_string(),
    );
    let args = |lang| {
        [
            "analyze",
            run.as_str(),
            "--rules",
            r.as_str(),
            "--lang",
            lang,
        ]
    };
    let (_, _, zh) = tw(&[], &args("zh"));
    assert!(
        zh.contains(&format!(
            "{r}：规则目录中没有 *.toml 文件；未从中加载任何规则"
        )),
        "{zh}"
    );
    let (_, _, en) = tw(&[], &args("en"));
    assert!(
        en.contains(&format!(
            "{r}: rule directory holds no *.toml files; no rules loaded from it"
        )),
        "{en}"
    );
}
