// link_drift.cu: the second issue-16 diagnostic after link_place.cu (which found the pageable and
// bidirectional host -> device lines varying from one context/round to the next while pinned
// unidirectional copies held within 0.5 %). Three questions, one mode each; CUDA runtime API plus
// the driver API for extra contexts. Written apart from crates/cuda/src/probes/link*.rs.
// Build: nvcc -O3 -arch=sm_90 -o link_drift link_drift.cu -lcuda
// Usage: link_drift time SECONDS   one context, fixed buffers, every ~0.1 s: the host's own memcpy
//                                  (pageable -> pinned, 256 MiB), a pageable H2D, a pinned H2D and
//                                  a gated bidirectional pinned pair: does the host drift in time?
//        link_drift pins           8 fresh pinned buffers, 3 passes: host memcpy into each and a
//                                  bidirectional pair on each: does a pinned allocation's placement
//                                  set its rate (the same buffer fast or slow in every pass)?
//        link_drift ctx            5 driver contexts (cuCtxCreate), 3 passes over them: pageable
//                                  H2D/D2H in each: does a context (its staging buffers) set the rate?
// Lines: "key=value ..." with rates in GB/s (1e9 bytes/s), t in seconds from the start.
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <vector>

extern "C" CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev);

#define CK(x)                                                                                   \
    do {                                                                                        \
        cudaError_t e_ = (x);                                                                   \
        if (e_ != cudaSuccess) {                                                                \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(2);                                                                            \
        }                                                                                       \
    } while (0)
#define CKD(x)                                                                  \
    do {                                                                        \
        CUresult r_ = (x);                                                      \
        if (r_ != CUDA_SUCCESS) {                                               \
            fprintf(stderr, "%s:%d %s: error %d\n", __FILE__, __LINE__, #x, r_); \
            exit(2);                                                            \
        }                                                                       \
    } while (0)

static const size_t MiB = 1u << 20;
static const size_t BYTES = 256 * MiB;
static double T0;

static double now_s() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static double gbs(double ms) { return BYTES / (ms * 1e-3) / 1e9; }
static double med(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

__global__ void spin(volatile int* flag, long long max_clocks) {
    long long t0 = clock64();
    while (*flag == 0 && clock64() - t0 < max_clocks) {
    }
}

struct Lane {
    cudaStream_t s[2];
    cudaEvent_t e[4];
    int *flag, *flag_dev;
    char *da, *db;
};

static void lane_init(Lane& l) {
    for (auto& s : l.s) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (auto& e : l.e) CK(cudaEventCreate(&e));
    CK(cudaHostAlloc((void**)&l.flag, 4096, cudaHostAllocMapped | cudaHostAllocPortable));
    CK(cudaHostGetDevicePointer((void**)&l.flag_dev, l.flag, 0));
    CK(cudaMalloc(&l.da, BYTES));
    CK(cudaMalloc(&l.db, BYTES));
    CK(cudaMemset(l.db, 1, BYTES));
    CK(cudaDeviceSynchronize());
}

static char* pageable() {
    void* p = mmap(nullptr, BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) exit(3);
    uint64_t* w = (uint64_t*)p;
    for (size_t i = 0; i < BYTES / 8; i++) w[i] = i * 0x9E3779B97F4A7C15ull + 1;
    return (char*)p;
}
static char* pinned() {
    char* p;
    CK(cudaHostAlloc((void**)&p, BYTES, cudaHostAllocPortable));
    memset(p, 3, BYTES);
    return p;
}

static double copy_ms(Lane& l, void* dst, const void* src, cudaMemcpyKind k) {
    CK(cudaEventRecord(l.e[0], l.s[0]));
    CK(cudaMemcpyAsync(dst, src, BYTES, k, l.s[0]));
    CK(cudaEventRecord(l.e[1], l.s[0]));
    CK(cudaStreamSynchronize(l.s[0]));
    float ms;
    CK(cudaEventElapsedTime(&ms, l.e[0], l.e[1]));
    return ms;
}
static double host_gbs(char* dst, const char* src) {
    double t0 = now_s();
    memcpy(dst, src, BYTES);
    return BYTES / (now_s() - t0) / 1e9;
}
// Gated bidirectional pinned pair; out: H2D ms, D2H ms.
static void bidir(Lane& l, char* hsrc, char* hdst, double out[2]) {
    *(volatile int*)l.flag = 0;
    spin<<<1, 1, 0, l.s[0]>>>(l.flag_dev, 4000000000ll);
    CK(cudaEventRecord(l.e[0], l.s[0]));
    CK(cudaStreamWaitEvent(l.s[1], l.e[0], 0));
    CK(cudaEventRecord(l.e[2], l.s[1]));
    CK(cudaMemcpyAsync(l.da, hsrc, BYTES, cudaMemcpyHostToDevice, l.s[0]));
    CK(cudaMemcpyAsync(hdst, l.db, BYTES, cudaMemcpyDeviceToHost, l.s[1]));
    CK(cudaEventRecord(l.e[1], l.s[0]));
    CK(cudaEventRecord(l.e[3], l.s[1]));
    *(volatile int*)l.flag = 1;
    CK(cudaStreamSynchronize(l.s[0]));
    CK(cudaStreamSynchronize(l.s[1]));
    float a, b;
    CK(cudaEventElapsedTime(&a, l.e[0], l.e[1]));
    CK(cudaEventElapsedTime(&b, l.e[2], l.e[3]));
    out[0] = a;
    out[1] = b;
}

static void mode_time(double seconds) {
    Lane l;
    lane_init(l);
    char *s = pageable(), *p0 = pinned(), *p1 = pinned();
    copy_ms(l, l.da, s, cudaMemcpyHostToDevice);
    for (int it = 0; now_s() - T0 < seconds; it++) {
        double host = host_gbs(p0, s);
        double ph = gbs(copy_ms(l, l.da, s, cudaMemcpyHostToDevice));
        double pd = gbs(copy_ms(l, s, l.db, cudaMemcpyDeviceToHost));
        double pin = gbs(copy_ms(l, l.da, p0, cudaMemcpyHostToDevice));
        double b[2];
        bidir(l, p0, p1, b);
        printf("time t=%.3f it=%d host=%.3f page_h2d=%.3f page_d2h=%.3f pinned_h2d=%.3f bidir_h2d=%.3f bidir_d2h=%.3f\n",
               now_s() - T0, it, host, ph, pd, pin, gbs(b[0]), gbs(b[1]));
    }
}

static void mode_pins() {
    Lane l;
    lane_init(l);
    char* s = pageable();
    std::vector<char*> p;
    for (int k = 0; k < 8; k++) p.push_back(pinned());
    for (int pass = 0; pass < 3; pass++) {
        for (int k = 0; k < 8; k++) {
            std::vector<double> h, bh, bd;
            for (int r = 0; r < 3; r++) {
                h.push_back(host_gbs(p[k], s));
                double b[2];
                bidir(l, p[k], p[(k + 1) % 8], b);
                bh.push_back(gbs(b[0]));
                bd.push_back(gbs(b[1]));
            }
            printf("pins t=%.3f pass=%d buf=%d host=%.3f bidir_h2d=%.3f bidir_d2h=%.3f\n", now_s() - T0, pass, k,
                   med(h), med(bh), med(bd));
        }
    }
}

static void mode_ctx() {
    CKD(cuInit(0));
    CUdevice dev;
    CKD(cuDeviceGet(&dev, 0));
    char* s = pageable();
    const int N = 5;
    std::vector<CUcontext> ctx(N);
    std::vector<Lane> lanes(N);
    for (int c = 0; c < N; c++) {
        CKD(cuCtxCreate_v2(&ctx[c], 0, dev));
        CKD(cuCtxSetCurrent(ctx[c]));
        lane_init(lanes[c]);
    }
    for (int pass = 0; pass < 3; pass++) {
        for (int c = 0; c < N; c++) {
            CKD(cuCtxSetCurrent(ctx[c]));
            Lane& l = lanes[c];
            std::vector<double> h, d;
            copy_ms(l, l.da, s, cudaMemcpyHostToDevice);
            for (int r = 0; r < 3; r++) {
                h.push_back(gbs(copy_ms(l, l.da, s, cudaMemcpyHostToDevice)));
                d.push_back(gbs(copy_ms(l, s, l.db, cudaMemcpyDeviceToHost)));
            }
            printf("ctx t=%.3f pass=%d ctx=%d page_h2d=%.3f page_d2h=%.3f\n", now_s() - T0, pass, c, med(h), med(d));
        }
    }
}

int main(int argc, char** argv) {
    T0 = now_s();
    if (argc < 2) {
        fprintf(stderr, "usage: link_drift time SECONDS | pins | ctx\n");
        return 2;
    }
    if (!strcmp(argv[1], "time")) mode_time(argc > 2 ? atof(argv[2]) : 20.0);
    else if (!strcmp(argv[1], "pins")) mode_pins();
    else if (!strcmp(argv[1], "ctx")) mode_ctx();
    else return 2;
    printf("end mode=%s seconds=%.1f\n", argv[1], now_s() - T0);
    fflush(stdout);
    return 0;
}
