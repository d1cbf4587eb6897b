//! Quantities beyond the range of [`Quantity`] (about 1e29), for `quantity()`.
//!
//! Upstream (`k8s.io/apimachinery/pkg/api/resource/quantity.go`, `ParseQuantity`)
//! holds a quantity in one of two ways: an `int64Amount` (an `int64` times a power of
//! ten, when the digits fit its fast path: at most 18 significant digits, a scale of
//! at least 10^-9, and for binary suffixes a small enough shift), or else an
//! arbitrary-precision decimal (`inf.Dec`), rounded up (away from zero) to a whole
//! nano-unit, and capped at 2^63-1 when written with a binary suffix (`maxAllowed`).
//! Comparisons and arithmetic are exact either way, but the representation shows:
//! `AsInt64` (the CEL library's `isInteger()` and `asInteger()`,
//! `k8s.io/apiserver/pkg/cel/library/quantity.go`) refuses every decimal, and
//! `AsApproximateFloat64` multiplies the unscaled integer by a power of ten.
//!
//! schedkit holds those values here: the exact value (a sign and a magnitude in
//! nano-units, in base 10^9 limbs) and the representation upstream would have,
//! which `add`, `sub` and `mul` update as upstream's `Quantity.Add`, `Sub` and `Mul`
//! do. The ordinary [`Quantity`] path is untouched (no allocation); this type is only
//! built when [`Quantity::parse`] reports [`QuantityError::OutOfRange`], when
//! `quantity()` reads text upstream would hold as a decimal although [`Quantity`]
//! holds it (`1.5Ki`, `1Pi`, 19 digits: see `upstream_keeps_int64`), and by
//! arithmetic on such a value (or past [`Quantity`]'s range). Device capacities keep
//! the ordinary representation whatever their text.
//!
//! Two departures from upstream, both for inputs upstream cannot process in practice:
//! an exponent is read as Go does (it must fit an `int64`, then it is truncated to 32
//! bits, as `suffix.go` does), but a value needing more than [`MAX_DIGITS`] decimal
//! digits is refused where Go would try to build it (an exponent of `1e2000000000`
//! asks for a two-billion-digit integer).

use std::cmp::Ordering;
use std::fmt::Write as _;

use crate::model::{Quantity, QuantityError, QuantityFormat};

/// Nano-units per unit, and the base of the limbs.
const BASE: u64 = 1_000_000_000;

/// Most decimal digits of a value in nano-units (a few pages of digits; an
/// expression is at most 10 KiB).
pub(crate) const MAX_DIGITS: usize = 1 << 17;

/// The magnitude upstream caps binary-suffixed quantities at: 2^63-1 units.
const BINARY_CAP_UNITS: u64 = i64::MAX as u64;

/// How upstream would hold a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Repr {
    /// `int64Amount{value, scale}`: `value * 10^scale`.
    Int { value: i64, scale: i32 },
    /// `inf.Dec` with this scale (digits after the point).
    Dec { scale: i32 },
}

/// An arbitrary-precision quantity: `(-1)^neg * limbs` nano-units, limbs in base 10^9,
/// least significant first, without trailing zero limbs (zero has none), and the
/// representation upstream would use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BigQuantity {
    neg: bool,
    limbs: Vec<u32>,
    repr: Repr,
}

/// Either kind of quantity, borrowed.
#[derive(Clone, Copy)]
pub(crate) enum AnyQuantity<'q> {
    Small(&'q Quantity),
    Big(&'q BigQuantity),
}

impl AnyQuantity<'_> {
    fn to_big(self) -> BigQuantity {
        match self {
            AnyQuantity::Small(q) => BigQuantity::from_small(q),
            AnyQuantity::Big(b) => b.clone(),
        }
    }

    /// Upstream's `Cmp`.
    pub(crate) fn cmp(self, other: AnyQuantity<'_>) -> Ordering {
        match (self, other) {
            (AnyQuantity::Small(a), AnyQuantity::Small(b)) => a.cmp(b),
            (AnyQuantity::Big(a), AnyQuantity::Big(b)) => a.cmp_value(b),
            (AnyQuantity::Small(a), AnyQuantity::Big(b)) => BigQuantity::from_small(a).cmp_value(b),
            (AnyQuantity::Big(a), AnyQuantity::Small(b)) => a.cmp_value(&BigQuantity::from_small(b)),
        }
    }

    /// `self + other` (or `self - other`), as upstream's `Quantity.Add` (`Sub`): the
    /// `int64Amount` sum when both are `int64Amount`s and it fits, else a decimal.
    pub(crate) fn add(self, other: AnyQuantity<'_>, subtract: bool) -> BigQuantity {
        let (a, mut b) = (self.to_big(), other.to_big());
        if subtract {
            b.neg = !b.neg && !b.limbs.is_empty();
            if let Repr::Int { value, scale } = b.repr {
                b.repr = value.checked_neg().map_or(Repr::Dec { scale: -scale }, |value| Repr::Int { value, scale });
            }
        }
        let repr = match (a.repr, b.repr) {
            (Repr::Int { value: x, scale: xs }, Repr::Int { value: y, scale: ys }) => {
                int_add(x, xs, y, ys).unwrap_or(Repr::Dec { scale: (-xs).max(-ys) })
            }
            (ra, rb) => Repr::Dec { scale: dec_scale(ra).max(dec_scale(rb)) },
        };
        let mut sum = a.add_value(&b);
        sum.repr = repr;
        sum
    }
}

/// The scale of a representation once converted to `inf.Dec` (`ToDec`, `AsDec`).
fn dec_scale(r: Repr) -> i32 {
    match r {
        Repr::Int { scale, .. } => -scale,
        Repr::Dec { scale } => scale,
    }
}

/// `value * 10^scale` when it fits an `int64` (upstream `positiveScaleInt64`, which
/// multiplies by ten `scale` times: zero always fits).
fn scale_up(value: i64, scale: i32) -> Option<i64> {
    if value == 0 {
        return Some(0);
    }
    10i64.checked_pow(u32::try_from(scale).ok()?).and_then(|f| value.checked_mul(f))
}

/// Upstream's `int64Amount.Add`: `None` where it reports an overflow.
fn int_add(x: i64, xs: i32, y: i64, ys: i32) -> Option<Repr> {
    Some(match () {
        () if y == 0 => Repr::Int { value: x, scale: xs },
        () if x == 0 => Repr::Int { value: y, scale: ys },
        () if xs == ys => Repr::Int { value: x.checked_add(y)?, scale: xs },
        () if xs > ys => Repr::Int { value: scale_up(x, xs - ys)?.checked_add(y)?, scale: ys },
        () => Repr::Int { value: x.checked_add(scale_up(y, ys - xs)?)?, scale: xs },
    })
}

/// Go's `math.Pow10`: the product (or quotient) of two correctly rounded powers of ten.
fn go_pow10(n: i64) -> f64 {
    let p = |e: i64| format!("1e{e}").parse::<f64>().unwrap_or(f64::INFINITY);
    match n {
        0..=308 => p(n / 32 * 32) * p(n % 32),
        -323..=-1 => p(-(-n / 32 * 32)) / p(-n % 32),
        _ if n > 0 => f64::INFINITY,
        _ => 0.0,
    }
}

impl BigQuantity {
    /// An ordinary quantity, with the representation upstream's parser would most
    /// likely have given it: the fewest digits at a scale of at least 10^-9.
    fn from_small(q: &Quantity) -> BigQuantity {
        let nanos = q.nanos();
        let mut value = nanos;
        let mut scale = -9;
        while value != 0 && value % 10 == 0 && scale < 0 {
            value /= 10;
            scale += 1;
        }
        let repr = i64::try_from(value).map_or(Repr::Dec { scale: 9 }, |value| Repr::Int { value, scale });
        BigQuantity { repr, ..BigQuantity::from_nanos(nanos) }
    }

    fn from_nanos(nanos: i128) -> BigQuantity {
        let mut m = nanos.unsigned_abs();
        let mut limbs = Vec::new();
        while m > 0 {
            limbs.push((m % u128::from(BASE)) as u32);
            m /= u128::from(BASE);
        }
        BigQuantity { neg: nanos < 0, limbs, repr: Repr::Dec { scale: 9 } }
    }

    /// Parses `text`, which [`Quantity::parse`] refused as out of range, as upstream's
    /// `ParseQuantity` does. The error is upstream's message where it has one.
    pub(crate) fn parse(text: &str) -> Result<BigQuantity, String> {
        let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
        let neg = text.starts_with('-');
        let split = unsigned.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(unsigned.len());
        let (number, suffix) = unsigned.split_at(split);
        let (int, frac) = number.split_once('.').unwrap_or((number, ""));
        // `parseQuantityString`: leading zeros of the integer part do not count.
        let num = match int.trim_start_matches('0') {
            "" => "0",
            n => n,
        };
        let (exponent, binary) = suffix_exponent(suffix)?;
        if binary {
            // Out of range with a binary suffix means above the cap.
            return BigQuantity::parse_capped(neg);
        }
        let digits: Vec<u8> = int.bytes().chain(frac.bytes()).skip_while(|&d| d == b'0').map(|d| d - b'0').collect();
        // value = digits * 10^(exponent - frac.len()) units = digits * 10^shift nanos.
        let scale = exponent - frac.len() as i64;
        let mut q = BigQuantity::from_digits(&digits, scale + 9)?;
        q.neg = neg && !q.limbs.is_empty();
        // The int64 fast path of `ParseQuantity`: at most 18 digits, a scale of at
        // least 10^-9, digits that parse as an int64.
        let fast =
            (num.len() + frac.len() <= 18 && scale >= -9).then(|| format!("{num}{frac}").parse::<i64>().ok()).flatten();
        q.repr = match fast {
            Some(v) => Repr::Int { value: if neg { -v } else { v }, scale: scale as i32 },
            None => Repr::Dec { scale: 9 },
        };
        Ok(q)
    }

    /// A binary-suffixed quantity above upstream's cap: 2^63-1 units (with the sign),
    /// as a decimal of scale 0.
    #[expect(clippy::unnecessary_wraps, reason = "the result of a parse")]
    fn parse_capped(neg: bool) -> Result<BigQuantity, String> {
        let nanos = i128::from(BINARY_CAP_UNITS) * i128::from(BASE);
        let q = BigQuantity::from_nanos(if neg { -nanos } else { nanos });
        Ok(BigQuantity { repr: Repr::Dec { scale: 0 }, ..q })
    }

    /// `digits * 10^shift` nano-units, rounded up (away from zero) to a whole nano-unit.
    fn from_digits(digits: &[u8], shift: i64) -> Result<BigQuantity, String> {
        let zero = BigQuantity { neg: false, limbs: Vec::new(), repr: Repr::Dec { scale: 9 } };
        if digits.is_empty() {
            return Ok(zero);
        }
        let len = digits.len() as i64;
        if len.saturating_add(shift) > MAX_DIGITS as i64 {
            return Err(format!("quantity is too large for schedkit: more than {MAX_DIGITS} digits"));
        }
        if shift < 0 {
            let keep = len + shift;
            if keep <= 0 {
                return Ok(BigQuantity { limbs: vec![1], ..zero });
            }
            let (kept, dropped) = digits.split_at(keep as usize);
            let mut q = BigQuantity::from_digits(kept, 0)?;
            if dropped.iter().any(|&d| d != 0) {
                q.limbs = add_magnitude(&q.limbs, &[1]);
            }
            return Ok(q);
        }
        // Whole zero limbs, then the digits followed by the remaining zeros.
        let shift = shift as usize;
        let mut limbs = vec![0u32; shift / 9];
        let mut padded = digits.to_vec();
        padded.resize(digits.len() + shift % 9, 0);
        for chunk in padded.rchunks(9) {
            limbs.push(chunk.iter().fold(0u32, |acc, &d| acc * 10 + u32::from(d)));
        }
        Ok(BigQuantity { limbs, ..zero })
    }

    /// -1, 0 or 1.
    pub(crate) fn sign(&self) -> i64 {
        match (self.limbs.is_empty(), self.neg) {
            (true, _) => 0,
            (false, true) => -1,
            (false, false) => 1,
        }
    }

    fn cmp_value(&self, other: &BigQuantity) -> Ordering {
        match (self.sign(), other.sign()) {
            (a, b) if a != b => a.cmp(&b),
            (-1, _) => cmp_magnitude(&other.limbs, &self.limbs),
            _ => cmp_magnitude(&self.limbs, &other.limbs),
        }
    }

    /// The exact sum; the representation is left to the caller.
    fn add_value(&self, other: &BigQuantity) -> BigQuantity {
        let repr = self.repr;
        if self.neg == other.neg || other.limbs.is_empty() {
            return BigQuantity { neg: self.neg, limbs: add_magnitude(&self.limbs, &other.limbs), repr };
        }
        match cmp_magnitude(&self.limbs, &other.limbs) {
            Ordering::Equal => BigQuantity { neg: false, limbs: Vec::new(), repr },
            Ordering::Greater => BigQuantity { neg: self.neg, limbs: sub_magnitude(&self.limbs, &other.limbs), repr },
            Ordering::Less => BigQuantity { neg: other.neg, limbs: sub_magnitude(&other.limbs, &self.limbs), repr },
        }
    }

    /// The exact product with an integer, as upstream's `Quantity.Mul`: the
    /// `int64Amount` product when it fits, else a decimal.
    pub(crate) fn mul_int(&self, k: i64) -> BigQuantity {
        let f = u128::from(k.unsigned_abs());
        let mut limbs = Vec::with_capacity(self.limbs.len() + 3);
        let mut carry = 0u128;
        for &l in &self.limbs {
            let x = u128::from(l) * f + carry;
            limbs.push((x % u128::from(BASE)) as u32);
            carry = x / u128::from(BASE);
        }
        while carry > 0 {
            limbs.push((carry % u128::from(BASE)) as u32);
            carry /= u128::from(BASE);
        }
        trim(&mut limbs);
        let neg = !limbs.is_empty() && (self.neg != (k < 0));
        let repr = match self.repr {
            Repr::Int { value, scale } => {
                value.checked_mul(k).map_or(Repr::Dec { scale: -scale }, |value| Repr::Int { value, scale })
            }
            dec @ Repr::Dec { .. } => dec,
        };
        BigQuantity { neg, limbs, repr }
    }

    /// Upstream's `AsInt64`: only an `int64Amount` whose value fits.
    pub(crate) fn as_i64(&self) -> Option<i64> {
        match self.repr {
            Repr::Int { value, scale: 0 } => Some(value),
            Repr::Int { value, scale } if scale > 0 => scale_up(value, scale),
            _ => None,
        }
    }

    /// Upstream's `AsApproximateFloat64`: the unscaled integer as a float, times
    /// `math.Pow10` of the exponent.
    pub(crate) fn to_f64(&self) -> f64 {
        let (base, exponent) = match self.repr {
            Repr::Int { value, scale } => (value as f64, i64::from(scale)),
            Repr::Dec { scale } => {
                // The unscaled integer: the nano-units without their 9 - scale
                // trailing zeros (a decimal's scale never exceeds 9 here).
                let mut digits = self.magnitude_digits();
                let drop = usize::try_from(9 - i64::from(scale)).unwrap_or(0);
                digits.truncate(digits.len().saturating_sub(drop));
                let base = if digits.is_empty() { 0.0 } else { digits.parse::<f64>().unwrap_or(f64::INFINITY) };
                (if self.neg { -base } else { base }, -i64::from(scale))
            }
        };
        if exponent == 0 { base } else { base * go_pow10(exponent) }
    }

    /// The magnitude in nano-units, in decimal.
    fn magnitude_digits(&self) -> String {
        let mut text = String::with_capacity(self.limbs.len() * 9);
        if let Some((top, rest)) = self.limbs.split_last() {
            text.push_str(&top.to_string());
            for l in rest.iter().rev() {
                let _ = write!(text, "{l:09}");
            }
        }
        text
    }
}

fn trim(limbs: &mut Vec<u32>) {
    while limbs.last() == Some(&0) {
        limbs.pop();
    }
}

fn cmp_magnitude(a: &[u32], b: &[u32]) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.iter().rev().cmp(b.iter().rev()))
}

fn add_magnitude(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len().max(b.len()) + 1);
    let mut carry = 0u64;
    for i in 0..a.len().max(b.len()) {
        let s = u64::from(*a.get(i).unwrap_or(&0)) + u64::from(*b.get(i).unwrap_or(&0)) + carry;
        out.push((s % BASE) as u32);
        carry = s / BASE;
    }
    if carry > 0 {
        out.push(carry as u32);
    }
    out
}

/// `a - b` for `a >= b`.
fn sub_magnitude(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len());
    let mut borrow = 0i64;
    for (i, &x) in a.iter().enumerate() {
        let mut d = i64::from(x) - i64::from(*b.get(i).unwrap_or(&0)) - borrow;
        borrow = i64::from(d < 0);
        if d < 0 {
            d += BASE as i64;
        }
        out.push(d as u32);
    }
    trim(&mut out);
    out
}

/// A suffix's power and whether it is binary (`2^power`) rather than decimal
/// (`10^power`), as upstream's `quantitySuffixer.interpret` reads it.
fn suffix_exponent(suffix: &str) -> Result<(i64, bool), String> {
    Ok(match suffix {
        "" => (0, false),
        "n" => (-9, false),
        "u" => (-6, false),
        "m" => (-3, false),
        "k" => (3, false),
        "M" => (6, false),
        "G" => (9, false),
        "T" => (12, false),
        "P" => (15, false),
        "E" => (18, false),
        "Ki" => (10, true),
        "Mi" => (20, true),
        "Gi" => (30, true),
        "Ti" => (40, true),
        "Pi" => (50, true),
        "Ei" => (60, true),
        // `suffix.go` parses the exponent as an int64 and keeps its low 32 bits.
        s => match s.get(1..).and_then(|e| e.parse::<i64>().ok()) {
            Some(e) => (i64::from(e as i32), false),
            None => return Err("unable to parse quantity's suffix".to_owned()),
        },
    })
}

/// Whether upstream's `ParseQuantity` keeps `text` (a quantity [`Quantity::parse`]
/// accepted) as an `int64Amount` rather than an `inf.Dec`: its fast path needs at most
/// 18 digits (leading zeros of the integer part not counted, the fraction's all
/// counted) and a scale of at least 10^-9; a binary suffix needs no fraction and
/// `15 - digits - exponent*3/10 - 1 >= 0`, so `1.5Ki`, `1Pi` and `1Ei` are decimals.
fn upstream_keeps_int64(text: &str) -> bool {
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    let split = unsigned.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(unsigned.len());
    let (number, suffix) = unsigned.split_at(split);
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    let int = int.trim_start_matches('0');
    // `parseQuantityString` counts a numerator of no digits as "0".
    let num_len = int.len().max(1) as i64;
    let Ok((exponent, binary)) = suffix_exponent(suffix) else { return false };
    if binary {
        if !frac.is_empty() || 15 - num_len - exponent * 3 / 10 - 1 < 0 {
            return false;
        }
        // `int64Multiply(value, 1 << exponent)`; at most 11 digits here.
        int.parse::<i64>().unwrap_or(0).checked_mul(1 << exponent).is_some()
    } else {
        num_len + frac.len() as i64 <= 18 && exponent - frac.len() as i64 >= -9
    }
}

/// `quantity(text)`: the ordinary [`Quantity`] when it holds the value, else the
/// arbitrary-precision fallback.
pub(crate) fn parse_quantity(text: &str) -> Result<Result<Quantity, BigQuantity>, String> {
    const CAP_NANOS: i128 = BINARY_CAP_UNITS as i128 * BASE as i128;
    match Quantity::parse(text) {
        // Within schedkit's range but above upstream's cap for binary suffixes.
        Ok(q) if q.format() == QuantityFormat::BinarySi && q.nanos().abs() > CAP_NANOS => {
            BigQuantity::parse_capped(q.nanos() < 0).map(Err)
        }
        // Within range, but upstream holds it as a decimal: exact comparisons and
        // arithmetic are unaffected, `isInteger` and `asApproximateFloat` are not.
        Ok(q) if !upstream_keeps_int64(text) => {
            Ok(Err(BigQuantity { repr: Repr::Dec { scale: 9 }, ..BigQuantity::from_nanos(q.nanos()) }))
        }
        Ok(q) => Ok(Ok(q)),
        Err(QuantityError::OutOfRange { .. }) => BigQuantity::parse(text).map(Err),
        Err(e) => Err(e.to_string()),
    }
}
