//! Typed errors: [`SelectorError`] when a selector is compiled, [`EvalError`] when it is
//! evaluated against a device.

use std::borrow::Cow;
use std::fmt;

/// Why a selector expression was refused at compile time.
///
/// Syntax, type and regex errors carry the 1-based line and column (counted in
/// characters) of the offending token and a two-line `snippet`: the source line and a
/// caret under the token, as in
///
/// ```text
///  | device.driver == 1 +
///  | ....................^
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SelectorError {
    /// The text is not a well-formed expression.
    #[error("syntax error at line {line}, column {column}: {message}\n{snippet}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// What is wrong.
        message: String,
        /// The source line and a caret under the offending position.
        snippet: String,
    },
    /// The expression is well formed but a sub-expression has the wrong type, calls an
    /// unknown function, or names an unknown variable.
    #[error("type error at line {line}, column {column}: {message}\n{snippet}")]
    Type {
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// What is wrong, naming the sub-expression and the types involved.
        message: String,
        /// The source line and a caret under the offending sub-expression.
        snippet: String,
    },
    /// A constant regular expression given to `matches`, `find` or `findAll` does not
    /// compile (bad syntax, or larger than the size limit).
    #[error("invalid regular expression at line {line}, column {column}: {message}\n{snippet}")]
    Regex {
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// The regex engine's explanation.
        message: String,
        /// The source line and a caret under the pattern.
        snippet: String,
    },
    /// The expression text is longer than [`super::MAX_EXPRESSION_LENGTH`].
    #[error("expression is {length} bytes long, the limit is {limit} bytes")]
    TooLong {
        /// Length of the text in bytes.
        length: usize,
        /// The limit.
        limit: usize,
    },
    /// The expression nests deeper than [`super::MAX_NESTING_DEPTH`].
    #[error("expression nests deeper than the limit of {limit} levels")]
    TooDeep {
        /// The limit.
        limit: usize,
    },
    /// The worst-case cost estimate exceeds the budget.
    #[error(
        "estimated worst-case cost {estimated} exceeds the limit {limit}; \
         simplify the expression (fewer or smaller loops)"
    )]
    CostLimitExceeded {
        /// The estimate (saturating).
        estimated: u64,
        /// The limit it was compiled with.
        limit: u64,
    },
}

impl SelectorError {
    pub(crate) fn syntax(src: &str, at: usize, message: impl Into<String>) -> Self {
        let (line, column, snippet) = locate(src, at);
        SelectorError::Syntax { line, column, message: message.into(), snippet }
    }

    pub(crate) fn type_error(src: &str, at: usize, message: impl Into<String>) -> Self {
        let (line, column, snippet) = locate(src, at);
        SelectorError::Type { line, column, message: message.into(), snippet }
    }

    pub(crate) fn regex(src: &str, at: usize, message: impl Into<String>) -> Self {
        let (line, column, snippet) = locate(src, at);
        SelectorError::Regex { line, column, message: message.into(), snippet }
    }

    /// The 1-based (line, column) of the error, where it has one.
    pub fn position(&self) -> Option<(usize, usize)> {
        match self {
            SelectorError::Syntax { line, column, .. }
            | SelectorError::Type { line, column, .. }
            | SelectorError::Regex { line, column, .. } => Some((*line, *column)),
            _ => None,
        }
    }
}

/// Line, column (both 1-based, column in chars) and the caret snippet for byte offset `at`.
fn locate(src: &str, at: usize) -> (usize, usize, String) {
    let mut at = at.min(src.len());
    while !src.is_char_boundary(at) {
        at -= 1;
    }
    let line_start = src[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_end = src[at..].find('\n').map_or(src.len(), |i| at + i);
    let line = src[..at].matches('\n').count() + 1;
    let column = src[line_start..at].chars().count() + 1;
    let text = src[line_start..line_end].trim_end_matches('\r');
    let snippet = format!(" | {text}\n | {}^", ".".repeat(column - 1));
    (line, column, snippet)
}

/// Why evaluating a selector against one device failed. Kubernetes treats such a device
/// as not allocatable for the request and reports the error; so does the DRA plugin.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalError {
    /// The device's name, as given to [`super::Device::new`].
    pub device: String,
    /// What went wrong.
    pub kind: EvalErrorKind,
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "device {:?}: {}", self.device, self.kind)
    }
}

impl std::error::Error for EvalError {}

/// The runtime failure, without the device.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EvalErrorKind {
    /// A map lookup (attribute, capacity or map literal) found no such key. Guard with
    /// `has(...)` or `"name" in map` to treat a missing attribute as "not matching".
    #[error("no such key: {key}{}", fmt_in(*.domain, *.capacity))]
    NoSuchKey {
        /// The missing key.
        key: Cow<'static, str>,
        /// For a lookup in `device.attributes[domain]` or `device.capacity[domain]`, the
        /// domain.
        domain: Option<&'static str>,
        /// Whether the lookup was in `device.capacity` rather than `device.attributes`.
        capacity: bool,
    },
    /// A function or operator was applied to values of types it has no overload for.
    #[error("no such overload: {function} applied to ({args})")]
    NoSuchOverload {
        /// The function or operator, e.g. `_<_` or `compareTo`.
        function: &'static str,
        /// The runtime argument types, comma separated.
        args: String,
    },
    /// Integer division or modulus by zero.
    #[error("division by zero")]
    DivisionByZero,
    /// Integer arithmetic overflowed (CEL makes this an error, not a wrap-around).
    #[error("integer overflow in {0}")]
    Overflow(&'static str),
    /// A list index outside the list.
    #[error("index {index} out of range for a list of size {size}")]
    IndexOutOfRange {
        /// The index.
        index: i64,
        /// The list's size.
        size: usize,
    },
    /// A function rejected its argument (bad quantity or semver text, bad regex, ...).
    #[error("{function}: {message}")]
    InvalidArgument {
        /// The function.
        function: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The actual evaluation cost exceeded the runtime limit.
    #[error("actual cost limit exceeded: more than {limit}")]
    CostLimitExceeded {
        /// The limit.
        limit: u64,
    },
    /// The whole expression evaluated to something other than a bool.
    #[error("CEL result of type {0} could not be converted to bool")]
    NotBool(&'static str),
}

fn fmt_in(domain: Option<&str>, capacity: bool) -> String {
    match domain {
        None => String::new(),
        Some(d) => {
            let map = if capacity { "capacity" } else { "attributes" };
            format!(" in device.{map}[{d:?}]")
        }
    }
}
