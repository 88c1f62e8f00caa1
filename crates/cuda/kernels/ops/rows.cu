// Row-wise kernels of the bottleneck model (seed 003): layer norm and softmax, fp32 and fp16. One
// warp per row; 16-byte vectors; each lane keeps up to CACHED vectors of its row in registers, so
// the row is read from memory once and written once (2 n s bytes, the seed's minimum). Rows longer
// than 32 * CACHED vectors re-read the rest (from L1/L2). Requires cols % V == 0.
#define CACHED 8

template <int V, typename T>
__device__ __forceinline__ void layernorm(const T* __restrict__ x, T* __restrict__ y, const float* __restrict__ gamma,
                                          const float* __restrict__ beta, int rows, int cols, float eps) {
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    int nvec = cols / V;
    const uint4* xr = (const uint4*)(x + (u64)row * cols);
    uint4* yr = (uint4*)(y + (u64)row * cols);
    uint4 cache[CACHED];
    float s = 0.f, ss = 0.f, f[V];
#pragma unroll
    for (int k = 0; k < CACHED; k++) {
        int v = lane + 32 * k;
        if (v < nvec) {
            cache[k] = xr[v];
            load_vec<V>(cache[k], f);
#pragma unroll
            for (int j = 0; j < V; j++) { s += f[j]; ss += f[j] * f[j]; }
        }
    }
    for (int v = lane + 32 * CACHED; v < nvec; v += 32) {
        load_vec<V>(xr[v], f);
        for (int j = 0; j < V; j++) { s += f[j]; ss += f[j] * f[j]; }
    }
    s = warp_sum(s);
    ss = warp_sum(ss);
    float mean = s / cols;
    float rstd = rsqrtf(fmaxf(ss / cols - mean * mean, 0.f) + eps);
#pragma unroll
    for (int k = 0; k < CACHED; k++) {
        int v = lane + 32 * k;
        if (v < nvec) {
            load_vec<V>(cache[k], f);
#pragma unroll
            for (int j = 0; j < V; j++) f[j] = (f[j] - mean) * rstd * gamma[v * V + j] + beta[v * V + j];
            yr[v] = store_vec<V>(f);
        }
    }
    for (int v = lane + 32 * CACHED; v < nvec; v += 32) {
        load_vec<V>(xr[v], f);
        for (int j = 0; j < V; j++) f[j] = (f[j] - mean) * rstd * gamma[v * V + j] + beta[v * V + j];
        yr[v] = store_vec<V>(f);
    }
}

template <int V, typename T>
__device__ __forceinline__ void softmax(const T* __restrict__ x, T* __restrict__ y, int rows, int cols) {
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    int nvec = cols / V;
    const uint4* xr = (const uint4*)(x + (u64)row * cols);
    uint4* yr = (uint4*)(y + (u64)row * cols);
    uint4 cache[CACHED];
    float m = -3.402823466e38f, f[V];
#pragma unroll
    for (int k = 0; k < CACHED; k++) {
        int v = lane + 32 * k;
        if (v < nvec) {
            cache[k] = xr[v];
            load_vec<V>(cache[k], f);
#pragma unroll
            for (int j = 0; j < V; j++) m = fmaxf(m, f[j]);
        }
    }
    for (int v = lane + 32 * CACHED; v < nvec; v += 32) {
        load_vec<V>(xr[v], f);
        for (int j = 0; j < V; j++) m = fmaxf(m, f[j]);
    }
    m = warp_max(m);
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < CACHED; k++) {
        int v = lane + 32 * k;
        if (v < nvec) {
            load_vec<V>(cache[k], f);
#pragma unroll
            for (int j = 0; j < V; j++) s += __expf(f[j] - m);
        }
    }
    for (int v = lane + 32 * CACHED; v < nvec; v += 32) {
        load_vec<V>(xr[v], f);
        for (int j = 0; j < V; j++) s += __expf(f[j] - m);
    }
    float inv = 1.0f / warp_sum(s);
#pragma unroll
    for (int k = 0; k < CACHED; k++) {
        int v = lane + 32 * k;
        if (v < nvec) {
            load_vec<V>(cache[k], f);
#pragma unroll
            for (int j = 0; j < V; j++) f[j] = __expf(f[j] - m) * inv;
            yr[v] = store_vec<V>(f);
        }
    }
    for (int v = lane + 32 * CACHED; v < nvec; v += 32) {
        load_vec<V>(xr[v], f);
        for (int j = 0; j < V; j++) f[j] = __expf(f[j] - m) * inv;
        yr[v] = store_vec<V>(f);
    }
}

extern "C" __global__ void layernorm_f32(const float* x, float* y, const float* g, const float* b, int rows, int cols, float eps) {
    layernorm<4, float>(x, y, g, b, rows, cols, eps);
}
extern "C" __global__ void layernorm_f16(const half_t* x, half_t* y, const float* g, const float* b, int rows, int cols, float eps) {
    layernorm<8, half_t>(x, y, g, b, rows, cols, eps);
}
extern "C" __global__ void softmax_f32(const float* x, float* y, int rows, int cols) { softmax<4, float>(x, y, rows, cols); }
extern "C" __global__ void softmax_f16(const half_t* x, half_t* y, int rows, int cols) { softmax<8, half_t>(x, y, rows, cols); }
