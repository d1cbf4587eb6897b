//! Events as kube-scheduler's recorder publishes them (events.k8s.io/v1): the first
//! occurrence is created, a repeat within six minutes bumps the first one's `series`.
//! kube-runtime's `Recorder` does the same but scans its whole cache on every event,
//! which is quadratic in the pods scheduled within six minutes; this cache expires in
//! arrival order, a constant amount of work per event.
//!
//! Events leave the scheduling and binding threads in batches through a channel: one
//! task ([`publish`]) prepares and sends them, a bounded number at a time, as
//! client-go's broadcaster does on its own goroutine — no task per event. The API
//! server's echo of a created Event is not decoded: its name is the one this recorder
//! chose.

use std::collections::{HashMap, VecDeque};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Resource;
use kube::api::{Patch, PatchParams, PostParams};
use kube::core::Request;
use parking_lot::Mutex;
use serde::de::IgnoredAny;
use serde_json::json;

/// How long an event is remembered for its series (kube-runtime's `CACHE_TTL`, the
/// six minutes of client-go's events recorder).
const CACHE_TTL: SignedDuration = SignedDuration::from_mins(6);

/// What makes two events the same (kube-runtime's `EventKey`: type, action, reason and
/// the object; the reporter is this recorder's, and no related object is ever set).
#[derive(Clone, PartialEq, Eq, Hash)]
pub(super) struct Key {
    warning: bool,
    reason: &'static str,
    action: &'static str,
    namespace: String,
    name: String,
    uid: String,
}

/// A published event: its name and how often it occurred.
struct Seen {
    name: String,
    namespace: String,
    count: i32,
    last: Timestamp,
}

#[derive(Default)]
struct Cache {
    seen: HashMap<Key, Seen>,
    /// Keys in the order they were last published (a key published again is queued
    /// again; the stale entry is dropped when it reaches the front).
    order: VecDeque<(Timestamp, Key)>,
}

impl Cache {
    /// Forgets the events last seen more than [`CACHE_TTL`] before `now`.
    fn expire(&mut self, now: Timestamp) {
        while let Some((at, _)) = self.order.front() {
            if *at + CACHE_TTL > now {
                break;
            }
            let Some((at, key)) = self.order.pop_front() else { break };
            if self.seen.get(&key).is_some_and(|s| s.last == at) {
                self.seen.remove(&key);
            }
        }
    }
}

/// What to send for one event.
pub(super) enum Publish {
    /// A new Event object.
    Create(Box<Event>),
    /// A repeat: the series of the Event `name` in `namespace`.
    Series { name: String, namespace: String, count: i32, last: Timestamp },
}

/// The events of one reporter (`reportingController`, also its instance).
pub(super) struct Recorder {
    controller: String,
    cache: Mutex<Cache>,
}

impl Recorder {
    pub(super) fn new(controller: &str) -> Self {
        Recorder { controller: controller.to_owned(), cache: Mutex::default() }
    }

    /// Decides what to send for an event about `regarding` (a pod: namespace, name
    /// and uid set).
    pub(super) fn prepare(
        &self,
        warning: bool,
        reason: &'static str,
        action: &'static str,
        note: String,
        regarding: ObjectReference,
    ) -> (Key, Publish) {
        let now = Timestamp::now();
        let key = Key {
            warning,
            reason,
            action,
            namespace: regarding.namespace.clone().unwrap_or_default(),
            name: regarding.name.clone().unwrap_or_default(),
            uid: regarding.uid.clone().unwrap_or_default(),
        };
        let mut cache = self.cache.lock();
        cache.expire(now);
        if let Some(s) = cache.seen.get(&key) {
            let publish =
                Publish::Series { name: s.name.clone(), namespace: s.namespace.clone(), count: s.count + 1, last: now };
            return (key, publish);
        }
        drop(cache);
        let name = format!("{}.{:x}", key.name, now.as_nanosecond());
        let event = Event {
            action: Some(action.to_owned()),
            reason: Some(reason.to_owned()),
            event_time: Some(MicroTime(now)),
            note: Some(note),
            metadata: ObjectMeta { namespace: Some(key.namespace.clone()), name: Some(name), ..ObjectMeta::default() },
            regarding: Some(regarding),
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.controller.clone()),
            type_: Some(if warning { "Warning" } else { "Normal" }.to_owned()),
            ..Event::default()
        };
        (key, Publish::Create(Box::new(event)))
    }

    /// Sends it; once the API server accepted it, the event is remembered for its series.
    pub(super) async fn send(&self, client: &kube::Client, key: Key, publish: Publish) -> Result<(), kube::Error> {
        let seen = match publish {
            Publish::Create(event) => {
                let url = Event::url_path(&(), Some(&key.namespace));
                let body = serde_json::to_vec(&event).map_err(kube::Error::SerdeError)?;
                let req = Request::new(url).create(&PostParams::default(), body).map_err(kube::Error::BuildRequest)?;
                // The answer is the Event as stored, under the name chosen here.
                client.request::<IgnoredAny>(req).await?;
                let last = event.event_time.map_or_else(Timestamp::now, |t| t.0);
                Seen { name: event.metadata.name.unwrap_or_default(), namespace: key.namespace.clone(), count: 1, last }
            }
            Publish::Series { name, namespace, count, last } => {
                let series = EventSeries { count, last_observed_time: MicroTime(last) };
                let req = Request::new(Event::url_path(&(), Some(&namespace)))
                    .patch(&name, &PatchParams::default(), &Patch::Merge(json!({ "series": series })))
                    .map_err(kube::Error::BuildRequest)?;
                client.request::<IgnoredAny>(req).await?;
                Seen { name, namespace, count, last }
            }
        };
        let mut cache = self.cache.lock();
        let at = seen.last;
        cache.order.push_back((at, key.clone()));
        cache.seen.insert(key, seen);
        Ok(())
    }
}

/// One event to publish, as the scheduling or binding thread hands it over.
pub(super) struct Pending {
    pub(super) warning: bool,
    pub(super) reason: &'static str,
    pub(super) action: &'static str,
    pub(super) note: String,
    pub(super) regarding: ObjectReference,
}

/// Events sent at once by [`publish`] (each is one request; the API server has no
/// batch create).
const IN_FLIGHT: usize = 16;

/// Publishes what the reporting threads hand over on `rx`, in batches, until every
/// sender is gone: each event is prepared here (its name, time and series decided off
/// the threads that report them) and sent, as is each status patch, at most
/// [`IN_FLIGHT`] requests at a time. A failed send is logged.
pub(super) async fn publish(
    client: kube::Client,
    recorder: std::sync::Arc<Recorder>,
    rx: tokio::sync::mpsc::UnboundedReceiver<Vec<super::writer::Outgoing>>,
) {
    use super::writer::Outgoing;
    use futures::StreamExt;
    let batches = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) });
    batches
        .flat_map(futures::stream::iter)
        .for_each_concurrent(IN_FLIGHT, |o| {
            let (client, recorder) = (&client, &recorder);
            async move {
                match o {
                    Outgoing::Event(e) => {
                        let name = e.regarding.name.clone().unwrap_or_default();
                        let reason = e.reason;
                        let (key, publish) = recorder.prepare(e.warning, e.reason, e.action, e.note, e.regarding);
                        if let Err(err) = recorder.send(client, key, publish).await {
                            log::warn!("event {reason} for pod {name}: {err}");
                        }
                    }
                    Outgoing::Status { namespace, name, status } => {
                        super::writer::patch_status(client, &namespace, &name, status).await;
                    }
                }
            }
        })
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> Key {
        Key {
            warning: false,
            reason: "Scheduled",
            action: "Binding",
            namespace: "default".into(),
            name: name.into(),
            uid: String::new(),
        }
    }

    fn seen(last: Timestamp) -> Seen {
        Seen { name: "e".into(), namespace: "default".into(), count: 1, last }
    }

    #[test]
    fn events_expire_six_minutes_after_they_were_last_seen() {
        let t0 = Timestamp::from_second(1_000_000).unwrap();
        let mut cache = Cache::default();
        for (i, name) in ["a", "b"].into_iter().enumerate() {
            let at = t0 + SignedDuration::from_secs(i as i64 * 60);
            cache.order.push_back((at, key(name)));
            cache.seen.insert(key(name), seen(at));
        }
        // "a" again four minutes later: its first queue entry is stale.
        let again = t0 + SignedDuration::from_mins(4);
        cache.order.push_back((again, key("a")));
        cache.seen.insert(key("a"), seen(again));
        cache.expire(t0 + SignedDuration::from_mins(6));
        assert!(cache.seen.contains_key(&key("a")) && cache.seen.contains_key(&key("b")));
        cache.expire(t0 + SignedDuration::from_mins(7));
        assert!(cache.seen.contains_key(&key("a")) && !cache.seen.contains_key(&key("b")));
        cache.expire(t0 + SignedDuration::from_mins(10));
        assert!(cache.seen.is_empty() && cache.order.is_empty());
    }
}
