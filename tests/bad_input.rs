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
        w.path.as_deref().is_some_and(|p| p.ends_with(path_end)) && w.message.en.contains(needle)
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
    assert!(top.fix.en.contains("train.py:9"), "{}", top.fix.en);
    assert!(r.fingerprint.is_some());
}

/// A log with `n` holes of `hole` NUL bytes, each after `text` bytes of step lines and right
/// before an error's text (no line end between them, as a crash leaves it), and where each
/// hole starts.
fn holed_log(n: usize, hole: usize, text: usize) -> (Vec<u8>, Vec<usize>) {
    let mut b = Vec::new();
    let mut at = Vec::new();
    for k in 0..n {
        let mut i = 0;
        while b.len() < (k + 1) * text + k * hole {
            b.extend_from_slice(format!("[rank0] step {k}.{i} loss 1.0\n").as_bytes());
            i += 1;
        }
        at.push(b.len());
        b.extend(std::iter::repeat_n(0u8, hole));
    }
    b.extend_from_slice(BUS.as_bytes());
    b.extend_from_slice(b"[rank0] exiting\n");
    (b, at)
}

/// Audit round 3, F-23: a hole of NULs (a sparse file's, a crash's, ≥ 1 MiB) in the middle of
/// a log, the error right after it: skipped as a hole, said where and how big, and the error
/// diagnosed (it was `no_failure` with a long-line warning). The same whole, split into
/// ranges, gzip-compressed and as a zip member.
#[test]
fn a_hole_in_the_middle_of_a_log_is_skipped_and_the_text_after_it_read() {
    let d = tempfile::tempdir().unwrap();
    let (log, at) = holed_log(1, (1 << 20) + 4096, 256 << 10);
    let plain = d.path().join("train.log");
    std::fs::write(&plain, &log).unwrap();
    let gz = d.path().join("gz/train.log.gz");
    std::fs::create_dir_all(gz.parent().unwrap()).unwrap();
    let mut e = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::fast(),
    );
    e.write_all(&log).unwrap();
    e.finish().unwrap();
    let zip_path = d.path().join("run.zip");
    let mut z = zip::ZipWriter::new(std::fs::File::create(&zip_path).unwrap());
    z.start_file(
        "logs/train.log",
        zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated),
    )
    .unwrap();
    z.write_all(&log).unwrap();
    z.finish().unwrap();
    // The hole lies in the line the error's text ends (no line end between them).
    let line = log[..at[0]].iter().filter(|&&b| b == b'\n').count() + 1;
    let said = format!(
        "a hole of {} NUL bytes at byte {} (line {line}) was skipped",
        (1 << 20) + 4096,
        at[0]
    );
    let kb = KnowledgeBase::load(&[]).unwrap();
    let mut engine = trainwreck::analyze::Engine::new(&kb);
    for p in [&plain, &gz, &zip_path] {
        let paths = vec![p.display().to_string()];
        let r = trainwreck::diagnose_with(&engine, &paths, 1);
        assert_eq!(r.verdict, Verdict::Diagnosed, "{p:?}: {:?}", r.warnings);
        assert_eq!(r.top().unwrap().category, Category::ShmExhausted, "{p:?}");
        assert!(
            r.warnings.iter().any(|w| w.message.en.contains(&said)),
            "{p:?}: {:?}",
            r.warnings
        );
        assert!(
            !r.warnings
                .iter()
                .any(|w| w.message.en.contains("bytes long")),
            "{p:?}: a hole read as a long line: {:?}",
            r.warnings
        );
    }
    // Split into ranges (edges inside the hole and around it): the whole read's report.
    let paths = vec![plain.display().to_string()];
    let whole = trainwreck::diagnose_with(&engine, &paths, 1).to_json();
    for split in [100_000, 300_000, 700_000] {
        engine.split_bytes = Some(split);
        for threads in [1, 3] {
            let got = trainwreck::diagnose_with(&engine, &paths, threads).to_json();
            assert_eq!(got, whole, "ranges of {split} bytes on {threads} threads");
        }
    }
}

/// Many holes: one warning for the input, the first few by place, all counted; the text
/// between them and after the last read.
#[test]
fn many_holes_are_one_warning_and_every_text_between_them_is_read() {
    let d = tempfile::tempdir().unwrap();
    let (log, at) = holed_log(5, 70_000, 20_000);
    let p = d.path().join("train.log");
    std::fs::write(&p, &log).unwrap();
    let r = diagnose(&[p.display().to_string()]);
    assert_eq!(r.verdict, Verdict::Diagnosed, "{:?}", r.warnings);
    let w: Vec<&str> = r
        .warnings
        .iter()
        .map(|w| w.message.en.as_str())
        .filter(|m| m.contains("NUL"))
        .collect();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("5 holes of NUL bytes (350000 bytes in all) were skipped")
            && (0..3).all(|k| {
                let line = log[..at[k]].iter().filter(|&&b| b == b'\n').count() + 1;
                w[0].contains(&format!("70000 at byte {} (line {line})", at[k]))
            })
            && w[0].contains("and 2 more"),
        "{w:?}"
    );
}

/// A zip whose end record claims 0 entries (its central directory lists nothing), though its
/// members are there: read from their local headers, said, and diagnosed (it was "archive
/// holds no files" and `no_failure`).
#[test]
fn a_zip_whose_member_list_claims_no_entries_is_read_from_its_local_headers() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("artifact.zip");
    let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    z.start_file("logs/prep.log", opts).unwrap();
    z.write_all(b"[rank0] step 1\n").unwrap();
    z.start_file("logs/train.log", opts).unwrap();
    z.write_all(BUS.as_bytes()).unwrap();
    let mut bytes = z.finish().unwrap().into_inner();
    let eocd = bytes
        .windows(4)
        .rposition(|w| w == b"PK\x05\x06")
        .expect("an end record");
    // Entries on this disk, and in all.
    bytes[eocd + 8..eocd + 12].fill(0);
    std::fs::write(&p, &bytes).unwrap();
    let r = diagnose(&[p.display().to_string()]);
    assert_eq!(r.verdict, Verdict::Diagnosed, "{:?}", r.warnings);
    assert_eq!(r.top().unwrap().category, Category::ShmExhausted);
    assert!(
        warned(
            &r,
            "artifact.zip",
            "lists no files, yet the archive holds members"
        ),
        "{:?}",
        r.warnings
    );
    assert!(!warned(&r, "artifact.zip", "archive holds no files"));
    // A zip that is really empty still says so.
    let empty = d.path().join("empty.zip");
    zip::ZipWriter::new(std::fs::File::create(&empty).unwrap())
        .finish()
        .unwrap();
    let r = diagnose(&[empty.display().to_string()]);
    assert!(
        warned(&r, "empty.zip", "archive holds no files"),
        "{:?}",
        r.warnings
    );
}
