//! Environment and version dumps: `env`, `pip list`/`pip freeze`, `python -m torch.utils.collect_env`,
//! `ds_report` → versions of torch, CUDA, NCCL, DeepSpeed, the driver, and the env vars that steer
//! distributed training (`env.<NAME>`), and the job ids of schedulers and CI (`env.SLURM_JOB_ID`,
//! …: the history's `job`). Only allow-listed variables are kept: never secrets.

use super::{FactOut, FactParser};
use crate::fact_names;
use crate::model::Fact;

/// Variables recorded as `env.<NAME>`: by prefix, or exactly.
const ENV_PREFIXES: &[&str] = &[
    "NCCL_",
    "TORCH_",
    "TORCHELASTIC_",
    "PYTORCH_",
    "CUDA_",
    "CUDNN_",
    "NVIDIA_",
    "OMP_",
    "UCX_",
    "GLOO_",
    "FI_",
    "DS_",
    "ACCELERATE_",
    "HF_DATASETS_",
];
const ENV_EXACT: &[&str] = &[
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "RANK",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "NODE_RANK",
    "LD_LIBRARY_PATH",
];

/// pip package name (normalized: lowercase, `_` → `-`) → fact.
fn package_fact(pkg: &str) -> Option<&'static str> {
    let p = pkg.to_ascii_lowercase().replace('_', "-");
    Some(match p.as_str() {
        "torch" => "version.torch",
        "deepspeed" => "version.deepspeed",
        "transformers" => "version.transformers",
        "accelerate" => "version.accelerate",
        "triton" | "pytorch-triton" => "version.triton",
        "flash-attn" => "version.flash_attn",
        p if p.starts_with("nvidia-nccl-cu") => "version.nccl",
        _ => return None,
    })
}

/// `collect_env` and `ds_report` labels → fact.
const LABELS: &[(&str, &str)] = &[
    ("PyTorch version", "version.torch"),
    ("CUDA used to build PyTorch", "version.torch_cuda"),
    ("CUDA runtime version", "version.cuda_runtime"),
    ("Nvidia driver version", "version.driver"),
    ("Python version", "version.python"),
    ("torch version", "version.torch"),
    ("torch cuda version", "version.torch_cuda"),
    ("deepspeed info", "version.deepspeed"),
    ("nvcc version", "version.cuda_toolkit"),
];

#[derive(Default)]
pub struct EnvDumpParser {
    in_pip_list: bool,
}

fn first_word(s: &str) -> &str {
    s.split([' ', ',']).find(|w| !w.is_empty()).unwrap_or("")
}

impl FactParser for EnvDumpParser {
    fn line(&mut self, lineno: u64, line: &str, out: &mut FactOut) {
        let t = line.trim();
        if t.is_empty() {
            return;
        }
        if t.starts_with("Package ") && t.contains("Version") {
            self.in_pip_list = true;
            return;
        }
        if t.starts_with("---") {
            return;
        }
        // `[pip3] torch==2.1.0` (collect_env), `torch==2.1.0` (freeze).
        let freeze = t
            .strip_prefix("[pip3] ")
            .or_else(|| t.strip_prefix("[pip] "))
            .or_else(|| t.strip_prefix("[conda] "))
            .unwrap_or(t);
        if let Some((pkg, ver)) = freeze.split_once("==") {
            if let Some(f) = package_fact(pkg.trim()) {
                out.facts
                    .push(Fact::new(f, first_word(ver)).at(lineno, line));
            }
            return;
        }
        if let Some((name, value)) = t.split_once('=')
            && !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        {
            let keep = (ENV_PREFIXES.iter().any(|p| name.starts_with(p))
                || ENV_EXACT.contains(&name)
                || fact_names::JOB_VARIABLES.contains(&name))
                // A secret-named variable is never a fact, even under an allowed prefix:
                // which names are secrets is decided by `redact` alone (one list).
                && !crate::redact::is_secret_name(name);
            if keep {
                out.facts
                    .push(Fact::new(fact_names::env(name), value).at(lineno, line));
            }
            return;
        }
        for (label, fact) in LABELS {
            if let Some(rest) = t.strip_prefix(label) {
                // `Label: value` (collect_env) or `label ....... value` (ds_report).
                let v = rest.trim_start_matches([':', ' ', '.']).trim();
                if !v.is_empty()
                    && rest.starts_with([':', ' '])
                    && v != "N/A"
                    && v != "None"
                    && v != "Could not collect"
                {
                    out.facts
                        .push(Fact::new(*fact, first_word(v)).at(lineno, line));
                }
                return;
            }
        }
        if let Some(pos) = t.find("NCCL version ") {
            let v = first_word(&t[pos + "NCCL version ".len()..]);
            if v.starts_with(|c: char| c.is_ascii_digit()) {
                out.facts.push(
                    Fact::new("version.nccl", v.split('+').next().unwrap_or(v)).at(lineno, line),
                );
            }
            return;
        }
        if self.in_pip_list {
            let mut it = t.split_whitespace();
            if let (Some(pkg), Some(ver)) = (it.next(), it.next())
                && let Some(f) = package_fact(pkg)
            {
                out.facts.push(Fact::new(f, ver).at(lineno, line));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::model::FactValue;
    use crate::sources::SourceKind;
    use crate::sources::{FactOut, parse_text};

    fn get<'a>(out: &'a FactOut, name: &str) -> Option<&'a FactValue> {
        out.facts.iter().find(|f| f.name == name).map(|f| &f.value)
    }

    #[test]
    fn env_keeps_only_training_variables_and_no_secrets() {
        let out = parse_text(
            SourceKind::EnvDump,
            "env.txt",
            "HOME=/root\nNCCL_DEBUG=INFO\nNCCL_IB_TOKEN_X=1\nMASTER_PORT=29500\nAWS_SECRET_ACCESS_KEY=x\n",
        );
        let names: Vec<&str> = out.facts.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["env.NCCL_DEBUG", "env.MASTER_PORT"]);
    }

    #[test]
    fn collect_env_pip_list_and_ds_report() {
        let out = parse_text(
            SourceKind::EnvDump,
            "collect_env.txt",
            "PyTorch version: 2.1.0+cu121\nCUDA used to build PyTorch: 12.1\nNvidia driver version: 535.104.05\n[pip3] nvidia-nccl-cu12==2.18.1\n",
        );
        assert_eq!(
            get(&out, "version.torch"),
            Some(&FactValue::Text("2.1.0+cu121".into()))
        );
        assert_eq!(
            get(&out, "version.driver"),
            Some(&FactValue::Text("535.104.05".into()))
        );
        assert_eq!(
            get(&out, "version.nccl"),
            Some(&FactValue::Text("2.18.1".into()))
        );
        let out = parse_text(
            SourceKind::EnvDump,
            "ds_report.txt",
            "deepspeed info ................... 0.19.8, unknown, unknown\ntorch version .................... 2.11.0+cu130\n",
        );
        assert_eq!(
            get(&out, "version.deepspeed"),
            Some(&FactValue::Text("0.19.8".into()))
        );
        let out = parse_text(
            SourceKind::EnvDump,
            "pip-list.txt",
            "Package    Version\n---------- -------\ntorch      2.11.0\nDeepSpeed  0.19.8\n",
        );
        assert_eq!(
            get(&out, "version.torch"),
            Some(&FactValue::Text("2.11.0".into()))
        );
        assert_eq!(
            get(&out, "version.deepspeed"),
            Some(&FactValue::Text("0.19.8".into()))
        );
    }
}
