// atomics.cu: the atomics probe. Latency: one thread, a chain of dependent 32-bit
// fetch-and-adds (each adds the value the previous one returned, so none can start before the last
// has come back) on a global word (performed at its L2 slice) or a shared word. Throughput: every
// thread issues independent fetch-and-adds (four per round), all to one word or each to its own
// word (consecutive words: a warp's 32 lanes cover one 128-byte line). Inline PTX atom (never red)
// keeps the compiler from aggregating or dropping the returns. All parameters are 64-bit.

__device__ __forceinline__ u32 atom_g(u64 a, u32 v) {
    u32 r;
    asm volatile("atom.global.add.u32 %0, [%1], %2;" : "=r"(r) : "l"(a), "r"(v) : "memory");
    return r;
}
__device__ __forceinline__ u32 atom_s(u32 a, u32 v) {
    u32 r;
    asm volatile("atom.shared.add.u32 %0, [%1], %2;" : "=r"(r) : "r"(a), "r"(v) : "memory");
    return r;
}
// A use of v: the thread waits for it before the next instruction issues.
__device__ __forceinline__ void use_g(u64* p, u32 v) { asm volatile("st.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory"); }

// One thread. For each of `naddr` words (word k at base + k * spacing bytes): 16 dependent warm-up
// atomics, then `n` timed ones. out per word (5 words at k * 5): [c0, c1, t0, t1, smid]. `zero`
// (0 from the host) makes the address depend on the thread index, so ptxas does not wrap each
// atomic in its warp-uniform-address aggregation path (a vote and shuffles it added otherwise).
extern "C" __global__ void atom_chain_global(u64 base, u64 naddr, u64 spacing, u64 n, u64 zero, u64* out) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    u32 v = 1;
    for (u64 k = 0; k < naddr; k++) {
        const u64 a = base + k * spacing + (threadIdx.x & zero) * 4;
        for (int i = 0; i < 16; i++) v = atom_g(a, v);
        use_g(out + k * 5 + 4, v);
        const u64 t0 = gtimer();
        const u64 c0 = clk64();
        u64 m = n;
        while (m >= 8) {
#pragma unroll
            for (int j = 0; j < 8; j++) v = atom_g(a, v);
            m -= 8;
        }
        while (m > 0) { v = atom_g(a, v); m--; }
        use_g(out + k * 5 + 4, v);
        const u64 c1 = clk64();
        const u64 t1 = gtimer();
        out[k * 5 + 0] = c0; out[k * 5 + 1] = c1; out[k * 5 + 2] = t0; out[k * 5 + 3] = t1; out[k * 5 + 4] = smid();
    }
}

// One thread: 16 warm-up then `n` dependent atomics on one shared word. out: [c0, c1, t0, t1, v].
extern "C" __global__ void atom_chain_shared(u64 n, u64* out) {
    __shared__ u32 word;
    __shared__ u32 sink;
    if (threadIdx.x != 0) return;
    word = 1;
    const u32 a = saddr(&word);
    u32 v = 1;
    for (int i = 0; i < 16; i++) v = atom_s(a, v);
    asm volatile("st.shared.u32 [%0], %1;" :: "r"(saddr(&sink)), "r"(v) : "memory");
    const u64 t0 = gtimer();
    const u64 c0 = clk64();
    u64 m = n;
    while (m >= 8) {
#pragma unroll
        for (int j = 0; j < 8; j++) v = atom_s(a, v);
        m -= 8;
    }
    while (m > 0) { v = atom_s(a, v); m--; }
    asm volatile("st.shared.u32 [%0], %1;" :: "r"(saddr(&sink)), "r"(v) : "memory");
    const u64 c1 = clk64();
    const u64 t1 = gtimer();
    out[0] = c0; out[1] = c1; out[2] = t0; out[3] = t1; out[4] = v;
}

// Every thread: `n` rounds of 4 independent fetch-and-adds of 1 to one global word (mode 0) or to
// its own word base[global thread index] (mode 1). Timed by events on the host.
extern "C" __global__ void atom_tp_global(u64 base, u64 n, u64 mode, u64* sink) {
    const u64 gt = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 a = mode == 0 ? base : base + gt * 4;
    u32 acc = 0;
    for (u64 r = 0; r < n; r++) {
        const u32 x0 = atom_g(a, 1), x1 = atom_g(a, 1), x2 = atom_g(a, 1), x3 = atom_g(a, 1);
        acc ^= x0 ^ x1 ^ x2 ^ x3;
    }
    if (acc == 0x5eed5eedu) sink[0] = acc;
}

// One block: `rounds` rounds of 4 independent shared fetch-and-adds of 1 per thread, to one word
// (mode 0) or to the thread's own word (mode 1, conflict-free), between barriers and clock reads.
// out: [c0, c1, t0, t1, smid, sink].
extern "C" __global__ void atom_tp_shared(u64 rounds, u64 mode, u64* out) {
    __shared__ u32 words[1024];
    for (u32 i = threadIdx.x; i < 1024; i += blockDim.x) words[i] = 0;
    __syncthreads();
    const u32 a = saddr(&words[mode == 0 ? 0 : (threadIdx.x & 1023)]);
    u32 acc = 0;
    __syncthreads();
    const u64 c0 = clk64(), t0 = gtimer();
    __syncthreads();
    for (u64 r = 0; r < rounds; r++) {
        const u32 x0 = atom_s(a, 1), x1 = atom_s(a, 1), x2 = atom_s(a, 1), x3 = atom_s(a, 1);
        acc ^= x0 ^ x1 ^ x2 ^ x3;
    }
    __syncthreads();
    const u64 c1 = clk64(), t1 = gtimer();
    if (threadIdx.x == 0) { out[0] = c0; out[1] = c1; out[2] = t0; out[3] = t1; out[4] = smid(); }
    if (acc == 0x5eed5eedu) out[5] = acc;
}
