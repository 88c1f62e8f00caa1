//! The instruments of the link probes (issue 16): pinned host buffers mapped into the GPU's
//! address space (cuMemHostAlloc with DEVICEMAP, cuMemHostGetDevicePointer), and the gated timing
//! nvbandwidth describes in its README ("Measurement Details"): a kernel holds the stream(s) on a
//! host flag while the copies and their events are enqueued, so the enqueueing is not timed and
//! the two directions of a bidirectional test start together; the host then releases the flag.

use crate::driver::ck;
use crate::kernels::Module;
use crate::CudaTarget;
use cudarc::driver::sys;
use memscope_core::TargetError;
use std::ffi::c_void;

/// Pinned, mapped host memory (freed on drop).
pub(crate) struct Pinned {
    pub ptr: *mut c_void,
    /// The device's pointer to the same bytes.
    pub dev: u64,
    pub bytes: u64,
}

impl Pinned {
    pub fn new(bytes: u64) -> Result<Pinned, TargetError> {
        let mut ptr = std::ptr::null_mut();
        let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
        unsafe { ck(sys::cuMemHostAlloc(&mut ptr, bytes as usize, flags), &format!("cuMemHostAlloc({bytes} bytes)"))? };
        let mut dev = 0;
        let r = unsafe { ck(sys::cuMemHostGetDevicePointer_v2(&mut dev, ptr, 0), "cuMemHostGetDevicePointer") };
        if let Err(e) = r {
            unsafe {
                let _ = sys::cuMemFreeHost(ptr);
            }
            return Err(e);
        }
        Ok(Pinned { ptr, dev, bytes })
    }

    /// The buffer as 64-bit words.
    pub fn words(&mut self) -> &mut [u64] {
        // SAFETY: cuMemHostAlloc returns page-aligned memory of `bytes` bytes owned by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut u64, (self.bytes / 8) as usize) }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        unsafe {
            let _ = sys::cuMemFreeHost(self.ptr);
        }
    }
}

/// One stream's work in a gated measurement: enqueue one copy on the given stream.
pub(crate) type Op<'a> = Box<dyn FnMut(&mut CudaTarget, sys::CUstream) -> Result<(), TargetError> + 'a>;

fn event() -> Result<sys::CUevent, TargetError> {
    let mut e = std::ptr::null_mut();
    unsafe { ck(sys::cuEventCreate(&mut e, sys::CUevent_flags::CU_EVENT_DEFAULT as u32), "cuEventCreate")? };
    Ok(e)
}

/// Milliseconds for `n` ops on each stream (`lanes`: one op per stream, at most a few), all held
/// behind the gate kernel on the first stream until everything is enqueued; each stream is timed
/// by its own events. `flag`: a pinned word the host sets to release the gate.
pub(crate) fn gated_ms(
    t: &mut CudaTarget,
    flag: &mut Pinned,
    lanes: &mut [(sys::CUstream, Op<'_>)],
    n: usize,
) -> Result<Vec<f64>, TargetError> {
    let mut evs: Vec<sys::CUevent> = Vec::new();
    let res = (|| {
        flag.words()[0] = 0;
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        let s0 = lanes[0].0;
        // (the gate gives up after 2 s: a flag never seen cannot hang the GPU)
        t.gpu.launch(Module::Link, "link_spin", 1, 1, 0, &[flag.dev, 2_000_000_000], s0)?;
        let gate = event()?;
        evs.push(gate);
        unsafe { ck(sys::cuEventRecord(gate, s0), "cuEventRecord")? };
        let mut marks = Vec::new();
        for (s, op) in lanes.iter_mut() {
            if *s != s0 {
                unsafe { ck(sys::cuStreamWaitEvent(*s, gate, 0), "cuStreamWaitEvent")? };
            }
            let (a, b) = (event()?, event()?);
            evs.push(a);
            evs.push(b);
            unsafe { ck(sys::cuEventRecord(a, *s), "cuEventRecord")? };
            for _ in 0..n {
                op(t, *s)?;
            }
            unsafe { ck(sys::cuEventRecord(b, *s), "cuEventRecord")? };
            marks.push((a, b));
        }
        // Release the gate.
        unsafe { std::ptr::write_volatile(flag.ptr as *mut u32, 1) };
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        let mut out = Vec::new();
        for (a, b) in marks {
            let mut ms = 0f32;
            unsafe {
                ck(sys::cuEventSynchronize(b), "copy execution (cuEventSynchronize)")?;
                ck(sys::cuEventElapsedTime_v2(&mut ms, a, b), "cuEventElapsedTime")?;
            }
            out.push(ms as f64);
        }
        Ok(out)
    })();
    if res.is_err() {
        // (never leave the gate closed behind an error)
        unsafe { std::ptr::write_volatile(flag.ptr as *mut u32, 1) };
        let _ = t.gpu.sync();
    }
    for e in evs {
        unsafe {
            let _ = sys::cuEventDestroy_v2(e);
        }
    }
    res
}
