//! Bad input never panics and is never silently lost: unreadable files, binary junk, empty
//! directories, invalid UTF-8, a single 100 MB line, a truncated .gz, a symlink loop and a
//! FIFO each become a warning while the analysis goes on; a malformed rule file is an error
//! naming the file, the key and the fix.

use std::io::Write;
use std::process::Command;
use trainwreck::model::{Category, Verdict};
use trainwreck::rules::KnowledgeBase;

const BUS: &str = "RuntimeError: DataLoader worker (pid 4232) is killed by signal: Bus error.\n";

fn diagnose(paths: &[String]) -> trainwreck::report::Report {
    let kb = KnowledgeBase::load(&[]).unwrap();
    trainwreck::diagnose(&kb, paths, 2)
}

fn warned(r: &trainwreck::report::Report, path_end: &str, needle: &str) -> bool {
    r.warnings.iter().any(|w| {
        w.path.as_deref().is_some_and(|p| p.ends_with(path_end)) && w.message.contains(needle)
    })
}

#[test]
fn junk_of_every_kind_is_warned_about_and_the_real_log_still_counts() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("train.log"), BUS).unwrap();
    std::fs::write(
        p.join("junk.bin"),
        (0..4096u32)
            .map(|i| (i * 7 % 251) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    std::fs::write(p.join("empty.log"), b"").unwrap();
    let mut bad = b"caf\xe9 \xff\xfe ".to_vec();
    bad.extend_from_slice(BUS.as_bytes());
    std::fs::write(p.join("latin1.log"), &bad).unwrap();
    // A .gz cut in the middle.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    for _ in 0..2000 {
        gz.write_all(b"step 1 loss 2.0 some ordinary training line\n")
            .unwrap();
    }
    let gz = gz.finish().unwrap();
    std::fs::write(p.join("cut.log.gz"), &gz[..gz.len() / 2]).unwrap();
    std::fs::create_dir(p.join("empty_dir")).unwrap();
    std::os::unix::fs::symlink(p, p.join("loop")).unwrap();
    let fifo = p.join("pipe");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );

    let r = diagnose(&[p.display().to_string()]);
    assert_eq!(r.top().unwrap().category, Category::ShmExhausted);
    // The bus-error line is found through invalid UTF-8 too.
    assert!(
        r.top()
            .unwrap()
            .evidence
            .iter()
            .any(|e| e.path == "latin1.log")
    );
    assert!(
        warned(
            &r,
            "latin1.log",
            "bytes that are not UTF-8 in 1 of its lines (the first: line 1)"
        ),
        "{:?}",
        r.warnings
    );
    assert!(warned(&r, "junk.bin", "not scanned"), "{:?}", r.warnings);
    assert!(warned(&r, "empty.log", "empty"), "{:?}", r.warnings);
    assert!(
        warned(&r, "cut.log.gz", ""),
        "truncated gzip: {:?}",
        r.warnings
    );
    assert!(warned(&r, "loop", "loop"), "{:?}", r.warnings);
    assert!(warned(&r, "pipe", "FIFO"), "{:?}", r.warnings);
    let kinds: Vec<(&str, &str)> = r
        .inputs
        .iter()
        .map(|i| (i.path.as_str(), i.kind.as_str()))
        .collect();
    assert!(kinds.contains(&("junk.bin", "binary")), "{kinds:?}");
}

#[test]
fn a_100_mb_line_is_cut_reported_and_the_lines_after_it_still_count() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("huge.log");
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(b"first line\n").unwrap();
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..100 {
        f.write_all(&chunk).unwrap();
    }
    f.write_all(b"\n").unwrap();
    f.write_all(BUS.as_bytes()).unwrap();
    drop(f);
    let r = diagnose(&[path.display().to_string()]);
    let top = r.top().expect("the line after the long one is scanned");
    assert_eq!(top.evidence[0].line, Some(3));
    assert!(
        warned(&r, "huge.log", "line 2 is 104857600 bytes long"),
        "{:?}",
        r.warnings
    );
}

#[test]
fn a_missing_path_is_a_usage_error_not_a_healthy_run() {
    // The library still accounts for it in the warnings (triage of many runs goes on) …
    let r = diagnose(&["/definitely/not/here.log".to_string()]);
    assert!(warned(&r, "here.log", "cannot read"), "{:?}", r.warnings);
    // … but the command line refuses it: exit 2 with the path named, for every command that
    // takes paths, even beside a path that exists.
    let seed = format!("{}/fixtures/seed-bus-error", env!("CARGO_MANIFEST_DIR"));
    for args in [
        vec!["analyze", "/definitely/not/here.log"],
        vec![
            "analyze",
            "--format",
            "json",
            seed.as_str(),
            "/definitely/not/here.log",
        ],
        vec!["facts", "/definitely/not/here.log"],
        vec!["triage", "/definitely/not/here"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("/definitely/not/here") && err.contains("no such file"),
            "{err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}: no report for a typo");
    }
}

#[test]
fn stdin_paste_is_analysed() {
    let out = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .args(["analyze", "--format", "json", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(BUS.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["findings"][0]["category"], "shm_exhausted");
    assert_eq!(r["inputs"][0]["path"], "<stdin>");
}

#[test]
fn malformed_rule_file_names_file_key_and_fix() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("mine.toml"),
        r#"[[rule]]
code = "ACME7001"
name = "my-rule"
category = "shm_exhausted"
role = "root"
title = "t"
colour = "red"
[rule.doc]
what = "w"
why = "y"
"#,
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .args(["rules", "test", "--rules"])
        .arg(d.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mine.toml") && err.contains("colour"), "{err}");
    assert!(
        err.contains("Writing a rule"),
        "says where the keys are documented: {err}"
    );

    std::fs::write(
        d.path().join("mine.toml"),
        r#"[[rule]]
code = "ACME7001"
name = "my-rule"
category = "shm_exhausted"
role = "root"
title = "t"
[rule.doc]
what = "w"
why = "y"
[[rule.signature]]
regex = 'Bus error in my loader'
weight = 0.5
[[rule.fix]]
text = "raise {not.a.fact}"
[rule.examples]
fire = ["Bus error in my loader"]
silent = ["fine"]
"#,
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .args(["rules", "test", "--rules"])
        .arg(d.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("mine.toml") && err.contains("fix[0].text") && err.contains("not.a.fact"),
        "{err}"
    );
}

#[test]
fn an_unknown_exception_is_read_from_its_traceback() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("train.log");
    std::fs::write(
        &p,
        "step 1 loss 2.3\nTraceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n    main()\nmypkg.errors.ShardCorruptError: shard 17 has a bad header\n",
    )
    .unwrap();
    let r = diagnose(&[p.display().to_string()]);
    // No rule knows this exception; its traceback says it was raised in the user's own code.
    assert_eq!(r.verdict, Verdict::Diagnosed);
    let top = r.top().unwrap();
    assert_eq!(top.rule, "traceback-classified");
    assert_eq!(top.category, Category::PythonException);
    assert!(top.strength < 0.5, "weaker evidence than a specific rule");
    assert!(
        top.evidence[0].text.contains("ShardCorruptError")
            && top.score[0].what.contains("train.py:9 in <module>"),
        "{:?}",
        top
    );
    assert!(top.fix.contains("train.py:9"), "{}", top.fix);
    assert!(r.fingerprint.is_some());
}
