//! Redaction for reports meant to be pasted (Markdown always; JSON and others on `--redact`):
//! secrets (tokens, API keys, passwords, credentials in URLs) are always masked; host names,
//! IP addresses and user paths on request, each consistently (`host-1` stays `host-1`) so
//! grouping still works. It is also the one place that decides which names name a secret
//! (`is_secret_name`, used by its own key rules and by every reader of settings). It rewrites
//! text only and must never change a fingerprint.

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

/// A key in text, for the rules that mask the value of a secret-named key: any name a
/// launcher, a shell or a config prints (`HF_TOKEN`, `db.password`, `--hub-token`). Whether it
/// names a secret is `is_secret_name`'s call, the one definition, never a pattern of its own.
const KEY: &str = r"(?P<key>[A-Za-z0-9_.-]+)";

/// How a match is rewritten.
enum Rewrite {
    /// A `$1`-style template: groups keep the key name and mask only the value.
    Template(&'static str),
    /// A template applied only when the `key` group names a secret (`is_secret_name`) and
    /// the value (what follows group 1) is not a placeholder (`None`, `true`, empty); for any
    /// other key the search goes on after it, so `env: HF_TOKEN=…` still finds `HF_TOKEN`.
    Keyed(&'static str),
    /// Group 1 is kept, group 2 is masked only when it looks random (high entropy, or an
    /// opaque token): for keys that are secret only sometimes (`key`, `auth`, `sig`, `session`).
    IfRandom,
    /// Group 1 is kept, group 2 is masked only when it looks like a password (a digit, mixed
    /// case or a symbol): for prose (`the password is …`) where a plain word is a message.
    IfSecretish,
    /// Group 1 is kept, group 2 is masked unless it is a path (`pwd=/home/u` is the working
    /// directory, `Pwd=Tr0ub4dor` a connection string's password).
    IfNotPath,
}

impl Rewrite {
    /// For the value-gated rewrites: whether this value is masked.
    fn hides(&self, v: &str) -> bool {
        match self {
            Rewrite::IfRandom => looks_random(v) || is_opaque_token(v),
            Rewrite::IfSecretish => looks_secretish(v),
            Rewrite::IfNotPath => !looks_like_path(v),
            Rewrite::Template(_) | Rewrite::Keyed(_) => true,
        }
    }
}

/// Prefixes of tokens that are credentials wherever they appear, each with the characters
/// and the least length of the body after it. Families: source hosts, ML and AI services,
/// package registries, chat, monitoring, infrastructure and payment providers.
const TOKEN_PREFIXES: &[(&str, &str, usize)] = &[
    // Hugging Face user and organisation tokens.
    (r"hf_", "[A-Za-z0-9]", 16),
    (r"api_org_", "[A-Za-z0-9]", 16),
    // GitHub: classic, OAuth, user-to-server, server-to-server, refresh, fine-grained.
    (r"gh[pousr]_", "[A-Za-z0-9]", 20),
    (r"github_pat_", "[A-Za-z0-9_]", 20),
    // GitLab: personal, deploy, runner, pipeline-trigger, feed, OAuth app tokens.
    (
        r"gl(?:pat|dt|rt|ptt|ft|oas|cbt|soat|imt|agent)-",
        "[A-Za-z0-9_-]",
        16,
    ),
    (r"GR1348941", "[A-Za-z0-9_-]", 20),
    // AI services: OpenAI (and project/service keys), Anthropic, Groq, Replicate, Perplexity.
    (r"sk-", "[A-Za-z0-9_-]", 16),
    (r"gsk_", "[A-Za-z0-9]", 32),
    (r"r8_", "[A-Za-z0-9]", 30),
    (r"pplx-", "[A-Za-z0-9]", 32),
    // Databricks.
    (r"dapi", "[0-9a-f]", 32),
    // Google API key and OAuth access token.
    (r"AIza", "[A-Za-z0-9_-]", 30),
    (r"ya29\.", "[A-Za-z0-9_-]", 30),
    // Package registries: npm, PyPI, RubyGems, Docker Hub, JFrog.
    (r"npm_", "[A-Za-z0-9]", 30),
    (r"pypi-AgEIcHlwaS5vcmc", "[A-Za-z0-9_-]", 30),
    (r"rubygems_", "[0-9a-f]", 40),
    (r"dckr_pat_", "[A-Za-z0-9_-]", 20),
    (r"AKCp", "[A-Za-z0-9]", 60),
    // Slack: bot, user, app, refresh, config tokens.
    (r"xox[abprse]-", "[A-Za-z0-9-]", 10),
    (r"xapp-", "[A-Za-z0-9-]", 20),
    (r"xoxe\.xox[bp]-", "[A-Za-z0-9-]", 20),
    // Monitoring: Sentry org/user tokens, New Relic, Grafana cloud and service accounts.
    (r"sntry[su]_", "[A-Za-z0-9+/=_]", 40),
    (r"NRAK-", "[A-Z0-9]", 20),
    (r"NRJS-", "[a-f0-9]", 16),
    (r"glc_", "[A-Za-z0-9+/=_]", 32),
    (r"glsa_", "[A-Za-z0-9_]", 32),
    (r"dt0c01\.", "[A-Za-z0-9.]", 40),
    // Infrastructure: Vault, Doppler, Pulumi, DigitalOcean, Terraform Cloud, age, Alibaba.
    (r"hv[sbr]\.", "[A-Za-z0-9_-]", 24),
    (r"dp\.(?:pt|st|sa|ct|scim|audit)\.", "[A-Za-z0-9]", 30),
    (r"pul-", "[0-9a-f]", 40),
    (r"do[opr]_v1_", "[0-9a-f]", 64),
    (r"[A-Za-z0-9]{14}\.atlasv1\.", "[A-Za-z0-9_=-]", 40),
    (r"AGE-SECRET-KEY-1", "[0-9A-Z]", 50),
    (r"LTAI", "[A-Za-z0-9]", 20),
    // Payments and SaaS: Stripe, Shopify, Square, SendGrid, Mailgun, Linear, Atlassian.
    (r"[sr]k_(?:live|test)_", "[A-Za-z0-9]", 16),
    (r"shp(?:at|ca|pa|ss)_", "[a-fA-F0-9]", 32),
    (r"sq0(?:atp|csp)-", "[A-Za-z0-9_-]", 22),
    (r"SG\.", "[A-Za-z0-9_.-]", 40),
    (r"key-", "[0-9a-f]", 32),
    (r"lin_api_", "[A-Za-z0-9]", 32),
    (r"ATATT3", "[A-Za-z0-9_=-]", 60),
];

/// The secret table: token shapes first (they mask wherever they appear), then secret-named
/// keys in each form a launcher, a shell or a config prints them. Each pattern is written
/// once, here.
static SECRETS: LazyLock<Vec<(Regex, Rewrite)>> = LazyLock::new(|| {
    use Rewrite::{IfNotPath, IfRandom, IfSecretish, Keyed, Template};
    let k = KEY;
    let mut table: Vec<(String, Rewrite)> = vec![
        // A private key block (PEM, OpenSSH, PGP), whole or cut, also with its line breaks
        // written as `\n` (a JSON key file).
        (
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)"
                .into(),
            Template("[REDACTED PRIVATE KEY]"),
        ),
        // Credentials inside URLs: scheme://user:pass@host (an empty user, as Redis has, and
        // a password holding `@` included), and a key alone before the host (a Sentry DSN's
        // `https://<32 hex>@o1.ingest.sentry.io/…`). One slash is a URL too (`https:/u:pw@h`:
        // a typo, or a path that collapsed `//`, as an archive member's name does).
        (
            r"([a-zA-Z][a-zA-Z0-9+.-]*:/{1,3})[^/\s:@'\x22]*:[^/\s'\x22]+@".into(),
            Template("${1}[REDACTED]@"),
        ),
        (
            r"([a-zA-Z][a-zA-Z0-9+.-]*:/{1,3})[A-Za-z0-9_-]{16,}@".into(),
            Template("${1}[REDACTED]@"),
        ),
        // Webhook URLs whose path is the secret (Slack, Discord, Teams, Telegram bots).
        (
            r"(?i)(hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9+/_-]{10,}".into(),
            Template("${1}[REDACTED]"),
        ),
        (
            r"(?i)(discord(?:app)?\.com/api/webhooks/)[0-9]+/[A-Za-z0-9_-]{20,}".into(),
            Template("${1}[REDACTED]"),
        ),
        (
            r"(?i)(\.webhook\.office\.com/webhookb2/)[^\s'\x22]+".into(),
            Template("${1}[REDACTED]"),
        ),
        // (No word boundary: the token follows `bot` in the Bot API's URLs.)
        (r"[0-9]{8,10}:AA[A-Za-z0-9_-]{30,}".into(), Template("[REDACTED]")),
        // An Azure SAS (or any pre-signed URL's) signature.
        (
            r"(?i)([?&](?:sig|signature|x-amz-signature|x-goog-signature)=)[^&\s'\x22]+".into(),
            Template("${1}[REDACTED]"),
        ),
        (
            // (`[` is allowed in the value so that a second pass re-masks `[REDACTED]` as
            // itself instead of taking `Bearer` for the value.)
            r"(?i)(authorization\s*[:=]\s*(?:bearer|basic|token)?\s*)[^\s'\x22]+".into(),
            Template("${1}[REDACTED]"),
        ),
        (
            r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}".into(),
            Template("${1}[REDACTED]"),
        ),
        // Shell forms that take a password as an argument: `curl -u user:pw`, `sshpass -p pw`,
        // `mysql -pPW`, and a netrc line.
        (
            r#"(\bcurl\b[^\n]*?\s(?:-u\s*|--user[=\s]\s*)['"]?[^\s:'"]*:)[^\s'"]+"#.into(),
            Template("${1}[REDACTED]"),
        ),
        (
            r"(\bsshpass\s+(?:-[a-zA-Z]+\s+)*-p\s*)\S+".into(),
            Template("${1}[REDACTED]"),
        ),
        (
            r"(\bmysql(?:dump|admin)?\b[^\n]*?\s-p)[^\s-]\S*".into(),
            Template("${1}[REDACTED]"),
        ),
        (
            r"(?i)(\b(?:machine\s+\S+\s+)?login\s+\S+\s+password\s+)\S+".into(),
            Template("${1}[REDACTED]"),
        ),
        // An Azure AD client secret (`xxx8Q~…`) and AWS keys.
        (
            r"\b[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}".into(),
            Template("[REDACTED]"),
        ),
        (r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b".into(), Template("[REDACTED]")),
        (
            r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}".into(),
            Template("[REDACTED]"),
        ),
        // Twilio API key and Mailchimp key: hex with a fixed prefix or suffix.
        (r"\bSK[0-9a-fA-F]{32}\b".into(), Template("[REDACTED]")),
        (r"\b[0-9a-f]{32}-us[0-9]{1,2}\b".into(), Template("[REDACTED]")),
        // A W&B API key: 40 hex after `wandb login` (flags between allowed) or WANDB_API_KEY
        // in any separator form.
        (
            r"(?i)(\bwandb\s+login\s+(?:--?[A-Za-z-]+(?:=\S+)?\s+)*)[0-9a-f]{40}\b".into(),
            Template("${1}[REDACTED]"),
        ),
        (
            r#"(?i)(wandb_api_key['"]?\s*[=:,]?\s*['"]?)[0-9a-f]{40}\b"#.into(),
            Template("${1}[REDACTED]"),
        ),
        // An ODBC / ADO.NET connection string's password (`Server=db;Uid=sa;Pwd=…;`,
        // `Password=a b;`): up to the `;` that ends it (a `{…}` value whole), and `pwd=…`
        // anywhere unless its value is a path (then it is the working directory). The `;`
        // ends it only before the next `Key=`, a space, a quote or the end: in
        // `password=A;B` the `;` is part of the value (masked whole by the key rule below).
        (
            r#"(?i)((?:^|[;\s'"({,])(?:pwd|password)\s*=\s*)(\{[^}\n]*\}|[^;'"\n]+)(;(?:$|[\s'"),]|[A-Za-z][A-Za-z0-9 _]*=))"#.into(),
            IfNotPath,
        ),
        (
            r#"(?i)((?:^|[;\s'"({,])pwd\s*=\s*)(\{[^}\n]*\}|[^\s'"]+)"#.into(),
            IfNotPath,
        ),
        // Python-list argv as DeepSpeed's launcher logs it: '--hub_token', 'value'; also with
        // its quotes backslash-escaped, as inside a JSON string (`[\"--hub_token\", \"v\"]`).
        (
            format!(r#"(?i)(\\?['"]--?{k}\\?['"]\s*,\s*\\?['"])[^'"\\\n]+"#),
            Keyed("${1}[REDACTED]"),
        ),
        // A quoted value after a secret-named flag or key, whole (spaces and all):
        // `--password 'a b'`, `password="a horse b"`, `"api_key": "…"`.
        (
            format!(r#"(?i)((?:^|[^A-Za-z0-9_.-])-{{0,2}}{k}\\?['"]?(?:\s*[=:]\s*|\s+)')[^'\n]+"#),
            Keyed("${1}[REDACTED]"),
        ),
        (
            format!(r#"(?i)((?:^|[^A-Za-z0-9_.-])-{{0,2}}{k}\\?['"]?(?:\s*[=:]\s*|\s+)\\?")[^"\\\n]+"#),
            Keyed("${1}[REDACTED]"),
        ),
        // Flags: --hub_token value, --hub_token=value, -password value. After a space the
        // value is never a following flag (`--password --lr`), unless it has a digit or is
        // long (`--password -Xs3cret`); after `=` anything is the value.
        (
            format!(r#"(?i)((?:^|[\s'"(\[,])--?{k}=)[^\s'"\[\]]+"#),
            Keyed("${1}[REDACTED]"),
        ),
        (
            format!(r#"(?i)((?:^|[\s'"(\[,])--?{k}\s+)(?:[^\s'",;\[\]-]|-[^\s'"\-]*[0-9]|-[^\s'"\-]{{6}})[^\s'",\]]*"#),
            Keyed("${1}[REDACTED]"),
        ),
        // key=value / key: value where the key names a secret: the value runs to the next
        // space, quote, comma or bracket (a `;` or `&` inside it is part of it).
        (
            format!(r#"(?i)(\b{k}\\?['"]?\s*[=:]\s*)[^\s'"\\,}}\]\[]+"#),
            Keyed("${1}[REDACTED]"),
        ),
        // A bare snake_case or env-style name and its value: `hub_token X`, `HF_TOKEN X`. Only
        // identifiers with an underscore (so prose like "token count" stays), and only values
        // with a digit (so "api_key is missing" stays).
        (
            r#"(?i)(\b(?P<key>[A-Za-z0-9]*_[A-Za-z0-9_]*)\s+)[A-Za-z0-9+/=_.-]*[0-9][A-Za-z0-9+/=_.-]*"#.into(),
            Keyed("${1}[REDACTED]"),
        ),
        // netrc's multi-line form: a line that is only `password X` (masked whatever X is),
        // and `password X` anywhere when X looks like one (`password authentication failed`
        // stays).
        (
            r"(?im)^(\s*(?:password|passwd)\s+)(\S+)\s*$".into(),
            Template("${1}[REDACTED]"),
        ),
        (
            r#"(?i)(\b(?:password|passwd|passphrase)\s+)([^\s'"]+)"#.into(),
            IfSecretish,
        ),
        // Prose: `the password is X`, `token was X` (masked only when X looks like one).
        (
            r#"(?i)(\b(?:password|passwd|passphrase|secret|token|api[ _-]?key)\s+(?:is|was|=|:)\s+['"]?)([^\s'"]+)"#.into(),
            IfSecretish,
        ),
        // Keys that are secret only sometimes: mask their value when it looks random.
        (
            r#"(?i)(\b[A-Za-z0-9_.-]*(?:key|auth|sig|session|cookie|cred)[A-Za-z0-9_.-]*\\?['"]?\s*[=:]\s*\\?['"]?)([^\s'"\\,;&}\]\[`，；）]{16,})"#.into(),
            IfRandom,
        ),
    ];
    // Token prefixes, one alternation: a token is masked whole wherever it stands.
    let alternation: Vec<String> = TOKEN_PREFIXES
        .iter()
        .map(|(p, body, n)| format!("{p}{body}{{{n},}}"))
        .collect();
    table.insert(
        1,
        (
            format!(r"\b(?:{})", alternation.join("|")),
            Template("[REDACTED]"),
        ),
    );
    table
        .into_iter()
        .filter_map(|(re, with)| match Regex::new(&re) {
            Ok(re) => Some((re, with)),
            Err(e) => {
                debug_assert!(false, "secret pattern {re}: {e}");
                None
            }
        })
        .collect()
});

/// Number of patterns in the secret table (all must compile; a unit test checks).
#[cfg(test)]
const SECRET_PATTERNS: usize = 35;

/// Shannon entropy in bits per character: random tokens are above ~3.5, words and numbers
/// below it.
fn looks_random(s: &str) -> bool {
    if s.len() < 16 {
        return false;
    }
    let mut counts = [0u32; 256];
    for b in s.bytes() {
        counts[b as usize] += 1;
    }
    let n = s.len() as f64;
    let h: f64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum();
    let has_digit = s.bytes().any(|b| b.is_ascii_digit());
    let has_alpha = s.bytes().any(|b| b.is_ascii_alphabetic());
    h >= 3.5 && has_digit && has_alpha
}

/// A word that could be a password: six or more characters with a digit, mixed case or a
/// symbol (`hunter2`, `Tr0ub4dor`), not a plain word (`missing`, `incorrect`).
fn looks_secretish(s: &str) -> bool {
    let s = s.trim_end_matches(['.', ',', ';', ')']);
    s.chars().count() >= 6
        && (s.bytes().any(|b| b.is_ascii_digit())
            || (s.bytes().any(|b| b.is_ascii_uppercase())
                && s.bytes().skip(1).any(|b| b.is_ascii_lowercase())
                && s.bytes().skip(1).any(|b| b.is_ascii_uppercase()))
            || s.bytes()
                .any(|b| b.is_ascii_punctuation() && b != b'-' && b != b'_'))
}

/// A value that says a setting is unset or off (`None`, `true`, `***`), never a secret itself:
/// `use_auth_token=True` and `hub_token=None` stay as they are.
fn is_placeholder(v: &str) -> bool {
    let v = v.trim().trim_matches(['\'', '"']);
    v.is_empty()
        || v.starts_with("[REDACTED")
        || v.bytes().all(|b| b == b'*')
        || [
            "true", "false", "none", "null", "nil", "yes", "no", "on", "off", "unset", "disabled",
            "enabled",
        ]
        .iter()
        .any(|w| v.eq_ignore_ascii_case(w))
}

/// A file path (`/home/u`, `~/x`, `./x`, `C:\x`, `$HOME`): what `PWD=` holds.
fn looks_like_path(v: &str) -> bool {
    let b = v.as_bytes();
    matches!(b.first(), Some(b'/' | b'~' | b'.' | b'$' | b'\\'))
        || (b.len() > 2
            && b[0].is_ascii_alphabetic()
            && b[1] == b':'
            && matches!(b[2], b'\\' | b'/'))
}

/// `Rewrite::Keyed`: each match whose `key` names a secret (`is_secret_name`), with a value
/// that is not a placeholder, is rewritten by `template`; after any other key the search goes
/// on from the end of that key, so a secret-named key inside its value is still found.
fn replace_keyed(re: &Regex, s: &str, template: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let (mut last, mut at) = (0, 0);
    while at <= s.len() {
        let Some(c) = re.captures_at(s, at) else {
            break;
        };
        let (Some(m), Some(key)) = (c.get(0), c.name("key")) else {
            break;
        };
        let value = &s[c.get(1).map_or(m.end(), |g| g.end())..m.end()];
        if is_secret_name(key.as_str()) && !is_placeholder(value) {
            out.push_str(&s[last..m.start()]);
            c.expand(template, &mut out);
            last = m.end();
            at = m.end().max(key.end());
        } else {
            at = key.end();
        }
    }
    out.push_str(&s[last..]);
    out
}

static IPV4: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"\b(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}\b").ok()
});

/// Host names the report did not attribute, for `--redact=hosts`: the value of a rendezvous
/// setting (`MASTER_ADDR=…`, `--master_addr …`, `--rdzv_endpoint host:port`), a fully
/// qualified name (a public or a site-local suffix), a cluster-style name (`gpu-node-042`,
/// `node18`, `trainmaster-7`), and an IPv6 address.
static HOST_SHAPES: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r#"(?i)(?:\bmaster[_-]addr(?:ess)?|--rdzv[_-]endpoint|--master-addr)['"]?(?:\s*[=:]\s*|\s+)['"]?([A-Za-z0-9][A-Za-z0-9.-]*[A-Za-z0-9])"#,
        r"(?i)\b((?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+(?:com|net|org|io|ai|cloud|internal|lan|corp|cluster|svc|intra|intranet|edu|gov|example|localdomain))\b",
        r"(?i)\b((?:[a-z][a-z0-9]*-)*(?:node|gpu|host|worker|compute|dgx|hgx|srv|server|trainer|trainmaster|master|login)[a-z]*-?[0-9]+(?:-[a-z0-9]+)*)\b",
        r"(?i)(?:^|[^0-9a-z:])((?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}|(?:[0-9a-f]{1,4}:){1,6}:(?:[0-9a-f]{1,4}:){0,5}[0-9a-f]{1,4})\b",
    ]
    .iter()
    .filter_map(|re| Regex::new(re).ok())
    .collect()
});

/// A cluster-style name worth masking: with a dash or two digits (`gpu0` is a device), and
/// not one of our own masks (`host-3`, `ip-2`, `user-1`).
fn host_worth_masking(h: &str) -> bool {
    let own = ["host-", "ip-", "user-"].iter().any(|p| {
        h.strip_prefix(p)
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
    });
    let digits = h.bytes().rev().take_while(u8::is_ascii_digit).count();
    !own && (h.contains('-') || h.contains('.') || h.contains(':') || digits >= 2)
}

static USER_PATH: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"/(home|Users|users|scratch|work)/([A-Za-z0-9._-]+)").ok());

// ---- Which names name a secret: the one definition ----
//
// A name (an environment variable, a flag, a config or JSON key, a `key=value` in a log line)
// names a secret when one of its segments (split on `_`, `-`, `.`, case ignored) is a secret
// word, and no segment after the last such word says the value is only about the secret
// (`password_min_length`, `auth_type`, `token_count`). `is_secret_name` decides it for every
// reader: the text redactor's key rules (`Rewrite::Keyed`), settings in `diff`, facts,
// environment dumps, argv, history URLs. There is no second list.

/// Segments that are a secret word wherever they stand (`REDIS_AUTH`, `HF_TOKEN`, `SECRET_KEY_BASE`).
const SECRET_SEGMENTS: &[&str] = &[
    "APIKEY",
    "AUTH",
    "COOKIE",
    "CREDENTIAL",
    "CREDENTIALS",
    "DSN",
    "KEY",
    "PASSPHRASE",
    "PASSWD",
    "PASSWORD",
    "PRIVATE",
    "SECRET",
    "SIGNATURE",
    "TOKEN",
];

/// Segments that are a secret word only after another segment (`NCCL_PASS`, `MYSQL_PWD`,
/// `AZURE_DEVOPS_PAT`, `AWS_CREDS`): alone, `PWD` is the working directory and `pass` a verb.
const LATER_SEGMENTS: &[&str] = &["PASS", "PWD", "PAT", "CREDS"];

/// Endings that make one segment a secret word (`HFTOKEN`, `PGPASS`, `DBPASSWORD`, `_authToken`).
const SECRET_ENDINGS: &[&str] = &["TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "PASS"];

/// Segments that end like a secret word but are not one (`NCCL_IB_PKEY` is an InfiniBand
/// partition, `PRNGKey` a JAX random key, a `lowpass` a filter).
const NOT_SECRET: &[&str] = &[
    "PKEY",
    "MONKEY",
    "HOTKEY",
    "PRNGKEY",
    "TURKEY",
    "DONKEY",
    "WHISKEY",
    "BYPASS",
    "COMPASS",
    "SURPASS",
    "TRESPASS",
    "ENCOMPASS",
    "OVERPASS",
    "UNDERPASS",
    "LOWPASS",
    "HIGHPASS",
    "BANDPASS",
    "ALLPASS",
    "MULTIPASS",
];

/// Words that, just before `KEY` or `TOKEN`, make it a data or vocabulary name, not a
/// credential: a dataset's `text_key`, a table's `sort_key`, a tokenizer's `pad_token`.
const NOT_SECRET_BEFORE: &[&str] = &[
    // Data and databases.
    "SORT",
    "PRIMARY",
    "FOREIGN",
    "PARTITION",
    "CACHE",
    "GROUP",
    "SHARD",
    "ROUTING",
    "LOOKUP",
    "INDEX",
    "HASH",
    "DICT",
    "MAP",
    "JOIN",
    "UNIQUE",
    "COMPOSITE",
    "SEARCH",
    "OBJECT",
    "ROW",
    "COLUMN",
    "FIELD",
    "PUBLIC",
    "PUB",
    // Datasets and training loops.
    "TEXT",
    "LABEL",
    "LABELS",
    "INPUT",
    "OUTPUT",
    "TARGET",
    "IMAGE",
    "PROMPT",
    "RESPONSE",
    "FEATURE",
    "DATASET",
    "METRIC",
    "REWARD",
    "QUERY",
    "ANSWER",
    "CONTEXT",
    "CHOSEN",
    "REJECTED",
    "AUDIO",
    "VIDEO",
    "BATCH",
    "SAMPLE",
    "RNG",
    "PRNG",
    "SEED",
    "DROPOUT",
    "LOSS",
    // A tokenizer's special tokens.
    "PAD",
    "EOS",
    "BOS",
    "UNK",
    "SEP",
    "CLS",
    "MASK",
    "SPECIAL",
    "START",
    "END",
    "STOP",
    "IM",
    "VISION",
    "DECODER",
    "EOT",
    "EOD",
    "FIM",
];

/// Words that, after the last secret word of a name, say its value is about the secret and
/// not the secret (`password_min_length=8`, `auth_type=none`, `token_count`, `KEY_PATH`,
/// `SECRET_NAME`): its value is shown. Any other word keeps it a secret (`SECRET_KEY_BASE`,
/// `SECRET_KEY_SALT`, `JWT_SECRET_KEY_V2`, `DB_PASSWORD_PROD`).
const ABOUT_THE_SECRET: &[&str] = &[
    "TYPE",
    "TYPES",
    "KIND",
    "MODE",
    "METHOD",
    "METHODS",
    "SCHEME",
    "LEN",
    "LENGTH",
    "MIN",
    "MAX",
    "SIZE",
    "BITS",
    "COUNT",
    "NUM",
    "LIMIT",
    "TTL",
    "EXPIRY",
    "EXPIRES",
    "EXPIRATION",
    "TIMEOUT",
    "LIFETIME",
    "INTERVAL",
    "FILE",
    "PATH",
    "DIR",
    "FILENAME",
    "NAME",
    "ID",
    "URL",
    "URI",
    "ENDPOINT",
    "HOST",
    "PORT",
    "HEADER",
    "PROVIDER",
    "BACKEND",
    "ENABLED",
    "DISABLED",
    "ENABLE",
    "DISABLE",
    "REQUIRED",
    "POLICY",
    "FORMAT",
    "ALGORITHM",
    "ALG",
    "VERSION",
    "PREFIX",
    "LOCATION",
    "REGION",
];

/// Is a variable, flag or key name one whose whole value is a secret (`HF_TOKEN`,
/// `WANDB_API_KEY`, `--hub-token`, `SENTRY_DSN`, `REDIS_AUTH`, `PGPASS`, `SECRET_KEY_BASE`)?
/// `TOKENIZERS_PARALLELISM`, `AUTHOR`, `auth_type`, `password_min_length` and `sort_key` are
/// not. The one definition (see above).
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.trim_start_matches('-').to_ascii_uppercase();
    let segs: Vec<&str> = upper
        .split(['_', '-', '.'])
        .filter(|s| !s.is_empty())
        .collect();
    let secret_word = |i: usize| {
        let seg = segs[i];
        let word = !NOT_SECRET.contains(&seg)
            && (SECRET_SEGMENTS.contains(&seg)
                || (i > 0 && LATER_SEGMENTS.contains(&seg))
                || SECRET_ENDINGS
                    .iter()
                    .any(|e| seg.len() > e.len() && seg.ends_with(e)));
        // `KEY` alone is too plain a word (`key=value`): its value is masked only when it
        // looks random (`Rewrite::IfRandom`, `is_opaque_token`).
        word && !(seg == "KEY" && segs.len() == 1)
            && !(matches!(seg, "KEY" | "TOKEN")
                && i > 0
                && NOT_SECRET_BEFORE.contains(&segs[i - 1]))
    };
    match (0..segs.len()).rev().find(|&i| secret_word(i)) {
        Some(i) => !segs[i + 1..].iter().any(|s| ABOUT_THE_SECRET.contains(s)),
        None => false,
    }
}

/// A whole token that is opaque enough to be a credential wherever it stands: 32+ hex digits,
/// or 32+ base64/base64url characters mixing upper case, lower case and digits. Only for
/// values that are settings (environment variables, argv): in log text a 40-hex string is
/// usually a commit or a build id, so `Redactor::text` does not use this.
fn is_opaque_token(tok: &str) -> bool {
    if tok.len() < 32 {
        return false;
    }
    if tok.chars().all(|c| c.is_ascii_hexdigit()) {
        return true;
    }
    // A UUID (`GPU-8f3c…`, `MIG-…` in CUDA_VISIBLE_DEVICES) is dash-separated hex; a path has
    // slashes; a word has no digits.
    let uuid_like = tok
        .trim_start_matches("GPU-")
        .trim_start_matches("MIG-")
        .split('-')
        .all(|g| !g.is_empty() && g.chars().all(|c| c.is_ascii_hexdigit()));
    !uuid_like
        && tok
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '_' | '-'))
        && tok.chars().any(|c| c.is_ascii_uppercase())
        && tok.chars().any(|c| c.is_ascii_lowercase())
        && tok.chars().any(|c| c.is_ascii_digit())
}

/// A command line, argument by argument: the value after a secret-named flag (`--hub_token X`,
/// `--api-key=X`) is masked, and every argument goes through the setting-value rules.
pub fn argv(args: &[String]) -> Vec<String> {
    let mut r = Redactor::new(Options::default());
    let mut out = Vec::with_capacity(args.len());
    let mut hide_next = false;
    for a in args {
        if std::mem::take(&mut hide_next) && !a.starts_with('-') {
            out.push(MASK.to_string());
            continue;
        }
        if a.starts_with('-') {
            if let Some((flag, _)) = a.split_once('=')
                && is_secret_name(flag)
            {
                out.push(format!("{flag}={MASK}"));
                continue;
            }
            hide_next = !a.contains('=') && is_secret_name(a);
        }
        out.push(r.env_value("", a));
    }
    out
}

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
            if !re.is_match(&out) {
                continue;
            }
            out = match with {
                Rewrite::Template(t) => re.replace_all(&out, *t).into_owned(),
                Rewrite::Keyed(t) => replace_keyed(re, &out, t),
                Rewrite::IfRandom | Rewrite::IfSecretish | Rewrite::IfNotPath => re
                    .replace_all(&out, |c: &regex::Captures| {
                        let (all, v) = (&c[0], &c[2]);
                        if with.hides(v) && !v.starts_with("[REDACTED") {
                            // What follows the value in the match (a `;`) is kept.
                            let after = c
                                .get(2)
                                .map_or(all.len(), |g| g.end() - c.get(0).map_or(0, |m| m.start()));
                            format!("{}{MASK}{}", &c[1], &all[after..])
                        } else {
                            all.to_string()
                        }
                    })
                    .into_owned(),
            };
        }
        if self.options.hosts {
            // Longest first, so `node12` is not masked as `host-1` + `2`.
            let mut known: Vec<(&String, &String)> = self.hosts.iter().collect();
            known.sort_by_key(|(h, _)| std::cmp::Reverse(h.len()));
            for (h, mask) in known {
                out = out.replace(h.as_str(), mask);
            }
            for re in HOST_SHAPES.iter() {
                let hosts = &mut self.hosts;
                out = re
                    .replace_all(&out, |c: &regex::Captures| {
                        let (Some(all), Some(h)) = (c.get(0), c.get(1)) else {
                            return String::new();
                        };
                        let name = h.as_str();
                        if !host_worth_masking(name) {
                            return all.as_str().to_string();
                        }
                        let n = hosts.len() + 1;
                        let mask = hosts
                            .entry(name.to_string())
                            .or_insert_with(|| format!("host-{n}"))
                            .clone();
                        let a = all.as_str();
                        let (s, e) = (h.start() - all.start(), h.end() - all.start());
                        format!("{}{mask}{}", &a[..s], &a[e..])
                    })
                    .into_owned();
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

    /// A named value (a fact, an environment variable): masked whole when the name names a
    /// secret, else redacted as text.
    pub fn value_of(&mut self, name: &str, value: &str) -> String {
        if is_secret_name(name) && !value.trim().is_empty() {
            return MASK.to_string();
        }
        let joined = format!("{name}={value}");
        let out = self.text(&joined);
        match out.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
            Some(v) => v.to_string(),
            None => self.text(value),
        }
    }

    /// The value of a setting (an environment variable, a command-line argument) for a capture
    /// file: masked whole when its name names a secret, else its opaque tokens masked and the
    /// rest redacted as text.
    pub fn env_value(&mut self, name: &str, value: &str) -> String {
        if !name.is_empty() && is_secret_name(name) {
            return MASK.to_string();
        }
        let mut out = String::with_capacity(value.len());
        let mut rest = value;
        while !rest.is_empty() {
            let end = rest
                .find(|c: char| {
                    c.is_whitespace() || matches!(c, ',' | ';' | '"' | '\'' | '=' | ':')
                })
                .unwrap_or(rest.len());
            let (tok, tail) = rest.split_at(end);
            out.push_str(if is_opaque_token(tok) { MASK } else { tok });
            let sep = tail.chars().next().map_or(0, char::len_utf8);
            out.push_str(&tail[..sep]);
            rest = &tail[sep..];
        }
        self.text(&out)
    }

    /// Redact every string inside a JSON value, keys excepted (they are the schema). A named
    /// value (a fact's `{"name", "value"}`, a difference's `{"key", "good", "bad"}`) is masked
    /// whole when its name names a secret, whatever the value looks like.
    pub fn json(&mut self, v: &mut serde_json::Value) {
        match v {
            serde_json::Value::String(s) => {
                let r = self.text(s);
                *s = r;
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(|x| self.json(x)),
            serde_json::Value::Object(o) => {
                let named = ["name", "key"]
                    .iter()
                    .find_map(|k| o.get(*k).and_then(|n| n.as_str()))
                    .is_some_and(is_secret_name);
                if named {
                    for k in ["value", "good", "bad"] {
                        if let Some(serde_json::Value::String(s)) = o.get_mut(k)
                            && !s.is_empty()
                        {
                            *s = MASK.to_string();
                        }
                    }
                }
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
        assert_eq!(SECRETS.len(), SECRET_PATTERNS);
        assert!(IPV4.is_some() && USER_PATH.is_some());
        assert_eq!(HOST_SHAPES.len(), 4);
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

    /// Host names no finding attributed: inside log lines, fully qualified, as the rendezvous
    /// address, and IPv6 (`--redact=hosts`); our own masks and ordinary words stay.
    #[test]
    fn unattributed_hosts_are_masked() {
        let mut r = Redactor::new(Options {
            hosts: true,
            paths: false,
        });
        let line = "MASTER_ADDR=trainmaster-7.corp.example.com gpu-node-042 node18 \
                    worker on n1.cluster.internal fe80::1ff:fe23:4567:890a [2001:db8::8a2e:370:7334]:29500";
        let out = r.text(line);
        for leak in [
            "trainmaster",
            "gpu-node",
            "node18",
            "n1.cluster",
            "fe80",
            "2001:db8",
        ] {
            assert!(!out.contains(leak), "{leak} in {out}");
        }
        assert!(out.starts_with("MASTER_ADDR=host-"), "{out}");
        assert_eq!(r.text(&out), out, "not idempotent");
        let plain = "c10::Error at torch.distributed.elastic gpu0 rank 12:34:56 step-3 host-2";
        assert_eq!(r.text(plain), plain);
    }

    /// Every form a secret reaches a log in, from the issue's findings: each planted value
    /// must vanish and its key must stay (so the reader still sees what was there).
    #[test]
    fn every_form_of_a_secret_named_argument_is_masked() {
        let cases = [
            (
                "args: ['train.py', '--password', 'PLANTaa1'] x",
                "'--password', '",
            ),
            (
                "['--hub_token', 'PLANTbb2', '--lr', '1e-4']",
                "'--hub_token', '",
            ),
            (
                "[\"--wandb_api_key\", \"PLANTcc3\"]",
                "\"--wandb_api_key\", \"",
            ),
            (
                "python train.py --hub_token PLANTdd4 --lr 3",
                "--hub_token ",
            ),
            (
                "python train.py --hub_token=PLANTee5 --lr 3",
                "--hub_token=",
            ),
            ("hub_token PLANTff6", "hub_token "),
            ("HF_TOKEN PLANTgg7", "HF_TOKEN "),
            ("db_password: PLANThh8", "db_password: "),
            ("{\"api_key\": \"PLANTii9\"}", "\"api_key\": \""),
            (
                "WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567",
                "WANDB_API_KEY=",
            ),
            (
                "wandb login --relogin fedcba9876543210fedcba9876543210fedcba98",
                "wandb login",
            ),
            (
                "https://a.blob.core.windows.net/c?sv=2020&sig=PLANTjj0%3D&se=1",
                "&sig=",
            ),
            (
                "dsn https://0123456789abcdef0123456789abcdef@o1.ingest.sentry.io/4",
                "https://",
            ),
            ("MY_KEY=Zq8xW2vR9tL4mN7bK1pS", "MY_KEY="),
        ];
        let mut r = Redactor::new(Options::default());
        for (line, kept) in cases {
            let out = r.text(line);
            for leak in [
                "PLANT",
                "0123456789abcdef01",
                "fedcba9876543210",
                "Zq8xW2vR9",
            ] {
                assert!(!out.contains(leak), "{leak} leaked from {line:?}: {out:?}");
            }
            assert!(out.contains(kept), "{kept:?} lost from {line:?}: {out:?}");
            assert_eq!(r.text(&out), out, "redaction is not idempotent on {out:?}");
        }
    }

    /// The shapes audit round 3 saw leak after its fixes (F-6), and their harmless siblings:
    /// each secret vanishes with its key kept; each harmless line stays as it was.
    #[test]
    fn audit_round_3_residue_is_masked_and_its_siblings_stay() {
        let mut r = Redactor::new(Options::default());
        for (line, kept) in [
            ("REDIS_AUTH=Tr0ub4dorPLNT", "REDIS_AUTH="),
            ("NCCL_AUTH=plainPLNT", "NCCL_AUTH="),
            ("SECRET_KEY_BASE=plainPLNT", "SECRET_KEY_BASE="),
            ("SECRET_KEY_SALT=plainPLNT", "SECRET_KEY_SALT="),
            ("JWT_SECRET_KEY_V2=plainPLNT", "JWT_SECRET_KEY_V2="),
            ("PGPASS=plainPLNT psql", "PGPASS="),
            (
                "Driver={ODBC 18};Server=db;Uid=sa;Pwd=Tr0ubPLNT;Encrypt=yes",
                "Pwd=",
            ),
            ("Server=db;User ID=sa;Password=a horse PLNT;", "Password="),
            ("Server=db;Uid=sa;pwd=Tr0ubPLNT", "pwd="),
            ("password=Tr0ubPLNT;MorePLNT", "password="),
            ("pwd=Tr0ubPLNT;MorePLNT", "pwd="),
            ("password=Tr0ubPLNT;Server=db", "Server=db"),
            ("password plainPLNT", "password "),
            ("  password Tr0ub4dorPLNT", "password "),
            ("fetch https:/bob:PLNTpw@minio.internal/b", "https:/"),
            ("env: HF_TOKEN=PLNTvalue1", "HF_TOKEN="),
            ("pgpass: PLNTvalue2", "pgpass: "),
            ("auth: PLNTvalue3", "auth: "),
        ] {
            let out = r.text(line);
            assert!(!out.contains("PLNT"), "leaked from {line:?}: {out:?}");
            assert!(out.contains(kept), "{kept:?} lost from {line:?}: {out:?}");
            assert_eq!(r.text(&out), out, "not idempotent on {out:?}");
        }
        for line in [
            "AUTHOR=alice",
            "auth_type=none",
            "auth_mode: password",
            "password_min_length=8",
            "token_count=4096",
            "pad_token=<pad> eos_token_id=2",
            "use_auth_token=True hub_token=None",
            "text_key=text label_key=labels",
            "PWD=/home/alice/run pwd=/tmp",
            "FATAL: password authentication failed for user tw",
            "bypass=1 lowpass=0.3",
            "SECRET_NAME=hf-creds KEY_PATH=/etc/ssl/k.pem",
        ] {
            assert_eq!(r.text(line), line);
        }
    }

    #[test]
    fn one_definition_of_a_secret_name() {
        for n in [
            "HF_TOKEN",
            "REDIS_AUTH",
            "NCCL_AUTH",
            "SECRET_KEY_BASE",
            "JWT_SECRET_KEY_V2",
            "PGPASS",
            "pgpass",
            "NCCL_PASS",
            "MYSQL_PWD",
            "--hub-token",
            "db.password",
            "_authToken",
            "WANDB_API_KEY",
            "MY_SERVICE_KEY",
            "DB_PASSWORD_PROD",
        ] {
            assert!(is_secret_name(n), "{n}");
        }
        for n in [
            "AUTHOR",
            "auth_type",
            "password_min_length",
            "token_count",
            "TOKENIZERS_PARALLELISM",
            "PWD",
            "NCCL_IB_PKEY",
            "sort_key",
            "pad_token",
            "key",
            "PASS",
            "max_tokens",
            "BYPASS",
        ] {
            assert!(!is_secret_name(n), "{n}");
        }
    }

    #[test]
    fn ordinary_text_is_left_alone() {
        let mut r = Redactor::new(Options::default());
        for line in [
            "the tokenizer failed to load vocab.json",
            "api_key is missing",
            "--password --hub_token",
            "num_tokens=4096 max_tokens: 8192",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
            "git commit 0123456789abcdef0123456789abcdef01234567",
            "monkey=banana sort_key=name",
        ] {
            assert_eq!(r.text(line), line);
        }
    }
}
