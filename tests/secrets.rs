//! Planted secrets never reach a pasted or redacted report. Secrets of every shape the redactor
//! knows are generated fresh for each run (random, so no rule can be tuned to them; none is
//! real), planted in several kinds of input (a console log whose exception is the evidence, an
//! unknown failure whose last error lines are shown, a torchelastic error file whose message is
//! a fact), and the real binary is run in every format. Each test first checks that the secret
//! does reach the unredacted output (else it would prove nothing), then that no planted value
//! survives redaction, and that fingerprints are the same with and without it.

use std::path::Path;
use std::process::Command;

/// A small xorshift generator seeded from the clock and pid: different secrets every run.
struct Rng(u64);

impl Rng {
    fn new() -> Rng {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
        Rng(t ^ (u64::from(std::process::id()) << 32) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick(&mut self, alphabet: &str, n: usize) -> String {
        let a = alphabet.as_bytes();
        (0..n)
            .map(|_| a[(self.next() % a.len() as u64) as usize] as char)
            .collect()
    }
}

const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const HEX: &str = "0123456789abcdef";

/// One planted secret: the line it is planted in, and the value that must not survive.
struct Plant {
    line: String,
    secret: String,
}

fn plants(rng: &mut Rng) -> Vec<Plant> {
    let mut v = Vec::new();
    let mut add = |make: &dyn Fn(&str) -> String, secret: String| {
        v.push(Plant {
            line: make(&secret),
            secret,
        });
    };
    // Values of secret-named arguments get a digit so they look like what they replace.
    let word = |r: &mut Rng| format!("{}{}", r.pick(ALNUM, 14), r.next() % 9000 + 1000);
    add(
        &|s| format!("args: ['train.py', '--password', '{s}', '--lr', '3e-4']"),
        word(rng),
    );
    add(
        &|s| format!("args: ['train.py', '--hub_token', '{s}']"),
        word(rng),
    );
    add(
        &|s| format!("cmd: [\"--wandb_api_key\", \"{s}\"]"),
        word(rng),
    );
    add(
        &|s| format!("python train.py --hub_token {s} --lr 3"),
        word(rng),
    );
    add(
        &|s| format!("python train.py --api-key={s} --lr 3"),
        word(rng),
    );
    add(&|s| format!("resolved hub_token {s} from cache"), word(rng));
    add(&|s| format!("config db_password: {s}"), word(rng));
    add(&|s| format!("settings {{\"secret\": \"{s}\"}}"), word(rng));
    add(&|s| format!("WANDB_API_KEY={s}"), rng.pick(HEX, 40));
    add(&|s| format!("wandb login {s}"), rng.pick(HEX, 40));
    add(
        &|s| format!("HF_TOKEN is {s}"),
        format!("hf_{}", rng.pick(ALNUM, 34)),
    );
    add(
        &|s| format!("push with {s}"),
        format!("ghp_{}", rng.pick(ALNUM, 36)),
    );
    add(
        &|s| format!("push with {s}"),
        format!("github_pat_{}", rng.pick(ALNUM, 40)),
    );
    add(
        &|s| format!("clone with {s}"),
        format!("glpat-{}", rng.pick(ALNUM, 20)),
    );
    add(
        &|s| format!("aws key {s}"),
        format!("AKIA{}", rng.pick(UPPER, 16)),
    );
    add(
        &|s| format!("openai {s}"),
        format!("sk-{}", rng.pick(ALNUM, 40)),
    );
    add(
        &|s| format!("slack {s}"),
        format!(
            "xoxb-{}-{}",
            rng.next() % 1_000_000_000,
            rng.pick(ALNUM, 24)
        ),
    );
    add(
        &|s| {
            format!(
                "upload https://acct.blob.core.windows.net/c/ckpt.pt?sv=2022-11-02&sig={s}&se=2030"
            )
        },
        format!("{}%3D", rng.pick(ALNUM, 40)),
    );
    add(
        &|s| format!("sentry https://{s}@o4.ingest.sentry.io/42"),
        rng.pick(HEX, 32),
    );
    add(
        &|s| format!("auth header {s}"),
        format!(
            "eyJ{}.eyJ{}.{}",
            rng.pick(ALNUM, 20),
            rng.pick(ALNUM, 30),
            rng.pick(ALNUM, 40)
        ),
    );
    add(
        &|s| format!("fetch https://trainer:{s}@minio.internal:9000/bucket"),
        word(rng),
    );
    add(
        &|s| format!("key -----BEGIN RSA PRIVATE KEY-----{s}-----END RSA PRIVATE KEY-----"),
        rng.pick(ALNUM, 60),
    );
    add(&|s| format!("MY_SERVICE_KEY={s}"), rng.pick(ALNUM, 32));
    v
}

fn trainwreck(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "trainwreck {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Three runs, each planting every secret in one kind of input.
fn plant_runs(root: &Path, plants: &[Plant]) -> Vec<String> {
    // 1. A console log: each line is the message of a Python exception (the evidence).
    let exc = root.join("exception");
    std::fs::create_dir_all(&exc).unwrap();
    let mut log = String::new();
    for (i, p) in plants.iter().enumerate() {
        log.push_str(&format!(
            "[rank{r}]: Traceback (most recent call last):\n[rank{r}]:   File \"/w/train.py\", line 9, in <module>\n[rank{r}]: RuntimeError: launch failed: {}\n",
            p.line,
            r = i % 8
        ));
    }
    std::fs::write(exc.join("console.log"), log).unwrap();
    // 1b. One exception whose message holds every plant: it is the top finding's evidence and
    // its fix, in every format (the formats that escape quotes, XML and workflow commands,
    // included).
    let one = root.join("one-exception");
    std::fs::create_dir_all(&one).unwrap();
    let all: Vec<&str> = plants.iter().map(|p| p.line.as_str()).collect();
    std::fs::write(
        one.join("console.log"),
        format!(
            "Traceback (most recent call last):\n  File \"/w/train.py\", line 9, in <module>\nRuntimeError: launch failed: {}\n",
            all.join(" ; ")
        ),
    )
    .unwrap();
    // 2. An unknown failure: the secrets are in its last error lines.
    let unk = root.join("unknown");
    std::fs::create_dir_all(&unk).unwrap();
    let mut log = String::from("step 1 loss 2.0\n");
    for p in plants {
        log.push_str(&format!("ERROR: {}\n", p.line));
    }
    std::fs::write(unk.join("train.log"), log).unwrap();
    // 3. A torchelastic error file whose exception message carries the secrets.
    let te = root.join("elastic");
    std::fs::create_dir_all(&te).unwrap();
    let msg: Vec<String> = plants.iter().map(|p| p.line.clone()).collect();
    let json = serde_json::json!({
        "message": {
            "message": format!("RuntimeError: {}", msg.join(" ; ")),
            "extraInfo": {"py_callstack": format!("Traceback (most recent call last):\n  File \"/w/train.py\", line 3\nRuntimeError: {}\n", msg.join(" ; ")), "timestamp": "1795978639"}
        }
    });
    std::fs::write(te.join("error.json"), json.to_string()).unwrap();
    vec![
        exc.display().to_string(),
        one.display().to_string(),
        unk.display().to_string(),
        te.display().to_string(),
    ]
}

fn leaks<'a>(out: &str, plants: &'a [Plant]) -> Vec<&'a str> {
    plants
        .iter()
        .map(|p| p.secret.as_str())
        .filter(|s| out.contains(s))
        .collect()
}

fn fingerprint(json: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    v["fingerprint"].clone()
}

#[test]
fn no_planted_secret_survives_any_format_and_fingerprints_stay() {
    let mut rng = Rng::new();
    let plants = plants(&mut rng);
    let d = tempfile::tempdir().unwrap();
    for run in plant_runs(d.path(), &plants) {
        // The secrets do reach the output unredacted: otherwise this test proves nothing.
        let plain = trainwreck(&["analyze", &run, "--format", "json"]);
        assert!(
            !leaks(&plain, &plants).is_empty(),
            "{run}: no planted secret reaches the unredacted report"
        );
        let redacted_json = trainwreck(&["analyze", &run, "--format", "json", "--redact"]);
        assert_eq!(fingerprint(&plain), fingerprint(&redacted_json), "{run}");
        let runs: [&[&str]; 8] = [
            &["--format", "json", "--redact"],
            &["--format", "json", "--redact=all"],
            &["--format", "table", "--redact", "--timeline"],
            &["--format", "markdown"],
            &["--format", "github"],
            &["--format", "junit"],
            &["--format", "markdown", "--redact=hosts"],
            &["--format", "junit", "--redact=paths"],
        ];
        for extra in runs {
            let mut args = vec!["analyze", run.as_str()];
            args.extend_from_slice(extra);
            let out = trainwreck(&args);
            // json shows every run's evidence, last errors and facts: something was masked.
            if extra[1] == "json" {
                assert!(out.contains("[REDACTED"), "{args:?}: nothing was redacted");
            }
            let l = leaks(&out, &plants);
            assert!(l.is_empty(), "{args:?} leaked {l:?}:\n{out}");
        }
        for fmt in ["table", "json", "markdown"] {
            let out = trainwreck(&["triage", &run, "--format", fmt, "--redact"]);
            let l = leaks(&out, &plants);
            assert!(l.is_empty(), "triage {fmt} {run} leaked {l:?}:\n{out}");
        }
        for fmt in ["table", "json"] {
            let out = trainwreck(&["facts", &run, "--format", fmt, "--redact"]);
            let l = leaks(&out, &plants);
            assert!(l.is_empty(), "facts {fmt} {run} leaked {l:?}:\n{out}");
        }
    }
    // The torchelastic message is a fact: unredacted, `facts` shows the secrets.
    let te = d.path().join("elastic").display().to_string();
    let plain = trainwreck(&["facts", &te, "--format", "json"]);
    assert!(!leaks(&plain, &plants).is_empty(), "facts shows no secret");
}
