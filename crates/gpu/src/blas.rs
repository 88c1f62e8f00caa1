//! The one cuBLAS wrapper (docs/ARCHITECTURE.md; seed 003's FLOP ceiling and the model's matrix products):
//! row-major C[m x n] = A[m x k] @ B[k x n]; fp32 through cublasSgemm in the default math mode (no
//! TF32), fp16 and bf16 through cublasGemmEx with fp32 accumulation. Used by the peak probe, the
//! ops' checks and the model's matrix operations.

use super::{GpuError, GpuResult, Stream};
use cudarc::cublas::sys as cb;
use memscope_model::bottleneck::Dtype;
use std::ffi::c_void;

fn cbk(s: cb::cublasStatus_t, call: &str) -> GpuResult<()> {
    if s == cb::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(GpuError::Driver { call: call.into(), code: format!("{s:?}"), text: "cuBLAS call failed".into() })
    }
}

/// A cuBLAS handle bound to one stream (destroyed on drop).
pub struct Blas {
    handle: cb::cublasHandle_t,
}

// SAFETY: the handle is used by one thread at a time with the context current.
unsafe impl Send for Blas {}

impl Blas {
    /// A handle whose work goes to `stream` (null: the legacy default stream).
    pub fn new(stream: Stream) -> GpuResult<Blas> {
        if !unsafe { cb::is_culib_present() } {
            return Err(GpuError::invalid(
                "cuBLAS (libcublas.so) cannot be loaded: install the CUDA toolkit's cuBLAS and put its lib folder on LD_LIBRARY_PATH",
            ));
        }
        let mut handle: cb::cublasHandle_t = std::ptr::null_mut();
        unsafe { cbk(cb::cublasCreate_v2(&mut handle), "cublasCreate")? };
        let b = Blas { handle };
        if !stream.is_null() {
            unsafe { cbk(cb::cublasSetStream_v2(b.handle, stream as cb::cudaStream_t), "cublasSetStream")? };
        }
        Ok(b)
    }

    /// Row-major C[m x n] = A[m x k] @ B[k x n] (fp32: Sgemm, no TF32; fp16/bf16: GemmEx with
    /// fp32 accumulation), computed as the column-major C^T[n x m] = B^T[n x k] A^T[k x m].
    #[allow(clippy::too_many_arguments)]
    pub fn gemm(&self, dtype: Dtype, m: u64, k: u64, n: u64, a: u64, b: u64, c: u64) -> GpuResult<()> {
        let (m, k, n) = (m as i32, k as i32, n as i32);
        let op = cb::cublasOperation_t::CUBLAS_OP_N;
        let (alpha, beta) = (1.0f32, 0.0f32);
        // SAFETY: pointers are live device buffers of the stated sizes.
        unsafe {
            match dtype {
                Dtype::Fp32 => cbk(
                    cb::cublasSgemm_v2(
                        self.handle,
                        op,
                        op,
                        n,
                        m,
                        k,
                        &alpha,
                        b as *const f32,
                        n,
                        a as *const f32,
                        k,
                        &beta,
                        c as *mut f32,
                        n,
                    ),
                    "cublasSgemm",
                ),
                Dtype::Fp16 | Dtype::Bf16 => {
                    let t =
                        if dtype == Dtype::Fp16 { cb::cudaDataType::CUDA_R_16F } else { cb::cudaDataType::CUDA_R_16BF };
                    cbk(
                        cb::cublasGemmEx(
                            self.handle,
                            op,
                            op,
                            n,
                            m,
                            k,
                            &alpha as *const f32 as *const c_void,
                            b as *const c_void,
                            t,
                            n,
                            a as *const c_void,
                            t,
                            k,
                            &beta as *const f32 as *const c_void,
                            c as *mut c_void,
                            t,
                            n,
                            cb::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                            cb::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                        ),
                        "cublasGemmEx",
                    )
                }
            }
        }
    }
}

impl Drop for Blas {
    fn drop(&mut self) {
        // SAFETY: the handle was created by us and is destroyed once.
        unsafe {
            let _ = cb::cublasDestroy_v2(self.handle);
        }
    }
}
