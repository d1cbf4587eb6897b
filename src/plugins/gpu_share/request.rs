//! A pod's GPU request: the labels it is read from ([`GPU_COUNT_LABEL`],
//! [`GPU_MILLI_LABEL`], [`GPU_MODEL_LABEL`]), [`GpuRequest`] and its cycle-state record.

use smallvec::SmallVec;

use super::MILLI;
use crate::framework::CycleState;
use crate::model::{Pod, Symbol};
use crate::snapshot::PodInfo;

/// Pod label: number of GPUs (the authors' annotation `alibabacloud.com/gpu-count`).
pub const GPU_COUNT_LABEL: &str = "alibabacloud.com/gpu-count";
/// Pod label: milli-GPU per GPU, 1..=1000 (`alibabacloud.com/gpu-milli`).
pub const GPU_MILLI_LABEL: &str = "alibabacloud.com/gpu-milli";
/// Pod label: allowed GPU models, `|`-separated; node label: the node's GPU model.
pub const GPU_MODEL_LABEL: &str = "alibabacloud.com/gpu-card-model";
/// Node allocatable resource: how many GPU devices the node has.
pub const GPU_COUNT_RESOURCE: &str = "alibabacloud.com/gpu-count";

/// A pod's GPU request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GpuRequest {
    /// GPUs (1 for a sharing pod).
    pub count: u32,
    /// Milli-GPU per GPU (1000 = whole GPUs).
    pub milli: u32,
    /// Allowed models (empty: any).
    pub models: SmallVec<[Symbol; 2]>,
}

impl GpuRequest {
    /// Reads the request from the pod's labels; `Ok(None)` when it asks for no GPU.
    ///
    /// ```
    /// use schedkit::plugins::gpu_share::{GpuRequest, GPU_COUNT_LABEL, GPU_MILLI_LABEL};
    /// use schedkit::testing::PodBuilder;
    /// let p = PodBuilder::new("p").label(GPU_COUNT_LABEL, "1").label(GPU_MILLI_LABEL, "250").build();
    /// let r = GpuRequest::from_pod(&p).unwrap().unwrap();
    /// assert!(r.is_share());
    /// assert!(GpuRequest::from_pod(&PodBuilder::new("q").build()).unwrap().is_none());
    /// ```
    pub fn from_pod(pod: &Pod) -> Result<Option<GpuRequest>, String> {
        let labels = &pod.metadata.labels;
        let count = labels.get_str(GPU_COUNT_LABEL);
        let milli = labels.get_str(GPU_MILLI_LABEL);
        let (count, milli) = match (count, milli) {
            (None, None) => return Ok(None),
            (c, m) => {
                let c: u32 = c.unwrap_or("1").parse().map_err(|_| format!("label {GPU_COUNT_LABEL}: {c:?}"))?;
                let m: u32 = m.unwrap_or("1000").parse().map_err(|_| format!("label {GPU_MILLI_LABEL}: {m:?}"))?;
                (c, m)
            }
        };
        if count == 0 || milli == 0 {
            return Ok(None);
        }
        if milli > MILLI || (milli < MILLI && count != 1) || count > 64 {
            return Err(format!("invalid GPU request: {count} GPU(s) x {milli} milli"));
        }
        let models = labels
            .get_str(GPU_MODEL_LABEL)
            .map(|s| s.split('|').filter(|m| !m.is_empty()).map(Symbol::intern).collect())
            .unwrap_or_default();
        Ok(Some(GpuRequest { count, milli, models }))
    }

    /// A GPU-sharing request (a fraction of one GPU).
    pub fn is_share(&self) -> bool {
        self.count == 1 && self.milli < MILLI
    }

    /// Total milli-GPU asked for.
    pub fn total_milli(&self) -> i64 {
        i64::from(self.count) * i64::from(self.milli)
    }

    /// Whether a node of GPU model `model` (empty: no GPUs) may serve the request
    /// (the simulator's `IsNodeAccessibleToPodByType`).
    pub fn accepts_model(&self, model: Symbol) -> bool {
        self.models.is_empty() || (!model.is_empty() && self.models.contains(&model))
    }

    /// The GPU-affinity tag GpuClustering groups pods by: 0 for sharing pods, else the
    /// GPU count (the simulator's `share-gpu` / `N-gpu`).
    pub fn affinity_tag(&self) -> u8 {
        if self.is_share() { 0 } else { self.count.min(255) as u8 }
    }
}

/// The request of the pod in this cycle, written by [`GpuShareFit`](super::GpuShareFit)'s PreFilter.
#[derive(Debug, Clone, Default)]
pub struct GpuRequestState(pub Option<GpuRequest>);

/// The pod's GPU request: from the cycle state, else parsed from the pod.
pub fn request_of(state: &CycleState, pod: &PodInfo) -> Option<GpuRequest> {
    match state.read::<GpuRequestState>() {
        Some(r) => r.0.clone(),
        None => GpuRequest::from_pod(&pod.pod).ok().flatten(),
    }
}
