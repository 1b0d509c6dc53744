/* tree_hub.c: the hub of a process tree (see tree_internal.h).
 *
 * The process that serves is the hub. It listens under its tree's name
 * (tree_wire.c); a member connects, says hello, and stays until its
 * connection ends. One hub thread polls the listening sockets and the
 * members' sockets, reads what each has sent without waiting for the
 * rest of a message (a member stopped while it sends holds back no
 * other), and files each whole answer under its request; requests are sent from the requesting thread under the
 * member's send lock. A request whose requester never comes back (its
 * client went away, the hub's own call was cancelled) is dropped two
 * minutes after its deadline.
 *
 * A hub that took the place of one that ended (tree_member.c) listens
 * under the old hub's name and also under its own pid's, for the
 * descendants it will exec. The index shows the members, those that left
 * lately, and how many requests each answered in time (a row registered
 * with index.c).
 */
#define _GNU_SOURCE
#include "accept.h"
#include "base/base.h"
#include "endpoints.h"
#include "tree_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_MEMBERS PP_TREE_MAX_MEMBERS

typedef struct member {
    int fd; /* -1: free */
    int pid, ppid;
    char name[16];
    int64_t joined_s;
    int asked, answered, late; /* requests it was asked, answered, and not in time (the index) */
    char why[448];             /* why it is not profiled from now on (BYE, NOTE), or "" */
    int execs;                 /* it execs a program that joins again under its pid (NOTE) */
    pp_tree_reader in;         /* the message being read (the hub thread's) */
    pthread_mutex_t send_mu;
} member;

/* A member that has left, for the index. */
typedef struct gone_member {
    int pid, ppid, asked, answered, late;
    char name[16], why[448];
    int64_t joined_s, left_s;
} gone_member;
#define GONE_KEPT 8

static struct {
    pthread_mutex_t mu;       /* everything below */
    char name[PP_TREE_NAME_MAX]; /* the tree's name, "" when no tree */
    int is_hub;
    int exiting;              /* hub_exit has passed on its notes: later ones are not acknowledged */
    int listen_fd;
    int alias_fd;             /* a hub that took over: also its own pid's name, or -1 */
    member members[MAX_MEMBERS];
    gone_member gone[GONE_KEPT]; /* the last to leave, a ring */
    unsigned ngone;
    pp_hub_req *pending;
    uint32_t next_id;
    int thread_started;
    int stop; /* the hub thread ends (the process entered a sandbox) */
} hub = {.mu = PTHREAD_MUTEX_INITIALIZER, .listen_fd = -1, .alias_fd = -1};
static pthread_cond_t hub_ended_cv; /* the hub thread ended (hub_exit waits for it) */

static pp_accept_state hub_accept; /* the hub thread's */

/* ---------------------------------------------------------- the members */

static void req_unref_locked(pp_hub_req *t)
{
    PP_ASSERT(t->refs > 0); /* tree_internal.h: each holder lets go once */
    if (--t->refs)
        return;
    for (pp_hub_req **p = &hub.pending; *p; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            break;
        }
    for (int i = 0; i < t->nasked; i++)
        pprof_buffer_free(&t->body[i]);
    free(t->wire);
    pthread_cond_destroy(&t->cv);
    free(t);
}

static member *member_locked(int pid)
{
    for (int i = 0; i < MAX_MEMBERS; i++)
        if (hub.members[i].fd >= 0 && hub.members[i].pid == pid)
            return &hub.members[i];
    return NULL;
}

/* A member's answer, or its end (status -1). */
static void answered_locked(int pid, uint32_t id, int status, char *body, size_t len)
{
    member *m = status > 0 ? member_locked(pid) : NULL;
    for (pp_hub_req *t = hub.pending; t; t = t->next) {
        if (id && t->id != id)
            continue;
        for (int i = 0; i < t->nasked; i++) {
            if (t->pids[i] != pid || t->status[i])
                continue;
            if (m)
                m->answered++;
            if (t->collected) /* too late: the requester has what came in time */
                continue;
            t->status[i] = status;
            if (body && len) {
                t->body[i] = (pprof_buffer){body, len, len + 1};
                body = NULL;
            }
            t->nanswered++;
            PP_ASSERT(t->nanswered <= t->nasked); /* each member asked answers once */
            pthread_cond_broadcast(&t->cv);
        }
    }
    free(body);
}

static void drop_member_locked(member *m)
{
    PP_ASSERT(m->fd >= 0); /* a member's slot, not a free one (-1) */
    gone_member *g = &hub.gone[hub.ngone++ % GONE_KEPT];
    *g = (gone_member){m->pid, m->ppid, m->asked, m->answered, m->late, {0}, {0}, m->joined_s, pp_tree_now_s()};
    memcpy(g->name, m->name, sizeof m->name);
    memcpy(g->why, m->why, sizeof m->why);
    m->why[0] = 0;
    pp_tree_reader_reset(&m->in);
    pp_fd_close(m->fd);
    m->fd = -1;
    answered_locked(m->pid, 0, m->execs ? -2 : -1, NULL, 0); /* -2: its new image answers */
    m->execs = 0;
}

static void ask_joined_locked(member *m);

static void accept_member(int listen_fd)
{
    int fd = pp_accept_one(&hub_accept, listen_fd, 0, NULL, NULL);
    if (fd < 0)
        return;
    struct ucred cr;
    socklen_t cl = sizeof cr;
    pp_tree_msg m;
    char *body = NULL;
    struct timeval tv = {2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) || (cr.uid != getuid() && !pp_tree_descends(cr.pid)) ||
        pp_tree_recv(fd, &m, &body) || m.type != PP_TREE_HELLO) {
        free(body);
        pp_fd_close(fd);
        return;
    }
    free(body);
    tv.tv_sec = 0; /* read a piece at a time from now on (pp_tree_recv_some) */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    pthread_mutex_lock(&hub.mu);
    member *slot = NULL;
    for (int i = 0; i < MAX_MEMBERS && !slot; i++)
        if (hub.members[i].fd < 0)
            slot = &hub.members[i];
    if (!slot) {
        pthread_mutex_unlock(&hub.mu);
        pp_fd_close(fd);
        return;
    }
    slot->fd = fd;
    slot->pid = cr.pid;
    slot->ppid = m.status;
    slot->joined_s = pp_tree_now_s();
    slot->asked = slot->answered = slot->late = 0;
    pp_tree_comm(cr.pid, slot->name);
    ask_joined_locked(slot);
    pthread_mutex_lock(&slot->send_mu); /* after any request: the member knows what it was asked */
    pp_tree_send(fd, PP_TREE_HELLO, 0, 0, NULL, 0);
    pthread_mutex_unlock(&slot->send_mu);
    pthread_mutex_unlock(&hub.mu);
}

/* Drops requests whose requester never came back (its client went away
 * and the hub's own call was cancelled) two minutes after their deadline.
 * The hub's own answer always comes long before then otherwise. */
static void collect_abandoned_locked(void)
{
    int64_t now = pp_tree_now_s();
    for (pp_hub_req *t = hub.pending, *next; t; t = next) {
        next = t->next;
        if (now > t->deadline_s + 120) {
            free(t->owner);
            req_unref_locked(t);
        }
    }
}

static void *hub_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "pprof-hub");
    pprof_labels_unref(pp_own_labels_begin());
    struct pollfd pf[MAX_MEMBERS + 2];
    int who[MAX_MEMBERS + 2];
    for (;;) {
        int n = 0;
        pthread_mutex_lock(&hub.mu);
        if (hub.stop)
            break;
        pf[n++] = (struct pollfd){hub.listen_fd, pp_accept_events(&hub_accept), 0};
        pf[n++] = (struct pollfd){hub.alias_fd, hub.alias_fd >= 0 ? pp_accept_events(&hub_accept) : 0, 0};
        for (int i = 0; i < MAX_MEMBERS; i++)
            if (hub.members[i].fd >= 0) {
                who[n] = i;
                pf[n++] = (struct pollfd){hub.members[i].fd, POLLIN, 0};
            }
        collect_abandoned_locked();
        pthread_mutex_unlock(&hub.mu);
        if (poll(pf, (nfds_t)n, pp_accept_timeout(&hub_accept, 1000)) <= 0)
            continue;
        if (pf[0].revents & POLLIN)
            accept_member(pf[0].fd);
        if (pf[1].revents & POLLIN)
            accept_member(pf[1].fd);
        for (int k = 2; k < n; k++) {
            if (!pf[k].revents)
                continue;
            member *m = &hub.members[who[k]];
            /* What the member has sent so far, without waiting for the
             * rest: one stopped in the middle of a message holds back no
             * other member's answer. */
            int r = pp_tree_recv_some(pf[k].fd, &m->in);
            if (r == 0)
                continue;
            pp_tree_msg h = m->in.m;
            char *body = r > 0 ? m->in.body : NULL;
            m->in.body = NULL;
            pp_tree_reader_reset(&m->in);
            int bad = r < 0 || (h.type != PP_TREE_RES && h.type != PP_TREE_NOTE);
            pthread_mutex_lock(&hub.mu);
            int execs = h.type == PP_TREE_NOTE && h.status == 1;
            if (m->fd == pf[k].fd && r > 0 && (h.type == PP_TREE_BYE || h.type == PP_TREE_NOTE) && !execs)
                snprintf(m->why, sizeof m->why, "%s", body ? body : "");
            if (m->fd == pf[k].fd && r > 0 && h.type == PP_TREE_NOTE)
                m->execs = execs;
            if (m->fd == pf[k].fd && h.type == PP_TREE_NOTE && !bad) {
                free(body); /* kept for when its connection closes (an exec) */
                pthread_mutex_lock(&m->send_mu);
                /* An exiting hub has passed its notes on: the member waits
                 * and tells the hub that takes its place. */
                if (!execs && h.len && !hub.exiting)
                    pp_tree_send(m->fd, PP_TREE_NOTE, 0, 0, NULL, 0); /* read */
                pthread_mutex_unlock(&m->send_mu);
            } else if (m->fd == pf[k].fd) {
                if (bad) {
                    free(body);
                    drop_member_locked(m);
                } else {
                    answered_locked(m->pid, h.id, h.status ? h.status : 500, body, h.len);
                }
            } else {
                free(body);
            }
            pthread_mutex_unlock(&hub.mu);
        }
    }
    /* Stopped (hub_exit): the members see their connections end and one
     * takes this process's place; joining ones are refused. */
    for (int i = 0; i < MAX_MEMBERS; i++)
        if (hub.members[i].fd >= 0)
            drop_member_locked(&hub.members[i]);
    pp_fd_close(hub.listen_fd);
    pp_fd_close(hub.alias_fd);
    hub.listen_fd = hub.alias_fd = -1;
    hub.is_hub = hub.thread_started = 0;
    pthread_cond_broadcast(&hub_ended_cv);
    pthread_mutex_unlock(&hub.mu);
    return NULL;
}

/* The index's row about the tree (nothing when this process is no hub). */
static void write_index_row(pp_reply *r)
{
    pthread_mutex_lock(&hub.mu);
    if (hub.is_hub) {
        int64_t now = pp_tree_now_s();
        char self[16];
        pp_tree_comm((int)getpid(), self);
        pp_reply_printf(r, "<tr><td>Process tree</td><td>this process %d (%s) is the hub", (int)getpid(), self);
        int n = 0;
        for (int i = 0; i < MAX_MEMBERS; i++) {
            member *m = &hub.members[i];
            if (m->fd < 0)
                continue;
            pp_reply_printf(r,
                            "%s<a href=\"goroutine?debug=2&amp;pid=%d\">%d</a> (%s, parent %d, %lld s, "
                            "answered %d of %d requests, %d late)",
                            n++ ? ", " : "; members: ", m->pid, m->pid, m->name, m->ppid,
                            (long long)(now - m->joined_s), m->answered, m->asked, m->late);
        }
        pp_reply_printf(r, "%s; every profile answers for all of them (pid and process labels), ?pid=N for one, "
                           "?tree=0 for the hub alone",
                        n ? "" : "; no members");
        for (unsigned k = 0; k < GONE_KEPT && k < hub.ngone; k++) {
            const gone_member *g = &hub.gone[(hub.ngone - 1 - k) % GONE_KEPT];
            pp_reply_printf(r,
                            "%s%d (%s, parent %d, left %lld s ago after %lld s, answered %d of %d requests, "
                            "%d late%s",
                            k ? ", " : "; left lately: ", g->pid, g->name, g->ppid, (long long)(now - g->left_s),
                            (long long)(g->left_s - g->joined_s), g->answered, g->asked, g->late,
                            g->why[0] ? "; not profiled: it " : "");
            pp_write_html_escaped(r, g->why); /* a command line */
            pp_reply_printf(r, ")");
        }
        pp_reply_printf(r, "</td></tr>\n");
    }
    pthread_mutex_unlock(&hub.mu);
}

/* ------------------------------------------------------------- the hub */

/* The latest of the members that left lately with this pid, or NULL
 * (hub.mu held). */
static const gone_member *gone_locked(int pid)
{
    for (unsigned k = 0; k < GONE_KEPT && k < hub.ngone; k++)
        if (hub.gone[(hub.ngone - 1 - k) % GONE_KEPT].pid == pid)
            return &hub.gone[(hub.ngone - 1 - k) % GONE_KEPT];
    return NULL;
}

/* Ends both ways of fd's connection, if it is one; its poll wakes. */
static void end_connection(int fd)
{
    if (fd >= 0)
        shutdown(fd, SHUT_RDWR);
}

/* Sends every member the note `body` about process pid (hub.mu held). */
static void note_members_locked(int pid, const char *body)
{
    size_t n = strlen(body);
    for (int i = 0; i < MAX_MEMBERS; i++) {
        member *m = &hub.members[i];
        if (m->fd < 0)
            continue;
        pthread_mutex_lock(&m->send_mu);
        pp_tree_send(m->fd, PP_TREE_NOTE, 0, pid, body, n);
        pthread_mutex_unlock(&m->send_mu);
    }
}

/* The hub exits; a member that outlives it takes its place (tree_member.c).
 * The processes it names as not profiled, still running, go to each
 * member (NOTE: their pid in status; "PPID NAME", a tab, the reason), so
 * the next hub's index names them too: squid's kid execs as its master
 * takes the place of the process that daemonized it. So does the hub
 * itself when it stops because it enters a sandbox and lives on (chronyd
 * with its seccomp filter, whose child then serves). A note that comes
 * after is not acknowledged: its member waits, and tells the next hub. */
static void hub_exit(void)
{
    pthread_mutex_lock(&hub.mu);
    hub.exiting = hub.is_hub;
    char body[sizeof hub.gone[0].why + 32];
    for (unsigned k = hub.ngone > GONE_KEPT ? hub.ngone - GONE_KEPT : 0; hub.is_hub && k < hub.ngone; k++) {
        const gone_member *g = &hub.gone[k % GONE_KEPT];
        if (!g->why[0] || pp_tree_ended(g->pid))
            continue;
        snprintf(body, sizeof body, "%d %s\t%s", g->ppid, g->name, g->why);
        note_members_locked(g->pid, body);
    }
    const char *why = pp_sandboxed();
    if (hub.is_hub && why) {
        char self[16];
        pp_tree_comm((int)getpid(), self);
        snprintf(body, sizeof body, "%d %s\t%s", (int)getppid(), self[0] ? self : "?", why);
        note_members_locked((int)getpid(), body);
    }
    /* A process that lives on in its sandbox ends its hub thread before
     * the sandbox is in place (a filter may not allow its calls), so that
     * a member takes the hub's place: the shutdowns wake its poll. */
    if (why && hub.thread_started) {
        hub.stop = 1;
        end_connection(hub.listen_fd);
        end_connection(hub.alias_fd);
        for (int i = 0; i < MAX_MEMBERS; i++)
            end_connection(hub.members[i].fd);
        int64_t end = pp_now_ns(CLOCK_MONOTONIC) + 1000000000;
        while (hub.thread_started && pp_cond_wait_until(&hub_ended_cv, &hub.mu, end) == 0)
            ;
    }
    pthread_mutex_unlock(&hub.mu);
}

void pp_hub_keep_note(int pid, const char *body)
{
    int ppid = 0, at = 0;
    char name[16] = "";
    const char *tab = strchr(body, '\t');
    if (!tab || sscanf(body, "%d %15[^\t]%n", &ppid, name, &at) < 2)
        return;
    pthread_mutex_lock(&hub.mu);
    gone_member *g = &hub.gone[hub.ngone++ % GONE_KEPT];
    int64_t now = pp_tree_now_s();
    *g = (gone_member){pid, ppid, 0, 0, 0, {0}, {0}, now, now};
    snprintf(g->name, sizeof g->name, "%s", name);
    snprintf(g->why, sizeof g->why, "%s", tab + 1);
    pthread_mutex_unlock(&hub.mu);
}

void pp_hub_note_left(int pid, int sandboxed_only)
{
    if (pp_tree_ended(pid))
        return;
    int mode = pp_tree_seccomp(pid);
    if (sandboxed_only && !mode)
        return;
    pthread_mutex_lock(&hub.mu);
    int noted = gone_locked(pid) != NULL;
    pthread_mutex_unlock(&hub.mu);
    if (noted)
        return;
    char name[16], body[128];
    pp_tree_comm(pid, name);
    snprintf(body, sizeof body, "%d %s\t%s", pp_tree_parent_of(pid), name[0] ? name : "?",
             mode == 2   ? "entered a seccomp filter"
             : mode == 1 ? "entered seccomp strict mode"
                         : "stopped serving and lives on");
    pp_hub_keep_note(pid, body);
}

void pp_hub_init(void)
{
    pp_cond_init_monotonic(&hub_ended_cv);
    pp_shutdown_hook_add(hub_exit);
    pp_index_row_add(write_index_row);
    for (int i = 0; i < MAX_MEMBERS; i++) {
        hub.members[i].fd = -1;
        pthread_mutex_init(&hub.members[i].send_mu, NULL);
    }
}

int pp_hub_after_fork(void)
{
    int was_hub = hub.is_hub; /* the copy of the parent's state: no other thread reads or writes it */
    hub.mu = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    hub.listen_fd = -1; /* its descriptors are closed already (base/fds.h) */
    for (int i = 0; i < MAX_MEMBERS; i++) {
        hub.members[i].fd = -1;
        hub.members[i].send_mu = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
        hub.members[i].in = (pp_tree_reader){0}; /* a message the parent's hub thread was reading */
    }
    hub.pending = NULL; /* the parent's requests are not this process's (leaked) */
    hub.ngone = 0;
    hub.is_hub = 0;
    hub.exiting = 0;
    hub.thread_started = 0;
    hub.stop = 0;
    hub.alias_fd = -1;
    return was_hub;
}

/* Starts the hub thread once (lock held); 0 or PPROF_ESYS. */
static int start_thread_locked(void)
{
    if (hub.thread_started)
        return 0;
    int rc = pp_spawn_detached(hub_main, NULL, NULL);
    hub.thread_started = rc == 0;
    return rc;
}

int pp_hub_start(void)
{
    pthread_mutex_lock(&hub.mu);
    if (hub.is_hub) {
        pthread_mutex_unlock(&hub.mu);
        return 0;
    }
    char name[PP_TREE_NAME_MAX];
    pp_tree_name_of((int)getpid(), name);
    int fd = pp_tree_listen(name);
    if (fd < 0) {
        pthread_mutex_unlock(&hub.mu);
        return pp_error_detail(PPROF_ESYS, "cannot listen for the process tree: %s", strerror(errno));
    }
    hub.listen_fd = fd;
    snprintf(hub.name, sizeof hub.name, "%s", name);
    hub.is_hub = 1;
    int rc = start_thread_locked();
    pthread_mutex_unlock(&hub.mu);
    return rc ? pp_fail(rc) : 0;
}

int pp_hub_take_over(void)
{
    pthread_mutex_lock(&hub.mu);
    int fd = pp_tree_listen(hub.name);
    if (fd < 0) {
        pthread_mutex_unlock(&hub.mu);
        return -1;
    }
    hub.listen_fd = fd;
    char own[PP_TREE_NAME_MAX];
    pp_tree_name_of((int)getpid(), own);
    hub.alias_fd = strcmp(own, hub.name) != 0 ? pp_tree_listen(own) : -1;
    hub.is_hub = 1;
    start_thread_locked();
    pthread_mutex_unlock(&hub.mu);
    return 0;
}

int pp_hub_here(void)
{
    pthread_mutex_lock(&hub.mu);
    int here = hub.is_hub;
    pthread_mutex_unlock(&hub.mu);
    return here;
}

int pp_hub_has_members(void)
{
    int has = 0;
    pthread_mutex_lock(&hub.mu);
    for (int i = 0; hub.is_hub && i < MAX_MEMBERS && !has; i++)
        has = hub.members[i].fd >= 0;
    pthread_mutex_unlock(&hub.mu);
    return has;
}

void pp_hub_no_member(int pid, char *out, size_t size)
{
    pthread_mutex_lock(&hub.mu);
    const gone_member *g = gone_locked(pid);
    if (g && g->why[0]) {
        snprintf(out, size, "process %d (%s) left the tree: it %s, and is not profiled", pid, g->name, g->why);
    } else {
        int n = snprintf(out, size, "no process %d in the tree; %s: %d", pid, g ? "it left; the tree" : "the tree",
                         (int)getpid());
        for (int i = 0; i < MAX_MEMBERS && n > 0 && (size_t)n < size; i++)
            if (hub.members[i].fd >= 0)
                n += snprintf(out + n, size - (size_t)n, " %d", hub.members[i].pid);
    }
    pthread_mutex_unlock(&hub.mu);
}

void pp_hub_name(char out[PP_TREE_NAME_MAX])
{
    pthread_mutex_lock(&hub.mu);
    memcpy(out, hub.name, sizeof hub.name);
    pthread_mutex_unlock(&hub.mu);
}

void pp_hub_set_name(const char *name)
{
    pthread_mutex_lock(&hub.mu);
    snprintf(hub.name, sizeof hub.name, "%s", name);
    pthread_mutex_unlock(&hub.mu);
}

/* ------------------------------------------------------------ requests */

/* The message asking a member for wire: the request, and with_maps the
 * hub's executable maps after a NUL. msg->cap 0: wire itself. */
static void request_msg(const char *wire, int with_maps, pprof_buffer *msg)
{
    *msg = (pprof_buffer){0};
    pprof_writer w = pprof_writer_buffer(msg);
    if (w.write(w.ctx, wire, strlen(wire) + 1) || (with_maps && pp_tree_exec_maps(msg))) {
        pprof_buffer_free(msg); /* the members name everything themselves */
        *msg = (pprof_buffer){(char *)wire, strlen(wire), 0};
    } else if (!with_maps) {
        msg->len--; /* no NUL: the request alone */
    }
}

/* Sends member m request t (msg), counting it asked; one that cannot be
 * sent to is answered as gone at once. */
static void ask_locked(pp_hub_req *t, member *m, const pprof_buffer *msg)
{
    PP_ASSERT(t->nasked < PP_TREE_MAX_MEMBERS); /* tree_internal.h: one place per member */
    t->pids[t->nasked] = m->pid;
    memcpy(t->names[t->nasked], m->name, sizeof m->name);
    t->nasked++;
    m->asked++;
    pthread_mutex_lock(&m->send_mu);
    int bad = pp_tree_send(m->fd, PP_TREE_REQ, t->id, 0, msg->data, msg->len);
    pthread_mutex_unlock(&m->send_mu);
    if (bad)
        answered_locked(m->pid, t->id, -1, NULL, 0);
}

/* A member that joined during the window of a request for the whole tree
 * is asked for the rest of it (window_ms=, at least 100 ms left): a
 * process that starts and ends inside the window counts from its start. */
static void ask_joined_locked(member *m)
{
    int64_t now = pp_now_ns(CLOCK_MONOTONIC);
    for (pp_hub_req *t = hub.pending; t; t = t->next) {
        int64_t left_ms = (t->window_end_ns - now) / 1000000;
        if (t->collected || t->only_pid || !t->wire || left_ms < 100 || t->nasked >= PP_TREE_MAX_MEMBERS)
            continue;
        char wire[1300];
        snprintf(wire, sizeof wire, "%s%swindow_ms=%lld", t->wire, strchr(t->wire, '?') ? "&" : "?",
                 (long long)left_ms);
        pprof_buffer msg;
        request_msg(wire, t->with_maps, &msg);
        ask_locked(t, m, &msg);
        if (msg.cap)
            pprof_buffer_free(&msg);
    }
}

pp_hub_req *pp_hub_ask(const char *wire, int with_maps, int pid, int window_s, int64_t deadline_s, void *owner)
{
    pprof_buffer msg;
    request_msg(wire, with_maps, &msg);
    pp_hub_req *t = calloc(1, sizeof *t);
    if (!t) {
        if (msg.cap)
            pprof_buffer_free(&msg);
        return NULL;
    }
    pp_cond_init_monotonic(&t->cv); /* its deadline is on the monotonic clock */
    t->deadline_s = deadline_s;
    t->owner = owner;
    t->only_pid = pid;
    t->with_maps = with_maps;
    t->window_end_ns = window_s > 0 ? pp_now_ns(CLOCK_MONOTONIC) + (int64_t)window_s * 1000000000 : 0;
    t->wire = window_s > 0 ? strdup(wire) : NULL; /* for members that join during the window */
    t->refs = 1;
    pthread_mutex_lock(&hub.mu);
    t->id = ++hub.next_id;
    t->next = hub.pending;
    hub.pending = t;
    for (int i = 0; i < MAX_MEMBERS; i++) {
        member *m = &hub.members[i];
        if (m->fd < 0 || (pid && m->pid != pid))
            continue;
        ask_locked(t, m, &msg);
    }
    pthread_mutex_unlock(&hub.mu);
    if (msg.cap)
        pprof_buffer_free(&msg);
    return t;
}

void pp_hub_collect(pp_hub_req *t)
{
    pthread_mutex_lock(&hub.mu);
    PP_ASSERT(!t->collected && t->refs > 0); /* collected once, by the requester that holds it */
    while (t->nanswered < t->nasked) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        if (ts.tv_sec >= t->deadline_s)
            break;
        ts.tv_sec = t->deadline_s;
        ts.tv_nsec = 0;
        pp_cond_timedwait(&t->cv, &hub.mu, &ts);
    }
    for (int i = 0; i < t->nasked; i++) { /* members that did not answer in time, for the index */
        member *m = t->status[i] == 0 ? member_locked(t->pids[i]) : NULL;
        if (m)
            m->late++;
    }
    t->collected = 1;
    pthread_mutex_unlock(&hub.mu);
}

void pp_hub_release(pp_hub_req *t)
{
    pthread_mutex_lock(&hub.mu);
    req_unref_locked(t);
    pthread_mutex_unlock(&hub.mu);
}
