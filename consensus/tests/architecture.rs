//! The workspace's import rules (docs/architecture.md, "What may import what"), checked against
//! `cargo metadata`:
//!
//! - the consensus core depends on nothing that performs I/O: no async runtime, network,
//!   storage engine or temporary files, directly or through another crate;
//! - a crate depends only on crates of a lower layer (dev-dependencies included), so no crate
//!   imports one above it and no two crates of one layer import each other;
//! - the signing daemon (`quasar-thresholdd`) links neither the node nor its QUIC transport.
//!
//! Each rule is a function over the dependency graph with a test that breaks it on purpose and
//! sees the error.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// Crates that perform I/O (or exist to): none may be reachable from `quasar-consensus`.
const IO_CRATES: &[&str] = &[
    "tokio",
    "async-std",
    "smol",
    "mio",
    "socket2",
    "quinn",
    "hyper",
    "reqwest",
    "axum",
    "sled",
    "tempfile",
];

/// What the signing daemon must not link: the node and its network transport.
const NODE_RUNTIME: &[&str] = &["quasar-node", "quasar-p2p", "quinn"];

/// The layers of docs/architecture.md, lowest first. A crate may depend only on crates of a
/// strictly lower layer.
const LAYERS: &[&[&str]] = &[
    &["quasar-crypto", "quasar-process"],
    &["quasar-gpu", "quasar-wire", "quasar-storage"],
    &["quasar-lanes", "quasar-client", "quasar-app"],
    &["quasar-consensus", "quasar-p2p"],
    &["quasar-chainspec"],
    &["quasar-thresholdd"],
    &["quasar-node"],
    &["quasar-bench"],
];

/// One package of the workspace: its name and the names of its dependencies, by kind.
#[derive(Debug, Default)]
struct Package {
    /// Dependencies of every kind (normal, build, dev).
    all: BTreeSet<String>,
    /// Normal (non-dev, non-build) dependencies: what ships in the library.
    normal: BTreeSet<String>,
}

/// The workspace's dependency graph: every package reachable in `cargo metadata`, keyed by name.
struct Graph {
    packages: BTreeMap<String, Package>,
    members: BTreeSet<String>,
}

fn metadata() -> serde_json::Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    // Only this host's platform, so that no crate of another target needs downloading.
    let rustc = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .arg("-vV")
        .output()
        .expect("run rustc -vV");
    let host = String::from_utf8_lossy(&rustc.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("host: ").map(str::to_owned))
        .expect("rustc -vV names the host");
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--filter-platform",
            &host,
        ])
        .arg("--manifest-path")
        .arg(manifest)
        .output()
        .expect("run cargo metadata");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON")
}

impl Graph {
    fn from_metadata(metadata: &serde_json::Value) -> Graph {
        let name_of: BTreeMap<&str, &str> = metadata["packages"]
            .as_array()
            .expect("packages")
            .iter()
            .map(|p| {
                (
                    p["id"].as_str().expect("id"),
                    p["name"].as_str().expect("name"),
                )
            })
            .collect();
        let members = metadata["workspace_members"]
            .as_array()
            .expect("workspace_members")
            .iter()
            .map(|id| name_of[id.as_str().expect("member id")].to_owned())
            .collect();
        let mut packages = BTreeMap::new();
        for node in metadata["resolve"]["nodes"].as_array().expect("resolve") {
            let mut package = Package::default();
            for dep in node["deps"].as_array().expect("deps") {
                let name = name_of[dep["pkg"].as_str().expect("pkg")].to_owned();
                let kinds = dep["dep_kinds"].as_array().expect("dep_kinds");
                if kinds.iter().any(|k| k["kind"].is_null()) {
                    package.normal.insert(name.clone());
                }
                package.all.insert(name);
            }
            packages.insert(
                name_of[node["id"].as_str().expect("id")].to_owned(),
                package,
            );
        }
        Graph { packages, members }
    }

    /// Every package reachable from `root` through normal dependencies, with the path to it.
    fn normal_closure(&self, root: &str) -> BTreeMap<String, Vec<String>> {
        let mut reached = BTreeMap::new();
        let mut stack = vec![vec![root.to_owned()]];
        while let Some(path) = stack.pop() {
            let last = path.last().expect("non-empty path");
            for dep in self
                .packages
                .get(last)
                .map(|p| &p.normal)
                .into_iter()
                .flatten()
            {
                if !reached.contains_key(dep) {
                    let mut next = path.clone();
                    next.push(dep.clone());
                    reached.insert(dep.clone(), next.clone());
                    stack.push(next);
                }
            }
        }
        reached
    }

    /// The crates of `forbidden` that `root` reaches, each with the dependency path that
    /// reaches it.
    fn reached(&self, root: &str, forbidden: &[&str]) -> Vec<String> {
        self.normal_closure(root)
            .into_iter()
            .filter(|(name, _)| forbidden.contains(&name.as_str()))
            .map(|(_, path)| path.join(" -> "))
            .collect()
    }

    /// Every dependency between workspace crates that does not go to a lower layer, and every
    /// workspace crate missing from [`LAYERS`].
    fn layer_violations(&self) -> Vec<String> {
        let layer_of = |name: &str| LAYERS.iter().position(|layer| layer.contains(&name));
        let mut violations = Vec::new();
        for member in &self.members {
            let Some(own) = layer_of(member) else {
                violations.push(format!("{member} is in no layer of docs/architecture.md"));
                continue;
            };
            for dep in self
                .packages
                .get(member)
                .map(|p| &p.all)
                .into_iter()
                .flatten()
            {
                // A crate's own name among its dev-dependencies only turns on its features for
                // its tests (`fuzzing`): not an import.
                if !self.members.contains(dep) || dep == member {
                    continue;
                }
                match layer_of(dep) {
                    Some(theirs) if theirs < own => {}
                    _ => violations.push(format!("{member} (layer {own}) depends on {dep}")),
                }
            }
        }
        violations
    }
}

/// Asserts that `root` is in the workspace and reaches none of `forbidden`.
fn assert_reaches_none(root: &str, forbidden: &[&str]) {
    let graph = Graph::from_metadata(&metadata());
    assert!(
        graph.packages.contains_key(root),
        "{root} is not in the workspace"
    );
    let found = graph.reached(root, forbidden);
    assert!(found.is_empty(), "{root} reaches {found:#?}");
}

#[test]
fn the_consensus_core_reaches_no_io_crate() {
    assert_reaches_none("quasar-consensus", IO_CRATES);
}

#[test]
fn the_signing_daemon_links_no_node_runtime() {
    assert_reaches_none("quasar-thresholdd", NODE_RUNTIME);
}

#[test]
fn every_crate_depends_only_on_lower_layers() {
    let graph = Graph::from_metadata(&metadata());
    assert!(graph.members.len() >= LAYERS.len());
    let found = graph.layer_violations();
    assert!(found.is_empty(), "layering violations: {found:#?}");
}

#[test]
fn the_checks_see_a_planted_io_dependency_a_linked_transport_and_an_upward_import() {
    let mut graph = Graph::from_metadata(&metadata());
    // quasar-lanes (below consensus) gains sled: consensus reaches it through lanes.
    let lanes = graph.packages.get_mut("quasar-lanes").expect("lanes");
    lanes.normal.insert("sled".into());
    lanes.all.insert("sled".into());
    let found = graph.reached("quasar-consensus", IO_CRATES);
    assert_eq!(found, ["quasar-consensus -> quasar-lanes -> sled"]);

    // quasar-chainspec (below thresholdd) gains the transport: the daemon would link quinn.
    let chainspec = graph
        .packages
        .get_mut("quasar-chainspec")
        .expect("chainspec");
    chainspec.normal.insert("quasar-p2p".into());
    let found = graph.reached("quasar-thresholdd", NODE_RUNTIME);
    assert!(
        found.contains(&"quasar-thresholdd -> quasar-chainspec -> quasar-p2p".to_string()),
        "{found:?}"
    );

    // quasar-wire imports quasar-node, and quasar-p2p imports quasar-consensus (same layer).
    graph
        .packages
        .get_mut("quasar-wire")
        .expect("wire")
        .all
        .insert("quasar-node".into());
    graph
        .packages
        .get_mut("quasar-p2p")
        .expect("p2p")
        .all
        .insert("quasar-consensus".into());
    let found = graph.layer_violations();
    assert_eq!(
        found,
        [
            "quasar-p2p (layer 3) depends on quasar-consensus",
            "quasar-wire (layer 1) depends on quasar-node",
        ]
    );
}
