//! A guard for the slowdown of stop 53: four new signatures whose prefilter window every
//! healthy Megatron iteration line or Trainer metric line holds made about one line in 40 a
//! candidate line, and the whole scan 20–30 % slower, while each of them passed the literal
//! lint (which rates a literal by its trigrams, and every trigram of those literals is common).
//! This measures what the lint only estimates: each built-in rule signature's and second-tier
//! token's prefilter windows (`scan::prefilter_window`, the scanner's own choice) are run
//! through the production prefilter (`scan::shiftor::ShiftOr`) over healthy training text, and a
//! pattern that makes more than `MAX_CANDIDATE_RATE` of its lines candidates fails, named by
//! its rule code and regex.
//!
//! The background is ours: `tests/healthy/gen_logs.log.xz`, the healthy lines of
//! `scripts/gen_logs.py --size-mb 2.4 --ranks 3 --seed 3 --timeout-ranks 1` (its three rank
//! logs, one of each prefix style, each cut before its planted failure: 10,859 lines; the
//! benchmarks use seeds 1 and 2), and the logs of the healthy runs captured on GPUs under
//! `fixtures/` (too few lines for a rate of their own: a pattern is measured on both together).

use std::io::Read;
use std::path::Path;
use trainwreck::rules::KnowledgeBase;
use trainwreck::scan::prefilter_window;
use trainwreck::scan::shiftor::{ShiftOr, Window};

/// The most lines of healthy text, as a fraction, that one pattern may make candidates.
///
/// Today's distribution (printed by `built_in_signatures_rarely_watch_healthy_lines` with
/// `--nocapture`): of 412 patterns, 408 make no candidate line of the 11,101; the highest
/// makes 9 (0.08 %: `NCCL_SOCKET_IFNAME set`, which NCCL prints once per process), the next
/// 2 and 1. Stop 53's four offenders each made 2 % or more (every Megatron iteration line is
/// 2.1 % of this text, every Trainer metric dict more) and cost 20-30 % of the scan together,
/// so a pattern at the bound costs about 2 %: three times today's worst, an eighth of the
/// rarest step line's rate.
const MAX_CANDIDATE_RATE: f64 = 0.0025;

/// Healthy runs captured on GPUs: their log files (snapshots are not scanned line by line).
const HEALTHY_RUNS: &[&str] = &[
    "fixtures/corpus/11a_healthy_torchrun/run",
    "fixtures/captured/11b_healthy_torchrun_again/run",
    "fixtures/captured/23_healthy_hf_trainer/run",
    "fixtures/captured/29_run_healthy_gpt/run",
];

/// The healthy background, whole lines, each ending in a newline.
fn background() -> Vec<u8> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let xz = std::fs::File::open(root.join("tests/healthy/gen_logs.log.xz")).unwrap();
    let mut text = Vec::new();
    liblzma::read::XzDecoder::new(xz)
        .read_to_end(&mut text)
        .unwrap();
    for run in HEALTHY_RUNS {
        let mut logs: Vec<_> = walk(&root.join(run))
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .collect();
        logs.sort();
        assert!(!logs.is_empty(), "{run}: no log file");
        for p in logs {
            text.extend(std::fs::read(p).unwrap());
            if text.last() != Some(&b'\n') {
                text.push(b'\n');
            }
        }
    }
    text
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// One pattern the scanner watches for: its name in a failure and its prefilter windows.
struct Watched {
    name: String,
    windows: Vec<Window>,
}

/// Every rule signature of `kb` and every second-tier token.
fn watched(kb: &KnowledgeBase) -> Vec<Watched> {
    let mut out: Vec<Watched> = kb
        .sig_of
        .iter()
        .map(|&(ri, si)| {
            let (rule, sig) = (&kb.rules[ri], &kb.rules[ri].signatures[si]);
            Watched {
                name: format!("{} ({}) `{}`", rule.code, rule.name, sig.source),
                windows: sig.regex.literals().iter().map(prefilter_window).collect(),
            }
        })
        .collect();
    out.extend(trainwreck::tokens::table().tokens.iter().map(|t| Watched {
        name: format!("second-tier token {} `{}`", t.id, t.regex.as_str()),
        windows: t.regex.literals().iter().map(prefilter_window).collect(),
    }));
    out
}

/// The lines of `text` (starts) that `windows` make candidates.
fn candidates(windows: &[Window], text: &[u8]) -> Vec<usize> {
    let mut starts = Vec::new();
    ShiftOr::new(windows, None).candidate_lines(text, &mut starts);
    starts
}

fn line_at(text: &[u8], start: usize) -> String {
    let end = memchr_nl(&text[start..]).map_or(text.len(), |k| start + k);
    String::from_utf8_lossy(&text[start..end])
        .chars()
        .take(160)
        .collect()
}

fn memchr_nl(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}

/// Each pattern's candidate lines on `text`, highest first: (lines, name, one such line).
/// A pattern's candidate lines are among those of all the patterns together (the filter never
/// misses a window and confirms each one it flags), so each pattern is run over those alone.
fn rates(watched: &[Watched], text: &[u8]) -> Vec<(usize, String, String)> {
    let all: Vec<Window> = watched.iter().flat_map(|w| w.windows.clone()).collect();
    let mut sub = Vec::new();
    for s in candidates(&all, text) {
        sub.extend_from_slice(text[s..].split(|&c| c == b'\n').next().unwrap());
        sub.push(b'\n');
    }
    let mut out: Vec<_> = watched
        .iter()
        .map(|w| {
            let c = candidates(&w.windows, &sub);
            let example = c.first().map_or_else(String::new, |&s| line_at(&sub, s));
            (c.len(), w.name.clone(), example)
        })
        .collect();
    out.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    out
}

/// The patterns over the bound, each with its rate and a healthy line it watches.
fn offenders(watched: &[Watched], text: &[u8]) -> Vec<String> {
    let lines = text.iter().filter(|&&c| c == b'\n').count();
    let bound = (MAX_CANDIDATE_RATE * lines as f64) as usize;
    rates(watched, text)
        .into_iter()
        .take_while(|(n, _, _)| *n > bound)
        .map(|(n, name, line)| {
            format!(
                "{name}: {n} of {lines} healthy lines ({:.2} %) hold its prefilter window, e.g. {line:?}",
                100.0 * n as f64 / lines as f64
            )
        })
        .collect()
}

#[test]
fn built_in_signatures_rarely_watch_healthy_lines() {
    let kb = KnowledgeBase::load(&[]).unwrap();
    let text = background();
    let lines = text.iter().filter(|&&c| c == b'\n').count();
    assert!(lines > 10_000, "{lines} background lines");
    let w = watched(&kb);
    assert!(w.len() > 300, "{} patterns", w.len());
    let r = rates(&w, &text);
    let watching = r.iter().filter(|x| x.0 > 0).count();
    eprintln!(
        "{} patterns, {watching} with a candidate line in {lines} healthy lines; the highest:",
        r.len()
    );
    for (n, name, line) in r.iter().take(12) {
        eprintln!(
            "{n:6} ({:.3} %) {name} e.g. {line:?}",
            100.0 * *n as f64 / lines as f64
        );
    }
    let bad = offenders(&w, &text);
    assert!(
        bad.is_empty(),
        "a signature's prefilter literal is held by healthy training lines, which makes them \
         all candidate lines (stop 53: 20-30 % slower); give the literal a piece of the bad \
         value or of a message only a failing line prints:\n{}",
        bad.join("\n")
    );
}

/// A local rule keyed on a field every healthy Megatron iteration line prints, as one of stop
/// 53's four was: the literal lint lets it load; this guard names it. A rule keyed on its own
/// words beside it is not named.
#[test]
fn a_planted_literal_held_by_healthy_step_lines_is_named() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("planted.toml"),
        r#"
[[rule]]
code = "PLANT001"
name = "planted-nan-iterations"
category = "other"
role = "root"
title = "Iterations went NaN"

[rule.doc]
what = "`number of nan iterations: <n>` above zero"
why = "The loss went NaN."

[[rule.signature]]
regex = 'number of nan iterations: +(?P<n>[1-9]\d*)'
weight = 0.5

[[rule.fix]]
text = "Look at the {n} NaN iterations."

[rule.examples]
fire = ["iteration 7 | number of nan iterations:   3 |"]
silent = ["iteration 7 | number of nan iterations:   0 |"]

[[rule]]
code = "PLANT002"
name = "planted-flux-capacitor"
category = "other"
role = "root"
title = "The flux capacitor overheated"

[rule.doc]
what = "`flux capacitor <unit> overheated`"
why = "It ran hot."

[[rule.signature]]
regex = 'flux capacitor (?P<unit>\w+) overheated'
weight = 0.9

[[rule.fix]]
text = "Cool the {unit} unit."

[rule.examples]
fire = ["ERROR flux capacitor alpha overheated"]
silent = ["INFO flux capacitor alpha nominal"]
"#,
    )
    .unwrap();
    let kb = KnowledgeBase::load(&[d.path()]).expect("the literal lint lets it load");
    let bad = offenders(&watched(&kb), &background());
    assert_eq!(bad.len(), 1, "{bad:#?}");
    assert!(
        bad[0].starts_with("PLANT001 (planted-nan-iterations)"),
        "{bad:#?}"
    );
    assert!(bad[0].contains("iteration"), "{}", bad[0]);
}
