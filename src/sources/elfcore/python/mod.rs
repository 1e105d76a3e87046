//! Python stacks from a core: from `_PyRuntime` through the interpreter states and their
//! thread states to each thread's frames, decoded to file, function and line (the offsets are
//! in `layout`, the line tables in `lines`). Reads the process's memory only through `Mem`, so
//! it runs the same on a core, a test's fake memory or fuzz bytes; every pointer is checked by
//! reading through it, every loop is bounded, and a value that does not look like the object it
//! should be (a code object's type is `code`, a name's is `str`) ends that walk with a warning,
//! never a guess or a panic.

pub mod layout;
pub mod lines;

use super::notes::{i32_at, u32_at, u64_at};
use crate::model::{Text, text};
use layout::{FrameKind, FrameRoot, Layout};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// The process's memory, as far as it can be read.
pub trait Mem {
    fn read(&mut self, addr: u64, len: usize) -> Option<Vec<u8>>;
}

/// One Python frame, innermost first in a thread's list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PythonFrame {
    pub file: String,
    pub function: String,
    /// `None` when the line table has no line for the instruction (or could not be read).
    pub line: Option<u32>,
}

/// One Python thread (a `PyThreadState`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PythonThread {
    /// The kernel's thread id, matched to the core's NT_PRSTATUS threads.
    pub tid: Option<i32>,
    /// `pthread_self()` of the thread, hex.
    pub thread_id: String,
    /// The thread that received the fatal signal.
    pub crashed: bool,
    /// The thread the GIL's `last_holder` names while the GIL is locked.
    pub holds_gil: bool,
    pub frames: Vec<PythonFrame>,
    /// The frame walk stopped early (a frame could not be read, or the limit was reached).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// Every thread's Python stack, the crashing thread first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PythonStacks {
    /// `3.11`: the interpreter's version, as found (file name, `Py_Version`, debug offsets).
    pub version: String,
    /// The ELF file `_PyRuntime` was found in.
    pub module: String,
    /// `debug-offsets` (read from the process) or `table` (this build's table for the version).
    pub offsets: &'static str,
    pub threads: Vec<PythonThread>,
}

/// A file of the interpreter's standard library or of an installed package (not the user's
/// code): for naming the innermost user frame.
pub fn library_file(path: &str) -> bool {
    path.starts_with('<')
        || path.contains("/site-packages/")
        || path.contains("/dist-packages/")
        || path.split('/').any(|seg| {
            seg.strip_prefix("python3.")
                .is_some_and(|m| !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()))
        }) && path.contains("/lib")
}

/// A thread of the core: its tid and thread pointer (x86-64 `fs_base` = `pthread_self()`).
#[derive(Debug, Clone, Copy)]
pub struct CoreThread {
    pub tid: Option<i32>,
    pub thread_pointer: Option<u64>,
}

pub const MAX_INTERPRETERS: usize = 64;
pub const MAX_THREADS: usize = 1024;
pub const MAX_FRAMES: usize = 256;
/// Longest string decoded (a path or a name).
const MAX_CHARS: u64 = 4096;
/// Largest line table read.
const MAX_TABLE: u64 = 1 << 20;

/// Addresses of the type objects `PyCode_Type`, `PyUnicode_Type` and `PyBytes_Type` in the
/// process, from the interpreter's symbols. A type whose address is unknown is told by its
/// `tp_name` instead (which lives in read-only data that cores usually leave out).
#[derive(Debug, Clone, Copy, Default)]
pub struct KnownTypes {
    pub code: Option<u64>,
    pub str: Option<u64>,
    pub bytes: Option<u64>,
}

/// What a code object gives a frame: file, function, first line, line table.
type CodeInfo = (String, String, i64, Vec<u8>);

struct Reader<'m> {
    mem: &'m mut dyn Mem,
    l: Layout,
    known: KnownTypes,
    /// Type object address -> its `tp_name`.
    types: BTreeMap<u64, Option<String>>,
    /// Code object address -> (file, function, firstlineno, line table).
    codes: BTreeMap<u64, Option<CodeInfo>>,
}

impl Reader<'_> {
    fn word(&mut self, a: u64) -> Option<u64> {
        u64_at(&self.mem.read(a, 8)?, 0)
    }

    /// Whether `obj` is of the type named `name` (`code`, `str`, `bytes`).
    fn is_a(&mut self, obj: u64, name: &str) -> bool {
        let known = match name {
            "code" => self.known.code,
            "str" => self.known.str,
            _ => self.known.bytes,
        };
        let Some(ty) = obj.checked_add(layout::OB_TYPE).and_then(|a| self.word(a)) else {
            return false;
        };
        match known {
            Some(want) => ty == want,
            None => self.type_name(ty).as_deref() == Some(name),
        }
    }

    fn type_name(&mut self, ty: u64) -> Option<String> {
        if let Some(n) = self.types.get(&ty) {
            return n.clone();
        }
        let name = (|| {
            let p = self.word(ty.checked_add(layout::TP_NAME)?)?;
            let b = self.mem.read(p, 32)?;
            let end = b.iter().position(|&c| c == 0)?;
            std::str::from_utf8(&b[..end]).ok().map(str::to_string)
        })();
        self.types.insert(ty, name.clone());
        name
    }

    /// A compact `str` object's text (code names and file names are always compact).
    fn string(&mut self, obj: u64) -> Option<String> {
        if !self.is_a(obj, "str") {
            return None;
        }
        let len = self.word(obj.checked_add(layout::STR_LENGTH)?)?;
        let state = u32_at(&self.mem.read(obj.checked_add(layout::STR_STATE)?, 4)?, 0)?;
        let (kind, compact, ascii) = ((state >> 2) & 7, (state >> 5) & 1, (state >> 6) & 1);
        if compact == 0 || !matches!(kind, 1 | 2 | 4) || len > MAX_CHARS {
            return None;
        }
        let head = if ascii == 1 {
            self.l.ascii_size
        } else {
            self.l.compact_size
        };
        let n = usize::try_from(len * u64::from(kind)).ok()?;
        let b = if n == 0 {
            Vec::new()
        } else {
            self.mem.read(obj.checked_add(head)?, n)?
        };
        Some(match kind {
            1 => b.iter().map(|&c| char::from(c)).collect(),
            2 => b
                .chunks_exact(2)
                .map(|c| char::from_u32(u32::from(u16::from_le_bytes([c[0], c[1]]))))
                .map(|c| c.unwrap_or('\u{fffd}'))
                .collect(),
            _ => b
                .chunks_exact(4)
                .map(|c| char::from_u32(u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                .map(|c| c.unwrap_or('\u{fffd}'))
                .collect(),
        })
    }

    fn bytes(&mut self, obj: u64) -> Option<Vec<u8>> {
        if !self.is_a(obj, "bytes") {
            return None;
        }
        let n = self.word(obj.checked_add(layout::OB_SIZE)?)?;
        if n > MAX_TABLE {
            return None;
        }
        if n == 0 {
            return Some(Vec::new());
        }
        self.mem
            .read(obj.checked_add(layout::BYTES_SVAL)?, n as usize)
    }

    fn code(&mut self, code: u64) -> Option<CodeInfo> {
        if let Some(c) = self.codes.get(&code) {
            return c.clone();
        }
        let l = self.l;
        let c = (|| {
            if !self.is_a(code, "code") {
                return None;
            }
            let file = self.word(code.checked_add(l.code_filename)?)?;
            let name = self.word(code.checked_add(l.code_name)?)?;
            let first = i32_at(&self.mem.read(code.checked_add(l.code_firstlineno)?, 4)?, 0)?;
            let table = self.word(code.checked_add(l.code_linetable)?)?;
            let file = self.string(file)?;
            let name = self.string(name)?;
            let table = self.bytes(table).unwrap_or_default();
            Some((file, name, i64::from(first), table))
        })();
        self.codes.insert(code, c.clone());
        c
    }

    fn frame_at(&mut self, code: u64, addr: i64) -> Option<PythonFrame> {
        let (file, function, first, table) = self.code(code)?;
        let line = lines::line_at(self.l.line_table, &table, first, addr.max(0));
        Some(PythonFrame {
            file,
            function,
            line,
        })
    }

    /// A thread's frames, innermost first, and whether the walk stopped early.
    fn frames(&mut self, tstate: u64) -> (Vec<PythonFrame>, bool) {
        let l = self.l;
        let root = match l.frame_root {
            FrameRoot::Direct(off) => tstate.checked_add(off).and_then(|a| self.word(a)),
            FrameRoot::ViaCFrame { cframe, current } => tstate
                .checked_add(cframe)
                .and_then(|a| self.word(a))
                .filter(|&c| c != 0)
                .and_then(|c| self.word(c.checked_add(current)?)),
        };
        let Some(mut f) = root else {
            return (Vec::new(), true);
        };
        let mut out = Vec::new();
        let mut seen = BTreeSet::new();
        while f != 0 {
            if out.len() >= MAX_FRAMES || !seen.insert(f) {
                return (out, true);
            }
            let step = match l.frame {
                FrameKind::Object {
                    back,
                    code,
                    lasti,
                    lasti_in_units,
                } => (|| {
                    let c = self.word(f.checked_add(code)?)?;
                    let i = i64::from(i32_at(&self.mem.read(f.checked_add(lasti)?, 4)?, 0)?);
                    let addr = if lasti_in_units { i * 2 } else { i };
                    let frame = self.frame_at(c, addr)?;
                    Some((Some(frame), self.word(f.checked_add(back)?)?))
                })(),
                FrameKind::Interpreter {
                    code,
                    previous,
                    instr,
                    owner,
                    cstack_owner,
                } => (|| {
                    let prev = self.word(f.checked_add(previous)?)?;
                    let who = *self.mem.read(f.checked_add(owner)?, 1)?.first()?;
                    if cstack_owner == Some(who) {
                        return Some((None, prev));
                    }
                    let c = self.word(f.checked_add(code)?)?;
                    let ip = self.word(f.checked_add(instr)?)?;
                    let start = c.checked_add(l.code_adaptive?)?;
                    let addr = (ip.wrapping_sub(start) as i64) / 2;
                    Some((Some(self.frame_at(c, addr)?), prev))
                })(),
            };
            let Some((frame, next)) = step else {
                return (out, true);
            };
            out.extend(frame);
            f = next;
        }
        (out, false)
    }
}

/// Walk every interpreter's threads from `_PyRuntime` at `runtime`. `threads` are the core's
/// threads (to give each Python thread its tid); `crashing_tid` is the thread that got the
/// signal. Warnings say what could not be read.
pub fn walk(
    mem: &mut dyn Mem,
    l: Layout,
    known: KnownTypes,
    runtime: u64,
    threads: &[CoreThread],
    crashing_tid: Option<i32>,
    warnings: &mut Vec<Text>,
) -> Vec<PythonThread> {
    let mut r = Reader {
        mem,
        l,
        known,
        types: BTreeMap::new(),
        codes: BTreeMap::new(),
    };
    let mut out: Vec<PythonThread> = Vec::new();
    let gil_from = |r: &mut Reader, base: u64, holder: u64, locked: u64| -> Option<u64> {
        let locked = r.word(base.checked_add(locked)?)? & 0xffff_ffff;
        let h = r.word(base.checked_add(holder)?)?;
        (locked != 0 && h != 0).then_some(h)
    };
    let mut gil_holder = l
        .runtime_gil
        .and_then(|(holder, locked)| gil_from(&mut r, runtime, holder, locked));
    let Some(mut interp) = runtime
        .checked_add(l.runtime_interpreters_head)
        .and_then(|a| r.word(a))
    else {
        warnings.push(text!(
            "Python: _PyRuntime at {runtime:#x} is not in the core: no Python stacks",
            "Python：位于 {runtime:#x} 的 _PyRuntime 不在 core 中：没有 Python 栈"
        ));
        return out;
    };
    let mut interps = BTreeSet::new();
    let mut tstates = BTreeSet::new();
    while interp != 0 && interps.len() < MAX_INTERPRETERS && interps.insert(interp) {
        if let Some((ptr, holder, locked)) = l.interp_gil
            && gil_holder.is_none()
        {
            gil_holder = interp
                .checked_add(ptr)
                .and_then(|a| r.word(a))
                .filter(|&g| g != 0)
                .and_then(|g| gil_from(&mut r, g, holder, locked));
        }
        let mut ts = interp
            .checked_add(l.interp_threads_head)
            .and_then(|a| r.word(a));
        if ts.is_none() {
            warnings.push(text!(
                "Python: interpreter state at {interp:#x} is not in the core",
                "Python：位于 {interp:#x} 的解释器状态不在 core 中"
            ));
        }
        while let Some(t) = ts.filter(|&t| t != 0) {
            if tstates.len() >= MAX_THREADS || !tstates.insert(t) {
                break;
            }
            let Some(pthread) = t.checked_add(l.thread_id).and_then(|a| r.word(a)) else {
                warnings.push(text!(
                    "Python: thread state at {t:#x} is not in the core",
                    "Python：位于 {t:#x} 的线程状态不在 core 中"
                ));
                break;
            };
            let native = l
                .native_thread_id
                .and_then(|o| r.word(t.checked_add(o)?))
                .and_then(|v| i32::try_from(v).ok());
            let tid = native.or_else(|| {
                threads
                    .iter()
                    .find(|c| c.thread_pointer == Some(pthread))
                    .and_then(|c| c.tid)
            });
            let (frames, truncated) = r.frames(t);
            out.push(PythonThread {
                tid,
                thread_id: format!("{pthread:#x}"),
                crashed: tid.is_some() && tid == crashing_tid,
                holds_gil: gil_holder == Some(t),
                frames,
                truncated,
            });
            ts = t.checked_add(l.thread_next).and_then(|a| r.word(a));
        }
        interp = match interp.checked_add(l.interp_next).and_then(|a| r.word(a)) {
            Some(n) => n,
            None => break,
        };
    }
    if out.iter().any(|t| t.truncated) {
        warnings.push(text!(
            "Python: some threads' stacks stop early (a frame is not in the core or is damaged)",
            "Python：部分线程的栈提前中断（某个栈帧不在 core 中或已损坏）"
        ));
    }
    out.sort_by_key(|t| !t.crashed);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: u64 = 0x7f00_0000_0000;

    struct Bytes(Vec<u8>);

    impl Mem for Bytes {
        fn read(&mut self, addr: u64, len: usize) -> Option<Vec<u8>> {
            let off = usize::try_from(addr.checked_sub(BASE)?).ok()?;
            self.0.get(off..off.checked_add(len)?).map(<[u8]>::to_vec)
        }
    }

    /// Random memory whose words often point back into it (so walks go deep and loop): every
    /// layout must return, bounded, without panicking (fuzz/python_frames runs it unbounded).
    #[test]
    fn random_memory_never_panics_or_loops() {
        let mut rnd = crate::testrand::xorshift(0x2545_f491_4f6c_dd1du64);
        for round in 0..600 {
            let mut b = vec![0u8; 8192];
            for w in b.chunks_exact_mut(8) {
                let r = rnd();
                let v = match r % 4 {
                    0 => BASE + (r >> 8) % 8192,
                    1 => BASE + ((r >> 8) % 1024) * 8,
                    2 => r >> 3,
                    _ => 0,
                };
                w.copy_from_slice(&v.to_le_bytes());
            }
            let l = layout::for_minor(8 + round % 6).unwrap();
            let known = if round % 2 == 0 {
                KnownTypes::default()
            } else {
                KnownTypes {
                    code: Some(BASE + 8),
                    str: Some(BASE + 16),
                    bytes: Some(BASE + 24),
                }
            };
            let threads = [CoreThread {
                tid: Some(1),
                thread_pointer: Some(BASE),
            }];
            let mut w = Vec::new();
            let out = walk(&mut Bytes(b), l, known, BASE, &threads, Some(1), &mut w);
            assert!(out.len() <= MAX_THREADS);
            assert!(out.iter().all(|t| t.frames.len() <= MAX_FRAMES));
        }
    }

    #[test]
    fn library_files_are_stdlib_and_installed_packages() {
        assert!(library_file("/usr/lib/python3.11/threading.py"));
        assert!(library_file(
            "/opt/venv/lib/python3.12/site-packages/torch/utils/data/_utils/worker.py"
        ));
        assert!(library_file("<frozen importlib._bootstrap>"));
        assert!(!library_file("/home/me/train.py"));
        assert!(!library_file("/srv/python3.11-scripts/train.py"));
    }
}
