//! Call-frame information (CFI) of one ELF module and one unwind step through it, with gimli:
//! `.eh_frame` (searched through `.eh_frame_hdr`'s table when the module has one) and
//! `.debug_frame`, from a frame's registers to its caller's. Reads no file and no memory
//! itself: the sections are handed in, stack memory is read through a callback. Must never
//! panic on hostile CFI and never loop: gimli bounds the rows of a table, the expressions are
//! bounded here, and the walk in `stack.rs` checks every step it is given.

use super::notes::Arch;
use gimli::{
    BaseAddresses, CfaRule, DebugFrame, EhFrame, EhFrameHdr, EndianRcSlice, Expression,
    FrameDescriptionEntry, LittleEndian, Location, ParsedEhFrameHdr, Register, RegisterRule,
    UnwindContext, UnwindSection, UnwindTableRow, Value,
};
use std::rc::Rc;

pub type R = EndianRcSlice<LittleEndian>;

/// The unwinder's scratch state, reused across steps.
pub type Context = UnwindContext<usize>;

/// Registers tracked by the walk, by DWARF number (x86-64: 0-16; aarch64: 0-31).
pub const REGS: usize = 33;

/// A section's bytes and its link-time address.
pub struct Section {
    pub addr: u64,
    pub data: Vec<u8>,
}

fn reader(data: Vec<u8>) -> R {
    EndianRcSlice::new(Rc::from(data.into_boxed_slice()), LittleEndian)
}

/// The CFI of one module, in link-time addresses.
pub struct Cfi {
    eh: Option<(EhFrame<R>, BaseAddresses, Option<ParsedEhFrameHdr<R>>)>,
    debug: Option<(DebugFrame<R>, BaseAddresses)>,
}

/// What one step found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The caller: its pc (a return address unless `signal`) and its registers.
    Caller {
        pc: u64,
        regs: Vec<Option<u64>>,
        /// The frame just unwound was a signal trampoline (`S` augmentation): the caller's
        /// pc is the interrupted instruction, not a return address.
        signal: bool,
    },
    /// The CFI says there is no caller (the return address is undefined: `_start`, a thread's
    /// start routine).
    Outermost,
    /// No CFI covers the address, or its rules could not be evaluated with the memory at hand.
    NoInfo,
}

/// Whether an `.eh_frame_hdr` agrees with the `.eh_frame` it indexes: it points at the
/// section's address and every entry of its search table points into the section. gimli turns
/// an entry into a section offset by subtracting the header's pointer unchecked, so a hostile
/// header underflows there (a panic where overflow checks are on, a wild offset where not).
/// A header that does not fit is dropped and `.eh_frame` is searched itself.
fn header_fits(
    hdr: &ParsedEhFrameHdr<R>,
    bases: &BaseAddresses,
    span: &std::ops::Range<u64>,
) -> bool {
    if hdr.eh_frame_ptr() != gimli::Pointer::Direct(span.start) {
        return false;
    }
    let Some(table) = hdr.table() else {
        return true;
    };
    let mut entries = table.iter(bases);
    loop {
        match entries.next() {
            Ok(Some((_, gimli::Pointer::Direct(fde)))) if span.contains(&fde) => {}
            Ok(None) => return true,
            _ => return false,
        }
    }
}

impl Cfi {
    /// CFI from a module's sections; `None` when it has none usable.
    pub fn new(
        eh_frame: Option<Section>,
        eh_frame_hdr: Option<Section>,
        debug_frame: Option<Section>,
        text_addr: Option<u64>,
    ) -> Option<Cfi> {
        let text = text_addr.unwrap_or(0);
        let eh = eh_frame.filter(|s| !s.data.is_empty()).map(|s| {
            let mut bases = BaseAddresses::default().set_eh_frame(s.addr).set_text(text);
            let span = s.addr..s.addr.saturating_add(s.data.len() as u64);
            let mut frame = EhFrame::from(reader(s.data));
            frame.set_address_size(8);
            let hdr = eh_frame_hdr.and_then(|h| {
                bases = bases.clone().set_eh_frame_hdr(h.addr);
                let hdr = EhFrameHdr::from(reader(h.data)).parse(&bases, 8).ok()?;
                header_fits(&hdr, &bases, &span).then_some(hdr)
            });
            (frame, bases, hdr)
        });
        let debug = debug_frame.filter(|s| !s.data.is_empty()).map(|s| {
            let mut frame = DebugFrame::from(reader(s.data));
            frame.set_address_size(8);
            (frame, BaseAddresses::default().set_text(text))
        });
        if eh.is_none() && debug.is_none() {
            return None;
        }
        Some(Cfi { eh, debug })
    }

    /// The unwind row for a link-time address, with the FDE's return-address column and
    /// whether it is a signal trampoline.
    fn row(
        &self,
        ctx: &mut Context,
        addr: u64,
    ) -> Option<(UnwindTableRow<usize>, Register, bool, Section2<'_>)> {
        if let Some((frame, bases, hdr)) = &self.eh {
            let fde = match hdr.as_ref().and_then(|h| h.table()) {
                Some(t) => t.fde_for_address(frame, bases, addr, EhFrame::cie_from_offset),
                None => frame.fde_for_address(bases, addr, EhFrame::cie_from_offset),
            };
            if let Ok(fde) = fde
                && let Some(r) = row_of(frame, bases, &fde, ctx, addr)
            {
                return Some((r.0, r.1, r.2, Section2::Eh(frame)));
            }
        }
        if let Some((frame, bases)) = &self.debug
            && let Ok(fde) = frame.fde_for_address(bases, addr, DebugFrame::cie_from_offset)
            && let Some(r) = row_of(frame, bases, &fde, ctx, addr)
        {
            return Some((r.0, r.1, r.2, Section2::Debug(frame)));
        }
        None
    }

    /// Whether the FDE covering this link-time address is a signal trampoline (`S`: glibc's
    /// `__restore_rt`, whose FDE starts one byte early so that `ret - 1` finds it).
    pub fn is_signal_trampoline(&self, ctx: &mut Context, addr: u64) -> bool {
        self.row(ctx, addr).is_some_and(|r| r.2)
    }

    /// Unwind one frame. `lookup`: the link-time address whose row applies (the pc itself for
    /// an interrupted frame, the byte before a return address otherwise); `regs`: the frame's
    /// registers by DWARF number; `read`: an 8-byte word of the process's memory.
    pub fn step(
        &self,
        ctx: &mut Context,
        arch: Arch,
        lookup: u64,
        regs: &[Option<u64>],
        read: &mut dyn FnMut(u64) -> Option<u64>,
    ) -> Step {
        let Some((row, ra, signal, section)) = self.row(ctx, lookup) else {
            return Step::NoInfo;
        };
        let reg = |r: Register| regs.get(r.0 as usize).copied().flatten();
        let cfa = match row.cfa() {
            CfaRule::RegisterAndOffset { register, offset } => {
                reg(*register).and_then(|v| v.checked_add_signed(*offset))
            }
            CfaRule::Expression(e) => section
                .expression(e)
                .and_then(|e| evaluate(e, None, regs, read)),
        };
        let Some(cfa) = cfa else {
            return Step::NoInfo;
        };
        let sp = Register(match arch {
            Arch::Aarch64 => 31,
            _ => 7,
        });
        let mut out: Vec<Option<u64>> = regs.to_vec();
        out.resize(REGS, None);
        let mut ra_value = reg(ra);
        let mut sp_value = Some(cfa);
        for n in 0..REGS as u16 {
            let r = Register(n);
            let Some(rule) = row.register(r) else {
                continue;
            };
            let v = match rule {
                RegisterRule::Undefined => {
                    if r == ra {
                        return Step::Outermost;
                    }
                    None
                }
                RegisterRule::SameValue | RegisterRule::Architectural => reg(r),
                RegisterRule::Offset(o) => cfa.checked_add_signed(o).and_then(&mut *read),
                RegisterRule::ValOffset(o) => cfa.checked_add_signed(o),
                RegisterRule::Register(from) => reg(from),
                RegisterRule::Expression(e) => section
                    .expression(&e)
                    .and_then(|e| evaluate(e, Some(cfa), regs, read))
                    .and_then(&mut *read),
                RegisterRule::ValExpression(e) => section
                    .expression(&e)
                    .and_then(|e| evaluate(e, Some(cfa), regs, read)),
                RegisterRule::Constant(c) => Some(c),
            };
            if r == ra {
                ra_value = v;
            }
            if r == sp {
                sp_value = v;
            }
            out[n as usize] = v;
        }
        // The return-address column is no register on x86-64 (16 = rip).
        let Some(pc) = ra_value else {
            return Step::NoInfo;
        };
        if pc == 0 {
            return Step::Outermost;
        }
        out[sp.0 as usize] = sp_value;
        if (ra.0 as usize) < REGS {
            out[ra.0 as usize] = Some(pc);
        }
        Step::Caller {
            pc,
            regs: out,
            signal,
        }
    }
}

/// Which section an FDE came from (its expressions are read from there).
enum Section2<'a> {
    Eh(&'a EhFrame<R>),
    Debug(&'a DebugFrame<R>),
}

impl Section2<'_> {
    fn expression(&self, e: &gimli::UnwindExpression<usize>) -> Option<Expression<R>> {
        match self {
            Section2::Eh(s) => e.get(*s).ok(),
            Section2::Debug(s) => e.get(*s).ok(),
        }
    }
}

fn row_of<S: UnwindSection<R>>(
    section: &S,
    bases: &BaseAddresses,
    fde: &FrameDescriptionEntry<R>,
    ctx: &mut Context,
    addr: u64,
) -> Option<(UnwindTableRow<usize>, Register, bool)> {
    let row = fde
        .unwind_info_for_address(section, bases, ctx, addr)
        .ok()?
        .clone();
    Some((
        row,
        fde.cie().return_address_register(),
        fde.is_signal_trampoline(),
    ))
}

/// Evaluate a CFI expression (DW_OP_breg, DW_OP_deref, arithmetic) to a value; `initial` is
/// the CFA, pushed first for register rules. Bounded: 256 operations, 64 memory or register
/// requests; anything else an expression asks for (TLS, entry values) gives `None`.
fn evaluate(
    expr: Expression<R>,
    initial: Option<u64>,
    regs: &[Option<u64>],
    read: &mut dyn FnMut(u64) -> Option<u64>,
) -> Option<u64> {
    let encoding = gimli::Encoding {
        address_size: 8,
        format: gimli::Format::Dwarf32,
        version: 4,
    };
    let mut ev = expr.evaluation(encoding);
    if let Some(v) = initial {
        ev.set_initial_value(v);
    }
    ev.set_max_iterations(256);
    let mut r = ev.evaluate().ok()?;
    for _ in 0..64 {
        r = match r {
            gimli::EvaluationResult::Complete => break,
            gimli::EvaluationResult::RequiresMemory { address, size, .. } => {
                let v = read(address)?;
                let v = if size >= 8 {
                    v
                } else {
                    v & ((1u64 << (u32::from(size) * 8)) - 1)
                };
                ev.resume_with_memory(Value::Generic(v)).ok()?
            }
            gimli::EvaluationResult::RequiresRegister { register, .. } => {
                let v = regs.get(register.0 as usize).copied().flatten()?;
                ev.resume_with_register(Value::Generic(v)).ok()?
            }
            _ => return None,
        };
    }
    if r != gimli::EvaluationResult::Complete {
        return None;
    }
    match ev.as_result().first()?.location {
        Location::Address { address } => Some(address),
        Location::Value { value } => value.to_u64(u64::MAX).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-written `.eh_frame` with one CIE (x86-64's: CFA = rsp+8, ra at CFA-8) and one
    /// FDE for [0x1000, 0x1100) that pushes rbp at 0x1001 (CFA = rsp+16, rbp at CFA-16).
    fn eh_frame() -> Vec<u8> {
        let mut cie = vec![0, 0, 0, 0, 1, b'z', b'R', 0, 1, 0x78, 16, 1, 0x1b];
        // DW_CFA_def_cfa r7 8; DW_CFA_offset r16 1 (x -8)
        cie.extend_from_slice(&[0x0c, 7, 8, 0x90, 1]);
        while (cie.len() + 4) % 8 != 0 {
            cie.push(0);
        }
        let mut out = (cie.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(&cie);
        let fde_at = out.len();
        let mut fde = Vec::new();
        fde.extend_from_slice(&((fde_at + 4) as u32).to_le_bytes()); // CIE pointer
        // pc-relative sdata4 start: the field is at section offset fde_at + 8.
        let start = 0x1000i64 - (fde_at as i64 + 8);
        fde.extend_from_slice(&(start as i32).to_le_bytes());
        fde.extend_from_slice(&0x100u32.to_le_bytes());
        fde.push(0); // augmentation length
        // DW_CFA_advance_loc 1; DW_CFA_def_cfa_offset 16; DW_CFA_offset r6 2 (x -8)
        fde.extend_from_slice(&[0x41, 0x0e, 16, 0x86, 2]);
        while (fde.len() + 4) % 8 != 0 {
            fde.push(0);
        }
        out.extend_from_slice(&(fde.len() as u32).to_le_bytes());
        out.extend_from_slice(&fde);
        out.extend_from_slice(&[0, 0, 0, 0]);
        out
    }

    /// An `.eh_frame_hdr` (version 1, every field `udata4`) with one search-table entry.
    fn eh_frame_hdr(eh_frame_ptr: u32, loc: u32, fde: u32) -> Vec<u8> {
        let mut h = vec![1, 0x03, 0x03, 0x03];
        for v in [eh_frame_ptr, 1, loc, fde] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        h
    }

    #[test]
    fn a_header_that_does_not_fit_its_eh_frame_is_dropped_not_trusted() {
        // A header pointing past its FDE (gimli's unchecked subtraction underflowed: found by
        // the cfi_unwind fuzzer, fuzz/regressions/cfi_unwind/), one whose table entry points
        // outside the section, and one that fits: each finds the FDE.
        let frame = eh_frame();
        let fde_at = 4 + u32::from_le_bytes(frame[..4].try_into().unwrap());
        for (ptr, fde, fits) in [(0x100, 0x10, false), (0, 0x9000, false), (0, fde_at, true)] {
            let hdr = eh_frame_hdr(ptr, 0x1000, fde);
            let section = Section {
                addr: 0x8000,
                data: hdr.clone(),
            };
            let bases = BaseAddresses::default()
                .set_eh_frame(0)
                .set_eh_frame_hdr(0x8000);
            let parsed = EhFrameHdr::from(reader(hdr))
                .parse(&bases, 8)
                .expect("header");
            let span = 0..eh_frame().len() as u64;
            assert_eq!(
                header_fits(&parsed, &bases, &span),
                fits,
                "{ptr:#x} {fde:#x}"
            );
            let cfi = Cfi::new(
                Some(Section {
                    addr: 0,
                    data: eh_frame(),
                }),
                Some(section),
                None,
                None,
            )
            .expect("cfi");
            let got = cfi.step(
                &mut UnwindContext::new(),
                Arch::X86_64,
                0x1000,
                &regs_at(0x7008),
                &mut |a| (a == 0x7008).then_some(0x2040),
            );
            assert!(matches!(got, Step::Caller { pc: 0x2040, .. }), "{got:?}");
        }
    }

    #[test]
    fn a_pushed_frame_pointer_is_restored_and_the_return_address_read() {
        let cfi = Cfi::new(
            Some(Section {
                addr: 0,
                data: eh_frame(),
            }),
            None,
            None,
            None,
        )
        .expect("cfi");
        let mut ctx = UnwindContext::new();
        let mut regs = vec![None; REGS];
        regs[7] = Some(0x7000); // rsp
        regs[6] = Some(0x1234); // rbp (pushed)
        let mut mem = |a: u64| match a {
            0x7000 => Some(0x5555), // saved rbp
            0x7008 => Some(0x2040), // return address
            _ => None,
        };
        let got = cfi.step(&mut ctx, Arch::X86_64, 0x1010, &regs, &mut mem);
        let Step::Caller { pc, regs, signal } = got else {
            panic!("no caller: {got:?}");
        };
        assert_eq!(
            (pc, regs[7], regs[6], signal),
            (0x2040, Some(0x7010), Some(0x5555), false)
        );
        // Before the push, only the return address is on the stack.
        let got = cfi.step(&mut ctx, Arch::X86_64, 0x1000, &regs_at(0x7008), &mut mem);
        assert!(matches!(got, Step::Caller { pc: 0x2040, .. }), "{got:?}");
        assert_eq!(
            cfi.step(&mut ctx, Arch::X86_64, 0x3000, &regs, &mut mem),
            Step::NoInfo
        );
    }

    fn regs_at(sp: u64) -> Vec<Option<u64>> {
        let mut r = vec![None; REGS];
        r[7] = Some(sp);
        r
    }
}
