//! The knowledge base's own quality gates, run under `cargo test`: every built-in rule loads,
//! every example behaves, every signature is exercised, and the embedded list matches disk.

use trainwreck::rules::{self, KnowledgeBase};

#[test]
fn builtin_rules_load() {
    if let Err(errs) = KnowledgeBase::load(&[]) {
        panic!(
            "{}",
            errs.iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

#[test]
fn every_rule_example_behaves() {
    let kb = KnowledgeBase::load(&[]).unwrap();
    let fails: Vec<String> = trainwreck::kbtest::test_examples(&kb)
        .into_iter()
        .map(|f| f.en)
        .collect();
    assert!(fails.is_empty(), "{}", fails.join("\n"));
}

#[test]
fn embedded_rule_list_matches_rules_dir() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("rules");
    let mut on_disk: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    on_disk.sort();
    let embedded: Vec<String> = rules::BUILTIN.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(
        embedded, on_disk,
        "build.rs must list every file in rules/ into rules::BUILTIN, sorted"
    );
}

#[test]
fn every_rule_has_fire_and_silent_examples() {
    let kb = KnowledgeBase::load(&[]).unwrap();
    for r in &kb.rules {
        if r.signatures.is_empty() {
            continue;
        }
        assert!(
            !r.examples_fire.is_empty(),
            "{} has no fire example",
            r.name
        );
        assert!(
            !r.examples_silent.is_empty(),
            "{} has no silent example",
            r.name
        );
    }
}

/// A misspelt value of a closed vocabulary (category, status, symptom_of) is a load error that
/// names the file, the key and every valid value, never a silent default.
#[test]
fn misspelt_vocabulary_is_a_load_error_naming_file_key_and_valid_values() {
    let text = r#"[[rule]]
code = "ACME7002"
name = "my-typo-rule"
category = "shm_exhaustd"
role = "root"
title = "t"
status = "stabel"
symptom_of = ["host-oom"]
[rule.doc]
what = "w"
why = "y"
[[rule.signature]]
regex = 'Bus error in my loader'
weight = 0.5
[[rule.fix]]
text = "raise it"
[rule.examples]
fire = ["Bus error in my loader"]
silent = ["fine"]
"#;
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    rules::load_text("mine.toml", text, &mut rules, &mut errors);
    assert!(rules.is_empty());
    let find = |key: &str| {
        errors
            .iter()
            .find(|e| e.key == format!("rule my-typo-rule {key}"))
            .unwrap_or_else(|| panic!("no error for {key}: {errors:?}"))
    };
    for (key, bad, valid) in [
        ("category", "shm_exhaustd", "shm_exhausted"),
        ("status", "stabel", "stable, preview, retired"),
        ("symptom_of", "host-oom", "host_oom"),
    ] {
        let e = find(key);
        assert_eq!(e.file, "mine.toml");
        assert!(e.message.contains(bad) && e.message.contains(valid), "{e}");
    }
    for c in trainwreck::model::Category::ALL {
        assert!(find("category").message.contains(c.as_str()));
    }
}

/// `rules test` reads examples the way `analyze` reads a file: a signature limited to dmesg
/// does not fire on a line that `analyze` would read as a plain log, so its example fails here
/// too (the old line-by-line regex check passed it). Glued `\r` progress bars and colour codes,
/// which `analyze` handles, pass.
#[test]
fn rules_test_reads_examples_as_analyze_reads_files() {
    let d = tempfile::tempdir().unwrap();
    let rule = |kinds: &str, fire: &str| {
        format!(
            r#"[[rule]]
code = "ACME7101"
name = "my-loader-bus-error"
category = "shm_exhausted"
role = "root"
title = "t"
[rule.doc]
what = "w"
why = "y"
[[rule.signature]]
regex = 'Bus error in my loader'
weight = 0.5
{kinds}
[[rule.fix]]
text = "raise shm"
[rule.examples]
fire = [{fire}]
silent = ["fine"]
"#
        )
    };
    let test = |text: String| {
        std::fs::write(d.path().join("mine.toml"), text).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_trainwreck"))
            .args(["rules", "test", "--rules"])
            .arg(d.path())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = test(rule(
        r#"kinds = ["dmesg"]"#,
        r#""[rank0]: Bus error in my loader""#,
    ));
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("ACME7101") && err.contains("as `analyze` reads it"),
        "{err}"
    );
    let (code, err) = test(rule(
        "",
        r#""Epoch 1:  40%|####      | 4/10\r\u001b[31mBus error in my loader\u001b[0m""#,
    ));
    assert_eq!(code, Some(0), "{err}");
}

/// A scenario example (`[[rule.examples.case]]`) runs the fact conditions and the fix template
/// for real: a band the rule's confidence misses, or a fix text it does not give, fails
/// `rules test`; a fact name that is not in the catalog is a load error naming the key.
#[test]
fn scenario_examples_check_conditions_and_fixes_where_they_are_written() {
    let d = tempfile::tempdir().unwrap();
    let rule = |case: &str| {
        format!(
            r#"[[rule]]
code = "ACME7102"
name = "my-loader-shm"
category = "shm_exhausted"
role = "root"
title = "t"
[rule.doc]
what = "w"
why = "y"
[[rule.signature]]
regex = 'Bus error in my loader'
weight = 0.5
[[rule.condition]]
fact = "shm.size_bytes"
op = "<="
value = "1GiB"
weight = 0.5
why = "/dev/shm is only {{shm.size_bytes}}"
[[rule.fix]]
text = "docker run --shm-size={{derive.shm_size_bytes|docker}}"
[rule.examples]
fire = ["Bus error in my loader"]
silent = ["fine"]
[[rule.examples.case]]
text = "Bus error in my loader"
{case}
"#
        )
    };
    let test = |text: String| {
        std::fs::write(d.path().join("mine.toml"), text).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_trainwreck"))
            .args(["rules", "test", "--rules"])
            .arg(d.path())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // 0.5 and 0.5 by noisy-OR: 0.75.
    let ok = r#"facts = { "shm.size_bytes" = "64MiB" }
confidence = [0.7, 0.8]
fix = "--shm-size=8g""#;
    assert_eq!(test(rule(ok)), (Some(0), String::new()));
    let (code, err) = test(rule(
        r#"confidence = [0.7, 0.8]
fix = "--shm-size=8g""#,
    ));
    assert_eq!(
        code,
        Some(1),
        "without the fact the condition does not hold"
    );
    assert!(
        err.contains("ACME7102")
            && err.contains("examples.case[0]")
            && err.contains("confidence 0.5"),
        "{err}"
    );
    let (code, err) = test(rule(
        r#"facts = { "shm.size_bytes" = "64MiB" }
fix = "--ipc=host""#,
    ));
    assert_eq!(code, Some(1));
    assert!(err.contains("does not contain \"--ipc=host\""), "{err}");
    let (code, err) = test(rule(r#"facts = { "shm.sise_bytes" = "64MiB" }"#));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("mine.toml")
            && err.contains("examples.case[0].facts")
            && err.contains("shm.sise_bytes"),
        "{err}"
    );
}
