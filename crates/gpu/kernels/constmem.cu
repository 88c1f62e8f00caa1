// constmem.cu: dependent chases through the SM's other read paths (docs/SM_MEMORIES.md): the constant bank
// (`__constant__`, indexed loads, the constant caches), ld.global.nc (the read-only path),
// tex.1d fetches from a texture object over a linear buffer, and ld.global.ca (L1) for comparison
// in the same instrument. Each chase is seed 000's instrument: one thread, dependent loads,
// whole-chase time (%globaltimer ns and clock64 cycles) over the timed hops, after warm-up hops.
// What each path's cells hold is what its load needs next, so the dependence carries no address
// arithmetic: the constant chase holds byte offsets into the bank, the global chases absolute
// pointers (8-byte cells), the texture chase element indices (4-byte cells).
// `interfere` is the sharing experiment: a victim chase is timed while resident, an aggressor
// warp chases another footprint, and the victim is timed again in the same launch (the caches of
// the SM are not guaranteed to keep their contents across launches).
// Placement: only the first block that lands on the chosen SM runs (as chase.cu).
// All parameters are 64-bit so the host passes one array of u64.

// The whole 64 KiB constant bank of this module, filled by the host (cuModuleGetGlobal).
#define CONST_BYTES 65536
__constant__ u32 cbank[CONST_BYTES / 4];

// Path kinds (the host's `Path` in probes/sm_chase.rs).
#define K_CA 0
#define K_NC 1
#define K_TEX 2
#define K_CONST 3

template <int K> __device__ __forceinline__ u64 step(u64 p, u64 tex) {
    u64 v;
    if (K == K_CA) {
        asm volatile("ld.global.ca.u64 %0, [%1];" : "=l"(v) : "l"(p));
    } else if (K == K_NC) {
        asm volatile("ld.global.nc.u64 %0, [%1];" : "=l"(v) : "l"(p));
    } else if (K == K_TEX) {
        u32 a, b, c, d;
        asm volatile("tex.1d.v4.u32.s32 {%0, %1, %2, %3}, [%4, {%5}];"
                     : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "l"(tex), "r"((u32)p));
        v = a;
    } else {
        // An indexed constant load (LDC): the cell at byte offset p of the bank.
        v = *(const u32*)((const char*)cbank + (u32)p);
    }
    return v;
}

template <int K> __device__ __forceinline__ u64 walk(u64 p, u64 n, u64 tex) {
    while (n >= 16) {
#pragma unroll
        for (int k = 0; k < 16; k++) p = step<K>(p, tex);
        n -= 16;
    }
    while (n > 0) { p = step<K>(p, tex); n--; }
    return p;
}

__device__ __forceinline__ u64 walk_any(u64 kind, u64 p, u64 n, u64 tex) {
    switch (kind) {
        case K_CA: return walk<K_CA>(p, n, tex);
        case K_NC: return walk<K_NC>(p, n, tex);
        case K_TEX: return walk<K_TEX>(p, n, tex);
        default: return walk<K_CONST>(p, n, tex);
    }
}

// Whether this block is the one that runs (the first on `target_sm`; block 0 when ~0).
__device__ __forceinline__ bool chosen(u64 target_sm, u32* claim) {
    __shared__ int won;
    if (target_sm == ~0ull) return blockIdx.x == 0;
    if (smid() != (u32)target_sm) return false;
    if (threadIdx.x == 0) won = (atomicCAS(claim, 0u, 1u) == 0u);
    __syncthreads();
    return won != 0;
}

// One timed chase. out: [t0_ns, t1_ns, c0, c1, final, smid].
template <int K>
__device__ void chase_one(u64 start, u64 tex, u64 warm, u64 hops, u64 target_sm, u32* claim, u64* out) {
    __shared__ u64 sink[1];
    volatile u64* vs = sink;
    if (!chosen(target_sm, claim)) return;
    if (threadIdx.x != 0) return;
    u64 p = walk<K>(start, warm, tex);
    vs[0] = p;  // waits for the warm-up to finish
    u64 t0 = gtimer();
    u64 c0 = clk64();
    p = walk<K>(p, hops, tex);
    vs[0] = p;  // a use of p: the thread stalls here until the last load returns
    u64 c1 = clk64();
    u64 t1 = gtimer();
    out[0] = t0; out[1] = t1; out[2] = c0; out[3] = c1; out[4] = p; out[5] = smid();
}

extern "C" __global__ void smc_chase_ca(u64 start, u64 tex, u64 warm, u64 hops, u64 target_sm, u32* claim, u64* out) {
    chase_one<K_CA>(start, tex, warm, hops, target_sm, claim, out);
}
extern "C" __global__ void smc_chase_nc(u64 start, u64 tex, u64 warm, u64 hops, u64 target_sm, u32* claim, u64* out) {
    chase_one<K_NC>(start, tex, warm, hops, target_sm, claim, out);
}
extern "C" __global__ void smc_chase_tex(u64 start, u64 tex, u64 warm, u64 hops, u64 target_sm, u32* claim, u64* out) {
    chase_one<K_TEX>(start, tex, warm, hops, target_sm, claim, out);
}
extern "C" __global__ void smc_chase_const(u64 start, u64 tex, u64 warm, u64 hops, u64 target_sm, u32* claim, u64* out) {
    chase_one<K_CONST>(start, tex, warm, hops, target_sm, claim, out);
}

// The sharing experiment, in one launch of one block (at least agg_warp + 1 warps) on the chosen
// SM. Warp 0 (lane 0) warms the victim chase (`vwarm` hops) and times `vhops` hops (before);
// then warp `agg_warp` (lane 0) chases the aggressor footprint for `ahops` hops (0: no aggressor,
// the control); then warp 0 times `vhops` more victim hops (after). The phases are separated by
// __syncthreads. out: [before_ns, after_ns, before_cycles, after_cycles, victim_final,
// aggressor_final, smid] (ns and cycles are whole-phase spans).
extern "C" __global__ void smc_interfere(u64 vkind, u64 vstart, u64 akind, u64 astart, u64 tex, u64 vwarm,
                                         u64 vhops, u64 ahops, u64 agg_warp, u64 target_sm, u32* claim, u64* out) {
    __shared__ u64 sink[2];
    volatile u64* vs = sink;
    if (!chosen(target_sm, claim)) return;
    const u32 warp = threadIdx.x >> 5;
    const bool lead = (threadIdx.x & 31) == 0;
    u64 p = vstart;
    u64 bt = 0, bc = 0;
    if (warp == 0 && lead) {
        p = walk_any(vkind, p, vwarm, tex);
        vs[0] = p;
        u64 t0 = gtimer(), c0 = clk64();
        p = walk_any(vkind, p, vhops, tex);
        vs[0] = p;
        u64 c1 = clk64(), t1 = gtimer();
        bt = t1 - t0;
        bc = c1 - c0;
    }
    __syncthreads();
    if (warp == (u32)agg_warp && lead && ahops > 0) {
        u64 q = walk_any(akind, astart, ahops, tex);
        vs[1] = q;
        out[5] = q;
    }
    __syncthreads();
    if (warp == 0 && lead) {
        u64 t0 = gtimer(), c0 = clk64();
        p = walk_any(vkind, p, vhops, tex);
        vs[0] = p;
        u64 c1 = clk64(), t1 = gtimer();
        out[0] = bt;
        out[1] = t1 - t0;
        out[2] = bc;
        out[3] = c1 - c0;
        out[4] = p;
        out[6] = smid();
    }
}
