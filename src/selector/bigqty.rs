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
//! built when [`Quantity::parse`] reports [`QuantityError::OutOfRange`], and by
//! arithmetic on such a value (or past [`Quantity`]'s range). Values [`Quantity`]
//! holds carry a [`Held`] instead: how upstream would hold them (`1.5Ki`, `1Pi` and
//! 19 digits as decimals, `1000m` as `int64Amount{1000, -3}`), without allocating.
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
pub(crate) enum Repr {
    /// `int64Amount{value, scale}`: `value * 10^scale`.
    Int { value: i64, scale: i32 },
    /// `inf.Dec` with this scale (digits after the point).
    Dec { scale: i32 },
}

/// How upstream holds a value that [`Quantity`] also holds. A [`Quantity`] keeps only
/// the value and its format, but upstream's answers to `isInteger()`, `asInteger()`
/// and `asApproximateFloat()` depend on how the value was written (`1`, `1.0` and
/// `1000m` are equal, yet only the first is an integer there), so the selector
/// carries this beside each quantity value. It costs nothing on comparisons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Held {
    /// As `ParseQuantity` holds the value's canonical text. Device capacities reach
    /// the scheduler after a round trip through the API server, which re-emits every
    /// quantity in canonical form (`Quantity.MarshalJSON` and `String` call
    /// `CanonicalizeBytes` unless the parsed text was already canonical), so this is
    /// how a scheduler sees them whatever the driver wrote.
    Canonical,
    /// `int64Amount` with this scale: the unscaled value is the nano-units divided by
    /// 10^(9 + scale), always exact (the scale is at least -9).
    Int(i32),
    /// `inf.Dec` with this scale (digits after the point).
    Dec(i32),
}

impl Held {
    /// Upstream's representation of `q` held this way.
    pub(crate) fn repr(self, q: &Quantity) -> Repr {
        match self {
            Held::Canonical => canonical_held(q).repr(q),
            Held::Int(scale) => Repr::Int { value: unscaled(q.nanos(), scale), scale },
            Held::Dec(scale) => Repr::Dec { scale },
        }
    }

    fn of(repr: Repr) -> Held {
        match repr {
            Repr::Int { scale, .. } => Held::Int(scale),
            Repr::Dec { scale } => Held::Dec(scale),
        }
    }

    /// How upstream holds `q.add(other)` (or `sub`) when the result stays within
    /// [`Quantity`]'s range: upstream's `Quantity.Add` (`Sub`) representation rule.
    pub(crate) fn sum(q: (&Quantity, Held), other: (&Quantity, Held), subtract: bool) -> Held {
        Held::of(add_repr(q.1.repr(q.0), other.1.repr(other.0), subtract))
    }

    /// How upstream holds `q.mul(k)`: upstream's `Quantity.Mul`.
    pub(crate) fn product(q: &Quantity, held: Held, k: i64) -> Held {
        Held::of(mul_repr(held.repr(q), k))
    }

    /// Upstream's `AsInt64` (`isInteger()`, `asInteger()`): only an `int64Amount`
    /// whose scale is not negative and whose value fits, so `1000m` is not an integer.
    pub(crate) fn as_i64(self, q: &Quantity) -> Option<i64> {
        repr_as_i64(self.repr(q))
    }

    /// Upstream's `AsApproximateFloat64`: the unscaled integer times `math.Pow10` of
    /// the exponent, so `1.1` gives 11 × 0.1, one unit in the last place above 1.1.
    pub(crate) fn to_f64(self, q: &Quantity) -> f64 {
        match self.repr(q) {
            Repr::Int { value, scale } => scaled_f64(value as f64, i64::from(scale)),
            Repr::Dec { scale } => {
                // The unscaled integer is nanos * 10^(scale - 9); exact for the
                // scales small values reach (at most 9 unless a zero was written
                // with more places), otherwise go through the arbitrary precision.
                let nanos = q.nanos();
                let unscaled = match scale {
                    s if s <= 9 => {
                        10i128.checked_pow((9 - s).unsigned_abs()).filter(|&d| nanos % d == 0).map(|d| nanos / d)
                    }
                    s => 10i128.checked_pow((s - 9).unsigned_abs()).and_then(|m| nanos.checked_mul(m)),
                };
                match unscaled {
                    Some(u) => scaled_f64(u as f64, -i64::from(scale)),
                    None => BigQuantity { repr: Repr::Dec { scale }, ..BigQuantity::from_nanos(nanos) }.to_f64(),
                }
            }
        }
    }
}

/// `base * math.Pow10(exponent)`, or `base` when the exponent is zero (as upstream).
fn scaled_f64(base: f64, exponent: i64) -> f64 {
    if exponent == 0 { base } else { base * go_pow10(exponent) }
}

/// `nanos / 10^(9 + scale)` for a scale of at least -9 (zero beyond `i128`'s digits).
fn unscaled(nanos: i128, scale: i32) -> i64 {
    let v = 10i128.checked_pow((9 + scale).unsigned_abs()).map_or(0, |d| nanos / d);
    i64::try_from(v).unwrap_or(0)
}

/// How upstream holds the canonical text of `q`: formatted on the stack and read as
/// `quantity()` reads text.
fn canonical_held(q: &Quantity) -> Held {
    let mut buf = StackText { bytes: [0; 64], len: 0 };
    if write!(buf, "{q}").is_err() {
        return Held::Dec(9);
    }
    std::str::from_utf8(&buf.bytes[..buf.len]).map_or(Held::Dec(9), text_held)
}

/// A short text written without allocating.
struct StackText {
    bytes: [u8; 64],
    len: usize,
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        self.bytes.get_mut(self.len..end).ok_or(std::fmt::Error)?.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
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
    Small(&'q Quantity, Held),
    Big(&'q BigQuantity),
}

impl AnyQuantity<'_> {
    fn to_big(self) -> BigQuantity {
        match self {
            AnyQuantity::Small(q, held) => BigQuantity::from_small(q, held),
            AnyQuantity::Big(b) => b.clone(),
        }
    }

    /// `self * k`, as upstream's `Quantity.Mul`.
    pub(crate) fn mul(self, k: i64) -> BigQuantity {
        self.to_big().mul_int(k)
    }

    /// Upstream's `Cmp`.
    pub(crate) fn cmp(self, other: AnyQuantity<'_>) -> Ordering {
        match (self, other) {
            (AnyQuantity::Small(a, _), AnyQuantity::Small(b, _)) => a.cmp(b),
            (AnyQuantity::Big(a), AnyQuantity::Big(b)) => a.cmp_value(b),
            (AnyQuantity::Small(a, _), AnyQuantity::Big(b)) => BigQuantity::from_nanos(a.nanos()).cmp_value(b),
            (AnyQuantity::Big(a), AnyQuantity::Small(b, _)) => a.cmp_value(&BigQuantity::from_nanos(b.nanos())),
        }
    }

    /// `self + other` (or `self - other`), as upstream's `Quantity.Add` (`Sub`): the
    /// `int64Amount` sum when both are `int64Amount`s and it fits, else a decimal.
    pub(crate) fn add(self, other: AnyQuantity<'_>, subtract: bool) -> BigQuantity {
        let (a, mut b) = (self.to_big(), other.to_big());
        let repr = add_repr(a.repr, b.repr, subtract);
        if subtract {
            b.neg = !b.neg && !b.limbs.is_empty();
        }
        let mut sum = a.add_value(&b);
        sum.repr = repr;
        sum
    }
}

/// The representation of `a + b` (or `a - b`), as upstream's `Quantity.Add` (`Sub`):
/// the `int64Amount` sum when both are `int64Amount`s and it fits, else a decimal
/// with the larger of the two scales. Negating the most negative `int64` also falls
/// back to a decimal, as `int64Amount.Sub` does.
fn add_repr(a: Repr, b: Repr, subtract: bool) -> Repr {
    let b = match b {
        Repr::Int { value, scale } if subtract => {
            value.checked_neg().map_or(Repr::Dec { scale: -scale }, |value| Repr::Int { value, scale })
        }
        other => other,
    };
    match (a, b) {
        (Repr::Int { value: x, scale: xs }, Repr::Int { value: y, scale: ys }) => {
            int_add(x, xs, y, ys).unwrap_or(Repr::Dec { scale: (-xs).max(-ys) })
        }
        (ra, rb) => Repr::Dec { scale: dec_scale(ra).max(dec_scale(rb)) },
    }
}

/// The representation of `a * k`, as upstream's `Quantity.Mul`: `int64Amount.Mul`
/// keeps the scale (a zero factor gives a plain zero) unless the product overflows,
/// then a decimal of the same scale. (Upstream also falls back when a product at a
/// negative scale stops being whole, or at a positive scale stops fitting once
/// scaled; the decimal and the `int64Amount` answer every CEL question alike then.)
fn mul_repr(a: Repr, k: i64) -> Repr {
    match a {
        Repr::Int { value, .. } if value != 0 && k == 0 => Repr::Int { value: 0, scale: 0 },
        Repr::Int { value, scale } => {
            value.checked_mul(k).map_or(Repr::Dec { scale: -scale }, |value| Repr::Int { value, scale })
        }
        dec @ Repr::Dec { .. } => dec,
    }
}

/// Upstream's `AsInt64` of a representation.
fn repr_as_i64(r: Repr) -> Option<i64> {
    match r {
        Repr::Int { value, scale: 0 } => Some(value),
        Repr::Int { value, scale } if scale > 0 => scale_up(value, scale),
        _ => None,
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
    /// An ordinary quantity, with its upstream representation.
    fn from_small(q: &Quantity, held: Held) -> BigQuantity {
        BigQuantity { repr: held.repr(q), ..BigQuantity::from_nanos(q.nanos()) }
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
        let t = Text::split(text)?;
        if t.binary {
            // Out of range with a binary suffix means above the cap.
            return BigQuantity::parse_capped(t.neg);
        }
        let digits: Vec<u8> =
            t.int.bytes().chain(t.frac.bytes()).skip_while(|&d| d == b'0').map(|d| d - b'0').collect();
        // value = digits * 10^(exponent - frac.len()) units = digits * 10^shift nanos.
        let scale = t.exponent - t.frac.len() as i64;
        let mut q = BigQuantity::from_digits(&digits, scale + 9)?;
        q.neg = t.neg && !q.limbs.is_empty();
        q.repr = match t.decimal_fast_path() {
            Some((value, scale)) => Repr::Int { value, scale },
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
        BigQuantity { neg, limbs, repr: mul_repr(self.repr, k) }
    }

    /// Upstream's `AsInt64`: only an `int64Amount` whose value fits.
    pub(crate) fn as_i64(&self) -> Option<i64> {
        repr_as_i64(self.repr)
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
        scaled_f64(base, exponent)
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

/// How upstream's `ParseQuantity` holds `text` (a quantity [`Quantity::parse`]
/// accepted). Its int64 fast path needs at most 18 digits (leading zeros of the
/// integer part not counted, the fraction's all counted) and a scale of at least
/// 10^-9, and gives `int64Amount{digits, exponent - fraction digits}`; a binary
/// suffix needs no fraction and `15 - digits - exponent*3/10 - 1 >= 0`, and gives
/// scale 0. Anything else is an `inf.Dec` rounded up to scale 9 (a zero keeps the
/// scale it was written with). So `1.5Ki`, `1Pi` and 19 digits are decimals, and
/// `1000m` is `int64Amount{1000, -3}`.
fn text_held(text: &str) -> Held {
    if text == "0" {
        return Held::Int(0);
    }
    let Ok(t) = Text::split(text) else { return Held::Dec(9) };
    let frac_len = t.frac.len() as i64;
    if t.binary {
        // The precision `15 - digits - exponent*3/10 - 1` must not be negative, and
        // `int64Multiply(value, 1 << exponent)` must fit (at most 11 digits here).
        let fast = t.frac.is_empty()
            && 15 - t.num_len() - t.exponent * 3 / 10 > 0
            && t.int.parse::<i64>().unwrap_or(0).checked_mul(1 << t.exponent).is_some();
        return match (fast, t.is_zero()) {
            (true, _) => Held::Int(0),
            (false, false) => Held::Dec(9),
            (false, true) => Held::Dec(frac_len as i32),
        };
    }
    match (t.decimal_fast_path(), t.is_zero()) {
        (Some((_, scale)), _) => Held::Int(scale),
        (None, false) => Held::Dec(9),
        (None, true) => Held::Dec(i32::try_from(frac_len - t.exponent).unwrap_or(i32::MAX)),
    }
}

/// Quantity text split as upstream's `parseQuantityString` splits it: sign, integer
/// digits (leading zeros dropped), fraction digits, and the suffix read as a power.
struct Text<'t> {
    neg: bool,
    int: &'t str,
    frac: &'t str,
    exponent: i64,
    binary: bool,
}

impl<'t> Text<'t> {
    fn split(text: &'t str) -> Result<Text<'t>, String> {
        let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
        let split = unsigned.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(unsigned.len());
        let (number, suffix) = unsigned.split_at(split);
        let (int, frac) = number.split_once('.').unwrap_or((number, ""));
        let (exponent, binary) = suffix_exponent(suffix)?;
        Ok(Text { neg: text.starts_with('-'), int: int.trim_start_matches('0'), frac, exponent, binary })
    }

    /// The numerator's length as upstream counts it: no digits count as "0".
    fn num_len(&self) -> i64 {
        self.int.len().max(1) as i64
    }

    fn is_zero(&self) -> bool {
        self.int.is_empty() && self.frac.bytes().all(|d| d == b'0')
    }

    /// `ParseQuantity`'s int64 fast path for a decimal suffix: at most 18 digits and a
    /// scale of at least 10^-9 give `int64Amount{digits, exponent - fraction digits}`.
    fn decimal_fast_path(&self) -> Option<(i64, i32)> {
        let scale = self.exponent - self.frac.len() as i64;
        if self.num_len() + self.frac.len() as i64 > 18 || scale < -9 {
            return None;
        }
        // At most 18 digits: always within an int64.
        let digits = self.int.bytes().chain(self.frac.bytes());
        let value = digits.fold(0i64, |v, d| v * 10 + i64::from(d - b'0'));
        Some((if self.neg { -value } else { value }, i32::try_from(scale).ok()?))
    }
}

/// `quantity(text)`: the ordinary [`Quantity`] and how upstream holds it when it
/// holds the value, else the arbitrary-precision fallback.
pub(crate) fn parse_quantity(text: &str) -> Result<Result<(Quantity, Held), BigQuantity>, String> {
    const CAP_NANOS: i128 = BINARY_CAP_UNITS as i128 * BASE as i128;
    match Quantity::parse(text) {
        // Within schedkit's range but above upstream's cap for binary suffixes.
        Ok(q) if q.format() == QuantityFormat::BinarySi && q.nanos().abs() > CAP_NANOS => {
            BigQuantity::parse_capped(q.nanos() < 0).map(Err)
        }
        Ok(q) => Ok(Ok((q, text_held(text)))),
        Err(QuantityError::OutOfRange { .. }) => BigQuantity::parse(text).map(Err),
        Err(e) => Err(e.to_string()),
    }
}
