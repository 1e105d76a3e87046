//! cgroup v1 and v2 memory files → limit, usage and OOM facts. The file name says what a
//! file holds (`memory.max` is a bare number or `max`), so the parser is chosen per name.
//! "Unlimited" (`max`, v1's page-rounded i64::MAX) yields no limit fact rather than a huge one.

use super::{FactOut, FactParser};
use crate::model::{Fact, text};
use nom::Parser;
use nom::bytes::complete::take_while1;
use nom::character::complete::{digit1, space0, space1};
use nom::combinator::all_consuming;

/// v1 reports "no limit" as i64::MAX rounded down to a page; anything this large is unlimited.
const V1_UNLIMITED: u64 = 1 << 62;

#[derive(Debug, Clone, Copy, PartialEq)]
enum File {
    /// One number (or `max`) → this fact; `limit` files drop "unlimited".
    Single {
        fact: &'static str,
        limit: bool,
    },
    /// One boolean-ish number.
    Flag(&'static str),
    /// `key value` lines; known keys map to facts, others are ignored or warned about.
    Events {
        local: bool,
    },
    Stat,
    OomControl,
    SwapEvents,
    Unknown,
}

fn file_kind(name: &str) -> File {
    use File::*;
    match name {
        "memory.max" | "memory.limit_in_bytes" => Single {
            fact: "cgroup.memory_limit_bytes",
            limit: true,
        },
        "memory.high" => Single {
            fact: "cgroup.memory_high_bytes",
            limit: true,
        },
        "memory.current" | "memory.usage_in_bytes" => Single {
            fact: "cgroup.memory_current_bytes",
            limit: false,
        },
        "memory.peak" | "memory.max_usage_in_bytes" => Single {
            fact: "cgroup.memory_peak_bytes",
            limit: false,
        },
        "memory.swap.max" | "memory.memsw.limit_in_bytes" => Single {
            fact: "cgroup.swap_limit_bytes",
            limit: true,
        },
        "memory.swap.current" => Single {
            fact: "cgroup.swap_current_bytes",
            limit: false,
        },
        "memory.failcnt" => Single {
            fact: "cgroup.failcnt",
            limit: false,
        },
        "memory.oom.group" => Flag("cgroup.oom_group"),
        "memory.events" => Events { local: false },
        "memory.events.local" => Events { local: true },
        "memory.stat" => Stat,
        "memory.oom_control" => OomControl,
        "memory.swap.events" => SwapEvents,
        _ => Unknown,
    }
}

/// `key 123` → (key, 123).
fn kv_line(line: &str) -> Option<(&str, u64)> {
    let mut p = all_consuming((
        take_while1(|c: char| !c.is_whitespace()),
        space1,
        digit1,
        space0,
    ));
    let res: nom::IResult<&str, (&str, &str, &str, &str)> = p.parse(line.trim_start());
    let (_, (k, _, v, _)) = res.ok()?;
    Some((k, v.parse().ok()?))
}

pub struct CgroupParser {
    file: File,
    name: String,
    seen_value: bool,
}

impl CgroupParser {
    pub fn for_file(file_name: &str) -> CgroupParser {
        CgroupParser {
            file: file_kind(file_name),
            name: file_name.to_string(),
            seen_value: false,
        }
    }

    fn keyed(&self, key: &str) -> Option<&'static str> {
        match (self.file, key) {
            (File::Events { local: false }, "oom_kill") => Some("cgroup.oom_kill"),
            (File::Events { local: false }, "oom") => Some("cgroup.oom"),
            (File::Events { local: false }, "oom_group_kill") => Some("cgroup.oom_group_kill"),
            (File::Events { local: false }, "max") => Some("cgroup.max_events"),
            (File::Events { local: false }, "high") => Some("cgroup.high_events"),
            (File::Events { local: true }, "oom_kill") => Some("cgroup.local.oom_kill"),
            (File::Events { local: true }, "oom") => Some("cgroup.local.oom"),
            (File::Events { local: true }, "max") => Some("cgroup.local.max_events"),
            (File::OomControl, "oom_kill") => Some("cgroup.oom_kill"),
            (File::OomControl, "under_oom") => Some("cgroup.under_oom"),
            (File::OomControl, "oom_kill_disable") => Some("cgroup.oom_kill_disable"),
            (File::SwapEvents, "fail") => Some("cgroup.swap_fail"),
            // v2 names first, then v1's (`rss`, `cache`); hierarchical `total_*` are not used.
            (File::Stat, "anon" | "rss") => Some("cgroup.stat.anon_bytes"),
            (File::Stat, "file" | "cache") => Some("cgroup.stat.file_bytes"),
            (File::Stat, "shmem") => Some("cgroup.stat.shmem_bytes"),
            (File::Stat, "hierarchical_memory_limit") => Some("cgroup.memory_limit_bytes"),
            _ => None,
        }
    }

    /// Keys a file of this kind is known to carry (so a new kernel's key is reported, not lost silently).
    fn known_key(&self, key: &str) -> bool {
        match self.file {
            File::Events { .. } => matches!(
                key,
                "low" | "high" | "max" | "oom" | "oom_kill" | "oom_group_kill" | "sock_throttled"
            ),
            File::OomControl => matches!(key, "oom_kill_disable" | "under_oom" | "oom_kill"),
            File::SwapEvents => matches!(key, "high" | "max" | "fail"),
            // memory.stat has dozens of keys that differ by kernel: all are expected.
            _ => true,
        }
    }
}

impl FactParser for CgroupParser {
    fn line(&mut self, lineno: u64, line: &str, out: &mut FactOut) {
        let t = line.trim();
        if t.is_empty() {
            return;
        }
        match self.file {
            File::Single { fact, limit } => {
                if self.seen_value {
                    out.warnings.push(text!(
                        "{}: line {lineno}: extra content after the value; ignored",
                        "{}：第 {lineno} 行：值后面还有多余内容；已忽略",
                        self.name
                    ));
                    return;
                }
                self.seen_value = true;
                if t == "max" {
                    return; // v2 "no limit"
                }
                match t.parse::<u64>() {
                    Ok(v) if limit && v >= V1_UNLIMITED => {}
                    Ok(v) => out.facts.push(Fact::new(fact, v).at(lineno, line)),
                    Err(_) => out.warnings.push(text!(
                        "{}: `{t}` is not a number",
                        "{}：`{t}` 不是数字",
                        self.name
                    )),
                }
            }
            File::Flag(fact) => {
                if let Ok(v) = t.parse::<u64>() {
                    out.facts.push(Fact::new(fact, v != 0).at(lineno, line));
                } else {
                    out.warnings.push(text!(
                        "{}: `{t}` is not 0 or 1",
                        "{}：`{t}` 不是 0 或 1",
                        self.name
                    ));
                }
            }
            File::Events { .. } | File::Stat | File::OomControl | File::SwapEvents => {
                let Some((k, v)) = kv_line(t) else {
                    out.warnings.push(text!(
                        "{}: line {lineno} is not `key value`: `{t}`",
                        "{}：第 {lineno} 行不是 `key value` 格式：`{t}`",
                        self.name
                    ));
                    return;
                };
                if let Some(name) = self.keyed(k) {
                    if name == "cgroup.memory_limit_bytes" && v >= V1_UNLIMITED {
                        return;
                    }
                    let f = if matches!(name, "cgroup.under_oom" | "cgroup.oom_kill_disable") {
                        Fact::new(name, v != 0)
                    } else {
                        Fact::new(name, v)
                    };
                    out.facts.push(f.at(lineno, line));
                } else if !self.known_key(k) {
                    out.warnings.push(text!(
                        "{}: unknown key `{k}` (newer kernel?); skipped",
                        "{}：未知的键 `{k}`（内核版本较新？）；已跳过",
                        self.name
                    ));
                }
            }
            File::Unknown => {}
        }
    }

    fn finish(&mut self, out: &mut FactOut) {
        if matches!(self.file, File::Single { .. }) && !self.seen_value {
            out.warnings
                .push(text!("{}: empty file", "{}：空文件", self.name));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::model::FactValue;
    use crate::sources::SourceKind;
    use crate::sources::{FactOut, parse_text};

    fn get<'a>(out: &'a FactOut, name: &str) -> Option<&'a FactValue> {
        out.facts.iter().find(|f| f.name == name).map(|f| &f.value)
    }

    #[test]
    fn v2_events_with_oom_kills() {
        let out = parse_text(
            SourceKind::CgroupMemory,
            "memory.events",
            "low 0\nhigh 0\nmax 257\noom 3\noom_kill 2\noom_group_kill 0\n",
        );
        assert_eq!(get(&out, "cgroup.oom_kill"), Some(&FactValue::Int(2)));
        assert_eq!(get(&out, "cgroup.oom"), Some(&FactValue::Int(3)));
        assert!(out.warnings.is_empty());
    }

    #[test]
    fn max_means_no_limit_fact() {
        let out = parse_text(SourceKind::CgroupMemory, "memory.max", "max\n");
        assert!(out.facts.is_empty() && out.warnings.is_empty());
        let out = parse_text(
            SourceKind::CgroupMemory,
            "memory.limit_in_bytes",
            "9223372036854771712\n",
        );
        assert!(out.facts.is_empty());
        let out = parse_text(SourceKind::CgroupMemory, "memory.max", "6442450944\n");
        assert_eq!(
            get(&out, "cgroup.memory_limit_bytes"),
            Some(&FactValue::Int(6_442_450_944))
        );
    }

    #[test]
    fn unknown_keys_and_garbage_warn_but_keep_the_rest() {
        let out = parse_text(
            SourceKind::CgroupMemory,
            "memory.events",
            "oom 1\nfrobnicate 4\noom_kill 1\ngarbage\n",
        );
        assert_eq!(get(&out, "cgroup.oom_kill"), Some(&FactValue::Int(1)));
        assert_eq!(out.warnings.len(), 2);
        let out = parse_text(SourceKind::CgroupMemory, "memory.current", "12ab\n");
        assert!(out.facts.is_empty());
        assert_eq!(out.warnings.len(), 1);
    }

    #[test]
    fn v1_oom_control() {
        let out = parse_text(
            SourceKind::CgroupMemory,
            "memory.oom_control",
            "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n",
        );
        assert_eq!(get(&out, "cgroup.oom_kill"), Some(&FactValue::Int(1)));
        assert_eq!(get(&out, "cgroup.under_oom"), Some(&FactValue::Bool(false)));
    }
}
