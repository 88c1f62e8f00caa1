//! Warming the driver's kernel cache (docs/PERFORMANCE.md, "The default run's time"): each module's
//! PTX compiled by NVRTC, loaded into the GPU's primary context (the driver compiles it to machine
//! code and keeps that in its compute cache) and unloaded, so a later load of the same PTX is a
//! cache hit. Called on a background thread by crates/cuda/src/prewarm.rs.

use super::{ck, GpuResult, Module};
use cudarc::driver::sys;
use std::ffi::{c_void, CString};

/// Compile and load each of `modules` for GPU `ordinal` (compute capability `arch`, e.g. "sm_90")
/// on the calling thread, in the GPU's primary context (retained here and released after); the
/// files of the modules that failed (their probes compile them again and report the error).
pub fn warm_module_cache(ordinal: usize, arch: &str, modules: &[Module]) -> GpuResult<Vec<&'static str>> {
    let mut dev = 0;
    let mut ctx = std::ptr::null_mut();
    // SAFETY: driver calls with valid out-pointers.
    unsafe {
        ck(sys::cuDeviceGet(&mut dev, ordinal as i32), "cuDeviceGet")?;
        ck(sys::cuDevicePrimaryCtxRetain(&mut ctx, dev), "cuDevicePrimaryCtxRetain")?;
    }
    let mut failed = Vec::new();
    // SAFETY: the context was just retained.
    if unsafe { ck(sys::cuCtxSetCurrent(ctx), "cuCtxSetCurrent") }.is_ok() {
        for &m in modules {
            let Some(ptx) = m.compile(arch).ok().and_then(|p| CString::new(p).ok()) else {
                failed.push(m.file());
                continue;
            };
            let mut module = std::ptr::null_mut();
            // SAFETY: a NUL-terminated PTX image; the module is unloaded right after.
            unsafe {
                if ck(sys::cuModuleLoadData(&mut module, ptx.as_ptr() as *const c_void), "cuModuleLoadData").is_ok() {
                    sys::cuModuleUnload(module);
                } else {
                    failed.push(m.file());
                }
            }
        }
    } else {
        failed.extend(modules.iter().map(|m| m.file()));
    }
    // SAFETY: releases the retain above.
    unsafe {
        sys::cuDevicePrimaryCtxRelease_v2(dev);
    }
    Ok(failed)
}
