//! Hostile inputs: what an attacker or a broken machine can put in front of trainwreck. Every
//! input is generated here at test time (never committed). Each case asserts no panic, the exit
//! status, and that what reaches a terminal cannot drive it.

use std::process::Command;

fn trainwreck(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Control characters a terminal acts on; none may reach a terminal output from an input.
fn controls(s: &str) -> Vec<char> {
    s.chars()
        .filter(|&c| {
            let u = c as u32;
            (u < 0x20 && c != '\t' && c != '\n') || (0x7f..=0x9f).contains(&u)
        })
        .collect()
}

/// OSC 0 (window title), OSC 52 (clipboard write), a CSI cursor move, a C1 CSI and a carriage
/// return that would hide the start of the line.
const NASTY: &str =
    "\x1b]0;owned-title\x07 \x1b]52;c;ZWNobyBvd25lZA==\x1b\\ \x1b[2J\x1b[H \u{9b}31m \rhidden";

#[test]
fn osc_title_and_clipboard_sequences_never_reach_the_terminal() {
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(
        run.join("console.log"),
        format!(
            "Traceback (most recent call last):\n  File \"/w/train.py\", line 9, in <module>\nRuntimeError: bad batch {NASTY}\n"
        ),
    )
    .unwrap();
    let json = serde_json::json!({"message": {"message": format!("RuntimeError: {NASTY}"),
        "extraInfo": {"py_callstack": format!("RuntimeError: {NASTY}\n"), "timestamp": "1795978639"}}});
    std::fs::write(run.join("error.json"), json.to_string()).unwrap();
    let r = run.display().to_string();
    // The texts do come through (else this proves nothing): the raw JSON report carries them,
    // escaped as JSON escapes them.
    let (code, out, _) = trainwreck(&["analyze", &r, "--format", "json"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("owned-title") && out.contains("\\u001b]52;c;"),
        "{out}"
    );
    for args in [
        vec!["analyze", &r],
        vec!["analyze", &r, "--timeline"],
        vec!["facts", &r],
        vec!["triage", &r],
    ] {
        let (code, out, err) = trainwreck(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        let c = controls(&out);
        assert!(c.is_empty(), "{args:?} printed controls {c:?}:\n{out}");
        // Made visible, not dropped (log lines reach the evidence with their ANSI sequences
        // already stripped for matching; the C1 CSI and the carriage return stay, made visible).
        if args[0] != "triage" {
            assert!(out.contains("\\x9b31m \\x0dhidden"), "{args:?}:\n{out}");
        }
        if args[0] == "facts" {
            assert!(out.contains("\\x1b]52;c;"), "{args:?}:\n{out}");
        }
    }
}

// Files that change while they are read. Racing a real writer against the reader would pass or
// fail by timing; instead each test drives the production opener (`sources::open::open`, the
// one the analysis uses) by hand: it reads part of the stream, really truncates, replaces or
// deletes the file on disk, reads the rest, then asks the opener's watch what happened. The
// file-system effects are real; only the interleaving is fixed, so the result is the same on
// every run.

const OOM: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n";

/// A log of `n` filler lines ending in the OOM line, and its one input.
fn racing_log(dir: &std::path::Path, n: usize) -> (std::path::PathBuf, trainwreck::inputs::Input) {
    let p = dir.join("train.log");
    let mut s = String::new();
    for i in 0..n {
        s.push_str(&format!("step {i} loss 1.{i:04}\n"));
    }
    s.push_str(OOM);
    std::fs::write(&p, s).unwrap();
    let (mut inputs, w) = trainwreck::inputs::collect(&[p.display().to_string()]);
    assert!(w.is_empty(), "{w:?}");
    (p, inputs.remove(0))
}

fn read_some(r: &mut dyn std::io::Read, n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    r.read_exact(&mut buf).unwrap();
    buf
}

#[test]
fn a_file_truncated_while_read_gives_one_warning_naming_the_sizes() {
    let d = tempfile::tempdir().unwrap();
    let (p, input) = racing_log(d.path(), 20_000);
    let full = std::fs::metadata(&p).unwrap().len();
    let mut o = trainwreck::sources::open::open(&input).unwrap();
    let _ = read_some(&mut o.stream, 100_000);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&p)
        .unwrap()
        .set_len(150_000)
        .unwrap();
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut o.stream, &mut rest).unwrap();
    let c = o.watch.as_ref().unwrap().check().expect("a change");
    assert!(
        c.message
            .en
            .contains(&format!("shrank from {full} to 150000 bytes")),
        "{:?}",
        c.message
    );
    assert_eq!(c.bytes_read, Some(150_000), "{:?}", c.message);
    // And through the analysis: the same one warning (a truncation before the open is a
    // change since listing, said as such).
    std::fs::write(&p, "x".repeat(10)).unwrap();
    let kb = trainwreck::rules::KnowledgeBase::load(&[]).unwrap();
    let a = trainwreck::analyze::Engine::new(&kb).run(std::slice::from_ref(&input), 1);
    let w: Vec<_> = a
        .warnings
        .iter()
        .filter(|w| w.message.en.contains("bytes"))
        .collect();
    assert_eq!(w.len(), 1, "{:?}", a.warnings);
    assert!(
        w[0].message.en.contains(&format!(
            "changed from {full} to 10 bytes between listing and opening"
        )),
        "{:?}",
        w[0]
    );
}

#[test]
fn a_file_replaced_by_rename_while_read_is_read_whole_from_the_original_and_said_once() {
    let d = tempfile::tempdir().unwrap();
    let (p, input) = racing_log(d.path(), 20_000);
    let original = std::fs::read(&p).unwrap();
    let mut o = trainwreck::sources::open::open(&input).unwrap();
    let mut got = read_some(&mut o.stream, 50_000);
    let tmp = d.path().join("new.log");
    std::fs::write(&tmp, "a different run\n".repeat(1000)).unwrap();
    std::fs::rename(&tmp, &p).unwrap();
    std::io::Read::read_to_end(&mut o.stream, &mut got).unwrap();
    assert!(got == original, "the two files were mixed");
    let c = o.watch.as_ref().unwrap().check().expect("a change");
    assert!(
        c.message
            .en
            .contains("replaced (renamed over) while being read")
            && c.message.en.contains(&format!(
                "{} bytes of the original were read",
                original.len()
            ))
            && c.message.en.contains("(16000 bytes) was not"),
        "{:?}",
        c.message
    );
}

#[test]
fn a_file_deleted_while_read_gives_one_warning() {
    let d = tempfile::tempdir().unwrap();
    let (p, input) = racing_log(d.path(), 20_000);
    let len = std::fs::metadata(&p).unwrap().len();
    let mut o = trainwreck::sources::open::open(&input).unwrap();
    let mut got = read_some(&mut o.stream, 50_000);
    std::fs::remove_file(&p).unwrap();
    std::io::Read::read_to_end(&mut o.stream, &mut got).unwrap();
    assert_eq!(got.len() as u64, len);
    assert!(got.ends_with(OOM.as_bytes()));
    let c = o.watch.as_ref().unwrap().check().expect("a change");
    assert_eq!(
        c.message.en,
        format!(
            "the file was deleted while being read; {len} bytes were read from the handle already open"
        )
    );
    // The same values in the Chinese sentence.
    assert_eq!(
        c.message.zh,
        format!("文件在读取过程中被删除；已从打开的句柄读取了 {len} 字节")
    );
}

#[test]
fn a_file_left_alone_gives_no_warning() {
    let d = tempfile::tempdir().unwrap();
    let (_p, input) = racing_log(d.path(), 2000);
    let mut o = trainwreck::sources::open::open(&input).unwrap();
    let mut got = Vec::new();
    std::io::Read::read_to_end(&mut o.stream, &mut got).unwrap();
    assert_eq!(o.watch.as_ref().unwrap().check(), None);
}

#[test]
fn a_fifo_named_on_the_command_line_is_read_and_one_found_in_a_walk_is_skipped() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("pod.log");
    let st = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(st.success(), "mkfifo failed");
    let f = fifo.clone();
    // The writer, as `<(kubectl logs pod)` would be.
    let writer = std::thread::spawn(move || std::fs::write(f, OOM).unwrap());
    let (code, out, err) = trainwreck(&["analyze", fifo.to_str().unwrap(), "--format", "json"]);
    writer.join().unwrap();
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["findings"][0]["category"], "gpu_oom", "{out}");
    // In a directory walk nobody may ever write to it: skipped with a warning, no hang.
    std::fs::write(d.path().join("train.log"), "step 1\n").unwrap();
    let (code, out, err) = trainwreck(&["analyze", d.path().to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["path"] == "pod.log" && w["message"].as_str().unwrap().contains("FIFO")),
        "{out}"
    );
}

fn json_report(args: &[&str]) -> serde_json::Value {
    let (code, out, err) = trainwreck(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn warnings_of(v: &serde_json::Value, path: &str) -> Vec<String> {
    v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["path"] == path)
        .map(|w| w["message"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_gzip_bomb_stops_at_the_ratio_cap_with_a_warning_and_numbers() {
    use std::io::Write;
    let d = tempfile::tempdir().unwrap();
    // 1 MiB of 4 KiB blank lines, compressed once (about 1 KB) and repeated as 256 gzip
    // members: 256 MiB that a multi-member reader inflates at over 200× its size.
    let mut block = vec![b' '; 1 << 20];
    for i in (4095..block.len()).step_by(4096) {
        block[i] = b'\n';
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&block).unwrap();
    let member = gz.finish().unwrap();
    let mut f = std::fs::File::create(d.path().join("bomb.log.gz")).unwrap();
    for _ in 0..256 {
        f.write_all(&member).unwrap();
    }
    drop(f);
    let t = std::time::Instant::now();
    let v = json_report(&["analyze", d.path().to_str().unwrap(), "--format", "json"]);
    let w = warnings_of(&v, "bomb.log.gz");
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("decompression stopped after") && w[0].contains("decompression bomb"),
        "{w:?}"
    );
    // Stopped near the 64 MiB threshold, not read to the end (1 GiB).
    let n: u64 = w[0]
        .split_once("stopped after ")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap();
    assert!(n < 80 << 20, "{n}");
    eprintln!("bomb stopped after {n} bytes in {:?}", t.elapsed());
}

#[test]
fn a_torchelastic_file_over_the_line_cap_says_what_was_parsed() {
    let d = tempfile::tempdir().unwrap();
    let msg = "x".repeat(3 << 20);
    let json = serde_json::json!({"message": {"message": format!("RuntimeError: {msg}"),
        "extraInfo": {"py_callstack": "", "timestamp": "1795978639"}}});
    std::fs::write(d.path().join("error.json"), json.to_string()).unwrap();
    let v = json_report(&["analyze", d.path().to_str().unwrap(), "--format", "json"]);
    let w = warnings_of(&v, "error.json");
    assert!(
        w.iter().any(|m| m.contains(
            "longer than the 1048576-byte line cap; the first 1048576 bytes were parsed"
        )),
        "{w:?}"
    );
    assert!(!w.iter().any(|m| m.contains("not valid JSON")), "{w:?}");
}

/// The largest resident set of any child this test process has waited for, in bytes (Linux
/// reports `ru_maxrss` in KiB). Children of every test in this binary count: the bound holds
/// for each of them.
fn children_max_rss() -> u64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes the struct we own.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    assert_eq!(rc, 0);
    ru.ru_maxrss as u64 * 1024
}

/// Every file under `dir` (not following links) is in the report's `inputs` or `warnings`.
fn accounted(v: &serde_json::Value, dir: &std::path::Path) {
    let mut named = std::collections::HashSet::new();
    for i in v["inputs"].as_array().unwrap() {
        named.insert(i["path"].as_str().unwrap().to_string());
    }
    for w in v["warnings"].as_array().unwrap() {
        if let Some(p) = w["path"].as_str() {
            named.insert(p.to_string());
        }
    }
    let mut missing = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let ft = e.file_type().unwrap();
            let rel = e.path().strip_prefix(dir).unwrap().display().to_string();
            if ft.is_dir() {
                stack.push(e.path());
            } else if !named.contains(&rel) && !named.iter().any(|n| n.starts_with(&rel)) {
                missing.push(rel);
            }
        }
    }
    assert!(missing.is_empty(), "not accounted for: {missing:?}");
}

/// Memory bound for any analysis here: the reader keeps one 1 MiB buffer per thread and bounded
/// documents; a debug build with the rules loaded stays far below this.
const MAX_RSS: u64 = 512 << 20;

#[test]
fn hostile_inputs_never_panic_stay_small_and_are_all_accounted_for() {
    use std::io::Write;
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("run");
    std::fs::create_dir_all(run.join("deep/a/b/c/d/e/f/g/h")).unwrap();
    std::fs::write(run.join("deep/a/b/c/d/e/f/g/h/train.log"), OOM).unwrap();
    // Junk, NULs, invalid UTF-8.
    let junk: Vec<u8> = (0..200_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(run.join("junk.bin"), &junk).unwrap();
    std::fs::write(run.join("nuls.log"), vec![0u8; 100_000]).unwrap();
    let mut bad = b"caf\xe9 \xff\xfe\xc3(\n".repeat(1000);
    bad.extend_from_slice(OOM.as_bytes());
    std::fs::write(run.join("latin1.log"), &bad).unwrap();
    // A 200 MB line, then a real error line.
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(run.join("long.log")).unwrap());
        let block = vec![b'x'; 1 << 20];
        for _ in 0..200 {
            f.write_all(&block).unwrap();
        }
        f.write_all(b"\n").unwrap();
        f.write_all(OOM.as_bytes()).unwrap();
    }
    // Symlink loop, links to /dev/zero and to nowhere.
    std::os::unix::fs::symlink(&run, run.join("deep/loop")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", run.join("zero.log")).unwrap();
    std::os::unix::fs::symlink(run.join("nowhere"), run.join("dangling.log")).unwrap();
    // A FIFO nobody writes to (a walk must skip it, not hang).
    assert!(
        Command::new("mkfifo")
            .arg(run.join("pipe.log"))
            .status()
            .unwrap()
            .success()
    );
    // Truncated gzip.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&OOM.repeat(5000).into_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    std::fs::write(run.join("cut.log.gz"), &gz[..gz.len() / 2]).unwrap();
    // Damaged cores: an ELF header and nothing else, and an ELF core cut in its program headers.
    let mut elf = b"\x7fELF\x02\x01\x01\x00".to_vec();
    elf.resize(64, 0);
    elf[16] = 4; // ET_CORE
    std::fs::write(run.join("core.1234"), &elf).unwrap();
    elf[32] = 64; // e_phoff just past the header
    elf[56] = 200; // 200 program headers that are not there
    std::fs::write(run.join("core.5678"), &elf).unwrap();
    // Huge JSON: a 20 MB torchelastic error file (over the document cap) and a deep one.
    let big = format!(
        "{{\"message\": {{\"message\": \"RuntimeError: {}\"}}}}\n",
        "y".repeat(20 << 20)
    );
    std::fs::write(run.join("error.json"), big).unwrap();
    std::fs::write(run.join("deep/error.json"), "[".repeat(100_000)).unwrap();

    let r = run.display().to_string();
    let t = std::time::Instant::now();
    let v = json_report(&["analyze", &r, "--format", "json", "--threads", "2"]);
    eprintln!("hostile run: {:?}", t.elapsed());
    accounted(&v, &run);
    assert_eq!(
        v["findings"][0]["category"], "gpu_oom",
        "the real OOM lines still count"
    );
    let warned = |p: &str, needle: &str| warnings_of(&v, p).iter().any(|m| m.contains(needle));
    assert!(
        warned("long.log", "209715200 bytes long"),
        "{:?}",
        v["warnings"]
    );
    assert!(
        // A link out of the run directory is not followed at all (it was followed and then
        // refused as a device before links were confined to the tree).
        warned("zero.log", "outside the directory: not followed"),
        "{:?}",
        v["warnings"]
    );
    assert!(warned("pipe.log", "FIFO"), "{:?}", v["warnings"]);
    assert!(
        warned("error.json", "the first 1048576 bytes were parsed"),
        "{:?}",
        v["warnings"]
    );
    // The same through the terminal report and facts: no panic, exit 0.
    for args in [vec!["analyze", &r], vec!["facts", &r], vec!["triage", &r]] {
        let (code, _, err) = trainwreck(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    let rss = children_max_rss();
    assert!(rss < MAX_RSS, "a child used {} MiB", rss >> 20);
    eprintln!("largest child: {} MiB", rss >> 20);
}

/// Many tiny files: 20,000 (the issue asks for 100,000; kept at 20,000 so the suite stays a
/// few seconds on a shared 2-core machine), every one listed in `inputs`.
#[test]
fn twenty_thousand_tiny_files_are_all_read_and_listed() {
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("many");
    for k in 0..20 {
        let sub = run.join(format!("d{k:02}"));
        std::fs::create_dir_all(&sub).unwrap();
        for i in 0..1000 {
            std::fs::write(sub.join(format!("rank{i}.log")), format!("step {i} ok\n")).unwrap();
        }
    }
    std::fs::write(run.join("d00/rank0.log"), OOM).unwrap();
    let t = std::time::Instant::now();
    let v = json_report(&[
        "analyze",
        run.to_str().unwrap(),
        "--format",
        "json",
        "--threads",
        "2",
    ]);
    eprintln!("20,000 files: {:?}", t.elapsed());
    assert_eq!(v["inputs"].as_array().unwrap().len(), 20_000);
    accounted(&v, &run);
    assert_eq!(v["findings"][0]["category"], "gpu_oom");
    let rss = children_max_rss();
    assert!(rss < MAX_RSS, "a child used {} MiB", rss >> 20);
}

// --- secrets and escapes (audit round 3, part A) ---
//
// Every name field that reaches a terminal or a document (file and archive member names,
// notes, authors, hosts, jobs, rule directories, stored paths, setting values) carries
// escape sequences here; every output (stdout and stderr, every format) must show them made
// visible. Then the history's URLs, secret-named environment variables and host names.

/// The binary in `dir` with no inherited history, its exit code, stdout and stderr.
fn tw_in(dir: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .args(args)
        .current_dir(dir)
        .env_remove("TRAINWRECK_DB")
        .env("TRAINWRECK_DB_TIMEOUT_MS", "500")
        .env("XDG_DATA_HOME", dir.join("xdg"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Neither stream may carry a control character; `what` names the command for the message.
fn clean(what: &str, out: &str, err: &str) {
    for (name, s) in [("stdout", out), ("stderr", err)] {
        let c = controls(s);
        assert!(c.is_empty(), "{what}: {name} carried {c:?}:\n{s}");
    }
}

/// A tar archive holding one member of the given raw name and text.
fn tar_with_member(path: &std::path::Path, name: &[u8], body: &[u8]) {
    let mut b = tar::Builder::new(std::fs::File::create(path).unwrap());
    let mut h = tar::Header::new_gnu();
    if let Some(g) = h.as_gnu_mut() {
        g.name[..name.len()].copy_from_slice(name);
    }
    h.set_size(body.len() as u64);
    h.set_mode(0o644);
    h.set_cksum();
    b.append(&h, body).unwrap();
    b.finish().unwrap();
}

#[test]
fn escapes_in_file_and_member_names_never_reach_any_output() {
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(
        run.join("train.log"),
        "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n",
    )
    .unwrap();
    // An empty file and a binary file: both are named in a warning.
    std::fs::write(run.join("e\x1b]0;PWNED\x07\x1b[2J.log"), "").unwrap();
    let blob: Vec<u8> = (0..3000u32).map(|i| (i * 7919 % 251) as u8).collect();
    std::fs::write(run.join("b\x1b]52;c;cm0gLXJmIH4=\x07.bin"), &blob).unwrap();
    tar_with_member(&run.join("logs.tar"), b"m\x1b[8mx.bin", &blob);
    let r = run.display().to_string();
    // The names do reach the report (else this proves nothing).
    let (_, json, _) = tw_in(d.path(), &["analyze", &r, "--format", "json"]);
    assert!(
        json.contains("\\u001b]52;c;") && json.contains("m\\u001b[8mx.bin"),
        "{json}"
    );
    for args in [
        vec!["analyze", &r],
        vec!["analyze", &r, "--timeline"],
        vec!["analyze", &r, "--redact"],
        vec!["--lang", "zh", "analyze", &r],
        vec!["analyze", &r, "--format", "markdown"],
        vec!["analyze", &r, "--format", "github"],
        vec!["analyze", &r, "--format", "junit"],
        vec!["facts", &r],
        vec!["triage", &r],
    ] {
        let (code, out, err) = tw_in(d.path(), &args);
        assert_eq!(code, 0, "{args:?}: {err}");
        clean(&format!("{args:?}"), &out, &err);
        if args.contains(&"analyze") && !args.contains(&"junit") && !args.contains(&"github") {
            assert!(
                out.contains("\\x1b]52;c;"),
                "{args:?}: name not shown:\n{out}"
            );
        }
    }
}

#[test]
fn junit_stays_well_formed_xml_with_noncharacters_in_a_log() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("j.log");
    std::fs::write(
        &log,
        "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered X\u{FFFE}Y\u{FFFF}Z\u{FDD0}\u{85}\n",
    )
    .unwrap();
    let (code, out, _) = tw_in(
        d.path(),
        &["analyze", log.to_str().unwrap(), "--format", "junit"],
    );
    assert_eq!(code, 0);
    assert!(out.contains("X\u{FFFD}Y\u{FFFD}Z"), "{out}");
    let bad: Vec<char> = out
        .chars()
        .filter(|&c| matches!(c as u32, 0xFFFE | 0xFFFF | 0xFDD0..=0xFDEF | 0x7f..=0x9f))
        .collect();
    assert!(bad.is_empty(), "not XML 1.0: {bad:?}");
    clean("junit", &out, "");
}

#[test]
fn history_views_neutralise_notes_authors_hosts_and_jobs() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("esc.db").display().to_string();
    let f = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/seed-bus-error");
    let (code, _, err) = tw_in(
        d.path(),
        &[
            "analyze",
            f,
            "--record",
            "--db",
            &db,
            "--host",
            "node\x1b]0;HOST-TITLE\x07",
            "--job",
            "job\x1b[2J\x1b]52;c;cm0gLXJm\x07",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let (_, json, _) = tw_in(d.path(), &["analyze", f, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let fp = v["fingerprint"].as_str().unwrap().to_string();
    let note = [
        "history",
        "note",
        &fp,
        "fixed \x1b]0;NOTE-TITLE\x07",
        "--author",
        "alice\x1b[5m",
        "--db",
        &db,
    ];
    for args in [
        note.to_vec(),
        vec!["history", "show", &fp, "--db", &db],
        vec!["history", "list", "--db", &db],
        vec!["history", "hosts", "--db", &db],
        vec!["history", "gpus", "--db", &db],
        vec!["analyze", f, "--db", &db],
    ] {
        let (code, out, err) = tw_in(d.path(), &args);
        assert_eq!(code, 0, "{args:?}: {err}");
        clean(&format!("{args:?}"), &out, &err);
    }
    let (_, out, _) = tw_in(d.path(), &["history", "show", &fp, "--db", &db]);
    assert!(
        out.contains("NOTE-TITLE") && out.contains("\\x1b]0;"),
        "{out}"
    );
}

#[test]
fn stderr_neutralises_rule_directories_and_stored_paths() {
    let d = tempfile::tempdir().unwrap();
    // A rule directory whose subdirectory name carries a title sequence (a warning names it).
    let rules = d.path().join("rules_sub");
    let sub = rules.join("sub\x1b]0;RULEDIR\x07");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join("x.toml"), "").unwrap();
    let (_, out, err) = tw_in(
        d.path(),
        &["rules", "list", "--rules", rules.to_str().unwrap()],
    );
    assert!(err.contains("RULEDIR"), "{err}");
    clean("rules list", &out, &err);
    // `--baseline last-good` names the stored path of a good run that is gone.
    let db = d.path().join("h.db").display().to_string();
    let good = d.path().join("good\x1b]0;LASTGOOD\x07");
    std::fs::create_dir_all(&good).unwrap();
    std::fs::write(good.join("train.log"), "step 1 loss 2.0\n").unwrap();
    let g = good.display().to_string();
    let (code, _, err) = tw_in(
        d.path(),
        &["analyze", &g, "--record", "--db", &db, "--job", "j"],
    );
    assert_eq!(code, 0, "{err}");
    std::fs::remove_dir_all(&good).unwrap();
    let bad = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/seed-bus-error");
    let (code, out, err) = tw_in(
        d.path(),
        &[
            "analyze",
            bad,
            "--baseline",
            "last-good",
            "--job",
            "j",
            "--db",
            &db,
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("LASTGOOD"), "{err}");
    clean("--baseline last-good", &out, &err);
}

#[test]
fn diff_values_with_escapes_are_neutralised_in_every_format() {
    let d = tempfile::tempdir().unwrap();
    let mk = |side: &str, opt: &str| {
        let dir = d.path().join(side);
        std::fs::create_dir_all(&dir).unwrap();
        let cfg = serde_json::json!({"train_batch_size": 8, "optimizer": opt});
        std::fs::write(dir.join("ds_config.json"), cfg.to_string()).unwrap();
        std::fs::write(
            dir.join("train.log"),
            "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n",
        )
        .unwrap();
        dir.display().to_string()
    };
    let good = mk("good", "adam");
    let bad = mk("bad", "adamw\x1b]0;DIFF-TITLE\x07");
    for fmt in ["terminal", "markdown"] {
        let (code, out, err) = tw_in(d.path(), &["diff", &good, &bad, "--format", fmt]);
        assert_eq!(code, 0, "{err}");
        assert!(
            out.contains("DIFF-TITLE"),
            "{fmt}: the value is not listed:\n{out}"
        );
        clean(fmt, &out, &err);
    }
}

#[test]
fn history_urls_are_parsed_once_and_never_print_a_password_or_name_a_file() {
    let d = tempfile::tempdir().unwrap();
    let f = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/seed-bus-error");
    // Nothing listens on port 1: each must fail loudly (exit 3), without the password, and
    // leave no file named after the URL in the working directory.
    for url in [
        "POSTGRES://tw:PLNTupperPw@127.0.0.1:1/postgres",
        "postgresql+psycopg2://tw:PLNTpsycoPw@127.0.0.1:1/postgres",
        "postgres://tw@127.0.0.1:1/postgres?sslmode=disable&password=PLNTqueryPw",
        "mysql://tw:PLNTmysqlPw@127.0.0.1:1/db",
    ] {
        for args in [
            vec!["analyze", f, "--record", "--db", url],
            vec!["history", "list", "--db", url],
            vec!["history", "migrate", "--db", url],
        ] {
            let (code, out, err) = tw_in(d.path(), &args);
            assert_eq!(code, 3, "{args:?}: {err}");
            assert!(
                !out.contains("PLNT") && !err.contains("PLNT"),
                "{args:?}: {err}"
            );
            assert!(
                err.contains("127.0.0.1:1"),
                "{args:?}: the server is not named: {err}"
            );
        }
    }
    let left: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .filter(|n| n != "xdg")
        .collect();
    assert!(left.is_empty(), "files named after URLs: {left:?}");
}

#[test]
fn a_secret_named_environment_variable_is_never_a_fact() {
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(
        run.join("environment.txt"),
        "PATH=/usr/bin\nNCCL_SOCKET_IFNAME=eth0\nNCCL_PASS=PLNTnccl36\nNCCL_AUTH_DSN=PLNTdsn77\nNCCL_IB_PKEY=0x8001\n",
    )
    .unwrap();
    let r = run.display().to_string();
    for args in [
        vec!["facts", &r, "--format", "json"],
        vec!["facts", &r, "--redact"],
        vec!["analyze", &r, "--format", "json", "--redact"],
    ] {
        let (code, out, err) = tw_in(d.path(), &args);
        assert_eq!(code, 0, "{err}");
        assert!(!out.contains("PLNT"), "{args:?}:\n{out}");
    }
    // The allow-list still keeps the rest (the test would pass on an empty dump otherwise).
    let (_, out, _) = tw_in(d.path(), &["facts", &r, "--format", "json"]);
    assert!(
        out.contains("NCCL_SOCKET_IFNAME") && out.contains("NCCL_IB_PKEY"),
        "{out}"
    );
}

#[test]
fn redact_hosts_masks_host_names_no_finding_attributed() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("host.log");
    std::fs::write(
        &log,
        "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered on gpu-node-042 (node18.corp.example.com, fe80::1ff:fe23:4567:890a) MASTER_ADDR=trainmaster-7.corp.example.com\n",
    )
    .unwrap();
    let l = log.to_str().unwrap();
    let (_, plain, _) = tw_in(d.path(), &["analyze", l, "--format", "json"]);
    let names = ["trainmaster-7", "gpu-node-042", "node18.corp", "fe80::1ff"];
    assert!(names.iter().all(|n| plain.contains(n)), "{plain}");
    for args in [
        vec!["analyze", l, "--format", "json", "--redact=hosts"],
        vec!["analyze", l, "--format", "markdown", "--redact=all"],
        vec!["facts", l, "--redact=all"],
    ] {
        let (_, out, _) = tw_in(d.path(), &args);
        let left: Vec<&&str> = names.iter().filter(|n| out.contains(**n)).collect();
        assert!(left.is_empty(), "{args:?} kept {left:?}:\n{out}");
    }
}

// --- caps, links, split, encodings (audit round 3, part B) ---

/// The engine over the built-in rules, compiled once per test binary.
fn engine() -> trainwreck::analyze::Engine<'static> {
    static KB: std::sync::OnceLock<trainwreck::rules::KnowledgeBase> = std::sync::OnceLock::new();
    let kb = KB.get_or_init(|| trainwreck::rules::KnowledgeBase::load(&[]).expect("rules load"));
    trainwreck::analyze::Engine::new(kb)
}

/// The report of `paths` as JSON, read whole (one thread, no split) or with every plain-text
/// file split into ranges of about `split` bytes on `threads` threads.
fn report_json(
    engine: &mut trainwreck::analyze::Engine,
    paths: &[String],
    threads: usize,
    split: Option<u64>,
) -> String {
    engine.split_bytes = split;
    trainwreck::diagnose_with(engine, paths, threads).to_json()
}

/// A `preceded_by` window (a SemLock traceback over `[Errno 28]`) moved line by line across
/// one range edge and then another: every split gives the whole read's report.
#[test]
fn a_look_back_window_across_a_range_edge_gives_the_whole_reads_answer() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("train.log");
    let block = "Traceback (most recent call last):\n  File \"/usr/lib/python3.10/multiprocessing/synchronize.py\", line 57, in __init__\n    sl = self._semlock = _multiprocessing.SemLock(\nOSError: [Errno 28] No space left on device\n";
    let lines = 40;
    let mut engine = engine();
    for before in 0..=lines {
        let mut text = String::new();
        for i in 0..before {
            text.push_str(&format!("[rank0] step {i:03} loss 1.0\n"));
        }
        text.push_str(block);
        for i in before..lines {
            text.push_str(&format!("[rank0] step {i:03} loss 1.0\n"));
        }
        std::fs::write(&log, &text).unwrap();
        let paths = vec![log.display().to_string()];
        let whole = report_json(&mut engine, &paths, 1, None);
        assert!(whole.contains("\"shm_exhausted\""), "{whole}");
        let size = text.len() as u64;
        for threads in 1..=4 {
            for split in [size / 2, size / 3, size / 5] {
                let got = report_json(&mut engine, &paths, threads, Some(split));
                assert_eq!(
                    got, whole,
                    "block after {before} lines, {threads} threads, ranges of {split} bytes"
                );
            }
        }
    }
}

/// Every labelled fixture and every paste reads the same whole and split into small ranges
/// (edges everywhere in its logs) on one to four threads.
#[test]
fn every_fixture_gives_the_same_report_whole_and_split() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut cases = Vec::new();
    for dir in ["", "corpus", "captured", "pastes"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap().flatten() {
            let p = e.path();
            if p.join("label.json").is_file() || (dir == "pastes" && p.is_dir()) {
                cases.push(p);
            }
        }
    }
    cases.sort();
    assert!(cases.len() >= 40, "fixtures missing: {}", cases.len());
    let mut differ = Vec::new();
    let mut engine = engine();
    for case in &cases {
        let target = if case.join("run").is_dir() {
            case.join("run")
        } else {
            case.clone()
        };
        if std::env::var("TW_CASE").is_ok_and(|c| !case.ends_with(c)) {
            continue;
        }
        let paths = vec![target.display().to_string()];
        let whole = report_json(&mut engine, &paths, 1, None);
        // Ranges of 3001 bytes put an edge within every few dozen lines; 40,000 a few per
        // log. One size per thread count keeps the test to a minute.
        for threads in 1..=4 {
            let split = [3001, 40_000][threads % 2];
            let got = report_json(&mut engine, &paths, threads, Some(split));
            if got != whole {
                let first = whole
                    .lines()
                    .zip(got.lines())
                    .find(|(a, b)| a != b)
                    .map(|(a, b)| format!("{a}\n  vs {b}"));
                differ.push(format!(
                    "{} ({threads} threads, {split}): {first:?}",
                    case.display()
                ));
            }
        }
    }
    assert!(differ.is_empty(), "split reads differ: {differ:#?}");
}

/// A zip of one deflated member `m0.log` (`data`), its central entry then copied `copies`
/// times under other names pointing at the same data (the overlapping-entries bomb), and
/// with `claimed` (when given) written over each entry's compressed size.
fn patched_zip(data: &[u8], copies: usize, claimed: Option<u32>) -> Vec<u8> {
    use std::io::Write;
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    w.start_file("m0.log", opts).unwrap();
    w.write_all(data).unwrap();
    let mut z = w.finish().unwrap().into_inner();
    let eocd = z.windows(4).rposition(|s| s == b"PK\x05\x06").unwrap();
    let cd_at = u32::from_le_bytes(z[eocd + 16..eocd + 20].try_into().unwrap()) as usize;
    let mut entry = z[cd_at..eocd].to_vec();
    if let Some(c) = claimed {
        entry[20..24].copy_from_slice(&c.to_le_bytes());
    }
    let name_at = 46;
    let mut cd = entry.clone();
    for k in 1..=copies {
        let mut e = entry.clone();
        e[name_at + 1] = b'0' + (k % 10) as u8;
        cd.extend_from_slice(&e);
    }
    let mut tail = z[eocd..].to_vec();
    let n = (copies + 1) as u16;
    tail[8..10].copy_from_slice(&n.to_le_bytes());
    tail[10..12].copy_from_slice(&n.to_le_bytes());
    tail[12..16].copy_from_slice(&(cd.len() as u32).to_le_bytes());
    z.truncate(cd_at);
    z.extend_from_slice(&cd);
    z.extend_from_slice(&tail);
    z
}

/// Entries sharing one deflate stream, or a size claimed past the member list, are a bomb's
/// shape: the zip is named and not read (40 entries over one stream read 32 GiB from 1 MB).
#[test]
fn a_zip_whose_entries_overlap_or_lie_about_their_size_is_not_read() {
    let d = tempfile::tempdir().unwrap();
    let mut data = vec![b' '; 4 << 20];
    for i in (4095..data.len()).step_by(4096) {
        data[i] = b'\n';
    }
    data.extend_from_slice(OOM.as_bytes());
    // The honest zip is read (else the refusals prove nothing).
    std::fs::write(d.path().join("honest.zip"), patched_zip(&data, 0, None)).unwrap();
    std::fs::write(d.path().join("overlap.zip"), patched_zip(&data, 9, None)).unwrap();
    std::fs::write(
        d.path().join("lie.zip"),
        patched_zip(&data, 0, Some(0xFFFF_FFF0)),
    )
    .unwrap();
    for (name, read) in [
        ("honest.zip", true),
        ("overlap.zip", false),
        ("lie.zip", false),
    ] {
        let p = d.path().join(name);
        let v = json_report(&["analyze", p.to_str().unwrap(), "--format", "json"]);
        let inputs = v["inputs"].as_array().unwrap();
        let warned = v["warnings"].as_array().unwrap().iter().any(|w| {
            w["message"]
                .as_str()
                .unwrap()
                .contains("decompression-bomb shape")
        });
        assert_eq!(!inputs.is_empty(), read, "{name}: {v}");
        assert_eq!(warned, !read, "{name}: {v}");
        if read {
            assert_eq!(v["findings"][0]["category"], "gpu_oom", "{v}");
        }
    }
}

/// A zip read from its local headers (its member list cut off) whose header claims 4 GiB of
/// compressed data: the ratio cap counts the compressed bytes really read, so the member
/// stops as a bomb, as its honest twin does, instead of being inflated whole.
#[test]
fn a_streamed_zip_member_that_lies_about_its_size_still_stops_as_a_bomb() {
    use std::io::Write;
    let d = tempfile::tempdir().unwrap();
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    w.start_file("rank0.log", opts).unwrap();
    let mut line = vec![b' '; 4095];
    line.push(b'\n');
    for _ in 0..(96 << 20) / line.len() {
        w.write_all(&line).unwrap();
    }
    let mut z = w.finish().unwrap().into_inner();
    let eocd = z.windows(4).rposition(|s| s == b"PK\x05\x06").unwrap();
    let cd_at = u32::from_le_bytes(z[eocd + 16..eocd + 20].try_into().unwrap()) as usize;
    z.truncate(cd_at);
    std::fs::write(d.path().join("honest.zip"), &z).unwrap();
    z[18..22].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
    std::fs::write(d.path().join("lie.zip"), &z).unwrap();
    for name in ["honest.zip", "lie.zip"] {
        let p = d.path().join(name);
        let v = json_report(&["analyze", p.to_str().unwrap(), "--format", "json"]);
        let bomb = v["warnings"].as_array().unwrap().iter().any(|w| {
            w["message"]
                .as_str()
                .unwrap()
                .contains("a decompression bomb")
        });
        assert!(bomb, "{name}: {v}");
    }
}

/// A tar header block for `name` with GNU sparse type: `real` bytes long, `stored` bytes
/// stored at offset 0, the rest a hole.
fn sparse_header(name: &str, real: u64, stored: u64) -> [u8; 512] {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    let oct = |h: &mut [u8; 512], at: usize, len: usize, v: u64| {
        let s = format!("{v:0w$o}", w = len - 1);
        h[at..at + len - 1].copy_from_slice(s.as_bytes());
    };
    oct(&mut h, 100, 8, 0o644);
    oct(&mut h, 108, 8, 0);
    oct(&mut h, 116, 8, 0);
    oct(&mut h, 124, 12, stored);
    oct(&mut h, 136, 12, 0);
    h[156] = b'S';
    h[257..265].copy_from_slice(b"ustar  \0");
    // Sparse map: the stored block (offset 0, 512 bytes), then the empty chunk at the end
    // that marks the real size; the real size.
    oct(&mut h, 386, 12, 0);
    oct(&mut h, 398, 12, stored);
    oct(&mut h, 410, 12, real);
    oct(&mut h, 422, 12, 0);
    oct(&mut h, 483, 12, real);
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| b as u32).sum();
    let s = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(s.as_bytes());
    h
}

/// A tar of `n` GNU sparse members named `logs/r<k>.log`, each `real` bytes long: `text` (cut
/// or padded to 16 KiB) stored at its head, the rest a hole.
fn sparse_tar(path: &std::path::Path, n: usize, real: u64, text: &str) {
    let mut head = text.to_string();
    while head.len() < 16 << 10 {
        head.push_str("step 1 loss 1.0\n");
    }
    head.truncate(16 << 10);
    let mut tar = Vec::new();
    for k in 0..n {
        tar.extend_from_slice(&sparse_header(&format!("logs/r{k}.log"), real, 16 << 10));
        tar.extend_from_slice(head.as_bytes());
    }
    tar.extend_from_slice(&[0u8; 1024]);
    std::fs::write(path, tar).unwrap();
}

/// The byte counts the `sparse member:` warnings give, and how many of them say the total
/// cap stopped the member.
fn sparse_notes(v: &serde_json::Value) -> (Vec<u64>, usize) {
    let mut said = Vec::new();
    let mut capped = 0;
    for w in v["warnings"].as_array().unwrap() {
        let m = w["message"].as_str().unwrap();
        if let Some(rest) = m.strip_prefix("sparse member: ") {
            said.push(rest.split(' ').next().unwrap().parse().unwrap());
            capped += m.contains("limits::GZIP_BYTES_TOTAL") as usize;
        }
    }
    (said, capped)
}

/// A sparse member's holes are zeros the tar reader makes, not bytes of the archive: they
/// are dropped before the scan and said with their size, and the text stored before them is
/// read: 4 members of 4 GiB from 64 KB are 4 notes, no hole reaches the line reader and none is
/// taken for a bomb.
#[test]
fn sparse_tar_members_holes_are_said_and_never_scanned() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("sparse.tar");
    sparse_tar(&p, 4, 4 << 30, OOM);
    let v = json_report(&["analyze", p.to_str().unwrap(), "--format", "json"]);
    let (said, capped) = sparse_notes(&v);
    assert_eq!(said, vec![(4 << 30) - (16 << 10); 4], "{v}");
    assert_eq!(capped, 0, "{v}");
    for w in v["warnings"].as_array().unwrap() {
        let m = w["message"].as_str().unwrap();
        assert!(
            !m.contains("bomb") && !m.contains("NUL bytes skipped"),
            "{m}"
        );
    }
    assert_eq!(v["findings"][0]["category"], "gpu_oom", "{v}");
}

/// Making a hole costs too, so holes count in the analysis's total decompression cap: 40
/// members of 7 GiB (280 GiB of holes from 640 KB) stop at `GZIP_BYTES_TOTAL`, one member says
/// the cap stopped it inside its hole, and the members after it are not read. Before, a
/// member stopped by a cap had the rest of its holes made to check the archive (8 GiB each,
/// uncounted): a 2 MB tar of 2000 such members took minutes.
#[test]
fn sparse_tar_holes_count_in_the_total_cap() {
    let total = trainwreck::limits::GZIP_BYTES_TOTAL;
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("sparse.tar");
    sparse_tar(&p, 40, 7 << 30, OOM);
    let v = json_report(&["analyze", p.to_str().unwrap(), "--format", "json"]);
    let (said, capped) = sparse_notes(&v);
    assert_eq!(capped, 1, "{said:?}");
    let holes: u64 = said.iter().sum();
    assert!(holes <= total && holes > total - (1 << 30), "{said:?}");
    assert!(said.len() < 40, "{said:?}");
    let stopped = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| {
            w["message"]
                .as_str()
                .unwrap()
                .contains("limits::GZIP_BYTES_TOTAL")
        })
        .count();
    assert!(stopped >= 40 - said.len(), "{v}");
}

/// Links in a run directory are followed only while they stay inside it; each one that leaves
/// is named; `--follow-links` follows those too.
#[test]
fn links_leaving_a_run_directory_are_named_not_followed() {
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("run");
    let outside = d.path().join("elsewhere");
    std::fs::create_dir_all(run.join("logs")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(run.join("logs/train.log"), OOM).unwrap();
    std::fs::write(outside.join("secret.log"), "PRIVATE LINE\n").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.log"), run.join("shadow.log")).unwrap();
    std::os::unix::fs::symlink(&outside, run.join("usr")).unwrap();
    std::os::unix::fs::symlink(run.join("logs"), run.join("latest")).unwrap();
    let r = run.to_str().unwrap();
    let v = json_report(&["analyze", r, "--format", "json"]);
    let paths: Vec<&str> = v["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["latest/train.log", "logs/train.log"], "{v}");
    for link in ["shadow.log", "usr"] {
        let w = warnings_of(&v, link);
        assert!(
            w.len() == 1 && w[0].contains("outside the directory: not followed"),
            "{link}: {v}"
        );
    }
    let v = json_report(&["analyze", r, "--format", "json", "--follow-links"]);
    let n = v["inputs"].as_array().unwrap().len();
    assert_eq!(n, 4, "{v}");
}

/// `--follow-links` follows links out of the tree, but reads at most `limits::LINKED_FILES`
/// files through them: a link to a big tree (`usr -> /usr`) stops there, said once.
#[test]
fn links_followed_out_of_a_run_directory_stop_at_the_cap() {
    let cap = trainwreck::limits::LINKED_FILES;
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("run");
    let big = d.path().join("big");
    std::fs::create_dir_all(&run).unwrap();
    for sub in 0..3 {
        let dir = big.join(format!("d{sub}"));
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..cap / 2 {
            std::fs::write(dir.join(format!("f{i:05}.txt")), "step 1\n").unwrap();
        }
    }
    std::fs::write(run.join("train.log"), OOM).unwrap();
    std::os::unix::fs::symlink(&big, run.join("usr")).unwrap();
    let r = run.to_str().unwrap();
    let v = json_report(&["analyze", r, "--format", "json", "--follow-links"]);
    let through: Vec<&str> = v["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .filter(|p| p.starts_with("usr/"))
        .collect();
    assert_eq!(
        through.len(),
        cap,
        "{} read through the link",
        through.len()
    );
    let w = warnings_of(&v, "usr");
    assert!(
        w.len() == 1 && w[0].contains("limits::LINKED_FILES"),
        "{w:?}"
    );
    assert_eq!(v["findings"][0]["category"], "gpu_oom");
}

/// `history import` reads a line at most `limits::IMPORT_LINE_BYTES` long, and a bad line
/// stops it saying exactly what was committed: every line before it, none after.
#[test]
fn history_import_caps_its_lines_and_says_what_a_stopped_import_committed() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("h.db");
    let db = db.to_str().unwrap();
    let log = d.path().join("train.log");
    std::fs::write(&log, OOM).unwrap();
    let (code, _, err) = trainwreck(&["analyze", log.to_str().unwrap(), "--record", "--db", db]);
    assert_eq!(code, 0, "{err}");
    let (code, export, err) = trainwreck(&["history", "export", "--db", db]);
    assert_eq!(code, 0, "{err}");
    let run = export.lines().next().unwrap().to_string();
    let v: serde_json::Value = serde_json::from_str(&run).unwrap();
    let id = v["run_id"]
        .as_str()
        .expect("an exported run has a run_id")
        .to_string();
    let numbered = |k: usize| run.replace(&id, &format!("{id}-{k}"));
    // Three runs, a broken line, two more.
    let mut text: String = (0..3).map(|k| numbered(k) + "\n").collect();
    text.push_str("{\"broken\n");
    text.push_str(&(3..5).map(|k| numbered(k) + "\n").collect::<String>());
    let file = d.path().join("partial.jsonl");
    std::fs::write(&file, &text).unwrap();
    let db2 = d.path().join("h2.db");
    let db2 = db2.to_str().unwrap();
    let (code, _, err) = trainwreck(&["history", "import", file.to_str().unwrap(), "--db", db2]);
    assert_ne!(code, 0);
    assert!(
        err.contains("line 4") && err.contains("the 3 runs and 0 notes before it were imported"),
        "{err}"
    );
    let (_, out, _) = trainwreck(&["history", "export", "--db", db2]);
    assert_eq!(out.lines().count(), 3, "{out}");
    // A line over the cap: refused, not read whole.
    let long = d.path().join("long.jsonl");
    let mut f = std::fs::File::create(&long).unwrap();
    std::io::Write::write_all(
        &mut f,
        &vec![b'x'; trainwreck::limits::IMPORT_LINE_BYTES + 10],
    )
    .unwrap();
    drop(f);
    let (code, _, err) = trainwreck(&["history", "import", long.to_str().unwrap(), "--db", db2]);
    assert_ne!(code, 0);
    assert!(
        err.contains("line 1 is over limits::IMPORT_LINE_BYTES"),
        "{err}"
    );
}

/// A zip a person made of a run directory whose first member happens to be a `data.pkl` is an
/// archive of logs, not a PyTorch checkpoint: its logs are read.
#[test]
fn a_zip_whose_first_member_is_a_data_pkl_is_still_read() {
    use std::io::Write;
    let d = tempfile::tempdir().unwrap();
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    w.start_file("run/data.pkl", opts).unwrap();
    w.write_all(&[0x80, 0x02, b'}', b'q', 0, b'.']).unwrap();
    w.start_file("run/train.log", opts).unwrap();
    w.write_all(OOM.as_bytes()).unwrap();
    let p = d.path().join("run.zip");
    std::fs::write(&p, w.finish().unwrap().into_inner()).unwrap();
    let v = json_report(&["analyze", p.to_str().unwrap(), "--format", "json"]);
    assert_eq!(v["findings"][0]["category"], "gpu_oom", "{v}");
}

/// A GBK head then UTF-8 lines, and a UTF-16 head then UTF-8 appended (either byte order, at
/// an even or an odd offset): the UTF-8 failure is diagnosed and the report says how the file
/// was read.
#[test]
fn mixed_encodings_are_decoded_per_part_and_said() {
    let d = tempfile::tempdir().unwrap();
    let fail = "RuntimeError: CUDA error: an illegal memory access was encountered\n";
    let gbk_line = encoding_rs::GB18030
        .encode("[2024-05-14] 训练步骤 损失\n")
        .0
        .into_owned();
    let mut gbk = gbk_line.repeat(600);
    gbk.extend_from_slice("错误：".as_bytes());
    gbk.extend_from_slice(fail.as_bytes());
    let mut cases = vec![("gbk.log", gbk, "UTF-8 (the first: line 601)")];
    for (le, odd) in [(true, false), (true, true), (false, false)] {
        let mut b: Vec<u8> = if le {
            vec![0xFF, 0xFE]
        } else {
            vec![0xFE, 0xFF]
        };
        for i in 0..300 {
            for u in format!("step {i}\n").encode_utf16() {
                b.extend_from_slice(&if le { u.to_le_bytes() } else { u.to_be_bytes() });
            }
        }
        if odd {
            b.push(b' ');
        }
        b.extend_from_slice(fail.as_bytes());
        let name = format!("u16-{le}-{odd}.log");
        cases.push((
            Box::leak(name.into_boxed_str()),
            b,
            "from line 301 on it is UTF-8",
        ));
    }
    for (name, bytes, said) in cases {
        let p = d.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let v = json_report(&["analyze", p.to_str().unwrap(), "--format", "json"]);
        assert_eq!(
            v["findings"][0]["category"], "cuda_illegal_access",
            "{name}: {v}"
        );
        let w = v["warnings"].to_string();
        assert!(w.contains(said), "{name}: {w}");
    }
}

/// A log whose head is a hole of NULs (logrotate's `copytruncate` under a writer that keeps its
/// offset; a crash's unwritten pages) is read past the hole, which is said with its size; one
/// that is nothing but NULs is said to be so. Neither is a silent "binary file".
#[test]
fn a_log_whose_head_is_a_hole_of_nuls_is_read_and_the_hole_said() {
    let d = tempfile::tempdir().unwrap();
    let body: String = (0..50).map(|i| format!("step {i} loss 1.0\n")).collect();
    let cases: [(&str, Vec<u8>, u64); 3] = [
        (
            "rotated.log",
            [vec![0u8; 100_000], body.clone().into_bytes(), OOM.into()].concat(),
            100_000,
        ),
        (
            "crashed.log",
            [
                b"step 0\n".to_vec(),
                vec![0u8; 20_000],
                body.into_bytes(),
                OOM.into(),
            ]
            .concat(),
            20_000,
        ),
        ("empty-hole.log", vec![0u8; 50_000], 50_000),
    ];
    for (name, bytes, nuls) in cases {
        let p = d.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let path = p.to_str().unwrap();
        let v = json_report(&["analyze", path, "--format", "json"]);
        let w = warnings_of(&v, path);
        assert!(!w.iter().any(|w| w.contains("binary")), "{name}: {w:?}");
        if name == "empty-hole.log" {
            assert_eq!(v["verdict"], "no_failure", "{name}: {v}");
            assert!(
                w.iter()
                    .any(|w| w.contains(&format!("holds only NUL bytes ({nuls}"))),
                "{name}: {w:?}"
            );
        } else {
            assert_eq!(v["findings"][0]["category"], "gpu_oom", "{name}: {v}");
            assert!(
                w.iter()
                    .any(|w| w.contains(&format!("{nuls} NUL bytes skipped"))),
                "{name}: {w:?}"
            );
        }
    }
}

/// Korean and Japanese logs in their legacy encodings (EUC-KR, EUC-JP, Shift_JIS) are decoded
/// as what they are, not as GB18030 (whose byte ranges EUC-KR shares: it would decode, as
/// mojibake), and the report names the encoding.
#[test]
fn korean_and_japanese_logs_are_decoded_as_themselves_not_as_gb18030() {
    let d = tempfile::tempdir().unwrap();
    for (enc, name, line) in [
        (
            encoding_rs::EUC_KR,
            "euc-kr",
            "학습 단계 진행 중, 데이터 로드 완료\n",
        ),
        (
            encoding_rs::EUC_JP,
            "euc-jp",
            "学習ステップを実行中、データの読み込み完了\n",
        ),
        (
            encoding_rs::SHIFT_JIS,
            "shift_jis",
            "学習ステップを実行中、データの読み込み完了\n",
        ),
    ] {
        let text = format!("{}{OOM}", line.repeat(30));
        let p = d.path().join(format!("{name}.log"));
        std::fs::write(&p, enc.encode(&text).0).unwrap();
        let v = json_report(&["analyze", p.to_str().unwrap(), "--format", "json"]);
        assert_eq!(v["findings"][0]["category"], "gpu_oom", "{name}: {v}");
        let inputs = v["inputs"].to_string();
        assert!(
            inputs.contains(&format!("\"encoding\":\"{name}\"")),
            "{name}: {inputs}"
        );
        assert!(!v.to_string().contains('\u{FFFD}'), "{name}: {v}");
    }
}

/// A stored (not deflated) zip whose first member is a `data.pkl` but which holds logs, not a
/// checkpoint's members, is read as an archive; a zip with `torch.save`'s structure stays one
/// binary input, said to be a checkpoint.
#[test]
fn a_stored_zip_with_a_data_pkl_first_is_read_unless_it_has_a_checkpoints_structure() {
    use std::io::Write;
    let d = tempfile::tempdir().unwrap();
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let pickle = [0x80, 0x02, b'}', b'q', 0, b'.'];
    let make = |members: &[(&str, &[u8])]| {
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (name, body) in members {
            w.start_file(*name, stored).unwrap();
            w.write_all(body).unwrap();
        }
        w.finish().unwrap().into_inner()
    };
    let logs = make(&[("run/data.pkl", &pickle), ("run/train.log", OOM.as_bytes())]);
    let p = d.path().join("run.zip");
    std::fs::write(&p, logs).unwrap();
    let v = json_report(&["analyze", p.to_str().unwrap(), "--format", "json"]);
    assert_eq!(v["findings"][0]["category"], "gpu_oom", "{v}");
    let ckpt = make(&[
        ("archive/data.pkl", &pickle),
        ("archive/byteorder", b"little"),
        ("archive/data/0", &[0u8; 64]),
        ("archive/version", b"3\n"),
        ("archive/.data/serialization_id", b"1234"),
    ]);
    let p = d.path().join("optimizer.pt");
    std::fs::write(&p, ckpt).unwrap();
    let path = p.to_str().unwrap();
    let v = json_report(&["analyze", path, "--format", "json"]);
    assert_eq!(v["verdict"], "no_failure", "{v}");
    let w = warnings_of(&v, path);
    assert!(w.iter().any(|w| w.contains("PyTorch checkpoint")), "{w:?}");
}

/// Zip members that the cap on all decompressed bytes together stopped before their first byte
/// are said to be stopped by that cap, once each, never "empty member" (they are not). The
/// analysis starts 4 KiB under the 32 GiB cap (decompressing 32 GiB is not affordable).
#[test]
fn zip_members_the_total_cap_stopped_at_zero_bytes_are_said_stopped_not_empty() {
    use std::io::Write;
    use std::sync::atomic::Ordering;
    let d = tempfile::tempdir().unwrap();
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let filler: String = (0..2000).map(|i| format!("step {i} loss 1.0\n")).collect();
    // Read before the cap is reached: really empty.
    w.start_file("run/empty.log", opts).unwrap();
    for name in ["a.log", "b.log", "c.log"] {
        w.start_file(format!("run/{name}"), opts).unwrap();
        w.write_all(filler.as_bytes()).unwrap();
    }
    let p = d.path().join("run.zip");
    std::fs::write(&p, w.finish().unwrap().into_inner()).unwrap();
    let engine = engine();
    let near = trainwreck::analyze::Progress::default();
    near.decompressed.store(
        trainwreck::limits::GZIP_BYTES_TOTAL - 4096,
        Ordering::Relaxed,
    );
    let path = p.display().to_string();
    let r = trainwreck::diagnose_with_progress(&engine, std::slice::from_ref(&path), 1, &near);
    let v = serde_json::to_value(&r).unwrap();
    for m in ["b.log", "c.log"] {
        let w = warnings_of(&v, &format!("{path}!/run/{m}"));
        assert_eq!(w.len(), 1, "{m}: {w:?}");
        assert!(w[0].contains("limits::GZIP_BYTES_TOTAL"), "{m}: {w:?}");
        assert!(
            w[0].starts_with("decompression stopped after 0 bytes"),
            "{m}: {w:?}"
        );
    }
    // A member that is really empty is still said to be.
    let w = warnings_of(&v, &format!("{path}!/run/empty.log"));
    assert!(w.iter().any(|w| w == "empty member"), "{w:?}");
}

/// A zip inside a zip read from stdin: both are held in memory (no random access), and the two
/// together stay under the one cap, `limits::ZIP_SPOOL_BYTES` (256 MiB): a 190 MiB zip inside a
/// 200 MiB one is refused with the reason, the rest of the outer zip is read, and the process
/// peaks under the 390 MiB the two would hold, with the cap's 256 MiB and the process's own
/// (about 30 MiB, and the spools' growth) under 384 MiB (before: 549 MB). The zips are written to disk as they are
/// made (this test process stays small: its children's peaks are other tests' bounds).
#[test]
fn a_zip_in_a_zip_on_stdin_spools_within_the_one_cap_in_all() {
    use std::io::Write;
    let d = tempfile::tempdir().unwrap();
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let mib = 1usize << 20;
    let inner = d.path().join("inner.zip");
    let mut w = zip::ZipWriter::new(std::fs::File::create(&inner).unwrap());
    w.start_file("big.bin", stored).unwrap();
    let chunk = vec![b'x'; mib];
    for _ in 0..190 {
        w.write_all(&chunk).unwrap();
    }
    w.finish().unwrap();
    let outer = d.path().join("outer.zip");
    let mut w = zip::ZipWriter::new(std::fs::File::create(&outer).unwrap());
    w.start_file("run/inner.zip", stored).unwrap();
    std::io::copy(&mut std::fs::File::open(&inner).unwrap(), &mut w).unwrap();
    w.start_file("run/filler.bin", stored).unwrap();
    for _ in 0..10 {
        w.write_all(&chunk).unwrap();
    }
    w.start_file("run/train.log", stored).unwrap();
    w.write_all(OOM.as_bytes()).unwrap();
    w.finish().unwrap();
    let (v, peak) = json_report_and_peak(&["analyze", "-", "--format", "json"], Some(&outer));
    assert_eq!(v["findings"][0]["category"], "gpu_oom", "{v}");
    let w = warnings_of(&v, "<stdin>!/run/inner.zip");
    assert!(
        w.iter()
            .any(|w| w.contains("with the zip it is in") && w.contains("ZIP_SPOOL_BYTES")),
        "{w:?}"
    );
    assert!(peak < 384 << 20, "peak RSS {} MiB", peak >> 20);
}

/// The JSON report of one run of trainwreck (stdin from `stdin`) and that run's peak RSS in
/// bytes, as its `VmHWM` (the high-water mark of its own memory since its exec) sampled every
/// millisecond until it exits: `ru_maxrss` would count the test process it was forked from.
/// A sample can only miss the very end of a peak, so this bounds from below.
fn json_report_and_peak(
    args: &[&str],
    stdin: Option<&std::path::Path>,
) -> (serde_json::Value, u64) {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("report.json");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_trainwreck"));
    cmd.args(args).stdout(std::fs::File::create(&out).unwrap());
    if let Some(p) = stdin {
        cmd.stdin(std::fs::File::open(p).unwrap());
    }
    let mut child = cmd.spawn().unwrap();
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0u64;
    let status = loop {
        if let Ok(s) = std::fs::read_to_string(&status_file)
            && let Some(kb) = s
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak = peak.max(kb * 1024);
        }
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    assert!(status.success(), "{args:?}: {status}");
    let v = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    (v, peak)
}

/// A zip of many tiny members costs little memory per member (the audit's 300k members took
/// 864 MB, 2.9 KB each; the report lists every member, so some cost per member remains): the
/// peak of 25,000 one-line members over that of one member is under 2 KiB a member, and every
/// member is listed.
#[test]
fn a_zip_of_many_tiny_members_costs_little_memory_per_member() {
    use std::io::Write;
    let d = tempfile::tempdir().unwrap();
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let peak_of = |n: usize| {
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for i in 0..n {
            w.start_file(format!("{i:x}"), stored).unwrap();
            w.write_all(b"x\n").unwrap();
        }
        let p = d.path().join(format!("many-{n}.zip"));
        std::fs::write(&p, w.finish().unwrap().into_inner()).unwrap();
        let args = ["analyze", p.to_str().unwrap(), "--format", "json"];
        let (v, peak) = json_report_and_peak(&args, None);
        assert_eq!(v["inputs"].as_array().unwrap().len(), n);
        peak
    };
    let n = 25_000;
    let (one, many) = (peak_of(1), peak_of(n));
    let per_member = many.saturating_sub(one) / n as u64;
    assert!(
        per_member < 2048,
        "{per_member} bytes a member ({} MiB for {n}, {} MiB for one)",
        many >> 20,
        one >> 20
    );
}

/// Past the member cap a zip's member list is walked, not kept (the zip reader keeps a record
/// per listed member: the audit's 300k-member zip peaked at 118 MB after the cap, 1M members at
/// 280 MB): a zip listing 350,000 members more than the cap peaks within 16 MiB of one holding
/// exactly the cap's, and the warning counts the members not read.
#[test]
fn a_zips_member_list_past_the_cap_costs_no_memory_per_member() {
    use std::io::Write;
    let cap = trainwreck::limits::ARCHIVE_MEMBERS;
    let d = tempfile::tempdir().unwrap();
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let run = |n: usize| {
        let p = d.path().join(format!("many-{n}.zip"));
        let mut w =
            zip::ZipWriter::new(std::io::BufWriter::new(std::fs::File::create(&p).unwrap()));
        for i in 0..n {
            w.start_file(format!("{i:x}"), stored).unwrap();
            w.write_all(b"x\n").unwrap();
        }
        w.finish().unwrap();
        json_report_and_peak(&["analyze", p.to_str().unwrap(), "--format", "json"], None)
    };
    let extra = 350_000;
    let ((at_cap, peak_at_cap), (over, peak_over)) = (run(cap), run(cap + extra));
    assert_eq!(at_cap["inputs"].as_array().unwrap().len(), cap);
    assert_eq!(over["inputs"].as_array().unwrap().len(), cap);
    let said = format!("{extra} members were not read, past the cap of {cap} members");
    assert!(
        over["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["message"].as_str().unwrap().contains(&said)),
        "{}",
        over["warnings"]
    );
    assert!(
        peak_over < peak_at_cap + (16 << 20),
        "{} MiB with {extra} members past the cap, {} MiB at the cap",
        peak_over >> 20,
        peak_at_cap >> 20
    );
}

/// A zip shaped as `torch.save`'s with 400,000 tensors is told a checkpoint from the head of
/// its member list (up to the member cap), walked record by record with nothing held per
/// member: it peaks within 8 MiB of a checkpoint of two tensors, and is one binary input. (It
/// took 76 MB more when every record was held; holding the 50,000 records of the capped head
/// still cost 11 MiB here and 70 MiB on a CI machine.)
#[test]
fn a_checkpoint_of_many_tensors_is_told_from_its_list_head() {
    use std::io::Write;
    let d = tempfile::tempdir().unwrap();
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let run = |tensors: usize| {
        let p = d.path().join(format!("ckpt-{tensors}.pt"));
        let mut w =
            zip::ZipWriter::new(std::io::BufWriter::new(std::fs::File::create(&p).unwrap()));
        w.start_file("archive/data.pkl", stored).unwrap();
        w.write_all(b"\x80\x02}q\x00.").unwrap();
        w.start_file("archive/version", stored).unwrap();
        w.write_all(b"3\n").unwrap();
        for i in 0..tensors {
            w.start_file(format!("archive/data/{i}"), stored).unwrap();
            w.write_all(&[0u8; 4]).unwrap();
        }
        w.finish().unwrap();
        json_report_and_peak(&["analyze", p.to_str().unwrap(), "--format", "json"], None)
    };
    let ((few, peak_few), (many, peak_many)) = (run(2), run(400_000));
    for v in [&few, &many] {
        let inputs = v["inputs"].as_array().unwrap();
        assert_eq!(inputs.len(), 1, "{v}");
        assert_eq!(inputs[0]["kind"], "binary", "{v}");
    }
    assert!(
        peak_many < peak_few + (8 << 20),
        "{} MiB for 400,000 tensors, {} MiB for two",
        peak_many >> 20,
        peak_few >> 20
    );
}

/// Several `--rules` files compile in parallel, all drawing on the one total of compiled regex
/// bytes (audit round 3, F-17 follow-up): four files each alone within the total but together
/// over it compile about a total's worth, not four. The load fails at the regex where the
/// total is passed in load order (the second file), every regex of the files after it is
/// refused without being compiled, and the errors are the same from run to run, whichever
/// file's thread got there first.
#[test]
fn rule_files_compiling_at_once_share_one_total() {
    let d = tempfile::tempdir().unwrap();
    let rules = d.path().join("rules");
    std::fs::create_dir_all(&rules).unwrap();
    // About 1 MB compiled each: 40 make 0.6 of the 64 MB total.
    let big = r"boom (?P<what>\w+) \w{60}";
    for (f, name) in ["a", "b", "c", "d"].iter().enumerate() {
        let text: String = (0..40)
            .map(|i| {
                let n = f * 100 + i;
                format!(
                    "[[rule]]\ncode = \"ACME{n:04}\"\nname = \"thing-{n}\"\ncategory = \"python_exception\"\n\
                     role = \"root\"\ntitle = \"t\"\n[rule.doc]\nwhat = \"w\"\nwhy = \"y\"\n\
                     [[rule.signature]]\nregex = '{big}'\nweight = 0.5\n[[rule.fix]]\ntext = \"f\"\n"
                )
            })
            .collect();
        std::fs::write(rules.join(format!("{name}.toml")), text).unwrap();
    }
    let log = d.path().join("one.log");
    std::fs::write(&log, "[rank0]: hello\n").unwrap();
    let args = [
        "analyze",
        log.to_str().unwrap(),
        "--rules",
        rules.to_str().unwrap(),
        "--format",
        "json",
    ];
    let (code, _, err) = trainwreck(&args);
    assert_eq!(code, 2, "{err}");
    let over: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("limits::RULE_REGEX_TOTAL_BYTES"))
        .collect();
    assert!(over[0].contains("b.toml: rule thing-1"), "{}", over[0]);
    assert!(!err.contains("a.toml: rule thing-0 signature"), "{err}");
    for file in ["c.toml", "d.toml"] {
        let refused = over
            .iter()
            .filter(|l| l.contains(file) && l.contains("nothing was left for this one"))
            .count();
        assert_eq!(refused, 40, "{file}: {over:?}");
    }
    for _ in 0..2 {
        let (code2, _, err2) = trainwreck(&args);
        assert_eq!((code2, &err2), (code, &err));
    }
}
