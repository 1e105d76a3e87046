//! `trainwreck run`'s `samples.csv`: the memory the wrapped run used over time (/dev/shm, the
//! cgroup, host MemAvailable, each GPU), one bounded document read into columns for the
//! report's memory curves. It reads the columns the sampler writes and any `gpuN_used_bytes`;
//! an unknown column is kept under its own name. It never decides anything about the run: the
//! limits the curves are drawn against are facts read elsewhere.

use crate::model::{Text, text};

/// A samples file bigger than this is not read (the sampler keeps its rows in the low
/// thousands by doubling its stride, each row under 200 bytes).
pub const MAX_BYTES: usize = 8 << 20;
/// At most this many rows are kept; past it every other row is dropped, keeping each pair's
/// larger values, as the sampler itself downsamples.
const MAX_ROWS: usize = 4096;

/// One column: its header name and one value per row (`None`: not sampled then).
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    pub values: Vec<Option<u64>>,
}

/// The samples of one run: times in milliseconds since the wrapper started the command.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Samples {
    /// The file they were read from.
    pub path: String,
    pub t_ms: Vec<u64>,
    pub columns: Vec<Column>,
}

impl Samples {
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }
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

    #[test]
    fn not_a_samples_file_is_an_error() {
        assert!(read("x.csv", b"a,b\n1,2\n").is_err());
        assert!(read("x.csv", b"").is_err());
    }
}
