//! `quasar-bench zap`: votes per second over loopback QUIC (quinn, TLS 1.3), encoded in ZAP
//! (the node's zero-copy wire format, docs/architecture.md §5) against the same votes in protobuf (prost),
//! with the same framing (`u32 LE length ‖ message`, `quasar_wire::frame`) and the same work on
//! each side, so that the codec is the only difference:
//!
//! - the sender encodes every vote from its fields (view and height change per vote);
//! - the receiver reads each frame, decodes it (ZAP: `VoteRef::parse`, which validates every
//!   field; protobuf: `prost::Message::decode`, then the block and signature lengths checked)
//!   and folds its fields into a checksum that it returns with its count, which the sender
//!   compares with its own.
//!
//! Modes: `1 connection` (one stream, one write per vote), `20 connections` (concurrent, one
//! write per vote), `50 connections, batches of 1000` (each write carries 1000 framed votes).
//! Each (mode, codec) run is timed from the first connection attempt to the last reply; the
//! two codecs alternate round by round. A `codec only` row times encode + decode of the same
//! votes in memory, without the network.

use std::sync::Arc;
use std::time::Instant;

use quasar_wire::frame::{frame_len, FRAME_HEADER_LEN};
use quasar_wire::{Vote, VoteKind, VoteRef};
use tokio::io::{AsyncReadExt, BufReader};

use super::{BenchError, Common};
use crate::measure::{median, Series};
use crate::report::{ratio, Plot, Ratio, Record, Report, Table};

/// The ALPN of the bench's connections.
const ALPN: &[u8] = b"quasar-bench-zap";

/// `zap` options.
#[derive(Clone, Debug, clap::Args)]
pub struct Options {
    /// Votes sent per run in each mode (default 300000; smoke 2000). In the batched mode this is
    /// rounded up to whole batches per connection.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub messages: Option<u64>,
}

/// A codec under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Codec {
    Zap,
    Protobuf,
}

impl Codec {
    fn name(self) -> &'static str {
        match self {
            Codec::Zap => "ZAP",
            Codec::Protobuf => "protobuf (prost)",
        }
    }
}

/// The protobuf twin of [`Vote`]: the same fields, protobuf's varints and length-delimited
/// bytes (what a node speaking protobuf would send).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProtoVote {
    /// [`VoteKind`] as its byte value.
    #[prost(uint32, tag = "1")]
    pub kind: u32,
    /// Chain identifier.
    #[prost(uint64, tag = "2")]
    pub chain_id: u64,
    /// Epoch.
    #[prost(uint64, tag = "3")]
    pub epoch: u64,
    /// View.
    #[prost(uint64, tag = "4")]
    pub view: u64,
    /// Height.
    #[prost(uint64, tag = "5")]
    pub height: u64,
    /// Block hash, 32 bytes.
    #[prost(bytes = "vec", tag = "6")]
    pub block: Vec<u8>,
    /// Signer index.
    #[prost(uint32, tag = "7")]
    pub signer: u32,
    /// BLS signature, 96 bytes.
    #[prost(bytes = "vec", tag = "8")]
    pub signature: Vec<u8>,
}

/// Vote number `i` of a run (fields vary with `i`, like a live stream of votes).
fn vote(i: u64) -> Vote {
    Vote {
        kind: if i.is_multiple_of(2) {
            VoteKind::Notarize
        } else {
            VoteKind::Finalize
        },
        chain_id: 7,
        epoch: 3,
        view: 1_000 + i,
        height: 900 + i,
        block: [(i % 251) as u8; 32],
        signer: (i % 100) as u32,
        signature: [0xa5; 96],
    }
}

/// The checksum both sides fold every vote into.
fn fold(sum: u64, view: u64, height: u64, signer: u32, block0: u8) -> u64 {
    sum.wrapping_mul(31)
        .wrapping_add(view ^ height.rotate_left(17) ^ u64::from(signer) ^ u64::from(block0))
}

/// Appends vote `i`, framed, in `codec` to `out`.
fn encode(codec: Codec, i: u64, out: &mut Vec<u8>) -> Result<(), String> {
    let v = vote(i);
    let body = match codec {
        Codec::Zap => v.encode().map_err(|e| e.to_string())?,
        Codec::Protobuf => prost::Message::encode_to_vec(&ProtoVote {
            kind: v.kind as u32,
            chain_id: v.chain_id,
            epoch: v.epoch,
            view: v.view,
            height: v.height,
            block: v.block.to_vec(),
            signer: v.signer,
            signature: v.signature.to_vec(),
        }),
    };
    let header = quasar_wire::frame::frame_header(body.len()).map_err(|e| e.to_string())?;
    out.extend_from_slice(&header);
    out.extend_from_slice(&body);
    Ok(())
}

/// Decodes one message body and folds it into `sum`. Errors: the codec's complaint.
fn decode(codec: Codec, body: &[u8], sum: u64) -> Result<u64, String> {
    match codec {
        Codec::Zap => {
            let v = VoteRef::parse(body).map_err(|e| e.to_string())?;
            Ok(fold(sum, v.view(), v.height(), v.signer(), v.block()[0]))
        }
        Codec::Protobuf => {
            let v: ProtoVote = prost::Message::decode(body).map_err(|e| e.to_string())?;
            if v.block.len() != 32 || v.signature.len() != 96 {
                return Err("a field of the wrong length".into());
            }
            Ok(fold(sum, v.view, v.height, v.signer, v.block[0]))
        }
    }
}

/// The sender's checksum of votes `first..first + count`.
fn expected_sum(first: u64, count: u64) -> u64 {
    (first..first + count).fold(0, |s, i| {
        let v = vote(i);
        fold(s, v.view, v.height, v.signer, v.block[0])
    })
}

/// A test mode: connections, votes per write.
#[derive(Clone, Copy, Debug)]
struct Mode {
    connections: u64,
    batch: u64,
}

impl Mode {
    fn label(self) -> String {
        match (self.connections, self.batch) {
            (1, 1) => "1 connection".into(),
            (c, 1) => format!("{c} connections"),
            (c, b) => format!("{c} connections, batches of {b}"),
        }
    }
}

/// A loopback QUIC server and a client endpoint that trusts it.
struct Loopback {
    server: quinn::Endpoint,
    client: quinn::Endpoint,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl Loopback {
    fn new() -> Result<Loopback, String> {
        let text = |e: &dyn std::fmt::Display| e.to_string();
        let certified =
            rcgen::generate_simple_self_signed(vec!["localhost".into()]).map_err(|e| text(&e))?;
        let cert = certified.cert.der().clone();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(
            rustls::pki_types::PrivatePkcs8KeyDer::from(certified.key_pair.serialize_der()),
        );
        let mut server_tls = rustls::ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| text(&e))?
            .with_no_client_auth()
            .with_single_cert(vec![cert.clone()], key)
            .map_err(|e| text(&e))?;
        server_tls.alpn_protocols = vec![ALPN.to_vec()];
        let server_config = quinn::ServerConfig::with_crypto(Arc::new(
            quinn::crypto::rustls::QuicServerConfig::try_from(server_tls).map_err(|e| text(&e))?,
        ));
        let server = quinn::Endpoint::server(server_config, ([127, 0, 0, 1], 0).into())
            .map_err(|e| text(&e))?;
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert).map_err(|e| text(&e))?;
        let mut client_tls = rustls::ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| text(&e))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        client_tls.alpn_protocols = vec![ALPN.to_vec()];
        let mut client =
            quinn::Endpoint::client(([127, 0, 0, 1], 0).into()).map_err(|e| text(&e))?;
        client.set_default_client_config(quinn::ClientConfig::new(Arc::new(
            quinn::crypto::rustls::QuicClientConfig::try_from(client_tls).map_err(|e| text(&e))?,
        )));
        Ok(Loopback { server, client })
    }
}

/// Serves connections until the endpoint closes: every bidirectional stream carries framed
/// messages of the codec named by its first byte; the reply is `count ‖ checksum` (u64 LE).
async fn serve(endpoint: quinn::Endpoint) {
    while let Some(incoming) = endpoint.accept().await {
        tokio::spawn(async move {
            let Ok(connection) = incoming.await else {
                return;
            };
            while let Ok((send, recv)) = connection.accept_bi().await {
                tokio::spawn(async move {
                    if let Err(e) = receive(send, recv).await {
                        eprintln!("zap bench server: {e}");
                    }
                });
            }
        });
    }
}

async fn receive(mut send: quinn::SendStream, recv: quinn::RecvStream) -> Result<(), String> {
    let mut reader = BufReader::with_capacity(256 * 1024, recv);
    let codec = match reader.read_u8().await.map_err(|e| e.to_string())? {
        0 => Codec::Zap,
        1 => Codec::Protobuf,
        other => return Err(format!("unknown codec {other}")),
    };
    let (mut count, mut sum) = (0u64, 0u64);
    let mut body = Vec::new();
    loop {
        let mut header = [0u8; FRAME_HEADER_LEN];
        match reader.read_exact(&mut header).await {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e.to_string()),
        }
        let len = frame_len(header).map_err(|e| e.to_string())?;
        body.resize(len, 0);
        reader
            .read_exact(&mut body)
            .await
            .map_err(|e| e.to_string())?;
        sum = decode(codec, &body, sum)?;
        count += 1;
    }
    let mut reply = count.to_le_bytes().to_vec();
    reply.extend_from_slice(&sum.to_le_bytes());
    send.write_all(&reply).await.map_err(|e| e.to_string())?;
    send.finish().map_err(|e| e.to_string())?;
    // The sender closes its connection once it has read the reply, so waiting for the
    // acknowledgement may end in "connection lost": the reply was delivered either way.
    let _ = send.stopped().await;
    Ok(())
}

/// Sends votes `first..first + count` on one new connection, `batch` per write, and checks the
/// server's count and checksum against `expected` ([`expected_sum`], computed before the clock
/// starts).
async fn send_votes(
    client: quinn::Endpoint,
    server: std::net::SocketAddr,
    codec: Codec,
    first: u64,
    count: u64,
    batch: u64,
    expected: u64,
) -> Result<(), String> {
    let connection = client
        .connect(server, "localhost")
        .map_err(|e| e.to_string())?
        .await
        .map_err(|e| e.to_string())?;
    let (mut send, mut recv) = connection.open_bi().await.map_err(|e| e.to_string())?;
    let tag = [if codec == Codec::Zap { 0u8 } else { 1u8 }];
    send.write_all(&tag).await.map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    let mut i = first;
    while i < first + count {
        buf.clear();
        let end = (i + batch).min(first + count);
        for k in i..end {
            encode(codec, k, &mut buf)?;
        }
        send.write_all(&buf).await.map_err(|e| e.to_string())?;
        i = end;
    }
    send.finish().map_err(|e| e.to_string())?;
    let reply = recv.read_to_end(16).await.map_err(|e| e.to_string())?;
    let got = (
        u64::from_le_bytes(reply[..8].try_into().map_err(|_| "a short reply")?),
        u64::from_le_bytes(reply[8..16].try_into().map_err(|_| "a short reply")?),
    );
    connection.close(0u32.into(), b"done");
    if got != (count, expected) {
        return Err(format!(
            "the server decoded {got:?}, expected {count} votes with checksum {expected}"
        ));
    }
    Ok(())
}

/// One run: `total` votes over `mode`'s connections in parallel; returns votes per second.
async fn run_mode(net: &Loopback, codec: Codec, mode: Mode, total: u64) -> Result<f64, String> {
    let server = net.server.local_addr().map_err(|e| e.to_string())?;
    let per = total.div_ceil(mode.connections);
    let expected: Vec<u64> = (0..mode.connections)
        .map(|c| expected_sum(c * per, per))
        .collect();
    let started = Instant::now();
    let tasks: Vec<_> = (0..mode.connections)
        .map(|c| {
            tokio::spawn(send_votes(
                net.client.clone(),
                server,
                codec,
                c * per,
                per,
                mode.batch,
                expected[c as usize],
            ))
        })
        .collect();
    for task in tasks {
        task.await.map_err(|e| e.to_string())??;
    }
    Ok((per * mode.connections) as f64 / started.elapsed().as_secs_f64())
}

/// Votes per second of encode + decode of `count` votes in memory.
fn codec_only(codec: Codec, count: u64) -> Result<f64, String> {
    let started = Instant::now();
    let mut buf = Vec::new();
    let mut sum = 0;
    for i in 0..count {
        buf.clear();
        encode(codec, i, &mut buf)?;
        sum = decode(codec, &buf[FRAME_HEADER_LEN..], sum)?;
    }
    if sum != expected_sum(0, count) {
        return Err("codec round trip changed a vote".into());
    }
    Ok(count as f64 / started.elapsed().as_secs_f64())
}

/// Runs the zap bench.
pub fn run(options: &Options, common: &Common) -> Result<Report, BenchError> {
    let total = options
        .messages
        .unwrap_or(if common.smoke { 2_000 } else { 300_000 });
    let rounds = common.rounds(5);
    let batch = if common.smoke { 100 } else { 1_000 };
    let modes = [
        Mode {
            connections: 1,
            batch: 1,
        },
        Mode {
            connections: 20,
            batch: 1,
        },
        Mode {
            connections: 50,
            batch,
        },
    ];
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(BenchError::setup("tokio runtime"))?;
    let codecs = [Codec::Zap, Codec::Protobuf];
    // (mode index or None for codec only, codec) → votes per second per round.
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); (modes.len() + 1) * codecs.len()];
    runtime.block_on(async {
        let net = Loopback::new().map_err(|e| BenchError::Setup(format!("QUIC loopback: {e}")))?;
        let server = tokio::spawn(serve(net.server.clone()));
        for round in 0..rounds {
            for (m, &mode) in modes.iter().enumerate() {
                let mode_total = if mode.batch > 1 {
                    total.div_ceil(mode.connections * mode.batch) * mode.connections * mode.batch
                } else {
                    total
                };
                // Alternate which codec goes first, so neither always runs on a warmer machine.
                let order: Vec<usize> = if round.is_multiple_of(2) {
                    vec![0, 1]
                } else {
                    vec![1, 0]
                };
                for c in order {
                    let rate = run_mode(&net, codecs[c], mode, mode_total)
                        .await
                        .map_err(|e| BenchError::Setup(format!("{}: {e}", mode.label())))?;
                    rates[m * codecs.len() + c].push(rate);
                }
            }
            for (c, &codec) in codecs.iter().enumerate() {
                let rate = codec_only(codec, total).map_err(BenchError::Setup)?;
                rates[modes.len() * codecs.len() + c].push(rate);
            }
        }
        net.server.close(0u32.into(), b"done");
        net.client.close(0u32.into(), b"done");
        net.client.wait_idle().await;
        server.abort();
        Ok::<(), BenchError>(())
    })?;
    let sizes = [zap_size(), proto_size()];
    let labels: Vec<String> = modes
        .iter()
        .map(|m| m.label())
        .chain(["codec only (no network)".to_string()])
        .collect();
    let mut table = Table::new(
        format!(
            "Votes per second over loopback QUIC (p50 over {rounds} rounds; {total} votes per run; \
             ZAP {} bytes, protobuf {} bytes per vote, 4-byte frame header each)",
            sizes[0], sizes[1]
        ),
        &[
            "mode",
            "ZAP votes/s",
            "protobuf votes/s",
            "ZAP / protobuf",
            "ZAP MiB/s",
            "protobuf MiB/s",
        ],
    );
    let mut records = Vec::new();
    let mut ratios = Vec::new();
    let mut bars = Vec::new();
    for (m, label) in labels.iter().enumerate() {
        let series: Vec<Series> = codecs
            .iter()
            .enumerate()
            .map(|(c, codec)| Series {
                group: label.clone(),
                name: codec.name().into(),
                samples_ms: rates[m * codecs.len() + c].clone(),
                calls_per_sample: 1,
            })
            .collect();
        // Throughput: the ratio of rates is ZAP over protobuf (higher is better for ZAP).
        let r = Ratio::paired(
            &format!("{label}: ZAP / protobuf votes per second"),
            &series[0],
            &series[1],
        );
        let zap_rate = median(&series[0].samples_ms);
        let proto_rate = median(&series[1].samples_ms);
        let mib = |rate: f64, size: usize| {
            format!(
                "{:.1}",
                rate * (size + FRAME_HEADER_LEN) as f64 / (1 << 20) as f64
            )
        };
        table.row(vec![
            label.clone(),
            format!("{zap_rate:.0}"),
            format!("{proto_rate:.0}"),
            ratio(r.value),
            mib(zap_rate, sizes[0]),
            mib(proto_rate, sizes[1]),
        ]);
        for (s, size) in series.iter().zip(sizes) {
            let rec = Record::from_values(&s.group, &s.name, "votes/s", &s.samples_ms)
                .with("bytes_per_vote", size);
            bars.push((format!("{label}: {}", s.name), rec.p50, rec.min));
            records.push(rec);
        }
        ratios.push(r);
    }
    Ok(Report {
        subcommand: "zap".into(),
        title: "ZAP against protobuf over QUIC".into(),
        smoke: common.smoke,
        settings: serde_json::json!({
            "messages": total,
            "rounds": rounds,
            "batch": batch,
            "message": "Vote",
            "bytes_per_vote": {"zap": sizes[0], "protobuf": sizes[1]},
        }),
        tables: vec![table],
        records,
        ratios,
        notes: vec![
            "Same framing, same checksum work on both sides: the codec is the only difference. \
             The receiver validates every ZAP vote (`VoteRef::parse`) and decodes every protobuf \
             vote into owned fields, then checks the block and signature lengths."
                .into(),
            "Throughput records: p95 and p99 are the fast end (more votes per second is \
             better); min is the slowest run."
                .into(),
            "Sender and receiver share this machine's cores, and QUIC (encryption, packets) \
             dominates the network rows, whose cost follows the bytes sent: a ZAP vote is larger \
             than a protobuf one (fixed-width fields and an offset table, which is what makes it \
             readable in place), so compare the MiB/s columns too. The codec-only row shows the \
             codecs alone."
                .into(),
        ],
        plot: Plot::Bars {
            axis: "votes per second".into(),
            whisker: "the slowest run".into(),
            bars,
        },
    })
}

fn zap_size() -> usize {
    vote(0).encode().map_or(0, |b| b.len())
}

fn proto_size() -> usize {
    let mut buf = Vec::new();
    encode(Codec::Protobuf, 0, &mut buf).map_or(0, |()| buf.len() - FRAME_HEADER_LEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_codecs_round_trip_every_field() {
        for codec in [Codec::Zap, Codec::Protobuf] {
            let mut buf = Vec::new();
            encode(codec, 5, &mut buf).unwrap();
            let sum = decode(codec, &buf[FRAME_HEADER_LEN..], 0).unwrap();
            assert_eq!(sum, expected_sum(5, 1), "{codec:?}");
            assert!(decode(codec, &buf[FRAME_HEADER_LEN..buf.len() - 1], 0).is_err());
        }
        assert_eq!(zap_size(), 181);
        assert!(proto_size() > 0);
    }
}
