// Host <-> device link kernels (docs/INTERCONNECT.md; the test shapes follow nvbandwidth's host_to_device_memcpy_sm,
// device_to_host_memcpy_sm and host_device_latency_sm, written here from their descriptions).
// Every parameter is 64-bit (src/gpu/launch.rs launches with u64 arguments).

__device__ __forceinline__ u64 link_globaltimer() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Copies words i, i + stride, ... below n16 of src to dst: four words in flight per thread,
// then the tail. Either side may be mapped pinned host memory.
__device__ __forceinline__ void link_copy_strided(const uint4* src, uint4* dst, u64 i, u64 stride, u64 n16) {
    for (; i + 3 * stride < n16; i += 4 * stride) {
        uint4 a = src[i];
        uint4 b = src[i + stride];
        uint4 c = src[i + 2 * stride];
        uint4 d = src[i + 3 * stride];
        dst[i] = a;
        dst[i + stride] = b;
        dst[i + 2 * stride] = c;
        dst[i + 3 * stride] = d;
    }
    for (; i < n16; i += stride) {
        dst[i] = src[i];
    }
}

// Grid-stride copy of n16 16-byte words; either side may be mapped pinned host memory (the
// pointer cuMemHostGetDevicePointer gives), so the SMs drive the link. Four words in flight per
// thread, then the tail.
extern "C" __global__ void link_copy(const uint4* src, uint4* dst, u64 n16) {
    u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    link_copy_strided(src, dst, i, stride, n16);
}

// Both directions in one kernel (nvbandwidth's split-warp bidirectional SM copy, written here from
// its README's description): even warps copy src0 -> dst0, odd warps src1 -> dst1, n16 16-byte
// words each way; a pair of warps walks both arrays grid-strided, four words in flight per thread.
// One kernel, so both directions start and end together and its time is the test's.
extern "C" __global__ void link_copy_split(const uint4* src0, uint4* dst0, const uint4* src1, uint4* dst1, u64 n16) {
    const u64 warp = (blockIdx.x * (u64)blockDim.x + threadIdx.x) / 32;
    const u64 lane = threadIdx.x % 32;
    const uint4* src = (warp & 1) ? src1 : src0;
    uint4* dst = (warp & 1) ? dst1 : dst0;
    const u64 stride = (u64)gridDim.x * blockDim.x / 2;
    u64 i = (warp / 2) * 32 + lane;
    link_copy_strided(src, dst, i, stride, n16);
}

// Holds its stream until the host writes a non-zero word at `flag` (mapped pinned host memory),
// so copies enqueued behind it start together and the enqueueing is not timed; gives up after
// timeout_ns so a lost flag cannot hang the GPU.
extern "C" __global__ void link_spin(const u32* flag, u64 timeout_ns) {
    const volatile u32* f = flag;
    const u64 t0 = link_globaltimer();
    while (*f == 0) {
        if (link_globaltimer() - t0 > timeout_ns) {
            break;
        }
    }
}

// One thread chases `hops` dependent pointers starting at `start` with ld.global.cv (no cached
// copy is used: every load crosses the link when the chain lies in host memory). out[0]: the
// whole chase's %globaltimer ns, out[1]: its clock64 cycles, out[2]: the last pointer (keeps
// the chain live).
extern "C" __global__ void link_chase(u64 start, u64 hops, u64* out) {
    u64 p = start;
    const u64 t0 = link_globaltimer();
    long long c0 = clock64();
    for (u64 i = 0; i < hops; i++) {
        u64 next;
        asm volatile("ld.global.cv.u64 %0, [%1];" : "=l"(next) : "l"(p) : "memory");
        p = next;
    }
    long long c1 = clock64();
    const u64 t1 = link_globaltimer();
    out[0] = t1 - t0;
    out[1] = (u64)(c1 - c0);
    out[2] = p;
}
