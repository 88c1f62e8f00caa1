//! The bottleneck-model kernels (seed 003): CUDA C under crates/cuda/kernels/ops/, compiled at run
//! time by NVRTC (no CUDA headers; common.cuh is prepended to each file).

use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions, Ptx};

/// One source file and the kernels it defines.
#[derive(Debug, Clone, Copy)]
pub struct OpsModule {
    pub file: &'static str,
    pub source: &'static str,
    pub functions: &'static [&'static str],
}

const COMMON: &str = include_str!("../../kernels/ops/common.cuh");

pub const MODULES: [OpsModule; 4] = [
    OpsModule {
        file: "ops/elementwise.cu",
        source: include_str!("../../kernels/ops/elementwise.cu"),
        functions: &[
            "copy_u32", "fill_u32", "sum_u32", "init_f32", "init_f16", "add_f32", "add_f16", "mul_f32", "mul_f16",
            "fma_f32", "fma_f16", "gelu_f32", "gelu_f16",
        ],
    },
    OpsModule {
        file: "ops/rows.cu",
        source: include_str!("../../kernels/ops/rows.cu"),
        functions: &[
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
            "layernorm_v4_f32_c8",
            "softmax_v4_f32_c8",
            "layernorm_v4_f16_c3",
            "softmax_v4_f16_c3",
            "layernorm_v4_f16_c4",
            "softmax_v4_f16_c4",
            "layernorm_v5_f32_c6",
            "softmax_v5_f32_c6",
            "layernorm_v5_f32_c8",
            "softmax_v5_f32_c8",
            "layernorm_v5_f16_c3",
            "softmax_v5_f16_c3",
            "layernorm_v5_f16_c4",
            "softmax_v5_f16_c4",
            "layernorm_v6_f32_c6",
            "layernorm_v6_f32_c8",
            "layernorm_v6_f16_c3",
            "layernorm_v6_f16_c4",
        ],
    },
    OpsModule {
        file: "ops/attention.cu",
        source: include_str!("../../kernels/ops/attention.cu"),
        functions: &["decode_attention_f32", "decode_attention_f16"],
    },
    OpsModule {
        file: "ops/compose.cu",
        source: include_str!("../../kernels/ops/compose.cu"),
        functions: &["empty_kernel", "spin_ns", "read_curve_u32", "read_curve_u2"],
    },
];

/// Compile one module for `arch` (e.g. "sm_90") with full-precision arithmetic.
pub fn compile(m: &OpsModule, arch: &str) -> Result<Ptx, String> {
    let src = format!("{COMMON}\n{}", m.source);
    let arch: &'static str = Box::leak(arch.to_string().into_boxed_str());
    let opts = CompileOptions { arch: Some(arch), name: Some(m.file.into()), ..Default::default() };
    compile_ptx_with_opts(src, opts).map_err(|e| format!("{e:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every ops kernel compiles with NVRTC for sm_90 and defines its entry points; runs when
    /// MEMSCOPE_NVRTC_AVAILABLE=1 (scripts/test.sh), skips otherwise (cudarc panics without NVRTC).
    #[test]
    fn every_ops_kernel_compiles_with_nvrtc() {
        if std::env::var("MEMSCOPE_NVRTC_AVAILABLE").as_deref() != Ok("1") {
            eprintln!("skipped: MEMSCOPE_NVRTC_AVAILABLE is not 1");
            return;
        }
        for m in MODULES {
            let ptx = compile(&m, "sm_90").unwrap_or_else(|e| panic!("{}: {e}", m.file)).to_src();
            for f in m.functions {
                assert!(ptx.contains(&format!(".entry {f}(")), "{}: no entry {f}", m.file);
            }
            // 16-byte vector accesses where the kernels promise them.
            if m.file != "ops/attention.cu" && m.file != "ops/compose.cu" {
                assert!(ptx.contains("ld.global.nc.v4") || ptx.contains("ld.global.v4"), "{}", m.file);
            }
            assert!(!ptx.contains(".local"), "{}: local-memory spill", m.file);
            // The v4/v5 row kernels' promises: L2 row prefetch, streaming stores, packed fp16 stores.
            if m.file == "ops/rows.cu" {
                for needle in
                    ["prefetch.global.L2", "st.global.cs.v4", "cvt.rn.f16x2.f32", "ld.global.nc.L1::no_allocate"]
                {
                    assert!(ptx.contains(needle), "rows.cu: no {needle}");
                }
            }
        }
    }
}
