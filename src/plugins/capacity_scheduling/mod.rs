//! CapacityScheduling: elastic quotas per namespace, as scheduler-plugins
//! `pkg/capacityscheduling/capacity_scheduling.go`.
//!
//! Each [`ElasticQuota`] guarantees its namespace `min` and caps it at `max`. A
//! namespace may borrow beyond its `min` while the cluster's guaranteed capacity (the
//! sum of every quota's `min`) isn't used up; PreFilter rejects a pod that would push
//! its quota over `max`, or all quotas together over the sum of mins. Reserve and
//! Unreserve keep per-quota usage. PostFilter preempts through the shared evaluator
//! ([`crate::framework::preemption`]) with upstream's quota rules:
//!
//! - a preemptor whose quota would stay within `min` reclaims: victims are pods of
//!   *other* quotas that use more than their `min` (any priority), least important
//!   first and only while their quota is still over `min`;
//! - a preemptor whose quota would exceed `min` only preempts lower-priority pods of
//!   its *own* quota;
//! - a preemptor without a quota only preempts lower-priority pods without a quota.
//!
//! Quota usage must be fed: [`CapacityScheduling::sync_usage`] from a snapshot, or
//! [`CapacityScheduling::add_pod`]/[`CapacityScheduling::remove_pod`] on pod events
//! (upstream listens to pod informers); the plugin's own Reserve/Unreserve count the
//! pods it schedules.

mod quota;

use std::sync::Arc;

use parking_lot::RwLock;
use serde::Deserialize;

pub use quota::{Bound, ElasticQuota, ElasticQuotaSpec, QuotaError, QuotaInfo, QuotaSet};

use crate::framework::preemption::{
    self, DryRun, PdbBudgets, PreemptionContext, PreemptionStrategy, Victims, is_terminating,
};
use crate::framework::{
    ActionType, ClusterEvent, ClusterEventWithHint, CycleState, EnqueueExtensions, EventResource, ExtensionPoints,
    Handle, NodeToStatus, Plugin, PostFilterPlugin, PostFilterResult, PreFilterExtensions, PreFilterPlugin,
    PreFilterResult, ReservePlugin, Status,
};
use crate::model::{PreemptionPolicy, Resources};
use crate::plugins::names;
use crate::snapshot::{NodeInfo, PodInfo, Snapshot};

/// The quotas as one cycle sees them (copied on a dry run's first change).
#[derive(Clone)]
struct QuotaSnapshot(Arc<QuotaSet>);

/// Requests computed in PreFilter (upstream `PreFilterState`).
#[derive(Clone)]
struct PreFilterState {
    /// The pod's request plus nominated pods of its quota with priority >= its own.
    in_quota_with_req: Resources,
    /// That, plus nominated pods of other quotas within their min.
    all_with_req: Resources,
}

/// Plugin args: the quotas.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct CapacitySchedulingArgs {
    /// Quotas, one per namespace.
    pub elastic_quotas: Vec<ElasticQuota>,
}

/// The CapacityScheduling plugin.
pub struct CapacityScheduling {
    handle: Handle,
    quotas: RwLock<Arc<QuotaSet>>,
}

impl std::fmt::Debug for CapacityScheduling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CapacityScheduling").field("quotas", &self.quotas.read().iter().count()).finish_non_exhaustive()
    }
}

impl CapacityScheduling {
    /// A plugin over validated quotas.
    pub fn new(quotas: &[ElasticQuota], handle: Handle) -> Result<Self, QuotaError> {
        Ok(CapacityScheduling { handle, quotas: RwLock::new(Arc::new(QuotaSet::new(quotas)?)) })
    }

    /// From config args.
    pub fn from_config(args: Option<&serde_json::Value>, handle: &Handle) -> Result<Self, String> {
        let a: CapacitySchedulingArgs = match args {
            None => CapacitySchedulingArgs::default(),
            Some(v) => serde_json::from_value(v.clone()).map_err(|e| e.to_string())?,
        };
        CapacityScheduling::new(&a.elastic_quotas, handle.clone()).map_err(|e| e.to_string())
    }

    /// The quotas with their usage now.
    pub fn quotas(&self) -> Arc<QuotaSet> {
        self.quotas.read().clone()
    }

    /// Counts an assigned pod in its namespace's quota (idempotent).
    pub fn add_pod(&self, pod: &PodInfo) {
        let mut g = self.quotas.write();
        if g.get(pod.namespace).is_some()
            && let Some(q) = Arc::make_mut(&mut g).get_mut(pod.namespace)
        {
            q.add_pod(pod);
        }
    }

    /// Stops counting a pod (deleted, or its binding failed).
    pub fn remove_pod(&self, pod: &PodInfo) {
        let mut g = self.quotas.write();
        if g.get(pod.namespace).is_some()
            && let Some(q) = Arc::make_mut(&mut g).get_mut(pod.namespace)
        {
            q.remove_pod(pod);
        }
    }

    /// Counts every pod of `snapshot` (e.g. once at start-up).
    pub fn sync_usage(&self, snapshot: &Snapshot) {
        for n in snapshot.nodes() {
            for p in n.pods() {
                self.add_pod(p);
            }
        }
    }

    /// Upstream `getNominatedPodsReqInEQWithPodReq`.
    fn nominated_requests(&self, pod: &PodInfo, quotas: &QuotaSet) -> PreFilterState {
        let mut in_quota = pod.requests.clone();
        let mut all = pod.requests.clone();
        if let Some(nom) = self.handle.preemption().nominator().snapshot() {
            for p in nom.iter() {
                if p.uid == pod.uid {
                    continue;
                }
                let Some(info) = quotas.get(p.namespace) else { continue };
                if p.namespace == pod.namespace && p.priority() >= pod.priority() {
                    in_quota.add(&p.requests);
                    all.add(&p.requests);
                } else if p.namespace != pod.namespace && !info.used_over_min() {
                    all.add(&p.requests);
                }
            }
        }
        PreFilterState { in_quota_with_req: in_quota, all_with_req: all }
    }
}

impl Plugin for CapacityScheduling {
    fn name(&self) -> &str {
        names::CAPACITY_SCHEDULING
    }
    fn register(self: Arc<Self>, points: &mut ExtensionPoints) {
        points.pre_filter(self.clone()).post_filter(self.clone()).reserve(self.clone()).enqueue(self);
    }
}

impl EnqueueExtensions for CapacityScheduling {
    /// Upstream `EventsToRegister`: a deleted pod frees quota; any quota change may
    /// admit pods.
    fn events_to_register(&self) -> Vec<ClusterEventWithHint> {
        vec![
            ClusterEventWithHint {
                event: ClusterEvent { resource: EventResource::AssignedPod, action: ActionType::DELETE },
                hint: None,
            },
            ClusterEventWithHint {
                event: ClusterEvent { resource: EventResource::ElasticQuota, action: ActionType::ALL },
                hint: None,
            },
        ]
    }
}

impl PreFilterPlugin for CapacityScheduling {
    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, _: &Snapshot) -> (Option<PreFilterResult>, Status) {
        let quotas = self.quotas();
        let pfs = self.nominated_requests(pod, &quotas);
        let verdict = match quotas.get(pod.namespace) {
            Some(q) if q.used_over_max_with(&pfs.in_quota_with_req) => Status::unschedulable(format!(
                "Pod {} is rejected in Prefilter because ElasticQuota {} is more than Max",
                pod.pod.key(),
                pod.namespace
            )),
            Some(_) if quotas.aggregated_used_over_min_with(&pfs.all_with_req) => Status::unschedulable(format!(
                "Pod {} is rejected in Prefilter because total ElasticQuota used is more than min",
                pod.pod.key()
            )),
            // No quota for the namespace (upstream: success, "skipCapacityScheduling"), or within bounds.
            _ => Status::SUCCESS,
        };
        state.write(QuotaSnapshot(quotas));
        state.write(pfs);
        (None, verdict)
    }

    fn extensions(&self) -> Option<&dyn PreFilterExtensions> {
        Some(self)
    }
}

fn update_usage(state: &mut CycleState, pod: &PodInfo, add: bool) -> Status {
    let has = state.read::<QuotaSnapshot>().is_some_and(|q| q.0.get(pod.namespace).is_some());
    if has
        && let Some(s) = state.get_mut::<QuotaSnapshot>()
        && let Some(q) = Arc::make_mut(&mut s.0).get_mut(pod.namespace)
    {
        if add { q.add_pod(pod) } else { q.remove_pod(pod) }
    }
    Status::SUCCESS
}

impl PreFilterExtensions for CapacityScheduling {
    fn add_pod(&self, state: &mut CycleState, _: &PodInfo, pod_to_add: &PodInfo, _: &NodeInfo) -> Status {
        update_usage(state, pod_to_add, true)
    }
    fn remove_pod(&self, state: &mut CycleState, _: &PodInfo, pod_to_remove: &PodInfo, _: &NodeInfo) -> Status {
        update_usage(state, pod_to_remove, false)
    }
}

impl ReservePlugin for CapacityScheduling {
    fn reserve(&self, _: &mut CycleState, pod: &PodInfo, _: &str) -> Status {
        self.add_pod(pod);
        Status::SUCCESS
    }
    fn unreserve(&self, _: &mut CycleState, pod: &PodInfo, _: &str) {
        self.remove_pod(pod);
    }
}

impl PostFilterPlugin for CapacityScheduling {
    fn post_filter(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        statuses: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        preemption::post_filter_preempt(self, names::CAPACITY_SCHEDULING, &self.handle, state, pod, snapshot, statuses)
    }
}

fn missing_state() -> Status {
    Status::error("CapacityScheduling: PreFilter state missing from the cycle state")
}

impl PreemptionStrategy for CapacityScheduling {
    fn plugin_name(&self) -> &'static str {
        names::CAPACITY_SCHEDULING
    }

    /// Upstream's capacity preemptor dry-runs every potential node from the first.
    fn offset_and_num_candidates(&self, num_potential: usize) -> (usize, usize) {
        (0, num_potential)
    }

    /// Upstream's `PodEligibleToPreemptOthers` for quotas: as DefaultPreemption's, but
    /// a terminating pod on the nominated node only makes the preemptor wait when its
    /// room would go to the preemptor under the quota rules.
    fn pod_eligible_to_preempt_others(
        &self,
        cx: &PreemptionContext<'_>,
        nominated_node_status: Option<&Status>,
    ) -> Result<(), String> {
        let pod = cx.pod;
        if pod.pod.spec.preemption_policy == Some(PreemptionPolicy::Never) {
            return Err("not eligible due to preemptionPolicy=Never.".to_owned());
        }
        let Some(nom) = cx.nominated_node_name() else { return Ok(()) };
        if nominated_node_status.is_some_and(|s| s.code() == crate::framework::Code::UnschedulableAndUnresolvable) {
            return Ok(());
        }
        let Some(node) = cx.snapshot.index_of(nom).map(|i| &cx.snapshot.nodes()[i]) else { return Ok(()) };
        let (Some(quotas), Some(pfs)) = (cx.state.read::<QuotaSnapshot>(), cx.state.read::<PreFilterState>()) else {
            return Ok(());
        };
        let prio = pod.priority();
        let wait = Err("not eligible due to a terminating pod on the nominated node.".to_owned());
        if let Some(own) = quotas.0.get(pod.namespace) {
            let more_than_min = own.used_over_min_with(&pfs.in_quota_with_req);
            for p in node.pods().iter().filter(|p| is_terminating(p)) {
                let Some(q) = quotas.0.get(p.namespace) else { continue };
                if p.namespace == pod.namespace && p.priority() < prio {
                    return wait;
                }
                if p.namespace != pod.namespace && !more_than_min && q.used_over_min() {
                    return wait;
                }
            }
        } else if node
            .pods()
            .iter()
            .any(|p| quotas.0.get(p.namespace).is_none() && is_terminating(p) && p.priority() < prio)
        {
            return wait;
        }
        Ok(())
    }

    /// Upstream's capacity `SelectVictimsOnNode` on the shared [`DryRun`]: potential
    /// victims by the quota rules (least important first, re-reading usage as each is
    /// removed), the pod must fit and stay within its quota's `max` and the sum of
    /// mins, then the shared reprieve — where a reprieved pod that would break either
    /// bound (counting nominated pods) becomes a victim. Upstream's reprieve can
    /// remove such a pod twice when it also fails Filter; here it is one victim.
    fn select_victims_on_node(
        &self,
        cx: &PreemptionContext<'_>,
        dry: &mut DryRun<'_>,
        pdbs: &PdbBudgets,
    ) -> Result<Victims, Status> {
        let pod = cx.pod;
        let prio = pod.priority();
        let pfs = dry.state.read::<PreFilterState>().cloned().ok_or_else(missing_state)?;
        let quotas_now = |d: &DryRun<'_>| d.state.read::<QuotaSnapshot>().map(|q| q.0.clone());
        let start = quotas_now(dry).ok_or_else(missing_state)?;
        let with_quota = start.get(pod.namespace).is_some();
        let mut pods: Vec<Arc<PodInfo>> = dry.node.pods().to_vec();
        pods.sort_by(|a, b| {
            // Least important first.
            a.priority()
                .cmp(&b.priority())
                .then_with(|| preemption::pod_start_time(b).total_cmp(&preemption::pod_start_time(a)))
        });
        let mut potential = Vec::new();
        if with_quota {
            let more_than_min = start.get(pod.namespace).is_some_and(|q| q.used_over_min_with(&pfs.in_quota_with_req));
            for p in pods {
                let now = quotas_now(dry).ok_or_else(missing_state)?;
                let Some(q) = now.get(p.namespace) else { continue };
                let victim = if more_than_min {
                    p.namespace == pod.namespace && p.priority() < prio
                } else {
                    p.namespace != pod.namespace && q.used_over_min()
                };
                if victim {
                    dry.remove_pod(&p)?;
                    potential.push(p);
                }
            }
        } else {
            for p in pods {
                if p.priority() < prio && start.get(p.namespace).is_none() {
                    dry.remove_pod(&p)?;
                    potential.push(p);
                }
            }
        }
        if potential.is_empty() {
            return Err(Status::unresolvable(format!(
                "No victims found on node {} for preemptor pod {}",
                dry.node.node().name(),
                pod.pod.name()
            )));
        }
        let s = dry.fits();
        if !s.is_success() {
            return Err(s);
        }
        let within_quota = |d: &DryRun<'_>| {
            if !with_quota {
                return true;
            }
            let Some(now) = quotas_now(d) else { return false };
            let over_max = now.get(pod.namespace).is_some_and(|q| q.used_over_max_with(&pfs.in_quota_with_req));
            !over_max && !now.aggregated_used_over_min_with(&pfs.all_with_req)
        };
        // Upstream checks the bare pod request here (and the nominated-inclusive sums
        // during the reprieve), with this one message for both bounds.
        if with_quota {
            let now = quotas_now(dry).ok_or_else(missing_state)?;
            let req = &pod.requests;
            if now.get(pod.namespace).is_some_and(|q| q.used_over_max_with(req))
                || now.aggregated_used_over_min_with(req)
            {
                return Err(Status::unschedulable("global quota max exceeded"));
            }
        }
        preemption::reprieve(dry, potential, pdbs, within_quota)
    }
}
