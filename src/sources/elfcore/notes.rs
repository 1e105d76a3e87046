//! Decoding of a Linux core's PT_NOTE segments (64-bit little-endian: x86-64 and aarch64):
//! NT_PRSTATUS, NT_SIGINFO, NT_PRPSINFO, NT_FILE, NT_AUXV. Every field may be missing or cut
//! short; a short or malformed note becomes a warning and the notes after it are still read.

use crate::model::{Text, text};

pub const NT_PRSTATUS: u32 = 1;
pub const NT_PRPSINFO: u32 = 3;
pub const NT_AUXV: u32 = 6;
pub const NT_SIGINFO: u32 = 0x5349_4749;
pub const NT_FILE: u32 = 0x4649_4c45;
pub const NT_GNU_BUILD_ID: u32 = 3;

pub const AT_ENTRY: u64 = 9;
pub const AT_EXECFN: u64 = 31;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    X86_64,
    Aarch64,
    /// Another machine: notes whose layout is arch-independent are still read.
    Other(u16),
}

impl Arch {
    pub fn from_machine(m: u16) -> Arch {
        match m {
            62 => Arch::X86_64,
            183 => Arch::Aarch64,
            m => Arch::Other(m),
        }
    }
    pub fn name(self) -> String {
        match self {
            Arch::X86_64 => "x86_64".into(),
            Arch::Aarch64 => "aarch64".into(),
            Arch::Other(m) => format!("elf-machine-{m}"),
        }
    }
}

/// Little-endian reads that return None past the end instead of panicking.
pub fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    let s = b.get(off..off.checked_add(2)?)?;
    Some(u16::from_le_bytes([s[0], s[1]]))
}
pub fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    let s = b.get(off..off.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}
pub fn i32_at(b: &[u8], off: usize) -> Option<i32> {
    u32_at(b, off).map(|v| v as i32)
}
pub fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    let s = b.get(off..off.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

/// A C string in a fixed-size field: up to the first NUL, lossily decoded.
fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// One raw note: owner name, type, descriptor bytes.
pub struct RawNote<'a> {
    pub name: &'a [u8],
    pub ntype: u32,
    pub desc: &'a [u8],
}

/// Iterate the notes of a segment. Stops (and says so) at the first note that runs past
/// the end of the segment: the rest cannot be framed reliably.
pub fn iter_notes<'a>(seg: &'a [u8], warnings: &mut Vec<Text>) -> Vec<RawNote<'a>> {
    let mut out = Vec::new();
    let mut off = 0usize;
    let align4 = |v: usize| v.checked_add(3).map(|x| x & !3);
    while off < seg.len() {
        let (Some(namesz), Some(descsz), Some(ntype)) =
            (u32_at(seg, off), u32_at(seg, off + 4), u32_at(seg, off + 8))
        else {
            warnings.push(text!(
                "note header cut short at segment offset {off}",
                "note 头在段内偏移 {off} 处被截断"
            ));
            break;
        };
        let name_start = off + 12;
        let framed = (|| {
            let name_end = name_start.checked_add(namesz as usize)?;
            let desc_start = align4(name_end)?;
            let desc_end = desc_start.checked_add(descsz as usize)?;
            let next = align4(desc_end)?;
            Some((name_end, desc_start, desc_end, next))
        })();
        let Some((name_end, desc_start, desc_end, next)) = framed else {
            warnings.push(text!(
                "note at segment offset {off} has impossible sizes",
                "段内偏移 {off} 处的 note 大小不合理"
            ));
            break;
        };
        let (Some(name), Some(desc)) =
            (seg.get(name_start..name_end), seg.get(desc_start..desc_end))
        else {
            warnings.push(text!(
                "note of type {ntype:#x} at segment offset {off} runs past the end of the notes ({} bytes)",
                "段内偏移 {off} 处类型为 {ntype:#x} 的 note 超出了 note 段的末尾（{} 字节）",
                seg.len()
            ));
            break;
        };
        let name = name.strip_suffix(&[0]).unwrap_or(name);
        out.push(RawNote { name, ntype, desc });
        off = next;
    }
    out
}

/// One thread's NT_PRSTATUS.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThreadStatus {
    pub tid: Option<i32>,
    pub cursig: Option<i32>,
    pub pc: Option<u64>,
    pub sp: Option<u64>,
    pub fp: Option<u64>,
    /// aarch64's link register (x30): the caller of a leaf function.
    pub lr: Option<u64>,
    /// x86-64 `fs_base`: glibc's thread pointer, the value of `pthread_self()`.
    pub thread_pointer: Option<u64>,
    /// The general registers by DWARF number (x86-64: rax..r15, 16 = rip; aarch64: x0..x30,
    /// 31 = sp), for the CFI unwinder. Empty when the note is cut short or the arch unknown.
    pub dwarf: Vec<Option<u64>>,
}

/// Where DWARF register n of x86-64 is in `user_regs_struct` (r15, r14, … rip, cs, eflags, rsp).
const X86_64_DWARF_TO_USER: [usize; 17] =
    [10, 12, 11, 5, 13, 14, 4, 19, 9, 8, 7, 6, 3, 2, 1, 0, 16];

const PR_REG: usize = 112;

pub fn parse_prstatus(d: &[u8], arch: Arch) -> ThreadStatus {
    let mut t = ThreadStatus {
        tid: i32_at(d, 32),
        cursig: u16_at(d, 12).map(|s| s as i16 as i32),
        ..ThreadStatus::default()
    };
    let reg = |i: usize| u64_at(d, PR_REG + 8 * i);
    match arch {
        Arch::X86_64 => {
            t.fp = reg(4);
            t.pc = reg(16);
            t.sp = reg(19);
            t.thread_pointer = reg(21);
            t.dwarf = X86_64_DWARF_TO_USER.iter().map(|&i| reg(i)).collect();
        }
        Arch::Aarch64 => {
            t.fp = reg(29);
            t.lr = reg(30);
            t.sp = reg(31);
            t.pc = reg(32);
            t.dwarf = (0..32).map(reg).collect();
        }
        Arch::Other(_) => {}
    }
    t
}

/// NT_SIGINFO: the signal that killed the process, how, and where.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SigInfo {
    pub signo: i32,
    pub errno: Option<i32>,
    pub code: Option<i32>,
    /// `si_addr` for signals that carry one.
    pub addr: Option<u64>,
    /// `si_pid` / `si_uid` for signals sent by a process (code <= 0).
    pub sender_pid: Option<i32>,
    pub sender_uid: Option<u32>,
}

pub fn parse_siginfo(d: &[u8]) -> Option<SigInfo> {
    let signo = i32_at(d, 0)?;
    let code = i32_at(d, 8);
    let mut s = SigInfo {
        signo,
        errno: i32_at(d, 4),
        code,
        ..SigInfo::default()
    };
    match code {
        Some(c) if c <= 0 => {
            s.sender_pid = i32_at(d, 16);
            s.sender_uid = u32_at(d, 20);
        }
        Some(_) if super::signals::has_fault_addr(signo) => s.addr = u64_at(d, 16),
        _ => {}
    }
    Some(s)
}

/// NT_PRPSINFO: process name, arguments, owner.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PsInfo {
    pub pid: Option<i32>,
    pub uid: Option<u32>,
    pub fname: Option<String>,
    pub args: Option<String>,
}

pub fn parse_prpsinfo(d: &[u8]) -> PsInfo {
    PsInfo {
        uid: u32_at(d, 16),
        pid: i32_at(d, 24),
        fname: d.get(40..56).map(cstr).filter(|s| !s.is_empty()),
        args: d
            .get(56..)
            .map(|b| cstr(&b[..b.len().min(80)]).trim_end().to_string())
            .filter(|s| !s.is_empty()),
    }
}

/// One NT_FILE entry: a file mapped at [start, end) from byte `offset` of the file.
#[derive(Debug, Clone, PartialEq)]
pub struct FileMapping {
    pub start: u64,
    pub end: u64,
    pub offset: u64,
    pub path: String,
}

pub fn parse_nt_file(d: &[u8], warnings: &mut Vec<Text>) -> Vec<FileMapping> {
    let (Some(count), Some(page)) = (u64_at(d, 0), u64_at(d, 8)) else {
        warnings.push(text!(
            "NT_FILE note is cut short: no mapped files",
            "NT_FILE note 被截断：没有映射文件信息"
        ));
        return Vec::new();
    };
    // Each entry needs 24 bytes of triple plus at least one byte of name.
    let fits = (d.len().saturating_sub(16) / 25) as u64;
    if count > fits {
        warnings.push(text!(
            "NT_FILE claims {count} mappings but holds room for at most {fits}",
            "NT_FILE 声称有 {count} 个映射，但最多只容得下 {fits} 个"
        ));
    }
    let count = count.min(fits) as usize;
    let names_at = 16 + count * 24;
    let mut names = d.get(names_at..).unwrap_or(&[]).split(|&c| c == 0);
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let base = 16 + i * 24;
        let (Some(start), Some(end), Some(pgoff)) =
            (u64_at(d, base), u64_at(d, base + 8), u64_at(d, base + 16))
        else {
            break;
        };
        let Some(name) = names.next() else {
            warnings.push(text!(
                "NT_FILE names stop after {i} of {count} mappings",
                "NT_FILE 的文件名在 {count} 个映射中的第 {i} 个之后中断"
            ));
            break;
        };
        out.push(FileMapping {
            start,
            end,
            offset: pgoff.saturating_mul(page),
            path: String::from_utf8_lossy(name).into_owned(),
        });
    }
    out
}

pub fn parse_auxv(d: &[u8]) -> Vec<(u64, u64)> {
    d.chunks_exact(16)
        .filter_map(|c| Some((u64_at(c, 0)?, u64_at(c, 8)?)))
        .take_while(|&(k, _)| k != 0)
        .collect()
}

/// Everything the notes say.
#[derive(Debug, Default)]
pub struct Notes {
    pub threads: Vec<ThreadStatus>,
    pub siginfo: Option<SigInfo>,
    pub psinfo: Option<PsInfo>,
    pub files: Option<Vec<FileMapping>>,
    pub auxv: Option<Vec<(u64, u64)>>,
}

pub fn parse_notes(seg: &[u8], arch: Arch, notes: &mut Notes, warnings: &mut Vec<Text>) {
    for n in iter_notes(seg, warnings) {
        if n.name != b"CORE" && n.name != b"LINUX" {
            continue;
        }
        match n.ntype {
            NT_PRSTATUS if n.name == b"CORE" => {
                let t = parse_prstatus(n.desc, arch);
                if t.pc.is_none() && !matches!(arch, Arch::Other(_)) {
                    warnings.push(text!(
                        "NT_PRSTATUS of thread {} is cut short ({} bytes): no registers",
                        "线程 {} 的 NT_PRSTATUS 被截断（{} 字节）：没有寄存器",
                        t.tid.map_or("?".to_string(), |t| t.to_string()),
                        n.desc.len()
                    ));
                }
                notes.threads.push(t);
            }
            NT_PRPSINFO if n.name == b"CORE" => notes.psinfo = Some(parse_prpsinfo(n.desc)),
            NT_SIGINFO => match parse_siginfo(n.desc) {
                Some(s) => notes.siginfo = Some(s),
                None => warnings.push(text!(
                    "NT_SIGINFO note is cut short",
                    "NT_SIGINFO note 被截断"
                )),
            },
            NT_FILE => notes.files = Some(parse_nt_file(n.desc, warnings)),
            NT_AUXV => notes.auxv = Some(parse_auxv(n.desc)),
            _ => {}
        }
    }
}

/// The GNU build-id in a segment of notes, if any.
pub fn build_id(seg: &[u8]) -> Option<Vec<u8>> {
    let mut ignored = Vec::new();
    iter_notes(seg, &mut ignored)
        .into_iter()
        .find(|n| n.name == b"GNU" && n.ntype == NT_GNU_BUILD_ID && !n.desc.is_empty())
        .map(|n| n.desc.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(name: &[u8], ntype: u32, desc: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&(name.len() as u32 + 1).to_le_bytes());
        v.extend_from_slice(&(desc.len() as u32).to_le_bytes());
        v.extend_from_slice(&ntype.to_le_bytes());
        v.extend_from_slice(name);
        v.push(0);
        while v.len() % 4 != 0 {
            v.push(0);
        }
        v.extend_from_slice(desc);
        while v.len() % 4 != 0 {
            v.push(0);
        }
        v
    }

    #[test]
    fn nt_file_entries_pair_with_their_names() {
        let mut d = Vec::new();
        for v in [2u64, 4096, 0x1000, 0x2000, 0, 0x5000, 0x6000, 3] {
            d.extend_from_slice(&v.to_le_bytes());
        }
        d.extend_from_slice(b"/a\0/dev/shm/x\0");
        let mut w = Vec::new();
        let f = parse_nt_file(&d, &mut w);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(f[1].path, "/dev/shm/x");
        assert_eq!(f[1].offset, 3 * 4096);
    }

    #[test]
    fn a_note_running_past_the_segment_stops_the_walk_with_a_warning() {
        let mut seg = note(b"CORE", NT_SIGINFO, &[7, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0]);
        let good = seg.len();
        seg.extend(note(b"CORE", NT_FILE, &[0; 40]));
        seg.truncate(good + 20);
        let mut w = Vec::new();
        let mut n = Notes::default();
        parse_notes(&seg, Arch::X86_64, &mut n, &mut w);
        assert_eq!(n.siginfo.as_ref().map(|s| s.signo), Some(7));
        assert!(n.files.is_none());
        assert_eq!(w.len(), 1, "{w:?}");
    }

    #[test]
    fn prstatus_registers_follow_each_arch_layout() {
        // elf_prstatus: pid at 32, pr_reg at 112. x86-64 user_regs_struct: rbp #4, rip #16,
        // rsp #19. aarch64 user_pt_regs: x29 #29, x30 #30, sp #31, pc #32.
        let mut d = vec![0u8; 112 + 34 * 8];
        d[12] = 7;
        d[32..36].copy_from_slice(&4242u32.to_le_bytes());
        for i in 0..34 {
            let at = 112 + 8 * i;
            d[at..at + 8].copy_from_slice(&(0x1000 + i as u64).to_le_bytes());
        }
        let x = parse_prstatus(&d, Arch::X86_64);
        assert_eq!((x.tid, x.cursig), (Some(4242), Some(7)));
        assert_eq!(
            (x.fp, x.pc, x.sp),
            (Some(0x1004), Some(0x1010), Some(0x1013))
        );
        let a = parse_prstatus(&d, Arch::Aarch64);
        assert_eq!(
            (a.fp, a.lr, a.sp, a.pc),
            (Some(0x101d), Some(0x101e), Some(0x101f), Some(0x1020))
        );
        let short = parse_prstatus(&d[..100], Arch::Aarch64);
        assert_eq!((short.tid, short.pc), (Some(4242), None));
    }

    #[test]
    fn huge_note_sizes_do_not_overflow() {
        let mut seg = Vec::new();
        for v in [u32::MAX, u32::MAX, 1] {
            seg.extend_from_slice(&v.to_le_bytes());
        }
        let mut w = Vec::new();
        assert!(iter_notes(&seg, &mut w).is_empty());
        assert_eq!(w.len(), 1);
    }
}
