//! Chunked storage: elements at stable addresses, found by index (the
//! registry's name records and member records live here and never move).

use std::mem::MaybeUninit;
use std::ptr;

/// Chunk `c` holds 16, 16, 32, …, 512 elements for `c` < 7 (1,024 in all),
/// then 1,024 each: little slack for small registries, at most 1,023 spare
/// elements for large ones, and no element ever moves.
pub(super) const fn chunk_len(c: usize) -> usize {
    if c == 0 {
        16
    } else if c < 7 {
        8 << c
    } else {
        1024
    }
}

/// The chunk and offset of element `i`.
#[inline]
pub(super) fn locate(i: usize) -> (usize, usize) {
    if i < 16 {
        (0, i)
    } else if i < 1024 {
        let b = i.ilog2() as usize;
        (b - 3, i - (1 << b))
    } else {
        ((i >> 10) + 6, i & 1023)
    }
}

/// Elements that never move: chunks are allocated once and never
/// reallocated, so a reader may hold an element's address while the writer
/// adds more. Only the writer (under the registry's lock) finds elements by
/// index; readers reach name records by the address in a table slot. Holds
/// raw `MaybeUninit<T>`: whoever writes an element drops it.
pub(super) struct Chunked<T> {
    /// Chunk `c` has `chunk_len(c)` elements (a leaked boxed slice).
    pub(super) chunks: Vec<*mut MaybeUninit<T>>,
}

// SAFETY: the chunks are owned memory holding `T`s; sending the store sends
// them.
unsafe impl<T: Send> Send for Chunked<T> {}

impl<T> Chunked<T> {
    pub(super) fn new() -> Self {
        Chunked { chunks: Vec::new() }
    }

    /// Element `i`, which [`ensure`](Self::ensure) made addressable.
    #[inline]
    pub(super) fn at(&self, i: usize) -> *mut MaybeUninit<T> {
        let (c, off) = locate(i);
        // SAFETY: `off < chunk_len(c)`, the length chunk `c` was allocated
        // with (indexing `chunks` panics if it was not).
        unsafe { self.chunks[c].add(off) }
    }

    /// Makes element `i` addressable.
    pub(super) fn ensure(&mut self, i: usize) {
        let (c, _) = locate(i);
        while self.chunks.len() <= c {
            let chunk: Box<[MaybeUninit<T>]> = (0..chunk_len(self.chunks.len()))
                .map(|_| MaybeUninit::uninit())
                .collect();
            self.chunks
                .push(Box::into_raw(chunk) as *mut MaybeUninit<T>);
        }
    }
}

impl<T> Drop for Chunked<T> {
    /// Frees the chunks; the elements' owners have dropped them already.
    fn drop(&mut self) {
        for (c, &p) in self.chunks.iter().enumerate() {
            let chunk = ptr::slice_from_raw_parts_mut(p, chunk_len(c));
            // SAFETY: allocated in `ensure` as a boxed slice of this length.
            drop(unsafe { Box::from_raw(chunk) });
        }
    }
}
