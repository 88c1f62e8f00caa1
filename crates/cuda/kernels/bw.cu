// bw.cu: bandwidth kernels of the `bw` probe (seed 003's table shape): read, write and copy with
// 16-byte accesses, 2, 4 or 8 independent accesses in flight per thread (optionally .cs hints),
// a grid-stride loop over a grid sized to the SMs or a one-pass grid. Also the random fill used before timing and matrix products (seed 003:
// never time on zeros) and the empty kernel of the `launch` probe.
typedef unsigned long long u64;
typedef unsigned int u32;

// Loads and stores with an optional streaming hint (.cs: evict-first, data used once).
template <bool CS> __device__ __forceinline__ uint4 ld16(const uint4* p) {
    uint4 v;
    if (CS) asm volatile("ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    else v = *p;
    return v;
}
template <bool CS> __device__ __forceinline__ void st16(uint4* p, uint4 v) {
    if (CS) asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
    else *p = v;
}

// U independent 16-byte accesses in flight per thread, grid-stride.
template <int U, bool CS> __device__ void read_impl(const uint4* __restrict__ a, u64 n16, u64* sink) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 s = (u64)gridDim.x * blockDim.x;
    u32 acc = 0;
    for (; i + (U - 1) * s < n16; i += U * s) {
        uint4 v[U];
#pragma unroll
        for (int k = 0; k < U; k++) v[k] = ld16<CS>(a + i + k * s);
#pragma unroll
        for (int k = 0; k < U; k++) acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
    }
    for (; i < n16; i += s) { uint4 v = ld16<CS>(a + i); acc ^= v.x ^ v.y ^ v.z ^ v.w; }
    if (acc == 0x9e3779b9u) sink[0] = acc;  // stored conditionally: the loads cannot be removed
}

template <int U, bool CS> __device__ void write_impl(uint4* __restrict__ a, u64 n16, u64 seed) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 s = (u64)gridDim.x * blockDim.x;
    uint4 v;
    v.x = (u32)seed; v.y = (u32)(seed >> 32); v.z = (u32)i; v.w = 0x12345678u;
    for (; i + (U - 1) * s < n16; i += U * s) {
#pragma unroll
        for (int k = 0; k < U; k++) st16<CS>(a + i + k * s, v);
    }
    for (; i < n16; i += s) st16<CS>(a + i, v);
}

template <int U, bool LCS, bool SCS> __device__ void copy_impl(const uint4* __restrict__ a, uint4* __restrict__ b, u64 n16) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 s = (u64)gridDim.x * blockDim.x;
    for (; i + (U - 1) * s < n16; i += U * s) {
        uint4 v[U];
#pragma unroll
        for (int k = 0; k < U; k++) v[k] = ld16<LCS>(a + i + k * s);
#pragma unroll
        for (int k = 0; k < U; k++) st16<SCS>(b + i + k * s, v[k]);
    }
    for (; i < n16; i += s) st16<SCS>(b + i, ld16<LCS>(a + i));
}

// Copy with each block moving a contiguous chunk of blockDim x U x 16 bytes per step (grid-stride
// over chunks): reads and writes of one block stay in long contiguous runs.
template <int U, bool CS> __device__ void copy_blk_impl(const uint4* __restrict__ a, uint4* __restrict__ b, u64 n16) {
    const u64 chunk = (u64)blockDim.x * U;
    for (u64 base = (u64)blockIdx.x * chunk; base < n16; base += (u64)gridDim.x * chunk) {
        if (base + chunk <= n16) {
            uint4 v[U];
#pragma unroll
            for (int k = 0; k < U; k++) v[k] = ld16<CS>(a + base + k * blockDim.x + threadIdx.x);
#pragma unroll
            for (int k = 0; k < U; k++) st16<CS>(b + base + k * blockDim.x + threadIdx.x, v[k]);
        } else {
            for (u64 i = base + threadIdx.x; i < n16; i += blockDim.x) st16<CS>(b + i, ld16<CS>(a + i));
        }
    }
}
extern "C" __global__ void bw_copy_blk4(const uint4* a, uint4* b, u64 n16) { copy_blk_impl<4, false>(a, b, n16); }
extern "C" __global__ void bw_copy_blk4cs(const uint4* a, uint4* b, u64 n16) { copy_blk_impl<4, true>(a, b, n16); }

// Variants the `bw` probe tunes over: 2, 4 or 8 accesses in flight, .cs hints on loads and/or stores.
extern "C" __global__ void bw_read(const uint4* a, u64 n16, u64* sink) { read_impl<4, false>(a, n16, sink); }
extern "C" __global__ void bw_read_u8(const uint4* a, u64 n16, u64* sink) { read_impl<8, false>(a, n16, sink); }
extern "C" __global__ void bw_read_cs(const uint4* a, u64 n16, u64* sink) { read_impl<4, true>(a, n16, sink); }
extern "C" __global__ void bw_read_u8cs(const uint4* a, u64 n16, u64* sink) { read_impl<8, true>(a, n16, sink); }
extern "C" __global__ void bw_read_u2(const uint4* a, u64 n16, u64* sink) { read_impl<2, false>(a, n16, sink); }
extern "C" __global__ void bw_read_u2cs(const uint4* a, u64 n16, u64* sink) { read_impl<2, true>(a, n16, sink); }
extern "C" __global__ void bw_read_stcs(const uint4* a, u64 n16, u64* sink) { read_impl<4, false>(a, n16, sink); }
extern "C" __global__ void bw_write(uint4* a, u64 n16, u64 seed) { write_impl<4, false>(a, n16, seed); }
extern "C" __global__ void bw_write_u8(uint4* a, u64 n16, u64 seed) { write_impl<8, false>(a, n16, seed); }
extern "C" __global__ void bw_write_cs(uint4* a, u64 n16, u64 seed) { write_impl<4, true>(a, n16, seed); }
extern "C" __global__ void bw_write_u8cs(uint4* a, u64 n16, u64 seed) { write_impl<8, true>(a, n16, seed); }
extern "C" __global__ void bw_write_u2(uint4* a, u64 n16, u64 seed) { write_impl<2, false>(a, n16, seed); }
extern "C" __global__ void bw_write_u2cs(uint4* a, u64 n16, u64 seed) { write_impl<2, true>(a, n16, seed); }
extern "C" __global__ void bw_write_stcs(uint4* a, u64 n16, u64 seed) { write_impl<4, true>(a, n16, seed); }
extern "C" __global__ void bw_copy(const uint4* a, uint4* b, u64 n16) { copy_impl<4, false, false>(a, b, n16); }
extern "C" __global__ void bw_copy_u8(const uint4* a, uint4* b, u64 n16) { copy_impl<8, false, false>(a, b, n16); }
extern "C" __global__ void bw_copy_cs(const uint4* a, uint4* b, u64 n16) { copy_impl<4, true, true>(a, b, n16); }
extern "C" __global__ void bw_copy_u8cs(const uint4* a, uint4* b, u64 n16) { copy_impl<8, true, true>(a, b, n16); }
extern "C" __global__ void bw_copy_u2(const uint4* a, uint4* b, u64 n16) { copy_impl<2, false, false>(a, b, n16); }
extern "C" __global__ void bw_copy_u2cs(const uint4* a, uint4* b, u64 n16) { copy_impl<2, true, true>(a, b, n16); }
extern "C" __global__ void bw_copy_stcs(const uint4* a, uint4* b, u64 n16) { copy_impl<4, false, true>(a, b, n16); }

// Random 32-bit words: (hash(i, seed) & mask) | bits. With mask/bits chosen by the host this gives
// random fp32, fp16 pairs or bf16 pairs in +-[1, 2) (never zero, never NaN).
extern "C" __global__ void fill_bits(u32* p, u64 n, u64 mask, u64 bits, u64 seed) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 s = (u64)gridDim.x * blockDim.x;
    for (; i < n; i += s) {
        u64 h = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
        h ^= h >> 31; h *= 0xBF58476D1CE4E5B9ull; h ^= h >> 29; h *= 0x94D049BB133111EBull; h ^= h >> 32;
        p[i] = ((u32)h & (u32)mask) | (u32)bits;
    }
}

// The launch floor's kernel: does nothing.
extern "C" __global__ void empty_kernel() {}
