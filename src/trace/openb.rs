//! Loader for the `openb` GPU cluster trace (Alibaba `cluster-trace-gpu-v2023`, the
//! trace of the USENIX ATC'23 FGD paper), and for any file with the same columns.
//!
//! Node lists: `sn,cpu_milli,memory_mib,gpu,model`. Pod lists:
//! `name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time]`
//! (the `multigpu` variants have only the first five columns). Columns are found by
//! header name, so their order may differ and extra columns are ignored. Files are read
//! as RFC 4180 CSV (the `csv` crate): quoted fields, CRLF line ends and a UTF-8 BOM are
//! fine. A malformed row is an error naming the file, the 1-based line and the 1-based
//! column.

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
    let bytes = std::fs::read(path).map_err(|e| TraceError::Io { file: name.clone(), message: e.to_string() })?;
    match String::from_utf8(bytes) {
        Ok(t) => Ok((name, t)),
        Err(e) => {
            // Name the line and the field (commas before the bad byte on its line).
            let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            let line = count_byte(good, b'\n') + 1;
            let start = good.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            let column = count_byte(&good[start..], b',') + 1;
            Err(TraceError::Parse { file: name, line, column, message: "not UTF-8 text".into() })
        }
    }
}

/// The trace's CSV files through the `csv` crate: RFC 4180 quoting (`"V100"`, `"a,b"`),
/// CRLF or LF line ends, a leading UTF-8 byte-order mark, blank lines skipped (they still
/// count in line numbers), fields trimmed. Columns are found by header name.
struct Csv<'a> {
    file: &'a str,
    header: Vec<String>,
    reader: csv::Reader<&'a [u8]>,
    record: csv::StringRecord,
    /// The text, to turn a record's byte offset into a line number (the `csv` crate's
    /// own line count skips blank lines and lines inside quoted fields).
    text: &'a [u8],
    /// Byte offset and 1-based line of the last record, to count newlines only once.
    cursor: (usize, usize),
}

impl<'a> Csv<'a> {
    fn new(file: &'a str, text: &'a str) -> Result<Self, TraceError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(true)
            .trim(csv::Trim::All)
            .from_reader(text.as_bytes());
        let header: Vec<String> = match reader.headers() {
            Ok(h) => h.iter().map(str::to_owned).collect(),
            Err(e) => return Err(csv_error(file, &e, text.as_bytes())),
        };
        if header.iter().all(String::is_empty) {
            return Err(TraceError::Parse { file: file.into(), line: 1, column: 1, message: "empty file".into() });
        }
        Ok(Csv { file, header, reader, record: csv::StringRecord::new(), text: text.as_bytes(), cursor: (0, 1) })
    }

    fn column(&self, name: &str, required: bool) -> Result<Option<usize>, TraceError> {
        match self.header.iter().position(|h| h == name) {
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

    /// The next row, or `None` at the end of the file.
    fn next_row(&mut self) -> Option<Result<Row<'_>, TraceError>> {
        match self.reader.read_record(&mut self.record) {
            Ok(false) => None,
            Err(e) => Some(Err(csv_error(self.file, &e, self.text))),
            Ok(true) => {
                let byte = self.record.position().map_or(self.cursor.0, |p| p.byte() as usize);
                let line = line_at(self.text, &mut self.cursor, byte);
                let found = self.record.len();
                if found < self.header.len() {
                    return Some(Err(TraceError::Parse {
                        file: self.file.into(),
                        line,
                        column: found + 1,
                        message: format!("expected {} fields, found {found}", self.header.len()),
                    }));
                }
                Some(Ok(Row { file: self.file, line, fields: &self.record }))
            }
        }
    }
}

/// How many times `b` occurs in `s`.
#[expect(clippy::naive_bytecount, reason = "once per record over a few bytes; not worth a dependency")]
fn count_byte(s: &[u8], b: u8) -> usize {
    s.iter().filter(|&&c| c == b).count()
}

/// The 1-based line of byte offset `byte` in `text`, counting on from `cursor` (the last
/// offset asked and its line) when `byte` is past it.
fn line_at(text: &[u8], cursor: &mut (usize, usize), byte: usize) -> usize {
    // A record's position can be the end of the line before it (or of blank lines the
    // reader skipped): step past those line ends.
    let mut byte = byte.min(text.len());
    while byte < text.len() && matches!(text[byte], b'\r' | b'\n') {
        byte += 1;
    }
    if byte < cursor.0 {
        *cursor = (0, 1);
    }
    cursor.1 += count_byte(&text[cursor.0..byte], b'\n');
    cursor.0 = byte;
    cursor.1
}

/// A `csv` crate error as a [`TraceError::Parse`] at the position it reports.
fn csv_error(file: &str, e: &csv::Error, text: &[u8]) -> TraceError {
    let line = |p: Option<&csv::Position>| p.map_or(1, |p| line_at(text, &mut (0, 1), p.byte() as usize));
    let (line, column) = match e.kind() {
        csv::ErrorKind::Utf8 { pos, err } => (line(pos.as_ref()), err.field() + 1),
        csv::ErrorKind::UnequalLengths { pos, len, .. } => (line(pos.as_ref()), *len as usize + 1),
        _ => (line(e.position()), 1),
    };
    let message = match e.kind() {
        csv::ErrorKind::Utf8 { err, .. } => format!("field is not UTF-8 ({err})"),
        _ => e.to_string(),
    };
    TraceError::Parse { file: file.into(), line, column, message }
}

struct Row<'r> {
    file: &'r str,
    line: usize,
    fields: &'r csv::StringRecord,
}

impl<'r> Row<'r> {
    fn err(&self, col: usize, message: String) -> TraceError {
        TraceError::Parse { file: self.file.into(), line: self.line, column: col + 1, message }
    }

    fn str(&self, col: usize) -> &'r str {
        self.fields.get(col).unwrap_or_default()
    }

    fn int(&self, col: usize, what: &str, max: i64) -> Result<i64, TraceError> {
        let s = self.str(col);
        let v: i64 = s.parse().map_err(|_| self.err(col, format!("{what}: {s:?} is not an integer")))?;
        if !(0..=max).contains(&v) {
            return Err(self.err(col, format!("{what}: {v} is out of range 0..={max}")));
        }
        Ok(v)
    }

    fn time(&self, col: Option<usize>, what: &str) -> Result<Option<f64>, TraceError> {
        let Some(col) = col else { return Ok(None) };
        let s = self.str(col);
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
