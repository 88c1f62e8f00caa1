//! The simulated-hierarchy JSON of docs/CONTRACTS.md: presets round-trip, its example parses, and
//! invalid files are rejected with the offending field named.

use memscope_sim::hierarchy::Hierarchy;
use memscope_sim::{presets, SimTarget};

const DESIGN_EXAMPLE: &str = r#"
    {"name": "example", "clock_hz": 2.6e9, "page_bytes": 2097152,
     "tlb":  {"entries": 16, "miss_ns": 4.4, "replacement": "lru"},
     "l1":   {"ways": 4, "sets": 256, "line_bytes": 128, "sector_bytes": 32,
              "index_masks": ["0x80", "0x100", "0x200", "0x400", "0x800", "0x1000", "0x2000", "0x4000"],
              "indexing": "virtual", "replacement": "lru", "hit_ns": 15.4},
     "l2":   {"slices": 36, "ways": 16, "sets_per_slice": 1024, "line_bytes": 128,
              "slice_function": "rtx4090", "set_function": "rtx4090",
              "indexing": "physical", "replacement": "rrip", "hit_ns": 127.4},
     "dram": {"latency_ns": 255.4, "row_bytes": 1024, "refresh_stall_ns": 210,
              "refresh_fraction": 0.02},
     "noise": {"jitter_ns": 0.0, "outlier_fraction": 0.0, "seed": 1}}"#;

#[test]
fn presets_round_trip_through_json() {
    for name in memscope_sim::presets() {
        let h = presets::preset(name).unwrap();
        let text = h.to_json_pretty();
        assert_eq!(Hierarchy::from_json_str(&text).unwrap(), h, "{name}");
        SimTarget::new(h).unwrap();
    }
}

#[test]
fn the_design_example_parses_and_xor_masks_work() {
    let h = Hierarchy::from_json_str(DESIGN_EXAMPLE).unwrap();
    assert_eq!(h.l1.index_masks.len(), 8);
    assert_eq!(h.dram.controllers, 1); // default
    SimTarget::new(h).unwrap();
    let plain = DESIGN_EXAMPLE
        .replace(r#""slice_function": "rtx4090""#, r#""slice_function": {"masks": ["0x20000", "0x40000", "0x80000", "0x100000", "0x200000"]}"#)
        .replace(r#""slices": 36"#, r#""slices": 32"#)
        .replace(r#""set_function": "rtx4090""#, r#""set_function": {"masks": ["0x80","0x100","0x200","0x400","0x800","0x1000","0x2000","0x4000","0x8000","0x10000"]}"#);
    Hierarchy::from_json_str(&plain).unwrap();
}

fn bad(edit: (&str, &str)) -> String {
    assert!(DESIGN_EXAMPLE.contains(edit.0), "{}", edit.0);
    Hierarchy::from_json_str(&DESIGN_EXAMPLE.replace(edit.0, edit.1)).unwrap_err().to_string()
}

#[test]
fn invalid_files_name_the_field() {
    let cases: &[((&str, &str), &str)] = &[
        ((r#""ways": 4"#, r#""ways": 0"#), "l1.ways"),
        ((r#""entries": 16"#, r#""entries": 16, "colour": 1"#), "tlb.colour"),
        ((r#""name": "example""#, r#""name": "example", "extra": 1"#), "extra"),
        ((r#""0x4000""#, r#""0x40000000000""#), "l1.index_masks[7]"),
        ((r#""0x4000""#, r#""0x2000""#), "l1.index_masks"),
        ((r#""sets": 256"#, r#""sets": 512"#), "l1.index_masks"),
        ((r#""sets": 256"#, r#""sets": 300"#), "l1.sets"),
        ((r#""slices": 36"#, r#""slices": 32"#), "l2.slices"),
        ((r#""sets_per_slice": 1024"#, r#""sets_per_slice": 512"#), "l2.sets_per_slice"),
        ((r#""hit_ns": 127.4"#, r#""hit_ns": "slow""#), "l2.hit_ns"),
        ((r#""replacement": "rrip""#, r#""replacement": "plru""#), "l2.replacement"),
        ((r#""refresh_fraction": 0.02"#, r#""refresh_fraction": 2"#), "dram.refresh_fraction"),
        ((r#""row_bytes": 1024"#, r#""row_bytes": 1000"#), "dram.row_bytes"),
        ((r#""latency_ns": 255.4, "#, ""), "dram.latency_ns"),
        ((r#""page_bytes": 2097152"#, r#""page_bytes": 3"#), "page_bytes"),
        ((r#""slice_function": "rtx4090""#, r#""slice_function": "h100""#), "l2.slice_function"),
    ];
    for (edit, field) in cases {
        let msg = bad(*edit);
        assert!(msg.starts_with(&format!("{field}:")), "{edit:?}: {msg}");
    }
}

#[test]
fn a_bad_file_is_a_target_error_naming_the_field() {
    let dir = std::env::temp_dir().join(format!("memscope-sim-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.json");
    std::fs::write(&f, DESIGN_EXAMPLE.replace(r#""ways": 16"#, r#""ways": 0"#)).unwrap();
    let e = SimTarget::from_json_file(&f).err().unwrap().to_string();
    assert!(e.contains("l2.ways"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}
