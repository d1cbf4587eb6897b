//! The SVG figure of a run: allocated GPU against arrived demand per policy, zoomed to
//! where the policies part, with the spread across seeds as a band and the paper's
//! published means marked (plain SVG elements written by hand, no plotting crate).

use std::fmt::Write as _;

use super::experiment::PolicyResult;
use super::report::{PaperTrace, paper_means_for};

/// Line colours (Okabe-Ito, readable by colour-blind readers), one per policy in order.
const COLORS: [&str; 6] = ["#7f7f7f", "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00"];
/// Dash patterns, so that lines lying on top of each other stay distinguishable.
const DASHES: [&str; 6] = ["6 3", "", "2 2", "8 3 2 3", "4 2", ""];

/// Canvas and plot-area geometry in pixels.
const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 540.0;
const LEFT: f64 = 64.0;
const TOP: f64 = 64.0;
const BOTTOM: f64 = 52.0;
/// Width kept right of the plot area for the legend.
const LEGEND_W: f64 = 250.0;
const LEGEND_LINE: f64 = 34.0;

/// What the figure says about the run besides the curves.
#[derive(Debug, Clone, Copy)]
pub struct PlotContext<'a> {
    /// The trace's label (shown in the title).
    pub trace: &'a str,
    /// The seeds averaged over.
    pub seeds: &'a [u64],
    /// The tune ratio.
    pub tune: f64,
    /// The published trace this run reproduces (its means are marked), if any.
    pub paper: Option<PaperTrace>,
}

/// The range of arrived demand (x, % of capacity) and allocation (y, %) the figure shows.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Axes {
    x: (f64, f64),
    y: (f64, f64),
    y_step: f64,
    x_step: f64,
}

fn seeds_label(seeds: &[u64]) -> String {
    let contiguous = seeds.windows(2).all(|w| w[1] == w[0] + 1);
    match seeds {
        [] => String::new(),
        [one] => format!("seed {one}"),
        [first, .., last] if contiguous => format!("seeds {first}–{last} (n={})", seeds.len()),
        _ => format!("seeds {} (n={})", seeds.iter().map(u64::to_string).collect::<Vec<_>>().join(","), seeds.len()),
    }
}

/// Min and max across seeds of each bin of the allocation curve.
fn band(r: &PolicyResult) -> Option<(Vec<f64>, Vec<f64>)> {
    if r.runs.len() < 2 {
        return None;
    }
    let n = r.curve.len();
    let mut lo = vec![f64::INFINITY; n];
    let mut hi = vec![f64::NEG_INFINITY; n];
    for run in &r.runs {
        for (b, v) in run.curve.iter().enumerate().take(n) {
            lo[b] = lo[b].min(*v);
            hi[b] = hi[b].max(*v);
        }
    }
    Some((lo, hi))
}

fn nice_step(span: f64, max_ticks: f64) -> f64 {
    [0.5, 1.0, 2.0, 2.5, 5.0, 10.0, 20.0, 25.0, 50.0].into_iter().find(|s| span / s <= max_ticks).unwrap_or(100.0)
}

/// Chooses the axes: x from the later of 5 points (rounded down to fives) before the
/// policies' mean curves are further apart than 30% of their spread at the last bin (and
/// one point), and 10 points below the lowest final allocation, to the last bin; y from the lowest to the highest
/// value shown there (curves, bands, paper points), padded and rounded to the tick step.
fn axes(results: &[PolicyResult], paper: &[(f64, f64)]) -> Axes {
    let bins = results.iter().map(|r| r.curve.len()).min().unwrap_or(0);
    let x_max = bins.saturating_sub(1) as f64;
    let spread = |b: usize| {
        let (lo, hi) = results
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), r| (lo.min(r.curve[b]), hi.max(r.curve[b])));
        hi - lo
    };
    let threshold = bins.checked_sub(1).map_or(1.0, |last| (0.3 * spread(last)).max(1.0));
    let parts = (0..bins).find(|&b| spread(b) > threshold);
    let parted = parts.map_or(0.0, |b| (b as f64 / 5.0).floor() * 5.0 - 5.0);
    // Where allocation still equals arrived demand, y equals x: start no lower than 10
    // points below the lowest final allocation, so that the band where the policies end
    // fills the height even when some of them part early (e.g. model-constrained pods).
    let lowest_end = results.iter().filter_map(|r| r.curve.last()).fold(f64::INFINITY, |a, &b| a.min(b));
    let saturated = if lowest_end.is_finite() { (lowest_end / 5.0).floor() * 5.0 - 10.0 } else { 0.0 };
    let x_min = parted.max(saturated).max(0.0).min((x_max - 10.0).max(0.0));
    let (mut y_lo, mut y_hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for r in results {
        let (lo, hi) = band(r).unwrap_or_else(|| (r.curve.clone(), r.curve.clone()));
        for b in (x_min as usize)..bins {
            y_lo = y_lo.min(lo[b]).min(r.curve[b]);
            y_hi = y_hi.max(hi[b]).max(r.curve[b]);
        }
    }
    for &(x, y) in paper {
        if x >= x_min && x <= x_max {
            y_lo = y_lo.min(y);
            y_hi = y_hi.max(y);
        }
    }
    if !y_lo.is_finite() || !y_hi.is_finite() {
        (y_lo, y_hi) = (0.0, 100.0);
    }
    let pad = ((y_hi - y_lo) * 0.05).max(0.5);
    let y_step = nice_step(y_hi - y_lo + 2.0 * pad, 10.0);
    let y = (((y_lo - pad) / y_step).floor() * y_step, ((y_hi + pad) / y_step).ceil() * y_step);
    let x_step = nice_step(x_max - x_min, 14.0).max(1.0);
    Axes { x: (x_min, x_max), y, y_step, x_step }
}

/// The figure: allocated GPU (% of capacity) against arrived GPU demand (% of capacity)
/// per policy. The x axis starts a little before the policies part (so the band where
/// they differ fills the height), the y axis spans the data shown; with several seeds each
/// policy's mean curve carries a band from the lowest to the highest seed; the paper's
/// published means (at 100% and 130%) are marked with diamonds when the run is its setup.
/// The title names the trace, the seeds and the tune ratio; the legend sits right of the
/// plot area, inside the canvas, and gives each policy's allocation at 130% beside the
/// paper's. The plot area is `<g id="plot">` with its ranges as `data-x-min`,
/// `data-x-max`, `data-y-min`, `data-y-max`; the legend is `<g id="legend">` with a
/// background `<rect>`.
pub fn allocation_svg(cx: &PlotContext<'_>, results: &[PolicyResult]) -> String {
    let paper_points: Vec<(f64, f64)> = cx
        .paper
        .map(|t| {
            results
                .iter()
                .flat_map(|r| {
                    let p = paper_means_for(t, r.policy);
                    p.at_100.map(|v| (100.0, v)).into_iter().chain([(130.0, p.at_130)]).filter(|(_, y)| y.is_finite())
                })
                .collect()
        })
        .unwrap_or_default();
    let ax = axes(results, &paper_points);
    let (pw, ph) = (WIDTH - LEFT - LEGEND_W - 20.0, HEIGHT - TOP - BOTTOM);
    let px = |v: f64| LEFT + (v - ax.x.0) / (ax.x.1 - ax.x.0).max(1e-9) * pw;
    let py = |v: f64| TOP + ph - (v - ax.y.0) / (ax.y.1 - ax.y.0).max(1e-9) * ph;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="Helvetica, Arial, sans-serif" font-size="13">"#
    );
    let _ = writeln!(s, r#"<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#);
    // Title and subtitle.
    let _ = writeln!(
        s,
        r#"<text id="title" x="{LEFT}" y="24" font-size="16" font-weight="bold">GPU allocation under each policy — trace {}</text>"#,
        xml(cx.trace)
    );
    let band_note = if cx.seeds.len() > 1 { "; line: mean, band: min–max across seeds" } else { "" };
    let _ = writeln!(
        s,
        r##"<text x="{LEFT}" y="44" fill="#444">{}, workload tuned to {:.0}% of GPU capacity{band_note}</text>"##,
        seeds_label(cx.seeds),
        cx.tune * 100.0
    );
    let _ = writeln!(
        s,
        r#"<g id="plot" data-x-min="{}" data-x-max="{}" data-y-min="{}" data-y-max="{}">"#,
        ax.x.0, ax.x.1, ax.y.0, ax.y.1
    );
    let _ = writeln!(
        s,
        r#"<defs><clipPath id="area"><rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}"/></clipPath></defs>"#
    );
    // Grid and tick labels.
    let mut v = (ax.x.0 / ax.x_step).ceil() * ax.x_step;
    while v <= ax.x.1 + 1e-9 {
        let xv = px(v);
        let _ = writeln!(s, r##"<line x1="{xv:.1}" y1="{TOP}" x2="{xv:.1}" y2="{}" stroke="#e6e6e6"/>"##, TOP + ph);
        let _ = writeln!(s, r#"<text x="{xv:.1}" y="{}" text-anchor="middle">{v}</text>"#, TOP + ph + 18.0);
        v += ax.x_step;
    }
    let mut v = ax.y.0;
    while v <= ax.y.1 + 1e-9 {
        let yv = py(v);
        let _ = writeln!(s, r##"<line x1="{LEFT}" y1="{yv:.1}" x2="{}" y2="{yv:.1}" stroke="#e6e6e6"/>"##, LEFT + pw);
        let _ = writeln!(s, r#"<text x="{}" y="{:.1}" text-anchor="end">{v}</text>"#, LEFT - 6.0, yv + 4.0);
        v += ax.y_step;
    }
    let _ = writeln!(s, r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>"##);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">arrived GPU demand (% of cluster GPU capacity)</text>"#,
        LEFT + pw / 2.0,
        HEIGHT - 12.0
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(18 {}) rotate(-90)" text-anchor="middle">allocated GPU (% of capacity)</text>"#,
        TOP + ph / 2.0
    );
    // Everything in data coordinates is clipped to the plot area.
    let _ = writeln!(s, r#"<g clip-path="url(#area)">"#);
    let _ = writeln!(
        s,
        r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#bbb" stroke-dasharray="3 3"/>"##,
        px(ax.x.0),
        py(ax.x.0),
        px(ax.x.1),
        py(ax.x.1)
    );
    let first = ax.x.0 as usize;
    for (i, r) in results.iter().enumerate() {
        if let Some((lo, hi)) = band(r) {
            let upper = (first..hi.len()).map(|b| format!("{:.1},{:.1}", px(b as f64), py(hi[b])));
            let lower = (first..lo.len()).rev().map(|b| format!("{:.1},{:.1}", px(b as f64), py(lo[b])));
            let pts: Vec<String> = upper.chain(lower).collect();
            let _ = writeln!(
                s,
                r#"<polygon class="band" fill="{}" fill-opacity="0.15" stroke="none" points="{}"/>"#,
                COLORS[i % COLORS.len()],
                pts.join(" ")
            );
        }
    }
    for (i, r) in results.iter().enumerate() {
        let pts: Vec<String> =
            (first..r.curve.len()).map(|b| format!("{:.1},{:.1}", px(b as f64), py(r.curve[b]))).collect();
        let _ = writeln!(
            s,
            r#"<polyline class="mean" data-policy="{}" fill="none" stroke="{}" stroke-width="2" stroke-dasharray="{}" points="{}"/>"#,
            r.policy.name(),
            COLORS[i % COLORS.len()],
            DASHES[i % DASHES.len()],
            pts.join(" ")
        );
    }
    s.push_str("</g>\n");
    // Paper points (drawn unclipped: they lie inside the y range by construction).
    if let Some(t) = cx.paper {
        for (i, r) in results.iter().enumerate() {
            let p = paper_means_for(t, r.policy);
            for (x, y) in p.at_100.map(|v| (100.0, v)).into_iter().chain([(130.0, p.at_130)]) {
                if x < ax.x.0 || x > ax.x.1 || !y.is_finite() {
                    continue;
                }
                let _ = writeln!(s, "{}", diamond(px(x), py(y), COLORS[i % COLORS.len()], r.policy.name()));
            }
        }
    }
    s.push_str("</g>\n");
    // Legend, right of the plot area and inside the canvas.
    let lx = LEFT + pw + 20.0;
    let rows = results.len() as f64 + if cx.paper.is_some() { 1.0 } else { 0.0 };
    let lh = rows * LEGEND_LINE + 34.0;
    let _ = writeln!(s, r#"<g id="legend">"#);
    let _ = writeln!(
        s,
        r##"<rect x="{lx}" y="{TOP}" width="{}" height="{lh}" fill="white" stroke="#ccc"/>"##,
        LEGEND_W - 10.0
    );
    let _ = writeln!(s, r#"<text x="{}" y="{}" font-weight="bold">allocated at 130%</text>"#, lx + 10.0, TOP + 20.0);
    for (i, r) in results.iter().enumerate() {
        let y = TOP + 40.0 + i as f64 * LEGEND_LINE;
        let color = COLORS[i % COLORS.len()];
        let _ = writeln!(
            s,
            r#"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="{color}" stroke-width="3" stroke-dasharray="{}"/>"#,
            lx + 10.0,
            lx + 38.0,
            DASHES[i % DASHES.len()]
        );
        let _ =
            writeln!(s, r#"<text x="{}" y="{}">{} {:.2}%</text>"#, lx + 46.0, y + 4.0, r.policy.name(), r.alloc_130);
        if let Some(t) = cx.paper
            && paper_means_for(t, r.policy).at_130.is_finite()
        {
            let _ = writeln!(
                s,
                r##"<text x="{}" y="{}" font-size="11" fill="#555">paper {:.2}%</text>"##,
                lx + 46.0,
                y + 18.0,
                paper_means_for(t, r.policy).at_130
            );
        }
    }
    if cx.paper.is_some() {
        let y = TOP + 40.0 + results.len() as f64 * LEGEND_LINE;
        let _ = writeln!(s, "{}", diamond(lx + 24.0, y, "#ffffff", "paper"));
        let _ =
            writeln!(s, r#"<text x="{}" y="{}" font-size="12">paper's mean, seeds 42–51</text>"#, lx + 46.0, y + 4.0);
    }
    s.push_str("</g>\n</svg>\n");
    s
}

fn diamond(x: f64, y: f64, fill: &str, label: &str) -> String {
    format!(
        r##"<path class="paper" data-policy="{label}" d="M {x:.1} {:.1} L {:.1} {y:.1} L {x:.1} {:.1} L {:.1} {y:.1} Z" fill="{fill}" stroke="#000" stroke-width="1.2"/>"##,
        y - 6.0,
        x + 6.0,
        y + 6.0,
        x - 6.0
    )
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
