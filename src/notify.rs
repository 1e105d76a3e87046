//! A notice when a run dies (`--notify URL`, `--notify-cmd CMD` on `analyze`, `triage` and
//! `run`): a short JSON with the cause, confidence, fix, fingerprint and "seen before", plus a
//! Slack-compatible `text`, POSTed to a webhook or piped to a command. Secrets are masked
//! before the payload exists as JSON. Delivery is bounded (a timeout per attempt, one retry,
//! [`BUDGET`] in all) and its failure is only ever an `Err` for the caller to warn about: this
//! module never prints, never exits and never touches the report it was given.

use crate::model::{Lang, Verdict};
use crate::report::Report;
use crate::report::triage::Triage;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

pub const SCHEMA: &str = "trainwreck.notice/1";

/// The most a notice may take, both attempts and the pause between them included.
pub const BUDGET: Duration = Duration::from_secs(30);
/// One attempt's limit: connect, send and the answer, against a server that accepts and
/// never answers too. Two attempts and the pause stay well inside [`BUDGET`].
const ATTEMPT: Duration = Duration::from_secs(10);
const PAUSE: Duration = Duration::from_secs(1);
/// Free-text fields are cut to this many characters: a notice is a pointer, not the report.
const FIELD_CHARS: usize = 600;

/// Where notices go.
#[derive(Debug, Clone, Default)]
pub struct Targets {
    pub urls: Vec<String>,
    pub commands: Vec<String>,
}

impl Targets {
    pub fn is_empty(&self) -> bool {
        self.urls.is_empty() && self.commands.is_empty()
    }

    /// Deliver `payload` to every target; one message per target that failed (`Ok` for none).
    pub fn send(&self, payload: &Value) -> Vec<String> {
        let body = payload.to_string();
        let mut failed = Vec::new();
        for url in &self.urls {
            if let Err(e) = post(url, &body) {
                failed.push(format!("{}: {e}", redacted(url)));
            }
        }
        for cmd in &self.commands {
            if let Err(e) = pipe(cmd, &body) {
                failed.push(format!("`{}`: {e}", redacted(cmd)));
            }
        }
        failed
    }
}

/// A webhook URL or command line with its secrets masked, for a warning (Slack's hook URLs
/// are themselves the secret: the path after `/services/` is kept out of messages).
fn redacted(s: &str) -> String {
    let mut red = crate::redact::Redactor::new(crate::redact::Options::default());
    let s = red.text(s);
    match s.find("/services/") {
        Some(i) => format!("{}/services/{}", &s[..i], crate::redact::MASK),
        None => s,
    }
}

/// The notice for one run's report (`analyze`, `run`), or `None` when nothing failed.
/// `exit_status` is the training command's, for `run`.
pub fn of_report(
    r: &Report,
    command: &str,
    paths: &[String],
    exit_status: Option<i32>,
    lang: Lang,
) -> Option<Value> {
    if r.verdict == Verdict::NoFailure && exit_status.is_none_or(|s| s == 0) {
        return None;
    }
    let top = r.top();
    let cause = top.map(|f| f.title.get(lang).to_string());
    let fix = top.map(|f| f.fix.get(lang).to_string());
    let seen = r.history.as_ref().map(|s| {
        json!({
            "count": s.count,
            "first_seen": s.first_seen,
            "last_seen": s.last_seen,
            "hosts": s.hosts.len(),
            "text": crate::report::history::seen_line_in(s, lang),
        })
    });
    let l = Labels::of(lang);
    let mut text = format!("*trainwreck*: {}", l.failed);
    if let Some(s) = exit_status {
        text.push_str(&format!(" ({} {s})", l.exit));
    }
    text.push_str(" — ");
    match (&cause, top) {
        (Some(c), Some(f)) => text.push_str(&format!(
            "*{}* ({} {:.0}%, {})",
            slack(c),
            l.confidence,
            f.confidence * 100.0,
            f.code
        )),
        _ => text.push_str(l.unknown),
    }
    if let Some(f) = &fix {
        text.push_str(&format!("\n{}: {}", l.fix, slack(f)));
    }
    if let Some(s) = &seen {
        let line = s["text"].as_str().unwrap_or_default();
        text.push_str(&format!("\n{}: {}", l.seen, slack(line)));
    }
    if let Some(fp) = &r.fingerprint {
        text.push_str(&format!("\n{}: `{fp}`", l.fingerprint));
    }
    if let [one] = paths {
        text.push_str(&format!("\n{}: `{}`", l.run, slack(one)));
    }
    let mut v = json!({
        "schema": SCHEMA,
        "text": text,
        "command": command,
        "verdict": r.verdict.as_str(),
        "cause": cause,
        "code": top.map(|f| f.code.clone()),
        "category": top.map(|f| f.category.as_str()),
        "action": crate::triage::action_of(r).as_str(),
        "confidence": top.map(|f| f.confidence),
        "fix": fix,
        "fingerprint": r.fingerprint,
        "seen_before": seen,
        "inputs": paths,
    });
    if let Some(s) = exit_status {
        v["exit_status"] = json!(s);
    }
    Some(finish(v))
}

/// The notice for a triage of many runs: the failed groups, largest first (at most five),
/// or `None` when no run failed.
pub fn of_triage(t: &Triage, lang: Lang) -> Option<Value> {
    let failed: Vec<_> = t
        .groups
        .iter()
        .filter(|g| g.verdict != Verdict::NoFailure)
        .collect();
    if failed.is_empty() {
        return None;
    }
    let l = Labels::of(lang);
    let runs_failed: usize = failed.iter().map(|g| g.count).sum();
    let mut text = format!(
        "*trainwreck triage*: {runs_failed}/{} {}",
        t.runs_total, l.runs_failed
    );
    let mut groups = Vec::new();
    for g in failed.iter().take(5) {
        let cause = g.title.as_ref().map(|t| t.get(lang).to_string());
        text.push_str(&format!(
            "\n• {}× *{}* ({})",
            g.count,
            slack(cause.as_deref().unwrap_or(l.unknown)),
            g.action.as_str()
        ));
        if let Some(fp) = &g.fingerprint {
            text.push_str(&format!(" `{fp}`"));
        }
        groups.push(json!({
            "cause": cause,
            "category": g.category.map(|c| c.as_str()),
            "action": g.action.as_str(),
            "runs": g.count,
            "fingerprint": g.fingerprint,
            "verdict": g.verdict.as_str(),
            "example": g.example,
        }));
    }
    if failed.len() > 5 {
        text.push_str(&format!("\n… +{}", failed.len() - 5));
    }
    let top = failed[0];
    Some(finish(json!({
        "schema": SCHEMA,
        "text": text,
        "command": "triage",
        "verdict": top.verdict.as_str(),
        "cause": top.title.as_ref().map(|t| t.get(lang)),
        "action": top.action.as_str(),
        "fingerprint": top.fingerprint,
        "runs_total": t.runs_total,
        "runs_failed": runs_failed,
        "groups": groups,
    })))
}

/// Cut long strings and mask secrets: the only way a payload leaves this module.
fn finish(mut v: Value) -> Value {
    fn cut(v: &mut Value) {
        match v {
            Value::String(s) if s.chars().count() > FIELD_CHARS * 2 => {
                *s = crate::report::cut(s, FIELD_CHARS * 2)
            }
            Value::Array(a) => a.iter_mut().for_each(cut),
            Value::Object(o) => o.values_mut().for_each(cut),
            _ => {}
        }
    }
    for key in ["cause", "fix"] {
        if let Some(Value::String(s)) = v.get_mut(key) {
            *s = crate::report::cut(s, FIELD_CHARS);
        }
    }
    cut(&mut v);
    let mut red = crate::redact::Redactor::new(crate::redact::Options::default());
    red.json(&mut v);
    v
}

/// Slack's three control characters in message text.
fn slack(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The few words of a notice's `text`, in the reader's language.
struct Labels {
    failed: &'static str,
    exit: &'static str,
    unknown: &'static str,
    confidence: &'static str,
    fix: &'static str,
    seen: &'static str,
    fingerprint: &'static str,
    run: &'static str,
    runs_failed: &'static str,
}

impl Labels {
    fn of(lang: Lang) -> Labels {
        match lang {
            Lang::En => Labels {
                failed: "run failed",
                exit: "exit status",
                unknown: "no rule explains it confidently",
                confidence: "confidence",
                fix: "Fix",
                seen: "Seen before",
                fingerprint: "Fingerprint",
                run: "Run",
                runs_failed: "runs failed",
            },
            Lang::Zh => Labels {
                failed: "训练失败",
                exit: "退出码",
                unknown: "没有规则能有把握地解释",
                confidence: "置信度",
                fix: "修复",
                seen: "以前见过",
                fingerprint: "指纹",
                run: "运行",
                runs_failed: "次运行失败",
            },
        }
    }
}

/// POST `body` to an `http://` or `https://` URL: one retry after a connection error, a
/// timeout or a 5xx answer; a 4xx (a wrong or revoked hook) is not retried.
fn post(url: &str, body: &str) -> Result<(), String> {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err("not an http:// or https:// URL".into());
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(ATTEMPT))
        .http_status_as_error(false)
        .max_redirects(0)
        .user_agent(concat!("trainwreck/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let start = Instant::now();
    let mut last = String::new();
    for attempt in 0..2 {
        if attempt > 0 {
            if start.elapsed() + PAUSE + ATTEMPT > BUDGET {
                break;
            }
            std::thread::sleep(PAUSE);
        }
        match agent
            .post(url)
            .header("Content-Type", "application/json")
            .send(body)
        {
            Ok(mut resp) => {
                let status = resp.status().as_u16();
                if (200..300).contains(&status) {
                    return Ok(());
                }
                let mut answer = String::new();
                let _ = resp
                    .body_mut()
                    .as_reader()
                    .take(300)
                    .read_to_string(&mut answer);
                let answer = answer.split_whitespace().collect::<Vec<_>>().join(" ");
                last = if answer.is_empty() {
                    format!("HTTP {status}")
                } else {
                    format!("HTTP {status}: {}", crate::report::cut(&answer, 200))
                };
                if status < 500 {
                    return Err(last);
                }
            }
            Err(ureq::Error::Timeout(_)) => {
                last = format!("no answer within {} s", ATTEMPT.as_secs());
            }
            Err(e) => last = e.to_string(),
        }
    }
    Err(format!("{last} (tried twice)"))
}

/// Pipe `body` to `sh -c CMD`. Its stdout goes to our stderr, so a report on stdout stays
/// whole; a command still running after [`BUDGET`] is killed.
fn pipe(cmd: &str, body: &str) -> Result<(), String> {
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::io::stderr())
        .spawn()
        .map_err(|e| format!("cannot start sh: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that exits without reading is its own business; its status says how it went.
        let _ = stdin.write_all(body.as_bytes());
        let _ = stdin.write_all(b"\n");
    }
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(s)) if s.success() => return Ok(()),
            Ok(Some(s)) => return Err(format!("exited with {s}")),
            Ok(None) if start.elapsed() >= BUDGET => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "still running after {} s: killed",
                    BUDGET.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slack_hook_paths_never_reach_a_warning() {
        let w = redacted("https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXX");
        assert_eq!(w, "https://hooks.slack.com/services/[REDACTED]");
        assert!(redacted("https://u:pw@example.com/x").contains("[REDACTED]@"));
    }

    #[test]
    fn slack_control_characters_are_escaped() {
        assert_eq!(slack("a<b> & c"), "a&lt;b&gt; &amp; c");
    }

    #[test]
    fn a_run_that_did_not_fail_sends_nothing() {
        let r = Report::of_facts(Vec::new(), Vec::new());
        assert_eq!(r.verdict, Verdict::NoFailure);
        assert!(of_report(&r, "analyze", &[], None, Lang::En).is_none());
        // …unless the command under `run` itself failed.
        let v = of_report(&r, "run", &[], Some(1), Lang::En).expect("a notice");
        assert_eq!(v["exit_status"], 1);
    }

    #[test]
    fn secrets_in_a_payload_are_masked_and_long_fields_cut() {
        let v = finish(json!({
            "fix": format!("export HF_TOKEN=hf_abcdefghijklmnopqrstuvwx; {}", "x".repeat(2000)),
            "fingerprint": "abc",
        }));
        let fix = v["fix"].as_str().unwrap();
        assert!(!fix.contains("hf_abcdefghij"), "{fix}");
        assert!(fix.chars().count() <= FIELD_CHARS + 1);
        assert_eq!(v["fingerprint"], "abc");
    }

    #[test]
    fn a_url_of_another_scheme_is_refused_without_a_connection() {
        let e = post("ftp://127.0.0.1/x", "{}").unwrap_err();
        assert!(e.contains("http://"), "{e}");
    }
}
