// smem_check.cu: a second opinion on memscope's `smem` and `atomics` shared-memory numbers
// (issue 25), written apart from crates/cuda/kernels/smem.cu. Built with nvcc on the device
// machine by notes/diagnostics/device/smem.sh:  nvcc -O3 -arch=sm_90 -o smem_check smem_check.cu
// Prints one JSON object:
//   chase_cycles: cycles per dependent shared load, a random single cycle over 2048 words stored
//                 as 32-bit shared-window addresses, 32-bit clock() over 8192 hops, median of 31
//   atomic_cycles: cycles per dependent atomicAdd on a shared word (value chained), median of 31
//   stride_cycles: for stride 1..64 words, clock64 cycles per warp load when all 32 warps of a
//                  1024-thread block load word lane * stride (volatile), 64 less 16 loads each
//                  (the difference cancels the barriers), median of 7
//   bw_bytes_per_cycle: one 1024-thread block reading float4 words of a 32 KiB array, bytes per
//                  clock64 cycle over 256 less 64 rounds, median of 7
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#define CK(x)                                                                                    \
    do {                                                                                         \
        cudaError_t e_ = (x);                                                                    \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));  \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

constexpr int kWords = 2048;
constexpr int kHops = 8192;

__global__ void chase(const unsigned* perm, unsigned* res) {
    __shared__ unsigned ring[kWords];
    unsigned base = (unsigned)__cvta_generic_to_shared(ring);
    for (int i = threadIdx.x; i < kWords; i += blockDim.x) ring[i] = base + 4u * perm[i];
    __syncthreads();
    if (threadIdx.x) return;
    unsigned a = base;
    for (int i = 0; i < kWords; i++) asm volatile("ld.volatile.shared.u32 %0, [%0];" : "+r"(a));
    unsigned t0 = clock();
#pragma unroll 32
    for (int i = 0; i < kHops; i++) asm volatile("ld.volatile.shared.u32 %0, [%0];" : "+r"(a));
    unsigned t1 = clock();  // may read before the last load lands: 1 hop in 8192
    res[0] = t1 - t0;
    res[1] = a;
}

__global__ void atomic_chain(unsigned* res) {
    __shared__ unsigned w;
    if (threadIdx.x) return;
    w = 3;
    unsigned v = 1;
    for (int i = 0; i < 64; i++) v = atomicAdd(&w, v);
    long long t0 = clock64();
#pragma unroll 16
    for (int i = 0; i < kHops; i++) v = atomicAdd(&w, v);
    volatile unsigned sink = v;  // waits for the last atomic
    long long t1 = clock64();
    res[0] = (unsigned)(t1 - t0);
    res[1] = sink;
}

template <int N> __global__ void strided(int stride, long long* cyc, unsigned* sink) {
    __shared__ unsigned arr[64 * 32];
    for (int i = threadIdx.x; i < 64 * 32; i += blockDim.x) arr[i] = i;
    __syncthreads();
    volatile unsigned* p = arr + (threadIdx.x & 31) * stride;
    unsigned acc = 0;
    __syncthreads();
    long long t0 = clock64();
#pragma unroll
    for (int i = 0; i < N; i++) acc += *p;
    __syncthreads();
    long long t1 = clock64();
    if (threadIdx.x == 0) *cyc = t1 - t0;
    if (acc == 12345u) *sink = acc;
}

__global__ void shared_bw(int reps, long long* cyc, float* sink) {
    __shared__ float4 arr[2048];  // 32 KiB
    for (int i = threadIdx.x; i < 2048; i += blockDim.x) arr[i] = make_float4(i, i, i, i);
    __syncthreads();
    float s = 0;
    __syncthreads();
    long long t0 = clock64();
    for (int r = 0; r < reps; r++) {
#pragma unroll
        for (int k = 0; k < 2; k++) {
            // the index moves every round, so no load can be hoisted; a warp reads 512 contiguous bytes
            float4 x = arr[(threadIdx.x + 1024 * k + 64 * r) & 2047];
            s += x.x + x.y + x.z + x.w;
        }
    }
    __syncthreads();
    long long t1 = clock64();
    if (threadIdx.x == 0) *cyc = t1 - t0;
    if (s == -1.0f) *sink = s;
}

template <class T> static T med(std::vector<T> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main() {
    std::vector<unsigned> order(kWords), perm(kWords);
    for (int i = 0; i < kWords; i++) order[i] = i;
    std::mt19937 rng(12345);
    std::shuffle(order.begin() + 1, order.end(), rng);
    for (int i = 0; i < kWords; i++) perm[order[i]] = order[(i + 1) % kWords];  // one cycle through all words
    unsigned *dperm, *dres, *dsink;
    long long* dcyc;
    float* dfs;
    CK(cudaMalloc(&dperm, kWords * 4));
    CK(cudaMalloc(&dres, 64));
    CK(cudaMalloc(&dsink, 64));
    CK(cudaMalloc(&dcyc, 64));
    CK(cudaMalloc(&dfs, 64));
    CK(cudaMemcpy(dperm, perm.data(), kWords * 4, cudaMemcpyHostToDevice));
    unsigned h[2];
    std::vector<double> ch, at;
    for (int r = 0; r < 31; r++) {
        chase<<<1, 32>>>(dperm, dres);
        CK(cudaMemcpy(h, dres, 8, cudaMemcpyDeviceToHost));
        ch.push_back((double)h[0] / kHops);
        atomic_chain<<<1, 32>>>(dres);
        CK(cudaMemcpy(h, dres, 8, cudaMemcpyDeviceToHost));
        at.push_back((double)h[0] / kHops);
    }
    printf("{\"chase_cycles\": %.3f, \"atomic_cycles\": %.3f, \"stride_cycles\": [", med(ch), med(at));
    for (int s = 1; s <= 64; s++) {
        std::vector<double> v;
        for (int r = 0; r < 7; r++) {
            long long c1, c2;
            strided<16><<<1, 1024>>>(s, dcyc, dsink);
            CK(cudaMemcpy(&c1, dcyc, 8, cudaMemcpyDeviceToHost));
            strided<64><<<1, 1024>>>(s, dcyc, dsink);
            CK(cudaMemcpy(&c2, dcyc, 8, cudaMemcpyDeviceToHost));
            v.push_back((double)(c2 - c1) / (32.0 * 48.0));  // 32 warps x 48 loads
        }
        printf("%s%.3f", s > 1 ? ", " : "", med(v));
    }
    std::vector<double> bw;
    for (int r = 0; r < 7; r++) {
        long long c1, c2;
        shared_bw<<<1, 1024>>>(64, dcyc, dfs);
        CK(cudaMemcpy(&c1, dcyc, 8, cudaMemcpyDeviceToHost));
        shared_bw<<<1, 1024>>>(256, dcyc, dfs);
        CK(cudaMemcpy(&c2, dcyc, 8, cudaMemcpyDeviceToHost));
        bw.push_back(1024.0 * 2 * 16 * 192 / (double)(c2 - c1));
    }
    printf("], \"bw_bytes_per_cycle\": %.3f}\n", med(bw));
    CK(cudaDeviceSynchronize());
    return 0;
}
