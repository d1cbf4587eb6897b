//! The device as a selector sees it: a driver name, typed attributes and capacities,
//! each keyed by an interned `(domain, id)` pair.
//!
//! Kubernetes (`k8s.io/dynamic-resource-allocation/cel/compile.go`, `Device` and
//! `parseQualifiedName`) splits an attribute or capacity name at the first `/` into a
//! domain and an identifier; a name without `/` belongs to the device's driver domain.
//! [`Device`] applies the same rule when it is built, so `device.attributes["d"].x` and
//! a compiled selector agree on what `x` is. Domains and identifiers are
//! [`Symbol`]s of the crate's one interner (`model::Symbol`).

use super::semver::Semver;
use crate::model::{Quantity, Symbol};

/// An attribute's domain and identifier, packed for one-integer comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AttributeKey(u64);

impl AttributeKey {
    /// The key of `id` in `domain`.
    pub fn new(domain: Symbol, id: Symbol) -> AttributeKey {
        AttributeKey((u64::from(domain.id()) << 32) | u64::from(id.id()))
    }

    /// Splits a qualified name (`domain/id`, or `id` in `default_domain`) and interns both.
    pub fn qualified(name: &str, default_domain: &str) -> AttributeKey {
        let (domain, id) = name.split_once('/').unwrap_or((default_domain, name));
        AttributeKey::new(Symbol::intern(domain), Symbol::intern(id))
    }

    /// The domain.
    pub fn domain(self) -> Symbol {
        Symbol::from_id((self.0 >> 32) as u32)
    }

    /// The identifier.
    pub fn id(self) -> Symbol {
        Symbol::from_id(self.0 as u32)
    }
}

/// A typed attribute value (resource.k8s.io/v1 `DeviceAttribute`: exactly one of int,
/// bool, string, version, or with `DRAListTypeAttributes` a list of one of them).
#[derive(Debug, Clone, PartialEq)]
pub enum AttributeValue {
    /// `int`
    Int(i64),
    /// `bool`
    Bool(bool),
    /// `string`
    String(Box<str>),
    /// `version`, parsed once when the device is built.
    Version(Semver),
    /// `ints`, `bools`, `strings` or `versions` (alpha `DRAListTypeAttributes`): a
    /// non-empty list of scalars of one type. Selectors see a CEL list; `includes`,
    /// macros and `in` work on it.
    List(Box<[AttributeValue]>),
}

impl AttributeValue {
    /// A `version` attribute from its text (strict semver.org 2.0.0, as resource.k8s.io
    /// validates `VersionValue`).
    pub fn version(text: &str) -> Result<AttributeValue, super::semver::SemverError> {
        Semver::parse(text).map(AttributeValue::Version)
    }
}

/// A device ready for selector evaluation. Build it once per device (the DRA module does
/// this when a `ResourceSlice` changes) and evaluate any number of selectors against it.
///
/// ```
/// use schedkit::model::Quantity;
/// use schedkit::selector::{AttributeValue, Device, Selector};
///
/// let gpu = Device::new("node-1/gpu-0", "gpu.nvidia.com")
///     .with_attribute("productName", AttributeValue::String("NVIDIA H100 80GB HBM3".into()))
///     .with_capacity("memory", Quantity::parse("80Gi").unwrap());
/// let sel = Selector::compile(
///     r#"device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0"#,
/// ).unwrap();
/// assert!(sel.matches(&gpu).unwrap());
/// ```
#[derive(Debug, Clone)]
pub struct Device {
    name: Box<str>,
    driver: Box<str>,
    driver_domain: Symbol,
    allow_multiple_allocations: bool,
    /// Sorted by key; at most a few dozen entries, scanned linearly.
    attributes: Vec<(AttributeKey, AttributeValue)>,
    capacity: Vec<(AttributeKey, Quantity)>,
}

impl Device {
    /// A device named `name` (used in error messages) published by `driver`.
    pub fn new(name: &str, driver: &str) -> Device {
        Device {
            name: name.into(),
            driver: driver.into(),
            driver_domain: Symbol::intern(driver),
            allow_multiple_allocations: false,
            attributes: Vec::new(),
            capacity: Vec::new(),
        }
    }

    /// Adds or replaces an attribute; `name` is `domain/id` or an `id` of the driver's
    /// domain.
    #[must_use]
    pub fn with_attribute(mut self, name: &str, value: AttributeValue) -> Device {
        self.set_attribute(name, value);
        self
    }

    /// Adds or replaces a capacity; `name` as for [`Device::with_attribute`].
    ///
    /// Selectors see the capacity as a scheduler in a cluster does: after the API
    /// server re-emitted it in canonical form. That shows in `isInteger()`,
    /// `asInteger()` and `asApproximateFloat()`, which upstream answers from how the
    /// text was written: a capacity written `1.5Ki` is canonically `1536`, an integer,
    /// although `quantity("1.5Ki").isInteger()` is false.
    #[must_use]
    pub fn with_capacity(mut self, name: &str, value: Quantity) -> Device {
        self.set_capacity(name, value);
        self
    }

    /// Adds or replaces an attribute in place.
    pub fn set_attribute(&mut self, name: &str, value: AttributeValue) {
        let key = AttributeKey::qualified(name, &self.driver);
        match self.attributes.binary_search_by_key(&key, |e| e.0) {
            Ok(i) => self.attributes[i].1 = value,
            Err(i) => self.attributes.insert(i, (key, value)),
        }
    }

    /// Adds or replaces a capacity in place.
    pub fn set_capacity(&mut self, name: &str, value: Quantity) {
        let key = AttributeKey::qualified(name, &self.driver);
        match self.capacity.binary_search_by_key(&key, |e| e.0) {
            Ok(i) => self.capacity[i].1 = value,
            Err(i) => self.capacity.insert(i, (key, value)),
        }
    }

    /// Sets `device.allowMultipleAllocations` (resource.k8s.io/v1
    /// `Device.AllowMultipleAllocations`, consumable capacity); false by default.
    #[must_use]
    pub fn with_allow_multiple_allocations(mut self, allow: bool) -> Device {
        self.allow_multiple_allocations = allow;
        self
    }

    /// Whether the device may be allocated to several claims at once.
    pub fn allow_multiple_allocations(&self) -> bool {
        self.allow_multiple_allocations
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The driver.
    pub fn driver(&self) -> &str {
        &self.driver
    }

    /// The driver's domain symbol.
    pub fn driver_domain(&self) -> Symbol {
        self.driver_domain
    }

    /// All attributes, sorted by key.
    pub fn attributes(&self) -> &[(AttributeKey, AttributeValue)] {
        &self.attributes
    }

    /// All capacities, sorted by key.
    pub fn capacities(&self) -> &[(AttributeKey, Quantity)] {
        &self.capacity
    }

    /// The attribute under `key`.
    #[inline]
    pub fn attribute(&self, key: AttributeKey) -> Option<&AttributeValue> {
        self.attributes.iter().find(|e| e.0 == key).map(|e| &e.1)
    }

    /// The capacity under `key`.
    #[inline]
    pub fn capacity(&self, key: AttributeKey) -> Option<&Quantity> {
        self.capacity.iter().find(|e| e.0 == key).map(|e| &e.1)
    }

    /// Whether any attribute has this domain.
    pub fn has_attribute_domain(&self, domain: Symbol) -> bool {
        self.attributes.iter().any(|e| e.0.domain() == domain)
    }

    /// Whether any capacity has this domain.
    pub fn has_capacity_domain(&self, domain: Symbol) -> bool {
        self.capacity.iter().any(|e| e.0.domain() == domain)
    }
}
