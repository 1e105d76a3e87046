//! Names for code addresses from the ELF files a core mapped, when this machine (or a sysroot
//! or search path) has them: `.symtab`, else `.dynsym`, read with goblin from positioned reads
//! of the headers and symbol sections only. A file whose build-id differs from the one recorded
//! in the core is never used: a wrong name is worse than none.

use super::input::{CoreBytes, FileBytes};
use super::notes;
use super::unwind::Section;
use goblin::container::{Container, Ctx, Endian};
use goblin::elf::compression_header::{ELFCOMPRESS_ZLIB, ELFCOMPRESS_ZSTD};
use goblin::elf::header::{self, Header};
use goblin::elf::program_header::{PT_LOAD, PT_NOTE, ProgramHeader};
use goblin::elf::section_header::{
    SHF_COMPRESSED, SHT_DYNSYM, SHT_NOBITS, SHT_SYMTAB, SectionHeader,
};
use goblin::elf::sym::{STT_FUNC, STT_GNU_IFUNC, Symtab};
use goblin::strtab::Strtab;
use std::fs::File;
use std::path::{Path, PathBuf};

/// Symbol tables larger than this are not read (a debug build of libtorch would be).
const MAX_SYMTAB: usize = 48 << 20;
/// Sections (CFI, DWARF) larger than this, raw or decompressed, are not read.
pub const MAX_SECTION: usize = 64 << 20;

pub struct ElfImage {
    pub path: PathBuf,
    bytes: FileBytes,
    phdrs: Vec<ProgramHeader>,
    pub build_id: Option<Vec<u8>>,
    /// (start, size, name), sorted by start.
    syms: Vec<(u64, u64, String)>,
    /// Section headers with their names (empty when the file has none or they are damaged).
    sections: Vec<(String, SectionHeader)>,
    /// The module's CFI, read on first use (`None` inside: it has none).
    cfi: Option<Option<super::unwind::Cfi>>,
}

fn ctx_of(h: &Header) -> Option<Ctx> {
    let container = match h.e_ident[header::EI_CLASS] {
        header::ELFCLASS64 => Container::Big,
        header::ELFCLASS32 => Container::Little,
        _ => return None,
    };
    let le = match h.e_ident[header::EI_DATA] {
        header::ELFDATA2LSB => Endian::Little,
        header::ELFDATA2MSB => Endian::Big,
        _ => return None,
    };
    Some(Ctx::new(container, le))
}

/// Header and program headers of an ELF image whose first bytes are `head`.
pub fn parse_head(head: &[u8]) -> Option<(Header, Ctx, Vec<ProgramHeader>)> {
    let h = goblin::elf::Elf::parse_header(head).ok()?;
    let ctx = ctx_of(&h)?;
    let phoff = usize::try_from(h.e_phoff).ok()?;
    let count = (h.e_phnum as usize).min(4096);
    let ph = ProgramHeader::parse(head, phoff, count, ctx).ok()?;
    Some((h, ctx, ph))
}

/// The build-id of an image, from its PT_NOTE segments, given a way to read its bytes.
pub fn build_id_from(
    phdrs: &[ProgramHeader],
    read: &mut dyn FnMut(u64, usize) -> Option<Vec<u8>>,
) -> Option<Vec<u8>> {
    phdrs
        .iter()
        .filter(|p| p.p_type == PT_NOTE && p.p_filesz > 0 && p.p_filesz < 1 << 20)
        .find_map(|p| notes::build_id(&read(p.p_offset, p.p_filesz as usize)?))
}

impl ElfImage {
    pub fn open(path: &Path) -> Option<ElfImage> {
        let f = File::open(path).ok()?;
        if !f.metadata().ok()?.is_file() {
            return None;
        }
        let mut bytes = FileBytes(f);
        let head = bytes.read_at(0, 64).ok()?;
        let h = goblin::elf::Elf::parse_header(&head).ok()?;
        let ctx = ctx_of(&h)?;
        let phsize = h.e_phentsize as usize * h.e_phnum as usize;
        let phbuf = bytes.read_at(h.e_phoff, phsize.min(1 << 20)).ok()?;
        let phdrs = ProgramHeader::parse(&phbuf, 0, (h.e_phnum as usize).min(4096), ctx).ok()?;
        let build_id = build_id_from(&phdrs, &mut |off, len| bytes.read_at(off, len).ok());
        let syms = read_symbols(&mut bytes, &h, ctx).unwrap_or_default();
        let sections = read_sections(&mut bytes, &h, ctx).unwrap_or_default();
        Some(ElfImage {
            path: path.to_path_buf(),
            bytes,
            phdrs,
            build_id,
            syms,
            sections,
            cfi: None,
        })
    }

    /// Whether the file has a section of this name with bytes in the file (not `SHT_NOBITS`,
    /// as a separate debug file keeps the sections it does not carry).
    pub fn has_section(&self, name: &str) -> bool {
        self.sections
            .iter()
            .any(|(n, s)| n == name && s.sh_type != SHT_NOBITS && s.sh_size > 0)
    }

    /// A section's bytes (decompressed when `SHF_COMPRESSED`, zlib or zstd) and link-time
    /// address. `None` when absent, empty, over `MAX_SECTION`, or damaged.
    pub fn section(&mut self, name: &str) -> Option<Section> {
        let (_, sh) = self
            .sections
            .iter()
            .find(|(n, s)| n == name && s.sh_type != SHT_NOBITS)?;
        let (addr, off, size, flags) = (sh.sh_addr, sh.sh_offset, sh.sh_size, sh.sh_flags);
        if size == 0 || size > MAX_SECTION as u64 || size as usize > super::input::MAX_READ {
            return None;
        }
        let raw = self.read_file(off, size as usize)?;
        if flags & u64::from(SHF_COMPRESSED) == 0 {
            return Some(Section { addr, data: raw });
        }
        // Elf64_Chdr: ch_type, ch_reserved, ch_size, ch_addralign.
        let (kind, full) = (notes::u32_at(&raw, 0)?, notes::u64_at(&raw, 8)?);
        if full > MAX_SECTION as u64 {
            return None;
        }
        let body = raw.get(24..)?;
        let mut data = Vec::with_capacity(full as usize);
        let limit = full.saturating_add(1);
        let got = match kind {
            ELFCOMPRESS_ZLIB => std::io::Read::read_to_end(
                &mut std::io::Read::take(flate2::read::ZlibDecoder::new(body), limit),
                &mut data,
            ),
            ELFCOMPRESS_ZSTD => zstd::stream::read::Decoder::new(body).and_then(|d| {
                std::io::Read::read_to_end(&mut std::io::Read::take(d, limit), &mut data)
            }),
            _ => return None,
        };
        (got.ok()? as u64 == full).then_some(Section { addr, data })
    }

    /// The name and CRC of the separate debug file `.gnu_debuglink` names.
    pub fn debuglink(&mut self) -> Option<(String, u32)> {
        let s = self.section(".gnu_debuglink")?;
        let end = s.data.iter().position(|&b| b == 0)?;
        let name = std::str::from_utf8(&s.data[..end]).ok()?.to_string();
        let crc_at = (end + 4) & !3;
        let crc = notes::u32_at(&s.data, crc_at)?;
        (!name.is_empty() && !name.contains('/')).then_some((name, crc))
    }

    /// The module's call-frame information: `.eh_frame` (with `.eh_frame_hdr`) and its own
    /// `.debug_frame`, read once. (A separate debug file's `.debug_frame` is not read: the
    /// loaded file's `.eh_frame` covers what a core's frames need on Linux.)
    pub fn cfi(&mut self) -> Option<&super::unwind::Cfi> {
        if self.cfi.is_none() {
            let eh = self.section(".eh_frame");
            let hdr = self.section(".eh_frame_hdr");
            let debug = self.section(".debug_frame");
            let text = self
                .sections
                .iter()
                .find(|(n, _)| n == ".text")
                .map(|(_, s)| s.sh_addr);
            self.cfi = Some(super::unwind::Cfi::new(eh, hdr, debug, text));
        }
        self.cfi.as_ref().and_then(Option::as_ref)
    }

    /// The link-time address of a byte of the file.
    pub fn vaddr_of_file_offset(&self, file_off: u64) -> Option<u64> {
        self.phdrs
            .iter()
            .filter(|p| p.p_type == PT_LOAD)
            .find(|p| p.p_offset <= file_off && file_off < p.p_offset.saturating_add(p.p_filesz))
            .map(|p| p.p_vaddr.wrapping_add(file_off - p.p_offset))
    }

    /// The function containing a link-time address, with the offset into it.
    pub fn symbol_at(&self, vaddr: u64) -> Option<(String, u64)> {
        let i = self.syms.partition_point(|s| s.0 <= vaddr);
        let (start, size, name) = self.syms.get(i.checked_sub(1)?)?;
        let off = vaddr - start;
        // Size 0 (hand-written assembly) is accepted only close to the symbol.
        if off < *size || (*size == 0 && off < 4096) {
            Some((name.clone(), off))
        } else {
            None
        }
    }

    /// Bytes at a link-time address, from the file (read-only data such as `Py_Version`).
    pub fn read_vaddr(&mut self, vaddr: u64, len: usize) -> Option<Vec<u8>> {
        let off = self
            .phdrs
            .iter()
            .filter(|p| p.p_type == PT_LOAD)
            .find(|p| p.p_vaddr <= vaddr && vaddr - p.p_vaddr < p.p_filesz)
            .map(|p| p.p_offset + (vaddr - p.p_vaddr))?;
        self.read_file(off, len)
    }

    /// The link-time address of a named data object (`_PyRuntime`), from `.symtab` or
    /// `.dynsym`. Reads the symbol tables again: asked once per interpreter module.
    pub fn object_symbol(&mut self, want: &str) -> Option<u64> {
        let head = self.bytes.read_at(0, 64).ok()?;
        let h = goblin::elf::Elf::parse_header(&head).ok()?;
        let ctx = ctx_of(&h)?;
        find_symbol(&mut self.bytes, &h, ctx, want)
    }

    /// Bytes of the file (code before a return address, to check it is a call).
    pub fn read_file(&mut self, off: u64, len: usize) -> Option<Vec<u8>> {
        self.bytes.read_at(off, len).ok().filter(|b| b.len() == len)
    }
}

/// Hands each symbol table of `kinds`, in that order, parsed with its string table, to `each`
/// until it returns true. Missing, over-size or damaged tables are skipped, not errors.
fn each_symtab(
    bytes: &mut FileBytes,
    h: &Header,
    ctx: Ctx,
    kinds: [u32; 2],
    mut each: impl FnMut(&Symtab, &Strtab) -> bool,
) -> Option<()> {
    if h.e_shnum == 0 || h.e_shentsize == 0 {
        return None;
    }
    let shsize = (h.e_shentsize as usize).checked_mul(h.e_shnum as usize)?;
    let shbuf = bytes.read_at(h.e_shoff, shsize.min(4 << 20)).ok()?;
    let shdrs = SectionHeader::parse_from(&shbuf, 0, (h.e_shnum as usize).min(65535), ctx).ok()?;
    for want in kinds {
        let Some(sec) = shdrs.iter().find(|s| s.sh_type == want) else {
            continue;
        };
        let Some(strsec) = shdrs.get(sec.sh_link as usize) else {
            continue;
        };
        let (symlen, strlen) = (sec.sh_size as usize, strsec.sh_size as usize);
        if symlen > MAX_SYMTAB || strlen > MAX_SYMTAB || sec.sh_entsize == 0 {
            continue;
        }
        let (Ok(symbuf), Ok(strbuf)) = (
            bytes.read_at(sec.sh_offset, symlen),
            bytes.read_at(strsec.sh_offset, strlen),
        ) else {
            continue;
        };
        let count = symbuf.len() / sec.sh_entsize as usize;
        let (Ok(tab), Ok(strtab)) = (
            Symtab::parse(&symbuf, 0, count, ctx),
            Strtab::parse(&strbuf, 0, strbuf.len(), 0),
        ) else {
            continue;
        };
        if each(&tab, &strtab) {
            break;
        }
    }
    Some(())
}

/// The section headers, named from the section-name string table.
fn read_sections(
    bytes: &mut FileBytes,
    h: &Header,
    ctx: Ctx,
) -> Option<Vec<(String, SectionHeader)>> {
    if h.e_shnum == 0 || h.e_shentsize == 0 {
        return None;
    }
    let shsize = (h.e_shentsize as usize).checked_mul(h.e_shnum as usize)?;
    let shbuf = bytes.read_at(h.e_shoff, shsize.min(4 << 20)).ok()?;
    let shdrs = SectionHeader::parse_from(&shbuf, 0, (h.e_shnum as usize).min(65535), ctx).ok()?;
    let names = shdrs.get(h.e_shstrndx as usize)?;
    if names.sh_size > 16 << 20 {
        return None;
    }
    let strbuf = bytes
        .read_at(names.sh_offset, names.sh_size as usize)
        .ok()?;
    let strtab = Strtab::parse(&strbuf, 0, strbuf.len(), 0).ok()?;
    Some(
        shdrs
            .into_iter()
            .map(|s| {
                let n = strtab.get_at(s.sh_name).unwrap_or("").to_string();
                (n, s)
            })
            .collect(),
    )
}

fn read_symbols(bytes: &mut FileBytes, h: &Header, ctx: Ctx) -> Option<Vec<(u64, u64, String)>> {
    let mut out = Vec::new();
    // .symtab holds static functions too; .dynsym is the fallback of stripped libraries.
    each_symtab(bytes, h, ctx, [SHT_SYMTAB, SHT_DYNSYM], |tab, strtab| {
        for s in tab.iter() {
            let ty = s.st_type();
            if (ty == STT_FUNC || ty == STT_GNU_IFUNC)
                && s.st_value != 0
                && let Some(name) = strtab.get_at(s.st_name).filter(|n| !n.is_empty())
            {
                out.push((s.st_value, s.st_size, name.to_string()));
            }
        }
        !out.is_empty()
    })?;
    out.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    out.dedup_by_key(|s| s.0);
    Some(out)
}

fn find_symbol(bytes: &mut FileBytes, h: &Header, ctx: Ctx, want: &str) -> Option<u64> {
    let mut found = None;
    each_symtab(bytes, h, ctx, [SHT_DYNSYM, SHT_SYMTAB], |tab, strtab| {
        found = tab
            .iter()
            .find(|s| s.st_value != 0 && strtab.get_at(s.st_name) == Some(want))
            .map(|s| s.st_value);
        found.is_some()
    })?;
    found
}

/// Where to look for a file the core names: under each sysroot-like root, then by base name
/// in each search directory, then the path itself on this machine.
pub fn candidates(core_path: &str, sysroot: Option<&Path>, search: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let rel = core_path.trim_start_matches('/');
    if let Some(root) = sysroot {
        out.push(root.join(rel));
    }
    if let Some(base) = Path::new(core_path).file_name() {
        for dir in search {
            out.push(dir.join(base));
        }
    }
    if core_path.starts_with('/') {
        out.push(PathBuf::from(core_path));
    }
    out
}

/// Longest mangled name handed to a demangler (both bound their recursion; this bounds time).
const MAX_MANGLED: usize = 4096;

/// The human name of a C++ (Itanium ABI, `_Z…`) or Rust (`_R…` v0, or legacy `_ZN…17h<hash>E`)
/// symbol; `None` for a C name or one the demanglers reject. Rust's legacy scheme is also
/// valid Itanium, so it is tried first and shown without its hash, as rustc prints it.
pub fn demangle(name: &str) -> Option<String> {
    if name.len() > MAX_MANGLED || !(name.starts_with("_Z") || name.starts_with("_R")) {
        return None;
    }
    let rust_legacy = name.starts_with("_ZN") && is_rust_legacy(name);
    if (name.starts_with("_R") || rust_legacy)
        && let Ok(d) = rustc_demangle::try_demangle(name)
    {
        return Some(format!("{d:#}"));
    }
    let sym = cpp_demangle::Symbol::new(name).ok()?;
    sym.demangle().ok().filter(|d| !d.is_empty() && d != name)
}

/// `…17h` + 16 hex digits + `E` (optionally followed by an LLVM `.suffix`): rustc's legacy hash.
fn is_rust_legacy(name: &str) -> bool {
    let core = name.split('.').next().unwrap_or(name);
    let Some(body) = core.strip_suffix('E') else {
        return false;
    };
    body.len() > 19
        && body.is_char_boundary(body.len() - 19)
        && body[body.len() - 19..].starts_with("17h")
        && body[body.len() - 16..]
            .bytes()
            .all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::demangle;

    #[test]
    fn cpp_and_rust_names_are_demangled_and_c_names_left_alone() {
        assert_eq!(
            demangle("_ZN2ns5Batch4fillEl").as_deref(),
            Some("ns::Batch::fill(long)")
        );
        assert_eq!(
            demangle("_ZN4core9panicking5panic17h0123456789abcdefE").as_deref(),
            Some("core::panicking::panic")
        );
        assert_eq!(
            demangle("_RNvNtCs1234_7mycrate3foo3bar").as_deref(),
            Some("mycrate::foo::bar")
        );
        assert_eq!(demangle("PyEval_EvalFrameDefault"), None);
        assert_eq!(demangle("_Zgarbage"), None);
        assert_eq!(demangle(&format!("_Z{}", "N".repeat(10_000))), None);
    }
}
