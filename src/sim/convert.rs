//! The glue between trace rows and the gpu_share plugins: a [`TraceNode`] or
//! [`TracePod`] as a schedkit `Node` or `Pod` in the labels GpuShareFit reads, and the
//! typical pods of a trace.

use crate::model::{Container, Node, Pod, Quantity, Symbol};
use crate::plugins::gpu_share::{GPU_COUNT_LABEL, GPU_COUNT_RESOURCE, GPU_MILLI_LABEL, GPU_MODEL_LABEL, TypicalPods};
use crate::trace::{TraceNode, TracePod};

impl TraceNode {
    /// The node as schedkit sees it: `cpu`, `memory`, 110 pods, the GPU count as the
    /// allocatable [`GPU_COUNT_RESOURCE`] and the model as the [`GPU_MODEL_LABEL`] label.
    pub fn to_node(&self) -> Node {
        let mut node = Node::default();
        node.metadata.name.clone_from(&self.name);
        let a = &mut node.status.allocatable;
        a.set(Symbol::intern("cpu"), Quantity::from_milli(self.cpu_milli));
        a.set(Symbol::intern("memory"), Quantity::from_bytes(self.memory_mib * 1024 * 1024));
        a.set(Symbol::intern("pods"), Quantity::from_int(110));
        if self.gpus > 0 {
            a.set(Symbol::intern(GPU_COUNT_RESOURCE), Quantity::from_int(i64::from(self.gpus)));
        }
        node.status.capacity = node.status.allocatable.clone();
        if let Some(m) = &self.model {
            node.metadata.labels.insert_str(GPU_MODEL_LABEL, m);
        }
        node
    }
}

impl TracePod {
    /// The pod as schedkit sees it: one container requesting `cpu` and `memory`, and
    /// the GPU request as the labels [`GPU_COUNT_LABEL`], [`GPU_MILLI_LABEL`] and
    /// [`GPU_MODEL_LABEL`] (models joined by `|`), which `GpuShareFit` reads.
    pub fn to_pod(&self) -> Pod {
        self.to_pod_named(&self.name)
    }

    /// Like [`TracePod::to_pod`] with another name (tuned copies of one trace row).
    pub fn to_pod_named(&self, name: &str) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.name = name.to_owned();
        let mut c = Container { name: "main".into(), ..Container::default() };
        c.resources.requests.set(Symbol::intern("cpu"), Quantity::from_milli(self.cpu_milli));
        c.resources.requests.set(Symbol::intern("memory"), Quantity::from_bytes(self.memory_mib * 1024 * 1024));
        pod.spec.containers.push(c);
        if self.num_gpu > 0 && self.gpu_milli > 0 {
            let l = &mut pod.metadata.labels;
            l.insert(Symbol::intern(GPU_COUNT_LABEL), Symbol::intern(&self.num_gpu.to_string()));
            l.insert(Symbol::intern(GPU_MILLI_LABEL), Symbol::intern(&self.gpu_milli.to_string()));
            if !self.gpu_spec.is_empty() {
                l.insert(Symbol::intern(GPU_MODEL_LABEL), Symbol::intern(&self.gpu_spec.join("|")));
            }
        }
        pod
    }
}

impl TypicalPods {
    /// The typical pods of a trace pod list (threshold 95%, as the paper).
    pub fn from_pods(pods: &[TracePod]) -> TypicalPods {
        let specs: Vec<String> = pods.iter().map(|p| p.gpu_spec.join("|")).collect();
        TypicalPods::from_shapes(
            pods.iter().zip(&specs).map(|(p, s)| (p.cpu_milli, p.gpu_milli, p.num_gpu, s.as_str())),
            95.0,
        )
    }
}
