//! The contract: [`Status`], [`CycleState`], the plugin traits, [`Profile`] and
//! [`Registry`], the [`FeatureGates`], the [`Handle`] plugins reach the world through,
//! the clock, the [`preemption`] evaluator preemption plugins share, and the
//! [`FrameworkRunner`] that runs a profile's extension points one at a time (tests,
//! what-if tools, benches).

mod batch_metrics;
mod clock;
mod cycle_state;
pub mod extender;
mod features;
mod fit_message;
mod handle;
mod interface;
pub mod metrics;
#[cfg(feature = "metrics")]
mod openmetrics;
mod pod_group;
mod pre_filter_result;
pub mod preemption;
mod profile;
mod registry;
mod runner;
pub(crate) mod runtime;
pub mod scheduler_metrics;
mod score_reuse;
mod sign;
mod status;
mod waiting_pods;

pub use batch_metrics::{BATCH_BUCKETS, BatchAttempt, BatchMetrics, FlushReason};
pub use clock::{Clock, RealClock, VirtualClock};
pub use cycle_state::{CycleState, PluginSet, StateData};
pub(crate) use cycle_state::{Entry as StateEntry, StateMark};
pub use extender::{Extender, Extenders};
pub use features::{Feature, FeatureGateError, FeatureGates};
pub(crate) use fit_message::{reason_histogram, write_fit_message};
pub use handle::Handle;
pub use interface::{
    ActionType, BindPlugin, ClusterEvent, ClusterEventWithHint, EnqueueExtensions, EventObject, EventResource,
    ExtensionPoint, ExtensionPoints, FilterFn, FilterPlugin, MAX_NODE_SCORE, MIN_NODE_SCORE, NodeObserver, NodeScore,
    NodeToStatus, PermitDecision, PermitPlugin, Plugin, PodObserver, PostBindPlugin, PostFilterPlugin,
    PostFilterResult, PreBindPlugin, PreEnqueuePlugin, PreFilterExtensions, PreFilterPlugin, PreFilterResult,
    PreScorePlugin, QueueSortPlugin, QueuedPodInfo, QueueingHint, QueueingHintFn, ReservePlugin, ScoreFn, ScorePlugin,
};
pub use metrics::{Histogram, LatencyEntry, LatencyRecorder, LatencyReport};
pub use pod_group::{
    MAX_PLACEMENT_SCORE, MIN_PLACEMENT_SCORE, Placement, PlacementGeneratePlugin, PlacementScore, PlacementScorePlugin,
    PodGroupAssignments, PodGroupCycleState, PodGroupInfo, PodGroupManager, ProposedAssignment,
};
pub use pre_filter_result::NodePositions;
pub use preemption::{
    DryRun, Evictor, NominatedPods, Nominator, PreemptionError, PreemptionServices, PreemptionStrategy,
    RecordingEvictor, RunningProfile,
};
pub use profile::{ConfigError, MAX_WEIGHT, Named, Profile, ProfileBuilder, WeightedScore};
pub use registry::{
    DEFAULT_SCHEDULER_NAME, PluginArgs, PluginFactory, PluginRef, PluginSetConfig, PluginsConfig, ProfileConfig,
    Registry,
};
pub use runner::{Feasible, FrameworkRunner, PluginAt, PluginScores, ScoreReport};
pub use runtime::{PermitOutcome, PreFilterOutcome};
pub use score_reuse::{NormalizeReuse, PreReuse};
pub(crate) use sign::sign_pod_with;
pub use sign::{
    DYNAMIC_RESOURCES_SIGNER, FEATURES_SIGNER, FragmentWriter, HOST_PORTS_SIGNER, IMAGE_NAMES_SIGNER, LABELS_SIGNER,
    NODE_AFFINITY_SIGNER, NODE_NAME_SIGNER, NODE_SELECTOR_SIGNER, PodSignature, RESOURCES_SIGNER,
    SCHEDULER_NAME_SIGNER, SignFragments, SignPlugin, TOLERATIONS_SIGNER, VOLUMES_SIGNER,
};
pub use status::{Code, Reason, Status};
pub use waiting_pods::{MAX_PERMIT_TIMEOUT, WaitingPod, WaitingPods};
