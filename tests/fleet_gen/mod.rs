//! A synthetic fleet for the history's tests (`tests/history.rs`, `tests/html.rs`): JSON Lines
//! as `history export` writes them, with a planted bad host and a planted bad GPU among a noisy
//! background, generated from a fixed seed so every run of a test sees the same fleet.

/// A fleet of 41 hosts × 8 GPUs, 200 whole-node jobs per host, a 2% background of GPU
/// hardware failures (each naming its GPU), 1% unexplained and 20% configuration failures;
/// host `lemon` adds 15% host-level hardware failures (no GPU named), and GPU `GPU-bad`
/// visits slot 3 of eight hosts for 15 jobs each and fails a quarter of them.
pub fn synthetic_fleet() -> String {
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut out = String::new();
    let mut n = 0;
    let mut hosts: Vec<String> = (0..40).map(|i| format!("node{i:02}")).collect();
    hosts.push("lemon".into());
    for host in &hosts {
        let h: usize = host.trim_start_matches("node").parse().unwrap_or(99);
        for job in 0..200 {
            let bad_gpu_here = h.is_multiple_of(5) && job < 15;
            let gpus: Vec<String> = (0..8)
                .map(|g| {
                    if bad_gpu_here && g == 3 {
                        "GPU-bad".to_string()
                    } else {
                        format!("GPU-{host}-{g}")
                    }
                })
                .collect();
            let (lemon_draw, gpu_draw, r) = (rand(), rand(), rand());
            let (verdict, action, category, gpu) = if bad_gpu_here && gpu_draw < 0.25 {
                (
                    "diagnosed",
                    "replace-hardware",
                    Some("gpu_hardware_xid"),
                    Some("GPU-bad".to_string()),
                )
            } else if host == "lemon" && lemon_draw < 0.15 {
                ("diagnosed", "replace-hardware", Some("ecc_error"), None)
            } else if r < 0.02 {
                (
                    "diagnosed",
                    "replace-hardware",
                    Some("gpu_hardware_xid"),
                    Some(gpus[(rand() * 8.0) as usize % 8].clone()),
                )
            } else if r < 0.03 {
                ("unknown_failure", "investigate", None, None)
            } else if r < 0.23 {
                ("diagnosed", "fix-config", Some("config_error"), None)
            } else {
                ("no_failure", "none", None, None)
            };
            n += 1;
            let rec = serde_json::json!({
                "type": "run",
                "run_id": format!("synthetic-{n}"),
                "failed_at": trainwreck_time(1_790_000_000 + n * 60),
                "recorded_at": 1_790_000_000 + n * 60,
                "job": format!("job-{n}"),
                "verdict": verdict,
                "fingerprint": (verdict != "no_failure").then(|| format!("fp1:{}", category.unwrap_or(action))),
                "category": category,
                "action": action,
                "confidence": null,
                "rule": null,
                "title": null,
                "origin": {"rank": null, "host": host, "gpu": null, "gpu_uuid": gpu, "pid": null},
                "hosts": [host],
                "gpus": gpus.iter().map(|u| serde_json::json!({"uuid": u, "host": host})).collect::<Vec<_>>(),
                "versions": {},
                "report": {}
            });
            out.push_str(&rec.to_string());
            out.push('\n');
        }
    }
    out
}

fn trainwreck_time(secs: u64) -> String {
    // Days from the civil date, enough for a test (UTC, 2026).
    let days = secs / 86_400;
    let t = secs % 86_400;
    let (y, m, d) = civil(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        t / 3600,
        t / 60 % 60,
        t % 60
    )
}

fn civil(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}
