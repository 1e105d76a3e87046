//! The CLI a careful user expects (issue 19, point 3): `--color auto|always|never`, tables
//! that fit the terminal and turn into plain rows when piped, the origin said once, each
//! evidence line cited once, `origin.time` always dated, and CUDA OOMs split by who holds the
//! card. The binary runs with its environment set; a real pseudo-terminal (python3's `pty`)
//! stands in for a terminal where one matters.

mod clean_env;
use clean_env::prepare;

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_trainwreck");

fn fixture(p: &str) -> String {
    format!("{}/fixtures/{p}", env!("CARGO_MANIFEST_DIR"))
}

/// Piped: stdout is not a terminal.
fn piped(env: &[(&str, &str)], args: &[&str]) -> String {
    let mut c = Command::new(BIN);
    prepare(&mut c, env);
    let out = c.args(args).output().expect("run trainwreck");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// On a pseudo-terminal: python3's `pty.spawn` gives the binary a real tty as stdout.
fn on_tty(env: &[(&str, &str)], args: &[&str]) -> String {
    let mut py = Command::new("python3");
    prepare(&mut py, env);
    py.args(["-c", "import pty,sys; pty.spawn(sys.argv[1:])", BIN])
        .args(args);
    let out = py
        .output()
        .expect("python3 (the CI image has it) runs the binary on a pty");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

fn has_box_drawing(s: &str) -> bool {
    s.chars().any(|c| ('\u{2500}'..='\u{257f}').contains(&c))
}

#[test]
fn piped_rules_list_is_one_greppable_line_per_rule_without_escapes_or_boxes() {
    let out = piped(&[], &["rules", "list"]);
    assert!(!out.contains('\x1b'), "{out}");
    assert!(!has_box_drawing(&out), "{out}");
    // `rules list | grep nccl-watchdog-timeout`: one line with the code, name, category,
    // role and the whole title.
    let hits: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("nccl-watchdog-timeout"))
        .collect();
    assert_eq!(hits.len(), 1, "{hits:?}");
    let l = hits[0];
    assert!(
        l.starts_with("TW")
            && l.contains("nccl_timeout")
            && l.contains("NCCL watchdog: a collective timed out waiting for a peer"),
        "{l}"
    );
    // Every rule is a line of its own.
    let kb = trainwreck::rules::KnowledgeBase::load(&[]).unwrap();
    for r in &kb.rules {
        assert_eq!(
            out.lines()
                .filter(|l| l.split_whitespace().next() == Some(r.code.as_str()))
                .count(),
            1,
            "{} in:\n{out}",
            r.code
        );
    }
}

/// The widest line of a terminal's output, in columns.
fn widest(out: &str) -> usize {
    out.lines()
        .map(|l| unicode_width::UnicodeWidthStr::width(l.trim_end_matches('\r')))
        .max()
        .unwrap_or(0)
}

/// `words` each whole on one line of `out`: no table cut one in two.
fn whole(out: &str, words: &[String]) {
    for w in words {
        assert!(
            out.lines().any(|l| l.contains(w.as_str())),
            "{w:?} is cut in:\n{out}"
        );
    }
}

#[test]
fn tables_on_a_terminal_are_boxed_and_fit_columns() {
    let out = on_tty(&[("COLUMNS", "120"), ("TERM", "xterm")], &["rules", "list"]);
    assert!(has_box_drawing(&out), "{out}");
    assert!(
        widest(&out) <= 120,
        "a line is {} wide:\n{out}",
        widest(&out)
    );
    let wide = on_tty(&[("COLUMNS", "200"), ("TERM", "xterm")], &["rules", "list"]);
    assert!(
        widest(&wide) > 120 && widest(&wide) <= 200,
        "{}",
        widest(&wide)
    );
}

#[test]
fn no_table_cuts_an_identifier_at_any_width() {
    let kb = trainwreck::rules::KnowledgeBase::load(&[]).unwrap();
    let mut ids: Vec<String> = kb.rules.iter().map(|r| r.name.clone()).collect();
    ids.extend(kb.rules.iter().map(|r| r.category.to_string()));
    let pairs = fixture("pairs");
    let triage = piped(&[], &["triage", &pairs, "--format", "json"]);
    let triage: serde_json::Value = serde_json::from_str(&triage).unwrap();
    let mut tids: Vec<String> = Vec::new();
    for g in triage["groups"].as_array().unwrap() {
        for k in ["fingerprint", "category", "action"] {
            if let Some(v) = g[k].as_str() {
                tids.push(v.to_string());
            }
        }
    }
    assert!(tids.len() >= 6, "{triage}");
    for cols in ["60", "80", "100", "120", "160"] {
        let env = [("COLUMNS", cols), ("TERM", "xterm")];
        let w: usize = cols.parse().unwrap();
        for (args, ids) in [
            (vec!["rules", "list"], &ids),
            (vec!["triage", pairs.as_str()], &tids),
            (vec!["--lang", "zh", "rules", "list"], &ids),
        ] {
            let out = on_tty(&env, &args);
            whole(&out, ids);
            // Boxed only when the box fits; else plain rows the terminal folds.
            if has_box_drawing(&out) {
                assert!(widest(&out) <= w, "{args:?} at {cols}:\n{out}");
            }
        }
    }
    // Prose wraps at spaces: a boxed rules list at 120 keeps every word of every title.
    let out = on_tty(&[("COLUMNS", "120"), ("TERM", "xterm")], &["rules", "list"]);
    let cells: String = out
        .lines()
        .map(|l| l.trim_matches(|c: char| c == '│' || c.is_whitespace()))
        .collect::<Vec<_>>()
        .join(" ");
    for r in &kb.rules {
        for word in r.title.en.split([' ', '/']) {
            assert!(cells.contains(word), "{word:?} of {} cut:\n{out}", r.code);
        }
    }
}

#[test]
fn history_tables_follow_the_terminal_as_the_others_do() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db").display().to_string();
    let seed = fixture("seed-bus-error");
    let hosts = ["trainer-node-0001.example", "trainer-node-0002.example"];
    for h in hosts {
        piped(
            &[],
            &["analyze", &seed, "--record", "--db", &db, "--host", h],
        );
    }
    let v = json(&["analyze", &seed, "--format", "json"]);
    let fp = v["fingerprint"].as_str().unwrap().to_string();
    let mut ids: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
    ids.push(fp.clone());
    for args in [
        vec!["history", "--db", &db, "list"],
        vec!["history", "--db", &db, "show", &fp],
        vec!["history", "--db", &db, "hosts"],
    ] {
        let out = piped(&[], &args);
        assert!(!has_box_drawing(&out), "{args:?} piped:\n{out}");
        assert!(out.contains(&fp) || args[3] == "hosts", "{args:?}:\n{out}");
        for cols in ["60", "80", "200"] {
            let out = on_tty(&[("COLUMNS", cols), ("TERM", "xterm")], &args);
            let w: usize = cols.parse().unwrap();
            if has_box_drawing(&out) {
                let table: String = out.lines().filter(|l| has_box_drawing(l)).collect();
                assert!(!table.is_empty());
                for l in out.lines().filter(|l| has_box_drawing(l)) {
                    assert!(widest(l) <= w, "{args:?} at {cols}:\n{out}");
                }
            }
            let shown: Vec<String> = ids
                .iter()
                .filter(|i| piped(&[], &args).contains(i.as_str()))
                .cloned()
                .collect();
            whole(&out, &shown);
        }
        let wide = on_tty(&[("COLUMNS", "200"), ("TERM", "xterm")], &args);
        assert!(has_box_drawing(&wide), "{args:?} at 200:\n{wide}");
    }
}

/// The paragraph under `heading` (up to the next blank line), its lines as printed.
fn section<'a>(out: &'a str, heading: &str) -> Vec<&'a str> {
    out.lines()
        .map(|l| l.trim_end_matches('\r'))
        .skip_while(|l| *l != heading)
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect()
}

#[test]
fn fix_paragraphs_wrap_to_the_terminal_never_inside_a_word_or_a_command() {
    let seed = fixture("seed-bus-error");
    for (lang, heading) in [("en", "Fix"), ("zh", "修复建议")] {
        let args = ["--color", "never", "--lang", lang, "analyze", seed.as_str()];
        let piped_out = piped(&[], &args);
        let whole_fix = section(&piped_out, heading);
        assert_eq!(whole_fix.len(), 1, "piped: one line\n{whole_fix:?}");
        let out = on_tty(&[("COLUMNS", "60"), ("TERM", "xterm")], &args);
        let fix = section(&out, heading);
        assert!(fix.len() > 2, "{lang}: wrapped\n{out}");
        for l in &fix {
            assert!(
                widest(l) <= 60 && l.starts_with("  "),
                "{lang}: {l:?}\n{out}"
            );
            assert_eq!(l.matches('`').count() % 2, 0, "a command cut: {l:?}");
        }
        // The same words: joined back, the wrapped paragraph is the piped one.
        let sep = if lang == "en" { " " } else { "" };
        let joined: Vec<&str> = fix.iter().map(|l| l.trim()).collect();
        let joined = joined.join(sep);
        let plain: String = whole_fix[0].trim().to_string();
        if lang == "en" {
            assert_eq!(joined, plain);
        } else {
            // Chinese breaks beside a CJK character, or at a space that the join drops.
            assert_eq!(joined.replace(' ', ""), plain.replace(' ', ""));
        }
    }
}

#[test]
fn color_auto_always_never() {
    let seed = fixture("seed-bus-error");
    let a = ["analyze", seed.as_str()];
    // Piped: no colour unless asked.
    assert!(!piped(&[], &a).contains('\x1b'));
    assert!(piped(&[], &["--color", "always", "analyze", &seed]).contains("\x1b[1;31m"));
    assert!(piped(&[], &["analyze", &seed, "--color=always"]).contains("\x1b["));
    // A terminal: colour, unless TERM=dumb, NO_COLOR, or never.
    assert!(on_tty(&[("TERM", "xterm")], &a).contains("\x1b[1;31m"));
    assert!(!on_tty(&[("TERM", "dumb")], &a).contains('\x1b'));
    assert!(!on_tty(&[("TERM", "xterm"), ("NO_COLOR", "1")], &a).contains('\x1b'));
    // An empty NO_COLOR is as if unset.
    assert!(on_tty(&[("TERM", "xterm"), ("NO_COLOR", "")], &a).contains('\x1b'));
    let never = ["analyze", seed.as_str(), "--color", "never"];
    assert!(!on_tty(&[("TERM", "xterm")], &never).contains('\x1b'));
    // The old flag still means never.
    let no_color = ["analyze", seed.as_str(), "--no-color"];
    assert!(!on_tty(&[("TERM", "xterm")], &no_color).contains('\x1b'));
    // Colour never changes the words.
    let strip = |s: &str| {
        let mut out = String::new();
        let mut it = s.chars();
        while let Some(c) = it.next() {
            if c == '\x1b' {
                for d in it.by_ref() {
                    if d == 'm' {
                        break;
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    };
    assert_eq!(
        strip(&piped(&[], &["--color", "always", "analyze", &seed])),
        piped(&[], &a)
    );
}

#[test]
fn the_origin_is_said_once_in_the_header() {
    let out = piped(&[], &["analyze", &fixture("seed-bus-error")]);
    let header = out.split("\nEvidence").next().unwrap();
    assert_eq!(header.matches("c0a8f1e2d4b5").count(), 1, "{header}");
    assert_eq!(header.matches("rank 2").count(), 1, "{header}");
    assert!(
        header.contains("started: rank 2, host c0a8f1e2d4b5"),
        "{header}"
    );
}

fn json(args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&piped(&[], args)).expect("JSON")
}

#[test]
fn a_long_line_matched_by_two_signatures_is_cited_once_with_its_longest_text() {
    // The corpus OOM message is 480 characters, matched by two signatures of the rule: two
    // excerpts (windows around each match), one line.
    let v = json(&[
        "analyze",
        &fixture("corpus/03a_cuda_oom_python"),
        "--format",
        "json",
    ]);
    let mut seen = std::collections::BTreeSet::new();
    for f in v["findings"].as_array().unwrap() {
        seen.clear();
        for e in f["evidence"].as_array().unwrap() {
            if let Some(l) = e["line"].as_u64() {
                let key = (e["path"].as_str().unwrap().to_string(), l);
                assert!(seen.insert(key.clone()), "{key:?} cited twice in {f}");
            }
        }
    }
    let top = &v["findings"][0]["evidence"][0];
    assert_eq!(top["line"], 48);
    let text = top["text"].as_str().unwrap();
    assert!(
        text.contains("Tried to allocate 2.00 GiB") && text.contains("expandable_segments"),
        "the longest excerpt is kept: {text}"
    );
    let out = piped(&[], &["analyze", &fixture("corpus/03a_cuda_oom_python")]);
    assert_eq!(out.matches("run/console.log:48").count(), 1, "{out}");
}

fn iso_dated(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() >= 19
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
}

#[test]
fn origin_time_is_always_iso_with_its_date_across_the_corpus() {
    let mut n = 0;
    // The corpus and captured runs, and the pastes whose only times are glog's or syslog's.
    let mut dirs: Vec<std::path::PathBuf> = Vec::new();
    for dir in ["corpus", "captured"] {
        for e in std::fs::read_dir(fixture(dir)).unwrap() {
            dirs.push(e.unwrap().path());
        }
    }
    for p in [
        "P10_watchdog_timeout_1ms",
        "H09_gai_warnings_then_rendezvous_succeeds",
        "P13v_ib_retry_exceeded_current_nccl",
    ] {
        dirs.push(fixture(&format!("pastes/{p}")).into());
    }
    {
        for p in dirs {
            if !p.is_dir() {
                continue;
            }
            let v = json(&["analyze", p.to_str().unwrap(), "--format", "json"]);
            for f in v["findings"].as_array().unwrap() {
                if let Some(t) = f["origin"]["time"].as_str() {
                    assert!(
                        iso_dated(t),
                        "{}: {} has origin.time {t:?}",
                        p.display(),
                        f["rule"]
                    );
                    n += 1;
                }
            }
        }
    }
    assert!(n > 20, "only {n} origin times seen");
    // The corpus rendezvous timeout logs glog times only: dated from the run's other lines.
    let v = json(&[
        "analyze",
        &fixture("corpus/22a_rendezvous_timeout"),
        "--format",
        "json",
    ]);
    let t = v["findings"][0]["origin"]["time"].as_str().unwrap();
    assert!(t.starts_with("2026-11-29T19:55:55"), "{t}");
}

/// A log whose only times are glog's (no year), with the file's modification time set.
fn glog_run(mtime: std::time::SystemTime) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("rank0.log");
    std::fs::write(
        &p,
        "[rank0]:[E0301 10:00:04.020587669 CUDACachingAllocator.cpp:1000] step 7\n\
         [rank0]:[E0301 10:00:05.120000000 train.py:88] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 10.00 MiB is free.\n",
    )
    .unwrap();
    std::fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    d
}

fn at(y: i64, m: u32, d: u32) -> std::time::SystemTime {
    // Days from the civil date (proleptic Gregorian), as the analysis reads them back.
    let (y, m) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m as i64 + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    std::time::UNIX_EPOCH + std::time::Duration::from_secs((days * 86_400 + 43_200) as u64)
}

#[test]
fn a_year_less_glog_time_takes_its_year_from_the_files_mtime() {
    let d = glog_run(at(2023, 6, 15));
    let v = json(&["analyze", d.path().to_str().unwrap(), "--format", "json"]);
    let t = v["findings"][0]["origin"]["time"].as_str().unwrap();
    assert!(t.starts_with("2023-03-01T10:00:05"), "{t}");
    // A file last written in February holds March lines of the year before.
    let d = glog_run(at(2023, 2, 1));
    let v = json(&["analyze", d.path().to_str().unwrap(), "--format", "json"]);
    let t = v["findings"][0]["origin"]["time"].as_str().unwrap();
    assert!(t.starts_with("2022-03-01T10:00:05"), "{t}");
}

fn fingerprint_and_fix(path: &str) -> (String, String) {
    let v = json(&["analyze", path, "--format", "json"]);
    (
        v["fingerprint"].as_str().unwrap().to_string(),
        v["findings"][0]["fix"].as_str().unwrap().to_string(),
    )
}

/// An OOM in PyTorch 2.x's layout, written for this test: `other` names another process on
/// the card, which PyTorch's allocator reports as `Process N has … memory in use`.
fn oom_run(other: bool) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let line = if other {
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 3 has a total capacity of 79.15 GiB of which 12.00 MiB is free. Process 5120 has 60.20 GiB memory in use. Including non-PyTorch memory, this process has 18.90 GiB memory in use. Of the allocated memory 17.80 GiB is allocated by PyTorch, and 600.00 MiB is reserved by PyTorch but unallocated."
    } else {
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 3 has a total capacity of 79.15 GiB of which 12.00 MiB is free. Including non-PyTorch memory, this process has 79.10 GiB memory in use. Of the allocated memory 77.80 GiB is allocated by PyTorch, and 700.00 MiB is reserved by PyTorch but unallocated."
    };
    std::fs::write(
        d.path().join("train.log"),
        format!("epoch 1 step 40 loss 2.31\n{line}\n"),
    )
    .unwrap();
    d
}

#[test]
fn cuda_oom_held_by_another_process_has_its_own_fingerprint_and_fix() {
    let (own_fp, own_fix) = fingerprint_and_fix(&fixture("corpus/03a_cuda_oom_python"));
    let (other_fp, other_fix) = fingerprint_and_fix(&fixture("captured/24_cuda_oom_other_process"));
    assert!(own_fp.starts_with("fp2:") && other_fp.starts_with("fp2:"));
    assert_ne!(own_fp, other_fp, "different fixes, different fingerprints");
    assert!(own_fix.contains("micro-batch"), "{own_fix}");
    assert!(
        other_fix.contains("pid 3808") && other_fix.contains("free the card"),
        "{other_fix}"
    );
    assert!(
        !other_fix.contains("multiply the micro-batch"),
        "{other_fix}"
    );
    // The same two cases in our own words group with them.
    let mine_own = oom_run(false);
    let mine_other = oom_run(true);
    let (fp, fix) = fingerprint_and_fix(mine_own.path().to_str().unwrap());
    assert_eq!(fp, own_fp, "{fix}");
    let (fp, fix) = fingerprint_and_fix(mine_other.path().to_str().unwrap());
    assert_eq!(fp, other_fp, "{fix}");
    assert!(fix.contains("pid 5120: 60.2 GiB"), "{fix}");
    // A PyTorch-held OOM keeps the digits fp1 gave it: only the prefix moved.
    assert_eq!(own_fp, "fp2:fb5f2715e424a8e2");
}
