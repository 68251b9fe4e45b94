//! Keccak-f\[1600\] and SHAKE256 as R1CS gadgets on bits (FIPS 202 §3, §6.2), over the
//! BLS12-381 scalar field.
//!
//! The state is 25 lanes of 64 [`Boolean`]s, lane (x, y) at index x + 5y, bit z of a lane at
//! index z (the least significant bit of the lane's little-endian u64 first). A byte string maps
//! onto bits the same way FIPS 202 does: byte i, bit j (least significant first) is bit 8i + j.
//!
//! # Cost
//!
//! Every XOR or AND of two variable bits is one constraint (`ark-r1cs-std`'s [`Boolean`]); a NOT,
//! a rotation, a permutation of lanes and an XOR with a constant cost nothing. Per round on a
//! state of variable bits: θ costs 4·320 (column parities), 320 (D) and 1600 (A ⊕ D), χ costs
//! 1600 (¬b ∧ c) and 1600 (a ⊕ …), ι is free: 6,400 constraints, so **153,600 per permutation**
//! ([`PERMUTATION_CONSTRAINTS`]; fewer when part of the state is constant, as in the first
//! absorption). SHAKE256 costs one permutation per started 136-byte block of input (padding
//! included) plus one per further 136 bytes of output.

use ark_bls12_381::Fr;
use ark_r1cs_std::boolean::Boolean;
use ark_relations::gr1cs::SynthesisError;

/// Constraints of one Keccak-f\[1600\] permutation on a state of variable bits.
pub const PERMUTATION_CONSTRAINTS: usize = 24 * 6400;

/// SHAKE256's rate: 1088 bits = 136 bytes (FIPS 202 §6.2, capacity 512).
pub const SHAKE256_RATE_BYTES: usize = 136;

/// One 64-bit lane, bit z at index z.
type Lane = Vec<Boolean<Fr>>;

/// The round constants RC\[i\] of ι (FIPS 202 §3.2.5, Algorithm 6), i = 0..23.
const ROUND_CONSTANTS: [u64; 24] = [
    0x0000_0000_0000_0001,
    0x0000_0000_0000_8082,
    0x8000_0000_0000_808a,
    0x8000_0000_8000_8000,
    0x0000_0000_0000_808b,
    0x0000_0000_8000_0001,
    0x8000_0000_8000_8081,
    0x8000_0000_0000_8009,
    0x0000_0000_0000_008a,
    0x0000_0000_0000_0088,
    0x0000_0000_8000_8009,
    0x0000_0000_8000_000a,
    0x0000_0000_8000_808b,
    0x8000_0000_0000_008b,
    0x8000_0000_0000_8089,
    0x8000_0000_0000_8003,
    0x8000_0000_0000_8002,
    0x8000_0000_0000_0080,
    0x0000_0000_0000_800a,
    0x8000_0000_8000_000a,
    0x8000_0000_8000_8081,
    0x8000_0000_0000_8080,
    0x0000_0000_8000_0001,
    0x8000_0000_8000_8008,
];

/// ρ's rotation offset of lane x + 5y (FIPS 202 §3.2.2, Table 2).
const RHO: [usize; 25] = [
    0, 1, 62, 28, 27, 36, 44, 6, 55, 20, 3, 10, 43, 25, 39, 41, 45, 15, 21, 8, 18, 2, 61, 56, 14,
];

/// π's destination of lane x + 5y: A'\[x'\]\[y'\] = A\[(x' + 3y') mod 5\]\[x'\] (FIPS 202 §3.2.3),
/// i.e. lane (x, y) moves to (y, (2x + 3y) mod 5), index y + 5·((2x + 3y) mod 5).
const PI_DESTINATION: [usize; 25] = {
    let mut d = [0; 25];
    let mut i = 0;
    while i < 25 {
        let (x, y) = (i % 5, i / 5);
        // Compile-time loop over a constant array; the index is below 25 by the loop bound.
        #[allow(clippy::indexing_slicing)]
        {
            d[i] = y + 5 * ((2 * x + 3 * y) % 5);
        }
        i += 1;
    }
    d
};

/// A Keccak-f\[1600\] state of 25 lanes (index x + 5y) of 64 bits.
#[derive(Clone, Debug)]
pub struct KeccakState {
    lanes: Vec<Lane>,
}

impl Default for KeccakState {
    fn default() -> Self {
        Self::zero()
    }
}

impl KeccakState {
    /// The all-zero state (constants: no variables, no constraints).
    pub fn zero() -> Self {
        KeccakState {
            lanes: vec![vec![Boolean::FALSE; 64]; 25],
        }
    }

    /// The state as 1600 bits in FIPS 202 order (lane index x + 5y, then bit z).
    pub fn bits(&self) -> Vec<Boolean<Fr>> {
        self.lanes.iter().flatten().cloned().collect()
    }

    /// XORs `bits` into the first `bits.len()` bits of the state (FIPS 202 order). Errors:
    /// [`SynthesisError::Unsatisfiable`] if more than 1600 bits are given.
    pub fn xor_bits(&mut self, bits: &[Boolean<Fr>]) -> Result<(), SynthesisError> {
        if bits.len() > 1600 {
            return Err(SynthesisError::Unsatisfiable);
        }
        for (lane, chunk) in self.lanes.iter_mut().zip(bits.chunks(64)) {
            for (s, b) in lane.iter_mut().zip(chunk) {
                *s = &*s ^ b;
            }
        }
        Ok(())
    }

    /// Applies Keccak-f\[1600\] = Keccak-p\[1600, 24\] (FIPS 202 §3.3): 24 rounds of θ, ρ, π, χ,
    /// ι. Costs at most [`PERMUTATION_CONSTRAINTS`] constraints.
    pub fn permute(&mut self) {
        for rc in ROUND_CONSTANTS {
            self.theta();
            self.rho_pi();
            self.chi();
            self.iota(rc);
        }
    }

    /// θ: every bit XORs the parities of two neighbouring columns.
    fn theta(&mut self) {
        // C[x] = A[x][0] ⊕ … ⊕ A[x][4]: fold the five rows (lanes x + 5y for y = 0..4).
        let mut rows = self.lanes.chunks_exact(5);
        let mut c: Vec<Lane> = rows.next().map(<[Lane]>::to_vec).unwrap_or_default();
        for row in rows {
            for (cx, lane) in c.iter_mut().zip(row) {
                *cx = xor_lanes(cx, lane);
            }
        }
        // D[x] = C[x − 1] ⊕ rot(C[x + 1], 1).
        let left = c.iter().cycle().skip(4).take(5);
        let right = c.iter().cycle().skip(1).take(5);
        let d: Vec<Lane> = left
            .zip(right)
            .map(|(l, r)| xor_lanes(l, &rotate_left(r, 1)))
            .collect();
        for row in self.lanes.chunks_exact_mut(5) {
            for (lane, dx) in row.iter_mut().zip(&d) {
                *lane = xor_lanes(lane, dx);
            }
        }
    }

    /// ρ and π: rotate every lane by its offset and move it to its π position.
    fn rho_pi(&mut self) {
        let mut moved: Vec<(usize, Lane)> = PI_DESTINATION
            .iter()
            .zip(RHO)
            .zip(self.lanes.drain(..))
            .map(|((&dest, r), lane)| (dest, rotate_left(&lane, r)))
            .collect();
        moved.sort_unstable_by_key(|(dest, _)| *dest);
        self.lanes = moved.into_iter().map(|(_, lane)| lane).collect();
    }

    /// χ: A\[x\] ⊕= ¬A\[x + 1\] ∧ A\[x + 2\] within every row.
    fn chi(&mut self) {
        for row in self.lanes.chunks_exact_mut(5) {
            let next = row.iter().cycle().skip(1).take(5);
            let after = row.iter().cycle().skip(2).take(5);
            let out: Vec<Lane> = row
                .iter()
                .zip(next.zip(after))
                .map(|(a, (b, c))| {
                    a.iter()
                        .zip(b.iter().zip(c))
                        .map(|(a, (b, c))| a ^ &(!b & c))
                        .collect()
                })
                .collect();
            for (lane, new) in row.iter_mut().zip(out) {
                *lane = new;
            }
        }
    }

    /// ι: lane (0, 0) XORs the round constant (free: constants only flip bits).
    fn iota(&mut self, rc: u64) {
        if let Some(lane) = self.lanes.first_mut() {
            for (z, bit) in lane.iter_mut().enumerate() {
                if (rc >> z) & 1 == 1 {
                    *bit = !&*bit;
                }
            }
        }
    }
}

/// Bitwise XOR of two lanes.
fn xor_lanes(a: &[Boolean<Fr>], b: &[Boolean<Fr>]) -> Lane {
    a.iter().zip(b).map(|(x, y)| x ^ y).collect()
}

/// Rotation of a lane towards the more significant bits by `r` (ROT(W, r) of FIPS 202 §3.2.2):
/// out\[z\] = in\[(z − r) mod 64\].
fn rotate_left(lane: &[Boolean<Fr>], r: usize) -> Lane {
    let mut out = lane.to_vec();
    out.rotate_right(r % 64);
    out
}

/// SHAKE256(M, 8·`output_bytes`) of the byte string M given as bits (FIPS 202 §6.2, byte i bit
/// j at index 8i + j): pad M ‖ 1111 ‖ 10*1 to whole 136-byte blocks, absorb, squeeze
/// `output_bytes` bytes. Returns 8·`output_bytes` bits in the same order. The lengths are
/// public (fixed by the circuit), only the bit values are witnesses. Errors:
/// [`SynthesisError::Unsatisfiable`] if `message` is not a whole number of bytes.
pub fn shake256(
    message: &[Boolean<Fr>],
    output_bytes: usize,
) -> Result<Vec<Boolean<Fr>>, SynthesisError> {
    if !message.len().is_multiple_of(8) {
        return Err(SynthesisError::Unsatisfiable);
    }
    const RATE_BITS: usize = SHAKE256_RATE_BYTES * 8;
    // Padding: the suffix 1111 (SHAKE domain) then pad10*1, within whole rate blocks.
    let mut padded = message.to_vec();
    padded.extend([Boolean::TRUE; 4]);
    padded.push(Boolean::TRUE);
    while padded.len() % RATE_BITS != RATE_BITS - 1 {
        padded.push(Boolean::FALSE);
    }
    padded.push(Boolean::TRUE);

    let mut state = KeccakState::zero();
    for block in padded.chunks(RATE_BITS) {
        state.xor_bits(block)?;
        state.permute();
    }
    let mut out = Vec::with_capacity(output_bytes * 8);
    loop {
        let bits = state.bits();
        let take = (output_bytes * 8 - out.len()).min(RATE_BITS);
        out.extend(bits.into_iter().take(take));
        if out.len() == output_bytes * 8 {
            return Ok(out);
        }
        state.permute();
    }
}

/// The number of Keccak-f permutations [`shake256`] runs for `message_bytes` of input and
/// `output_bytes` of output: ⌈(message_bytes + 1) / 136⌉ to absorb (the padding takes at least
/// one byte), plus ⌈output_bytes / 136⌉ − 1 to squeeze.
pub const fn shake256_permutations(message_bytes: usize, output_bytes: usize) -> usize {
    let absorb = (message_bytes + 1).div_ceil(SHAKE256_RATE_BYTES);
    let squeeze = if output_bytes == 0 {
        0
    } else {
        output_bytes.div_ceil(SHAKE256_RATE_BYTES) - 1
    };
    absorb + squeeze
}
