//! Opening an input: the one place that opens a file, stdin or an archive member, decompresses
//! it (gzip, zstd, xz, lz4, bzip2: by magic, `decompress::decoder`), says whether it is an
//! archive (tar or zip, by magic: its members are then opened here one by one), decodes text
//! written in UTF-16 or a legacy CJK encoding to UTF-8 (`encoding`), reads a log past a hole of
//! NULs (`holes`), sniffs the head, detects the kind and
//! says how the kind is read (lines with an optional fact parser, a bounded document, a core
//! read in place, or not at all with the reason). The analysis,
//! the work planner and the tests all go through here, so they read every input the same
//! way. It reads only the head; the caller streams the rest. A file is read from the one handle
//! opened here, and that handle is checked against the listing and the path once the read is
//! done (`Watch`), so a file truncated, grown, replaced or deleted while read is said once.

use super::kinds::{Reading, SourceKind};
use crate::inputs::{FileId, Input, Source};
use crate::model::{Text, text};
use crate::sources::archive;
use crate::sources::decompress::{Container, decoder, sniff};
use crate::sources::encoding::{self, Decoded, Transcode};
use crate::sources::{FactParser, detect, fact_parser, holes};
use std::io::{self, Read, Seek};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// How an opened input is read.
pub enum How<'a> {
    /// Stream its lines through the scanner, and through this fact parser when the kind has one.
    Lines(Option<Box<dyn FactParser>>),
    /// A Flight Recorder dump: one bounded document.
    FlightRecorder,
    /// `trainwreck run`'s `samples.csv`: one bounded document, the memory curves' data.
    Samples,
    /// An ELF core, read in place with positioned reads (or streamed from its `.gz`).
    Core(PathBuf),
    /// A tar archive (plain or compressed) in `stream`: its members are read in order.
    Tar,
    /// A zip archive, with the random access its central directory needs.
    Zip(Box<dyn archive::ReadSeek + 'a>),
    /// Not read: why, when there is something to say (a capture's own manifest is silent).
    Skip(Option<Text>),
}

/// An input (or an archive member), opened.
pub struct Opened<'a> {
    pub kind: SourceKind,
    /// The name the kind was detected from (the file name, without `.gz`).
    pub name: String,
    /// The whole (decompressed) content from its first byte.
    pub stream: Box<dyn Read + 'a>,
    pub how: How<'a>,
    /// For a regular file: what to check once the stream has been read.
    pub watch: Option<Watch>,
    /// For a compressed input: whether a decompression cap stopped the read (`GzipState::hit`).
    pub gzip: Option<Arc<GzipState>>,
    /// What the text was decoded from, when it was not UTF-8 (`stream` is UTF-8 regardless).
    pub encoding: Option<Decoded>,
    /// For text read past a hole (`holes`): the NUL bytes dropped from `stream` so far.
    pub holes: Option<Arc<AtomicU64>>,
    /// Bytes of the input as stored (compressed, for a compressed input) read so far: what
    /// progress counts, in the same unit as the inputs' sizes.
    pub meter: Arc<ReadMeter>,
}

/// Bytes read from an input as it is stored, and how many of them progress was told of
/// already (members of one archive share their archive's meter).
#[derive(Default)]
pub struct ReadMeter {
    read: Arc<AtomicU64>,
    reported: AtomicU64,
    /// For a stream (stdin, a FIFO), which has no path or size to know it by again: SHA-256 of
    /// the bytes read, taken as they pass (the history's run id of a paste).
    digest: Option<Digest>,
}

/// SHA-256 of a stream's bytes as read.
type Digest = Arc<std::sync::Mutex<sha2::Sha256>>;

impl ReadMeter {
    /// The first 32 hex digits of the digest of a stream's bytes read (`None` for a file).
    pub fn digest(&self) -> Option<String> {
        use sha2::Digest as _;
        let h = self.digest.as_ref()?.lock().ok()?.clone().finalize();
        Some(h.iter().take(16).map(|b| format!("{b:02x}")).collect())
    }

    /// Bytes read since the last call.
    pub fn take_new(&self) -> u64 {
        let now = self.read.load(Ordering::Relaxed);
        let before = self.reported.swap(now, Ordering::Relaxed);
        now.saturating_sub(before)
    }
}

/// Decompressed bytes of all compressed inputs (and zip members) of one analysis so far,
/// checked against `limits::GZIP_BYTES_TOTAL`. One per analysis (it lives in the analysis's
/// `Progress`), so a process that runs many analyses (a fuzzer, `rules test`, a server) gives
/// each the whole allowance.
pub type Inflated = Arc<AtomicU64>;

/// Why a decompression stopped early, once it has.
pub struct GzipState {
    out: AtomicU64,
    compressed: Arc<AtomicU64>,
    /// Which cap, in English and in Chinese.
    stopped: std::sync::Mutex<Option<(&'static str, &'static str)>>,
    /// The size cap of this stream: `GZIP_BYTES_PER_INPUT`, or none for a tar archive's
    /// stream (its members are capped one by one).
    limit: AtomicU64,
    /// Whether this stream inflates data itself (counted in the total and the ratio), or
    /// only cuts a member out of a stream inflated (and counted) already.
    inflates: bool,
    /// "input" or "member", for the warning.
    unit: &'static str,
    /// The analysis's running total (`Inflated`).
    total: Inflated,
}

impl GzipState {
    /// The warning to give when a cap stopped the read: which cap, with the real numbers.
    pub fn hit(&self) -> Option<Text> {
        let (why, why_zh) = (*self.stopped.lock().unwrap_or_else(|e| e.into_inner()))?;
        let out = self.out.load(Ordering::Relaxed);
        Some(if self.inflates {
            let compressed = self.compressed.load(Ordering::Relaxed);
            let (unit, unit_zh) = if self.unit == "member" {
                ("member", "成员")
            } else {
                ("file", "文件")
            };
            text!(
                "decompression stopped after {out} bytes from {compressed} compressed bytes ({why}); the rest of the {unit} is not analysed",
                "从 {compressed} 字节压缩数据解压出 {out} 字节后停止（{why_zh}）；该{unit_zh}的其余部分未分析"
            )
        } else {
            text!(
                "decompression stopped after {out} bytes of this member ({why}); the rest of the member is not analysed",
                "这个成员解压到 {out} 字节时停止（{why_zh}）；成员的其余部分未分析"
            )
        })
    }
}

/// A decompressor that stops at the caps of `limits` (size per input or member, size in
/// total, ratio), ending the stream cleanly and recording why.
pub(crate) struct GzipCap<R> {
    inner: R,
    state: Arc<GzipState>,
}

impl<R> GzipCap<R> {
    /// Caps for a stream that inflates `compressed` bytes (counted as they are read, or known),
    /// counted in the analysis's `total`.
    pub(crate) fn new(
        inner: R,
        compressed: Arc<AtomicU64>,
        unit: &'static str,
        total: &Inflated,
    ) -> Self {
        GzipCap {
            inner,
            state: Arc::new(GzipState {
                out: AtomicU64::new(0),
                compressed,
                stopped: Default::default(),
                limit: AtomicU64::new(crate::limits::GZIP_BYTES_PER_INPUT),
                inflates: true,
                unit,
                total: total.clone(),
            }),
        }
    }

    /// The per-member size cap alone, for a member cut from an archive stream that the caps
    /// on inflating already watch.
    pub(crate) fn member(inner: R) -> Self {
        let mut c = GzipCap::new(inner, Arc::default(), "member", &Inflated::default());
        if let Some(st) = Arc::get_mut(&mut c.state) {
            st.inflates = false;
        }
        c
    }

    pub(crate) fn state(&self) -> Arc<GzipState> {
        self.state.clone()
    }
}

impl<R: Read> Read for GzipCap<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use crate::limits::{GZIP_BYTES_TOTAL, GZIP_RATIO, GZIP_RATIO_AFTER};
        let st = &self.state;
        let out = st.out.load(Ordering::Relaxed);
        let limit = st.limit.load(Ordering::Relaxed);
        let why = if out >= limit {
            Some(if st.unit == "member" {
                (
                    "the per-member cap of limits::GZIP_BYTES_PER_INPUT",
                    "达到单个成员的上限 limits::GZIP_BYTES_PER_INPUT",
                )
            } else {
                (
                    "the per-input cap of limits::GZIP_BYTES_PER_INPUT",
                    "达到单个输入的上限 limits::GZIP_BYTES_PER_INPUT",
                )
            })
        } else if st.inflates && st.total.load(Ordering::Relaxed) >= GZIP_BYTES_TOTAL {
            Some((
                "the cap on all compressed inputs together, limits::GZIP_BYTES_TOTAL",
                "达到所有压缩输入合计的上限 limits::GZIP_BYTES_TOTAL",
            ))
        } else if st.inflates
            && out >= GZIP_RATIO_AFTER
            && out / st.compressed.load(Ordering::Relaxed).max(1) > GZIP_RATIO
        {
            Some((
                "it inflates over limits::GZIP_RATIO times its compressed size: a decompression bomb",
                "解压后超过压缩大小的 limits::GZIP_RATIO 倍：疑似解压炸弹",
            ))
        } else {
            None
        };
        if let Some(why) = why {
            *st.stopped.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
            return Ok(0);
        }
        let room = (limit - out).min(buf.len() as u64) as usize;
        let k = self.inner.read(&mut buf[..room])?;
        st.out.fetch_add(k as u64, Ordering::Relaxed);
        if st.inflates {
            st.total.fetch_add(k as u64, Ordering::Relaxed);
        }
        Ok(k)
    }
}

/// A reader that counts the bytes it hands out (shared with its `Watch`).
struct Counted<R> {
    inner: R,
    n: Arc<AtomicU64>,
    /// Streams only (see `ReadMeter::digest`).
    digest: Option<Digest>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.n.fetch_add(k as u64, Ordering::Relaxed);
        if let Some(d) = &self.digest
            && let Ok(mut d) = d.lock()
        {
            sha2::Digest::update(&mut *d, &buf[..k]);
        }
        Ok(k)
    }
}

impl archive::ReadSeek for Counted<std::fs::File> {}

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
    pub message: Text,
    /// The bytes really read from the file, when that differs from its listed size.
    pub bytes_read: Option<u64>,
}

impl Watch {
    /// A watch on a regular file (`None` for a FIFO), whose reads are counted in `read`.
    fn new(
        path: &Path,
        file: &std::fs::File,
        listed: Option<FileId>,
        read: &Arc<AtomicU64>,
    ) -> Option<Watch> {
        let meta = file.metadata().ok()?;
        if !meta.is_file() {
            return None;
        }
        Some(Watch {
            path: path.to_path_buf(),
            handle: file.try_clone().ok()?,
            listed,
            at_open: FileId::of(&meta),
            read: read.clone(),
        })
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
                what.push(text!(
                    "was replaced between listing ({} bytes) and opening ({} bytes): the file found at opening was read",
                    "在列出（{} 字节）和打开（{} 字节）之间被替换：读取的是打开时找到的文件",
                    l.size,
                    open.size
                ));
            } else if l.size != open.size {
                what.push(text!(
                    "changed from {} to {} bytes between listing and opening",
                    "在列出和打开之间从 {} 字节变成了 {} 字节",
                    l.size,
                    open.size
                ));
            }
        }
        let mut bytes_read = None;
        match &at_path {
            Err(e) if e.kind() == io::ErrorKind::NotFound => what.push(text!(
                "was deleted while being read; {read} bytes were read from the handle already open",
                "在读取过程中被删除；已从打开的句柄读取了 {read} 字节"
            )),
            Ok(m) if !FileId::of(m).same_file(&now) => what.push(text!(
                "was replaced (renamed over) while being read: {read} bytes of the original were read, the new file at this path ({} bytes) was not",
                "在读取过程中被替换（被重命名覆盖）：读取了原文件的 {read} 字节，该路径上的新文件（{} 字节）未读取",
                m.len()
            )),
            _ => {}
        }
        if now.size < open.size {
            what.push(text!(
                "shrank from {} to {} bytes while being read (truncated); {read} bytes were read, anything after them was lost",
                "在读取过程中从 {} 字节缩小到 {} 字节（被截断）；读取了 {read} 字节，其后的内容已丢失",
                open.size,
                now.size
            ));
            bytes_read = Some(read);
        } else if now.size > open.size {
            what.push(text!(
                "grew from {} to {} bytes while being read (still being written); {read} bytes were read",
                "在读取过程中从 {} 字节增长到 {} 字节（仍在写入）；读取了 {read} 字节",
                open.size,
                now.size
            ));
        } else if now.mtime_ns != open.mtime_ns && what.is_empty() {
            what.push(text!(
                "was modified in place while being read (same size, new modification time); {read} bytes were read",
                "在读取过程中被原地修改（大小不变，修改时间变了）；读取了 {read} 字节"
            ));
        }
        if what.is_empty() {
            return None;
        }
        Some(Change {
            message: Text::join(&what, "; then it ", "；随后又").prefixed("the file ", "文件"),
            bytes_read,
        })
    }

    /// As `check`, for one range of a file split over threads: the same sentence from every
    /// range (no per-range numbers), so the ranges of one file give one warning.
    pub fn check_range(&self) -> Option<Text> {
        let now = FileId::of(&self.handle.metadata().ok()?);
        let at_path = std::fs::metadata(&self.path);
        let listed = self.listed?;
        if !listed.same_file(&self.at_open) {
            return Some(text!(
                "the file was replaced while being read (listed at {} bytes): ranges opened after that were not read",
                "文件在读取过程中被替换（列出时为 {} 字节）：之后打开的分段未读取",
                listed.size
            ));
        }
        match at_path {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Some(text!(
                    "the file was deleted while being read (listed at {} bytes); what was read came from the handles already open",
                    "文件在读取过程中被删除（列出时为 {} 字节）；读到的内容来自已打开的句柄",
                    listed.size
                ));
            }
            Ok(m) if !FileId::of(&m).same_file(&now) => {
                return Some(text!(
                    "the file was replaced (renamed over) while being read (listed at {} bytes): only the original was read",
                    "文件在读取过程中被替换（被重命名覆盖，列出时为 {} 字节）：只读取了原文件",
                    listed.size
                ));
            }
            _ => {}
        }
        if now.size != listed.size || now.mtime_ns != listed.mtime_ns {
            return Some(text!(
                "the file changed while being read (listed at {} bytes, {} bytes at the end of a range): lines past the change may be missing or doubled",
                "文件在读取过程中发生了变化（列出时为 {} 字节，某个分段读完时为 {} 字节）：变化之后的行可能缺失或重复",
                listed.size,
                now.size
            ));
        }
        None
    }
}

/// Reads a file by position (`pread`), so the ranges of one split file share a single open
/// handle without sharing a cursor.
pub struct Positional<'f> {
    file: &'f std::fs::File,
    pos: u64,
}

impl<'f> Positional<'f> {
    /// Reading `file` from its start.
    pub fn new(file: &'f std::fs::File) -> Self {
        Positional { file, pos: 0 }
    }
}

impl Read for Positional<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let k = self.file.read_at(buf, self.pos)?;
        self.pos += k as u64;
        Ok(k)
    }
}

impl io::Seek for Positional<'_> {
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
pub(crate) fn open_range<'f>(
    input: &Input,
    file: &'f std::fs::File,
    start: u64,
    end: u64,
) -> Result<
    (
        crate::sources::reader::SegmentRead<impl Read + Send + 'f>,
        Option<Watch>,
    ),
    Text,
> {
    let Source::File(p) = &input.source else {
        return Err(text!("stdin cannot be split", "标准输入无法分段读取"));
    };
    let n = Arc::new(AtomicU64::new(0));
    let watch = Watch::new(p, file, input.id, &n);
    let counted = Counted {
        inner: Positional { file, pos: 0 },
        n,
        digest: None,
    };
    let seg = crate::sources::reader::SegmentRead::new(counted, start, end)
        .map_err(|e| text!("cannot read: {e}", "无法读取：{e}"))?;
    Ok((seg, watch))
}

/// Open `input` on its own, outside an analysis (its decompression counted alone): `open_in`.
pub fn open(input: &Input) -> Result<Opened<'static>, Text> {
    open_in(input, &Inflated::default())
}

/// Open `input`, decompress it (counted in the analysis's `total`), detect its kind and decide
/// how it is read. `Err` is the warning to report when it cannot be opened or read at all.
pub(crate) fn open_in(input: &Input, total: &Inflated) -> Result<Opened<'static>, Text> {
    let path = input.display.as_str();
    let read = Arc::new(AtomicU64::new(0));
    let mut watch = None;
    let mut digest = None;
    // A regular file stays a `File`, for the random access a zip needs.
    let mut raw = match &input.source {
        Source::Stdin => {
            digest = Some(Digest::default());
            Raw::Stream(Box::new(Counted {
                inner: io::stdin(),
                n: read.clone(),
                digest: digest.clone(),
            }))
        }
        Source::File(p) => {
            let f =
                std::fs::File::open(p).map_err(|e| text!("cannot open: {e}", "无法打开：{e}"))?;
            watch = Watch::new(p, &f, input.id, &read);
            // A FIFO named on the command line: a stream, nothing to check, known by digest.
            if watch.is_none() {
                digest = Some(Digest::default());
            }
            let counted = Counted {
                inner: f,
                n: read.clone(),
                digest: digest.clone(),
            };
            match watch {
                Some(_) => Raw::File(counted),
                None => Raw::Stream(Box::new(counted)),
            }
        }
    };
    let head = match &mut raw {
        Raw::File(f) => read_head(f),
        Raw::Stream(r) => read_head(r),
    }
    .map_err(|e| text!("cannot read: {e}", "无法读取：{e}"))?;
    let meter = Arc::new(ReadMeter {
        read,
        digest,
        ..ReadMeter::default()
    });
    let raw: Box<dyn Read> = match raw {
        Raw::File(mut f) if archive::is_zip(&head) => {
            f.seek(io::SeekFrom::Start(0))
                .map_err(|e| text!("cannot read: {e}", "无法读取：{e}"))?;
            let how = if archive::is_torch_save(&head) && archive::is_torch_checkpoint(&mut f) {
                How::Skip(Some(torch_save()))
            } else {
                How::Zip(Box::new(f))
            };
            return Ok(Opened {
                kind: SourceKind::Binary,
                name: file_name(path).to_string(),
                stream: Box::new(io::empty()),
                how,
                watch,
                gzip: None,
                encoding: None,
                holes: None,
                meter,
            });
        }
        Raw::File(f) => Box::new(f),
        Raw::Stream(r) => r,
    };
    let at = match &input.source {
        Source::File(p) => At::File(p),
        Source::Stdin => At::Stdin,
    };
    let o = open_stream(path, raw, head, at, total)?;
    Ok(Opened {
        kind: o.kind,
        name: o.name,
        stream: o.stream,
        how: o.how,
        watch,
        gzip: o.gzip,
        encoding: o.encoding,
        holes: o.holes,
        meter,
    })
}

/// What a PyTorch checkpoint (a zip, but not an archive of logs) is said to be.
fn torch_save() -> Text {
    text!(
        "binary file (a PyTorch checkpoint: torch.save's zip): not scanned",
        "二进制文件（PyTorch checkpoint，即 torch.save 写出的 zip）：不扫描"
    )
}

/// An input's bytes as opened: a regular file (random access) or a stream.
enum Raw {
    File(Counted<std::fs::File>),
    Stream(Box<dyn Read>),
}

/// Where an input's bytes come from, for what only a file on disk allows (reading a core in
/// place) and for the wording of what cannot be read.
#[derive(Clone, Copy)]
pub enum At<'p> {
    File(&'p Path),
    Stdin,
    /// A member of an archive, read through its cap, and the bytes that archive holds in
    /// memory (`archive::Member::held`).
    Member(&'p GzipState, u64),
}

/// Open one member of an archive (`display` is its report path, `archive.zip!/logs/a.log`)
/// from its stream, as a file of that name would be opened: decompressed by magic, detected,
/// and a member that is itself an archive is said to be one (`How::Tar`, `How::Zip`). A
/// zip member of a zip has no random access: it is held in memory up to
/// `limits::ZIP_SPOOL_BYTES`.
/// `cap`: the member's own cap (`archive::Member::cap`), whose warning the caller gives: a
/// member it stopped before its first byte is not said to be empty.
pub(crate) fn open_member<'a>(
    display: &str,
    raw: Box<dyn Read + 'a>,
    cap: &GzipState,
    held: u64,
    meter: Arc<ReadMeter>,
    total: &Inflated,
) -> Result<Opened<'a>, Text> {
    let (head, raw) = head_and_rest(raw).map_err(|e| text!("cannot read: {e}", "无法读取：{e}"))?;
    let o = open_stream(display, raw, head, At::Member(cap, held), total)?;
    Ok(Opened {
        kind: o.kind,
        name: o.name,
        stream: o.stream,
        how: o.how,
        watch: None,
        gzip: o.gzip,
        encoding: o.encoding,
        holes: o.holes,
        meter,
    })
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// An input's stream once decompressed, decoded and detected: `Opened` without what only
/// the opening of a file knows.
struct Stream<'a> {
    kind: SourceKind,
    name: String,
    stream: Box<dyn Read + 'a>,
    how: How<'a>,
    gzip: Option<Arc<GzipState>>,
    encoding: Option<Decoded>,
    holes: Option<Arc<AtomicU64>>,
}

/// Decompress (by magic), sniff an archive, decode text that is not UTF-8, detect the kind
/// of what is left.
fn open_stream<'a>(
    path: &str,
    raw: Box<dyn Read + 'a>,
    head: Vec<u8>,
    at: At<'_>,
    total: &Inflated,
) -> Result<Stream<'a>, Text> {
    let file_name = file_name(path);
    let container = sniff(&head);
    let mut gzip = None;
    let (stream, head, name): (Box<dyn Read + 'a>, Vec<u8>, &str) =
        if let Some(z) = container.compression() {
            // Every compressed input (gzip, zstd, xz, lz4, bzip2) is decompressed under the
            // same caps of `limits`, counted on the compressed bytes read.
            let compressed = Arc::new(AtomicU64::new(0));
            let counted = Counted {
                inner: io::Cursor::new(head).chain(raw),
                n: compressed.clone(),
                digest: None,
            };
            let dec = decoder(container, counted)
                .map_err(|e| text!("{z} data cannot be read: {e}", "无法读取 {z} 数据：{e}"))?;
            let unit = if matches!(at, At::Member(..)) {
                "member"
            } else {
                "input"
            };
            let capped = GzipCap::new(dec, compressed, unit, total);
            gzip = Some(capped.state.clone());
            // A stream cut short (a truncated .gz, an archive cut mid-way) keeps what it gave:
            // it is analysed, and the read error comes after it, said by the reader.
            let (inner, dec) = head_and_rest(Box::new(capped)).map_err(|e| {
                text!(
                    "{z} data is corrupt or truncated before any text: {e}",
                    "{z} 数据还没解出任何文本就已损坏或被截断：{e}"
                )
            })?;
            (dec, inner, bare_name(file_name, container))
        } else {
            (raw, head, file_name)
        };
    let binary = |stream, how, gzip| Stream {
        kind: SourceKind::Binary,
        name: name.to_string(),
        stream,
        how,
        gzip,
        encoding: None,
        holes: None,
    };
    let whole = |head: &[u8], rest| -> Box<dyn Read + 'a> {
        Box::new(io::Cursor::new(head.to_vec()).chain(rest))
    };
    if archive::is_tar(&head) {
        // The members are capped one by one; the stream keeps the total and ratio caps.
        if let Some(g) = &gzip {
            g.limit.store(u64::MAX, Ordering::Relaxed);
        }
        return Ok(binary(whole(&head, stream), How::Tar, gzip));
    }
    if archive::is_zip(&head) {
        // A checkpoint too big to hold is still said to be one.
        let torch = archive::is_torch_save(&head);
        let held = match at {
            At::Member(_, held) => held,
            _ => 0,
        };
        let how = match archive::spool(whole(&head, stream), held) {
            Ok(mut z) => {
                if torch && archive::is_torch_checkpoint(&mut z) {
                    How::Skip(Some(torch_save()))
                } else {
                    How::Zip(Box::new(z))
                }
            }
            Err(_) if torch => How::Skip(Some(torch_save())),
            Err(why) => How::Skip(Some(why)),
        };
        return Ok(binary(Box::new(io::empty()), how, gzip));
    }
    // A head that looks binary for a hole in it (a run of NULs) but is text without its NULs
    // is read without them (`holes`), from the text after the hole.
    let mut holes = None;
    let (stream, head) = if holes::has_hole(&head)
        && !detect::is_elf(&head)
        && detect::detect(name, &head) == SourceKind::Binary
    {
        let dropped = Arc::new(AtomicU64::new(0));
        let text = Box::new(holes::DropNuls::new(whole(&head, stream), &dropped));
        let (after, rest) =
            head_and_rest(text).map_err(|e| text!("cannot read: {e}", "无法读取：{e}"))?;
        if after.is_empty() {
            let why = holes::only_nuls(dropped.load(Ordering::Relaxed));
            return Ok(binary(Box::new(io::empty()), How::Skip(Some(why)), gzip));
        }
        if detect::looks_binary(&after) || memchr::memchr(b'\n', &after).is_none() {
            // Binary after all: said as binary, from the head as it was.
            let (kind, how) = classify(at, name, &head);
            return Ok(Stream {
                kind,
                how,
                ..binary(Box::new(io::empty()), How::Skip(None), gzip)
            });
        }
        holes = Some(dropped);
        (whole(&after, rest), after)
    } else {
        (stream, head)
    };
    // Text in UTF-16 or a legacy CJK encoding is read as the UTF-8 it decodes to; a UTF-8 BOM
    // is dropped.
    let (from, utf8_bom) = encoding::sniff(&head);
    let encoding = from.map(Decoded::new);
    let (stream, head) = match &encoding {
        Some(d) => {
            let text = Box::new(Transcode::reporting(whole(&head, stream), d));
            let (head, rest) =
                head_and_rest(text).map_err(|e| text!("cannot read: {e}", "无法读取：{e}"))?;
            (whole(&head, rest), head)
        }
        None if utf8_bom => (whole(&head[3..], stream), head[3..].to_vec()),
        None => (whole(&head, stream), head),
    };
    let (kind, mut how) = classify(at, name, &head);
    // Nothing read because a decompression cap stopped the read before the first byte (the
    // total over all inputs, spent by those before): that cap's warning says so, not "empty".
    let capped = |g: Option<&GzipState>| g.is_some_and(|g| g.hit().is_some());
    let member_cap = match at {
        At::Member(c, _) => Some(c),
        _ => None,
    };
    if head.is_empty() && (capped(gzip.as_deref()) || capped(member_cap)) {
        how = How::Skip(None);
    }
    Ok(Stream {
        kind,
        name: name.to_string(),
        stream,
        how,
        gzip,
        encoding,
        holes,
    })
}

/// A compressed file's name without its compression's extension (`a.log.gz` → `a.log`,
/// `job.tgz` → `job.tar`).
fn bare_name(file_name: &str, container: Container) -> &str {
    let exts: &[&str] = match container {
        Container::Gzip => &[".gz", ".tgz"],
        Container::Zstd => &[".zst", ".tzst"],
        Container::Xz => &[".xz", ".txz"],
        Container::Lz4 => &[".lz4"],
        Container::Bzip2 => &[".bz2", ".tbz2", ".tbz"],
        Container::Elf | Container::Other => &[],
    };
    exts.iter()
        .find_map(|ext| file_name.strip_suffix(ext))
        .unwrap_or(file_name)
}

/// The kind of the (decompressed) head and how that kind is read.
fn classify<'a>(at: At<'_>, name: &str, head: &[u8]) -> (SourceKind, How<'a>) {
    if detect::is_zstd(head) || detect::is_xz(head) {
        return (
            SourceKind::Binary,
            How::Skip(Some(text!(
                "zstd/xz-compressed file: decompress it first (e.g. `zstd -d` / `xz -d`); not read",
                "zstd/xz 压缩文件：请先解压（如 `zstd -d` / `xz -d`）；未读取"
            ))),
        );
    }
    let kind = detect::detect(name, head);
    if head.is_empty() {
        let why = match at {
            At::Stdin => text!("stdin was empty", "标准输入为空"),
            At::File(_) => text!("empty file", "空文件"),
            At::Member(..) => text!("empty member", "空成员"),
        };
        return (kind, How::Skip(Some(why)));
    }
    let how = match kind.read() {
        Reading::Core => match at {
            At::File(p) => How::Core(p.to_path_buf()),
            At::Stdin => How::Skip(Some(text!(
                "an ELF core on stdin is not read: save it to a file and pass its path",
                "不读取从标准输入传入的 ELF core：请先存成文件，再传入它的路径"
            ))),
            // The core reader needs random access (or a file to decompress again from).
            At::Member(..) => How::Skip(Some(text!(
                "an ELF core inside an archive is not read (the core reader needs the file itself): extract it and pass its path",
                "不读取归档里的 ELF core（读取 core 需要文件本身）：请先解压出来，再传入它的路径"
            ))),
        },
        Reading::FlightRecorder => How::FlightRecorder,
        Reading::NotRead => {
            let k = kind.as_str();
            How::Skip(Some(text!("{k} file: not scanned", "二进制文件：不扫描")))
        }
        Reading::Samples => How::Samples,
        // What a capture recorded about itself, trainwreck's own saved reports and people's
        // notes: listed in the inputs, never evidence.
        Reading::Listed => How::Skip(None),
        Reading::Lines(parser) => How::Lines(parser.map(|p| p(name))),
    };
    (kind, how)
}

/// The kind of a plain file whose byte ranges can be read on several threads at once (not
/// compressed, UTF-8 without a BOM, not binary, no fact parser that needs its lines in order),
/// and the one handle all its ranges are read from; `None` otherwise, or when the file at the path is no longer
/// the one listed (the whole-file path then reads and reports it).
pub(crate) fn splittable(input: &Input) -> Option<(SourceKind, std::fs::File)> {
    let Source::File(p) = &input.source else {
        return None;
    };
    let file = std::fs::File::open(p).ok()?;
    if let Some(l) = input.id
        && !l.same_file(&FileId::of(&file.metadata().ok()?))
    {
        return None;
    }
    let head = read_head(&mut Positional {
        file: &file,
        pos: 0,
    })
    .ok()?;
    if head.is_empty()
        || sniff(&head).compression().is_some()
        || archive::is_tar(&head)
        || archive::is_zip(&head)
        || encoding::sniff(&head) != (None, false)
    {
        return None;
    }
    let path = input.display.as_str();
    let name = path.rsplit('/').next().unwrap_or(path);
    let kind = detect::detect(name, &head);
    match kind.read() {
        Reading::Lines(None) => Some((kind, file)),
        _ => None,
    }
}

/// Whether a file of this name is probably read line by line by a fact parser (dmesg,
/// snapshots), from its name alone: for ordering the work by cost, never for reading it.
pub(crate) fn parsed_by_name(display: &str) -> bool {
    let name = display.rsplit('/').next().unwrap_or(display);
    fact_parser(detect::detect(name, b""), name).is_some()
}

/// The head of `r` and the rest of it. A read error after some bytes comes after them, once
/// (`FailOnce`), for the reader of the rest to say; one before any byte is the `Err`.
fn head_and_rest<'a>(
    mut r: Box<dyn Read + 'a>,
) -> Result<(Vec<u8>, Box<dyn Read + 'a>), io::Error> {
    let (head, err) = read_head_until_error(&mut r);
    match err {
        Some(e) if head.is_empty() => Err(e),
        Some(e) => Ok((head, Box::new(FailOnce(Some(e))))),
        None => Ok((head, r)),
    }
}

/// As `read_head`, keeping what was read before an error, and the error.
fn read_head_until_error(r: &mut dyn Read) -> (Vec<u8>, Option<io::Error>) {
    let mut head = vec![0u8; detect::SNIFF_BYTES];
    let mut n = 0;
    let mut err = None;
    while n < head.len() {
        match r.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                err = Some(e);
                break;
            }
        }
    }
    head.truncate(n);
    (head, err)
}

/// A stream that has failed: its error once, then the end.
struct FailOnce(Option<io::Error>);

impl Read for FailOnce {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        match self.0.take() {
            Some(e) => Err(e),
            None => Ok(0),
        }
    }
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
            if let Some(w) = watch.and_then(|w| w.check_range()).map(|t| t.en)
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
