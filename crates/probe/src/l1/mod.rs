//! The L1 probes (seed 000 footnotes 2-4 and appendix "The L1 set function"): `line` (line and
//! sector size), `ways_sets` (a minimal eviction set, the associativity and the set count),
//! `index_masks` (the set-index function as XOR masks), `aliasing` (virtual or physical indexing
//! of L1 and L2 through one allocation mapped twice).

pub mod aliasing;
pub mod index_masks;
pub mod line;
pub mod ways_sets;
