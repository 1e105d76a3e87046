//! Renderings of facts: the catalog (`facts --catalog`) and the facts one analysis read, with
//! where each was read (`facts PATH`, as a table or JSON). Formats only.

use crate::facts::FactSpec;
use crate::model::{Fact, Warning};

/// One line per catalog entry: name, unit, meaning (in `tr`'s language).
pub fn catalog(specs: &[FactSpec], tr: super::i18n::Tr) -> String {
    let mut s = String::new();
    for spec in specs {
        s.push_str(&format!(
            "{:40} {:?}  {}\n",
            spec.name,
            spec.unit,
            spec.doc.get(tr.0)
        ));
    }
    s
}

/// The facts as a table (fact, value, `path:line`), then the warnings in `tr`'s language.
pub fn table(
    facts: &[Fact],
    warnings: &[Warning],
    tables: super::table::Tables,
    tr: super::i18n::Tr,
) -> String {
    let mut t = tables.table();
    t.set_header(tr.facts_header().to_vec());
    for f in facts {
        let loc = match f.line {
            Some(l) => format!("{}:{l}", f.path),
            None => f.path.clone(),
        };
        tables.row(&mut t, vec![f.name.clone(), f.value.to_string(), loc]);
    }
    let mut s = format!("{}\n", tables.finish(t));
    for w in warnings {
        s.push_str(&format!(
            "{}{}{}\n",
            tr.warning(),
            tr.after_label(),
            tr.warning_line(w)
        ));
    }
    s
}

/// `{"facts": […], "warnings": […]}`, pretty, with a final newline.
pub fn json(facts: &[Fact], warnings: &[Warning]) -> String {
    let v = serde_json::json!({ "facts": facts, "warnings": warnings });
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}
