//! ELF core dumps: from a core file to the signal, the fault address, the file mapped there, the
//! executable and a labelled stack of every thread (crashing thread first), unwound by each
//! module's CFI where its file is at hand, named from its symbols and DWARF. Reads only the
//! headers, the notes and the few pages the stack walks need (positioned reads; a compressed
//! core is streamed forward), and of the mapped files only headers, symbol tables, CFI and
//! DWARF sections; it must never read a core whole, panic on damaged input, or guess a symbol
//! it cannot verify (a module file is used only when its build-id matches the core's).
//!
//! Output: `CoreAnalysis` = facts (`core.*`, see `facts::CATALOG`), warnings (what was missing),
//! and a serializable `CoreSummary` for the report.

pub mod dwarf;
pub(crate) mod input;
pub mod locate;
pub mod notes;
pub mod owner;
pub mod python;
pub(crate) mod signals;
pub(crate) mod stack;
pub(crate) mod symbols;
pub(crate) mod text;
pub mod unwind;

use crate::model::{Fact, Text, text};
use input::{CoreBytes, FileBytes, SliceBytes, Stream};
use notes::{Arch, FileMapping, Notes, ThreadStatus};
use serde::Serialize;
use stack::{RawFrame, Window};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use symbols::ElfImage;

/// How to analyse a core.
#[derive(Debug, Clone)]
pub struct CoreOptions {
    /// Root under which the crashed machine's files live (`/sysroot` + `/usr/lib/libc.so.6`).
    pub sysroot: Option<PathBuf>,
    /// Directories searched by base name for mapped files (a folder of copied libraries).
    pub search_paths: Vec<PathBuf>,
    /// Open mapped ELF files (sysroot, search paths, then this machine) to name functions.
    pub symbolize: bool,
    /// Stack bytes read above the crashing thread's sp for the walk.
    pub stack_bytes: u64,
    pub max_frames: usize,
}

impl Default for CoreOptions {
    fn default() -> Self {
        CoreOptions {
            sysroot: None,
            search_paths: Vec::new(),
            symbolize: true,
            stack_bytes: 1 << 20,
            max_frames: 64,
        }
    }
}

#[derive(Debug, Default)]
pub struct CoreAnalysis {
    pub facts: Vec<Fact>,
    /// What could not be read, or read only in part. Never fatal.
    pub warnings: Vec<Text>,
    pub summary: CoreSummary,
}

/// One frame of the crashing thread's stack.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StackFrame {
    pub index: usize,
    /// Hex address: the pc for frame 0, a return address for the others.
    pub pc: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// Hex offset of `pc` from the module's load address (`libc.so.6+0x9e6a1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<String>,
    /// `function+0xoff`, only from a file whose build-id matches (or could not be checked:
    /// see the module's `symbols`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// The symbol as the ELF file spells it, when `symbol` is its demangled C++/Rust name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mangled: Option<String>,
    /// How the frame was found: `pc` (frame 0), `cfi` (the module's call-frame
    /// information), `link-register` (aarch64), `frame-pointer`, or `stack-scan` (a guess).
    pub how: &'static str,
    /// The source line of the pc (of the call, for a return address), from DWARF, in the
    /// function the code belongs to; the functions inlined into it at that place are in
    /// `inlined`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Functions inlined at this pc, innermost first, each with its own source line.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inlined: Vec<InlinedFrame>,
    /// The part of the training stack the module is (`libtorch`, `NCCL`, `CUDA driver`, …,
    /// `libc`, `CPython`); absent for the user's own code and other libraries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub component: Option<&'static str>,
}

/// A function inlined into a frame, from DWARF.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InlinedFrame {
    pub function: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// A thread other than the crashing one, and its stack.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadStack {
    pub tid: Option<i32>,
    pub frames: Vec<StackFrame>,
}

/// A mapped file that a frame falls in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModuleInfo {
    pub path: String,
    pub base: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_id: Option<String>,
    /// `build-id-match`, `unverified` (the core kept no build-id to compare),
    /// `build-id-mismatch`, `not-found`, `not-read`.
    pub symbols: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbol_file: Option<String>,
    /// The file source lines were read from (the module itself, or its separate debug file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub debug_file: Option<String>,
}

/// What a core says, for people and JSON. Every field may be missing in a damaged core.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CoreSummary {
    pub arch: Option<String>,
    pub signal: Option<String>,
    pub signo: Option<i32>,
    /// `si_code` name, e.g. `BUS_ADRERR`.
    pub code: Option<String>,
    /// What the code means, e.g. "nonexistent physical address".
    pub meaning: Option<String>,
    pub fault_addr: Option<String>,
    pub fault_mapping: Option<String>,
    /// Who sent the signal, for signals sent by a process (`SI_USER`, `SI_TKILL`).
    pub sender_pid: Option<i32>,
    pub exe: Option<String>,
    /// `AT_EXECFN`: the path as the program was invoked (may be a symlink or venv path).
    pub execfn: Option<String>,
    pub process_name: Option<String>,
    pub args: Option<String>,
    pub uid: Option<u32>,
    pub pid: Option<i32>,
    pub crashing_tid: Option<i32>,
    pub thread_count: usize,
    pub mapped_files: usize,
    /// The module the crashing pc is in.
    pub crash_module: Option<String>,
    pub modules: Vec<ModuleInfo>,
    /// The crashing thread's stack, innermost first.
    pub frames: Vec<StackFrame>,
    /// Every other thread's stack, in the core's order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub other_threads: Vec<ThreadStack>,
    /// Every thread's Python stack, the crashing thread first, when the process was a CPython
    /// whose `libpython`/`python` file (build-id checked) is at hand.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub python: Option<python::PythonStacks>,
    /// What systemd-coredump recorded about the core (its file name and `user.coredump.*`
    /// xattrs), when it is one of its files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coredump: Option<locate::CoredumpMeta>,
    /// The rank or DataLoader worker whose core it is, tied by pid to the lines that say so
    /// (`owner::tie`, once every input is read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<owner::CoreOwner>,
    /// The `coredumpctl info` entry of the same pid and executable, when one was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coredumpctl: Option<locate::CoredumpInfo>,
}

/// Analyse a core file: raw ELF, or compressed with gzip, zstd, xz or lz4 (streamed); with
/// systemd-coredump's metadata when it is one of its files.
pub fn analyze_core(path: &Path, opts: &CoreOptions) -> CoreAnalysis {
    let mut a = analyze_core_file(path, opts);
    a.summary.coredump = locate::coredump_meta(path);
    a
}

fn analyze_core_file(path: &Path, opts: &CoreOptions) -> CoreAnalysis {
    let mut a = CoreAnalysis::default();
    let mut f = match File::open(path) {
        Ok(f) => f,
        Err(e) => {
            a.warnings
                .push(text!("cannot open core: {e}", "无法打开 core：{e}"));
            return a;
        }
    };
    // Enough for every magic `sniff` knows (bzip2's is ten bytes).
    let mut head = [0u8; 16];
    let mut n = 0;
    while n < head.len() {
        match f.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) => {
                a.warnings
                    .push(text!("cannot read core: {e}", "无法读取 core：{e}"));
                return a;
            }
        }
    }
    match input::sniff(&head[..n]) {
        input::Container::Elf => analyze(&mut FileBytes(f), opts, true),
        c @ (input::Container::Gzip
        | input::Container::Zstd
        | input::Container::Xz
        | input::Container::Lz4
        | input::Container::Bzip2) => match File::open(path).and_then(|f| Stream::new(f, c)) {
            Ok(mut s) => analyze(&mut s, opts, true),
            Err(e) => {
                let name = c.compression().unwrap_or("compressed");
                a.warnings.push(text!(
                    "cannot open {name}-compressed core: {e}",
                    "无法打开 {name} 压缩的 core：{e}"
                ));
                a
            }
        },
        input::Container::Other if n == 0 => {
            a.warnings.push(text!(
                "empty file: no core to read",
                "空文件：没有可读取的 core"
            ));
            a
        }
        input::Container::Other => {
            a.warnings.push(text!(
                "not an ELF core (no ELF magic, not gzip/zstd/xz/lz4/bzip2): nothing read",
                "不是 ELF core（没有 ELF 魔数，也不是 gzip/zstd/xz/lz4/bzip2）：没有读取任何内容"
            ));
            a
        }
    }
}

/// Analyse a core held in memory, without touching the file system (no symbols). The entry
/// point of the fuzz target: must return for any input, never panic.
pub fn parse_core_bytes(bytes: &[u8]) -> CoreAnalysis {
    let opts = CoreOptions {
        symbolize: false,
        ..CoreOptions::default()
    };
    analyze(&mut SliceBytes(bytes), &opts, false)
}

/// A PT_LOAD segment: memory at [vaddr, vaddr+memsz), of which the first `filesz` bytes are
/// in the core at `offset` (the kernel leaves out file-backed text and shared file pages).
#[derive(Debug, Clone, Copy)]
struct Load {
    vaddr: u64,
    memsz: u64,
    offset: u64,
    filesz: u64,
    exec: bool,
}

impl Load {
    fn contains(&self, a: u64) -> bool {
        a >= self.vaddr && a - self.vaddr < self.memsz
    }
}

/// The process's memory as far as the core holds it.
struct Memory<'a> {
    loads: Vec<Load>,
    src: &'a mut dyn CoreBytes,
    cache: Vec<(u64, Vec<u8>)>,
}

impl Memory<'_> {
    fn load_at(&self, a: u64) -> Option<&Load> {
        let i = self.loads.partition_point(|l| l.vaddr <= a);
        self.loads.get(i.checked_sub(1)?).filter(|l| l.contains(a))
    }

    /// The part of [a, a+len) the core holds, clipped at the end of its segment's dumped bytes.
    fn file_range(&self, a: u64, len: usize) -> Option<(u64, usize)> {
        let l = self.load_at(a)?;
        let rel = a - l.vaddr;
        if rel >= l.filesz {
            return None;
        }
        let n = (l.filesz - rel).min(len as u64) as usize;
        Some((l.offset.checked_add(rel)?, n))
    }

    /// Read the given ranges in file order (the gzip stream cannot go back) into the cache.
    fn prefetch(&mut self, ranges: &[(u64, usize)], warnings: &mut Vec<Text>) {
        let mut want: Vec<(u64, u64, usize)> = ranges
            .iter()
            .filter_map(|&(a, len)| self.file_range(a, len).map(|(o, n)| (o, a, n)))
            .collect();
        want.sort();
        for (off, a, n) in want {
            match self.src.read_at(off, n) {
                Ok(b) if !b.is_empty() => self.cache.push((a, b)),
                Ok(_) => {}
                Err(e) => warnings.push(e.prefixed(
                    &format!("memory at {a:#x}: "),
                    &format!("地址 {a:#x} 处的内存："),
                )),
            }
        }
    }

    fn read(&mut self, a: u64, len: usize) -> Option<Vec<u8>> {
        let end = a.checked_add(len as u64)?;
        if let Some((s, d)) = self
            .cache
            .iter()
            .find(|(s, d)| *s <= a && end <= s.saturating_add(d.len() as u64))
        {
            let i = (a - s) as usize;
            return Some(d[i..i + len].to_vec());
        }
        let (off, n) = self.file_range(a, len)?;
        if n < len {
            return None;
        }
        self.src.read_at(off, n).ok().filter(|b| b.len() == len)
    }

    /// The longest prefix of [a, a+len) that the core holds.
    fn read_prefix(&mut self, a: u64, len: usize) -> Option<Vec<u8>> {
        if let Some((s, d)) = self
            .cache
            .iter()
            .find(|(s, d)| *s <= a && a < s.saturating_add(d.len() as u64))
        {
            let i = (a - s) as usize;
            return Some(d[i..d.len().min(i + len)].to_vec());
        }
        let (off, n) = self.file_range(a, len)?;
        self.src.read_at(off, n).ok().filter(|b| !b.is_empty())
    }
}

/// A mapped file, as NT_FILE lists it.
#[derive(Debug, Clone)]
struct Module {
    path: String,
    base: u64,
    maps: Vec<FileMapping>,
    build_id: Option<Vec<u8>>,
}

const PAGE: usize = 4096;

fn hex(v: u64) -> String {
    format!("{v:#x}")
}

/// Reads a core in its phases: the ELF header, the program headers, the notes, the memory
/// the rest needs (one ascending pass), the summary (signal, fault, process), every thread's
/// stack (the crashing one first), the Python stacks, and the modules the frames used.
fn analyze(src: &mut dyn CoreBytes, opts: &CoreOptions, use_fs: bool) -> CoreAnalysis {
    let mut a = CoreAnalysis::default();
    let Some((head, arch)) = elf_head(src, &mut a.warnings) else {
        return a;
    };
    a.summary.arch = Some(arch.name());
    let Some(Segments { loads, notes }) = segments(src, &head, &mut a.warnings) else {
        return a;
    };
    let nt = read_notes(src, &notes, arch, &mut a.warnings);

    let signo = nt
        .siginfo
        .as_ref()
        .map(|s| s.signo)
        .or_else(|| nt.threads.iter().find_map(|t| t.cursig.filter(|&c| c > 0)));
    let crash_ix = nt
        .threads
        .iter()
        .position(|t| signo.is_some() && t.cursig == signo)
        .unwrap_or(0);
    let mut files: Vec<FileMapping> = nt.files.clone().unwrap_or_default();
    files.sort_by_key(|f| f.start);
    let mut modules = modules_of(&files);
    let mut mem = Memory {
        loads,
        src,
        cache: Vec::new(),
    };
    let windows = prefetch(&mut mem, &nt, crash_ix, &mut modules, opts, &mut a.warnings);
    summarize(&mut a.summary, &nt, signo, crash_ix, &files, &mut mem);

    if nt.threads.get(crash_ix).is_some_and(|t| t.sp.is_some())
        && windows.get(crash_ix).is_none_or(Option::is_none)
    {
        a.warnings.push(text!(
            "the crashing thread's stack memory is not in the core: frames from registers only",
            "崩溃线程的栈内存不在 core 中：只能根据寄存器给出栈帧"
        ));
    }
    let mut images: BTreeMap<String, Option<ElfImage>> = BTreeMap::new();
    let mut lines: BTreeMap<String, Option<(dwarf::Lines, Option<String>)>> = BTreeMap::new();
    let walk = Walk {
        arch,
        files: &files,
        modules: &modules,
        windows: &windows,
        opts,
        use_fs,
        vdso: aux(&nt, 33),
    };
    let used = walk.stacks(&nt, crash_ix, &mut mem, &mut images, &mut lines, &mut a);
    if use_fs && opts.symbolize {
        let threads: Vec<python::CoreThread> = nt
            .threads
            .iter()
            .map(|t| python::CoreThread {
                tid: t.tid,
                thread_pointer: t.thread_pointer,
            })
            .collect();
        a.summary.python = python_stacks(
            &mut mem,
            &modules,
            &mut images,
            opts,
            &threads,
            a.summary.crashing_tid,
            &mut a.warnings,
        );
    }
    module_infos(&mut a, &used, &modules, &images, &lines, opts, use_fs);
    a.facts = facts_of(&a.summary);
    a
}

/// The auxiliary vector's value of `key`.
fn aux(nt: &Notes, key: u64) -> Option<u64> {
    nt.auxv
        .as_deref()
        .unwrap_or_default()
        .iter()
        .find(|(t, _)| *t == key)
        .map(|(_, v)| *v)
}

/// The ELF header's first 64 bytes and the core's architecture, or `None` (with the warning
/// that says why nothing is read) when this is no 64-bit little-endian core.
fn elf_head(src: &mut dyn CoreBytes, w: &mut Vec<Text>) -> Option<(Vec<u8>, Arch)> {
    let head = match src.read_at(0, 64) {
        Ok(h) => h,
        Err(e) => {
            w.push(e.prefixed("cannot read the ELF header: ", "无法读取 ELF 头："));
            return None;
        }
    };
    if head.is_empty() {
        w.push(text!(
            "empty file: no core to read",
            "空文件：没有可读取的 core"
        ));
        return None;
    }
    if !head.starts_with(b"\x7fELF") {
        w.push(text!(
            "not an ELF file: nothing read",
            "不是 ELF 文件：没有读取任何内容"
        ));
        return None;
    }
    if head.len() < 64 {
        let n = head.len();
        w.push(text!(
            "core cut short in its ELF header ({n} of 64 bytes): nothing read",
            "core 在 ELF 头处被截断（64 字节中只有 {n} 字节）：没有读取任何内容"
        ));
        return None;
    }
    let (class, data) = (head[4], head[5]);
    if class != 2 || data != 1 {
        let bits = if class == 1 { 32 } else { 64 };
        let (end, end_zh) = if data == 2 {
            ("big", "大端")
        } else {
            ("little", "小端")
        };
        w.push(text!(
            "only 64-bit little-endian cores are read (this one is {bits}-bit {end}-endian): nothing read",
            "只读取 64 位小端的 core（这个是 {bits} 位{end_zh}）：没有读取任何内容"
        ));
        return None;
    }
    let e_type = notes::u16_at(&head, 16)?;
    if e_type != 4 {
        let t = match e_type {
            1 => "ET_REL".to_string(),
            2 => "ET_EXEC".to_string(),
            3 => "ET_DYN".to_string(),
            t => t.to_string(),
        };
        w.push(text!(
            "ELF file of type {t} is not a core dump (ET_CORE = 4): nothing read",
            "类型为 {t} 的 ELF 文件不是 core dump（ET_CORE = 4）：没有读取任何内容"
        ));
        return None;
    }
    let arch = Arch::from_machine(notes::u16_at(&head, 18).unwrap_or(0));
    if let Arch::Other(m) = arch {
        w.push(text!(
            "core of an unsupported architecture (ELF machine {m}): registers and stack not read; signal, mappings and process info only",
            "不支持的架构的 core（ELF machine {m}）：未读取寄存器和栈；只有信号、内存映射和进程信息"
        ));
    }
    Some((head, arch))
}

/// What the program headers say: the PT_LOAD segments in address order and the PT_NOTE
/// segments' (offset, size) in file order.
struct Segments {
    loads: Vec<Load>,
    notes: Vec<(u64, u64)>,
}

/// The program headers read, or `None` when there are none to read.
fn segments(src: &mut dyn CoreBytes, head: &[u8], w: &mut Vec<Text>) -> Option<Segments> {
    // PN_XNUM (0xffff) means the real count is in section header 0.
    let phoff = notes::u64_at(head, 32).unwrap_or(0);
    let shoff = notes::u64_at(head, 40).unwrap_or(0);
    let phentsize = notes::u16_at(head, 54).unwrap_or(0) as usize;
    let mut phnum = notes::u16_at(head, 56).unwrap_or(0) as u64;
    if phnum == 0xffff {
        phnum = src
            .read_at(shoff.saturating_add(44), 4)
            .ok()
            .and_then(|b| notes::u32_at(&b, 0))
            .map_or(0, u64::from);
    }
    if phentsize != 56 || phnum == 0 {
        w.push(text!(
            "core has no usable program headers (count {phnum}, entry size {phentsize}): nothing read",
            "core 中没有可用的程序头（数量 {phnum}，表项大小 {phentsize}）：没有读取任何内容"
        ));
        return None;
    }
    let phnum = (phnum as usize).min(input::MAX_READ / 56);
    let phbuf = match src.read_at(phoff, phnum * 56) {
        Ok(b) => b,
        Err(e) => {
            w.push(e.prefixed("cannot read the program headers: ", "无法读取程序头："));
            return None;
        }
    };
    let got = phbuf.len() / 56;
    if got < phnum {
        w.push(text!(
            "core cut short in its program headers: {got} of {phnum} read",
            "core 在程序头处被截断：{phnum} 个中只读到 {got} 个"
        ));
    }
    let ctx = goblin::container::Ctx::new(
        goblin::container::Container::Big,
        goblin::container::Endian::Little,
    );
    let phdrs =
        goblin::elf::program_header::ProgramHeader::parse(&phbuf, 0, got, ctx).unwrap_or_default();
    let mut loads: Vec<Load> = phdrs
        .iter()
        .filter(|p| p.p_type == goblin::elf::program_header::PT_LOAD)
        .map(|p| Load {
            vaddr: p.p_vaddr,
            memsz: p.p_memsz,
            offset: p.p_offset,
            filesz: p.p_filesz.min(p.p_memsz),
            exec: p.p_flags & goblin::elf::program_header::PF_X != 0,
        })
        .collect();
    loads.sort_by_key(|l| l.vaddr);
    let needed = phdrs
        .iter()
        .map(|p| p.p_offset.saturating_add(p.p_filesz))
        .max()
        .unwrap_or(0);
    if let Some(size) = src.size()
        && size < needed
    {
        w.push(text!(
            "core is truncated: {size} bytes, its segments need {needed} (the dump was cut short, e.g. by RLIMIT_CORE or a full disk); memory past the cut is missing",
            "core 被截断：只有 {size} 字节，而其各段需要 {needed} 字节（转储被中途截断，例如受 RLIMIT_CORE 限制或磁盘已满）；截断处之后的内存缺失"
        ));
    }
    let mut note_segs: Vec<(u64, u64)> = phdrs
        .iter()
        .filter(|p| p.p_type == goblin::elf::program_header::PT_NOTE)
        .map(|p| (p.p_offset, p.p_filesz))
        .collect();
    note_segs.sort();
    Some(Segments {
        loads,
        notes: note_segs,
    })
}

/// Every note segment read into one `Notes`, with a warning for each part a reader needs and
/// the core lacks.
fn read_notes(
    src: &mut dyn CoreBytes,
    note_segs: &[(u64, u64)],
    arch: Arch,
    w: &mut Vec<Text>,
) -> Notes {
    let mut nt = Notes::default();
    if note_segs.is_empty() {
        w.push(text!(
            "core has no PT_NOTE segment: no signal, threads or mapped files",
            "core 中没有 PT_NOTE 段：没有信号、线程和映射文件信息"
        ));
    }
    for &(off, size) in note_segs {
        let want = (size as usize).min(input::MAX_READ);
        match src.read_at(off, want) {
            Ok(seg) => {
                if (seg.len() as u64) < size {
                    w.push(text!(
                        "core cut short in its notes: {} of {size} bytes at offset {off}",
                        "core 在 note 段处被截断：偏移 {off} 处的 {size} 字节中只读到 {} 字节",
                        seg.len()
                    ));
                }
                notes::parse_notes(&seg, arch, &mut nt, w);
            }
            Err(e) => w.push(e.prefixed(
                &format!("cannot read notes at offset {off}: "),
                &format!("无法读取偏移 {off} 处的 note："),
            )),
        }
    }
    if nt.threads.is_empty() {
        w.push(text!(
            "no NT_PRSTATUS: no threads, registers or stack",
            "没有 NT_PRSTATUS：没有线程、寄存器和栈"
        ));
    }
    if nt.siginfo.is_none() {
        w.push(text!(
            "no NT_SIGINFO: signal taken from NT_PRSTATUS, no si_code or fault address",
            "没有 NT_SIGINFO：信号取自 NT_PRSTATUS，没有 si_code 和出错地址"
        ));
    }
    if nt.files.is_none() {
        w.push(text!(
            "no NT_FILE: mapped files unknown, so no fault mapping, modules or symbols",
            "没有 NT_FILE：不知道映射了哪些文件，因此没有出错所在的映射、模块和符号"
        ));
    }
    if nt.psinfo.is_none() {
        w.push(text!(
            "no NT_PRPSINFO: process name and arguments unknown",
            "没有 NT_PRPSINFO：进程名和参数未知"
        ));
    }
    nt
}

/// Modules: every mapped file (sorted by start), with the load address of its offset-0
/// mapping.
fn modules_of(files: &[FileMapping]) -> Vec<Module> {
    let mut by_path: BTreeMap<&str, Module> = BTreeMap::new();
    for f in files {
        let m = by_path.entry(&f.path).or_insert_with(|| Module {
            path: f.path.clone(),
            base: f.start.saturating_sub(f.offset),
            maps: Vec::new(),
            build_id: None,
        });
        if f.offset == 0 {
            m.base = f.start;
        }
        m.maps.push(f.clone());
    }
    by_path.into_values().collect()
}

/// One ascending pass over the memory the rest needs: each thread's stack window, AT_EXECFN,
/// and the first page of each executable module (its ELF header and build-id, which it sets).
/// Returns the stack windows, by thread.
fn prefetch(
    mem: &mut Memory,
    nt: &Notes,
    crash_ix: usize,
    modules: &mut [Module],
    opts: &CoreOptions,
    w: &mut Vec<Text>,
) -> Vec<Option<Window>> {
    let is_exec = |mem: &Memory, addr: u64| mem.load_at(addr).is_some_and(|l| l.exec);
    let mut want: Vec<(u64, usize)> = Vec::new();
    // Stack windows: the crashing thread's `stack_bytes` above sp, a quarter of that for the
    // others (their frames are fewer and shallower: blocked in a wait).
    let windows_wanted: Vec<Option<(u64, usize)>> = nt
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let sp = t.sp?;
            let l = mem.load_at(sp)?;
            let avail = l.vaddr.saturating_add(l.filesz).saturating_sub(sp);
            let cap = if i == crash_ix {
                opts.stack_bytes
            } else {
                (opts.stack_bytes / 4).max(64 << 10)
            };
            Some((sp & !7, avail.min(cap) as usize))
        })
        .collect();
    want.extend(windows_wanted.iter().flatten());
    if let Some(p) = aux(nt, notes::AT_EXECFN) {
        want.push((p, 512));
    }
    let exec_modules: Vec<usize> = (0..modules.len())
        .filter(|&i| modules[i].maps.iter().any(|m| is_exec(mem, m.start)))
        .collect();
    for &i in &exec_modules {
        want.push((modules[i].base, PAGE));
    }
    mem.prefetch(&want, w);

    for &i in &exec_modules {
        let base = modules[i].base;
        if let Some(page) = mem.read_prefix(base, PAGE)
            && let Some((_, _, ph)) = symbols::parse_head(&page)
        {
            let mut from_page = |off: u64, len: usize| {
                let s = usize::try_from(off).ok()?;
                page.get(s..s.checked_add(len)?).map(<[u8]>::to_vec)
            };
            modules[i].build_id = symbols::build_id_from(&ph, &mut from_page);
        }
    }
    windows_wanted
        .iter()
        .map(|w| {
            w.and_then(|(base, len)| {
                mem.read_prefix(base, len)
                    .map(|bytes| Window { base, bytes })
            })
        })
        .collect()
}

/// The summary's signal, code, fault address and mapping, and the process (name, arguments,
/// uid, pid, executable).
fn summarize(
    s: &mut CoreSummary,
    nt: &Notes,
    signo: Option<i32>,
    crash_ix: usize,
    files: &[FileMapping],
    mem: &mut Memory,
) {
    let crash = nt.threads.get(crash_ix);
    s.signo = signo;
    s.signal = signo.map(signals::signal_label);
    s.thread_count = nt.threads.len();
    s.mapped_files = files.len();
    s.crashing_tid = crash.and_then(|t| t.tid);
    if let Some(si) = &nt.siginfo {
        if let Some(code) = si.code {
            match signals::si_code_name(si.signo, code) {
                Some((name, meaning)) => {
                    s.code = Some(name.into());
                    s.meaning = Some(meaning.into());
                }
                None => s.code = Some(code.to_string()),
            }
        }
        s.sender_pid = si.sender_pid;
        s.fault_addr = si.addr.map(hex);
    }
    let stack_load = crash
        .and_then(|t| t.sp)
        .and_then(|sp| mem.load_at(sp).map(|l| l.vaddr));
    let exe_path = aux(nt, notes::AT_ENTRY)
        .and_then(|e| find_file(files, e))
        .map(|f| f.path.clone());
    if let Some(addr) = nt.siginfo.as_ref().and_then(|si| si.addr) {
        let named = name_mapping(
            addr,
            files,
            mem,
            &nt.threads,
            stack_load,
            exe_path.as_deref(),
        );
        // Without NT_FILE a segment cannot be told file-backed from anonymous.
        s.fault_mapping = if nt.files.is_some() || named == "[stack]" || named == "[unmapped]" {
            Some(named)
        } else {
            None
        };
    }
    s.execfn = aux(nt, notes::AT_EXECFN)
        .and_then(|p| mem.read_prefix(p, 512))
        .map(|b| {
            let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
            String::from_utf8_lossy(&b[..end]).into_owned()
        })
        .filter(|p| !p.is_empty());
    if let Some(ps) = &nt.psinfo {
        s.process_name = ps.fname.clone();
        s.args = ps.args.clone();
        s.uid = ps.uid;
        s.pid = ps.pid;
    }
    s.pid = s.pid.or_else(|| nt.threads.first().and_then(|t| t.tid));
    s.exe = exe_path.or_else(|| s.execfn.clone()).or_else(|| {
        s.args
            .as_deref()
            .and_then(|a| a.split_whitespace().next())
            .filter(|p| p.starts_with('/'))
            .map(str::to_string)
    });
}

/// What every thread's walk shares: the core's layout and the options.
struct Walk<'a> {
    arch: Arch,
    files: &'a [FileMapping],
    modules: &'a [Module],
    windows: &'a [Option<Window>],
    opts: &'a CoreOptions,
    use_fs: bool,
    vdso: Option<u64>,
}

impl Walk<'_> {
    /// Every thread's stack, unwound and named, the crashing one first (into the summary's
    /// `frames`, the others into `other_threads`); returns the paths of the modules the
    /// frames fell in.
    fn stacks(
        &self,
        nt: &Notes,
        crash_ix: usize,
        mem: &mut Memory,
        images: &mut BTreeMap<String, Option<ElfImage>>,
        lines: &mut BTreeMap<String, Option<(dwarf::Lines, Option<String>)>>,
        a: &mut CoreAnalysis,
    ) -> Vec<String> {
        let exec_loads: Vec<Load> = mem.loads.iter().filter(|l| l.exec).copied().collect();
        let mut used: Vec<String> = Vec::new();
        let mut order: Vec<usize> = (0..nt.threads.len()).collect();
        if crash_ix < order.len() {
            order.remove(crash_ix);
            order.insert(0, crash_ix);
        }
        let cache_dirs = dwarf::debuginfod_cache_dirs();
        for ti in order {
            let t = &nt.threads[ti];
            let raw = {
                let mut p = CoreProcess {
                    arch: self.arch,
                    mem: &mut *mem,
                    window: self.windows.get(ti).and_then(Option::as_ref),
                    exec_loads: &exec_loads,
                    files: self.files,
                    modules: self.modules,
                    images: &mut *images,
                    opts: self.opts,
                    use_fs: self.use_fs,
                    ctx: gimli::UnwindContext::new(),
                    far_reads: 0,
                };
                stack::walk(self.arch, t, &mut p, self.opts.max_frames.max(1))
            };
            let mut namer = Namer {
                files: self.files,
                modules: self.modules,
                images: &mut *images,
                lines: &mut *lines,
                opts: self.opts,
                use_fs: self.use_fs,
                vdso: self.vdso,
                cache_dirs: &cache_dirs,
            };
            let frames: Vec<StackFrame> = raw
                .iter()
                .enumerate()
                .map(|(index, f)| namer.frame(index, f, mem, &mut used))
                .collect();
            if ti == crash_ix {
                a.summary.frames = frames;
            } else {
                a.summary
                    .other_threads
                    .push(ThreadStack { tid: t.tid, frames });
            }
        }
        a.summary.crash_module = a.summary.frames.first().and_then(|f| f.module.clone());
        used
    }
}

/// The modules the frames used, each with how its symbols were found, and a warning naming
/// those whose copy on this machine is another build.
fn module_infos(
    a: &mut CoreAnalysis,
    used: &[String],
    modules: &[Module],
    images: &BTreeMap<String, Option<ElfImage>>,
    lines: &BTreeMap<String, Option<(dwarf::Lines, Option<String>)>>,
    opts: &CoreOptions,
    use_fs: bool,
) {
    for p in used {
        let Some(m) = modules.iter().find(|m| &m.path == p) else {
            continue;
        };
        let (symbols, symbol_file) = if !(use_fs && opts.symbolize) {
            ("not-read", None)
        } else {
            match images.get(p) {
                Some(Some(img)) => (
                    if m.build_id.is_some() {
                        "build-id-match"
                    } else {
                        "unverified"
                    },
                    Some(img.path.display().to_string()),
                ),
                Some(None) if mismatched(m, opts) => ("build-id-mismatch", None),
                _ => ("not-found", None),
            }
        };
        a.summary.modules.push(ModuleInfo {
            path: m.path.clone(),
            base: hex(m.base),
            build_id: m.build_id.as_deref().map(hex_bytes),
            symbols,
            symbol_file,
            debug_file: lines
                .get(p)
                .and_then(Option::as_ref)
                .and_then(|(_, f)| f.clone()),
        });
    }
    let mismatches: Vec<&str> = a
        .summary
        .modules
        .iter()
        .filter(|m| m.symbols == "build-id-mismatch")
        .map(|m| m.path.as_str())
        .collect();
    if !mismatches.is_empty() {
        a.warnings.push(text!(
            "not symbolized: this machine's copy is a different build than the crashed process had ({}); pass a sysroot or search path holding the originals",
            "未符号化：本机上的文件与崩溃进程所用的不是同一个构建（{}）；请传入包含原始文件的 sysroot 或搜索路径",
            mismatches.join(", ")
        ));
    }
}

/// The process's memory for the Python walk, a page at a time, pages kept (a stream goes back
/// only by decompressing again, and the walk's reads cluster in a few pages).
struct PagedMemory<'m, 'c> {
    mem: &'m mut Memory<'c>,
    pages: BTreeMap<u64, Option<Vec<u8>>>,
}

/// Pages kept by the Python walk (16 MiB), and read at once on a miss (64 KiB).
const MAX_PAGES: usize = 4096;
const READ_AHEAD: usize = 16;

impl python::Mem for PagedMemory<'_, '_> {
    fn read(&mut self, addr: u64, len: usize) -> Option<Vec<u8>> {
        if len > 2 << 20 {
            return None;
        }
        let end = addr.checked_add(len as u64)?;
        let mut out = Vec::with_capacity(len);
        let mut page = addr & !(PAGE as u64 - 1);
        while page < end {
            if !self.pages.contains_key(&page) && self.pages.len() + READ_AHEAD < MAX_PAGES {
                // Read ahead: a compressed core can only go back by decompressing again, and
                // the walk's next reads are mostly near this one (the same arena or .data).
                let ahead = self
                    .mem
                    .read_prefix(page, PAGE * READ_AHEAD)
                    .unwrap_or_default();
                for (i, chunk) in ahead.chunks_exact(PAGE).enumerate() {
                    self.pages
                        .entry(page + (i * PAGE) as u64)
                        .or_insert_with(|| Some(chunk.to_vec()));
                }
            }
            if !self.pages.contains_key(&page) {
                let got = self.mem.read(page, PAGE);
                if self.pages.len() >= MAX_PAGES {
                    let b = got?;
                    let from = addr.max(page) - page;
                    let to = end.min(page + PAGE as u64) - page;
                    out.extend_from_slice(&b[from as usize..to as usize]);
                    page += PAGE as u64;
                    continue;
                }
                self.pages.insert(page, got);
            }
            let b = self.pages.get(&page)?.as_ref()?;
            let from = addr.max(page) - page;
            let to = end.min(page + PAGE as u64) - page;
            out.extend_from_slice(&b[from as usize..to as usize]);
            page += PAGE as u64;
        }
        Some(out)
    }
}

/// The CPython minor version a file name says (`libpython3.11.so.1.0`, `python3.12`).
fn python_minor_of_name(path: &str) -> Option<u32> {
    let name = path.rsplit('/').next()?;
    let rest = name
        .strip_prefix("libpython3.")
        .or_else(|| name.strip_prefix("python3."))?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Find `_PyRuntime` in the mapped interpreter (libpython first, then the executable: a
/// static `python3`), pick the offsets for its version and walk its threads.
fn python_stacks(
    mem: &mut Memory,
    modules: &[Module],
    images: &mut BTreeMap<String, Option<ElfImage>>,
    opts: &CoreOptions,
    threads: &[python::CoreThread],
    crashing_tid: Option<i32>,
    warnings: &mut Vec<Text>,
) -> Option<python::PythonStacks> {
    let mut candidates: Vec<&Module> = modules
        .iter()
        .filter(|m| {
            let name = m.path.rsplit('/').next().unwrap_or("");
            name.starts_with("libpython3") || name.starts_with("python")
        })
        .collect();
    candidates.sort_by_key(|m| !m.path.rsplit('/').next().unwrap_or("").starts_with("lib"));
    let mut missing: Vec<&str> = Vec::new();
    for m in candidates {
        let Some(img) = image_for(images, m, opts) else {
            missing.push(&m.path);
            continue;
        };
        let Some(sym) = img.object_symbol("_PyRuntime") else {
            continue;
        };
        let bias = m
            .base
            .wrapping_sub(img.vaddr_of_file_offset(0).unwrap_or(0));
        let runtime = sym.wrapping_add(bias);
        let mut type_at = |name: &str| img.object_symbol(name).map(|v| v.wrapping_add(bias));
        let known = python::KnownTypes {
            code: type_at("PyCode_Type"),
            str: type_at("PyUnicode_Type"),
            bytes: type_at("PyBytes_Type"),
        };
        let hexversion = img
            .object_symbol("Py_Version")
            .and_then(|v| img.read_vaddr(v, 4))
            .and_then(|b| notes::u32_at(&b, 0));
        let minor = hexversion
            .filter(|v| v >> 24 == 3)
            .map(|v| (v >> 16) & 0xff)
            .or_else(|| python_minor_of_name(&m.path));
        let module = m.path.clone();
        let mut paged = PagedMemory {
            mem,
            pages: BTreeMap::new(),
        };
        let published = python::Mem::read(&mut paged, runtime, python::layout::DEBUG_OFFSETS_LEN)
            .and_then(|b| python::layout::from_debug_offsets(&b));
        let (layout, offsets) = match (published, minor.and_then(python::layout::for_minor)) {
            (Some(l), _) => (l, "debug-offsets"),
            (None, Some(l)) => (l, "table"),
            (None, None) => {
                warnings.push(text!(
                    "Python: {module} is CPython {}, whose structures this build does not know (3.8-3.13): no Python stacks",
                    "Python：{module} 是 CPython {}，这个版本的 trainwreck 不认识它的内部结构（支持 3.8-3.13）：没有 Python 栈",
                    minor.map_or("3.?".to_string(), |m| format!("3.{m}"))
                ));
                return None;
            }
        };
        let threads = python::walk(
            &mut paged,
            layout,
            known,
            runtime,
            threads,
            crashing_tid,
            warnings,
        );
        return Some(python::PythonStacks {
            version: format!("3.{}", layout.minor),
            module,
            offsets,
            threads,
        });
    }
    if !missing.is_empty() {
        warnings.push(text!(
            "no Python stacks: the interpreter's file of the same build is not on this machine ({}); pass --sysroot or --search-path with the crashed machine's copy",
            "没有 Python 栈：本机上没有同一构建的解释器文件（{}）；请用 --sysroot 或 --search-path 传入崩溃机器上的副本",
            missing.join(", ")
        ));
    }
    None
}

fn hex_bytes(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn find_file(files: &[FileMapping], addr: u64) -> Option<&FileMapping> {
    let i = files.partition_point(|f| f.start <= addr);
    files
        .get(i.checked_sub(1)?)
        .filter(|f| addr >= f.start && addr < f.end)
}

/// What is mapped at an address: a file, or `[stack]`, `[heap]`, `[anonymous]`, `[vdso]`,
/// `[unmapped]`. `[heap]` is a guess: the first anonymous segment above the executable.
fn name_mapping(
    addr: u64,
    files: &[FileMapping],
    mem: &Memory,
    threads: &[ThreadStatus],
    stack_load: Option<u64>,
    exe: Option<&str>,
) -> String {
    if let Some(f) = find_file(files, addr) {
        return f.path.clone();
    }
    let Some(l) = mem.load_at(addr) else {
        return "[unmapped]".into();
    };
    if Some(l.vaddr) == stack_load || threads.iter().filter_map(|t| t.sp).any(|sp| l.contains(sp)) {
        return "[stack]".into();
    }
    if let Some(exe) = exe {
        let exe_end = files.iter().filter(|f| f.path == exe).map(|f| f.end).max();
        if let Some(end) = exe_end {
            let first_anon_above = mem
                .loads
                .iter()
                .filter(|s| s.vaddr >= end && find_file(files, s.vaddr).is_none())
                .map(|s| s.vaddr)
                .next();
            if first_anon_above == Some(l.vaddr) && !l.exec {
                return "[heap]".into();
            }
        }
    }
    "[anonymous]".into()
}

fn mismatched(m: &Module, opts: &CoreOptions) -> bool {
    let Some(want) = &m.build_id else {
        return false;
    };
    symbols::candidates(&m.path, opts.sysroot.as_deref(), &opts.search_paths)
        .iter()
        .filter_map(|p| ElfImage::open(p))
        .any(|img| img.build_id.as_ref().is_some_and(|b| b != want))
}

/// The crashed process as the stack walk sees it: one thread's stack window, the core's
/// memory beyond it (a signal handler's alternate stack), executable segments, and the CFI
/// of each mapped module whose file is at hand.
struct CoreProcess<'a, 'c> {
    arch: Arch,
    mem: &'a mut Memory<'c>,
    window: Option<&'a Window>,
    exec_loads: &'a [Load],
    files: &'a [FileMapping],
    modules: &'a [Module],
    images: &'a mut BTreeMap<String, Option<ElfImage>>,
    opts: &'a CoreOptions,
    use_fs: bool,
    ctx: gimli::UnwindContext<usize>,
    /// Words read outside the window (each may cost a compressed core a restart).
    far_reads: usize,
}

/// Words read outside a thread's window per walk, at most.
const MAX_FAR_READS: usize = 256;

/// A word of a thread's stack: from its window, else from the core (at most
/// `MAX_FAR_READS` times per walk: a signal handler's alternate stack, a CFI rule's address).
fn stack_word(
    window: Option<&Window>,
    mem: &mut Memory,
    far: &mut usize,
    addr: u64,
) -> Option<u64> {
    if let Some(w) = window
        && addr >= w.base
        && addr.saturating_add(8) <= w.end()
    {
        return w.word(addr);
    }
    if *far >= MAX_FAR_READS {
        return None;
    }
    *far += 1;
    mem.read(addr, 8).and_then(|b| notes::u64_at(&b, 0))
}

impl stack::Process for CoreProcess<'_, '_> {
    fn is_code(&self, addr: u64) -> bool {
        let i = self.exec_loads.partition_point(|l| l.vaddr <= addr);
        i > 0 && self.exec_loads[i - 1].contains(addr)
    }

    fn is_after_call(&mut self, ret: u64) -> Option<bool> {
        let n = if self.arch == Arch::Aarch64 { 4 } else { 7 };
        let start = ret.checked_sub(n as u64)?;
        if let Some(b) = self.mem.read(start, n) {
            return Some(stack::ends_with_call(self.arch, &b));
        }
        // Executable memory that is no file (JIT, trampolines) is dumped: unreadable bytes
        // there mean the word is no return address.
        let Some(f) = find_file(self.files, start) else {
            return Some(false);
        };
        let off = f.offset.checked_add(start - f.start)?;
        let arch = self.arch;
        let (img, _) = link_address_in(
            self.files,
            self.modules,
            self.images,
            self.opts,
            self.use_fs,
            start,
        )?;
        let b = img.read_file(off, n)?;
        Some(stack::ends_with_call(arch, &b))
    }

    fn window_word(&self, addr: u64) -> Option<u64> {
        self.window?.word(addr)
    }

    fn is_signal_return(&mut self, ret: u64) -> bool {
        let Some(lookup) = ret.checked_sub(1) else {
            return false;
        };
        let mut ctx = std::mem::take(&mut self.ctx);
        let yes = link_address_in(
            self.files,
            self.modules,
            self.images,
            self.opts,
            self.use_fs,
            lookup,
        )
        .and_then(|(img, v)| img.cfi().map(|c| (c, v)))
        .is_some_and(|(cfi, v)| cfi.is_signal_trampoline(&mut ctx, v));
        self.ctx = ctx;
        yes
    }

    fn word(&mut self, addr: u64) -> Option<u64> {
        stack_word(self.window, self.mem, &mut self.far_reads, addr)
    }

    fn cfi_step(&mut self, pc: u64, exact: bool, regs: &[Option<u64>]) -> unwind::Step {
        let lookup = if exact { pc } else { pc.saturating_sub(1) };
        let arch = self.arch;
        let (window, mem, far) = (self.window, &mut *self.mem, &mut self.far_reads);
        let mut ctx = std::mem::take(&mut self.ctx);
        let step = match link_address_in(
            self.files,
            self.modules,
            self.images,
            self.opts,
            self.use_fs,
            lookup,
        ) {
            Some((img, v)) => match img.cfi() {
                Some(cfi) => {
                    let mut read = |a: u64| stack_word(window, mem, far, a);
                    cfi.step(&mut ctx, arch, v, regs, &mut read)
                }
                None => unwind::Step::NoInfo,
            },
            None => unwind::Step::NoInfo,
        };
        self.ctx = ctx;
        step
    }
}

/// The module image and link-time address of a process address, when its file is at hand.
fn link_address_in<'i>(
    files: &[FileMapping],
    modules: &[Module],
    images: &'i mut BTreeMap<String, Option<ElfImage>>,
    opts: &CoreOptions,
    use_fs: bool,
    addr: u64,
) -> Option<(&'i mut ElfImage, u64)> {
    if !(use_fs && opts.symbolize) {
        return None;
    }
    let map = find_file(files, addr)?;
    let m = modules.iter().find(|m| m.path == map.path)?;
    let img = image_for(images, m, opts)?;
    let v = map
        .offset
        .checked_add(addr - map.start)
        .and_then(|o| img.vaddr_of_file_offset(o))?;
    Some((img, v))
}

/// Names raw frames: module, offset, symbol (build-id checked), source line and inlined
/// functions (DWARF of the module or its separate debug file), training-stack component.
struct Namer<'a> {
    files: &'a [FileMapping],
    modules: &'a [Module],
    images: &'a mut BTreeMap<String, Option<ElfImage>>,
    lines: &'a mut BTreeMap<String, Option<(dwarf::Lines, Option<String>)>>,
    opts: &'a CoreOptions,
    use_fs: bool,
    vdso: Option<u64>,
    cache_dirs: &'a [PathBuf],
}

impl Namer<'_> {
    fn frame(
        &mut self,
        index: usize,
        f: &RawFrame,
        mem: &Memory,
        used: &mut Vec<String>,
    ) -> StackFrame {
        let mut frame = StackFrame {
            index,
            pc: hex(f.pc),
            module: None,
            offset: None,
            symbol: None,
            mangled: None,
            how: f.how.as_str(),
            file: None,
            line: None,
            inlined: Vec::new(),
            component: None,
        };
        // A return address points after the call: look up the byte before it. The pc of
        // frame 0 and of a frame a signal interrupted is the instruction itself.
        let lookup = if f.exact {
            f.pc
        } else {
            f.pc.saturating_sub(1)
        };
        let Some(map) = find_file(self.files, lookup) else {
            if let Some(v) = self.vdso
                && mem.load_at(lookup).map(|l| l.vaddr) == Some(v)
            {
                frame.module = Some("[vdso]".into());
                frame.offset = Some(hex(f.pc.wrapping_sub(v)));
            } else if mem.load_at(lookup).is_some() {
                frame.module = Some("[anonymous]".into());
            }
            return frame;
        };
        let Some(m) = self.modules.iter().find(|m| m.path == map.path) else {
            return frame;
        };
        frame.module = Some(m.path.clone());
        frame.offset = Some(hex(f.pc.wrapping_sub(m.base)));
        frame.component = component_of(&m.path);
        if !used.contains(&m.path) {
            used.push(m.path.clone());
        }
        if !(self.use_fs && self.opts.symbolize) {
            return frame;
        }
        let Some(img) = image_for(self.images, m, self.opts) else {
            return frame;
        };
        let Some(v) = map
            .offset
            .checked_add(lookup - map.start)
            .and_then(|o| img.vaddr_of_file_offset(o))
        else {
            return frame;
        };
        let delta = f.pc - lookup;
        if let Some((name, off)) = img.symbol_at(v) {
            set_symbol(&mut frame, &name, Some(off.saturating_add(delta)));
        }
        let (opts, cache_dirs) = (self.opts, self.cache_dirs);
        let lines = self
            .lines
            .entry(m.path.clone())
            .or_insert_with(|| lines_for(img, m, opts, cache_dirs));
        if let Some((l, _)) = lines {
            let mut found = l.frames(v);
            if let Some(outer) = found.pop() {
                frame.file = outer.file;
                frame.line = outer.line;
                if frame.symbol.is_none()
                    && let Some(name) = outer.function
                {
                    set_symbol(&mut frame, &name, None);
                }
            }
            frame.inlined = found
                .into_iter()
                .map(|s| InlinedFrame {
                    function: s
                        .function
                        .map(|n| symbols::demangle(&n).unwrap_or(n))
                        .unwrap_or_else(|| "??".into()),
                    file: s.file,
                    line: s.line,
                })
                .collect();
        }
        frame
    }
}

/// `function+0xoff` (just `function` when the offset is unknown), demangled.
fn set_symbol(frame: &mut StackFrame, name: &str, off: Option<u64>) {
    let off = off.map(|o| format!("+{o:#x}")).unwrap_or_default();
    match symbols::demangle(name) {
        Some(human) => {
            frame.symbol = Some(format!("{human}{off}"));
            frame.mangled = Some(name.to_string());
        }
        None => frame.symbol = Some(format!("{name}{off}")),
    }
}

/// The DWARF for a module: its own `.debug_info`, else the first separate debug file (see
/// `dwarf::debug_file_candidates`) whose build-id is the module's. With the file it came from.
fn lines_for(
    img: &mut ElfImage,
    m: &Module,
    opts: &CoreOptions,
    cache_dirs: &[PathBuf],
) -> Option<(dwarf::Lines, Option<String>)> {
    if img.has_section(".debug_info") {
        let path = img.path.display().to_string();
        return dwarf::Lines::new(&mut |n| img.section(n).map(|s| s.data)).map(|l| (l, Some(path)));
    }
    let id = m
        .build_id
        .as_deref()
        .or(img.build_id.as_deref())
        .map(hex_bytes);
    let link = img.debuglink().map(|(n, _)| n);
    for cand in dwarf::debug_file_candidates(
        id.as_deref(),
        link.as_deref(),
        &img.path,
        opts.sysroot.as_deref(),
        &opts.search_paths,
        cache_dirs,
    ) {
        let Some(mut dbg) = ElfImage::open(&cand) else {
            continue;
        };
        let same = match (&id, &dbg.build_id) {
            (Some(want), Some(have)) => *want == hex_bytes(have),
            (Some(_), None) => false,
            (None, _) => true,
        };
        if !same || !dbg.has_section(".debug_info") {
            continue;
        }
        let path = cand.display().to_string();
        if let Some(l) = dwarf::Lines::new(&mut |n| dbg.section(n).map(|s| s.data)) {
            return Some((l, Some(path)));
        }
    }
    None
}

/// The part of the training stack a mapped file is, by its file name: what a reader needs to
/// tell "crashed in NCCL" from "crashed in my extension".
pub fn component_of(path: &str) -> Option<&'static str> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let stem = name.split(".so").next().unwrap_or(name);
    const KNOWN: &[(&str, &str)] = &[
        ("libtorch_cuda", "libtorch (CUDA)"),
        ("libtorch_cpu", "libtorch"),
        ("libtorch_python", "libtorch (Python bindings)"),
        ("libtorch", "libtorch"),
        ("libc10_cuda", "c10 (CUDA)"),
        ("libc10", "c10"),
        ("libnccl", "NCCL"),
        ("libcuda", "CUDA driver"),
        ("libcudart", "CUDA runtime"),
        ("libcublasLt", "cuBLASLt"),
        ("libcublas", "cuBLAS"),
        ("libcudnn", "cuDNN"),
        ("libcufft", "cuFFT"),
        ("libcusparse", "cuSPARSE"),
        ("libcurand", "cuRAND"),
        ("libcusolver", "cuSOLVER"),
        ("libnvrtc", "NVRTC"),
        ("libnvJitLink", "nvJitLink"),
        ("libnvidia-ml", "NVML"),
        ("libgomp", "OpenMP (GNU)"),
        ("libiomp5", "OpenMP (Intel)"),
        ("libmkl", "MKL"),
        ("libopenblas", "OpenBLAS"),
        ("libc", "libc"),
        ("libstdc++", "libstdc++"),
        ("libgcc_s", "libgcc"),
        ("ld-linux", "dynamic loader"),
        ("libpthread", "libc"),
        ("libm", "libc"),
    ];
    if let Some((_, c)) = KNOWN.iter().find(|(p, _)| {
        stem == *p
            || stem
                .strip_prefix(p)
                .is_some_and(|rest| rest.starts_with(['-', '.', '_']))
    }) {
        return Some(c);
    }
    if stem.starts_with("libpython3") || stem.starts_with("python3") || stem == "python" {
        return Some("CPython");
    }
    None
}

/// The on-disk image for a module: the first candidate whose build-id matches the core's (any
/// candidate when the core kept no build-id). Cached, including "none".
fn image_for<'i>(
    images: &'i mut BTreeMap<String, Option<ElfImage>>,
    m: &Module,
    opts: &CoreOptions,
) -> Option<&'i mut ElfImage> {
    images
        .entry(m.path.clone())
        .or_insert_with(|| {
            if m.path.starts_with('[')
                || m.path.starts_with("/dev/")
                || m.path.starts_with("/memfd:")
            {
                return None;
            }
            symbols::candidates(&m.path, opts.sysroot.as_deref(), &opts.search_paths)
                .iter()
                .filter_map(|p| ElfImage::open(p))
                .find(|img| match (&m.build_id, &img.build_id) {
                    (Some(want), Some(have)) => want == have,
                    (Some(_), None) => false,
                    (None, _) => true,
                })
        })
        .as_mut()
}

/// Whether a mapped file is the user's own code: not a known part of the training stack, not
/// the system's (`/usr`, `/lib`), not an installed Python package or the standard library's
/// extensions (`…/lib/python3.X/…`), not a pseudo-mapping (`[vdso]`).
fn user_module(path: &str) -> bool {
    !(path.starts_with('[')
        || path.starts_with("/usr/")
        || path.starts_with("/lib")
        || path.starts_with("/opt/conda/lib/lib")
        || path.contains("/lib/python3")
        || path.contains("/site-packages/")
        || path.contains("/dist-packages/")
        || component_of(path).is_some())
}

/// A native frame for evidence: `function+0x1b at file.c:42 in libx.so`.
fn show_native(f: &StackFrame) -> String {
    let mut out = f.symbol.clone().unwrap_or_else(|| {
        format!(
            "{}+{}",
            f.module
                .as_deref()
                .map(|m| m.rsplit('/').next().unwrap_or(m))
                .unwrap_or("?"),
            f.offset.as_deref().unwrap_or("?")
        )
    });
    if let (Some(file), Some(line)) = (&f.file, f.line) {
        out.push_str(&format!(
            " at {}:{line}",
            file.rsplit('/').next().unwrap_or(file)
        ));
    }
    if let Some(m) = &f.module {
        out.push_str(&format!(" in {}", m.rsplit('/').next().unwrap_or(m)));
    }
    out
}

/// Facts from a summary. Names are in `facts::CATALOG`.
fn facts_of(s: &CoreSummary) -> Vec<Fact> {
    let mut out = Vec::new();
    let mut text = |name: &str, v: &Option<String>, from: &str| {
        if let Some(v) = v {
            out.push(Fact::new(name, v.as_str()).with_text(from));
        }
    };
    text("core.signal", &s.signal, "NT_SIGINFO");
    text("core.si_code", &s.code, "NT_SIGINFO si_code");
    text("core.fault_addr", &s.fault_addr, "NT_SIGINFO si_addr");
    text("core.fault_mapping", &s.fault_mapping, "NT_FILE at si_addr");
    text("core.exe", &s.exe, "NT_FILE at AT_ENTRY");
    text("core.args", &s.args, "NT_PRPSINFO");
    text("core.crash_module", &s.crash_module, "NT_FILE at the pc");
    let crash_symbol = s.frames.first().and_then(|f| f.symbol.clone());
    text("core.crash_symbol", &crash_symbol, "symbol at the pc");
    if let Some(t) = s
        .python
        .as_ref()
        .and_then(|p| p.threads.first())
        .filter(|t| t.crashed)
    {
        let show = |f: &python::PythonFrame| match f.line {
            Some(l) => format!("File \"{}\", line {l}, in {}", f.file, f.function),
            None => format!("File \"{}\", in {}", f.file, f.function),
        };
        let innermost = t.frames.first().map(show);
        text("core.python_frame", &innermost, "Python stack in the core");
        let user = t
            .frames
            .iter()
            .find(|f| !python::library_file(&f.file))
            .map(show);
        text("core.python_user_frame", &user, "Python stack in the core");
    }
    let native_user = s
        .frames
        .iter()
        .find(|f| f.module.as_deref().is_some_and(user_module))
        .map(show_native);
    text(
        "core.native_user_frame",
        &native_user,
        "native stack in the core",
    );
    let component = s.frames.first().and_then(|f| f.component);
    if let Some(c) = component {
        out.push(Fact::new("core.crash_component", c).with_text("NT_FILE at the pc"));
    }
    let mut stack_modules: Vec<&str> = Vec::new();
    for f in &s.frames {
        if let Some(m) = f.module.as_deref()
            && !stack_modules.contains(&m)
        {
            stack_modules.push(m);
        }
    }
    if !stack_modules.is_empty() {
        out.push(Fact::new("core.stack_modules", stack_modules.join(" ")).with_text("stack walk"));
    }
    let mut num = |name: &str, v: Option<i64>, from: &str| {
        if let Some(v) = v {
            out.push(Fact::new(name, v).with_text(from));
        }
    };
    num("core.pid", s.pid.map(i64::from), "NT_PRPSINFO");
    num(
        "core.sender_pid",
        s.sender_pid.map(i64::from),
        "NT_SIGINFO si_pid",
    );
    num("core.tid", s.crashing_tid.map(i64::from), "NT_PRSTATUS");
    if s.thread_count > 0 {
        num(
            "core.threads",
            Some(s.thread_count as i64),
            "NT_PRSTATUS count",
        );
    }
    out
}
