// sm_map_peer.cu: an independent per-SM L2 map, the second opinion of memscope's `l2.sm_map`
// probe (docs/SM_MEMORIES.md, "The per-SM L2 map"). Written apart from memscope's kernels and host code; it shares none of
// them. Build and run on a machine with a CUDA GPU:
//
//   nvcc -O3 -arch=sm_90 -o sm_map_peer scripts/peers/sm_map_peer.cu
//   ./sm_map_peer OUT.csv [LINES=1024] [REPS=3] [SEED=7]
//
// What differs from the probe: every (SM, repetition) gets a fresh 2 MiB page that no SM has read
// (written whole by cudaMemcpy just before its launch, so no partition holds a copy of its lines
// and no priming is needed); the cycle is of 32-bit line indices within that page, not absolute
// pointers; one launch per SM, the first block on it taking a ticket (atomicAdd) and the others
// leaving; per-hop clock64 deltas go straight to global memory (st.global.cg), the hop's value
// first stored to a global word so the clock is read after the load returned; the first hop (the
// page's TLB miss) is dropped; the two modes come from 1-D k-means (k = 2, from the extremes), not
// a least-squares split. Per SM and repetition: lap 1 (first touches) and lap 2 (held near) are
// recorded, lap 3 is not (its clock64 total gives the recording's per-hop cost: lap 2's mean less
// lap 3's). The SM clock: clock64 over 20 ms of %globaltimer after a 20 ms spin.
//
// Output: one CSV row per SM and repetition:
//   sm,rep,near_cycles,far_cycles,far_fraction,overhead_cycles,warm_cycles,clock_hz
// (near and far less the overhead; empty when the lap did not split in two modes).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
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

static const size_t PAGE = 2u << 20;
static const u32 LINE_WORDS = 32;  // u32 words per 128-byte line

__device__ __forceinline__ u64 peer_clock() {
    u64 t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
    return t;
}
__device__ __forceinline__ u64 peer_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
    return t;
}
__device__ __forceinline__ u32 peer_sm() {
    u32 r;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
    return r;
}
__device__ __forceinline__ u32 load_cg(const u32* a) {
    u32 v;
    asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(a));
    return v;
}
__device__ __forceinline__ void store_cg(u32* a, u32 v) { asm volatile("st.global.cg.u32 [%0], %1;" ::"l"(a), "r"(v) : "memory"); }

__global__ void spin_clock(u64 ns, u64* out) {
    u64 t0 = peer_ns(), c0 = peer_clock(), t1 = t0;
    while (t1 - t0 < ns) t1 = peer_ns();
    out[0] = peer_clock() - c0;
    out[1] = t1 - t0;
}

// page: the fresh page; first: the first line index; n: lines in the cycle. rec: 2n u32 (laps 1
// and 2); res: [lap 3 cycles, smid, done]; echo: the word each hop's value is stored to.
__global__ void peer_chase(const u32* page, u32 first, u32 n, u32 target, u32* ticket, u32* rec, u64* res, u32* echo) {
    if (peer_sm() != target) return;
    __shared__ u32 mine;
    if (threadIdx.x == 0) mine = atomicAdd(ticket, 1u);
    __syncthreads();
    if (mine != 0 || threadIdx.x != 0) return;
    u32 idx = first;
    for (int lap = 0; lap < 2; lap++) {
        u64 prev = peer_clock();
        for (u32 k = 0; k < n; k++) {
            idx = load_cg(page + (u64)idx * LINE_WORDS);
            store_cg(echo, idx);
            u64 now = peer_clock();
            store_cg(rec + lap * n + k, (u32)(now - prev));
            prev = now;
        }
    }
    u64 c0 = peer_clock();
    for (u32 k = 0; k < n; k++) idx = load_cg(page + (u64)idx * LINE_WORDS);
    store_cg(echo, idx);
    u64 c1 = peer_clock();
    res[0] = c1 - c0;
    res[1] = peer_sm();
    res[2] = 1 + idx;  // idx is the first line again after three laps
}

static double median_of(std::vector<double> v) {
    if (v.empty()) return 0.0 / 0.0;
    std::sort(v.begin(), v.end());
    size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// 1-D k-means with two centres started at the extremes; returns true when both clusters hold at
// least 5 % of the values and the far centre is at least 1.2x the near one.
static bool kmeans2(const std::vector<double>& v, std::vector<int>& label) {
    double lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
    label.assign(v.size(), 0);
    for (int it = 0; it < 100; it++) {
        double s0 = 0, s1 = 0;
        size_t n0 = 0, n1 = 0;
        bool moved = false;
        for (size_t i = 0; i < v.size(); i++) {
            int l = std::abs(v[i] - lo) <= std::abs(v[i] - hi) ? 0 : 1;
            if (l != label[i]) moved = true;
            label[i] = l;
            if (l == 0) { s0 += v[i]; n0++; } else { s1 += v[i]; n1++; }
        }
        if (n0 == 0 || n1 == 0) return false;
        lo = s0 / n0;
        hi = s1 / n1;
        if (!moved && it > 0) break;
    }
    size_t n1 = std::count(label.begin(), label.end(), 1);
    size_t n0 = v.size() - n1;
    return n0 >= 0.05 * v.size() && n1 >= 0.05 * v.size() && hi >= 1.2 * lo;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s OUT.csv [LINES] [REPS] [SEED]\n", argv[0]);
        return 2;
    }
    u32 lines = argc > 2 ? atoi(argv[2]) : 1024;
    int reps = argc > 3 ? atoi(argv[3]) : 3;
    unsigned seed = argc > 4 ? atoi(argv[4]) : 7;
    if (lines < 16 || lines > 16384 || reps < 1) {
        fprintf(stderr, "lines must be 16..16384 and reps >= 1\n");
        return 2;
    }
    int dev = 0, sms = 0;
    CK(cudaSetDevice(dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));

    u64* clk;
    CK(cudaMalloc(&clk, 16));
    spin_clock<<<1, 1>>>(20000000ull, clk);
    spin_clock<<<1, 1>>>(20000000ull, clk);
    u64 h[2];
    CK(cudaMemcpy(h, clk, 16, cudaMemcpyDeviceToHost));
    double hz = (double)h[0] / (double)h[1] * 1e9;

    size_t pages = (size_t)sms * reps;
    char* raw;
    CK(cudaMalloc(&raw, (pages + 1) * PAGE));
    u32* base = (u32*)(((uintptr_t)raw + PAGE - 1) / PAGE * PAGE);
    u32 *ticket, *rec, *echo;
    u64* res;
    CK(cudaMalloc(&ticket, 4));
    CK(cudaMalloc(&rec, 2 * (size_t)lines * 4));
    CK(cudaMalloc(&echo, 4));
    CK(cudaMalloc(&res, 24));

    std::mt19937_64 rng(seed);
    std::vector<u32> image(PAGE / 4), order(PAGE / 128 - 1);
    std::vector<u32> hrec(2 * lines);
    FILE* out = fopen(argv[1], "w");
    if (!out) {
        perror(argv[1]);
        return 1;
    }
    fprintf(out, "sm,rep,near_cycles,far_cycles,far_fraction,overhead_cycles,warm_cycles,clock_hz\n");
    for (int r = 0; r < reps; r++) {
        for (int sm = 0; sm < sms; sm++) {
            u32* page = base + (size_t)(r * sms + sm) * (PAGE / 4);
            // A random cycle over `lines` of the page's lines 1..16383.
            for (u32 i = 0; i < order.size(); i++) order[i] = i + 1;
            std::shuffle(order.begin(), order.end(), rng);
            std::fill(image.begin(), image.end(), 0u);
            for (u32 i = 0; i < lines; i++) image[order[i] * LINE_WORDS] = order[(i + 1) % lines];
            CK(cudaMemcpy(page, image.data(), PAGE, cudaMemcpyHostToDevice));
            bool ran = false;
            for (int attempt = 0; attempt < 4 && !ran; attempt++) {
                CK(cudaMemset(ticket, 0, 4));
                CK(cudaMemset(res, 0, 24));
                peer_chase<<<sms * 2, 64>>>(page, order[0], lines, sm, ticket, rec, res, echo);
                CK(cudaGetLastError());
                u64 hres[3];
                CK(cudaMemcpy(hres, res, 24, cudaMemcpyDeviceToHost));
                if (hres[2] == 0) continue;
                if (hres[1] != (u64)sm || hres[2] != 1 + (u64)order[0]) {
                    fprintf(stderr, "SM %d: ran on %llu, ended at %llu\n", sm, hres[1], hres[2] - 1);
                    return 1;
                }
                ran = true;
                CK(cudaMemcpy(hrec.data(), rec, hrec.size() * 4, cudaMemcpyDeviceToHost));
                std::vector<double> lap1(hrec.begin() + 1, hrec.begin() + lines);
                std::vector<double> lap2(hrec.begin() + lines + 1, hrec.end());
                double mean2 = 0;
                for (double x : lap2) mean2 += x;
                mean2 /= lap2.size();
                double warm = (double)hres[0] / lines;
                double overhead = std::max(0.0, mean2 - warm);
                double cap = 3.0 * median_of(lap2);
                std::vector<double> kept;
                for (double x : lap1)
                    if (x <= cap) kept.push_back(x);
                std::vector<int> label;
                if (kept.size() >= 8 && kmeans2(kept, label)) {
                    std::vector<double> a, b;
                    for (size_t i = 0; i < kept.size(); i++) (label[i] ? b : a).push_back(kept[i]);
                    fprintf(out, "%d,%d,%.3f,%.3f,%.4f,%.3f,%.3f,%.0f\n", sm, r, median_of(a) - overhead,
                            median_of(b) - overhead, (double)b.size() / kept.size(), overhead, warm, hz);
                } else {
                    fprintf(out, "%d,%d,,,,%.3f,%.3f,%.0f\n", sm, r, overhead, warm, hz);
                }
            }
            if (!ran) {
                fprintf(stderr, "SM %d: no block landed in 4 launches\n", sm);
                return 1;
            }
        }
    }
    fclose(out);
    fprintf(stderr, "sm_map_peer: %d SMs x %d repetitions, %u lines, clock %.0f Hz\n", sms, reps, lines, hz);
    return 0;
}
