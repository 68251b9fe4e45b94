//! Entry points for fuzzers and smoke tests.
//!
//! Each function takes arbitrary bytes and panics only when a property of this crate is broken;
//! for every other input it returns quietly. The cargo-fuzz targets in `wire/fuzz` are one-line
//! calls to these functions, and the workspace smoke test (`node/tests/fuzz_smoke.rs`) drives the
//! same functions with seeded pseudo-random and mutated inputs on the stable toolchain, so a
//! crash found by either reproduces under both.

use crate::frame::{frame_len, FRAME_HEADER_LEN, MAX_FRAME_LEN};

/// Any bytes: [`crate::decode`] returns a message or a typed error and never panics; whatever
/// decodes re-encodes (`to_owned` then `encode`) to bytes that decode to the same value, and a
/// sync response's items each decode as a Proposal or Certificate. A QuasarCert's accessors agree
/// with its owned copy (bundle and legs within their bounds, every leg kind known), and its
/// re-encoding is a fixed point: decoding and encoding it again gives equal bytes. A lane
/// message's accessors agree with its owned copy (payload within [`crate::MAX_LANE_PAYLOAD`], the
/// `leg` byte a leg kind exactly for [`crate::LaneKind::Leg`] and 0 otherwise), and its
/// re-encoding is a fixed point too. (The input itself need not equal the re-encoding: ZAP does
/// not require alignment or forbid unreferenced bytes, so one value has several valid encodings;
/// the encoder's is the canonical one.)
///
/// Panics: when a decoded message fails to re-encode, the re-encoding fails to decode or decodes
/// to a different value, a sync response item does not decode (as a Proposal, Vote, Certificate
/// or QuasarCert), or a QuasarCert's or lane
/// message's view, owned copy and canonical bytes disagree.
pub fn decode(data: &[u8]) {
    let Ok(decoded) = crate::decode(data) else {
        return;
    };
    if let crate::MessageRef::SyncResponse(response) = &decoded {
        for item in response.items() {
            match crate::decode(item) {
                Ok(crate::MessageRef::Proposal(_))
                | Ok(crate::MessageRef::Vote(_))
                | Ok(crate::MessageRef::Certificate(_)) => {}
                Ok(crate::MessageRef::QuasarCert(cert)) => {
                    let canonical = cert.to_owned().encode().expect("a checked item re-encodes");
                    quasar_cert(&cert, &canonical);
                }
                other => panic!("a checked sync item decodes to {other:?}"),
            }
        }
    }
    let owned = decoded.to_owned();
    let bytes = owned.encode().expect("a decoded message re-encodes");
    let again = crate::decode(&bytes).expect("a re-encoded message decodes");
    assert_eq!(again.to_owned(), owned, "re-encoding changed the message");
    match &decoded {
        crate::MessageRef::QuasarCert(cert) => quasar_cert(cert, &bytes),
        crate::MessageRef::Lane(lane) => lane_message(lane, &bytes),
        _ => {}
    }
}

/// The QuasarCert part of [`decode`]: `cert` was decoded from the fuzz input and `canonical` is
/// its re-encoding.
fn quasar_cert(cert: &crate::QuasarCertRef<'_>, canonical: &[u8]) {
    let owned = cert.to_owned();
    assert!(
        (1..=crate::MAX_BUNDLE).contains(&cert.bundle_len()),
        "bundle of {} digests decoded",
        cert.bundle_len()
    );
    assert!(
        (1..=crate::MAX_LEGS).contains(&cert.leg_count()),
        "{} legs decoded",
        cert.leg_count()
    );
    assert_eq!(cert.bundle_len(), owned.bundle.len());
    assert_eq!(cert.bundle().len(), owned.bundle.len());
    assert_eq!(cert.bundle_bytes(), owned.bundle.as_flattened());
    assert_eq!(cert.bundle().last(), owned.bundle.last());
    assert_eq!(cert.bundle_get(cert.bundle_len()), None);
    assert_eq!(cert.legs().len(), cert.leg_count());
    for ((kind, body), (owned_kind, owned_body)) in cert.legs().zip(&owned.legs) {
        assert_eq!((kind, body), (*owned_kind, owned_body.as_slice()));
    }
    let crate::MessageRef::QuasarCert(again) =
        crate::decode(canonical).expect("a re-encoded QuasarCert decodes")
    else {
        panic!("a re-encoded QuasarCert decodes to another type");
    };
    let twice = again.to_owned().encode().expect("a QuasarCert re-encodes");
    assert_eq!(
        twice, canonical,
        "QuasarCert re-encoding is not a fixed point"
    );
    assert_eq!(
        crate::QuasarCertRef::parse(canonical).map(|c| c.to_owned()),
        Ok(owned),
        "the typed reader and decode disagree"
    );
}

/// The lane message part of [`decode`]: `lane` was decoded from the fuzz input and `canonical` is
/// its re-encoding.
fn lane_message(lane: &crate::LaneMessageRef<'_>, canonical: &[u8]) {
    let owned = lane.to_owned();
    assert!(
        lane.payload().len() <= crate::MAX_LANE_PAYLOAD,
        "payload of {} bytes decoded",
        lane.payload().len()
    );
    match lane.kind() {
        crate::LaneKind::Leg => {
            let kind = lane.leg_kind().expect("a leg message names its leg kind");
            assert_eq!(kind as u8, lane.leg(), "leg kind and leg byte disagree");
        }
        other => assert_eq!(
            (lane.leg(), lane.leg_kind()),
            (0, None),
            "a {other} message carries a leg"
        ),
    }
    assert_eq!(
        (
            lane.chain_id(),
            lane.epoch(),
            lane.height(),
            lane.sender(),
            lane.kind(),
            lane.leg(),
        ),
        (
            owned.chain_id,
            owned.epoch,
            owned.height,
            owned.sender,
            owned.kind,
            owned.leg,
        )
    );
    assert_eq!(lane.leg_kind(), owned.leg_kind());
    assert_eq!(lane.session(), &owned.session);
    assert_eq!(lane.payload(), owned.payload.as_slice());
    let crate::MessageRef::Lane(again) =
        crate::decode(canonical).expect("a re-encoded lane message decodes")
    else {
        panic!("a re-encoded lane message decodes to another type");
    };
    let twice = again
        .to_owned()
        .encode()
        .expect("a lane message re-encodes");
    assert_eq!(
        twice, canonical,
        "lane message re-encoding is not a fixed point"
    );
    assert_eq!(
        crate::LaneMessageRef::parse(canonical).map(|m| m.to_owned()),
        Ok(owned),
        "the typed reader and decode disagree"
    );
}

/// Any bytes: [`frame_len`] on the first four bytes (when there are four) never panics and
/// accepts exactly the announced lengths up to [`MAX_FRAME_LEN`].
///
/// Panics: when `frame_len` accepts a length above the limit, reports a different length, or
/// refuses one within the limit.
pub fn frame(data: &[u8]) {
    let Some(prefix) = data.get(..FRAME_HEADER_LEN) else {
        return;
    };
    let Ok(header) = <[u8; FRAME_HEADER_LEN]>::try_from(prefix) else {
        return;
    };
    let announced = u32::from_le_bytes(header) as usize;
    match frame_len(header) {
        Ok(len) => assert!(
            len == announced && len <= MAX_FRAME_LEN,
            "frame_len({header:?}) = {len}"
        ),
        Err(_) => assert!(announced > MAX_FRAME_LEN, "frame_len refused {announced}"),
    }
}
