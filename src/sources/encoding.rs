//! Text encodings other than UTF-8: what a head of text is written in, a reader that turns a
//! UTF-16 or legacy CJK stream into UTF-8 as it streams, and the decoding of one line for the
//! report. Windows writes them: PowerShell 5's `>` writes UTF-16LE with a BOM (every ASCII
//! byte followed by a NUL, so nothing would match), and a console on code page 936 writes
//! GBK, which GB18030 contains (949: EUC-KR, 932: Shift_JIS, 950: Big5; EUC-JP from older
//! Unix locales). Which of the CJK encodings a head is in is chardetng's guess (their byte
//! ranges overlap: EUC-KR decodes as GB18030 without error, as mojibake). Lines keep their
//! numbers (only `\n` ends a line in every encoding read here). It must not guess from too
//! little: a head is called one of these only when it decodes as that without one error, and
//! anything else is left as it is (the scan counts its lines that are not UTF-8, `NotUtf8`).

use encoding_rs::{
    BIG5, Decoder, EUC_JP, EUC_KR, Encoding, GB18030, SHIFT_JIS, UTF_16BE, UTF_16LE,
};
use std::borrow::Cow;
use std::io::{self, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What an input's text is written in, when it is not UTF-8 (a UTF-8 BOM is dropped and the
/// text read as UTF-8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum TextEncoding {
    #[serde(rename = "utf-16le")]
    Utf16Le,
    #[serde(rename = "utf-16be")]
    Utf16Be,
    #[serde(rename = "gb18030")]
    Gb18030,
    #[serde(rename = "big5")]
    Big5,
    #[serde(rename = "euc-kr")]
    EucKr,
    #[serde(rename = "euc-jp")]
    EucJp,
    #[serde(rename = "shift_jis")]
    ShiftJis,
}

impl TextEncoding {
    fn encoding(self) -> &'static Encoding {
        match self {
            TextEncoding::Utf16Le => UTF_16LE,
            TextEncoding::Utf16Be => UTF_16BE,
            TextEncoding::Gb18030 => GB18030,
            TextEncoding::Big5 => BIG5,
            TextEncoding::EucKr => EUC_KR,
            TextEncoding::EucJp => EUC_JP,
            TextEncoding::ShiftJis => SHIFT_JIS,
        }
    }

    /// Its name in warnings (and for `iconv -f`).
    pub fn name(self) -> &'static str {
        match self {
            TextEncoding::Utf16Le => "UTF-16LE",
            TextEncoding::Utf16Be => "UTF-16BE",
            TextEncoding::Gb18030 => "GB18030",
            TextEncoding::Big5 => "BIG5",
            TextEncoding::EucKr => "EUC-KR",
            TextEncoding::EucJp => "EUC-JP",
            TextEncoding::ShiftJis => "SHIFT_JIS",
        }
    }

    fn is_utf16(self) -> bool {
        matches!(self, TextEncoding::Utf16Le | TextEncoding::Utf16Be)
    }
}

/// What the head of an input is written in: `None` for UTF-8 (or ASCII, or what is neither
/// text nor one of the encodings read here), else the encoding to decode the stream from.
/// `utf8_bom`: whether the head starts with a UTF-8 BOM, to be dropped.
pub fn sniff(head: &[u8]) -> (Option<TextEncoding>, bool) {
    if head.starts_with(b"\xEF\xBB\xBF") {
        return (None, true);
    }
    if head.starts_with(b"\xFF\xFE") {
        return (Some(TextEncoding::Utf16Le), false);
    }
    if head.starts_with(b"\xFE\xFF") {
        return (Some(TextEncoding::Utf16Be), false);
    }
    if let Some(e) = utf16_without_bom(head) {
        return (Some(e), false);
    }
    (legacy_cjk(head), false)
}

/// UTF-16 without a BOM, from its NULs: text that is mostly ASCII has a NUL as every other
/// byte, on the odd bytes for little-endian, the even ones for big-endian; the other byte of
/// such a pair is never NUL. At least 4 in 5 pairs of the head (of 16 or more) must fit one
/// order and at most 1 in 10 the other, and the head must decode without error.
fn utf16_without_bom(head: &[u8]) -> Option<TextEncoding> {
    let pairs = &head[..head.len() & !1];
    let n = pairs.len() / 2;
    if n < 16 {
        return None;
    }
    let (mut le, mut be) = (0, 0);
    for p in pairs.chunks_exact(2) {
        match (p[0], p[1]) {
            (a, 0) if a != 0 => le += 1,
            (0, b) if b != 0 => be += 1,
            _ => {}
        }
    }
    // Most characters of a log are ASCII even when it holds some CJK (and a CJK character
    // can have a NUL byte of its own: U+5F00 is `00 5F` in little-endian).
    let e = if le * 10 >= n * 8 && be * 10 <= n {
        TextEncoding::Utf16Le
    } else if be * 10 >= n * 8 && le * 10 <= n {
        TextEncoding::Utf16Be
    } else {
        return None;
    };
    clean_decode(e.encoding(), pairs).then_some(e)
}

/// A legacy CJK encoding: a head that is not UTF-8 (a sequence cut by the head's end aside)
/// and holds no NUL or other control byte a text has no use for, up to its last line end (a
/// character cut by the head's end aside), is in the CJK encoding chardetng guesses when it
/// decodes as that without one error; a guess of no CJK encoding (too little text to tell, or
/// a single-byte one such as windows-1252) leaves GBK/GB18030 when the head reads as that
/// (`reads_as_gb`, as a console on code page 936 writes), else nothing.
fn legacy_cjk(head: &[u8]) -> Option<TextEncoding> {
    match std::str::from_utf8(head) {
        // `error_len` is `None` for a sequence the end cut, not an invalid one.
        Ok(_) => return None,
        Err(e) if e.error_len().is_none() => return None,
        Err(_) => {}
    }
    if head.iter().any(|&b| crate::sources::detect::is_control(b)) {
        return None;
    }
    let upto = memchr::memrchr(b'\n', head).map_or(head.len(), |i| i + 1);
    let text = &head[..upto];
    let mut detector = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Deny);
    detector.feed(text, true);
    let guess = detector.guess(None, chardetng::Utf8Detection::Deny);
    let cjk = [
        TextEncoding::Big5,
        TextEncoding::EucKr,
        TextEncoding::EucJp,
        TextEncoding::ShiftJis,
    ]
    .into_iter()
    .find(|e| e.encoding() == guess);
    match cjk {
        Some(e) => clean_decode(e.encoding(), text).then_some(e),
        None => reads_as_gb(text).map(|_| TextEncoding::Gb18030),
    }
}

/// Bytes that are not UTF-8, as the GB18030 text they are, when they are: at least 4 in 5 of
/// their two-byte characters lie in GB2312's rows (lead and trail bytes 0xA1–0xFE, leads up
/// to 0xF7), where nearly all Chinese text written in GBK lies, and they decode without
/// error. UTF-8 read as GBK puts continuation bytes (0x80–0xA0) in lead position, so it fails
/// the first test even where it passes the second.
fn reads_as_gb(bytes: &[u8]) -> Option<Cow<'_, str>> {
    let (mut wide, mut common, mut i) = (0usize, 0usize, 0);
    while i < bytes.len() {
        let b = bytes[i];
        if b < 0x80 {
            i += 1;
            continue;
        }
        let t = bytes.get(i + 1).copied().unwrap_or(0);
        wide += 1;
        if (0xA1..=0xF7).contains(&b) && (0xA1..=0xFE).contains(&t) {
            common += 1;
        }
        // A four-byte GB18030 sequence has a digit second; the decode below checks the rest.
        i += if (0x30..=0x39).contains(&t) { 4 } else { 2 };
    }
    if wide == 0 || common * 5 < wide * 4 {
        return None;
    }
    GB18030.decode_without_bom_handling_and_without_replacement(bytes)
}

fn clean_decode(e: &'static Encoding, bytes: &[u8]) -> bool {
    e.decode_without_bom_handling_and_without_replacement(bytes)
        .is_some()
}

/// What an input was decoded from, and whether anything in it could not be decoded.
#[derive(Debug, Clone)]
pub struct Decoded {
    pub from: TextEncoding,
    /// Set once the decoder met bytes that are not `from` (shown as U+FFFD).
    pub replaced: Arc<AtomicBool>,
    /// Where the head lied: lines that are UTF-8, read as UTF-8 (a CJK encoding: each such line;
    /// UTF-16: every line from the first, when UTF-8 text was appended) and the first of them.
    pub utf8: Arc<(AtomicU64, AtomicU64)>,
}

impl Decoded {
    pub fn new(from: TextEncoding) -> Self {
        Decoded {
            from,
            replaced: Arc::default(),
            utf8: Arc::default(),
        }
    }

    /// The warnings to give once the stream is read: lines found in UTF-8 although the head
    /// is in another encoding, and bytes that could not be decoded.
    pub fn warnings(&self) -> Vec<crate::model::Text> {
        let mut out = Vec::new();
        let e = self.from.name();
        let (n, first) = (
            self.utf8.0.load(Ordering::Relaxed),
            self.utf8.1.load(Ordering::Relaxed),
        );
        if n > 0 && !self.from.is_utf16() {
            out.push(crate::model::text!(
                "its head is {e}, but {n} of its lines are UTF-8 (the first: line {first}): each line was read in the encoding it is in",
                "文件开头是 {e}，但其中有 {n} 行是 UTF-8（第一行是第 {first} 行）：每一行都按它实际的编码读取"
            ));
        } else if n > 0 {
            out.push(crate::model::text!(
                "its head is {e}, but from line {first} on it is UTF-8 (text appended by another program): read as UTF-8 from there",
                "文件开头是 {e}，但从第 {first} 行起是 UTF-8（由另一个程序追加的文本）：从那里起按 UTF-8 读取"
            ));
        }
        if self.replaced.load(Ordering::Relaxed) {
            out.push(crate::model::text!(
                "read as {e}, but some of its bytes are not {e}: they show as U+FFFD in evidence and match no rule",
                "按 {e} 读取，但其中有些字节不是 {e}：它们在证据中显示为 U+FFFD，不匹配任何规则"
            ));
        }
        out
    }
}

/// How a `Transcode` reads what comes next.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// UTF-16, through the streaming decoder, watching for appended UTF-8.
    Utf16,
    /// A legacy CJK encoding line by line: a line that is UTF-8 stays as it is.
    Lines,
    /// UTF-8 from here on (appended to a UTF-16 head).
    Utf8,
}

/// A stream decoded from `from` to UTF-8 as it is read (a BOM dropped); what cannot be
/// decoded becomes U+FFFD, and `Decoded::replaced` says whether anything was. Where the head
/// lied, UTF-8 is read as UTF-8: a legacy CJK stream's UTF-8 lines, and the UTF-8 text appended
/// after a UTF-16 stream (`Decoded::utf8`).
pub struct Transcode<R> {
    inner: R,
    decoder: Decoder,
    mode: Mode,
    raw: Vec<u8>,
    raw_at: (usize, usize),
    /// Decoded text not yet handed out.
    out: Vec<u8>,
    out_at: (usize, usize),
    eof: bool,
    /// Lines handed out so far (for the line numbers of `utf8`).
    lines: u64,
    replaced: Arc<AtomicBool>,
    utf8: Arc<(AtomicU64, AtomicU64)>,
}

/// Raw bytes read at a time.
const RAW: usize = 64 * 1024;

/// UTF-8 text after a UTF-16 one is looked for over this many bytes after a UTF-16 line end.
const SWITCH_WINDOW: usize = 64;

impl<R: Read> Transcode<R> {
    /// A decoder with nobody to tell of a mid-stream switch (tests and the fuzz target).
    pub fn new(inner: R, from: TextEncoding) -> Self {
        Self::reporting(inner, &Decoded::new(from))
    }

    /// As `new`, setting `to.replaced` and `to.utf8`.
    pub fn reporting(inner: R, to: &Decoded) -> Self {
        let from = to.from;
        Transcode {
            inner,
            decoder: from.encoding().new_decoder_with_bom_removal(),
            mode: if from.is_utf16() {
                Mode::Utf16
            } else {
                Mode::Lines
            },
            raw: vec![0; RAW],
            raw_at: (0, 0),
            // Room for one whole character at least, whatever the raw buffer holds.
            out: vec![0; RAW * 3 / 2 + 8],
            out_at: (0, 0),
            eof: false,
            lines: 0,
            replaced: to.replaced.clone(),
            utf8: to.utf8.clone(),
        }
    }

    /// Read more raw bytes after those not yet decoded (moved to the front).
    fn fill(&mut self) -> io::Result<()> {
        let (a, b) = self.raw_at;
        self.raw.copy_within(a..b, 0);
        self.raw_at = (0, b - a);
        let k = loop {
            match self.inner.read(&mut self.raw[b - a..]) {
                Ok(k) => break k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        self.raw_at.1 += k;
        self.eof = k == 0;
        Ok(())
    }

    /// Note `n` lines read as UTF-8 from line `first` on.
    fn saw_utf8(&self, n: u64, first: u64) {
        if self.utf8.0.fetch_add(n, Ordering::Relaxed) == 0 {
            self.utf8.1.store(first, Ordering::Relaxed);
        }
    }

    /// Decode what the raw buffer holds into `out`: false when more raw bytes are needed first.
    fn decode(&mut self) -> bool {
        let (a, b) = self.raw_at;
        let src = &self.raw[a..b];
        match self.mode {
            Mode::Utf8 => {
                // UTF-8 after UTF-16 was judged from a window: what follows it is checked
                // here, each invalid sequence becoming U+FFFD, and a sequence cut by the end
                // of the buffer waits for the next read (the end of input replaces it).
                self.out.clear();
                let mut rest = src;
                loop {
                    match std::str::from_utf8(rest) {
                        Ok(t) => {
                            self.out.extend_from_slice(t.as_bytes());
                            rest = &[];
                            break;
                        }
                        Err(e) => {
                            let good = e.valid_up_to();
                            self.out.extend_from_slice(&rest[..good]);
                            match e.error_len() {
                                Some(n) => {
                                    self.out.extend_from_slice("\u{FFFD}".as_bytes());
                                    self.replaced.store(true, Ordering::Relaxed);
                                    rest = &rest[good + n..];
                                }
                                None if self.eof => {
                                    self.out.extend_from_slice("\u{FFFD}".as_bytes());
                                    self.replaced.store(true, Ordering::Relaxed);
                                    rest = &[];
                                    break;
                                }
                                None => {
                                    rest = &rest[good..];
                                    break;
                                }
                            }
                        }
                    }
                }
                self.raw_at.0 = b - rest.len();
                if self.out.is_empty() && !rest.is_empty() {
                    return false;
                }
            }
            Mode::Lines => {
                // Whole lines only (unless the buffer is full of one, or at the end).
                let upto = match memchr::memrchr(b'\n', src) {
                    Some(i) => i + 1,
                    None if self.eof || a == 0 && b == self.raw.len() => src.len(),
                    None => return false,
                };
                self.out.clear();
                let mut utf8 = (0u64, 0u64);
                let lines = src[..upto].split_inclusive(|&c| c == b'\n');
                for (lineno, line) in (self.lines + 1..).zip(lines) {
                    if line.is_ascii() {
                        self.out.extend_from_slice(line);
                    } else if std::str::from_utf8(line).is_ok() {
                        // CJK text in a legacy encoding is never valid UTF-8 in practice: this
                        // line is UTF-8.
                        if utf8.0 == 0 {
                            utf8.1 = lineno;
                        }
                        utf8.0 += 1;
                        self.out.extend_from_slice(line);
                    } else {
                        let (t, errors) = self.decoder.encoding().decode_without_bom_handling(line);
                        if errors {
                            self.replaced.store(true, Ordering::Relaxed);
                        }
                        self.out.extend_from_slice(t.as_bytes());
                    }
                }
                if utf8.0 > 0 {
                    self.saw_utf8(utf8.0, utf8.1);
                }
                self.raw_at.0 += upto;
            }
            Mode::Utf16 => {
                let le = self.decoder.encoding() == UTF_16LE;
                let (upto, switch) = match utf8_after_utf16(src, le, self.eof) {
                    Switch::At(q) => (q, true),
                    Switch::NeedMore(q) if q > 0 => (q, false),
                    Switch::NeedMore(_) => return false,
                    Switch::None => (src.len(), false),
                };
                if self.out.len() < RAW * 3 / 2 + 8 {
                    self.out.resize(RAW * 3 / 2 + 8, 0);
                }
                let (_, read, written, errors) =
                    self.decoder
                        .decode_to_utf8(&src[..upto], &mut self.out, self.eof && !switch);
                self.raw_at.0 += read;
                if errors {
                    self.replaced.store(true, Ordering::Relaxed);
                }
                self.out.truncate(written);
                if switch && read == upto {
                    self.mode = Mode::Utf8;
                    let at = self.lines + memchr::memchr_iter(b'\n', &self.out).count() as u64 + 1;
                    self.saw_utf8(1, at);
                }
            }
        }
        true
    }
}

/// Where UTF-8 text starts after UTF-16 text in `src`, if it does: right after a UTF-16 line
/// end, a window of `SWITCH_WINDOW` bytes (or up to the end) with no NUL, valid UTF-8 and
/// mostly ASCII (UTF-16 of ASCII has a NUL every other byte; of CJK, few ASCII bytes).
enum Switch {
    At(usize),
    /// A line end (starting here) too near the end of `src` to decide: decode up to it, then
    /// read more.
    NeedMore(usize),
    None,
}

fn utf8_after_utf16(src: &[u8], le: bool, eof: bool) -> Switch {
    let mut from = 0;
    while let Some(i) = memchr::memchr(b'\n', &src[from..]).map(|i| from + i) {
        from = i + 1;
        if le && i + 1 == src.len() && !eof {
            return Switch::NeedMore(i);
        }
        let (start, q) = if le {
            if src.get(i + 1) != Some(&0) {
                continue;
            }
            (i, i + 2)
        } else {
            if i == 0 || src[i - 1] != 0 {
                continue;
            }
            (i - 1, i + 1)
        };
        let w = &src[q.min(src.len())..(q + SWITCH_WINDOW).min(src.len())];
        if w.len() < SWITCH_WINDOW && !eof {
            return Switch::NeedMore(start);
        }
        if w.is_empty() || w.contains(&0) {
            continue;
        }
        let valid = match std::str::from_utf8(w) {
            Ok(_) => true,
            Err(e) => e.error_len().is_none() && e.valid_up_to() + 4 > w.len(),
        };
        let ascii = w.iter().filter(|b| b.is_ascii()).count();
        if valid && ascii * 4 >= w.len() * 3 {
            return Switch::At(q);
        }
    }
    Switch::None
}

impl<R: Read> Read for Transcode<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.out_at.0 == self.out_at.1 {
            if self.raw_at.0 == self.raw_at.1 {
                if self.eof {
                    return Ok(0);
                }
                self.fill()?;
                continue;
            }
            if !self.decode() {
                // More raw bytes are needed to decide (the end gives them all).
                self.fill()?;
                continue;
            }
            self.out_at = (0, self.out.len());
            self.lines += memchr::memchr_iter(b'\n', &self.out).count() as u64;
        }
        let (a, b) = self.out_at;
        let k = (b - a).min(buf.len());
        buf[..k].copy_from_slice(&self.out[a..a + k]);
        self.out_at.0 += k;
        Ok(k)
    }
}

/// One line's bytes as text for the report: UTF-8 as it is; a line that is not UTF-8 and
/// reads as GB18030 (`reads_as_gb`), as GB18030 (a GBK line in a log that is otherwise
/// UTF-8 or ASCII); anything else with U+FFFD for what is not UTF-8.
pub fn decode_line(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => reads_as_gb(bytes).unwrap_or_else(|| String::from_utf8_lossy(bytes)),
    }
}

/// The command that converts a GBK/GB18030 file to UTF-8, for the file at `path` when it is
/// one (not stdin, not an archive member), quoted for a POSIX shell.
pub(crate) fn iconv_command(path: &str) -> String {
    let file = if path.contains("!/") || path.starts_with('<') || path == "-" {
        "FILE".to_string()
    } else if path
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@%,".contains(&b))
    {
        path.to_string()
    } else {
        format!("'{}'", path.replace('\'', r"'\''"))
    };
    format!("iconv -f GB18030 -t UTF-8 {file} > {file}.utf8")
}

/// Lines of one input that are not UTF-8, for the warning that says so.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NotUtf8 {
    /// Lines that are not UTF-8.
    pub lines: u64,
    /// Of them, lines read as GB18030 (`decode_line`).
    pub gb18030: u64,
    /// The first such line.
    pub first: u64,
}

impl NotUtf8 {
    /// Count the lines of `chunk` (whose first line is `first`) that are not UTF-8. A chunk
    /// that is UTF-8 as a whole (nearly every chunk) costs one validation.
    pub fn count(&mut self, chunk: &[u8], first: u64) {
        if Encoding::utf8_valid_up_to(chunk) == chunk.len() {
            return;
        }
        for (lineno, line) in crate::sources::reader::lines(chunk, first) {
            if std::str::from_utf8(line).is_ok() {
                continue;
            }
            if self.lines == 0 || lineno < self.first {
                self.first = lineno;
            }
            self.lines += 1;
            self.gb18030 += u64::from(reads_as_gb(line).is_some());
        }
    }

    /// Add the counts of the next range of the same file (its lines shifted by `offset`).
    pub fn add(&mut self, other: NotUtf8, offset: u64) {
        if other.lines == 0 {
            return;
        }
        let first = other.first + offset;
        if self.lines == 0 || first < self.first {
            self.first = first;
        }
        self.lines += other.lines;
        self.gb18030 += other.gb18030;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OOM: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\r\n";

    fn utf16(text: &str, le: bool, bom: bool) -> Vec<u8> {
        let mut out = Vec::new();
        if bom {
            out.extend_from_slice(if le { b"\xFF\xFE" } else { b"\xFE\xFF" });
        }
        for u in text.encode_utf16() {
            out.extend_from_slice(&if le { u.to_le_bytes() } else { u.to_be_bytes() });
        }
        out
    }

    fn gbk(text: &str) -> Vec<u8> {
        GB18030.encode(text).0.into_owned()
    }

    fn transcode(bytes: &[u8], e: TextEncoding) -> String {
        let mut s = String::new();
        Transcode::new(bytes, e).read_to_string(&mut s).unwrap();
        s
    }

    #[test]
    fn utf16_is_known_with_or_without_its_bom() {
        let text = format!("开始训练 step 1\r\n{OOM}");
        for le in [true, false] {
            let want = if le {
                TextEncoding::Utf16Le
            } else {
                TextEncoding::Utf16Be
            };
            for bom in [true, false] {
                let bytes = utf16(&text, le, bom);
                assert_eq!(sniff(&bytes), (Some(want), false), "le={le} bom={bom}");
                assert_eq!(transcode(&bytes, want), text, "le={le} bom={bom}");
            }
        }
    }

    #[test]
    fn a_gbk_head_is_gb18030_and_utf8_or_binary_is_not() {
        let text = format!("训练开始，显存不足\n{OOM}");
        assert_eq!(sniff(&gbk(&text)), (Some(TextEncoding::Gb18030), false));
        assert_eq!(transcode(&gbk(&text), TextEncoding::Gb18030), text);
        assert_eq!(sniff(text.as_bytes()), (None, false));
        assert_eq!(sniff(OOM.as_bytes()), (None, false));
        // A UTF-8 head cut in the middle of a character is still UTF-8.
        let cut = &text.as_bytes()[..4];
        assert_eq!(sniff(cut), (None, false));
        // Bytes that are neither (a stray 0xFF, a NUL) are left to the binary check.
        assert_eq!(sniff(b"step 1 \xFF loss 2.0\n"), (None, false));
        assert_eq!(
            sniff(b"\x00\x01\x02\x03\x80\x81\x82\x83 binary"),
            (None, false)
        );
        // A Chinese UTF-8 head with one stray byte (a cut character) stays UTF-8: read as GBK
        // its continuation bytes would lead pairs outside GB2312's rows.
        let mut stray = "训练开始，加载数据集，共 3 个 epoch\n"
            .repeat(40)
            .into_bytes();
        stray.insert(100, 0xE8);
        assert_eq!(sniff(&stray), (None, false));
        let bom = [b"\xEF\xBB\xBF".as_slice(), OOM.as_bytes()].concat();
        assert_eq!(sniff(&bom), (None, true));
    }

    #[test]
    fn korean_japanese_and_traditional_chinese_heads_are_not_taken_for_gbk() {
        let text = format!(
            "{}{OOM}",
            [
                "학습을 시작합니다. 데이터셋을 불러오는 중입니다.\n",
                "学習を開始します。データセットを読み込んでいます。\n",
                "開始訓練，正在載入資料集，共三個週期。\n",
            ]
            .join("")
        );
        for (enc, want, line) in [
            (EUC_KR, TextEncoding::EucKr, 0),
            (EUC_JP, TextEncoding::EucJp, 1),
            (SHIFT_JIS, TextEncoding::ShiftJis, 1),
            (BIG5, TextEncoding::Big5, 2),
        ] {
            let one = format!("{}{OOM}", text.lines().nth(line).unwrap()).repeat(20);
            let bytes = enc.encode(&one).0.into_owned();
            assert!(
                GB18030
                    .decode_without_bom_handling_and_without_replacement(&bytes)
                    .is_some()
                    || want != TextEncoding::EucKr,
                "EUC-KR decodes as GB18030 without error: the byte ranges cannot tell them apart"
            );
            assert_eq!(sniff(&bytes), (Some(want), false), "{}", enc.name());
            assert_eq!(transcode(&bytes, want), one, "{}", enc.name());
        }
        // A GBK head is still GB18030 with the detector in front.
        let zh = gbk(&"[2024-05-14] 训练步骤 损失 显存不足\n".repeat(20));
        assert_eq!(sniff(&zh), (Some(TextEncoding::Gb18030), false));
        // Latin-1 is no CJK encoding: left as it is (its lines counted as not UTF-8).
        let latin = encoding_rs::WINDOWS_1252
            .encode(&"Données chargées à l'étape 3\n".repeat(20))
            .0
            .into_owned();
        assert_eq!(sniff(&latin), (None, false));
    }

    #[test]
    fn a_gbk_line_in_a_utf8_log_reads_as_gb18030_and_a_stray_byte_does_not() {
        let line = gbk("[rank0] 报错：CUDA out of memory");
        assert_eq!(decode_line(&line), "[rank0] 报错：CUDA out of memory");
        assert_eq!(decode_line("显存 ok".as_bytes()), "显存 ok");
        // UTF-8 Chinese with one stray byte stays UTF-8, with U+FFFD for the stray byte.
        let mixed = [("显存".as_bytes()), b"\xFF", b" OOM"].concat();
        assert_eq!(decode_line(&mixed), "显存\u{FFFD} OOM");
        assert_eq!(decode_line(b"loss \xFF"), "loss \u{FFFD}");
        // UTF-8 with a stray byte that GB18030 would decode without error (训 + 0x81 'A'):
        // its lead bytes are not GB2312's, so it stays UTF-8.
        let stray = [("训".as_bytes()), b"\x81A"].concat();
        assert!(
            GB18030
                .decode_without_bom_handling_and_without_replacement(&stray)
                .is_some()
        );
        assert_eq!(decode_line(&stray), "训\u{FFFD}A");
    }

    #[test]
    fn lines_not_utf8_are_counted_with_the_first_and_added_across_ranges() {
        let mut chunk = b"ok\n".to_vec();
        chunk.extend(gbk("显存不足\n"));
        chunk.extend(b"fine\nbad \xFF\n");
        let mut n = NotUtf8::default();
        n.count(&chunk, 10);
        assert_eq!(
            n,
            NotUtf8 {
                lines: 2,
                gb18030: 1,
                first: 11
            }
        );
        n.add(NotUtf8::default(), 100);
        n.add(
            NotUtf8 {
                lines: 1,
                gb18030: 0,
                first: 1,
            },
            4,
        );
        assert_eq!((n.lines, n.first), (3, 5));
        let mut clean = NotUtf8::default();
        clean.count("训练\nok\n".as_bytes(), 1);
        assert_eq!(clean, NotUtf8::default());
    }

    #[test]
    fn transcoding_with_tiny_reads_loses_nothing() {
        let text = format!("训练 {OOM}").repeat(50);
        let bytes = utf16(&text, true, true);
        let mut t = Transcode::new(&bytes[..], TextEncoding::Utf16Le);
        let mut out = Vec::new();
        let mut buf = [0u8; 3];
        loop {
            let k = t.read(&mut buf).unwrap();
            if k == 0 {
                break;
            }
            out.extend_from_slice(&buf[..k]);
        }
        assert_eq!(String::from_utf8(out).unwrap(), text);
        assert!(!t.replaced.load(Ordering::Relaxed));
    }

    /// Found by the `text_encoding` fuzz target: after the switch from UTF-16 to UTF-8 (judged
    /// on a window), bytes past the window that are not UTF-8 went out as they were.
    #[test]
    fn utf8_after_utf16_is_checked_past_the_window() {
        let mut bytes = utf16("step 1 loss 2.0\n", true, true);
        let ascii = "rank0: torch.OutOfMemoryError: CUDA out of memory (written as UTF-8)\n";
        bytes.extend_from_slice(ascii.as_bytes());
        bytes.extend_from_slice(b"bad \xFF\xFE byte and a cut \xE8\xAE");
        let d = Decoded::new(TextEncoding::Utf16Le);
        let mut s = String::new();
        Transcode::reporting(&bytes[..], &d)
            .read_to_string(&mut s)
            .expect("the output is UTF-8");
        assert!(s.starts_with("step 1 loss 2.0\n"), "{s:?}");
        assert!(s.contains(ascii), "{s:?}");
        assert!(
            s.ends_with("bad \u{FFFD}\u{FFFD} byte and a cut \u{FFFD}"),
            "{s:?}"
        );
        assert!(d.replaced.load(Ordering::Relaxed));
        // A character cut between two reads of the input is joined, not replaced.
        struct OneByte<'a>(&'a [u8]);
        impl Read for OneByte<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let Some((&b, rest)) = self.0.split_first() else {
                    return Ok(0);
                };
                buf[0] = b;
                self.0 = rest;
                Ok(1)
            }
        }
        let mut bytes = utf16("step 1\n", true, true);
        let tail = "rank0: 显存不足 while saving, written as UTF-8 by a second process\n";
        bytes.extend_from_slice(tail.as_bytes());
        let mut s = String::new();
        Transcode::new(OneByte(&bytes), TextEncoding::Utf16Le)
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, format!("step 1\n{tail}"));
    }

    #[test]
    fn bytes_that_do_not_decode_are_said() {
        let d = Decoded::new(TextEncoding::Gb18030);
        let mut s = String::new();
        Transcode::reporting(&gbk("显存不足\n")[..], &d)
            .read_to_string(&mut s)
            .unwrap();
        assert!(d.warnings().is_empty());
        Transcode::reporting(&b"ok \xFF\n"[..], &d)
            .read_to_string(&mut s)
            .unwrap();
        assert!(s.ends_with("ok \u{FFFD}\n"), "{s:?}");
        assert!(d.warnings()[0].en.contains("not GB18030"));
    }
}
