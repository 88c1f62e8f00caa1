// Decode attention over a static KV cache (seed 003's decode step), fp32 and fp16 (docs/MODEL.md), head dim 64. One block
// of 128 threads per (sequence, head); a half-warp per cached token with one float4 per lane (a
// token's 64 keys or values are one coalesced 256-byte row). Scores are kept in shared memory
// (T floats). Traffic: keys and values read once (2 B h T d s bytes, the seed's count).
//   q:   row b at q + b * q_stride, head h at offset h * 64
//   k,v: [B][H][t_max][64], tokens 0..T-1 used
//   out: [B][H * 64]
// A lane's 4 elements of a 64-element row: one float4 (fp32) or one 8-byte uint2 of halves (fp16).
__device__ __forceinline__ float4 ld4(const float* p, u64 i) { return ((const float4*)p)[i]; }
__device__ __forceinline__ float4 ld4(const half_t* p, u64 i) {
    uint2 w = ((const uint2*)p)[i];
    return make_float4(h2f((half_t)(w.x & 0xffffu)), h2f((half_t)(w.x >> 16)), h2f((half_t)(w.y & 0xffffu)),
                       h2f((half_t)(w.y >> 16)));
}
__device__ __forceinline__ void st4(float* p, u64 i, float4 v) { ((float4*)p)[i] = v; }
__device__ __forceinline__ void st4(half_t* p, u64 i, float4 v) {
    uint2 w;
    w.x = (unsigned int)f2h(v.x) | ((unsigned int)f2h(v.y) << 16);
    w.y = (unsigned int)f2h(v.z) | ((unsigned int)f2h(v.w) << 16);
    ((uint2*)p)[i] = w;
}

template <typename T>
__device__ __forceinline__ void decode_attention(const T* __restrict__ q, int q_stride, const T* __restrict__ k,
                                                 const T* __restrict__ v, T* __restrict__ out, int heads,
                                                 int tokens, int t_max, float scale) {
    extern __shared__ float sh[];           // tokens scores, then 8 x 16 float4 partial outputs
    float* score = sh;
    float4* part = (float4*)(sh + ((tokens + 3) & ~3));
    __shared__ float red[4];
    int bh = blockIdx.x;
    int b = bh / heads, h = bh - b * heads;
    int tid = threadIdx.x, lane16 = tid & 15, hw = tid >> 4;  // 8 half-warps
    const float4 qv = ld4(q + (u64)b * q_stride + h * 64, lane16);
    const T* kb = k + (u64)bh * t_max * 64;
    const T* vb = v + (u64)bh * t_max * 64;
    // Scores: two tokens per half-warp per step for two loads in flight.
    for (int base = 0; base < tokens; base += 16) {  // uniform trip count: shuffles stay converged
        int t = base + hw;
        float4 z = make_float4(0.f, 0.f, 0.f, 0.f);
        float4 k0 = t < tokens ? ld4(kb, (u64)t * 16 + lane16) : z;
        float4 k1 = t + 8 < tokens ? ld4(kb, (u64)(t + 8) * 16 + lane16) : z;
        float d0 = qv.x * k0.x + qv.y * k0.y + qv.z * k0.z + qv.w * k0.w;
        float d1 = qv.x * k1.x + qv.y * k1.y + qv.z * k1.z + qv.w * k1.w;
#pragma unroll
        for (int o = 8; o > 0; o >>= 1) {
            d0 += __shfl_xor_sync(0xffffffffu, d0, o);
            d1 += __shfl_xor_sync(0xffffffffu, d1, o);
        }
        if (lane16 == 0) {
            if (t < tokens) score[t] = d0 * scale;
            if (t + 8 < tokens) score[t + 8] = d1 * scale;
        }
    }
    __syncthreads();
    float m = -3.402823466e38f;
    for (int t = tid; t < tokens; t += blockDim.x) m = fmaxf(m, score[t]);
    m = warp_max(m);
    if ((tid & 31) == 0) red[tid >> 5] = m;
    __syncthreads();
    m = fmaxf(fmaxf(red[0], red[1]), fmaxf(red[2], red[3]));
    __syncthreads();
    float s = 0.f;
    for (int t = tid; t < tokens; t += blockDim.x) {
        float p = __expf(score[t] - m);
        score[t] = p;
        s += p;
    }
    s = warp_sum(s);
    if ((tid & 31) == 0) red[tid >> 5] = s;
    __syncthreads();
    float inv = 1.0f / (red[0] + red[1] + red[2] + red[3]);
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int base = 0; base < tokens; base += 16) {
        int t = base + hw;
        if (t < tokens) {
            float4 v0 = ld4(vb, (u64)t * 16 + lane16);
            float p0 = score[t];
            float4 v1 = make_float4(0.f, 0.f, 0.f, 0.f);
            float p1 = 0.f;
            if (t + 8 < tokens) { v1 = ld4(vb, (u64)(t + 8) * 16 + lane16); p1 = score[t + 8]; }
            acc.x += p0 * v0.x + p1 * v1.x; acc.y += p0 * v0.y + p1 * v1.y;
            acc.z += p0 * v0.z + p1 * v1.z; acc.w += p0 * v0.w + p1 * v1.w;
        }
    }
    part[hw * 16 + lane16] = acc;
    __syncthreads();
    if (tid < 16) {
        float4 o = part[tid];
        for (int w = 1; w < 8; w++) {
            float4 p = part[w * 16 + tid];
            o.x += p.x; o.y += p.y; o.z += p.z; o.w += p.w;
        }
        o.x *= inv; o.y *= inv; o.z *= inv; o.w *= inv;
        st4(out + (u64)b * heads * 64 + h * 64, tid, o);
    }
}

extern "C" __global__ void decode_attention_f32(const float* __restrict__ q, int q_stride, const float* __restrict__ k,
                                                const float* __restrict__ v, float* __restrict__ out, int heads,
                                                int tokens, int t_max, float scale) {
    decode_attention<float>(q, q_stride, k, v, out, heads, tokens, t_max, scale);
}
extern "C" __global__ void decode_attention_f16(const half_t* __restrict__ q, int q_stride,
                                                const half_t* __restrict__ k, const half_t* __restrict__ v,
                                                half_t* __restrict__ out, int heads, int tokens, int t_max,
                                                float scale) {
    decode_attention<half_t>(q, q_stride, k, v, out, heads, tokens, t_max, scale);
}
