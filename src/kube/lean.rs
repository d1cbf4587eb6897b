//! Lean decoding of watched Pods and Nodes: the API server's JSON goes straight into
//! k8s-openapi's types, but every field the conversion ([`crate::k8s`]) only tests for
//! presence is skipped in the text and stood in for by an empty value, and metadata it
//! never reads is dropped.
//!
//! Why this is exact: for a pruned field, both conversion paths (the direct one and the
//! manifest loader) read only whether it is present, and its relevance rule does not
//! look at its value (`manifest::relevance`; `spec.volumes`, whose rule does, is not
//! pruned). A pruned field that is `null` stays absent, as k8s-openapi decodes it. So
//! the converted object and its ignored fields are those of the full decode; the test
//! `lean_decode_converts_as_the_full_decode` checks it on real manifests. The one
//! difference: the shape of a pruned value is not checked (a wrong type there is not
//! an error), and no API server sends one.

use std::marker::PhantomData;

use k8s_openapi::api::core::v1 as core;
use serde::de::value::{BorrowedStrDeserializer, StringDeserializer, UnitDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// What to do with the keys of one object level.
pub(crate) struct Level {
    /// When set, only these keys are decoded; the others are dropped.
    keep: Option<&'static [&'static str]>,
    /// Keys decoded as an empty value of their type (present, contents skipped).
    empty: &'static [&'static str],
    /// Keys whose value (an object, or a list of objects) is pruned by its own level.
    nested: &'static [(&'static str, &'static Level)],
}

/// The metadata [`crate::k8s`] reads (name, namespace, uid, labels, annotations,
/// timestamps) and `resourceVersion`, which the watcher resumes from.
const META: Level = Level {
    keep: Some(&[
        "name",
        "namespace",
        "uid",
        "labels",
        "annotations",
        "creationTimestamp",
        "deletionTimestamp",
        "resourceVersion",
    ]),
    empty: &[],
    nested: &[],
};

/// `fast::container`'s presence-only fields.
const CONTAINER: Level = Level {
    keep: None,
    empty: &[
        "args",
        "command",
        "env",
        "envFrom",
        "imagePullPolicy",
        "lifecycle",
        "livenessProbe",
        "readinessProbe",
        "resizePolicy",
        "restartPolicyRules",
        "securityContext",
        "startupProbe",
        "stdin",
        "stdinOnce",
        "terminationMessagePath",
        "terminationMessagePolicy",
        "tty",
        "volumeDevices",
        "volumeMounts",
        "workingDir",
    ],
    nested: &[],
};

/// `fast::pod_spec`'s presence-only fields (not `hostNetwork`, whose value defaults
/// host ports, nor `volumes`, whose relevance depends on the sources).
const POD_SPEC: Level = Level {
    keep: None,
    empty: &[
        "activeDeadlineSeconds",
        "automountServiceAccountToken",
        "dnsConfig",
        "dnsPolicy",
        "enableServiceLinks",
        "ephemeralContainers",
        "hostAliases",
        "hostIPC",
        "hostPID",
        "hostUsers",
        "hostname",
        "hostnameOverride",
        "imagePullSecrets",
        "os",
        "priorityClassName",
        "readinessGates",
        "restartPolicy",
        "runtimeClassName",
        "securityContext",
        "serviceAccount",
        "serviceAccountName",
        "setHostnameAsFQDN",
        "shareProcessNamespace",
        "subdomain",
        "terminationGracePeriodSeconds",
    ],
    nested: &[("containers", &CONTAINER), ("initContainers", &CONTAINER)],
};

/// `fast::pod_status`'s presence-only fields: all but phase, nomination, start time.
const POD_STATUS: Level = Level {
    keep: None,
    empty: &[
        "allocatedResources",
        "conditions",
        "containerStatuses",
        "ephemeralContainerStatuses",
        "extendedResourceClaimStatus",
        "hostIP",
        "hostIPs",
        "initContainerStatuses",
        "message",
        "nodeAllocatableResourceClaimStatuses",
        "observedGeneration",
        "podIP",
        "podIPs",
        "qosClass",
        "reason",
        "resize",
        "resourceClaimStatuses",
        "resources",
    ],
    nested: &[],
};

const POD: Level =
    Level { keep: None, empty: &[], nested: &[("metadata", &META), ("spec", &POD_SPEC), ("status", &POD_STATUS)] };

/// `fast::node`'s presence-only spec fields.
const NODE_SPEC: Level =
    Level { keep: None, empty: &["configSource", "externalID", "podCIDR", "podCIDRs", "providerID"], nested: &[] };

/// `fast::node_status`'s presence-only fields: all but capacity, allocatable, images.
const NODE_STATUS: Level = Level {
    keep: None,
    empty: &[
        "addresses",
        "conditions",
        "config",
        "daemonEndpoints",
        "declaredFeatures",
        "features",
        "nodeInfo",
        "phase",
        "runtimeHandlers",
        "volumesAttached",
        "volumesInUse",
    ],
    nested: &[],
};

const NODE: Level =
    Level { keep: None, empty: &[], nested: &[("metadata", &META), ("spec", &NODE_SPEC), ("status", &NODE_STATUS)] };

/// A k8s-openapi kind with a pruning table.
pub(crate) trait Prune {
    /// The top level's table.
    const LEVEL: &'static Level;
}

impl Prune for core::Pod {
    const LEVEL: &'static Level = &POD;
}

impl Prune for core::Node {
    const LEVEL: &'static Level = &NODE;
}

/// A k8s-openapi object decoded leanly (see the module docs): how the watches decode a
/// Pod or Node that the direct decoding ([`super::direct`]) hands over.
#[derive(Debug, Clone)]
pub(crate) struct Lean<K>(pub(crate) K);

impl<'de, K: de::Deserialize<'de> + Prune> de::Deserialize<'de> for Lean<K> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        K::deserialize(Pruned { de, level: K::LEVEL }).map(Lean)
    }
}

impl<K: k8s_openapi::Resource> k8s_openapi::Resource for Lean<K> {
    const API_VERSION: &'static str = K::API_VERSION;
    const GROUP: &'static str = K::GROUP;
    const KIND: &'static str = K::KIND;
    const VERSION: &'static str = K::VERSION;
    const URL_PATH_SEGMENT: &'static str = K::URL_PATH_SEGMENT;
    type Scope = K::Scope;
}

impl<K: k8s_openapi::Metadata> k8s_openapi::Metadata for Lean<K> {
    type Ty = K::Ty;
    fn metadata(&self) -> &Self::Ty {
        self.0.metadata()
    }
    fn metadata_mut(&mut self) -> &mut Self::Ty {
        self.0.metadata_mut()
    }
}

/// A deserializer whose maps (at `level`) are pruned.
struct Pruned<D> {
    de: D,
    level: &'static Level,
}

struct PrunedVisitor<V> {
    v: V,
    level: &'static Level,
}

struct PrunedSeed<S> {
    seed: S,
    level: &'static Level,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for PrunedSeed<S> {
    type Value = S::Value;
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<S::Value, D::Error> {
        self.seed.deserialize(Pruned { de, level: self.level })
    }
}

macro_rules! forward_deserialize {
    ($($method:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {
        $(fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* v: V) -> Result<V::Value, D::Error> {
            self.de.$method($($arg,)* PrunedVisitor { v, level: self.level })
        })*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Pruned<D> {
    type Error = D::Error;
    forward_deserialize!(
        deserialize_any(),
        deserialize_bool(),
        deserialize_i8(),
        deserialize_i16(),
        deserialize_i32(),
        deserialize_i64(),
        deserialize_i128(),
        deserialize_u8(),
        deserialize_u16(),
        deserialize_u32(),
        deserialize_u64(),
        deserialize_u128(),
        deserialize_f32(),
        deserialize_f64(),
        deserialize_char(),
        deserialize_str(),
        deserialize_string(),
        deserialize_bytes(),
        deserialize_byte_buf(),
        deserialize_option(),
        deserialize_unit(),
        deserialize_unit_struct(name: &'static str),
        deserialize_newtype_struct(name: &'static str),
        deserialize_seq(),
        deserialize_tuple(len: usize),
        deserialize_tuple_struct(name: &'static str, len: usize),
        deserialize_map(),
        deserialize_struct(name: &'static str, fields: &'static [&'static str]),
        deserialize_enum(name: &'static str, variants: &'static [&'static str]),
        deserialize_identifier(),
        deserialize_ignored_any(),
    );
    fn is_human_readable(&self) -> bool {
        self.de.is_human_readable()
    }
}

macro_rules! forward_visit {
    ($($method:ident($ty:ty)),* $(,)?) => {
        $(fn $method<E: de::Error>(self, x: $ty) -> Result<V::Value, E> {
            self.v.$method(x)
        })*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for PrunedVisitor<V> {
    type Value = V::Value;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.v.expecting(f)
    }
    forward_visit!(
        visit_bool(bool),
        visit_i8(i8),
        visit_i16(i16),
        visit_i32(i32),
        visit_i64(i64),
        visit_i128(i128),
        visit_u8(u8),
        visit_u16(u16),
        visit_u32(u32),
        visit_u64(u64),
        visit_u128(u128),
        visit_f32(f32),
        visit_f64(f64),
        visit_char(char),
        visit_str(&str),
        visit_borrowed_str(&'de str),
        visit_string(String),
        visit_bytes(&[u8]),
        visit_borrowed_bytes(&'de [u8]),
        visit_byte_buf(Vec<u8>),
    );
    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.v.visit_none()
    }
    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.v.visit_unit()
    }
    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<V::Value, D::Error> {
        self.v.visit_some(Pruned { de, level: self.level })
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, de: D) -> Result<V::Value, D::Error> {
        self.v.visit_newtype_struct(Pruned { de, level: self.level })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.v.visit_seq(PrunedSeq { seq, level: self.level })
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.v.visit_map(PrunedMap { map, level: self.level, value: Next::Plain })
    }
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.v.visit_enum(data)
    }
}

/// A list whose items are pruned at the list's level.
struct PrunedSeq<A> {
    seq: A,
    level: &'static Level,
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for PrunedSeq<A> {
    type Error = A::Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, A::Error> {
        self.seq.next_element_seed(PrunedSeed { seed, level: self.level })
    }
    fn size_hint(&self) -> Option<usize> {
        self.seq.size_hint()
    }
}

/// How the value of the key just handed out is decoded.
#[derive(Clone, Copy)]
enum Next {
    Plain,
    Nested(&'static Level),
    Empty,
}

struct PrunedMap<A> {
    map: A,
    level: &'static Level,
    value: Next,
}

/// A map key, borrowed from the text when it has no escapes.
enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a field name")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(s))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key::Owned(s.to_owned()))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Key<'de>, E> {
                Ok(Key::Owned(s))
            }
        }
        de.deserialize_str(KeyVisitor)
    }
}

/// Skips a value, saying whether it was `null` (a pruned `null` field stays absent).
struct NullCheck;

impl<'de> Visitor<'de> for NullCheck {
    type Value = bool;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(true)
    }
    fn visit_none<E: de::Error>(self) -> Result<bool, E> {
        Ok(true)
    }
    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<bool, D::Error> {
        de.deserialize_ignored_any(IgnoredAny).map(|_| false)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<bool, A::Error> {
        IgnoredAny.visit_enum(data).map(|_| false)
    }
}

/// [`NullCheck`] as a seed.
struct IsNull;

impl<'de> DeserializeSeed<'de> for IsNull {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<bool, D::Error> {
        de.deserialize_any(NullCheck)
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for PrunedMap<A> {
    type Error = A::Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(key) = self.map.next_key::<Key<'de>>()? else { return Ok(None) };
            let name = match &key {
                Key::Borrowed(s) => *s,
                Key::Owned(s) => s.as_str(),
            };
            if let Some(keep) = self.level.keep
                && !keep.contains(&name)
            {
                self.map.next_value::<IgnoredAny>()?;
                continue;
            }
            self.value = if self.level.empty.contains(&name) {
                Next::Empty
            } else if let Some((_, level)) = self.level.nested.iter().find(|(n, _)| *n == name) {
                Next::Nested(level)
            } else {
                Next::Plain
            };
            return match key {
                Key::Borrowed(s) => seed.deserialize(BorrowedStrDeserializer::new(s)),
                Key::Owned(s) => seed.deserialize(StringDeserializer::new(s)),
            }
            .map(Some);
        }
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        match std::mem::replace(&mut self.value, Next::Plain) {
            Next::Plain => self.map.next_value_seed(seed),
            Next::Nested(level) => self.map.next_value_seed(PrunedSeed { seed, level }),
            Next::Empty => {
                if self.map.next_value_seed(IsNull)? {
                    seed.deserialize(UnitDeserializer::new())
                } else {
                    seed.deserialize(Empty(PhantomData))
                }
            }
        }
    }
    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// The empty value of whatever type asks: `""`, `0`, `false`, an empty list or object.
struct Empty<E>(PhantomData<E>);

impl<'de, E: de::Error> Deserializer<'de> for Empty<E> {
    type Error = E;
    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, E> {
        v.visit_unit()
    }
    fn deserialize_bool<V: Visitor<'de>>(self, v: V) -> Result<V::Value, E> {
        v.visit_bool(false)
    }
    fn deserialize_i64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, E> {
        v.visit_i64(0)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, E> {
        v.visit_i64(0)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, E> {
        v.visit_u64(0)
    }
    fn deserialize_f64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, E> {
        v.visit_f64(0.0)
    }
    fn deserialize_str<V: Visitor<'de>>(self, v: V) -> Result<V::Value, E> {
        v.visit_borrowed_str("")
    }
    fn deserialize_string<V: Visitor<'de>>(self, v: V) -> Result<V::Value, E> {
        v.visit_borrowed_str("")
    }
    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, E> {
        v.visit_some(self)
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _name: &'static str, v: V) -> Result<V::Value, E> {
        v.visit_newtype_struct(self)
    }
    fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Result<V::Value, E> {
        v.visit_seq(self)
    }
    fn deserialize_map<V: Visitor<'de>>(self, v: V) -> Result<V::Value, E> {
        v.visit_map(self)
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, E> {
        v.visit_map(self)
    }
    serde::forward_to_deserialize_any! {
        i8 i16 i128 u8 u16 u32 u128 f32 char bytes byte_buf unit unit_struct tuple tuple_struct enum
        identifier ignored_any
    }
}

impl<'de, E: de::Error> SeqAccess<'de> for Empty<E> {
    type Error = E;
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, _seed: T) -> Result<Option<T::Value>, E> {
        Ok(None)
    }
    fn size_hint(&self) -> Option<usize> {
        Some(0)
    }
}

impl<'de, E: de::Error> MapAccess<'de> for Empty<E> {
    type Error = E;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, _seed: K) -> Result<Option<K::Value>, E> {
        Ok(None)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, _seed: V) -> Result<V::Value, E> {
        Err(E::custom("no value in an empty object"))
    }
    fn size_hint(&self) -> Option<usize> {
        Some(0)
    }
}
