//! Memory (docs/ARCHITECTURE.md): device allocations checked against free memory (cuMemAlloc, never managed
//! memory), an owning device buffer for the bottleneck-model operations, synchronous and
//! stream-ordered copies and fills, pinned host memory mapped into the GPU's address space (the
//! link probes; docs/INTERCONNECT.md), and the virtual-memory aliases (one physical allocation mapped at two
//! virtual ranges: seed 000, footnotes 3 and 6), and texture objects over linear buffers.

use super::{ck, Gpu, GpuError, GpuResult, Stream};
use cudarc::driver::sys;
use std::ffi::c_void;

/// Bytes kept free on the device by every allocation.
pub const RESERVE_BYTES: u64 = 256 << 20;

/// A device allocation owned by the holder (freed on drop) and its raw address.
pub struct DevBuf {
    pub ptr: u64,
    pub bytes: u64,
}

impl Drop for DevBuf {
    fn drop(&mut self) {
        // SAFETY: the pointer came from cuMemAlloc and is freed once; an allocation of a rebuilt
        // context is already gone and the error is ignored.
        unsafe {
            let _ = sys::cuMemFree_v2(self.ptr);
        }
    }
}

impl Gpu {
    /// (free, total) device memory in bytes.
    pub fn mem_info(&self) -> GpuResult<(u64, u64)> {
        let (mut free, mut total) = (0usize, 0usize);
        unsafe { ck(sys::cuMemGetInfo_v2(&mut free, &mut total), "cuMemGetInfo")? };
        Ok((free as u64, total as u64))
    }

    /// Fail unless `bytes` fit with RESERVE_BYTES to spare.
    pub fn check_free(&self, bytes: u64) -> GpuResult<()> {
        let (free, _) = self.mem_info()?;
        if bytes.saturating_add(RESERVE_BYTES) > free {
            return Err(GpuError::OutOfMemory { asked_bytes: bytes, free_bytes: free.saturating_sub(RESERVE_BYTES) });
        }
        Ok(())
    }

    /// Device allocation (cuMemAlloc, never managed), checked against free memory with 256 MiB kept
    /// in reserve.
    pub fn malloc(&self, bytes: u64) -> GpuResult<u64> {
        self.bind()?;
        self.check_free(bytes)?;
        let mut p = 0;
        unsafe { ck(sys::cuMemAlloc_v2(&mut p, bytes.max(1) as usize), &format!("cuMemAlloc({bytes} bytes)"))? };
        Ok(p)
    }

    /// An owning device buffer of `bytes` (the same checks as `malloc`).
    pub fn alloc_buf(&self, bytes: u64) -> GpuResult<DevBuf> {
        Ok(DevBuf { ptr: self.malloc(bytes)?, bytes })
    }

    pub fn free(&self, ptr: u64) {
        let _ = self.bind();
        unsafe {
            let _ = sys::cuMemFree_v2(ptr);
        }
    }

    pub fn htod<T: Copy>(&self, dst: u64, src: &[T]) -> GpuResult<()> {
        let bytes = std::mem::size_of_val(src);
        unsafe { ck(sys::cuMemcpyHtoD_v2(dst, src.as_ptr() as *const c_void, bytes), "cuMemcpyHtoD") }
    }

    pub fn dtoh<T: Copy + Default>(&self, src: u64, n: usize) -> GpuResult<Vec<T>> {
        let mut v = vec![T::default(); n];
        let bytes = n * std::mem::size_of::<T>();
        unsafe { ck(sys::cuMemcpyDtoH_v2(v.as_mut_ptr() as *mut c_void, src, bytes), "cuMemcpyDtoH")? };
        Ok(v)
    }

    /// Copy `bytes` from host address `src` (pinned or pageable) to the device, synchronously.
    ///
    /// # Safety
    /// `src` must be valid for reads of `bytes` bytes.
    pub unsafe fn htod_raw(&self, dst: u64, src: *const c_void, bytes: usize, what: &str) -> GpuResult<()> {
        unsafe { ck(sys::cuMemcpyHtoD_v2(dst, src, bytes), what) }
    }

    /// Zero `bytes` of device memory (synchronous).
    pub fn memset(&self, dst: u64, bytes: u64) -> GpuResult<()> {
        unsafe { ck(sys::cuMemsetD8_v2(dst, 0, bytes as usize), "cuMemsetD8") }
    }

    /// Stream-ordered host -> device copy from host address `src`.
    ///
    /// # Safety
    /// `src` must be valid for reads of `bytes` bytes until the stream `s` has run the copy.
    pub unsafe fn htod_async(
        &self,
        dst: u64,
        src: *const c_void,
        bytes: usize,
        s: Stream,
        what: &str,
    ) -> GpuResult<()> {
        unsafe { ck(sys::cuMemcpyHtoDAsync_v2(dst, src, bytes, s), what) }
    }

    /// Stream-ordered device -> host copy to host address `dst`.
    ///
    /// # Safety
    /// `dst` must be valid for writes of `bytes` bytes until the stream `s` has run the copy.
    pub unsafe fn dtoh_async(&self, dst: *mut c_void, src: u64, bytes: usize, s: Stream, what: &str) -> GpuResult<()> {
        unsafe { ck(sys::cuMemcpyDtoHAsync_v2(dst, src, bytes, s), what) }
    }

    /// Stream-ordered device -> device copy (the copy engine's path).
    #[allow(
        clippy::not_unsafe_ptr_arg_deref,
        reason = "a stream is an opaque driver handle the driver checks, never read as host memory"
    )]
    pub fn dtod_async(&self, dst: u64, src: u64, bytes: usize, s: Stream) -> GpuResult<()> {
        unsafe { ck(sys::cuMemcpyDtoDAsync_v2(dst, src, bytes, s), "cuMemcpyDtoDAsync") }
    }

    /// Stream-ordered fill of `words` 32-bit words with `value`.
    #[allow(
        clippy::not_unsafe_ptr_arg_deref,
        reason = "a stream is an opaque driver handle the driver checks, never read as host memory"
    )]
    pub fn memset_d32_async(&self, dst: u64, value: u32, words: usize, s: Stream) -> GpuResult<()> {
        unsafe { ck(sys::cuMemsetD32Async(dst, value, words, s), "cuMemsetD32Async") }
    }

    /// `bytes` of physical device memory mapped at two adjacent virtual ranges (the second an
    /// alias of the first), checked against free memory; sizes round up to the granularity.
    pub fn alloc_aliased(&self, bytes: u64) -> GpuResult<Aliased> {
        let mut prop: sys::CUmemAllocationProp = unsafe { std::mem::zeroed() };
        prop.type_ = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = self.ordinal as i32;
        let mut gran = 0usize;
        unsafe {
            ck(
                sys::cuMemGetAllocationGranularity(
                    &mut gran,
                    &prop,
                    sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM,
                ),
                "cuMemGetAllocationGranularity",
            )?;
        }
        let gran = (gran as u64).max(1);
        let size = bytes.max(1).div_ceil(gran) * gran;
        self.check_free(size)?;
        let mut handle = 0;
        unsafe { ck(sys::cuMemCreate(&mut handle, size as usize, &prop, 0), "cuMemCreate")? };
        let mut va = 0;
        let r = unsafe { sys::cuMemAddressReserve(&mut va, 2 * size as usize, gran as usize, 0, 0) };
        if let Err(e) = ck(r, "cuMemAddressReserve") {
            unsafe { sys::cuMemRelease(handle) };
            return Err(e);
        }
        let desc = sys::CUmemAccessDesc {
            location: prop.location,
            flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        let mapped = (|| unsafe {
            ck(sys::cuMemMap(va, size as usize, 0, handle, 0), "cuMemMap")?;
            ck(sys::cuMemMap(va + size, size as usize, 0, handle, 0), "cuMemMap (alias)")?;
            ck(sys::cuMemSetAccess(va, 2 * size as usize, &desc, 1), "cuMemSetAccess")
        })();
        let a = Aliased { va, reserved: 2 * size, handle, size };
        if let Err(e) = mapped {
            a.release();
            return Err(e);
        }
        Ok(a)
    }
}

/// One physical allocation mapped twice: [va, va + size) and its alias [va + size, va + 2 size).
#[derive(Debug, Clone, Copy)]
pub struct Aliased {
    pub va: u64,
    pub reserved: u64,
    pub handle: u64,
    pub size: u64,
}

impl Aliased {
    /// Unmap both ranges, free the reservation and release the physical memory.
    pub fn release(&self) {
        unsafe {
            sys::cuMemUnmap(self.va, self.reserved as usize);
            sys::cuMemAddressFree(self.va, self.reserved as usize);
            sys::cuMemRelease(self.handle);
        }
    }
}

/// Pinned, mapped host memory (freed on drop).
pub struct MappedHost {
    pub ptr: *mut c_void,
    /// The device's pointer to the same bytes.
    pub dev: u64,
    pub bytes: u64,
}

impl MappedHost {
    /// cuMemHostAlloc with DEVICEMAP | PORTABLE, and the device's pointer to it.
    pub fn new(bytes: u64) -> GpuResult<MappedHost> {
        let mut ptr = std::ptr::null_mut();
        let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
        unsafe { ck(sys::cuMemHostAlloc(&mut ptr, bytes as usize, flags), &format!("cuMemHostAlloc({bytes} bytes)"))? };
        let mut dev = 0;
        let r = unsafe { ck(sys::cuMemHostGetDevicePointer_v2(&mut dev, ptr, 0), "cuMemHostGetDevicePointer") };
        if let Err(e) = r {
            unsafe {
                let _ = sys::cuMemFreeHost(ptr);
            }
            return Err(e);
        }
        Ok(MappedHost { ptr, dev, bytes })
    }

    /// The buffer as 64-bit words.
    pub fn words(&mut self) -> &mut [u64] {
        // SAFETY: cuMemHostAlloc returns page-aligned memory of `bytes` bytes owned by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut u64, (self.bytes / 8) as usize) }
    }
}

impl Drop for MappedHost {
    fn drop(&mut self) {
        unsafe {
            let _ = sys::cuMemFreeHost(self.ptr);
        }
    }
}

/// A texture object over a linear buffer of 32-bit unsigned cells (point sampling, element
/// coordinates).
pub fn tex_object_u32(buf: u64, bytes: u64) -> GpuResult<u64> {
    let mut res: sys::CUDA_RESOURCE_DESC = unsafe { std::mem::zeroed() };
    res.resType = sys::CUresourcetype::CU_RESOURCE_TYPE_LINEAR;
    res.res.linear = sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_3 {
        devPtr: buf,
        format: sys::CUarray_format::CU_AD_FORMAT_UNSIGNED_INT32,
        numChannels: 1,
        sizeInBytes: bytes as usize,
    };
    let mut desc: sys::CUDA_TEXTURE_DESC = unsafe { std::mem::zeroed() };
    // Point sampling, element coordinates, integers as they are (CU_TRSF_READ_AS_INTEGER).
    desc.flags = 0x01;
    let mut tex = 0;
    unsafe { ck(sys::cuTexObjectCreate(&mut tex, &res, &desc, std::ptr::null()), "cuTexObjectCreate")? };
    Ok(tex)
}

/// Destroy a texture object made by `tex_object_u32`.
pub fn tex_object_destroy(tex: u64) {
    unsafe {
        let _ = sys::cuTexObjectDestroy(tex);
    }
}
