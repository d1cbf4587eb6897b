//! A parser for the matrix `nvidia-smi topo -m` prints.
//!
//! The input is the whole command output: a header naming the devices (`GPU0`
//! … and NICs, either as `NIC0` … with a `NIC Legend` below, or by RDMA name as
//! older drivers print, `mlx5_0` …) and the affinity columns (`CPU Affinity`,
//! `NUMA Affinity`, `GPU NUMA ID`), one row per device, then the legends. Cells
//! are separated by tabs or runs of spaces. Cells use the legend's classes: `X`,
//! `SYS` (`SOC` on old drivers), `NODE`, `PHB`, `PXB`, `PIX`, `NV#`.
//!
//! The output only names classes, not bandwidths, so the parser assigns nominal
//! bandwidths from [`ParseOptions`]: `NV#` pairs get `#` links of the given
//! NVLink generation, every other pair the bandwidth of one PCIe link of the
//! given generation and width (as in the graph model, where the leaf links are
//! the bottleneck of a PCIe path; the class then orders equal bandwidths). For
//! `NV#` pairs the host path is not printed; it is taken as `NODE` when both
//! GPUs report the same NUMA affinity and `SYS` otherwise. PCIe roots are
//! inferred by grouping devices that are PHB or closer.

use core::ops::RangeInclusive;

use super::error::{ParseError, ParseErrorKind};
use super::graph::{Gpu, Nic, NvLinkGen, PcieGen};
use super::matrix::{GpuMatrix, HopClass, MAX_GPUS, MAX_NICS, PairLink};

/// Nominal link parameters for the bandwidths the text does not carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseOptions {
    /// NVLink generation of `NV#` cells.
    pub nvlink: NvLinkGen,
    /// PCIe generation of the GPUs' links.
    pub pcie: PcieGen,
    /// PCIe width of the GPUs' links.
    pub pcie_width: u8,
}

impl Default for ParseOptions {
    fn default() -> Self {
        Self { nvlink: NvLinkGen::V4, pcie: PcieGen::Gen4, pcie_width: 16 }
    }
}

/// The parse result: the matrix plus the affinity columns as printed.
#[derive(Debug, Clone)]
pub struct ParsedTopo {
    /// The GPU matrix (GPU ids are `GPU<i>`, models empty, memory 0: the text
    /// does not carry them).
    pub matrix: GpuMatrix,
    /// Per GPU, the `CPU Affinity` ranges (empty when the column is absent or `N/A`).
    pub cpu_affinity: Vec<Vec<RangeInclusive<u32>>>,
    /// Per GPU, the `NUMA Affinity` value if printed as a number.
    pub numa_affinity: Vec<Option<u32>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum AffinityCol {
    Cpu,
    Numa,
    GpuNuma,
}

/// Splits a line into cells with their 1-based character columns.
fn cells(line: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut chars = line.char_indices().peekable();
    let mut col = 0usize;
    core::iter::from_fn(move || {
        // skip whitespace
        loop {
            let &(_, c) = chars.peek()?;
            if c.is_whitespace() {
                chars.next();
                col += 1;
            } else {
                break;
            }
        }
        let (start, _) = *chars.peek()?;
        let start_col = col + 1;
        let mut end = line.len();
        while let Some(&(i, c)) = chars.peek() {
            if c.is_whitespace() {
                end = i;
                break;
            }
            chars.next();
            col += 1;
        }
        Some((start_col, &line[start..end]))
    })
}

fn err(line: usize, column: usize, kind: ParseErrorKind) -> ParseError {
    ParseError { line, column, kind }
}

fn is_gpu_name(s: &str) -> bool {
    s.strip_prefix("GPU").is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// A plausible NIC column name: `NIC<n>` or an RDMA/netdev name such as `mlx5_0`.
fn is_nic_name(s: &str) -> bool {
    if let Some(d) = s.strip_prefix("NIC") {
        return !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    }
    !s.contains("GPU")
        && !s.contains("NIC")
        && s.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn parse_cpu_list(s: &str) -> Option<Vec<RangeInclusive<u32>>> {
    if s == "N/A" {
        return Some(Vec::new());
    }
    s.split(',')
        .map(|part| {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let (a, b) = (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?);
            (a <= b).then_some(a..=b)
        })
        .collect()
}

/// Union-find root with path halving.
fn find(root: &mut [usize], mut x: usize) -> usize {
    while root[x] != x {
        root[x] = root[root[x]];
        x = root[x];
    }
    x
}

/// Parses `nvidia-smi topo -m` output (see the module docs).
#[expect(clippy::too_many_lines, reason = "one linear pass over the text, kept in one place")]
pub fn parse_topo(text: &str, opts: &ParseOptions) -> Result<ParsedTopo, ParseError> {
    let lines: Vec<&str> = text.lines().collect();
    let Some(header_at) = lines.iter().position(|l| cells(l).any(|(_, c)| c == "GPU0")) else {
        return Err(err(1, 1, ParseErrorKind::MissingHeader));
    };
    let header_line = header_at + 1;

    // Header: device names, then affinity column titles.
    let mut devices: Vec<&str> = Vec::new();
    let mut affinity: Vec<AffinityCol> = Vec::new();
    let mut words = cells(lines[header_at]).peekable();
    while let Some((col, w)) = words.next() {
        match w {
            "CPU" | "NUMA" | "GPU" => {
                let second = words.next().map(|(_, s)| s);
                let kind = match (w, second) {
                    ("CPU", Some("Affinity")) => AffinityCol::Cpu,
                    ("NUMA", Some("Affinity")) => AffinityCol::Numa,
                    ("GPU", Some("NUMA")) if words.next().map(|(_, s)| s) == Some("ID") => AffinityCol::GpuNuma,
                    _ => {
                        return Err(err(header_line, col, ParseErrorKind::BadHeader(w.to_owned())));
                    }
                };
                affinity.push(kind);
            }
            _ if !affinity.is_empty() => {
                return Err(err(header_line, col, ParseErrorKind::BadHeader(w.to_owned())));
            }
            _ if is_gpu_name(w) || is_nic_name(w) => devices.push(w),
            _ => {
                return Err(err(header_line, col, ParseErrorKind::BadHeader(w.to_owned())));
            }
        }
    }
    let gpu_count = devices.iter().take_while(|d| is_gpu_name(d)).count();
    for (i, d) in devices.iter().enumerate() {
        let bad = if i < gpu_count { *d != format!("GPU{i}") } else { is_gpu_name(d) };
        if bad {
            let col = cells(lines[header_at]).find(|(_, c)| c == d).map_or(1, |(c, _)| c);
            return Err(err(header_line, col, ParseErrorKind::BadHeader((*d).to_owned())));
        }
    }
    let nd = devices.len();
    let nic_count = nd - gpu_count;
    if gpu_count > MAX_GPUS || nic_count > MAX_NICS {
        return Err(err(
            header_line,
            1,
            ParseErrorKind::Topology(if gpu_count > MAX_GPUS {
                super::TopologyError::TooManyGpus { count: gpu_count, max: MAX_GPUS }
            } else {
                super::TopologyError::TooManyNics { count: nic_count }
            }),
        ));
    }

    // Rows.
    let mut classes: Vec<HopClass> = Vec::with_capacity(nd * nd);
    let mut positions: Vec<(usize, usize)> = Vec::with_capacity(nd * nd);
    let mut cpu_affinity = Vec::with_capacity(gpu_count);
    let mut numa_affinity = Vec::with_capacity(gpu_count);
    let mut next_line = header_at + 1;
    for (r, name) in devices.iter().enumerate() {
        // Skip blank lines before the first row only.
        while r == 0 && next_line < lines.len() && lines[next_line].trim().is_empty() {
            next_line += 1;
        }
        let Some(line) = lines.get(next_line) else {
            return Err(err(lines.len() + 1, 1, ParseErrorKind::Truncated { expected: nd, found: r }));
        };
        let ln = next_line + 1;
        next_line += 1;
        let row: Vec<(usize, &str)> = cells(line).collect();
        let Some(&(lcol, label)) = row.first() else {
            return Err(err(ln, 1, ParseErrorKind::Truncated { expected: nd, found: r }));
        };
        if label != *name {
            return Err(err(
                ln,
                lcol,
                ParseErrorKind::RowLabel { expected: (*name).to_owned(), found: label.to_owned() },
            ));
        }
        let extra_allowed = if r < gpu_count { affinity.len() } else { 0 };
        let found = row.len() - 1;
        if found < nd || found > nd + extra_allowed {
            let col = row.get(nd + 1).or(row.last()).map_or(1, |(c, _)| *c);
            return Err(err(ln, col, ParseErrorKind::RowLength { row: label.to_owned(), expected: nd, found }));
        }
        for (c, &(col, cell)) in row[1..=nd].iter().enumerate() {
            let class: HopClass = cell.parse().map_err(|_| {
                // An affinity value where a link cell belongs: the row is short.
                let kind = if cell == "N/A" || cell.starts_with(|ch: char| ch.is_ascii_digit()) {
                    ParseErrorKind::RowLength { row: label.to_owned(), expected: nd, found: c }
                } else {
                    ParseErrorKind::BadCell(cell.to_owned())
                };
                err(ln, col, kind)
            })?;
            if (c == r) != (class == HopClass::SelfLink) {
                return Err(err(ln, col, ParseErrorKind::Diagonal(cell.to_owned())));
            }
            classes.push(class);
            positions.push((ln, col));
        }
        if r < gpu_count {
            let mut cpu = Vec::new();
            let mut numa = None;
            for (&(col, cell), kind) in row[nd + 1..].iter().zip(&affinity) {
                match kind {
                    AffinityCol::Cpu => {
                        cpu = parse_cpu_list(cell)
                            .ok_or_else(|| err(ln, col, ParseErrorKind::BadAffinity(cell.to_owned())))?;
                    }
                    AffinityCol::Numa => {
                        if cell != "N/A" {
                            // `0-1` style ranges appear on some systems; keep the first.
                            let first = cell.split([',', '-']).next().unwrap_or(cell);
                            numa = Some(
                                first
                                    .parse::<u32>()
                                    .map_err(|_| err(ln, col, ParseErrorKind::BadAffinity(cell.to_owned())))?,
                            );
                        }
                    }
                    AffinityCol::GpuNuma => {}
                }
            }
            cpu_affinity.push(cpu);
            numa_affinity.push(numa);
        }
    }

    // Symmetry.
    for a in 0..nd {
        for b in (a + 1)..nd {
            let (x, y) = (classes[a * nd + b], classes[b * nd + a]);
            if x != y {
                let (ln, col) = positions[b * nd + a];
                return Err(err(ln, col, ParseErrorKind::Asymmetric { cell: y.to_string(), mirror: x.to_string() }));
            }
        }
    }

    // NIC names from the legend, if any (`  NIC0: mlx5_0`).
    let mut nic_names: Vec<String> = devices[gpu_count..].iter().map(|s| (*s).to_owned()).collect();
    for line in &lines[next_line..] {
        if let Some((k, v)) = line.trim().split_once(':')
            && let Some(i) = k.trim().strip_prefix("NIC").and_then(|d| d.parse::<usize>().ok())
            && i < nic_names.len()
            && devices[gpu_count + i] == k.trim()
        {
            v.trim().clone_into(&mut nic_names[i]);
        }
    }

    // Assemble.
    let pcie_mbps = opts.pcie.lane_mbps() * u32::from(opts.pcie_width);
    let numa_of = |g: usize| numa_affinity[g];
    let mut pairs = Vec::with_capacity(gpu_count * gpu_count);
    for a in 0..gpu_count {
        for b in 0..gpu_count {
            let class = classes[a * nd + b];
            pairs.push(match class {
                HopClass::SelfLink => PairLink { bandwidth_mbps: 0, class, host: Some(HopClass::SelfLink) },
                HopClass::NvLink(n) => PairLink {
                    bandwidth_mbps: opts.nvlink.link_mbps() * u32::from(n),
                    class,
                    host: Some(match (numa_of(a), numa_of(b)) {
                        (Some(x), Some(y)) if x == y => HopClass::Node,
                        _ => HopClass::Sys,
                    }),
                },
                _ => PairLink { bandwidth_mbps: pcie_mbps, class, host: Some(class) },
            });
        }
    }
    // PCIe roots: union devices at PHB or closer.
    let mut root: Vec<usize> = (0..nd).collect();
    for a in 0..nd {
        for b in (a + 1)..nd {
            if matches!(classes[a * nd + b], HopClass::Pix | HopClass::Pxb | HopClass::Phb) {
                let (ra, rb) = (find(&mut root, a), find(&mut root, b));
                root[ra.max(rb)] = ra.min(rb);
            }
        }
    }
    let gpus = (0..gpu_count)
        .map(|g| {
            let r = find(&mut root, g);
            Gpu {
                index: g as u32,
                id: format!("GPU{g}"),
                model: String::new(),
                memory_mib: 0,
                numa_node: numa_of(g).unwrap_or(0),
                pcie_root: format!("root{r}"),
                host: 0,
            }
        })
        .collect();
    let nics = nic_names
        .into_iter()
        .enumerate()
        .map(|(j, name)| {
            // A NIC's NUMA node: that of a GPU at NODE or closer, if any.
            let numa = (0..gpu_count)
                .find(|&g| !matches!(classes[g * nd + gpu_count + j], HopClass::Sys))
                .and_then(numa_of)
                .unwrap_or(0);
            Nic { name, numa_node: numa, host: 0 }
        })
        .collect();
    let mut nic_class = Vec::with_capacity(gpu_count * nic_count);
    for g in 0..gpu_count {
        for j in 0..nic_count {
            nic_class.push(Some(classes[g * nd + gpu_count + j]));
        }
    }
    let matrix = GpuMatrix::assemble("nvidia-smi topo -m".to_owned(), gpus, nics, pairs, nic_class)
        .map_err(|e| err(header_line, 1, ParseErrorKind::Topology(e)))?;
    Ok(ParsedTopo { matrix, cpu_affinity, numa_affinity })
}
