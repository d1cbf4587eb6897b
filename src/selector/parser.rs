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

/// Parses `src` into a tree, enforcing `max_depth` on both parser recursion and the
/// depth of the resulting tree.
pub(crate) fn parse(src: &str, max_depth: usize) -> Result<Expr, SelectorError> {
    let tokens = tokenize(src)?;
    let mut p = Parser { src, tokens, pos: 0, depth: 0, max_depth };
    let e = p.expr()?;
    if p.peek() != &Tok::Eof {
        let t = p.tokens[p.pos].clone();
        return Err(p.err(t.start, format!("unexpected {}", t.tok.describe())));
    }
    if tree_depth(&e) > max_depth {
        return Err(SelectorError::TooDeep { limit: max_depth });
    }
    Ok(e)
}

/// Depth of the tree, computed without recursion so that any tree is safe to measure.
pub(crate) fn tree_depth(root: &Expr) -> usize {
    let mut max = 0;
    let mut stack = vec![(root, 1usize)];
    while let Some((e, d)) = stack.pop() {
        max = max.max(d);
        for_each_child(e, |c| stack.push((c, d + 1)));
    }
    max
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

struct Parser<'s> {
    src: &'s str,
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
    max_depth: usize,
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

    fn enter(&mut self) -> Result<(), SelectorError> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(SelectorError::TooDeep { limit: self.max_depth });
        }
        Ok(())
    }

    // The recursive descent keeps each function's stack frame small (an unoptimised
    // build gives every local and temporary its own slot): the cycle expr -> binary ->
    // unary -> member -> primary -> expr repeats once per nesting level, up to
    // `max_depth` times, so the less common continuations live in separate functions.

    fn expr(&mut self) -> Result<Expr, SelectorError> {
        self.enter()?;
        let cond = self.binary(2)?;
        let result = if self.peek() == &Tok::Question { self.ternary(cond) } else { Ok(cond) };
        self.depth -= 1;
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
    fn binary(&mut self, min_prec: u8) -> Result<Expr, SelectorError> {
        let mut lhs = self.unary()?;
        while let Some(op) = self.binop().filter(|op| op.precedence() >= min_prec) {
            lhs = self.binary_rhs(lhs, op)?;
        }
        Ok(lhs)
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

    fn unary(&mut self) -> Result<Expr, SelectorError> {
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
        let primary = self.primary()?;
        if matches!(self.peek(), Tok::Dot | Tok::DotQuestion | Tok::LBracket | Tok::LBracketQuestion | Tok::LBrace) {
            self.member_suffix(primary)
        } else {
            Ok(primary)
        }
    }

    fn member_suffix(&mut self, mut e: Expr) -> Result<Expr, SelectorError> {
        loop {
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
                _ => return Ok(e),
            }
        }
    }

    /// Comma-separated call arguments up to the closing `)` (consumed); no trailing comma.
    fn expr_list(&mut self, close: &Tok) -> Result<Vec<Expr>, SelectorError> {
        let mut items = Vec::new();
        if self.peek() != close {
            loop {
                items.push(self.expr()?);
                if self.peek() == &Tok::Comma {
                    self.bump();
                    continue;
                }
                break;
            }
        }
        self.expect(close, "')'")?;
        Ok(items)
    }

    fn primary(&mut self) -> Result<Expr, SelectorError> {
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
            items.push(self.expr()?);
            if self.peek() == &Tok::Comma {
                self.bump();
                continue;
            }
            break;
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
        self.expect(&Tok::RBrace, "'}'")?;
        Ok(node(ExprKind::Map { entries, optional }, open))
    }

    /// `key: value`.
    fn map_entry(&mut self) -> Result<(Expr, Expr), SelectorError> {
        let k = self.expr()?;
        self.expect(&Tok::Colon, "':'")?;
        Ok((k, self.expr()?))
    }
}
