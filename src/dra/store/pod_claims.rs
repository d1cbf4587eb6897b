//! Allocating a pod's gathered claims on a node: Filter's fit check, the allocation
//! with results, and the Score and binding questions the plugin asks.

use smallvec::SmallVec;

use super::{BindingState, DraStore, FIRST_AVAILABLE_MAX, GatherError, NodeResult, PodClaims};
use crate::dra::allocator::{self, ClaimPlan, Diagnosis, Outcome};
use crate::dra::error::AllocError;
use crate::model::{Labels, Pod, PodResourceClaim, Resources, Symbol};

impl DraStore {
    /// Allocates the named claims (namespace/name) on a node without reserving anything:
    /// the allocator on its own, as upstream's `Allocator.Allocate` (tests, what-if tools).
    pub fn allocate_claims(
        &self,
        claims: &[(&str, &str)],
        node: &str,
        labels: &Labels,
    ) -> Result<NodeResult, GatherError> {
        let mut pod = Pod::default();
        pod.metadata.name = "allocate".into();
        if let Some((ns, _)) = claims.first() {
            pod.metadata.namespace = (*ns).to_owned();
        }
        for (i, (_, name)) in claims.iter().enumerate() {
            pod.spec.resource_claims.push(PodResourceClaim {
                name: format!("c{i}"),
                resource_claim_name: Some((*name).to_owned()),
                resource_claim_template_name: None,
                pod_group_resource_claim: None,
            });
        }
        let mut inner = self.write();
        let pc = self.gather_locked(&mut inner, &pod, None, None)?;
        Ok(pc.allocate(node, labels)?)
    }
}

impl PodClaims {
    /// Whether every claim fits on a node, without building results (Filter). The
    /// success path allocates nothing on the heap for up to 16 devices per pod.
    pub fn fits(&self, node: Symbol, labels: &Labels) -> Result<Result<(), Diagnosis>, AllocError> {
        self.fits_timed(node, labels, None)
    }

    /// [`PodClaims::fits`] with the search bounded by `timeout`.
    pub(crate) fn fits_timed(
        &self,
        node: Symbol,
        labels: &Labels,
        timeout: Option<allocator::Timeout<'_>>,
    ) -> Result<Result<(), Diagnosis>, AllocError> {
        if self.extended.is_some() {
            return self.fits_on_timed(node, labels, &Resources::default(), timeout);
        }
        if let Some(e) = &self.disabled {
            return Err(e.clone());
        }
        if let Err(d) = self.fits_allocated(node, labels) {
            return Ok(Err(d));
        }
        if self.plans.is_empty() {
            return Ok(Ok(()));
        }
        // A quick "fits" for the plain shape; anything else is the full search's to say.
        if let Some(sets) = &self.quick
            && allocator::quick::fits(
                sets,
                &self.world,
                &self.in_use,
                &self.plans,
                &self.slots,
                node,
                self.budget,
                self.list_attributes,
            )
        {
            return Ok(Ok(()));
        }
        match self.search(&self.plans, &self.slots, node, labels, timeout)? {
            Outcome::Fit(_) => Ok(Ok(())),
            Outcome::NoFit(d) => Ok(Err(d)),
        }
    }

    /// [`PodClaims::fits`] on a node with `allocatable`: the pod's extended resources
    /// backed by DRA that the node does not list (or lists as 0) are allocated through a
    /// claim; a DRA-style extended resource with no class that the node does not list
    /// at all does not fit (upstream `filterExtendedResources`).
    pub fn fits_on(
        &self,
        node: Symbol,
        labels: &Labels,
        allocatable: &Resources,
    ) -> Result<Result<(), Diagnosis>, AllocError> {
        self.fits_on_timed(node, labels, allocatable, None)
    }

    /// [`PodClaims::fits_on`] with the search bounded by `timeout`.
    pub(crate) fn fits_on_timed(
        &self,
        node: Symbol,
        labels: &Labels,
        allocatable: &Resources,
        timeout: Option<allocator::Timeout<'_>>,
    ) -> Result<Result<(), Diagnosis>, AllocError> {
        if let Some(e) = &self.disabled {
            return Err(e.clone());
        }
        if let Err(d) = self.fits_allocated(node, labels) {
            return Ok(Err(d));
        }
        let mask = match self.extended_mask(allocatable) {
            Ok(m) => m,
            Err(resource) => return Ok(Err(Self::not_on_node(node, resource))),
        };
        let (plans, slots) = self.plans_for(mask);
        if plans.is_empty() {
            return Ok(Ok(()));
        }
        match self.search(plans, slots, node, labels, timeout)? {
            Outcome::Fit(_) => Ok(Ok(())),
            Outcome::NoFit(d) => Ok(Err(d)),
        }
    }

    fn not_on_node(node: Symbol, resource: Symbol) -> Diagnosis {
        Diagnosis {
            node: node.to_string(),
            problems: vec![allocator::Problem::ResourceNotOnNode { resource: resource.as_str().to_owned() }],
        }
    }

    /// Which backed extended resources `allocatable` lacks (bit per resource), or an
    /// unbacked one the node does not list.
    pub(crate) fn extended_mask(&self, allocatable: &Resources) -> Result<usize, Symbol> {
        let Some(ext) = &self.extended else { return Ok(0) };
        for &n in &ext.unbacked {
            if !allocatable.scalar.iter().any(|(k, _)| *k == n) {
                return Err(n);
            }
        }
        let mut mask = 0;
        for (i, &n) in ext.backed.iter().enumerate() {
            if allocatable.scalar(n) == 0 {
                mask |= 1 << i;
            }
        }
        Ok(mask)
    }

    fn plans_for(&self, mask: usize) -> (&[ClaimPlan], &[(u16, u16)]) {
        match self.extended.as_ref().and_then(|e| e.variants.get(mask)).and_then(Option::as_ref) {
            Some(v) => (&v.plans, &v.slots),
            None => (&self.plans, &self.slots),
        }
    }

    /// Allocates on a node and builds the results.
    pub fn allocate(&self, node: &str, labels: &Labels) -> Result<NodeResult, AllocError> {
        self.allocate_on(node, labels, &Resources::default())
    }

    /// [`PodClaims::allocate`] on a node with `allocatable` (see [`PodClaims::fits_on`]);
    /// the claim for extended resources, when the node needs one, comes last.
    pub fn allocate_on(&self, node: &str, labels: &Labels, allocatable: &Resources) -> Result<NodeResult, AllocError> {
        if let Some(e) = &self.disabled {
            return Err(e.clone());
        }
        // Held for the call, not pinned: the node's name is freed with the node.
        let held = crate::model::HeldSymbol::new(node);
        let sym = held.symbol();
        if let Err(d) = self.fits_allocated(sym, labels) {
            return Ok(NodeResult::NoFit(d));
        }
        let mask = match self.extended_mask(allocatable) {
            Ok(m) => m,
            Err(resource) => return Ok(NodeResult::NoFit(Self::not_on_node(sym, resource))),
        };
        let (plans, slots) = self.plans_for(mask);
        match self.search(plans, slots, sym, labels, None)? {
            Outcome::Fit(picks) => {
                let results = allocator::results(&self.world, plans, &picks, sym, self.binding);
                Ok(NodeResult::Fit(plans.iter().map(|p| p.claim.key.clone()).zip(results).collect()))
            }
            Outcome::NoFit(d) => Ok(NodeResult::NoFit(d)),
        }
    }

    /// Whether Filter applies the DynamicResources `filterTimeout`
    /// ([`Feature::DRASchedulerFilterTimeout`](crate::framework::Feature::DRASchedulerFilterTimeout) when PreFilter ran).
    pub fn filter_timeout_enabled(&self) -> bool {
        self.filter_timeout
    }

    /// Whether the pod requests extended resources backed by DRA (Filter then needs the
    /// node's allocatable: [`PodClaims::fits_on`]).
    pub fn has_extended_resources(&self) -> bool {
        self.extended.is_some()
    }

    /// Whether Score has anything to add up: a claim to allocate has a `firstAvailable`
    /// request, or a claim allocated earlier used a subrequest
    /// ([`PodClaims::prioritized_list_score`]).
    pub fn has_prioritized_lists(&self) -> bool {
        self.prioritized
    }

    /// The DynamicResources Score of a node (upstream `dynamicresources.go`,
    /// `computeScore`): allocates on the node as Filter does and, for every
    /// `firstAvailable` request, adds `8 - i` when the allocation uses its subrequest
    /// `i` (8 is upstream's `FirstAvailableDeviceRequestMaxSize`), so nodes serving
    /// earlier subrequests score higher. Claims allocated in an earlier cycle add the
    /// same for the subrequests their `status.allocation` names (upstream's fix that
    /// reads `claim.Status.Allocation` in `computeScore`), but only on nodes where the
    /// pod still has claims to allocate: upstream keeps no per-node allocation, and
    /// scores 0, when Filter ran no allocator. 0 when the claims don't fit.
    pub fn prioritized_list_score(
        &self,
        node: Symbol,
        labels: &Labels,
        allocatable: &Resources,
    ) -> Result<i64, AllocError> {
        if !self.prioritized {
            return Ok(0);
        }
        let Ok(mask) = self.extended_mask(allocatable) else { return Ok(0) };
        let (plans, slots) = self.plans_for(mask);
        if plans.is_empty() {
            // Only the extended-resource claim was to allocate and the node's device
            // plugin serves it: Filter still ran the allocator upstream.
            return Ok(if self.extended.is_some() { self.allocated_score } else { 0 });
        }
        let picks = match self.search(plans, slots, node, labels, None)? {
            Outcome::Fit(picks) => picks,
            Outcome::NoFit(_) => return Ok(0),
        };
        let mut score = self.allocated_score;
        let mut seen: SmallVec<[(u16, u16, u16); 8]> = SmallVec::new();
        for p in &picks {
            let req = &plans[p.claim as usize].claim.requests[p.request as usize];
            let Some(alt) = req.alternatives.get(p.alt as usize) else { continue };
            if alt.result_name == req.name || seen.contains(&(p.claim, p.request, p.alt)) {
                continue;
            }
            seen.push((p.claim, p.request, p.alt));
            score += FIRST_AVAILABLE_MAX - i64::from(p.alt);
        }
        Ok(score)
    }

    /// The claim (`namespace/name`) made for the pod's extended resources in an earlier
    /// attempt, if one exists: upstream fails Filter on every node with "cannot schedule
    /// extended resource claim" and deletes it in PostFilter.
    pub fn stale_extended_claim(&self) -> Option<&str> {
        self.stale_extended.as_deref()
    }

    /// One allocator search with this pod's world, devices in use, chooser and step
    /// budget.
    fn search(
        &self,
        plans: &[ClaimPlan],
        slots: &[(u16, u16)],
        node: Symbol,
        labels: &Labels,
        timeout: Option<allocator::Timeout<'_>>,
    ) -> Result<Outcome, AllocError> {
        allocator::run(
            &self.world,
            &self.in_use,
            plans,
            slots,
            node,
            labels,
            self.chooser.as_deref(),
            self.budget,
            timeout,
            self.list_attributes,
        )
    }

    fn fits_allocated(&self, node: Symbol, labels: &Labels) -> Result<(), Diagnosis> {
        for a in &self.allocated {
            if let Some(sel) = &a.node_selector
                && !sel.matches(labels, node)
            {
                return Err(Diagnosis {
                    node: node.to_string(),
                    problems: vec![allocator::Problem::Unsatisfiable {
                        claim: a.key.clone(),
                        causes: vec!["allocated on other nodes: node selector".to_owned()],
                    }],
                });
            }
        }
        Ok(())
    }

    /// Whether allocation depends on node labels (some device is reachable through a
    /// node selector).
    pub fn needs_node_labels(&self) -> bool {
        (!self.plans.is_empty() || self.extended.is_some()) && self.world.has_selector_scoped()
    }

    /// Keys of claims the pod still needs allocated.
    pub fn to_allocate(&self) -> impl Iterator<Item = &str> {
        self.plans.iter().map(|p| p.claim.key.as_str())
    }

    /// Keys of the pod's claims that are already allocated.
    pub fn already_allocated(&self) -> impl Iterator<Item = &str> {
        self.allocated.iter().map(|a| a.key.as_str())
    }

    /// Allocated claims of the pod whose binding failed, or that waited longer than
    /// `timeout` since `allocated_at` for their binding conditions at clock time `now`
    /// (upstream Filter's `isClaimReadyForBinding` / `isClaimTimeout`): such claims are
    /// unavailable and PostFilter may deallocate them. Empty with binding conditions off.
    pub fn unavailable_claims(&self, now: std::time::Duration, timeout: std::time::Duration) -> Vec<(String, String)> {
        self.unavailable_claims_on(now, None, timeout)
    }

    /// [`PodClaims::unavailable_claims`] on a clock whose zero is `epoch_unix_nanos` of
    /// wall-clock time ([`Clock::unix_epoch_nanos`](crate::framework::Clock::unix_epoch_nanos)):
    /// a claim allocated before the store saw it (no recorded clock time) then starts its
    /// binding timeout at its `status.allocation.allocationTimestamp`, placed on the
    /// clock, as upstream's `isClaimTimeout` compares that timestamp with `time.Now()`.
    /// Without an epoch such claims never time out.
    pub fn unavailable_claims_on(
        &self,
        now: std::time::Duration,
        epoch_unix_nanos: Option<i128>,
        timeout: std::time::Duration,
    ) -> Vec<(String, String)> {
        if !self.binding {
            return Vec::new();
        }
        let mut out = Vec::new();
        for a in &self.allocated {
            match &a.binding {
                BindingState::Ready => {}
                BindingState::Failed(e) => out.push((a.key.clone(), e.to_string())),
                BindingState::Pending => {
                    let nanos = |d: std::time::Duration| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX);
                    let start = a.allocated_at.map(nanos).or_else(|| Some(a.allocation_timestamp? - epoch_unix_nanos?));
                    if start.is_some_and(|t| t.saturating_add(nanos(timeout)) < nanos(now)) {
                        out.push((a.key.clone(), format!("claim {} timed out waiting for binding conditions", a.key)));
                    }
                }
            }
        }
        out
    }
}
