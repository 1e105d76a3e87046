//! Opening an input: the one place that opens a file or stdin, decompresses it (gzip, zstd, xz,
//! lz4: by magic, `elfcore::input::decoder`), sniffs the
//! head, detects the kind and says how the kind is read (lines with an optional fact parser,
//! a bounded document, a core read in place, or not at all with the reason). The analysis,
//! the work planner and the tests all go through here, so they read every input the same
//! way. It reads only the head; the caller streams the rest. A file is read from the one handle
//! opened here, and that handle is checked against the listing and the path once the read is
//! done (`Watch`), so a file truncated, grown, replaced or deleted while read is said once.

use crate::inputs::{FileId, Input, Source};
use crate::model::SourceKind;
use crate::sources::elfcore::input::{decoder, sniff};
use crate::sources::{FactParser, detect, fact_parser};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// How an opened input is read.
pub enum How {
    /// Stream its lines through the scanner, and through this fact parser when the kind has one.
    Lines(Option<Box<dyn FactParser>>),
    /// A Flight Recorder dump: one bounded document.
    FlightRecorder,
    /// An ELF core, read in place with positioned reads (or streamed from its `.gz`).
    Core(PathBuf),
    /// Not read: why, when there is something to say (a capture's own manifest is silent).
    Skip(Option<String>),
}

/// An input, opened.
pub struct Opened {
    pub kind: SourceKind,
    /// The name the kind was detected from (the file name, without `.gz`).
    pub name: String,
    /// The whole (decompressed) content from its first byte.
    pub stream: Box<dyn Read + Send>,
    pub how: How,
    /// For a regular file: what to check once the stream has been read.
    pub watch: Option<Watch>,
    /// For a `.gz`: whether a decompression cap stopped the read (`GzipState::hit`).
    pub gzip: Option<Arc<GzipState>>,
}

/// Decompressed bytes of all compressed inputs of this process so far (`limits::GZIP_BYTES_TOTAL`).
static GZIP_TOTAL: AtomicU64 = AtomicU64::new(0);

/// Why a decompression stopped early, once it has.
#[derive(Default)]
pub struct GzipState {
    out: AtomicU64,
    compressed: Arc<AtomicU64>,
    stopped: std::sync::Mutex<Option<&'static str>>,
}

impl GzipState {
    /// The warning to give when a cap stopped the read: which cap, with the real numbers.
    pub fn hit(&self) -> Option<String> {
        let why = (*self.stopped.lock().unwrap_or_else(|e| e.into_inner()))?;
        Some(format!(
            "decompression stopped after {} bytes from {} compressed bytes ({why}); the rest of the file is not analysed",
            self.out.load(Ordering::Relaxed),
            self.compressed.load(Ordering::Relaxed)
        ))
    }
}

/// A decompressor that stops at the caps of `limits` (size per input, size in total, ratio),
/// ending the stream cleanly and recording why.
struct GzipCap<R> {
    inner: R,
    state: Arc<GzipState>,
}

impl<R> GzipCap<R> {
    fn new(inner: R, compressed: Arc<AtomicU64>) -> Self {
        GzipCap {
            inner,
            state: Arc::new(GzipState {
                compressed,
                ..GzipState::default()
            }),
        }
    }
}

impl<R: Read> Read for GzipCap<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use crate::limits::{GZIP_BYTES_PER_INPUT, GZIP_BYTES_TOTAL, GZIP_RATIO, GZIP_RATIO_AFTER};
        let st = &self.state;
        let out = st.out.load(Ordering::Relaxed);
        let why = if out >= GZIP_BYTES_PER_INPUT {
            Some("the per-input cap of limits::GZIP_BYTES_PER_INPUT")
        } else if GZIP_TOTAL.load(Ordering::Relaxed) >= GZIP_BYTES_TOTAL {
            Some("the cap on all .gz inputs together, limits::GZIP_BYTES_TOTAL")
        } else if out >= GZIP_RATIO_AFTER
            && out / st.compressed.load(Ordering::Relaxed).max(1) > GZIP_RATIO
        {
            Some(
                "it inflates over limits::GZIP_RATIO times its compressed size: a decompression bomb",
            )
        } else {
            None
        };
        if let Some(why) = why {
            *st.stopped.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
            return Ok(0);
        }
        let room = (GZIP_BYTES_PER_INPUT - out).min(buf.len() as u64) as usize;
        let k = self.inner.read(&mut buf[..room])?;
        st.out.fetch_add(k as u64, Ordering::Relaxed);
        GZIP_TOTAL.fetch_add(k as u64, Ordering::Relaxed);
        Ok(k)
    }
}

/// A reader that counts the bytes it hands out (shared with its `Watch`).
struct Counted<R> {
    inner: R,
    n: Arc<AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.n.fetch_add(k as u64, Ordering::Relaxed);
        Ok(k)
    }
}

impl<R: io::Seek> io::Seek for Counted<R> {
    fn seek(&mut self, to: io::SeekFrom) -> io::Result<u64> {
        self.inner.seek(to)
    }
}

/// The state of a file when its handle was opened, and that handle (a clone), to say after the
/// read whether the file changed under it.
pub struct Watch {
    path: PathBuf,
    handle: std::fs::File,
    listed: Option<FileId>,
    at_open: FileId,
    read: Arc<AtomicU64>,
}

/// What changed while a file was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// One sentence naming what happened and what was read.
    pub message: String,
    /// The bytes really read from the file, when that differs from its listed size.
    pub bytes_read: Option<u64>,
}

impl Watch {
    fn new(
        path: &Path,
        file: &std::fs::File,
        listed: Option<FileId>,
    ) -> Option<(Watch, Arc<AtomicU64>)> {
        let meta = file.metadata().ok()?;
        if !meta.is_file() {
            return None;
        }
        let read = Arc::new(AtomicU64::new(0));
        let w = Watch {
            path: path.to_path_buf(),
            handle: file.try_clone().ok()?,
            listed,
            at_open: FileId::of(&meta),
            read: read.clone(),
        };
        Some((w, read))
    }

    /// Whether the file changed between its listing, the open and the end of the read; `None`
    /// when it did not. One sentence, however many things changed.
    pub fn check(&self) -> Option<Change> {
        let read = self.read.load(Ordering::Relaxed);
        let now = FileId::of(&self.handle.metadata().ok()?);
        let at_path = std::fs::metadata(&self.path);
        let open = self.at_open;
        let mut what = Vec::new();
        if let Some(l) = self.listed {
            if !l.same_file(&open) {
                what.push(format!(
                    "was replaced between listing ({} bytes) and opening ({} bytes): the file found at opening was read",
                    l.size, open.size
                ));
            } else if l.size != open.size {
                what.push(format!(
                    "changed from {} to {} bytes between listing and opening",
                    l.size, open.size
                ));
            }
        }
        let mut bytes_read = None;
        match &at_path {
            Err(e) if e.kind() == io::ErrorKind::NotFound => what.push(format!(
                "was deleted while being read; {read} bytes were read from the handle already open"
            )),
            Ok(m) if !FileId::of(m).same_file(&now) => what.push(format!(
                "was replaced (renamed over) while being read: {read} bytes of the original were read, the new file at this path ({} bytes) was not",
                m.len()
            )),
            _ => {}
        }
        if now.size < open.size {
            what.push(format!(
                "shrank from {} to {} bytes while being read (truncated); {read} bytes were read, anything after them was lost",
                open.size, now.size
            ));
            bytes_read = Some(read);
        } else if now.size > open.size {
            what.push(format!(
                "grew from {} to {} bytes while being read (still being written); {read} bytes were read",
                open.size, now.size
            ));
        } else if now.mtime_ns != open.mtime_ns && what.is_empty() {
            what.push(format!(
                "was modified in place while being read (same size, new modification time); {read} bytes were read"
            ));
        }
        if what.is_empty() {
            return None;
        }
        Some(Change {
            message: format!("the file {}", what.join("; then it ")),
            bytes_read,
        })
    }

    /// As `check`, for one range of a file split over threads: the same sentence from every
    /// range (no per-range numbers), so the ranges of one file give one warning.
    pub fn check_range(&self) -> Option<String> {
        let now = FileId::of(&self.handle.metadata().ok()?);
        let at_path = std::fs::metadata(&self.path);
        let listed = self.listed?;
        if !listed.same_file(&self.at_open) {
            return Some(format!(
                "the file was replaced while being read (listed at {} bytes): ranges opened after that were not read",
                listed.size
            ));
        }
        match at_path {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Some(format!(
                    "the file was deleted while being read (listed at {} bytes); what was read came from the handles already open",
                    listed.size
                ));
            }
            Ok(m) if !FileId::of(&m).same_file(&now) => {
                return Some(format!(
                    "the file was replaced (renamed over) while being read (listed at {} bytes): only the original was read",
                    listed.size
                ));
            }
            _ => {}
        }
        if now.size != listed.size || now.mtime_ns != listed.mtime_ns {
            return Some(format!(
                "the file changed while being read (listed at {} bytes, {} bytes at the end of a range): lines past the change may be missing or doubled",
                listed.size, now.size
            ));
        }
        None
    }
}

/// Reads a file by position (`pread`), so the ranges of one split file share a single open
/// handle without sharing a cursor.
pub struct At<'f> {
    file: &'f std::fs::File,
    pos: u64,
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let k = self.file.read_at(buf, self.pos)?;
        self.pos += k as u64;
        Ok(k)
    }
}

impl io::Seek for At<'_> {
    fn seek(&mut self, to: io::SeekFrom) -> io::Result<u64> {
        self.pos = match to {
            io::SeekFrom::Start(n) => n,
            io::SeekFrom::Current(d) => self.pos.saturating_add_signed(d),
            io::SeekFrom::End(d) => self.file.metadata()?.len().saturating_add_signed(d),
        };
        Ok(self.pos)
    }
}

/// One byte range of a big plain file, read through the one handle `splittable` opened for
/// all its ranges: every range comes from the same file, even if the path is renamed over or
/// deleted meanwhile (the watch then says so, once per file).
pub fn open_range<'f>(
    input: &Input,
    file: &'f std::fs::File,
    start: u64,
    end: u64,
) -> Result<
    (
        crate::sources::reader::SegmentRead<impl Read + Send + 'f>,
        Option<Watch>,
    ),
    String,
> {
    let Source::File(p) = &input.source else {
        return Err("stdin cannot be split".into());
    };
    let (watch, n) = match Watch::new(p, file, input.id) {
        Some((w, n)) => (Some(w), n),
        None => (None, Arc::new(AtomicU64::new(0))),
    };
    let counted = Counted {
        inner: At { file, pos: 0 },
        n,
    };
    let seg = crate::sources::reader::SegmentRead::new(counted, start, end)
        .map_err(|e| format!("cannot read: {e}"))?;
    Ok((seg, watch))
}

/// Open `input`, decompress it, detect its kind and decide how it is read. `Err` is the
/// warning to report when it cannot be opened or read at all.
pub fn open(input: &Input) -> Result<Opened, String> {
    let path = input.display.as_str();
    let mut watch = None;
    let mut raw: Box<dyn Read + Send> = match &input.source {
        Source::Stdin => Box::new(io::stdin()),
        Source::File(p) => {
            let f = std::fs::File::open(p).map_err(|e| format!("cannot open: {e}"))?;
            match Watch::new(p, &f, input.id) {
                Some((w, n)) => {
                    watch = Some(w);
                    Box::new(Counted { inner: f, n })
                }
                // A FIFO named on the command line: a stream, nothing to check.
                None => Box::new(f),
            }
        }
    };
    let head = read_head(&mut raw).map_err(|e| format!("cannot read: {e}"))?;
    let file_name = path.rsplit('/').next().unwrap_or(path);
    let container = sniff(&head);
    let mut gzip = None;
    let (stream, head, name): (Box<dyn Read + Send>, Vec<u8>, &str) =
        if let Some(z) = container.compression() {
            // Every compressed input (gzip, zstd, xz, lz4) is decompressed under the same
            // caps of `limits`, counted on the compressed bytes read.
            let compressed = Arc::new(AtomicU64::new(0));
            let counted: Box<dyn Read + Send> = Box::new(Counted {
                inner: io::Cursor::new(head).chain(raw),
                n: compressed.clone(),
            });
            let dec =
                decoder(container, counted).map_err(|e| format!("{z} data cannot be read: {e}"))?;
            let capped = GzipCap::new(dec, compressed);
            gzip = Some(capped.state.clone());
            let mut dec: Box<dyn Read + Send> = Box::new(capped);
            let inner = read_head(&mut dec)
                .map_err(|e| format!("{z} data is corrupt or truncated before any text: {e}"))?;
            let bare = [".gz", ".zst", ".xz", ".lz4"]
                .iter()
                .find_map(|ext| file_name.strip_suffix(ext))
                .unwrap_or(file_name);
            (dec, inner, bare)
        } else {
            (raw, head, file_name)
        };
    let (kind, how) = classify(input, name, &head);
    Ok(Opened {
        kind,
        name: name.to_string(),
        stream: Box::new(io::Cursor::new(head).chain(stream)),
        how,
        watch,
        gzip,
    })
}

/// The kind of the (decompressed) head and how that kind is read.
fn classify(input: &Input, name: &str, head: &[u8]) -> (SourceKind, How) {
    if detect::is_zstd(head) || detect::is_xz(head) {
        return (
            SourceKind::Binary,
            How::Skip(Some(
                "zstd/xz-compressed file: decompress it first (e.g. `zstd -d` / `xz -d`); not read"
                    .into(),
            )),
        );
    }
    let kind = detect::detect(name, head);
    if head.is_empty() {
        let why = if input.source == Source::Stdin {
            "stdin was empty"
        } else {
            "empty file"
        };
        return (kind, How::Skip(Some(why.into())));
    }
    let how = match kind {
        SourceKind::ElfCore => match &input.source {
            Source::File(p) => How::Core(p.clone()),
            Source::Stdin => How::Skip(Some(
                "an ELF core on stdin is not read: save it to a file and pass its path".into(),
            )),
        },
        SourceKind::FlightRecorder => How::FlightRecorder,
        SourceKind::Binary => How::Skip(Some(format!("{} file: not scanned", kind.as_str()))),
        // What a capture recorded about itself, listed in the inputs but not evidence.
        // trainwreck's own saved reports and people's notes: listed, never evidence.
        SourceKind::CaptureManifest
        | SourceKind::CaptureSamples
        | SourceKind::OwnReport
        | SourceKind::Notes => How::Skip(None),
        _ => How::Lines(fact_parser(kind, name)),
    };
    (kind, how)
}

/// The kind of a plain file whose byte ranges can be read on several threads at once (not
/// compressed, not binary, no fact parser that needs its lines in order), and the one handle
/// all its ranges are read from; `None` otherwise, or when the file at the path is no longer
/// the one listed (the whole-file path then reads and reports it).
pub fn splittable(input: &Input) -> Option<(SourceKind, std::fs::File)> {
    let Source::File(p) = &input.source else {
        return None;
    };
    let file = std::fs::File::open(p).ok()?;
    if let Some(l) = input.id
        && !l.same_file(&FileId::of(&file.metadata().ok()?))
    {
        return None;
    }
    let head = read_head(&mut At {
        file: &file,
        pos: 0,
    })
    .ok()?;
    if head.is_empty() || sniff(&head).compression().is_some() {
        return None;
    }
    let path = input.display.as_str();
    let name = path.rsplit('/').next().unwrap_or(path);
    let kind = detect::detect(name, &head);
    match kind {
        SourceKind::ElfCore | SourceKind::Binary | SourceKind::FlightRecorder => None,
        k if !k.is_scanned() => None,
        _ if fact_parser(kind, name).is_some() => None,
        _ => Some((kind, file)),
    }
}

/// Whether a file of this name is probably read line by line by a fact parser (dmesg,
/// snapshots), from its name alone: for ordering the work by cost, never for reading it.
pub fn parsed_by_name(display: &str) -> bool {
    let name = display.rsplit('/').next().unwrap_or(display);
    fact_parser(detect::detect(name, b""), name).is_some()
}

fn read_head(r: &mut dyn Read) -> io::Result<Vec<u8>> {
    let mut head = vec![0u8; detect::SNIFF_BYTES];
    let mut n = 0;
    while n < head.len() {
        match r.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    head.truncate(n);
    Ok(head)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::collect;

    /// A split file's ranges, read in order after `change` ran between planning and reading:
    /// the lines read, and the warning the ranges give (the same from each, as merged).
    fn read_ranges_after(change: impl FnOnce(&Path)) -> (Vec<String>, Vec<String>) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("train.log");
        let original: String = (0..2000).map(|i| format!("original line {i}\n")).collect();
        std::fs::write(&p, &original).unwrap();
        let (inputs, _) = collect(&[p.display().to_string()]);
        let input = &inputs[0];
        let (_, file) = splittable(input).expect("a plain log splits");
        change(&p);
        let size = input.size;
        let mut lines = Vec::new();
        let mut warnings = Vec::new();
        for k in 0..4 {
            let (mut seg, watch) =
                open_range(input, &file, size * k / 4, size * (k + 1) / 4).unwrap();
            let mut s = String::new();
            seg.read_to_string(&mut s).unwrap();
            lines.extend(s.lines().map(str::to_string));
            if let Some(w) = watch.and_then(|w| w.check_range())
                && !warnings.contains(&w)
            {
                warnings.push(w);
            }
        }
        (lines, warnings)
    }

    fn expected() -> Vec<String> {
        (0..2000).map(|i| format!("original line {i}")).collect()
    }

    #[test]
    fn ranges_of_an_unchanged_file_are_its_lines_once_each() {
        let (lines, warnings) = read_ranges_after(|_| {});
        assert_eq!(lines, expected());
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn a_file_renamed_over_after_planning_is_read_whole_from_the_original() {
        let (lines, warnings) = read_ranges_after(|p| {
            let other = p.with_file_name("new.log");
            std::fs::write(&other, "a different file\n".repeat(5000)).unwrap();
            std::fs::rename(&other, p).unwrap();
        });
        assert_eq!(lines, expected(), "no line of the new file is mixed in");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("renamed over"), "{warnings:?}");
    }

    #[test]
    fn a_file_deleted_after_planning_is_still_read_whole() {
        let (lines, warnings) = read_ranges_after(|p| std::fs::remove_file(p).unwrap());
        assert_eq!(lines, expected());
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("deleted"), "{warnings:?}");
    }

    #[test]
    fn a_file_truncated_after_planning_says_lines_may_be_missing() {
        let (lines, warnings) = read_ranges_after(|p| {
            let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
            f.set_len(1000).unwrap();
        });
        assert!(lines.len() < 2000);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("changed while being read"),
            "{warnings:?}"
        );
    }
}
