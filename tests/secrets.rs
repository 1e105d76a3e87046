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
/// `TW_SEED=N` replays a run: a failing test prints its seed (`Rng::seed`).
struct Rng(u64, u64);

impl Rng {
    fn new() -> Rng {
        let seed = match std::env::var("TW_SEED") {
            Ok(s) => s.parse().expect("TW_SEED is a number"),
            Err(_) => {
                let t = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(1);
                t ^ (u64::from(std::process::id()) << 32) | 1
            }
        };
        Rng(seed, seed)
    }
    /// How to replay this generator's run.
    fn seed(&self) -> String {
        format!("TW_SEED={}", self.1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// `n` characters of a token alphabet with separators (`URLSAFE`'s `-` and `_`, `B64`'s `+`
    /// and `/`), redrawn until a run of it is one `pieces` looks for: a short token the
    /// separators cut into runs no longer than a word (`glrt-amDfa-QTlyLRhY_ehkSQ`) could be
    /// looked for in no output, so the test would call it missing from the unredacted report.
    fn token(&mut self, alphabet: &str, n: usize) -> String {
        assert!(
            n >= 10,
            "a token of {n} characters may have no piece to look for"
        );
        loop {
            let t = self.pick(alphabet, n);
            if pieces(&t).next().is_some() {
                return t;
            }
        }
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

// --- the secret-shape catalogue (audit round 3, part A) ---
//
// At least 80 shapes a training log, a launcher or a captured environment can carry, one per
// family of the public secret-scanner rule sets (cloud keys, source hosts, AI services,
// package registries, chat webhooks, monitoring, infrastructure, payments, private keys,
// connection strings) and every form a shell, a launcher or a config prints a secret-named
// value in. Values are ours, random per run; the prefixes and lengths are the providers'.

const B64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URLSAFE: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
const LOWER: &str = "abcdefghijklmnopqrstuvwxyz0123456789";

/// One shape: its family, the line it is printed in, and the value that must not survive.
struct Shape {
    family: &'static str,
    line: String,
    secret: String,
}

fn shapes(rng: &mut Rng) -> Vec<Shape> {
    let mut v: Vec<Shape> = Vec::new();
    // A password-like value: letters, then digits, so it is never a plain word.
    let pw = |r: &mut Rng| format!("{}{}", r.pick(ALNUM, 12), r.next() % 9000 + 1000);
    let mut add = |family: &'static str, secret: String, make: &dyn Fn(&str) -> String| {
        v.push(Shape {
            family,
            line: make(&secret),
            secret,
        });
    };
    // Cloud providers.
    add(
        "aws-access-key-id",
        format!("AKIA{}", rng.pick(UPPER, 16)),
        &|s| format!("boto3 using key {s}"),
    );
    add(
        "aws-sts-key-id",
        format!("ASIA{}", rng.pick(UPPER, 16)),
        &|s| format!("assumed role key {s}"),
    );
    add("aws-secret-key", rng.token(B64, 40), &|s| {
        format!("aws_secret_access_key = {s}")
    });
    add("aws-session-token", rng.token(B64, 120), &|s| {
        format!("AWS_SESSION_TOKEN={s}")
    });
    add(
        "gcp-api-key",
        format!("AIza{}", rng.token(URLSAFE, 35)),
        &|s| format!("maps client key {s}"),
    );
    add(
        "gcp-oauth-token",
        format!("ya29.{}", rng.token(URLSAFE, 80)),
        &|s| format!("gcs auth {s}"),
    );
    add("gcp-service-account", rng.token(B64, 64), &|s| {
        format!(
            "{{\"type\": \"service_account\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\n{s}\\n-----END PRIVATE KEY-----\\n\"}}"
        )
    });
    add(
        "azure-storage-key",
        format!("{}==", rng.token(B64, 86)),
        &|s| {
            format!(
                "DefaultEndpointsProtocol=https;AccountName=ckpts;AccountKey={s};EndpointSuffix=core.windows.net"
            )
        },
    );
    add("azure-sas", format!("{}%3D", rng.pick(ALNUM, 43)), &|s| {
        format!("upload https://acct.blob.core.windows.net/c/x.pt?sv=2022-11-02&sig={s}&se=2030")
    });
    add(
        "azure-ad-client-secret",
        format!("{}8Q~{}", rng.pick(ALNUM, 3), rng.token(URLSAFE, 31)),
        &|s| format!("msal confidential client {s}"),
    );
    add("azure-devops-pat", rng.pick(LOWER, 52), &|s| {
        format!("AZURE_DEVOPS_EXT_PAT={s}")
    });
    add(
        "digitalocean-pat",
        format!("dop_v1_{}", rng.pick(HEX, 64)),
        &|s| format!("doctl auth {s}"),
    );
    add(
        "alibaba-key-id",
        format!("LTAI{}", rng.pick(ALNUM, 20)),
        &|s| format!("oss client id {s}"),
    );
    add("cloudflare-token", rng.token(URLSAFE, 40), &|s| {
        format!("CLOUDFLARE_API_TOKEN={s}")
    });
    add(
        "heroku-key",
        format!(
            "{}-{}-{}",
            rng.pick(HEX, 8),
            rng.pick(HEX, 4),
            rng.pick(HEX, 12)
        ),
        &|s| format!("HEROKU_API_KEY={s}"),
    );
    // Source hosts and CI.
    add("github-pat", format!("ghp_{}", rng.pick(ALNUM, 36)), &|s| {
        format!("push with {s}")
    });
    add(
        "github-oauth",
        format!("gho_{}", rng.pick(ALNUM, 36)),
        &|s| format!("oauth {s}"),
    );
    add("github-app", format!("ghs_{}", rng.pick(ALNUM, 36)), &|s| {
        format!("https://x-access-token:{s}@github.com/org/repo.git")
    });
    add(
        "github-refresh",
        format!("ghr_{}", rng.pick(ALNUM, 76)),
        &|s| format!("refresh {s}"),
    );
    add(
        "github-fine-grained",
        format!("github_pat_{}", rng.pick(ALNUM, 82)),
        &|s| format!("token {s}"),
    );
    add(
        "gitlab-pat",
        format!("glpat-{}", rng.token(URLSAFE, 20)),
        &|s| format!("clone with {s}"),
    );
    add(
        "gitlab-runner",
        format!("glrt-{}", rng.token(URLSAFE, 20)),
        &|s| format!("runner registered {s}"),
    );
    add(
        "gitlab-deploy",
        format!("gldt-{}", rng.token(URLSAFE, 20)),
        &|s| format!("deploy {s}"),
    );
    add(
        "gitlab-ci-url",
        format!("glpat-{}", rng.token(URLSAFE, 20)),
        &|s| format!("git clone https://oauth2:{s}@gitlab.example.com/ml/train.git"),
    );
    add(
        "bitbucket-app-password",
        format!("ATBB{}", rng.pick(ALNUM, 32)),
        &|s| format!("fetch https://builder:{s}@bitbucket.org/team/repo.git"),
    );
    // ML and AI services.
    add("huggingface", format!("hf_{}", rng.pick(ALNUM, 34)), &|s| {
        format!("HF_TOKEN is {s}")
    });
    add(
        "huggingface-org",
        format!("api_org_{}", rng.pick(ALNUM, 34)),
        &|s| format!("org {s}"),
    );
    add("openai", format!("sk-{}", rng.pick(ALNUM, 48)), &|s| {
        format!("openai {s}")
    });
    add(
        "openai-project",
        format!("sk-proj-{}", rng.token(URLSAFE, 100)),
        &|s| format!("judge model key {s}"),
    );
    add(
        "anthropic",
        format!("sk-ant-api03-{}AA", rng.token(URLSAFE, 93)),
        &|s| format!("claude {s}"),
    );
    add("wandb-env", rng.pick(HEX, 40), &|s| {
        format!("WANDB_API_KEY={s}")
    });
    add("wandb-login", rng.pick(HEX, 40), &|s| {
        format!("wandb login --relogin {s}")
    });
    add("replicate", format!("r8_{}", rng.pick(ALNUM, 37)), &|s| {
        format!("replicate {s}")
    });
    add("groq", format!("gsk_{}", rng.pick(ALNUM, 52)), &|s| {
        format!("groq client {s}")
    });
    add("perplexity", format!("pplx-{}", rng.pick(HEX, 48)), &|s| {
        format!("pplx {s}")
    });
    add("databricks", format!("dapi{}", rng.pick(HEX, 32)), &|s| {
        format!("databricks host token {s}")
    });
    add("cohere", rng.pick(ALNUM, 40), &|s| {
        format!("COHERE_API_KEY={s}")
    });
    add("neptune", format!("eyJ{}", rng.token(B64, 90)), &|s| {
        format!("NEPTUNE_API_TOKEN=\"{s}\"")
    });
    add("comet", rng.pick(ALNUM, 25), &|s| {
        format!("COMET_API_KEY: {s}")
    });
    add("kaggle", rng.pick(HEX, 32), &|s| {
        format!("{{\"username\":\"trainer\",\"key\":\"{s}\"}}")
    });
    // Package registries.
    add("npm", format!("npm_{}", rng.pick(ALNUM, 36)), &|s| {
        format!("publish {s}")
    });
    add("npmrc", format!("npm_{}", rng.pick(ALNUM, 36)), &|s| {
        format!("//registry.npmjs.org/:_authToken={s}")
    });
    add(
        "pypi",
        format!("pypi-AgEIcHlwaS5vcmc{}", rng.token(URLSAFE, 70)),
        &|s| format!("twine upload -u __token__ -p {s}"),
    );
    add("pypi-index-url", pw(rng), &|s| {
        format!("PIP_EXTRA_INDEX_URL=https://ci:{s}@pypi.internal.example/simple")
    });
    add(
        "rubygems",
        format!("rubygems_{}", rng.pick(HEX, 48)),
        &|s| format!("gem push {s}"),
    );
    add(
        "docker-hub",
        format!("dckr_pat_{}", rng.token(URLSAFE, 27)),
        &|s| format!("docker login -u ml {s}"),
    );
    add(
        "docker-config-auth",
        format!("{}7", rng.token(B64, 40)),
        &|s| format!("{{\"auths\": {{\"registry.example\": {{\"auth\": \"{s}\"}}}}}}"),
    );
    add("jfrog", format!("AKCp{}", rng.pick(ALNUM, 69)), &|s| {
        format!("artifactory {s}")
    });
    // Chat and webhooks.
    add(
        "slack-bot",
        format!(
            "xoxb-{}-{}",
            rng.next() % 1_000_000_000,
            rng.pick(ALNUM, 24)
        ),
        &|s| format!("slack {s}"),
    );
    add(
        "slack-user",
        format!(
            "xoxp-{}-{}",
            rng.next() % 1_000_000_000,
            rng.pick(ALNUM, 32)
        ),
        &|s| format!("notify {s}"),
    );
    add(
        "slack-app",
        format!("xapp-1-{}-{}", rng.pick(UPPER, 11), rng.pick(HEX, 64)),
        &|s| format!("socket mode {s}"),
    );
    add(
        "slack-webhook",
        format!(
            "T{}/B{}/{}",
            rng.pick(UPPER, 8),
            rng.pick(UPPER, 10),
            rng.pick(ALNUM, 24)
        ),
        &|s| format!("posting to https://hooks.slack.com/services/{s}"),
    );
    add("discord-webhook", rng.token(URLSAFE, 68), &|s| {
        format!("https://discord.com/api/webhooks/112233445566778899/{s}")
    });
    add(
        "teams-webhook",
        format!("{}@{}", rng.pick(HEX, 32), rng.pick(HEX, 32)),
        &|s| format!("https://acme.webhook.office.com/webhookb2/{s}/IncomingWebhook/x"),
    );
    add(
        "telegram-bot",
        format!(
            "{}:AA{}",
            100_000_000 + rng.next() % 900_000_000,
            rng.token(URLSAFE, 33)
        ),
        &|s| format!("https://api.telegram.org/bot{s}/sendMessage"),
    );
    // Monitoring.
    add("sentry-dsn", rng.pick(HEX, 32), &|s| {
        format!("sentry https://{s}@o4.ingest.sentry.io/42")
    });
    add(
        "sentry-token",
        format!("sntrys_{}", rng.token(B64, 80)),
        &|s| format!("sentry-cli {s}"),
    );
    add("datadog", rng.pick(HEX, 32), &|s| format!("DD_API_KEY={s}"));
    add("new-relic", format!("NRAK-{}", rng.pick(UPPER, 27)), &|s| {
        format!("newrelic {s}")
    });
    add(
        "grafana-cloud",
        format!("glc_{}", rng.token(B64, 48)),
        &|s| format!("grafana {s}"),
    );
    add(
        "grafana-sa",
        format!("glsa_{}_{}", rng.pick(ALNUM, 32), rng.pick(HEX, 8)),
        &|s| format!("grafana sa {s}"),
    );
    add(
        "dynatrace",
        format!("dt0c01.{}.{}", rng.pick(UPPER, 24), rng.pick(UPPER, 64)),
        &|s| format!("dynatrace {s}"),
    );
    // Infrastructure.
    add(
        "vault-service",
        format!("hvs.{}", rng.token(URLSAFE, 90)),
        &|s| format!("vault {s}"),
    );
    add(
        "vault-batch",
        format!("hvb.{}", rng.token(URLSAFE, 120)),
        &|s| format!("vault batch {s}"),
    );
    add("doppler", format!("dp.pt.{}", rng.pick(ALNUM, 43)), &|s| {
        format!("doppler {s}")
    });
    add("pulumi", format!("pul-{}", rng.pick(HEX, 40)), &|s| {
        format!("pulumi {s}")
    });
    add(
        "terraform-cloud",
        format!("{}.atlasv1.{}", rng.pick(ALNUM, 14), rng.token(URLSAFE, 67)),
        &|s| format!("tfc {s}"),
    );
    add(
        "age-secret-key",
        format!("AGE-SECRET-KEY-1{}", rng.pick(UPPER, 58)),
        &|s| format!("sops {s}"),
    );
    add(
        "kube-token",
        format!(
            "eyJ{}.eyJ{}.{}",
            rng.pick(ALNUM, 20),
            rng.pick(ALNUM, 40),
            rng.token(URLSAFE, 40)
        ),
        &|s| format!("token: {s}"),
    );
    add("bearer-header", rng.token(URLSAFE, 40), &|s| {
        format!("curl -H 'Authorization: Bearer {s}' https://api.example")
    });
    add("basic-header", rng.token(B64, 24), &|s| {
        format!("Authorization: Basic {s}")
    });
    add("api-key-header", rng.pick(ALNUM, 32), &|s| {
        format!("X-API-Key: {s}")
    });
    // Payments and SaaS.
    add(
        "stripe-secret",
        format!("sk_live_{}", rng.pick(ALNUM, 24)),
        &|s| format!("billing {s}"),
    );
    add(
        "stripe-restricted",
        format!("rk_live_{}", rng.pick(ALNUM, 24)),
        &|s| format!("billing ro {s}"),
    );
    add("shopify", format!("shpat_{}", rng.pick(HEX, 32)), &|s| {
        format!("shop {s}")
    });
    add(
        "sendgrid",
        format!("SG.{}.{}", rng.token(URLSAFE, 22), rng.token(URLSAFE, 43)),
        &|s| format!("mail {s}"),
    );
    add("mailgun", format!("key-{}", rng.pick(HEX, 32)), &|s| {
        format!("mailgun {s}")
    });
    add("twilio", format!("SK{}", rng.pick(HEX, 32)), &|s| {
        format!("twilio {s}")
    });
    add("mailchimp", format!("{}-us14", rng.pick(HEX, 32)), &|s| {
        format!("chimp {s}")
    });
    add(
        "square",
        format!("sq0atp-{}", rng.token(URLSAFE, 22)),
        &|s| format!("square {s}"),
    );
    add("linear", format!("lin_api_{}", rng.pick(ALNUM, 40)), &|s| {
        format!("linear {s}")
    });
    // Private keys.
    add("rsa-private-key", rng.token(B64, 64), &|s| {
        format!("key -----BEGIN RSA PRIVATE KEY-----{s}-----END RSA PRIVATE KEY-----")
    });
    add("openssh-private-key", rng.token(B64, 64), &|s| {
        format!("-----BEGIN OPENSSH PRIVATE KEY----- {s} -----END OPENSSH PRIVATE KEY-----")
    });
    add("ec-private-key", rng.token(B64, 64), &|s| {
        format!("-----BEGIN EC PRIVATE KEY-----\\n{s}\\n-----END EC PRIVATE KEY-----")
    });
    add("pgp-private-key", rng.token(B64, 64), &|s| {
        format!("-----BEGIN PGP PRIVATE KEY BLOCK----- {s} -----END PGP PRIVATE KEY BLOCK-----")
    });
    add("encrypted-private-key", rng.token(B64, 64), &|s| {
        format!("-----BEGIN ENCRYPTED PRIVATE KEY----- {s}")
    });
    // Connection strings.
    add("postgres-url", pw(rng), &|s| {
        format!("DATABASE_URL postgres://tw:{s}@db.internal:5432/runs")
    });
    add("mysql-url", pw(rng), &|s| {
        format!("mysql://root:{s}@10.0.0.5/metrics")
    });
    add("mongodb-url", pw(rng), &|s| {
        format!("mongodb+srv://ml:{s}@cluster0.example.net/db")
    });
    add("redis-url", pw(rng), &|s| {
        format!("broker redis://:{s}@cache:6379/0")
    });
    add("amqp-url", pw(rng), &|s| {
        format!("amqp://celery:{s}@mq:5672//")
    });
    add(
        "url-password-with-at",
        format!("{}@{}", pw(rng), pw(rng)),
        &|s| format!("fetch https://u:{s}@minio.internal:9000/b"),
    );
    add("jdbc-password", pw(rng), &|s| {
        format!("jdbc:postgresql://db/runs?user=tw&password={s}&ssl=true")
    });
    add("query-token", pw(rng), &|s| {
        format!("GET /metrics?access_token={s} 200")
    });
    // Shell, launcher and config forms of a secret-named value.
    add("flag-dash-value", format!("-X{}", pw(rng)), &|s| {
        format!("--password {s}")
    });
    add(
        "flag-quoted-words",
        format!("{} {}", pw(rng), pw(rng)),
        &|s| format!("--password '{s}'"),
    );
    add("key-quoted-words", format!("A horse {}", pw(rng)), &|s| {
        format!("password=\"{s}\"")
    });
    add(
        "value-with-semicolon",
        format!("{};{}", pw(rng), pw(rng)),
        &|s| format!("password={s}"),
    );
    add(
        "value-with-ampersand",
        format!("{}&{}", pw(rng), pw(rng)),
        &|s| format!("password={s}"),
    );
    add("django-secret-key", pw(rng), &|s| format!("SECRET_KEY={s}"));
    add("password-qualified", pw(rng), &|s| {
        format!("DB_PASSWORD_PROD={s}")
    });
    add("token-qualified", pw(rng), &|s| {
        format!("HF_TOKEN_WRITE={s}")
    });
    add("mysql-pwd", pw(rng), &|s| format!("MYSQL_PWD={s}"));
    add("pgpassword", pw(rng), &|s| {
        format!("PGPASSWORD={s} psql -h db")
    });
    add("nccl-pass", pw(rng), &|s| format!("NCCL_PASS={s}"));
    add("curl-user", pw(rng), &|s| {
        format!("curl -u admin:{s} https://registry.example/v2/")
    });
    add("sshpass", pw(rng), &|s| format!("sshpass -p {s} ssh node2"));
    add("mysql-p", pw(rng), &|s| {
        format!("mysql -u root -p{s} metrics")
    });
    add("netrc", pw(rng), &|s| {
        format!("machine api.example.com login trainer password {s}")
    });
    add("prose", pw(rng), &|s| format!("the password is {s}"));
    add(
        "export-quoted",
        format!("hf_{}", rng.pick(ALNUM, 34)),
        &|s| format!("export HF_TOKEN=\"{s}\""),
    );
    add("argv-list", pw(rng), &|s| {
        format!("args: ['train.py', '--hub_token', '{s}', '--lr', '3e-4']")
    });
    add("flag-equals", pw(rng), &|s| {
        format!("python train.py --api-key={s} --lr 3")
    });
    add("namespace", pw(rng), &|s| {
        format!("Namespace(hf_token='{s}', lr=0.0003)")
    });
    add("json-key", pw(rng), &|s| {
        format!("settings {{\"secret\": \"{s}\"}}")
    });
    add("yaml-key", pw(rng), &|s| format!("  db_password: {s}"));
    add("bare-env-name", pw(rng), &|s| {
        format!("resolved hub_token {s} from cache")
    });
    add("opaque-key", format!("{}7", rng.pick(ALNUM, 31)), &|s| {
        format!("MY_SERVICE_KEY={s}")
    });
    // Audit round 3's residue (F-6): names the key rules missed while `is_secret_name`
    // knew them, values that are not long-random (so only the name can say it is a secret),
    // connection strings, netrc's multi-line form and a URL with one slash.
    let plain = |r: &mut Rng| {
        format!(
            "{}{}",
            r.pick("abcdefghijkmnpqrstuvwxyz", 7),
            r.next() % 90 + 10
        )
    };
    add("redis-auth", plain(rng), &|s| format!("REDIS_AUTH={s}"));
    add("nccl-auth", plain(rng), &|s| {
        format!("export NCCL_AUTH={s}")
    });
    add("secret-key-base", plain(rng), &|s| {
        format!("SECRET_KEY_BASE={s}")
    });
    add("secret-key-salt", plain(rng), &|s| {
        format!("SECRET_KEY_SALT={s}")
    });
    add("jwt-secret-key-v2", plain(rng), &|s| {
        format!("JWT_SECRET_KEY_V2={s}")
    });
    add("pgpass-env", plain(rng), &|s| {
        format!("PGPASS={s} psql -h db")
    });
    add("odbc-pwd", pw(rng), &|s| {
        format!("conn Driver={{ODBC Driver 18}};Server=db;Uid=sa;Pwd={s};Encrypt=yes")
    });
    add("odbc-pwd-last", pw(rng), &|s| {
        format!("conn Server=db;Uid=sa;pwd={s}")
    });
    add(
        "ado-password-spaces",
        format!("a horse {}", plain(rng)),
        &|s| format!("Data Source=db;User ID=sa;Password={s};"),
    );
    add("netrc-password-line", pw(rng), &|s| format!("password {s}"));
    add("url-one-slash", pw(rng), &|s| {
        format!("fetch https:/bob:{s}@minio.internal/b")
    });
    add("pgpass-key", plain(rng), &|s| format!("pgpass: {s}"));
    v
}

/// Lines a secret-named-key rule must leave alone (AUTHOR is no AUTH, a policy number is no
/// password, a placeholder is no token): each shown whole in every redacted format.
fn silent_lines(rng: &mut Rng) -> Vec<String> {
    let tag = rng.pick("abcdefghijkmnpqrstuvwxyz", 6);
    vec![
        format!("AUTHOR=quiet{tag}"),
        format!("auth_type=none quiet{tag}"),
        format!("password_min_length=8 quiet{tag}"),
        format!("token_count=4096 quiet{tag}"),
        format!("use_auth_token=True quiet{tag}"),
        format!("text_key=text sort_key=name quiet{tag}"),
        format!("FATAL: password authentication failed for user quiet{tag}"),
    ]
}

/// The catalogue is what it says: at least 80 shapes, no family twice, each secret in its line
/// and with a piece to look for, in 2,000 catalogues drawn one after another (one in about eight
/// runs used to draw a token cut into pieces too short to look for).
#[test]
fn the_catalogue_has_80_shapes_of_distinct_families() {
    let mut rng = Rng::new();
    let seed = rng.seed();
    for _ in 0..2000 {
        for s in shapes(&mut rng) {
            assert!(
                pieces(&s.secret).next().is_some(),
                "{}: no piece of the secret {:?} can be looked for ({seed} replays it)",
                s.family,
                s.secret
            );
        }
    }
    let all = shapes(&mut rng);
    assert!(all.len() >= 80, "{} shapes", all.len());
    let mut families: Vec<&str> = all.iter().map(|s| s.family).collect();
    families.sort();
    let n = families.len();
    families.dedup();
    assert_eq!(families.len(), n, "a family is listed twice");
    for s in &all {
        assert!(
            s.line.contains(&s.secret),
            "{}: secret not in its line",
            s.family
        );
        assert!(
            pieces(&s.secret).next().is_some(),
            "{}: no piece of the secret can be looked for",
            s.family
        );
    }
}

/// The parts of a secret that must each be gone: its runs of letters and digits long enough
/// to be its own (six or more with a digit, or ten or more), so a value masked only up to a
/// `;`, an `@` or a space (`A;B`, `A@B`, `A horse B`) still counts as leaked by its tail.
fn pieces(secret: &str) -> impl Iterator<Item = &str> {
    secret
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|p| p.len() >= 10 || (p.len() >= 6 && p.bytes().any(|b| b.is_ascii_digit())))
}

/// Whether any piece of `s`'s secret is in `out`.
fn shape_leaked(out: &str, s: &Shape) -> bool {
    pieces(&s.secret).any(|p| out.contains(p))
}

/// The redactor itself, line by line: no shape's value survives, the line's other words do,
/// and a second pass changes nothing.
#[test]
fn the_redactor_masks_every_shape() {
    use trainwreck::redact::{Options, Redactor};
    let mut rng = Rng::new();
    let mut failed = Vec::new();
    for s in shapes(&mut rng) {
        let mut r = Redactor::new(Options::default());
        let out = r.text(&format!("S1: {}", s.line));
        if shape_leaked(&out, &s) || !out.starts_with("S1: ") {
            failed.push(format!("{}: {out}", s.family));
        }
        assert_eq!(r.text(&out), out, "{}: not idempotent", s.family);
    }
    assert!(
        failed.is_empty(),
        "shapes that leak:\n{}",
        failed.join("\n")
    );
}

/// The binary with no inherited history, in `dir` (so a default database is never touched).
fn tw_in(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .args(args)
        .env_remove("TRAINWRECK_DB")
        .env("XDG_DATA_HOME", dir.join("xdg"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn shape_leaks<'a>(out: &str, shapes: &'a [Shape]) -> Vec<&'a str> {
    shapes
        .iter()
        .filter(|s| shape_leaked(out, s))
        .map(|s| s.family)
        .collect()
}

/// Runs of eight shapes each (the terminal report shows eight evidence lines), every shape
/// the message of a rank's CUDA error, tagged `S<n>:` so a test can see its line is shown.
fn shape_runs(root: &Path, shapes: &[Shape]) -> Vec<(String, std::ops::Range<usize>)> {
    let mut runs = Vec::new();
    for (g, chunk) in shapes.chunks(8).enumerate() {
        let dir = root.join(format!("g{g:02}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut log = String::new();
        for (r, s) in chunk.iter().enumerate() {
            let n = g * 8 + r;
            log.push_str(&format!(
                "[rank{r}]: RuntimeError: CUDA error: an illegal memory access was encountered S{n}: {}\n",
                s.line
            ));
        }
        std::fs::write(dir.join("train.log"), log).unwrap();
        runs.push((dir.display().to_string(), g * 8..g * 8 + chunk.len()));
    }
    runs
}

/// A report's text as its reader reads it: an HTML page's character references resolved.
fn as_read(args: &[&str], out: String) -> String {
    if args.contains(&"html") {
        out.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&amp;", "&")
    } else {
        out
    }
}

/// Every shape of the catalogue, in every always-redacted format (Markdown, JUnit, GitHub,
/// HTML), every `--redact` view (table, timeline, JSON, Chinese) and the stored history: shown (its
/// tag is there) and masked (its value is not). Unredacted JSON and a `--store-raw` history
/// do show them, so the test can fail.
#[test]
fn every_shape_is_masked_in_every_redacted_format_and_in_the_history() {
    let mut rng = Rng::new();
    let seed = rng.seed();
    let all = shapes(&mut rng);
    let d = tempfile::tempdir().unwrap();
    let runs = shape_runs(d.path(), &all);
    let db = d.path().join("h.db").display().to_string();
    let raw = d.path().join("raw.db").display().to_string();
    let views: [(&[&str], bool); 9] = [
        (&["--format", "json", "--redact"], true),
        (&["--redact"], true),
        (&["--format", "html"], true),
        (&["--redact", "--timeline"], true),
        (&["--lang", "zh", "--redact"], true),
        (&["--format", "markdown"], true),
        (&["--lang", "zh", "--format", "markdown"], true),
        (&["--format", "junit"], true),
        (&["--format", "github"], false),
    ];
    let failures = std::sync::Mutex::new(Vec::<String>::new());
    std::thread::scope(|s| {
        for (run, range) in &runs {
            let (all, failures, d, seed) = (&all, &failures, d.path(), &seed);
            s.spawn(move || {
                let mine = &all[range.clone()];
                let (ok, plain, err) = tw_in(d, &["analyze", run, "--format", "json"]);
                assert!(ok, "{err}");
                let missing: Vec<&str> = mine
                    .iter()
                    .filter(|s| !shape_leaked(&plain, s))
                    .map(|s| s.line.as_str())
                    .collect();
                assert!(
                    missing.is_empty(),
                    "{run}: not every secret reaches the unredacted report ({seed} replays it): {missing:?}"
                );
                for (extra, shown) in views {
                    let mut args = vec!["analyze", run.as_str()];
                    args.extend_from_slice(extra);
                    let (ok, out, err) = tw_in(d, &args);
                    assert!(ok, "{args:?}: {err}");
                    let out = as_read(extra, out);
                    let l = shape_leaks(&out, mine);
                    let hidden: Vec<usize> = range
                        .clone()
                        .filter(|n| shown && !out.contains(&format!("S{n}:")))
                        .collect();
                    if !l.is_empty() || !hidden.is_empty() {
                        failures.lock().unwrap().push(format!(
                            "{extra:?}: leaked {l:?}, lines not shown {hidden:?}"
                        ));
                    }
                }
            });
        }
    });
    let f = failures.into_inner().unwrap();
    assert!(f.is_empty(), "{seed} replays it:\n{}", f.join("\n"));
    // The history: stored redacted by default (whatever format was printed), so no view of
    // it shows a secret; `--store-raw` keeps them.
    for (run, _) in &runs {
        for (store, fmt) in [(&db, "markdown"), (&raw, "json")] {
            let mut args = vec!["analyze", run, "--record", "--db", store, "--format", fmt];
            if store == &raw {
                args.push("--store-raw");
            }
            assert!(tw_in(d.path(), &args).0);
        }
    }
    let (ok, export, err) = tw_in(d.path(), &["history", "export", "--db", &db]);
    assert!(ok, "{err}");
    assert_eq!(export.lines().count(), runs.len(), "{export}");
    let l = shape_leaks(&export, &all);
    assert!(l.is_empty(), "history export leaked {l:?}");
    let (_, raw_export, _) = tw_in(d.path(), &["history", "export", "--db", &raw]);
    assert_eq!(
        shape_leaks(&raw_export, &all).len(),
        all.len(),
        "--store-raw lost secrets"
    );
    let (_, masked, _) = tw_in(d.path(), &["history", "export", "--db", &raw, "--redact"]);
    let l = shape_leaks(&masked, &all);
    assert!(
        l.is_empty(),
        "history export --redact of a raw store leaked {l:?}"
    );
    let fp = serde_json::from_str::<serde_json::Value>(export.lines().next().unwrap()).unwrap()
        ["fingerprint"]
        .as_str()
        .unwrap()
        .to_string();
    for args in [
        vec!["history", "list", "--db", &raw, "--redact"],
        vec![
            "history", "show", &fp, "--db", &raw, "--redact", "--format", "json",
        ],
        vec!["history", "list", "--db", &db],
        vec!["history", "show", &fp, "--db", &db],
    ] {
        let (ok, out, err) = tw_in(d.path(), &args);
        assert!(ok, "{args:?}: {err}");
        let l = shape_leaks(&out, &all);
        assert!(l.is_empty(), "{args:?} leaked {l:?}");
    }
}

/// What must stay: lines whose keys only look like secret names (`AUTHOR`, `auth_type=none`,
/// `password_min_length=8`, a placeholder, a dataset's `text_key`), shown whole in every
/// redacted format and in the stored history.
#[test]
fn harmless_lines_near_secret_names_stay_visible_in_every_redacted_format() {
    let lines = silent_lines(&mut Rng::new());
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    // The first line is the error alone: GitHub's annotation of it carries no line text.
    let log: String = std::iter::once(&String::new())
        .chain(lines.iter())
        .enumerate()
        .map(|(r, l)| {
            format!("[rank{r}]: RuntimeError: CUDA error: an illegal memory access was encountered {l}\n")
        })
        .collect();
    std::fs::write(run.join("train.log"), log).unwrap();
    let run = run.display().to_string();
    let db = d.path().join("h.db").display().to_string();
    let mut failed = Vec::new();
    for extra in [
        &["--format", "markdown"][..],
        &["--format", "github"],
        &["--format", "junit"],
        &["--format", "html"],
        &["--format", "json", "--redact"],
        &["--redact"],
        &["--record", "--db", &db, "--format", "markdown"],
    ] {
        let mut args = vec!["analyze", run.as_str()];
        args.extend_from_slice(extra);
        let (ok, out, err) = tw_in(d.path(), &args);
        assert!(ok, "{args:?}: {err}");
        let out = as_read(extra, out);
        for l in &lines {
            if !out.contains(l.as_str()) {
                failed.push(format!("{extra:?}: {l:?} not shown whole"));
            }
        }
    }
    let (ok, export, err) = tw_in(d.path(), &["history", "export", "--db", &db]);
    assert!(ok, "{err}");
    for l in &lines {
        if !export.contains(l.as_str()) {
            failed.push(format!("history export: {l:?} not stored whole"));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// An archive member's name holding a URL's credentials with one slash (a zip path collapses
/// `//`): the name is cited in every format, the password in none (the HTML timeline's
/// tooltips included).
#[test]
fn a_member_name_with_one_slash_url_credentials_is_masked_everywhere() {
    let d = tempfile::tempdir().unwrap();
    let pw = format!("PLNT{}", Rng::new().pick(ALNUM, 12));
    let zip_path = d.path().join("artifact.zip");
    let mut z = zip::ZipWriter::new(std::fs::File::create(&zip_path).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    z.start_file(format!("https:/bob:{pw}@minio.internal/rank0.log"), opts)
        .unwrap();
    std::io::Write::write_all(
        &mut z,
        b"2024-05-14 09:14:02 step 10\n[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n",
    )
    .unwrap();
    z.finish().unwrap();
    let p = zip_path.display().to_string();
    let (ok, plain, err) = tw_in(d.path(), &["analyze", &p, "--format", "json"]);
    assert!(ok, "{err}");
    assert!(plain.contains(&pw), "the member is not cited:\n{plain}");
    for extra in [
        &["--format", "html"][..],
        &["--format", "markdown"],
        &["--format", "github"],
        &["--format", "junit"],
        &["--format", "json", "--redact"],
        &["--redact", "--timeline"],
        &["--redact"],
    ] {
        let mut args = vec!["analyze", p.as_str()];
        args.extend_from_slice(extra);
        let (ok, out, err) = tw_in(d.path(), &args);
        assert!(ok, "{args:?}: {err}");
        let out = as_read(extra, out);
        assert!(
            !out.contains(&pw),
            "{extra:?} leaked the member's password:\n{out}"
        );
        assert!(
            out.contains("minio.internal"),
            "{extra:?}: the member is not cited:\n{out}"
        );
    }
}

/// `diff` and `analyze --baseline`: a setting whose name names a secret is masked whole
/// (its value has no token shape: only the key says it is one), and every shape of the
/// catalogue inside a setting's value is masked by its shape, in every format with
/// `--redact` and always in Markdown and HTML.
#[test]
fn diff_masks_secret_named_settings_and_every_shape() {
    let mut rng = Rng::new();
    let all = shapes(&mut rng);
    let d = tempfile::tempdir().unwrap();
    let keyed = [
        "db_password",
        "wandb_api_key",
        "hf_token",
        "nccl_pass",
        "secret_key",
        "pgpass",
        "redis_auth",
        "secret_key_base",
    ];
    let mut keyed_values = Vec::new();
    let mut pairs = Vec::new();
    for (g, chunk) in all.chunks(18).enumerate() {
        let mut cfg = |side: &str| {
            let mut m = serde_json::Map::new();
            m.insert("train_batch_size".into(), serde_json::json!(8));
            for (i, s) in chunk.iter().enumerate() {
                let n = g * 18 + i;
                let v = match side {
                    "good" => format!("S{n}: unset"),
                    _ => format!("S{n}: {}", s.line),
                };
                m.insert(format!("note_{n}"), v.into());
            }
            for k in keyed {
                let v = format!("PLNT{}{}", rng.pick(ALNUM, 10), rng.next() % 1000);
                keyed_values.push(v.clone());
                m.insert(k.into(), v.into());
            }
            let dir = d.path().join(format!("p{g}/{side}"));
            std::fs::create_dir_all(&dir).unwrap();
            let json = serde_json::to_string_pretty(&serde_json::Value::Object(m)).unwrap();
            std::fs::write(dir.join("ds_config.json"), json).unwrap();
            std::fs::write(
                dir.join("train.log"),
                "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n",
            )
            .unwrap();
            dir.display().to_string()
        };
        let good = cfg("good");
        let bad = cfg("bad");
        pairs.push((good, bad, g * 18..g * 18 + chunk.len()));
    }
    let leaks_in = |out: &str, mine: &[Shape]| -> Vec<String> {
        let mut l: Vec<String> = shape_leaks(out, mine)
            .iter()
            .map(|s| s.to_string())
            .collect();
        l.extend(
            keyed_values
                .iter()
                .filter(|v| out.contains(v.as_str()))
                .cloned(),
        );
        l
    };
    let failures = std::sync::Mutex::new(Vec::<String>::new());
    let shown_total = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for (good, bad, range) in &pairs {
            let (all, failures, d, leaks_in) = (&all, &failures, d.path(), &leaks_in);
            let shown_total = &shown_total;
            s.spawn(move || {
                let mine = &all[range.clone()];
                // The settings the comparison lists (values it takes for noise, such as ones
                // holding hashes or paths, it never lists): those must be shown, masked.
                let (ok, plain, err) = tw_in(d, &["diff", good, bad]);
                assert!(ok, "{err}");
                let listed: Vec<usize> = range
                    .clone()
                    .filter(|n| plain.contains(&format!("S{n}:")))
                    .collect();
                assert!(
                    leaks_in(&plain, mine).len() >= keyed.len(),
                    "the unredacted diff does not show the secret-named settings:\n{plain}"
                );
                shown_total.fetch_add(listed.len(), std::sync::atomic::Ordering::Relaxed);
                let views: [Vec<&str>; 6] = [
                    vec!["diff", good, bad, "--redact"],
                    vec!["diff", good, bad, "--format", "json", "--redact"],
                    vec!["--lang", "zh", "diff", good, bad, "--format", "markdown"],
                    vec!["analyze", bad, "--baseline", good, "--format", "markdown"],
                    vec!["diff", good, bad, "--format", "html"],
                    vec!["analyze", bad, "--baseline", good, "--format", "html"],
                ];
                for args in views {
                    let (ok, out, err) = tw_in(d, &args);
                    assert!(ok, "{args:?}: {err}");
                    // A page's text as a browser reads it: its character references resolved.
                    let out = if args.contains(&"html") {
                        out.replace("&lt;", "<")
                            .replace("&gt;", ">")
                            .replace("&quot;", "\"")
                            .replace("&#39;", "'")
                            .replace("&amp;", "&")
                    } else {
                        out
                    };
                    let l = leaks_in(&out, mine);
                    let hidden: Vec<&usize> = listed
                        .iter()
                        .filter(|n| !out.contains(&format!("S{n}:")))
                        .collect();
                    if !l.is_empty() || !hidden.is_empty() {
                        failures.lock().unwrap().push(format!(
                            "{:?}: leaked {l:?}, settings not shown {hidden:?}",
                            &args[..args.len().min(2)]
                        ));
                    }
                }
            });
        }
    });
    let f = failures.into_inner().unwrap();
    assert!(f.is_empty(), "{}", f.join("\n"));
    let shown = shown_total.into_inner();
    assert!(
        shown >= all.len() / 2,
        "only {shown} shapes were listed as settings"
    );
}

/// `history migrate` against a real server names it without the password, given in the URL's
/// user part or as a parameter (the test server trusts local connections, so any password
/// connects).
#[test]
#[ignore = "needs a PostgreSQL server (TRAINWRECK_TEST_PG)"]
fn history_migrate_on_postgres_prints_no_password() {
    let server = std::env::var("TRAINWRECK_TEST_PG").unwrap_or_default();
    assert!(
        server.starts_with("postgres://tw@"),
        "TRAINWRECK_TEST_PG must name a running server (eval \"$(scripts/pg-test-server.sh start)\")"
    );
    let d = tempfile::tempdir().unwrap();
    let rest = server.trim_start_matches("postgres://tw@");
    for url in [
        format!("postgres://tw:PLNTpgSecret9x@{rest}"),
        format!("POSTGRESQL://tw@{rest}?password=PLNTqueryPw"),
    ] {
        let (ok, out, err) = tw_in(d.path(), &["history", "migrate", "--db", &url]);
        assert!(ok, "{url}: {err}");
        assert!(out.contains("schema version"), "{out}");
        assert!(!out.contains("PLNT") && !err.contains("PLNT"), "{out}{err}");
    }
}
