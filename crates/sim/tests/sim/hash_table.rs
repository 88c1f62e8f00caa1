//! Property test: the Rust slice and set functions against the table that seed 000's own Python
//! (copied verbatim into tests/gen_hash_table.py) produced: tests/data/hash_table.csv.

use memscope_sim::hash::{set_index, slice_of};

#[test]
fn rust_hash_functions_match_the_seeds_python() {
    let table = include_str!("../data/hash_table.csv");
    let mut n = 0;
    for line in table.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let a = u64::from_str_radix(f[0].trim_start_matches("0x"), 16).unwrap();
        let want: Vec<u32> = f[1..].iter().map(|x| x.parse().unwrap()).collect();
        assert_eq!(slice_of(a, 36), Some(want[0]), "slice_of({a:#x}, 36)");
        assert_eq!(slice_of(a, 48), Some(want[1]), "slice_of({a:#x}, 48)");
        assert_eq!(set_index(a), want[2], "set_index({a:#x})");
        n += 1;
    }
    assert!(n > 4000, "table has {n} rows");
}

#[test]
fn python_regenerates_the_same_table_when_available() {
    // The committed table must be what the committed script prints (skipped without python3).
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let Ok(out) = std::process::Command::new("python3").arg(dir.join("gen_hash_table.py")).output() else { return };
    if !out.status.success() {
        return;
    }
    assert_eq!(String::from_utf8_lossy(&out.stdout), include_str!("../data/hash_table.csv"));
}
