//! `quasar-bench finality`: the distributed finality bench. The coordinator (this process)
//! makes "hosts" as Linux network namespaces joined to one bridge by veth pairs, with `tc
//! netem` delay and jitter on every host's link, spreads the validators over the hosts (a node
//! and its thresholdd per validator, the node signing through the daemon), runs the network to
//! a target height for each (scale, profile), and reports per-leg arrival p50 and finality
//! p50/p95, from the testnet report (`quasar_node::testnet::run`).
//!
//! - BLS arrival is Nova finality: a block's proposal timestamp to a node seeing its finalize
//!   quorum (the BLS certificate), over every (validator, block).
//! - Pulsar, Corona, Magnetar (and Groth16) arrival: a bundle's closing to the leg attached
//!   (its signing rounds over the network, or the quorum of Magnetar signatures), the median
//!   over the validators of their medians.
//!
//! Namespaces need `CAP_NET_ADMIN` (root) and `ip` (iproute2); without them the bench runs on
//! this host's loopback and says so. A kernel without `sch_netem` runs the namespaces with no
//! added delay, and says so.

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::process::Command;

use quasar_lanes::cert::Profile;
use quasar_node::testnet::{self, Placement, TestnetOptions, TestnetReport};

use super::{distinct, BenchError, Common};
use crate::report::{ms, Plot, Ratio, Record, Report, Table};

/// `finality` options.
#[derive(Clone, Debug, clap::Args)]
pub struct Options {
    /// Validator counts (default 10; smoke 4; 100 and 500 need far more than 2 cores: each
    /// validator is two processes).
    #[arg(long, value_delimiter = ',')]
    pub scales: Option<Vec<usize>>,
    /// Profiles (default aurora,polaris,hybrid-1s; smoke aurora).
    #[arg(long, value_delimiter = ',', value_parser = parse_profile)]
    pub profiles: Option<Vec<Profile>>,
    /// Hosts the validators are spread over (default 3; smoke 2).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub hosts: Option<u64>,
    /// One-way delay added on every host's link, milliseconds (tc netem).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(0..=5000))]
    pub delay_ms: u64,
    /// Jitter of that delay, milliseconds.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(0..=5000))]
    pub jitter_ms: u64,
    /// Blocks every validator must finalize per run (default 48, three bundles; smoke 16).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub blocks: Option<u64>,
    /// Minimum time between blocks, milliseconds.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(50..=60_000))]
    pub block_time_ms: u64,
    /// Run every validator on this host's loopback (no namespaces).
    #[arg(long)]
    pub loopback: bool,
    /// The `quasar-node` binary (its `thresholdd` must sit beside it); default: the one next
    /// to this executable.
    #[arg(long)]
    pub node_bin: Option<PathBuf>,
}

fn parse_profile(s: &str) -> Result<Profile, String> {
    s.parse::<Profile>().map_err(|e| e.to_string())
}

/// Runs `ip ARGS` (iproute2). Errors: its stderr.
fn ip(args: &[&str]) -> Result<(), String> {
    command("ip", args)
}

fn command(program: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{program} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The hosts of a run: namespaces on a bridge, removed on drop.
struct Namespaces {
    names: Vec<String>,
    bridge: String,
    /// Host h's address.
    addresses: Vec<Ipv4Addr>,
    /// Whether netem delays the links.
    netem: bool,
}

impl Namespaces {
    /// `hosts` namespaces on a new bridge, each link delayed by `delay_ms` ± `jitter_ms` when
    /// the kernel has netem. Errors: the first `ip` command that failed (all made so far are
    /// removed).
    fn create(hosts: usize, delay_ms: u64, jitter_ms: u64) -> Result<Namespaces, String> {
        let tag = std::process::id() % 200;
        let mut made = Namespaces {
            names: Vec::new(),
            bridge: format!("qb{tag}br"),
            addresses: Vec::new(),
            netem: true,
        };
        ip(&["link", "add", &made.bridge, "type", "bridge"])?;
        let subnet = |host: u8| Ipv4Addr::new(10, 213, tag as u8, host);
        ip(&[
            "addr",
            "add",
            &format!("{}/24", subnet(254)),
            "dev",
            &made.bridge,
        ])?;
        ip(&["link", "set", &made.bridge, "up"])?;
        for h in 0..hosts {
            let name = format!("qb{tag}h{h}");
            let (outer, inner) = (format!("qb{tag}v{h}"), format!("qb{tag}p{h}"));
            ip(&["netns", "add", &name])?;
            made.names.push(name.clone());
            let address = subnet(h as u8 + 1);
            ip(&[
                "link", "add", &outer, "type", "veth", "peer", "name", &inner,
            ])?;
            ip(&["link", "set", &inner, "netns", &name])?;
            ip(&["link", "set", &outer, "master", &made.bridge])?;
            ip(&["link", "set", &outer, "up"])?;
            ip(&["-n", &name, "link", "set", "lo", "up"])?;
            ip(&["-n", &name, "link", "set", &inner, "name", "eth0"])?;
            ip(&[
                "-n",
                &name,
                "addr",
                "add",
                &format!("{address}/24"),
                "dev",
                "eth0",
            ])?;
            ip(&["-n", &name, "link", "set", "eth0", "up"])?;
            if made.netem && delay_ms > 0 {
                let (delay, jitter) = (format!("{delay_ms}ms"), format!("{jitter_ms}ms"));
                let netem = command(
                    "ip",
                    &[
                        "netns", "exec", &name, "tc", "qdisc", "add", "dev", "eth0", "root",
                        "netem", "delay", &delay, &jitter,
                    ],
                );
                if let Err(e) = netem {
                    eprintln!(
                        "finality: notice: no netem on this kernel, links get no added delay ({e})"
                    );
                    made.netem = false;
                }
            }
            made.addresses.push(address);
        }
        Ok(made)
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for name in &self.names {
            if let Err(e) = ip(&["netns", "del", name]) {
                eprintln!("finality: {e}");
            }
        }
        if let Err(e) = ip(&["link", "del", &self.bridge]) {
            eprintln!("finality: {e}");
        }
    }
}

/// One (scale, profile) run's outcome.
struct Run {
    scale: usize,
    profile: Profile,
    report: Result<TestnetReport, String>,
}

/// Runs the finality bench.
pub fn run(options: &Options, common: &Common) -> Result<Report, BenchError> {
    let scales =
        options
            .scales
            .clone()
            .unwrap_or_else(|| if common.smoke { vec![4] } else { vec![10] });
    let scales = distinct(scales);
    if scales.iter().any(|&n| !(4..=500).contains(&n)) {
        return Err(BenchError::Options(
            "scales must be between 4 and 500 validators".into(),
        ));
    }
    let profiles = options.profiles.clone().unwrap_or_else(|| {
        if common.smoke {
            vec![Profile::Aurora]
        } else {
            vec![
                Profile::Aurora,
                Profile::Polaris,
                Profile::Hybrid { deadline_ms: 1000 },
            ]
        }
    });
    let profiles = distinct(profiles);
    let hosts = options
        .hosts
        .map_or(if common.smoke { 2 } else { 3 }, |h| h as usize);
    let blocks = options.blocks.unwrap_or(if common.smoke { 16 } else { 48 });
    let node_bin = match &options.node_bin {
        Some(path) => path.clone(),
        None => std::env::current_exe()
            .map_err(BenchError::setup("own executable"))?
            .with_file_name("quasar-node"),
    };
    let thresholdd = node_bin.with_file_name("thresholdd");
    if node_bin.is_dir() {
        return Err(BenchError::Setup(format!(
            "{} is a directory: --node-bin names the quasar-node binary itself",
            node_bin.display()
        )));
    }
    if !node_bin.is_file() {
        let hint = if options.node_bin.is_some() {
            "check the --node-bin path"
        } else {
            "build it (`cargo build --release -p quasar-node -p quasar-thresholdd`) or give --node-bin"
        };
        return Err(BenchError::Setup(format!(
            "{} not found: {hint}",
            node_bin.display()
        )));
    }
    if !thresholdd.is_file() {
        return Err(BenchError::Setup(format!(
            "{} not found: thresholdd must sit beside quasar-node (`cargo build --release -p \
             quasar-node -p quasar-thresholdd` builds both)",
            thresholdd.display()
        )));
    }
    let mut notes = Vec::new();
    let namespaces = if options.loopback {
        notes.push("Loopback run (--loopback): every validator on this host.".to_string());
        None
    } else {
        match Namespaces::create(hosts, options.delay_ms, options.jitter_ms) {
            Ok(ns) => Some(ns),
            Err(e) => {
                let notice = format!(
                    "Network namespaces are not allowed here ({e}): every validator runs on \
                     this host's loopback, with no added delay."
                );
                eprintln!("finality: notice: {notice}");
                notes.push(notice);
                None
            }
        }
    };
    let network = match &namespaces {
        Some(ns) if ns.netem => format!(
            "{hosts} namespaces, netem {} ± {} ms one way per link",
            options.delay_ms, options.jitter_ms
        ),
        Some(_) => {
            notes.push(
                "This kernel has no netem (sch_netem): the namespaces' links add no delay.".into(),
            );
            format!("{hosts} namespaces, no added delay")
        }
        None => "loopback".into(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(BenchError::setup("tokio runtime"))?;
    let mut runs = Vec::new();
    for &scale in &scales {
        for &profile in &profiles {
            eprintln!("finality: {scale} validators, {profile}, {network}");
            let placements = namespaces.as_ref().map_or_else(Vec::new, |ns| {
                (0..scale)
                    .map(|i| Placement {
                        launcher: ["ip", "netns", "exec", &ns.names[i % ns.names.len()]]
                            .map(String::from)
                            .to_vec(),
                        ip: IpAddr::V4(ns.addresses[i % ns.addresses.len()]),
                    })
                    .collect()
            });
            let opts = TestnetOptions {
                validators: scale,
                blocks,
                block_time_ms: options.block_time_ms,
                tx_rate: 20.0,
                profile,
                remote_signers: true,
                placements,
                ..TestnetOptions::new(&node_bin)
            };
            let report = runtime
                .block_on(testnet::run(opts))
                .map_err(|e| e.to_string());
            if let Err(e) = &report {
                eprintln!("finality: {scale} validators, {profile}: {e}");
            }
            runs.push(Run {
                scale,
                profile,
                report,
            });
        }
    }
    drop(namespaces);
    if runs.iter().all(|r| r.report.is_err()) {
        let reasons: Vec<String> = runs
            .iter()
            .filter_map(|r| r.report.as_ref().err().cloned())
            .collect();
        return Err(BenchError::Setup(format!(
            "no run finished: {}",
            reasons.join("; ")
        )));
    }
    Ok(report(
        &runs,
        options,
        common,
        (hosts, blocks, &network, &node_bin),
        notes,
    ))
}

/// The PQ legs in table order.
const LEGS: [&str; 4] = ["pulsar", "corona", "magnetar", "groth16"];

fn report(
    runs: &[Run],
    options: &Options,
    common: &Common,
    (hosts, blocks, network, node_bin): (usize, u64, &str, &Path),
    mut notes: Vec<String>,
) -> Report {
    let mut table = Table::new(
        format!(
            "Distributed finality ({network}; {blocks} blocks per run, block time {} ms, a \
             thresholdd per validator; leg arrival p50 in ms)",
            options.block_time_ms
        ),
        &[
            "validators",
            "profile",
            "BLS (Nova finality) p50",
            "Pulsar",
            "Corona",
            "Magnetar",
            "Groth16",
            "finality p50",
            "finality p95",
            "blocks/s",
            "Quasar-final height / height",
            "note",
        ],
    );
    let mut records = Vec::new();
    let mut ratios = Vec::new();
    let mut bars = Vec::new();
    for run in runs {
        let group = format!("{} n={}", run.profile, run.scale);
        let r = match &run.report {
            Ok(r) => r,
            Err(e) => {
                let mut row = vec![run.scale.to_string(), run.profile.to_string()];
                row.extend(std::iter::repeat_n("-".to_string(), 9));
                row.push(format!("failed: {e}"));
                table.row(row);
                continue;
            }
        };
        let leg = |name: &str| r.leg_sign_p50_ms.get(name).copied();
        let mut row = vec![
            run.scale.to_string(),
            run.profile.to_string(),
            ms(r.finality_p50_ms),
        ];
        row.extend(LEGS.iter().map(|l| leg(l).map_or("-".into(), ms)));
        row.extend([
            ms(r.finality_p50_ms),
            ms(r.finality_p95_ms),
            format!("{:.2}", r.blocks_per_sec),
            format!("{} / {}", r.quasar_finalized_height, r.finalized_height),
            r.quasar_unavailable.clone().unwrap_or_else(|| {
                if r.agreement {
                    "agreement".into()
                } else {
                    "DISAGREEMENT".into()
                }
            }),
        ]);
        table.row(row);
        let summary = |name: &str, p50: f64, p95: f64, p99: f64| {
            Record::summary(&group, name, "ms", p50, p95, p99)
                .with("blocks_per_sec", r.blocks_per_sec)
                .with("quasar_finalized_height", r.quasar_finalized_height)
                .with("finalized_height", r.finalized_height)
        };
        records.push(summary(
            "finality (BLS leg)",
            r.finality_p50_ms,
            r.finality_p95_ms,
            r.finality_p99_ms,
        ));
        bars.push((
            format!("{group}: BLS / Nova finality"),
            r.finality_p50_ms,
            r.finality_p95_ms,
        ));
        for name in LEGS {
            if let Some(p50) = leg(name) {
                let rec = Record::summary(
                    &group,
                    &format!("{name} leg"),
                    "ms",
                    p50,
                    f64::NAN,
                    f64::NAN,
                );
                ratios.push(Ratio {
                    name: format!("{group}: {name} leg / BLS finality"),
                    numerator: format!("{group}/{name} leg"),
                    denominator: format!("{group}/finality (BLS leg)"),
                    value: p50 / r.finality_p50_ms,
                });
                bars.push((format!("{group}: {name} leg"), p50, p50));
                records.push(rec);
            }
        }
    }
    notes.extend([
        "Per-leg p50s are medians over the validators of each one's median (bundle closed → leg \
         attached); the finality columns are Nova finality (the BLS certificate) over every \
         (validator, block). A leg's time is added to Nova finality for its bundle's Quasar \
         finality; `hybrid-…` bundles whose legs miss the deadline stay at Nova finality."
            .into(),
        format!(
            "Ratios: each post-quantum leg's p50 over BLS finality p50 in the same run. Binary: {}.",
            node_bin.display()
        ),
        "Scales of 100 and 500 validators (`--scales 100,500`) need many more cores than this \
         machine has: every validator is two processes."
            .into(),
    ]);
    if ratios.is_empty() {
        notes.push("No post-quantum leg attached in any run.".into());
    } else {
        let listed: Vec<String> = ratios
            .iter()
            .map(|r| format!("{} {:.2}", r.name, r.value))
            .collect();
        notes.push(format!("Leg / BLS finality: {}.", listed.join("; ")));
    }
    Report {
        subcommand: "finality".into(),
        title: "Distributed finality".into(),
        smoke: common.smoke,
        settings: serde_json::json!({
            "scales": runs.iter().map(|r| r.scale).collect::<std::collections::BTreeSet<_>>(),
            "profiles": runs.iter().map(|r| r.profile.to_string()).collect::<Vec<_>>(),
            "hosts": hosts,
            "network": network,
            "delay_ms": options.delay_ms,
            "jitter_ms": options.jitter_ms,
            "blocks": blocks,
            "block_time_ms": options.block_time_ms,
        }),
        tables: vec![table],
        records,
        ratios,
        notes,
        plot: Plot::Bars {
            axis: "milliseconds (p50)".into(),
            whisker: "p95 (finality rows; legs: p50 only)".into(),
            bars,
        },
    }
}
