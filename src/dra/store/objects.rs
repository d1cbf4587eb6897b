//! Loading the API objects into the store: slices, classes, claims and templates,
//! each validated (and compiled) once when it arrives.

use std::sync::Arc;

use super::{ClaimEntry, DraStore, GatherError, claim_key, claim_name_for};
use crate::dra::compiled::{CompiledClaim, CompiledClass};
use crate::dra::error::DraError;
use crate::dra::extended::is_dra_extended_resource_name;
use crate::dra::types::{
    DeviceClass, IMPLICIT_EXTENDED_RESOURCE_PREFIX, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
};
use crate::model::{Pod, PodResourceClaim};

impl DraStore {
    /// Adds or replaces a slice (by name). Validates it first, on its own: a device name
    /// repeated within the slice is an error, one repeated in another slice of the pool
    /// makes the pool invalid where both are seen.
    pub fn add_slice(&self, slice: ResourceSlice) -> Result<(), DraError> {
        crate::dra::slice::validate_slice(&slice)?;
        let mut inner = self.inner.write();
        if !inner.features.enabled(crate::framework::Feature::DRAListTypeAttributes) {
            crate::dra::slice::refuse_list_attributes(&slice)?;
        }
        // Duplicate device names across slices of one pool are not a load error (the API
        // server accepts them): pool gathering makes the pool invalid for the nodes that
        // see both slices (upstream `validateDeviceNames`).
        inner.slices.insert(slice.metadata.name.clone(), Arc::new(slice));
        Self::rebuild(&mut inner);
        Ok(())
    }

    /// Removes a slice.
    pub fn remove_slice(&self, name: &str) -> bool {
        let mut inner = self.inner.write();
        let removed = inner.slices.remove(name).is_some();
        if removed {
            Self::rebuild(&mut inner);
        }
        removed
    }

    /// Adds or replaces a device class, compiling its selectors.
    pub fn add_class(&self, class: DeviceClass) -> Result<(), DraError> {
        let compiled = CompiledClass::new(class)?;
        let mut inner = self.inner.write();
        let name = compiled.class.metadata.name.clone();
        if let Some(ext) = &compiled.class.spec.extended_resource_name
            && (!is_dra_extended_resource_name(ext) || ext.starts_with(IMPLICIT_EXTENDED_RESOURCE_PREFIX))
        {
            return Err(DraError::InvalidClass {
                class: name,
                reason: format!("spec.extendedResourceName {ext:?} is not an extended resource name"),
            });
        }
        inner.extended_names.retain(|_, c| *c != name);
        if let Some(ext) = &compiled.class.spec.extended_resource_name {
            inner.extended_names.insert(ext.clone(), name.clone());
        }
        inner.extended_names.insert(format!("{IMPLICIT_EXTENDED_RESOURCE_PREFIX}{name}"), name.clone());
        inner.classes.insert(name, Arc::new(compiled));
        if inner
            .rules
            .values()
            .any(|r| r.rule.spec.device_selector.as_ref().is_some_and(|s| s.device_class_name.is_some()))
        {
            Self::rebuild(&mut inner);
        }
        Ok(())
    }

    /// Removes a device class. Claims already loaded keep their compiled selectors but
    /// fail to schedule until the class is back.
    pub fn remove_class(&self, name: &str) -> bool {
        let mut inner = self.inner.write();
        let removed = inner.classes.remove(name).is_some();
        inner.extended_names.retain(|_, c| c != name);
        if removed
            && inner
                .rules
                .values()
                .any(|r| r.rule.spec.device_selector.as_ref().is_some_and(|s| s.device_class_name.is_some()))
        {
            Self::rebuild(&mut inner);
        }
        removed
    }

    /// Adds or replaces a claim: validates it, checks its classes exist and compiles its
    /// selectors. A claim with `status.allocation` counts as holding its devices.
    pub fn add_claim(&self, claim: ResourceClaim) -> Result<(), DraError> {
        let mut inner = self.write();
        let object = format!("ResourceClaim {}", claim_key(&claim.metadata.namespace, &claim.metadata.name));
        Self::check_admin_access(&inner, &object, &claim.metadata.namespace, &claim.spec)?;
        let classes = &inner.classes;
        let compiled = CompiledClaim::new(claim, |c| classes.get(c).cloned())?;
        let key = compiled.key.clone();
        // Keep the allocation time while the allocation is the same one.
        let allocated_at = inner.claims.get(&key).and_then(|e| {
            let old = e.compiled.claim.status.as_ref().and_then(|s| s.allocation.as_ref());
            let new = compiled.claim.status.as_ref().and_then(|s| s.allocation.as_ref());
            if old.is_some() && old == new { e.allocated_at } else { None }
        });
        inner.claims.insert(key, ClaimEntry { compiled: Arc::new(compiled), allocated_at });
        inner.alloc_gen += 1;
        Ok(())
    }

    /// Removes a claim (its devices become free).
    pub fn remove_claim(&self, namespace: &str, name: &str) -> bool {
        let mut inner = self.write();
        inner.alloc_gen += 1;
        inner.claims.remove(&claim_key(namespace, name)).is_some()
    }

    /// The claim as stored (with its current status).
    pub fn claim(&self, namespace: &str, name: &str) -> Option<Arc<ResourceClaim>> {
        self.read().claims.get(&claim_key(namespace, name)).map(|e| e.compiled.claim.clone())
    }

    /// Adds a claim template. Like a claim, it may ask for admin access only in a
    /// namespace labelled for it.
    pub fn add_template(&self, template: ResourceClaimTemplate) -> Result<(), DraError> {
        let key = claim_key(&template.metadata.namespace, &template.metadata.name);
        let mut inner = self.write();
        let object = format!("ResourceClaimTemplate {key}");
        crate::dra::validation::validate_claim(&object, "spec.spec.devices", &template.spec.spec.devices, None)?;
        Self::check_admin_access(&inner, &object, &template.metadata.namespace, &template.spec.spec)?;
        inner.templates.insert(key, Arc::new(template));
        Ok(())
    }

    /// The claim template `ns/name`, or `ClaimNotFound` naming it.
    pub(super) fn template(&self, ns: &str, name: &str) -> Result<Arc<ResourceClaimTemplate>, DraError> {
        self.inner
            .read()
            .templates
            .get(&claim_key(ns, name))
            .cloned()
            .ok_or_else(|| DraError::ClaimNotFound(format!("template {}", claim_key(ns, name))))
    }

    /// Makes the claim a pod's template reference stands for, as the resourceclaim
    /// controller does, named [`claim_name_for`]. Returns the claim's name.
    pub fn instantiate_template(&self, pod: &Pod, pc: &PodResourceClaim) -> Result<String, DraError> {
        let ns = &pod.metadata.namespace;
        let Some(t) = pc.resource_claim_template_name.as_ref() else {
            return Err(DraError::InvalidClaim {
                claim: pc.name.clone(),
                reason: "no resourceClaimTemplateName".into(),
            });
        };
        let template = self.template(ns, t)?;
        let name = claim_name_for(pod, pc);
        let mut claim = ResourceClaim { spec: template.spec.spec.clone(), ..ResourceClaim::default() };
        claim.metadata.name = name.clone();
        claim.metadata.namespace = ns.clone();
        self.add_claim(claim)?;
        Ok(name)
    }

    /// Whether every claim the pod names is in the store (PreEnqueue): the first missing
    /// claim's key, or for a `podGroupResourceClaim` that does not resolve, why.
    pub fn missing_claim(&self, pod: &Pod) -> Option<String> {
        match self.claims_ready(pod) {
            Ok(()) => None,
            Err(GatherError::MissingClaim(key)) => Some(key),
            Err(e) => Some(e.to_string()),
        }
    }

    /// Every claim reference of the pod resolves ([`DraStore::resolve_claim`]) and the
    /// claim is in the store (upstream PreEnqueue's `foreachPodResourceClaim`).
    pub fn claims_ready(&self, pod: &Pod) -> Result<(), GatherError> {
        // Most pods claim nothing: no lock (and no refresh of a stale world) for them;
        // a gated gang re-runs PreEnqueue for every member added.
        if pod.spec.resource_claims.is_empty() {
            return Ok(());
        }
        let inner = self.read();
        for pc in &pod.spec.resource_claims {
            let resolved = Self::resolve_locked(&inner, pod, pc)?;
            let key = claim_key(&pod.metadata.namespace, &resolved.name);
            match inner.claims.get(&key) {
                None => return Err(GatherError::MissingClaim(key)),
                Some(c) if c.compiled.claim.is_being_deleted() => return Err(GatherError::BeingDeleted(resolved.name)),
                Some(_) => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(i: usize) -> ResourceSlice {
        serde_json::from_value(serde_json::json!({"metadata": {"name": format!("s{i}")}, "spec": {
            "driver": "gpu.example.com", "nodeName": format!("n{i}"),
            "pool": {"name": format!("n{i}"), "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]}}))
        .unwrap()
    }

    #[test]
    fn loading_many_slices_builds_the_world_once_and_every_query_sees_them() {
        let store = DraStore::new();
        let g0 = store.read().world.generation;
        for i in 0..200 {
            store.add_slice(slice(i)).unwrap();
        }
        assert_eq!(store.inner.read().world.generation, g0, "no build while loading");
        assert!(store.device_taints("gpu.example.com", "n199", "gpu-1").is_some());
        assert_eq!(store.read().world.generation, g0 + 1, "one build for 200 slices");
        assert!(store.remove_slice("s199"));
        assert!(store.device_taints("gpu.example.com", "n199", "gpu-1").is_none(), "a removal is seen");
        assert!(store.device_taints("gpu.example.com", "n0", "gpu-0").is_some());
        store.add_slice(slice(199)).unwrap();
        assert!(store.device_taints("gpu.example.com", "n199", "gpu-0").is_some(), "and a re-add");
    }
}
