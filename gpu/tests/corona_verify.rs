//! Corona verification with its NTTs on the adapter (issue 9's "Corona verify runs through the
//! adapter"): the same verdicts through a dispatcher in front of the SIMD CPU backend as on the
//! CPU reference, for a valid signature, another message and a tampered signature; a backend
//! that cannot do Corona's ring gives an arithmetic error, never a verdict.

use std::sync::Arc;
use std::time::Duration;

use quasar_crypto::accel::{AccelError, BatchArithmetic, NttClass, RowResults, Workload};
use quasar_crypto::corona::local::sign_in_process;
use quasar_crypto::corona::scheme::{
    trusted_dealer_keygen, SessionId, Signature, Signer, VerifyError,
};
use quasar_gpu::{DispatchConfig, Dispatcher, SimdCpuBackend};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// A backend with no kernels at all.
struct Empty;

impl BatchArithmetic for Empty {
    fn name(&self) -> &'static str {
        "empty"
    }

    fn forward_ntt(&self, class: NttClass, _: &mut [u64]) -> Result<RowResults, AccelError> {
        Err(AccelError::Unsupported {
            backend: "empty",
            workload: Workload::Ntt(class),
        })
    }

    fn inverse_ntt(&self, class: NttClass, rows: &mut [u64]) -> Result<RowResults, AccelError> {
        self.forward_ntt(class, rows)
    }

    fn pointwise_mul(
        &self,
        class: NttClass,
        lhs: &mut [u64],
        _: &[u64],
    ) -> Result<RowResults, AccelError> {
        self.forward_ntt(class, lhs)
    }
}

#[test]
fn corona_verdicts_through_the_adapter_equal_the_reference() {
    let mut rng = ChaCha20Rng::seed_from_u64(42);
    let (group, shares) = trusted_dealer_keygen(2, 3, &mut rng).unwrap();
    let mut signers: Vec<Signer> = shares.into_iter().map(Signer::new).collect();
    let signature = sign_in_process(
        &group,
        &mut signers,
        &[0, 2],
        SessionId([9; 32]),
        b"bundle",
        &mut rng,
    )
    .unwrap();
    // A flipped bit in the middle of z's encoding: still a canonical encoding, another z.
    let mut tampered = signature.to_bytes();
    let middle = tampered.len() / 2;
    tampered[middle] ^= 1;
    let tampered = Signature::from_bytes(&tampered).expect("still decodes");

    let dispatcher = Dispatcher::new(
        Arc::new(SimdCpuBackend::new()),
        DispatchConfig {
            max_batch_rows: 16,
            deadline: Duration::from_micros(100),
        },
    );
    assert_eq!(group.verify_on(&dispatcher, b"bundle", &signature), Ok(()));
    assert_eq!(
        group.verify_on(&dispatcher, b"another", &signature),
        group.verify(b"another", &signature)
    );
    assert!(group.verify(b"another", &signature).is_err());
    let reference = group.verify(b"bundle", &tampered);
    assert!(reference.is_err());
    assert_eq!(
        group.verify_on(&dispatcher, b"bundle", &tampered),
        reference
    );
    let used: u64 = dispatcher.stats().iter().map(|(_, s)| s.requests).sum();
    assert!(
        used >= 4,
        "the NTTs went through the dispatcher ({used} requests)"
    );

    assert!(matches!(
        group.verify_on(&Empty, b"bundle", &signature),
        Err(VerifyError::Arithmetic(AccelError::Unsupported { .. }))
    ));
    // Behind a dispatcher the same backend costs a fallback, not a verdict.
    let fallback = Dispatcher::new(Arc::new(Empty), DispatchConfig::default());
    assert_eq!(group.verify_on(&fallback, b"bundle", &signature), Ok(()));
}
