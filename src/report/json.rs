//! The JSON printer: every view as its data, serialised (`analyze`'s is the contract of
//! docs/json-schema.md). With a redactor, the value passes `Redactor::json` too, so a value
//! whose key names a secret is masked whole. Serialises only; it never chooses what a view holds.

use super::format::{Options, View};
use crate::redact::Redactor;
use serde::Serialize;

pub struct Printer;

/// `v` pretty, with a final newline, through the redactor's key rules when there is one.
fn redacted<T: Serialize>(v: &T, red: &mut Redactor) -> String {
    let mut v = serde_json::to_value(v).unwrap_or_default();
    red.json(&mut v);
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}

/// `v` pretty, with a final newline.
fn plain<T: Serialize>(v: &T) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default() + "\n"
}

impl super::format::Printer for Printer {
    fn print(&self, view: View<'_>, _: &Options<'_>, red: Option<&mut Redactor>) -> Option<String> {
        Some(match (view, red) {
            (View::Run(r), Some(red)) => redacted(r, red),
            (View::Run(r), None) => r.to_json() + "\n",
            (View::Facts { facts, warnings }, _) => super::facts::json(facts, warnings),
            // A triage is always printed through a `Value`, redacted or not (its key order).
            (View::Triage(t), Some(red)) => redacted(t, red),
            (View::Triage(t), None) => plain(&serde_json::to_value(t).unwrap_or_default()),
            (View::Diff(d), Some(red)) => redacted(d, red),
            (View::Diff(d), None) => super::diff::json(d),
            (View::Seen(s), _) => plain(s),
            (View::List(l), _) => plain(&l),
            (View::Fleet(f), _) => plain(f),
            (View::FleetReport(f), Some(red)) => redacted(f, red),
            (View::FleetReport(f), None) => plain(f),
        })
    }
}
