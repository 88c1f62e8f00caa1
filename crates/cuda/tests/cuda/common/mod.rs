//! Shared by the GPU tests (docs/MODEL.md): the bottleneck model's ceilings as the commands take them,
//! from the findings of the probes bw, launch and peak run on a `CudaTarget` through the session's
//! loop, every launch class from its own finding.

use memscope_core::Probe;
use memscope_cuda::probes::{BwProbe, LaunchProbe, PeakProbe};
use memscope_cuda::CudaTarget;
use memscope_model::run_ceilings::{from_findings, FloorFallback, RunCeilings};
use memscope_session::{ProbeRun, Session};

/// Whether a CUDA GPU is here (the tests skip, saying so, when not).
pub fn have_gpu() -> bool {
    let ok = matches!(memscope_cuda::device_count(), Ok(n) if n > 0);
    if !ok {
        eprintln!("skipped: no CUDA GPU");
    }
    ok
}

/// Run bw, launch, peak (quick or not) on `t`; the findings and the ceilings strictly from them.
pub fn session_ceilings(t: &mut CudaTarget, quick: bool) -> (ProbeRun, RunCeilings) {
    let probes: [&dyn Probe; 3] = [&BwProbe, &LaunchProbe, &PeakProbe];
    let run = Session::silent(quick).run_probes_on(t, probes).expect_ok();
    let c = from_findings(&run.findings, FloorFallback::PerClassOnly).expect("ceilings from the findings");
    (run, c)
}
