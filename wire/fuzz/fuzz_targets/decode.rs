//! Any bytes: `decode` returns Ok or a typed error and never panics; whatever decodes re-encodes
//! (to_owned → encode) to bytes that decode to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(decoded) = quasar_wire::decode(data) {
        let owned = decoded.to_owned();
        let bytes = owned.encode().expect("a decoded message re-encodes");
        let again = quasar_wire::decode(&bytes).expect("a re-encoded message decodes");
        assert_eq!(again.to_owned(), owned);
    }
});
