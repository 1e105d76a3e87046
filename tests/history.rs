//! The failure history through the real binary, against both back-ends: SQLite in a temp dir
//! and a real PostgreSQL server (`TRAINWRECK_TEST_PG`, started by scripts/pg-test-server.sh
//! in .ci/run; those tests are `#[ignore]`d elsewhere and assert the server is there).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod fleet_gen;
use fleet_gen::synthetic_fleet;

const SEED: &str = "fixtures/seed-bus-error";

/// A history database for one test, removed with it.
struct Db {
    url: String,
    dir: tempfile::TempDir,
}

fn sqlite() -> Db {
    let dir = tempfile::tempdir().unwrap();
    Db {
        url: dir.path().join("history.db").display().to_string(),
        dir,
    }
}

/// A fresh database on the test server (tests run in parallel and count rows).
fn postgres() -> Db {
    let server = std::env::var("TRAINWRECK_TEST_PG").unwrap_or_default();
    assert!(
        server.starts_with("postgres://"),
        "TRAINWRECK_TEST_PG must name a running server (eval \"$(scripts/pg-test-server.sh start)\")"
    );
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let name = format!(
        "tw_{}_{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let mut c =
        postgres::Client::connect(&server, postgres::NoTls).expect("connect to the test server");
    c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
    let base = server.rsplit_once('/').map(|(b, _)| b).unwrap_or(&server);
    Db {
        url: format!("{base}/{name}"),
        dir: tempfile::tempdir().unwrap(),
    }
}

/// The binary with a private data directory and no inherited history settings.
fn tw(db: &Db) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trainwreck"));
    c.env_remove("TRAINWRECK_DB")
        .env_remove("TRAINWRECK_DB_TIMEOUT_MS")
        .env("XDG_DATA_HOME", db.dir.path().join("xdg"))
        .env("NO_COLOR", "1");
    c
}

fn run(mut c: Command) -> Output {
    c.output().expect("run trainwreck")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok(o: Output) -> String {
    assert!(
        o.status.success(),
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}

fn json(o: Output) -> serde_json::Value {
    let s = ok(o);
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("not JSON ({e}):\n{s}"))
}

fn copy_dir(from: &Path, to: &Path) {
    for e in walkdir::WalkDir::new(from) {
        let e = e.unwrap();
        let rel = e.path().strip_prefix(from).unwrap();
        let dest = to.join(rel);
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// `n` copies of the seed example under the test's temp dir.
fn seed_copies(db: &Db, n: usize) -> Vec<PathBuf> {
    (0..n)
        .map(|i| {
            let d = db.dir.path().join(format!("copy{i}"));
            copy_dir(Path::new(SEED), &d);
            d
        })
        .collect()
}

fn analyze(db: &Db, path: &Path, extra: &[&str]) -> Command {
    let mut c = tw(db);
    c.arg("analyze")
        .arg(path)
        .args(["--db", &db.url])
        .args(extra);
    c
}

fn history(db: &Db, args: &[&str]) -> Command {
    let mut c = tw(db);
    c.arg("history").args(args).args(["--db", &db.url]);
    c
}

fn export_lines(db: &Db) -> Vec<serde_json::Value> {
    ok(run(history(db, &["export"])))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn run_ids(db: &Db) -> Vec<String> {
    export_lines(db)
        .iter()
        .filter(|l| l["type"] == "run")
        .map(|l| l["run_id"].as_str().unwrap().to_string())
        .collect()
}

fn fingerprint_of(db: &Db, path: &Path) -> String {
    let v = json(run(analyze(db, path, &["--format", "json"])));
    v["fingerprint"].as_str().unwrap().to_string()
}

/// Each behaviour, once per back-end.
macro_rules! on_both {
    ($($name:ident),* $(,)?) => {
        mod sqlite_backend {
            $(#[test] fn $name() { super::$name(&super::sqlite()); })*
        }
        mod postgres_backend {
            $(#[test] #[ignore = "needs a PostgreSQL server (TRAINWRECK_TEST_PG)"]
              fn $name() { super::$name(&super::postgres()); })*
        }
    };
}

on_both!(
    recording_the_same_run_twice_is_one_row,
    seed_from_three_copies_on_two_hosts_is_seen_3_times_on_2_hosts,
    notes_show_list_and_export_import_round_trip,
    planted_bad_host_and_bad_gpu_are_exactly_the_suspects,
    fleet_report_counts_every_run_once_and_marks_the_planted_suspects,
    eight_processes_recording_at_once_lose_nothing_and_duplicate_nothing,
    newer_schema_version_is_a_clear_error_and_the_diagnosis_still_prints,
);

fn recording_the_same_run_twice_is_one_row(db: &Db) {
    let run_dir = &seed_copies(db, 1)[0];
    for _ in 0..2 {
        ok(run(analyze(db, run_dir, &["--record"])));
    }
    assert_eq!(run_ids(db).len(), 1);
    let fp = fingerprint_of(db, run_dir);
    let v = json(run(history(db, &["show", &fp, "--format", "json"])));
    assert_eq!(v["count"], 1);
    // The time of failure is the log's, not the file's or the clock's.
    assert_eq!(v["first_seen"], "2024-05-14T09:14:02Z");
}

fn seed_from_three_copies_on_two_hosts_is_seen_3_times_on_2_hosts(db: &Db) {
    let copies = seed_copies(db, 3);
    for (c, host) in copies.iter().zip(["node1", "node1", "node2"]) {
        ok(run(analyze(db, c, &["--record", "--host", host])));
    }
    let text = ok(run(analyze(db, &copies[0], &[])));
    assert!(
        text.contains("Seen 3 times since 2024-05-14 on 2 hosts (last: "),
        "{text}"
    );
    let v = json(run(analyze(db, &copies[2], &["--format", "json"])));
    let h = &v["history"];
    assert_eq!(h["count"], 3);
    assert_eq!(h["hosts"], serde_json::json!(["node1", "node2"]));
    assert_eq!(h["runs"].as_array().unwrap().len(), 3);
    // The existing fields stay as they were.
    assert_eq!(v["schema"], "trainwreck.report/1");
    assert_eq!(v["findings"][0]["category"], "shm_exhausted");
}

fn notes_show_list_and_export_import_round_trip(db: &Db) {
    let run_dir = &seed_copies(db, 1)[0];
    ok(run(analyze(db, run_dir, &["--record", "--job", "4711"])));
    let fp = fingerprint_of(db, run_dir);
    ok(run(history(
        db,
        &[
            "note",
            &fp,
            "fixed by --shm-size=16g in the launcher template",
            "--author",
            "alice",
        ],
    )));
    let text = ok(run(analyze(db, run_dir, &[])));
    assert!(
        text.contains("Team note: \"fixed by --shm-size=16g in the launcher template\" (alice, "),
        "{text}"
    );
    let show = json(run(history(db, &["show", &fp, "--format", "json"])));
    assert_eq!(show["notes"][0]["author"], "alice");
    assert_eq!(show["runs"][0]["job"], "4711");
    let list = json(run(history(db, &["list", "--format", "json"])));
    assert_eq!(list[0]["fingerprint"], fp.as_str());
    assert_eq!(list[0]["count"], 1);
    assert_eq!(list[0]["category"], "shm_exhausted");
    let none = json(run(history(
        db,
        &["list", "--category", "gpu_oom", "--format", "json"],
    )));
    assert_eq!(none, serde_json::json!([]));
    let bad = run(history(db, &["list", "--category", "gpu-oom"]));
    assert_eq!(bad.status.code(), Some(3), "{}", stderr(&bad));

    let file = db.dir.path().join("export.jsonl");
    ok(run(history(db, &["export", file.to_str().unwrap()])));
    let other = sqlite();
    ok(run(history(&other, &["import", file.to_str().unwrap()])));
    // Importing twice merges, never duplicates.
    ok(run(history(&other, &["import", file.to_str().unwrap()])));
    assert_eq!(export_lines(&other), export_lines(db));
}

fn planted_bad_host_and_bad_gpu_are_exactly_the_suspects(db: &Db) {
    let file = db.dir.path().join("fleet.jsonl");
    std::fs::write(&file, synthetic_fleet()).unwrap();
    ok(run(history(db, &["import", file.to_str().unwrap()])));
    let hosts = json(run(history(db, &["hosts", "--format", "json"])));
    assert_eq!(hosts["suspects"], serde_json::json!(["lemon"]), "{hosts:#}");
    assert_eq!(hosts["runs"], 41 * 200);
    let lemon = &hosts["units"][0];
    assert_eq!(lemon["id"], "lemon");
    assert!(lemon["p_value"].as_f64().unwrap() < hosts["threshold"].as_f64().unwrap());
    let gpus = json(run(history(db, &["gpus", "--format", "json"])));
    assert_eq!(
        gpus["suspects"],
        serde_json::json!(["GPU-bad"]),
        "{:#}",
        gpus["units"][0]
    );
    // It moved through eight hosts and stayed one GPU.
    let bad = &gpus["units"][0];
    assert_eq!(bad["id"], "GPU-bad");
    assert_eq!(bad["jobs"], 8 * 15);
    assert_eq!(bad["hosts"].as_array().unwrap().len(), 8);
    let table = ok(run(history(db, &["hosts"])));
    assert!(table.contains("Suspects:\n  lemon: "), "{table}");
}

/// `history report`'s data over the synthetic fleet: every run counted once by day (the
/// per-day counts add up to the runs, the failures to the failed runs), the top fingerprints
/// are `history list`'s, the heat map's cells put the bad GPU in each of its eight hosts with
/// its 15 runs there, the tests' suspects are `history hosts | gpus`'s, and the latest runs
/// come newest first.
fn fleet_report_counts_every_run_once_and_marks_the_planted_suspects(db: &Db) {
    let file = db.dir.path().join("fleet.jsonl");
    std::fs::write(&file, synthetic_fleet()).unwrap();
    ok(run(history(db, &["import", file.to_str().unwrap()])));
    let r = json(run(history(db, &["report", "--format", "json"])));
    assert_eq!(r["runs"], 41 * 200);
    let days = r["days"].as_array().unwrap();
    let sum = |key: &str| -> u64 {
        days.iter()
            .map(|d| match key {
                "healthy" => d["healthy"].as_u64().unwrap(),
                _ => d["failures"]
                    .as_object()
                    .unwrap()
                    .values()
                    .map(|v| v.as_u64().unwrap())
                    .sum(),
            })
            .sum()
    };
    assert_eq!(sum("healthy") + sum("failures"), 41 * 200);
    assert_eq!(sum("failures"), r["failed"].as_u64().unwrap());
    // 8,200 runs a minute apart from 2026-09-21 14:14 UTC: seven UTC days, oldest first.
    let names: Vec<&str> = days.iter().map(|d| d["day"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 7, "{names:?}");
    assert_eq!((names[0], names[6]), ("2026-09-21", "2026-09-27"));
    assert!(names.windows(2).all(|w| w[0] < w[1]), "{names:?}");
    assert!(days[0]["failures"]["config_error"].as_u64().unwrap() > 0);
    let list = json(run(history(
        db,
        &["list", "--limit", "8", "--format", "json"],
    )));
    let fps = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| e["fingerprint"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(fps(&r["top"]), fps(&list));
    for (t, per) in r["top"]
        .as_array()
        .unwrap()
        .iter()
        .zip(r["top_per_day"].as_array().unwrap())
    {
        let n: u64 = per
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(n, t["count"].as_u64().unwrap(), "{t}");
    }
    assert_eq!(r["hosts"]["suspects"], serde_json::json!(["lemon"]));
    assert_eq!(r["gpus"]["suspects"], serde_json::json!(["GPU-bad"]));
    let bad: Vec<&serde_json::Value> = r["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["uuid"] == "GPU-bad")
        .collect();
    assert_eq!(bad.len(), 8);
    assert!(bad.iter().all(|c| c["jobs"] == 15), "{bad:?}");
    let bad_failures: u64 = bad
        .iter()
        .map(|c| c["suspect_failures"].as_u64().unwrap())
        .sum();
    let gpus = json(run(history(db, &["gpus", "--format", "json"])));
    assert_eq!(gpus["units"][0]["id"], "GPU-bad");
    assert_eq!(
        bad_failures,
        gpus["units"][0]["suspect_failures"].as_u64().unwrap()
    );
    let recent = r["recent"].as_array().unwrap();
    assert_eq!(recent.len(), 50);
    assert!(
        recent
            .windows(2)
            .all(|w| w[0]["at"].as_str() >= w[1]["at"].as_str()),
        "newest first"
    );
    assert_eq!(recent[0]["job"], "job-8200");
    let window = json(run(history(
        db,
        &["report", "--format", "json", "--since", names[6]],
    )));
    assert_eq!(window["days"].as_array().unwrap().len(), 1);
    assert_eq!(&window["since"].as_str().unwrap()[..10], names[6]);
}

fn eight_processes_recording_at_once_lose_nothing_and_duplicate_nothing(db: &Db) {
    let copies = seed_copies(db, 9);
    // 8 different runs and 8 recordings of one more run, all at once.
    let children: Vec<_> = (0..16)
        .map(|i| {
            let target = if i < 8 { &copies[i] } else { &copies[8] };
            let mut c = analyze(db, target, &["--record", "--format", "json"]);
            c.stdout(Stdio::piped()).stderr(Stdio::piped());
            c.spawn().unwrap()
        })
        .collect();
    for ch in children {
        let o = ch.wait_with_output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&ok(o).into_bytes()).unwrap();
        assert_eq!(v["verdict"], "diagnosed");
    }
    let mut ids = run_ids(db);
    assert_eq!(ids.len(), 9, "{ids:?}");
    ids.dedup();
    assert_eq!(ids.len(), 9);
    let fp = fingerprint_of(db, &copies[0]);
    let v = json(run(history(db, &["show", &fp, "--format", "json"])));
    assert_eq!(v["count"], 9);
}

fn set_schema_version(db: &Db, v: i64) {
    if db.url.starts_with("postgres://") {
        let mut c = postgres::Client::connect(&db.url, postgres::NoTls).unwrap();
        c.execute(
            "UPDATE trainwreck_meta SET value = $1 WHERE key = 'schema_version'",
            &[&v.to_string()],
        )
        .unwrap();
    } else {
        let c = rusqlite::Connection::open(&db.url).unwrap();
        c.execute(
            "UPDATE trainwreck_meta SET value = ?1 WHERE key = 'schema_version'",
            [v.to_string()],
        )
        .unwrap();
    }
}

/// With `--record`: the diagnosis on stdout, `message` on stderr, exit status 3. Without:
/// the diagnosis, the message, exit status 0.
fn history_trouble_keeps_the_diagnosis(db: &Db, run_dir: &Path, message: &str) {
    let o = run(analyze(db, run_dir, &["--record"]));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("Cause: shm_exhausted"),
        "{}",
        stdout(&o)
    );
    assert!(stderr(&o).contains(message), "{}", stderr(&o));
    assert!(stderr(&o).contains("not recorded"), "{}", stderr(&o));
    let o = run(analyze(db, run_dir, &[]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("Cause: shm_exhausted"));
    assert!(stderr(&o).contains(message), "{}", stderr(&o));
}

fn newer_schema_version_is_a_clear_error_and_the_diagnosis_still_prints(db: &Db) {
    let run_dir = &seed_copies(db, 1)[0];
    ok(run(analyze(db, run_dir, &["--record"])));
    set_schema_version(db, 99);
    history_trouble_keeps_the_diagnosis(
        db,
        run_dir,
        "schema version 99, newer than this trainwreck knows (2)",
    );
    let o = run(history(db, &["list"]));
    assert_eq!(o.status.code(), Some(3));
    // Nothing was written over the newer data.
    set_schema_version(db, 2);
    assert_eq!(run_ids(db).len(), 1);
}

#[test]
fn a_corrupt_sqlite_file_is_named_and_the_diagnosis_still_prints() {
    let db = sqlite();
    let run_dir = &seed_copies(&db, 1)[0];
    std::fs::write(&db.url, vec![0x5a; 8192]).unwrap();
    history_trouble_keeps_the_diagnosis(&db, run_dir, "is not a SQLite database or is corrupt");
    // The file is left for a person to look at.
    assert_eq!(std::fs::read(&db.url).unwrap(), vec![0x5a; 8192]);
}

#[test]
fn a_sqlite_file_locked_past_the_timeout_is_named_and_the_diagnosis_still_prints() {
    let db = sqlite();
    let run_dir = &seed_copies(&db, 1)[0];
    ok(run(analyze(&db, run_dir, &["--record"])));
    let holder = rusqlite::Connection::open(&db.url).unwrap();
    holder
        .execute_batch("BEGIN EXCLUSIVE; DELETE FROM notes;")
        .unwrap();
    let start = std::time::Instant::now();
    let mut c = analyze(&db, run_dir, &["--record"]);
    c.env("TRAINWRECK_DB_TIMEOUT_MS", "300");
    let o = run(c);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("stayed locked by another process for more than 300 ms"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).contains("Cause: shm_exhausted"));
    assert!(start.elapsed() < std::time::Duration::from_secs(20));
    holder.execute_batch("ROLLBACK").unwrap();
    // Once the lock is gone, recording works again.
    ok(run(analyze(&db, run_dir, &["--record"])));
}

#[test]
fn an_unreachable_postgres_server_is_named_and_the_diagnosis_still_prints() {
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut db = sqlite();
    db.url = format!("postgres://tw:secret@127.0.0.1:{port}/history");
    let run_dir = &seed_copies(&db, 1)[0];
    history_trouble_keeps_the_diagnosis(&db, run_dir, "is unreachable");
    let o = run(analyze(&db, run_dir, &["--record"]));
    assert!(!stderr(&o).contains("secret"), "{}", stderr(&o));
}

#[test]
fn without_a_configured_history_nothing_is_looked_up_or_created() {
    let db = sqlite();
    let run_dir = &seed_copies(&db, 1)[0];
    let mut c = tw(&db);
    c.arg("analyze").arg(run_dir);
    let text = ok(run(c));
    assert!(
        !text.contains("Seen") && !text.contains("First time seen"),
        "{text}"
    );
    let default = db.dir.path().join("xdg/trainwreck/history.db");
    assert!(!default.exists());
    // --record creates the default database; from then on it is "configured".
    let mut c = tw(&db);
    c.arg("analyze").arg(run_dir).arg("--record");
    assert!(ok(run(c)).contains("First time seen (recorded now)."));
    assert!(default.exists());
    let mut c = tw(&db);
    c.arg("analyze").arg(run_dir).args(["--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&ok(run(c))).unwrap();
    assert_eq!(v["history"]["count"], 1);
}

#[test]
fn triage_record_records_every_run() {
    let db = sqlite();
    let copies = seed_copies(&db, 3);
    let mut c = tw(&db);
    c.arg("triage")
        .args(copies.iter().map(|p| p.as_os_str()))
        .args(["--record", "--db", &db.url]);
    ok(run(c));
    assert_eq!(run_ids(&db).len(), 3);
}

/// A team note is free text people paste into: a token in it must be masked in every output
/// that promises redaction (Markdown and GitHub always, the others with `--redact`). Notes are
/// stored masked by default; this one is stored as written (`--store-raw`), so it is the
/// outputs' redaction that is tested.
#[test]
fn a_secret_in_a_team_note_never_reaches_a_redacted_output() {
    let db = sqlite();
    let run_dir = &seed_copies(&db, 1)[0];
    ok(run(analyze(&db, run_dir, &["--record"])));
    let fp = fingerprint_of(&db, run_dir);
    // Made at test time, so no fixture or rule can know them.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let hex: String = format!("{:032x}{:08x}", nanos * 2654435761, nanos as u32);
    let secrets = [
        format!("hf_{}", &hex[..30]).replace(|c: char| c.is_ascii_digit(), "Q"),
        hex[..40].to_string(),
        format!("pw{}", &hex[5..17]),
    ];
    let note = format!(
        "fixed after HF_TOKEN={} was rotated; wandb login {} ; rerun with --db_password {}",
        secrets[0], secrets[1], secrets[2]
    );
    ok(run(history(
        &db,
        &["note", &fp, &note, "--author", "bob", "--store-raw"],
    )));
    // The note is there unredacted: otherwise this test proves nothing.
    let plain = ok(run(analyze(&db, run_dir, &[])));
    assert!(plain.contains(&secrets[0]), "{plain}");
    let outputs: [&[&str]; 6] = [
        &["--format", "markdown"],
        &["--format", "github"],
        &["--format", "json", "--redact"],
        &["--format", "table", "--redact"],
        &["--format", "junit", "--redact"],
        &["--format", "markdown", "--redact=all"],
    ];
    for extra in outputs {
        let out = ok(run(analyze(&db, run_dir, extra)));
        // GitHub annotations and JUnit carry the findings, not the history section.
        if !matches!(extra[1], "github" | "junit") {
            assert!(
                out.contains("bob"),
                "{extra:?}: the note is not shown:\n{out}"
            );
        }
        for s in &secrets {
            assert!(!out.contains(s.as_str()), "{extra:?} leaked {s}:\n{out}");
        }
    }
    let mut t = tw(&db);
    t.args(["triage"])
        .arg(run_dir)
        .args(["--db", &db.url, "--format", "markdown"]);
    let out = ok(run(t));
    for s in &secrets {
        assert!(
            !out.contains(s.as_str()),
            "triage markdown leaked {s}:\n{out}"
        );
    }
    let show = json(run(history(&db, &["show", &fp, "--format", "json"])));
    assert_eq!(show["notes"][0]["text"], note.as_str());
}

/// An export written before fingerprint version fp2 (`fp1:` ids) imports as the same failures:
/// the report still says it was seen before, and the note still shows.
#[test]
fn an_fp1_export_imports_as_the_same_failures() {
    let db = sqlite();
    let run_dir = &seed_copies(&db, 1)[0];
    ok(run(analyze(&db, run_dir, &["--record"])));
    let fp = fingerprint_of(&db, run_dir);
    assert!(fp.starts_with("fp2:"), "{fp}");
    ok(run(history(
        &db,
        &["note", &fp, "use --shm-size 8g", "--author", "eve"],
    )));
    let old: String = export_lines(&db)
        .iter()
        .map(|l| l.to_string().replace(&fp, &fp.replacen("fp2:", "fp1:", 1)) + "\n")
        .collect();
    assert!(old.contains("fp1:") && !old.contains("fp2:"), "{old}");
    let file = db.dir.path().join("old-export.jsonl");
    std::fs::write(&file, old).unwrap();
    let other = sqlite();
    ok(run(history(&other, &["import", file.to_str().unwrap()])));
    let text = ok(run(analyze(&other, run_dir, &[])));
    assert!(text.contains("Seen 1 time"), "{text}");
    assert!(text.contains("use --shm-size 8g"), "{text}");
    // An fp1 id pasted from an old ticket finds the runs too.
    let show = json(run(history(
        &other,
        &["show", &fp.replacen("fp2:", "fp1:", 1), "--format", "json"],
    )));
    assert_eq!(show["runs"].as_array().map(Vec::len), Some(1), "{show}");
}

#[test]
fn gpu_uuids_of_an_nvidia_smi_q_snapshot_are_recorded_and_counted() {
    // A real run on two H200s: its snapshots' `nvidia-smi -q` name each GPU's UUID.
    let db = sqlite();
    let run_dir = Path::new("fixtures/corpus/01a_dataloader_shm_deepspeed_zero2/run");
    ok(run(analyze(&db, run_dir, &["--record"])));
    let runs: Vec<serde_json::Value> = export_lines(&db)
        .into_iter()
        .filter(|l| l["type"] == "run")
        .collect();
    let gpus = runs[0]["gpus"].to_string();
    for uuid in [
        "GPU-af03aa1e-6321-baa2-b263-f86bf40e0757",
        "GPU-", // every entry is a UUID
    ] {
        assert!(gpus.contains(uuid), "{gpus}");
    }
    let st = json(run(history(&db, &["gpus", "--format", "json"])));
    let ids: Vec<&str> = st["units"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|u| u["id"].as_str())
        .collect();
    assert!(
        ids.contains(&"GPU-af03aa1e-6321-baa2-b263-f86bf40e0757"),
        "{st}"
    );
    assert!(ids.iter().all(|i| i.starts_with("GPU-")), "{ids:?}");
}

#[test]
fn job_variables_in_an_environment_dump_are_the_job() {
    let db = sqlite();
    for (var, value) in [
        ("SLURM_JOB_ID", "5150"),
        ("KUBERNETES_POD_NAME", "trainer-7f9c-0"),
        ("GITHUB_RUN_ID", "9876543210"),
    ] {
        let d = db.dir.path().join(var);
        copy_dir(Path::new(SEED), &d);
        std::fs::write(
            d.join("environment.txt"),
            format!("NCCL_DEBUG=INFO\n{var}={value}\nHOME=/root\nMASTER_PORT=29500\n"),
        )
        .unwrap();
        ok(run(analyze(&db, &d, &["--record"])));
        let jobs: Vec<String> = export_lines(&db)
            .iter()
            .filter(|l| l["type"] == "run")
            .filter_map(|l| l["job"].as_str().map(String::from))
            .collect();
        assert!(jobs.iter().any(|j| j == value), "{var}: {jobs:?}");
    }
}

#[test]
fn pastes_of_one_failure_from_different_pods_are_different_runs_and_a_repeat_is_one() {
    // The same failure from three pods: equal byte counts (the pod names are as long), other
    // bytes. Each is a run of its own; the same paste twice is one.
    let db = sqlite();
    let log = std::fs::read_to_string(Path::new(SEED).join("train.log")).unwrap();
    let host = "c0a8f1e2d4b5";
    let paste = |pod: &str| {
        let text = log.replace(host, pod);
        assert_eq!(text.len(), log.len());
        let mut c = tw(&db);
        c.args(["analyze", "-", "--record", "--db", &db.url])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        ok(child.wait_with_output().unwrap());
    };
    for pod in ["podA00000000", "podB00000000", "podC00000000"] {
        paste(pod);
    }
    assert_eq!(run_ids(&db).len(), 3, "{:?}", run_ids(&db));
    paste("podB00000000");
    assert_eq!(
        run_ids(&db).len(),
        3,
        "the same paste again is the same run"
    );
}

#[test]
fn a_database_the_user_cannot_write_can_still_be_looked_at() {
    // Recorded by its owner; read by someone who may read the file but write neither it nor
    // its directory (as root, the test reads as `nobody` through setpriv).
    use std::os::unix::fs::PermissionsExt;
    let db = sqlite();
    ok(run(analyze(&db, Path::new(SEED), &["--record"])));
    let fp = fingerprint_of(&db, Path::new(SEED));
    let dir = db.dir.path();
    std::fs::set_permissions(&db.url, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    let root = unsafe { libc::geteuid() } == 0;
    for args in [
        vec!["list"],
        vec!["show", fp.as_str()],
        vec!["hosts"],
        vec!["export"],
    ] {
        let mut c = if root {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(env!("CARGO_BIN_EXE_trainwreck"));
            c
        } else {
            Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        };
        c.env_remove("TRAINWRECK_DB")
            .env("XDG_DATA_HOME", "/nonexistent")
            .arg("history")
            .args(&args)
            .args(["--db", &db.url]);
        let out = ok(run(c));
        if args[0] != "hosts" {
            assert!(out.contains(&fp), "{args:?}:\n{out}");
        }
    }
    // Writing is still refused, clearly.
    let mut c = Command::new(if root {
        "setpriv"
    } else {
        env!("CARGO_BIN_EXE_trainwreck")
    });
    if root {
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_trainwreck"));
    }
    c.args(["history", "note", &fp, "x", "--db", &db.url]);
    let o = run(c);
    assert!(!o.status.success());
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Files a command left in `dir` (its working directory), the private data directory aside.
/// The three commands that open `--db`: recording a run, listing, migrating.
fn db_commands<'a>(run_dir: &'a Path, db: &'a str) -> [Vec<&'a str>; 3] {
    [
        vec!["analyze", run_dir.to_str().unwrap(), "--record", "--db", db],
        vec!["history", "list", "--db", db],
        vec!["history", "migrate", "--db", db],
    ]
}

fn left_in(dir: &Path) -> Vec<std::ffi::OsString> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .filter(|n| n != "xdg" && n != "copy0")
        .collect()
}

/// Audit round 3, F-9: a `--db` shaped like a URL but not one (`postgres:/…` with a slash
/// missing, `postgresql:…` without `//`, credentials without a scheme) is refused by name,
/// exit 3, the diagnosis still printed; it never becomes a SQLite file named after the
/// credentials, and no message holds the password.
#[test]
fn a_near_url_db_is_refused_never_a_file_and_never_prints_its_password() {
    let db = sqlite();
    let run_dir = &seed_copies(&db, 1)[0];
    for url in [
        "postgres:/tw:PLNTslashPw@127.0.0.1/f9",
        "postgresql:/127.0.0.1/f9?password=PLNTqueryPw",
        "POSTGRESQL:tw:PLNTnoSlashPw@127.0.0.1/f9",
        "https:/tw:PLNThttpsPw@db.example/f9",
        "tw:PLNTbarePw@127.0.0.1/f9",
    ] {
        for args in db_commands(run_dir, url) {
            let mut c = tw(&db);
            c.current_dir(db.dir.path()).args(&args);
            let o = run(c);
            let (out, err) = (stdout(&o), stderr(&o));
            assert_eq!(o.status.code(), Some(3), "{args:?}: {err}");
            assert!(
                !out.contains("PLNT") && !err.contains("PLNT"),
                "{args:?}: {err}"
            );
            assert!(err.contains("is not one"), "{args:?}: {err}");
            if args[0] == "analyze" {
                assert!(out.contains("Cause: shm_exhausted"), "{out}");
            }
        }
    }
    assert!(
        left_in(db.dir.path()).is_empty(),
        "files named after the --db: {:?}",
        left_in(db.dir.path())
    );
    // A file whose name merely has a colon in it is still a file, and `./` makes any name one.
    for name in ["runs:2024.db", "./postgres:x.db"] {
        let mut c = tw(&db);
        c.current_dir(db.dir.path())
            .args(["history", "migrate", "--db", name]);
        ok(run(c));
        assert!(db.dir.path().join(name).exists(), "{name}");
    }
}

/// A libpq keyword/value connection string is PostgreSQL's, not a file name: against a port
/// nothing listens on it is named unreachable with its password masked, exit 3, and no file
/// is made.
#[test]
fn a_libpq_connection_string_is_postgres_and_its_password_is_masked() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let db = sqlite();
    let run_dir = &seed_copies(&db, 1)[0];
    for conn in [
        format!("host=127.0.0.1 port={port} user=tw password=PLNTkvPw dbname=f9"),
        format!("host=127.0.0.1 port={port} user=tw password='PLNT quoted Pw' dbname=f9"),
    ] {
        for args in db_commands(run_dir, &conn) {
            let mut c = tw(&db);
            c.current_dir(db.dir.path())
                .env("TRAINWRECK_DB_TIMEOUT_MS", "2000")
                .args(&args);
            let o = run(c);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(3), "{args:?}: {err}");
            assert!(
                !stdout(&o).contains("PLNT") && !err.contains("PLNT"),
                "{args:?}: {err}"
            );
            assert!(
                err.contains(&format!(
                    "host=127.0.0.1 port={port} user=tw password=*** dbname=f9"
                )) && err.contains("is unreachable"),
                "{args:?}: {err}"
            );
        }
    }
    assert!(
        left_in(db.dir.path()).is_empty(),
        "{:?}",
        left_in(db.dir.path())
    );
}

/// The same connection string against the real server: runs are recorded and listed, and
/// `history migrate` names the database with `password=***`.
#[test]
#[ignore = "needs a PostgreSQL server (TRAINWRECK_TEST_PG)"]
fn a_libpq_connection_string_records_on_postgres() {
    let db = postgres();
    let cfg: postgres::Config = db.url.parse().unwrap();
    let host = match &cfg.get_hosts()[0] {
        postgres::config::Host::Tcp(h) => h.clone(),
        postgres::config::Host::Unix(p) => p.display().to_string(),
    };
    let conn = format!(
        "host={host} port={} user={} password=PLNTkvPw dbname={}",
        cfg.get_ports()[0],
        cfg.get_user().unwrap_or("postgres"),
        cfg.get_dbname().unwrap()
    );
    let mut c = tw(&db);
    c.current_dir(db.dir.path())
        .args(["history", "migrate", "--db", &conn]);
    let o = run(c);
    let all = format!("{}{}", stdout(&o), stderr(&o));
    assert!(o.status.success(), "{all}");
    assert!(
        !all.contains("PLNT") && all.contains("password=***"),
        "{all}"
    );
    let conn_db = Db {
        url: conn,
        dir: tempfile::tempdir().unwrap(),
    };
    let run_dir = &seed_copies(&conn_db, 1)[0];
    ok(run(analyze(&conn_db, run_dir, &["--record"])));
    assert_eq!(run_ids(&conn_db).len(), 1);
    // It is the server's database, not a file: the URL form sees the same run.
    assert_eq!(run_ids(&db).len(), 1);
    assert!(
        left_in(db.dir.path()).is_empty(),
        "{:?}",
        left_in(db.dir.path())
    );
}
