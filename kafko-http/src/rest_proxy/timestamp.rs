//! ISO-8601 timestamps as the proxy writes and reads them (`2024-05-01T12:00:00.123Z`,
//! or with a `+hh:mm` offset), to and from milliseconds since the Unix epoch. Civil
//! dates use the proleptic Gregorian calendar (days-from-civil arithmetic).

/// Days since 1970-01-01 of a civil date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `ms` since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub(crate) fn format_ms(ms: i64) -> String {
    let (days, rem) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (y, m, d) = civil_from_days(days);
    let (h, min, s, milli) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000,
    );
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{milli:03}Z")
}

fn num(s: &str) -> Option<i64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±hh:mm)` to ms since the epoch.
pub(crate) fn parse_ms(text: &str) -> Option<i64> {
    let (date, time) = text.split_once(['T', 't'])?;
    let mut date_parts = date.splitn(3, '-');
    let (y, mo, d) = (
        num(date_parts.next()?)?,
        num(date_parts.next()?)?,
        num(date_parts.next()?)?,
    );
    let (clock, offset_min) = if let Some(c) = time.strip_suffix(['Z', 'z']) {
        (c, 0)
    } else {
        let at = time.rfind(['+', '-'])?;
        let (c, off) = time.split_at(at);
        let sign = if off.starts_with('-') { -1 } else { 1 };
        let (oh, om) = off[1..].split_once(':')?;
        (c, sign * (num(oh)? * 60 + num(om)?))
    };
    let (hms, fraction) = clock.split_once('.').unwrap_or((clock, ""));
    let mut hms_parts = hms.splitn(3, ':');
    let (h, mi, s) = (
        num(hms_parts.next()?)?,
        num(hms_parts.next()?)?,
        num(hms_parts.next()?)?,
    );
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let millis = if fraction.is_empty() {
        0
    } else {
        let digits: String = fraction.chars().chain("000".chars()).take(3).collect();
        num(&digits)?
    };
    let days = days_from_civil(y, mo, d);
    Some(((days * 24 + h) * 60 + mi - offset_min) * 60_000 + s * 1000 + millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_known_instants() {
        assert_eq!(format_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(parse_ms("2021-02-05T19:14:42Z"), Some(1_612_552_482_000));
        assert_eq!(
            parse_ms("2021-02-05T20:14:42.5+01:00"),
            Some(1_612_552_482_500)
        );
        for ms in [0, 1, 951_782_400_000, 1_764_400_000_123, -86_400_001] {
            assert_eq!(parse_ms(&format_ms(ms)), Some(ms), "{ms}");
        }
        assert_eq!(parse_ms("yesterday"), None);
        assert_eq!(parse_ms("2021-13-01T00:00:00Z"), None);
    }
}
