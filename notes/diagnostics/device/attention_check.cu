// Issue 22 second opinion: the decode-attention kernels of crates/cuda/kernels/ops/attention.cu
// (the same source, included, built with nvcc instead of NVRTC) timed alone with events, to find
// why fp16 attention with few blocks runs slower than fp32 (2026-12-02). Cases: the step's shape
// (B sequences x 12 heads, T = 1,024, t_max = T), one block only, and the cache row stride padded
// off a power of two (t_max = T + 8). Each launch reads a different one of 64 caches (>= 192 MB,
// over 3x the L2), as the step's layers do with weights between them. Beside them, the
// composition's step-chain calibration kernels (compose.cu) at 1, 12 and 132 blocks: whether the
// time of a dependent step grows with the number of blocks walking at once.
// Build: nvcc -O3 -arch=sm_90 -o attention_check notes/diagnostics/device/attention_check.cu
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cstring>
#include <cuda_runtime.h>
#include "../../crates/cuda/kernels/ops/common.cuh"
#include "../../crates/cuda/kernels/ops/attention.cu"
#include "../../crates/cuda/kernels/ops/compose.cu"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); return 1; } } while (0)

static int run(bool f16, int B, int H, int T, int t_max, int caches, float* us_out) {
    size_t es = f16 ? 2 : 4;
    size_t cache_elems = (size_t)B * H * t_max * 64;
    char *k, *v, *q, *out;
    CK(cudaMalloc(&k, cache_elems * es * caches));
    CK(cudaMalloc(&v, cache_elems * es * caches));
    CK(cudaMalloc(&q, (size_t)B * 3 * H * 64 * es));
    CK(cudaMalloc(&out, (size_t)B * H * 64 * es));
    CK(cudaMemset(k, 0x11, cache_elems * es * caches));
    CK(cudaMemset(v, 0x22, cache_elems * es * caches));
    CK(cudaMemset(q, 0x33, (size_t)B * 3 * H * 64 * es));
    unsigned smem = (unsigned)(((T + 3) & ~3) * 4 + 8 * 16 * 16);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0); cudaEventCreate(&e1);
    const int launches = 256;
    std::vector<float> per;
    for (int rep = 0; rep < 6; rep++) {
        cudaEventRecord(e0);
        for (int i = 0; i < launches; i++) {
            size_t off = (size_t)(i % caches) * cache_elems * es;
            if (f16)
                decode_attention_f16<<<B * H, 128, smem>>>((const half_t*)q, 3 * H * 64, (const half_t*)(k + off),
                                                           (const half_t*)(v + off), (half_t*)out, H, T, t_max, 0.125f);
            else
                decode_attention_f32<<<B * H, 128, smem>>>((const float*)q, 3 * H * 64, (const float*)(k + off),
                                                           (const float*)(v + off), (float*)out, H, T, t_max, 0.125f);
        }
        cudaEventRecord(e1);
        CK(cudaEventSynchronize(e1));
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        if (rep > 0) per.push_back(ms * 1000.f / launches);
    }
    CK(cudaGetLastError());
    std::sort(per.begin(), per.end());
    *us_out = per[per.size() / 2];
    cudaFree(k); cudaFree(v); cudaFree(q); cudaFree(out);
    return 0;
}

// ns per dependent step of step_chain_u2/u4 (reduce) with `blocks` blocks, each on its own rows.
static int chain(bool u2, int blocks, int reduce, float* ns) {
    const int w = u2 ? 8 : 16, steps_s = 16, steps_l = 256;
    size_t per_block = (size_t)(steps_l + 1) * 16 * 16 * w;  // rows of one block at the long chain
    char* rows; float* out;
    CK(cudaMalloc(&rows, per_block * blocks * 8));
    CK(cudaMalloc(&out, 4096));
    CK(cudaMemset(rows, 0x3c, per_block * blocks * 8));
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0); cudaEventCreate(&e1);
    float t[2];
    for (int pass = 0; pass < 2; pass++) {
        int steps = pass ? steps_l : steps_s;
        std::vector<float> v;
        for (int rep = 0; rep < 6; rep++) {
            cudaEventRecord(e0);
            for (int i = 0; i < 64; i++) {
                // blocks x one block's rows: each block of the launch walks its own rows
                char* src = rows + (size_t)(i % 8) * per_block * blocks;
                if (u2) step_chain_u2<<<blocks, 128>>>((const uint2*)src, steps, reduce, out);
                else step_chain_u4<<<blocks, 128>>>((const uint4*)src, steps, reduce, out);
            }
            cudaEventRecord(e1);
            CK(cudaEventSynchronize(e1));
            float ms; cudaEventElapsedTime(&ms, e0, e1);
            if (rep) v.push_back(ms * 1e6f / 64);
        }
        std::sort(v.begin(), v.end());
        t[pass] = v[v.size() / 2];
    }
    *ns = (t[1] - t[0]) / (steps_l - steps_s);
    cudaFree(rows); cudaFree(out);
    return 0;
}

int main(int argc, char** argv) {
    // "step" / "one": only that attention case (for a profiler); no argument: everything.
    const char* only = argc > 1 ? argv[1] : nullptr;
    struct Case { const char* name; int B, H, T, t_max, caches; };
    std::vector<Case> cases;
    if (!only || !strcmp(only, "step")) cases.push_back({"step B=1 H=12 T=1024", 1, 12, 1024, 1024, 64});
    if (only && !strcmp(only, "one")) cases.push_back({"one block B=1 H=1 T=1024", 1, 1, 1024, 1024, 64});
    if (!only) {
        cases.push_back({"step B=2 H=12 T=1024", 2, 12, 1024, 1024, 32});
        cases.push_back({"one block B=1 H=1 T=1024", 1, 1, 1024, 1024, 64});
        cases.push_back({"padded t_max=1032 B=1 H=12", 1, 12, 1024, 1032, 64});
        cases.push_back({"ctx 128 B=1 H=12", 1, 12, 128, 128, 64});
        cases.push_back({"B=64 H=12 T=1024", 64, 12, 1024, 1024, 2});
    }
    printf("%-32s %12s %12s %8s   (us per launch, events, median of 5 x 256 launches; back to back)\n", "case", "fp32", "fp16", "16/32");
    for (auto& c : cases) {
        float a = 0, b = 0;
        if (run(false, c.B, c.H, c.T, c.t_max, c.caches, &a) || run(true, c.B, c.H, c.T, c.t_max, c.caches, &b)) return 1;
        printf("%-32s %12.2f %12.2f %8.2f\n", c.name, a, b, b / a);
    }
    if (only) return 0;
    printf("\nstep_chain (reduce=1), ns per dependent step, each block on its own rows:\n%-10s %10s %10s\n", "blocks", "u4 (16 B)", "u2 (8 B)");
    for (int blocks : {1, 12, 24, 132}) {
        float a, b;
        if (chain(false, blocks, 1, &a) || chain(true, blocks, 1, &b)) return 1;
        printf("%-10d %10.1f %10.1f\n", blocks, a, b);
    }
    return 0;
}
