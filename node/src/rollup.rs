//! The rollup commands of `quasar-node` (issue 6): Groth16 keys for a validator-set shape,
//! validators' ML-DSA-65 signatures on a round digest, a proof that a quorum signed, and its
//! verification against a genesis.
//!
//! Files, all in one setup directory:
//! - `rollup.pk`: the proving key ([`quasar_crypto::rollup::prover::write_proving_key`]);
//! - `rollup.vk.json`: [`VerifyingKeyFile`], the shape and the verifying key (hex).
//!
//! A signature file is a JSON array of [`SignatureEntry`] (what `rollup-sign` prints, one per
//! validator); a proof file is a [`ProofFile`].

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};
use std::time::Instant;

use quasar_crypto::rollup::circuit::{
    choose_signers, commitment, RollupError, RollupWitness, Shape, Statement, Validator,
    ROLLUP_CONTEXT,
};
use quasar_crypto::rollup::native::{DecodedSignature, ML_DSA_65};
use quasar_crypto::rollup::prover::{
    dev_setup, prove as groth16_prove, read_proving_key, read_proving_key_shape, write_proving_key,
    ProverError,
};
use quasar_lanes::groth16::{field_element_to_bytes, Groth16Error, Proof, VerifyingKey};
use rand::rngs::OsRng;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use quasar_chainspec::{load_keys, ConfigError, GenesisFile, KeyAccess};

/// Proving key file name in a setup directory.
pub const PROVING_KEY_FILE: &str = "rollup.pk";
/// Verifying key file name in a setup directory.
pub const VERIFYING_KEY_FILE: &str = "rollup.vk.json";

/// `rollup.vk.json`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct VerifyingKeyFile {
    /// Always "ML-DSA-65" (the validators' identity keys).
    pub parameter_set: String,
    /// n, the validator count the keys are for.
    pub validators: usize,
    /// τ, the signatures a proof carries.
    pub slots: usize,
    /// The verifying key, arkworks compressed encoding, hex.
    pub verifying_key: String,
}

/// One validator's signature on a digest, as `rollup-sign` prints it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SignatureEntry {
    /// The validator's name in the genesis.
    pub validator: String,
    /// The 32-byte digest signed, hex.
    pub digest: String,
    /// The ML-DSA-65 signature (FIPS 204, context [`ROLLUP_CONTEXT`]), hex.
    pub signature: String,
}

/// A rollup proof. It shows that some quorum signed, not which validators: the signers are
/// part of the zero-knowledge witness, so the file does not list them.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ProofFile {
    /// The round digest μ, hex (32 bytes).
    pub digest: String,
    /// h_x, the commitment to the validator set the proof is for (32 bytes, little-endian hex).
    pub h_x: String,
    /// The Groth16 proof, 192 bytes compressed, hex.
    pub proof: String,
}

/// What a rollup command could not do.
#[derive(Debug, Error)]
pub enum RollupCommandError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// An input is malformed or inconsistent (the message says which and why).
    #[error("{0}")]
    Invalid(String),
    /// Key or genesis files.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Setup, proving or the proving key file.
    #[error(transparent)]
    Prover(#[from] ProverError),
    /// The witness cannot prove a quorum.
    #[error(transparent)]
    Witness(#[from] RollupError),
    /// The verifying key or the proof does not decode.
    #[error(transparent)]
    Groth16(#[from] Groth16Error),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RollupCommandError + '_ {
    move |source| RollupCommandError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A file written under a temporary name next to `path` (`.NAME.partial-PID`) and published
/// at `path` only when complete, by a hard link, which never replaces an existing file. A
/// command that fails or is killed leaves nothing under the real name (a killed one may leave
/// the hidden temporary file).
struct NewFile<'a> {
    path: &'a Path,
    temp: PathBuf,
    file: File,
    published: bool,
}

impl<'a> NewFile<'a> {
    /// Claims a temporary file for `path`. Errors: `path` exists; the directory is missing or
    /// not writable.
    fn create(path: &'a Path) -> Result<NewFile<'a>, RollupCommandError> {
        if path.exists() {
            return Err(RollupCommandError::Invalid(format!(
                "{} already exists; refusing to replace it",
                path.display()
            )));
        }
        let name = path.file_name().ok_or_else(|| {
            RollupCommandError::Invalid(format!("{}: not a file name", path.display()))
        })?;
        let temp = path.with_file_name(format!(
            ".{}.partial-{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(io(path))?;
        Ok(NewFile {
            path,
            temp,
            file,
            published: false,
        })
    }

    /// Flushes the file to disk and links it at its real name.
    fn publish(mut self) -> Result<(), RollupCommandError> {
        self.file.sync_all().map_err(io(self.path))?;
        std::fs::hard_link(&self.temp, self.path).map_err(io(self.path))?;
        self.published = true;
        std::fs::remove_file(&self.temp).map_err(io(self.path))
    }
}

impl Drop for NewFile<'_> {
    fn drop(&mut self) {
        if !self.published {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// Largest JSON input read (16,384 signature entries are about 110 MB).
const MAX_JSON_BYTES: u64 = 256 << 20;

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, RollupCommandError> {
    let too_large = || {
        RollupCommandError::Invalid(format!(
            "{}: more than the {MAX_JSON_BYTES} bytes a rollup file can need",
            path.display()
        ))
    };
    if std::fs::metadata(path).map_err(io(path))?.len() > MAX_JSON_BYTES {
        return Err(too_large());
    }
    // Devices and pipes report no size: the read itself is bounded too.
    use std::io::Read;
    let mut text = String::new();
    File::open(path)
        .map_err(io(path))?
        .take(MAX_JSON_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(io(path))?;
    if text.len() as u64 > MAX_JSON_BYTES {
        return Err(too_large());
    }
    serde_json::from_str(&text)
        .map_err(|e| RollupCommandError::Invalid(format!("{}: {e}", path.display())))
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), RollupCommandError> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| RollupCommandError::Invalid(e.to_string()))?;
    use std::io::Write;
    let mut file = NewFile::create(path)?;
    file.file.write_all(text.as_bytes()).map_err(io(path))?;
    file.publish()
}

/// A 32-byte hex value named `what`.
pub fn parse_digest(what: &str, hex_text: &str) -> Result<[u8; 32], RollupCommandError> {
    hex::decode(hex_text.trim())
        .ok()
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .ok_or_else(|| RollupCommandError::Invalid(format!("{what}: expected 64 hex digits")))
}

/// Resources of a rollup shape, extrapolated from the measured n = 1, τ = 1 ML-DSA-65 setup on
/// a 2-core machine (2.13 M constraints: setup 3.1 GB peak, proof 4.8 GB peak, a 1.42 GB
/// proving key); each signature slot adds about 2.13 M constraints, each validator a few hundred.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
pub struct Estimate {
    /// Constraints of the circuit.
    pub constraints: u64,
    /// Peak memory of `rollup-setup`, bytes.
    pub setup_bytes: u64,
    /// Peak memory of `rollup-prove`, bytes.
    pub prove_bytes: u64,
    /// Size of `rollup.pk`, bytes.
    pub proving_key_bytes: u64,
}

/// The [`Estimate`] for n = `validators`, τ = `slots`.
pub fn estimate(validators: usize, slots: usize) -> Estimate {
    let constraints = 2_130_000 * slots as u64 + 400 * validators as u64;
    Estimate {
        constraints,
        setup_bytes: constraints * 1_460,
        prove_bytes: constraints * 2_270,
        proving_key_bytes: constraints * 665,
    }
}

/// MemAvailable of /proc/meminfo in bytes, where there is one.
fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// What `rollup-setup` reports.
#[derive(Clone, Debug, Serialize)]
pub struct SetupSummary {
    /// n.
    pub validators: usize,
    /// τ.
    pub slots: usize,
    /// Proving key file size, bytes.
    pub proving_key_bytes: u64,
    /// Setup time, milliseconds.
    pub setup_ms: u128,
}

/// `rollup-setup`: Groth16 keys for n = `validators`, τ = `slots` (ML-DSA-65) into `out`,
/// from `seed` (deterministic, for testnets) or fresh OS randomness. Both are single-party
/// setups, not for production (see `quasar_crypto::rollup::prover`). Refuses existing files.
pub fn setup(
    out: &Path,
    validators: usize,
    slots: usize,
    seed: Option<[u8; 32]>,
) -> Result<SetupSummary, RollupCommandError> {
    if slots == 0 || slots > validators || validators >= 1 << 14 {
        return Err(RollupCommandError::Invalid(format!(
            "need 1 <= quorum <= validators < 16384, got quorum {slots}, validators {validators}"
        )));
    }
    let pk_path = out.join(PROVING_KEY_FILE);
    let vk_path = out.join(VERIFYING_KEY_FILE);
    for path in [&pk_path, &vk_path] {
        if path.exists() {
            return Err(RollupCommandError::Invalid(format!(
                "{} already exists; refusing to replace rollup keys",
                path.display()
            )));
        }
    }
    let shape = Shape {
        params: ML_DSA_65,
        validators,
        slots,
    };
    let need = estimate(validators, slots);
    if let Some(available) = available_memory() {
        if need.setup_bytes > available {
            return Err(RollupCommandError::Invalid(format!(
                "n = {validators}, quorum = {slots} needs about {} GB of memory for the setup \
                 ({} M constraints; about 3 GB per signature), {} GB are available",
                need.setup_bytes >> 30,
                need.constraints / 1_000_000,
                available >> 30
            )));
        }
    }
    std::fs::create_dir_all(out).map_err(io(out))?;
    eprintln!(
        "rollup-setup: about {} M constraints; expect several minutes per signature slot, \
         {:.1} GB of memory and a {:.1} GB proving key",
        need.constraints / 1_000_000,
        need.setup_bytes as f64 / f64::from(1u32 << 30),
        need.proving_key_bytes as f64 / f64::from(1u32 << 30)
    );
    let seed = seed.unwrap_or_else(|| {
        let mut s = [0u8; 32];
        OsRng.fill_bytes(&mut s);
        s
    });
    let start = Instant::now();
    let (pk, vk) = dev_setup(shape, seed)?;
    let setup_ms = start.elapsed().as_millis();
    let vk = VerifyingKey::new(vk)?;
    let mut file = NewFile::create(&pk_path)?;
    write_proving_key(&shape, &pk, BufWriter::new(&mut file.file))?;
    file.publish()?;
    write_json(
        &vk_path,
        &VerifyingKeyFile {
            parameter_set: ML_DSA_65.name.into(),
            validators,
            slots,
            verifying_key: hex::encode(vk.to_bytes()),
        },
    )?;
    let proving_key_bytes = std::fs::metadata(&pk_path).map_err(io(&pk_path))?.len();
    Ok(SetupSummary {
        validators,
        slots,
        proving_key_bytes,
        setup_ms,
    })
}

/// `rollup-sign`: the validator in key directory `keys` signs `digest` with its ML-DSA-65
/// identity key (hedged signing, context [`ROLLUP_CONTEXT`]); the secret file is opened under
/// `access`.
pub fn sign(
    keys: &Path,
    access: &KeyAccess,
    digest: [u8; 32],
) -> Result<SignatureEntry, RollupCommandError> {
    let keys = load_keys(keys, access)?;
    let signature = keys
        .mldsa
        .sign(&digest, ROLLUP_CONTEXT, &mut OsRng)
        .map_err(|e| RollupCommandError::Invalid(format!("ML-DSA signing: {e}")))?;
    Ok(SignatureEntry {
        validator: keys.public.name.clone(),
        digest: hex::encode(digest),
        signature: hex::encode(signature.as_bytes()),
    })
}

/// The validator set of `genesis` as the rollup sees it, with names.
fn validator_set(genesis: &Path) -> Result<(Vec<String>, Vec<Validator>), RollupCommandError> {
    let checked = GenesisFile::load(genesis)?.check()?;
    let validators = checked.rollup_validators()?;
    let names = checked
        .file
        .validators
        .iter()
        .map(|v| v.name.clone())
        .collect();
    Ok((names, validators))
}

/// `rollup-prove`: a proof that the validators of `genesis` whose signatures on `digest` are in
/// `signatures` hold a quorum, with the keys of `setup_dir`, written to `out`. Every entry must
/// be a signature on `digest` by a distinct genesis validator; when more than the keys' τ are
/// given, the τ with the most stake are used (`choose_signers`) and must verify. Everything is
/// checked (and `out` created) before the proving key is loaded. Errors: a signature for another digest, from an
/// unknown validator, repeated or not verifying (named); too few signatures; no quorum; files.
pub fn prove(
    setup_dir: &Path,
    genesis: &Path,
    digest: [u8; 32],
    signatures: &Path,
    out: &Path,
) -> Result<ProofFile, RollupCommandError> {
    let (names, validators) = validator_set(genesis)?;
    let entries: Vec<SignatureEntry> = read_json(signatures)?;
    let mut chosen: Vec<(usize, DecodedSignature)> = Vec::new();
    for entry in &entries {
        let index = names
            .iter()
            .position(|n| *n == entry.validator)
            .ok_or_else(|| {
                RollupCommandError::Invalid(format!(
                    "signature from {}, who is not in the genesis",
                    entry.validator
                ))
            })?;
        if parse_digest("digest", &entry.digest)? != digest {
            return Err(RollupCommandError::Invalid(format!(
                "the signature of {} is for digest {}, not this one",
                entry.validator, entry.digest
            )));
        }
        let bytes = hex::decode(entry.signature.trim()).map_err(|_| {
            RollupCommandError::Invalid(format!("signature of {}: not hex", entry.validator))
        })?;
        let sig = DecodedSignature::from_bytes(&ML_DSA_65, &bytes).map_err(|e| {
            RollupCommandError::Invalid(format!("signature of {}: {e}", entry.validator))
        })?;
        if chosen.iter().any(|(i, _)| *i == index) {
            return Err(RollupCommandError::Invalid(format!(
                "two signatures from {}",
                entry.validator
            )));
        }
        chosen.push((index, sig));
    }

    let pk_path = setup_dir.join(PROVING_KEY_FILE);
    let open_pk = || File::open(&pk_path).map_err(io(&pk_path));
    let shape = read_proving_key_shape(BufReader::new(open_pk()?))?;
    if shape.validators != validators.len() {
        return Err(RollupCommandError::Invalid(format!(
            "the keys in {} are for {} validators (per the header of rollup.pk; a damaged \
             file can say so too), the genesis has {}",
            setup_dir.display(),
            shape.validators,
            validators.len()
        )));
    }
    if chosen.len() < shape.slots {
        return Err(RollupCommandError::Invalid(format!(
            "{} signatures, the proof needs {}",
            chosen.len(),
            shape.slots
        )));
    }
    let chosen = choose_signers(&shape, &validators, chosen);
    let name = |i: usize| names.get(i).cloned().unwrap_or_else(|| i.to_string());
    let witness = RollupWitness::new(shape, validators, chosen, digest).map_err(|e| match e {
        RollupError::BadSignature(i) => RollupCommandError::Invalid(format!(
            "signature of {}: does not verify for this digest",
            name(i)
        )),
        other => other.into(),
    })?;

    // Claim the output before the long part; it appears under its name only when complete.
    let mut output = NewFile::create(out)?;
    let file = {
        let (_, pk) = read_proving_key(BufReader::new(open_pk()?))?;
        let mut rng = ChaCha20Rng::from_rng(OsRng)
            .map_err(|e| RollupCommandError::Invalid(format!("OS randomness: {e}")))?;
        let arithmetic = quasar_gpu::best_available();
        let (proof, statement, timings) =
            groth16_prove(&pk, witness, arithmetic.backend.as_ref(), &mut rng)?;
        tracing::info!(
            synthesis_s = timings.synthesis.as_secs_f64(),
            witness_map_s = timings.witness_map.as_secs_f64(),
            msm_s = timings.msm.as_secs_f64(),
            "rollup proof made"
        );
        let proof = Proof::from_ark(&proof)?;
        let file = ProofFile {
            digest: hex::encode(digest),
            h_x: hex::encode(field_element_to_bytes(&statement.h_x)),
            proof: hex::encode(proof.to_bytes()),
        };
        let text = serde_json::to_string_pretty(&file)
            .map_err(|e| RollupCommandError::Invalid(e.to_string()))?;
        use std::io::Write;
        output.file.write_all(text.as_bytes()).map_err(io(out))?;
        file
    };
    output.publish()?;
    Ok(file)
}

/// `rollup-verify`: whether `proof` shows that a quorum of `genesis`'s validators signed its
/// digest, under the verifying key of `setup_dir`. h_x is recomputed from the genesis (the
/// proof file's copy is only compared with it). `Ok(false)` for a proof that does not verify
/// or is for another validator set; errors for unreadable or malformed inputs.
pub fn verify(setup_dir: &Path, genesis: &Path, proof: &Path) -> Result<bool, RollupCommandError> {
    let (vk_file, vk) = read_verifying_key(setup_dir)?;
    let (_, validators) = validator_set(genesis)?;
    if validators.len() != vk_file.validators {
        return Err(RollupCommandError::Invalid(format!(
            "the keys are for {} validators, the genesis has {}",
            vk_file.validators,
            validators.len()
        )));
    }
    let proof_file: ProofFile = read_json(proof)?;
    let digest = parse_digest("digest", &proof_file.digest)?;
    let claimed = parse_digest("h_x", &proof_file.h_x)?;
    let h_x = commitment(&validators);
    if claimed != field_element_to_bytes(&h_x) {
        return Ok(false);
    }
    let proof_bytes = hex::decode(proof_file.proof.trim())
        .map_err(|_| RollupCommandError::Invalid("proof: not hex".into()))?;
    let proof = Proof::from_bytes(&proof_bytes)?;
    let inputs = Statement { digest, h_x }.public_inputs();
    match vk.verify(&inputs, &proof) {
        Ok(()) => Ok(true),
        Err(Groth16Error::Invalid) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Reads `rollup.vk.json` from `setup_dir`: the file and its verifying key, checked (ML-DSA-65,
/// a well-formed key, 1 ≤ slots ≤ validators). Errors: unreadable or malformed file.
pub fn read_verifying_key(
    setup_dir: &Path,
) -> Result<(VerifyingKeyFile, VerifyingKey), RollupCommandError> {
    let vk_path = setup_dir.join(VERIFYING_KEY_FILE);
    let vk_file: VerifyingKeyFile = read_json(&vk_path)?;
    if vk_file.parameter_set != ML_DSA_65.name {
        return Err(RollupCommandError::Invalid(format!(
            "{}: parameter set {}, expected {}",
            vk_path.display(),
            vk_file.parameter_set,
            ML_DSA_65.name
        )));
    }
    let vk_bytes = hex::decode(vk_file.verifying_key.trim()).map_err(|_| {
        RollupCommandError::Invalid(format!("{}: verifying_key is not hex", vk_path.display()))
    })?;
    let vk = VerifyingKey::from_bytes(&vk_bytes).map_err(|e| {
        RollupCommandError::Invalid(format!("{}: verifying_key: {e}", vk_path.display()))
    })?;
    if vk_file.slots == 0 || vk_file.slots > vk_file.validators {
        return Err(RollupCommandError::Invalid(format!(
            "{}: slots must be between 1 and validators",
            vk_path.display()
        )));
    }
    Ok((vk_file, vk))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn new_files_appear_only_when_published_and_never_replace_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("proof.json");
        // Dropped before publishing (a failed command): nothing is left, not even the temp.
        let mut abandoned = NewFile::create(&path).unwrap();
        abandoned.file.write_all(b"half").unwrap();
        drop(abandoned);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

        let mut file = NewFile::create(&path).unwrap();
        file.file.write_all(b"whole").unwrap();
        assert!(!path.exists(), "invisible until published");
        file.publish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"whole");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        assert!(NewFile::create(&path).is_err());
        assert!(NewFile::create(&dir.path().join("missing/proof.json")).is_err());
    }
}
