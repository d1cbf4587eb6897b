//! The beta distribution LowRiskOverCommitment fits to a node's measured load
//! (upstream `pkg/trimaran/lowriskovercommitment/beta.go`), with the regularized
//! incomplete beta function it needs (upstream calls gonum's `mathext.RegIncBeta`,
//! a Cephes `incbet` port; this is an implementation of the same expansions: a power
//! series for small `b·x`, otherwise one of two continued fractions cut off after
//! 301 steps as Cephes does, and the symmetry `I_x(a,b) = 1 - I_{1-x}(b,a)`).

#![expect(
    clippy::many_single_char_names,
    clippy::float_cmp,
    reason = "the formulas read best with the textbook names a, b, x; the domain edges 0 and 1 are exact"
)]

use std::fmt;

/// Half the distance from 1.0 to the next double (Cephes `MACHEP`).
const MACH_EP: f64 = 1.110_223_024_625_156_5e-16;
/// `ln(f64::MAX)` (Cephes `MAXLOG`).
const MAX_LOG: f64 = 7.097_827_128_933_84e2;
/// `ln` of the smallest normal double (Cephes `MINLOG`).
const MIN_LOG: f64 = -7.083_964_185_322_641e2;
/// Rescaling bounds of the continued fractions' convergents.
const BIG: f64 = 4.503_599_627_370_496e15;
const BIG_INV: f64 = 2.220_446_049_250_313e-16;

/// `ln Γ(x)` for `x > 0` (Lanczos, g = 7, nine terms; reflection below 0.5).
pub(crate) fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Γ(x)Γ(1-x) = π / sin(πx)
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = C[0];
    for (i, c) in C.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// `ln B(a, b)`.
pub(crate) fn ln_beta(a: f64, b: f64) -> f64 {
    ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b)
}

/// `I_x(a, b)` by its power series, `x^a / B(a,b) · (1/a + Σ_{n≥1} t_n / (a+n))` with
/// `t_n = Π_{k≤n} (k-b)/k · x^n`; for `b·x <= 1`, `x <= 0.95`.
fn power_series(a: f64, b: f64, x: f64) -> f64 {
    let mut term = (1.0 - b) * x;
    let mut v = term / (a + 1.0);
    let mut sum = v;
    let tol = MACH_EP / a;
    let mut n = 2.0;
    while v.abs() > tol {
        term *= (n - b) * x / n;
        v = term / (a + n);
        sum += v;
        n += 1.0;
    }
    sum += 1.0 / a;
    let log = a * x.ln() - ln_beta(a, b) + sum.ln();
    if log < MIN_LOG { 0.0 } else { log.exp() }
}

/// Evaluates `1 / (1 + d1 / (1 + d2 / (1 + ...)))` by forward recurrence of its
/// convergents, two coefficients a step, at most 301 steps, until the relative change
/// is below `3·MACH_EP`. `coeffs(m)` gives `(d_{2m+1}, d_{2m+2})`.
fn continued_fraction(coeffs: impl Fn(f64) -> (f64, f64)) -> f64 {
    let (mut p2, mut q2, mut p1, mut q1) = (0.0_f64, 1.0_f64, 1.0_f64, 1.0_f64);
    let mut ans = 1.0;
    let mut r = 1.0;
    let thresh = 3.0 * MACH_EP;
    for m in 0..=300 {
        let (odd, even) = coeffs(f64::from(m));
        let (mut p, mut q) = (0.0, 0.0);
        for d in [odd, even] {
            p = p1 + p2 * d;
            q = q1 + q2 * d;
            p2 = p1;
            p1 = p;
            q2 = q1;
            q1 = q;
        }
        if q != 0.0 {
            r = p / q;
        }
        let change = if r == 0.0 {
            1.0
        } else {
            let c = ((ans - r) / r).abs();
            ans = r;
            c
        };
        if change < thresh {
            return ans;
        }
        if q.abs() + p.abs() > BIG {
            p2 *= BIG_INV;
            p1 *= BIG_INV;
            q2 *= BIG_INV;
            q1 *= BIG_INV;
        }
        if q.abs() < BIG_INV || p.abs() < BIG_INV {
            p2 *= BIG;
            p1 *= BIG;
            q2 *= BIG;
            q1 *= BIG;
        }
    }
    ans
}

/// The regularized incomplete beta function `I_x(a, b)` for `a, b > 0`, `x` in
/// `[0, 1]`; NaN outside (upstream `RegularizedIncomplete`).
pub fn regularized_incomplete(x: f64, a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() || x.is_nan() || a <= 0.0 || b <= 0.0 || !(0.0..=1.0).contains(&x) {
        return f64::NAN;
    }
    if x == 0.0 {
        return 0.0;
    }
    if x == 1.0 {
        return 1.0;
    }
    if b * x <= 1.0 && x <= 0.95 {
        return power_series(a, b, x);
    }
    // Swap to the tail with the faster expansion when x is past the mean.
    let swapped = x > a / (a + b);
    let (a, b, x, xc) = if swapped { (b, a, 1.0 - x, x) } else { (a, b, x, 1.0 - x) };
    let finish = |t: f64| {
        if !swapped {
            t
        } else if t <= MACH_EP {
            1.0 - MACH_EP
        } else {
            1.0 - t
        }
    };
    if swapped && b * x <= 1.0 && x <= 0.95 {
        return finish(power_series(a, b, x));
    }
    let w = if x * (a + b - 2.0) - (a - 1.0) < 0.0 {
        continued_fraction(|m| {
            (
                -(x * (a + m) * (a + b + m)) / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
                (x * (m + 1.0) * (b - m - 1.0)) / ((a + 2.0 * m + 1.0) * (a + 2.0 * m + 2.0)),
            )
        })
    } else {
        let z = x / (1.0 - x);
        continued_fraction(|m| {
            (
                -(z * (a + m) * (b - 1.0 - m)) / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
                (z * (m + 1.0) * (a + b + m)) / ((a + 2.0 * m + 1.0) * (a + 2.0 * m + 2.0)),
            )
        }) / xc
    };
    // w · x^a (1-x)^b / (a B(a,b)), in logarithms.
    let log = a * x.ln() + b * xc.ln() - ln_beta(a, b) + (w / a).ln();
    let t = if log.is_nan() {
        f64::NAN
    } else if log < MIN_LOG {
        0.0
    } else if log > MAX_LOG {
        f64::INFINITY
    } else {
        log.exp()
    };
    finish(t)
}

/// A beta distribution with its first three moments (upstream `BetaDistribution`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BetaDistribution {
    alpha: f64,
    beta: f64,
    first_moment: f64,
    second_moment: f64,
    third_moment: f64,
}

impl BetaDistribution {
    /// Beta(α, β); `None` unless both are positive (upstream `NewBetaDistribution`).
    pub fn new(alpha: f64, beta: f64) -> Option<BetaDistribution> {
        if !(alpha > 0.0 && beta > 0.0) {
            return None;
        }
        let mut b = BetaDistribution { alpha, beta, first_moment: 0.0, second_moment: 0.0, third_moment: 0.0 };
        b.compute_moments();
        Some(b)
    }

    /// `E[X^k] = (α + k - 1) / (α + β + k - 1) · E[X^{k-1}]`.
    fn compute_moments(&mut self) {
        self.first_moment = self.alpha / (self.alpha + self.beta);
        self.second_moment = self.first_moment * (self.alpha + 1.0) / (self.alpha + self.beta + 1.0);
        self.third_moment = self.second_moment * (self.alpha + 2.0) / (self.alpha + self.beta + 2.0);
    }

    /// Matches the first two moments (upstream `MatchMoments`): false (and unchanged)
    /// when `m1` is outside `[0, 1]` or the variance outside `[0, m1(1-m1))`.
    pub fn match_moments(&mut self, m1: f64, m2: f64) -> bool {
        let variance = m2 - m1 * m1;
        if !(0.0..=1.0).contains(&m1) || variance < 0.0 || variance >= m1 * (1.0 - m1) {
            return false;
        }
        // Go's max(x, SmallestNonzeroFloat64): NaN stays NaN.
        let t = m1 * (1.0 - m1) / variance - 1.0;
        let t = if t.is_nan() { t } else { t.max(f64::from_bits(1)) };
        self.alpha = m1 * t;
        self.beta = (1.0 - m1) * t;
        self.compute_moments();
        true
    }

    /// α.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// β.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// The mean.
    pub fn mean(&self) -> f64 {
        self.first_moment
    }

    /// The variance, `E[X²] - E[X]²`.
    pub fn variance(&self) -> f64 {
        self.second_moment - self.first_moment * self.first_moment
    }

    /// `P(X <= x)`; 0 where the function is NaN or outside `[0, 1]` (upstream
    /// `DistributionFunction`).
    pub fn distribution_function(&self, x: f64) -> f64 {
        let p = regularized_incomplete(x, self.alpha, self.beta);
        if p.is_nan() || !(0.0..=1.0).contains(&p) { 0.0 } else { p }
    }
}

impl fmt::Display for BetaDistribution {
    /// Upstream `Print`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "BetaDistribution: alpha = {:.6}; beta = {:.6}; mean = {:.6}; var = {:.6}; m1 = {:.6}; m2 = {:.6}; m3 = {:.6}; ",
            self.alpha,
            self.beta,
            self.mean(),
            self.variance(),
            self.first_moment,
            self.second_moment,
            self.third_moment
        )
    }
}

/// The largest variance a distribution on `[0, 1]` with mean `m1` can have,
/// `m1(1-m1)` for `m1` in `(0, 1)`, else 0 (upstream `GetMaxVariance`).
pub fn max_variance(m1: f64) -> f64 {
    if m1 > 0.0 && m1 < 1.0 { m1 * (1.0 - m1) } else { 0.0 }
}

/// The probability that utilisation with mean `mu` and deviation `sigma` stays at or
/// below `threshold`, with the fitted distribution when one was fitted (upstream
/// `ComputeProbability`): 1 for `mu == 0` or a certain value below the threshold, 0
/// for a certain value above it or moments no beta distribution has.
pub fn compute_probability(mu: f64, sigma: f64, threshold: f64) -> (f64, Option<BetaDistribution>) {
    if mu == 0.0 || (sigma == 0.0 && mu <= threshold) {
        return (1.0, None);
    }
    if sigma == 0.0 && mu > threshold {
        return (0.0, None);
    }
    let Some(mut dist) = BetaDistribution::new(1.0, 1.0) else { return (0.0, None) };
    if !dist.match_moments(mu, sigma * sigma + mu * mu) {
        return (0.0, None);
    }
    // distribution_function already maps NaN to 0, so upstream's NaN-to-1 branch
    // after it never fires.
    (dist.distribution_function(threshold), Some(dist))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOLERANCE: f64 = 1e-6;

    fn close(a: f64, b: f64) -> bool {
        a == b || (a - b).abs() < TOLERANCE
    }

    // beta_test.go TestNewBetaDistribution.
    #[test]
    fn new_beta_distribution() {
        let cases = [
            ((1.0, 1.0), Some((0.5, 1.0 / 3.0, 0.25))),
            ((1.0, 2.0), Some((1.0 / 3.0, 1.0 / 6.0, 0.1))),
            ((3.0, 1.0), Some((0.75, 0.6, 0.5))),
            ((-1.0, 1.0), None),
            ((1.0, -1.0), None),
        ];
        for ((a, b), want) in cases {
            let got = BetaDistribution::new(a, b);
            match (got, want) {
                (None, None) => {}
                (Some(d), Some((m1, m2, m3))) => {
                    assert!(close(d.first_moment, m1) && close(d.second_moment, m2) && close(d.third_moment, m3));
                    assert_eq!((d.alpha(), d.beta()), (a, b));
                }
                _ => panic!("beta({a},{b}): got {got:?}"),
            }
        }
    }

    // beta_test.go TestBetaDistribution_MatchMoments.
    #[test]
    fn match_moments() {
        let mut d = BetaDistribution::new(1.0, 1.0).unwrap();
        assert!(d.match_moments(0.5, 1.0 / 3.0));
        assert!(close(d.alpha(), 1.0) && close(d.beta(), 1.0));
        let mut d = BetaDistribution::new(1.0, 1.0).unwrap();
        assert!(!d.match_moments(0.0, 0.0));
    }

    // beta_test.go TestBetaDistribution_DistributionFunction.
    #[test]
    fn distribution_function() {
        let d = BetaDistribution::new(2.0, 2.0).unwrap();
        assert!(close(d.distribution_function(0.5), 0.5));
        assert!(close(d.distribution_function(0.0), 0.0));
        assert!(close(d.distribution_function(1.0), 1.0));
        // beta(-1,1) cannot be built here; its CDF is 0 upstream.
        let invalid = BetaDistribution { alpha: -1.0, beta: 1.0, ..d };
        assert_eq!(invalid.distribution_function(0.5), 0.0);
    }

    // beta_test.go TestGetMaxVariance.
    #[test]
    fn get_max_variance() {
        for (m1, want) in [(0.0, 0.0), (1.0, 0.0), (0.5, 0.25), (-1.0, 0.0)] {
            assert!(close(max_variance(m1), want), "m1={m1}");
        }
    }

    // beta_test.go TestBetaDistribution_Print.
    #[test]
    fn print() {
        let d = BetaDistribution { alpha: 3.0, beta: 1.0, first_moment: 0.75, second_moment: 0.6, third_moment: 0.5 };
        assert_eq!(
            d.to_string(),
            "BetaDistribution: alpha = 3.000000; beta = 1.000000; mean = 0.750000; var = 0.037500; m1 = 0.750000; m2 = 0.600000; m3 = 0.500000; "
        );
    }

    /// Closed forms: I_x(1,1) = x; I_x(a,1) = x^a; I_x(1,b) = 1-(1-x)^b;
    /// I_x(2,2) = 3x² - 2x³; and symmetry.
    #[test]
    fn incomplete_beta_closed_forms() {
        for &x in &[0.01, 0.1, 0.3, 0.5, 0.77, 0.96, 0.999] {
            assert!((regularized_incomplete(x, 1.0, 1.0) - x).abs() < 1e-13, "{x}");
            for &a in &[0.3, 2.5, 17.0, 250.0] {
                let want = x.powf(a);
                let got = regularized_incomplete(x, a, 1.0);
                assert!((got - want).abs() <= 1e-12 * want.max(1e-300) + 1e-14, "x={x} a={a}: {got} vs {want}");
                let want = 1.0 - (1.0 - x).powf(a);
                let got = regularized_incomplete(x, 1.0, a);
                assert!((got - want).abs() < 1e-12, "x={x} b={a}: {got} vs {want}");
            }
            let want = 3.0 * x * x - 2.0 * x * x * x;
            assert!((regularized_incomplete(x, 2.0, 2.0) - want).abs() < 1e-13);
            for &(a, b) in &[(0.7, 3.2), (40.0, 55.0), (5.0, 0.4)] {
                let s = regularized_incomplete(x, a, b) + regularized_incomplete(1.0 - x, b, a);
                assert!((s - 1.0).abs() < 1e-12, "symmetry x={x} a={a} b={b}: {s}");
            }
        }
        assert!(regularized_incomplete(1.5, 1.0, 1.0).is_nan());
        assert!(regularized_incomplete(0.5, 0.0, 1.0).is_nan());
    }

    #[test]
    fn ln_gamma_known_values() {
        assert!(ln_gamma(1.0).abs() < 1e-14);
        assert!(ln_gamma(2.0).abs() < 1e-14);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-14);
        assert!((ln_gamma(10.0) - 362_880_f64.ln()).abs() < 1e-12);
        assert!((ln_gamma(1e-10) - 23.025_850_929_882_733).abs() < 1e-9);
    }

    #[test]
    fn compute_probability_edges() {
        assert_eq!(compute_probability(0.0, 0.3, 0.5).0, 1.0);
        assert_eq!(compute_probability(0.4, 0.0, 0.5).0, 1.0);
        assert_eq!(compute_probability(0.6, 0.0, 0.5).0, 0.0);
        // Variance at the bound: no beta distribution.
        assert_eq!(compute_probability(0.5, 0.5, 0.5), (0.0, None));
        let (p, d) = compute_probability(0.5, 0.2, 0.5);
        assert!(d.is_some() && (p - 0.5).abs() < 1e-9, "{p}");
    }
}
