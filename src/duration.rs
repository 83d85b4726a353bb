//! Durations as people write and read them: parsing `90s`, `5m`, `1h30m` from flags, the
//! environment and the cluster extension, and printing a duration in messages — and the one way
//! a message prints a point in time ([`display_time`]).
//!
//! One module for both, so that every message writes time the way the flags take it ("1m30s",
//! "200ms"), and so that the one upper bound ([`MAX`]) keeps every `Instant::now() + d` and every
//! chrono conversion in the program from overflowing.

use std::time::Duration;

/// The longest duration any setting takes: far beyond any sensible timeout or validity margin,
/// and small enough that `Instant::now() + d` and chrono conversions can never overflow.
pub const MAX: Duration = Duration::from_secs(7 * 24 * 3600);
/// How [`MAX`] is written in messages and the manual (docs/).
pub const MAX_TEXT: &str = "168h (7 days)";

/// Parses `90s`, `5m`, `1h30m`, `250ms`, or a bare number of seconds; at most [`MAX`].
/// The error is one phrase that quotes the input and says how to write it.
pub fn parse(raw: &str) -> Result<Duration, String> {
    let too_long = || format!("{raw:?} is too long; at most {MAX_TEXT}");
    let not_a_duration = || format!("{raw:?} is not a duration; write it like 90s, 5m or 1h");
    let text = raw.trim();
    if text.is_empty() {
        return Err("empty duration; write it like 90s, 5m or 1h".into());
    }
    if text.bytes().all(|b| b.is_ascii_digit()) {
        return text
            .parse::<u64>()
            .ok()
            .map(Duration::from_secs)
            .filter(|duration| *duration <= MAX)
            .ok_or_else(too_long);
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(not_a_duration());
        }
        let number: u64 = rest[..digits].parse().map_err(|_| too_long())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ms" => Some(Duration::from_millis(number)),
            "s" => Some(Duration::from_secs(number)),
            "m" => number.checked_mul(60).map(Duration::from_secs),
            "h" => number.checked_mul(3600).map(Duration::from_secs),
            _ => return Err(not_a_duration()),
        };
        total = unit
            .and_then(|unit| total.checked_add(unit))
            .filter(|total| *total <= MAX)
            .ok_or_else(too_long)?;
        rest = &rest[unit_len..];
    }
    Ok(total)
}

/// A duration for a message, in the form the flags take: `200ms`, `30s`, `1.5s`, `1m30s`, `1h`.
pub fn display(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis < 1000 {
        return format!("{millis}ms");
    }
    let secs = duration.as_secs();
    if duration.subsec_millis() != 0 || secs < 60 {
        // Keep sub-second precision only where it says something (1.5s), not for minutes.
        let exact = duration.as_secs_f64();
        return if exact.fract() == 0.0 {
            format!("{secs}s")
        } else {
            format!("{exact:.1}s")
        };
    }
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let mut out = String::new();
    for (value, unit) in [(h, 'h'), (m, 'm'), (s, 's')] {
        if value > 0 {
            out.push_str(&format!("{value}{unit}"));
        }
    }
    out
}

/// [`display`] of `duration` rounded up to whole seconds (at least one): for a time limit that
/// has been reached ("no login completed within 1s"), or time left to wait.
pub fn display_whole_seconds(duration: Duration) -> String {
    let secs = duration.as_secs() + u64::from(duration.subsec_nanos() > 0);
    display(Duration::from_secs(secs.max(1)))
}

/// [`display`] of `duration` rounded down to whole seconds: for time that has passed ("failed
/// 5s ago"), never more than there was.
pub fn display_elapsed(duration: Duration) -> String {
    let secs = duration.as_secs();
    if secs == 0 {
        return "0s".into();
    }
    display(Duration::from_secs(secs))
}

/// A point in time for a message, in UTC to the second: `2027-01-15 08:00:00 UTC`.
pub fn display_time(at: chrono::DateTime<chrono::Utc>) -> impl std::fmt::Display {
    at.format("%Y-%m-%d %H:%M:%S UTC")
}

/// "10 minutes", "1 minute", "45 seconds", for prose: rounded down, never promising more time
/// than there is.
pub fn in_words(duration: Duration) -> String {
    let seconds = duration.as_secs();
    let plural = |n: u64| if n == 1 { "" } else { "s" };
    if seconds < 60 {
        format!("{seconds} second{}", plural(seconds))
    } else {
        let minutes = seconds / 60;
        format!("{minutes} minute{}", plural(minutes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_bare_seconds() {
        assert_eq!(parse("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse("42"), Ok(Duration::from_secs(42)));
        for bad in ["", "s", "5x", "1.5h", "-3s"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn huge_durations_are_refused_not_panicked_on() {
        assert_eq!(parse("168h"), Ok(MAX));
        assert_eq!(parse("604800"), Ok(MAX));
        for huge in [
            "18446744073709551615",
            "18446744073709551616",
            "18446744073709551615s1s",
            "18446744073709551615h",
            "5124095576030431h",
            "168h1ms",
            "604801",
            "99999999999999999999999ms",
        ] {
            let err = parse(huge).unwrap_err();
            assert!(
                err.ends_with("is too long; at most 168h (7 days)"),
                "{huge}: {err}"
            );
        }
    }

    #[test]
    fn displays_as_the_flags_take_it() {
        assert_eq!(display(Duration::from_millis(200)), "200ms");
        assert_eq!(display(Duration::from_secs(30)), "30s");
        assert_eq!(display(Duration::from_millis(1500)), "1.5s");
        assert_eq!(display(Duration::from_secs(90)), "1m30s");
        assert_eq!(display(Duration::from_secs(210)), "3m30s");
        assert_eq!(display(Duration::from_secs(3600)), "1h");
        for shown in ["200ms", "30s", "1m30s", "3m30s", "1h"] {
            assert_eq!(display(parse(shown).unwrap()), shown);
        }
    }

    #[test]
    fn rounding_for_limits_and_elapsed_time() {
        assert_eq!(display_whole_seconds(Duration::from_millis(300)), "1s");
        assert_eq!(display_whole_seconds(Duration::from_millis(24_100)), "25s");
        assert_eq!(display_whole_seconds(Duration::ZERO), "1s");
        assert_eq!(display_whole_seconds(Duration::from_secs(180)), "3m");
        assert_eq!(display_elapsed(Duration::from_millis(5_900)), "5s");
        assert_eq!(display_elapsed(Duration::from_millis(10)), "0s");
    }

    #[test]
    fn words_round_down() {
        assert_eq!(in_words(Duration::from_secs(600)), "10 minutes");
        assert_eq!(in_words(Duration::from_secs(119)), "1 minute");
        assert_eq!(in_words(Duration::from_secs(45)), "45 seconds");
        assert_eq!(in_words(Duration::from_secs(1)), "1 second");
    }
}
