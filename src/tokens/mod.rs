//! The second tier's token table (`data/tokens.toml`): invariant words — exception class
//! names, errno names and texts, NCCL result codes, InfiniBand completion statuses, CUDA error
//! enums, signal names, Kubernetes/Slurm/Ray reasons — each with the categories it points at
//! and how strongly. Loaded and validated once, like the rules: every regex linted for a
//! literal the scanner can prefilter on, every weight and category checked, every token with
//! an upstream reference and fire/silent examples. The analysis registers the tokens with its
//! one scanner so lines holding them join the error tail in the same pass; the verdict asks
//! whether a line holds a fatal token; `correlate::second_tier` scores categories from them.
//! Data and matching only: it never reads files, builds findings or formats output.

use crate::model::{Category, Text};
use crate::scan::LazyRegex;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

mod finder;

/// The table as shipped.
static TOKENS_TOML: &str = include_str!("../../data/tokens.toml");

/// No category the second tier names has more evidence strength than this: a token says what
/// kind of failure a line is about, never which failure it was (that takes a rule that knows
/// it). The confidence shown is calibrated from the strength (`correlate::calibrate`).
pub const MAX_CONFIDENCE: f64 = 0.5;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    token: Vec<TokenFile>,
    advice: Vec<AdviceFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenFile {
    id: String,
    regex: String,
    weights: BTreeMap<String, f64>,
    fatal: bool,
    references: Vec<String>,
    fire: Vec<String>,
    silent: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AdviceFile {
    category: Category,
    fix: String,
    fix_zh: String,
    collect: String,
    collect_zh: String,
}

/// One token: a regex for an invariant word and the categories it points at.
#[derive(Debug)]
pub struct Token {
    pub id: String,
    pub regex: LazyRegex,
    /// (category, weight in (0, 1)), strongest first.
    pub weights: Vec<(Category, f64)>,
    /// A line holding it, not logged at warning level, says the run died.
    pub fatal: bool,
    pub references: Vec<String>,
    pub fire: Vec<String>,
    pub silent: Vec<String>,
}

/// What to do about a category, and what to collect next time (`{line}`: the line, quoted).
#[derive(Debug, Clone)]
pub struct Advice {
    /// `fix` and `fix_zh` of the table.
    pub fix: Text,
    /// `collect` and `collect_zh` of the table.
    pub collect: Text,
}

/// The whole table.
#[derive(Debug)]
pub struct Table {
    pub tokens: Vec<Token>,
    advice: BTreeMap<Category, Advice>,
    /// All tokens' literals as one automaton (`finder`), built on first use.
    finder: Lazy,
}

/// The table's finder, built on first use; not part of what the table is (`Debug` skips it).
#[derive(Default)]
struct Lazy(OnceLock<finder::Finder>);

impl std::fmt::Debug for Lazy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("_")
    }
}

impl Table {
    /// Parse and validate a table; every fault is named (token id and what is wrong).
    pub fn parse(text: &str) -> Result<Table, Vec<String>> {
        let file: TableFile = toml::from_str(text).map_err(|e| vec![e.to_string()])?;
        Self::validate(file)
    }

    /// Validate a table read from its TOML or, for the built-in one, from the JSON the build
    /// made of it (`prepared::tokens`).
    fn validate(file: TableFile) -> Result<Table, Vec<String>> {
        let mut errors = Vec::new();
        let mut advice = BTreeMap::new();
        for a in file.advice {
            if !a.fix.contains("{line}") || !a.fix_zh.contains("{line}") {
                errors.push(format!(
                    "advice {}: the fix must quote the line (`{{line}}`) in both languages",
                    a.category
                ));
            }
            if advice.contains_key(&a.category) {
                errors.push(format!("advice {}: given twice", a.category));
            }
            advice.insert(
                a.category,
                Advice {
                    fix: Text::new(a.fix, a.fix_zh),
                    collect: Text::new(a.collect, a.collect_zh),
                },
            );
        }
        let mut tokens: Vec<Token> = Vec::new();
        for t in file.token {
            let id = t.id.clone();
            if tokens.iter().any(|x| x.id == id) {
                errors.push(format!("token {id}: id used twice"));
            }
            // Word boundaries are ASCII ones: a token glued to Chinese prose (`内存不足MemoryError`)
            // still starts at a boundary, as an English reader sees it.
            let src = t.regex.replace(r"\b", r"(?-u:\b)");
            let regex = match LazyRegex::new(&src) {
                Ok((r, _)) => Some(r),
                Err(e) => {
                    errors.push(format!("token {id}: {e}"));
                    None
                }
            };
            let mut weights = Vec::new();
            for (c, w) in &t.weights {
                match Category::parse(c) {
                    None => errors.push(format!(
                        "token {id}: {c:?} is not one of: {}",
                        Category::valid_values()
                    )),
                    Some(cat) => {
                        if !(*w > 0.0 && *w < 1.0) {
                            errors.push(format!("token {id}: weight {w} for {c} is not in (0, 1)"));
                        }
                        if !advice.contains_key(&cat) {
                            errors.push(format!("token {id}: no [[advice]] for {c}"));
                        }
                        weights.push((cat, *w));
                    }
                }
            }
            if weights.is_empty() {
                errors.push(format!("token {id}: no weights"));
            }
            weights.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            if t.references.is_empty()
                || t.references
                    .iter()
                    .any(|r| !r.starts_with("https://github.com/"))
            {
                errors.push(format!(
                    "token {id}: needs references to the upstream source files that print it"
                ));
            }
            if t.fire.is_empty() || t.silent.is_empty() {
                errors.push(format!("token {id}: needs fire and silent examples"));
            }
            if let Some(regex) = regex {
                tokens.push(Token {
                    id,
                    regex,
                    weights,
                    fatal: t.fatal,
                    references: t.references,
                    fire: t.fire,
                    silent: t.silent,
                });
            }
        }
        if errors.is_empty() {
            Ok(Table {
                tokens,
                advice,
                finder: Lazy::default(),
            })
        } else {
            Err(errors)
        }
    }

    /// The tokens `text` holds, in any of its [`pieces`], in table order: every token's
    /// literals found in one pass per piece (`finder`), a regex run only for a token the
    /// literals cannot decide alone and only where one of them occurs.
    pub fn hits<'t>(&'t self, text: &'t str) -> impl Iterator<Item = &'t Token> + 't {
        let finder = self.finder();
        let mut found: Vec<usize> = Vec::new();
        for p in pieces(text) {
            finder.find(
                p,
                |k| self.tokens[k].regex.is_match(p.as_bytes()),
                &mut found,
            );
        }
        found.sort_unstable();
        found.dedup();
        found.into_iter().map(move |k| &self.tokens[k])
    }

    fn finder(&self) -> &finder::Finder {
        self.finder
            .0
            .get_or_init(|| finder::Finder::new(&self.tokens))
    }

    /// Does `text` hold a token that says the run died?
    pub fn fatal(&self, text: &str) -> bool {
        self.hits(text).any(|t| t.fatal)
    }

    /// The advice for a category (every category a token names has one: checked at load).
    pub fn advice(&self, c: Category) -> Option<&Advice> {
        self.advice.get(&c)
    }
}

/// A line and, when a platform flattened a multi-line message into it with literal `\n`
/// (a JSON log record, a Python repr, a Kubernetes event), each line of that message, with
/// the quotes and spaces around it trimmed: what a reader sees once it is unfolded.
pub fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let flattened = text.contains("\\n");
    std::iter::once(text).chain(
        text.split("\\n")
            .filter(move |_| flattened)
            .map(|p| {
                p.trim_matches(|c: char| {
                    c.is_whitespace() || matches!(c, '"' | '\'' | '{' | '}' | '(' | ')' | ',')
                })
            })
            .filter(|p| !p.is_empty()),
    )
}

/// Build the built-in table and its finder now (a start-up's spare thread does, while the
/// rules load), so the first line that says a run died does not wait for them.
pub fn warm_up() {
    table().finder();
}

/// The built-in table (validated by this module's tests; a fault is a build defect), as the
/// build read it when it could (`prepared::tokens`), else from its TOML.
pub fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| {
        let prepared = crate::prepared::tokens().and_then(|j| serde_json::from_str(j).ok());
        match prepared {
            Some(file) => Table::validate(file),
            None => Table::parse(TOKENS_TOML),
        }
        .unwrap_or_else(|e| panic!("data/tokens.toml: {}", e.join("; ")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::Engine;
    use crate::rules::KnowledgeBase;

    /// Start-up reads the table as the build read it (JSON): the same table as its TOML.
    #[test]
    fn the_table_as_the_build_read_it_is_the_table_its_toml_gives() {
        let json = crate::prepared::tokens().expect("the build read data/tokens.toml");
        let fast = Table::validate(serde_json::from_str(json).unwrap()).unwrap();
        let slow = Table::parse(TOKENS_TOML).unwrap();
        assert_eq!(format!("{fast:?}"), format!("{slow:?}"));
        for (a, b) in fast.tokens.iter().zip(&slow.tokens) {
            assert_eq!(a.regex.literals(), b.regex.literals(), "{}", a.id);
        }
    }

    #[test]
    fn the_built_in_table_is_valid() {
        if let Err(e) = Table::parse(TOKENS_TOML) {
            panic!("{}", e.join("\n"));
        }
        assert!(table().tokens.len() >= 40);
    }

    /// Every fire example, given as a one-line paste to the production scanner, lands in the
    /// error tail and holds its token; every silent example does not hold it.
    #[test]
    fn fire_and_silent_examples_through_the_production_scanner() {
        let kb = KnowledgeBase::load(&[]).expect("built-in rules load");
        let engine = Engine::new(&kb);
        let mut faults = Vec::new();
        for t in &table().tokens {
            for line in &t.fire {
                let a = engine.analyze_text("paste.txt", &format!("{line}\n"));
                let kept = a.error_tail.iter().find(|l| l.line == 1);
                match kept {
                    None => faults.push(format!("{}: {line:?} is not kept by the scan", t.id)),
                    Some(l) if !table().hits(&l.text).any(|h| h.id == t.id) => {
                        faults.push(format!("{}: {line:?} does not hold the token", t.id))
                    }
                    Some(_) => {}
                }
            }
            for line in &t.silent {
                if t.regex.is_match(line.as_bytes()) {
                    faults.push(format!("{}: silent example {line:?} holds it", t.id));
                }
            }
        }
        assert!(faults.is_empty(), "{}", faults.join("\n"));
    }

    /// The one-pass finder answers as every token's regex does, on every example line of the
    /// table and on the same lines glued to word bytes, flattened inside a JSON message, and
    /// in other case.
    #[test]
    fn the_finder_answers_as_the_regexes_do() {
        let t = table();
        let by_regex = |text: &str| -> Vec<&str> {
            t.tokens
                .iter()
                .filter(|k| pieces(text).any(|p| k.regex.is_match(p.as_bytes())))
                .map(|k| k.id.as_str())
                .collect()
        };
        let mut lines: Vec<String> = Vec::new();
        for k in &t.tokens {
            for l in k.fire.iter().chain(&k.silent) {
                lines.push(l.clone());
                lines.push(format!("x{l}_"));
                lines.push(format!("{{\"msg\": \"step 3\\n{l}\\nexit\"}}"));
                lines.push(l.to_lowercase());
                lines.push(l.to_uppercase());
                lines.push(format!("内存不足{l}。"));
            }
        }
        let mut held = 0;
        for l in &lines {
            let fast: Vec<&str> = t.hits(l).map(|k| k.id.as_str()).collect();
            assert_eq!(fast, by_regex(l), "{l:?}");
            held += usize::from(!fast.is_empty());
        }
        assert!(held > lines.len() / 3, "the lines hold tokens: {held}");
    }

    #[test]
    fn faults_in_a_table_are_named() {
        let bad = r#"
[[token]]
id = "x"
regex = 'error'
weights = { nope = 0.5, host_oom = 1.5 }
fatal = true
references = ["somewhere"]
fire = []
silent = []

[[advice]]
category = "host_oom"
fix = "no quote"
fix_zh = "没有"
collect = "c"
collect_zh = "c"
"#;
        let e = Table::parse(bad).unwrap_err().join("\n");
        for want in [
            "the fix must quote the line",
            "frequent",
            "\"nope\" is not one of",
            "not in (0, 1)",
            "needs references",
            "needs fire and silent",
        ] {
            assert!(e.contains(want), "{want:?} in {e}");
        }
    }
}
