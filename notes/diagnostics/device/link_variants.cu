// link_variants.cu: a standalone diagnostic for issue 16 (the `link` probe's run-to-run spread of
// pageable copies and of the host round trip), written apart from crates/cuda/src/probes/link*.rs.
// Built by notes/diagnostics/device/link_variants.sh:  nvcc -O3 -arch=sm_90 -o link_variants link_variants.cu
// Usage: link_variants [LABEL]
// One line per measurement, "TAG key=value ... :: med=X min=Y max=Z rng=R% ...", rates in GB/s
// (1e9 bytes/s), times in ns. Measured:
//   pageable H2D / D2H at 64 MiB and 256 MiB, for buffers
//     malloc1G    : malloc(1 GiB), filled with a u64 pattern (as the probe's Vec<u64>), prefix used
//     malloc1G+pin: the same buffer, the host thread pinned to the CPU it started on (per copy)
//     huge        : 2 MiB-aligned mmap + madvise(MADV_HUGEPAGE), filled
//     nohuge      : 2 MiB-aligned mmap + madvise(MADV_NOHUGEPAGE), filled
//   each with cudaMemcpyAsync on a non-blocking stream + cudaStreamSynchronize ("async"), the same
//   in 4 MiB pieces ("async4MiB"), and synchronous cudaMemcpy ("sync"); 1 warm-up + 7 timed copies
//   per buffer, the buffers interleaved rep by rep; host wall time (CLOCK_MONOTONIC) and events.
//   pinned H2D / D2H 256 MiB (cudaHostAlloc Mapped|Portable) as the control.
//   hostcopy: single-thread memcpy between each pageable buffer and pinned memory (256 MiB), the
//   driver's staging work for pageable copies.
//   rtt: the probe's round trip (link_latency.rs): 8 bytes pinned -> device (cudaMemcpyAsync on a
//   non-blocking stream), 8 bytes back to the pinned buffer + 8, cudaStreamSynchronize, host-timed;
//   20 warm-ups + 400 samples, 3 blocks; flags: the context as used for the copies (default), then
//   after cudaDeviceReset: spin, yield, blocking sync, auto; each with the thread free and pinned.
//   smaps: Rss and AnonHugePages of the VMAs holding each pageable buffer (after fill, at the end).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cuda_runtime.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#define CK(x)                                                                                    \
    do {                                                                                         \
        cudaError_t e_ = (x);                                                                    \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));  \
            exit(2);                                                                             \
        }                                                                                        \
    } while (0)

static const size_t MiB = 1u << 20;
static const int REPS = 7;

static double now_s() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct Stat {
    double med, mn, mx, p10, p90;
};

static Stat stat_of(std::vector<double> v) {
    Stat s = {0, 0, 0, 0, 0};
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    s.med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    s.mn = v[0];
    s.mx = v[n - 1];
    s.p10 = v[(size_t)(0.1 * (n - 1))];
    s.p90 = v[(size_t)(0.9 * (n - 1) + 0.5)];
    return s;
}

// "med=.. min=.. max=.. rng=..%" (rng: (max - min) / med).
static std::string fmt(const Stat& s, int prec) {
    char b[160];
    snprintf(b, sizeof b, "med=%.*f min=%.*f max=%.*f rng=%.1f%%", prec, s.med, prec, s.mn, prec, s.mx,
             s.med > 0 ? 100.0 * (s.mx - s.mn) / s.med : 0.0);
    return b;
}

// Distinct CPUs seen (a bit set of the first 64).
struct Cpus {
    uint64_t bits = 0;
    bool more = false;
    void add(int c) {
        if (c >= 0 && c < 64) bits |= 1ull << c;
        else more = true;
    }
    std::string str() const {
        std::string s;
        for (int c = 0; c < 64; c++)
            if (bits >> c & 1) s += (s.empty() ? "" : ",") + std::to_string(c);
        if (more) s += ",64+";
        return s.empty() ? "?" : s;
    }
};

static cpu_set_t g_orig_mask;
static int g_pin_cpu = 0;

static void pin_thread(bool on) {
    if (on) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(g_pin_cpu, &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0) perror("sched_setaffinity");
    } else {
        if (sched_setaffinity(0, sizeof g_orig_mask, &g_orig_mask) != 0) perror("sched_setaffinity restore");
    }
}

static std::string mask_str(const cpu_set_t& m) {
    std::string s;
    int start = -1;
    for (int c = 0; c <= CPU_SETSIZE; c++) {
        bool in = c < CPU_SETSIZE && CPU_ISSET(c, &m);
        if (in && start < 0) start = c;
        if (!in && start >= 0) {
            if (!s.empty()) s += ",";
            s += std::to_string(start);
            if (c - 1 > start) s += "-" + std::to_string(c - 1);
            start = -1;
        }
    }
    return s;
}

static void fill(char* p, size_t bytes) {
    uint64_t* w = (uint64_t*)p;
    for (size_t i = 0; i < bytes / 8; i++) w[i] = (uint64_t)i * 0x9E3779B97F4A7C15ull + 1;
}

// A 2 MiB-aligned anonymous mapping of `len` bytes with madvise(advice); *rc: 0 or errno.
static char* map_aligned(size_t len, int advice, int* rc) {
    size_t al = 2 * MiB, tot = len + al;
    void* raw = mmap(nullptr, tot, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
        perror("mmap");
        exit(3);
    }
    uintptr_t r = (uintptr_t)raw, a = (r + al - 1) & ~(uintptr_t)(al - 1), end = r + tot, aend = a + len;
    if (a > r) munmap(raw, a - r);
    if (end > aend) munmap((void*)aend, end - aend);
    *rc = madvise((void*)a, len, advice) == 0 ? 0 : errno;
    return (char*)a;
}

// Rss and AnonHugePages (kB) summed over the VMAs overlapping [p, p + len).
static void smaps(const char* when, const char* name, const void* p, size_t len) {
    FILE* f = fopen("/proc/self/smaps", "r");
    if (!f) {
        printf("smaps when=%s buf=%s :: unreadable\n", when, name);
        return;
    }
    uintptr_t a = (uintptr_t)p, b = a + len;
    char line[512];
    bool in = false;
    long rss = 0, ahp = 0, v = 0;
    int vmas = 0, eligible = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') && line[0] != ' ') {
            in = lo < b && hi > a;
            vmas += in;
            continue;
        }
        if (!in) continue;
        if (sscanf(line, "Rss: %ld kB", &v) == 1) rss += v;
        else if (sscanf(line, "AnonHugePages: %ld kB", &v) == 1) ahp += v;
        else if (sscanf(line, "THPeligible: %ld", &v) == 1) eligible += v != 0;
    }
    fclose(f);
    printf("smaps when=%s buf=%s addr_mod_2MiB=%lu :: vmas=%d rss_kB=%ld AnonHugePages_kB=%ld thp_eligible_vmas=%d\n",
           when, name, (unsigned long)(a % (2 * MiB)), vmas, rss, ahp, eligible);
}

enum Api { A_ASYNC = 0, A_CHUNK = 1, A_SYNC = 2 };
static const char* API_NAME[] = {"async", "async4MiB", "sync"};

struct Sample {
    double host_s, ev_s;
};

static Sample copy_once(char* host, char* dev, size_t bytes, bool h2d, int api, cudaStream_t s, cudaEvent_t ea,
                        cudaEvent_t eb) {
    cudaStream_t es = api == A_SYNC ? (cudaStream_t)0 : s;
    cudaMemcpyKind k = h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    double t0 = now_s();
    CK(cudaEventRecord(ea, es));
    if (api == A_SYNC) {
        if (h2d) CK(cudaMemcpy(dev, host, bytes, k));
        else CK(cudaMemcpy(host, dev, bytes, k));
    } else {
        size_t chunk = api == A_CHUNK ? 4 * MiB : bytes;
        for (size_t off = 0; off < bytes; off += chunk) {
            size_t n = std::min(chunk, bytes - off);
            if (h2d) CK(cudaMemcpyAsync(dev + off, host + off, n, k, s));
            else CK(cudaMemcpyAsync(host + off, dev + off, n, k, s));
        }
    }
    CK(cudaEventRecord(eb, es));
    if (api == A_SYNC) CK(cudaEventSynchronize(eb));
    else CK(cudaStreamSynchronize(s));
    double t1 = now_s();
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, ea, eb));
    return {t1 - t0, ms * 1e-3};
}

struct Buf {
    const char* name;
    char* p;
    bool pin;
};

// The probe's round trip (link_latency.rs), 3 blocks of 20 warm-ups + 400 samples.
static void round_trip(const char* flags, bool pin) {
    unsigned int f = 0;
    CK(cudaGetDeviceFlags(&f));
    char *small = nullptr, *dev = nullptr;
    CK(cudaHostAlloc((void**)&small, 4096, cudaHostAllocMapped | cudaHostAllocPortable));
    CK(cudaMalloc((void**)&dev, 1 * MiB));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    pin_thread(pin);
    std::vector<double> all;
    double blk[3];
    Cpus cpus;
    for (int b = 0; b < 3; b++) {
        std::vector<double> v;
        for (int i = 0; i < 420; i++) {
            ((uint64_t*)small)[0] = 0x5eed;
            ((uint64_t*)small)[1] = 0;
            cpus.add(sched_getcpu());
            double t0 = now_s();
            CK(cudaMemcpyAsync(dev, small, 8, cudaMemcpyHostToDevice, s));
            CK(cudaMemcpyAsync(small + 8, dev, 8, cudaMemcpyDeviceToHost, s));
            CK(cudaStreamSynchronize(s));
            double t1 = now_s();
            if (i >= 20) v.push_back((t1 - t0) * 1e9);
        }
        blk[b] = stat_of(v).med;
        all.insert(all.end(), v.begin(), v.end());
    }
    pin_thread(false);
    bool ok = ((uint64_t*)small)[1] == 0x5eed;
    Stat st = stat_of(all);
    printf("rtt flags=%s ctx_flags=0x%x thread=%s :: %s p10=%.0f p90=%.0f blocks=%.0f/%.0f/%.0f cpus=%s%s\n", flags, f,
           pin ? "pinned" : "free", fmt(st, 0).c_str(), st.p10, st.p90, blk[0], blk[1], blk[2], cpus.str().c_str(),
           ok ? "" : " WORD-NOT-BACK");
    CK(cudaStreamDestroy(s));
    CK(cudaFree(dev));
    CK(cudaFreeHost(small));
}

int main(int argc, char** argv) {
    const char* label = argc > 1 ? argv[1] : "run";
    setvbuf(stdout, nullptr, _IOLBF, 0);
    double t_start = now_s();
    sched_getaffinity(0, sizeof g_orig_mask, &g_orig_mask);
    g_pin_cpu = sched_getcpu();
    char thp[128] = "?";
    if (FILE* f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r")) {
        if (!fgets(thp, sizeof thp, f)) strcpy(thp, "?");
        thp[strcspn(thp, "\n")] = 0;
        fclose(f);
    }
    int drv = 0, rtv = 0;
    CK(cudaDriverGetVersion(&drv));
    CK(cudaRuntimeGetVersion(&rtv));
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("start label=%s pid=%d cpu_at_start=%d affinity=%s nprocs_onln=%ld device=\"%s\" driver=%d runtime=%d thp=\"%s\"\n",
           label, (int)getpid(), g_pin_cpu, mask_str(g_orig_mask).c_str(), sysconf(_SC_NPROCESSORS_ONLN), prop.name,
           drv, rtv, thp);

    const size_t big = 256 * MiB;
    char* m1g = (char*)malloc(1024 * MiB);
    if (!m1g) {
        fprintf(stderr, "malloc 1 GiB failed\n");
        return 3;
    }
    fill(m1g, 1024 * MiB);
    int rc_h = 0, rc_n = 0;
    char* huge = map_aligned(big, MADV_HUGEPAGE, &rc_h);
    fill(huge, big);
    char* nohuge = map_aligned(big, MADV_NOHUGEPAGE, &rc_n);
    fill(nohuge, big);
    printf("madvise huge_rc=%d nohuge_rc=%d (0: ok, else errno)\n", rc_h, rc_n);
    smaps("filled", "malloc1G", m1g, 1024 * MiB);
    smaps("filled", "huge", huge, big);
    smaps("filled", "nohuge", nohuge, big);

    char* dev = nullptr;
    CK(cudaMalloc((void**)&dev, big));
    CK(cudaMemset(dev, 0x5a, big));
    CK(cudaDeviceSynchronize());
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t ea, eb;
    CK(cudaEventCreate(&ea));
    CK(cudaEventCreate(&eb));

    Buf bufs[] = {{"malloc1G", m1g, false}, {"malloc1G+pin", m1g, true}, {"huge", huge, false}, {"nohuge", nohuge, false}};
    const int NB = 4;
    size_t sizes[] = {64 * MiB, 256 * MiB};
    for (size_t size : sizes) {
        for (int d = 0; d < 2; d++) {
            bool h2d = d == 0;
            for (int api = 0; api < 3; api++) {
                std::vector<double> host[NB], ev[NB];
                Cpus cpus[NB];
                for (int r = -1; r < REPS; r++) {
                    for (int b = 0; b < NB; b++) {
                        if (bufs[b].pin) pin_thread(true);
                        cpus[b].add(sched_getcpu());
                        Sample x = copy_once(bufs[b].p, dev, size, h2d, api, s, ea, eb);
                        cpus[b].add(sched_getcpu());
                        if (bufs[b].pin) pin_thread(false);
                        if (r >= 0) {
                            host[b].push_back(size / x.host_s / 1e9);
                            ev[b].push_back(size / x.ev_s / 1e9);
                        }
                    }
                }
                for (int b = 0; b < NB; b++) {
                    printf("pageable size_MiB=%zu dir=%s api=%s buf=%s :: host_GBps %s | ev_GBps %s | cpus=%s\n",
                           size / MiB, h2d ? "H2D" : "D2H", API_NAME[api], bufs[b].name,
                           fmt(stat_of(host[b]), 2).c_str(), fmt(stat_of(ev[b]), 2).c_str(), cpus[b].str().c_str());
                }
            }
        }
    }
    // D2H wrote the device's 0x5a bytes into each buffer's first 256 MiB.
    bool ok = true;
    for (int b = 0; b < NB; b++) ok = ok && (unsigned char)bufs[b].p[0] == 0x5a && (unsigned char)bufs[b].p[big - 1] == 0x5a;
    printf("check d2h_bytes_arrived=%s\n", ok ? "yes" : "NO");

    // Pinned control.
    char* pin = nullptr;
    CK(cudaHostAlloc((void**)&pin, big, cudaHostAllocMapped | cudaHostAllocPortable));
    memset(pin, 1, big);
    for (int d = 0; d < 2; d++) {
        std::vector<double> host, ev;
        for (int r = -1; r < REPS; r++) {
            Sample x = copy_once(pin, dev, big, d == 0, A_ASYNC, s, ea, eb);
            if (r >= 0) {
                host.push_back(big / x.host_s / 1e9);
                ev.push_back(big / x.ev_s / 1e9);
            }
        }
        printf("pinned size_MiB=256 dir=%s api=async buf=cudaHostAlloc :: host_GBps %s | ev_GBps %s\n",
               d == 0 ? "H2D" : "D2H", fmt(stat_of(host), 2).c_str(), fmt(stat_of(ev), 2).c_str());
    }
    // Host memcpy between pageable and pinned memory (the staging work), one thread.
    for (int b = 0; b < NB; b++) {
        if (bufs[b].pin) continue;
        for (int d = 0; d < 2; d++) {
            std::vector<double> v;
            for (int r = -1; r < REPS; r++) {
                double t0 = now_s();
                if (d == 0) memcpy(pin, bufs[b].p, big);
                else memcpy(bufs[b].p, pin, big);
                double t1 = now_s();
                if (r >= 0) v.push_back(big / (t1 - t0) / 1e9);
            }
            printf("hostcopy size_MiB=256 dir=%s buf=%s :: GBps %s\n", d == 0 ? "pageable->pinned" : "pinned->pageable",
                   bufs[b].name, fmt(stat_of(v), 2).c_str());
        }
    }
    smaps("end", "malloc1G", m1g, 1024 * MiB);
    smaps("end", "huge", huge, big);
    smaps("end", "nohuge", nohuge, big);
    CK(cudaFreeHost(pin));
    CK(cudaEventDestroy(ea));
    CK(cudaEventDestroy(eb));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(dev));

    // Round trips: the context as the copies used it, then fresh contexts per scheduling flag.
    round_trip("default", false);
    round_trip("default", true);
    struct {
        const char* name;
        unsigned int flag;
    } fl[] = {{"spin", cudaDeviceScheduleSpin},
              {"yield", cudaDeviceScheduleYield},
              {"blocking", cudaDeviceScheduleBlockingSync},
              {"auto", cudaDeviceScheduleAuto}};
    for (auto& x : fl) {
        CK(cudaDeviceReset());
        CK(cudaSetDeviceFlags(x.flag));
        CK(cudaFree(0));
        round_trip(x.name, false);
        round_trip(x.name, true);
    }
    printf("end label=%s cpu_at_end=%d seconds=%.1f\n", label, sched_getcpu(), now_s() - t_start);
    free(m1g);
    munmap(huge, big);
    munmap(nohuge, big);
    return 0;
}
