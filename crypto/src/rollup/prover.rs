//! Groth16 (Groth, "On the Size of Pairing-based Non-interactive Arguments", EUROCRYPT 2016)
//! over BLS12-381 for the rollup circuit, on `ark-groth16`: key generation and proving.
//!
//! **Setup.** [`dev_setup`] generates the proving and verifying keys of a [`Shape`] from a
//! 32-byte seed (ChaCha20): deterministic, so testnet operators can reproduce the keys, and
//! **insecure for production**: whoever knows the seed knows the toxic waste (α, β, γ, δ, x) and
//! can prove false statements. Production keys need a multi-party phase-2 ceremony (e.g. the
//! MMORPG protocol of Bowe, Gabizon, Miers, ePrint 2017/1050) over a universal phase-1
//! powers-of-tau; not built here.
//!
//! **Proving.** [`prove`] synthesizes the circuit for a checked [`RollupWitness`] and runs the
//! `ark-groth16` prover (its own MSMs and FFTs, rayon-parallel). Moving those MSMs and FFTs
//! behind the batched-arithmetic trait of DESIGN.md §1 (so the GPU adapter can take them) is not
//! done yet.

use std::io::{Read, Write};

use ark_bls12_381::Bls12_381;
use ark_groth16::Groth16;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_snark::SNARK;
use rand::{CryptoRng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sha3::{Digest, Sha3_256};
use thiserror::Error;

use super::circuit::{RollupCircuit, RollupWitness, Shape, Statement};
use super::native::{Params, ML_DSA_44, ML_DSA_65};

/// A Groth16 proving key over BLS12-381.
pub type ProvingKey = ark_groth16::ProvingKey<Bls12_381>;
/// A Groth16 verifying key over BLS12-381.
pub type VerifyingKey = ark_groth16::VerifyingKey<Bls12_381>;
/// A Groth16 proof over BLS12-381 (A, C in G1, B in G2).
pub type Proof = ark_groth16::Proof<Bls12_381>;

/// Why keys or a proof could not be made, stored or loaded.
#[derive(Debug, Error)]
pub enum ProverError {
    /// Constraint synthesis or the Groth16 algorithm failed.
    #[error("groth16: {0}")]
    Groth16(#[from] ark_relations::gr1cs::SynthesisError),
    /// Reading or writing a key file failed.
    #[error("proving key file: {0}")]
    Io(#[from] std::io::Error),
    /// A proving key file is not one this code wrote, or is damaged.
    #[error("proving key file: {0}")]
    Format(String),
}

/// First bytes of a proving key file.
const PROVING_KEY_MAGIC: &[u8; 20] = b"QUASAR-ROLLUP-PK-v1\n";

/// Writes `pk` for `shape`: the 20-byte magic, the parameter set (1 byte: 44 or 65), n and τ
/// (u32 little-endian each), then the key in arkworks' uncompressed encoding, then SHA3-256 of
/// everything before it (32 bytes). Uncompressed because loading then needs no square roots
/// (a proving key has millions of points). Errors: [`ProverError::Io`],
/// [`ProverError::Format`] for a parameter set other than ML-DSA-44/65.
pub fn write_proving_key<W: Write>(
    shape: &Shape,
    pk: &ProvingKey,
    writer: W,
) -> Result<(), ProverError> {
    let mut out = HashingWriter {
        inner: writer,
        hash: Sha3_256::new(),
    };
    out.write_all(PROVING_KEY_MAGIC)?;
    out.write_all(&[parameter_set_id(&shape.params)?])?;
    for count in [shape.validators, shape.slots] {
        let count =
            u32::try_from(count).map_err(|_| ProverError::Format("shape too large".into()))?;
        out.write_all(&count.to_le_bytes())?;
    }
    pk.serialize_uncompressed(&mut out)
        .map_err(|e| ProverError::Format(e.to_string()))?;
    let digest = out.hash.finalize();
    out.inner.write_all(&digest)?;
    out.inner.flush()?;
    Ok(())
}

/// Reads a file written by [`write_proving_key`]: its shape and key. The points are not
/// subgroup-checked (the checksum covers the file, and a wrong key only yields proofs that do
/// not verify). Errors: [`ProverError::Io`]; [`ProverError::Format`] for a wrong magic, an
/// unknown parameter set, a body that does not decode, trailing bytes or a checksum mismatch.
pub fn read_proving_key<R: Read>(reader: R) -> Result<(Shape, ProvingKey), ProverError> {
    let mut input = HashingReader {
        inner: reader,
        hash: Sha3_256::new(),
    };
    let shape = read_header(&mut input)?;
    let pk = ProvingKey::deserialize_uncompressed_unchecked(&mut input)
        .map_err(|e| ProverError::Format(format!("key does not decode: {e}")))?;
    let expected = input.hash.finalize();
    let mut stored = [0u8; 32];
    input
        .inner
        .read_exact(&mut stored)
        .map_err(|_| ProverError::Format("checksum missing".into()))?;
    if stored[..] != expected[..] {
        return Err(ProverError::Format(
            "checksum mismatch (damaged file)".into(),
        ));
    }
    let mut extra = [0u8; 1];
    if input.inner.read(&mut extra)? != 0 {
        return Err(ProverError::Format("trailing bytes".into()));
    }
    Ok((shape, pk))
}

/// The shape in the header of a proving key file, without reading the key (which takes
/// seconds and gigabytes), so a caller can check its inputs first. Errors as
/// [`read_proving_key`] for the header.
pub fn read_proving_key_shape<R: Read>(mut reader: R) -> Result<Shape, ProverError> {
    read_header(&mut reader)
}

/// Reads and checks the 29-byte header: magic, parameter set, n, τ.
fn read_header<R: Read>(input: &mut R) -> Result<Shape, ProverError> {
    let mut header = [0u8; 29];
    input
        .read_exact(&mut header)
        .map_err(|_| ProverError::Format("shorter than its header".into()))?;
    let (magic, rest) = header.split_at(20);
    if magic != PROVING_KEY_MAGIC {
        return Err(ProverError::Format(
            "not a Quasar rollup proving key".into(),
        ));
    }
    let (set, counts) = rest.split_at(1);
    let params = match set {
        [44] => ML_DSA_44,
        [65] => ML_DSA_65,
        _ => return Err(ProverError::Format("unknown ML-DSA parameter set".into())),
    };
    let count = |bytes: &[u8]| -> Result<usize, ProverError> {
        let array: [u8; 4] = bytes
            .try_into()
            .map_err(|_| ProverError::Format("header".into()))?;
        Ok(u32::from_le_bytes(array) as usize)
    };
    let (n, t) = counts.split_at(4);
    Ok(Shape {
        params,
        validators: count(n)?,
        slots: count(t)?,
    })
}

/// The one-byte id of a supported parameter set.
fn parameter_set_id(params: &Params) -> Result<u8, ProverError> {
    if *params == ML_DSA_44 {
        Ok(44)
    } else if *params == ML_DSA_65 {
        Ok(65)
    } else {
        Err(ProverError::Format(format!(
            "unsupported parameter set {}",
            params.name
        )))
    }
}

/// A writer that hashes what passes through.
struct HashingWriter<W> {
    inner: W,
    hash: Sha3_256,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(buf.get(..n).unwrap_or_default());
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A reader that hashes what passes through.
struct HashingReader<R> {
    inner: R,
    hash: Sha3_256,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(buf.get(..n).unwrap_or_default());
        Ok(n)
    }
}

/// The development setup of `shape` from `seed` (module docs: not for production).
pub fn dev_setup(shape: Shape, seed: [u8; 32]) -> Result<(ProvingKey, VerifyingKey), ProverError> {
    let mut rng = ChaCha20Rng::from_seed(seed);
    Ok(Groth16::<Bls12_381>::circuit_specific_setup(
        RollupCircuit::for_setup(shape),
        &mut rng,
    )?)
}

/// A proof of `witness`'s statement under `pk` (which must be the key of the witness's
/// shape), with the statement. `rng` randomizes the proof (zero knowledge): use a CSPRNG.
pub fn prove<R: RngCore + CryptoRng>(
    pk: &ProvingKey,
    witness: RollupWitness,
    rng: &mut R,
) -> Result<(Proof, Statement), ProverError> {
    let statement = witness.statement();
    let proof = Groth16::<Bls12_381>::prove(pk, RollupCircuit::for_proof(witness), rng)?;
    Ok((proof, statement))
}
