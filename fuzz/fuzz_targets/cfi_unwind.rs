//! Fuzz the CFI unwinder (src/sources/elfcore/unwind.rs): the input is an `.eh_frame` (or,
//! by a flag byte, a `.debug_frame`), an optional `.eh_frame_hdr`, registers and stack memory;
//! building the tables and stepping through them (expressions included) must return for any
//! bytes, never panic or loop. `cargo +nightly fuzz run cfi_unwind` from the repo root.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trainwreck::sources::elfcore::notes::Arch;
use trainwreck::sources::elfcore::unwind::{Cfi, Context, REGS, Section, Step};

const STACK: u64 = 0x7ffc_0000_0000;

/// A little-endian u16 length, then that many bytes (clipped to what is left).
fn take<'a>(data: &mut &'a [u8]) -> &'a [u8] {
    let n = match data {
        [a, b, ..] => usize::from(u16::from_le_bytes([*a, *b])),
        _ => 0,
    };
    let rest = data.get(2..).unwrap_or(&[]);
    let (part, tail) = rest.split_at(n.min(rest.len()));
    *data = tail;
    part
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, mut data)) = data.split_first() else {
        return;
    };
    let frame = take(&mut data).to_vec();
    let hdr = take(&mut data).to_vec();
    let stack = take(&mut data);
    let section = |data: Vec<u8>| Section { addr: 0x1000, data };
    let (eh, debug) = if flags & 1 == 0 {
        (Some(section(frame)), None)
    } else {
        (None, Some(section(frame)))
    };
    let hdr = (flags & 2 != 0).then(|| Section {
        addr: 0x800,
        data: hdr,
    });
    let Some(cfi) = Cfi::new(eh, hdr, debug, Some(0x2000)) else {
        return;
    };
    let arch = if flags & 4 == 0 {
        Arch::X86_64
    } else {
        Arch::Aarch64
    };
    let mut regs = vec![Some(STACK); REGS];
    for (i, c) in data.chunks_exact(8).take(REGS).enumerate() {
        regs[i] = Some(u64::from_le_bytes(c.try_into().unwrap_or([0; 8])));
    }
    let mut read = |a: u64| {
        let off = usize::try_from(a.checked_sub(STACK)?).ok()?;
        let b = stack.get(off..off.checked_add(8)?)?;
        Some(u64::from_le_bytes(b.try_into().ok()?))
    };
    let mut ctx = Context::new();
    let mut pc = 0x1000 + u64::from(flags >> 3) * 16;
    for _ in 0..16 {
        match cfi.step(&mut ctx, arch, pc, &regs, &mut read) {
            Step::Caller { pc: next, regs: r, .. } => {
                pc = next;
                regs = r;
            }
            Step::Outermost | Step::NoInfo => break,
        }
    }
});
