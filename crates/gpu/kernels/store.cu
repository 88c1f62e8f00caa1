// store.cu: the store path of seed 004. STG issue interval of one warp, SM egress bytes per cycle,
// the L1 write-through check (stores to L1-resident lines versus L1-hit loads), and fences
// (membar.cta / membar.gl / membar.sys) as N stores with versus without a fence after each.

__device__ __forceinline__ void stg32(u64 a, u32 v) { asm volatile("st.global.u32 [%0], %1;" :: "l"(a), "r"(v) : "memory"); }
__device__ __forceinline__ void stg128(u64 a, u32 v) {
    asm volatile("st.global.v4.u32 [%0], {%1, %1, %1, %1};" :: "l"(a), "r"(v) : "memory");
}
__device__ __forceinline__ u32 ldca128(u64 a) {
    u32 x, y, z, w;
    asm volatile("ld.global.ca.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(x), "=r"(y), "=r"(z), "=r"(w) : "l"(a));
    return x ^ y ^ z ^ w;
}

// One warp, `lanes` active lanes, n rounds of 16 unrolled 4-byte stores into one 128-byte line per
// store (lane i writes word i). out: [c0, c1, t0, t1] of lane 0.
extern "C" __global__ void store_issue(u64 buf, u64 n, u64 lanes, u64* out) {
    const u32 lane = threadIdx.x & 31;
    if (lane >= lanes) return;
    const u64 a = buf + lane * 4;
    __syncwarp((u32)((lanes >= 32) ? 0xffffffffu : ((1u << lanes) - 1)));
    u64 c0 = clk64(), t0 = gtimer();
    for (u64 r = 0; r < n; r++) {
#pragma unroll
        for (int k = 0; k < 16; k++) stg32(a + (u64)(k & 7) * 128, (u32)(r + k));
    }
    u64 c1 = clk64(), t1 = gtimer();
    if (lane == 0) { out[0] = c0; out[1] = c1; out[2] = t0; out[3] = t1; }
}

// One block (one SM): every thread stores (mode 0) or L1-loads (mode 1) 16 bytes per access over a
// `span`-byte region (a power of two), n rounds of 8 accesses. Thread 0 records clock64 and
// %globaltimer after a barrier before and after (stores are followed by membar.gl so their acks are
// included). out: [c0, c1, t0, t1, sink].
extern "C" __global__ void sm_traffic(u64 buf, u64 span, u64 n, u64 mode, u64* out) {
    const u64 tid = threadIdx.x;
    const u64 mask = span - 1;
    u32 acc = 0;
    // Warm the region into L1/L2 first.
    for (u64 o = tid * 16; o < span; o += (u64)blockDim.x * 16) acc ^= ldca128(buf + o);
    __syncthreads();
    u64 c0 = 0, t0 = 0;
    if (tid == 0) { c0 = clk64(); t0 = gtimer(); }
    __syncthreads();
    u64 off = tid * 16;
    const u64 step = (u64)blockDim.x * 16;
    if (mode == 0) {
        for (u64 r = 0; r < n; r++) {
#pragma unroll
            for (int k = 0; k < 8; k++) { stg128(buf + (off & mask), (u32)r); off += step; }
        }
        asm volatile("membar.gl;" ::: "memory");
    } else {
        for (u64 r = 0; r < n; r++) {
#pragma unroll
            for (int k = 0; k < 8; k++) { acc ^= ldca128(buf + (off & mask)); off += step; }
        }
    }
    __syncthreads();
    if (tid == 0) { out[0] = c0; out[1] = clk64(); out[2] = t0; out[3] = gtimer(); }
    if (acc == 0x9e3779b9u) out[4] = acc;
}

// One thread: n rounds of 8 stores, each followed by the fence of FENCE (0 none, 1 cta, 2 gl, 3 sys).
template <int FENCE>
__device__ void fence_impl(u64 buf, u64 n, u64* out) {
    u64 t0 = gtimer(), c0 = clk64();
    for (u64 r = 0; r < n; r++) {
#pragma unroll
        for (int k = 0; k < 8; k++) {
            stg32(buf + k * 128, (u32)r);
            if (FENCE == 1) asm volatile("membar.cta;" ::: "memory");
            if (FENCE == 2) asm volatile("membar.gl;" ::: "memory");
            if (FENCE == 3) asm volatile("membar.sys;" ::: "memory");
        }
    }
    u64 c1 = clk64(), t1 = gtimer();
    out[0] = t0; out[1] = t1; out[2] = c0; out[3] = c1;
}
extern "C" __global__ void fence_none(u64 buf, u64 n, u64* out) { fence_impl<0>(buf, n, out); }
extern "C" __global__ void fence_cta(u64 buf, u64 n, u64* out) { fence_impl<1>(buf, n, out); }
extern "C" __global__ void fence_gl(u64 buf, u64 n, u64* out) { fence_impl<2>(buf, n, out); }
extern "C" __global__ void fence_sys(u64 buf, u64 n, u64* out) { fence_impl<3>(buf, n, out); }

// Coalescing by timing (seed 000 footnote 1, without counters): every warp loads 4 bytes per lane at
// a stride of `stride` words, past L1 (ld.global.cg), over an L2-resident region, `iters` times.
extern "C" __global__ void coalesce_load(u64 buf, u64 stride, u64 span, u64 iters, u64* sink) {
    const u64 lane = threadIdx.x & 31;
    const u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const u64 req_bytes = 32 * stride * 4;
    const u64 m = span - 1;  // span is a power of two
    u64 base = (warp * req_bytes * 7) & m;
    u32 acc = 0;
    for (u64 r = 0; r < iters; r++) {
        u32 v;
        asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(buf + ((base + lane * stride * 4) & m)));
        acc ^= v;
        base = (base + req_bytes) & m;
    }
    if (acc == 0x9e3779b9u) sink[0] = acc;
}
