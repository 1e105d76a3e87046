//! `ulimit -a` (bash, zsh, dash/busybox) and `/proc/<pid>/limits` → the limits training runs trip
//! over: open files, locked memory, core size, processes, stack. `unlimited` is recorded as
//! i64::MAX so comparisons stay numeric; a value that cannot be read is a warning, not a guess.

use super::{FactOut, FactParser};
use crate::model::{Fact, text};

const UNLIMITED: i64 = i64::MAX;

/// (flag letter, fact name, bytes per unit in `ulimit -a`).
const FLAGS: &[(char, &str, i64)] = &[
    ('n', "ulimit.open_files", 1),
    ('l', "ulimit.max_locked_memory_bytes", 1024),
    ('c', "ulimit.core_file_size_bytes", 1024),
    ('u', "ulimit.max_user_processes", 1),
    ('s', "ulimit.stack_size_bytes", 1024),
    ('v', "ulimit.virtual_memory_bytes", 1024),
];

/// `/proc/<pid>/limits` row names → (fact, hard-limit fact).
const PROC: &[(&str, &str, Option<&str>)] = &[
    (
        "Max open files",
        "ulimit.open_files",
        Some("ulimit.open_files_hard"),
    ),
    (
        "Max locked memory",
        "ulimit.max_locked_memory_bytes",
        Some("ulimit.max_locked_memory_hard_bytes"),
    ),
    ("Max core file size", "ulimit.core_file_size_bytes", None),
    ("Max processes", "ulimit.max_user_processes", None),
    ("Max stack size", "ulimit.stack_size_bytes", None),
    ("Max address space", "ulimit.virtual_memory_bytes", None),
];

fn value(tok: &str, unit: i64) -> Option<i64> {
    if tok == "unlimited" {
        return Some(UNLIMITED);
    }
    tok.parse::<i64>().ok().and_then(|v| v.checked_mul(unit))
}

/// The flag letter of a `ulimit -a` line: bash `(kbytes, -l)`, `(-n)`; zsh/dash `-n: file descriptors`.
fn flag_of(line: &str) -> Option<char> {
    let t = line.trim_start();
    if let Some(rest) = t.strip_prefix('-') {
        let mut c = rest.chars();
        let f = c.next()?;
        return (c.next() == Some(':')).then_some(f);
    }
    let open = t.rfind('(')?;
    let close = t[open..].find(')')? + open;
    let inner = &t[open + 1..close];
    let f = inner.rsplit(", ").next()?.strip_prefix('-')?;
    let mut c = f.chars();
    let letter = c.next()?;
    c.next().is_none().then_some(letter)
}

#[derive(Default)]
pub struct UlimitParser {
    saw_any: bool,
}

impl FactParser for UlimitParser {
    fn line(&mut self, lineno: u64, line: &str, out: &mut FactOut) {
        let t = line.trim();
        if t.is_empty() || t.starts_with("Limit ") {
            return;
        }
        if let Some((prefix, fact, hard)) = PROC.iter().find(|(p, _, _)| t.starts_with(p)) {
            self.saw_any = true;
            let rest: Vec<&str> = t[prefix.len()..].split_whitespace().collect();
            match (
                rest.first().and_then(|s| value(s, 1)),
                rest.get(1).and_then(|s| value(s, 1)),
            ) {
                (Some(soft), h) => {
                    out.facts.push(Fact::new(*fact, soft).at(lineno, line));
                    if let (Some(hf), Some(h)) = (hard, h) {
                        out.facts.push(Fact::new(*hf, h).at(lineno, line));
                    }
                }
                _ => out.warnings.push(text!(
                    "limits: line {lineno} unreadable: `{t}`",
                    "limits：第 {lineno} 行无法解析：`{t}`"
                )),
            }
            return;
        }
        let Some(flag) = flag_of(t) else { return };
        let Some((_, fact, unit)) = FLAGS.iter().find(|(f, _, _)| *f == flag) else {
            self.saw_any = true;
            return;
        };
        self.saw_any = true;
        let tok = t.split_whitespace().last().unwrap_or("");
        // zsh prints the unit in the label too (`-l: locked-in-memory size (kbytes) 64`).
        match value(tok, *unit) {
            Some(v) => out.facts.push(Fact::new(*fact, v).at(lineno, line)),
            None => out.warnings.push(text!(
                "ulimit: line {lineno}: `{tok}` is not a limit",
                "ulimit：第 {lineno} 行：`{tok}` 不是有效的限制值"
            )),
        }
    }

    fn finish(&mut self, out: &mut FactOut) {
        if !self.saw_any {
            out.warnings.push(text!(
                "ulimit: no limit lines recognised",
                "ulimit：没有识别出任何限制行"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::model::FactValue;
    use crate::sources::SourceKind;
    use crate::sources::parse_text;

    #[test]
    fn bash_and_dash_forms() {
        let out = parse_text(
            SourceKind::Ulimit,
            "ulimit-a.txt",
            "max locked memory           (kbytes, -l) 64\nopen files                          (-n) 1024\ncore file size              (blocks, -c) unlimited\n-n: file descriptors               4096\n",
        );
        let v: Vec<(&str, &FactValue)> = out
            .facts
            .iter()
            .map(|f| (f.name.as_str(), &f.value))
            .collect();
        assert_eq!(
            v,
            [
                ("ulimit.max_locked_memory_bytes", &FactValue::Int(65536)),
                ("ulimit.open_files", &FactValue::Int(1024)),
                ("ulimit.core_file_size_bytes", &FactValue::Int(i64::MAX)),
                ("ulimit.open_files", &FactValue::Int(4096)),
            ]
        );
    }

    #[test]
    fn proc_limits_soft_and_hard() {
        let out = parse_text(
            SourceKind::Ulimit,
            "limits",
            "Limit                     Soft Limit           Hard Limit           Units     \nMax open files            1024                 524288               files     \nMax locked memory         8388608              8388608              bytes     \n",
        );
        assert_eq!(out.facts.len(), 4);
        assert_eq!(out.facts[1].name, "ulimit.open_files_hard");
    }

    #[test]
    fn garbage_value_warns() {
        let out = parse_text(
            SourceKind::Ulimit,
            "ulimit",
            "open files                          (-n) lots\n",
        );
        assert!(out.facts.is_empty());
        assert_eq!(out.warnings.len(), 1);
    }
}
