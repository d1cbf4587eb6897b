//! Plugin names, as upstream spells them (`pkg/scheduler/framework/plugins/names/names.go`
//! and scheduler-plugins).

/// PrioritySort (QueueSort).
pub const PRIORITY_SORT: &str = "PrioritySort";
/// SchedulingGates (PreEnqueue).
pub const SCHEDULING_GATES: &str = "SchedulingGates";
/// NodeUnschedulable (Filter).
pub const NODE_UNSCHEDULABLE: &str = "NodeUnschedulable";
/// NodeName (Filter).
pub const NODE_NAME: &str = "NodeName";
/// NodePorts (PreFilter, Filter).
pub const NODE_PORTS: &str = "NodePorts";
/// TaintToleration (Filter, PreScore, Score).
pub const TAINT_TOLERATION: &str = "TaintToleration";
/// NodeAffinity (PreFilter, Filter, PreScore, Score).
pub const NODE_AFFINITY: &str = "NodeAffinity";
/// NodeResourcesFit (PreFilter, Filter, PreScore, Score).
pub const NODE_RESOURCES_FIT: &str = "NodeResourcesFit";
/// NodeResourcesBalancedAllocation (PreScore, Score).
pub const NODE_RESOURCES_BALANCED_ALLOCATION: &str = "NodeResourcesBalancedAllocation";
/// ImageLocality (Score).
pub const IMAGE_LOCALITY: &str = "ImageLocality";
/// PodTopologySpread (PreFilter, Filter, PreScore, Score).
pub const POD_TOPOLOGY_SPREAD: &str = "PodTopologySpread";
/// InterPodAffinity (PreFilter, Filter, PreScore, Score).
pub const INTER_POD_AFFINITY: &str = "InterPodAffinity";
/// DefaultBinder (Bind).
pub const DEFAULT_BINDER: &str = "DefaultBinder";
/// DefaultPreemption (PostFilter).
pub const DEFAULT_PREEMPTION: &str = "DefaultPreemption";
/// DynamicResources (DRA).
pub const DYNAMIC_RESOURCES: &str = "DynamicResources";
/// Coscheduling (scheduler-plugins gang scheduling).
pub const COSCHEDULING: &str = "Coscheduling";
/// CapacityScheduling (scheduler-plugins elastic quotas).
pub const CAPACITY_SCHEDULING: &str = "CapacityScheduling";
/// GpuTopology (topology-aware GPU placement).
pub const GPU_TOPOLOGY: &str = "GpuTopology";
/// HamiVgpu (HAMi-compatible vGPU memory and core sharing).
pub const HAMI_VGPU: &str = "HamiVgpu";
/// TopologicalSort (scheduler-plugins network-aware QueueSort).
pub const TOPOLOGICAL_SORT: &str = "TopologicalSort";
/// NetworkOverhead (scheduler-plugins network-aware PreFilter, Filter, Score).
pub const NETWORK_OVERHEAD: &str = "NetworkOverhead";
/// NodeResourceTopologyMatch (scheduler-plugins NUMA-aware Filter, Score, Reserve).
pub const NODE_RESOURCE_TOPOLOGY_MATCH: &str = "NodeResourceTopologyMatch";
/// TargetLoadPacking (scheduler-plugins Trimaran: packing around a target CPU load).
pub const TARGET_LOAD_PACKING: &str = "TargetLoadPacking";
/// LoadVariationRiskBalancing (scheduler-plugins Trimaran: balancing load variation risk).
pub const LOAD_VARIATION_RISK_BALANCING: &str = "LoadVariationRiskBalancing";
/// LowRiskOverCommitment (scheduler-plugins Trimaran: low-risk limit over-commitment).
pub const LOW_RISK_OVER_COMMITMENT: &str = "LowRiskOverCommitment";
/// GangScheduling (v1.36 in-tree gang scheduling: PreEnqueue, Permit).
pub const GANG_SCHEDULING: &str = "GangScheduling";
/// TopologyPlacementGenerator (v1.36 PlacementGenerate: one placement per topology domain).
pub const TOPOLOGY_PLACEMENT_GENERATOR: &str = "TopologyPlacementGenerator";
/// PodGroupPodsCount (v1.36 PlacementScore: pods of the group per placement).
pub const POD_GROUP_PODS_COUNT: &str = "PodGroupPodsCount";
/// GpuDomainPlacement (schedkit, beyond upstream: PlacementGenerate by GPU interconnect domain).
pub const GPU_DOMAIN_PLACEMENT: &str = "GpuDomainPlacement";
/// GpuDomainFragmentation (schedkit, beyond upstream: PlacementScore by GPU fragmentation).
pub const GPU_DOMAIN_FRAGMENTATION: &str = "GpuDomainFragmentation";
