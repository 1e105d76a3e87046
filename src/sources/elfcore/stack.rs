//! The crashing thread's stack, best effort and labelled: the pc, aarch64's link register, the
//! frame-pointer chain, and a scan of stack words that point into executable mappings. Works on
//! one window of stack memory read once; never follows a pointer out of that window.

use super::notes::{Arch, ThreadStatus};
use serde::Serialize;

/// How a frame was found, most to least trustworthy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum How {
    /// The thread's program counter.
    Pc,
    /// aarch64's link register (the caller, unless the function already saved and reused it).
    LinkRegister,
    /// A return address from the frame-pointer chain.
    FramePointer,
    /// A stack word that points into executable code (and, where the code bytes could be read,
    /// just after a call instruction). May be a stale value: a guess.
    StackScan,
}

impl How {
    pub fn as_str(self) -> &'static str {
        match self {
            How::Pc => "pc",
            How::LinkRegister => "link-register",
            How::FramePointer => "frame-pointer",
            How::StackScan => "stack-scan",
        }
    }
}

/// Stack memory from `base`, as read from the core.
pub struct Window {
    pub base: u64,
    pub bytes: Vec<u8>,
}

impl Window {
    pub fn word(&self, addr: u64) -> Option<u64> {
        let off = usize::try_from(addr.checked_sub(self.base)?).ok()?;
        super::notes::u64_at(&self.bytes, off)
    }
    pub fn end(&self) -> u64 {
        self.base.saturating_add(self.bytes.len() as u64)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawFrame {
    pub pc: u64,
    pub how: How,
}

/// Does the code just before a return address hold a call? `before` holds the bytes
/// [ret - before.len(), ret).
pub fn ends_with_call(arch: Arch, before: &[u8]) -> bool {
    let n = before.len();
    match arch {
        Arch::X86_64 => {
            let at = |back: usize| n.checked_sub(back).and_then(|i| before.get(i)).copied();
            let modrm_is_call = |back: usize| at(back - 1).is_some_and(|m| (m >> 3) & 7 == 2);
            at(5) == Some(0xe8) || (2..=7).any(|back| at(back) == Some(0xff) && modrm_is_call(back))
        }
        Arch::Aarch64 => {
            let Some(i) = n
                .checked_sub(4)
                .and_then(|s| super::notes::u32_at(before, s))
            else {
                return false;
            };
            i & 0xfc00_0000 == 0x9400_0000
                || i & 0xffff_fc1f == 0xd63f_0000
                || i & 0xffff_f800 == 0xd63f_0800
        }
        Arch::Other(_) => false,
    }
}

/// Walk the stack. `is_code(addr)` says whether an address lies in executable memory;
/// `is_after_call(ret)` whether the code before it is a call (None: the bytes are unknown).
pub fn walk(
    arch: Arch,
    t: &ThreadStatus,
    window: Option<&Window>,
    is_code: &dyn Fn(u64) -> bool,
    is_after_call: &mut dyn FnMut(u64) -> Option<bool>,
    max_frames: usize,
) -> Vec<RawFrame> {
    let mut frames = Vec::new();
    let Some(pc) = t.pc else {
        return frames;
    };
    frames.push(RawFrame { pc, how: How::Pc });
    if arch == Arch::Aarch64
        && let Some(lr) = t.lr
        && lr != pc
        && is_code(lr)
    {
        frames.push(RawFrame {
            pc: lr,
            how: How::LinkRegister,
        });
    }
    let Some(w) = window else {
        return frames;
    };
    // Frame-pointer chain: [fp] = caller's fp, [fp + 8] = return address (both arches).
    let mut chain: Vec<(u64, u64)> = Vec::new();
    let mut fp = t.fp.unwrap_or(0);
    while chain.len() < max_frames {
        if !fp.is_multiple_of(8) || fp < w.base {
            break;
        }
        let (Some(next), Some(ret)) = (w.word(fp), w.word(fp.wrapping_add(8))) else {
            break;
        };
        if !is_code(ret) {
            break;
        }
        chain.push((fp + 8, ret));
        if next <= fp {
            break;
        }
        fp = next;
    }
    // Scan: candidates below the chain (a leaf without a frame of its own, e.g. memcpy) and
    // above it (where the chain broke).
    let sp = t.sp.unwrap_or(w.base).max(w.base);
    let (lo, hi) = match (chain.first(), chain.last()) {
        (Some(f), Some(l)) => (f.0, l.0),
        _ => (u64::MAX, u64::MAX),
    };
    let mut scanned: Vec<(u64, u64)> = Vec::new();
    let mut slot = sp & !7;
    while slot < w.end() && scanned.len() < max_frames * 4 {
        if (slot < lo || slot > hi || lo == u64::MAX)
            && let Some(v) = w.word(slot)
            && is_code(v)
            && is_after_call(v) != Some(false)
        {
            scanned.push((slot, v));
        }
        slot = slot.saturating_add(8);
    }
    let push = |frames: &mut Vec<RawFrame>, pc: u64, how: How| {
        if frames.len() < max_frames && frames.last().is_none_or(|f| f.pc != pc) {
            frames.push(RawFrame { pc, how });
        }
    };
    for &(s, v) in scanned.iter().filter(|(s, _)| *s < lo) {
        let _ = s;
        push(&mut frames, v, How::StackScan);
    }
    for &(_, ret) in &chain {
        push(&mut frames, ret, How::FramePointer);
    }
    if lo != u64::MAX {
        for &(_, v) in scanned.iter().filter(|(s, _)| *s > hi) {
            push(&mut frames, v, How::StackScan);
        }
    }
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x86_call_forms_are_recognised() {
        assert!(ends_with_call(
            Arch::X86_64,
            &[0x90, 0x90, 0xe8, 1, 2, 3, 4]
        ));
        assert!(ends_with_call(
            Arch::X86_64,
            &[0, 0, 0, 0, 0x41, 0xff, 0xd0]
        ));
        assert!(ends_with_call(Arch::X86_64, &[0, 0xff, 0x15, 1, 2, 3, 4]));
        assert!(!ends_with_call(Arch::X86_64, &[0, 0, 0, 0, 0, 0x48, 0x89]));
        assert!(!ends_with_call(Arch::X86_64, &[]));
    }

    #[test]
    fn aarch64_bl_and_blr_are_recognised() {
        assert!(ends_with_call(Arch::Aarch64, &0x9400_0010u32.to_le_bytes()));
        assert!(ends_with_call(Arch::Aarch64, &0xd63f_0020u32.to_le_bytes()));
        assert!(!ends_with_call(
            Arch::Aarch64,
            &0xd503_201fu32.to_le_bytes()
        ));
    }

    #[test]
    fn chain_and_scan_are_merged_in_stack_order() {
        // sp = 0x1000; a stale-free leaf slot at 0x1008 holds a return address; the frame
        // chain starts at fp = 0x1020 and ends at 0x1040.
        let mut bytes = vec![0u8; 0x60];
        let put =
            |b: &mut Vec<u8>, at: usize, v: u64| b[at..at + 8].copy_from_slice(&v.to_le_bytes());
        put(&mut bytes, 0x08, 0x5000);
        put(&mut bytes, 0x20, 0x1040);
        put(&mut bytes, 0x28, 0x5100);
        put(&mut bytes, 0x40, 0);
        put(&mut bytes, 0x48, 0x5200);
        put(&mut bytes, 0x58, 0x5300);
        let w = Window {
            base: 0x1000,
            bytes,
        };
        let t = ThreadStatus {
            pc: Some(0x4000),
            sp: Some(0x1000),
            fp: Some(0x1020),
            ..ThreadStatus::default()
        };
        let is_code = |a: u64| (0x4000..0x6000).contains(&a);
        let f = walk(Arch::X86_64, &t, Some(&w), &is_code, &mut |_| None, 16);
        let got: Vec<(u64, How)> = f.iter().map(|f| (f.pc, f.how)).collect();
        assert_eq!(
            got,
            vec![
                (0x4000, How::Pc),
                (0x5000, How::StackScan),
                (0x5100, How::FramePointer),
                (0x5200, How::FramePointer),
                (0x5300, How::StackScan),
            ]
        );
    }
}
