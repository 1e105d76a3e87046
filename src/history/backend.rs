//! The two database back-ends behind one small interface: run a statement, run a query, run
//! statements in one transaction. SQL is written once (in `schema` and `store`) in the dialect
//! both SQLite and PostgreSQL accept (`$1` placeholders, `ON CONFLICT`, BIGINT/TEXT/DOUBLE
//! PRECISION); this module only moves values in and out and turns driver errors into
//! messages that say what to do. It must not hold any query logic of its own.

use std::fmt;
use std::time::Duration;

/// A value bound to or read from a statement. Integers are 64-bit on both back-ends.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

impl Value {
    pub fn int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Real(f) => Some(*f as i64),
            _ => None,
        }
    }
    pub fn real(&self) -> Option<f64> {
        match self {
            Value::Real(f) => Some(*f),
            Value::Int(i) => Some(*i as f64),
            _ => None,
        }
    }
    pub fn text(&self) -> Option<String> {
        match self {
            Value::Text(s) => Some(s.clone()),
            _ => None,
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::Text(s.to_string())
    }
}
impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Text(s)
    }
}
impl From<i64> for Value {
    fn from(i: i64) -> Self {
        Value::Int(i)
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(o: Option<T>) -> Self {
        o.map(Into::into).unwrap_or(Value::Null)
    }
}
impl From<f64> for Value {
    fn from(f: f64) -> Self {
        Value::Real(f)
    }
}

pub type Row = Vec<Value>;

/// Why the history could not be used, worded for the person who configured it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryError(pub String);

impl fmt::Display for HistoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for HistoryError {}

pub type Result<T> = std::result::Result<T, HistoryError>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sqlite,
    Postgres,
}

/// One connection to a history database.
pub trait Backend {
    fn kind(&self) -> Kind;
    /// Run one statement; the number of rows it changed.
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64>;
    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>>;
    /// Run the statements in one write transaction (taken at once, not upgraded later, so
    /// concurrent writers queue instead of deadlocking).
    fn transaction(&mut self, stmts: &[(&str, Vec<Value>)]) -> Result<()>;
    /// Whether a table exists (schema version 0 when `trainwreck_meta` does not).
    fn has_table(&mut self, name: &str) -> Result<bool>;
}

// ---- SQLite ----

pub struct Sqlite {
    conn: rusqlite::Connection,
    what: String,
    busy_ms: u64,
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, Value as V};
        Ok(ToSqlOutput::Owned(match self {
            Value::Null => V::Null,
            Value::Int(i) => V::Integer(*i),
            Value::Real(f) => V::Real(*f),
            Value::Text(s) => V::Text(s.clone()),
        }))
    }
}

impl Sqlite {
    /// Open (creating it and its directory if missing) with WAL and a busy timeout.
    pub fn open(path: &std::path::Path, busy_ms: u64) -> Result<Sqlite> {
        let what = format!("history database {}", path.display());
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                HistoryError(format!("{what}: cannot create {}: {e}", dir.display()))
            })?;
        }
        let conn = rusqlite::Connection::open(path).map_err(|e| sqlite_error(&what, busy_ms, e))?;
        let s = Sqlite {
            conn,
            what,
            busy_ms,
        };
        s.conn
            .busy_timeout(Duration::from_millis(busy_ms))
            .map_err(|e| sqlite_error(&s.what, busy_ms, e))?;
        // WAL lets readers and one writer work at once. Switching needs a moment's exclusive
        // lock, which the busy handler does not always wait for: retry within the timeout.
        let start = std::time::Instant::now();
        loop {
            match s
                .conn
                .query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))
            {
                Ok(_) => break,
                Err(e) if is_busy(&e) && start.elapsed() < Duration::from_millis(busy_ms) => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(sqlite_error(&s.what, busy_ms, e)),
            }
        }
        s.conn
            .execute_batch("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")
            .map_err(|e| sqlite_error(&s.what, busy_ms, e))?;
        Ok(s)
    }

    /// Open an existing database for reading only: no WAL switch, no directory created, so a
    /// user who may read the file but not write it (or its directory) can still look. A WAL
    /// database whose `-shm` cannot be made is read as immutable (no locks: a view).
    pub fn open_read_only(path: &std::path::Path, busy_ms: u64) -> Result<Sqlite> {
        use rusqlite::OpenFlags as F;
        let what = format!("history database {}", path.display());
        let open = |p: &str, flags: F| -> rusqlite::Result<rusqlite::Connection> {
            let c = rusqlite::Connection::open_with_flags(p, flags)?;
            c.busy_timeout(Duration::from_millis(busy_ms))?;
            c.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
                r.get::<_, i64>(0)
            })?;
            Ok(c)
        };
        let plain = path.to_string_lossy();
        let conn = open(&plain, F::SQLITE_OPEN_READ_ONLY | F::SQLITE_OPEN_NO_MUTEX).or_else(|_| {
            let uri = format!(
                "file:{}?immutable=1",
                plain.replace('?', "%3f").replace('#', "%23")
            );
            open(
                &uri,
                F::SQLITE_OPEN_READ_ONLY | F::SQLITE_OPEN_NO_MUTEX | F::SQLITE_OPEN_URI,
            )
        });
        let conn = conn.map_err(|e| sqlite_error(&what, busy_ms, e))?;
        Ok(Sqlite {
            conn,
            what,
            busy_ms,
        })
    }

    fn err(&self, e: rusqlite::Error) -> HistoryError {
        sqlite_error(&self.what, self.busy_ms, e)
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

fn sqlite_error(what: &str, busy_ms: u64, e: rusqlite::Error) -> HistoryError {
    use rusqlite::ErrorCode as C;
    HistoryError(match e.sqlite_error_code() {
        Some(C::NotADatabase) | Some(C::DatabaseCorrupt) => format!(
            "{what} is not a SQLite database or is corrupt ({e}); move it aside or point --db / TRAINWRECK_DB elsewhere"
        ),
        Some(C::DatabaseBusy) | Some(C::DatabaseLocked) => format!(
            "{what} stayed locked by another process for more than {busy_ms} ms ({e}); retry, or raise TRAINWRECK_DB_TIMEOUT_MS"
        ),
        Some(C::CannotOpen) | Some(C::PermissionDenied) | Some(C::ReadOnly) => {
            format!("{what} cannot be opened for writing ({e})")
        }
        _ => format!("{what}: {e}"),
    })
}

fn sqlite_row(r: &rusqlite::Row<'_>, n: usize) -> rusqlite::Result<Row> {
    use rusqlite::types::ValueRef;
    (0..n)
        .map(|i| {
            Ok(match r.get_ref(i)? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(i) => Value::Int(i),
                ValueRef::Real(f) => Value::Real(f),
                ValueRef::Text(t) | ValueRef::Blob(t) => {
                    Value::Text(String::from_utf8_lossy(t).into_owned())
                }
            })
        })
        .collect()
}

impl Backend for Sqlite {
    fn kind(&self) -> Kind {
        Kind::Sqlite
    }
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64> {
        self.conn
            .execute(sql, rusqlite::params_from_iter(params))
            .map(|n| n as u64)
            .map_err(|e| self.err(e))
    }
    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>> {
        let run = |c: &rusqlite::Connection| -> rusqlite::Result<Vec<Row>> {
            let mut st = c.prepare_cached(sql)?;
            let n = st.column_count();
            let rows = st.query_map(rusqlite::params_from_iter(params), |r| sqlite_row(r, n))?;
            rows.collect()
        };
        run(&self.conn).map_err(|e| self.err(e))
    }
    fn transaction(&mut self, stmts: &[(&str, Vec<Value>)]) -> Result<()> {
        let what = self.what.clone();
        let busy = self.busy_ms;
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| sqlite_error(&what, busy, e))?;
        for (sql, p) in stmts {
            tx.prepare_cached(sql)
                .and_then(|mut st| st.execute(rusqlite::params_from_iter(p)))
                .map_err(|e| sqlite_error(&what, busy, e))?;
        }
        tx.commit().map_err(|e| sqlite_error(&what, busy, e))
    }
    fn has_table(&mut self, name: &str) -> Result<bool> {
        let rows = self.query(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = $1",
            &[name.into()],
        )?;
        Ok(rows.first().and_then(|r| r[0].int()).unwrap_or(0) > 0)
    }
}

// ---- PostgreSQL ----

pub struct Postgres {
    client: postgres::Client,
    what: String,
}

impl postgres::types::ToSql for Value {
    fn to_sql(
        &self,
        ty: &postgres::types::Type,
        out: &mut bytes::BytesMut,
    ) -> std::result::Result<postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>>
    {
        match self {
            Value::Null => Ok(postgres::types::IsNull::Yes),
            Value::Int(i) => i.to_sql(ty, out),
            Value::Real(f) => f.to_sql(ty, out),
            Value::Text(s) => s.to_sql(ty, out),
        }
    }
    fn accepts(_: &postgres::types::Type) -> bool {
        true
    }
    postgres::types::to_sql_checked!();
}

/// `scheme` and the rest when `s` is a URL (`scheme://…`, the scheme RFC 3986's letters).
pub fn url_scheme(s: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = s.split_once("://")?;
    let mut c = scheme.chars();
    (c.next()?.is_ascii_alphabetic()
        && c.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some((scheme, rest))
}

/// The keywords of a libpq connection string (PostgreSQL's "Connection Strings", keyword/value
/// form): a `--db` that starts with one of them is that, not a file name.
const CONNINFO_KEYWORDS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "require_auth",
    "channel_binding",
    "connect_timeout",
    "client_encoding",
    "options",
    "application_name",
    "fallback_application_name",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
    "replication",
    "gssencmode",
    "sslmode",
    "requiressl",
    "sslnegotiation",
    "sslcompression",
    "sslcert",
    "sslkey",
    "sslpassword",
    "sslcertmode",
    "sslrootcert",
    "sslcrl",
    "sslcrldir",
    "sslsni",
    "requirepeer",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "krbsrvname",
    "gsslib",
    "gssdelegation",
    "service",
    "target_session_attrs",
    "load_balance_hosts",
];

/// Is `s` a libpq keyword/value connection string (`host=db user=tw dbname=h`)? Its first
/// word is a libpq keyword followed by `=`.
pub fn is_conninfo(s: &str) -> bool {
    let t = s.trim_start();
    let key_len = t
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(t.len());
    let (key, rest) = t.split_at(key_len);
    CONNINFO_KEYWORDS.contains(&key) && rest.trim_start().starts_with('=')
}

/// Why `s`, which is not a URL, is still no file name: it is shaped like a URL with a slash
/// missing (`postgres:/host/db`, `https:/…`), names a database scheme without `//`
/// (`postgresql:db`, `sqlite:h.db`), or holds credentials (`user:pw@host`). `None` for a
/// plain path (`./h.db`, `runs:2024.db`, `C:\h.db`).
pub fn not_quite_a_url(s: &str) -> Option<String> {
    let (scheme, rest) = s.split_once(':')?;
    let mut c = scheme.chars();
    let schemey = scheme.len() >= 2
        && c.next().is_some_and(|c| c.is_ascii_alphabetic())
        && c.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !schemey {
        return None;
    }
    let lower = scheme.to_ascii_lowercase();
    let base = lower.split('+').next().unwrap_or(&lower);
    let database = [
        "postgres",
        "postgresql",
        "sqlite",
        "sqlite3",
        "mysql",
        "mariadb",
    ]
    .contains(&base);
    if !(database || rest.starts_with('/') || rest.contains('@')) {
        return None;
    }
    let hint = match base {
        "postgres" | "postgresql" => "a PostgreSQL URL starts postgres://user@host/db".to_string(),
        "sqlite" | "sqlite3" => "give the file's path, or sqlite:///path".to_string(),
        _ => "give a SQLite path or postgres://user@host/db".to_string(),
    };
    Some(format!(
        "looks like a URL but is not one ({scheme}: without //): {hint}; no file of that name is made (start a file's path with ./ to mean the file)"
    ))
}

/// The URL or connection string without its secrets, for messages: the password of
/// `user:password@` (an empty user too), every query parameter that names one
/// (`?password=`, `&sslpassword=`), and in a keyword/value string every secret-named value
/// (`password=…`, `password='a b'`). Anything else that is not a URL loses what stands
/// between `user:` and `@`.
pub fn without_password(url: &str) -> String {
    if url_scheme(url).is_none() && is_conninfo(url) {
        return conninfo_without_password(url);
    }
    let (mut out, rest, is_url) = match url_scheme(url) {
        Some((scheme, rest)) => (format!("{scheme}://"), rest, true),
        None => (String::new(), url, false),
    };
    let (main, query) = match rest.split_once('?') {
        Some((m, q)) => (m, Some(q)),
        None => (rest, None),
    };
    match main.rfind('@') {
        Some(at) => {
            // A near-URL's user part starts after its last `/` (`postgres:/tw:pw@h`).
            let start = match is_url {
                true => 0,
                false => main[..at].rfind('/').map_or(0, |i| i + 1),
            };
            out.push_str(&main[..start]);
            let cred = &main[start..at];
            match cred.split_once(':') {
                Some((user, _)) => out.push_str(&format!("{user}:***")),
                None => out.push_str(cred),
            }
            out.push_str(&main[at..]);
        }
        None => out.push_str(main),
    }
    if let Some(q) = query {
        let params: Vec<String> = q
            .split('&')
            .map(|p| match p.split_once('=') {
                Some((k, _)) if crate::redact::is_secret_name(k) => format!("{k}=***"),
                _ => p.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

/// A keyword/value connection string with every secret-named value (`password`,
/// `sslpassword`) shown as `***`, quoted values (`'a b'`, with `\'` inside) included.
fn conninfo_without_password(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    loop {
        // Up to the next `=`: the key (and the spaces around it) is kept.
        let Some(eq) = rest.find('=') else {
            out.push_str(rest);
            return out;
        };
        let key = rest[..eq].split_whitespace().last().unwrap_or("");
        let secret = crate::redact::is_secret_name(key);
        out.push_str(&rest[..=eq]);
        rest = &rest[eq + 1..];
        let lead = rest.len() - rest.trim_start().len();
        out.push_str(&rest[..lead]);
        rest = &rest[lead..];
        // The value: quoted to its closing quote, else to the next space.
        let end = if let Some(q) = rest.strip_prefix('\'') {
            let mut esc = false;
            q.char_indices()
                .find(|&(_, c)| {
                    let close = c == '\'' && !esc;
                    esc = c == '\\' && !esc;
                    close
                })
                .map_or(rest.len(), |(i, _)| i + 2)
        } else {
            rest.find(char::is_whitespace).unwrap_or(rest.len())
        };
        out.push_str(if secret { "***" } else { &rest[..end] });
        rest = &rest[end..];
    }
}

impl Postgres {
    pub fn connect(url: &str, timeout_ms: u64) -> Result<Postgres> {
        let what = format!("history database {}", without_password(url));
        let mut cfg: postgres::Config = url.parse().map_err(|e| {
            HistoryError(format!(
                "{what}: not a PostgreSQL URL or connection string ({e})"
            ))
        })?;
        if cfg.get_connect_timeout().is_none() {
            cfg.connect_timeout(Duration::from_millis(timeout_ms.max(1)));
        }
        let client = cfg.connect(postgres::NoTls).map_err(|e| {
            HistoryError(format!(
                "{what} is unreachable ({}); check that the server runs and the URL is right",
                pg_text(&e)
            ))
        })?;
        Ok(Postgres { client, what })
    }

    fn err(&self, e: postgres::Error) -> HistoryError {
        HistoryError(format!("{}: {}", self.what, pg_text(&e)))
    }

    fn params(params: &[Value]) -> Vec<&(dyn postgres::types::ToSql + Sync)> {
        params
            .iter()
            .map(|p| p as &(dyn postgres::types::ToSql + Sync))
            .collect()
    }
}

/// The server's own message when there is one (the driver's Display says only "db error").
fn pg_text(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => {
            let mut s = e.to_string();
            let mut src = std::error::Error::source(e);
            while let Some(inner) = src {
                s = format!("{s}: {inner}");
                src = inner.source();
            }
            s
        }
    }
}

fn pg_row(r: &postgres::Row) -> Row {
    use postgres::types::Type;
    (0..r.len())
        .map(|i| {
            let ty = r.columns()[i].type_();
            let v = if *ty == Type::INT8 {
                r.try_get::<_, Option<i64>>(i)
                    .ok()
                    .flatten()
                    .map(Value::Int)
            } else if *ty == Type::INT4 {
                r.try_get::<_, Option<i32>>(i)
                    .ok()
                    .flatten()
                    .map(|v| Value::Int(v.into()))
            } else if *ty == Type::INT2 {
                r.try_get::<_, Option<i16>>(i)
                    .ok()
                    .flatten()
                    .map(|v| Value::Int(v.into()))
            } else if *ty == Type::FLOAT8 {
                r.try_get::<_, Option<f64>>(i)
                    .ok()
                    .flatten()
                    .map(Value::Real)
            } else if *ty == Type::FLOAT4 {
                r.try_get::<_, Option<f32>>(i)
                    .ok()
                    .flatten()
                    .map(|v| Value::Real(v.into()))
            } else if *ty == Type::BOOL {
                r.try_get::<_, Option<bool>>(i)
                    .ok()
                    .flatten()
                    .map(|v| Value::Int(v.into()))
            } else {
                r.try_get::<_, Option<String>>(i)
                    .ok()
                    .flatten()
                    .map(Value::Text)
            };
            v.unwrap_or(Value::Null)
        })
        .collect()
}

impl Backend for Postgres {
    fn kind(&self) -> Kind {
        Kind::Postgres
    }
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64> {
        let p = Self::params(params);
        self.client.execute(sql, &p).map_err(|e| self.err(e))
    }
    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>> {
        let p = Self::params(params);
        let rows = self.client.query(sql, &p).map_err(|e| self.err(e))?;
        Ok(rows.iter().map(pg_row).collect())
    }
    fn transaction(&mut self, stmts: &[(&str, Vec<Value>)]) -> Result<()> {
        let what = self.what.clone();
        let err = |e: postgres::Error| HistoryError(format!("{what}: {}", pg_text(&e)));
        let mut tx = self.client.transaction().map_err(err)?;
        for (sql, p) in stmts {
            let p = Self::params(p);
            tx.execute(*sql, &p).map_err(err)?;
        }
        tx.commit().map_err(err)
    }
    fn has_table(&mut self, name: &str) -> Result<bool> {
        let rows = self.query(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1",
            &[name.into()],
        )?;
        Ok(rows.first().and_then(|r| r[0].int()).unwrap_or(0) > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(
            without_password("postgres://tw:s3cret@db:5432/h"),
            "postgres://tw:***@db:5432/h"
        );
        assert_eq!(without_password("postgres://tw@db/h"), "postgres://tw@db/h");
        assert_eq!(
            without_password("postgres://tw@db/h?sslmode=require&password=s3cret"),
            "postgres://tw@db/h?sslmode=require&password=***"
        );
        assert_eq!(
            without_password("redis://:s3cret@cache:6379/0"),
            "redis://:***@cache:6379/0"
        );
        assert_eq!(
            without_password("POSTGRES://tw:p@ss@db/h"),
            "POSTGRES://tw:***@db/h"
        );
        // Not URLs: a keyword/value connection string, and a URL with a slash missing.
        assert_eq!(
            without_password("host=db user=tw password=s3cret dbname=h"),
            "host=db user=tw password=*** dbname=h"
        );
        assert_eq!(
            without_password(r"host=db password = 'a b\' c' sslpassword=k2 dbname=h"),
            "host=db password = *** sslpassword=*** dbname=h"
        );
        assert_eq!(
            without_password("postgres:/tw:s3cret@db/h"),
            "postgres:/tw:***@db/h"
        );
        assert_eq!(without_password("tw:s3cret@db"), "tw:***@db");
        assert_eq!(
            without_password("postgresql:/db/h?password=s3cret"),
            "postgresql:/db/h?password=***"
        );
    }

    #[test]
    fn connection_strings_and_near_urls_are_told_from_paths() {
        assert!(is_conninfo(
            "host=127.0.0.1 port=5432 user=tw password=x dbname=h"
        ));
        assert!(is_conninfo("  dbname = h"));
        assert!(!is_conninfo("history.db"));
        assert!(!is_conninfo("hosts=1.db"));
        for s in [
            "postgres:/db/h",
            "postgresql:h",
            "https:/x",
            "sqlite:h.db",
            "tw:pw@db/h",
        ] {
            assert!(not_quite_a_url(s).is_some(), "{s}");
        }
        for s in [
            "./postgres:/h",
            "h.db",
            "runs:2024.db",
            r"C:\h.db",
            "/tmp/x:y.db",
        ] {
            assert!(not_quite_a_url(s).is_none(), "{s}");
        }
    }
}
