// thread_annotations.h: clang's thread-safety attributes, as macros. They
// state which mutex guards a member and which locks a function needs, takes
// or must not hold; a clang build with -Wthread-safety (HIXL_THREAD_SAFETY,
// scripts/thread_safety.sh) checks every access against them at compile
// time. Under other compilers they are empty.
//
// The capability named is an expression: a member (mu_), another object's
// member (r.mu_), or a global. Members read deliberately without their lock
// (atomics, values set before the object is shared) carry no annotation and
// say so in a comment. The types that carry them are in common/mutex.h.
#pragma once

#if defined(__clang__)
#define HIXL_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define HIXL_THREAD_ANNOTATION(x)
#endif

// A type that is a lock (Mutex, SharedMutex); `name` shows in warnings.
#define CAPABILITY(name) HIXL_THREAD_ANNOTATION(capability(name))
// An RAII type that holds a lock from its construction to its destruction.
#define SCOPED_CAPABILITY HIXL_THREAD_ANNOTATION(scoped_lockable)

// A member read or written only with `x` held (shared for reads of a
// SharedMutex's data, exclusive for writes).
#define GUARDED_BY(x) HIXL_THREAD_ANNOTATION(guarded_by(x))
// A pointer (or smart pointer) member whose pointee is guarded by `x`.
#define PT_GUARDED_BY(x) HIXL_THREAD_ANNOTATION(pt_guarded_by(x))

// Lock order: this lock is taken before (after) the ones named, never the
// other way while it is held.
#define ACQUIRED_BEFORE(...) HIXL_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) HIXL_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))

// The caller holds the locks (exclusively, or at least shared).
#define REQUIRES(...) HIXL_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) HIXL_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))

// The function takes the locks and returns with them held.
#define ACQUIRE(...) HIXL_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) HIXL_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))

// The function lets go of locks the caller held.
#define RELEASE(...) HIXL_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) HIXL_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) HIXL_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))

// The function takes the locks only when it returns `ret` (the first argument).
#define TRY_ACQUIRE(...) HIXL_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define TRY_ACQUIRE_SHARED(...) HIXL_THREAD_ANNOTATION(try_acquire_shared_capability(__VA_ARGS__))

// The caller must not hold the locks: the function takes them itself, or
// runs something (a callback) that does.
#define EXCLUDES(...) HIXL_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))

// The function checks at run time that the lock is held; the analysis then
// takes it as held.
#define ASSERT_CAPABILITY(x) HIXL_THREAD_ANNOTATION(assert_capability(x))

// The function returns a reference to the lock `x`.
#define RETURN_CAPABILITY(x) HIXL_THREAD_ANNOTATION(lock_returned(x))

// Turns the analysis off for one function: only where it cannot follow the
// code, with a comment saying why.
#define NO_THREAD_SAFETY_ANALYSIS HIXL_THREAD_ANNOTATION(no_thread_safety_analysis)
