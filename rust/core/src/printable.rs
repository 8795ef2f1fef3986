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

#[cfg(test)]
mod tests {
    use super::printable;

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
}
