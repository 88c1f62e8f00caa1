//! Linear algebra over GF(2) with vectors packed in `u64` (bit i = coordinate i): rank, reduced
//! row echelon bases, row-space equality, nullspaces and solving. Set-index and slice functions of
//! seed 000 (appendix "The L1 set function", footnote 4) are XOR masks, i.e. rows of a GF(2)
//! matrix; two mask lists describe the same partition exactly when their row spaces are equal.

/// Parity (XOR of all bits) of `x`: the value of mask `m` at address `a` is `parity(m & a)`.
pub fn parity(x: u64) -> u8 {
    (x.count_ones() & 1) as u8
}

/// Apply the matrix whose rows are `rows` to `x`: bit i of the result is `parity(rows[i] & x)`.
pub fn apply(rows: &[u64], x: u64) -> u64 {
    rows.iter().enumerate().fold(0u64, |acc, (i, r)| acc | (u64::from(parity(r & x)) << i))
}

/// Reduced row echelon form of the span of `rows`: the nonzero basis vectors, each with a distinct
/// pivot (its highest set bit) that no other basis vector has set, sorted by pivot, highest first.
/// The result is unique for a given row space, so it is a canonical form. Cost: O(64 * n).
pub fn rref(rows: &[u64]) -> Vec<u64> {
    // Build an echelon basis indexed by pivot bit.
    let mut by_pivot: [u64; 64] = [0; 64];
    for &r in rows {
        let mut v = r;
        while v != 0 {
            let p = 63 - v.leading_zeros() as usize;
            if by_pivot[p] == 0 {
                by_pivot[p] = v;
                break;
            }
            v ^= by_pivot[p];
        }
    }
    // Back-substitute so every pivot column is clear in all other rows (lowest pivots first).
    for p in 0..64 {
        if by_pivot[p] == 0 {
            continue;
        }
        for q in (p + 1)..64 {
            if by_pivot[q] >> p & 1 == 1 {
                by_pivot[q] ^= by_pivot[p];
            }
        }
    }
    (0..64).rev().filter(|&p| by_pivot[p] != 0).map(|p| by_pivot[p]).collect()
}

/// Dimension of the span of `rows`.
pub fn rank(rows: &[u64]) -> usize {
    rref(rows).len()
}

/// Reduce `v` by an echelon basis (as returned by `rref`): zero exactly when `v` is in the span.
pub fn reduce(basis: &[u64], v: u64) -> u64 {
    let mut v = v;
    for &b in basis {
        let p = 63 - b.leading_zeros();
        if v >> p & 1 == 1 {
            v ^= b;
        }
    }
    v
}

/// Whether `v` lies in the span of `rows`.
pub fn in_span(rows: &[u64], v: u64) -> bool {
    reduce(&rref(rows), v) == 0
}

/// Whether two lists of vectors span the same space (masks equal up to change of basis).
pub fn same_row_space(a: &[u64], b: &[u64]) -> bool {
    rref(a) == rref(b)
}

/// A basis of the nullspace of `rows` inside the coordinates of `support`: every vector `x` with
/// `x & !support == 0` and `parity(r & x) == 0` for every row `r`. Returned in reduced echelon form.
pub fn nullspace(rows: &[u64], support: u64) -> Vec<u64> {
    // Restrict the rows to the support, then take the echelon form with pivots; free columns are
    // the support coordinates that are not pivots.
    let restricted: Vec<u64> = rows.iter().map(|r| r & support).collect();
    let basis = rref(&restricted);
    let pivots: u64 = basis.iter().fold(0, |acc, b| acc | 1u64 << (63 - b.leading_zeros()));
    let mut out = Vec::new();
    for f in 0..64 {
        if support >> f & 1 == 0 || pivots >> f & 1 == 1 {
            continue;
        }
        // x = e_f + sum over pivot rows whose row has bit f set: pivot coordinate of that row.
        let mut x = 1u64 << f;
        for &b in &basis {
            if b >> f & 1 == 1 {
                x |= 1u64 << (63 - b.leading_zeros());
            }
        }
        out.push(x);
    }
    rref(&out)
}

/// Solve `parity(rows[i] & x) == bit i of rhs` for all i. Returns one solution (the one with all
/// free coordinates zero), or `None` when the system is inconsistent.
pub fn solve(rows: &[u64], rhs: u64) -> Option<u64> {
    solve_equations(rows.iter().enumerate().map(|(i, &r)| (r, rhs >> i & 1 == 1))).map(|(x, _)| x)
}

/// Solve any number of equations `parity(row & x) == bit`: the solution with all free coordinates
/// zero and the rank of the system (independent equations), or `None` when it is inconsistent.
pub fn solve_equations(eqs: impl IntoIterator<Item = (u64, bool)>) -> Option<(u64, usize)> {
    let mut pivot_rows: Vec<(u64, u8)> = Vec::new();
    for (mut r, bit) in eqs {
        let mut b = bit as u8;
        for &(pr, pb) in &pivot_rows {
            let p = 63 - pr.leading_zeros();
            if r >> p & 1 == 1 {
                r ^= pr;
                b ^= pb;
            }
        }
        if r == 0 {
            if b != 0 {
                return None;
            }
            continue;
        }
        let p = 63 - r.leading_zeros();
        for (pr, pb) in pivot_rows.iter_mut() {
            if *pr >> p & 1 == 1 {
                *pr ^= r;
                *pb ^= b;
            }
        }
        pivot_rows.push((r, b));
    }
    // Fully reduced: each pivot appears only in its own row, so x = sum of pivots with rhs 1.
    let x = pivot_rows.iter().filter(|(_, b)| *b == 1).fold(0, |acc, (r, _)| acc | 1u64 << (63 - r.leading_zeros()));
    Some((x, pivot_rows.len()))
}

/// Parse a hex mask ("0x76a990400" or "76a990400").
pub fn parse_mask(text: &str) -> Option<u64> {
    let t = text.trim();
    let t = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")).unwrap_or(t);
    u64::from_str_radix(t, 16).ok()
}

/// Format a mask as the hex string of docs/CONTRACTS.md ("0x76a990400").
pub fn format_mask(m: u64) -> String {
    format!("{m:#x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn solve_equations_takes_more_than_64_equations_and_reports_the_rank() {
        // 200 equations over bits 0..16 from a known x: the rank is 16 and x comes back exactly.
        let x = 0b1010_0110_0011_0101u64;
        let rows: Vec<u64> = (1..=200u64).map(|i| (i.wrapping_mul(0x9e37_79b9)) & 0xffff).collect();
        let eqs = rows.iter().map(|&r| (r, parity(r & x) == 1));
        assert_eq!(solve_equations(eqs), Some((x, 16)));
        // One flipped right-hand side past the 64th equation makes the system inconsistent.
        let flipped = rows.iter().enumerate().map(|(i, &r)| (r, (parity(r & x) == 1) ^ (i == 150)));
        assert_eq!(solve_equations(flipped), None);
    }

    #[test]
    fn hand_checked() {
        assert_eq!(parity(0b1011), 1);
        assert_eq!(rank(&[0b011, 0b110, 0b101]), 2);
        assert_eq!(rref(&[0b011, 0b110]), vec![0b101, 0b011]);
        assert!(same_row_space(&[0b011, 0b110], &[0b101, 0b011]));
        assert!(!same_row_space(&[0b011], &[0b101]));
        assert_eq!(nullspace(&[0b011], 0b111), vec![0b100, 0b011]);
        assert_eq!(apply(&[0b011, 0b110], solve(&[0b011, 0b110], 0b01).unwrap()), 0b01);
        assert_eq!(solve(&[0b011, 0b011], 0b01), None);
        assert_eq!(parse_mask("0x76a990400"), Some(0x76a990400));
        assert_eq!(format_mask(0x76a990400), "0x76a990400");
    }

    proptest! {
        #[test]
        fn rref_spans_the_same_space(rows in proptest::collection::vec(any::<u64>(), 0..12)) {
            let b = rref(&rows);
            for &r in &rows { prop_assert_eq!(reduce(&b, r), 0); }
            prop_assert!(b.len() <= rows.len());
            // Pivots distinct and clear in the other rows.
            for (i, &x) in b.iter().enumerate() {
                let p = 63 - x.leading_zeros();
                for (j, &y) in b.iter().enumerate() {
                    if i != j { prop_assert_eq!(y >> p & 1, 0); }
                }
            }
            prop_assert_eq!(rref(&b), b.clone());
        }

        #[test]
        fn change_of_basis_keeps_row_space(rows in proptest::collection::vec(any::<u64>(), 1..10),
                                           mix in proptest::collection::vec(any::<u16>(), 1..10)) {
            // Random combinations of the rows span a subspace; adding the rows back gives the span.
            let combos: Vec<u64> = mix.iter().map(|m| rows.iter().enumerate()
                .filter(|(i, _)| m >> (i % 16) & 1 == 1).fold(0, |a, (_, r)| a ^ r)).collect();
            let mut all = combos.clone();
            all.extend_from_slice(&rows);
            prop_assert!(same_row_space(&all, &rows));
            prop_assert!(rank(&combos) <= rank(&rows));
        }

        #[test]
        fn nullspace_is_orthogonal_and_complete(rows in proptest::collection::vec(any::<u64>(), 0..10),
                                                support in any::<u64>()) {
            let ns = nullspace(&rows, support);
            for &x in &ns {
                prop_assert_eq!(x & !support, 0);
                for &r in &rows { prop_assert_eq!(parity(r & x), 0); }
            }
            let restricted: Vec<u64> = rows.iter().map(|r| r & support).collect();
            prop_assert_eq!(ns.len() + rank(&restricted), support.count_ones() as usize);
            // The annihilator of the nullspace is the restricted row space.
            prop_assert!(same_row_space(&nullspace(&ns, support), &restricted));
        }

        #[test]
        fn solve_finds_a_solution_when_one_exists(rows in proptest::collection::vec(any::<u64>(), 0..10),
                                                  x in any::<u64>()) {
            let rhs = apply(&rows, x);
            let y = solve(&rows, rhs).expect("consistent by construction");
            prop_assert_eq!(apply(&rows, y), rhs);
        }
    }
}
