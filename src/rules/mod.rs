//! The knowledge base: rule files (TOML, embedded and user-supplied) parsed raw, then
//! compiled into the rules that run and one scanner over all their signatures. A malformed
//! rule is a load error naming the file, the key and the fix. It never reads logs itself.

pub(crate) mod derive;
mod nfa_bound;
pub(crate) mod schema;
pub mod template;
pub mod xid;

use crate::facts;
use crate::model::{self, Action, Category, RuleStatus, Text, text};
use crate::sources::SourceKind;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;
use template::Template;

/// The rule files shipped in the binary, (file name, its TOML), sorted by name: every `*.toml`
/// in `rules/`, listed by `build.rs`, so a new built-in rule file is that file alone.
pub static BUILTIN: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/builtin_rules.rs"));

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// A cause: raises a finding of its own.
    Root,
    /// A consequence of another failure (timeouts, teardown): ranks below its root.
    Symptom,
    /// Evidence that confirms a cause of the same category (kernel OOM lines for a SIGKILL).
    Confirmation,
    /// Framework advice ("might be caused by", "set CUDA_LAUNCH_BLOCKING=1"): never evidence;
    /// any other hit on the same line is discarded.
    Advice,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    Contains,
    /// The fact's text matches a regex (`libnccl|libcuda`).
    Matches,
    Exists,
}

#[derive(Debug, Clone)]
pub struct Signature {
    pub regex: crate::scan::LazyRegex,
    pub source: String,
    pub kinds: Vec<SourceKind>,
    pub weight: f64,
    /// A line matching this must come at most `within` lines before the hit.
    pub preceded_by: Option<(crate::scan::LazyRegex, u32)>,
}

impl Signature {
    pub fn applies_to(&self, kind: SourceKind) -> bool {
        self.kinds.is_empty() || self.kinds.contains(&kind)
    }
}

/// A rule's scenario example (`[[rule.examples.case]]`).
#[derive(Debug, Clone)]
pub struct ExampleCase {
    pub text: String,
    pub facts: Vec<(String, model::FactValue)>,
    pub confidence: Option<[f64; 2]>,
    pub fix: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Condition {
    pub fact: String,
    pub op: Op,
    pub value: Option<model::FactValue>,
    /// Compiled `value` for `matches`.
    pub pattern: Option<regex::Regex>,
    pub weight: f64,
    pub trigger: bool,
    /// `why`, and `why_zh` where the rule file gives it (an empty template where not).
    pub why: Text<Template>,
}

#[derive(Debug, Clone)]
pub struct Fix {
    pub when: Vec<String>,
    pub contradicted: bool,
    /// `text`, and the same fix in Chinese (`text_zh`) where the rule file gives it (an empty
    /// template where not).
    pub text: Text<Template>,
}

#[derive(Debug, Clone)]
pub struct Rule {
    pub code: String,
    pub name: String,
    pub category: Category,
    pub role: Role,
    /// `title`, and `title_zh` where the rule file gives it.
    pub title: Text,
    pub status: RuleStatus,
    pub symptom_of: Vec<Category>,
    /// Categories whose finding in the same run is this one's cause (`consequence_of`).
    pub consequence_of: Vec<Category>,
    /// The rule's own action class, when the category's default is wrong for it.
    pub action: Option<Action>,
    pub signatures: Vec<Signature>,
    pub conditions: Vec<Condition>,
    pub fixes: Vec<Fix>,
    /// `next_time`, and `next_time_zh` where the rule file gives it.
    pub next_time: Option<Text>,
    /// The inputs already hold what `next_time` asks for when one is of these kinds.
    pub next_time_unless: Vec<SourceKind>,
    pub references: Vec<String>,
    /// What the rule detects (`doc.what`, `doc.what_zh`): `rules explain`.
    pub doc_what: Text,
    /// Why it happens (`doc.why`, `doc.why_zh`).
    pub doc_why: Text,
    /// What else fits (`doc.lookalikes`, `doc.lookalikes_zh`).
    pub doc_lookalikes: Option<Text>,
    pub examples_fire: Vec<String>,
    pub examples_silent: Vec<String>,
    /// Scenarios with facts and the confidence band and fix text they must give.
    pub examples_cases: Vec<ExampleCase>,
    /// Which file it came from (`builtin:shm_exhausted.toml` or a path).
    pub origin: String,
    /// Named capture groups across the rule's signatures.
    pub captures: BTreeSet<String>,
    /// Rules of other categories whose fire examples this rule may also match, on purpose
    /// (a generic rule and a specific one). The cross-rule check accepts these overlaps.
    pub overlaps: Vec<String>,
}

/// A load error: which file, which key, what is wrong, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    pub file: String,
    pub key: String,
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.file, self.key, self.message)
    }
}

/// All rules, and which rule each signature belongs to.
pub struct KnowledgeBase {
    pub rules: Vec<Rule>,
    /// Scanner pattern id → (rule index, signature index).
    pub sig_of: Vec<(usize, usize)>,
    /// What loading noticed without failing: an empty rule directory, rules in a
    /// subdirectory (not loaded). Printed by the CLI.
    pub warnings: Vec<Text>,
}

impl KnowledgeBase {
    /// The embedded rules plus every `*.toml` under each of `dirs`.
    pub fn load(dirs: &[&Path]) -> Result<KnowledgeBase, Vec<LoadError>> {
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        let mut warnings = Vec::new();
        load_builtin(&mut rules, &mut errors);
        let mut user_files = Vec::new();
        for dir in dirs {
            let mut files: Vec<_> = match std::fs::read_dir(dir) {
                Ok(rd) => rd.filter_map(|e| e.ok().map(|e| e.path())).collect(),
                Err(e) => {
                    errors.push(LoadError {
                        file: dir.display().to_string(),
                        key: "-".into(),
                        message: format!("cannot read rule directory: {e}"),
                    });
                    continue;
                }
            };
            files.sort();
            let tomls = files
                .iter()
                .filter(|p| p.extension().is_some_and(|e| e == "toml"))
                .count();
            for sub in files.iter().filter(|p| p.is_dir()) {
                let nested = std::fs::read_dir(sub).map_or(0, |rd| {
                    rd.filter_map(Result::ok)
                        .filter(|e| e.path().extension().is_some_and(|x| x == "toml"))
                        .count()
                });
                if nested > 0 {
                    warnings.push(text!(
                        "{}: {nested} rule file(s) in a subdirectory are not loaded (only *.toml directly in {} are): pass it with its own --rules",
                        "{}：子目录中的 {nested} 个规则文件未加载（只加载直接位于 {} 下的 *.toml）：请用单独的 --rules 传入该子目录",
                        sub.display(),
                        dir.display()
                    ));
                }
            }
            if tomls == 0 {
                warnings.push(text!(
                    "{}: rule directory holds no *.toml files; no rules loaded from it",
                    "{}：规则目录中没有 *.toml 文件；未从中加载任何规则",
                    dir.display()
                ));
            }
            user_files.extend(
                files
                    .into_iter()
                    .filter(|p| p.extension().is_some_and(|e| e == "toml")),
            );
        }
        load_user_files(&user_files, &mut rules, &mut errors);
        check_unique(&rules, &mut errors);
        check_overlap_names(&rules, &mut errors);
        if !errors.is_empty() {
            return Err(errors);
        }
        let mut kb = Self::from_rules(rules);
        kb.warnings = warnings;
        Ok(kb)
    }

    /// Index the signatures of compiled rules. Each signature was linted when its rule was
    /// compiled; the scanner over them is built by `analyze::Engine`, once.
    pub fn from_rules(rules: Vec<Rule>) -> KnowledgeBase {
        let mut sig_of = Vec::new();
        for (ri, r) in rules.iter().enumerate() {
            if r.status == RuleStatus::Retired {
                continue;
            }
            for si in 0..r.signatures.len() {
                sig_of.push((ri, si));
            }
        }
        KnowledgeBase {
            rules,
            sig_of,
            warnings: Vec::new(),
        }
    }

    pub fn find(&self, code_or_name: &str) -> Option<&Rule> {
        self.rules
            .iter()
            .find(|r| r.code.eq_ignore_ascii_case(code_or_name) || r.name == code_or_name)
    }
}

fn check_unique(rules: &[Rule], errors: &mut Vec<LoadError>) {
    let mut codes: BTreeMap<&str, &str> = BTreeMap::new();
    let mut names: BTreeMap<&str, &str> = BTreeMap::new();
    for r in rules {
        if let Some(prev) = codes.insert(&r.code, &r.origin) {
            errors.push(LoadError {
                file: r.origin.clone(),
                key: format!("rule {} code", r.name),
                message: format!(
                    "code {} is already used in {prev}: codes are never reused, pick a new one",
                    r.code
                ),
            });
        }
        if let Some(prev) = names.insert(&r.name, &r.origin) {
            errors.push(LoadError {
                file: r.origin.clone(),
                key: format!("rule {} name", r.name),
                message: format!("name already used in {prev}: rule names must be unique"),
            });
        }
    }
}

fn check_overlap_names(rules: &[Rule], errors: &mut Vec<LoadError>) {
    for r in rules {
        for o in &r.overlaps {
            if !rules.iter().any(|x| &x.name == o) {
                errors.push(LoadError {
                    file: r.origin.clone(),
                    key: format!("rule {} overlaps", r.name),
                    message: format!("{o:?} is not the name of a loaded rule"),
                });
            }
        }
    }
}

/// `work(i)` for every `i` in `0..n` on up to four threads, each taking the next `i` not yet
/// taken (so one large rule file does not hold up a fixed share), results in `i`'s order
/// whatever the thread count. Start-up: parsing every signature's regex for its literals is
/// most of a small input's time.
fn in_parallel<T: Send>(n: usize, work: impl Fn(usize) -> T + Sync) -> Vec<T> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4)
        .min(n.max(1));
    let next = AtomicUsize::new(0);
    let take = || {
        let mut out = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                return out;
            }
            out.push((i, work(i)));
        }
    };
    let mut parts = std::thread::scope(|s| {
        let others: Vec<_> = (1..threads).map(|_| s.spawn(take)).collect();
        let mut parts = take();
        for h in others {
            // A panic in a loader is a bug; resurface it on this thread.
            parts.extend(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        parts
    });
    parts.sort_by_key(|p| p.0);
    parts.into_iter().map(|(_, t)| t).collect()
}

/// The embedded rule files, in `BUILTIN`'s order: each as the build read it (`prepared`: its
/// TOML as JSON, its regexes linted) when it could, else from its TOML, as a user's file is.
fn load_builtin(rules: &mut Vec<Rule>, errors: &mut Vec<LoadError>) {
    let parts = in_parallel(BUILTIN.len(), |i| {
        let (name, text) = BUILTIN[i];
        let (mut r, mut e) = (Vec::new(), Vec::new());
        let origin = format!("builtin:{name}");
        match crate::prepared::rule_file(name).and_then(|j| serde_json::from_str(j).ok()) {
            // Built-in regexes are not charged to the user rules' budget.
            Some(file) => compile_file(&origin, file, &mut r, &mut e, &mut Budget::Free),
            None => load_text(&origin, text, &mut r, &mut e),
        }
        (r, e)
    });
    for (mut r, mut e) in parts {
        rules.append(&mut r);
        errors.append(&mut e);
    }
}

/// The `--rules` files, in the order given: each read and parsed on its own thread, then their
/// rules compiled in parallel rule by rule (a thousand signatures in two files would otherwise
/// compile on two threads), all drawing on the one total (`Budget::Shared`); rules and errors
/// come out in file and rule order whatever the threads did. When a regex finds the total
/// short (the load is then sure to fail), the files are loaded again one after another with
/// exact sizes, so the errors are those of a load in order, the same whichever rule got there
/// first. The parallel pass compiles at most the total and one regex a thread past it, the redo
/// at most the total.
fn load_user_files(
    files: &[std::path::PathBuf],
    rules: &mut Vec<Rule>,
    errors: &mut Vec<LoadError>,
) {
    let mut read = in_parallel(files.len(), |i| {
        let f = &files[i];
        let text = std::fs::read_to_string(f).map_err(|err| LoadError {
            file: f.display().to_string(),
            key: "-".into(),
            message: format!("cannot read: {err}"),
        })?;
        let parsed = parse_text(&f.display().to_string(), &text);
        Ok((text, parsed))
    });
    // Every parsed rule with its file, each taken by the thread that compiles it.
    let (mut owner, mut slots) = (Vec::new(), Vec::new());
    for (fi, r) in read.iter_mut().enumerate() {
        if let Ok((_, Ok(file))) = r {
            for raw in std::mem::take(&mut file.rule) {
                owner.push(fi);
                slots.push(std::sync::Mutex::new(Some(raw)));
            }
        }
    }
    let shared = SharedTotal::default();
    let origins: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let compiled = in_parallel(slots.len(), |k| {
        let raw_rule = slots[k]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .expect("each rule is compiled once");
        compile(&origins[owner[k]], raw_rule, &mut Budget::Shared(&shared))
    });
    if !shared.short.load(std::sync::atomic::Ordering::Relaxed) {
        let mut compiled = owner.iter().zip(compiled).peekable();
        for (fi, r) in read.into_iter().enumerate() {
            match r {
                Err(e) | Ok((_, Err(e))) => errors.push(e),
                Ok(_) => {
                    while let Some((_, c)) = compiled.next_if(|(f, _)| **f == fi) {
                        match c {
                            Ok(rule) => rules.push(rule),
                            Err(mut e) => errors.append(&mut e),
                        }
                    }
                }
            }
        }
        return;
    }
    let mut left = crate::limits::RULE_REGEX_TOTAL_BYTES;
    for (origin, r) in origins.iter().zip(read) {
        match r {
            Ok((text, _)) => {
                load_text_within(origin, &text, rules, errors, &mut Budget::Left(&mut left))
            }
            Err(read) => errors.push(read),
        }
    }
}

/// Parse one file's text and compile its rules, collecting every error.
pub fn load_text(origin: &str, text: &str, rules: &mut Vec<Rule>, errors: &mut Vec<LoadError>) {
    load_text_within(
        origin,
        text,
        rules,
        errors,
        &mut Budget::Left(&mut crate::limits::RULE_REGEX_TOTAL_BYTES.clone()),
    );
}

/// What user rules' regexes may still cost of the rule set's total
/// (`limits::RULE_REGEX_TOTAL_BYTES`).
enum Budget<'a> {
    /// One file after another: each regex measured exactly (compiled) and charged.
    Left(&'a mut usize),
    /// Files compiling at once, drawing on one total: a regex is charged an upper bound of its
    /// size where the bound fits what is left (`nfa_bound`), and compiled to measure only
    /// where it does not. A regex that finds too little left marks the total short, and the
    /// caller loads again one file after another (`load_user_files`): no load error about the
    /// total made here is kept.
    Shared(&'a SharedTotal),
    /// Not charged (the built-in rules).
    Free,
}

/// The total as files compiling at once draw on it.
#[derive(Default)]
struct SharedTotal {
    /// Charged so far, all files together (never more than the total).
    taken: std::sync::atomic::AtomicUsize,
    /// A regex found too little left: the load is sure to fail, and nothing more is compiled.
    short: std::sync::atomic::AtomicBool,
}

impl Budget<'_> {
    /// What the next regex may cost at most.
    fn left(&self) -> usize {
        use std::sync::atomic::Ordering::Relaxed;
        match self {
            Budget::Left(left) => **left,
            Budget::Shared(s) if s.short.load(Relaxed) => 0,
            Budget::Shared(s) => {
                crate::limits::RULE_REGEX_TOTAL_BYTES.saturating_sub(s.taken.load(Relaxed))
            }
            Budget::Free => usize::MAX,
        }
    }

    /// Take `used` bytes; the load error's message when the total is passed.
    fn charge(&mut self, used: usize) -> Result<(), String> {
        use std::sync::atomic::Ordering::Relaxed;
        match self {
            Budget::Left(left) if used > **left => Err(over_total(&format!("this one is {used}"))),
            Budget::Left(left) => {
                **left -= used;
                Ok(())
            }
            Budget::Shared(s) => {
                let total = crate::limits::RULE_REGEX_TOTAL_BYTES;
                let took = s.taken.fetch_update(Relaxed, Relaxed, |t| {
                    (t.saturating_add(used) <= total).then(|| t + used)
                });
                took.map(|_| ()).map_err(|_| {
                    s.short.store(true, Relaxed);
                    over_total(&format!("this one is {used}"))
                })
            }
            Budget::Free => Ok(()),
        }
    }

    /// A regex was refused for want of what is left: nothing more is compiled.
    fn run_out(&mut self) {
        match self {
            Budget::Left(left) => **left = 0,
            Budget::Shared(s) => s.short.store(true, std::sync::atomic::Ordering::Relaxed),
            Budget::Free => {}
        }
    }
}

/// The load error of a regex past the rule set's total, `detail` saying by how much.
fn over_total(detail: &str) -> String {
    let total = crate::limits::RULE_REGEX_TOTAL_BYTES;
    format!(
        "the --rules regexes loaded up to here compile to more than {total} bytes in all (limits::RULE_REGEX_TOTAL_BYTES; {detail}): load fewer rules or make their regexes smaller"
    )
}

/// As `load_text`, the compiled size of its user regexes charged to `budget`.
fn load_text_within(
    origin: &str,
    text: &str,
    rules: &mut Vec<Rule>,
    errors: &mut Vec<LoadError>,
    budget: &mut Budget,
) {
    match parse_text(origin, text) {
        Ok(file) => compile_file(origin, file, rules, errors, budget),
        Err(e) => errors.push(e),
    }
}

/// A rule file's TOML, or the load error saying where (file, line, column) and at which key.
fn parse_text(origin: &str, text: &str) -> Result<schema::RuleFile, LoadError> {
    toml::from_str(text).map_err(|e| {
        let (file, key) = match e.span() {
            Some(span) => {
                let before = &text[..span.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                let at = text.get(span.clone()).unwrap_or("").trim();
                let key = if !at.is_empty()
                    && at.len() <= 64
                    && at
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
                {
                    at.to_string()
                } else {
                    "-".to_string()
                };
                (format!("{origin}:{line}:{col}"), key)
            }
            None => (origin.to_string(), "-".to_string()),
        };
        LoadError {
            file,
            key,
            message: format!(
                "{}; see README.md \"Writing a rule\" for the keys a rule may have",
                e.message()
            ),
        }
    })
}

/// Compile a parsed file's rules, collecting every error.
fn compile_file(
    origin: &str,
    file: schema::RuleFile,
    rules: &mut Vec<Rule>,
    errors: &mut Vec<LoadError>,
    budget: &mut Budget,
) {
    for raw in file.rule {
        match compile(origin, raw, budget) {
            Ok(r) => rules.push(r),
            Err(mut e) => errors.append(&mut e),
        }
    }
}

/// A user regex compiled once at load to its Thompson NFA, under the scanner's size limit (what
/// the regex crate's `size_limit` bounds), bytes and Unicode classes as the scanner compiles it
/// (from the parse the lint made, `scan::literals::parse`); its size is charged to `budget`
/// (with files compiling at once, an upper bound of it where that fits: `Budget::Shared`). One
/// too large, alone or with those
/// loaded before it, is a load error rather than a signature that silently never matches. The
/// compiler's limit is what the budget has left, so a regex past the total stops compiling as
/// soon as it passes it, and none is compiled once nothing is left: a file of many large
/// regexes costs the total's worth of compiling, not each regex's. Only the NFA is built: the
/// full regex waits for its first candidate line, so start-up does not pay for signatures a
/// run never meets.
fn charge_user_regex(hir: &regex_syntax::hir::Hir, budget: &mut Budget) -> Result<(), String> {
    use regex_automata::nfa::thompson;
    thread_local! {
        // One compiler for every rule: its UTF-8 state cache is large to set up and to drop,
        // and a new one per regex cost more than the compiling itself.
        static NFA: std::cell::RefCell<thompson::Compiler> = {
            let mut c = thompson::Compiler::new();
            c.configure(thompson::Config::new().utf8(false));
            std::cell::RefCell::new(c)
        };
    }
    let left = budget.left();
    if left == 0 {
        budget.run_out();
        return Err(over_total("nothing was left for this one"));
    }
    let mut limit = crate::limits::RULE_REGEX_BYTES.min(left);
    if let Budget::Shared(_) = budget {
        // Where an upper bound of its size fits, the regex is charged that and not compiled.
        let bound = usize::try_from(nfa_bound::nfa_bytes_bound(hir)).unwrap_or(usize::MAX);
        if bound <= limit {
            return budget.charge(bound);
        }
        // Else it compiles up to the per-regex cap whatever the other files have taken, so
        // its own error never depends on how far they got: what is left decides at the charge.
        limit = crate::limits::RULE_REGEX_BYTES;
    }
    let built = NFA.with(|c| {
        let mut c = c.borrow_mut();
        c.configure(thompson::Config::new().nfa_size_limit(Some(limit)));
        c.build_from_hir(hir)
            .map(|nfa| nfa.memory_usage())
            .map_err(|e| match e.size_limit() {
                Some(_) if limit < crate::limits::RULE_REGEX_BYTES => {
                    over_total(&format!("this one passes the {limit} bytes left"))
                }
                Some(n) => format!(
                    "regex compiles to more than {n} bytes (limits::RULE_REGEX_BYTES): split it into several signatures or make it more specific"
                ),
                None => e.to_string(),
            })
    });
    // Once the total is passed the load fails: the regexes after this one are not compiled.
    let used = built.inspect_err(|_| {
        if limit < crate::limits::RULE_REGEX_BYTES {
            budget.run_out();
        }
    })?;
    budget.charge(used)
}

/// Built-in rules have `TW` + 4 digits; a local rule has a namespace of its own: 2–8 capital
/// letters then 3–5 digits (`ACME042`), never `TW`, so it can never take a built-in's code.
fn check_code(builtin: bool, code: &str) -> Result<(), String> {
    let letters = code.chars().take_while(|c| c.is_ascii_uppercase()).count();
    let digits = code[letters..]
        .chars()
        .filter(|c| c.is_ascii_digit())
        .count();
    let shape =
        (2..=8).contains(&letters) && (3..=5).contains(&digits) && letters + digits == code.len();
    if builtin {
        return if code.len() == 6 && code.starts_with("TW") && shape {
            Ok(())
        } else {
            Err(format!(
                "{code:?} is not of the form TW + 4 digits (e.g. TW0101)"
            ))
        };
    }
    if !shape {
        return Err(format!(
            "{code:?} is not a local rule code: 2 to 8 capital letters then 3 to 5 digits (e.g. ACME042)"
        ));
    }
    if code.starts_with("TW") {
        return Err(format!(
            "{code:?}: codes starting with TW are reserved for built-in rules; use your own prefix (e.g. ACME042)"
        ));
    }
    Ok(())
}

/// The load errors of one rule, each keyed `rule NAME KEY` in the file it came from, in the
/// order the phases of [`compile`] find them.
struct RuleErrors<'a> {
    origin: &'a str,
    who: String,
    list: Vec<LoadError>,
}

impl RuleErrors<'_> {
    fn push(&mut self, key: &str, message: String) {
        self.list.push(LoadError {
            file: self.origin.to_string(),
            key: format!("rule {} {key}", self.who),
            message,
        })
    }
}

/// What a rule says about itself before any of its texts: category, role, status, the
/// categories it follows from and its action class.
struct Header {
    category: Option<Category>,
    role: Option<Role>,
    status: RuleStatus,
    symptom_of: Vec<Category>,
    consequence_of: Vec<Category>,
    action: Option<Action>,
}

/// Check and compile one parsed rule: its header, signatures, conditions, fixes, the keys a
/// rule of its role must have, and its worked examples. Every error is collected, none stops
/// the others (a signature that did not compile drops the template errors it would cause).
fn compile(
    origin: &str,
    raw: schema::RawRule,
    budget: &mut Budget,
) -> Result<Rule, Vec<LoadError>> {
    let builtin = origin.starts_with("builtin:");
    let mut errs = RuleErrors {
        origin,
        who: raw.name.clone(),
        list: Vec::new(),
    };
    let head = compile_header(builtin, &raw, &mut errs);
    let (signatures, captures, sig_failed) =
        compile_signatures(builtin, &raw.signature, budget, &mut errs);
    let conditions = compile_conditions(&raw.condition, &captures, &mut errs);
    let fixes = compile_fixes(&raw.fix, &captures, &mut errs);
    check_required_keys(&raw, head.role.is_some(), &mut errs);
    let next_time_unless = source_kinds(&raw.next_time_unless, "next_time_unless", &mut errs);
    let cases = compile_cases(&raw.examples.case, &mut errs);
    let mut errs = errs.list;
    if sig_failed {
        // A signature that did not compile has no named captures to offer: the templates
        // using them are not a second problem.
        errs.retain(|e| !e.message.starts_with("template variable"));
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    Ok(Rule {
        code: raw.code,
        name: raw.name,
        category: head.category.expect("checked"),
        role: head.role.expect("checked"),
        title: Text::given(raw.title, raw.title_zh),
        status: head.status,
        symptom_of: head.symptom_of,
        consequence_of: head.consequence_of,
        action: head.action,
        signatures,
        conditions,
        fixes,
        next_time: raw.next_time.map(|n| Text::given(n, raw.next_time_zh)),
        next_time_unless,
        references: raw.references,
        doc_what: Text::given(raw.doc.what, raw.doc.what_zh),
        doc_why: Text::given(raw.doc.why, raw.doc.why_zh),
        doc_lookalikes: raw
            .doc
            .lookalikes
            .map(|l| Text::given(l, raw.doc.lookalikes_zh)),
        examples_fire: raw.examples.fire,
        examples_silent: raw.examples.silent,
        examples_cases: cases,
        origin: origin.to_string(),
        captures,
        overlaps: raw.overlaps,
    })
}

/// Code, name, category, role, status, `symptom_of`/`consequence_of` and action, checked in
/// that order.
fn compile_header(builtin: bool, raw: &schema::RawRule, errs: &mut RuleErrors) -> Header {
    if let Err(m) = check_code(builtin, &raw.code) {
        errs.push("code", m);
    }
    let kebab = !raw.name.is_empty()
        && raw
            .name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !kebab {
        errs.push(
            "name",
            "must be kebab-case (lower-case letters, digits, '-')".into(),
        );
    }
    let category = Category::parse(&raw.category);
    if category.is_none() {
        errs.push(
            "category",
            format!(
                "{:?} is not a category (docs/categories.md); use one of: {}",
                raw.category,
                Category::valid_values()
            ),
        );
    }
    let role = match raw.role.as_str() {
        "root" => Some(Role::Root),
        "symptom" => Some(Role::Symptom),
        "confirmation" => Some(Role::Confirmation),
        "advice" => Some(Role::Advice),
        other => {
            errs.push(
                "role",
                format!("{other:?}: use root, symptom, confirmation or advice"),
            );
            None
        }
    };
    let status = match raw.status.as_deref() {
        None => RuleStatus::Stable,
        Some(s) => RuleStatus::parse(s).unwrap_or_else(|| {
            errs.push(
                "status",
                format!("{s:?}: use one of: {}", RuleStatus::valid_values()),
            );
            RuleStatus::Stable
        }),
    };
    let symptom_of = categories(&raw.symptom_of, "symptom_of", errs);
    let consequence_of = categories(&raw.consequence_of, "consequence_of", errs);
    let action = raw.action.as_deref().and_then(|a| match Action::parse(a) {
        Some(a) => Some(a),
        None => {
            errs.push(
                "action",
                format!(
                    "{a:?} is not an action class; use one of: {}",
                    Action::valid_values()
                ),
            );
            None
        }
    });
    Header {
        category,
        role,
        status,
        symptom_of,
        consequence_of,
        action,
    }
}

/// The categories a list names, each unknown name an error under `key`.
fn categories(names: &[String], key: &str, errs: &mut RuleErrors) -> Vec<Category> {
    let mut out = Vec::new();
    for c in names {
        match Category::parse(c) {
            Some(c) => out.push(c),
            None => errs.push(
                key,
                format!(
                    "{c:?} is not a category; use one of: {}",
                    Category::valid_values()
                ),
            ),
        }
    }
    out
}

/// The source kinds a list names, each unknown name an error under `key`.
fn source_kinds(names: &[String], key: &str, errs: &mut RuleErrors) -> Vec<SourceKind> {
    let mut out = Vec::new();
    for k in names {
        match source_kind(k) {
            Ok(k) => out.push(k),
            Err(m) => errs.push(key, m),
        }
    }
    out
}

/// The rule's signatures, the named captures they offer its templates, and whether any regex
/// failed to compile. A built-in regex was linted by the build; a user's is parsed once here,
/// for the lint and for its compiled size (charged to `budget`). Each compiles on first use.
fn compile_signatures(
    builtin: bool,
    raw: &[schema::RawSignature],
    budget: &mut Budget,
    errs: &mut RuleErrors,
) -> (Vec<Signature>, BTreeSet<String>, bool) {
    let mut signatures = Vec::new();
    let mut captures = BTreeSet::new();
    let mut sig_failed = false;
    for (i, s) in raw.iter().enumerate() {
        let key = format!("signature[{i}]");
        let lazy = if builtin {
            crate::scan::LazyRegex::new(&s.regex).map_err(|e| e.to_string())
        } else {
            crate::scan::literals::parse(&s.regex)
                .and_then(|hir| crate::scan::LazyRegex::from_hir(&s.regex, &hir).map(|r| (r, hir)))
                .map_err(|e| e.to_string())
                .and_then(|(ok, hir)| {
                    charge_user_regex(&hir, budget)?;
                    Ok(ok)
                })
        };
        match lazy {
            Ok((re, names)) => {
                captures.extend(names);
                let kinds = source_kinds(&s.kinds, &format!("{key}.kinds"), errs);
                if !(s.weight > 0.0 && s.weight <= 1.0) {
                    errs.push(&format!("{key}.weight"), "must be in (0, 1]".into());
                }
                let preceded_by = s
                    .preceded_by
                    .as_deref()
                    .and_then(|p| match compile_preceded_by(builtin, p, budget) {
                        Ok(r) => Some((r, s.within.unwrap_or(3).clamp(1, 50))),
                        Err(e) => {
                            errs.push(&format!("{key}.preceded_by"), e);
                            None
                        }
                    });
                signatures.push(Signature {
                    regex: re,
                    source: s.regex.clone(),
                    kinds,
                    weight: s.weight,
                    preceded_by,
                });
            }
            Err(e) => {
                sig_failed = true;
                errs.push(&format!("{key}.regex"), e.to_string());
            }
        }
    }
    (signatures, captures, sig_failed)
}

/// A signature's `preceded_by` context regex: a built-in one as the build linted it, a user's
/// parsed and charged to `budget` as its signature is.
fn compile_preceded_by(
    builtin: bool,
    p: &str,
    budget: &mut Budget,
) -> Result<crate::scan::LazyRegex, String> {
    if builtin {
        crate::scan::LazyRegex::context(p).map_err(|e| e.to_string())
    } else {
        crate::scan::literals::parse(p)
            .map_err(|e| e.to_string())
            .and_then(|hir| {
                charge_user_regex(&hir, budget)?;
                Ok(crate::scan::LazyRegex::context_parsed(p))
            })
    }
}

/// An operator as a rule file spells it, or `None` for one it does not know.
fn condition_op(op: &str) -> Option<Op> {
    Some(match op {
        "<" => Op::Lt,
        "<=" => Op::Le,
        ">" => Op::Gt,
        ">=" => Op::Ge,
        "==" => Op::Eq,
        "!=" => Op::Ne,
        "contains" => Op::Contains,
        "matches" => Op::Matches,
        "exists" => Op::Exists,
        _ => return None,
    })
}

/// The rule's conditions on facts: each fact known, its operator and value well-formed, its
/// weight in range, its reasons' templates using only variables the rule can fill.
fn compile_conditions(
    raw: &[schema::RawCondition],
    captures: &BTreeSet<String>,
    errs: &mut RuleErrors,
) -> Vec<Condition> {
    let mut conditions = Vec::new();
    for (i, c) in raw.iter().enumerate() {
        let key = format!("condition[{i}]");
        if facts::spec_for(&c.fact).is_none() {
            errs.push(
                &format!("{key}.fact"),
                format!(
                    "unknown fact {:?}; `trainwreck facts --catalog` lists the known names",
                    c.fact
                ),
            );
        }
        let op = condition_op(&c.op).unwrap_or_else(|| {
            errs.push(
                &format!("{key}.op"),
                format!(
                    "{:?}: use <, <=, >, >=, ==, !=, contains, matches or exists",
                    c.op
                ),
            );
            Op::Exists
        });
        let value = match (&c.value, op) {
            (None, Op::Exists) => None,
            (None, _) => {
                errs.push(&format!("{key}.value"), "required for this op".into());
                None
            }
            (Some(v), _) => match toml_to_fact(v) {
                Ok(v) => Some(v),
                Err(m) => {
                    errs.push(&format!("{key}.value"), m);
                    None
                }
            },
        };
        if !(-1.0..=1.0).contains(&c.weight) || c.weight == 0.0 {
            errs.push(
                &format!("{key}.weight"),
                "must be in [-1, 1] and not 0".into(),
            );
        }
        if c.trigger && c.weight <= 0.0 {
            errs.push(
                &format!("{key}.trigger"),
                "only a supporting condition (weight > 0) can trigger".into(),
            );
        }
        let pattern = match (op, &c.value) {
            (Op::Matches, Some(toml::Value::String(p))) => match regex::Regex::new(p) {
                Ok(r) => Some(r),
                Err(e) => {
                    errs.push(&format!("{key}.value"), format!("invalid regex: {e}"));
                    None
                }
            },
            (Op::Matches, _) => {
                errs.push(
                    &format!("{key}.value"),
                    "`matches` needs a regex string".into(),
                );
                None
            }
            _ => None,
        };
        let value = if op == Op::Matches {
            c.value
                .as_ref()
                .and_then(|v| v.as_str())
                .map(|s| model::FactValue::Text(s.into()))
        } else {
            value
        };
        let why_zh = zh_template(c.why_zh.as_deref(), captures, &mut |m| {
            errs.push(&format!("{key}.why_zh"), m)
        });
        match Template::parse(&c.why) {
            Ok(t) => {
                check_vars(&t, captures, &mut |m| errs.push(&format!("{key}.why"), m));
                conditions.push(Condition {
                    why: Text {
                        en: t,
                        zh: why_zh.unwrap_or_default(),
                    },
                    fact: c.fact.clone(),
                    op,
                    value,
                    pattern,
                    weight: c.weight,
                    trigger: c.trigger,
                });
            }
            Err(m) => errs.push(&format!("{key}.why"), m),
        }
    }
    conditions
}

/// The rule's fixes: each text a template using only variables the rule can fill, each `when`
/// a known variable.
fn compile_fixes(
    raw: &[schema::RawFix],
    captures: &BTreeSet<String>,
    errs: &mut RuleErrors,
) -> Vec<Fix> {
    let mut fixes = Vec::new();
    for (i, f) in raw.iter().enumerate() {
        let key = format!("fix[{i}]");
        let text_zh = zh_template(f.text_zh.as_deref(), captures, &mut |m| {
            errs.push(&format!("{key}.text_zh"), m)
        });
        match Template::parse(&f.text) {
            Ok(t) => {
                check_vars(&t, captures, &mut |m| errs.push(&format!("{key}.text"), m));
                for w in &f.when {
                    if !t.vars().any(|v| v == w) && !is_known_var(w, captures) {
                        errs.push(
                            &format!("{key}.when"),
                            format!("{w:?} is not a known variable"),
                        );
                    }
                }
                fixes.push(Fix {
                    when: f.when.clone(),
                    contradicted: f.contradicted,
                    text: Text {
                        en: t,
                        zh: text_zh.unwrap_or_default(),
                    },
                });
            }
            Err(m) => errs.push(&format!("{key}.text"), m),
        }
    }
    fixes
}

/// The keys a rule of its role must have: something that triggers it, a fix, and examples that
/// fire and stay silent. `role_ok`: the role was understood (an unknown one is its own error).
fn check_required_keys(raw: &schema::RawRule, role_ok: bool, errs: &mut RuleErrors) {
    if role_ok
        && raw.role != "advice"
        && raw.signature.is_empty()
        && !raw.condition.iter().any(|c| c.trigger)
    {
        errs.push(
            "signature",
            "a rule needs at least one signature or one trigger condition".into(),
        );
    }
    if raw.role != "advice" && raw.fix.is_empty() {
        errs.push(
            "fix",
            "a root cause, symptom or confirmation needs at least one [[rule.fix]]".into(),
        );
    }
    if raw.examples.fire.is_empty() && !raw.signature.is_empty() {
        errs.push(
            "examples.fire",
            "give at least one real line that must fire".into(),
        );
    }
    if raw.examples.silent.is_empty() && !raw.signature.is_empty() {
        errs.push(
            "examples.silent",
            "give at least one look-alike line that must stay silent".into(),
        );
    }
}

/// The rule's worked cases: facts named in the catalog with well-formed values, confidence
/// bands within [0, 1].
fn compile_cases(raw: &[schema::RawCase], errs: &mut RuleErrors) -> Vec<ExampleCase> {
    let mut cases = Vec::new();
    for (i, c) in raw.iter().enumerate() {
        let key = format!("examples.case[{i}]");
        let mut facts = Vec::new();
        for (name, v) in &c.facts {
            if facts::spec_for(name).is_none() || name.contains('*') {
                errs.push(
                    &format!("{key}.facts"),
                    format!(
                        "{name:?} is not a fact name in the catalog (`trainwreck facts --catalog`)"
                    ),
                );
                continue;
            }
            match toml_to_fact(v) {
                Ok(v) => facts.push((name.clone(), v)),
                Err(m) => errs.push(&format!("{key}.facts.{name}"), m),
            }
        }
        if let Some([lo, hi]) = c.confidence
            && !(0.0 <= lo && lo <= hi && hi <= 1.0)
        {
            errs.push(
                &format!("{key}.confidence"),
                format!("[{lo}, {hi}] is not a band [low, high] with 0 <= low <= high <= 1"),
            );
        }
        cases.push(ExampleCase {
            text: c.text.clone(),
            facts,
            confidence: c.confidence,
            fix: c.fix.clone(),
        });
    }
    cases
}

/// A Chinese text's template, checked as its English twin is (whether the two use the same
/// variables is `rules test`'s check, `kbtest`).
fn zh_template(
    text: Option<&str>,
    captures: &BTreeSet<String>,
    err: &mut dyn FnMut(String),
) -> Option<Template> {
    match Template::parse(text?) {
        Ok(t) => {
            check_vars(&t, captures, &mut *err);
            Some(t)
        }
        Err(m) => {
            err(m);
            None
        }
    }
}

/// A source kind as a rule file spells it, or the error naming every known spelling.
fn source_kind(k: &str) -> Result<SourceKind, String> {
    SourceKind::parse(k).ok_or_else(|| {
        format!(
            "unknown source kind {k:?}; known: {}",
            SourceKind::ALL
                .iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

fn is_known_var(v: &str, captures: &BTreeSet<String>) -> bool {
    captures.contains(v)
        || crate::rules::derive::is_derived(v)
        || (facts::spec_for(v).is_some() && !v.contains('*'))
}

fn check_vars(t: &Template, captures: &BTreeSet<String>, err: &mut dyn FnMut(String)) {
    for v in t.vars() {
        if !is_known_var(v, captures) {
            err(format!(
                "template variable {{{v}}} is not a fact in the catalog, a derive.* value or a \
                 named capture of this rule's signatures"
            ));
        }
    }
}

fn toml_to_fact(v: &toml::Value) -> Result<model::FactValue, String> {
    Ok(match v {
        toml::Value::Integer(i) => model::FactValue::Int(*i),
        toml::Value::Float(f) => model::FactValue::Float(*f),
        toml::Value::Boolean(b) => model::FactValue::Bool(*b),
        toml::Value::String(s) => match crate::sources::units::size_1024(s, 1) {
            // Sizes may be written for people: "256MiB".
            Some(n)
                if s.chars().any(|c| c.is_ascii_alphabetic())
                    && s.chars().next().is_some_and(|c| c.is_ascii_digit()) =>
            {
                model::FactValue::Float(n as f64)
            }
            _ => model::FactValue::Text(s.clone()),
        },
        other => return Err(format!("{other} is not a number, boolean or string")),
    })
}

#[cfg(test)]
mod loader_tests {
    use super::*;

    /// A minimal local rule with `code` and `regex`, its fix using the capture `what`.
    fn rule(code: &str, regex: &str) -> String {
        format!(
            "[[rule]]\ncode = \"{code}\"\nname = \"local-thing\"\ncategory = \"other\"\nrole = \"root\"\ntitle = \"t\"\n\
             [rule.doc]\nwhat = \"w\"\nwhy = \"y\"\n[[rule.signature]]\nregex = '{regex}'\nweight = 0.5\n\
             [[rule.fix]]\ntext = \"saw {{what}}\"\n[rule.examples]\nfire = [\"boom x\"]\nsilent = [\"calm\"]\n"
        )
    }

    fn load_one(text: &str) -> Vec<LoadError> {
        let (mut rules, mut errors) = (Vec::new(), Vec::new());
        load_text("local.toml", text, &mut rules, &mut errors);
        errors
    }

    /// Start-up reads each built-in file as the build read it (JSON, regexes linted at build
    /// time): that must give exactly the rules its TOML gives, read and linted at run time.
    #[test]
    fn built_in_files_as_the_build_read_them_give_the_rules_their_toml_gives() {
        for (name, text) in BUILTIN {
            let origin = format!("builtin:{name}");
            let json = crate::prepared::rule_file(name)
                .unwrap_or_else(|| panic!("the build did not read rules/{name}"));
            let file: schema::RuleFile = serde_json::from_str(json).unwrap();
            let (mut fast, mut fast_errors) = (Vec::new(), Vec::new());
            compile_file(
                &origin,
                file,
                &mut fast,
                &mut fast_errors,
                &mut Budget::Free,
            );
            let (mut slow, mut slow_errors) = (Vec::new(), Vec::new());
            load_text(&origin, text, &mut slow, &mut slow_errors);
            assert_eq!(fast_errors, slow_errors, "{name}");
            assert_eq!(format!("{fast:?}"), format!("{slow:?}"), "{name}");
            for (f, s) in fast.iter().zip(&slow) {
                for (a, b) in f.signatures.iter().zip(&s.signatures) {
                    assert_eq!(
                        a.regex.literals(),
                        b.regex.literals(),
                        "{name}: {}",
                        a.source
                    );
                }
            }
        }
    }

    /// Every built-in regex was linted by the build (start-up parses none), and the build's
    /// answer is what the run-time lint says.
    #[test]
    fn every_built_in_regex_is_prepared_as_the_run_time_lint_would() {
        for (src, lits, names) in crate::prepared::regexes() {
            let hir = crate::scan::literals::parse(src).unwrap();
            match crate::scan::literals::prepare(&hir) {
                Ok((l, n)) => assert_eq!((Some(l), n), (lits, names), "{src}"),
                Err(_) => assert_eq!(lits, None, "{src}"),
            }
        }
        let kb = KnowledgeBase::load(&[]).unwrap();
        for r in &kb.rules {
            for s in &r.signatures {
                let row = crate::prepared::regex(&s.source);
                assert!(
                    matches!(row, Some((Some(_), _))),
                    "{}: {}",
                    r.name,
                    s.source
                );
                if let Some((p, _)) = &s.preceded_by {
                    assert!(crate::prepared::regex(p.as_str()).is_some(), "{}", r.name);
                }
            }
        }
        for t in &crate::tokens::table().tokens {
            let row = crate::prepared::regex(t.regex.as_str());
            assert!(matches!(row, Some((Some(_), _))), "token {}", t.id);
        }
        let mut n = 0;
        for (lit, window) in crate::prepared::windows() {
            assert_eq!(window, crate::scan::literals::rare_window(lit));
            n += 1;
        }
        assert!(n > 300, "{n} windows");
    }

    #[test]
    fn local_rules_have_codes_of_their_own_and_tw_is_reserved() {
        assert!(load_one(&rule("ACME042", r"boom (?P<what>\w+)")).is_empty());
        assert!(load_one(&rule("ZZ12345", r"boom (?P<what>\w+)")).is_empty());
        for bad in [
            "TW0101",
            "TW12345",
            "A123",
            "ACME12",
            "acme042",
            "ABCDEFGHI123",
        ] {
            let e = load_one(&rule(bad, r"boom (?P<what>\w+)"));
            assert_eq!(e.len(), 1, "{bad}: {e:?}");
            assert!(e[0].key.ends_with("code"), "{e:?}");
        }
        assert!(check_code(true, "TW0101").is_ok());
        assert!(check_code(true, "ACME042").is_err());
    }

    #[test]
    fn a_bad_regex_is_one_error_not_also_a_template_error() {
        let e = load_one(&rule("ACME042", r"boom (?P<what>\w+"));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].key.ends_with("signature[0].regex"), "{e:?}");
    }

    /// Many regexes each under the per-regex cap but together over the rule set's total: the
    /// load fails with an error naming the file where the total was passed in load order
    /// (the files compile in parallel on one shared total, then again in order once it is short).
    #[test]
    fn rule_regexes_over_the_total_budget_are_a_load_error_naming_the_file() {
        let re = r"boom (?P<what>\w+) \w{60}";
        let mut left = usize::MAX;
        let hir = crate::scan::literals::parse(re).unwrap();
        charge_user_regex(&hir, &mut Budget::Left(&mut left)).unwrap();
        let each = usize::MAX - left;
        assert!(each < crate::limits::RULE_REGEX_BYTES && each > 0, "{each}");
        let n = crate::limits::RULE_REGEX_TOTAL_BYTES / each + 2;
        let dir = tempfile::tempdir().unwrap();
        let (first, second) = (n / 2, n - n / 2);
        for (file, from, count) in [("a.toml", 0, first), ("b.toml", first, second)] {
            let text: String = (from..from + count)
                .map(|i| {
                    rule(&format!("ACME{i:04}"), re).replace("local-thing", &format!("thing-{i}"))
                })
                .collect();
            std::fs::write(dir.path().join(file), text).unwrap();
        }
        let e = match KnowledgeBase::load(&[dir.path()]) {
            Ok(_) => panic!("{n} regexes of {each} bytes loaded"),
            Err(e) => e,
        };
        let over: Vec<_> = e
            .iter()
            .filter(|e| e.message.contains("RULE_REGEX_TOTAL_BYTES"))
            .collect();
        assert!(!over.is_empty(), "{e:?}");
        assert!(over[0].file.ends_with("b.toml"), "{over:?}");
    }

    /// A file of many large regexes (audit round 3, F-17: 200 of 2.6 MB each took seconds and
    /// gigabytes): once the total is passed nothing more is compiled, so the file costs the
    /// total's worth of compiling. Each regex past it is a load error naming the file, the
    /// rule and the key, and saying the fix.
    #[test]
    fn regexes_past_the_total_are_refused_without_being_compiled() {
        let re = r"boom (?P<what>\w+) \w{60}";
        let mut left = usize::MAX;
        let hir = crate::scan::literals::parse(re).unwrap();
        charge_user_regex(&hir, &mut Budget::Left(&mut left)).unwrap();
        let each = usize::MAX - left;
        let fit = crate::limits::RULE_REGEX_TOTAL_BYTES / each;
        let n = fit + 100;
        let text: String = (0..n)
            .map(|i| rule(&format!("ACME{i:04}"), re).replace("local-thing", &format!("thing-{i}")))
            .collect();
        let (mut rules, mut errors) = (Vec::new(), Vec::new());
        let mut left = crate::limits::RULE_REGEX_TOTAL_BYTES;
        load_text_within(
            "many.toml",
            &text,
            &mut rules,
            &mut errors,
            &mut Budget::Left(&mut left),
        );
        // Loaded: those that fit, not one more; nothing is left after them.
        assert_eq!(rules.len(), fit, "{n} regexes of {each} bytes");
        assert_eq!(left, 0);
        assert_eq!(errors.len(), n - fit, "{:?}", errors.first());
        let first = &errors[0];
        assert_eq!(first.file, "many.toml");
        assert_eq!(first.key, format!("rule thing-{fit} signature[0].regex"));
        assert!(
            first.message.contains("limits::RULE_REGEX_TOTAL_BYTES")
                && first
                    .message
                    .contains("load fewer rules or make their regexes smaller"),
            "{first:?}"
        );
    }

    #[test]
    fn an_over_size_regex_is_a_load_error_naming_file_and_key() {
        let e = load_one(&rule(
            "ACME042",
            r"boom (?P<what>\w+) \w{1000}\w{1000}\w{1000}",
        ));
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0].file, "local.toml");
        assert!(e[0].key.ends_with("signature[0].regex"), "{e:?}");
        assert!(e[0].message.contains("RULE_REGEX_BYTES"), "{e:?}");
    }

    #[test]
    fn toml_errors_say_file_line_column_and_key() {
        let text = rule("ACME042", r"boom (?P<what>\w+)")
            .replace("title = \"t\"", "title = \"t\"\ntitel = \"x\"");
        let e = load_one(&text);
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0].file, "local.toml:7:1", "{e:?}");
        assert_eq!(e[0].key, "titel", "{e:?}");
    }

    #[test]
    fn empty_and_nested_rule_directories_are_warned_about() {
        let d = tempfile::tempdir().unwrap();
        let empty = d.path().join("empty");
        let nested = d.path().join("nested");
        std::fs::create_dir_all(&empty).unwrap();
        std::fs::create_dir_all(nested.join("team")).unwrap();
        std::fs::write(
            nested.join("team/x.toml"),
            rule("ACME042", r"boom (?P<what>\w+)"),
        )
        .unwrap();
        let kb = KnowledgeBase::load(&[&empty, &nested]).unwrap();
        assert_eq!(kb.warnings.len(), 3, "{:?}", kb.warnings);
        assert!(
            kb.warnings[0].en.contains("holds no *.toml"),
            "{:?}",
            kb.warnings
        );
        assert!(
            kb.warnings[1]
                .en
                .contains("1 rule file(s) in a subdirectory"),
            "{:?}",
            kb.warnings
        );
    }
}
