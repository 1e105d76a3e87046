//! The training-relevant part of the environment, with secrets redacted, for `environment.txt`
//! and the recorded command line. Captures are pasted into tickets and CI summaries, so a token
//! must never reach a file: redact by variable name and by the shape of the value.

use std::ffi::OsString;

/// Variables kept: launcher, NCCL, CUDA, threading, scheduler and Python settings.
const PREFIXES: &[&str] = &[
    "ACCELERATE_",
    "CUBLAS_",
    "CUDA_",
    "CUDNN_",
    "DEEPSPEED_",
    "DS_",
    "FI_",
    "HF_",
    "HUGGINGFACE_",
    "KUBERNETES_",
    "MASTER_",
    "MKL_",
    "NCCL_",
    "NVIDIA_",
    "NVTE_",
    "OMPI_",
    "OMP_",
    "PMIX_",
    "PYTHON",
    "PYTORCH_",
    "SLURM_",
    "TORCHELASTIC_",
    "TORCHINDUCTOR_",
    "TORCH_",
    "TRANSFORMERS_",
    "TRITON_",
    "UCX_",
    "WANDB_",
    "XLA_",
];

const EXACT: &[&str] = &[
    "CONDA_DEFAULT_ENV",
    "CONDA_PREFIX",
    "GROUP_RANK",
    "HOSTNAME",
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "NODE_RANK",
    "PATH",
    "RANK",
    "ROLE_RANK",
    "TOKENIZERS_PARALLELISM",
    "VIRTUAL_ENV",
    "WORLD_SIZE",
];

/// Name segments (split on `_`) that mark a secret, also as a suffix (`HFTOKEN`).
const SECRET_SEGMENTS: &[&str] = &[
    "APIKEY",
    "AUTH",
    "COOKIE",
    "CREDENTIAL",
    "CREDENTIALS",
    "KEY",
    "PASS",
    "PASSWD",
    "PASSWORD",
    "PRIVATE",
    "SECRET",
    "SIGNATURE",
    "TOKEN",
];

/// Segments that end like a secret but are not one (`NCCL_IB_PKEY` is an InfiniBand partition).
const NOT_SECRET: &[&str] = &["PKEY", "MONKEY", "HOTKEY"];

pub const REDACTED: &str = "***REDACTED***";

/// Is a variable or flag name one whose value is a secret (`HF_TOKEN`, `WANDB_API_KEY`,
/// `--hub-token`)? `TOKENIZERS_PARALLELISM` is not.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.trim_start_matches('-').to_ascii_uppercase();
    upper
        .split(['_', '-', '.'])
        .filter(|s| !s.is_empty())
        .any(|seg| {
            SECRET_SEGMENTS.contains(&seg)
                || ["TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD"]
                    .iter()
                    .any(|suf| {
                        seg.ends_with(suf) && seg.len() > suf.len() && !NOT_SECRET.contains(&seg)
                    })
        })
}

/// A value with secret-shaped parts replaced: known token prefixes (`hf_`, `ghp_`, `AKIA`…),
/// long hex or base64 strings, JWTs, and the password of a URL's `user:pass@`.
pub fn redact_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut token = String::new();
    for c in value.chars() {
        if is_separator(c) {
            out.push_str(&redact_token(&token));
            token.clear();
            out.push(c);
        } else {
            token.push(c);
        }
    }
    out.push_str(&redact_token(&token));
    out
}

fn is_separator(c: char) -> bool {
    c.is_whitespace() || matches!(c, ',' | ';' | '"' | '\'' | '=')
}

fn redact_token(tok: &str) -> String {
    if tok.is_empty() {
        return String::new();
    }
    if let Some(url) = redact_url_password(tok) {
        return url;
    }
    if looks_like_secret(tok) {
        return REDACTED.to_string();
    }
    tok.to_string()
}

/// `scheme://user:pass@host…` → `scheme://user:***REDACTED***@host…`.
fn redact_url_password(tok: &str) -> Option<String> {
    let scheme_end = tok.find("://")? + 3;
    let rest = &tok[scheme_end..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let at = rest[..authority_end].rfind('@')?;
    let colon = rest[..at].find(':')?;
    Some(format!(
        "{}{}:{}{}",
        &tok[..scheme_end],
        &rest[..colon],
        REDACTED,
        &rest[at..]
    ))
}

fn looks_like_secret(tok: &str) -> bool {
    let known_prefix = [
        ("hf_", 20),
        ("ghp_", 20),
        ("gho_", 20),
        ("ghu_", 20),
        ("ghs_", 20),
        ("ghr_", 20),
        ("github_pat_", 20),
        ("glpat-", 16),
        ("sk-", 20),
        ("xoxb-", 10),
        ("xoxp-", 10),
        ("xoxa-", 10),
        ("AKIA", 16),
        ("ASIA", 16),
    ];
    for (p, min_rest) in known_prefix {
        if let Some(rest) = tok.strip_prefix(p)
            && rest.len() >= min_rest
            && rest
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return true;
        }
    }
    // JWT: three base64url parts, the first starting with `eyJ` (`{"`).
    if tok.starts_with("eyJ") && tok.split('.').count() == 3 && tok.len() > 30 {
        return true;
    }
    if tok.len() >= 32 && tok.chars().all(|c| c.is_ascii_hexdigit()) {
        return true;
    }
    // Long base64/base64url with mixed classes. A path has slashes; a word has no digits; a
    // UUID (`GPU-8f3c…`, `MIG-…` in CUDA_VISIBLE_DEVICES) is dash-separated hex.
    let uuid_like = tok
        .trim_start_matches("GPU-")
        .trim_start_matches("MIG-")
        .split('-')
        .all(|g| !g.is_empty() && g.chars().all(|c| c.is_ascii_hexdigit()));
    !uuid_like
        && tok.len() >= 32
        && !tok.contains('/')
        && tok
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '_' | '-'))
        && tok.chars().any(|c| c.is_ascii_uppercase())
        && tok.chars().any(|c| c.is_ascii_lowercase())
        && tok.chars().any(|c| c.is_ascii_digit())
}

/// Is this variable kept in `environment.txt`?
fn is_training_relevant(name: &str) -> bool {
    EXACT.contains(&name) || PREFIXES.iter().any(|p| name.starts_with(p)) || is_secret_name(name)
}

/// The kept variables as sorted `(name, value)` pairs, secrets redacted. Secret-named variables
/// are listed (that `HF_TOKEN` is set can matter) with their value hidden.
pub fn training_env(vars: impl IntoIterator<Item = (OsString, OsString)>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = vars
        .into_iter()
        .filter_map(|(k, v)| {
            let k = k.to_string_lossy().into_owned();
            if !is_training_relevant(&k) {
                return None;
            }
            let v = if is_secret_name(&k) {
                REDACTED.to_string()
            } else {
                redact_value(&v.to_string_lossy())
            };
            Some((k, v))
        })
        .collect();
    out.sort();
    out
}

/// A command line for the record: secret-shaped values redacted, and the value after a flag
/// named like a secret (`--hub_token X`, `--api-key=X`).
pub(crate) fn redact_argv(argv: &[OsString]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut hide_next = false;
    for a in argv {
        let a = a.to_string_lossy();
        if hide_next {
            out.push(REDACTED.to_string());
            hide_next = false;
            continue;
        }
        if a.starts_with('-') {
            if let Some((flag, _)) = a.split_once('=') {
                if is_secret_name(flag) {
                    out.push(format!("{flag}={REDACTED}"));
                    continue;
                }
            } else if is_secret_name(&a) {
                hide_next = true;
            }
        }
        out.push(redact_value(&a));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        training_env(pairs.iter().map(|(k, v)| (k.into(), v.into())))
    }

    #[test]
    fn secrets_are_redacted_by_name() {
        let e = env(&[
            ("HF_TOKEN", "abc"),
            ("WANDB_API_KEY", "x"),
            ("AWS_SECRET_ACCESS_KEY", "y"),
            ("MY_DB_PASSWORD", "z"),
            ("TOKENIZERS_PARALLELISM", "false"),
            ("NCCL_DEBUG", "INFO"),
            ("NCCL_IB_PKEY", "0x8001"),
            ("EDITOR", "vim"),
        ]);
        assert_eq!(
            e,
            vec![
                ("AWS_SECRET_ACCESS_KEY".into(), REDACTED.into()),
                ("HF_TOKEN".into(), REDACTED.into()),
                ("MY_DB_PASSWORD".into(), REDACTED.into()),
                ("NCCL_DEBUG".into(), "INFO".into()),
                ("NCCL_IB_PKEY".into(), "0x8001".into()),
                ("TOKENIZERS_PARALLELISM".into(), "false".into()),
                ("WANDB_API_KEY".into(), REDACTED.into()),
            ]
        );
    }

    #[test]
    fn secrets_are_redacted_by_value_shape() {
        assert_eq!(redact_value("hf_abcdefghijklmnopqrstuvwxyz12"), REDACTED);
        assert_eq!(
            redact_value("x ghp_0123456789abcdefghij0123456789 y"),
            format!("x {REDACTED} y")
        );
        assert_eq!(redact_value("AKIAIOSFODNN7EXAMPLE"), REDACTED);
        assert_eq!(
            redact_value("https://bob:hunter2@example.com/x"),
            format!("https://bob:{REDACTED}@example.com/x")
        );
        assert_eq!(redact_value("0123456789abcdef0123456789abcdef"), REDACTED);
        assert_eq!(
            redact_value("dGhpc0lzQVZlcnlMb25nU2VjcmV0VmFsdWUxMjM0NQ"),
            REDACTED
        );
        // Ordinary values survive.
        for v in [
            "INFO",
            "/usr/local/cuda/lib64:/usr/lib/x86_64-linux-gnu",
            "/sys/fs/cgroup/process_api/a6d3a978a36939facd9b5b298eaea3c7",
            "http://10.0.0.1:29500",
            "expandable_segments:True",
            "0,1,2,3",
            "GPU-8f3c2a1b-1234-5678-9abc-def012345678,GPU-00000000-1111-2222-3333-444444444444",
        ] {
            assert_eq!(redact_value(v), v, "{v}");
        }
    }

    #[test]
    fn flags_named_like_secrets_hide_their_values() {
        let argv: Vec<OsString> = [
            "train.py",
            "--hub_token",
            "abc",
            "--api-key=xyz",
            "--lr",
            "1e-4",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        assert_eq!(
            redact_argv(&argv),
            vec![
                "train.py".to_string(),
                "--hub_token".into(),
                REDACTED.into(),
                format!("--api-key={REDACTED}"),
                "--lr".into(),
                "1e-4".into()
            ]
        );
    }
}
