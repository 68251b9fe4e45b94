//! Any text as genesis.json: parsing and checking return a genesis or an error, never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use quasar_node::config::GenesisFile;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(file) = GenesisFile::from_json(text) {
            let _ = file.check();
        }
    }
});
