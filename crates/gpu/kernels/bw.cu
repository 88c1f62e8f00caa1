// bw.cu: bandwidth kernels of the `bw` probe (seed 003's table shape): read, write and copy with
// 16-byte accesses, W = 1 or 2 adjacent 16-byte accesses per group (16 or 32 contiguous bytes per
// thread), U = 2, 4 or 8 groups in flight per thread, load hints (plain, .cs, .nc with
// L1::no_allocate, the same with an L2::256B prefetch size) and store hints (plain, .cs), over a
// grid-stride loop (grid sized to the SMs, or a one-pass grid) or block-contiguous chunks. The TMA
// (bulk copy) variant is in bw_tma.cu. Also the equality check of a copy, the random fill used
// before timing and matrix products (seed 003: never time on zeros) and the empty kernel of the
// `launch` probe.

// Load hints: 0 plain, 1 .cs (evict-first), 2 .nc.L1::no_allocate (read-only path, no L1 line),
// 3 as 2 with .L2::256B (the L2 fetches 256-byte blocks).
template <int LD> __device__ __forceinline__ uint4 ld16(const uint4* p) {
    uint4 v;
    if (LD == 1) asm volatile("ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    else if (LD == 2) asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    else if (LD == 3) asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    else v = *p;
    return v;
}
// Store hints: 0 plain, 1 .cs (evict-first).
template <int ST> __device__ __forceinline__ void st16(uint4* p, uint4 v) {
    if (ST == 1) asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
    else *p = v;
}

// Groups of W adjacent 16-byte words; U independent groups in flight per thread, grid-stride.
// Words past the last whole group (n16 % W) are handled by the first threads of block 0.
template <int U, int W, int LD> __device__ void read_impl(const uint4* __restrict__ a, u64 n16, u64* sink) {
    const u64 n = n16 / W;
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 s = (u64)gridDim.x * blockDim.x;
    u32 acc = 0;
    for (; i + (U - 1) * s < n; i += U * s) {
        uint4 v[U][W];
#pragma unroll
        for (int k = 0; k < U; k++)
#pragma unroll
            for (int w = 0; w < W; w++) v[k][w] = ld16<LD>(a + (i + k * s) * W + w);
#pragma unroll
        for (int k = 0; k < U; k++)
#pragma unroll
            for (int w = 0; w < W; w++) acc ^= v[k][w].x ^ v[k][w].y ^ v[k][w].z ^ v[k][w].w;
    }
    for (; i < n; i += s)
#pragma unroll
        for (int w = 0; w < W; w++) { uint4 v = ld16<LD>(a + i * W + w); acc ^= v.x ^ v.y ^ v.z ^ v.w; }
    if (W > 1 && blockIdx.x == 0 && threadIdx.x < n16 - n * W) {
        uint4 v = ld16<LD>(a + n * W + threadIdx.x); acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) sink[0] = acc;  // stored conditionally: the loads cannot be removed
}

template <int U, int W, int ST> __device__ void write_impl(uint4* __restrict__ a, u64 n16, u64 seed) {
    const u64 n = n16 / W;
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 s = (u64)gridDim.x * blockDim.x;
    uint4 v;
    v.x = (u32)seed; v.y = (u32)(seed >> 32); v.z = (u32)i; v.w = 0x12345678u;
    for (; i + (U - 1) * s < n; i += U * s) {
#pragma unroll
        for (int k = 0; k < U; k++)
#pragma unroll
            for (int w = 0; w < W; w++) st16<ST>(a + (i + k * s) * W + w, v);
    }
    for (; i < n; i += s)
#pragma unroll
        for (int w = 0; w < W; w++) st16<ST>(a + i * W + w, v);
    if (W > 1 && blockIdx.x == 0 && threadIdx.x < n16 - n * W) st16<ST>(a + n * W + threadIdx.x, v);
}

template <int U, int W, int LD, int ST> __device__ void copy_impl(const uint4* __restrict__ a, uint4* __restrict__ b, u64 n16) {
    const u64 n = n16 / W;
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 s = (u64)gridDim.x * blockDim.x;
    for (; i + (U - 1) * s < n; i += U * s) {
        uint4 v[U][W];
#pragma unroll
        for (int k = 0; k < U; k++)
#pragma unroll
            for (int w = 0; w < W; w++) v[k][w] = ld16<LD>(a + (i + k * s) * W + w);
#pragma unroll
        for (int k = 0; k < U; k++)
#pragma unroll
            for (int w = 0; w < W; w++) st16<ST>(b + (i + k * s) * W + w, v[k][w]);
    }
    for (; i < n; i += s)
#pragma unroll
        for (int w = 0; w < W; w++) st16<ST>(b + i * W + w, ld16<LD>(a + i * W + w));
    if (W > 1 && blockIdx.x == 0 && threadIdx.x < n16 - n * W) st16<ST>(b + n * W + threadIdx.x, ld16<LD>(a + n * W + threadIdx.x));
}

// Copy with each block moving a contiguous chunk of blockDim x U x 16 bytes per step (grid-stride
// over chunks): reads and writes of one block stay in long contiguous runs.
template <int U, int LD, int ST> __device__ void copy_blk_impl(const uint4* __restrict__ a, uint4* __restrict__ b, u64 n16) {
    const u64 chunk = (u64)blockDim.x * U;
    for (u64 base = (u64)blockIdx.x * chunk; base < n16; base += (u64)gridDim.x * chunk) {
        if (base + chunk <= n16) {
            uint4 v[U];
#pragma unroll
            for (int k = 0; k < U; k++) v[k] = ld16<LD>(a + base + k * blockDim.x + threadIdx.x);
#pragma unroll
            for (int k = 0; k < U; k++) st16<ST>(b + base + k * blockDim.x + threadIdx.x, v[k]);
        } else {
            for (u64 i = base + threadIdx.x; i < n16; i += blockDim.x) st16<ST>(b + i, ld16<LD>(a + i));
        }
    }
}

// The variants the `bw` probe tunes over (probes/bw.rs VARIANTS names them and their U, W):
// suffix: _u2/_u8 = U (default 4); cs = .cs loads and stores; stcs = .cs stores only; nc = .nc
// L1::no_allocate loads (+ .cs stores for copy); nc256 = nc with L2::256B; w32 = W = 2.
#define READ(name, U, W, LD) extern "C" __global__ void name(const uint4* a, u64 n16, u64* sink) { read_impl<U, W, LD>(a, n16, sink); }
#define WRITE(name, U, W, ST) extern "C" __global__ void name(uint4* a, u64 n16, u64 seed) { write_impl<U, W, ST>(a, n16, seed); }
#define COPY(name, U, W, LD, ST) extern "C" __global__ void name(const uint4* a, uint4* b, u64 n16) { copy_impl<U, W, LD, ST>(a, b, n16); }
READ(bw_read, 4, 1, 0)
READ(bw_read_u8, 8, 1, 0)
READ(bw_read_cs, 4, 1, 1)
READ(bw_read_u8cs, 8, 1, 1)
READ(bw_read_u2, 2, 1, 0)
READ(bw_read_u2cs, 2, 1, 1)
READ(bw_read_u2nc, 2, 1, 2)
READ(bw_read_u4nc, 4, 1, 2)
READ(bw_read_u2nc256, 2, 1, 3)
READ(bw_read_w32u2cs, 2, 2, 1)
READ(bw_read_w32u2nc, 2, 2, 2)
WRITE(bw_write, 4, 1, 0)
WRITE(bw_write_u8, 8, 1, 0)
WRITE(bw_write_cs, 4, 1, 1)
WRITE(bw_write_u8cs, 8, 1, 1)
WRITE(bw_write_u2, 2, 1, 0)
WRITE(bw_write_u2cs, 2, 1, 1)
WRITE(bw_write_w32u1cs, 1, 2, 1)
WRITE(bw_write_w32u2cs, 2, 2, 1)
WRITE(bw_write_w32u2, 2, 2, 0)
COPY(bw_copy, 4, 1, 0, 0)
COPY(bw_copy_u8, 8, 1, 0, 0)
COPY(bw_copy_cs, 4, 1, 1, 1)
COPY(bw_copy_u8cs, 8, 1, 1, 1)
COPY(bw_copy_u2, 2, 1, 0, 0)
COPY(bw_copy_u2cs, 2, 1, 1, 1)
COPY(bw_copy_stcs, 4, 1, 0, 1)
COPY(bw_copy_u2nc, 2, 1, 2, 1)
COPY(bw_copy_u4nc, 4, 1, 2, 1)
COPY(bw_copy_u2nc256, 2, 1, 3, 1)
COPY(bw_copy_u4nc256, 4, 1, 3, 1)
COPY(bw_copy_w32u1cs, 1, 2, 1, 1)
COPY(bw_copy_w32u2cs, 2, 2, 1, 1)
COPY(bw_copy_w32u1nc256, 1, 2, 3, 1)
COPY(bw_copy_w32u2nc, 2, 2, 2, 1)
extern "C" __global__ void bw_copy_blk4(const uint4* a, uint4* b, u64 n16) { copy_blk_impl<4, 0, 0>(a, b, n16); }
extern "C" __global__ void bw_copy_blk4cs(const uint4* a, uint4* b, u64 n16) { copy_blk_impl<4, 1, 1>(a, b, n16); }
extern "C" __global__ void bw_copy_blk4nc(const uint4* a, uint4* b, u64 n16) { copy_blk_impl<4, 2, 1>(a, b, n16); }

// Equality check of a copy: counts the 16-byte words where b differs from a.
extern "C" __global__ void bw_count_diff(const uint4* a, const uint4* b, u64 n16, u64* bad) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 s = (u64)gridDim.x * blockDim.x;
    u64 n = 0;
    for (; i < n16; i += s) {
        uint4 x = a[i], y = b[i];
        n += (x.x != y.x) | (x.y != y.y) | (x.z != y.z) | (x.w != y.w);
    }
    if (n) atomicAdd(bad, n);
}

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

// L2 bandwidth by footprint (l2bw probe): every thread of a full grid reads 16-byte words of a
// `bytes`-long footprint, grid-stride, four independent loads in flight per thread, `reps` times
// over. Each repetition starts the whole grid `rot` words further on (wrapping), so an SM reads
// other lines than in its last repetition and its L1 cannot serve the repeats: with `ca` = 0 the
// loads bypass L1 (ld.global.cg), with `ca` = 1 they go through it (ld.global.ca). The xor of what
// was read goes to sink only if it matches a magic value, so the loads cannot be removed.
__device__ __forceinline__ void ld_v2(const void* p, unsigned long long& a, unsigned long long& b, bool ca) {
    if (ca) asm volatile("ld.global.ca.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(p));
    else asm volatile("ld.global.cg.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(p));
}
__device__ __forceinline__ unsigned long long wrap16(unsigned long long w, unsigned long long n) { return w >= n ? w - n : w; }
// U loads of 16 bytes in flight per thread (l2_read: 4, l2_read8: 8, l2_read16: 16).
template <int U>
__device__ __forceinline__ void l2_read_u(const unsigned long long* buf, unsigned long long bytes, unsigned long long reps,
                                          unsigned long long* sink, unsigned long long ca) {
    const unsigned long long n16 = bytes / 16;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long rot = (4ull * blockDim.x * 8 + 16) % (n16 ? n16 : 1);
    const bool use_ca = ca != 0;
    unsigned long long acc = 0, off = 0;
#define AT(k) (buf + 2 * wrap16((k) + off, n16))
    for (unsigned long long r = 0; r < reps; r++) {
        unsigned long long i = t;
        for (; i + (U - 1) * stride < n16; i += U * stride) {
            unsigned long long a[U], b[U];
#pragma unroll
            for (int u = 0; u < U; u++) ld_v2(AT(i + u * stride), a[u], b[u], use_ca);
#pragma unroll
            for (int u = 0; u < U; u++) acc ^= a[u] ^ b[u];
        }
        for (; i < n16; i += stride) {
            unsigned long long a, b;
            ld_v2(AT(i), a, b, use_ca);
            acc ^= a ^ b;
        }
        off += rot;
        if (off >= n16) off -= n16;
    }
#undef AT
    if (acc == 0x5eed5eed5eed5eedull) sink[0] = acc;
}
extern "C" __global__ void l2_read(const unsigned long long* buf, unsigned long long bytes, unsigned long long reps,
                                   unsigned long long* sink, unsigned long long ca) {
    l2_read_u<4>(buf, bytes, reps, sink, ca);
}
extern "C" __global__ void l2_read8(const unsigned long long* buf, unsigned long long bytes, unsigned long long reps,
                                    unsigned long long* sink, unsigned long long ca) {
    l2_read_u<8>(buf, bytes, reps, sink, ca);
}
extern "C" __global__ void l2_read16(const unsigned long long* buf, unsigned long long bytes, unsigned long long reps,
                                     unsigned long long* sink, unsigned long long ca) {
    l2_read_u<16>(buf, bytes, reps, sink, ca);
}
// Short-lived blocks over contiguous chunks (docs/SM_MEMORIES.md): block b reads chunk b mod (bytes /
// chunk_bytes) of the footprint once, 16-byte ld.global.cg loads, 8 in flight per thread, and
// exits; a grid of chunks x passes blocks covers the footprint pass after pass, and the blocks
// resident at one time read different chunks. Every load bypasses L1, so each is an L2 access.
// 512 threads, four blocks per SM (launch bounds keep the registers under 32 per thread).
extern "C" __global__ void __launch_bounds__(512, 4) l2_read_chunks(const unsigned long long* buf,
                                                                   unsigned long long bytes,
                                                                   unsigned long long chunk_bytes,
                                                                   unsigned long long* sink) {
    const unsigned long long chunks = bytes / chunk_bytes;
    const unsigned per = (unsigned)(chunk_bytes / 16);
    const unsigned long long* base = buf + 2 * ((blockIdx.x % (chunks ? chunks : 1)) * per);
    const unsigned step = blockDim.x;
    unsigned long long acc = 0;
    unsigned j = threadIdx.x;
    for (; j + 7 * step < per; j += 8 * step) {
        unsigned long long a[8], b[8];
#pragma unroll
        for (int u = 0; u < 8; u++) ld_v2(base + 2 * (j + u * step), a[u], b[u], false);
#pragma unroll
        for (int u = 0; u < 8; u++) acc ^= a[u] ^ b[u];
    }
    for (; j < per; j += step) {
        unsigned long long a, b;
        ld_v2(base + 2 * j, a, b, false);
        acc ^= a ^ b;
    }
    if (acc == 0x5eed5eed5eed5eedull) sink[0] = acc;
}
