#!/usr/bin/env bash
# test-labels: quick
# test_exports.sh: libpprof.so's dynamic symbols are exactly the public API
# (every function the headers declare with PPROF_API) and the functions it
# interposes (the list below, the contract with hosts), and the one
# variable outside readers look for, OTEP 4947's otel_thread_ctx_v1 (a TLS
# symbol); no internal name
# leaks into a host's namespace. Every override interpose/'s sources define
# is in the list. libpprof.a brings the malloc and lock
# hooks, libpprof_nohooks.a neither. The library's SONAME is libpprof.so.0
# and pprof_version() is the header's version.
# Usage: test_exports.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
LIB=$BUILD/libpprof.so

INTERPOSED="malloc free calloc realloc reallocarray memalign posix_memalign aligned_alloc
valloc pvalloc malloc_usable_size malloc_size mallocx rallocx xallocx sallocx dallocx sdallocx
tc_free tc_free_sized tc_malloc_size
_Znwm _ZnwmRKSt9nothrow_t _ZnwmSt11align_val_t _ZnwmSt11align_val_tRKSt9nothrow_t
_Znam _ZnamRKSt9nothrow_t _ZnamSt11align_val_t _ZnamSt11align_val_tRKSt9nothrow_t
_ZdlPv _ZdlPvRKSt9nothrow_t _ZdlPvSt11align_val_t _ZdlPvSt11align_val_tRKSt9nothrow_t
_ZdlPvm _ZdlPvmSt11align_val_t
_ZdaPv _ZdaPvRKSt9nothrow_t _ZdaPvSt11align_val_t _ZdaPvSt11align_val_tRKSt9nothrow_t
_ZdaPvm _ZdaPvmSt11align_val_t
pthread_mutex_lock pthread_rwlock_rdlock pthread_rwlock_wrlock pthread_cond_wait
pthread_cond_timedwait sem_wait sem_timedwait pthread_join pthread_create dlclose exit
__libc_start_main close close_range closefrom dup2 dup3 epoll_create1 eventfd
open open64 openat openat64 __open_2 __open64_2 __openat_2 __openat64_2 socket socketpair pipe pipe2
pthread_sigmask sigprocmask chroot capset prctl
sigaction signal bsd_signal sysv_signal poll ppoll select pselect epoll_wait epoll_pwait epoll_pwait2 nanosleep
clock_nanosleep usleep sigtimedwait syscall recv recvfrom recvmsg accept accept4
setrlimit setrlimit64 getrlimit getrlimit64 prlimit prlimit64 mlockall munlockall
setuid setgid seteuid setegid setreuid setregid setresuid setresgid setgroups initgroups
execve execv execvp execvpe execl execle execlp fexecve mmap mmap64 munmap mremap
otel_thread_ctx_v1"

api=$(cat "$SRC"/include/pprof*.h | tr '\n' ' ' |
    grep -oE 'PPROF_API[^;]*;' | grep -oE 'pprof_[a-z0-9_]+ *\(' | tr -d ' (' | sort -u)
expected=$( { echo "$api"; echo $INTERPOSED | tr ' ' '\n'; } | sort -u)
actual=$(nm -D --defined-only "$LIB" | awk '{ print $3 }' | sort -u)
# what interpose/ defines as an override (API): each in the list above, so
# each exported (getrlimit was defined and not exported)
defined=$(grep -hoE '^API [^(=]*[ *][A-Za-z_0-9]+\(' "$SRC"/profiler/interpose/*.c | sed -E 's/.*[ *]([A-Za-z_0-9]+)\($/\1/' | sort -u)
unlisted=$(comm -23 <(echo "$defined") <(echo $INTERPOSED | tr ' ' '\n' | sort -u) | tr '\n' ' ')
pp_check "interpose/ defines $(echo "$defined" | wc -l) overrides, each listed here (not listed: ${unlisted:-none})" \
    test -z "$unlisted" -a "$(echo "$defined" | wc -l)" -gt 60
n_api=$(echo "$api" | wc -l)
pp_check "the headers declare the API ($n_api functions)" test "$n_api" -gt 60
extra=$(comm -13 <(echo "$expected") <(echo "$actual") | tr '\n' ' ')
missing=$(comm -23 <(echo "$expected") <(echo "$actual") | tr '\n' ' ')
pp_check "no dynamic symbol beyond the API and the interposed functions (${extra:-none})" test -z "$extra"
pp_check "every API function and interposed function is exported (missing: ${missing:-none})" test -z "$missing"
pp_check "no exported symbol carries a version node (hosts' malloc@GLIBC references bind to it)" \
    test -z "$(objdump -T "$LIB" | awk '$NF ~ /^(malloc|pthread_create)$/ && $(NF-1) != "Base"')"
soname=$(readelf -d "$LIB" | sed -n 's/.*SONAME.*\[\(.*\)\].*/\1/p')
pp_check "SONAME is libpprof.so.0 ($soname)" test "$soname" = libpprof.so.0

defines() { nm --defined-only "$1" 2>/dev/null | awk -v s="$2" '$3 == s && $2 ~ /[TW]/' | grep -q .; }
pp_check "libpprof.a defines malloc and pthread_mutex_lock (hooks in)" \
    eval 'defines "$BUILD/libpprof.a" malloc && defines "$BUILD/libpprof.a" pthread_mutex_lock'
pp_check "libpprof_nohooks.a defines neither malloc, free, operator new nor pthread_mutex_lock" \
    eval '! defines "$BUILD/libpprof_nohooks.a" malloc && ! defines "$BUILD/libpprof_nohooks.a" free &&
          ! defines "$BUILD/libpprof_nohooks.a" _Znwm && ! defines "$BUILD/libpprof_nohooks.a" pthread_mutex_lock'

cat >"$TMP/v.c" <<'C'
#include <pprof.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
    printf("%s %d\n", pprof_version(), PPROF_VERSION);
    return strcmp(pprof_version(), PPROF_VERSION_STRING) != 0;
}
C
if gcc -I"$SRC/include" -o "$TMP/v" "$TMP/v.c" -L"$BUILD" -lpprof -Wl,-rpath,"$BUILD" 2>"$TMP/cc.err"; then
    out=$("$TMP/v")
    pp_check "pprof_version() is the header's version ($out)" test $? -eq 0 -a -n "$out"
else
    pp_bad "a program calling pprof_version does not build" "$(cat "$TMP/cc.err")"
fi
pp_finish
