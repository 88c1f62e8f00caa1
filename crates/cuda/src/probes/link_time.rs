//! The instruments of the link probes (docs/INTERCONNECT.md): pinned host buffers mapped into the GPU's
//! address space (cuMemHostAlloc with DEVICEMAP, cuMemHostGetDevicePointer), and the gated timing
//! nvbandwidth describes in its README ("Measurement Details"): a kernel holds the stream(s) on a
//! host flag while the copies and their events are enqueued, so the enqueueing is not timed and
//! the two directions of a bidirectional test start together; the host then releases the flag.

use crate::gpu::{Event, Module, Stream};
use crate::CudaTarget;
use memscope_core::TargetError;

/// Pinned, mapped host memory (freed on drop): the layer's mapped host buffer.
pub(crate) use crate::gpu::MappedHost as Pinned;

/// One stream's work in a gated measurement: enqueue one copy on the given stream.
pub(crate) type Op<'a> = Box<dyn FnMut(&mut CudaTarget, Stream) -> Result<(), TargetError> + 'a>;

/// Milliseconds for `n` ops on each stream (`lanes`: one op per stream, at most a few), all held
/// behind the gate kernel on the first stream until everything is enqueued; each stream is timed
/// by its own events. `flag`: a pinned word the host sets to release the gate.
pub(crate) fn gated_ms(
    t: &mut CudaTarget,
    flag: &mut Pinned,
    lanes: &mut [(Stream, Op<'_>)],
    n: usize,
) -> Result<Vec<f64>, TargetError> {
    let res = (|| {
        flag.words()[0] = 0;
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        let s0 = lanes[0].0;
        // (the gate gives up after 2 s: a flag never seen cannot hang the GPU)
        t.gpu.launch(Module::Link, "link_spin", 1, 1, 0, &[flag.dev, 2_000_000_000], s0)?;
        let gate = Event::new()?;
        gate.record(s0)?;
        let mut marks = Vec::new();
        for (s, op) in lanes.iter_mut() {
            if *s != s0 {
                gate.wait_on(*s)?;
            }
            let (a, b) = (Event::new()?, Event::new()?);
            a.record(*s)?;
            for _ in 0..n {
                op(t, *s)?;
            }
            b.record(*s)?;
            marks.push((a, b));
        }
        // Release the gate.
        unsafe { std::ptr::write_volatile(flag.ptr as *mut u32, 1) };
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        let mut out = Vec::new();
        for (a, b) in &marks {
            b.synchronize("copy execution (cuEventSynchronize)")?;
            out.push(a.elapsed_ms(b)? as f64);
        }
        Ok(out)
    })();
    if res.is_err() {
        // (never leave the gate closed behind an error)
        unsafe { std::ptr::write_volatile(flag.ptr as *mut u32, 1) };
        let _ = t.gpu.sync();
    }
    res
}
