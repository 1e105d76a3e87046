//! One analysis, in the order it happens: `plan` (which inputs, split how), `read` (open each
//! input or archive member by its kind: lines, a core, a Flight Recorder dump, an archive's
//! members), `stream` (the chunk loop: every chunk once through the fact parser and the one
//! scanner, each hit handed to the consumer of its watcher: `rule_hits`, `launch`, `tail`),
//! `merge` (the ranges of a split file joined in order), then `after` (what only the whole
//! run can say: advice lines, lines already there before the run, cores tied to ranks).
//! Files are processed in parallel; results are merged in input order so output is stable.
//! Returns data only: ranking is `correlate`'s, printing is `report`'s.

mod after;
mod launch;
mod lookback;
mod merge;
mod plan;
mod read;
mod rule_hits;
mod stream;
mod tail;

use crate::facts::FactSet;
use crate::inputs::{Input, Source};
use crate::model::{Attribution, Fact, Phase, Warning, text};
use crate::rules::KnowledgeBase;
use crate::scan::watch::{Registry, Routes};
use crate::scan::{ScanScratch, Scanner};
use crate::sources::SourceKind;
use crate::sources::encoding::NotUtf8;
use crate::sources::last_lines::LastLine;
use crate::sources::launcher::{self, LaunchEvent};
use crate::sources::reader::{ChunkReader, LongLine};
use crate::sources::{self, Event, detect, elfcore};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use stream::Part;

/// Plain-text files at least this big are split into byte ranges of about this size,
/// scanned by several threads at once (line numbers fixed up at merge).
pub const SEGMENT_BYTES: u64 = 64 << 20;

/// Counters an analysis updates as it goes, for a progress display and for the caps that
/// count the whole analysis. The analysis never prints; the caller polls these. One per
/// analysis: a second analysis given the same `Progress` would inherit its decompression total.
#[derive(Debug, Default)]
pub struct Progress {
    pub files_total: AtomicUsize,
    pub files_done: AtomicUsize,
    pub bytes_total: AtomicU64,
    pub bytes_done: AtomicU64,
    /// Bytes decompressed so far from all compressed inputs and zip members
    /// (`limits::GZIP_BYTES_TOTAL` caps it).
    pub decompressed: sources::open::Inflated,
}

/// At most this many hits are kept per (rule signature, file); the rest are only counted.
pub const MAX_HITS_PER_SIG_FILE: usize = crate::limits::HITS_PER_SIGNATURE;

/// Longest evidence text kept, in characters.
pub const MAX_TEXT: usize = 400;

/// An input as the report shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct InputInfo {
    pub path: String,
    pub kind: SourceKind,
    pub bytes: u64,
    /// Shown only for snapshots taken before or after the run.
    #[serde(skip_serializing_if = "Phase::is_during")]
    pub phase: Phase,
    /// What its text was decoded from, when not UTF-8 (`utf-16le`, `utf-16be`, `gb18030`,
    /// `big5`, `euc-kr`, `euc-jp`, `shift_jis`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encoding: Option<sources::encoding::TextEncoding>,
    /// Lines read (0 for what is not read as lines).
    #[serde(skip)]
    pub lines: u64,
    /// Last modification (Unix seconds), when the input is a file: the year of a year-less
    /// glog time when no line of the run carries a full date.
    #[serde(skip)]
    pub modified: Option<i64>,
    /// For a stream (stdin, a FIFO): the digest of the bytes read, what the history knows a
    /// paste by (`open::ReadMeter::digest`).
    #[serde(skip)]
    pub digest: Option<String>,
}

/// One line that matched one signature of one rule.
#[derive(Debug, Clone)]
pub struct RuleHit {
    pub rule: usize,
    pub signature: usize,
    /// Index into `Analysis::inputs`.
    pub input: usize,
    pub line: u64,
    pub text: String,
    pub attr: Attribution,
    pub captures: Vec<(String, String)>,
}

#[derive(Debug, Default)]
pub struct Analysis {
    pub inputs: Vec<InputInfo>,
    pub hits: Vec<RuleHit>,
    /// Hits beyond the per-file cap: (rule, count).
    pub dropped_hits: Vec<(usize, u64)>,
    pub facts: FactSet,
    pub events: Vec<(usize, Event)>,
    pub warnings: Vec<Warning>,
    /// What launchers and NCCL said (exits, teardown, watchdog, fingerprints), per input, in
    /// line order: the exit facts and the timeline are both derived from these.
    pub launch: Vec<(usize, LaunchEvent)>,
    /// Flight Recorder dumps read: (input, summary).
    pub flight: Vec<(usize, sources::flight_recorder::FrDump)>,
    /// `trainwreck run`'s memory samples, one per capture folder read.
    pub samples: Vec<sources::samples::Samples>,
    /// Core dumps read, with the input they came from.
    pub cores: Vec<CoreReport>,
    /// The last timed line of each rank of each log file (`sources::last_lines`).
    pub last_lines: Vec<LastLine>,
    /// The last error-ish lines of each file (bounded, `errtail`), for fingerprinting
    /// failures no rule explains.
    pub error_tail: Vec<crate::errtail::TailLine>,
    /// Lines that carry framework advice (a rule of role advice matched them), as (input,
    /// line): they stay error lines (the run did die) but are evidence for nothing.
    pub advice_lines: Vec<(usize, u64)>,
    /// Per input with one: the last line saying the run ended well (`errtail::CLEAN_END`).
    pub clean_end: Vec<(usize, u64)>,
    /// Per log read to its end: how its output stops (`sources::ending`), its lines numbered.
    pub endings: Vec<(usize, sources::ending::Ending)>,
    /// The error tail's reports that did not end the run, as `correlate::traceback::
    /// ignored_reports` finds them: read once per analysis there (each of its readers
    /// otherwise read every tail line again), after the analysis is complete.
    pub ignored: std::sync::OnceLock<Vec<crate::correlate::traceback::Ignored>>,
}

impl Analysis {
    /// Add one input's results as the next input (its index is the number already added).
    fn absorb(&mut self, r: FileResult) {
        let i = self.inputs.len();
        for l in &r.long_lines {
            let (line, bytes, first) = (l.lineno, l.bytes, sources::reader::DEFAULT_BUF);
            let cr = l.after_cr;
            let (after, after_zh) = if cr > 0 {
                (
                    format!(" and the {cr} after its last carriage return"),
                    format!("和最后一个回车符之后的 {cr} 字节"),
                )
            } else {
                Default::default()
            };
            self.warnings.push(Warning::new(
                Some(&r.info.path),
                text!(
                    "line {line} is {bytes} bytes long: only its first {first} bytes{after} were scanned",
                    "第 {line} 行长 {bytes} 字节：只扫描了前 {first} 字节{after_zh}"
                ),
            ));
        }
        if let Some(w) = r.holes.warning() {
            self.warnings.push(Warning::new(Some(&r.info.path), w));
        }
        if let Some(w) = not_utf8_warning(&r.not_utf8, &r.info.path) {
            self.warnings.push(Warning::new(Some(&r.info.path), w));
        }
        self.inputs.push(r.info);
        for mut h in r.hits {
            h.input = i;
            self.hits.push(h);
        }
        for (rule, n) in r.dropped {
            match self.dropped_hits.iter_mut().find(|(x, _)| *x == rule) {
                Some(e) => e.1 += n,
                None => self.dropped_hits.push((rule, n)),
            }
        }
        for f in r.facts {
            self.facts.push(f);
        }
        self.events.extend(r.events.into_iter().map(|e| (i, e)));
        if let Some(l) = r.tail.last_clean() {
            self.clean_end.push((i, l));
        }
        self.error_tail.extend(r.tail.into_lines(i));
        self.last_lines.extend(r.last_lines);
        if let Some(mut e) = r.ending {
            e.number(self.inputs[i].lines);
            self.endings.push((i, e));
        }
        self.warnings.extend(r.warnings);
        self.cores.extend(r.core.map(|c| *c));
        self.launch.extend(r.launch.into_iter().map(|e| (i, e)));
        if let Some(d) = r.flight {
            self.flight.push((i, d));
        }
        // A GPU whose sampled memory climbed to the end (what is kept across steps grows):
        // a fact, cited at the samples' file, for the memory fix to read.
        if let Some(s) = &r.samples {
            for c in sources::samples::gpu_climbs(s) {
                let Ok(gpu) = c.gpu.parse::<u32>() else {
                    continue;
                };
                let mut f = Fact::new(
                    crate::fact_names::gpu(gpu, "memory_climb_from_bytes"),
                    c.from,
                );
                f.path = s.path.clone();
                f.text = format!(
                    "GPU {} memory climbed from {} to {} over the samples",
                    c.gpu, c.from, c.to
                );
                self.facts.push(f);
            }
        }
        self.samples.extend(r.samples);
    }
}

/// A core dump's summary (signal, fault, mapping, stack) for the report.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CoreReport {
    pub path: String,
    #[serde(flatten)]
    pub summary: elfcore::CoreSummary,
}

/// Who watches the scanner's lines: each registers its own patterns and gets its own hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Watcher {
    /// A rule signature; local number = index into `kb.sig_of`.
    Rules,
    /// A launcher/NCCL line shape; local number = index into `launcher::LINES`.
    Launcher,
    /// An error-tail word (`errtail::LITERALS`) or a second-tier token (`tokens`).
    ErrorTail,
    /// A clean-end word (`errtail::CLEAN_END`).
    CleanEnd,
}

/// The one scanner over rule signatures, launcher/NCCL line shapes and error-tail words.
pub struct Engine<'kb> {
    pub kb: &'kb KnowledgeBase,
    scanner: Scanner,
    routes: Routes<Watcher>,
    /// Where core dumps' mapped files are looked up for symbols (`--sysroot`).
    pub core_options: elfcore::CoreOptions,
    /// The most lines any `preceded_by` looks back (kept across chunk and range edges).
    max_within: usize,
    /// Test knob: split every plain-text file of at least twice this many bytes into ranges
    /// of about this size, even with one thread (`None`: `SEGMENT_BYTES`, from two threads).
    /// The equivalence tests use it to put range edges everywhere; an analysis must give
    /// the same report with it as without.
    #[doc(hidden)]
    pub split_bytes: Option<u64>,
    /// Follow symbolic links that leave a walked directory (`--follow-links`; bounded by
    /// `limits::LINKED_FILES`).
    pub follow_links: bool,
}

/// Build the tables every engine reads and no rule file changes (the detection tables, the
/// second tier's tokens and their finder, the line-prefix forms, the regexes correlation
/// reads every run with), so a command can do it on a spare thread while
/// the rules load: `Engine::new` and the first file then find them ready instead of building
/// them in line. The detection tables, the largest, get this thread; the others a second one.
pub fn warm_up() {
    std::thread::spawn(|| {
        crate::tokens::warm_up();
        crate::sources::prefix::warm_up();
        crate::correlate::warm_up();
    });
    detect::warm_up();
}

impl<'kb> Engine<'kb> {
    pub fn new(kb: &'kb KnowledgeBase) -> Engine<'kb> {
        let mut reg = Registry::default();
        for (k, &(ri, si)) in kb.sig_of.iter().enumerate() {
            let sig = &kb.rules[ri].signatures[si];
            let (lits, windows) = (sig.regex.literals(), sig.regex.windows());
            reg.pattern_windowed(Watcher::Rules, k, &sig.source, Some(lits), windows);
        }
        for (k, (_, re)) in launcher::LINES.iter().enumerate() {
            reg.pattern(Watcher::Launcher, k, re, None);
        }
        for (k, lit) in crate::errtail::LITERALS.iter().enumerate() {
            reg.mark(Watcher::ErrorTail, k, lit);
        }
        for (k, lit) in crate::errtail::CLEAN_END.iter().enumerate() {
            reg.mark(Watcher::CleanEnd, k, lit);
        }
        // The second tier's tokens: a line holding one joins the error tail (same watcher,
        // same pass), where the verdict and `correlate::second_tier` read it.
        for (k, t) in crate::tokens::table().tokens.iter().enumerate() {
            let lits = Some(t.regex.literals());
            reg.pattern(Watcher::ErrorTail, k, t.regex.as_str(), lits);
        }
        let (mut scanner, routes) = reg.build().unwrap_or_else(|e| {
            // Rule patterns were validated at load; launcher lines by a unit test.
            panic!("scanner patterns must compile: {e:?}")
        });
        scanner.set_rereader(sources::unmangle::readings);
        let max_within = kb
            .rules
            .iter()
            .flat_map(|r| &r.signatures)
            .filter_map(|s| s.preceded_by.as_ref().map(|(_, w)| *w as usize))
            .max()
            .unwrap_or(0);
        Engine {
            kb,
            scanner,
            routes,
            core_options: elfcore::CoreOptions::default(),
            max_within,
            split_bytes: None,
            follow_links: false,
        }
    }

    /// Analyse these inputs with up to `threads` threads.
    pub fn run(&self, inputs: &[Input], threads: usize) -> Analysis {
        self.run_with_progress(inputs, threads, &Progress::default())
    }

    /// As `run`, updating `progress` as files and bytes are done.
    pub fn run_with_progress(
        &self,
        inputs: &[Input],
        threads: usize,
        progress: &Progress,
    ) -> Analysis {
        let threads = threads.max(1);
        let (tasks, segs, handles) = self.plan(inputs, threads);
        progress.files_total.store(inputs.len(), Ordering::Relaxed);
        progress
            .bytes_total
            .store(inputs.iter().map(|i| i.size).sum(), Ordering::Relaxed);
        let next = AtomicUsize::new(0);
        let left: Vec<AtomicUsize> = segs.iter().map(|&n| AtomicUsize::new(n)).collect();
        let results: Mutex<Vec<Vec<Option<FileResult>>>> = Mutex::new(
            segs.iter()
                .map(|&n| (0..n).map(|_| None).collect())
                .collect(),
        );
        let threads = threads.clamp(1, tasks.len().max(1));
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    let mut scratch = ScanScratch::default();
                    loop {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&t) = tasks.get(k) else { break };
                        let input = &inputs[t.input];
                        let r = match t.range {
                            None => self.file(input, &mut scratch, progress),
                            Some((a, b, kind)) => match &handles[t.input] {
                                Some(f) => self.range(input, f, a, b, kind, &mut scratch, progress),
                                // `plan` gives every split file its handle: not reached.
                                None => self.file(input, &mut scratch, progress),
                            },
                        };
                        results.lock().unwrap_or_else(|e| e.into_inner())[t.input][t.seg] = Some(r);
                        if left[t.input].fetch_sub(1, Ordering::Relaxed) == 1 {
                            progress.files_done.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        // glibc: each scan thread allocated in an arena of its own (`main`), which keeps what
        // its files freed; the merge, the correlation and the report allocate on this thread's
        // arena and cannot reuse it. Hand those free pages back before the run's peak
        // (1.6 MiB of an 8-thread run on 100 MB).
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        if threads > 1 {
            // SAFETY: malloc_trim only returns free memory to the system; every thread that
            // allocated in the other arenas has ended.
            unsafe {
                libc::malloc_trim(0);
            }
        }
        let mut a = Analysis::default();
        for parts in results.into_inner().unwrap_or_else(|e| e.into_inner()) {
            if let Some(mut r) = merge::merge_segments(parts) {
                if r.container {
                    // An archive: its members are the inputs.
                    for m in std::mem::take(&mut r.members) {
                        a.absorb(m);
                    }
                    a.warnings.append(&mut r.warnings);
                } else {
                    a.absorb(r);
                }
            }
        }
        self.suppress_advice(&mut a);
        after::discount_preexisting(&mut a);
        after::tie_cores(&mut a);
        a
    }

    /// Count, per input, the lines that match any rule signature, uncapped and ignoring
    /// `kinds` (what `rg -c -f` on `rules patterns` counts). For the benchmark harness.
    pub fn count_matching_lines(&self, inputs: &[Input]) -> Vec<(String, u64)> {
        let mut scratch = ScanScratch::default();
        let mut out = Vec::new();
        for input in inputs {
            let Source::File(p) = &input.source else {
                continue;
            };
            let Ok(f) = std::fs::File::open(p) else {
                continue;
            };
            let mut reader = ChunkReader::new(f);
            let mut n = 0u64;
            let mut last = 0u64;
            while let Ok(Some((chunk, first))) = reader.next_chunk() {
                self.scanner.scan_chunk(chunk, first, &mut scratch, |h, _| {
                    if self.routes.route(h.id).0 == Watcher::Rules && h.lineno != last {
                        last = h.lineno;
                        n += 1;
                    }
                });
            }
            if n > 0 {
                out.push((input.display.clone(), n));
            }
        }
        out
    }

    /// The analysis of `text` read as a file named `name` would be, through the same scan as
    /// a file's (kind detected from the name and text, ANSI escapes and `\r` redraws handled,
    /// `kinds` and `preceded_by` honoured, advice lines suppressed): what `rules test` checks
    /// rule examples with, so an example passes only if `analyze` would see the same line.
    pub fn analyze_text(&self, name: &str, text: &str) -> Analysis {
        let bytes = text.as_bytes();
        let kind = detect::detect(name, &bytes[..bytes.len().min(detect::SNIFF_BYTES)]);
        let mut res = FileResult {
            info: InputInfo {
                path: name.to_string(),
                kind,
                bytes: bytes.len() as u64,
                phase: Phase::During,
                encoding: None,
                lines: 0,
                modified: None,
                digest: None,
            },
            ..FileResult::default()
        };
        let mut scratch = ScanScratch::default();
        let parser = sources::fact_parser(kind, name);
        self.scan_stream(
            bytes,
            kind,
            name,
            parser,
            &mut res,
            &mut scratch,
            &Progress::default(),
            None,
            Part::Whole,
        );
        res.info.lines = res.lines;
        let mut a = Analysis::default();
        a.absorb(res);
        self.suppress_advice(&mut a);
        a
    }

    /// The (rule, signature) pairs of `analyze_text`'s hits.
    pub fn signature_hits(&self, name: &str, text: &str) -> Vec<(usize, usize)> {
        let mut out: Vec<(usize, usize)> = self
            .analyze_text(name, text)
            .hits
            .iter()
            .map(|h| (h.rule, h.signature))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// What an input's lines that are not UTF-8 cost the analysis, said once per input: those read
/// as GBK/GB18030 are shown decoded (only their ASCII matches rules, which are written in
/// UTF-8); the rest show U+FFFD for the bytes, which no rule matches.
fn not_utf8_warning(n: &NotUtf8, path: &str) -> Option<crate::model::Text> {
    let (lines, gb, first) = (n.lines, n.gb18030, n.first);
    let iconv = sources::encoding::iconv_command(path);
    let other = lines - gb;
    Some(match (gb, other) {
        (0, 0) => return None,
        (_, 0) => text!(
            "GBK/GB18030, not UTF-8, in {gb} of its lines (the first: line {first}): their text is shown decoded, and only their ASCII is matched by rules (`{iconv}` converts the file)",
            "有 {gb} 行是 GBK/GB18030 而不是 UTF-8（第一行是第 {first} 行）：显示的是解码后的文本，规则只匹配其中的 ASCII 部分（`{iconv}` 可转换整个文件）"
        ),
        (0, _) => text!(
            "bytes that are not UTF-8 in {other} of its lines (the first: line {first}): they show as U+FFFD in evidence and match no rule",
            "有 {other} 行含有不是 UTF-8 的字节（第一行是第 {first} 行）：这些字节在证据中显示为 U+FFFD，不匹配任何规则"
        ),
        _ => text!(
            "not UTF-8 in {lines} of its lines (the first: line {first}): {gb} of them read as GBK/GB18030 and are shown decoded; in the other {other}, the bytes that are not UTF-8 show as U+FFFD and match no rule",
            "有 {lines} 行不是 UTF-8（第一行是第 {first} 行）：其中 {gb} 行按 GBK/GB18030 解码显示；其余 {other} 行里不是 UTF-8 的字节显示为 U+FFFD，不匹配任何规则"
        ),
    })
}

#[derive(Default)]
struct FileResult {
    info: InputInfo,
    /// Lines read (to shift the line numbers of the next range of a split file).
    lines: u64,
    long_lines: Vec<LongLine>,
    /// Holes of NULs skipped while streaming (`sources::holes::SkipHoles`).
    holes: sources::holes::Holes,
    not_utf8: NotUtf8,
    hits: Vec<RuleHit>,
    dropped: Vec<(usize, u64)>,
    facts: Vec<Fact>,
    events: Vec<Event>,
    warnings: Vec<Warning>,
    /// Boxed: one input in thousands is a core, and an archive keeps one `FileResult` per
    /// member (a 300k-member zip).
    core: Option<Box<CoreReport>>,
    tail: crate::errtail::ErrorTail,
    launch: Vec<LaunchEvent>,
    /// Launcher lines not yet read into `launch` (a range's, until merge).
    launch_lines: Vec<(launcher::Line, u64, String)>,
    /// One range of a split file.
    ranged: bool,
    /// The file changed under this range (said once per file, at merge).
    changed: Option<Warning>,
    last_lines: Vec<LastLine>,
    ending: Option<sources::ending::Ending>,
    flight: Option<sources::flight_recorder::FrDump>,
    samples: Option<sources::samples::Samples>,
    /// For an archive: its members, each read as an input of its own (`container`: the
    /// archive itself is not one; its warnings are kept).
    members: Vec<FileResult>,
    container: bool,
}

impl InputInfo {
    /// A named input (a file, stdin) before it is read: `kind` until `open` says otherwise.
    fn of_input(input: &Input, kind: SourceKind) -> InputInfo {
        InputInfo {
            path: input.display.clone(),
            kind,
            bytes: input.size,
            phase: input.phase,
            modified: input.id.map(|i| (i.mtime_ns / 1_000_000_000) as i64),
            ..InputInfo::default()
        }
    }
}

impl Default for InputInfo {
    fn default() -> Self {
        InputInfo {
            path: String::new(),
            kind: SourceKind::Text,
            bytes: 0,
            phase: Phase::During,
            encoding: None,
            lines: 0,
            modified: None,
            digest: None,
        }
    }
}
