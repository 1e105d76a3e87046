//! Fix and `why` templates: text with `{variable}` or `{variable|filter}` holes. Variables are
//! fact names from the catalog, derived values (`derive.*`) or named regex captures of the
//! rule's signatures. Parsed and checked at load time; rendered from a lookup at report time.

use crate::facts::Unit;

#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    Text(String),
    Var {
        name: String,
        filter: Option<Filter>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    /// Human-readable binary size: `64 MiB`.
    Bytes,
    /// Docker-style size: `8g`, `512m`.
    Docker,
    /// Kubernetes quantity: `8Gi`.
    K8s,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Template {
    pub pieces: Vec<Piece>,
}

impl crate::model::Text<Template> {
    /// The Chinese template, where the rule file gives one (an empty one is none).
    pub fn given_zh(&self) -> Option<&Template> {
        (!self.zh.pieces.is_empty()).then_some(&self.zh)
    }
}

impl Template {
    pub fn parse(src: &str) -> Result<Template, String> {
        let mut pieces = Vec::new();
        let mut rest = src;
        while let Some(open) = rest.find('{') {
            // `{{` is a literal brace.
            if rest[open + 1..].starts_with('{') {
                pieces.push(Piece::Text(rest[..open + 1].to_string()));
                rest = &rest[open + 2..];
                continue;
            }
            let close = rest[open..]
                .find('}')
                .ok_or_else(|| format!("unclosed `{{` in {src:?}"))?
                + open;
            if open > 0 {
                pieces.push(Piece::Text(rest[..open].to_string()));
            }
            let inner = &rest[open + 1..close];
            let (name, filter) = match inner.split_once('|') {
                Some((n, f)) => (n.trim(), Some(parse_filter(f.trim())?)),
                None => (inner.trim(), None),
            };
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
            {
                return Err(format!("bad variable name {inner:?} in {src:?}"));
            }
            pieces.push(Piece::Var {
                name: name.to_string(),
                filter,
            });
            rest = &rest[close + 1..];
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest.to_string()));
        }
        Ok(Template { pieces })
    }

    pub fn vars(&self) -> impl Iterator<Item = &str> {
        self.pieces.iter().filter_map(|p| match p {
            Piece::Var { name, .. } => Some(name.as_str()),
            _ => None,
        })
    }

    /// Render with `lookup`; `None` if any variable is unknown.
    pub fn render(&self, lookup: &dyn Fn(&str) -> Option<(String, Unit)>) -> Option<String> {
        let mut out = String::new();
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Var { name, filter } => {
                    let (v, unit) = lookup(name)?;
                    out.push_str(&apply(&v, unit, *filter));
                }
            }
        }
        Some(out)
    }
}

fn parse_filter(f: &str) -> Result<Filter, String> {
    match f {
        "bytes" => Ok(Filter::Bytes),
        "docker" => Ok(Filter::Docker),
        "k8s" => Ok(Filter::K8s),
        _ => Err(format!("unknown filter `{f}` (known: bytes, docker, k8s)")),
    }
}

fn apply(v: &str, unit: Unit, filter: Option<Filter>) -> String {
    let filter = filter.or((unit == Unit::Bytes).then_some(Filter::Bytes));
    let Some(f) = filter else {
        return v.to_string();
    };
    let Ok(n) = v.parse::<f64>() else {
        return v.to_string();
    };
    match f {
        Filter::Bytes => human_bytes(n),
        Filter::Docker => size_suffix(n, ["", "k", "m", "g", "t"]),
        Filter::K8s => size_suffix(n, ["", "Ki", "Mi", "Gi", "Ti"]),
    }
}

/// `67108864` → `64 MiB`; `1288490188` → `1.2 GiB`.
pub fn human_bytes(n: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n;
    let mut i = 0;
    while v.abs() >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{} B", n as i64)
    } else if (v - v.round()).abs() < 0.05 {
        format!("{} {}", v.round() as i64, units[i])
    } else {
        format!("{v:.1} {}", units[i])
    }
}

/// A whole number of the largest unit that divides the size (sizes given to `--shm-size`
/// and `sizeLimit` are rounded up by callers so this stays exact).
fn size_suffix(n: f64, units: [&str; 5]) -> String {
    let mut v = n.max(0.0).round() as u64;
    let mut i = 0;
    while v >= 1024 && v.is_multiple_of(1024) && i + 1 < units.len() {
        v /= 1024;
        i += 1;
    }
    format!("{v}{}", units[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_renders() {
        let t = Template::parse("--shm-size={x|docker} ({y}) {{literal}").unwrap();
        assert_eq!(t.vars().collect::<Vec<_>>(), vec!["x", "y"]);
        let out = t
            .render(&|n| match n {
                "x" => Some(("8589934592".into(), Unit::Bytes)),
                "y" => Some(("67108864".into(), Unit::Bytes)),
                _ => None,
            })
            .unwrap();
        assert_eq!(out, "--shm-size=8g (64 MiB) {literal}");
    }

    #[test]
    fn unknown_variable_renders_none() {
        let t = Template::parse("a {missing}").unwrap();
        assert!(t.render(&|_| None).is_none());
    }

    #[test]
    fn bad_templates_are_errors() {
        assert!(Template::parse("a {unclosed").is_err());
        assert!(Template::parse("a {x|nope}").is_err());
        assert!(Template::parse("a {}").is_err());
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human_bytes(67108864.0), "64 MiB");
        assert_eq!(human_bytes(1288490188.0), "1.2 GiB");
        assert_eq!(human_bytes(12.0), "12 B");
    }
}
