//! Events as kube-scheduler's recorder publishes them (events.k8s.io/v1): the first
//! occurrence is created, a repeat within six minutes bumps the first one's `series`.
//! kube-runtime's `Recorder` does the same but scans its whole cache on every event,
//! which is quadratic in the pods scheduled within six minutes; this cache expires in
//! arrival order, a constant amount of work per event.
//!
//! Events leave the scheduling and binding threads in batches through a channel: one
//! task ([`publish`]) prepares and sends them, a bounded number at a time, as
//! client-go's broadcaster does on its own goroutine — no task per event. The API
//! server's echo of a created Event is not parsed: its name is the one this recorder
//! chose, and only the HTTP status tells whether it was stored.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::Arc;

use ahash::AHashMap;

use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Resource;
use kube::api::{Patch, PatchParams};
use kube::core::Request;
use parking_lot::Mutex;

use super::writer::{json_str, send_for_status};

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

/// A published event: its name (in its key's namespace) and how often it occurred.
struct Seen {
    name: String,
    count: i32,
    last: Timestamp,
}

#[derive(Default)]
struct Cache {
    /// By key, shared with `order` (one allocation per event instead of a copy of the
    /// key's three strings).
    seen: AHashMap<Arc<Key>, Seen>,
    /// Keys in the order they were last published (a key published again is queued
    /// again; the stale entry is dropped when it reaches the front).
    order: VecDeque<(Timestamp, Arc<Key>)>,
}

impl Cache {
    /// Forgets the events last seen more than [`CACHE_TTL`] before `now`.
    fn expire(&mut self, now: Timestamp) {
        while let Some((at, _)) = self.order.front() {
            if *at + CACHE_TTL > now {
                break;
            }
            let Some((at, key)) = self.order.pop_front() else { break };
            if self.seen.get(&*key).is_some_and(|s| s.last == at) {
                self.seen.remove(&*key);
            }
        }
    }
}

/// What to send for one event.
pub(super) enum Publish {
    /// A new Event object.
    Create(NewEvent),
    /// A repeat: the series of the Event `name` in the key's namespace.
    Series { name: String, count: i32, last: Timestamp },
}

/// A new Event as [`Recorder::prepare`] decided it; the pod it is about is the
/// [`Key`]'s (namespace, name, uid).
pub(super) struct NewEvent {
    name: String,
    note: String,
    time: Timestamp,
}

/// A `MicroTime` as k8s-openapi writes it (`%Y-%m-%dT%H:%M:%S%.6fZ`, UTC), formatted
/// by hand: jiff's `strtime` parses its format string on every call, which was a
/// fifth of an Event's cost. Times before 1970 or after 9999 go through jiff.
enum MicroTimeText {
    Fast([u8; 27]),
    Jiff(String),
}

impl MicroTimeText {
    fn new(t: Timestamp) -> Self {
        let secs = t.as_second();
        if !(0..253_402_300_800).contains(&secs) {
            let text =
                k8s_openapi::jiff::fmt::strtime::format("%Y-%m-%dT%H:%M:%S%.6fZ", t).unwrap_or_else(|_| t.to_string());
            return MicroTimeText::Jiff(text);
        }
        let (days, rem) = (secs / 86_400, secs % 86_400);
        let (year, month, day) = crate::model::timestamp::civil_from_days(days);
        let micros = i64::from(t.subsec_microsecond());
        let mut b = *b"0000-00-00T00:00:00.000000Z";
        let mut put = |at: usize, width: usize, mut v: i64| {
            for i in (at..at + width).rev() {
                b[i] = b'0' + (v % 10) as u8;
                v /= 10;
            }
        };
        put(0, 4, year);
        put(5, 2, month);
        put(8, 2, day);
        put(11, 2, rem / 3600);
        put(14, 2, rem / 60 % 60);
        put(17, 2, rem % 60);
        put(20, 6, micros);
        MicroTimeText::Fast(b)
    }

    fn as_str(&self) -> &str {
        match self {
            // Only ASCII digits and separators are written.
            MicroTimeText::Fast(b) => std::str::from_utf8(b).unwrap_or_default(),
            MicroTimeText::Jiff(s) => s,
        }
    }
}

#[cfg(test)]
impl serde::Serialize for MicroTimeText {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The body of a series patch (`{"series": ...}`), typed.
#[derive(serde::Serialize)]
struct SeriesPatch {
    series: EventSeries,
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

    /// Decides what to send for an event about the pod `e` names (namespace, name and
    /// uid, the uid empty when unknown).
    pub(super) fn prepare(&self, e: Pending) -> (Key, Publish) {
        let now = Timestamp::now();
        let key = Key {
            warning: e.warning,
            reason: e.reason,
            action: e.action,
            namespace: e.namespace,
            name: e.name,
            uid: e.uid,
        };
        let mut cache = self.cache.lock();
        cache.expire(now);
        if let Some(s) = cache.seen.get(&key) {
            let publish = Publish::Series { name: s.name.clone(), count: s.count + 1, last: now };
            return (key, publish);
        }
        drop(cache);
        // `<pod>.<nanoseconds in hex>`, as `format!("{}.{:x}")` wrote it.
        let mut name = String::with_capacity(key.name.len() + 34);
        name.push_str(&key.name);
        name.push('.');
        let _ = write!(name, "{:x}", now.as_nanosecond());
        (key, Publish::Create(NewEvent { name, note: e.note, time: now }))
    }

    /// The JSON body of a new Event: the same bytes k8s-openapi's `events.k8s.io/v1`
    /// `Event` gives for the fields this recorder sets (keys in its order, no uid on
    /// the pod's reference when empty), written from borrowed fields with the fixed
    /// text as literals ([`json_str`]).
    fn body(&self, key: &Key, e: &NewEvent) -> Vec<u8> {
        // Room for the whole body up front (the fixed part is under 320 bytes), so
        // the buffer is not regrown while it is written.
        let text = e.note.len() + e.name.len() + 2 * (key.namespace.len() + key.name.len() + self.controller.len());
        let mut b = Vec::with_capacity(320 + text + key.uid.len());
        b.extend_from_slice(br#"{"apiVersion":"events.k8s.io/v1","kind":"Event","action":"#);
        json_str(&mut b, key.action);
        b.extend_from_slice(br#","eventTime":"#);
        json_str(&mut b, MicroTimeText::new(e.time).as_str());
        b.extend_from_slice(br#","metadata":{"name":"#);
        json_str(&mut b, &e.name);
        b.extend_from_slice(br#","namespace":"#);
        json_str(&mut b, &key.namespace);
        b.extend_from_slice(br#"},"note":"#);
        json_str(&mut b, &e.note);
        b.extend_from_slice(br#","reason":"#);
        json_str(&mut b, key.reason);
        b.extend_from_slice(br#","regarding":{"apiVersion":"v1","kind":"Pod","name":"#);
        json_str(&mut b, &key.name);
        b.extend_from_slice(br#","namespace":"#);
        json_str(&mut b, &key.namespace);
        if !key.uid.is_empty() {
            b.extend_from_slice(br#","uid":"#);
            json_str(&mut b, &key.uid);
        }
        b.extend_from_slice(br#"},"reportingController":"#);
        json_str(&mut b, &self.controller);
        b.extend_from_slice(br#","reportingInstance":"#);
        json_str(&mut b, &self.controller);
        b.extend_from_slice(if key.warning { br#","type":"Warning"}"# } else { br#","type":"Normal"}"# });
        b
    }

    /// The create POST of a new Event, written directly as [`KubeBinder`]'s binding
    /// is: the same URL and header kube's `Request::create` gives (`…/events?`, no
    /// query parameters), without its generic path and query builders.
    ///
    /// [`KubeBinder`]: super::KubeBinder
    fn create(&self, key: &Key, e: &NewEvent) -> Result<http::Request<Vec<u8>>, kube::Error> {
        let body = self.body(key, e);
        let mut url = String::with_capacity(48 + key.namespace.len());
        url.push_str("/apis/events.k8s.io/v1/namespaces/");
        url.push_str(&key.namespace);
        url.push_str("/events?");
        http::Request::post(url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body)
            .map_err(kube::Error::HttpError)
    }

    /// Sends it; once the API server accepted it, the event is remembered for its
    /// series. A failure is logged.
    pub(super) async fn send(&self, client: &kube::Client, key: Key, publish: Publish) {
        match self.request(client, &key, publish).await {
            Ok(seen) => {
                let key = Arc::new(key);
                let mut cache = self.cache.lock();
                cache.order.push_back((seen.last, key.clone()));
                cache.seen.insert(key, seen);
            }
            Err(err) => log::warn!("event {} for pod {}: {err}", key.reason, key.name),
        }
    }

    /// The request for `publish`; what to remember once it was accepted.
    async fn request(&self, client: &kube::Client, key: &Key, publish: Publish) -> Result<Seen, kube::Error> {
        Ok(match publish {
            Publish::Create(event) => {
                let req = self.create(key, &event)?;
                // The answer is the Event as stored, under the name chosen here: only
                // its HTTP status matters, so it is not parsed.
                send_for_status(client, req).await?;
                Seen { name: event.name, count: 1, last: event.time }
            }
            Publish::Series { name, count, last } => {
                let series = EventSeries { count, last_observed_time: MicroTime(last) };
                let req = Request::new(Event::url_path(&(), Some(&key.namespace)))
                    .patch(&name, &PatchParams::default(), &Patch::Merge(SeriesPatch { series }))
                    .map_err(kube::Error::BuildRequest)?;
                send_for_status(client, req).await?;
                Seen { name, count, last }
            }
        })
    }
}

/// One event to publish, as the scheduling or binding thread hands it over: about
/// the pod `namespace`/`name` (`uid` empty when unknown).
pub(super) struct Pending {
    pub(super) warning: bool,
    pub(super) reason: &'static str,
    pub(super) action: &'static str,
    pub(super) note: String,
    pub(super) namespace: String,
    pub(super) name: String,
    pub(super) uid: String,
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
    recorder: Arc<Recorder>,
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
                        let (key, publish) = recorder.prepare(e);
                        recorder.send(client, key, publish).await;
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
        Seen { name: "e".into(), count: 1, last }
    }

    #[test]
    fn events_expire_six_minutes_after_they_were_last_seen() {
        let t0 = Timestamp::from_second(1_000_000).unwrap();
        let mut cache = Cache::default();
        for (i, name) in ["a", "b"].into_iter().enumerate() {
            let at = t0 + SignedDuration::from_secs(i as i64 * 60);
            cache.order.push_back((at, Arc::new(key(name))));
            cache.seen.insert(Arc::new(key(name)), seen(at));
        }
        // "a" again four minutes later: its first queue entry is stale.
        let again = t0 + SignedDuration::from_mins(4);
        cache.order.push_back((again, Arc::new(key("a"))));
        cache.seen.insert(Arc::new(key("a")), seen(again));
        cache.expire(t0 + SignedDuration::from_mins(6));
        assert!(cache.seen.contains_key(&key("a")) && cache.seen.contains_key(&key("b")));
        cache.expire(t0 + SignedDuration::from_mins(7));
        assert!(cache.seen.contains_key(&key("a")) && !cache.seen.contains_key(&key("b")));
        cache.expire(t0 + SignedDuration::from_mins(10));
        assert!(cache.seen.is_empty() && cache.order.is_empty());
    }

    #[test]
    fn micro_time_is_written_as_k8s_openapi_writes_it() {
        let mut samples = vec![0, 1, 59, 86_399, 86_400, 951_782_400, 1_740_823_200, 4_107_542_399, 253_402_207_199];
        samples.extend((0..2_000).map(|i: i64| i * 123_456_789 + 7));
        for secs in samples {
            for nanos in [0, 1, 999, 1_000, 123_456_789, 999_999_999] {
                let t = Timestamp::new(secs, nanos).unwrap();
                let ours = serde_json::to_string(&MicroTimeText::new(t)).unwrap();
                assert_eq!(ours, serde_json::to_string(&MicroTime(t)).unwrap(), "{secs}.{nanos}");
            }
        }
        let before_1970 = Timestamp::new(-86_401, 5_000).unwrap();
        assert_eq!(
            serde_json::to_string(&MicroTimeText::new(before_1970)).unwrap(),
            serde_json::to_string(&MicroTime(before_1970)).unwrap()
        );
    }

    /// The body written from borrowed fields is byte for byte the k8s-openapi Event
    /// this recorder used to build.
    #[test]
    fn event_body_is_the_k8s_openapi_event() {
        use k8s_openapi::api::core::v1::ObjectReference;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
        let recorder = Recorder::new("schedkit");
        for (warning, uid) in [(false, "uid-1"), (true, "")] {
            let pending = Pending {
                warning,
                reason: if warning { "FailedScheduling" } else { "Scheduled" },
                action: if warning { "Scheduling" } else { "Binding" },
                note: "Successfully assigned default/p \"x\" to n1".into(),
                namespace: "default".into(),
                name: "p".into(),
                uid: uid.into(),
            };
            let (key, Publish::Create(e)) = recorder.prepare(pending) else { panic!("a new event") };
            let event = Event {
                action: Some(key.action.to_owned()),
                reason: Some(key.reason.to_owned()),
                event_time: Some(MicroTime(e.time)),
                note: Some(e.note.clone()),
                metadata: ObjectMeta {
                    namespace: Some(key.namespace.clone()),
                    name: Some(e.name.clone()),
                    ..ObjectMeta::default()
                },
                regarding: Some(ObjectReference {
                    api_version: Some("v1".into()),
                    kind: Some("Pod".into()),
                    name: Some(key.name.clone()),
                    namespace: Some(key.namespace.clone()),
                    uid: (!key.uid.is_empty()).then(|| key.uid.clone()),
                    ..ObjectReference::default()
                }),
                reporting_controller: Some("schedkit".into()),
                reporting_instance: Some("schedkit".into()),
                type_: Some(if warning { "Warning" } else { "Normal" }.to_owned()),
                ..Event::default()
            };
            let ours = recorder.body(&key, &e);
            assert_eq!(String::from_utf8(ours).unwrap(), serde_json::to_string(&event).unwrap());
        }
    }

    #[test]
    fn series_patch_is_the_json_object_it_was() {
        let t = Timestamp::new(1_740_823_200, 5_000).unwrap();
        let series = EventSeries { count: 3, last_observed_time: MicroTime(t) };
        let old = serde_json::to_string(&serde_json::json!({ "series": series.clone() })).unwrap();
        assert_eq!(serde_json::to_string(&SeriesPatch { series }).unwrap(), old);
    }

    /// The create request is the one kube's `Request::create` built.
    #[test]
    fn event_create_is_kubes_create() {
        use kube::api::PostParams;
        let recorder = Recorder::new("schedkit");
        let pending = Pending {
            warning: false,
            reason: "Scheduled",
            action: "Binding",
            note: "Successfully assigned team-a/p to n1".into(),
            namespace: "team-a".into(),
            name: "p".into(),
            uid: "uid-p".into(),
        };
        let (key, Publish::Create(e)) = recorder.prepare(pending) else { panic!("a new event") };
        let ours = recorder.create(&key, &e).unwrap();
        let kubes = Request::new(Event::url_path(&(), Some(&key.namespace)))
            .create(&PostParams::default(), recorder.body(&key, &e))
            .unwrap();
        assert_eq!((ours.method(), ours.uri()), (kubes.method(), kubes.uri()));
        assert_eq!(ours.headers(), kubes.headers());
        assert_eq!(ours.body(), kubes.body());
    }
}
