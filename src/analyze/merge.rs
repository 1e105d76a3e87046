//! The ranges of one split file joined in order, as one whole read of it would have given:
//! line numbers shifted by the lines before each range, the per-signature cap applied over
//! the whole file, launcher lines read once all ranges are in (a report can straddle an edge).

use super::launch::finish_launch;
use super::{FileResult, MAX_HITS_PER_SIG_FILE};

/// Join the ranges of one file in order: line numbers shifted by the lines before each
/// range, the per-signature cap applied over the whole file.
pub(super) fn merge_segments(parts: Vec<Option<FileResult>>) -> Option<FileResult> {
    let mut parts = parts.into_iter().flatten();
    let mut out = parts.next()?;
    let mut offset = out.lines;
    let mut kept: std::collections::HashMap<(usize, usize), usize> = Default::default();
    for h in &out.hits {
        *kept.entry((h.rule, h.signature)).or_default() += 1;
    }
    for mut p in parts {
        for mut h in p.hits {
            h.line += offset;
            let n = kept.entry((h.rule, h.signature)).or_default();
            if *n >= MAX_HITS_PER_SIG_FILE {
                match out.dropped.iter_mut().find(|(r, _)| *r == h.rule) {
                    Some(e) => e.1 += 1,
                    None => out.dropped.push((h.rule, 1)),
                }
                continue;
            }
            *n += 1;
            out.hits.push(h);
        }
        for (rule, n) in p.dropped {
            match out.dropped.iter_mut().find(|(r, _)| *r == rule) {
                Some(e) => e.1 += n,
                None => out.dropped.push((rule, n)),
            }
        }
        for mut f in p.facts {
            f.line = f.line.map(|l| l + offset);
            out.facts.push(f);
        }
        out.events.append(&mut p.events);
        // A file changed under its ranges says so once, not once per range.
        for w in p.warnings {
            if !out.warnings.contains(&w) {
                out.warnings.push(w);
            }
        }
        out.tail.append_after(p.tail, offset);
        out.last_lines.append(&mut p.last_lines);
        if p.ending.is_some() {
            out.ending = p.ending.take();
        }
        for mut e in p.launch_lines {
            e.1 += offset;
            out.launch_lines.push(e);
        }
        out.changed = p.changed.or(out.changed.take());
        for mut l in p.long_lines {
            l.lineno += offset;
            out.long_lines.push(l);
        }
        out.not_utf8.add(p.not_utf8, offset);
        out.holes.append(p.holes, offset);
        offset += p.lines;
    }
    out.info.lines = offset;
    if out.ranged {
        let path = out.info.path.clone();
        finish_launch(&mut out, &path);
    }
    out.warnings.extend(out.changed.take());
    Some(out)
}
