//! The CUDA target: `memscope_core::Target` on a real GPU (the Target trait, docs/ARCHITECTURE.md; seed 000
//! appendix, the latency chase). Allocations are plain cuMemAlloc checked against free memory;
//! aliased pairs use the driver's virtual memory API (seed 000 footnotes 3 and 6); `flush` writes
//! and reads a buffer of max(4x L2, 512 MiB) and sweeps one line per 2 MiB page from every SM;
//! `chase` writes the cycle's next pointers on the device, flushes, then warms up as asked;
//! repetitions continue around the cycle and per-hop times are those of the last repetition's
//! timed hops, chain-major. The chase kernels ask for shared-memory carveout 0 (prefer L1;
//! gpu::chase_carveout_percent), recorded in the target details as `chase_shared_carveout`.

use crate::gpu::memory::Aliased;
use crate::gpu::{DeviceAttr, Event, Gpu, Module, LEGACY_STREAM};
use memscope_core::{Buffer, CachePath, ChaseResult, ChaseSpec, Target, TargetError, TargetInfo};
use std::collections::HashMap;

const PAGE: u64 = 2 << 20;
/// Per-hop records kept in shared memory per chunk (kernels/chase.cu PER_HOP_CAP).
const PER_HOP_CAP: u64 = 1536;

enum Alloc {
    Plain,
    /// An aliased pair: the reserved range (both halves), its size, and the physical handle.
    Aliased(Aliased),
    /// The second view of an aliased pair (freed with the first, id - 1).
    AliasView,
}

struct Entry {
    base: u64,
    bytes: u64,
    kind: Alloc,
    generation: u64,
}

/// A CUDA GPU as a Target.
pub struct CudaTarget {
    pub(crate) gpu: Gpu,
    allocs: HashMap<u64, Entry>,
    next_id: u64,
    flush_buf: Option<(u64, u64, u64)>, // (ptr, bytes, generation)
    scratch: Option<(u64, u64, u64)>,   // small scratch for chase control (ptr, bytes, generation)
    clock_hz: Option<f64>,
    pub(crate) sms: u32,
    pub(crate) l2_bytes: u64,
    /// Every GPU of the host, opened on the first peer measurement (docs/INTERCONNECT.md).
    peers: Option<crate::peer::CudaPeers>,
    /// The background warming of the driver's kernel cache (prewarm.rs), when started.
    prewarm: crate::prewarm::Prewarm,
}

impl CudaTarget {
    /// Open GPU `ordinal` (its primary context), and measure the SM clock under load.
    pub fn open(ordinal: usize) -> Result<CudaTarget, TargetError> {
        let gpu = Gpu::open(ordinal)?;
        let sms = gpu.attr(DeviceAttr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        let l2_bytes = gpu.attr(DeviceAttr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64;
        let mut t = CudaTarget {
            gpu,
            allocs: HashMap::new(),
            next_id: 1,
            flush_buf: None,
            scratch: None,
            clock_hz: None,
            sms,
            l2_bytes,
            peers: None,
            prewarm: Default::default(),
        };
        t.clock_hz = t.measure_clock_hz().ok();
        Ok(t)
    }

    /// The SM clock under load: clock64 cycles over 20 ms of %globaltimer in one thread, after a
    /// 50 ms spin so the clock has ramped up from idle.
    pub fn measure_clock_hz(&mut self) -> Result<f64, TargetError> {
        let out = self.scratch(64)?;
        for (ns, keep) in [(50_000_000u64, false), (20_000_000, true)] {
            self.gpu.launch(Module::Chase, "clock_probe", 1, 1, 0, &[ns, out], std::ptr::null_mut())?;
            self.gpu.sync()?;
            if keep {
                let v: Vec<u64> = self.gpu.dtoh(out, 4)?;
                let dt = v[1].wrapping_sub(v[0]) as f64;
                let dc = v[3].wrapping_sub(v[2]) as f64;
                if dt > 0.0 {
                    return Ok(dc / dt * 1e9);
                }
            }
        }
        Err(TargetError::Device("clock probe: %globaltimer did not advance".into()))
    }

    /// Test hook: run a kernel that stores to an unmapped address, so the fault path (error
    /// reported as TargetError::Device, context rebuilt) can be checked on a real GPU.
    #[doc(hidden)]
    pub fn inject_fault(&mut self) -> Result<(), TargetError> {
        self.guarded(|t| {
            let pairs = t.scratch(64)?;
            t.gpu.htod(pairs, &[0x10u64, 0])?;
            t.gpu.launch(Module::Chase, "scatter_u64", 1, 1, 0, &[pairs, 1], std::ptr::null_mut())?;
            Ok(t.gpu.sync()?)
        })
    }

    /// Start compiling and loading the kernel modules the probes load later on a background thread,
    /// so a cold driver cache costs no probe's time (prewarm.rs). `memscope run` starts it when
    /// the run has the `launch` probe, the first to load the bottleneck model's modules.
    pub fn warm_kernels_in_background(&mut self) {
        self.prewarm.wait();
        self.prewarm = crate::prewarm::Prewarm::start(self.gpu.ordinal, self.gpu.arch(), crate::prewarm::warmed());
    }

    /// Wait for the background warming (a probe timed on the host calls it first); its seconds,
    /// when it ran, and how long this call waited.
    pub(crate) fn wait_for_prewarm(&mut self) -> Option<(crate::prewarm::Warmed, f64)> {
        let t0 = std::time::Instant::now();
        let w = self.prewarm.wait().cloned()?;
        Some((w, t0.elapsed().as_secs_f64()))
    }

    /// The GPU layer under this target (the bottleneck-model ops can run on it after the probes:
    /// `ops::device::OpsGpu::on(target.gpu())`).
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// The GPU layer under this target, mutably (a context rebuild).
    pub fn gpu_mut(&mut self) -> &mut Gpu {
        &mut self.gpu
    }

    /// The measured SM clock (Hz) used to turn cycles into ns.
    pub fn clock_hz(&self) -> Option<f64> {
        self.clock_hz
    }

    /// Run `f` with the context bound; on error, rebuild the context if it faulted.
    pub(crate) fn guarded<T>(
        &mut self,
        f: impl FnOnce(&mut CudaTarget) -> Result<T, TargetError>,
    ) -> Result<T, TargetError> {
        self.gpu.bind()?;
        match f(self) {
            Ok(v) => Ok(v),
            Err(e) => Err(self.gpu.recover(e)),
        }
    }

    /// A small device scratch buffer (at least `bytes`), reused.
    pub(crate) fn scratch(&mut self, bytes: u64) -> Result<u64, TargetError> {
        let gen = self.gpu.generation;
        if let Some((p, b, g)) = self.scratch {
            if g == gen && b >= bytes {
                return Ok(p);
            }
            if g == gen {
                self.gpu.free(p);
            }
        }
        let size = bytes.max(1 << 20);
        let p = self.gpu.malloc(size)?;
        self.scratch = Some((p, size, gen));
        Ok(p)
    }

    fn flush_buffer(&mut self) -> Result<(u64, u64), TargetError> {
        let gen = self.gpu.generation;
        if let Some((p, b, g)) = self.flush_buf {
            if g == gen {
                return Ok((p, b));
            }
        }
        let bytes = (4 * self.l2_bytes).max(512 << 20).div_ceil(PAGE) * PAGE;
        let p = self.gpu.malloc(bytes)?;
        self.flush_buf = Some((p, bytes, gen));
        Ok((p, bytes))
    }

    fn do_flush(&mut self) -> Result<(), TargetError> {
        let (p, bytes) = self.flush_buffer()?;
        let sink = self.scratch(64)?;
        let grid = self.sms * 4;
        let n8 = bytes / 8;
        let null = std::ptr::null_mut();
        self.gpu.launch(Module::Chase, "flush_write", grid, 512, 0, &[p, n8, 0x0123_4567_89ab_cdef], null)?;
        self.gpu.launch(Module::Chase, "flush_read", grid, 512, 0, &[p, n8, sink], null)?;
        self.gpu.launch(Module::Chase, "tlb_sweep", grid, 256, 0, &[p, bytes / PAGE, PAGE, sink], null)?;
        Ok(self.gpu.sync()?)
    }

    /// Write each address's next pointer (a cycle per chain) on the device with one scatter kernel.
    fn write_cycles(&mut self, chains: &[Vec<u64>]) -> Result<(), TargetError> {
        let mut pairs: Vec<u64> = Vec::new();
        for c in chains {
            for (i, &a) in c.iter().enumerate() {
                pairs.push(a);
                pairs.push(c[(i + 1) % c.len()]);
            }
        }
        let n = (pairs.len() / 2) as u64;
        let dev = self.gpu.malloc(pairs.len() as u64 * 8)?;
        let res = (|| {
            self.gpu.htod(dev, &pairs)?;
            let grid = (n.div_ceil(256) as u32).clamp(1, self.sms * 8);
            self.gpu.launch(Module::Chase, "scatter_u64", grid, 256, 0, &[dev, n], std::ptr::null_mut())?;
            self.gpu.sync()
        })();
        self.gpu.free(dev);
        Ok(res?)
    }

    fn check_spec(&self, spec: &ChaseSpec) -> Result<(), TargetError> {
        if spec.addrs.is_empty() {
            return Err(TargetError::BadSpec("no addresses".into()));
        }
        let w = spec.warps.max(1) as usize;
        if w > 32 {
            return Err(TargetError::BadSpec(format!("warps = {w}: at most 32 per block")));
        }
        if spec.addrs.len() < w {
            return Err(TargetError::BadSpec(format!("{} addresses for {w} chains", spec.addrs.len())));
        }
        if let Some(sm) = spec.sm {
            if sm >= self.sms {
                return Err(TargetError::BadSpec(format!("sm {sm}: this GPU has {} SMs", self.sms)));
            }
        }
        let gen = self.gpu.generation;
        // (start, end, canonical start): the second view of an aliased pair maps onto the first, so
        // one physical word reached through both views is seen as a duplicate.
        let mut live: Vec<(u64, u64, u64)> = self
            .allocs
            .values()
            .filter(|e| e.generation == gen)
            .map(|e| {
                let canon = if matches!(e.kind, Alloc::AliasView) { e.base - e.bytes } else { e.base };
                (e.base, e.base + e.bytes, canon)
            })
            .collect();
        live.sort_unstable();
        let mut seen = std::collections::HashSet::new();
        for &a in &spec.addrs {
            if !a.is_multiple_of(8) {
                return Err(TargetError::BadSpec(format!("address {a:#x} is not 8-byte aligned")));
            }
            let i = live.partition_point(|r| r.0 <= a);
            if i == 0 || a + 8 > live[i - 1].1 {
                return Err(TargetError::BadSpec(format!("address {a:#x} is not inside a live buffer of this GPU")));
            }
            let (start, _, canon) = live[i - 1];
            let word = canon + (a - start);
            if !seen.insert(word) {
                return Err(TargetError::BadSpec(format!(
                    "address {a:#x} names an 8-byte word already in the chase ({word:#x}, possibly through the other \
                     view of an aliased pair): each word holds one next pointer; use another word of the line"
                )));
            }
        }
        Ok(())
    }

    fn run_chase(&mut self, spec: &ChaseSpec) -> Result<ChaseResult, TargetError> {
        self.check_spec(spec)?;
        let w = spec.warps.max(1) as usize;
        let chains: Vec<Vec<u64>> =
            (0..w).map(|k| spec.addrs.iter().skip(k).step_by(w).copied().collect::<Vec<u64>>()).collect();
        let min_len = chains.iter().map(|c| c.len()).min().unwrap_or(1) as u64;
        self.write_cycles(&chains)?;
        // The H2D copy and the scatter left lines in L1/L2: evict them, then warm up as asked.
        self.do_flush()?;
        let per_hop_n = if spec.per_hop { spec.hops.min(1 << 20) } else { 0 };
        // Each chain's position: repetitions continue around the cycle (so a chase of fewer hops
        // than lines keeps visiting new lines), warm-up laps run before the first repetition only.
        let mut pos: Vec<u64> = vec![0; w];
        let scratch = self.scratch(4096 + w as u64 * per_hop_n * 4)?;
        let (starts_d, claim_d, out_d, hops_d) = (scratch, scratch + 256, scratch + 512, scratch + 4096);
        let name = match spec.path {
            CachePath::L1Cached => "chase_ca",
            CachePath::L1Bypass => "chase_cg",
        };
        let (grid, target_sm) = match spec.sm {
            Some(sm) => (self.sms * 8, sm as u64),
            None => (1, u64::MAX),
        };
        let shmem = if per_hop_n > 0 { (PER_HOP_CAP * 4) as u32 } else { 0 };
        let reps = spec.repeats.max(1);
        let clock = self.clock_hz;
        let mut ns = Vec::new();
        let mut cyc = Vec::new();
        let mut host = Vec::new();
        let mut per_hop = None;
        let events = (Event::new()?, Event::new()?);
        for r in 0..reps {
            let last = r + 1 == reps;
            let warm = if r == 0 { spec.warmup_laps as u64 * min_len } else { 0 };
            let ph = if last { per_hop_n } else { 0 };
            let starts: Vec<u64> = chains.iter().zip(&pos).map(|(c, p)| c[(*p % c.len() as u64) as usize]).collect();
            self.gpu.htod(starts_d, &starts)?;
            let mut ok = false;
            for _attempt in 0..4 {
                self.gpu.memset(claim_d, 8)?;
                self.gpu.memset(out_d, w as u64 * 48)?;
                let args = [starts_d, warm, spec.hops, target_sm, claim_d, out_d, ph, hops_d];
                events.0.record(LEGACY_STREAM)?;
                self.gpu.launch(Module::Chase, name, grid, 32 * w as u32, shmem, &args, std::ptr::null_mut())?;
                events.1.record(LEGACY_STREAM)?;
                self.gpu.sync()?;
                let launch_ns = events.0.elapsed_ms(&events.1)? as f64 * 1e6;
                let out: Vec<u64> = self.gpu.dtoh(out_d, w * 6)?;
                if out[1] == 0 {
                    continue; // no block landed on the chosen SM: launch again
                }
                if let Some(sm) = spec.sm {
                    if out[5] != sm as u64 {
                        return Err(TargetError::Device(format!("chase ran on SM {} instead of {sm}", out[5])));
                    }
                }
                // The chase must have followed the cycle: check each chain's final pointer.
                for (k, c) in chains.iter().enumerate() {
                    pos[k] += warm + spec.hops;
                    let expect = c[(pos[k] % c.len() as u64) as usize];
                    if out[k * 6 + 4] != expect {
                        return Err(TargetError::Device(format!(
                            "chain {k} ended at {:#x}, expected {expect:#x}: the cycle was not followed",
                            out[k * 6 + 4]
                        )));
                    }
                }
                let mut rep_ns = Vec::new();
                let mut rep_cyc = Vec::new();
                for k in 0..w {
                    let o = &out[k * 6..k * 6 + 6];
                    rep_ns.push(o[1].wrapping_sub(o[0]) as f64 / spec.hops.max(1) as f64);
                    rep_cyc.push(o[3].wrapping_sub(o[2]) as f64 / spec.hops.max(1) as f64);
                }
                ns.push(rep_ns.iter().sum::<f64>() / w as f64);
                cyc.push(rep_cyc.iter().sum::<f64>() / w as f64);
                host.push(launch_ns);
                if ph > 0 {
                    // Warp-major: every chain's hops of this (last) repetition, in chain order.
                    let c: Vec<u32> = self.gpu.dtoh(hops_d, w * ph as usize)?;
                    let hz = clock.unwrap_or(1e9);
                    per_hop = Some(c.iter().map(|&x| x as f64 / hz * 1e9).collect());
                }
                ok = true;
                break;
            }
            if !ok {
                return Err(TargetError::Device(format!("no block was scheduled on SM {:?} in 4 launches", spec.sm)));
            }
        }
        Ok(ChaseResult { ns_per_hop: ns, cycles_per_hop: Some(cyc), per_hop_ns: per_hop, host_ns: Some(host) })
    }

    fn aliased(&mut self, bytes: u64) -> Result<(Buffer, Buffer), TargetError> {
        let a = self.gpu.alloc_aliased(bytes)?;
        let (va, size) = (a.va, a.size);
        let id = self.next_id;
        self.next_id += 2;
        let gen = self.gpu.generation;
        let kind = Alloc::Aliased(a);
        self.allocs.insert(id, Entry { base: va, bytes: size, kind, generation: gen });
        self.allocs.insert(id + 1, Entry { base: va + size, bytes: size, kind: Alloc::AliasView, generation: gen });
        Ok((Buffer { id, base: va, bytes: size }, Buffer { id: id + 1, base: va + size, bytes: size }))
    }
}

impl Target for CudaTarget {
    fn info(&self) -> TargetInfo {
        use DeviceAttr as A;
        // (a run of several GPUs asks from each GPU's own thread: make this one's context current)
        let _ = self.gpu.bind();
        let mut d = serde_json::Map::new();
        let a = |x| self.gpu.attr(x).ok();
        d.insert("compute_capability".into(), format!("{}.{}", self.gpu.cc.0, self.gpu.cc.1).into());
        d.insert("arch".into(), self.gpu.arch().into());
        d.insert("driver_api_version".into(), serde_json::json!(self.gpu.driver_version()));
        if let Ok((free, total)) = self.gpu.mem_info() {
            d.insert("memory_total_bytes".into(), total.into());
            d.insert("memory_free_bytes_at_info".into(), free.into());
        }
        d.insert("l2_cache_bytes_attribute".into(), self.l2_bytes.into());
        d.insert(
            "max_shared_per_sm_bytes_attribute".into(),
            serde_json::json!(a(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)),
        );
        d.insert(
            "memory_bus_width_bits_attribute".into(),
            serde_json::json!(a(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)),
        );
        d.insert("memory_clock_khz_attribute".into(), serde_json::json!(a(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)));
        d.insert("pci_bus_id".into(), serde_json::json!(self.gpu.pci_bus_id()));
        // (the peer probe's applicability: the host's GPU count and which one this is)
        d.insert("host_gpus".into(), serde_json::json!(crate::gpu::device_count().unwrap_or(1)));
        d.insert("host_gpu_index".into(), serde_json::json!(self.gpu.ordinal));
        d.insert(
            "clock_method".into(),
            "clock64 cycles over 20 ms of %globaltimer, one thread, after a 50 ms spin".into(),
        );
        d.insert(
            "chase_shared_carveout".into(),
            match crate::gpu::chase_carveout_percent() {
                Some(p) => format!(
                    "CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = {p}% on the chase kernels (prefer L1: shared \
                     memory only as much as a launch needs: its static variables, plus {} B with per-hop records)",
                    PER_HOP_CAP * 4
                ),
                None => "the driver's choice (MEMSCOPE_CHASE_CARVEOUT=default)".to_string(),
            }
            .into(),
        );
        d.insert("nvml_at_info".into(), crate::gpu::nvml::nvml_snapshot(self.gpu.ordinal));
        TargetInfo {
            kind: "cuda".into(),
            id: format!("cuda:{}", self.gpu.ordinal),
            name: self.gpu.name(),
            clock_hz: self.clock_hz,
            bypass_supported: true,
            aliasing_supported: true,
            per_hop_supported: true,
            gpu_hierarchy: true,
            units: self.sms,
            capabilities: memscope_core::Capabilities::cuda_gpu(),
            details: d,
        }
    }

    fn alloc(&mut self, bytes: u64) -> Result<Buffer, TargetError> {
        let p = self.guarded(|t| Ok(t.gpu.malloc(bytes)?))?;
        let id = self.next_id;
        self.next_id += 1;
        self.allocs.insert(id, Entry { base: p, bytes, kind: Alloc::Plain, generation: self.gpu.generation });
        Ok(Buffer { id, base: p, bytes })
    }

    fn alloc_aliased(&mut self, bytes: u64) -> Result<(Buffer, Buffer), TargetError> {
        self.guarded(|t| t.aliased(bytes))
    }

    fn free(&mut self, buf: Buffer) {
        let _ = self.gpu.bind();
        // The second half of an aliased pair frees the pair.
        let id = match self.allocs.get(&buf.id) {
            Some(Entry { kind: Alloc::AliasView, .. }) => buf.id - 1,
            _ => buf.id,
        };
        if let Some(e) = self.allocs.remove(&id) {
            if matches!(e.kind, Alloc::Aliased(_)) {
                self.allocs.remove(&(id + 1));
            }
            if e.generation != self.gpu.generation {
                return; // gone with a rebuilt context
            }
            match e.kind {
                Alloc::AliasView => {}
                Alloc::Plain => self.gpu.free(e.base),
                Alloc::Aliased(a) => a.release(),
            }
        }
    }

    fn flush(&mut self) -> Result<(), TargetError> {
        self.guarded(|t| t.do_flush())
    }

    fn chase(&mut self, spec: &ChaseSpec) -> Result<ChaseResult, TargetError> {
        self.guarded(|t| t.run_chase(spec))
    }

    fn unusable(&self) -> Option<String> {
        self.gpu.poisoned()
    }

    fn peer_links(&mut self) -> Option<&mut dyn memscope_core::links::PeerLinks> {
        let n = crate::gpu::device_count().ok()?;
        if n < 2 {
            return None;
        }
        // (the peer matrix runs alone: the background warming of the kernel cache ends first)
        self.prewarm.wait();
        if self.peers.is_none() {
            self.peers = crate::peer::CudaPeers::open(n).ok();
            // (the target's own context stays current for its other probes)
            let _ = self.gpu.bind();
        }
        self.peers.as_mut().map(|p| p as &mut dyn memscope_core::links::PeerLinks)
    }

    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

impl Drop for CudaTarget {
    fn drop(&mut self) {
        self.prewarm.wait();
        let ids: Vec<u64> = self.allocs.keys().copied().collect();
        for id in ids {
            if let Some(base) = self.allocs.get(&id).map(|e| e.base) {
                self.free(Buffer { id, base, bytes: 0 });
            }
        }
        let gen = self.gpu.generation;
        for (p, _, g) in [self.flush_buf.take(), self.scratch.take()].into_iter().flatten() {
            if g == gen {
                self.gpu.free(p);
            }
        }
    }
}
