//! No two top-level modules of `quasar-node` import each other, directly or around a loop
//! (docs/architecture.md §1, "Inside `node/`"): each concern (runtime, engine, Quasar leg
//! service, ceremonies, API, view, signer, …) can be read, tested and moved without the others.
//!
//! The check reads the sources: a module is a file `node/src/<name>.rs` or a folder
//! `node/src/<name>/`, and it imports another when its code (comments stripped) names
//! `crate::<other>`, including inside `use crate::{…}` groups. A second test plants a loop and
//! sees it reported.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module name → the source text of the module (every file of a folder module).
fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut modules = BTreeMap::new();
    for entry in std::fs::read_dir(src).expect("node/src") {
        let path = entry.expect("entry").path();
        let name = path
            .file_stem()
            .and_then(|n| n.to_str())
            .expect("utf-8 name")
            .to_string();
        if name == "lib" || name == "main" || name == "bin" {
            continue;
        }
        let text = if path.is_dir() {
            let mut text = String::new();
            for file in std::fs::read_dir(&path).expect("module folder") {
                let file = file.expect("entry").path();
                if file.extension().is_some_and(|e| e == "rs") {
                    text += &std::fs::read_to_string(&file).expect("source");
                }
            }
            text
        } else if path.extension().is_some_and(|e| e == "rs") {
            std::fs::read_to_string(&path).expect("source")
        } else {
            continue;
        };
        modules.insert(name, text);
    }
    modules
}

/// The first path segments that `text` names after `crate::` (code only, not comments).
fn imports(text: &str) -> BTreeSet<String> {
    let code: String = text
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `use crate::{a, b::C, d::{e, f}}`: the first segment of each top-level item.
            let mut depth = 0usize;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && !c.is_whitespace() => {
                        found.insert(ident(&group[i..]));
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            found.insert(ident(rest));
        }
    }
    found
}

/// The module graph: module → the other modules it imports.
fn graph(modules: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    modules
        .iter()
        .map(|(name, text)| {
            let edges = imports(text)
                .into_iter()
                .filter(|other| other != name && modules.contains_key(other))
                .collect();
            (name.clone(), edges)
        })
        .collect()
}

/// Every group of two or more modules that reach each other (strongly connected components,
/// by reachability: the graph has a few dozen nodes).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    let reach = |from: &String| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(m) = stack.pop() {
            for next in graph.get(&m).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|m| (m, reach(m))).collect();
    let mut groups: Vec<BTreeSet<String>> = Vec::new();
    for (m, from_m) in &reached {
        let group: BTreeSet<String> = from_m
            .iter()
            .filter(|other| reached.get(other).is_some_and(|r| r.contains(*m)))
            .cloned()
            .chain(std::iter::once((*m).clone()))
            .collect();
        if group.len() > 1 && !groups.contains(&group) {
            groups.push(group);
        }
    }
    groups
}

fn node_modules() -> BTreeMap<String, String> {
    modules(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

#[test]
fn no_two_modules_of_the_node_import_each_other() {
    let modules = node_modules();
    assert!(
        ["runtime", "engine", "quasar_service", "api", "view"]
            .iter()
            .all(|m| modules.contains_key(*m)),
        "the scan did not find the node's modules: {:?}",
        modules.keys()
    );
    let graph = graph(&modules);
    assert!(
        graph.get("runtime").is_some_and(|e| e.contains("engine")),
        "the scan misses the runtime's imports: {graph:?}"
    );
    let found = cycles(&graph);
    assert!(
        found.is_empty(),
        "modules that import each other: {found:?}"
    );
}

#[test]
fn a_planted_import_loop_is_reported() {
    let mut modules = node_modules();
    // The Quasar leg service reaching back into the runtime closes a loop through
    // `runtime -> quasar_service`; a grouped import is seen as well as a path.
    modules
        .get_mut("quasar_service")
        .expect("quasar_service")
        .push_str("\nuse crate::{quasar, runtime::Shared};\n");
    let found = cycles(&graph(&modules));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("runtime") && found[0].contains("quasar_service"));
    // The same text in a comment is not an import.
    let mut modules = node_modules();
    modules
        .get_mut("quasar_service")
        .expect("quasar_service")
        .push_str("\n// see crate::runtime::Shared\n");
    assert!(cycles(&graph(&modules)).is_empty());
}
