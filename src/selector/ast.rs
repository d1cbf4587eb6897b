//! The parsed expression tree and its printer.
//!
//! [`Expr`]'s `Display` prints source text that parses back to an equal tree (equality
//! ignores source positions); the `selector_roundtrip` property test checks this.

use std::fmt;

/// A unary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    /// `!x`
    Not,
    /// `-x`
    Neg,
}

/// A binary operator, from loosest to tightest binding group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    /// `||`
    Or,
    /// `&&`
    And,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `in`
    In,
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Rem,
}

impl BinaryOp {
    /// Binding strength; higher binds tighter. The CEL grammar's levels: `||` < `&&` <
    /// relations < additive < multiplicative.
    pub fn precedence(self) -> u8 {
        match self {
            BinaryOp::Or => 2,
            BinaryOp::And => 3,
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge | BinaryOp::In => 4,
            BinaryOp::Add | BinaryOp::Sub => 5,
            BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => 6,
        }
    }

    /// The operator's source text.
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Or => "||",
            BinaryOp::And => "&&",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::In => "in",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
        }
    }

    /// The CEL function name of the operator (`_==_`, `@in`, ...), as used in messages.
    pub fn function_name(self) -> &'static str {
        match self {
            BinaryOp::Or => "_||_",
            BinaryOp::And => "_&&_",
            BinaryOp::Eq => "_==_",
            BinaryOp::Ne => "_!=_",
            BinaryOp::Lt => "_<_",
            BinaryOp::Le => "_<=_",
            BinaryOp::Gt => "_>_",
            BinaryOp::Ge => "_>=_",
            BinaryOp::In => "@in",
            BinaryOp::Add => "_+_",
            BinaryOp::Sub => "_-_",
            BinaryOp::Mul => "_*_",
            BinaryOp::Div => "_/_",
            BinaryOp::Rem => "_%_",
        }
    }
}

/// One node of the tree. `span` is the byte range of the node's main token in the
/// source (used for error positions); it is ignored by `==`.
#[derive(Debug, Clone)]
pub struct Expr {
    /// What the node is.
    pub kind: ExprKind,
    /// Byte offset of the node's main token (operator, identifier, literal, call name).
    pub pos: usize,
}

impl PartialEq for Expr {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
    }
}

/// The node kinds. Macros (`has`, `all`, `exists`, `exists_one`, `map`, `filter`,
/// `cel.bind`) stay calls in the tree and are expanded by the compiler.
#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// A signed 64-bit literal.
    Int(i64),
    /// An unsigned literal (`1u`).
    Uint(u64),
    /// A double literal.
    Double(f64),
    /// A string literal, decoded.
    String(String),
    /// A bytes literal, decoded.
    Bytes(Vec<u8>),
    /// A variable or a namespace (`device`, `cel`).
    Ident(String),
    /// `operand.field`, or `operand.?field` (optional selection)
    Select {
        /// The value selected from.
        operand: Box<Expr>,
        /// The field name.
        field: String,
        /// `.?`: an optional selection, `optional.none()` when the field is absent.
        optional: bool,
    },
    /// `operand[index]`, or `operand[?index]` (optional indexing)
    Index {
        /// The list or map.
        operand: Box<Expr>,
        /// The index or key.
        index: Box<Expr>,
        /// `[?`: an optional index, `optional.none()` when the key is absent.
        optional: bool,
    },
    /// `function(args)` or `target.function(args)`
    Call {
        /// The receiver of a method call.
        target: Option<Box<Expr>>,
        /// The function name.
        function: String,
        /// The arguments.
        args: Vec<Expr>,
    },
    /// `!x`, `-x`
    Unary {
        /// The operator.
        op: UnaryOp,
        /// The operand.
        operand: Box<Expr>,
    },
    /// `lhs op rhs`
    Binary {
        /// The operator.
        op: BinaryOp,
        /// Left operand.
        lhs: Box<Expr>,
        /// Right operand.
        rhs: Box<Expr>,
    },
    /// `cond ? then : otherwise`
    Conditional {
        /// The condition.
        cond: Box<Expr>,
        /// Value when true.
        then: Box<Expr>,
        /// Value when false.
        otherwise: Box<Expr>,
    },
    /// `[a, b]`, or with optional elements `[a, ?b]`
    List {
        /// The elements.
        items: Vec<Expr>,
        /// Positions in `items` of the optional elements (`?b`, cel-go optional types):
        /// such an element is an optional value whose content is included only when
        /// present. Ascending.
        optional: Vec<usize>,
    },
    /// `{k: v}`, or with optional entries `{?k: v}`
    Map {
        /// The entries, key then value.
        entries: Vec<(Expr, Expr)>,
        /// Positions in `entries` of the optional entries (`?k: v`): the value is an
        /// optional and the entry exists only when it is present. Ascending.
        optional: Vec<usize>,
    },
}

const PREC_CONDITIONAL: u8 = 1;
const PREC_UNARY: u8 = 7;
const PREC_MEMBER: u8 = 8;

impl Expr {
    fn precedence(&self) -> u8 {
        match &self.kind {
            ExprKind::Conditional { .. } => PREC_CONDITIONAL,
            ExprKind::Binary { op, .. } => op.precedence(),
            ExprKind::Unary { .. } => PREC_UNARY,
            // A negative literal prints with a leading '-', which reads as unary.
            ExprKind::Int(v) if *v < 0 => PREC_UNARY,
            ExprKind::Double(v) if v.is_sign_negative() => PREC_UNARY,
            _ => PREC_MEMBER,
        }
    }

    fn write_at(&self, f: &mut fmt::Formatter<'_>, min_prec: u8) -> fmt::Result {
        if self.precedence() < min_prec {
            f.write_str("(")?;
            self.write_bare(f)?;
            f.write_str(")")
        } else {
            self.write_bare(f)
        }
    }

    fn write_bare(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ExprKind::Null => f.write_str("null"),
            ExprKind::Bool(b) => write!(f, "{b}"),
            ExprKind::Int(v) => write!(f, "{v}"),
            ExprKind::Uint(v) => write!(f, "{v}u"),
            ExprKind::Double(v) => write_double(f, *v),
            ExprKind::String(s) => write_string(f, s),
            ExprKind::Bytes(b) => write_bytes(f, b),
            ExprKind::Ident(name) => f.write_str(name),
            ExprKind::Select { operand, field, optional } => {
                operand.write_at(f, PREC_MEMBER)?;
                write!(f, "{}{field}", if *optional { ".?" } else { "." })
            }
            ExprKind::Index { operand, index, optional } => {
                operand.write_at(f, PREC_MEMBER)?;
                f.write_str(if *optional { "[?" } else { "[" })?;
                index.write_at(f, 0)?;
                f.write_str("]")
            }
            ExprKind::Call { target, function, args } => {
                if let Some(t) = target {
                    t.write_at(f, PREC_MEMBER)?;
                    f.write_str(".")?;
                }
                write!(f, "{function}(")?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    a.write_at(f, 0)?;
                }
                f.write_str(")")
            }
            ExprKind::Unary { op, operand } => {
                f.write_str(match op {
                    UnaryOp::Not => "!",
                    UnaryOp::Neg => "-",
                })?;
                // The grammar puts a member expression after a unary operator; a numeric
                // literal is parenthesised so that `-(1)` does not fold into `-1`.
                let needs_parens = operand.precedence() < PREC_MEMBER
                    || matches!(operand.kind, ExprKind::Int(_) | ExprKind::Double(_));
                if needs_parens {
                    f.write_str("(")?;
                    operand.write_bare(f)?;
                    f.write_str(")")
                } else {
                    operand.write_bare(f)
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let p = op.precedence();
                // `&&`/`||` chains are balanced by the parser, so a nested chain on
                // either side is parenthesised to read back as the same tree.
                let lp = if matches!(op, BinaryOp::And | BinaryOp::Or) { p + 1 } else { p };
                lhs.write_at(f, lp)?;
                write!(f, " {} ", op.symbol())?;
                rhs.write_at(f, p + 1)
            }
            ExprKind::Conditional { cond, then, otherwise } => {
                cond.write_at(f, PREC_CONDITIONAL + 1)?;
                f.write_str(" ? ")?;
                then.write_at(f, PREC_CONDITIONAL + 1)?;
                f.write_str(" : ")?;
                otherwise.write_at(f, PREC_CONDITIONAL)
            }
            ExprKind::List { items, optional } => {
                f.write_str("[")?;
                for (i, a) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    if optional.contains(&i) {
                        f.write_str("?")?;
                    }
                    a.write_at(f, 0)?;
                }
                f.write_str("]")
            }
            ExprKind::Map { entries, optional } => {
                f.write_str("{")?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    if optional.contains(&i) {
                        f.write_str("?")?;
                    }
                    k.write_at(f, 0)?;
                    f.write_str(": ")?;
                    v.write_at(f, 0)?;
                }
                f.write_str("}")
            }
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_at(f, 0)
    }
}

fn write_double(f: &mut fmt::Formatter<'_>, v: f64) -> fmt::Result {
    if v.is_nan() {
        // No literal spells NaN; a division that produces it reads back as a division.
        return f.write_str("(0.0 / 0.0)");
    }
    if v.is_infinite() {
        return f.write_str(if v > 0.0 { "(1.0 / 0.0)" } else { "(-1.0 / 0.0)" });
    }
    // `{:?}` keeps a `.0` or exponent, so the text lexes as a double again.
    let text = format!("{v:?}");
    if text.contains(['.', 'e', 'E']) { f.write_str(&text) } else { write!(f, "{text}.0") }
}

fn write_string(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    f.write_str("\"")?;
    for c in s.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            '\t' => f.write_str("\\t")?,
            c if c.is_control() => write!(f, "\\u{:04x}", u32::from(c))?,
            c => write!(f, "{c}")?,
        }
    }
    f.write_str("\"")
}

fn write_bytes(f: &mut fmt::Formatter<'_>, b: &[u8]) -> fmt::Result {
    f.write_str("b\"")?;
    for &x in b {
        match x {
            b'"' => f.write_str("\\\"")?,
            b'\\' => f.write_str("\\\\")?,
            0x20..=0x7e => write!(f, "{}", char::from(x))?,
            _ => write!(f, "\\x{x:02x}")?,
        }
    }
    f.write_str("\"")
}
