/* syscalls.c: names of the system calls a thread waits in, for the wall
 * profile's thread_state label (x86-64 numbers). */
#include "wall.h"

#include <stdio.h>

const char *pp_wall_syscall_name(int nr, char *buf)
{
    switch (nr) {
    case 0: return "read";
    case 1: return "write";
    case 7: return "poll";
    case 17: return "pread64";
    case 18: return "pwrite64";
    case 19: return "readv";
    case 20: return "writev";
    case 23: return "select";
    case 34: return "pause";
    case 35: return "nanosleep";
    case 42: return "connect";
    case 43: return "accept";
    case 44: return "sendto";
    case 45: return "recvfrom";
    case 46: return "sendmsg";
    case 47: return "recvmsg";
    case 61: return "wait4";
    case 65: return "semop";
    case 70: return "msgrcv";
    case 72: return "fcntl";
    case 73: return "flock";
    case 74: return "fsync";
    case 75: return "fdatasync";
    case 128: return "rt_sigtimedwait";
    case 130: return "rt_sigsuspend";
    case 202: return "futex";
    case 208: return "io_getevents";
    case 220: return "semtimedop";
    case 230: return "clock_nanosleep";
    case 232: return "epoll_wait";
    case 247: return "waitid";
    case 257: return "openat";
    case 270: return "pselect6";
    case 271: return "ppoll";
    case 277: return "sync_file_range";
    case 281: return "epoll_pwait";
    case 288: return "accept4";
    case 299: return "recvmmsg";
    case 307: return "sendmmsg";
    case 426: return "io_uring_enter";
    case 441: return "epoll_pwait2";
    default:
        snprintf(buf, 24, "syscall_%d", nr);
        return buf;
    }
}
