//! ImageLocality: favour nodes that already have the pod's images, scaled by how
//! widely each image is spread (upstream `plugins/imagelocality/image_locality.go`).

use std::sync::Arc;

use smallvec::SmallVec;

use crate::framework::{
    CycleState, ExtensionPoints, Handle, MAX_NODE_SCORE, NodeScore, Plugin, PreScorePlugin, ScorePlugin, Status,
};
use crate::model::Symbol;
use crate::plugins::helper::with_state;
use crate::plugins::names;
use crate::snapshot::{NodeInfo, NodeList, PodInfo};

const MB: i64 = 1024 * 1024;
/// Below this summed size the score is 0 (upstream `minThreshold`, 23 MiB).
pub const MIN_THRESHOLD: i64 = 23 * MB;
/// Per container, above this the score saturates (upstream `maxContainerThreshold`, 1000 MiB).
pub const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

/// The ImageLocality plugin. Needs the handle for the cluster's node count and each
/// image's spread.
#[derive(Debug, Clone)]
pub struct ImageLocality {
    handle: Handle,
}

/// The pod's images, normalized and interned once per cycle (upstream computes the
/// names per node; the result is the same).
#[derive(Debug, Clone)]
struct PodImages {
    /// `(image, spread = nodes having it / all nodes)` per container.
    images: SmallVec<[(Symbol, f64); 4]>,
    containers: i64,
}

impl ImageLocality {
    /// The plugin.
    pub fn new(handle: Handle) -> Self {
        ImageLocality { handle }
    }
}

/// Upstream `normalizedImageName`: an image with no tag after its last `/` gets `:latest`.
pub fn normalized_image_name(name: &str) -> std::borrow::Cow<'_, str> {
    let colon = name.rfind(':');
    let slash = name.rfind('/');
    let has_tag = match (colon, slash) {
        (Some(c), Some(s)) => c > s,
        (Some(_), None) => true,
        _ => false,
    };
    if has_tag { name.into() } else { format!("{name}:latest").into() }
}

/// Upstream `calculatePriority`: clamp the summed scaled size into
/// `[min, max * containers]` and map it linearly onto 0..=100.
pub fn calculate_priority(sum: i64, containers: i64) -> i64 {
    let max = MAX_CONTAINER_THRESHOLD * containers;
    let s = sum.clamp(MIN_THRESHOLD, max.max(MIN_THRESHOLD));
    if max <= MIN_THRESHOLD {
        return 0;
    }
    MAX_NODE_SCORE * (s - MIN_THRESHOLD) / (max - MIN_THRESHOLD)
}

impl Plugin for ImageLocality {
    fn name(&self) -> &str {
        names::IMAGE_LOCALITY
    }
    fn register(self: Arc<Self>, p: &mut ExtensionPoints) {
        p.pre_score(self.clone()).score(self.clone()).sign(self);
    }
}

impl ImageLocality {
    fn pod_images(&self, pod: &PodInfo) -> PodImages {
        let snap = self.handle.snapshot();
        let total = snap.len().max(1) as f64;
        let images = pod
            .pod
            .images()
            .filter(|i| !i.is_empty())
            .filter_map(|i| {
                let sym = Symbol::lookup(&normalized_image_name(i))?;
                let n = snap.image_node_count(sym);
                (n > 0).then(|| (sym, f64::from(n) / total))
            })
            .collect();
        let containers = (pod.pod.spec.containers.len() + pod.pod.spec.init_containers.len()) as i64;
        PodImages { images, containers }
    }
}

impl PreScorePlugin for ImageLocality {
    fn pre_score(&self, state: &mut CycleState, pod: &PodInfo, _: NodeList<'_>) -> Status {
        state.write(self.pod_images(pod));
        Status::SUCCESS
    }
}

impl ScorePlugin for ImageLocality {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(match state.read::<PodImages>() {
            Some(s) => score_node(s, node),
            None => score_node(&self.pod_images(pod), node),
        })
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: NodeList<'_>,
        scores: &mut [NodeScore],
    ) -> Result<(), Status> {
        with_state(
            state,
            || self.pod_images(pod),
            |s: &PodImages| {
                if s.images.is_empty() {
                    // None of the pod's images is on any node: every sum is 0, which
                    // `calculate_priority` maps to 0 whatever the container count.
                    for slot in scores.iter_mut() {
                        slot.score = 0;
                    }
                } else {
                    for (slot, node) in scores.iter_mut().zip(nodes.iter()) {
                        slot.score = score_node(s, node);
                    }
                }
            },
        );
        Ok(())
    }

    /// None of the pod's images is on any node (PreScore found none): every node's
    /// sum is 0, which `calculate_priority` maps to 0, and there is no
    /// NormalizeScore.
    fn uniform_score(&self, state: &CycleState, _: &PodInfo, _: NodeList<'_>) -> Option<i64> {
        state.read::<PodImages>().filter(|s| s.images.is_empty()).map(|_| 0)
    }

    /// ImageLocality has no NormalizeScore (upstream `imagelocality/image_locality.go`).
    fn normalize_reuse(&self) -> crate::framework::NormalizeReuse {
        crate::framework::NormalizeReuse::PerNode
    }
}

fn score_node(s: &PodImages, node: &NodeInfo) -> i64 {
    let sum: i64 = s
        .images
        .iter()
        .filter_map(|&(img, spread)| node.image_size(img).map(|size| (size as f64 * spread) as i64))
        .sum();
    calculate_priority(sum, s.containers)
}

/// Upstream `ImageLocality.SignPod`: the pod's image names (a multiset: Score sums
/// per container) and its container count.
impl crate::framework::SignPlugin for ImageLocality {
    fn sign_pod(&self, pod: &PodInfo, fragments: &mut crate::framework::SignFragments) -> Status {
        fragments.add(crate::framework::IMAGE_NAMES_SIGNER, |w| {
            w.sorted(pod.pod.images(), false, |w, i| {
                w.str(i);
            });
            w.u32((pod.pod.spec.containers.len() + pod.pod.spec.init_containers.len()) as u32);
        });
        Status::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_names_normalize_like_upstream() {
        assert_eq!(normalized_image_name("nginx"), "nginx:latest");
        assert_eq!(normalized_image_name("nginx:1.25"), "nginx:1.25");
        assert_eq!(normalized_image_name("localhost:5000/app"), "localhost:5000/app:latest");
        assert_eq!(normalized_image_name("gcr.io/a/b@sha256:abc"), "gcr.io/a/b@sha256:abc");
    }

    #[test]
    fn priority_clamps() {
        assert_eq!(calculate_priority(0, 1), 0);
        assert_eq!(calculate_priority(MAX_CONTAINER_THRESHOLD * 5, 1), 100);
        // Upstream TestImageLocalityPriority "two images spread on two nodes": 40 MiB
        // and 300 MiB images on 1 of 2 nodes, 2 containers: (20+150-23)*100/(2000-23).
        assert_eq!(calculate_priority(20 * MB + 150 * MB, 2), (147 * MB) * 100 / (2000 * MB - 23 * MB));
    }
}
