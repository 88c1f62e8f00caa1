// Kernels of the composition's ceilings (issue 22): an empty kernel (launch gap and issue rate), a
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
