//! torchelastic error files (the JSON `@record` writes) → message, last exception line,
//! timestamp, error code, rank/exit code where present. The file is one JSON document: lines are
//! buffered (capped) and parsed at the end; a cut or foreign file is a warning.

use super::{FactOut, FactParser};
use crate::model::{Fact, text};
use serde_json::Value;

/// Error files are small; anything larger is not one, or is damaged.
const MAX_BYTES: usize = crate::limits::DOCUMENT_BYTES;

#[derive(Default)]
pub struct ErrorFileParser {
    buf: String,
    first_line: u64,
    overflow: bool,
}

/// The last `SomeError: text` line of a Python traceback.
fn last_exception_line(tb: &str) -> Option<&str> {
    tb.lines().rev().map(str::trim).find(|l| {
        !l.is_empty()
            && !l.starts_with("File ")
            && !l.starts_with('^')
            && !l.starts_with('~')
            && l.split(':').next().is_some_and(|head| {
                !head.is_empty()
                    && !head.contains(' ')
                    && head.chars().next().is_some_and(char::is_alphabetic)
            })
            && l.contains(':')
    })
}

impl FactParser for ErrorFileParser {
    fn line(&mut self, lineno: u64, line: &str, _out: &mut FactOut) {
        if self.overflow {
            return;
        }
        if self.first_line == 0 {
            self.first_line = lineno;
        }
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
                "torchelastic: error file is over the {MAX_BYTES}-byte document cap; the first {} bytes were buffered and not parsed (limits::DOCUMENT_BYTES)",
                "torchelastic：错误文件超过了 {MAX_BYTES} 字节的文档上限；只缓存了前 {} 字节，未解析（limits::DOCUMENT_BYTES）",
                self.buf.len()
            ));
            return;
        }
        let v: Value = match serde_json::from_str(&self.buf) {
            Ok(v) => v,
            // One JSON line longer than the line cap reaches us cut: say so, not "invalid".
            Err(_)
                if self
                    .buf
                    .lines()
                    .any(|l| l.len() >= crate::limits::LINE_BYTES) =>
            {
                out.warnings.push(text!(
                    "torchelastic: error file holds a line longer than the {}-byte line cap; the first {} bytes were parsed, which is not a whole JSON document, so nothing was read (limits::LINE_BYTES)",
                    "torchelastic：错误文件中有一行超过了 {} 字节的单行上限；解析的前 {} 字节不是完整的 JSON 文档，因此没有读取任何内容（limits::LINE_BYTES）",
                    crate::limits::LINE_BYTES,
                    crate::limits::LINE_BYTES
                ));
                return;
            }
            Err(e) => {
                out.warnings.push(text!(
                    "torchelastic: not valid JSON ({e}); nothing read",
                    "torchelastic：不是合法的 JSON（{e}）；没有读取任何内容"
                ));
                return;
            }
        };
        let line = self.first_line.max(1);
        let cite = self
            .buf
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(200)
            .collect::<String>();
        let fact = |name: &str, v: crate::model::FactValue| Fact::new(name, v).at(line, &cite);
        // `{"message": {"message": …, "extraInfo": {…}, "errorCode": …}}` or `{"message": "text"}`.
        let m = v.get("message");
        let inner = m.filter(|m| m.is_object()).unwrap_or(&v);
        let msg = inner
            .get("message")
            .and_then(Value::as_str)
            .or_else(|| m.and_then(Value::as_str));
        if let Some(msg) = msg {
            out.facts.push(fact("torchelastic.message", msg.into()));
        } else {
            out.warnings.push(text!(
                "torchelastic: no `message` field",
                "torchelastic：没有 `message` 字段"
            ));
        }
        let extra = inner.get("extraInfo");
        if let Some(tb) = extra
            .and_then(|e| e.get("py_callstack"))
            .and_then(Value::as_str)
            && let Some(exc) = last_exception_line(tb)
        {
            out.facts.push(fact("torchelastic.exception", exc.into()));
        }
        if let Some(ts) = extra.and_then(|e| e.get("timestamp")) {
            let n = ts
                .as_i64()
                .or_else(|| ts.as_str().and_then(|s| s.parse().ok()));
            if let Some(n) = n {
                out.facts.push(fact("torchelastic.timestamp", n.into()));
            }
        }
        if let Some(code) = inner.get("errorCode").and_then(Value::as_i64) {
            out.facts.push(fact("torchelastic.error_code", code.into()));
        }
        for (key, name) in [
            ("rank", "torchelastic.rank"),
            ("exitcode", "torchelastic.exit_code"),
        ] {
            if let Some(n) = v
                .get(key)
                .or_else(|| inner.get(key))
                .and_then(Value::as_i64)
            {
                out.facts.push(fact(name, n.into()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FactValue;
    use crate::sources::SourceKind;
    use crate::sources::parse_text;

    #[test]
    fn record_file_gives_message_exception_and_timestamp() {
        let json = r#"{"message": {"message": "RuntimeError: boom", "extraInfo": {"py_callstack": "Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n    g()\n    ^^^\nRuntimeError: boom\n", "timestamp": "1795978639"}, "errorCode": null}}"#;
        let out = parse_text(SourceKind::TorchelasticError, "error.json", json);
        let get = |n: &str| {
            out.facts
                .iter()
                .find(|f| f.name == n)
                .map(|f| f.value.clone())
        };
        assert_eq!(
            get("torchelastic.exception"),
            Some(FactValue::Text("RuntimeError: boom".into()))
        );
        assert_eq!(
            get("torchelastic.timestamp"),
            Some(FactValue::Int(1_795_978_639))
        );
        assert!(out.warnings.is_empty());
    }

    #[test]
    fn cut_json_warns() {
        let out = parse_text(
            SourceKind::TorchelasticError,
            "error.json",
            r#"{"message": {"mess"#,
        );
        assert!(out.facts.is_empty());
        assert_eq!(out.warnings.len(), 1);
    }

    #[test]
    fn exception_line_skips_carets_and_frames() {
        assert_eq!(
            last_exception_line("Traceback\n  File \"a\", line 1\n    x\nKeyError: 'a'\n"),
            Some("KeyError: 'a'")
        );
        assert_eq!(
            last_exception_line(
                "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
            ),
            Some("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:")
        );
    }
}
