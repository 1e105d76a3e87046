//! `--notify URL` and `--notify-cmd CMD` end to end: the real binary against HTTP servers
//! this test starts on 127.0.0.1 (std TcpListener): one that answers 200, one that answers
//! 500, one that accepts and never answers. The notice carries the report's own cause and
//! fingerprint, secrets masked; a notice that fails is a warning, the diagnosis is printed
//! whole and the exit status is the one the run would have had without it.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SEED: &str = "fixtures/seed-bus-error";

/// How the test server treats a request.
#[derive(Clone, Copy)]
enum Answer {
    Status(u16),
    /// Read the request, then hold the connection open without a byte of answer.
    Hang,
}

/// A loopback HTTP server on its own thread; `requests` holds each request's body as it
/// arrived (for `Hang`, each connection's). It serves until the test process ends.
struct Server {
    url: String,
    requests: Arc<Mutex<Vec<String>>>,
}

fn serve(answer: Answer) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = requests.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            let body = read_request(&stream);
            seen.lock().unwrap().push(body);
            match answer {
                Answer::Status(code) => {
                    let reason = if code == 200 {
                        "OK"
                    } else {
                        "Internal Server Error"
                    };
                    let text = if code == 200 { "ok" } else { "upstream broke" };
                    let _ = (&stream).write_all(
                        format!(
                            "HTTP/1.1 {code} {reason}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                            text.len()
                        )
                        .as_bytes(),
                    );
                }
                Answer::Hang => held.push(stream),
            }
        }
    });
    Server { url, requests }
}

/// A request's body (headers read up to the blank line, then Content-Length bytes).
fn read_request(stream: &TcpStream) -> String {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut r = BufReader::new(stream);
    let mut len = 0usize;
    let mut first = String::new();
    let _ = r.read_line(&mut first);
    assert!(
        first.starts_with("POST /hook HTTP/1.1"),
        "request line {first:?}"
    );
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; len];
    let _ = r.read_exact(&mut body);
    String::from_utf8_lossy(&body).into_owned()
}

fn trainwreck(args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trainwreck"));
    c.args(args).env("LANG", "C").env("TRAINWRECK_DB", "");
    // A proxy from the environment would take loopback traffic elsewhere.
    for v in [
        "http_proxy",
        "HTTP_PROXY",
        "https_proxy",
        "HTTPS_PROXY",
        "all_proxy",
        "ALL_PROXY",
    ] {
        c.env_remove(v);
    }
    c.output().expect("run trainwreck")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn report_json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not the JSON report ({e}): {}",
            String::from_utf8_lossy(&o.stdout)
        )
    })
}

#[test]
fn analyze_posts_the_reports_cause_and_fingerprint() {
    let s = serve(Answer::Status(200));
    let o = trainwreck(&["analyze", SEED, "--format", "json", "--notify", &s.url]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("notice not sent"), "{}", stderr(&o));
    let report = report_json(&o);
    let got = s.requests.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "one POST: {got:?}");
    let n: Value = serde_json::from_str(&got[0]).expect("the notice is JSON");
    let top = &report["findings"][0];
    assert_eq!(n["schema"], "trainwreck.notice/1");
    assert_eq!(n["command"], "analyze");
    assert_eq!(n["fingerprint"], report["fingerprint"]);
    assert_eq!(n["cause"], top["title"]);
    assert_eq!(n["fix"], top["fix"]);
    assert_eq!(n["code"], top["code"]);
    assert_eq!(n["confidence"], top["confidence"]);
    assert_eq!(n["verdict"], report["verdict"]);
    // "Seen before" is the report's history, when the machine's default history has one.
    assert_eq!(n["seen_before"].is_null(), report["history"].is_null());
    if let Some(count) = report["history"]["count"].as_u64() {
        assert_eq!(n["seen_before"]["count"], count);
    }
    let text = n["text"].as_str().expect("a Slack text");
    assert!(text.contains(top["code"].as_str().unwrap()), "{text}");
    assert!(
        text.contains(report["fingerprint"].as_str().unwrap()),
        "{text}"
    );
}

#[test]
fn a_server_answering_500_is_tried_twice_and_only_warned_about() {
    let s = serve(Answer::Status(500));
    let plain = trainwreck(&["analyze", SEED, "--format", "json"]);
    let o = trainwreck(&["analyze", SEED, "--format", "json", "--notify", &s.url]);
    assert_eq!(o.status.code(), plain.status.code());
    assert_eq!(
        report_json(&o),
        report_json(&plain),
        "the diagnosis is unchanged"
    );
    assert_eq!(s.requests.lock().unwrap().len(), 2, "one retry");
    let err = stderr(&o);
    assert!(
        err.contains("warning: notice not sent") && err.contains("HTTP 500: upstream broke"),
        "{err}"
    );
}

#[test]
fn a_server_that_never_answers_costs_at_most_30_seconds() {
    let s = serve(Answer::Hang);
    let start = Instant::now();
    let o = trainwreck(&["analyze", SEED, "--exit-code", "action", "--notify", &s.url]);
    let took = start.elapsed();
    let plain = trainwreck(&["analyze", SEED, "--exit-code", "action"]);
    assert!(took < Duration::from_secs(30), "took {took:?}");
    assert_eq!(
        o.status.code(),
        plain.status.code(),
        "exit status unchanged"
    );
    assert_ne!(
        o.status.code(),
        Some(0),
        "the seed run failed: an action class"
    );
    assert_eq!(o.stdout, plain.stdout, "the report is printed whole");
    assert_eq!(s.requests.lock().unwrap().len(), 2, "one retry");
    let err = stderr(&o);
    assert!(err.contains("no answer within"), "{err}");
}

#[test]
fn notify_cmd_gets_the_notice_on_stdin_with_secrets_masked() {
    let dir = tempfile::tempdir().unwrap();
    // A run directory whose name carries a credential, as job names sometimes do: the
    // notice names the input, and must not carry the secret.
    let run = dir.path().join("job-password=hunter2hunter2");
    std::fs::create_dir(&run).unwrap();
    for f in ["train.log", "ds_config.json"] {
        std::fs::copy(Path::new(SEED).join(f), run.join(f)).unwrap();
    }
    let out = dir.path().join("notice.json");
    let cmd = format!("cat > '{}'", out.display());
    let o = trainwreck(&["analyze", run.to_str().unwrap(), "--notify-cmd", &cmd]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let body = std::fs::read_to_string(&out).expect("the command wrote the notice");
    assert!(!body.contains("hunter2"), "secret leaked: {body}");
    let n: Value = serde_json::from_str(&body).unwrap();
    let input = n["inputs"][0].as_str().unwrap();
    assert!(input.contains("password=[REDACTED]"), "{input}");
    assert!(n["text"].as_str().unwrap().contains("password=[REDACTED]"));
}

#[test]
fn a_failing_notify_cmd_is_a_warning() {
    let o = trainwreck(&["analyze", SEED, "--notify-cmd", "cat >/dev/null; exit 7"]);
    assert_eq!(o.status.code(), Some(0));
    let err = stderr(&o);
    assert!(
        err.contains("notice not sent") && err.contains("exit status: 7"),
        "{err}"
    );
    assert!(!o.stdout.is_empty(), "the report is printed");
}

#[test]
fn a_run_that_did_not_fail_sends_no_notice() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    std::fs::write(
        &log,
        "step 1 loss 2.31\nstep 2 loss 2.10\ntraining finished\n",
    )
    .unwrap();
    let out = dir.path().join("notice.json");
    let cmd = format!("cat > '{}'", out.display());
    let o = trainwreck(&["analyze", log.to_str().unwrap(), "--notify-cmd", &cmd]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!out.exists(), "a notice for a run that did not fail");
}

#[test]
fn triage_notifies_the_failed_groups_of_the_corpus() {
    let s = serve(Answer::Status(200));
    let o = trainwreck(&[
        "triage",
        "fixtures/corpus",
        "--format",
        "json",
        "--notify",
        &s.url,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let t = report_json(&o);
    let got = s.requests.lock().unwrap().clone();
    assert_eq!(got.len(), 1);
    let n: Value = serde_json::from_str(&got[0]).unwrap();
    assert_eq!(n["command"], "triage");
    assert_eq!(n["runs_total"], t["runs_total"]);
    let failed: Vec<&Value> = t["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["verdict"] != "no_failure")
        .collect();
    let runs_failed: u64 = failed.iter().map(|g| g["count"].as_u64().unwrap()).sum();
    assert_eq!(n["runs_failed"], runs_failed);
    assert_eq!(n["groups"][0]["fingerprint"], failed[0]["fingerprint"]);
    assert_eq!(n["groups"].as_array().unwrap().len(), failed.len().min(5));
}

#[test]
fn run_notifies_with_the_commands_exit_status() {
    let s = serve(Answer::Status(200));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = trainwreck(&[
        "run",
        "--out",
        out.to_str().unwrap(),
        "--no-record",
        "--interval",
        "50",
        "--notify",
        &s.url,
        "--",
        "sh",
        "-c",
        "echo 'RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB' >&2; exit 3",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let got = s.requests.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "{}", stderr(&o));
    let n: Value = serde_json::from_str(&got[0]).unwrap();
    assert_eq!(n["command"], "run");
    assert_eq!(n["exit_status"], 3);
    assert_eq!(n["inputs"][0], out.to_str().unwrap());
}

#[test]
fn run_refuses_notify_with_no_analyze() {
    let o = trainwreck(&["run", "--no-analyze", "--notify-cmd", "cat", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
}
