//! Loader for the `openb` GPU cluster trace (Alibaba `cluster-trace-gpu-v2023`, the
//! trace of the USENIX ATC'23 FGD paper), and for any file with the same columns.
//!
//! Node lists: `sn,cpu_milli,memory_mib,gpu,model`. Pod lists:
//! `name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time]`
//! (the `multigpu` variants have only the first five columns). Columns are found by
//! header name, so their order may differ and extra columns are ignored. A malformed
//! row is an error naming the file, the 1-based line and the 1-based column.

use std::path::Path;

use smallvec::SmallVec;

/// A malformed trace file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The file could not be read.
    #[error("{file}: {message}")]
    Io {
        /// The file.
        file: String,
        /// The OS error.
        message: String,
    },
    /// A row or the header is malformed.
    #[error("{file}:{line}:{column}: {message}")]
    Parse {
        /// The file (or the name given to the parser).
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column (field number).
        column: usize,
        /// What is wrong.
        message: String,
    },
}

/// One node of the trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceNode {
    /// Node name (`sn`).
    pub name: String,
    /// CPU capacity in millicores.
    pub cpu_milli: i64,
    /// Memory in MiB.
    pub memory_mib: i64,
    /// Number of GPUs.
    pub gpus: u32,
    /// GPU model (`None` for CPU-only nodes, spelled `nan` or empty in the file).
    pub model: Option<String>,
}

/// One pod of the trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TracePod {
    /// Pod name.
    pub name: String,
    /// CPU request in millicores.
    pub cpu_milli: i64,
    /// Memory request in MiB.
    pub memory_mib: i64,
    /// Whole GPUs requested (or 1 for a GPU-sharing pod).
    pub num_gpu: u32,
    /// Milli-GPU per GPU (1000 = whole; below 1000 only with `num_gpu == 1`).
    pub gpu_milli: u32,
    /// Allowed GPU models (empty: any).
    pub gpu_spec: SmallVec<[String; 2]>,
    /// QoS class, when the file has the column.
    pub qos: Option<String>,
    /// Phase, when the file has the column.
    pub phase: Option<String>,
    /// Creation time in seconds.
    pub creation_time: Option<f64>,
    /// Deletion time in seconds.
    pub deletion_time: Option<f64>,
    /// Scheduled time in seconds.
    pub scheduled_time: Option<f64>,
}

impl TracePod {
    /// GPU demand in milli-GPU (`num_gpu * gpu_milli`).
    pub fn gpu_demand(&self) -> i64 {
        i64::from(self.num_gpu) * i64::from(self.gpu_milli)
    }
}

/// Reads a node list.
pub fn load_nodes(path: impl AsRef<Path>) -> Result<Vec<TraceNode>, TraceError> {
    let (name, text) = read(path.as_ref())?;
    parse_nodes(&name, &text)
}

/// Reads a pod list (any variant).
pub fn load_pods(path: impl AsRef<Path>) -> Result<Vec<TracePod>, TraceError> {
    let (name, text) = read(path.as_ref())?;
    parse_pods(&name, &text)
}

fn read(path: &Path) -> Result<(String, String), TraceError> {
    let name = path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(t) => Ok((name, t)),
        Err(e) => Err(TraceError::Io { file: name, message: e.to_string() }),
    }
}

/// A CSV reader for the trace's simple files (no quoting; `,` separated).
struct Csv<'a> {
    file: &'a str,
    header: Vec<&'a str>,
    lines: std::iter::Enumerate<std::str::Lines<'a>>,
}

impl<'a> Csv<'a> {
    fn new(file: &'a str, text: &'a str) -> Result<Self, TraceError> {
        let mut lines = text.lines().enumerate();
        let Some((_, h)) = lines.next() else {
            return Err(TraceError::Parse { file: file.into(), line: 1, column: 1, message: "empty file".into() });
        };
        let header = h.trim_start_matches('\u{feff}').split(',').map(str::trim).collect();
        Ok(Csv { file, header, lines })
    }

    fn column(&self, name: &str, required: bool) -> Result<Option<usize>, TraceError> {
        match self.header.iter().position(|h| *h == name) {
            Some(i) => Ok(Some(i)),
            None if required => Err(TraceError::Parse {
                file: self.file.into(),
                line: 1,
                column: 1,
                message: format!("missing column {name:?} in header {:?}", self.header.join(",")),
            }),
            None => Ok(None),
        }
    }

    /// The next non-empty row: (line number, fields).
    fn next_row(&mut self) -> Option<Result<Row<'a>, TraceError>> {
        for (i, l) in self.lines.by_ref() {
            let l = l.trim_end_matches('\r');
            if l.trim().is_empty() {
                continue;
            }
            let fields: SmallVec<[&str; 12]> = l.split(',').map(str::trim).collect();
            if fields.len() < self.header.len() {
                return Some(Err(TraceError::Parse {
                    file: self.file.into(),
                    line: i + 1,
                    column: fields.len() + 1,
                    message: format!("expected {} fields, found {}", self.header.len(), fields.len()),
                }));
            }
            return Some(Ok(Row { file: self.file, line: i + 1, fields }));
        }
        None
    }
}

struct Row<'a> {
    file: &'a str,
    line: usize,
    fields: SmallVec<[&'a str; 12]>,
}

impl<'a> Row<'a> {
    fn err(&self, col: usize, message: String) -> TraceError {
        TraceError::Parse { file: self.file.into(), line: self.line, column: col + 1, message }
    }

    fn str(&self, col: usize) -> &'a str {
        self.fields[col]
    }

    fn int(&self, col: usize, what: &str, max: i64) -> Result<i64, TraceError> {
        let s = self.fields[col];
        let v: i64 = s.parse().map_err(|_| self.err(col, format!("{what}: {s:?} is not an integer")))?;
        if !(0..=max).contains(&v) {
            return Err(self.err(col, format!("{what}: {v} is out of range 0..={max}")));
        }
        Ok(v)
    }

    fn time(&self, col: Option<usize>, what: &str) -> Result<Option<f64>, TraceError> {
        let Some(col) = col else { return Ok(None) };
        let s = self.fields[col];
        if s.is_empty() || s == "nan" {
            return Ok(None);
        }
        match s.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Some(v)),
            _ => Err(self.err(col, format!("{what}: {s:?} is not a number"))),
        }
    }
}

fn is_nan(s: &str) -> bool {
    s.is_empty() || s.eq_ignore_ascii_case("nan")
}

/// Parses a node list from text; `file` names it in errors.
///
/// ```
/// let nodes = schedkit::trace::parse_nodes("n.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,96000,786432,8,G2\nn1,32000,262144,0,nan\n").unwrap();
/// assert_eq!(nodes[0].gpus, 8);
/// assert_eq!(nodes[1].model, None);
/// let err = schedkit::trace::parse_nodes("n.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,lots,1,1,G2\n").unwrap_err();
/// assert_eq!(err.to_string(), "n.csv:2:2: cpu_milli: \"lots\" is not an integer");
/// ```
pub fn parse_nodes(file: &str, text: &str) -> Result<Vec<TraceNode>, TraceError> {
    let mut csv = Csv::new(file, text)?;
    let name = csv.column("sn", true)?.unwrap_or(0);
    let cpu = csv.column("cpu_milli", true)?.unwrap_or(0);
    let mem = csv.column("memory_mib", true)?.unwrap_or(0);
    let gpu = csv.column("gpu", true)?.unwrap_or(0);
    let model = csv.column("model", true)?.unwrap_or(0);
    let mut out = Vec::new();
    while let Some(row) = csv.next_row() {
        let row = row?;
        let n = row.str(name);
        if n.is_empty() {
            return Err(row.err(name, "empty node name".into()));
        }
        let gpus = row.int(gpu, "gpu", 64)?;
        let m = row.str(model);
        out.push(TraceNode {
            name: n.to_owned(),
            cpu_milli: row.int(cpu, "cpu_milli", i64::MAX / 1000)?,
            memory_mib: row.int(mem, "memory_mib", i64::MAX / (1 << 20))?,
            gpus: gpus as u32,
            model: if is_nan(m) { None } else { Some(m.to_owned()) },
        });
    }
    Ok(out)
}

/// Parses a pod list from text; `file` names it in errors.
///
/// ```
/// let text = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np0,4000,8192,1,500,V100M16|V100M32\n";
/// let pods = schedkit::trace::parse_pods("p.csv", text).unwrap();
/// assert_eq!((pods[0].num_gpu, pods[0].gpu_milli), (1, 500));
/// assert_eq!(pods[0].gpu_spec.as_slice(), ["V100M16", "V100M32"]);
/// let bad = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,4000,8192,2,500\n";
/// assert!(schedkit::trace::parse_pods("p.csv", bad).unwrap_err().to_string().starts_with("p.csv:2:5:"));
/// ```
pub fn parse_pods(file: &str, text: &str) -> Result<Vec<TracePod>, TraceError> {
    let mut csv = Csv::new(file, text)?;
    let name = csv.column("name", true)?.unwrap_or(0);
    let cpu = csv.column("cpu_milli", true)?.unwrap_or(0);
    let mem = csv.column("memory_mib", true)?.unwrap_or(0);
    let num_gpu = csv.column("num_gpu", true)?.unwrap_or(0);
    let gpu_milli = csv.column("gpu_milli", true)?.unwrap_or(0);
    let spec = csv.column("gpu_spec", false)?;
    let qos = csv.column("qos", false)?;
    let phase = csv.column("pod_phase", false)?;
    let created = csv.column("creation_time", false)?;
    let deleted = csv.column("deletion_time", false)?;
    let scheduled = csv.column("scheduled_time", false)?;
    let mut out = Vec::new();
    while let Some(row) = csv.next_row() {
        let row = row?;
        let n = row.str(name);
        if n.is_empty() {
            return Err(row.err(name, "empty pod name".into()));
        }
        let g = row.int(num_gpu, "num_gpu", 64)? as u32;
        let m = row.int(gpu_milli, "gpu_milli", 1000)? as u32;
        if m < 1000 && m > 0 && g != 1 {
            return Err(row.err(gpu_milli, format!("gpu_milli {m} below 1000 needs num_gpu 1, not {g}")));
        }
        if (g == 0) != (m == 0) {
            return Err(row.err(gpu_milli, format!("num_gpu {g} and gpu_milli {m} disagree")));
        }
        let gpu_spec = match spec.map(|c| row.str(c)) {
            Some(s) if !is_nan(s) => s.split('|').filter(|m| !m.is_empty()).map(str::to_owned).collect(),
            _ => SmallVec::new(),
        };
        let opt = |c: Option<usize>| c.map(|c| row.str(c)).filter(|s| !is_nan(s)).map(str::to_owned);
        out.push(TracePod {
            name: n.to_owned(),
            cpu_milli: row.int(cpu, "cpu_milli", i64::MAX / 1000)?,
            memory_mib: row.int(mem, "memory_mib", i64::MAX / (1 << 20))?,
            num_gpu: g,
            gpu_milli: m,
            gpu_spec,
            qos: opt(qos),
            phase: opt(phase),
            creation_time: row.time(created, "creation_time")?,
            deletion_time: row.time(deleted, "deletion_time")?,
            scheduled_time: row.time(scheduled, "scheduled_time")?,
        });
    }
    Ok(out)
}

/// Total GPU capacity of `nodes` in milli-GPU.
pub fn gpu_capacity_milli(nodes: &[TraceNode]) -> i64 {
    nodes.iter().map(|n| i64::from(n.gpus) * 1000).sum()
}
