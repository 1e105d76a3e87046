//! A thread's stack, labelled frame by frame with how each was found, in the order a debugger
//! trusts them: the module's call-frame information (CFI), else the frame-pointer chain, else
//! a scan for a stack word that points just after a call in executable memory. Each step is
//! checked (the caller's pc must be code, the stack pointer must move up) and a failed step
//! falls back to the next method. Reads memory only through `Process`; never follows a
//! pointer that is not a stack slot or a CFI rule's address.

use super::notes::{Arch, ThreadStatus};
use super::unwind::{REGS, Step};
use serde::Serialize;

/// How a frame was found, most to least trustworthy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum How {
    /// The thread's program counter.
    Pc,
    /// A return address from the module's CFI (`.eh_frame`, `.debug_frame`).
    Cfi,
    /// aarch64's link register (the caller, unless the function already saved and reused it).
    LinkRegister,
    /// A return address from the frame-pointer chain.
    FramePointer,
    /// A stack word that points into executable code (and, where the code bytes could be read,
    /// just after a call instruction). May be a stale value: a guess.
    StackScan,
    /// The kernel's signal frame, recognised on the stack by its layout where the trampoline's
    /// CFI is not at hand (x86-64 `rt_sigframe`): the trampoline address the kernel gave the
    /// handler, then the interrupted pc with every register the frame saved.
    SignalFrame,
}

impl How {
    pub fn as_str(self) -> &'static str {
        match self {
            How::Pc => "pc",
            How::Cfi => "cfi",
            How::LinkRegister => "link-register",
            How::FramePointer => "frame-pointer",
            How::StackScan => "stack-scan",
            How::SignalFrame => "signal-frame",
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
    /// `pc` is the instruction itself (frame 0, a frame a signal interrupted), not a return
    /// address: its line is looked up at `pc`, not at the call before it.
    pub exact: bool,
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

/// What the walk may ask of the crashed process.
pub trait Process {
    /// Whether an address lies in executable memory.
    fn is_code(&self, addr: u64) -> bool;
    /// Whether the code before a return address is a call (`None`: the bytes are unknown).
    fn is_after_call(&mut self, ret: u64) -> Option<bool>;
    /// An 8-byte word of memory (the thread's stack, as the core holds it).
    fn word(&mut self, addr: u64) -> Option<u64>;
    /// A word of the thread's stack window only (what the scan reads: no memory beyond it).
    fn window_word(&self, addr: u64) -> Option<u64>;
    /// Whether `ret` is the return address the kernel gives a signal handler: the start of a
    /// signal trampoline (`__restore_rt`), as its module's CFI marks it.
    fn is_signal_return(&mut self, ret: u64) -> bool;
    /// One CFI step from a frame at `pc`; `exact`: the pc is the interrupted instruction (frame
    /// 0, or the frame a signal interrupted), not a return address.
    fn cfi_step(&mut self, pc: u64, exact: bool, regs: &[Option<u64>]) -> Step;
}

/// How far above sp the scan looks for the next return address (16 KiB of stack).
const SCAN_WORDS: u64 = 2048;

/// The first stack slot in [from, to) holding a word that points into code, just after a
/// call where the code bytes can be read.
fn scan(p: &mut dyn Process, from: u64, to: u64) -> Option<(u64, u64)> {
    let mut slot = from.checked_add(7)? & !7;
    while slot < to {
        let Some(v) = p.window_word(slot) else {
            break;
        };
        if p.is_code(v) && p.is_after_call(v) != Some(false) {
            return Some((slot, v));
        }
        slot = slot.checked_add(8)?;
    }
    None
}

/// The first stack slot in [from, to) holding a signal trampoline's address.
fn scan_for_signal_return(p: &mut dyn Process, from: u64, to: u64) -> Option<(u64, u64)> {
    let mut slot = from.checked_add(7)? & !7;
    while slot < to {
        let v = p.window_word(slot)?;
        if p.is_code(v) && p.is_signal_return(v) {
            return Some((slot, v));
        }
        slot = slot.checked_add(8)?;
    }
    None
}

/// x86-64's `struct rt_sigframe` as the kernel builds it for a handler (arch/x86/include/
/// asm/sigframe.h, uapi asm/sigcontext.h): at the handler's sp, `pretcode` (the trampoline the
/// handler returns to); then `struct ucontext` (`uc_flags`, `uc_link`, `uc_stack`, then
/// `uc_mcontext`: r8…r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags, cs/gs/fs/ss, …,
/// 256 bytes, then `uc_sigmask`); then the `siginfo` the handler was given.
const UC_LINK: u64 = 16;
const MCONTEXT: u64 = 48;
const SIGINFO: u64 = 8 + 304;
/// DWARF register numbers of the sigcontext's first 17 words, in its order.
const SIGCONTEXT_DWARF: [usize; 17] = [8, 9, 10, 11, 12, 13, 14, 15, 5, 4, 6, 3, 1, 0, 2, 7, 16];
/// The user code segment selector of a 64-bit Linux process (`__USER_CS`).
const USER_CS: u64 = 0x33;

/// The registers an x86-64 signal frame at `slot` saved (DWARF-numbered, the pc at 16), when
/// the words there are one: `uc_link` 0, small `uc_flags`, the user code segment, EFLAGS'
/// always-set bit, a signal number in the siginfo and an interrupted pc in code. Any of those
/// failing means it is no signal frame (a stale or chance value).
fn x86_64_signal_frame(p: &mut dyn Process, slot: u64) -> Option<Vec<Option<u64>>> {
    let at = |off: u64| slot.checked_add(off);
    let w = |p: &mut dyn Process, off: u64| p.window_word(at(off)?);
    let flags = w(p, 8)?;
    if w(p, UC_LINK)? != 0 || flags > 0xf {
        return None;
    }
    let mc = |i: u64| MCONTEXT + 8 * i;
    let (eflags, segs) = (w(p, mc(17))?, w(p, mc(18))?);
    if segs & 0xffff != USER_CS || eflags & 2 == 0 || eflags >> 32 != 0 {
        return None;
    }
    let signo = w(p, SIGINFO)? & 0xffff_ffff;
    if !(1..=64).contains(&signo) {
        return None;
    }
    let mut regs = vec![None; REGS];
    for (i, &r) in SIGCONTEXT_DWARF.iter().enumerate() {
        regs[r] = Some(w(p, mc(i as u64))?);
    }
    let pc = regs[16]?;
    (p.is_code(pc) && regs[7].is_some_and(|sp| sp != 0)).then_some(regs)
}

/// The first stack slot in [from, to) where a kernel signal frame lies (x86-64 only): the slot
/// holds the trampoline's address; with the registers the frame saved.
fn scan_for_signal_frame(
    p: &mut dyn Process,
    arch: Arch,
    from: u64,
    to: u64,
) -> Option<(u64, u64, Vec<Option<u64>>)> {
    if arch != Arch::X86_64 {
        return None;
    }
    let mut slot = from.checked_add(7)? & !7;
    while slot < to {
        let v = p.window_word(slot)?;
        if p.is_code(v)
            && let Some(regs) = x86_64_signal_frame(p, slot)
        {
            return Some((slot, v, regs));
        }
        slot = slot.checked_add(8)?;
    }
    None
}

/// Walk one thread's stack from its registers, innermost first.
pub fn walk(arch: Arch, t: &ThreadStatus, p: &mut dyn Process, max_frames: usize) -> Vec<RawFrame> {
    let mut frames = Vec::new();
    let Some(pc) = t.pc else {
        return frames;
    };
    frames.push(RawFrame {
        pc,
        how: How::Pc,
        exact: true,
    });
    let (sp_reg, fp_reg) = match arch {
        Arch::Aarch64 => (31, 29),
        _ => (7, 6),
    };
    let mut regs = t.dwarf.clone();
    regs.resize(REGS, None);
    if regs[sp_reg].is_none() {
        regs[sp_reg] = t.sp;
    }
    if regs[fp_reg].is_none() {
        regs[fp_reg] = t.fp;
    }
    let (mut pc, mut exact) = (pc, true);
    while frames.len() < max_frames {
        let Some(sp) = regs[sp_reg] else {
            break;
        };
        // 1. CFI: trusted when it names code and moves the stack up (a signal frame may
        // move it anywhere: the interrupted sp is in the signal frame).
        match p.cfi_step(pc, exact, &regs) {
            Step::Outermost => break,
            Step::Caller {
                pc: ra,
                regs: next,
                signal,
            } if p.is_code(ra) && next[sp_reg].is_some_and(|s| s > sp || (signal && s != sp)) => {
                frames.push(RawFrame {
                    pc: ra,
                    how: How::Cfi,
                    exact: signal,
                });
                (pc, exact, regs) = (ra, signal, next);
                continue;
            }
            _ => {}
        }
        // 2. aarch64's link register, for the innermost frame only.
        if arch == Arch::Aarch64
            && frames.len() == 1
            && let Some(lr) = t.lr
            && lr != pc
            && p.is_code(lr)
        {
            frames.push(RawFrame {
                pc: lr,
                how: How::LinkRegister,
                exact: false,
            });
            (pc, exact) = (lr, false);
            continue;
        }
        // 3. Frame pointer: [fp] = caller's fp, [fp + 8] = return address (both arches). In
        // the innermost frame, a return address below fp belongs to a leaf that made no frame
        // of its own (memcpy in a library without CFI at hand): taken first, as a scan.
        if frames.len() == 1
            && let Some(fp) = regs[fp_reg].filter(|&fp| fp > sp)
            && let Some((slot, ret)) = scan(p, sp, fp)
        {
            frames.push(RawFrame {
                pc: ret,
                how: How::StackScan,
                exact: false,
            });
            regs[sp_reg] = Some(slot + 8);
            (pc, exact) = (ret, false);
            continue;
        }
        if let Some(fp) = regs[fp_reg].filter(|&fp| fp >= sp && fp.is_multiple_of(8))
            && let (Some(next), Some(ret)) = (p.word(fp), p.word(fp.wrapping_add(8)))
            && (next > fp || next == 0)
            && p.is_code(ret)
            && p.is_after_call(ret) != Some(false)
        {
            frames.push(RawFrame {
                pc: ret,
                how: How::FramePointer,
                exact: false,
            });
            regs[sp_reg] = Some(fp + 16);
            regs[fp_reg] = Some(next);
            (pc, exact) = (ret, false);
            continue;
        }
        // 4. Scan up from sp: first for a signal trampoline (the kernel put it there as the
        // handler's return address: the frames below it are the handler's, whose module's CFI
        // is not at hand), by its CFI, else by the signal frame's own layout (the
        // trampoline's module not at hand either: the interrupted frame's registers are read
        // from it), then for a word that points just after a call.
        let to = sp.saturating_add(SCAN_WORDS * 8);
        let by_cfi = scan_for_signal_return(p, sp, to);
        if by_cfi.is_none()
            && let Some((_, tramp, saved)) = scan_for_signal_frame(p, arch, sp, to)
            && frames.len() + 2 <= max_frames
        {
            let at = saved[16].unwrap_or(0);
            for (pc, exact) in [(tramp, false), (at, true)] {
                frames.push(RawFrame {
                    pc,
                    how: How::SignalFrame,
                    exact,
                });
            }
            (pc, exact, regs) = (at, true, saved);
            continue;
        }
        let Some((slot, ret)) = by_cfi.or_else(|| scan(p, sp, to)) else {
            break;
        };
        frames.push(RawFrame {
            pc: ret,
            how: How::StackScan,
            exact: false,
        });
        regs[sp_reg] = Some(slot + 8);
        (pc, exact) = (ret, false);
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

    /// A stack in a window, code at [0x4000, 0x6000), CFI (a fixed 16-byte frame: ra at
    /// CFA - 8, CFA = sp + 16) only for pcs in [0x5800, 0x6000).
    struct Fake(Window);
    impl Process for Fake {
        fn is_code(&self, a: u64) -> bool {
            (0x4000..0x6000).contains(&a)
        }
        fn is_after_call(&mut self, _: u64) -> Option<bool> {
            None
        }
        fn word(&mut self, a: u64) -> Option<u64> {
            self.0.word(a)
        }
        fn window_word(&self, a: u64) -> Option<u64> {
            self.0.word(a)
        }
        fn is_signal_return(&mut self, _: u64) -> bool {
            false
        }
        fn cfi_step(&mut self, pc: u64, _: bool, regs: &[Option<u64>]) -> Step {
            if !(0x5800..0x6000).contains(&pc) {
                return Step::NoInfo;
            }
            let cfa = regs[7].unwrap() + 16;
            let Some(ra) = self.0.word(cfa - 8) else {
                return Step::NoInfo;
            };
            if ra == 0 {
                return Step::Outermost;
            }
            let mut next = regs.to_vec();
            next[7] = Some(cfa);
            Step::Caller {
                pc: ra,
                regs: next,
                signal: false,
            }
        }
    }

    fn put(b: &mut [u8], at: usize, v: u64) {
        b[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }

    #[test]
    fn leaf_scan_then_frame_pointers_then_scan_where_the_chain_ends() {
        // sp = 0x1000; a leaf's return address at 0x1008; the frame chain starts at
        // fp = 0x1020 and ends at 0x1040 (next fp 0); a last word at 0x1058.
        let mut bytes = vec![0u8; 0x60];
        put(&mut bytes, 0x08, 0x5000);
        put(&mut bytes, 0x20, 0x1040);
        put(&mut bytes, 0x28, 0x5100);
        put(&mut bytes, 0x40, 0);
        put(&mut bytes, 0x48, 0x5200);
        put(&mut bytes, 0x58, 0x5300);
        let t = ThreadStatus {
            pc: Some(0x4000),
            sp: Some(0x1000),
            fp: Some(0x1020),
            ..ThreadStatus::default()
        };
        let mut p = Fake(Window {
            base: 0x1000,
            bytes,
        });
        let f = walk(Arch::X86_64, &t, &mut p, 16);
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

    #[test]
    fn cfi_frames_come_first_and_an_undefined_return_address_ends_the_walk() {
        // pc 0x5900 has CFI: ra at 0x1008 (0x5a00, CFI again), then ra at 0x1018 = 0:
        // the outermost frame; the stale code word above it is not scanned.
        let mut bytes = vec![0u8; 0x40];
        put(&mut bytes, 0x08, 0x5a00);
        put(&mut bytes, 0x18, 0);
        put(&mut bytes, 0x28, 0x4400);
        let t = ThreadStatus {
            pc: Some(0x5900),
            sp: Some(0x1000),
            fp: Some(0x77),
            ..ThreadStatus::default()
        };
        let mut p = Fake(Window {
            base: 0x1000,
            bytes,
        });
        let f = walk(Arch::X86_64, &t, &mut p, 16);
        let got: Vec<(u64, How)> = f.iter().map(|f| (f.pc, f.how)).collect();
        assert_eq!(got, vec![(0x5900, How::Pc), (0x5a00, How::Cfi)]);
    }
}
