//! One run as the history keeps it, taken from the finished report (never from the logs):
//! its identity, when it failed, where, what the diagnosis said, and the report itself.

use super::backend::{Row, Value};
use crate::model::{Action, Verdict};
use crate::report::Report;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Where the failure started.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RecordOrigin {
    pub rank: Option<i64>,
    pub host: Option<String>,
    /// GPU index on its host.
    pub gpu: Option<i64>,
    pub gpu_uuid: Option<String>,
    pub pid: Option<i64>,
}

/// A GPU of the run, by UUID (the same GPU wherever it moves), with the host it was in.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RecordGpu {
    pub uuid: String,
    pub host: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunRecord {
    pub run_id: String,
    /// Time of failure from the logs (`YYYY-MM-DDTHH:MM:SS[Z]`, taken as UTC), if they tell.
    pub failed_at: Option<String>,
    /// When it was recorded (Unix seconds).
    pub recorded_at: i64,
    pub job: Option<String>,
    pub verdict: String,
    pub fingerprint: Option<String>,
    pub category: Option<String>,
    pub action: String,
    pub confidence: Option<f64>,
    pub rule: Option<String>,
    pub title: Option<String>,
    pub origin: RecordOrigin,
    pub hosts: Vec<String>,
    pub gpus: Vec<RecordGpu>,
    /// `version.*` facts without the prefix: torch, cuda_runtime, nccl, driver, deepspeed, …
    pub versions: BTreeMap<String, String>,
    /// The JSON report as printed by `analyze --format json`.
    pub report: serde_json::Value,
    /// Where the run's inputs are (absolute paths; none for stdin), for
    /// `analyze --baseline last-good` (schema version 2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<String>,
}

/// What the command line adds to a report: the paths given and overrides.
#[derive(Debug, Clone, Default)]
pub struct RecordContext {
    /// The paths the user gave (`-` for stdin), part of the run's identity.
    pub paths: Vec<String>,
    /// `--job`, else a scheduler's variables where the caller knows them.
    pub job: Option<String>,
    /// `--host`: the hosts the run ran on, replacing what the inputs name.
    pub hosts: Vec<String>,
    /// `--gpu UUID`: GPUs of the run, beside any the inputs name.
    pub gpus: Vec<String>,
    /// `--store-raw`: keep the report's secrets in the history.
    pub store_raw: bool,
}

pub use crate::fact_names::JOB_VARIABLES;

/// This machine's host name (what `trainwreck run` records the run under).
pub fn this_host() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
}

/// The first 32 hex digits of SHA-256 over the parts (each followed by a NUL).
pub fn hash_hex(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0u8]);
    }
    h.finalize()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The run's identity: where its inputs are (absolute paths), what they hold (each input's
/// path and size; for stdin or a FIFO, the digest of its bytes too), and the job and hosts
/// given. The same run recorded twice gets the same id;
/// a copy elsewhere, or the same path on another host given with `--host`, does not.
pub fn run_id(r: &Report, ctx: &RecordContext) -> String {
    let mut parts: Vec<String> = Vec::new();
    for p in &ctx.paths {
        let abs = if p == "-" {
            "-".to_string()
        } else {
            std::fs::canonicalize(p)
                .map(|a| a.display().to_string())
                .unwrap_or_else(|_| p.clone())
        };
        parts.push(format!("arg:{abs}"));
    }
    let mut inputs: Vec<String> = r
        .inputs
        .iter()
        .map(|i| match &i.digest {
            // A stream (stdin, a FIFO) has no path to tell two pastes apart: its bytes do.
            Some(d) => format!("in:{}:{}:{d}", i.path, i.bytes),
            None => format!("in:{}:{}", i.path, i.bytes),
        })
        .collect();
    inputs.sort();
    parts.extend(inputs);
    if ctx.paths.iter().any(|p| p == "-") {
        // Stdin has no path: what it said stands in.
        parts.push(format!("fp:{}", r.fingerprint.as_deref().unwrap_or("")));
    }
    if let Some(j) = &ctx.job {
        parts.push(format!("job:{j}"));
    }
    for h in &ctx.hosts {
        parts.push(format!("host:{h}"));
    }
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    hash_hex(&refs)
}

fn fact_text(r: &Report, name: &str) -> Option<String> {
    r.facts
        .iter()
        .find(|f| f.name == name)
        .map(|f| f.value.to_string())
        .filter(|v| !v.is_empty())
}

/// `time` (as findings and the timeline write it) → Unix seconds, UTC.
pub fn epoch(time: &str) -> Option<i64> {
    crate::sources::units::epoch_from_iso(time.trim()).map(|t| t as i64)
}

/// When the run failed, by its own logs: where the lead finding started, else its latest timed
/// evidence, else the timeline's last event; `None` when the logs carry no time.
pub fn failure_time(r: &Report) -> Option<String> {
    let lead = r.top().or(r.findings.first());
    lead.and_then(|f| {
        f.origin.time.clone().or_else(|| {
            f.evidence
                .iter()
                .filter_map(|e| e.time.clone())
                .filter(|t| epoch(t).is_some())
                .max()
        })
    })
    .filter(|t| epoch(t).is_some())
    .or_else(|| {
        r.timeline
            .events
            .iter()
            .filter_map(|e| e.t)
            .fold(None, |m: Option<f64>, t| Some(m.map_or(t, |m| m.max(t))))
            .and_then(crate::sources::units::iso_from_epoch)
    })
}

impl RunRecord {
    pub fn from_report(r: &Report, ctx: &RecordContext, recorded_at: i64) -> RunRecord {
        let lead = r.top().or(r.findings.first());
        let mut origin = RecordOrigin::default();
        if let Some(f) = lead {
            origin.rank = f.origin.rank.map(i64::from);
            origin.host = f.origin.host.clone();
            origin.pid = f.origin.pid.map(i64::from);
        }
        let hosts = if ctx.hosts.is_empty() {
            r.hosts()
        } else {
            let mut h = ctx.hosts.clone();
            h.sort();
            h.dedup();
            if origin.host.as_ref().is_none_or(|o| !h.contains(o)) {
                origin.host = (h.len() == 1).then(|| h[0].clone());
            }
            h
        };
        // GPUs by UUID: `gpu.<index>.uuid` facts where a snapshot gives them, and `--gpu`.
        let mut gpus: Vec<RecordGpu> = Vec::new();
        for f in &r.facts {
            if let Some(idx) = f
                .name
                .strip_prefix("gpu.")
                .and_then(|rest| rest.strip_suffix(".uuid"))
            {
                let uuid = f.value.to_string();
                if !gpus.iter().any(|g| g.uuid == uuid) {
                    gpus.push(RecordGpu {
                        uuid,
                        host: origin.host.clone(),
                    });
                }
                let _ = idx;
            }
        }
        for u in &ctx.gpus {
            if !gpus.iter().any(|g| &g.uuid == u) {
                gpus.push(RecordGpu {
                    uuid: u.clone(),
                    host: origin.host.clone().or_else(|| hosts.first().cloned()),
                });
            }
        }
        if gpus.len() == 1 {
            origin.gpu_uuid = Some(gpus[0].uuid.clone());
        }
        let versions = r
            .facts
            .iter()
            .filter_map(|f| {
                f.name
                    .strip_prefix("version.")
                    .map(|k| (k.to_string(), f.value.to_string()))
            })
            .fold(BTreeMap::new(), |mut m, (k, v)| {
                m.entry(k).or_insert(v);
                m
            });
        let job = ctx.job.clone().or_else(|| {
            fact_text(r, "slurm.job_id").or_else(|| {
                JOB_VARIABLES
                    .iter()
                    .find_map(|v| fact_text(r, &format!("env.{v}")))
            })
        });
        let failed_at = failure_time(r);
        let report = serde_json::to_value(r).unwrap_or(serde_json::Value::Null);
        RunRecord {
            run_id: run_id(r, ctx),
            failed_at,
            recorded_at,
            job,
            verdict: r.verdict.as_str().to_string(),
            fingerprint: r.fingerprint.clone(),
            category: lead.map(|f| f.category.as_str().to_string()),
            action: crate::triage::action_of(r).as_str().to_string(),
            confidence: lead.map(|f| f.confidence),
            rule: lead.map(|f| f.rule.clone()),
            title: lead.map(|f| f.title.en.clone()),
            origin,
            hosts,
            gpus,
            versions,
            report,
            inputs: ctx
                .paths
                .iter()
                .filter(|p| p.as_str() != "-")
                .map(|p| {
                    std::fs::canonicalize(p)
                        .map(|a| a.display().to_string())
                        .unwrap_or_else(|_| p.clone())
                })
                .collect(),
        }
    }

    /// The run as the history stores it by default: every text of the report, the title, the
    /// job and the input paths through the redactor (secrets only: hosts and paths are what
    /// the history counts by). The fingerprint and identity are untouched.
    pub fn redacted(&self) -> RunRecord {
        let mut red = crate::redact::Redactor::new(Default::default());
        let mut r = self.clone();
        red.json(&mut r.report);
        r.title = r.title.as_deref().map(|t| red.text(t));
        r.job = r.job.as_deref().map(|j| red.text(j));
        r.inputs = r.inputs.iter().map(|p| red.text(p)).collect();
        r
    }

    /// The time windows and "seen since" count by: the failure's time, else the recording's.
    pub fn at(&self) -> i64 {
        self.failed_at
            .as_deref()
            .and_then(epoch)
            .unwrap_or(self.recorded_at)
    }

    /// The class `history hosts` counts by: `none` (no failure), `unexplained` (a failure no
    /// rule explains), else the action class.
    pub fn class(&self) -> &str {
        if self.verdict == Verdict::NoFailure.as_str() {
            "none"
        } else if self.verdict == Verdict::UnknownFailure.as_str() {
            "unexplained"
        } else {
            &self.action
        }
    }

    /// Whether a failure counts against `host`: the host it started on when known, else
    /// every host of the run (a healthy run counts against none).
    pub fn blames_host(&self, host: &str) -> bool {
        self.class() != "none" && self.origin.host.as_deref().is_none_or(|o| o == host)
    }

    /// Whether a failure counts against a GPU: only the GPU it names (an Xid or ECC error of
    /// that GPU, or the run's only GPU). A host-level failure of an 8-GPU job blames no GPU.
    pub fn blames_gpu(&self, uuid: &str) -> bool {
        self.class() != "none" && self.origin.gpu_uuid.as_deref() == Some(uuid)
    }

    /// A row of `runs` read back (the column order of `Store::export`).
    pub(super) fn from_row(r: &Row) -> RunRecord {
        let json = |v: &Value| -> Option<serde_json::Value> {
            v.text().and_then(|s| serde_json::from_str(&s).ok())
        };
        RunRecord {
            run_id: r[0].text().unwrap_or_default(),
            failed_at: r[2].text(),
            recorded_at: r[3].int().or(r[1].int()).unwrap_or(0),
            job: r[4].text(),
            verdict: r[5].text().unwrap_or_default(),
            fingerprint: r[6].text(),
            category: r[7].text(),
            action: r[8]
                .text()
                .unwrap_or_else(|| Action::Investigate.as_str().into()),
            confidence: r[9].real(),
            rule: r[10].text(),
            title: r[11].text(),
            origin: RecordOrigin {
                rank: r[12].int(),
                host: r[13].text(),
                gpu: r[14].int(),
                gpu_uuid: r[15].text(),
                pid: r[16].int(),
            },
            hosts: json(&r[17])
                .and_then(|v| serde_json::from_value(v).ok())
                .unwrap_or_default(),
            gpus: json(&r[18])
                .and_then(|v| serde_json::from_value(v).ok())
                .unwrap_or_default(),
            versions: json(&r[19])
                .and_then(|v| serde_json::from_value(v).ok())
                .unwrap_or_default(),
            report: json(&r[20]).unwrap_or(serde_json::Value::Null),
            inputs: r
                .get(21)
                .and_then(json)
                .and_then(|v| serde_json::from_value(v).ok())
                .unwrap_or_default(),
        }
    }
}
