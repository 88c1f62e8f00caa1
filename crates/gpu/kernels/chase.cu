// chase.cu: the latency chase of seed 000's appendix on a GPU. One thread per warp (lane 0) follows
// a cycle of absolute device pointers with dependent loads, ld.global.ca (through L1) or
// ld.global.cg (past L1), unrolled by 16, after warm-up hops; %globaltimer (ns) and clock64
// (cycles) around the timed hops; optional per-hop clock64 deltas through shared memory (refresh
// probe; the recorded hops are the timed hops). Placement: every block checks %smid and only the first block on the chosen SM runs.
// All parameters are 64-bit so the host passes one array of u64. The host sets the preferred
// shared-memory carveout of these kernels to 0 (src/gpu/launch.rs): L1 gets all of the unified array that
// a launch's shared memory leaves (the driver's own pick gave a 64 KiB L1 knee on the H200).

__device__ __forceinline__ u64 ld_ca(u64 p) { u64 v; asm volatile("ld.global.ca.u64 %0, [%1];" : "=l"(v) : "l"(p)); return v; }
__device__ __forceinline__ u64 ld_cg(u64 p) { u64 v; asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(v) : "l"(p)); return v; }
// Per-hop records leave through L2 only (st.global.cg), so copying them out evicts no chased line from L1.
__device__ __forceinline__ void st_cg(u32* a, u32 v) { asm volatile("st.global.cg.u32 [%0], %1;" :: "l"(a), "r"(v) : "memory"); }

template <bool CG> __device__ __forceinline__ u64 hop(u64 p) { return CG ? ld_cg(p) : ld_ca(p); }

// 6 KiB of records: with the block's static shared memory and the driver's 1 KiB reserve a launch
// stays within the smallest carveout step (8 KiB on sm_90), so L1 keeps the rest of the array.
#define PER_HOP_CAP 1536

// out: per warp 6 words [t0_ns, t1_ns, c0, c1, final pointer, smid]; per_hop_out: per-hop cycles,
// warp-major (per_hop_n per warp), of the timed hops when per_hop_n > 0.
template <bool CG>
__device__ void chase_impl(const u64* starts, u64 warm, u64 hops, u64 target_sm, u32* claim, u64* out,
                           u64 per_hop_n, u32* per_hop_out) {
    __shared__ int won;
    __shared__ u64 sink[32];
    extern __shared__ u32 hop_cycles[];
    if (target_sm != ~0ull) {
        if (smid() != (u32)target_sm) return;
        if (threadIdx.x == 0) won = (atomicCAS(claim, 0u, 1u) == 0u);
        __syncthreads();
        if (!won) return;
    } else if (blockIdx.x != 0) {
        return;
    }
    const u32 warp = threadIdx.x >> 5;
    const bool leader = (threadIdx.x & 31) == 0;
    volatile u64* vs = sink;
    u64 p = 0;
    if (leader) {
        p = starts[warp];
        for (u64 i = 0; i < warm; i++) p = hop<CG>(p);
        vs[warp] = p;  // waits for the warm-up to finish
    }
    __syncthreads();
    if (leader) {
        u64 excl = 0;  // ns spent copying per-hop records out, excluded from the timed span
        u64 exclc = 0;
        u64 t0 = gtimer();
        u64 c0 = clk64();
        if (per_hop_n == 0) {
            u64 n = hops;
            while (n >= 16) {
#pragma unroll
                for (int k = 0; k < 16; k++) p = hop<CG>(p);
                n -= 16;
            }
            while (n > 0) { p = hop<CG>(p); n--; }
        } else {
            // The timed hops themselves are recorded: clock64 after each hop (the store of p to
            // shared memory makes the warp wait for the load), per warp in its own region of
            // shared memory, copied out to per_hop_out[warp * per_hop_n + i] chunk by chunk.
            const u64 region = PER_HOP_CAP / (blockDim.x >> 5);
            u32* mine = hop_cycles + warp * region;
            u64 done = 0;
            u64 prev = clk64();
            while (done < hops) {
                u64 chunk = hops - done;
                if (chunk > region) chunk = region;
                for (u64 i = 0; i < chunk; i++) {
                    p = hop<CG>(p);
                    vs[warp] = p;
                    u64 now = clk64();
                    mine[i] = (u32)(now - prev);
                    prev = now;
                }
                u64 e0 = gtimer(), ec0 = clk64();
                for (u64 i = 0; i < chunk && done + i < per_hop_n; i++) st_cg(per_hop_out + warp * per_hop_n + done + i, mine[i]);
                done += chunk;
                prev = clk64();
                excl += gtimer() - e0;
                exclc += prev - ec0;
            }
        }
        vs[warp] = p;  // a use of p: the warp stalls here until the last load returns
        u64 c1 = clk64();
        u64 t1 = gtimer();
        out[warp * 6 + 0] = t0;
        out[warp * 6 + 1] = t1 - excl;
        out[warp * 6 + 2] = c0;
        out[warp * 6 + 3] = c1 - exclc;
        out[warp * 6 + 5] = smid();
        // The result, stored so the chase cannot be optimised away.
        out[warp * 6 + 4] = p;
    }
}

extern "C" __global__ void chase_ca(const u64* starts, u64 warm, u64 hops, u64 target_sm, u32* claim, u64* out,
                                    u64 per_hop_n, u32* per_hop_out) {
    chase_impl<false>(starts, warm, hops, target_sm, claim, out, per_hop_n, per_hop_out);
}

extern "C" __global__ void chase_cg(const u64* starts, u64 warm, u64 hops, u64 target_sm, u32* claim, u64* out,
                                    u64 per_hop_n, u32* per_hop_out) {
    chase_impl<true>(starts, warm, hops, target_sm, claim, out, per_hop_n, per_hop_out);
}

// Writes the chase cycle: pairs[2i] is an absolute address, pairs[2i+1] the value stored there.
extern "C" __global__ void scatter_u64(const u64* pairs, u64 npairs) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (; i < npairs; i += stride) *(u64*)pairs[2 * i] = pairs[2 * i + 1];
}

// Cache flush: every thread writes then (second kernel) reads through L1 a buffer larger than 2x L2.
extern "C" __global__ void flush_write(u64* buf, u64 n8, u64 value) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (; i < n8; i += stride) buf[i] = value ^ i;
}

extern "C" __global__ void flush_read(const u64* buf, u64 n8, u64* sink) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 stride = (u64)gridDim.x * blockDim.x;
    u64 acc = 0;
    for (; i < n8; i += stride) acc ^= ld_ca((u64)(buf + i));
    if (acc == 0x5eed5eed5eed5eedull) sink[0] = acc;
}

// TLB sweep: every block (several per SM) touches one line in each of `pages` pages, so each SM's
// TLBs are refilled with the sweep buffer's translations.
extern "C" __global__ void tlb_sweep(u64 base, u64 pages, u64 page_bytes, u64* sink) {
    u64 acc = 0;
    for (u64 i = threadIdx.x; i < pages; i += blockDim.x)
        acc ^= ld_ca(base + i * page_bytes + ((blockIdx.x * 128ull) % page_bytes));
    if (acc == 0x5eed5eed5eed5eedull) sink[0] = acc;
}

// The SM clock under load: one thread spins for `ns` nanoseconds of %globaltimer and records the
// clock64 cycles that passed. out: [t0, t1, c0, c1].
extern "C" __global__ void clock_probe(u64 ns, u64* out) {
    u64 t0 = gtimer(), c0 = clk64();
    u64 t1 = t0;
    while (t1 - t0 < ns) t1 = gtimer();
    u64 c1 = clk64();
    out[0] = t0; out[1] = t1; out[2] = c0; out[3] = c1;
}
