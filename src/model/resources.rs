//! Resource lists as written in manifests, and the integer `Resources` the scheduler
//! adds and compares.
//!
//! Conversions follow `pkg/scheduler/framework/types.go` (`Resource.Add`): CPU in
//! millicores (`MilliValue`), everything else in whole units (`Value`).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use super::{Quantity, Symbol};

/// `cpu`.
pub const RESOURCE_CPU: &str = "cpu";
/// `memory`.
pub const RESOURCE_MEMORY: &str = "memory";
/// `ephemeral-storage`.
pub const RESOURCE_EPHEMERAL_STORAGE: &str = "ephemeral-storage";
/// `pods`: how many pods a node admits.
pub const RESOURCE_PODS: &str = "pods";
/// `nvidia.com/gpu`, the usual extended resource for whole GPUs.
pub const RESOURCE_NVIDIA_GPU: &str = "nvidia.com/gpu";

/// Default CPU request assumed for scoring a container that sets none (100m), from
/// `pkg/scheduler/util/pod_resources.go` `DefaultMilliCPURequest`.
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// Default memory request assumed for scoring a container that sets none (200Mi),
/// `DefaultMemoryRequest`.
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// Interned names of the four native resources.
#[derive(Debug, Clone, Copy)]
pub struct NativeNames {
    /// `cpu`
    pub cpu: Symbol,
    /// `memory`
    pub memory: Symbol,
    /// `ephemeral-storage`
    pub ephemeral_storage: Symbol,
    /// `pods`
    pub pods: Symbol,
}

static NATIVE: LazyLock<NativeNames> = LazyLock::new(|| NativeNames {
    cpu: Symbol::intern(RESOURCE_CPU),
    memory: Symbol::intern(RESOURCE_MEMORY),
    ephemeral_storage: Symbol::intern(RESOURCE_EPHEMERAL_STORAGE),
    pods: Symbol::intern(RESOURCE_PODS),
});

/// The interned native resource names.
pub fn native_names() -> &'static NativeNames {
    &NATIVE
}

/// A manifest's resource list (`requests`, `limits`, `allocatable`): name -> quantity.
/// Keeps the difference between a missing entry and an explicit zero, which the
/// non-zero scoring defaults depend on.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ResourceList(SmallVec<[(Symbol, Quantity); 4]>);

impl ResourceList {
    /// An empty list.
    pub const fn new() -> Self {
        ResourceList(SmallVec::new_const())
    }

    /// Builds a list from `(name, quantity text)` pairs.
    ///
    /// ```
    /// use schedkit::model::ResourceList;
    /// let r = ResourceList::parse([("cpu", "500m"), ("memory", "1Gi")]).unwrap();
    /// assert_eq!(r.get_str("cpu").unwrap().milli_value(), 500);
    /// assert!(ResourceList::parse([("cpu", "lots")]).is_err());
    /// ```
    pub fn parse<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self, super::QuantityError> {
        let mut l = ResourceList::new();
        for (k, v) in pairs {
            l.set(Symbol::intern(k), Quantity::parse(v)?);
        }
        Ok(l)
    }

    /// Sets `name` to `q`.
    pub fn set(&mut self, name: Symbol, q: Quantity) {
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some(e) => e.1 = q,
            None => self.0.push((name, q)),
        }
    }

    /// The quantity of `name`, if present.
    pub fn get(&self, name: Symbol) -> Option<&Quantity> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, q)| q)
    }

    /// The quantity of `name` by text.
    pub fn get_str(&self, name: &str) -> Option<&Quantity> {
        self.get(Symbol::lookup(name)?)
    }

    /// Iterates over entries.
    pub fn iter(&self) -> impl Iterator<Item = (Symbol, &Quantity)> + '_ {
        self.0.iter().map(|(n, q)| (*n, q))
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The integer form.
    pub fn to_resources(&self) -> Resources {
        let mut r = Resources::default();
        for (n, q) in self.iter() {
            r.add_quantity(n, q);
        }
        r
    }
}

impl fmt::Debug for ResourceList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.0.iter().map(|(k, v)| (k.as_str(), v.to_string()))).finish()
    }
}

impl Serialize for ResourceList {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m: BTreeMap<&str, &Quantity> = self.0.iter().map(|(k, v)| (k.as_str(), v)).collect();
        m.serialize(s)
    }
}

impl<'de> Deserialize<'de> for ResourceList {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let m = BTreeMap::<String, Quantity>::deserialize(d)?;
        Ok(ResourceList(m.into_iter().map(|(k, v)| (Symbol::intern(&k), v)).collect()))
    }
}

/// Integer resource amounts: what the scheduler sums and compares.
///
/// ```
/// use schedkit::model::{ResourceList, Resources};
/// let a = ResourceList::parse([("cpu", "1.5"), ("nvidia.com/gpu", "2")]).unwrap().to_resources();
/// assert_eq!(a.milli_cpu, 1500);
/// assert_eq!(a.scalar_str("nvidia.com/gpu"), 2);
/// ```
#[derive(Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resources {
    /// CPU in millicores.
    pub milli_cpu: i64,
    /// Memory in bytes.
    pub memory: i64,
    /// Ephemeral storage in bytes.
    pub ephemeral_storage: i64,
    /// Pod count (allocatable side: how many pods a node admits).
    pub allowed_pod_number: i64,
    /// Extended and other scalar resources (e.g. `nvidia.com/gpu`, hugepages) by name.
    pub scalar: SmallVec<[(Symbol, i64); 2]>,
}

/// Copied on every copy-on-write of a node and every assumed pod: the scalar list is
/// copied as plain memory, not item by item as a derived `Clone` would.
impl Clone for Resources {
    fn clone(&self) -> Self {
        let Resources { milli_cpu, memory, ephemeral_storage, allowed_pod_number, scalar } = self;
        Resources {
            milli_cpu: *milli_cpu,
            memory: *memory,
            ephemeral_storage: *ephemeral_storage,
            allowed_pod_number: *allowed_pod_number,
            scalar: SmallVec::from_slice(scalar),
        }
    }
}

impl Resources {
    /// Adds one manifest entry.
    pub fn add_quantity(&mut self, name: Symbol, q: &Quantity) {
        let n = native_names();
        if name == n.cpu {
            self.milli_cpu += q.milli_value();
        } else if name == n.memory {
            self.memory += q.value();
        } else if name == n.ephemeral_storage {
            self.ephemeral_storage += q.value();
        } else if name == n.pods {
            self.allowed_pod_number += q.value();
        } else {
            self.add_scalar(name, q.value());
        }
    }

    /// Sets one resource to a manifest quantity, replacing what was there (CPU in
    /// millicores, everything else in whole units, as [`Resources::add_quantity`]).
    pub fn set_quantity(&mut self, name: Symbol, q: &Quantity) {
        let n = native_names();
        if name == n.cpu {
            self.milli_cpu = q.milli_value();
        } else if name == n.memory {
            self.memory = q.value();
        } else if name == n.ephemeral_storage {
            self.ephemeral_storage = q.value();
        } else if name == n.pods {
            self.allowed_pod_number = q.value();
        } else {
            let v = q.value();
            match self.scalar.iter_mut().find(|(m, _)| *m == name) {
                Some(e) => e.1 = v,
                None => self.scalar.push((name, v)),
            }
        }
    }

    /// Adds `v` of a scalar resource.
    pub fn add_scalar(&mut self, name: Symbol, v: i64) {
        match self.scalar.iter_mut().find(|(n, _)| *n == name) {
            Some(e) => e.1 += v,
            None => self.scalar.push((name, v)),
        }
    }

    /// The amount of a scalar resource (0 when absent).
    #[inline]
    pub fn scalar(&self, name: Symbol) -> i64 {
        self.scalar.iter().find(|(n, _)| *n == name).map_or(0, |&(_, v)| v)
    }

    /// The amount of a scalar resource by text.
    pub fn scalar_str(&self, name: &str) -> i64 {
        Symbol::lookup(name).map_or(0, |s| self.scalar(s))
    }

    /// The amount of any resource by interned name (CPU in millicores).
    #[inline]
    pub fn get(&self, name: Symbol) -> i64 {
        let n = native_names();
        if name == n.cpu {
            self.milli_cpu
        } else if name == n.memory {
            self.memory
        } else if name == n.ephemeral_storage {
            self.ephemeral_storage
        } else if name == n.pods {
            self.allowed_pod_number
        } else {
            self.scalar(name)
        }
    }

    /// Adds every amount of `other`.
    pub fn add(&mut self, other: &Resources) {
        self.milli_cpu += other.milli_cpu;
        self.memory += other.memory;
        self.ephemeral_storage += other.ephemeral_storage;
        self.allowed_pod_number += other.allowed_pod_number;
        for &(n, v) in &other.scalar {
            self.add_scalar(n, v);
        }
    }

    /// Subtracts every amount of `other`.
    pub fn sub(&mut self, other: &Resources) {
        self.milli_cpu -= other.milli_cpu;
        self.memory -= other.memory;
        self.ephemeral_storage -= other.ephemeral_storage;
        self.allowed_pod_number -= other.allowed_pod_number;
        for &(n, v) in &other.scalar {
            self.add_scalar(n, -v);
        }
    }

    /// Sets each amount to the larger of the two.
    pub fn set_max(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.max(other.milli_cpu);
        self.memory = self.memory.max(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(other.ephemeral_storage);
        self.allowed_pod_number = self.allowed_pod_number.max(other.allowed_pod_number);
        for &(n, v) in &other.scalar {
            match self.scalar.iter_mut().find(|(m, _)| *m == n) {
                Some(e) => e.1 = e.1.max(v),
                None => self.scalar.push((n, v.max(0))),
            }
        }
    }

    /// Whether every amount is zero.
    pub fn is_zero(&self) -> bool {
        self.milli_cpu == 0
            && self.memory == 0
            && self.ephemeral_storage == 0
            && self.allowed_pod_number == 0
            && self.scalar.iter().all(|&(_, v)| v == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_sub_max() {
        let mut a =
            ResourceList::parse([("cpu", "1"), ("memory", "1Gi"), ("example.com/foo", "3")]).unwrap().to_resources();
        let b = ResourceList::parse([("cpu", "500m"), ("example.com/foo", "5"), ("pods", "1")]).unwrap().to_resources();
        let orig = a.clone();
        a.add(&b);
        assert_eq!(a.milli_cpu, 1500);
        assert_eq!(a.scalar_str("example.com/foo"), 8);
        a.sub(&b);
        assert_eq!(a.milli_cpu, orig.milli_cpu);
        assert_eq!(a.scalar_str("example.com/foo"), 3);
        a.set_max(&b);
        assert_eq!(a.milli_cpu, 1000);
        assert_eq!(a.scalar_str("example.com/foo"), 5);
        assert_eq!(a.allowed_pod_number, 1);
    }
}
