//! Replicated short secret sharing (the sharing of "Threshold Signatures Reloaded", ePrint
//! 2025/1166): the secret (s1, s2) is a sum of one short share per subset U ⊆ {0..n−1} of size
//! n − t + 1, and party i holds the shares of every U that contains it. Any t parties S meet
//! every such U (|S| + |U| = n + 1 > n), so together they hold every share; no t − 1 parties
//! do (the complement of t − 1 parties has n − t + 1 members, and that U's share is missing).
//!
//! A signing set S splits the shares among its members so that each share is used by exactly
//! one of them and no member adds up more than ⌈C(n, t−1)/t⌉ shares (the bound the radii of
//! params.rs assume): a balanced assignment, found by bipartite matching with that capacity.
//! Every member computes the same assignment from S alone.

/// A subset of parties as a bit mask (bit i = party i).
pub type Mask = u16;

/// The share subsets of a t-of-n key: every mask with n − t + 1 bits among the low n bits, in
/// increasing order.
pub fn share_subsets(threshold: usize, parties: usize) -> Vec<Mask> {
    let size = (parties + 1).saturating_sub(threshold) as u32;
    (0..(1u32 << parties))
        .filter(|m| m.count_ones() == size)
        .map(|m| m as Mask)
        .collect()
}

/// For a signing set (exactly t distinct parties, increasing), the signer that uses each share
/// subset: `result[j]` is the signer for `share_subsets(t, n)[j]`. Each subset goes to one of
/// its members in the set, and no signer gets more than ⌈C(n, t−1)/t⌉ subsets. `None` if no
/// such assignment exists (it always does for n ≤ 6: the tests try every set).
pub fn assign(threshold: usize, parties: usize, signers: &[u16]) -> Option<Vec<u16>> {
    let subsets = share_subsets(threshold, parties);
    let capacity = subsets.len().div_ceil(signers.len().max(1));
    // owner[j] = index into `signers` of the signer that uses subset j.
    let mut owner: Vec<Option<usize>> = vec![None; subsets.len()];
    let mut load = vec![0usize; signers.len()];
    for j in 0..subsets.len() {
        let mut visited = vec![false; signers.len()];
        if !augment(
            j,
            &subsets,
            signers,
            capacity,
            &mut owner,
            &mut load,
            &mut visited,
        ) {
            return None;
        }
    }
    owner
        .into_iter()
        .map(|o| o.and_then(|k| signers.get(k).copied()))
        .collect()
}

/// Kuhn's augmenting path: gives subset `j` a signer, moving earlier subsets if needed.
fn augment(
    j: usize,
    subsets: &[Mask],
    signers: &[u16],
    capacity: usize,
    owner: &mut [Option<usize>],
    load: &mut [usize],
    visited: &mut [bool],
) -> bool {
    let Some(&mask) = subsets.get(j) else {
        return false;
    };
    for (k, &party) in signers.iter().enumerate() {
        if mask & (1 << party) == 0 || visited.get(k).copied().unwrap_or(true) {
            continue;
        }
        if let Some(v) = visited.get_mut(k) {
            *v = true;
        }
        if load.get(k).is_some_and(|&l| l < capacity) {
            if let (Some(o), Some(l)) = (owner.get_mut(j), load.get_mut(k)) {
                *o = Some(k);
                *l += 1;
            }
            return true;
        }
        // Signer k is full: try to move one of its subsets elsewhere.
        let held: Vec<usize> = (0..owner.len())
            .filter(|&i| owner.get(i).copied().flatten() == Some(k))
            .collect();
        for other in held {
            if let Some(o) = owner.get_mut(other) {
                *o = None;
            }
            if let Some(l) = load.get_mut(k) {
                *l -= 1;
            }
            if augment(other, subsets, signers, capacity, owner, load, visited) {
                if let (Some(o), Some(l)) = (owner.get_mut(j), load.get_mut(k)) {
                    *o = Some(k);
                    *l += 1;
                }
                return true;
            }
            if let (Some(o), Some(l)) = (owner.get_mut(other), load.get_mut(k)) {
                *o = Some(k);
                *l += 1;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pulsar::params::{binomial, MAX_PARTIES};

    #[test]
    fn every_signing_set_of_every_shape_gets_a_balanced_assignment() {
        for n in 2..=MAX_PARTIES {
            for t in 2..=n {
                let subsets = share_subsets(t, n);
                assert_eq!(subsets.len(), binomial(n, t - 1));
                let capacity = subsets.len().div_ceil(t);
                for set in 0u32..(1 << n) {
                    if set.count_ones() as usize != t {
                        continue;
                    }
                    let signers: Vec<u16> = (0..n as u16).filter(|i| set & (1 << i) != 0).collect();
                    let owners = assign(t, n, &signers).expect("an assignment exists");
                    for (mask, owner) in subsets.iter().zip(&owners) {
                        assert!(
                            mask & (1 << owner) != 0,
                            "a share goes to one of its holders"
                        );
                    }
                    for s in &signers {
                        assert!(owners.iter().filter(|o| *o == s).count() <= capacity);
                    }
                }
            }
        }
    }

    #[test]
    fn fewer_than_t_parties_miss_a_share() {
        for n in 2..=MAX_PARTIES {
            for t in 2..=n {
                let subsets = share_subsets(t, n);
                for set in 0u16..(1 << n) {
                    if set.count_ones() as usize == t - 1 {
                        assert!(subsets.iter().any(|u| u & set == 0));
                    }
                }
            }
        }
    }
}
