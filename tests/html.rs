//! `analyze --format html`: the page of a real run is one well-formed, self-contained file
//! (parsed here as XML with roxmltree: the page is written to be well-formed XML as well as
//! HTML, so a strict parser catches an unclosed element or a stray `&` that a browser would
//! silently repair), under its size budget, fetching nothing, with the cause card, the
//! timeline's lanes, the facts and the core's frames where the run has them; hostile names and
//! lines stay text; Chinese labels with `--lang zh`. The same for the triage, fleet and diff
//! pages (the diff's: every difference of its JSON, both runs' curves, secret settings
//! masked). And the pages in a real browser (headless Chromium, run by .ci/run).

use std::path::{Path, PathBuf};
use std::process::Command;

mod fleet_gen;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

fn html(args: &[&str], path: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .args(args)
        .args(["analyze", "--format", "html"])
        .arg(path)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("the page is UTF-8")
}

/// The size budget of a typical run's page.
const BUDGET: usize = 300 * 1024;

/// Nothing in the page makes a browser fetch: no element that loads (script, link, img, …),
/// no attribute naming a resource (a link within the page, `href="#…"`, loads nothing and is
/// allowed), no `url(` or `@import` in the style; under the budget; and
/// a Content-Security-Policy that forbids every fetch, for the browser to enforce.
fn assert_self_contained(page: &str, doc: &roxmltree::Document<'_>) {
    const LOADERS: &[&str] = &[
        "script", "link", "img", "iframe", "object", "embed", "image", "use", "audio", "video",
        "source", "base", "form",
    ];
    for n in doc.descendants().filter(|n| n.is_element()) {
        let name = n.tag_name().name().to_ascii_lowercase();
        assert!(!LOADERS.contains(&name.as_str()), "the page holds <{name}>");
        for a in n.attributes() {
            let an = a.name().to_ascii_lowercase();
            let in_page = an == "href" && a.value().starts_with('#');
            assert!(
                in_page && !a.value()[1..].contains(['/', ':', '?'])
                    || !matches!(an.as_str(), "src" | "href" | "srcset" | "action" | "poster")
                        && !an.starts_with("on"),
                "<{name} {an}=…>"
            );
        }
        if name == "style" {
            let css = text_of(n).to_lowercase();
            assert!(!css.contains("url(") && !css.contains("@import"), "{css}");
        }
    }
    assert!(page.len() < BUDGET, "{} bytes", page.len());
    let csp = doc
        .descendants()
        .find(|n| n.attribute("http-equiv") == Some("Content-Security-Policy"))
        .and_then(|n| n.attribute("content"));
    assert!(
        csp.is_some_and(|c| c.starts_with("default-src 'none'")),
        "the page forbids every fetch to the browser too: {csp:?}"
    );
}

fn parse(page: &str) -> roxmltree::Document<'_> {
    // The doctype is HTML's, not XML's DTD: roxmltree reads it (no entities are declared).
    let opt = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    roxmltree::Document::parse_with_options(page, opt)
        .unwrap_or_else(|e| panic!("the page is not well-formed: {e}"))
}

fn by_id<'a>(doc: &'a roxmltree::Document<'a>, id: &str) -> Option<roxmltree::Node<'a, 'a>> {
    doc.descendants().find(|n| n.attribute("id") == Some(id))
}

fn text_of(n: roxmltree::Node<'_, '_>) -> String {
    n.descendants()
        .filter(|d| d.is_text())
        .filter_map(|d| d.text())
        .collect()
}

fn lanes(doc: &roxmltree::Document<'_>) -> usize {
    doc.descendants()
        .filter(|n| n.attribute("class") == Some("lane-row"))
        .count()
}

#[test]
fn seed_bus_error_page_holds_the_cause_card_timeline_and_facts() {
    let page = html(&[], &fixture("seed-bus-error"));
    let doc = parse(&page);
    assert_self_contained(&page, &doc);
    let cause = by_id(&doc, "cause").expect("a cause card");
    let card = text_of(cause);
    assert!(card.contains("shm_exhausted"), "{card}");
    // The fix with its computed size, and the evidence line with file:line.
    assert!(card.contains("--shm-size"), "{card}");
    assert!(card.contains("train.log:27"), "{card}");
    assert!(by_id(&doc, "timeline").is_some());
    assert!(lanes(&doc) >= 1, "no lane drawn");
    let facts = text_of(by_id(&doc, "facts").expect("a facts table"));
    assert!(facts.contains("shm"), "{facts}");
    assert!(doc.root_element().attribute("lang") == Some("en"));
}

#[test]
fn multi_rank_page_has_a_lane_per_rank_and_rings_the_root_cause() {
    let page = html(&[], &fixture("corpus/05_rank1_sigsegv_cascade"));
    let doc = parse(&page);
    assert_self_contained(&page, &doc);
    assert!(lanes(&doc) >= 2, "one lane per rank: {}", lanes(&doc));
    let origin = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("lane origin"))
        .expect("the root cause's lane is marked");
    let lane = origin.parent().unwrap();
    assert!(text_of(lane).contains("rank 1"), "{}", text_of(lane));
    // The root cause's first line is ringed (in the lane of the file that says it).
    let ring = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("m-root"))
        .expect("the root cause is ringed");
    assert!(ring.parent().unwrap().attribute("class") == Some("lane-row"));
}

/// What else was considered, with the same reason the Markdown gives (both read it from
/// `Report::considered_why`).
#[test]
fn considered_hypotheses_carry_the_reports_reason() {
    // A run with a rival that is no symptom of the cause (01c's "worker exited unexpectedly"
    // is the wrapper of its SIGBUS, so it is listed among the symptoms instead).
    let run = fixture("corpus/01b_dataloader_shm_torchrun");
    let md = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .args(["analyze", "--format", "markdown"])
        .arg(&run)
        .output()
        .unwrap();
    let md = String::from_utf8(md.stdout).unwrap();
    let rows: Vec<Vec<String>> = md
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            l.split(" | ")
                .map(|c| c.trim_matches(['|', ' ', '`']).to_string())
                .collect()
        })
        .collect();
    assert!(!rows.is_empty(), "the fixture has a rival hypothesis: {md}");
    let page = html(&[], &run);
    let doc = parse(&page);
    let tables: String = ["considered", "ruled-out"]
        .iter()
        .filter_map(|id| by_id(&doc, id))
        .map(text_of)
        .collect();
    for row in rows {
        let (category, why) = (&row[0], &row[3]);
        assert!(tables.contains(category.as_str()), "{category}: {tables}");
        assert!(tables.contains(why.as_str()), "{why}: {tables}");
    }
}

#[test]
fn core_dump_frames_are_listed() {
    let page = html(&[], &fixture("corpus/12_core_dump_sigbus_tmpfs"));
    let doc = parse(&page);
    assert_self_contained(&page, &doc);
    let core = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("core"))
        .expect("a core section");
    let text = text_of(core);
    assert!(text.contains("SIGBUS"), "{text}");
    assert!(
        core.descendants()
            .any(|n| n.attribute("class") == Some("frames")),
        "{text}"
    );
}

#[test]
fn chinese_page_has_chinese_labels() {
    let page = html(&["--lang", "zh"], &fixture("seed-bus-error"));
    let doc = parse(&page);
    assert_eq!(doc.root_element().attribute("lang"), Some("zh-CN"));
    let card = text_of(by_id(&doc, "cause").unwrap());
    assert!(card.contains("原因") && card.contains("修复建议"), "{card}");
    assert!(text_of(by_id(&doc, "timeline").unwrap()).contains("根本原因"));
}

/// `trainwreck run`'s own folder of a real SIGBUS (fixtures/captured/27…): the page draws each
/// sampled memory against its limit — /dev/shm against the mount's 64 MiB, the GPU against its
/// total — with both axes labelled, the limit dashed, and the climb where the samples put it
/// (/dev/shm peaks 2.3 s before the end of a 19.2 s run). A run without samples has no section.
#[test]
fn wrapped_run_page_draws_its_memory_curves_against_their_limits() {
    let page = html(&[], &fixture("captured/27_run_shm_sigbus_samples/run"));
    let doc = parse(&page);
    assert_self_contained(&page, &doc);
    let memory = by_id(&doc, "memory").expect("a memory section");
    let charts: Vec<_> = memory
        .descendants()
        .filter(|n| n.has_tag_name("svg"))
        .collect();
    let titles: Vec<String> = charts
        .iter()
        .map(|c| text_of(c.children().find(|n| n.has_tag_name("title")).unwrap()))
        .collect();
    assert!(
        titles.contains(&"/dev/shm used: peak 63.3 MiB of 64 MiB".to_string()),
        "{titles:?}"
    );
    assert!(
        titles
            .iter()
            .any(|t| t.starts_with("GPU 0 memory used: peak ") && t.ends_with(" of 140.4 GiB")),
        "{titles:?}"
    );
    for c in &charts {
        let words = text_of(*c);
        assert!(
            words.contains("seconds since the command started") && words.contains("bytes"),
            "axis labels: {words}"
        );
        assert!(
            c.descendants()
                .any(|n| n.attribute("class") == Some("series")),
            "a curve"
        );
        assert!(
            c.descendants().any(|n| n.attribute("class") == Some("end")),
            "the end marked"
        );
    }
    let shm = charts[titles
        .iter()
        .position(|t| t.starts_with("/dev/shm"))
        .unwrap()];
    assert!(text_of(shm).contains("limit 64 MiB"), "{}", text_of(shm));
    // The curve's highest point (smallest y) is late in the run: x past 80 % of the axis.
    let points: Vec<(f64, f64)> = shm
        .descendants()
        .filter(|n| n.attribute("class") == Some("series"))
        .flat_map(|n| {
            n.attribute("points")
                .unwrap()
                .split(' ')
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .map(|p| {
            let (x, y) = p.split_once(',').unwrap();
            (x.parse().unwrap(), y.parse().unwrap())
        })
        .collect();
    let (x_top, _) = points
        .iter()
        .copied()
        .fold((0.0, f64::MAX), |a, p| if p.1 < a.1 { p } else { a });
    let (x0, x1) = (points.first().unwrap().0, points.last().unwrap().0);
    assert!(
        (x_top - x0) / (x1 - x0) > 0.8,
        "the peak at {x_top} of {x0}..{x1}"
    );
    let zh = html(
        &["--lang", "zh"],
        &fixture("captured/27_run_shm_sigbus_samples/run"),
    );
    let zh_doc = parse(&zh);
    let words = text_of(by_id(&zh_doc, "memory").expect("a memory section in Chinese"));
    assert!(
        words.contains("内存随时间的变化") && words.contains("自命令启动起的秒数"),
        "{words}"
    );
    let seed = html(&[], &fixture("seed-bus-error"));
    assert!(
        by_id(&parse(&seed), "memory").is_none(),
        "no samples, no curves"
    );
}

/// The charts of `#memory` (or another section): each one's title (its accessible name),
/// axis labels, and the svg itself.
fn memory_charts<'a>(
    section: roxmltree::Node<'a, 'a>,
) -> Vec<(String, Vec<String>, roxmltree::Node<'a, 'a>)> {
    section
        .descendants()
        .filter(|n| n.has_tag_name("svg") && n.attribute("role") == Some("img"))
        .map(|svg| {
            let id = svg.attribute("aria-labelledby").unwrap();
            let title = svg
                .children()
                .find(|n| n.attribute("id") == Some(id))
                .map(text_of)
                .expect("the chart is labelled by its title");
            let labels = svg
                .descendants()
                .filter(|n| n.attribute("class") == Some("axis-label"))
                .map(text_of)
                .collect();
            (title, labels, svg)
        })
        .collect()
}

/// Corpus 04 has no samples, only its snapshots before and after the run: each memory they
/// give is a chart of two points (no curve) against its limit, each point citing the snapshot
/// file and line it was read from, with the values the facts give. A wrapped run draws no
/// snapshot chart for a memory its samples cover.
#[test]
fn snapshots_without_samples_are_two_points_against_the_limit() {
    let run = fixture("corpus/04_nccl_collective_timeout");
    let page = html(&[], &run);
    let doc = parse(&page);
    assert_self_contained(&page, &doc);
    let memory = by_id(&doc, "memory").expect("a memory section");
    assert!(by_id(&doc, "memory-snapshots").is_some());
    let charts = memory_charts(memory);
    let titles: Vec<&str> = charts.iter().map(|c| c.0.as_str()).collect();
    assert!(
        titles.contains(&"/dev/shm used: before 0 B, after 56 KiB, of 256 GiB"),
        "{titles:?}"
    );
    assert!(
        titles.iter().any(|t| t.starts_with("host memory in use")),
        "{titles:?}"
    );
    // The facts the points were read from, as `facts --format json` gives them.
    let out = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .args(["facts", "--format", "json"])
        .arg(&run)
        .output()
        .unwrap();
    let facts: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let value_at = |at: &str| {
        let (path, line) = at.rsplit_once(':').unwrap();
        facts["facts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| {
                f["path"] == path
                    && f["line"].as_u64() == line.parse().ok()
                    && f["name"] == "shm.used_bytes"
            })
            .and_then(|f| f["value"].as_u64())
            .unwrap_or_else(|| panic!("a fact at {at}"))
    };
    let (_, labels, shm) = &charts[titles
        .iter()
        .position(|t| t.starts_with("/dev/shm"))
        .unwrap()];
    assert_eq!(labels, &["snapshot", "bytes"]);
    assert!(
        !shm.descendants().any(|n| n
            .attribute("class")
            .is_some_and(|c| c.starts_with("series"))),
        "points, not a curve"
    );
    assert!(
        shm.descendants()
            .any(|n| n.attribute("class") == Some("limit"))
    );
    let points: Vec<(String, f64, String)> = shm
        .descendants()
        .filter(|n| {
            n.attribute("class")
                .is_some_and(|c| c.starts_with("point "))
        })
        .map(|n| {
            (
                n.attribute("class").unwrap().to_string(),
                n.attribute("cy").unwrap().parse().unwrap(),
                text_of(n),
            )
        })
        .collect();
    assert_eq!(points.len(), 2, "{points:?}");
    assert_eq!(
        (points[0].0.as_str(), points[1].0.as_str()),
        ("point before", "point after")
    );
    for (class, _, tip) in &points {
        let at = tip.rsplit(" · ").next().unwrap();
        let side = if class.ends_with("before") {
            "snapshot_before/"
        } else {
            "snapshot_after/"
        };
        assert!(at.contains(side), "{tip}");
        let want = match value_at(at) {
            0 => "0 B".to_string(),
            v => format!("{} KiB", v / 1024),
        };
        assert!(tip.contains(&format!(": {want} · ")), "{tip}");
    }
    assert!(
        points[1].1 <= points[0].1,
        "more used after: not lower on the chart"
    );
    // The wrapped run sampled /dev/shm: no snapshot chart of it, curves instead.
    let wrapped = html(&[], &fixture("captured/27_run_shm_sigbus_samples/run"));
    let doc = parse(&wrapped);
    let titles: Vec<String> = memory_charts(by_id(&doc, "memory").unwrap())
        .into_iter()
        .map(|c| c.0)
        .collect();
    assert!(
        !titles
            .iter()
            .any(|t| t.starts_with("/dev/shm used: before")),
        "{titles:?}"
    );
    let zh = html(&["--lang", "zh"], &run);
    let zh_doc = parse(&zh);
    let words = text_of(by_id(&zh_doc, "memory").unwrap());
    assert!(
        words.contains("运行前后（快照）") && words.contains("运行前 0 B"),
        "{words}"
    );
}

/// GPU memory the user's own nvidia-smi polled (`--query-gpu=timestamp,index,memory.used,
/// memory.total --format=csv -l 1`), in a file whose name is hostile (markup, quotes, a
/// control character), dropped into the seed run: one curve per GPU against memory.total, on
/// nvidia-smi's clock, with the failure marked where the logs' time for it falls; the name
/// stays text.
#[test]
fn polled_nvidia_smi_is_drawn_against_the_total_with_the_failure_marked() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&fixture("seed-bus-error"), tmp.path());
    // Every second from 09:13:40.100 for 30 s (the seed's SIGBUS is at 09:14:02.896), GPU 0
    // climbing by 2500 MiB a poll, GPU 1 a few milliseconds behind it.
    let mut csv = String::from("timestamp, index, memory.used [MiB], memory.total [MiB]\n");
    for i in 0..30u64 {
        for g in 0..2u64 {
            csv.push_str(&format!(
                "2024/05/14 09:{:02}:{:02}.{:03}, {g}, {} MiB, 81559 MiB\n",
                13 + (40 + i) / 60,
                (40 + i) % 60,
                100 + g * 3,
                2000 + i * 2500 + g * 10
            ));
        }
    }
    let name = "gpu<script>alert(1)<!--'\"\u{7}mem.csv";
    std::fs::write(tmp.path().join(name), csv).unwrap();
    let page = html(&[], tmp.path());
    let doc = parse(&page);
    assert_self_contained(&page, &doc);
    assert!(!page.contains("<script>") && !page.contains('\u{7}'));
    let memory = by_id(&doc, "memory").expect("a memory section");
    let note = text_of(memory);
    assert!(
        note.contains(
            "30 samples from gpu<script>alert(1)<!--'\"\u{FFFD}mem.csv (nvidia-smi polled"
        ),
        "the name as text: {note}"
    );
    let charts = memory_charts(memory);
    let titles: Vec<&str> = charts.iter().map(|c| c.0.as_str()).collect();
    // 2000 + 29 × 2500 MiB = 74500 MiB; 81559 MiB = 79.6 GiB.
    assert_eq!(
        titles,
        [
            "GPU 0 memory used: peak 72.8 GiB of 79.6 GiB",
            "GPU 1 memory used: peak 72.8 GiB of 79.6 GiB"
        ]
    );
    for (title, labels, svg) in &charts {
        assert_eq!(
            labels,
            &[
                "seconds since the first sample (2024/05/14 09:13:40.100)",
                "bytes"
            ],
            "{title}"
        );
        let limit = svg
            .descendants()
            .find(|n| n.attribute("class") == Some("limit"))
            .expect("the total dashed");
        assert!(text_of(*svg).contains("limit 79.6 GiB"));
        // The failure, 22.796 s after the first sample of 29 s, on the x axis of 620 from 80.
        let failure = svg
            .descendants()
            .find(|n| n.attribute("class") == Some("failure"))
            .expect("the failure marked");
        let x: f64 = failure.attribute("x1").unwrap().parse().unwrap();
        let want = 80.0 + 22.796 / 29.0 * 620.0;
        assert!((x - want).abs() < 0.2, "{x} vs {want}");
        // The curve climbs to just under the total: its highest point is the last.
        let points: Vec<(f64, f64)> = svg
            .descendants()
            .filter(|n| n.attribute("class") == Some("series"))
            .flat_map(|n| {
                n.attribute("points")
                    .unwrap()
                    .split(' ')
                    .map(|p| {
                        let (x, y) = p.split_once(',').unwrap();
                        (x.parse::<f64>().unwrap(), y.parse::<f64>().unwrap())
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(points.len(), 30, "{title}");
        let limit_y: f64 = limit.attribute("y1").unwrap().parse().unwrap();
        let top = points.iter().fold(f64::MAX, |a, p| a.min(p.1));
        assert_eq!(top, points.last().unwrap().1);
        assert!(top > limit_y, "under the total");
    }
    // The polled file's facts: one row each, its last reading, of 30.
    let rows: Vec<String> = by_id(&doc, "facts")
        .unwrap()
        .descendants()
        .filter(|n| n.has_tag_name("tr") && text_of(*n).contains("mem.csv:"))
        .map(text_of)
        .collect();
    assert_eq!(rows.len(), 4, "{rows:#?}");
    let used0 = rows
        .iter()
        .find(|r| r.starts_with("gpu.0.memory_used_bytes"))
        .unwrap();
    assert!(
        used0.contains(&format!("{} (the last of 30 readings", 74500u64 << 20)),
        "{used0}"
    );
}

/// `triage --format html` over the corpus: one row per group with its fingerprint and its
/// runs, and bar charts by category and by action class whose bars add up to the runs.
#[test]
fn triage_page_groups_the_corpus_and_charts_it() {
    let corpus = fixture("corpus");
    let run = |format: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
            .args(["triage", "--format", format])
            .arg(&corpus)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8(out.stdout).unwrap()
    };
    let json: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    let page = run("html");
    let doc = parse(&page);
    assert_self_contained(&page, &doc);
    let groups = json["groups"].as_array().unwrap();
    let rows: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("group"))
        .collect();
    assert_eq!(rows.len(), groups.len());
    for (g, row) in groups.iter().zip(&rows) {
        let text = text_of(*row);
        if let Some(fp) = g["fingerprint"].as_str() {
            assert!(text.contains(fp), "{fp}: {text}");
        }
        for r in g["runs"].as_array().unwrap() {
            assert!(text.contains(r.as_str().unwrap()), "{r}: {text}");
        }
    }
    // Each failed run lists the lines its report cites, under that run, with file:line; a
    // healthy group cites nothing.
    let mut cited = 0;
    for (i, g) in groups.iter().enumerate() {
        let ev = g["evidence"].as_array().cloned().unwrap_or_default();
        if g["verdict"] == "no_failure" {
            assert!(ev.is_empty(), "{g}");
        }
        for (j, run) in g["runs"].as_array().unwrap().iter().enumerate() {
            let li = by_id(&doc, &format!("group-{i}-run-{j}")).expect("a run's item");
            let text = text_of(li);
            assert!(text.starts_with(run.as_str().unwrap()), "{text}");
            let Some(e) = ev.iter().find(|e| e["run"] == *run) else {
                continue;
            };
            let lines = e["lines"].as_array().unwrap();
            assert!(!lines.is_empty() && lines.len() <= 3, "{e}");
            for l in lines {
                let at = match l["line"].as_u64() {
                    Some(n) => format!("{}:{n}", l["path"].as_str().unwrap()),
                    None => l["path"].as_str().unwrap().to_string(),
                };
                assert!(text.contains(&at), "{at}: {text}");
                cited += 1;
            }
        }
    }
    assert!(cited >= groups.len(), "{cited} cited lines");
    let total = json["runs_total"].as_u64().unwrap();
    for id in ["by-category", "by-action"] {
        let chart = by_id(&doc, id).unwrap_or_else(|| panic!("no chart {id}"));
        let title = chart
            .descendants()
            .find(|n| n.has_tag_name("title"))
            .map(text_of)
            .unwrap_or_default();
        assert!(!title.is_empty(), "{id} has a title");
        let sum: u64 = chart
            .descendants()
            .filter(|n| n.attribute("class") == Some("bar"))
            .map(|b| {
                b.children()
                    .filter(|c| c.has_tag_name("text"))
                    .nth(1)
                    .map(text_of)
            })
            .map(|n| n.unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(sum, total, "{id}");
    }
}

/// `--redact=hosts` holds on the page as in every format: the seed run's host (in its
/// evidence lines and its origin) is masked, and the page stays well-formed.
#[test]
fn redacted_hosts_do_not_reach_the_page() {
    let plain = html(&[], &fixture("seed-bus-error"));
    assert!(
        plain.contains("c0a8f1e2d4b5"),
        "the host is on the page unredacted"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .args(["analyze", "--format", "html", "--redact=hosts"])
        .arg(fixture("seed-bus-error"))
        .output()
        .unwrap();
    let page = String::from_utf8(out.stdout).unwrap();
    let doc = parse(&page);
    assert!(!page.contains("c0a8f1e2d4b5"), "{page}");
    assert!(text_of(by_id(&doc, "cause").unwrap()).contains("host-1"));
}

/// A file name and lines that try to break out of the page: markup, a terminal escape and
/// characters XML forbids. The page stays well-formed and they stay text.
#[test]
fn hostile_names_and_lines_stay_text() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&fixture("seed-bus-error"), tmp.path());
    let log = std::fs::read_to_string(tmp.path().join("train.log")).unwrap();
    let mut lines: Vec<String> = log.lines().map(String::from).collect();
    lines[26].push_str(" <script>fetch('//x')</script> \u{1b}]0;owned\u{7} \u{FFFE} ]]> <!--");
    std::fs::remove_file(tmp.path().join("train.log")).unwrap();
    let name = "<img src=x onerror=alert(1)>&amp;\u{FFFE}.log";
    std::fs::write(tmp.path().join(name), lines.join("\n") + "\n").unwrap();
    let page = html(&[], tmp.path());
    let doc = parse(&page);
    assert_self_contained(&page, &doc);
    let card = text_of(by_id(&doc, "cause").unwrap());
    assert!(
        card.contains("<script>fetch('//x')</script>"),
        "the line is shown as text: {card}"
    );
    assert!(card.contains("<img src=x onerror=alert(1)>&amp;"), "{card}");
    assert!(!page.contains('\u{FFFE}') && !page.contains('\u{1b}'));
}

/// A failure history in `dir`: the synthetic fleet (a planted bad host and bad GPU) imported,
/// and every run of the corpus recorded by `triage --record` (real categories and titles).
fn fleet_history(dir: &Path) -> String {
    let db = dir.join("history.db").display().to_string();
    let file = dir.join("fleet.jsonl");
    std::fs::write(&file, fleet_gen::synthetic_fleet()).unwrap();
    let ok = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
            .env_remove("TRAINWRECK_DB")
            .args(args)
            .args(["--db", &db])
            .output()
            .unwrap();
        assert!(
            out.status.code().is_some_and(|c| c != 2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    ok(&["history", "import", file.to_str().unwrap()]);
    ok(&["triage", fixture("corpus").to_str().unwrap(), "--record"]);
    db
}

fn fleet_page(db: &str, extra: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .env_remove("TRAINWRECK_DB")
        .args(["history", "report", "--db", db])
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A real capture (one H200): nvidia-smi polled once a second beside a run wrapped by
/// `trainwreck run`, both ending in a CUDA OOM after memory climbed all run. The page draws
/// the polled GPU against its total with the failure placed by the logs' time, and the
/// wrapper's samples beside it, each saying where its samples came from.
#[test]
fn a_real_polled_nvidia_smi_and_the_wrappers_samples_are_both_drawn() {
    let page = html(&[], &fixture("captured/28_cuda_oom_logits_leak_polled/run"));
    let memory = &page[page.find("id=\"memory\"").expect("a memory section")..];
    assert!(
        memory.contains("GPU 0 memory used: peak 139.7 GiB of 140.4 GiB"),
        "{memory}"
    );
    assert!(
        memory.contains("samples from gpu_memory.csv (nvidia-smi polled"),
        "{memory}"
    );
    assert!(
        memory.contains("436 samples from samples.csv (trainwreck run)"),
        "{memory}"
    );
    assert!(
        memory.contains("class=\"failure\""),
        "the failure is placed: {memory}"
    );
}

/// Real good and bad runs of one program under `trainwreck run` (on one H200: the bad one
/// keeps every step's logits on the GPU): the diff page's verdict names the GPU memory peak as
/// the likely culprit, and its memory chart draws both runs' GPU with both peaks.
#[test]
fn a_real_good_run_diffed_against_its_leaking_twin_draws_both_gpus() {
    let page = diff_out(
        &[],
        &fixture("captured/29_run_healthy_gpt/run"),
        &fixture("captured/28_cuda_oom_logits_leak_polled/run"),
        "html",
    );
    assert!(
        page.contains("Likely culprit: peak GPU memory 139.7 GiB here vs 21.5 GiB in the good run"),
        "{page}"
    );
    assert!(
        page.contains("GPU 0 memory used: peak 21.5 GiB in the good run, 139.7 GiB in the bad run"),
        "{page}"
    );
}

/// `history report`: each top fingerprint lists its latest runs with the lines their stored
/// reports cite, and those lines are the runs' own (found at that line of a corpus file); on the
/// page every top fingerprint's row and each latest run of a top fingerprint links to its
/// runs, and every link has its target. A fingerprint whose reports cite nothing (the
/// synthetic fleet's) says so.
#[test]
fn fleet_page_links_each_top_fingerprint_to_its_runs_and_their_cited_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let db = fleet_history(tmp.path());
    let json: serde_json::Value =
        serde_json::from_str(&fleet_page(&db, &["--format", "json"])).unwrap();
    let top = json["top"].as_array().unwrap();
    let runs = json["top_runs"].as_array().unwrap();
    assert_eq!(top.len(), runs.len());
    // Every line of every corpus file, by the file's path under its run directory.
    let mut corpus_lines: Vec<(String, usize, String)> = Vec::new();
    for run in std::fs::read_dir(fixture("corpus")).unwrap().flatten() {
        if !run.path().is_dir() {
            continue;
        }
        for e in walk(&run.path()) {
            let Ok(text) = std::fs::read(&e) else {
                continue;
            };
            let rel = e.strip_prefix(run.path()).unwrap().display().to_string();
            for (i, l) in String::from_utf8_lossy(&text).lines().enumerate() {
                corpus_lines.push((rel.clone(), i + 1, l.to_string()));
            }
        }
    }
    let (mut cited, mut bare) = (0, 0);
    for (t, rs) in top.iter().zip(runs) {
        let rs = rs.as_array().unwrap();
        assert!(!rs.is_empty() && rs.len() as u64 <= t["count"].as_u64().unwrap());
        for r in rs {
            let lines = r["lines"].as_array().unwrap();
            if lines.is_empty() {
                bare += 1;
            }
            for l in lines {
                cited += 1;
                let (path, n, text) = (
                    l["path"].as_str().unwrap(),
                    l["line"].as_u64().unwrap() as usize,
                    l["text"].as_str().unwrap(),
                );
                assert!(
                    corpus_lines
                        .iter()
                        .any(|(p, i, t)| (p == path || p.ends_with(&format!("/{path}")))
                            && *i == n
                            && t.contains(text.trim_end_matches('…'))),
                    "{path}:{n} {text:?} is not a line of the corpus"
                );
            }
        }
    }
    assert!(cited >= 3 && bare >= 1, "cited {cited}, bare {bare}");

    let page = fleet_page(&db, &["--html"]);
    let ids: Vec<&str> = page
        .split("id=\"fp-")
        .skip(1)
        .map(|s| &s[..s.find('"').unwrap()])
        .collect();
    assert_eq!(ids.len(), top.len(), "one runs list per top fingerprint");
    let links: Vec<&str> = page
        .split("href=\"#fp-")
        .skip(1)
        .map(|s| &s[..s.find('"').unwrap()])
        .collect();
    assert!(
        links.len() > top.len(),
        "rows and latest runs link: {}",
        links.len()
    );
    for l in &links {
        assert!(ids.contains(l), "link #fp-{l} has no target");
    }
    assert!(page.contains("id=\"top-runs\"") && page.contains("its stored report cites no line"));
    let zh = fleet_page(&db, &["--html", "--lang", "zh"]);
    assert!(zh.contains("最常见指纹背后的运行"));
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// `history report --html`: every stacked segment of the per-day chart is a count
/// of the report's data, the top fingerprints are listed and drawn, the heat map outlines
/// exactly the planted bad host and the bad GPU in each of its eight hosts, the suspects are
/// named with their test, and the latest runs are listed; Chinese labels with `--lang zh`;
/// `--redact=hosts` leaves no host name on the page.
#[test]
fn fleet_page_draws_days_top_fingerprints_and_the_heat_map_with_its_suspects() {
    let tmp = tempfile::tempdir().unwrap();
    let db = fleet_history(tmp.path());
    let data: serde_json::Value =
        serde_json::from_str(&fleet_page(&db, &["--format", "json"])).unwrap();
    let page = fleet_page(&db, &["--html"]);
    // The same page both ways, but for the footer's time of making.
    let body = |p: &str| p.split("<footer>").next().unwrap().to_string();
    assert_eq!(body(&page), body(&fleet_page(&db, &["--format", "html"])));
    let doc = parse(&page);
    assert_self_contained(&page, &doc);
    // Each drawn segment is one (day, category) count of the data.
    let per_day = by_id(&doc, "per-day").expect("the per-day chart");
    let segments: Vec<String> = per_day
        .descendants()
        .filter(|n| n.attribute("class") == Some("day"))
        .map(text_of)
        .collect();
    assert!(!segments.is_empty());
    let mut drawn = 0;
    for seg in &segments {
        let (day, rest) = seg.split_once(' ').unwrap();
        let (cat, n) = rest.rsplit_once(": ").unwrap();
        let d = data["days"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["day"] == day)
            .unwrap_or_else(|| panic!("{day} is a day of the data"));
        assert_eq!(d["failures"][cat].as_u64(), n.parse().ok(), "{seg}");
        drawn += n.parse::<u64>().unwrap();
    }
    let first_drawn = segments.iter().map(|s| &s[..10]).min().unwrap();
    let in_window: u64 = data["days"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["day"].as_str().unwrap() >= first_drawn)
        .flat_map(|d| d["failures"].as_object().unwrap().values())
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(drawn, in_window);
    let top = by_id(&doc, "top").unwrap();
    assert_eq!(
        top.descendants()
            .filter(|n| n.attribute("class") == Some("fingerprint"))
            .count(),
        data["top"].as_array().unwrap().len()
    );
    for t in data["top"].as_array().unwrap() {
        assert!(text_of(top).contains(t["fingerprint"].as_str().unwrap()));
    }
    let heat = by_id(&doc, "heat-map").unwrap();
    let suspects: Vec<String> = heat
        .descendants()
        .filter(|n| n.attribute("class") == Some("cell suspect"))
        .map(text_of)
        .collect();
    assert_eq!(suspects.len(), 1 + 8, "{suspects:#?}");
    assert_eq!(
        suspects.iter().filter(|s| s.starts_with("lemon:")).count(),
        1
    );
    assert_eq!(
        suspects.iter().filter(|s| s.contains("· GPU-bad:")).count(),
        8
    );
    assert!(suspects.iter().all(|s| s.contains("suspect")));
    let named: Vec<String> = by_id(&doc, "suspects")
        .unwrap()
        .descendants()
        .filter(|n| n.attribute("class") == Some("suspect"))
        .map(text_of)
        .collect();
    assert_eq!(named.len(), 2, "{named:?}");
    assert!(named[0].starts_with("lemon: ") && named[1].starts_with("GPU-bad: "));
    assert_eq!(
        by_id(&doc, "recent")
            .unwrap()
            .descendants()
            .filter(|n| n.attribute("class") == Some("run"))
            .count(),
        50
    );
    let zh = fleet_page(&db, &["--html", "--lang", "zh"]);
    assert!(zh.contains("每天的失败（按类别）") && zh.contains("可疑对象"));
    // The latest runs' titles in Chinese, from their stored reports (the corpus's runs).
    let zh_doc = parse(&zh);
    let recent_zh = text_of(by_id(&zh_doc, "recent").unwrap());
    let stored_zh: Vec<String> = data["recent"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["title_zh"].as_str().map(String::from))
        .collect();
    assert!(
        !stored_zh.is_empty(),
        "the corpus's runs have Chinese titles"
    );
    for t in &stored_zh {
        assert!(recent_zh.contains(t.as_str()), "{t}");
    }
    let red = fleet_page(&db, &["--html", "--redact=hosts"]);
    parse(&red);
    assert!(!red.contains("lemon") && !red.contains("node07"));
}

/// `trainwreck diff GOOD BAD --format FORMAT` (with `args` before it), its stdout.
fn diff_out(args: &[&str], good: &Path, bad: &Path, format: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .args(args)
        .args(["diff", "--format", format])
        .arg(good)
        .arg(bad)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("the page is UTF-8")
}

/// Both sides of a diff whose runs sampled their memory: the fixtures' one `trainwreck run`
/// folder (captured/27) on both sides, as no good run of its command was captured under the
/// wrapper; the pairing itself is tested on two different runs in `diff::memory`'s tests.
fn wrapped_pair() -> (PathBuf, PathBuf) {
    (
        fixture("captured/27_run_shm_sigbus_samples/run"),
        fixture("captured/27_run_shm_sigbus_samples/run"),
    )
}

/// The pairs of real runs the diff tests compare (tests/diff.rs): four that differ in one
/// setting, and a healthy run against one that was stopped half-way (both log loss and step
/// time).
fn diff_pairs() -> Vec<(PathBuf, PathBuf)> {
    let mut pairs: Vec<(PathBuf, PathBuf)> = ["precision", "batch_size", "shm_size", "workers"]
        .iter()
        .map(|p| {
            (
                fixture(&format!("pairs/{p}/good")),
                fixture(&format!("pairs/{p}/bad")),
            )
        })
        .collect();
    pairs.push((
        fixture("corpus/11a_healthy_torchrun/run"),
        fixture("corpus/18a_preempt_sigterm_torchrun/run"),
    ));
    pairs
}

/// The rows of the difference tables, by key.
fn difference_rows<'a>(
    doc: &'a roxmltree::Document<'a>,
) -> std::collections::BTreeMap<String, roxmltree::Node<'a, 'a>> {
    doc.descendants()
        .filter(|n| n.attribute("class") == Some("difference"))
        .map(|n| (n.attribute("data-fact").unwrap().to_string(), n))
        .collect()
}

/// Each chart of `#curves` (or `#diff-curves`): its title, and the texts of its axis labels.
fn diff_charts(section: roxmltree::Node<'_, '_>) -> Vec<(String, Vec<String>)> {
    section
        .descendants()
        .filter(|n| n.has_tag_name("svg"))
        .map(|svg| {
            let title = svg
                .children()
                .find(|n| n.has_tag_name("title"))
                .map(text_of)
                .unwrap_or_default();
            // The chart is labelled by its title, for screen readers.
            let id = svg.attribute("aria-labelledby").unwrap();
            assert!(
                svg.children().any(|n| n.attribute("id") == Some(id)),
                "{title}"
            );
            let labels = svg
                .descendants()
                .filter(|n| n.attribute("class") == Some("axis-label"))
                .map(text_of)
                .collect();
            (title, labels)
        })
        .collect()
}

/// `diff --format html` on real pairs: every difference of the JSON is a row (its label, both
/// values, where each side's value was read), the headline and the bad run's cause are in the
/// verdict, and the loss (and step time) of both runs are drawn on one chart with its title
/// and both axes labelled, the step where the runs part marked and a NaN drawn as such.
#[test]
fn diff_page_lists_every_difference_and_draws_both_runs() {
    for (good, bad) in diff_pairs() {
        let json: serde_json::Value =
            serde_json::from_str(&diff_out(&[], &good, &bad, "json")).unwrap();
        let page = diff_out(&[], &good, &bad, "html");
        let doc = parse(&page);
        assert_self_contained(&page, &doc);
        let rows = difference_rows(&doc);
        let diffs = json["differences"].as_array().unwrap();
        assert!(!diffs.is_empty(), "{}: the pair differs", bad.display());
        assert_eq!(rows.len(), diffs.len(), "{}", bad.display());
        for d in diffs {
            let key = d["key"].as_str().unwrap();
            let row = rows
                .get(key)
                .unwrap_or_else(|| panic!("{key} is on the page of {}", bad.display()));
            let th = row.children().find(|n| n.has_tag_name("th")).unwrap();
            assert_eq!(text_of(th), d["what"].as_str().unwrap(), "{key}");
            let cells: Vec<String> = row
                .children()
                .filter(|n| n.has_tag_name("td"))
                .map(text_of)
                .collect();
            // A text value as read; a number in its unit (`128 GiB`, `0.016 s`).
            for (side, cell) in [("good", &cells[0]), ("bad", &cells[1])] {
                match &d[side] {
                    serde_json::Value::String(v) if d["unit"] == "text" => {
                        assert_eq!(cell, v, "{key} {side}")
                    }
                    _ => assert!(!cell.is_empty(), "{key} {side}"),
                }
            }
            for c in d["evidence"].as_array().unwrap() {
                let at = format!(
                    "{} {}:{}",
                    c["side"].as_str().unwrap(),
                    c["path"].as_str().unwrap(),
                    c["line"]
                );
                assert!(cells[4].contains(&at), "{key}: {at} in {}", cells[4]);
            }
        }
        let verdict = text_of(by_id(&doc, "verdict").expect("a verdict"));
        if let Some(h) = json["headline"].as_str() {
            assert!(verdict.contains(h), "{h}: {verdict}");
        }
        if let Some(c) = json["bad"]["top"]["category"].as_str() {
            assert!(verdict.contains(c), "{c}: {verdict}");
        }
        // The changed settings have a table of their own.
        if diffs.iter().any(|d| d["source"] == "config") {
            let settings = by_id(&doc, "settings").expect("a settings table");
            assert!(
                settings
                    .descendants()
                    .any(|n| n.attribute("scope") == Some("col")),
                "column headers"
            );
        }
    }
    // The fp16 pair: the culprit first, the loss chart with the good run's curve, the bad
    // run's NaN at step 1 and the parting there.
    let (good, bad) = (
        fixture("pairs/precision/good"),
        fixture("pairs/precision/bad"),
    );
    let page = diff_out(&[], &good, &bad, "html");
    let doc = parse(&page);
    let ranked = by_id(&doc, "verdict")
        .unwrap()
        .descendants()
        .find(|n| n.attribute("class") == Some("ranked"))
        .expect("the differences ranked first");
    let first = ranked.children().find(|n| n.has_tag_name("li")).unwrap();
    assert!(
        text_of(first).starts_with("precision: bf16 → fp16"),
        "{}",
        text_of(first)
    );
    let curves = by_id(&doc, "curves").expect("the curves");
    let charts = diff_charts(curves);
    let titles: Vec<&str> = charts.iter().map(|c| c.0.as_str()).collect();
    assert!(
        titles.contains(&"loss by step: good run (12 points) and bad run (1 point)"),
        "{titles:?}"
    );
    assert!(
        titles.iter().any(|t| t.starts_with("step time by step")),
        "{titles:?}"
    );
    for (title, labels) in &charts {
        assert_eq!(labels.len(), 2, "{title}: {labels:?}");
        assert_eq!(labels[0], "step", "{title}");
    }
    let loss = curves
        .descendants()
        .find(|n| n.attribute("aria-labelledby") == Some("curve-loss-title"))
        .expect("the loss chart");
    assert!(
        loss.descendants()
            .any(|n| n.attribute("class") == Some("series good")),
        "the good run's curve"
    );
    let nan = loss
        .descendants()
        .find(|n| n.attribute("class") == Some("nonfinite bad"))
        .expect("the bad run's NaN");
    assert_eq!(text_of(nan), "bad run, step 1: NaN");
    assert!(text_of(loss).contains("runs part at step 1"));
    let words = text_of(curves);
    assert!(
        words.contains("The runs part at step 1") && words.contains("console.log:3:"),
        "{words}"
    );
    // A healthy run against one stopped half-way: both runs' curves on one chart.
    let page = diff_out(
        &[],
        &fixture("corpus/11a_healthy_torchrun/run"),
        &fixture("corpus/18a_preempt_sigterm_torchrun/run"),
        "html",
    );
    let doc = parse(&page);
    let loss = by_id(&doc, "curves")
        .unwrap()
        .descendants()
        .find(|n| n.attribute("aria-labelledby") == Some("curve-loss-title"))
        .expect("the loss chart");
    for side in ["series good", "series bad"] {
        assert!(
            loss.descendants()
                .any(|n| n.attribute("class") == Some(side)),
            "{side}"
        );
    }
}

/// Secret-named settings planted in a copy of a pair (both sides, different values) reach
/// the diff's JSON in clear, and never the page, `diff --format html` or the run page of
/// `analyze --baseline`; a value with markup stays text.
#[test]
fn diff_page_masks_secret_settings_and_escapes_values() {
    let tmp = tempfile::tempdir().unwrap();
    let (good, bad) = (tmp.path().join("good"), tmp.path().join("bad"));
    copy_dir(&fixture("pairs/batch_size/good"), &good);
    copy_dir(&fixture("pairs/batch_size/bad"), &bad);
    const SECRETS: [&str; 6] = [
        "goodWandbValue7x",
        "badWandbValue9y",
        "48151623420",
        "42230615184",
        "hf_GoodAbCdEfGhIjKlMnOpQrStUvWx1234",
        "hf_BadZyXwVuTsRqPoNmLkJiHgFeDc98765",
    ];
    for (dir, [wandb, db, hf], run) in [
        (&good, [SECRETS[0], SECRETS[2], SECRETS[4]], "<b>good</b>"),
        (
            &bad,
            [SECRETS[1], SECRETS[3], SECRETS[5]],
            "<script>x</script>",
        ),
    ] {
        let cfg = dir.join("train_config.yaml");
        let mut text = std::fs::read_to_string(&cfg).unwrap();
        text.push_str(&format!(
            "wandb_api_key: {wandb}\ndb_password: {db}\nhf_token: {hf}\noptim: \"{run}\"\n"
        ));
        std::fs::write(&cfg, text).unwrap();
    }
    let json = diff_out(&[], &good, &bad, "json");
    let d: serde_json::Value = serde_json::from_str(&json).unwrap();
    let keys: Vec<&str> = d["differences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["key"].as_str().unwrap())
        .collect();
    for k in [
        "config.wandb_api_key",
        "config.db_password",
        "config.hf_token",
    ] {
        assert!(keys.contains(&k), "the plant must reach the diff: {keys:?}");
    }
    assert!(json.contains(SECRETS[1]), "unredacted JSON has the value");
    let base = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .args(["analyze", "--format", "html", "--baseline"])
        .arg(&good)
        .arg(&bad)
        .output()
        .unwrap();
    let base = String::from_utf8(base.stdout).unwrap();
    for (page, rows_in) in [
        (diff_out(&[], &good, &bad, "html"), "settings"),
        (diff_out(&["--lang", "zh"], &good, &bad, "html"), "settings"),
        (base, "diff-settings"),
    ] {
        let doc = parse(&page);
        assert_self_contained(&page, &doc);
        for s in SECRETS {
            assert!(!page.contains(s), "{s} leaked:\n{page}");
        }
        let rows = difference_rows(&doc);
        for k in [
            "config.wandb_api_key",
            "config.db_password",
            "config.hf_token",
        ] {
            let row = text_of(rows[k]);
            assert!(row.contains("[REDACTED]"), "{k}: {row}");
        }
        let settings = text_of(by_id(&doc, rows_in).expect("the settings table"));
        assert!(settings.contains("<script>x</script>"), "{settings}");
        assert!(!page.contains("<script>"));
    }
}

/// Where both runs sampled their memory, the diff page draws each memory both sampled on one
/// chart: the good run solid, the bad run dashed, each from its own first sample, the limit
/// dashed, both peaks in the title; the `--baseline` run page has the same as `#diff-memory`.
/// A pair without samples has no such section.
#[test]
fn diff_page_draws_both_runs_memory_where_both_sampled() {
    let (good, bad) = wrapped_pair();
    let page = diff_out(&[], &good, &bad, "html");
    let doc = parse(&page);
    assert_self_contained(&page, &doc);
    let memory = by_id(&doc, "memory").expect("both runs' memory");
    let charts = memory_charts(memory);
    let titles: Vec<&str> = charts.iter().map(|c| c.0.as_str()).collect();
    assert!(
        titles
            .iter()
            .any(|t| t.starts_with("/dev/shm used: peak ") && t.ends_with(" MiB in the bad run")),
        "{titles:?}"
    );
    assert!(
        titles
            .iter()
            .any(|t| t.starts_with("GPU 0 memory used: peak ")),
        "{titles:?}"
    );
    for (title, labels, svg) in &charts {
        assert_eq!(
            labels,
            &["seconds since each run's first sample", "bytes"],
            "{title}"
        );
        for side in ["series good", "series bad"] {
            assert!(
                svg.descendants()
                    .any(|n| n.attribute("class") == Some(side)),
                "{title}: {side}"
            );
        }
    }
    let (_, _, shm) = &charts[titles
        .iter()
        .position(|t| t.starts_with("/dev/shm"))
        .unwrap()];
    assert!(
        shm.descendants()
            .any(|n| n.attribute("class") == Some("limit")),
        "the limit dashed"
    );
    assert!(
        text_of(memory).contains("samples.csv"),
        "where the samples came from"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .args(["analyze", "--format", "html"])
        .arg(&bad)
        .arg("--baseline")
        .arg(&good)
        .output()
        .unwrap();
    let run_page = String::from_utf8(out.stdout).unwrap();
    let run_doc = parse(&run_page);
    assert!(by_id(&run_doc, "diff-memory").is_some());
    assert!(
        by_id(&run_doc, "memory").is_some(),
        "the run's own memory too"
    );
    let zh = diff_out(&["--lang", "zh"], &good, &bad, "html");
    assert!(zh.contains("两次运行的内存随时间的变化") && zh.contains("自各自第一个采样起的秒数"));
    let none = diff_out(
        &[],
        &fixture("pairs/precision/good"),
        &fixture("pairs/precision/bad"),
        "html",
    );
    assert!(
        by_id(&parse(&none), "memory").is_none(),
        "no samples, no memory"
    );
}

/// `--lang zh`: the diff page's headings, verdict, table columns and chart labels in Chinese;
/// values and paths as the runs tell them.
#[test]
fn chinese_diff_page_has_chinese_labels() {
    let page = diff_out(
        &["--lang", "zh"],
        &fixture("pairs/precision/good"),
        &fixture("pairs/precision/bad"),
        "html",
    );
    let doc = parse(&page);
    assert_eq!(doc.root_element().attribute("lang"), Some("zh-CN"));
    let verdict = text_of(by_id(&doc, "verdict").unwrap());
    assert!(
        verdict.contains("结论") && verdict.contains("最可能的原因：精度"),
        "{verdict}"
    );
    let settings = text_of(by_id(&doc, "settings").unwrap());
    assert!(
        settings.contains("变化的配置") && settings.contains("正常运行（之前）"),
        "{settings}"
    );
    let charts = diff_charts(by_id(&doc, "curves").unwrap());
    assert!(
        charts
            .iter()
            .any(|(t, l)| t.starts_with("损失随步数的变化") && l == &["步数", "损失"]),
        "{charts:?}"
    );
}

/// `analyze BAD --baseline GOOD --format html`: the run's page has the comparison as its
/// `#diff` section, with every difference of the report's JSON and the curves.
#[test]
fn run_page_with_a_baseline_shows_what_changed() {
    let (good, bad) = (
        fixture("pairs/precision/good"),
        fixture("pairs/precision/bad"),
    );
    let run = |format: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
            .args(["analyze", "--format", format])
            .arg(&bad)
            .arg("--baseline")
            .arg(&good)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let json: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    let page = run("html");
    let doc = parse(&page);
    assert_self_contained(&page, &doc);
    let diff = by_id(&doc, "diff").expect("a diff section");
    assert!(text_of(diff).contains("What changed since the good run"));
    let rows = difference_rows(&doc);
    for d in json["diff"]["differences"].as_array().unwrap() {
        assert!(rows.contains_key(d["key"].as_str().unwrap()), "{d}");
    }
    assert!(by_id(&doc, "diff-verdict").is_some() && by_id(&doc, "diff-curves").is_some());
    // Without a baseline, no such section.
    assert!(by_id(&parse(&html(&[], &bad)), "diff").is_none());
}

/// The seed run's page, a wrapped run's page (with memory curves), a page with snapshots'
/// memory as points, the corpus's triage page, a diff's page and the fleet's page in a real
/// browser:
/// headless Chromium loads each from `file://` and its DOM holds the cause card, the
/// timeline's lanes and the charts' titles; the console says nothing was refused (the page's
/// policy forbids every fetch, so a fetch would be refused and logged).
#[test]
#[ignore = "needs chromium: scripts/ci-deps.sh installs it"]
fn seed_page_renders_in_headless_chromium() {
    let browser = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("chromium is installed (scripts/ci-deps.sh)");
    let render = |page: String| {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("report.html");
        std::fs::write(&file, page).unwrap();
        let out = Command::new(browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--enable-logging=stderr",
            ])
            .arg(format!(
                "--user-data-dir={}",
                tmp.path().join("profile").display()
            ))
            .arg("--dump-dom")
            .arg(format!("file://{}", file.display()))
            .output()
            .unwrap();
        let dom = String::from_utf8_lossy(&out.stdout).into_owned();
        let log = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{log}");
        assert!(!log.contains("Refused to"), "{log}");
        dom
    };
    let dom = render(html(&[], &fixture("seed-bus-error")));
    assert!(dom.contains("id=\"cause\""), "{dom}");
    assert!(dom.contains("shm_exhausted"), "{dom}");
    assert!(
        dom.contains("<svg") && dom.contains("class=\"lane-row\""),
        "{dom}"
    );
    let dom = render(html(
        &[],
        &fixture("captured/27_run_shm_sigbus_samples/run"),
    ));
    assert!(dom.contains("id=\"memory\""), "{dom}");
    assert!(
        dom.contains("/dev/shm used: peak 63.3 MiB of 64 MiB")
            && dom.contains("seconds since the command started"),
        "{dom}"
    );
    let dom = render(html(&[], &fixture("corpus/04_nccl_collective_timeout")));
    assert!(
        dom.contains("id=\"memory-snapshots\"")
            && dom.contains("class=\"point after\"")
            && dom.contains("/dev/shm used: before 0 B, after 56 KiB, of 256 GiB"),
        "{dom}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .args(["triage", "--format", "html"])
        .arg(fixture("corpus"))
        .output()
        .unwrap();
    let dom = render(String::from_utf8(out.stdout).unwrap());
    assert!(
        dom.contains("id=\"by-category\"") && dom.contains("class=\"group\""),
        "{dom}"
    );
    let dom = render(diff_out(
        &[],
        &fixture("pairs/precision/good"),
        &fixture("pairs/precision/bad"),
        "html",
    ));
    assert!(
        dom.contains("id=\"verdict\"")
            && dom.contains("class=\"difference\"")
            && dom.contains("loss by step: good run (12 points) and bad run (1 point)"),
        "{dom}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let dom = render(fleet_page(&fleet_history(tmp.path()), &["--html"]));
    assert!(
        dom.contains("id=\"heat-map\"")
            && dom.contains("class=\"cell suspect\"")
            && dom.contains("id=\"top-runs\"")
            && dom.contains("class=\"cited\""),
        "{dom}"
    );
}
