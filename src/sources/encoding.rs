//! Text encodings other than UTF-8: what a head of text is written in, a reader that turns a
//! UTF-16 or GB18030 stream into UTF-8 as it streams, and the decoding of one line for the
//! report. Windows writes both: PowerShell 5's `>` writes UTF-16LE with a BOM (every ASCII
//! byte followed by a NUL, so nothing would match), and a console on code page 936 writes
//! GBK, which GB18030 contains. Lines keep their numbers (only `\n` ends a line in every
//! encoding read here). It must not guess from too little: a head is called UTF-16 or
//! GB18030 only when it decodes as that without one error, and anything else is left as it
//! is (the scan counts its lines that are not UTF-8, `NotUtf8`).

use encoding_rs::{Decoder, Encoding, GB18030, UTF_16BE, UTF_16LE};
use std::borrow::Cow;
use std::io::{self, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

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
}

impl TextEncoding {
    fn encoding(self) -> &'static Encoding {
        match self {
            TextEncoding::Utf16Le => UTF_16LE,
            TextEncoding::Utf16Be => UTF_16BE,
            TextEncoding::Gb18030 => GB18030,
        }
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
    (gb18030(head).then_some(TextEncoding::Gb18030), false)
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

/// GBK/GB18030: a head that is not UTF-8 (a sequence cut by the head's end aside), holds no
/// NUL or other control byte a text has no use for, and reads as GB18030 (`reads_as_gb`) up
/// to its last line end (a character cut by the head's end aside).
fn gb18030(head: &[u8]) -> bool {
    match std::str::from_utf8(head) {
        // `error_len` is `None` for a sequence the end cut, not an invalid one.
        Ok(_) => return false,
        Err(e) if e.error_len().is_none() => return false,
        Err(_) => {}
    }
    if head.iter().any(|&b| crate::sources::detect::is_control(b)) {
        return false;
    }
    let upto = memchr::memrchr(b'\n', head).map_or(head.len(), |i| i + 1);
    reads_as_gb(&head[..upto]).is_some()
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
}

impl Decoded {
    /// The warning to give once the stream is read, when something could not be decoded.
    pub fn warning(&self) -> Option<crate::model::Text> {
        if !self.replaced.load(Ordering::Relaxed) {
            return None;
        }
        let e = match self.from {
            TextEncoding::Utf16Le => "UTF-16LE",
            TextEncoding::Utf16Be => "UTF-16BE",
            TextEncoding::Gb18030 => "GB18030",
        };
        Some(crate::model::text!(
            "read as {e}, but some of its bytes are not {e}: they show as U+FFFD in evidence and match no rule",
            "按 {e} 读取，但其中有些字节不是 {e}：它们在证据中显示为 U+FFFD，不匹配任何规则"
        ))
    }
}

/// A stream decoded from `from` to UTF-8 as it is read (a BOM dropped); what cannot be
/// decoded becomes U+FFFD, and `Decoded::replaced` says whether anything was.
pub struct Transcode<R> {
    inner: R,
    decoder: Decoder,
    raw: Vec<u8>,
    raw_at: (usize, usize),
    /// Decoded text not yet handed out.
    out: Vec<u8>,
    out_at: (usize, usize),
    eof: bool,
    replaced: Arc<AtomicBool>,
}

impl<R: Read> Transcode<R> {
    pub fn new(inner: R, from: TextEncoding) -> Self {
        Self::reporting(
            inner,
            &Decoded {
                from,
                replaced: Arc::default(),
            },
        )
    }

    /// As `new`, setting `to.replaced` when something cannot be decoded.
    pub fn reporting(inner: R, to: &Decoded) -> Self {
        let from = to.from;
        Transcode {
            inner,
            decoder: from.encoding().new_decoder_with_bom_removal(),
            raw: vec![0; 64 * 1024],
            raw_at: (0, 0),
            // Room for one whole character at least, whatever the raw buffer holds.
            out: vec![0; 64 * 1024 * 3 / 2 + 8],
            out_at: (0, 0),
            eof: false,
            replaced: to.replaced.clone(),
        }
    }
}

impl<R: Read> Read for Transcode<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.out_at.0 == self.out_at.1 {
            if self.eof && self.raw_at.0 == self.raw_at.1 {
                return Ok(0);
            }
            if self.raw_at.0 == self.raw_at.1 {
                let k = loop {
                    match self.inner.read(&mut self.raw) {
                        Ok(k) => break k,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(e),
                    }
                };
                self.raw_at = (0, k);
                self.eof = k == 0;
            }
            let src = &self.raw[self.raw_at.0..self.raw_at.1];
            let (_, read, written, errors) =
                self.decoder.decode_to_utf8(src, &mut self.out, self.eof);
            self.raw_at.0 += read;
            if errors {
                self.replaced.store(true, Ordering::Relaxed);
            }
            self.out_at = (0, written);
            if self.eof && written == 0 {
                return Ok(0);
            }
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
pub fn iconv_command(path: &str) -> String {
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

    #[test]
    fn bytes_that_do_not_decode_are_said() {
        let d = Decoded {
            from: TextEncoding::Gb18030,
            replaced: Arc::default(),
        };
        let mut s = String::new();
        Transcode::reporting(&gbk("显存不足\n")[..], &d)
            .read_to_string(&mut s)
            .unwrap();
        assert!(d.warning().is_none());
        Transcode::reporting(&b"ok \xFF\n"[..], &d)
            .read_to_string(&mut s)
            .unwrap();
        assert!(s.ends_with("ok \u{FFFD}\n"), "{s:?}");
        assert!(d.warning().unwrap().en.contains("not GB18030"));
    }
}
