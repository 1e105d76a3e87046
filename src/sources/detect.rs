//! Source-kind detection as a table (the `detect` of each kind's row in `kinds`): file-name
//! patterns first, then sniffing the first few KiB. Adding a kind is adding a row, never
//! another `if`, with one exception: trainwreck's
//! own saved output is recognised by its content before any name (a report is never
//! evidence, whatever it was saved as). It must not parse anything.

use super::kinds::{ByName, Detect, KINDS, SourceKind, Table};
use regex_automata::nfa::thompson;
use regex_automata::{Input, MatchKind, PatternSet, hybrid};
use std::sync::OnceLock;

/// How many bytes of a file detection looks at.
pub(crate) const SNIFF_BYTES: usize = 8192;

/// The detection table: the kinds with a `Detect::Table` row, in row order (earlier rows win
/// ties).
fn table() -> impl Iterator<Item = (SourceKind, &'static Table)> {
    KINDS.iter().filter_map(|k| match &k.detect {
        Detect::Table(t) => Some((k.kind, t)),
        Detect::ByContent => None,
    })
}

/// The table compiled as two regex sets (one automaton each instead of a hundred regexes:
/// start-up cost), with each pattern's row. The two sets are built apart (`names`, `sniffs`),
/// so that a spare thread builds each beside the other.
struct Compiled {
    /// The table's rows.
    rows: Vec<(SourceKind, &'static Table)>,
    /// The row of trainwreck's own output, recognised by content before any name.
    own_report: usize,
    name_row: Vec<usize>,
    sniff_row: Vec<usize>,
}

/// Several regexes searched at once: which of them match (what `regex::bytes::RegexSet`
/// gives). Only what that answer needs is built: one parse of each pattern, the forward
/// Thompson NFA and its lazy DFA, searched for every match (`MatchKind::All`, overlapping).
/// `regex`'s meta regex, which this was, searches a set the same way (its forward lazy DFA's
/// overlapping search) but also compiled a reverse NFA, for finding where a match starts, and
/// a literal prefilter, neither of which a question of which patterns match asks. Its search
/// caches shared by the threads (`scan::shared`), since each grows with the heads it searched.
struct Set(
    hybrid::dfa::DFA,
    crate::scan::shared::Caches<hybrid::dfa::Cache>,
);

impl Set {
    /// The indexes of the patterns that match somewhere in `hay`, ascending.
    fn matches(&self, hay: &[u8]) -> impl Iterator<Item = usize> {
        let mut set = PatternSet::new(self.0.pattern_len());
        self.1.with(
            || self.0.create_cache(),
            |cache| {
                // No quit byte, no Unicode word boundary, no giving up on a thrashed cache:
                // the search cannot fail.
                self.0
                    .try_which_overlapping_matches(cache, &Input::new(hay), &mut set)
                    .expect("a lazy DFA that never quits")
            },
        );
        set.iter()
            .map(|p| p.as_usize())
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.pattern_len()
    }
}

/// Table regexes are ASCII: Unicode classes (`\w`, `\d`, case folding) cost most of the
/// compile time and buy nothing for file names and log headers. A pattern that needs
/// Unicode (CJK month names) gets it in an inline group.
fn ascii_set(patterns: &[String]) -> Set {
    let ascii = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .build();
    let hirs: Vec<_> = patterns
        .iter()
        .map(|p| match ascii.clone().parse(p) {
            Ok(hir) => hir,
            Err(_) => ascii
                .clone()
                .parse(&format!("(?u:{p})"))
                .expect("detect table regexes"),
        })
        .collect();
    // The configuration `regex::bytes::RegexSet` gave its meta regex (size limit, cache
    // capacity, every match, empty matches anywhere, no capture states), for the parts built.
    let nfa = thompson::Compiler::new()
        .configure(
            thompson::Config::new()
                .nfa_size_limit(Some(10 << 20))
                .utf8(false)
                .which_captures(thompson::WhichCaptures::None),
        )
        .build_many_from_hir(&hirs)
        .expect("detect table regexes");
    let dfa = hybrid::dfa::Builder::new()
        .configure(
            hybrid::dfa::Config::new()
                .match_kind(MatchKind::All)
                .cache_capacity(2 << 20),
        )
        .build_from_nfa(nfa)
        .expect("detect table regexes");
    Set(dfa, Default::default())
}

/// Compile the detection tables now (from a spare thread while the rules load), so the
/// first file's detection does not wait for them: the name set on one more thread, the
/// sniff set (the larger) on this one.
pub(crate) fn warm_up() {
    let names = std::thread::spawn(|| {
        self::names();
    });
    sniffs();
    let _ = names.join();
}

fn compiled() -> &'static Compiled {
    static C: OnceLock<Compiled> = OnceLock::new();
    C.get_or_init(|| {
        let (mut name_row, mut sniff_row) = (vec![], vec![]);
        let rows: Vec<_> = table().collect();
        for (row, (_, r)) in rows.iter().enumerate() {
            name_row.extend(r.names.iter().map(|_| row));
            sniff_row.extend(r.sniff.iter().map(|_| row));
        }
        Compiled {
            own_report: rows
                .iter()
                .position(|(k, _)| *k == SourceKind::OwnReport)
                .expect("a row for trainwreck's own output"),
            rows,
            name_row,
            sniff_row,
        }
    })
}

/// The file-name patterns of every row, in row order, as one set.
fn names() -> &'static Set {
    static S: OnceLock<Set> = OnceLock::new();
    S.get_or_init(|| {
        let p: Vec<_> = table()
            .flat_map(|(_, r)| r.names.iter().map(|p| format!("(?i){p}")))
            .collect();
        ascii_set(&p)
    })
}

/// The sniff patterns of every row, in row order, as one set.
fn sniffs() -> &'static Set {
    static S: OnceLock<Set> = OnceLock::new();
    S.get_or_init(|| {
        let p: Vec<_> = table()
            .flat_map(|(_, r)| r.sniff.iter().map(|p| p.to_string()))
            .collect();
        ascii_set(&p)
    })
}

/// Magic numbers of binary formats we recognise before anything else.
pub(crate) fn is_elf(head: &[u8]) -> bool {
    head.starts_with(b"\x7fELF")
}
pub(crate) fn is_gzip(head: &[u8]) -> bool {
    head.starts_with(&[0x1f, 0x8b])
}
pub(crate) fn is_zstd(head: &[u8]) -> bool {
    head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd])
}
pub(crate) fn is_xz(head: &[u8]) -> bool {
    head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0])
}
pub(crate) fn is_pickle(head: &[u8]) -> bool {
    head.len() >= 2 && head[0] == 0x80 && (2..=5).contains(&head[1])
}

/// Text with a few stray NULs (a worker's signal handler writes one) is still text;
/// a head that is mostly control bytes is not.
pub(crate) fn looks_binary(head: &[u8]) -> bool {
    if head.is_empty() {
        return false;
    }
    let bad = head.iter().filter(|&&b| is_control(b)).count();
    bad * 20 > head.len()
}

/// A control byte text has no use for: not tab, line ends, form feed or ESC (colours).
pub(crate) fn is_control(b: u8) -> bool {
    b < 0x09 || (0x0e..0x1b).contains(&b)
}

/// The kinds a row of the table gives a file, in table order. The others are decided before
/// or after the table: an ELF core or another binary by its first bytes, a Flight Recorder
/// dump by its pickle header, plain text when no row agrees.
pub fn table_kinds() -> impl Iterator<Item = SourceKind> {
    table().map(|(k, _)| k)
}

/// Pick the kind of a file from its name (without directories) and its first bytes.
pub fn detect(file_name: &str, head: &[u8]) -> SourceKind {
    if is_elf(head) {
        // ET_CORE == 4 at offset 16 (little-endian u16); other ELF files are binaries.
        if head.len() > 17 && head[16] == 4 && head[17] == 0 {
            return SourceKind::ElfCore;
        }
        return SourceKind::Binary;
    }
    let c = compiled();
    let lname = file_name.trim_end_matches(".gz");
    let mut name_rows = vec![false; c.rows.len()];
    for i in names().matches(lname.as_bytes()) {
        name_rows[c.name_row[i]] = true;
    }
    let mut points = vec![0usize; c.rows.len()];
    for i in sniffs().matches(head) {
        points[c.sniff_row[i]] += 1;
    }
    if points[c.own_report] > 0 {
        return SourceKind::OwnReport;
    }
    let name_kind = |generic: bool| {
        c.rows.iter().enumerate().find_map(|(row, (kind, r))| {
            let is_generic = matches!(r.by_name, ByName::Hints);
            (is_generic == generic && name_rows[row] && sniff_agrees(r, points[row], head))
                .then_some(*kind)
        })
    };
    if let Some(k) = name_kind(false) {
        return k;
    }
    if is_pickle(head) {
        return SourceKind::FlightRecorder;
    }
    if looks_binary(head) {
        return SourceKind::Binary;
    }
    let mut best: Option<(SourceKind, usize)> = None;
    for (row, (kind, r)) in c.rows.iter().enumerate() {
        let p = points[row];
        if p >= r.min_points && p > 0 && best.is_none_or(|(_, b)| p > b) {
            best = Some((*kind, p));
        }
    }
    best.map(|(k, _)| k)
        .or_else(|| name_kind(true))
        .unwrap_or(SourceKind::Text)
}

/// Whether the content agrees with a name that matched `row` (its `by_name`). `points`: how
/// many of the row's sniff patterns matched the head.
fn sniff_agrees(row: &Table, points: usize, head: &[u8]) -> bool {
    match row.by_name {
        ByName::Decides | ByName::Hints => true,
        ByName::UnlessContradicted(agrees) => {
            head.is_empty() || row.sniff.is_empty() || points > 0 || agrees.is_some_and(|f| f(head))
        }
    }
}

/// A head whose first lines (up to five, blank lines aside) are all `NAME=value`, as `env`
/// prints them.
pub(crate) fn assignments(head: &[u8]) -> bool {
    let mut lines = head
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.is_empty())
        .take(5)
        .peekable();
    lines.peek().is_some()
        && lines.all(|l| {
            let name = l.split(|&b| b == b'=').next().unwrap_or_default();
            name.len() < l.len()
                && name
                    .first()
                    .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
                && name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filtered_env_dump_is_one_by_its_name() {
        let head = b"SLURM_JOB_ID=778899\nNCCL_DEBUG=INFO\n";
        assert_eq!(detect("environment.txt", head), SourceKind::EnvDump);
        assert_eq!(detect("env", head), SourceKind::EnvDump);
        // The name alone does not make a log an env dump, nor the lines make any file one.
        assert_eq!(
            detect("env.txt", b"SLURM_JOB_ID=1\nstep 1 loss 2.0\n"),
            SourceKind::Text
        );
        assert_eq!(detect("out.txt", head), SourceKind::Text);
    }

    #[test]
    fn every_table_regex_compiles() {
        let c = compiled();
        assert_eq!(names().len(), c.name_row.len());
        assert_eq!(sniffs().len(), c.sniff_row.len());
    }

    #[test]
    fn df_by_content() {
        let head = b"Filesystem      Size  Used Avail Use% Mounted on\ntmpfs            64M     0   64M   0% /dev/shm\n";
        assert_eq!(detect("snap.txt", head), SourceKind::Df);
    }

    #[test]
    fn deepspeed_by_content() {
        let head = b"[2026-11-29 18:56:18,938] [INFO] [runner.py:618:main] cmd = python\n";
        assert_eq!(detect("console.log", head), SourceKind::DeepspeedLog);
        assert_eq!(detect("console.log", b"hello\n"), SourceKind::TorchLog);
        assert_eq!(detect("out.txt", b"hello\n"), SourceKind::Text);
    }

    #[test]
    fn cgroup_by_name() {
        assert_eq!(
            detect(
                "memory.events",
                b"low 0\nhigh 0\nmax 0\noom 3\noom_kill 2\n"
            ),
            SourceKind::CgroupMemory
        );
        assert_eq!(detect("memory.max", b"max\n"), SourceKind::CgroupMemory);
    }

    #[test]
    fn kernel_log_forms_found_in_the_wild() {
        for head in [
            "[  +0.000316] python3 invoked oom-killer\n",
            "[Nov29 20:14] python3 invoked oom-killer\n",
            "2026-11-29T20:08:03,000000+00:00 Linux version 6.18\n",
            "12月 17 10:04:41 gpu01 kernel: NVRM: Xid (PCI:0000:3b:00): 79\n",
        ] {
            assert_eq!(
                detect("k.txt", head.as_bytes()),
                SourceKind::Dmesg,
                "{head}"
            );
        }
    }

    #[test]
    fn smi_csv_variants() {
        let apps = b"pid, process_name, gpu_bus_id, used_gpu_memory [MiB]\n511, python3, 00000000:00:06.0, 21702 MiB\n";
        assert_eq!(detect("apps.csv", apps), SourceKind::NvidiaSmiCsv);
        let noheader = b"0, NVIDIA H200, 00000000:00:06.0, 21711, 143771, 100, 53, 0, 0, 0\n";
        assert_eq!(detect("q.txt", noheader), SourceKind::NvidiaSmiCsv);
    }

    #[test]
    fn own_reports_by_content_whatever_their_name_and_notes_by_name() {
        let json = br#"{
  "schema": "trainwreck.report/1",
  "verdict": "diagnosed","#;
        assert_eq!(detect("out.json", json), SourceKind::OwnReport);
        assert_eq!(
            detect(
                "console.log",
                b"## trainwreck: `gpu_oom` -- CUDA out of memory\n"
            ),
            SourceKind::OwnReport
        );
        let junit = b"<?xml version=\"1.0\"?>\n<testsuites name=\"trainwreck\" tests=\"1\">";
        assert_eq!(detect("results.xml", junit), SourceKind::OwnReport);
        assert_eq!(
            detect("report.txt", b"trainwreck: no failure found in 3 inputs.\n"),
            SourceKind::OwnReport
        );
        let quote = b"We saw RuntimeError: CUDA out of memory on rank 3\n";
        assert_eq!(detect("README.md", quote), SourceKind::Notes);
        assert_eq!(detect("GROUND_TRUTH.md", quote), SourceKind::Notes);
        assert_eq!(
            detect(
                "case.json",
                br#"{"category": "gpu_oom", "accept": ["gpu_oom"]}"#
            ),
            SourceKind::Notes
        );
        // A log that mentions trainwreck later is still a log.
        assert_eq!(
            detect("console.log", b"step 1\ntrainwreck: no failure found\n"),
            SourceKind::TorchLog
        );
    }

    #[test]
    fn stray_nul_is_still_text() {
        let mut head = b"ERROR: Unexpected bus error encountered in worker.\n".to_vec();
        head.push(0);
        head.extend_from_slice(b"more text here\n");
        assert!(!looks_binary(&head));
    }
}
