//! Kubernetes pods: `kubectl describe pod` text and `kubectl get pod -o json|yaml` → container
//! states (OOMKilled, exit codes, restarts), memory limits, and the /dev/shm volume (medium Memory,
//! sizeLimit). It reads one pod's record; it must not infer a limit that the pod does not state.

use super::units::k8s_quantity;
use super::{FactOut, FactParser};
use crate::fact_names;
use crate::model::{Fact, text};
use serde_json::{Map, Value};

const MAX_BYTES: usize = crate::limits::DOCUMENT_BYTES;

#[derive(Default)]
pub struct PodParser {
    /// Structured forms (JSON/YAML) are buffered and read at the end.
    buf: String,
    structured: Option<bool>,
    overflow: bool,
    describe: Describe,
}

/// Line-by-line state for `kubectl describe pod`.
#[derive(Default)]
struct Describe {
    section: String,
    container: Option<String>,
    /// `state` or `last` while reading a `State:` / `Last State:` block.
    state: Option<&'static str>,
    in_limits: bool,
    shm_volume: Option<String>,
    volume: Option<String>,
    /// (volume, medium is Memory, sizeLimit, line, text)
    volumes: Vec<(String, bool, Option<u64>, u64, String)>,
    oom: i64,
    oom_line: Option<(u64, String)>,
}

fn push(
    out: &mut FactOut,
    name: String,
    v: impl Into<crate::model::FactValue>,
    lineno: u64,
    line: &str,
) {
    out.facts.push(Fact::new(name, v).at(lineno, line));
}

impl Describe {
    fn line(&mut self, lineno: u64, line: &str, out: &mut FactOut) {
        let indent = line.len() - line.trim_start().len();
        let t = line.trim();
        if t.is_empty() {
            return;
        }
        let (key, val) = match t.split_once(':') {
            Some((k, v)) => (k.trim(), v.trim()),
            None => (t, ""),
        };
        if indent == 0 {
            self.section = key.to_string();
            self.container = None;
            self.state = None;
            self.volume = None;
            return;
        }
        match self.section.as_str() {
            "Containers" | "Init Containers" => {
                if indent == 2 && val.is_empty() && t.ends_with(':') {
                    self.container = Some(key.to_string());
                    self.state = None;
                    self.in_limits = false;
                    return;
                }
                let Some(c) = self.container.clone() else {
                    return;
                };
                match key {
                    "State" => self.state = Some("state"),
                    "Last State" => self.state = Some("last"),
                    "Ready" | "Image" | "Requests" | "Environment" | "Mounts" => {
                        self.state = None;
                        self.in_limits = false;
                    }
                    "Limits" => {
                        self.state = None;
                        self.in_limits = true;
                    }
                    "Reason" if self.state.is_some() => {
                        let n = if self.state == Some("last") {
                            "last_reason"
                        } else {
                            "reason"
                        };
                        push(out, fact_names::k8s_container(&c, n), val, lineno, line);
                        if val == "OOMKilled" {
                            self.oom += 1;
                            self.oom_line
                                .get_or_insert((lineno, line.trim_end().to_string()));
                        }
                    }
                    "Exit Code" if self.state.is_some() => {
                        let n = if self.state == Some("last") {
                            "last_exit_code"
                        } else {
                            "exit_code"
                        };
                        if let Ok(v) = val.parse::<i64>() {
                            push(out, fact_names::k8s_container(&c, n), v, lineno, line);
                        }
                    }
                    "Restart Count" => {
                        if let Ok(v) = val.parse::<i64>() {
                            push(
                                out,
                                fact_names::k8s_container(&c, "restarts"),
                                v,
                                lineno,
                                line,
                            );
                        }
                    }
                    "memory" if self.in_limits => match k8s_quantity(val) {
                        Some(b) => push(
                            out,
                            fact_names::k8s_container(&c, "memory_limit_bytes"),
                            b,
                            lineno,
                            line,
                        ),
                        None => out.warnings.push(text!(
                            "k8s: line {lineno}: memory `{val}` unreadable",
                            "k8s：第 {lineno} 行：无法解析内存值 `{val}`"
                        )),
                    },
                    _ => {}
                }
                if let Some(rest) = t.strip_prefix("/dev/shm from ") {
                    self.shm_volume = rest.split_whitespace().next().map(str::to_string);
                }
            }
            "Volumes" => {
                if indent == 2 && val.is_empty() && t.ends_with(':') {
                    self.volume = Some(key.to_string());
                    self.volumes.push((
                        key.to_string(),
                        false,
                        None,
                        lineno,
                        line.trim_end().to_string(),
                    ));
                    return;
                }
                let Some(v) = self.volumes.last_mut() else {
                    return;
                };
                match key {
                    "Medium" if val == "Memory" => v.1 = true,
                    "SizeLimit" => v.2 = k8s_quantity(val),
                    _ => {}
                }
            }
            _ => {}
        }
    }

    fn finish(&mut self, out: &mut FactOut) {
        if let Some(shm) = &self.shm_volume
            && let Some((_, mem, size, l, t)) = self.volumes.iter().find(|v| &v.0 == shm)
        {
            out.facts
                .push(Fact::new("k8s.shm_medium_memory", *mem).at(*l, t));
            if let Some(s) = size {
                out.facts
                    .push(Fact::new("k8s.shm_size_limit_bytes", *s).at(*l, t));
            }
        }
        if let Some((l, t)) = &self.oom_line {
            out.facts
                .push(Fact::new("k8s.oom_killed", self.oom).at(*l, t));
        }
    }
}

/// A block-style YAML subset as kubectl writes it (maps, `- ` lists, plain scalars) → JSON value.
/// Block scalars (`|`, `>`) are skipped; flow collections are kept as strings.
pub(crate) fn yaml_to_value(text: &str) -> Value {
    let lines: Vec<(usize, &str)> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#') && l.trim() != "---")
        .map(|l| (l.len() - l.trim_start().len(), l.trim_end()))
        .collect();
    let mut i = 0;
    parse_block(&lines, &mut i, 0, 0)
}

/// Deeper nesting than any pod object has: stop there rather than recurse without bound.
const MAX_DEPTH: usize = 64;

fn scalar(s: &str) -> Value {
    let s = s.trim();
    let unq = s.trim_matches('"').trim_matches('\'');
    if unq.len() != s.len() {
        return Value::String(unq.to_string());
    }
    if let Ok(n) = s.parse::<i64>() {
        return Value::from(n);
    }
    match s {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        "null" | "~" => Value::Null,
        _ => Value::String(s.to_string()),
    }
}

fn parse_block(lines: &[(usize, &str)], i: &mut usize, indent: usize, depth: usize) -> Value {
    let Some(&(ind, first)) = lines.get(*i) else {
        return Value::Null;
    };
    if depth > MAX_DEPTH {
        *i = lines.len();
        return Value::Null;
    }
    if ind < indent {
        return Value::Null;
    }
    let ind0 = ind;
    if first.trim_start().starts_with("- ") || first.trim_start() == "-" {
        let mut list = Vec::new();
        while let Some(&(ind, l)) = lines.get(*i) {
            let t = l.trim_start();
            if ind != ind0 || !(t.starts_with("- ") || t == "-") {
                break;
            }
            let rest = t[1..].trim_start();
            let item_indent = ind + (t.len() - rest.len());
            if rest.is_empty() {
                *i += 1;
                list.push(parse_block(lines, i, ind + 1, depth + 1));
            } else if rest.contains(": ") || rest.ends_with(':') {
                // `- key: value` starts a map whose other keys sit at item_indent.
                let mut sub: Vec<(usize, &str)> = vec![(item_indent, rest)];
                *i += 1;
                while let Some(&(ind2, l2)) = lines.get(*i) {
                    if ind2 < item_indent {
                        break;
                    }
                    sub.push((ind2, l2.trim_start()));
                    *i += 1;
                }
                let fixed: Vec<(usize, &str)> = sub;
                let mut j = 0;
                list.push(parse_block(&fixed, &mut j, item_indent, depth + 1));
            } else {
                list.push(scalar(rest));
                *i += 1;
            }
        }
        return Value::Array(list);
    }
    let mut map = Map::new();
    while let Some(&(ind, l)) = lines.get(*i) {
        if ind != ind0 {
            if ind < ind0 {
                break;
            }
            *i += 1; // deeper line not owned by any key (block scalar body): skip
            continue;
        }
        let t = l.trim_start();
        if t.starts_with("- ") {
            break;
        }
        let Some((k, v)) = t.split_once(':') else {
            *i += 1;
            continue;
        };
        let k = k.trim().trim_matches('"').to_string();
        let v = v.trim();
        *i += 1;
        if v.is_empty() {
            let child_indent = lines.get(*i).map(|x| x.0).unwrap_or(0);
            let child = if child_indent > ind0
                || (child_indent == ind0
                    && lines
                        .get(*i)
                        .is_some_and(|x| x.1.trim_start().starts_with("- ")))
            {
                parse_block(lines, i, child_indent, depth + 1)
            } else {
                Value::Null
            };
            map.insert(k, child);
        } else if v.starts_with('|') || v.starts_with('>') {
            while lines.get(*i).is_some_and(|x| x.0 > ind0) {
                *i += 1;
            }
            map.insert(k, Value::Null);
        } else {
            map.insert(k, scalar(v));
        }
    }
    Value::Object(map)
}

fn from_value(v: &Value, out: &mut FactOut) {
    // A `List` of pods (kubectl get pods -o json) → the first pod, with a warning.
    let pod = match v.get("items").and_then(Value::as_array) {
        Some(items) => {
            if items.len() > 1 {
                out.warnings.push(text!(
                    "k8s: {} pods in the list; only the first is read",
                    "k8s：列表中有 {} 个 pod；只读取第一个",
                    items.len()
                ));
            }
            items.first().unwrap_or(&Value::Null)
        }
        None => v,
    };
    let cite = |name: &str| format!("{name} (pod object)");
    let mut oom = 0;
    let mut shm_volume = None;
    for c in pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(name) = c.get("name").and_then(Value::as_str) else {
            continue;
        };
        if let Some(m) = c.pointer("/resources/limits/memory") {
            let q = m
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| m.to_string());
            match k8s_quantity(&q) {
                Some(b) => out.facts.push(
                    Fact::new(fact_names::k8s_container(name, "memory_limit_bytes"), b)
                        .with_text(cite(name)),
                ),
                None => out.warnings.push(text!(
                    "k8s: memory limit `{q}` unreadable",
                    "k8s：无法解析内存上限 `{q}`"
                )),
            }
        }
        for m in c
            .get("volumeMounts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if m.get("mountPath").and_then(Value::as_str) == Some("/dev/shm") {
                shm_volume = m.get("name").and_then(Value::as_str).map(str::to_string);
            }
        }
    }
    let statuses = ["containerStatuses", "initContainerStatuses"];
    for s in statuses
        .iter()
        .filter_map(|k| {
            pod.pointer(&format!("/status/{k}"))
                .and_then(Value::as_array)
        })
        .flatten()
    {
        let Some(name) = s.get("name").and_then(Value::as_str) else {
            continue;
        };
        for (key, reason, code) in [
            ("state", "reason", "exit_code"),
            ("lastState", "last_reason", "last_exit_code"),
        ] {
            if let Some(term) = s.get(key).and_then(|st| st.get("terminated")) {
                if let Some(r) = term.get("reason").and_then(Value::as_str) {
                    out.facts.push(
                        Fact::new(fact_names::k8s_container(name, reason), r).with_text(cite(name)),
                    );
                    if r == "OOMKilled" {
                        oom += 1;
                    }
                }
                if let Some(c) = term.get("exitCode").and_then(Value::as_i64) {
                    out.facts.push(
                        Fact::new(fact_names::k8s_container(name, code), c).with_text(cite(name)),
                    );
                }
            }
        }
        if let Some(n) = s.get("restartCount").and_then(Value::as_i64) {
            out.facts.push(
                Fact::new(fact_names::k8s_container(name, "restarts"), n).with_text(cite(name)),
            );
        }
    }
    if let Some(shm) = shm_volume {
        for vol in pod
            .pointer("/spec/volumes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if vol.get("name").and_then(Value::as_str) != Some(shm.as_str()) {
                continue;
            }
            let ed = vol.get("emptyDir");
            let mem = ed.and_then(|e| e.get("medium")).and_then(Value::as_str) == Some("Memory");
            out.facts
                .push(Fact::new("k8s.shm_medium_memory", mem).with_text(cite(&shm)));
            if let Some(sz) = ed.and_then(|e| e.get("sizeLimit")) {
                let q = sz
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| sz.to_string());
                if let Some(b) = k8s_quantity(&q) {
                    out.facts
                        .push(Fact::new("k8s.shm_size_limit_bytes", b).with_text(cite(&shm)));
                }
            }
        }
    }
    if oom > 0 {
        out.facts
            .push(Fact::new("k8s.oom_killed", oom as i64).with_text("pod status"));
    }
}

impl FactParser for PodParser {
    fn line(&mut self, lineno: u64, line: &str, out: &mut FactOut) {
        if self.structured.is_none() {
            let t = line.trim_start();
            if t.is_empty() {
                return;
            }
            self.structured = Some(
                t.starts_with('{')
                    || t.starts_with("apiVersion:")
                    || t.starts_with("kind:")
                    || t.starts_with("---"),
            );
        }
        if self.structured == Some(true) {
            if self.buf.len() + line.len() > MAX_BYTES {
                self.overflow = true;
                return;
            }
            self.buf.push_str(line);
            self.buf.push('\n');
        } else {
            self.describe.line(lineno, line, out);
        }
    }

    fn finish(&mut self, out: &mut FactOut) {
        if self.overflow {
            out.warnings.push(text!(
                "k8s: pod object too large; not read",
                "k8s：pod 对象过大；未读取"
            ));
            return;
        }
        if self.structured == Some(true) {
            let v = if self.buf.trim_start().starts_with('{') {
                match serde_json::from_str::<Value>(&self.buf) {
                    Ok(v) => v,
                    Err(e) => {
                        out.warnings.push(text!(
                            "k8s: not valid JSON ({e}); nothing read",
                            "k8s：不是合法的 JSON（{e}）；没有读取任何内容"
                        ));
                        return;
                    }
                }
            } else {
                yaml_to_value(&self.buf)
            };
            // Provenance: structured facts cite the object, line 1.
            let before = out.facts.len();
            from_value(&v, out);
            for f in &mut out.facts[before..] {
                f.line = Some(1);
            }
        } else {
            self.describe.finish(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FactValue;
    use crate::sources::SourceKind;
    use crate::sources::parse_text;

    fn get<'a>(out: &'a FactOut, name: &str) -> Option<&'a FactValue> {
        out.facts.iter().find(|f| f.name == name).map(|f| &f.value)
    }

    const DESCRIBE: &str = "Name:         trainer-0
Namespace:    default
Status:       Running
Containers:
  trainer:
    Image:          pytorch/pytorch
    State:          Running
      Started:      Tue, 05 Mar 2024 10:00:00 +0000
    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
    Ready:          True
    Restart Count:  3
    Limits:
      memory:  6Gi
    Requests:
      memory:     4Gi
    Mounts:
      /dev/shm from dshm (rw)
Volumes:
  dshm:
    Type:       EmptyDir (a temporary directory that shares a pod's lifetime)
    Medium:     Memory
    SizeLimit:  1Gi
";

    #[test]
    fn describe_pod_oomkilled_with_shm_volume() {
        let out = parse_text(SourceKind::K8sPod, "describe-pod.txt", DESCRIBE);
        assert_eq!(
            get(&out, "k8s.container.trainer.last_reason"),
            Some(&FactValue::Text("OOMKilled".into()))
        );
        assert_eq!(
            get(&out, "k8s.container.trainer.last_exit_code"),
            Some(&FactValue::Int(137))
        );
        assert_eq!(
            get(&out, "k8s.container.trainer.memory_limit_bytes"),
            Some(&FactValue::Int(6 << 30))
        );
        assert_eq!(
            get(&out, "k8s.container.trainer.restarts"),
            Some(&FactValue::Int(3))
        );
        assert_eq!(
            get(&out, "k8s.shm_size_limit_bytes"),
            Some(&FactValue::Int(1 << 30))
        );
        assert_eq!(
            get(&out, "k8s.shm_medium_memory"),
            Some(&FactValue::Bool(true))
        );
        assert_eq!(get(&out, "k8s.oom_killed"), Some(&FactValue::Int(1)));
    }

    const YAML: &str = "apiVersion: v1
kind: Pod
metadata:
  annotations:
    note: |
      free text: with colons
  name: trainer-0
spec:
  containers:
  - name: trainer
    resources:
      limits:
        memory: 6Gi
    volumeMounts:
    - mountPath: /dev/shm
      name: dshm
  volumes:
  - emptyDir:
      medium: Memory
      sizeLimit: 1Gi
    name: dshm
status:
  containerStatuses:
  - lastState:
      terminated:
        exitCode: 137
        reason: OOMKilled
    name: trainer
    restartCount: 3
";

    #[test]
    fn yaml_and_json_give_the_same_facts() {
        let y = parse_text(SourceKind::K8sPod, "pod.yaml", YAML);
        let json = serde_json::to_string(&yaml_to_value(YAML)).unwrap_or_default();
        let j = parse_text(SourceKind::K8sPod, "pod.json", &json);
        for out in [&y, &j] {
            assert_eq!(
                get(out, "k8s.container.trainer.last_exit_code"),
                Some(&FactValue::Int(137))
            );
            assert_eq!(
                get(out, "k8s.container.trainer.memory_limit_bytes"),
                Some(&FactValue::Int(6 << 30))
            );
            assert_eq!(
                get(out, "k8s.shm_size_limit_bytes"),
                Some(&FactValue::Int(1 << 30))
            );
            assert_eq!(get(out, "k8s.oom_killed"), Some(&FactValue::Int(1)));
        }
    }

    #[test]
    fn absurdly_deep_yaml_stops_instead_of_overflowing() {
        let deep: String = (0..2_000)
            .map(|i| format!("{}a:\n", " ".repeat(i)))
            .collect();
        let _ = yaml_to_value(&deep);
    }

    #[test]
    fn cut_json_warns() {
        let out = parse_text(
            SourceKind::K8sPod,
            "pod.json",
            "{\"kind\": \"Pod\", \"spec\": {",
        );
        assert!(out.facts.is_empty());
        assert_eq!(out.warnings.len(), 1);
    }
}
