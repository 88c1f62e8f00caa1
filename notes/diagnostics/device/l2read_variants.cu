// l2read_variants.cu: an independent diagnostic for issue 25 (l2bw reads 1-5 % below a public
// L2 benchmark at equal footprints, and far below it at 2-4 MiB). It measures the all-SM read
// bandwidth over a footprint (the first F bytes of one device buffer) for several kernel designs
// and prints one table: footprint rows x design columns, TB/s (1e12 B/s), each cell the median
// of 7 launches after one warm-up launch, each launch reading >= BYTES (default 8 GiB, at least
// 2 GiB), timed with cudaEvents around the single launch.
// Designs (the legend printed at run time says the same, with registers and residency):
//   A  persistent grid-stride: 4 blocks x 512 threads per SM, 16-byte loads, INF in flight per
//      thread, start rotated each pass, .cg (or .ca) loads; the whole footprint every pass.
//   B  short-lived blocks: block b reads one contiguous chunk, chunk index b % nchunks; a thread
//      issues a batch of independent loads (element k*THREADS + tid of the chunk) before summing
//      them; 1024 / 512 threads, 8 / 16-byte loads, 256 / 512 KiB chunks, .cg / plain loads.
//   C  persistent blocks (as many as fit): block k walks virtual chunks k, k+G, k+2G ... (chunk
//      index v % nchunks), 512 threads, 16-byte .cg loads, 8 or 16 in flight.
// The sum of the loaded words is written to global memory only when it equals a runtime value,
// so no load can be dropped. Footprints are multiples of 512 KiB; a chunk is cut to
// min(chunk, footprint / 2) (rounded down to the design's load granule) so at least 2 chunks
// exist; a cell whose chunk was cut is marked '*'.
//   nvcc -O3 -arch=sm_90 -o l2read_variants l2read_variants.cu && ./l2read_variants [BYTES]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x)                                                                          \
    do {                                                                               \
        cudaError_t e_ = (x);                                                          \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

typedef unsigned long long u64;

enum { M_CG = 0, M_CA = 1, M_PLAIN = 2 };
#define OUT_WORDS (1u << 16)

// One load of the given caching mode. __ldcg / __ldca are overloaded for uint4 and u64.
template <int MODE, typename T>
__device__ __forceinline__ T ldx(const T* p) {
    if (MODE == M_CG) return __ldcg(p);
    if (MODE == M_CA) return __ldca(p);
    return *p;
}
__device__ __forceinline__ unsigned fold(uint4 v) { return v.x + v.y + v.z + v.w; }
__device__ __forceinline__ unsigned fold(u64 v) { return (unsigned)v + (unsigned)(v >> 32); }

// A: persistent grid-stride over n 16-byte elements, `passes` passes, start rotated by `rot`
// elements each pass.
template <int INF, int MODE>
__global__ void __launch_bounds__(512) k_gridstride(const uint4* buf, unsigned n, int passes,
                                                    unsigned rot, unsigned magic, unsigned* out) {
    const unsigned T = gridDim.x * blockDim.x;
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned acc = 0;
    unsigned off = 0;
    for (int p = 0; p < passes; p++) {
        for (unsigned i = t; i < n; i += T * INF) {
            uint4 v[INF];
#pragma unroll
            for (int j = 0; j < INF; j++) {
                unsigned e = i + (unsigned)j * T;
                v[j] = make_uint4(0, 0, 0, 0);
                if (e < n) {
                    unsigned idx = e + off;
                    if (idx >= n) idx -= n;
                    v[j] = ldx<MODE>(buf + idx);
                }
            }
#pragma unroll
            for (int j = 0; j < INF; j++) acc += fold(v[j]);
        }
        off += rot;
        if (off >= n) off -= n;
    }
    if (acc == magic) out[(blockIdx.x * blockDim.x + threadIdx.x) % OUT_WORDS] = acc;
}

// Reads one chunk of chunk_elems elements at base (already offset by threadIdx.x) with THREADS
// threads, BATCH independent loads per thread issued before they are summed.
template <typename T, int THREADS, int BATCH, int MODE>
__device__ __forceinline__ unsigned read_chunk(const T* base, unsigned chunk_elems) {
    unsigned acc = 0;
    for (unsigned k0 = 0; k0 < chunk_elems; k0 += THREADS * BATCH) {
        T v[BATCH];
#pragma unroll
        for (int j = 0; j < BATCH; j++) v[j] = ldx<MODE>(base + k0 + j * THREADS);
#pragma unroll
        for (int j = 0; j < BATCH; j++) acc += fold(v[j]);
    }
    return acc;
}

// B: one short-lived block per chunk read; chunk index blockIdx.x % nchunks.
template <typename T, int THREADS, int BATCH, int MODE>
__global__ void __launch_bounds__(THREADS) k_chunks(const T* buf, unsigned nchunks,
                                                    unsigned chunk_elems, unsigned magic,
                                                    unsigned* out) {
    const T* base = buf + (size_t)(blockIdx.x % nchunks) * chunk_elems + threadIdx.x;
    unsigned acc = read_chunk<T, THREADS, BATCH, MODE>(base, chunk_elems);
    if (acc == magic) out[(blockIdx.x * THREADS + threadIdx.x) % OUT_WORDS] = acc;
}

// C: persistent blocks walking virtual chunks round-robin; chunk index v % nchunks.
template <int INF>
__global__ void __launch_bounds__(512) k_roundrobin(const uint4* buf, unsigned nchunks,
                                                    unsigned chunk_elems, unsigned nvirt,
                                                    unsigned magic, unsigned* out) {
    unsigned acc = 0;
    for (unsigned vc = blockIdx.x; vc < nvirt; vc += gridDim.x) {
        const uint4* base = buf + (size_t)(vc % nchunks) * chunk_elems + threadIdx.x;
        acc += read_chunk<uint4, 512, INF, M_CG>(base, chunk_elems);
    }
    if (acc == magic) out[(blockIdx.x * 512 + threadIdx.x) % OUT_WORDS] = acc;
}

enum { K_A = 0, K_B = 1, K_C = 2 };

struct Design {
    const char* code;
    int kind;
    const void* fn;
    int threads;
    int elem_bytes;
    int batch;          // loads in flight per thread (A, C) or per batch (B)
    size_t chunk_bytes; // nominal chunk (B, C)
    int mode;
    int blocks_per_sm;  // residency from the occupancy API
    int regs;
    size_t local_bytes;
};

static const char* mode_name(int m) { return m == M_CG ? ".cg" : m == M_CA ? ".ca" : "plain"; }

static Design mk(const char* code, int kind, const void* fn, int threads, int elem, int batch,
                 size_t chunk, int mode) {
    Design d;
    d.code = code;
    d.kind = kind;
    d.fn = fn;
    d.threads = threads;
    d.elem_bytes = elem;
    d.batch = batch;
    d.chunk_bytes = chunk;
    d.mode = mode;
    d.blocks_per_sm = 0;
    d.regs = 0;
    d.local_bytes = 0;
    return d;
}

struct Cell {
    double tbps;
    u64 bytes;
    unsigned grid;
    size_t chunk;
    bool cut;
};

int main(int argc, char** argv) {
    u64 min_bytes = 8ull << 30;
    if (argc > 1) min_bytes = strtoull(argv[1], 0, 10);
    if (min_bytes < (2ull << 30)) min_bytes = 2ull << 30;

    int dev = 0;
    CK(cudaSetDevice(dev));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    const int sms = prop.multiProcessorCount;
    printf("gpu: %s, SMs %d, L2 %d bytes (%.1f MiB), max threads/SM %d, regs/SM %d\n", prop.name,
           sms, prop.l2CacheSize, prop.l2CacheSize / 1048576.0, prop.maxThreadsPerMultiProcessor,
           prop.regsPerMultiprocessor);
    printf("each launch reads >= %llu bytes (%.2f GiB); cell = median of 7 launches after 1 warm-up; TB/s = 1e12 B/s\n",
           min_bytes, min_bytes / 1073741824.0);

    const size_t KiB = 1024, MiB = 1024 * 1024;
    std::vector<Design> ds;
    ds.push_back(mk("a8cg", K_A, (const void*)k_gridstride<8, M_CG>, 512, 16, 8, 0, M_CG));
    ds.push_back(mk("a16cg", K_A, (const void*)k_gridstride<16, M_CG>, 512, 16, 16, 0, M_CG));
    ds.push_back(mk("a8ca", K_A, (const void*)k_gridstride<8, M_CA>, 512, 16, 8, 0, M_CA));
    // B: batch sizes keep the loaded values at 32 (1024 threads) or 64 (512 threads) registers.
    for (int ci = 0; ci < 2; ci++) {
        size_t ch = ci == 0 ? 512 * KiB : 256 * KiB;
        const char* sfx = ci == 0 ? "5" : "2";
        static char names[16][16];
        static int ni = 0;
        struct V { int thr, elem, batch, mode; const void* fn; };
        V vs[8] = {
            {1024, 8, 16, M_CG, (const void*)k_chunks<u64, 1024, 16, M_CG>},
            {1024, 8, 16, M_PLAIN, (const void*)k_chunks<u64, 1024, 16, M_PLAIN>},
            {1024, 16, 8, M_CG, (const void*)k_chunks<uint4, 1024, 8, M_CG>},
            {1024, 16, 8, M_PLAIN, (const void*)k_chunks<uint4, 1024, 8, M_PLAIN>},
            {512, 8, 32, M_CG, (const void*)k_chunks<u64, 512, 32, M_CG>},
            {512, 8, 32, M_PLAIN, (const void*)k_chunks<u64, 512, 32, M_PLAIN>},
            {512, 16, 16, M_CG, (const void*)k_chunks<uint4, 512, 16, M_CG>},
            {512, 16, 16, M_PLAIN, (const void*)k_chunks<uint4, 512, 16, M_PLAIN>},
        };
        for (int k = 0; k < 8; k++) {
            // code b{K|H}{8|16}{c|p}{5|2}: K = 1024 threads, H = 512; load bytes; c = .cg,
            // p = plain; 5 = 512 KiB chunk, 2 = 256 KiB. E.g. bK8c5, bH16p2.
            snprintf(names[ni], 16, "b%s%d%s%s", vs[k].thr == 1024 ? "K" : "H", vs[k].elem,
                     vs[k].mode == M_CG ? "c" : "p", sfx);
            ds.push_back(mk(names[ni], K_B, vs[k].fn, vs[k].thr, vs[k].elem, vs[k].batch, ch,
                            vs[k].mode));
            ni++;
        }
    }
    ds.push_back(mk("c8", K_C, (const void*)k_roundrobin<8>, 512, 16, 8, 512 * KiB, M_CG));
    ds.push_back(mk("c16", K_C, (const void*)k_roundrobin<16>, 512, 16, 16, 512 * KiB, M_CG));
    ds.push_back(mk("c8s", K_C, (const void*)k_roundrobin<8>, 512, 16, 8, 64 * KiB, M_CG));

    for (size_t i = 0; i < ds.size(); i++) {
        Design& d = ds[i];
        cudaFuncAttributes fa;
        CK(cudaFuncGetAttributes(&fa, d.fn));
        d.regs = fa.numRegs;
        d.local_bytes = fa.localSizeBytes;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&d.blocks_per_sm, d.fn, d.threads, 0));
    }

    printf("\ndesigns (regs = registers/thread, local = spill bytes/thread, res = resident blocks/SM):\n");
    for (size_t i = 0; i < ds.size(); i++) {
        const Design& d = ds[i];
        printf("  %-7s ", d.code);
        if (d.kind == K_A)
            printf("A persistent grid-stride, grid %d (4/SM) x %d thr, %d-B %s loads, %d in flight, start rotated each pass",
                   4 * sms, d.threads, d.elem_bytes, mode_name(d.mode), d.batch);
        else if (d.kind == K_B)
            printf("B short-lived blocks, chunk %zu KiB = blockIdx %% nchunks, %d thr, %d-B %s loads, batches of %d issued before use",
                   d.chunk_bytes / KiB, d.threads, d.elem_bytes, mode_name(d.mode), d.batch);
        else
            printf("C persistent %d/SM x %d thr, chunks k, k+G, ... round-robin, chunk %zu KiB, %d-B %s loads, %d in flight",
                   d.blocks_per_sm, d.threads, d.chunk_bytes / KiB, d.elem_bytes, mode_name(d.mode), d.batch);
        printf("  [regs %d, local %zu, res %d]\n", d.regs, d.local_bytes, d.blocks_per_sm);
        if (d.kind == K_A && d.blocks_per_sm < 4)
            printf("          note: only %d blocks/SM fit, so the 4/SM grid runs in more than one wave\n",
                   d.blocks_per_sm);
    }

    const size_t fps_mib[] = {1, 2, 3, 4, 6, 8, 12, 16, 20, 24, 32, 40, 48, 256};
    const int nfp = sizeof(fps_mib) / sizeof(fps_mib[0]);
    const size_t max_fp = 256 * MiB;
    void* buf = 0;
    unsigned* out = 0;
    CK(cudaMalloc(&buf, max_fp));
    CK(cudaMalloc(&out, OUT_WORDS * sizeof(unsigned)));
    CK(cudaMemset(buf, 0x01, max_fp));
    CK(cudaMemset(out, 0, OUT_WORDS * sizeof(unsigned)));
    CK(cudaDeviceSynchronize());
    // A thread's sum is written only if it equals this value; the compiler cannot know it won't,
    // so every load stays. A chance hit only writes to `out` (reported at the end).
    unsigned magic = 0x7fffffffu;

    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));

    std::vector<std::vector<Cell> > table(nfp, std::vector<Cell>(ds.size()));
    for (int fi = 0; fi < nfp; fi++) {
        const size_t F = fps_mib[fi] * MiB;
        const u64 reps = (min_bytes + F - 1) / F;  // footprint reads per launch
        for (size_t di = 0; di < ds.size(); di++) {
            const Design& d = ds[di];
            Cell c;
            c.cut = false;
            c.chunk = 0;
            unsigned grid = 0;
            void* args[8];
            const void* bufc = buf;
            unsigned n = 0, rot = 0, nchunks = 0, chunk_elems = 0, nvirt = 0;
            int passes = 0;
            if (d.kind == K_A) {
                n = (unsigned)(F / 16);
                passes = (int)reps;
                rot = (unsigned)((512u * d.batch) % n);
                grid = 4 * sms;
                c.bytes = reps * F;
                args[0] = (void*)&bufc;
                args[1] = &n;
                args[2] = &passes;
                args[3] = &rot;
                args[4] = &magic;
                args[5] = &out;
            } else {
                const size_t granule = (size_t)d.threads * d.batch * d.elem_bytes;
                size_t ch = d.chunk_bytes;
                if (ch > F / 2) {
                    ch = std::max(granule, (F / 2) / granule * granule);
                    c.cut = true;
                }
                c.chunk = ch;
                nchunks = (unsigned)(F / ch);
                chunk_elems = (unsigned)(ch / d.elem_bytes);
                nvirt = (unsigned)(nchunks * reps);
                c.bytes = (u64)nvirt * ch;
                args[0] = (void*)&bufc;
                args[1] = &nchunks;
                args[2] = &chunk_elems;
                if (d.kind == K_B) {
                    grid = nvirt;
                    args[3] = &magic;
                    args[4] = &out;
                } else {
                    grid = std::min((unsigned)(d.blocks_per_sm * sms), nvirt);
                    args[3] = &nvirt;
                    args[4] = &magic;
                    args[5] = &out;
                }
            }
            c.grid = grid;
            std::vector<float> ms;
            for (int l = 0; l < 8; l++) {
                CK(cudaEventRecord(e0));
                CK(cudaLaunchKernel(d.fn, dim3(grid), dim3(d.threads), args, 0, 0));
                CK(cudaEventRecord(e1));
                CK(cudaEventSynchronize(e1));
                CK(cudaGetLastError());
                float t = 0;
                CK(cudaEventElapsedTime(&t, e0, e1));
                if (l > 0) ms.push_back(t);
            }
            std::sort(ms.begin(), ms.end());
            c.tbps = (double)c.bytes / (ms[ms.size() / 2] * 1e-3) / 1e12;
            table[fi][di] = c;
        }
    }

    printf("\nall-SM read bandwidth, TB/s (median of 7), '*' = chunk cut to footprint/2\n");
    printf("%8s", "MiB");
    for (size_t di = 0; di < ds.size(); di++) printf(" %7s", ds[di].code);
    printf("\n");
    for (int fi = 0; fi < nfp; fi++) {
        printf("%8zu", fps_mib[fi]);
        for (size_t di = 0; di < ds.size(); di++)
            printf(" %6.2f%c", table[fi][di].tbps, table[fi][di].cut ? '*' : ' ');
        printf("\n");
    }

    printf("\nbest design per footprint (and a8cg, the memscope-like design, for reference):\n");
    for (int fi = 0; fi < nfp; fi++) {
        size_t best = 0;
        for (size_t di = 1; di < ds.size(); di++)
            if (table[fi][di].tbps > table[fi][best].tbps) best = di;
        printf("  %4zu MiB: best %-7s %6.2f TB/s; a8cg %6.2f TB/s (%+.1f %% vs best)\n", fps_mib[fi],
               ds[best].code, table[fi][best].tbps, table[fi][0].tbps,
               100.0 * (table[fi][0].tbps - table[fi][best].tbps) / table[fi][best].tbps);
    }

    printf("\nplausibility: bytes per launch (min..max over designs), grid and chunk of B/C cells:\n");
    for (int fi = 0; fi < nfp; fi++) {
        u64 lo = ~0ull, hi = 0;
        for (size_t di = 0; di < ds.size(); di++) {
            lo = std::min(lo, table[fi][di].bytes);
            hi = std::max(hi, table[fi][di].bytes);
        }
        printf("  %4zu MiB: %llu .. %llu bytes (%.2f .. %.2f GiB) per launch; grids:", fps_mib[fi], lo,
               hi, lo / 1073741824.0, hi / 1073741824.0);
        for (size_t di = 0; di < ds.size(); di++) {
            if (ds[di].kind == K_A) continue;
            printf(" %s=%u/%zuK", ds[di].code, table[fi][di].grid, table[fi][di].chunk / KiB);
        }
        printf("\n");
    }

    unsigned host_out[16];
    CK(cudaMemcpy(host_out, out, sizeof(host_out), cudaMemcpyDeviceToHost));
    printf("\nsink words (0 unless a sum hit the magic value): %u %u %u %u\n", host_out[0],
           host_out[1], host_out[2], host_out[3]);
    CK(cudaFree(buf));
    CK(cudaFree(out));
    return 0;
}
