//! Holes in a log: runs of NUL bytes where text should be. `logrotate`'s `copytruncate`
//! truncates a log that its writer keeps open, so the writer's next line lands at its old
//! offset and everything before it reads as NULs; a crash leaves blocks of NULs where pages
//! were never written. Such a head looks binary, yet the text around the hole is the run's
//! log: it is read with its NUL bytes dropped, and the bytes dropped are said. It must not
//! make a binary file text: only a head that is text once its NULs are gone, with a line
//! end in it, is read this way (`open` decides, from the head after the hole).

use crate::model::{Text, text};
use std::io::{self, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A run of NULs this long in a head is a hole, not a stray NUL (a worker's signal handler
/// writes one) nor a binary format's padding of a few bytes.
pub const MIN_HOLE: usize = 64;

/// Whether `head` holds a hole: a run of `MIN_HOLE` NULs or more.
pub fn has_hole(head: &[u8]) -> bool {
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
pub fn only_nuls(n: u64) -> Text {
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
