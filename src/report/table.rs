//! How tables are laid out for the output they go to: boxed and fitted to the terminal's
//! width on a terminal, plain aligned rows without borders when piped, so `rules list | grep
//! nccl` gives one whole line per rule. The CLI decides which (it knows stdout); renderers
//! only build rows. A boxed table is wrapped here, never by comfy-table: a cell breaks only
//! at a space, after a `/` or beside a CJK character, so an identifier (`checkpoint_error`,
//! a fingerprint) keeps its whole width and never comes out cut in two; comfy-table only
//! draws the box around cells already wrapped. Paragraphs of prose (a fix) wrap to the same
//! width by the same rule, here too.

use comfy_table::{ContentArrangement, Table, presets};
use unicode_width::UnicodeWidthStr;

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

/// Narrower than this, a `COLUMNS` or a terminal size is not believed.
const NARROWEST: u16 = 20;

impl Tables {
    /// For stdout: boxed on a terminal (at `COLUMNS` when that is a width, else the
    /// terminal's), plain rows otherwise.
    pub fn for_output(is_terminal: bool, columns: Option<&str>) -> Tables {
        if !is_terminal {
            return Tables::Plain;
        }
        let width = columns
            .and_then(|c| c.trim().parse::<u16>().ok())
            .filter(|w| *w >= NARROWEST);
        Tables::Boxed { width }
    }

    /// [`Tables::for_output`] for this process's stdout and `COLUMNS`.
    pub fn stdout() -> Tables {
        use std::io::IsTerminal;
        Tables::for_output(
            std::io::stdout().is_terminal(),
            std::env::var("COLUMNS").ok().as_deref(),
        )
    }

    /// The width text must fit in: `None` when piped or when no width is known.
    pub fn width(self) -> Option<usize> {
        match self {
            Tables::Plain => None,
            Tables::Boxed { width: Some(w) } => Some(usize::from(w)),
            Tables::Boxed { width: None } => Table::new()
                .width()
                .filter(|w| *w >= NARROWEST)
                .map(usize::from),
        }
    }

    /// An empty table laid out for this output.
    pub fn table(self) -> Table {
        let mut t = Table::new();
        match self {
            Tables::Boxed { .. } => {
                t.load_style(presets::UTF8_BORDERS_ONLY);
                t.set_content_arrangement(ContentArrangement::Disabled);
            }
            Tables::Plain => {
                t.load_style(presets::NOTHING);
                t.set_content_arrangement(ContentArrangement::Disabled);
            }
        }
        t
    }

    /// The table as text. Plain rows keep each row on one line (a cell's own line breaks
    /// become spaces) and lose the padding comfy-table puts at their ends; boxed cells are
    /// wrapped to fit the width (see the module comment). A table whose unbreakable units
    /// alone are wider than the terminal is given as plain rows: the terminal folds a long
    /// row, but a box it folded would be unreadable, and cutting identifiers is worse.
    pub fn finish(self, t: Table) -> String {
        if let Tables::Boxed { .. } = self
            && let Some(boxed) = self.fitted(&t)
        {
            return boxed.to_string();
        }
        let mut plain = Tables::Plain.table();
        if let Some(h) = t.header() {
            plain.set_header(h.cell_iter().map(|c| c.content().replace('\n', " ")));
        }
        for r in t.row_iter() {
            plain.add_row(r.cell_iter().map(|c| c.content().replace('\n', " ")));
        }
        plain
            .lines()
            .map(|l| l.trim().to_string())
            .collect::<Vec<_>>()
            .join("\n")
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

    /// A copy of `t` with every cell wrapped to its column's width, or `None` when its
    /// unbreakable units do not fit the width.
    fn fitted(self, t: &Table) -> Option<Table> {
        let cells =
            |r: &comfy_table::Row| -> Vec<String> { r.cell_iter().map(|c| c.content()).collect() };
        let header = t.header().map(cells);
        let rows: Vec<Vec<String>> = t.row_iter().map(cells).collect();
        let n = header.iter().chain(&rows).map(Vec::len).max().unwrap_or(0);
        let mut natural = vec![0; n];
        let mut least = vec![0; n];
        for row in header.iter().chain(&rows) {
            for (i, c) in row.iter().enumerate() {
                for line in c.lines() {
                    natural[i] = natural[i].max(line.width());
                    for (_, unit) in units(line, true) {
                        least[i] = least[i].max(unit.width());
                    }
                }
            }
        }
        let widths = match self.width() {
            Some(w) => share(w.checked_sub(overhead(n))?, &least, &natural)?,
            None => natural,
        };
        let wrap_row = |row: &[String]| -> Vec<String> {
            row.iter()
                .enumerate()
                .map(|(i, c)| {
                    c.lines()
                        .flat_map(|l| wrap(l, widths[i], true))
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .collect()
        };
        let mut out = self.table();
        if let Some(h) = &header {
            out.set_header(wrap_row(h));
        }
        for r in &rows {
            out.add_row(wrap_row(r));
        }
        Some(out)
    }
}

/// What the box of `UTF8_BORDERS_ONLY` adds to `n` columns of content: a border on each side,
/// one space of padding each side of every cell, one space between columns.
fn overhead(n: usize) -> usize {
    3 * n + 1
}

/// Column widths within `room`: each at least its longest unbreakable unit, the rest shared
/// out evenly among the columns that want more, none beyond its natural width. `None` when
/// the units alone need more than `room` (an identifier is never cut).
fn share(room: usize, least: &[usize], natural: &[usize]) -> Option<Vec<usize>> {
    if natural.iter().sum::<usize>() <= room {
        return Some(natural.to_vec());
    }
    let mut w = least.to_vec();
    let mut spare = room.checked_sub(w.iter().sum())?;
    while spare > 0 {
        let growing: Vec<usize> = (0..w.len()).filter(|&i| w[i] < natural[i]).collect();
        if growing.is_empty() {
            break;
        }
        let each = (spare / growing.len()).max(1);
        for i in growing {
            let add = each.min(natural[i] - w[i]).min(spare);
            w[i] += add;
            spare -= add;
        }
    }
    Some(w)
}

/// A line cut where it may break: `(separator, unit)` pairs, the separator being what joins
/// the unit to the one before it on the same line (a space, dropped at a break, or nothing).
/// Breaks are at spaces and beside wide (CJK) characters, which Chinese text breaks between,
/// and, with `slash`, after a `/` (paths in cells); never inside a `code span`, a command
/// the user copies.
fn units(line: &str, slash: bool) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut space = false;
    let push = |out: &mut Vec<(&'static str, _)>, space: &mut bool, unit| {
        let sep = if *space && !out.is_empty() { " " } else { "" };
        out.push((sep, unit));
        *space = false;
    };
    let mut start = 0;
    let mut code = false;
    for (i, c) in line.char_indices() {
        let end = i + c.len_utf8();
        if c == '`' {
            code = !code;
            continue;
        }
        if code {
            continue;
        }
        if c == ' ' {
            if start < i {
                push(&mut out, &mut space, &line[start..i]);
            }
            space = true;
            start = end;
        } else if c == '/' && slash {
            push(&mut out, &mut space, &line[start..end]);
            start = end;
        } else if unicode_width::UnicodeWidthChar::width(c) == Some(2) {
            if start < i {
                push(&mut out, &mut space, &line[start..i]);
            }
            // Closing punctuation never starts a line: it stays with what it closes.
            match out.last_mut() {
                Some((_, last)) if !space && CLOSING.contains(c) => {
                    let from = last.as_ptr() as usize - line.as_ptr() as usize;
                    *last = &line[from..end];
                }
                _ => push(&mut out, &mut space, &line[i..end]),
            }
            start = end;
        }
    }
    if start < line.len() {
        push(&mut out, &mut space, &line[start..]);
    }
    out
}

/// Chinese punctuation a line may not start with.
const CLOSING: &str = "，。、；：！？）」』》】”’";

/// `line` in lines of at most `width` columns, broken only where [`units`] allows; a unit
/// wider than `width` stays whole on a line of its own.
fn wrap(line: &str, width: usize, slash: bool) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for (sep, unit) in units(line, slash) {
        if !cur.is_empty() && cur.width() + sep.len() + unit.width() > width {
            lines.push(std::mem::take(&mut cur));
        } else {
            cur.push_str(sep);
        }
        cur.push_str(unit);
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    lines
}

/// A paragraph of prose for the terminal, each line starting with `indent`: wrapped to
/// `width` columns (`None`: one line) at spaces and between Chinese characters, never inside
/// a word or a `code span`.
pub fn paragraph(text: &str, indent: &str, width: Option<usize>) -> String {
    let Some(w) = width else {
        return format!("{indent}{text}");
    };
    text.lines()
        .flat_map(|l| wrap(l, w.saturating_sub(indent.width()).max(1), false))
        .map(|l| format!("{indent}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
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

    #[test]
    fn cells_break_at_spaces_slashes_and_cjk_never_inside_a_word() {
        assert_eq!(wrap("checkpoint_error", 8, true), ["checkpoint_error"]);
        assert_eq!(
            wrap("a checkpoint file", 12, true),
            ["a checkpoint", "file"]
        );
        assert_eq!(wrap("runs/job-7/bad", 8, true), ["runs/", "job-7/", "bad"]);
        assert_eq!(wrap("runs/job-7/bad", 8, false), ["runs/job-7/bad"]);
        assert_eq!(
            wrap("文件被截断，已损坏", 10, true),
            ["文件被截", "断，已损坏"]
        );
        assert_eq!(
            wrap("use `docker run --shm-size=8g` now", 12, false),
            ["use", "`docker run --shm-size=8g`", "now"]
        );
        // A table that cannot fit its identifiers is plain rows, not a box that cuts them.
        let b = Tables::Boxed { width: Some(30) };
        let mut t = b.table();
        t.set_header(vec!["name", "category"]);
        b.row(
            &mut t,
            vec![
                "checkpoint-corrupt-or-truncated".into(),
                "checkpoint_error".into(),
            ],
        );
        let s = b.finish(t);
        assert!(
            s.contains("checkpoint-corrupt-or-truncated  checkpoint_error"),
            "{s}"
        );
        assert!(!s.contains('─'), "{s}");
    }
}
