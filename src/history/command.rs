//! The command-line side of the history: the flags `analyze`, `triage` and `run` share
//! (`--db`, `--record`, `--job`, `--host`, `--gpu`), attaching "seen before" to a report, and
//! the `history` subcommands. Returns text and errors for `cli` to print; formatting is
//! `report::history`'s.

use super::{Location, RecordContext, RunRecord, Store, stats::Unit};
use crate::model::{Note, Seen, Text};
use crate::redact::Redactor;
use crate::report::format::{self, Format, View};
use crate::report::history::{FleetReport, FleetStats, ListEntry};
use crate::report::{Report, Sink};
use clap::Subcommand;

/// Flags of `analyze` for the failure history.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct RecordArgs {
    /// Failure history: a SQLite file or postgres://… (else $TRAINWRECK_DB, else
    /// $XDG_DATA_HOME/trainwreck/history.db when it exists).
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<String>,
    /// Record this diagnosis in the failure history (exit status 3 if that fails).
    #[arg(long)]
    pub record: bool,
    /// Job name or id to record (default: Slurm/Kubernetes/CI ids the inputs carry).
    #[arg(long, value_name = "ID")]
    pub job: Option<String>,
    /// Host the run ran on, replacing the hosts the inputs name (repeatable).
    #[arg(long = "host", value_name = "NAME")]
    pub hosts: Vec<String>,
    /// UUID of a GPU of the run (repeatable).
    #[arg(long = "gpu", value_name = "UUID")]
    pub gpus: Vec<String>,
    /// Store the report as it is, secrets included (by default the history keeps it with
    /// secrets masked, whatever the output format).
    #[arg(long)]
    pub store_raw: bool,
}

#[derive(clap::Args, Debug)]
pub struct HistoryArgs {
    /// Failure history: a SQLite file or postgres://… (else $TRAINWRECK_DB, else the default).
    #[arg(long, value_name = "PATH|URL", global = true)]
    pub db: Option<String>,
    /// Mask secrets in what is shown (notes, titles, stored reports) and optionally `hosts`,
    /// `paths` (comma-separated; `all` for both).
    #[arg(long, value_name = "WHAT", num_args = 0..=1, require_equals = true, default_missing_value = "secrets", global = true)]
    pub redact: Option<String>,
    /// `note` and `import`: store texts as they are, secrets included (by default they are
    /// stored with secrets masked).
    #[arg(long, global = true)]
    pub store_raw: bool,
    #[command(subcommand)]
    pub command: HistoryCommand,
}

#[derive(Subcommand, Debug)]
pub enum HistoryCommand {
    /// Create the schema or bring it to this version.
    Migrate,
    /// Attach the team's note (a resolution) to a fingerprint.
    Note {
        /// The fingerprint the note is for (as a report prints it).
        fingerprint: String,
        /// The note: what fixed it, who to ask.
        text: String,
        /// Default: $USER.
        #[arg(long)]
        author: Option<String>,
    },
    /// A fingerprint's runs, hosts, first and last seen, and notes.
    Show {
        /// The fingerprint to show (as a report prints it).
        fingerprint: String,
        /// Most runs listed.
        #[arg(long, default_value_t = 100)]
        limit: usize,
        /// Output format.
        #[arg(long, value_parser = format::value_parser(format::Command::History), default_value = "table")]
        format: &'static Format,
    },
    /// The top fingerprints.
    List {
        /// A window: `7d`, `12h`, `30m`, or a date `2026-10-01`.
        #[arg(long)]
        since: Option<String>,
        /// Only fingerprints of this category (e.g. `shm_exhausted`).
        #[arg(long)]
        category: Option<String>,
        /// Most fingerprints listed.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Output format.
        #[arg(long, value_parser = format::value_parser(format::Command::History), default_value = "table")]
        format: &'static Format,
    },
    /// Per host: failures by action class against its share of jobs, and suspects.
    Hosts {
        /// A window: `7d`, `12h`, `30m`, or a date `2026-10-01`.
        #[arg(long)]
        since: Option<String>,
        /// Family-wise false-alarm rate (divided by the number of hosts tested).
        #[arg(long, default_value_t = 0.01)]
        alpha: f64,
        /// Output format.
        #[arg(long, value_parser = format::value_parser(format::Command::History), default_value = "table")]
        format: &'static Format,
    },
    /// Per GPU (by UUID, wherever it moved): as `hosts`.
    Gpus {
        /// A window: `7d`, `12h`, `30m`, or a date `2026-10-01`.
        #[arg(long)]
        since: Option<String>,
        /// Family-wise false-alarm rate (divided by the number of GPUs tested).
        #[arg(long, default_value_t = 0.01)]
        alpha: f64,
        /// Output format.
        #[arg(long, value_parser = format::value_parser(format::Command::History), default_value = "table")]
        format: &'static Format,
    },
    /// The fleet over a window: failures per day by category, the top fingerprints over time,
    /// the host and GPU tests; `--html > fleet.html` draws them on one page with a host × GPU
    /// heat map and the latest runs.
    Report {
        /// A window: `7d`, `12h`, `30m`, or a date `2026-10-01` (default: the whole history).
        #[arg(long)]
        since: Option<String>,
        /// Family-wise false-alarm rate of the host and GPU tests (as `hosts` / `gpus`).
        #[arg(long, default_value_t = 0.01)]
        alpha: f64,
        /// Latest runs listed.
        #[arg(long, default_value_t = 50)]
        recent: usize,
        /// Output format (`html` is the page, `json` its data).
        #[arg(long, value_parser = format::value_parser(format::Command::HistoryReport), default_value = "table")]
        format: &'static Format,
        /// The page: the same as `--format html`.
        #[arg(long, conflicts_with = "format")]
        html: bool,
    },
    /// Every run and note as JSON Lines (to a file, or stdout).
    Export {
        /// File to write (default: stdout).
        file: Option<std::path::PathBuf>,
    },
    /// Read JSON Lines from `export` (a file, or - for stdin); runs already there are replaced.
    Import {
        /// The JSON Lines file, or - for stdin.
        file: String,
    },
}

/// `7d`, `12h`, `30m`, `45s`, `2w`, or a date/time (`2026-10-01`, `2026-10-01T08:00:00`) →
/// Unix seconds.
pub fn parse_since(s: &str, now: i64) -> Option<i64> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    if let (Ok(n), Some(mult)) = (
        num.parse::<i64>(),
        match unit {
            "s" => Some(1),
            "m" | "min" => Some(60),
            "h" => Some(3600),
            "d" => Some(86_400),
            "w" => Some(7 * 86_400),
            _ => None,
        },
    ) {
        return Some(now - n.saturating_mul(mult));
    }
    let full = if s.len() == 10 {
        format!("{s}T00:00:00")
    } else {
        s.to_string()
    };
    super::record::epoch(&full)
}

/// Record the report (when `record` is given) and attach what the history knows of its
/// fingerprint. `Ok(false)`: no history configured. The report is left as it was on error.
pub fn attach(
    report: &mut Report,
    db: Option<&str>,
    record: Option<&RecordContext>,
) -> super::Result<bool> {
    let Some(loc) = super::locate(db, record.is_some()) else {
        return Ok(false);
    };
    let mut store = Store::open(&loc)?;
    let mut this_run = None;
    if let Some(ctx) = record {
        store.store_raw(ctx.store_raw);
        let rec = RunRecord::from_report(report, ctx, super::now());
        store.record(&rec)?;
        this_run = Some(rec.run_id);
    }
    if let Some(fp) = report.fingerprint.clone() {
        report.history = Some(store.seen(&fp, this_run.as_deref(), super::REPORT_RUNS)?);
    }
    Ok(true)
}

/// `--baseline last-good`: the inputs of the last run of `job` the history recorded as
/// `no_failure`, or why there is none.
pub fn last_good(db: Option<&str>, job: Option<&str>) -> Result<Vec<String>, String> {
    let job = job.ok_or(
        "last-good needs the job to look for: give --job NAME (runs are matched by the job they were recorded with)",
    )?;
    let loc = super::locate(db, false).ok_or(
        "last-good needs a history database: give --db PATH|postgres://… or set TRAINWRECK_DB",
    )?;
    if let Location::Sqlite(p) = &loc
        && !p.exists()
    {
        return Err(format!(
            "history database {} does not exist yet",
            p.display()
        ));
    }
    let mut store = Store::open(&loc).map_err(|e| e.to_string())?;
    match store.last_good(job).map_err(|e| e.to_string())? {
        Some((_, paths)) if !paths.is_empty() => {
            let missing: Vec<&String> = paths
                .iter()
                .filter(|p| !std::path::Path::new(p).exists())
                .collect();
            if missing.is_empty() {
                Ok(paths)
            } else {
                Err(format!(
                    "the last good run of job {job:?} was at {}, which is no longer there",
                    missing
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(" ")
                ))
            }
        }
        _ => Err(format!(
            "no run of job {job:?} with verdict no_failure and recorded inputs in the history \
             (record good runs with `analyze --record --job {job}`)"
        )),
    }
}

/// A fingerprint argument (`fp2:` + 16 hex digits, or an older `fp1:`), in this version's
/// form, or why it is not one: a typo must not file a note under a fingerprint no run has.
fn fingerprint_arg(fp: &str) -> Result<String, String> {
    crate::correlate::fingerprint::parse(fp).ok_or_else(|| {
        format!(
            "{fp:?} is not a fingerprint: give it as a report prints it, `fp2:` and 16 hex digits (e.g. fp2:2c407d34ead1ca78; an older fp1:… is accepted)"
        )
    })
}

fn since_arg(s: Option<&str>) -> Result<Option<i64>, String> {
    match s {
        None => Ok(None),
        Some(s) => parse_since(s, super::now()).map(Some).ok_or_else(|| {
            format!(
                "--since {s:?}: not a window or a calendar date: give a window (7d, 12h, 30m) or a date (2026-10-01)"
            )
        }),
    }
}

/// `--redact` on a history view: every text a person or another run's logs put there.
fn seen_redacted(seen: &mut Seen, red: &mut Redactor) {
    seen.hosts = seen.hosts.iter().map(|h| red.host(h)).collect();
    for r in &mut seen.runs {
        r.host = r.host.as_deref().map(|h| red.host(h));
        r.job = r.job.as_deref().map(|j| red.text(j));
    }
    for n in &mut seen.notes {
        n.text = red.text(&n.text);
        n.author = red.text(&n.author);
    }
}

fn list_redacted(l: &mut [ListEntry], red: &mut Redactor) {
    for e in l {
        e.hosts = e.hosts.iter().map(|h| red.host(h)).collect();
        for t in e.title.iter_mut().flat_map(Text::each_mut) {
            *t = red.text(t);
        }
        if let Some(n) = &mut e.note {
            n.text = red.text(&n.text);
            n.author = red.text(&n.author);
        }
    }
}

fn fleet_redacted(st: &mut FleetStats, red: &mut Redactor) {
    let host = |red: &mut Redactor, h: &str| match st.unit {
        "host" => red.host(h),
        _ => red.text(h),
    };
    for u in &mut st.units {
        u.id = host(red, &u.id);
        if let Some(hs) = &mut u.hosts {
            *hs = hs.iter().map(|h| red.host(h)).collect();
        }
    }
    st.suspects = st.suspects.iter().map(|h| host(red, h)).collect();
}

fn report_redacted(f: &mut FleetReport, red: &mut Redactor) {
    list_redacted(&mut f.top, red);
    fleet_redacted(&mut f.hosts, red);
    fleet_redacted(&mut f.gpus, red);
    for c in &mut f.cells {
        c.host = red.host(&c.host);
    }
    for r in f.top_runs.iter_mut().flatten() {
        r.host = r.host.as_deref().map(|h| red.host(h));
        for t in r.job.iter_mut() {
            *t = red.text(t);
        }
        for l in &mut r.lines {
            l.path = red.text(&l.path);
            l.text = red.text(&l.text);
        }
    }
    for r in &mut f.recent {
        r.host = r.host.as_deref().map(|h| red.host(h));
        for t in r
            .job
            .iter_mut()
            .chain(r.title.iter_mut().flat_map(Text::each_mut))
        {
            *t = red.text(t);
        }
    }
}

/// Run one `history` subcommand: its output and where it goes, or the error to print.
pub fn run(args: HistoryArgs, lang: crate::model::Lang) -> Result<(Sink, String), String> {
    // A page meant to be shared (`report`'s HTML) has its secrets masked without being asked.
    let pasted = matches!(&args.command, HistoryCommand::Report { format, html, .. } if *html || format.pasted);
    let mut red = match &args.redact {
        Some(what) => Some(Redactor::new(crate::redact::Options::parse(
            std::slice::from_ref(what),
        )?)),
        None if pasted => Some(Redactor::new(crate::redact::Options::parse(&[])?)),
        None => None,
    };
    let out = run_view(args, lang, red.as_mut())?;
    Ok(match red.as_mut() {
        Some(red) if out.0 != Sink::Json => (out.0, red.text(&out.1)),
        _ => out,
    })
}

fn run_view(
    args: HistoryArgs,
    lang: crate::model::Lang,
    mut red: Option<&mut Redactor>,
) -> Result<(Sink, String), String> {
    let table = |t: String| (Sink::Terminal, t);
    let loc = locate_db(&args)?;
    let e = |e: super::HistoryError| e.to_string();
    if let HistoryCommand::Migrate = args.command {
        return migrate(&loc).map(table);
    }
    // The views only read: a database the user may not write can still be looked at.
    let read_only = matches!(
        args.command,
        HistoryCommand::Show { .. }
            | HistoryCommand::List { .. }
            | HistoryCommand::Hosts { .. }
            | HistoryCommand::Gpus { .. }
            | HistoryCommand::Report { .. }
            | HistoryCommand::Export { .. }
    );
    let mut s = if read_only {
        Store::open_read(&loc)
    } else {
        Store::open(&loc)
    }
    .map_err(e)?;
    s.store_raw(args.store_raw);
    match args.command {
        HistoryCommand::Migrate => unreachable!("handled above"),
        HistoryCommand::Note {
            fingerprint,
            text,
            author,
        } => note(&mut s, &fingerprint, text, author).map(table),
        HistoryCommand::Show {
            fingerprint,
            limit,
            format,
        } => {
            let fingerprint = fingerprint_arg(&fingerprint)?;
            let mut seen = s.seen(&fingerprint, None, limit).map_err(e)?;
            if let Some(red) = red.as_deref_mut() {
                seen_redacted(&mut seen, red);
            }
            view(format, View::Seen(&seen), lang)
        }
        HistoryCommand::List {
            since,
            category,
            limit,
            format,
        } => {
            if let Some(c) = &category
                && crate::model::Category::parse(c).is_none()
            {
                return Err(format!(
                    "--category {c:?}: not a category (one of {})",
                    crate::model::Category::valid_values()
                ));
            }
            let since = since_arg(since.as_deref())?;
            let mut l = s.list(since, category.as_deref(), limit).map_err(e)?;
            if let Some(red) = red.as_deref_mut() {
                list_redacted(&mut l, red);
            }
            view(format, View::List(&l), lang)
        }
        HistoryCommand::Hosts { alpha, .. }
        | HistoryCommand::Gpus { alpha, .. }
        | HistoryCommand::Report { alpha, .. }
            if !(alpha > 0.0 && alpha < 1.0) =>
        {
            Err(format!("--alpha {alpha}: must be between 0 and 1"))
        }
        HistoryCommand::Report {
            since,
            alpha,
            recent,
            format,
            html,
        } => {
            let format = if html {
                format::find(format::Command::HistoryReport, "html").expect("html offers it")
            } else {
                format
            };
            let since = since_arg(since.as_deref())?;
            let mut f = s.report(since, alpha, recent).map_err(e)?;
            if let Some(red) = red.as_deref_mut() {
                report_redacted(&mut f, red);
            }
            view(format, View::FleetReport(&f), lang)
        }
        HistoryCommand::Hosts {
            since,
            alpha,
            format,
        } => fleet(
            &mut s,
            Unit::Host,
            since.as_deref(),
            alpha,
            format,
            lang,
            red,
        ),
        HistoryCommand::Gpus {
            since,
            alpha,
            format,
        } => fleet(
            &mut s,
            Unit::Gpu,
            since.as_deref(),
            alpha,
            format,
            lang,
            red,
        ),
        HistoryCommand::Export { file } => export(&mut s, file, red),
        HistoryCommand::Import { file } => import(&mut s, &file).map(table),
    }
}

/// The database the command is about; one a command only reads must exist already.
fn locate_db(args: &HistoryArgs) -> Result<Location, String> {
    let creating = matches!(
        args.command,
        HistoryCommand::Migrate | HistoryCommand::Note { .. } | HistoryCommand::Import { .. }
    );
    let loc = super::locate(args.db.as_deref(), true).ok_or_else(|| {
        "no history database: give --db PATH|postgres://…, or set TRAINWRECK_DB (no home directory for the default)".to_string()
    })?;
    if !creating
        && let Location::Sqlite(p) = &loc
        && !p.exists()
    {
        return Err(format!(
            "history database {} does not exist yet (record a run with `analyze --record`, or `trainwreck history migrate`)",
            p.display()
        ));
    }
    Ok(loc)
}

/// `history migrate`: the schema brought up to date, and what it was.
fn migrate(loc: &Location) -> Result<String, String> {
    let e = |e: super::HistoryError| e.to_string();
    let mut s = Store::connect(loc).map_err(e)?;
    let (from, to) = s.migrate().map_err(e)?;
    // The location as messages show it: never a password.
    let shown = loc.shown();
    Ok(if from == to {
        format!("history database {shown}: schema version {to}, up to date\n")
    } else {
        format!("history database {shown}: schema version {from} → {to}\n")
    })
}

/// `history note`: a team note on a failure, signed by `--author` or `$USER`.
fn note(
    s: &mut Store,
    fingerprint: &str,
    text: String,
    author: Option<String>,
) -> Result<String, String> {
    // A fingerprint from an older report (`fp1:…`) names the same failure.
    let fingerprint = fingerprint_arg(fingerprint)?;
    let author = author
        .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| "unknown".into());
    let note = Note {
        text,
        author,
        time: super::utc(super::now()),
    };
    s.note(&fingerprint, &note).map_err(|e| e.to_string())?;
    Ok(format!(
        "noted on {fingerprint} by {} at {}\n",
        note.author, note.time
    ))
}

/// `history export [FILE]`: every run and note, to the file or to stdout.
fn export(
    s: &mut Store,
    file: Option<std::path::PathBuf>,
    red: Option<&mut Redactor>,
) -> Result<(Sink, String), String> {
    let e = |e: super::HistoryError| e.to_string();
    let n = match &file {
        Some(f) => {
            let mut w = std::io::BufWriter::new(
                std::fs::File::create(f).map_err(|err| format!("{}: {err}", f.display()))?,
            );
            let n = s.export(&mut w, red).map_err(e)?;
            std::io::Write::flush(&mut w).map_err(|err| format!("{}: {err}", f.display()))?;
            n
        }
        None => {
            let mut out = std::io::stdout().lock();
            s.export(&mut out, red).map_err(e)?;
            return Ok((Sink::Json, String::new()));
        }
    };
    Ok((
        Sink::Terminal,
        format!(
            "exported {} runs and {} notes to {}\n",
            n.runs,
            n.notes,
            file.map(|f| f.display().to_string()).unwrap_or_default()
        ),
    ))
}

/// `history import FILE|-`: runs and notes from an export.
fn import(s: &mut Store, file: &str) -> Result<String, String> {
    let e = |e: super::HistoryError| e.to_string();
    let n = if file == "-" {
        s.import(&mut std::io::stdin().lock()).map_err(e)?
    } else {
        let f = std::fs::File::open(file).map_err(|err| format!("{file}: {err}"))?;
        s.import(&mut std::io::BufReader::new(f)).map_err(e)?
    };
    Ok(format!("imported {} runs and {} notes\n", n.runs, n.notes))
}

fn fleet(
    s: &mut Store,
    unit: Unit,
    since: Option<&str>,
    alpha: f64,
    format: &Format,
    lang: crate::model::Lang,
    red: Option<&mut Redactor>,
) -> Result<(Sink, String), String> {
    let since = since_arg(since)?;
    let mut st = s.fleet(unit, since, alpha).map_err(|e| e.to_string())?;
    if let Some(red) = red {
        fleet_redacted(&mut st, red);
    }
    view(format, View::Fleet(&st), lang)
}

/// A view of the history in the format asked for, with its sink (the views' texts were
/// redacted before; `run` redacts the whole text).
fn view(f: &Format, v: View<'_>, lang: crate::model::Lang) -> Result<(Sink, String), String> {
    let o = format::Options {
        term: crate::report::terminal::Options {
            color: false,
            lang,
            tables: crate::report::table::Tables::stdout(),
        },
        root: "",
        timeline: false,
    };
    let text = f
        .render(v, &o, None)
        .ok_or_else(|| format!("--format {}: not for this command", f.name))?;
    Ok((f.sink, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_windows_and_dates() {
        assert_eq!(parse_since("7d", 1_000_000), Some(1_000_000 - 7 * 86_400));
        assert_eq!(parse_since("30m", 10_000), Some(10_000 - 1800));
        assert_eq!(parse_since("1970-01-02", 0), Some(86_400));
        assert_eq!(parse_since("soon", 0), None);
        for bad in [
            "2026-13-45",
            "2026-02-30",
            "2026-00-10",
            "2026-10-01T25:00:00",
        ] {
            assert_eq!(parse_since(bad, 0), None, "{bad}");
        }
        assert!(parse_since("2024-02-29", 0).is_some());
    }

    #[test]
    fn fingerprints_are_checked_for_shape() {
        assert_eq!(
            fingerprint_arg("fp1:2C407D34EAD1CA78").unwrap(),
            "fp2:2c407d34ead1ca78"
        );
        assert_eq!(
            fingerprint_arg(" fp2:2c407d34ead1ca78 ").unwrap(),
            "fp2:2c407d34ead1ca78"
        );
        for bad in [
            "",
            "2c407d34ead1ca78",
            "fp2:2c40",
            "fp3:2c407d34ead1ca78",
            "fp2:2c407d34ead1ca7g",
            "hello world",
        ] {
            assert!(fingerprint_arg(bad).is_err(), "{bad}");
        }
    }
}
