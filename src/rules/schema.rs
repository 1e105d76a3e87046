//! The raw shape of a rule file, exactly as written in TOML. Unknown keys are rejected
//! (`deny_unknown_fields`) so a typo is a load error, not a silently ignored setting.
//! Nothing here is validated beyond types: `compile` does that.

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleFile {
    #[serde(default)]
    pub rule: Vec<RawRule>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRule {
    /// Stable code, `TW` + 4 digits, never reused.
    pub code: String,
    /// Kebab-case name that says what is wrong.
    pub name: String,
    pub category: String,
    /// `root`, `symptom`, `confirmation` or `advice`.
    pub role: String,
    pub title: String,
    /// The title in Chinese (required of built-in rules by `rules test`; a user rule without
    /// it is shown in English).
    #[serde(default)]
    pub title_zh: Option<String>,
    /// `stable` (default), `preview`, or `retired` (kept so the code is never reused).
    #[serde(default)]
    pub status: Option<String>,
    /// For symptoms: the categories whose root finding this is usually a consequence of.
    /// Empty means any root cause.
    #[serde(default)]
    pub symptom_of: Vec<String>,
    /// The action class when the category's default is wrong for this rule (a missing
    /// interface named by NCCL_SOCKET_IFNAME is `fix-config`, not the category's
    /// `retry-elsewhere`).
    #[serde(default)]
    pub action: Option<String>,
    /// For a root or confirmation: categories whose finding, when found in the same run, is
    /// this one's cause (then this one is ranked as its symptom). A cause on its own otherwise.
    #[serde(default)]
    pub consequence_of: Vec<String>,
    #[serde(default)]
    pub signature: Vec<RawSignature>,
    #[serde(default)]
    pub condition: Vec<RawCondition>,
    #[serde(default)]
    pub fix: Vec<RawFix>,
    /// What to capture next time when the evidence is thin.
    #[serde(default)]
    pub next_time: Option<String>,
    /// `next_time` in Chinese.
    #[serde(default)]
    pub next_time_zh: Option<String>,
    /// Source kinds whose presence among the inputs means `next_time` was already followed
    /// (a Flight Recorder dump is there: do not advise turning it on).
    #[serde(default)]
    pub next_time_unless: Vec<String>,
    #[serde(default)]
    pub references: Vec<String>,
    /// Names of rules of other categories whose fire examples this rule also matches on
    /// purpose; any other cross-category overlap fails `rules test`.
    #[serde(default)]
    pub overlaps: Vec<String>,
    pub doc: RawDoc,
    #[serde(default)]
    pub examples: RawExamples,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSignature {
    pub regex: String,
    /// Limit to these source kinds (kebab-case names); empty = every scanned kind.
    #[serde(default)]
    pub kinds: Vec<String>,
    /// How strongly one hit of this signature supports the rule, in (0, 1].
    pub weight: f64,
    /// Only count a hit when a line matching this regex comes shortly before it in the same
    /// file (a traceback's frame line before its exception line).
    #[serde(default)]
    pub preceded_by: Option<String>,
    /// How many lines back `preceded_by` may be (default 3).
    #[serde(default)]
    pub within: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCondition {
    /// A fact name from the catalog; `*` stands for one segment (`rank.*.exit_signal`).
    pub fact: String,
    /// `<`, `<=`, `>`, `>=`, `==`, `!=`, `contains`, `exists`.
    pub op: String,
    #[serde(default)]
    pub value: Option<toml::Value>,
    /// Positive: supports the rule; negative: argues against it. In [-1, 1].
    pub weight: f64,
    /// When true, this condition alone (with no signature hit) raises the finding.
    #[serde(default)]
    pub trigger: bool,
    /// Why it matters, shown in the report; may use template variables.
    pub why: String,
    /// `why` in Chinese, with the same template variables.
    #[serde(default)]
    pub why_zh: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFix {
    /// Template variables that must all be known for this variant to be used.
    #[serde(default)]
    pub when: Vec<String>,
    /// Use this variant only when evidence argues against the finding (and the others only
    /// when nothing does): a contradicted hypothesis needs a different next step.
    #[serde(default)]
    pub contradicted: bool,
    pub text: String,
    /// `text` in Chinese, with the same template variables (so computed numbers appear in
    /// both).
    #[serde(default)]
    pub text_zh: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDoc {
    pub what: String,
    /// `what` in Chinese (`rules explain --lang zh`).
    #[serde(default)]
    pub what_zh: Option<String>,
    pub why: String,
    /// `why` in Chinese.
    #[serde(default)]
    pub why_zh: Option<String>,
    #[serde(default)]
    pub lookalikes: Option<String>,
    /// `lookalikes` in Chinese (the report's "what else fits" when evidence argues against).
    #[serde(default)]
    pub lookalikes_zh: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawExamples {
    /// Lines (or small multi-line excerpts) that must make at least one signature fire.
    #[serde(default)]
    pub fire: Vec<String>,
    /// Lines that must not make any signature of this rule fire.
    #[serde(default)]
    pub silent: Vec<String>,
    /// Whole scenarios: lines plus facts of the run, and what the finding must then say.
    #[serde(default)]
    pub case: Vec<RawCase>,
}

/// One scenario: `text` read as a log, with `facts` of the run; the rule's finding must exist
/// and, where given, have a confidence inside `confidence` and a fix containing `fix`. It
/// tests a fact condition or a fix template where it is written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCase {
    pub text: String,
    /// Fact name (from the catalog) → value, as in a condition (`"64MiB"` is a size).
    #[serde(default)]
    pub facts: toml::Table,
    /// `[low, high]`, inclusive, within [0, 1].
    #[serde(default)]
    pub confidence: Option<[f64; 2]>,
    /// Text the fix chosen for this case must contain.
    #[serde(default)]
    pub fix: Option<String>,
}
