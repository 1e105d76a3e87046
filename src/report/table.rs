//! How tables are laid out for the output they go to: boxed and fitted to the terminal's
//! width on a terminal, plain aligned rows without borders when piped, so `rules list | grep
//! nccl` gives one whole line per rule. The CLI decides which (it knows stdout); renderers
//! only build rows.

use comfy_table::{ContentArrangement, Table, presets};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tables {
    /// Borders, cells wrapped to fit `width` columns (`None`: the terminal's own width when
    /// stdout is one, else unbounded).
    Boxed { width: Option<u16> },
    /// One line per row, columns aligned by spaces, nothing wrapped or drawn.
    Plain,
}

impl Default for Tables {
    fn default() -> Self {
        Tables::Boxed { width: None }
    }
}

impl Tables {
    /// For stdout: boxed on a terminal (at `COLUMNS` when that is a width, else the
    /// terminal's), plain rows otherwise.
    pub fn for_output(is_terminal: bool, columns: Option<&str>) -> Tables {
        if !is_terminal {
            return Tables::Plain;
        }
        let width = columns
            .and_then(|c| c.trim().parse::<u16>().ok())
            .filter(|w| *w >= 20);
        Tables::Boxed { width }
    }

    /// An empty table laid out for this output.
    pub fn table(self) -> Table {
        let mut t = Table::new();
        match self {
            Tables::Boxed { width } => {
                t.load_style(presets::UTF8_BORDERS_ONLY);
                t.set_content_arrangement(ContentArrangement::Dynamic);
                if let Some(w) = width {
                    t.set_width(w);
                }
            }
            Tables::Plain => {
                t.load_style(presets::NOTHING);
                t.set_content_arrangement(ContentArrangement::Disabled);
            }
        }
        t
    }

    /// The table as text. Plain rows keep each row on one line (a cell's own line breaks
    /// become spaces) and lose the padding comfy-table puts at their ends.
    pub fn finish(self, t: Table) -> String {
        match self {
            Tables::Boxed { .. } => t.to_string(),
            Tables::Plain => t
                .lines()
                .map(|l| l.trim().to_string())
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    /// Add a row; plain rows get their cells' line breaks as spaces.
    pub fn row(self, t: &mut Table, cells: Vec<String>) {
        match self {
            Tables::Plain => {
                t.add_row(cells.into_iter().map(|c| c.replace('\n', " ")));
            }
            Tables::Boxed { .. } => {
                t.add_row(cells);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_rows_are_one_line_each_without_box_drawing() {
        let p = Tables::Plain;
        let mut t = p.table();
        t.set_header(vec!["code", "title"]);
        p.row(&mut t, vec!["TW0101".into(), "a\nlong title".into()]);
        let s = p.finish(t);
        assert_eq!(s.lines().count(), 2, "{s}");
        assert!(s.lines().nth(1).unwrap().starts_with("TW0101"), "{s}");
        assert!(!s.contains('│') && !s.contains('─'), "{s}");
    }

    #[test]
    fn boxed_tables_fit_the_width_given() {
        let b = Tables::for_output(true, Some("40"));
        assert_eq!(b, Tables::Boxed { width: Some(40) });
        let mut t = b.table();
        t.set_header(vec!["code", "title"]);
        b.row(&mut t, vec!["TW0101".into(), "word ".repeat(30)]);
        let s = b.finish(t);
        assert!(s.lines().all(|l| l.chars().count() <= 40), "{s}");
        assert!(s.contains('─'), "{s}");
        assert_eq!(Tables::for_output(false, Some("40")), Tables::Plain);
    }
}
