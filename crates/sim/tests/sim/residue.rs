//! The residue slice function (`{"residue": {...}}`, memscope_sim::hash_residue; the H200's
//! measured form, docs/L2_SLICES.md): it parses from the hierarchy JSON, every bad field is named,
//! and a simulated L2 with it sends each line to the slice the function names (the per-slice
//! request counts an ncu slice counter would give, against the function on the lines' physical
//! addresses), with a frame function as well as without.

use memscope_core::{CachePath, ChaseSpec, Target};
use memscope_sim::hash_h200::{h200_function, parse_share};
use memscope_sim::hash_residue::{FrameShare, Residue};
use memscope_sim::hierarchy::{HashFunction, Hierarchy, Mask};
use memscope_sim::SimTarget;

fn h200_like(residue: Residue) -> Hierarchy {
    let mut h = Hierarchy::default();
    h.l2.slices = residue.slices() as u32;
    h.l2.partitions = 2;
    h.l2.far_hit_ns = Some(246.0);
    h.sm.count = 132;
    h.l2.sets_per_slice = 326;
    h.l2.set_function = HashFunction::Modular { divisor_bytes: 128, modulo: 326 };
    h.l2.slice_function = HashFunction::Residue { residue };
    h
}

fn h200() -> Residue {
    h200_function(parse_share("0x3e4:38:0").unwrap())
}

#[test]
fn the_json_form_parses_and_bad_fields_are_named() {
    let h = h200_like(h200());
    h.validate().unwrap();
    let text = h.to_json_pretty();
    assert!(text.contains("\"residue\"") && text.contains("\"0xab000\""), "{text}");
    assert_eq!(Hierarchy::from_json_str(&text).unwrap().l2.slice_function, h.l2.slice_function);
    let field = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        edit(&mut v);
        Hierarchy::from_json_str(&v.to_string()).unwrap_err().to_string()
    };
    let e = field(&|v| v["l2"]["slice_function"]["residue"]["modulus"] = 0.into());
    assert!(e.starts_with("l2.slice_function.residue.modulus"), "{e}");
    let e = field(&|v| v["l2"]["slice_function"]["residue"]["terms"][2]["weight"] = 47.into());
    assert!(e.starts_with("l2.slice_function.residue.terms[2].weight"), "{e}");
    let e = field(&|v| v["l2"]["slice_function"]["residue"]["share"]["constant"] = 50.into());
    assert!(e.starts_with("l2.slice_function.residue.share.constant"), "{e}");
    let e = field(&|v| v["l2"]["slices"] = 96.into());
    assert!(e.starts_with("l2.slices") && e.contains("94"), "{e}");
    let e = field(&|v| v["l2"]["set_function"] = v["l2"]["slice_function"].clone());
    assert!(e.starts_with("l2.set_function"), "{e}");
    let e = field(&|v| v["l2"]["slice_function"]["residue"]["frame"] = serde_json::json!({"flip_masks": ["0x1"]}));
    assert!(e.starts_with("l2.slice_function.residue.frame.flip_masks"), "{e}");
}

/// Per-slice L2 requests of a chase over `lines` lines of one buffer placed at physical
/// `phys_base`, and the same counts from the function on the lines' physical addresses.
fn counts(h: Hierarchy, phys_base: u64, lines: u64) -> (Vec<u64>, Vec<u64>) {
    let mut t = SimTarget::new(h).unwrap();
    let f = match &t.hierarchy().l2.slice_function {
        HashFunction::Residue { residue } => residue.clone(),
        other => panic!("{other:?}"),
    };
    let buf = t.alloc_contiguous(lines * 128, phys_base).unwrap();
    let addrs: Vec<u64> = (0..lines).map(|i| buf.base + i * 128).collect();
    let mut want = vec![0u64; f.slices() as usize];
    for &a in &addrs {
        want[f.slice_index(t.physical_address(a).unwrap()) as usize] += 1;
    }
    let mut spec = ChaseSpec::new(addrs, CachePath::L1Bypass, lines);
    spec.repeats = 1;
    t.machine().reset_stats();
    t.chase(&spec).unwrap();
    let got = t.stats().slice_requests.clone();
    // (the chase's warm-up laps request every line as often as its timed lap)
    let laps = got.iter().sum::<u64>() / lines;
    assert_eq!(got.iter().sum::<u64>(), laps * lines, "whole laps");
    (got, want.iter().map(|c| c * laps).collect())
}

#[test]
fn the_simulator_sends_each_line_to_the_slice_the_function_names() {
    // one 2 MiB page's lines: every one of the 94 slices used, as often as the function says
    let (got, want) = counts(h200_like(h200()), 6 << 21, 1 << 14);
    assert_eq!(got, want);
    assert!(want.iter().all(|&c| c > 0), "{want:?}");
    // a frame function: other pages get other shares, and the simulator follows them
    let mut r = h200();
    r.frame = Some(FrameShare {
        flip_masks: (0..10).map(|t| Mask(1 << (t % 3))).collect(),
        partition_mask: Mask(0b10),
        constant_step: 5,
    });
    let (got, want) = counts(h200_like(r), 3 << 21, 4 << 14);
    assert_eq!(got, want);
}
