//! Event timing of a batch of launches on a stream (the instrument of every GPU bandwidth probe:
//! DESIGN.md's events around batches, seed 003's measurement of an operation's time).

use crate::CudaTarget;
use memscope_core::TargetError;

/// Milliseconds for `n` calls of `f` between two events on `stream`.
pub(crate) fn timed(
    t: &mut CudaTarget,
    stream: cudarc::driver::sys::CUstream,
    n: usize,
    mut f: impl FnMut(&mut CudaTarget) -> Result<(), TargetError>,
) -> Result<f64, TargetError> {
    use crate::driver::ck;
    use cudarc::driver::sys;
    let mut a = std::ptr::null_mut();
    let mut b = std::ptr::null_mut();
    unsafe {
        ck(sys::cuEventCreate(&mut a, sys::CUevent_flags::CU_EVENT_DEFAULT as u32), "cuEventCreate")?;
        ck(sys::cuEventCreate(&mut b, sys::CUevent_flags::CU_EVENT_DEFAULT as u32), "cuEventCreate")?;
    }
    let res = (|| {
        unsafe { ck(sys::cuEventRecord(a, stream), "cuEventRecord")? };
        for _ in 0..n {
            f(t)?;
        }
        unsafe {
            ck(sys::cuEventRecord(b, stream), "cuEventRecord")?;
            ck(sys::cuEventSynchronize(b), "kernel execution (cuEventSynchronize)")?;
            let mut ms = 0f32;
            ck(sys::cuEventElapsedTime_v2(&mut ms, a, b), "cuEventElapsedTime")?;
            Ok(ms as f64)
        }
    })();
    unsafe {
        let _ = sys::cuEventDestroy_v2(a);
        let _ = sys::cuEventDestroy_v2(b);
    }
    res
}
