//! Memory sampled over time, for the report's memory curves: `trainwreck run`'s `samples.csv`
//! (/dev/shm, the cgroup, host MemAvailable, each GPU; one bounded document read into columns;
//! an unknown column is kept under its own name), and the same shape for the GPU memory that
//! the user's own `nvidia-smi` polling recorded (`sources::nvidia_smi` builds those with
//! [`Samples::push`]). [`memories`] says which memory each column is and which fact names its
//! limit, once for every page that draws them, and [`gpu_climbs`] which GPU's curve rose through
//! the whole span (a shape, for a fact). It never decides anything about the run: the limits
//! the curves are drawn against are facts read elsewhere.

use crate::model::{Text, text};

/// A samples file bigger than this is not read (the sampler keeps its rows in the low
/// thousands by doubling its stride, each row under 200 bytes).
pub(crate) const MAX_BYTES: usize = 8 << 20;
/// At most this many rows are kept; past it every other row is dropped, keeping each pair's
/// larger values, as the sampler itself downsamples.
const MAX_ROWS: usize = 4096;

/// One column: its header name and one value per row (`None`: not sampled then).
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    pub values: Vec<Option<u64>>,
}

/// The samples of one run: times in milliseconds since [`Clock`]'s zero.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Samples {
    /// The file they were read from.
    pub path: String,
    /// Whose clock `t_ms` is on.
    pub clock: Clock,
    pub t_ms: Vec<u64>,
    pub columns: Vec<Column>,
}

/// Where `t_ms` counts from.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Clock {
    /// `trainwreck run`'s sampler: since the wrapper started the command; the last sample is
    /// taken when the command ended.
    #[default]
    Command,
    /// A sampler's own wall-clock timestamps (nvidia-smi's `timestamp`, the date line above each
    /// table): since its first sample, printed as `start` and read as `epoch` (Unix seconds,
    /// the time as printed with no zone, as the logs' times are read).
    Wall { start: String, epoch: f64 },
}

impl Samples {
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// One more row, at `t_ms`, with a value for some columns (by name; a new name is a new
    /// column, empty in the rows before). Past `MAX_ROWS` rows every other row is dropped as
    /// [`read`] does.
    pub fn push(&mut self, t_ms: u64, values: &[(String, u64)]) {
        let n = self.t_ms.len();
        self.t_ms.push(t_ms);
        for c in &mut self.columns {
            c.values.push(None);
        }
        for (name, v) in values {
            let i = match self.columns.iter().position(|c| c.name == *name) {
                Some(i) => i,
                None => {
                    self.columns.push(Column {
                        name: name.clone(),
                        values: vec![None; n + 1],
                    });
                    self.columns.len() - 1
                }
            };
            self.columns[i].values[n] = Some(*v);
        }
        if self.t_ms.len() > MAX_ROWS {
            halve(self);
        }
    }
}

/// A memory a samples file can hold.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Memory {
    /// /dev/shm used, against the mount's size.
    Shm,
    /// The cgroup's memory, against its limit.
    Cgroup,
    /// Host memory in use (MemTotal − MemAvailable), against MemTotal.
    Host,
    /// GPU `n`'s memory used, against its total.
    Gpu(String),
}

impl Memory {
    /// `shm`, `cgroup`, `host`, `gpu`: the word the report's labels are chosen by.
    pub fn kind(&self) -> &'static str {
        match self {
            Memory::Shm => "shm",
            Memory::Cgroup => "cgroup",
            Memory::Host => "host",
            Memory::Gpu(_) => "gpu",
        }
    }

    /// The GPU's index, for a GPU's memory.
    pub fn gpu(&self) -> Option<&str> {
        match self {
            Memory::Gpu(n) => Some(n),
            _ => None,
        }
    }

    /// The fact that gives its limit.
    pub fn limit_fact(&self) -> String {
        match self {
            Memory::Shm => "shm.size_bytes".into(),
            Memory::Cgroup => "cgroup.memory_limit_bytes".into(),
            Memory::Host => "host.mem_total_bytes".into(),
            Memory::Gpu(n) => format!("gpu.{n}.memory_total_bytes"),
        }
    }

    /// The fact a snapshot gives its value in (the host's is MemTotal − this one).
    pub fn snapshot_fact(&self) -> String {
        match self {
            Memory::Shm => "shm.used_bytes".into(),
            Memory::Cgroup => "cgroup.memory_current_bytes".into(),
            Memory::Host => "host.mem_available_bytes".into(),
            Memory::Gpu(n) => format!("gpu.{n}.memory_used_bytes"),
        }
    }

    /// The memory a samples column holds, if it is one.
    pub fn of_column(name: &str) -> Option<Memory> {
        match name {
            "shm_used_bytes" => Some(Memory::Shm),
            "cgroup_memory_bytes" => Some(Memory::Cgroup),
            "host_mem_available_bytes" => Some(Memory::Host),
            _ => name
                .strip_prefix("gpu")
                .and_then(|x| x.strip_suffix("_used_bytes"))
                .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                .map(|n| Memory::Gpu(n.to_string())),
        }
    }

    /// The column a sampler writes this memory's values in.
    pub fn column(&self) -> String {
        match self {
            Memory::Shm => "shm_used_bytes".into(),
            Memory::Cgroup => "cgroup_memory_bytes".into(),
            Memory::Host => "host_mem_available_bytes".into(),
            Memory::Gpu(n) => format!("gpu{n}_used_bytes"),
        }
    }
}

/// One memory of a samples file: its values row by row, and its limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub what: Memory,
    pub values: Vec<Option<u64>>,
    pub limit: Option<u64>,
}

/// The memories `s` holds, in the order of its columns, each with its limit as `fact` gives
/// it (by [`Memory::limit_fact`]'s name). The host's is memory in use: MemTotal less each
/// sample's MemAvailable, so only when MemTotal is known.
pub(crate) fn memories(s: &Samples, fact: &dyn Fn(&str) -> Option<u64>) -> Vec<Series> {
    let mut out = Vec::new();
    for c in &s.columns {
        let Some(what) = Memory::of_column(&c.name) else {
            continue;
        };
        let limit = fact(&what.limit_fact());
        let values = match (&what, limit) {
            (Memory::Host, Some(total)) => c
                .values
                .iter()
                .map(|v| v.map(|a| total.saturating_sub(a)))
                .collect(),
            (Memory::Host, None) => continue,
            _ => c.values.clone(),
        };
        out.push(Series {
            what,
            values,
            limit,
        });
    }
    out
}

/// A GPU's memory that rose through the sampled span and never came back down: what is held
/// across steps grows until the card is full.
#[derive(Debug, Clone, PartialEq)]
pub struct Climb {
    /// The GPU's index, as its column names it.
    pub gpu: String,
    /// The highest value of the first quarter of the span, and the highest of all.
    pub from: u64,
    pub to: u64,
}

/// Fewest samples of a GPU for its curve to be judged.
const CLIMB_MIN_SAMPLES: usize = 20;

/// Each GPU whose memory climbed steadily over the samples' span: the span (from the GPU's
/// first sample above zero to its last) cut into four quarters of time, each quarter's highest
/// value above the one before by at least a tenth of the peak, the first at most 60 % of it.
/// A run that loads, settles and then fails has a flat second half and is not a climb.
pub(crate) fn gpu_climbs(s: &Samples) -> Vec<Climb> {
    let mut out = Vec::new();
    for c in &s.columns {
        let Some(Memory::Gpu(gpu)) = Memory::of_column(&c.name) else {
            continue;
        };
        let pts: Vec<(u64, u64)> = s
            .t_ms
            .iter()
            .zip(&c.values)
            .filter_map(|(t, v)| v.map(|v| (*t, v)))
            .skip_while(|(_, v)| *v == 0)
            .collect();
        let (Some(first), Some(last)) = (pts.first(), pts.last()) else {
            continue;
        };
        if pts.len() < CLIMB_MIN_SAMPLES || last.0 <= first.0 {
            continue;
        }
        let span = last.0 - first.0;
        let mut q = [0u64; 4];
        for (t, v) in &pts {
            // Rows out of time order (a hand-joined file) fall in the first quarter, never
            // below it.
            let i = ((t.saturating_sub(first.0).min(span) * 4) / (span + 1)).min(3) as usize;
            q[i] = q[i].max(*v);
        }
        let peak = q[3].max(q[2]).max(q[1]).max(q[0]);
        let step = peak / 10;
        let rising = q.windows(2).all(|w| w[1] >= w[0] + step) && step > 0;
        if rising && q[0] * 10 <= peak * 6 {
            out.push(Climb {
                gpu: gpu.clone(),
                from: q[0],
                to: peak,
            });
        }
    }
    out
}

/// Parse a whole `samples.csv`. A malformed row is skipped and counted; a file with no header
/// or no `t_ms` column is an error the caller turns into a warning.
pub fn read(path: &str, data: &[u8]) -> Result<(Samples, usize), Text> {
    if data.len() > MAX_BYTES {
        return Err(text!(
            "larger than {} MiB: not read",
            "大于 {} MiB：未读取",
            MAX_BYTES >> 20
        ));
    }
    let text = String::from_utf8_lossy(data);
    let mut lines = text.lines();
    let header: Vec<&str> = match lines.next() {
        Some(h) => h.split(',').map(str::trim).collect(),
        None => return Err(text!("empty", "文件为空")),
    };
    if header.first() != Some(&"t_ms") {
        return Err(text!(
            "no t_ms column first: not a trainwreck samples file",
            "第一列不是 t_ms：不是 trainwreck 的采样文件"
        ));
    }
    let mut s = Samples {
        path: path.to_string(),
        clock: Clock::Command,
        t_ms: Vec::new(),
        columns: header[1..]
            .iter()
            .map(|n| Column {
                name: n.to_string(),
                values: Vec::new(),
            })
            .collect(),
    };
    let mut bad = 0;
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let Some(t) = cells
            .first()
            .and_then(|c| c.parse::<u64>().ok())
            .filter(|_| cells.len() == header.len())
        else {
            bad += 1;
            continue;
        };
        s.t_ms.push(t);
        for (c, cell) in s.columns.iter_mut().zip(&cells[1..]) {
            c.values.push(cell.parse().ok());
        }
        if s.t_ms.len() > MAX_ROWS {
            halve(&mut s);
        }
    }
    Ok((s, bad))
}

/// Every other row dropped: each pair keeps its later time and its larger values (a spike
/// survives; host MemAvailable keeps its smaller value, its extreme).
fn halve(s: &mut Samples) {
    let n = s.t_ms.len() / 2;
    s.t_ms = (0..n).map(|i| s.t_ms[2 * i + 1]).collect();
    for c in &mut s.columns {
        let low = c.name.contains("available");
        c.values = (0..n)
            .map(|i| match (c.values[2 * i], c.values[2 * i + 1]) {
                (Some(a), Some(b)) => Some(if low { a.min(b) } else { a.max(b) }),
                (a, b) => a.or(b),
            })
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu_curve(values: &[u64]) -> Samples {
        let mut s = Samples::default();
        for (i, v) in values.iter().enumerate() {
            s.push(i as u64 * 1000, &[(Memory::Gpu("0".into()).column(), *v)]);
        }
        s
    }

    #[test]
    fn a_steady_climb_is_one_and_a_load_then_a_plateau_is_not() {
        // Idle at the start, then a gigabyte a second until 60 GB.
        let mut climb = vec![0; 5];
        climb.extend((1..=60).map(|g| g << 30));
        let c = gpu_climbs(&gpu_curve(&climb));
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].gpu.as_str(), c[0].to), ("0", 60 << 30));
        assert!(c[0].from <= 16 << 30, "{c:?}");
        // Loaded in ten seconds, then flat (with noise) for fifty.
        let mut plateau: Vec<u64> = (1..=10).map(|g| g * (4 << 30)).collect();
        plateau.extend((0..50).map(|i| (40 << 30) + (i % 3) * (1 << 28)));
        assert!(gpu_climbs(&gpu_curve(&plateau)).is_empty());
        // Too few samples to judge.
        assert!(gpu_climbs(&gpu_curve(&climb[..15])).is_empty());
        // Times out of order are read, not a panic.
        let mut s = gpu_curve(&climb);
        s.t_ms.swap(10, 40);
        let _ = gpu_climbs(&s);
    }

    #[test]
    fn reads_the_samplers_columns_and_gpus() {
        let csv = "t_ms,shm_used_bytes,cgroup_memory_bytes,cgroup_oom_kill,host_mem_available_bytes,gpu0_used_bytes,gpu1_used_bytes\n\
                   0,0,100,0,900,,\n\
                   100,4096,120,0,880,10,20\n\
                   garbage\n\
                   200,8192,,0,870,11,21\n";
        let (s, bad) = read("run/samples.csv", csv.as_bytes()).unwrap();
        assert_eq!(bad, 1);
        assert_eq!(s.t_ms, vec![0, 100, 200]);
        assert_eq!(
            s.column("shm_used_bytes").unwrap().values,
            vec![Some(0), Some(4096), Some(8192)]
        );
        assert_eq!(
            s.column("cgroup_memory_bytes").unwrap().values,
            vec![Some(100), Some(120), None]
        );
        assert_eq!(
            s.column("gpu1_used_bytes").unwrap().values,
            vec![None, Some(20), Some(21)]
        );
    }

    #[test]
    fn a_long_file_is_halved_keeping_the_extremes() {
        let mut csv = String::from("t_ms,shm_used_bytes,host_mem_available_bytes\n");
        for i in 0..(MAX_ROWS as u64 + 2) {
            let spike: u64 = if i == 1001 { 1 << 30 } else { i };
            let low: u64 = if i == 2001 { 7 } else { 1 << 40 };
            csv.push_str(&format!("{},{spike},{low}\n", i * 10));
        }
        let (s, _) = read("samples.csv", csv.as_bytes()).unwrap();
        assert!(s.t_ms.len() <= MAX_ROWS, "{}", s.t_ms.len());
        let shm = &s.column("shm_used_bytes").unwrap().values;
        assert!(shm.contains(&Some(1 << 30)), "the spike survives");
        let avail = &s.column("host_mem_available_bytes").unwrap().values;
        assert!(avail.contains(&Some(7)), "the low point survives");
    }

    /// Each column is the memory its name says, against the fact naming its limit; the host's
    /// is drawn as memory in use, and only when MemTotal is known.
    #[test]
    fn memories_name_each_column_and_its_limit() {
        let csv = "t_ms,shm_used_bytes,cgroup_oom_kill,host_mem_available_bytes,gpu1_used_bytes,gpux_used_bytes\n\
                   0,10,0,900,5,1\n";
        let (s, _) = read("samples.csv", csv.as_bytes()).unwrap();
        let fact = |n: &str| match n {
            "shm.size_bytes" => Some(64),
            "host.mem_total_bytes" => Some(1000),
            _ => None,
        };
        let m = memories(&s, &fact);
        let whats: Vec<&Memory> = m.iter().map(|x| &x.what).collect();
        assert_eq!(
            whats,
            [&Memory::Shm, &Memory::Host, &Memory::Gpu("1".into())]
        );
        assert_eq!(
            (m[0].limit, m[1].limit, m[2].limit),
            (Some(64), Some(1000), None)
        );
        assert_eq!(
            m[1].values,
            vec![Some(100)],
            "in use: MemTotal − MemAvailable"
        );
        assert_eq!(m[2].what.limit_fact(), "gpu.1.memory_total_bytes");
        let no_total = memories(&s, &|_| None);
        assert!(no_total.iter().all(|x| x.what != Memory::Host));
    }

    /// Rows pushed one by one: a column first seen late is empty before, one not given in a
    /// row is empty there, and a long series is halved like a long file.
    #[test]
    fn pushed_rows_line_up_by_column() {
        let mut s = Samples::default();
        s.push(0, &[("gpu0_used_bytes".into(), 1)]);
        s.push(1000, &[("gpu1_used_bytes".into(), 7)]);
        s.push(
            2000,
            &[("gpu0_used_bytes".into(), 3), ("gpu1_used_bytes".into(), 8)],
        );
        assert_eq!(s.t_ms, vec![0, 1000, 2000]);
        assert_eq!(
            s.column("gpu0_used_bytes").unwrap().values,
            vec![Some(1), None, Some(3)]
        );
        assert_eq!(
            s.column("gpu1_used_bytes").unwrap().values,
            vec![None, Some(7), Some(8)]
        );
        for i in 3..(MAX_ROWS as u64 + 10) {
            s.push(i * 1000, &[("gpu0_used_bytes".into(), i)]);
        }
        assert!(s.t_ms.len() <= MAX_ROWS, "{}", s.t_ms.len());
        assert_eq!(
            s.t_ms.len(),
            s.column("gpu1_used_bytes").unwrap().values.len()
        );
    }

    #[test]
    fn not_a_samples_file_is_an_error() {
        assert!(read("x.csv", b"a,b\n1,2\n").is_err());
        assert!(read("x.csv", b"").is_err());
    }
}
