//! `run`: wrap a training command transparently (own process group, stdin passed through,
//! output teed, signals forwarded) and keep what a postmortem needs: snapshots before and after,
//! sampled peaks, a bounded time series, the exit status or signal. It must never change what
//! the command sees beyond PYTHONUNBUFFERED (optional), never stop the command because capture
//! failed, and never print anything but the command's output and at most one warning per problem.

use super::env::redact_argv;
use super::exec::which;
use super::layout;
use super::manifest::{Manifest, utc_now_rfc3339};
use super::sampler::{Peaks, Sampler};
use super::signals::{self, signal_name};
use super::snapshot::{SnapshotOptions, snapshot};
use super::tee::{Stream, Tee, pump, terminal};
use std::ffi::OsString;
use std::fmt;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How to run and watch a command.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Program and arguments (`["deepspeed", "train.py", …]`); the program is found on PATH.
    pub command: Vec<OsString>,
    /// The run directory; created if needed.
    pub out_dir: PathBuf,
    /// Sampling interval.
    pub interval: Duration,
    /// After forwarding SIGTERM, how long the command may take to exit before its process
    /// group gets SIGKILL. Keep it below the scheduler's own grace (Kubernetes: 30 s).
    pub kill_grace: Duration,
    /// Take `snapshot_before/` and `snapshot_after/`.
    pub snapshots: bool,
    /// Options for both snapshots (versions are only probed in the first).
    pub snapshot: SnapshotOptions,
    /// Set PYTHONUNBUFFERED=1 when unset, so Python's output reaches the logs when written,
    /// not when a pipe buffer fills (which would hide the last lines before a crash).
    pub python_unbuffered: bool,
    /// Catch SIGINT/SIGTERM/SIGHUP and forward them to the command's process group.
    pub forward_signals: bool,
    /// Echo the command's output to our stdout/stderr (off in tests).
    pub echo: bool,
    /// The language of the warnings said on the terminal while the command runs.
    pub lang: crate::model::Lang,
}

impl RunOptions {
    pub fn new(command: Vec<OsString>, out_dir: PathBuf) -> RunOptions {
        RunOptions {
            command,
            out_dir,
            interval: Duration::from_millis(500),
            kill_grace: Duration::from_secs(15),
            snapshots: true,
            snapshot: SnapshotOptions::default(),
            python_unbuffered: true,
            forward_signals: true,
            echo: true,
            lang: crate::model::Lang::En,
        }
    }
}

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    Exited(i32),
    Signaled { signal: i32, core_dumped: bool },
}

impl Termination {
    /// The status a shell reports: the exit code, or 128 + the signal number.
    pub fn shell_status(&self) -> i32 {
        match *self {
            Termination::Exited(c) => c,
            Termination::Signaled { signal, .. } => 128 + signal,
        }
    }

    fn from_status(s: ExitStatus) -> Termination {
        match (s.code(), s.signal()) {
            (Some(c), _) => Termination::Exited(c),
            (None, Some(sig)) => Termination::Signaled {
                signal: sig,
                core_dumped: s.core_dumped(),
            },
            (None, None) => Termination::Exited(255),
        }
    }
}

/// What a run left, for the caller to report and exit with.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub out_dir: PathBuf,
    pub termination: Termination,
    /// What the wrapper should exit with: the command's code, or 128 + signal.
    pub exit_status: i32,
    /// The signal that ended the command, if one did.
    pub signal: Option<i32>,
    /// Signals forwarded to the command's process group, in order.
    pub forwarded: Vec<i32>,
    /// The group was SIGKILLed after the grace period following a forwarded SIGTERM.
    pub killed_after_grace: bool,
    pub peaks: Peaks,
    pub duration: Duration,
    /// Problems with the capture itself (a log that could not be written): also in the manifest.
    pub warnings: Vec<String>,
    pub manifest: Manifest,
}

/// Why a run could not start. Each maps to the status a shell or `env` would give.
#[derive(Debug)]
pub enum RunError {
    EmptyCommand,
    /// Not on PATH or no such file: 127.
    NotFound {
        program: String,
    },
    /// Found but not executable (permissions, a directory): 126.
    NotExecutable {
        program: String,
        why: String,
    },
    /// The run directory cannot be created or written: 125.
    OutDir {
        path: PathBuf,
        source: io::Error,
    },
    /// fork/exec failed otherwise: 126.
    Spawn {
        program: String,
        source: io::Error,
    },
}

impl RunError {
    pub fn exit_status(&self) -> i32 {
        match self {
            RunError::NotFound { .. } => 127,
            RunError::NotExecutable { .. } | RunError::Spawn { .. } => 126,
            RunError::EmptyCommand | RunError::OutDir { .. } => 125,
        }
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::EmptyCommand => {
                write!(f, "no command given (usage: trainwreck run -- CMD ARGS...)")
            }
            RunError::NotFound { program } => write!(f, "{program}: command not found"),
            RunError::NotExecutable { program, why } => {
                write!(f, "{program}: cannot execute: {why}")
            }
            RunError::OutDir { path, source } => write!(
                f,
                "cannot use {} as the run directory: {source}",
                path.display()
            ),
            RunError::Spawn { program, source } => write!(f, "{program}: cannot start: {source}"),
        }
    }
}

impl std::error::Error for RunError {}

enum Event {
    Signal(i32),
    Exited(io::Result<ExitStatus>),
}

/// Run the command and watch it until it ends. See the module docs for what is written.
pub fn run(opts: RunOptions) -> Result<RunOutcome, RunError> {
    let program = opts
        .command
        .first()
        .ok_or(RunError::EmptyCommand)?
        .to_string_lossy()
        .into_owned();
    check_program(&program)?;
    let dir = opts.out_dir.clone();
    let logs = open_logs(&dir)?;

    let mut m = Manifest::new("run");
    let started_at = utc_now_rfc3339();
    if opts.snapshots {
        take_snapshot(&dir, layout::SNAPSHOT_BEFORE, &opts.snapshot, &mut m);
    }

    // Subscribe before the child exists: a signal arriving in between is queued, not fatal.
    let (tx, rx) = mpsc::channel::<Event>();
    let mut warnings = Vec::new();
    let _subscription = if opts.forward_signals {
        say_ignored_signals(&opts, &mut m, &mut warnings);
        forward_signals(tx.clone(), &mut m)
    } else {
        None
    };

    let interval = opts.interval.max(Duration::from_millis(10));
    let mut notes = Vec::new();
    let mut sampler = Sampler::new(
        interval.as_millis() as u64,
        &dir.join(layout::SAMPLES_CSV),
        &mut notes,
    );
    for n in notes {
        m.note(n);
    }

    let tty = ForegroundTty::probe();
    let mut cmd = command(&opts, tty.is_some());
    let start = Instant::now();
    let started_wall = std::time::SystemTime::now();
    let mut child = cmd.spawn().map_err(|e| spawn_error(&program, e))?;
    let pgid = child.id() as libc::pid_t;
    if let Some(t) = &tty {
        t.give_to(pgid);
    }
    let (tee, pumps) = tee_output(&opts, &dir, logs, &mut child);
    std::thread::spawn(move || {
        let _ = tx.send(Event::Exited(child.wait()));
    });

    let watched = watch(
        &opts,
        &dir,
        &rx,
        &mut sampler,
        (start, interval),
        pgid,
        &mut warnings,
    );
    let duration = start.elapsed();
    sampler.sample(duration.as_millis() as u64);
    if let Some(t) = &tty {
        t.take_back();
    }

    let termination = match watched.status {
        Ok(s) => Termination::from_status(s),
        Err(e) => {
            m.note(format!("could not wait for the command: {e}"));
            Termination::Exited(255)
        }
    };
    drain(&pumps, &mut m);
    for (name, why) in tee.failures() {
        m.write_errors.push(super::manifest::ManifestNote {
            what: name.clone(),
            why: why.clone(),
        });
        warnings.push(format!("{name}: {why}"));
    }
    if let Some(e) = sampler.finish() {
        warn_once(&mut warnings, &opts, e);
    }

    let peaks = sampler.peaks.clone();
    write_peaks(&dir, &peaks);
    let exit_text = exit_status_text(
        &opts.command,
        &termination,
        &watched.forwarded,
        watched.killed_after_grace.then_some(opts.kill_grace),
        &started_at,
        duration,
    );
    m.put(
        &dir,
        layout::EXIT_STATUS_TXT,
        "trainwreck run",
        exit_text.as_bytes(),
    );
    let dumped = matches!(
        termination,
        Termination::Signaled {
            core_dumped: true,
            ..
        }
    );
    collect_cores(&dir, started_wall, pgid, dumped, &mut m);
    if opts.snapshots {
        let after = SnapshotOptions {
            versions: false,
            ..opts.snapshot.clone()
        };
        take_snapshot(&dir, layout::SNAPSHOT_AFTER, &after, &mut m);
    }
    record_files(&dir, &mut m);
    let (out_bytes, err_bytes) = tee.bytes();
    m.note(format!(
        "interval {} ms, {} samples, process group {pgid}, {out_bytes} bytes on stdout, {err_bytes} on stderr",
        interval.as_millis(),
        peaks.samples
    ));
    if let Err(e) = m.save(&dir) {
        warn_once(&mut warnings, &opts, format!("manifest.json: {e}"));
    }

    let signal = match termination {
        Termination::Signaled { signal, .. } => Some(signal),
        Termination::Exited(_) => None,
    };
    Ok(RunOutcome {
        out_dir: dir,
        exit_status: termination.shell_status(),
        termination,
        signal,
        forwarded: watched.forwarded,
        killed_after_grace: watched.killed_after_grace,
        peaks,
        duration,
        warnings,
        manifest: m,
    })
}

/// The run directory's three logs (stdout, stderr, both interleaved), created empty.
fn open_logs(dir: &Path) -> Result<[File; 3], RunError> {
    let out_err = |source| RunError::OutDir {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(out_err)?;
    let create = |name: &str| File::create(dir.join(name)).map_err(out_err);
    Ok([
        create(layout::STDOUT_LOG)?,
        create(layout::STDERR_LOG)?,
        create(layout::CONSOLE_LOG)?,
    ])
}

/// Signals this process started ignoring are not forwarded (see `signals::ignored`): each is
/// noted in the manifest, and an ignored SIGINT or SIGTERM is a warning at the start, since
/// Ctrl-C or a scheduler's stop would then not reach the command. An ignored SIGHUP alone is
/// what `nohup` is for: noted, not warned.
fn say_ignored_signals(opts: &RunOptions, m: &mut Manifest, warnings: &mut Vec<String>) {
    let ignored = signals::ignored();
    if ignored.is_empty() {
        return;
    }
    let names: Vec<String> = ignored.iter().map(|&s| signals::signal_name(s)).collect();
    let names = names.join(", ");
    m.note(format!(
        "signals: {names} ignored when run started (nohup or a background job): not forwarded, and the command inherits the ignore"
    ));
    if ignored.iter().any(|&s| s != libc::SIGHUP) {
        let what = crate::report::i18n::Tr(opts.lang).run_signals_ignored(&names);
        warn_once(warnings, opts, what);
    }
}

/// Catch SIGINT/SIGTERM/SIGHUP as events of the watch loop; a failure is noted, not fatal.
fn forward_signals(tx: mpsc::Sender<Event>, m: &mut Manifest) -> Option<signals::Subscription> {
    match signals::subscribe(move |sig| {
        let _ = tx.send(Event::Signal(sig));
    }) {
        Ok(s) => Some(s),
        Err(e) => {
            m.note(format!("signals: not forwarded: {e}"));
            None
        }
    }
}

/// The command as it is started: output piped to the tee, in a process group of its own, and
/// given the terminal's foreground when `tty` (so Ctrl-C reaches it as it would unwatched).
fn command(opts: &RunOptions, tty: bool) -> Command {
    let mut cmd = Command::new(&opts.command[0]);
    cmd.args(&opts.command[1..])
        .stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if opts.python_unbuffered && std::env::var_os("PYTHONUNBUFFERED").is_none() {
        cmd.env("PYTHONUNBUFFERED", "1");
    }
    if tty {
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                ForegroundTty::take_in_child();
                Ok(())
            });
        }
    }
    cmd
}

/// Why the command could not be started, said of the program the user named.
fn spawn_error(program: &str, e: io::Error) -> RunError {
    match e.kind() {
        io::ErrorKind::NotFound => RunError::NotFound {
            program: program.to_string(),
        },
        io::ErrorKind::PermissionDenied => RunError::NotExecutable {
            program: program.to_string(),
            why: e.to_string(),
        },
        _ => RunError::Spawn {
            program: program.to_string(),
            source: e,
        },
    }
}

/// The tee of the child's output into the logs (and the terminal when echoing), and the
/// threads that pump each pipe into it.
fn tee_output(
    opts: &RunOptions,
    dir: &Path,
    [out_log, err_log, console]: [File; 3],
    child: &mut std::process::Child,
) -> (Arc<Tee>, Vec<std::thread::JoinHandle<()>>) {
    let (term_out, term_err): (Box<dyn Write + Send>, Box<dyn Write + Send>) = if opts.echo {
        (terminal(1), terminal(2))
    } else {
        (Box::new(io::sink()), Box::new(io::sink()))
    };
    let tee = Arc::new(Tee::new(
        dir.display().to_string(),
        opts.lang,
        term_out,
        term_err,
        Some(Box::new(out_log)),
        Some(Box::new(err_log)),
        Some(Box::new(console)),
    ));
    let mut pumps = Vec::new();
    if let Some(o) = child.stdout.take() {
        let t = tee.clone();
        pumps.push(std::thread::spawn(move || pump(o, t, Stream::Out)));
    }
    if let Some(e) = child.stderr.take() {
        let t = tee.clone();
        pumps.push(std::thread::spawn(move || pump(e, t, Stream::Err)));
    }
    (tee, pumps)
}

/// What the watch loop saw: how the command ended, the signals passed on to it, and whether
/// it had to be killed after the SIGTERM grace period.
struct Watched {
    status: io::Result<ExitStatus>,
    forwarded: Vec<i32>,
    killed_after_grace: bool,
}

/// The watch loop: sleep until the next sample, a signal, the child's exit or the end of the
/// SIGTERM grace period, whichever comes first. No polling in between.
fn watch(
    opts: &RunOptions,
    dir: &Path,
    rx: &mpsc::Receiver<Event>,
    sampler: &mut Sampler,
    (start, interval): (Instant, Duration),
    pgid: libc::pid_t,
    warnings: &mut Vec<String>,
) -> Watched {
    let mut forwarded = Vec::new();
    let mut kill_at: Option<Instant> = None;
    let mut killed_after_grace = false;
    let mut next_sample = start;
    let mut peaks_written = start;
    let status = loop {
        let now = Instant::now();
        if now >= next_sample {
            sampler.sample(now.duration_since(start).as_millis() as u64);
            next_sample += interval;
            if next_sample <= now {
                next_sample = now + interval;
            }
            if let Some(e) = sampler.take_write_error() {
                warn_once(warnings, opts, e);
            }
            // peaks.txt is kept current (at most once a second) in case we are killed too.
            if now.duration_since(peaks_written) >= Duration::from_secs(1) && sampler.take_dirty() {
                write_peaks(dir, &sampler.peaks);
                peaks_written = now;
            }
        }
        if let Some(k) = kill_at
            && now >= k
            && !killed_after_grace
        {
            // SAFETY: signalling the process group we created.
            unsafe { libc::killpg(pgid, libc::SIGKILL) };
            killed_after_grace = true;
        }
        let wake = match kill_at {
            Some(k) if !killed_after_grace => next_sample.min(k),
            _ => next_sample,
        };
        match rx.recv_timeout(wake.saturating_duration_since(Instant::now())) {
            Ok(Event::Exited(st)) => break st,
            Ok(Event::Signal(sig)) => {
                // SAFETY: as above.
                unsafe { libc::killpg(pgid, sig) };
                forwarded.push(sig);
                if sig == libc::SIGTERM && kill_at.is_none() {
                    kill_at = Some(Instant::now() + opts.kill_grace);
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                break Err(io::Error::other("lost track of the child"));
            }
        }
    };
    Watched {
        status,
        forwarded,
        killed_after_grace,
    }
}

/// Processes left in the group (a daemonised worker) may still hold the pipes: wait a little
/// for the rest of the output, then stop waiting rather than hang.
fn drain(pumps: &[std::thread::JoinHandle<()>], m: &mut Manifest) {
    let drain_until = Instant::now() + Duration::from_secs(2);
    while pumps.iter().any(|p| !p.is_finished()) && Instant::now() < drain_until {
        std::thread::sleep(Duration::from_millis(10));
    }
    if pumps.iter().any(|p| !p.is_finished()) {
        m.note("output pipes still open after the command exited (processes left in its group); later output is not logged");
    }
}

/// The manifest's record of the files the run wrote itself.
fn record_files(dir: &Path, m: &mut Manifest) {
    for name in [layout::STDOUT_LOG, layout::STDERR_LOG, layout::CONSOLE_LOG] {
        m.record(name, "command output (teed)", dir);
    }
    m.record(
        layout::SAMPLES_CSV,
        "sampled every interval (downsampled when long)",
        dir,
    );
    m.record(layout::PEAKS_TXT, "peaks of the samples", dir);
}

/// Cores bigger than this are not copied into the run folder (a hard link costs nothing and
/// is always tried first); where they are is noted in the manifest instead.
const CORE_COPY_CAP: u64 = 8 << 30;
/// How long to wait for systemd-coredump to write the core it was piped (it compresses first).
const COREDUMP_WAIT: Duration = Duration::from_secs(5);

/// The cores the run caused (the command's, and its workers': any process of the run), found
/// where `kernel.core_pattern` puts them and modified since the command started, linked or
/// copied into `cores/` of the run folder so that its analysis reads them. Where a core went
/// instead (a pipe to apport, a core over the cap) goes in the manifest's notes.
fn collect_cores(
    dir: &Path,
    started: std::time::SystemTime,
    pid: libc::pid_t,
    dumped: bool,
    m: &mut Manifest,
) {
    use crate::sources::elfcore::locate;
    let pattern = std::fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap_or_default();
    let uses_pid =
        std::fs::read_to_string("/proc/sys/kernel/core_uses_pid").is_ok_and(|s| s.trim() == "1");
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    // A second of slack: file times may be coarser than the clock.
    let since = started - Duration::from_secs(1);
    let found = match locate::destination(&pattern, uses_pid, &cwd) {
        Some(locate::Destination::File { dir: at, name }) => {
            let found = locate::cores_in(&at, &name, since);
            if found.is_empty() && dumped {
                m.note(format!(
                    "the command dumped core, but no core matching core_pattern {:?} is in {}",
                    pattern.trim(),
                    at.display()
                ));
            }
            found
        }
        Some(locate::Destination::Pipe { handler }) if handler.contains("systemd-coredump") => {
            let at = Path::new(locate::SYSTEMD_COREDUMP_DIR);
            let name =
                regex::Regex::new(r"^core\..+\.\d+\.[0-9a-f]{32}\.(?P<pid>\d+)\.\d+(\.\w+)?$")
                    .expect("a valid pattern");
            let deadline = Instant::now()
                + if dumped {
                    COREDUMP_WAIT
                } else {
                    Duration::ZERO
                };
            loop {
                let found = locate::cores_in(at, &name, since);
                if !found.is_empty() || Instant::now() >= deadline {
                    if found.is_empty() && dumped {
                        m.note(format!(
                            "the command dumped core to systemd-coredump, which kept none in {} within {} s (see `coredumpctl info {pid}`)",
                            at.display(),
                            COREDUMP_WAIT.as_secs()
                        ));
                    }
                    break found;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Some(locate::Destination::Pipe { handler }) => {
            if dumped {
                m.note(format!(
                    "the command dumped core, piped to `{handler}` (core_pattern): not collected; find it with that tool"
                ));
            }
            Vec::new()
        }
        None => {
            if dumped {
                m.note(format!(
                    "the command dumped core; core_pattern {:?} names no folder trainwreck can search",
                    pattern.trim()
                ));
            }
            Vec::new()
        }
    };
    for c in found {
        let Some(name) = c.path.file_name() else {
            continue;
        };
        let rel = Path::new("cores").join(name);
        let to = dir.join(&rel);
        if c.path.starts_with(dir) || to.exists() {
            continue;
        }
        if let Err(e) = std::fs::create_dir_all(dir.join("cores")) {
            m.write_error("cores", &e);
            return;
        }
        let what = format!(
            "core dump{} from {}",
            c.pid.map(|p| format!(" of pid {p}")).unwrap_or_default(),
            c.path.display()
        );
        let linked = std::fs::hard_link(&c.path, &to).is_ok();
        if linked {
            m.record(&rel.to_string_lossy(), &format!("{what} (hard link)"), dir);
        } else if c.size <= CORE_COPY_CAP {
            match std::fs::copy(&c.path, &to) {
                Ok(_) => m.record(&rel.to_string_lossy(), &format!("{what} (copy)"), dir),
                Err(e) => m.write_error(&rel.to_string_lossy(), &e),
            }
        } else {
            m.note(format!(
                "{what}: {} bytes, over the {} GiB copy cap and on another file system: left where it is; pass it to `trainwreck analyze` with the run folder",
                c.size,
                CORE_COPY_CAP >> 30
            ));
        }
    }
}

/// Fail like a shell would before creating anything: 127 not found, 126 not executable.
fn check_program(program: &str) -> Result<(), RunError> {
    if which(program).is_some() {
        return Ok(());
    }
    if program.contains('/') {
        let p = Path::new(program);
        if p.is_dir() {
            return Err(RunError::NotExecutable {
                program: program.into(),
                why: "is a directory".into(),
            });
        }
        if p.exists() {
            return Err(RunError::NotExecutable {
                program: program.into(),
                why: "permission denied (not executable)".into(),
            });
        }
    }
    Err(RunError::NotFound {
        program: program.into(),
    })
}

fn take_snapshot(dir: &Path, name: &str, opts: &SnapshotOptions, m: &mut Manifest) {
    match snapshot(&dir.join(name), opts) {
        Ok(sm) => {
            let n = sm.files.len();
            m.files.push(super::manifest::ManifestFile {
                path: format!("{name}/"),
                source: format!("snapshot: {n} files, see {name}/manifest.json"),
                bytes: sm.files.iter().map(|f| f.bytes).sum(),
            });
        }
        Err(e) => m.unreadable(name, e.to_string()),
    }
}

fn write_peaks(dir: &Path, peaks: &Peaks) {
    // Replace atomically: a reader (or a crash) never sees half a file.
    let tmp = dir.join(".peaks.txt.tmp");
    if std::fs::write(&tmp, peaks.to_text()).is_ok() {
        let _ = std::fs::rename(&tmp, dir.join(layout::PEAKS_TXT));
    }
}

fn warn_once(warnings: &mut Vec<String>, opts: &RunOptions, what: String) {
    if opts.echo {
        eprintln!("{}", crate::report::i18n::Tr(opts.lang).run_warning(&what));
    }
    warnings.push(what);
}

/// `exit_status.txt`: `exit_code: 3` or `signal: SIGBUS (7)`, then `exit_status:` (the shell's
/// number) and context lines, all `key: value`.
fn exit_status_text(
    command: &[OsString],
    t: &Termination,
    forwarded: &[i32],
    killed_after: Option<Duration>,
    started_at: &str,
    duration: Duration,
) -> String {
    let mut s = String::new();
    match *t {
        Termination::Exited(c) => s.push_str(&format!("exit_code: {c}\n")),
        Termination::Signaled {
            signal,
            core_dumped,
        } => {
            s.push_str(&format!("signal: {} ({signal})\n", signal_name(signal)));
            s.push_str(&format!("core_dumped: {core_dumped}\n"));
        }
    }
    s.push_str(&format!("exit_status: {}\n", t.shell_status()));
    if !forwarded.is_empty() {
        let names: Vec<String> = forwarded.iter().map(|&x| signal_name(x)).collect();
        s.push_str(&format!("forwarded_signals: {}\n", names.join(" ")));
    }
    if let Some(g) = killed_after {
        s.push_str(&format!(
            "killed: SIGKILL to the process group {} s after SIGTERM\n",
            g.as_secs_f32()
        ));
    }
    s.push_str(&format!("started: {started_at}\n"));
    s.push_str(&format!("ended: {}\n", utc_now_rfc3339()));
    s.push_str(&format!("duration_s: {:.3}\n", duration.as_secs_f64()));
    s.push_str(&format!("command: {}\n", redact_argv(command).join(" ")));
    s
}

/// The controlling terminal, when we are in its foreground: the command's new process group
/// must become the foreground, or its first read from the terminal stops it (SIGTTIN), and
/// Ctrl-C must reach it as it would without the wrapper.
struct ForegroundTty {
    our_pgrp: libc::pid_t,
}

impl ForegroundTty {
    fn probe() -> Option<ForegroundTty> {
        // SAFETY: plain queries on fd 0.
        unsafe {
            if libc::isatty(0) != 1 {
                return None;
            }
            let ours = libc::getpgrp();
            (libc::tcgetpgrp(0) == ours).then_some(ForegroundTty { our_pgrp: ours })
        }
    }

    /// In the child after setpgid: take the terminal before exec (both sides do it, as shells
    /// do, so neither order of scheduling leaves a window).
    fn take_in_child() {
        // SAFETY: async-signal-safe calls only; SIGTTOU blocked around tcsetpgrp because the
        // new group is not yet the foreground, then the mask restored for the command.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGTTOU);
            libc::sigprocmask(libc::SIG_BLOCK, &set, &mut old);
            libc::tcsetpgrp(0, libc::getpgrp());
            libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        }
    }

    fn give_to(&self, pgid: libc::pid_t) {
        with_sigttou_blocked(|| {
            // SAFETY: fd 0 is our terminal; pgid is the group we just created.
            unsafe { libc::tcsetpgrp(0, pgid) };
        });
    }

    fn take_back(&self) {
        with_sigttou_blocked(|| {
            // SAFETY: returning the terminal to our own group.
            unsafe { libc::tcsetpgrp(0, self.our_pgrp) };
        });
    }
}

fn with_sigttou_blocked(f: impl FnOnce()) {
    // SAFETY: masking one signal in this thread around a tcsetpgrp call; the kernel does not
    // raise SIGTTOU for a blocked signal, so nothing is left pending.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTTOU);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        f();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_status_text_names_the_signal() {
        let t = Termination::Signaled {
            signal: libc::SIGBUS,
            core_dumped: false,
        };
        let s = exit_status_text(
            &["sh".into()],
            &t,
            &[],
            None,
            "2026-01-01T00:00:00Z",
            Duration::from_secs(1),
        );
        assert!(
            s.starts_with("signal: SIGBUS (7)\ncore_dumped: false\nexit_status: 135\n"),
            "{s}"
        );
    }

    #[test]
    fn missing_and_unexecutable_programs_fail_like_a_shell() {
        let e = check_program("tw-no-such-command-xyz").unwrap_err();
        assert_eq!(e.exit_status(), 127);
        assert_eq!(check_program("/").unwrap_err().exit_status(), 126);
        assert_eq!(check_program("/etc/passwd").unwrap_err().exit_status(), 126);
    }
}
