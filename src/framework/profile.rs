//! Profiles: which plugin runs at which extension point, with what Score weight
//! (upstream `KubeSchedulerProfile` and `frameworkImpl`), built in code or from a
//! serde config through a [`Registry`] of plugin factories.

use std::sync::Arc;

use super::interface::{
    BindPlugin, EnqueueExtensions, ExtensionPoint, ExtensionPoints, FilterPlugin, NodeObserver, PermitPlugin, Plugin,
    PodObserver, PostBindPlugin, PostFilterPlugin, PreBindPlugin, PreEnqueuePlugin, PreFilterPlugin, PreScorePlugin,
    QueueSortPlugin, ReservePlugin, ScorePlugin,
};
use super::{FeatureGates, SignPlugin};
use crate::model::Symbol;

/// A profile that could not be built, saying which plugin and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The registry has no plugin of this name.
    #[error("profile {profile:?}: unknown plugin {name:?} (known: {known})")]
    UnknownPlugin {
        /// Profile (scheduler) name.
        profile: String,
        /// The name asked for.
        name: String,
        /// Registered names, comma-separated.
        known: String,
    },
    /// A plugin name appears twice.
    #[error("profile {profile:?}: plugin {name:?} is registered twice")]
    DuplicatePlugin {
        /// Profile name.
        profile: String,
        /// Plugin name.
        name: String,
    },
    /// A Score weight outside `1..=`[`MAX_WEIGHT`].
    #[error("profile {profile:?}: plugin {name:?} has score weight {weight}; weights must be in 1..={max}", max = MAX_WEIGHT)]
    InvalidWeight {
        /// Profile name.
        profile: String,
        /// Plugin name.
        name: String,
        /// The weight given.
        weight: i64,
    },
    /// A plugin was enabled at a point it doesn't implement.
    #[error("profile {profile:?}: plugin {name:?} does not implement extension point {point}")]
    PointNotImplemented {
        /// Profile name.
        profile: String,
        /// Plugin name.
        name: String,
        /// Upstream spelling of the point.
        point: &'static str,
    },
    /// More than one QueueSort plugin.
    #[error("profile {profile:?}: only one queueSort plugin may be enabled, got {names:?}")]
    MultipleQueueSort {
        /// Profile name.
        profile: String,
        /// The plugins.
        names: Vec<String>,
    },
    /// `percentageOfNodesToScore` outside 0..=100.
    #[error("profile {profile:?}: percentageOfNodesToScore must be in 0..=100, got {value}")]
    InvalidPercentage {
        /// Profile name.
        profile: String,
        /// The value given.
        value: i64,
    },
    /// A plugin's factory rejected its arguments.
    #[error("profile {profile:?}: plugin {name:?} has invalid args: {message}")]
    InvalidArgs {
        /// Profile name.
        profile: String,
        /// Plugin name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The same plugin name registered twice in a registry.
    #[error("registry: a factory named {0:?} is already registered")]
    DuplicateFactory(String),
}

/// Largest Score weight: upstream caps the weighted sum so it can't overflow; a
/// weight times [`super::MAX_NODE_SCORE`] times the plugin count must fit in `i64`.
pub const MAX_WEIGHT: i64 = 1_000_000;

/// A plugin at one extension point, with its interned name.
pub struct Named<P: ?Sized> {
    /// Name, interned (`'static` so statuses can carry it without allocating).
    pub name: &'static str,
    /// The plugin.
    pub plugin: Arc<P>,
}

impl<P: ?Sized> Clone for Named<P> {
    fn clone(&self) -> Self {
        Named { name: self.name, plugin: self.plugin.clone() }
    }
}

/// A Score plugin with its weight.
#[derive(Clone)]
pub struct WeightedScore {
    /// Name.
    pub name: &'static str,
    /// The plugin.
    pub plugin: Arc<dyn ScorePlugin>,
    /// Weight (>= 1).
    pub weight: i64,
}

/// Which plugins run at which extension point, in order, resolved once when built.
///
/// ```
/// use schedkit::framework::{Profile, ScoreFn};
/// let p = Profile::builder("gpu-scheduler")
///     .weighted(ScoreFn::new("Pack", |_, _, n| n.requested().milli_cpu.min(100)), 3)
///     .percentage_of_nodes_to_score(100)
///     .build()
///     .unwrap();
/// assert_eq!(p.score_plugins(), [("Pack", 3)]);
/// ```
#[derive(Clone)]
pub struct Profile {
    pub(crate) name: String,
    pub(crate) pre_enqueue: Vec<Named<dyn PreEnqueuePlugin>>,
    pub(crate) queue_sort: Option<Named<dyn QueueSortPlugin>>,
    pub(crate) pre_filter: Vec<Named<dyn PreFilterPlugin>>,
    /// For each PreFilter plugin, the position of the same plugin's Filter.
    pub(crate) pre_filter_to_filter: Vec<Option<usize>>,
    pub(crate) filter: Vec<Named<dyn FilterPlugin>>,
    pub(crate) post_filter: Vec<Named<dyn PostFilterPlugin>>,
    pub(crate) pre_score: Vec<Named<dyn PreScorePlugin>>,
    pub(crate) pre_score_to_score: Vec<Option<usize>>,
    pub(crate) score: Vec<WeightedScore>,
    pub(crate) reserve: Vec<Named<dyn ReservePlugin>>,
    pub(crate) permit: Vec<Named<dyn PermitPlugin>>,
    pub(crate) pre_bind: Vec<Named<dyn PreBindPlugin>>,
    pub(crate) bind: Vec<Named<dyn BindPlugin>>,
    pub(crate) post_bind: Vec<Named<dyn PostBindPlugin>>,
    pub(crate) enqueue: Vec<Named<dyn EnqueueExtensions>>,
    pub(crate) pod_observer: Vec<Named<dyn PodObserver>>,
    pub(crate) node_observer: Vec<Named<dyn NodeObserver>>,
    pub(crate) percentage_of_nodes_to_score: Option<u32>,
    /// Plugins signing pods for opportunistic batching, in registration order.
    pub(crate) sign: Vec<Named<dyn SignPlugin>>,
    /// Plugins at PreFilter, Filter, PreScore or Score that don't sign: any makes
    /// the profile's pods unsigned (upstream: batching off for everyone).
    pub(crate) batching_blockers: Vec<&'static str>,
    /// The profile's own `OpportunisticBatching` setting; `None` follows the gate.
    pub(crate) opportunistic_batching: Option<bool>,
    /// v1.37-style rescoring of the last chosen node (schedkit, off by default).
    pub(crate) batch_rescoring: bool,
    /// v1.36 pod-group placement generators, in order.
    pub(crate) placement_generate: Vec<Named<dyn super::PlacementGeneratePlugin>>,
    /// v1.36 pod-group placement scorers with their weights.
    pub(crate) placement_score: Vec<(Named<dyn super::PlacementScorePlugin>, i64)>,
}

impl std::fmt::Debug for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Profile")
            .field("name", &self.name)
            .field("pre_filter", &self.pre_filter_plugins())
            .field("filter", &self.filter_plugins())
            .field("score", &self.score_plugins())
            .finish_non_exhaustive()
    }
}

fn names<P: ?Sized>(v: &[Named<P>]) -> Vec<&'static str> {
    v.iter().map(|n| n.name).collect()
}

impl Profile {
    /// Starts a profile for pods whose `schedulerName` is `name`.
    pub fn builder(name: &str) -> ProfileBuilder {
        ProfileBuilder {
            name: name.to_owned(),
            entries: Vec::new(),
            percentage: None,
            batching: None,
            rescoring: false,
            error: None,
        }
    }

    /// The scheduler name pods use to pick this profile.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Per-profile `percentageOfNodesToScore`, if set.
    pub fn percentage_of_nodes_to_score(&self) -> Option<u32> {
        self.percentage_of_nodes_to_score
    }

    /// PreEnqueue plugins in order.
    pub fn pre_enqueue_plugins(&self) -> Vec<&'static str> {
        names(&self.pre_enqueue)
    }
    /// The QueueSort plugin.
    pub fn queue_sort_plugin(&self) -> Option<&'static str> {
        self.queue_sort.as_ref().map(|n| n.name)
    }
    /// PreFilter plugins in order.
    pub fn pre_filter_plugins(&self) -> Vec<&'static str> {
        names(&self.pre_filter)
    }
    /// Filter plugins in order.
    pub fn filter_plugins(&self) -> Vec<&'static str> {
        names(&self.filter)
    }
    /// PostFilter plugins in order.
    pub fn post_filter_plugins(&self) -> Vec<&'static str> {
        names(&self.post_filter)
    }
    /// PreScore plugins in order.
    pub fn pre_score_plugins(&self) -> Vec<&'static str> {
        names(&self.pre_score)
    }
    /// Score plugins with weights.
    pub fn score_plugins(&self) -> Vec<(&'static str, i64)> {
        self.score.iter().map(|s| (s.name, s.weight)).collect()
    }
    /// Reserve plugins in order.
    pub fn reserve_plugins(&self) -> Vec<&'static str> {
        names(&self.reserve)
    }
    /// Permit plugins in order.
    pub fn permit_plugins(&self) -> Vec<&'static str> {
        names(&self.permit)
    }
    /// PreBind plugins in order.
    pub fn pre_bind_plugins(&self) -> Vec<&'static str> {
        names(&self.pre_bind)
    }
    /// Bind plugins in order.
    pub fn bind_plugins(&self) -> Vec<&'static str> {
        names(&self.bind)
    }
    /// PostBind plugins in order.
    pub fn post_bind_plugins(&self) -> Vec<&'static str> {
        names(&self.post_bind)
    }
    /// PlacementGenerate plugins in order.
    pub fn placement_generate_plugins(&self) -> Vec<&'static str> {
        names(&self.placement_generate)
    }
    /// PlacementScore plugins with weights.
    pub fn placement_score_plugins(&self) -> Vec<(&'static str, i64)> {
        self.placement_score.iter().map(|(n, w)| (n.name, *w)).collect()
    }
    /// Plugins declaring cluster events.
    pub fn enqueue_extensions(&self) -> &[Named<dyn EnqueueExtensions>] {
        &self.enqueue
    }
    /// Plugins observing pod events.
    pub fn pod_observers(&self) -> &[Named<dyn PodObserver>] {
        &self.pod_observer
    }
    /// Plugins observing node removals.
    pub fn node_observers(&self) -> &[Named<dyn NodeObserver>] {
        &self.node_observer
    }
    /// The QueueSort plugin object.
    pub fn queue_sort(&self) -> Option<&Arc<dyn QueueSortPlugin>> {
        self.queue_sort.as_ref().map(|n| &n.plugin)
    }
    /// PreEnqueue plugin objects.
    pub fn pre_enqueue(&self) -> &[Named<dyn PreEnqueuePlugin>] {
        &self.pre_enqueue
    }
    /// Whether any Filter plugin is enabled.
    pub fn has_filter_plugins(&self) -> bool {
        !self.filter.is_empty()
    }
    /// Whether any Score plugin is enabled.
    pub fn has_score_plugins(&self) -> bool {
        !self.score.is_empty()
    }

    /// Plugins that sign pods for opportunistic batching, in order.
    pub fn sign_plugins(&self) -> Vec<&'static str> {
        names(&self.sign)
    }

    /// The plugins at PreFilter, Filter, PreScore or Score that don't implement
    /// [`SignPlugin`]. While any is enabled the profile never batches (upstream: "if
    /// any enabled plugin does not sign, batching is off for all pods").
    pub fn batching_blockers(&self) -> &[&'static str] {
        &self.batching_blockers
    }

    /// The profile's own `OpportunisticBatching` setting (`None`: the feature gate's).
    pub fn opportunistic_batching(&self) -> Option<bool> {
        self.opportunistic_batching
    }

    /// Whether a batch re-scores the node chosen last when the next pod still fits
    /// there (v1.37's "rescoring", off by default; see
    /// [`ProfileBuilder::batch_rescoring`]).
    pub fn batch_rescoring(&self) -> bool {
        self.batch_rescoring
    }

    /// Whether this profile batches under `gates`: its own setting or else the
    /// `OpportunisticBatching` gate, and every plugin that must sign does.
    pub fn batching_enabled(&self, gates: FeatureGates) -> bool {
        self.opportunistic_batching.unwrap_or_else(|| gates.enabled(super::Feature::OpportunisticBatching))
            && self.batching_blockers.is_empty()
    }

    /// `pod`'s signature under this profile (upstream `SignPod`): `None` when a plugin
    /// cannot sign or declines this pod. The scheduler signs each pod once, when it
    /// enters the queue.
    pub fn sign_pod(&self, pod: &crate::snapshot::PodInfo) -> Option<super::PodSignature> {
        super::sign_pod_with(self, pod, &mut super::SignFragments::new())
    }

    /// [`Profile::sign_pod`] reusing `fragments`' buffers (what the queue does).
    pub fn sign_pod_with(
        &self,
        pod: &crate::snapshot::PodInfo,
        fragments: &mut super::SignFragments,
    ) -> Option<super::PodSignature> {
        super::sign_pod_with(self, pod, fragments)
    }
}

struct Entry {
    name: &'static str,
    points: ExtensionPoints,
    weight: i64,
}

/// Builds a [`Profile`] in code. Errors (duplicates, bad weights) surface at
/// [`ProfileBuilder::build`].
pub struct ProfileBuilder {
    name: String,
    entries: Vec<Entry>,
    percentage: Option<i64>,
    batching: Option<bool>,
    rescoring: bool,
    error: Option<ConfigError>,
}

impl std::fmt::Debug for ProfileBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProfileBuilder")
            .field("name", &self.name)
            .field("plugins", &self.entries.iter().map(|e| e.name).collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl ProfileBuilder {
    /// Adds a plugin at every extension point it registers, Score weight 1.
    #[must_use]
    pub fn plugin(self, plugin: impl Plugin) -> Self {
        self.plugin_arc(Arc::new(plugin), 1)
    }

    /// Adds a plugin with a Score weight.
    #[must_use]
    pub fn weighted(self, plugin: impl Plugin, weight: i64) -> Self {
        self.plugin_arc(Arc::new(plugin), weight)
    }

    /// Adds a shared plugin object with a Score weight.
    #[must_use]
    pub fn plugin_arc(self, plugin: Arc<dyn Plugin>, weight: i64) -> Self {
        let name = Symbol::intern(plugin.name()).as_str();
        let mut points = ExtensionPoints::default();
        plugin.register(&mut points);
        self.points(name, points, weight)
    }

    /// Removes a plugin from one extension point (it keeps the others).
    #[must_use]
    pub fn disable(mut self, plugin: &str, point: ExtensionPoint) -> Self {
        for e in &mut self.entries {
            if e.name == plugin {
                e.points.remove(point);
            }
        }
        self
    }

    /// Sets `percentageOfNodesToScore` for this profile (0 = upstream's adaptive default).
    #[must_use]
    pub fn percentage_of_nodes_to_score(mut self, pct: i64) -> Self {
        self.percentage = Some(pct);
        self
    }

    /// Turns opportunistic batching on or off for this profile, whatever the
    /// `OpportunisticBatching` gate says (schedkit; upstream has only the gate).
    #[must_use]
    pub fn opportunistic_batching(mut self, on: bool) -> Self {
        self.batching = Some(on);
        self
    }

    /// Beyond upstream v1.36 (KEP-5598's v1.37 "rescoring"; off by default): when
    /// the next pod of a batch would still fit on the node chosen last, re-score that
    /// node alone (PreScore, then Score on it), normalize again over the batch's
    /// cached raw scores and re-sort, instead of flushing the batch as
    /// `node_not_full`. Pods that share nodes then batch too.
    #[must_use]
    pub fn batch_rescoring(mut self, on: bool) -> Self {
        self.rescoring = on;
        self
    }

    /// Resolves the plugin lists.
    pub fn build(self) -> Result<Profile, ConfigError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let pct = match self.percentage {
            None => None,
            Some(v @ 0..=100) => Some(v as u32),
            Some(value) => return Err(ConfigError::InvalidPercentage { profile: self.name, value }),
        };
        let mut p = Profile::empty(self.name, pct);
        p.opportunistic_batching = self.batching;
        p.batch_rescoring = self.rescoring;
        let mut sorts = Vec::new();
        for e in self.entries {
            let name = e.name;
            let pts = e.points;
            let serves_cycle =
                pts.pre_filter.is_some() || pts.filter.is_some() || pts.pre_score.is_some() || pts.score.is_some();
            if serves_cycle && pts.sign.is_none() {
                p.batching_blockers.push(name);
            }
            macro_rules! push {
                ($field:ident) => {
                    if let Some(plugin) = pts.$field {
                        p.$field.push(Named { name, plugin });
                    }
                };
            }
            push!(pre_enqueue);
            push!(pre_filter);
            push!(filter);
            push!(post_filter);
            push!(pre_score);
            push!(reserve);
            push!(permit);
            push!(pre_bind);
            push!(bind);
            push!(post_bind);
            push!(enqueue);
            push!(pod_observer);
            push!(node_observer);
            push!(sign);
            push!(placement_generate);
            if let Some(plugin) = pts.placement_score {
                p.placement_score.push((Named { name, plugin }, e.weight));
            }
            if let Some(plugin) = pts.score {
                p.score.push(WeightedScore { name, plugin, weight: e.weight });
            }
            if let Some(plugin) = pts.queue_sort {
                sorts.push(Named { name, plugin });
            }
        }
        if sorts.len() > 1 {
            return Err(ConfigError::MultipleQueueSort {
                profile: p.name,
                names: sorts.iter().map(|s| s.name.to_owned()).collect(),
            });
        }
        p.queue_sort = sorts.pop();
        Ok(p.finish())
    }
}

impl Profile {
    pub(super) fn empty(name: String, percentage_of_nodes_to_score: Option<u32>) -> Profile {
        Profile {
            name,
            pre_enqueue: Vec::new(),
            queue_sort: None,
            pre_filter: Vec::new(),
            pre_filter_to_filter: Vec::new(),
            filter: Vec::new(),
            post_filter: Vec::new(),
            pre_score: Vec::new(),
            pre_score_to_score: Vec::new(),
            score: Vec::new(),
            reserve: Vec::new(),
            permit: Vec::new(),
            pre_bind: Vec::new(),
            bind: Vec::new(),
            post_bind: Vec::new(),
            enqueue: Vec::new(),
            pod_observer: Vec::new(),
            node_observer: Vec::new(),
            percentage_of_nodes_to_score,
            sign: Vec::new(),
            batching_blockers: Vec::new(),
            opportunistic_batching: None,
            batch_rescoring: false,
            placement_generate: Vec::new(),
            placement_score: Vec::new(),
        }
    }

    /// Links each PreFilter (PreScore) plugin to the same plugin's Filter (Score).
    pub(super) fn finish(mut self) -> Profile {
        self.pre_filter_to_filter =
            self.pre_filter.iter().map(|pf| self.filter.iter().position(|f| f.name == pf.name)).collect();
        self.pre_score_to_score =
            self.pre_score.iter().map(|ps| self.score.iter().position(|s| s.name == ps.name)).collect();
        self
    }

    /// Places `name` at `pt` if `points` serves it (the caller checks QueueSort is single).
    pub(super) fn push_point(&mut self, name: &'static str, points: &ExtensionPoints, pt: ExtensionPoint, weight: i64) {
        macro_rules! push {
            ($field:ident) => {
                if let Some(plugin) = &points.$field {
                    self.$field.push(Named { name, plugin: plugin.clone() });
                }
            };
        }
        match pt {
            ExtensionPoint::PreEnqueue => push!(pre_enqueue),
            ExtensionPoint::QueueSort => {
                if let Some(plugin) = &points.queue_sort {
                    self.queue_sort = Some(Named { name, plugin: plugin.clone() });
                }
            }
            ExtensionPoint::PreFilter => push!(pre_filter),
            ExtensionPoint::Filter => push!(filter),
            ExtensionPoint::PostFilter => push!(post_filter),
            ExtensionPoint::PreScore => push!(pre_score),
            ExtensionPoint::Score => {
                if let Some(plugin) = &points.score {
                    self.score.push(WeightedScore { name, plugin: plugin.clone(), weight });
                }
            }
            ExtensionPoint::Reserve => push!(reserve),
            ExtensionPoint::Permit => push!(permit),
            ExtensionPoint::PreBind => push!(pre_bind),
            ExtensionPoint::Bind => push!(bind),
            ExtensionPoint::PostBind => push!(post_bind),
            ExtensionPoint::PlacementGenerate => push!(placement_generate),
            ExtensionPoint::PlacementScore => {
                if let Some(plugin) = &points.placement_score {
                    self.placement_score.push((Named { name, plugin: plugin.clone() }, weight));
                }
            }
        }
    }
}

impl ProfileBuilder {
    fn points(mut self, name: &'static str, points: ExtensionPoints, weight: i64) -> Self {
        if self.error.is_none() {
            if self.entries.iter().any(|e| e.name == name) {
                self.error = Some(ConfigError::DuplicatePlugin { profile: self.name.clone(), name: name.to_owned() });
            } else if (points.score.is_some() || points.placement_score.is_some())
                && !(1..=MAX_WEIGHT).contains(&weight)
            {
                self.error =
                    Some(ConfigError::InvalidWeight { profile: self.name.clone(), name: name.to_owned(), weight });
            }
        }
        self.entries.push(Entry { name, points, weight });
        self
    }
}
