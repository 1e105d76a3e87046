//! The training-relevant part of the environment, with secrets redacted, for `environment.txt`
//! and the recorded command line. Captures are pasted into tickets and CI summaries, so a token
//! must never reach a file. Which names and values are secrets is decided by `redact` alone
//! (the one redactor every output uses); this module only picks the variables to keep.

use crate::redact::{self, Options, Redactor, is_secret_name};
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

/// Is this variable kept in `environment.txt`?
fn is_training_relevant(name: &str) -> bool {
    EXACT.contains(&name) || PREFIXES.iter().any(|p| name.starts_with(p)) || is_secret_name(name)
}

/// The kept variables as sorted `(name, value)` pairs, secrets redacted. Secret-named variables
/// are listed (that `HF_TOKEN` is set can matter) with their value hidden.
pub fn training_env(vars: impl IntoIterator<Item = (OsString, OsString)>) -> Vec<(String, String)> {
    let mut redactor = Redactor::new(Options::default());
    let mut out: Vec<(String, String)> = vars
        .into_iter()
        .filter_map(|(k, v)| {
            let k = k.to_string_lossy().into_owned();
            if !is_training_relevant(&k) {
                return None;
            }
            let v = redactor.env_value(&k, &v.to_string_lossy());
            Some((k, v))
        })
        .collect();
    out.sort();
    out
}

/// A command line for the record, through the report's redactor (`redact::argv`).
pub(crate) fn redact_argv(argv: &[OsString]) -> Vec<String> {
    let args: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    redact::argv(&args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::MASK as REDACTED;

    fn redact_value(v: &str) -> String {
        Redactor::new(Options::default()).env_value("VALUE", v)
    }

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
            format!("https://{REDACTED}@example.com/x")
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
