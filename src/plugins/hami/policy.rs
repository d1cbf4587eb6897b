//! HAMi's policies and scores in upstream's float32 arithmetic: the GPU policy's device
//! order ([`GpuPolicy`], upstream `pkg/scheduler/policy/gpu_policy.go`
//! `DeviceUsageList.Less`), the node policy ([`NodePolicy`], `node_policy.go`), a
//! device's score ([`device_score`], `ComputeScore`) and a node's
//! ([`node_score`], `ComputeDefaultScore`).

use smallvec::SmallVec;

use super::ContainerRequest;
use super::steering::ScoringWeights;

/// Upstream `util.Weight`.
const WEIGHT: f32 = 10.0;

/// A sort key of a GPU chain policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChainKey {
    Binpack,
    Spread,
    Numa,
}

/// How a single-valued GPU policy orders devices.
#[derive(Debug, Clone, PartialEq, Eq)]
enum SortRule {
    Binpack,
    Spread,
    Mutex,
    /// A comma chain (or bare `numa`): its binpack/spread/numa keys in written order,
    /// deduplicated; empty means spread.
    Chain(SmallVec<[ChainKey; 3]>),
}

/// A GPU scheduler policy (`hami.io/gpu-scheduler-policy`): how a node's devices are
/// ordered before Fit takes them from the end, and whether Fit runs in mutex or
/// topology-aware mode.
///
/// Any text is a policy, as upstream: a single value other than `binpack`, `mutex` or
/// `numa` orders as `spread`; a comma list is a chain of the sort keys it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuPolicy {
    rule: SortRule,
    /// `mutex` is one of the comma-separated entries (upstream `PolicyContains`).
    pub mutex: bool,
    /// `topology-aware` is one of the entries.
    pub topology_aware: bool,
}

impl Default for GpuPolicy {
    /// `spread`, the chart's default.
    fn default() -> GpuPolicy {
        GpuPolicy::parse("spread")
    }
}

/// What the GPU policy compares of a device.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SortKey {
    /// The device's score ([`device_score`]).
    pub score: f32,
    /// NUMA node.
    pub numa: i32,
    /// Tasks on the device.
    pub used: i32,
    /// Device index.
    pub index: u32,
}

impl GpuPolicy {
    /// Reads a policy (never fails).
    ///
    /// ```
    /// use schedkit::plugins::hami::{GpuPolicy, SortKey};
    /// let p = GpuPolicy::parse("binpack,numa");
    /// let (a, b) = (SortKey { score: 15.0, numa: 0, ..SortKey::default() }, SortKey { score: 15.0, numa: 1, ..SortKey::default() });
    /// assert!(p.less(false, &a, &b));
    /// assert!(GpuPolicy::parse("mutex").mutex);
    /// ```
    pub fn parse(policy: &str) -> GpuPolicy {
        let entries = || policy.split(',').map(str::trim);
        let mutex = entries().any(|p| p == "mutex");
        let topology_aware = entries().any(|p| p == "topology-aware");
        let rule = if policy.contains(',') || policy == "numa" {
            let mut chain = SmallVec::new();
            for p in entries() {
                let key = match p {
                    "binpack" => ChainKey::Binpack,
                    "spread" => ChainKey::Spread,
                    "numa" => ChainKey::Numa,
                    _ => continue,
                };
                if !chain.contains(&key) {
                    chain.push(key);
                }
            }
            SortRule::Chain(chain)
        } else {
            match policy {
                "binpack" => SortRule::Binpack,
                "mutex" => SortRule::Mutex,
                _ => SortRule::Spread,
            }
        };
        GpuPolicy { rule, mutex, topology_aware }
    }

    /// Whether `a` sorts before `b` (upstream `DeviceUsageList.Less`); Fit takes
    /// devices from the end of the sorted list.
    #[inline]
    #[expect(clippy::float_cmp, reason = "upstream compares the float32 scores exactly")]
    pub fn less(&self, numa_bind: bool, a: &SortKey, b: &SortKey) -> bool {
        let (si, sj, ni, nj) = (a.score, b.score, a.numa, b.numa);
        match &self.rule {
            SortRule::Mutex => {
                if a.used != b.used {
                    return a.used > b.used;
                }
                ni < nj
            }
            SortRule::Binpack | SortRule::Spread if numa_bind => {
                if ni != nj {
                    return if self.rule == SortRule::Binpack { ni > nj } else { ni < nj };
                }
                if self.rule == SortRule::Binpack { si < sj } else { si > sj }
            }
            SortRule::Binpack => {
                if si != sj {
                    return si < sj;
                }
                ni < nj
            }
            SortRule::Spread => {
                if si != sj {
                    return si > sj;
                }
                ni < nj
            }
            SortRule::Chain(keys) => {
                let mut chain: SmallVec<[ChainKey; 3]> =
                    if keys.is_empty() { SmallVec::from_slice(&[ChainKey::Spread]) } else { keys.clone() };
                if numa_bind && chain[0] != ChainKey::Numa {
                    chain.retain(|k| *k != ChainKey::Numa);
                    chain.insert(0, ChainKey::Numa);
                }
                for key in chain {
                    match key {
                        ChainKey::Binpack if si != sj => return si < sj,
                        ChainKey::Spread if si != sj => return si > sj,
                        ChainKey::Numa if ni != nj => return ni < nj,
                        _ => {}
                    }
                }
                a.index < b.index
            }
        }
    }
}

/// A node scheduler policy (`hami.io/node-scheduler-policy`): `spread` prefers the
/// least used node, anything else `binpack`, the most used (upstream
/// `NodeScoreList.Less` then "take the last after sorting").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NodePolicy {
    /// Most used node first (the default).
    #[default]
    Binpack,
    /// Least used node first.
    Spread,
}

impl NodePolicy {
    /// `spread`, else binpack.
    pub fn parse(s: &str) -> NodePolicy {
        if s == "spread" { NodePolicy::Spread } else { NodePolicy::Binpack }
    }

    /// Whether node score `a` sorts before `b` (upstream `NodeScoreList.Less`); the
    /// last node after sorting wins.
    pub fn less(self, a: f32, b: f32) -> bool {
        match self {
            NodePolicy::Spread => a > b,
            NodePolicy::Binpack => a < b,
        }
    }
}

/// What a device's score reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ScoreInput<'a> {
    /// Device type.
    pub kind: &'a str,
    /// Time slices.
    pub count: i32,
    /// Total cores.
    pub totalcore: i32,
    /// Total memory.
    pub totalmem: i32,
    /// Slices used.
    pub used: i32,
    /// Cores used.
    pub usedcores: i32,
    /// Memory used.
    pub usedmem: i32,
}

/// A device's score for a container's requests (upstream `ComputeScore`, float32):
/// `10 * (ws*(n+used)/count + wc*(cores+usedcores)/totalcore + wm*(mem+usedmem)/totalmem)`
/// over the requests whose type equals the device's type exactly (`n` counts them,
/// `nums` is ignored); 0 when count, totalcore or totalmem is 0.
///
/// Upstream compares the request type (`NVIDIA`) with the registered card type
/// (`NVIDIA-<model>` from the device plugin) for equality, so for registered NVIDIA
/// devices the request terms are 0 and the score is the device's current use; this
/// keeps that.
///
/// ```
/// use schedkit::plugins::hami::{ContainerRequest, ScoreInput, ScoringWeights, device_score};
/// let d = ScoreInput { kind: "NVIDIA", count: 10, totalcore: 10, totalmem: 10000, ..ScoreInput::default() };
/// assert_eq!(device_score(&d, &[ContainerRequest::nvidia(1, 0, 50, 2)], ScoringWeights::default()), 8.0);
/// ```
pub fn device_score(d: &ScoreInput<'_>, requests: &[ContainerRequest], w: ScoringWeights) -> f32 {
    if d.count == 0 || d.totalcore == 0 || d.totalmem == 0 {
        return 0.0;
    }
    let (mut n, mut core, mut mem) = (0i32, 0i32, 0i32);
    for r in requests.iter().filter(|r| r.kind == d.kind) {
        n = n.wrapping_add(1);
        core = core.wrapping_add(r.coresreq);
        if r.mem_percentage != 0 && r.mem_percentage != super::MEM_PERCENTAGE_UNSET {
            mem = mem.wrapping_add((i64::from(d.totalmem) * i64::from(r.mem_percentage) / 100) as i32);
        } else {
            mem = mem.wrapping_add(r.memreq);
        }
    }
    let used = n.wrapping_add(d.used) as f32 / d.count as f32;
    let cores = core.wrapping_add(d.usedcores) as f32 / d.totalcore as f32;
    let memory = mem.wrapping_add(d.usedmem) as f32 / d.totalmem as f32;
    WEIGHT * (w.slot as f32 * used + w.core as f32 * cores + w.memory as f32 * memory)
}

/// A node's score from its devices (upstream `ComputeDefaultScore`, float32):
/// `10 * (Σused/Σcount + Σusedcores/Σtotalcore + Σusedmem/Σtotalmem)`, 0 when a total
/// is 0. Sums wrap in int32 as upstream's.
pub fn node_score<'a>(devices: impl IntoIterator<Item = ScoreInput<'a>>) -> f32 {
    let (mut used, mut uc, mut um, mut total, mut tc, mut tm) = (0i32, 0i32, 0i32, 0i32, 0i32, 0i32);
    for d in devices {
        used = used.wrapping_add(d.used);
        uc = uc.wrapping_add(d.usedcores);
        um = um.wrapping_add(d.usedmem);
        total = total.wrapping_add(d.count);
        tc = tc.wrapping_add(d.totalcore);
        tm = tm.wrapping_add(d.totalmem);
    }
    if total == 0 || tc == 0 || tm == 0 {
        return 0.0;
    }
    WEIGHT * (used as f32 / total as f32 + uc as f32 / tc as f32 + um as f32 / tm as f32)
}

#[cfg(test)]
#[expect(clippy::float_cmp, reason = "upstream's tables compare float32 scores exactly")]
mod tests {
    use super::*;

    fn key(numa: i32, used: i32, index: u32, score: f32) -> SortKey {
        SortKey { score, numa, used, index }
    }

    /// Upstream `pkg/scheduler/policy/gpu_policy_test.go`, `TestDeviceUsageList_Less`.
    #[test]
    fn device_usage_list_less_table() {
        // (policy, numa_bind, i, j, want)
        let cases = [
            ("binpack", false, key(0, 10, 0, 10.0), key(0, 20, 0, 20.0), true),
            ("binpack", false, key(1, 10, 0, 10.0), key(0, 20, 0, 20.0), true),
            ("binpack", false, key(0, 10, 0, 10.0), key(1, 20, 0, 20.0), true),
            ("binpack", false, key(0, 0, 0, 15.0), key(1, 0, 0, 15.0), true),
            ("binpack", false, key(1, 0, 0, 20.0), key(0, 0, 0, 10.0), false),
            ("spread", false, key(0, 10, 0, 10.0), key(0, 20, 0, 20.0), false),
            ("spread", false, key(1, 10, 0, 10.0), key(0, 20, 0, 20.0), false),
            ("spread", false, key(1, 0, 0, 20.0), key(0, 0, 0, 10.0), true),
            ("spread", false, key(0, 0, 0, 15.0), key(1, 0, 0, 15.0), true),
            ("binpack", true, key(1, 0, 0, 5.0), key(0, 0, 0, 99.0), true),
            ("binpack", true, key(0, 0, 0, 10.0), key(0, 0, 0, 20.0), true),
            ("spread", true, key(0, 0, 0, 5.0), key(1, 0, 0, 99.0), true),
            ("spread", true, key(0, 0, 0, 20.0), key(0, 0, 0, 10.0), true),
            ("mutex", false, key(0, 2, 0, 0.0), key(0, 0, 0, 0.0), true),
            ("mutex", false, key(0, 0, 0, 0.0), key(0, 1, 0, 0.0), false),
            ("mutex", false, key(0, 0, 0, 0.0), key(1, 0, 0, 0.0), true),
            ("numa", false, key(0, 0, 0, 99.0), key(1, 0, 0, 5.0), true),
            ("numa", false, key(0, 0, 3, 10.0), key(0, 0, 1, 20.0), false),
            ("binpack,numa", false, key(0, 0, 0, 15.0), key(1, 0, 0, 15.0), true),
            ("spread,numa", false, key(0, 0, 0, 15.0), key(1, 0, 0, 15.0), true),
            ("numa,spread", false, key(1, 0, 0, 5.0), key(0, 0, 0, 99.0), false),
            ("numa,spread", false, key(0, 0, 0, 20.0), key(0, 0, 0, 10.0), true),
            ("mutex,spread", false, key(0, 5, 0, 10.0), key(0, 0, 0, 20.0), false),
            ("mutex,topology-aware", false, key(0, 0, 0, 10.0), key(0, 0, 0, 20.0), false),
            ("binpack,numa", false, key(0, 0, 5, 10.0), key(0, 0, 2, 10.0), false),
            ("binpack,spread", true, key(0, 0, 0, 99.0), key(1, 0, 0, 5.0), true),
            ("spread,numa", true, key(0, 0, 0, 20.0), key(0, 0, 0, 10.0), true),
        ];
        for (i, (policy, numa_bind, a, b, want)) in cases.into_iter().enumerate() {
            assert_eq!(GpuPolicy::parse(policy).less(numa_bind, &a, &b), want, "case {i}: {policy}");
        }
    }

    /// Upstream `TestComputeScore`.
    #[test]
    fn compute_score_table() {
        let dev = |count, totalcore, totalmem, used, usedcores, usedmem| ScoreInput {
            kind: "type1",
            count,
            totalcore,
            totalmem,
            used,
            usedcores,
            usedmem,
        };
        let r =
            |kind, memreq, pct, cores| ContainerRequest { nums: 1, kind, memreq, mem_percentage: pct, coresreq: cores };
        let w = ScoringWeights::default();
        assert_eq!(device_score(&dev(0, 0, 0, 0, 0, 0), &[], w), 0.0);
        assert_eq!(device_score(&dev(0, 8, 4096, 0, 0, 0), &[], w), 0.0);
        assert_eq!(device_score(&dev(10, 4, 8192, 2, 1, 2048), &[], w), 7.0);
        let mixed = [ContainerRequest { nums: 4, ..r("type1", 1024, 0, 1) }, r("type2", 4096, 50, 2)];
        assert_eq!(device_score(&dev(10, 4, 8192, 2, 1, 2048), &mixed, w), 11.75);
        assert_eq!(device_score(&dev(10, 10, 10000, 0, 0, 0), &[r("type1", 0, 50, 2)], w), 8.0);
        let agg = [r("type1", 0, 10, 1), r("type1", 0, 20, 2), r("type2", 1000, 50, 5)];
        assert_eq!(device_score(&dev(10, 10, 10000, 0, 0, 0), &agg, w), 8.0);
    }

    /// Upstream `TestComputeScoreWithResourceWeights`.
    #[test]
    fn compute_score_with_resource_weights() {
        let req = [ContainerRequest { nums: 1, kind: "type1", memreq: 0, mem_percentage: 40, coresreq: 0 }];
        let dev = |used, usedcores, usedmem| ScoreInput {
            kind: "type1",
            count: 10,
            totalcore: 100,
            totalmem: 100,
            used,
            usedcores,
            usedmem,
        };
        let (a, b) = (dev(1, 90, 10), dev(7, 10, 20));
        let score = |w| (device_score(&a, &req, w), device_score(&b, &req, w));
        assert_eq!(score(ScoringWeights::default()), (16.0, 15.0));
        let mem3 = ScoringWeights { slot: 1, core: 1, memory: 3 };
        assert_eq!(score(mem3), (26.0, 27.0));
        let core3 = ScoringWeights { slot: 1, core: 3, memory: 1 };
        assert_eq!(score(core3), (34.0, 17.0));
        // Binpack takes the last after sorting: gpu-b under mem3, gpu-a under core3.
        let bp = GpuPolicy::parse("binpack");
        let (sa, sb) = score(mem3);
        assert!(bp.less(false, &key(0, 1, 0, sa), &key(0, 7, 0, sb)));
        assert!(GpuPolicy::parse("spread").less(false, &key(0, 7, 0, sb), &key(0, 1, 0, sa)));
        let (sa, sb) = score(core3);
        assert!(bp.less(false, &key(0, 7, 0, sb), &key(0, 1, 0, sa)));
        // NUMA stays primary under numa-bind: gpu-a (NUMA 0) sorts last for binpack.
        let (sa, sb) = score(mem3);
        assert!(bp.less(true, &key(1, 7, 0, sb), &key(0, 1, 0, sa)));
    }

    /// Upstream `pkg/scheduler/policy/node_policy_test.go`, `TestLess` and
    /// `TestComputeDefaultScore`.
    #[test]
    fn node_policy_and_default_score() {
        assert!(NodePolicy::Spread.less(20.0, 10.0));
        assert!(!NodePolicy::Spread.less(10.0, 20.0));
        assert!(NodePolicy::Binpack.less(10.0, 20.0));
        assert!(!NodePolicy::Binpack.less(20.0, 10.0));
        assert_eq!(NodePolicy::parse("spread"), NodePolicy::Spread);
        assert_eq!(NodePolicy::parse("anything"), NodePolicy::Binpack);
        let zero = ScoreInput::default();
        assert_eq!(node_score([zero]), 0.0);
        assert_eq!(node_score([]), 0.0);
        let d1 = ScoreInput {
            kind: "GPU",
            count: 100,
            totalcore: 100,
            totalmem: 100,
            used: 50,
            usedcores: 100,
            usedmem: 100,
        };
        let d2 = ScoreInput {
            kind: "CPU",
            count: 150,
            totalcore: 200,
            totalmem: 200,
            used: 75,
            usedcores: 200,
            usedmem: 200,
        };
        assert_eq!(node_score([d1, d2]), 25.0);
    }
}
