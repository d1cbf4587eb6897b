//! Plugin results (upstream `framework.Status` and `Code`, `pkg/scheduler/framework/interface.go`).

use std::borrow::Cow;
use std::fmt;

/// What a plugin's answer means for the cycle. Same codes and meanings as upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Code {
    /// The plugin ran and found nothing wrong.
    #[default]
    Success,
    /// An internal error: the pod is retried, never treated as "doesn't fit".
    Error,
    /// The pod doesn't fit now; preemption might help.
    Unschedulable,
    /// The pod doesn't fit and preemption can't help (PostFilter skips such nodes).
    UnschedulableAndUnresolvable,
    /// Permit only: hold the pod until allowed or timed out.
    Wait,
    /// PreFilter/PreScore: this plugin has nothing to do for this pod, skip its
    /// Filter/Score. Bind: let the next Bind plugin decide.
    Skip,
    /// The pod can't be scheduled until something else happens (e.g. a PreEnqueue
    /// gate or a claim still being allocated); like Unschedulable but never preempts.
    Pending,
}

impl Code {
    /// Upstream's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Success => "Success",
            Code::Error => "Error",
            Code::Unschedulable => "Unschedulable",
            Code::UnschedulableAndUnresolvable => "UnschedulableAndUnresolvable",
            Code::Wait => "Wait",
            Code::Skip => "Skip",
            Code::Pending => "Pending",
        }
    }
}

/// Reasons text: literals are borrowed, so the common single constant reason
/// (`Insufficient cpu`) costs no allocation.
pub type Reason = Cow<'static, str>;

#[derive(Clone, Default)]
enum Reasons {
    #[default]
    None,
    One(Reason),
    Many(Vec<Reason>),
    /// A fixed list of literals (e.g. NodeResourcesFit's `Insufficient cpu, Insufficient
    /// memory`): several reasons without an allocation.
    Static(&'static [Reason]),
}

impl Reasons {
    #[inline]
    fn as_slice(&self) -> &[Reason] {
        match self {
            Reasons::None => &[],
            Reasons::One(r) => std::slice::from_ref(r),
            Reasons::Many(v) => v,
            Reasons::Static(s) => s,
        }
    }
}

/// Equal when the reason lists are: how they are stored doesn't matter.
impl PartialEq for Reasons {
    fn eq(&self, other: &Reasons) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Reasons {}

/// A plugin's answer: a code, and on failure the reasons and the failing plugin.
///
/// The success path is a bare code with no heap allocation, and so is a failure
/// with one constant reason (`Status::unschedulable("Insufficient cpu")`): reasons
/// are `Cow<'static, str>`. The framework, not the plugin, records which plugin
/// failed.
///
/// ```
/// use schedkit::framework::{Code, Status};
/// assert!(Status::SUCCESS.is_success());
/// let s = Status::unschedulable("Insufficient cpu");
/// assert_eq!(s.code(), Code::Unschedulable);
/// assert_eq!(s.reasons(), ["Insufficient cpu"]);
/// assert!(s.is_rejected());
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Status {
    code: Code,
    reasons: Reasons,
    plugin: Option<&'static str>,
}

impl Status {
    /// Success.
    pub const SUCCESS: Status = Status { code: Code::Success, reasons: Reasons::None, plugin: None };
    /// Skip, with no reason.
    pub const SKIP: Status = Status { code: Code::Skip, reasons: Reasons::None, plugin: None };

    /// A status with a code and no reasons.
    pub const fn from_code(code: Code) -> Status {
        Status { code, reasons: Reasons::None, plugin: None }
    }

    /// A status with a code and one literal reason, usable in a `const`. Returning a
    /// `const` status from a hot Filter lets the compiler write it with whole-word
    /// copies of a constant, which the caller reads back without a stall.
    pub(crate) const fn from_static(code: Code, reason: &'static str) -> Status {
        Status { code, reasons: Reasons::One(Cow::Borrowed(reason)), plugin: None }
    }

    /// A status with a code and a fixed list of literal reasons, without allocating
    /// (what a hot Filter returns when several resources are short at once).
    pub(crate) const fn from_static_list(code: Code, reasons: &'static [Reason]) -> Status {
        let reasons = match reasons {
            [] => Reasons::None,
            [one] => Reasons::One(match one {
                Cow::Borrowed(r) => Cow::Borrowed(*r),
                // A `const` slice of reasons can hold only borrowed ones.
                Cow::Owned(_) => return Status { code, reasons: Reasons::Static(reasons), plugin: None },
            }),
            _ => Reasons::Static(reasons),
        };
        Status { code, reasons, plugin: None }
    }

    /// A status with a code and one reason (a literal costs no allocation).
    pub fn new(code: Code, reason: impl Into<Reason>) -> Status {
        Status { code, reasons: Reasons::One(reason.into()), plugin: None }
    }

    /// A status with several reasons.
    pub fn with_reasons(code: Code, reasons: Vec<String>) -> Status {
        let mut r: Vec<Reason> = reasons.into_iter().map(Cow::Owned).collect();
        let reasons = match r.len() {
            0 => Reasons::None,
            1 => Reasons::One(r.pop().unwrap_or_default()),
            _ => Reasons::Many(r),
        };
        Status { code, reasons, plugin: None }
    }

    /// A status with several reasons that may be literals.
    pub fn with_reason_list(code: Code, mut reasons: Vec<Reason>) -> Status {
        let reasons = match reasons.len() {
            0 => Reasons::None,
            1 => Reasons::One(reasons.pop().unwrap_or_default()),
            _ => Reasons::Many(reasons),
        };
        Status { code, reasons, plugin: None }
    }

    /// `Unschedulable` with a reason.
    pub fn unschedulable(reason: impl Into<Reason>) -> Status {
        Status::new(Code::Unschedulable, reason)
    }

    /// `UnschedulableAndUnresolvable` with a reason.
    pub fn unresolvable(reason: impl Into<Reason>) -> Status {
        Status::new(Code::UnschedulableAndUnresolvable, reason)
    }

    /// `Error` with a message.
    pub fn error(message: impl Into<Reason>) -> Status {
        Status::new(Code::Error, message)
    }

    /// The code.
    #[inline]
    pub fn code(&self) -> Code {
        self.code
    }

    /// Reasons given (empty on success).
    pub fn reasons(&self) -> &[Reason] {
        self.reasons.as_slice()
    }

    /// The plugin that returned this status, when the framework recorded it.
    pub fn plugin(&self) -> Option<&'static str> {
        self.plugin
    }

    /// Records the failing plugin (the framework calls this; plugin names are
    /// interned `'static` strings). Allocation-free.
    #[must_use]
    #[inline]
    pub fn with_plugin(mut self, plugin: &'static str) -> Status {
        self.plugin = Some(plugin);
        self
    }

    /// Success (a missing status counts as success upstream, too).
    #[inline]
    pub fn is_success(&self) -> bool {
        self.code == Code::Success
    }

    /// Skip.
    #[inline]
    pub fn is_skip(&self) -> bool {
        self.code == Code::Skip
    }

    /// Unschedulable, UnschedulableAndUnresolvable or Pending: the pod doesn't fit,
    /// as opposed to an error.
    #[inline]
    pub fn is_rejected(&self) -> bool {
        matches!(self.code, Code::Unschedulable | Code::UnschedulableAndUnresolvable | Code::Pending)
    }

    /// The reasons joined with ", ", as upstream `Status.Message`.
    pub fn message(&self) -> String {
        self.reasons().join(", ")
    }
}

impl fmt::Debug for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Status");
        d.field("code", &self.code);
        if !self.reasons().is_empty() {
            d.field("reasons", &self.reasons());
        }
        if let Some(p) = self.plugin {
            d.field("plugin", &p);
        }
        d.finish()
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.plugin() {
            Some(p) => write!(f, "{} ({}): {}", self.code.as_str(), p, self.message()),
            None => write!(f, "{}: {}", self.code.as_str(), self.message()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_is_small_and_free() {
        assert!(std::mem::size_of::<Status>() <= 56, "{}", std::mem::size_of::<Status>());
        assert!(Status::SUCCESS.reasons().is_empty());
        assert_eq!(Status::default(), Status::SUCCESS);
    }

    #[test]
    fn plugin_is_recorded() {
        let s = Status::unschedulable("x").with_plugin("P");
        assert_eq!(s.plugin(), Some("P"));
        assert_eq!(s.to_string(), "Unschedulable (P): x");
        assert!(!Status::error("boom").is_rejected());
    }

    #[test]
    fn literal_reasons_are_borrowed() {
        let s = Status::unschedulable("Insufficient cpu").with_plugin("NodeResourcesFit");
        assert!(matches!(s.reasons()[0], Cow::Borrowed(_)));
        let owned = Status::unschedulable(format!("Insufficient {}", "example.com/foo"));
        assert!(matches!(owned.reasons()[0], Cow::Owned(_)));
        let many = Status::with_reasons(Code::Unschedulable, vec!["a".into(), "b".into()]);
        assert_eq!(many.message(), "a, b");
    }

    #[test]
    fn a_static_reason_list_equals_the_same_list_built_at_run_time() {
        const AB: &[Reason] = &[Cow::Borrowed("a"), Cow::Borrowed("b")];
        const A: &[Reason] = &[Cow::Borrowed("a")];
        let s = Status::from_static_list(Code::Unschedulable, AB);
        assert_eq!(s.reasons(), ["a", "b"]);
        assert_eq!(s.message(), "a, b");
        assert_eq!(s, Status::with_reasons(Code::Unschedulable, vec!["a".into(), "b".into()]));
        assert_eq!(Status::from_static_list(Code::Unschedulable, A), Status::unschedulable("a"));
        assert_eq!(Status::from_static_list(Code::Unschedulable, &[]), Status::from_code(Code::Unschedulable));
        assert_ne!(s, Status::unschedulable("a"));
    }
}
