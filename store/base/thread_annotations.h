// Clang thread-safety annotations (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html).
// They expand to nothing under other compilers; launch/check-thread-safety.sh
// runs clang's -Wthread-safety over every production file, so a member read
// without its mutex, or a REQUIRES function called unlocked, fails the check.
#pragma once

#if defined(__clang__)
#define STRATA_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define STRATA_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) STRATA_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY STRATA_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) STRATA_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) STRATA_THREAD_ANNOTATION(pt_guarded_by(x))
#define REQUIRES(...) STRATA_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) STRATA_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) STRATA_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) STRATA_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) STRATA_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define RETURN_CAPABILITY(x) STRATA_THREAD_ANNOTATION(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS STRATA_THREAD_ANNOTATION(no_thread_safety_analysis)
