//! Any text as node.toml: parsing returns a config or an error, never panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use quasar_node::config::NodeConfig;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = NodeConfig::from_toml(text, std::path::Path::new("."));
    }
});
