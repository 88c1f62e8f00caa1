// slices.cu: the line hammer behind seed 000's L2 slice probe (appendix, "The L2 slice function").
// One elected block (the first on SM `target_sm`, or block 0 when target_sm is ~0) accesses each
// line of a plan many times past L1, with the line's operation: read (8 independent chains of
// ld.volatile.global per warp, all lanes on the same word: one request per instruction), write (8
// st.volatile.global of zero per round), atom (8 chains of atom.global.add of zero) or red (8
// red.global.add of zero); atomics and reductions are issued by lane 0 of each warp only (the L2
// counts every lane's atomic as a sector, so a full warp would cost 32 times the time). Each chain's next address adds the returned
// value (the buffer holds zeros and every write adds or stores zero), so no compiler can fold the
// accesses. Nsight Compute's per-slice sector counters, one per operation, then show where each
// operation's accesses went: a kernel can carry one experiment per operation. The other blocks
// touch no memory: they spin on %globaltimer for a while (so every SM gets a block) and leave.
// plan: n triples {offset in bytes from base, accesses, op (0 read, 1 write, 2 atom, 3 red)};
// accesses is a multiple of 8 x warps per block.
// record: [smid, clock64 cycles spent, 0, 0] of the elected block.

#define MAX_LINES 192

__device__ __forceinline__ u32 ld_vol(u64 a) {
    u32 v;
    asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
    return v;
}

__device__ __forceinline__ void st_vol(u64 a) {
    asm volatile("st.volatile.global.u32 [%0], %1;" ::"l"(a), "r"(0u) : "memory");
}

__device__ __forceinline__ u32 atom_add0(u64 a) {
    u32 v;
    asm volatile("atom.global.add.u32 %0, [%1], %2;" : "=r"(v) : "l"(a), "r"(0u) : "memory");
    return v;
}

__device__ __forceinline__ void red_add0(u64 a) {
    asm volatile("red.global.add.u32 [%0], %1;" ::"l"(a), "r"(0u) : "memory");
}

extern "C" __global__ void slice_hammer(u64 base, const u64* plan, u64 n, u64 target_sm, u64* claim, u64* record) {
    __shared__ int won;
    __shared__ u64 pl[3 * MAX_LINES];
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
    for (u32 j = threadIdx.x; j < 3 * m; j += blockDim.x) pl[j] = plan[j];
    __syncthreads();
    u64 c0 = clk64();
    u32 v0 = 0, v1 = 0, v2 = 0, v3 = 0, v4 = 0, v5 = 0, v6 = 0, v7 = 0;
    for (u64 i = 0; i < m; i++) {
        const u64 a = base + pl[3 * i];
        const u64 rounds = pl[3 * i + 1] / warps / 8;
        const u64 op = pl[3 * i + 2];
        if (op == 1) {
            for (u64 r = 0; r < rounds; r++) {
                st_vol(a + v0);
                st_vol(a + v1);
                st_vol(a + v2);
                st_vol(a + v3);
                st_vol(a + v4);
                st_vol(a + v5);
                st_vol(a + v6);
                st_vol(a + v7);
            }
        } else if (op == 2) {
            if ((threadIdx.x & 31) != 0) continue;
            for (u64 r = 0; r < rounds; r++) {
                v0 = atom_add0(a + v0);
                v1 = atom_add0(a + v1);
                v2 = atom_add0(a + v2);
                v3 = atom_add0(a + v3);
                v4 = atom_add0(a + v4);
                v5 = atom_add0(a + v5);
                v6 = atom_add0(a + v6);
                v7 = atom_add0(a + v7);
            }
        } else if (op == 3) {
            if ((threadIdx.x & 31) != 0) continue;
            for (u64 r = 0; r < rounds; r++) {
                red_add0(a + v0);
                red_add0(a + v1);
                red_add0(a + v2);
                red_add0(a + v3);
                red_add0(a + v4);
                red_add0(a + v5);
                red_add0(a + v6);
                red_add0(a + v7);
            }
        } else {
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
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        record[0] = smid();
        record[1] = clk64() - c0;
    }
    // Depends on every load; the buffer holds zeros, so this store never happens.
    if ((v0 | v1 | v2 | v3 | v4 | v5 | v6 | v7) == 0xdeadbeefu) record[2] = v0 + threadIdx.x;
}
