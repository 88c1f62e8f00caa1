//! The CUDA target's peer-link instrument (docs/INTERCONNECT.md; `memscope_core::links::PeerLinks`): every GPU
//! of the host opened by ordinal (their primary contexts, shared with their own targets), peer
//! access checked with cuDeviceCanAccessPeer and enabled with cuCtxEnablePeerAccess; copy-engine
//! copies with cuMemcpyDtoDAsync on the source GPU's stream (unified addressing), copy-kernel
//! copies with kernels/link.cu's link_copy run by the source GPU writing the peer's memory,
//! events on the source GPU's stream; bidirectional: the reverse copy enqueued on the destination
//! GPU's stream first. Latency: kernels/link.cu's link_chase on the row GPU over a random cycle
//! in the column GPU's memory. Never multicast objects (cuMulticastCreate): they can take shared
//! GPUs out of service.

use crate::gpu::{DeviceAttr, Event, Gpu, Module, OwnedStream};
use memscope_core::links::{Engine, PeerAccess, PeerCopy, PeerLinks};
use memscope_core::TargetError;
use std::collections::HashMap;

/// Every GPU of the host, opened for the peer measurements.
pub(crate) struct CudaPeers {
    gpus: Vec<Gpu>,
    streams: Vec<OwnedStream>,
    /// (gpu, role, bytes) -> device buffer; role 0: source, 1: destination, 2: chase cycle.
    bufs: HashMap<(usize, u8, u64), u64>,
    enabled: HashMap<(usize, usize), PeerAccess>,
}

// SAFETY: the handles are only used with the right context made current on the calling thread.
unsafe impl Send for CudaPeers {}

impl CudaPeers {
    pub fn open(n: usize) -> Result<CudaPeers, TargetError> {
        let mut gpus = Vec::new();
        let mut streams = Vec::new();
        for i in 0..n {
            let g = Gpu::open(i)?;
            g.bind()?;
            streams.push(OwnedStream::new()?);
            gpus.push(g);
        }
        Ok(CudaPeers { gpus, streams, bufs: HashMap::new(), enabled: HashMap::new() })
    }

    fn buf(&mut self, g: usize, role: u8, bytes: u64) -> Result<u64, TargetError> {
        if let Some(p) = self.bufs.get(&(g, role, bytes)) {
            return Ok(*p);
        }
        let p = self.gpus[g].malloc(bytes)?;
        self.bufs.insert((g, role, bytes), p);
        Ok(p)
    }

    /// Enqueue one copy `src -> dst` (GPU indices) on the source GPU's stream.
    fn enqueue(&mut self, src: usize, dst: usize, engine: Engine, bytes: u64) -> Result<(), TargetError> {
        let from = self.buf(src, 0, bytes)?;
        let to = self.buf(dst, 1, bytes)?;
        let s = self.streams[src].raw();
        let g = &mut self.gpus[src];
        g.bind()?;
        match engine {
            Engine::Ce => Ok(g.dtod_async(to, from, bytes as usize, s)?),
            Engine::Sm => {
                let sms = g.attr(DeviceAttr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u64;
                let n16 = bytes / 16;
                let grid = n16.div_ceil(512 * 4).clamp(1, sms * 4) as u32;
                Ok(g.launch(Module::Link, "link_copy", grid, 512, 0, &[from, to, n16], s)?)
            }
        }
    }
}

impl Drop for CudaPeers {
    fn drop(&mut self) {
        for (&(g, _, _), &p) in &self.bufs {
            self.gpus[g].free(p);
        }
        for (g, s) in self.gpus.iter().zip(std::mem::take(&mut self.streams)) {
            let _ = g.bind();
            drop(s);
        }
    }
}

impl PeerLinks for CudaPeers {
    fn gpus(&self) -> usize {
        self.gpus.len()
    }

    fn access(&mut self, from: usize, to: usize) -> PeerAccess {
        if let Some(r) = self.enabled.get(&(from, to)) {
            return r.clone();
        }
        let res = match self.gpus[from].enable_peer_access(&self.gpus[to], from, to) {
            Ok(()) => PeerAccess::Enabled,
            Err(e) => PeerAccess::Refused(e.to_string()),
        };
        self.enabled.insert((from, to), res.clone());
        res
    }

    fn copy_seconds(&mut self, c: &PeerCopy, reps: usize) -> Result<Vec<f64>, TargetError> {
        const BATCH: usize = 4;
        let mut out = Vec::with_capacity(reps);
        for _ in 0..reps {
            self.gpus[c.src].bind()?;
            let (a, b) = (Event::new()?, Event::new()?);
            let s = self.streams[c.src].raw();
            let res = (|| -> Result<f64, TargetError> {
                if c.bidirectional {
                    for _ in 0..BATCH {
                        self.enqueue(c.dst, c.src, c.engine, c.bytes)?;
                    }
                    self.gpus[c.src].bind()?;
                }
                a.record(s)?;
                for _ in 0..BATCH {
                    self.enqueue(c.src, c.dst, c.engine, c.bytes)?;
                }
                self.gpus[c.src].bind()?;
                b.record(s)?;
                b.synchronize("peer copy (cuEventSynchronize)")?;
                let ms = a.elapsed_ms(&b)?;
                if c.bidirectional {
                    self.gpus[c.dst].bind()?;
                    crate::gpu::timing::stream_sync(self.streams[c.dst].raw(), "cuStreamSynchronize")?;
                }
                Ok(ms as f64 / 1e3 / BATCH as f64)
            })();
            drop((a, b));
            out.push(res?);
        }
        Ok(out)
    }

    fn latency_ns(&mut self, from: usize, to: usize, reps: usize) -> Result<Vec<f64>, TargetError> {
        use rand::seq::SliceRandom;
        use rand::SeedableRng;
        const NODES: usize = 4096;
        const STRIDE: u64 = 256;
        let cycle = self.buf(to, 2, NODES as u64 * STRIDE)?;
        let mut order: Vec<usize> = (0..NODES).collect();
        order.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(17));
        let mut words = vec![0u64; NODES * (STRIDE / 8) as usize];
        for i in 0..NODES {
            words[order[i] * (STRIDE / 8) as usize] = cycle + order[(i + 1) % NODES] as u64 * STRIDE;
        }
        self.gpus[to].bind()?;
        self.gpus[to].htod(cycle, &words)?;
        let res = self.buf(from, 3, 64)?;
        let g = &mut self.gpus[from];
        g.bind()?;
        let start = cycle + order[0] as u64 * STRIDE;
        let mut out = Vec::with_capacity(reps);
        for _ in 0..reps {
            g.launch(Module::Link, "link_chase", 1, 1, 0, &[start, NODES as u64, res], std::ptr::null_mut())?;
            g.sync()?;
            let v: Vec<u64> = g.dtoh(res, 3)?;
            out.push(v[0] as f64 / NODES as f64);
        }
        Ok(out)
    }

    fn describe(&self) -> String {
        format!(
            "the CUDA driver over {} GPUs (cuDeviceCanAccessPeer, cuCtxEnablePeerAccess; cuMemcpyDtoDAsync or \
             kernels/link.cu link_copy on the source GPU, batches of 4 copies between events; link_chase with ld.global.cv)",
            self.gpus.len()
        )
    }
}
