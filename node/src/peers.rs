//! The peer book: which validators this node dials and accepts (docs/architecture.md §11,
//! "Validators that join").
//!
//! The genesis validators are this node's first peers, at the addresses its `node.toml` names
//! and with the TLS certificates the genesis pins; their network identities are their roster
//! positions (`0..roster`). On a chain whose sets come from its registry, a validator that
//! registered later tells the chain where it listens (`SetNetworkAddress`), and every node
//! then dials it and accepts its certificate ([`quasar_p2p::Network::set_peers`]), so it can
//! catch up on the chain before the registry puts it into a set (two epochs after its
//! staking transactions), and sign from that set's first view. [`follow_registry`] reads the
//! committed registry once a second when the committed height moved, and changes the peer set
//! when the reachable validators changed: those registered, neither left nor slashed, with an
//! address that parses ([`quasar_p2p::PeerAddress`]); a departing validator stays a peer while
//! it may still be in a set.
//!
//! Positions above the roster are this node's own numbering (kept for the life of the
//! process, by certificate): the transport authenticates a peer by its certificate, and
//! consensus messages by their signatures, so no position above the roster goes on the wire.
//! Lane messages do carry roster positions, which is why sets from the registry run the
//! `fast` profile (BLS only) until keys without a dealer exist (issue 33).

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use quasar_app::{RegisteredValidator, ValidatorStatus};
use quasar_p2p::{Network, PeerAddress, PeerInfo};
use quasar_storage::StateStore;

/// How often [`follow_registry`] looks at the committed height.
const POLL: Duration = Duration::from_secs(1);

/// The peers of one node (module docs).
pub struct PeerBook {
    /// The genesis validators this node dials, as `node.toml` names them.
    genesis: Vec<PeerInfo>,
    /// The genesis roster's certificates: reached through `genesis`, never through the
    /// registry.
    roster: BTreeSet<Vec<u8>>,
    /// This node's own certificate.
    own: Vec<u8>,
    /// The positions given to validators registered after the genesis, by certificate.
    positions: HashMap<Vec<u8>, u32>,
    /// The next position to give.
    next: u32,
    /// Addresses already reported as undialable (one warning each).
    refused: BTreeSet<String>,
}

impl PeerBook {
    /// The book of a node whose genesis peers are `genesis`, whose genesis roster pins
    /// `roster`, whose own certificate is `own`, and which gives positions from `first_free`
    /// on (above the roster and its own position).
    pub fn new(
        genesis: Vec<PeerInfo>,
        roster: BTreeSet<Vec<u8>>,
        own: Vec<u8>,
        first_free: u32,
    ) -> PeerBook {
        PeerBook {
            genesis,
            roster,
            own,
            positions: HashMap::new(),
            next: first_free,
            refused: BTreeSet::new(),
        }
    }

    /// The peers a node with the committed registry `registry` dials and accepts: the genesis
    /// peers, then every reachable validator registered after the genesis (module docs), in
    /// position order.
    pub fn peers(&mut self, registry: &[RegisteredValidator]) -> Vec<PeerInfo> {
        let mut peers = self.genesis.clone();
        for validator in registry {
            let record = &validator.record;
            let certificate = &record.keys.tls_certificate;
            let reachable = matches!(
                record.status,
                ValidatorStatus::Active | ValidatorStatus::Leaving { .. }
            );
            let Some(text) = record.network_address.as_deref() else {
                continue;
            };
            if !reachable || *certificate == self.own || self.roster.contains(certificate) {
                continue;
            }
            let address = match text.parse::<PeerAddress>() {
                Ok(address) => address,
                Err(error) => {
                    if self.refused.insert(text.to_string()) {
                        tracing::warn!(
                            validator = %hex::encode(validator.address),
                            %error,
                            "a registered validator announced an address this node cannot dial"
                        );
                    }
                    continue;
                }
            };
            let next = &mut self.next;
            let index = *self
                .positions
                .entry(certificate.clone())
                .or_insert_with(|| {
                    let index = *next;
                    *next = next.saturating_add(1);
                    index
                });
            peers.push(PeerInfo {
                index,
                cert_der: certificate.clone(),
                address,
            });
        }
        peers.sort_by_key(|p| p.index);
        peers
    }
}

/// Keeps `network`'s peer set at what the registry committed in `state` says (module docs),
/// until the network stops.
pub async fn follow_registry(network: Network, state: StateStore, mut book: PeerBook) {
    let mut seen = None;
    let mut ticker = tokio::time::interval(POLL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while network.is_running() {
        ticker.tick().await;
        let version = match state.latest() {
            Ok(latest) => latest.map(|(version, _)| version),
            Err(error) => {
                tracing::warn!(%error, "reading the committed height for the peer book");
                continue;
            }
        };
        let Some(at) = version.filter(|_| version != seen) else {
            continue;
        };
        seen = version;
        let reader = state.clone();
        let registry =
            tokio::task::spawn_blocking(move || quasar_app::read_registry(&reader, at)).await;
        let registry = match registry {
            Ok(Ok(registry)) => registry,
            Ok(Err(error)) => {
                tracing::warn!(height = at, %error, "reading the registry for the peer book");
                continue;
            }
            Err(_) => continue,
        };
        // An unchanged set changes nothing in the transport.
        if let Err(error) = network.set_peers(book.peers(&registry)) {
            tracing::error!(height = at, %error, "the registry's peers were refused");
        }
    }
}
