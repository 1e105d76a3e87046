//! Kernel logs in every common form (raw, `-H`, `-T`, `--time-format iso`, syslog/kern.log,
//! journalctl `-k` short and ISO, localized months) → OOM-kill, Xid, AER, MCE/EDAC, segfault and
//! NVLink records plus counts. It reads only what a line states: no record is inferred from silence.

use super::units::{epoch_from_iso, is_hms, iso_from_ctime, iso_from_epoch, month_number};
use super::{Event, EventKind, FactOut, FactParser};
use crate::fact_names;
use crate::model::Fact;
use aho_corasick::AhoCorasick;
use regex::Regex;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// How a line's time is written.
#[derive(Debug, Clone, PartialEq)]
enum Stamp {
    /// Seconds since boot (`[ 1843.308145]`).
    Boot(f64),
    /// `-H` delta to the previous line (`[  +0.000316]`): no absolute time.
    Delta,
    /// Wall-clock time, ISO-formatted (`--MM-DDTHH:MM:SS` when the year is not written),
    /// with the uptime a syslog line may carry after `kernel:`.
    Wall { iso: String, uptime: Option<f64> },
    /// No stamp: a continuation of the previous record (NVRM) or a hard-wrapped line.
    None,
}

/// Splits a kernel-log line into its time, host (syslog/journal forms) and message.
fn split_stamp(line: &str) -> (Stamp, Option<&str>, &str) {
    let l = line.trim_end();
    if let Some(rest) = l.strip_prefix('[')
        && let Some(end) = rest.find(']')
    {
        let inside = rest[..end].trim();
        let msg = rest[end + 1..]
            .strip_prefix(' ')
            .unwrap_or(&rest[end + 1..]);
        if inside.starts_with('+') && inside[1..].parse::<f64>().is_ok() {
            return (Stamp::Delta, None, msg);
        }
        if let Ok(s) = inside.parse::<f64>() {
            return (Stamp::Boot(s), None, msg);
        }
        if let Some(iso) = iso_from_ctime(inside) {
            return (Stamp::Wall { iso, uptime: None }, None, msg);
        }
        // `-H` minute header: `[Nov29 20:14]`.
        if let Some((md, hm)) = inside.split_once(' ')
            && md.len() >= 4
            && hm.len() == 5
            && let Some(mon) = md.get(..3).and_then(month_number)
            && let Some(day) = md.get(3..).and_then(|d| d.parse::<u32>().ok())
        {
            let iso = format!("--{mon:02}-{day:02}T{hm}");
            return (Stamp::Wall { iso, uptime: None }, None, msg);
        }
        return (Stamp::None, None, l);
    }
    // `2026-11-29T20:08:03,000000+00:00 msg` (dmesg iso) or `2024-01-10T10:02:13+0000 host kernel: msg`.
    if l.len() > 19 && l.as_bytes().get(4) == Some(&b'-') && l.as_bytes().get(10) == Some(&b'T') {
        let (ts, rest) = l.split_once(' ').unwrap_or((l, ""));
        if epoch_from_iso(ts).is_some() {
            let iso = normalize_iso(ts);
            let (host, msg, uptime) = after_host(rest);
            return (Stamp::Wall { iso, uptime }, host, msg);
        }
    }
    // `Dec  2 10:43:35 host kernel: …`, `12月 17 10:04:41 host kernel: …`.
    let mut it = l.splitn(3, char::is_whitespace);
    if let (Some(mon), Some(_)) = (it.next(), it.next())
        && let Some(mon) = month_number(mon)
    {
        let mut toks = l.split_whitespace();
        let _ = toks.next();
        if let Some(day) = toks.next().and_then(|d| d.parse::<u32>().ok())
            && let Some(hms) = toks.next()
            && hms.get(..8).is_some_and(is_hms)
        {
            // Message starts after the time token.
            let pos = l.find(hms).map(|p| p + hms.len()).unwrap_or(l.len());
            let rest = l[pos..].trim_start();
            let frac = hms.get(8..).unwrap_or("");
            let iso = format!("--{mon:02}-{day:02}T{}{frac}", &hms[..8]);
            let (host, msg, uptime) = after_host(rest);
            return (Stamp::Wall { iso, uptime }, host, msg);
        }
    }
    (Stamp::None, None, l)
}

/// `2026-11-29T20:08:03,000000+00:00` → `2026-11-29T20:08:03.000000`.
fn normalize_iso(ts: &str) -> String {
    let ts = ts.replace(',', ".");
    let end = ts[19..]
        .find(['+', '-', 'Z'])
        .map(|p| p + 19)
        .unwrap_or(ts.len());
    ts[..end].to_string()
}

/// After a syslog/journal time: `host kernel: [123.4] msg` → (host, msg, uptime). A dmesg
/// iso line has no host: its message follows the time directly.
fn after_host(rest: &str) -> (Option<&str>, &str, Option<f64>) {
    let mut parts = rest.splitn(3, ' ');
    let (Some(host), Some(ident)) = (parts.next(), parts.next()) else {
        return (None, rest, None);
    };
    if !ident.ends_with(':') {
        return (None, rest, None);
    }
    let body = parts.next().unwrap_or("");
    if ident == "kernel:" {
        if let Some(inner) = body.strip_prefix('[')
            && let Some(end) = inner.find(']')
            && let Ok(up) = inner[..end].trim().parse::<f64>()
        {
            let msg = inner[end + 1..].trim_start();
            return (Some(host), msg, Some(up));
        }
        return (Some(host), body, None);
    }
    // A user-space daemon's line (systemd-oomd[812]: …): keep its name in the message.
    let start = rest.len() - rest[host.len()..].trim_start().len();
    (Some(host), &rest[start..], None)
}

struct Patterns {
    killed: Regex,
    xid: Regex,
    segfault: Regex,
    trap: Regex,
    edac: Regex,
    oomd: Regex,
    pci: Regex,
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| Patterns {
        killed: Regex::new(r"Killed process (\d+) \(([^)]*)\)(.*)").expect("re"),
        xid: Regex::new(r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f:.]+)\): (\d+)(?:, ?(.*))?").expect("re"),
        segfault: Regex::new(
            r"(\S+)\[(\d+)\]: segfault at ([0-9a-fx]+) ip ([0-9a-fx]+) sp ([0-9a-fx]+) error (\d+)(?: in ([^\[\s]+))?",
        )
        .expect("re"),
        trap: Regex::new(
            r"traps: (\S+)\[(\d+)\] (.*?) ip:([0-9a-f]+) sp:([0-9a-f]+) error:([0-9a-f]+)(?: in ([^\[\s]+))?",
        )
        .expect("re"),
        edac: Regex::new(r"EDAC \S+: (\d+) (CE|UE) ").expect("re"),
        oomd: Regex::new(r"systemd-oomd\[(\d+)\]: Killed (\S+)").expect("re"),
        pci: Regex::new(r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]").expect("re"),
    })
}

/// The words without which no branch of [`DmesgParser::line`] records anything, matched without
/// case over the whole line: a line with none of them (most of any kernel log) costs one
/// automaton pass instead of a stamp parse and a regex search per record kind. Each branch below
/// still checks its own exact words; this is only the gate, and must list every branch's word.
fn worth_parsing() -> &'static AhoCorasick {
    static A: OnceLock<AhoCorasick> = OnceLock::new();
    A.get_or_init(|| {
        AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build([
                "oom-kill:",
                "killed process ",
                "nvrm: xid",
                "segfault at ",
                "traps: ",
                "aer:",
                "edac ",
                "machine check",
                "hardware error",
                "systemd-oomd[",
                "nvlink",
            ])
            .expect("literal automaton")
    })
}

/// Most continuation lines joined to one record, and most bytes of text kept.
const MAX_CONT_LINES: usize = 32;
const MAX_TEXT: usize = 4096;

#[derive(Default)]
pub struct DmesgParser {
    /// Unix time of boot, once a line tells it (a `btime` line, a journal line with uptime and a full date).
    boot_epoch: Option<f64>,
    /// The last record, while unstamped continuation lines may still extend it.
    open_record: Option<usize>,
    cont_lines: usize,
    /// `oom-kill:constraint=…` fields waiting for the `Killed process` line that follows.
    pending_oom: Option<(u64, String, BTreeMap<String, String>)>,
    /// Count fact name → (count, first line, its text).
    counts: BTreeMap<String, (i64, u64, String)>,
}

impl DmesgParser {
    fn count(&mut self, name: String, lineno: u64, line: &str) {
        let e = self
            .counts
            .entry(name)
            .or_insert((0, lineno, line.trim_end().to_string()));
        e.0 += 1;
    }

    fn push(&mut self, out: &mut FactOut, ev: Event) {
        self.open_record = Some(out.events.len());
        self.cont_lines = 0;
        out.events.push(ev);
    }

    fn event(
        kind: EventKind,
        lineno: u64,
        line: &str,
        time: &Option<String>,
        host: Option<&str>,
    ) -> Event {
        Event {
            kind,
            line: lineno,
            text: line.trim_end().to_string(),
            time: time.clone(),
            host: host.map(str::to_string),
            ..Event::default()
        }
    }

    fn oom_kill(
        &mut self,
        lineno: u64,
        line: &str,
        msg: &str,
        time: &Option<String>,
        host: Option<&str>,
        out: &mut FactOut,
    ) {
        let p = patterns();
        let Some(c) = p.killed.captures(msg) else {
            return;
        };
        let mut ev = Self::event(EventKind::OomKill, lineno, line, time, host);
        let pid = c.get(1).map_or("", |m| m.as_str());
        ev.pid = pid.parse().ok();
        ev.fields.insert("pid".into(), pid.into());
        ev.fields
            .insert("name".into(), c.get(2).map_or("", |m| m.as_str()).into());
        let tail = c.get(3).map_or("", |m| m.as_str());
        for (key, field) in [
            ("total-vm:", "total_vm_bytes"),
            ("anon-rss:", "anon_rss_bytes"),
            ("file-rss:", "file_rss_bytes"),
            ("shmem-rss:", "shmem_rss_bytes"),
        ] {
            if let Some(pos) = tail.find(key) {
                let v = &tail[pos + key.len()..];
                let digits: String = v.chars().take_while(char::is_ascii_digit).collect();
                if v[digits.len()..].starts_with("kB")
                    && let Some(b) = digits.parse::<u64>().ok().and_then(|k| k.checked_mul(1024))
                {
                    ev.fields.insert(field.into(), b.to_string());
                }
            }
        }
        let memcg_msg = msg.contains("Memory cgroup out of memory");
        if let Some((_, _, f)) = self
            .pending_oom
            .take_if(|(_, _, f)| f.get("pid").map(String::as_str) == Some(pid))
        {
            for (k, v) in f {
                if k != "pid" {
                    ev.fields.entry(k).or_insert(v);
                }
            }
        }
        if memcg_msg {
            ev.fields
                .entry("constraint".into())
                .or_insert_with(|| "CONSTRAINT_MEMCG".into());
        }
        let scope = if ev.fields.get("constraint").map(String::as_str) == Some("CONSTRAINT_MEMCG") {
            "memcg"
        } else {
            "global"
        };
        ev.fields.insert("scope".into(), scope.into());
        self.count("kernel.oom_kill".into(), lineno, line);
        if scope == "memcg" {
            self.count("kernel.oom_kill_memcg".into(), lineno, line);
        }
        if let Some(rss) = ev
            .fields
            .get("anon_rss_bytes")
            .and_then(|v| v.parse::<u64>().ok())
        {
            out.facts
                .push(Fact::new("kernel.oom_victim_anon_rss_bytes", rss).at(lineno, line));
        }
        if let Some(name) = ev.fields.get("name") {
            out.facts
                .push(Fact::new("kernel.oom_victim", name.as_str()).at(lineno, line));
        }
        self.push(out, ev);
    }

    /// An `oom-kill:` line with no `Killed process` line after it (a cut log) is still a kill.
    fn flush_pending_oom(&mut self, out: &mut FactOut) {
        if let Some((lineno, text, fields)) = self.pending_oom.take() {
            let mut ev = Self::event(EventKind::OomKill, lineno, &text, &None, None);
            ev.pid = fields.get("pid").and_then(|p| p.parse().ok());
            ev.fields = fields;
            if let Some(task) = ev.fields.get("task").cloned() {
                ev.fields.insert("name".into(), task);
            }
            self.count("kernel.oom_kill".into(), lineno, &text);
            out.events.push(ev);
        }
    }
}

/// One stamped kernel-log line as the record readers see it: where it is, its message (after
/// the stamp, host and `kernel: `), its time and host.
struct Record<'a> {
    lineno: u64,
    line: &'a str,
    msg: &'a str,
    time: Option<String>,
    host: Option<&'a str>,
}

impl Record<'_> {
    fn event(&self, kind: EventKind) -> Event {
        DmesgParser::event(kind, self.lineno, self.line, &self.time, self.host)
    }
}

/// A reader of one kind of record: whether the line was its record (read, counted, pushed).
type RecordReader = fn(&mut DmesgParser, &Record, &mut FactOut) -> bool;

/// The record readers, in the order a line is offered to them; the first that takes it ends it.
const RECORDS: [RecordReader; 9] = [
    DmesgParser::oom_kill_header,
    DmesgParser::killed_process,
    DmesgParser::xid,
    DmesgParser::segfault,
    DmesgParser::aer,
    DmesgParser::edac,
    DmesgParser::mce,
    DmesgParser::oomd,
    DmesgParser::nvlink,
];

impl DmesgParser {
    /// A /proc/stat pasted along: its btime anchors boot-relative stamps.
    fn btime(&mut self, lineno: u64, line: &str, out: &mut FactOut) -> bool {
        let Some(b) = line.strip_prefix("btime ") else {
            return false;
        };
        let Ok(b) = b.trim().parse::<f64>() else {
            return false;
        };
        self.boot_epoch = Some(b);
        out.facts.push(
            Fact::new("kernel.boot_time", iso_from_epoch(b).unwrap_or_default()).at(lineno, line),
        );
        true
    }

    /// An unstamped line continuing the open Xid record (NVRM prints its detail on lines of
    /// their own) joins that record's text; a stamped line closes the record.
    fn continues_record(&mut self, stamp: &Stamp, line: &str, out: &mut FactOut) -> bool {
        if *stamp != Stamp::None {
            self.open_record = None;
            return false;
        }
        if let Some(i) = self.open_record
            && self.cont_lines < MAX_CONT_LINES
            && let Some(ev) = out.events.get_mut(i)
            && ev.kind == EventKind::Xid
        {
            self.cont_lines += 1;
            if ev.text.len() < MAX_TEXT {
                ev.text.push(' ');
                ev.text.push_str(line.trim());
            }
            return true;
        }
        false
    }

    /// The time a stamp gives, absolute when boot time is known; a wall-clock stamp with an
    /// uptime beside it anchors boot time for the lines after it.
    fn time_of(&mut self, stamp: &Stamp) -> Option<String> {
        match stamp {
            Stamp::Boot(s) => Some(match self.boot_epoch.and_then(|b| iso_from_epoch(b + s)) {
                Some(iso) => iso,
                None => format!("boot+{s}"),
            }),
            Stamp::Wall { iso, uptime } => {
                if let (Some(up), Some(e)) = (uptime, epoch_from_iso(iso))
                    && self.boot_epoch.is_none()
                {
                    self.boot_epoch = Some(e - up);
                }
                Some(iso.clone())
            }
            Stamp::Delta | Stamp::None => None,
        }
    }

    /// `oom-kill:constraint=…,task=…,pid=…`: held until its `Killed process` line completes it.
    fn oom_kill_header(&mut self, r: &Record, out: &mut FactOut) -> bool {
        let Some(rest) = r.msg.strip_prefix("oom-kill:") else {
            return false;
        };
        self.flush_pending_oom(out);
        let mut f = BTreeMap::new();
        for kv in rest.split(',') {
            if let Some((k, v)) = kv.split_once('=') {
                let k = match k {
                    "oom_memcg" => "memcg",
                    k => k,
                };
                f.insert(k.to_string(), v.to_string());
            }
        }
        self.pending_oom = Some((r.lineno, r.line.trim_end().to_string(), f));
        true
    }

    /// `Killed process N (name) …`, not the reaper's echo of it.
    fn killed_process(&mut self, r: &Record, out: &mut FactOut) -> bool {
        if !r.msg.contains("Killed process ") || r.msg.starts_with("oom_reaper") {
            return false;
        }
        self.oom_kill(r.lineno, r.line, r.msg, &r.time, r.host, out);
        true
    }

    /// `NVRM: Xid (PCI:…): code, pid=…, name=…, message`.
    fn xid(&mut self, r: &Record, out: &mut FactOut) -> bool {
        let Some(c) = patterns().xid.captures(r.msg) else {
            return false;
        };
        let code = c.get(2).map_or("", |m| m.as_str()).to_string();
        let rest = c.get(3).map_or("", |m| m.as_str());
        let mut ev = r.event(EventKind::Xid);
        ev.fields
            .insert("pci".into(), c.get(1).map_or("", |m| m.as_str()).into());
        ev.fields.insert("code".into(), code.clone());
        let mut text = Vec::new();
        for part in rest.split(", ") {
            if let Some(pid) = part.strip_prefix("pid=") {
                ev.pid = pid.parse().ok();
                ev.fields.insert("pid".into(), pid.into());
            } else if let Some(name) = part.strip_prefix("name=") {
                ev.fields.insert("process".into(), name.into());
            } else {
                text.push(part);
            }
        }
        ev.fields.insert("message".into(), text.join(", "));
        self.count(fact_names::xid(&code), r.lineno, r.line);
        self.push(out, ev);
        true
    }

    /// A user-space `segfault at …` or trap line.
    fn segfault(&mut self, r: &Record, out: &mut FactOut) -> bool {
        let p = patterns();
        let Some(c) = p
            .segfault
            .captures(r.msg)
            .or_else(|| p.trap.captures(r.msg))
        else {
            return false;
        };
        let mut ev = r.event(EventKind::Segfault);
        let g = |i: usize| c.get(i).map_or("", |m| m.as_str()).to_string();
        ev.pid = g(2).parse().ok();
        ev.fields.insert("comm".into(), g(1));
        ev.fields.insert("pid".into(), g(2));
        if r.msg.contains(": segfault at ") {
            ev.fields.insert("addr".into(), g(3));
        } else {
            ev.fields.insert("trap".into(), g(3));
        }
        ev.fields.insert("ip".into(), g(4));
        ev.fields.insert("sp".into(), g(5));
        ev.fields.insert("error".into(), g(6));
        if c.get(7).is_some() {
            ev.fields.insert("object".into(), g(7));
        }
        self.count("kernel.segfault".into(), r.lineno, r.line);
        self.push(out, ev);
        true
    }

    /// A PCIe AER error report, with its device and severity.
    fn aer(&mut self, r: &Record, out: &mut FactOut) -> bool {
        let msg = r.msg;
        if !(msg.contains("AER:")
            && (msg.contains("error received") || msg.contains("PCIe Bus Error")))
        {
            return false;
        }
        let mut ev = r.event(EventKind::Aer);
        if let Some(m) = patterns().pci.find(msg) {
            ev.fields.insert("device".into(), m.as_str().into());
        }
        let severity = if let Some(pos) = msg.find("severity=") {
            msg[pos + 9..]
                .split(',')
                .next()
                .unwrap_or("")
                .trim()
                .to_string()
        } else if msg.contains("Uncorrected (Fatal)") {
            "Uncorrected (Fatal)".into()
        } else if msg.contains("Uncorrected (Non-Fatal)") {
            "Uncorrected (Non-Fatal)".into()
        } else if msg.contains("Corrected") {
            "Corrected".into()
        } else {
            String::new()
        };
        if severity.starts_with("Uncorrect") {
            self.count("kernel.pcie_aer_uncorrected".into(), r.lineno, r.line);
        }
        ev.fields.insert("severity".into(), severity);
        self.count("kernel.pcie_aer".into(), r.lineno, r.line);
        self.push(out, ev);
        true
    }

    /// An EDAC memory-controller count (`CE`/`UE`).
    fn edac(&mut self, r: &Record, out: &mut FactOut) -> bool {
        let Some(c) = patterns().edac.captures(r.msg) else {
            return false;
        };
        let mut ev = r.event(EventKind::Mce);
        let kind = c.get(2).map_or("", |m| m.as_str());
        ev.fields.insert("source".into(), "edac".into());
        ev.fields.insert("type".into(), kind.to_lowercase());
        ev.fields
            .insert("count".into(), c.get(1).map_or("", |m| m.as_str()).into());
        self.count(fact_names::kernel_edac(kind == "UE"), r.lineno, r.line);
        self.push(out, ev);
        true
    }

    /// A machine-check line.
    fn mce(&mut self, r: &Record, out: &mut FactOut) -> bool {
        let msg = r.msg;
        if !(msg.contains("Machine check events logged")
            || msg.contains("Machine Check Exception")
            || (msg.contains("[Hardware Error]:") && msg.contains("Machine Check:")))
        {
            return false;
        }
        let mut ev = r.event(EventKind::Mce);
        ev.fields.insert("source".into(), "mce".into());
        self.count("kernel.mce".into(), r.lineno, r.line);
        self.push(out, ev);
        true
    }

    /// A systemd-oomd kill, with its unit.
    fn oomd(&mut self, r: &Record, out: &mut FactOut) -> bool {
        let Some(c) = patterns().oomd.captures(r.msg) else {
            return false;
        };
        let mut ev = r.event(EventKind::OomdKill);
        ev.fields
            .insert("unit".into(), c.get(2).map_or("", |m| m.as_str()).into());
        self.count("systemd.oomd_kill".into(), r.lineno, r.line);
        self.push(out, ev);
        true
    }

    /// An NVLink error or fatal line, with its device when named.
    fn nvlink(&mut self, r: &Record, out: &mut FactOut) -> bool {
        let lower = r.msg.to_ascii_lowercase();
        if !(lower.contains("nvlink") && (lower.contains("error") || lower.contains("fatal"))) {
            return false;
        }
        let mut ev = r.event(EventKind::Nvlink);
        if let Some(m) = patterns().pci.find(r.msg) {
            ev.fields.insert("device".into(), m.as_str().into());
        }
        self.count("kernel.nvlink_error".into(), r.lineno, r.line);
        self.push(out, ev);
        true
    }
}

impl FactParser for DmesgParser {
    fn line(&mut self, lineno: u64, line: &str, out: &mut FactOut) {
        if line.trim().is_empty() || self.btime(lineno, line, out) {
            return;
        }
        // Skipped unread only when nothing could depend on it: no Xid record is open for
        // continuation lines, and the line cannot anchor boot time (a syslog `kernel: [uptime]`).
        if self.open_record.is_none()
            && !(self.boot_epoch.is_none() && line.contains("kernel: ["))
            && !worth_parsing().is_match(line)
        {
            return;
        }
        let (stamp, host, msg) = split_stamp(line);
        let msg = msg.strip_prefix("kernel: ").unwrap_or(msg);
        if self.continues_record(&stamp, line, out) {
            return;
        }
        let record = Record {
            lineno,
            line,
            msg,
            time: self.time_of(&stamp),
            host,
        };
        for read in RECORDS {
            if read(self, &record, out) {
                return;
            }
        }
    }

    fn finish(&mut self, out: &mut FactOut) {
        self.flush_pending_oom(out);
        // Boot time learned late (a btime at the end) still anchors earlier boot-relative stamps.
        if let Some(b) = self.boot_epoch {
            for ev in &mut out.events {
                if let Some(s) = ev.time.as_deref().and_then(|t| t.strip_prefix("boot+"))
                    && let Ok(s) = s.parse::<f64>()
                    && let Some(iso) = iso_from_epoch(b + s)
                {
                    ev.time = Some(iso);
                }
            }
        }
        for (name, (n, line, text)) in std::mem::take(&mut self.counts) {
            out.facts.push(Fact::new(name, n).at(line, &text));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FactValue;
    use crate::sources::SourceKind;
    use crate::sources::parse_text;

    fn count(out: &FactOut, name: &str) -> Option<i64> {
        out.facts
            .iter()
            .find(|f| f.name == name)
            .and_then(|f| f.value.as_i64())
    }

    #[test]
    fn every_stamp_form_is_split() {
        let cases: &[(&str, Stamp, &str)] = &[
            ("[ 1843.308145] hello", Stamp::Boot(1843.308145), "hello"),
            ("[  +0.000316] hello", Stamp::Delta, "hello"),
            (
                "[Mon Oct 29 12:07:39 2018] hello",
                Stamp::Wall {
                    iso: "2018-10-29T12:07:39".into(),
                    uptime: None,
                },
                "hello",
            ),
            (
                "[Nov29 20:14] hello",
                Stamp::Wall {
                    iso: "--11-29T20:14".into(),
                    uptime: None,
                },
                "hello",
            ),
            (
                "Dec  2 10:43:35 node7 kernel: [240314.528856] hello",
                Stamp::Wall {
                    iso: "--12-02T10:43:35".into(),
                    uptime: Some(240314.528856),
                },
                "hello",
            ),
            (
                "12月 17 10:04:41 gpu01 kernel: hello",
                Stamp::Wall {
                    iso: "--12-17T10:04:41".into(),
                    uptime: None,
                },
                "hello",
            ),
            (
                "2024-01-10T10:02:13+0000 node7 kernel: hello",
                Stamp::Wall {
                    iso: "2024-01-10T10:02:13".into(),
                    uptime: None,
                },
                "hello",
            ),
            (
                "2026-11-29T20:08:03,000000+00:00 hello there",
                Stamp::Wall {
                    iso: "2026-11-29T20:08:03.000000".into(),
                    uptime: None,
                },
                "hello there",
            ),
            (
                "NVRM: GPU Board Serial Number: 1",
                Stamp::None,
                "NVRM: GPU Board Serial Number: 1",
            ),
        ];
        for (line, stamp, msg) in cases {
            let (s, _, m) = split_stamp(line);
            assert_eq!(&s, stamp, "{line}");
            assert_eq!(&m, msg, "{line}");
        }
    }

    #[test]
    fn memcg_oom_kill_is_one_record_with_its_constraint() {
        let text = "[  374.925290] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/a/twoom,task_memcg=/a/twoom,task=python3,pid=7365,uid=0\n[  374.925322] Memory cgroup out of memory: Killed process 7365 (python3) total-vm:75160kB, anon-rss:65024kB, file-rss:6360kB, shmem-rss:0kB, UID:0 pgtables:188kB oom_score_adj:0\n";
        let out = parse_text(SourceKind::Dmesg, "dmesg.txt", text);
        assert_eq!(out.events.len(), 1);
        let ev = &out.events[0];
        assert_eq!(ev.pid, Some(7365));
        assert_eq!(ev.fields["memcg"], "/a/twoom");
        assert_eq!(ev.fields["anon_rss_bytes"], (65024u64 * 1024).to_string());
        assert_eq!(ev.fields["scope"], "memcg");
        assert_eq!(ev.time.as_deref(), Some("boot+374.925322"));
        assert_eq!(count(&out, "kernel.oom_kill"), Some(1));
    }

    #[test]
    fn boot_time_makes_wall_clock() {
        let text = "[  374.5] Out of memory: Killed process 1 (x) total-vm:1kB, anon-rss:1kB\nbtime 1795982883\n";
        let out = parse_text(SourceKind::Dmesg, "dmesg.txt", text);
        assert_eq!(
            out.events[0].time.as_deref(),
            Some("2026-11-29T20:14:17.500000")
        );
    }

    #[test]
    fn xid_with_continuation_lines_joined() {
        let text = "[Tue Mar  5 10:00:00 2024] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\nNVRM: GPU at PCI:0000:3b:00: GPU-abc\n[Tue Mar  5 10:00:01 2024] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n";
        let out = parse_text(SourceKind::Dmesg, "kern.log", text);
        assert_eq!(out.events.len(), 2);
        assert_eq!(out.events[0].fields["code"], "79");
        assert_eq!(out.events[0].fields["process"], "python");
        assert!(
            out.events[0]
                .text
                .ends_with("NVRM: GPU at PCI:0000:3b:00: GPU-abc")
        );
        assert_eq!(out.events[1].pid, None);
        assert_eq!(count(&out, "xid.79"), Some(2));
    }

    #[test]
    fn segfault_aer_edac_nvlink_and_oomd() {
        let text = "\
[ 10.0] python[1234]: segfault at 0 ip 00007f00 sp 00007ff0 error 4 in libfoo.so[7f00+1000]
[ 11.0] traps: pt_data_worker[99] general protection fault ip:7f01 sp:7ff1 error:0 in libc.so.6[7f00+1000]
[ 12.0] pcieport 0000:00:03.0: AER: Uncorrected (Fatal) error received: 0000:3b:00.0
[ 12.1] nvidia 0000:3b:00.0: AER: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)
[ 12.2] nvidia 0000:3b:00.0: AER:   device [10de:2335] error status/mask=00000001/0000e000
[ 13.0] EDAC MC0: 1 UE memory read error on CPU_SrcID#0_MC#0_Chan#0_DIMM#0
[ 14.0] NVRM: nvlink: fatal error detected on link 3
Dec  2 10:43:35 node7 systemd-oomd[812]: Killed /user.slice/user-0.slice/session-1.scope due to memory pressure
";
        let out = parse_text(SourceKind::Dmesg, "dmesg", text);
        let kinds: Vec<&str> = out.events.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "segfault",
                "segfault",
                "aer",
                "aer",
                "mce",
                "nvlink",
                "oomd_kill"
            ]
        );
        assert_eq!(out.events[0].fields["object"], "libfoo.so");
        assert_eq!(count(&out, "kernel.segfault"), Some(2));
        assert_eq!(count(&out, "kernel.pcie_aer_uncorrected"), Some(1));
        assert_eq!(count(&out, "kernel.edac_ue"), Some(1));
        assert_eq!(out.events[6].host.as_deref(), Some("node7"));
    }

    #[test]
    fn cut_oom_record_still_counts() {
        let out = parse_text(
            SourceKind::Dmesg,
            "dmesg",
            "[ 1.0] oom-kill:constraint=CONSTRAINT_NONE,task=python,pid=5,uid=0\n",
        );
        assert_eq!(out.events.len(), 1);
        assert_eq!(out.events[0].fields["name"], "python");
        assert!(
            out.facts
                .iter()
                .any(|f| f.name == "kernel.oom_kill" && f.value == FactValue::Int(1))
        );
    }
}
