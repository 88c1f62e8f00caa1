//! The one kernel registry of memscope (docs/ARCHITECTURE.md): every CUDA C file under kernels/ (the probe
//! kernels with kernels/common.cuh prepended, the bottleneck-model kernels of seed 003 under
//! kernels/ops/ with kernels/ops/common.cuh prepended), the kernels each defines, and their run-time
//! compilation by NVRTC for the device's arch (docs/ARCHITECTURE.md). NVRTC is loaded dynamically; when it
//! cannot be loaded, compilation returns an error instead of panicking (cudarc panics on a missing
//! library). Each module keeps the NVRTC options it has always had, so the PTX is unchanged.

use super::error::{GpuError, GpuResult};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// PTX text, as NVRTC writes it.
pub type Ptx = String;

/// One kernel source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Module {
    /// Pointer chase, chase-cycle scatter, cache and TLB flush, clock probe.
    Chase,
    /// Bandwidth read/write/copy, copy check, random fill, empty kernel.
    Bw,
    /// Bandwidth copy through the bulk copy engine (TMA).
    BwTma,
    /// Store issue, SM egress, fences, coalescing.
    Store,
    /// Chases through the constant bank, ld.global.nc, texture fetches and L1; their interference.
    ConstMem,
    /// Shared memory: chase, bandwidth, bank conflicts, residency (carveout steps).
    Smem,
    /// Global and shared atomics: dependent chains and throughput.
    Atomics,
    /// Bandwidth by level (L1 reads, L2 writes, one line's slice) and by parallelism.
    Levels,
    /// Host <-> device and peer copies through the SMs, the stream gate, the link chase.
    Link,
    /// The L2 slice probe's hammer (its child process, under Nsight Compute).
    Slices,
    /// The per-SM L2 map: first-touch chases pinned to each SM, the reductions that prime them.
    SmMap,
    /// The L2 partition bit: whole-page first-touch laps pinned to an SM, the reductions that prime them.
    Partition,
    /// Bottleneck model (seed 003): copies, fills, sums, random init, element-wise arithmetic, GELU.
    OpsElementwise,
    /// Bottleneck model: LayerNorm and softmax rows (plain and the v2..v6 variants).
    OpsRows,
    /// Bottleneck model: decode attention.
    OpsAttention,
    /// Composition (docs/MODEL.md): empty and spinning kernels, read curves.
    OpsCompose,
}

const COMMON: &str = include_str!("../kernels/common.cuh");

impl Module {
    /// The probe modules (kernels/*.cu).
    pub const PROBES: [Module; 12] = [
        Module::Chase,
        Module::Bw,
        Module::BwTma,
        Module::Store,
        Module::ConstMem,
        Module::Smem,
        Module::Atomics,
        Module::Levels,
        Module::Link,
        Module::Slices,
        Module::SmMap,
        Module::Partition,
    ];
    /// The bottleneck-model modules (kernels/ops/*.cu).
    pub const OPS: [Module; 4] = [Module::OpsElementwise, Module::OpsRows, Module::OpsAttention, Module::OpsCompose];
    /// Every module, each once: the probe modules, then the model's.
    pub const ALL: [Module; Module::PROBES.len() + Module::OPS.len()] = {
        let mut all = [Module::Chase; Module::PROBES.len() + Module::OPS.len()];
        let mut i = 0;
        while i < all.len() {
            all[i] = if i < Module::PROBES.len() { Module::PROBES[i] } else { Module::OPS[i - Module::PROBES.len()] };
            i += 1;
        }
        all
    };

    /// File name under kernels/.
    pub fn file(self) -> &'static str {
        match self {
            Module::Chase => "chase.cu",
            Module::Bw => "bw.cu",
            Module::BwTma => "bw_tma.cu",
            Module::Store => "store.cu",
            Module::ConstMem => "constmem.cu",
            Module::Smem => "smem.cu",
            Module::Atomics => "atomics.cu",
            Module::Levels => "levels.cu",
            Module::Link => "link.cu",
            Module::Slices => "slices.cu",
            Module::SmMap => "sm_map.cu",
            Module::Partition => "partition.cu",
            Module::OpsElementwise => "ops/elementwise.cu",
            Module::OpsRows => "ops/rows.cu",
            Module::OpsAttention => "ops/attention.cu",
            Module::OpsCompose => "ops/compose.cu",
        }
    }

    /// Whether the file is one of the bottleneck-model kernels (kernels/ops/).
    pub fn is_ops(self) -> bool {
        Module::OPS.contains(&self)
    }

    /// CUDA C source: the common header (kernels/common.cuh, or kernels/ops/common.cuh and a
    /// newline for the ops files) and the file.
    pub fn source(self) -> &'static str {
        match self {
            Module::Chase => concat!(include_str!("../kernels/common.cuh"), include_str!("../kernels/chase.cu")),
            Module::Bw => concat!(include_str!("../kernels/common.cuh"), include_str!("../kernels/bw.cu")),
            Module::BwTma => concat!(include_str!("../kernels/common.cuh"), include_str!("../kernels/bw_tma.cu")),
            Module::Store => concat!(include_str!("../kernels/common.cuh"), include_str!("../kernels/store.cu")),
            Module::ConstMem => {
                concat!(include_str!("../kernels/common.cuh"), include_str!("../kernels/constmem.cu"))
            }
            Module::Smem => concat!(include_str!("../kernels/common.cuh"), include_str!("../kernels/smem.cu")),
            Module::Atomics => {
                concat!(include_str!("../kernels/common.cuh"), include_str!("../kernels/atomics.cu"))
            }
            Module::Levels => {
                concat!(include_str!("../kernels/common.cuh"), include_str!("../kernels/levels.cu"))
            }
            Module::Link => concat!(include_str!("../kernels/common.cuh"), include_str!("../kernels/link.cu")),
            Module::Slices => {
                concat!(include_str!("../kernels/common.cuh"), include_str!("../kernels/slices.cu"))
            }
            Module::OpsElementwise => {
                concat!(include_str!("../kernels/ops/common.cuh"), "\n", include_str!("../kernels/ops/elementwise.cu"))
            }
            Module::SmMap => {
                concat!(include_str!("../kernels/common.cuh"), include_str!("../kernels/sm_map.cu"))
            }
            Module::Partition => {
                concat!(include_str!("../kernels/common.cuh"), include_str!("../kernels/partition.cu"))
            }
            Module::OpsRows => {
                concat!(include_str!("../kernels/ops/common.cuh"), "\n", include_str!("../kernels/ops/rows.cu"))
            }
            Module::OpsAttention => {
                concat!(include_str!("../kernels/ops/common.cuh"), "\n", include_str!("../kernels/ops/attention.cu"))
            }
            Module::OpsCompose => {
                concat!(include_str!("../kernels/ops/common.cuh"), "\n", include_str!("../kernels/ops/compose.cu"))
            }
        }
    }

    /// The kernels (PTX entry points) the file defines.
    pub fn functions(self) -> &'static [&'static str] {
        match self {
            Module::Chase => {
                &["chase_ca", "chase_cg", "scatter_u64", "flush_write", "flush_read", "tlb_sweep", "clock_probe"]
            }
            Module::Bw => &[
                "bw_read",
                "bw_read_u8",
                "bw_read_cs",
                "bw_read_u8cs",
                "bw_read_u2",
                "bw_read_u2cs",
                "bw_read_u2nc",
                "bw_read_u4nc",
                "bw_read_u2nc256",
                "bw_read_w32u2cs",
                "bw_read_w32u2nc",
                "bw_write",
                "bw_write_u8",
                "bw_write_cs",
                "bw_write_u8cs",
                "bw_write_u2",
                "bw_write_u2cs",
                "bw_write_w32u1cs",
                "bw_write_w32u2cs",
                "bw_write_w32u2",
                "bw_copy",
                "bw_copy_u8",
                "bw_copy_cs",
                "bw_copy_u8cs",
                "bw_copy_u2",
                "bw_copy_u2cs",
                "bw_copy_stcs",
                "bw_copy_u2nc",
                "bw_copy_u4nc",
                "bw_copy_u2nc256",
                "bw_copy_u4nc256",
                "bw_copy_w32u1cs",
                "bw_copy_w32u2cs",
                "bw_copy_w32u1nc256",
                "bw_copy_w32u2nc",
                "bw_copy_blk4",
                "bw_copy_blk4cs",
                "bw_copy_blk4nc",
                "bw_count_diff",
                "fill_bits",
                "empty_kernel",
                "l2_read",
                "l2_read8",
                "l2_read16",
                "l2_read_chunks",
            ],
            Module::BwTma => &["bw_copy_tma"],
            Module::Store => {
                &["store_issue", "sm_traffic", "fence_none", "fence_cta", "fence_gl", "fence_sys", "coalesce_load"]
            }
            Module::ConstMem => &["smc_chase_ca", "smc_chase_nc", "smc_chase_tex", "smc_chase_const", "smc_interfere"],
            Module::Smem => &["smem_chase", "smem_bw", "smem_conflict", "smem_resident"],
            Module::Atomics => &["atom_chain_global", "atom_chain_shared", "atom_tp_global", "atom_tp_shared"],
            Module::Levels => &["l1_read", "l2_write", "line_read", "par_read_u1", "par_read_u2", "par_read_u4"],
            Module::Link => &["link_copy", "link_copy_split", "link_spin", "link_chase"],
            Module::Slices => &["slice_hammer"],
            Module::SmMap => &["sm_map_prime", "sm_map_chase"],
            Module::Partition => &["partition_prime", "partition_lap"],
            Module::OpsElementwise => &[
                "copy_u32", "fill_u32", "sum_u32", "init_f32", "init_f16", "add_f32", "add_f16", "mul_f32", "mul_f16",
                "fma_f32", "fma_f16", "gelu_f32", "gelu_f16",
            ],
            Module::OpsRows => &[
                "layernorm_f32",
                "layernorm_f16",
                "softmax_f32",
                "softmax_f16",
                "layernorm_v2_f32_c6_r2",
                "softmax_v2_f32_c6_r2",
                "layernorm_v2_f32_c8_r2",
                "softmax_v2_f32_c8_r2",
                "layernorm_v2_f16_c3_r4",
                "softmax_v2_f16_c3_r4",
                "layernorm_v2_f16_c4_r4",
                "softmax_v2_f16_c4_r4",
                "layernorm_v3_f32_c6",
                "softmax_v3_f32_c6",
                "layernorm_v3_f32_c8",
                "softmax_v3_f32_c8",
                "layernorm_v3_f16_c3",
                "softmax_v3_f16_c3",
                "layernorm_v3_f16_c4",
                "softmax_v3_f16_c4",
                "layernorm_v4_f32_c6",
                "softmax_v4_f32_c6",
                "layernorm_v5_f32_c6",
                "softmax_v5_f32_c6",
                "layernorm_v4_f32_c8",
                "softmax_v4_f32_c8",
                "layernorm_v5_f32_c8",
                "softmax_v5_f32_c8",
                "layernorm_v4_f16_c3",
                "softmax_v4_f16_c3",
                "layernorm_v5_f16_c3",
                "softmax_v5_f16_c3",
                "layernorm_v4_f16_c4",
                "softmax_v4_f16_c4",
                "layernorm_v5_f16_c4",
                "softmax_v5_f16_c4",
                "layernorm_v6_f32_c6",
                "layernorm_v6_f32_c8",
                "layernorm_v6_f16_c3",
                "layernorm_v6_f16_c4",
            ],
            Module::OpsAttention => &["decode_attention_f32", "decode_attention_f16"],
            Module::OpsCompose => {
                &["empty_kernel", "spin_ns", "read_curve_u32", "read_curve_u2", "step_chain_u4", "step_chain_u2"]
            }
        }
    }

    /// The NVRTC options: the probe files are compiled as C++17, the ops files with NVRTC's
    /// defaults (full-precision arithmetic); both for `arch`.
    pub fn nvrtc_options(self, arch: &str) -> Vec<String> {
        if self.is_ops() {
            vec![format!("--gpu-architecture={arch}")]
        } else {
            vec![format!("--gpu-architecture={arch}"), "--std=c++17".into()]
        }
    }

    /// Compile the file to PTX for `arch` ("sm_90"), once per process: the background warming
    /// (warm.rs) and the probes that load the module later share the PTX.
    pub fn compile(self, arch: &str) -> GpuResult<Ptx> {
        type Compiled = Mutex<HashMap<(Module, String), Ptx>>;
        static COMPILED: OnceLock<Compiled> = OnceLock::new();
        let compiled = COMPILED.get_or_init(Default::default);
        let key = (self, arch.to_string());
        if let Some(ptx) = compiled.lock().ok().and_then(|c| c.get(&key).cloned()) {
            return Ok(ptx);
        }
        let ptx = compile_with(self.source(), self.file(), arch, self.nvrtc_options(arch))?;
        if let Ok(mut c) = compiled.lock() {
            c.insert(key, ptx.clone());
        }
        Ok(ptx)
    }

    /// The ops module that defines kernel `name` (ops kernels are launched by name alone).
    pub fn ops_module_of(name: &str) -> Option<Module> {
        Module::OPS.into_iter().find(|m| m.functions().contains(&name))
    }
}

/// The common header of the probe kernels (the slice hammer prepends it to its own source).
pub fn common_header() -> &'static str {
    COMMON
}

/// Whether libnvrtc can be loaded here.
pub fn nvrtc_available() -> bool {
    // SAFETY: only tries to dlopen the candidate library names.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// Compile CUDA C `src` (named `name`) to PTX for `arch` with the probe kernels' options (C++17).
pub fn compile_ptx(src: &str, name: &str, arch: &str) -> GpuResult<Ptx> {
    compile_with(src, name, arch, vec![format!("--gpu-architecture={arch}"), "--std=c++17".into()])
}

fn compile_with(src: &str, name: &str, arch: &str, options: Vec<String>) -> GpuResult<Ptx> {
    let fail = |log: String| GpuError::Compile { file: name.to_string(), arch: arch.to_string(), log };
    if !nvrtc_available() {
        return Err(fail(
            "NVRTC (libnvrtc.so) cannot be loaded: install the CUDA toolkit or `pip install \
             nvidia-cuda-nvrtc` and put its lib folder on LD_LIBRARY_PATH"
                .into(),
        ));
    }
    let opts = cudarc::nvrtc::CompileOptions { options, name: Some(name.to_string()), ..Default::default() };
    let src = src.to_string();
    let out = std::panic::catch_unwind(move || cudarc::nvrtc::compile_ptx_with_opts(src, opts))
        .map_err(|_| fail("NVRTC panicked".into()))?;
    match out {
        Ok(ptx) => Ok(ptx.to_src()),
        Err(cudarc::nvrtc::CompileError::CompileError { nvrtc, log, .. }) => {
            Err(fail(format!("{nvrtc:?}\n{}", log.to_string_lossy())))
        }
        Err(e) => Err(fail(e.to_string())),
    }
}

/// The architecture name NVRTC takes for a compute capability: (9, 0) -> "sm_90".
pub fn arch_name(major: i32, minor: i32) -> String {
    format!("sm_{major}{minor}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_module_is_registered_once_and_no_kernel_is_listed_twice() {
        let files: HashSet<_> = Module::ALL.iter().map(|m| m.file()).collect();
        assert_eq!(files.len(), Module::ALL.len());
        for m in Module::PROBES.iter().chain(Module::OPS.iter()) {
            assert_eq!(Module::ALL.iter().filter(|x| *x == m).count(), 1, "{m:?}");
        }
        assert_eq!(Module::PROBES.len() + Module::OPS.len(), Module::ALL.len());
        for m in Module::ALL {
            let names: HashSet<_> = m.functions().iter().collect();
            assert_eq!(names.len(), m.functions().len(), "{m:?} lists a kernel twice");
            assert!(!names.is_empty());
        }
        // Ops kernels are launched by name: a name must identify one ops module.
        let mut seen = HashSet::new();
        for m in Module::OPS {
            for f in m.functions() {
                assert!(seen.insert(*f), "ops kernel {f} in two ops modules");
                assert_eq!(Module::ops_module_of(f), Some(m));
            }
        }
    }

    #[test]
    fn the_ops_and_probe_options_are_those_of_before() {
        assert_eq!(Module::OpsRows.nvrtc_options("sm_90"), vec!["--gpu-architecture=sm_90".to_string()]);
        assert_eq!(Module::Chase.nvrtc_options("sm_90"), vec!["--gpu-architecture=sm_90", "--std=c++17"]);
        assert!(Module::OpsRows.source().starts_with(include_str!("../kernels/ops/common.cuh")));
        assert!(Module::Bw.source().starts_with(COMMON));
    }
}
