//! The device side of the bottleneck-model experiments (seed 003), on cudarc directly: one context
//! and stream with event tracking off, the ops kernels compiled by NVRTC, a cuBLAS handle, raw
//! device buffers, launches with scalar/pointer arguments, and the timing rule of the seed (CUDA
//! events around a batch of back-to-back calls, median over repetitions).

use super::kernels;
use cudarc::cublas::{result as blas, sys as bsys};
use cudarc::driver::{
    sys, CudaContext, CudaEvent, CudaFunction, CudaGraph, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg,
};
use memscope_core::model::Dtype;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;

/// Errors of the GPU side, as text (they end up in one line of the CLI).
pub type R<T> = Result<T, String>;

fn e<E: std::fmt::Debug>(what: &str) -> impl Fn(E) -> String + '_ {
    move |err| format!("{what}: {err:?}")
}

/// A device allocation and its raw address.
pub struct DevBuf {
    _slice: CudaSlice<u8>,
    pub ptr: u64,
    pub bytes: u64,
}

/// A kernel argument.
#[derive(Debug, Clone, Copy)]
pub enum Arg {
    Ptr(u64),
    U64(u64),
    I32(i32),
    U32(u32),
    F32(f32),
}

/// Time per call of a batch of back-to-back calls.
#[derive(Debug, Clone, Serialize)]
pub struct Timing {
    /// Median over repetitions of (event time of the batch / calls), seconds.
    pub per_call_s: f64,
    pub min_per_call_s: f64,
    pub max_per_call_s: f64,
    pub calls_per_rep: usize,
    pub reps: usize,
}

/// One GPU with the ops kernels loaded.
pub struct OpsGpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    funcs: HashMap<&'static str, CudaFunction>,
    /// Blocks of 256 threads that fit on one SM at once, per kernel (occupancy API).
    resident: HashMap<&'static str, u32>,
    blas: bsys::cublasHandle_t,
    pub name: String,
    pub sm_count: u32,
    pub l2_bytes: u64,
}

impl Drop for OpsGpu {
    fn drop(&mut self) {
        // SAFETY: the handle was created by us and is destroyed once.
        let _ = unsafe { blas::destroy_handle(self.blas) };
    }
}

impl OpsGpu {
    /// Open GPU `ordinal`: checks for a GPU first (cudarc panics when libcuda is missing), then
    /// compiles every ops kernel.
    pub fn open(ordinal: usize) -> R<Self> {
        let n = crate::device_count()?;
        if ordinal >= n {
            return Err(format!("no CUDA GPU found: ordinal {ordinal} of {n}"));
        }
        let ctx = CudaContext::new(ordinal).map_err(e("CUDA context"))?;
        // SAFETY: set before any stream or allocation exists; we order work on one stream.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(e("stream"))?;
        let arch = {
            let (ma, mi) = ctx.compute_capability().map_err(e("compute capability"))?;
            format!("sm_{ma}{mi}")
        };
        let mut funcs = HashMap::new();
        let mut resident = HashMap::new();
        for m in kernels::MODULES {
            let ptx = kernels::compile(&m, &arch).map_err(|err| format!("NVRTC {}: {err}", m.file))?;
            let module = ctx.load_module(ptx).map_err(e("load module"))?;
            for f in m.functions {
                let func = module.load_function(f).map_err(e(f))?;
                resident.insert(*f, func.occupancy_max_active_blocks_per_multiprocessor(256, 0, None).map_err(e(f))?);
                funcs.insert(*f, func);
            }
        }
        let handle = blas::create_handle().map_err(e("cuBLAS handle"))?;
        // SAFETY: the stream outlives the handle (both owned by self; handle destroyed first).
        unsafe { blas::set_stream(handle, stream.cu_stream() as bsys::cudaStream_t) }.map_err(e("cuBLAS stream"))?;
        let attr = |a| ctx.attribute(a).map_err(e("attribute"));
        Ok(OpsGpu {
            name: ctx.name().unwrap_or_else(|_| "CUDA GPU".into()),
            sm_count: attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            l2_bytes: attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64,
            ctx,
            stream,
            funcs,
            resident,
            blas: handle,
        })
    }

    /// Blocks of 256 threads of kernel `name` resident on one SM at once (at least 1).
    pub fn resident_blocks(&self, name: &str) -> u32 {
        self.resident.get(name).copied().unwrap_or(1).max(1)
    }

    /// Allocate `bytes` (at least 16) of device memory, uninitialised.
    pub fn alloc(&self, bytes: u64) -> R<DevBuf> {
        let bytes = bytes.max(16).next_multiple_of(16);
        // SAFETY: u8 has no invalid bit patterns; every buffer is initialised before it is read.
        let slice = unsafe { self.stream.alloc::<u8>(bytes as usize) }.map_err(e("alloc"))?;
        let ptr = slice.device_ptr(&self.stream).0;
        Ok(DevBuf { _slice: slice, ptr, bytes })
    }

    /// Allocate and fill with uniform values in [-scale, scale) (never zeros: METHOD.md).
    pub fn alloc_random(&self, elems: u64, dtype: Dtype, seed: u32, scale: f32) -> R<DevBuf> {
        let b = self.alloc(elems * dtype.size_bytes() as u64)?;
        self.init(b.ptr, elems, dtype, seed, scale)?;
        Ok(b)
    }

    pub fn init(&self, ptr: u64, elems: u64, dtype: Dtype, seed: u32, scale: f32) -> R<()> {
        let f = if dtype == Dtype::Fp32 { "init_f32" } else { "init_f16" };
        let grid = (elems.div_ceil(256)).clamp(1, self.sm_count as u64 * 32) as u32;
        self.launch(f, grid, 256, 0, &[Arg::Ptr(ptr), Arg::U64(elems), Arg::U32(seed), Arg::F32(scale)])
    }

    /// Launch kernel `name` on the stream.
    pub fn launch(&self, name: &str, grid: u32, block: u32, smem: u32, args: &[Arg]) -> R<()> {
        let f = self.funcs.get(name).ok_or_else(|| format!("no kernel {name}"))?;
        let mut b = self.stream.launch_builder(f);
        for a in args {
            match a {
                Arg::Ptr(v) | Arg::U64(v) => b.arg(v),
                Arg::I32(v) => b.arg(v),
                Arg::U32(v) => b.arg(v),
                Arg::F32(v) => b.arg(v),
            };
        }
        let cfg = LaunchConfig { grid_dim: (grid.max(1), 1, 1), block_dim: (block, 1, 1), shared_mem_bytes: smem };
        // SAFETY: argument lists match the kernels' signatures (checked by the correctness pass).
        unsafe { b.launch(cfg) }.map(|_| ()).map_err(e(name))
    }

    /// Row-major C[m x n] = A[m x k] @ B[k x n] through cuBLAS (fp32: Sgemm, no TF32; fp16/bf16:
    /// GemmEx with fp32 accumulation).
    #[allow(clippy::too_many_arguments)]
    pub fn gemm(&self, dtype: Dtype, m: u64, k: u64, n: u64, a: u64, b: u64, c: u64) -> R<()> {
        let (m, k, n) = (m as i32, k as i32, n as i32);
        let op = bsys::cublasOperation_t::CUBLAS_OP_N;
        let (alpha, beta) = (1.0f32, 0.0f32);
        // Column-major C^T[n x m] = B^T[n x k] A^T[k x m].
        // SAFETY: pointers are live device buffers of the stated sizes.
        unsafe {
            match dtype {
                Dtype::Fp32 => blas::sgemm(
                    self.blas,
                    op,
                    op,
                    n,
                    m,
                    k,
                    &alpha,
                    b as *const f32,
                    n,
                    a as *const f32,
                    k,
                    &beta,
                    c as *mut f32,
                    n,
                ),
                Dtype::Fp16 | Dtype::Bf16 => {
                    let t = if dtype == Dtype::Fp16 {
                        bsys::cudaDataType::CUDA_R_16F
                    } else {
                        bsys::cudaDataType::CUDA_R_16BF
                    };
                    blas::gemm_ex(
                        self.blas,
                        op,
                        op,
                        n,
                        m,
                        k,
                        &alpha as *const f32 as *const _,
                        b as *const _,
                        t,
                        n,
                        a as *const _,
                        t,
                        k,
                        &beta as *const f32 as *const _,
                        c as *mut _,
                        t,
                        n,
                        bsys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                        bsys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                    )
                }
            }
        }
        .map_err(e("cuBLAS gemm"))
    }

    pub fn sync(&self) -> R<()> {
        self.stream.synchronize().map_err(e("synchronize"))
    }

    pub fn dtoh_bytes(&self, buf: &DevBuf, bytes: usize) -> R<Vec<u8>> {
        self.sync()?;
        let mut v = vec![0u8; bytes];
        // SAFETY: buf holds at least `bytes`, the stream is idle.
        unsafe { sys::cuMemcpyDtoH_v2(v.as_mut_ptr() as *mut _, buf.ptr, bytes) }.result().map_err(e("dtoh"))?;
        Ok(v)
    }

    pub fn htod_bytes(&self, buf: &DevBuf, data: &[u8]) -> R<()> {
        self.sync()?;
        // SAFETY: buf holds at least data.len() bytes.
        unsafe { sys::cuMemcpyHtoD_v2(buf.ptr, data.as_ptr() as *const _, data.len()) }.result().map_err(e("htod"))
    }

    /// Events around `calls` back-to-back calls of `f(i)`, repeated `reps` times after a warm-up;
    /// `calls` is chosen so that a repetition lasts about `target_s` (at least 3 calls).
    pub fn time_calls(&self, target_s: f64, reps: usize, mut f: impl FnMut(usize) -> R<()>) -> R<Timing> {
        let ev = || self.ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(e("event"));
        let (e0, e1) = (ev()?, ev()?);
        let mut i = 0usize;
        for _ in 0..3 {
            f(i)?;
            i += 1;
        }
        self.sync()?;
        // Calibrate with a small batch.
        let probe = 4;
        e0.record(&self.stream).map_err(e("record"))?;
        for _ in 0..probe {
            f(i)?;
            i += 1;
        }
        e1.record(&self.stream).map_err(e("record"))?;
        e1.synchronize().map_err(e("event sync"))?;
        let t = e0.elapsed_ms(&e1).map_err(e("elapsed"))? as f64 * 1e-3 / probe as f64;
        let calls = ((target_s / t.max(1e-7)).ceil() as usize).clamp(3, 20_000);
        let mut per = Vec::with_capacity(reps);
        for _ in 0..reps {
            e0.record(&self.stream).map_err(e("record"))?;
            for _ in 0..calls {
                f(i)?;
                i += 1;
            }
            e1.record(&self.stream).map_err(e("record"))?;
            e1.synchronize().map_err(e("event sync"))?;
            per.push(e0.elapsed_ms(&e1).map_err(e("elapsed"))? as f64 * 1e-3 / calls as f64);
        }
        per.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
        Ok(Timing {
            per_call_s: per[per.len() / 2],
            min_per_call_s: per[0],
            max_per_call_s: per[per.len() - 1],
            calls_per_rep: calls,
            reps,
        })
    }

    /// A timing event on this context.
    pub fn event(&self) -> R<CudaEvent> {
        self.ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(e("event"))
    }

    pub fn record(&self, ev: &CudaEvent) -> R<()> {
        ev.record(&self.stream).map_err(e("record"))
    }

    /// Seconds between two recorded events (waits for the second).
    pub fn elapsed_s(&self, a: &CudaEvent, b: &CudaEvent) -> R<f64> {
        b.synchronize().map_err(e("event sync"))?;
        Ok(a.elapsed_ms(b).map_err(e("elapsed"))? as f64 * 1e-3)
    }

    /// Capture what `f` issues on the stream into a CUDA graph (instantiated and uploaded).
    pub fn capture(&self, f: impl FnOnce() -> R<()>) -> R<CudaGraph> {
        self.stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(e("begin capture"))?;
        let issued = f();
        let graph = self.stream.end_capture(sys::CUgraphInstantiate_flags(0)).map_err(e("end capture"))?;
        issued?;
        let graph = graph.ok_or("capture produced no graph")?;
        graph.upload().map_err(e("graph upload"))?;
        Ok(graph)
    }

    /// `calls` calls of `f(i)` captured once into a graph, replayed back to back with the timing
    /// rule of `time_calls`; the timing is per call (replay time / calls).
    pub fn time_graph(&self, calls: usize, target_s: f64, reps: usize, mut f: impl FnMut(usize) -> R<()>) -> R<Timing> {
        let calls = calls.max(1);
        // One eager call first: cuBLAS picks its kernel and modules load outside the capture.
        f(0)?;
        self.sync()?;
        let graph = self.capture(|| (0..calls).try_for_each(&mut f))?;
        let t = self.time_calls(target_s, reps, |_| graph.launch().map_err(e("graph launch")))?;
        let n = calls as f64;
        Ok(Timing {
            per_call_s: t.per_call_s / n,
            min_per_call_s: t.min_per_call_s / n,
            max_per_call_s: t.max_per_call_s / n,
            calls_per_rep: t.calls_per_rep * calls,
            reps: t.reps,
        })
    }

    /// How many copies of a working set of `footprint` bytes to rotate through so that repeated
    /// calls read from device memory, not L2: enough for 4x the L2, at most 64.
    pub fn rotation_sets(&self, footprint: u64) -> usize {
        ((4 * self.l2_bytes).div_ceil(footprint.max(1)) as usize).clamp(1, 64)
    }

    /// One grid of 256-thread blocks covering `items` (at least one block).
    pub fn blocks(items: u64) -> u32 {
        items.div_ceil(256).max(1) as u32
    }
}
