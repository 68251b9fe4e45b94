//! The row checks of the acceleration seam: the branch-free scan that accepts a batch agrees
//! with a plain comparison against q, at the edges where its arithmetic could go wrong (q − 1,
//! q, the next power of two, and the values whose offset sum wraps past 2^64) and on random
//! values.

use proptest::prelude::*;
use quasar_crypto::accel::{all_canonical, check_row, AccelError, NttClass};

fn edges(class: NttClass) -> Vec<u64> {
    let q = class.modulus();
    let bits = u64::BITS - (q - 1).leading_zeros();
    let offset = (1u64 << bits) - q;
    vec![
        0,
        1,
        q - 1,
        q,
        q + 1,
        (1 << bits) - 1,
        1 << bits,
        u64::MAX - offset,
        u64::MAX - offset + 1,
        u64::MAX,
        1 << 63,
    ]
}

#[test]
fn the_scan_agrees_with_a_comparison_at_the_edges() {
    for class in NttClass::ALL {
        let q = class.modulus();
        for v in edges(class) {
            assert_eq!(all_canonical(class, &[v]), v < q, "{class:?} {v}");
            // In a longer row, at every position of a vector's width.
            for position in 0..9 {
                let mut row = vec![q - 1; 9];
                row[position] = v;
                assert_eq!(
                    all_canonical(class, &row),
                    v < q,
                    "{class:?} {v} at {position}"
                );
                let expected = if v < q {
                    Ok(())
                } else {
                    Err(AccelError::CoefficientOutOfRange {
                        row: 2,
                        index: position,
                        value: v,
                        modulus: q,
                    })
                };
                assert_eq!(check_row(class, 2, &row), expected);
            }
        }
        assert!(all_canonical(class, &[]));
    }
}

proptest! {
    #[test]
    fn the_scan_agrees_with_a_comparison(values in prop::collection::vec(any::<u64>(), 0..40), near in 0u64..1 << 50) {
        for class in NttClass::ALL {
            let q = class.modulus();
            let mut values = values.clone();
            values.push(near);
            prop_assert_eq!(all_canonical(class, &values), values.iter().all(|&v| v < q));
            let small: Vec<u64> = values.iter().map(|v| v % (2 * q)).collect();
            prop_assert_eq!(all_canonical(class, &small), small.iter().all(|&v| v < q));
        }
    }
}
