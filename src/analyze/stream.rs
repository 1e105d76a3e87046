//! The chunk loop of one input (or one range of it): each chunk goes once through the fact
//! parser and the one scanner, and each hit goes to the consumer of the watcher whose pattern
//! it is (`Consumer`: `rule_hits`, `launch`, `tail`). The paste repairs the loop applies — a
//! terminal's wrapped rows joined (`sources::rewrap`), one line two ranks wrote at once
//! undoubled (`sources::unmangle::undouble`) — are rescanned through the same dispatch, for
//! the consumers that take rewritten lines. It keeps no hit itself and decides nothing about
//! what a line means: each consumer moves what it gathered into the input's result at the end.

use super::launch::LauncherLines;
use super::lookback::keep_lookback;
use super::rule_hits::RuleHits;
use super::tail::{CleanEnds, ErrorLines};
use super::{Engine, FileResult, Progress, Watcher};
use crate::model::{Phase, Warning, text};
use crate::scan::{Hit, ScanScratch};
use crate::sources::SourceKind;
use crate::sources::encoding::{NotUtf8, decode_line};
use crate::sources::open::ReadMeter;
use crate::sources::reader::ChunkReader;
use crate::sources::{self, FactOut, rewrap};
use std::io::Read;
use std::sync::atomic::Ordering;

/// One hit as a consumer sees it.
pub(super) struct Seen<'a> {
    /// The scanner's hit: line number, and the line's byte range within `text`.
    pub hit: Hit,
    /// The chunk, or the rewritten text (joined rows, an undoubled line), the hit is in.
    pub text: &'a [u8],
    /// The line as matched: ANSI escapes removed, or the reading of it that matched.
    pub line: &'a [u8],
    /// `None` for a line as read; for a rewritten line, where each physical line starts in
    /// `text` (joined rows; empty for an undoubled line).
    pub joint: Option<&'a [usize]>,
    /// The complete lines just before the chunk, for look-backs (empty for an undoubled line).
    pub before: &'a [u8],
    /// For joined rows: the chunk they were read from and where the first row starts in it,
    /// so a look-back sees the lines before the rows, not the joined text alone.
    pub origin: Option<(&'a [u8], usize)>,
}

/// What one watcher does with its hits. Adding a watcher is a `Watcher` variant, its patterns
/// registered in `Engine::new`, and one type implementing this beside the others.
pub(super) trait Consumer {
    /// Pattern `local` (the watcher's own numbering) matched `seen`.
    fn take(&mut self, local: usize, seen: &Seen<'_>);
    /// Whether it is handed hits on rewritten lines (joined rows, undoubled writes): only
    /// what they say that no physical line says alone.
    fn takes_rewritten(&self) -> bool {
        false
    }
    /// Whether a line it takes may be two ranks' writes glued together: the stream then
    /// undoubles it and rescans the result.
    fn undoubles(&self) -> bool {
        false
    }
    /// Move what it gathered into the input's result (after the stream's facts).
    fn finish(&mut self, res: &mut FileResult, ranged: bool);
}

/// What part of its file a stream is.
pub(super) enum Part {
    /// The whole input.
    Whole,
    /// One range of a split file: the complete lines just before it (for `preceded_by`),
    /// whether its first chunk is the file's (looked at for wrapped rows), and the file
    /// offset it starts at (where its holes are said to be).
    Range {
        before: Vec<u8>,
        wrap: bool,
        at: u64,
    },
    /// The first chunk of a split file, for its wrapped rows only.
    WrapOnly,
}

impl Part {
    /// The complete lines before the stream, whether its first chunk is looked at for
    /// wrapped rows, whether it is a range of a split file, whether it is read for its
    /// wrapped rows only, and the file offset it starts at.
    fn unpack(self) -> (Vec<u8>, bool, bool, bool, u64) {
        match self {
            Part::Whole => (Vec::new(), true, false, false, 0),
            Part::Range { before, wrap, at } => (before, wrap, true, false, at),
            Part::WrapOnly => (Vec::new(), true, false, true, 0),
        }
    }
}

/// The consumers of one stream, one per watcher.
struct Consumers<'e, 'kb> {
    rules: RuleHits<'e, 'kb>,
    launch: LauncherLines,
    errors: ErrorLines,
    clean: CleanEnds,
}

impl Consumers<'_, '_> {
    fn of(&mut self, watcher: Watcher) -> &mut dyn Consumer {
        match watcher {
            Watcher::Rules => &mut self.rules,
            Watcher::Launcher => &mut self.launch,
            Watcher::ErrorTail => &mut self.errors,
            Watcher::CleanEnd => &mut self.clean,
        }
    }

    fn finish(&mut self, res: &mut FileResult, ranged: bool) {
        self.rules.finish(res, ranged);
        self.errors.finish(res, ranged);
        self.clean.finish(res, ranged);
        self.launch.finish(res, ranged);
    }
}

/// One chunk's dispatch of hits to their consumers: for its lines, for its wrapped rows
/// joined and for lines two ranks wrote at once, undoubled (both `joint: Some`, rewritten).
struct Dispatch<'c, 'e, 'kb> {
    routes: &'c crate::scan::watch::Routes<Watcher>,
    consumers: &'c mut Consumers<'e, 'kb>,
    /// The complete lines before the chunk.
    before: &'c [u8],
    chunk: &'c [u8],
    /// Lines a consumer took that read as two writes glued together, undoubled, to rescan.
    undoubled: Vec<(u64, Vec<u8>)>,
}

impl Dispatch<'_, '_, '_> {
    fn hit(
        &mut self,
        text: &[u8],
        hit: Hit,
        line: &[u8],
        joint: Option<&[usize]>,
        origin: Option<usize>,
    ) {
        let (watcher, local) = self.routes.route(hit.id);
        let consumer = self.consumers.of(watcher);
        if joint.is_some() && !consumer.takes_rewritten() {
            return;
        }
        // The lines before a chunk count for its look-back, and for joined rows read from
        // it; not for an undoubled line (it has no place among the rows).
        let before: &[u8] = if joint.is_none() || origin.is_some() {
            self.before
        } else {
            &[]
        };
        let seen = Seen {
            hit,
            text,
            line,
            joint,
            before,
            origin: origin.map(|at| (self.chunk, at)),
        };
        consumer.take(local, &seen);
        if joint.is_none()
            && consumer.undoubles()
            && let Some(u) = sources::unmangle::undouble(line)
        {
            self.undoubled.push((hit.lineno, u));
        }
    }
}

/// Buffers of a stream's joined wrapped rows, reused from chunk to chunk.
#[derive(Default)]
struct Joined {
    text: Vec<u8>,
    /// Where each physical row starts in `text`, and its end.
    joints: Vec<usize>,
}

impl Engine<'_> {
    /// Stream one input (or one range of it) through the fact parser and the scanner.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn scan_stream(
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
        let (mut before, wrap, ranged, only_wrapped, at) = part.unpack();
        // Progress counts the input's bytes as stored (a compressed input's compressed
        // bytes, through `meter`), in the unit of the sizes it is compared with.
        let step = |read: u64, reported: u64| meter.map_or(read - reported, |m| m.take_new());
        let mut consumers = Consumers {
            rules: RuleHits::new(self, kind, path),
            launch: LauncherLines::new(path),
            errors: ErrorLines::new(res.info.phase != Phase::Before),
            clean: CleanEnds::default(),
        };
        let mut fout = FactOut::default();
        // A hole of NULs anywhere (a crash's unwritten pages) is dropped as it streams, so no
        // line is made of it and the text after it is scanned (`holes::SkipHoles`).
        let mut reader = ChunkReader::new(sources::holes::SkipHoles::new(input, at));
        let mut line_buf = String::new();
        let mut hole_lines: Vec<Option<u64>> = Vec::new();
        let mut not_utf8 = NotUtf8::default();
        let mut reported = 0u64;
        let mut joined = Joined::default();
        loop {
            progress
                .bytes_done
                .fetch_add(step(taken(&reader), reported), Ordering::Relaxed);
            reported = taken(&reader);
            let Some(first) = next_chunk(&mut reader, path, res) else {
                break;
            };
            let (chunk, chunk_at) = reader.last_chunk();
            // The holes dropped so far that lie in this chunk get their line.
            let out = &reader.get_ref().holes.out;
            if let Some(at) = chunk_at
                && !out.is_empty()
            {
                sources::holes::locate(out, &mut hole_lines, chunk, at, first);
            }
            if !only_wrapped {
                not_utf8.count(chunk, first);
            }
            if let Some(p) = parser.as_mut() {
                feed_parser(p.as_mut(), chunk, first, &mut line_buf, &mut fout);
            }
            let mut dispatch = Dispatch {
                routes: &self.routes,
                consumers: &mut consumers,
                before: &before,
                chunk,
                undoubled: Vec::new(),
            };
            // The scanner counts the chunk's newlines for the reader (once, not twice).
            let newlines = (!only_wrapped).then(|| self.scan_lines(&mut dispatch, first, scratch));
            // A terminal's copy is a paste, not a multi-GB log: only a file's first chunk
            // (at most a buffer, 1 MiB) is looked at for wrapped rows, so big logs do not
            // pay for it.
            if wrap && reported < rewrap::WRAP_SCAN_BYTES && first == 1 {
                self.scan_wrapped(&mut dispatch, first, scratch, &mut joined);
            }
            if only_wrapped {
                break;
            }
            keep_lookback(&mut before, chunk, self.max_within);
            if let Some(n) = newlines {
                reader.counted(n);
            }
        }
        progress
            .bytes_done
            .fetch_add(step(taken(&reader), reported), Ordering::Relaxed);
        res.info.bytes = res.info.bytes.max(taken(&reader));
        res.lines = reader.lines_seen();
        res.long_lines = std::mem::take(&mut reader.long_lines);
        if !only_wrapped {
            res.holes = reader.get_ref().holes.clone();
            hole_lines.resize(res.holes.first.len(), None);
            res.holes.lines = hole_lines;
        }
        res.not_utf8 = not_utf8;
        if let Some(p) = parser.as_mut() {
            p.finish(&mut fout);
        }
        consumers.finish_with_facts(res, fout, path, ranged);
    }

    /// Scan a chunk's lines, then the lines a consumer found two ranks wrote at once,
    /// undoubled; returns the chunk's newlines.
    fn scan_lines(
        &self,
        d: &mut Dispatch<'_, '_, '_>,
        first: u64,
        scratch: &mut ScanScratch,
    ) -> u64 {
        let chunk = d.chunk;
        let newlines = self
            .scanner
            .scan_chunk_counting(chunk, first, scratch, |hit, line| {
                d.hit(chunk, hit, line, None, None)
            });
        for (lineno, text) in std::mem::take(&mut d.undoubled) {
            self.scanner
                .scan_chunk(&text, lineno, scratch, |hit, line| {
                    d.hit(&text, hit, line, Some(&[]), None)
                });
        }
        newlines
    }

    /// Scan a chunk's wrapped rows (a terminal's copy), each joined into one line.
    fn scan_wrapped(
        &self,
        d: &mut Dispatch<'_, '_, '_>,
        first: u64,
        scratch: &mut ScanScratch,
        joined: &mut Joined,
    ) {
        let chunk = d.chunk;
        let mut wrapped = rewrap::wrapped_lines(chunk, first);
        wrapped.extend(rewrap::padded_rows(chunk, first));
        for (lineno, pieces) in wrapped {
            joined.text.clear();
            joined.joints.clear();
            for &(a, b) in &pieces {
                joined.joints.push(joined.text.len());
                joined.text.extend_from_slice(&chunk[a..b]);
            }
            joined.joints.push(joined.text.len());
            let (text, joints) = (&joined.text[..], &joined.joints[..]);
            let first_row = pieces.first().map(|&(a, _)| a);
            self.scanner.scan_chunk(text, lineno, scratch, |hit, line| {
                d.hit(text, hit, line, Some(joints), first_row)
            });
        }
    }
}

impl Consumers<'_, '_> {
    /// Move the stream's facts and what each consumer gathered into the input's result.
    fn finish_with_facts(&mut self, res: &mut FileResult, fout: FactOut, path: &str, ranged: bool) {
        let phase = res.info.phase;
        for mut f in fout.facts {
            f.path = path.to_string();
            f.phase = phase;
            res.facts.push(f);
        }
        self.finish(res, ranged);
        res.events = fout.events;
        if let Some(mut s) = fout.samples {
            s.path = path.to_string();
            res.samples = Some(s);
        }
        for w in fout.warnings {
            res.warnings.push(Warning::new(Some(path), w));
        }
    }
}

/// Bytes taken from the input: those handed out and the holes dropped.
fn taken<R: Read>(r: &ChunkReader<sources::holes::SkipHoles<R>>) -> u64 {
    r.bytes_read + r.get_ref().dropped()
}

/// The next chunk's first line number; `None` at the end, or after a read error (said in a
/// warning: the rest is not analysed).
fn next_chunk<R: Read>(
    reader: &mut ChunkReader<sources::holes::SkipHoles<R>>,
    path: &str,
    res: &mut FileResult,
) -> Option<u64> {
    match reader.advance() {
        Ok(first) => first,
        Err(e) => {
            let n = taken(reader);
            res.warnings.push(Warning::new(
                Some(path),
                text!(
                    "read error after {n} bytes, the rest is not analysed: {e}",
                    "读到 {n} 字节后出错，其余部分未分析：{e}"
                ),
            ));
            None
        }
    }
}

/// Hand a chunk's lines, decoded, to the fact parser.
fn feed_parser(
    p: &mut dyn sources::FactParser,
    chunk: &[u8],
    first: u64,
    line_buf: &mut String,
    fout: &mut FactOut,
) {
    for (lineno, line) in sources::reader::lines(chunk, first) {
        line_buf.clear();
        line_buf.push_str(&decode_line(line));
        p.line(lineno, line_buf, fout);
    }
}
