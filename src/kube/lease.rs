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
            let duration =
                spec.lease_duration_seconds.map_or(self.lease_duration, |s| Duration::from_secs(s.max(0) as u64));
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

impl LeaderElection {
    /// From a configuration file's `leaderElection` (defaulted: see
    /// [`KubeSchedulerConfiguration::defaulted`](crate::config::KubeSchedulerConfiguration::defaulted)),
    /// as `identity`; `None` when `leaderElect` is false. Unset durations and names
    /// take kube-scheduler's defaults.
    pub fn from_config(c: &crate::config::LeaderElectionConfiguration, identity: &str) -> Result<Option<Self>, String> {
        if c.leader_elect == Some(false) {
            return Ok(None);
        }
        let or = |s: &str, d: &str| if s.is_empty() { d.to_owned() } else { s.to_owned() };
        let mut le = LeaderElection::new(
            &or(&c.resource_namespace, "kube-system"),
            &or(&c.resource_name, "kube-scheduler"),
            identity,
        );
        let duration = |field: &str, text: &str, default: Duration| -> Result<Duration, String> {
            if text.is_empty() {
                return Ok(default);
            }
            let nanos = crate::selector::parse_go_duration(text).map_err(|e| format!("leaderElection.{field}: {e}"))?;
            u64::try_from(nanos)
                .map(Duration::from_nanos)
                .map_err(|_| format!("leaderElection.{field}: {text:?} is negative"))
        };
        le.lease_duration = duration("leaseDuration", &c.lease_duration, le.lease_duration)?;
        le.renew_deadline = duration("renewDeadline", &c.renew_deadline, le.renew_deadline)?;
        le.retry_period = duration("retryPeriod", &c.retry_period, le.retry_period)?;
        Ok(Some(le))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_config_reads_kube_scheduler_defaults_and_durations() {
        let mut c = crate::config::LeaderElectionConfiguration::default();
        let le = LeaderElection::from_config(&c, "me").unwrap().unwrap();
        assert_eq!(le, LeaderElection::new("kube-system", "kube-scheduler", "me"));
        c.lease_duration = "1m30s".into();
        c.resource_name = "schedkit".into();
        let le = LeaderElection::from_config(&c, "me").unwrap().unwrap();
        assert_eq!((le.name.as_str(), le.lease_duration), ("schedkit", Duration::from_secs(90)));
        c.retry_period = "soon".into();
        assert!(LeaderElection::from_config(&c, "me").unwrap_err().starts_with("leaderElection.retryPeriod:"));
        c.leader_elect = Some(false);
        assert_eq!(LeaderElection::from_config(&c, "me"), Ok(None));
    }
}
