//! Memory of `cache::Cache` (speed only, no seed): arrays aligned to host cache lines, and large
//! ones to 2 MiB so that transparent huge pages back them.

/// A vector whose element `o` starts on a 64-byte boundary (host cache line).
#[derive(Debug, Clone)]
pub(crate) struct Aligned<T> {
    v: Vec<T>,
    o: usize,
    /// `o` in bytes.
    ob: usize,
}

impl<T: Copy> Aligned<T> {
    pub(crate) fn new(x: T, n: usize) -> Self {
        let sz = std::mem::size_of::<T>();
        // large arrays start on a 2 MiB boundary so all of them lies in transparent huge pages
        const HUGE: usize = 2 << 20;
        let align = if n * sz >= HUGE / 8 { HUGE } else { 64 };
        let pad = if align == HUGE { 2 * HUGE / sz } else { 64 / sz };
        let v = huge_vec(x, n + pad);
        let misalign = v.as_ptr() as usize % align;
        let o = if misalign == 0 || !misalign.is_multiple_of(sz) { 0 } else { (align - misalign) / sz };
        Aligned { v, o, ob: o * sz }
    }
    #[inline(always)]
    pub(crate) fn s(&self, i: usize, n: usize) -> &[T] {
        &self.v[self.o + i..self.o + i + n]
    }
    #[inline(always)]
    pub(crate) fn s_mut(&mut self, i: usize, n: usize) -> &mut [T] {
        &mut self.v[self.o + i..self.o + i + n]
    }
    /// Element `i` (below the `n` of `new`: the caller checks) as a pointer.
    #[inline(always)]
    pub(crate) fn block(&self, i: usize) -> *const T {
        self.v.as_ptr().wrapping_add(self.o + i)
    }
    #[inline(always)]
    pub(crate) fn block_mut(&mut self, i: usize) -> *mut T {
        self.v.as_mut_ptr().wrapping_add(self.o + i)
    }
    /// `block_mut(i)` as a byte pointer.
    #[inline(always)]
    pub(crate) fn bytes_mut(&mut self, i: usize) -> *mut u8 {
        (self.v.as_mut_ptr() as *mut u8).wrapping_add(self.ob + i * std::mem::size_of::<T>())
    }
    #[inline(always)]
    pub(crate) fn ptr(&self, i: usize) -> *const i8 {
        self.v.as_ptr().wrapping_add(self.o + i) as *const i8
    }
    pub(crate) fn fill(&mut self, x: T) {
        self.v.fill(x);
    }
}

/// A vector of `n` copies of `x` whose pages are marked for transparent huge pages before first
/// touch (Linux): the simulator's state is accessed at random, and 4 KiB host pages would make
/// every access a host TLB miss too.
pub fn huge_vec<T: Copy>(x: T, n: usize) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(n);
    #[cfg(target_os = "linux")]
    {
        let bytes = n * std::mem::size_of::<T>();
        const HUGE: usize = 2 << 20;
        if bytes >= HUGE {
            let start = v.as_ptr() as usize;
            let aligned = start.next_multiple_of(HUGE);
            let end = (start + bytes) / HUGE * HUGE;
            if end > aligned {
                // SAFETY: the range lies inside the allocation just made; madvise only changes
                // how the kernel backs it, and failure is harmless (we ignore the result).
                unsafe {
                    libc::madvise(aligned as *mut libc::c_void, end - aligned, libc::MADV_HUGEPAGE);
                }
            }
        }
    }
    v.resize(n, x);
    v
}
