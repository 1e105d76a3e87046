//! Reading one input by its kind, as `sources::open` says it is read: a text's lines through
//! the stream, a byte range of a big file (with the lines just before it for look-backs), a
//! core, a Flight Recorder dump, an archive's members each as the file of that name would be.
//! Every failure to open or read becomes a warning on the input; nothing here looks at what
//! the lines mean.

use super::lookback::lookback_before;
use super::stream::Part;
use super::{CoreReport, Engine, FileResult, InputInfo, MAX_HITS_PER_SIG_FILE, Progress};
use crate::inputs::{Input, Source};
use crate::model::{Phase, Warning, text};
use crate::scan::ScanScratch;
use crate::sources::SourceKind;
use crate::sources::ending::Ending;
use crate::sources::last_lines::{self, LastLine};
use crate::sources::open::{How, Opened, ReadMeter};
use crate::sources::{self, elfcore};
use std::io::Read;
use std::sync::atomic::Ordering;

impl Engine<'_> {
    /// One byte range of a big plain-text file: hits carry range-relative line numbers
    /// (fixed up in `merge_segments`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn range(
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
            info: InputInfo::of_input(input, kind),
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
                    at: seg.start,
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

    pub(super) fn file(
        &self,
        input: &Input,
        scratch: &mut ScanScratch,
        progress: &Progress,
    ) -> FileResult {
        let mut res = FileResult {
            info: InputInfo::of_input(input, SourceKind::Text),
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
            How::Samples => read_samples(path, stream.as_mut(), &mut res),
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
                end_of(opened.kind, phase, &mut res, |lines, end| match reread {
                    Some(p) => last_lines::read(p, path, lines, end),
                    None => tail.read(path, lines, end),
                });
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
}

/// The timeline's last timed lines of a log file (not of a snapshot taken before the run).
fn read_last_lines(
    p: &std::path::Path,
    path: &str,
    kind: SourceKind,
    phase: Phase,
    res: &mut FileResult,
) {
    end_of(kind, phase, res, |lines, end| {
        last_lines::read(p, path, lines, end)
    });
}

/// How a scanned file of the run stops (`ending`), and, for a log, its last timed lines: a
/// console paste detected as a snapshot (a log that ends with an `nvidia-smi` query's CSV)
/// still ends the way its log did.
fn end_of(
    kind: SourceKind,
    phase: Phase,
    res: &mut FileResult,
    read: impl FnOnce(&mut Vec<LastLine>, &mut Option<Ending>),
) {
    if phase == Phase::Before || !kind.is_scanned() {
        return;
    }
    let mut lines = Vec::new();
    read(&mut lines, &mut res.ending);
    if kind.is_log() {
        res.last_lines.append(&mut lines);
    }
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
/// `trainwreck run`'s samples: kept for the report's memory curves, never scanned.
fn read_samples(path: &str, stream: &mut dyn Read, res: &mut FileResult) {
    use sources::samples;
    let mut data = Vec::new();
    if let Err(e) = stream
        .take(samples::MAX_BYTES as u64 + 1)
        .read_to_end(&mut data)
    {
        res.warnings.push(Warning::new(
            Some(path),
            text!("cannot read: {e}", "无法读取：{e}"),
        ));
        return;
    }
    match samples::read(path, &data) {
        Ok((s, bad)) => {
            if bad > 0 {
                res.warnings.push(Warning::new(
                    Some(path),
                    text!(
                        "{bad} malformed sample row(s) skipped",
                        "跳过了 {bad} 行格式不对的采样"
                    ),
                ));
            }
            res.samples = Some(s);
        }
        Err(e) => res.warnings.push(Warning::new(
            Some(path),
            e.prefixed("memory samples not read: ", "未读取内存采样："),
        )),
    }
}

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
