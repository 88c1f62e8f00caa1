// levels.cu: bandwidth by level and by parallelism (docs/SM_MEMORIES.md). l1_read: every block re-reads an
// L1-resident footprint (ld.global.ca.v4, eight fixed 16-byte words per thread per round) with
// clock64 between barriers; l2_write: every thread stores 16-byte words over an L2-resident
// footprint, pass after pass; line_read: every warp reads the same 128-byte line past L1 (one L2
// slice serves every request); par_read<U>: grid-stride 16-byte reads past L1 with U = 1, 2, 4 loads
// in flight per thread, the launch shape choosing the warps per SM, so the bytes in flight per SM are
// warps x 32 x 16 x U. Every block records its %smid so the host can check the blocks' spread.
// `zero` is a kernel parameter the host sets to 0: addresses that add (round & zero) cannot be
// proven equal across rounds, so ptxas cannot hoist a repeated load out of its loop (it did).
// All parameters are 64-bit.

__device__ __forceinline__ u32 ldca128(u64 a) {
    u32 x, y, z, w;
    asm volatile("ld.global.ca.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(x), "=r"(y), "=r"(z), "=r"(w) : "l"(a));
    return x ^ y ^ z ^ w;
}
__device__ __forceinline__ u32 ldcg128(u64 a) {
    u32 x, y, z, w;
    asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(x), "=r"(y), "=r"(z), "=r"(w) : "l"(a));
    return x ^ y ^ z ^ w;
}
__device__ __forceinline__ u32 ldcg32(u64 a) { u32 v; asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(a)); return v; }
__device__ __forceinline__ void st128(u64 a, u32 v) {
    asm volatile("st.global.v4.u32 [%0], {%1, %1, %1, %1};" :: "l"(a), "r"(v) : "memory");
}

// span: bytes of the footprint (a power of two, at least 16 x blockDim). A warm-up pass brings it
// into L1; then `rounds` rounds of 8 loads per thread. out per block (6 words at blockIdx * 6):
// [c0, c1, t0, t1, smid, sink].
extern "C" __global__ void l1_read(u64 buf, u64 span, u64 rounds, u64 zero, u64* out) {
    const u64 mask = span - 1;
    u32 acc = 0;
    for (u64 o = threadIdx.x * 16ull; o < span; o += blockDim.x * 16ull) acc ^= ldca128(buf + o);
    u64 a[8];
#pragma unroll
    for (int k = 0; k < 8; k++) a[k] = buf + ((threadIdx.x * 16ull + k * 16ull * blockDim.x) & mask);
    __syncthreads();
    const u64 c0 = clk64(), t0 = gtimer();
    __syncthreads();
    u32 acc1 = 0;
    for (u64 r = 0; r < rounds; r++) {
#pragma unroll
        for (int k = 0; k < 8; k += 2) { acc ^= ldca128(a[k] + (r & zero)); acc1 ^= ldca128(a[k + 1] + (r & zero)); }
    }
    __syncthreads();
    const u64 c1 = clk64(), t1 = gtimer();
    u64* o = out + blockIdx.x * 6;
    if (threadIdx.x == 0) { o[0] = c0; o[1] = c1; o[2] = t0; o[3] = t1; o[4] = smid(); }
    if ((acc ^ acc1) == 0x5eed5eedu) o[5] = acc;
}

// `passes` passes of grid-stride 16-byte stores over `bytes` (a multiple of 16), four in flight.
extern "C" __global__ void l2_write(u64 buf, u64 bytes, u64 passes) {
    const u64 n16 = bytes / 16;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    const u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    for (u64 p = 0; p < passes; p++) {
        u64 i = t;
        for (; i + 3 * stride < n16; i += 4 * stride) {
            st128(buf + 16 * i, (u32)p);
            st128(buf + 16 * (i + stride), (u32)p);
            st128(buf + 16 * (i + 2 * stride), (u32)p);
            st128(buf + 16 * (i + 3 * stride), (u32)p);
        }
        for (; i < n16; i += stride) st128(buf + 16 * i, (u32)p);
    }
}

// Every warp: `n` rounds of 8 loads of one 128-byte line (lane l reads its word l), past L1.
extern "C" __global__ void line_read(u64 line, u64 n, u64 zero, u64* sink) {
    const u64 a = line + (threadIdx.x & 31) * 4;
    u32 acc = 0;
    for (u64 r = 0; r < n; r++) {
#pragma unroll
        for (int k = 0; k < 8; k++) acc ^= ldcg32(a + ((r * 8 + k) & zero));
    }
    if (acc == 0x5eed5eedu) sink[0] = acc;
}

// `passes` passes over `bytes` (below 64 GiB), grid-stride, U independent 16-byte loads in flight
// per thread (32-bit indices keep the address arithmetic to one register pair per load, so all U
// loads issue before the first is consumed). seen[blockIdx] = the block's %smid. Launch bounds
// (1024, 2): two blocks of 1024 threads fit an SM (at most 32 registers), so the 64-warp point
// really holds 64 warps.
template <int U> __device__ void par_read_impl(u64 buf, u64 bytes, u64 passes, u32* seen, u64* sink) {
    const u32 n16 = (u32)(bytes / 16);
    const u32 stride = gridDim.x * blockDim.x;
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0) seen[blockIdx.x] = smid();
    u32 acc = 0;
    for (u64 p = 0; p < passes; p++) {
        u32 i = t;
        for (; i + (U - 1) * stride < n16; i += U * stride) {
            u32 v[U];
#pragma unroll
            for (int k = 0; k < U; k++) v[k] = ldcg128(buf + 16ull * (i + k * stride));
#pragma unroll
            for (int k = 0; k < U; k++) acc ^= v[k];
        }
        for (; i < n16; i += stride) acc ^= ldcg128(buf + 16ull * i);
    }
    if (acc == 0x5eed5eedu) sink[0] = acc;
}

#define PAR(U)                                                                                          \
    extern "C" __global__ void __launch_bounds__(1024, 2)                                             \
        par_read_u##U(u64 buf, u64 bytes, u64 passes, u32* seen, u64* sink) {                       \
        par_read_impl<U>(buf, bytes, passes, seen, sink);                                               \
    }
PAR(1)
PAR(2)
PAR(4)
