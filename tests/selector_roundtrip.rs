//! Property: printing a parsed tree and parsing the text again yields the same tree
//! (equality ignores source positions). Trees are generated directly, printed, and
//! parsed twice, so the property also covers trees the parser would never build
//! (double negations, negated literals, nested chains).

use proptest::prelude::*;
use schedkit::selector::{BinaryOp, Expr, ExprKind, UnaryOp, parse};

fn e(kind: ExprKind) -> Expr {
    Expr { kind, pos: 0 }
}

fn ident() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "device", "x", "cel", "has", "size", "_y1", "attributes"])
        .prop_map(str::to_owned)
}

fn leaf() -> impl Strategy<Value = Expr> {
    prop_oneof![
        Just(e(ExprKind::Null)),
        any::<bool>().prop_map(|b| e(ExprKind::Bool(b))),
        any::<i64>().prop_map(|v| e(ExprKind::Int(v))),
        any::<u64>().prop_map(|v| e(ExprKind::Uint(v))),
        any::<f64>().prop_filter("finite", |v| v.is_finite()).prop_map(|v| e(ExprKind::Double(v))),
        any::<String>().prop_map(|s| e(ExprKind::String(s))),
        prop::collection::vec(any::<u8>(), 0..6).prop_map(|b| e(ExprKind::Bytes(b))),
        ident().prop_map(|n| e(ExprKind::Ident(n))),
    ]
}

fn binop() -> impl Strategy<Value = BinaryOp> {
    prop::sample::select(vec![
        BinaryOp::Or,
        BinaryOp::And,
        BinaryOp::Eq,
        BinaryOp::Ne,
        BinaryOp::Lt,
        BinaryOp::Le,
        BinaryOp::Gt,
        BinaryOp::Ge,
        BinaryOp::In,
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Rem,
    ])
}

fn expr() -> impl Strategy<Value = Expr> {
    leaf().prop_recursive(5, 48, 4, |inner| {
        let b = |x: Expr| Box::new(x);
        prop_oneof![
            (inner.clone(), ident(), any::<bool>()).prop_map(move |(o, field, optional)| e(ExprKind::Select {
                operand: b(o),
                field,
                optional
            })),
            (inner.clone(), inner.clone(), any::<bool>()).prop_map(move |(o, i, optional)| e(ExprKind::Index {
                operand: b(o),
                index: b(i),
                optional
            })),
            (prop::option::of(inner.clone()), ident(), prop::collection::vec(inner.clone(), 0..3))
                .prop_map(move |(t, function, args)| e(ExprKind::Call { target: t.map(Box::new), function, args })),
            (prop::bool::ANY, inner.clone()).prop_map(move |(not, o)| e(ExprKind::Unary {
                op: if not { UnaryOp::Not } else { UnaryOp::Neg },
                operand: b(o)
            })),
            (binop(), inner.clone(), inner.clone()).prop_map(move |(op, l, r)| e(ExprKind::Binary {
                op,
                lhs: b(l),
                rhs: b(r)
            })),
            (inner.clone(), inner.clone(), inner.clone()).prop_map(move |(c, t, o)| e(ExprKind::Conditional {
                cond: b(c),
                then: b(t),
                otherwise: b(o)
            })),
            prop::collection::vec((inner.clone(), prop::bool::ANY), 0..3).prop_map(|v| {
                let optional = v.iter().enumerate().filter(|(_, (_, o))| *o).map(|(i, _)| i).collect();
                e(ExprKind::List { items: v.into_iter().map(|(x, _)| x).collect(), optional })
            }),
            prop::collection::vec((inner.clone(), inner, prop::bool::ANY), 0..3).prop_map(|v| {
                let optional = v.iter().enumerate().filter(|(_, (_, _, o))| *o).map(|(i, _)| i).collect();
                e(ExprKind::Map { entries: v.into_iter().map(|(k, x, _)| (k, x)).collect(), optional })
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn print_then_parse_is_identity(tree in expr()) {
        let text = tree.to_string();
        let parsed = parse(&text).map_err(|err| TestCaseError::fail(format!("{text}\n{err}")))?;
        let again_text = parsed.to_string();
        let again = parse(&again_text).map_err(|err| TestCaseError::fail(format!("{again_text}\n{err}")))?;
        prop_assert_eq!(&again, &parsed, "{} -> {}", text, again_text);
        prop_assert_eq!(again.to_string(), again_text);
    }
}

#[test]
fn canonical_trees_print_and_parse_exactly() {
    for src in [
        "a || b && c",
        "(a || b) && c",
        "a - (b - c)",
        "-(1) + -1",
        "!(!a)",
        "a ? b : c ? d : e",
        "(a ? b : c) ? d : e",
        "x.f(1, [2, 3], {\"k\": b\"\\x00\"})[0].g",
        "(-1).f",
        "1.0e-300 == 5e-324",
        "\"tab\\tquote\\\"\" + '\\u0001'",
        "a && b && c && d",
        "a.?b[?c].d[e]",
        "[?a, b, ?c[?d]]",
        "{?\"k\": a.?b, 1: c}",
    ] {
        let t = parse(src).unwrap();
        assert_eq!(parse(&t.to_string()).unwrap(), t, "{src} printed as {t}");
    }
}
