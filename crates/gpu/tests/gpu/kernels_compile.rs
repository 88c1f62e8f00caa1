//! Compiles every kernel under kernels/ with NVRTC for sm_90 (the H200) and checks the PTX: the
//! chases really use ld.global.ca / ld.global.cg, the clocks are read, the bandwidth kernels use
//! 16-byte accesses, the fences are there, the shared loads are volatile and the atomics are
//! fetch-and-adds. Runs when MEMSCOPE_NVRTC_AVAILABLE=1 (scripts/test.sh
//! puts PyPI's libnvrtc.so.13 on LD_LIBRARY_PATH); otherwise skips with a message.

use memscope_gpu::registry::{compile_ptx, nvrtc_available, Module};
use std::sync::OnceLock;

fn nvrtc_or_skip() -> bool {
    if std::env::var("MEMSCOPE_NVRTC_AVAILABLE").as_deref() != Ok("1") {
        eprintln!("skipped: NVRTC not available (set MEMSCOPE_NVRTC_AVAILABLE=1 via scripts/test.sh)");
        return false;
    }
    assert!(nvrtc_available(), "MEMSCOPE_NVRTC_AVAILABLE=1 but libnvrtc cannot be loaded");
    true
}

/// The PTX of `m` for sm_90, compiled by NVRTC once per test binary and shared by the tests here
/// (each module takes seconds to compile; every test reads the same PTX).
fn ptx_of(m: Module) -> &'static str {
    static COMPILED: [OnceLock<String>; Module::ALL.len()] = [const { OnceLock::new() }; Module::ALL.len()];
    let at = Module::ALL.iter().position(|x| *x == m).expect("a module of Module::ALL");
    COMPILED[at].get_or_init(|| m.compile("sm_90").unwrap_or_else(|e| panic!("{}: {e}", m.file())))
}

/// The body of one PTX entry point.
fn entry<'a>(ptx: &'a str, name: &str) -> &'a str {
    let start = ptx.find(&format!(".entry {name}(")).unwrap_or_else(|| panic!("no entry {name} in PTX"));
    let rest = &ptx[start..];
    let end = rest[1..].find(".entry ").map(|e| e + 1).unwrap_or(rest.len());
    &rest[..end]
}

#[test]
fn every_kernel_compiles_for_sm90() {
    if !nvrtc_or_skip() {
        return;
    }
    for m in Module::ALL {
        let ptx = ptx_of(m);
        assert!(ptx.contains(".target sm_90"), "{}: not compiled for sm_90", m.file());
    }
}

#[test]
fn chase_ptx_uses_the_asked_cache_paths() {
    if !nvrtc_or_skip() {
        return;
    }
    let ptx = ptx_of(Module::Chase);
    let cg = entry(ptx, "chase_cg");
    let ca = entry(ptx, "chase_ca");
    assert!(cg.matches("ld.global.cg.u64").count() >= 16, "chase_cg: the unrolled loop must emit ld.global.cg");
    assert!(!cg.contains("ld.global.ca.u64"), "chase_cg must not load through L1");
    assert!(ca.matches("ld.global.ca.u64").count() >= 16, "chase_ca: the unrolled loop must emit ld.global.ca");
    assert!(!ca.contains("ld.global.cg.u64"), "chase_ca must not bypass L1");
    for body in [cg, ca] {
        assert!(body.contains("%globaltimer") && body.contains("%clock64") && body.contains("%smid"));
    }
}

#[test]
fn bandwidth_and_store_ptx_have_the_intended_instructions() {
    if !nvrtc_or_skip() {
        return;
    }
    let bw = ptx_of(Module::Bw);
    assert!(entry(bw, "bw_read").contains("ld.global.nc.v4.u32") || entry(bw, "bw_read").contains("ld.global.v4.u32"));
    assert!(entry(bw, "bw_write").contains("st.global.v4.u32"));
    let l2 = entry(bw, "l2_read");
    assert!(l2.contains("ld.global.cg.v2.u64") && l2.contains("ld.global.ca.v2.u64"), "l2_read: both load paths");
    let copy = entry(bw, "bw_copy");
    assert!(copy.contains("st.global.v4.u32") && copy.contains(".v4.u32"));
    let st = ptx_of(Module::Store);
    assert!(entry(st, "fence_cta").contains("membar.cta"));
    assert!(entry(st, "fence_gl").contains("membar.gl"));
    assert!(entry(st, "fence_sys").contains("membar.sys"));
    assert!(!entry(st, "fence_none").contains("membar"));
    assert!(entry(st, "coalesce_load").contains("ld.global.cg.u32"));
}

#[test]
fn a_broken_kernel_reports_the_nvrtc_log() {
    if !nvrtc_or_skip() {
        return;
    }
    let e = compile_ptx("extern \"C\" __global__ void k() { undefined_thing(); }", "bad.cu", "sm_90").unwrap_err();
    assert!(e.to_string().contains("undefined_thing"), "{e}");
}

#[test]
fn constmem_ptx_chases_each_read_path() {
    if !nvrtc_or_skip() {
        return;
    }
    let ptx = ptx_of(Module::ConstMem);
    assert!(ptx.contains(".const .align 4 .b8 cbank[65536]"), "the 64 KiB constant bank");
    assert!(entry(ptx, "smc_chase_const").matches("ld.const.u32").count() >= 16, "unrolled constant loads");
    assert!(entry(ptx, "smc_chase_nc").matches("ld.global.nc.u64").count() >= 16);
    assert!(entry(ptx, "smc_chase_ca").matches("ld.global.ca.u64").count() >= 16);
    assert!(entry(ptx, "smc_chase_tex").matches("tex.1d.v4.u32.s32").count() >= 16);
    let i = entry(ptx, "smc_interfere");
    for op in ["ld.const.u32", "ld.global.nc.u64", "ld.global.ca.u64", "tex.1d.v4.u32.s32", "bar.sync"] {
        assert!(i.contains(op), "smc_interfere lacks {op}");
    }
    for body in [entry(ptx, "smc_chase_const"), i] {
        assert!(body.contains("%globaltimer") && body.contains("%clock64") && body.contains("%smid"));
    }
}

#[test]
fn shared_memory_atomics_and_level_ptx_have_the_intended_instructions() {
    if !nvrtc_or_skip() {
        return;
    }
    let sm = ptx_of(Module::Smem);
    let chase = entry(sm, "smem_chase");
    assert!(
        chase.matches("ld.volatile.shared.u32").count() >= 16,
        "smem_chase: the unrolled chase must emit ld.volatile.shared.u32"
    );
    assert!(!chase.contains("ld.global"), "smem_chase must not touch global memory while chasing");
    assert!(entry(sm, "smem_bw").matches("ld.volatile.shared.v4.u32").count() >= 8, "smem_bw: 16-byte shared loads");
    assert!(entry(sm, "smem_conflict").matches("ld.volatile.shared.u32").count() >= 16);
    assert!(entry(sm, "smem_resident").contains("%globaltimer"));
    let at = ptx_of(Module::Atomics);
    assert!(entry(at, "atom_chain_global").matches("atom.global.add.u32").count() >= 8);
    assert!(entry(at, "atom_chain_shared").matches("atom.shared.add.u32").count() >= 8);
    for k in ["atom_tp_global", "atom_tp_shared"] {
        let body = entry(at, k);
        assert!(!body.contains("red.global") && !body.contains("red.shared"), "{k}: fetch-and-add, not a reduction");
        assert!(body.matches("atom.").count() >= 4, "{k}: four atomics a round");
    }
    let lv = ptx_of(Module::Levels);
    assert!(entry(lv, "l1_read").matches("ld.global.ca.v4.u32").count() >= 8);
    assert!(entry(lv, "l2_write").contains("st.global.v4.u32"));
    assert!(entry(lv, "line_read").matches("ld.global.cg.u32").count() >= 8);
    for u in [1, 2, 4] {
        let body = entry(lv, &format!("par_read_u{u}"));
        assert!(body.matches("ld.global.cg.v4.u32").count() > u, "par_read_u{u}: {u} loads in flight and the tail");
    }
}

#[test]
fn link_ptx_chases_uncached_and_copies_16_bytes() {
    if !nvrtc_or_skip() {
        return;
    }
    let ptx = ptx_of(Module::Link);
    let chase = entry(ptx, "link_chase");
    assert!(chase.contains("ld.global.cv.u64"), "link_chase must load with .cv (no cached copy)");
    assert!(chase.contains("%globaltimer") && chase.contains("%clock64"));
    let copy = entry(ptx, "link_copy");
    assert!(copy.contains(".v4.u32") || copy.contains(".v4.b32"), "link_copy must move 16-byte words");
    assert!(entry(ptx, "link_spin").contains("ld.volatile"), "the gate must re-read its flag");
}

/// The PTX entry points of a module.
fn entries(ptx: &str) -> std::collections::BTreeSet<String> {
    ptx.match_indices(".entry ")
        .map(|(i, _)| ptx[i + 7..].split('(').next().unwrap_or_default().trim().to_string())
        .collect()
}

/// The registry's kernel list of each module is exactly what its PTX defines, so every name the
/// code launches through the registry (checked in the registry's unit tests and by
/// source_rules.rs) exists on the device.
#[test]
fn registry_kernel_lists_are_the_ptx_entry_points() {
    if !nvrtc_or_skip() {
        return;
    }
    for m in Module::ALL {
        let ptx = ptx_of(m);
        let listed: std::collections::BTreeSet<String> = m.functions().iter().map(|f| f.to_string()).collect();
        assert_eq!(entries(ptx), listed, "{}: registry list vs PTX entries", m.file());
    }
}

/// Every ops kernel compiles with NVRTC's default options and keeps the ops files' promises:
/// 16-byte vector accesses, no local-memory spill, and in rows.cu the L2 row prefetch, streaming
/// stores, packed fp16 stores and L1::no_allocate loads.
#[test]
fn ops_ptx_keeps_its_promises() {
    if !nvrtc_or_skip() {
        return;
    }
    for m in Module::OPS {
        let ptx = ptx_of(m);
        if m != Module::OpsAttention && m != Module::OpsCompose {
            assert!(ptx.contains("ld.global.nc.v4") || ptx.contains("ld.global.v4"), "{}", m.file());
        }
        assert!(!ptx.contains(".local"), "{}: local-memory spill", m.file());
        if m == Module::OpsRows {
            for needle in ["prefetch.global.L2", "st.global.cs.v4", "cvt.rn.f16x2.f32", "ld.global.nc.L1::no_allocate"]
            {
                assert!(ptx.contains(needle), "rows.cu: no {needle}");
            }
        }
    }
}

#[test]
fn partition_ptx_primes_with_reductions_and_times_cg_loads_in_one_lap_function() {
    if !nvrtc_or_skip() {
        return;
    }
    let ptx = ptx_of(Module::Partition);
    if let Ok(path) = std::env::var("MEMSCOPE_DUMP_PTX") {
        std::fs::write(path, ptx).unwrap();
    }
    assert!(entry(ptx, "partition_prime").contains("red.global.add.u64"), "the prime adds 0 at the home slice");
    let lap = entry(ptx, "partition_lap");
    assert!(lap.contains("red.global.add.u64") && lap.contains("%smid"), "the lap's TLB reduction and SM check");
    assert!(lap.contains("atom.global.add.u32"), "the lap's ticket");
    // Both laps (warm-up and page) go through one noinline function: the only timed cg loads.
    let start = ptx.find(".func").expect("the recorded lap is a function of its own");
    let func = &ptx[start..ptx[start..].find(".entry").map_or(ptx.len(), |e| start + e)];
    assert!(func.contains("ld.global.cg.u64") && func.contains("%clock64"), "cg loads timed by clock64");
    assert!(func.contains("st.volatile.shared.u64"), "the loaded pointer goes to shared memory before the clock");
    assert_eq!(lap.matches("call.uni").count() + lap.matches("call ").count(), 2, "two recorded laps");
}
