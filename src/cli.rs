//! Command-line surface: clap's raw arguments, turned into calls of the library. Parses,
//! dispatches and maps results to exit statuses; all analysis lives in the library and all
//! formatting in `report`.

use crate::analyze::Engine;
use crate::inputs;
use crate::report::terminal;
use crate::rules::{self, KnowledgeBase};
use clap::{Parser, Subcommand, ValueEnum};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

/// Exit statuses (documented in README.md).
pub mod exit {
    /// The analysis ran (whatever the verdict).
    pub const OK: i32 = 0;
    /// `rules test` found failing examples.
    pub const TEST_FAILED: i32 = 1;
    /// Bad usage, or a rule file that does not load.
    pub const USAGE: i32 = 2;
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
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Diagnose a failed run: directories, files, .gz files, or - for stdin.
    Analyze(AnalyzeArgs),
    /// List every fact the inputs tell, with where it was read.
    Facts(FactsArgs),
    /// The knowledge base: list, explain and test rules.
    Rules {
        #[command(subcommand)]
        command: RulesCommand,
    },
}

#[derive(clap::Args, Debug)]
pub struct AnalyzeArgs {
    /// Inputs: directories (walked), files, .gz files, or - for stdin.
    #[arg(required = true)]
    pub paths: Vec<String>,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Extra rule directories (TOML files), loaded after the built-in rules.
    #[arg(long = "rules", value_name = "DIR")]
    pub rules: Vec<PathBuf>,
    /// Worker threads (default: available cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Never colour the terminal report.
    #[arg(long)]
    pub no_color: bool,
}

#[derive(clap::Args, Debug)]
pub struct FactsArgs {
    pub paths: Vec<String>,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Print the catalog of fact names instead.
    #[arg(long)]
    pub catalog: bool,
}

#[derive(Subcommand, Debug)]
pub enum RulesCommand {
    /// One line per rule.
    List {
        #[arg(long = "rules", value_name = "DIR")]
        rules: Vec<PathBuf>,
    },
    /// A rule's documentation, signatures and fix.
    Explain {
        /// Rule code (TW0101) or name.
        id: String,
        #[arg(long = "rules", value_name = "DIR")]
        rules: Vec<PathBuf>,
    },
    /// Run every rule's examples; fails naming the rule, the example and why.
    Test {
        #[arg(long = "rules", value_name = "DIR")]
        rules: Vec<PathBuf>,
    },
    /// Print every signature regex, one per line (for `rg -f` comparisons).
    Patterns {
        #[arg(long = "rules", value_name = "DIR")]
        rules: Vec<PathBuf>,
    },
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
}

fn load(dirs: &[PathBuf]) -> Result<KnowledgeBase, i32> {
    let refs: Vec<&std::path::Path> = dirs.iter().map(|p| p.as_path()).collect();
    KnowledgeBase::load(&refs).map_err(|errs| {
        for e in &errs {
            eprintln!("trainwreck: rule error: {e}");
        }
        exit::USAGE
    })
}

fn threads(n: Option<usize>) -> usize {
    n.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
    })
}

pub fn run(cli: Cli) -> i32 {
    match cli.command {
        Command::Analyze(a) => analyze(a),
        Command::Facts(f) => facts(f),
        Command::Rules { command } => rules_cmd(command),
    }
}

fn analyze(args: AnalyzeArgs) -> i32 {
    let kb = match load(&args.rules) {
        Ok(kb) => kb,
        Err(code) => return code,
    };
    let r = crate::diagnose(&kb, &args.paths, threads(args.threads));
    let text = match args.format {
        Format::Json => r.to_json() + "\n",
        Format::Table => {
            let color = !args.no_color
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stdout().is_terminal();
            terminal::render(&r, &terminal::Style { color })
        }
    };
    print_out(&text)
}

fn print_out(text: &str) -> i32 {
    let mut out = std::io::stdout().lock();
    // A closed pipe (`| head`) is not an error worth a panic.
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    exit::OK
}

fn facts(args: FactsArgs) -> i32 {
    if args.catalog {
        let mut s = String::new();
        for spec in crate::facts::CATALOG {
            s.push_str(&format!("{:40} {:?}  {}\n", spec.name, spec.unit, spec.doc));
        }
        return print_out(&s);
    }
    if args.paths.is_empty() {
        eprintln!("trainwreck: facts needs at least one PATH (or --catalog)");
        return exit::USAGE;
    }
    let kb = match load(&[]) {
        Ok(kb) => kb,
        Err(code) => return code,
    };
    let (inputs, mut warnings) = inputs::collect(&args.paths);
    let a = Engine::new(&kb).run(&inputs, threads(None));
    warnings.extend(a.warnings.iter().cloned());
    match args.format {
        Format::Json => {
            let v = serde_json::json!({ "facts": a.facts.all(), "warnings": warnings });
            print_out(&(serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"))
        }
        Format::Table => {
            let mut t = comfy_table::Table::new();
            t.load_style(comfy_table::presets::UTF8_BORDERS_ONLY);
            t.set_header(vec!["fact", "value", "source"]);
            for f in a.facts.all() {
                let loc = match f.line {
                    Some(l) => format!("{}:{l}", f.path),
                    None => f.path.clone(),
                };
                t.add_row(vec![f.name.clone(), f.value.to_string(), loc]);
            }
            let mut s = format!("{t}\n");
            for w in &warnings {
                s.push_str(&format!(
                    "warning: {}{}\n",
                    w.path
                        .as_ref()
                        .map(|p| format!("{p}: "))
                        .unwrap_or_default(),
                    w.message
                ));
            }
            print_out(&s)
        }
    }
}

fn rules_cmd(cmd: RulesCommand) -> i32 {
    match cmd {
        RulesCommand::List { rules } => {
            let kb = match load(&rules) {
                Ok(kb) => kb,
                Err(c) => return c,
            };
            let mut t = comfy_table::Table::new();
            t.load_style(comfy_table::presets::UTF8_BORDERS_ONLY);
            t.set_header(vec!["code", "name", "category", "role", "title"]);
            for r in &kb.rules {
                t.add_row(vec![
                    r.code.clone(),
                    r.name.clone(),
                    r.category.name.to_string(),
                    format!("{:?}", r.role).to_lowercase(),
                    r.title.clone(),
                ]);
            }
            print_out(&format!("{t}\n{} rules\n", kb.rules.len()))
        }
        RulesCommand::Explain { id, rules } => {
            let kb = match load(&rules) {
                Ok(kb) => kb,
                Err(c) => return c,
            };
            if let Some(e) = rules::xid::parse_id(&id).and_then(rules::xid::lookup) {
                return print_out(&rules::xid::explain(e));
            }
            match kb.find(&id) {
                Some(r) => print_out(&explain(r)),
                None => {
                    eprintln!(
                        "trainwreck: no rule with code or name {id:?} (see `trainwreck rules list`)"
                    );
                    exit::USAGE
                }
            }
        }
        RulesCommand::Test { rules } => {
            let kb = match load(&rules) {
                Ok(kb) => kb,
                Err(c) => return c,
            };
            let fails = rules::test_examples(&kb);
            let n_ex: usize = kb
                .rules
                .iter()
                .map(|r| r.examples_fire.len() + r.examples_silent.len())
                .sum();
            for f in &fails {
                eprintln!("FAIL {f}");
            }
            println!(
                "{} passed, {} failed",
                n_ex.saturating_sub(fails.len()),
                fails.len()
            );
            if fails.is_empty() {
                exit::OK
            } else {
                exit::TEST_FAILED
            }
        }
        RulesCommand::Patterns { rules } => {
            let kb = match load(&rules) {
                Ok(kb) => kb,
                Err(c) => return c,
            };
            let mut s = String::new();
            for r in &kb.rules {
                for sig in &r.signatures {
                    s.push_str(&sig.source);
                    s.push('\n');
                }
            }
            print_out(&s)
        }
    }
}

fn explain(r: &rules::Rule) -> String {
    let mut s = format!(
        "{} {} — {}\ncategory: {} (action: {})\nrole: {:?}\nstatus: {}\nsource: {}\n\n## What it detects\n{}\n\n## Why it happens\n{}\n",
        r.code,
        r.name,
        r.title,
        r.category.name,
        r.category.action,
        r.role,
        r.status,
        r.origin,
        r.doc_what,
        r.doc_why
    );
    if let Some(l) = &r.doc_lookalikes {
        s.push_str(&format!("\n## Known look-alikes\n{l}\n"));
    }
    if !r.signatures.is_empty() {
        s.push_str("\n## Signatures\n");
        for sig in &r.signatures {
            s.push_str(&format!("  [{:.2}] {}\n", sig.weight, sig.source));
        }
    }
    if !r.conditions.is_empty() {
        s.push_str("\n## Conditions on facts\n");
        for c in &r.conditions {
            s.push_str(&format!(
                "  [{:+.2}] {} {:?} {}{}\n",
                c.weight,
                c.fact,
                c.op,
                c.value.as_ref().map(|v| v.to_string()).unwrap_or_default(),
                if c.trigger {
                    " (raises the finding alone)"
                } else {
                    ""
                }
            ));
        }
    }
    s.push_str("\n## Fix\n");
    for f in &r.fixes {
        let text: String = f
            .text
            .pieces
            .iter()
            .map(|p| match p {
                rules::template::Piece::Text(t) => t.clone(),
                rules::template::Piece::Var { name, .. } => format!("{{{name}}}"),
            })
            .collect();
        s.push_str(&format!("  - {text}\n"));
    }
    if let Some(n) = &r.next_time {
        s.push_str(&format!("\n## What to collect next time\n{n}\n"));
    }
    if !r.references.is_empty() {
        s.push_str("\n## References\n");
        for x in &r.references {
            s.push_str(&format!("  {x}\n"));
        }
    }
    s
}
