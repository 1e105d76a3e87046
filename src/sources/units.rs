//! Sizes, durations and dates as snapshots write them (`64M`, `1.5Gi`, `143771 MiB`,
//! `1-02:03:04`, `Sun Nov 29 19:10:17 2026`) turned into plain numbers and ISO text.
//! Shared by the fact parsers; it must not decide what a value means, only what it is.

/// The one size grammar (snapshots, CUDA messages, rule-file values): `64M`, `1.5G`, `256G`,
/// `0`, `8.7Mi`, `143771MiB`, `4.0K`, `1.2T`, `2.00 GiB`, `512 kb`, `12 bytes`, `1,5G`.
/// Powers of 1024 whatever the spelling, as `df -h`, `free -h`, nvidia-smi and PyTorch mean
/// them; the unit's case does not matter. A bare number is taken as `bare_unit` bytes; an
/// explicit `B`/`bytes` means bytes.
pub(crate) fn size_1024(s: &str, bare_unit: u64) -> Option<u64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    let num = num.replace(',', ".");
    if num.is_empty() {
        return None;
    }
    let x: f64 = num.parse().ok()?;
    let suffix = suffix.trim().to_ascii_lowercase();
    let letter = suffix
        .strip_suffix("ib")
        .or_else(|| suffix.strip_suffix('i'))
        .or_else(|| suffix.strip_suffix("bytes"))
        .or_else(|| suffix.strip_suffix('b'))
        .unwrap_or(&suffix);
    let mult: u64 = match letter {
        "" if suffix.is_empty() => bare_unit,
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        "p" => 1 << 50,
        "e" => 1 << 60,
        _ => return None,
    };
    let v = x * mult as f64;
    (v.is_finite() && v >= 0.0 && v < u64::MAX as f64).then_some(v.round() as u64)
}

/// A Kubernetes quantity: `6Gi`, `512Mi`, `1G` (10^9), `500M`, `128974848`, `129e6`, `1k`.
pub(crate) fn k8s_quantity(s: &str) -> Option<u64> {
    let s = s.trim().trim_matches('"');
    let bin: &[(&str, u64)] = &[
        ("Ki", 1 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("Ti", 1 << 40),
        ("Pi", 1 << 50),
        ("Ei", 1 << 60),
    ];
    for (suf, m) in bin {
        if let Some(n) = s.strip_suffix(suf) {
            let x: f64 = n.parse().ok()?;
            return finite_u64(x * *m as f64);
        }
    }
    let dec: &[(&str, f64)] = &[
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
        ("E", 1e18),
    ];
    for (suf, m) in dec {
        if let Some(n) = s.strip_suffix(suf) {
            let x: f64 = n.parse().ok()?;
            return finite_u64(x * m);
        }
    }
    let x: f64 = s.parse().ok()?;
    finite_u64(x)
}

fn finite_u64(v: f64) -> Option<u64> {
    (v.is_finite() && v >= 0.0 && v < u64::MAX as f64).then_some(v.round() as u64)
}

/// Slurm durations: `MM:SS`, `HH:MM:SS`, `D-HH:MM:SS`, `D-HH`, `MM`; `UNLIMITED` → None.
pub(crate) fn slurm_duration(s: &str) -> Option<u64> {
    let s = s.trim();
    let (days, rest) = match s.split_once('-') {
        Some((d, r)) => (d.parse::<u64>().ok()?, r),
        None => (0, s),
    };
    let parts: Vec<u64> = rest
        .split(':')
        .map(|p| p.parse::<u64>().ok())
        .collect::<Option<Vec<_>>>()?;
    let secs = match (s.contains('-'), parts.as_slice()) {
        (true, [h]) => h * 3600,
        (true, [h, m]) => h * 3600 + m * 60,
        (_, [h, m, sec]) => h * 3600 + m * 60 + sec,
        (false, [m]) => m * 60,
        (false, [m, sec]) => m * 60 + sec,
        _ => return None,
    };
    Some(days * 86400 + secs)
}

/// Month number from an English abbreviation or a CJK form (`12月`, `12월`).
pub(crate) fn month_number(s: &str) -> Option<u32> {
    const EN: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    if let Some(i) = EN.iter().position(|m| s.eq_ignore_ascii_case(m)) {
        return Some(i as u32 + 1);
    }
    let n = s.trim_end_matches(['月', '월']);
    if n.len() < s.len() {
        let m: u32 = n.parse().ok()?;
        return (1..=12).contains(&m).then_some(m);
    }
    None
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// (year, month, day) → days since 1970-01-01 (inverse of `civil_from_days`).
pub(crate) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYY-MM-DDTHH:MM:SS[.f]` (offset ignored) → Unix seconds, treating it as UTC.
pub(crate) fn epoch_from_iso(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    if b.len() < 19 || b.get(4) != Some(&b'-') || b.get(10) != Some(&b'T') {
        return None;
    }
    let y: i64 = s.get(0..4)?.parse().ok()?;
    let mo: u32 = s.get(5..7)?.parse().ok()?;
    let d: u32 = s.get(8..10)?.parse().ok()?;
    let hms = s.get(11..19)?;
    if !is_hms(hms) {
        return None;
    }
    let h: i64 = hms.get(0..2)?.parse().ok()?;
    let mi: i64 = hms.get(3..5)?.parse().ok()?;
    let se: i64 = hms.get(6..8)?.parse().ok()?;
    // A calendar date and a clock time (`2026-13-45` or `25:61` is none: never a time).
    let real_day = (1..=12).contains(&mo)
        && d >= 1
        && civil_from_days(days_from_civil(y, mo, d)) == (y, mo, d);
    if !real_day || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let frac = s
        .get(19..)
        .and_then(|r| r.strip_prefix('.'))
        .map(|r| r.split(|c: char| !c.is_ascii_digit()).next().unwrap_or(""))
        .and_then(|r| format!("0.{r}").parse::<f64>().ok())
        .unwrap_or(0.0);
    Some((days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + se) as f64 + frac)
}

/// Unix seconds (UTC) → `YYYY-MM-DDTHH:MM:SSZ`, for records the tool writes itself.
pub(crate) fn utc_z(secs: u64) -> String {
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let t = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        t / 3600,
        t % 3600 / 60,
        t % 60
    )
}

/// Unix seconds (UTC) → `YYYY-MM-DDTHH:MM:SS[.ffffff]`.
pub(crate) fn iso_from_epoch(secs: f64) -> Option<String> {
    if !secs.is_finite() || !(0.0..=1e12).contains(&secs) {
        return None;
    }
    let whole = secs.floor() as i64;
    let micros = ((secs - whole as f64) * 1e6).round() as i64;
    let (y, mo, d) = civil_from_days(whole.div_euclid(86_400));
    let t = whole.rem_euclid(86_400);
    let base = format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}",
        t / 3600,
        (t / 60) % 60,
        t % 60
    );
    Some(if micros > 0 {
        format!("{base}.{micros:06}")
    } else {
        base
    })
}

/// `Sun Nov 29 19:10:17 2026` (dmesg -T, ctime) → `2026-11-29T19:10:17`.
pub(crate) fn iso_from_ctime(s: &str) -> Option<String> {
    let mut it = s.split_whitespace();
    let _dow = it.next()?;
    let mon = month_number(it.next()?)?;
    let day: u32 = it.next()?.parse().ok()?;
    let hms = it.next()?;
    let year: u32 = it.next()?.parse().ok()?;
    if it.next().is_some() || !is_hms(hms) || day == 0 || day > 31 {
        return None;
    }
    Some(format!("{year:04}-{mon:02}-{day:02}T{hms}"))
}

pub(crate) fn is_hms(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 8
        && b[2] == b':'
        && b[5] == b':'
        && [0, 1, 3, 4, 6, 7].iter().all(|&i| b[i].is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn df_h_sizes_are_powers_of_1024() {
        assert_eq!(size_1024("64M", 1), Some(64 << 20));
        assert_eq!(size_1024("1.5G", 1), Some(1_610_612_736));
        assert_eq!(size_1024("0", 1), Some(0));
        assert_eq!(size_1024("0B", 1), Some(0));
        assert_eq!(size_1024("8.7Mi", 1), Some(9_122_611));
        assert_eq!(size_1024("143771MiB", 1), Some(143_771 << 20));
        assert_eq!(size_1024("12334460", 1024), Some(12_334_460 * 1024));
        assert_eq!(size_1024("1,5G", 1), Some(1_610_612_736));
        assert_eq!(size_1024("-", 1), None);
        assert_eq!(size_1024("12X", 1), None);
        // What CUDA messages and rule files write, in any case.
        assert_eq!(size_1024("2.00 GiB", 1), Some(2 << 30));
        assert_eq!(size_1024("512 kb", 1), Some(512 << 10));
        assert_eq!(size_1024("8gib", 1), Some(8 << 30));
        assert_eq!(size_1024("12 bytes", 1024), Some(12));
        assert_eq!(size_1024("12B", 1024), Some(12));
        assert_eq!(size_1024("1K-blocks", 1), None);
    }

    #[test]
    fn k8s_quantities_distinguish_binary_and_decimal() {
        assert_eq!(k8s_quantity("6Gi"), Some(6 << 30));
        assert_eq!(k8s_quantity("1G"), Some(1_000_000_000));
        assert_eq!(k8s_quantity("129e6"), Some(129_000_000));
        assert_eq!(k8s_quantity("\"64Mi\""), Some(64 << 20));
        assert_eq!(k8s_quantity("lots"), None);
    }

    #[test]
    fn slurm_durations() {
        assert_eq!(slurm_duration("01:00:13"), Some(3613));
        assert_eq!(slurm_duration("1-02:00:00"), Some(93_600));
        assert_eq!(slurm_duration("30"), Some(1800));
        assert_eq!(slurm_duration("UNLIMITED"), None);
    }

    #[test]
    fn dates() {
        assert_eq!(
            iso_from_ctime("Sun Nov 29 19:10:17 2026").as_deref(),
            Some("2026-11-29T19:10:17")
        );
        assert_eq!(
            iso_from_epoch(1_795_982_883.5).as_deref(),
            Some("2026-11-29T20:08:03.500000")
        );
        assert_eq!(
            epoch_from_iso("2026-11-29T20:08:03.5"),
            Some(1_795_982_883.5)
        );
        assert_eq!(month_number("12月"), Some(12));
        assert_eq!(month_number("3월"), Some(3));
        assert_eq!(month_number("Foo"), None);
    }
}
