//! More of upstream's `st.MakePod()` / `st.MakeNode()` vocabulary on the builders:
//! CPU in millicores, several requests or allocatable amounts at once, labels.

use super::{NodeBuilder, PodBuilder};

impl NodeBuilder {
    /// Allocatable CPU in millicores (upstream `Capacity` with `cpu: "<n>m"`).
    ///
    /// ```
    /// use schedkit::testing::NodeBuilder;
    /// let n = NodeBuilder::new("n").milli_cpu(1500).build();
    /// assert_eq!(n.status.allocatable.to_resources().milli_cpu, 1500);
    /// ```
    #[must_use]
    pub fn milli_cpu(self, milli: i64) -> Self {
        self.allocatable("cpu", &format!("{milli}m"))
    }

    /// Several allocatable amounts, e.g. `&[("cpu", "4"), ("memory", "8Gi")]`
    /// (upstream `Capacity(map)`).
    #[must_use]
    pub fn allocatables(mut self, amounts: &[(&str, &str)]) -> Self {
        for (r, q) in amounts {
            self = self.allocatable(r, q);
        }
        self
    }

    /// Several labels.
    #[must_use]
    pub fn labels(mut self, labels: &[(&str, &str)]) -> Self {
        for (k, v) in labels {
            self = self.label(k, v);
        }
        self
    }
}

impl PodBuilder {
    /// CPU request of the last container in millicores.
    ///
    /// ```
    /// use schedkit::testing::PodBuilder;
    /// let p = PodBuilder::new("p").milli_cpu(250).requests(&[("memory", "1Gi")]).build();
    /// assert_eq!(p.requests().milli_cpu, 250);
    /// assert_eq!(p.requests().memory, 1 << 30);
    /// ```
    #[must_use]
    pub fn milli_cpu(self, milli: i64) -> Self {
        self.request("cpu", &format!("{milli}m"))
    }

    /// Several requests on the last container (upstream `Req(map)`).
    #[must_use]
    pub fn requests(mut self, amounts: &[(&str, &str)]) -> Self {
        for (r, q) in amounts {
            self = self.request(r, q);
        }
        self
    }

    /// A new container holding these requests (upstream `Container` + `Req`).
    #[must_use]
    pub fn container_with(self, name: &str, amounts: &[(&str, &str)]) -> Self {
        self.container(name).requests(amounts)
    }

    /// Several labels.
    #[must_use]
    pub fn labels(mut self, labels: &[(&str, &str)]) -> Self {
        for (k, v) in labels {
            self = self.label(k, v);
        }
        self
    }
}

impl PodBuilder {
    /// The v1.36 PodGroup the pod belongs to (`spec.schedulingGroup.podGroupName`;
    /// upstream `PodGroupName`).
    ///
    /// ```
    /// use schedkit::testing::PodBuilder;
    /// let p = PodBuilder::new("w0").pod_group_name("job-0").build();
    /// assert_eq!(p.scheduling_group_name(), Some("job-0"));
    /// ```
    #[must_use]
    pub fn pod_group_name(self, group: &str) -> Self {
        let group = group.to_owned();
        self.with(move |p| {
            p.spec.scheduling_group = Some(crate::model::PodSchedulingGroup { pod_group_name: Some(group) });
        })
    }
}
