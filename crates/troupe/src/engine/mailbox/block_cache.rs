//! A small per-thread cache of freed mailbox blocks.
//!
//! Why: every actor that gets a message allocates its mailbox's first block
//! (31 slots, about 544 bytes with 16-byte envelopes), and frees it when it
//! is finalized. At glibc that chunk size costs a few hundred instructions
//! per allocation and free once its thread cache (7 chunks a size) is
//! exhausted, which a tree of actors being created and stopped exhausts
//! (`actor_creation`: +19.6% instructions per actor against 06deb1f, whose
//! first block was 256 bytes; `bench/results/2026-12-03-engine`). This
//! cache keeps up to `CAP` freed blocks per thread and hands them back to
//! the next block allocation of the same layout on that thread.
//!
//! Invariants:
//! * an entry is a block allocation of exactly its stored layout, owned by
//!   the cache alone (no list, no sender, no consumer refers to it);
//! * the cache is this thread's only (a `thread_local!`, never shared), so
//!   it takes no lock and no atomic;
//! * at most `CAP` entries; a free that finds it full goes to the global
//!   allocator, and so do allocations and frees during the thread's
//!   teardown (after the cache itself was dropped, which frees its entries).
//!
//! A block taken from the cache is zeroed by its taker as a fresh one is
//! (`Block::new`), so a cached block carries nothing over. Not under loom:
//! loom's blocks are boxed (`unbounded.rs`).

use std::alloc::{alloc, dealloc, Layout};
use std::cell::RefCell;
use std::ptr;

/// Blocks kept per thread: about 8.5 KB at 544 bytes a block.
const CAP: usize = 16;

struct Cache {
    len: usize,
    blocks: [(*mut u8, usize, usize); CAP],
}

impl Cache {
    const fn new() -> Self {
        Cache {
            len: 0,
            blocks: [(ptr::null_mut(), 0, 0); CAP],
        }
    }

    /// The most recently cached block of `layout`, if any.
    #[inline]
    fn take(&mut self, layout: Layout) -> Option<*mut u8> {
        let want = (layout.size(), layout.align());
        let found = self.blocks[..self.len]
            .iter()
            .rposition(|&(_, size, align)| (size, align) == want)?;
        let top = self.len - 1;
        self.blocks.swap(found, top);
        self.len = top;
        Some(self.blocks[top].0)
    }

    /// Keeps `block` (of `layout`) unless the cache is full.
    #[inline]
    fn give(&mut self, block: *mut u8, layout: Layout) -> bool {
        if self.len == CAP {
            return false;
        }
        self.blocks[self.len] = (block, layout.size(), layout.align());
        self.len += 1;
        true
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        for &(block, size, align) in &self.blocks[..self.len] {
            // SAFETY: every entry is an allocation of exactly this layout
            // (module invariants), owned by the cache, and freed once: the
            // cache is being dropped.
            unsafe { dealloc(block, Layout::from_size_align_unchecked(size, align)) };
        }
        self.len = 0;
    }
}

thread_local! {
    static CACHE: RefCell<Cache> = const { RefCell::new(Cache::new()) };
}

/// Memory for one block of `layout` (non-zero size): a cached block of this
/// thread's, or the global allocator's. Null if the allocator fails.
#[inline]
pub(super) fn alloc_block(layout: Layout) -> *mut u8 {
    let cached = CACHE
        .try_with(|c| c.try_borrow_mut().ok().and_then(|mut c| c.take(layout)))
        .ok()
        .flatten();
    match cached {
        Some(block) => block,
        // SAFETY: the caller's layout has a non-zero size.
        None => unsafe { alloc(layout) },
    }
}

/// Gives back one block's memory, allocated by [`alloc_block`] with
/// `layout`, whose contents need no drop.
///
/// # Safety
/// `block` came from `alloc_block(layout)` and nothing refers to it any
/// more.
#[inline]
pub(super) unsafe fn free_block(block: *mut u8, layout: Layout) {
    let kept = CACHE
        .try_with(|c| c.try_borrow_mut().is_ok_and(|mut c| c.give(block, layout)))
        .unwrap_or(false);
    if !kept {
        // SAFETY: caller contract: an allocation of `layout`, unreferenced.
        unsafe { dealloc(block, layout) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_freed_block_is_handed_back_to_the_same_layout_only() {
        let a = Layout::from_size_align(544, 8).unwrap();
        let b = Layout::from_size_align(1040, 8).unwrap();
        let x = alloc_block(a);
        assert!(!x.is_null());
        // SAFETY: `x` is `alloc_block(a)`'s, unreferenced.
        unsafe { free_block(x, a) };
        let y = alloc_block(b);
        assert_ne!(x, y, "another layout does not get the cached block");
        assert_eq!(alloc_block(a), x, "the same layout does");
        // SAFETY: both ours, unreferenced.
        unsafe {
            free_block(x, a);
            free_block(y, b);
        }
    }

    #[test]
    fn the_cache_holds_at_most_cap_blocks() {
        let a = Layout::from_size_align(64, 8).unwrap();
        let blocks: Vec<_> = (0..CAP + 4).map(|_| alloc_block(a)).collect();
        for &p in &blocks {
            // SAFETY: each ours, unreferenced, freed once.
            unsafe { free_block(p, a) };
        }
        let kept = CACHE.with(|c| c.borrow().len);
        assert_eq!(kept, CAP);
        // The cache gives back the ones it kept, newest first.
        let again: Vec<_> = (0..CAP).map(|_| alloc_block(a)).collect();
        assert!(again.iter().all(|p| blocks.contains(p)));
        for p in again {
            // SAFETY: as above.
            unsafe { free_block(p, a) };
        }
    }
}
