//! nvidia-smi in its three shapes (default table, `-q`, `--query-*` CSV) → per-GPU facts keyed by
//! the GPU index, driver versions, processes holding memory, and `ERR!`/device-handle failures.
//! Polled output (`--query-gpu=timestamp,index,memory.used,… -l N`, or `nvidia-smi -l N`'s tables
//! each under its date line) is also read as GPU memory over time ([`Polls`] → `FactOut::samples`),
//! for the report's curves; every poll's facts are kept as before.
//! Layouts differ between driver versions: cells that cannot be read are warned about, never filled in.

use super::samples::{Clock, Memory, Samples};
use super::units::{epoch_from_iso, iso_from_ctime, size_1024};
use super::{Event, EventKind, FactOut, FactParser};
use crate::fact_names;
use crate::model::{Fact, FactValue, text};
use regex::Regex;
use std::collections::BTreeMap;
use std::sync::OnceLock;

fn bus_id_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]").expect("bus id re")
    })
}

fn gpu(
    out: &mut FactOut,
    idx: u32,
    suffix: &'static str,
    v: impl Into<FactValue>,
    lineno: u64,
    line: &str,
) {
    out.facts
        .push(Fact::new(fact_names::gpu(idx, suffix), v).at(lineno, line));
}

/// `21711MiB`, `21711 MiB`, or a bare number in `unit` → bytes.
fn mib(s: &str, unit: u64) -> Option<u64> {
    size_1024(s.trim(), unit)
}

/// What nvidia-smi prints where it has no value: an absence, never a value to store.
fn is_absent(v: &str) -> bool {
    let v = v.trim().trim_matches(['[', ']']).trim();
    v.is_empty()
        || v.eq_ignore_ascii_case("N/A")
        || v.eq_ignore_ascii_case("Not Supported")
        || v.eq_ignore_ascii_case("Not Available")
        || v.eq_ignore_ascii_case("Unknown")
}

fn is_error_value(v: &str) -> bool {
    let v = v.trim().trim_matches(['[', ']']);
    v == "ERR!" || v.eq_ignore_ascii_case("Unknown Error") || v.eq_ignore_ascii_case("GPU is lost")
}

/// Lines any nvidia-smi output can carry instead of (or before) its data.
fn failure_line(
    lineno: u64,
    line: &str,
    out: &mut FactOut,
    handle_errors: &mut (i64, u64, String),
) -> bool {
    let t = line.trim();
    if t.starts_with("Unable to determine the device handle") {
        handle_errors.0 += 1;
        if handle_errors.1 == 0 {
            handle_errors.1 = lineno;
            handle_errors.2 = t.to_string();
        }
        let mut ev = Event {
            kind: EventKind::SmiError,
            line: lineno,
            text: t.to_string(),
            ..Event::default()
        };
        if let Some(m) = bus_id_re().find(t) {
            ev.fields.insert("bus_id".into(), m.as_str().into());
        }
        out.events.push(ev);
        return true;
    }
    if t.starts_with("NVIDIA-SMI has failed")
        || t.starts_with("Failed to initialize NVML")
        || t == "No devices were found"
    {
        out.facts
            .push(Fact::new("nvidia_smi.failed", t).at(lineno, line));
        return true;
    }
    false
}

fn finish_handle_errors(out: &mut FactOut, h: &(i64, u64, String)) {
    if h.0 > 0 {
        out.facts
            .push(Fact::new("nvidia_smi.device_handle_error", h.0).at(h.1, &h.2));
    }
}

/// A poll's time as nvidia-smi prints it in the CSV's `timestamp` column
/// (`2026/06/03 12:00:01.123`): Unix seconds, read as printed (no zone).
fn csv_time(v: &str) -> Option<f64> {
    let (date, time) = v.trim().split_once(' ')?;
    epoch_from_iso(&format!("{}T{}", date.replace('/', "-"), time.trim()))
}

/// The date line nvidia-smi prints above each table (`Mon Jun  3 12:00:01 2026`).
fn table_time(line: &str) -> Option<f64> {
    iso_from_ctime(line.trim()).and_then(|t| epoch_from_iso(&t))
}

/// GPU memory used, poll by poll: one row of [`Samples`] per poll, on the polls' own clock.
/// Two polls at least make a series; one is a snapshot, already its facts.
#[derive(Default)]
struct Polls {
    /// The first poll's time, as printed and read.
    start: Option<(String, f64)>,
    /// The open poll: its time (Unix seconds) and the memory used of each GPU in it.
    current: Option<(f64, Vec<(u32, u64)>)>,
    samples: Samples,
}

impl Polls {
    /// A poll taken at `epoch` (printed as `printed`) begins.
    fn begin(&mut self, printed: &str, epoch: f64) {
        self.close();
        self.start
            .get_or_insert_with(|| (printed.trim().to_string(), epoch));
        self.current = Some((epoch, Vec::new()));
    }

    /// The open poll's time, if one is open.
    fn open_at(&self) -> Option<f64> {
        self.current.as_ref().map(|c| c.0)
    }

    /// Whether the open poll already has GPU `gpu` (its next row is the next poll's).
    fn has(&self, gpu: u32) -> bool {
        self.current
            .as_ref()
            .is_some_and(|(_, v)| v.iter().any(|(g, _)| *g == gpu))
    }

    fn used(&mut self, gpu: u32, bytes: u64) {
        if let Some((_, v)) = &mut self.current {
            v.retain(|(g, _)| *g != gpu);
            v.push((gpu, bytes));
        }
    }

    fn close(&mut self) {
        let (Some((epoch, gpus)), Some((_, first))) = (self.current.take(), &self.start) else {
            return;
        };
        if gpus.is_empty() {
            return;
        }
        // Milliseconds since the first poll, never backwards (files joined out of order).
        let t = ((epoch - first) * 1000.0).round().max(0.0) as u64;
        let t = t.max(self.samples.t_ms.last().copied().unwrap_or(0));
        let row: Vec<(String, u64)> = gpus
            .iter()
            .map(|(g, b)| (Memory::Gpu(g.to_string()).column(), *b))
            .collect();
        self.samples.push(t, &row);
    }

    fn finish(&mut self, out: &mut FactOut) {
        self.close();
        let Some((start, epoch)) = self.start.take() else {
            return;
        };
        if self.samples.t_ms.len() >= 2 {
            let mut s = std::mem::take(&mut self.samples);
            s.clock = Clock::Wall { start, epoch };
            out.samples = Some(s);
        }
    }
}

/// Per-GPU process tallies, emitted once at the end.
#[derive(Default)]
struct Procs(BTreeMap<u32, (i64, u64, bool, u64, String)>);

impl Procs {
    fn add(
        &mut self,
        out: &mut FactOut,
        idx: Option<u32>,
        pid: &str,
        name: &str,
        mem: Option<u64>,
        (lineno, line): (u64, &str),
    ) {
        let mut ev = Event {
            kind: EventKind::GpuProcess,
            line: lineno,
            text: line.trim().to_string(),
            pid: pid.parse().ok(),
            ..Event::default()
        };
        ev.fields.insert("name".into(), name.into());
        if let Some(i) = idx {
            ev.fields.insert("gpu".into(), i.to_string());
        }
        if let Some(m) = mem {
            ev.fields.insert("memory_bytes".into(), m.to_string());
        }
        out.events.push(ev);
        if let Some(i) = idx {
            let e = self
                .0
                .entry(i)
                .or_insert((0, 0, false, lineno, line.trim().to_string()));
            e.0 += 1;
            if let Some(m) = mem {
                e.1 += m;
                e.2 = true;
            }
        }
    }
    fn finish(&mut self, out: &mut FactOut) {
        for (i, (n, bytes, any_mem, lineno, text)) in std::mem::take(&mut self.0) {
            gpu(out, i, "processes", n, lineno, &text);
            if any_mem {
                gpu(out, i, "process_memory_bytes", bytes, lineno, &text);
            }
        }
    }
}

// ---------------------------------------------------------------- default table

#[derive(Default, PartialEq)]
enum Section {
    #[default]
    Head,
    Gpus,
    Mig,
    Processes,
}

#[derive(Default)]
pub struct TableParser {
    section: Section,
    current: Option<u32>,
    current_has_memory: bool,
    procs: Procs,
    handle_errors: (i64, u64, String),
    saw_table: bool,
    polls: Polls,
}

impl TableParser {
    fn close_gpu(&mut self, out: &mut FactOut) {
        if let Some(i) = self.current.take()
            && !self.current_has_memory
        {
            out.warnings.push(text!(
                "nvidia-smi: GPU {i}: no memory row found (unknown table layout?)",
                "nvidia-smi：GPU {i}：没有找到显存行（未知的表格布局？）"
            ));
        }
        self.current_has_memory = false;
    }

    /// A row of the GPU section: a GPU's first row (index, name, bus id, ECC) opens it; its
    /// second (temperature, memory, utilization) belongs to the GPU open.
    fn gpu_row(&mut self, cells: &[&str], (lineno, line): (u64, &str), out: &mut FactOut) {
        let first = cells.first().copied().unwrap_or("");
        let idx = first
            .split_whitespace()
            .next()
            .and_then(|s| s.parse::<u32>().ok());
        let bus = cells.get(1).and_then(|c| bus_id_re().find(c));
        if let (Some(i), Some(bus)) = (idx, bus) {
            self.close_gpu(out);
            self.current = Some(i);
            let toks: Vec<&str> = first.split_whitespace().collect();
            // Name sits between the index and the persistence mode (`On`/`Off`).
            let end = if toks.len() > 2 && matches!(toks.last(), Some(&"On") | Some(&"Off")) {
                toks.len() - 1
            } else {
                toks.len()
            };
            if end > 1 {
                gpu(out, i, "name", toks[1..end].join(" "), lineno, line);
            }
            gpu(out, i, "bus_id", bus.as_str(), lineno, line);
            if let Some(n) = cells.get(2).and_then(|e| e.parse::<u64>().ok()) {
                gpu(out, i, "ecc_uncorrected_volatile", n, lineno, line);
            }
            error_cells(out, i, ["name", "bus_id", "ecc"], cells, (lineno, line));
            return;
        }
        let Some(i) = self.current else { return };
        let Some(mem) = cells
            .get(1)
            .filter(|c| c.contains(" / ") && (c.contains("MiB") || c.contains("ERR!")))
        else {
            return;
        };
        self.current_has_memory = true;
        let (used, total) = mem.split_once(" / ").unwrap_or((mem, ""));
        match (mib(used, 1 << 20), mib(total, 1 << 20)) {
            (Some(u), Some(tot)) => {
                gpu(out, i, "memory_used_bytes", u, lineno, line);
                gpu(out, i, "memory_total_bytes", tot, lineno, line);
                self.polls.used(i, u);
            }
            _ => out.warnings.push(text!(
                "nvidia-smi: line {lineno}: GPU {i} memory `{mem}` unreadable",
                "nvidia-smi：第 {lineno} 行：无法解析 GPU {i} 的显存 `{mem}`"
            )),
        }
        let c0: Vec<&str> = cells
            .first()
            .map(|c| c.split_whitespace().collect())
            .unwrap_or_default();
        if let Some(v) = c0
            .iter()
            .find_map(|s| s.strip_suffix('C').and_then(|n| n.parse::<u64>().ok()))
        {
            gpu(out, i, "temperature_c", v, lineno, line);
        }
        if let Some(util) = cells
            .get(2)
            .and_then(|c| c.split_whitespace().next())
            .and_then(|u| u.strip_suffix('%'))
            .and_then(|u| u.parse::<u64>().ok())
        {
            gpu(out, i, "utilization_percent", util, lineno, line);
        }
        let names = ["fan_temp_power", "memory", "utilization"];
        error_cells(out, i, names, cells, (lineno, line));
    }

    /// A row of the processes section: GPU, pid, type, name and memory.
    fn process_row(&mut self, cells: &[&str], (lineno, line): (u64, &str), out: &mut FactOut) {
        let toks: Vec<&str> = cells
            .first()
            .map(|c| c.split_whitespace().collect())
            .unwrap_or_default();
        let Some(idx) = toks.first().and_then(|s| s.parse::<u32>().ok()) else {
            return;
        };
        let Some(ty) = toks
            .iter()
            .position(|s| matches!(*s, "C" | "G" | "C+G" | "M" | "M+C"))
        else {
            out.warnings.push(text!(
                "nvidia-smi: line {lineno}: process row unreadable",
                "nvidia-smi：第 {lineno} 行：无法解析进程行"
            ));
            return;
        };
        let Some(pid) = ty.checked_sub(1).and_then(|p| toks.get(p)) else {
            return;
        };
        let last = toks.last().copied().unwrap_or("");
        let (name_end, mem) = if last.ends_with("MiB") {
            (toks.len() - 1, mib(last, 1 << 20))
        } else if last == "N/A" {
            (toks.len() - 1, None)
        } else {
            (toks.len(), None)
        };
        let name = toks
            .get(ty + 1..name_end)
            .map(|s| s.join(" "))
            .unwrap_or_default();
        self.procs
            .add(out, Some(idx), pid, &name, mem, (lineno, line));
    }
}

/// The driver and CUDA versions a table's header line states.
fn table_versions(t: &str, (lineno, line): (u64, &str), out: &mut FactOut) {
    for (key, name) in [
        ("Driver Version:", "version.driver"),
        ("CUDA Version:", "version.cuda_driver"),
    ] {
        if let Some(pos) = t.find(key)
            && let Some(v) = t[pos + key.len()..].split_whitespace().next()
            && !is_absent(v.trim_end_matches('|'))
            && !is_error_value(v.trim_end_matches('|'))
        {
            out.facts
                .push(Fact::new(name, v.trim_end_matches('|')).at(lineno, line));
        }
    }
}

/// The cells of a GPU row that read `ERR!`, named in order, as the GPU's `smi_error`.
fn error_cells(
    out: &mut FactOut,
    i: u32,
    names: [&str; 3],
    cells: &[&str],
    (lineno, line): (u64, &str),
) {
    let bad: Vec<&str> = names
        .iter()
        .zip(cells)
        .filter(|(_, c)| c.contains("ERR!"))
        .map(|(n, _)| *n)
        .collect();
    if !bad.is_empty() {
        gpu(out, i, "smi_error", bad.join(","), lineno, line);
    }
}

impl FactParser for TableParser {
    fn line(&mut self, lineno: u64, line: &str, out: &mut FactOut) {
        if failure_line(lineno, line, out, &mut self.handle_errors) {
            return;
        }
        let t = line.trim();
        if let Some(epoch) = table_time(t) {
            self.polls.begin(t, epoch);
            return;
        }
        if t.contains("NVIDIA-SMI ") && t.contains("Driver Version:") {
            // Another table (`nvidia-smi -l`): its GPUs and processes are its own.
            if self.saw_table {
                self.close_gpu(out);
                self.procs.finish(out);
            }
            self.section = Section::Head;
            self.saw_table = true;
            table_versions(t, (lineno, line), out);
            return;
        }
        if t.starts_with("+-") || t.starts_with("|=") {
            if t.starts_with("|=") && self.section == Section::Head {
                self.section = Section::Gpus;
            }
            return;
        }
        if t.contains("MIG devices:") {
            self.close_gpu(out);
            self.section = Section::Mig;
            return;
        }
        if t.contains("Processes:") {
            self.close_gpu(out);
            self.section = Section::Processes;
            return;
        }
        if !t.starts_with('|') {
            return;
        }
        let cells: Vec<&str> = t.trim_matches('|').split('|').map(str::trim).collect();
        match self.section {
            Section::Gpus => self.gpu_row(&cells, (lineno, line), out),
            Section::Processes => self.process_row(&cells, (lineno, line), out),
            Section::Head | Section::Mig => {}
        }
    }

    fn finish(&mut self, out: &mut FactOut) {
        self.close_gpu(out);
        self.procs.finish(out);
        self.polls.finish(out);
        finish_handle_errors(out, &self.handle_errors);
        if !self.saw_table
            && self.handle_errors.0 == 0
            && !out.facts.iter().any(|f| f.name == "nvidia_smi.failed")
        {
            out.warnings.push(text!(
                "nvidia-smi: no table header found",
                "nvidia-smi：没有找到表头"
            ));
        }
    }
}

// ---------------------------------------------------------------- -q

#[derive(Default)]
pub struct QueryParser {
    /// Open sections: (indent, name).
    stack: Vec<(usize, String)>,
    gpus: i64,
    current: Option<u32>,
    /// ECC sums per (gpu, "uncorrected_volatile", …): (sum, any value read, line, text).
    ecc: BTreeMap<(u32, &'static str), (u64, u64, String)>,
    proc_pid: Option<(String, u64, String)>,
    proc_name: String,
    procs: Procs,
    handle_errors: (i64, u64, String),
}

impl QueryParser {
    fn flush_proc(&mut self, out: &mut FactOut, mem: Option<u64>) {
        if let Some((pid, lineno, text)) = self.proc_pid.take() {
            let name = std::mem::take(&mut self.proc_name);
            self.procs
                .add(out, self.current, &pid, &name, mem, (lineno, &text));
        }
    }

    /// A value of the open GPU's sections, by its section path and key.
    fn gpu_value(
        &mut self,
        i: u32,
        path: &[&str],
        key: &str,
        value: &str,
        (lineno, line): (u64, &str),
        out: &mut FactOut,
    ) {
        let num = || {
            value
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
        };
        let yes = || match value {
            "Yes" => Some(true),
            "No" => Some(false),
            _ => None,
        };
        match (path, key) {
            ([], "Product Name") => gpu(out, i, "name", value, lineno, line),
            // The GPU's identity wherever it moves (`history gpus` counts by it).
            ([], "GPU UUID") if value.starts_with("GPU-") || value.starts_with("MIG-") => {
                gpu(out, i, "uuid", value, lineno, line)
            }
            (["FB Memory Usage"], "Total") => {
                if let Some(b) = mib(value, 1 << 20) {
                    gpu(out, i, "memory_total_bytes", b, lineno, line)
                }
            }
            (["FB Memory Usage"], "Used") => {
                if let Some(b) = mib(value, 1 << 20) {
                    gpu(out, i, "memory_used_bytes", b, lineno, line)
                }
            }
            (["Utilization"], "Gpu" | "GPU") => {
                if let Some(v) = num() {
                    gpu(out, i, "utilization_percent", v, lineno, line)
                }
            }
            (["Temperature"], "GPU Current Temp") => {
                if let Some(v) = num() {
                    gpu(out, i, "temperature_c", v, lineno, line)
                }
            }
            (["ECC Errors", when, rest @ ..], k) if matches!(*when, "Volatile" | "Aggregate") => {
                if let Some(which) = ecc_counter(when, rest.first().copied(), k)
                    && let Some(v) = num()
                {
                    let e =
                        self.ecc
                            .entry((i, which))
                            .or_insert((0, lineno, line.trim().to_string()));
                    e.0 += v;
                }
            }
            (["Retired Pages", ..], "Single Bit ECC") => {
                if let Some(v) = num() {
                    gpu(out, i, "retired_pages_sbe", v, lineno, line)
                }
            }
            (["Retired Pages", ..], "Double Bit ECC") => {
                if let Some(v) = num() {
                    gpu(out, i, "retired_pages_dbe", v, lineno, line)
                }
            }
            (["Retired Pages"], "Pending Page Blacklist" | "Pending") => {
                if let Some(v) = yes() {
                    gpu(out, i, "retired_pages_pending", v, lineno, line)
                }
            }
            (["Remapped Rows"], "Correctable Error") => {
                if let Some(v) = num() {
                    gpu(out, i, "remapped_rows_correctable", v, lineno, line)
                }
            }
            (["Remapped Rows"], "Uncorrectable Error") => {
                if let Some(v) = num() {
                    gpu(out, i, "remapped_rows_uncorrectable", v, lineno, line)
                }
            }
            (["Remapped Rows"], "Pending") => {
                if let Some(v) = yes() {
                    gpu(out, i, "remapped_rows_pending", v, lineno, line)
                }
            }
            (["Remapped Rows"], "Remapping Failure Occurred") => {
                if let Some(v) = yes() {
                    gpu(out, i, "remapped_rows_failure", v, lineno, line)
                }
            }
            (["Processes", ..], "Process ID") => {
                self.flush_proc(out, None);
                self.proc_pid = Some((value.to_string(), lineno, line.trim().to_string()));
            }
            (["Processes", ..], "Name") => self.proc_name = value.to_string(),
            (["Processes", ..], "Used GPU Memory") => {
                let m = mib(value, 1 << 20);
                self.flush_proc(out, m);
            }
            _ => {}
        }
    }
}

/// Which ECC counter a `-q` ECC key sums into: `when` is `Volatile` or `Aggregate`, `sub` the
/// section under it (old layout: `Double Bit`/`Single Bit` with a `Total`; new: `SRAM
/// Uncorrectable …` / `DRAM Correctable` keys).
fn ecc_counter(when: &str, sub: Option<&str>, k: &str) -> Option<&'static str> {
    let uncorrected = k.contains("Uncorrectable") || (sub == Some("Double Bit") && k == "Total");
    let corrected = (k.contains("Correctable") && !k.contains("Uncorrectable"))
        || (sub == Some("Single Bit") && k == "Total");
    match (when, uncorrected, corrected) {
        ("Volatile", true, _) => Some("ecc_uncorrected_volatile"),
        ("Volatile", _, true) => Some("ecc_corrected_volatile"),
        ("Aggregate", true, _) => Some("ecc_uncorrected_aggregate"),
        ("Aggregate", _, true) => Some("ecc_corrected_aggregate"),
        _ => None,
    }
}

impl FactParser for QueryParser {
    fn line(&mut self, lineno: u64, line: &str, out: &mut FactOut) {
        if failure_line(lineno, line, out, &mut self.handle_errors) {
            return;
        }
        let indent = line.len() - line.trim_start().len();
        let t = line.trim();
        if t.is_empty() || t.starts_with("====") {
            return;
        }
        while self.stack.last().is_some_and(|(i, _)| *i >= indent) {
            self.stack.pop();
        }
        let (key, value) = match t
            .split_once(" : ")
            .or_else(|| t.strip_suffix(" :").map(|k| (k, "")))
        {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (t, None),
        };
        let Some(value) = value else {
            if indent == 0
                && let Some(bus) = key.strip_prefix("GPU ")
            {
                self.flush_proc(out, None);
                let i = self.gpus as u32;
                self.gpus += 1;
                self.current = Some(i);
                gpu(out, i, "bus_id", bus.trim(), lineno, line);
            } else {
                self.stack.push((indent, key.to_string()));
            }
            return;
        };
        if is_absent(value) {
            return;
        }
        let Some(i) = self.current else {
            if is_error_value(value) {
                return;
            }
            match key {
                "Driver Version" => out
                    .facts
                    .push(Fact::new("version.driver", value).at(lineno, line)),
                "CUDA Version" => out
                    .facts
                    .push(Fact::new("version.cuda_driver", value).at(lineno, line)),
                _ => {}
            }
            return;
        };
        // The open sections, lent out while the value is read (reading one never opens one).
        let stack = std::mem::take(&mut self.stack);
        let path: Vec<&str> = stack.iter().map(|(_, n)| n.as_str()).collect();
        if is_error_value(value) {
            let what = path
                .iter()
                .chain([&key])
                .copied()
                .collect::<Vec<_>>()
                .join("/");
            gpu(out, i, "smi_error", what, lineno, line);
        } else {
            self.gpu_value(i, &path, key, value, (lineno, line), out);
        }
        drop(path);
        self.stack = stack;
    }

    fn finish(&mut self, out: &mut FactOut) {
        self.flush_proc(out, None);
        for ((i, which), (v, lineno, text)) in std::mem::take(&mut self.ecc) {
            gpu(out, i, which, v, lineno, &text);
        }
        self.procs.finish(out);
        finish_handle_errors(out, &self.handle_errors);
        if self.gpus == 0
            && self.handle_errors.0 == 0
            && !out.facts.iter().any(|f| f.name == "nvidia_smi.failed")
        {
            out.warnings.push(text!(
                "nvidia-smi -q: no GPU section found",
                "nvidia-smi -q：没有找到 GPU 段落"
            ));
        }
    }
}

// ---------------------------------------------------------------- --query-* CSV

#[derive(Debug, Clone, Copy, PartialEq)]
enum CsvCol {
    Index,
    Name,
    BusId,
    MemUsed,
    MemTotal,
    Util,
    Temp,
    Gpu(&'static str),
    GpuBool(&'static str),
    Pid,
    ProcName,
    ProcMem,
    Driver,
    Uuid,
    Timestamp,
    Other,
}

fn csv_col(name: &str) -> CsvCol {
    use CsvCol::*;
    match name {
        "index" => Index,
        "name" | "gpu_name" => Name,
        "pci.bus_id" | "gpu_bus_id" | "bus_id" => BusId,
        "uuid" | "gpu_uuid" => Uuid,
        "memory.used" => MemUsed,
        "memory.total" => MemTotal,
        "utilization.gpu" => Util,
        "temperature.gpu" => Temp,
        "ecc.errors.uncorrected.volatile.total" => Gpu("ecc_uncorrected_volatile"),
        "ecc.errors.uncorrected.aggregate.total" => Gpu("ecc_uncorrected_aggregate"),
        "ecc.errors.corrected.volatile.total" => Gpu("ecc_corrected_volatile"),
        "ecc.errors.corrected.aggregate.total" => Gpu("ecc_corrected_aggregate"),
        "retired_pages.single_bit_ecc.count" | "retired_pages.sbe" => Gpu("retired_pages_sbe"),
        "retired_pages.double_bit.count" | "retired_pages.dbe" => Gpu("retired_pages_dbe"),
        "retired_pages.pending" => GpuBool("retired_pages_pending"),
        "remapped_rows.correctable" => Gpu("remapped_rows_correctable"),
        "remapped_rows.uncorrectable" => Gpu("remapped_rows_uncorrectable"),
        "remapped_rows.pending" => GpuBool("remapped_rows_pending"),
        "remapped_rows.failure" => GpuBool("remapped_rows_failure"),
        "pid" => Pid,
        "process_name" => ProcName,
        "used_gpu_memory" | "used_memory" => ProcMem,
        "driver_version" => Driver,
        "timestamp" => Timestamp,
        _ => Other,
    }
}

#[derive(Default)]
pub struct CsvParser {
    /// Columns with the unit the header gives (`memory.used [MiB]` → MiB).
    cols: Option<Vec<(CsvCol, u64)>>,
    row: u32,
    warned_no_header: bool,
    procs: Procs,
    handle_errors: (i64, u64, String),
    polls: Polls,
}

/// GPUs of one poll are queried within milliseconds; without an `index` column, a row this
/// much later than its poll's first is the next poll's.
const NEXT_POLL_S: f64 = 0.5;

fn is_header(fields: &[&str]) -> bool {
    fields.iter().all(|f| {
        let name = f.split(" [").next().unwrap_or(f);
        !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'.' || b == b'_' || b.is_ascii_digit())
            && name.bytes().any(|b| b.is_ascii_lowercase())
    })
}

impl CsvParser {
    /// A process row (the header has `pid`): one process on a GPU.
    fn process_row(
        &mut self,
        cols: &[(CsvCol, u64)],
        fields: &[&str],
        (lineno, line): (u64, &str),
        out: &mut FactOut,
    ) {
        let get = |c: CsvCol| column(cols, fields, c);
        let mem_unit = cols
            .iter()
            .find(|(k, _)| *k == CsvCol::ProcMem)
            .map_or(1 << 20, |(_, u)| *u);
        let mem = get(CsvCol::ProcMem)
            .and_then(|m| mib(m, if mem_unit == 1 { 1 << 20 } else { mem_unit }));
        let idx = get(CsvCol::Index).and_then(|s| s.parse().ok());
        let mut ev_pid = get(CsvCol::Pid).unwrap_or("").to_string();
        if ev_pid.is_empty() {
            ev_pid = "?".into();
        }
        self.procs.add(
            out,
            idx,
            &ev_pid,
            get(CsvCol::ProcName).unwrap_or(""),
            mem,
            (lineno, line),
        );
        if let (Some(ev), Some(bus)) = (out.events.last_mut(), get(CsvCol::BusId)) {
            ev.fields.insert("bus_id".into(), bus.into());
        }
    }

    /// A polled file (`-l`): each row's timestamp; a row for a GPU the open poll already has,
    /// or (without an index column) one taken well after it, begins the next poll.
    fn poll_of(&mut self, cols: &[(CsvCol, u64)], fields: &[&str]) {
        let at = |c: CsvCol| column(cols, fields, c);
        if let Some((printed, epoch)) = at(CsvCol::Timestamp).and_then(|v| Some((v, csv_time(v)?)))
        {
            let next = match at(CsvCol::Index).and_then(|s| s.parse::<u32>().ok()) {
                Some(i) => self.polls.has(i),
                None => self
                    .polls
                    .open_at()
                    .is_some_and(|t| (epoch - t).abs() >= NEXT_POLL_S),
            };
            if next || self.polls.open_at().is_none() {
                self.polls.begin(printed, epoch);
                self.row = 0;
            }
        }
    }

    /// One cell of GPU `idx`'s row, read as its column says.
    fn gpu_cell(
        &mut self,
        idx: u32,
        (col, unit): (CsvCol, u64),
        v: &str,
        (lineno, line): (u64, &str),
        out: &mut FactOut,
    ) {
        if is_error_value(v) {
            let what = format!("{col:?}").to_lowercase();
            gpu(out, idx, "smi_error", what, lineno, line);
            return;
        }
        if v.starts_with('[') || v == "N/A" {
            return; // [N/A], [Not Supported]
        }
        let number = || {
            v.split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
        };
        match col {
            CsvCol::Name => gpu(out, idx, "name", v, lineno, line),
            CsvCol::BusId => gpu(out, idx, "bus_id", v, lineno, line),
            CsvCol::MemUsed | CsvCol::MemTotal => {
                let unit = if unit == 1 { 1 << 20 } else { unit };
                let name = if col == CsvCol::MemUsed {
                    "memory_used_bytes"
                } else {
                    "memory_total_bytes"
                };
                match mib(v, unit) {
                    Some(b) => {
                        if col == CsvCol::MemUsed {
                            self.polls.used(idx, b);
                        }
                        gpu(out, idx, name, b, lineno, line)
                    }
                    None => out.warnings.push(text!(
                        "nvidia-smi csv: line {lineno}: `{v}` is not a size",
                        "nvidia-smi csv：第 {lineno} 行：`{v}` 不是有效的容量"
                    )),
                }
            }
            CsvCol::Util => {
                if let Some(n) = number() {
                    gpu(out, idx, "utilization_percent", n, lineno, line)
                }
            }
            CsvCol::Temp => {
                if let Some(n) = number() {
                    gpu(out, idx, "temperature_c", n, lineno, line)
                }
            }
            CsvCol::Gpu(name) => {
                if let Some(n) = number() {
                    gpu(out, idx, name, n, lineno, line)
                }
            }
            CsvCol::GpuBool(name) => match v {
                "Yes" => gpu(out, idx, name, true, lineno, line),
                "No" => gpu(out, idx, name, false, lineno, line),
                _ => {}
            },
            CsvCol::Uuid if v.starts_with("GPU-") || v.starts_with("MIG-") => {
                gpu(out, idx, "uuid", v, lineno, line)
            }
            CsvCol::Driver if !is_absent(v) && !is_error_value(v) => out
                .facts
                .push(Fact::new("version.driver", v).at(lineno, line)),
            _ => {}
        }
    }
}

/// The columns a header line names, each with the unit it gives (`memory.used [MiB]` → MiB).
fn header_columns(fields: &[&str]) -> Vec<(CsvCol, u64)> {
    fields
        .iter()
        .map(|f| {
            let (name, unit) = match f.split_once(" [") {
                Some((n, u)) => (n, u.trim_end_matches(']')),
                None => (*f, ""),
            };
            let unit = match unit {
                "MiB" => 1 << 20,
                "GiB" => 1 << 30,
                "KiB" => 1 << 10,
                _ => 1,
            };
            (csv_col(name), unit)
        })
        .collect()
}

/// A row's field under column `c`, when the header has that column.
fn column<'a>(cols: &[(CsvCol, u64)], fields: &[&'a str], c: CsvCol) -> Option<&'a str> {
    cols.iter()
        .position(|(k, _)| *k == c)
        .and_then(|p| fields.get(p).copied())
}

impl FactParser for CsvParser {
    fn line(&mut self, lineno: u64, line: &str, out: &mut FactOut) {
        if failure_line(lineno, line, out, &mut self.handle_errors) {
            return;
        }
        let t = line.trim();
        if t.is_empty() {
            return;
        }
        let fields: Vec<&str> = t.split(',').map(str::trim).collect();
        if self.cols.is_none() && is_header(&fields) {
            self.cols = Some(header_columns(&fields));
            return;
        }
        if self.cols.is_some() && is_header(&fields) {
            return; // the header again (a polled file joined from several)
        }
        let Some(cols) = self.cols.clone() else {
            if !self.warned_no_header {
                self.warned_no_header = true;
                out.warnings.push(
                    text!("nvidia-smi csv: no header line (noheader): the columns are unknown, nothing read", "nvidia-smi csv：没有表头行（noheader）：不知道各列是什么，没有读取任何内容"),
                );
            }
            return;
        };
        if fields.len() != cols.len() {
            out.warnings.push(text!(
                "nvidia-smi csv: line {lineno} has {} fields, the header {}: skipped",
                "nvidia-smi csv：第 {lineno} 行有 {} 个字段，表头有 {} 个：已跳过",
                fields.len(),
                cols.len()
            ));
            return;
        }
        if cols.iter().any(|(k, _)| *k == CsvCol::Pid) {
            self.process_row(&cols, &fields, (lineno, line), out);
            return;
        }
        self.poll_of(&cols, &fields);
        // GPU rows: the index column, or else nvidia-smi's own enumeration order, which is index order.
        let idx = match cols.iter().position(|(k, _)| *k == CsvCol::Index) {
            Some(p) => match fields.get(p).and_then(|s| s.parse::<u32>().ok()) {
                Some(i) => i,
                None => {
                    out.warnings.push(text!(
                        "nvidia-smi csv: line {lineno}: unreadable index",
                        "nvidia-smi csv：第 {lineno} 行：无法解析 GPU 序号"
                    ));
                    return;
                }
            },
            None => self.row,
        };
        self.row += 1;
        for (col, v) in cols.iter().zip(&fields) {
            self.gpu_cell(idx, *col, v, (lineno, line), out);
        }
    }

    fn finish(&mut self, out: &mut FactOut) {
        self.procs.finish(out);
        self.polls.finish(out);
        finish_handle_errors(out, &self.handle_errors);
    }
}

#[cfg(test)]
mod tests {
    use crate::model::FactValue;
    use crate::sources::SourceKind;
    use crate::sources::{FactOut, parse_text};

    fn get<'a>(out: &'a FactOut, name: &str) -> Option<&'a FactValue> {
        out.facts.iter().find(|f| f.name == name).map(|f| &f.value)
    }

    const OLD_TABLE: &str = "\
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 450.51.06    Driver Version: 450.51.06    CUDA Version: 11.0     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  Tesla V100-SXM2...  On   | 00000000:06:00.0 Off |                 ERR! |
| N/A   34C    P0    41W / 300W |  15000MiB / 16160MiB |      0%      Default |
+-------------------------------+----------------------+----------------------+
|   1  Tesla V100-SXM2...  On   | 00000000:07:00.0 Off |                    0 |
|ERR!  ERR!  ERR!    ERR! / ERR!|   ERR! /  ERR!       |    ERR!      Default |
+-------------------------------+----------------------+----------------------+
Unable to determine the device handle for GPU 0000:08:00.0: Unknown Error

+-----------------------------------------------------------------------------+
| Processes:                                                                  |
|  GPU   GI   CI        PID   Type   Process name                  GPU Memory |
|=============================================================================|
|    0   N/A  N/A     12345      C   python                          14990MiB |
+-----------------------------------------------------------------------------+
";

    #[test]
    fn table_from_an_older_driver_with_err_cells() {
        let out = parse_text(SourceKind::NvidiaSmi, "nvidia-smi.txt", OLD_TABLE);
        assert_eq!(
            get(&out, "gpu.0.memory_used_bytes"),
            Some(&FactValue::Int(15000 << 20))
        );
        assert_eq!(
            get(&out, "gpu.0.smi_error"),
            Some(&FactValue::Text("ecc".into()))
        );
        assert_eq!(
            get(&out, "gpu.0.process_memory_bytes"),
            Some(&FactValue::Int(14990 << 20))
        );
        assert_eq!(
            get(&out, "gpu.0.name"),
            Some(&FactValue::Text("Tesla V100-SXM2...".into()))
        );
        assert!(
            get(&out, "gpu.1.memory_used_bytes").is_none(),
            "ERR! is not a number"
        );
        assert!(get(&out, "gpu.1.smi_error").is_some());
        assert_eq!(
            get(&out, "nvidia_smi.device_handle_error"),
            Some(&FactValue::Int(1))
        );
        assert_eq!(
            get(&out, "version.driver"),
            Some(&FactValue::Text("450.51.06".into()))
        );
    }

    #[test]
    fn csv_without_header_reads_nothing_and_says_so() {
        let out = parse_text(
            SourceKind::NvidiaSmiCsv,
            "q.csv",
            "0, NVIDIA H200, 0, 143771\n",
        );
        assert!(out.facts.is_empty());
        assert_eq!(out.warnings.len(), 1);
    }

    #[test]
    fn csv_nounits_takes_the_unit_from_the_header() {
        let out = parse_text(
            SourceKind::NvidiaSmiCsv,
            "q.csv",
            "index, memory.used [MiB], remapped_rows.failure\n3, 21711, Yes\n",
        );
        assert_eq!(
            get(&out, "gpu.3.memory_used_bytes"),
            Some(&FactValue::Int(21711 << 20))
        );
        assert_eq!(
            get(&out, "gpu.3.remapped_rows_failure"),
            Some(&FactValue::Bool(true))
        );
    }

    #[test]
    fn q_with_old_ecc_layout() {
        let q = "Driver Version                      : 418.67\n\nAttached GPUs                       : 1\nGPU 00000000:3B:00.0\n    Product Name                    : Tesla V100\n    FB Memory Usage\n        Total                       : 16130 MiB\n        Used                        : ERR!\n    ECC Errors\n        Volatile\n            Single Bit\n                Device Memory       : 2\n                Total               : 2\n            Double Bit\n                Device Memory       : 1\n                Total               : 1\n    Retired Pages\n        Single Bit ECC              : 0\n        Double Bit ECC              : 3\n        Pending                     : Yes\n";
        let out = parse_text(SourceKind::NvidiaSmiQ, "nvidia-smi-q.txt", q);
        assert_eq!(
            get(&out, "gpu.0.ecc_uncorrected_volatile"),
            Some(&FactValue::Int(1))
        );
        assert_eq!(
            get(&out, "gpu.0.ecc_corrected_volatile"),
            Some(&FactValue::Int(2))
        );
        assert_eq!(
            get(&out, "gpu.0.retired_pages_dbe"),
            Some(&FactValue::Int(3))
        );
        assert_eq!(
            get(&out, "gpu.0.retired_pages_pending"),
            Some(&FactValue::Bool(true))
        );
        assert_eq!(
            get(&out, "gpu.0.smi_error"),
            Some(&FactValue::Text("FB Memory Usage/Used".into()))
        );
        assert!(get(&out, "gpu.0.memory_used_bytes").is_none());
    }

    /// `--query-gpu=timestamp,index,memory.used,memory.total --format=csv -l 1` on two GPUs:
    /// one row per poll of each GPU's memory used, on nvidia-smi's own clock (milliseconds since
    /// its first poll; the GPUs of a poll are a few milliseconds apart), the header printed again
    /// where two files were joined; every row's facts as before.
    #[test]
    fn polled_csv_is_gpu_memory_over_time() {
        let csv = "timestamp, index, memory.used [MiB], memory.total [MiB]\n\
                   2026/06/03 12:00:01.120, 0, 1000 MiB, 81559 MiB\n\
                   2026/06/03 12:00:01.124, 1, 900 MiB, 81559 MiB\n\
                   2026/06/03 12:00:02.121, 0, 30000 MiB, 81559 MiB\n\
                   2026/06/03 12:00:02.125, 1, 950 MiB, 81559 MiB\n\
                   timestamp, index, memory.used [MiB], memory.total [MiB]\n\
                   2026/06/03 12:00:03.130, 0, 81000 MiB, 81559 MiB\n";
        let out = parse_text(SourceKind::NvidiaSmiCsv, "gpu_memory.csv", csv);
        assert!(out.warnings.is_empty(), "{:?}", out.warnings);
        let s = out.samples.expect("a series");
        assert_eq!(s.t_ms, vec![0, 1001, 2010]);
        assert_eq!(
            s.column("gpu0_used_bytes").unwrap().values,
            vec![Some(1000 << 20), Some(30000 << 20), Some(81000 << 20)]
        );
        assert_eq!(
            s.column("gpu1_used_bytes").unwrap().values,
            vec![Some(900 << 20), Some(950 << 20), None]
        );
        match &s.clock {
            crate::sources::samples::Clock::Wall { start, epoch } => {
                assert_eq!(start, "2026/06/03 12:00:01.120");
                assert_eq!(
                    crate::sources::units::iso_from_epoch(*epoch).as_deref(),
                    Some("2026-06-03T12:00:01.120000")
                );
            }
            c => panic!("{c:?}"),
        }
        let used = out
            .facts
            .iter()
            .filter(|f| f.name == "gpu.0.memory_used_bytes")
            .count();
        assert_eq!(used, 3, "every poll's facts");
    }

    /// Without an index column the rows of a poll are its GPUs in order, and a row taken well
    /// after its poll's first begins the next poll (not GPU 2, 3, …). One poll is a snapshot,
    /// no series.
    #[test]
    fn polled_csv_without_index_starts_a_poll_by_time() {
        let csv = "timestamp, memory.used [MiB], memory.total [MiB]\n\
                   2026/06/03 12:00:01.120, 10 MiB, 100 MiB\n\
                   2026/06/03 12:00:01.121, 20 MiB, 100 MiB\n\
                   2026/06/03 12:00:02.120, 30 MiB, 100 MiB\n\
                   2026/06/03 12:00:02.122, 40 MiB, 100 MiB\n";
        let out = parse_text(SourceKind::NvidiaSmiCsv, "gpu_memory.csv", csv);
        let s = out.samples.expect("a series");
        assert_eq!(s.t_ms, vec![0, 1000]);
        assert_eq!(
            s.column("gpu1_used_bytes").unwrap().values,
            vec![Some(20 << 20), Some(40 << 20)]
        );
        assert!(!out.facts.iter().any(|f| f.name.starts_with("gpu.2.")));
        let one = "timestamp, index, memory.used [MiB]\n2026/06/03 12:00:01.120, 0, 10 MiB\n";
        assert!(
            parse_text(SourceKind::NvidiaSmiCsv, "q.csv", one)
                .samples
                .is_none()
        );
    }

    /// `nvidia-smi -l 2`: a table under its date line, again and again. Each table's memory
    /// row is a poll; its processes are its own (not summed over the tables).
    #[test]
    fn repeated_tables_are_gpu_memory_over_time() {
        let table = |date: &str, used: u64| {
            format!(
                "{date}\n\
+-----------------------------------------------------------------------------------------+\n\
| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |\n\
|-----------------------------------------+------------------------+----------------------+\n\
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n\
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |\n\
|=========================================+========================+======================|\n\
|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |\n\
| N/A   31C    P0            120W /  700W |   {used}MiB /  81559MiB |     97%      Default |\n\
+-----------------------------------------+------------------------+----------------------+\n\
\n\
+-----------------------------------------------------------------------------------------+\n\
| Processes:                                                                              |\n\
|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |\n\
|=========================================================================================|\n\
|    0   N/A  N/A            4242      C   python3                               {used}MiB |\n\
+-----------------------------------------------------------------------------------------+\n"
            )
        };
        let text = table("Wed Jun  3 12:00:01 2026", 2000)
            + &table("Wed Jun  3 12:00:03 2026", 40000)
            + &table("Wed Jun  3 12:00:05 2026", 80000);
        let out = parse_text(SourceKind::NvidiaSmi, "nvidia-smi-loop.txt", &text);
        assert!(out.warnings.is_empty(), "{:?}", out.warnings);
        let s = out.samples.expect("a series");
        assert_eq!(s.t_ms, vec![0, 2000, 4000]);
        assert_eq!(
            s.column("gpu0_used_bytes").unwrap().values,
            vec![Some(2000 << 20), Some(40000 << 20), Some(80000 << 20)]
        );
        let procs: Vec<&FactValue> = out
            .facts
            .iter()
            .filter(|f| f.name == "gpu.0.processes")
            .map(|f| &f.value)
            .collect();
        assert_eq!(procs, vec![&FactValue::Int(1); 3], "one process per table");
        // One table, with or without its date line, is a snapshot.
        let one = parse_text(
            SourceKind::NvidiaSmi,
            "nvidia-smi.txt",
            &table("Wed Jun  3 12:00:01 2026", 5),
        );
        assert!(one.samples.is_none());
        assert_eq!(
            get(&one, "gpu.0.memory_used_bytes"),
            Some(&FactValue::Int(5 << 20))
        );
    }

    /// `N/A`, `[Not Supported]` and `ERR!` are absences or error facts, never stored as values.
    #[test]
    fn absent_and_error_fields_are_never_values() {
        let q = "Driver Version                      : N/A\nCUDA Version                        : [Not Supported]\n\nAttached GPUs                       : 1\nGPU 00000000:3B:00.0\n    Product Name                    : NVIDIA H200\n    FB Memory Usage\n        Total                       : 143771 MiB\n        Used                        : [N/A]\n        Free                        : ERR!\n";
        let out = parse_text(SourceKind::NvidiaSmiQ, "nvidia-smi-q.txt", q);
        for f in &out.facts {
            if let FactValue::Text(t) = &f.value {
                assert!(
                    !super::is_absent(t) && !super::is_error_value(t)
                        || f.name.ends_with("smi_error"),
                    "{f:?}"
                );
            }
        }
        assert_eq!(get(&out, "version.driver"), None);
        assert_eq!(get(&out, "version.cuda_driver"), None);
        assert_eq!(get(&out, "gpu.0.memory_used_bytes"), None);
        assert_eq!(
            get(&out, "gpu.0.smi_error"),
            Some(&FactValue::Text("FB Memory Usage/Free".into()))
        );
        let table = "| NVIDIA-SMI 550.54.15     Driver Version: N/A     CUDA Version: ERR!     |\n";
        let out = parse_text(SourceKind::NvidiaSmi, "nvidia-smi.txt", table);
        assert_eq!(get(&out, "version.driver"), None);
        assert_eq!(get(&out, "version.cuda_driver"), None);
    }
}
