// Row-wise kernels of the bottleneck model (seed 003): layer norm and softmax, fp32 and fp16. One
// warp per row; 16-byte vectors; each lane unpacks up to CV vectors of its row once into float
// registers (CV = 8 for fp32, 4 for fp16: rows up to 1,024 columns stay in registers), so the row is
// read from memory once and written once (2 n s bytes, the seed's minimum) and each element is
// converted and exponentiated once. Longer rows re-read the rest (from L1/L2). gamma and beta are
// read as float4. Requires cols % V == 0.

// V floats of a parameter vector (fp32 in memory) for vector index v.
template <int V> __device__ __forceinline__ void load_params(const float* __restrict__ p, int v, float* out) {
#pragma unroll
    for (int j = 0; j < V / 4; j++) {
        float4 t = ((const float4*)p)[v * (V / 4) + j];
        out[4 * j] = t.x; out[4 * j + 1] = t.y; out[4 * j + 2] = t.z; out[4 * j + 3] = t.w;
    }
}

template <int V, int CV, typename T>
__device__ __forceinline__ void layernorm(const T* __restrict__ x, T* __restrict__ y, const float* __restrict__ gamma,
                                          const float* __restrict__ beta, int rows, int cols, float eps) {
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    int nvec = cols / V;
    const uint4* xr = (const uint4*)(x + (u64)row * cols);
    uint4* yr = (uint4*)(y + (u64)row * cols);
    float c[CV][V], f[V], g[V], b[V];
#pragma unroll
    for (int k = 0; k < CV; k++) {
        int v = lane + 32 * k;
        if (v < nvec) load_vec<V>(xr[v], c[k]);
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < CV; k++)
        if (lane + 32 * k < nvec)
#pragma unroll
            for (int j = 0; j < V; j++) s += c[k][j];
    for (int v = lane + 32 * CV; v < nvec; v += 32) {
        load_vec<V>(xr[v], f);
        for (int j = 0; j < V; j++) s += f[j];
    }
    float mean = warp_sum(s) / cols;
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < CV; k++)
        if (lane + 32 * k < nvec)
#pragma unroll
            for (int j = 0; j < V; j++) { float d = c[k][j] - mean; ss += d * d; }
    for (int v = lane + 32 * CV; v < nvec; v += 32) {
        load_vec<V>(xr[v], f);
        for (int j = 0; j < V; j++) { float d = f[j] - mean; ss += d * d; }
    }
    float rstd = rsqrtf(warp_sum(ss) / cols + eps);
#pragma unroll
    for (int k = 0; k < CV; k++) {
        int v = lane + 32 * k;
        if (v < nvec) {
            load_params<V>(gamma, v, g);
            load_params<V>(beta, v, b);
#pragma unroll
            for (int j = 0; j < V; j++) f[j] = (c[k][j] - mean) * rstd * g[j] + b[j];
            yr[v] = store_vec<V>(f);
        }
    }
    for (int v = lane + 32 * CV; v < nvec; v += 32) {
        load_vec<V>(xr[v], f);
        load_params<V>(gamma, v, g);
        load_params<V>(beta, v, b);
        for (int j = 0; j < V; j++) f[j] = (f[j] - mean) * rstd * g[j] + b[j];
        yr[v] = store_vec<V>(f);
    }
}

template <int V, int CV, typename T>
__device__ __forceinline__ void softmax(const T* __restrict__ x, T* __restrict__ y, int rows, int cols) {
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    int nvec = cols / V;
    const uint4* xr = (const uint4*)(x + (u64)row * cols);
    uint4* yr = (uint4*)(y + (u64)row * cols);
    float c[CV][V], f[V];
#pragma unroll
    for (int k = 0; k < CV; k++) {
        int v = lane + 32 * k;
        if (v < nvec) load_vec<V>(xr[v], c[k]);
    }
    float m = -3.402823466e38f;
#pragma unroll
    for (int k = 0; k < CV; k++)
        if (lane + 32 * k < nvec)
#pragma unroll
            for (int j = 0; j < V; j++) m = fmaxf(m, c[k][j]);
    for (int v = lane + 32 * CV; v < nvec; v += 32) {
        load_vec<V>(xr[v], f);
        for (int j = 0; j < V; j++) m = fmaxf(m, f[j]);
    }
    m = warp_max(m);
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < CV; k++)
        if (lane + 32 * k < nvec)
#pragma unroll
            for (int j = 0; j < V; j++) { c[k][j] = __expf(c[k][j] - m); s += c[k][j]; }
    for (int v = lane + 32 * CV; v < nvec; v += 32) {
        load_vec<V>(xr[v], f);
        for (int j = 0; j < V; j++) s += __expf(f[j] - m);
    }
    float inv = 1.0f / warp_sum(s);
#pragma unroll
    for (int k = 0; k < CV; k++) {
        int v = lane + 32 * k;
        if (v < nvec) {
#pragma unroll
            for (int j = 0; j < V; j++) f[j] = c[k][j] * inv;
            yr[v] = store_vec<V>(f);
        }
    }
    for (int v = lane + 32 * CV; v < nvec; v += 32) {
        load_vec<V>(xr[v], f);
        for (int j = 0; j < V; j++) f[j] = __expf(f[j] - m) * inv;
        yr[v] = store_vec<V>(f);
    }
}

extern "C" __global__ void layernorm_f32(const float* x, float* y, const float* g, const float* b, int rows, int cols, float eps) {
    layernorm<4, 8, float>(x, y, g, b, rows, cols, eps);
}
extern "C" __global__ void layernorm_f16(const half_t* x, half_t* y, const float* g, const float* b, int rows, int cols, float eps) {
    layernorm<8, 4, half_t>(x, y, g, b, rows, cols, eps);
}
extern "C" __global__ void softmax_f32(const float* x, float* y, int rows, int cols) { softmax<4, 8, float>(x, y, rows, cols); }
extern "C" __global__ void softmax_f16(const half_t* x, half_t* y, int rows, int cols) { softmax<8, 4, half_t>(x, y, rows, cols); }


// ---- v2: several rows per warp, exact register tiles. Each warp issues the loads of RPW rows
// (CV 16-byte vectors per lane per row, kept packed) before using any, so RPW rows' bytes are in
// flight per warp; layer norm takes sum and sum of squares in one pass (two interleaved warp
// reductions). Instantiated for the shapes the harness uses (cols = 32 * CV * V exactly);
// the generic kernels above serve every other shape.
template <int V, int CV, int RPW, typename T>
__device__ __forceinline__ void layernorm_v2(const T* __restrict__ x, T* __restrict__ y, const float* __restrict__ gamma,
                                             const float* __restrict__ beta, int rows, float eps) {
    const int cols = 32 * CV * V;
    int lane = threadIdx.x & 31;
    int row0 = (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * RPW;
    uint4 c[RPW][CV];
#pragma unroll
    for (int r = 0; r < RPW; r++)
        if (row0 + r < rows)
#pragma unroll
            for (int k = 0; k < CV; k++) c[r][k] = ((const uint4*)(x + (u64)(row0 + r) * cols))[lane + 32 * k];
    float f[V], g[V], b[V];
#pragma unroll
    for (int r = 0; r < RPW; r++) {
        if (row0 + r >= rows) break;
        float s = 0.f, ss = 0.f;
#pragma unroll
        for (int k = 0; k < CV; k++) {
            load_vec<V>(c[r][k], f);
#pragma unroll
            for (int j = 0; j < V; j++) { s += f[j]; ss += f[j] * f[j]; }
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            s += __shfl_xor_sync(0xffffffffu, s, o);
            ss += __shfl_xor_sync(0xffffffffu, ss, o);
        }
        float mean = s / cols;
        float rstd = rsqrtf(fmaxf(ss / cols - mean * mean, 0.f) + eps);
        uint4* yr = (uint4*)(y + (u64)(row0 + r) * cols);
#pragma unroll
        for (int k = 0; k < CV; k++) {
            int v = lane + 32 * k;
            load_vec<V>(c[r][k], f);
            load_params<V>(gamma, v, g);
            load_params<V>(beta, v, b);
#pragma unroll
            for (int j = 0; j < V; j++) f[j] = (f[j] - mean) * rstd * g[j] + b[j];
            yr[v] = store_vec<V>(f);
        }
    }
}

template <int V, int CV, int RPW, typename T>
__device__ __forceinline__ void softmax_v2(const T* __restrict__ x, T* __restrict__ y, int rows) {
    const int cols = 32 * CV * V;
    int lane = threadIdx.x & 31;
    int row0 = (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * RPW;
    uint4 c[RPW][CV];
#pragma unroll
    for (int r = 0; r < RPW; r++)
        if (row0 + r < rows)
#pragma unroll
            for (int k = 0; k < CV; k++) c[r][k] = ((const uint4*)(x + (u64)(row0 + r) * cols))[lane + 32 * k];
    float f[V];
#pragma unroll
    for (int r = 0; r < RPW; r++) {
        if (row0 + r >= rows) break;
        float m = -3.402823466e38f;
#pragma unroll
        for (int k = 0; k < CV; k++) {
            load_vec<V>(c[r][k], f);
#pragma unroll
            for (int j = 0; j < V; j++) m = fmaxf(m, f[j]);
        }
        m = warp_max(m);
        float s = 0.f;
#pragma unroll
        for (int k = 0; k < CV; k++) {
            load_vec<V>(c[r][k], f);
#pragma unroll
            for (int j = 0; j < V; j++) s += __expf(f[j] - m);
        }
        float inv = 1.0f / warp_sum(s);
        uint4* yr = (uint4*)(y + (u64)(row0 + r) * cols);
#pragma unroll
        for (int k = 0; k < CV; k++) {
            load_vec<V>(c[r][k], f);
#pragma unroll
            for (int j = 0; j < V; j++) f[j] = __expf(f[j] - m) * inv;
            yr[lane + 32 * k] = store_vec<V>(f);
        }
    }
}

#define ROWS_V2(SFX, T, V, CV, RPW)                                                                              \
    extern "C" __global__ void __launch_bounds__(256) layernorm_v2_##SFX##_c##CV##_r##RPW(                      \
        const T* x, T* y, const float* g, const float* b, int rows, float eps) {                                 \
        layernorm_v2<V, CV, RPW, T>(x, y, g, b, rows, eps);                                                      \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(256) softmax_v2_##SFX##_c##CV##_r##RPW(const T* x, T* y, int rows) { \
        softmax_v2<V, CV, RPW, T>(x, y, rows);                                                                   \
    }
ROWS_V2(f32, float, 4, 6, 2)
ROWS_V2(f32, float, 4, 8, 2)
ROWS_V2(f16, half_t, 8, 3, 4)
ROWS_V2(f16, half_t, 8, 4, 4)

// ---- v3: a persistent grid of warps striding over rows, each warp prefetching its next row into
// registers before normalising the current one, so loads stay in flight while a row is reduced and
// written (one-row-per-warp blocks run in lock-step waves whose load and compute phases do not
// overlap). Exact register tiles: cols = 32 * CV * V.
template <int V, int CV>
__device__ __forceinline__ void load_row(uint4* r, const uint4* src, int lane) {
#pragma unroll
    for (int k = 0; k < CV; k++) r[k] = src[lane + 32 * k];
}

template <int V, int CV, typename T>
__device__ __forceinline__ void layernorm_v3(const T* __restrict__ x, T* __restrict__ y, const float* __restrict__ gamma,
                                             const float* __restrict__ beta, int rows, float eps) {
    const int cols = 32 * CV * V;
    int lane = threadIdx.x & 31;
    int nwarps = gridDim.x * (blockDim.x >> 5);
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    uint4 cur[CV], nxt[CV];
    if (row < rows) load_row<V, CV>(cur, (const uint4*)(x + (u64)row * cols), lane);
    float f[V], g[V], b[V];
    for (; row < rows; row += nwarps) {
        int nrow = row + nwarps;
        if (nrow < rows) load_row<V, CV>(nxt, (const uint4*)(x + (u64)nrow * cols), lane);
        float s = 0.f, ss = 0.f;
#pragma unroll
        for (int k = 0; k < CV; k++) {
            load_vec<V>(cur[k], f);
#pragma unroll
            for (int j = 0; j < V; j++) { s += f[j]; ss += f[j] * f[j]; }
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            s += __shfl_xor_sync(0xffffffffu, s, o);
            ss += __shfl_xor_sync(0xffffffffu, ss, o);
        }
        float mean = s / cols;
        float rstd = rsqrtf(fmaxf(ss / cols - mean * mean, 0.f) + eps);
        uint4* yr = (uint4*)(y + (u64)row * cols);
#pragma unroll
        for (int k = 0; k < CV; k++) {
            int v = lane + 32 * k;
            load_vec<V>(cur[k], f);
            load_params<V>(gamma, v, g);
            load_params<V>(beta, v, b);
#pragma unroll
            for (int j = 0; j < V; j++) f[j] = (f[j] - mean) * rstd * g[j] + b[j];
            yr[v] = store_vec<V>(f);
        }
#pragma unroll
        for (int k = 0; k < CV; k++) cur[k] = nxt[k];
    }
}

template <int V, int CV, typename T>
__device__ __forceinline__ void softmax_v3(const T* __restrict__ x, T* __restrict__ y, int rows) {
    const int cols = 32 * CV * V;
    int lane = threadIdx.x & 31;
    int nwarps = gridDim.x * (blockDim.x >> 5);
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    uint4 cur[CV], nxt[CV];
    if (row < rows) load_row<V, CV>(cur, (const uint4*)(x + (u64)row * cols), lane);
    float f[V];
    for (; row < rows; row += nwarps) {
        int nrow = row + nwarps;
        if (nrow < rows) load_row<V, CV>(nxt, (const uint4*)(x + (u64)nrow * cols), lane);
        float m = -3.402823466e38f;
#pragma unroll
        for (int k = 0; k < CV; k++) {
            load_vec<V>(cur[k], f);
#pragma unroll
            for (int j = 0; j < V; j++) m = fmaxf(m, f[j]);
        }
        m = warp_max(m);
        float s = 0.f;
#pragma unroll
        for (int k = 0; k < CV; k++) {
            load_vec<V>(cur[k], f);
#pragma unroll
            for (int j = 0; j < V; j++) s += __expf(f[j] - m);
        }
        float inv = 1.0f / warp_sum(s);
        uint4* yr = (uint4*)(y + (u64)row * cols);
#pragma unroll
        for (int k = 0; k < CV; k++) {
            load_vec<V>(cur[k], f);
#pragma unroll
            for (int j = 0; j < V; j++) f[j] = __expf(f[j] - m) * inv;
            yr[lane + 32 * k] = store_vec<V>(f);
        }
#pragma unroll
        for (int k = 0; k < CV; k++) cur[k] = nxt[k];
    }
}

#define ROWS_V3(SFX, T, V, CV)                                                                                   \
    extern "C" __global__ void __launch_bounds__(256) layernorm_v3_##SFX##_c##CV(                               \
        const T* x, T* y, const float* g, const float* b, int rows, float eps) {                                 \
        layernorm_v3<V, CV, T>(x, y, g, b, rows, eps);                                                           \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(256) softmax_v3_##SFX##_c##CV(const T* x, T* y, int rows) {    \
        softmax_v3<V, CV, T>(x, y, rows);                                                                        \
    }
ROWS_V3(f32, float, 4, 6)
ROWS_V3(f32, float, 4, 8)
ROWS_V3(f16, half_t, 8, 3)
ROWS_V3(f16, half_t, 8, 4)

// ---- v4: v3's persistent warps and next-row register prefetch, plus a deeper prefetch into L2
// that costs no registers: on starting a row, a warp asks L2 for the row it will take PD rows later
// (prefetch.global.L2, one 128-byte line per lane), so about PD rows per warp are in flight from
// DRAM while it reduces and writes (the occupancy of v1-v3, 24-32 warps of one or two 1.5-4 KiB
// rows, leaves too few bytes in flight per SM, worst for fp16 layer norm). Row loads bypass L1
// (ld.global.nc.L1::no_allocate), results are written with streaming stores (st.global.cs), fp16
// results are packed two per instruction (cvt.rn.f16x2.f32), layer-norm statistics take one pass
// (sum and sum of squares, two interleaved shuffle reductions). Exact tiles: cols = 32 * CV * V.
// v5 is v4 without the register prefetch (RP = false: fewer registers, more warps per SM) and with
// the L2 prefetch one row deeper (PD = 4 instead of 3).
__device__ __forceinline__ uint4 ld_stream(const uint4* p) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}
__device__ __forceinline__ void st_stream(uint4* p, uint4 v) {
    asm volatile("st.global.cs.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}
// Lane `lane` asks L2 for the 128-byte line `lane` of a row of `bytes` (at most 4,096) bytes.
__device__ __forceinline__ void prefetch_row_l2(const void* row, int bytes, int lane) {
    if (lane * 128 < bytes) asm volatile("prefetch.global.L2 [%0];" ::"l"((const char*)row + lane * 128));
}
// load_params through a volatile load: re-read from L1 for every row, never hoisted out of the row
// loop into 2 x CV x V registers (v5 keeps its registers for warps).
template <int V> __device__ __forceinline__ void load_params_l1(const float* __restrict__ p, int v, float* out) {
#pragma unroll
    for (int j = 0; j < V / 4; j++) {
        const float* a = p + 4 * (v * (V / 4) + j);
        asm volatile("ld.global.nc.v4.f32 {%0,%1,%2,%3}, [%4];"
                     : "=f"(out[4 * j]), "=f"(out[4 * j + 1]), "=f"(out[4 * j + 2]), "=f"(out[4 * j + 3])
                     : "l"(a));
    }
}
template <int V> __device__ __forceinline__ uint4 store_vec2(const float* f);
template <> __device__ __forceinline__ uint4 store_vec2<4>(const float* f) { return store_vec<4>(f); }
template <> __device__ __forceinline__ uint4 store_vec2<8>(const float* f) {
#if __CUDA_ARCH__ >= 800
    unsigned int w[4];
#pragma unroll
    for (int i = 0; i < 4; i++) asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(w[i]) : "f"(f[2 * i + 1]), "f"(f[2 * i]));
    return make_uint4(w[0], w[1], w[2], w[3]);
#else
    return pack8(f);
#endif
}
template <int CV>
__device__ __forceinline__ void load_row4(uint4* r, const uint4* src, int lane) {
#pragma unroll
    for (int k = 0; k < CV; k++) r[k] = ld_stream(src + lane + 32 * k);
}

template <int V, int CV, typename T, bool RP, int PD>
__device__ __forceinline__ void layernorm_v4(const T* __restrict__ x, T* __restrict__ y, const float* __restrict__ gamma,
                                             const float* __restrict__ beta, int rows, float eps) {
    const int cols = 32 * CV * V;
    const int row_bytes = cols * (int)sizeof(T);
    int lane = threadIdx.x & 31;
    int nwarps = gridDim.x * (blockDim.x >> 5);
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;
#pragma unroll
    for (int d = RP ? 2 : 1; d <= PD; d++)
        if (row + d * nwarps < rows) prefetch_row_l2(x + (u64)(row + d * nwarps) * cols, row_bytes, lane);
    uint4 cur[CV], nxt[CV];
    if (RP) load_row4<CV>(cur, (const uint4*)(x + (u64)row * cols), lane);
    float f[V], g[V], b[V];
    for (; row < rows; row += nwarps) {
        int nrow = row + nwarps;
        if (!RP) load_row4<CV>(cur, (const uint4*)(x + (u64)row * cols), lane);
        else if (nrow < rows) load_row4<CV>(nxt, (const uint4*)(x + (u64)nrow * cols), lane);
        int prow = row + (RP ? PD + 1 : PD) * nwarps;
        if (prow < rows) prefetch_row_l2(x + (u64)prow * cols, row_bytes, lane);
        float s = 0.f, ss = 0.f;
#pragma unroll
        for (int k = 0; k < CV; k++) {
            load_vec<V>(cur[k], f);
#pragma unroll
            for (int j = 0; j < V; j++) { s += f[j]; ss = fmaf(f[j], f[j], ss); }
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            s += __shfl_xor_sync(0xffffffffu, s, o);
            ss += __shfl_xor_sync(0xffffffffu, ss, o);
        }
        float mean = s * (1.0f / cols);
        float rstd = rsqrtf(fmaxf(ss * (1.0f / cols) - mean * mean, 0.f) + eps);
        uint4* yr = (uint4*)(y + (u64)row * cols);
#pragma unroll
        for (int k = 0; k < CV; k++) {
            int v = lane + 32 * k;
            load_vec<V>(cur[k], f);
            if (RP) {
                load_params<V>(gamma, v, g);
                load_params<V>(beta, v, b);
            } else {
                load_params_l1<V>(gamma, v, g);
                load_params_l1<V>(beta, v, b);
            }
#pragma unroll
            for (int j = 0; j < V; j++) f[j] = fmaf((f[j] - mean) * rstd, g[j], b[j]);
            st_stream(yr + v, store_vec2<V>(f));
        }
        if (RP)
#pragma unroll
            for (int k = 0; k < CV; k++) cur[k] = nxt[k];
    }
}

template <int V, int CV, typename T, bool RP, int PD>
__device__ __forceinline__ void softmax_v4(const T* __restrict__ x, T* __restrict__ y, int rows) {
    const int cols = 32 * CV * V;
    const int row_bytes = cols * (int)sizeof(T);
    int lane = threadIdx.x & 31;
    int nwarps = gridDim.x * (blockDim.x >> 5);
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;
#pragma unroll
    for (int d = RP ? 2 : 1; d <= PD; d++)
        if (row + d * nwarps < rows) prefetch_row_l2(x + (u64)(row + d * nwarps) * cols, row_bytes, lane);
    uint4 cur[CV], nxt[CV];
    if (RP) load_row4<CV>(cur, (const uint4*)(x + (u64)row * cols), lane);
    float f[V];
    for (; row < rows; row += nwarps) {
        int nrow = row + nwarps;
        if (!RP) load_row4<CV>(cur, (const uint4*)(x + (u64)row * cols), lane);
        else if (nrow < rows) load_row4<CV>(nxt, (const uint4*)(x + (u64)nrow * cols), lane);
        int prow = row + (RP ? PD + 1 : PD) * nwarps;
        if (prow < rows) prefetch_row_l2(x + (u64)prow * cols, row_bytes, lane);
        float m = -3.402823466e38f;
#pragma unroll
        for (int k = 0; k < CV; k++) {
            load_vec<V>(cur[k], f);
#pragma unroll
            for (int j = 0; j < V; j++) m = fmaxf(m, f[j]);
        }
        m = warp_max(m);
        float s = 0.f;
#pragma unroll
        for (int k = 0; k < CV; k++) {
            load_vec<V>(cur[k], f);
#pragma unroll
            for (int j = 0; j < V; j++) s += __expf(f[j] - m);
        }
        float inv = 1.0f / warp_sum(s);
        uint4* yr = (uint4*)(y + (u64)row * cols);
#pragma unroll
        for (int k = 0; k < CV; k++) {
            load_vec<V>(cur[k], f);
#pragma unroll
            for (int j = 0; j < V; j++) f[j] = __expf(f[j] - m) * inv;
            st_stream(yr + lane + 32 * k, store_vec2<V>(f));
        }
        if (RP)
#pragma unroll
            for (int k = 0; k < CV; k++) cur[k] = nxt[k];
    }
}

#define ROWS_V45(SFX, T, V, CV, LB)                                                                              \
    extern "C" __global__ void __launch_bounds__(256) layernorm_v4_##SFX##_c##CV(                               \
        const T* x, T* y, const float* g, const float* b, int rows, float eps) {                                 \
        layernorm_v4<V, CV, T, true, 3>(x, y, g, b, rows, eps);                                                  \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(256) softmax_v4_##SFX##_c##CV(const T* x, T* y, int rows) {    \
        softmax_v4<V, CV, T, true, 3>(x, y, rows);                                                               \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(256, LB) layernorm_v5_##SFX##_c##CV(                           \
        const T* x, T* y, const float* g, const float* b, int rows, float eps) {                                 \
        layernorm_v4<V, CV, T, false, 4>(x, y, g, b, rows, eps);                                                 \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(256, LB) softmax_v5_##SFX##_c##CV(const T* x, T* y, int rows) { \
        softmax_v4<V, CV, T, false, 4>(x, y, rows);                                                              \
    }
ROWS_V45(f32, float, 4, 6, 4)
ROWS_V45(f32, float, 4, 8, 3)
ROWS_V45(f16, half_t, 8, 3, 4)
ROWS_V45(f16, half_t, 8, 4, 3)

// ---- v6 (layer norm only): v1's one warp per row and one wave of blocks, with the parameters
// staged once per block in shared memory by loads issued right after the row's own loads, so their
// latency overlaps the row's instead of following the reductions (v1 loads gamma and beta after the
// statistics: an L2 round trip on every warp's critical path, which matters when all rows run in
// one wave, as at 4,096 rows). Row loads bypass L1, streaming stores, packed fp16 stores, one-pass
// statistics. Exact tiles: cols = 32 * CV * V; 256-thread blocks of 8 rows.
template <int V, int CV, typename T>
__device__ __forceinline__ void layernorm_v6(const T* __restrict__ x, T* __restrict__ y, const float* __restrict__ gamma,
                                             const float* __restrict__ beta, int rows, float eps) {
    const int cols = 32 * CV * V;
    __shared__ float4 sg[cols / 4], sb[cols / 4];
    int lane = threadIdx.x & 31;
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    bool live = row < rows;
    uint4 c[CV];
    if (live) load_row4<CV>(c, (const uint4*)(x + (u64)row * cols), lane);
    for (int i = threadIdx.x; i < cols / 4; i += blockDim.x) {
        sg[i] = ((const float4*)gamma)[i];
        sb[i] = ((const float4*)beta)[i];
    }
    float f[V];
    float s = 0.f, ss = 0.f;
    if (live) {
#pragma unroll
        for (int k = 0; k < CV; k++) {
            load_vec<V>(c[k], f);
#pragma unroll
            for (int j = 0; j < V; j++) { s += f[j]; ss = fmaf(f[j], f[j], ss); }
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        s += __shfl_xor_sync(0xffffffffu, s, o);
        ss += __shfl_xor_sync(0xffffffffu, ss, o);
    }
    __syncthreads();
    if (!live) return;
    float mean = s * (1.0f / cols);
    float rstd = rsqrtf(fmaxf(ss * (1.0f / cols) - mean * mean, 0.f) + eps);
    uint4* yr = (uint4*)(y + (u64)row * cols);
#pragma unroll
    for (int k = 0; k < CV; k++) {
        int v = lane + 32 * k;
        load_vec<V>(c[k], f);
#pragma unroll
        for (int q = 0; q < V / 4; q++) {
            float4 g = sg[v * (V / 4) + q], b = sb[v * (V / 4) + q];
            f[4 * q] = fmaf((f[4 * q] - mean) * rstd, g.x, b.x);
            f[4 * q + 1] = fmaf((f[4 * q + 1] - mean) * rstd, g.y, b.y);
            f[4 * q + 2] = fmaf((f[4 * q + 2] - mean) * rstd, g.z, b.z);
            f[4 * q + 3] = fmaf((f[4 * q + 3] - mean) * rstd, g.w, b.w);
        }
        st_stream(yr + v, store_vec2<V>(f));
    }
}
#define ROWS_V6(SFX, T, V, CV)                                                                                   \
    extern "C" __global__ void __launch_bounds__(256) layernorm_v6_##SFX##_c##CV(                               \
        const T* x, T* y, const float* g, const float* b, int rows, float eps) {                                 \
        layernorm_v6<V, CV, T>(x, y, g, b, rows, eps);                                                           \
    }
ROWS_V6(f32, float, 4, 6)
ROWS_V6(f32, float, 4, 8)
ROWS_V6(f16, half_t, 8, 3)
ROWS_V6(f16, half_t, 8, 4)
