//! The direct k8s-openapi → schedkit conversion of Pods and Nodes: field by field, with
//! the manifest loader's defaulting ([`crate::manifest::defaults`]) and relevance rules
//! (`manifest::relevance`), and no detour through `serde_json::Value`.
//!
//! It gives exactly what [`super::from_k8s_via_manifest`] gives — the same object, the
//! same ignored fields in the same order, the same strict refusal — and says so by
//! returning `None` for anything it does not decide itself, so the manifest path then
//! answers: a value the manifest path would refuse (a bad quantity, an unknown enum
//! spelling, an invalid selector, a timestamp outside years 1–9999), so errors are
//! always that path's; a v1.35 pod's `spec.workloadRef` (whose conversion depends on
//! feature gates); a volume source the relevance table names that this file does not
//! know; and every k8s-openapi version newer than the ones whose fields were checked
//! (v1.34–v1.36).
//!
//! The order of ignored fields is the manifest path's: keys in byte order at each level
//! (`serde_json`'s map without `preserve_order`), list items in order.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector as K8sSelector, ObjectMeta as K8sMeta, Time};
use serde::de::DeserializeOwned;
use serde::de::value::{Error as PlainError, StrDeserializer};
use serde_json::Value;

use crate::framework::Feature;
use crate::manifest::relevance;
use crate::manifest::{IgnoredField, LoadOptions, Loaded, ManifestError, defaults};
use crate::model::{
    Affinity, Container, ContainerImage, ContainerPort, LabelSelector, LabelSelectorRequirement, Labels, Node,
    NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, NodeSpec, NodeStatus, ObjectMeta, Pod,
    PodAffinity, PodAffinityTerm, PodResourceClaim, PodSchedulingGroup, PodSpec, PodStatus, PreferredSchedulingTerm,
    Quantity, ResourceList, ResourceRequirements, SchedulingGate, Symbol, Taint, Toleration, TopologySpreadConstraint,
    WeightedPodAffinityTerm,
};

/// The fields not read, as the manifest path collects them.
struct Unread {
    /// Keep every field (`from_k8s`); otherwise only those that affect scheduling
    /// (enough for `TryFrom`, which only reports a refusal).
    report_all: bool,
    fields: Vec<IgnoredField>,
}

impl Unread {
    fn push(&mut self, affects_scheduling: bool, path: impl FnOnce() -> String) {
        if self.report_all || affects_scheduling {
            self.fields.push(IgnoredField { path: path(), affects_scheduling });
        }
    }

    /// The manifest path's end: a strict load refuses affecting fields, naming them.
    fn finish<T>(
        self,
        kind: &'static str,
        meta: &K8sMeta,
        opts: LoadOptions,
        object: T,
    ) -> Result<Loaded<T>, ManifestError> {
        if opts.strict && self.fields.iter().any(|f| f.affects_scheduling) {
            let name = meta.name.as_deref().unwrap_or("");
            let name = match meta.namespace.as_deref() {
                Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
                _ => name.to_owned(),
            };
            let paths = self.fields.into_iter().filter(|f| f.affects_scheduling).map(|f| f.path).collect();
            return Err(ManifestError::Unmodeled { kind, name, paths });
        }
        Ok(Loaded { object, api_version: "v1".to_owned(), ignored: self.fields })
    }
}

/// An unread field at a fixed path: its relevance (from the manifest rule `$rule`) is
/// computed once.
macro_rules! unread {
    ($u:expr, $rule:path, $present:expr, $path:literal) => {
        if $present {
            static AFFECTS: OnceLock<bool> = OnceLock::new();
            let affects = *AFFECTS.get_or_init(|| $rule($path, &Value::Null));
            $u.push(affects, || $path.to_owned());
        }
    };
}

/// An unread field of a container or init container (`$init`): `$rel` is its path
/// below the container (`ports[].name`), for the relevance rule; the reported path is
/// `$prefix.$field` (`spec.containers[2]` + `command`).
macro_rules! unread_in_container {
    ($u:expr, $init:expr, $present:expr, $prefix:expr, $field:literal) => {
        unread_in_container!($u, $init, $present, $field, $prefix.path($field))
    };
    ($u:expr, $init:expr, $present:expr, $rel:literal, $path:expr) => {
        if $present {
            static CONTAINER: OnceLock<bool> = OnceLock::new();
            static INIT: OnceLock<bool> = OnceLock::new();
            let affects = if $init {
                *INIT.get_or_init(|| relevance::pod(concat!("spec.initContainers[].", $rel), &Value::Null))
            } else {
                *CONTAINER.get_or_init(|| relevance::pod(concat!("spec.containers[].", $rel), &Value::Null))
            };
            $u.push(affects, || $path);
        }
    };
}

/// An enum from its Kubernetes spelling through the model's own serde names; `None`
/// for a spelling the model does not know.
pub(crate) fn spelled<T: DeserializeOwned>(text: &str) -> Option<T> {
    T::deserialize(StrDeserializer::<PlainError>::new(text)).ok()
}

#[expect(clippy::option_option, reason = "outer None hands over to the manifest path; inner None: no field")]
fn opt_spelled<T: DeserializeOwned>(text: Option<&String>) -> Option<Option<T>> {
    match text {
        None => Some(None),
        Some(t) => spelled(t).map(Some),
    }
}

/// The items of an optional list; none when it is absent.
pub(crate) fn items<T>(list: Option<&Vec<T>>) -> &[T] {
    list.map_or(&[], Vec::as_slice)
}

/// Every item converted, or `None` at the first that is not, in a vector exactly as
/// long as the list. Collecting into `Option<Vec<_>>` cannot know the length, so it
/// starts with room for four, and the model keeps that room as long as the object
/// lives: a pod's one 512-byte container kept 2 KB, half of what a queued pod holds.
pub(crate) fn each<T, U>(items: impl ExactSizeIterator<Item = T>, mut f: impl FnMut(T) -> Option<U>) -> Option<Vec<U>> {
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        out.push(f(item)?);
    }
    Some(out)
}

fn text(s: Option<&String>) -> String {
    s.cloned().unwrap_or_default()
}

fn symbol(s: Option<&String>) -> Symbol {
    Symbol::intern(s.map_or("", String::as_str))
}

/// Seconds since the epoch as the manifest path reads k8s-openapi's text (whole
/// seconds, the fraction cut as `%S` cuts it); `None` outside years 1–9999, whose text
/// the manifest path may read differently.
pub(crate) fn seconds(t: &Time) -> Option<f64> {
    const MIN: i64 = -62_135_596_800; // 0001-01-01T00:00:00Z
    const MAX: i64 = 253_402_300_799; // 9999-12-31T23:59:59Z
    let mut secs = t.0.as_second();
    if t.0.subsec_nanosecond() < 0 {
        secs -= 1;
    }
    (MIN..=MAX).contains(&secs).then_some(secs as f64)
}

#[expect(clippy::option_option, reason = "outer None hands over to the manifest path; inner None: no field")]
pub(crate) fn opt_seconds(t: Option<&Time>) -> Option<Option<f64>> {
    match t {
        None => Some(None),
        Some(t) => seconds(t).map(Some),
    }
}

fn meta(m: &K8sMeta) -> Option<ObjectMeta> {
    Some(ObjectMeta {
        name: text(m.name.as_ref()),
        namespace: text(m.namespace.as_ref()),
        uid: text(m.uid.as_ref()),
        labels: m.labels.as_ref().map(|l| Labels::from_pairs(l.iter())).unwrap_or_default(),
        annotations: m.annotations.clone().unwrap_or_default(),
        creation_timestamp: opt_seconds(m.creation_timestamp.as_ref())?,
        deletion_timestamp: opt_seconds(m.deletion_timestamp.as_ref())?,
    })
}

/// A resource map, in key order as the manifest path decodes it.
fn quantities(m: Option<&BTreeMap<String, K8sQuantity>>) -> Option<ResourceList> {
    let mut list = ResourceList::new();
    for (name, q) in m.into_iter().flatten() {
        list.set(Symbol::intern(name), Quantity::parse(&q.0).ok()?);
    }
    Some(list)
}

/// `requests` with every limit the requests lack (`SetDefaults_Pod`'s copy, as
/// `defaults::pod_before_decode` does it on the text), in key order.
fn requests_defaulted(
    requests: Option<&BTreeMap<String, K8sQuantity>>,
    limits: &BTreeMap<String, K8sQuantity>,
) -> Option<ResourceList> {
    let mut list = ResourceList::new();
    let mut req = requests.into_iter().flatten().peekable();
    let mut lim = limits.iter().peekable();
    loop {
        let (name, q) = match (req.peek(), lim.peek()) {
            (None, None) => break,
            (Some(r), Some(l)) if l.0 < r.0 => lim.next()?,
            (Some(r), Some(l)) if l.0 == r.0 => {
                lim.next();
                req.next()?
            }
            (Some(_), _) => req.next()?,
            (None, Some(_)) => lim.next()?,
        };
        list.set(Symbol::intern(name), Quantity::parse(&q.0).ok()?);
    }
    Some(list)
}

fn label_selector(s: &K8sSelector) -> Option<LabelSelector> {
    let exprs = each(items(s.match_expressions.as_ref()).iter(), |r| {
        Some(LabelSelectorRequirement {
            key: Symbol::intern(&r.key),
            operator: spelled(&r.operator)?,
            values: items(r.values.as_ref()).iter().map(|v| Symbol::intern(v)).collect(),
        })
    })?;
    let labels = s.match_labels.as_ref().map(|l| Labels::from_pairs(l.iter())).unwrap_or_default();
    LabelSelector::new(labels, exprs).ok()
}

fn node_term(t: &core::NodeSelectorTerm) -> Option<NodeSelectorTerm> {
    let reqs = |rs: Option<&Vec<core::NodeSelectorRequirement>>| {
        each(items(rs).iter(), |r| {
            let values: Vec<&str> = r.values.iter().flatten().map(String::as_str).collect();
            Some(NodeSelectorRequirement::new(&r.key, spelled(&r.operator)?, &values))
        })
    };
    let mut term = NodeSelectorTerm {
        match_expressions: reqs(t.match_expressions.as_ref())?,
        match_fields: reqs(t.match_fields.as_ref())?,
    };
    term.validate_lazily(&|| "term".to_owned()).ok()?;
    Some(term)
}

fn pod_affinity_term(t: &core::PodAffinityTerm) -> Option<PodAffinityTerm> {
    let symbols = |v: Option<&Vec<String>>| items(v).iter().map(|s| Symbol::intern(s)).collect();
    Some(PodAffinityTerm {
        label_selector: t.label_selector.as_ref().map(label_selector).map_or(Some(None), |s| s.map(Some))?,
        namespaces: symbols(t.namespaces.as_ref()),
        topology_key: Symbol::intern(&t.topology_key),
        namespace_selector: t.namespace_selector.as_ref().map(label_selector).map_or(Some(None), |s| s.map(Some))?,
        match_label_keys: symbols(t.match_label_keys.as_ref()),
        mismatch_label_keys: symbols(t.mismatch_label_keys.as_ref()),
    })
}

fn pod_affinity(a: &core::PodAffinity) -> Option<PodAffinity> {
    pod_affinity_parts(
        a.required_during_scheduling_ignored_during_execution.as_ref(),
        a.preferred_during_scheduling_ignored_during_execution.as_ref(),
    )
}

fn pod_anti_affinity(a: &core::PodAntiAffinity) -> Option<PodAffinity> {
    pod_affinity_parts(
        a.required_during_scheduling_ignored_during_execution.as_ref(),
        a.preferred_during_scheduling_ignored_during_execution.as_ref(),
    )
}

fn pod_affinity_parts(
    required: Option<&Vec<core::PodAffinityTerm>>,
    preferred: Option<&Vec<core::WeightedPodAffinityTerm>>,
) -> Option<PodAffinity> {
    Some(PodAffinity {
        required: each(items(required).iter(), pod_affinity_term)?,
        preferred: each(items(preferred).iter(), |w| {
            Some(WeightedPodAffinityTerm {
                weight: w.weight,
                pod_affinity_term: pod_affinity_term(&w.pod_affinity_term)?,
            })
        })?,
    })
}

pub(crate) fn affinity(a: &core::Affinity) -> Option<Affinity> {
    let node_affinity = match &a.node_affinity {
        None => None,
        Some(na) => Some(NodeAffinity {
            required: match &na.required_during_scheduling_ignored_during_execution {
                None => None,
                Some(sel) => Some(NodeSelector::new(each(sel.node_selector_terms.iter(), node_term)?).ok()?),
            },
            preferred: each(items(na.preferred_during_scheduling_ignored_during_execution.as_ref()).iter(), |p| {
                Some(PreferredSchedulingTerm { weight: p.weight, preference: node_term(&p.preference)? })
            })?,
        }),
    };
    Some(Affinity {
        node_affinity,
        pod_affinity: a.pod_affinity.as_ref().map(pod_affinity).map_or(Some(None), |p| p.map(Some))?,
        pod_anti_affinity: a.pod_anti_affinity.as_ref().map(pod_anti_affinity).map_or(Some(None), |p| p.map(Some))?,
    })
}

/// A container's resources with requests defaulted from limits; `claims` unread.
fn resources(r: &core::ResourceRequirements) -> Option<ResourceRequirements> {
    let requests = match &r.limits {
        Some(limits) => requests_defaulted(r.requests.as_ref(), limits)?,
        None => quantities(r.requests.as_ref())?,
    };
    Some(ResourceRequirements { requests, limits: quantities(r.limits.as_ref())? })
}

/// A container's path (`spec.containers[2]`), written only when a field is reported.
struct At(&'static str, usize);

impl At {
    /// The path of the container's field `rest` (`spec.containers[2].command`).
    ///
    /// Written piece by piece: `from_k8s` reports a dozen such paths for a typical
    /// Deployment pod, and through `format!` they were 40% of its conversion.
    fn path(&self, rest: &str) -> String {
        let mut path = indexed(self.0, self.1, ".");
        path.push_str(rest);
        path
    }
}

/// `{head}[{i}]{tail}`.
fn indexed(head: &str, i: usize, tail: &str) -> String {
    let mut path = String::with_capacity(head.len() + tail.len() + 24);
    path.push_str(head);
    push_index(&mut path, i);
    path.push_str(tail);
    path
}

/// Appends `[i]`.
fn push_index(path: &mut String, i: usize) {
    fn digits(path: &mut String, i: usize) {
        if i >= 10 {
            digits(path, i / 10);
        }
        path.push(char::from(b"0123456789"[i % 10]));
    }
    path.push('[');
    digits(path, i);
    path.push(']');
}

/// A port's host port: with `hostNetwork`, an unset one is the container port
/// (defaultHostNetworkPorts, as `defaults::pod_before_decode` applies it).
pub(crate) fn host_port(container_port: i32, host_port: Option<i32>, host_network: bool) -> i32 {
    match host_port.unwrap_or(0) {
        0 if host_network => container_port,
        port => port,
    }
}

fn container(c: &core::Container, prefix: &At, init: bool, host_network: bool, u: &mut Unread) -> Option<Container> {
    unread_in_container!(u, init, c.args.is_some(), prefix, "args");
    unread_in_container!(u, init, c.command.is_some(), prefix, "command");
    unread_in_container!(u, init, c.env.is_some(), prefix, "env");
    unread_in_container!(u, init, c.env_from.is_some(), prefix, "envFrom");
    unread_in_container!(u, init, c.image_pull_policy.is_some(), prefix, "imagePullPolicy");
    unread_in_container!(u, init, c.lifecycle.is_some(), prefix, "lifecycle");
    unread_in_container!(u, init, c.liveness_probe.is_some(), prefix, "livenessProbe");
    let mut ports = Vec::with_capacity(items(c.ports.as_ref()).len());
    for (i, p) in items(c.ports.as_ref()).iter().enumerate() {
        unread_in_container!(u, init, p.name.is_some(), "ports[].name", indexed(&prefix.path("ports"), i, ".name"));
        ports.push(ContainerPort {
            container_port: p.container_port,
            host_port: host_port(p.container_port, p.host_port, host_network),
            protocol: opt_spelled(p.protocol.as_ref())?.unwrap_or_default(),
            host_ip: text(p.host_ip.as_ref()),
        });
    }
    unread_in_container!(u, init, c.readiness_probe.is_some(), prefix, "readinessProbe");
    unread_in_container!(u, init, c.resize_policy.is_some(), prefix, "resizePolicy");
    let res = match &c.resources {
        Some(r) => {
            unread_in_container!(u, init, r.claims.is_some(), "resources.claims", prefix.path("resources.claims"));
            resources(r)?
        }
        None => ResourceRequirements::default(),
    };
    unread_in_container!(u, init, c.restart_policy_rules.is_some(), prefix, "restartPolicyRules");
    unread_in_container!(u, init, c.security_context.is_some(), prefix, "securityContext");
    unread_in_container!(u, init, c.startup_probe.is_some(), prefix, "startupProbe");
    unread_in_container!(u, init, c.stdin.is_some(), prefix, "stdin");
    unread_in_container!(u, init, c.stdin_once.is_some(), prefix, "stdinOnce");
    unread_in_container!(u, init, c.termination_message_path.is_some(), prefix, "terminationMessagePath");
    unread_in_container!(u, init, c.termination_message_policy.is_some(), prefix, "terminationMessagePolicy");
    unread_in_container!(u, init, c.tty.is_some(), prefix, "tty");
    unread_in_container!(u, init, c.volume_devices.is_some(), prefix, "volumeDevices");
    unread_in_container!(u, init, c.volume_mounts.is_some(), prefix, "volumeMounts");
    unread_in_container!(u, init, c.working_dir.is_some(), prefix, "workingDir");
    Some(Container {
        name: c.name.clone(),
        image: text(c.image.as_ref()),
        resources: res,
        ports,
        restart_policy: c.restart_policy.clone(),
    })
}

fn containers(
    list: Option<&Vec<core::Container>>,
    init: bool,
    host_network: bool,
    u: &mut Unread,
) -> Option<Vec<Container>> {
    let name = if init { "spec.initContainers" } else { "spec.containers" };
    each(items(list).iter().enumerate(), |(i, c)| container(c, &At(name, i), init, host_network, u))
}

/// Whether a volume has the source `name` (one of the relevance table's); `None` for a
/// name this function does not know.
fn volume_has(v: &core::Volume, name: &str) -> Option<bool> {
    Some(match name {
        "persistentVolumeClaim" => v.persistent_volume_claim.is_some(),
        "ephemeral" => v.ephemeral.is_some(),
        "csi" => v.csi.is_some(),
        "gcePersistentDisk" => v.gce_persistent_disk.is_some(),
        "awsElasticBlockStore" => v.aws_elastic_block_store.is_some(),
        "azureDisk" => v.azure_disk.is_some(),
        "cinder" => v.cinder.is_some(),
        "iscsi" => v.iscsi.is_some(),
        "rbd" => v.rbd.is_some(),
        _ => return None,
    })
}

fn volumes_affect(vols: &[core::Volume]) -> Option<bool> {
    for v in vols {
        for name in relevance::SCHEDULING_VOLUMES {
            if volume_has(v, name)? {
                return Some(true);
            }
        }
    }
    Some(false)
}

fn toleration(t: &core::Toleration) -> Option<Toleration> {
    Some(Toleration {
        key: symbol(t.key.as_ref()),
        operator: opt_spelled(t.operator.as_ref())?.unwrap_or_default(),
        value: symbol(t.value.as_ref()),
        effect: opt_spelled(t.effect.as_ref())?,
        toleration_seconds: t.toleration_seconds,
    })
}

pub(crate) fn spread(t: &core::TopologySpreadConstraint) -> Option<TopologySpreadConstraint> {
    Some(TopologySpreadConstraint {
        max_skew: t.max_skew,
        topology_key: Symbol::intern(&t.topology_key),
        when_unsatisfiable: spelled(&t.when_unsatisfiable)?,
        label_selector: t.label_selector.as_ref().map(label_selector).map_or(Some(None), |s| s.map(Some))?,
        min_domains: t.min_domains,
        node_affinity_policy: opt_spelled(t.node_affinity_policy.as_ref())?,
        node_taints_policy: opt_spelled(t.node_taints_policy.as_ref())?,
        match_label_keys: items(t.match_label_keys.as_ref()).iter().map(|k| Symbol::intern(k)).collect(),
    })
}

k8s_openapi::k8s_if_ge_1_36! {
    /// `spec.schedulingGroup` (v1.36).
    fn scheduling_group(s: &core::PodSpec) -> Option<PodSchedulingGroup> {
        s.scheduling_group.as_ref().map(|g| PodSchedulingGroup { pod_group_name: g.pod_group_name.clone() })
    }
}

k8s_openapi::k8s_if_le_1_35! {
    /// No `spec.schedulingGroup` before v1.36.
    fn scheduling_group(_s: &core::PodSpec) -> Option<PodSchedulingGroup> {
        None
    }
}

pub(crate) fn resource_claim(c: &core::PodResourceClaim) -> PodResourceClaim {
    PodResourceClaim {
        name: c.name.clone(),
        resource_claim_name: c.resource_claim_name.clone(),
        resource_claim_template_name: c.resource_claim_template_name.clone(),
        // k8s-openapi 0.29 has no `podGroupResourceClaim` (KEP-5729, alpha).
        pod_group_resource_claim: None,
    }
}

fn pod_spec(s: &core::PodSpec, u: &mut Unread) -> Option<PodSpec> {
    k8s_openapi::k8s_if_1_35! {
        // Its conversion to schedulingGroup depends on GenericWorkload: left to the
        // manifest path.
        if s.workload_ref.is_some() {
            return None;
        }
    }
    let rule = relevance::pod;
    let host_network = s.host_network == Some(true);
    unread!(u, rule, s.active_deadline_seconds.is_some(), "spec.activeDeadlineSeconds");
    let affinity = match &s.affinity {
        Some(a) => Some(affinity(a)?),
        None => None,
    };
    unread!(u, rule, s.automount_service_account_token.is_some(), "spec.automountServiceAccountToken");
    let containers_ = containers(Some(&s.containers), false, host_network, u)?;
    unread!(u, rule, s.dns_config.is_some(), "spec.dnsConfig");
    unread!(u, rule, s.dns_policy.is_some(), "spec.dnsPolicy");
    unread!(u, rule, s.enable_service_links.is_some(), "spec.enableServiceLinks");
    unread!(u, rule, s.ephemeral_containers.is_some(), "spec.ephemeralContainers");
    unread!(u, rule, s.host_aliases.is_some(), "spec.hostAliases");
    unread!(u, rule, s.host_ipc.is_some(), "spec.hostIPC");
    unread!(u, rule, s.host_network.is_some(), "spec.hostNetwork");
    unread!(u, rule, s.host_pid.is_some(), "spec.hostPID");
    unread!(u, rule, s.host_users.is_some(), "spec.hostUsers");
    unread!(u, rule, s.hostname.is_some(), "spec.hostname");
    unread!(u, rule, s.hostname_override.is_some(), "spec.hostnameOverride");
    unread!(u, rule, s.image_pull_secrets.is_some(), "spec.imagePullSecrets");
    let init_containers = containers(s.init_containers.as_ref(), true, host_network, u)?;
    unread!(u, rule, s.os.is_some(), "spec.os");
    unread!(u, rule, s.priority_class_name.is_some(), "spec.priorityClassName");
    unread!(u, rule, s.readiness_gates.is_some(), "spec.readinessGates");
    let resource_claims = items(s.resource_claims.as_ref()).iter().map(resource_claim).collect();
    let pod_resources = match &s.resources {
        Some(r) => {
            unread!(u, rule, r.claims.is_some(), "spec.resources.claims");
            // Pod-level resources are not defaulted from limits before decoding.
            Some(ResourceRequirements {
                requests: quantities(r.requests.as_ref())?,
                limits: quantities(r.limits.as_ref())?,
            })
        }
        None => None,
    };
    unread!(u, rule, s.restart_policy.is_some(), "spec.restartPolicy");
    unread!(u, rule, s.runtime_class_name.is_some(), "spec.runtimeClassName");
    let scheduling_group = scheduling_group(s);
    unread!(u, rule, s.security_context.is_some(), "spec.securityContext");
    unread!(u, rule, s.service_account.is_some(), "spec.serviceAccount");
    unread!(u, rule, s.service_account_name.is_some(), "spec.serviceAccountName");
    unread!(u, rule, s.set_hostname_as_fqdn.is_some(), "spec.setHostnameAsFQDN");
    unread!(u, rule, s.share_process_namespace.is_some(), "spec.shareProcessNamespace");
    unread!(u, rule, s.subdomain.is_some(), "spec.subdomain");
    unread!(u, rule, s.termination_grace_period_seconds.is_some(), "spec.terminationGracePeriodSeconds");
    if let Some(vols) = &s.volumes {
        // The rule reads the volumes (their sources); computed here from the typed list
        // with the rule's own table of sources.
        let affects = volumes_affect(vols)?;
        u.push(affects, || "spec.volumes".to_owned());
    }
    let spec = PodSpec {
        containers: containers_,
        init_containers,
        overhead: quantities(s.overhead.as_ref())?,
        resources: pod_resources,
        node_name: text(s.node_name.as_ref()),
        node_selector: s.node_selector.as_ref().map(|l| Labels::from_pairs(l.iter())).unwrap_or_default(),
        affinity,
        tolerations: each(items(s.tolerations.as_ref()).iter(), toleration)?,
        topology_spread_constraints: each(items(s.topology_spread_constraints.as_ref()).iter(), spread)?,
        scheduling_gates: items(s.scheduling_gates.as_ref())
            .iter()
            .map(|g| SchedulingGate { name: g.name.clone() })
            .collect(),
        scheduler_name: text(s.scheduler_name.as_ref()),
        priority: s.priority,
        preemption_policy: opt_spelled(s.preemption_policy.as_ref())?,
        resource_claims,
        scheduling_group,
    };
    Some(spec)
}

fn pod_status(s: &core::PodStatus, u: &mut Unread) -> Option<PodStatus> {
    let rule = relevance::pod;
    k8s_openapi::k8s_if_ge_1_35! {
        unread!(u, rule, s.allocated_resources.is_some(), "status.allocatedResources");
    }
    unread!(u, rule, s.conditions.is_some(), "status.conditions");
    unread!(u, rule, s.container_statuses.is_some(), "status.containerStatuses");
    unread!(u, rule, s.ephemeral_container_statuses.is_some(), "status.ephemeralContainerStatuses");
    unread!(u, rule, s.extended_resource_claim_status.is_some(), "status.extendedResourceClaimStatus");
    unread!(u, rule, s.host_ip.is_some(), "status.hostIP");
    unread!(u, rule, s.host_ips.is_some(), "status.hostIPs");
    unread!(u, rule, s.init_container_statuses.is_some(), "status.initContainerStatuses");
    unread!(u, rule, s.message.is_some(), "status.message");
    k8s_openapi::k8s_if_ge_1_36! {
        unread!(
            u,
            rule,
            s.node_allocatable_resource_claim_statuses.is_some(),
            "status.nodeAllocatableResourceClaimStatuses"
        );
    }
    unread!(u, rule, s.observed_generation.is_some(), "status.observedGeneration");
    unread!(u, rule, s.pod_ip.is_some(), "status.podIP");
    unread!(u, rule, s.pod_ips.is_some(), "status.podIPs");
    unread!(u, rule, s.qos_class.is_some(), "status.qosClass");
    unread!(u, rule, s.reason.is_some(), "status.reason");
    unread!(u, rule, s.resize.is_some(), "status.resize");
    unread!(u, rule, s.resource_claim_statuses.is_some(), "status.resourceClaimStatuses");
    k8s_openapi::k8s_if_ge_1_35! {
        unread!(u, rule, s.resources.is_some(), "status.resources");
    }
    Some(PodStatus {
        phase: text(s.phase.as_ref()),
        nominated_node_name: text(s.nominated_node_name.as_ref()),
        start_time: opt_seconds(s.start_time.as_ref())?,
    })
}

/// The direct Pod conversion; `None` hands over to the manifest path.
pub(super) fn pod(obj: &core::Pod, opts: LoadOptions, report_all: bool) -> Option<Result<Loaded<Pod>, ManifestError>> {
    k8s_openapi::k8s_if_ge_1_37! {
        return None;
    }
    let mut u = Unread { report_all, fields: Vec::new() };
    let metadata = meta(&obj.metadata)?;
    let spec = match &obj.spec {
        Some(s) => pod_spec(s, &mut u)?,
        None => PodSpec::default(),
    };
    let status = match &obj.status {
        Some(s) => pod_status(s, &mut u)?,
        None => PodStatus::default(),
    };
    let mut pod = Pod { metadata, spec, status };
    // The manifest path's default_after_decode (after its strict check, which the
    // defaulting cannot change).
    if opts.feature_gates.enabled(Feature::PodLevelResources) {
        defaults::default_pod_level_resources(&mut pod);
    }
    Some(u.finish("Pod", &obj.metadata, opts, pod))
}

fn taint(t: &core::Taint, i: usize, u: &mut Unread) -> Option<Taint> {
    if t.time_added.is_some() {
        static AFFECTS: OnceLock<bool> = OnceLock::new();
        let affects = *AFFECTS.get_or_init(|| relevance::node("spec.taints[].timeAdded", &Value::Null));
        u.push(affects, || indexed("spec.taints", i, ".timeAdded"));
    }
    Some(Taint { key: Symbol::intern(&t.key), value: symbol(t.value.as_ref()), effect: spelled(&t.effect)? })
}

fn node_status(s: &core::NodeStatus, u: &mut Unread) -> Option<NodeStatus> {
    let rule = relevance::node;
    unread!(u, rule, s.addresses.is_some(), "status.addresses");
    let capacity = quantities(s.capacity.as_ref())?;
    // SetDefaults_NodeStatus, as defaults::node_before_decode applies it.
    let allocatable = match (&s.allocatable, &s.capacity) {
        (None, Some(_)) => capacity.clone(),
        (a, _) => quantities(a.as_ref())?,
    };
    unread!(u, rule, s.conditions.is_some(), "status.conditions");
    unread!(u, rule, s.config.is_some(), "status.config");
    unread!(u, rule, s.daemon_endpoints.is_some(), "status.daemonEndpoints");
    k8s_openapi::k8s_if_ge_1_35! {
        unread!(u, rule, s.declared_features.is_some(), "status.declaredFeatures");
    }
    unread!(u, rule, s.features.is_some(), "status.features");
    let images = items(s.images.as_ref())
        .iter()
        .map(|i| ContainerImage { names: i.names.clone().unwrap_or_default(), size_bytes: i.size_bytes.unwrap_or(0) })
        .collect();
    unread!(u, rule, s.node_info.is_some(), "status.nodeInfo");
    unread!(u, rule, s.phase.is_some(), "status.phase");
    unread!(u, rule, s.runtime_handlers.is_some(), "status.runtimeHandlers");
    unread!(u, rule, s.volumes_attached.is_some(), "status.volumesAttached");
    unread!(u, rule, s.volumes_in_use.is_some(), "status.volumesInUse");
    Some(NodeStatus { capacity, allocatable, images })
}

/// The direct Node conversion; `None` hands over to the manifest path.
pub(super) fn node(
    obj: &core::Node,
    opts: LoadOptions,
    report_all: bool,
) -> Option<Result<Loaded<Node>, ManifestError>> {
    k8s_openapi::k8s_if_ge_1_37! {
        return None;
    }
    let mut u = Unread { report_all, fields: Vec::new() };
    let metadata = meta(&obj.metadata)?;
    let spec = match &obj.spec {
        Some(s) => {
            let rule = relevance::node;
            unread!(u, rule, s.config_source.is_some(), "spec.configSource");
            unread!(u, rule, s.external_id.is_some(), "spec.externalID");
            unread!(u, rule, s.pod_cidr.is_some(), "spec.podCIDR");
            unread!(u, rule, s.pod_cidrs.is_some(), "spec.podCIDRs");
            unread!(u, rule, s.provider_id.is_some(), "spec.providerID");
            let taints = each(items(s.taints.as_ref()).iter().enumerate(), |(i, t)| taint(t, i, &mut u))?;
            NodeSpec { unschedulable: s.unschedulable.unwrap_or(false), taints }
        }
        None => NodeSpec::default(),
    };
    let status = match &obj.status {
        Some(s) => node_status(s, &mut u)?,
        None => NodeStatus::default(),
    };
    Some(u.finish("Node", &obj.metadata, opts, Node { metadata, spec, status }))
}

#[cfg(test)]
mod tests {
    use super::{At, indexed, push_index};

    #[test]
    fn reported_paths_are_written_as_format_writes_them() {
        for i in [0, 7, 9, 10, 42, 100, 12_345, usize::MAX] {
            let mut index = String::new();
            push_index(&mut index, i);
            assert_eq!(index, format!("[{i}]"));
            assert_eq!(At("spec.initContainers", i).path("env"), format!("spec.initContainers[{i}].env"));
            assert_eq!(indexed("spec.taints", i, ".timeAdded"), format!("spec.taints[{i}].timeAdded"));
        }
    }
}
