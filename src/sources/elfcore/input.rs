//! Where a core's bytes come from: a file read with positioned reads, a slice (fuzzing, tests),
//! or a compressed stream (`sources::decompress::Rewindable`: gzip, zstd, xz, lz4, bzip2) read
//! forward. Readers never load a whole core; a stream goes back only by decompressing again
//! from the start, so the analysis asks for its ranges in ascending file order wherever it can.

use crate::model::{Text, text};
pub use crate::sources::decompress::{Container, Rewindable as Stream, sniff};
use std::fs::File;
use std::io;

/// The largest single read the analysis may ask for (a notes segment of a process with
/// hundreds of thousands of mappings stays far below this).
pub const MAX_READ: usize = crate::sources::decompress::MAX_READ;

pub trait CoreBytes {
    /// Up to `len` bytes at `off`; fewer when the file ends first (a truncated core).
    fn read_at(&mut self, off: u64, len: usize) -> Result<Vec<u8>, Text>;
    /// The core's size, when known without reading it (not for a stream).
    fn size(&self) -> Option<u64> {
        None
    }
}

pub struct SliceBytes<'a>(pub &'a [u8]);

impl CoreBytes for SliceBytes<'_> {
    fn size(&self) -> Option<u64> {
        Some(self.0.len() as u64)
    }
    fn read_at(&mut self, off: u64, len: usize) -> Result<Vec<u8>, Text> {
        let Ok(start) = usize::try_from(off) else {
            return Ok(Vec::new());
        };
        if start >= self.0.len() {
            return Ok(Vec::new());
        }
        let end = start.saturating_add(len.min(MAX_READ)).min(self.0.len());
        Ok(self.0[start..end].to_vec())
    }
}

pub struct FileBytes(pub File);

impl CoreBytes for FileBytes {
    fn size(&self) -> Option<u64> {
        self.0.metadata().ok().map(|m| m.len())
    }
    fn read_at(&mut self, off: u64, len: usize) -> Result<Vec<u8>, Text> {
        if len > MAX_READ {
            return Err(text!(
                "refusing a {len}-byte read at offset {off}",
                "拒绝在偏移 {off} 处一次读取 {len} 字节"
            ));
        }
        let mut buf = vec![0u8; len];
        let mut got = 0;
        while got < len {
            match positioned_read(&self.0, &mut buf[got..], off.saturating_add(got as u64)) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(text!(
                        "read at offset {off}: {e}",
                        "在偏移 {off} 处读取失败：{e}"
                    ));
                }
            }
        }
        buf.truncate(got);
        Ok(buf)
    }
}

#[cfg(unix)]
fn positioned_read(f: &File, buf: &mut [u8], off: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(f, buf, off)
}

#[cfg(not(unix))]
fn positioned_read(f: &File, buf: &mut [u8], off: u64) -> io::Result<usize> {
    use std::io::{Seek, SeekFrom};
    let mut f = f;
    f.seek(SeekFrom::Start(off))?;
    f.read(buf)
}

impl CoreBytes for Stream {
    fn read_at(&mut self, off: u64, len: usize) -> Result<Vec<u8>, Text> {
        Stream::read_at(self, off, len)
    }
}
