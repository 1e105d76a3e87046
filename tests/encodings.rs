//! Logs not written in UTF-8, as Windows writes them: PowerShell 5's `>` writes UTF-16LE with a
//! BOM and CRLF, a console on code page 936 writes GBK. Each test re-encodes a real captured
//! log (fixtures/corpus) at test time and checks that the report is the UTF-8 original's:
//! the same diagnosis, evidence text, line numbers and fingerprint, with the encoding said
//! in `inputs`; and that lines that are not UTF-8 in a UTF-8 log are said once, not lost.

use std::io::Write;
use trainwreck::report::Report;
use trainwreck::rules::KnowledgeBase;

const OOM_LOG: &str = "fixtures/corpus/03a_cuda_oom_python/run/console.log";

fn real_log() -> String {
    std::fs::read_to_string(format!("{}/{OOM_LOG}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn diagnose(paths: &[&std::path::Path], threads: usize) -> Report {
    let kb = KnowledgeBase::load(&[]).unwrap();
    let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    trainwreck::diagnose(&kb, &paths, threads)
}

/// What must not change with the encoding: the top finding's category, its evidence (line
/// and text) and the fingerprint.
type Essence = (String, Vec<(Option<u64>, String)>, Option<String>);

fn essence(r: &Report) -> Essence {
    let top = r.top().expect("a finding");
    let ev = top
        .evidence
        .iter()
        .map(|e| (e.line, e.text.clone()))
        .collect();
    (top.category.to_string(), ev, r.fingerprint.clone())
}

fn encoding_of(r: &Report) -> Option<String> {
    let v = serde_json::to_value(&r.inputs[0]).unwrap();
    v.get("encoding").map(|e| e.as_str().unwrap().to_string())
}

fn utf16(text: &str, le: bool, bom: bool) -> Vec<u8> {
    let mut out = Vec::new();
    if bom {
        out.extend_from_slice(if le { b"\xFF\xFE" } else { b"\xFE\xFF" });
    }
    for u in text.encode_utf16() {
        out.extend_from_slice(&if le { u.to_le_bytes() } else { u.to_be_bytes() });
    }
    out
}

fn gbk(text: &str) -> Vec<u8> {
    encoding_rs::GB18030.encode(text).0.into_owned()
}

/// Evidence text is the line, or its first `MAX_TEXT` characters and an ellipsis.
fn is_line(evidence: &str, line: &str) -> bool {
    let line = line.trim();
    evidence == line
        || evidence
            .strip_suffix('…')
            .is_some_and(|cut| cut.len() > 100 && line.starts_with(cut))
}

fn not_utf8_warnings(r: &Report) -> Vec<String> {
    r.warnings
        .iter()
        .filter(|w| w.message.en.contains("not UTF-8"))
        .map(|w| w.message.en.clone())
        .collect()
}

#[test]
fn every_captured_run_is_read_as_utf8_with_no_encoding_warning() {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut runs = 0;
    for set in ["fixtures/corpus", "fixtures/captured"] {
        for case in std::fs::read_dir(format!("{root}/{set}")).unwrap() {
            let run = case.unwrap().path().join("run");
            if !run.is_dir() {
                continue;
            }
            runs += 1;
            let r = diagnose(&[&run], 2);
            assert!(not_utf8_warnings(&r).is_empty(), "{}", run.display());
            for i in &r.inputs {
                let v = serde_json::to_value(i).unwrap();
                assert!(v.get("encoding").is_none(), "{}: {v}", run.display());
            }
        }
    }
    assert!(runs >= 25, "{runs} runs");
}

#[test]
fn a_powershell_utf16_log_is_diagnosed_as_its_utf8_original() {
    let d = tempfile::tempdir().unwrap();
    let text = real_log();
    let orig = d.path().join("utf8/console.log");
    std::fs::create_dir_all(orig.parent().unwrap()).unwrap();
    std::fs::write(&orig, &text).unwrap();
    let want = essence(&diagnose(&[&orig], 1));
    assert_eq!(want.0, "gpu_oom");
    // PowerShell 5.1's `python train.py > console.log`: UTF-16LE, a BOM, CRLF. And the
    // big-endian form without a BOM, which some Java and .NET loggers write.
    let crlf = text.replace('\n', "\r\n");
    for (name, bytes, enc) in [
        ("le", utf16(&crlf, true, true), "utf-16le"),
        ("be", utf16(&text, false, false), "utf-16be"),
    ] {
        let p = d.path().join(name).join("console.log");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        let r = diagnose(&[&p], 1);
        assert_eq!(essence(&r), want, "{name}");
        assert_eq!(encoding_of(&r).as_deref(), Some(enc), "{name}");
        assert!(r.warnings.is_empty(), "{name}: {:?}", r.warnings);
    }
}

#[test]
fn a_gbk_console_log_reads_as_chinese_in_a_file_a_gz_and_a_zip() {
    let d = tempfile::tempdir().unwrap();
    // A Chinese console's log: Chinese before the run and in the error line itself.
    let text = format!(
        "[INFO] 开始训练，共 3 个 epoch\n{}[ERROR] 训练失败：显存不足\n",
        real_log()
    );
    let orig = d.path().join("utf8/console.log");
    std::fs::create_dir_all(orig.parent().unwrap()).unwrap();
    std::fs::write(&orig, &text).unwrap();
    let want = essence(&diagnose(&[&orig], 1));
    assert_eq!(want.0, "gpu_oom");

    let plain = d.path().join("gbk/console.log");
    std::fs::create_dir_all(plain.parent().unwrap()).unwrap();
    std::fs::write(&plain, gbk(&text)).unwrap();
    let gz = d.path().join("gz/console.log.gz");
    std::fs::create_dir_all(gz.parent().unwrap()).unwrap();
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&gbk(&text)).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    let zip = d.path().join("artifact.zip");
    let mut z = zip::ZipWriter::new(std::fs::File::create(&zip).unwrap());
    z.start_file("console.log", zip::write::SimpleFileOptions::default())
        .unwrap();
    z.write_all(&gbk(&text)).unwrap();
    z.finish().unwrap();

    for p in [&plain, &gz, &zip] {
        let r = diagnose(&[p], 1);
        assert_eq!(essence(&r), want, "{}", p.display());
        assert_eq!(
            encoding_of(&r).as_deref(),
            Some("gb18030"),
            "{}",
            p.display()
        );
        assert!(r.warnings.is_empty(), "{}: {:?}", p.display(), r.warnings);
    }
}

#[test]
fn a_utf8_bom_does_not_hide_the_first_line() {
    let d = tempfile::tempdir().unwrap();
    let text = real_log();
    let err = text.lines().position(|l| l.contains("OutOfMemoryError"));
    // The error line first, as in a paste that starts at the error.
    let first = &text.lines().nth(err.unwrap()).unwrap();
    let p = d.path().join("paste.txt");
    std::fs::write(
        &p,
        [b"\xEF\xBB\xBF".as_slice(), first.as_bytes(), b"\n"].concat(),
    )
    .unwrap();
    let r = diagnose(&[&p], 1);
    let top = r.top().expect("a finding");
    assert_eq!(top.category.to_string(), "gpu_oom");
    assert_eq!(top.evidence[0].line, Some(1));
    assert!(
        is_line(&top.evidence[0].text, first),
        "no BOM in the evidence: {:?}",
        top.evidence[0].text
    );
    assert_eq!(encoding_of(&r), None);
}

#[test]
fn lines_not_utf8_in_a_utf8_log_are_shown_decoded_and_said_once() {
    let d = tempfile::tempdir().unwrap();
    let text = real_log();
    let at = text
        .lines()
        .position(|l| l.contains("OutOfMemoryError"))
        .unwrap();
    let mut bytes = Vec::new();
    let mut want_text = String::new();
    for (i, l) in text.lines().enumerate() {
        if i == at {
            // The error line, with a GBK-written Chinese prefix.
            let line = format!("[rank0] 报错 {l}");
            bytes.extend(gbk(&line));
            want_text = line;
        } else if i == 3 {
            // Latin-1 bytes, neither UTF-8 nor GB18030.
            bytes.extend_from_slice(b"r\xe9sum\xe9 of the config\xff");
        } else {
            bytes.extend_from_slice(l.as_bytes());
        }
        bytes.push(b'\n');
    }
    let p = d.path().join("console.log");
    std::fs::write(&p, &bytes).unwrap();
    let r = diagnose(&[&p], 1);
    let top = r.top().expect("a finding");
    assert_eq!(top.category.to_string(), "gpu_oom");
    let ev = top.evidence.iter().find(|e| e.line == Some(at as u64 + 1));
    assert!(ev.is_some_and(|e| is_line(&e.text, &want_text)), "{ev:?}");
    let w = not_utf8_warnings(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("in 2 of its lines (the first: line 4)"),
        "{w:?}"
    );
    assert!(w[0].contains("1 of them read as GBK/GB18030"), "{w:?}");
    assert_eq!(encoding_of(&r), None, "the file as a whole is UTF-8");
}

/// A file big enough to be read in ranges on several threads (2 × 64 MiB): the lines that are
/// not UTF-8 are counted over all its ranges into one warning with the file's line numbers;
/// a big GBK file is not split (its ranges would not be decoded) and reads as GB18030.
#[test]
fn a_big_file_read_in_ranges_says_its_lines_not_utf8_once() {
    let d = tempfile::tempdir().unwrap();
    let filler = "step 1200/90000 | loss 2.3142 | lr 1.0e-04 | grad_norm 0.812 | tokens/s 41234\n";
    let n = (129 << 20) / filler.len() + 1;
    let p = d.path().join("train.log");
    let err = real_log()
        .lines()
        .find(|l| l.contains("OutOfMemoryError"))
        .unwrap()
        .to_string();
    for (head, tail, lines_expected) in [
        // An ASCII head: split; one GBK line in the middle range, one at the end.
        (String::new(), format!("[rank0] 报错 {err}\n"), Some(2)),
        // A GBK head: not split, the whole file decoded.
        ("[INFO] 开始训练\n".to_string(), format!("{err}\n"), None),
    ] {
        {
            let mut f = std::io::BufWriter::new(std::fs::File::create(&p).unwrap());
            f.write_all(&gbk(&head)).unwrap();
            for i in 0..n {
                if i == n / 2 && lines_expected.is_some() {
                    f.write_all(&gbk("中间的一行 GBK\n")).unwrap();
                } else {
                    f.write_all(filler.as_bytes()).unwrap();
                }
            }
            f.write_all(&gbk(&tail)).unwrap();
        }
        let r = diagnose(&[&p], 2);
        let top = r.top().expect("a finding");
        assert_eq!(top.category.to_string(), "gpu_oom");
        let last = n as u64 + 1 + u64::from(!head.is_empty());
        let ev = top.evidence.iter().find(|e| e.line == Some(last));
        assert!(
            ev.is_some_and(|e| is_line(&e.text, &tail)),
            "line {last}: {ev:?}"
        );
        let w = not_utf8_warnings(&r);
        match lines_expected {
            Some(k) => {
                assert_eq!(w.len(), 1, "{w:?}");
                let first = n / 2 + 1;
                assert!(
                    w[0].contains(&format!("in {k} of its lines (the first: line {first})")),
                    "{w:?}"
                );
                assert_eq!(encoding_of(&r), None);
            }
            None => {
                assert!(w.is_empty(), "{w:?}");
                assert_eq!(encoding_of(&r).as_deref(), Some("gb18030"));
            }
        }
    }
}

#[test]
fn bytes_a_decoded_log_cannot_decode_are_said_once() {
    let d = tempfile::tempdir().unwrap();
    let text = format!("[INFO] 开始训练\n{}", real_log());
    let mut bytes = gbk(&text);
    // A byte GB18030 has no character for, past the head (8 KiB) that made the file GB18030.
    bytes.extend(gbk(&"第 9 步 loss 2.31\n".repeat(600)));
    bytes.extend_from_slice(b"step 9 \xFF\n");
    let p = d.path().join("console.log");
    std::fs::write(&p, &bytes).unwrap();
    let r = diagnose(&[&p], 1);
    assert_eq!(encoding_of(&r).as_deref(), Some("gb18030"));
    assert_eq!(r.top().unwrap().category.to_string(), "gpu_oom");
    let w: Vec<_> = r
        .warnings
        .iter()
        .filter(|w| w.message.en.contains("some of its bytes are not GB18030"))
        .collect();
    assert_eq!(w.len(), 1, "{:?}", r.warnings);
}
