//! Pod signatures for opportunistic batching (KEP-5598): the [`SignPlugin`] extension
//! point, the fragments plugins sign with, and the byte-comparable [`PodSignature`].
//!
//! Upstream: `k8s.io/kube-scheduler/framework` (`SignPlugin`, `SignFragment`,
//! `PodSignature`) and `pkg/scheduler/framework/signers.go` (the fragment keys and the
//! shared signers). A pod's signature says "every Filter and Score plugin of this
//! profile would treat these two pods the same on every node": when two consecutive
//! pods share one, the second may reuse the first one's scored node list.
//!
//! ## How a plugin signs
//!
//! A plugin at PreFilter, Filter, PreScore or Score implements [`SignPlugin`] and
//! registers it (`points.sign(self)`), adding one fragment per pod field its decisions
//! read, under the upstream key for that field (the `*_SIGNER` constants) or a key of
//! its own. A plugin whose answer depends on more than the pod and one node (other
//! pods' placement, a claim's allocation) returns `Unschedulable` for such pods: they
//! are then never batched. If any plugin enabled at those four points does not
//! implement `SignPlugin`, the profile never batches.
//!
//! ```
//! use std::sync::Arc;
//! use schedkit::framework::*;
//! use schedkit::snapshot::{NodeInfo, PodInfo};
//!
//! /// Rejects nodes without the label the pod's `team` label names.
//! struct TeamNodes;
//! impl Plugin for TeamNodes {
//!     fn name(&self) -> &str { "TeamNodes" }
//!     fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
//!         points.filter(self.clone()).sign(self);
//!     }
//! }
//! impl FilterPlugin for TeamNodes {
//!     fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
//!         match pod.pod.metadata.labels.get_str("team") {
//!             Some(t) if node.node().metadata.labels.get_str("team") == Some(t) => Status::SUCCESS,
//!             _ => Status::unschedulable("not this team's node"),
//!         }
//!     }
//! }
//! impl SignPlugin for TeamNodes {
//!     fn sign_pod(&self, pod: &PodInfo, fragments: &mut SignFragments) -> Status {
//!         let team = pod.pod.metadata.labels.get_str("team").unwrap_or("");
//!         fragments.add("example.com/team", |w| { w.str(team); });
//!         Status::SUCCESS
//!     }
//! }
//! let profile = Profile::builder("p").plugin(TeamNodes).build().unwrap();
//! assert!(profile.batching_blockers().is_empty());
//! ```

use std::sync::Arc;

use smallvec::SmallVec;

use super::interface::Plugin;
use super::{Profile, Status};
use crate::model::{NodeAffinity, NodeSelectorRequirement, NodeSelectorTerm, Resources, Symbol, Toleration};
use crate::snapshot::PodInfo;

/// Fragment key of DynamicResources (upstream `DynamicResourcesSignerName`).
pub const DYNAMIC_RESOURCES_SIGNER: &str = "v1.Pod.Spec.DynamicResources";
/// Fragment key of the container images (upstream `ImageNamesSignerName`).
pub const IMAGE_NAMES_SIGNER: &str = "v1.Pod.Spec.CanonicalImageNames()";
/// Fragment key of the pod's labels (upstream `LabelsSignerName`).
pub const LABELS_SIGNER: &str = "v1.Pod.Labels";
/// Fragment key of `spec.nodeName` (upstream `NodeNameSignerName`).
pub const NODE_NAME_SIGNER: &str = "v1.Pod.Spec.NodeName";
/// Fragment key of the node affinity (upstream `NodeAffinitySignerName`).
pub const NODE_AFFINITY_SIGNER: &str = "v1.Pod.Spec.Affinity.NodeAffinity";
/// Fragment key of `spec.nodeSelector` (upstream `NodeSelectorSignerName`).
pub const NODE_SELECTOR_SIGNER: &str = "v1.Pod.Spec.Affinity.NodeSelector";
/// Fragment key of the sorted unique host ports (upstream `HostPortsSignerName`).
pub const HOST_PORTS_SIGNER: &str = "v1.Pod.Spec.HostPorts()";
/// Fragment key of the computed requests (upstream `ResourcesSignerName`).
pub const RESOURCES_SIGNER: &str = "v1.Pod.Spec.ContainerRequestsAndOverheads()";
/// Fragment key of the scheduler name, always present (upstream `SchedulerNameSignerName`).
pub const SCHEDULER_NAME_SIGNER: &str = "v1.Pod.Spec.SchedulerName";
/// Fragment key of the sorted tolerations (upstream `TolerationsSignerName`).
pub const TOLERATIONS_SIGNER: &str = "v1.Pod.Spec.Tolerations";
/// Fragment key of the non-ConfigMap, non-Secret volumes (upstream `VolumesSignerName`).
pub const VOLUMES_SIGNER: &str = "v1.Pod.Spec.Volumes.NonSyntheticSources()";
/// Fragment key of the node features the pod needs (upstream `FeaturesSignerName`).
pub const FEATURES_SIGNER: &str = "v1.Pod.Spec.RequiredFeatures()";

/// A pod's signature under one profile: the profile's fragments, one per key, in
/// key order. Two pods with equal signatures are interchangeable for every Filter
/// and Score plugin of that profile. Comparable only within one process (symbols are
/// encoded by number), like upstream's, which need not survive a restart.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PodSignature(Arc<[u8]>);

impl PodSignature {
    /// The canonical bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Whether two signatures are equal (a pointer check first: a burst of one
    /// Deployment's pods often shares one).
    #[inline]
    pub fn same(&self, other: &PodSignature) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl std::fmt::Debug for PodSignature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PodSignature({} bytes)", self.0.len())
    }
}

/// Signs pods for opportunistic batching (upstream `SignPlugin`).
///
/// Add a fragment for every pod field your PreFilter, Filter, PreScore and Score read,
/// through [`SignFragments::add`]; return a non-success status (upstream uses
/// `Unschedulable`) when the pod cannot be batched, e.g. because the plugin's answer
/// depends on where other pods of the burst land. Signing never fails a cycle: an
/// unsigned pod is scheduled the ordinary way. Runs once per pod, when it enters the
/// queue; a panic makes the pod unsigned.
pub trait SignPlugin: Plugin {
    /// Adds this plugin's fragments for `pod`.
    fn sign_pod(&self, pod: &PodInfo, fragments: &mut SignFragments) -> Status;

    /// Signs `pod` for the members of one pod-group cycle, which share per-node Filter
    /// and Score results when they sign alike (schedkit's own; see the scheduler's
    /// group memo). The same contract as [`SignPlugin::sign_pod`]; a plugin that
    /// declines pods in general for a reason that cannot apply to this pod may sign it
    /// here. Default: [`SignPlugin::sign_pod`].
    fn sign_pod_in_group(&self, pod: &PodInfo, fragments: &mut SignFragments) -> Status {
        self.sign_pod(pod, fragments)
    }
}

/// The fragments of one pod's signature, collected from every [`SignPlugin`] of a
/// profile: one per key, the first one added wins (upstream ignores duplicates).
#[derive(Debug, Default)]
pub struct SignFragments {
    buf: Vec<u8>,
    entries: SmallVec<[(&'static str, u32, u32); 16]>,
    /// One bit per key added ([`key_bit`]): a key whose bit is clear was not added,
    /// which spares most adds the string comparisons with every earlier key.
    key_bits: u64,
    /// The keys of the previous [`SignFragments::finish`] in arrival order and the
    /// order that sorts them: a profile's plugins add the same keys in the same order
    /// for most pods, so the sort is usually skipped.
    last_keys: SmallVec<[&'static str; 16]>,
    last_order: SmallVec<[u8; 16]>,
    /// The encoded signature being built, reused across pods.
    out: Vec<u8>,
    /// The previous signature: a burst of equal pods shares one allocation, which also
    /// makes the batch's comparison a pointer check.
    last: Option<PodSignature>,
}

impl SignFragments {
    /// An empty set.
    pub fn new() -> SignFragments {
        SignFragments::default()
    }

    /// Adds the fragment `key`, its value written by `write`, unless a plugin already
    /// added `key` (then `write` is not called). Returns whether it was added.
    pub fn add(&mut self, key: &'static str, write: impl FnOnce(&mut FragmentWriter<'_>)) -> bool {
        if self.contains(key) {
            return false;
        }
        let start = self.buf.len();
        write(&mut FragmentWriter { buf: &mut self.buf });
        self.entries.push((key, start as u32, self.buf.len() as u32));
        self.key_bits |= key_bit(key);
        true
    }

    /// Whether `key` was added.
    pub fn contains(&self, key: &str) -> bool {
        self.key_bits & key_bit(key) != 0 && self.entries.iter().any(|e| std::ptr::eq(e.0, key) || e.0 == key)
    }

    /// The keys added so far, in the order they were added.
    pub fn keys(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.entries.iter().map(|e| e.0)
    }

    /// The encoded value of `key`, if added.
    pub fn value(&self, key: &str) -> Option<&[u8]> {
        self.entries.iter().find(|e| e.0 == key).map(|&(_, s, e)| &self.buf[s as usize..e as usize])
    }

    /// Forgets every fragment, keeping the buffers.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.entries.clear();
        self.key_bits = 0;
    }

    /// The signature: fragments in key order, each key and value length-prefixed.
    pub fn finish(&mut self) -> PodSignature {
        let same_keys = self.last_keys.len() == self.entries.len()
            && self.last_keys.iter().zip(&self.entries).all(|(k, e)| std::ptr::eq(*k, e.0));
        if !same_keys || self.entries.len() > usize::from(u8::MAX) {
            self.last_keys.clear();
            self.last_keys.extend(self.entries.iter().map(|e| e.0));
            self.last_order.clear();
            self.last_order.extend((0..self.entries.len()).map(|i| u8::try_from(i).unwrap_or(u8::MAX)));
            let entries = &self.entries;
            self.last_order.sort_unstable_by(|&a, &b| entries[usize::from(a)].0.cmp(entries[usize::from(b)].0));
            if self.entries.len() > usize::from(u8::MAX) {
                // Beyond the cached order's range: sort the entries themselves.
                self.last_keys.clear();
                self.entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                self.last_order.clear();
            }
        }
        self.out.clear();
        let mut write = |&(key, s, e): &(&'static str, u32, u32)| {
            self.out.extend_from_slice(&(key.len() as u32).to_le_bytes());
            self.out.extend_from_slice(key.as_bytes());
            self.out.extend_from_slice(&(e - s).to_le_bytes());
            self.out.extend_from_slice(&self.buf[s as usize..e as usize]);
        };
        if self.last_order.len() == self.entries.len() {
            for &i in &self.last_order {
                write(&self.entries[usize::from(i)]);
            }
        } else {
            self.entries.iter().for_each(&mut write);
        }
        if let Some(last) = &self.last
            && *last.0 == *self.out
        {
            return last.clone();
        }
        let sig = PodSignature(Arc::from(self.out.as_slice()));
        self.last = Some(sig.clone());
        sig
    }
}

/// A key's bit in [`SignFragments`]' filter: from its length and last two bytes,
/// which tell upstream's fragment keys (`v1.NodeAffinity`, `v1.Tolerations`, …) apart.
fn key_bit(key: &str) -> u64 {
    let b = key.as_bytes();
    let tail = b.len().checked_sub(2).map_or(0, |i| usize::from(b[i]) * 7 + usize::from(b[i + 1]));
    1 << ((b.len() * 13 + tail) % 64)
}

/// Writes one fragment's value in a canonical, self-delimiting binary form.
#[derive(Debug)]
pub struct FragmentWriter<'a> {
    buf: &'a mut Vec<u8>,
}

impl FragmentWriter<'_> {
    /// A byte.
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.buf.push(v);
        self
    }
    /// A boolean.
    pub fn bool(&mut self, v: bool) -> &mut Self {
        self.u8(u8::from(v))
    }
    /// A 32-bit integer.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// A signed 32-bit integer.
    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// A signed 64-bit integer.
    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// An optional integer (absent and `Some(0)` differ).
    pub fn opt_i64(&mut self, v: Option<i64>) -> &mut Self {
        match v {
            None => self.u8(0),
            Some(v) => self.u8(1).i64(v),
        }
    }
    /// An interned string, by its text: a label value's symbol number is reused once
    /// every holder of the value is gone, so a number kept in the batch state could
    /// later stand for another value. The text is read without pinning it.
    pub fn symbol(&mut self, s: Symbol) -> &mut Self {
        s.with_str(|t| {
            self.str(t);
        });
        self
    }
    /// A string, length-prefixed.
    pub fn str(&mut self, s: &str) -> &mut Self {
        self.u32(s.len() as u32);
        self.buf.extend_from_slice(s.as_bytes());
        self
    }

    /// A sequence written in canonical order: each item is encoded by `write`, then
    /// the encodings are sorted (and deduplicated when `unique`), so that two pods
    /// listing the same items in different orders sign alike. Written as a count and
    /// the length-prefixed items, in place: no allocation once the buffer has grown.
    pub fn sorted<T>(
        &mut self,
        items: impl IntoIterator<Item = T>,
        unique: bool,
        mut write: impl FnMut(&mut FragmentWriter<'_>, T),
    ) -> &mut Self {
        let start = self.buf.len();
        self.u32(0);
        // Each item's range, its length prefix included: sorting the prefixed bytes is
        // as canonical as sorting the bare ones, and equal items stay equal.
        let mut ranges: SmallVec<[(usize, usize); 8]> = SmallVec::new();
        for item in items {
            let at = self.buf.len();
            self.u32(0);
            write(&mut FragmentWriter { buf: self.buf }, item);
            let end = self.buf.len();
            self.patch_u32(at, end - at - 4);
            ranges.push((at, end));
        }
        let buf = &*self.buf;
        let item = |r: &(usize, usize)| &buf[r.0..r.1];
        let canonical = ranges.windows(2).all(|w| match item(&w[0]).cmp(item(&w[1])) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Equal => !unique,
            std::cmp::Ordering::Greater => false,
        });
        if !canonical {
            ranges.sort_unstable_by(|a, b| item(a).cmp(item(b)));
            if unique {
                ranges.dedup_by(|a, b| item(a) == item(b));
            }
            // Append the items in order, then move them over the unsorted ones.
            let tail = self.buf.len();
            for &(s, e) in &ranges {
                self.buf.extend_from_within(s..e);
            }
            self.buf.copy_within(tail.., start + 4);
            let len = self.buf.len() - tail;
            self.buf.truncate(start + 4 + len);
        }
        self.patch_u32(start, ranges.len());
        self
    }

    /// Overwrites the four bytes at `at` with `v`.
    fn patch_u32(&mut self, at: usize, v: usize) {
        self.buf[at..at + 4].copy_from_slice(&(v as u32).to_le_bytes());
    }

    /// Computed requests (upstream `computePodResourceRequest`): every native and
    /// scalar quantity, scalars in name order.
    pub fn resources(&mut self, r: &Resources) -> &mut Self {
        self.i64(r.milli_cpu).i64(r.memory).i64(r.ephemeral_storage).i64(r.allowed_pod_number);
        self.sorted(r.scalar.iter(), false, |w, &(name, v)| {
            w.symbol(name).i64(v);
        })
    }

    /// Tolerations in canonical order (upstream `TolerationsSigner` sorts by key and
    /// value; here every field takes part, so equal lists always sign alike).
    pub fn tolerations(&mut self, t: &[Toleration]) -> &mut Self {
        self.sorted(t.iter(), false, |w, t| {
            w.symbol(t.key).symbol(t.value).u8(t.operator as u8).u8(t.effect.map_or(0, |e| e as u8 + 1));
            w.opt_i64(t.toleration_seconds);
        })
    }

    /// A node affinity, canonicalised as upstream `NodeAffinitySigner`: values sorted
    /// within each requirement, requirements sorted within each term, and the
    /// required and preferred terms sorted.
    pub fn node_affinity(&mut self, a: &NodeAffinity) -> &mut Self {
        match &a.required {
            None => self.u8(0),
            Some(sel) => {
                self.u8(1);
                self.sorted(sel.node_selector_terms.iter(), false, |w, t| {
                    w.node_selector_term(t);
                })
            }
        };
        self.sorted(a.preferred.iter(), false, |w, p| {
            w.i32(p.weight).node_selector_term(&p.preference);
        })
    }

    /// One node selector term (upstream `NodeSelectorTermSigner`).
    pub fn node_selector_term(&mut self, t: &NodeSelectorTerm) -> &mut Self {
        self.sorted(t.match_expressions.iter(), false, |w, r| {
            w.requirement(r);
        });
        self.sorted(t.match_fields.iter(), false, |w, r| {
            w.requirement(r);
        })
    }

    fn requirement(&mut self, r: &NodeSelectorRequirement) -> &mut Self {
        self.symbol(r.key).u8(r.operator as u8);
        self.sorted(r.values.iter(), false, |w, &v| {
            w.symbol(v);
        })
    }
}

/// Signs `pod` with every [`SignPlugin`] of `profile`: `None` when the profile has a
/// plugin that cannot sign, or any plugin declines or panics (upstream
/// `frameworkImpl.SignPod`). The scheduler name always comes first.
pub(crate) fn sign_pod_with(profile: &Profile, pod: &PodInfo, fragments: &mut SignFragments) -> Option<PodSignature> {
    if !profile.batching_blockers.is_empty() {
        return None;
    }
    fragments.clear();
    let name = profile.name();
    fragments.add(SCHEDULER_NAME_SIGNER, |w| {
        w.str(name);
    });
    for p in &profile.sign {
        let s = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| p.plugin.sign_pod(pod, fragments)));
        if !s.is_ok_and(|s| s.is_success()) {
            return None;
        }
    }
    Some(fragments.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{NodeSelector, NodeSelectorOperator, PreferredSchedulingTerm, TolerationOperator};

    fn value(write: impl FnOnce(&mut FragmentWriter<'_>)) -> Vec<u8> {
        let mut f = SignFragments::new();
        f.add("k", write);
        f.value("k").unwrap().to_vec()
    }

    fn req(key: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement::new(key, NodeSelectorOperator::In, values)
    }

    /// Upstream signers.go: tolerations are sorted before signing, so order does not matter.
    #[test]
    fn tolerations_sign_in_any_order() {
        let t = |k: &str, v: &str| Toleration {
            key: Symbol::intern(k),
            operator: TolerationOperator::Equal,
            value: Symbol::intern(v),
            effect: None,
            toleration_seconds: None,
        };
        let a = value(|w| {
            w.tolerations(&[t("a", "1"), t("b", "2")]);
        });
        let b = value(|w| {
            w.tolerations(&[t("b", "2"), t("a", "1")]);
        });
        let c = value(|w| {
            w.tolerations(&[t("b", "2"), t("a", "2")]);
        });
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    /// Upstream `NodeSelectorRequirementsSigner`/`NodeSelectorTermsSigner`: values,
    /// requirements and terms are sorted; different contents differ.
    #[test]
    #[expect(clippy::many_single_char_names, reason = "four affinities compared pairwise")]
    fn node_affinity_is_canonical() {
        let term =
            |reqs: Vec<NodeSelectorRequirement>| NodeSelectorTerm { match_expressions: reqs, match_fields: vec![] };
        let aff = |terms: Vec<NodeSelectorTerm>, pref: Vec<PreferredSchedulingTerm>| NodeAffinity {
            required: Some(NodeSelector { node_selector_terms: terms }),
            preferred: pref,
        };
        let a = aff(
            vec![term(vec![req("zone", &["b", "a"]), req("arch", &["x"])]), term(vec![req("gpu", &["t4"])])],
            vec![PreferredSchedulingTerm { weight: 3, preference: term(vec![req("disk", &["ssd", "hdd"])]) }],
        );
        let b = aff(
            vec![term(vec![req("gpu", &["t4"])]), term(vec![req("arch", &["x"]), req("zone", &["a", "b"])])],
            vec![PreferredSchedulingTerm { weight: 3, preference: term(vec![req("disk", &["hdd", "ssd"])]) }],
        );
        let c = aff(
            vec![term(vec![req("gpu", &["t4"])]), term(vec![req("arch", &["x"]), req("zone", &["a", "c"])])],
            vec![PreferredSchedulingTerm { weight: 3, preference: term(vec![req("disk", &["hdd", "ssd"])]) }],
        );
        let d = aff(
            vec![term(vec![req("gpu", &["t4"])]), term(vec![req("arch", &["x"]), req("zone", &["a", "b"])])],
            vec![PreferredSchedulingTerm { weight: 4, preference: term(vec![req("disk", &["hdd", "ssd"])]) }],
        );
        let v = |a: &NodeAffinity| {
            value(|w| {
                w.node_affinity(a);
            })
        };
        assert_eq!(v(&a), v(&b));
        assert_ne!(v(&b), v(&c), "a different value");
        assert_ne!(v(&b), v(&d), "a different weight");
        let none = NodeAffinity { required: None, preferred: vec![] };
        let empty = NodeAffinity { required: Some(NodeSelector { node_selector_terms: vec![] }), preferred: vec![] };
        assert_ne!(v(&none), v(&empty));
    }

    /// One fragment per key: the first added wins and later writers are not called.
    #[test]
    fn duplicate_keys_are_ignored() {
        let mut f = SignFragments::new();
        assert!(f.add("k", |w| {
            w.u8(1);
        }));
        assert!(!f.add("k", |_| panic!("not called")));
        assert_eq!(f.value("k"), Some(&[1u8][..]));
    }

    /// Fragments sign in key order whatever order plugins added them in.
    #[test]
    fn signature_is_in_key_order() {
        let mut a = SignFragments::new();
        a.add("b", |w| {
            w.u8(2);
        });
        a.add("a", |w| {
            w.u8(1);
        });
        let mut b = SignFragments::new();
        b.add("a", |w| {
            w.u8(1);
        });
        b.add("b", |w| {
            w.u8(2);
        });
        assert_eq!(a.finish(), b.finish());
    }

    proptest::proptest! {
        /// Sorting is canonical: any permutation of the items signs alike, and
        /// `unique` drops repeats.
        #[test]
        fn sorted_is_permutation_invariant(mut v in proptest::collection::vec(0u32..20, 0..12), seed in 0u64..1000) {
            let a = value(|w| { w.sorted(v.iter(), true, |w, &x| { w.u32(x); }); });
            let mut rng = crate::rng::SplitMix64(seed);
            for i in (1..v.len()).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                v.swap(i, j);
            }
            let b = value(|w| { w.sorted(v.iter(), true, |w, &x| { w.u32(x); }); });
            proptest::prop_assert_eq!(&a, &b);
            v.sort_unstable();
            v.dedup();
            let c = value(|w| { w.sorted(v.iter(), false, |w, &x| { w.u32(x); }); });
            proptest::prop_assert_eq!(a, c);
        }
    }
}
