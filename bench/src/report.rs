//! What every `quasar-bench` subcommand produces: a Markdown report (tables and notes), JSON
//! records in the results directory (median, p50/p95/p99 and the machine they were measured
//! on), and an SVG plot.
//!
//! Files, for subcommand `S` in the results directory: `S.md` (what was printed), `S.json`
//! (`{version, subcommand, title, smoke, machine, started_unix, elapsed_s, settings, records,
//! ratios, tables, notes}`), `S.svg`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use serde::Serialize;

use crate::measure::{median, quantile, Series};

/// Version of the JSON layout.
pub const FORMAT_VERSION: u32 = 1;

/// Why a report could not be produced or written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A results file could not be written.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The plot could not be drawn.
    #[error("cannot draw {path}: {message}")]
    Plot {
        /// The SVG file.
        path: PathBuf,
        /// plotters' error.
        message: String,
    },
}

/// The machine a report was measured on.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// `model name` of the first CPU in `/proc/cpuinfo` ("unknown" elsewhere).
    pub cpu_model: String,
    /// Cores this process may use (`available_parallelism`).
    pub cores: usize,
    /// `MemTotal` of `/proc/meminfo`, bytes (0 when unknown).
    pub memory_bytes: u64,
    /// Operating system and kernel release.
    pub os: String,
    /// The git commit the binary was built from (`-dirty`: with uncommitted changes at build
    /// time); without a repository at build time `$QUASAR_COMMIT`, else "unknown".
    pub commit: String,
    /// The GPU the lanes used, when one was found.
    pub gpu: Option<String>,
    /// How `quasar-bench` was built: `release`, or `debug` (debug assertions on, this crate
    /// unoptimized: its numbers do not represent the node).
    pub build: &'static str,
}

impl Machine {
    /// Reads this machine's description; `gpu` is the accelerator in use, if any.
    pub fn detect(gpu: Option<String>) -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .and_then(|rest| rest.split_once(':'))
            .map_or_else(|| "unknown".to_string(), |(_, m)| m.trim().to_string());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_bytes = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .map_or(0, |kb| kb.saturating_mul(1024));
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        Machine {
            cpu_model,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_bytes,
            os: format!("{} {}", std::env::consts::OS, kernel.trim())
                .trim()
                .to_string(),
            commit: env!("QUASAR_BENCH_COMMIT").to_string(),
            gpu,
            build: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            },
        }
    }

    /// One line for report headers.
    pub fn describe(&self) -> String {
        format!(
            "{} ({} cores, {:.1} GiB, {}), commit {}, GPU: {}{}",
            self.cpu_model,
            self.cores,
            self.memory_bytes as f64 / (1u64 << 30) as f64,
            self.os,
            self.commit,
            self.gpu.as_deref().unwrap_or("none"),
            if self.build == "release" {
                ""
            } else {
                "; a debug build: these numbers do not represent the node (use --release)"
            }
        )
    }
}

/// One measured quantity (times in milliseconds unless `unit` says otherwise).
#[derive(Clone, Debug, Serialize)]
pub struct Record {
    /// Its group (a lane, a profile, a size).
    pub group: String,
    /// Its name within the group.
    pub name: String,
    /// Unit of the statistics.
    pub unit: String,
    /// Number of samples.
    pub samples: usize,
    /// Calls averaged into each sample.
    pub calls_per_sample: u32,
    /// Median of the samples.
    pub median: f64,
    /// Percentiles of the samples (linear interpolation).
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Anything else the subcommand measured about it (sizes, counts).
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl Record {
    /// The statistics of `values` in `unit`.
    pub fn from_values(group: &str, name: &str, unit: &str, values: &[f64]) -> Record {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        Record {
            group: group.to_string(),
            name: name.to_string(),
            unit: unit.to_string(),
            samples: sorted.len(),
            calls_per_sample: 1,
            median: median(&sorted),
            p50: quantile(&sorted, 0.5),
            p95: quantile(&sorted, 0.95),
            p99: quantile(&sorted, 0.99),
            min: sorted.first().copied().unwrap_or(f64::NAN),
            max: sorted.last().copied().unwrap_or(f64::NAN),
            extra: serde_json::Map::new(),
        }
    }

    /// A quantity known only by its percentiles (from another program's report): no samples
    /// (`samples` 0), min and max unknown (NaN, written as `null`).
    pub fn summary(group: &str, name: &str, unit: &str, p50: f64, p95: f64, p99: f64) -> Record {
        Record {
            group: group.to_string(),
            name: name.to_string(),
            unit: unit.to_string(),
            samples: 0,
            calls_per_sample: 0,
            median: p50,
            p50,
            p95,
            p99,
            min: f64::NAN,
            max: f64::NAN,
            extra: serde_json::Map::new(),
        }
    }

    /// The statistics of a timed series, in milliseconds.
    pub fn from_series(series: &Series) -> Record {
        let mut record = Record::from_values(&series.group, &series.name, "ms", &series.samples_ms);
        record.calls_per_sample = series.calls_per_sample;
        record
    }

    /// Adds `key: value` to [`Record::extra`].
    pub fn with(mut self, key: &str, value: impl Into<serde_json::Value>) -> Record {
        self.extra.insert(key.to_string(), value.into());
        self
    }
}

/// A ratio of two series measured in the same rounds: the median over rounds of
/// `numerator / denominator`.
#[derive(Clone, Debug, Serialize)]
pub struct Ratio {
    /// What it compares, e.g. "flat / aggregate, n=100".
    pub name: String,
    /// `group/name` of the numerator's record.
    pub numerator: String,
    /// `group/name` of the denominator's record (the baseline).
    pub denominator: String,
    /// The median of the per-round ratios.
    pub value: f64,
}

impl Ratio {
    /// The paired ratio of `numerator` over `denominator` (samples paired by round).
    pub fn paired(name: &str, numerator: &Series, denominator: &Series) -> Ratio {
        let per_round: Vec<f64> = numerator
            .samples_ms
            .iter()
            .zip(&denominator.samples_ms)
            .map(|(a, b)| a / b)
            .collect();
        Ratio {
            name: name.to_string(),
            numerator: format!("{}/{}", numerator.group, numerator.name),
            denominator: format!("{}/{}", denominator.group, denominator.name),
            value: median(&per_round),
        }
    }
}

/// A Markdown table.
#[derive(Clone, Debug, Serialize)]
pub struct Table {
    /// Its caption.
    pub title: String,
    /// Column headings.
    pub header: Vec<String>,
    /// Cells, row by row.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table with these headings.
    pub fn new(title: impl Into<String>, header: &[&str]) -> Table {
        Table {
            title: title.into(),
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as Markdown, its caption in bold above it.
    pub fn markdown(&self) -> String {
        let mut out = format!("**{}**\n\n| {} |\n|", self.title, self.header.join(" | "));
        out.push_str(&"---|".repeat(self.header.len()));
        out.push('\n');
        for row in &self.rows {
            let _ = writeln!(out, "| {} |", row.join(" | "));
        }
        out
    }
}

/// Formats milliseconds for a table: three significant digits, never scientific notation.
pub fn ms(value: f64) -> String {
    if !value.is_finite() {
        return "-".into();
    }
    let magnitude = value.abs();
    let digits = if magnitude >= 100.0 {
        0
    } else if magnitude >= 10.0 {
        1
    } else if magnitude >= 1.0 {
        2
    } else if magnitude >= 0.1 {
        3
    } else {
        4
    };
    format!("{value:.digits$}")
}

/// Formats a ratio for a table.
pub fn ratio(value: f64) -> String {
    if value.is_finite() && value < 0.1 {
        format!("{value:.3}×")
    } else if value.is_finite() {
        format!("{value:.2}×")
    } else {
        "-".into()
    }
}

/// What a subcommand plots.
#[derive(Clone, Debug)]
pub enum Plot {
    /// Horizontal bars of medians on a logarithmic axis, each with a whisker to a second value.
    Bars {
        /// Axis label (the unit).
        axis: String,
        /// What the whisker reaches, e.g. "p95" or "the slowest run".
        whisker: String,
        /// (label, median, whisker end).
        bars: Vec<(String, f64, f64)>,
    },
    /// Lines through (x, y) points, one per series.
    Lines {
        /// X axis label.
        x_axis: String,
        /// Y axis label.
        y_axis: String,
        /// (series name, points).
        series: Vec<(String, Vec<(f64, f64)>)>,
    },
}

/// A subcommand's results.
#[derive(Clone, Debug)]
pub struct Report {
    /// The subcommand (file stem of its results).
    pub subcommand: String,
    /// Heading of its Markdown section.
    pub title: String,
    /// Whether it ran at smoke sizes.
    pub smoke: bool,
    /// Its sizes and options, as JSON.
    pub settings: serde_json::Value,
    /// Tables, in print order.
    pub tables: Vec<Table>,
    /// Every measured quantity.
    pub records: Vec<Record>,
    /// Every ratio against a baseline.
    pub ratios: Vec<Ratio>,
    /// Notes printed under the tables (what was measured, what is missing).
    pub notes: Vec<String>,
    /// Its plot.
    pub plot: Plot,
}

impl Report {
    /// The Markdown section: title, machine, tables, notes.
    pub fn markdown(&self, machine: &Machine, elapsed_s: f64) -> String {
        let mut out = format!("## {}\n\n", self.title);
        let _ = writeln!(
            out,
            "Machine: {}. Run time {:.0} s{}.\n",
            machine.describe(),
            elapsed_s,
            if self.smoke { " (smoke sizes)" } else { "" }
        );
        for table in &self.tables {
            out.push_str(&table.markdown());
            out.push('\n');
        }
        for note in &self.notes {
            let _ = writeln!(out, "- {note}");
        }
        out
    }

    /// Writes `S.md`, `S.json` and `S.svg` into `dir` (created if missing) and returns the
    /// Markdown. Errors: [`ReportError`] naming the file.
    pub fn write(
        &self,
        dir: &Path,
        machine: &Machine,
        started_unix: u64,
        elapsed_s: f64,
    ) -> Result<String, ReportError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| ReportError::Io { path, source }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let markdown = self.markdown(machine, elapsed_s);
        let md = dir.join(format!("{}.md", self.subcommand));
        write_atomic(&md, markdown.as_bytes()).map_err(io(&md))?;
        let json = serde_json::json!({
            "version": FORMAT_VERSION,
            "subcommand": self.subcommand,
            "title": self.title,
            "smoke": self.smoke,
            "machine": machine,
            "started_unix": started_unix,
            "elapsed_s": elapsed_s,
            "settings": self.settings,
            "records": self.records,
            "ratios": self.ratios,
            "tables": self.tables,
            "notes": self.notes,
        });
        let path = dir.join(format!("{}.json", self.subcommand));
        let bytes = serde_json::to_vec_pretty(&json).map_err(std::io::Error::other);
        bytes
            .and_then(|b| write_atomic(&path, &b))
            .map_err(io(&path))?;
        let svg = dir.join(format!("{}.svg", self.subcommand));
        let drawing = dir.join(format!(".{}.svg.tmp", self.subcommand));
        draw(&self.plot, &self.title, &drawing).map_err(|message| ReportError::Plot {
            path: svg.clone(),
            message,
        })?;
        std::fs::rename(&drawing, &svg).map_err(io(&svg))?;
        Ok(markdown)
    }
}

/// Writes `bytes` to `path` through a temporary file beside it and a rename, so that a failed
/// write leaves the previous file whole.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let temp = path.with_file_name(format!(".{}.tmp", name.unwrap_or_default()));
    std::fs::write(&temp, bytes)?;
    std::fs::rename(&temp, path)
}

/// Checks before any measurement that results can be written to `dir`: a probe file is written
/// and removed, and `dir`, when this created it, is removed again. Errors: [`ReportError::Io`].
pub fn check_writable(dir: &Path) -> Result<(), ReportError> {
    let probe = dir.join(".quasar-bench-probe");
    if dir.exists() && !dir.is_dir() {
        return Err(ReportError::Io {
            path: dir.to_path_buf(),
            source: std::io::Error::other("it exists and is not a directory (--out names one)"),
        });
    }
    let existed = dir.is_dir();
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&probe, b"probe"))
        .and_then(|()| std::fs::remove_file(&probe))
        // A run refused later (bad options) leaves no empty directory behind; writing the
        // report creates it again.
        .and_then(|()| {
            if existed {
                Ok(())
            } else {
                std::fs::remove_dir(dir)
            }
        })
        .map_err(|source| ReportError::Io {
            path: dir.to_path_buf(),
            source,
        })
}

/// Draws `plot` into the SVG file `path`.
fn draw(plot: &Plot, title: &str, path: &Path) -> Result<(), String> {
    match plot {
        Plot::Bars {
            axis,
            whisker,
            bars,
        } => draw_bars(title, (axis, whisker), bars, path),
        Plot::Lines {
            x_axis,
            y_axis,
            series,
        } => draw_lines(title, x_axis, y_axis, series, path),
    }
    .map_err(|e| e.to_string())
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

fn draw_bars(
    title: &str,
    (axis, whisker): (&str, &str),
    bars: &[(String, f64, f64)],
    path: &Path,
) -> DrawResult {
    let finite = || {
        bars.iter()
            .flat_map(|b| [b.1, b.2])
            .filter(|v| v.is_finite() && *v > 0.0)
    };
    let lo = finite().fold(f64::INFINITY, f64::min).min(1.0) / 2.0;
    let hi = finite().fold(0.0, f64::max).max(lo * 4.0) * 2.0;
    let height = 120 + 26 * bars.len() as u32;
    let label_width = bars.iter().map(|b| b.0.len()).max().unwrap_or(10) as u32 * 7 + 10;
    let root = SVGBackend::new(path, (1100, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(label_width.min(600))
        .build_cartesian_2d((lo..hi).log_scale(), (0..bars.len()).into_segmented())?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(bars.len().max(1))
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => bars.get(*i).map(|b| b.0.clone()).unwrap_or_default(),
            _ => String::new(),
        })
        .x_desc(format!(
            "{axis} (log scale; bar: median, line: to {whisker})"
        ))
        .draw()?;
    let visible = |v: f64| if v.is_finite() && v > lo { v } else { lo };
    chart.draw_series(bars.iter().enumerate().map(|(i, b)| {
        Rectangle::new(
            [
                (lo, SegmentValue::Exact(i)),
                (visible(b.1), SegmentValue::Exact(i + 1)),
            ],
            BLUE.mix(0.6).filled(),
        )
    }))?;
    chart.draw_series(bars.iter().enumerate().map(|(i, b)| {
        PathElement::new(
            vec![
                (visible(b.1), SegmentValue::CenterOf(i)),
                (visible(b.2), SegmentValue::CenterOf(i)),
            ],
            BLACK.stroke_width(2),
        )
    }))?;
    root.present()?;
    Ok(())
}

fn draw_lines(
    title: &str,
    x_axis: &str,
    y_axis: &str,
    series: &[(String, Vec<(f64, f64)>)],
    path: &Path,
) -> DrawResult {
    let points = || {
        series
            .iter()
            .flat_map(|s| s.1.iter())
            .filter(|p| p.1.is_finite())
    };
    let (x_lo, x_hi) = points().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
        (lo.min(p.0), hi.max(p.0))
    });
    let y_hi = points().fold(0.0, |hi: f64, p| hi.max(p.1)) * 1.15;
    let (x_lo, x_hi) = if x_lo < x_hi {
        (x_lo, x_hi)
    } else if x_lo.is_finite() {
        // One x value: centre it.
        (x_lo - 1.0, x_lo + 1.0)
    } else {
        (0.0, 1.0)
    };
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(x_lo..x_hi, 0.0..y_hi.max(1e-3))?;
    chart
        .configure_mesh()
        .x_desc(x_axis)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_desc(y_axis)
        .draw()?;
    for (i, (name, pts)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_render_as_markdown() {
        let mut t = Table::new("T", &["a", "b"]);
        t.row(vec!["1".into(), "2".into()]);
        assert_eq!(t.markdown(), "**T**\n\n| a | b |\n|---|---|\n| 1 | 2 |\n");
    }

    #[test]
    fn numbers_keep_three_significant_digits() {
        assert_eq!(ms(1234.5), "1234");
        assert_eq!(ms(12.345), "12.3");
        assert_eq!(ms(1.2345), "1.23");
        assert_eq!(ms(0.12345), "0.123");
        assert_eq!(ms(0.012345), "0.0123");
        assert_eq!(ms(f64::NAN), "-");
        assert_eq!(ratio(2.0), "2.00×");
    }

    #[test]
    fn records_carry_percentiles() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        let r = Record::from_values("g", "n", "ms", &values);
        assert_eq!((r.samples, r.min, r.max), (100, 1.0, 100.0));
        assert!((r.median - 50.5).abs() < 1e-9 && (r.p50 - 50.5).abs() < 1e-9);
        assert!((r.p95 - 95.05).abs() < 1e-9 && (r.p99 - 99.01).abs() < 1e-9);
    }

    #[test]
    fn a_report_writes_markdown_json_and_svg() {
        let dir = tempfile::tempdir().unwrap();
        let report = Report {
            subcommand: "demo".into(),
            title: "Demo".into(),
            smoke: true,
            settings: serde_json::json!({"n": 1}),
            tables: vec![Table::new("T", &["a"])],
            records: vec![Record::from_values("g", "x", "ms", &[1.0, 2.0])],
            ratios: Vec::new(),
            notes: vec!["a note".into()],
            plot: Plot::Bars {
                axis: "ms".into(),
                whisker: "p95".into(),
                bars: vec![("x".into(), 1.5, 1.95), ("y".into(), f64::NAN, f64::NAN)],
            },
        };
        let machine = Machine::detect(None);
        let md = report.write(dir.path(), &machine, 0, 1.0).unwrap();
        assert!(md.starts_with("## Demo\n") && md.contains("- a note"));
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("demo.json")).unwrap()).unwrap();
        assert_eq!(json["records"][0]["p50"], 1.5);
        assert_eq!(json["machine"]["cores"], machine.cores);
        let svg = std::fs::read_to_string(dir.path().join("demo.svg")).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("Demo"));
        let lines = Report {
            plot: Plot::Lines {
                x_axis: "n".into(),
                y_axis: "ms".into(),
                series: vec![("s".into(), vec![(10.0, 1.0), (20.0, 2.0)])],
            },
            ..report
        };
        lines.write(dir.path(), &machine, 0, 1.0).unwrap();
    }
}
