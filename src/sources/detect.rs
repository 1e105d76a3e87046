//! Source-kind detection as a table: file-name patterns first, then sniffing the first few
//! KiB. Adding a kind is adding a row, never another `if`, with one exception: trainwreck's
//! own saved output is recognised by its content before any name (a report is never
//! evidence, whatever it was saved as). It must not parse anything.

use crate::model::SourceKind;
use regex_automata::meta;
use regex_automata::{Input, MatchKind, PatternSet};
use std::sync::OnceLock;

/// How many bytes of a file detection looks at.
pub const SNIFF_BYTES: usize = 8192;

struct Row {
    kind: SourceKind,
    /// Case-insensitive regexes over the file name (not the directory).
    names: &'static [&'static str],
    /// Regexes over the first `SNIFF_BYTES`; each one that matches adds one point.
    sniff: &'static [&'static str],
    /// Points needed from sniffing alone.
    min_points: usize,
}

/// The table. Order breaks ties: earlier rows win. `OWN_REPORT` must stay first.
static TABLE: &[Row] = &[
    Row {
        kind: SourceKind::OwnReport,
        names: &[r"^trainwreck[\w.-]*\.(json|md|xml|txt|log)$"],
        sniff: &[
            // --format json (analyze) and triage's JSON
            r#""schema"\s*:\s*"trainwreck\.(report|triage)/"#,
            // --format markdown
            r"\A\s*## trainwreck: ",
            // --format junit
            r#"<testsuites name="trainwreck""#,
            // the terminal table, saved with `> report.txt`
            r"\Atrainwreck: (no failure|\S+ (—|-) |.{0,80} in \d+ inputs?\.)",
        ],
        min_points: 1,
    },
    Row {
        kind: SourceKind::Notes,
        names: &[
            r"\.(md|markdown)$",
            r"^label\.json$",
            r"^GROUND_TRUTH",
            r"^(README|NOTES)(\.txt)?$",
        ],
        // A label file by content: the fixture format (`category` and `accept`).
        sniff: &[
            r#"\A\s*\{\s*"category"\s*:\s*"\w+""#,
            r#""accept"\s*:\s*\["#,
        ],
        min_points: 2,
    },
    Row {
        kind: SourceKind::CaptureManifest,
        names: &[r"^manifest\.json$"],
        sniff: &[r#""schema"\s*:\s*"trainwreck\.capture/"#],
        min_points: 1,
    },
    Row {
        kind: SourceKind::CapturePeaks,
        names: &[r"^peaks\.txt$"],
        sniff: &[r"(?m)^(shm|cgroup|host|gpu)\.[\w.]+: \d+$"],
        min_points: 1,
    },
    Row {
        kind: SourceKind::CaptureExit,
        names: &[r"^exit_status\.txt$"],
        sniff: &[r"(?m)^(exit_code: -?\d+|signal: SIG[A-Z]+ \(\d+\))$"],
        min_points: 1,
    },
    Row {
        kind: SourceKind::CaptureSamples,
        names: &[r"^samples\.csv$"],
        sniff: &[r"^t_ms,"],
        min_points: 1,
    },
    Row {
        kind: SourceKind::TorchelasticError,
        names: &[r"^error\.json$", r"torchelastic.*\.json$"],
        sniff: &[
            r#"^\s*\{\s*"message"\s*:"#,
            r#""errorTraits""#,
            r#""extraInfo"\s*:\s*\{"#,
        ],
        min_points: 2,
    },
    Row {
        kind: SourceKind::DockerInspect,
        names: &[r"docker.?inspect"],
        sniff: &[r#""HostConfig"\s*:"#, r#""ShmSize"\s*:"#],
        min_points: 2,
    },
    Row {
        kind: SourceKind::K8sPod,
        names: &[r"(kubectl|describe|pod).*\.(txt|log|ya?ml|json)$"],
        sniff: &[
            r"(?m)^Name:\s+\S+\n(?:.*\n){0,3}?Namespace:",
            r"(?m)^\s*Last State:\s+Terminated",
            r#"(?m)^\s*(kind:\s*Pod|"kind":\s*"Pod")"#,
            r"(?m)^\s*Reason:\s+OOMKilled",
        ],
        min_points: 2,
    },
    Row {
        kind: SourceKind::NvidiaSmiCsv,
        names: &[r"nvidia.?smi.*(query|csv)", r"\.csv$"],
        sniff: &[
            r"(?m)^index, ?name",
            r"memory\.(used|total)( \[MiB\])?",
            // --query-compute-apps, --query-remapped-rows
            r"(?m)^pid, ?process_name",
            r"(?m)^gpu_bus_id, ?remapped_rows\.",
            // noheader: a row with a PCI bus id among comma-separated fields
            r"(?m)^\d+, [^,\n]+, [0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.\d",
        ],
        min_points: 1,
    },
    Row {
        kind: SourceKind::NvidiaSmiQ,
        names: &[r"nvidia.?smi.*[-_]q\b", r"nvidia.?smi.*-q\.txt$"],
        sniff: &[
            r"==============NVSMI LOG==============",
            r"(?m)^Attached GPUs\s+:",
        ],
        min_points: 1,
    },
    Row {
        kind: SourceKind::NvidiaSmi,
        names: &[r"^nvidia.?smi(\.txt|\.log|)$"],
        sniff: &[r"NVIDIA-SMI \d", r"\| GPU\s+Name\s+"],
        min_points: 1,
    },
    Row {
        kind: SourceKind::Df,
        names: &[r"^df([-_.].*)?$"],
        sniff: &[r"(?m)^Filesystem\s+(Size|1[KM]?-blocks|1B-blocks|Type|\d+[KMG]?-blocks)"],
        min_points: 1,
    },
    Row {
        kind: SourceKind::Meminfo,
        names: &[r"meminfo"],
        sniff: &[r"(?m)^MemTotal:\s+\d+ kB", r"(?m)^MemAvailable:"],
        min_points: 1,
    },
    Row {
        kind: SourceKind::Free,
        names: &[r"^free([-_.].*)?$"],
        sniff: &[r"(?m)^\s+total\s+used\s+free\s+shared\s+buff"],
        min_points: 1,
    },
    Row {
        kind: SourceKind::CgroupMemory,
        names: &[
            r"^memory\.(events(\.local)?|max|current|peak|high|low|min|stat|swap\.\w+|oom\.group|pressure)$",
            r"^memory\.(limit_in_bytes|usage_in_bytes|max_usage_in_bytes|failcnt|oom_control|memsw\.\w+)$",
        ],
        sniff: &[r"(?m)^oom_kill \d+\n", r"(?m)^oom_kill_disable \d"],
        min_points: 1,
    },
    Row {
        kind: SourceKind::Ulimit,
        names: &[r"ulimit", r"^limits(\.txt)?$", r"proc_limits"],
        sniff: &[
            r"(?m)^open files\s+\(-n\)",
            r"(?m)^max locked memory\s+\(",
            r"(?m)^Limit\s+Soft Limit\s+Hard Limit",
        ],
        min_points: 1,
    },
    Row {
        kind: SourceKind::Dmesg,
        names: &[
            r"dmesg",
            r"kern\.log",
            r"^syslog",
            r"journal.*-k",
            r"^messages$",
        ],
        sniff: &[
            r"(?m)^\[\s*\d+\.\d{6}\] ",
            // dmesg -H: deltas and minute headers
            r"(?m)^\[\s*\+\d+\.\d{6}\] ",
            r"(?m)^\[[A-Z][a-z]{2}\d{1,2} \d\d:\d\d\] ",
            // dmesg --time-format iso
            r"(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d{6}[+-]\d\d:\d\d ",
            // journalctl/syslog with localized (CJK) month names
            r"(?m)^\d{1,2}[月월] +\d+ \d\d:\d\d:\d\d \S+ kernel: ",
            r"(?m)^\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\] ",
            r"(?m)^\S+ +\d+ \d\d:\d\d:\d\d \S+ kernel: ",
            r"(?m)^\d{4}-\d\d-\d\dT\S+ \S+ kernel: ",
            r"NVRM: ",
        ],
        min_points: 1,
    },
    Row {
        kind: SourceKind::CoreText,
        names: &[r"coredumpctl", r"gdb.*(bt|backtrace)", r"backtrace"],
        sniff: &[
            r"(?m)^\s*PID: \d+ \(.*\)\n\s*UID:",
            r"(?m)^#\d+\s+0x[0-9a-f]+ in ",
            r"(?m)^COREDUMP_SIGNAL=",
            r"(?m)^Program terminated with signal SIG",
        ],
        min_points: 1,
    },
    Row {
        kind: SourceKind::SlurmLog,
        names: &[r"^slurm-\d+(_\d+)?\.out$", r"sacct", r"scontrol"],
        sniff: &[
            r"slurmstepd: error:",
            r"(?m)^\s*JobId=\d+ JobName=",
            r"(?m)^JobID\s+JobName",
            r"(?m)^JobID\|",
        ],
        min_points: 1,
    },
    Row {
        kind: SourceKind::EnvDump,
        names: &[
            r"^env(iron(ment)?)?(\.txt)?$",
            r"pip.?(list|freeze)",
            r"collect.?env",
            r"ds.?report",
        ],
        sniff: &[
            r"(?m)^PyTorch version: ",
            r"(?m)^Package\s+Version\n-+ -+",
            r"(?m)^(PATH|HOME|HOSTNAME)=",
            r"(?m)^torch==\d",
            // pip freeze: two `name==version` lines in a row
            r"(?m)^[A-Za-z0-9_.\-]+==\d\S*\n[A-Za-z0-9_.\-]+==\d",
            r"DeepSpeed general environment info:",
        ],
        min_points: 1,
    },
    Row {
        kind: SourceKind::UcxMpiLog,
        names: &[],
        sniff: &[
            r"(?m)^\[\S+:\d+:\d+:\d+\] +\S+\.c:\d+ ",
            r"\[\d+,\d+\]<std(out|err)>:",
            r"==== backtrace \(tid:",
            r"Caught signal \d+ \(",
        ],
        min_points: 1,
    },
    Row {
        kind: SourceKind::DeepspeedLog,
        names: &[],
        sniff: &[
            r"\[(INFO|WARNING|ERROR)\] \[(launch|runner|engine|logging|config|utils)\.py:\d+:",
            r"deepspeed\.launcher",
            r"DeepSpeed ",
        ],
        min_points: 1,
    },
    Row {
        kind: SourceKind::HfTrainerLog,
        names: &[],
        sniff: &[
            r"\[(INFO|WARNING)\|(trainer|training_args|modeling_utils)\.py:\d+\]",
            r"\{'loss': ",
            r"llamafactory",
            r"\*\*\*\*\* Running training \*\*\*\*\*",
        ],
        min_points: 1,
    },
    Row {
        kind: SourceKind::TorchLog,
        names: &[r"^(std(out|err)|console|train|rank\d+|.*rank.?\d+.*)\.(log|txt)$"],
        sniff: &[
            r"\[rank\d+\]:",
            r"\[default\d+\]:",
            r"torch/distributed/",
            r"torch\.distributed",
            r"ProcessGroupNCCL",
            r"Traceback \(most recent call last\)",
        ],
        min_points: 1,
    },
    Row {
        kind: SourceKind::NcclLog,
        names: &[r"nccl.*\.(log|txt)$"],
        sniff: &[r"NCCL (INFO|WARN) "],
        min_points: 1,
    },
];

/// `TABLE`'s row of trainwreck's own output.
const OWN_REPORT: usize = 0;

/// The table compiled as two regex sets (one automaton each instead of a hundred regexes:
/// start-up cost), with each pattern's row.
struct Compiled {
    names: Set,
    name_row: Vec<usize>,
    sniffs: Set,
    sniff_row: Vec<usize>,
}

/// Several regexes searched at once: which of them match (what `regex::bytes::RegexSet`
/// gives, built as it builds one but from one parse of each pattern and without a literal
/// prefilter, whose extraction was a third of start-up's table building and which a file
/// name or an 8 KiB head does not need); its search caches shared by the threads
/// (`scan::shared`), since each grows with the heads it searched.
struct Set(meta::Regex, crate::scan::shared::Caches<meta::Cache>);

impl Set {
    /// The indexes of the patterns that match somewhere in `hay`, ascending.
    fn matches(&self, hay: &[u8]) -> impl Iterator<Item = usize> {
        let mut set = PatternSet::new(self.0.pattern_len());
        self.1.with(
            || self.0.create_cache(),
            |cache| {
                self.0
                    .which_overlapping_matches_with(cache, &Input::new(hay), &mut set)
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
    // `regex::bytes::RegexSet`'s configuration, less the prefilter.
    let config = meta::Config::new()
        .nfa_size_limit(Some(10 << 20))
        .hybrid_cache_capacity(2 << 20)
        .match_kind(MatchKind::All)
        .utf8_empty(false)
        .which_captures(regex_automata::nfa::thompson::WhichCaptures::None)
        .auto_prefilter(false);
    let re = meta::Builder::new()
        .configure(config)
        .build_many_from_hir(&hirs)
        .expect("detect table regexes");
    Set(re, Default::default())
}

/// Compile the detection tables now (from a spare thread while the rules load), so the
/// first file's detection does not wait for them.
pub fn warm_up() {
    compiled();
}

fn compiled() -> &'static Compiled {
    static C: OnceLock<Compiled> = OnceLock::new();
    C.get_or_init(|| {
        let (mut names, mut name_row, mut sniffs, mut sniff_row) = (vec![], vec![], vec![], vec![]);
        for (row, r) in TABLE.iter().enumerate() {
            for p in r.names {
                names.push(format!("(?i){p}"));
                name_row.push(row);
            }
            for p in r.sniff {
                sniffs.push(p.to_string());
                sniff_row.push(row);
            }
        }
        Compiled {
            names: ascii_set(&names),
            name_row,
            sniffs: ascii_set(&sniffs),
            sniff_row,
        }
    })
}

/// Magic numbers of binary formats we recognise before anything else.
pub fn is_elf(head: &[u8]) -> bool {
    head.starts_with(b"\x7fELF")
}
pub fn is_gzip(head: &[u8]) -> bool {
    head.starts_with(&[0x1f, 0x8b])
}
pub fn is_zstd(head: &[u8]) -> bool {
    head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd])
}
pub fn is_xz(head: &[u8]) -> bool {
    head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0])
}
pub fn is_pickle(head: &[u8]) -> bool {
    head.len() >= 2 && head[0] == 0x80 && (2..=5).contains(&head[1])
}

/// Text with a few stray NULs (a worker's signal handler writes one) is still text;
/// a head that is mostly control bytes is not.
pub fn looks_binary(head: &[u8]) -> bool {
    if head.is_empty() {
        return false;
    }
    let bad = head.iter().filter(|&&b| is_control(b)).count();
    bad * 20 > head.len()
}

/// A control byte text has no use for: not tab, line ends, form feed or ESC (colours).
pub fn is_control(b: u8) -> bool {
    b < 0x09 || (0x0e..0x1b).contains(&b)
}

/// The kinds a row of the table gives a file, in table order. The others are decided before
/// or after the table: an ELF core or another binary by its first bytes, a Flight Recorder
/// dump by its pickle header, plain text when no row agrees.
pub fn table_kinds() -> impl Iterator<Item = SourceKind> {
    TABLE.iter().map(|r| r.kind)
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
    let mut name_rows = vec![false; TABLE.len()];
    for i in c.names.matches(lname.as_bytes()) {
        name_rows[c.name_row[i]] = true;
    }
    let mut points = vec![0usize; TABLE.len()];
    for i in c.sniffs.matches(head) {
        points[c.sniff_row[i]] += 1;
    }
    if points[OWN_REPORT] > 0 {
        return SourceKind::OwnReport;
    }
    let name_kind = |generic: bool| {
        TABLE.iter().enumerate().find_map(|(row, r)| {
            let is_generic = matches!(r.kind, SourceKind::TorchLog | SourceKind::NcclLog);
            (is_generic == generic && name_rows[row] && sniff_agrees(r, points[row], head))
                .then_some(r.kind)
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
    for (row, r) in TABLE.iter().enumerate() {
        let p = points[row];
        if p >= r.min_points && p > 0 && best.is_none_or(|(_, b)| p > b) {
            best = Some((r.kind, p));
        }
    }
    best.map(|(k, _)| k)
        .or_else(|| name_kind(true))
        .unwrap_or(SourceKind::Text)
}

/// A file name alone is not enough for log kinds named generically (`console.log` can hold
/// anything): for those the name only decides among kinds whose content does not contradict.
/// `points`: how many of the row's sniff patterns matched the head.
fn sniff_agrees(row: &Row, points: usize, head: &[u8]) -> bool {
    match row.kind {
        // A generically named log (`console.log`) is only a hint, used when content says nothing.
        SourceKind::TorchLog | SourceKind::NcclLog => true,
        // Notes are notes by name whatever they quote.
        SourceKind::Notes => true,
        // An environment dump by name may be filtered (`env | grep -E 'SLURM|NCCL' > env.txt`):
        // without PATH or HOME, its lines being `NAME=value` agrees with the name.
        SourceKind::EnvDump => points > 0 || head.is_empty() || assignments(head),
        // Structured snapshots: the name is strong evidence, but an empty or foreign file is
        // not that snapshot (a `df.txt` holding an error message is plain text).
        kind => {
            head.is_empty()
                || row.sniff.is_empty()
                || points > 0
                || matches!(kind, SourceKind::CgroupMemory | SourceKind::Ulimit)
        }
    }
}

/// A head whose first lines (up to five, blank lines aside) are all `NAME=value`, as `env`
/// prints them.
fn assignments(head: &[u8]) -> bool {
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
        assert_eq!(c.names.len(), c.name_row.len());
        assert_eq!(c.sniffs.len(), c.sniff_row.len());
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
