//! The memory limit of a runtime, kept by its allocator rather than by QuickJS, so that the
//! engine learns when an allocation was refused: code can catch the error QuickJS throws then,
//! or QuickJS may fail to allocate even that error (a bare value is thrown), and either way the
//! runtime is not to be trusted with the next call (docs/decisions.md §7). The memory itself
//! comes from Rust's global allocator through rquickjs's own `RustAllocator`.

use std::cell::Cell;
use std::rc::Rc;

use rquickjs::allocator::{Allocator, RustAllocator};

/// `RustAllocator`'s header before each allocation (the alignment of a `u64`).
const HEADER: usize = std::mem::align_of::<u64>();

/// What the allocator tells the engine.
#[derive(Debug, Default)]
pub(crate) struct Meter {
    used: Cell<usize>,
    refused: Cell<bool>,
}

impl Meter {
    /// Whether an allocation was refused since [`Meter::reset`].
    pub(crate) fn refused(&self) -> bool {
        self.refused.get()
    }

    /// The bytes the runtime holds now.
    pub(crate) fn used(&self) -> usize {
        self.used.get()
    }

    /// Forgets refusals (at the start of a call).
    pub(crate) fn reset(&self) {
        self.refused.set(false);
    }
}

/// An allocator that refuses what would take its runtime past `limit` bytes.
pub(crate) struct Budgeted {
    meter: Rc<Meter>,
    limit: usize,
}

impl Budgeted {
    pub(crate) fn new(meter: Rc<Meter>, limit: usize) -> Self {
        Self { meter, limit }
    }

    /// Whether a new allocation of `size` bytes (and its header) fits.
    fn admit(&self, size: usize) -> bool {
        size.checked_add(HEADER).is_some_and(|more| self.fits(more))
    }

    /// Whether `more` bytes fit; marks a refusal when they do not.
    fn fits(&self, more: usize) -> bool {
        let fits = self
            .meter
            .used
            .get()
            .checked_add(more)
            .is_some_and(|total| total <= self.limit);
        if !fits {
            self.meter.refused.set(true);
        }
        fits
    }

    fn taken(&self, bytes: usize) {
        self.meter
            .used
            .set(self.meter.used.get().saturating_add(bytes + HEADER));
    }

    fn given_back(&self, bytes: usize) {
        self.meter
            .used
            .set(self.meter.used.get().saturating_sub(bytes + HEADER));
    }
}

// SAFETY: every pointer handed out comes from `RustAllocator`, which meets the trait's contract
// (null, or a region of at least the size asked, aligned to a `u64`); pointers handed back are
// passed to it unchanged. The byte count only decides whether to ask it at all.
#[allow(unsafe_code)]
unsafe impl Allocator for Budgeted {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !self.admit(size) {
            return std::ptr::null_mut();
        }
        let ptr = RustAllocator.alloc(size);
        if !ptr.is_null() {
            // SAFETY: `ptr` was just allocated by `RustAllocator`.
            self.taken(unsafe { RustAllocator::usable_size(ptr) });
        }
        ptr
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        let Some(total) = count.checked_mul(size) else {
            self.meter.refused.set(true);
            return std::ptr::null_mut();
        };
        if !self.admit(total) {
            return std::ptr::null_mut();
        }
        let ptr = RustAllocator.calloc(count, size);
        if !ptr.is_null() {
            // SAFETY: `ptr` was just allocated by `RustAllocator`.
            self.taken(unsafe { RustAllocator::usable_size(ptr) });
        }
        ptr
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        // SAFETY: the caller hands back a pointer this allocator (so `RustAllocator`) made.
        unsafe {
            self.given_back(RustAllocator::usable_size(ptr));
            RustAllocator.dealloc(ptr);
        }
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        // SAFETY: the caller hands over a pointer this allocator (so `RustAllocator`) made.
        let old = unsafe { RustAllocator::usable_size(ptr) };
        if new_size > old && !self.fits(new_size - old) {
            return std::ptr::null_mut();
        }
        // SAFETY: as above; on failure the old region stays valid and counted.
        let moved = unsafe { RustAllocator.realloc(ptr, new_size) };
        if !moved.is_null() {
            self.given_back(old);
            // SAFETY: `moved` was just allocated by `RustAllocator`.
            self.taken(unsafe { RustAllocator::usable_size(moved) });
        }
        moved
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        // SAFETY: the caller hands over a pointer this allocator (so `RustAllocator`) made.
        unsafe { RustAllocator::usable_size(ptr) }
    }
}
