/* listen.h: the address grammar of LIBPPROF_ADDR and the listening socket
 * (listen.c). Shared by the server (daemon.c) and the launcher
 * (tools/libpprof-run.c, which checks an address before it execs), so both
 * accept exactly the same addresses: "HOST:PORT", "[IPv6]:PORT" or ":PORT"
 * (every address: dual-stack "::" first, as Go's ":PORT"; a name: IPv4
 * first, as Go's listener for "localhost"), the port 0-65535 (0: the kernel
 * picks), or "unix:PATH" (a Unix-domain socket, mode 0600: the owner's
 * access is the access control). Uses libc only.
 */
#ifndef PP_LISTEN_H
#define PP_LISTEN_H
#include <stddef.h>

typedef enum pp_listen_error {
    PP_LISTEN_OK = 0,
    PP_LISTEN_MALFORMED, /* not one of the forms above */
    PP_LISTEN_RESOLVE,   /* the host does not resolve */
    PP_LISTEN_BIND,      /* socket, bind or listen failed: errno in *err */
} pp_listen_error;

/* Opens a listening socket (close-on-exec, non-blocking) on addr with the
 * given backlog. Returns the socket and sets *port to the port bound (0
 * for unix:, whose socket file the caller removes when done), or
 * returns -1 with *kind set, *err the errno of a bind failure, and `why`
 * one line saying what is wrong. Thread-safe. */
int pp_listen_open(const char *addr, int backlog, int *port, pp_listen_error *kind, int *err, char *why,
                   size_t why_size);

/* Whether the socket is bound to a loopback address (127.0.0.0/8, ::1, or
 * an IPv4-mapped loopback). Thread-safe. */
int pp_listen_is_loopback(int fd);
#endif
