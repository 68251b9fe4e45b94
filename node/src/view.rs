//! The node as its HTTP API sees it: [`NodeView`] over the runtime's [`Shared`] state. Each
//! answer is a [`quasar_client`] type; the API (`crate::api`) maps them and their failures to
//! HTTP, and never reads `Shared` itself (docs/architecture.md §1).

use crate::api::{
    evidence_list, not_ready_reasons, EvidenceQuery, NodeView, Unavailable, READY_STALE_VIEWS,
};
use crate::mempool::MempoolError;
use crate::runtime::Shared;
use quasar_client::{
    AccountInfo, BlockInfo, CertificateInfo, EpochSetInfo, EvidenceList, Readiness, Status, TxInfo,
    TxStatus, ValidatorList,
};
use quasar_crypto::hash::Hash;
use quasar_lanes::bls::signers_from_bitmap;
use quasar_storage::Store;
use quasar_wire::{decode, CertificateKind, MessageRef};
use std::sync::atomic::Ordering;

impl NodeView for Shared {
    fn status(&self) -> Status {
        let mempool = self.mempool.lock().map(|p| p.len()).unwrap_or(0);
        let finalized = self.finalized_height.load(Ordering::Relaxed);
        let epoch = self.schedule.epoch_of(finalized.saturating_add(1));
        let (profile, quasar_unavailable) = match self.quasar.tracker.lock() {
            Ok(tracker) => (
                tracker.profile().name(),
                tracker.unavailable_at(finalized.saturating_add(1)),
            ),
            Err(_) => (String::new(), None),
        };
        Status {
            validator: self.validator,
            validator_index: self.sets.at(epoch).index_of(&self.public_key),
            height: self.height.load(Ordering::Relaxed),
            finalized_height: finalized,
            view: self.view.load(Ordering::Relaxed),
            epoch,
            history_floor: self.store.history_floor().unwrap_or(1),
            peers: self.network.connected_peers(),
            mempool,
            chain_id: self.chain_id,
            evidence: self.metrics.equivocations.get(),
            votes_signed: self.metrics.votes_signed.get(),
            guard_refusals: self.metrics.guard_refusals.get(),
            guard_restart_refusals: self.metrics.guard_restart_refusals.get(),
            profile,
            quasar_finalized_height: self.quasar.height.load(Ordering::Relaxed),
            quasar_unavailable,
            leg_verify_p50_ms: crate::quasar_service::leg_p50_ms(&self.quasar.leg_samples),
            leg_sign_p50_ms: crate::quasar_service::leg_p50_ms(&self.quasar.sign_samples),
            version: quasar_process::build_info::VERSION.to_string(),
            commit: quasar_process::build_info::COMMIT.to_string(),
            genesis_hash: hex::encode(self.genesis_hash),
        }
    }

    fn readiness(&self) -> Readiness {
        let finalized = self.finalized_height.load(Ordering::Relaxed);
        let height = self.height.load(Ordering::Relaxed);
        let last = self
            .finalized_at
            .lock()
            .ok()
            .and_then(|at| at.get(&finalized).copied());
        let now = quasar_process::now_us();
        let stale_after_ms = self.view_timeout_ms.saturating_mul(READY_STALE_VIEWS);
        let reasons = not_ready_reasons(
            finalized,
            height,
            last,
            now,
            stale_after_ms,
            self.genesis_time_us,
        );
        Readiness {
            ready: reasons.is_empty(),
            reasons,
            finalized_height: finalized,
            height,
            last_finalized_ms_ago: last.map(|at| now.saturating_sub(at) / 1000),
            stale_after_ms,
            peers: self.network.connected_peers(),
        }
    }

    fn account(&self, address: &quasar_app::Address) -> Result<AccountInfo, Unavailable> {
        crate::light::account_info(&self.store, &self.state, address)
    }

    fn validators(&self) -> Result<ValidatorList, Unavailable> {
        crate::light::validator_list(&self.state, &self.sets, &self.schedule)
    }

    fn epoch_set(&self, epoch: u64) -> Result<EpochSetInfo, Unavailable> {
        if !self.rules.sets_from_registry {
            return Err(Unavailable::NotFound(
                "this chain's genesis file fixes its validator sets: it proves every one".into(),
            ));
        }
        crate::light::epoch_set_info(&self.store, &self.state, &self.schedule, epoch)
    }

    fn finalized_height(&self) -> u64 {
        self.finalized_height.load(Ordering::Relaxed)
    }

    fn block(&self, height: u64) -> Result<BlockInfo, Unavailable> {
        let stored = match self.store.block_by_height(height) {
            Ok(Some(b)) => b,
            Ok(None) if height > 0 && height < self.store.history_floor().unwrap_or(1) => {
                return Err(Unavailable::Pruned(
                    "pruned: this node keeps the last 6 epochs and the boundary blocks of older \
                     ones"
                        .into(),
                ))
            }
            Ok(None) => {
                return Err(Unavailable::NotFound(
                    "no finalized block at this height".into(),
                ))
            }
            Err(e) => return Err(store_failed(&format!("block {height}"), e)),
        };
        let (Ok(MessageRef::Proposal(p)), Ok(MessageRef::Certificate(c))) =
            (decode(&stored.block), decode(&stored.certificate))
        else {
            return Err(Unavailable::Failed("stored block does not decode".into()));
        };
        let tx_hashes = self
            .store
            .block_tx_hashes(height)
            .map_err(|e| store_failed(&format!("the transactions of block {height}"), e))?;
        let h = p.header();
        let signers: Vec<u32> =
            signers_from_bitmap(c.signers(), self.sets.at(c.epoch()).validators.len())
                .unwrap_or_default()
                .into_iter()
                .filter_map(|s| u32::try_from(s).ok())
                .collect();
        let finalized_at = self
            .finalized_at
            .lock()
            .ok()
            .and_then(|m| m.get(&height).copied());
        Ok(BlockInfo {
            height: h.height,
            hash: hex::encode(stored.hash),
            parent: hex::encode(h.parent),
            view: h.view,
            proposer: h.proposer,
            timestamp_us: h.timestamp_us,
            tx_count: p.tx_count() as u64,
            tx_hashes: tx_hashes.iter().map(hex::encode).collect(),
            finalized_at_us: finalized_at,
            finality: crate::quasar_service::finality_info(
                &self.quasar,
                &self.store,
                self.finalized_height.load(Ordering::Relaxed),
                height,
            ),
            certificate: CertificateInfo {
                kind: kind_name(c.kind()).to_string(),
                view: c.view(),
                block: hex::encode(c.block()),
                signers,
                aggregate_signature: hex::encode(c.signature()),
            },
        })
    }

    fn tx(&self, hash: &Hash) -> Result<TxInfo, Unavailable> {
        let info = |status, height| TxInfo {
            hash: hex::encode(hash),
            status,
            height,
        };
        match self.store.tx_height(hash) {
            Ok(Some(height)) => Ok(info(TxStatus::Finalized, Some(height))),
            Ok(None) => {
                let pending = self
                    .mempool
                    .lock()
                    .map(|p| p.contains(hash))
                    .unwrap_or(false);
                if pending {
                    return Ok(info(TxStatus::Pending, None));
                }
                Err(Unavailable::NotFound(match self.store.history_floor() {
                    Ok(floor) if floor > 1 => format!(
                        "unknown transaction: not pending, and not in a finalized block from \
                         height {floor} (older blocks are pruned)"
                    ),
                    _ => "unknown transaction".into(),
                }))
            }
            Err(e) => Err(store_failed("the transaction index", e)),
        }
    }

    fn submit_tx(&self, tx: Vec<u8>) -> Result<Hash, MempoolError> {
        Shared::submit_tx(self, tx)
    }

    fn submit_txs(&self, txs: Vec<Vec<u8>>) -> Vec<Result<Hash, MempoolError>> {
        Shared::submit_txs(self, txs)
    }

    fn evidence(&self, query: EvidenceQuery) -> Result<EvidenceList, Unavailable> {
        let failed = |e: quasar_storage::StoreError| store_failed("the evidence", e);
        let records = self
            .store
            .evidence(query.limit, query.from_view)
            .map_err(failed)?;
        let count = self.store.evidence_count().map_err(failed)?;
        Ok(evidence_list(&records, count))
    }

    fn encode_metrics(&self, out: &mut String) -> std::fmt::Result {
        prometheus_client::encoding::text::encode(out, &self.registry)
    }
}

/// A certificate kind as `GET /block/{height}` names it.
fn kind_name(kind: CertificateKind) -> &'static str {
    match kind {
        CertificateKind::Notarization => "notarization",
        CertificateKind::Finalization => "finalization",
        CertificateKind::Nullification => "nullification",
    }
}

/// A block-store failure as the API answers it: logged in full (the error may name the node's
/// files), answered without them.
fn store_failed(what: &str, error: quasar_storage::StoreError) -> Unavailable {
    tracing::error!(%error, "answering the API: reading {what} from the block store failed");
    Unavailable::Failed(format!(
        "reading {what} from this node's block store failed; the node's log says why"
    ))
}
