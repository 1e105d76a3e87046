//! PyTorch Flight Recorder dumps (`TORCH_NCCL_DUMP_ON_TIMEOUT`): a small, safe pickle reader
//! and the per-rank collective summary the cascade logic needs (last enqueued / completed
//! sequence numbers, which collective each rank ran at each sequence number).
//! It never imports, calls or builds anything but plain data: any opcode that would
//! (GLOBAL, REDUCE, BUILD, …) is an error that becomes a warning. Memory and depth are bounded.

use crate::model::{Text, text};
use std::collections::BTreeMap;

fn underflow() -> Text {
    text!("stack underflow", "栈下溢")
}

/// Dumps bigger than this are not read (a 2000-entry trace is well under 10 MiB).
pub(crate) const MAX_BYTES: usize = crate::limits::FLIGHT_RECORDER_BYTES;
/// At most this many values are built (memo gets copy their values and count again).
const MAX_NODES: usize = 4_000_000;
/// Deepest nesting of MARKs kept open at once.
const MAX_MARKS: usize = 256;

/// A pickled value, restricted to plain data.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    List(Vec<Value>),
    Tuple(Vec<Value>),
    /// Keys kept in insertion order; non-string keys are written as their display form.
    Dict(Vec<(Value, Value)>),
}

impl Value {
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Dict(items) => items
                .iter()
                .find(|(k, _)| matches!(k, Value::Str(s) if s == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Bool(b) => Some(*b as i64),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
    pub fn items(&self) -> &[Value] {
        match self {
            Value::List(v) | Value::Tuple(v) => v,
            _ => &[],
        }
    }
}

/// Interpret a pickle (protocols 0–5, data opcodes only). Errors name the opcode and offset.
pub(crate) fn unpickle(data: &[u8]) -> Result<Value, Text> {
    if data.len() > MAX_BYTES {
        return Err(text!(
            "pickle is {} bytes, more than the {} read",
            "pickle 有 {} 字节，超过了读取上限 {} 字节",
            data.len(),
            MAX_BYTES
        ));
    }
    let mut m = Machine {
        data,
        p: 0,
        stack: Vec::new(),
        marks: Vec::new(),
        memo: BTreeMap::new(),
        nodes: 0,
    };
    loop {
        let at = m.p;
        let op = *m.take(1)?.first().ok_or_else(|| text!("empty", "为空"))?;
        m.nodes += 1;
        if m.nodes > MAX_NODES || m.stack.len() > MAX_NODES {
            return Err(text!(
                "pickle too large (value limit reached)",
                "pickle 过大（达到了值的数量上限）"
            ));
        }
        let v: Option<Value> = match op {
            0x80 => {
                m.take(1)?; // PROTO
                None
            }
            0x95 => {
                m.take(8)?; // FRAME
                None
            }
            b'.' => return m.pop(), // STOP
            b'('
            | b'}'
            | b']'
            | b')'
            | b't'
            | b'l'
            | b'd'
            | 0x85..=0x87
            | b'a'
            | b'e'
            | b's'
            | b'u'
            | b'0' => m.structure(op, at)?,
            b'q' | b'r' | 0x94 | b'h' | b'j' => m.memo_op(op, at)?,
            other => Some(m.scalar(other, at)?),
        };
        if let Some(v) = v {
            m.stack.push(v);
        }
    }
}

/// The pickle machine: the bytes and where it reads, its stack, marks and memo, and how many
/// values it has made (bounded by `MAX_NODES`).
struct Machine<'a> {
    data: &'a [u8],
    p: usize,
    stack: Vec<Value>,
    marks: Vec<usize>,
    memo: BTreeMap<u64, Value>,
    nodes: usize,
}

/// A little-endian unsigned integer.
fn le(b: &[u8]) -> u64 {
    b.iter().rev().fold(0u64, |acc, x| (acc << 8) | *x as u64)
}

/// How many values `v` holds, itself included.
fn size(v: &Value) -> usize {
    match v {
        Value::List(x) | Value::Tuple(x) => 1 + x.iter().map(size).sum::<usize>(),
        Value::Dict(x) => 1 + x.iter().map(|(k, v)| size(k) + size(v)).sum::<usize>(),
        _ => 1,
    }
}

impl<'a> Machine<'a> {
    /// The next `n` bytes.
    fn take(&mut self, n: usize) -> Result<&'a [u8], Text> {
        let end = self.p.checked_add(n).filter(|e| *e <= self.data.len());
        match end {
            Some(e) => {
                let s = &self.data[self.p..e];
                self.p = e;
                Ok(s)
            }
            None => Err(text!(
                "truncated at byte {}",
                "在第 {} 字节处被截断",
                self.p
            )),
        }
    }

    /// The next `n` bytes as a little-endian unsigned integer.
    fn uint(&mut self, n: usize) -> Result<u64, Text> {
        Ok(le(self.take(n)?))
    }

    fn pop(&mut self) -> Result<Value, Text> {
        self.stack.pop().ok_or_else(underflow)
    }

    /// The values pushed since the last MARK.
    fn pop_mark(&mut self) -> Result<Vec<Value>, Text> {
        let m = self
            .marks
            .pop()
            .ok_or_else(|| text!("MARK missing", "缺少 MARK"))?;
        if m > self.stack.len() {
            return Err(text!("MARK past the stack", "MARK 超出了栈"));
        }
        Ok(self.stack.split_off(m))
    }

    /// Marks, containers built and filled, POP: the value to push, if any.
    fn structure(&mut self, op: u8, at: usize) -> Result<Option<Value>, Text> {
        Ok(match op {
            b'(' => {
                if self.marks.len() >= MAX_MARKS {
                    return Err(text!("nesting too deep", "嵌套过深"));
                }
                self.marks.push(self.stack.len());
                None
            }
            b'}' => Some(Value::Dict(Vec::new())),
            b']' => Some(Value::List(Vec::new())),
            b')' => Some(Value::Tuple(Vec::new())),
            b't' => Some(Value::Tuple(self.pop_mark()?)),
            b'l' => Some(Value::List(self.pop_mark()?)),
            b'd' => {
                let items = self.pop_mark()?;
                let mut d = Vec::new();
                let mut it = items.into_iter();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    d.push((k, v));
                }
                Some(Value::Dict(d))
            }
            0x85..=0x87 => {
                let n = (op - 0x84) as usize;
                if self.stack.len() < n {
                    return Err(underflow());
                }
                let items = self.stack.split_off(self.stack.len() - n);
                Some(Value::Tuple(items))
            }
            b'a' => {
                let v = self.pop()?;
                match self.stack.last_mut() {
                    Some(Value::List(l)) => l.push(v),
                    _ => {
                        return Err(text!(
                            "APPEND to a non-list at byte {at}",
                            "第 {at} 字节处的 APPEND 作用于非 list"
                        ));
                    }
                }
                None
            }
            b'e' => {
                let items = self.pop_mark()?;
                match self.stack.last_mut() {
                    Some(Value::List(l)) => l.extend(items),
                    _ => {
                        return Err(text!(
                            "APPENDS to a non-list at byte {at}",
                            "第 {at} 字节处的 APPENDS 作用于非 list"
                        ));
                    }
                }
                None
            }
            b's' | b'u' => {
                let items = if op == b's' {
                    let v = self.pop()?;
                    let k = self.pop()?;
                    vec![k, v]
                } else {
                    self.pop_mark()?
                };
                match self.stack.last_mut() {
                    Some(Value::Dict(d)) => {
                        let mut it = items.into_iter();
                        while let (Some(k), Some(v)) = (it.next(), it.next()) {
                            d.push((k, v));
                        }
                    }
                    _ => {
                        return Err(text!(
                            "SETITEM on a non-dict at byte {at}",
                            "第 {at} 字节处的 SETITEM 作用于非 dict"
                        ));
                    }
                }
                None
            }
            _ => {
                // b'0': POP
                self.pop()?;
                None
            }
        })
    }

    /// MEMOIZE/PUT store the top of the stack; GET pushes a stored value again.
    fn memo_op(&mut self, op: u8, at: usize) -> Result<Option<Value>, Text> {
        if matches!(op, b'q' | b'r' | 0x94) {
            let key = match op {
                b'q' => self.uint(1)?,
                b'r' => self.uint(4)?,
                _ => self.memo.len() as u64,
            };
            let v = self
                .stack
                .last()
                .ok_or_else(|| text!("MEMOIZE on an empty stack", "栈为空时执行了 MEMOIZE"))?
                .clone();
            self.nodes += size(&v);
            self.memo.insert(key, v);
            return Ok(None);
        }
        let key = if op == b'h' {
            self.uint(1)?
        } else {
            self.uint(4)?
        };
        let v = self
            .memo
            .get(&key)
            .ok_or_else(|| {
                text!(
                    "memo {key} unset at byte {at}",
                    "第 {at} 字节处引用的 memo {key} 未设置"
                )
            })?
            .clone();
        self.nodes += size(&v);
        Ok(Some(v))
    }

    /// None, booleans, integers, floats, strings and bytes; any other opcode is refused.
    fn scalar(&mut self, op: u8, at: usize) -> Result<Value, Text> {
        Ok(match op {
            b'N' => Value::None,
            0x88 => Value::Bool(true),
            0x89 => Value::Bool(false),
            b'J' => Value::Int(self.uint(4)? as u32 as i32 as i64),
            b'K' => Value::Int(self.uint(1)? as i64),
            b'M' => Value::Int(self.uint(2)? as i64),
            0x8a | 0x8b => {
                let n = if op == 0x8a {
                    self.uint(1)? as usize
                } else {
                    self.uint(4)? as usize
                };
                let b = self.take(n)?;
                if n > 8 {
                    return Err(text!(
                        "integer of {n} bytes at byte {at}: too large",
                        "第 {at} 字节处的 {n} 字节整数：过大"
                    ));
                }
                let mut v = le(b) as i64;
                if n > 0 && n < 8 && b[n - 1] & 0x80 != 0 {
                    v -= 1i64 << (8 * n);
                }
                Value::Int(v)
            }
            b'G' => {
                let b = self.take(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                Value::Float(f64::from_be_bytes(a))
            }
            b'X' | 0x8c | 0x8d | b'B' | b'C' | 0x8e => {
                let n = match op {
                    0x8c | b'C' => self.uint(1)?,
                    0x8d | 0x8e => self.uint(8)?,
                    _ => self.uint(4)?,
                } as usize;
                let b = self.take(n)?;
                if matches!(op, b'B' | b'C' | 0x8e) {
                    Value::Bytes(b.to_vec())
                } else {
                    Value::Str(String::from_utf8_lossy(b).into_owned())
                }
            }
            other => {
                return Err(text!(
                    "unsupported pickle opcode 0x{other:02x} at byte {at} (only plain data is read)",
                    "第 {at} 字节处是不支持的 pickle 操作码 0x{other:02x}（只读取纯数据）"
                ));
            }
        })
    }
}

/// One collective as a rank recorded it.
#[derive(Debug, Clone, PartialEq)]
pub struct FrEntry {
    pub pg: String,
    pub seq: i64,
    pub op: String,
    pub state: String,
    pub input_sizes: String,
}

/// What one rank's dump says.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FrDump {
    /// From the file name (`nccl_trace_rank_3`), when it has one.
    pub rank: Option<u32>,
    /// Per process group: (last enqueued, last completed) collective sequence numbers.
    pub pg_status: Vec<(String, i64, i64)>,
    /// Ranks of each process group (`pg_config`), as written.
    pub pg_ranks: Vec<(String, Vec<u32>)>,
    pub entries: Vec<FrEntry>,
}

/// Rank number from a dump's file name: the digits at its end.
pub(crate) fn rank_from_name(name: &str) -> Option<u32> {
    let digits: String = name
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits.parse().ok()
}

fn text(v: &Value) -> String {
    match v {
        Value::Str(s) => s.clone(),
        Value::Int(i) => i.to_string(),
        Value::Tuple(x) | Value::List(x) => {
            format!("[{}]", x.iter().map(text).collect::<Vec<_>>().join(", "))
        }
        Value::Float(f) => f.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => String::new(),
    }
}

/// Read a dump's bytes into the summary.
pub fn read(name: &str, data: &[u8]) -> Result<FrDump, Text> {
    let v = unpickle(data)?;
    if !matches!(v, Value::Dict(_)) {
        return Err(text!(
            "not a flight recorder dump (top level is not a dict)",
            "不是 Flight Recorder 转储（顶层不是 dict）"
        ));
    }
    let mut d = FrDump {
        rank: rank_from_name(name),
        ..FrDump::default()
    };
    if let Some(Value::Dict(items)) = v.get("pg_status") {
        for (k, s) in items {
            let enq = s.get("last_enqueued_collective").and_then(Value::as_i64);
            let done = s.get("last_completed_collective").and_then(Value::as_i64);
            d.pg_status
                .push((text(k), enq.unwrap_or(-1), done.unwrap_or(-1)));
        }
    }
    if let Some(Value::Dict(items)) = v.get("pg_config") {
        for (k, c) in items {
            let ranks = c
                .get("ranks")
                .map(|r| match r {
                    Value::Str(s) => s
                        .split(|c: char| !c.is_ascii_digit())
                        .filter_map(|x| x.parse().ok())
                        .collect(),
                    other => other
                        .items()
                        .iter()
                        .filter_map(|x| x.as_i64().map(|i| i as u32))
                        .collect(),
                })
                .unwrap_or_default();
            d.pg_ranks.push((text(k), ranks));
        }
    }
    for e in v.get("entries").map(Value::items).unwrap_or(&[]) {
        if e.get("is_p2p").and_then(Value::as_i64) == Some(1) {
            continue;
        }
        let Some(seq) = e.get("collective_seq_id").and_then(Value::as_i64) else {
            continue;
        };
        let pg = e
            .get("pg_id")
            .map(text)
            .or_else(|| {
                e.get("process_group")
                    .and_then(|p| p.items().first().map(text))
            })
            .unwrap_or_default();
        d.entries.push(FrEntry {
            pg,
            seq,
            op: e
                .get("profiling_name")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .trim_start_matches("nccl:")
                .to_string(),
            state: e.get("state").and_then(Value::as_str).unwrap_or("?").into(),
            input_sizes: e.get("input_sizes").map(text).unwrap_or_default(),
        });
    }
    Ok(d)
}

/// A collective some expected ranks never joined, or ran as a different collective.
#[derive(Debug, Clone, PartialEq)]
pub struct FrGap {
    pub pg: String,
    pub seq: i64,
    pub op: String,
    pub missing: Vec<u32>,
    /// Ranks that recorded a different collective at this sequence number: (rank, op).
    pub mismatched: Vec<(u32, String)>,
}

/// Compare the ranks' dumps: for each sequence number, who recorded it and as what.
/// Only the first gap per process group is reported (later ones follow from it).
pub(crate) fn gaps(dumps: &[FrDump]) -> Vec<FrGap> {
    let mut by_pg: BTreeMap<String, BTreeMap<i64, Vec<(u32, String)>>> = BTreeMap::new();
    let mut ranks_seen: Vec<u32> = Vec::new();
    for d in dumps {
        let Some(r) = d.rank else { continue };
        ranks_seen.push(r);
        for e in &d.entries {
            by_pg
                .entry(e.pg.clone())
                .or_default()
                .entry(e.seq)
                .or_default()
                .push((r, e.op.clone()));
        }
    }
    ranks_seen.sort_unstable();
    ranks_seen.dedup();
    let mut out = Vec::new();
    for (pg, seqs) in by_pg {
        let expected: Vec<u32> = dumps
            .iter()
            .flat_map(|d| d.pg_ranks.iter())
            .find(|(k, _)| *k == pg)
            .map(|(_, r)| r.clone())
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| ranks_seen.clone())
            .into_iter()
            .filter(|r| ranks_seen.contains(r))
            .collect();
        for (seq, who) in seqs {
            let op = who
                .iter()
                .map(|(_, o)| o)
                .fold(BTreeMap::<&String, usize>::new(), |mut m, o| {
                    *m.entry(o).or_default() += 1;
                    m
                })
                .into_iter()
                .max_by_key(|(_, n)| *n)
                .map(|(o, _)| o.clone())
                .unwrap_or_default();
            let missing: Vec<u32> = expected
                .iter()
                .copied()
                .filter(|r| !who.iter().any(|(w, _)| w == r))
                .collect();
            let mismatched: Vec<(u32, String)> =
                who.iter().filter(|(_, o)| *o != op).cloned().collect();
            if !missing.is_empty() || !mismatched.is_empty() {
                out.push(FrGap {
                    pg: pg.clone(),
                    seq,
                    op,
                    missing,
                    mismatched,
                });
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_code() {
        // protocol 2: GLOBAL 'os\nsystem\n' — must be refused, never resolved.
        let p = b"\x80\x02cos\nsystem\nq\x00.";
        let e = unpickle(p).unwrap_err();
        assert!(e.en.contains("unsupported pickle opcode 0x63"), "{e:?}");
        assert!(e.zh.contains("不支持的 pickle 操作码 0x63"), "{e:?}");
    }

    #[test]
    fn plain_data() {
        // pickle.dumps({'a': [1, -2, 300, 70000], 'b': (None, True), 'c': 'x'}, protocol=4)
        let p = b"\x80\x04\x95,\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01a\x94]\x94(K\x01J\xfe\xff\xff\xffM,\x01Jp\x11\x01\x00e\x8c\x01b\x94N\x88\x86\x94\x8c\x01c\x94\x8c\x01x\x94u.";
        let v = unpickle(p).unwrap();
        assert_eq!(
            v.get("a").unwrap().items(),
            &[
                Value::Int(1),
                Value::Int(-2),
                Value::Int(300),
                Value::Int(70000)
            ]
        );
        assert_eq!(
            v.get("b"),
            Some(&Value::Tuple(vec![Value::None, Value::Bool(true)]))
        );
        assert_eq!(v.get("c").and_then(Value::as_str), Some("x"));
    }

    #[test]
    fn garbage_never_panics() {
        for seed in 0u32..2000 {
            let mut x = seed.wrapping_mul(2654435761);
            let bytes: Vec<u8> = (0..64)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    (x & 0xff) as u8
                })
                .collect();
            let _ = unpickle(&bytes);
            let _ = read("nccl_trace_rank_0", &bytes);
        }
    }

    #[test]
    fn corpus_dumps_show_rank0_missing() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/corpus/04_nccl_collective_timeout/run/fr_dumps/"
        );
        let mut dumps = Vec::new();
        for r in 0..2 {
            let name = format!("nccl_trace_rank_{r}");
            let data = std::fs::read(format!("{dir}{name}")).unwrap();
            dumps.push(read(&name, &data).unwrap());
        }
        assert_eq!(dumps[0].pg_status, vec![("0".to_string(), 25, 25)]);
        let g = gaps(&dumps);
        assert_eq!(g.len(), 1);
        assert_eq!((g[0].seq, g[0].op.as_str()), (26, "all_reduce"));
        assert_eq!(g[0].missing, vec![0]);
    }
}
