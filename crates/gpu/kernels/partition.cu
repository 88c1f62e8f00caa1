// partition.cu: the L2 partition bit over whole 2 MiB pages (crates/cuda/src/probes/partition.rs,
// docs/L2_SLICES.md "The partition probe"). The host writes, in each page, one cycle of absolute
// pointers over all 16384 lines of the page (one pointer word per line, random order) and a small
// warm-up cycle in another buffer. Per page and lap:
//   partition_prime adds 0 to the pointer word of every line of the page with global reductions:
//     they are performed at the line's home L2 slice, so every line is L2-resident at home and no
//     partition holds a copy made by an earlier lap;
//   partition_lap runs on the chosen SM (every block checks %smid; the first there takes the
//     ticket, the others leave), one thread: a reduction of 0 into the start line's second word
//     (the page's TLB entry without a copy of the line), a recorded lap of the warm-up cycle (the
//     same code, so the lap's instructions are warm), then one recorded lap of the page's cycle.
// Every line is touched once in the lap: its cycles are a first touch, a near hit when its home
// slice is in this SM's partition, a far hit otherwise. A recorded lap keeps, per line (indexed by
// its place in the page), the clock64 cycles of its hop (saturated to 16 bits) in shared memory (a
// shared store of the loaded pointer makes the thread wait for the load before the clock is read)
// and writes them out after the lap. All parameters are 64-bit so the host passes one array of u64.

#define PARTITION_LINES 16384
#define PARTITION_WARM_LINES 64

__device__ __forceinline__ u64 pt_ld_cg(u64 p) { u64 v; asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(v) : "l"(p)); return v; }

// One recorded lap of n hops from p over lines of the buffer at base: rec[line] = cycles of the hop
// that loaded that line. One copy of the code for both laps (noinline).
__device__ __noinline__ u64 pt_recorded_lap(u64 p, u64 base, u32 n, unsigned short* rec, volatile u64* sink) {
    u64 prev = clk64();
    for (u32 i = 0; i < n; i++) {
        u32 line = (u32)((p - base) >> 7);
        p = pt_ld_cg(p);
        *sink = p;
        u64 now = clk64();
        u64 d = now - prev;
        rec[line & (PARTITION_LINES - 1)] = (unsigned short)(d > 65535ull ? 65535ull : d);
        prev = now;
    }
    return p;
}

// Reductions (adds of 0) on the pointer word of each of the page's lines.
extern "C" __global__ void partition_prime(u64 page) {
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < PARTITION_LINES; i += gridDim.x * blockDim.x)
        asm volatile("red.global.add.u64 [%0], %1;" :: "l"(page + (u64)i * 128), "l"(0ull) : "memory");
}

// out: PARTITION_LINES u16 cycles indexed by line; status (4 words): [final pointer of the lap,
// final pointer of the warm-up lap, smid, 1].
extern "C" __global__ void partition_lap(u64 page, u64 start, u64 warm, u64 target_sm, u32* ticket,
                                         unsigned short* out, u64* status) {
    __shared__ unsigned short rec[PARTITION_LINES];
    __shared__ unsigned short warm_rec[PARTITION_WARM_LINES];  // the warm-up lines are its lines 0..63
    __shared__ u64 sink[1];
    __shared__ int won;
    if (smid() != (u32)target_sm) return;
    if (threadIdx.x == 0) won = (atomicAdd(ticket, 1u) == 0u);
    __syncthreads();
    if (!won || threadIdx.x != 0) return;
    asm volatile("red.global.add.u64 [%0], %1;" :: "l"(start + 8), "l"(0ull) : "memory");
    __threadfence();
    volatile u64* vs = sink;
    u64 w = pt_recorded_lap(warm, warm, PARTITION_WARM_LINES, warm_rec, vs);
    u64 p = pt_recorded_lap(start, page, PARTITION_LINES, rec, vs);
    for (u32 i = 0; i < PARTITION_LINES; i++) out[i] = rec[i];
    status[0] = p; status[1] = w; status[2] = smid(); status[3] = 1;
}
