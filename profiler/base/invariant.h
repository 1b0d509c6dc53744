/* invariant.h: PP_ASSERT, the invariants the headers state, checked.
 *
 * PP_ASSERT(cond) is compiled in when the build defines PPROF_ASSERTS (the
 * CMake option of that name, on wherever the tests are built: the test and
 * sanitizer builds) and is nothing otherwise (a build for use, tests off).
 * A broken invariant writes one line, "libpprof: FILE:LINE: assertion
 * failed: COND", to standard error with write(2), then traps: usable in a
 * signal handler and inside malloc (async-signal-safe). For what cannot
 * happen only: bad input to an API call keeps its error code.
 */
#ifndef PP_BASE_INVARIANT_H
#define PP_BASE_INVARIANT_H

#ifdef PPROF_ASSERTS
#include <unistd.h>
#define PP_ASSERT_STR2(x) #x
#define PP_ASSERT_STR(x) PP_ASSERT_STR2(x)
#define PP_ASSERT(cond)                                                                                    \
    do {                                                                                                   \
        if (__builtin_expect(!(cond), 0)) {                                                                \
            static const char pp_assert_msg_[] =                                                           \
                "libpprof: " __FILE__ ":" PP_ASSERT_STR(__LINE__) ": assertion failed: " #cond "\n";       \
            ssize_t pp_assert_rc_ = write(2, pp_assert_msg_, sizeof pp_assert_msg_ - 1);                   \
            (void)pp_assert_rc_;                                                                           \
            __builtin_trap();                                                                              \
        }                                                                                                  \
    } while (0)
#else
#define PP_ASSERT(cond) ((void)sizeof(!(cond)))
#endif

#endif
