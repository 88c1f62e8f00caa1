// smem.cu: the shared-memory probe. A dependent chase inside shared memory (one
// thread, ld.shared.u32 of the next shared address, nothing else in the timed region); the
// bandwidth of one SM (ld.shared.v4.u32, conflict-free, eight in flight per thread); the cost of a
// warp's access by lane stride (lane i reads word i * stride: the bank-conflict table); and the
// residency of blocks per SM for a given shared-memory footprint (the carveout steps).
// Shared loads are ld.volatile.shared: ptxas would otherwise merge repeated loads of one address
// (a plain asm volatile load is still one it may combine). All parameters are 64-bit.

__device__ __forceinline__ u32 lds32(u32 a) { u32 v; asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory"); return v; }
__device__ __forceinline__ u32 lds128(u32 a) {
    u32 x, y, z, w;
    asm volatile("ld.volatile.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(x), "=r"(y), "=r"(z), "=r"(w) : "r"(a) : "memory");
    return x ^ y ^ z ^ w;
}
__device__ __forceinline__ void sts32(u32 a, u32 v) { asm volatile("st.shared.u32 [%0], %1;" :: "r"(a), "r"(v) : "memory"); }

#define CHASE_WORDS 4096

// One warp; lane 0 chases a ring of `n` words (n <= 4096) where word i holds the shared address of
// word (i + step) % n, `hops` dependent loads after one warm-up lap. The store of the last value
// makes the thread wait for the last load before the closing clock read.
// out: [c0, c1, t0, t1, final value].
extern "C" __global__ void smem_chase(u64 hops, u64 n, u64 step, u64* out) {
    __shared__ u32 ring[CHASE_WORDS];
    __shared__ u32 sink;
    const u32 base = saddr(ring);
    if (n > CHASE_WORDS) n = CHASE_WORDS;
    for (u32 i = threadIdx.x; i < n; i += blockDim.x) ring[i] = base + (u32)(((i + step) % n) * 4);
    __syncthreads();
    if (threadIdx.x != 0) return;
    u32 p = base;
    for (u64 i = 0; i < n; i++) p = lds32(p);
    sts32(saddr(&sink), p);
    const u64 t0 = gtimer();
    const u64 c0 = clk64();
    u64 k = hops;
    while (k >= 16) {
#pragma unroll
        for (int j = 0; j < 16; j++) p = lds32(p);
        k -= 16;
    }
    while (k > 0) { p = lds32(p); k--; }
    sts32(saddr(&sink), p);
    const u64 c1 = clk64();
    const u64 t1 = gtimer();
    out[0] = c0; out[1] = c1; out[2] = t0; out[3] = t1; out[4] = p;
}

#define BW_VECS 2048  // 32 KiB of 16-byte words

// Every thread reads 8 fixed 16-byte words per round (thread t, slot k: word (t + k * blockDim) %
// 2048, so a warp reads 512 contiguous bytes: conflict-free), `rounds` rounds. Thread 0 reads the
// clocks between barriers; two blocks of 1024 threads fit an SM. out per block (6 words at blockIdx * 6): [c0, c1, t0, t1, smid, sink].
extern "C" __global__ void __launch_bounds__(1024, 2) smem_bw(u64 rounds, u64* out) {
    __shared__ __align__(16) uint4 buf[BW_VECS];
    for (u32 i = threadIdx.x; i < BW_VECS; i += blockDim.x) buf[i] = make_uint4(i, i * 3, i * 5, i * 7);
    u32 a[8];
#pragma unroll
    for (int k = 0; k < 8; k++) a[k] = saddr(&buf[(threadIdx.x + k * blockDim.x) % BW_VECS]);
    __syncthreads();
    u64 c0 = clk64(), t0 = gtimer();
    __syncthreads();
    u32 acc0 = 0, acc1 = 0;
    for (u64 r = 0; r < rounds; r++) {
#pragma unroll
        for (int k = 0; k < 8; k += 2) { acc0 ^= lds128(a[k]); acc1 ^= lds128(a[k + 1]); }
    }
    __syncthreads();
    u64 c1 = clk64(), t1 = gtimer();
    u64* o = out + blockIdx.x * 6;
    if (threadIdx.x == 0) { o[0] = c0; o[1] = c1; o[2] = t0; o[3] = t1; o[4] = smid(); }
    if ((acc0 ^ acc1) == 0x5eed5eedu) o[5] = acc0;
}

#define CONFLICT_WORDS 4096  // 16 KiB: lane 31 at stride 128 stays inside

// For every stride s = 1..max_stride: every warp of the block (lane i: word (i * s) % 4096) issues
// 16 independent 4-byte loads per round, `rounds` rounds, between barriers and clock reads of
// thread 0. out[s - 1] = the cycles of stride s.
extern "C" __global__ void smem_conflict(u64 max_stride, u64 rounds, u64* out) {
    __shared__ u32 words[CONFLICT_WORDS];
    for (u32 i = threadIdx.x; i < CONFLICT_WORDS; i += blockDim.x) words[i] = i * 2654435761u;
    __syncthreads();
    const u32 base = saddr(words);
    const u32 lane = threadIdx.x & 31;
    u32 acc = 0;
    for (u64 s = 1; s <= max_stride; s++) {
        const u32 a = base + (u32)(((lane * s) % CONFLICT_WORDS) * 4);
        acc ^= lds32(a);  // untimed first touch
        __syncthreads();
        const u64 c0 = clk64();
        __syncthreads();
        for (u64 r = 0; r < rounds; r++) {
            u32 x = 0;
#pragma unroll
            for (int k = 0; k < 16; k++) x ^= lds32(a);
            acc += x;
        }
        __syncthreads();
        const u64 c1 = clk64();
        if (threadIdx.x == 0) out[s - 1] = c1 - c0;
    }
    if (acc == 0x5eed5eedu) out[max_stride] = acc;
}

// Residency: thread 0 of every block counts itself in on its SM, records the highest count seen,
// spins `spin_ns` of %globaltimer, and counts itself out. The block's dynamic shared memory (its
// footprint) is set by the launch; one word of it is touched. counters: [0, 1024) live counts per
// SM, [1024, 2048) peaks.
extern "C" __global__ void smem_resident(u64 spin_ns, u32* counters) {
    extern __shared__ u32 dyn[];
    if (threadIdx.x != 0) return;
    dyn[0] = blockIdx.x;
    const u32 sm = smid() & 1023;
    const u32 before = atomicAdd(&counters[sm], 1u);
    atomicMax(&counters[1024 + sm], before + 1);
    const u64 t0 = gtimer();
    while (gtimer() - t0 < spin_ns) {
    }
    atomicSub(&counters[sm], 1u);
}
