//! The plan of an analysis: one task per input, except that a big plain-text file is split
//! into byte ranges (so one huge file keeps every thread busy), and the tasks ordered longest
//! first. Opens only what it must sniff to split; reads no lines.

use super::{Engine, SEGMENT_BYTES};
use crate::inputs::Input;
use crate::sources;
use crate::sources::SourceKind;

/// How many bytes of plain scanning one byte read by a line-by-line fact parser costs
/// (for ordering the work).
const PARSED_COST: u64 = 16;

/// One unit of work: a whole input, or one byte range of a big plain-text file.
#[derive(Clone, Copy)]
pub(super) struct Task {
    pub(super) input: usize,
    pub(super) seg: usize,
    /// Byte range and known kind, for a range of a split file.
    pub(super) range: Option<(u64, u64, SourceKind)>,
}

impl Engine<'_> {
    /// Plan the work: big plain-text files are split into ranges (so one huge file keeps
    /// every thread busy), everything else is one task. Biggest tasks first.
    /// Each split file's one open handle is returned beside the plan (by input index).
    pub(super) fn plan(
        &self,
        inputs: &[Input],
        threads: usize,
    ) -> (Vec<Task>, Vec<usize>, Vec<Option<std::fs::File>>) {
        let mut tasks = Vec::new();
        let mut segs = vec![1; inputs.len()];
        let mut handles: Vec<Option<std::fs::File>> = (0..inputs.len()).map(|_| None).collect();
        for (i, input) in inputs.iter().enumerate() {
            // Only a big file is sniffed here (a second open): the rest are opened once, by
            // the worker that reads them.
            let (wanted, seg_bytes) = match self.split_bytes {
                Some(b) => (true, b.max(1)),
                None => (threads > 1, SEGMENT_BYTES),
            };
            let split = (wanted && input.size >= 2 * seg_bytes)
                .then(|| sources::open::splittable(input))
                .flatten();
            if let Some((kind, file)) = split {
                handles[i] = Some(file);
                // A multiple of the thread count: equal ranges then end together.
                let n = input
                    .size
                    .div_ceil(seg_bytes)
                    .next_multiple_of(threads as u64);
                segs[i] = n as usize;
                for k in 0..n {
                    let (a, b) = (input.size * k / n, input.size * (k + 1) / n);
                    tasks.push(Task {
                        input: i,
                        seg: k as usize,
                        range: Some((a, b, kind)),
                    });
                }
            } else {
                tasks.push(Task {
                    input: i,
                    seg: 0,
                    range: None,
                });
            }
        }
        // Longest first, so no thread is left with a long task at the end. A file that a
        // fact parser reads line by line (dmesg, snapshots) costs about as much per byte
        // as sixteen bytes of plain scanning (measured: a 5 MB dmesg 46 ms, logs 1.7 GB/s);
        // its kind is guessed from its name alone here (order only, not correctness).
        let cost = |t: &Task| match t.range {
            Some((a, b, _)) => b - a,
            None => {
                let input = &inputs[t.input];
                let parsed = sources::open::parsed_by_name(&input.display);
                input.size * if parsed { PARSED_COST } else { 1 }
            }
        };
        let mut costed: Vec<(u64, Task)> = tasks.into_iter().map(|t| (cost(&t), t)).collect();
        costed.sort_by_key(|(c, _)| std::cmp::Reverse(*c));
        (costed.into_iter().map(|(_, t)| t).collect(), segs, handles)
    }
}
