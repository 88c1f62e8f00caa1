// Elementwise kernels of the bottleneck model (seed 003): the bandwidth-ceiling patterns
// (copy, read = sum, write = fill), add, mul, fused x*y+z and GELU in fp32 and fp16, and a
// deterministic pseudo-random initialiser. Each thread moves one 16-byte vector per operand
// (coalesced across the warp); n need not be a multiple of the vector width (a scalar tail).

// ---- ceilings: 32-bit words, 16-byte vectors ----
extern "C" __global__ void copy_u32(const uint4* __restrict__ src, uint4* __restrict__ dst, u64 nvec) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nvec) dst[i] = src[i];
}
extern "C" __global__ void fill_u32(uint4* __restrict__ dst, u64 nvec, unsigned int value) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nvec) dst[i] = make_uint4(value, value, value, value);
}
// Read: grid-stride, four independent 16-byte loads in flight per thread, one atomic per block.
extern "C" __global__ void sum_u32(const uint4* __restrict__ src, u64 nvec, unsigned int* __restrict__ out) {
    u64 stride = (u64)gridDim.x * blockDim.x;
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int acc = 0;
    for (; i + 3 * stride < nvec; i += 4 * stride) {
        uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        acc += a.x ^ b.y ^ c.z ^ d.w;
        acc += a.y + b.x + c.w + d.z;
        acc ^= a.z + b.w + c.x + d.y;
        acc += a.w ^ b.z ^ c.y ^ d.x;
    }
    for (; i < nvec; i += stride) {
        uint4 a = src[i];
        acc += a.x ^ a.y ^ a.z ^ a.w;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    __shared__ unsigned int s[32];
    if ((threadIdx.x & 31) == 0) s[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned int t = 0;
        for (int w = 0; w < (int)(blockDim.x >> 5); w++) t += s[w];
        atomicAdd(out, t);
    }
}

// ---- initialisation: uniform in [-scale, scale), never all zeros ----
__device__ __forceinline__ float hash_unit(u64 i, unsigned int seed) {
    u64 x = i * 0x9E3779B97F4A7C15ull + seed * 0xD1B54A32D192ED03ull + 1;
    x ^= x >> 31; x *= 0xBF58476D1CE4E5B9ull; x ^= x >> 29; x *= 0x94D049BB133111EBull; x ^= x >> 32;
    return (float)(x & 0xffffff) / 16777216.0f * 2.0f - 1.0f;
}
extern "C" __global__ void init_f32(float* __restrict__ p, u64 n, unsigned int seed, float scale) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        p[i] = scale * hash_unit(i, seed);
}
extern "C" __global__ void init_f16(half_t* __restrict__ p, u64 n, unsigned int seed, float scale) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        p[i] = f2h(scale * hash_unit(i, seed));
}

// ---- the operations ----
__device__ __forceinline__ float gelu_f(float x) {
    // GPT-2's tanh approximation, 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3), written
    // as x / (1 + exp(-2u)) (the same function): one exponential and one reciprocal, so that the
    // fp16 kernel stays memory-bound (tanhf's full-precision path made it arithmetic-bound).
    float u = 0.7978845608f * (x + 0.044715f * x * x * x);
    return __fdividef(x, 1.0f + __expf(-2.0f * u));
}

// OP: 0 add (a+b), 1 mul (a*b), 2 fma (a*b+c), 3 gelu (a). V elements per 16-byte vector.
template <int OP, int V, typename T>
__device__ __forceinline__ void ew(const T* __restrict__ a, const T* __restrict__ b, const T* __restrict__ c,
                                   T* __restrict__ o, u64 n) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 nvec = n / V;
    if (i < nvec) {
        float x[V], y[V], z[V], r[V];
        load_vec<V>(((const uint4*)a)[i], x);
        if (OP != 3) load_vec<V>(((const uint4*)b)[i], y);
        if (OP == 2) load_vec<V>(((const uint4*)c)[i], z);
#pragma unroll
        for (int k = 0; k < V; k++) {
            r[k] = OP == 0 ? x[k] + y[k] : OP == 1 ? x[k] * y[k] : OP == 2 ? fmaf(x[k], y[k], z[k]) : gelu_f(x[k]);
        }
        ((uint4*)o)[i] = store_vec<V>(r);
    }
    // Scalar tail: the first (n % V) threads of the grid.
    u64 t = nvec * V + i;
    if (i < n % V) {
        float x, y = 0.f, z = 0.f, r;
        if (V == 4) { x = ((const float*)a)[t]; if (OP != 3) y = ((const float*)b)[t]; if (OP == 2) z = ((const float*)c)[t]; }
        else { x = h2f(((const half_t*)a)[t]); if (OP != 3) y = h2f(((const half_t*)b)[t]); if (OP == 2) z = h2f(((const half_t*)c)[t]); }
        r = OP == 0 ? x + y : OP == 1 ? x * y : OP == 2 ? fmaf(x, y, z) : gelu_f(x);
        if (V == 4) ((float*)o)[t] = r; else ((half_t*)o)[t] = f2h(r);
    }
}

#define EW(NAME, OP)                                                                                       \
    extern "C" __global__ void NAME##_f32(const float* a, const float* b, const float* c, float* o, u64 n) { \
        ew<OP, 4, float>(a, b, c, o, n);                                                                   \
    }                                                                                                      \
    extern "C" __global__ void NAME##_f16(const half_t* a, const half_t* b, const half_t* c, half_t* o, u64 n) { \
        ew<OP, 8, half_t>(a, b, c, o, n);                                                                  \
    }
EW(add, 0)
EW(mul, 1)
EW(fma, 2)
EW(gelu, 3)
