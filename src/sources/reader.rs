//! Streaming reader: hands out chunks of whole lines from any `Read`, over one reused
//! buffer, so a multi-GB log never sits in memory. The buffer starts small and grows only
//! for a line that does not fit, up to the longest line kept whole; a longer line is cut
//! (and reported), never allowed to grow it without bound; of a cut line, what follows its
//! last `\r` (the message a progress bar's redraws end in) is handed out too, as the same
//! line, bounded by that length.

use std::io::{self, Read};

/// The longest line a default reader keeps whole (what its buffer may grow to).
pub const DEFAULT_BUF: usize = crate::limits::LINE_BYTES;

/// What a reader's buffer starts at: each scan thread holds one, so this, not the longest
/// line, is what a thread costs in read buffer. 256 KiB reads as fast as 1 MiB (a chunk's
/// fixed cost is small beside a quarter of a megabyte of lines).
const START_BUF: usize = 256 << 10;

/// A line longer than the buffer: where it was and how long it really was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LongLine {
    pub lineno: u64,
    pub bytes: u64,
    /// Bytes after its last `\r` handed out as well (0 when it has none).
    pub after_cr: u64,
}

pub struct ChunkReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// The longest line kept whole: what `buf` may grow to.
    cap: usize,
    /// Valid data is `buf[start..end]`.
    start: usize,
    end: usize,
    eof: bool,
    /// Line number of the first line in the next chunk handed out, less the lines of
    /// `uncounted`.
    next_lineno: u64,
    /// The whole-line chunk handed out last (its range in `buf`) while its newlines are not
    /// yet counted into `next_lineno`: a caller that counts them anyway (the scanner) says how
    /// many (`counted`), so a chunk's newlines are counted once; otherwise the next call
    /// counts them.
    uncounted: Option<(usize, usize)>,
    /// Set while skipping the rest of an over-long line.
    skipping: Option<LongLine>,
    /// While skipping: the bytes after the last `\r` seen in the cut line (`None` before
    /// any), at most a buffer's worth.
    cr_tail: Option<Vec<u8>>,
    /// The tail handed out last (kept so the returned slice outlives the call).
    tail_out: Vec<u8>,
    pub long_lines: Vec<LongLine>,
    pub bytes_read: u64,
    /// The chunk handed out last: its range in `buf` (`None`: it was `tail_out`) and the
    /// offset of its first byte in the stream.
    last: Option<(usize, usize, u64)>,
}

thread_local! {
    /// The buffer of this thread's last default reader, for its next one: a reader per file
    /// would otherwise allocate and zero a buffer for each (its old bytes are never read: only
    /// what a read put there is handed out). Kept at the size it grew to.
    static SPARE: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

impl<R> Drop for ChunkReader<R> {
    fn drop(&mut self) {
        if self.cap == DEFAULT_BUF {
            let buf = std::mem::take(&mut self.buf);
            // Gone only while the thread itself ends.
            let _ = SPARE.try_with(|s| s.set(buf));
        }
    }
}

impl<R: Read> ChunkReader<R> {
    pub fn new(inner: R) -> Self {
        Self::with_capacity(inner, DEFAULT_BUF)
    }

    /// A reader that keeps lines of up to `cap` bytes whole.
    pub fn with_capacity(inner: R, cap: usize) -> Self {
        let cap = cap.max(64);
        let fresh = || vec![0; cap.min(START_BUF)];
        let buf = if cap == DEFAULT_BUF {
            SPARE
                .try_with(|s| Some(s.take()).filter(|b| !b.is_empty()))
                .ok()
                .flatten()
                .unwrap_or_else(fresh)
        } else {
            fresh()
        };
        ChunkReader {
            inner,
            buf,
            cap,
            start: 0,
            end: 0,
            eof: false,
            next_lineno: 1,
            uncounted: None,
            skipping: None,
            cr_tail: None,
            tail_out: Vec::new(),
            long_lines: Vec::new(),
            bytes_read: 0,
            last: None,
        }
    }

    fn fill(&mut self) -> io::Result<usize> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let mut total = 0;
        while self.end < self.buf.len() {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => {
                    self.end += n;
                    total += n;
                    self.bytes_read += n as u64;
                    // One read is enough unless it was tiny: keeps latency low for pipes.
                    if n >= 64 * 1024 {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(total)
    }

    /// Remember `buf[s..e]` as the chunk handed out (`end` is where the data read so far ends).
    fn keep(&mut self, s: usize, e: usize) {
        let at = self.bytes_read - (self.end - s) as u64;
        self.last = Some((s, e, at));
    }

    /// As `next_chunk`, but the chunk stays in the reader (`last_chunk`), so the reader can be
    /// looked at while the chunk is: the line number of its first line, `None` at the end.
    pub fn advance(&mut self) -> io::Result<Option<u64>> {
        Ok(self.next_chunk()?.map(|(_, first)| first))
    }

    /// The chunk `advance` handed out last, and the stream offset of its first byte (`None`
    /// for the end of a cut over-long line, which is not where it was in the stream).
    pub fn last_chunk(&self) -> (&[u8], Option<u64>) {
        match self.last {
            Some((s, e, at)) => (&self.buf[s..e], Some(at)),
            None => (&self.tail_out[..], None),
        }
    }

    /// The stream it reads.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// Lines handed out so far (a cut over-long line counts once it ends).
    pub fn lines_seen(&self) -> u64 {
        let pending = self.uncounted.map_or(0, |(s, e)| {
            memchr::memchr_iter(b'\n', &self.buf[s..e]).count()
        });
        self.next_lineno - 1 + pending as u64
    }

    /// The caller counted the newlines of the chunk handed out last (`newlines`, the
    /// scanner's `scan_chunk_counting`): the reader takes its count instead of counting again.
    pub fn counted(&mut self, newlines: u64) {
        if let Some((s, e)) = self.uncounted.take() {
            debug_assert_eq!(
                newlines,
                memchr::memchr_iter(b'\n', &self.buf[s..e]).count() as u64
            );
            self.next_lineno += newlines;
        }
    }

    /// Count the last chunk's newlines if its caller did not (before `buf` moves).
    fn settle(&mut self) {
        if let Some((s, e)) = self.uncounted.take() {
            self.next_lineno += memchr::memchr_iter(b'\n', &self.buf[s..e]).count() as u64;
        }
    }

    /// The next chunk of whole lines (each ending in `\n`, except possibly the very last
    /// line of the input) and the line number of its first line. `None` at the end.
    pub fn next_chunk(&mut self) -> io::Result<Option<(&[u8], u64)>> {
        self.settle();
        loop {
            // Finish skipping an over-long line first.
            if let Some(mut skip) = self.skipping.take() {
                let data = &self.buf[self.start..self.end];
                let nl = memchr::memchr(b'\n', data);
                let part = &data[..nl.unwrap_or(data.len())];
                keep_after_cr(&mut self.cr_tail, part, self.cap);
                skip.bytes += part.len() as u64;
                self.start += part.len();
                let ended = match nl {
                    Some(_) => {
                        self.start += 1;
                        true
                    }
                    None => self.eof,
                };
                if !ended {
                    self.skipping = Some(skip);
                    self.fill()?;
                    continue;
                }
                self.next_lineno += 1;
                let lineno = skip.lineno;
                if let Some(tail) = self.cr_tail.take().filter(|t| !t.is_empty()) {
                    skip.after_cr = tail.len() as u64;
                    self.long_lines.push(skip);
                    self.tail_out = tail;
                    if nl.is_some() {
                        self.tail_out.push(b'\n');
                    }
                    self.last = None;
                    return Ok(Some((&self.tail_out[..], lineno)));
                }
                self.long_lines.push(skip);
                if nl.is_none() {
                    return Ok(None);
                }
            }
            let data = &self.buf[self.start..self.end];
            if self.eof && !data.is_empty() && data.last() != Some(&b'\n') {
                // The input ends without a newline (a paste, `echo -n`): its last line goes out
                // in the same chunk as the lines before it, so a look-back (`preceded_by`)
                // from it still sees them.
                let lineno = self.next_lineno;
                self.next_lineno += memchr::memchr_iter(b'\n', data).count() as u64 + 1;
                let (s, e) = (self.start, self.end);
                self.start = self.end;
                self.keep(s, e);
                return Ok(Some((&self.buf[s..e], lineno)));
            }
            if let Some(last_nl) = memchr::memrchr(b'\n', data) {
                let lineno = self.next_lineno;
                let chunk_start = self.start;
                let chunk_end = self.start + last_nl + 1;
                // Its newlines are counted by the caller (`counted`) or the next call.
                self.uncounted = Some((chunk_start, chunk_end));
                self.start = chunk_end;
                self.keep(chunk_start, chunk_end);
                return Ok(Some((&self.buf[chunk_start..chunk_end], lineno)));
            }
            if self.eof {
                if self.start < self.end {
                    let lineno = self.next_lineno;
                    let (s, e) = (self.start, self.end);
                    self.start = self.end;
                    self.next_lineno += 1;
                    self.keep(s, e);
                    return Ok(Some((&self.buf[s..e], lineno)));
                }
                return Ok(None);
            }
            if self.start == 0 && self.end == self.buf.len() && self.buf.len() < self.cap {
                // One line fills the buffer: grow it, up to the longest line kept whole.
                let grown = (self.buf.len() * 2).min(self.cap);
                self.buf.resize(grown, 0);
                self.fill()?;
                continue;
            }
            if self.start == 0 && self.end == self.buf.len() {
                // One line fills the whole buffer: hand out its head, skip the rest.
                let lineno = self.next_lineno;
                self.skipping = Some(LongLine {
                    lineno,
                    bytes: self.buf.len() as u64,
                    after_cr: 0,
                });
                self.cr_tail = None;
                keep_after_cr(&mut self.cr_tail, &self.buf, self.cap);
                self.start = self.end;
                // The head is returned as its own chunk; the line number advances when the
                // skip finds the newline.
                let len = self.buf.len();
                self.keep(0, len);
                return Ok(Some((&self.buf[..len], lineno)));
            }
            self.fill()?;
        }
    }
}

/// Follow a cut line's bytes: after its last `\r` so far, at most `cap` of them.
fn keep_after_cr(tail: &mut Option<Vec<u8>>, part: &[u8], cap: usize) {
    match memchr::memrchr(b'\r', part) {
        Some(j) => {
            let t = tail.get_or_insert_with(Vec::new);
            t.clear();
            t.extend_from_slice(&part[j + 1..(j + 1 + cap).min(part.len())]);
        }
        None => {
            if let Some(t) = tail {
                let room = cap.saturating_sub(t.len());
                t.extend_from_slice(&part[..room.min(part.len())]);
            }
        }
    }
}

/// The lines of one byte range of a seekable file, for scanning a huge file on several
/// threads. A range owns the lines that *start* in `[start, end)`: it skips the tail of the
/// line it starts in and reads past `end` to finish its last line. Memory stays one buffer.
pub struct SegmentRead<R> {
    inner: R,
    pos: u64,
    end: u64,
    done: bool,
    /// Where its first line starts.
    pub start: u64,
}

impl<R: Read + io::Seek> SegmentRead<R> {
    pub fn new(mut inner: R, start: u64, end: u64) -> io::Result<Self> {
        let mut pos = start;
        if start > 0 {
            // The byte before `start`: if it is not a newline, skip to the next line start.
            inner.seek(io::SeekFrom::Start(start - 1))?;
            let mut buf = [0u8; 64 * 1024];
            let mut at = start - 1;
            'find: loop {
                let n = match inner.read(&mut buf) {
                    Ok(0) => {
                        at = u64::MAX;
                        break;
                    }
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
                    at += i as u64;
                    break 'find;
                }
                at += n as u64;
            }
            pos = at.saturating_add(1);
            inner.seek(io::SeekFrom::Start(pos.min(end)))?;
        }
        Ok(SegmentRead {
            inner,
            pos,
            end,
            done: pos >= end,
            start: pos,
        })
    }
}

impl<R: Read> Read for SegmentRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        let n = self.inner.read(buf)?;
        if n == 0 {
            self.done = true;
            return Ok(0);
        }
        let last = self.end - 1; // the last byte a line owned by this range may start before
        if self.pos + n as u64 > last {
            let from = last.saturating_sub(self.pos) as usize;
            if let Some(i) = memchr::memchr(b'\n', &buf[from..n]) {
                self.done = true;
                self.pos += (from + i + 1) as u64;
                return Ok(from + i + 1);
            }
        }
        self.pos += n as u64;
        Ok(n)
    }
}

/// Iterate the lines of a chunk: `(lineno, line without '\n')`.
pub fn lines(chunk: &[u8], first_lineno: u64) -> impl Iterator<Item = (u64, &[u8])> {
    let mut pos = 0;
    let mut lineno = first_lineno;
    std::iter::from_fn(move || {
        if pos >= chunk.len() {
            return None;
        }
        let end = memchr::memchr(b'\n', &chunk[pos..])
            .map(|i| pos + i)
            .unwrap_or(chunk.len());
        let line = &chunk[pos..end];
        let n = lineno;
        pos = end + 1;
        lineno += 1;
        Some((n, line.strip_suffix(b"\r").unwrap_or(line)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_lines(input: &[u8], cap: usize) -> (Vec<(u64, Vec<u8>)>, Vec<LongLine>) {
        let mut r = ChunkReader::with_capacity(input, cap);
        let mut out = Vec::new();
        while let Some((chunk, first)) = r.next_chunk().unwrap() {
            for (n, l) in lines(chunk, first) {
                out.push((n, l.to_vec()));
            }
        }
        (out, std::mem::take(&mut r.long_lines))
    }

    #[test]
    fn lines_keep_numbers_across_refills() {
        let text = (1..=1000)
            .map(|i| format!("line {i}\n"))
            .collect::<String>();
        let (ls, long) = all_lines(text.as_bytes(), 64);
        assert_eq!(ls.len(), 1000);
        assert!(long.is_empty());
        assert_eq!(ls[999], (1000, b"line 1000".to_vec()));
    }

    #[test]
    fn last_line_without_newline_is_kept() {
        let (ls, _) = all_lines(b"a\nb", 64);
        assert_eq!(ls, vec![(1, b"a".to_vec()), (2, b"b".to_vec())]);
    }

    #[test]
    fn the_next_reader_reuses_the_buffer_and_hands_out_only_what_it_read() {
        let mut long = vec![b'x'; DEFAULT_BUF - 10];
        long.push(b'\n');
        let mut r = ChunkReader::new(&long[..]);
        while r.next_chunk().unwrap().is_some() {}
        let was = r.buf.as_ptr();
        drop(r);
        let mut r = ChunkReader::new(&b"a\nb\nc"[..]);
        assert_eq!(r.buf.as_ptr(), was);
        assert_eq!(r.next_chunk().unwrap(), Some((&b"a\nb\nc"[..], 1)));
        assert_eq!(r.next_chunk().unwrap(), None);
    }

    /// A caller that counts each chunk's newlines itself (`counted`) gets the same line
    /// numbers and total as one that does not, over chunks of every kind (whole lines, a cut
    /// over-long line's head and tail, a last line without a newline).
    #[test]
    fn counted_chunks_number_lines_as_the_reader_does() {
        let mut text = Vec::new();
        for i in 0..20_000 {
            text.extend_from_slice(format!("line {i}\n").as_bytes());
            if i % 7_000 == 0 {
                text.extend(std::iter::repeat_n(b'x', DEFAULT_BUF + 50));
                text.extend_from_slice(b"\rtail\n");
            }
        }
        text.extend_from_slice(b"no newline");
        let run = |count: bool| {
            let mut r = ChunkReader::new(&text[..]);
            let mut firsts = Vec::new();
            while let Some(first) = r.advance().unwrap() {
                firsts.push(first);
                let n = memchr::memchr_iter(b'\n', r.last_chunk().0).count() as u64;
                if count {
                    r.counted(n);
                }
            }
            (firsts, r.lines_seen())
        };
        let (plain, counted) = (run(false), run(true));
        assert!(plain.0.len() > 3, "{:?}", plain.0);
        assert_eq!(plain, counted);
        assert_eq!(plain.1, 20_000 + 3 + 1);
    }

    #[test]
    fn a_line_longer_than_the_first_buffer_grows_it_and_is_kept_whole() {
        let mut text = b"first\n".to_vec();
        for n in [START_BUF + 10, 3 * START_BUF, DEFAULT_BUF] {
            text.extend(std::iter::repeat_n(b'x', n));
            text.push(b'\n');
        }
        text.extend_from_slice(b"last\n");
        let mut r = ChunkReader::new(&text[..]);
        assert_eq!(r.buf.len(), START_BUF);
        let mut got = Vec::new();
        while let Some((chunk, first)) = r.next_chunk().unwrap() {
            got.extend(lines(chunk, first).map(|(n, l)| (n, l.len())));
        }
        // The line of exactly the longest length is cut (no room for its newline), as before.
        let cut = r
            .long_lines
            .iter()
            .map(|l| (l.lineno, l.bytes))
            .collect::<Vec<_>>();
        assert_eq!(cut, vec![(4, DEFAULT_BUF as u64)]);
        assert_eq!(
            got,
            vec![
                (1, 5),
                (2, START_BUF + 10),
                (3, 3 * START_BUF),
                (4, DEFAULT_BUF),
                (5, 4)
            ]
        );
        assert_eq!(r.buf.len(), DEFAULT_BUF);
    }

    #[test]
    fn last_line_without_newline_shares_the_chunk_of_the_lines_before_it() {
        let mut r = ChunkReader::with_capacity(&b"a\nb\nc"[..], 64);
        assert_eq!(r.next_chunk().unwrap(), Some((&b"a\nb\nc"[..], 1)));
        assert_eq!(r.next_chunk().unwrap(), None);
        assert_eq!(r.lines_seen(), 3);
    }

    #[test]
    fn over_long_line_is_cut_and_reported_and_numbering_continues() {
        let mut text = b"first\n".to_vec();
        text.extend(std::iter::repeat_n(b'x', 1000));
        text.extend_from_slice(b"\nafter\n");
        let (ls, long) = all_lines(&text, 100);
        assert_eq!(
            long,
            vec![LongLine {
                lineno: 2,
                bytes: 1000,
                after_cr: 0
            }]
        );
        assert_eq!(ls.last().unwrap(), &(3, b"after".to_vec()));
        assert_eq!(ls[1].0, 2);
        assert_eq!(ls[1].1.len(), 100);
    }

    #[test]
    fn what_follows_the_last_carriage_return_of_a_cut_line_is_read_too() {
        let mut text = b"first\n".to_vec();
        for i in 0..200 {
            text.extend_from_slice(format!(" {i}%|####| {i}/200 [00:01<00:02]\r").as_bytes());
        }
        text.extend_from_slice(b"RuntimeError: CUDA error: an illegal memory access\nafter\n");
        let (ls, long) = all_lines(&text, 256);
        assert_eq!(long.len(), 1);
        assert_eq!(long[0].lineno, 2);
        assert_eq!(long[0].after_cr, 50);
        let second: Vec<_> = ls.iter().filter(|(n, _)| *n == 2).collect();
        assert_eq!(second.len(), 2, "the head and the tail of line 2");
        assert_eq!(
            second[1].1,
            b"RuntimeError: CUDA error: an illegal memory access".to_vec()
        );
        assert_eq!(ls.last().unwrap(), &(3, b"after".to_vec()));
    }

    #[test]
    fn a_cut_line_ending_the_input_keeps_its_tail() {
        let mut text = vec![b'x'; 300];
        text.extend_from_slice(b"\rKilled");
        let (ls, long) = all_lines(&text, 128);
        assert_eq!(long[0].after_cr, 6);
        assert_eq!(ls.last().unwrap(), &(1, b"Killed".to_vec()));
    }

    #[test]
    fn segments_partition_lines_exactly() {
        let text: Vec<u8> = (0..500)
            .map(|i| format!("l{i}{}\n", "x".repeat(i % 37)))
            .collect::<String>()
            .into_bytes();
        for parts in [1u64, 2, 3, 7, 50, 400] {
            let size = text.len() as u64;
            let mut all = Vec::new();
            for k in 0..parts {
                let (s, e) = (size * k / parts, size * (k + 1) / parts);
                let seg = SegmentRead::new(io::Cursor::new(&text), s, e).unwrap();
                let mut r = ChunkReader::with_capacity(seg, 256);
                while let Some((chunk, _)) = r.next_chunk().unwrap() {
                    all.extend_from_slice(chunk);
                }
            }
            assert_eq!(all, text, "{parts} parts");
        }
    }
}
