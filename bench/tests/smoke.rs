//! Every `quasar-bench` subcommand at smoke sizes, as a user runs it (the binary, a results
//! directory): it succeeds, and its JSON parses with the fields the report promises.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn bench(out: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_quasar-bench"))
        .arg("--out")
        .arg(out)
        .args(args)
        .output()
        .expect("quasar-bench starts")
}

/// Runs `quasar-bench --smoke SUBCOMMAND`, checks its files and the common JSON fields, and
/// returns the JSON.
fn smoke(subcommand: &str) -> Value {
    smoke_with(subcommand, &[])
}

/// [`smoke`] with more arguments after the subcommand.
fn smoke_with(subcommand: &str, more: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["--smoke", subcommand];
    args.extend(more);
    let out = bench(dir.path(), &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{subcommand} failed: {stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let md = std::fs::read_to_string(dir.path().join(format!("{subcommand}.md"))).unwrap();
    assert!(stdout.contains(&md), "stdout carries the Markdown report");
    assert!(
        md.contains("| ---") || md.contains("|---|"),
        "a Markdown table"
    );
    let svg = std::fs::read_to_string(dir.path().join(format!("{subcommand}.svg"))).unwrap();
    assert!(svg.starts_with("<svg"), "an SVG plot");
    let json: Value = serde_json::from_slice(
        &std::fs::read(dir.path().join(format!("{subcommand}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(json["version"], 1);
    assert_eq!(json["subcommand"], subcommand);
    assert_eq!(json["smoke"], true);
    let machine = &json["machine"];
    assert!(machine["cpu_model"].as_str().is_some_and(|m| !m.is_empty()));
    assert!(machine["cores"].as_u64().is_some_and(|c| c >= 1));
    assert!(machine["memory_bytes"].is_u64());
    assert!(machine["commit"].as_str().is_some_and(|c| !c.is_empty()));
    // The binary is built with the tests' profile.
    let build = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    assert_eq!(machine["build"], build);
    let records = json["records"].as_array().expect("records");
    assert!(!records.is_empty());
    for r in records {
        // A summary taken from another program's report has no samples, min or max.
        let summary = r["samples"] == 0;
        let keys: &[&str] = if summary {
            &["median", "p50"]
        } else {
            &["median", "p50", "p95", "p99", "min", "max"]
        };
        for key in keys {
            let v = r[key].as_f64().unwrap_or(f64::NAN);
            assert!(v.is_finite() && v > 0.0, "{key} of {r}");
        }
        if summary {
            assert!(r["min"].is_null() && r["max"].is_null(), "{r}");
        } else {
            assert!(
                r["p50"].as_f64() <= r["p95"].as_f64() && r["p95"].as_f64() <= r["p99"].as_f64()
            );
            assert!(r["samples"].as_u64().is_some_and(|s| s >= 2), "{r}");
        }
        assert!(r["group"].is_string() && r["name"].is_string() && r["unit"].is_string());
    }
    for ratio in json["ratios"].as_array().expect("ratios") {
        let v = ratio["value"].as_f64().unwrap_or(f64::NAN);
        assert!(v.is_finite() && v > 0.0, "{ratio}");
        assert!(ratio["numerator"].is_string() && ratio["denominator"].is_string());
    }
    json
}

fn groups(json: &Value) -> Vec<String> {
    json["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["group"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn lanes_time_every_lane_against_its_baseline() {
    let json = smoke("lanes");
    let groups = groups(&json);
    for lane in [
        "bls n=4",
        "ml-dsa-65",
        "corona 3-of-4",
        "groth16",
        "pulsar 3-of-4",
        "magnetar",
    ] {
        assert!(
            groups.iter().any(|g| g == lane),
            "no {lane} records: {groups:?}"
        );
    }
    let ratios = json["ratios"].as_array().unwrap();
    assert_eq!(
        ratios.len(),
        8,
        "every lane row with a baseline has its ratio"
    );
}

#[test]
fn cert_reports_every_profile_with_its_size() {
    let json = smoke("cert");
    let wholes: Vec<&Value> = json["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["name"] == "whole")
        .collect();
    let profiles: Vec<&str> = wholes
        .iter()
        .map(|r| r["group"].as_str().unwrap())
        .collect();
    assert_eq!(
        profiles,
        ["quasar n=4", "aurora n=4", "polaris n=4", "fast n=4"]
    );
    for r in &wholes {
        let bytes = r["extra"]["cert_bytes"].as_u64().unwrap();
        let legs: u64 = r["extra"]["leg_bytes"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert!(
            bytes > legs,
            "the certificate holds its legs and a header: {r}"
        );
    }
    assert_eq!(json["ratios"].as_array().unwrap().len(), 8);
}

#[test]
fn bls_batch_compares_every_method_with_flat() {
    let json = smoke("bls-batch");
    let names: Vec<&str> = json["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 5);
    assert!(names.contains(&"aggregate, cache warm") && names.contains(&"flat: one by one"));
    assert_eq!(json["ratios"].as_array().unwrap().len(), 4);
}

#[test]
fn sweep_fits_a_cost_per_participant() {
    let json = smoke("sweep");
    assert_eq!(
        json["records"].as_array().unwrap().len(),
        6,
        "3 schemes × 2 sizes"
    );
    for scheme in ["BLS", "Corona"] {
        let slope = json["settings"]["fits"][scheme]["ms_per_validator"].as_f64();
        assert!(slope.is_some_and(f64::is_finite), "{scheme}: {slope:?}");
    }
}

/// `all` runs every subcommand, writes one report, and lists the one that could not run (here
/// `finality`, pointed at a binary that does not exist) under "Not measured", then fails.
#[test]
fn all_writes_one_report_and_names_what_did_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir").join("quasar-node");
    let out = bench(
        dir.path(),
        &["--smoke", "all", "--node-bin", missing.to_str().unwrap()],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "all succeeded without finality");
    assert!(
        stderr.contains("1 of 6 subcommands did not run"),
        "{stderr}"
    );
    let report = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(
        report.starts_with("# Quasar performance report"),
        "{report}"
    );
    let (measured, not_measured) = report
        .split_once("## Not measured")
        .expect("a failure list");
    assert!(
        not_measured.contains("`finality`") && not_measured.contains(missing.to_str().unwrap()),
        "{not_measured}"
    );
    for name in ["lanes", "cert", "bls-batch", "zap", "sweep"] {
        let md = std::fs::read_to_string(dir.path().join(format!("{name}.md"))).unwrap();
        assert!(
            measured.contains(md.trim()),
            "{name}'s section is in the report"
        );
        assert!(!not_measured.contains(&format!("`{name}`")), "{name} ran");
    }
    assert!(!dir.path().join("finality.json").exists());
}

#[test]
fn bad_options_are_refused_with_a_reason() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("results");
    let cases: [(&[&str], &str); 6] = [
        (&["bls-batch", "--sizes", "0"], "between 1 and 4096"),
        (&["cert", "--profiles", "nope"], "unknown profile"),
        (&["sweep", "--sizes", "1"], "between 2 and 256"),
        (&["--rounds", "0", "lanes"], "0 is not in 1..=1000"),
        (
            &["finality", "--node-bin", "/nonexistent/quasar-node"],
            "not found",
        ),
        (&["finality", "--scales", "3"], "between 4 and 500"),
    ];
    for (args, reason) in cases {
        let out = bench(&dir, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(stderr.contains(reason), "{args:?}: {stderr}");
        assert!(!dir.exists(), "{args:?} left {} behind", dir.display());
    }
    // The binary's own directory as --node-bin, and a file as --out.
    let out = bench(
        &dir,
        &["finality", "--node-bin", parent.path().to_str().unwrap()],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is a directory"), "{stderr}");
    let file = parent.path().join("a-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let out = bench(&file, &["sweep"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("not a directory"),
        "{stderr}"
    );
}

#[test]
fn zap_sends_votes_over_quic_in_both_codecs() {
    let json = smoke("zap");
    let groups = groups(&json);
    for mode in [
        "1 connection",
        "20 connections",
        "50 connections, batches of 100",
        "codec only (no network)",
    ] {
        assert_eq!(groups.iter().filter(|g| *g == mode).count(), 2, "{mode}");
    }
    assert!(json["records"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["unit"] == "votes/s"));
    assert_eq!(json["settings"]["bytes_per_vote"]["zap"], 181);
    assert_eq!(json["ratios"].as_array().unwrap().len(), 4);
}

/// The node binaries `cargo test --workspace` builds beside this test (target/<profile>/).
fn node_binary() -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let profile_dir = exe.parent()?.parent()?;
    let node = profile_dir.join("quasar-node");
    (node.is_file() && profile_dir.join("thresholdd").is_file()).then_some(node)
}

#[test]
fn finality_runs_a_network_over_hosts_with_remote_signers() {
    let Some(node) = node_binary() else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "quasar-node and thresholdd are not built beside the tests: run \
             `cargo test --workspace`, which builds them"
        );
        eprintln!("skipping: quasar-node is not built (run `cargo test --workspace`)");
        return;
    };
    let json = smoke_with("finality", &["--node-bin", node.to_str().unwrap()]);
    let network = json["settings"]["network"].as_str().unwrap();
    let notes = json["notes"].to_string();
    if network == "loopback" {
        assert!(
            notes.contains("not allowed"),
            "a loopback run says why: {notes}"
        );
    } else {
        assert!(network.starts_with("2 namespaces"), "{network}");
    }
    let records = json["records"].as_array().unwrap();
    let finality = records
        .iter()
        .find(|r| r["name"] == "finality (BLS leg)")
        .expect("a finality record");
    assert_eq!(finality["group"], "aurora n=4");
    assert!(finality["extra"]["quasar_finalized_height"].as_u64() >= Some(16));
    for leg in ["pulsar leg", "corona leg"] {
        assert!(
            records.iter().any(|r| r["name"] == leg),
            "no {leg}: {records:?}"
        );
    }
    assert_eq!(json["ratios"].as_array().unwrap().len(), 2);
}
