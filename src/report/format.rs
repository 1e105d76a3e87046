//! The output formats, each declared once in [`FORMATS`]: its name, the commands that offer
//! it, the sink its text goes through, whether it is always redacted, and its printer behind
//! one interface ([`Printer`]). A command builds its value (a [`View`]) and the chosen printer
//! renders it; the CLI takes its `--format` choices from this table. Adding a format is one
//! printer file and one row here. Renders only: what a view shows and why (the cause, what
//! ranks lower) is the report's (`Report::top`, `Report::considered_why`), never decided here.

use super::history::{FleetReport, FleetStats, ListEntry};
use super::triage::Triage;
use super::{Report, Sink, terminal};
use crate::diff::Diff;
use crate::model::{Fact, Seen, Warning};
use crate::redact::Redactor;

/// The commands that print a value in a chosen format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Analyze,
    Facts,
    Triage,
    Diff,
    History,
    /// `history report`.
    HistoryReport,
}

/// What a command hands its printer.
#[derive(Debug, Clone, Copy)]
pub enum View<'a> {
    /// `analyze`: one run's report (with its `diff` section when there was a baseline).
    Run(&'a Report),
    /// `facts`: every fact read and the warnings.
    Facts {
        facts: &'a [Fact],
        warnings: &'a [Warning],
    },
    Triage(&'a Triage),
    Diff(&'a Diff),
    /// `history show`.
    Seen(&'a Seen),
    /// `history list`.
    List(&'a [ListEntry]),
    /// `history hosts | gpus`.
    Fleet(&'a FleetStats),
    /// `history report`.
    FleetReport(&'a FleetReport),
}

impl View<'_> {
    /// The command that prints this view.
    pub fn command(&self) -> Command {
        match self {
            View::Run(_) => Command::Analyze,
            View::Facts { .. } => Command::Facts,
            View::Triage(_) => Command::Triage,
            View::Diff(_) => Command::Diff,
            View::Seen(_) | View::List(_) | View::Fleet(_) => Command::History,
            View::FleetReport(_) => Command::HistoryReport,
        }
    }
}

/// How the command wants its view printed, beyond the format.
#[derive(Debug, Clone, Copy)]
pub struct Options<'a> {
    /// Language, colour and table layout (colour and layout matter only to a terminal).
    pub term: terminal::Options,
    /// `github`: the directory prefixed to evidence paths, so annotations name workspace files.
    pub root: &'a str,
    /// `analyze --timeline`: the merged per-rank timeline after the terminal report.
    pub timeline: bool,
}

/// A format's printer: the text of a view, or `None` for a view of a command the format does
/// not offer (the table's `commands` say which it does; a test holds the two together).
pub trait Printer: Sync {
    /// `red`, when given, has already redacted the view's texts; a printer that serialises a
    /// value (JSON) masks what the value's keys name with it. A text format never needs it:
    /// [`Format::render`] redacts its whole text after.
    fn print(&self, view: View<'_>, o: &Options<'_>, red: Option<&mut Redactor>) -> Option<String>;
}

/// One output format.
pub struct Format {
    /// The `--format` value.
    pub name: &'static str,
    /// Other values accepted for it.
    pub aliases: &'static [&'static str],
    /// Its line in `--help`.
    pub help: Option<&'static str>,
    /// The commands that offer it.
    pub commands: &'static [Command],
    /// Where its text goes (`report::emit`).
    pub sink: Sink,
    /// Meant to be pasted or kept by CI: secrets are always redacted.
    pub pasted: bool,
    printer: &'static dyn Printer,
}

impl std::fmt::Debug for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

use Command::*;

/// Every output format, in the order `--help` lists them.
pub static FORMATS: &[Format] = &[
    Format {
        name: "table",
        aliases: &["terminal"],
        help: Some("Aligned text for a terminal (`terminal` is accepted too)"),
        commands: &[Analyze, Facts, Triage, Diff, History, HistoryReport],
        sink: Sink::Terminal,
        pasted: false,
        printer: &terminal::Printer,
    },
    Format {
        name: "json",
        aliases: &[],
        help: Some("The data itself (docs/json-schema.md for `analyze`)"),
        commands: &[Analyze, Facts, Triage, Diff, History, HistoryReport],
        sink: Sink::Json,
        pasted: false,
        printer: &super::json::Printer,
    },
    Format {
        name: "markdown",
        aliases: &[],
        help: Some("For a GitHub job summary or a PR/issue comment (secrets always redacted)"),
        commands: &[Analyze, Triage, Diff],
        sink: Sink::Document,
        pasted: true,
        printer: &super::markdown::Printer,
    },
    Format {
        name: "github",
        aliases: &[],
        help: Some(
            "GitHub Actions workflow commands (`::error file=…,line=…::…`; secrets always redacted)",
        ),
        commands: &[Analyze, Triage],
        sink: Sink::Document,
        pasted: true,
        printer: &super::github::Printer,
    },
    Format {
        name: "junit",
        aliases: &[],
        help: Some(
            "JUnit XML, for CI systems that only read test reports (secrets always redacted)",
        ),
        commands: &[Analyze, Triage],
        sink: Sink::Xml,
        pasted: true,
        printer: &super::junit::Printer,
    },
    Format {
        name: "html",
        aliases: &[],
        help: Some(
            "One self-contained page (inline CSS and SVG, no script; secrets always redacted)",
        ),
        commands: &[Analyze, Triage, Diff, HistoryReport],
        sink: Sink::Xml,
        pasted: true,
        printer: &super::html::Printer,
    },
];

/// The formats `c` offers, in table order.
pub fn offered(c: Command) -> impl Iterator<Item = &'static Format> {
    FORMATS.iter().filter(move |f| f.offers(c))
}

/// The format `c` offers under `name` (or one of its aliases).
pub fn find(c: Command, name: &str) -> Option<&'static Format> {
    offered(c).find(|f| f.name == name || f.aliases.contains(&name))
}

/// `--format`'s parser for `c` (clap): the names and aliases of the formats `c` offers, with
/// their help, giving the format's row. Every command's `--format` is built here, so the
/// choices, the help and the printers cannot drift apart.
pub fn value_parser(c: Command) -> impl clap::builder::TypedValueParser<Value = &'static Format> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let values = offered(c).map(|f| {
        let v = PossibleValue::new(f.name).aliases(f.aliases.iter().copied());
        match f.help {
            Some(h) => v.help(h),
            None => v,
        }
    });
    PossibleValuesParser::new(values)
        .try_map(move |name| find(c, &name).ok_or_else(|| format!("no format {name:?}")))
}

impl Format {
    pub fn offers(&self, c: Command) -> bool {
        self.commands.contains(&c)
    }

    /// The view's text, ready for `emit` through [`Format::sink`]: printed, then (a text
    /// format, with a redactor) redacted whole, so no escaping a printer does can hide a secret
    /// from the redactor. `None` when this format does not print that view.
    pub fn render(
        &self,
        view: View<'_>,
        o: &Options<'_>,
        mut red: Option<&mut Redactor>,
    ) -> Option<String> {
        if !self.offers(view.command()) {
            return None;
        }
        let text = self.printer.print(view, o, red.as_deref_mut())?;
        Some(match red {
            Some(red) if self.sink != Sink::Json => red.text(&text),
            _ => text,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> Options<'static> {
        Options {
            term: terminal::Options {
                color: false,
                lang: crate::model::Lang::En,
                tables: super::super::table::Tables::Plain,
            },
            root: "",
            timeline: false,
        }
    }

    /// A row's `commands` are exactly the views its printer prints: no command offers a
    /// format that would print nothing, and no printer has a view no command can ask for.
    #[test]
    fn each_format_prints_exactly_the_views_of_the_commands_it_offers() {
        let report = Report::of_facts(Vec::new(), Vec::new());
        let triage = Triage::default();
        let diff = Diff::default();
        let seen = Seen::default();
        let fleet = FleetStats::default();
        let fleet_report = FleetReport::default();
        let views = [
            View::Run(&report),
            View::Facts {
                facts: &[],
                warnings: &[],
            },
            View::Triage(&triage),
            View::Diff(&diff),
            View::Seen(&seen),
            View::List(&[]),
            View::Fleet(&fleet),
            View::FleetReport(&fleet_report),
        ];
        for f in FORMATS {
            for v in views {
                let printed = f.printer.print(v, &options(), None).is_some();
                assert_eq!(
                    printed,
                    f.offers(v.command()),
                    "{} for {:?}",
                    f.name,
                    v.command()
                );
                assert_eq!(f.render(v, &options(), None).is_some(), printed);
            }
        }
    }

    #[test]
    fn names_and_aliases_are_unique() {
        let mut all: Vec<&str> = FORMATS
            .iter()
            .flat_map(|f| std::iter::once(f.name).chain(f.aliases.iter().copied()))
            .collect();
        let n = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), n, "{all:?}");
    }
}
