//! Text shared by the value printers and the function library: Go's string quoting,
//! the C escapes cel-go shares with it, and cel-go's `string(double)`.

use std::fmt::Write as _;

/// Writes the backslash escape Go's `%q` and cel-go's `strings.quote` share for `c`
/// (`\"`, `\\`, `\a` `\b` `\f` `\n` `\r` `\t` `\v`); false when `c` has none.
pub(crate) fn push_c_escape(out: &mut String, c: char) -> bool {
    let escape = match c {
        '"' => "\\\"",
        '\\' => "\\\\",
        '\u{07}' => "\\a",
        '\u{08}' => "\\b",
        '\u{0c}' => "\\f",
        '\n' => "\\n",
        '\r' => "\\r",
        '\t' => "\\t",
        '\u{0b}' => "\\v",
        _ => return false,
    };
    out.push_str(escape);
    true
}

/// Go's `%q` of a string: double quotes, `\"` and `\\`, the C escapes, `\xNN` for other
/// ASCII control characters and `\uNNNN` for non-printable characters beyond ASCII.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            c if push_c_escape(&mut out, c) => {}
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Formats a double as cel-go's `string(double)` does (Go's `%g`-like shortest form).
pub(crate) fn format_double(d: f64) -> String {
    if d.is_nan() {
        return "NaN".to_owned();
    }
    if d.is_infinite() {
        return if d > 0.0 { "+Inf".to_owned() } else { "-Inf".to_owned() };
    }
    let sci = format!("{d:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    // Go's shortest `%g` (cel-go's `string(double)`) switches to exponent form for
    // decimal exponents below -4 or from 6 on.
    if d != 0.0 && !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    format!("{d}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_quoting() {
        assert_eq!(go_quote("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\x01\"");
        assert_eq!(go_quote("é"), "\"é\"");
    }
}
