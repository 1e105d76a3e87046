//! What a training log and the run's config files say about how the run was set up and how
//! it went: settings printed at start (a Python `args: {…}` dict, `Namespace(…)`, HF
//! `TrainingArguments(…)` in its multi-line and one-line reprs, launcher command lines with
//! their flags, DeepSpeed's `nnodes=… num_local_procs=…`), settings in config files
//! (DeepSpeed's ds_config JSON, LLaMA-Factory YAML), and the step trajectory (step, loss, grad
//! norm, step time from the lines' timestamps). Settings become `config.<key>` / `launch.<…>`
//! facts with their line; the trajectory becomes `StepPoint`s.
//!
//! It is not in the scanner's per-line path: `analyze` never runs it. Only a comparison of
//! two runs (`diff`) asks for it, once per log file. It decides nothing about causes.

use crate::model::Fact;
use crate::sources::prefix;

/// Longest config file read whole (ds_config JSON, YAML): such files are a few KiB.
pub(crate) const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// At most this many step points are kept per file (the trajectory is compared at its start
/// and where it parts; a multi-day log's millions of steps are not needed).
pub(crate) const MAX_STEPS: usize = 20_000;
/// At most this many settings are read from one printed dict or config file.
const MAX_SETTINGS: usize = 400;

/// One logged training step.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StepPoint {
    pub step: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grad_norm: Option<f64>,
    /// Seconds per step: from the line's own `s/it` or `it/s`, else from the timestamps of
    /// consecutive step lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_time: Option<f64>,
    pub line: u64,
    #[serde(skip)]
    pub text: String,
    /// Seconds since the epoch of the line's timestamp, when it has one.
    #[serde(skip)]
    pub at: Option<f64>,
}

/// What one file told.
#[derive(Debug, Default)]
pub struct TrainLog {
    pub facts: Vec<Fact>,
    pub steps: Vec<StepPoint>,
}

/// `--batch-size`, `per_device_train_batch_size`, `Batch-Size` → `batch_size`.
pub(crate) fn normalize_key(k: &str) -> String {
    k.trim()
        .trim_start_matches('-')
        .trim_matches(|c| c == '\'' || c == '"')
        .to_ascii_lowercase()
        .replace(['-', '.', ' '], "_")
}

fn setting(key: &str, value: &str, lineno: u64, line: &str) -> Option<Fact> {
    let k = normalize_key(key);
    if k.is_empty() || !k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let v = value.trim().trim_matches(|c| c == '\'' || c == '"').trim();
    Some(Fact::new(format!("config.{k}"), v).at(lineno, cut_line(line)))
}

/// What a terminal showed of a line redrawn with carriage returns (a progress bar): its
/// last non-blank part.
pub(crate) fn last_redraw(line: &str) -> &str {
    line.rsplit('\r')
        .find(|p| !p.trim().is_empty())
        .unwrap_or(line)
}

fn cut_line(line: &str) -> &str {
    let mut n = line.len().min(400);
    while !line.is_char_boundary(n) {
        n -= 1;
    }
    &line[..n]
}

/// Split `a=1, b='x, y', c=[1, 2]` (or `'a': 1, …`) at top-level commas.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut quote, mut start) = (0i32, None::<char>, 0);
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// The text inside the brackets that open at `open` (its matching close), if it closes on
/// this line.
fn inside(s: &str, open: usize) -> Option<&str> {
    let (o, c) = match s.as_bytes().get(open)? {
        b'{' => ('{', '}'),
        b'(' => ('(', ')'),
        _ => return None,
    };
    let (mut depth, mut quote) = (0i32, None::<char>);
    for (i, ch) in s[open..].char_indices() {
        match (quote, ch) {
            (Some(q), ch) if ch == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(ch),
            (None, ch) if ch == o => depth += 1,
            (None, ch) if ch == c => {
                depth -= 1;
                if depth == 0 {
                    return Some(&s[open + 1..open + i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// `key=value` / `'key': value` pairs of a repr body.
fn pairs(body: &str, sep: char) -> Vec<(&str, &str)> {
    split_top(body)
        .into_iter()
        .filter_map(|p| p.split_once(sep))
        .take(MAX_SETTINGS)
        .collect()
}

fn number(s: &str) -> Option<f64> {
    let t = s.trim().trim_matches(|c| c == '\'' || c == '"');
    match t.to_ascii_lowercase().as_str() {
        "nan" | "-nan" => Some(f64::NAN),
        "inf" | "infinity" => Some(f64::INFINITY),
        "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
        _ => t.parse().ok(),
    }
}

/// The value after `word` (`loss 2.3`, `loss=2.3`, `loss: 2.3`, `'loss': '2.3'`).
fn value_after(msg: &str, word: &str) -> Option<f64> {
    let mut from = 0;
    while let Some(p) = msg[from..].find(word) {
        let at = from + p;
        from = at + word.len();
        let before_ok = at == 0 || !msg.as_bytes()[at - 1].is_ascii_alphanumeric();
        let rest = &msg[from..];
        let after_ok = !rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        if !(before_ok && after_ok) {
            continue;
        }
        let rest = rest.trim_start_matches(['\'', '"', ' ', ':', '=']);
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+')))
            .unwrap_or(rest.len());
        if let Some(v) = number(&rest[..end]) {
            return Some(v);
        }
    }
    None
}

/// `step_time 0.110s`, `step_time=110ms`, `'step_time': 0.11` → seconds.
fn seconds_after(msg: &str, word: &str) -> Option<f64> {
    let at = msg.find(word)? + word.len();
    let rest = msg[at..].trim_start_matches(['\'', '"', ' ', ':', '=']);
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let v: f64 = rest[..end].parse().ok()?;
    Some(if rest[end..].starts_with("ms") {
        v / 1000.0
    } else {
        v
    })
}

/// `step 100/1200`, `step=100`, `Step: 100`, `global_step 100`, `iteration 100`.
fn step_number(msg: &str) -> Option<u64> {
    let lower = msg.to_ascii_lowercase();
    for word in ["global_step", "step", "iteration", "iter"] {
        let mut from = 0;
        while let Some(p) = lower[from..].find(word) {
            let at = from + p;
            from = at + word.len();
            if at > 0 && lower.as_bytes()[at - 1].is_ascii_alphanumeric() {
                continue;
            }
            let rest = lower[from..].trim_start_matches([' ', ':', '=', '[']);
            let end = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            if end > 0
                && let Ok(n) = rest[..end].parse()
            {
                return Some(n);
            }
        }
    }
    None
}

/// `1.79s/it` → 1.79; `5.66it/s` → 1/5.66.
fn tqdm_rate(msg: &str) -> Option<f64> {
    let num_before = |end: usize| {
        let start = msg[..end]
            .rfind(|c: char| !(c.is_ascii_digit() || c == '.'))
            .map_or(0, |i| i + 1);
        msg[start..end].parse::<f64>().ok()
    };
    if let Some(p) = msg.rfind("s/it") {
        return num_before(p);
    }
    if let Some(p) = msg.rfind("it/s") {
        return num_before(p).filter(|r| *r > 0.0).map(|r| 1.0 / r);
    }
    None
}

/// Command-line flags of a launcher or training script: `--nproc_per_node 2`,
/// `--nproc-per-node=2`, `--batch-size 16`, `--fp16`. Launcher flags become `launch.*`
/// facts, the rest `config.*`.
fn command_flags(tokens: &[&str], lineno: u64, line: &str, out: &mut TrainLog) {
    let mut i = 0;
    while i < tokens.len() {
        let t = tokens[i].trim_matches(|c| c == '\'' || c == '"' || c == ',');
        i += 1;
        let Some(flag) = t.strip_prefix("--") else {
            continue;
        };
        let (name, value) = match flag.split_once('=') {
            Some((n, v)) => (n, v.to_string()),
            None => {
                let next = tokens
                    .get(i)
                    .map(|s| s.trim_matches(|c| c == '\'' || c == '"' || c == ','));
                match next {
                    Some(v) if !v.starts_with("--") && !v.is_empty() => {
                        i += 1;
                        (flag, v.to_string())
                    }
                    _ => (flag, "true".to_string()),
                }
            }
        };
        let key = normalize_key(name);
        let launch = match key.as_str() {
            "nproc_per_node" | "num_gpus" | "num_processes" => Some("launch.nproc_per_node"),
            "nnodes" | "num_nodes" | "num_machines" => Some("launch.nnodes"),
            _ => None,
        };
        match launch {
            Some(f) => out
                .facts
                .push(Fact::new(f, value.as_str()).at(lineno, cut_line(line))),
            None => out
                .facts
                .extend(setting(&key, &value, lineno, line).filter(|_| !launcher_only(&key))),
        }
    }
}

/// Flags of the launcher itself that say nothing about the training (where it logs, which
/// address it rendezvous at: noise between two runs).
fn launcher_only(key: &str) -> bool {
    matches!(
        key,
        "world_info"
            | "master_addr"
            | "master_port"
            | "log_dir"
            | "enable_each_rank_log"
            | "log_level"
            | "local_rank"
            | "rdzv_endpoint"
            | "rdzv_id"
            | "node_rank"
    )
}

/// The launcher a command line starts, if it is one.
fn launcher_of(msg: &str) -> Option<(&'static str, usize)> {
    const LAUNCHERS: &[(&str, &str)] = &[
        ("deepspeed.launcher.launch", "deepspeed"),
        ("torch.distributed.run", "torchrun"),
        ("torch.distributed.launch", "torch.distributed.launch"),
        ("torchrun ", "torchrun"),
        ("accelerate launch", "accelerate"),
        ("deepspeed ", "deepspeed"),
        ("llamafactory-cli train", "llamafactory-cli"),
    ];
    LAUNCHERS
        .iter()
        .find_map(|(pat, name)| msg.find(pat).map(|p| (*name, p + pat.len())))
}

#[derive(Default)]
pub struct TrainLogParser {
    /// Inside a multi-line `TrainingArguments(` repr.
    in_training_args: bool,
    /// HF Trainer log dicts seen (they carry no step number).
    hf_dicts: u64,
    python_seen: bool,
    pub out: TrainLog,
}

impl TrainLogParser {
    pub fn line(&mut self, lineno: u64, raw: &str) {
        if self.in_training_args {
            let t = raw.trim();
            if t.starts_with(')') || t.is_empty() {
                self.in_training_args = false;
                return;
            }
            if let Some((k, v)) = t.trim_end_matches(',').split_once('=') {
                self.out.facts.extend(setting(k, v, lineno, raw));
            }
            return;
        }
        let (attr, start) = prefix::peel(raw);
        let msg = &raw[start..];
        if let Some(p) = msg.find("TrainingArguments(") {
            let open = p + "TrainingArguments".len();
            match inside(msg, open) {
                Some(body) => {
                    for (k, v) in pairs(body, '=') {
                        self.out.facts.extend(setting(k, v, lineno, raw));
                    }
                }
                None => self.in_training_args = true,
            }
            return;
        }
        if let Some(p) = msg.find("Namespace(")
            && let Some(body) = inside(msg, p + "Namespace".len())
        {
            for (k, v) in pairs(body, '=') {
                self.out.facts.extend(setting(k, v, lineno, raw));
            }
            return;
        }
        if let Some(p) = msg.find("args: {").or_else(|| msg.find("arguments: {"))
            && let Some(b) = msg[p..].find('{')
            && let Some(body) = inside(msg, p + b)
        {
            for (k, v) in pairs(body, ':') {
                self.out.facts.extend(setting(k, v, lineno, raw));
            }
            return;
        }
        if let Some(v) = msg.find("NCCL version ").map(|p| &msg[p + 13..]) {
            let v = v.split([' ', '+']).next().unwrap_or("");
            if v.starts_with(|c: char| c.is_ascii_digit()) {
                self.out
                    .facts
                    .push(Fact::new("version.nccl", v).at(lineno, cut_line(raw)));
            }
        }
        if !self.python_seen
            && let Some(p) = msg.find("/site-packages/")
            && let Some(py) = msg[..p].rfind("python")
        {
            let v = &msg[py + 6..p];
            if v.contains('.') && v.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
                self.python_seen = true;
                self.out
                    .facts
                    .push(Fact::new("version.python", v).at(lineno, cut_line(raw)));
            }
        }
        // DeepSpeed launcher: `nnodes=1, num_local_procs=2, node_rank=0`, `dist_world_size=2`.
        if msg.contains("num_local_procs=") {
            for (k, v) in pairs(msg, '=') {
                let f = match k.split_whitespace().last().unwrap_or("") {
                    "nnodes" => "launch.nnodes",
                    "num_local_procs" => "launch.nproc_per_node",
                    _ => continue,
                };
                self.out
                    .facts
                    .push(Fact::new(f, v.trim()).at(lineno, cut_line(raw)));
            }
            return;
        }
        if let Some(v) = msg
            .split_whitespace()
            .find_map(|w| w.strip_prefix("dist_world_size="))
        {
            self.out
                .facts
                .push(Fact::new("launch.world_size", v.trim()).at(lineno, cut_line(raw)));
            return;
        }
        if let Some((name, after)) = launcher_of(msg) {
            self.out
                .facts
                .push(Fact::new("launch.launcher", name).at(lineno, cut_line(raw)));
            let tokens: Vec<&str> = msg[after..].split_whitespace().collect();
            command_flags(&tokens, lineno, raw, &mut self.out);
            return;
        }
        self.step_line(lineno, raw, msg, attr.time.as_deref());
    }

    fn step_line(&mut self, lineno: u64, raw: &str, msg: &str, time: Option<&str>) {
        if self.out.steps.len() >= MAX_STEPS {
            return;
        }
        // HF Trainer: `{'loss': 2.3, 'grad_norm': 1.1, 'learning_rate': …, 'epoch': 0.1}`.
        let hf = msg.find("{'loss'").or_else(|| msg.find("{\"loss\""));
        let (step, body) = match hf {
            Some(p) => {
                self.hf_dicts += 1;
                let body = &msg[p..];
                let step = value_after(body, "step").map_or(self.hf_dicts, |s| s as u64);
                (step, body)
            }
            None => match step_number(msg) {
                Some(s) if msg.contains("loss") => (s, msg),
                _ => return,
            },
        };
        let loss = value_after(body, "loss");
        if loss.is_none() {
            return;
        }
        let at = time.and_then(crate::sources::units::epoch_from_iso);
        let mut step_time = seconds_after(body, "step_time")
            .or_else(|| seconds_after(body, "time_per_step"))
            .or_else(|| tqdm_rate(msg));
        if step_time.is_none()
            && let (Some(prev), Some(now)) = (self.out.steps.last(), at)
            && let Some(then) = prev.at
            && step > prev.step
        {
            step_time = Some((now - then) / (step - prev.step) as f64);
        }
        self.out.steps.push(StepPoint {
            step,
            loss,
            grad_norm: value_after(body, "grad_norm").or_else(|| value_after(body, "grad norm")),
            step_time,
            line: lineno,
            text: cut_line(last_redraw(raw)).trim_end().to_string(),
            at,
        });
    }

    pub fn finish(self) -> TrainLog {
        self.out
    }
}

/// A DeepSpeed / training config JSON: every leaf as `config.<path_joined_by_underscores>`
/// (`zero_optimization.stage` → `config.zero_optimization_stage`), when the document holds
/// at least one key a training config has. Facts carry the line the key is on.
pub(crate) fn json_config(text: &str) -> Option<Vec<Fact>> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let obj = v.as_object()?;
    const MARKS: &[&str] = &[
        "train_micro_batch_size_per_gpu",
        "train_batch_size",
        "gradient_accumulation_steps",
        "zero_optimization",
        "fp16",
        "bf16",
        "per_device_train_batch_size",
    ];
    if !obj.keys().any(|k| MARKS.contains(&k.as_str())) {
        return None;
    }
    let lines: Vec<&str> = text.lines().collect();
    // The line of a leaf: each key of its path in turn, from the line of the one above (good
    // enough for the pretty-printed files people keep; a one-line file gives line 1).
    let line_of = |path: &[String]| {
        let mut from = 0;
        for seg in path {
            let quoted = format!("\"{seg}\"");
            from += lines[from..].iter().position(|l| l.contains(&quoted))?;
        }
        Some(from)
    };
    let mut out = Vec::new();
    let mut stack: Vec<(Vec<String>, &serde_json::Value)> = obj
        .iter()
        .rev()
        .map(|(k, v)| (vec![k.clone()], v))
        .collect();
    while let Some((path, v)) = stack.pop() {
        if out.len() >= MAX_SETTINGS {
            break;
        }
        let value = match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m.iter().rev() {
                    let mut p = path.clone();
                    p.push(k.clone());
                    stack.push((p, v));
                }
                continue;
            }
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let key: Vec<String> = path.iter().map(|k| normalize_key(k)).collect();
        let f = Fact::new(format!("config.{}", key.join("_")), value);
        out.push(match line_of(&path) {
            Some(i) => f.at(i as u64 + 1, cut_line(lines[i])),
            None => f,
        });
    }
    Some(out)
}

/// A LLaMA-Factory style YAML config: `key: value` lines (nested keys joined by `_`), when
/// it holds at least one training key. Lists and multi-line values are skipped.
pub(crate) fn yaml_config(text: &str) -> Option<Vec<Fact>> {
    const MARKS: &[&str] = &[
        "per_device_train_batch_size",
        "gradient_accumulation_steps",
        "cutoff_len",
        "deepspeed",
        "learning_rate",
        "num_train_epochs",
        "finetuning_type",
    ];
    let mut out = Vec::new();
    let mut parents: Vec<(usize, String)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let body = line.split(" #").next().unwrap_or("");
        let t = body.trim_start();
        if t.is_empty() || t.starts_with('#') || t.starts_with('-') {
            continue;
        }
        let indent = body.len() - t.len();
        let Some((k, v)) = t.split_once(':') else {
            continue;
        };
        while parents.last().is_some_and(|(d, _)| *d >= indent) {
            parents.pop();
        }
        let key = normalize_key(k);
        let full = match parents.last() {
            Some((_, p)) => format!("{p}_{key}"),
            None => key,
        };
        let v = v.trim();
        if v.is_empty() {
            parents.push((indent, full));
            continue;
        }
        if out.len() < MAX_SETTINGS
            && let Some(f) = setting(&full, v, i as u64 + 1, line)
        {
            out.push(f);
        }
    }
    out.iter()
        .any(|f| MARKS.iter().any(|m| f.name == format!("config.{m}")))
        .then_some(out)
}

/// Read one log text through the parser (for tests).
#[cfg(test)]
pub(crate) fn parse_log(text: &str) -> TrainLog {
    let mut p = TrainLogParser::default();
    for (i, l) in text.lines().enumerate() {
        p.line(i as u64 + 1, l.strip_suffix('\r').unwrap_or(l));
    }
    p.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(facts: &[Fact], name: &str) -> Option<String> {
        facts
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.value.to_string())
    }

    #[test]
    fn a_python_args_dict_printed_at_start() {
        let t = parse_log(
            "2026-11-29 18:58:14,981 [rank0] INFO train: args: {'data': 'features', 'batch_size': 512, 'num_workers': 2, 'lr': 0.001, 'fast_decode': False, 'shape': [1, 2]}\n",
        );
        assert_eq!(get(&t.facts, "config.batch_size").as_deref(), Some("512"));
        assert_eq!(get(&t.facts, "config.num_workers").as_deref(), Some("2"));
        assert_eq!(get(&t.facts, "config.data").as_deref(), Some("features"));
        assert_eq!(get(&t.facts, "config.shape").as_deref(), Some("[1, 2]"));
        assert_eq!(t.facts[0].line, Some(1));
    }

    #[test]
    fn a_namespace_repr() {
        let t = parse_log("Namespace(batch_size=16, fp16=True, model='gpt2', layers=(1, 2))\n");
        assert_eq!(get(&t.facts, "config.batch_size").as_deref(), Some("16"));
        assert_eq!(get(&t.facts, "config.fp16").as_deref(), Some("True"));
        assert_eq!(get(&t.facts, "config.model").as_deref(), Some("gpt2"));
        assert_eq!(get(&t.facts, "config.layers").as_deref(), Some("(1, 2)"));
    }

    #[test]
    fn training_arguments_multi_line_and_one_line() {
        let multi = "11/29/2026 10:00:00 - INFO - __main__ - Training/evaluation parameters TrainingArguments(\n_n_gpu=1,\nbf16=True,\nfp16=False,\nper_device_train_batch_size=8,\ngradient_accumulation_steps=4,\n)\n{'loss': 2.5, 'grad_norm': 1.5, 'learning_rate': 0.0001, 'epoch': 0.1}\n";
        let t = parse_log(multi);
        assert_eq!(get(&t.facts, "config.bf16").as_deref(), Some("True"));
        assert_eq!(
            get(&t.facts, "config.per_device_train_batch_size").as_deref(),
            Some("8")
        );
        assert_eq!(
            get(&t.facts, "config.gradient_accumulation_steps").as_deref(),
            Some("4")
        );
        // The repr's end is not a setting, and the log dict after it is a step.
        assert_eq!(t.steps.len(), 1);
        let one = "Training/evaluation parameters TrainingArguments(output_dir='out', fp16=True, per_device_train_batch_size=4, dataloader_num_workers=8)\n";
        let t = parse_log(one);
        assert_eq!(get(&t.facts, "config.fp16").as_deref(), Some("True"));
        assert_eq!(
            get(&t.facts, "config.dataloader_num_workers").as_deref(),
            Some("8")
        );
    }

    #[test]
    fn launcher_lines_give_world_and_flags() {
        let t = parse_log(
            "[2026-11-29 18:56:18,938] [INFO] [runner.py:618:main] cmd = /opt/torch/.venv/bin/python3 -u -m deepspeed.launcher.launch --world_info=eyJsb2NhbGhvc3QiOiBbMCwgMV19 --master_addr=127.0.0.1 --master_port=29500 /workspace/proj/train_ds.py --deepspeed --deepspeed_config ds_config.json --num-workers 4 --steps 50\n[2026-11-29 18:56:23,207] [INFO] [launch.py:158:main] nnodes=1, num_local_procs=2, node_rank=0\n[2026-11-29 18:56:23,207] [INFO] [launch.py:170:main] dist_world_size=2\n+ torchrun --nproc-per-node=4 --nnodes 2 train.py --batch-size 32\n",
        );
        assert_eq!(
            get(&t.facts, "launch.launcher").as_deref(),
            Some("deepspeed")
        );
        assert_eq!(get(&t.facts, "config.num_workers").as_deref(), Some("4"));
        assert_eq!(get(&t.facts, "config.deepspeed").as_deref(), Some("true"));
        assert_eq!(get(&t.facts, "config.master_port"), None, "launcher noise");
        assert_eq!(get(&t.facts, "config.world_info"), None);
        assert_eq!(get(&t.facts, "launch.nnodes").as_deref(), Some("1"));
        assert_eq!(get(&t.facts, "launch.nproc_per_node").as_deref(), Some("2"));
        assert_eq!(get(&t.facts, "launch.world_size").as_deref(), Some("2"));
        let last: Vec<&Fact> = t.facts.iter().filter(|f| f.line == Some(4)).collect();
        let names: Vec<(&str, String)> = last
            .iter()
            .map(|f| (f.name.as_str(), f.value.to_string()))
            .collect();
        assert_eq!(
            names,
            [
                ("launch.launcher", "torchrun".to_string()),
                ("launch.nproc_per_node", "4".to_string()),
                ("launch.nnodes", "2".to_string()),
                ("config.batch_size", "32".to_string()),
            ]
        );
    }

    #[test]
    fn step_lines_of_a_script_and_of_the_hf_trainer() {
        let t = parse_log(
            "2026-11-29 18:58:24,637 [rank0] INFO train: step 100/1200 loss 2.3058  80343.5 samples/s\n2026-11-29 18:58:25,572 [rank0] INFO train: step 200/1200 loss 2.3011  92655.6 samples/s\n",
        );
        assert_eq!(t.steps.len(), 2);
        assert_eq!(t.steps[0].step, 100);
        assert_eq!(t.steps[0].loss, Some(2.3058));
        assert_eq!(t.steps[0].step_time, None);
        let dt = t.steps[1].step_time.unwrap();
        assert!((dt - 0.00935).abs() < 1e-6, "{dt}");
        let t = parse_log(
            "  2%|▏         | 1/60 [00:00<00:31,  1.85it/s]      {'loss': '9.026', 'grad_norm': '1.128', 'learning_rate': '0.0005', 'epoch': '0.00016'}\n  3%|▎   | 1/30 [00:01<00:51,  1.79s/it]   {'loss': 'nan', 'grad_norm': 'nan', 'learning_rate': '9667', 'epoch': '0.00032'}\n",
        );
        assert_eq!(t.steps[0].step, 1);
        assert_eq!(t.steps[0].grad_norm, Some(1.128));
        assert!((t.steps[0].step_time.unwrap() - 1.0 / 1.85).abs() < 1e-9);
        assert_eq!(t.steps[1].step, 2);
        assert!(t.steps[1].loss.unwrap().is_nan());
        assert_eq!(t.steps[1].step_time, Some(1.79));
        let t = parse_log(
            "2026-12-01 13:08:37,958 [INFO] train: step 1/60 loss 2.5 grad_norm 0.5 step_time 0.110s\nstep 2 loss 2.4 step_time=95ms\n",
        );
        assert_eq!(t.steps[0].step_time, Some(0.110));
        assert_eq!(t.steps[0].grad_norm, Some(0.5));
        assert_eq!(t.steps[1].step_time, Some(0.095));
    }

    #[test]
    fn versions_from_an_nccl_banner_and_a_traceback_path() {
        let t = parse_log(
            "node1:123:123 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n  File \"/opt/torch/.venv/lib/python3.12/site-packages/torch/utils/data/dataloader.py\", line 741, in __next__\n",
        );
        assert_eq!(get(&t.facts, "version.nccl").as_deref(), Some("2.28.9"));
        assert_eq!(get(&t.facts, "version.python").as_deref(), Some("3.12"));
    }

    #[test]
    fn lines_that_are_not_settings_or_steps_give_nothing() {
        let t = parse_log(
            "RuntimeError: DataLoader worker (pid 4232) is killed by signal: Bus error.\nstep into the void\nloss of signal\nthe args: are fine\n",
        );
        assert!(t.facts.is_empty(), "{:?}", t.facts);
        assert!(t.steps.is_empty());
    }

    #[test]
    fn a_ds_config_json_flattens_to_settings_with_lines() {
        let text = "{\n  \"train_micro_batch_size_per_gpu\": 16,\n  \"gradient_accumulation_steps\": 1,\n  \"fp16\": {\"enabled\": true},\n  \"zero_optimization\": {\n    \"stage\": 2,\n    \"offload_optimizer\": {\"device\": \"cpu\"}\n  }\n}\n";
        let f = json_config(text).unwrap();
        assert_eq!(
            get(&f, "config.train_micro_batch_size_per_gpu").as_deref(),
            Some("16")
        );
        assert_eq!(get(&f, "config.fp16_enabled").as_deref(), Some("true"));
        assert_eq!(
            get(&f, "config.zero_optimization_stage").as_deref(),
            Some("2")
        );
        assert_eq!(
            get(&f, "config.zero_optimization_offload_optimizer_device").as_deref(),
            Some("cpu")
        );
        let stage = f
            .iter()
            .find(|x| x.name == "config.zero_optimization_stage")
            .unwrap();
        assert_eq!(stage.line, Some(6));
        assert!(json_config("{\"name\": \"not a config\"}").is_none());
        assert!(json_config("not json").is_none());
    }

    #[test]
    fn a_llama_factory_yaml() {
        let text = "### model\nmodel_name_or_path: Qwen/Qwen2-7B\n\n### train\nper_device_train_batch_size: 2\ngradient_accumulation_steps: 8\nbf16: true\ncutoff_len: 2048  # tokens\npreprocessing_num_workers: 16\ndeepspeed: examples/deepspeed/ds_z2_config.json\n";
        let f = yaml_config(text).unwrap();
        assert_eq!(
            get(&f, "config.per_device_train_batch_size").as_deref(),
            Some("2")
        );
        assert_eq!(get(&f, "config.cutoff_len").as_deref(), Some("2048"));
        assert_eq!(get(&f, "config.bf16").as_deref(), Some("true"));
        assert_eq!(f[1].line, Some(5));
        assert!(yaml_config("apiVersion: v1\nkind: Pod\n").is_none());
    }
}
