//! Command-line surface: clap's raw arguments, turned into calls of the library. Parses,
//! dispatches and maps results to exit statuses; all analysis lives in the library and all
//! formatting in `report`.

use crate::analyze::Engine;
use crate::inputs;
use crate::report::format::{self, Command as Cmd, Format, View};
use crate::report::i18n::Tr;
use crate::report::{Sink, terminal};
use crate::rules::{self, KnowledgeBase};
use clap::{Parser, Subcommand, ValueEnum};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

/// Exit statuses (documented in README.md).
pub(crate) mod exit {
    /// The analysis ran (whatever the verdict).
    pub const OK: i32 = 0;
    /// `rules test` found failing examples.
    pub const TEST_FAILED: i32 = 1;
    /// Bad usage, or a rule file that does not load.
    pub const USAGE: i32 = 2;
    /// The failure history could not be used: `analyze --record` / `triage --record` (after
    /// printing the diagnosis), or a `history` command.
    pub const HISTORY: i32 = 3;
}

#[derive(Parser, Debug)]
#[command(
    name = "trainwreck",
    version,
    about = "Reads what a failed ML training run left behind and says why it died."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Colour: `auto` (stdout is a terminal, TERM is not `dumb`, NO_COLOR unset or empty),
    /// `always`, `never`.
    #[arg(long, global = true, value_enum, default_value_t = ColorWhen::Auto)]
    pub color: ColorWhen,
    /// Language of the reports for people (terminal, markdown, github): `zh` or `en`.
    /// Default: Chinese when LANGUAGE, LC_ALL, LC_MESSAGES or LANG (the first set) starts
    /// with `zh`. JSON keys and values are the same in both.
    #[arg(long, global = true, value_enum)]
    pub lang: Option<LangArg>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorWhen {
    Auto,
    Always,
    Never,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LangArg {
    Zh,
    En,
}

/// How the reports for people look, decided once from the flags and the environment.
#[derive(Clone, Copy, Debug)]
pub struct Ui {
    pub color: ColorWhen,
    pub lang: crate::model::Lang,
}

impl Ui {
    fn of(cli: &Cli) -> Ui {
        let lang = match cli.lang {
            Some(LangArg::Zh) => crate::model::Lang::Zh,
            Some(LangArg::En) => crate::model::Lang::En,
            None => crate::report::i18n::from_env(|k| std::env::var(k).ok()),
        };
        Ui {
            color: cli.color,
            lang,
        }
    }

    /// The report options for an output that is (or is not) a terminal.
    pub fn options(self, terminal: bool) -> terminal::Options {
        let env = |k: &str| std::env::var(k).ok();
        let color = match self.color {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto => {
                terminal
                    && env("TERM").is_none_or(|t| t != "dumb")
                    && env("NO_COLOR").is_none_or(|v| v.is_empty())
            }
        };
        terminal::Options {
            color,
            lang: self.lang,
            tables: crate::report::table::Tables::for_output(terminal, env("COLUMNS").as_deref()),
        }
    }

    /// For stdout.
    fn stdout(self) -> terminal::Options {
        self.options(std::io::stdout().is_terminal())
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Diagnose a failed run: directories, files, archives (.zip, .tar.*), compressed files, or - for stdin.
    Analyze(AnalyzeArgs),
    /// List every fact the inputs tell, with where it was read.
    Facts(FactsArgs),
    /// Analyse many failed runs in parallel and group them by fingerprint.
    Triage(TriageArgs),
    /// Write a snapshot of this machine's state (df, memory, cgroup, ulimit, nvidia-smi,
    /// dmesg, environment, versions) into DIR as files `analyze` reads back.
    Capture(CaptureArgs),
    /// Run a training command under watch: tee its output, sample /dev/shm, cgroup, host and
    /// GPU memory, snapshot before and after, and diagnose it if it fails.
    Run(RunArgs),
    /// What changed between a run that worked and one that failed: versions, environment,
    /// limits, launcher, training settings and trajectory, most relevant first.
    Diff(DiffArgs),
    /// The failure history: migrate, notes, seen-before, top failures, lemon hosts and GPUs.
    History(crate::history::command::HistoryArgs),
    /// The knowledge base: list, explain and test rules.
    Rules {
        #[command(subcommand)]
        command: RulesCommand,
    },
    /// Print a shell completion script (e.g. `trainwreck completions bash > /etc/bash_completion.d/trainwreck`).
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff; `trainwreck man > trainwreck.1`), or a subcommand's.
    Man {
        /// A subcommand, for its own page (`trainwreck man analyze > trainwreck-analyze.1`).
        subcommand: Option<String>,
    },
}

#[derive(clap::Args, Debug)]
pub struct AnalyzeArgs {
    /// Inputs: directories (walked), files, archives (.zip, .tar, .tar.gz, .tar.zst, .tar.xz;
    /// members are read in place), compressed files (.gz, .zst, .xz, .lz4, .bz2), or - for stdin.
    #[arg(required = true)]
    pub paths: Vec<String>,
    /// Output format.
    #[arg(long, value_parser = format::value_parser(Cmd::Analyze), default_value = "table")]
    pub format: &'static Format,
    /// Extra rule directories (TOML files), loaded after the built-in rules.
    #[arg(long = "rules", value_name = "DIR")]
    pub rules: Vec<PathBuf>,
    /// Worker threads (default: available cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Never colour the terminal report (the same as `--color never`).
    #[arg(long)]
    pub no_color: bool,
    /// Root holding the crashed machine's files, for naming core-dump stack frames
    /// (`DIR/usr/lib/…/libc.so.6`).
    #[arg(long, value_name = "DIR")]
    pub sysroot: Option<PathBuf>,
    /// Directories searched by file name for the libraries a core dump mapped.
    #[arg(long = "search-path", value_name = "DIR")]
    pub search_path: Vec<PathBuf>,
    /// Also print the merged per-rank timeline around the failure.
    #[arg(long)]
    pub timeline: bool,
    /// `default`: exit 0 whenever the analysis ran; `action`: exit with the status of the
    /// verdict and the top finding's action class (0 no failure, 10 retry, 11 replace
    /// hardware, 12 fix config/environment, 13 fix code, 14 investigate).
    #[arg(long, value_enum, default_value_t = ExitCode::Default)]
    pub exit_code: ExitCode,
    /// Mask secrets (always done for markdown, github and junit) and optionally `hosts`,
    /// `paths` (comma-separated; `all` for both).
    #[arg(long, value_name = "WHAT", num_args = 0..=1, require_equals = true, default_missing_value = "secrets")]
    pub redact: Option<String>,
    #[command(flatten)]
    pub history: crate::history::command::RecordArgs,
    /// A run that worked (directory, files, archive), or `last-good`: compare this run with
    /// it and add the differences (`diff` in the JSON, a section in terminal and Markdown).
    #[arg(long, value_name = "GOOD|last-good")]
    pub baseline: Option<String>,
    /// Also follow symbolic links in a walked directory that point outside it (by default
    /// such links are named in a warning and not followed); at most 10,000 files that way.
    #[arg(long)]
    pub follow_links: bool,
    #[command(flatten)]
    pub notify: NotifyArgs,
}

/// `--notify` / `--notify-cmd` (analyze, triage, run): a notice when a run failed.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct NotifyArgs {
    /// When the run failed, POST a short JSON notice (cause, confidence, fix, fingerprint,
    /// seen before, and a Slack-compatible `text`; secrets masked) to this webhook. A notice
    /// that cannot be sent (30 s at most, one retry) is a warning and changes no exit status.
    #[arg(long = "notify", value_name = "URL")]
    pub urls: Vec<String>,
    /// When the run failed, pipe the same JSON notice to `sh -c CMD` instead.
    #[arg(long = "notify-cmd", value_name = "CMD")]
    pub commands: Vec<String>,
}

impl NotifyArgs {
    /// Deliver the notice, when there is one and somewhere to send it; failures are warnings.
    fn send(&self, notice: impl FnOnce() -> Option<serde_json::Value>, lang: crate::model::Lang) {
        let targets = crate::notify::Targets {
            urls: self.urls.clone(),
            commands: self.commands.clone(),
        };
        if targets.is_empty() {
            return;
        }
        let Some(payload) = notice() else { return };
        for e in targets.send(&payload) {
            let msg = match lang {
                crate::model::Lang::Zh => format!("警告：通知未发出：{e}"),
                crate::model::Lang::En => format!("warning: notice not sent: {e}"),
            };
            say(lang, msg);
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct DiffArgs {
    /// The run that worked: a directory, a file, an archive or a capture.
    pub good: String,
    /// The run that failed.
    pub bad: String,
    /// Output format.
    #[arg(long, value_parser = format::value_parser(Cmd::Diff), default_value = "table")]
    pub format: &'static Format,
    /// Extra rule directories (TOML files), loaded after the built-in rules.
    #[arg(long = "rules", value_name = "DIR")]
    pub rules: Vec<PathBuf>,
    /// Worker threads (default: available cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Mask secrets (always done for markdown; settings whose name names a secret are masked
    /// whole) and optionally `hosts`, `paths` (comma-separated; `all` for both).
    #[arg(long, value_name = "WHAT", num_args = 0..=1, require_equals = true, default_missing_value = "secrets")]
    pub redact: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct TriageArgs {
    /// Failed runs, or parents of many runs (see README "Which directories are runs").
    #[arg(required = true)]
    pub paths: Vec<String>,
    /// Output format.
    #[arg(long, value_parser = format::value_parser(Cmd::Triage), default_value = "table")]
    pub format: &'static Format,
    /// Extra rule directories (TOML files), loaded after the built-in rules.
    #[arg(long = "rules", value_name = "DIR")]
    pub rules: Vec<PathBuf>,
    /// Runs analysed at once (default: available cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Mask secrets (always done for markdown) and optionally `hosts`, `paths`, `all`.
    #[arg(long, value_name = "WHAT", num_args = 0..=1, require_equals = true, default_missing_value = "secrets")]
    pub redact: Option<String>,
    /// Failure history: a SQLite file or postgres://… (else $TRAINWRECK_DB, else the default).
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<String>,
    /// Record every run's diagnosis in the failure history (exit status 3 if that fails).
    #[arg(long)]
    pub record: bool,
    /// `default`: exit 0 whenever the triage ran; `action`: analyze's statuses for the most
    /// frequent failure (0 when no run failed, 10 retry, 11 replace hardware, 12 fix
    /// config/environment, 13 fix code, 14 investigate).
    #[arg(long, value_enum, default_value_t = ExitCode::Default)]
    pub exit_code: ExitCode,
    #[command(flatten)]
    pub notify: NotifyArgs,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitCode {
    Default,
    Action,
}

#[derive(clap::Args, Debug)]
pub struct CaptureArgs {
    /// Directory to write the snapshot into (created if missing).
    pub dir: PathBuf,
    /// Skip the python/torch/NCCL/DeepSpeed version probe (it imports torch: seconds).
    #[arg(long)]
    pub no_versions: bool,
}

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Where logs, snapshots, samples and peaks go (default: ./trainwreck-run-<unix time>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Sampling interval in milliseconds.
    #[arg(long, default_value_t = 500)]
    pub interval: u64,
    /// Do not analyse the run directory when the command fails.
    #[arg(long, conflicts_with_all = ["urls", "commands"])]
    pub no_analyze: bool,
    /// Failure history to record a failed run in (else $TRAINWRECK_DB, else the default).
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<String>,
    /// Do not record the failed run in the failure history.
    #[arg(long)]
    pub no_record: bool,
    /// Job name or id to record (default: $SLURM_JOB_ID and other scheduler/CI variables).
    #[arg(long, value_name = "ID")]
    pub job: Option<String>,
    #[command(flatten)]
    pub notify: NotifyArgs,
    /// The command and its arguments (after `--`).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(clap::Args, Debug)]
pub struct FactsArgs {
    /// Inputs, as for `analyze`.
    pub paths: Vec<String>,
    /// Output format (facts render as a table or as JSON only).
    #[arg(long, value_parser = format::value_parser(Cmd::Facts), default_value = "table")]
    pub format: &'static Format,
    /// Print the catalog of fact names instead.
    #[arg(long)]
    pub catalog: bool,
    /// Mask secrets in fact values and cited lines, and optionally `hosts`, `paths`, `all`.
    #[arg(long, value_name = "WHAT", num_args = 0..=1, require_equals = true, default_missing_value = "secrets")]
    pub redact: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum RulesCommand {
    /// One line per rule.
    List {
        /// Extra rule directories (TOML files), loaded after the built-in rules.
        #[arg(long = "rules", value_name = "DIR")]
        rules: Vec<PathBuf>,
    },
    /// A rule's documentation, signatures and fix.
    Explain {
        /// Rule code (TW0101) or name.
        id: String,
        /// Extra rule directories (TOML files), loaded after the built-in rules.
        #[arg(long = "rules", value_name = "DIR")]
        rules: Vec<PathBuf>,
    },
    /// Run every rule's examples; fails naming the rule, the example and why.
    Test {
        /// Extra rule directories (TOML files), loaded after the built-in rules.
        #[arg(long = "rules", value_name = "DIR")]
        rules: Vec<PathBuf>,
    },
    /// Print every signature regex, one per line (for `rg -f` comparisons).
    Patterns {
        /// Extra rule directories (TOML files), loaded after the built-in rules.
        #[arg(long = "rules", value_name = "DIR")]
        rules: Vec<PathBuf>,
    },
    /// Per file, the number of lines matching any signature, uncapped (`path:count`, like
    /// `rg -c -f`): the benchmark harness's correctness check.
    #[command(hide = true)]
    Scan {
        /// Inputs, as for `analyze`.
        paths: Vec<String>,
        /// Extra rule directories (TOML files), loaded after the built-in rules.
        #[arg(long = "rules", value_name = "DIR")]
        rules: Vec<PathBuf>,
    },
}

/// The clap command tree (for completions, the man page and the help-text test).
pub fn cli_command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// One of our own messages on stderr, `trainwreck: ` first, in the user's language. The
/// message can quote paths, rule files and history rows: it goes through the terminal sink.
fn say(lang: crate::model::Lang, msg: impl std::fmt::Display) {
    let line = format!("{}{msg}\n", Tr(lang).cli_prefix());
    eprint!("{}", crate::report::emit(Sink::Terminal, &line));
}

fn load(dirs: &[PathBuf], lang: crate::model::Lang) -> Result<KnowledgeBase, i32> {
    let tr = Tr(lang);
    let refs: Vec<&std::path::Path> = dirs.iter().map(|p| p.as_path()).collect();
    let kb = KnowledgeBase::load(&refs).map_err(|errs| {
        for e in &errs {
            say(lang, tr.cli_rule_error(&e.to_string()));
        }
        exit::USAGE
    })?;
    for w in &kb.warnings {
        say(lang, tr.cli_rule_warning(tr.text(w)));
    }
    Ok(kb)
}

fn threads(n: Option<usize>) -> usize {
    n.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
    })
}

impl Cli {
    /// The worker threads this command will run (`--threads`, else the available cores); 1 for
    /// the commands that scan nothing. `main` sizes the allocator from it.
    pub fn worker_threads(&self) -> usize {
        match &self.command {
            Command::Analyze(a) => threads(a.threads),
            Command::Diff(d) => threads(d.threads),
            Command::Triage(t) => threads(t.threads),
            Command::Run(_) => threads(None),
            _ => 1,
        }
    }
}

pub fn run(cli: Cli) -> i32 {
    let ui = Ui::of(&cli);
    match cli.command {
        Command::Analyze(a) => analyze(a, ui),
        Command::Facts(f) => facts(f, ui),
        Command::Capture(c) => capture_cmd(c, ui),
        Command::Run(r) => run_cmd(r, ui),
        Command::Triage(t) => triage_cmd(t, ui),
        Command::Diff(d) => diff_cmd(d, ui),
        Command::History(h) => match crate::history::command::run(h, ui.lang) {
            Ok((sink, text)) => print(sink, &text),
            Err(e) => {
                say(ui.lang, e);
                exit::HISTORY
            }
        },
        Command::Rules { command } => rules_cmd(command, ui),
        Command::Completions { shell } => {
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut cli_command(), "trainwreck", &mut buf);
            print(Sink::Json, &String::from_utf8_lossy(&buf))
        }
        Command::Man { subcommand } => {
            let mut root = cli_command();
            root.build();
            let page = match &subcommand {
                None => root,
                Some(name) => match root.find_subcommand(name) {
                    // clap names are `'static`; this one is made once, for a process that
                    // prints the page and exits.
                    Some(sub) => sub
                        .clone()
                        .name(&*String::leak(format!("trainwreck-{name}")))
                        .version(env!("CARGO_PKG_VERSION")),
                    None => {
                        say(ui.lang, Tr(ui.lang).cli_no_subcommand(name));
                        return exit::USAGE;
                    }
                },
            };
            let mut buf = Vec::new();
            match clap_mangen::Man::new(page).render(&mut buf) {
                Ok(()) => print(Sink::Json, &String::from_utf8_lossy(&buf)),
                Err(e) => {
                    say(ui.lang, Tr(ui.lang).cli_cannot_render_man(&e.to_string()));
                    exit::USAGE
                }
            }
        }
    }
}

/// A path that does not exist is a usage error (a typo, a job's logs not where the script
/// thought), never "0 inputs, no failure": say which, and exit 2. A path that exists but cannot
/// be read is the analysis's business (a warning in the report).
fn missing_paths(paths: &[String], lang: crate::model::Lang) -> Option<i32> {
    let missing: Vec<&String> = paths
        .iter()
        .filter(|p| p.as_str() != "-")
        .filter(|p| {
            std::fs::symlink_metadata(p).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        })
        .collect();
    for p in &missing {
        say(lang, Tr(lang).cli_no_such_path(p));
    }
    (!missing.is_empty()).then_some(exit::USAGE)
}

fn analyze(args: AnalyzeArgs, ui: Ui) -> i32 {
    if let Some(code) = missing_paths(&args.paths, ui.lang) {
        return code;
    }
    stdin_hint(&args.paths, ui.lang);
    // Detection and token tables build beside the rules (start-up is sequential otherwise).
    std::thread::spawn(crate::analyze::warm_up);
    let kb = match load(&args.rules, ui.lang) {
        Ok(kb) => kb,
        Err(code) => return code,
    };
    let mut redactor = match redactor(args.redact.as_deref(), args.format.pasted, ui.lang) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let mut engine = crate::analyze::Engine::new(&kb);
    engine.core_options.sysroot = args.sysroot.clone();
    engine.core_options.search_paths = args.search_path.clone();
    engine.follow_links = args.follow_links;
    let progress = crate::analyze::Progress::default();
    let done = std::sync::atomic::AtomicBool::new(false);
    let mut r = std::thread::scope(|s| {
        if std::io::stderr().is_terminal() {
            s.spawn(|| crate::report::progress::show(&progress, &done));
        }
        let r =
            crate::diagnose_with_progress(&engine, &args.paths, threads(args.threads), &progress);
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        r
    });
    let h = &args.history;
    if let Some(base) = &args.baseline {
        // Looked up before this run is recorded, so `last-good` never picks this run itself.
        let job = h.job.clone().or_else(|| {
            let ctx = crate::history::RecordContext {
                paths: args.paths.clone(),
                ..Default::default()
            };
            crate::history::RunRecord::from_report(&r, &ctx, 0).job
        });
        match baseline_paths(base, h.db.as_deref(), job.as_deref(), ui.lang) {
            Ok(good) => {
                let good = crate::diff::Run::analyse(&engine, &good, threads(args.threads));
                let mut bad =
                    crate::diff::Run::from_parts(&args.paths, &r.facts, r.verdict, &r.findings);
                bad.samples = r.samples.clone();
                r.diff = Some(crate::diff::compare(&good, &bad));
            }
            Err(e) => {
                say(ui.lang, Tr(ui.lang).cli_baseline_error(base, &e));
                return exit::USAGE;
            }
        }
    }
    let ctx = h.record.then(|| crate::history::RecordContext {
        paths: args.paths.clone(),
        job: h.job.clone(),
        hosts: h.hosts.clone(),
        gpus: h.gpus.clone(),
        store_raw: h.store_raw,
    });
    let history_failed = with_history(&mut r, h.db.as_deref(), ctx.as_ref(), ui.lang);
    if let Some(red) = redactor.as_mut() {
        red.add_hosts(r.hosts().iter().map(String::as_str));
        if let Some(seen) = &r.history {
            red.add_hosts(seen.hosts.iter().map(String::as_str));
        }
        r.redact(red);
    }
    let mut term = ui.stdout();
    term.color &= !args.no_color;
    let root = match args.paths.as_slice() {
        [one] if std::path::Path::new(one).is_dir() => one.trim_start_matches("./"),
        _ => "",
    };
    let o = format::Options {
        term,
        root,
        timeline: args.timeline,
    };
    let code = print_view(args.format, View::Run(&r), &o, redactor.as_mut(), ui.lang);
    let notice = || crate::notify::of_report(&r, "analyze", &args.paths, None, ui.lang);
    args.notify.send(notice, ui.lang);
    if history_failed && h.record {
        return exit::HISTORY;
    }
    let code = match args.exit_code {
        ExitCode::Default => code,
        ExitCode::Action => crate::triage::exit_for(&r),
    };
    // The report is written and the process ends on return: freeing the engine (its per-thread
    // regex caches), the rules and the report one allocation at a time is work nobody waits
    // for the result of (8 M instructions on the main thread, a 100 MB run). None of them
    // owns anything but memory.
    std::mem::forget(r);
    std::mem::forget(engine);
    std::mem::forget(kb);
    code
}

/// The good run's paths for `--baseline`: as given, or the history's last good run of the
/// same job (`last-good`).
fn baseline_paths(
    base: &str,
    db: Option<&str>,
    job: Option<&str>,
    lang: crate::model::Lang,
) -> Result<Vec<String>, String> {
    if base != "last-good" {
        if missing_paths(&[base.to_string()], lang).is_some() {
            return Err(Tr(lang).cli_no_such_file().into());
        }
        return Ok(vec![base.to_string()]);
    }
    crate::history::command::last_good(db, job)
}

fn diff_cmd(args: DiffArgs, ui: Ui) -> i32 {
    let both = [args.good.clone(), args.bad.clone()];
    if let Some(code) = missing_paths(&both, ui.lang) {
        return code;
    }
    std::thread::spawn(crate::analyze::warm_up);
    let kb = match load(&args.rules, ui.lang) {
        Ok(kb) => kb,
        Err(code) => return code,
    };
    let engine = crate::analyze::Engine::new(&kb);
    let n = threads(args.threads);
    let good = crate::diff::Run::analyse(&engine, std::slice::from_ref(&args.good), n);
    let bad = crate::diff::Run::analyse(&engine, std::slice::from_ref(&args.bad), n);
    let mut d = crate::diff::compare(&good, &bad);
    let mut redactor = match redactor(args.redact.as_deref(), args.format.pasted, ui.lang) {
        Ok(r) => r,
        Err(code) => return code,
    };
    // Values by their key, then every text by its shape, before any format renders it.
    if let Some(red) = redactor.as_mut() {
        d.redact(red);
    }
    let o = view_options(ui.stdout());
    print_view(args.format, View::Diff(&d), &o, redactor.as_mut(), ui.lang)
}

/// Record (when asked) and attach "seen before"; a history problem is said on stderr and
/// never stops the diagnosis from printing. True when the history could not be used.
fn with_history(
    r: &mut crate::report::Report,
    db: Option<&str>,
    record: Option<&crate::history::RecordContext>,
    lang: crate::model::Lang,
) -> bool {
    match crate::history::command::attach(r, db, record) {
        Ok(_) => false,
        Err(e) => {
            let msg = Tr(lang).cli_history_unused(&e.to_string(), record.is_some());
            say(lang, msg);
            true
        }
    }
}

/// `-` with a terminal on stdin waits for a paste: say how to end it, once.
fn stdin_hint(paths: &[String], lang: crate::model::Lang) {
    if paths.iter().any(|p| p == "-") && std::io::stdin().is_terminal() {
        say(lang, Tr(lang).cli_stdin_hint());
    }
}

/// The redactor a format needs: always for pasted formats, else only on `--redact`.
fn redactor(
    flag: Option<&str>,
    pasted: bool,
    lang: crate::model::Lang,
) -> Result<Option<crate::redact::Redactor>, i32> {
    if flag.is_none() && !pasted {
        return Ok(None);
    }
    let list: Vec<String> = flag.map(|s| vec![s.to_string()]).unwrap_or_default();
    match crate::redact::Options::parse(&list) {
        Ok(o) => Ok(Some(crate::redact::Redactor::new(o))),
        Err(e) => {
            say(lang, e);
            Err(exit::USAGE)
        }
    }
}

fn triage_cmd(args: TriageArgs, ui: Ui) -> i32 {
    if let Some(code) = missing_paths(&args.paths, ui.lang) {
        return code;
    }
    stdin_hint(&args.paths, ui.lang);
    let kb = match load(&args.rules, ui.lang) {
        Ok(kb) => kb,
        Err(code) => return code,
    };
    let mut redactor = match redactor(args.redact.as_deref(), args.format.pasted, ui.lang) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let record_failed = std::sync::atomic::AtomicBool::new(false);
    let t = if args.record {
        let store = crate::history::locate(args.db.as_deref(), true)
            .ok_or_else(|| crate::history::HistoryError(Tr(ui.lang).cli_no_history_db().into()))
            .and_then(|loc| crate::history::Store::open(&loc));
        match store {
            Ok(store) => {
                let store = std::sync::Mutex::new(store);
                let now = crate::history::now();
                let each = |run: &std::path::Path, rep: &crate::report::Report| {
                    let ctx = crate::history::RecordContext {
                        paths: vec![run.display().to_string()],
                        ..Default::default()
                    };
                    let rec = crate::history::RunRecord::from_report(rep, &ctx, now);
                    let mut s = store.lock().unwrap_or_else(|e| e.into_inner());
                    if let Err(e) = s.record(&rec) {
                        let run = run.display().to_string();
                        say(
                            ui.lang,
                            Tr(ui.lang).cli_run_not_recorded(&e.to_string(), &run),
                        );
                        record_failed.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                };
                crate::triage::run_with(&kb, &args.paths, threads(args.threads), &each)
            }
            Err(e) => {
                say(ui.lang, Tr(ui.lang).cli_triage_not_recorded(&e.to_string()));
                record_failed.store(true, std::sync::atomic::Ordering::Relaxed);
                crate::triage::run(&kb, &args.paths, threads(args.threads))
            }
        }
    } else {
        crate::triage::run(&kb, &args.paths, threads(args.threads))
    };
    let failed_code = |code: i32| {
        if record_failed.load(std::sync::atomic::Ordering::Relaxed) {
            exit::HISTORY
        } else if args.exit_code == ExitCode::Action {
            crate::triage::exit_for_triage(&t)
        } else {
            code
        }
    };
    if let Some(red) = redactor.as_mut() {
        red.add_hosts(t.hosts().iter().map(String::as_str));
    }
    let o = view_options(ui.stdout());
    let code = print_view(
        args.format,
        View::Triage(&t),
        &o,
        redactor.as_mut(),
        ui.lang,
    );
    let code = failed_code(code);
    args.notify
        .send(|| crate::notify::of_triage(&t, ui.lang), ui.lang);
    code
}

/// The options of a command's view with only the language and the layout of its own.
fn view_options(term: terminal::Options) -> format::Options<'static> {
    format::Options {
        term,
        root: "",
        timeline: false,
    }
}

/// A command's view in the format asked for, out through the format's sink. The format's
/// parser offers only the formats that print the command's view, so the last arm is a guard.
fn print_view(
    f: &Format,
    view: View<'_>,
    o: &format::Options<'_>,
    red: Option<&mut crate::redact::Redactor>,
    lang: crate::model::Lang,
) -> i32 {
    match f.render(view, o, red) {
        Some(text) => print(f.sink, &text),
        None => {
            say(lang, format!("--format {}: not for this command", f.name));
            exit::USAGE
        }
    }
}

/// For terminal text (facts, rules, tables): see [`print`].
fn print_term(text: &str) -> i32 {
    print(Sink::Terminal, text)
}

/// Every text for stdout goes out here, once, through its sink (`report::emit`), so what came
/// from an input, a rule file, the history or a person cannot drive the terminal or break the
/// document it is in.
fn print(sink: Sink, text: &str) -> i32 {
    let text = crate::report::emit(sink, text);
    let mut out = std::io::stdout().lock();
    // A closed pipe (`| head`) is not an error worth a panic.
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    exit::OK
}

fn facts(args: FactsArgs, ui: Ui) -> i32 {
    if args.catalog {
        return print_term(&crate::report::facts::catalog(
            crate::facts::CATALOG,
            Tr(ui.lang),
        ));
    }
    if args.paths.is_empty() {
        say(ui.lang, Tr(ui.lang).cli_facts_needs_path());
        return exit::USAGE;
    }
    if let Some(code) = missing_paths(&args.paths, ui.lang) {
        return code;
    }
    let kb = match load(&[], ui.lang) {
        Ok(kb) => kb,
        Err(code) => return code,
    };
    let mut redactor = match redactor(args.redact.as_deref(), false, ui.lang) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let (inputs, mut warnings) = inputs::collect(&args.paths);
    let a = Engine::new(&kb).run(&inputs, threads(None));
    warnings.extend(a.warnings.iter().cloned());
    let mut facts = a.facts.all().to_vec();
    if let Some(red) = redactor.as_mut() {
        let mut r = crate::report::Report::of_facts(facts, warnings);
        r.redact(red);
        (facts, warnings) = (r.facts, r.warnings);
    }
    let view = View::Facts {
        facts: &facts,
        warnings: &warnings,
    };
    print_view(args.format, view, &view_options(ui.stdout()), None, ui.lang)
}

fn rules_cmd(cmd: RulesCommand, ui: Ui) -> i32 {
    match cmd {
        RulesCommand::List { rules } => {
            let kb = match load(&rules, ui.lang) {
                Ok(kb) => kb,
                Err(c) => return c,
            };
            print_term(&crate::report::rules::list(
                &kb,
                ui.stdout().tables,
                ui.lang,
            ))
        }
        RulesCommand::Explain { id, rules } => {
            let kb = match load(&rules, ui.lang) {
                Ok(kb) => kb,
                Err(c) => return c,
            };
            if let Some(e) = rules::xid::parse_id(&id).and_then(rules::xid::lookup) {
                return print_term(&crate::report::rules::explain_xid(e, ui.lang));
            }
            let engine_made = crate::correlate::ENGINE_FINDINGS
                .iter()
                .find(|e| e.code.eq_ignore_ascii_case(&id) || e.name == id);
            if let (None, Some(f)) = (kb.find(&id), engine_made) {
                let e = crate::report::rules::Explain::of_engine(f);
                return print_term(&crate::report::rules::explain(&e, ui.lang));
            }
            match kb.find(&id) {
                Some(r) => print_term(&crate::report::rules::explain(
                    &crate::report::rules::Explain::of_rule(r),
                    ui.lang,
                )),
                None => {
                    say(ui.lang, Tr(ui.lang).cli_no_rule(&id));
                    exit::USAGE
                }
            }
        }
        RulesCommand::Test { rules } => {
            let kb = match load(&rules, ui.lang) {
                Ok(kb) => kb,
                Err(c) => return c,
            };
            let fails = crate::kbtest::test_examples(&kb);
            let n_ex: usize = kb
                .rules
                .iter()
                .map(|r| r.examples_fire.len() + r.examples_silent.len() + r.examples_cases.len())
                .sum();
            // `FAIL` stays one word in every language, for scripts that grep for it.
            let tr = Tr(ui.lang);
            for f in &fails {
                let line = format!("FAIL {}\n", tr.text(f));
                eprint!("{}", crate::report::emit(Sink::Terminal, &line));
            }
            println!(
                "{}",
                tr.rules_test_summary(n_ex.saturating_sub(fails.len()), fails.len())
            );
            if fails.is_empty() {
                exit::OK
            } else {
                exit::TEST_FAILED
            }
        }
        RulesCommand::Patterns { rules } => {
            let kb = match load(&rules, ui.lang) {
                Ok(kb) => kb,
                Err(c) => return c,
            };
            print_term(&crate::report::rules::patterns(&kb))
        }
        RulesCommand::Scan { paths, rules } => {
            let kb = match load(&rules, ui.lang) {
                Ok(kb) => kb,
                Err(c) => return c,
            };
            let (inputs, _) = inputs::collect(&paths);
            let mut s = String::new();
            for (p, n) in Engine::new(&kb).count_matching_lines(&inputs) {
                s.push_str(&format!("{p}:{n}\n"));
            }
            print_term(&s)
        }
    }
}

fn capture_cmd(args: CaptureArgs, ui: Ui) -> i32 {
    let opts = crate::capture::SnapshotOptions {
        versions: !args.no_versions,
        ..Default::default()
    };
    match crate::capture::snapshot(&args.dir, &opts) {
        Ok(m) => {
            let dir = args.dir.display().to_string();
            say(
                ui.lang,
                Tr(ui.lang).cli_capture_wrote(m.files.len(), &dir, m.notes.len()),
            );
            exit::OK
        }
        Err(e) => {
            say(ui.lang, e);
            exit::USAGE
        }
    }
}

fn run_cmd(args: RunArgs, ui: Ui) -> i32 {
    let out = args.out.unwrap_or_else(|| {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        PathBuf::from(format!("trainwreck-run-{secs}"))
    });
    let mut opts = crate::capture::RunOptions::new(args.command, out);
    opts.interval = std::time::Duration::from_millis(args.interval.max(10));
    opts.lang = ui.lang;
    let outcome = match crate::capture::run(opts) {
        Ok(o) => o,
        Err(e) => {
            say(ui.lang, &e);
            return e.exit_status();
        }
    };
    // Said again once the command's output has ended: the live line may have scrolled away.
    for w in &outcome.warnings {
        let tr = Tr(ui.lang);
        say(
            ui.lang,
            format_args!("{}{}{w}", tr.warning(), tr.after_label()),
        );
    }
    if outcome.exit_status != 0 && !args.no_analyze {
        // The command's own output went to stdout/stderr; the diagnosis goes to stderr so a
        // pipeline reading the command's stdout is not disturbed.
        match load(&[], ui.lang) {
            Ok(kb) => {
                let dir = outcome.out_dir.display().to_string();
                let mut r = crate::diagnose(&kb, std::slice::from_ref(&dir), threads(None));
                if !args.no_record {
                    let job = args.job.clone().or_else(|| {
                        crate::history::record::JOB_VARIABLES
                            .iter()
                            .find_map(|v| std::env::var(v).ok().filter(|j| !j.is_empty()))
                    });
                    // The command ran here: this host, unless the logs name the hosts.
                    let hosts = if r.hosts().is_empty() {
                        crate::history::record::this_host().into_iter().collect()
                    } else {
                        Vec::new()
                    };
                    let ctx = crate::history::RecordContext {
                        paths: vec![dir.clone()],
                        job,
                        hosts,
                        ..Default::default()
                    };
                    with_history(&mut r, args.db.as_deref(), Some(&ctx), ui.lang);
                }
                // The diagnosis goes to stderr: colour and tables follow it.
                let o = ui.options(std::io::stderr().is_terminal());
                let dir = outcome.out_dir.display().to_string();
                eprintln!();
                say(
                    ui.lang,
                    Tr(ui.lang).cli_run_failed(outcome.exit_status, &dir),
                );
                eprintln!();
                let text = terminal::render_with(&r, &o);
                eprint!("{}", crate::report::emit(Sink::Terminal, &text));
                let notice = || {
                    let paths = [dir.clone()];
                    crate::notify::of_report(&r, "run", &paths, Some(outcome.exit_status), ui.lang)
                };
                args.notify.send(notice, ui.lang);
            }
            Err(_) => say(ui.lang, Tr(ui.lang).cli_run_rules_failed()),
        }
    }
    outcome.exit_status
}
