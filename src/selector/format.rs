//! `string.format(list)` of cel-go's `ext.Strings` library at the version Kubernetes
//! enables (2, `k8s.io/apiserver/pkg/cel/environment/base.go`), which uses cel-go's
//! first formatter (`ext/formatting.go`) with the default locale `en_US`.
//!
//! Clauses: `%s` (any string, bool, bytes, number, null, type, list or map), `%d`
//! (integers), `%f` and `%.Nf` (doubles, or the strings `"NaN"`, `"Infinity"`,
//! `"-Infinity"`), `%e` (likewise, scientific), `%b` (integers and bools), `%x`/`%X`
//! (integers, strings, bytes), `%o` (integers) and `%%`. As upstream:
//!
//! - `%f` and `%e` are printed for the `en_US` locale (cel-go hands them to
//!   `golang.org/x/text/message`): the integer part is grouped with `,`, infinities
//!   print as `∞`, and `%e` prints `2.718280 × 10⁰⁰` (narrow no-break spaces around
//!   `×`, superscript exponent of at least two digits) with six decimals whatever the
//!   precision, because cel-go passes the precision as a width (`%6e`).
//! - `%s` of a double prints it as `string(double)` does; inside a list or map a
//!   double prints with six decimals, strings and bytes are quoted, and map entries
//!   are sorted by their printed key.
//! - A precision above 1074 counts as 1074 (see `MAX_PRECISION`): schedkit's bound.
//! - Errors carry upstream's messages ("index 2 out of range", "could not parse
//!   formatting clause: ...", "error during formatting: ...").
//!
//! [`check`] replays cel-go's compile-time validator (`stringFormatValidator`) for a
//! constant format string with a list literal of arguments: clause syntax, argument
//! count and the static type of each argument.

use std::fmt::Write as _;

use super::error::EvalErrorKind;
use super::text::{format_double, go_quote};
use super::types::Ty;
use super::value::Value;

/// A parsed clause verb.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verb {
    Str,
    Decimal,
    Fixed(usize),
    Scientific(usize),
    Binary,
    Hex(bool),
    Octal,
}

/// cel-go's `defaultPrecision`.
const DEFAULT_PRECISION: usize = 6;

/// schedkit's cap on a `%.Nf` precision and a `%.Ne` width (which cel-go applies as a
/// padding width): 1074 digits show every digit of any double; beyond that upstream
/// only adds zeros or spaces, which schedkit does not, so that a short expression
/// cannot allocate gigabytes per device.
const MAX_PRECISION: usize = 1074;

/// Why a format string failed: the message upstream reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FormatError(pub(crate) String);

fn err<T>(message: impl Into<String>) -> Result<T, FormatError> {
    Err(FormatError(message.into()))
}

/// The clause after a `%` (and not `%%`) at the start of `rest`: how many bytes it
/// takes and its verb. `rest` starts after the `%`.
fn parse_clause(rest: &[u8]) -> Result<(usize, Verb), FormatError> {
    let clause_err = |m: String| FormatError(format!("could not parse formatting clause: {m}"));
    let mut i = 0;
    let mut precision = None;
    if rest.first() == Some(&b'.') {
        i = 1;
        let start = i;
        loop {
            let Some(&b) = rest.get(i) else {
                return Err(clause_err(
                    "error while parsing precision: could not find end of precision specifier".to_owned(),
                ));
            };
            if !b.is_ascii_digit() {
                break;
            }
            i += 1;
        }
        let digits = std::str::from_utf8(&rest[start..i]).unwrap_or("");
        match digits.parse::<usize>() {
            Ok(p) => precision = Some(p),
            Err(_) => {
                return Err(clause_err(format!(
                    "error while parsing precision: error while converting precision to integer: strconv.Atoi: parsing {digits:?}: {}",
                    if digits.is_empty() { "invalid syntax" } else { "value out of range" }
                )));
            }
        }
    }
    // Upstream reads one byte as the verb (a multi-byte character shows as its first
    // byte's Latin-1 reading in the message).
    let Some(&b) = rest.get(i) else {
        return Err(FormatError("unexpected end of string".to_owned()));
    };
    let p = precision.unwrap_or(DEFAULT_PRECISION);
    let verb = match b {
        b's' => Verb::Str,
        b'd' => Verb::Decimal,
        b'f' => Verb::Fixed(p),
        b'e' => Verb::Scientific(p),
        b'b' => Verb::Binary,
        b'x' => Verb::Hex(false),
        b'X' => Verb::Hex(true),
        b'o' => Verb::Octal,
        other => {
            return Err(clause_err(format!("unrecognized formatting clause \"{}\"", char::from(other))));
        }
    };
    Ok((i + 1, verb))
}

/// A piece of a format string: literal text or a clause for argument `index`.
enum Piece<'s> {
    Text(&'s str),
    Clause(usize, Verb),
}

/// Walks `src`, handing each literal text and clause to `on`. `count` is the number of
/// arguments; a clause beyond it is "index N out of range" (checked before the clause
/// is parsed, as upstream). Returns how many clauses there were.
fn walk<'s>(
    src: &'s str,
    count: usize,
    mut on: impl FnMut(Piece<'s>) -> Result<(), FormatError>,
) -> Result<usize, FormatError> {
    let bytes = src.as_bytes();
    let mut i = 0;
    let mut lit = 0;
    let mut arg = 0;
    while i < bytes.len() {
        if bytes[i] != b'%' {
            i += 1;
            continue;
        }
        on(Piece::Text(&src[lit..i]))?;
        if bytes.get(i + 1) == Some(&b'%') {
            on(Piece::Text("%"))?;
            i += 2;
            lit = i;
            continue;
        }
        if arg >= count {
            return err(format!("index {arg} out of range"));
        }
        if i + 1 >= bytes.len() {
            return err("unexpected end of string");
        }
        let (n, verb) = parse_clause(&bytes[i + 1..])?;
        on(Piece::Clause(arg, verb))?;
        arg += 1;
        i += 1 + n;
        lit = i;
    }
    on(Piece::Text(&src[lit..]))?;
    Ok(arg)
}

/// Formats `src` with `args` (evaluation).
pub(crate) fn format(src: &str, args: &[Value<'_>]) -> Result<String, EvalErrorKind> {
    let mut out = String::with_capacity(src.len());
    walk(src, args.len(), |p| {
        match p {
            Piece::Text(t) => out.push_str(t),
            Piece::Clause(i, verb) => {
                let s = render(&args[i], verb).map_err(|m| FormatError(format!("error during formatting: {m}")))?;
                out.push_str(&s);
            }
        }
        Ok(())
    })
    .map_err(|FormatError(m)| EvalErrorKind::InvalidArgument { function: "format", message: m })?;
    Ok(out)
}

/// One clause applied to one value; the error is the message without the
/// "error during formatting: " prefix.
fn render(v: &Value<'_>, verb: Verb) -> Result<String, String> {
    let ty = v.type_name();
    match verb {
        Verb::Str => format_string(v),
        Verb::Decimal => match v {
            Value::Int(i) => Ok(i.to_string()),
            Value::Uint(u) => Ok(u.to_string()),
            _ => Err(format!("decimal clause can only be used on integers, was given {ty}")),
        },
        Verb::Fixed(p) => match float_arg(v) {
            Some(d) => Ok(fixed_en_us(d, p)),
            None => Err(format!("fixed-point clause can only be used on doubles, was given {ty}")),
        },
        Verb::Scientific(width) => match float_arg(v) {
            Some(d) => Ok(scientific_en_us(d, width)),
            None => Err(format!("scientific clause can only be used on doubles, was given {ty}")),
        },
        Verb::Binary => match v {
            Value::Int(i) => Ok(signed_radix(*i, |u| format!("{u:b}"))),
            Value::Uint(u) => Ok(format!("{u:b}")),
            Value::Bool(b) => Ok(if *b { "1" } else { "0" }.to_owned()),
            _ => Err(format!("only integers and bools can be formatted as binary, was given {ty}")),
        },
        Verb::Hex(upper) => {
            let s = match v {
                Value::Int(i) => signed_radix(*i, |u| format!("{u:x}")),
                Value::Uint(u) => format!("{u:x}"),
                Value::Str(s) => hex_bytes(s.as_bytes()),
                Value::Bytes(b) => hex_bytes(b),
                _ => {
                    return Err(format!(
                        "only integers, byte buffers, and strings can be formatted as hex, was given {ty}"
                    ));
                }
            };
            Ok(if upper { s.to_ascii_uppercase() } else { s })
        }
        Verb::Octal => match v {
            Value::Int(i) => Ok(signed_radix(*i, |u| format!("{u:o}"))),
            Value::Uint(u) => Ok(format!("{u:o}")),
            _ => Err(format!("octal clause can only be used on integers, was given {ty}")),
        },
    }
}

/// Go prints a negative number in another base as `-` and the magnitude.
fn signed_radix(i: i64, f: impl Fn(u64) -> String) -> String {
    if i < 0 { format!("-{}", f(i.unsigned_abs())) } else { f(i.unsigned_abs()) }
}

fn hex_bytes(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

/// The double a `%f`/`%e` clause takes: a double, or one of the three strings cel-go
/// accepts for the non-finite values.
fn float_arg(v: &Value<'_>) -> Option<f64> {
    match v {
        Value::Double(d) => Some(*d),
        Value::Str(s) => match &**s {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

fn non_finite(d: f64) -> Option<&'static str> {
    if d.is_nan() {
        Some("NaN")
    } else if d == f64::INFINITY {
        Some("∞")
    } else if d == f64::NEG_INFINITY {
        Some("-∞")
    } else {
        None
    }
}

/// `%.Nf` for `en_US`: correctly rounded, integer digits grouped by three with `,`.
fn fixed_en_us(d: f64, precision: usize) -> String {
    if let Some(s) = non_finite(d) {
        return s.to_owned();
    }
    let plain = format!("{:.*}", precision.min(MAX_PRECISION), d.abs());
    let (int, frac) = plain.split_once('.').map_or((plain.as_str(), None), |(a, b)| (a, Some(b)));
    let mut out = String::with_capacity(plain.len() + int.len() / 3 + 1);
    if d.is_sign_negative() && plain.bytes().any(|b| b.is_ascii_digit() && b != b'0') {
        out.push('-');
    }
    group_thousands(int, &mut out);
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    out
}

fn group_thousands(int: &str, out: &mut String) {
    let n = int.len();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (n - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
}

/// `%e` for `en_US`: six decimals, `×`, and a superscript exponent of at least two
/// digits, left-padded with spaces to `width` characters.
fn scientific_en_us(d: f64, width: usize) -> String {
    let body = if let Some(s) = non_finite(d) {
        s.to_owned()
    } else {
        let sci = format!("{d:.DEFAULT_PRECISION$e}");
        let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        let mut s = String::with_capacity(mantissa.len() + 16);
        s.push_str(mantissa);
        s.push_str("\u{202f}\u{d7}\u{202f}10");
        if exp < 0 {
            s.push('\u{207b}');
        }
        let digits = format!("{:02}", exp.unsigned_abs());
        for c in digits.chars() {
            s.push(superscript(c));
        }
        s
    };
    let len = body.chars().count();
    let width = width.min(MAX_PRECISION);
    if len >= width { body } else { format!("{}{body}", " ".repeat(width - len)) }
}

fn superscript(c: char) -> char {
    match c {
        '0' => '\u{2070}',
        '1' => '\u{b9}',
        '2' => '\u{b2}',
        '3' => '\u{b3}',
        '4' => '\u{2074}',
        '5' => '\u{2075}',
        '6' => '\u{2076}',
        '7' => '\u{2077}',
        '8' => '\u{2078}',
        _ => '\u{2079}',
    }
}

const STRING_CLAUSE_TYPES: &str = "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, and timestamps";

/// `%s` of a value (cel-go `FormatString`).
fn format_string(v: &Value<'_>) -> Result<String, String> {
    Ok(match v {
        Value::Str(s) => s.to_string(),
        Value::Bytes(b) => String::from_utf8(b.to_vec()).map_err(|_| "invalid UTF-8 in bytes".to_owned())?,
        Value::Int(i) => i.to_string(),
        Value::Uint(u) => u.to_string(),
        Value::Double(d) => format_double(*d),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".to_owned(),
        Value::Type(t) => (*t).to_owned(),
        Value::Timestamp(t) => super::time::format_timestamp(*t),
        Value::Duration(d) => super::time::format_duration(*d),
        Value::List(_) => format_list(v)?,
        Value::Map(_) | Value::Attributes(_) | Value::AttrDomain(..) | Value::Capacity(_) | Value::CapDomain(..) => {
            format_map(v)?
        }
        other => return Err(format!("{STRING_CLAUSE_TYPES}, was given {}", other.type_name())),
    })
}

/// An element of a list or a map value inside `%s` (cel-go `clauseForType` followed
/// by `quoteForCEL`).
fn format_member(v: &Value<'_>) -> Result<String, String> {
    Ok(match v {
        Value::Int(i) => i.to_string(),
        Value::Uint(u) => u.to_string(),
        Value::Double(d) => {
            let s = format!("{d:.6}");
            match non_finite(*d) {
                Some(_) => go_quote(&format_double(*d)),
                None => s,
            }
        }
        Value::Str(s) => go_quote(s),
        Value::Bytes(_) => format!("b{}", go_quote(&format_string(v)?)),
        // Printed as CEL literals.
        Value::Timestamp(t) => format!("timestamp({})", go_quote(&super::time::format_timestamp(*t))),
        Value::Duration(d) => format!("duration({})", go_quote(&super::time::format_duration(*d))),
        Value::Bool(_) | Value::Null | Value::Type(_) | Value::List(_) => format_string(v)?,
        Value::Map(_) | Value::Attributes(_) | Value::AttrDomain(..) | Value::Capacity(_) | Value::CapDomain(..) => {
            format_map(v)?
        }
        other => return Err(format!("no formatting function for {}", other.type_name())),
    })
}

fn format_list(v: &Value<'_>) -> Result<String, String> {
    let Value::List(items) = v else {
        return Ok(String::new());
    };
    let mut out = String::from("[");
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&format_member(x)?);
    }
    out.push(']');
    Ok(out)
}

fn format_map(v: &Value<'_>) -> Result<String, String> {
    let pairs = v.iter_pairs().unwrap_or_default();
    let mut entries: Vec<(String, String)> = Vec::with_capacity(pairs.len());
    for (k, x) in &pairs {
        let key = match k {
            Value::Str(s) => go_quote(s),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Uint(u) => u.to_string(),
            other => return Err(format!("no formatting function for map key of type {}", other.type_name())),
        };
        entries.push((key, format_member(x)?));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = String::from("{");
    for (i, (k, x)) in entries.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(k);
        out.push(':');
        out.push_str(x);
    }
    out.push('}');
    Ok(out)
}

/// The static type of one argument and, for list and map literals, of their members.
pub(crate) struct ArgShape {
    pub(crate) ty: Ty,
    pub(crate) members: Vec<ArgShape>,
}

/// cel-go's compile-time validation of `"<constant>".format([<list literal>])`: the
/// message of the first problem, if any.
pub(crate) fn check(src: &str, args: &[ArgShape]) -> Option<String> {
    let r = walk(src, usize::MAX, |p| match p {
        Piece::Text(_) => Ok(()),
        // Too few arguments: upstream's checker reports the index.
        Piece::Clause(i, verb) => match args.get(i) {
            None => err(format!("index {i} out of range")),
            Some(a) => check_arg(a, verb).map_err(|m| FormatError(format!("error during formatting: {m}"))),
        },
    });
    match r {
        Err(FormatError(m)) => Some(m),
        Ok(seen) if args.len() > seen => {
            Some(format!("too many arguments supplied to string.format (expected {seen}, got {})", args.len()))
        }
        Ok(_) => None,
    }
}

fn check_arg(a: &ArgShape, verb: Verb) -> Result<(), String> {
    let ok = |allowed: &[fn(&Ty) -> bool]| matches!(a.ty, Ty::Dyn) || allowed.iter().any(|f| f(&a.ty));
    let int = |t: &Ty| matches!(t, Ty::Int);
    let unsigned = |t: &Ty| matches!(t, Ty::Uint);
    let double = |t: &Ty| matches!(t, Ty::Double);
    let string = |t: &Ty| matches!(t, Ty::String);
    let bytes = |t: &Ty| matches!(t, Ty::Bytes);
    let boolean = |t: &Ty| matches!(t, Ty::Bool);
    let ty = &a.ty;
    match verb {
        Verb::Str => check_string(a),
        Verb::Decimal if !ok(&[int, unsigned]) => {
            Err(format!("decimal clause can only be used on integers, was given {ty}"))
        }
        Verb::Fixed(_) if !ok(&[double, string]) => {
            Err(format!("fixed-point clause can only be used on doubles, was given {ty}"))
        }
        Verb::Scientific(_) if !ok(&[double, string]) => {
            Err(format!("scientific clause can only be used on doubles, was given {ty}"))
        }
        Verb::Binary if !ok(&[int, unsigned, boolean]) => {
            Err(format!("only integers and bools can be formatted as binary, was given {ty}"))
        }
        Verb::Hex(_) if !ok(&[int, unsigned, string, bytes]) => {
            Err(format!("only integers, byte buffers, and strings can be formatted as hex, was given {ty}"))
        }
        Verb::Octal if !ok(&[int, unsigned]) => {
            Err(format!("octal clause can only be used on integers, was given {ty}"))
        }
        _ => Ok(()),
    }
}

fn check_string(a: &ArgShape) -> Result<(), String> {
    let fine = matches!(
        a.ty,
        Ty::Dyn
            | Ty::List(_)
            | Ty::Map(..)
            | Ty::Int
            | Ty::Uint
            | Ty::Double
            | Ty::Bool
            | Ty::String
            | Ty::Bytes
            | Ty::Type
            | Ty::Null
            | Ty::Timestamp
            | Ty::Duration
    );
    if !fine {
        return Err(format!("{STRING_CLAUSE_TYPES}, was given {}", a.ty));
    }
    a.members.iter().try_for_each(check_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn en_us_numbers() {
        assert_eq!(fixed_en_us(1.2345, 3), "1.234");
        assert_eq!(fixed_en_us(2.5, 6), "2.500000");
        assert_eq!(fixed_en_us(1_234_567.5, 1), "1,234,567.5");
        assert_eq!(fixed_en_us(-0.0001, 2), "0.00");
        assert_eq!(fixed_en_us(-1000.0, 0), "-1,000");
        assert_eq!(fixed_en_us(f64::NEG_INFINITY, 2), "-∞");
        assert_eq!(scientific_en_us(1_052.032_911_275, 6), "1.052033\u{202f}\u{d7}\u{202f}10\u{2070}\u{b3}");
        assert_eq!(scientific_en_us(2.5, 6), "2.500000\u{202f}\u{d7}\u{202f}10\u{2070}\u{2070}");
        assert_eq!(scientific_en_us(-0.00125, 6), "-1.250000\u{202f}\u{d7}\u{202f}10\u{207b}\u{2070}\u{b3}");
    }
}
