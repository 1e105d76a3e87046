//! The failure history: every recorded diagnosis, "seen before" for a fingerprint, the team's
//! notes, per-host / per-GPU failure counts, and the fleet's report over a window. One `Store` over two back-ends (SQLite by
//! default, PostgreSQL for a team) sharing one versioned schema. It takes its values from the
//! finished `Report` (never re-reads logs) and returns data; `report` renders it. A history
//! problem is an error value for the caller to print beside the diagnosis, never a panic.

pub(crate) mod backend;
pub mod command;
pub(crate) mod fleet;
pub mod record;
pub(crate) mod schema;
pub mod stats;

pub use backend::{HistoryError, Result};
pub use record::{RecordContext, RunRecord};

use crate::correlate::fingerprint;
use crate::model::{Note, Seen, SeenRun, Text};
use backend::{Backend, Postgres, Sqlite, Value};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::path::PathBuf;

/// Runs listed under `history` in a report (all of them in `history show`).
pub const REPORT_RUNS: usize = 10;

/// Where the history lives. Parsed once from `--db` / `TRAINWRECK_DB`; shown (Display)
/// only without its password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Sqlite(PathBuf),
    /// A PostgreSQL URL (its scheme in lower case), or a libpq keyword/value connection
    /// string (`host=db user=tw password=… dbname=h`), which the driver parses alike.
    Postgres(String),
    /// What the history cannot use: a URL of another scheme (`mysql://`,
    /// `postgresql+psycopg2://`), or a string shaped like a URL that is not one
    /// (`postgres:/db`, `postgresql:db`). An error when opened, never a file named after it.
    /// `shown` has no password; `why` says what to give instead.
    Unusable {
        shown: String,
        why: String,
    },
}

impl Location {
    pub fn parse(s: &str) -> Location {
        let Some((scheme, _)) = backend::url_scheme(s) else {
            if backend::is_conninfo(s) {
                return Location::Postgres(s.trim().to_string());
            }
            if let Some(why) = backend::not_quite_a_url(s) {
                return Location::Unusable {
                    shown: backend::without_password(s),
                    why,
                };
            }
            return Location::Sqlite(PathBuf::from(s));
        };
        let lower = scheme.to_ascii_lowercase();
        match lower.as_str() {
            "postgres" | "postgresql" => {
                Location::Postgres(format!("{lower}{}", &s[scheme.len()..]))
            }
            // `sqlite:///abs/path` and `sqlite://rel/path` name a file.
            "sqlite" | "sqlite3" => Location::Sqlite(PathBuf::from(&s[scheme.len() + 3..])),
            _ => Location::Unusable {
                shown: backend::without_password(s),
                why: format!(
                    "{scheme}:// is not a history database (give a SQLite path or postgres://user@host/db)"
                ),
            },
        }
    }

    /// For messages: the path, or the URL without its password.
    pub fn shown(&self) -> String {
        self.to_string()
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Sqlite(p) => write!(f, "{}", p.display()),
            Location::Postgres(u) => f.write_str(&backend::without_password(u)),
            Location::Unusable { shown, .. } => f.write_str(shown),
        }
    }
}

/// `$XDG_DATA_HOME/trainwreck/history.db`, else `~/.local/share/trainwreck/history.db`.
pub fn default_path() -> Option<PathBuf> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let base = env("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
    Some(base.join("trainwreck").join("history.db"))
}

/// The history to use: `--db`, else `TRAINWRECK_DB`, else the default path — the default
/// only when it already exists or `create` is asked (recording), so a plain `analyze` never
/// leaves a database behind. `None`: no history is configured.
pub fn locate(flag: Option<&str>, create: bool) -> Option<Location> {
    if let Some(f) = flag.filter(|f| !f.is_empty()) {
        return Some(Location::parse(f));
    }
    if let Ok(e) = std::env::var("TRAINWRECK_DB")
        && !e.is_empty()
    {
        return Some(Location::parse(&e));
    }
    default_path()
        .filter(|p| create || p.exists())
        .map(Location::Sqlite)
}

/// How long to wait for a locked SQLite file or a PostgreSQL connection
/// (`TRAINWRECK_DB_TIMEOUT_MS`, default 5000).
pub fn timeout_ms() -> u64 {
    std::env::var("TRAINWRECK_DB_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5000)
}

/// Seconds since the epoch, now.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// The Chinese title of a stored report's lead finding, where it had one.
fn lead_title_zh(report: String) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(&report).ok()?;
    Some(v["findings"][0]["title_zh"].as_str()?.to_string())
}

pub fn utc(secs: i64) -> String {
    crate::sources::units::utc_z(secs.max(0) as u64)
}

pub use crate::report::history::ListEntry;

/// A line of `history export`: a run or a note.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum ExportLine {
    Run(Box<RunRecord>),
    Note {
        fingerprint: String,
        #[serde(flatten)]
        note: Note,
    },
}

/// What an import did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ImportCount {
    pub runs: u64,
    pub notes: u64,
}

pub struct Store {
    db: Box<dyn Backend + Send>,
    location: Location,
    /// Keep texts as given (`--store-raw`); by default every run and note is stored with its
    /// secrets masked, whatever format the run was printed in.
    raw: bool,
}

impl Store {
    /// Connect without looking at the schema (for `history migrate`).
    pub fn connect(loc: &Location) -> Result<Store> {
        let ms = timeout_ms();
        let db: Box<dyn Backend + Send> = match loc {
            Location::Sqlite(p) => Box::new(Sqlite::open(p, ms)?),
            Location::Postgres(u) => Box::new(Postgres::connect(u, ms)?),
            Location::Unusable { shown, why } => {
                return Err(HistoryError(format!("history database {shown}: {why}")));
            }
        };
        Ok(Store {
            db,
            location: loc.clone(),
            raw: false,
        })
    }

    /// Store texts as given (`--store-raw`) instead of with secrets masked.
    pub fn store_raw(&mut self, raw: bool) {
        self.raw = raw;
    }

    /// Connect and check the schema version: an empty database gets the current schema; an
    /// older or newer one is an error saying what to do.
    pub fn open(loc: &Location) -> Result<Store> {
        let mut s = Store::connect(loc)?;
        let v = schema::version(s.db.as_mut()).map_err(|e| s.context(e))?;
        schema::check(v).map_err(|e| s.context(e))?;
        if v == 0 {
            schema::migrate(s.db.as_mut()).map_err(|e| s.context(e))?;
        }
        Ok(s)
    }

    /// [`Store::open`] for the views that only read (`history list|show|hosts|gpus|export`):
    /// a SQLite file is opened read-only and never migrated, so a read-only database (or
    /// one in a directory the user cannot write) can still be looked at.
    pub fn open_read(loc: &Location) -> Result<Store> {
        let mut s = match loc {
            Location::Sqlite(p) => Store {
                db: Box::new(backend::Sqlite::open_read_only(p, timeout_ms())?),
                location: loc.clone(),
                raw: false,
            },
            // PostgreSQL, and a location `connect` refuses with its reason.
            _ => Store::connect(loc)?,
        };
        let v = schema::version(s.db.as_mut()).map_err(|e| s.context(e))?;
        schema::check(v).map_err(|e| s.context(e))?;
        if v == 0 {
            return Err(s.context(HistoryError(
                "holds no history yet (record a run with `analyze --record`)".into(),
            )));
        }
        Ok(s)
    }

    fn context(&self, e: HistoryError) -> HistoryError {
        if e.0.starts_with("history database") {
            e
        } else {
            HistoryError(format!("history database {}: {}", self.shown(), e.0))
        }
    }

    fn shown(&self) -> String {
        self.location.shown()
    }

    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Bring the schema to the current version: (from, to).
    pub fn migrate(&mut self) -> Result<(i64, i64)> {
        schema::migrate(self.db.as_mut()).map_err(|e| self.context(e))
    }

    /// Insert or replace one run (the same run recorded twice stays one row).
    pub fn record(&mut self, r: &RunRecord) -> Result<()> {
        self.record_many(std::slice::from_ref(r))
    }

    /// Insert or replace runs in one transaction (imports and generators).
    pub fn record_many(&mut self, runs: &[RunRecord]) -> Result<()> {
        let masked: Vec<RunRecord>;
        let runs = if self.raw {
            runs
        } else {
            masked = runs.iter().map(RunRecord::redacted).collect();
            &masked
        };
        let owned = record_statements(runs);
        let stmts: Vec<(&str, Vec<Value>)> = owned
            .iter()
            .map(|(sql, v)| (sql.as_str(), v.clone()))
            .collect();
        self.db.transaction(&stmts).map_err(|e| self.context(e))
    }

    /// Attach a note to a fingerprint. The same note (text, author, time) is kept once.
    pub fn note(&mut self, fingerprint: &str, note: &Note) -> Result<()> {
        let masked;
        let note = if self.raw {
            note
        } else {
            let mut red = crate::redact::Redactor::new(Default::default());
            masked = Note {
                text: red.text(&note.text),
                author: red.text(&note.author),
                time: note.time.clone(),
            };
            &masked
        };
        let at = crate::sources::units::epoch_from_iso(&note.time)
            .map(|t| t as i64)
            .unwrap_or_else(now);
        let id = record::hash_hex(&[fingerprint, &note.time, &note.author, &note.text]);
        self.db
            .execute(
                "INSERT INTO notes (note_id, fingerprint, at, author, text) VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (note_id) DO NOTHING",
                &[
                    id.into(),
                    fingerprint.into(),
                    at.into(),
                    note.author.clone().into(),
                    note.text.clone().into(),
                ],
            )
            .map(|_| ())
            .map_err(|e| self.context(e))
    }

    fn notes(&mut self, fingerprint: &str) -> Result<Vec<Note>> {
        let rows = self
            .db
            .query(
                "SELECT text, author, at FROM notes WHERE fingerprint = $1 ORDER BY at, note_id",
                &[fingerprint.into()],
            )
            .map_err(|e| self.context(e))?;
        Ok(rows
            .iter()
            .map(|r| Note {
                text: r[0].text().unwrap_or_default(),
                author: r[1].text().unwrap_or_default(),
                time: utc(r[2].int().unwrap_or(0)),
            })
            .collect())
    }

    /// What the history knows of `fingerprint`: counts, first/last seen, hosts, notes and
    /// the newest `limit` runs. `this_run` marks the current run when it is in the history.
    pub fn seen(
        &mut self,
        fingerprint: &str,
        this_run: Option<&str>,
        limit: usize,
    ) -> Result<Seen> {
        let fp: Value = fingerprint.into();
        let agg = self
            .db
            .query(
                "SELECT count(*), min(at), max(at) FROM runs WHERE fingerprint = $1",
                std::slice::from_ref(&fp),
            )
            .map_err(|e| self.context(e))?;
        let (count, first, last) = agg
            .first()
            .map(|r| (r[0].int().unwrap_or(0), r[1].int(), r[2].int()))
            .unwrap_or((0, None, None));
        let runs = self
            .db
            .query(
                "SELECT run_id, at, job, origin_host, verdict FROM runs WHERE fingerprint = $1
                 ORDER BY at DESC, run_id LIMIT $2",
                &[fp.clone(), Value::Int(limit as i64)],
            )
            .map_err(|e| self.context(e))?
            .iter()
            .map(|r| SeenRun {
                run_id: r[0].text().unwrap_or_default(),
                time: utc(r[1].int().unwrap_or(0)),
                job: r[2].text(),
                host: r[3].text(),
                verdict: r[4].text().unwrap_or_default(),
            })
            .collect();
        let hosts = self
            .db
            .query(
                "SELECT DISTINCT host FROM run_hosts WHERE fingerprint = $1 ORDER BY host",
                std::slice::from_ref(&fp),
            )
            .map_err(|e| self.context(e))?
            .iter()
            .filter_map(|r| r[0].text())
            .collect();
        let this_run = match this_run {
            Some(id) => {
                let n = self
                    .db
                    .query(
                        "SELECT count(*) FROM runs WHERE run_id = $1 AND fingerprint = $2",
                        &[id.into(), fp.clone()],
                    )
                    .map_err(|e| self.context(e))?;
                (n.first().and_then(|r| r[0].int()).unwrap_or(0) > 0).then(|| id.to_string())
            }
            None => None,
        };
        Ok(Seen {
            fingerprint: fingerprint.to_string(),
            count: count.max(0) as u64,
            runs,
            first_seen: first.map(utc),
            last_seen: last.map(utc),
            hosts,
            notes: self.notes(fingerprint)?,
            this_run,
            asked_at: now(),
        })
    }

    /// The top fingerprints since `since` (Unix seconds), optionally of one category.
    pub fn list(
        &mut self,
        since: Option<i64>,
        category: Option<&str>,
        limit: usize,
    ) -> Result<Vec<ListEntry>> {
        let rows = self
            .db
            .query(
                "SELECT fingerprint, count(*), min(at), max(at), max(category)
                 FROM runs WHERE fingerprint IS NOT NULL AND at >= $1
                   AND ($2 = '' OR category = $2)
                 GROUP BY fingerprint ORDER BY count(*) DESC, max(at) DESC LIMIT $3",
                &[
                    Value::Int(since.unwrap_or(i64::MIN)),
                    category.unwrap_or("").into(),
                    Value::Int(limit as i64),
                ],
            )
            .map_err(|e| self.context(e))?;
        let mut out = Vec::new();
        for r in rows {
            let fp = r[0].text().unwrap_or_default();
            let hosts = self
                .db
                .query(
                    "SELECT DISTINCT host FROM run_hosts WHERE fingerprint = $1 AND at >= $2
                     ORDER BY host",
                    &[fp.clone().into(), Value::Int(since.unwrap_or(i64::MIN))],
                )
                .map_err(|e| self.context(e))?
                .iter()
                .filter_map(|r| r[0].text())
                .collect();
            let note = self.notes(&fp)?.pop();
            let latest = self
                .db
                .query(
                    "SELECT rule, title, report FROM runs WHERE fingerprint = $1 ORDER BY at DESC LIMIT 1",
                    &[fp.clone().into()],
                )
                .map_err(|e| self.context(e))?;
            let latest = latest.first();
            out.push(ListEntry {
                fingerprint: fp,
                count: r[1].int().unwrap_or(0).max(0) as u64,
                first_seen: r[2].int().map(utc),
                last_seen: r[3].int().map(utc),
                category: r[4].text(),
                rule: latest.and_then(|l| l[0].text()),
                title: latest.and_then(|l| l[1].text()).map(|en| {
                    // The Chinese title is in the stored report's lead finding, where it had one.
                    Text::given(en, latest.and_then(|l| l[2].text()).and_then(lead_title_zh))
                }),
                hosts,
                note,
            });
        }
        Ok(out)
    }

    /// Number of runs recorded (all verdicts).
    pub fn run_count(&mut self) -> Result<u64> {
        let r = self
            .db
            .query("SELECT count(*) FROM runs", &[])
            .map_err(|e| self.context(e))?;
        Ok(r.first().and_then(|r| r[0].int()).unwrap_or(0).max(0) as u64)
    }

    /// The inputs of the last run of `job` whose verdict was `no_failure` and whose inputs
    /// were recorded (schema version 2): its run id and absolute paths.
    pub fn last_good(&mut self, job: &str) -> Result<Option<(String, Vec<String>)>> {
        let rows = self
            .db
            .query(
                "SELECT run_id, inputs FROM runs
                 WHERE job = $1 AND verdict = 'no_failure' AND inputs IS NOT NULL
                 ORDER BY at DESC, recorded_at DESC LIMIT 1",
                &[job.to_string().into()],
            )
            .map_err(|e| self.context(e))?;
        Ok(rows.first().map(|r| {
            let paths = r[1]
                .text()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or_default();
            (r[0].text().unwrap_or_default(), paths)
        }))
    }

    /// Every run and note as JSON Lines, oldest run first, then the notes; through `red`
    /// when given (`history export --redact`).
    pub fn export(
        &mut self,
        out: &mut dyn Write,
        mut red: Option<&mut crate::redact::Redactor>,
    ) -> Result<ImportCount> {
        let mut line_of = |line: &ExportLine| -> Result<String> {
            let e = |e: serde_json::Error| HistoryError(format!("export: {e}"));
            match red.as_deref_mut() {
                None => serde_json::to_string(line).map_err(e),
                Some(red) => {
                    let mut v = serde_json::to_value(line).map_err(e)?;
                    red.json(&mut v);
                    serde_json::to_string(&v).map_err(e)
                }
            }
        };
        let mut n = ImportCount::default();
        let io = |e: std::io::Error| HistoryError(format!("export: {e}"));
        let rows = self
            .db
            .query(
                "SELECT run_id, at, failed_at, recorded_at, job, verdict, fingerprint, category,
                    action, confidence, rule, title, origin_rank, origin_host, origin_gpu,
                    origin_gpu_uuid, origin_pid, hosts, gpus, versions, report, inputs
                 FROM runs ORDER BY at, run_id",
                &[],
            )
            .map_err(|e| self.context(e))?;
        for r in rows {
            let rec = RunRecord::from_row(&r);
            let line = line_of(&ExportLine::Run(Box::new(rec)))?;
            writeln!(out, "{line}").map_err(io)?;
            n.runs += 1;
        }
        let notes = self
            .db
            .query(
                "SELECT fingerprint, text, author, at FROM notes ORDER BY at, note_id",
                &[],
            )
            .map_err(|e| self.context(e))?;
        for r in notes {
            let line = ExportLine::Note {
                fingerprint: r[0].text().unwrap_or_default(),
                note: Note {
                    text: r[1].text().unwrap_or_default(),
                    author: r[2].text().unwrap_or_default(),
                    time: utc(r[3].int().unwrap_or(0)),
                },
            };
            let line = line_of(&line)?;
            writeln!(out, "{line}").map_err(io)?;
            n.notes += 1;
        }
        Ok(n)
    }

    /// Read JSON Lines written by `export` (runs upserted, notes kept once): merging two
    /// histories is importing one into the other. A bad line (unparsable, longer than
    /// `limits::IMPORT_LINE_BYTES`, a text longer than `limits::IMPORT_FIELD_BYTES`, a NUL for
    /// PostgreSQL) stops the import: every line before it is committed, none after it is
    /// read, and the error says both.
    pub fn import(&mut self, input: &mut dyn BufRead) -> Result<ImportCount> {
        let mut n = ImportCount::default();
        let mut batch: Vec<RunRecord> = Vec::new();
        let mut line = Vec::new();
        let postgres = self.db.kind() == backend::Kind::Postgres;
        let mut lineno = 0u64;
        let mut batch_note: Option<(String, Note)> = None;
        loop {
            lineno += 1;
            let bad = match read_capped_line(input, &mut line) {
                Ok(None) => break,
                Ok(Some(true)) => Some(format!(
                    "line {lineno} is over limits::IMPORT_LINE_BYTES ({} bytes)",
                    crate::limits::IMPORT_LINE_BYTES
                )),
                Ok(Some(false)) => import_line(&line, postgres)
                    .map(|parsed| match parsed {
                        None => {}
                        Some(ExportLine::Run(mut r)) => {
                            r.fingerprint = r.fingerprint.as_deref().map(fingerprint::current);
                            batch.push(*r);
                        }
                        Some(ExportLine::Note { fingerprint, note }) => {
                            batch_note = Some((fingerprint, note));
                        }
                    })
                    .err()
                    .map(|e| format!("line {lineno}: {e}")),
                Err(e) => Some(format!("line {lineno}: {e}")),
            };
            if let Some(why) = bad {
                // What came before the bad line is kept, and said.
                self.record_many(&batch)?;
                n.runs += batch.len() as u64;
                return Err(HistoryError(format!(
                    "import: {why}: stopped there; the {} runs and {} notes before it were imported, nothing from it on was read",
                    n.runs, n.notes
                )));
            }
            if let Some((fp, note)) = batch_note.take() {
                self.note(&fingerprint::current(&fp), &note)?;
                n.notes += 1;
            }
            if batch.len() >= 500 {
                self.record_many(&batch)?;
                n.runs += batch.len() as u64;
                batch.clear();
            }
        }
        self.record_many(&batch)?;
        n.runs += batch.len() as u64;
        Ok(n)
    }

    /// `history hosts` / `history gpus` since `since` (Unix seconds).
    pub fn fleet(
        &mut self,
        unit: stats::Unit,
        since: Option<i64>,
        alpha: f64,
    ) -> Result<stats::FleetStats> {
        stats::fleet(self.db.as_mut(), unit, since, alpha).map_err(|e| self.context(e))
    }
}

/// The next line of `input` into `line` (without its newline), at most
/// `limits::IMPORT_LINE_BYTES` of it held: `Some(true)` when it was longer (the rest is
/// skipped), `None` at the end.
fn read_capped_line(input: &mut dyn BufRead, line: &mut Vec<u8>) -> std::io::Result<Option<bool>> {
    use std::io::Read;
    let cap = crate::limits::IMPORT_LINE_BYTES as u64;
    line.clear();
    let k = input.take(cap + 1).read_until(b'\n', line)?;
    if k == 0 {
        return Ok(None);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
        return Ok(Some(false));
    }
    if line.len() as u64 > cap {
        line.clear();
        // Skip the rest of the line, a buffer at a time.
        loop {
            let buf = input.fill_buf()?;
            if buf.is_empty() {
                break;
            }
            match memchr::memchr(b'\n', buf) {
                Some(i) => {
                    input.consume(i + 1);
                    break;
                }
                None => {
                    let n = buf.len();
                    input.consume(n);
                }
            }
        }
        return Ok(Some(true));
    }
    Ok(Some(false))
}

/// One exported line read: `None` for a blank one. Every text in it is at most
/// `limits::IMPORT_FIELD_BYTES`; for PostgreSQL, which cannot store it, none holds a NUL.
fn import_line(line: &[u8], postgres: bool) -> std::result::Result<Option<ExportLine>, String> {
    let text = std::str::from_utf8(line).map_err(|e| format!("not UTF-8: {e}"))?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let mut stack = vec![&v];
    while let Some(v) = stack.pop() {
        match v {
            serde_json::Value::String(s) => {
                if s.len() > crate::limits::IMPORT_FIELD_BYTES {
                    return Err(format!(
                        "a text of {} bytes, over limits::IMPORT_FIELD_BYTES ({})",
                        s.len(),
                        crate::limits::IMPORT_FIELD_BYTES
                    ));
                }
                if postgres && s.contains('\0') {
                    return Err("a text holds a NUL character (\\u0000), which PostgreSQL cannot store; remove it from the export (SQLite stores it)".into());
                }
            }
            serde_json::Value::Array(a) => stack.extend(a),
            serde_json::Value::Object(o) => stack.extend(o.values()),
            _ => {}
        }
    }
    serde_json::from_value(v)
        .map(Some)
        .map_err(|e| e.to_string())
}

/// `($1, $2, $3), ($4, $5, $6)` for `rows` rows of `cols` values.
fn placeholders(rows: usize, cols: usize) -> String {
    (0..rows)
        .map(|r| {
            let row: Vec<String> = (1..=cols).map(|c| format!("${}", r * cols + c)).collect();
            format!("({})", row.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

const RUN_COLUMNS: &[&str] = &[
    "run_id",
    "at",
    "failed_at",
    "recorded_at",
    "job",
    "verdict",
    "fingerprint",
    "category",
    "action",
    "class",
    "confidence",
    "rule",
    "title",
    "origin_rank",
    "origin_host",
    "origin_gpu",
    "origin_gpu_uuid",
    "origin_pid",
    "hosts",
    "gpus",
    "versions",
    "report",
    "inputs",
];

/// Runs per multi-row statement (far below both back-ends' limits on bound values).
const ROWS_PER_STATEMENT: usize = 200;

/// The statements that insert or replace runs and their host and GPU rows, many rows per
/// statement (a server round trip each). A run given twice is written once, the last wins.
fn record_statements(runs: &[RunRecord]) -> Vec<(String, Vec<Value>)> {
    let mut last: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, r) in runs.iter().enumerate() {
        last.insert(&r.run_id, i);
    }
    let unique: Vec<&RunRecord> = runs
        .iter()
        .enumerate()
        .filter(|(i, r)| last.get(r.run_id.as_str()) == Some(i))
        .map(|(_, r)| r)
        .collect();
    let mut stmts = Vec::new();
    for chunk in unique.chunks(ROWS_PER_STATEMENT) {
        let mut values = Vec::new();
        let mut hosts = Vec::new();
        let mut gpus = Vec::new();
        let ids: Vec<Value> = chunk.iter().map(|r| r.run_id.clone().into()).collect();
        for r in chunk {
            let class = r.class();
            let json =
                |v: serde_json::Result<String>, empty: &str| v.unwrap_or_else(|_| empty.into());
            let o = &r.origin;
            values.extend([
                r.run_id.clone().into(),
                r.at().into(),
                r.failed_at.clone().into(),
                r.recorded_at.into(),
                r.job.clone().into(),
                r.verdict.clone().into(),
                r.fingerprint.clone().into(),
                r.category.clone().into(),
                r.action.clone().into(),
                class.into(),
                r.confidence.into(),
                r.rule.clone().into(),
                r.title.clone().into(),
                o.rank.into(),
                o.host.clone().into(),
                o.gpu.into(),
                o.gpu_uuid.clone().into(),
                o.pid.into(),
                json(serde_json::to_string(&r.hosts), "[]").into(),
                json(serde_json::to_string(&r.gpus), "[]").into(),
                json(serde_json::to_string(&r.versions), "{}").into(),
                json(serde_json::to_string(&r.report), "null").into(),
                match r.inputs.is_empty() {
                    true => Value::Null,
                    false => json(serde_json::to_string(&r.inputs), "[]").into(),
                },
            ]);
            let mut seen_hosts = std::collections::BTreeSet::new();
            for h in r.hosts.iter().filter(|h| seen_hosts.insert(h.as_str())) {
                hosts.push(vec![
                    r.run_id.clone().into(),
                    h.clone().into(),
                    r.fingerprint.clone().into(),
                    r.at().into(),
                    class.into(),
                    Value::Int(r.blames_host(h).into()),
                ]);
            }
            let mut seen_gpus = std::collections::BTreeSet::new();
            for g in r.gpus.iter().filter(|g| seen_gpus.insert(g.uuid.as_str())) {
                gpus.push(vec![
                    r.run_id.clone().into(),
                    g.uuid.clone().into(),
                    g.host.clone().into(),
                    r.at().into(),
                    class.into(),
                    Value::Int(r.blames_gpu(&g.uuid).into()),
                ]);
            }
        }
        let update: Vec<String> = RUN_COLUMNS[1..]
            .iter()
            .map(|c| format!("{c} = excluded.{c}"))
            .collect();
        stmts.push((
            format!(
                "INSERT INTO runs ({}) VALUES {} ON CONFLICT (run_id) DO UPDATE SET {}",
                RUN_COLUMNS.join(", "),
                placeholders(chunk.len(), RUN_COLUMNS.len()),
                update.join(", ")
            ),
            values,
        ));
        let list = placeholders(1, ids.len());
        stmts.push((
            format!("DELETE FROM run_hosts WHERE run_id IN {list}"),
            ids.clone(),
        ));
        stmts.push((format!("DELETE FROM run_gpus WHERE run_id IN {list}"), ids));
        for rows in hosts.chunks(ROWS_PER_STATEMENT * 4) {
            stmts.push((
                format!(
                    "INSERT INTO run_hosts (run_id, host, fingerprint, at, class, blamed) VALUES {}
                     ON CONFLICT (run_id, host) DO NOTHING",
                    placeholders(rows.len(), 6)
                ),
                rows.concat(),
            ));
        }
        for rows in gpus.chunks(ROWS_PER_STATEMENT * 4) {
            stmts.push((
                format!(
                    "INSERT INTO run_gpus (run_id, uuid, host, at, class, blamed) VALUES {}
                     ON CONFLICT (run_id, uuid) DO NOTHING",
                    placeholders(rows.len(), 6)
                ),
                rows.concat(),
            ));
        }
    }
    stmts
}
