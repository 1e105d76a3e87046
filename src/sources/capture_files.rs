//! The files `trainwreck run` writes about the run it watched: `peaks.txt` (`name: value`
//! lines whose names are catalog facts, e.g. `shm.peak_bytes: 211812352`) and
//! `exit_status.txt` (`exit_code: 3` or `signal: SIGBUS (7)`). Reads them back as facts;
//! knows nothing of how they were sampled.

use super::{FactOut, FactParser};
use crate::model::{Fact, text};

pub struct PeaksParser;

impl FactParser for PeaksParser {
    fn line(&mut self, lineno: u64, line: &str, out: &mut FactOut) {
        if line.starts_with('#') || line.trim().is_empty() {
            return;
        }
        let Some((name, value)) = line.split_once(':') else {
            out.warnings.push(text!(
                "line {lineno}: not a `name: value` line: {line:?}",
                "第 {lineno} 行：不是 `name: value` 格式的行：{line:?}"
            ));
            return;
        };
        let name = name.trim();
        match value.trim().parse::<u64>() {
            Ok(v) if crate::facts::spec_for(name).is_some() => {
                out.facts.push(Fact::new(name, v).at(lineno, line))
            }
            Ok(_) => out.warnings.push(text!(
                "line {lineno}: unknown fact name {name:?}: ignored",
                "第 {lineno} 行：未知的事实名 {name:?}：已忽略"
            )),
            Err(_) => out.warnings.push(text!(
                "line {lineno}: {name}: value is not a number",
                "第 {lineno} 行：{name}：值不是数字"
            )),
        }
    }
}

pub struct ExitStatusParser;

impl FactParser for ExitStatusParser {
    fn line(&mut self, lineno: u64, line: &str, out: &mut FactOut) {
        if let Some(code) = line.strip_prefix("exit_code:") {
            if let Ok(c) = code.trim().parse::<i64>() {
                out.facts
                    .push(Fact::new("launcher.exit_code", c).at(lineno, line));
            }
        } else if let Some(sig) = line.strip_prefix("signal:") {
            // `signal: SIGBUS (7)`
            let mut parts = sig.split_whitespace();
            if let Some(name) = parts.next().filter(|n| n.starts_with("SIG")) {
                out.facts
                    .push(Fact::new("launcher.exit_signal", name).at(lineno, line));
            }
            if let Some(n) = parts
                .next()
                .and_then(|n| n.trim_matches(['(', ')']).parse::<i64>().ok())
            {
                out.facts
                    .push(Fact::new("launcher.exit_code", -n).at(lineno, line));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::feed;

    #[test]
    fn peaks_become_facts_and_unknown_names_warn() {
        let out = feed(
            &mut PeaksParser,
            "# peaks\nshm.peak_bytes: 211812352\nbogus.name: 3\ngpu.0.memory_peak_bytes: x\n",
        );
        assert_eq!(out.facts.len(), 1);
        assert_eq!(out.facts[0].name, "shm.peak_bytes");
        assert_eq!(out.warnings.len(), 2);
    }

    #[test]
    fn exit_status_by_code_or_signal() {
        let out = feed(&mut ExitStatusParser, "exit_code: 3\nexit_status: 3\n");
        assert_eq!(out.facts[0].value.to_string(), "3");
        let out = feed(
            &mut ExitStatusParser,
            "signal: SIGBUS (7)\ncore_dumped: false\nexit_status: 135\n",
        );
        let names: Vec<_> = out
            .facts
            .iter()
            .map(|f| (f.name.as_str(), f.value.to_string()))
            .collect();
        assert_eq!(
            names,
            vec![
                ("launcher.exit_signal", "SIGBUS".to_string()),
                ("launcher.exit_code", "-7".to_string())
            ]
        );
    }
}
