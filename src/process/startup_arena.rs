//! The process's memory allocator (`main.rs` installs it): the first allocations come from a
//! fixed arena by bumping a pointer, the rest from the system allocator.
//!
//! Why our own: a cache hit makes about 150 small allocations and as many frees, then exits
//! within a millisecond. musl's allocator (the static Linux build's) spends a few hundred
//! instructions on each and maps and unmaps pages as it goes: about a third of the hit's
//! instructions. Here each costs a compare-and-swap in 256 KiB of zeroed memory that the binary
//! reserves (`.bss`: no file size, and only the pages touched are ever mapped): no system call,
//! no bookkeeping. A general-purpose allocator crate (mimalloc) was measured slower on the hit
//! than musl's own: its start-up costs more than it saves (bench/RESULTS.md, section 9).
//!
//! Freeing gives memory back to the arena only when it is the arena's last allocation (most of
//! a short run's temporaries go that way); a reallocation of the last allocation grows or
//! shrinks in place. Once the arena is used up — a login, a renewal, anything long — every
//! allocation goes to the system allocator, exactly as without the arena, and the arena's own
//! memory is never returned: at most 256 KiB for the process's life. Everything is lock-free
//! (the keyring and the HTTP client allocate on threads of their own).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The arena's size: a cache hit uses a small part of it; a login outgrows it at once.
const ARENA_BYTES: usize = 256 * 1024;

/// An allocator that serves from a fixed arena first, then from [`System`].
pub struct StartupArena {
    bytes: ArenaBytes,
    /// The offset of the arena's first free byte.
    next: AtomicUsize,
}

/// The arena's memory, aligned for any allocation the program makes.
#[repr(C, align(4096))]
struct ArenaBytes(UnsafeCell<[u8; ARENA_BYTES]>);

// SAFETY: the bytes are handed out in disjoint ranges, each to one caller (`next` is only ever
// moved by compare-and-swap); nothing reads or writes them through the arena itself.
unsafe impl Sync for ArenaBytes {}

impl StartupArena {
    pub const fn new() -> StartupArena {
        StartupArena {
            bytes: ArenaBytes(UnsafeCell::new([0; ARENA_BYTES])),
            next: AtomicUsize::new(0),
        }
    }

    fn base(&self) -> usize {
        self.bytes.0.get() as usize
    }

    /// The offset of `ptr` in the arena, if it is one of the arena's.
    fn offset_of(&self, ptr: *mut u8) -> Option<usize> {
        (ptr as usize)
            .checked_sub(self.base())
            .filter(|offset| *offset < ARENA_BYTES)
    }

    /// Moves the first free byte from `from` to `to`, if nothing was allocated meanwhile.
    /// Release: whatever the freeing thread wrote to the bytes it gives back happens before the
    /// thread that is handed them next (which acquires `next`) writes them.
    fn move_next(&self, from: usize, to: usize) -> bool {
        self.next
            .compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

impl Default for StartupArena {
    fn default() -> Self {
        StartupArena::new()
    }
}

// The three methods are kept out of line: inlined into every allocation site by LTO, they grew
// the binary's code by a tenth for nothing.
unsafe impl GlobalAlloc for StartupArena {
    #[inline(never)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let base = self.base();
        let mut next = self.next.load(Ordering::Acquire);
        loop {
            // `align` is a power of two (Layout guarantees it).
            let start = (base + next).next_multiple_of(layout.align()) - base;
            let end = match start.checked_add(layout.size()) {
                Some(end) if end <= ARENA_BYTES => end,
                // SAFETY: the caller's layout, passed on unchanged.
                _ => return unsafe { System.alloc(layout) },
            };
            match self
                .next
                .compare_exchange_weak(next, end, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return (base + start) as *mut u8,
                Err(seen) => next = seen,
            }
        }
    }

    #[inline(never)]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        match self.offset_of(ptr) {
            // The last allocation comes back to the arena; any other stays used.
            Some(offset) => {
                self.move_next(offset + layout.size(), offset);
            }
            // SAFETY: `ptr` came from `System.alloc` with this layout (it is not the arena's).
            None => unsafe { System.dealloc(ptr, layout) },
        }
    }

    #[inline(never)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Some(offset) = self.offset_of(ptr) else {
            // SAFETY: `ptr` came from `System.alloc` with `layout`; the caller's new size.
            return unsafe { System.realloc(ptr, layout, new_size) };
        };
        // The last allocation grows or shrinks where it is.
        let fits = offset
            .checked_add(new_size)
            .is_some_and(|end| end <= ARENA_BYTES);
        if fits && self.move_next(offset + layout.size(), offset + new_size) {
            return ptr;
        }
        // Another one shrinks where it is (its tail stays used).
        if new_size <= layout.size() {
            return ptr;
        }
        // SAFETY: the caller guarantees a valid size and alignment for the new layout.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: a layout of non-zero size (it is larger than the old one).
        let moved = unsafe { self.alloc(new_layout) };
        if !moved.is_null() {
            // SAFETY: both blocks are valid for `layout.size()` bytes, and distinct: the new one
            // was handed out while the old one is still allocated.
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, moved, layout.size());
                self.dealloc(ptr, layout);
            }
        }
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    #[test]
    fn allocations_are_aligned_disjoint_and_writable() {
        let arena = StartupArena::new();
        let mut blocks = Vec::new();
        for (size, align) in [
            (1, 1),
            (24, 8),
            (3, 1),
            (64, 64),
            (7, 2),
            (100, 16),
            (5, 4096),
        ] {
            let ptr = unsafe { arena.alloc(layout(size, align)) };
            assert_eq!(ptr as usize % align, 0, "{size}/{align}");
            assert!(arena.offset_of(ptr).is_some(), "from the arena");
            unsafe { std::ptr::write_bytes(ptr, blocks.len() as u8, size) };
            blocks.push((ptr, size));
        }
        for (index, (ptr, size)) in blocks.iter().enumerate() {
            let bytes = unsafe { std::slice::from_raw_parts(*ptr, *size) };
            assert!(
                bytes.iter().all(|b| *b == index as u8),
                "block {index} was overwritten"
            );
        }
    }

    #[test]
    fn only_the_last_allocation_returns_to_the_arena() {
        let arena = StartupArena::new();
        let a = unsafe { arena.alloc(layout(32, 8)) };
        let b = unsafe { arena.alloc(layout(32, 8)) };
        // Freeing `a` (not the last) gives nothing back: the next block follows `b`.
        unsafe { arena.dealloc(a, layout(32, 8)) };
        let c = unsafe { arena.alloc(layout(32, 8)) };
        assert_eq!(c as usize, b as usize + 32);
        // Freeing the last one does: the next takes its place.
        unsafe { arena.dealloc(c, layout(32, 8)) };
        let d = unsafe { arena.alloc(layout(32, 8)) };
        assert_eq!(d, c);
    }

    #[test]
    fn reallocation_grows_the_last_in_place_and_moves_the_others_with_their_bytes() {
        let arena = StartupArena::new();
        let a = unsafe { arena.alloc(layout(16, 8)) };
        unsafe { std::ptr::write_bytes(a, 0xAB, 16) };
        let grown = unsafe { arena.realloc(a, layout(16, 8), 64) };
        assert_eq!(grown, a, "the last allocation grows in place");
        let b = unsafe { arena.alloc(layout(8, 8)) };
        let moved = unsafe { arena.realloc(a, layout(64, 8), 128) };
        assert_ne!(moved, a, "not the last any more: moved");
        assert!(moved as usize > b as usize);
        let bytes = unsafe { std::slice::from_raw_parts(moved, 16) };
        assert!(bytes.iter().all(|b| *b == 0xAB), "the bytes moved with it");
        // Shrinking a block that is not the last keeps it where it is.
        assert_eq!(unsafe { arena.realloc(b, layout(8, 8), 4) }, b);
    }

    #[test]
    fn a_used_up_arena_hands_over_to_the_system_allocator() {
        let arena = StartupArena::new();
        let big = unsafe { arena.alloc(layout(ARENA_BYTES - 100, 8)) };
        assert!(arena.offset_of(big).is_some());
        let outside = unsafe { arena.alloc(layout(1000, 8)) };
        assert!(!outside.is_null());
        assert!(
            arena.offset_of(outside).is_none(),
            "from the system allocator"
        );
        unsafe { std::ptr::write_bytes(outside, 1, 1000) };
        // A block of the arena that cannot grow in place moves out to the system allocator.
        let small = unsafe { arena.alloc(layout(50, 8)) };
        let moved = unsafe { arena.realloc(small, layout(50, 8), 4000) };
        assert!(arena.offset_of(moved).is_none());
        unsafe {
            arena.dealloc(moved, layout(4000, 8));
            arena.dealloc(outside, layout(1000, 8));
            arena.dealloc(big, layout(ARENA_BYTES - 100, 8));
        }
        // Too large for the arena from the start.
        let huge = unsafe { arena.alloc(layout(ARENA_BYTES * 2, 8)) };
        assert!(arena.offset_of(huge).is_none());
        unsafe { arena.dealloc(huge, layout(ARENA_BYTES * 2, 8)) };
    }

    #[test]
    fn threads_allocating_at_once_never_share_a_byte() {
        let arena = std::sync::Arc::new(StartupArena::new());
        let threads: Vec<_> = (0u8..4)
            .map(|id| {
                let arena = arena.clone();
                std::thread::spawn(move || {
                    let mut mine = Vec::new();
                    for round in 0..2000 {
                        let size = 8 + (round % 5) * 8;
                        let ptr = unsafe { arena.alloc(layout(size, 8)) };
                        unsafe { std::ptr::write_bytes(ptr, id, size) };
                        if round % 3 == 0 {
                            unsafe { arena.dealloc(ptr, layout(size, 8)) };
                        } else {
                            mine.push((ptr as usize, size));
                        }
                    }
                    mine
                })
            })
            .collect();
        let kept: Vec<Vec<(usize, usize)>> =
            threads.into_iter().map(|t| t.join().unwrap()).collect();
        for (id, blocks) in kept.iter().enumerate() {
            for (ptr, size) in blocks {
                let bytes = unsafe { std::slice::from_raw_parts(*ptr as *const u8, *size) };
                assert!(
                    bytes.iter().all(|b| *b == id as u8),
                    "a block of thread {id} was written by another"
                );
            }
        }
    }
}
