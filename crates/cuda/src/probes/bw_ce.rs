//! The device-local copy through the copy engines (cuMemcpyDtoDAsync, nvbandwidth's
//! device_local_copy; docs/INTERCONNECT.md), measured at every size beside the SMs' copies of `bw`.

use super::bw_launch::{size_label, time_per_launch, Bufs, Config, Kind};
use super::summarize;
use crate::CudaTarget;
use memscope_core::{Confidence, Finding, ProbeError, Series};

/// The driver's cuMemcpyDtoDAsync (the copy engines) at every size, `reps` samples each, measured
/// apart from the tuning so the copy engine's own figure stands beside the SMs' best.
pub(super) fn copy_engine_curve(
    t: &mut CudaTarget,
    bufs: &Bufs,
    sizes: &[u64],
    reps: usize,
) -> Result<(Finding, Series), ProbeError> {
    let (mut xs, mut ys, mut mads) = (vec![], vec![], vec![]);
    let mut last = None;
    for &size in sizes {
        let secs = time_per_launch(t, Kind::Copy, bufs, size, Config::Driver, reps)?;
        let rates: Vec<f64> = secs.iter().map(|s| 2.0 * size as f64 / s).collect();
        let (m, spread) = summarize(&rates, "copy-engine bandwidth")?;
        xs.push(size as f64);
        ys.push(m);
        mads.push(spread.mad);
        last = Some((size, m, spread));
    }
    let (size, m, spread) = last.ok_or_else(|| ProbeError::Failed("no sizes".into()))?;
    let method = format!(
        "device_local_copy: the driver's cuMemcpyDtoDAsync on the legacy stream (the copy engines), buffer {}, events \
         over batches of copies (>= ~2 ms), median of {reps}; bytes read + bytes written (checked against its source \
         with the copy candidates)",
        size_label(size)
    );
    let f = Finding::number(m, "bytes/s", &method, Confidence::High).with_spread(spread);
    let s = Series {
        description: format!(
            "device-local copy through the copy engine (cuMemcpyDtoDAsync) versus size, median of {reps}"
        ),
        x_name: "size".into(),
        x_unit: "bytes".into(),
        y_name: "bandwidth".into(),
        y_unit: "bytes/s".into(),
        x: xs,
        y: ys,
        y_spread: Some(mads),
        marks: vec![t.l2_bytes as f64],
    };
    Ok((f, s))
}
