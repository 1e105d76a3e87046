//! Messy pastes, tested systematically: every built-in rule's `fire` examples are mangled the
//! way real pastes are (terminal wraps, `\r` progress bars, markdown fences, blank lines,
//! launcher prefixes, Chinese text around, log-viewer tables, Python reprs, two ranks
//! interleaved on one line) and read through the production path
//! (`Engine::signature_hits`, as `analyze` reads a file). A rule must still fire on every one
//! of its mangled examples, or be listed in `CANNOT_SURVIVE` with the reason; a listed rule that
//! starts surviving fails the test too, so the list only ever shrinks.

use std::collections::BTreeSet;
use trainwreck::analyze::Engine;
use trainwreck::model::RuleStatus;
use trainwreck::rules::KnowledgeBase;

/// The name a mangled example is read under: a pasted text, kind from its content.
const PASTE: &str = "paste.txt";

/// One way of mangling a paste: its name (used in `CANNOT_SURVIVE`) and what it does to a
/// whole example (which may hold several lines).
struct Mangling {
    name: &'static str,
    apply: fn(&str) -> String,
}

fn per_line(text: &str, f: impl Fn(&str) -> String) -> String {
    text.lines().map(f).collect::<Vec<_>>().join("\n")
}

/// A terminal `width` columns wide hard-wraps every longer line: a newline every `width`
/// characters, wherever it falls (mid-word, mid-number).
fn wrap(text: &str, width: usize, joint: &str) -> String {
    per_line(text, |l| {
        let chars: Vec<char> = l.chars().collect();
        chars
            .chunks(width)
            .map(|c| c.iter().collect::<String>())
            .collect::<Vec<_>>()
            .join(joint)
    })
}

/// Python's `repr()` of a string holding the example's lines: quotes chosen as Python does,
/// backslashes doubled, newlines written as a literal `\n`.
fn python_repr(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::new();
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Two ranks printing the same line at the same moment, each write landing right after the
/// other's: every run of word characters and every run of other characters comes twice
/// (`KeyError: 'x'` → `KeyErrorKeyError: ': 'xx''`).
fn interleave(line: &str) -> String {
    let mut out = String::new();
    let mut run = String::new();
    let mut word = None;
    for c in line.chars() {
        let w = c.is_alphanumeric() || c == '_';
        if word.is_some_and(|x| x != w) {
            out.push_str(&run);
            out.push_str(&run);
            run.clear();
        }
        word = Some(w);
        run.push(c);
    }
    out.push_str(&run);
    out.push_str(&run);
    out
}

const BAR: &str = "  45%|████▌     | 45/100 [00:10<00:12,  4.5it/s]\r";

fn manglings() -> Vec<Mangling> {
    vec![
        Mangling {
            name: "wrap-80",
            apply: |t| wrap(t, 80, "\n"),
        },
        Mangling {
            name: "wrap-120",
            apply: |t| wrap(t, 120, "\n"),
        },
        Mangling {
            name: "wrap-183",
            apply: |t| wrap(t, 183, "\n"),
        },
        // tmux/screen copy of a wrapped row: the break kept as the row's padding (P26).
        Mangling {
            name: "tmux-pad-80",
            apply: |t| wrap(t, 80, &" ".repeat(24)),
        },
        Mangling {
            name: "tmux-pad-120",
            apply: |t| wrap(t, 120, &" ".repeat(24)),
        },
        Mangling {
            name: "progress-bar-cr",
            apply: |t| per_line(t, |l| format!("{BAR}{l}")),
        },
        Mangling {
            name: "md-fence",
            apply: |t| format!("```text\n{t}\n```\n"),
        },
        Mangling {
            name: "md-fence-bare",
            apply: |t| format!("```\n{t}\n```"),
        },
        Mangling {
            name: "md-fence-glued",
            apply: |t| format!("```{t}```"),
        },
        Mangling {
            name: "blank-lines",
            apply: |t| t.lines().collect::<Vec<_>>().join("\n\n"),
        },
        Mangling {
            name: "prefix-rank",
            apply: |t| per_line(t, |l| format!("[rank3]: {l}")),
        },
        Mangling {
            name: "prefix-default",
            apply: |t| per_line(t, |l| format!("[default3]:{l}")),
        },
        // torchrun's `--local-ranks-filter`/`-l` and `srun --label` write the same `3: `.
        Mangling {
            name: "prefix-label",
            apply: |t| per_line(t, |l| format!("3: {l}")),
        },
        Mangling {
            name: "prefix-deepspeed",
            apply: |t| {
                per_line(t, |l| {
                    format!("[2026-11-29 18:57:00,219] [INFO] [launch.py:351:main] {l}")
                })
            },
        },
        Mangling {
            name: "prefix-ray",
            apply: |t| per_line(t, |l| format!("(RayTrainWorker pid=4242) {l}")),
        },
        Mangling {
            name: "prefix-kubectl",
            apply: |t| per_line(t, |l| format!("2026-11-29T18:57:00.219034561Z {l}")),
        },
        Mangling {
            name: "log-viewer-table",
            apply: |t| {
                t.lines()
                    .enumerate()
                    .map(|(i, l)| format!("{} | 2026-11-29 18:57:00 | {l}", 123 + i))
                    .collect::<Vec<_>>()
                    .join("\n")
            },
        },
        Mangling {
            name: "zh-same-line",
            apply: |t| format!("训练报错了，求助：{t}请问怎么解决？"),
        },
        Mangling {
            name: "zh-own-lines",
            apply: |t| format!("训练报错了，求助：\n{t}\n请问怎么解决？\n"),
        },
        Mangling {
            name: "python-repr",
            apply: python_repr,
        },
        Mangling {
            name: "ranks-interleaved",
            apply: |t| per_line(t, interleave),
        },
    ]
}

/// (mangling, rule code, why the rule cannot survive it). Every entry is a rule at least one
/// of whose fire examples stops firing under that mangling; the test fails when an entry
/// starts surviving (remove it) or a rule not listed stops surviving.
const CANNOT_SURVIVE: &[(&str, &str, &str)] = &[
    ("blank-lines", "TW0503", R_CODE_LAYOUT), // 4 of 4 examples lost
    ("log-viewer-table", "TW0503", R_CODE_LAYOUT), // 4 of 4 examples lost
    ("log-viewer-table", "TW1801", R_BARE_SIGNAL_LINE), // 1 of 22 examples lost
    ("md-fence-glued", "TW0503", R_CODE_LAYOUT), // 4 of 4 examples lost
    ("md-fence-glued", "TW1801", R_BARE_SIGNAL_LINE), // 1 of 22 examples lost
    ("prefix-deepspeed", "TW0503", R_CODE_LAYOUT), // 4 of 4 examples lost
    ("prefix-deepspeed", "TW1801", R_BARE_SIGNAL_LINE), // 1 of 22 examples lost
    ("prefix-default", "TW0503", R_CODE_LAYOUT), // 4 of 4 examples lost
    ("prefix-default", "TW1801", R_BARE_SIGNAL_LINE), // 1 of 22 examples lost
    ("prefix-kubectl", "TW0503", R_CODE_LAYOUT), // 4 of 4 examples lost
    ("prefix-kubectl", "TW1801", R_BARE_SIGNAL_LINE), // 1 of 22 examples lost
    ("prefix-label", "TW0503", R_CODE_LAYOUT), // 4 of 4 examples lost
    ("prefix-label", "TW1801", R_BARE_SIGNAL_LINE), // 1 of 22 examples lost
    ("prefix-rank", "TW0503", R_CODE_LAYOUT), // 4 of 4 examples lost
    ("prefix-rank", "TW1801", R_BARE_SIGNAL_LINE), // 1 of 22 examples lost
    ("prefix-ray", "TW0503", R_CODE_LAYOUT),  // 4 of 4 examples lost
    ("prefix-ray", "TW1801", R_BARE_SIGNAL_LINE), // 1 of 22 examples lost
    ("progress-bar-cr", "TW0503", R_CODE_LAYOUT), // 4 of 4 examples lost
    ("python-repr", "TW0208", R_REPR_CONTEXT), // 1 of 4 examples lost
    ("python-repr", "TW0209", R_REPR_CONTEXT), // 3 of 4 examples lost
    ("python-repr", "TW0503", R_CODE_LAYOUT), // 4 of 4 examples lost
    ("python-repr", "TW0590", R_REPR_CONTEXT), // 1 of 1 examples lost
    ("python-repr", "TW1107", R_REPR_CONTEXT), // 1 of 1 examples lost
    ("python-repr", "TW1604", R_REPR_CONTEXT), // 1 of 1 examples lost
    ("python-repr", "TW1802", R_REPR_CONTEXT), // 1 of 3 examples lost
    ("python-repr", "TW2003", R_REPR_CONTEXT), // 5 of 5 examples lost
    ("python-repr", "TW2006", R_REPR_CONTEXT), // 2 of 2 examples lost
    ("python-repr", "TW2169", R_REPR_CONTEXT), // 1 of 3 examples lost
    ("python-repr", "TW2304", R_REPR_CONTEXT), // 1 of 1 examples lost
    ("ranks-interleaved", "TW0103", R_INTERLEAVE), // 1 of 3 examples lost
    ("ranks-interleaved", "TW0105", R_INTERLEAVE), // 1 of 3 examples lost
    ("ranks-interleaved", "TW0106", R_INTERLEAVE), // 3 of 6 examples lost
    ("ranks-interleaved", "TW0107", R_INTERLEAVE), // 2 of 2 examples lost
    ("ranks-interleaved", "TW0201", R_INTERLEAVE), // 2 of 4 examples lost
    ("ranks-interleaved", "TW0202", R_INTERLEAVE), // 1 of 8 examples lost
    ("ranks-interleaved", "TW0203", R_INTERLEAVE), // 5 of 9 examples lost
    ("ranks-interleaved", "TW0204", R_INTERLEAVE), // 3 of 6 examples lost
    ("ranks-interleaved", "TW0206", R_INTERLEAVE), // 1 of 3 examples lost
    ("ranks-interleaved", "TW0208", R_INTERLEAVE), // 4 of 4 examples lost
    ("ranks-interleaved", "TW0209", R_INTERLEAVE), // 4 of 4 examples lost
    ("ranks-interleaved", "TW0268", R_INTERLEAVE), // 3 of 3 examples lost
    ("ranks-interleaved", "TW0301", R_INTERLEAVE), // 2 of 19 examples lost
    ("ranks-interleaved", "TW0302", R_INTERLEAVE), // 3 of 3 examples lost
    ("ranks-interleaved", "TW0304", R_INTERLEAVE), // 2 of 2 examples lost
    ("ranks-interleaved", "TW0305", R_INTERLEAVE), // 2 of 2 examples lost
    ("ranks-interleaved", "TW0306", R_INTERLEAVE), // 3 of 3 examples lost
    ("ranks-interleaved", "TW0401", R_INTERLEAVE), // 7 of 9 examples lost
    ("ranks-interleaved", "TW0411", R_INTERLEAVE), // 2 of 2 examples lost
    ("ranks-interleaved", "TW0502", R_INTERLEAVE), // 2 of 2 examples lost
    ("ranks-interleaved", "TW0503", R_CODE_LAYOUT), // 4 of 4 examples lost
    ("ranks-interleaved", "TW0550", R_INTERLEAVE), // 3 of 3 examples lost
    ("ranks-interleaved", "TW0590", R_INTERLEAVE), // 1 of 1 examples lost
    ("ranks-interleaved", "TW0601", R_INTERLEAVE), // 8 of 14 examples lost
    ("ranks-interleaved", "TW0602", R_INTERLEAVE), // 4 of 4 examples lost
    ("ranks-interleaved", "TW0603", R_INTERLEAVE), // 1 of 1 examples lost
    ("ranks-interleaved", "TW0604", R_INTERLEAVE), // 3 of 3 examples lost
    ("ranks-interleaved", "TW0605", R_INTERLEAVE), // 2 of 2 examples lost
    ("ranks-interleaved", "TW0611", R_INTERLEAVE), // 1 of 4 examples lost
    ("ranks-interleaved", "TW0701", R_INTERLEAVE), // 6 of 10 examples lost
    ("ranks-interleaved", "TW0702", R_INTERLEAVE), // 2 of 2 examples lost
    ("ranks-interleaved", "TW0703", R_INTERLEAVE), // 4 of 6 examples lost
    ("ranks-interleaved", "TW0801", R_INTERLEAVE), // 6 of 7 examples lost
    ("ranks-interleaved", "TW0901", R_INTERLEAVE), // 1 of 7 examples lost
    ("ranks-interleaved", "TW0902", R_INTERLEAVE), // 2 of 3 examples lost
    ("ranks-interleaved", "TW0903", R_INTERLEAVE), // 1 of 2 examples lost
    ("ranks-interleaved", "TW0905", R_INTERLEAVE), // 1 of 4 examples lost
    ("ranks-interleaved", "TW0906", R_INTERLEAVE), // 3 of 3 examples lost
    ("ranks-interleaved", "TW0950", R_INTERLEAVE), // 3 of 3 examples lost
    ("ranks-interleaved", "TW0951", R_INTERLEAVE), // 7 of 7 examples lost
    ("ranks-interleaved", "TW1002", R_INTERLEAVE), // 4 of 4 examples lost
    ("ranks-interleaved", "TW1101", R_INTERLEAVE), // 2 of 8 examples lost
    ("ranks-interleaved", "TW1102", R_INTERLEAVE), // 3 of 3 examples lost
    ("ranks-interleaved", "TW1104", R_INTERLEAVE), // 2 of 3 examples lost
    ("ranks-interleaved", "TW1107", R_INTERLEAVE), // 1 of 1 examples lost
    ("ranks-interleaved", "TW1170", R_INTERLEAVE), // 5 of 8 examples lost
    ("ranks-interleaved", "TW1202", R_INTERLEAVE), // 2 of 2 examples lost
    ("ranks-interleaved", "TW1203", R_INTERLEAVE), // 4 of 4 examples lost
    ("ranks-interleaved", "TW1204", R_INTERLEAVE), // 3 of 3 examples lost
    ("ranks-interleaved", "TW1301", R_INTERLEAVE), // 1 of 4 examples lost
    ("ranks-interleaved", "TW1302", R_INTERLEAVE), // 2 of 2 examples lost
    ("ranks-interleaved", "TW1401", R_INTERLEAVE), // 4 of 6 examples lost
    ("ranks-interleaved", "TW1402", R_INTERLEAVE), // 1 of 1 examples lost
    ("ranks-interleaved", "TW1601", R_INTERLEAVE), // 2 of 9 examples lost
    ("ranks-interleaved", "TW1604", R_INTERLEAVE), // 1 of 1 examples lost
    ("ranks-interleaved", "TW1605", R_INTERLEAVE), // 1 of 2 examples lost
    ("ranks-interleaved", "TW1606", R_INTERLEAVE), // 2 of 2 examples lost
    ("ranks-interleaved", "TW1650", R_INTERLEAVE), // 2 of 2 examples lost
    ("ranks-interleaved", "TW1801", R_INTERLEAVE), // 6 of 13 examples lost
    ("ranks-interleaved", "TW1802", R_INTERLEAVE), // 3 of 3 examples lost
    ("ranks-interleaved", "TW1851", R_INTERLEAVE), // 7 of 7 examples lost
    ("ranks-interleaved", "TW1902", R_INTERLEAVE), // 7 of 7 examples lost
    ("ranks-interleaved", "TW1903", R_INTERLEAVE), // 7 of 7 examples lost
    ("ranks-interleaved", "TW2001", R_INTERLEAVE), // 7 of 13 examples lost
    ("ranks-interleaved", "TW2002", R_INTERLEAVE), // 7 of 7 examples lost
    ("ranks-interleaved", "TW2003", R_INTERLEAVE), // 5 of 5 examples lost
    ("ranks-interleaved", "TW2004", R_INTERLEAVE), // 2 of 2 examples lost
    ("ranks-interleaved", "TW2005", R_INTERLEAVE), // 3 of 3 examples lost
    ("ranks-interleaved", "TW2006", R_INTERLEAVE), // 2 of 2 examples lost
    ("ranks-interleaved", "TW2050", R_INTERLEAVE), // 4 of 4 examples lost
    ("ranks-interleaved", "TW2051", R_INTERLEAVE), // 2 of 2 examples lost
    ("ranks-interleaved", "TW2104", R_INTERLEAVE), // 2 of 2 examples lost
    ("ranks-interleaved", "TW2105", R_INTERLEAVE), // 3 of 4 examples lost
    ("ranks-interleaved", "TW2109", R_INTERLEAVE), // 2 of 2 examples lost
    ("ranks-interleaved", "TW2111", R_INTERLEAVE), // 1 of 1 examples lost
    ("ranks-interleaved", "TW2114", R_INTERLEAVE), // 4 of 4 examples lost
    ("ranks-interleaved", "TW2117", R_INTERLEAVE), // 2 of 2 examples lost
    ("ranks-interleaved", "TW2150", R_INTERLEAVE), // 2 of 2 examples lost
    ("ranks-interleaved", "TW2169", R_INTERLEAVE), // 1 of 3 examples lost
    ("ranks-interleaved", "TW2201", R_INTERLEAVE), // 5 of 11 examples lost
    ("ranks-interleaved", "TW2202", R_INTERLEAVE), // 5 of 6 examples lost
    ("ranks-interleaved", "TW2203", R_INTERLEAVE), // 3 of 3 examples lost
    ("ranks-interleaved", "TW2204", R_INTERLEAVE), // 3 of 3 examples lost
    ("ranks-interleaved", "TW2302", R_INTERLEAVE), // 1 of 5 examples lost
    ("ranks-interleaved", "TW2303", R_INTERLEAVE), // 3 of 3 examples lost
    ("ranks-interleaved", "TW2304", R_INTERLEAVE), // 1 of 1 examples lost
    ("ranks-interleaved", "TW2402", R_INTERLEAVE), // 1 of 6 examples lost
    ("ranks-interleaved", "TW2451", R_INTERLEAVE), // 1 of 3 examples lost
    ("ranks-interleaved", "TW2501", R_INTERLEAVE), // 9 of 10 examples lost
    ("ranks-interleaved", "TW2502", R_INTERLEAVE), // 2 of 2 examples lost
    ("ranks-interleaved", "TW2503", R_INTERLEAVE), // 1 of 9 examples lost
    ("ranks-interleaved", "TW2504", R_INTERLEAVE), // 2 of 2 examples lost
    ("tmux-pad-80", "TW1202", R_PAD_PIECE),   // 1 of 2 examples lost
    ("wrap-80", "TW0209", R_WRAP_WIDEST_GLYPHS), // 1 of 4 examples lost
    ("wrap-80", "TW1903", R_WRAP_GLYPHS),     // 1 of 7 examples lost
    ("wrap-80", "TW2202", R_WRAP_GLYPHS),     // 1 of 6 examples lost
    ("zh-same-line", "TW0203", R_CJK_IN_PROSE), // 1 of 15 examples lost
    ("zh-same-line", "TW0503", R_CODE_LAYOUT), // 4 of 4 examples lost
    ("zh-same-line", "TW1801", R_BARE_SIGNAL_LINE), // 1 of 22 examples lost
];

/// The engine joins a terminal's wrapped rows by their length in bytes (`analyze`'s
/// `wrapped_lines`); a row holding tqdm's block glyphs (three bytes, one column) is shorter
/// in bytes than the full rows, so a line wrapped twice or more around one is not rejoined.
const R_WRAP_GLYPHS: &str = "a wrapped row with multi-byte progress-bar glyphs is shorter in bytes than the terminal width, so the rows are not rejoined";

/// The copy kept the wrap's padding inside the line (P26). The engine closes such runs
/// (`analyze`'s `padded_rows`, every way for up to three runs), but a joined line counts only
/// for a match no piece holds alone; a `df` row's first piece already matches, as a mount
/// path cut short, so the whole row's hit is dropped as a duplicate of a piece's.
const R_WRAP_WIDEST_GLYPHS: &str = "a progress-bar row's multi-byte glyphs make it the chunk's longest line in bytes, so the rows the terminal cut at its width are shorter than it and are not rejoined";
const R_PAD_PIECE: &str = "the row's first piece alone matches (a cut mount path), so the rejoined row's hit is taken for a duplicate";

/// A message in Chinese (the shell's `已杀死` under a Chinese locale) glued to Chinese prose on
/// both sides: nothing tells the message from the prose, so the anchored line is not peeled out.
const R_CJK_IN_PROSE: &str = "a Chinese message glued to Chinese prose cannot be told from it, so its anchored form is not found";

/// A table row whose rule needs the table's header on an earlier line (`preceded_by`): a
/// Python repr puts header and row on one line, where the row is found but its context is not.
const R_REPR_CONTEXT: &str = "a repr keeps the header and the row on one line, and `preceded_by` looks only at earlier lines";

/// A rule that reads pasted source code (a call under a main-process-only `if`) needs the two
/// lines as the code's own, consecutive and indented as written: a prefix, a bar, a blank line
/// or a repr between them is not that code any more.
const R_CODE_LAYOUT: &str = "a rule over pasted source code needs its lines consecutive and indented as written; a prefix, bar, blank line or repr between them is not that code";

/// The shell's bare signal line (`浮点数例外(吐核)`, `Floating point exception`) is read only
/// as a whole line: the same words begin prose sentences, so a prefix glued before it hides it.
const R_BARE_SIGNAL_LINE: &str = "a bare signal-name line is read only as the whole line (the same words begin prose), so a glued prefix hides it";

/// Every run of characters comes twice, so no literal survives anywhere in the line; the
/// engine has no de-interleaving of two writers yet (not seen in the real pastes of fixtures/pastes/).
const R_INTERLEAVE: &str =
    "two ranks' writes interleaved destroy every literal of the line; no de-interleaving yet";

#[test]
fn every_rule_survives_messy_pastes_or_says_why_not() {
    let kb = KnowledgeBase::load(&[]).expect("built-in rules load");
    let engine = Engine::new(&kb);
    let ms = manglings();
    let listed: BTreeSet<(&str, &str)> = CANNOT_SURVIVE.iter().map(|(m, r, _)| (*m, *r)).collect();
    assert_eq!(listed.len(), CANNOT_SURVIVE.len(), "duplicate entries");
    let mut unlisted = Vec::new();
    let mut now_surviving = Vec::new();
    let mut report = Vec::new();
    for m in &ms {
        let (mut rules, mut surviving) = (0, 0);
        for (ri, rule) in kb.rules.iter().enumerate() {
            if rule.signatures.is_empty()
                || rule.status == RuleStatus::Retired
                || rule.examples_fire.is_empty()
            {
                continue;
            }
            let fires = |t: &str| {
                engine
                    .signature_hits(PASTE, t)
                    .iter()
                    .any(|(r, _)| *r == ri)
            };
            let mut lost = Vec::new();
            for ex in &rule.examples_fire {
                // Only what fires as a paste unmangled can be lost by mangling.
                if fires(ex) && !fires(&(m.apply)(ex)) {
                    lost.push(ex.as_str());
                }
            }
            rules += 1;
            let key = (m.name, rule.code.as_str());
            match (lost.is_empty(), listed.contains(&key)) {
                (true, true) => now_surviving.push(format!("{} {}", m.name, rule.code)),
                (false, false) => unlisted.push(format!(
                    "    (\"{}\", \"{}\", \"…\"), // {} of {} lost, e.g. {:?}",
                    m.name,
                    rule.code,
                    lost.len(),
                    rule.examples_fire.len(),
                    (m.apply)(lost[0])
                )),
                (true, false) => surviving += 1,
                (false, true) => {}
            }
        }
        report.push(format!(
            "{:20} {surviving:3} of {rules} rules survive",
            m.name
        ));
    }
    eprintln!("{}", report.join("\n"));
    assert!(
        unlisted.is_empty(),
        "rules that no longer fire once mangled (fix the engine, or list them with the reason):\n{}",
        unlisted.join("\n")
    );
    assert!(
        now_surviving.is_empty(),
        "listed in CANNOT_SURVIVE but surviving now, remove them: {now_surviving:?}"
    );
}

#[test]
fn manglings_do_what_they_say() {
    assert_eq!(interleave("KeyError: 'x'"), "KeyErrorKeyError: ': 'xx''");
    assert_eq!(python_repr("a 'b'\nc\\d"), "\"a 'b'\\nc\\\\d\"");
    assert_eq!(wrap("abcdef", 4, "\n"), "abcd\nef");
    let names: BTreeSet<&str> = manglings().iter().map(|m| m.name).collect();
    assert_eq!(names.len(), manglings().len(), "mangling names are unique");
    for (m, _, why) in CANNOT_SURVIVE {
        assert!(names.contains(m), "unknown mangling {m}");
        assert!(why.len() > 10, "say why {m} cannot be survived");
    }
}

#[test]
fn a_progress_bar_line_longer_than_the_read_buffer_still_yields_its_last_message() {
    // tqdm redrawing for hours without a newline: one line of several MB, cut at the reader's
    // buffer; the error glued after its last `\r` is still read.
    let mut text = String::from("epoch 0\n");
    let mut i = 0;
    while text.len() < 3 * trainwreck::sources::reader::DEFAULT_BUF {
        text.push_str(&format!(
            " {:2}%|███▌      | {i}/90000 [01:02<03:04, 41.2it/s]\r",
            i % 100
        ));
        i += 1;
    }
    text.push_str("RuntimeError: CUDA error: an illegal memory access was encountered\n");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("console.log");
    std::fs::write(&path, &text).unwrap();
    let kb = KnowledgeBase::load(&[]).unwrap();
    let r = trainwreck::diagnose(&kb, &[path.display().to_string()], 1);
    let top = r.top().expect("a finding");
    assert_eq!(top.category.to_string(), "cuda_illegal_access");
    assert_eq!(top.evidence[0].line, Some(2));
    assert!(
        r.warnings
            .iter()
            .any(|w| w.message.en.contains("after its last carriage return")),
        "{:?}",
        r.warnings
    );
}
