//! Text from a capture or a file name, made safe to show: whoever made the file chose its
//! characters, and an ESC in an interface name would otherwise drive the reader's terminal.

use std::borrow::Cow;

/// Bidirectional controls, which reorder the text shown around them (Trojan Source).
const BIDI_CONTROLS: [char; 12] = [
    '\u{061c}', '\u{200e}', '\u{200f}', '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}',
    '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}',
];

fn escaped(c: char) -> bool {
    (c as u32) < 0x20 || ('\u{7f}'..='\u{9f}').contains(&c) || BIDI_CONTROLS.contains(&c)
}

/// `text` with its control characters (C0, DEL, C1) and bidirectional controls escaped as
/// Python escapes them (`\x1b`, `\n`, `\u202e`): the Python package's messages escape the same
/// characters the same way, so text escaped here reads alike there and is left as it is.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x100 && escaped(c) => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if escaped(c) => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `ns` in its shortest exact rendering, as the Python side writes a duration and reads one
/// back: 10000000 -> "10ms", 1500 -> "1.5us", 2097151987406000 -> "2097151.987406s".
pub fn duration_text(ns: u64) -> String {
    for (unit, scale, digits) in [
        ("s", 1_000_000_000, 9),
        ("ms", 1_000_000, 6),
        ("us", 1_000, 3),
    ] {
        if ns >= scale {
            let frac = format!("{:0digits$}", ns % scale);
            let frac = frac.trim_end_matches('0');
            let dot = if frac.is_empty() { "" } else { "." };
            return format!("{}{dot}{frac}{unit}", ns / scale);
        }
    }
    format!("{ns}ns")
}

/// `ns` since 1970 as ISO 8601 in UTC with every ns (2014-11-24T17:19:33.684826000Z), as the
/// Python side writes an instant and `start=`/`end=` read one.
pub fn iso_ns(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let frac = ns.rem_euclid(1_000_000_000);
    let (year, month, day) = civil_date(secs.div_euclid(86_400));
    let second = secs.rem_euclid(86_400);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{frac:09}Z",
        second / 3600,
        second / 60 % 60,
        second % 60
    )
}

/// The Gregorian date `days` after 1970-01-01. Counted from 0000-03-01, so that a year's leap
/// day is its last: whole 400-year cycles of 146,097 days, then the year in the cycle (each
/// fourth one a day longer, but each hundredth, but each four-hundredth), the day in that
/// year, and its month (March to December, January, February: 153 days every 5 months).
fn civil_date(days: i64) -> (i64, i64, i64) {
    let from_march_0 = days + 719_468;
    let cycle = from_march_0.div_euclid(146_097);
    let day_of_cycle = from_march_0.rem_euclid(146_097);
    let year_of_cycle =
        (day_of_cycle - day_of_cycle / 1460 + day_of_cycle / 36_524 - day_of_cycle / 146_096) / 365;
    let day_of_year =
        day_of_cycle - (365 * year_of_cycle + year_of_cycle / 4 - year_of_cycle / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = cycle * 400 + year_of_cycle + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::{duration_text, iso_ns, printable};

    #[test]
    fn controls_and_bidi_overrides_are_escaped_as_python_repr_escapes_them() {
        // Expected strings: what Python's repr(c)[1:-1] gives for each character.
        let cases = [
            ("eth0", "eth0"),
            ("a\u{1b}[2Jb", "a\\x1b[2Jb"),
            ("\t\n\r\0", "\\t\\n\\r\\x00"),
            ("\u{7f}\u{85}\u{9f}\u{a0}", "\\x7f\\x85\\x9f\u{a0}"),
            ("c\u{202e}d\u{2066}\u{61c}", "c\\u202ed\\u2066\\u061c"),
            ("é 名 \\ \"", "é 名 \\ \""),
        ];
        for (raw, shown) in cases {
            assert_eq!(printable(raw), shown, "{raw:?}");
        }
        assert!(matches!(printable("eth0"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn instants_and_durations_read_as_python_writes_them() {
        // The right-hand sides are Python's (burstcore._units._iso_ns and format_duration, on
        // datetime and Decimal): the instants and durations of a late packet's error read as
        // those of every other message, and paste into start=/end= and reorder_horizon=.
        for (ns, iso) in [
            (0, "1970-01-01T00:00:00.000000000Z"),
            (-1, "1969-12-31T23:59:59.999999999Z"),
            (-2_078_753_920, "1969-12-31T23:59:57.921246080Z"),
            (951_782_400_000_000_000, "2000-02-29T00:00:00.000000000Z"),
            (-2_203_891_200_000_000_000, "1900-03-01T00:00:00.000000000Z"),
            (-2_203_891_200_000_000_001, "1900-02-28T23:59:59.999999999Z"),
            (4_107_542_400_000_000_000, "2100-03-01T00:00:00.000000000Z"),
            (3_981_357_296_000_000_001, "2096-02-29T12:34:56.000000001Z"),
            (-8_515_238_400_000_000_001, "1700-02-28T23:59:59.999999999Z"),
            (1_416_849_573_684_826_000, "2014-11-24T17:19:33.684826000Z"),
            (i64::MAX, "2262-04-11T23:47:16.854775807Z"),
            (i64::MIN, "1677-09-21T00:12:43.145224192Z"),
        ] {
            assert_eq!(iso_ns(ns), iso, "{ns}");
        }
        for (ns, text) in [
            (0, "0ns"),
            (999, "999ns"),
            (1_500, "1.5us"),
            (10_000_000, "10ms"),
            (999_000_000, "999ms"),
            (1_000_000_000, "1s"),
            (2_097_151_987_406_000, "2097151.987406s"),
            (1_472_003_999_360_380_631, "1472003999.360380631s"),
        ] {
            assert_eq!(duration_text(ns), text, "{ns}");
        }
    }
}
