//! The interface strings of the reports for people (terminal, Markdown, GitHub) in each
//! [`Lang`], and the choice of a finding's text in the report's language. A typed catalog:
//! one method per message, each a `match` on the language, so a message cannot lack a
//! language (the compiler says so) and its arguments are checked like any call. Texts from
//! the inputs (evidence lines, commands, paths, numbers) are never translated; what analysis
//! wrote in both languages (a finding's `Text`s: title, fix, …) is picked here with
//! `Text::get`, English when a user rule gives no Chinese.
//!
//! Why not Fluent: two languages, no plural forms in Chinese and English plurals already
//! computed, and every message built from typed values; a runtime bundle would turn a
//! missing or misspelt key into a fallback at run time instead of a compile error, and add
//! four crates to the build for it.

use crate::correlate::{Against, Evidence, Finding};
use crate::diff::{Diff, Difference, Side};
pub use crate::model::Lang;
use crate::model::{Text, Warning};

/// The report language the environment asks for, POSIX/gettext order: `LANGUAGE` (its first
/// entry), then `LC_ALL`, `LC_MESSAGES`, `LANG`; the first set and non-empty decides. As in
/// gettext, `LANGUAGE` is ignored when the locale itself is `C`/`POSIX`. Chinese when that
/// value starts with `zh`, else English.
pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Lang {
    let set = |k: &str| get(k).filter(|v| !v.is_empty());
    let locale = ["LC_ALL", "LC_MESSAGES", "LANG"].into_iter().find_map(set);
    let c_locale = locale
        .as_deref()
        .is_some_and(|l| l == "C" || l == "POSIX" || l.starts_with("C."));
    let language = set("LANGUAGE")
        .filter(|_| !c_locale)
        .and_then(|l| l.split(':').find(|x| !x.is_empty()).map(str::to_string));
    match language.or(locale) {
        Some(v) if v.starts_with("zh") => Lang::Zh,
        _ => Lang::En,
    }
}

/// The catalog for one language.
#[derive(Debug, Clone, Copy)]
pub struct Tr(pub Lang);

fn s(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

impl Tr {
    fn zh(self) -> bool {
        self.0 == Lang::Zh
    }

    // ----- a finding's own texts, in the report's language where analysis gave it -----

    pub fn title(self, f: &Finding) -> &str {
        f.title.get(self.0)
    }
    pub fn fix(self, f: &Finding) -> &str {
        f.fix.get(self.0)
    }
    pub fn next_time(self, f: &Finding) -> Option<&str> {
        f.next_time.as_ref().map(|n| n.get(self.0))
    }
    /// A triage group's title (its lead run's), in the report's language where the rule gave it.
    pub fn group_title(self, g: &crate::report::triage::Group) -> Option<&str> {
        g.title.as_ref().map(|t| t.get(self.0))
    }
    pub fn why(self, e: &Evidence) -> Option<&str> {
        e.why.as_ref().map(|w| w.get(self.0))
    }
    pub fn against_why(self, a: &Against) -> &str {
        a.why.get(self.0)
    }
    pub fn alternatives(self, f: &Finding) -> Option<&str> {
        f.alternatives.as_ref().map(|a| a.get(self.0))
    }

    // ----- headings -----

    pub fn cause(self) -> &'static str {
        match self.0 {
            Lang::En => "Cause:",
            Lang::Zh => "原因：",
        }
    }
    /// What follows a label: a space after an ASCII colon, nothing after a full-width one.
    pub fn after_label(self) -> &'static str {
        match self.0 {
            Lang::En => " ",
            Lang::Zh => "",
        }
    }
    pub fn evidence(self) -> &'static str {
        match self.0 {
            Lang::En => "Evidence",
            Lang::Zh => "证据",
        }
    }
    pub fn against(self) -> &'static str {
        match self.0 {
            Lang::En => "Against",
            Lang::Zh => "反面证据",
        }
    }
    pub fn what_else_fits(self) -> &'static str {
        match self.0 {
            Lang::En => "What else fits:",
            Lang::Zh => "其他可能：",
        }
    }
    /// Between a computed value's name and what it is, under a rule's fix in `rules explain`.
    pub fn computed_colon(self) -> &'static str {
        match self.0 {
            Lang::En => ": ",
            Lang::Zh => "：",
        }
    }
    pub fn fix_heading(self) -> &'static str {
        match self.0 {
            Lang::En => "Fix",
            Lang::Zh => "修复建议",
        }
    }
    pub fn next_time_heading(self) -> &'static str {
        match self.0 {
            Lang::En => "To be sure next time",
            Lang::Zh => "下次如何确认",
        }
    }
    pub fn symptoms_heading(self) -> &'static str {
        match self.0 {
            Lang::En => "Symptoms of this cause",
            Lang::Zh => "由此引发的连带症状",
        }
    }
    pub fn also_considered(self) -> &'static str {
        match self.0 {
            Lang::En => "Also considered",
            Lang::Zh => "其他候选原因",
        }
    }
    pub fn last_error_lines(self) -> &'static str {
        match self.0 {
            Lang::En => "Last error lines",
            Lang::Zh => "最后的报错行",
        }
    }
    pub fn warning(self) -> &'static str {
        match self.0 {
            Lang::En => "warning:",
            Lang::Zh => "警告：",
        }
    }
    pub fn warnings(self) -> &'static str {
        match self.0 {
            Lang::En => "Warnings",
            Lang::Zh => "警告",
        }
    }
    pub fn core_dump(self) -> &'static str {
        match self.0 {
            Lang::En => "Core dump",
            Lang::Zh => "Core dump",
        }
    }
    pub fn history(self) -> &'static str {
        match self.0 {
            Lang::En => "History:",
            Lang::Zh => "历史记录：",
        }
    }

    /// The "also considered" table's header.
    pub fn considered_header(self) -> [&'static str; 4] {
        match self.0 {
            Lang::En => ["category", "conf", "hypothesis", "why it ranks lower"],
            Lang::Zh => ["类别", "置信度", "假设", "排名靠后的原因"],
        }
    }
    pub fn weak_evidence(self) -> &'static str {
        match self.0 {
            Lang::En => "weak evidence",
            Lang::Zh => "证据不足",
        }
    }
    pub fn less_evidence(self) -> &'static str {
        match self.0 {
            Lang::En => "less evidence than the top cause",
            Lang::Zh => "证据不如首要原因充分",
        }
    }
    /// Same confidence as the top cause: ranked after it by `correlate::rank`'s tie rule.
    pub fn tie_evidence(self) -> &'static str {
        match self.0 {
            Lang::En => {
                "as much evidence as the top cause; ranked after it because the top names a more specific kind or comes from a rule (a rule before the engine's own reading, token candidates last)"
            }
            Lang::Zh => {
                "证据和首要原因一样多；排在它之后是因为首要原因指明了更具体的类别，或来自规则（规则优先于引擎自己的判断，标记词候选排最后）"
            }
        }
    }
    /// No cause was diagnosed: every finding is only a candidate.
    pub fn only_candidate(self) -> &'static str {
        match self.0 {
            Lang::En => "a candidate only: no rule explains the failure",
            Lang::Zh => "只是候选：没有规则能解释这次失败",
        }
    }

    /// Why a considered finding ranks lower (decided by `Report::considered_why`), in words.
    pub fn why_lower<'a>(self, why: crate::report::Lower<'a>) -> &'a str {
        use crate::report::Lower;
        match why {
            Lower::Against(a) => self.against_why(a),
            Lower::Weak => self.weak_evidence(),
            Lower::LessEvidence => self.less_evidence(),
            Lower::Tie => self.tie_evidence(),
            Lower::OnlyCandidate => self.only_candidate(),
        }
    }

    // ----- warnings: analysis wrote each in both languages; pick the report's -----

    /// A message analysis wrote in both languages (a warning's, a rule directory's).
    pub fn text(self, t: &Text) -> &str {
        match self.0 {
            Lang::En => &t.en,
            Lang::Zh => &t.zh,
        }
    }
    /// A warning's message in the report's language.
    pub fn warning_text(self, w: &Warning) -> &str {
        w.message.get(self.0)
    }
    /// A `diff`'s warning `i` (`good: path: message`), in the report's language.
    pub fn diff_warning(self, d: &crate::diff::Diff, i: usize) -> &str {
        d.warnings.get(i).map_or("", |w| w.get(self.0))
    }
    /// `path: message` (the message alone when no input is named), the message in the
    /// report's language. The colon after a path stays ASCII, as compilers print a location.
    pub fn warning_line(self, w: &Warning) -> String {
        match &w.path {
            Some(p) => format!("{p}: {}", self.warning_text(w)),
            None => self.warning_text(w).to_string(),
        }
    }

    // ----- sentences -----

    /// `confidence 0.96 · action fix-config · rule TW0104 ucx-bus-error`
    pub fn confidence_line(self, f: &Finding) -> String {
        match self.0 {
            Lang::En => format!(
                "confidence {:.2} · action {} · rule {} {}",
                f.confidence, f.action, f.code, f.rule
            ),
            Lang::Zh => format!(
                "置信度 {:.2} · 处理方式 {} · 规则 {} {}",
                f.confidence, f.action, f.code, f.rule
            ),
        }
    }

    /// Where the failure started, said once: `started: rank 2, host h, pid 7, at T; 3 other
    /// ranks affected as symptoms`.
    pub fn started(self, f: &Finding) -> Option<String> {
        let o = &f.origin;
        let zh = self.zh();
        let mut parts = Vec::new();
        if let Some(r) = o.rank {
            parts.push(format!("rank {r}"));
        }
        if let Some(h) = &o.host {
            parts.push(if zh {
                format!("主机 {h}")
            } else {
                format!("host {h}")
            });
        }
        if let Some(p) = o.pid {
            parts.push(format!("pid {p}"));
        }
        if let Some(t) = &o.time {
            parts.push(if zh {
                format!("时间 {t}")
            } else {
                format!("at {t}")
            });
        }
        if parts.is_empty() {
            return None;
        }
        let n = f.affected_ranks.len() as u64;
        Some(match (self.0, n) {
            (Lang::En, 0) => format!("started: {}", parts.join(", ")),
            (Lang::En, n) => format!(
                "started: {}; {n} other rank{} affected as symptom{}",
                parts.join(", "),
                s(n),
                s(n)
            ),
            (Lang::Zh, 0) => format!("起点：{}", parts.join("，")),
            (Lang::Zh, n) => format!(
                "起点：{}；另有 {n} 个 rank 作为连带症状受到影响",
                parts.join("，")
            ),
        })
    }

    pub fn more_matching(self, n: u64) -> String {
        match self.0 {
            Lang::En => format!("… and {n} more matching lines"),
            Lang::Zh => format!("… 另有 {n} 行匹配"),
        }
    }

    pub fn no_failure(self, inputs: usize) -> String {
        let n = inputs as u64;
        match self.0 {
            Lang::En => format!("no failure found in {n} input{}.", s(n)),
            Lang::Zh => format!("在 {n} 个输入中没有发现失败。"),
        }
    }

    pub fn unknown_failure(self) -> &'static str {
        match self.0 {
            Lang::En => "the run failed, but no known signature explains it.",
            Lang::Zh => "训练失败了，但没有已知特征能解释它。",
        }
    }

    pub fn closest(self, f: &Finding) -> String {
        match self.0 {
            Lang::En => format!(
                "closest: {} ({}, confidence {:.2})",
                self.title(f),
                f.category,
                f.confidence
            ),
            Lang::Zh => format!(
                "最接近的：{}（{}，置信度 {:.2}）",
                self.title(f),
                f.category,
                f.confidence
            ),
        }
    }

    pub fn capture_next_time(self) -> &'static str {
        match self.0 {
            Lang::En => {
                "Next time capture: `dmesg -T | tail -n 200`, `df -h /dev/shm`, NCCL_DEBUG=INFO, TORCHELASTIC_ERROR_FILE, `ulimit -c unlimited` (or wrap the run in `trainwreck run`)."
            }
            Lang::Zh => {
                "下次请采集：`dmesg -T | tail -n 200`、`df -h /dev/shm`、NCCL_DEBUG=INFO、TORCHELASTIC_ERROR_FILE、`ulimit -c unlimited`（或者直接用 `trainwreck run` 包住训练命令）。"
            }
        }
    }

    /// `4 inputs read, 6 facts, 0 warnings · fingerprint fp2:…`
    pub fn footer(self, inputs: usize, facts: usize, warnings: usize, fp: Option<&str>) -> String {
        let (i, f, w) = (inputs as u64, facts as u64, warnings as u64);
        match self.0 {
            Lang::En => format!(
                "{i} input{} read, {f} fact{}, {w} warning{}{}",
                s(i),
                s(f),
                s(w),
                fp.map(|f| format!(" · fingerprint {f}"))
                    .unwrap_or_default()
            ),
            Lang::Zh => format!(
                "读取了 {i} 个输入，{f} 条事实，{w} 条警告{}",
                fp.map(|f| format!(" · 指纹 {f}")).unwrap_or_default()
            ),
        }
    }

    pub fn more_warnings(self, n: usize) -> String {
        match self.0 {
            Lang::En => format!("… {n} more warnings (see --format json)"),
            Lang::Zh => format!("… 另有 {n} 条警告（见 --format json）"),
        }
    }

    /// A symptom's line count and ranks, with the space before it where the language has
    /// one: ` (4 lines, ranks 0,1)`, `（4 行，rank 0,1）`.
    pub fn symptom_count(self, lines: usize, ranks: &[u32]) -> String {
        let n = lines as u64;
        let list = ranks
            .iter()
            .map(|r| r.to_string())
            .collect::<Vec<_>>()
            .join(",");
        match (self.0, ranks.is_empty()) {
            (Lang::En, true) => format!(" ({n} line{})", s(n)),
            (Lang::En, false) => {
                format!(" ({n} line{}, rank{} {list})", s(n), s(ranks.len() as u64))
            }
            (Lang::Zh, true) => format!("（{n} 行）"),
            (Lang::Zh, false) => format!("（{n} 行，rank {list}）"),
        }
    }

    pub fn more_frames(self, n: usize) -> String {
        match self.0 {
            Lang::En => format!("… {n} more frames (see --format json)"),
            Lang::Zh => format!("… 另有 {n} 帧（见 --format json）"),
        }
    }

    /// Whose core it is: `owner` is `CoreOwner::describe` (rank, pid, host: not translated).
    pub fn core_owner(self, owner: &str, exit: Option<&str>) -> String {
        let exit = exit.unwrap_or_default();
        match (self.0, exit.is_empty()) {
            (Lang::En, true) => format!("the core of {owner}"),
            (Lang::En, false) => format!("the core of {owner}, which ended with {exit}"),
            (Lang::Zh, true) => format!("这是 {owner} 的 core"),
            (Lang::Zh, false) => format!("这是 {owner} 的 core，该进程以 {exit} 结束"),
        }
    }

    /// What `coredumpctl info` said about the core: signal, time, command line.
    pub fn core_coredumpctl(
        self,
        signal: Option<&str>,
        time: Option<&str>,
        cmd: Option<&str>,
    ) -> String {
        let mut parts = Vec::new();
        if let Some(s) = signal {
            parts.push(s.to_string());
        }
        if let Some(t) = time {
            parts.push(match self.0 {
                Lang::En => format!("at {t}"),
                Lang::Zh => format!("时间 {t}"),
            });
        }
        if let Some(c) = cmd {
            parts.push(match self.0 {
                Lang::En => format!("command line `{c}`"),
                Lang::Zh => format!("命令行 `{c}`"),
            });
        }
        format!("coredumpctl: {}", parts.join(", "))
    }

    pub fn more_python_threads(self, n: usize) -> String {
        match self.0 {
            Lang::En => format!("… {n} more Python threads (see --format json)"),
            Lang::Zh => format!("… 另有 {n} 个 Python 线程（见 --format json）"),
        }
    }

    // ----- Markdown -----

    pub fn md_confidence_line(self, f: &Finding) -> String {
        match self.0 {
            Lang::En => format!(
                "**Confidence** {:.2} · **action** `{}` · **rule** `{} {}`",
                f.confidence, f.action, f.code, f.rule
            ),
            Lang::Zh => format!(
                "**置信度** {:.2} · **处理方式** `{}` · **规则** `{} {}`",
                f.confidence, f.action, f.code, f.rule
            ),
        }
    }
    pub fn md_fix(self) -> &'static str {
        match self.0 {
            Lang::En => "**Fix:**",
            Lang::Zh => "**修复建议：**",
        }
    }
    pub fn md_next_time(self) -> &'static str {
        match self.0 {
            Lang::En => "**To be sure next time:**",
            Lang::Zh => "**下次如何确认：**",
        }
    }
    pub fn md_symptoms(self) -> &'static str {
        match self.0 {
            Lang::En => "**Symptoms of this cause:**",
            Lang::Zh => "**由此引发的连带症状：**",
        }
    }
    pub fn md_lines(self, n: usize) -> String {
        match self.0 {
            Lang::En => format!(" ({n} lines)"),
            Lang::Zh => format!("（{n} 行）"),
        }
    }
    /// `Evidence (3 lines)` as a `<summary>`.
    pub fn md_evidence_summary(self, n: usize) -> String {
        let k = n as u64;
        match self.0 {
            Lang::En => format!("Evidence ({n} line{})", s(k)),
            Lang::Zh => format!("证据（{n} 行）"),
        }
    }
    pub fn md_no_failure(self, inputs: usize) -> String {
        let n = inputs as u64;
        match self.0 {
            Lang::En => format!(
                "## trainwreck: no failure found\n\nNo sign of a failure in {n} input{}.\n",
                s(n)
            ),
            Lang::Zh => format!("## trainwreck：没有发现失败\n\n{n} 个输入中都没有失败的迹象。\n"),
        }
    }
    pub fn md_unknown(self) -> &'static str {
        match self.0 {
            Lang::En => {
                "## trainwreck: unknown failure\n\nThe run failed, but no known signature explains it. **Action** `investigate`.\n"
            }
            Lang::Zh => {
                "## trainwreck：未知失败\n\n训练失败了，但没有已知特征能解释它。**处理方式** `investigate`。\n"
            }
        }
    }
    pub fn md_closest(self, f: &Finding, title: &str) -> String {
        match self.0 {
            Lang::En => format!(
                "Closest: `{}` — {title} (confidence {:.2})\n",
                f.category, f.confidence
            ),
            Lang::Zh => format!(
                "最接近的：`{}` — {title}（置信度 {:.2}）\n",
                f.category, f.confidence
            ),
        }
    }
    pub fn md_considered_header(self, n: usize) -> String {
        let [c, conf, h, why] = match self.0 {
            Lang::En => ["category", "confidence", "hypothesis", "why it ranks lower"],
            Lang::Zh => ["类别", "置信度", "假设", "排名靠后的原因"],
        };
        format!(
            "<details><summary>{} ({n})</summary>\n\n| {c} | {conf} | {h} | {why} |\n|---|---|---|---|",
            self.also_considered()
        )
    }
    pub fn md_footer(
        self,
        verdict: crate::model::Verdict,
        inputs: usize,
        facts: usize,
        fp: Option<&str>,
    ) -> String {
        let (i, f) = (inputs as u64, facts as u64);
        match self.0 {
            Lang::En => format!(
                "<sub>verdict `{verdict}` · {i} input{} read · {f} fact{}{}</sub>",
                s(i),
                s(f),
                fp.map(|f| format!(" · fingerprint `{f}`"))
                    .unwrap_or_default()
            ),
            Lang::Zh => format!(
                "<sub>结论 `{verdict}` · 读取了 {i} 个输入 · {f} 条事实{}</sub>",
                fp.map(|f| format!(" · 指纹 `{f}`")).unwrap_or_default()
            ),
        }
    }

    // ----- GitHub workflow commands -----

    pub fn gh_message(self, f: &Finding, fp: &str) -> String {
        match self.0 {
            Lang::En => format!(
                "{} (confidence {:.2}, rule {} {}){fp}\nFix: {}",
                self.title(f),
                f.confidence,
                f.code,
                f.rule,
                self.fix(f)
            ),
            Lang::Zh => format!(
                "{}（置信度 {:.2}，规则 {} {}）{fp}\n修复建议：{}",
                self.title(f),
                f.confidence,
                f.code,
                f.rule,
                self.fix(f)
            ),
        }
    }
    pub fn gh_evidence_title(self) -> &'static str {
        match self.0 {
            Lang::En => "trainwreck evidence",
            Lang::Zh => "trainwreck 证据",
        }
    }
    pub fn gh_no_failure(self) -> &'static str {
        match self.0 {
            Lang::En => "no failure found",
            Lang::Zh => "没有发现失败",
        }
    }
    pub fn gh_unknown_title(self) -> &'static str {
        match self.0 {
            Lang::En => "trainwreck: unknown failure",
            Lang::Zh => "trainwreck：未知失败",
        }
    }
    pub fn gh_unknown(self, fp: &str) -> String {
        match self.0 {
            Lang::En => {
                format!("The run failed, but no known signature explains it; investigate{fp}")
            }
            Lang::Zh => format!("训练失败了，但没有已知特征能解释它，需要人工排查{fp}"),
        }
    }
    pub fn gh_warning_title(self) -> &'static str {
        match self.0 {
            Lang::En => "trainwreck warning",
            Lang::Zh => "trainwreck 警告",
        }
    }

    // ----- diff: what changed between a good run and a bad one -----

    /// A difference's label, in the report's language where the comparer gave it.
    pub fn diff_what(self, d: &Difference) -> &str {
        d.what.get(self.0)
    }
    /// A side's value: as read, with our own words for it (`unlimited`, `unset`) in the
    /// report's language.
    pub fn diff_value(self, d: &Difference, side: Side) -> String {
        match self.0 {
            Lang::En => d.shown(side),
            Lang::Zh => d.shown_zh(side),
        }
    }
    pub fn diff_headline(self, d: &Diff) -> Option<&str> {
        d.headline.as_ref().map(|h| h.get(self.0))
    }
    pub fn diff_section(self) -> &'static str {
        match self.0 {
            Lang::En => "What changed since the good run",
            Lang::Zh => "与正常运行相比的变化",
        }
    }
    /// A side as a row label or a citation's prefix: `good`, `bad`.
    pub fn diff_side(self, side: Side) -> &'static str {
        match (self.0, side) {
            (Lang::En, Side::Good) => "good",
            (Lang::En, Side::Bad) => "bad",
            (Lang::Zh, Side::Good) => "正常",
            (Lang::Zh, Side::Bad) => "失败",
        }
    }
    /// `good: runs/good (no_failure, 40 steps)`; `aligned` pads the label where the language
    /// needs it for two such lines to align (the terminal's).
    pub fn diff_run_line(
        self,
        side: Side,
        aligned: bool,
        paths: &str,
        about: Option<String>,
    ) -> String {
        let label = match (self.0, side) {
            (Lang::En, Side::Good) => "good:",
            (Lang::En, Side::Bad) if aligned => "bad :",
            (Lang::En, Side::Bad) => "bad:",
            (Lang::Zh, Side::Good) => "正常运行：",
            (Lang::Zh, Side::Bad) => "失败运行：",
        };
        let about = about.map(|a| match self.0 {
            Lang::En => format!(" ({a})"),
            Lang::Zh => format!("（{a}）"),
        });
        format!(
            "{label}{}{paths}{}",
            self.after_label(),
            about.unwrap_or_default()
        )
    }
    /// The separator inside a run's parentheses: `, ` / `，`.
    pub fn comma(self) -> &'static str {
        match self.0 {
            Lang::En => ", ",
            Lang::Zh => "，",
        }
    }
    pub fn diff_steps(self, n: u64) -> String {
        match self.0 {
            Lang::En => format!("{n} step{}", s(n)),
            Lang::Zh => format!("{n} 步"),
        }
    }
    pub fn diff_no_differences(self) -> &'static str {
        match self.0 {
            Lang::En => "No differences: everything both runs tell is the same.",
            Lang::Zh => "没有差异：两次运行能读到的一切都相同。",
        }
    }
    /// The terminal table's header.
    pub fn diff_header(self) -> [&'static str; 4] {
        match self.0 {
            Lang::En => ["what", "good", "bad", "can explain"],
            Lang::Zh => ["项目", "正常", "失败", "可解释"],
        }
    }
    /// The Markdown table's header.
    pub fn diff_md_header(self) -> [&'static str; 6] {
        match self.0 {
            Lang::En => ["what", "good", "bad", "can explain", "relevance", "where"],
            Lang::Zh => ["项目", "正常", "失败", "可解释", "相关度", "出处"],
        }
    }
    /// `… 3 more (--format json lists all)`, the flag in backticks for Markdown.
    pub fn diff_more(self, n: usize, flag: &str) -> String {
        match self.0 {
            Lang::En => format!("… {n} more ({flag} lists all)"),
            Lang::Zh => format!("… 另有 {n} 项（{flag} 会全部列出）"),
        }
    }
    /// `loss NaN (good run's band -1.2 .. 3.4)`.
    pub fn diff_band(self, metric: &str, bad: &str, lo: &str, hi: &str) -> String {
        match self.0 {
            Lang::En => format!("{metric} {bad} (good run's band {lo} .. {hi})"),
            Lang::Zh => format!("{metric} 为 {bad}（正常运行的区间 {lo} .. {hi}）"),
        }
    }
    pub fn diff_band_separator(self) -> &'static str {
        match self.0 {
            Lang::En => "; ",
            Lang::Zh => "；",
        }
    }
    /// `The runs part at step 12: …`.
    pub fn diff_parting(self, step: u64, bands: &str) -> String {
        match self.0 {
            Lang::En => format!("The runs part at step {step}: {bands}"),
            Lang::Zh => format!("两次运行从第 {step} 步开始偏离：{bands}"),
        }
    }
    pub fn diff_warnings(self, n: usize) -> String {
        match self.0 {
            Lang::En => {
                format!("{n} warnings from reading the two runs (--format json lists them)")
            }
            Lang::Zh => format!("读取两次运行时有 {n} 条警告（--format json 会列出）"),
        }
    }
    // ----- rules list / rules explain -----

    /// A rule's title, in Chinese where the rule gives one.
    pub fn rule_title(self, r: &crate::rules::Rule) -> &str {
        r.title.get(self.0)
    }
    pub fn rules_list_header(self) -> [&'static str; 5] {
        match self.0 {
            Lang::En => ["code", "name", "category", "role", "title"],
            Lang::Zh => ["代码", "名称", "类别", "角色", "标题"],
        }
    }
    pub fn made_by_the_engine(self, module: &str) -> String {
        match self.0 {
            Lang::En => format!("made by the engine ({module})"),
            Lang::Zh => format!("由分析引擎生成（{module}）"),
        }
    }
    pub fn made_by_the_engine_not_a_file(self, module: &str) -> String {
        match self.0 {
            Lang::En => format!("made by the engine ({module}), not a rule file"),
            Lang::Zh => format!("由分析引擎生成（{module}），没有对应的规则文件"),
        }
    }
    pub fn rules_count(self, rules: usize, engine: usize) -> String {
        match self.0 {
            Lang::En => format!("{rules} rules, {engine} findings made by the engine"),
            Lang::Zh => format!("共 {rules} 条规则，另有 {engine} 种由分析引擎生成的发现"),
        }
    }
    pub fn explain_category(self) -> &'static str {
        match self.0 {
            Lang::En => "category:",
            Lang::Zh => "类别：",
        }
    }
    /// After the category: ` (action: fix-config)`.
    pub fn explain_action(self, a: crate::model::Action) -> String {
        match self.0 {
            Lang::En => format!(" (action: {a})"),
            Lang::Zh => format!("（处理方式：{a}）"),
        }
    }
    pub fn explain_role(self) -> &'static str {
        match self.0 {
            Lang::En => "role:",
            Lang::Zh => "角色：",
        }
    }
    pub fn explain_status(self) -> &'static str {
        match self.0 {
            Lang::En => "status:",
            Lang::Zh => "状态：",
        }
    }
    pub fn explain_source(self) -> &'static str {
        match self.0 {
            Lang::En => "source:",
            Lang::Zh => "来源：",
        }
    }
    pub fn explain_what(self) -> &'static str {
        match self.0 {
            Lang::En => "What it detects",
            Lang::Zh => "检测什么",
        }
    }
    pub fn explain_why(self) -> &'static str {
        match self.0 {
            Lang::En => "Why it happens",
            Lang::Zh => "为什么会发生",
        }
    }
    pub fn explain_lookalikes(self) -> &'static str {
        match self.0 {
            Lang::En => "Known look-alikes",
            Lang::Zh => "容易混淆的情况",
        }
    }
    pub fn explain_signatures(self) -> &'static str {
        match self.0 {
            Lang::En => "Signatures",
            Lang::Zh => "特征（正则）",
        }
    }
    pub fn explain_conditions(self) -> &'static str {
        match self.0 {
            Lang::En => "Conditions on facts",
            Lang::Zh => "事实条件",
        }
    }
    pub fn explain_trigger(self) -> &'static str {
        match self.0 {
            Lang::En => " (raises the finding alone)",
            Lang::Zh => "（单独即可触发）",
        }
    }
    pub fn explain_next_time(self) -> &'static str {
        match self.0 {
            Lang::En => "What to collect next time",
            Lang::Zh => "下次需要采集什么",
        }
    }
    pub fn explain_references(self) -> &'static str {
        match self.0 {
            Lang::En => "References",
            Lang::Zh => "参考资料",
        }
    }
    pub fn xid_cause(self) -> &'static str {
        match self.0 {
            Lang::En => "cause:",
            Lang::Zh => "原因：",
        }
    }
    pub fn xid_follows_other(self) -> &'static str {
        match self.0 {
            Lang::En => " (follows another event; not a cause by itself)",
            Lang::Zh => "（跟随其他事件出现，本身不是根因）",
        }
    }
    pub fn xid_action(self) -> &'static str {
        match self.0 {
            Lang::En => "action:",
            Lang::Zh => "处理方式：",
        }
    }
    pub fn xid_reference(self) -> &'static str {
        match self.0 {
            Lang::En => "reference:",
            Lang::Zh => "参考：",
        }
    }
    // ----- the HTML page (`report::html`) -----

    /// The labels of a cause's confidence, action, rule and where it started.
    pub fn html_meta_labels(self) -> [&'static str; 4] {
        match self.0 {
            Lang::En => ["confidence", "action", "rule", "started"],
            Lang::Zh => ["置信度", "处理方式", "规则", "起始位置"],
        }
    }
    /// The columns of an evidence table: where, which rank (host), the line.
    pub fn html_evidence_header(self) -> [&'static str; 3] {
        match self.0 {
            Lang::En => ["where", "rank / host", "line"],
            Lang::Zh => ["位置", "rank / 主机", "日志行"],
        }
    }
    pub fn html_inputs_read(self, n: usize) -> String {
        match self.0 {
            Lang::En => format!("{n} input{} read", s(n as u64)),
            Lang::Zh => format!("读取了 {n} 个输入"),
        }
    }
    /// The triage page's two charts: runs by category, runs by action class.
    pub fn html_triage_charts(self) -> [&'static str; 2] {
        match self.0 {
            Lang::En => ["Runs by category", "Runs by action class"],
            Lang::Zh => ["按类别统计的运行数", "按处理方式统计的运行数"],
        }
    }
    pub fn html_triage_groups(self) -> &'static str {
        match self.0 {
            Lang::En => "Groups by fingerprint",
            Lang::Zh => "按指纹分组",
        }
    }
    /// A bar chart's value axis.
    pub fn html_axis_runs(self) -> &'static str {
        match self.0 {
            Lang::En => "runs",
            Lang::Zh => "运行数",
        }
    }
    /// Under the timeline: which lane is shaded.
    pub fn html_timeline_origin(self, rank: u32) -> String {
        match self.0 {
            Lang::En => format!("Shaded lane: rank {rank}, where the failure started."),
            Lang::Zh => format!("底色标出的一行：rank {rank}，失败从这里开始。"),
        }
    }
    pub fn html_ruled_out(self) -> &'static str {
        match self.0 {
            Lang::En => "Ruled out",
            Lang::Zh => "已排除",
        }
    }
    /// The timeline's marks: first error, signal or exit, watchdog, last line, root cause.
    pub fn html_timeline_legend(self) -> [&'static str; 5] {
        match self.0 {
            Lang::En => [
                "first error",
                "signal / exit",
                "watchdog",
                "last line",
                "root cause",
            ],
            Lang::Zh => ["首个错误", "信号 / 退出", "看门狗", "最后一行", "根本原因"],
        }
    }
    /// The memory curves' section: `trainwreck run`'s samples.
    pub fn html_memory(self) -> &'static str {
        match self.0 {
            Lang::En => "Memory over time",
            Lang::Zh => "内存随时间的变化",
        }
    }
    /// Under the memory curves: where the samples come from.
    pub fn html_memory_note(self, path: &str, n: usize) -> String {
        match self.0 {
            Lang::En => format!(
                "{n} samples from {path} (trainwreck run); the dashed line is the limit, the last vertical line the end of the command."
            ),
            Lang::Zh => format!(
                "{path} 中的 {n} 个采样（trainwreck run）；虚线是上限，最后一条竖线是命令结束的时刻。"
            ),
        }
    }
    /// One memory curve's name: `/dev/shm`, the cgroup, host RAM in use, GPU `n`.
    pub fn html_memory_series(self, what: &str, gpu: Option<&str>) -> String {
        match (self.0, what, gpu) {
            (Lang::En, _, Some(n)) => format!("GPU {n} memory used"),
            (Lang::Zh, _, Some(n)) => format!("GPU {n} 已用显存"),
            (Lang::En, "shm", _) => "/dev/shm used".into(),
            (Lang::Zh, "shm", _) => "/dev/shm 已用".into(),
            (Lang::En, "cgroup", _) => "cgroup memory".into(),
            (Lang::Zh, "cgroup", _) => "cgroup 内存".into(),
            (Lang::En, _, _) => "host memory in use (MemTotal − MemAvailable)".into(),
            (Lang::Zh, _, _) => "主机已用内存（MemTotal − MemAvailable）".into(),
        }
    }
    /// A memory chart's title: the series, its peak and the limit it is drawn against.
    pub fn html_memory_title(self, series: &str, peak: &str, limit: Option<&str>) -> String {
        match (self.0, limit) {
            (Lang::En, Some(l)) => format!("{series}: peak {peak} of {l}"),
            (Lang::En, None) => format!("{series}: peak {peak} (no limit recorded)"),
            (Lang::Zh, Some(l)) => format!("{series}：峰值 {peak}，上限 {l}"),
            (Lang::Zh, None) => format!("{series}：峰值 {peak}（没有记录上限）"),
        }
    }
    /// The memory charts' axes: x, y.
    pub fn html_memory_axes(self) -> [&'static str; 2] {
        match self.0 {
            Lang::En => ["seconds since the command started", "bytes"],
            Lang::Zh => ["自命令启动起的秒数", "字节"],
        }
    }
    /// The limit line's label and the end line's label.
    pub fn html_memory_marks(self) -> [&'static str; 2] {
        match self.0 {
            Lang::En => ["limit", "end"],
            Lang::Zh => ["上限", "结束"],
        }
    }
    /// The x axis of curves on a sampler's own clock (nvidia-smi polled by the user).
    pub fn html_memory_wall_axis(self, start: &str) -> String {
        match self.0 {
            Lang::En => format!("seconds since the first sample ({start})"),
            Lang::Zh => format!("自第一个采样（{start}）起的秒数"),
        }
    }
    /// On a sampler's own clock: the last sample's line, and the failure's (the logs' time).
    pub fn html_memory_wall_marks(self) -> [&'static str; 2] {
        match self.0 {
            Lang::En => ["last sample", "failure"],
            Lang::Zh => ["最后一个采样", "失败时刻"],
        }
    }
    /// Under curves on a sampler's own clock: where they come from, and whether the failure's
    /// time could be placed on them.
    pub fn html_memory_wall_note(self, path: &str, n: usize, start: &str, failure: bool) -> String {
        match (self.0, failure) {
            (Lang::En, true) => format!(
                "{n} samples from {path} (nvidia-smi polled, from {start}); the dashed line is the limit, the red line the time the logs give for the failure (both clocks read as printed, without a zone)."
            ),
            (Lang::En, false) => format!(
                "{n} samples from {path} (nvidia-smi polled, from {start}); the dashed line is the limit. The logs give no time for the failure within these samples, so it is not marked."
            ),
            (Lang::Zh, true) => format!(
                "{path} 中的 {n} 个采样（nvidia-smi 轮询，自 {start} 起）；虚线是上限，红线是日志给出的失败时刻（两边的时间都按原样读取，不含时区）。"
            ),
            (Lang::Zh, false) => format!(
                "{path} 中的 {n} 个采样（nvidia-smi 轮询，自 {start} 起）；虚线是上限。日志给出的失败时刻不在这些采样的时间范围内，因此没有标出。"
            ),
        }
    }
    /// The snapshot charts' heading, where a memory was not sampled over time.
    pub fn html_memory_snapshots(self) -> &'static str {
        match self.0 {
            Lang::En => "Before and after the run (snapshots)",
            Lang::Zh => "运行前后（快照）",
        }
    }
    /// A snapshot chart's title: the series, its values before and after, its limit.
    pub fn html_memory_snapshot_title(
        self,
        series: &str,
        before: Option<&str>,
        after: Option<&str>,
        limit: Option<&str>,
    ) -> String {
        let none = match self.0 {
            Lang::En => "not read",
            Lang::Zh => "未读取",
        };
        let (b, a) = (before.unwrap_or(none), after.unwrap_or(none));
        match (self.0, limit) {
            (Lang::En, Some(l)) => format!("{series}: before {b}, after {a}, of {l}"),
            (Lang::En, None) => format!("{series}: before {b}, after {a} (no limit recorded)"),
            (Lang::Zh, Some(l)) => format!("{series}：运行前 {b}，运行后 {a}，上限 {l}"),
            (Lang::Zh, None) => format!("{series}：运行前 {b}，运行后 {a}（没有记录上限）"),
        }
    }
    /// A snapshot chart's two points on x, and its x axis.
    pub fn html_memory_snapshot_axis(self) -> [&'static str; 3] {
        match self.0 {
            Lang::En => ["before the run", "after the run", "snapshot"],
            Lang::Zh => ["运行前", "运行后", "快照"],
        }
    }
    /// Under the snapshot charts.
    pub fn html_memory_snapshot_note(self) -> &'static str {
        match self.0 {
            Lang::En => {
                "Values read from the snapshots taken before and after the run: one point each, nothing sampled between them; the dashed line is the limit. trainwreck run, or nvidia-smi polling, records the curve between."
            }
            Lang::Zh => {
                "数值读自运行前后的快照：各一个点，中间没有采样；虚线是上限。用 trainwreck run 或轮询的 nvidia-smi 可以记录两者之间的曲线。"
            }
        }
    }
    /// The diff page's memory section: both runs' samples on one chart per memory.
    pub fn html_diff_memory(self) -> &'static str {
        match self.0 {
            Lang::En => "Memory of both runs over time",
            Lang::Zh => "两次运行的内存随时间的变化",
        }
    }
    /// A diff memory chart's title.
    pub fn html_diff_memory_title(self, series: &str, good: &str, bad: &str) -> String {
        match self.0 {
            Lang::En => format!("{series}: peak {good} in the good run, {bad} in the bad run"),
            Lang::Zh => format!("{series}：峰值 正常运行 {good}，失败运行 {bad}"),
        }
    }
    /// The diff memory charts' x axis (each run from its own first sample).
    pub fn html_diff_memory_axis(self) -> &'static str {
        match self.0 {
            Lang::En => "seconds since each run's first sample",
            Lang::Zh => "自各自第一个采样起的秒数",
        }
    }
    /// A limit line's label on the diff's memory charts, when the runs' limits differ.
    pub fn html_diff_memory_limit(self, side: crate::diff::Side, limit: &str) -> String {
        match (self.0, side) {
            (Lang::En, crate::diff::Side::Good) => format!("good run's limit {limit}"),
            (Lang::En, crate::diff::Side::Bad) => format!("bad run's limit {limit}"),
            (Lang::Zh, crate::diff::Side::Good) => format!("正常运行的上限 {limit}"),
            (Lang::Zh, crate::diff::Side::Bad) => format!("失败运行的上限 {limit}"),
        }
    }
    /// Under the diff's memory charts: where each side's samples come from.
    pub fn html_diff_memory_note(self, good: &str, bad: &str) -> String {
        match self.0 {
            Lang::En => format!(
                "Good run: {good}; bad run: {bad}. Each run from its own first sample; the dashed lines are the limits."
            ),
            Lang::Zh => format!(
                "正常运行：{good}；失败运行：{bad}。两次运行各自从第一个采样算起；虚线是上限。"
            ),
        }
    }
    /// The lane of events that name no rank and no host.
    pub fn html_lane_other(self) -> &'static str {
        match self.0 {
            Lang::En => "(no rank)",
            Lang::Zh => "（无 rank）",
        }
    }
    /// The time axis's label: from and to, as logged.
    pub fn html_axis_time(self, from: &str, to: &str) -> String {
        match self.0 {
            Lang::En => format!("time as logged: {from} → {to}"),
            Lang::Zh => format!("日志时间：{from} → {to}"),
        }
    }
    pub fn html_more_lanes(self, n: usize) -> String {
        match self.0 {
            Lang::En => format!("{n} more lane{} not drawn", s(n as u64)),
            Lang::Zh => format!("另有 {n} 条未画出"),
        }
    }
    /// The columns of a core's frames: index, function, source, how it was found.
    pub fn html_frames_header(self) -> [&'static str; 4] {
        match self.0 {
            Lang::En => ["#", "function", "source", "found by"],
            Lang::Zh => ["#", "函数", "源码位置", "回溯方式"],
        }
    }
    pub fn html_facts_heading(self) -> &'static str {
        match self.0 {
            Lang::En => "Facts",
            Lang::Zh => "事实",
        }
    }
    /// The columns of the facts table: name, value, where read, the line read.
    pub fn html_facts_header(self) -> [&'static str; 4] {
        match self.0 {
            Lang::En => ["fact", "value", "source", "line"],
            Lang::Zh => ["事实", "值", "出处", "原文"],
        }
    }

    /// Beside a polled file's fact: the reading shown is the last of `n` (all drawn in #memory).
    pub fn html_fact_readings(self, n: usize) -> String {
        match self.0 {
            Lang::En => format!("(the last of {n} readings, drawn under Memory)"),
            Lang::Zh => format!("（共 {n} 次读数中的最后一次，曲线见“内存随时间的变化”）"),
        }
    }

    /// The columns of `trainwreck facts PATH`.
    pub fn facts_header(self) -> [&'static str; 3] {
        match self.0 {
            Lang::En => ["fact", "value", "source"],
            Lang::Zh => ["事实", "值", "出处"],
        }
    }
    /// Said on the terminal while `trainwreck run` watches the command: `what` went wrong on
    /// our side, and the command goes on.
    pub fn run_warning(self, what: &str) -> String {
        match self.0 {
            Lang::En => format!("trainwreck: warning: {what}; the run continues"),
            Lang::Zh => format!("trainwreck：警告：{what}；训练照常继续"),
        }
    }
    /// `run` started with forwarded signals ignored (names joined by ", ").
    pub fn run_signals_ignored(self, names: &str) -> String {
        match self.0 {
            Lang::En => format!(
                "{names} ignored when trainwreck started (nohup or a background job of a script): not forwarded, and the command ignores them too"
            ),
            Lang::Zh => format!(
                "trainwreck 启动时 {names} 处于忽略状态（nohup 或脚本中的后台任务）：不会转发，被运行的命令同样会忽略它们"
            ),
        }
    }
    /// A log of `trainwreck run` could not be written (one line, with its newline).
    pub fn run_log_unwritable(self, dir: &str, name: &str, e: &dyn std::fmt::Display) -> String {
        match self.0 {
            Lang::En => format!(
                "trainwreck: warning: cannot write {dir}/{name}: {e}; the run continues and its output still reaches the terminal, but the logs there are incomplete\n"
            ),
            Lang::Zh => format!(
                "trainwreck：警告：无法写入 {dir}/{name}：{e}；训练照常继续，输出仍会显示在终端上，但那里的日志不完整\n"
            ),
        }
    }
    // ----- the CLI's own messages on stderr -----

    /// What starts each of them: `trainwreck: ` / `trainwreck：`.
    pub fn cli_prefix(self) -> &'static str {
        match self.0 {
            Lang::En => "trainwreck: ",
            Lang::Zh => "trainwreck：",
        }
    }
    pub fn cli_no_such_path(self, path: &str) -> String {
        match self.0 {
            Lang::En => format!("{path}: no such file or directory"),
            Lang::Zh => format!("{path}：文件或目录不存在"),
        }
    }
    pub fn cli_no_such_file(self) -> &'static str {
        match self.0 {
            Lang::En => "no such file or directory",
            Lang::Zh => "文件或目录不存在",
        }
    }
    /// `--baseline GOOD: why`.
    pub fn cli_baseline_error(self, base: &str, why: &str) -> String {
        match self.0 {
            Lang::En => format!("--baseline {base}: {why}"),
            Lang::Zh => format!("--baseline {base}：{why}"),
        }
    }
    pub fn cli_rule_error(self, e: &str) -> String {
        match self.0 {
            Lang::En => format!("rule error: {e}"),
            Lang::Zh => format!("规则错误：{e}"),
        }
    }
    pub fn cli_rule_warning(self, w: &str) -> String {
        match self.0 {
            Lang::En => format!("rule warning: {w}"),
            Lang::Zh => format!("规则警告：{w}"),
        }
    }
    /// A history problem that does not stop the diagnosis.
    pub fn cli_history_unused(self, e: &str, recording: bool) -> String {
        match (self.0, recording) {
            (Lang::En, true) => format!("{e} (not recorded; the diagnosis prints regardless)"),
            (Lang::En, false) => format!("{e} (no seen-before; the diagnosis prints regardless)"),
            (Lang::Zh, true) => format!("{e}（未写入历史记录；诊断照常输出）"),
            (Lang::Zh, false) => format!("{e}（无法查询以前是否出现过；诊断照常输出）"),
        }
    }
    pub fn cli_stdin_hint(self) -> &'static str {
        match self.0 {
            Lang::En => "reading a pasted log from stdin; end it with Ctrl-D on a line of its own",
            Lang::Zh => "正在从标准输入读取粘贴的日志；粘贴完后在单独一行按 Ctrl-D 结束",
        }
    }
    pub fn cli_no_history_db(self) -> &'static str {
        match self.0 {
            Lang::En => "no history database: give --db or set TRAINWRECK_DB",
            Lang::Zh => "没有历史数据库：请用 --db 指定，或设置 TRAINWRECK_DB",
        }
    }
    pub fn cli_run_not_recorded(self, e: &str, run: &str) -> String {
        match self.0 {
            Lang::En => format!("{e} (run {run} not recorded)"),
            Lang::Zh => format!("{e}（运行 {run} 未写入历史记录）"),
        }
    }
    pub fn cli_triage_not_recorded(self, e: &str) -> String {
        match self.0 {
            Lang::En => format!("{e} (nothing recorded; the triage is below)"),
            Lang::Zh => format!("{e}（没有写入任何记录；分诊结果见下）"),
        }
    }
    pub fn cli_facts_needs_path(self) -> &'static str {
        match self.0 {
            Lang::En => "facts needs at least one PATH (or --catalog)",
            Lang::Zh => "facts 至少需要一个 PATH（或者 --catalog）",
        }
    }
    /// The last line of `rules test`: examples passed and failures.
    pub fn rules_test_summary(self, passed: usize, failed: usize) -> String {
        match self.0 {
            Lang::En => format!("{passed} passed, {failed} failed"),
            Lang::Zh => format!("通过 {passed} 个，失败 {failed} 个"),
        }
    }
    pub fn cli_no_rule(self, id: &str) -> String {
        match self.0 {
            Lang::En => {
                format!("no rule with code or name {id:?} (see `trainwreck rules list`)")
            }
            Lang::Zh => {
                format!("没有代码或名称为 {id:?} 的规则（见 `trainwreck rules list`）")
            }
        }
    }
    pub fn cli_capture_wrote(self, files: usize, dir: &str, missing: usize) -> String {
        match self.0 {
            Lang::En => format!(
                "wrote {files} files to {dir} ({missing} noted as missing; see manifest.json)"
            ),
            Lang::Zh => {
                format!("已向 {dir} 写入 {files} 个文件（{missing} 项记为缺失；见 manifest.json）")
            }
        }
    }
    pub fn cli_run_failed(self, status: i32, dir: &str) -> String {
        match self.0 {
            Lang::En => format!("the command failed (exit status {status}); diagnosis of {dir}:"),
            Lang::Zh => format!("命令失败（退出状态 {status}）；对 {dir} 的诊断："),
        }
    }
    pub fn cli_run_rules_failed(self) -> &'static str {
        match self.0 {
            Lang::En => "rules failed to load; run `trainwreck analyze` on the directory later",
            Lang::Zh => "规则加载失败；之后请对该目录运行 `trainwreck analyze`",
        }
    }
    pub fn cli_no_subcommand(self, name: &str) -> String {
        match self.0 {
            Lang::En => format!("no subcommand {name:?} (see `trainwreck --help`)"),
            Lang::Zh => format!("没有子命令 {name:?}（见 `trainwreck --help`）"),
        }
    }
    pub fn cli_cannot_render_man(self, e: &str) -> String {
        match self.0 {
            Lang::En => format!("cannot render the manual page: {e}"),
            Lang::Zh => format!("无法生成手册页：{e}"),
        }
    }
    // ----- triage tables -----

    pub fn triage_header(self) -> [&'static str; 8] {
        match self.0 {
            Lang::En => [
                "runs",
                "fingerprint",
                "category",
                "action",
                "first seen",
                "last seen",
                "hosts",
                "example",
            ],
            Lang::Zh => [
                "运行数",
                "指纹",
                "类别",
                "处理方式",
                "首次出现",
                "最近出现",
                "主机",
                "示例",
            ],
        }
    }
    /// `12 runs, 3 groups`.
    pub fn triage_totals(self, runs: usize, groups: usize) -> String {
        match self.0 {
            Lang::En => format!("{runs} runs, {groups} groups"),
            Lang::Zh => format!("{runs} 次运行，{groups} 组"),
        }
    }
    /// `host h1 failed in 3 runs: hardware suspect` (`kind` is `host` or `gpu`).
    pub fn triage_suspect(self, kind: &str, name: &str, runs: usize) -> String {
        match (self.0, kind) {
            (Lang::En, _) => format!("{kind} {name} failed in {runs} runs: hardware suspect"),
            (Lang::Zh, "host") => format!("主机 {name} 在 {runs} 次运行中失败：疑似硬件问题"),
            (Lang::Zh, _) => format!("GPU {name} 在 {runs} 次运行中失败：疑似硬件问题"),
        }
    }
    pub fn triage_suspect_label(self) -> &'static str {
        match self.0 {
            Lang::En => "suspect:",
            Lang::Zh => "可疑：",
        }
    }
    pub fn triage_md_title(self, runs: usize, groups: usize) -> String {
        match self.0 {
            Lang::En => format!("## trainwreck triage: {runs} runs, {groups} groups"),
            Lang::Zh => format!("## trainwreck 分诊：{runs} 次运行，{groups} 组"),
        }
    }
    pub fn triage_md_suspects(self) -> &'static str {
        match self.0 {
            Lang::En => "**Hardware suspects** (failed in more than one run):",
            Lang::Zh => "**疑似硬件问题**（在不止一次运行中失败）：",
        }
    }
    pub fn triage_md_group_runs(self, n: usize) -> String {
        let k = n as u64;
        match self.0 {
            Lang::En => format!("{n} run{}", s(k)),
            Lang::Zh => format!("{n} 次运行"),
        }
    }
    pub fn triage_no_rule(self) -> &'static str {
        match self.0 {
            Lang::En => "no rule explains it: investigate",
            Lang::Zh => "没有规则能解释它：需要人工排查",
        }
    }
    pub fn triage_md_runs(self) -> &'static str {
        match self.0 {
            Lang::En => "Runs:",
            Lang::Zh => "运行：",
        }
    }

    // ----- the --timeline table -----

    /// The heading, with the year glog/syslog times were dated with, when one was.
    pub fn timeline_heading(self, year: Option<i32>) -> String {
        match (self.0, year) {
            (Lang::En, None) => "Timeline (times as logged, no clock-skew correction)".into(),
            (Lang::En, Some(y)) => format!(
                "Timeline (times as logged, no clock-skew correction; glog/syslog year {y} from a dated line)"
            ),
            (Lang::Zh, None) => "时间线（按日志原样的时间，未校正时钟偏差）".into(),
            (Lang::Zh, Some(y)) => format!(
                "时间线（按日志原样的时间，未校正时钟偏差；glog/syslog 的年份 {y} 取自带日期的行）"
            ),
        }
    }
    pub fn timeline_empty(self) -> &'static str {
        match self.0 {
            Lang::En => "no timed events in the inputs",
            Lang::Zh => "输入中没有带时间的事件",
        }
    }
    /// An event kind's label: `last line`, `matched`, `watchdog`, … (machine events keep
    /// their kind's name).
    pub fn timeline_label(self, en: &'static str) -> &'static str {
        match (self.0, en) {
            (Lang::Zh, "last line") => "最后一行",
            (Lang::Zh, "matched") => "匹配",
            (Lang::Zh, "counters") => "计数",
            (Lang::Zh, "teardown") => "终止",
            (Lang::Zh, "exit") => "退出",
            _ => en,
        }
    }
    pub fn timeline_watchdog(self, seq: u64, op: &str, ran_ms: Option<u64>) -> String {
        match self.0 {
            Lang::En => format!(
                "collective #{seq} {op} timed out{}",
                ran_ms.map(|m| format!(" after {m} ms")).unwrap_or_default()
            ),
            Lang::Zh => format!(
                "集合通信 #{seq} {op} 超时{}",
                ran_ms
                    .map(|m| format!("（已运行 {m} ms）"))
                    .unwrap_or_default()
            ),
        }
    }
    pub fn timeline_counters(self, enqueued: i64, completed: i64) -> String {
        match self.0 {
            Lang::En => format!("last enqueued #{enqueued}, last completed #{completed}"),
            Lang::Zh => format!("最后入队 #{enqueued}，最后完成 #{completed}"),
        }
    }
    pub fn timeline_fingerprint(self, of: u32, seq: u64, op: &str) -> String {
        match self.0 {
            Lang::En => format!("rank {of} runs #{seq} {op}"),
            Lang::Zh => format!("rank {of} 在执行 #{seq} {op}"),
        }
    }
    pub fn timeline_teardown(self, signal: &str, pid: u32) -> String {
        match self.0 {
            Lang::En => format!("launcher sends {signal} to pid {pid}"),
            Lang::Zh => format!("启动器向 pid {pid} 发送 {signal}"),
        }
    }
    pub fn timeline_exit(self, code: Option<i64>, pid: Option<u32>) -> String {
        let code = code.map_or("?".to_string(), |c| c.to_string());
        match self.0 {
            Lang::En => format!(
                "exit code {code}{}",
                pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
            ),
            Lang::Zh => format!(
                "退出码 {code}{}",
                pid.map(|p| format!("（pid {p}）")).unwrap_or_default()
            ),
        }
    }
    pub fn timeline_more_rows(self, n: usize) -> String {
        match self.0 {
            Lang::En => format!("… {n} more rows"),
            Lang::Zh => format!("… 另有 {n} 行"),
        }
    }
    pub fn timeline_origin(self, rank: u32) -> String {
        match self.0 {
            Lang::En => format!("▶ = rank {rank}, where the failure started"),
            Lang::Zh => format!("▶ = rank {rank}，失败从这里开始"),
        }
    }
    // ----- history show / list / hosts / gpus -----

    pub fn history_first_last(self, first: &str, last: &str) -> String {
        match self.0 {
            Lang::En => format!("first seen {first}, last seen {last}"),
            Lang::Zh => format!("首次出现 {first}，最近出现 {last}"),
        }
    }
    pub fn history_hosts(self, hosts: &str) -> String {
        match self.0 {
            Lang::En => format!("hosts: {hosts}"),
            Lang::Zh => format!("主机：{hosts}"),
        }
    }
    pub fn history_notes(self) -> &'static str {
        match self.0 {
            Lang::En => "Notes",
            Lang::Zh => "备注",
        }
    }
    pub fn history_runs_header(self) -> [&'static str; 5] {
        match self.0 {
            Lang::En => ["time", "run", "job", "host", "verdict"],
            Lang::Zh => ["时间", "运行", "作业", "主机", "结论"],
        }
    }
    pub fn history_empty(self) -> &'static str {
        match self.0 {
            Lang::En => "No failures in the history for this window.",
            Lang::Zh => "这段时间内的历史记录里没有失败。",
        }
    }
    pub fn history_list_header(self) -> [&'static str; 7] {
        match self.0 {
            Lang::En => [
                "count",
                "fingerprint",
                "category",
                "hosts",
                "first seen",
                "last seen",
                "title / note",
            ],
            Lang::Zh => [
                "次数",
                "指纹",
                "类别",
                "主机数",
                "首次出现",
                "最近出现",
                "标题 / 备注",
            ],
        }
    }
    pub fn history_note(self, text: &str) -> String {
        match self.0 {
            Lang::En => format!("note: {text}"),
            Lang::Zh => format!("备注：{text}"),
        }
    }
    /// The unit column's heading: `host` / `gpu`.
    pub fn fleet_unit(self, unit: &'static str) -> &'static str {
        match (self.0, unit) {
            (Lang::Zh, "host") => "主机",
            (Lang::Zh, "gpu") => "GPU",
            _ => unit,
        }
    }
    /// The fleet table's other headings: jobs, share, then (after the failure classes)
    /// hw+unexplained, expected, p-value, and hosts for GPUs.
    pub fn fleet_header(self) -> ([&'static str; 2], [&'static str; 3], &'static str) {
        match self.0 {
            Lang::En => (
                ["jobs", "share"],
                ["hw+unexplained", "expected", "p-value"],
                "hosts",
            ),
            Lang::Zh => (
                ["作业数", "占比"],
                ["硬件+未解释", "期望值", "p 值"],
                "主机",
            ),
        }
    }
    /// The line above the fleet table: what was tested and how.
    pub fn fleet_summary(self, s: &crate::report::history::FleetStats, tested: usize) -> String {
        let (n, unit) = (s.units.len(), s.unit);
        match self.0 {
            Lang::En => format!(
                "{} runs{}; {n} {unit}s; one-sided binomial test of hardware-class and unexplained failures against the rest of the fleet, suspect below p = {:.1e} (alpha {} / {tested} tested)",
                s.runs,
                s.since
                    .as_deref()
                    .map(|d| format!(" since {d}"))
                    .unwrap_or_default(),
                s.threshold,
                s.alpha,
            ),
            Lang::Zh => format!(
                "{}{} 次运行；{n} 个{}；对硬件类和未解释的失败与集群其余部分做单侧二项检验，p < {:.1e} 记为可疑（alpha {} / 检验了 {tested} 个）",
                s.since
                    .as_deref()
                    .map(|d| format!("自 {d} 起 "))
                    .unwrap_or_default(),
                s.runs,
                self.fleet_unit(unit),
                s.threshold,
                s.alpha,
            ),
        }
    }
    pub fn fleet_more(self, n: usize) -> String {
        match self.0 {
            Lang::En => format!("({n} more not shown; --format json has all)"),
            Lang::Zh => format!("（另有 {n} 个未显示；--format json 包含全部）"),
        }
    }
    pub fn fleet_no_suspects(self) -> &'static str {
        match self.0 {
            Lang::En => "No suspects.",
            Lang::Zh => "没有可疑对象。",
        }
    }
    pub fn fleet_suspects(self) -> &'static str {
        match self.0 {
            Lang::En => "Suspects:",
            Lang::Zh => "可疑对象：",
        }
    }
    pub fn fleet_suspect(self, u: &crate::report::history::UnitStat, p: &str) -> String {
        match self.0 {
            Lang::En => format!(
                "{}: {} hardware/unexplained failures in {} jobs (expected {:.2} at the fleet's rate {:.4}), p = {p}",
                u.id, u.suspect_failures, u.jobs, u.expected, u.base_rate
            ),
            Lang::Zh => format!(
                "{}：{} 个作业中有 {} 次硬件类/未解释的失败（按集群失败率 {:.4} 期望为 {:.2}），p = {p}",
                u.id, u.jobs, u.suspect_failures, u.base_rate, u.expected
            ),
        }
    }
    // ----- the fleet's page (`report::html::fleet`) -----

    /// The fleet page's heading: runs, failed runs, the window.
    pub fn html_fleet_title(self, runs: u64, failed: u64, since: Option<&str>) -> String {
        match (self.0, since) {
            (Lang::En, Some(d)) => format!("fleet since {d}: {runs} runs, {failed} failed"),
            (Lang::En, None) => format!("fleet: {runs} runs, {failed} failed"),
            (Lang::Zh, Some(d)) => format!("集群（自 {d} 起）：{runs} 次运行，{failed} 次失败"),
            (Lang::Zh, None) => format!("集群：{runs} 次运行，{failed} 次失败"),
        }
    }
    /// Its sections: failures per day, top fingerprints, the heat map, suspects, latest runs.
    pub fn html_fleet_sections(self) -> [&'static str; 5] {
        match self.0 {
            Lang::En => [
                "Failures per day by category",
                "Top fingerprints over time",
                "Hosts and their GPUs against the fleet",
                "Suspects",
                "Latest runs",
            ],
            Lang::Zh => [
                "每天的失败（按类别）",
                "最常见的指纹随时间的分布",
                "各主机及其 GPU 与集群整体的对比",
                "可疑对象",
                "最近的运行",
            ],
        }
    }
    /// The section of the top fingerprints' runs: its heading, and what a run without cited
    /// lines says.
    pub fn html_fleet_top_runs(self) -> (&'static str, &'static str) {
        match self.0 {
            Lang::En => (
                "Runs behind the top fingerprints",
                "(its stored report cites no line)",
            ),
            Lang::Zh => ("最常见指纹背后的运行", "（保存的报告里没有引用的行）"),
        }
    }
    /// How many of a fingerprint's runs are listed.
    pub fn html_fleet_runs_shown(self, shown: usize, total: u64) -> String {
        match self.0 {
            Lang::En => format!("latest {shown} of {total} runs"),
            Lang::Zh => format!("共 {total} 次运行，列出最近 {shown} 次"),
        }
    }
    /// The per-day chart's axes.
    pub fn html_fleet_day_axes(self) -> [&'static str; 2] {
        match self.0 {
            Lang::En => ["day (UTC)", "failed runs"],
            Lang::Zh => ["日期（UTC）", "失败的运行数"],
        }
    }
    /// The legend's entry for the categories without a colour of their own.
    pub fn html_fleet_other(self, n: usize) -> String {
        match self.0 {
            Lang::En => format!("{n} other categor{}", if n == 1 { "y" } else { "ies" }),
            Lang::Zh => format!("其他 {n} 个类别"),
        }
    }
    /// Under the per-day chart when the window has more days than it draws.
    pub fn html_fleet_days_cut(self, shown: usize, from: &str) -> String {
        match self.0 {
            Lang::En => format!(
                "The last {shown} days are drawn, from {from}; --format json has every day."
            ),
            Lang::Zh => {
                format!("只画出了最近 {shown} 天（自 {from} 起）；--format json 包含每一天。")
            }
        }
    }
    /// The top fingerprints' table.
    pub fn html_fleet_top_header(self) -> [&'static str; 8] {
        match self.0 {
            Lang::En => [
                "#",
                "runs",
                "fingerprint",
                "category / title",
                "hosts",
                "first seen",
                "last seen",
                "note",
            ],
            Lang::Zh => [
                "#",
                "运行数",
                "指纹",
                "类别 / 标题",
                "主机数",
                "首次出现",
                "最近出现",
                "备注",
            ],
        }
    }
    /// The heat map's two column headings: the host itself, then its GPUs.
    pub fn html_fleet_heat_columns(self) -> [&'static str; 2] {
        match self.0 {
            Lang::En => ["host", "its GPUs (by UUID)"],
            Lang::Zh => ["主机", "其 GPU（按 UUID）"],
        }
    }
    /// A heat-map cell's tooltip.
    pub fn html_fleet_cell(
        self,
        what: &str,
        k: u64,
        jobs: u64,
        ratio: f64,
        p: Option<&str>,
        suspect: bool,
    ) -> String {
        let p = p.map(|p| format!(", p = {p}")).unwrap_or_default();
        match self.0 {
            Lang::En => format!(
                "{what}: {k} hardware/unexplained failure{} in {jobs} run{} ({ratio:.1}× the fleet's rate){p}{}",
                s(k),
                s(jobs),
                if suspect { " — suspect" } else { "" }
            ),
            Lang::Zh => format!(
                "{what}：{jobs} 次运行中有 {k} 次硬件类/未解释的失败（集群失败率的 {ratio:.1} 倍）{p}{}",
                if suspect { "——可疑" } else { "" }
            ),
        }
    }
    /// The heat map's legend: the six colours, then the outline of a suspect.
    pub fn html_fleet_heat_legend(self) -> [&'static str; 7] {
        match self.0 {
            Lang::En => [
                "no hardware/unexplained failure",
                "under 0.5× the fleet's rate",
                "0.5–1.5×",
                "1.5–3×",
                "3–6×",
                "6× or more",
                "suspect (the history's test)",
            ],
            Lang::Zh => [
                "没有硬件类/未解释的失败",
                "低于集群失败率的 0.5 倍",
                "0.5–1.5 倍",
                "1.5–3 倍",
                "3–6 倍",
                "6 倍及以上",
                "可疑（历史记录的检验）",
            ],
        }
    }
    /// Under the heat map: the fleet's rates (the scale's 1×) and the hosts not drawn.
    pub fn html_fleet_heat_note(self, host_rate: f64, gpu_rate: f64, more: usize) -> String {
        let more_en = if more > 0 {
            format!(" {more} more hosts are not drawn; --format json has all.")
        } else {
            String::new()
        };
        let more_zh = if more > 0 {
            format!("另有 {more} 台主机未画出；--format json 包含全部。")
        } else {
            String::new()
        };
        match self.0 {
            Lang::En => format!(
                "Colour: a unit's hardware-class and unexplained failures per run against the fleet's ({host_rate:.4} per run for hosts, {gpu_rate:.4} for GPUs). Rows in the order of the test, most significant first; an outlined cell is a suspect of `history hosts` / `history gpus`.{more_en}"
            ),
            Lang::Zh => format!(
                "颜色：每次运行的硬件类和未解释失败率与集群整体的比值（主机为每次运行 {host_rate:.4}，GPU 为 {gpu_rate:.4}）。各行按检验的显著性排序；加粗边框的格子是 `history hosts` / `history gpus` 判定的可疑对象。{more_zh}"
            ),
        }
    }
    /// The latest runs' table.
    pub fn html_fleet_recent_header(self) -> [&'static str; 8] {
        match self.0 {
            Lang::En => [
                "time",
                "job",
                "host",
                "category",
                "title",
                "action",
                "confidence",
                "fingerprint",
            ],
            Lang::Zh => [
                "时间",
                "作业",
                "主机",
                "类别",
                "标题",
                "处理方式",
                "置信度",
                "指纹",
            ],
        }
    }
    /// `history report`'s per-day table in a terminal.
    pub fn fleet_report_days_header(self) -> [&'static str; 4] {
        match self.0 {
            Lang::En => ["day (UTC)", "runs", "failed", "most frequent"],
            Lang::Zh => ["日期（UTC）", "运行数", "失败数", "最常见"],
        }
    }
    /// The fleet page's footer.
    pub fn html_fleet_footer(self, generated: &str, alpha: f64) -> String {
        match self.0 {
            Lang::En => format!(
                "Made by trainwreck history report at {generated} (family-wise false-alarm rate {alpha})."
            ),
            Lang::Zh => {
                format!("由 trainwreck history report 生成于 {generated}（族错误率 {alpha}）。")
            }
        }
    }
    // ----- the diff's page (`report::html::diff`) -----

    /// The diff page's heading: how many differences.
    pub fn html_diff_heading(self, n: usize) -> String {
        match self.0 {
            Lang::En => format!(
                "What changed between the good run and the bad run: {n} difference{}",
                s(n as u64)
            ),
            Lang::Zh => format!("正常运行与失败运行之间的变化：共 {n} 项差异"),
        }
    }
    /// Its sections: the verdict, settings, versions, environment, the runs' progress, the
    /// curves of both runs.
    pub fn html_diff_sections(self) -> [&'static str; 6] {
        match self.0 {
            Lang::En => [
                "Verdict",
                "Changed settings",
                "Changed versions",
                "Changed environment",
                "How far each run got",
                "Both runs step by step",
            ],
            Lang::Zh => [
                "结论",
                "变化的配置",
                "变化的版本",
                "变化的环境",
                "两次运行各自的进度",
                "两次运行的逐步对比",
            ],
        }
    }
    /// The verdict's list of the differences ranked first.
    pub fn html_diff_ranked(self) -> &'static str {
        match self.0 {
            Lang::En => "Ranked first (most likely to explain the failure)",
            Lang::Zh => "排在最前的差异（最可能解释这次失败）",
        }
    }
    /// Between a label and its value in running text (`precision: bf16 → fp16`).
    pub fn html_diff_colon(self) -> &'static str {
        match self.0 {
            Lang::En => ": ",
            Lang::Zh => "：",
        }
    }
    /// The bad run's top finding: its title in the report's language.
    pub fn html_diff_top_title(self, t: &crate::diff::TopFinding) -> &str {
        t.title.get(self.0)
    }
    /// A table of differences: the columns.
    pub fn html_diff_header(self) -> [&'static str; 6] {
        match self.0 {
            Lang::En => [
                "what",
                "good run (before)",
                "bad run (after)",
                "can explain",
                "relevance",
                "where",
            ],
            Lang::Zh => [
                "项目",
                "正常运行（之前）",
                "失败运行（之后）",
                "可解释",
                "相关度",
                "出处",
            ],
        }
    }
    /// A metric on a chart: its name (in the title) and its y axis's label.
    pub fn html_diff_metric(self, metric: &str) -> [&'static str; 2] {
        match (self.0, metric) {
            (Lang::En, "loss") => ["loss", "loss"],
            (Lang::En, "grad_norm") => ["gradient norm", "gradient norm"],
            (Lang::En, "step_time") => ["step time", "seconds per step"],
            (Lang::En, _) => ["value", "value"],
            (Lang::Zh, "loss") => ["损失", "损失"],
            (Lang::Zh, "grad_norm") => ["梯度范数", "梯度范数"],
            (Lang::Zh, "step_time") => ["每步耗时", "每步耗时（秒）"],
            (Lang::Zh, _) => ["数值", "数值"],
        }
    }
    /// A chart's title: the metric by step, both runs and their points.
    pub fn html_diff_chart_title(self, metric: &str, good: usize, bad: usize) -> String {
        let [m, _] = self.html_diff_metric(metric);
        match self.0 {
            Lang::En => format!(
                "{m} by step: good run ({good} point{}) and bad run ({bad} point{})",
                s(good as u64),
                s(bad as u64)
            ),
            Lang::Zh => {
                format!("{m}随步数的变化：正常运行（{good} 个点）与失败运行（{bad} 个点）")
            }
        }
    }
    /// A chart's x axis.
    pub fn html_diff_step_axis(self) -> &'static str {
        match self.0 {
            Lang::En => "step",
            Lang::Zh => "步数",
        }
    }
    /// A chart's legend: the good run, the bad run, a value that is not finite.
    pub fn html_diff_legend(self) -> [&'static str; 3] {
        match self.0 {
            Lang::En => [
                "good run",
                "bad run",
                "not finite (NaN, inf): drawn at the top",
            ],
            Lang::Zh => ["正常运行", "失败运行", "非有限值（NaN、inf）：画在顶端"],
        }
    }
    /// The mark where the runs part.
    pub fn html_diff_part_mark(self, step: u64) -> String {
        match self.0 {
            Lang::En => format!("runs part at step {step}"),
            Lang::Zh => format!("第 {step} 步起偏离"),
        }
    }
    /// Under the charts: where each side's points were read.
    pub fn html_diff_curves_note(self, good: &str, bad: &str) -> String {
        let none = |p: &str| {
            if p.is_empty() {
                match self.0 {
                    Lang::En => "no logged steps".to_string(),
                    Lang::Zh => "没有记录步数".to_string(),
                }
            } else {
                p.to_string()
            }
        };
        match self.0 {
            Lang::En => format!(
                "Points read from the good run's {} and the bad run's {}.",
                none(good),
                none(bad)
            ),
            Lang::Zh => format!(
                "数据点读自正常运行的 {} 与失败运行的 {}。",
                none(good),
                none(bad)
            ),
        }
    }
    /// The diff page's footer.
    pub fn html_diff_footer(self, schema: &str, n: usize) -> String {
        match self.0 {
            Lang::En => format!(
                "Made by trainwreck diff ({schema}; --format json lists all {n} difference{}).",
                s(n as u64)
            ),
            Lang::Zh => format!(
                "由 trainwreck diff 生成（{schema}；--format json 会列出全部 {n} 项差异）。"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn chinese_locales_choose_chinese_in_gettext_order() {
        assert_eq!(from_env(env(&[("LANG", "zh_CN.UTF-8")])), Lang::Zh);
        assert_eq!(from_env(env(&[("LANG", "en_US.UTF-8")])), Lang::En);
        assert_eq!(from_env(env(&[])), Lang::En);
        // LC_ALL outranks LANG; LANGUAGE outranks both, unless the locale is C.
        assert_eq!(
            from_env(env(&[("LANG", "zh_CN.UTF-8"), ("LC_ALL", "en_US.UTF-8")])),
            Lang::En
        );
        assert_eq!(
            from_env(env(&[("LC_ALL", "en_US.UTF-8"), ("LANGUAGE", "zh_CN:en")])),
            Lang::Zh
        );
        assert_eq!(
            from_env(env(&[("LC_ALL", "C"), ("LANGUAGE", "zh_CN")])),
            Lang::En
        );
        assert_eq!(
            from_env(env(&[("LC_MESSAGES", "zh_TW.UTF-8"), ("LANG", "en_US")])),
            Lang::Zh
        );
        // An empty variable is as if unset.
        assert_eq!(
            from_env(env(&[("LC_ALL", ""), ("LANG", "zh_CN.UTF-8")])),
            Lang::Zh
        );
    }
}
