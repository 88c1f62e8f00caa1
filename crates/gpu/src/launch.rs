//! Kernel functions and launches (docs/ARCHITECTURE.md): the function cache (modules compiled by NVRTC and
//! loaded on first use, behind `&self` so launches work inside closures), the per-function
//! attributes set at load (the chase kernels' carveout, the TMA copy's dynamic shared memory),
//! module globals, the occupancy query, and launches with typed arguments; the 64-bit-only form
//! the probes use is a thin call of it.

use super::{chase_carveout_percent, ck, DeviceAttr, FuncAttr, Function, Gpu, GpuError, GpuResult, Module, Stream};
use cudarc::driver::sys;
use std::ffi::{c_void, CString};

/// A kernel argument.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arg {
    Ptr(u64),
    U64(u64),
    I32(i32),
    U32(u32),
    F32(f32),
}

impl Gpu {
    /// A kernel function, compiling and loading its module on first use.
    pub fn func(&self, m: Module, name: &'static str) -> GpuResult<Function> {
        if let Some(f) = self.funcs.borrow().get(&(m, name)) {
            return Ok(*f);
        }
        let module = self.module(m)?;
        let cname = CString::new(name).map_err(|_| GpuError::invalid(format!("kernel name {name:?}")))?;
        let mut f = std::ptr::null_mut();
        unsafe { ck(sys::cuModuleGetFunction(&mut f, module, cname.as_ptr()), &format!("kernel {name}"))? };
        if m == Module::Chase || m == Module::ConstMem || m == Module::SmMap {
            // The chase kernels need at most a few hundred bytes of shared memory (47 KB with per-hop
            // records): ask for the smallest shared-memory carveout, so the unified L1/shared array
            // gives L1 all it can (left to itself the driver picked a split with a 64 KiB L1 on the H200).
            if let Some(pct) = chase_carveout_percent() {
                let attr = FuncAttr::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT;
                unsafe {
                    ck(sys::cuFuncSetAttribute(f, attr, pct), &format!("cuFuncSetAttribute({name}, carveout {pct}%)"))?
                };
            }
        }
        if m == Module::BwTma {
            // The TMA copy stages its chunks in dynamic shared memory beyond the default 48 KiB.
            let optin = self.attr(DeviceAttr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
            let mut fixed = 0;
            let size = FuncAttr::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES;
            let max_dyn = FuncAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
            unsafe {
                ck(sys::cuFuncGetAttribute(&mut fixed, size, f), "cuFuncGetAttribute(shared size)")?;
                ck(sys::cuFuncSetAttribute(f, max_dyn, optin - fixed), "cuFuncSetAttribute(max dynamic shared)")?;
            }
        }
        self.funcs.borrow_mut().insert((m, name), f);
        Ok(f)
    }

    /// The loaded module, compiling (once per process) and loading it on first use.
    fn module(&self, m: Module) -> GpuResult<sys::CUmodule> {
        if let Some(module) = self.modules.borrow().get(&m) {
            return Ok(*module);
        }
        if !self.ptx.borrow().contains_key(&m) {
            let ptx = m.compile(&self.arch())?;
            let ptx = CString::new(ptx).map_err(|e| GpuError::invalid(format!("PTX of {}: {e}", m.file())))?;
            self.ptx.borrow_mut().insert(m, ptx);
        }
        let mut module = std::ptr::null_mut();
        {
            let ptx = self.ptx.borrow();
            let image = ptx[&m].as_ptr() as *const c_void;
            unsafe { ck(sys::cuModuleLoadData(&mut module, image), &format!("cuModuleLoadData({})", m.file()))? };
        }
        self.modules.borrow_mut().insert(m, module);
        Ok(module)
    }

    /// Set a function attribute (a carveout, the dynamic shared-memory limit).
    pub fn set_func_attr(&self, m: Module, name: &'static str, a: FuncAttr, v: i32) -> GpuResult<()> {
        let f = self.func(m, name)?;
        unsafe { ck(sys::cuFuncSetAttribute(f, a, v), &format!("cuFuncSetAttribute({name}, {a:?} = {v})")) }
    }

    /// Read a function attribute (its static shared memory, say).
    pub fn func_attr(&self, m: Module, name: &'static str, a: FuncAttr) -> GpuResult<i32> {
        let f = self.func(m, name)?;
        let mut v = 0;
        unsafe { ck(sys::cuFuncGetAttribute(&mut v, a, f), &format!("cuFuncGetAttribute({name}, {a:?})"))? };
        Ok(v)
    }

    /// Blocks of `block` threads of kernel `name` resident on one SM at once (occupancy API).
    pub fn resident_blocks(&self, m: Module, name: &'static str, block: u32, dyn_smem_bytes: usize) -> GpuResult<u32> {
        let f = self.func(m, name)?;
        let mut n = 0i32;
        let flags = sys::CUoccupancy_flags_enum::CU_OCCUPANCY_DEFAULT as u32;
        unsafe {
            ck(
                sys::cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
                    &mut n,
                    f,
                    block as i32,
                    dyn_smem_bytes,
                    flags,
                ),
                &format!("occupancy of {name}"),
            )?
        };
        Ok(n.max(0) as u32)
    }

    /// The device address and size of a module's global variable (a `__constant__` bank, say),
    /// loading the module on first use.
    pub fn module_global(&self, m: Module, kernel: &'static str, var: &str) -> GpuResult<(u64, u64)> {
        self.func(m, kernel)?;
        let module = self.module(m)?;
        let cname = CString::new(var).map_err(|e| GpuError::invalid(e.to_string()))?;
        let (mut ptr, mut bytes) = (0u64, 0usize);
        unsafe {
            ck(
                sys::cuModuleGetGlobal_v2(&mut ptr, &mut bytes, module, cname.as_ptr()),
                &format!("cuModuleGetGlobal({var})"),
            )?;
        }
        Ok((ptr, bytes as u64))
    }

    /// Launch kernel `name` of `m` on `stream` (null: the legacy default stream) with typed
    /// arguments. Launch errors are checked; execution errors show at the next sync.
    #[allow(clippy::too_many_arguments)]
    pub fn launch_args(
        &self,
        m: Module,
        name: &'static str,
        grid: u32,
        block: u32,
        shmem: u32,
        args: &[Arg],
        stream: Stream,
    ) -> GpuResult<()> {
        let f = self.func(m, name)?;
        launch_typed(f, name, grid, block, shmem, args, stream)
    }

    /// Launch a kernel whose parameters are all 64-bit (pointers or u64): the same launch, the
    /// values passed as they are.
    #[allow(clippy::too_many_arguments)]
    pub fn launch(
        &self,
        m: Module,
        name: &'static str,
        grid: u32,
        block: u32,
        shmem: u32,
        args: &[u64],
        stream: Stream,
    ) -> GpuResult<()> {
        let f = self.func(m, name)?;
        let mut vals: Vec<u64> = args.to_vec();
        let mut ptrs: Vec<*mut c_void> = vals.iter_mut().map(|v| v as *mut u64 as *mut c_void).collect();
        launch_ptrs(f, name, grid, block, shmem, &mut ptrs, stream)
    }
}

/// One launch of a loaded function with typed arguments: each is passed by pointer to a value of
/// its own width.
pub fn launch_typed(
    f: Function,
    name: &str,
    grid: u32,
    block: u32,
    shmem: u32,
    args: &[Arg],
    stream: Stream,
) -> GpuResult<()> {
    let mut vals: Vec<Arg> = args.to_vec();
    let mut ptrs: Vec<*mut c_void> = vals
        .iter_mut()
        .map(|a| match a {
            Arg::Ptr(v) | Arg::U64(v) => v as *mut u64 as *mut c_void,
            Arg::I32(v) => v as *mut i32 as *mut c_void,
            Arg::U32(v) => v as *mut u32 as *mut c_void,
            Arg::F32(v) => v as *mut f32 as *mut c_void,
        })
        .collect();
    launch_ptrs(f, name, grid, block, shmem, &mut ptrs, stream)
}

/// cuLaunchKernel with a 1-D grid and block and the parameter pointers.
fn launch_ptrs(
    f: Function,
    name: &str,
    grid: u32,
    block: u32,
    shmem: u32,
    ptrs: &mut [*mut c_void],
    stream: Stream,
) -> GpuResult<()> {
    unsafe {
        ck(
            sys::cuLaunchKernel(f, grid, 1, 1, block, 1, 1, shmem, stream, ptrs.as_mut_ptr(), std::ptr::null_mut()),
            &format!("launch {name}<<<{grid}, {block}, {shmem}>>>"),
        )
    }
}
