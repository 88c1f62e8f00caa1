//! In-process hardware counters through CUPTI's range profiler (cudarc 0.19 `cupti::sys`): one
//! auto range per kernel launch, kernel replay, metric values evaluated on the host, the same
//! metric names Nsight Compute takes (docs/L2_SLICES.md, "What is measured"). The only place in the
//! workspace with CUPTI calls. libcupti is loaded at the first use; `cupti_present` says whether it
//! can be (it lives outside the driver, usually in the CUDA toolkit's extras/CUPTI/lib64, which must
//! be on LD_LIBRARY_PATH when the process starts: `cupti_library_dirs` lists the usual places).

use crate::{Gpu, GpuError, GpuResult};
use cudarc::cupti::sys as cs;
use std::ffi::{c_char, CStr, CString};
use std::path::PathBuf;

/// Whether libcupti can be loaded (cudarc panics at the first call otherwise).
pub fn cupti_present() -> bool {
    // SAFETY: only tries to dlopen the candidate library names.
    unsafe { cs::is_culib_present() }
}

/// Directories that hold libcupti: those of LD_LIBRARY_PATH, then the usual places of a CUDA
/// installation (for the LD_LIBRARY_PATH of a child process that profiles itself). Looks at file
/// names only: nothing is loaded.
pub fn cupti_library_dirs() -> Vec<PathBuf> {
    let mut cand: Vec<PathBuf> =
        std::env::var_os("LD_LIBRARY_PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
    let mut roots: Vec<PathBuf> = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(v) = std::env::var_os(var) {
            roots.push(PathBuf::from(v));
        }
    }
    roots.push(PathBuf::from("/usr/local/cuda"));
    for r in roots {
        for sub in ["extras/CUPTI/lib64", "lib64", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"] {
            cand.push(r.join(sub));
        }
    }
    let mut out = Vec::new();
    for d in cand {
        let has = std::fs::read_dir(&d)
            .map(|it| it.flatten().any(|e| e.file_name().to_string_lossy().starts_with("libcupti.so")))
            .unwrap_or(false);
        if has && !out.contains(&d) {
            out.push(d);
        }
    }
    out
}

fn cupti_text(r: cs::CUptiResult) -> String {
    let mut p: *const c_char = std::ptr::null();
    // SAFETY: CUPTI writes a pointer to a static string.
    let ok = unsafe { cs::cuptiGetResultString(r, &mut p) } == cs::CUptiResult::CUPTI_SUCCESS;
    if ok && !p.is_null() {
        // SAFETY: a NUL-terminated static string from CUPTI.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    } else {
        String::new()
    }
}

fn ckc(r: cs::CUptiResult, call: &str) -> GpuResult<()> {
    if r == cs::CUptiResult::CUPTI_SUCCESS {
        Ok(())
    } else {
        Err(GpuError::Driver { call: call.to_string(), code: format!("{r:?}"), text: cupti_text(r) })
    }
}

/// Zeroed parameter struct with its size field set (every CUPTI parameter struct starts with
/// `structSize`).
macro_rules! params {
    ($t:ty, $size:expr) => {{
        let mut p: $t = zeroed_c_struct();
        p.structSize = $size as usize;
        p
    }};
}

/// An all-zero value of a CUPTI parameter struct (plain C data: integers, pointers and C enums
/// whose zero is a valid value; only used through `params!`).
fn zeroed_c_struct<T>() -> T {
    // SAFETY: see above; callers are the parameter structs of this file.
    unsafe { std::mem::zeroed() }
}

/// What one profiling session gave: per kernel launch (in launch order) the value of each asked
/// metric, and the passes the configuration needed.
#[derive(Debug, Clone, PartialEq)]
pub struct Profiled {
    pub values: Vec<Vec<f64>>,
    pub passes: usize,
    /// Ranges CUPTI dropped (the counter-data image was too small): 0 when all were kept.
    pub dropped: usize,
}

/// A callback `work` receives: ends the current session of ranges (their values are kept) and
/// starts the next; call it before a session would hold more than `max_launches` launches.
pub type Flush<'a> = dyn FnMut() -> GpuResult<()> + 'a;

/// Profile the kernels that `work` launches on this GPU's context: one range per launch, every
/// metric of `metrics` for each, in launch order. A session holds at most `max_launches` ranges;
/// `work` calls the flush callback it is given to start the next session. The metrics are
/// Perfworks names as Nsight Compute takes them (`lts__t_sectors_srcunit_tex_op_read.max`).
/// Kernels are replayed by CUPTI when the metrics need more than one pass (device memory saved
/// and restored around each replay).
pub fn profile_kernels(
    gpu: &Gpu,
    metrics: &[String],
    max_launches: usize,
    work: impl FnOnce(&mut Flush<'_>) -> GpuResult<()>,
) -> GpuResult<Profiled> {
    if !cupti_present() {
        return Err(GpuError::NoGpu {
            reason: "libcupti cannot be loaded (CUDA toolkit's extras/CUPTI/lib64 not on LD_LIBRARY_PATH)".into(),
        });
    }
    if metrics.is_empty() || max_launches == 0 {
        return Err(GpuError::invalid("profile_kernels: no metrics or no launches"));
    }
    gpu.bind()?;
    let names: Vec<CString> = metrics
        .iter()
        .map(|m| CString::new(m.as_str()))
        .collect::<Result<_, _>>()
        .map_err(|e| GpuError::invalid(e.to_string()))?;
    let mut ptrs: Vec<*const c_char> = names.iter().map(|c| c.as_ptr()).collect();
    unsafe {
        let mut init = params!(cs::CUpti_Profiler_Initialize_Params, cs::Profiler_Initialize_Params_STRUCT_SIZE);
        ckc(cs::cuptiProfilerInitialize(&mut init), "cuptiProfilerInitialize")?;
        let r = session(gpu, &mut ptrs, max_launches, work);
        let mut de = params!(cs::CUpti_Profiler_DeInitialize_Params, cs::Profiler_DeInitialize_Params_STRUCT_SIZE);
        let _ = cs::cuptiProfilerDeInitialize(&mut de);
        r
    }
}

/// The host object: chip, counter availability, the metrics' configuration image.
unsafe fn host_config(
    gpu: &Gpu,
    ptrs: &mut [*const c_char],
) -> GpuResult<(*mut cs::CUpti_Profiler_Host_Object, Vec<u8>, usize)> {
    let mut chip = params!(cs::CUpti_Device_GetChipName_Params, cs::Device_GetChipName_Params_STRUCT_SIZE);
    chip.deviceIndex = gpu.ordinal;
    ckc(cs::cuptiDeviceGetChipName(&mut chip), "cuptiDeviceGetChipName")?;
    let ctx = gpu.context();
    let mut avail = params!(
        cs::CUpti_Profiler_GetCounterAvailability_Params,
        cs::Profiler_GetCounterAvailability_Params_STRUCT_SIZE
    );
    avail.ctx = ctx;
    ckc(cs::cuptiProfilerGetCounterAvailability(&mut avail), "cuptiProfilerGetCounterAvailability (size)")?;
    let mut image = vec![0u8; avail.counterAvailabilityImageSize];
    avail.pCounterAvailabilityImage = image.as_mut_ptr();
    ckc(cs::cuptiProfilerGetCounterAvailability(&mut avail), "cuptiProfilerGetCounterAvailability")?;
    let mut hi = params!(cs::CUpti_Profiler_Host_Initialize_Params, cs::Profiler_Host_Initialize_Params_STRUCT_SIZE);
    hi.profilerType = cs::CUpti_ProfilerType::CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    hi.pChipName = chip.pChipName;
    hi.pCounterAvailabilityImage = image.as_ptr();
    ckc(cs::cuptiProfilerHostInitialize(&mut hi), "cuptiProfilerHostInitialize")?;
    let host = hi.pHostObject;
    let built = (|| {
        let mut add = params!(
            cs::CUpti_Profiler_Host_ConfigAddMetrics_Params,
            cs::Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE
        );
        add.pHostObject = host;
        add.ppMetricNames = ptrs.as_mut_ptr();
        add.numMetrics = ptrs.len();
        ckc(cs::cuptiProfilerHostConfigAddMetrics(&mut add), "cuptiProfilerHostConfigAddMetrics")?;
        let mut sz = params!(
            cs::CUpti_Profiler_Host_GetConfigImageSize_Params,
            cs::Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE
        );
        sz.pHostObject = host;
        ckc(cs::cuptiProfilerHostGetConfigImageSize(&mut sz), "cuptiProfilerHostGetConfigImageSize")?;
        let mut config = vec![0u8; sz.configImageSize];
        let mut gi =
            params!(cs::CUpti_Profiler_Host_GetConfigImage_Params, cs::Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
        gi.pHostObject = host;
        gi.configImageSize = config.len();
        gi.pConfigImage = config.as_mut_ptr();
        ckc(cs::cuptiProfilerHostGetConfigImage(&mut gi), "cuptiProfilerHostGetConfigImage")?;
        let mut np =
            params!(cs::CUpti_Profiler_Host_GetNumOfPasses_Params, cs::Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE);
        np.configImageSize = config.len();
        np.pConfigImage = config.as_mut_ptr();
        ckc(cs::cuptiProfilerHostGetNumOfPasses(&mut np), "cuptiProfilerHostGetNumOfPasses")?;
        Ok((config, np.numOfPasses))
    })();
    match built {
        Ok((config, passes)) => Ok((host, config, passes)),
        Err(e) => {
            let mut d =
                params!(cs::CUpti_Profiler_Host_Deinitialize_Params, cs::Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
            d.pHostObject = host;
            let _ = cs::cuptiProfilerHostDeinitialize(&mut d);
            Err(e)
        }
    }
}

unsafe fn session(
    gpu: &Gpu,
    ptrs: &mut [*const c_char],
    max_launches: usize,
    work: impl FnOnce(&mut Flush<'_>) -> GpuResult<()>,
) -> GpuResult<Profiled> {
    let (host, mut config, passes) = host_config(gpu, ptrs)?;
    let mut en = params!(cs::CUpti_RangeProfiler_Enable_Params, cs::RangeProfiler_Enable_Params_STRUCT_SIZE);
    en.ctx = gpu.context();
    let r = ckc(cs::cuptiRangeProfilerEnable(&mut en), "cuptiRangeProfilerEnable").and_then(|_| {
        let obj = en.pRangeProfilerObject;
        let mut s = Ranges {
            host,
            obj,
            config: &mut config,
            ptrs,
            max: max_launches,
            data: vec![],
            started: false,
            values: vec![],
            dropped: 0,
        };
        let r = s.begin().and_then(|_| {
            let worked = {
                let mut flush = || -> GpuResult<()> {
                    s.end()?;
                    s.begin()
                };
                work(&mut flush)
            };
            let ended = s.end();
            worked.and(ended).map(|_| (std::mem::take(&mut s.values), s.dropped))
        });
        if s.started {
            let mut sp = params!(cs::CUpti_RangeProfiler_Stop_Params, cs::RangeProfiler_Stop_Params_STRUCT_SIZE);
            sp.pRangeProfilerObject = obj;
            let _ = cs::cuptiRangeProfilerStop(&mut sp);
        }
        let mut dis = params!(cs::CUpti_RangeProfiler_Disable_Params, cs::RangeProfiler_Disable_Params_STRUCT_SIZE);
        dis.pRangeProfilerObject = obj;
        let _ = cs::cuptiRangeProfilerDisable(&mut dis);
        r
    });
    let mut d = params!(cs::CUpti_Profiler_Host_Deinitialize_Params, cs::Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
    d.pHostObject = host;
    let _ = cs::cuptiProfilerHostDeinitialize(&mut d);
    r.map(|(values, dropped)| Profiled { values, passes, dropped })
}

/// The sessions of one enabled range profiler: each a fresh counter-data image, `begin` to `end`.
struct Ranges<'a> {
    host: *mut cs::CUpti_Profiler_Host_Object,
    obj: *mut cs::CUpti_RangeProfiler_Object,
    config: &'a mut [u8],
    ptrs: &'a mut [*const c_char],
    max: usize,
    data: Vec<u8>,
    started: bool,
    values: Vec<Vec<f64>>,
    dropped: usize,
}

impl Ranges<'_> {
    /// A fresh counter-data image for `max` ranges, the configuration, and the start.
    unsafe fn begin(&mut self) -> GpuResult<()> {
        let mut ds = params!(
            cs::CUpti_RangeProfiler_GetCounterDataSize_Params,
            cs::RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE
        );
        ds.pRangeProfilerObject = self.obj;
        ds.pMetricNames = self.ptrs.as_mut_ptr();
        ds.numMetrics = self.ptrs.len();
        ds.maxNumOfRanges = self.max;
        ds.maxNumRangeTreeNodes = self.max as u32;
        ckc(cs::cuptiRangeProfilerGetCounterDataSize(&mut ds), "cuptiRangeProfilerGetCounterDataSize")?;
        self.data = vec![0u8; ds.counterDataSize];
        let mut di = params!(
            cs::CUpti_RangeProfiler_CounterDataImage_Initialize_Params,
            cs::RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE
        );
        di.pRangeProfilerObject = self.obj;
        di.counterDataSize = self.data.len();
        di.pCounterData = self.data.as_mut_ptr();
        ckc(cs::cuptiRangeProfilerCounterDataImageInitialize(&mut di), "cuptiRangeProfilerCounterDataImageInitialize")?;
        let mut sc = params!(cs::CUpti_RangeProfiler_SetConfig_Params, cs::RangeProfiler_SetConfig_Params_STRUCT_SIZE);
        sc.pRangeProfilerObject = self.obj;
        sc.configSize = self.config.len();
        sc.pConfig = self.config.as_ptr();
        sc.counterDataImageSize = self.data.len();
        sc.pCounterDataImage = self.data.as_mut_ptr();
        sc.range = cs::CUpti_ProfilerRange::CUPTI_AutoRange;
        sc.replayMode = cs::CUpti_ProfilerReplayMode::CUPTI_KernelReplay;
        sc.maxRangesPerPass = self.max;
        sc.numNestingLevels = 1;
        sc.minNestingLevel = 1;
        sc.passIndex = 0;
        sc.targetNestingLevel = 1;
        ckc(cs::cuptiRangeProfilerSetConfig(&mut sc), "cuptiRangeProfilerSetConfig")?;
        let mut st = params!(cs::CUpti_RangeProfiler_Start_Params, cs::RangeProfiler_Start_Params_STRUCT_SIZE);
        st.pRangeProfilerObject = self.obj;
        ckc(cs::cuptiRangeProfilerStart(&mut st), "cuptiRangeProfilerStart")?;
        self.started = true;
        Ok(())
    }

    /// Stop, decode, and evaluate every range of the session (appended to `values`).
    unsafe fn end(&mut self) -> GpuResult<()> {
        if !self.started {
            return Ok(());
        }
        self.started = false;
        let mut sp = params!(cs::CUpti_RangeProfiler_Stop_Params, cs::RangeProfiler_Stop_Params_STRUCT_SIZE);
        sp.pRangeProfilerObject = self.obj;
        ckc(cs::cuptiRangeProfilerStop(&mut sp), "cuptiRangeProfilerStop")?;
        let mut dd =
            params!(cs::CUpti_RangeProfiler_DecodeData_Params, cs::RangeProfiler_DecodeData_Params_STRUCT_SIZE);
        dd.pRangeProfilerObject = self.obj;
        ckc(cs::cuptiRangeProfilerDecodeData(&mut dd), "cuptiRangeProfilerDecodeData")?;
        self.dropped += dd.numOfRangeDropped;
        let mut info = params!(
            cs::CUpti_RangeProfiler_GetCounterDataInfo_Params,
            cs::RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE
        );
        info.pCounterDataImage = self.data.as_ptr();
        info.counterDataImageSize = self.data.len();
        ckc(cs::cuptiRangeProfilerGetCounterDataInfo(&mut info), "cuptiRangeProfilerGetCounterDataInfo")?;
        for r in 0..info.numTotalRanges {
            let mut v = vec![f64::NAN; self.ptrs.len()];
            let mut ev = params!(
                cs::CUpti_Profiler_Host_EvaluateToGpuValues_Params,
                cs::Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE
            );
            ev.pHostObject = self.host;
            ev.pCounterDataImage = self.data.as_ptr();
            ev.counterDataImageSize = self.data.len();
            ev.rangeIndex = r;
            ev.ppMetricNames = self.ptrs.as_mut_ptr();
            ev.numMetrics = self.ptrs.len();
            ev.pMetricValues = v.as_mut_ptr();
            ckc(cs::cuptiProfilerHostEvaluateToGpuValues(&mut ev), "cuptiProfilerHostEvaluateToGpuValues")?;
            self.values.push(v);
        }
        Ok(())
    }
}
