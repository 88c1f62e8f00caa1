// bw_tma.cu: the `bw` probe's copy through the Hopper bulk copy engine (TMA, sm_90): one thread per
// block moves `chunk`-byte pieces global -> shared (cp.async.bulk, completing on an mbarrier) and
// shared -> global (cp.async.bulk bulk_group), `stages` shared buffers deep, grid-stride over the
// chunks. Needs nbytes % chunk == 0, chunk % 16 == 0, stages >= 2, stages * chunk bytes of dynamic
// shared memory. Kept apart from bw.cu so a driver that rejects these instructions leaves the
// other bandwidth kernels usable.

__device__ __forceinline__ u32 smem_addr(const void* p) {
    u32 r;
    asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
    return r;
}

__device__ __forceinline__ void bulk_load(u32 dst, const unsigned char* src, u32 bytes, u32 bar) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}

// Wait for the phase of `parity` to complete; false after 100 ms (a copy that never arrives: the
// kernel gives up, and the probe's copy check then reports the candidate wrong instead of hanging).
__device__ __forceinline__ bool mbar_wait(u32 bar, u32 parity) {
    const u64 t0 = gtimer();
    for (;;) {
        u32 done;
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
        if (done) return true;
        if (gtimer() - t0 > 100000000ull) return false;
    }
}

extern "C" __global__ void bw_copy_tma(const unsigned char* a, unsigned char* b, u64 nbytes, u64 chunk, u64 stages) {
    extern __shared__ __align__(128) unsigned char stage_buf[];
    __shared__ __align__(8) u64 bars[8];
    if (threadIdx.x != 0) return;
    const u64 nchunks = nbytes / chunk;
    const u32 S = (u32)stages, C = (u32)chunk;
    const u32 sbase = smem_addr(stage_buf), bbase = smem_addr(bars);
    for (u32 s = 0; s < S; s++) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bbase + 8 * s) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    const u64 first = blockIdx.x, G = gridDim.x;
    for (u32 s = 0; s < S; s++) {
        const u64 j = first + (u64)s * G;
        if (j >= nchunks) break;
        bulk_load(sbase + s * C, a + j * chunk, C, bbase + 8 * s);
    }
    for (u64 k = 0;; k++) {
        const u64 j = first + k * G;
        if (j >= nchunks) break;
        const u32 s = (u32)(k % S);
        if (!mbar_wait(bbase + 8 * s, (u32)((k / S) & 1))) break;
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" :: "l"(b + j * chunk), "r"(sbase + s * C), "r"(C) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        if (k >= 1) {
            // The store of chunk k-1 has read its buffer: refill that buffer with chunk k-1+S.
            asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
            const u64 jj = first + (k - 1 + S) * G;
            const u32 ss = (u32)((k - 1) % S);
            if (jj < nchunks) bulk_load(sbase + ss * C, a + jj * chunk, C, bbase + 8 * ss);
        }
    }
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
