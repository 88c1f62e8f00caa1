//! The CUDA C kernels of this crate (kernels/*.cu, embedded with include_str!) and their run-time
//! compilation by NVRTC for a given architecture (DESIGN.md: kernels compiled at run time for the
//! device's arch). NVRTC is loaded dynamically; when it cannot be loaded, compilation returns an
//! error instead of panicking (cudarc panics on a missing library).

/// One kernel source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Module {
    /// Pointer chase, chase-cycle scatter, cache and TLB flush, clock probe.
    Chase,
    /// Bandwidth read/write/copy, copy check, random fill, empty kernel.
    Bw,
    /// Bandwidth copy through the bulk copy engine (TMA).
    BwTma,
    /// Store issue, SM egress, fences, coalescing.
    Store,
    /// Chases through the constant bank, ld.global.nc, texture fetches and L1; their interference.
    ConstMem,
    /// Shared memory: chase, bandwidth, bank conflicts, residency (carveout steps).
    Smem,
    /// Global and shared atomics: dependent chains and throughput.
    Atomics,
    /// Bandwidth by level (L1 reads, L2 writes, one line's slice) and by parallelism.
    Levels,
    /// Host <-> device and peer copies through the SMs, the stream gate, the link chase.
    Link,
}

impl Module {
    /// Every module, for the compile-all test.
    pub const ALL: [Module; 9] = [
        Module::Chase,
        Module::Bw,
        Module::BwTma,
        Module::Store,
        Module::ConstMem,
        Module::Smem,
        Module::Atomics,
        Module::Levels,
        Module::Link,
    ];

    /// File name under kernels/.
    pub fn file(self) -> &'static str {
        match self {
            Module::Chase => "chase.cu",
            Module::Bw => "bw.cu",
            Module::BwTma => "bw_tma.cu",
            Module::Store => "store.cu",
            Module::ConstMem => "constmem.cu",
            Module::Smem => "smem.cu",
            Module::Atomics => "atomics.cu",
            Module::Levels => "levels.cu",
            Module::Link => "link.cu",
        }
    }

    /// CUDA C source: kernels/common.cuh (types, clocks, SM id) and the file.
    pub fn source(self) -> &'static str {
        match self {
            Module::Chase => concat!(include_str!("../kernels/common.cuh"), include_str!("../kernels/chase.cu")),
            Module::Bw => concat!(include_str!("../kernels/common.cuh"), include_str!("../kernels/bw.cu")),
            Module::BwTma => concat!(include_str!("../kernels/common.cuh"), include_str!("../kernels/bw_tma.cu")),
            Module::Store => concat!(include_str!("../kernels/common.cuh"), include_str!("../kernels/store.cu")),
            Module::ConstMem => concat!(include_str!("../kernels/common.cuh"), include_str!("../kernels/constmem.cu")),
            Module::Smem => concat!(include_str!("../kernels/common.cuh"), include_str!("../kernels/smem.cu")),
            Module::Atomics => concat!(include_str!("../kernels/common.cuh"), include_str!("../kernels/atomics.cu")),
            Module::Levels => concat!(include_str!("../kernels/common.cuh"), include_str!("../kernels/levels.cu")),
            Module::Link => concat!(include_str!("../kernels/common.cuh"), include_str!("../kernels/link.cu")),
        }
    }
}

/// Whether libnvrtc can be loaded here.
pub fn nvrtc_available() -> bool {
    // SAFETY: only tries to dlopen the candidate library names.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// Compile CUDA C `src` to PTX for `arch` ("sm_90"). Errors carry NVRTC's log.
pub fn compile_ptx(src: &str, name: &str, arch: &str) -> Result<String, String> {
    if !nvrtc_available() {
        return Err("NVRTC (libnvrtc.so) cannot be loaded: install the CUDA toolkit or `pip install \
                    nvidia-cuda-nvrtc` and put its lib folder on LD_LIBRARY_PATH"
            .into());
    }
    let opts = cudarc::nvrtc::CompileOptions {
        options: vec![format!("--gpu-architecture={arch}"), "--std=c++17".into()],
        name: Some(name.to_string()),
        ..Default::default()
    };
    let src = src.to_string();
    let out = std::panic::catch_unwind(move || cudarc::nvrtc::compile_ptx_with_opts(src, opts))
        .map_err(|_| format!("NVRTC panicked compiling {name}"))?;
    match out {
        Ok(ptx) => Ok(ptx.to_src()),
        Err(cudarc::nvrtc::CompileError::CompileError { nvrtc, log, .. }) => {
            Err(format!("NVRTC failed on {name} for {arch}: {nvrtc:?}\n{}", log.to_string_lossy()))
        }
        Err(e) => Err(format!("NVRTC failed on {name} for {arch}: {e}")),
    }
}

/// The architecture name NVRTC takes for a compute capability: (9, 0) -> "sm_90".
pub fn arch_name(major: i32, minor: i32) -> String {
    format!("sm_{major}{minor}")
}
