//! A pod's claims after Filter: reserve, commit, deallocate, binding status, release,
//! and the audit of the store's bookkeeping.

use std::sync::Arc;

use ahash::AHashMap;

use super::{
    Audit, BindingState, ClaimEntry, DraStore, GatherError, NodeResult, binding_state, claim_key, consumed_capacity,
};
use crate::dra::allocator::InUse;
use crate::dra::compiled::CompiledClaim;
use crate::dra::error::DraError;
use crate::dra::types::{
    AllocatedDeviceStatus, AllocationResult, PodExtendedResourceClaimStatus, ResourceClaim,
    ResourceClaimConsumerReference, ResourceClaimStatus,
};
use crate::dra::world::DeviceId;
use crate::framework::Feature;
use crate::model::{Labels, Pod, Resources};

impl DraStore {
    /// Allocates the pod's unallocated claims on `node` and holds the devices in flight
    /// for the pod (Reserve). Idempotent per pod: a second call replaces the first.
    pub fn reserve(&self, pod: &Pod, pod_uid: &str, node: &str, labels: &Labels) -> Result<NodeResult, GatherError> {
        self.reserve_on(pod, pod_uid, node, labels, None)
    }

    /// [`DraStore::reserve`] for a pod whose extended resources may be backed by DRA:
    /// `allocatable` is the node's (a resource it lists with a non-zero amount is served
    /// by its device plugin, not DRA); `None` means the node lists none.
    pub fn reserve_on(
        &self,
        pod: &Pod,
        pod_uid: &str,
        node: &str,
        labels: &Labels,
        allocatable: Option<&Resources>,
    ) -> Result<NodeResult, GatherError> {
        let mut inner = self.write();
        inner.inflight.remove(pod_uid);
        inner.extended_inflight.remove(pod_uid);
        inner.group_inflight.retain(|_, (holder, _)| holder != pod_uid);
        inner.alloc_gen += 1;
        let requests = (!inner.extended_names.is_empty() && Self::requests_scalar(pod)).then(|| pod.requests());
        let claims = self.gather_locked(&mut inner, pod, Some(pod_uid), requests.as_ref())?;
        let empty = Resources::default();
        let result = claims.allocate_on(node, labels, allocatable.unwrap_or(&empty))?;
        if let NodeResult::Fit(list) = &result {
            if let Some(ext) = &claims.extended
                && list.iter().any(|(k, _)| *k == ext.key)
            {
                let mask = claims.extended_mask(allocatable.unwrap_or(&empty)).unwrap_or(0);
                if let Some(Some(v)) = ext.variants.get(mask) {
                    inner.extended_inflight.insert(pod_uid.to_owned(), (v.claim.clone(), v.mappings.clone()));
                }
            }
            let held: Vec<(String, Arc<AllocationResult>)> =
                list.iter().map(|(k, a)| (k.clone(), Arc::new(a.clone()))).collect();
            // Group claims this member allocates: later members of the group reuse them.
            for pc in &pod.spec.resource_claims {
                let Ok(r) = Self::resolve_locked(&inner, pod, pc) else { continue };
                if r.group.is_none() {
                    continue;
                }
                let key = claim_key(&pod.metadata.namespace, &r.name);
                if let Some((_, a)) = held.iter().find(|(k, _)| *k == key) {
                    inner.group_inflight.insert(key, (pod_uid.to_owned(), a.clone()));
                }
            }
            inner.inflight.insert(pod_uid.to_owned(), held);
            inner.alloc_gen += 1;
        }
        Ok(result)
    }

    /// Drops the pod's in-flight allocations (Unreserve).
    pub fn unreserve(&self, pod_uid: &str) {
        let mut inner = self.write();
        inner.extended_inflight.remove(pod_uid);
        inner.group_inflight.retain(|_, (holder, _)| holder != pod_uid);
        if inner.inflight.remove(pod_uid).is_some() {
            inner.alloc_gen += 1;
        }
    }

    /// The pod's in-flight allocations.
    pub fn inflight(&self, pod_uid: &str) -> Vec<(String, Arc<AllocationResult>)> {
        self.read().inflight.get(pod_uid).cloned().unwrap_or_default()
    }

    /// Records the pod's in-flight allocations in the claims' status and reserves every
    /// claim of the pod for it (PreBind after the caller accepted the update).
    pub fn commit(&self, pod: &Pod, pod_uid: &str) -> Vec<Arc<ResourceClaim>> {
        self.commit_at(pod, pod_uid, None)
    }

    /// Sets `status.allocation.allocationTimestamp` to the wall-clock time if the claim
    /// is allocated and has none yet (upstream `bindClaim`, `time.Now()`).
    fn stamp_allocation(claim: &mut ResourceClaim) {
        let Some(a) = claim.status.as_mut().and_then(|s| s.allocation.as_mut()) else { return };
        if a.allocation_timestamp.is_none() {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(0));
            a.allocation_timestamp = Some(crate::selector::format_timestamp(nanos));
        }
    }

    /// [`DraStore::commit`], recording `now` (the scheduler's clock) as the allocation
    /// time of each newly allocated claim: the start of its binding timeout. With binding
    /// conditions enabled every allocated claim of the pod also gets
    /// `status.allocation.allocationTimestamp` (wall clock, RFC 3339) if it has none,
    /// written at the same moment, as upstream's PreBind does.
    pub fn commit_at(&self, pod: &Pod, pod_uid: &str, now: Option<std::time::Duration>) -> Vec<Arc<ResourceClaim>> {
        let mut inner = self.write();
        let list = inner.inflight.remove(pod_uid).unwrap_or_default();
        let mut out = Vec::new();
        // Upstream `bindClaim` writes allocationTimestamp with binding conditions enabled.
        let stamp = inner.features.enabled(Feature::DRADeviceBindingConditions);
        if let Some((compiled, mappings)) = inner.extended_inflight.remove(pod_uid) {
            let key = compiled.key.clone();
            if let Some((_, a)) = list.iter().find(|(k, _)| *k == key) {
                let mut claim = Self::extended_claim_with_status(&compiled, a, pod, pod_uid);
                if stamp {
                    Self::stamp_allocation(&mut claim);
                }
                let claim = Arc::new(claim);
                let mut c = (*compiled).clone();
                c.claim = claim.clone();
                inner.claims.insert(key, ClaimEntry { compiled: Arc::new(c), allocated_at: now });
                inner.extended_status.insert(
                    pod_uid.to_owned(),
                    PodExtendedResourceClaimStatus {
                        request_mappings: mappings,
                        resource_claim_name: claim.metadata.name.clone(),
                    },
                );
                out.push(claim);
            }
        }
        inner.group_inflight.retain(|_, (holder, _)| holder != pod_uid);
        for pc in &pod.spec.resource_claims {
            let Ok(resolved) = Self::resolve_locked(&inner, pod, pc) else { continue };
            let key = claim_key(&pod.metadata.namespace, &resolved.name);
            let consumer = resolved.consumer(pod, pod_uid);
            let Some(entry) = inner.claims.get_mut(&key) else { continue };
            let mut claim = (*entry.compiled.claim).clone();
            let status = claim.status.get_or_insert_with(ResourceClaimStatus::default);
            if let Some((_, a)) = list.iter().find(|(k, _)| *k == key) {
                status.allocation = Some((**a).clone());
                entry.allocated_at = now.or(entry.allocated_at);
            }
            if stamp {
                Self::stamp_allocation(&mut claim);
            }
            let status = claim.status.get_or_insert_with(ResourceClaimStatus::default);
            // Upstream `BindTo`: the pod, or for a group claim its PodGroup.
            if !status.reserved_for.iter().any(|r| r.uid == consumer.uid) {
                status.reserved_for.push(consumer);
            }
            let claim = Arc::new(claim);
            let mut compiled = (*entry.compiled).clone();
            compiled.claim = claim.clone();
            entry.compiled = Arc::new(compiled);
            out.push(claim);
        }
        inner.alloc_gen += 1;
        out
    }

    fn extended_claim_with_status(
        compiled: &CompiledClaim,
        allocation: &AllocationResult,
        pod: &Pod,
        pod_uid: &str,
    ) -> ResourceClaim {
        let mut claim = (*compiled.claim).clone();
        claim.status = Some(ResourceClaimStatus {
            allocation: Some(allocation.clone()),
            reserved_for: vec![ResourceClaimConsumerReference {
                api_group: String::new(),
                resource: "pods".into(),
                name: pod.metadata.name.clone(),
                uid: pod_uid.to_owned(),
            }],
            ..ResourceClaimStatus::default()
        });
        claim
    }

    /// The claim Reserve allocated for the pod's extended resources, with its allocation
    /// and `reservedFor` as PreBind creates it, and the pod status entry naming it
    /// (upstream `createExtendedResourceClaimInAPI`, `patchPodExtendedResourceClaimStatus`).
    pub fn pending_extended_claim(
        &self,
        pod: &Pod,
        pod_uid: &str,
    ) -> Option<(ResourceClaim, PodExtendedResourceClaimStatus)> {
        let inner = self.read();
        let (compiled, mappings) = inner.extended_inflight.get(pod_uid)?;
        let (_, a) = inner.inflight.get(pod_uid)?.iter().find(|(k, _)| *k == compiled.key)?;
        let claim = Self::extended_claim_with_status(compiled, a, pod, pod_uid);
        let status = PodExtendedResourceClaimStatus {
            request_mappings: mappings.clone(),
            resource_claim_name: claim.metadata.name.clone(),
        };
        Some((claim, status))
    }

    /// Clears a claim's allocation and reservations (deallocation: the claim's devices
    /// become free). Returns the updated claim.
    pub fn deallocate(&self, namespace: &str, name: &str) -> Option<Arc<ResourceClaim>> {
        let mut inner = self.write();
        let entry = inner.claims.get_mut(&claim_key(namespace, name))?;
        let mut claim = (*entry.compiled.claim).clone();
        claim.status = None;
        let claim = Arc::new(claim);
        let mut compiled = (*entry.compiled).clone();
        compiled.claim = claim.clone();
        entry.compiled = Arc::new(compiled);
        entry.allocated_at = None;
        inner.alloc_gen += 1;
        Some(claim)
    }

    /// Replaces a claim's `status.devices` (what a driver reports: device conditions,
    /// data), as a driver's status update would. Returns the updated claim.
    pub fn update_device_status(
        &self,
        namespace: &str,
        name: &str,
        devices: Vec<AllocatedDeviceStatus>,
    ) -> Result<Arc<ResourceClaim>, DraError> {
        let mut inner = self.write();
        let key = claim_key(namespace, name);
        let entry = inner.claims.get_mut(&key).ok_or(DraError::ClaimNotFound(key))?;
        let mut claim = (*entry.compiled.claim).clone();
        claim.status.get_or_insert_with(ResourceClaimStatus::default).devices = devices;
        let claim = Arc::new(claim);
        let mut compiled = (*entry.compiled).clone();
        compiled.claim = claim.clone();
        entry.compiled = Arc::new(compiled);
        Ok(claim)
    }

    /// Where a claim's device binding conditions stand and when it was allocated (clock
    /// time, if recorded). `None` when the claim is not in the store.
    pub fn claim_binding(&self, namespace: &str, name: &str) -> Option<(BindingState, Option<std::time::Duration>)> {
        let inner = self.read();
        let e = inner.claims.get(&claim_key(namespace, name))?;
        Some((binding_state(&e.compiled.claim), e.allocated_at))
    }

    /// Removes one pod from a claim's `reservedFor` (the pod finished); the allocation stays
    /// until [`DraStore::deallocate`], as upstream's controller deallocates separately.
    pub fn release(&self, namespace: &str, name: &str, pod_uid: &str) {
        let mut inner = self.write();
        if let Some(entry) = inner.claims.get_mut(&claim_key(namespace, name)) {
            let mut claim = (*entry.compiled.claim).clone();
            if let Some(s) = claim.status.as_mut() {
                s.reserved_for.retain(|r| r.uid != pod_uid);
            }
            let mut compiled = (*entry.compiled).clone();
            compiled.claim = Arc::new(claim);
            entry.compiled = Arc::new(compiled);
        }
    }

    /// Checks that no device is held twice (admin access excepted) and no counter is
    /// overdrawn, across allocated claims and in-flight reservations.
    pub fn audit(&self) -> Audit {
        let inner = self.read();
        let w = &inner.world;
        // By name, so that auditing pins nothing; only a double allocation found is
        // reported as a (pinned) DeviceId.
        let mut count: AHashMap<(&str, &str, &str), u32> = AHashMap::new();
        let mut all: Vec<&AllocationResult> = inner
            .claims
            .values()
            .filter_map(|e| e.compiled.claim.status.as_ref().and_then(|s| s.allocation.as_ref()))
            .collect();
        all.extend(inner.inflight.values().flat_map(|l| l.iter().map(|(_, a)| &**a)));
        let mut counters = vec![0i128; w.counter_capacity.len()];
        let mut shared: AHashMap<(u32, usize), i128> = AHashMap::new();
        let mut shared_devices = InUse::default();
        for a in all {
            for r in a.devices.results.iter().filter(|r| r.admin_access != Some(true)) {
                let id = (r.driver.as_str(), r.pool.as_str(), r.device.as_str());
                let Some(&first) = DeviceId::lookup(id.0, id.1, id.2).and_then(|d| w.index.get(&d)) else {
                    *count.entry(id).or_default() += 1;
                    continue;
                };
                if !w.devices[first as usize].multi {
                    *count.entry(id).or_default() += 1;
                }
                // As in `in_use`: a share is charged to every entry with the device's
                // ID (twins, older generations among them), counters once per
                // generation's copy.
                if w.devices[first as usize].multi {
                    for t in std::iter::once(first).chain(w.twins.get(&first).into_iter().flatten().copied()) {
                        let te = &w.devices[t as usize];
                        if te.multi {
                            for (si, amount) in consumed_capacity(te, r) {
                                *shared.entry((t, si)).or_default() += amount;
                            }
                        }
                    }
                }
                let copies = w.older.get(&first).map_or(&[][..], |v| v.as_slice());
                for d in std::iter::once(first).chain(copies.iter().copied()) {
                    let e = &w.devices[d as usize];
                    if e.multi && !shared_devices.mark_shared(d) {
                        continue;
                    }
                    for &(c, amount) in &e.consumes {
                        counters[c as usize] += amount;
                    }
                }
            }
        }
        let mut double_allocated: Vec<DeviceId> =
            count.into_iter().filter(|(_, n)| *n > 1).map(|((dr, p, d), _)| DeviceId::new(dr, p, d)).collect();
        double_allocated.sort();
        // A counter or capacity published in several generations of its pool (each
        // node allocating from the generation it sees) may legitimately be charged
        // beyond a smaller copy's value through a larger copy: the allocator checks
        // the copy it allocates from. So the bound is the largest copy's value.
        let mut by_name: std::collections::BTreeMap<String, (i128, i128)> = std::collections::BTreeMap::new();
        let mut bound = |name: String, used: i128, value: i128| {
            let (u, v) = by_name.entry(name).or_insert((used, value));
            *u = (*u).max(used);
            *v = (*v).max(value);
        };
        for (i, &used) in counters.iter().enumerate() {
            bound(w.counter_names[i].clone(), used, w.counter_capacity[i]);
        }
        for ((d, si), used) in shared {
            let e = &w.devices[d as usize];
            bound(format!("{}/capacity/{}", e.id, e.shares[si].name), used, e.shares[si].value);
        }
        let overdrawn_counters: Vec<String> =
            // Nothing consumed overdraws nothing, even a counter published with a
            // negative value (which no allocation can then consume).
            by_name.into_iter().filter(|(_, (used, value))| used > value && *used > 0).map(|(name, _)| name).collect();
        Audit { double_allocated, overdrawn_counters }
    }
}
