//! The device side of the bottleneck-model experiments (seed 003) on the one GPU layer: a GPU
//! (owned, or borrowed from an opened `CudaTarget`), one non-blocking stream, the ops kernels of
//! the registry loaded at open with their occupancy, and a cuBLAS handle on that stream. No driver
//! calls of its own: everything goes through crate::gpu. Timing: the layer's rule (events around a
//! batch of back-to-back calls, median over repetitions; graphs replayed the same way), with the
//! repetition length and count and the buffer sizes every operation's timing shares.

use crate::gpu::launch::launch_typed;
use crate::gpu::{Blas, DeviceAttr, Event, Function, Gpu, GpuError, GpuResult, Graph, Module, OwnedStream};
use memscope_model::bottleneck::Dtype;
use std::collections::HashMap;

pub use crate::gpu::{Arg, DevBuf, Timing};

// The ops' timing rule and sizes (shared by the model set, fusion, the launch probe's class floors).

/// Buffer sizes of the large-size kernel-efficiency check (those at least `sustained_min_bytes`).
pub const SIZES: [u64; 10] =
    [4 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30, 2 << 30];

/// Target duration of one timed repetition, seconds.
pub const REP_S: f64 = 2e-3;
pub const REPS: usize = 5;

/// Buffers at least this large count as sustained (device memory, not L2): max(4 x L2, 256 MiB).
pub fn sustained_min_bytes(l2_bytes: u64) -> u64 {
    (4 * l2_bytes).max(256 << 20)
}

/// The GPU the ops run on: owned by the ops, or the one a target opened.
enum Held<'g> {
    Owned(Box<Gpu>),
    Borrowed(&'g Gpu),
}

/// One GPU with the ops kernels loaded, a stream and a cuBLAS handle on it.
pub struct OpsGpu<'g> {
    // (drop order: the cuBLAS handle, then the stream, then the GPU)
    blas: Blas,
    stream: OwnedStream,
    gpu: Held<'g>,
    /// The ops kernels by name, loaded at open.
    funcs: HashMap<&'static str, Function>,
    /// Blocks of 256 threads that fit on one SM at once, per kernel (occupancy API).
    resident: HashMap<&'static str, u32>,
    pub name: String,
    pub sm_count: u32,
    pub l2_bytes: u64,
}

impl OpsGpu<'static> {
    /// Open GPU `ordinal` for the ops alone.
    pub fn open(ordinal: usize) -> GpuResult<Self> {
        OpsGpu::with(Held::Owned(Box::new(Gpu::open(ordinal)?)))
    }
}

impl<'g> OpsGpu<'g> {
    /// The ops on a GPU already opened (a `CudaTarget`'s, after its probes).
    pub fn on(gpu: &'g Gpu) -> GpuResult<Self> {
        OpsGpu::with(Held::Borrowed(gpu))
    }

    fn with(gpu: Held<'g>) -> GpuResult<Self> {
        let g: &Gpu = match &gpu {
            Held::Owned(b) => b,
            Held::Borrowed(r) => r,
        };
        g.bind()?;
        let stream = OwnedStream::new()?;
        let (mut funcs, mut resident) = (HashMap::new(), HashMap::new());
        for m in Module::OPS {
            for f in m.functions() {
                funcs.insert(*f, g.func(m, f)?);
                resident.insert(*f, g.resident_blocks(m, f, 256, 0)?);
            }
        }
        let blas = Blas::new(stream.raw())?;
        Ok(OpsGpu {
            name: g.name(),
            sm_count: g.attr(DeviceAttr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            l2_bytes: g.attr(DeviceAttr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64,
            blas,
            stream,
            gpu,
            funcs,
            resident,
        })
    }

    /// The layer's GPU.
    pub fn gpu(&self) -> &Gpu {
        match &self.gpu {
            Held::Owned(b) => b,
            Held::Borrowed(r) => r,
        }
    }

    /// Blocks of 256 threads of kernel `name` resident on one SM at once (at least 1).
    pub fn resident_blocks(&self, name: &str) -> u32 {
        self.resident.get(name).copied().unwrap_or(1).max(1)
    }

    /// Allocate `bytes` (at least 16, rounded up to 16) of device memory, uninitialised.
    pub fn alloc(&self, bytes: u64) -> GpuResult<DevBuf> {
        self.gpu().alloc_buf(bytes.max(16).next_multiple_of(16))
    }

    /// Allocate and fill with uniform values in [-scale, scale) (never zeros: METHOD.md).
    pub fn alloc_random(&self, elems: u64, dtype: Dtype, seed: u32, scale: f32) -> GpuResult<DevBuf> {
        let b = self.alloc(elems * dtype.size_bytes() as u64)?;
        self.init(b.ptr, elems, dtype, seed, scale)?;
        Ok(b)
    }

    pub fn init(&self, ptr: u64, elems: u64, dtype: Dtype, seed: u32, scale: f32) -> GpuResult<()> {
        let f = if dtype == Dtype::Fp32 { "init_f32" } else { "init_f16" };
        let grid = (elems.div_ceil(256)).clamp(1, self.sm_count as u64 * 32) as u32;
        self.launch(f, grid, 256, 0, &[Arg::Ptr(ptr), Arg::U64(elems), Arg::U32(seed), Arg::F32(scale)])
    }

    /// Launch ops kernel `name` on the stream (a grid of at least one block).
    pub fn launch(&self, name: &str, grid: u32, block: u32, smem: u32, args: &[Arg]) -> GpuResult<()> {
        let f = *self.funcs.get(name).ok_or_else(|| GpuError::invalid(format!("no ops kernel {name}")))?;
        launch_typed(f, name, grid.max(1), block, smem, args, self.stream.raw())
    }

    /// Row-major C[m x n] = A[m x k] @ B[k x n] through the layer's cuBLAS wrapper.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm(&self, dtype: Dtype, m: u64, k: u64, n: u64, a: u64, b: u64, c: u64) -> GpuResult<()> {
        self.blas.gemm(dtype, m, k, n, a, b, c)
    }

    pub fn sync(&self) -> GpuResult<()> {
        crate::gpu::timing::stream_sync(self.stream.raw(), "synchronize")
    }

    pub fn dtoh_bytes(&self, buf: &DevBuf, bytes: usize) -> GpuResult<Vec<u8>> {
        self.sync()?;
        self.gpu().dtoh(buf.ptr, bytes.min(buf.bytes as usize))
    }

    pub fn htod_bytes(&self, buf: &DevBuf, data: &[u8]) -> GpuResult<()> {
        self.sync()?;
        if data.len() as u64 > buf.bytes {
            return Err(GpuError::invalid(format!("{} bytes into a buffer of {}", data.len(), buf.bytes)));
        }
        self.gpu().htod(buf.ptr, data)
    }

    /// The layer's `time_calls` on this stream.
    pub fn time_calls(&self, target_s: f64, reps: usize, f: impl FnMut(usize) -> GpuResult<()>) -> GpuResult<Timing> {
        self.gpu().time_calls(self.stream.raw(), target_s, reps, f)
    }

    /// The layer's `time_graph` on this stream.
    pub fn time_graph(
        &self,
        calls: usize,
        target_s: f64,
        reps: usize,
        f: impl FnMut(usize) -> GpuResult<()>,
    ) -> GpuResult<Timing> {
        self.gpu().time_graph(self.stream.raw(), calls, target_s, reps, f)
    }

    /// A timing event.
    pub fn event(&self) -> GpuResult<Event> {
        Event::new()
    }

    pub fn record(&self, ev: &Event) -> GpuResult<()> {
        ev.record(self.stream.raw())
    }

    /// Seconds between two recorded events (waits for both).
    pub fn elapsed_s(&self, a: &Event, b: &Event) -> GpuResult<f64> {
        a.elapsed_s(b)
    }

    /// Capture what `f` issues on the stream into a CUDA graph (instantiated and uploaded).
    pub fn capture(&self, f: impl FnOnce() -> GpuResult<()>) -> GpuResult<Graph> {
        Graph::capture(self.stream.raw(), f)
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
