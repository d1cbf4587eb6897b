//! Kubernetes resource quantities (`500m`, `80Gi`, `1.5G`, `1e3`).
//!
//! Follows `k8s.io/apimachinery/pkg/api/resource/quantity.go`: the same grammar,
//! suffixes, rounding (values finer than one nano-unit round up, away from zero) and
//! canonical display (decimal mantissas with exponents in steps of three, binary
//! suffixes only for whole values of at least 1024).
//!
//! The value is held exactly as a count of nano-units in an `i128`, which covers every
//! quantity up to about 1.7e29; larger inputs are rejected with
//! [`QuantityError::OutOfRange`] where upstream would fall back to arbitrary precision.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

const NANO: i128 = 1_000_000_000;

/// Which suffix family a quantity was written in; display keeps it, as upstream does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum QuantityFormat {
    /// Powers of ten with SI suffixes (`m`, `k`, `M`, `G`, ...), and plain numbers.
    #[default]
    DecimalSi,
    /// Powers of 1024 (`Ki`, `Mi`, `Gi`, ...).
    BinarySi,
    /// Scientific notation (`1e3`, `5e-3`).
    DecimalExponent,
}

/// Why a quantity string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The input was empty.
    #[error("quantity is empty")]
    Empty,
    /// The text does not match the quantity grammar; `column` is the 1-based position
    /// of the first character that does not fit.
    #[error("invalid quantity {text:?} at column {column}: {reason}")]
    Syntax {
        /// The whole input.
        text: String,
        /// 1-based column of the offending character.
        column: usize,
        /// What was expected there.
        reason: &'static str,
    },
    /// The value is too large (or its exponent too extreme) to hold exactly.
    #[error("quantity {text:?} is out of range (magnitude must stay below 1e29)")]
    OutOfRange {
        /// The whole input.
        text: String,
    },
}

/// A Kubernetes resource quantity: an exact decimal value with the format it was
/// written in.
///
/// ```
/// use schedkit::model::Quantity;
/// let q: Quantity = "1.5Gi".parse().unwrap();
/// assert_eq!(q.value(), 1_610_612_736);
/// assert_eq!(q.to_string(), "1536Mi");
/// assert_eq!("250m".parse::<Quantity>().unwrap().milli_value(), 250);
/// assert!("12 Gi".parse::<Quantity>().is_err());
/// ```
#[derive(Clone, Copy, Default)]
pub struct Quantity {
    nanos: i128,
    format: QuantityFormat,
}

impl Quantity {
    /// Zero, in decimal format.
    pub const ZERO: Quantity = Quantity { nanos: 0, format: QuantityFormat::DecimalSi };

    /// Parses Kubernetes quantity syntax.
    pub fn parse(text: &str) -> Result<Quantity, QuantityError> {
        parse(text)
    }

    /// A whole-unit quantity (`Quantity::from_int(3)` is `3`).
    pub const fn from_int(value: i64) -> Quantity {
        Quantity { nanos: value as i128 * NANO, format: QuantityFormat::DecimalSi }
    }

    /// A quantity of thousandths (`Quantity::from_milli(500)` is `500m`).
    pub const fn from_milli(milli: i64) -> Quantity {
        Quantity { nanos: milli as i128 * 1_000_000, format: QuantityFormat::DecimalSi }
    }

    /// A byte count displayed with binary suffixes (`Quantity::from_bytes(1024)` is `1Ki`).
    pub const fn from_bytes(bytes: i64) -> Quantity {
        Quantity { nanos: bytes as i128 * NANO, format: QuantityFormat::BinarySi }
    }

    /// The exact value in nano-units (10^-9).
    pub const fn nanos(&self) -> i128 {
        self.nanos
    }

    /// The suffix family used for display.
    pub const fn format(&self) -> QuantityFormat {
        self.format
    }

    /// The value in whole units, rounded up (away from zero) like upstream `Value()`;
    /// saturates at the `i64` range.
    pub fn value(&self) -> i64 {
        saturate(div_round_away(self.nanos, NANO))
    }

    /// The value in thousandths, rounded up like upstream `MilliValue()`; saturates.
    pub fn milli_value(&self) -> i64 {
        saturate(div_round_away(self.nanos, 1_000_000))
    }

    /// The value as a float, like upstream `AsApproximateFloat64()`.
    pub fn as_f64(&self) -> f64 {
        self.nanos as f64 / NANO as f64
    }

    /// Whether the value is a whole number of units.
    pub const fn is_integer(&self) -> bool {
        self.nanos % NANO == 0
    }

    /// -1, 0 or 1.
    pub const fn sign(&self) -> i32 {
        if self.nanos < 0 {
            -1
        } else if self.nanos > 0 {
            1
        } else {
            0
        }
    }

    /// Exact sum; `None` on overflow. Keeps the left operand's format.
    pub fn checked_add(&self, other: &Quantity) -> Option<Quantity> {
        let nanos = self.nanos.checked_add(other.nanos)?;
        (nanos.abs() <= MAX_NANOS).then_some(Quantity { nanos, format: self.format })
    }

    /// Exact difference; `None` on overflow. Keeps the left operand's format.
    pub fn checked_sub(&self, other: &Quantity) -> Option<Quantity> {
        let nanos = self.nanos.checked_sub(other.nanos)?;
        (nanos.abs() <= MAX_NANOS).then_some(Quantity { nanos, format: self.format })
    }

    /// Exact product with an integer; `None` on overflow. Keeps the format (upstream
    /// `Quantity.Mul`, used by the CEL quantity library's `mul`).
    pub fn checked_mul_int(&self, factor: i64) -> Option<Quantity> {
        let nanos = self.nanos.checked_mul(i128::from(factor))?;
        (nanos.abs() <= MAX_NANOS).then_some(Quantity { nanos, format: self.format })
    }

    /// The value as an `i64` when it is a whole number that fits (upstream `AsInt64`).
    pub fn as_i64_exact(&self) -> Option<i64> {
        if self.nanos % NANO == 0 { i64::try_from(self.nanos / NANO).ok() } else { None }
    }

    /// The same value with another display format.
    #[must_use]
    pub const fn with_format(self, format: QuantityFormat) -> Quantity {
        Quantity { nanos: self.nanos, format }
    }
}

/// Magnitude limit: 1e29 units, in nanos.
const MAX_NANOS: i128 = 100_000_000_000_000_000_000 * NANO * 1_000_000_000;

fn saturate(v: i128) -> i64 {
    v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

fn div_round_away(n: i128, d: i128) -> i128 {
    let q = n / d;
    if n % d == 0 {
        q
    } else if n > 0 {
        q + 1
    } else {
        q - 1
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}
impl Eq for Quantity {}
impl std::hash::Hash for Quantity {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.nanos.hash(state);
    }
}
impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

impl fmt::Debug for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Quantity({self})")
    }
}

impl FromStr for Quantity {
    type Err = QuantityError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse(s)
    }
}

impl TryFrom<&str> for Quantity {
    type Error = QuantityError;
    fn try_from(s: &str) -> Result<Self, Self::Error> {
        parse(s)
    }
}

fn syntax(text: &str, column: usize, reason: &'static str) -> QuantityError {
    QuantityError::Syntax { text: text.to_owned(), column: column + 1, reason }
}

fn parse(text: &str) -> Result<Quantity, QuantityError> {
    if text.is_empty() {
        return Err(QuantityError::Empty);
    }
    let b = text.as_bytes();
    let mut i = 0;
    let mut negative = false;
    if b[0] == b'+' || b[0] == b'-' {
        negative = b[0] == b'-';
        i = 1;
    }
    // Mantissa digits, accumulated exactly while they fit; the rest only counts.
    let mut mantissa: i128 = 0;
    let mut scale: i32 = 0; // value = mantissa * 10^scale
    let mut digits = 0usize;
    let mut overflow_digits: i32 = 0;
    let mut nonzero_dropped = false;
    let mut seen_dot = false;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() {
            digits += 1;
            let d = i128::from(c - b'0');
            // Every digit is kept while the mantissa fits an i128 (38 digits and some),
            // which covers every in-range value exactly.
            if let Some(m) = mantissa.checked_mul(10).and_then(|m| m.checked_add(d)) {
                mantissa = m;
                if seen_dot {
                    scale -= 1;
                }
            } else {
                // Too many significant digits to keep; integer digits scale up,
                // fractional ones only matter for rounding up.
                if !seen_dot {
                    overflow_digits += 1;
                }
                nonzero_dropped |= d != 0;
            }
        } else if c == b'.' && !seen_dot {
            seen_dot = true;
        } else {
            break;
        }
        i += 1;
    }
    if digits == 0 {
        return Err(syntax(text, i, "expected a digit"));
    }
    scale += overflow_digits;
    let (suffix_exp, format) = parse_suffix(text, i)?;
    let nanos = match suffix_exp {
        Exp::Ten(e) => to_nanos(mantissa, scale + e, nonzero_dropped),
        Exp::Two(e) => to_nanos(mantissa, scale, nonzero_dropped).and_then(|n| n.checked_mul(1i128 << e)),
    }
    .filter(|n| n.abs() <= MAX_NANOS)
    .ok_or_else(|| QuantityError::OutOfRange { text: text.to_owned() })?;
    Ok(Quantity { nanos: if negative { -nanos } else { nanos }, format })
}

enum Exp {
    Ten(i32),
    Two(u32),
}

fn parse_suffix(text: &str, at: usize) -> Result<(Exp, QuantityFormat), QuantityError> {
    let rest = &text[at..];
    let dec = |e| Ok((Exp::Ten(e), QuantityFormat::DecimalSi));
    let bin = |e| Ok((Exp::Two(e), QuantityFormat::BinarySi));
    match rest {
        "" => dec(0),
        "n" => dec(-9),
        "u" => dec(-6),
        "m" => dec(-3),
        "k" => dec(3),
        "M" => dec(6),
        "G" => dec(9),
        "T" => dec(12),
        "P" => dec(15),
        "E" => dec(18),
        "Ki" => bin(10),
        "Mi" => bin(20),
        "Gi" => bin(30),
        "Ti" => bin(40),
        "Pi" => bin(50),
        "Ei" => bin(60),
        _ if rest.starts_with(['e', 'E']) => {
            let exp_text = &rest[1..];
            let digits = exp_text.strip_prefix(['+', '-']).unwrap_or(exp_text);
            if let Some(pos) = digits.bytes().position(|c| !c.is_ascii_digit()) {
                let col = at + 1 + (exp_text.len() - digits.len()) + pos;
                return Err(syntax(text, col, "expected a digit in the exponent"));
            }
            if digits.is_empty() {
                return Err(syntax(text, text.len(), "expected an exponent after 'e'"));
            }
            let e: i32 = exp_text
                .parse()
                .ok()
                .filter(|e: &i32| e.abs() <= 60)
                .ok_or_else(|| QuantityError::OutOfRange { text: text.to_owned() })?;
            Ok((Exp::Ten(e), QuantityFormat::DecimalExponent))
        }
        _ => Err(syntax(text, at, "expected a suffix (n, u, m, k, M, G, T, P, E, Ki..Ei) or an exponent")),
    }
}

/// `mantissa * 10^exp` in nanos, rounded up to a whole nano.
fn to_nanos(mantissa: i128, exp: i32, dropped: bool) -> Option<i128> {
    let e = exp + 9;
    if e >= 0 {
        let f = 10i128.checked_pow(e as u32)?;
        mantissa.checked_mul(f)
    } else {
        let f = 10i128.checked_pow((-e) as u32);
        match f {
            Some(f) => {
                let q = mantissa / f;
                Some(if mantissa % f != 0 || dropped { q + 1 } else { q })
            }
            None => Some(i128::from(mantissa != 0 || dropped)),
        }
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.nanos;
        let mut format = self.format;
        if format == QuantityFormat::BinarySi && (n.abs() < 1024 * NANO || n % NANO != 0) {
            format = QuantityFormat::DecimalSi;
        }
        if n == 0 {
            return f.write_str("0");
        }
        if format == QuantityFormat::BinarySi {
            let mut m = n / NANO;
            let mut k = 0;
            while k < 6 && m % 1024 == 0 {
                m /= 1024;
                k += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][k];
            return write!(f, "{m}{suffix}");
        }
        // Decimal: mantissa * 10^exp with exp a multiple of 3, mantissa whole.
        let mut m = n;
        let mut exp: i32 = -9;
        while m % 1000 == 0 {
            m /= 1000;
            exp += 3;
        }
        if format == QuantityFormat::DecimalExponent {
            return if exp == 0 { write!(f, "{m}") } else { write!(f, "{m}e{exp}") };
        }
        // SI suffixes stop at E (10^18); larger exponents fold into the mantissa.
        while exp > 18 {
            m *= 1000;
            exp -= 3;
        }
        let suffix = match exp {
            -9 => "n",
            -6 => "u",
            -3 => "m",
            0 => "",
            3 => "k",
            6 => "M",
            9 => "G",
            12 => "T",
            15 => "P",
            _ => "E",
        };
        write!(f, "{m}{suffix}")
    }
}

impl Serialize for Quantity {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Quantity;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Kubernetes quantity such as \"500m\" or \"80Gi\", or a number")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Quantity, E> {
                parse(v).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Quantity, E> {
                Ok(Quantity::from_int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Quantity, E> {
                Ok(Quantity { nanos: i128::from(v) * NANO, format: QuantityFormat::DecimalSi })
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Quantity, E> {
                // Go through text so rounding matches the string form.
                parse(&format!("{v}")).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    /// Mantissas of 38 digits are held exactly (they used to lose their last digit),
    /// and so are values with many fractional digits up to the nano.
    #[test]
    fn long_mantissas_keep_every_digit() {
        let long = q("10000000000000000000000000000000000001n");
        assert_eq!(long.nanos(), 10i128.pow(37) + 1);
        assert_ne!(long, q("10000000000E"));
        assert_eq!(q("99999999999999999999999999999999999999n").nanos(), 10i128.pow(38) - 1);
        assert_eq!(q("1.000000000000000000000000000000000000001").nanos(), NANO + 1);
        assert_eq!(q("12345678901234567890.123456789").nanos(), 12_345_678_901_234_567_890_123_456_789);
        // Past the range, still refused rather than truncated.
        assert!(matches!("200000000000000000000000000000".parse::<Quantity>(), Err(QuantityError::OutOfRange { .. })));
        assert!(matches!(
            "1000000000000000000000000000000000000000000n".parse::<Quantity>(),
            Err(QuantityError::OutOfRange { .. })
        ));
    }

    /// Cases from upstream `TestQuantityParse` and `TestQuantityCanonicalize`
    /// (`apimachinery/pkg/api/resource/quantity_test.go`): input, canonical output.
    #[test]
    fn canonical_forms_match_upstream() {
        let table = [
            ("0", "0"),
            ("0n", "0"),
            ("0u", "0"),
            ("0m", "0"),
            ("0Ki", "0"),
            ("0k", "0"),
            ("0Mi", "0"),
            ("0M", "0"),
            ("0E", "0"),
            ("0e10", "0"),
            ("1", "1"),
            ("1m", "1m"),
            ("1n", "1n"),
            ("1u", "1u"),
            ("1k", "1k"),
            ("1Ki", "1Ki"),
            ("1Mi", "1Mi"),
            ("1M", "1M"),
            ("1G", "1G"),
            ("1T", "1T"),
            ("1P", "1P"),
            ("1E", "1E"),
            ("1Gi", "1Gi"),
            ("1Ti", "1Ti"),
            ("1Pi", "1Pi"),
            ("1Ei", "1Ei"),
            ("1e3", "1e3"),
            ("1E6", "1e6"),
            ("1e9", "1e9"),
            ("1E12", "1e12"),
            ("1e-3", "1e-3"),
            ("1E-9", "1e-9"),
            ("1.5", "1500m"),
            ("1.5Gi", "1536Mi"),
            ("0.5Ki", "512"),
            ("100Ki", "100Ki"),
            ("1024", "1024"),
            ("1024Ki", "1Mi"),
            ("1023Ki", "1023Ki"),
            ("1500m", "1500m"),
            ("5.0", "5"),
            ("12e6", "12e6"),
            ("1.5e3", "1500"),
            ("0.001", "1m"),
            (".001", "1m"),
            ("1.", "1"),
            ("+1", "1"),
            ("-1", "-1"),
            ("-1Ki", "-1Ki"),
            ("-1.5Gi", "-1536Mi"),
            ("0.1m", "100u"),
            ("0.0001m", "100n"),
            ("0.00000000001", "1n"),
            ("1.5G", "1500M"),
            ("128974848", "128974848"),
            ("129e6", "129e6"),
            ("123Mi", "123Mi"),
            ("1000k", "1M"),
            ("1000000", "1M"),
            ("80Gi", "80Gi"),
        ];
        for (input, want) in table {
            assert_eq!(q(input).to_string(), want, "canonical form of {input:?}");
        }
    }

    #[test]
    fn values_round_up_like_upstream() {
        assert_eq!(q("500m").milli_value(), 500);
        assert_eq!(q("500m").value(), 1);
        assert_eq!(q("1.5").value(), 2);
        assert_eq!(q("0.1m").milli_value(), 1);
        assert_eq!(q("-0.5").value(), -1);
        assert_eq!(q("80Gi").value(), 80 << 30);
        assert_eq!(q("1e3").value(), 1000);
        assert_eq!(q("128974848").value(), 128_974_848);
        assert_eq!(q("1.5G").value(), 1_500_000_000);
        assert_eq!(q("2").milli_value(), 2000);
    }

    /// Invalid inputs from upstream `TestQuantityParse`'s error cases.
    #[test]
    fn invalid_inputs_are_errors() {
        for bad in [
            "", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", "1e", "1e+", " 1", "1 ",
            "1 Gi", "1Gib", "Ki", "-", "+", ".", "1..", "--1", "1e1.5", "1ee3", "0x10", "1kk", "e3", "1GI", "1e 3",
            "1mm",
        ] {
            assert!(bad.parse::<Quantity>().is_err(), "{bad:?} must not parse");
        }
    }

    #[test]
    fn errors_say_where() {
        let err = "12 Gi".parse::<Quantity>().unwrap_err();
        assert_eq!(
            err,
            QuantityError::Syntax {
                text: "12 Gi".into(),
                column: 3,
                reason: "expected a suffix (n, u, m, k, M, G, T, P, E, Ki..Ei) or an exponent"
            }
        );
        assert!(err.to_string().contains("column 3"));
        assert!(matches!("1e99".parse::<Quantity>(), Err(QuantityError::OutOfRange { .. })));
        assert!(matches!(
            "99999999999999999999999999999999999999999".parse::<Quantity>(),
            Err(QuantityError::OutOfRange { .. })
        ));
    }

    #[test]
    fn equality_ignores_format() {
        assert_eq!(q("1Ki"), q("1024"));
        assert_eq!(q("1k"), q("1e3"));
        assert!(q("1Gi") > q("1G"));
        assert_eq!(q("1Ki").checked_add(&q("1")).unwrap().to_string(), "1025");
        assert_eq!(q("2Ki").checked_sub(&q("1Ki")).unwrap().to_string(), "1Ki");
    }

    #[test]
    fn serde_accepts_strings_and_numbers() {
        let v: Vec<Quantity> = serde_json::from_str(r#"["500m", 3, 1.5, "2Gi"]"#).unwrap();
        assert_eq!(v, vec![q("500m"), q("3"), q("1500m"), q("2Gi")]);
        assert_eq!(serde_json::to_string(&q("2Gi")).unwrap(), "\"2Gi\"");
        assert!(serde_json::from_str::<Quantity>("\"2 Gi\"").is_err());
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// Display then parse gives back the same value and display.
            #[test]
            fn display_round_trips(nanos in -MAX_NANOS..=MAX_NANOS, fmt in 0u8..3) {
                let format = [QuantityFormat::DecimalSi, QuantityFormat::BinarySi,
                              QuantityFormat::DecimalExponent][fmt as usize];
                let q = Quantity { nanos, format };
                let text = q.to_string();
                let back: Quantity = text.parse().unwrap();
                prop_assert_eq!(back, q);
                prop_assert_eq!(back.to_string(), text);
            }

            /// Arbitrary text never panics the parser.
            #[test]
            fn parse_never_panics(s in "[-+0-9.eEkKmMGgiTPnu ]{0,24}") {
                let _ = s.parse::<Quantity>();
            }

            #[test]
            fn integer_units_round_trip(v in any::<i64>(), suffix in 0usize..4) {
                let sfx = ["", "k", "Ki", "m"][suffix];
                let q: Quantity = format!("{v}{sfx}").parse().unwrap();
                let mul: i128 = [1, 1000, 1024, 1][suffix];
                let expect_nanos = i128::from(v) * mul * NANO / if suffix == 3 { 1000 } else { 1 };
                prop_assert_eq!(q.nanos(), expect_nanos);
            }
        }
    }
}
