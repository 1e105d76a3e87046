//! Where CPython keeps what the stack walk reads, per minor version (x86-64 / aarch64 LP64
//! builds of the default, GIL-ful interpreter). The numbers are the member offsets of these
//! upstream structures, per release tag of github.com/python/cpython (checked against
//! `ptype /o` of the pyenv builds' DWARF for 3.8.18, 3.9.18, 3.10.13, 3.11.7, 3.12.1, 3.13.0):
//! `_PyRuntimeState` (Include/internal/pycore_runtime.h), `PyInterpreterState`
//! (pycore_interp.h), `PyThreadState` (Include/cpython/pystate.h), `_PyCFrame` (3.11-3.12,
//! cpython/pystate.h), `_PyInterpreterFrame` (pycore_frame.h, 3.11+), `PyFrameObject`
//! (cpython/frameobject.h before 3.11), `PyCodeObject` (cpython/code.h), `_gil_runtime_state`
//! (pycore_gil.h), `PyASCIIObject` (cpython/unicodeobject.h). In 3.13 the process publishes
//! them itself in `_PyRuntime.debug_offsets` (`_Py_DebugOffsets`, pycore_runtime.h), which is
//! read in preference to the table. This module holds data only; it reads no memory.

/// How a thread's innermost frame is reached from its `PyThreadState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameRoot {
    /// `tstate->frame` / `tstate->current_frame`: a pointer at this offset.
    Direct(u64),
    /// `tstate->cframe->current_frame` (3.11, 3.12).
    ViaCFrame { cframe: u64, current: u64 },
}

/// Frame objects before 3.11, interpreter frames from 3.11.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    /// `PyFrameObject`: `f_lasti` is an `int`, in bytes (3.8, 3.9) or code units (3.10).
    Object {
        back: u64,
        code: u64,
        lasti: u64,
        lasti_in_units: bool,
    },
    /// `_PyInterpreterFrame`: `instr` is `prev_instr` (3.11, 3.12) or `instr_ptr` (3.13).
    Interpreter {
        code: u64,
        previous: u64,
        instr: u64,
        owner: u64,
        /// `FRAME_OWNED_BY_CSTACK`: shim frames to skip (3.12+).
        cstack_owner: Option<u8>,
    },
}

/// The line-number table a code object carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineTable {
    /// `co_lnotab` (3.8, 3.9): (byte delta, signed line delta) pairs.
    Lnotab,
    /// `co_linetable` of 3.10: (byte delta, signed line delta or -128) pairs.
    Pairs310,
    /// `co_linetable` of 3.11+: the location table (Objects/locations.md).
    Locations,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub minor: u32,
    pub runtime_interpreters_head: u64,
    /// `_PyRuntime.ceval.gil.{last_holder, locked}` (3.8-3.11).
    pub runtime_gil: Option<(u64, u64)>,
    /// `interp->ceval.gil` (a pointer, 3.12+) and, in the struct it points to,
    /// `{last_holder, locked}`.
    pub interp_gil: Option<(u64, u64, u64)>,
    pub interp_next: u64,
    pub interp_threads_head: u64,
    pub thread_next: u64,
    /// `pthread_self()` of the thread.
    pub thread_id: u64,
    /// The kernel's tid (3.11+).
    pub native_thread_id: Option<u64>,
    pub frame_root: FrameRoot,
    pub frame: FrameKind,
    pub code_filename: u64,
    pub code_name: u64,
    pub code_qualname: Option<u64>,
    pub code_firstlineno: u64,
    pub code_linetable: u64,
    pub line_table: LineTable,
    /// `co_code_adaptive`: where a 3.11+ code object's instructions start.
    pub code_adaptive: Option<u64>,
    /// `sizeof(PyASCIIObject)` and `sizeof(PyCompactUnicodeObject)`: where a compact string's
    /// characters start (ASCII, other).
    pub ascii_size: u64,
    pub compact_size: u64,
}

/// `PyObject.ob_type`, `PyTypeObject.tp_name`, `PyVarObject.ob_size`,
/// `PyBytesObject.ob_sval`, `PyASCIIObject.length` and `.state`: the same in every version read.
pub const OB_TYPE: u64 = 8;
pub const TP_NAME: u64 = 24;
pub const OB_SIZE: u64 = 16;
pub const BYTES_SVAL: u64 = 32;
pub const STR_LENGTH: u64 = 16;
pub const STR_STATE: u64 = 32;

/// The table for a minor version of CPython 3; `None` for one it does not know.
pub fn for_minor(minor: u32) -> Option<Layout> {
    let pre311_frame = |lasti, units| FrameKind::Object {
        back: 24,
        code: 32,
        lasti,
        lasti_in_units: units,
    };
    let pre311 = |gil: (u64, u64), lasti, units, linetable, table| Layout {
        minor,
        runtime_interpreters_head: 32,
        runtime_gil: Some(gil),
        interp_gil: None,
        interp_next: 0,
        interp_threads_head: 8,
        thread_next: 8,
        thread_id: 176,
        native_thread_id: None,
        frame_root: FrameRoot::Direct(24),
        frame: pre311_frame(lasti, units),
        code_filename: 104,
        code_name: 112,
        code_qualname: None,
        code_firstlineno: 40,
        code_linetable: linetable,
        line_table: table,
        code_adaptive: None,
        ascii_size: 48,
        compact_size: 72,
    };
    Some(match minor {
        8 => pre311((1160, 1168), 104, false, 120, LineTable::Lnotab),
        9 => pre311((360, 368), 104, false, 120, LineTable::Lnotab),
        10 => pre311((360, 368), 96, true, 120, LineTable::Pairs310),
        11 => Layout {
            minor,
            runtime_interpreters_head: 40,
            runtime_gil: Some((368, 376)),
            interp_gil: None,
            interp_next: 0,
            interp_threads_head: 16,
            thread_next: 8,
            thread_id: 152,
            native_thread_id: Some(160),
            frame_root: FrameRoot::ViaCFrame {
                cframe: 56,
                current: 8,
            },
            frame: FrameKind::Interpreter {
                code: 32,
                previous: 48,
                instr: 56,
                owner: 69,
                cstack_owner: None,
            },
            code_filename: 112,
            code_name: 120,
            code_qualname: Some(128),
            code_firstlineno: 72,
            code_linetable: 136,
            line_table: LineTable::Locations,
            code_adaptive: Some(184),
            ascii_size: 48,
            compact_size: 72,
        },
        12 => Layout {
            minor,
            runtime_interpreters_head: 40,
            runtime_gil: None,
            interp_gil: Some((384, 8, 16)),
            interp_next: 0,
            interp_threads_head: 72,
            thread_next: 8,
            thread_id: 136,
            native_thread_id: Some(144),
            frame_root: FrameRoot::ViaCFrame {
                cframe: 56,
                current: 0,
            },
            frame: FrameKind::Interpreter {
                code: 0,
                previous: 8,
                instr: 56,
                owner: 70,
                cstack_owner: Some(3),
            },
            code_filename: 112,
            code_name: 120,
            code_qualname: Some(128),
            code_firstlineno: 68,
            code_linetable: 136,
            line_table: LineTable::Locations,
            code_adaptive: Some(192),
            ascii_size: 40,
            compact_size: 56,
        },
        13 => Layout {
            minor,
            runtime_interpreters_head: 632,
            runtime_gil: None,
            interp_gil: Some((16, 8, 16)),
            interp_next: 7264,
            interp_threads_head: 7344,
            thread_next: 8,
            thread_id: 152,
            native_thread_id: Some(160),
            frame_root: FrameRoot::Direct(72),
            frame: FrameKind::Interpreter {
                code: 0,
                previous: 8,
                instr: 56,
                owner: 70,
                cstack_owner: Some(3),
            },
            code_filename: 112,
            code_name: 120,
            code_qualname: Some(128),
            code_firstlineno: 68,
            code_linetable: 136,
            line_table: LineTable::Locations,
            code_adaptive: Some(200),
            ascii_size: 40,
            compact_size: 56,
        },
        _ => return None,
    })
}

/// Bytes of `_Py_DebugOffsets` read from the start of `_PyRuntime` (3.13's layout).
pub const DEBUG_OFFSETS_LEN: usize = 584;

/// 3.13's `_Py_DebugOffsets` (cookie `xdebugpy`, then `version` = `PY_VERSION_HEX`): the
/// offsets the running process published, over the table's. `None` when the bytes are not
/// that structure or another version's (its layout changes between minor versions).
pub fn from_debug_offsets(b: &[u8]) -> Option<Layout> {
    use super::super::notes::u64_at;
    if b.get(..8)? != b"xdebugpy" {
        return None;
    }
    let version = u64_at(b, 8)?;
    if version >> 24 != 3 || (version >> 16) & 0xff != 13 || u64_at(b, 16)? != 0 {
        return None;
    }
    let at = |o: usize| u64_at(b, o);
    let mut l = for_minor(13)?;
    l.runtime_interpreters_head = at(40)?;
    l.interp_next = at(64)?;
    l.interp_threads_head = at(72)?;
    l.thread_next = at(168)?;
    l.frame_root = FrameRoot::Direct(at(184)?);
    l.thread_id = at(192)?;
    l.native_thread_id = Some(at(200)?);
    l.frame = FrameKind::Interpreter {
        code: at(240)?,
        previous: at(232)?,
        instr: at(248)?,
        owner: at(264)?,
        cstack_owner: Some(3),
    };
    l.code_filename = at(280)?;
    l.code_name = at(288)?;
    l.code_qualname = Some(at(296)?);
    l.code_linetable = at(304)?;
    l.code_firstlineno = at(312)?;
    l.code_adaptive = Some(at(344)?);
    l.ascii_size = at(560)?;
    // No offset is published for the compact (non-ASCII) header: the table's.
    Some(l)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_version_has_a_table_and_others_none() {
        for m in 8..=13 {
            assert_eq!(for_minor(m).map(|l| l.minor), Some(m));
        }
        assert!(for_minor(7).is_none() && for_minor(14).is_none());
    }

    #[test]
    fn debug_offsets_need_the_cookie_and_version_3_13() {
        let mut b = vec![0u8; DEBUG_OFFSETS_LEN];
        assert!(from_debug_offsets(&b).is_none());
        b[..8].copy_from_slice(b"xdebugpy");
        b[8..16].copy_from_slice(&0x030e_00f0u64.to_le_bytes());
        assert!(from_debug_offsets(&b).is_none(), "3.14 is another layout");
        b[8..16].copy_from_slice(&0x030d_00f0u64.to_le_bytes());
        b[40..48].copy_from_slice(&632u64.to_le_bytes());
        assert_eq!(
            from_debug_offsets(&b).map(|l| l.runtime_interpreters_head),
            Some(632)
        );
        assert!(from_debug_offsets(&b[..100]).is_none());
    }
}
