//! Decompression by magic, for every source that reads a file which may be compressed (logs,
//! archives, cores): what the first bytes say a file is (`sniff`), a decompressing reader for
//! it (`decoder`), and `Rewindable`, positioned reads over a compressed stream (it goes back
//! only by decompressing again from the start). Knows nothing of what the bytes are; never
//! loads a whole file (a `Rewindable` keeps only the ranges asked for).

use crate::model::{Text, text};
use flate2::read::MultiGzDecoder;
use std::fs::File;
use std::io::{self, BufReader, Read};

/// The largest single read a `Rewindable` serves.
pub(crate) const MAX_READ: usize = 64 << 20;

/// A compressed file (gzip, zstd, xz, lz4, bzip2) decompressed as a stream: what was read is kept
/// (only the requested ranges, so memory stays at headers + notes + the few pages the stack
/// and Python walks need, for a core), skipped bytes are decompressed and dropped. A read behind the
/// stream's position that was not kept restarts the decompression from the file's start (the
/// Python walk chases pointers backwards); at most `MAX_REWINDS` times, then it is an error.
pub struct Rewindable {
    container: Container,
    file: File,
    dec: Box<dyn Read>,
    pos: u64,
    kept: Vec<(u64, Vec<u8>)>,
    ended: bool,
    rewinds: usize,
}

/// Restarts allowed per file: each one decompresses it again up to the wanted offset.
pub(crate) const MAX_REWINDS: usize = 48;

impl Rewindable {
    /// A stream over `f`, compressed as `container` says (`Elf`/`Other` are read as they are).
    pub fn new(f: File, container: Container) -> io::Result<Rewindable> {
        let dec = decoder(container, BufReader::with_capacity(1 << 16, f.try_clone()?))?;
        Ok(Rewindable {
            container,
            file: f,
            dec,
            pos: 0,
            kept: Vec::new(),
            ended: false,
            rewinds: 0,
        })
    }

    fn restart(&mut self) -> io::Result<()> {
        use std::io::{Seek, SeekFrom};
        let mut f = self.file.try_clone()?;
        f.seek(SeekFrom::Start(0))?;
        self.dec = decoder(self.container, BufReader::with_capacity(1 << 16, f))?;
        self.pos = 0;
        self.ended = false;
        self.rewinds += 1;
        Ok(())
    }
}

/// A decompressing reader for a container. Why these crates: `flate2` (already used for logs);
/// `zstd`, the bindings to the reference libzstd that systemd-coredump itself writes with;
/// `liblzma`, the maintained bindings to xz-utils' liblzma (the fork of the unmaintained `xz2`);
/// `lz4_flex`, a pure-Rust LZ4 *frame* decoder (the format `lz4`/systemd write) with its
/// bounds-checked safe decoder, so hostile input cannot reach unsafe code; `bzip2`, whose
/// default backend is libbzip2 ported to Rust (`libbz2-rs-sys`: no C toolchain, no system
/// library), read as multi-stream like `bunzip2` (pbzip2 writes one stream per block).
pub fn decoder<'a>(container: Container, r: impl Read + 'a) -> io::Result<Box<dyn Read + 'a>> {
    Ok(match container {
        Container::Gzip => Box::new(MultiGzDecoder::new(r)),
        Container::Zstd => Box::new(zstd::stream::read::Decoder::new(r)?),
        Container::Xz => Box::new(liblzma::read::XzDecoder::new_multi_decoder(r)),
        Container::Lz4 => Box::new(lz4_flex::frame::FrameDecoder::new(r)),
        Container::Bzip2 => Box::new(bzip2::read::MultiBzDecoder::new(r)),
        Container::Elf | Container::Other => Box::new(r),
    })
}

impl Container {
    /// The name of the compression (`None` for an uncompressed file).
    pub fn compression(self) -> Option<&'static str> {
        match self {
            Container::Gzip => Some("gzip"),
            Container::Zstd => Some("zstd"),
            Container::Xz => Some("xz"),
            Container::Lz4 => Some("lz4"),
            Container::Bzip2 => Some("bzip2"),
            Container::Elf | Container::Other => None,
        }
    }
}

impl Rewindable {
    /// Up to `len` bytes at `off`; fewer when the stream ends first.
    pub fn read_at(&mut self, off: u64, len: usize) -> Result<Vec<u8>, Text> {
        if len > MAX_READ {
            return Err(text!(
                "refusing a {len}-byte read at offset {off}",
                "拒绝在偏移 {off} 处一次读取 {len} 字节"
            ));
        }
        let name = self.container.compression().unwrap_or("file");
        let end = off.saturating_add(len as u64);
        if let Some((s, d)) = self
            .kept
            .iter()
            .find(|(s, d)| *s <= off && end <= s + d.len() as u64)
        {
            let a = (off - s) as usize;
            return Ok(d[a..a + len].to_vec());
        }
        if off < self.pos {
            if self.rewinds >= MAX_REWINDS {
                return Err(text!(
                    "{name} stream cannot go back to offset {off} (already at {}; {MAX_REWINDS} restarts spent)",
                    "{name} 流无法回退到偏移 {off}（已读到 {}；{MAX_REWINDS} 次从头重新解压的机会已用完）",
                    self.pos
                ));
            }
            self.restart().map_err(|e| {
                text!(
                    "{name} stream cannot restart: {e}",
                    "{name} 流无法从头重新解压：{e}"
                )
            })?;
        }
        if self.ended {
            return Ok(Vec::new());
        }
        let skip = off - self.pos;
        let skipped = io::copy(&mut (&mut self.dec).take(skip), &mut io::sink()).map_err(|e| {
            text!(
                "{name} stream at offset {}: {e}",
                "{name} 流在偏移 {} 处出错：{e}",
                self.pos
            )
        })?;
        self.pos += skipped;
        if skipped < skip {
            self.ended = true;
            return Ok(Vec::new());
        }
        let mut buf = Vec::with_capacity(len);
        let got = (&mut self.dec)
            .take(len as u64)
            .read_to_end(&mut buf)
            .map_err(|e| {
                text!(
                    "{name} stream at offset {}: {e}",
                    "{name} 流在偏移 {} 处出错：{e}",
                    self.pos
                )
            })?;
        self.pos += got as u64;
        if got < len {
            self.ended = true;
        }
        self.kept.push((off, buf.clone()));
        Ok(buf)
    }
}

/// What the first bytes of a file say it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    Elf,
    Gzip,
    Zstd,
    Xz,
    Lz4,
    Bzip2,
    Other,
}

pub fn sniff(head: &[u8]) -> Container {
    if head.starts_with(b"\x7fELF") {
        Container::Elf
    } else if head.starts_with(&[0x1f, 0x8b]) {
        Container::Gzip
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Container::Zstd
    } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        Container::Xz
    } else if head.starts_with(&[0x04, 0x22, 0x4d, 0x18]) {
        Container::Lz4
    } else if head.len() >= 10
        && head.starts_with(b"BZh")
        && (b'1'..=b'9').contains(&head[3])
        && head[4..10] == [0x31, 0x41, 0x59, 0x26, 0x53, 0x59]
    {
        // `BZh` + block size + the first block's magic (π): three letters alone begin text.
        Container::Bzip2
    } else {
        Container::Other
    }
}
