/* hooks.h: what the overrides of interpose/ share: each family's start-up
 * (finding the next definitions; lifecycle.c's constructor calls them all),
 * the sandbox's stop, and PP_NEED. */
#ifndef PP_INTERPOSE_HOOKS_H
#define PP_INTERPOSE_HOOKS_H

/* Finds the next pthread_create and dlclose. The constructor calls it
 * (dlsym may allocate, which it can there); the call also keeps the
 * overrides in every program that links libpprof statically, whatever its
 * link order puts first. Idempotent. */
void pp_thread_hooks_init(void);
/* Finds the next close, close_range, closefrom, dup2 and dup3; the
 * constructor calls it, for the same reasons. */
void pp_fd_hooks_init(void);
/* Finds the next openat, socket, socketpair, pipe2, epoll_create1 and
 * eventfd (make_hooks.c). */
void pp_make_hooks_init(void);
/* Finds the next poll, ppoll, select, pselect, epoll_wait, epoll_pwait,
 * epoll_pwait2, nanosleep, clock_nanosleep, usleep and sigtimedwait
 * (wait_hooks.c). */
void pp_wait_hooks_init(void);
/* Stops profiling before the process enters a sandbox (lifecycle.c);
 * `why` is a static string. Thread-safe. */
void pp_sandbox_enter(const char *why);
/* Finds the next recv, recvfrom, recvmsg, accept and accept4
 * (sock_hooks.c). */
void pp_sock_hooks_init(void);
/* Finds the next setrlimit, setrlimit64, prlimit and prlimit64
 * (limit_hooks.c). */
void pp_limit_hooks_init(void);
/* Finds the next mlockall and munlockall (mlock_hooks.c). */
void pp_mlock_hooks_init(void);
/* Finds the next mmap, munmap and mremap (mmap_hooks.c). */
void pp_mmap_hooks_init(void);
/* Finds the next syscall (syscall_hook.c). */
void pp_syscall_hook_init(void);
/* Finds the next pthread_sigmask, sigprocmask, sigaction, signal,
 * bsd_signal and sysv_signal (signal_hooks.c). */
void pp_signal_hooks_init(void);
/* Opens the profiling signal in the calling thread when the mask it
 * inherited through exec blocks signals wholesale; after
 * LIBPPROF_SIGNAL is read. */
void pp_signal_hooks_open_inherited(void);
/* In an override whose next definition `fn` may not be found yet (a call
 * before the constructor's): finds it with `init`, else fails with
 * ENOSYS. */
#define PP_NEED(fn, init)                                                                                         \
    do {                                                                                                          \
        if (!(fn))                                                                                                \
            init();                                                                                               \
        if (!(fn)) {                                                                                              \
            errno = ENOSYS;                                                                                       \
            return -1;                                                                                            \
        }                                                                                                         \
    } while (0)
#endif
