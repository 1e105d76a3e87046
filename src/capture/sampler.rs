//! Sampling while the run is alive: /dev/shm usage (statvfs), the cgroup's memory.current and
//! oom_kill count, host MemAvailable (file reads) and per-GPU memory (NVML): peaks and a bounded
//! time series. It must never fork per sample nor stop the run: a failed read leaves a gap,
//! a failed write is reported once.

use super::cgroup::{self, MemoryCgroup};
use super::fact_names;
use super::nvml::{GpuMemory, Nvml};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// Rows written at one stride before the stride doubles: the file grows with the log of the
/// run's length (about 11k rows for a week at 500 ms), and every row keeps the window's extremes.
const ROWS_PER_STRIDE: u64 = 1000;

const TMPFS_MAGIC: i64 = 0x0102_1994;

/// Extremes seen while the run was watched. Field names follow the fact names in `peaks.txt`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Peaks {
    /// Samples taken.
    pub samples: u64,
    pub interval_ms: u64,
    /// /dev/shm used bytes at the first sample (what was there before the run).
    pub shm_start_bytes: Option<u64>,
    pub shm_peak_bytes: Option<u64>,
    pub cgroup_memory_peak_bytes: Option<u64>,
    /// The cgroup's oom_kill count at the first and the last sample.
    pub cgroup_oom_kill_start: Option<u64>,
    pub cgroup_oom_kill_end: Option<u64>,
    pub host_mem_available_min_bytes: Option<u64>,
    /// GPU index (nvidia-smi/NVML order) → highest memory used.
    pub gpu_memory_peak_bytes: BTreeMap<u32, u64>,
}

impl Peaks {
    /// The peaks as catalog facts, in `peaks.txt` order.
    pub fn facts(&self) -> Vec<(String, u64)> {
        let mut v = Vec::new();
        let mut push = |name: &str, x: Option<u64>| {
            if let Some(x) = x {
                v.push((name.to_string(), x));
            }
        };
        push(fact_names::SHM_PEAK_BYTES, self.shm_peak_bytes);
        push(
            fact_names::CGROUP_MEMORY_PEAK_BYTES,
            self.cgroup_memory_peak_bytes,
        );
        push(
            fact_names::HOST_MEM_AVAILABLE_MIN_BYTES,
            self.host_mem_available_min_bytes,
        );
        for (&i, &b) in &self.gpu_memory_peak_bytes {
            v.push((fact_names::gpu_memory_peak_bytes(i), b));
        }
        v
    }

    /// `peaks.txt`: `# ` comment lines for people, then `fact.name: value` lines.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "# trainwreck peaks: extremes seen while the run was watched ({} samples, every {} ms)\n",
            self.samples, self.interval_ms
        );
        if let Some(b) = self.shm_start_bytes {
            s.push_str(&format!("# /dev/shm used at start: {b} bytes\n"));
        }
        if let (Some(a), Some(b)) = (self.cgroup_oom_kill_start, self.cgroup_oom_kill_end) {
            s.push_str(&format!(
                "# cgroup oom_kill count: {a} at start, {b} at end\n"
            ));
        }
        for (name, v) in self.facts() {
            s.push_str(&format!("{name}: {v}\n"));
        }
        s
    }

    /// Read `peaks.txt` back as `(fact name, value)` pairs; comments and malformed lines are
    /// skipped. The one parser of this format, for the analyzer.
    pub fn parse(text: &str) -> Vec<(String, u64)> {
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let (k, v) = l.split_once(':')?;
                Some((k.trim().to_string(), v.trim().parse().ok()?))
            })
            .collect()
    }
}

/// One sample. `None` is a gap (the source is absent or a read failed).
#[derive(Debug, Clone, Default)]
pub(crate) struct Sample {
    pub t_ms: u64,
    pub shm_used: Option<u64>,
    pub cgroup_current: Option<u64>,
    pub cgroup_oom_kill: Option<u64>,
    pub mem_available: Option<u64>,
    pub gpus: Vec<GpuMemory>,
}

pub(crate) struct Sampler {
    shm: Option<CString>,
    cgroup_current: Option<PathBuf>,
    cgroup_events: Option<PathBuf>,
    nvml: Option<Nvml>,
    gpu_indices: Vec<u32>,
    buf: Vec<u8>,
    cur: Sample,
    pub peaks: Peaks,
    /// Set when a peak moved since the last `take_dirty`.
    dirty: bool,
    series: Series,
}

impl Sampler {
    /// Set up every source once; `notes` receives one line per source saying how it is
    /// sampled or why it is not.
    pub fn new(interval_ms: u64, series_path: &Path, notes: &mut Vec<String>) -> Sampler {
        let shm = match statfs_type("/dev/shm") {
            Some(TMPFS_MAGIC) => {
                notes.push("shm: /dev/shm sampled with statvfs".into());
                CString::new("/dev/shm").ok()
            }
            Some(t) => {
                notes.push(format!(
                    "shm: /dev/shm is not a tmpfs (f_type {t:#x}): not sampled"
                ));
                None
            }
            None => {
                notes.push("shm: /dev/shm not present: not sampled".into());
                None
            }
        };
        let (cgroup_current, cgroup_events) = match cgroup::locate() {
            Ok(cg) => cgroup_files(&cg, notes),
            Err(why) => {
                notes.push(format!("cgroup: not sampled: {why}"));
                (None, None)
            }
        };
        let nvml = match Nvml::load() {
            Ok(n) => {
                notes.push(format!(
                    "gpu: {} GPUs sampled through NVML (dlopen libnvidia-ml.so.1, nvmlDeviceGetMemoryInfo_v2)",
                    n.device_count()
                ));
                Some(n)
            }
            Err(why) => {
                notes.push(format!("gpu: not present: {why}"));
                None
            }
        };
        let mut gpus = Vec::new();
        if let Some(n) = &nvml {
            n.sample(&mut gpus);
        }
        let gpu_indices: Vec<u32> = gpus.iter().map(|g| g.index).collect();
        let series = Series::create(series_path, &gpu_indices);
        Sampler {
            shm,
            cgroup_current,
            cgroup_events,
            nvml,
            gpu_indices,
            buf: Vec::with_capacity(8192),
            cur: Sample {
                gpus,
                ..Sample::default()
            },
            peaks: Peaks {
                interval_ms,
                ..Peaks::default()
            },
            dirty: false,
            series,
        }
    }

    /// Take one sample at `t_ms` since the start; update peaks and the series.
    pub fn sample(&mut self, t_ms: u64) {
        let s = &mut self.cur;
        s.t_ms = t_ms;
        s.shm_used = self.shm.as_deref().and_then(statvfs_used);
        s.cgroup_current = self
            .cgroup_current
            .as_deref()
            .and_then(|p| read_into(p, &mut self.buf).ok())
            .and_then(|t| t.trim().parse().ok());
        s.cgroup_oom_kill = self
            .cgroup_events
            .as_deref()
            .and_then(|p| read_into(p, &mut self.buf).ok())
            .and_then(|t| keyed_value(t, "oom_kill"));
        s.mem_available = read_into(Path::new("/proc/meminfo"), &mut self.buf)
            .ok()
            .and_then(|t| keyed_value(t, "MemAvailable:"))
            .map(|kb| kb * 1024);
        if let Some(n) = &self.nvml {
            n.sample(&mut s.gpus);
        }

        let p = &mut self.peaks;
        let before = (
            p.shm_peak_bytes,
            p.cgroup_memory_peak_bytes,
            p.host_mem_available_min_bytes,
        );
        if p.samples == 0 {
            p.shm_start_bytes = s.shm_used;
            p.cgroup_oom_kill_start = s.cgroup_oom_kill;
        }
        p.samples += 1;
        p.shm_peak_bytes = max_opt(p.shm_peak_bytes, s.shm_used);
        p.cgroup_memory_peak_bytes = max_opt(p.cgroup_memory_peak_bytes, s.cgroup_current);
        p.host_mem_available_min_bytes = min_opt(p.host_mem_available_min_bytes, s.mem_available);
        if s.cgroup_oom_kill.is_some() {
            p.cgroup_oom_kill_end = s.cgroup_oom_kill;
        }
        let mut gpu_moved = false;
        for g in &s.gpus {
            let e = p.gpu_memory_peak_bytes.entry(g.index).or_insert(0);
            if g.used > *e {
                *e = g.used;
                gpu_moved = true;
            }
        }
        let after = (
            p.shm_peak_bytes,
            p.cgroup_memory_peak_bytes,
            p.host_mem_available_min_bytes,
        );
        self.dirty |= gpu_moved || before != after;
        self.series.push(&self.cur, &self.gpu_indices);
    }

    /// Did a peak move since the last call?
    pub fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    /// Flush the partial window of the series; the first write error, if any.
    pub fn finish(&mut self) -> Option<String> {
        self.series.finish(&self.gpu_indices);
        self.series.error.take()
    }

    /// A write error of the series not yet reported.
    pub fn take_write_error(&mut self) -> Option<String> {
        self.series.error.take()
    }
}

fn cgroup_files(cg: &MemoryCgroup, notes: &mut Vec<String>) -> (Option<PathBuf>, Option<PathBuf>) {
    let cur = cg.current_file();
    let ev = cg.events_file();
    let cur = if std::fs::read(&cur).is_ok() {
        Some(cur)
    } else {
        None
    };
    let ev = if std::fs::read(&ev).is_ok() {
        Some(ev)
    } else {
        None
    };
    notes.push(format!(
        "cgroup: usage from {}, oom_kill from {}",
        cur.as_deref()
            .map_or("(unreadable)".into(), |p| p.display().to_string()),
        ev.as_deref()
            .map_or("(unreadable)".into(), |p| p.display().to_string()),
    ));
    (cur, ev)
}

fn max_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn min_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Read a small /proc or /sys file into a reused buffer.
fn read_into<'a>(path: &Path, buf: &'a mut Vec<u8>) -> io::Result<&'a str> {
    buf.clear();
    File::open(path)?.read_to_end(buf)?;
    std::str::from_utf8(buf).map_err(io::Error::other)
}

/// The number after `key` on the line that starts with it (`oom_kill 3`, `MemAvailable: 12 kB`).
fn keyed_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?;
        if !rest.starts_with([' ', '\t']) && !key.ends_with(':') {
            return None;
        }
        rest.split_whitespace().next()?.parse().ok()
    })
}

fn statvfs_used(path: &std::ffi::CStr) -> Option<u64> {
    // SAFETY: statvfs fills a struct we own from a NUL-terminated path.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut s) } != 0 {
        return None;
    }
    Some((s.f_blocks as u64).saturating_sub(s.f_bfree as u64) * s.f_frsize as u64)
}

fn statfs_type(path: &str) -> Option<i64> {
    let c = CString::new(path).ok()?;
    // SAFETY: statfs fills a struct we own from a NUL-terminated path.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    #[allow(clippy::unnecessary_cast)]
    Some(s.f_type as i64)
}

/// `samples.csv`, downsampled as it grows: each row holds the extremes of its window (max of
/// usage, min of available memory), so a short spike survives downsampling.
struct Series {
    out: Option<File>,
    error: Option<String>,
    stride: u64,
    rows_at_stride: u64,
    window: Option<Sample>,
    in_window: u64,
    line: String,
}

impl Series {
    fn create(path: &Path, gpus: &[u32]) -> Series {
        let mut s = Series {
            out: None,
            error: None,
            stride: 1,
            rows_at_stride: 0,
            window: None,
            in_window: 0,
            line: String::with_capacity(256),
        };
        match File::create(path) {
            Ok(f) => {
                s.out = Some(f);
                let mut h = String::from(
                    "t_ms,shm_used_bytes,cgroup_memory_bytes,cgroup_oom_kill,host_mem_available_bytes",
                );
                for i in gpus {
                    h.push_str(&format!(",gpu{i}_used_bytes"));
                }
                h.push('\n');
                s.write(h.as_bytes());
            }
            Err(e) => s.error = Some(format!("{}: {e}", path.display())),
        }
        s
    }

    fn push(&mut self, x: &Sample, gpus: &[u32]) {
        match &mut self.window {
            None => self.window = Some(x.clone()),
            Some(w) => {
                w.t_ms = x.t_ms;
                w.shm_used = max_opt(w.shm_used, x.shm_used);
                w.cgroup_current = max_opt(w.cgroup_current, x.cgroup_current);
                w.cgroup_oom_kill = max_opt(w.cgroup_oom_kill, x.cgroup_oom_kill);
                w.mem_available = min_opt(w.mem_available, x.mem_available);
                for g in &x.gpus {
                    if let Some(wg) = w.gpus.iter_mut().find(|wg| wg.index == g.index) {
                        wg.used = wg.used.max(g.used);
                    } else {
                        w.gpus.push(*g);
                    }
                }
            }
        }
        self.in_window += 1;
        if self.in_window >= self.stride {
            self.emit(gpus);
            self.rows_at_stride += 1;
            if self.rows_at_stride >= ROWS_PER_STRIDE {
                self.stride *= 2;
                self.rows_at_stride = 0;
            }
        }
    }

    fn finish(&mut self, gpus: &[u32]) {
        if self.in_window > 0 {
            self.emit(gpus);
        }
    }

    fn emit(&mut self, gpus: &[u32]) {
        let Some(w) = self.window.take() else { return };
        self.in_window = 0;
        let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        line.push_str(&w.t_ms.to_string());
        for v in [
            w.shm_used,
            w.cgroup_current,
            w.cgroup_oom_kill,
            w.mem_available,
        ] {
            line.push(',');
            line.push_str(&opt(v));
        }
        for i in gpus {
            line.push(',');
            line.push_str(&opt(w.gpus.iter().find(|g| g.index == *i).map(|g| g.used)));
        }
        line.push('\n');
        self.write(line.as_bytes());
        self.line = line;
    }

    /// Unbuffered on purpose: if the wrapper itself is killed, the rows so far are on disk.
    fn write(&mut self, bytes: &[u8]) {
        if let Some(f) = &mut self.out
            && let Err(e) = f.write_all(bytes)
        {
            self.error = Some(format!("samples.csv: {e}"));
            self.out = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_values_from_proc_and_cgroup_files() {
        let meminfo = "MemTotal:       16384 kB\nMemAvailable:    8192 kB\n";
        assert_eq!(keyed_value(meminfo, "MemAvailable:"), Some(8192));
        let events = "low 0\nhigh 0\nmax 4\noom 2\noom_kill 1\noom_group_kill 0\n";
        assert_eq!(keyed_value(events, "oom_kill"), Some(1));
        let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
        assert_eq!(keyed_value(v1, "oom_kill"), Some(3));
    }

    #[test]
    fn peaks_text_round_trips_through_parse() {
        let mut p = Peaks {
            samples: 3,
            interval_ms: 100,
            shm_peak_bytes: Some(200 << 20),
            host_mem_available_min_bytes: Some(5),
            ..Peaks::default()
        };
        p.gpu_memory_peak_bytes.insert(1, 7);
        let parsed = Peaks::parse(&p.to_text());
        assert_eq!(parsed, p.facts());
        assert_eq!(
            parsed,
            vec![
                ("shm.peak_bytes".to_string(), 200 << 20),
                ("host.mem_available_min_bytes".to_string(), 5),
                ("gpu.1.memory_peak_bytes".to_string(), 7),
            ]
        );
    }

    #[test]
    fn peak_fact_names_are_in_the_catalog() {
        let mut p = Peaks {
            shm_peak_bytes: Some(1),
            cgroup_memory_peak_bytes: Some(1),
            host_mem_available_min_bytes: Some(1),
            ..Peaks::default()
        };
        p.gpu_memory_peak_bytes.insert(0, 1);
        for (name, _) in p.facts() {
            assert!(
                crate::facts::spec_for(&name).is_some(),
                "{name} not in facts::CATALOG"
            );
        }
    }

    #[test]
    fn a_long_series_is_bounded_and_keeps_spikes() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("samples.csv");
        let mut s = Series::create(&path, &[]);
        let n = ROWS_PER_STRIDE * 8;
        for i in 0..n {
            let spike = i == n - 3;
            s.push(
                &Sample {
                    t_ms: i,
                    shm_used: Some(if spike { 999 } else { 1 }),
                    ..Sample::default()
                },
                &[],
            );
        }
        s.finish(&[]);
        let text = std::fs::read_to_string(&path).unwrap();
        let rows = text.lines().count() - 1;
        assert!(rows < (ROWS_PER_STRIDE * 4) as usize, "{rows} rows");
        assert!(text.lines().any(|l| l.split(',').nth(1) == Some("999")));
    }

    #[test]
    fn sampling_reads_this_machine_without_panicking() {
        let t = tempfile::tempdir().unwrap();
        let mut notes = Vec::new();
        let mut s = Sampler::new(100, &t.path().join("samples.csv"), &mut notes);
        s.sample(0);
        s.sample(100);
        assert!(s.finish().is_none());
        assert_eq!(s.peaks.samples, 2);
        assert!(notes.iter().any(|n| n.starts_with("gpu:")), "{notes:?}");
        if Path::new("/proc/meminfo").exists() {
            assert!(s.peaks.host_mem_available_min_bytes.is_some());
        }
    }
}
