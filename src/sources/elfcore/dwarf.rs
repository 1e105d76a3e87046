//! Source lines and inlined frames from a module's DWARF, with `addr2line` over gimli; and
//! where a module's separate debug file may be (build-id directories, `.gnu_debuglink`, a
//! debuginfod client cache). Works on sections handed in by `symbols::ElfImage` (each capped
//! at `symbols::MAX_SECTION`); must never panic on damaged DWARF: a lookup that fails gives
//! no lines, not an error.

use super::unwind::R;
use gimli::{EndianRcSlice, LittleEndian, SectionId};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Frames at one address, innermost first, from at most this many inlining levels.
const MAX_INLINE_DEPTH: usize = 32;

/// The DWARF of one module, parsed once.
pub struct Lines {
    ctx: addr2line::Context<R>,
}

/// One function at an address: the innermost inlined one first, the function the code
/// physically belongs to last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFrame {
    /// As DWARF names it: the linkage (mangled) name when it has one.
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
}

impl Lines {
    /// Parse the DWARF sections `load` gives by name (`.debug_info`, `.debug_line`, …);
    /// `None` without `.debug_info` or when its units cannot be parsed.
    pub fn new(load: &mut dyn FnMut(&str) -> Option<Vec<u8>>) -> Option<Lines> {
        let mut info = Some(load(".debug_info")?);
        let dwarf = gimli::Dwarf::load(|id: SectionId| -> Result<R, ()> {
            let data = match id {
                SectionId::DebugInfo => info.take(),
                _ if is_line_section(id) => load(id.name()),
                _ => None,
            };
            Ok(EndianRcSlice::new(
                Rc::from(data.unwrap_or_default().into_boxed_slice()),
                LittleEndian,
            ))
        })
        .ok()?;
        let ctx = addr2line::Context::from_dwarf(dwarf).ok()?;
        Some(Lines { ctx })
    }

    /// The functions at a link-time address, innermost first (empty when DWARF has none).
    pub fn frames(&self, addr: u64) -> Vec<SourceFrame> {
        let mut out = Vec::new();
        // addr2line looks an address up as the range addr..addr + 1, unchecked: the last
        // address would overflow (a panic where overflow checks are on). No code sits there.
        if addr == u64::MAX {
            return out;
        }
        let Ok(mut it) = self.ctx.find_frames(addr).skip_all_loads() else {
            return out;
        };
        while out.len() < MAX_INLINE_DEPTH {
            let Ok(Some(f)) = it.next() else {
                break;
            };
            let function = f
                .function
                .as_ref()
                .and_then(|n| n.raw_name().ok())
                .map(|n| n.into_owned());
            let (file, line) = match f.location {
                Some(l) => (l.file.map(str::to_string), l.line),
                None => (None, None),
            };
            out.push(SourceFrame {
                function,
                file,
                line,
            });
        }
        out
    }
}

/// The sections addr2line reads beside `.debug_info` (no location lists: no variables here).
fn is_line_section(id: SectionId) -> bool {
    matches!(
        id,
        SectionId::DebugAbbrev
            | SectionId::DebugAddr
            | SectionId::DebugAranges
            | SectionId::DebugLine
            | SectionId::DebugLineStr
            | SectionId::DebugRanges
            | SectionId::DebugRngLists
            | SectionId::DebugStr
            | SectionId::DebugStrOffsets
    )
}

/// Where a module's separate debug file may be, most specific first: build-id directories
/// (`/usr/lib/debug/.build-id/ab/cdef….debug`, under the sysroot and each search directory
/// too), the debuginfod client cache (`$DEBUGINFOD_CACHE_PATH`, else
/// `~/.cache/debuginfod_client/BUILDID/debuginfo`), then the `.gnu_debuglink` name beside the
/// module, in its `.debug/` folder, under `/usr/lib/debug/` + its folder, and in each search
/// directory. The caller checks each candidate's build-id.
pub fn debug_file_candidates(
    build_id: Option<&str>,
    debuglink: Option<&str>,
    module_on_disk: &Path,
    sysroot: Option<&Path>,
    search: &[PathBuf],
    cache_dirs: &[PathBuf],
) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut debug_roots: Vec<PathBuf> = Vec::new();
    if let Some(root) = sysroot {
        debug_roots.push(root.join("usr/lib/debug"));
    }
    debug_roots.push(PathBuf::from("/usr/lib/debug"));
    if let Some(id) = build_id.filter(|b| b.len() > 2 && b.is_char_boundary(2)) {
        let rel = format!(".build-id/{}/{}.debug", &id[..2], &id[2..]);
        for root in debug_roots.iter().chain(search) {
            out.push(root.join(&rel));
        }
        for dir in cache_dirs {
            out.push(dir.join(id).join("debuginfo"));
        }
    }
    if let Some(name) = debuglink {
        let dir = module_on_disk.parent().unwrap_or(Path::new("/"));
        out.push(dir.join(name));
        out.push(dir.join(".debug").join(name));
        let rel = dir.strip_prefix("/").unwrap_or(dir);
        for root in &debug_roots {
            out.push(root.join(rel).join(name));
        }
        for s in search {
            out.push(s.join(name));
        }
    }
    out
}

/// The debuginfod client cache directories of this user: `$DEBUGINFOD_CACHE_PATH`, else
/// `$XDG_CACHE_HOME/debuginfod_client`, else `~/.cache/debuginfod_client`.
pub fn debuginfod_cache_dirs() -> Vec<PathBuf> {
    if let Some(p) = std::env::var_os("DEBUGINFOD_CACHE_PATH").filter(|p| !p.is_empty()) {
        return vec![PathBuf::from(p)];
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")));
    cache
        .map(|c| vec![c.join("debuginfod_client")])
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_address_is_looked_up_without_overflow() {
        // Found by the dwarf_lines fuzzer: sections behind u16 lengths, as the target reads
        // them, whose lookup of u64::MAX overflowed addr2line's addr..addr + 1.
        let mut data: &[u8] = include_bytes!(
            "../../../fuzz/regressions/dwarf_lines/crash-5f394aa1709de560e05ea93e47bde2e685155120"
        );
        let mut parts = Vec::new();
        for name in [
            ".debug_info",
            ".debug_abbrev",
            ".debug_line",
            ".debug_str",
            ".debug_ranges",
            ".debug_aranges",
        ] {
            let n = match data {
                [a, b, ..] => usize::from(u16::from_le_bytes([*a, *b])),
                _ => 0,
            };
            let rest = data.get(2..).unwrap_or(&[]);
            let (part, tail) = rest.split_at(n.min(rest.len()));
            parts.push((name, part.to_vec()));
            data = tail;
        }
        let lines = Lines::new(&mut |want| {
            parts
                .iter()
                .find(|(n, d)| *n == want && !d.is_empty())
                .map(|(_, d)| d.clone())
        })
        .expect("the input's DWARF parses");
        assert!(lines.frames(u64::MAX).is_empty());
        let _ = lines.frames(0x1000);
    }

    #[test]
    fn build_id_and_debuglink_places_are_listed_in_order() {
        let c = debug_file_candidates(
            Some("abcdef01"),
            Some("libx.so.debug"),
            Path::new("/opt/lib/libx.so"),
            Some(Path::new("/sys")),
            &[PathBuf::from("/s")],
            &[PathBuf::from("/cache")],
        );
        let c: Vec<String> = c.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(
            c,
            [
                "/sys/usr/lib/debug/.build-id/ab/cdef01.debug",
                "/usr/lib/debug/.build-id/ab/cdef01.debug",
                "/s/.build-id/ab/cdef01.debug",
                "/cache/abcdef01/debuginfo",
                "/opt/lib/libx.so.debug",
                "/opt/lib/.debug/libx.so.debug",
                "/sys/usr/lib/debug/opt/lib/libx.so.debug",
                "/usr/lib/debug/opt/lib/libx.so.debug",
                "/s/libx.so.debug",
            ]
        );
    }

    #[test]
    fn no_debug_info_gives_no_lines() {
        assert!(Lines::new(&mut |_| None).is_none());
        // Garbage .debug_info: parsed lazily, so a context may exist but finds nothing.
        if let Some(l) = Lines::new(&mut |n| (n == ".debug_info").then(|| vec![0xff; 64])) {
            assert!(l.frames(0x1000).is_empty());
        }
    }
}
