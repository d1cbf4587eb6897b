//! The soak's gangs: Coscheduling pod groups that arrive whole and leave whole, and
//! the all-or-nothing check against the soak's own model.

use std::collections::HashMap;
use std::sync::Arc;

use super::dra::NAMESPACE;
use super::model::{Model, PodWhere};
use crate::plugins::coscheduling::{PodGroup, PodGroupError, PodGroupRegistry};

/// The label naming a pod's group (scheduler-plugins' `scheduling.x-k8s.io/pod-group`).
pub(super) const GROUP_LABEL: &str = "scheduling.x-k8s.io/pod-group";

/// A gang as the soak made it.
#[derive(Debug)]
struct Gang {
    min: usize,
    members: Vec<Arc<str>>,
}

/// The gangs alive, and the registry Coscheduling reads them from.
pub(super) struct Gangs {
    registry: Arc<PodGroupRegistry>,
    alive: HashMap<Arc<str>, Gang>,
    next: u64,
}

impl Gangs {
    pub(super) fn new(registry: Arc<PodGroupRegistry>) -> Gangs {
        Gangs { registry, alive: HashMap::new(), next: 0 }
    }

    /// Registers a new group of `size` members, all of them needed.
    pub(super) fn create(&mut self, size: usize) -> Result<Arc<str>, PodGroupError> {
        let name: Arc<str> = Arc::from(format!("gang-{}", self.next));
        self.next += 1;
        let min = u32::try_from(size).unwrap_or(u32::MAX);
        self.registry.upsert(PodGroup::new(NAMESPACE, &name, min))?;
        self.alive.insert(name.clone(), Gang { min: size, members: Vec::with_capacity(size) });
        Ok(name)
    }

    pub(super) fn add_member(&mut self, group: &str, uid: Arc<str>) {
        if let Some(g) = self.alive.get_mut(group) {
            g.members.push(uid);
        }
    }

    /// Forgets a group (its members are being deleted) and returns them.
    pub(super) fn remove(&mut self, group: &str) -> Vec<Arc<str>> {
        let _ = self.registry.remove(NAMESPACE, group);
        self.alive.remove(group).map(|g| g.members).unwrap_or_default()
    }

    /// A member of `group` finished binding: at least `min` of its members must be
    /// placed (assumed or bound), or Permit let it through alone.
    pub(super) fn check_bind(&self, group: &str, uid: &str, model: &Model) -> Result<(), String> {
        let Some(g) = self.alive.get(group) else { return Ok(()) };
        let placed = g.members.iter().filter(|m| matches!(model.place(m), Some(PodWhere::Placed(_)))).count();
        if placed < g.min {
            return Err(format!(
                "pod {uid} of gang {group} bound with {placed} of its {} members placed (min {})",
                g.members.len(),
                g.min
            ));
        }
        Ok(())
    }

    /// With no binding in flight: every gang has none or at least `min` members bound.
    pub(super) fn check(&self, model: &Model) -> Result<(), String> {
        for (name, g) in &self.alive {
            let bound = g.members.iter().filter(|m| model.bound.contains(*m)).count();
            if bound != 0 && bound < g.min {
                return Err(format!("gang {name} has {bound} members bound, fewer than its min {}", g.min));
            }
        }
        Ok(())
    }
}
