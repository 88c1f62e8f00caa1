// slices.cu: the line hammer behind seed 000's L2 slice probe (appendix, "The L2 slice function").
// One elected block (the first on SM `target_sm`, or block 0 when target_sm is ~0) reads each line
// of a plan many times past L1: every warp runs 8 independent chains of ld.volatile.global (never
// merged, never served by L1), all lanes on the same word, so each load instruction is one request
// and one 32-byte sector at the line's L2 slice. Each chain's next address adds the loaded value
// (the buffer holds zeros), so no compiler can fold the loads. Nsight Compute's per-slice sector
// counters then show where the loads went. The other blocks read no memory: they spin on
// %globaltimer for a while (so every SM gets a block) and leave.
// plan: n pairs {offset in bytes from base, loads}; loads is a multiple of 8 x warps per block.
// record: [smid, clock64 cycles spent, 0, 0] of the elected block.

#define MAX_LINES 64

__device__ __forceinline__ u32 ld_vol(u64 a) {
    u32 v;
    asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
    return v;
}

extern "C" __global__ void slice_hammer(u64 base, const u64* plan, u64 n, u64 target_sm, u64* claim, u64* record) {
    __shared__ int won;
    __shared__ u64 pl[2 * MAX_LINES];
    if (threadIdx.x == 0) {
        int w = 0;
        if (target_sm == ~0ull) {
            w = blockIdx.x == 0;
        } else if (smid() == (u32)target_sm) {
            w = atomicCAS(claim, 0ull, 1ull) == 0ull;
        }
        if (!w && target_sm != ~0ull) {
            // Stay resident a little (no memory reads) so the grid spreads over every SM.
            u64 t0 = gtimer();
            while (gtimer() - t0 < 20000ull) {}
        }
        won = w;
    }
    __syncthreads();
    if (!won) return;
    const u32 warps = blockDim.x >> 5;
    const u64 m = n < MAX_LINES ? n : MAX_LINES;
    // The plan is read once into shared memory (a few sectors of L2 reads, the same every kernel).
    for (u32 j = threadIdx.x; j < 2 * m; j += blockDim.x) pl[j] = plan[j];
    __syncthreads();
    u64 c0 = clk64();
    u32 v0 = 0, v1 = 0, v2 = 0, v3 = 0, v4 = 0, v5 = 0, v6 = 0, v7 = 0;
    for (u64 i = 0; i < m; i++) {
        const u64 a = base + pl[2 * i];
        const u64 rounds = pl[2 * i + 1] / warps / 8;
        for (u64 r = 0; r < rounds; r++) {
            v0 = ld_vol(a + v0);
            v1 = ld_vol(a + v1);
            v2 = ld_vol(a + v2);
            v3 = ld_vol(a + v3);
            v4 = ld_vol(a + v4);
            v5 = ld_vol(a + v5);
            v6 = ld_vol(a + v6);
            v7 = ld_vol(a + v7);
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        record[0] = smid();
        record[1] = clk64() - c0;
    }
    // Depends on every load; the buffer holds zeros, so this store never happens.
    if ((v0 | v1 | v2 | v3 | v4 | v5 | v6 | v7) == 0xdeadbeefu) record[2] = v0 + threadIdx.x;
}
