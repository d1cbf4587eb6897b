//! What a Score plugin's NormalizeScore depends on, declared by the plugin so the
//! pod-group cycle may carry normalized scores from one identical member to the next
//! (schedkit's own; upstream runs NormalizeScore for every pod).

/// How far a [`ScorePlugin`](super::ScorePlugin)'s NormalizeScore may be reused
/// between the identical members of one pod-group cycle.
///
/// The pod-group cycle runs its members one after another in one snapshot view, each
/// assumed onto its node before the next is tried. When consecutive members sign alike
/// ([`SignPlugin`](super::SignPlugin)), a plugin's raw scores on the nodes no member
/// landed on are unchanged (the signing contract), so only the nodes a member was
/// assumed onto get new raw scores. Whether the *normalized* scores of the other nodes
/// are unchanged too depends on the plugin's NormalizeScore, which the framework cannot
/// see; this is the plugin's promise about it. Each variant's promise holds for pods
/// that sign alike, in one snapshot view in which only pods are added to nodes (node
/// labels, taints and allocatable stay as they are).
///
/// Results are exact under the promise: a plugin that declares more than it keeps
/// would change placements, so the default, [`NormalizeReuse::Never`], promises
/// nothing and NormalizeScore runs over the whole column for every member, as upstream
/// runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NormalizeReuse {
    /// No promise: NormalizeScore runs over every feasible node for every member.
    #[default]
    Never,
    /// The normalized column is a function of the input column alone: the same nodes
    /// in the same order with the same raw scores give the same normalized scores and
    /// the same status, whatever PreScore wrote into the cycle state. Then a member
    /// whose feasible nodes and raw scores equal the previous member's takes that
    /// member's normalized column without running NormalizeScore. Min-max or
    /// max-relative rescaling over the column (upstream `DefaultNormalizeScore`) keeps
    /// this promise; a NormalizeScore that reads state PreScore derived from other
    /// pods' placement does not.
    Column,
    /// Each node's normalized score is a function of that node's raw score alone (a
    /// plugin without NormalizeScore, or one that rescales node by node), and the
    /// status fails only for a node whose own score is out of range. Then NormalizeScore
    /// runs only over the nodes whose raw score changed, and every other node keeps the
    /// previous member's normalized score.
    PerNode,
}

/// How far a plugin's PreFilter ([`PreFilterPlugin::pre_filter_reuse`]) or PreScore
/// ([`PreScorePlugin::pre_score_reuse`]) may be reused between the placements of one
/// pod-group cycle.
///
/// With `TopologyAwareWorkloadScheduling` the pod-group cycle runs every member once
/// per placement, so one member's PreFilter and PreScore run once per placement, with
/// another view of the cluster and other siblings assumed. A plugin whose PreFilter or
/// PreScore reads nothing but the pod may declare so; the cycle then runs it once per
/// member and hands its outcome (status, PreFilter's node narrowing) and the values it
/// wrote into the cycle state to the member's later placements (the very values,
/// shared: [`CycleState::get_mut`](super::CycleState::get_mut) copies one before it is
/// changed).
///
/// Results are exact under the promise; a plugin that declares more than it keeps
/// would change placements, so the default, [`PreReuse::Never`], promises nothing
/// and the extension point runs for every member in every placement, as upstream runs
/// it.
///
/// [`PreFilterPlugin::pre_filter_reuse`]: super::PreFilterPlugin::pre_filter_reuse
/// [`PreScorePlugin::pre_score_reuse`]: super::PreScorePlugin::pre_score_reuse
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PreReuse {
    /// No promise: the extension point runs for every member in every placement.
    #[default]
    Never,
    /// For this pod, the extension point's outcome (status, and PreFilter's node
    /// narrowing, by node name only: positions belong to one snapshot) and every value
    /// it writes into the cycle state are a function of the pod and the plugin's own
    /// configuration alone: not of the nodes or snapshot it is given, the pods on the
    /// nodes, the cycle state other plugins wrote, nor any cluster object that may
    /// change (a DRA store, listers). It writes values only (removes none) and is
    /// deterministic.
    Pod,
}
