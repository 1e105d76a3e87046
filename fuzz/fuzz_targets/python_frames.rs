//! Fuzz the Python-stack reader (src/sources/elfcore/python): the input is a process's memory
//! (mapped at a fixed address, with `_PyRuntime` at its start) plus a byte choosing the
//! CPython version's layout and which type addresses are known; the walk and the line-table
//! decoders must return for any bytes, never panic or loop. `cargo +nightly fuzz run
//! python_frames` from the repo root.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trainwreck::sources::elfcore::python::{self, CoreThread, KnownTypes, Mem, layout, lines};

const BASE: u64 = 0x7f00_0000_0000;

struct Bytes<'a>(&'a [u8]);

impl Mem for Bytes<'_> {
    fn read(&mut self, addr: u64, len: usize) -> Option<Vec<u8>> {
        let off = usize::try_from(addr.checked_sub(BASE)?).ok()?;
        self.0.get(off..off.checked_add(len)?).map(<[u8]>::to_vec)
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, mem)) = data.split_first() else {
        return;
    };
    let minor = 8 + u32::from(pick % 6);
    let l = if pick & 0x80 != 0 {
        layout::from_debug_offsets(mem).or_else(|| layout::for_minor(minor))
    } else {
        layout::for_minor(minor)
    };
    let Some(l) = l else { return };
    let known = if pick & 0x40 != 0 {
        KnownTypes {
            code: Some(BASE + 0x100),
            str: Some(BASE + 0x200),
            bytes: Some(BASE + 0x300),
        }
    } else {
        KnownTypes::default()
    };
    let threads = [CoreThread {
        tid: Some(1),
        thread_pointer: Some(BASE),
    }];
    let mut w = Vec::new();
    let _ = python::walk(&mut Bytes(mem), l, known, BASE, &threads, Some(1), &mut w);
    for t in [
        layout::LineTable::Lnotab,
        layout::LineTable::Pairs310,
        layout::LineTable::Locations,
    ] {
        let _ = lines::line_at(t, mem, i64::from(pick), i64::from(pick) * 3);
    }
});
