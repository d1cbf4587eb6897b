//! Pods straight into the model (see the parent module).

use std::sync::OnceLock;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use super::{Pairs, Skip, Text, object, opt_spelled, pairs_quantities, quantities, text};
use crate::k8s::fast::{self, each, items};
use crate::manifest::relevance;
use crate::model::{
    Container, ContainerPort, Pod, PodSpec, PodStatus, ResourceList, ResourceRequirements, SchedulingGate, Symbol,
    Toleration,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PodSpecDoc<'a> {
    #[serde(borrow)]
    containers: Vec<ContainerDoc<'a>>,
    #[serde(borrow)]
    init_containers: Option<Vec<ContainerDoc<'a>>>,
    #[serde(borrow)]
    node_name: Option<Text<'a>>,
    #[serde(borrow)]
    node_selector: Option<Pairs<'a>>,
    #[serde(borrow)]
    scheduler_name: Option<Text<'a>>,
    priority: Option<i32>,
    #[serde(borrow)]
    preemption_policy: Option<Text<'a>>,
    host_network: Option<bool>,
    #[serde(borrow)]
    tolerations: Option<Vec<TolerationDoc<'a>>>,
    #[serde(borrow)]
    overhead: Option<Pairs<'a>>,
    scheduling_gates: Option<Vec<GateDoc>>,
    affinity: Option<Box<core::Affinity>>,
    topology_spread_constraints: Option<Vec<core::TopologySpreadConstraint>>,
    resource_claims: Option<Vec<core::PodResourceClaim>>,
    volumes: Option<Vec<VolumeDoc>>,
    active_deadline_seconds: Skip,
    automount_service_account_token: Skip,
    dns_config: Skip,
    dns_policy: Skip,
    enable_service_links: Skip,
    ephemeral_containers: Skip,
    host_aliases: Skip,
    #[serde(rename = "hostIPC")]
    host_ipc: Skip,
    #[serde(rename = "hostPID")]
    host_pid: Skip,
    host_users: Skip,
    hostname: Skip,
    hostname_override: Skip,
    image_pull_secrets: Skip,
    os: Skip,
    priority_class_name: Skip,
    readiness_gates: Skip,
    restart_policy: Skip,
    runtime_class_name: Skip,
    security_context: Skip,
    service_account: Skip,
    service_account_name: Skip,
    #[serde(rename = "setHostnameAsFQDN")]
    set_hostname_as_fqdn: Skip,
    share_process_namespace: Skip,
    subdomain: Skip,
    termination_grace_period_seconds: Skip,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ContainerDoc<'a> {
    #[serde(borrow)]
    name: Text<'a>,
    #[serde(borrow)]
    image: Option<Text<'a>>,
    #[serde(borrow)]
    resources: Option<ResourcesDoc<'a>>,
    #[serde(borrow)]
    ports: Option<Vec<PortDoc<'a>>>,
    #[serde(borrow)]
    restart_policy: Option<Text<'a>>,
    args: Skip,
    command: Skip,
    env: Skip,
    env_from: Skip,
    image_pull_policy: Skip,
    lifecycle: Skip,
    liveness_probe: Skip,
    readiness_probe: Skip,
    resize_policy: Skip,
    restart_policy_rules: Skip,
    security_context: Skip,
    startup_probe: Skip,
    stdin: Skip,
    stdin_once: Skip,
    termination_message_path: Skip,
    termination_message_policy: Skip,
    tty: Skip,
    volume_devices: Skip,
    volume_mounts: Skip,
    working_dir: Skip,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourcesDoc<'a> {
    #[serde(borrow)]
    requests: Option<Pairs<'a>>,
    #[serde(borrow)]
    limits: Option<Pairs<'a>>,
    claims: Skip,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PortDoc<'a> {
    container_port: i32,
    host_port: Option<i32>,
    #[serde(borrow)]
    protocol: Option<Text<'a>>,
    #[serde(rename = "hostIP", borrow)]
    host_ip: Option<Text<'a>>,
    name: Skip,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct TolerationDoc<'a> {
    #[serde(borrow)]
    key: Option<Text<'a>>,
    #[serde(borrow)]
    operator: Option<Text<'a>>,
    #[serde(borrow)]
    value: Option<Text<'a>>,
    #[serde(borrow)]
    effect: Option<Text<'a>>,
    toleration_seconds: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GateDoc {
    name: String,
}

/// A volume: its name, and whether it has a source the volume plugins read (a key of
/// `relevance::SCHEDULING_VOLUMES` that is not `null`). The sources are not decoded.
struct VolumeDoc {
    schedules: bool,
}

impl<'de> Deserialize<'de> for VolumeDoc {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = VolumeDoc;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a volume")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<VolumeDoc, A::Error> {
                let (mut named, mut schedules) = (false, false);
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    if key.as_str() == "name" {
                        let _: Text<'de> = map.next_value()?;
                        named = true;
                    } else if relevance::SCHEDULING_VOLUMES.contains(&key.as_str()) {
                        schedules |= map.next_value::<Option<IgnoredAny>>()?.is_some();
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                if !named {
                    return Err(de::Error::missing_field("name"));
                }
                Ok(VolumeDoc { schedules })
            }
        }
        de.deserialize_map(V)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PodStatusDoc<'a> {
    #[serde(borrow)]
    phase: Option<Text<'a>>,
    #[serde(borrow)]
    nominated_node_name: Option<Text<'a>>,
    start_time: Option<Time>,
    allocated_resources: Skip,
    conditions: Skip,
    container_statuses: Skip,
    ephemeral_container_statuses: Skip,
    extended_resource_claim_status: Skip,
    #[serde(rename = "hostIP")]
    host_ip: Skip,
    #[serde(rename = "hostIPs")]
    host_ips: Skip,
    init_container_statuses: Skip,
    message: Skip,
    node_allocatable_resource_claim_statuses: Skip,
    observed_generation: Skip,
    #[serde(rename = "podIP")]
    pod_ip: Skip,
    #[serde(rename = "podIPs")]
    pod_ips: Skip,
    qos_class: Skip,
    reason: Skip,
    resize: Skip,
    resource_claim_statuses: Skip,
    resources: Skip,
}

/// `requests` with every limit they lack (`SetDefaults_Pod`), in key order.
fn requests_defaulted(requests: Option<&Pairs<'_>>, limits: &Pairs<'_>) -> Option<ResourceList> {
    let mut merged = requests.map(Pairs::sorted).unwrap_or_default();
    let have = merged.len();
    for (name, q) in limits.sorted() {
        if !merged[..have].iter().any(|(n, _)| *n == name) {
            merged.push((name, q));
        }
    }
    merged.sort_by(|a, b| a.0.cmp(b.0));
    quantities(&merged)
}

fn resources(r: Option<&ResourcesDoc<'_>>) -> Option<ResourceRequirements> {
    let Some(r) = r else { return Some(ResourceRequirements::default()) };
    let requests = match &r.limits {
        Some(limits) => requests_defaulted(r.requests.as_ref(), limits)?,
        None => pairs_quantities(r.requests.as_ref())?,
    };
    Some(ResourceRequirements { requests, limits: pairs_quantities(r.limits.as_ref())? })
}

/// The relevance of a container field, once for containers and once for init containers.
macro_rules! skip_in_container {
    ($init:expr, $present:expr, $rel:literal) => {
        if $present {
            static CONTAINER: OnceLock<bool> = OnceLock::new();
            static INIT: OnceLock<bool> = OnceLock::new();
            let affects = if $init {
                *INIT.get_or_init(|| relevance::pod(concat!("spec.initContainers[].", $rel), &Value::Null))
            } else {
                *CONTAINER.get_or_init(|| relevance::pod(concat!("spec.containers[].", $rel), &Value::Null))
            };
            if affects {
                return None;
            }
        }
    };
}

fn container(c: ContainerDoc<'_>, init: bool, host_network: bool) -> Option<Container> {
    skip_in_container!(init, c.args.is_some(), "args");
    skip_in_container!(init, c.command.is_some(), "command");
    skip_in_container!(init, c.env.is_some(), "env");
    skip_in_container!(init, c.env_from.is_some(), "envFrom");
    skip_in_container!(init, c.image_pull_policy.is_some(), "imagePullPolicy");
    skip_in_container!(init, c.lifecycle.is_some(), "lifecycle");
    skip_in_container!(init, c.liveness_probe.is_some(), "livenessProbe");
    skip_in_container!(init, c.readiness_probe.is_some(), "readinessProbe");
    skip_in_container!(init, c.resize_policy.is_some(), "resizePolicy");
    skip_in_container!(init, c.restart_policy_rules.is_some(), "restartPolicyRules");
    skip_in_container!(init, c.security_context.is_some(), "securityContext");
    skip_in_container!(init, c.startup_probe.is_some(), "startupProbe");
    skip_in_container!(init, c.stdin.is_some(), "stdin");
    skip_in_container!(init, c.stdin_once.is_some(), "stdinOnce");
    skip_in_container!(init, c.termination_message_path.is_some(), "terminationMessagePath");
    skip_in_container!(init, c.termination_message_policy.is_some(), "terminationMessagePolicy");
    skip_in_container!(init, c.tty.is_some(), "tty");
    skip_in_container!(init, c.volume_devices.is_some(), "volumeDevices");
    skip_in_container!(init, c.volume_mounts.is_some(), "volumeMounts");
    skip_in_container!(init, c.working_dir.is_some(), "workingDir");
    skip_in_container!(init, c.resources.as_ref().is_some_and(|r| r.claims.is_some()), "resources.claims");
    let ports_in = c.ports.unwrap_or_default();
    let mut ports = Vec::with_capacity(ports_in.len());
    for p in ports_in {
        skip_in_container!(init, p.name.is_some(), "ports[].name");
        ports.push(ContainerPort {
            container_port: p.container_port,
            host_port: fast::host_port(p.container_port, p.host_port, host_network),
            protocol: opt_spelled(p.protocol.as_ref())?.unwrap_or_default(),
            host_ip: text(p.host_ip),
        });
    }
    Some(Container {
        resources: resources(c.resources.as_ref())?,
        name: c.name.0.into_owned(),
        image: text(c.image),
        ports,
        restart_policy: c.restart_policy.map(|r| r.0.into_owned()),
    })
}

fn toleration(t: &TolerationDoc<'_>) -> Option<Toleration> {
    let symbol = |s: &Option<Text<'_>>| Symbol::intern(s.as_ref().map_or("", Text::as_str));
    Some(Toleration {
        key: symbol(&t.key),
        operator: opt_spelled(t.operator.as_ref())?.unwrap_or_default(),
        value: symbol(&t.value),
        effect: opt_spelled(t.effect.as_ref())?,
        toleration_seconds: t.toleration_seconds,
    })
}

fn pod_spec(s: PodSpecDoc<'_>) -> Option<PodSpec> {
    let rule = relevance::pod;
    skip!(rule, s.active_deadline_seconds.is_some(), "spec.activeDeadlineSeconds");
    skip!(rule, s.automount_service_account_token.is_some(), "spec.automountServiceAccountToken");
    skip!(rule, s.dns_config.is_some(), "spec.dnsConfig");
    skip!(rule, s.dns_policy.is_some(), "spec.dnsPolicy");
    skip!(rule, s.enable_service_links.is_some(), "spec.enableServiceLinks");
    skip!(rule, s.ephemeral_containers.is_some(), "spec.ephemeralContainers");
    skip!(rule, s.host_aliases.is_some(), "spec.hostAliases");
    skip!(rule, s.host_ipc.is_some(), "spec.hostIPC");
    skip!(rule, s.host_network.is_some(), "spec.hostNetwork");
    skip!(rule, s.host_pid.is_some(), "spec.hostPID");
    skip!(rule, s.host_users.is_some(), "spec.hostUsers");
    skip!(rule, s.hostname.is_some(), "spec.hostname");
    skip!(rule, s.hostname_override.is_some(), "spec.hostnameOverride");
    skip!(rule, s.image_pull_secrets.is_some(), "spec.imagePullSecrets");
    skip!(rule, s.os.is_some(), "spec.os");
    skip!(rule, s.priority_class_name.is_some(), "spec.priorityClassName");
    skip!(rule, s.readiness_gates.is_some(), "spec.readinessGates");
    skip!(rule, s.restart_policy.is_some(), "spec.restartPolicy");
    skip!(rule, s.runtime_class_name.is_some(), "spec.runtimeClassName");
    skip!(rule, s.security_context.is_some(), "spec.securityContext");
    skip!(rule, s.service_account.is_some(), "spec.serviceAccount");
    skip!(rule, s.service_account_name.is_some(), "spec.serviceAccountName");
    skip!(rule, s.set_hostname_as_fqdn.is_some(), "spec.setHostnameAsFQDN");
    skip!(rule, s.share_process_namespace.is_some(), "spec.shareProcessNamespace");
    skip!(rule, s.subdomain.is_some(), "spec.subdomain");
    skip!(rule, s.termination_grace_period_seconds.is_some(), "spec.terminationGracePeriodSeconds");
    if s.volumes.iter().flatten().any(|v| v.schedules) {
        return None;
    }
    let host_network = s.host_network == Some(true);
    let affinity = match &s.affinity {
        Some(a) => Some(fast::affinity(a)?),
        None => None,
    };
    let containers = each(s.containers.into_iter(), |c| container(c, false, host_network))?;
    let init_containers =
        each(s.init_containers.unwrap_or_default().into_iter(), |c| container(c, true, host_network))?;
    Some(PodSpec {
        containers,
        init_containers,
        overhead: pairs_quantities(s.overhead.as_ref())?,
        resources: None,
        node_name: text(s.node_name),
        node_selector: s.node_selector.as_ref().map(Pairs::labels).unwrap_or_default(),
        affinity,
        tolerations: each(items(s.tolerations.as_ref()).iter(), toleration)?,
        topology_spread_constraints: each(items(s.topology_spread_constraints.as_ref()).iter(), fast::spread)?,
        scheduling_gates: s
            .scheduling_gates
            .unwrap_or_default()
            .into_iter()
            .map(|g| SchedulingGate { name: g.name })
            .collect(),
        scheduler_name: text(s.scheduler_name),
        priority: s.priority,
        preemption_policy: opt_spelled(s.preemption_policy.as_ref())?,
        resource_claims: items(s.resource_claims.as_ref()).iter().map(fast::resource_claim).collect(),
        scheduling_group: None,
    })
}

fn pod_status(s: PodStatusDoc<'_>) -> Option<PodStatus> {
    let rule = relevance::pod;
    skip!(rule, s.allocated_resources.is_some(), "status.allocatedResources");
    skip!(rule, s.conditions.is_some(), "status.conditions");
    skip!(rule, s.container_statuses.is_some(), "status.containerStatuses");
    skip!(rule, s.ephemeral_container_statuses.is_some(), "status.ephemeralContainerStatuses");
    skip!(rule, s.extended_resource_claim_status.is_some(), "status.extendedResourceClaimStatus");
    skip!(rule, s.host_ip.is_some(), "status.hostIP");
    skip!(rule, s.host_ips.is_some(), "status.hostIPs");
    skip!(rule, s.init_container_statuses.is_some(), "status.initContainerStatuses");
    skip!(rule, s.message.is_some(), "status.message");
    skip!(rule, s.node_allocatable_resource_claim_statuses.is_some(), "status.nodeAllocatableResourceClaimStatuses");
    skip!(rule, s.observed_generation.is_some(), "status.observedGeneration");
    skip!(rule, s.pod_ip.is_some(), "status.podIP");
    skip!(rule, s.pod_ips.is_some(), "status.podIPs");
    skip!(rule, s.qos_class.is_some(), "status.qosClass");
    skip!(rule, s.reason.is_some(), "status.reason");
    skip!(rule, s.resize.is_some(), "status.resize");
    skip!(rule, s.resource_claim_statuses.is_some(), "status.resourceClaimStatuses");
    skip!(rule, s.resources.is_some(), "status.resources");
    Some(PodStatus {
        phase: text(s.phase),
        nominated_node_name: text(s.nominated_node_name),
        start_time: fast::opt_seconds(s.start_time.as_ref())?,
    })
}

/// A Pod's text straight into the model (not yet defaulted for feature gates); `None`
/// hands over to the lean path.
pub(super) fn pod(text: &str) -> Option<Pod> {
    let (metadata, spec, status) = object::<PodSpecDoc<'_>, PodStatusDoc<'_>, _, _>(text, "Pod", pod_spec, pod_status)?;
    Some(Pod { metadata, spec, status })
}
