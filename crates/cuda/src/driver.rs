//! A thin, checked layer over the CUDA driver API (cudarc 0.19 `sys`): library presence, the
//! primary context and its rebuild after a fault, raw allocations checked against free memory
//! (no managed memory), the NVRTC module cache, launches with 64-bit parameters, and event timing.
//! DESIGN.md measurement rules: every CUDA call is checked.

use crate::kernels::{self, Module};
use cudarc::driver::sys;
use memscope_core::TargetError;
use std::collections::HashMap;
use std::ffi::{c_void, CString};

/// Describe a driver result ("CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access ...").
pub(crate) fn describe(r: sys::CUresult) -> String {
    let e = cudarc::driver::DriverError(r);
    let text = e.error_string().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    format!("{r:?}: {text}")
}

/// Check one driver call.
pub(crate) fn ck(r: sys::CUresult, what: &str) -> Result<(), TargetError> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(TargetError::Device(format!("{what}: {}", describe(r))))
    }
}

/// Whether libcuda can be loaded (cudarc panics at the first call otherwise).
pub(crate) fn libcuda_present() -> bool {
    // SAFETY: only tries to dlopen the candidate library names.
    unsafe { sys::is_culib_present() }
}

/// Number of devices, or why none.
pub(crate) fn device_count() -> Result<usize, String> {
    if !libcuda_present() {
        return Err("no CUDA GPU found: libcuda.so (the NVIDIA driver) cannot be loaded".into());
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
        Ok(Ok(0)) => Err("no CUDA GPU found: the driver reports 0 devices".into()),
        Ok(Ok(n)) => Ok(n),
        Ok(Err(e)) => Err(format!("no CUDA GPU found: {e}")),
        Err(_) => Err("no CUDA GPU found: the CUDA driver library could not be used".into()),
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

/// One GPU: device handle, its primary context, compiled modules.
pub(crate) struct Gpu {
    pub ordinal: usize,
    pub dev: sys::CUdevice,
    ctx: sys::CUcontext,
    pub cc: (i32, i32),
    /// PTX per module (survives a context rebuild: compiled once per process).
    ptx: HashMap<Module, CString>,
    modules: HashMap<Module, sys::CUmodule>,
    funcs: HashMap<(Module, &'static str), sys::CUfunction>,
    /// Incremented on every context rebuild; allocations of an older generation are gone.
    pub generation: u64,
    /// Set when a fault left the process's CUDA state unusable (a sticky error survives a context
    /// reset: the driver needs a new process); every later call fails with this message.
    poisoned: Option<String>,
}

// SAFETY: the raw handles are only used with the context made current on the calling thread.
unsafe impl Send for Gpu {}

impl Gpu {
    pub fn open(ordinal: usize) -> Result<Self, TargetError> {
        let n = device_count().map_err(TargetError::Device)?;
        if ordinal >= n {
            return Err(TargetError::Device(format!("cuda:{ordinal}: only {n} CUDA GPU(s) found")));
        }
        let mut dev = 0;
        unsafe { ck(sys::cuDeviceGet(&mut dev, ordinal as i32), "cuDeviceGet")? };
        let mut g = Gpu {
            ordinal,
            dev,
            ctx: std::ptr::null_mut(),
            cc: (0, 0),
            ptx: HashMap::new(),
            modules: HashMap::new(),
            funcs: HashMap::new(),
            generation: 0,
            poisoned: None,
        };
        g.retain()?;
        let major = g.attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = g.attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        g.cc = (major, minor);
        Ok(g)
    }

    fn retain(&mut self) -> Result<(), TargetError> {
        unsafe {
            ck(sys::cuDevicePrimaryCtxRetain(&mut self.ctx, self.dev), "cuDevicePrimaryCtxRetain")?;
            ck(sys::cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")
        }
    }

    /// The primary context (peer access is enabled between contexts).
    pub fn context(&self) -> sys::CUcontext {
        self.ctx
    }

    /// Why the process's CUDA state is unusable, if it is.
    pub fn poisoned(&self) -> Option<String> {
        self.poisoned.clone()
    }

    /// Make the context current on this thread.
    pub fn bind(&self) -> Result<(), TargetError> {
        if let Some(why) = &self.poisoned {
            return Err(TargetError::Device(why.clone()));
        }
        unsafe { ck(sys::cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent") }
    }

    /// Drop the (possibly faulted) context and start a fresh one: modules are reloaded on demand,
    /// all device allocations are gone.
    pub fn rebuild(&mut self) -> Result<(), TargetError> {
        self.modules.clear();
        self.funcs.clear();
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
    pub fn recover(&mut self, e: TargetError) -> TargetError {
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

    pub fn attr(&self, a: sys::CUdevice_attribute) -> Result<i32, TargetError> {
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

    /// (free, total) device memory in bytes.
    pub fn mem_info(&self) -> Result<(u64, u64), TargetError> {
        let (mut free, mut total) = (0usize, 0usize);
        unsafe { ck(sys::cuMemGetInfo_v2(&mut free, &mut total), "cuMemGetInfo")? };
        Ok((free as u64, total as u64))
    }

    /// Device allocation (cuMemAlloc, never managed), checked against free memory with 256 MiB kept
    /// in reserve.
    pub fn malloc(&self, bytes: u64) -> Result<u64, TargetError> {
        self.bind()?;
        let (free, _) = self.mem_info()?;
        let reserve = 256 << 20;
        if bytes.saturating_add(reserve) > free {
            return Err(TargetError::OutOfMemory { asked_bytes: bytes, free_bytes: free.saturating_sub(reserve) });
        }
        let mut p = 0;
        unsafe { ck(sys::cuMemAlloc_v2(&mut p, bytes.max(1) as usize), &format!("cuMemAlloc({bytes} bytes)"))? };
        Ok(p)
    }

    pub fn free(&self, ptr: u64) {
        let _ = self.bind();
        unsafe {
            let _ = sys::cuMemFree_v2(ptr);
        }
    }

    pub fn htod<T: Copy>(&self, dst: u64, src: &[T]) -> Result<(), TargetError> {
        let bytes = std::mem::size_of_val(src);
        unsafe { ck(sys::cuMemcpyHtoD_v2(dst, src.as_ptr() as *const c_void, bytes), "cuMemcpyHtoD") }
    }

    pub fn dtoh<T: Copy + Default>(&self, src: u64, n: usize) -> Result<Vec<T>, TargetError> {
        let mut v = vec![T::default(); n];
        let bytes = n * std::mem::size_of::<T>();
        unsafe { ck(sys::cuMemcpyDtoH_v2(v.as_mut_ptr() as *mut c_void, src, bytes), "cuMemcpyDtoH")? };
        Ok(v)
    }

    pub fn memset(&self, dst: u64, bytes: u64) -> Result<(), TargetError> {
        unsafe { ck(sys::cuMemsetD8_v2(dst, 0, bytes as usize), "cuMemsetD8") }
    }

    /// The arch NVRTC compiles for.
    pub fn arch(&self) -> String {
        kernels::arch_name(self.cc.0, self.cc.1)
    }

    /// A kernel function, compiling and loading its module on first use.
    pub fn func(&mut self, m: Module, name: &'static str) -> Result<sys::CUfunction, TargetError> {
        if let Some(f) = self.funcs.get(&(m, name)) {
            return Ok(*f);
        }
        if !self.ptx.contains_key(&m) {
            let ptx = kernels::compile_ptx(m.source(), m.file(), &self.arch()).map_err(TargetError::Device)?;
            self.ptx.insert(m, CString::new(ptx).map_err(|e| TargetError::Device(e.to_string()))?);
        }
        if !self.modules.contains_key(&m) {
            let mut module = std::ptr::null_mut();
            let image = self.ptx[&m].as_ptr() as *const c_void;
            unsafe { ck(sys::cuModuleLoadData(&mut module, image), &format!("cuModuleLoadData({})", m.file()))? };
            self.modules.insert(m, module);
        }
        let cname = CString::new(name).expect("kernel name");
        let mut f = std::ptr::null_mut();
        unsafe {
            ck(sys::cuModuleGetFunction(&mut f, self.modules[&m], cname.as_ptr()), &format!("kernel {name}"))?;
        }
        if m == Module::Chase || m == Module::ConstMem {
            // The chase kernels need at most a few hundred bytes of shared memory (47 KB with per-hop
            // records): ask for the smallest shared-memory carveout, so the unified L1/shared array
            // gives L1 all it can (left to itself the driver picked a split with a 64 KiB L1 on the H200).
            if let Some(pct) = chase_carveout_percent() {
                let attr = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT;
                unsafe {
                    ck(sys::cuFuncSetAttribute(f, attr, pct), &format!("cuFuncSetAttribute({name}, carveout {pct}%)"))?
                };
            }
        }
        if m == Module::BwTma {
            // The TMA copy stages its chunks in dynamic shared memory beyond the default 48 KiB.
            let optin = self.attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
            let mut fixed = 0;
            let size = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES;
            let max_dyn = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
            unsafe {
                ck(sys::cuFuncGetAttribute(&mut fixed, size, f), "cuFuncGetAttribute(shared size)")?;
                ck(sys::cuFuncSetAttribute(f, max_dyn, optin - fixed), "cuFuncSetAttribute(max dynamic shared)")?;
            }
        }
        self.funcs.insert((m, name), f);
        Ok(f)
    }

    /// The device address and size of a module's global variable (a `__constant__` bank, say),
    /// loading the module on first use.
    pub fn module_global(&mut self, m: Module, kernel: &'static str, var: &str) -> Result<(u64, u64), TargetError> {
        self.func(m, kernel)?;
        let cname = CString::new(var).map_err(|e| TargetError::Device(e.to_string()))?;
        let (mut ptr, mut bytes) = (0u64, 0usize);
        unsafe {
            ck(
                sys::cuModuleGetGlobal_v2(&mut ptr, &mut bytes, self.modules[&m], cname.as_ptr()),
                &format!("cuModuleGetGlobal({var})"),
            )?;
        }
        Ok((ptr, bytes as u64))
    }

    /// Launch a kernel whose parameters are all 64-bit (pointers or u64) on `stream` (null: the
    /// legacy default stream). Launch errors are checked; execution errors show at the next sync.
    #[allow(clippy::too_many_arguments)]
    pub fn launch(
        &mut self,
        m: Module,
        name: &'static str,
        grid: u32,
        block: u32,
        shmem: u32,
        args: &[u64],
        stream: sys::CUstream,
    ) -> Result<(), TargetError> {
        let f = self.func(m, name)?;
        let mut vals: Vec<u64> = args.to_vec();
        let mut ptrs: Vec<*mut c_void> = vals.iter_mut().map(|v| v as *mut u64 as *mut c_void).collect();
        unsafe {
            ck(
                sys::cuLaunchKernel(f, grid, 1, 1, block, 1, 1, shmem, stream, ptrs.as_mut_ptr(), std::ptr::null_mut()),
                &format!("launch {name}<<<{grid}, {block}, {shmem}>>>"),
            )
        }
    }

    /// Wait for the device; a fault is returned as TargetError::Device (call `recover`).
    pub fn sync(&self) -> Result<(), TargetError> {
        unsafe { ck(sys::cuCtxSynchronize(), "kernel execution (cuCtxSynchronize)") }
    }

    /// A fresh non-blocking stream (graph capture needs one).
    pub fn new_stream(&self) -> Result<sys::CUstream, TargetError> {
        let mut s = std::ptr::null_mut();
        unsafe {
            ck(sys::cuStreamCreate(&mut s, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32), "cuStreamCreate")?;
        }
        Ok(s)
    }

    pub fn destroy_stream(&self, s: sys::CUstream) {
        unsafe {
            let _ = sys::cuStreamDestroy_v2(s);
        }
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        unsafe {
            for m in self.modules.values() {
                let _ = sys::cuModuleUnload(*m);
            }
            let _ = sys::cuDevicePrimaryCtxRelease_v2(self.dev);
        }
    }
}
