//! Runs every snapshot fixture (real outputs, see fixtures/snapshots/README.md) through the
//! analyzer's own path (`sources::open`, then its fact parser line by line). Pins the facts
//! rules rely on, and that damaged inputs warn instead of guessing.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use trainwreck::analyze::Engine;
use trainwreck::facts::spec_for;
use trainwreck::model::FactValue;
use trainwreck::rules::KnowledgeBase;
use trainwreck::sources::SourceKind;
use trainwreck::sources::{EventKind, FactOut, fact_parser};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/snapshots")
}

fn engine() -> &'static Engine<'static> {
    static KB: OnceLock<KnowledgeBase> = OnceLock::new();
    static E: OnceLock<Engine<'static>> = OnceLock::new();
    E.get_or_init(|| {
        Engine::new(KB.get_or_init(|| KnowledgeBase::load(&[]).expect("built-in rules")))
    })
}

/// The production path on one fixture: collect it as `analyze` does, open and detect it
/// (`sources::open`), stream its lines through its fact parser and the scanner; then the
/// facts, events and warnings the analysis kept, as a parser's output.
fn run(rel: &str) -> (SourceKind, FactOut) {
    let path = root().join(rel).display().to_string();
    let (inputs, warnings) = trainwreck::inputs::collect(std::slice::from_ref(&path));
    assert!(warnings.is_empty(), "{rel}: {warnings:?}");
    let a = engine().run(&inputs, 1);
    let out = FactOut {
        facts: a.facts.all().to_vec(),
        events: a.events.into_iter().map(|(_, e)| e).collect(),
        warnings: a.warnings.into_iter().map(|w| w.message).collect(),
        samples: a.samples.into_iter().next(),
    };
    (a.inputs[0].kind, out)
}

fn val(out: &FactOut, name: &str) -> Option<FactValue> {
    out.facts
        .iter()
        .find(|f| f.name == name)
        .map(|f| f.value.clone())
}

fn int(out: &FactOut, name: &str) -> Option<i64> {
    val(out, name).and_then(|v| v.as_i64())
}

fn text(out: &FactOut, name: &str) -> Option<String> {
    val(out, name).and_then(|v| v.as_text().map(str::to_string))
}

fn all_fixtures() -> Vec<String> {
    let mut v = Vec::new();
    let mut stack = vec![root()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("fixtures dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Some(rel) = p.strip_prefix(root()).ok().and_then(|r| r.to_str()) {
                let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if !matches!(
                    n,
                    "README.md" | "capture.sh" | "commands.txt" | "version.txt"
                ) {
                    v.push(rel.to_string());
                }
            }
        }
    }
    v.sort();
    v
}

#[test]
fn every_fixture_is_detected_parsed_and_named_from_the_catalog() {
    for rel in all_fixtures() {
        let (kind, out) = run(&rel);
        let dir = rel.split('/').next().unwrap_or("");
        let expected: &[SourceKind] = match dir {
            "df" => &[SourceKind::Df],
            "meminfo" => &[SourceKind::Meminfo, SourceKind::Free],
            "cgroup" => &[SourceKind::CgroupMemory],
            "dmesg" => &[SourceKind::Dmesg],
            "nvidia-smi" => &[
                SourceKind::NvidiaSmi,
                SourceKind::NvidiaSmiQ,
                SourceKind::NvidiaSmiCsv,
            ],
            "ulimit" => &[SourceKind::Ulimit],
            "torchelastic" => &[SourceKind::TorchelasticError],
            "envdump" => &[SourceKind::EnvDump],
            _ => &[],
        };
        // A cut df header leaves too little to recognise: plain text is the honest answer.
        if !rel.starts_with("df/bad-") {
            assert!(expected.contains(&kind), "{rel}: detected as {kind}");
        }
        for f in &out.facts {
            assert!(
                spec_for(&f.name).is_some(),
                "{rel}: `{}` is not in the catalog",
                f.name
            );
            assert!(f.line.is_some(), "{rel}: `{}` has no line", f.name);
        }
        if !rel.contains("bad-")
            && !rel.contains("noheader")
            && !rel.contains("busybox-free")
            && !rel.contains("unexpected-columns")
            && !rel.contains("local-boot")
        {
            assert!(out.warnings.is_empty(), "{rel}: {:?}", out.warnings);
        }
    }
}

#[test]
fn df_forms_agree_on_the_same_machine() {
    let (_, h) = run("df/local-df-h_dev_shm.txt");
    let (_, b1) = run("df/local-df-B1.txt");
    let (_, k) = run("df/local-df-k.txt");
    let (_, t) = run("df/local-df-T.txt");
    let (_, bb) = run("df/local-busybox-df.txt");
    let exact = int(&b1, "shm.size_bytes").expect("B1 shm size");
    assert_eq!(exact, 24_684_084 * 1024);
    assert_eq!(int(&k, "shm.size_bytes"), Some(exact));
    assert_eq!(int(&t, "shm.size_bytes"), Some(exact));
    // -h rounds to one decimal: 24G (24 * 2^30) is within 5 % of the exact size.
    let approx = int(&h, "shm.size_bytes").expect("h shm size");
    assert!((approx - exact).abs() * 20 < exact, "{approx} vs {exact}");
    assert_eq!(text(&t, "disk.1.fstype").as_deref(), Some("ext4"));
    // busybox wraps the long filesystem name: the row is still read whole.
    assert!(bb.facts.iter().any(|f| f.name.ends_with(".filesystem")
        && f.value == FactValue::Text("model_tools_unavailable".into())));
    assert!(bb.warnings.is_empty(), "{:?}", bb.warnings);
}

#[test]
fn df_shm_64m_container_and_full_checkpoint_disk() {
    let (_, out) = run("df/corpus-01a-after-df-B1_dev_shm.txt");
    assert_eq!(int(&out, "shm.size_bytes"), Some(64 << 20));
    let (_, out) = run("df/corpus-h200-df-h_dev_shm.txt");
    assert_eq!(int(&out, "shm.size_bytes"), Some(256 << 30));
    let (_, out) = run("df/corpus-14a-df-h_checkpoints.txt");
    assert_eq!(int(&out, "disk.0.use_percent"), Some(100));
    assert_eq!(int(&out, "disk.0.avail_bytes"), Some(0));
    assert!(text(&out, "disk.0.mount").is_some_and(|m| m.ends_with("/checkpoints")));
}

#[test]
fn df_damaged_or_unexpected_keeps_what_it_can() {
    let (_, out) = run("df/local-df-output-unexpected-columns.txt");
    assert_eq!(int(&out, "shm.size_bytes"), Some(24_684_084 * 1024));
    assert!(
        val(&out, "shm.used_bytes").is_none(),
        "no Used column: no used fact"
    );
    assert!(!out.warnings.is_empty());
    let (kind, out) = run("df/bad-truncated-df-T.txt");
    if kind == SourceKind::Df {
        assert!(!out.warnings.is_empty());
    }
    assert!(val(&out, "shm.size_bytes").is_none());
}

#[test]
fn meminfo_and_free() {
    let (_, m) = run("meminfo/local-proc_meminfo.txt");
    let total = int(&m, "host.mem_total_bytes").expect("MemTotal");
    let (_, b) = run("meminfo/local-free-b.txt");
    assert_eq!(
        int(&b, "host.mem_total_bytes"),
        Some(total),
        "free -b and meminfo agree"
    );
    let (_, h) = run("meminfo/local-free-h.txt");
    let approx = int(&h, "host.mem_total_bytes").expect("free -h");
    assert!((approx - total).abs() * 20 < total);
    let (_, g) = run("meminfo/corpus-h200-proc_meminfo.txt");
    assert!(int(&g, "host.mem_total_bytes").is_some_and(|t| t > 200 << 30));
    let (_, bad) = run("meminfo/bad-truncated-proc_meminfo.txt");
    assert_eq!(int(&bad, "host.mem_total_bytes"), Some(total));
    let (_, bb) = run("meminfo/local-busybox-free.txt");
    assert_eq!(bb.warnings.len(), 1, "unit assumed, and said so");
}

#[test]
fn cgroup_v2_oom_kill_and_v1_provoked_oom() {
    let (_, ev) = run("cgroup/corpus-06b-after-cgroup_job/memory.events");
    assert_eq!(int(&ev, "cgroup.oom_kill"), Some(2));
    let (_, max) = run("cgroup/corpus-06b-after-cgroup_job/memory.max");
    assert_eq!(int(&max, "cgroup.memory_limit_bytes"), Some(6 << 30));
    let (_, idle) = run("cgroup/corpus-h200-idle/memory.max");
    assert!(idle.facts.is_empty(), "`max` is no limit");
    let (_, oc) = run("cgroup/local-v1-oom/memory.oom_control");
    assert_eq!(int(&oc, "cgroup.oom_kill"), Some(1));
    let (_, lim) = run("cgroup/local-v1-oom/memory.limit_in_bytes");
    assert_eq!(int(&lim, "cgroup.memory_limit_bytes"), Some(64 << 20));
    let (_, unl) = run("cgroup/local-v1-self/memory.limit_in_bytes");
    assert!(unl.facts.is_empty(), "v1 page-rounded i64::MAX is no limit");
    let (_, bad) = run("cgroup/bad-unknown-keys/memory.events");
    assert_eq!(int(&bad, "cgroup.oom_kill"), Some(2));
    assert_eq!(bad.warnings.len(), 1, "{:?}", bad.warnings);
}

#[test]
fn dmesg_oom_kill_in_every_stamp_form() {
    for rel in [
        "dmesg/local-oom-raw.txt",
        "dmesg/local-oom-raw-with-btime.txt",
        "dmesg/local-oom-T.txt",
        "dmesg/local-oom-iso.txt",
        "dmesg/local-oom-H.txt",
    ] {
        let (_, out) = run(rel);
        let kills: Vec<_> = out
            .events
            .iter()
            .filter(|e| e.kind == EventKind::OomKill)
            .collect();
        assert_eq!(kills.len(), 1, "{rel}");
        let k = kills[0];
        assert_eq!(k.pid, Some(7365), "{rel}");
        assert_eq!(k.fields.get("name").map(String::as_str), Some("python3"));
        assert_eq!(k.fields.get("scope").map(String::as_str), Some("memcg"));
        assert!(
            k.fields.get("memcg").is_some_and(|m| m.ends_with("/twoom")),
            "{rel}"
        );
        assert_eq!(
            k.fields.get("anon_rss_bytes").map(String::as_str),
            Some("66584576")
        );
        assert_eq!(int(&out, "kernel.oom_kill"), Some(1));
        let time = k.time.as_deref().unwrap_or("");
        match rel {
            "dmesg/local-oom-raw.txt" => assert_eq!(time, "boot+374.925322"),
            "dmesg/local-oom-raw-with-btime.txt" | "dmesg/local-oom-iso.txt" => {
                assert_eq!(time, "2026-11-29T20:14:17.925322")
            }
            "dmesg/local-oom-T.txt" => assert_eq!(time, "2026-11-29T20:14:17"),
            _ => {}
        }
    }
    let (_, out) = run("dmesg/corpus-06b-dmesg-oom-T.txt");
    let kills: Vec<_> = out
        .events
        .iter()
        .filter(|e| e.kind == EventKind::OomKill)
        .collect();
    assert!(!kills.is_empty());
    assert_eq!(
        kills[0].fields.get("memcg").map(String::as_str),
        Some("/trainjob_4243_rank1")
    );
    assert_eq!(int(&out, "kernel.oom_kill"), Some(kills.len() as i64));
}

#[test]
fn gpu_host_cgroup_v2_oom_provoked_with_device_tool() {
    let (_, ev) = run("cgroup/gpu-v2-oom/memory.events");
    assert_eq!(int(&ev, "cgroup.oom_kill"), Some(1));
    assert_eq!(int(&ev, "cgroup.max_events"), Some(40));
    let (_, max) = run("cgroup/gpu-v2-oom/memory.max");
    assert_eq!(int(&max, "cgroup.memory_limit_bytes"), Some(64 << 20));
    let (_, peak) = run("cgroup/gpu-v2-oom/memory.peak");
    assert_eq!(int(&peak, "cgroup.memory_peak_bytes"), Some(64 << 20));
    let (_, raw) = run("dmesg/gpu-v2-oom-raw-with-btime.txt");
    let (_, t) = run("dmesg/gpu-v2-oom-T.txt");
    for out in [&raw, &t] {
        let k = out
            .events
            .iter()
            .find(|e| e.kind == EventKind::OomKill)
            .expect("kill");
        assert_eq!(k.pid, Some(488));
        assert_eq!(
            k.fields.get("memcg").map(String::as_str),
            Some("/process_api/twoom")
        );
    }
    // btime + 34.416956 s, in UTC; dmesg -T printed the same second in the host's zone (UTC).
    let raw_time = raw
        .events
        .iter()
        .find(|e| e.kind == EventKind::OomKill)
        .and_then(|e| e.time.clone());
    assert_eq!(raw_time.as_deref(), Some("2026-11-29T20:31:33.416956"));
}

#[test]
fn nvidia_smi_idle_and_under_load_in_three_shapes() {
    for (rel, used) in [
        ("nvidia-smi/nvidia-smi_idle.txt", 0),
        ("nvidia-smi/nvidia-smi_load.txt", 21711),
        ("nvidia-smi/nvidia-smi-q_load.txt", 21711),
        ("nvidia-smi/query-gpu_load.csv", 21711),
    ] {
        let (_, out) = run(rel);
        assert_eq!(
            int(&out, "gpu.0.memory_used_bytes"),
            Some(used << 20),
            "{rel}"
        );
        assert_eq!(
            int(&out, "gpu.0.memory_total_bytes"),
            Some(143_771 << 20),
            "{rel}"
        );
        assert_eq!(
            text(&out, "gpu.0.name").as_deref(),
            Some("NVIDIA H200"),
            "{rel}"
        );
        assert_eq!(
            text(&out, "gpu.0.bus_id").as_deref(),
            Some("00000000:00:06.0"),
            "{rel}"
        );
    }
    let (_, t) = run("nvidia-smi/nvidia-smi_load.txt");
    assert_eq!(int(&t, "gpu.0.processes"), Some(1));
    assert_eq!(int(&t, "gpu.0.process_memory_bytes"), Some(21702 << 20));
    assert_eq!(int(&t, "gpu.0.utilization_percent"), Some(100));
    assert_eq!(text(&t, "version.driver").as_deref(), Some("580.159.04"));
    let (_, q) = run("nvidia-smi/nvidia-smi-q_load.txt");
    assert_eq!(int(&q, "gpu.0.ecc_uncorrected_volatile"), Some(0));
    assert_eq!(
        val(&q, "gpu.0.remapped_rows_failure"),
        Some(FactValue::Bool(false))
    );
    assert_eq!(int(&q, "gpu.0.process_memory_bytes"), Some(21702 << 20));
    let (_, apps) = run("nvidia-smi/query-compute-apps_load.csv");
    assert_eq!(apps.events.len(), 1);
    assert_eq!(apps.events[0].pid, Some(511));
    let (_, rr) = run("nvidia-smi/query-remapped-rows_load.csv");
    assert_eq!(
        val(&rr, "gpu.0.remapped_rows_pending"),
        Some(FactValue::Bool(false))
    );
    let (_, nh) = run("nvidia-smi/query-gpu-noheader-nounits_load.csv");
    assert!(
        nh.facts.is_empty() && nh.warnings.len() == 1,
        "no header: nothing guessed"
    );
    let (_, cut) = run("nvidia-smi/bad-truncated-nvidia-smi.txt");
    assert_eq!(int(&cut, "gpu.0.memory_used_bytes"), Some(21711 << 20));
    assert!(val(&cut, "gpu.0.processes").is_none());
}

#[test]
fn ulimit_and_proc_limits() {
    let (_, a) = run("ulimit/corpus-h200-ulimit-a.txt");
    assert_eq!(int(&a, "ulimit.open_files"), Some(20000));
    assert_eq!(int(&a, "ulimit.max_locked_memory_bytes"), Some(i64::MAX));
    assert_eq!(int(&a, "ulimit.core_file_size_bytes"), Some(0));
    let (_, l) = run("ulimit/local-proc_self_limits.txt");
    assert!(int(&l, "ulimit.open_files").is_some());
    assert!(int(&l, "ulimit.open_files_hard").is_some());
}

#[test]
fn torchelastic_error_files() {
    let (_, out) = run("torchelastic/corpus-01c-torchelastic_error.json");
    assert_eq!(
        text(&out, "torchelastic.exception").as_deref(),
        Some("RuntimeError: DataLoader worker (pid(s) 4232, 4238) exited unexpectedly")
    );
    assert_eq!(int(&out, "torchelastic.timestamp"), Some(1_795_978_639));
    let (_, out) = run("torchelastic/corpus-18a-torchelastic_error.json");
    assert_eq!(
        text(&out, "torchelastic.message").as_deref(),
        Some("SignalException: Process 14834 got signal: 15")
    );
}

#[test]
fn env_and_versions() {
    let (_, env) = run("envdump/local-env.txt");
    assert_eq!(text(&env, "env.NCCL_DEBUG").as_deref(), Some("INFO"));
    assert!(env.facts.iter().all(|f| f.name.starts_with("env.")));
    assert!(val(&env, "env.HOME").is_none());
    let (_, ce) = run("envdump/gpu-collect_env.txt");
    assert_eq!(text(&ce, "version.torch").as_deref(), Some("2.11.0+cu130"));
    assert_eq!(text(&ce, "version.torch_cuda").as_deref(), Some("13.0"));
    assert_eq!(
        text(&ce, "version.cuda_runtime").as_deref(),
        Some("13.0.88")
    );
    assert_eq!(text(&ce, "version.driver").as_deref(), Some("580.159.04"));
    assert_eq!(text(&ce, "version.nccl").as_deref(), Some("2.28.9"));
    assert_eq!(text(&ce, "version.python").as_deref(), Some("3.12.3"));
    let (_, genv) = run("envdump/gpu-env.txt");
    assert!(val(&genv, "env.NCCL_VERSION").is_some());
    let (_, ds) = run("envdump/corpus-h200-ds_report.txt");
    assert_eq!(text(&ds, "version.torch").as_deref(), Some("2.11.0+cu130"));
    assert_eq!(text(&ds, "version.deepspeed").as_deref(), Some("0.19.8"));
}

/// Every kind's parser survives every prefix of every fixture line (a paste cut anywhere) and
/// lines of foreign or broken text: no panic, whatever it keeps.
#[test]
fn no_parser_panics_on_cut_or_foreign_lines() {
    let kinds = [
        (SourceKind::Df, "df"),
        (SourceKind::Meminfo, "meminfo"),
        (SourceKind::Free, "free"),
        (SourceKind::CgroupMemory, "memory.events"),
        (SourceKind::CgroupMemory, "memory.max"),
        (SourceKind::CgroupMemory, "memory.stat"),
        (SourceKind::Dmesg, "dmesg"),
        (SourceKind::NvidiaSmi, "nvidia-smi.txt"),
        (SourceKind::NvidiaSmiQ, "nvidia-smi-q.txt"),
        (SourceKind::NvidiaSmiCsv, "q.csv"),
        (SourceKind::Ulimit, "ulimit"),
        (SourceKind::TorchelasticError, "error.json"),
        (SourceKind::SlurmLog, "slurm-1.out"),
        (SourceKind::K8sPod, "pod.yaml"),
        (SourceKind::DockerInspect, "inspect.json"),
        (SourceKind::EnvDump, "env"),
    ];
    let mut lines: Vec<String> = vec![
        "[".into(),
        "[]".into(),
        "[  +".into(),
        "12月".into(),
        "Dec".into(),
        "2026-11-29T".into(),
        "│ ╰─ ❱ ünïcödé ]] [[ :: == ||".into(),
        "- - - -".into(),
        "|||".into(),
        "\u{0}\u{1}\u{7f}".into(),
        "Filesystem".into(),
        "JobID|".into(),
        "JobID JobName".into(),
        "---- ----".into(),
        "    - a: [".into(),
    ];
    for rel in all_fixtures() {
        let bytes = std::fs::read(root().join(&rel)).expect("read");
        let text = String::from_utf8_lossy(&bytes).into_owned();
        for l in text.lines().take(400) {
            let cuts: Vec<usize> = l.char_indices().map(|(i, _)| i).step_by(3).collect();
            for c in cuts {
                lines.push(l[..c].to_string());
            }
        }
    }
    for (kind, name) in kinds {
        let mut p = fact_parser(kind, name).expect("parser");
        let mut out = FactOut::default();
        for (i, l) in lines.iter().enumerate() {
            p.line(i as u64 + 1, l, &mut out);
        }
        p.finish(&mut out);
    }
}
