//! Warming the driver's kernel cache (docs/PERFORMANCE.md, "The default run's time"): each module's
//! PTX compiled by NVRTC (once per process: the probes reuse it), loaded into the GPU's primary
//! context (the driver compiles it to machine code and keeps that in its compute cache) and
//! unloaded, so a later load of the same PTX is a cache hit. The modules are shared out among a few
//! threads, so a cold cache is compiled on several host cores at once. Called on a background
//! thread by crates/cuda/src/prewarm.rs.

use super::{ck, GpuResult, Module};
use cudarc::driver::sys;
use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The most threads that compile and load modules at once.
pub const MAX_WARM_THREADS: usize = 8;

/// How many threads warm `modules`: up to `MAX_WARM_THREADS`, leaving two of the `cpus` the caller
/// may use (the probes' thread and the CPU lane's core), at least one, never more than the modules.
pub fn warm_threads(modules: usize, cpus: usize) -> usize {
    cpus.saturating_sub(2).clamp(1, MAX_WARM_THREADS).min(modules.max(1))
}

/// What the warming did: the modules that failed (their probes compile them again and report the
/// error) and how many threads did it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WarmReport {
    pub failed: Vec<&'static str>,
    pub threads: usize,
}

/// Compile and load each of `modules` for GPU `ordinal` (compute capability `arch`, e.g. "sm_90"),
/// in the GPU's primary context (retained here and released after), on `warm_threads` threads that
/// take the modules in order (the first ones first: the caller lists what is needed soonest first).
/// The threads inherit the calling thread's CPU affinity.
pub fn warm_module_cache(ordinal: usize, arch: &str, modules: &[Module]) -> GpuResult<WarmReport> {
    let mut dev = 0;
    let mut ctx = std::ptr::null_mut();
    // SAFETY: driver calls with valid out-pointers.
    unsafe {
        ck(sys::cuDeviceGet(&mut dev, ordinal as i32), "cuDeviceGet")?;
        ck(sys::cuDevicePrimaryCtxRetain(&mut ctx, dev), "cuDevicePrimaryCtxRetain")?;
    }
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let threads = warm_threads(modules.len(), cpus);
    let next = AtomicUsize::new(0);
    let failed = Mutex::new(Vec::new());
    // (a context handle is a plain pointer the driver lets any thread make current)
    let ctx_addr = ctx as usize;
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                // SAFETY: the context was retained above and is released only after every thread ends.
                let current =
                    unsafe { ck(sys::cuCtxSetCurrent(ctx_addr as sys::CUcontext), "cuCtxSetCurrent") }.is_ok();
                while let Some(&m) = modules.get(next.fetch_add(1, Ordering::Relaxed)) {
                    if !(current && compile_and_load(m, arch)) {
                        if let Ok(mut f) = failed.lock() {
                            f.push(m.file());
                        }
                    }
                }
            });
        }
    });
    // SAFETY: releases the retain above.
    unsafe {
        sys::cuDevicePrimaryCtxRelease_v2(dev);
    }
    let mut failed = failed.into_inner().unwrap_or_default();
    failed.sort_unstable();
    Ok(WarmReport { failed, threads })
}

/// NVRTC, then a load into the current context and an unload; whether both worked.
fn compile_and_load(m: Module, arch: &str) -> bool {
    let Some(ptx) = m.compile(arch).ok().and_then(|p| CString::new(p).ok()) else { return false };
    let mut module = std::ptr::null_mut();
    // SAFETY: a NUL-terminated PTX image; the module is unloaded right after.
    unsafe {
        if ck(sys::cuModuleLoadData(&mut module, ptx.as_ptr() as *const c_void), "cuModuleLoadData").is_ok() {
            sys::cuModuleUnload(module);
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_leave_two_cpus_and_never_outnumber_the_modules() {
        assert_eq!(warm_threads(14, 16), MAX_WARM_THREADS);
        assert_eq!(warm_threads(14, 6), 4);
        assert_eq!(warm_threads(3, 16), 3);
        assert_eq!(warm_threads(14, 2), 1);
        assert_eq!(warm_threads(14, 1), 1);
        assert_eq!(warm_threads(0, 16), 1);
    }
}
