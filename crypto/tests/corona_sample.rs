//! Corona's samplers and hash suite (crypto/src/corona/{sample,hash}.rs), tested as a
//! specification: NIST SP 800-185 sample values for the hashes, exact CDT tables, statistics of
//! every Gaussian width, the challenge's weight and uniformity, the uniform sampler's range, the
//! number of random bytes each sampler reads, and golden outputs for fixed seeds.

use quasar_crypto::corona::hash::{
    self, cshake256, hash, keyed_xof, mac, prg, xof, Kmac256, Role, TupleHash256,
};
use quasar_crypto::corona::params::{DEGREE, KAPPA, Q, SIGMA_E, SIGMA_STAR, SIGMA_U};
use quasar_crypto::corona::sample::{challenge, gaussian, gaussian_public, uniform, Width};
use rand::{CryptoRng, RngCore};
use rand_chacha::ChaCha20Rng;

// ---------------------------------------------------------------------------------------------
// NIST SP 800-185 sample values ("Examples with Intermediate Values", NIST CSRC:
// cSHAKE_samples.pdf, KMAC_samples.pdf, KMACXOF_samples.pdf, TupleHash_samples.pdf,
// TupleHashXOF_samples.pdf). Transcribed from the test files of quininer/sp800-185
// (tests/{cshake,kmac,tuplehash}.rs), which reproduce those PDFs.
// ---------------------------------------------------------------------------------------------

fn seq(len: u8) -> Vec<u8> {
    (0..len).collect()
}

fn key_40_5f() -> Vec<u8> {
    (0x40..=0x5f).collect()
}

fn xof_hex(mut x: hash::Xof, len: usize) -> String {
    let mut out = vec![0u8; len];
    x.read(&mut out);
    hex::encode(out)
}

#[test]
fn cshake256_matches_nist_samples_3_and_4() {
    // Sample #3: X = 00 01 02 03, N = "", S = "Email Signature", L = 512.
    assert_eq!(
        xof_hex(cshake256(b"", b"Email Signature", &seq(4)), 64),
        concat!(
            "d008828e2b80ac9d2218ffee1d070c48b8e4c87bff32c9699d5b6896eee0edd1",
            "64020e2be0560858d9c00c037e34a96937c561a74c412bb4c746469527281c8c"
        )
    );
    // Sample #4: X = 00 … C7 (200 bytes).
    assert_eq!(
        xof_hex(cshake256(b"", b"Email Signature", &seq(200)), 64),
        concat!(
            "07dc27b11e51fbac75bc7b3c1d983e8b4b85fb1defaf218912ac864302730917",
            "27f42b17ed1df63e8ec118f04b23633c1dfb1574c8fb55cb45da8e25afb092bb"
        )
    );
}

fn kmac256_hex(data: &[u8], custom: &[u8]) -> String {
    let mut k = Kmac256::new(&key_40_5f(), custom);
    k.update(data);
    let mut out = [0u8; 64];
    k.finalize_into(&mut out);
    hex::encode(out)
}

fn kmacxof256_hex(data: &[u8], custom: &[u8]) -> String {
    let mut k = Kmac256::new(&key_40_5f(), custom);
    k.update(data);
    xof_hex(k.finalize_xof(), 64)
}

#[test]
fn kmac256_matches_nist_samples_4_to_6() {
    // K = 40 … 5F, L = 512.
    assert_eq!(
        kmac256_hex(&seq(4), b"My Tagged Application"),
        concat!(
            "20c570c31346f703c9ac36c61c03cb64c3970d0cfc787e9b79599d273a68d2f7",
            "f69d4cc3de9d104a351689f27cf6f5951f0103f33f4f24871024d9c27773a8dd"
        )
    );
    assert_eq!(
        kmac256_hex(&seq(200), b""),
        concat!(
            "75358cf39e41494e949707927cee0af20a3ff553904c86b08f21cc414bcfd691",
            "589d27cf5e15369cbbff8b9a4c2eb17800855d0235ff635da82533ec6b759b69"
        )
    );
    assert_eq!(
        kmac256_hex(&seq(200), b"My Tagged Application"),
        concat!(
            "b58618f71f92e1d56c1b8c55ddd7cd188b97b4ca4d99831eb2699a837da2e4d9",
            "70fbacfde50033aea585f1a2708510c32d07880801bd182898fe476876fc8965"
        )
    );
}

#[test]
fn kmacxof256_matches_nist_samples_4_to_6() {
    assert_eq!(
        kmacxof256_hex(&seq(4), b"My Tagged Application"),
        concat!(
            "1755133f1534752aad0748f2c706fb5c784512cab835cd15676b16c0c6647fa9",
            "6faa7af634a0bf8ff6df39374fa00fad9a39e322a7c92065a64eb1fb0801eb2b"
        )
    );
    assert_eq!(
        kmacxof256_hex(&seq(200), b""),
        concat!(
            "ff7b171f1e8a2b24683eed37830ee797538ba8dc563f6da1e667391a75edc02c",
            "a633079f81ce12a25f45615ec89972031d18337331d24ceb8f8ca8e6a19fd98b"
        )
    );
    assert_eq!(
        kmacxof256_hex(&seq(200), b"My Tagged Application"),
        concat!(
            "d5be731c954ed7732846bb59dbe3a8e30f83e77a4bff4459f2f1c2b4ecebb8ce",
            "67ba01c62e8ab8578d2d499bd1bb276768781190020a306a97de281dcc30305d"
        )
    );
}

fn tuple_samples() -> Vec<Vec<u8>> {
    vec![
        vec![0x00, 0x01, 0x02],
        (0x10..=0x15).collect(),
        (0x20..=0x28).collect(),
    ]
}

#[test]
fn tuplehash256_matches_nist_samples_4_to_6() {
    let t = tuple_samples();
    let run = |n: usize, custom: &[u8], xof_out: bool| {
        let mut h = TupleHash256::new(custom);
        for part in t.iter().take(n) {
            h.part(part);
        }
        if xof_out {
            xof_hex(h.finalize_xof(), 64)
        } else {
            let mut out = [0u8; 64];
            h.finalize_into(&mut out);
            hex::encode(out)
        }
    };
    // TupleHash256 samples #4–#6 (L = 512).
    assert_eq!(
        run(2, b"", false),
        concat!(
            "cfb7058caca5e668f81a12a20a2195ce97a925f1dba3e7449a56f82201ec6073",
            "11ac2696b1ab5ea2352df1423bde7bd4bb78c9aed1a853c78672f9eb23bbe194"
        )
    );
    assert_eq!(
        run(2, b"My Tuple App", false),
        concat!(
            "147c2191d5ed7efd98dbd96d7ab5a11692576f5fe2a5065f3e33de6bba9f3aa1",
            "c4e9a068a289c61c95aab30aee1e410b0b607de3620e24a4e3bf9852a1d4367e"
        )
    );
    assert_eq!(
        run(3, b"My Tuple App", false),
        concat!(
            "45000be63f9b6bfd89f54717670f69a9bc763591a4f05c50d68891a744bcc6e7",
            "d6d5b5e82c018da999ed35b0bb49c9678e526abd8e85c13ed254021db9e790ce"
        )
    );
    // TupleHashXOF256 samples #4–#6.
    assert_eq!(
        run(2, b"", true),
        concat!(
            "03ded4610ed6450a1e3f8bc44951d14fbc384ab0efe57b000df6b6df5aae7cd5",
            "68e77377daf13f37ec75cf5fc598b6841d51dd207c991cd45d210ba60ac52eb9"
        )
    );
    assert_eq!(
        run(2, b"My Tuple App", true),
        concat!(
            "6483cb3c9952eb20e830af4785851fc597ee3bf93bb7602c0ef6a65d741aeca7",
            "e63c3b128981aa05c6d27438c79d2754bb1b7191f125d6620fca12ce658b2442"
        )
    );
    assert_eq!(
        run(3, b"My Tuple App", true),
        concat!(
            "0c59b11464f2336c34663ed51b2b950bec743610856f36c28d1d088d8a244628",
            "4dd09830a6a178dc752376199fae935d86cfdee5913d4922dfd369b66a53c897"
        )
    );
}

#[test]
fn kmac_with_key_spanning_a_whole_block_pads_correctly() {
    // A 133-byte key makes left_encode(136) ‖ left_encode(1064) ‖ K exactly 136 bytes: no
    // padding block. A 134-byte key needs a second, almost empty block. Both must differ from
    // each other and be stable (bytepad boundary, SP 800-185 §2.3.3).
    let a = Kmac256::new(&[7u8; 133], b"S");
    let b = Kmac256::new(&[7u8; 134], b"S");
    let (mut oa, mut ob) = ([0u8; 32], [0u8; 32]);
    a.finalize_into(&mut oa);
    b.finalize_into(&mut ob);
    assert_ne!(oa, ob);
}

// ---------------------------------------------------------------------------------------------
// Corona roles: separation and golden values.
// ---------------------------------------------------------------------------------------------

#[test]
fn roles_and_constructions_never_share_an_output() {
    let seed = [3u8; 32];
    let mut outs = vec![
        hash(Role::Transcript, &[&seed]).to_vec(),
        hash(Role::Hu, &[&seed]).to_vec(),
        mac(Role::Mac, &seed, &[]).to_vec(),
        mac(Role::Prf, &seed, &[]).to_vec(),
    ];
    for role in [Role::ExpandA, Role::Challenge, Role::Hu] {
        for index in [0u64, 1] {
            let mut b = [0u8; 32];
            xof(role, &seed, index).read(&mut b);
            outs.push(b.to_vec());
            let mut p = prg(role, &seed, index);
            let mut b = [0u8; 32];
            p.fill_bytes(&mut b);
            outs.push(b.to_vec());
        }
    }
    let mut b = [0u8; 32];
    keyed_xof(Role::Prf, &seed, &[]).read(&mut b);
    outs.push(b.to_vec());
    for (i, a) in outs.iter().enumerate() {
        for b in &outs[i + 1..] {
            assert_ne!(a, b);
        }
    }
    // Part boundaries are bound: ["ab","c"] ≠ ["a","bc"] for hash and mac.
    assert_ne!(
        hash(Role::Transcript, &[b"ab", b"c"]),
        hash(Role::Transcript, &[b"a", b"bc"])
    );
    assert_ne!(
        mac(Role::Mac, &seed, &[b"ab", b"c"]),
        mac(Role::Mac, &seed, &[b"a", b"bc"])
    );
}

#[test]
fn role_outputs_are_the_documented_constructions() {
    // hash = TupleHash256 with the role's S; mac = KMAC256 over encode_string-framed parts.
    let mut t = TupleHash256::new(b"QUASAR-CORONA-TRANSCRIPT-v1");
    t.part(b"a");
    t.part(b"bc");
    assert_eq!(t.finalize(), hash(Role::Transcript, &[b"a", b"bc"]));
    let key = [5u8; 32];
    let mut k = Kmac256::new(&key, b"QUASAR-CORONA-MAC-v1");
    k.update(&[0x01, 0x08, b'x']); // encode_string("x") = left_encode(8) ‖ "x"
    let mut out = [0u8; 32];
    k.finalize_into(&mut out);
    assert_eq!(out, mac(Role::Mac, &key, &[b"x"]));
    // xof = cSHAKE256(seed ‖ le64(index) ‖ 0x00, N = "", S).
    let mut input = [0u8; 41];
    input[32] = 7;
    let mut a = [0u8; 48];
    cshake256(b"", b"QUASAR-CORONA-EXPAND-A-v1", &input).read(&mut a);
    let mut b = [0u8; 48];
    xof(Role::ExpandA, &[0u8; 32], 7).read(&mut b);
    assert_eq!(a, b);
}

/// Golden values: any change to these is a deliberate change of Corona's byte format.
#[test]
fn role_hash_golden_values() {
    assert_eq!(
        hex::encode(hash(Role::Transcript, &[b"a", b"bc"])),
        GOLDEN_TRANSCRIPT
    );
    assert_eq!(hex::encode(mac(Role::Mac, &[5u8; 32], &[b"x"])), GOLDEN_MAC);
    assert_eq!(xof_hex(xof(Role::ExpandA, &[0u8; 32], 7), 16), GOLDEN_XOF);
    assert_eq!(prg(Role::Hu, &[1u8; 32], 0).next_u64(), GOLDEN_PRG);
}

const GOLDEN_TRANSCRIPT: &str = "8de6715b52483d1d128b59f0db1b1c801075815d1275cba9746d606e36068cbb";
const GOLDEN_MAC: &str = "b9ac3d69c0f83f64151792024a12fb9c432c6671ba88df038cc905284a2b2603";
const GOLDEN_XOF: &str = "7e4761af9e42da83b97471f94e1b928f";
const GOLDEN_PRG: u64 = 0xba87_fbe0_7031_d520;

// ---------------------------------------------------------------------------------------------
// The CDT tables.
// ---------------------------------------------------------------------------------------------

/// Pr[|X| > k] for X ~ D_{Z,σ}, k = 0..n, in f64: tail sums taken from the far end, so every
/// value has relative error ~1e-15 even where it is tiny.
fn folded_survival(sigma: f64, n: usize) -> Vec<f64> {
    let far = (40.0 * sigma) as usize + n + 10;
    let rho = |k: usize| (-((k * k) as f64) / (2.0 * sigma * sigma)).exp();
    let total = 1.0 + 2.0 * (1..far).map(rho).sum::<f64>();
    let mut surv = vec![0.0; n + 1];
    let mut acc = 0.0;
    for k in (1..far).rev() {
        acc += 2.0 * rho(k) / total;
        if k - 1 <= n {
            surv[k - 1] = acc;
        }
    }
    surv
}

#[test]
fn cdt_tables_match_the_gaussian() {
    let eta = ((2.0 * (1.0 + 2f64.powi(128))).ln() / std::f64::consts::PI).sqrt()
        / (2.0 * std::f64::consts::PI).sqrt();
    for (width, target) in [
        (Width::E, SIGMA_E),
        (Width::U, SIGMA_U),
        (Width::Star, SIGMA_STAR),
    ] {
        let c = width.construction();
        // The convolution lands exactly on the target σ and every level smooths its lattice:
        // σ_{ℓ−1} ≥ √(1 + k_ℓ²)·η_ε(Z) with ε = 2^−128 (Peikert 2010, Theorem 3.1).
        let mut s = c.base_sigma;
        for k in c.convolution {
            let f = (1.0 + (k * k) as f64).sqrt();
            assert!(s >= f * eta, "{width:?}: level k = {k} not smoothed");
            s *= f;
        }
        assert!((s / target - 1.0).abs() < 1e-12, "{width:?}: σ = {s}");

        let t = c.table;
        let surv = folded_survival(c.base_sigma, t.len());
        let two128 = 2f64.powi(128);
        for (k, &entry) in t.iter().enumerate() {
            let p = entry as f64 / two128;
            assert!(
                (p - surv[k]).abs() <= 1e-12 * surv[k] + 1.0 / two128,
                "{width:?} entry {k}: {p:e} vs {:e}",
                surv[k]
            );
            if k > 0 {
                // Non-increasing; equal neighbours only in σ_U's far tail, where Pr[|X| = k]
                // rounds to 0 (the error is inside the stated (K + 1)·2^−129).
                assert!(entry <= t[k - 1], "{width:?}: table increases at {k}");
                assert!(entry < t[k - 1] || p < 1e-35, "{width:?}: flat at {k}");
            }
        }
        assert!(*t.last().unwrap() > 0);
        // The table stops where the tail is below 2^−128 (all further entries round to 0).
        assert!(
            surv[t.len()] < 1.0 / two128,
            "{width:?}: tail cut too early"
        );
        assert!(surv[t.len() - 1] >= 0.5 / two128);
    }
    // Documented tail cut for σ_E: |x| ≤ 80 = 13.1σ_E.
    assert_eq!(Width::E.max_abs(), 80);
}

// ---------------------------------------------------------------------------------------------
// Gaussian statistics.
// ---------------------------------------------------------------------------------------------

struct Stats {
    n: f64,
    mean: f64,
    var: f64,
    kurtosis: f64,
    beyond_2sigma: f64,
    beyond_3sigma: f64,
}

fn stats(xs: &[i64], sigma: f64) -> Stats {
    let n = xs.len() as f64;
    let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / n;
    let var = xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
    let m4 = xs.iter().map(|&x| (x as f64 - mean).powi(4)).sum::<f64>() / n;
    let frac = |c: f64| xs.iter().filter(|&&x| (x as f64).abs() > c).count() as f64 / n;
    Stats {
        n,
        mean,
        var,
        kurtosis: m4 / (var * var),
        beyond_2sigma: frac(2.0 * sigma),
        beyond_3sigma: frac(3.0 * sigma),
    }
}

fn draw(width: Width, polys: usize, seed: u8) -> Vec<i64> {
    let mut rng = prg(Role::Hu, &[seed; 32], 0);
    (0..polys).flat_map(|_| gaussian(width, &mut rng)).collect()
}

/// Checks mean, variance, kurtosis and the two tail masses against the exact values with
/// tolerances of about 6 standard deviations of each estimator (false alarm < 1e-8 per check;
/// the draws are seeded, so the test is deterministic anyway).
fn check_gaussian(width: Width, xs: &[i64], tail2: f64, tail3: f64) {
    let sigma = width.sigma();
    let s = stats(xs, sigma);
    let n = s.n;
    assert!(
        s.mean.abs() <= 6.0 * sigma / n.sqrt(),
        "{width:?}: mean {}",
        s.mean
    );
    let rel_var = s.var / (sigma * sigma) - 1.0;
    assert!(
        rel_var.abs() <= 6.0 * (2.0 / n).sqrt(),
        "{width:?}: variance off by {rel_var:e}"
    );
    assert!(
        (s.kurtosis - 3.0).abs() <= 6.0 * (96.0 / n).sqrt(),
        "{width:?}: kurtosis {}",
        s.kurtosis
    );
    for (got, want) in [(s.beyond_2sigma, tail2), (s.beyond_3sigma, tail3)] {
        let tol = 6.0 * (want * (1.0 - want) / n).sqrt();
        assert!((got - want).abs() <= tol, "{width:?}: tail {got} vs {want}");
    }
    // Support bound.
    assert!(xs.iter().all(|x| x.abs() <= width.max_abs()));
}

/// χ² statistic of the residues of `xs` modulo `m` against the uniform distribution.
fn chi2_mod(xs: &[i64], m: i64) -> f64 {
    let mut counts = vec![0f64; m as usize];
    for &x in xs {
        counts[x.rem_euclid(m) as usize] += 1.0;
    }
    let e = xs.len() as f64 / m as f64;
    counts.iter().map(|c| (c - e).powi(2) / e).sum()
}

#[test]
fn gaussian_sigma_e_statistics() {
    let xs = draw(Width::E, 4096, 1); // 2^20 samples
                                      // Exact discrete tails: Pr[|X| > 2σ_E] = Pr[|X| ≥ 13], Pr[|X| > 3σ_E] = Pr[|X| ≥ 19].
    let surv = folded_survival(SIGMA_E, 20);
    check_gaussian(Width::E, &xs, surv[12], surv[18]);
    // Not truncated at 2σ as the Go code is: values beyond 4σ occur (expected ≈ 66 of 2^20).
    let far = xs.iter().filter(|&&x| x.abs() > 24).count();
    assert!((20..=140).contains(&far), "beyond 4σ: {far}");
    // Parity is unbiased (σ_E smooths 2Z): χ² with 1 degree of freedom.
    assert!(chi2_mod(&xs, 2) < 30.0);
}

// Continuous tails (σ ≥ 2^27, the discrete correction is below 2^−50):
// erfc(√2) = Pr[|N| > 2σ], erfc(3/√2) = Pr[|N| > 3σ].
const TAIL_2: f64 = 0.045_500_263_896_358_42;
const TAIL_3: f64 = 0.002_699_796_063_260_207;

#[test]
fn gaussian_sigma_u_statistics() {
    let xs = draw(Width::U, 400, 2); // 102,400 samples
    check_gaussian(Width::U, &xs, TAIL_2, TAIL_3);
    // No lattice artefacts: residues mod 16 and mod the last convolution factor (8600) are
    // uniform (χ² within 6 standard deviations of its mean df).
    assert!(chi2_mod(&xs, 16) < 15.0 + 6.0 * 30f64.sqrt());
    assert!(chi2_mod(&xs, 8600) < 8599.0 + 6.0 * (2.0 * 8599f64).sqrt());
}

#[test]
fn gaussian_sigma_star_statistics() {
    let xs = draw(Width::Star, 400, 3);
    check_gaussian(Width::Star, &xs, TAIL_2, TAIL_3);
    assert!(chi2_mod(&xs, 16) < 15.0 + 6.0 * 30f64.sqrt());
    assert!(chi2_mod(&xs, 438) < 437.0 + 6.0 * (2.0 * 437f64).sqrt());
}

/// An RNG that counts the bytes drawn from it.
struct Counting {
    inner: ChaCha20Rng,
    bytes: usize,
}

impl RngCore for Counting {
    fn next_u32(&mut self) -> u32 {
        self.bytes += 4;
        self.inner.next_u32()
    }
    fn next_u64(&mut self) -> u64 {
        self.bytes += 8;
        self.inner.next_u64()
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.bytes += dest.len();
        self.inner.fill_bytes(dest)
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

impl CryptoRng for Counting {}

#[test]
fn gaussian_reads_a_fixed_amount_of_randomness() {
    // Constant-time with respect to the output starts with reading the same bytes whatever
    // comes out: 4 blocks of 64·16 + 8 bytes for σ_E, 16 for σ_U, 64 for σ*.
    for (width, blocks) in [(Width::E, 4), (Width::U, 16), (Width::Star, 64)] {
        for seed in 0..3u8 {
            let mut rng = Counting {
                inner: prg(Role::Hu, &[seed; 32], 9),
                bytes: 0,
            };
            let _ = gaussian(width, &mut rng);
            assert_eq!(rng.bytes, blocks * (64 * 16 + 8), "{width:?}");
        }
    }
}

/// The variable-time sampler for public values (h_u) is the same function of the stream.
#[test]
fn gaussian_public_is_bit_identical_to_gaussian() {
    for width in [Width::E, Width::U, Width::Star] {
        for index in 0..8u64 {
            let a = gaussian(width, &mut prg(Role::Hu, &[4u8; 32], index));
            let b = gaussian_public(width, &mut prg(Role::Hu, &[4u8; 32], index));
            assert_eq!(a, b, "{width:?}");
        }
    }
}

#[test]
fn gaussian_golden_values() {
    let e = gaussian(Width::E, &mut prg(Role::Hu, &[1u8; 32], 0));
    let u = gaussian(Width::U, &mut prg(Role::Hu, &[1u8; 32], 1));
    let s = gaussian(Width::Star, &mut prg(Role::Hu, &[1u8; 32], 2));
    assert_eq!(e[..8], GOLDEN_E, "{:?}", &e[..8]);
    assert_eq!(u[..4], GOLDEN_U, "{:?}", &u[..4]);
    assert_eq!(s[..4], GOLDEN_STAR, "{:?}", &s[..4]);
}

const GOLDEN_E: [i64; 8] = [0, 1, 2, -1, -6, 6, 12, 4];
const GOLDEN_U: [i64; 4] = [-171_432_616, 270_646, 103_368_630, -317_449_077];
const GOLDEN_STAR: [i64; 4] = [
    103_975_930_988,
    -24_482_705_395,
    50_634_779_625,
    137_462_005_248,
];

// ---------------------------------------------------------------------------------------------
// Uniform mod q.
// ---------------------------------------------------------------------------------------------

#[test]
fn uniform_is_in_range_and_roughly_uniform() {
    let seed = [0x42u8; 32];
    let xs: Vec<u64> = (0..1000u64)
        .flat_map(|i| uniform(&mut xof(Role::ExpandA, &seed, i)))
        .collect();
    assert!(xs.iter().all(|&x| x < Q));
    let n = xs.len() as f64;
    let q = Q as f64;
    let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / n;
    assert!((mean - q / 2.0).abs() <= 6.0 * q / (12.0 * n).sqrt());
    // 16 equal buckets of [0, q): χ² with 15 degrees of freedom.
    let mut counts = [0f64; 16];
    for &x in &xs {
        counts[((x as u128 * 16) / Q as u128) as usize] += 1.0;
    }
    let e = n / 16.0;
    let chi2: f64 = counts.iter().map(|c| (c - e).powi(2) / e).sum();
    assert!(chi2 < 15.0 + 6.0 * 30f64.sqrt(), "χ² = {chi2}");
    // Values at both ends of the range occur with 2^−8-wide windows.
    assert!(xs.iter().any(|&x| x < Q >> 8) && xs.iter().any(|&x| x > Q - (Q >> 8)));
}

#[test]
fn uniform_rejects_values_at_or_above_q() {
    // A stream whose first candidates are 2^49 − 1, q and q − 1 (7-byte little-endian words):
    // the first two are rejected, q − 1 is the first coefficient.
    struct Script(Vec<u8>, usize);
    impl RngCore for Script {
        fn next_u32(&mut self) -> u32 {
            unimplemented!()
        }
        fn next_u64(&mut self) -> u64 {
            unimplemented!()
        }
        fn fill_bytes(&mut self, d: &mut [u8]) {
            for b in d {
                *b = self.0.get(self.1).copied().unwrap_or(0);
                self.1 += 1;
            }
        }
        fn try_fill_bytes(&mut self, d: &mut [u8]) -> Result<(), rand::Error> {
            self.fill_bytes(d);
            Ok(())
        }
    }
    let mut bytes = Vec::new();
    for v in [(1u64 << 49) - 1, Q, Q - 1, 0xff00_0000_0000_0005] {
        bytes.extend_from_slice(&v.to_le_bytes()[..7]);
    }
    let mut s = Script(bytes, 0);
    let p = uniform(&mut s);
    assert_eq!(p[0], Q - 1);
    // The high byte 0xff is dropped (only 7 bytes are read) and bit 48 of 0x00_0000_0000_0005
    // is clear: the masked value 5 is accepted.
    assert_eq!(p[1], 5);
}

#[test]
fn uniform_golden_values() {
    let p = uniform(&mut xof(Role::ExpandA, &[0x42u8; 32], 0));
    assert_eq!(p[..4], GOLDEN_UNIFORM, "{:?}", &p[..4]);
}

const GOLDEN_UNIFORM: [u64; 4] = [
    278_227_782_857_835,
    71_847_128_236_538,
    226_803_820_106_552,
    135_133_768_915_095,
];

// ---------------------------------------------------------------------------------------------
// Challenge.
// ---------------------------------------------------------------------------------------------

#[test]
fn challenge_has_weight_23_and_uniform_positions_and_signs() {
    let trials = 10_000u32;
    let mut per_position = [0f64; DEGREE];
    let mut plus = 0f64;
    for i in 0..trials {
        let seed = hash(Role::Challenge, &[&i.to_le_bytes()]);
        let c = challenge(&seed);
        assert_eq!(c.iter().filter(|&&x| x != 0).count(), KAPPA);
        assert!(c.iter().all(|&x| (-1..=1).contains(&x)));
        for (j, &x) in c.iter().enumerate() {
            if x != 0 {
                per_position[j] += 1.0;
            }
            if x == 1 {
                plus += 1.0;
            }
        }
    }
    // Positions: each is nonzero with probability 23/256; χ² over 256 positions (255 df).
    let e = trials as f64 * KAPPA as f64 / DEGREE as f64;
    let chi2: f64 = per_position.iter().map(|c| (c - e).powi(2) / e).sum();
    assert!(chi2 < 255.0 + 6.0 * 510f64.sqrt(), "χ² = {chi2}");
    // Signs: half of the 230,000 nonzero coefficients are +1.
    let total = trials as f64 * KAPPA as f64;
    assert!((plus - total / 2.0).abs() <= 6.0 * (total / 4.0).sqrt());
}

#[test]
fn challenge_golden_values() {
    let c = challenge(&[9u8; 32]);
    let support: Vec<(usize, i8)> = c
        .iter()
        .enumerate()
        .filter(|(_, &x)| x != 0)
        .map(|(i, &x)| (i, x))
        .collect();
    assert_eq!(format!("{support:?}"), GOLDEN_CHALLENGE);
    // Deterministic in the seed, different for another seed.
    assert_eq!(challenge(&[9u8; 32]), c);
    assert_ne!(challenge(&[10u8; 32]), c);
}

const GOLDEN_CHALLENGE: &str = "[(26, -1), (33, -1), (48, -1), (51, -1), (64, 1), (67, -1), \
    (89, -1), (96, -1), (104, -1), (105, 1), (107, 1), (115, 1), (132, 1), (157, 1), (174, 1), \
    (176, -1), (179, 1), (184, -1), (188, -1), (201, 1), (221, -1), (235, 1), (255, 1)]";
