//! Each comparer on each shape its source comes in: the text goes through the production
//! fact parser (or `trainlog`) for its kind, as an analysis would read it.

use super::*;
use crate::diff::{Run, compare};
use crate::sources::SourceKind;
use crate::sources::{parse_text, trainlog};

/// A run from snapshot texts (kind, file name, text) and log texts.
fn run(snapshots: &[(SourceKind, &str, &str)], logs: &[&str]) -> Run {
    let mut r = Run::default();
    for (kind, name, text) in snapshots {
        for mut f in parse_text(*kind, name, text).facts {
            f.path = name.to_string();
            r.facts.push(f);
        }
    }
    for (i, text) in logs.iter().enumerate() {
        let t = trainlog::parse_log(text);
        for mut f in t.facts {
            f.path = format!("log{i}.log");
            r.facts.push(f);
        }
        if r.steps.is_empty() {
            r.steps = t.steps;
            r.steps_path = format!("log{i}.log");
        }
    }
    r
}

fn config_run(facts: Vec<Fact>) -> Run {
    let mut r = Run::default();
    for mut f in facts {
        f.path = "cfg".into();
        r.facts.push(f);
    }
    r
}

fn keys(good: &Run, bad: &Run) -> Vec<(String, String, String)> {
    compare(good, bad)
        .differences
        .iter()
        .map(|d| {
            (
                d.key.clone(),
                super::super::display(&d.good, d.unit),
                super::super::display(&d.bad, d.unit),
            )
        })
        .collect()
}

fn has(diffs: &[(String, String, String)], key: &str, good: &str, bad: &str) -> bool {
    diffs
        .iter()
        .any(|(k, g, b)| k == key && g == good && b == bad)
}

#[test]
fn versions_from_pip_list_freeze_collect_env_ds_report_nvidia_smi_and_logs() {
    let good = run(
        &[
            (
                SourceKind::EnvDump,
                "pip-list.txt",
                "Package    Version\n---------- -------\ntorch      2.11.0\ndeepspeed  0.19.8\ntransformers 4.57.0\n",
            ),
            (
                SourceKind::NvidiaSmi,
                "nvidia-smi.txt",
                "| NVIDIA-SMI 580.159.04             Driver Version: 580.159.04     CUDA Version: 13.0     |\n",
            ),
        ],
        &["node:1:1 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n"],
    );
    let bad = run(
        &[
            (
                SourceKind::EnvDump,
                "collect_env.txt",
                "PyTorch version: 2.11.0+cu130\nPython version: 3.12.3 (main)\n[pip3] transformers==4.58.1\n",
            ),
            (
                SourceKind::EnvDump,
                "ds_report.txt",
                "deepspeed info ................... 0.18.0, unknown, unknown\n",
            ),
            (
                SourceKind::NvidiaSmi,
                "nvidia-smi.txt",
                "| NVIDIA-SMI 570.86.15             Driver Version: 570.86.15      CUDA Version: 12.8     |\n",
            ),
        ],
        &["node:1:1 [0] NCCL INFO NCCL version 2.27.3+cuda12.8\n"],
    );
    let d = keys(&good, &bad);
    // pip's 2.11.0 and collect_env's 2.11.0+cu130 are one version.
    assert!(!d.iter().any(|(k, _, _)| k == "version.torch"), "{d:?}");
    assert!(has(&d, "version.deepspeed", "0.19.8", "0.18.0"), "{d:?}");
    assert!(has(&d, "version.transformers", "4.57.0", "4.58.1"), "{d:?}");
    assert!(
        has(&d, "version.driver", "580.159.04", "570.86.15"),
        "{d:?}"
    );
    assert!(has(&d, "version.cuda_driver", "13.0", "12.8"), "{d:?}");
    assert!(has(&d, "version.nccl", "2.28.9", "2.27.3"), "{d:?}");
    // Python only one side tells: not known, not listed.
    assert!(!d.iter().any(|(k, _, _)| k == "version.python"), "{d:?}");
    let (ex, _) = explains(
        "version.nccl",
        &Value::Text("a".into()),
        &Value::Text("b".into()),
    );
    assert!(ex.contains(&Category::NcclNetwork) && ex.contains(&Category::NcclTimeout));
}

#[test]
fn environment_variables_from_env_dumps_with_noise_and_unset() {
    let good = run(
        &[(
            SourceKind::EnvDump,
            "env.txt",
            "NCCL_DEBUG=INFO\nNCCL_IB_DISABLE=0\nMASTER_PORT=29500\nOMP_NUM_THREADS=8\nTORCHELASTIC_RUN_ID=a1b2c3\nHOME=/root\n",
        )],
        &[],
    );
    let bad = run(
        &[(
            SourceKind::EnvDump,
            "env.txt",
            "NCCL_DEBUG=INFO\nNCCL_IB_DISABLE=1\nMASTER_PORT=29611\nOMP_NUM_THREADS=8\nNCCL_SOCKET_IFNAME=eth0\nTORCH_NCCL_ASYNC_ERROR_HANDLING=1\n",
        )],
        &[],
    );
    // A variable one dump lacks reads `unset` (`未设置` in Chinese); one both set keeps
    // its values in either language.
    let full = compare(&good, &bad);
    let ifname = full
        .differences
        .iter()
        .find(|x| x.key == "env.NCCL_SOCKET_IFNAME")
        .expect("NCCL_SOCKET_IFNAME listed");
    assert_eq!(ifname.absent, Some(Side::Good));
    assert_eq!(ifname.shown_zh(Side::Good), "未设置");
    assert_eq!(ifname.shown_zh(Side::Bad), "eth0");
    let ib = full
        .differences
        .iter()
        .find(|x| x.key == "env.NCCL_IB_DISABLE")
        .expect("NCCL_IB_DISABLE listed");
    assert_eq!(
        (ib.shown_zh(Side::Good), ib.absent),
        ("0".to_string(), None)
    );
    let d = keys(&good, &bad);
    assert!(has(&d, "env.NCCL_IB_DISABLE", "0", "1"), "{d:?}");
    assert!(has(&d, "env.NCCL_SOCKET_IFNAME", "unset", "eth0"), "{d:?}");
    assert!(
        has(&d, "env.TORCH_NCCL_ASYNC_ERROR_HANDLING", "unset", "1"),
        "{d:?}"
    );
    assert!(
        !d.iter().any(|(k, _, _)| k.contains("MASTER_PORT")),
        "ports are noise: {d:?}"
    );
    assert!(
        !d.iter()
            .any(|(k, _, _)| k.contains("NCCL_DEBUG") || k.contains("OMP_"))
    );
    assert_eq!(d.len(), 3, "{d:?}");
}

#[test]
fn shm_from_df_h_df_b1_docker_inspect_and_k8s() {
    let good = run(
        &[(
            SourceKind::Df,
            "df-h.txt",
            "Filesystem      Size  Used Avail Use% Mounted on\nshm             256G     0  256G   0% /dev/shm\n",
        )],
        &[],
    );
    let bad = run(
        &[(
            SourceKind::Df,
            "df-B1.txt",
            "Filesystem     1B-blocks  Used Available Use% Mounted on\nshm             67108864     0  67108864   0% /dev/shm\n",
        )],
        &[],
    );
    let d = compare(&good, &bad);
    assert_eq!(d.differences.len(), 1, "{:?}", d.differences);
    assert_eq!(d.differences[0].key, "shm.size_bytes");
    assert!(d.differences[0].explains.contains(&Category::ShmExhausted));
    // The other way round (more /dev/shm in the bad run) explains no shm failure.
    let d = compare(&bad, &good);
    assert!(d.differences[0].explains.is_empty());
    let inspect = |shm: u64| {
        format!(
            "[{{\"Id\": \"abc\", \"State\": {{\"ExitCode\": 0, \"OOMKilled\": false}}, \"HostConfig\": {{\"ShmSize\": {shm}, \"IpcMode\": \"private\", \"Memory\": 0}}}}]\n"
        )
    };
    let (g, b) = (inspect(17179869184), inspect(67108864));
    let good = run(&[(SourceKind::DockerInspect, "inspect.json", &g)], &[]);
    let bad = run(&[(SourceKind::DockerInspect, "inspect.json", &b)], &[]);
    let d = keys(&good, &bad);
    assert_eq!(
        d,
        [(
            "docker.shm_size_bytes".to_string(),
            "16 GiB".to_string(),
            "64 MiB".to_string()
        )]
    );
}

#[test]
fn memory_limits_from_meminfo_and_cgroup_files_unlimited_when_max() {
    let good = run(
        &[
            (
                SourceKind::Meminfo,
                "meminfo",
                "MemTotal:       263855436 kB\nMemFree:        200000000 kB\n",
            ),
            (SourceKind::CgroupMemory, "memory.max", "max\n"),
            (SourceKind::CgroupMemory, "memory.current", "3713728512\n"),
        ],
        &[],
    );
    let bad = run(
        &[
            // A few KiB apart on another boot: the same machine.
            (
                SourceKind::Meminfo,
                "meminfo",
                "MemTotal:       263855400 kB\nMemFree:        100000000 kB\n",
            ),
            (SourceKind::CgroupMemory, "memory.max", "8589934592\n"),
            (SourceKind::CgroupMemory, "memory.current", "8000000000\n"),
        ],
        &[],
    );
    let d = compare(&good, &bad);
    let keys: Vec<&str> = d.differences.iter().map(|x| x.key.as_str()).collect();
    assert_eq!(keys, ["cgroup.memory_limit_bytes"], "{:?}", d.differences);
    let x = &d.differences[0];
    assert_eq!(super::super::display(&x.good, x.unit), "unlimited");
    assert_eq!(super::super::display(&x.bad, x.unit), "8 GiB");
    // In Chinese our word for it is Chinese; the value read stays as read.
    assert_eq!(x.shown_zh(Side::Good), "不限");
    assert_eq!(x.shown_zh(Side::Bad), "8 GiB");
    assert!(x.explains.contains(&Category::HostOom));
}

#[test]
fn ulimits_from_ulimit_a_and_proc_limits() {
    let good = run(
        &[(
            SourceKind::Ulimit,
            "ulimit-a.txt",
            "core file size              (blocks, -c) 0\nmax locked memory           (kbytes, -l) unlimited\nopen files                          (-n) 1048576\nmax user processes                  (-u) unlimited\n",
        )],
        &[],
    );
    let bad = run(
        &[(
            SourceKind::Ulimit,
            "limits",
            "Limit                     Soft Limit           Hard Limit           Units     \nMax core file size        0                    unlimited            bytes     \nMax locked memory         65536                65536                bytes     \nMax open files            1024                 4096                 files     \nMax processes             unlimited            unlimited            processes \n",
        )],
        &[],
    );
    let d = compare(&good, &bad);
    let nofile = d
        .differences
        .iter()
        .find(|x| x.key == "ulimit.open_files")
        .unwrap();
    assert!(nofile.explains.contains(&Category::TooManyOpenFiles));
    let memlock = d
        .differences
        .iter()
        .find(|x| x.key == "ulimit.max_locked_memory_bytes")
        .unwrap();
    assert_eq!(
        super::super::display(&memlock.good, memlock.unit),
        "unlimited"
    );
    assert!(memlock.explains.contains(&Category::MemlockLimit));
    assert!(
        !d.differences
            .iter()
            .any(|x| x.key == "ulimit.core_file_size_bytes")
    );
    assert!(
        !d.differences
            .iter()
            .any(|x| x.key == "ulimit.max_user_processes")
    );
}

#[test]
fn gpus_from_nvidia_smi_table_q_and_csv() {
    let csv = |rows: &str| format!("name, memory.total [MiB], memory.used [MiB]\n{rows}");
    let good = run(
        &[(
            SourceKind::NvidiaSmiCsv,
            "q.csv",
            &csv("NVIDIA H200, 143771 MiB, 0 MiB\nNVIDIA H200, 143771 MiB, 0 MiB\n"),
        )],
        &[],
    );
    let bad = run(
        &[(
            SourceKind::NvidiaSmiQ,
            "smi-q.txt",
            "==============NVSMI LOG==============\n\nDriver Version                            : 580.159.04\n\nAttached GPUs                             : 1\nGPU 00000000:00:06.0\n    Product Name                          : NVIDIA A100-SXM4-40GB\n    FB Memory Usage\n        Total                             : 40960 MiB\n        Used                              : 0 MiB\n",
        )],
        &[],
    );
    let d = keys(&good, &bad);
    assert!(has(&d, "gpus.count", "2", "1"), "{d:?}");
    assert!(
        has(&d, "gpus.model", "NVIDIA H200", "NVIDIA A100-SXM4-40GB"),
        "{d:?}"
    );
    assert!(
        has(&d, "gpus.memory_total_bytes", "140.4 GiB", "40 GiB"),
        "{d:?}"
    );
}

#[test]
fn launcher_from_torchrun_and_deepspeed_lines() {
    let good = run(
        &[],
        &["+ torchrun --nproc_per_node 2 train.py --batch-size 16\n"],
    );
    let bad = run(
        &[],
        &["+ torchrun --nproc-per-node=8 train.py --batch-size 16\n"],
    );
    let d = keys(&good, &bad);
    assert_eq!(
        d,
        [(
            "launch.nproc_per_node".to_string(),
            "2".to_string(),
            "8".to_string()
        )]
    );
    let ds = |n: u32| {
        format!(
            "[2026-11-29 18:56:23,207] [INFO] [launch.py:158:main] nnodes=1, num_local_procs={n}, node_rank=0\n[2026-11-29 18:56:23,207] [INFO] [launch.py:170:main] dist_world_size={n}\n"
        )
    };
    let d = keys(&run(&[], &[&ds(2)]), &run(&[], &[&ds(4)]));
    assert!(has(&d, "launch.nproc_per_node", "2", "4"), "{d:?}");
    assert!(has(&d, "launch.world_size", "2", "4"), "{d:?}");
}

#[test]
fn training_config_from_args_dict_namespace_training_arguments_ds_config_and_yaml() {
    // One setting in each shape, compared across shapes through its canonical name.
    let good = run(
        &[],
        &[
            "INFO train: args: {'batch_size': 16, 'num_workers': 2, 'out_dir': 'runs/2026-11-29-a1b2c3'}\n",
        ],
    );
    let bad = run(
        &[],
        &["Namespace(batch_size=64, num_workers=2, out_dir='runs/2026-11-30-d4e5f6')\n"],
    );
    let d = compare(&good, &bad);
    assert_eq!(d.differences.len(), 1, "{:?}", d.differences);
    assert_eq!(d.differences[0].key, "config.micro_batch");
    assert!(d.differences[0].explains.contains(&Category::GpuOom));
    let hf = |p: &str| {
        format!(
            "Training/evaluation parameters TrainingArguments(\n_n_gpu=1,\n{p},\nper_device_train_batch_size=8,\n)\n"
        )
    };
    let d = compare(
        &run(&[], &[&hf("bf16=True")]),
        &run(&[], &[&hf("fp16=True")]),
    );
    assert_eq!(d.differences[0].key, "config.precision");
    assert!(
        d.differences[0]
            .explains
            .contains(&Category::LossScaleOverflow)
    );
    let ds = |stage: u32, fp16: bool| {
        trainlog::json_config(&format!("{{\"train_micro_batch_size_per_gpu\": 4, \"fp16\": {{\"enabled\": {fp16}}}, \"bf16\": {{\"enabled\": {}}}, \"zero_optimization\": {{\"stage\": {stage}}}}}", !fp16)).unwrap()
    };
    let d = keys(&config_run(ds(3, false)), &config_run(ds(2, true)));
    assert!(has(&d, "config.precision", "bf16", "fp16"), "{d:?}");
    assert!(has(&d, "config.zero_stage", "3", "2"), "{d:?}");
    assert_eq!(d.len(), 2, "{d:?}");
    let yaml = |cutoff: u32, workers: u32| {
        trainlog::yaml_config(&format!("per_device_train_batch_size: 2\ncutoff_len: {cutoff}\npreprocessing_num_workers: {workers}\nbf16: true\n")).unwrap()
    };
    let d = compare(&config_run(yaml(1024, 16)), &config_run(yaml(4096, 16)));
    assert_eq!(d.differences.len(), 1);
    assert_eq!(d.differences[0].key, "config.seq_len");
    assert!(d.differences[0].explains.contains(&Category::GpuOom));
}

#[test]
fn trajectory_steps_loss_and_peaks() {
    let good = run(
        &[(
            SourceKind::CapturePeaks,
            "peaks.txt",
            "shm_peak_bytes 1048576\n",
        )],
        &[
            "2026-11-29 18:58:24,637 INFO step 100/300 loss 2.30\n2026-11-29 18:58:25,637 INFO step 200/300 loss 2.20\n2026-11-29 18:58:26,637 INFO step 300/300 loss 2.10\n",
        ],
    );
    let bad = run(
        &[],
        &[
            "2026-11-29 18:58:24,637 INFO step 100/300 loss 2.31\n2026-11-29 18:58:25,637 INFO step 200/300 loss nan\n",
        ],
    );
    let d = keys(&good, &bad);
    assert!(has(&d, "trajectory.steps", "300", "200"), "{d:?}");
    assert!(has(&d, "trajectory.final_loss", "2.1", "NaN"), "{d:?}");
    // Step time: 1 s per 100 steps on both sides; not listed.
    assert!(
        !d.iter().any(|(k, _, _)| k == "trajectory.step_time"),
        "{d:?}"
    );
}

#[test]
fn noise_in_ids_dates_and_hashes_is_not_a_difference() {
    assert_eq!(
        without_noise("/ckpt/run-20261129-a3f9e1/"),
        without_noise("/ckpt/run-20261130-77b2c0/")
    );
    assert_ne!(without_noise("/data/train"), without_noise("/data/valid"));
    assert_ne!(
        without_noise("8192"),
        without_noise("1024"),
        "numbers are values"
    );
    assert!(
        is_noise_key("master_port") && is_noise_key("MASTER_ADDR") && is_noise_key("output_dir")
    );
    assert!(!is_noise_key("num_workers"));
}

#[test]
fn the_table_is_consistent() {
    for r in EXPLAINS {
        assert!((0.0..=1.0).contains(&r.weight), "{}", r.key);
        let family = r.key.split('.').next().unwrap();
        assert!(
            [
                "shm",
                "docker",
                "k8s",
                "cgroup",
                "host",
                "ulimit",
                "config",
                "launch",
                "gpus",
                "pod",
                "version",
                "env",
                "trajectory"
            ]
            .contains(&family),
            "{}",
            r.key
        );
    }
}

#[test]
fn container_ulimits_from_docker_inspect() {
    let inspect = |soft: u64| {
        format!(
            "[{{\"Id\": \"abc\", \"HostConfig\": {{\"ShmSize\": 67108864, \"Ulimits\": [{{\"Name\": \"nofile\", \"Soft\": {soft}, \"Hard\": 65536}}]}}}}]\n"
        )
    };
    let (g, b) = (inspect(65536), inspect(1024));
    let good = run(&[(SourceKind::DockerInspect, "inspect.json", &g)], &[]);
    let bad = run(&[(SourceKind::DockerInspect, "inspect.json", &b)], &[]);
    let d = compare(&good, &bad);
    assert_eq!(d.differences.len(), 1, "{:?}", d.differences);
    assert_eq!(d.differences[0].key, "docker.ulimit.nofile.soft");
    assert!(
        d.differences[0]
            .explains
            .contains(&Category::TooManyOpenFiles)
    );
}
