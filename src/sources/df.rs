//! `df` output (GNU `-h`/`-B1`/`-k`/`-T`/`--output`, POSIX `-P`, busybox) → /dev/shm and disk facts.
//! Columns are located from the header, so unknown columns are skipped with a warning; a row
//! too short to read is reported, never filled in.

use super::units::size_1024;
use super::{FactOut, FactParser};
use crate::fact_names;
use crate::model::{Fact, text};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Col {
    Filesystem,
    Type,
    Size,
    Used,
    Avail,
    UsePct,
    Mount,
    Unknown,
}

#[derive(Default)]
pub struct DfParser {
    cols: Vec<Col>,
    /// Bytes per unit of bare numbers (from `1K-blocks`, `1B-blocks`, …); `Size` columns use suffixes.
    unit: u64,
    /// A filesystem name alone on its line: busybox and old GNU df wrap long names.
    pending: Option<String>,
    disks: usize,
    warned_unknown: bool,
}

impl DfParser {
    pub fn new() -> DfParser {
        DfParser {
            unit: 1024,
            ..DfParser::default()
        }
    }

    fn header(&mut self, line: &str, out: &mut FactOut) {
        let mut cols = Vec::new();
        // `Size` columns carry suffixes; only `N-blocks` headers give bare numbers a unit.
        self.unit = 1;
        let toks: Vec<&str> = line.split_whitespace().collect();
        let mut i = 0;
        while let Some(&t) = toks.get(i) {
            let col = match t {
                "Filesystem" => Col::Filesystem,
                "Type" => Col::Type,
                "Size" => Col::Size,
                "Used" => Col::Used,
                "Avail" | "Available" => Col::Avail,
                "Use%" | "Capacity" => Col::UsePct,
                "Mounted" => {
                    if toks.get(i + 1) == Some(&"on") {
                        i += 1;
                    }
                    Col::Mount
                }
                t if t.ends_with("-blocks") => {
                    let n = t.trim_end_matches("-blocks");
                    match size_1024(n, 1) {
                        Some(u) if u > 0 => self.unit = u,
                        _ => out.warnings.push(text!(
                            "df: unknown block size `{t}`",
                            "df：未知的块大小 `{t}`"
                        )),
                    }
                    Col::Size
                }
                _ => Col::Unknown,
            };
            if col == Col::Unknown && !self.warned_unknown {
                self.warned_unknown = true;
                out.warnings.push(text!(
                    "df: column `{t}` is not one this reader knows; skipped",
                    "df：无法识别的列 `{t}`；已跳过"
                ));
            }
            cols.push(col);
            i += 1;
        }
        if !cols.contains(&Col::Size) && !cols.contains(&Col::Avail) {
            out.warnings.push(text!(
                "df: no size columns in the header (inode listing?); no sizes read",
                "df：表头中没有容量列（是 inode 列表？）；没有读取任何容量"
            ));
        }
        self.cols = cols;
    }

    fn row(&mut self, lineno: u64, line: &str, toks: Vec<&str>, out: &mut FactOut) {
        let n = self.cols.len();
        let mount_last = self.cols.last() == Some(&Col::Mount);
        if toks.len() < n || (!mount_last && toks.len() != n) {
            out.warnings.push(text!(
                "df: line {lineno} has {} fields, the header has {n}: skipped (truncated?)",
                "df：第 {lineno} 行有 {} 个字段，而表头有 {n} 个：已跳过（被截断？）",
                toks.len()
            ));
            return;
        }
        let mut mount = String::new();
        let mut fs = "";
        let mut fstype = None;
        let (mut size, mut used, mut avail, mut pct) = (None, None, None, None);
        let mut bad = Vec::new();
        for (i, col) in self.cols.iter().enumerate() {
            let Some(&t) = toks.get(i) else { break };
            let num = |t: &str| {
                if t.ends_with(char::is_alphabetic) {
                    size_1024(t, 1)
                } else {
                    size_1024(t, self.unit)
                }
            };
            match col {
                Col::Filesystem => fs = t,
                Col::Type => fstype = Some(t),
                Col::Size | Col::Used | Col::Avail => {
                    let v = if t == "-" { None } else { num(t) };
                    if v.is_none() && t != "-" {
                        bad.push(t);
                    }
                    match col {
                        Col::Size => size = v,
                        Col::Used => used = v,
                        _ => avail = v,
                    }
                }
                Col::UsePct => {
                    pct = t.trim_end_matches('%').parse::<u64>().ok();
                    if pct.is_none() && t != "-" {
                        bad.push(t);
                    }
                }
                Col::Mount => mount = toks[i..].join(" "),
                Col::Unknown => {}
            }
        }
        if !bad.is_empty() {
            out.warnings.push(text!(
                "df: line {lineno}: unreadable values {bad:?}; kept the rest",
                "df：第 {lineno} 行：无法解析的值 {bad:?}；其余的值已保留"
            ));
        }
        let disk = if mount == "/dev/shm" {
            None
        } else {
            let n = self.disks;
            self.disks += 1;
            out.facts
                .push(Fact::new(fact_names::disk(n, "mount"), mount.as_str()).at(lineno, line));
            if !fs.is_empty() {
                out.facts
                    .push(Fact::new(fact_names::disk(n, "filesystem"), fs).at(lineno, line));
            }
            if let Some(t) = fstype {
                out.facts
                    .push(Fact::new(fact_names::disk(n, "fstype"), t).at(lineno, line));
            }
            Some(n)
        };
        for (suffix, v) in [
            ("size_bytes", size),
            ("used_bytes", used),
            ("avail_bytes", avail),
            ("use_percent", pct),
        ] {
            if let Some(v) = v {
                let name = match disk {
                    Some(n) => fact_names::disk(n, suffix),
                    None => fact_names::shm(suffix),
                };
                out.facts.push(Fact::new(name, v).at(lineno, line));
            }
        }
    }
}

impl FactParser for DfParser {
    fn line(&mut self, lineno: u64, line: &str, out: &mut FactOut) {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return;
        }
        if trimmed.starts_with("Filesystem") {
            self.header(trimmed, out);
            self.pending = None;
            return;
        }
        if self.cols.is_empty() {
            // `df: /x: No such file or directory` and the like.
            if trimmed.starts_with("df:") {
                out.warnings.push(text!(
                    "df: line {lineno}: {trimmed}",
                    "df：第 {lineno} 行：{trimmed}"
                ));
            }
            return;
        }
        let mut toks: Vec<&str> = trimmed.split_whitespace().collect();
        let joined;
        if let Some(p) = self.pending.take() {
            if line.starts_with(char::is_whitespace) {
                joined = p;
                toks.insert(0, joined.as_str());
            } else {
                out.warnings.push(text!(
                    "df: filesystem `{p}` has no numbers after it",
                    "df：文件系统 `{p}` 后面没有数字"
                ));
            }
        }
        if toks.len() == 1 && line.starts_with(|c: char| !c.is_whitespace()) {
            self.pending = toks.first().map(|s| s.to_string());
            return;
        }
        self.row(lineno, line, toks, out);
    }

    fn finish(&mut self, out: &mut FactOut) {
        if let Some(p) = self.pending.take() {
            out.warnings.push(text!(
                "df: filesystem `{p}` has no numbers after it (truncated)",
                "df：文件系统 `{p}` 后面没有数字（被截断）"
            ));
        }
        if self.cols.is_empty() {
            out.warnings
                .push(text!("df: no header line found", "df：没有找到表头行"));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::model::FactValue;
    use crate::sources::SourceKind;
    use crate::sources::parse_text;

    fn val(out: &crate::sources::FactOut, name: &str) -> Option<FactValue> {
        out.facts
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.value.clone())
    }

    #[test]
    fn df_h_dev_shm_64m() {
        let out = parse_text(
            SourceKind::Df,
            "df-h_dev_shm.txt",
            "Filesystem      Size  Used Avail Use% Mounted on\ntmpfs            64M     0   64M   0% /dev/shm\n",
        );
        assert_eq!(val(&out, "shm.size_bytes"), Some(FactValue::Int(64 << 20)));
        assert_eq!(val(&out, "shm.used_bytes"), Some(FactValue::Int(0)));
        assert_eq!(val(&out, "shm.use_percent"), Some(FactValue::Int(0)));
        assert!(out.warnings.is_empty());
        assert_eq!(out.facts[0].line, Some(2));
    }

    #[test]
    fn df_t_has_type_column_and_k_blocks() {
        let out = parse_text(
            SourceKind::Df,
            "df",
            "Filesystem     Type 1K-blocks     Used Available Use% Mounted on\n/dev/vda       ext4 264212084 12031508  83254380  13% /\n",
        );
        assert_eq!(
            val(&out, "disk.0.fstype"),
            Some(FactValue::Text("ext4".into()))
        );
        assert_eq!(
            val(&out, "disk.0.avail_bytes"),
            Some(FactValue::Int(83_254_380 * 1024))
        );
        assert_eq!(val(&out, "disk.0.mount"), Some(FactValue::Text("/".into())));
    }

    #[test]
    fn wrapped_busybox_row_is_joined() {
        let out = parse_text(
            SourceKind::Df,
            "df",
            "Filesystem           1K-blocks      Used Available Use% Mounted on\nmodel_tools_unavailable\n                             4         0         4   0% /mnt/x\n",
        );
        assert_eq!(
            val(&out, "disk.0.filesystem"),
            Some(FactValue::Text("model_tools_unavailable".into()))
        );
        assert_eq!(val(&out, "disk.0.size_bytes"), Some(FactValue::Int(4096)));
    }

    #[test]
    fn truncated_row_and_unknown_column_warn_without_guessing() {
        let out = parse_text(
            SourceKind::Df,
            "df",
            "Filesystem Size Used Avail Use% Frobs Mounted on\ntmpfs 64M 1M 63M 2% 7 /dev/shm\ntmpfs 64M 1M\n",
        );
        assert_eq!(val(&out, "shm.used_bytes"), Some(FactValue::Int(1 << 20)));
        assert_eq!(
            out.facts
                .iter()
                .filter(|f| f.name == "shm.size_bytes")
                .count(),
            1
        );
        assert_eq!(out.warnings.len(), 2, "{:?}", out.warnings);
    }

    #[test]
    fn inode_listing_gives_no_sizes() {
        let out = parse_text(
            SourceKind::Df,
            "df-i.txt",
            "Filesystem     Inodes IUsed  IFree IUse% Mounted on\ntmpfs          1000    10    990    1% /dev/shm\n",
        );
        assert!(val(&out, "shm.size_bytes").is_none());
        assert!(!out.warnings.is_empty());
    }
}
