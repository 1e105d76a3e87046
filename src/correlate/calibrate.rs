//! Calibration: a finding's `confidence` is the chance that its category is the run's cause,
//! read off the evidence strength the rules and the cascade computed (`strength`) and the
//! finding's place: the first cause of a specific category, the first cause when it only says
//! that something failed (`python_exception`, `other`: an uncaught exception is a weaker
//! answer at the same strength), or one considered after it. The three curves are data
//! (`data/calibration.toml`), fitted by [`fit`] on every labelled fixture
//! (`cargo run --release --example calibrate`; docs/calibration.md shows the leave-one-out
//! reliability table that `tests/calibration.rs` checks).
//!
//! It must not decide anything: ranking, the ruled-out floor, the verdict and the fingerprint
//! are settled on `strength` before [`apply`] runs, and it keeps their order (both curves rise
//! with strength; a later cause is never shown above the first; a ruled-out finding is shown
//! below the floor, as it was ranked).

use super::{Finding, GENERIC, RULED_OUT_BELOW};
use serde::Deserialize;
use std::sync::OnceLock;

static CALIBRATION_TOML: &str = include_str!("../../data/calibration.toml");

/// How strongly each group is pulled towards its mean: a band seen a few times says little.
const PRIOR_WEIGHT: f64 = 2.0;
/// Never certain either way.
const FLOOR: f64 = 0.01;
const CEILING: f64 = 0.99;

/// A rising curve: strength → confidence, linear between knots, flat beyond the ends.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Curve {
    pub knots: Vec<[f64; 2]>,
}

impl Curve {
    pub fn at(&self, x: f64) -> f64 {
        let k = &self.knots;
        let y = match k.iter().position(|p| p[0] >= x) {
            None => k.last().map_or(x, |p| p[1]),
            Some(0) => k[0][1],
            Some(i) => {
                let ([x0, y0], [x1, y1]) = (k[i - 1], k[i]);
                y0 + (y1 - y0) * (x - x0) / (x1 - x0)
            }
        };
        y.clamp(FLOOR, CEILING)
    }
}

/// The three curves, one per [`Place`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Calibration {
    /// Labelled cases the curves were fitted on.
    pub cases: usize,
    pub first: Curve,
    pub first_generic: Curve,
    pub other: Curve,
}

/// Where a finding stands in its report, for calibration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// The first cause, of a specific category.
    First,
    /// The first cause, of a category that only says something failed ([`GENERIC`]).
    FirstGeneric,
    /// Any finding after the first cause (or a symptom before one).
    Other,
}

impl Place {
    /// The place of each finding of `findings`, in `rank`'s order.
    pub fn of(findings: &[Finding]) -> Vec<Place> {
        let mut seen_first = false;
        findings
            .iter()
            .map(|f| {
                if seen_first || f.symptom_of.is_some() {
                    Place::Other
                } else {
                    seen_first = true;
                    if GENERIC.contains(&f.category) {
                        Place::FirstGeneric
                    } else {
                        Place::First
                    }
                }
            })
            .collect()
    }
}

/// One prediction to fit on: a finding's strength, its place, and whether the case's label
/// accepts its category.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    pub strength: f64,
    pub place: Place,
    pub right: bool,
}

/// The curves shipped in `data/calibration.toml`, parsed once.
pub fn shipped() -> &'static Calibration {
    static CAL: OnceLock<Calibration> = OnceLock::new();
    CAL.get_or_init(|| {
        parse(CALIBRATION_TOML).unwrap_or_else(|e| panic!("data/calibration.toml: {e}"))
    })
}

/// Parse a calibration file, checking that each curve rises.
pub fn parse(text: &str) -> Result<Calibration, String> {
    let c: Calibration = toml::from_str(text).map_err(|e| e.to_string())?;
    for (name, curve) in [
        ("first", &c.first),
        ("first_generic", &c.first_generic),
        ("other", &c.other),
    ] {
        if curve.knots.is_empty() {
            return Err(format!("[{name}] knots: empty; regenerate the file"));
        }
        if curve
            .knots
            .windows(2)
            .any(|w| w[1][0] <= w[0][0] || w[1][1] < w[0][1])
        {
            return Err(format!(
                "[{name}] knots: strengths must rise and confidences must not fall; regenerate the file"
            ));
        }
    }
    Ok(c)
}

/// Replace each finding's confidence by its calibrated one, keeping the strength it was
/// ranked on. `findings` must already be in `rank`'s order; `no_failure` is the verdict's
/// (see [`Calibration::confidences`]).
pub fn apply(cal: &Calibration, findings: &mut [Finding], no_failure: bool) {
    let places = Place::of(findings);
    for f in findings.iter_mut() {
        f.strength = f.confidence;
    }
    let strengths: Vec<f64> = findings.iter().map(|f| f.strength).collect();
    for (f, c) in findings
        .iter_mut()
        .zip(cal.confidences(&strengths, &places, no_failure))
    {
        f.confidence = c;
    }
}

impl Calibration {
    /// The calibrated confidences of one report's findings (strengths and places in `rank`'s
    /// order), rounded to hundredths as shown: a finding after the first cause is never shown
    /// above it. In a report whose verdict is that the run did not fail (`no_failure`), a
    /// ruled-out finding (strength below [`RULED_OUT_BELOW`]) is never shown above its
    /// strength, so such a report never shows one at 0.5. In a failed run the curve stands
    /// for a weak finding too: a bare shell `Killed` (strength 0.2) is measured right in most
    /// real threads, and showing it at its strength would under-state it (docs/calibration.md).
    pub fn confidences(&self, strengths: &[f64], places: &[Place], no_failure: bool) -> Vec<f64> {
        let mut top: Option<f64> = None;
        strengths
            .iter()
            .zip(places)
            .map(|(&s, place)| {
                let mut c = match place {
                    Place::First => self.first.at(s),
                    Place::FirstGeneric => self.first_generic.at(s),
                    Place::Other => top.map_or(self.other.at(s), |t| self.other.at(s).min(t)),
                };
                // Ruled out in a run that did not fail (below the floor, or argued down to
                // it): shown as ruled out, never lifted by a curve above its strength.
                if no_failure && s < RULED_OUT_BELOW {
                    c = c.min(s);
                }
                if *place != Place::Other {
                    top = Some(c);
                }
                (c * 100.0).round() / 100.0
            })
            .collect()
    }
}

/// Fit both curves on `points`: within each group (first causes, the others), strengths in
/// ascending order are pooled until the share right never falls (pool-adjacent-violators),
/// and each pool's share is pulled towards the group's by [`PRIOR_WEIGHT`] cases.
pub fn fit(points: &[Point], cases: usize) -> Calibration {
    let curve = |place: Place| {
        let mut xs: Vec<(f64, bool)> = points
            .iter()
            .filter(|p| p.place == place)
            .map(|p| (p.strength, p.right))
            .collect();
        isotonic(&mut xs)
    };
    Calibration {
        cases,
        first: curve(Place::First),
        first_generic: curve(Place::FirstGeneric),
        other: curve(Place::Other),
    }
}

fn isotonic(xs: &mut [(f64, bool)]) -> Curve {
    if xs.is_empty() {
        return Curve {
            knots: vec![[0.0, 0.0], [1.0, 1.0]],
        };
    }
    xs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mean = xs.iter().filter(|x| x.1).count() as f64 / xs.len() as f64;
    // Pools of (sum of strengths, number right, count); equal strengths start in one pool.
    let mut pools: Vec<(f64, f64, f64)> = Vec::new();
    let mut i = 0;
    while i < xs.len() {
        let j = xs[i..]
            .iter()
            .position(|x| x.0 != xs[i].0)
            .map_or(xs.len(), |k| i + k);
        let right = xs[i..j].iter().filter(|x| x.1).count() as f64;
        pools.push((xs[i].0 * (j - i) as f64, right, (j - i) as f64));
        while pools.len() > 1 {
            let (b, a) = (pools[pools.len() - 1], pools[pools.len() - 2]);
            if a.1 / a.2 <= b.1 / b.2 {
                break;
            }
            pools.pop();
            *pools.last_mut().unwrap() = (a.0 + b.0, a.1 + b.1, a.2 + b.2);
        }
        i = j;
    }
    let mut knots: Vec<[f64; 2]> = Vec::new();
    for (sx, right, n) in pools {
        let x = round3(sx / n);
        let y = round3((right + PRIOR_WEIGHT * mean) / (n + PRIOR_WEIGHT));
        // The pull towards the mean can undo the order between a small pool and a large one.
        let y = knots.last().map_or(y, |k| y.max(k[1]));
        match knots.last_mut() {
            Some(k) if k[0] >= x => k[1] = k[1].max(y),
            _ => knots.push([x, y]),
        }
    }
    Curve { knots }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

impl Calibration {
    /// The file [`shipped`] reads.
    pub fn to_toml(&self) -> String {
        let curve = |c: &Curve| {
            c.knots
                .iter()
                .map(|[x, y]| format!("  [{x:.3}, {y:.3}],\n"))
                .collect::<String>()
        };
        format!(
            "# Calibration of a finding's confidence (docs/calibration.md): strength -> confidence,\n\
             # linear between knots. Fitted on the labelled fixtures by\n\
             # `cargo run --release --example calibrate > data/calibration.toml`; do not edit by hand.\n\
             cases = {}\n\n[first]\nknots = [\n{}]\n\n[first_generic]\nknots = [\n{}]\n\n[other]\nknots = [\n{}]\n",
            self.cases,
            curve(&self.first),
            curve(&self.first_generic),
            curve(&self.other)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(v: &[(f64, bool, bool)]) -> Vec<Point> {
        v.iter()
            .map(|&(strength, first, right)| Point {
                strength,
                place: if first { Place::First } else { Place::Other },
                right,
            })
            .collect()
    }

    #[test]
    fn pools_until_the_share_right_rises_and_the_file_round_trips() {
        // Second-lowest strength right more often than the third: pooled.
        let p = pts(&[
            (0.2, false, false),
            (0.3, false, true),
            (0.4, false, false),
            (0.9, false, true),
        ]);
        let c = fit(&p, 4);
        let ys: Vec<f64> = c.other.knots.iter().map(|k| k[1]).collect();
        assert!(ys.windows(2).all(|w| w[0] <= w[1]), "{ys:?}");
        assert_eq!(c.other.knots.len(), 3, "{:?}", c.other.knots);
        assert_eq!(parse(&c.to_toml()).unwrap(), c);
        // No first causes: the identity.
        assert_eq!(c.first.at(0.4), 0.4);
    }

    #[test]
    fn a_falling_curve_is_refused_with_the_key() {
        let bad = "cases = 1\n[first]\nknots = [[0.1, 0.5], [0.2, 0.4]]\n\
                   [first_generic]\nknots = [[0.1, 0.1]]\n[other]\nknots = [[0.1, 0.1]]\n";
        let e = parse(bad).unwrap_err();
        assert!(e.contains("[first] knots"), "{e}");
    }

    #[test]
    fn the_shipped_file_parses() {
        let c = shipped();
        let shown = c.confidences(&[0.9, 0.9], &[Place::First, Place::Other], false);
        assert!(shown[0] >= shown[1], "{shown:?}");
    }
}
