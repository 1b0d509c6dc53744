/* syscalls.c: the names of the system calls a thread may wait in, for
 * thread dumps' states (thread.state) and the wall profile's thread_state.
 * The numbers are the build's architecture's (<sys/syscall.h>): calls an
 * architecture lacks (arm64 has no poll, select nor epoll_wait) are left
 * out there.
 */
#define _GNU_SOURCE
#include "thread_dump.h"

#include <sys/syscall.h>

const char *pp_syscall_name(int nr)
{
    switch (nr) {
#ifdef SYS_read
    case SYS_read: return "read";
#endif
#ifdef SYS_write
    case SYS_write: return "write";
#endif
#ifdef SYS_open
    case SYS_open: return "open";
#endif
#ifdef SYS_poll
    case SYS_poll: return "poll";
#endif
#ifdef SYS_pread64
    case SYS_pread64: return "pread64";
#endif
#ifdef SYS_pwrite64
    case SYS_pwrite64: return "pwrite64";
#endif
#ifdef SYS_readv
    case SYS_readv: return "readv";
#endif
#ifdef SYS_writev
    case SYS_writev: return "writev";
#endif
#ifdef SYS_select
    case SYS_select: return "select";
#endif
#ifdef SYS_pause
    case SYS_pause: return "pause";
#endif
#ifdef SYS_nanosleep
    case SYS_nanosleep: return "nanosleep";
#endif
#ifdef SYS_connect
    case SYS_connect: return "connect";
#endif
#ifdef SYS_accept
    case SYS_accept: return "accept";
#endif
#ifdef SYS_sendto
    case SYS_sendto: return "sendto";
#endif
#ifdef SYS_recvfrom
    case SYS_recvfrom: return "recvfrom";
#endif
#ifdef SYS_sendmsg
    case SYS_sendmsg: return "sendmsg";
#endif
#ifdef SYS_recvmsg
    case SYS_recvmsg: return "recvmsg";
#endif
#ifdef SYS_wait4
    case SYS_wait4: return "wait4";
#endif
#ifdef SYS_semop
    case SYS_semop: return "semop";
#endif
#ifdef SYS_msgsnd
    case SYS_msgsnd: return "msgsnd";
#endif
#ifdef SYS_msgrcv
    case SYS_msgrcv: return "msgrcv";
#endif
#ifdef SYS_fcntl
    case SYS_fcntl: return "fcntl";
#endif
#ifdef SYS_flock
    case SYS_flock: return "flock";
#endif
#ifdef SYS_fsync
    case SYS_fsync: return "fsync";
#endif
#ifdef SYS_fdatasync
    case SYS_fdatasync: return "fdatasync";
#endif
#ifdef SYS_rt_sigtimedwait
    case SYS_rt_sigtimedwait: return "rt_sigtimedwait";
#endif
#ifdef SYS_rt_sigsuspend
    case SYS_rt_sigsuspend: return "rt_sigsuspend";
#endif
#ifdef SYS_futex
    case SYS_futex: return "futex";
#endif
#ifdef SYS_io_getevents
    case SYS_io_getevents: return "io_getevents";
#endif
#ifdef SYS_semtimedop
    case SYS_semtimedop: return "semtimedop";
#endif
#ifdef SYS_clock_nanosleep
    case SYS_clock_nanosleep: return "clock_nanosleep";
#endif
#ifdef SYS_epoll_wait
    case SYS_epoll_wait: return "epoll_wait";
#endif
#ifdef SYS_mq_timedsend
    case SYS_mq_timedsend: return "mq_timedsend";
#endif
#ifdef SYS_mq_timedreceive
    case SYS_mq_timedreceive: return "mq_timedreceive";
#endif
#ifdef SYS_waitid
    case SYS_waitid: return "waitid";
#endif
#ifdef SYS_openat
    case SYS_openat: return "openat";
#endif
#ifdef SYS_pselect6
    case SYS_pselect6: return "pselect6";
#endif
#ifdef SYS_ppoll
    case SYS_ppoll: return "ppoll";
#endif
#ifdef SYS_sync_file_range
    case SYS_sync_file_range: return "sync_file_range";
#endif
#ifdef SYS_epoll_pwait
    case SYS_epoll_pwait: return "epoll_pwait";
#endif
#ifdef SYS_accept4
    case SYS_accept4: return "accept4";
#endif
#ifdef SYS_recvmmsg
    case SYS_recvmmsg: return "recvmmsg";
#endif
#ifdef SYS_sendmmsg
    case SYS_sendmmsg: return "sendmmsg";
#endif
#ifdef SYS_io_uring_enter
    case SYS_io_uring_enter: return "io_uring_enter";
#endif
#ifdef SYS_epoll_pwait2
    case SYS_epoll_pwait2: return "epoll_pwait2";
#endif
    default: return NULL;
    }
}
