/* tree_internal.h: what the files of the process tree share.
 *
 *   tree_wire.c    the messages between the hub and its members, the
 *                  sockets' abstract names, and what /proc says of a process
 *   tree_hub.c     the hub: the tree's name, the socket members join, the
 *                  members, the thread that reads their answers, and the
 *                  requests fanned out to them
 *   tree_member.c  this process as a member: its agent, joining a hub, and
 *                  what it does when its hub has gone (takes its place)
 *   tree_merge.c   requests for the whole tree (routing's front): fan-out,
 *                  merge or ?pid=N forwarding; the tree's entry points
 *
 * Calls go one way: tree_merge.c -> tree_member.c -> tree_hub.c ->
 * tree_wire.c (tree_merge.c calls the hub and the wire too). Nothing
 * here calls tree_merge.c: routing reaches it through the front it
 * registers (route.h).
 */
#ifndef PP_TREE_INTERNAL_H
#define PP_TREE_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "pprof.h"
#include "tree.h"

#define PP_TREE_MAX_MEMBERS 256
#define PP_TREE_NAME_MAX 108 /* an abstract socket name, with its NUL */

/* ----------------------------------------------------------- tree_wire.c
 * Both ways: a header {magic, type, id, status, len} and len bytes. Hub to
 * member: REQ with "name?query"; HELLO once it has registered the member
 * and sent it what it asks members that join now. Member to hub: HELLO (its parent's pid in
 * status), RES with the response's status and body, BYE with the reason
 * it leaves while it lives on (it entered a sandbox), NOTE with why the
 * program it is about to exec will not be profiled (empty: that exec
 * failed), kept for when its connection closes. Hub to member, as the
 * hub exits: NOTE naming a process still running that is not profiled
 * (its pid in status; pp_hub_keep_note). */
enum { PP_TREE_HELLO = 1, PP_TREE_REQ, PP_TREE_RES, PP_TREE_BYE, PP_TREE_NOTE };
typedef struct pp_tree_msg {
    uint32_t magic, type, id;
    int32_t status;
    uint64_t len;
} pp_tree_msg;

/* Sends one message; 0 or -1. */
int pp_tree_send(int fd, uint32_t type, uint32_t id, int status, const void *body, size_t len);
/* Reads one message; *body is malloc'd and NUL-terminated. 0 or -1. */
int pp_tree_recv(int fd, pp_tree_msg *m, char **body);
/* A message read a piece at a time, as it comes (the hub's members). */
typedef struct pp_tree_reader {
    pp_tree_msg m;
    size_t got;  /* bytes of header and body so far */
    char *body;  /* malloc'd once the header is in, NUL-terminated */
} pp_tree_reader;
/* Reads what fd has of r's message without waiting: 1 when it is whole
 * (r->m, r->body), 0 when more is to come, -1 at the end of the
 * connection or a malformed message. */
int pp_tree_recv_some(int fd, pp_tree_reader *r);
/* Frees r's body and starts it over. */
void pp_tree_reader_reset(pp_tree_reader *r);
/* The name of the tree whose hub is process pid, "libpprof-tree-<pid>". */
void pp_tree_name_of(int pid, char out[PP_TREE_NAME_MAX]);
/* A socket listening under the abstract name `name`, or -1 (errno kept). */
int pp_tree_listen(const char *name);
/* A socket connected to the one listening under `name`, or -1. */
int pp_tree_connect(const char *name);
/* Whether LIBPPROF_TREE=0 turns process trees off, or this process is in
 * namespaces of its own (pp_process_isolated). */
int pp_tree_off(void);
/* Process pid's name (comm), "" when unknown. */
void pp_tree_comm(int pid, char out[16]);
/* The parent of pid, from /proc, or 0. */
int pp_tree_parent_of(int pid);
/* Process pid's seccomp mode from /proc (0 none or unknown, 1 strict, 2
 * a filter). */
int pp_tree_seccomp(int pid);
/* Whether process pid descends from this one (up to 16 generations): a
 * worker that changed its user after the fork (nginx's, as root) still
 * joins its hub, which keeps out other users' processes. */
int pp_tree_descends(int pid);
/* The executable files of this process's maps appended to b (after its
 * NUL), one maps line each with the addresses and offset zeroed (a
 * member needs the device, inode and path; the hub's layout is not its
 * to know): what the members leave to the hub to name. 0 or -1. */
int pp_tree_exec_maps(pprof_buffer *b);
/* Whether process pid has ended (gone, or a zombie). */
int pp_tree_ended(int pid);
/* CLOCK_MONOTONIC in seconds. */
int64_t pp_tree_now_s(void);

/* ------------------------------------------------------------ tree_hub.c */

/* A request fanned out to the members. Until pp_hub_collect returns, the
 * hub's thread files the members' answers here (under the hub's lock);
 * after, nothing changes them, and the requester reads them freely. */
typedef struct pp_hub_req {
    struct pp_hub_req *next;
    uint32_t id;
    int refs;                 /* 1 while pending: the requester releases it */
    int collected;            /* answers that come later are counted, not kept */
    int nasked, nanswered;
    int pids[PP_TREE_MAX_MEMBERS]; /* asked */
    char names[PP_TREE_MAX_MEMBERS][16];
    int status[PP_TREE_MAX_MEMBERS]; /* 0: no answer yet; -1: gone; -2: exec'd (asked again) */
    pprof_buffer body[PP_TREE_MAX_MEMBERS];
    pthread_cond_t cv;
    void *owner;              /* the requester's, freed with the request if it never comes back */
    int64_t deadline_s;
    int only_pid, with_maps;  /* as asked */
    char *wire;               /* a request with a window: what members that join during it are asked */
    int64_t window_end_ns;    /* its end, on the monotonic clock */
} pp_hub_req;
/* Why process pid is not asked (the ?pid= of a process outside the tree):
 * it left the tree having entered a sandbox, or the tree's pids. */
void pp_hub_no_member(int pid, char *out, size_t size);

/* Once: the members' places and the index's row about the tree. */
void pp_hub_init(void);
/* A member keeps what its exiting hub sent about a process that is not
 * profiled (NOTE), for its index should it take the hub's place. */
void pp_hub_keep_note(int pid, const char *body);
/* A member taking the hub's place notes process pid (the old hub, or with
 * sandboxed_only its parent) as not profiled when it lives on (in a
 * seccomp sandbox, with sandboxed_only) and no note about it came: a
 * process that enters a sandbox tells its hub, and an exiting hub its
 * members, but one that was joining meanwhile hears neither. */
void pp_hub_note_left(int pid, int sandboxed_only);
/* In a forked child: no hub and no members here (the tree's name stays);
 * returns whether the parent was the hub, from the child's copy of its state
 * (so a fork takes no lock of the hub's). */
int pp_hub_after_fork(void);
/* Makes this process the hub of its own tree, named after its pid; 0 when
 * it is one already. 0 or PPROF_ESYS (with the reason). */
int pp_hub_start(void);
/* Makes this process the hub of the tree it belonged to, under that
 * tree's name (and its own pid's, for exec'd descendants): 0, or -1 when
 * the name is taken (another member was first). */
int pp_hub_take_over(void);
/* Whether this process is a hub. */
int pp_hub_here(void);
/* Whether this process is a hub with members. */
int pp_hub_has_members(void);
/* The tree's name: the one this process is the hub of, or the one it
 * joined; "" when none. */
void pp_hub_name(char out[PP_TREE_NAME_MAX]);
void pp_hub_set_name(const char *name);
/* Sends wire ("name?query", and with hub_names=1 in the query, a NUL and
 * this process's executable files as maps lines without addresses: the files
 * the members leave to it) to every member (only process pid when pid is
 * not 0) and keeps the request for their answers until deadline_s. With a
 * window of window_s seconds (0: none), a member that joins during it is
 * asked for the rest (window_ms=). Returns it, or NULL when out of memory. */
pp_hub_req *pp_hub_ask(const char *wire, int with_maps, int pid, int window_s, int64_t deadline_s, void *owner);
/* Waits for the answers until the request's deadline, counts the members
 * that did not answer in time, and leaves the answers as they are. */
void pp_hub_collect(pp_hub_req *r);
/* The requester is done with r (its answers are freed). */
void pp_hub_release(pp_hub_req *r);

/* --------------------------------------------------------- tree_member.c */

/* Once: the shutdown hook and the fork handlers of a member (and the
 * hub's, pp_hub_init first). */
void pp_member_init(void);
/* Joins the hub among this process's ancestors (up to 16 up): 0, or -1
 * when there is none. */
int pp_member_join_ancestor(void);
int pp_member_join_named(int hub_pid, int now);
/* Whether this process is a member connected to its hub (and no hub
 * itself). */
int pp_member_joined(void);

#endif /* PP_TREE_INTERNAL_H */
