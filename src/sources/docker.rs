//! `docker inspect` JSON → the container settings that decide shm and memory failures:
//! HostConfig.ShmSize, Memory, MemorySwap, Ulimits, IpcMode, and State.OOMKilled/ExitCode.
//! Memory 0 means "no limit" and yields no limit fact; one container is read, others are warned about.

use super::{FactOut, FactParser};
use crate::fact_names;
use crate::model::{Fact, FactValue, text};
use serde_json::Value;

const MAX_BYTES: usize = crate::limits::DOCUMENT_BYTES;

#[derive(Default)]
pub struct InspectParser {
    buf: String,
    overflow: bool,
}

impl FactParser for InspectParser {
    fn line(&mut self, _lineno: u64, line: &str, _out: &mut FactOut) {
        if self.buf.len() + line.len() > MAX_BYTES {
            self.overflow = true;
            return;
        }
        self.buf.push_str(line);
        self.buf.push('\n');
    }

    fn finish(&mut self, out: &mut FactOut) {
        if self.overflow {
            out.warnings.push(text!(
                "docker inspect: too large; not read",
                "docker inspect：内容过大；未读取"
            ));
            return;
        }
        let v: Value = match serde_json::from_str(&self.buf) {
            Ok(v) => v,
            Err(e) => {
                out.warnings.push(text!(
                    "docker inspect: not valid JSON ({e}); nothing read",
                    "docker inspect：不是合法的 JSON（{e}）；没有读取任何内容"
                ));
                return;
            }
        };
        let c = match &v {
            Value::Array(items) => {
                if items.len() > 1 {
                    out.warnings.push(text!(
                        "docker inspect: {} objects; only the first is read",
                        "docker inspect：共有 {} 个对象；只读取第一个",
                        items.len()
                    ));
                }
                items.first().unwrap_or(&Value::Null)
            }
            other => other,
        };
        let name = c
            .get("Name")
            .and_then(Value::as_str)
            .unwrap_or("container")
            .to_string();
        let mut push = |n: String, v: FactValue| {
            out.facts
                .push(Fact::new(n, v).at(1, &format!("docker inspect {name}")));
        };
        let hc = c.get("HostConfig");
        if hc.is_none() {
            out.warnings.push(text!(
                "docker inspect: no HostConfig (not a container?)",
                "docker inspect：没有 HostConfig（不是容器？）"
            ));
        }
        let int = |k: &str| hc.and_then(|h| h.get(k)).and_then(Value::as_i64);
        if let Some(s) = int("ShmSize") {
            push("docker.shm_size_bytes".into(), s.into());
        }
        if let Some(m) = int("Memory").filter(|m| *m > 0) {
            push("docker.memory_limit_bytes".into(), m.into());
        }
        if let Some(m) = int("MemorySwap").filter(|m| *m > 0) {
            push("docker.memory_swap_limit_bytes".into(), m.into());
        }
        if let Some(ipc) = hc.and_then(|h| h.get("IpcMode")).and_then(Value::as_str) {
            push("docker.ipc_mode".into(), ipc.into());
        }
        for u in hc
            .and_then(|h| h.get("Ulimits"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(n) = u.get("Name").and_then(Value::as_str) else {
                continue;
            };
            if n.contains('.') || n.is_empty() {
                continue;
            }
            for (k, suffix) in [("Soft", "soft"), ("Hard", "hard")] {
                if let Some(v) = u.get(k).and_then(Value::as_i64) {
                    push(fact_names::docker_ulimit(n, suffix), v.into());
                }
            }
        }
        let st = c.get("State");
        if let Some(b) = st.and_then(|s| s.get("OOMKilled")).and_then(Value::as_bool) {
            push("docker.oom_killed".into(), b.into());
        }
        if let Some(e) = st.and_then(|s| s.get("ExitCode")).and_then(Value::as_i64) {
            push("docker.exit_code".into(), e.into());
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::model::FactValue;
    use crate::sources::SourceKind;
    use crate::sources::parse_text;

    #[test]
    fn inspect_reads_shm_memory_ulimits_and_state() {
        let json = r#"[{"Name": "/trainer", "State": {"OOMKilled": true, "ExitCode": 137},
          "HostConfig": {"ShmSize": 67108864, "Memory": 0, "IpcMode": "private",
          "Ulimits": [{"Name": "memlock", "Soft": -1, "Hard": -1}]}}]"#;
        let out = parse_text(SourceKind::DockerInspect, "docker-inspect.json", json);
        let get = |n: &str| {
            out.facts
                .iter()
                .find(|f| f.name == n)
                .map(|f| f.value.clone())
        };
        assert_eq!(
            get("docker.shm_size_bytes"),
            Some(FactValue::Int(67_108_864))
        );
        assert_eq!(get("docker.memory_limit_bytes"), None, "0 is no limit");
        assert_eq!(get("docker.ulimit.memlock.soft"), Some(FactValue::Int(-1)));
        assert_eq!(get("docker.oom_killed"), Some(FactValue::Bool(true)));
        assert_eq!(
            get("docker.ipc_mode"),
            Some(FactValue::Text("private".into()))
        );
    }

    #[test]
    fn cut_json_warns() {
        let out = parse_text(
            SourceKind::DockerInspect,
            "docker-inspect.json",
            "[{\"HostConfig\": {",
        );
        assert!(out.facts.is_empty());
        assert_eq!(out.warnings.len(), 1);
    }
}
