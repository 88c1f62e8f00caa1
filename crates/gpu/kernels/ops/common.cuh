// Shared helpers of the bottleneck-model kernels (seed 003), prepended to each ops/*.cu before
// NVRTC compiles it. No CUDA headers: fp16 is carried as unsigned short and converted with inline
// PTX (cvt.f32.f16 / cvt.rn.f16.f32).
typedef unsigned short half_t;
typedef unsigned long long u64;

__device__ __forceinline__ float h2f(half_t h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ half_t f2h(float f) {
    half_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
// 8 halves <-> uint4 (16 bytes).
__device__ __forceinline__ void unpack8(uint4 v, float* f) {
    const unsigned int w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        f[2 * i] = h2f((half_t)(w[i] & 0xffffu));
        f[2 * i + 1] = h2f((half_t)(w[i] >> 16));
    }
}
__device__ __forceinline__ uint4 pack8(const float* f) {
    unsigned int w[4];
#pragma unroll
    for (int i = 0; i < 4; i++) w[i] = (unsigned int)f2h(f[2 * i]) | ((unsigned int)f2h(f[2 * i + 1]) << 16);
    return make_uint4(w[0], w[1], w[2], w[3]);
}
__device__ __forceinline__ float4 u2f4(uint4 v) {
    return make_float4(__uint_as_float(v.x), __uint_as_float(v.y), __uint_as_float(v.z), __uint_as_float(v.w));
}
__device__ __forceinline__ uint4 f42u(float4 v) {
    return make_uint4(__float_as_uint(v.x), __float_as_uint(v.y), __float_as_uint(v.z), __float_as_uint(v.w));
}
// A 16-byte vector as 4 (fp32) or 8 (fp16) floats; V = elements per vector.
template <int V> __device__ __forceinline__ void load_vec(uint4 v, float* f);
template <> __device__ __forceinline__ void load_vec<4>(uint4 v, float* f) {
    f[0] = __uint_as_float(v.x); f[1] = __uint_as_float(v.y); f[2] = __uint_as_float(v.z); f[3] = __uint_as_float(v.w);
}
template <> __device__ __forceinline__ void load_vec<8>(uint4 v, float* f) { unpack8(v, f); }
template <int V> __device__ __forceinline__ uint4 store_vec(const float* f);
template <> __device__ __forceinline__ uint4 store_vec<4>(const float* f) {
    return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]), __float_as_uint(f[3]));
}
template <> __device__ __forceinline__ uint4 store_vec<8>(const float* f) { return pack8(f); }

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}
__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}
