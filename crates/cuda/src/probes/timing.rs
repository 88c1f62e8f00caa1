//! Event timing of a batch of launches on a stream (the instrument of every GPU bandwidth probe:
//! events around batches (docs/ADDING_A_PROBE.md), seed 003's measurement of an operation's time), on the GPU
//! layer's events.

use crate::gpu::{Event, Stream};
use crate::CudaTarget;
use memscope_core::TargetError;

/// Milliseconds for `n` calls of `f` between two events on `stream`.
pub(crate) fn timed<E>(
    t: &mut CudaTarget,
    stream: Stream,
    n: usize,
    mut f: impl FnMut(&mut CudaTarget) -> Result<(), E>,
) -> Result<f64, TargetError>
where
    TargetError: From<E>,
{
    let (a, b) = (Event::new()?, Event::new()?);
    a.record(stream)?;
    for _ in 0..n {
        f(t)?;
    }
    b.record(stream)?;
    b.synchronize("kernel execution (cuEventSynchronize)")?;
    Ok(a.elapsed_ms(&b)? as f64)
}
