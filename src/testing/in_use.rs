//! [`InUseDevices`]: DRA devices marked in use, for what-if tools ("what if these
//! GPUs were taken?") without allocating real claims.

use crate::dra::{
    AllocationResult, DeviceAllocationResult, DeviceId, DeviceRequestAllocationResult, DraError, DraStore, ObjectMeta,
    ResourceClaim, ResourceClaimStatus,
};

/// A set of devices (driver, pool, device) to mark in use in a [`DraStore`].
///
/// In Kubernetes a device is in use when an allocated `ResourceClaim` lists it
/// (upstream's allocator gathers them into its `allocatedDevices` set); this set
/// becomes one such claim, allocated and reserved for nobody, so the store's
/// allocator, Filter and the extended-resource counts treat the devices as
/// taken exactly as they would treat a real allocation. [`InUseDevices::apply`]
/// adds it; [`InUseDevices::release`] frees the devices again.
///
/// ```
/// use schedkit::dra::DraStore;
/// use schedkit::testing::InUseDevices;
/// let store = DraStore::new();
/// let busy = InUseDevices::named("what-if").device("gpu.example.com", "node-1", "gpu-0");
/// busy.apply(&store).unwrap();
/// assert!(store.claim("default", "what-if").is_some());
/// assert!(busy.release(&store));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InUseDevices {
    namespace: String,
    name: String,
    devices: Vec<(String, String, String)>,
}

impl Default for InUseDevices {
    fn default() -> Self {
        Self::named("schedkit-in-use")
    }
}

impl InUseDevices {
    /// An empty set whose claim is `default/<name>` (one name per set you apply).
    pub fn named(name: &str) -> Self {
        InUseDevices { namespace: "default".to_owned(), name: name.to_owned(), devices: Vec::new() }
    }

    /// Marks a device in use.
    #[must_use]
    pub fn device(mut self, driver: &str, pool: &str, device: &str) -> Self {
        let d = (driver.to_owned(), pool.to_owned(), device.to_owned());
        if !self.devices.contains(&d) {
            self.devices.push(d);
        }
        self
    }

    /// Marks every device of `pool` named in `devices` in use.
    #[must_use]
    pub fn devices<'a>(mut self, driver: &str, pool: &str, devices: impl IntoIterator<Item = &'a str>) -> Self {
        for d in devices {
            self = self.device(driver, pool, d);
        }
        self
    }

    /// Whether the device is in the set.
    pub fn contains(&self, id: &DeviceId) -> bool {
        self.devices.iter().any(|(dr, p, d)| DeviceId::new(dr, p, d) == *id)
    }

    /// How many devices are marked.
    pub fn len(&self) -> usize {
        self.devices.len()
    }

    /// Whether none are.
    pub fn is_empty(&self) -> bool {
        self.devices.is_empty()
    }

    /// The allocated claim standing for the set.
    pub fn claim(&self) -> ResourceClaim {
        let results = self
            .devices
            .iter()
            .map(|(driver, pool, device)| DeviceRequestAllocationResult {
                request: "in-use".to_owned(),
                driver: driver.clone(),
                pool: pool.clone(),
                device: device.clone(),
                ..DeviceRequestAllocationResult::default()
            })
            .collect();
        ResourceClaim {
            api_version: "resource.k8s.io/v1".to_owned(),
            kind: "ResourceClaim".to_owned(),
            metadata: ObjectMeta {
                name: self.name.clone(),
                namespace: self.namespace.clone(),
                ..ObjectMeta::default()
            },
            status: Some(ResourceClaimStatus {
                allocation: Some(AllocationResult {
                    devices: DeviceAllocationResult { results, config: Vec::new() },
                    ..AllocationResult::default()
                }),
                ..ResourceClaimStatus::default()
            }),
            ..ResourceClaim::default()
        }
    }

    /// Adds (or replaces) the set's claim in `store`: its devices are in use from now on.
    pub fn apply(&self, store: &DraStore) -> Result<(), DraError> {
        store.add_claim(self.claim())
    }

    /// Removes the set's claim from `store`; whether it was there.
    pub fn release(&self, store: &DraStore) -> bool {
        store.remove_claim(&self.namespace, &self.name)
    }
}
