//! Leader election on a coordination.k8s.io/v1 Lease, with client-go's
//! `leaderelection` rules (`tools/leaderelection/leaderelection.go`): a lease held by
//! another identity is taken only after `leaseDurationSeconds` without renewal; the
//! holder renews every retry period and gives up when it could not renew within the
//! renew deadline. Writes carry the lease's resourceVersion, so two candidates never
//! both win a round.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::PostParams;

/// Where and how to elect a leader. The defaults are kube-scheduler's
/// (`leaderElection` in KubeSchedulerConfiguration v1: 15 s lease, 10 s renew deadline,
/// 2 s retry period), with the lease named after the scheduler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderElection {
    /// The Lease's namespace (`kube-system` for kube-scheduler).
    pub namespace: String,
    /// The Lease's name.
    pub name: String,
    /// This replica's identity (kube-scheduler: hostname plus a random suffix).
    pub identity: String,
    /// How long a lease lasts without renewal.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it stops leading.
    pub renew_deadline: Duration,
    /// How often candidates retry and the leader renews.
    pub retry_period: Duration,
}

impl LeaderElection {
    /// kube-scheduler's timings for lease `namespace/name` held as `identity`.
    pub fn new(namespace: &str, name: &str, identity: &str) -> Self {
        LeaderElection {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            identity: identity.to_owned(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// One round of `tryAcquireOrRenew`: `Ok(true)` when this identity holds the lease
    /// afterwards.
    pub async fn try_acquire_or_renew(&self, client: &kube::Client) -> Result<bool, kube::Error> {
        let api: Api<Lease> = Api::namespaced(client.clone(), &self.namespace);
        let now = MicroTime(Timestamp::now());
        let secs = i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX);
        let Some(mut lease) = api.get_opt(&self.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta { name: Some(self.name.clone()), ..ObjectMeta::default() },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.identity.clone()),
                    lease_duration_seconds: Some(secs),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            return match api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                Err(e) => Err(e),
            };
        };
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        let held_by_us = spec.holder_identity.as_deref() == Some(self.identity.as_str());
        if !held_by_us {
            let duration = spec.lease_duration_seconds.map_or(self.lease_duration, |s| Duration::from_secs(s.max(0) as u64));
            let renewed = spec.renew_time.as_ref().map(|t| t.0);
            let expired = renewed.is_none_or(|t| {
                let age = Timestamp::now().duration_since(t);
                spec.holder_identity.as_deref().is_none_or(str::is_empty)
                    || age.as_secs() >= i64::try_from(duration.as_secs()).unwrap_or(i64::MAX)
            });
            if !expired {
                return Ok(false);
            }
            spec.holder_identity = Some(self.identity.clone());
            spec.acquire_time = Some(now.clone());
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        }
        spec.lease_duration_seconds = Some(secs);
        spec.renew_time = Some(now);
        match api.replace(&self.name, &PostParams::default(), &lease).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }
}
