// sm_map.cu: the per-SM L2 map (crates/cuda/src/probes/sm_map.rs, docs/SM_MEMORIES.md "The per-SM L2 map").
// The host places one cycle of absolute pointers over lines of a few 2 MiB pages (one pointer word
// per line) and, in each page, one line outside the cycle for the TLB. Before each measurement
// sm_map_prime adds 0 to every line of the cycle with global reductions: they are performed at the
// line's home L2 slice, so the lines are L2-resident at home and no partition holds a copy made by
// an earlier chase. Then sm_map_chase runs on the chosen SM (every block checks %smid; the first
// there claims the run, as in chase.cu), one thread:
//   the TLB lap: a recorded lap over the TLB lines (twice; warms the code path and the TLBs),
//   lap A: one recorded lap of the cycle, the first touch of each line from this SM (a line whose
//          home slice is in this SM's partition is a near hit, the others far hits),
//   lap B: the same lap again, recorded (the lines are now held near: the recording's control),
//   lap C: the same lap uninstrumented (clock64 and %globaltimer around it: the per-hop cost of
//          recording is lap B's mean less lap C's),
//   the L1 control: a small cycle through L1 (ld.global.ca), warm-up hops then timed hops.
// Recorded laps keep clock64 deltas per hop in shared memory (a shared store of the loaded pointer
// makes the thread wait for the load before the clock is read) and leave through L2 (st.global.cg)
// at the end. All parameters are 64-bit so the host passes one array of u64.

#define SM_MAP_MAX_LINES 2048

__device__ __forceinline__ u64 smm_ld_cg(u64 p) { u64 v; asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(v) : "l"(p)); return v; }
__device__ __forceinline__ u64 smm_ld_ca(u64 p) { u64 v; asm volatile("ld.global.ca.u64 %0, [%1];" : "=l"(v) : "l"(p)); return v; }
__device__ __forceinline__ void smm_st_cg(u32* a, u32 v) { asm volatile("st.global.cg.u32 [%0], %1;" :: "l"(a), "r"(v) : "memory"); }

// One recorded lap of n hops from p: rec[i] = clock64 cycles of hop i. One copy of the code for
// every recorded lap (noinline), so the TLB lap warms the instructions lap A runs.
__device__ __noinline__ u64 smm_recorded_lap(u64 p, u64 n, u32* rec, volatile u64* sink) {
    u64 prev = clk64();
    for (u64 i = 0; i < n; i++) {
        p = smm_ld_cg(p);
        *sink = p;
        u64 now = clk64();
        rec[i] = (u32)(now - prev);
        prev = now;
    }
    return p;
}

// Reductions (adds of 0) on the pointer word of each of n lines; lines[i] is a line's address.
extern "C" __global__ void sm_map_prime(const u64* lines, u64 n) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (; i < n; i += stride) asm volatile("red.global.add.u64 [%0], %1;" :: "l"(lines[i]), "l"(0ull) : "memory");
}

// out (12 words): [lap C c0, c1, t0, t1, L1 c0, c1, t0, t1, final pointer of the cycle, final
// pointer of the L1 cycle, smid, 1]; rec: 2n u32 (lap A then lap B).
extern "C" __global__ void sm_map_chase(u64 start, u64 n, u64 tlb_start, u64 tlb_n, u64 l1_start, u64 l1_warm,
                                        u64 l1_hops, u64 target_sm, u32* claim, u64* out, u32* rec) {
    __shared__ int won;
    __shared__ u64 sink[1];
    __shared__ u32 laps[2 * SM_MAP_MAX_LINES];
    if (smid() != (u32)target_sm) return;
    if (threadIdx.x == 0) won = (atomicCAS(claim, 0u, 1u) == 0u);
    __syncthreads();
    if (!won || threadIdx.x != 0 || n > SM_MAP_MAX_LINES || tlb_n > SM_MAP_MAX_LINES) return;
    volatile u64* vs = sink;
    u64 q = smm_recorded_lap(tlb_start, tlb_n, laps, vs);
    q = smm_recorded_lap(q, tlb_n, laps, vs);
    u64 p = smm_recorded_lap(start, n, laps, vs);
    p = smm_recorded_lap(p, n, laps + n, vs);
    u64 t0 = gtimer();
    u64 c0 = clk64();
    u64 k = n;
    while (k >= 16) {
#pragma unroll
        for (int j = 0; j < 16; j++) p = smm_ld_cg(p);
        k -= 16;
    }
    while (k > 0) { p = smm_ld_cg(p); k--; }
    vs[0] = p;  // a use of p: waits for the last load
    u64 c1 = clk64();
    u64 t1 = gtimer();
    u64 r = l1_start;
    for (u64 i = 0; i < l1_warm; i++) r = smm_ld_ca(r);
    vs[0] = r;
    u64 lt0 = gtimer();
    u64 lc0 = clk64();
    k = l1_hops;
    while (k >= 16) {
#pragma unroll
        for (int j = 0; j < 16; j++) r = smm_ld_ca(r);
        k -= 16;
    }
    while (k > 0) { r = smm_ld_ca(r); k--; }
    vs[0] = r;
    u64 lc1 = clk64();
    u64 lt1 = gtimer();
    for (u64 i = 0; i < 2 * n; i++) smm_st_cg(rec + i, laps[i]);
    out[0] = c0; out[1] = c1; out[2] = t0; out[3] = t1;
    out[4] = lc0; out[5] = lc1; out[6] = lt0; out[7] = lt1;
    out[8] = p; out[9] = r; out[10] = smid(); out[11] = 1;
}
