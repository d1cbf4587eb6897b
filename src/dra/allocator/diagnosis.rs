//! Why a pod's claims don't fit on a node: the per-node [`Diagnosis`] and its
//! [`Problem`]s, with upstream's wording where upstream has one.

use std::fmt;

use super::INVALID_POOLS;

/// Why a node can't satisfy the pod's claims.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// Fewer usable devices than requested.
    TooFewDevices {
        /// `namespace/name`.
        claim: String,
        /// Request (best alternative).
        request: String,
        /// Devices on the node matching the selectors.
        matching: u32,
        /// Of those, not in use and tolerating taints.
        available: u32,
        /// Wanted (`None`: All, which needs at least one and all free).
        wanted: Option<u32>,
    },
    /// Enough devices exist, but no combination satisfies the claim's constraints or the
    /// pool's shared counters.
    Unsatisfiable {
        /// `namespace/name`.
        claim: String,
        /// The constraints that rejected combinations (`constraint matchAttribute X`,
        /// `shared counters`).
        causes: Vec<String>,
    },
    /// No solution, and pools gathered for the node are invalid (upstream `Allocate`:
    /// "invalid resource pools were encountered").
    InvalidPools {
        /// `driver/pool` and why it is invalid.
        pools: Vec<(String, String)>,
    },
    /// The pod requests an extended resource that no device class serves and the node
    /// does not list (upstream Filter: "cannot fit resource").
    ResourceNotOnNode {
        /// The resource.
        resource: String,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::TooFewDevices { claim, request, matching, available, wanted } => match wanted {
                Some(w) => write!(
                    f,
                    "claim {claim}, request {request}: {available} of {w} requested devices available ({matching} match)"
                ),
                None => write!(
                    f,
                    "claim {claim}, request {request}: allocationMode All: {available} of {matching} matching devices available"
                ),
            },
            Problem::ResourceNotOnNode { resource } => write!(f, "cannot fit resource {resource}"),
            Problem::InvalidPools { pools } => {
                f.write_str(INVALID_POOLS)?;
                for (pool, why) in pools {
                    write!(f, "; resource pool {pool} is invalid: {why}")?;
                }
                Ok(())
            }
            Problem::Unsatisfiable { claim, causes } => {
                write!(f, "claim {claim}: ")?;
                if causes.is_empty() {
                    return write!(f, "no combination of devices fits");
                }
                for (i, c) in causes.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{c} not satisfiable")?;
                }
                Ok(())
            }
        }
    }
}

/// Per-node diagnosis of a pod whose claims don't fit (schedkit extension; upstream only
/// reports "cannot allocate all claims").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnosis {
    /// The node.
    pub node: String,
    /// What failed.
    pub problems: Vec<Problem>,
}

impl fmt::Display for Diagnosis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: cannot allocate all claims", self.node)?;
        for p in &self.problems {
            write!(f, "; {p}")?;
        }
        Ok(())
    }
}
