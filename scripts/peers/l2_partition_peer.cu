// l2_partition_peer.cu: which L2 partition each line of many 2 MiB pages is homed in, timed from
// SMs of the two groups of the per-SM map (docs/L2_SLICES.md, "The partition bit over many pages").
// Written apart from memscope's kernels and host code; it shares none of them. Build and run on a
// machine with a CUDA GPU:
//
//   nvcc -O3 -arch=sm_90 -o l2_partition_peer scripts/peers/l2_partition_peer.cu
//   ./l2_partition_peer OUT.bin [PAGES=48] [SMS=0,2,131,123] [SEED=11] [SKIP_PAGES=0]
//
// One allocation of PAGES 2 MiB pages (aligned to 2 MiB), made after an allocation of SKIP_PAGES
// pages that stays unused (so that the measured pages get other page frames than without it). Each page holds the same cycle over all
// of its 16384 lines, in one random order (a 32-bit line index in each line's first word). Per
// page and per SM of SMS, and then once more from the first SM starting half a lap later:
//   prime: every line of the page gets a reduction of 0 from a grid of blocks (performed at the
//          line's home slice, so the line is L2-resident at home and no partition holds a copy
//          made by an earlier lap);
//   lap:   one thread on the chosen SM (the first block on it takes a ticket, the others leave)
//          reduces 0 into a word of the start line (the page's TLB entry, without a copy of the
//          line), runs 64 hops over a small warm-up cycle in another buffer through the same code,
//          then chases the page's cycle once, clock64 before and after each load (the loaded
//          value is stored to shared memory first so the clock is read after the load returned),
//          the deltas kept in shared memory and written out after the lap.
// Every line is touched once per lap: its cycles are a first touch, a near hit when the line's home
// slice is in this SM's partition and a far hit otherwise. The start line's hop is slow whatever
// its home on the H200 (the TLB reduction and the warm-up notwithstanding): one wrong label per
// page and lap, which is why the last lap starts elsewhere.
//
// Output, little-endian: a header of 8 u64 [magic 0x4c3250415254, pages, laps per page, lines per
// page, base virtual address, seed, SKIP_PAGES, 0], the lap SMs (laps u32, the last the repeat),
// then per page and lap 16384 u16 cycles indexed by line (saturated at 65535).

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#define CK(x)                                                                                    \
    do {                                                                                         \
        cudaError_t e_ = (x);                                                                    \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));   \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned short u16;

constexpr u64 PAGE_BYTES = 2ull << 20;
constexpr u32 LINE_BYTES = 128;
constexpr u32 LINES = (u32)(PAGE_BYTES / LINE_BYTES);  // 16384
constexpr u32 WARM_LINES = 64;

__device__ __forceinline__ u64 pp_clock() {
    u64 t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
    return t;
}
__device__ __forceinline__ u32 pp_sm() {
    u32 r;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
    return r;
}
__device__ __forceinline__ u32 pp_ld_cg(const char* base, u32 line) {
    u32 v;
    asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"((u64)base + (u64)line * LINE_BYTES));
    return v;
}

// Reductions of 0 on the second word of every line of the page.
__global__ void pp_prime(char* page) {
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < LINES; i += gridDim.x * blockDim.x)
        asm volatile("red.global.add.u32 [%0], %1;" ::"l"((u64)page + (u64)i * LINE_BYTES + 4), "r"(0u) : "memory");
}

// One lap of n hops from line `start` of `base`, deltas into rec (u16, saturated).
__device__ __noinline__ u32 pp_lap(const char* base, u32 start, u32 n, u16* rec, volatile u32* sink) {
    u32 p = start;
    u64 prev = pp_clock();
    for (u32 i = 0; i < n; i++) {
        u32 q = pp_ld_cg(base, p);
        *sink = q;
        u64 now = pp_clock();
        u64 d = now - prev;
        rec[p] = (u16)(d > 65535 ? 65535 : d);
        prev = now;
        p = q;
    }
    return p;
}

__global__ void pp_chase(const char* page, u32 start, const char* warm, u32 target_sm, u32* ticket, u16* out,
                         u32* status) {
    __shared__ u16 rec[LINES];
    __shared__ u16 warm_rec[WARM_LINES];
    __shared__ u32 sink[1];
    __shared__ int won;
    if (pp_sm() != target_sm) return;
    if (threadIdx.x == 0) won = (atomicAdd(ticket, 1u) == 0u);
    __syncthreads();
    if (!won || threadIdx.x != 0) return;
    asm volatile("red.global.add.u32 [%0], %1;" ::"l"((u64)page + (u64)start * LINE_BYTES + 8), "r"(0u) : "memory");
    __threadfence();
    volatile u32* vs = sink;
    u32 w = pp_lap(warm, 0, WARM_LINES, warm_rec, vs);
    u32 end = pp_lap(page, start, LINES, rec, vs);
    for (u32 i = 0; i < LINES; i++) out[i] = rec[i];
    status[0] = end;
    status[1] = w;
    status[2] = pp_sm();
    status[3] = 1;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s OUT.bin [PAGES=48] [SMS=0,2,131,123] [SEED=11] [SKIP_PAGES=0]\n", argv[0]);
        return 2;
    }
    u32 pages = argc > 2 ? (u32)atoi(argv[2]) : 48;
    std::string sms_arg = argc > 3 ? argv[3] : "0,2,131,123";
    u64 seed = argc > 4 ? strtoull(argv[4], nullptr, 10) : 11;
    u64 skip_pages = argc > 5 ? strtoull(argv[5], nullptr, 10) : 0;
    if (pages < 1 || pages > 4096) {
        fprintf(stderr, "PAGES %u: 1..4096\n", pages);
        return 2;
    }
    std::vector<u32> sms;
    for (size_t pos = 0; pos < sms_arg.size();) {
        size_t c = sms_arg.find(',', pos);
        if (c == std::string::npos) c = sms_arg.size();
        sms.push_back((u32)atoi(sms_arg.substr(pos, c - pos).c_str()));
        pos = c + 1;
    }
    int dev_sms = 0;
    CK(cudaDeviceGetAttribute(&dev_sms, cudaDevAttrMultiProcessorCount, 0));
    for (u32 s : sms)
        if (s >= (u32)dev_sms) {
            fprintf(stderr, "SM %u: the GPU has %d\n", s, dev_sms);
            return 2;
        }
    std::vector<u32> lap_sms = sms;
    lap_sms.push_back(sms[0]);
    u32 laps = (u32)lap_sms.size();

    // The cycle: a random order of all lines; each line's first word names the next line.
    std::mt19937_64 rng(seed);
    std::vector<u32> order(LINES);
    for (u32 i = 0; i < LINES; i++) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<u32> image(PAGE_BYTES / 4, 0);
    for (u32 i = 0; i < LINES; i++) image[(u64)order[i] * (LINE_BYTES / 4)] = order[(i + 1) % LINES];
    std::vector<u32> warm_image(WARM_LINES * LINE_BYTES / 4, 0);
    for (u32 i = 0; i < WARM_LINES; i++) warm_image[i * (LINE_BYTES / 4)] = (i + 1) % WARM_LINES;

    char* skip = nullptr;
    if (skip_pages > 0) CK(cudaMalloc(&skip, skip_pages * PAGE_BYTES));
    char* raw = nullptr;
    CK(cudaMalloc(&raw, (pages + 1) * PAGE_BYTES));
    char* base = (char*)(((u64)raw + PAGE_BYTES - 1) & ~(PAGE_BYTES - 1));
    for (u32 p = 0; p < pages; p++) CK(cudaMemcpy(base + p * PAGE_BYTES, image.data(), PAGE_BYTES, cudaMemcpyHostToDevice));
    char* warm = nullptr;
    CK(cudaMalloc(&warm, WARM_LINES * LINE_BYTES));
    CK(cudaMemcpy(warm, warm_image.data(), warm_image.size() * 4, cudaMemcpyHostToDevice));
    u32 *ticket = nullptr, *status = nullptr;
    u16* out = nullptr;
    CK(cudaMalloc(&ticket, 4));
    CK(cudaMalloc(&status, 16));
    CK(cudaMalloc(&out, LINES * 2));

    FILE* f = fopen(argv[1], "wb");
    if (!f) {
        fprintf(stderr, "cannot write %s\n", argv[1]);
        return 2;
    }
    u64 header[8] = {0x4c3250415254ull, pages, laps, LINES, (u64)base, seed, skip_pages, 0};
    fwrite(header, 8, 8, f);
    fwrite(lap_sms.data(), 4, laps, f);
    std::vector<u16> host(LINES);
    u32 failed = 0;
    for (u32 p = 0; p < pages; p++) {
        char* page = base + p * PAGE_BYTES;
        for (u32 l = 0; l < laps; l++) {
            u32 start = l + 1 == laps ? order[LINES / 2] : order[0];
            pp_prime<<<64, 256>>>(page);
            CK(cudaMemset(ticket, 0, 4));
            CK(cudaMemset(status, 0, 16));
            pp_chase<<<dev_sms * 2, 32>>>(page, start, warm, lap_sms[l], ticket, out, status);
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
            u32 st[4];
            CK(cudaMemcpy(st, status, 16, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(host.data(), out, LINES * 2, cudaMemcpyDeviceToHost));
            if (st[3] != 1 || st[2] != lap_sms[l] || st[0] != start) {
                failed++;
                std::fill(host.begin(), host.end(), (u16)0);
            }
            fwrite(host.data(), 2, LINES, f);
        }
    }
    fclose(f);
    printf("pages %u laps %u lines %u base 0x%llx failed_laps %u\n", pages, laps, LINES, (unsigned long long)base,
           failed);
    return failed ? 1 : 0;
}
