//! HAMi's admission webhook as a pure function ([`mutate_pod`], upstream
//! `pkg/scheduler/webhook.go` `Handle` and `pkg/device/nvidia/device.go`
//! `MutateAdmission`): validation and the defaulting of device count and exclusive
//! cores, and the hand-over to HAMi's scheduler name.

use super::request::{ResourceKeys, has, lookup};
use super::{HamiConfig, HamiError};
use crate::model::{Container, Pod, Quantity};

/// What [`mutate_pod`] decided for an admitted pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// The pod names another scheduler: left as it is (upstream: "pod already has
    /// different scheduler assigned").
    OtherScheduler,
    /// The pod went through the defaulting; `has_resource` says whether some container
    /// asks for vGPU resources (then the pod now names HAMi's scheduler).
    Mutated {
        /// Some container asks for a device.
        has_resource: bool,
    },
}

/// Applies HAMi's webhook to `pod` in place, init containers first, then the app
/// containers:
///
/// - denies a pod without containers (`pod has no containers`);
/// - leaves a pod that names another scheduler (`default-scheduler` too, unless
///   `force_overwrite_default_scheduler`);
/// - rejects a `gpumem-percentage` outside `0..=100` (the message of upstream's
///   `validateMemoryPercentage`);
/// - adds `nvidia.com/gpu = defaultGPUNum` to a container whose limits ask for cores,
///   memory or a memory share without a count;
/// - sets `gpucores = 100` (exclusive) on a container with a count and no cores when
///   it asks for no memory or a 100% share;
/// - gives a pod with a request HAMi's scheduler name, and denies it if it already
///   has a node (`pod has node assigned`).
///
/// Not modelled (schedkit's pod has no such fields): the environment variables
/// upstream injects (task priority, core policy, `NVIDIA_VISIBLE_DEVICES=none`), the
/// runtime class, the privileged-container denial, and HAMi's ResourceQuota check.
///
/// ```
/// use schedkit::plugins::hami::{Admission, HamiConfig, mutate_pod};
/// use schedkit::testing::PodBuilder;
/// let mut pod = PodBuilder::new("p").with(|p| {
///     p.spec.containers[0].resources.limits = schedkit::model::ResourceList::parse([("nvidia.com/gpumem", "4096")]).unwrap();
/// }).build();
/// assert_eq!(mutate_pod(&mut pod, &HamiConfig::default()).unwrap(), Admission::Mutated { has_resource: true });
/// assert_eq!(pod.spec.scheduler_name, "hami-scheduler");
/// assert_eq!(pod.spec.containers[0].resources.limits.get_str("nvidia.com/gpu").unwrap().value(), 1);
/// ```
pub fn mutate_pod(pod: &mut Pod, cfg: &HamiConfig) -> Result<Admission, HamiError> {
    if pod.spec.containers.is_empty() {
        return Err(HamiError::Denied("pod has no containers".into()));
    }
    let sched = pod.spec.scheduler_name.as_str();
    if !sched.is_empty()
        && (sched != crate::framework::DEFAULT_SCHEDULER_NAME || !cfg.force_overwrite_default_scheduler)
        && (cfg.scheduler_name.is_empty() || sched != cfg.scheduler_name)
    {
        return Ok(Admission::OtherScheduler);
    }
    let keys = cfg.keys();
    let mut has_resource = false;
    for c in pod.spec.init_containers.iter_mut().chain(pod.spec.containers.iter_mut()) {
        has_resource |= mutate_container(c, cfg, keys)?;
    }
    if has_resource && !cfg.scheduler_name.is_empty() {
        pod.spec.scheduler_name.clone_from(&cfg.scheduler_name);
        if !pod.spec.node_name.is_empty() {
            return Err(HamiError::Denied("pod has node assigned".into()));
        }
    }
    Ok(Admission::Mutated { has_resource })
}

/// One container (upstream `MutateAdmission` for NVIDIA).
fn mutate_container(c: &mut Container, cfg: &HamiConfig, k: ResourceKeys) -> Result<bool, HamiError> {
    if let Some(pct) = lookup(c, k.percentage).map(Quantity::value)
        && !(0..=100).contains(&pct)
    {
        return Err(HamiError::Invalid(format!(
            "invalid {} value {pct} in container {}: must be an integer between 0 and 100",
            cfg.resource_memory_percentage_name, c.name
        )));
    }
    let limits = &mut c.resources.limits;
    let mut has_resource = has(limits, k.count);
    if !has_resource
        && (has(limits, k.cores) || has(limits, k.memory) || has(limits, k.percentage))
        && cfg.default_gpu_num > 0
        && !k.count.is_empty()
    {
        limits.set(k.count, Quantity::from_int(i64::from(cfg.default_gpu_num)));
        has_resource = true;
    }
    // defaultExclusiveCoreIfNeeded
    let present = |c: &Container, s| has(&c.resources.limits, s) || has(&c.resources.requests, s);
    if !k.count.is_empty() && present(c, k.count) && !k.cores.is_empty() && !present(c, k.cores) {
        let exclusive = match lookup(c, k.percentage) {
            Some(p) => p.value() == 100,
            None => k.memory.is_empty() || lookup(c, k.memory).is_none(),
        };
        if exclusive {
            c.resources.limits.set(k.cores, Quantity::from_int(100));
            has_resource = true;
        }
    }
    Ok(has_resource)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ResourceList;

    fn pod_with(limits: &[(&str, &str)], requests: &[(&str, &str)]) -> Pod {
        let mut p = Pod::default();
        let mut c = Container { name: "test".into(), ..Container::default() };
        c.resources.limits = ResourceList::parse(limits.iter().copied()).unwrap();
        c.resources.requests = ResourceList::parse(requests.iter().copied()).unwrap();
        p.spec.containers.push(c);
        p
    }

    fn cores(p: &Pod, name: &str) -> Option<i64> {
        p.spec.containers[0].resources.limits.get_str(name).map(Quantity::value)
    }

    /// Upstream `pkg/device/nvidia/device_test.go`,
    /// `Test_MutateAdmission_MemoryPercentageValidation`.
    #[test]
    fn memory_percentage_validation() {
        for (pct, bad) in [("0", false), ("100", false), ("101", true), ("150", true), ("-1", true)] {
            let mut p = pod_with(&[("nvidia.com/gpu", "1"), ("nvidia.com/gpumem-percentage", pct)], &[]);
            let r = mutate_pod(&mut p, &HamiConfig::default());
            assert_eq!(r.is_err(), bad, "{pct}");
            if let Err(e) = r {
                assert_eq!(
                    e.to_string(),
                    format!(
                        "invalid nvidia.com/gpumem-percentage value {pct} in container test: must be an integer between 0 and 100"
                    )
                );
            }
        }
    }

    /// Upstream `TestMutateAdmissionDefaultsExclusiveCore`.
    #[test]
    #[expect(clippy::type_complexity, reason = "a table of resource lists")]
    fn defaults_exclusive_core() {
        let cfg = HamiConfig::default();
        let cases: [(&[(&str, &str)], &[(&str, &str)], Option<i64>); 7] = [
            (&[("nvidia.com/gpu", "1"), ("nvidia.com/gpumem-percentage", "100")], &[], Some(100)),
            (&[], &[("nvidia.com/gpu", "1"), ("nvidia.com/gpumem-percentage", "100")], Some(100)),
            (&[("nvidia.com/gpu", "1"), ("nvidia.com/gpumem-percentage", "50")], &[], None),
            (&[("nvidia.com/gpu", "1")], &[], Some(100)),
            (&[("nvidia.com/gpu", "1"), ("nvidia.com/gpucores", "70")], &[], Some(70)),
            (&[], &[("nvidia.com/gpu", "1"), ("nvidia.com/gpucores", "55")], None),
            (&[("nvidia.com/gpu", "1"), ("nvidia.com/gpumem", "8192")], &[], None),
        ];
        for (i, (l, r, want)) in cases.into_iter().enumerate() {
            let mut p = pod_with(l, r);
            mutate_pod(&mut p, &cfg).unwrap();
            assert_eq!(cores(&p, "nvidia.com/gpucores"), want, "case {i}");
        }
        let mut p = pod_with(&[], &[("nvidia.com/gpu", "1"), ("nvidia.com/gpucores", "55")]);
        mutate_pod(&mut p, &cfg).unwrap();
        assert_eq!(p.spec.containers[0].resources.requests.get_str("nvidia.com/gpucores").unwrap().value(), 55);
        let no_mem = HamiConfig { resource_memory_name: String::new(), ..HamiConfig::default() };
        let mut p = pod_with(&[("nvidia.com/gpu", "1")], &[]);
        mutate_pod(&mut p, &no_mem).unwrap();
        assert_eq!(cores(&p, "nvidia.com/gpucores"), Some(100));
        let custom = HamiConfig {
            resource_count_name: "hami.io/gpu".into(),
            resource_memory_name: "hami.io/gpumem".into(),
            resource_memory_percentage_name: "hami.io/gpumem-percentage".into(),
            resource_core_name: "hami.io/gpucores".into(),
            ..HamiConfig::default()
        };
        let mut p = pod_with(&[("hami.io/gpu", "1"), ("hami.io/gpumem-percentage", "100")], &[]);
        mutate_pod(&mut p, &custom).unwrap();
        assert_eq!(cores(&p, "hami.io/gpucores"), Some(100));
    }

    /// Upstream `pkg/scheduler/webhook_test.go`: `TestEmptyContainersDenied`,
    /// `TestPodHasNodeName`, `TestPodHasDifferentScheduler`,
    /// `TestNonGPUPodAllowedAdmission`, `TestSchedulerNameEmptyNoOverwrite`.
    #[test]
    fn webhook_handle() {
        let cfg = HamiConfig::default();
        let mut empty = Pod::default();
        assert_eq!(mutate_pod(&mut empty, &cfg).unwrap_err().to_string(), "admission denied: pod has no containers");
        let mut p = pod_with(&[("nvidia.com/gpu", "1")], &[]);
        p.spec.node_name = "n1".into();
        assert_eq!(mutate_pod(&mut p, &cfg).unwrap_err().to_string(), "admission denied: pod has node assigned");
        let mut p = pod_with(&[("nvidia.com/gpu", "1")], &[]);
        p.spec.scheduler_name = "other".into();
        assert_eq!(mutate_pod(&mut p, &cfg).unwrap(), Admission::OtherScheduler);
        assert_eq!(p.spec.scheduler_name, "other");
        let mut p = pod_with(&[("nvidia.com/gpu", "1")], &[]);
        p.spec.scheduler_name = "default-scheduler".into();
        assert_eq!(mutate_pod(&mut p, &cfg).unwrap(), Admission::OtherScheduler);
        let force = HamiConfig { force_overwrite_default_scheduler: true, ..HamiConfig::default() };
        assert_eq!(mutate_pod(&mut p, &force).unwrap(), Admission::Mutated { has_resource: true });
        assert_eq!(p.spec.scheduler_name, "hami-scheduler");
        let mut cpu = pod_with(&[("cpu", "1")], &[]);
        assert_eq!(mutate_pod(&mut cpu, &cfg).unwrap(), Admission::Mutated { has_resource: false });
        assert_eq!(cpu.spec.scheduler_name, "");
        let unnamed = HamiConfig { scheduler_name: String::new(), ..HamiConfig::default() };
        let mut p = pod_with(&[("nvidia.com/gpu", "1")], &[]);
        assert_eq!(mutate_pod(&mut p, &unnamed).unwrap(), Admission::Mutated { has_resource: true });
        assert_eq!(p.spec.scheduler_name, "");
    }
}
