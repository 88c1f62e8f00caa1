// link_place.cu: a standalone diagnostic for issue 16: is the run-to-run spread of the link
// probe's pageable and bidirectional lines a property of the process (its CPU, its CUDA context's
// staging buffers) or of each host allocation (where its pages landed)? Written apart from
// crates/cuda/src/probes/link*.rs; CUDA runtime API.
// Build: nvcc -O3 -arch=sm_90 -o link_place link_place.cu
// Usage: link_place alloc LABEL   3 rounds (a cudaDeviceReset between rounds, so new contexts and
//                                 staging buffers), each with 4 fresh pageable buffers and 3 fresh
//                                 pinned pairs, every buffer measured on its own
//        link_place cpu LABEL     one round, 1 pageable buffer, 1 pinned pair (run under taskset)
// Per buffer, 256 MiB copies, 1 warm-up + 5 timed, events around each copy:
//   pageable: H2D, D2H (cudaMemcpyAsync on a non-blocking stream + sync); host memcpy into pinned
//   pinned  : H2D, D2H; bidir CE (H2D and D2H on two streams behind a spin gate, each its own
//             events); bidir SM two kernels (half grid each, two streams, gated); bidir SM split
//             (one kernel, even warps H2D, odd warps D2H, 256 MiB each way, kernel time)
// Lines: "TAG key=value ... :: med=X min=Y max=Z" in GB/s (1e9 bytes/s).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cuda_runtime.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <string>
#include <vector>

#define CK(x)                                                                                   \
    do {                                                                                        \
        cudaError_t e_ = (x);                                                                   \
        if (e_ != cudaSuccess) {                                                                \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(2);                                                                            \
        }                                                                                       \
    } while (0)

static const size_t MiB = 1u << 20;
static const size_t BYTES = 256 * MiB;
static const int REPS = 5;

static double now_s() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void report(const std::string& tag, std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    double med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    printf("%s :: med=%.3f min=%.3f max=%.3f\n", tag.c_str(), med, v[0], v[n - 1]);
    fflush(stdout);
}

__global__ void spin(volatile int* flag, long long max_clocks) {
    long long t0 = clock64();
    while (*flag == 0 && clock64() - t0 < max_clocks) {
    }
}

__global__ void copy16(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t n16) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n16; i += 4 * stride) {
        uint4 a = __ldcg(src + i), b = __ldcg(src + i + stride), c = __ldcg(src + i + 2 * stride),
              d = __ldcg(src + i + 3 * stride);
        __stcg(dst + i, a);
        __stcg(dst + i + stride, b);
        __stcg(dst + i + 2 * stride, c);
        __stcg(dst + i + 3 * stride, d);
    }
    for (; i < n16; i += stride) __stcg(dst + i, __ldcg(src + i));
}

// Even warps copy s0 -> d0, odd warps s1 -> d1; warp pair p walks both arrays grid-strided.
__global__ void copy16_split(const uint4* s0, uint4* d0, const uint4* s1, uint4* d1, size_t n16) {
    unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    const uint4* s = (warp & 1) ? s1 : s0;
    uint4* d = (warp & 1) ? d1 : d0;
    size_t pairs = (size_t)gridDim.x * blockDim.x / 64;
    for (size_t i = (size_t)(warp / 2) * 32 + lane; i < n16; i += pairs * 32) __stcg(d + i, __ldcg(s + i));
}

struct Ctx {
    cudaStream_t s[2];
    cudaEvent_t e[4];
    int* flag;  // mapped pinned
    int* flag_dev;
    int sms;
};

static void ctx_init(Ctx& c) {
    for (auto& s : c.s) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (auto& e : c.e) CK(cudaEventCreate(&e));
    CK(cudaHostAlloc((void**)&c.flag, 4096, cudaHostAllocMapped | cudaHostAllocPortable));
    CK(cudaHostGetDevicePointer((void**)&c.flag_dev, c.flag, 0));
    CK(cudaDeviceGetAttribute(&c.sms, cudaDevAttrMultiProcessorCount, 0));
}

static char* fresh_pageable() {
    void* p = mmap(nullptr, BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(3);
    }
    uint64_t* w = (uint64_t*)p;
    for (size_t i = 0; i < BYTES / 8; i++) w[i] = i * 0x9E3779B97F4A7C15ull + 1;
    return (char*)p;
}

// One event-timed copy on stream 0 (ms).
static double one_copy(Ctx& c, void* dst, const void* src, cudaMemcpyKind k) {
    CK(cudaEventRecord(c.e[0], c.s[0]));
    CK(cudaMemcpyAsync(dst, src, BYTES, k, c.s[0]));
    CK(cudaEventRecord(c.e[1], c.s[0]));
    CK(cudaStreamSynchronize(c.s[0]));
    float ms;
    CK(cudaEventElapsedTime(&ms, c.e[0], c.e[1]));
    return ms;
}

static double gbs(double ms, size_t bytes = BYTES) { return bytes / (ms * 1e-3) / 1e9; }

// Two lanes behind the gate; mode 0: CE both ways; 1: SM two kernels. Returns ms per lane.
static void gated(Ctx& c, int mode, char* ha, char* da_dev, char* db_dev, char* hb, char* ha_dev, char* hb_dev,
                  double out[2]) {
    *(volatile int*)c.flag = 0;
    spin<<<1, 1, 0, c.s[0]>>>(c.flag_dev, 4000000000ll);
    CK(cudaEventRecord(c.e[0], c.s[0]));
    CK(cudaStreamWaitEvent(c.s[1], c.e[0], 0));
    CK(cudaEventRecord(c.e[2], c.s[1]));
    int threads = 512, grid = c.sms * 2;  // half of 512 x 4 per SM per lane
    size_t n16 = BYTES / 16;
    if (mode == 0) {
        CK(cudaMemcpyAsync(da_dev, ha, BYTES, cudaMemcpyHostToDevice, c.s[0]));
        CK(cudaMemcpyAsync(hb, db_dev, BYTES, cudaMemcpyDeviceToHost, c.s[1]));
    } else {
        copy16<<<grid, threads, 0, c.s[0]>>>((const uint4*)ha_dev, (uint4*)da_dev, n16);
        copy16<<<grid, threads, 0, c.s[1]>>>((const uint4*)db_dev, (uint4*)hb_dev, n16);
    }
    CK(cudaEventRecord(c.e[1], c.s[0]));
    CK(cudaEventRecord(c.e[3], c.s[1]));
    *(volatile int*)c.flag = 1;
    CK(cudaStreamSynchronize(c.s[0]));
    CK(cudaStreamSynchronize(c.s[1]));
    float a, b;
    CK(cudaEventElapsedTime(&a, c.e[0], c.e[1]));
    CK(cudaEventElapsedTime(&b, c.e[2], c.e[3]));
    out[0] = a;
    out[1] = b;
}

static double split_ms(Ctx& c, char* ha_dev, char* da_dev, char* db_dev, char* hb_dev) {
    CK(cudaEventRecord(c.e[0], c.s[0]));
    copy16_split<<<c.sms * 4, 512, 0, c.s[0]>>>((const uint4*)ha_dev, (uint4*)da_dev, (const uint4*)db_dev,
                                                (uint4*)hb_dev, BYTES / 16);
    CK(cudaEventRecord(c.e[1], c.s[0]));
    CK(cudaStreamSynchronize(c.s[0]));
    float ms;
    CK(cudaEventElapsedTime(&ms, c.e[0], c.e[1]));
    return ms;
}

static void round_(const char* label, int round, int npage, int npin) {
    Ctx c;
    ctx_init(c);
    char *da, *db;
    CK(cudaMalloc(&da, BYTES));
    CK(cudaMalloc(&db, BYTES));
    CK(cudaMemset(db, 1, BYTES));
    char* pin_tmp;
    CK(cudaHostAlloc((void**)&pin_tmp, BYTES, cudaHostAllocPortable));
    std::vector<char*> pages;
    for (int k = 0; k < npage; k++) pages.push_back(fresh_pageable());
    for (int k = 0; k < npage; k++) {
        std::vector<double> h2d, d2h, host;
        for (int r = 0; r <= REPS; r++) {
            double a = one_copy(c, da, pages[k], cudaMemcpyHostToDevice);
            double b = one_copy(c, pages[k], db, cudaMemcpyDeviceToHost);
            double t0 = now_s();
            memcpy(pin_tmp, pages[k], BYTES);
            double t1 = now_s();
            if (r > 0) {
                h2d.push_back(gbs(a));
                d2h.push_back(gbs(b));
                host.push_back(BYTES / (t1 - t0) / 1e9);
            }
        }
        char tag[200];
        snprintf(tag, sizeof tag, "%s round=%d buf=page%d cpu=%d", label, round, k, sched_getcpu());
        report(std::string(tag) + " pageable_h2d", h2d);
        report(std::string(tag) + " pageable_d2h", d2h);
        report(std::string(tag) + " hostcopy_to_pinned", host);
    }
    for (auto p : pages) munmap(p, BYTES);
    for (int k = 0; k < npin; k++) {
        char *ha, *hb, *ha_dev, *hb_dev;
        CK(cudaHostAlloc((void**)&ha, BYTES, cudaHostAllocMapped | cudaHostAllocPortable));
        CK(cudaHostAlloc((void**)&hb, BYTES, cudaHostAllocMapped | cudaHostAllocPortable));
        memset(ha, 7, BYTES);
        memset(hb, 0, BYTES);
        CK(cudaHostGetDevicePointer((void**)&ha_dev, ha, 0));
        CK(cudaHostGetDevicePointer((void**)&hb_dev, hb, 0));
        std::vector<double> h2d, d2h, bce0, bce1, bsm0, bsm1, split;
        for (int r = 0; r <= REPS; r++) {
            double a = one_copy(c, da, ha, cudaMemcpyHostToDevice);
            double b = one_copy(c, hb, db, cudaMemcpyDeviceToHost);
            double ce[2], sm[2];
            gated(c, 0, ha, da, db, hb, ha_dev, hb_dev, ce);
            gated(c, 1, ha, da, db, hb, ha_dev, hb_dev, sm);
            double sp = split_ms(c, ha_dev, da, db, hb_dev);
            if (r > 0) {
                h2d.push_back(gbs(a));
                d2h.push_back(gbs(b));
                bce0.push_back(gbs(ce[0]));
                bce1.push_back(gbs(ce[1]));
                bsm0.push_back(gbs(sm[0]));
                bsm1.push_back(gbs(sm[1]));
                split.push_back(gbs(sp));
            }
        }
        char tag[200];
        snprintf(tag, sizeof tag, "%s round=%d buf=pin%d cpu=%d", label, round, k, sched_getcpu());
        std::string t(tag);
        report(t + " pinned_h2d", h2d);
        report(t + " pinned_d2h", d2h);
        report(t + " bidir_ce_h2d", bce0);
        report(t + " bidir_ce_d2h", bce1);
        report(t + " bidir_sm2k_h2d", bsm0);
        report(t + " bidir_sm2k_d2h", bsm1);
        report(t + " bidir_sm_split_each_way", split);
        CK(cudaFreeHost(ha));
        CK(cudaFreeHost(hb));
    }
    CK(cudaFreeHost(pin_tmp));
    CK(cudaFree(da));
    CK(cudaFree(db));
    CK(cudaFreeHost(c.flag));
}

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: link_place alloc|cpu LABEL\n");
        return 2;
    }
    bool alloc = strcmp(argv[1], "alloc") == 0;
    double t0 = now_s();
    int rounds = alloc ? 3 : 1;
    for (int r = 0; r < rounds; r++) {
        if (r > 0) CK(cudaDeviceReset());
        round_(argv[2], r, alloc ? 4 : 1, alloc ? 3 : 1);
    }
    printf("end %s seconds=%.1f\n", argv[2], now_s() - t0);
    return 0;
}
