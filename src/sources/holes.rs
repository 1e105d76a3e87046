//! Holes in a log: runs of NUL bytes where text should be. `logrotate`'s `copytruncate`
//! truncates a log that its writer keeps open, so the writer's next line lands at its old
//! offset and everything before it reads as NULs; a crash leaves blocks of NULs where pages
//! were never written, anywhere in the file. A head with a hole looks binary, yet the text
//! around the hole is the run's log: it is read with its NUL bytes dropped, and the bytes
//! dropped are said. It must not make a binary file text: only a head that is text once its
//! NULs are gone, with a line end in it, is read this way (`open` decides, from the head after
//! the hole). Past the head, every text stream goes through `SkipHoles`, which drops each run
//! of `MIN_HOLE` NULs or more as it streams (no line is made of a hole, so the text after it is
//! scanned) and keeps where each was and how big, for one warning per input.

use crate::model::{Text, text};
use std::io::{self, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A run of NULs this long in a head is a hole, not a stray NUL (a worker's signal handler
/// writes one) nor a binary format's padding of a few bytes.
pub(crate) const MIN_HOLE: usize = 64;

/// Whether `head` holds a hole: a run of `MIN_HOLE` NULs or more.
pub(crate) fn has_hole(head: &[u8]) -> bool {
    memchr::memmem::find(head, &[0u8; MIN_HOLE]).is_some()
}

/// A stream with its NUL bytes dropped, counting them.
pub struct DropNuls<R> {
    inner: R,
    dropped: Arc<AtomicU64>,
}

impl<R: Read> DropNuls<R> {
    pub fn new(inner: R, dropped: &Arc<AtomicU64>) -> Self {
        DropNuls {
            inner,
            dropped: dropped.clone(),
        }
    }
}

impl<R: Read> Read for DropNuls<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let k = self.inner.read(buf)?;
            if k == 0 {
                return Ok(0);
            }
            let kept = compact(&mut buf[..k]);
            self.dropped.fetch_add((k - kept) as u64, Ordering::Relaxed);
            // A read that was all NULs (inside a hole) reads on: 0 would be the end.
            if kept > 0 {
                return Ok(kept);
            }
        }
    }
}

/// Move the bytes of `buf` that are not NUL to its front, in order; how many there are.
fn compact(buf: &mut [u8]) -> usize {
    let Some(first) = memchr::memchr(0, buf) else {
        return buf.len();
    };
    let mut to = first;
    let mut from = first;
    while from < buf.len() {
        // Skip the NULs here, then move the text up to the next NUL.
        while from < buf.len() && buf[from] == 0 {
            from += 1;
        }
        let end = memchr::memchr(0, &buf[from..]).map_or(buf.len(), |i| from + i);
        buf.copy_within(from..end, to);
        to += end - from;
        from = end;
    }
    to
}

/// The holes `SkipHoles` dropped from one input (its ranges' joined in order): the first
/// few where they were, and how many and how big in all.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Holes {
    /// (byte offset in the input, length) of the first `LISTED` holes.
    pub first: Vec<(u64, u64)>,
    /// For each of `first`: the offset in the text handed out (the input's bytes less the
    /// holes before it), where the reader of lines finds it (`locate`).
    pub out: Vec<u64>,
    /// For each of `first`: the line it lies in (1 + the line ends before it), once known.
    pub lines: Vec<Option<u64>>,
    pub count: u64,
    pub bytes: u64,
}

/// Holes named one by one in the warning; the rest are counted.
const LISTED: usize = 3;

impl Holes {
    fn add(&mut self, at: u64, len: u64, out: u64) {
        if self.first.len() < LISTED {
            self.first.push((at, len));
            self.out.push(out);
            self.lines.push(None);
        }
        self.count += 1;
        self.bytes += len;
    }

    /// The holes of the next range of the same file, after these; `lines`: the lines of the
    /// ranges before it (its line numbers count from its own start).
    pub fn append(&mut self, next: Holes, lines: u64) {
        for ((hole, out), line) in next.first.into_iter().zip(next.out).zip(next.lines) {
            if self.first.len() < LISTED {
                self.first.push(hole);
                self.out.push(out);
                self.lines.push(line.map(|l| l + lines));
            }
        }
        self.count += next.count;
        self.bytes += next.bytes;
    }

    /// Where the `i`th listed hole is: its byte, and its line when known.
    fn place(&self, i: usize) -> Text {
        let at = self.first[i].0;
        match self.lines.get(i).copied().flatten() {
            Some(l) => text!("at byte {at} (line {l})", "第 {at} 字节（第 {l} 行）处"),
            None => text!("at byte {at}", "第 {at} 字节处"),
        }
    }

    /// The input's warning: where each hole was and how big (`None` for none).
    pub fn warning(&self) -> Option<Text> {
        let &(_, len) = self.first.first()?;
        let (count, bytes) = (self.count, self.bytes);
        if count == 1 {
            let at = self.place(0);
            return Some(text!(
                "a hole of {len} NUL bytes {at} was skipped (as a crash or logrotate's copytruncate leaves in a log): the text after it was read",
                "跳过了{at} {len} 个 NUL 字节的空洞（崩溃或 logrotate 的 copytruncate 会在日志中留下）：其后的文本已读取";
                at = at
            ));
        }
        let listed: Vec<Text> = self
            .first
            .iter()
            .enumerate()
            .map(|(i, &(_, l))| {
                let at = self.place(i);
                text!("{l} {at}", "{at} {l} 个"; at = at)
            })
            .collect();
        let listed = Text::join(&listed, ", ", "，");
        let more = match count - self.first.len() as u64 {
            0 => Text::default(),
            n => text!(", and {n} more", "，另有 {n} 处"),
        };
        Some(text!(
            "{count} holes of NUL bytes ({bytes} bytes in all) were skipped (as a crash or logrotate's copytruncate leaves in a log): {listed}{more}; the text around them was read",
            "跳过了 {count} 处 NUL 字节空洞（共 {bytes} 字节，崩溃或 logrotate 的 copytruncate 会在日志中留下）：{listed}{more}；其前后的文本已读取";
            listed = listed,
            more = more
        ))
    }
}

/// Give the holes that lie in `chunk` their line (`lines`, one for each of `out`, the holes'
/// offsets in the text handed out): `chunk` is that text from offset `chunk_at` on, its first
/// line numbered `first`. A hole before it (inside an over-long line the reader skipped) lies
/// in the line before it.
pub fn locate(out: &[u64], lines: &mut Vec<Option<u64>>, chunk: &[u8], chunk_at: u64, first: u64) {
    lines.resize(out.len(), None);
    let end = chunk_at + chunk.len() as u64;
    for (out, line) in out.iter().zip(lines.iter_mut()) {
        if line.is_some() || *out >= end {
            continue;
        }
        *line = Some(match out.checked_sub(chunk_at) {
            Some(k) => first + memchr::memchr_iter(b'\n', &chunk[..k as usize]).count() as u64,
            None => first.saturating_sub(1).max(1),
        });
    }
}

/// A text stream with every run of `MIN_HOLE` NULs or more dropped as it streams, each one
/// kept in `holes` by its offset (`base` plus the bytes read before it) and length; shorter
/// runs pass through. No whole-file load: a hole is counted, never held.
pub struct SkipHoles<R> {
    inner: R,
    /// The input offset of the next byte read from `inner`.
    at: u64,
    /// The input offset it started at.
    base: u64,
    /// NULs of a run still open (not yet passed on nor dropped), and where it began.
    run: u64,
    run_at: u64,
    /// Bytes ready to hand out, from `pending[pos..]`, when a read held NULs.
    pending: Vec<u8>,
    pos: usize,
    eof: bool,
    pub holes: Holes,
}

impl<R: Read> SkipHoles<R> {
    pub fn new(inner: R, base: u64) -> Self {
        SkipHoles {
            inner,
            at: base,
            base,
            run: 0,
            run_at: 0,
            pending: Vec::new(),
            pos: 0,
            eof: false,
            holes: Holes::default(),
        }
    }

    /// NUL bytes dropped so far (read from the input, never handed out).
    pub fn dropped(&self) -> u64 {
        self.holes.bytes
    }

    /// The open run ends: a hole, or NULs to pass on.
    fn end_run(&mut self) {
        if self.run >= MIN_HOLE as u64 {
            // Bytes handed out before it: what it read before it, less the holes dropped.
            let out = self.run_at - self.base - self.holes.bytes;
            self.holes.add(self.run_at, self.run, out);
        } else {
            self.pending
                .extend(std::iter::repeat_n(0u8, self.run as usize));
        }
        self.run = 0;
    }

    /// Sort `buf` (just read, starting at input offset `self.at`) into `pending`.
    fn sort(&mut self, buf: &[u8]) {
        let mut i = 0;
        while i < buf.len() {
            if buf[i] == 0 {
                let n = buf[i..]
                    .iter()
                    .position(|&b| b != 0)
                    .unwrap_or(buf.len() - i);
                if self.run == 0 {
                    self.run_at = self.at + i as u64;
                }
                self.run += n as u64;
                i += n;
            } else {
                if self.run > 0 {
                    self.end_run();
                }
                let n = memchr::memchr(0, &buf[i..]).unwrap_or(buf.len() - i);
                self.pending.extend_from_slice(&buf[i..i + n]);
                i += n;
            }
        }
        self.at += buf.len() as u64;
    }
}

impl<R: Read> Read for SkipHoles<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.pos < self.pending.len() {
                let n = out.len().min(self.pending.len() - self.pos);
                out[..n].copy_from_slice(&self.pending[self.pos..self.pos + n]);
                self.pos += n;
                return Ok(n);
            }
            self.pending.clear();
            self.pos = 0;
            if self.eof || out.is_empty() {
                return Ok(0);
            }
            if self.run == 0 {
                // The common case, no NUL about: read straight into the caller's buffer.
                let n = self.inner.read(out)?;
                if n == 0 {
                    self.eof = true;
                    continue;
                }
                if memchr::memchr(0, &out[..n]).is_none() {
                    self.at += n as u64;
                    return Ok(n);
                }
                let got = out[..n].to_vec();
                self.sort(&got);
            } else {
                let mut buf = vec![0u8; out.len().clamp(4096, 64 << 10)];
                let n = self.inner.read(&mut buf)?;
                if n == 0 {
                    self.eof = true;
                    self.end_run();
                    continue;
                }
                self.sort(&buf[..n]);
            }
        }
    }
}

/// The warning for `n` NUL bytes dropped from an input read as text (`None` for none).
pub fn warning(n: u64) -> Option<Text> {
    (n > 0).then(|| {
        text!(
            "{n} NUL bytes skipped (a hole, as logrotate's copytruncate or a crash leaves in a log): the text around them was read",
            "跳过了 {n} 个 NUL 字节（日志中的空洞，logrotate 的 copytruncate 或崩溃会留下）：其前后的文本已读取"
        )
    })
}

/// The reason an input that holds nothing but NUL bytes is not read.
pub(crate) fn only_nuls(n: u64) -> Text {
    text!(
        "holds only NUL bytes ({n}: a hole, as logrotate's copytruncate or a crash leaves, with no text after it): nothing to read",
        "只有 NUL 字节（{n} 个：logrotate 的 copytruncate 或崩溃留下的空洞，其后没有文本）：没有可读的内容"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nuls_are_dropped_across_reads_and_counted() {
        let mut bytes = vec![0u8; 100_000];
        bytes.extend_from_slice(b"step 1\n\0\0step 2\n");
        bytes.extend(vec![0u8; 5000]);
        bytes.extend_from_slice(b"end\n");
        let n = Arc::new(AtomicU64::new(0));
        let mut out = String::new();
        DropNuls::new(&bytes[..], &n)
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(out, "step 1\nstep 2\nend\n");
        assert_eq!(n.load(Ordering::Relaxed), 105_002);
        assert!(has_hole(&bytes[..8192]));
        assert!(!has_hole(b"a stray \0 NUL\n"));
    }

    /// Holes anywhere, across reads of every size: dropped whole and said where; runs
    /// shorter than a hole, and NULs at the very end, are handled alike.
    #[test]
    fn holes_are_skipped_as_they_stream_and_said_where() {
        let mut bytes = b"line 1\nline 2\n".to_vec();
        let hole1 = bytes.len() as u64;
        bytes.extend(vec![0u8; 1 << 20]);
        bytes.extend_from_slice(b"RuntimeError: after\nshort\0\0\0run\n");
        let hole2 = bytes.len() as u64;
        bytes.extend(vec![0u8; 100]);
        bytes.extend_from_slice(b"end\n");
        let hole3 = bytes.len() as u64;
        bytes.extend(vec![0u8; 70]);
        for step in [1, 7, 63, 64, 4096, 1 << 16, 1 << 21] {
            struct Trickle<'a>(&'a [u8], usize);
            impl Read for Trickle<'_> {
                fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                    let n = self.1.min(buf.len()).min(self.0.len());
                    buf[..n].copy_from_slice(&self.0[..n]);
                    self.0 = &self.0[n..];
                    Ok(n)
                }
            }
            let mut s = SkipHoles::new(Trickle(&bytes, step), 1000);
            let mut out = Vec::new();
            s.read_to_end(&mut out).unwrap();
            assert_eq!(
                out, b"line 1\nline 2\nRuntimeError: after\nshort\0\0\0run\nend\n",
                "step {step}"
            );
            assert_eq!(
                s.holes.first,
                vec![
                    (1000 + hole1, 1 << 20),
                    (1000 + hole2, 100),
                    (1000 + hole3, 70)
                ],
                "step {step}"
            );
            assert_eq!((s.holes.count, s.dropped()), (3, (1 << 20) + 170));
        }
        let w = Holes {
            first: vec![(14, 1 << 20)],
            count: 1,
            bytes: 1 << 20,
            ..Default::default()
        };
        assert!(
            w.warning()
                .unwrap()
                .en
                .contains("a hole of 1048576 NUL bytes at byte 14")
        );
    }

    #[test]
    fn compact_keeps_text_in_order() {
        for (input, want) in [
            (&b""[..], &b""[..]),
            (b"abc", b"abc"),
            (b"\0a\0\0b\0", b"ab"),
            (b"\0\0\0", b""),
            (b"ab\0cd", b"abcd"),
        ] {
            let mut v = input.to_vec();
            let k = compact(&mut v);
            assert_eq!(&v[..k], want, "{input:?}");
        }
    }
}
