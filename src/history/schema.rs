//! The history's schema, versioned. `MIGRATIONS[i]` takes a database from version `i` to
//! `i + 1`; the version lives in `trainwreck_meta`. The same SQL runs on SQLite and
//! PostgreSQL. A migration, once released, is never edited: add the next one.

use super::backend::{Backend, HistoryError, Kind, Result, Value};

/// The version this build writes and reads.
pub const CURRENT: i64 = 2;

/// Version 1: runs, their hosts and GPUs (denormalised with the time and action class, so the
/// per-host and per-GPU counts read one covering index), and the team's notes.
const V1: &[&str] = &[
    "CREATE TABLE trainwreck_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        at BIGINT NOT NULL,
        failed_at TEXT,
        recorded_at BIGINT NOT NULL,
        job TEXT,
        verdict TEXT NOT NULL,
        fingerprint TEXT,
        category TEXT,
        action TEXT NOT NULL,
        class TEXT NOT NULL,
        confidence DOUBLE PRECISION,
        rule TEXT,
        title TEXT,
        origin_rank BIGINT,
        origin_host TEXT,
        origin_gpu BIGINT,
        origin_gpu_uuid TEXT,
        origin_pid BIGINT,
        hosts TEXT NOT NULL,
        gpus TEXT NOT NULL,
        versions TEXT NOT NULL,
        report TEXT NOT NULL
    )",
    "CREATE INDEX runs_fingerprint ON runs (fingerprint, at, category)",
    "CREATE INDEX runs_at ON runs (at)",
    "CREATE TABLE run_hosts (
        run_id TEXT NOT NULL,
        host TEXT NOT NULL,
        fingerprint TEXT,
        at BIGINT NOT NULL,
        class TEXT NOT NULL,
        blamed BIGINT NOT NULL,
        PRIMARY KEY (run_id, host)
    )",
    "CREATE INDEX run_hosts_by_host ON run_hosts (host, class, at, blamed)",
    "CREATE INDEX run_hosts_by_fingerprint ON run_hosts (fingerprint, host, at)",
    "CREATE TABLE run_gpus (
        run_id TEXT NOT NULL,
        uuid TEXT NOT NULL,
        host TEXT,
        at BIGINT NOT NULL,
        class TEXT NOT NULL,
        blamed BIGINT NOT NULL,
        PRIMARY KEY (run_id, uuid)
    )",
    "CREATE INDEX run_gpus_by_uuid ON run_gpus (uuid, class, at, blamed)",
    "CREATE INDEX run_gpus_hosts ON run_gpus (uuid, host, at)",
    "CREATE TABLE notes (
        note_id TEXT PRIMARY KEY,
        fingerprint TEXT NOT NULL,
        at BIGINT NOT NULL,
        author TEXT NOT NULL,
        text TEXT NOT NULL
    )",
    "CREATE INDEX notes_fingerprint ON notes (fingerprint, at)",
];

/// Version 2: where each run's inputs are (absolute paths, a JSON array), so that
/// `analyze --baseline last-good` can read the last good run of a job again; runs recorded
/// before have none (`NULL`) and are never picked. And fingerprints as version `fp2` writes
/// them (`fingerprint::current`: `fp1:X` is `fp2:X`), so a failure seen before the upgrade is
/// still "seen before" after it.
const V2: &[&str] = &[
    "ALTER TABLE runs ADD COLUMN inputs TEXT",
    "CREATE INDEX runs_job_verdict ON runs (job, verdict, at)",
    "UPDATE runs SET fingerprint = 'fp2:' || substr(fingerprint, 5) WHERE fingerprint LIKE 'fp1:%'",
    "UPDATE run_hosts SET fingerprint = 'fp2:' || substr(fingerprint, 5) WHERE fingerprint LIKE 'fp1:%'",
    "UPDATE notes SET fingerprint = 'fp2:' || substr(fingerprint, 5) WHERE fingerprint LIKE 'fp1:%'",
];

const MIGRATIONS: &[&[&str]] = &[V1, V2];

/// The schema version of the database (0: empty).
pub fn version(db: &mut dyn Backend) -> Result<i64> {
    if !db.has_table("trainwreck_meta")? {
        return Ok(0);
    }
    let rows = db.query(
        "SELECT value FROM trainwreck_meta WHERE key = 'schema_version'",
        &[],
    )?;
    let Some(v) = rows.first().and_then(|r| r[0].text()) else {
        return Ok(0);
    };
    match v.trim().parse::<i64>() {
        // A stored version is what a migration wrote: 1 or more. Anything else was put
        // there by hand or by another program, and nothing here may act on it.
        Ok(n) if n >= 1 => Ok(n),
        Ok(n) => Err(HistoryError(format!(
            "the history database's schema_version is {n}, not a valid schema version (versions start at 1); the database is left untouched"
        ))),
        Err(_) => Err(HistoryError(format!(
            "schema_version {v:?} is not a number"
        ))),
    }
}

/// Whether this build can use a database of `found`: equal, or empty (it is created).
pub fn check(found: i64) -> Result<()> {
    if found > CURRENT {
        return Err(HistoryError(format!(
            "the history database has schema version {found}, newer than this trainwreck knows ({CURRENT}); upgrade trainwreck (its data is left untouched)"
        )));
    }
    if found > 0 && found < CURRENT {
        return Err(HistoryError(format!(
            "the history database has schema version {found}, older than this trainwreck's ({CURRENT}); run `trainwreck history migrate`"
        )));
    }
    Ok(())
}

/// Apply every migration above the database's version, each in one transaction under a lock
/// so concurrent first users do not race. An empty database gets every step in a single
/// transaction, so another process opening it meanwhile sees it empty or current, never at
/// an intermediate version it would refuse. Returns (from, to).
pub fn migrate(db: &mut dyn Backend) -> Result<(i64, i64)> {
    let from = version(db)?;
    if from > CURRENT {
        check(from)?;
    }
    let mut v = from;
    while v < CURRENT {
        // From empty: all the way at once; else one version per transaction.
        let to = if v == 0 { CURRENT } else { v + 1 };
        let mut stmts: Vec<(&str, Vec<Value>)> = Vec::new();
        if db.kind() == Kind::Postgres {
            // Held until the transaction ends; 0x7472_776b = "trwk".
            stmts.push(("SELECT pg_advisory_xact_lock(1953658731)", vec![]));
        }
        // Re-check inside the lock: another process may have migrated meanwhile.
        match apply_locked(db, &mut stmts, v, to) {
            Ok(()) => {}
            Err(e) if version(db)? > v => {
                let _ = e;
            }
            Err(e) => return Err(e),
        }
        v = version(db)?;
    }
    Ok((from, v))
}

/// The steps that take a database from version `v` to `to`, and the version row, in one
/// transaction (after the statements already in `stmts`).
fn apply_locked(
    db: &mut dyn Backend,
    stmts: &mut Vec<(&str, Vec<Value>)>,
    v: i64,
    to: i64,
) -> Result<()> {
    if version(db)? > v {
        return Ok(());
    }
    for step in &MIGRATIONS[v as usize..to as usize] {
        for s in step.iter() {
            stmts.push((s, vec![]));
        }
    }
    let set = if v == 0 {
        "INSERT INTO trainwreck_meta (key, value) VALUES ('schema_version', $1)"
    } else {
        "UPDATE trainwreck_meta SET value = $1 WHERE key = 'schema_version'"
    };
    stmts.push((set, vec![Value::Text(to.to_string())]));
    db.transaction(stmts)
}

#[cfg(test)]
mod tests {
    /// A version of 0 or less in the table (written by hand or another program) is refused
    /// with a message by `version`, so neither `check` nor `migrate` acts on it (a negative
    /// one used to index the migrations out of range and panic).
    #[test]
    fn a_stored_version_of_zero_or_less_is_refused_not_migrated() {
        for bad in ["-5", "-1", "0"] {
            let dir = tempfile::tempdir().unwrap();
            let mut db = Sqlite::open(&dir.path().join("h.db"), 1000).unwrap();
            for s in V1 {
                db.execute(s, &[]).unwrap();
            }
            db.execute(
                "INSERT INTO trainwreck_meta (key, value) VALUES ('schema_version', $1)",
                &[Value::Text(bad.into())],
            )
            .unwrap();
            let e = version(&mut db).unwrap_err().to_string();
            assert!(e.contains("not a valid schema version"), "{bad}: {e}");
            let e = migrate(&mut db).unwrap_err().to_string();
            assert!(e.contains("not a valid schema version"), "{bad}: {e}");
        }
    }

    use super::*;
    use crate::history::backend::{Row, Sqlite};

    /// A database written by a build of schema version 1 keeps its runs through the migration
    /// to 2; they have no inputs (never picked by `last-good`), new runs can have them.
    #[test]
    fn a_version_1_database_migrates_to_2_keeping_its_runs() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = Sqlite::open(&dir.path().join("h.db"), 1000).unwrap();
        let mut stmts: Vec<(&str, Vec<Value>)> = V1.iter().map(|s| (*s, vec![])).collect();
        stmts.push((
            "INSERT INTO trainwreck_meta (key, value) VALUES ('schema_version', '1')",
            vec![],
        ));
        stmts.push((
            "INSERT INTO runs (run_id, at, recorded_at, job, verdict, fingerprint, action, class, hosts, gpus, versions, report)
             VALUES ('old', 1, 1, 'j', 'no_failure', 'fp1:00112233aabbccdd', 'none', 'none', '[]', '[]', '{}', '{}')",
            vec![],
        ));
        stmts.push((
            "INSERT INTO notes (note_id, fingerprint, at, author, text) VALUES ('n', 'fp1:00112233aabbccdd', 1, 'a', 't')",
            vec![],
        ));
        db.transaction(&stmts).unwrap();
        assert_eq!(version(&mut db).unwrap(), 1);
        assert!(check(1).unwrap_err().0.contains("history migrate"));
        assert_eq!(migrate(&mut db).unwrap(), (1, 2));
        assert_eq!(version(&mut db).unwrap(), CURRENT);
        let rows = db.query("SELECT run_id, inputs FROM runs", &[]).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0][0].text().as_deref(), Some("old"));
        assert_eq!(rows[0][1].text(), None);
        // fp1 fingerprints now read as fp2 writes them, in runs and notes alike.
        for table in ["runs", "notes"] {
            let q = format!("SELECT fingerprint FROM {table}");
            let rows = db.query(&q, &[]).unwrap();
            assert_eq!(
                rows[0][0].text().as_deref(),
                Some("fp2:00112233aabbccdd"),
                "{table}"
            );
        }
        // Migrating again changes nothing.
        assert_eq!(migrate(&mut db).unwrap(), (2, 2));
    }

    /// Records each committed transaction's schema version as a second process would see it.
    struct Watched {
        db: Sqlite,
        seen: Vec<i64>,
    }
    impl Backend for Watched {
        fn kind(&self) -> Kind {
            self.db.kind()
        }
        fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64> {
            self.db.execute(sql, params)
        }
        fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>> {
            self.db.query(sql, params)
        }
        fn transaction(&mut self, stmts: &[(&str, Vec<Value>)]) -> Result<()> {
            self.db.transaction(stmts)?;
            let v = version(&mut self.db)?;
            self.seen.push(v);
            Ok(())
        }
        fn has_table(&mut self, name: &str) -> Result<bool> {
            self.db.has_table(name)
        }
    }

    /// An empty database is created at the current version in one transaction: a process that
    /// opens it meanwhile sees it empty or current, never at a version it would refuse (eight
    /// processes recording into a fresh PostgreSQL database hit that: one read version 1).
    #[test]
    fn an_empty_database_goes_to_the_current_version_in_one_transaction() {
        let dir = tempfile::tempdir().unwrap();
        let db = Sqlite::open(&dir.path().join("h.db"), 1000).unwrap();
        let mut w = Watched {
            db,
            seen: Vec::new(),
        };
        assert_eq!(migrate(&mut w).unwrap(), (0, CURRENT));
        assert_eq!(w.seen, vec![CURRENT]);
        assert!(check(w.seen[0]).is_ok());
        assert!(w.has_table("notes").unwrap());
    }
}
