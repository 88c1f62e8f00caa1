//! memscope-gpu, the one GPU layer of memscope (docs/ARCHITECTURE.md, "The GPU layer"): a thin,
//! checked layer over the CUDA driver API (cudarc 0.19 `sys`) and the only place in the workspace
//! with driver calls. This file: library presence, the primary context, its rebuild after a fault
//! and the poisoned state after a sticky one, device attributes. The rest: memory.rs (allocations
//! checked against free memory, copies, pinned/mapped host memory, VMM aliases), registry.rs (the
//! kernel registry over kernels/ and NVRTC), launch.rs (the function cache and launches), timing.rs
//! (streams, events, graphs, the timing rule), blas.rs (cuBLAS), peer.rs (peer access), nvml.rs
//! (NVML readings), profiler.rs (hardware counters through CUPTI's range profiler), error.rs
//! (`GpuError`). Why the raw driver API and not cudarc's safe one:
//! docs/ARCHITECTURE.md, "The GPU layer". Measurement discipline (docs/ADDING_A_PROBE.md): every
//! CUDA call is checked.

pub mod blas;
pub mod error;
pub mod launch;
pub mod memory;
pub mod nvml;
pub mod peer;
pub mod profiler;
pub mod registry;
pub mod timing;
pub mod warm;

pub use blas::Blas;
pub use error::{GpuError, GpuResult};
pub use launch::Arg;
pub use memory::{DevBuf, MappedHost};
pub use registry::Module;
pub use timing::{Event, Graph, OwnedStream, Timing};

pub(crate) use error::{ck, describe};

use cudarc::driver::sys;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::CString;

/// A device attribute (cudarc's enum, re-exported under the layer's name).
pub type DeviceAttr = sys::CUdevice_attribute;
/// A kernel-function attribute.
pub type FuncAttr = sys::CUfunction_attribute;
/// A raw stream handle; null is the legacy default stream.
pub type Stream = sys::CUstream;
/// A loaded kernel function.
pub type Function = sys::CUfunction;
/// The legacy default stream.
pub const LEGACY_STREAM: Stream = std::ptr::null_mut();

/// Whether libcuda can be loaded (cudarc panics at the first call otherwise).
pub(crate) fn libcuda_present() -> bool {
    // SAFETY: only tries to dlopen the candidate library names.
    unsafe { sys::is_culib_present() }
}

/// Number of devices, or why none.
pub fn device_count() -> GpuResult<usize> {
    let none = |reason: String| GpuError::NoGpu { reason };
    if !libcuda_present() {
        return Err(none("no CUDA GPU found: libcuda.so (the NVIDIA driver) cannot be loaded".into()));
    }
    let r = std::panic::catch_unwind(|| unsafe {
        let r = sys::cuInit(0);
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(describe(r));
        }
        let mut n = 0i32;
        let r = sys::cuDeviceGetCount(&mut n);
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(describe(r));
        }
        Ok(n.max(0) as usize)
    });
    match r {
        Ok(Ok(0)) => Err(none("no CUDA GPU found: the driver reports 0 devices".into())),
        Ok(Ok(n)) => Ok(n),
        Ok(Err(e)) => Err(none(format!("no CUDA GPU found: {e}"))),
        Err(_) => Err(none("no CUDA GPU found: the CUDA driver library could not be used".into())),
    }
}

/// The preferred shared-memory carveout (percent of the maximum shared memory per SM) set on the
/// chase kernels: 0 (prefer L1; the driver still gives a launch the shared memory it needs), or
/// the value of MEMSCOPE_CHASE_CARVEOUT (0..=100; -1 or "default": leave the driver's choice, for
/// comparisons). None: the driver's choice.
pub fn chase_carveout_percent() -> Option<i32> {
    match std::env::var("MEMSCOPE_CHASE_CARVEOUT") {
        Ok(v) if v.trim() == "default" || v.trim() == "-1" => None,
        Ok(v) => Some(v.trim().parse::<i32>().map(|p| p.clamp(0, 100)).unwrap_or(0)),
        Err(_) => Some(0),
    }
}

/// One GPU: device handle, its primary context, compiled modules and loaded functions.
pub struct Gpu {
    pub ordinal: usize,
    pub(crate) dev: sys::CUdevice,
    ctx: sys::CUcontext,
    pub cc: (i32, i32),
    /// PTX per module (survives a context rebuild: compiled once per process).
    ptx: RefCell<HashMap<Module, CString>>,
    modules: RefCell<HashMap<Module, sys::CUmodule>>,
    funcs: RefCell<HashMap<(Module, &'static str), sys::CUfunction>>,
    /// Incremented on every context rebuild; allocations of an older generation are gone.
    pub generation: u64,
    /// Set when a fault left the process's CUDA state unusable (a sticky error survives a context
    /// reset: the driver needs a new process); every later call fails with this message.
    poisoned: Option<String>,
}

// SAFETY: the raw handles are only used with the context made current on the calling thread.
unsafe impl Send for Gpu {}

impl Gpu {
    pub fn open(ordinal: usize) -> GpuResult<Self> {
        let n = device_count()?;
        if ordinal >= n {
            return Err(GpuError::NoGpu { reason: format!("cuda:{ordinal}: only {n} CUDA GPU(s) found") });
        }
        let mut dev = 0;
        unsafe { ck(sys::cuDeviceGet(&mut dev, ordinal as i32), "cuDeviceGet")? };
        let mut g = Gpu {
            ordinal,
            dev,
            ctx: std::ptr::null_mut(),
            cc: (0, 0),
            ptx: RefCell::default(),
            modules: RefCell::default(),
            funcs: RefCell::default(),
            generation: 0,
            poisoned: None,
        };
        g.retain()?;
        let major = g.attr(DeviceAttr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = g.attr(DeviceAttr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        g.cc = (major, minor);
        Ok(g)
    }

    fn retain(&mut self) -> GpuResult<()> {
        unsafe {
            ck(sys::cuDevicePrimaryCtxRetain(&mut self.ctx, self.dev), "cuDevicePrimaryCtxRetain")?;
            ck(sys::cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")
        }
    }

    /// The primary context (peer access is enabled between contexts).
    pub(crate) fn context(&self) -> sys::CUcontext {
        self.ctx
    }

    /// Why the process's CUDA state is unusable, if it is.
    pub fn poisoned(&self) -> Option<String> {
        self.poisoned.clone()
    }

    /// Make the context current on this thread.
    pub fn bind(&self) -> GpuResult<()> {
        if let Some(why) = &self.poisoned {
            return Err(GpuError::Poisoned { why: why.clone() });
        }
        unsafe { ck(sys::cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent") }
    }

    /// Drop the (possibly faulted) context and start a fresh one: modules are reloaded on demand,
    /// all device allocations are gone.
    pub fn rebuild(&mut self) -> GpuResult<()> {
        self.modules.borrow_mut().clear();
        self.funcs.borrow_mut().clear();
        unsafe {
            let _ = sys::cuDevicePrimaryCtxRelease_v2(self.dev);
            ck(sys::cuDevicePrimaryCtxReset_v2(self.dev), "cuDevicePrimaryCtxReset")?;
        }
        self.generation += 1;
        self.retain()
    }

    /// After an error: if the context is broken (a fault), drop it and start a fresh one. A sticky
    /// fault (an illegal address, say) survives the reset on current drivers (seen on the H200:
    /// cuDevicePrimaryCtxRetain then returns the same error): the target is then marked unusable
    /// and every later call says so, so the remaining probes fail fast with that message.
    pub fn recover(&mut self, e: memscope_core::TargetError) -> memscope_core::TargetError {
        use memscope_core::TargetError;
        if self.poisoned.is_some() {
            return e;
        }
        let r = unsafe { sys::cuCtxSynchronize() };
        if r == sys::CUresult::CUDA_SUCCESS {
            return e;
        }
        let rebuilt = self.rebuild().and_then(|_| {
            let mut free = 0usize;
            let mut total = 0usize;
            unsafe {
                ck(sys::cuMemGetInfo_v2(&mut free, &mut total), "cuMemGetInfo after rebuild")?;
                ck(sys::cuCtxSynchronize(), "cuCtxSynchronize after rebuild")
            }
        });
        match rebuilt {
            Ok(()) => TargetError::Device(format!("{e}; the CUDA context was rebuilt")),
            Err(e2) => {
                let why = format!(
                    "GPU cuda:{} is unusable in this process after a fault ({}): the driver keeps the error \
                     after a context reset; run the remaining probes again in a new memscope process",
                    self.ordinal,
                    describe(r)
                );
                self.poisoned = Some(why.clone());
                TargetError::Device(format!("{e}; rebuilding the CUDA context failed ({e2}); {why}"))
            }
        }
    }

    pub fn attr(&self, a: DeviceAttr) -> GpuResult<i32> {
        let mut v = 0;
        unsafe { ck(sys::cuDeviceGetAttribute(&mut v, a, self.dev), "cuDeviceGetAttribute")? };
        Ok(v)
    }

    pub fn name(&self) -> String {
        let mut buf = [0i8; 256];
        unsafe {
            if sys::cuDeviceGetName(buf.as_mut_ptr(), 255, self.dev) != sys::CUresult::CUDA_SUCCESS {
                return "unknown CUDA GPU".into();
            }
            std::ffi::CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned()
        }
    }

    pub fn pci_bus_id(&self) -> Option<String> {
        let mut buf = [0i8; 64];
        unsafe {
            if sys::cuDeviceGetPCIBusId(buf.as_mut_ptr(), 63, self.dev) != sys::CUresult::CUDA_SUCCESS {
                return None;
            }
            Some(std::ffi::CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned())
        }
    }

    pub fn driver_version(&self) -> Option<i32> {
        let mut v = 0;
        unsafe { (sys::cuDriverGetVersion(&mut v) == sys::CUresult::CUDA_SUCCESS).then_some(v) }
    }

    /// The arch NVRTC compiles for.
    pub fn arch(&self) -> String {
        registry::arch_name(self.cc.0, self.cc.1)
    }

    /// Wait for the device; a fault is returned as an error (call `recover`).
    pub fn sync(&self) -> GpuResult<()> {
        unsafe { ck(sys::cuCtxSynchronize(), "kernel execution (cuCtxSynchronize)") }
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        unsafe {
            for m in self.modules.borrow().values() {
                let _ = sys::cuModuleUnload(*m);
            }
            let _ = sys::cuDevicePrimaryCtxRelease_v2(self.dev);
        }
    }
}
