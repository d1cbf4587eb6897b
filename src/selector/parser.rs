//! Recursive-descent parser for the CEL grammar (cel-spec `doc/langdef.md`, "Syntax"):
//!
//! ```text
//! Expr           = ConditionalOr ["?" ConditionalOr ":" Expr] ;
//! ConditionalOr  = [ConditionalOr "||"] ConditionalAnd ;
//! ConditionalAnd = [ConditionalAnd "&&"] Relation ;
//! Relation       = [Relation Relop] Addition ;
//! Addition       = [Addition ("+" | "-")] Multiplication ;
//! Multiplication = [Multiplication ("*" | "/" | "%")] Unary ;
//! Unary          = Member | "!" {"!"} Member | "-" {"-"} Member ;
//! Member         = Primary | Member "." IDENT ["(" [ExprList] ")"] | Member "[" Expr "]" ;
//! Primary        = ["."] IDENT ["(" [ExprList] ")"] | "(" Expr ")"
//!                | "[" [ListElems] [","] "]" | "{" [MapInits] [","] "}" | LITERAL ;
//! ListElems      = ["?"] Expr {"," ["?"] Expr} ;
//! MapInits       = ["?"] Expr ":" Expr {"," ["?"] Expr ":" Expr} ;
//! ```
//!
//! With cel-go's optional types (enabled in Kubernetes since 1.28), `a.?f` and `a[?k]`
//! select optionally, and `?` before a list element or map entry makes it optional.
//!
//! Binary operators are left-associative, `?:` is right-associative. As in cel-go's
//! parser, an even run of `!` or `-` cancels out and an odd run becomes one operator.

use super::ast::{BinaryOp, Expr, ExprKind, UnaryOp};
use super::error::SelectorError;
use super::lexer::{Tok, Token, tokenize};

/// Parses `src` into a tree, refusing with [`SelectorError::TooDeep`] what cel-go's
/// parser refuses for nesting deeper than `max_depth` (see [`Rule`] and [`depths`]),
/// and, as a safety bound of schedkit's own, any tree deeper than
/// [`TREE_DEPTH_FACTOR`] × `max_depth`.
pub(crate) fn parse(src: &str, max_depth: usize) -> Result<Expr, SelectorError> {
    let tokens = tokenize(src)?;
    let mut p = Parser { src, tokens, pos: 0, open: [0; RULES], max_depth, too_deep: false };
    // cel-go stops at the first count over the limit, so that error wins over any later
    // one; this parser notices it at the next `expr`.
    let e = p.expr().map_err(|e| if p.too_deep { SelectorError::TooDeep { limit: max_depth } } else { e })?;
    if p.too_deep {
        return Err(SelectorError::TooDeep { limit: max_depth });
    }
    if p.peek() != &Tok::Eof {
        let t = p.tokens[p.pos].clone();
        return Err(p.err(t.start, format!("unexpected {}", t.tok.describe())));
    }
    let (tree, visitor) = depths(&e);
    if visitor > max_depth || tree > max_depth.saturating_mul(TREE_DEPTH_FACTOR) {
        return Err(SelectorError::TooDeep { limit: max_depth });
    }
    Ok(e)
}

/// How much deeper than the nesting limit the tree itself may be.
///
/// cel-go bounds the tree only through its two counts, which leave some nodes
/// uncounted: a nesting level (one more open `expr`) may hold a list, map or global
/// call, a `!` or `-` and balanced `&&`/`||` trees besides what the visitor counts. So
/// cel-go accepts trees several times deeper than its limit (well over 1,000 levels
/// within the 10 KiB expression length). The checker and evaluator recurse once per
/// tree level, at up to about 3 KiB of stack per level in an unoptimised build (receiver
/// calls; about 2.5 KiB for lists under `&&`), so schedkit also refuses trees deeper than
/// this factor times the limit (500 levels by default), which fits a 2 MiB stack with
/// room to spare. This is a deliberate divergence from cel-go: it refuses only
/// expressions that put more than one uncounted node on a path for each counted one,
/// over hundreds of levels (such as `[true && true && true && true && !`…`[0]]` nested
/// more than 83 times); every single-kind nesting (parentheses, lists, maps, calls,
/// macros, operator, selection, index and ternary chains) reaches cel-go's own limit
/// first.
pub(crate) const TREE_DEPTH_FACTOR: usize = 2;

/// Depth of the tree, computed without recursion so that any tree is safe to measure.
#[cfg(test)]
pub(crate) fn tree_depth(root: &Expr) -> usize {
    depths(root).0
}

/// The depth of the tree, and the depth that cel-go's parse-tree visitor counts
/// (`checkAndIncrementRecursionDepth` in `parser/parser.go`, message "max recursion
/// depth exceeded"): the most nodes on one path from the root that are a conditional,
/// a binary operator other than `&&` and `||`, a selection (also `.?`), a receiver-style
/// call (including the macros `all`, `exists`, `exists_one`, `map`, `filter` and
/// `cel.bind`) or an index (also `[?`). Parentheses, lists, maps, global calls, `!`,
/// `-`, `&&` and `||` do not count. Computed without recursion.
pub(crate) fn depths(root: &Expr) -> (usize, usize) {
    let (mut tree, mut visitor) = (0, 0);
    let mut stack = vec![(root, 1usize, 0usize)];
    while let Some((e, d, v)) = stack.pop() {
        let counted = match &e.kind {
            ExprKind::Binary { op, .. } => !matches!(op, BinaryOp::And | BinaryOp::Or),
            ExprKind::Call { target, .. } => target.is_some(),
            ExprKind::Conditional { .. } | ExprKind::Select { .. } | ExprKind::Index { .. } => true,
            _ => false,
        };
        let v = v + usize::from(counted);
        tree = tree.max(d);
        visitor = visitor.max(v);
        for_each_child(e, |c| stack.push((c, d + 1, v)));
    }
    (tree, visitor)
}

/// Calls `f` on every direct child of `e`.
pub(crate) fn for_each_child<'e>(e: &'e Expr, mut f: impl FnMut(&'e Expr)) {
    match &e.kind {
        ExprKind::Select { operand, .. } | ExprKind::Unary { operand, .. } => f(operand),
        ExprKind::Index { operand, index, .. } => {
            f(operand);
            f(index);
        }
        ExprKind::Call { target, args, .. } => {
            if let Some(t) = target {
                f(t);
            }
            args.iter().for_each(f);
        }
        ExprKind::Binary { lhs, rhs, .. } => {
            f(lhs);
            f(rhs);
        }
        ExprKind::Conditional { cond, then, otherwise } => {
            f(cond);
            f(then);
            f(otherwise);
        }
        ExprKind::List { items, .. } => items.iter().for_each(f),
        ExprKind::Map { entries, .. } => {
            for (k, v) in entries {
                f(k);
                f(v);
            }
        }
        _ => {}
    }
}

/// Builds a balanced tree of `op` over `terms` (`ops[i]` is the position of the operator
/// between `terms[i]` and `terms[i + 1]`), splitting like cel-go's `balancer`.
fn balance(op: BinaryOp, terms: Vec<Expr>, ops: &[usize]) -> Expr {
    fn build(op: BinaryOp, terms: &mut [Option<Expr>], ops: &[usize], lo: usize, hi: usize) -> Expr {
        if lo == hi {
            return terms[lo].take().unwrap_or_else(|| node(ExprKind::Null, 0));
        }
        let mid = (lo + hi).div_ceil(2);
        let lhs = build(op, terms, ops, lo, mid - 1);
        let rhs = build(op, terms, ops, mid, hi);
        node(ExprKind::Binary { op, lhs: Box::new(lhs), rhs: Box::new(rhs) }, ops[mid - 1])
    }
    let n = terms.len();
    let mut slots: Vec<Option<Expr>> = terms.into_iter().map(Some).collect();
    build(op, &mut slots, ops, 0, n - 1)
}

/// The rules of cel-go's ANTLR grammar (`parser/gen/CEL.g4`) that can nest, whose open
/// contexts cel-go's parser counts, each rule separately.
///
/// cel-go (`parser/parser.go`) bounds nesting twice, both with `maxRecursionDepth`
/// (default 250, `parser/options.go`; Kubernetes keeps it):
///
/// 1. While parsing, a `recursionListener` adds one to a counter of the rule's own on
///    every enter-rule event and takes one off (not below zero) on every exit-rule
///    event; a counter above the limit fails the parse ("expression recursion limit
///    exceeded"). Ordinary rules (`expr`, `conditionalOr`, `conditionalAnd`, `unary`,
///    `primary`, `exprList`, `listInit`, `mapInitializerList`, `optExpr`, ...) enter
///    once and exit once. The left-recursive rules `relation`, `calc` and `member` enter
///    once per invocation (`EnterRecursionRule`); then, for each further operator or
///    suffix, the generated loop fires an exit event before `PushNewRecursionContext`
///    fires an enter event, so the count stays put; and `UnrollRecursionContexts` at
///    the end fires one exit per context of the chain (one plus the operators), which
///    may take the counter below the contexts still open further out (clamped at zero).
///    So an operator or suffix chain costs one level, the right operand of a relational
///    or arithmetic operator one more, and each nesting through parentheses, lists,
///    maps, call arguments or an index one level of `expr` and of every rule between.
/// 2. The parse-tree visitor counts conditionals, relational and arithmetic operators,
///    selections, receiver calls and indexes on one path ("max recursion depth
///    exceeded"; see [`depths`]).
///
/// Both apply, to the text before macro expansion (a macro is a receiver or global
/// call); `&&`/`||` chains count in neither (the visitor builds them balanced), and
/// `expressionSizeCodePointLimit` (100,000 code points) lies far beyond Kubernetes'
/// 10 KiB expression length. With the limit 250, the shapes of `tests/selector_depth.rs`
/// are accepted up to exactly these counts n (n + 1 is refused):
///
/// | shape (n = nesting count)                                   | n   | binding count (≤ 250)  |
/// |-------------------------------------------------------------|-----|------------------------|
/// | `(`ⁿ`true)`ⁿ, `!(`ⁿ, `-(`ⁿ, `[`ⁿ, `{1: `ⁿ, `int(`ⁿ, `dyn(`ⁿ   | 249 | `expr` etc.: n + 1     |
/// | `true ? (`ⁿ`true) : false`ⁿ, `false ? false : `ⁿ`true`      | 249 | `expr`: n + 1          |
/// | `[0][`ⁿ`0]`ⁿ` == 0`, `[1].all(x, `ⁿ (`exists`, `cel.bind`)  | 249 | `expr`, `member`: n + 1 |
/// | `1 + `ⁿ⁻¹`1 > 0` (also `-`, strings and `!=`)               | 250 | visitor: n − 1 + 1     |
/// | `'A'` + `.lowerAscii()`ⁿ + ` == 'a'`                        | 249 | visitor: n + 1         |
/// | `[1].map(x, `ⁿ`1).size() == 1`                              | 248 | visitor: n + 2         |
/// | `device.attributes['x']` + `.a`ⁿ or `['a']`ⁿ + ` == 1`      | 247 | visitor: n + 3         |
/// | `device.attributes['x']` + `.?a`ⁿ + `.hasValue()`           | 247 | visitor: n + 3         |
/// | `[true] == [(`ⁿ`true)]`ⁿ                                    | 83  | `relation`: 3n + 1     |
///
/// In the last, each level opens `relation` for the left-hand side, keeps it with the
/// `==` context, opens it again for the right operand and once more for the list
/// element, so the innermost `true` is in the (3n + 1)th open `relation`.
#[derive(Clone, Copy)]
enum Rule {
    Expr,
    ConditionalOr,
    ConditionalAnd,
    Relation,
    Calc,
    Unary,
    Member,
    Primary,
    ExprList,
    ListInit,
    MapInitializerList,
    OptExpr,
}

/// The number of [`Rule`]s.
const RULES: usize = 12;

/// The rules that one call of [`Parser::binary`] may have open, outermost first.
const BINARY_RULES: [Rule; 4] = [Rule::ConditionalOr, Rule::ConditionalAnd, Rule::Relation, Rule::Calc];

/// The rules that a [`Parser::binary`] call has open: from `outer` to `inner` (indexes
/// into [`BINARY_RULES`]), with the operators added to `relation` and `calc`.
#[derive(Clone, Copy)]
struct OpenRules {
    outer: u8,
    inner: u8,
    relation: usize,
    calc: usize,
}

struct Parser<'s> {
    src: &'s str,
    tokens: Vec<Token>,
    pos: usize,
    /// cel-go's count of open contexts of each [`Rule`].
    open: [usize; RULES],
    max_depth: usize,
    /// Some count went over `max_depth`: checked at each `expr` (every nesting passes
    /// through it), which keeps the recursion bounded and the frames of the other
    /// recursive functions free of error paths.
    too_deep: bool,
}

fn node(kind: ExprKind, pos: usize) -> Expr {
    Expr { kind, pos }
}

impl Parser<'_> {
    fn err(&self, at: usize, message: impl Into<String>) -> SelectorError {
        SelectorError::syntax(self.src, at, message)
    }

    fn peek(&self) -> &Tok {
        &self.tokens[self.pos.min(self.tokens.len() - 1)].tok
    }

    fn start(&self) -> usize {
        self.tokens[self.pos.min(self.tokens.len() - 1)].start
    }

    fn bump(&mut self) -> Token {
        let t = self.tokens[self.pos.min(self.tokens.len() - 1)].clone();
        if self.pos < self.tokens.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn expect(&mut self, want: &Tok, what: &str) -> Result<Token, SelectorError> {
        if self.peek() == want {
            Ok(self.bump())
        } else {
            let found = self.peek().describe();
            Err(self.err(self.start(), format!("expected {what}, found {found}")))
        }
    }

    /// An enter-rule event of cel-go's parser.
    fn enter(&mut self, rule: Rule) {
        let open = &mut self.open[rule as usize];
        *open += 1;
        self.too_deep |= *open > self.max_depth;
    }

    /// `times` exit-rule events of cel-go's parser (its counter never goes below zero).
    fn exit(&mut self, rule: Rule, times: usize) {
        let open = &mut self.open[rule as usize];
        *open = open.saturating_sub(times);
    }

    /// One more operator or suffix of a left-recursive rule: the exit event of the
    /// context so far, then the enter event of the one that wraps it.
    fn push_context(&mut self, rule: Rule) {
        self.exit(rule, 1);
        self.enter(rule);
    }

    // The recursive descent keeps each function's stack frame small (an unoptimised
    // build gives every local and temporary its own slot): the cycle expr -> binary ->
    // unary -> member -> primary -> expr repeats once per nesting level, up to
    // `max_depth` times, so the less common continuations live in separate functions.

    fn expr(&mut self) -> Result<Expr, SelectorError> {
        self.enter(Rule::Expr);
        if self.too_deep {
            return Err(SelectorError::TooDeep { limit: self.max_depth });
        }
        let cond = self.binary(2)?;
        let result = if self.peek() == &Tok::Question { self.ternary(cond) } else { Ok(cond) };
        self.exit(Rule::Expr, 1);
        result
    }

    /// `cond ? then : otherwise`, after `cond`.
    #[inline(never)]
    fn ternary(&mut self, cond: Expr) -> Result<Expr, SelectorError> {
        let pos = self.bump().start;
        let then = self.binary(2)?;
        self.expect(&Tok::Colon, "':'")?;
        let otherwise = self.expr()?;
        Ok(node(
            ExprKind::Conditional { cond: Box::new(cond), then: Box::new(then), otherwise: Box::new(otherwise) },
            pos,
        ))
    }

    fn binop(&self) -> Option<BinaryOp> {
        Some(match self.peek() {
            Tok::OrOr => BinaryOp::Or,
            Tok::AndAnd => BinaryOp::And,
            Tok::EqEq => BinaryOp::Eq,
            Tok::NotEq => BinaryOp::Ne,
            Tok::Lt => BinaryOp::Lt,
            Tok::Le => BinaryOp::Le,
            Tok::Gt => BinaryOp::Gt,
            Tok::Ge => BinaryOp::Ge,
            Tok::In => BinaryOp::In,
            Tok::Plus => BinaryOp::Add,
            Tok::Minus => BinaryOp::Sub,
            Tok::Star => BinaryOp::Mul,
            Tok::Slash => BinaryOp::Div,
            Tok::Percent => BinaryOp::Rem,
            _ => return None,
        })
    }

    /// Binary operators binding at least as tightly as `min_prec` (2 = `||`, 6 =
    /// multiplicative), by precedence climbing: left-associative, one stack frame per
    /// nesting level rather than one per precedence level. Chains of `||` or `&&` are
    /// built as balanced trees, as cel-go's parser does: the operators are associative
    /// (also in their error handling), and a balanced tree keeps long chains shallow.
    ///
    /// For the depth limit, a call stands for the invocations of cel-go's rules that
    /// parse the same text: from `conditionalOr` (`min_prec` 2), `conditionalAnd` (3),
    /// `relation` (4, or 5 for the right operand of a relational operator) or `calc`
    /// (6 and 7, right operands of arithmetic operators) inwards to `calc`. An operator
    /// of a rule ends the invocations of the rules inside it, and adds a context to its
    /// own if that is left-recursive.
    fn binary(&mut self, min_prec: u8) -> Result<Expr, SelectorError> {
        let mut open = self.open_binary(min_prec);
        let mut lhs = self.unary()?;
        self.exit(Rule::Unary, 1);
        while let Some(op) = self.binop().filter(|op| op.precedence() >= min_prec) {
            self.binary_context(&mut open, op);
            lhs = self.binary_rhs(lhs, op)?;
        }
        self.close_binary(open, open.outer);
        Ok(lhs)
    }

    /// Enters the rules of a [`Parser::binary`] call.
    #[inline(never)]
    fn open_binary(&mut self, min_prec: u8) -> OpenRules {
        let outer = match min_prec {
            2 => 0,
            3 => 1,
            4 | 5 => 2,
            _ => 3,
        };
        for &rule in &BINARY_RULES[usize::from(outer)..] {
            self.enter(rule);
        }
        OpenRules { outer, inner: 3, relation: 0, calc: 0 }
    }

    /// Leaves the rules inside that of `op`, and adds a context to it if it is
    /// left-recursive.
    #[inline(never)]
    fn binary_context(&mut self, open: &mut OpenRules, op: BinaryOp) {
        let level = op.precedence().min(5) - 2;
        debug_assert!(level <= open.inner);
        self.close_binary(*open, level + 1);
        open.inner = level;
        match BINARY_RULES[usize::from(level)] {
            Rule::Relation => open.relation += 1,
            Rule::Calc => open.calc += 1,
            _ => return,
        }
        self.push_context(BINARY_RULES[usize::from(level)]);
    }

    /// Leaves the rules of `open` from its innermost out to `outer`.
    #[inline(never)]
    fn close_binary(&mut self, open: OpenRules, outer: u8) {
        for level in outer..=open.inner {
            let times = match BINARY_RULES[usize::from(level)] {
                Rule::Relation => open.relation,
                Rule::Calc => open.calc,
                _ => 0,
            };
            self.exit(BINARY_RULES[usize::from(level)], 1 + times);
        }
    }

    /// `lhs op rhs`, or a whole chain of `op` when it is `&&` or `||`.
    #[inline(never)]
    fn binary_rhs(&mut self, lhs: Expr, op: BinaryOp) -> Result<Expr, SelectorError> {
        let prec = op.precedence();
        if matches!(op, BinaryOp::And | BinaryOp::Or) {
            let mut terms = vec![lhs];
            let mut ops = Vec::new();
            while self.binop() == Some(op) {
                ops.push(self.bump().start);
                terms.push(self.binary(prec + 1)?);
            }
            Ok(balance(op, terms, &ops))
        } else {
            let pos = self.bump().start;
            let rhs = self.binary(prec + 1)?;
            Ok(node(ExprKind::Binary { op, lhs: Box::new(lhs), rhs: Box::new(rhs) }, pos))
        }
    }

    /// Enters the `unary` rule, which the caller leaves.
    fn unary(&mut self) -> Result<Expr, SelectorError> {
        self.enter(Rule::Unary);
        match self.peek() {
            Tok::Bang | Tok::Minus => self.prefixed(),
            _ => self.member(),
        }
    }

    /// A run of `!` or `-` and its operand.
    #[inline(never)]
    fn prefixed(&mut self) -> Result<Expr, SelectorError> {
        let op = if self.peek() == &Tok::Bang { UnaryOp::Not } else { UnaryOp::Neg };
        let pos = self.start();
        let mut count = 0usize;
        let same = |t: &Tok| match op {
            UnaryOp::Not => t == &Tok::Bang,
            UnaryOp::Neg => t == &Tok::Minus,
        };
        while same(self.peek()) {
            self.bump();
            count += 1;
        }
        // A minus directly before a number literal is part of the literal.
        if op == UnaryOp::Neg && matches!(self.peek(), Tok::Int(_) | Tok::IntMinMagnitude | Tok::Double(_)) {
            return self.negative_literal(pos, count);
        }
        let operand = self.member()?;
        Ok(if count % 2 == 1 { node(ExprKind::Unary { op, operand: Box::new(operand) }, pos) } else { operand })
    }

    /// A negative number literal after a run of `count` minus signs at `pos`.
    #[inline(never)]
    fn negative_literal(&mut self, pos: usize, count: usize) -> Result<Expr, SelectorError> {
        // A literal `member` with its `primary`, as in `member()`.
        self.enter(Rule::Member);
        self.enter(Rule::Primary);
        self.exit(Rule::Primary, 1);
        let t = self.bump();
        let kind = match t.tok {
            Tok::Int(v) => ExprKind::Int(-v),
            Tok::Double(v) => ExprKind::Double(-v),
            _ => ExprKind::Int(i64::MIN),
        };
        let lit = self.member_suffix(node(kind, t.start.saturating_sub(1)))?;
        Ok(if (count - 1) % 2 == 1 {
            node(ExprKind::Unary { op: UnaryOp::Neg, operand: Box::new(lit) }, pos)
        } else {
            lit
        })
    }

    fn member(&mut self) -> Result<Expr, SelectorError> {
        self.enter(Rule::Member);
        let primary = self.primary()?;
        self.exit(Rule::Primary, 1);
        if matches!(self.peek(), Tok::Dot | Tok::DotQuestion | Tok::LBracket | Tok::LBracketQuestion | Tok::LBrace) {
            self.member_suffix(primary)
        } else {
            self.exit(Rule::Member, 1);
            Ok(primary)
        }
    }

    /// The selections, calls and indexes after `e`, in the `member` rule entered for
    /// `e`, which this leaves.
    fn member_suffix(&mut self, mut e: Expr) -> Result<Expr, SelectorError> {
        let mut pushed = 0;
        loop {
            if matches!(self.peek(), Tok::Dot | Tok::DotQuestion | Tok::LBracket | Tok::LBracketQuestion) {
                self.push_context(Rule::Member);
                pushed += 1;
            }
            match self.peek() {
                Tok::Dot | Tok::DotQuestion => {
                    let optional = self.bump().tok == Tok::DotQuestion;
                    let t = self.bump();
                    let Tok::Ident(field) = t.tok else {
                        return Err(self.err(
                            t.start,
                            format!("expected a field or method name after '.', found {}", t.tok.describe()),
                        ));
                    };
                    if self.peek() == &Tok::LParen {
                        if optional {
                            return Err(self.err(self.start(), "a method cannot be called with '.?'"));
                        }
                        self.bump();
                        let args = self.expr_list(&Tok::RParen)?;
                        e = node(ExprKind::Call { target: Some(Box::new(e)), function: field, args }, t.start);
                    } else {
                        e = node(ExprKind::Select { operand: Box::new(e), field, optional }, t.start);
                    }
                }
                Tok::LBracket | Tok::LBracketQuestion => {
                    let open = self.bump();
                    let optional = open.tok == Tok::LBracketQuestion;
                    let index = self.expr()?;
                    self.expect(&Tok::RBracket, "']'")?;
                    e = node(ExprKind::Index { operand: Box::new(e), index: Box::new(index), optional }, open.start);
                }
                Tok::LBrace if matches!(e.kind, ExprKind::Ident(_) | ExprKind::Select { .. }) => {
                    return Err(self.err(self.start(), "message construction is not supported"));
                }
                _ => {
                    self.exit(Rule::Member, 1 + pushed);
                    return Ok(e);
                }
            }
        }
    }

    /// Comma-separated call arguments up to the closing `)` (consumed); no trailing comma.
    fn expr_list(&mut self, close: &Tok) -> Result<Vec<Expr>, SelectorError> {
        let mut items = Vec::new();
        if self.peek() != close {
            self.enter(Rule::ExprList);
            loop {
                items.push(self.expr()?);
                if self.peek() == &Tok::Comma {
                    self.bump();
                    continue;
                }
                break;
            }
            self.exit(Rule::ExprList, 1);
        }
        self.expect(close, "')'")?;
        Ok(items)
    }

    /// Enters the `primary` rule, which the caller leaves.
    fn primary(&mut self) -> Result<Expr, SelectorError> {
        self.enter(Rule::Primary);
        match self.peek() {
            Tok::LParen => {
                self.pos += 1;
                let e = self.expr()?;
                self.expect(&Tok::RParen, "')'")?;
                Ok(e)
            }
            Tok::LBracket | Tok::LBracketQuestion => self.list_elements(),
            Tok::LBrace => self.map_entries(),
            Tok::Ident(_) | Tok::Dot => self.named(),
            _ => self.literal(),
        }
    }

    /// An identifier or a global call, possibly with a leading '.' (the root namespace:
    /// `.device` is `device`).
    #[inline(never)]
    fn named(&mut self) -> Result<Expr, SelectorError> {
        let mut t = self.bump();
        if t.tok == Tok::Dot {
            t = self.bump();
            if !matches!(t.tok, Tok::Ident(_)) {
                return Err(self.err(t.start, "expected an identifier after '.'"));
            }
        }
        let Tok::Ident(name) = t.tok else {
            return Err(self.err(t.start, format!("unexpected {}", t.tok.describe())));
        };
        if self.peek() == &Tok::LParen {
            self.bump();
            let args = self.expr_list(&Tok::RParen)?;
            return Ok(node(ExprKind::Call { target: None, function: name, args }, t.start));
        }
        Ok(node(ExprKind::Ident(name), t.start))
    }

    /// A literal (or an unexpected token).
    #[inline(never)]
    fn literal(&mut self) -> Result<Expr, SelectorError> {
        let t = self.bump();
        let pos = t.start;
        let kind = match t.tok {
            Tok::Int(v) => ExprKind::Int(v),
            Tok::IntMinMagnitude => {
                return Err(self.err(pos, "integer literal out of range"));
            }
            Tok::Uint(v) => ExprKind::Uint(v),
            Tok::Double(v) => ExprKind::Double(v),
            Tok::Str(s) => ExprKind::String(s),
            Tok::Bytes(b) => ExprKind::Bytes(b),
            Tok::True => ExprKind::Bool(true),
            Tok::False => ExprKind::Bool(false),
            Tok::Null => ExprKind::Null,
            other => {
                return Err(self.err(pos, format!("unexpected {}", other.describe())));
            }
        };
        Ok(node(kind, pos))
    }

    /// A list literal; `?x` marks an optional element, and `[?` opens a list whose
    /// first element is optional.
    #[inline(never)]
    fn list_elements(&mut self) -> Result<Expr, SelectorError> {
        let open = self.bump();
        let mut items = Vec::new();
        let mut optional = Vec::new();
        let mut next_optional = open.tok == Tok::LBracketQuestion;
        let any = next_optional || self.peek() != &Tok::RBracket;
        if any {
            self.enter(Rule::ListInit);
        }
        loop {
            if !next_optional && self.peek() == &Tok::RBracket {
                break;
            }
            if next_optional || self.peek() == &Tok::Question {
                if !next_optional {
                    self.bump();
                }
                optional.push(items.len());
                next_optional = false;
            }
            self.enter(Rule::OptExpr);
            items.push(self.expr()?);
            self.exit(Rule::OptExpr, 1);
            if self.peek() == &Tok::Comma {
                self.bump();
                continue;
            }
            break;
        }
        if any {
            self.exit(Rule::ListInit, 1);
        }
        self.expect(&Tok::RBracket, "']'")?;
        Ok(node(ExprKind::List { items, optional }, open.start))
    }

    /// A map literal; `?` before an entry makes it optional.
    #[inline(never)]
    fn map_entries(&mut self) -> Result<Expr, SelectorError> {
        let open = self.bump().start;
        let mut entries = Vec::new();
        let mut optional = Vec::new();
        let any = self.peek() != &Tok::RBrace;
        if any {
            self.enter(Rule::MapInitializerList);
        }
        while self.peek() != &Tok::RBrace {
            if self.peek() == &Tok::Question {
                self.bump();
                optional.push(entries.len());
            }
            entries.push(self.map_entry()?);
            if self.peek() == &Tok::Comma {
                self.bump();
            } else {
                break;
            }
        }
        if any {
            self.exit(Rule::MapInitializerList, 1);
        }
        self.expect(&Tok::RBrace, "'}'")?;
        Ok(node(ExprKind::Map { entries, optional }, open))
    }

    /// `key: value`.
    fn map_entry(&mut self) -> Result<(Expr, Expr), SelectorError> {
        self.enter(Rule::OptExpr);
        let k = self.expr()?;
        self.exit(Rule::OptExpr, 1);
        self.expect(&Tok::Colon, "':'")?;
        Ok((k, self.expr()?))
    }
}
