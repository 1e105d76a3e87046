//! Lemon nodes and bad GPUs: per host (or GPU, by UUID) its failures by class over a window
//! against its share of all jobs, and a one-sided binomial test of its hardware-class and
//! unexplained failures against the rest of the fleet, with a Bonferroni threshold (many
//! hosts are tested at once). The tail probability is computed here, through the regularised
//! incomplete beta function, so p-values far below 1e-16 stay exact enough to rank.

use super::backend::{Backend, Result, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Failure classes that point at the machine rather than the code or configuration.
pub const SUSPECT_CLASSES: &[&str] = &["replace-hardware", "unexplained"];

/// ln Γ(x) for x > 0: Stirling's series past 20, shifted by the recurrence below it.
pub fn ln_gamma(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return f64::NAN;
    }
    let mut shift = 0.0;
    let mut z = x;
    while z < 20.0 {
        shift += z.ln();
        z += 1.0;
    }
    let z2 = z * z;
    let series = 1.0 / (12.0 * z) - 1.0 / (360.0 * z * z2) + 1.0 / (1260.0 * z * z2 * z2)
        - 1.0 / (1680.0 * z * z2 * z2 * z2)
        + 1.0 / (1188.0 * z * z2 * z2 * z2 * z2);
    (z - 0.5) * z.ln() - z + 0.5 * (2.0 * std::f64::consts::PI).ln() + series - shift
}

/// The continued fraction of the incomplete beta function (modified Lentz).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let clamp = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / clamp(1.0 - (a + b) * x / (a + 1.0));
    let mut h = d;
    for m in 1..=10_000 {
        let m = m as f64;
        let even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        d = 1.0 / clamp(1.0 + even * d);
        c = clamp(1.0 + even / c);
        h *= d * c;
        let odd = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        d = 1.0 / clamp(1.0 + odd * d);
        c = clamp(1.0 + odd / c);
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularised incomplete beta function I_x(a, b).
pub fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (-x).ln_1p();
    if x < (a + 1.0) / (a + b + 2.0) {
        (ln_front.exp() * beta_fraction(a, b, x) / a).clamp(0.0, 1.0)
    } else {
        (1.0 - ln_front.exp() * beta_fraction(b, a, 1.0 - x) / b).clamp(0.0, 1.0)
    }
}

/// P(X ≥ k) for X ~ Binomial(n, p): the one-sided p-value of seeing k or more.
pub fn binomial_upper_tail(n: u64, k: u64, p: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if k > n {
        return 0.0;
    }
    if p <= 0.0 {
        return 0.0;
    }
    if p >= 1.0 {
        return 1.0;
    }
    incomplete_beta(k as f64, (n - k + 1) as f64, p)
}

pub use crate::report::history::{FleetStats, UnitStat};

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Host,
    Gpu,
}

/// Count and test every host or GPU with runs since `since`.
pub fn fleet(
    db: &mut dyn Backend,
    unit: Unit,
    since: Option<i64>,
    alpha: f64,
) -> Result<FleetStats> {
    let from = Value::Int(since.unwrap_or(i64::MIN));
    let (sql, name) = match unit {
        Unit::Host => (
            "SELECT host, class, count(*), CAST(sum(blamed) AS BIGINT) FROM run_hosts
             WHERE at >= $1 GROUP BY host, class",
            "host",
        ),
        Unit::Gpu => (
            "SELECT uuid, class, count(*), CAST(sum(blamed) AS BIGINT) FROM run_gpus
             WHERE at >= $1 GROUP BY uuid, class",
            "gpu",
        ),
    };
    let rows = db.query(sql, std::slice::from_ref(&from))?;
    let runs = db
        .query(
            "SELECT count(*) FROM runs WHERE at >= $1",
            std::slice::from_ref(&from),
        )?
        .first()
        .and_then(|r| r[0].int())
        .unwrap_or(0)
        .max(0) as u64;
    let mut hosts_of: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    if unit == Unit::Gpu {
        for r in db.query(
            "SELECT DISTINCT uuid, host FROM run_gpus WHERE at >= $1 AND host IS NOT NULL",
            std::slice::from_ref(&from),
        )? {
            if let (Some(u), Some(h)) = (r[0].text(), r[1].text()) {
                hosts_of.entry(u).or_default().insert(h);
            }
        }
    }
    let mut by: BTreeMap<String, (u64, BTreeMap<String, u64>)> = BTreeMap::new();
    for r in rows {
        let (Some(id), Some(class)) = (r[0].text(), r[1].text()) else {
            continue;
        };
        let e = by.entry(id).or_default();
        e.0 += r[2].int().unwrap_or(0).max(0) as u64;
        let blamed = r[3].int().unwrap_or(0).max(0) as u64;
        if class != "none" && blamed > 0 {
            *e.1.entry(class).or_default() += blamed;
        }
    }
    Ok(test(unit, name, by, hosts_of, runs, since, alpha))
}

fn test(
    unit: Unit,
    name: &'static str,
    by: BTreeMap<String, (u64, BTreeMap<String, u64>)>,
    mut hosts_of: BTreeMap<String, BTreeSet<String>>,
    runs: u64,
    since: Option<i64>,
    alpha: f64,
) -> FleetStats {
    let suspect_of = |f: &BTreeMap<String, u64>| -> u64 {
        SUSPECT_CLASSES.iter().filter_map(|c| f.get(*c)).sum()
    };
    let total_jobs: u64 = by.values().map(|v| v.0).sum();
    let total_suspect: u64 = by.values().map(|v| suspect_of(&v.1)).sum();
    let tested = by.values().filter(|v| v.0 > 0).count().max(1);
    let threshold = alpha / tested as f64;
    let mut units: Vec<UnitStat> = by
        .into_iter()
        .map(|(id, (jobs, failures))| {
            let k = suspect_of(&failures);
            // Leave this unit out of its own base rate (a lemon must not raise the bar it is
            // measured against), smoothed so a clean fleet does not make one failure "certain".
            let base_rate = (total_suspect - k) as f64 + 1.0;
            let base_rate = base_rate / ((total_jobs - jobs) as f64 + 2.0);
            let p_value = binomial_upper_tail(jobs, k, base_rate);
            UnitStat {
                hosts: (unit == Unit::Gpu).then(|| {
                    hosts_of
                        .remove(&id)
                        .unwrap_or_default()
                        .into_iter()
                        .collect()
                }),
                id,
                jobs,
                share: if runs > 0 {
                    jobs as f64 / runs as f64
                } else {
                    0.0
                },
                failures,
                suspect_failures: k,
                base_rate,
                expected: jobs as f64 * base_rate,
                p_value,
                suspect: k > 0 && p_value < threshold,
            }
        })
        .collect();
    units.sort_by(|a, b| {
        a.p_value
            .total_cmp(&b.p_value)
            .then(b.suspect_failures.cmp(&a.suspect_failures))
            .then(a.id.cmp(&b.id))
    });
    let suspects = units
        .iter()
        .filter(|u| u.suspect)
        .map(|u| u.id.clone())
        .collect();
    FleetStats {
        unit: name,
        since: since.map(super::utc),
        runs,
        alpha,
        threshold,
        units,
        suspects,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// P(X ≥ k) exactly, for p = num/den, with integers: an independent check.
    fn exact_tail(n: u32, k: u32, num: u128, den: u128) -> f64 {
        let choose = |n: u32, i: u32| -> u128 {
            (0..i).fold(1u128, |acc, j| acc * (n - j) as u128 / (j + 1) as u128)
        };
        let total: u128 = (k..=n)
            .map(|i| choose(n, i) * num.pow(i) * (den - num).pow(n - i))
            .sum();
        total as f64 / den.pow(n) as f64
    }

    #[test]
    fn ln_gamma_matches_factorials_and_half_integers() {
        for (n, f) in [
            (1u32, 1.0f64),
            (5, 24.0),
            (11, 3_628_800.0),
            (21, 2.432_902_008_176_64e18),
        ] {
            assert!((ln_gamma(n as f64) - f.ln()).abs() < 1e-12, "Γ({n})");
        }
        // Γ(1/2) = √π.
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-13);
    }

    #[test]
    fn binomial_tail_matches_exact_sums() {
        for (n, k, num, den) in [
            (10, 5, 1, 2),
            (10, 10, 1, 2),
            (20, 3, 1, 10),
            (30, 12, 1, 10),
            (25, 1, 3, 10),
            (30, 29, 9, 10),
        ] {
            let want = exact_tail(n, k, num, den);
            let got = binomial_upper_tail(n.into(), k.into(), num as f64 / den as f64);
            assert!(
                ((got - want) / want).abs() < 1e-10,
                "n={n} k={k} p={num}/{den}: got {got}, want {want}"
            );
        }
        assert!((binomial_upper_tail(10, 5, 0.5) - 0.623046875).abs() < 1e-12);
    }

    #[test]
    fn binomial_tail_is_stable_for_large_n_and_tiny_tails() {
        // P(X ≥ 1) = 1 − (1 − p)^n.
        let want = -((-1e-6f64).ln_1p() * 1e6).exp_m1();
        assert!((binomial_upper_tail(1_000_000, 1, 1e-6) - want).abs() < 1e-12);
        // A far tail against a log-space direct sum (another algorithm).
        let (n, k, p) = (10_000u64, 60u64, 0.001f64);
        let ln_term = |i: u64| {
            ln_gamma((n + 1) as f64) - ln_gamma((i + 1) as f64) - ln_gamma((n - i + 1) as f64)
                + i as f64 * p.ln()
                + (n - i) as f64 * (-p).ln_1p()
        };
        let m = ln_term(k);
        let direct: f64 = (k..=n).map(|i| (ln_term(i) - m).exp()).sum::<f64>().ln() + m;
        let got = binomial_upper_tail(n, k, p).ln();
        assert!((got - direct).abs() < 1e-8, "{got} vs {direct}");
        assert!(got < -60.0);
        assert_eq!(binomial_upper_tail(5, 0, 0.3), 1.0);
        assert_eq!(binomial_upper_tail(5, 6, 0.3), 0.0);
    }

    #[test]
    fn one_planted_lemon_among_noisy_hosts_is_the_only_suspect() {
        let mut by = BTreeMap::new();
        for i in 0..50u64 {
            // 200 jobs each, 1–3 hardware failures (the fleet's background).
            let f = BTreeMap::from([("replace-hardware".to_string(), 1 + i % 3)]);
            by.insert(format!("node{i:02}"), (200, f));
        }
        by.insert(
            "lemon".into(),
            (200, BTreeMap::from([("replace-hardware".to_string(), 15)])),
        );
        let s = test(Unit::Host, "host", by, BTreeMap::new(), 10_200, None, 0.01);
        assert_eq!(s.suspects, ["lemon"]);
        assert!(s.units[0].p_value < 1e-6);
    }
}
