//! `thresholdd deal`: a trusted dealer for multi-host ceremonies. It deals a t-of-n Corona or
//! Pulsar key and writes one file per party, which that party's host loads with
//! `<scheme>.import_share`. The dealer sees every share: use it for development networks, or
//! on an offline machine whose copies are destroyed afterwards.
//!
//! Each file `<out-dir>/<scheme>-party-<i>.json` is created with mode 0600 (never over an
//! existing file) and holds `{scheme, party, threshold, participants, publicKeyHex, shareHex}`,
//! plus `groupKeyHex` for Pulsar (whose import needs the group key): exactly the parameters of
//! `<scheme>.import_share`, and the public key the ceremony methods name.

use std::path::{Path, PathBuf};

use serde::Serialize;
use zeroize::Zeroizing;

use super::keystore::Scheme;
use quasar_chainspec::write_private_new;

/// A dealt key: its public key, its group key (Pulsar only), and the shares in party order.
type Dealt = (Vec<u8>, Option<Vec<u8>>, Vec<Zeroizing<Vec<u8>>>);

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PartyFile<'a> {
    scheme: &'a str,
    party: u16,
    threshold: u16,
    participants: u16,
    public_key_hex: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    group_key_hex: Option<&'a str>,
    share_hex: &'a str,
}

/// Deals a `threshold`-of-`participants` key of `scheme` (Corona: 1 ≤ t ≤ n ≤ 256; Pulsar:
/// 2 ≤ t ≤ n ≤ 6) and writes the party files into `out_dir` (created if missing). Returns the
/// public key (hex) and the files written. Errors: a message for another scheme, a refused
/// shape, or a file that exists or cannot be written (files written before it stay).
pub fn deal(
    scheme: Scheme,
    threshold: u16,
    participants: u16,
    out_dir: &Path,
) -> Result<(String, Vec<PathBuf>), String> {
    let mut rng = rand::rngs::OsRng;
    let (public_key, group_key, shares): Dealt = match scheme {
        Scheme::Corona => {
            if participants > super::corona::MAX_PARTICIPANTS {
                return Err(format!(
                    "at most {} corona participants",
                    super::corona::MAX_PARTICIPANTS
                ));
            }
            let (group, shares) = quasar_crypto::corona::scheme::trusted_dealer_keygen(
                usize::from(threshold),
                usize::from(participants),
                &mut rng,
            )
            .map_err(|e| format!("corona: {e}"))?;
            let shares = shares.iter().map(|s| s.to_bytes()).collect();
            (group.to_bytes(), None, shares)
        }
        Scheme::Pulsar => {
            let (group, shares) = quasar_crypto::pulsar::trusted_dealer_keygen(
                usize::from(threshold),
                usize::from(participants),
                &mut rng,
            )
            .map_err(|e| format!("pulsar: {e}"))?;
            let shares = shares.iter().map(|s| s.to_bytes()).collect();
            (
                group.public_key_bytes().to_vec(),
                Some(group.to_bytes()),
                shares,
            )
        }
        other => {
            return Err(format!(
                "{other} has no multi-host ceremony: deal corona or pulsar"
            ))
        }
    };
    std::fs::create_dir_all(out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    let public_key_hex = hex::encode(&public_key);
    let group_key_hex = group_key.map(hex::encode);
    let mut written = Vec::with_capacity(shares.len());
    for (party, share) in (0u16..).zip(&shares) {
        let share_hex = Zeroizing::new(hex::encode(share.as_slice()));
        let file = Zeroizing::new(
            serde_json::to_vec_pretty(&PartyFile {
                scheme: scheme.as_str(),
                party,
                threshold,
                participants,
                public_key_hex: &public_key_hex,
                group_key_hex: group_key_hex.as_deref(),
                share_hex: &share_hex,
            })
            .map_err(|e| e.to_string())?,
        );
        let path = out_dir.join(format!("{}-party-{party}.json", scheme.as_str()));
        write_private_new(&path, &file).map_err(|e| format!("{}: {e}", path.display()))?;
        written.push(path);
    }
    Ok((public_key_hex, written))
}
