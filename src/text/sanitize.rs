//! Make untrusted text (model output, charters, file contents, error messages) safe to draw in a
//! terminal: no escape sequences, no control characters except newline, no bidi controls, no
//! invisible zero-width characters (DESIGN.md "Untrusted text", tui-anchors.md §4.3).
//!
//! Apply it to the accumulated text at the point where it is drawn, never to each streamed
//! piece on its own: an escape sequence can be split across pieces. Transcripts on disk keep
//! the raw text.

use std::borrow::Cow;

/// Tab stops every this many columns.
pub const TAB_WIDTH: usize = 4;

/// `s` made safe to draw; borrowed when nothing had to change.
///
/// - `\r\n` and a lone `\r` become `\n`; a tab becomes spaces up to the next tab stop
///   (columns counted in characters since the last newline);
/// - escape sequences are removed whole: CSI, OSC (ended by BEL or ST), DCS/SOS/PM/APC (ended by
///   ST), `ESC` + intermediates + one final byte, 8-bit CSI with its parameters; a sequence
///   that never ends runs to the end of the input;
/// - every other control character (C0 except `\n`, DEL, C1) is dropped;
/// - bidi controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069) and zero-width
///   characters (U+200B, U+200C, U+2060, U+FEFF) are dropped; the zero-width joiner U+200D is
///   kept because emoji sequences need it.
///
/// The result contains no `char::is_control` except `\n`, and `display(display(x)) == display(x)`.
pub fn display(s: &str) -> Cow<'_, str> {
    if needs_cleaning(s.as_bytes()) {
        Cow::Owned(clean(s))
    } else {
        Cow::Borrowed(s)
    }
}

/// [`display`] for text that is edited and kept (a composer, a text field, a stored prompt):
/// tabs survive, since an editor draws them itself and they may be sent or saved.
pub fn editable(text: &str) -> String {
    text.split('\t').map(display).collect::<Vec<_>>().join("\t")
}

/// True for characters that are dropped wherever they stand.
pub fn is_invisible_or_control(c: char) -> bool {
    (c.is_control() && c != '\n') || is_bidi_control(c) || is_zero_width(c)
}

fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

fn is_zero_width(c: char) -> bool {
    matches!(c, '\u{200B}' | '\u{200C}' | '\u{2060}' | '\u{FEFF}')
}

/// True when [`clean`] would change `b`.
fn needs_cleaning(b: &[u8]) -> bool {
    next_special(b, 0, false) < b.len()
}

/// Eight bytes at `i`, if there are that many.
#[inline]
fn word_at(b: &[u8], i: usize) -> Option<u64> {
    let chunk: [u8; 8] = b.get(i..i + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(chunk))
}

/// True when every byte of `w` is printable ASCII (0x20..=0x7E).
#[inline]
fn all_printable_ascii(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let has_below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
    let has_del_or_high = (w.wrapping_add(ONES) | w) & HIGH;
    has_below_space | has_del_or_high == 0
}

/// The index of the first byte at or after `from` that [`clean`] must look at: a control
/// character (`\n` only when `newline` is set) or the first byte of a dropped character. Eight
/// bytes of printable ASCII are skipped at a time. The UTF-8 lead bytes checked (0xC2, 0xD8,
/// 0xE2, 0xEF) are never continuation bytes, so a hit is always a character boundary.
fn next_special(b: &[u8], from: usize, newline: bool) -> usize {
    let mut i = from;
    while i < b.len() {
        if word_at(b, i).is_some_and(all_printable_ascii) {
            i += 8;
            continue;
        }
        if is_special(b, i, newline) {
            return i;
        }
        i += 1;
    }
    b.len()
}

#[inline]
fn is_special(b: &[u8], i: usize, newline: bool) -> bool {
    match b[i] {
        b'\n' => newline,
        0x00..=0x1F | 0x7F => true,
        // C1 controls U+0080–U+009F.
        0xC2 => matches!(b.get(i + 1), Some(0x80..=0x9F)),
        // U+061C arabic letter mark.
        0xD8 => b.get(i + 1) == Some(&0x9C),
        0xE2 => matches!(
            (b.get(i + 1), b.get(i + 2)),
            // U+200B, U+200C, U+200E, U+200F, U+202A–U+202E (not U+200D, the ZWJ).
            (Some(0x80), Some(0x8B | 0x8C | 0x8E | 0x8F | 0xAA..=0xAE))
                // U+2060, U+2066–U+2069.
                | (Some(0x81), Some(0xA0 | 0xA6..=0xA9))
        ),
        // U+FEFF.
        0xEF => b.get(i + 1) == Some(&0xBB) && b.get(i + 2) == Some(&0xBF),
        _ => false,
    }
}

/// The length of the UTF-8 sequence that `lead` starts.
fn utf8_len(lead: u8) -> usize {
    match lead {
        0x00..=0x7F => 1,
        0x80..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    }
}

fn clean(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    // The column of `out[column_at..]`'s start, so a tab counts only what came since.
    let (mut column_at, mut column) = (0usize, 0usize);
    let mut i = 0;
    while i < b.len() {
        let next = next_special(b, i, true);
        out.push_str(&s[i..next]);
        if next >= b.len() {
            break;
        }
        i = next;
        match b[i] {
            b'\n' | b'\r' => {
                i += if b[i] == b'\r' && b.get(i + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                };
                out.push('\n');
                (column_at, column) = (out.len(), 0);
            }
            b'\t' => {
                let at = column + out[column_at..].chars().count();
                let spaces = TAB_WIDTH - at % TAB_WIDTH;
                out.extend(std::iter::repeat_n(' ', spaces));
                (column_at, column) = (out.len(), at + spaces);
                i += 1;
            }
            ESC_BYTE => i = skip_escape(b, i + 1),
            // 8-bit CSI, U+009B.
            0xC2 if b.get(i + 1) == Some(&0x9B) => i = skip_csi_body(b, i + 2),
            lead => i += utf8_len(lead),
        }
    }
    out
}

const ESC_BYTE: u8 = 0x1B;
const BEL_BYTE: u8 = 0x07;

/// Skips what follows an `ESC` (from `i`, just after it); returns where text resumes. A string
/// sequence cut short by another `ESC` continues the loop with the sequence that one starts (a
/// loop, not recursion, so hostile input cannot exhaust the stack).
fn skip_escape(b: &[u8], mut i: usize) -> usize {
    loop {
        let Some(&c) = b.get(i) else {
            return i;
        };
        let (end, another_escape) = match c {
            b'[' => return skip_csi_body(b, i + 1),
            b']' => skip_string_sequence(b, i + 1, true),
            b'P' | b'X' | b'^' | b'_' => skip_string_sequence(b, i + 1, false),
            // A control character after ESC is not part of the sequence: the caller handles it
            // (keeps a newline, drops the rest).
            0x00..=0x1F => return i,
            // nF sequences (`ESC ( B` and friends): intermediates 0x20–0x2F, then one final byte.
            0x20..=0x2F => {
                let mut j = i + 1;
                while b.get(j).is_some_and(|c| (0x20..=0x2F).contains(c)) {
                    j += 1;
                }
                if b.get(j).is_some_and(|c| (0x30..=0x7E).contains(c)) {
                    j += 1;
                }
                return j;
            }
            // ESC + one character.
            lead => return i + utf8_len(lead),
        };
        if !another_escape {
            return end;
        }
        i = end;
    }
}

/// Skips CSI parameters and intermediates (0x20–0x3F) and the final byte (0x40–0x7E). A byte
/// that fits neither ends the sequence without being consumed.
fn skip_csi_body(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|c| (0x20..=0x3F).contains(c)) {
        i += 1;
    }
    if b.get(i).is_some_and(|c| (0x40..=0x7E).contains(c)) {
        i += 1;
    }
    i
}

/// Skips the body of OSC/DCS/SOS/PM/APC up to and including its terminator: ST (`ESC \` or
/// U+009C), or BEL for OSC; unterminated, to the end. Returns where it stopped and whether it
/// stopped just after an `ESC` that starts another sequence.
fn skip_string_sequence(b: &[u8], mut i: usize, bel_ends: bool) -> (usize, bool) {
    while i < b.len() {
        match b[i] {
            BEL_BYTE if bel_ends => return (i + 1, false),
            0xC2 if b.get(i + 1) == Some(&0x9C) => return (i + 2, false),
            ESC_BYTE if b.get(i + 1) == Some(&b'\\') => return (i + 2, false),
            ESC_BYTE => return (i + 1, true),
            _ => i += 1,
        }
    }
    (i, false)
}

/// One NDJSON line (`--events` output) with every JSON string in it cleaned as [`display`]
/// cleans text: C1 controls (U+009B, U+009D...), escape sequences (written `\u001b` in JSON),
/// other control characters except newlines, bidi overrides and zero-width characters. Keys,
/// their order and everything else stay as they were; borrowed when nothing had to change.
///
/// A consumer that decodes the JSON and prints a field to a terminal then prints nothing that
/// can move the cursor, recolour, retitle or reorder what it shows.
pub fn json_line(line: &str) -> Cow<'_, str> {
    // Escaped control characters (`\u001b`, `\t`, `\r`...) or raw special characters.
    let escaped = line.contains("\\u") || line.contains("\\t") || line.contains("\\r");
    if !escaped && !needs_cleaning(line.as_bytes()) {
        return Cow::Borrowed(line);
    }
    let b = line.as_bytes();
    let mut out = String::with_capacity(line.len());
    let (mut i, mut copied) = (0, 0);
    while i < b.len() {
        if b[i] != b'"' {
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        while i < b.len() && b[i] != b'"' {
            i += if b[i] == b'\\' { 2 } else { 1 };
        }
        let end = (i + 1).min(b.len());
        i = end;
        // Only a complete, valid string literal is rewritten; anything else is copied as is.
        let Some(literal) = line.get(start..end) else {
            continue;
        };
        let Ok(text) = serde_json::from_str::<String>(literal) else {
            continue;
        };
        if let Cow::Owned(clean) = display(&text)
            && let Ok(encoded) = serde_json::to_string(&clean)
        {
            out.push_str(&line[copied..start]);
            out.push_str(&encoded);
            copied = end;
        }
    }
    if copied == 0 {
        return Cow::Borrowed(line);
    }
    out.push_str(&line[copied..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_safe(out: &str) {
        for c in out.chars() {
            assert!(!(c.is_control() && c != '\n'), "control {c:?} left in {out:?}");
            assert!(!is_bidi_control(c), "bidi {c:?} left in {out:?}");
            assert!(!is_zero_width(c), "zero-width {c:?} left in {out:?}");
        }
    }

    #[test]
    fn hostile_strings_are_cleaned() {
        let table: &[(&str, &str)] = &[
            ("title\x1b]0;pwned\x07after", "titleafter"),
            ("a\x1b]0;pwned\x1b\\b", "ab"),
            ("\x1b[2Jclear", "clear"),
            ("\x1b[31mred\x1b[0m", "red"),
            ("\x1b[38;2;255;0;0mrgb\x1b[m", "rgb"),
            (
                "link \x1b]8;;http://evil\x1b\\text\x1b]8;;\x1b\\ end",
                "link text end",
            ),
            ("dcs\x1bPq#0;2;0;0;0\x1b\\done", "dcsdone"),
            ("apc\x1b_hidden\x1b\\ok", "apcok"),
            ("pm\x1b^hidden\x1b\\ok", "pmok"),
            ("sos\x1bXhidden\x1b\\ok", "sosok"),
            ("charset\x1b(Bx", "charsetx"),
            ("keypad\x1b=x", "keypadx"),
            ("8bit\u{9b}31mcsi", "8bitcsi"),
            ("unterminated\x1b]0;forever", "unterminated"),
            ("unterminated dcs\x1bPabc", "unterminated dcs"),
            ("trailing esc\x1b", "trailing esc"),
            ("half csi\x1b[", "half csi"),
            ("csi cut by newline\x1b[12\nnext", "csi cut by newline\nnext"),
            ("osc aborted\x1b]0;t\x1b[1mbold", "osc abortedbold"),
            ("esc esc\x1b\x1b[1mx", "esc escx"),
            ("bell\x07 nul\0 del\x7f bs\x08", "bell nul del bs"),
            ("c1\u{85}\u{90}\u{9d}x", "c1x"),
            (
                "bidi \u{202E}evil\u{202C} \u{2066}iso\u{2069} \u{200F}\u{061C}",
                "bidi evil iso ",
            ),
            ("zero\u{200B}wid\u{200C}th\u{2060}\u{FEFF}", "zerowidth"),
            ("crlf\r\nlone\rcr", "crlf\nlone\ncr"),
            ("\tx\ty", "    x   y"),
            ("ab\tc\nabcd\te", "ab  c\nabcd    e"),
        ];
        for (input, want) in table {
            let out = display(input);
            assert_eq!(&out, want, "input {input:?}");
            assert_safe(&out);
        }
    }

    #[test]
    fn sgr_leaves_no_residue() {
        let out = display("\x1b[31merror\x1b[0m: \x1b[1;4mbad\x1b[22m");
        assert_eq!(out, "error: bad");
        assert!(!out.contains("[31m") && !out.contains('['));
    }

    #[test]
    fn clean_text_is_borrowed() {
        for s in [
            "plain",
            "émoji 👩\u{200D}💻 and ünïcode\nlines",
            "",
            "a [bracket] `code`",
        ] {
            assert!(matches!(display(s), Cow::Borrowed(_)), "{s:?}");
            assert_eq!(display(s), s);
        }
        assert!(matches!(display("a\tb"), Cow::Owned(_)));
    }

    #[test]
    fn zero_width_joiner_is_kept() {
        let family = "👨\u{200D}👩\u{200D}👧";
        assert_eq!(display(&format!("{family}\u{200B}")), family);
    }

    #[test]
    fn random_hostile_input_is_safe_and_idempotent() {
        let pieces = [
            "\x1b", "[", "]", "P", "\\", "\x07", "\r", "\n", "\t", "0;", "31m", "\u{9b}", "\u{9c}", "\u{85}",
            "\u{202E}", "\u{200B}", "\u{200D}", "\u{FEFF}", "a", "é", "漢", "👍", "(", "_", "\x7f", "\0",
            " ",
        ];
        let mut rng = fastrand::Rng::with_seed(0x5eed);
        for _ in 0..5000 {
            let len = rng.usize(0..24);
            let input: String = (0..len).map(|_| pieces[rng.usize(0..pieces.len())]).collect();
            let once = display(&input);
            assert_safe(&once);
            let twice = display(&once);
            assert_eq!(twice, once, "not idempotent for {input:?}");
            assert!(matches!(twice, Cow::Borrowed(_)), "second pass changed {input:?}");
        }
    }

    #[test]
    fn random_safe_input_is_untouched() {
        let pieces = [
            "a", "é", "漢", "👍", "\u{200D}", " ", "\n", "[31m", "~", "\u{A0}", "\u{2028}", "ok.",
        ];
        let mut rng = fastrand::Rng::with_seed(0xc1ea);
        for _ in 0..2000 {
            let len = rng.usize(0..40);
            let input: String = (0..len).map(|_| pieces[rng.usize(0..pieces.len())]).collect();
            assert!(matches!(display(&input), Cow::Borrowed(_)), "{input:?}");
        }
    }

    #[test]
    fn kept_text_survives_around_removed_parts() {
        let mut rng = fastrand::Rng::with_seed(0xbeef);
        let hostile = [
            "\x1b[1;31m",
            "\x1b]0;t\x07",
            "\u{202E}",
            "\u{200B}",
            "\x07",
            "\x1b(B",
            "\u{9b}2J",
        ];
        for _ in 0..500 {
            let mut input = String::new();
            let mut want = String::new();
            for _ in 0..rng.usize(1..20) {
                let word = ["alpha ", "ünï ", "漢字 ", "👍 ", "x"][rng.usize(0..5)];
                input.push_str(word);
                want.push_str(word);
                input.push_str(hostile[rng.usize(0..hostile.len())]);
            }
            assert_eq!(display(&input), want, "{input:?}");
        }
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let hostile = "\x1b]".repeat(200_000);
        assert_eq!(display(&hostile), "");
    }

    #[test]
    fn json_lines_lose_hostile_characters_in_every_string_and_nothing_else() {
        let event = serde_json::json!({
            "event": "message",
            "group": "team\u{202E}txt.exe",
            "text": "a\u{9B}31mred\u{9D}0;title\u{7}b\u{200B}c\u{1b}[2Jd\ttab\r\nnext",
            "nested": {"list": ["ok", "x\u{2066}y"]},
            "n": 3,
        });
        let line = serde_json::to_string(&event).unwrap();
        let clean = json_line(&line);
        let value: serde_json::Value = serde_json::from_str(&clean).unwrap();
        assert_eq!(value["group"], "teamtxt.exe");
        // As the plain output cleans it: the 8-bit CSI with its parameters goes, the other
        // controls one by one.
        assert_eq!(value["text"], "ared0;titlebcd  tab\nnext");
        assert_eq!(value["text"], *display(event["text"].as_str().unwrap()));
        assert_eq!(value["nested"]["list"][1], "xy");
        assert_eq!(value["n"], 3);
        assert!(
            clean.starts_with("{\"event\":\"message\",\"group\":"),
            "key order kept: {clean}"
        );
        for c in clean.chars() {
            assert!(!is_invisible_or_control(c), "{c:?} in {clean}");
        }
        assert!(
            !clean.contains("\\u001b") && !clean.contains("\\u0007"),
            "{clean}"
        );
        assert_eq!(json_line(&clean), clean, "cleaning twice changes nothing");
    }

    #[test]
    fn clean_json_lines_are_borrowed_and_broken_ones_survive() {
        let line = r#"{"event":"phase","text":"plain \"quoted\" \\ text\nnew line é"}"#;
        assert!(matches!(json_line(line), Cow::Borrowed(_)));
        for odd in [r#"{"a":"\u001b"#, "\"", r#"{"a":"x\"#, "\u{9B}"] {
            let _ = json_line(odd);
        }
        assert_eq!(json_line("\u{9B}"), "\u{9B}", "not a string literal: left alone");
    }
}
