// Kernels of the composition's ceilings (docs/MODEL.md): an empty kernel (launch gap and issue rate), a
// spin kernel that holds the device for a given time (%globaltimer) so the host can queue launches
// behind it, and a read kernel with exactly one dependent 16-byte load per thread per step, so its
// bytes in flight are threads x 16 (bandwidth by bytes in flight, DRAM or L2), and its 8-byte
// variant (threads x 8 in flight: the load width of fp16 attention's lanes).
extern "C" __global__ void empty_kernel() {}

extern "C" __global__ void spin_ns(u64 ns) {
    u64 t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}

// reads vectors of src[i & mask] for i < reads, grid-stride; mask = region vectors - 1 (a power of
// two) re-reads an L2-resident region, mask = ~0 streams.
extern "C" __global__ void read_curve_u32(const uint4* __restrict__ src, u64 reads, u64 mask,
                                          unsigned int* __restrict__ out) {
    u64 stride = (u64)gridDim.x * blockDim.x;
    unsigned int acc = 0;
#pragma unroll 1
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < reads; i += stride) {
        uint4 a = src[i & mask];
        acc += a.x ^ a.y ^ a.z ^ a.w;
    }
    if (acc == 0x9e3779b9u) out[0] = acc;  // keeps the loads; (almost) never stores
}

// The same with one 8-byte load per thread per step; reads and mask count 8-byte vectors.
extern "C" __global__ void read_curve_u2(const uint2* __restrict__ src, u64 reads, u64 mask,
                                         unsigned int* __restrict__ out) {
    u64 stride = (u64)gridDim.x * blockDim.x;
    unsigned int acc = 0;
#pragma unroll 1
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < reads; i += stride) {
        uint2 a = src[i & mask];
        acc += a.x ^ a.y;
    }
    if (acc == 0x9e3779b9u) out[0] = acc;  // keeps the loads; (almost) never stores
}

// The dependent step of a few-block kernel (docs/MODEL.md): each block of 128 threads in 8 half-warps
// walks `steps` steps over its own rows (block k from row k (16 steps + 16) on) over row-major 64-element rows (16 lanes x one vector per row); each step a
// half-warp loads two rows' vectors (rows 16 s + hw and 16 s + hw + 8: two independent loads per
// thread), turns them into floats, and either reduces their dot products over its 16 lanes with
// xor shuffles and stores the two sums to shared memory (reduce != 0), or only accumulates them
// (reduce == 0). Nothing of step s + 1 is issued before step s has consumed its loads (no
// unrolling), so the time per step is the latency of one such step, not a bandwidth. Two widths:
// float4 rows (16-byte vectors) and rows of halves (8-byte uint2 vectors).
__device__ __forceinline__ float4 step_vec(const uint4* p, u64 i) { return u2f4(p[i]); }
__device__ __forceinline__ float4 step_vec(const uint2* p, u64 i) {
    uint2 w = p[i];
    return make_float4(h2f((half_t)(w.x & 0xffffu)), h2f((half_t)(w.x >> 16)), h2f((half_t)(w.y & 0xffffu)),
                       h2f((half_t)(w.y >> 16)));
}
template <typename V>
__device__ __forceinline__ void step_chain(const V* __restrict__ rows, int steps, int reduce,
                                           float* __restrict__ out) {
    __shared__ float sums[16];
    int tid = threadIdx.x, lane16 = tid & 15, hw = tid >> 4;
    const float4 q = make_float4(0.5f, -0.25f, 0.125f, 1.0f);
    rows += (u64)blockIdx.x * (u64)(16 * steps + 16) * 16;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    if (tid < 16) sums[tid] = 0.f;
    __syncthreads();
#pragma unroll 1
    for (int s = 0; s < steps; s++) {
        u64 r = (u64)s * 16 + hw;
        float4 a = step_vec(rows, r * 16 + lane16);
        float4 b = step_vec(rows, (r + 8) * 16 + lane16);
        if (reduce) {
            float d0 = q.x * a.x + q.y * a.y + q.z * a.z + q.w * a.w;
            float d1 = q.x * b.x + q.y * b.y + q.z * b.z + q.w * b.w;
#pragma unroll
            for (int o = 8; o > 0; o >>= 1) {
                d0 += __shfl_xor_sync(0xffffffffu, d0, o);
                d1 += __shfl_xor_sync(0xffffffffu, d1, o);
            }
            if (lane16 == 0) {
                sums[hw] = d0;
                sums[hw + 8] = d1;
            }
        } else {
            acc.x += a.x + b.x; acc.y += a.y + b.y; acc.z += a.z + b.z; acc.w += a.w + b.w;
        }
    }
    __syncthreads();
    float keep = acc.x + acc.y + acc.z + acc.w + (lane16 == 0 ? sums[hw] : 0.f);
    if (keep == 1234.5f) out[tid] = keep;  // keeps the loads; (almost) never stores
}
extern "C" __global__ void step_chain_u4(const uint4* __restrict__ rows, int steps, int reduce,
                                         float* __restrict__ out) {
    step_chain<uint4>(rows, steps, reduce, out);
}
extern "C" __global__ void step_chain_u2(const uint2* __restrict__ rows, int steps, int reduce,
                                         float* __restrict__ out) {
    step_chain<uint2>(rows, steps, reduce, out);
}
