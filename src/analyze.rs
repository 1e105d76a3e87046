//! One analysis: read every input once (opened by `sources::open`, its lines streamed through
//! the one scanner and, for snapshots, its fact parser) and gather what each watcher of the
//! scanner wants: rule hits, launcher/NCCL events, the error tail and clean ends; plus facts,
//! machine events, cores and warnings. Files are processed in parallel; results are merged in
//! input order so output is stable. Returns data only: ranking is `correlate`'s, printing is
//! `report`'s.

use crate::facts::FactSet;
use crate::inputs::{Input, Source};
use crate::model::{Attribution, Fact, Phase, SourceKind, Warning, text};
use crate::rules::{KnowledgeBase, Role};
use crate::scan::watch::{Registry, Routes};
use crate::scan::{Hit, ScanScratch, Scanner};
use crate::sources::encoding::{NotUtf8, decode_line};
use crate::sources::last_lines::{self, LastLine};
use crate::sources::launcher::{self, LaunchEvent};
use crate::sources::open::{How, Opened, ReadMeter};
use crate::sources::reader::{ChunkReader, LongLine};
use crate::sources::{self, Event, FactOut, detect, elfcore, prefix};
use std::io::Read;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Plain-text files at least this big are split into byte ranges of about this size,
/// scanned by several threads at once (line numbers fixed up at merge).
pub const SEGMENT_BYTES: u64 = 64 << 20;

/// How many bytes of plain scanning one byte read by a line-by-line fact parser costs
/// (for ordering the work).
const PARSED_COST: u64 = 16;

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

/// One unit of work: a whole input, or one byte range of a big plain-text file.
#[derive(Clone, Copy)]
struct Task {
    input: usize,
    seg: usize,
    /// Byte range and known kind, for a range of a split file.
    range: Option<(u64, u64, SourceKind)>,
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
    /// Core dumps read, with the input they came from.
    pub cores: Vec<CoreReport>,
    /// The last timed line of each rank of each log file (`sources::last_lines`).
    pub last_lines: Vec<LastLine>,
    /// The last error-ish lines of each file (bounded, `errtail`), for fingerprinting
    /// failures no rule explains.
    pub error_tail: Vec<crate::errtail::TailLine>,
    /// Per input with one: the last line saying the run ended well (`errtail::CLEAN_END`).
    pub clean_end: Vec<(usize, u64)>,
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
        self.warnings.extend(r.warnings);
        self.cores.extend(r.core.map(|c| *c));
        self.launch.extend(r.launch.into_iter().map(|e| (i, e)));
        if let Some(d) = r.flight {
            self.flight.push((i, d));
        }
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

impl<'kb> Engine<'kb> {
    pub fn new(kb: &'kb KnowledgeBase) -> Engine<'kb> {
        let mut reg = Registry::default();
        for (k, &(ri, si)) in kb.sig_of.iter().enumerate() {
            let sig = &kb.rules[ri].signatures[si];
            reg.pattern(Watcher::Rules, k, &sig.source, Some(sig.regex.literals()));
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

    /// Plan the work: big plain-text files are split into ranges (so one huge file keeps
    /// every thread busy), everything else is one task. Biggest tasks first.
    /// Each split file's one open handle is returned beside the plan (by input index).
    fn plan(
        &self,
        inputs: &[Input],
        threads: usize,
    ) -> (Vec<Task>, Vec<usize>, Vec<Option<std::fs::File>>) {
        let mut tasks = Vec::new();
        let mut segs = vec![1; inputs.len()];
        let mut handles: Vec<Option<std::fs::File>> = (0..inputs.len()).map(|_| None).collect();
        for (i, input) in inputs.iter().enumerate() {
            // Only a big file is sniffed here (a second open): the rest are opened once, by
            // the worker that reads them.
            let (wanted, seg_bytes) = match self.split_bytes {
                Some(b) => (true, b.max(1)),
                None => (threads > 1, SEGMENT_BYTES),
            };
            let split = (wanted && input.size >= 2 * seg_bytes)
                .then(|| sources::open::splittable(input))
                .flatten();
            if let Some((kind, file)) = split {
                handles[i] = Some(file);
                // A multiple of the thread count: equal ranges then end together.
                let n = input
                    .size
                    .div_ceil(seg_bytes)
                    .next_multiple_of(threads as u64);
                segs[i] = n as usize;
                for k in 0..n {
                    let (a, b) = (input.size * k / n, input.size * (k + 1) / n);
                    tasks.push(Task {
                        input: i,
                        seg: k as usize,
                        range: Some((a, b, kind)),
                    });
                }
            } else {
                tasks.push(Task {
                    input: i,
                    seg: 0,
                    range: None,
                });
            }
        }
        // Longest first, so no thread is left with a long task at the end. A file that a
        // fact parser reads line by line (dmesg, snapshots) costs about as much per byte
        // as sixteen bytes of plain scanning (measured: a 5 MB dmesg 46 ms, logs 1.7 GB/s);
        // its kind is guessed from its name alone here (order only, not correctness).
        let cost = |t: &Task| match t.range {
            Some((a, b, _)) => b - a,
            None => {
                let input = &inputs[t.input];
                let parsed = sources::open::parsed_by_name(&input.display);
                input.size * if parsed { PARSED_COST } else { 1 }
            }
        };
        let mut costed: Vec<(u64, Task)> = tasks.into_iter().map(|t| (cost(&t), t)).collect();
        costed.sort_by_key(|(c, _)| std::cmp::Reverse(*c));
        (costed.into_iter().map(|(_, t)| t).collect(), segs, handles)
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
        let mut a = Analysis::default();
        for parts in results.into_inner().unwrap_or_else(|e| e.into_inner()) {
            if let Some(mut r) = merge_segments(parts) {
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
        discount_preexisting(&mut a);
        tie_cores(&mut a);
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

    /// One byte range of a big plain-text file: hits carry range-relative line numbers
    /// (fixed up in `merge_segments`).
    #[allow(clippy::too_many_arguments)]
    fn range(
        &self,
        input: &Input,
        file: &std::fs::File,
        a: u64,
        b: u64,
        kind: SourceKind,
        scratch: &mut ScanScratch,
        progress: &Progress,
    ) -> FileResult {
        let path = input.display.as_str();
        let mut res = FileResult {
            info: InputInfo {
                path: input.display.clone(),
                kind,
                bytes: input.size,
                phase: input.phase,
                encoding: None,
                lines: 0,
                modified: input.id.map(|i| (i.mtime_ns / 1_000_000_000) as i64),
                digest: None,
            },
            ..FileResult::default()
        };
        res.ranged = true;
        match sources::open::open_range(input, file, a, b) {
            Ok((seg, watch)) => {
                let before = lookback_before(file, seg.start, self.max_within);
                // A terminal's wrapped rows are looked for in the file's first chunk: the
                // first range's own first chunk when it is that long, else a pass of its own.
                let wrap_here = a == 0 && b >= sources::reader::DEFAULT_BUF as u64;
                let part = Part::Range {
                    before,
                    wrap: wrap_here,
                };
                self.scan_stream(
                    seg, kind, path, None, &mut res, scratch, progress, None, part,
                );
                if a == 0 && !wrap_here {
                    self.wrapped_of_head(file, kind, path, &mut res, scratch);
                }
                // One warning for the file, however many of its ranges saw the change.
                if let Some(w) = watch.and_then(|w| w.check_range()) {
                    res.changed = Some(Warning::new(Some(path), w));
                }
            }
            Err(e) => res.warnings.push(Warning::new(Some(path), e)),
        }
        // The file's last lines belong to its last range.
        if let (Source::File(p), true) = (&input.source, b >= input.size) {
            read_last_lines(p, path, kind, input.phase, &mut res);
        }
        res
    }

    /// The hits on a terminal's wrapped rows in the first chunk of a split file, as a whole
    /// read finds them there, added to its first range's (which is shorter than that chunk).
    fn wrapped_of_head(
        &self,
        file: &std::fs::File,
        kind: SourceKind,
        path: &str,
        res: &mut FileResult,
        scratch: &mut ScanScratch,
    ) {
        let head = sources::open::Positional::new(file).take(sources::reader::DEFAULT_BUF as u64);
        let mut w = FileResult {
            info: res.info.clone(),
            ..FileResult::default()
        };
        let progress = Progress::default();
        self.scan_stream(
            head,
            kind,
            path,
            None,
            &mut w,
            scratch,
            &progress,
            None,
            Part::WrapOnly,
        );
        for h in w.hits {
            let key = (h.rule, h.signature);
            let kept = res
                .hits
                .iter()
                .filter(|k| (k.rule, k.signature) == key)
                .count();
            if kept < MAX_HITS_PER_SIG_FILE {
                res.hits.push(h);
            } else {
                w.dropped.push((h.rule, 1));
            }
        }
        for (rule, n) in w.dropped {
            match res.dropped.iter_mut().find(|(r, _)| *r == rule) {
                Some(e) => e.1 += n,
                None => res.dropped.push((rule, n)),
            }
        }
    }

    /// Lines that carry framework advice are never evidence for anything else.
    fn suppress_advice(&self, a: &mut Analysis) {
        let advice: std::collections::HashSet<(usize, u64)> = a
            .hits
            .iter()
            .filter(|h| self.kb.rules[h.rule].role == Role::Advice)
            .map(|h| (h.input, h.line))
            .collect();
        if advice.is_empty() {
            return;
        }
        a.hits.retain(|h| {
            self.kb.rules[h.rule].role == Role::Advice || !advice.contains(&(h.input, h.line))
        });
    }

    fn file(&self, input: &Input, scratch: &mut ScanScratch, progress: &Progress) -> FileResult {
        let mut res = FileResult {
            info: InputInfo {
                path: input.display.clone(),
                kind: SourceKind::Text,
                bytes: input.size,
                phase: input.phase,
                encoding: None,
                lines: 0,
                modified: input.id.map(|i| (i.mtime_ns / 1_000_000_000) as i64),
                digest: None,
            },
            ..FileResult::default()
        };
        let path = input.display.as_str();
        let opened = match sources::open::open_in(input, &progress.decompressed) {
            Ok(o) => o,
            Err(w) => {
                res.warnings.push(Warning::new(Some(path), w));
                return res;
            }
        };
        let file = match &input.source {
            Source::File(p) => Some(p.as_path()),
            Source::Stdin => None,
        };
        self.read_opened(opened, file, res, 0, scratch, progress)
    }

    /// Read an opened input or archive member by how its kind is read. `file`: the file on
    /// disk it is (not for a member); `depth`: how many archives it is inside.
    fn read_opened(
        &self,
        opened: Opened<'_>,
        file: Option<&std::path::Path>,
        mut res: FileResult,
        depth: usize,
        scratch: &mut ScanScratch,
        progress: &Progress,
    ) -> FileResult {
        let path = res.info.path.clone();
        let path = path.as_str();
        let phase = res.info.phase;
        res.info.kind = opened.kind;
        res.info.encoding = opened.encoding.as_ref().map(|d| d.from);
        let (watch, gzip, meter) = (opened.watch, opened.gzip, opened.meter);
        let mut stream = opened.stream;
        match opened.how {
            How::Skip(why) => {
                res.warnings
                    .extend(why.map(|w| Warning::new(Some(path), w)));
            }
            How::Core(p) => {
                // The core reader does positioned reads (or streams a .gz) on its own.
                let c = elfcore::analyze_core(&p, &self.core_options);
                for mut f in c.facts {
                    f.path = path.to_string();
                    f.phase = phase;
                    res.facts.push(f);
                }
                for w in c.warnings {
                    res.warnings.push(Warning::new(Some(path), w));
                }
                res.core = Some(Box::new(CoreReport {
                    path: path.to_string(),
                    summary: c.summary,
                }));
            }
            How::FlightRecorder => {
                read_flight_recorder(path, &opened.name, stream.as_mut(), &mut res);
            }
            How::Tar | How::Zip(_) if depth > crate::limits::ARCHIVE_NESTING => {
                let n = crate::limits::ARCHIVE_NESTING;
                res.warnings.push(Warning::new(
                    Some(path),
                    text!(
                        "an archive inside an archive inside an archive: not read (archives are opened {n} level deep, limits::ARCHIVE_NESTING); extract it and pass its path",
                        "归档里的归档里还有归档：未读取（归档只展开 {n} 层，见 limits::ARCHIVE_NESTING）；请先解压，再传入解压后的路径"
                    ),
                ));
            }
            How::Tar => {
                let outer = gzip.as_deref();
                let total = &progress.decompressed;
                let notes =
                    sources::archive::tar_members(stream.as_mut(), outer, total, &mut |m| {
                        res.members
                            .push(self.member(path, m, &meter, depth, scratch, progress));
                    });
                res.container = true;
                archive_notes(path, notes, &mut res);
            }
            How::Zip(z) => {
                let notes = sources::archive::zip_members(z, &progress.decompressed, &mut |m| {
                    res.members
                        .push(self.member(path, m, &meter, depth, scratch, progress));
                });
                res.container = true;
                archive_notes(path, notes, &mut res);
            }
            How::Lines(parser) => {
                // A regular file is read again at its end for its last lines; a member, a
                // FIFO (read once), a compressed file, one decoded from UTF-16 or a CJK
                // encoding, or one read past a hole (its end on disk is not that text) keeps
                // its end as it streams.
                let reread = file.filter(|_| {
                    gzip.is_none()
                        && opened.encoding.is_none()
                        && opened.holes.is_none()
                        && watch.is_some()
                });
                let tail = last_lines::Tail::default();
                let kept = tail.keep(stream.as_mut(), reread.is_none());
                self.scan_stream(
                    kept,
                    opened.kind,
                    path,
                    parser,
                    &mut res,
                    scratch,
                    progress,
                    Some(&meter),
                    Part::Whole,
                );
                if opened.kind.is_log() && phase != Phase::Before {
                    match reread {
                        Some(p) => last_lines::read(p, path, &mut res.last_lines),
                        None => tail.read(path, &mut res.last_lines),
                    }
                }
            }
        }
        drop(stream);
        for w in opened.encoding.map(|d| d.warnings()).unwrap_or_default() {
            res.warnings.push(Warning::new(Some(path), w));
        }
        if let Some(w) = opened
            .holes
            .and_then(|n| sources::holes::warning(n.load(Ordering::Relaxed)))
        {
            res.warnings.push(Warning::new(Some(path), w));
        }
        if let Some(w) = gzip.and_then(|g| g.hit()) {
            res.warnings.push(Warning::new(Some(path), w));
        }
        if let Some(c) = watch.and_then(|w| w.check()) {
            res.warnings.push(Warning::new(Some(path), c.message));
            res.info.bytes = c.bytes_read.unwrap_or(res.info.bytes);
        }
        if res.container && depth == 0 {
            sort_members(&mut res);
        }
        res.info.digest = meter.digest();
        res
    }

    /// One member of an archive, read as the file of that name would be: cited as
    /// `archive!/member`, its phase from that path, a member that is an archive opened in turn.
    #[allow(clippy::too_many_arguments)]
    fn member(
        &self,
        archive: &str,
        m: sources::archive::Member<'_>,
        meter: &std::sync::Arc<ReadMeter>,
        depth: usize,
        scratch: &mut ScanScratch,
        progress: &Progress,
    ) -> FileResult {
        let display = format!("{archive}!/{}", m.name);
        let res = FileResult {
            info: InputInfo {
                path: display.clone(),
                kind: SourceKind::Text,
                bytes: m.size,
                phase: crate::inputs::phase_of(&display).0,
                encoding: None,
                lines: 0,
                // A year-less time in a member is dated from the run's dated lines only.
                modified: None,
                digest: None,
            },
            ..FileResult::default()
        };
        let cap = m.cap.clone();
        let total = &progress.decompressed;
        let (held, meter) = (m.held, meter.clone());
        let opened = sources::open::open_member(&display, m.reader, &cap, held, meter, total);
        let mut res = match opened {
            Ok(o) => self.read_opened(o, None, res, depth + 1, scratch, progress),
            Err(w) => {
                let mut res = res;
                res.warnings.push(Warning::new(Some(&display), w));
                res
            }
        };
        if let Some(w) = cap.hit() {
            res.warnings.push(Warning::new(Some(&display), w));
        }
        res
    }

    /// Stream one input (or one range of it) through the fact parser and the scanner.
    #[allow(clippy::too_many_arguments)]
    fn scan_stream(
        &self,
        input: impl Read,
        kind: SourceKind,
        path: &str,
        mut parser: Option<Box<dyn sources::FactParser>>,
        res: &mut FileResult,
        scratch: &mut ScanScratch,
        progress: &Progress,
        meter: Option<&ReadMeter>,
        part: Part,
    ) {
        let (mut before, wrap, ranged, only_wrapped) = match part {
            Part::Whole => (Vec::new(), true, false, false),
            Part::Range { before, wrap } => (before, wrap, true, false),
            Part::WrapOnly => (Vec::new(), true, false, true),
        };
        // Progress counts the input's bytes as stored (a compressed input's compressed
        // bytes, through `meter`), in the unit of the sizes it is compared with.
        let step = |read: u64, reported: u64| meter.map_or(read - reported, |m| m.take_new());
        let base_attr = prefix::from_path(path);
        let mut fout = FactOut::default();
        let mut launcher_hits: Vec<(launcher::Line, u64, String)> = Vec::new();
        let mut identities = launcher::Identities::default();
        let mut per_sig: std::collections::HashMap<usize, usize> = Default::default();
        let mut reader = ChunkReader::new(input);
        let mut line_buf = String::new();
        let mut not_utf8 = NotUtf8::default();
        let phase = res.info.phase;
        let keep_tail = phase != Phase::Before;
        let mut reported = 0u64;
        let (mut joined, mut joints): (Vec<u8>, Vec<usize>) = Default::default();
        let undoubled: std::cell::RefCell<Vec<(u64, Vec<u8>)>> = Default::default();
        loop {
            progress
                .bytes_done
                .fetch_add(step(reader.bytes_read, reported), Ordering::Relaxed);
            reported = reader.bytes_read;
            let (chunk, first) = match reader.next_chunk() {
                Ok(Some(c)) => c,
                Ok(None) => break,
                Err(e) => {
                    let n = reader.bytes_read;
                    res.warnings.push(Warning::new(
                        Some(path),
                        text!(
                            "read error after {n} bytes, the rest is not analysed: {e}",
                            "读到 {n} 字节后出错，其余部分未分析：{e}"
                        ),
                    ));
                    break;
                }
            };
            if !only_wrapped {
                not_utf8.count(chunk, first);
            }
            if let Some(p) = parser.as_mut() {
                for (lineno, line) in sources::reader::lines(chunk, first) {
                    line_buf.clear();
                    line_buf.push_str(&decode_line(line));
                    p.line(lineno, &line_buf, &mut fout);
                }
            }
            // One handler for the chunk's lines, for its wrapped lines joined (`joint`: where
            // each physical line starts in the joined text; such a hit must hold more than one
            // of them) and for error-ish lines two ranks wrote at once, undoubled (`joint`
            // empty). Rewritten lines feed the rules only.
            let mut on_hit = |text: &[u8], hit: Hit, line: &[u8], joint: Option<&[usize]>| {
                let chunk = text;
                let sig_ix = match self.routes.route(hit.id) {
                    (Watcher::Rules, k) if joint.is_some() => k,
                    _ if joint.is_some() => return,
                    (Watcher::ErrorTail, _) => {
                        if keep_tail {
                            res.tail.push(hit.lineno, line);
                        }
                        if let Some(u) = sources::unmangle::undouble(line) {
                            undoubled.borrow_mut().push((hit.lineno, u));
                        }
                        return;
                    }
                    (Watcher::CleanEnd, _) => {
                        res.tail.clean_end(hit.lineno);
                        return;
                    }
                    (Watcher::Launcher, k) => {
                        let (shape, text) = (launcher::LINES[k].0, decode_line(line));
                        if identities.keep(shape, &text) {
                            launcher_hits.push((shape, hit.lineno, text.into_owned()));
                        }
                        return;
                    }
                    (Watcher::Rules, k) => k,
                };
                let (ri, si) = self.kb.sig_of[sig_ix];
                let sig = &self.kb.rules[ri].signatures[si];
                if !sig.applies_to(kind) {
                    return;
                }
                // A reading of a flattened line (a repr) may hold its context itself.
                let raw = &chunk[hit.start..hit.end];
                // The lines before a chunk count for its look-back; not for a rewritten line.
                let ctx: &[u8] = if joint.is_none() { &before } else { &[] };
                if let Some((pre, within)) = &sig.preceded_by
                    && !preceded(ctx, chunk, hit.start, *within, pre)
                    && !(line.len() != raw.len() && pre.is_match(raw))
                {
                    return;
                }
                // The scanner already compiled this signature's regex to confirm the hit.
                let Some(re) = self.scanner.regex_for(hit.id) else {
                    return;
                };
                // A joined pair counts only for what neither physical line holds alone.
                if let Some(j) = joint
                    && j.len() > 1
                    && j.windows(2).any(|w| re.is_match(&chunk[w[0]..w[1]]))
                {
                    return;
                }
                // Only a hit that would be kept counts toward the cap.
                let count = per_sig.entry(sig_ix).or_default();
                *count += 1;
                if *count > MAX_HITS_PER_SIG_FILE {
                    match res.dropped.iter_mut().find(|(r, _)| *r == ri) {
                        Some(e) => e.1 += 1,
                        None => res.dropped.push((ri, 1)),
                    }
                    return;
                }
                {
                    res.hits
                        .push(make_hit(ri, si, re, hit.lineno, line, raw, &base_attr));
                }
            };
            if !only_wrapped {
                self.scanner.scan_chunk(chunk, first, scratch, |hit, line| {
                    on_hit(chunk, hit, line, None)
                });
            }
            let lines = std::mem::take(&mut *undoubled.borrow_mut());
            for (lineno, text) in lines {
                self.scanner
                    .scan_chunk(&text, lineno, scratch, |hit, line| {
                        on_hit(&text, hit, line, Some(&[]))
                    });
            }
            // A terminal's copy is a paste, not a multi-GB log: only a file's first chunk
            // (at most a buffer, 1 MiB) is looked at for wrapped rows, so big logs do not
            // pay for it.
            let wrapped = if wrap && reported < WRAP_SCAN_BYTES && first == 1 {
                let mut w = wrapped_lines(chunk, first);
                w.extend(padded_rows(chunk, first));
                w
            } else {
                Vec::new()
            };
            for (lineno, pieces) in wrapped {
                joined.clear();
                joints.clear();
                for &(a, b) in &pieces {
                    joints.push(joined.len());
                    joined.extend_from_slice(&chunk[a..b]);
                }
                joints.push(joined.len());
                let (joined, joints) = (&joined[..], &joints[..]);
                self.scanner
                    .scan_chunk(joined, lineno, scratch, |hit, line| {
                        on_hit(joined, hit, line, Some(joints))
                    });
            }
            if only_wrapped {
                break;
            }
            keep_lookback(&mut before, chunk, self.max_within);
        }
        progress
            .bytes_done
            .fetch_add(step(reader.bytes_read, reported), Ordering::Relaxed);
        res.info.bytes = res.info.bytes.max(reader.bytes_read);
        res.lines = reader.lines_seen();
        res.long_lines = std::mem::take(&mut reader.long_lines);
        res.not_utf8 = not_utf8;
        if let Some(p) = parser.as_mut() {
            p.finish(&mut fout);
        }
        for mut f in fout.facts {
            f.path = path.to_string();
            f.phase = phase;
            res.facts.push(f);
        }
        // A range's launcher lines are read with the other ranges' (a launcher's report can
        // straddle a range edge): at merge.
        res.launch_lines = launcher_hits;
        if !ranged {
            finish_launch(res, path);
        }
        res.events = fout.events;
        for w in fout.warnings {
            res.warnings.push(Warning::new(Some(path), w));
        }
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

/// Files are looked at for a terminal's wrapped rows in a first chunk read before this
/// many bytes.
const WRAP_SCAN_BYTES: u64 = 1 << 20;

/// Lines shorter than this are never taken for a terminal's wrap.
const MIN_WRAP: usize = 60;

/// Lines a terminal probably hard-wrapped: as long as the longest line of the chunk (a
/// terminal cuts every row at its width, so no line is longer) and at least `MIN_WRAP`
/// bytes. Each run of them with the line that ends it is one logical line: its first line
/// number and its pieces' byte ranges. A program's log rarely has more than a few lines of
/// exactly its longest length, so joining costs little there.
fn wrapped_lines(chunk: &[u8], first: u64) -> Vec<(u64, Vec<(usize, usize)>)> {
    let mut longest = 0;
    let mut at = 0;
    for nl in memchr::memchr_iter(b'\n', chunk) {
        longest = longest.max(nl - at);
        at = nl + 1;
    }
    let mut out: Vec<(u64, Vec<(usize, usize)>)> = Vec::new();
    if longest < MIN_WRAP {
        return out;
    }
    let (mut at, mut lineno) = (0, first);
    let mut run: Vec<(usize, usize)> = Vec::new();
    let mut run_start = first;
    while at < chunk.len() {
        let end = memchr::memchr(b'\n', &chunk[at..]).map_or(chunk.len(), |i| at + i);
        if !run.is_empty() {
            // The line after a full row continues it (unless it is blank).
            if end > at {
                run.push((at, end));
            }
            if end - at != longest || end == at {
                if run.len() > 1 {
                    out.push((run_start, std::mem::take(&mut run)));
                }
                run.clear();
            }
        } else if end - at == longest {
            run_start = lineno;
            run.push((at, end));
        }
        at = end + 1;
        lineno += 1;
    }
    if run.len() > 1 {
        out.push((run_start, run));
    }
    out
}

/// A run of at least this many spaces inside a line, after at least `MIN_WRAP` bytes of it,
/// is taken for a wrapped row's padding kept by a screen copy (fixtures/pastes/P26_*).
const MIN_PAD: usize = 16;

/// Up to this many padding runs in one line, every way of closing them is read.
const MAX_PAD_RUNS: usize = 3;

/// Lines whose wrapped rows a copy glued back with the rows' padding kept inside
/// (`…_worker_l                oop`): each such line's pieces around its padding runs,
/// once per way of closing its runs (each closed, or one space of it kept).
/// Runs at the end of a line (torchrun's padded table) are not padding of a wrap.
fn padded_rows(chunk: &[u8], first: u64) -> Vec<(u64, Vec<(usize, usize)>)> {
    let pad = [b' '; MIN_PAD];
    let finder = memchr::memmem::Finder::new(&pad);
    let mut out = Vec::new();
    // Only lines holding a padding run are looked at: found by one search over the chunk,
    // their line numbers counted from the last one.
    let (mut next, mut counted, mut lineno) = (0, 0, first);
    while let Some(run) = finder.find(&chunk[next..]).map(|i| next + i) {
        let at = memchr::memrchr(b'\n', &chunk[..run]).map_or(0, |k| k + 1);
        lineno += memchr::memchr_iter(b'\n', &chunk[counted..at]).count() as u64;
        counted = at;
        let end = memchr::memchr(b'\n', &chunk[run..]).map_or(chunk.len(), |i| run + i);
        next = (end + 1).min(chunk.len());
        let line = &chunk[at..end];
        let mut pieces = Vec::new();
        let mut from = 0;
        while let Some(i) = finder.find(&line[from..]).map(|i| from + i) {
            let run_end = line[i..]
                .iter()
                .position(|&b| b != b' ')
                .map_or(line.len(), |k| i + k);
            if run_end == line.len() || line[run_end] == b'\r' {
                break;
            }
            if i - from >= MIN_WRAP {
                pieces.push((at + from, at + i));
                from = run_end;
            } else {
                break;
            }
        }
        if !pieces.is_empty() {
            // Each break fell mid-word (close the run) or on a space (keep one of it): read
            // every combination (a few runs at most), or all closed and all spaced.
            let k = pieces.len();
            let combos: Vec<u32> = if k <= MAX_PAD_RUNS {
                (0..1u32 << k).collect()
            } else {
                vec![0, u32::MAX]
            };
            for spaced in combos {
                let mut v: Vec<(usize, usize)> = pieces
                    .iter()
                    .enumerate()
                    .map(|(n, &(a, b))| (a, b + usize::from(spaced >> n.min(31) & 1 == 1)))
                    .collect();
                v.push((at + from, end));
                out.push((lineno, v));
            }
        }
        if end == chunk.len() {
            break;
        }
    }
    out
}

/// The timeline's last timed lines of a log file (not of a snapshot taken before the run).
fn read_last_lines(
    p: &std::path::Path,
    path: &str,
    kind: SourceKind,
    phase: Phase,
    res: &mut FileResult,
) {
    if kind.is_log() && phase != Phase::Before {
        last_lines::read(p, path, &mut res.last_lines);
    }
}

/// Join the ranges of one file in order: line numbers shifted by the lines before each
/// range, the per-signature cap applied over the whole file.
fn merge_segments(parts: Vec<Option<FileResult>>) -> Option<FileResult> {
    let mut parts = parts.into_iter().flatten();
    let mut out = parts.next()?;
    let mut offset = out.lines;
    let mut kept: std::collections::HashMap<(usize, usize), usize> = Default::default();
    for h in &out.hits {
        *kept.entry((h.rule, h.signature)).or_default() += 1;
    }
    for mut p in parts {
        for mut h in p.hits {
            h.line += offset;
            let n = kept.entry((h.rule, h.signature)).or_default();
            if *n >= MAX_HITS_PER_SIG_FILE {
                match out.dropped.iter_mut().find(|(r, _)| *r == h.rule) {
                    Some(e) => e.1 += 1,
                    None => out.dropped.push((h.rule, 1)),
                }
                continue;
            }
            *n += 1;
            out.hits.push(h);
        }
        for (rule, n) in p.dropped {
            match out.dropped.iter_mut().find(|(r, _)| *r == rule) {
                Some(e) => e.1 += n,
                None => out.dropped.push((rule, n)),
            }
        }
        for mut f in p.facts {
            f.line = f.line.map(|l| l + offset);
            out.facts.push(f);
        }
        out.events.append(&mut p.events);
        // A file changed under its ranges says so once, not once per range.
        for w in p.warnings {
            if !out.warnings.contains(&w) {
                out.warnings.push(w);
            }
        }
        out.tail.append_after(p.tail, offset);
        out.last_lines.append(&mut p.last_lines);
        for mut e in p.launch_lines {
            e.1 += offset;
            out.launch_lines.push(e);
        }
        out.changed = p.changed.or(out.changed.take());
        for mut l in p.long_lines {
            l.lineno += offset;
            out.long_lines.push(l);
        }
        out.not_utf8.add(p.not_utf8, offset);
        offset += p.lines;
    }
    out.info.lines = offset;
    if out.ranged {
        let path = out.info.path.clone();
        finish_launch(&mut out, &path);
    }
    out.warnings.extend(out.changed.take());
    Some(out)
}

/// Kernel logs keep old events: a line of a log that was already in a before-run snapshot is
/// history, not this run's failure. Such hits are removed, and the input they were in says
/// which line it was and where it stood before the run, never silently. A snapshot of state
/// (`ulimit -a`, `df`, meminfo, nvidia-smi) is not discounted: the same limit before and
/// after is still the limit the run had, not an old event. Nothing in a before-run input is
/// evidence.
fn discount_preexisting(a: &mut Analysis) {
    let before_inputs: Vec<bool> = a.inputs.iter().map(|i| i.phase == Phase::Before).collect();
    if !before_inputs.iter().any(|b| *b) {
        return;
    }
    let events: Vec<bool> = a
        .inputs
        .iter()
        .map(|i| i.kind == SourceKind::Dmesg || i.kind.is_log())
        .collect();
    let mut old: std::collections::HashMap<(usize, &str), (usize, u64)> = Default::default();
    for h in a.hits.iter().filter(|h| before_inputs[h.input]) {
        old.entry((h.rule, h.text.as_str()))
            .or_insert((h.input, h.line));
    }
    // Per input: (its line, the text, the before input and line it was at).
    type SetAside = Vec<(u64, String, (usize, u64))>;
    let mut removed: std::collections::BTreeMap<usize, SetAside> = Default::default();
    for h in &a.hits {
        if !before_inputs[h.input]
            && events[h.input]
            && let Some(&was) = old.get(&(h.rule, h.text.as_str()))
        {
            let r = removed.entry(h.input).or_default();
            if !r.iter().any(|(l, _, _)| *l == h.line) {
                r.push((h.line, h.text.clone(), was));
            }
        }
    }
    drop(old);
    a.hits.retain(|h| {
        !before_inputs[h.input]
            && removed
                .get(&h.input)
                .is_none_or(|r| !r.iter().any(|(l, _, _)| *l == h.line))
    });
    for (input, lines) in removed {
        let (line, text, (was_in, was_at)) = &lines[0];
        let text: String = text.trim().chars().take(120).collect();
        let before = format!("{}:{was_at}", a.inputs[*was_in].path);
        let n = lines.len() - 1;
        let (more, more_zh) = if n == 0 {
            (String::new(), String::new())
        } else {
            (
                format!(" (and {n} more such line{})", if n == 1 { "" } else { "s" }),
                format!("（另有 {n} 行同样如此）"),
            )
        };
        a.warnings.push(Warning::new(
            Some(&format!("{}:{line}", a.inputs[input].path)),
            text!(
                "\"{text}\" was already at {before}, a snapshot taken before the run started: an older event, not counted as evidence of this failure{more}",
                "\"{text}\" 在训练开始前的快照 {before} 中就已存在：是更早的事件，不计为这次失败的证据{more_zh}"
            ),
        ));
    }
}

/// What part of its file a stream is.
enum Part {
    /// The whole input.
    Whole,
    /// One range of a split file: the complete lines just before it (for `preceded_by`), and
    /// whether its first chunk is the file's (looked at for wrapped rows).
    Range { before: Vec<u8>, wrap: bool },
    /// The first chunk of a split file, for its wrapped rows only.
    WrapOnly,
}

/// Tie each core to the rank or DataLoader worker its pid names, and to its `coredumpctl info`
/// entry, from every input's launcher lines (`elfcore::owner`); the tie becomes `core.owner`.
fn tie_cores(a: &mut Analysis) {
    if a.cores.is_empty() {
        return;
    }
    let said: Vec<elfcore::owner::Said> = a
        .launch
        .iter()
        .filter_map(|(i, e)| {
            Some(elfcore::owner::Said {
                path: &a.inputs.get(*i)?.path,
                event: e,
            })
        })
        .collect();
    let logs: Vec<&str> = a
        .inputs
        .iter()
        .filter(|i| i.kind.is_log())
        .map(|i| i.path.as_str())
        .collect();
    let texts: Vec<&str> = a
        .inputs
        .iter()
        .filter(|i| i.kind == SourceKind::CoreText)
        .map(|i| i.path.as_str())
        .collect();
    let entries = elfcore::owner::coredumpctl_entries(a.facts.all(), &texts);
    let mut facts = Vec::new();
    for c in &mut a.cores {
        elfcore::owner::tie(&c.path, &mut c.summary, &said, &logs, &entries);
        if let Some(f) = c.summary.owner.as_ref().and_then(|o| o.fact(&c.path)) {
            facts.push(f);
        }
    }
    for f in facts {
        a.facts.push(f);
    }
}

/// Read an input's launcher lines (gathered by `scan_stream`, over all ranges of a split file)
/// into events and exit facts.
fn finish_launch(res: &mut FileResult, path: &str) {
    let lines = std::mem::take(&mut res.launch_lines);
    let lh: Vec<launcher::LineHit> = lines
        .iter()
        .map(|(line, lineno, text)| launcher::LineHit {
            line: *line,
            lineno: *lineno,
            text,
        })
        .collect();
    let events = launcher::read(&lh, &prefix::from_path(path));
    for mut f in launcher::exit_facts(&events) {
        f.path = path.to_string();
        f.phase = res.info.phase;
        res.facts.push(f);
    }
    res.launch = events;
}

#[derive(Default)]
struct FileResult {
    info: InputInfo,
    /// Lines read (to shift the line numbers of the next range of a split file).
    lines: u64,
    long_lines: Vec<LongLine>,
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
    flight: Option<sources::flight_recorder::FrDump>,
    /// For an archive: its members, each read as an input of its own (`container`: the
    /// archive itself is not one; its warnings are kept).
    members: Vec<FileResult>,
    container: bool,
}

/// What the walk of an archive said, as warnings on the member (or the archive) concerned;
/// an archive that gave nothing and said nothing is said to be empty, as a directory is.
fn archive_notes(path: &str, notes: Vec<sources::archive::Note>, res: &mut FileResult) {
    if notes.is_empty() && res.members.is_empty() {
        res.warnings.push(Warning::new(
            Some(path),
            text!("archive holds no files", "归档中没有文件"),
        ));
    }
    for (member, msg) in notes {
        let at = match member {
            Some(m) => format!("{path}!/{m}"),
            None => path.to_string(),
        };
        res.warnings.push(Warning::new(Some(&at), msg));
    }
}

/// An archive's members in the order a directory of the same files is walked (by path
/// component, as `walkdir` sorted by name gives), so an archive and its directory read
/// alike; a capture's duplicate stdout/stderr are dropped as in a directory
/// (`inputs::capture_duplicates`), and names that set a phase are said as in a directory.
fn sort_members(res: &mut FileResult) {
    let members = std::mem::take(&mut res.members);
    // Nested archives' members first take their place in the list (one list of them at a
    // time: an archive can hold hundreds of thousands).
    let mut flat = Vec::with_capacity(members.len());
    for mut m in members {
        if m.container {
            flat.append(&mut m.members);
            res.warnings.append(&mut m.warnings);
        } else {
            flat.push(m);
        }
    }
    flat.sort_by(|a, b| std::path::Path::new(&a.info.path).cmp(std::path::Path::new(&b.info.path)));
    let listed: Vec<(&str, bool)> = flat
        .iter()
        .map(|m| {
            (
                m.info.path.as_str(),
                m.info.kind == SourceKind::CaptureManifest,
            )
        })
        .collect();
    let drop = crate::inputs::capture_duplicates(&listed);
    let paths = flat.iter().map(|m| m.info.path.as_str());
    crate::inputs::phase_warnings_of(paths, &mut res.warnings);
    // A capture's own stdout.log/stderr.log are console.log again: read once, unsaid (its
    // layout, documented; nothing of the run is lost).
    let mut i = 0;
    flat.retain(|_| {
        i += 1;
        !drop.contains(&(i - 1))
    });
    res.members = flat;
}

/// Read a Flight Recorder dump (bounded) into its summary; any failure is a warning.
fn read_flight_recorder(path: &str, name: &str, stream: &mut dyn Read, res: &mut FileResult) {
    use sources::flight_recorder as fr;
    let mut data = Vec::new();
    if let Err(e) = stream.take(fr::MAX_BYTES as u64 + 1).read_to_end(&mut data) {
        res.warnings.push(Warning::new(
            Some(path),
            text!("cannot read: {e}", "无法读取：{e}"),
        ));
        return;
    }
    match fr::read(name, &data) {
        Ok(d) => res.flight = Some(d),
        Err(e) => res.warnings.push(Warning::new(
            Some(path),
            e.prefixed(
                "flight-recorder dump not read: ",
                "未读取 Flight Recorder 转储：",
            ),
        )),
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

/// Is there a line matching `pre` among the `within` lines before the line at `start`, each
/// starting at most `limits::LOOKBACK_BYTES` before it? `before` holds the complete lines
/// just before the chunk (`keep_lookback`), so a chunk or range edge changes nothing.
fn preceded(
    before: &[u8],
    chunk: &[u8],
    start: usize,
    within: u32,
    pre: &crate::scan::LazyRegex,
) -> bool {
    // Positions count from the start of `before`, as if it and the chunk were one text.
    let at = before.len() + start;
    let line = |s: usize, e: usize| match s.checked_sub(before.len()) {
        Some(s) => &chunk[s..e - before.len()],
        None => &before[s..e],
    };
    let mut end = at;
    for _ in 0..within {
        if end == 0 {
            return false;
        }
        let prev_end = end - 1; // the '\n' ending the previous line
        let prev_start = match prev_end.checked_sub(before.len()) {
            Some(e) => memchr::memrchr(b'\n', &chunk[..e]).map(|i| before.len() + i),
            None => None,
        }
        .or_else(|| memchr::memrchr(b'\n', &before[..prev_end.min(before.len())]))
        .map_or(0, |i| i + 1);
        if at - prev_start > crate::limits::LOOKBACK_BYTES {
            return false;
        }
        if pre.is_match(line(prev_start, prev_end)) {
            return true;
        }
        end = prev_start;
    }
    false
}

/// After `chunk`: the complete lines a look-back from the next chunk can reach (the last
/// `lines` of `before` and `chunk` together, starting at most `LOOKBACK_BYTES` before the
/// end). A chunk that ends inside a line (a cut over-long one) leaves none.
fn keep_lookback(before: &mut Vec<u8>, chunk: &[u8], lines: usize) {
    if lines == 0 {
        return;
    }
    if chunk.last() != Some(&b'\n') {
        before.clear();
        return;
    }
    let total = before.len() + chunk.len();
    let from = last_lines_start(before, chunk, lines);
    if from >= before.len() {
        before.clear();
        before.extend_from_slice(&chunk[from - (total - chunk.len())..]);
    } else {
        before.drain(..from);
        before.extend_from_slice(chunk);
    }
}

/// Where the last `lines` complete lines of `before` + `chunk` (which ends in a newline)
/// start, none starting more than `LOOKBACK_BYTES` before the end.
fn last_lines_start(before: &[u8], chunk: &[u8], lines: usize) -> usize {
    let total = before.len() + chunk.len();
    let min = total.saturating_sub(crate::limits::LOOKBACK_BYTES);
    let mut from = total;
    for _ in 0..lines {
        if from == 0 {
            break;
        }
        let end = from - 1;
        let s = match end.checked_sub(before.len()) {
            Some(e) => memchr::memrchr(b'\n', &chunk[..e]).map(|i| before.len() + i),
            None => None,
        }
        .or_else(|| memchr::memrchr(b'\n', &before[..end.min(before.len())]))
        .map_or(0, |i| i + 1);
        if s < min {
            break;
        }
        from = s;
    }
    from
}

/// The complete lines before `pos` (a line start) that a look-back from there reaches, read
/// from the file: what a whole read holds before that line (`keep_lookback`).
fn lookback_before(file: &std::fs::File, pos: u64, lines: usize) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    if lines == 0 || pos == 0 {
        return Vec::new();
    }
    // One byte more than the window: a line starting at its first byte follows a newline.
    let from = pos.saturating_sub(crate::limits::LOOKBACK_BYTES as u64 + 1);
    let mut buf = vec![0u8; (pos - from) as usize];
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], from + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    buf.truncate(n);
    if n < (pos - from) as usize || buf.last() != Some(&b'\n') {
        return Vec::new();
    }
    if from > 0 {
        match memchr::memchr(b'\n', &buf) {
            Some(i) => drop(buf.drain(..=i)),
            None => return Vec::new(),
        }
    }
    let start = last_lines_start(&[], &buf, lines);
    buf.drain(..start);
    buf
}

/// The line's text for citing: whole when short; otherwise a window around the match
/// (a one-line JSON error file or a glued progress bar can be kilobytes long).
fn excerpt(full: &str, re: &regex::bytes::Regex) -> String {
    let t = full.trim();
    if t.len() <= MAX_TEXT {
        return t.to_string();
    }
    let (ms, me) = re
        .find(t.as_bytes())
        .map_or((0, 0), |m| (m.start(), m.end()));
    let mut start = ms.saturating_sub(120);
    let mut end = (me + 200).min(t.len()).max((start + MAX_TEXT).min(t.len()));
    while !t.is_char_boundary(start) {
        start -= 1;
    }
    while !t.is_char_boundary(end) {
        end += 1;
    }
    format!(
        "{}{}{}",
        if start > 0 { "…" } else { "" },
        &t[start..end],
        if end < t.len() { "…" } else { "" }
    )
}

/// Build a hit: the `\r`-segment holding the match as text (progress bars redraw with `\r`
/// and glue the next message on), prefixes peeled into attribution, captures kept. `bytes`
/// is what matched: the line, or a reading of it (`raw`), whose prefixes then attribute it.
fn make_hit(
    rule: usize,
    signature: usize,
    re: &regex::bytes::Regex,
    line: u64,
    bytes: &[u8],
    raw: &[u8],
    base: &Attribution,
) -> RuleHit {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let m = re.find(bytes);
    let seg = match m {
        Some(m) => {
            let s = memchr::memrchr(b'\r', &bytes[..m.start()]).map_or(0, |i| i + 1);
            let e = memchr::memchr(b'\r', &bytes[m.end()..]).map_or(bytes.len(), |i| m.end() + i);
            &bytes[s..e]
        }
        None => bytes,
    };
    let full = decode_line(seg).replace('\0', "");
    let (mut attr, _) = prefix::peel(&full);
    if bytes.len() != raw.len() {
        // A reading has lost the line's prefixes: attribute from the line's last segment.
        let seg = memchr::memrchr(b'\r', raw).map_or(raw, |i| &raw[i + 1..]);
        let text = decode_line(seg);
        let start = text
            .find(|c: char| c.is_ascii() && c != '`' && !c.is_whitespace())
            .unwrap_or(0);
        let (a, _) = prefix::peel(&text[start..]);
        attr.rank = attr.rank.or(a.rank);
        attr.local_rank = attr.local_rank.or(a.local_rank);
        attr.host = attr.host.take().or(a.host);
        attr.pid = attr.pid.or(a.pid);
        attr.time = attr.time.take().or(a.time);
    }
    if attr.rank.is_none() {
        attr.rank = base.rank;
    }
    if attr.local_rank.is_none() {
        attr.local_rank = base.local_rank;
    }
    if attr.host.is_none() {
        attr.host = base.host.clone();
    }
    let mut captures = Vec::new();
    if let Some(c) = re.captures(seg) {
        for name in re.capture_names().flatten() {
            if let Some(v) = c.name(name) {
                captures.push((
                    name.to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                ));
            }
        }
    }
    let text = excerpt(&full, re);
    RuleHit {
        rule,
        signature,
        input: 0,
        line,
        text,
        attr,
        captures,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_rows_are_found_with_their_line_numbers() {
        let pad = " ".repeat(20);
        let wrapped = format!(
            "[default0]: RuntimeError: DataLoader worker (pid 12) is killed by sig{pad}nal: Bus error"
        );
        let chunk = format!(
            "ok\n{}\nplain line\n{wrapped}\ntable row{pad}\n",
            "x".repeat(30)
        );
        let rows = padded_rows(chunk.as_bytes(), 7);
        // Line 10 holds the run (1 way closed, 1 way with a space kept); the table row's run
        // ends its line and is not a wrap.
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|(n, _)| *n == 10));
        let text = |p: &[(usize, usize)]| p.iter().map(|&(a, b)| &chunk[a..b]).collect::<String>();
        assert!(
            rows.iter()
                .any(|(_, p)| text(p).contains("by signal: Bus error"))
        );
        assert!(
            rows.iter()
                .any(|(_, p)| text(p).contains("by sig nal: Bus error"))
        );
    }
}
