//! Launcher exit reports → facts: DeepSpeed's `exits with return code = -7`, torchrun's
//! `failed (exitcode: -7) local_rank: 1` and `Root Cause` blocks, `Signal 7 (SIGBUS)`,
//! torch.multiprocessing's `terminated with signal SIGBUS`. The patterns run inside the same
//! scanner pass as the rules (no second read); this module only interprets their hits.

use crate::fact_names;
use crate::model::Fact;
use regex::Regex;
use std::sync::OnceLock;

/// Scanner patterns, in the order `facts_from_hits` expects them. Each has a rare literal.
pub static PATTERNS: &[&str] = &[
    r"exits with return code = -?\d+",
    r"failed \(exitcode: -?\d+\) local_rank: \d+ \(pid: \d+\)",
    r"rank\s*: \d+ \(local_rank: \d+\)",
    r"exitcode\s*: -?\d+ \(pid: \d+\)",
    r"Signal \d+ \(SIG[A-Z]+\) received by PID \d+",
    r"process \d+ terminated with (?:exit code -?\d+|signal SIG[A-Z]+)",
];

/// One scanner hit on a launcher pattern: which pattern, where, and the line's text.
pub struct LauncherHit<'a> {
    pub pattern: usize,
    pub lineno: u64,
    pub text: &'a str,
}

/// The signal a negative exit status (or 128 + n) names, e.g. -7 → `SIGBUS`.
pub fn signal_name(n: i64) -> Option<&'static str> {
    i32::try_from(n)
        .ok()
        .and_then(crate::sources::elfcore::signals::signal_name)
}

fn res() -> &'static [Regex; 6] {
    static R: OnceLock<[Regex; 6]> = OnceLock::new();
    R.get_or_init(|| {
        [
            Regex::new(r"exits with return code = (-?\d+)").unwrap(),
            Regex::new(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+) \(pid: (\d+)\)").unwrap(),
            Regex::new(r"rank\s*: (\d+) \(local_rank: (\d+)\)").unwrap(),
            Regex::new(r"exitcode\s*: (-?\d+) \(pid: (\d+)\)").unwrap(),
            Regex::new(r"Signal (\d+) \((SIG[A-Z]+)\) received by PID (\d+)").unwrap(),
            Regex::new(r"process (\d+) terminated with (?:exit code (-?\d+)|signal (SIG[A-Z]+))")
                .unwrap(),
        ]
    })
}

fn local_rank_arg() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| Regex::new(r"--local_rank=(\d+)").unwrap())
}

fn exit_facts(out: &mut Vec<Fact>, rank: u32, code: i64, lineno: u64, text: &str) {
    out.push(Fact::new(fact_names::rank_exit_code(rank), code).at(lineno, text));
    if code < 0
        && let Some(sig) = signal_name(-code)
    {
        out.push(Fact::new(fact_names::rank_exit_signal(rank), sig).at(lineno, text));
    } else if code > 128
        && let Some(sig) = signal_name(code - 128)
    {
        out.push(Fact::new(fact_names::rank_exit_signal(rank), sig).at(lineno, text));
    }
}

/// Turn one file's launcher hits (in line order) into exit facts.
pub fn facts_from_hits(hits: &[LauncherHit]) -> Vec<Fact> {
    let r = res();
    let mut out = Vec::new();
    // The rank of the most recent `rank : N (local_rank: M)` line, for the block's next lines.
    let mut block_rank: Option<(u32, u64)> = None;
    for h in hits {
        let near_block = |lineno: u64| block_rank.filter(|(_, at)| lineno.saturating_sub(*at) <= 4);
        match h.pattern {
            0 => {
                let Some(c) = r[0].captures(h.text) else {
                    continue;
                };
                let code: i64 = c[1].parse().unwrap_or(0);
                let rank = local_rank_arg()
                    .captures(h.text)
                    .and_then(|c| c[1].parse().ok());
                match rank {
                    Some(rank) => exit_facts(&mut out, rank, code, h.lineno, h.text),
                    None => out.push(Fact::new("launcher.exit_code", code).at(h.lineno, h.text)),
                }
            }
            1 => {
                let Some(c) = r[1].captures(h.text) else {
                    continue;
                };
                let code: i64 = c[1].parse().unwrap_or(0);
                if let Ok(lr) = c[2].parse() {
                    exit_facts(&mut out, lr, code, h.lineno, h.text);
                }
            }
            2 => {
                if let Some(c) = r[2].captures(h.text) {
                    block_rank = c[1].parse().ok().map(|rank| (rank, h.lineno));
                }
            }
            3 => {
                let (Some(c), Some((rank, _))) = (r[3].captures(h.text), near_block(h.lineno))
                else {
                    continue;
                };
                let code: i64 = c[1].parse().unwrap_or(0);
                exit_facts(&mut out, rank, code, h.lineno, h.text);
            }
            4 => {
                let (Some(c), Some((rank, _))) = (r[4].captures(h.text), near_block(h.lineno))
                else {
                    continue;
                };
                out.push(Fact::new(fact_names::rank_exit_signal(rank), &c[2]).at(h.lineno, h.text));
            }
            5 => {
                let Some(c) = r[5].captures(h.text) else {
                    continue;
                };
                let Ok(rank) = c[1].parse::<u32>() else {
                    continue;
                };
                if let Some(code) = c.get(2).and_then(|m| m.as_str().parse::<i64>().ok()) {
                    exit_facts(&mut out, rank, code, h.lineno, h.text);
                } else if let Some(sig) = c.get(3) {
                    out.push(
                        Fact::new(fact_names::rank_exit_signal(rank), sig.as_str())
                            .at(h.lineno, h.text),
                    );
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::compile_pattern;

    fn run(lines: &[&str]) -> Vec<(String, String)> {
        let mut hits = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            for (p, src) in PATTERNS.iter().enumerate() {
                if Regex::new(src).unwrap().is_match(l) {
                    hits.push(LauncherHit {
                        pattern: p,
                        lineno: i as u64 + 1,
                        text: l,
                    });
                }
            }
        }
        facts_from_hits(&hits)
            .into_iter()
            .map(|f| (f.name, f.value.to_string()))
            .collect()
    }

    #[test]
    fn patterns_are_scannable() {
        for p in PATTERNS {
            compile_pattern(p).unwrap();
        }
    }

    #[test]
    fn deepspeed_exit() {
        let f = run(&[
            "[2026-11-29 18:57:00,219] [ERROR] [launch.py:259:sigkill_handler] ['python', '-u', 'train.py', '--local_rank=1'] exits with return code = -7",
        ]);
        assert_eq!(
            f,
            vec![
                ("rank.1.exit_code".into(), "-7".into()),
                ("rank.1.exit_signal".into(), "SIGBUS".into())
            ]
        );
    }

    #[test]
    fn torchrun_root_cause_block() {
        let f = run(&[
            "Root Cause (first observed failure):",
            "[0]:",
            "  time      : 2026-11-29_19:01:05",
            "  host      : vm",
            "  rank      : 1 (local_rank: 1)",
            "  exitcode  : -6 (pid: 10646)",
            "  error_file: <N/A>",
            "  traceback : Signal 6 (SIGABRT) received by PID 10646",
        ]);
        assert!(
            f.contains(&("rank.1.exit_code".into(), "-6".into())),
            "{f:?}"
        );
        assert!(
            f.contains(&("rank.1.exit_signal".into(), "SIGABRT".into())),
            "{f:?}"
        );
    }

    #[test]
    fn exitcode_without_rank_block_is_ignored() {
        assert!(run(&["  exitcode  : -6 (pid: 10646)"]).is_empty());
    }
}
