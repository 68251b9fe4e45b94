//! What build is running: version, commit and profile (for `--version`, `GET /status` and the
//! first log line), and the metrics every Quasar process exports about itself:
//! `<name>_build_info{version,commit} 1` and the standard `process_*` metrics.
//!
//! | metric | type | source (Linux; absent elsewhere) |
//! |---|---|---|
//! | `process_cpu_seconds_total` | counter | `/proc/self/stat` utime + stime |
//! | `process_start_time_seconds` | gauge | `/proc/self/stat` starttime + `/proc/stat` btime |
//! | `process_resident_memory_bytes` | gauge | `/proc/self/status` VmRSS |
//! | `process_virtual_memory_bytes` | gauge | `/proc/self/status` VmSize |
//! | `process_threads` | gauge | `/proc/self/status` Threads |
//! | `process_open_fds` | gauge | entries of `/proc/self/fd` |
//! | `process_max_fds` | gauge | `/proc/self/limits` "Max open files" (soft) |
//!
//! The names, units and sources are those of the Prometheus Go client's process collector
//! (client_golang, via procfs), so existing dashboards and alerts apply. prometheus-client has no
//! process collector and no maintained crate provides one for it, hence [`ProcessMetrics`]. A
//! file that cannot be read or parsed at a scrape leaves its metrics out of that scrape.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::registry::Registry;

/// The crate version, e.g. `0.1.0`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The first 12 hex digits of the commit built, or `unknown` (set by `node/build.rs`; a build
/// without `.git` can pass it in the `QUASAR_GIT_COMMIT` environment variable).
pub const COMMIT: &str = env!("QUASAR_GIT_COMMIT");

/// `release` for an optimized build, `debug` for one with debug assertions.
pub const PROFILE: &str = if cfg!(debug_assertions) {
    "debug"
} else {
    "release"
};

/// What `--version` prints after the program name: `0.1.0 (commit abc123def456, release)`.
#[cfg(debug_assertions)]
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("QUASAR_GIT_COMMIT"),
    ", debug)"
);

/// What `--version` prints after the program name: `0.1.0 (commit abc123def456, release)`.
#[cfg(not(debug_assertions))]
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("QUASAR_GIT_COMMIT"),
    ", release)"
);

/// Logs the line a node starts with (before anything else it logs): version, commit, build
/// (`release` or `debug`), genesis hash (hex) and chain id, so that every log names the build and the chain it is from.
pub fn log_node_start(genesis_hash: &[u8; 32], chain_id: u64) {
    tracing::info!(
        version = VERSION,
        commit = COMMIT,
        build = PROFILE,
        genesis_hash = %hex::encode(genesis_hash),
        chain_id,
        "quasar-node starting"
    );
}

/// The labels of `<name>_build_info`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: &'static str,
    commit: &'static str,
}

/// Registers `<prefix>_build_info` (a gauge of 1 labelled with [`VERSION`] and [`COMMIT`]) and,
/// on Linux, the unprefixed `process_*` metrics ([`ProcessMetrics`]) into `registry`.
pub fn register(registry: &mut Registry, prefix: &str) {
    let family = Family::<BuildLabels, Gauge>::default();
    family
        .get_or_create(&BuildLabels {
            version: VERSION,
            commit: COMMIT,
        })
        .set(1);
    registry.sub_registry_with_prefix(prefix).register(
        "build_info",
        "The running build: version and commit",
        family,
    );
    if cfg!(target_os = "linux") {
        registry.register_collector(Box::new(ProcessMetrics));
    }
}

/// The `process_*` metrics of this process, read from `/proc` at each scrape (Linux only; see
/// the module docs).
#[derive(Debug, Clone, Copy)]
pub struct ProcessMetrics;

/// Linux reports `/proc/*/stat` times in USER_HZ ticks, 100 per second on every architecture
/// it supports (procfs and client_golang assume the same).
const USER_HZ: f64 = 100.0;

/// The fields of `/proc/self/stat` the collector uses, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatTimes {
    /// User-mode CPU time (field 14).
    pub utime: u64,
    /// Kernel-mode CPU time (field 15).
    pub stime: u64,
    /// Start time after boot (field 22).
    pub starttime: u64,
}

/// Parses `/proc/<pid>/stat` (proc(5)). The command name (field 2) may hold spaces and
/// parentheses, so fields are counted from its last `)`. `None` when a field is missing or not
/// a number.
pub fn parse_stat(text: &str) -> Option<StatTimes> {
    let (_, rest) = text.rsplit_once(')')?;
    // `rest` starts at field 3 (state).
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n.checked_sub(3)?)?.parse::<u64>().ok();
    Some(StatTimes {
        utime: field(14)?,
        stime: field(15)?,
        starttime: field(22)?,
    })
}

/// The value of `key` in a `Key:  value [kB]` file (`/proc/self/status`, `/proc/stat` uses
/// `key value`): the first number after the key, times 1024 when it is followed by `kB`.
pub fn parse_field(text: &str, key: &str) -> Option<u64> {
    let rest = text.lines().find_map(|l| {
        l.strip_prefix(key)
            .filter(|rest| rest.starts_with(':') || rest.starts_with(' '))
    })?;
    let mut words = rest.trim_start_matches(':').split_whitespace();
    let value: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => value.checked_mul(1024),
        _ => Some(value),
    }
}

/// The soft limit on open files in `/proc/self/limits` (`None` when unlimited or absent).
pub fn parse_max_fds(limits: &str) -> Option<u64> {
    limits
        .lines()
        .find_map(|l| l.strip_prefix("Max open files"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

impl ProcessMetrics {
    /// Every metric that could be read now: `(name, help, value, is_counter)`.
    fn read(&self) -> Vec<(&'static str, &'static str, f64, bool)> {
        let read = |path: &str| std::fs::read_to_string(path).ok();
        let mut out = Vec::new();
        let stat = read("/proc/self/stat").and_then(|s| parse_stat(&s));
        if let Some(stat) = stat {
            out.push((
                "process_cpu_seconds_total",
                "Total user and system CPU time spent in seconds.",
                stat.utime.saturating_add(stat.stime) as f64 / USER_HZ,
                true,
            ));
            if let Some(boot) = read("/proc/stat").and_then(|s| parse_field(&s, "btime")) {
                out.push((
                    "process_start_time_seconds",
                    "Start time of the process since unix epoch in seconds.",
                    boot as f64 + stat.starttime as f64 / USER_HZ,
                    false,
                ));
            }
        }
        if let Some(status) = read("/proc/self/status") {
            for (key, name, help) in [
                (
                    "VmRSS",
                    "process_resident_memory_bytes",
                    "Resident memory size in bytes.",
                ),
                (
                    "VmSize",
                    "process_virtual_memory_bytes",
                    "Virtual memory size in bytes.",
                ),
                (
                    "Threads",
                    "process_threads",
                    "Number of OS threads in the process.",
                ),
            ] {
                if let Some(value) = parse_field(&status, key) {
                    out.push((name, help, value as f64, false));
                }
            }
        }
        if let Ok(entries) = std::fs::read_dir("/proc/self/fd") {
            out.push((
                "process_open_fds",
                "Number of open file descriptors.",
                entries.count() as f64,
                false,
            ));
        }
        if let Some(max) = read("/proc/self/limits").and_then(|s| parse_max_fds(&s)) {
            out.push((
                "process_max_fds",
                "Maximum number of open file descriptors.",
                max as f64,
                false,
            ));
        }
        out
    }
}

impl Collector for ProcessMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for (name, help, value, is_counter) in self.read() {
            if is_counter {
                // The encoder appends `_total` to a counter's name.
                let name = name.trim_end_matches("_total");
                let counter = ConstCounter::new(value);
                let metric = encoder.encode_descriptor(name, help, None, counter.metric_type())?;
                counter.encode(metric)?;
            } else {
                let gauge = ConstGauge::new(value);
                let metric = encoder.encode_descriptor(name, help, None, gauge.metric_type())?;
                gauge.encode(metric)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_last_parenthesis() {
        // A command name with a space and a parenthesis in it (proc(5) allows both).
        let stat = "4242 (quasar (x) node) S 1 4242 4242 0 -1 4194560 1000 0 0 0 \
                    250 75 0 0 20 0 9 0 123456 1000000 500 18446744073709551615";
        assert_eq!(
            parse_stat(stat),
            Some(StatTimes {
                utime: 250,
                stime: 75,
                starttime: 123456
            })
        );
        assert_eq!(parse_stat("4242 (short) S 1 2"), None, "truncated");
        assert_eq!(parse_stat("no parenthesis"), None);
    }

    #[test]
    fn status_fields_read_kilobytes_as_bytes() {
        let status = "Name:\tquasar-node\nVmSize:\t  2048 kB\nVmRSS:\t    100 kB\nThreads:\t9\n";
        assert_eq!(parse_field(status, "VmRSS"), Some(100 * 1024));
        assert_eq!(parse_field(status, "VmSize"), Some(2048 * 1024));
        assert_eq!(parse_field(status, "Threads"), Some(9));
        assert_eq!(parse_field(status, "Vm"), None, "a prefix is not a key");
        assert_eq!(
            parse_field("cpu 1 2\nbtime 1700000000\n", "btime"),
            Some(1_700_000_000)
        );
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max open files            1024                 524288               files\n";
        assert_eq!(parse_max_fds(limits), Some(1024));
        assert_eq!(
            parse_max_fds("Max open files unlimited unlimited files"),
            None
        );
    }

    #[test]
    fn build_info_and_process_metrics_reach_the_exposition() {
        let mut registry = Registry::default();
        register(&mut registry, "quasar");
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        let line = format!(r#"quasar_build_info{{version="{VERSION}",commit="{COMMIT}"}} 1"#);
        assert!(
            text.lines().any(|l| l == line),
            "{line} missing in:\n{text}"
        );
        assert!(LONG_VERSION.starts_with(&format!("{VERSION} (commit {COMMIT}, ")));
        if cfg!(target_os = "linux") {
            for name in [
                "process_cpu_seconds_total ",
                "process_start_time_seconds ",
                "process_resident_memory_bytes ",
                "process_open_fds ",
                "process_max_fds ",
            ] {
                assert!(
                    text.lines().any(|l| l.starts_with(name)),
                    "{name} missing in:\n{text}"
                );
            }
        }
    }
}
