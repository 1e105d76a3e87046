//! `/proc/meminfo` and `free` (procps `-b`/`-k`/`-m`/`-h`, busybox) → host memory facts.
//! Only the lines rules need become facts; a value that cannot be read is a warning,
//! and a bare `free` number whose unit is unknown is never scaled by a guess.

use super::units::size_1024;
use super::{FactOut, FactParser};
use crate::model::{Fact, text};
use nom::Parser;
use nom::bytes::complete::{tag, take_while1};
use nom::character::complete::{char, digit1, space0};
use nom::combinator::{all_consuming, opt};
use nom::sequence::terminated;

/// `/proc/meminfo` key → fact name.
const MEMINFO: &[(&str, &str)] = &[
    ("MemTotal", "host.mem_total_bytes"),
    ("MemFree", "host.mem_free_bytes"),
    ("MemAvailable", "host.mem_available_bytes"),
    ("Shmem", "host.shmem_bytes"),
    ("SwapTotal", "host.swap_total_bytes"),
    ("SwapFree", "host.swap_free_bytes"),
    ("CommitLimit", "host.commit_limit_bytes"),
    ("Committed_AS", "host.committed_bytes"),
];

/// `Key:   123 kB` → (key, value in bytes). Lines without a unit (`HugePages_Total: 0`) are counts.
fn meminfo_line(line: &str) -> Option<(&str, u64)> {
    let mut p = (
        take_while1(|c: char| c != ':' && !c.is_whitespace()),
        char(':'),
        space0,
        digit1,
        all_consuming(terminated(opt((space0, tag("kB"))), space0)),
    );
    type Row<'a> = (&'a str, char, &'a str, &'a str, Option<(&'a str, &'a str)>);
    let res: nom::IResult<&str, Row> = p.parse(line);
    let (_, (key, _, _, num, unit)) = res.ok()?;
    let n: u64 = num.parse().ok()?;
    Some((
        key,
        if unit.is_some() {
            n.checked_mul(1024)?
        } else {
            n
        },
    ))
}

#[derive(Default)]
pub struct MeminfoParser {
    bad: usize,
}

impl FactParser for MeminfoParser {
    fn line(&mut self, lineno: u64, line: &str, out: &mut FactOut) {
        if line.trim().is_empty() {
            return;
        }
        match meminfo_line(line.trim_end()) {
            Some((key, v)) => {
                if let Some((_, name)) = MEMINFO.iter().find(|(k, _)| *k == key) {
                    out.facts.push(Fact::new(*name, v).at(lineno, line));
                }
            }
            None => {
                self.bad += 1;
                if self.bad <= 3 {
                    out.warnings.push(text!(
                        "meminfo: line {lineno} unreadable: `{}`",
                        "meminfo：第 {lineno} 行无法解析：`{}`",
                        line.trim()
                    ));
                }
            }
        }
    }
}

/// `free` output. The unit of bare numbers comes from the file name (`free-b.txt` → bytes);
/// without one, free's own default (KiB) is used and said so in a warning.
#[derive(Default)]
pub struct FreeParser {
    cols: Vec<String>,
    unit: Option<u64>,
    unit_warned: bool,
}

impl FreeParser {
    pub fn for_file(file_name: &str) -> FreeParser {
        let n = file_name.to_ascii_lowercase();
        let stem = n.rsplit_once('.').map_or(n.as_str(), |(s, _)| s);
        let flag = |f: &str| {
            stem.ends_with(&format!("-{f}"))
                || stem.ends_with(&format!("_{f}"))
                || stem.contains(&format!("-{f}_"))
                || stem.contains(&format!("-{f}-"))
        };
        let unit = if flag("b") || flag("bytes") {
            Some(1)
        } else if flag("k") || flag("kibi") {
            Some(1024)
        } else if flag("m") || flag("mebi") {
            Some(1 << 20)
        } else if flag("g") || flag("gibi") {
            Some(1 << 30)
        } else {
            None
        };
        FreeParser {
            unit,
            ..FreeParser::default()
        }
    }
}

impl FactParser for FreeParser {
    fn line(&mut self, lineno: u64, line: &str, out: &mut FactOut) {
        let toks: Vec<&str> = line.split_whitespace().collect();
        let Some(&first) = toks.first() else { return };
        if first == "total" {
            self.cols = toks.iter().map(|s| s.to_string()).collect();
            return;
        }
        let row = match first {
            "Mem:" => "mem",
            "Swap:" => "swap",
            _ => return,
        };
        if self.cols.is_empty() {
            out.warnings.push(text!(
                "free: line {lineno} comes before any header; skipped",
                "free：第 {lineno} 行出现在表头之前；已跳过"
            ));
            return;
        }
        for (col, tok) in self.cols.iter().zip(toks.iter().skip(1)) {
            let name = match (row, col.as_str()) {
                ("mem", "total") => "host.mem_total_bytes",
                ("mem", "used") => "host.mem_used_bytes",
                ("mem", "free") => "host.mem_free_bytes",
                ("mem", "shared") => "host.shmem_bytes",
                ("mem", "available") => "host.mem_available_bytes",
                ("swap", "total") => "host.swap_total_bytes",
                ("swap", "free") => "host.swap_free_bytes",
                _ => continue,
            };
            let bare = tok.bytes().all(|b| b.is_ascii_digit());
            let unit = match (bare, self.unit) {
                (false, _) => 1,
                (true, Some(u)) => u,
                (true, None) => {
                    if !self.unit_warned {
                        self.unit_warned = true;
                        out.warnings.push(
                            text!("free: numbers without a unit and no -b/-k/-m in the file name: read as KiB, free's default", "free：数字没有单位，文件名中也没有 -b/-k/-m：按 free 的默认单位 KiB 读取"),
                        );
                    }
                    1024
                }
            };
            match size_1024(tok, unit) {
                Some(v) => out.facts.push(Fact::new(name, v).at(lineno, line)),
                None => out.warnings.push(text!(
                    "free: line {lineno}: `{tok}` is not a size",
                    "free：第 {lineno} 行：`{tok}` 不是有效的容量"
                )),
            }
        }
        if toks.len() < 2 {
            out.warnings.push(text!(
                "free: line {lineno} has no values (truncated?)",
                "free：第 {lineno} 行没有数值（被截断？）"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FactValue;
    use crate::sources::SourceKind;
    use crate::sources::parse_text;

    #[test]
    fn meminfo_lines_parse_with_and_without_kb() {
        assert_eq!(
            meminfo_line("MemTotal:       24684084 kB"),
            Some(("MemTotal", 24_684_084 * 1024))
        );
        assert_eq!(
            meminfo_line("HugePages_Total:       0"),
            Some(("HugePages_Total", 0))
        );
        assert_eq!(meminfo_line("MemTotal: lots"), None);
        assert_eq!(meminfo_line("MemTotal: 12 kB junk"), None);
    }

    #[test]
    fn truncated_meminfo_keeps_what_it_read() {
        let out = parse_text(
            SourceKind::Meminfo,
            "meminfo",
            "MemTotal:       24684084 kB\nMemFree:        233",
        );
        assert_eq!(out.facts.len(), 2);
        let out = parse_text(
            SourceKind::Meminfo,
            "meminfo",
            "MemTotal:       24684\nMemAv",
        );
        assert_eq!(out.facts.len(), 1);
        assert_eq!(out.warnings.len(), 1);
    }

    #[test]
    fn free_h_and_free_b() {
        let h = "               total        used        free      shared  buff/cache   available\nMem:            23Gi       314Mi        22Gi       8.7Mi       872Mi        23Gi\nSwap:             0B          0B          0B\n";
        let out = parse_text(SourceKind::Free, "free-h.txt", h);
        let total = out.facts.iter().find(|f| f.name == "host.mem_total_bytes");
        assert_eq!(total.map(|f| &f.value), Some(&FactValue::Int(23 << 30)));
        assert!(out.warnings.is_empty());
        let out = parse_text(
            SourceKind::Free,
            "free.txt",
            "       total  used  free\nMem:   1000   10   990\n",
        );
        assert_eq!(out.facts[0].value, FactValue::Int(1000 * 1024));
        assert_eq!(out.warnings.len(), 1);
        let out = parse_text(
            SourceKind::Free,
            "free-b.txt",
            "       total  used  free\nMem:   1000   10   990\n",
        );
        assert_eq!(out.facts[0].value, FactValue::Int(1000));
    }
}
