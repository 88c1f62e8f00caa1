//! The host side of kernels/constmem.cu (constant cache, read-only and texture paths):
//! cycles of cells written for each load path (absolute pointers for ld.global.ca/.nc, element
//! indices for texture fetches, byte offsets into the 64 KiB `__constant__` bank, filled with
//! cuModuleGetGlobal + a copy), the whole-chase timing of seed 000's instrument on SM 0 (in-kernel
//! %globaltimer and clock64 over the timed hops, after warm-up hops, every repetition checked to
//! end where the cycle says), and the one-launch interference run of the sharing experiment.

use crate::gpu::Module;
use crate::CudaTarget;
use memscope_core::stats::Sample;
use memscope_core::ProbeError;

/// A load path of the SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// ld.global.ca: through L1.
    Ca,
    /// ld.global.nc: the read-only path.
    Nc,
    /// tex.1d fetches from a texture object over a linear buffer.
    Tex,
    /// Indexed loads from the `__constant__` bank.
    Const,
}

impl Path {
    pub const ALL: [Path; 4] = [Path::Ca, Path::Nc, Path::Tex, Path::Const];
    fn kind(self) -> u64 {
        match self {
            Path::Ca => 0,
            Path::Nc => 1,
            Path::Tex => 2,
            Path::Const => 3,
        }
    }
    fn kernel(self) -> &'static str {
        match self {
            Path::Ca => "smc_chase_ca",
            Path::Nc => "smc_chase_nc",
            Path::Tex => "smc_chase_tex",
            Path::Const => "smc_chase_const",
        }
    }
    /// Bytes of one cell (what the load returns and the next hop needs).
    pub fn cell_bytes(self) -> u64 {
        match self {
            Path::Ca | Path::Nc => 8,
            Path::Tex | Path::Const => 4,
        }
    }
    /// A short name for methods and notes.
    pub fn name(self) -> &'static str {
        match self {
            Path::Ca => "ld.global.ca",
            Path::Nc => "ld.global.nc",
            Path::Tex => "tex.1d fetch",
            Path::Const => "constant bank (LDC)",
        }
    }
}

/// Bytes of the constant bank (kernels/constmem.cu CONST_BYTES).
pub const CONST_BANK_BYTES: u64 = 65536;

/// Timed hops per launch: a lap, at least 2048 and at most 16384 hops.
pub fn timed_hops(cells: usize) -> u64 {
    (cells as u64).clamp(2048, 16384)
}

/// A cycle placed in one path's memory: the cell values in visiting order (the first is the start).
#[derive(Debug, Clone)]
pub struct Cycle {
    pub path: Path,
    pub values: Vec<u64>,
    /// Footprint: cells x stride.
    pub bytes: u64,
}

impl Cycle {
    /// The value the chase holds after `n` hops from the start.
    pub fn after(&self, n: u64) -> u64 {
        self.values[(n % self.values.len() as u64) as usize]
    }
}

/// The visiting order of `n` cells: ascending, or a random cyclic permutation (seeded).
pub fn order(n: usize, random: bool, seed: u64) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    if random {
        use rand::seq::SliceRandom;
        use rand::SeedableRng;
        v.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed));
    }
    v
}

/// The device side: a global buffer (with a texture object over it) and the constant bank.
pub struct Bench {
    pub buf: u64,
    pub buf_bytes: u64,
    tex: u64,
    bank: u64,
    scratch: u64,
    /// The constant bank's image on the host (written whole after each change).
    bank_image: Vec<u8>,
}

impl Bench {
    /// Allocate `buf_bytes` of global memory, a texture object over it (32-bit unsigned cells)
    /// and find the constant bank.
    pub fn new(t: &mut CudaTarget, buf_bytes: u64) -> Result<Bench, ProbeError> {
        let (bank, bank_bytes) = t.gpu.module_global(Module::ConstMem, "smc_chase_const", "cbank")?;
        if bank_bytes != CONST_BANK_BYTES {
            return Err(ProbeError::Failed(format!("the constant bank is {bank_bytes} bytes, not {CONST_BANK_BYTES}")));
        }
        let scratch = t.scratch(4096)?;
        let buf = t.gpu.malloc(buf_bytes)?;
        let tex = match crate::gpu::memory::tex_object_u32(buf, buf_bytes) {
            Ok(x) => x,
            Err(e) => {
                t.gpu.free(buf);
                return Err(e.into());
            }
        };
        Ok(Bench { buf, buf_bytes, tex, bank, scratch, bank_image: vec![0; CONST_BANK_BYTES as usize] })
    }

    pub fn free(self, t: &mut CudaTarget) {
        crate::gpu::memory::tex_object_destroy(self.tex);
        t.gpu.free(self.buf);
    }

    /// Write a cycle of `n` cells `stride` bytes apart from byte `offset` of the path's memory
    /// (the buffer, or the constant bank), visited in `order`.
    pub fn place(
        &mut self,
        t: &mut CudaTarget,
        path: Path,
        offset: u64,
        stride: u64,
        ord: &[usize],
    ) -> Result<Cycle, ProbeError> {
        let n = ord.len();
        let limit = if path == Path::Const { CONST_BANK_BYTES } else { self.buf_bytes };
        let stride = stride.max(path.cell_bytes());
        if n == 0 || offset + n as u64 * stride > limit {
            return Err(ProbeError::Failed(format!(
                "{} cells of {stride} bytes from {offset} do not fit the {} bytes of the {} memory",
                n,
                limit,
                path.name()
            )));
        }
        let value = |cell: usize| -> u64 {
            let off = offset + cell as u64 * stride;
            match path {
                Path::Ca | Path::Nc => self.buf + off,
                Path::Tex => off / 4,
                Path::Const => off,
            }
        };
        let values: Vec<u64> = ord.iter().map(|&c| value(c)).collect();
        let span = n as u64 * stride;
        let mut image = vec![0u8; if path == Path::Const { 0 } else { span as usize }];
        for (i, &c) in ord.iter().enumerate() {
            let next = values[(i + 1) % n];
            let at = c as u64 * stride;
            match path {
                Path::Ca | Path::Nc => image[at as usize..at as usize + 8].copy_from_slice(&next.to_le_bytes()),
                Path::Tex => image[at as usize..at as usize + 4].copy_from_slice(&(next as u32).to_le_bytes()),
                Path::Const => {
                    let a = (offset + at) as usize;
                    self.bank_image[a..a + 4].copy_from_slice(&(next as u32).to_le_bytes());
                }
            }
        }
        if path == Path::Const {
            t.gpu.htod(self.bank, &self.bank_image)?;
        } else {
            t.gpu.htod(self.buf + offset, &image)?;
        }
        t.gpu.sync()?;
        Ok(Cycle { path, values, bytes: span })
    }

    /// `reps` launches of one chase on SM 0: `warm` hops, then `hops` timed. Returns (ns per
    /// hop, cycles per hop) of each launch.
    pub fn time(
        &self,
        t: &mut CudaTarget,
        c: &Cycle,
        warm: u64,
        hops: u64,
        reps: u32,
    ) -> Result<(Vec<f64>, Vec<f64>), ProbeError> {
        let (claim, out) = (self.scratch, self.scratch + 256);
        let mut ns = Vec::new();
        let mut cyc = Vec::new();
        for _ in 0..reps.max(1) {
            let o = self.launch_placed(t, c.path.kernel(), &[c.values[0], self.tex, warm, hops, 0, claim, out], 6)?;
            let expect = c.after(warm + hops);
            if o[4] != expect || o[5] != 0 {
                return Err(ProbeError::Failed(format!(
                    "{} chase ended at {:#x} on SM {}, expected {expect:#x} on SM 0: the cycle was not followed",
                    c.path.name(),
                    o[4],
                    o[5]
                )));
            }
            ns.push(o[1].wrapping_sub(o[0]) as f64 / hops.max(1) as f64);
            cyc.push(o[3].wrapping_sub(o[2]) as f64 / hops.max(1) as f64);
        }
        Ok((ns, cyc))
    }

    /// One sharing run on SM 0 (kernels/constmem.cu `smc_interfere`): the victim's cycles per hop
    /// over one lap before and one lap after the aggressor (`None`: the control, no aggressor) ran
    /// on warp `warp` (so every hop after is a first touch since the aggressor; clock64, since a lap
    /// of a small victim is shorter than %globaltimer's resolution on some GPUs).
    pub fn interfere(
        &self,
        t: &mut CudaTarget,
        victim: &Cycle,
        aggressor: Option<&Cycle>,
        warp: u32,
    ) -> Result<(f64, f64), ProbeError> {
        let (claim, out) = (self.scratch, self.scratch + 256);
        let vn = victim.values.len() as u64;
        let vwarm = (2 * vn).max(1024);
        let vhops = vn;
        let (akind, astart, ahops) = match aggressor {
            Some(a) => (a.path.kind(), a.values[0], a.values.len() as u64),
            None => (0, 0, 0),
        };
        let args = [
            victim.path.kind(),
            victim.values[0],
            akind,
            astart,
            self.tex,
            vwarm,
            vhops,
            ahops,
            warp as u64,
            0,
            claim,
            out,
        ];
        let block = 32 * (warp + 1).max(1);
        let o = self.launch_block(t, "smc_interfere", block, &args, 7)?;
        let expect = victim.after(vwarm + 2 * vhops);
        if o[4] != expect || o[6] != 0 {
            return Err(ProbeError::Failed(format!(
                "interference run: the {} victim ended at {:#x} on SM {}, expected {expect:#x} on SM 0",
                victim.path.name(),
                o[4],
                o[6]
            )));
        }
        if let Some(a) = aggressor {
            if o[5] != a.after(ahops) {
                return Err(ProbeError::Failed(format!(
                    "interference run: the {} aggressor lost its cycle",
                    a.path.name()
                )));
            }
        }
        Ok((o[2] as f64 / vhops as f64, o[3] as f64 / vhops as f64))
    }

    fn launch_placed(
        &self,
        t: &mut CudaTarget,
        name: &'static str,
        args: &[u64],
        words: usize,
    ) -> Result<Vec<u64>, ProbeError> {
        self.launch_block(t, name, 32, args, words)
    }

    /// Launch a kernel of this module on SM 0 (eight blocks per SM so one lands there; the first
    /// there runs), retrying while none did; returns the first `words` of the output.
    fn launch_block(
        &self,
        t: &mut CudaTarget,
        name: &'static str,
        block: u32,
        args: &[u64],
        words: usize,
    ) -> Result<Vec<u64>, ProbeError> {
        let (claim, out) = (self.scratch, self.scratch + 256);
        for _ in 0..4 {
            t.gpu.memset(claim, 8)?;
            t.gpu.memset(out, 8 * words as u64)?;
            t.gpu.launch(Module::ConstMem, name, t.sms * 8, block, 0, args, std::ptr::null_mut())?;
            t.gpu.sync()?;
            let o: Vec<u64> = t.gpu.dtoh(out, words)?;
            if o.iter().any(|&w| w != 0) {
                return Ok(o);
            }
        }
        Err(ProbeError::Failed(format!("{name}: no block was scheduled on SM 0 in 4 launches")))
    }
}

/// One measured point: a footprint (or stride) and its launches.
#[derive(Debug, Clone)]
pub struct Point {
    pub x: f64,
    pub ns: Vec<f64>,
    pub cycles: Vec<f64>,
}

impl Point {
    pub fn median_ns(&self) -> f64 {
        memscope_core::stats::median(&self.ns)
    }
    pub fn mad_ns(&self) -> f64 {
        Sample::new(&self.ns).map(|s| s.mad()).unwrap_or(0.0)
    }
}

/// A footprint sweep of one path: random cyclic order over dense cells `stride` apart, one point
/// per footprint (bytes), `reps` launches each (warm-up a lap).
pub fn sweep(
    t: &mut CudaTarget,
    b: &mut Bench,
    path: Path,
    stride: u64,
    footprints: &[u64],
    reps: u32,
) -> Result<Vec<Point>, ProbeError> {
    let mut out: Vec<Point> = Vec::new();
    for (k, &bytes) in footprints.iter().enumerate() {
        let n = (bytes / stride).max(2) as usize;
        if out.last().is_some_and(|p| p.x >= (n as u64 * stride) as f64) {
            continue; // a footprint below two cells repeats the last point
        }
        let c = b.place(t, path, 0, stride, &order(n, true, 25 + k as u64))?;
        let (ns, cycles) = b.time(t, &c, (n as u64).max(1024), timed_hops(n), reps)?;
        out.push(Point { x: c.bytes as f64, ns, cycles });
    }
    Ok(out)
}

/// A stride sweep of one path: ascending order over `footprint` bytes at each stride (the fetch
/// unit experiment), `reps` launches each.
pub fn stride_sweep(
    t: &mut CudaTarget,
    b: &mut Bench,
    path: Path,
    footprint: u64,
    strides: &[u64],
    reps: u32,
) -> Result<Vec<Point>, ProbeError> {
    let mut out = Vec::new();
    for &s in strides {
        let n = (footprint / s).max(2) as usize;
        let c = b.place(t, path, 0, s, &order(n, false, 0))?;
        let (ns, cycles) = b.time(t, &c, (n as u64).max(1024), timed_hops(n), reps)?;
        out.push(Point { x: s as f64, ns, cycles });
    }
    Ok(out)
}
