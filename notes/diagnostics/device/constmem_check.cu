// constmem_check.cu: an independent second opinion on the constant-cache latencies (issue 25),
// written apart from memscope's probe: its own kernel, its own layout (word indices, j = c[j]),
// its own timing (clock64 around the chase, a second clock64 run against %globaltimer for the
// clock), compiled by nvcc on the device. For each footprint it chases a cycle that visits one
// word per 64-byte step in a stride-permuted order (coprime step, so no two consecutive hops are
// neighbours), 8 launches of 20000 timed hops after 2 warm-up laps, and prints the median cycles
// and ns per hop. The L1 level is the small footprints, the L1.5 level the large ones.
//   nvcc -O3 -arch=sm_90 -o constmem_check constmem_check.cu && ./constmem_check > out.json
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define WORDS 16384  // 64 KiB
__constant__ unsigned int c[WORDS];

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

// UNIFORM = false: j starts from a per-lane value (start + %laneid, lane 0 runs), so the compiler
// keeps the chase in vector registers (LDC); true: j stays warp-uniform and nvcc may use the
// uniform datapath (ULDC). Both are printed; the probe's chase compiles to LDC.
template <bool UNIFORM>
__global__ void chase(unsigned int start, int warm, int hops, unsigned long long* out) {
    // j is a byte offset into the bank (no index scaling on the dependent path).
    const char* base = (const char*)c;
    unsigned int lane = 0;
    if (!UNIFORM) asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    unsigned int j = start + lane;
    for (int i = 0; i < warm; i++) j = *(const unsigned int*)(base + j);
    __syncthreads();
    long long t0 = clock64();
#pragma unroll 8
    for (int i = 0; i < hops; i++) j = *(const unsigned int*)(base + j);
    long long t1 = clock64();
    out[0] = (unsigned long long)(t1 - t0);
    out[1] = j;
}

__global__ void clock_rate(unsigned long long ns, unsigned long long* out) {
    unsigned long long g0, g1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
    long long c0 = clock64();
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1)); } while (g1 - g0 < ns);
    long long c1 = clock64();
    out[0] = g1 - g0;
    out[1] = (unsigned long long)(c1 - c0);
}

int main() {
    unsigned long long* d;
    CK(cudaMalloc(&d, 64));
    unsigned long long h[2];
    clock_rate<<<1, 1>>>(50000000ull, d);  // ramp the clock
    clock_rate<<<1, 1>>>(20000000ull, d);
    CK(cudaMemcpy(h, d, 16, cudaMemcpyDeviceToHost));
    double ghz = (double)h[1] / (double)h[0];
    printf("{\n  \"clock_ghz\": %.4f,\n  \"points\": [\n", ghz);
    const int foot[] = {512, 1024, 1536, 2048, 2560, 3072, 4096, 8192, 16384, 32768, 49152, 65536};
    const int nf = sizeof(foot) / sizeof(foot[0]);
    for (int f = 0; f < nf; f++) {
        int n = foot[f] / 64;  // one word per 64 bytes
        // Visit order k -> (k * step) mod n with step coprime to n.
        int step = 1;
        for (int s = n / 2 + 1; s < n; s++) { int a = s, b = n; while (b) { int t = a % b; a = b; b = t; } if (a == 1) { step = s; break; } }
        std::vector<unsigned int> w(WORDS, 0);
        for (int k = 0; k < n; k++) {
            int cur = (int)(((long long)k * step) % n), nxt = (int)(((long long)(k + 1) * step) % n);
            w[cur * 16] = nxt * 64;  // the byte offset of the next word
        }
        CK(cudaMemcpyToSymbol(c, w.data(), WORDS * 4));
        double med[2], lo[2], hi[2];
        for (int u = 0; u < 2; u++) {
            std::vector<double> cyc;
            for (int r = 0; r < 8; r++) {
                if (u == 0) chase<false><<<1, 1>>>(0, 2 * n + 64, 20000, d);
                else chase<true><<<1, 1>>>(0, 2 * n + 64, 20000, d);
                CK(cudaMemcpy(h, d, 16, cudaMemcpyDeviceToHost));
                long long k = (long long)(2 * n + 64 + 20000) % n;
                unsigned long long want = (unsigned long long)((k * step) % n) * 64;
                if (h[1] != want) { fprintf(stderr, "footprint %d: the chase ended at %llu, not %llu\n", foot[f], h[1], want); exit(3); }
                cyc.push_back((double)h[0] / 20000.0);
            }
            std::sort(cyc.begin(), cyc.end());
            med[u] = 0.5 * (cyc[3] + cyc[4]);
            lo[u] = cyc[0];
            hi[u] = cyc[7];
        }
        printf("    {\"footprint_bytes\": %d, \"cycles_per_hop\": %.3f, \"ns_per_hop\": %.3f, \"min_cycles\": %.3f, \"max_cycles\": %.3f, "
               "\"uniform_cycles_per_hop\": %.3f, \"uniform_ns_per_hop\": %.3f, \"uniform_min_cycles\": %.3f, \"uniform_max_cycles\": %.3f}%s\n",
               foot[f], med[0], med[0] / ghz, lo[0], hi[0], med[1], med[1] / ghz, lo[1], hi[1], f + 1 < nf ? "," : "");
    }
    printf("  ]\n}\n");
    return 0;
}
