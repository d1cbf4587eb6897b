//! Gathering a pod's claims for a cycle: the devices in use, selector matches, the
//! plans for DRA-backed extended resources, and the checks of disabled features.

use std::sync::Arc;

use ahash::AHashMap;
use smallvec::SmallVec;

use super::{
    AllocatedClaim, BindingState, DraStore, ExtVariant, ExtendedPlan, GatherError, Inner, PodClaims, binding_state,
    claim_key, consumed_capacity, extended_claim_name, has_binding_conditions, selector_bits, subrequest_score,
};
use crate::dra::allocator::{ClaimPlan, InUse};
use crate::dra::compiled::{CompiledClaim, CompiledClass, ns_or_default};
use crate::dra::error::AllocError;
use crate::dra::extended::{self, MAX_EXTENDED_RESOURCES, is_dra_extended_resource_name};
use crate::dra::types::{AllocationResult, EXTENDED_RESOURCE_CLAIM_ANNOTATION, ResourceClaim};
use crate::dra::world::{DeviceId, World};
use crate::framework::{Feature, FeatureGates};
use crate::model::{Pod, Resources, Symbol};

impl DraStore {
    pub(super) fn in_use(inner: &mut Inner, exclude_pod: Option<&str>) -> Arc<InUse> {
        if exclude_pod.is_none()
            && let Some((wg, ag, u)) = &inner.in_use
            && *wg == inner.world.generation
            && *ag == inner.alloc_gen
        {
            return u.clone();
        }
        let w = &inner.world;
        let mut u = InUse {
            devices: vec![0; w.devices.len().div_ceil(64)],
            counters: vec![0; w.counter_capacity.len()],
            shared: AHashMap::new(),
            shared_devices: vec![0; w.devices.len().div_ceil(64)],
        };
        let mut mark = |a: &AllocationResult| {
            for r in &a.devices.results {
                if r.admin_access == Some(true) {
                    continue;
                }
                // A device the world publishes has its names held by the world.
                let Some(&first) = DeviceId::lookup(&r.driver, &r.pool, &r.device).and_then(|id| w.index.get(&id))
                else {
                    continue;
                };
                // The same device in another generation of its pool (held for nodes that
                // still gather that generation) is charged too, against its own
                // generation's counters and capacities.
                let copies = w.older.get(&first).map_or(&[][..], |v| v.as_slice());
                for d in std::iter::once(first).chain(copies.iter().copied()) {
                    let e = &w.devices[d as usize];
                    if e.multi {
                        // Every entry with this device ID (twins: a duplicate name in
                        // another slice, or the device in an older generation) is the same
                        // device to upstream, which tracks consumption by device ID: each
                        // carries the share once, and an exclusive one is in use.
                        if d == first {
                            for t in std::iter::once(first).chain(w.twins.get(&first).into_iter().flatten().copied()) {
                                let te = &w.devices[t as usize];
                                if te.multi {
                                    for (si, amount) in consumed_capacity(te, r) {
                                        *u.shared.entry((t, si)).or_default() += amount;
                                    }
                                } else {
                                    u.devices[(t / 64) as usize] |= 1 << (t % 64);
                                }
                            }
                        }
                        // A shared device's counters are charged once per generation, by
                        // its first share.
                        if u.mark_shared(d) {
                            for &(c, amount) in &e.consumes {
                                u.counters[c as usize] += amount;
                            }
                        }
                        continue;
                    }
                    u.devices[(d / 64) as usize] |= 1 << (d % 64);
                    for &(c, amount) in &e.consumes {
                        u.counters[c as usize] += amount;
                    }
                }
                if let Some(twins) = w.twins.get(&first)
                    && !w.devices[first as usize].multi
                {
                    for &t in twins {
                        u.devices[(t / 64) as usize] |= 1 << (t % 64);
                    }
                }
            }
        };
        for e in inner.claims.values() {
            if let Some(a) = e.compiled.claim.status.as_ref().and_then(|s| s.allocation.as_ref()) {
                mark(a);
            }
        }
        for (pod, list) in &inner.inflight {
            if Some(pod.as_str()) == exclude_pod {
                continue;
            }
            for (_, a) in list {
                mark(a);
            }
        }
        let u = Arc::new(u);
        if exclude_pod.is_none() {
            inner.in_use = Some((inner.world.generation, inner.alloc_gen, u.clone()));
        }
        u
    }

    fn matches(
        &self,
        world: &World,
        classes: &AHashMap<String, Arc<CompiledClass>>,
        claim: &Arc<CompiledClaim>,
        binding: bool,
    ) -> Result<ClaimPlan, AllocError> {
        let mut cache = self.match_cache.lock();
        if cache.0 != world.generation {
            *cache = (world.generation, AHashMap::new());
        }
        let mut matches = Vec::with_capacity(claim.requests.len());
        let mut class_config = Vec::with_capacity(claim.requests.len());
        for r in &claim.requests {
            let mut per_alt = Vec::with_capacity(r.alternatives.len());
            let mut cfg_alt = Vec::with_capacity(r.alternatives.len());
            for alt in &r.alternatives {
                let Some(class) = classes.get(&alt.class) else {
                    return Err(AllocError::MissingDeviceClass {
                        claim: claim.key.clone(),
                        request: alt.result_name.clone(),
                        class: alt.class.clone(),
                    });
                };
                let key = format!("{}\u{2}{}", class.key, alt.cache_suffix);
                let set = cache
                    .1
                    .entry(key)
                    .or_insert_with(|| Arc::new(selector_bits(world, class, &alt.selectors, binding)))
                    .clone();
                per_alt.push(set);
                cfg_alt.push(class.class.spec.config.clone());
            }
            matches.push(per_alt);
            class_config.push(cfg_alt);
        }
        Ok(ClaimPlan { claim: claim.clone(), matches, class_config })
    }

    /// Resolves the pod's claims for a cycle: claims to allocate get compiled plans,
    /// allocated ones their node selector. `None` when the pod has no claims.
    pub fn gather(&self, pod: &Pod) -> Result<Option<PodClaims>, GatherError> {
        self.gather_with_requests(pod, None)
    }

    /// [`DraStore::gather`] with the pod's requests already computed (a `PodInfo`'s).
    pub fn gather_with_requests(
        &self,
        pod: &Pod,
        requests: Option<&Resources>,
    ) -> Result<Option<PodClaims>, GatherError> {
        // Pods without claims are the common case: decide on a read lock.
        if pod.spec.resource_claims.is_empty()
            && (!Self::requests_scalar(pod) || {
                let inner = self.read();
                inner.extended_names.is_empty() || !inner.features.enabled(Feature::DRAExtendedResource)
            })
        {
            return Ok(None);
        }
        let mut inner = self.write();
        let has_ext = !inner.extended_names.is_empty() && Self::requests_scalar(pod);
        let computed;
        let requests = match requests {
            Some(r) if has_ext => Some(r),
            None if has_ext => {
                computed = pod.requests();
                Some(&computed)
            }
            _ => None,
        };
        let claims = self.gather_locked(&mut inner, pod, None, requests)?;
        if claims.plans.is_empty()
            && claims.allocated.is_empty()
            && claims.extended.is_none()
            && claims.stale_extended.is_none()
        {
            return Ok(None);
        }
        Ok(Some(claims))
    }

    pub(super) fn requests_scalar(pod: &Pod) -> bool {
        pod.spec
            .containers
            .iter()
            .chain(pod.spec.init_containers.iter())
            .any(|c| c.resources.requests.iter().any(|(n, _)| is_dra_extended_resource_name(n.as_str())))
    }

    /// Resolves the pod's extended resources backed by DRA (upstream
    /// `preFilterExtendedResources`): `None` when none of its requests maps to a class.
    fn extended_plan(
        &self,
        inner: &mut Inner,
        pod: &Pod,
        requests: &Resources,
        user_plans: &[ClaimPlan],
    ) -> Result<Option<ExtendedPlan>, GatherError> {
        let mut backed: SmallVec<[(Symbol, String); 2]> = SmallVec::new();
        let mut unbacked = SmallVec::new();
        for &(name, v) in &requests.scalar {
            if v == 0 || !is_dra_extended_resource_name(name.as_str()) {
                continue;
            }
            match inner.extended_names.get(name.as_str()) {
                Some(class) => backed.push((name, class.clone())),
                None => unbacked.push(name),
            }
        }
        if backed.is_empty() {
            return Ok(None);
        }
        backed.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        let ns = ns_or_default(&pod.metadata.namespace).to_owned();
        let name = extended_claim_name(pod);
        let key = claim_key(&ns, &name);
        if backed.len() > MAX_EXTENDED_RESOURCES {
            return Err(GatherError::TooManyExtendedResources { pod: pod.key(), count: backed.len() });
        }
        let mut variants = Vec::with_capacity(1 << backed.len());
        variants.push(None);
        for mask in 1..(1usize << backed.len()) {
            let chosen: Vec<(Symbol, &str)> = backed
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, (n, c))| (*n, c.as_str()))
                .collect();
            let (spec, mappings) = extended::claim_spec(pod, &chosen);
            let mut claim = ResourceClaim { spec, ..ResourceClaim::default() };
            claim.metadata.name.clone_from(&name);
            claim.metadata.namespace.clone_from(&ns);
            claim.metadata.annotations.insert(EXTENDED_RESOURCE_CLAIM_ANNOTATION.to_owned(), "true".to_owned());
            claim.metadata.other.insert(
                "ownerReferences".to_owned(),
                serde_json::json!([{"apiVersion": "v1", "kind": "Pod", "name": pod.metadata.name,
                    "uid": pod.uid(), "controller": true}]),
            );
            let classes = &inner.classes;
            let compiled = CompiledClaim::new(claim, |c| classes.get(c).cloned()).map_err(|e| {
                GatherError::Alloc(AllocError::SelectorRuntime {
                    claim: key.clone(),
                    request: String::new(),
                    message: e.to_string(),
                })
            })?;
            let compiled = Arc::new(compiled);
            let plan = self.matches(
                &inner.world,
                &inner.classes,
                &compiled,
                inner.features.enabled(Feature::DRADeviceBindingConditions),
            )?;
            let mut plans = user_plans.to_vec();
            plans.push(plan);
            let slots = Self::slots(&plans);
            variants.push(Some(ExtVariant { claim: compiled, mappings, plans, slots }));
        }
        Ok(Some(ExtendedPlan { key, backed: backed.iter().map(|(n, _)| *n).collect(), unbacked, variants }))
    }

    fn slots(plans: &[ClaimPlan]) -> Vec<(u16, u16)> {
        let mut slots = Vec::new();
        for (c, p) in plans.iter().enumerate() {
            for r in 0..p.claim.requests.len() {
                slots.push((c as u16, r as u16));
            }
        }
        slots
    }

    pub(super) fn gather_locked(
        &self,
        inner: &mut Inner,
        pod: &Pod,
        exclude: Option<&str>,
        requests: Option<&Resources>,
    ) -> Result<PodClaims, GatherError> {
        let in_use = Self::in_use(inner, exclude);
        let features = inner.features;
        let mut disabled = None;
        let mut plans = Vec::new();
        let mut allocated = Vec::new();
        let mut allocated_score = 0;
        for pc in &pod.spec.resource_claims {
            let resolved = Self::resolve_locked(inner, pod, pc)?;
            let key = claim_key(&pod.metadata.namespace, &resolved.name);
            let entry = inner.claims.get(&key).ok_or_else(|| GatherError::MissingClaim(key.clone()))?;
            let claim = &entry.compiled.claim;
            if claim.is_being_deleted() {
                return Err(GatherError::BeingDeleted(resolved.name));
            }
            // A group claim another member allocated in flight counts as allocated
            // (KEP-5729: the first member allocates, later members reuse it).
            let group_alloc = resolved.group.as_ref().and_then(|_| Self::group_inflight(inner, &key, exclude));
            let allocation = claim.status.as_ref().and_then(|s| s.allocation.as_ref()).or(group_alloc.as_deref());
            if let Some(a) = allocation {
                let binding = if has_binding_conditions(claim) { binding_state(claim) } else { BindingState::Ready };
                if !allocated.iter().any(|x: &AllocatedClaim| x.key == key) {
                    allocated_score += subrequest_score(claim, a);
                }
                allocated.push(AllocatedClaim {
                    key,
                    node_selector: a.node_selector.clone(),
                    binding,
                    allocated_at: entry.allocated_at,
                    allocation_timestamp: a
                        .allocation_timestamp
                        .as_deref()
                        .and_then(|t| crate::selector::parse_timestamp(t).ok()),
                });
                continue;
            }
            if plans.iter().any(|p: &ClaimPlan| p.claim.key == key) {
                continue;
            }
            Self::check_features(features, &key, claim, &mut disabled)?;
            plans.push(self.matches(
                &inner.world,
                &inner.classes,
                &entry.compiled,
                inner.features.enabled(Feature::DRADeviceBindingConditions),
            )?);
        }
        let slots = Self::slots(&plans);
        // A claim made for the pod's extended resources in an earlier attempt counts as
        // one of its claims (upstream `findExtendedResourceClaim`).
        let mut extended = None;
        let ext_key = if requests.is_some() && features.enabled(Feature::DRAExtendedResource) {
            claim_key(&pod.metadata.namespace, &extended_claim_name(pod))
        } else {
            String::new()
        };
        // Upstream `filterExtendedResources`: a claim from a prior cycle has requests, so
        // Filter rejects every node ("cannot schedule extended resource claim") and
        // PostFilter deletes it; the next attempt makes a fresh one.
        let mut stale_extended = None;
        let requests = requests.filter(|_| features.enabled(Feature::DRAExtendedResource));
        if requests.is_some()
            && inner.claims.get(&ext_key).is_some_and(|e| {
                e.compiled
                    .claim
                    .metadata
                    .annotations
                    .get(EXTENDED_RESOURCE_CLAIM_ANNOTATION)
                    .is_some_and(|v| v == "true")
            })
        {
            stale_extended = Some(ext_key);
        } else if let Some(requests) = requests {
            extended = self.extended_plan(inner, pod, requests, &plans)?.map(Arc::new);
        }
        if !features.enabled(Feature::DRAPrioritizedList) {
            // Upstream Score returns 0 without `DRAPrioritizedList`.
            allocated_score = 0;
        }
        let prioritized = allocated_score > 0
            || plans
                .iter()
                .any(|p| p.claim.requests.iter().any(|r| r.alternatives.iter().any(|a| a.result_name != r.name)));
        // Filter's quick path: only for the plain shape, decided here once per cycle.
        let quick = if extended.is_none() && stale_extended.is_none() && disabled.is_none() {
            crate::dra::allocator::quick::prepare(&inner.world, &in_use, &plans, &slots, inner.chooser.is_some())
                .map(Arc::new)
        } else {
            None
        };
        Ok(PodClaims {
            quick,
            world: inner.world.clone(),
            in_use,
            plans,
            slots,
            allocated,
            binding: inner.features.enabled(Feature::DRADeviceBindingConditions),
            prioritized,
            allocated_score,
            extended,
            stale_extended,
            chooser: inner.chooser.clone(),
            budget: inner.budget,
            disabled,
            filter_timeout: features.enabled(Feature::DRASchedulerFilterTimeout),
            list_attributes: features.enabled(Feature::DRAListTypeAttributes),
        })
    }

    /// Upstream's checks of a claim to allocate against switched-off features: PreFilter
    /// rejects `firstAvailable` without `DRAPrioritizedList`; the allocator (Filter)
    /// refuses capacity requests without `DRAConsumableCapacity` and `adminAccess`
    /// without `DRAAdminAccess`, which is kept in `disabled` (the first such request of
    /// the pod, in claim and request order; for one request, capacity first).
    fn check_features(
        features: FeatureGates,
        key: &str,
        claim: &ResourceClaim,
        disabled: &mut Option<AllocError>,
    ) -> Result<(), GatherError> {
        for req in &claim.spec.devices.requests {
            if !features.enabled(Feature::DRAPrioritizedList) && !req.first_available.is_empty() {
                return Err(GatherError::PrioritizedListDisabled { claim: key.to_owned(), request: req.name.clone() });
            }
            if disabled.is_some() {
                continue;
            }
            if !features.enabled(Feature::DRAConsumableCapacity) {
                let claim = key.to_owned();
                if req.exactly.as_ref().is_some_and(|e| e.capacity.is_some()) {
                    *disabled = Some(AllocError::ConsumableCapacityDisabled {
                        claim,
                        request: req.name.clone(),
                        subrequest: false,
                    });
                    continue;
                }
                if let Some(sub) = req.first_available.iter().find(|s| s.capacity.is_some()) {
                    *disabled = Some(AllocError::ConsumableCapacityDisabled {
                        claim,
                        request: sub.name.clone(),
                        subrequest: true,
                    });
                    continue;
                }
            }
            if features.enabled(Feature::DRAAdminAccess) {
                continue;
            }
            if req.exactly.as_ref().is_some_and(|e| e.admin_access == Some(true)) {
                *disabled = Some(AllocError::AdminAccessDisabled { claim: key.to_owned(), request: req.name.clone() });
            }
        }
        Ok(())
    }
}
