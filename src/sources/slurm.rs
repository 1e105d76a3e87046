//! Slurm job output, `sacct` (aligned or `-p`) and `scontrol show job` → job state, exit code and
//! signal, time limit, elapsed time, cancellation reason, OOM events. It reads what Slurm printed;
//! a cancellation without a stated reason stays without one.

use super::units::{size_1024, slurm_duration};
use super::{Event, EventKind, FactOut, FactParser};
use crate::model::{Fact, text};
use regex::Regex;
use std::sync::OnceLock;

struct Res {
    cancelled: Regex,
    oom: Regex,
    srun: Regex,
}

fn res() -> &'static Res {
    static R: OnceLock<Res> = OnceLock::new();
    R.get_or_init(|| Res {
        cancelled: Regex::new(
            r"\*\*\* (JOB|STEP) (\d+)(?:\.\S+)? ON (\S+) CANCELLED AT (\S+)(?: DUE TO ([A-Z ]+?))?(?: \*\*\*|$)",
        )
        .expect("re"),
        oom: Regex::new(r"Detected (\d+) oom[-_]kill event").expect("re"),
        srun: Regex::new(r"srun: error: (\S+): tasks? ([\d,\-]+): (.*)").expect("re"),
    })
}

#[derive(Default)]
pub struct SlurmParser {
    oom_total: i64,
    oom_first: Option<(u64, String)>,
    /// sacct: column names and, for the aligned form, their byte spans from the dashes line.
    sacct_cols: Vec<String>,
    sacct_spans: Vec<(usize, usize)>,
    sacct_pipe: bool,
    sacct_job_done: bool,
    oom_steps: i64,
    oom_step_line: Option<(u64, String)>,
}

impl SlurmParser {
    fn exit_code(out: &mut FactOut, v: &str, lineno: u64, line: &str) {
        if let Some((code, sig)) = v.split_once(':') {
            if let Ok(c) = code.parse::<i64>() {
                out.facts
                    .push(Fact::new("slurm.exit_code", c).at(lineno, line));
            }
            if let Ok(s) = sig.parse::<i64>() {
                out.facts
                    .push(Fact::new("slurm.exit_signal", s).at(lineno, line));
            }
        }
    }

    fn field(&self, out: &mut FactOut, col: &str, v: &str, lineno: u64, line: &str) {
        let v = v.trim();
        if v.is_empty() {
            return;
        }
        match col {
            "JobID" | "JobId" => {
                if let Ok(id) = v.parse::<i64>() {
                    out.facts
                        .push(Fact::new("slurm.job_id", id).at(lineno, line));
                }
            }
            "State" | "JobState" => {
                let state = v.split_whitespace().next().unwrap_or(v);
                out.facts
                    .push(Fact::new("slurm.state", state).at(lineno, line));
            }
            "ExitCode" => Self::exit_code(out, v, lineno, line),
            "Elapsed" | "RunTime" => {
                if let Some(s) = slurm_duration(v) {
                    out.facts
                        .push(Fact::new("slurm.elapsed_seconds", s).at(lineno, line));
                }
            }
            "Timelimit" | "TimeLimit" => {
                if let Some(s) = slurm_duration(v) {
                    out.facts
                        .push(Fact::new("slurm.time_limit_seconds", s).at(lineno, line));
                }
            }
            "Reason" if v != "None" => {
                out.facts
                    .push(Fact::new("slurm.reason", v).at(lineno, line));
            }
            _ => {}
        }
    }

    fn sacct_row(&mut self, lineno: u64, line: &str, out: &mut FactOut) {
        let cells: Vec<String> = if self.sacct_pipe {
            line.split('|').map(str::to_string).collect()
        } else {
            self.sacct_spans
                .iter()
                .map(|&(a, b)| {
                    line.get(a..b.min(line.len()))
                        .unwrap_or("")
                        .trim()
                        .to_string()
                })
                .collect()
        };
        let get = |name: &str| {
            self.sacct_cols
                .iter()
                .position(|c| c == name)
                .and_then(|i| cells.get(i))
                .map(String::as_str)
        };
        let id = get("JobID").unwrap_or("");
        let state = get("State").unwrap_or("");
        if state.starts_with("OUT_OF_ME") {
            self.oom_steps += 1;
            self.oom_step_line
                .get_or_insert((lineno, line.trim_end().to_string()));
        }
        if let Some(rss) = get("MaxRSS").filter(|s| !s.is_empty())
            && let Some(b) = size_1024(rss, 1)
        {
            out.facts
                .push(Fact::new("slurm.max_rss_bytes", b).at(lineno, line));
        }
        // The job's own row (no `.batch`/`.0` suffix) carries the job's state; steps do not.
        if !id.contains('.') && !id.is_empty() && !self.sacct_job_done {
            self.sacct_job_done = true;
            let cols = self.sacct_cols.clone();
            for (c, v) in cols.iter().zip(&cells) {
                self.field(out, c, v, lineno, line);
            }
        }
    }
}

impl FactParser for SlurmParser {
    fn line(&mut self, lineno: u64, line: &str, out: &mut FactOut) {
        let t = line.trim();
        if t.is_empty() {
            return;
        }
        let r = res();
        if let Some(c) = r.cancelled.captures(t) {
            let g = |i: usize| c.get(i).map_or("", |m| m.as_str());
            if let Ok(id) = g(2).parse::<i64>() {
                out.facts
                    .push(Fact::new("slurm.job_id", id).at(lineno, line));
            }
            let reason = if g(5).is_empty() {
                "unstated"
            } else {
                g(5).trim()
            };
            out.facts
                .push(Fact::new("slurm.cancelled", reason).at(lineno, line));
            let mut ev = Event {
                kind: EventKind::SlurmCancel,
                line: lineno,
                text: t.to_string(),
                time: Some(g(4).to_string()),
                host: Some(g(3).to_string()),
                ..Event::default()
            };
            ev.fields.insert("reason".into(), reason.into());
            out.events.push(ev);
            return;
        }
        if let Some(c) = r.oom.captures(t) {
            self.oom_total += c
                .get(1)
                .and_then(|m| m.as_str().parse::<i64>().ok())
                .unwrap_or(0);
            self.oom_first.get_or_insert((lineno, t.to_string()));
            return;
        }
        if let Some(c) = r.srun.captures(t) {
            let mut ev = Event {
                kind: EventKind::SlurmTask,
                line: lineno,
                text: t.to_string(),
                host: c.get(1).map(|m| m.as_str().to_string()),
                ..Event::default()
            };
            ev.fields
                .insert("tasks".into(), c.get(2).map_or("", |m| m.as_str()).into());
            ev.fields
                .insert("status".into(), c.get(3).map_or("", |m| m.as_str()).into());
            out.events.push(ev);
            return;
        }
        // sacct header, then a dashes line giving the column spans.
        if self.sacct_cols.is_empty() && (t.starts_with("JobID ") || t.starts_with("JobID|")) {
            self.sacct_pipe = t.contains('|');
            self.sacct_cols = t
                .split(if self.sacct_pipe { '|' } else { ' ' })
                .filter(|s| !s.is_empty())
                .map(|s| s.trim().to_string())
                .collect();
            return;
        }
        if !self.sacct_cols.is_empty()
            && !self.sacct_pipe
            && self.sacct_spans.is_empty()
            && t.starts_with("---")
        {
            let mut start = None;
            for (i, ch) in line.char_indices().chain([(line.len(), ' ')]) {
                match (ch == '-', start) {
                    (true, None) => start = Some(i),
                    (false, Some(s)) => {
                        self.sacct_spans.push((s, i));
                        start = None;
                    }
                    _ => {}
                }
            }
            if self.sacct_spans.len() != self.sacct_cols.len() {
                out.warnings.push(text!(
                    "sacct: {} columns in the header but {} in the dashes line; rows not read",
                    "sacct：表头有 {} 列，分隔线却有 {} 列；未读取数据行",
                    self.sacct_cols.len(),
                    self.sacct_spans.len()
                ));
                self.sacct_cols.clear();
            }
            return;
        }
        if !self.sacct_cols.is_empty() && (self.sacct_pipe || !self.sacct_spans.is_empty()) {
            self.sacct_row(lineno, line, out);
            return;
        }
        // scontrol show job: `Key=Value Key=Value …` lines.
        if t.contains('=')
            && (t.starts_with("JobId=")
                || t.starts_with("JobState=")
                || t.starts_with("RunTime=")
                || t.starts_with("Requeue="))
        {
            for kv in t.split_whitespace() {
                if let Some((k, v)) = kv.split_once('=') {
                    self.field(out, k, v, lineno, line);
                }
            }
        }
    }

    fn finish(&mut self, out: &mut FactOut) {
        if let Some((l, t)) = self.oom_first.take() {
            out.facts
                .push(Fact::new("slurm.oom_kill", self.oom_total).at(l, &t));
        }
        if let Some((l, t)) = self.oom_step_line.take() {
            out.facts
                .push(Fact::new("slurm.out_of_memory_steps", self.oom_steps).at(l, &t));
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
    fn job_output_time_limit_and_oom() {
        let out = parse_text(
            SourceKind::SlurmLog,
            "slurm-123.out",
            "slurmstepd: error: *** JOB 123 ON node7 CANCELLED AT 2024-01-10T10:02:13 DUE TO TIME LIMIT ***\nslurmstepd: error: Detected 1 oom_kill event in StepId=123.0. Some of the step tasks have been OOM Killed.\nsrun: error: node7: task 3: Out Of Memory\n",
        );
        assert_eq!(
            get(&out, "slurm.cancelled"),
            Some(&FactValue::Text("TIME LIMIT".into()))
        );
        assert_eq!(get(&out, "slurm.oom_kill"), Some(&FactValue::Int(1)));
        assert_eq!(out.events.len(), 2);
    }

    #[test]
    fn sacct_aligned_and_scontrol() {
        let sacct = "JobID           JobName      State ExitCode    Elapsed  Timelimit     MaxRSS \n------------ ---------- ---------- -------- ---------- ---------- ---------- \n123               train    TIMEOUT      0:0   01:00:13   01:00:00            \n123.batch         batch  CANCELLED     0:15   01:00:14                 1024K \n123.0            python OUT_OF_ME+    0:125   00:10:00                 6000M \n";
        let out = parse_text(SourceKind::SlurmLog, "sacct.txt", sacct);
        assert_eq!(
            get(&out, "slurm.state"),
            Some(&FactValue::Text("TIMEOUT".into()))
        );
        assert_eq!(
            get(&out, "slurm.elapsed_seconds"),
            Some(&FactValue::Int(3613))
        );
        assert_eq!(
            get(&out, "slurm.out_of_memory_steps"),
            Some(&FactValue::Int(1))
        );
        let out = parse_text(
            SourceKind::SlurmLog,
            "scontrol.txt",
            "JobId=123 JobName=train\n   JobState=TIMEOUT Reason=TimeLimit Dependency=(null)\n   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:15\n   RunTime=01:00:13 TimeLimit=01:00:00 TimeMin=N/A\n",
        );
        assert_eq!(get(&out, "slurm.exit_signal"), Some(&FactValue::Int(15)));
        assert_eq!(
            get(&out, "slurm.time_limit_seconds"),
            Some(&FactValue::Int(3600))
        );
        assert_eq!(
            get(&out, "slurm.reason"),
            Some(&FactValue::Text("TimeLimit".into()))
        );
    }
}
