//! Score strategies per NUMA zone and LeastNUMANodes (scheduler-plugins
//! `pkg/noderesourcetopology/score.go`, `most_allocated.go`, `least_allocated.go`,
//! `balanced_allocation.go`, `least_numa.go`), in upstream's integer arithmetic.

use smallvec::SmallVec;

use super::numa::{NumaZone, QosClass, ResList, suitable};
use crate::framework::MAX_NODE_SCORE;
use crate::model::{Quantity, Symbol};

/// Distance assumed where a zone lists no cost (upstream `maxDistanceValue`).
pub const MAX_DISTANCE: i64 = 255;

/// How nodes are scored (`scoringStrategy.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum ScoringStrategyType {
    /// Prefer the fullest NUMA zone.
    MostAllocated,
    /// Prefer the emptiest NUMA zone (the default).
    #[default]
    LeastAllocated,
    /// Prefer zones whose resources would be used evenly.
    BalancedAllocation,
    /// Prefer nodes where the pod needs the fewest NUMA zones.
    LeastNUMANodes,
}

/// Resource weights (missing or < 1 counts as 1, upstream `resourceToWeightMap.weight`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Weights(pub SmallVec<[(Symbol, i64); 4]>);

impl Weights {
    /// The weight of `name`.
    #[inline]
    pub fn weight(&self, name: Symbol) -> i64 {
        match self.0.iter().find(|(n, _)| *n == name) {
            Some(&(_, w)) if w >= 1 => w,
            _ => 1,
        }
    }
}

/// `Quantity::value()` (whole units, rounded up) without the 128-bit division for
/// values below 2^73 nano-units (about 9.4e12 units): 10^9 = 2^9 * 1953125, and
/// nested floor divisions compose.
#[inline]
pub fn fast_value(q: Quantity) -> i64 {
    let n = q.nanos();
    if (0..1i128 << 73).contains(&n) {
        let shifted = u64::try_from(n >> 9).unwrap_or(u64::MAX);
        let whole = shifted / 1_953_125;
        let exact = n.trailing_zeros() >= 9 && shifted % 1_953_125 == 0;
        return i64::try_from(whole).unwrap_or(i64::MAX) + i64::from(!exact);
    }
    q.value()
}

fn ratio(requested: Quantity, avail: Quantity, least: bool) -> i64 {
    if avail.sign() == 0 || requested > avail {
        return 0;
    }
    let a = fast_value(avail);
    if a == 0 {
        return 0;
    }
    let r = fast_value(requested);
    if least { (a - r) * MAX_NODE_SCORE / a } else { r * MAX_NODE_SCORE / a }
}

/// One zone's score for `requested` under `strategy` (not LeastNUMANodes).
/// Upstream divides by the weight sum; with no requested resource (unreachable for a
/// Guaranteed pod, which requests cpu and memory) upstream would divide by zero, here 0.
pub fn zone_score<'a, I: Iterator<Item = (Symbol, &'a Quantity)>>(
    strategy: ScoringStrategyType,
    requested: impl Fn() -> I,
    zone: &NumaZone,
    weights: &Weights,
) -> i64 {
    match strategy {
        ScoringStrategyType::MostAllocated | ScoringStrategyType::LeastAllocated => {
            let least = strategy == ScoringStrategyType::LeastAllocated;
            let (mut sum, mut wsum) = (0i64, 0i64);
            for (name, q) in requested() {
                let w = weights.weight(name);
                sum += ratio(*q, zone.get(name).unwrap_or(Quantity::ZERO), least) * w;
                wsum += w;
            }
            if wsum == 0 { 0 } else { sum / wsum }
        }
        ScoringStrategyType::BalancedAllocation => {
            let mut fr: SmallVec<[f64; 8]> = SmallVec::new();
            for (name, q) in requested() {
                let cap = fast_value(zone.get(name).unwrap_or(Quantity::ZERO));
                let f = if cap == 0 { 1.0 } else { fast_value(*q) as f64 / cap as f64 };
                if f > 1.0 {
                    return 0;
                }
                fr.push(f);
            }
            let var = sample_variance(&fr);
            // Upstream: int64((1 - variance) * 100). With fewer than two fractions gonum
            // yields NaN (int64 conversion is then platform-defined); a Guaranteed pod
            // always requests cpu and memory, so schedkit scores such a zone 0.
            if var.is_nan() { 0 } else { ((1.0 - var) * MAX_NODE_SCORE as f64) as i64 }
        }
        ScoringStrategyType::LeastNUMANodes => 0,
    }
}

/// gonum `stat.Variance` without weights: corrected two-pass, unbiased (n - 1).
fn sample_variance(x: &[f64]) -> f64 {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let (mut ss, mut comp) = (0.0, 0.0);
    for &v in x {
        let d = v - mean;
        ss += d * d;
        comp += d;
    }
    (ss - comp * comp / n) / (n - 1.0)
}

/// Upstream `scoreForEachNUMANode`: the lowest non-zero zone score, or 0.
pub fn score_for_each_zone<'a, I: Iterator<Item = (Symbol, &'a Quantity)>>(
    strategy: ScoringStrategyType,
    requested: impl Fn() -> I,
    zones: &[NumaZone],
    weights: &Weights,
) -> i64 {
    let mut min = 0;
    for z in zones {
        let s = zone_score(strategy, &requested, z, weights);
        if min == 0 || (s != 0 && s < min) {
            min = s;
        }
    }
    min
}

/// Upstream `normalizeScore` for LeastNUMANodes.
pub fn normalize_numa_count(count: usize, is_min_avg_distance: bool, max_numa_nodes: usize) -> i64 {
    let per = MAX_NODE_SCORE / i64::try_from(max_numa_nodes.max(1)).unwrap_or(i64::MAX);
    let score = MAX_NODE_SCORE - i64::try_from(count).unwrap_or(i64::MAX).saturating_mul(per);
    if is_min_avg_distance { score + per / 2 } else { score }
}

/// Upstream `nodesAvgDistance` (float32, 255 for a missing cost).
fn avg_distance(zones: &[NumaZone], combo: &[usize]) -> f32 {
    if combo.is_empty() {
        return MAX_DISTANCE as f32;
    }
    let mut acc: i64 = 0;
    for &a in combo {
        for &b in combo {
            acc += zones[a].cost(zones[b].id).unwrap_or(MAX_DISTANCE);
        }
    }
    acc as f32 / (combo.len() * combo.len()) as f32
}

/// Visits the k-combinations of `0..n` in gonum `combin.Combinations` order
/// (lexicographic); stops when `f` returns `true`.
fn for_each_combination(len: usize, size: usize, mut visit: impl FnMut(&[usize]) -> bool) {
    if size == 0 || size > len {
        return;
    }
    let mut combo: SmallVec<[usize; 8]> = (0..size).collect();
    loop {
        if visit(&combo) {
            return;
        }
        // Advance the rightmost position that can still move, reset the ones after it.
        let mut pos = size;
        while pos > 0 && combo[pos - 1] == len - size + pos - 1 {
            pos -= 1;
        }
        if pos == 0 {
            return;
        }
        combo[pos - 1] += 1;
        for j in pos..size {
            combo[j] = combo[j - 1] + 1;
        }
    }
}

/// Upstream `numaNodesRequired`: the smallest set of zones (as indices into `zones`)
/// whose summed availability fits `requests`, and whether it has the minimum average
/// distance among all sets of its size. `None` when nothing fits.
#[expect(
    clippy::float_cmp,
    reason = "upstream compares the float32 averages exactly; both sides come from one function"
)]
pub fn numa_nodes_required(
    qos: QosClass,
    zones: &[NumaZone],
    requests: &ResList,
) -> Option<(SmallVec<[usize; 8]>, bool)> {
    for k in 1..=zones.len() {
        let mut min_avg = MAX_DISTANCE as f32;
        for_each_combination(zones.len(), k, |c| {
            let d = avg_distance(zones, c);
            if d < min_avg {
                min_avg = d;
            }
            false
        });
        let mut best: Option<SmallVec<[usize; 8]>> = None;
        let mut best_d: f32 = 256.0;
        let mut exact: Option<SmallVec<[usize; 8]>> = None;
        for_each_combination(zones.len(), k, |c| {
            // Every zone of the set must report every requested resource name.
            if !c.iter().all(|&z| requests.iter().all(|(n, _)| zones[z].get(*n).is_some())) {
                return false;
            }
            let fits = requests.iter().all(|&(n, q)| {
                if q.sign() == 0 {
                    return true;
                }
                let mut sum = Quantity::ZERO;
                for &z in c {
                    if let Some(a) = zones[z].get(n) {
                        sum = sum.checked_add(&a).unwrap_or(sum);
                    }
                }
                suitable(qos, n, q, sum)
            });
            if !fits {
                return false;
            }
            let d = avg_distance(zones, c);
            if d == min_avg {
                exact = Some(c.iter().copied().collect());
                return true;
            }
            if d < best_d {
                best_d = d;
                best = Some(c.iter().copied().collect());
            }
            false
        });
        if let Some(c) = exact {
            return Some((c, true));
        }
        if let Some(c) = best {
            return Some((c, false));
        }
    }
    None
}

/// Upstream `onlyNonNUMAResources`: no zone reports any of the requested names.
pub fn only_non_numa(zones: &[NumaZone], requests: &ResList) -> bool {
    !requests.iter().any(|(n, _)| zones.iter().any(|z| z.get(*n).is_some()))
}

/// Upstream `subtractFromNUMAs`: takes each request greedily from the listed zones in
/// order. Upstream passes NUMA ids where it indexes the zone list; schedkit keeps
/// that (`ids` index `zones`) and skips ids past its end, where upstream would panic.
pub fn subtract_from_numas(requests: &ResList, zones: &mut [NumaZone], ids: &[usize]) {
    for &(name, q) in requests {
        let mut left = q;
        for &id in ids {
            if left.sign() == 0 {
                break;
            }
            let Some(z) = zones.get_mut(id) else { continue };
            let Some((_, avail)) = z.resources.iter_mut().find(|(n, _)| *n == name) else { continue };
            if left >= *avail {
                left = left.checked_sub(avail).unwrap_or(Quantity::ZERO);
                *avail = Quantity::ZERO;
            } else {
                *avail = avail.checked_sub(&left).unwrap_or(Quantity::ZERO);
                left = Quantity::ZERO;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_value_matches_value() {
        for s in
            ["0", "1", "500m", "1500m", "2Ti", "256Gi", "20971520", "1n", "999999999n", "1e3", "123456789123", "7Ei"]
        {
            let q: Quantity = s.parse().unwrap();
            assert_eq!(fast_value(q), q.value(), "{s}");
        }
    }

    #[test]
    fn combinations_in_gonum_order() {
        let mut seen = Vec::new();
        for_each_combination(4, 2, |c| {
            seen.push(c.to_vec());
            false
        });
        assert_eq!(seen, vec![vec![0, 1], vec![0, 2], vec![0, 3], vec![1, 2], vec![1, 3], vec![2, 3]]);
    }

    /// scheduler-plugins `least_numa_test.go`, `TestNormalizeScore`.
    #[test]
    fn normalize_score_table() {
        // (numa count, isMinAvgDistance, maxNUMANodes) -> score
        let cases = [
            (1, true, 8, 94),
            (1, false, 8, 88),
            (2, true, 8, 82),
            (2, false, 8, 76),
            (8, true, 8, 10),
            (8, false, 8, 4),
        ];
        for (n, min, max, want) in cases {
            assert_eq!(normalize_numa_count(n, min, max), want, "{n} {min} {max}");
        }
    }

    /// Description, zones, combinations, expected minimum.
    type MinDistanceCase<'a> = (&'a str, &'a [NumaZone], &'a [&'a [usize]], f32);

    /// scheduler-plugins `least_numa_test.go`, `TestMinDistance`: the minimum average
    /// distance over the given combinations (255 when no zone lists costs).
    #[test]
    fn min_distance_table() {
        let rows = [[10, 12, 20, 20], [12, 10, 20, 20], [20, 20, 10, 12], [20, 20, 12, 10]];
        let with_costs: Vec<NumaZone> = (0..4)
            .map(|id| NumaZone { id, resources: SmallVec::new(), costs: (0..4).zip(rows[id]).collect() })
            .collect();
        let no_costs: Vec<NumaZone> =
            (0..4).map(|id| NumaZone { id, resources: SmallVec::new(), costs: SmallVec::new() }).collect();
        let pairs: &[&[usize]] = &[&[0, 1], &[0, 2], &[0, 3], &[1, 2], &[1, 3], &[2, 3]];
        let cases: [MinDistanceCase<'_>; 4] = [
            ("single numa node combination", &with_costs, &[&[0], &[1], &[2], &[3]], 10.0),
            ("two numa node combination", &with_costs, pairs, 11.0),
            ("three numa node combination", &with_costs, &[&[0, 1, 2], &[1, 2, 3], &[0, 2, 3]], 14.888_889),
            ("two numa node combination, no costs", &no_costs, pairs, 255.0),
        ];
        for (name, zones, combos, want) in cases {
            let min = combos.iter().map(|c| avg_distance(zones, c)).fold(MAX_DISTANCE as f32, f32::min);
            assert!((min - want).abs() < f32::EPSILON * 16.0, "{name}: {min}");
        }
    }

    #[test]
    fn variance_matches_gonum() {
        // gonum: Variance([0.5, 0.25]) = 0.03125 -> (1 - v) * 100 = 96.875 -> 96.
        assert!((sample_variance(&[0.5, 0.25]) - 0.031_25).abs() < 1e-12);
        assert!(sample_variance(&[0.5]).is_nan());
    }
}
