//! Nesting at the depth limit: every recursive shape of expression is accepted up to
//! exactly the count at which cel-go's parser accepts it, compiles and evaluates there
//! on a 2 MiB thread stack in a debug build, and one level more is refused with
//! `SelectorError::TooDeep`, never a stack overflow.
//!
//! The limit is cel-go's default parser recursion limit (`maxRecursionDepth` 250 in
//! `parser/options.go`), which the Kubernetes CEL environment keeps; how cel-go counts
//! it, and so where each count below comes from, is described at `Rule` in
//! `src/selector/parser.rs`.

use schedkit::selector::{Device, Limits, MAX_EXPRESSION_LENGTH, MAX_NESTING_DEPTH, Selector, SelectorError};

/// An expression as a function of its nesting count.
type Nesting = fn(usize) -> String;

/// A named shape of expression, and the largest count that cel-go accepts with the
/// default limit.
type Shape = (&'static str, Nesting, usize);

/// Each shape that nests. The counts bind on cel-go's `expr` rule (n + 1 open), on its
/// parse-tree visitor (operators, selections, receiver calls and indexes on one path)
/// or, for the last, on its `relation` rule (3n + 1 open).
fn shapes() -> Vec<Shape> {
    vec![
        ("parentheses", |n| format!("{}true{}", "(".repeat(n), ")".repeat(n)), 249),
        ("negation", |n| format!("{}true{}", "!(".repeat(n), ")".repeat(n)), 249),
        ("unary minus", |n| format!("{}1{} != 0", "-(".repeat(n), ")".repeat(n)), 249),
        ("+ chain", |n| vec!["1"; n].join(" + ") + " > 0", 250),
        ("- chain", |n| vec!["1"; n].join(" - ") + " < 0", 250),
        ("string + chain", |n| vec!["'a'"; n].join(" + ") + " != ''", 250),
        ("nested lists", |n| format!("{}1{}.size() == 1", "[".repeat(n), "]".repeat(n)), 249),
        ("nested maps", |n| format!("{}1{}.size() == 1", "{1: ".repeat(n), "}".repeat(n)), 249),
        ("nested calls", |n| format!("{}1{} == 1", "int(".repeat(n), ")".repeat(n)), 249),
        ("nested dyn", |n| format!("{}true{}", "dyn(".repeat(n), ")".repeat(n)), 249),
        ("method chain", |n| format!("'A'{} == 'a'", ".lowerAscii()".repeat(n)), 249),
        ("ternaries (then)", |n| format!("{}true{}", "true ? (".repeat(n), ") : false".repeat(n)), 249),
        ("ternaries (else)", |n| format!("{}true", "false ? false : ".repeat(n)), 249),
        ("member chain", |n| format!("device.attributes['x']{} == 1", ".a".repeat(n)), 247),
        ("index chain", |n| format!("device.attributes['x']{} == 1", "['a']".repeat(n)), 247),
        ("nested index", |n| format!("{}0{} == 0", "[0][".repeat(n), "]".repeat(n)), 249),
        ("nested macros", |n| format!("{}true{}", "[1].all(x, ".repeat(n), ")".repeat(n)), 249),
        ("nested exists", |n| format!("{}true{}", "[1].exists(x, ".repeat(n), ")".repeat(n)), 249),
        ("nested map macros", |n| format!("{}1{}.size() == 1", "[1].map(x, ".repeat(n), ")".repeat(n)), 248),
        ("nested bind", |n| format!("{}true{}", "cel.bind(x, 1, ".repeat(n), ")".repeat(n)), 249),
        ("optional chain", |n| format!("device.attributes['x']{}.hasValue()", ".?a".repeat(n)), 247),
        ("type error over a deep tree", |n| format!("{}1{} + 'a' == 1", "[".repeat(n), "]".repeat(n)), 249),
        ("in chain", |n| format!("{}true{}", "[true] == [(".repeat(n), ")]".repeat(n)), 83),
    ]
}

/// Shapes that stay shallow however long they get: runs of `!` or `-` collapse, and
/// chains of `&&` or `||` are balanced (as cel-go's parser does).
fn shallow_shapes() -> Vec<(&'static str, Nesting)> {
    vec![
        ("! run", |n| format!("{}true", "!".repeat(n))),
        ("- run", |n| format!("{}1 != 0", "-".repeat(n))),
        ("&& chain", |n| vec!["device.driver == 'x'"; n].join(" && ")),
        ("|| chain", |n| vec!["device.driver == 'x'"; n].join(" || ")),
    ]
}

fn too_deep(src: &str) -> bool {
    matches!(Selector::compile(src), Err(SelectorError::TooDeep { limit: MAX_NESTING_DEPTH }))
}

/// The largest count whose expression the depth limit accepts.
fn deepest(f: Nesting) -> usize {
    let refused = |n: usize| {
        matches!(Selector::compile(&f(n)), Err(SelectorError::TooDeep { .. } | SelectorError::TooLong { .. }))
    };
    let (mut lo, mut hi) = (1, 4 * MAX_NESTING_DEPTH);
    assert!(!refused(lo) && refused(hi));
    while hi - lo > 1 {
        let mid = usize::midpoint(lo, hi);
        if refused(mid) { hi = mid } else { lo = mid }
    }
    lo
}

#[test]
fn limit_is_upstreams() {
    assert_eq!(MAX_NESTING_DEPTH, 250);
    assert_eq!(Limits::default().max_depth, 250);
}

#[test]
fn every_shape_fits_a_small_stack_at_the_limit() {
    let run = || {
        let device = Device::new("d", "x");
        for (name, f, upstream) in shapes() {
            let n = deepest(f);
            assert_eq!(n, upstream, "{name}");
            let src = f(n);
            match Selector::compile(&src) {
                Ok(sel) => {
                    let _ = sel.matches(&device);
                }
                // The message prints the deep tree (shortened).
                Err(e @ SelectorError::Type { .. }) if name.starts_with("type error") => {
                    assert!(e.to_string().contains("no matching overload"), "{e}");
                }
                Err(e) => panic!("{name} at {n}: {e}"),
            }
            assert!(too_deep(&f(n + 1)), "{name}");
        }
    };
    std::thread::Builder::new().stack_size(2 << 20).spawn(run).unwrap().join().unwrap();
}

#[test]
fn shallow_shapes_compile_up_to_the_length_limit() {
    let run = || {
        let device = Device::new("d", "x");
        for (name, f) in shallow_shapes() {
            let n = (1..=MAX_EXPRESSION_LENGTH).take_while(|&n| f(n).len() <= MAX_EXPRESSION_LENGTH).last().unwrap();
            let sel = Selector::compile(&f(n)).unwrap_or_else(|e| panic!("{name} at {n}: {e}"));
            let _ = sel.matches(&device);
        }
    };
    std::thread::Builder::new().stack_size(2 << 20).spawn(run).unwrap().join().unwrap();
}

#[test]
fn the_limit_can_be_lowered() {
    let limits = Limits { max_depth: 10, ..Limits::default() };
    let src = |n: usize| format!("{}true{}", "(".repeat(n), ")".repeat(n));
    assert!(Selector::compile_with(&src(9), limits).is_ok());
    assert_eq!(Selector::compile_with(&src(10), limits).unwrap_err(), SelectorError::TooDeep { limit: 10 });
}

/// Whether `src` is refused for its nesting under the limit `max_depth`.
fn too_deep_for(src: &str, max_depth: usize) -> bool {
    let limits = Limits { max_depth, ..Limits::default() };
    matches!(Selector::compile_with(src, limits), Err(SelectorError::TooDeep { limit }) if limit == max_depth)
}

/// The recursion-limit cases of cel-go's `parser/parser_test.go` (`TestParse`, which
/// runs with `MaxRecursionDepth(32)`), each refused, with the same text one level
/// shallower (not an upstream case) accepted. The identifiers are undeclared here, so an
/// accepted text may still fail to compile, just not for its depth.
#[test]
fn cel_go_parser_test_recursion_cases() {
    let lists = |n: usize, s: &str| format!("{}{s}{}", "[".repeat(n), "]".repeat(n));
    let sum = |n: usize| (1..=n).map(|i| i.to_string()).collect::<Vec<_>>().join(" + ");
    let fields = |n: usize| {
        let names: Vec<String> = ('a'..='z').chain('A'..='Z').take(n).map(String::from).collect();
        names.join(".")
    };
    let indexes = |n: usize| (1..=n).fold("a".to_string(), |s, i| s + &format!("[{i}]"));
    let relations = |n: usize| (1..=n).fold("a".to_string(), |s, i| s + &format!(" < {i}"));
    let index_relations = |n: usize| vec![indexes(20); n].join(" !=\n\t\t");
    // "expression recursion limit exceeded: 32": 106 nested lists, then 32 (33 `expr`).
    assert!(too_deep_for(&format!("{}\n\t\t\t{}", "[".repeat(72), lists(34, "'too many'") + &"]".repeat(72)), 32));
    assert!(too_deep_for(&lists(32, "'not fine'"), 32));
    assert!(!too_deep_for(&lists(31, "'fine'"), 32));
    // "max recursion depth exceeded": 33 arithmetic operators, field selections, indexes
    // and relational operators; 13 relational operators over 20 indexes.
    for (refused, accepted) in [
        (sum(34), sum(33)),
        (fields(34), fields(33)),
        (indexes(33), indexes(32)),
        (relations(33), relations(32)),
        (index_relations(14), index_relations(13)),
    ] {
        assert!(too_deep_for(&refused, 32), "{refused}");
        assert!(!too_deep_for(&accepted, 32), "{accepted}");
    }
    let not_equal = "y!=y!=y!=y!=y!=y!=y!=y!=y!=-y!=-y!=-y!=-y-y!=-y!=-y!=-y-y!=-y!=-y!=-y-y!=-y
\t\t!=-y!=-y-y!=-y!=-y!=-y-y!=-y!=-y!=-y-y!=-y!=-y!=-y-y!=-y!=-y!=-y-y!=-y!=-y!=-y-y
\t\t!=-y!=-y!=-y-y!=-y!=-y!=-y-y!=-y!=-y!=-y-y!=-y!=-y!=-y-y!=-y!=-y!=-y-y!=-y!=-y
\t\t!=-y-y!=-y!=-y!=-y-y!=-y!=-y!=-y-y!=-y!=-y!=-y-y!=-y!=-y!=-y-y!=-y!=-y!=-y-y!=-y
\t\t!=-y!=-y-y!=-y!=-y!=-y-y!=-y!=-y!=-y-y!=-y!=-y!=-y-y!=-y!=-y!=-y-y!=-y!=-y!=-y-y
\t\t!=-y!=-y!=-y-y!=-y!=-y!=-y-y!=-y!=-y!=-y-y!=-y";
    assert!(too_deep_for(not_equal, 32));
}

/// The left-recursive rules' counts: an operator or suffix chain costs one level of its
/// rule however long it is (the visitor counts it instead), the right operand of an
/// operator one more, and when a chain ends the count may drop below the contexts still
/// open further out (cel-go clamps it at zero), which leaves more room to what follows.
#[test]
fn left_recursive_rules_count_as_cel_go_does() {
    // `relation` at 3n + 1 for n levels of `[true] == [(...)]`, within a limit of 10:
    // 3 levels reach 10.
    let in_chain = |n: usize| format!("{}true{}", "[true] == [(".repeat(n), ")]".repeat(n));
    assert!(!too_deep_for(&in_chain(3), 10));
    assert!(too_deep_for(&in_chain(4), 10));
    // The list around it opens one more `relation` (3n + 2)...
    assert!(too_deep_for(&format!("[1, {}] == [true, true]", in_chain(3)), 10));
    // ...unless a finished chain of relational operators before it took that count
    // off: `1 == 1` enters `relation` once, keeps it for `==`, then leaves it twice.
    assert!(!too_deep_for(&format!("[1 == 1, {}] == [true, true]", in_chain(3)), 10));
    // Nesting in the right operand of `+` opens `calc` twice per level (2n + 1).
    let calc = |n: usize| format!("{}1{} > 0", "1 + (".repeat(n), ")".repeat(n));
    assert!(!too_deep_for(&calc(4), 10));
    assert!(too_deep_for(&calc(5), 10));
}

/// A deliberate divergence: cel-go bounds only its two counts, so it accepts trees
/// several times deeper than its limit when each nesting level packs in uncounted nodes
/// (`&&`, `||`, `!`, lists). schedkit refuses trees deeper than twice the limit, and
/// such trees fit a 2 MiB stack.
#[test]
fn trees_deeper_than_twice_the_limit_are_refused() {
    // Per level: a list, two levels of balanced `&&`, a `!` and an index (one `expr`
    // and one visitor count), so n levels make a tree 5n + 3 deep.
    let shape = |n: usize| {
        let mut src = "[true]".to_string();
        for _ in 0..n {
            src = format!("[true && true && true && !{src}[0]]");
        }
        src + "[0]"
    };
    let run = move || {
        let device = Device::new("d", "x");
        // 99 levels: 498 deep, within both cel-go's counts and the bound.
        let sel = Selector::compile(&shape(99)).unwrap_or_else(|e| panic!("{e}"));
        assert!(sel.matches(&device).is_ok());
        // 100 levels: 503 deep, still far within cel-go's counts (101 of each).
        assert!(too_deep(&shape(100)));
        let limits = Limits { max_depth: 1000, ..Limits::default() };
        assert!(Selector::compile_with(&shape(100), limits).is_ok());
    };
    std::thread::Builder::new().stack_size(2 << 20).spawn(run).unwrap().join().unwrap();
}

/// Heavy mixes of nodes as deep as cel-go's counts allow fit a 2 MiB stack: receiver
/// calls, maps and indexes (374 deep); a conditional over `&&`, `!`, calls, indexes and
/// lists (492 deep, near the bound). One level more is refused by cel-go's visitor count.
#[test]
fn mixed_trees_at_the_bound_fit_a_small_stack() {
    let calls = |n: usize| {
        let mut src = "'A'".to_string();
        for _ in 0..n {
            src = format!("{{1: {src}}}[1].lowerAscii()");
        }
        src + " == 'a'"
    };
    let mixed = |n: usize| {
        let mut src = "'A'".to_string();
        for _ in 0..n {
            src = format!("[true && true && !['a', {src}.lowerAscii()][0].startsWith('a') ? 'a' : 'b'][0]");
        }
        src + " == 'a'"
    };
    let run = move || {
        let device = Device::new("d", "x");
        for src in [calls(124), mixed(49)] {
            let sel = Selector::compile(&src).unwrap_or_else(|e| panic!("{e}"));
            assert!(sel.matches(&device).is_ok());
        }
        assert!(too_deep(&calls(125)) && too_deep(&mixed(50)));
    };
    std::thread::Builder::new().stack_size(2 << 20).spawn(run).unwrap().join().unwrap();
}
