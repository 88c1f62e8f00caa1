//! Target selection: parses `--target` (cpu | cuda | cuda:N | sim:PRESET | sim:FILE.json) and
//! opens targets; without --target, every CUDA GPU and the CPU, or the CPU plus a simulated
//! RTX 4090 when no GPU is found (docs/CONTRACTS.md, the command line).

use crate::error::CliError;
use memscope_core::Target;
use std::path::PathBuf;

/// A target named on the command line, not yet opened.
#[derive(Debug, Clone, PartialEq)]
pub enum TargetSpec {
    Cpu,
    Cuda(usize),
    SimPreset(String),
    SimFile(PathBuf),
}

impl TargetSpec {
    /// The id recorded in results ("cpu", "cuda:0", "sim:rtx4090", "sim:FILE").
    pub fn id(&self) -> String {
        match self {
            TargetSpec::Cpu => "cpu".into(),
            TargetSpec::Cuda(n) => format!("cuda:{n}"),
            TargetSpec::SimPreset(p) => format!("sim:{p}"),
            TargetSpec::SimFile(f) => format!("sim:{}", f.display()),
        }
    }
}

const ACCEPTED: &str = "accepted: cpu, cuda, cuda:N, sim:PRESET (rtx4090, l40s, ...), sim:FILE.json";

/// Parse a comma-separated --target value. "cuda" alone expands to every GPU found.
pub fn parse(text: &str) -> Result<Vec<TargetSpec>, CliError> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if part == "cpu" {
            out.push(TargetSpec::Cpu);
        } else if part == "cuda" {
            let n = memscope_cuda::device_count()?;
            out.extend((0..n).map(TargetSpec::Cuda));
        } else if let Some(n) = part.strip_prefix("cuda:") {
            let n: usize = n
                .parse()
                .map_err(|_| CliError::usage(format!("--target {part:?}: {n:?} is not a GPU number ({ACCEPTED})")))?;
            out.push(TargetSpec::Cuda(n));
        } else if let Some(rest) = part.strip_prefix("sim:") {
            if rest.ends_with(".json") || rest.contains('/') {
                out.push(TargetSpec::SimFile(PathBuf::from(rest)));
            } else if memscope_sim::presets().contains(&rest) {
                out.push(TargetSpec::SimPreset(rest.to_string()));
            } else {
                return Err(CliError::usage(format!(
                    "--target {part:?}: no simulator preset {rest:?} (presets: {}; or sim:FILE.json)",
                    memscope_sim::presets().join(", ")
                )));
            }
        } else {
            return Err(CliError::usage(format!("--target {part:?} is not a target ({ACCEPTED})")));
        }
    }
    if out.is_empty() {
        return Err(CliError::usage(format!("--target {text:?} names no target ({ACCEPTED})")));
    }
    Ok(out)
}

/// The default targets: every CUDA GPU and the CPU; the CPU and sim:rtx4090 when no GPU can be
/// used. The second value is `Some(why)` exactly when it fell back to the simulator: the driver's
/// or the loader's own reason (no libcuda, no device, a driver error), for the user to see.
pub fn default_targets() -> (Vec<TargetSpec>, Option<String>) {
    let fallback = || vec![TargetSpec::SimPreset("rtx4090".into()), TargetSpec::Cpu];
    match memscope_cuda::device_count() {
        Ok(n) if n > 0 => {
            let mut v: Vec<TargetSpec> = (0..n).map(TargetSpec::Cuda).collect();
            v.push(TargetSpec::Cpu);
            (v, None)
        }
        Ok(_) => (fallback(), Some("no CUDA GPU found: the driver reports 0 devices".into())),
        Err(why) => (fallback(), Some(why.to_string())),
    }
}

/// The line shown when a default run falls back to the simulated GPU.
pub fn fallback_notice(why: &str) -> String {
    format!(
        "no usable CUDA GPU ({why}); running the CPU and a simulated RTX 4090 (sim:rtx4090) instead \
         (--target chooses: cpu, cuda:N, sim:PRESET, sim:FILE.json)"
    )
}

/// Open a target. A simulator file that does not parse and a GPU number past the GPUs found are
/// bad input (exit 2); a device that exists but cannot be opened is a failure (exit 1).
pub fn open(spec: &TargetSpec) -> Result<Box<dyn Target>, CliError> {
    match spec {
        TargetSpec::Cpu => memscope_cpu::CpuTarget::new()
            .map(|t| Box::new(t) as Box<dyn Target>)
            .map_err(|e| CliError::failure(format!("cpu: {e}"))),
        TargetSpec::Cuda(n) => open_cuda(*n, &format!("--target cuda:{n}")).map(|t| Box::new(t) as Box<dyn Target>),
        TargetSpec::SimPreset(p) => memscope_sim::SimTarget::from_preset(p)
            .map(|t| Box::new(t) as Box<dyn Target>)
            .map_err(|e| CliError::usage(format!("sim:{p}: {e}"))),
        TargetSpec::SimFile(f) => memscope_sim::SimTarget::from_json_file(f)
            .map(|t| Box::new(t) as Box<dyn Target>)
            .map_err(|e| CliError::usage(format!("sim:{}: {e}", f.display()))),
    }
}

/// Open GPU `n`, named on the command line as `named` ("--target cuda:1", "--device 1"). A GPU
/// number past the GPUs found is bad input (exit 2), not a device failure.
pub fn open_cuda(n: usize, named: &str) -> Result<memscope_cuda::CudaTarget, CliError> {
    if let Ok(count) = memscope_cuda::device_count() {
        if n >= count {
            let have =
                if count == 0 { "no CUDA GPU found".to_string() } else { format!("GPUs cuda:0 to cuda:{}", count - 1) };
            return Err(CliError::usage(format!("{named}: no such GPU ({have})")));
        }
    }
    memscope_cuda::CudaTarget::open(n).map_err(|e| CliError::failure(format!("cuda:{n}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn parses_targets() {
        assert_eq!(parse("cpu").unwrap(), vec![TargetSpec::Cpu]);
        assert_eq!(parse("cuda:1").unwrap(), vec![TargetSpec::Cuda(1)]);
        assert_eq!(parse("sim:rtx4090,cpu").unwrap(), vec![TargetSpec::SimPreset("rtx4090".into()), TargetSpec::Cpu]);
        assert_eq!(parse("sim:x/h.json").unwrap(), vec![TargetSpec::SimFile("x/h.json".into())]);
        assert_eq!(parse("foo").unwrap_err().exit_code(), 2);
        assert_eq!(parse("cuda:x").unwrap_err().exit_code(), 2);
        assert_eq!(parse("sim:nosuch").unwrap_err().exit_code(), 2);
    }
}
