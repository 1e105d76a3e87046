//! Redaction for reports meant to be pasted (Markdown always; JSON and others on `--redact`):
//! secrets (tokens, API keys, passwords, credentials in URLs) are always masked; host names,
//! IP addresses and user paths on request, each consistently (`host-1` stays `host-1`) so
//! grouping still works. It rewrites text only and must never change a fingerprint.

use regex::Regex;
use std::collections::BTreeMap;
use std::sync::LazyLock;

pub const MASK: &str = "[REDACTED]";

/// What to mask besides secrets (always masked).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    pub hosts: bool,
    pub paths: bool,
}

impl Options {
    /// Parse `--redact` values: `secrets` (the default, always on), `hosts`, `paths`, `all`.
    pub fn parse(list: &[String]) -> Result<Options, String> {
        let mut o = Options::default();
        for item in list.iter().flat_map(|s| s.split(',')) {
            match item.trim() {
                "" | "secrets" => {}
                "hosts" => o.hosts = true,
                "paths" => o.paths = true,
                "all" => {
                    o.hosts = true;
                    o.paths = true;
                }
                other => {
                    return Err(format!(
                        "unknown --redact value {other:?}: use secrets, hosts, paths or all"
                    ));
                }
            }
        }
        Ok(o)
    }
}

/// (regex, replacement): `$1`-style groups keep the key name and mask only the value.
static SECRETS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    let table: &[(&str, &str)] = &[
        (
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
            "[REDACTED PRIVATE KEY]",
        ),
        // Credentials inside URLs: scheme://user:pass@host.
        (
            r"([a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@",
            "${1}[REDACTED]@",
        ),
        (
            r"(?i)(authorization\s*[:=]\s*(?:bearer|basic|token)?\s*)[^\s'\x22]+",
            "${1}[REDACTED]",
        ),
        (r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}", "${1}[REDACTED]"),
        (r"\bhf_[A-Za-z0-9]{16,}", "[REDACTED]"),
        (r"\bgh[pousr]_[A-Za-z0-9]{20,}", "[REDACTED]"),
        (r"\bgithub_pat_[A-Za-z0-9_]{20,}", "[REDACTED]"),
        (r"\bglpat-[A-Za-z0-9_-]{16,}", "[REDACTED]"),
        (r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", "[REDACTED]"),
        (r"\bsk-[A-Za-z0-9_-]{16,}", "[REDACTED]"),
        (r"\bxox[abprs]-[A-Za-z0-9-]{10,}", "[REDACTED]"),
        (
            r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
            "[REDACTED]",
        ),
        // key=value / key: value / "key": "value" where the key names a secret.
        (
            r#"(?i)([A-Za-z0-9_.-]*(?:password|passwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?)['"]?\s*[=:]\s*['"]?)([^\s'",;&}\]]+)"#,
            "${1}[REDACTED]",
        ),
        (
            r"(?i)(--(?:password|token|api[_-]?key|secret)[= ])\S+",
            "${1}[REDACTED]",
        ),
    ];
    table
        .iter()
        .filter_map(|(re, with)| Regex::new(re).ok().map(|re| (re, *with)))
        .collect()
});

static IPV4: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"\b(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}\b").ok()
});

static USER_PATH: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"/(home|Users|users|scratch|work)/([A-Za-z0-9._-]+)").ok());

/// Masks text consistently: the same host always gets the same mask within one redactor.
#[derive(Debug, Default)]
pub struct Redactor {
    pub options: Options,
    hosts: BTreeMap<String, String>,
    ips: BTreeMap<String, String>,
    users: BTreeMap<String, String>,
}

impl Redactor {
    pub fn new(options: Options) -> Redactor {
        Redactor {
            options,
            ..Redactor::default()
        }
    }

    /// Register host names (from attribution) to be masked wherever they appear.
    pub fn add_hosts<'a>(&mut self, hosts: impl IntoIterator<Item = &'a str>) {
        if !self.options.hosts {
            return;
        }
        for h in hosts {
            if h.len() >= 2 && !self.hosts.contains_key(h) {
                let mask = format!("host-{}", self.hosts.len() + 1);
                self.hosts.insert(h.to_string(), mask);
            }
        }
    }

    /// The mask a host gets (registering it), or the host itself when hosts are not masked.
    pub fn host(&mut self, h: &str) -> String {
        self.add_hosts([h]);
        self.hosts.get(h).cloned().unwrap_or_else(|| h.to_string())
    }

    pub fn text(&mut self, s: &str) -> String {
        let mut out = s.to_string();
        for (re, with) in SECRETS.iter() {
            if re.is_match(&out) {
                out = re.replace_all(&out, *with).into_owned();
            }
        }
        if self.options.hosts {
            // Longest first, so `node12` is not masked as `host-1` + `2`.
            let mut known: Vec<(&String, &String)> = self.hosts.iter().collect();
            known.sort_by_key(|(h, _)| std::cmp::Reverse(h.len()));
            for (h, mask) in known {
                out = out.replace(h.as_str(), mask);
            }
            if let Some(re) = IPV4.as_ref() {
                let ips = &mut self.ips;
                out = re
                    .replace_all(&out, |c: &regex::Captures| {
                        let ip = c[0].to_string();
                        let n = ips.len() + 1;
                        ips.entry(ip).or_insert_with(|| format!("ip-{n}")).clone()
                    })
                    .into_owned();
            }
        }
        if self.options.paths
            && let Some(re) = USER_PATH.as_ref()
        {
            let users = &mut self.users;
            out = re
                .replace_all(&out, |c: &regex::Captures| {
                    let n = users.len() + 1;
                    let mask = users
                        .entry(c[2].to_string())
                        .or_insert_with(|| format!("user-{n}"))
                        .clone();
                    format!("/{}/{mask}", &c[1])
                })
                .into_owned();
        }
        out
    }

    /// Redact every string inside a JSON value, keys excepted (they are the schema).
    pub fn json(&mut self, v: &mut serde_json::Value) {
        match v {
            serde_json::Value::String(s) => {
                let r = self.text(s);
                *s = r;
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(|x| self.json(x)),
            serde_json::Value::Object(o) => {
                for (k, x) in o.iter_mut() {
                    // Fingerprints and schema ids are hashes and names, never secrets.
                    if k != "fingerprint" && k != "schema" {
                        self.json(x);
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_secret_pattern_compiles() {
        assert_eq!(SECRETS.len(), 14);
        assert!(IPV4.is_some() && USER_PATH.is_some());
    }

    #[test]
    fn secrets_are_masked_and_keys_kept() {
        let mut r = Redactor::new(Options::default());
        let s = r.text(
            "HF_TOKEN=hf_abcdefghijklmnopqrstuvwx https://bob:s3cr3t@example.com/x \
             Authorization: Bearer abc.def.ghi123 password=hunter2 AKIAABCDEFGHIJKLMNOP",
        );
        for leak in ["hf_abc", "s3cr3t", "abc.def.ghi123", "hunter2", "AKIAABCD"] {
            assert!(!s.contains(leak), "{leak} leaked in {s}");
        }
        assert!(s.contains("HF_TOKEN=") && s.contains("password="));
    }

    #[test]
    fn hosts_and_paths_are_masked_consistently() {
        let mut r = Redactor::new(Options {
            hosts: true,
            paths: true,
        });
        r.add_hosts(["node7", "node12"]);
        let a = r.text("node12 and node7 at 10.1.2.3 /home/alice/x");
        let b = r.text("node7 again 10.1.2.3 /home/alice/y");
        assert_eq!(a, "host-2 and host-1 at ip-1 /home/user-1/x");
        assert_eq!(b, "host-1 again ip-1 /home/user-1/y");
    }
}
