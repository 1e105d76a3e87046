//! `history report`: the fleet over a window, as the data of one page — failures per day by
//! category, the top fingerprints day by day, every host and GPU tested against the fleet
//! (the same test as `history hosts | gpus`), the host × GPU cells of the heat map, and the
//! latest runs. Queries and counts only, in the SQL both back-ends accept; `report` draws it.

use super::backend::Value;
use super::stats::{SUSPECT_CLASSES, Unit};
use super::{Result, Store, utc};
use crate::model::{Text, Verdict};
use crate::report::history::{DayCount, FleetReport, FleetRun, GpuCell, RecentRun};
use crate::report::triage::{CitedLine, MAX_CITED};
use std::collections::BTreeMap;

/// Fingerprints followed day by day on the page.
pub const TOP_FINGERPRINTS: usize = 8;

/// Latest runs listed under each top fingerprint, with their cited lines.
pub const RUNS_PER_FINGERPRINT: usize = 5;

/// Most latest runs read (the page lists 100; JSON gets up to this many).
pub const MAX_RECENT: usize = 10_000;

const DAY: i64 = 86_400;

/// `2026-10-02` of a day number (days since 1970-01-01).
fn day_name(day: i64) -> String {
    let t = utc(day.saturating_mul(DAY));
    t.get(..10).unwrap_or(&t).to_string()
}

impl Store {
    /// The fleet since `since` (all of the history when `None`): `recent` latest runs listed,
    /// hosts and GPUs tested at family-wise rate `alpha`.
    pub fn report(&mut self, since: Option<i64>, alpha: f64, recent: usize) -> Result<FleetReport> {
        let from = Value::Int(since.unwrap_or(i64::MIN));
        let q = |s: &mut Store, sql: &str, args: &[Value]| {
            s.db.query(sql, args).map_err(|e| s.context(e))
        };
        // Failures per day by what they were: the category, else the verdict (an unexplained
        // failure has no category). Healthy runs are counted apart.
        let mut days: BTreeMap<i64, DayCount> = BTreeMap::new();
        let (mut runs, mut failed) = (0u64, 0u64);
        for r in q(
            self,
            "SELECT at / 86400, verdict, category, count(*) FROM runs WHERE at >= $1
             GROUP BY at / 86400, verdict, category",
            std::slice::from_ref(&from),
        )? {
            let (Some(day), Some(verdict)) = (r[0].int(), r[1].text()) else {
                continue;
            };
            let n = r[3].int().unwrap_or(0).max(0) as u64;
            let d = days.entry(day).or_insert_with(|| DayCount {
                day: day_name(day),
                ..DayCount::default()
            });
            runs += n;
            if verdict == Verdict::NoFailure.as_str() {
                d.healthy += n;
            } else {
                failed += n;
                *d.failures
                    .entry(r[2].text().unwrap_or(verdict))
                    .or_default() += n;
            }
        }
        let top = self.list(since, None, TOP_FINGERPRINTS)?;
        // Each top fingerprint's runs per day.
        let mut per_day: Vec<BTreeMap<String, u64>> = vec![BTreeMap::new(); top.len()];
        for r in q(
            self,
            "SELECT fingerprint, at / 86400, count(*) FROM runs
             WHERE fingerprint IS NOT NULL AND at >= $1 GROUP BY fingerprint, at / 86400",
            std::slice::from_ref(&from),
        )? {
            let (Some(fp), Some(day)) = (r[0].text(), r[1].int()) else {
                continue;
            };
            if let Some(i) = top.iter().position(|t| t.fingerprint == fp) {
                per_day[i].insert(day_name(day), r[2].int().unwrap_or(0).max(0) as u64);
            }
        }
        // Each top fingerprint's latest runs and the lines their reports cite: what the page
        // links a fingerprint to (the history keeps reports, not pages).
        let mut top_runs = Vec::with_capacity(top.len());
        for t in &top {
            let mut runs = Vec::new();
            for r in q(
                self,
                "SELECT at, job, origin_host, hosts, report FROM runs
                 WHERE fingerprint = $1 AND at >= $2 ORDER BY at DESC, run_id LIMIT $3",
                &[
                    Value::Text(t.fingerprint.clone()),
                    from.clone(),
                    Value::Int(RUNS_PER_FINGERPRINT as i64),
                ],
            )? {
                let hosts: Vec<String> = r[3]
                    .text()
                    .and_then(|j| serde_json::from_str(&j).ok())
                    .unwrap_or_default();
                runs.push(FleetRun {
                    at: r[0].int().map(utc).unwrap_or_default(),
                    job: r[1].text(),
                    host: r[2].text().or_else(|| hosts.into_iter().next()),
                    lines: r[4].text().map(|j| cited(&j)).unwrap_or_default(),
                });
            }
            top_runs.push(runs);
        }
        let hosts = self.fleet(Unit::Host, since, alpha)?;
        let gpus = self.fleet(Unit::Gpu, since, alpha)?;
        // The heat map's cells: each GPU in each host it was seen in, its runs there and its
        // failures of the suspect classes there.
        let mut cells: BTreeMap<(String, String), GpuCell> = BTreeMap::new();
        for r in q(
            self,
            "SELECT host, uuid, class, count(*), CAST(sum(blamed) AS BIGINT) FROM run_gpus
             WHERE at >= $1 AND host IS NOT NULL GROUP BY host, uuid, class",
            std::slice::from_ref(&from),
        )? {
            let (Some(host), Some(uuid), Some(class)) = (r[0].text(), r[1].text(), r[2].text())
            else {
                continue;
            };
            let c = cells
                .entry((host.clone(), uuid.clone()))
                .or_insert_with(|| GpuCell {
                    host,
                    uuid,
                    ..GpuCell::default()
                });
            c.jobs += r[3].int().unwrap_or(0).max(0) as u64;
            if SUSPECT_CLASSES.contains(&class.as_str()) {
                c.suspect_failures += r[4].int().unwrap_or(0).max(0) as u64;
            }
        }
        let mut latest = Vec::new();
        for r in q(
            self,
            "SELECT at, job, verdict, category, title, fingerprint, confidence, origin_host,
                    hosts, action, report
             FROM runs WHERE at >= $1 ORDER BY at DESC, run_id LIMIT $2",
            &[from.clone(), Value::Int(recent.min(MAX_RECENT) as i64)],
        )? {
            let hosts: Vec<String> = r[8]
                .text()
                .and_then(|j| serde_json::from_str(&j).ok())
                .unwrap_or_default();
            latest.push(RecentRun {
                at: r[0].int().map(utc).unwrap_or_default(),
                job: r[1].text(),
                verdict: r[2].text().unwrap_or_default(),
                category: r[3].text(),
                title: r[4].text().map(|en| {
                    // The Chinese title is in the stored report's lead finding, where it had one.
                    Text::given(en, r[10].text().and_then(super::lead_title_zh))
                }),
                fingerprint: r[5].text(),
                confidence: r[6].real(),
                host: r[7].text().or_else(|| hosts.into_iter().next()),
                action: r[9].text().unwrap_or_default(),
            });
        }
        Ok(FleetReport {
            since: since.map(utc),
            generated: utc(super::now()),
            runs,
            failed,
            days: days.into_values().collect(),
            top,
            top_per_day: per_day,
            top_runs,
            hosts,
            gpus,
            cells: cells.into_values().collect(),
            recent: latest,
        })
    }
}

/// The lines a stored report cites for its cause: its lead finding's first evidence lines, as
/// triage keeps them. A report that does not parse, or has no finding, cites nothing.
fn cited(report: &str) -> Vec<CitedLine> {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(report) else {
        return Vec::new();
    };
    let Some(evidence) = v["findings"][0]["evidence"].as_array() else {
        return Vec::new();
    };
    evidence
        .iter()
        .filter_map(|e| {
            Some(CitedLine {
                path: e["path"].as_str()?.to_string(),
                line: e["line"].as_u64(),
                text: crate::report::cut(e["text"].as_str()?, 300),
            })
        })
        .take(MAX_CITED)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_numbers_are_utc_dates() {
        assert_eq!(day_name(0), "1970-01-01");
        assert_eq!(day_name(20_728), "2026-10-02");
    }
}
