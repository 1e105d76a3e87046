//! Where two runs of one job part: the first logged step at which the bad run's loss, grad
//! norm or step time leaves the good run's band, and the bad run's log lines there.
//!
//! The band at step `s` (docs/diff.md "Band"): take the good run's `WINDOW` logged values
//! nearest to `s` (by step), `lo`/`hi` their min and max, `m = max(hi - lo, 10 % of their
//! median)`; the band is `[lo - m, hi + m]`. A value outside it, or not finite (NaN, inf),
//! leaves the band. Step time is only held to the top of its band (faster is not a failure).
//! Also both runs' logged values by metric ([`Curves`]), numbers only, for a chart of the two
//! on the same axes. Data only; `report::diff` and `report::html::diff` render it.

use super::{Cite, Run, Side, Value};
use crate::sources::trainlog::StepPoint;
use serde::Serialize;

/// Good-run points a band is made of.
pub const WINDOW: usize = 5;
/// The band's least half-width, as a share of the window's median.
pub const MIN_MARGIN: f64 = 0.10;
/// The bad run's first logged steps whose step time is not held to the band: their rate is
/// the start-up's (tqdm's first `s/it` includes loading), not the training's.
pub const WARM_UP_STEPS: usize = 2;
/// Lines of the bad run's log shown from the parting step on.
pub const CONTEXT_LINES: u64 = 4;

#[derive(Debug, Clone, Serialize)]
pub struct Parting {
    /// The step at which the bad run left the band.
    pub step: u64,
    /// Each metric that left the band at that step.
    pub metrics: Vec<Left>,
    /// The bad run's log lines from that step on.
    pub evidence: Vec<Cite>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Left {
    /// `loss`, `grad_norm`, `step_time`.
    pub metric: &'static str,
    pub bad: Value,
    /// The good run's band at that step: `[low, high]` (`low` is 0 for step time).
    pub band: [f64; 2],
}

type Metric = (&'static str, fn(&StepPoint) -> Option<f64>, bool);

/// The metrics compared, with how each is read from a step and whether only its top counts.
pub const METRICS: &[Metric] = &[
    ("loss", |p| p.loss, false),
    ("grad_norm", |p| p.grad_norm, false),
    ("step_time", |p| p.step_time, true),
];

/// The band of `metric` around `step` in the good run's points, if it logged that metric.
pub fn band(good: &[StepPoint], step: u64, get: fn(&StepPoint) -> Option<f64>) -> Option<[f64; 2]> {
    let mut pts: Vec<(u64, f64)> = good
        .iter()
        .filter_map(|p| get(p).filter(|v| v.is_finite()).map(|v| (p.step, v)))
        .collect();
    if pts.is_empty() {
        return None;
    }
    pts.sort_by_key(|(s, _)| s.abs_diff(step));
    let mut w: Vec<f64> = pts.iter().take(WINDOW).map(|(_, v)| *v).collect();
    w.sort_by(f64::total_cmp);
    let (lo, hi, med) = (w[0], w[w.len() - 1], w[w.len() / 2]);
    let m = (hi - lo).max(MIN_MARGIN * med.abs()).max(f64::EPSILON);
    Some([lo - m, hi + m])
}

/// The first step where the bad run leaves the good run's band, when both logged steps.
pub fn parting(good: &Run, bad: &Run) -> Option<Parting> {
    if good.steps.is_empty() || bad.steps.is_empty() {
        return None;
    }
    let mut pts: Vec<&StepPoint> = bad.steps.iter().collect();
    pts.sort_by_key(|p| p.step);
    for (n, p) in pts.into_iter().enumerate() {
        let mut metrics = Vec::new();
        for (name, get, upper_only) in METRICS {
            if *name == "step_time" && n < WARM_UP_STEPS {
                continue;
            }
            let Some(v) = get(p) else { continue };
            let Some([lo, hi]) = band(&good.steps, p.step, *get) else {
                continue;
            };
            let out = !v.is_finite() || v > hi || (!upper_only && v < lo);
            if out {
                metrics.push(Left {
                    metric: name,
                    bad: Value::Num(v),
                    band: [if *upper_only { 0.0 } else { lo }, hi],
                });
            }
        }
        if !metrics.is_empty() {
            return Some(Parting {
                step: p.step,
                metrics,
                evidence: context(bad, p),
            });
        }
    }
    None
}

/// Both runs' logged values of each metric either logged, by step: numbers only (a line's
/// text stays in its log, so nothing but a number reaches a chart). Not part of
/// `trainwreck.diff/1`: the JSON has the parting and the differences, the logs the points.
#[derive(Debug, Clone, Default)]
pub struct Curves {
    /// The log each side's points were read from.
    pub good_path: String,
    pub bad_path: String,
    /// In [`METRICS`] order; only the metrics at least one side logged.
    pub metrics: Vec<Curve>,
}

/// One metric of both runs: `(step, value)` in step order; a value may be NaN or infinite.
#[derive(Debug, Clone, Default)]
pub struct Curve {
    /// `loss`, `grad_norm`, `step_time`.
    pub metric: &'static str,
    pub good: Vec<(u64, f64)>,
    pub bad: Vec<(u64, f64)>,
}

/// The curves of `good` and `bad`, from the steps `parting` compares.
pub fn curves(good: &Run, bad: &Run) -> Curves {
    let points = |run: &Run, get: fn(&StepPoint) -> Option<f64>| {
        let mut v: Vec<(u64, f64)> = run
            .steps
            .iter()
            .filter_map(|p| get(p).map(|x| (p.step, x)))
            .collect();
        v.sort_by_key(|(s, _)| *s);
        v
    };
    let metrics = METRICS
        .iter()
        .map(|(metric, get, _)| Curve {
            metric,
            good: points(good, *get),
            bad: points(bad, *get),
        })
        .filter(|c| !c.good.is_empty() || !c.bad.is_empty())
        .collect();
    Curves {
        good_path: good.steps_path.clone(),
        bad_path: bad.steps_path.clone(),
        metrics,
    }
}

/// The bad run's lines from the parting step's line on (read again from its log).
fn context(bad: &Run, p: &StepPoint) -> Vec<Cite> {
    let mut out = vec![Cite {
        side: Side::Bad,
        path: bad.steps_path.clone(),
        line: Some(p.line),
        text: p.text.clone(),
    }];
    let (inputs, _) = crate::inputs::collect(&bad.paths);
    let Some(input) = inputs.iter().find(|i| i.display == bad.steps_path) else {
        return out;
    };
    let Ok(opened) = crate::sources::open::open(input) else {
        return out;
    };
    let mut stream = opened.stream;
    let mut reader = crate::sources::reader::ChunkReader::new(stream.as_mut());
    while let Ok(Some((chunk, first))) = reader.next_chunk() {
        for (lineno, line) in crate::sources::reader::lines(chunk, first) {
            if lineno <= p.line {
                continue;
            }
            if lineno > p.line + CONTEXT_LINES {
                return out;
            }
            let text = String::from_utf8_lossy(line);
            let text = crate::sources::trainlog::last_redraw(&text)
                .trim_end()
                .to_string();
            out.push(Cite {
                side: Side::Bad,
                path: bad.steps_path.clone(),
                line: Some(lineno),
                text: cut(&text, 400),
            });
        }
    }
    out
}

fn cut(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(vals: &[(u64, f64, Option<f64>)]) -> Vec<StepPoint> {
        vals.iter()
            .map(|&(step, loss, t)| StepPoint {
                step,
                loss: Some(loss),
                grad_norm: None,
                step_time: t,
                line: step,
                text: format!("step {step} loss {loss}"),
                at: None,
            })
            .collect()
    }

    fn run(steps: Vec<StepPoint>) -> Run {
        Run {
            steps,
            steps_path: "log".into(),
            ..Run::default()
        }
    }

    #[test]
    fn the_band_is_the_nearest_window_widened_by_its_spread_or_a_tenth() {
        let good = pts(&[
            (1, 2.0, None),
            (2, 2.1, None),
            (3, 2.2, None),
            (4, 2.3, None),
            (5, 2.4, None),
            (100, 9.0, None),
        ]);
        let [lo, hi] = band(&good, 3, |p| p.loss).unwrap();
        // Window 2.0..2.4 (spread 0.4 > 10 % of 2.2): [1.6, 2.8]; step 100 is not in it.
        assert!(
            (lo - 1.6).abs() < 1e-9 && (hi - 2.8).abs() < 1e-9,
            "{lo} {hi}"
        );
        let flat = pts(&[(1, 5.0, None), (2, 5.0, None)]);
        let [lo, hi] = band(&flat, 1, |p| p.loss).unwrap();
        assert!(
            (lo - 4.5).abs() < 1e-9 && (hi - 5.5).abs() < 1e-9,
            "{lo} {hi}"
        );
    }

    #[test]
    fn a_rerun_inside_the_band_does_not_part_and_a_nan_or_a_jump_does() {
        let good = run(pts(&[
            (10, 2.3, Some(0.1)),
            (20, 2.2, Some(0.1)),
            (30, 2.1, Some(0.1)),
            (40, 2.0, Some(0.1)),
        ]));
        let rerun = run(pts(&[
            (10, 2.31, Some(0.1)),
            (20, 2.18, Some(0.11)),
            (30, 2.12, Some(0.1)),
            (40, 1.98, Some(0.1)),
        ]));
        assert!(parting(&good, &rerun).is_none());
        let nan = run(pts(&[
            (10, 2.3, Some(0.1)),
            (20, 2.2, Some(0.1)),
            (30, f64::NAN, Some(0.1)),
        ]));
        let p = parting(&good, &nan).unwrap();
        assert_eq!((p.step, p.metrics[0].metric), (30, "loss"));
        assert_eq!(p.evidence[0].line, Some(30));
        // Slower steps part on step time, but not during the first two (start-up).
        let slow = run(pts(&[
            (10, 2.3, Some(5.0)),
            (20, 2.2, Some(5.0)),
            (30, 2.1, Some(5.0)),
        ]));
        let p = parting(&good, &slow).unwrap();
        assert_eq!((p.step, p.metrics[0].metric), (30, "step_time"));
        assert_eq!(p.metrics[0].band[0], 0.0);
        // Faster is not a failure.
        let fast = run(pts(&[
            (10, 2.3, Some(0.01)),
            (20, 2.2, Some(0.01)),
            (30, 2.1, Some(0.01)),
        ]));
        assert!(parting(&good, &fast).is_none());
        assert!(parting(&good, &run(Vec::new())).is_none());
    }
}
