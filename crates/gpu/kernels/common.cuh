// The prelude of every kernel file (crates/gpu/src/registry.rs prepends it): 64- and 32-bit
// unsigned types, the SM's cycle counter, the global nanosecond timer, the SM id, and a generic
// pointer's shared-window address.
typedef unsigned long long u64;
typedef unsigned int u32;

__device__ __forceinline__ u64 clk64() { u64 t; asm volatile("mov.u64 %0, %%clock64;" : "=l"(t) :: "memory"); return t; }
__device__ __forceinline__ u64 gtimer() { u64 t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) :: "memory"); return t; }
__device__ __forceinline__ u32 smid() { u32 r; asm volatile("mov.u32 %0, %%smid;" : "=r"(r)); return r; }
__device__ __forceinline__ u32 saddr(const void* p) {
    u32 r;
    asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
    return r;
}
