//! Streams, events, CUDA graphs and the timing rule (docs/ADDING_A_PROBE.md: events around batches;
//! seed 003: an operation's time is the event time of a batch of back-to-back calls divided by the
//! calls, median over repetitions). No hidden event tracking: work is ordered by the caller.

use super::{ck, Gpu, GpuError, GpuResult, Stream};
use cudarc::driver::sys;
use serde::Serialize;

/// A non-blocking stream (graph capture needs one), destroyed on drop.
pub struct OwnedStream(Stream);

// SAFETY: a stream handle may be used from any thread with its context current.
unsafe impl Send for OwnedStream {}

impl OwnedStream {
    pub fn new() -> GpuResult<Self> {
        let mut s = std::ptr::null_mut();
        unsafe {
            ck(sys::cuStreamCreate(&mut s, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32), "cuStreamCreate")?;
        }
        Ok(OwnedStream(s))
    }
    pub fn raw(&self) -> Stream {
        self.0
    }
}

impl Drop for OwnedStream {
    fn drop(&mut self) {
        unsafe {
            let _ = sys::cuStreamDestroy_v2(self.0);
        }
    }
}

/// Wait for the work queued on `s`.
#[allow(
    clippy::not_unsafe_ptr_arg_deref,
    reason = "a stream is an opaque driver handle the driver checks, never read as host memory"
)]
pub fn stream_sync(s: Stream, what: &str) -> GpuResult<()> {
    unsafe { ck(sys::cuStreamSynchronize(s), what) }
}

/// A timing event (CU_EVENT_DEFAULT), destroyed on drop.
pub struct Event(sys::CUevent);

impl Event {
    pub fn new() -> GpuResult<Self> {
        let mut e = std::ptr::null_mut();
        unsafe { ck(sys::cuEventCreate(&mut e, sys::CUevent_flags::CU_EVENT_DEFAULT as u32), "cuEventCreate")? };
        Ok(Event(e))
    }
    #[allow(
        clippy::not_unsafe_ptr_arg_deref,
        reason = "a stream is an opaque driver handle the driver checks, never read as host memory"
    )]
    pub fn record(&self, s: Stream) -> GpuResult<()> {
        unsafe { ck(sys::cuEventRecord(self.0, s), "cuEventRecord") }
    }
    /// Wait for the event; `what` names the work it follows (a fault shows here).
    pub fn synchronize(&self, what: &str) -> GpuResult<()> {
        unsafe { ck(sys::cuEventSynchronize(self.0), what) }
    }
    /// Make stream `s` wait for this event.
    #[allow(
        clippy::not_unsafe_ptr_arg_deref,
        reason = "a stream is an opaque driver handle the driver checks, never read as host memory"
    )]
    pub fn wait_on(&self, s: Stream) -> GpuResult<()> {
        unsafe { ck(sys::cuStreamWaitEvent(s, self.0, 0), "cuStreamWaitEvent") }
    }
    /// Milliseconds from this event to `end` (both recorded and completed).
    pub fn elapsed_ms(&self, end: &Event) -> GpuResult<f32> {
        let mut ms = 0f32;
        unsafe { ck(sys::cuEventElapsedTime_v2(&mut ms, self.0, end.0), "cuEventElapsedTime")? };
        Ok(ms)
    }
    /// Seconds from this event to `end`, waiting for both first.
    pub fn elapsed_s(&self, end: &Event) -> GpuResult<f64> {
        self.synchronize("event sync")?;
        end.synchronize("event sync")?;
        Ok(self.elapsed_ms(end)? as f64 * 1e-3)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        unsafe {
            let _ = sys::cuEventDestroy_v2(self.0);
        }
    }
}

/// An instantiated, uploaded CUDA graph and the stream it replays on.
pub struct Graph {
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
    stream: Stream,
}

impl Graph {
    /// Capture what `f` issues on `stream` (thread-local capture mode), instantiate and upload it.
    #[allow(
        clippy::not_unsafe_ptr_arg_deref,
        reason = "a stream is an opaque driver handle the driver checks, never read as host memory"
    )]
    pub fn capture(stream: Stream, f: impl FnOnce() -> GpuResult<()>) -> GpuResult<Graph> {
        unsafe {
            ck(
                sys::cuStreamBeginCapture_v2(stream, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                "cuStreamBeginCapture",
            )?;
        }
        let issued = f();
        let mut graph = std::ptr::null_mut();
        unsafe { ck(sys::cuStreamEndCapture(stream, &mut graph), "cuStreamEndCapture")? };
        let mut g = Graph { graph, exec: std::ptr::null_mut(), stream };
        issued?;
        if graph.is_null() {
            return Err(GpuError::invalid("capture produced no graph"));
        }
        unsafe {
            ck(sys::cuGraphInstantiateWithFlags(&mut g.exec, graph, 0), "cuGraphInstantiate")?;
            ck(sys::cuGraphUpload(g.exec, stream), "cuGraphUpload")?;
        }
        Ok(g)
    }
    /// Replay the graph on its stream.
    pub fn launch(&self) -> GpuResult<()> {
        unsafe { ck(sys::cuGraphLaunch(self.exec, self.stream), "cuGraphLaunch") }
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        unsafe {
            if !self.exec.is_null() {
                let _ = sys::cuGraphExecDestroy(self.exec);
            }
            if !self.graph.is_null() {
                let _ = sys::cuGraphDestroy(self.graph);
            }
        }
    }
}

/// Time per call of a batch of back-to-back calls.
#[derive(Debug, Clone, Serialize)]
pub struct Timing {
    /// Median over repetitions of (event time of the batch / calls), seconds.
    pub per_call_s: f64,
    pub min_per_call_s: f64,
    pub max_per_call_s: f64,
    pub calls_per_rep: usize,
    pub reps: usize,
}

impl Gpu {
    /// Events on `stream` around `calls` back-to-back calls of `f(i)`, repeated `reps` times after
    /// a warm-up of 3 calls; `calls` is chosen from a 4-call batch so that a repetition lasts
    /// about `target_s` (3 to 20 000 calls).
    pub fn time_calls(
        &self,
        stream: Stream,
        target_s: f64,
        reps: usize,
        mut f: impl FnMut(usize) -> GpuResult<()>,
    ) -> GpuResult<Timing> {
        let (e0, e1) = (Event::new()?, Event::new()?);
        let mut i = 0usize;
        for _ in 0..3 {
            f(i)?;
            i += 1;
        }
        stream_sync(stream, "synchronize")?;
        // Calibrate with a small batch.
        let probe = 4;
        e0.record(stream)?;
        for _ in 0..probe {
            f(i)?;
            i += 1;
        }
        e1.record(stream)?;
        e1.synchronize("event sync")?;
        let t = e0.elapsed_s(&e1)? / probe as f64;
        let calls = ((target_s / t.max(1e-7)).ceil() as usize).clamp(3, 20_000);
        let mut per = Vec::with_capacity(reps);
        for _ in 0..reps {
            e0.record(stream)?;
            for _ in 0..calls {
                f(i)?;
                i += 1;
            }
            e1.record(stream)?;
            e1.synchronize("event sync")?;
            per.push(e0.elapsed_s(&e1)? / calls as f64);
        }
        if per.is_empty() {
            return Err(GpuError::invalid("time_calls needs at least one repetition"));
        }
        per.sort_by(f64::total_cmp);
        Ok(Timing {
            per_call_s: per[per.len() / 2],
            min_per_call_s: per[0],
            max_per_call_s: per[per.len() - 1],
            calls_per_rep: calls,
            reps,
        })
    }

    /// `calls` calls of `f(i)` captured once into a graph on `stream`, replayed back to back with
    /// the rule of `time_calls`; the timing is per call (replay time / calls). One eager call
    /// first: cuBLAS picks its kernel and modules load outside the capture.
    pub fn time_graph(
        &self,
        stream: Stream,
        calls: usize,
        target_s: f64,
        reps: usize,
        mut f: impl FnMut(usize) -> GpuResult<()>,
    ) -> GpuResult<Timing> {
        let calls = calls.max(1);
        f(0)?;
        stream_sync(stream, "synchronize")?;
        let graph = Graph::capture(stream, || (0..calls).try_for_each(&mut f))?;
        let t = self.time_calls(stream, target_s, reps, |_| graph.launch())?;
        let n = calls as f64;
        Ok(Timing {
            per_call_s: t.per_call_s / n,
            min_per_call_s: t.min_per_call_s / n,
            max_per_call_s: t.max_per_call_s / n,
            calls_per_rep: t.calls_per_rep * calls,
            reps: t.reps,
        })
    }
}
