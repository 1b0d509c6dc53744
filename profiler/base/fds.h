/* fds.h: the descriptors the profiler owns, known by identity (fds.c).
 *
 * Daemons close every descriptor they did not open (close_range,
 * closefrom, a close loop) and reuse the numbers for their own files. A
 * profiler that then writes to, polls or closes "its" number corrupts the
 * program. So every descriptor the profiler keeps is registered here:
 *
 * - moved above the numbers a program uses (into the top quarter of the
 *   first 1,024, below the descriptor limit), so a program that counts on
 *   the lowest free number gets the same numbers as without the profiler;
 * - marked in a bitmap that the interposed close family (interpose/
 *   fd_hooks.c) consults: the program's close, close_range and closefrom
 *   pass over the profiler's descriptors (close answers EBADF, as it would
 *   for a number the program never had), and a dup2 or dup3 onto one first
 *   hands it back (pp_fd_taken: its owner stops using it), so the program's
 *   call wins;
 * - kept with its device and inode, and closed by the profiler only through
 *   pp_fd_close, which closes the number only while it is still the file
 *   registered (a program that closed it by a raw system call and reused
 *   the number keeps its file).
 *
 * A forked child holds none of the parent's roles: pp_fd_fork_child closes
 * every registered descriptor that is still the profiler's, but those
 * registered with pp_fd_keep.
 */
#ifndef PP_FDS_H
#define PP_FDS_H
#include <dirent.h>
#include <stdio.h>
#include <sys/socket.h>

/* Registers fd as the profiler's, moving it up when it can (the old
 * number is closed). Returns the descriptor to use from now on: the new
 * number, or fd itself when it could not move or be registered; -1 when
 * fd < 0 (errno kept). Thread-safe. */
int pp_fd_own(int fd);
/* Moves fd above the numbers a program uses, as pp_fd_own does, without
 * registering it: for a descriptor the profiler opens and a library of
 * its closes (libdw's); where the hooks are built in, the open registered
 * it already (interpose/make_hooks.c) and libdw's close forgets it.
 * Returns the new number, or fd when it could not move (or fd < 0).
 * Thread-safe. */
int pp_fd_lift(int fd);
/* pp_fd_own for a descriptor a forked child keeps too (files the
 * symbolizer keeps open for after a chroot). Thread-safe. */
int pp_fd_keep(int fd);
/* socket, accept4, pipe2 (O_CLOEXEC), epoll_create1 (EPOLL_CLOEXEC) and
 * F_DUPFD_CLOEXEC, each made between pp_fd_create_begin and end and
 * registered with pp_fd_own: the profiler's descriptors are made with
 * these. Results and errno as the calls'. Thread-safe. */
int pp_fd_socket(int domain, int type, int protocol);
int pp_fd_accept(int fd, struct sockaddr *addr, socklen_t *len, int flags);
int pp_fd_pipe(int p[2]);
int pp_fd_epoll(void);
int pp_fd_dup(int fd);
/* A stream or a directory stream of the profiler's: opened with
 * O_CLOEXEC between pp_fd_create_begin and end and registered as with
 * pp_fd_keep (a forked child keeps it, as an inherited descriptor), or
 * NULL with errno (EMFILE when it could not be registered). A descriptor
 * held even for a moment needs this: a program's closefrom and a reuse of
 * the number can come between the profiler's open and its close
 * (interpose/make_hooks.c registers a plain open by the profiler's work;
 * the C library's own fopen and opendir pass it by). Close them with
 * pp_fd_fclose and pp_fd_closedir, which close only while the number is
 * still the file registered. Thread-safe. */
FILE *pp_fd_fopen(const char *path);
DIR *pp_fd_opendir(const char *path);
int pp_fd_fclose(FILE *f);
int pp_fd_closedir(DIR *d);
/* Closes fd when it is registered and still the file registered; forgets
 * it either way. An unregistered fd is closed as asked (a descriptor the
 * profiler opened and closes at once). Returns close's result, or 0 when
 * the number was no longer the profiler's. Thread-safe. */
int pp_fd_close(int fd);
/* Whether fd is registered. async-signal-safe */
int pp_fd_owned(int fd);
/* Whether fd is registered and still the file registered. Thread-safe. */
int pp_fd_still_own(int fd);
/* The program takes fd (a dup2 or dup3 onto it): the hook set with
 * pp_fd_on_taken stops what uses it, then fd is forgotten, so the
 * program's call can proceed. Thread-safe. */
void pp_fd_taken(int fd);
/* Sets the one hook pp_fd_taken runs (the server's): it gets the number
 * and must stop every use of it before it returns. */
void pp_fd_on_taken(void (*hook)(int fd));
/* The smallest registered number >= from, or -1. async-signal-safe */
int pp_fd_next_owned(int from);
/* Around the profiler's making of a descriptor and its pp_fd_own: a
 * program's bulk close (close_range, closefrom) waits for it, and it waits
 * for one under way, so a number is never closed between its birth and
 * its move. A bulk close waits 150 ms at most, a making 2 s (fds.c).
 * Thread-safe. */
void pp_fd_create_begin(void);
void pp_fd_create_end(void);
/* Around the program's close_range or closefrom (interpose/fd_hooks.c);
 * pp_fd_close_wait is the plain close's shorter form (it only waits).
 * async-signal-safe */
void pp_fd_bulk_begin(void);
void pp_fd_bulk_end(void);
void pp_fd_close_wait(void);
/* How many descriptors are registered now. Thread-safe. */
int pp_fd_count(void);
/* In a forked child: closes every registered descriptor that is still
 * the profiler's and forgets them all. Called first among the child's
 * fork handlers (interpose/lifecycle.c). */
void pp_fd_fork_child(void);
#endif
