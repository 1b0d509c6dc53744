/* tree.c: one endpoint for a process tree.
 *
 * The process that serves is the hub. It listens on a Unix socket in the
 * abstract namespace, "libpprof-tree-<pid>" (no file to clean up; only
 * peers of the same user are kept, by SO_PEERCRED). A child it forks, and
 * their children, keep the socket's name: an atfork handler starts an
 * agent thread in each child (every signal blocked, the profiler's own
 * work) that connects, says hello and answers the hub's requests with
 * pprof_http_handle in its own process. A child that execs with the
 * preload inherited finds the hub among its ancestors (the socket is
 * named after the hub's pid) and joins it instead of serving. No child
 * takes a port.
 *
 * A request to the hub for a profile (profile, heap, allocs, mutex, block,
 * goroutine, threadcreate, delta_*, custom profiles) goes to every member
 * as it comes, then runs in the hub; when the hub's answer is ready the
 * members' are awaited (until the window's end plus 5 s), and the
 * protobufs are merged (pprof_merge) with the labels pid and process on
 * every sample. A member that exits (exit, or main returning) during a
 * window finishes its calls at once and sends what they hold (a shutdown
 * hook); one that does not answer in time, or ends otherwise, is named in
 * the profile's comments. ?pid=N answers with process N's
 * profile as it is (any format); ?tree=0, and text formats (debug >= 1)
 * without a pid, only the hub's.
 *
 * A request whose client went away (the hub's own call cancelled) is
 * dropped two minutes after its deadline.
 *
 * Wire format, both ways: a header {magic, type, id, status, len} and len
 * bytes. Hub to member: REQ with "name?query". Member to hub: HELLO (its
 * parent's pid in status), RES with the response body and status.
 *
 * One hub thread polls the listening socket and the members' sockets,
 * reads every message and files responses under their request; requests
 * are sent from the requesting thread under the member's send lock.
 *
 * Takeover (daemons): when the hub exits or execs while members live on,
 * each member's agent sees its connection end and tries to join again
 * under the tree's name. The hub's own pid serving again (an exec) is
 * waited for up to 3 s; once the hub is gone, a member whose parent is
 * gone too (the daemon a double fork left) binds the tree's name after
 * 100 ms, any other after 1 s (leaving the place to its parent): the
 * first to bind it is the new hub, which also listens under its own pid's
 * name (for exec'd descendants) and serves the endpoint at the address the
 * old hub served (the server's takeover hook); the others join it.
 */
#define _GNU_SOURCE
#include "accept.h"
#include "http_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAGIC 0x70707472u
enum { MSG_HELLO = 1, MSG_REQ, MSG_RES };
#define MAX_MEMBERS 256
#define MAX_BODY (256u << 20)
#define GRACE_S 5

typedef struct msg {
    uint32_t magic, type, id;
    int32_t status;
    uint64_t len;
} msg;

typedef struct member {
    int fd; /* -1: free */
    int pid, ppid;
    char name[16];
    int64_t joined_s;
    int asked, answered, late; /* requests it was asked, answered, and not in time (the index) */
    pthread_mutex_t send_mu;
} member;

/* A member that has left, for the index. */
typedef struct gone_member {
    int pid, ppid, asked, answered, late;
    char name[16];
    int64_t joined_s, left_s;
} gone_member;
#define GONE_KEPT 8

/* A request fanned out to the members. */
typedef struct treq {
    struct treq *next;
    uint32_t id;
    int refs;                 /* 1 while pending: the requester finishes it */
    int nasked, nanswered;
    int pids[MAX_MEMBERS];    /* asked */
    char names[MAX_MEMBERS][16];
    int status[MAX_MEMBERS];  /* 0: no answer yet; -1: gone */
    pprof_buffer body[MAX_MEMBERS];
    pthread_cond_t cv;
    int only_pid;             /* ?pid=N, 0 for all */
    int raw_proto;            /* ?format=proto: the member's answer is an uncompressed profile */
    int fold, fold_labels;    /* format=folded for the tree: the merge is folded, labels=1 */
    char fold_sample[64];     /* its sample_index, "" for the default */
    void *call;               /* the requester's tree_call */
    int64_t deadline_s;
    pprof_http_done done;
    void *ctx;
} treq;

static struct {
    pthread_mutex_t mu;       /* everything below */
    char name[108];           /* the socket's abstract name, "" when no tree */
    int is_hub;
    int listen_fd;
    int alias_fd;             /* a hub that took over: also its own pid's name, or -1 */
    member members[MAX_MEMBERS];
    gone_member gone[GONE_KEPT]; /* the last to leave, a ring */
    unsigned ngone;
    treq *pending;
    uint32_t next_id;
    int thread_started;
} hub = {.mu = PTHREAD_MUTEX_INITIALIZER, .listen_fd = -1, .alias_fd = -1};
static int hub_pid, joined_ppid; /* a member's hub and its parent when it joined */
static int forking_pid;           /* the process that forks, in its prepare handler */

static pthread_once_t tree_once = PTHREAD_ONCE_INIT;
static void tree_init_once(void);
static void write_index_row(pp_reply *r);

static int64_t mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec;
}

/* Sends (`out`) or receives all n bytes; 0 or -1. */
static int io_full(int fd, void *p, size_t n, int out)
{
    for (char *c = p; n;) {
        ssize_t k = out ? send(fd, c, n, MSG_NOSIGNAL) : recv(fd, c, n, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

static int send_msg(int fd, uint32_t type, uint32_t id, int status, const void *body, size_t len)
{
    msg m = {MAGIC, type, id, status, len};
    return io_full(fd, &m, sizeof m, 1) || (len && io_full(fd, (void *)body, len, 1)) ? -1 : 0;
}

/* Reads one message; *body is malloc'd (NUL-terminated) when len > 0. */
static int recv_msg(int fd, msg *m, char **body)
{
    *body = NULL;
    if (io_full(fd, m, sizeof *m, 0) || m->magic != MAGIC || m->len > MAX_BODY)
        return -1;
    if (!(*body = malloc(m->len + 1)))
        return -1;
    (*body)[m->len] = 0;
    if (m->len && io_full(fd, *body, m->len, 0)) {
        free(*body);
        *body = NULL;
        return -1;
    }
    return 0;
}

static void comm_of(int pid, char out[16])
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, out, 15) : -1;
    if (fd >= 0)
        close(fd);
    out[n > 0 ? n : 0] = 0;
    out[strcspn(out, "\n")] = 0;
}

/* ------------------------------------------------------------------ hub */

static void treq_unref_locked(treq *t)
{
    if (--t->refs)
        return;
    for (treq **p = &hub.pending; *p; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            break;
        }
    for (int i = 0; i < t->nasked; i++)
        pprof_buffer_free(&t->body[i]);
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
    for (treq *t = hub.pending; t; t = t->next) {
        if (id && t->id != id)
            continue;
        for (int i = 0; i < t->nasked; i++) {
            if (t->pids[i] != pid || t->status[i])
                continue;
            t->status[i] = status;
            if (body && len) {
                t->body[i] = (pprof_buffer){body, len, len + 1};
                body = NULL;
            }
            t->nanswered++;
            if (m)
                m->answered++;
            pthread_cond_broadcast(&t->cv);
        }
    }
    free(body);
}

static void drop_member_locked(member *m)
{
    hub.gone[hub.ngone++ % GONE_KEPT] =
        (gone_member){m->pid, m->ppid, m->asked, m->answered, m->late, {0}, m->joined_s, mono_s()};
    memcpy(hub.gone[(hub.ngone - 1) % GONE_KEPT].name, m->name, sizeof m->name);
    pp_fd_close(m->fd);
    m->fd = -1;
    answered_locked(m->pid, 0, -1, NULL, 0);
}

static pp_accept_state hub_accept; /* the hub thread's */

static int parent_of(int pid);

/* Whether process pid descends from this one (up to 16 generations): a
 * worker that changed its user after the fork (nginx's, as root) still
 * joins its hub, which keeps out other users' processes. */
static int descends(int pid)
{
    int me = (int)getpid();
    for (int depth = 0; pid > 1 && depth < 16; depth++)
        if ((pid = parent_of(pid)) == me)
            return 1;
    return 0;
}

static void accept_member(int listen_fd)
{
    int fd = pp_accept_one(&hub_accept, listen_fd, 0, NULL, NULL);
    if (fd < 0)
        return;
    struct ucred cr;
    socklen_t cl = sizeof cr;
    msg m;
    char *body = NULL;
    struct timeval tv = {2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) || (cr.uid != getuid() && !descends(cr.pid)) ||
        recv_msg(fd, &m, &body) ||
        m.type != MSG_HELLO) {
        free(body);
        pp_fd_close(fd);
        return;
    }
    free(body);
    tv.tv_sec = 30; /* a response body in flight */
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
    slot->joined_s = mono_s();
    slot->asked = slot->answered = slot->late = 0;
    comm_of(cr.pid, slot->name);
    pthread_mutex_unlock(&hub.mu);
}

/* Drops requests whose requester never came back (its client went away
 * and the hub's own call was cancelled) two minutes after their deadline.
 * The hub's own answer always comes long before then otherwise. */
static void collect_abandoned_locked(void)
{
    int64_t now = mono_s();
    for (treq *t = hub.pending, *next; t; t = next) {
        next = t->next;
        if (now > t->deadline_s + 120) {
            free(t->call);
            treq_unref_locked(t);
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
            msg h;
            char *body = NULL;
            int bad = recv_msg(pf[k].fd, &h, &body) || h.type != MSG_RES;
            pthread_mutex_lock(&hub.mu);
            if (m->fd == pf[k].fd) {
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
    return NULL;
}

/* ---------------------------------------------------------------- member */

static void agent_done(void *ctx, const pprof_http_response *resp)
{
    uintptr_t v = (uintptr_t)ctx;
    member *self = &hub.members[0]; /* a member's own connection lives here */
    pthread_mutex_lock(&self->send_mu);
    if (self->fd >= 0)
        send_msg(self->fd, MSG_RES, (uint32_t)v, resp->status, resp->body.data, resp->body.len);
    pthread_mutex_unlock(&self->send_mu);
}

static int hub_connect(void);

/* ------------------------------------------------------------ takeover */

static int (*takeover_serve)(void); /* the server's: serve where the old hub served */

void pp_tree_set_takeover(int (*serve)(void))
{
    takeover_serve = serve;
}

/* A socket listening under the abstract name `name`, or -1. */
static int listen_name(const char *name)
{
    int fd = pp_fd_socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t n = strlen(name);
    memcpy(a.sun_path + 1, name, n);
    if (fd >= 0 && (bind(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) ||
                    listen(fd, 64))) {
        int e = errno;
        pp_fd_close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Whether process pid has ended (gone, or a zombie). */
static int pid_ended(int pid)
{
    if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH))
        return 1;
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/* This process becomes the hub of the tree named hub.name: 0, or -1 when
 * the name is taken (another member was first). */
static int take_hub(void)
{
    pthread_mutex_lock(&hub.mu);
    int fd = listen_name(hub.name);
    if (fd < 0) {
        pthread_mutex_unlock(&hub.mu);
        return -1;
    }
    for (int i = 0; i < MAX_MEMBERS; i++)
        hub.members[i].fd = -1; /* the agent's own connection is closed */
    hub.listen_fd = fd;
    char own[64];
    snprintf(own, sizeof own, "libpprof-tree-%d", (int)getpid());
    hub.alias_fd = strcmp(own, hub.name) != 0 ? listen_name(own) : -1;
    hub.is_hub = 1;
    if (!hub.thread_started)
        hub.thread_started = pp_spawn_detached(hub_main, NULL) == 0;
    pthread_mutex_unlock(&hub.mu);
    return 0;
}

/* The agent's connection to its hub ended, or could not be made, while
 * this process lives on: joins the tree again, or takes the hub's place
 * (see the top of the file). Returns 1 when joined again (the connection
 * in members[0]), 0 when the agent ends (this process is the hub now, or
 * no hub came within 15 s). */
static int hub_gone(void)
{
    if (pp_shutting_down() || !hub.name[0])
        return 0;
    member *self = &hub.members[0];
    int64_t t0 = pp_now_ns(CLOCK_MONOTONIC);
    for (;;) {
        int fd = hub_connect();
        if (fd >= 0) {
            pthread_mutex_lock(&self->send_mu);
            self->fd = fd;
            pthread_mutex_unlock(&self->send_mu);
            return 1;
        }
        int64_t waited_ms = (pp_now_ns(CLOCK_MONOTONIC) - t0) / 1000000;
        int orphan = joined_ppid && (int)getppid() != joined_ppid;
        int64_t wait_ms = !pid_ended(hub_pid) ? 3000 : orphan ? 100 : 1000;
        /* Only a process that can serve where the hub served (it forked
         * from a server and kept its configuration) takes the hub's place;
         * one that exec'd joins whoever does. */
        if (takeover_serve && waited_ms >= wait_ms && take_hub() == 0) {
            takeover_serve();
            return 0;
        }
        if (waited_ms > 15000 || pp_shutting_down())
            return 0;
        nanosleep(&(struct timespec){0, 50000000}, NULL);
    }
}

static void *agent_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "pprof-member");
    pprof_labels_unref(pp_own_labels_begin());
    member *self = &hub.members[0];
    if (self->fd < 0) { /* a forked child connects here, not in fork's path */
        int fd = hub_connect();
        pthread_mutex_lock(&self->send_mu);
        self->fd = fd;
        pthread_mutex_unlock(&self->send_mu);
        if (fd < 0 && !hub_gone())
            return NULL;
    }
    for (;;) {
        msg m;
        char *body = NULL;
        if (recv_msg(self->fd, &m, &body) || m.type != MSG_REQ) {
            free(body);
            pthread_mutex_lock(&self->send_mu);
            pp_fd_close(self->fd);
            self->fd = -1;
            pthread_mutex_unlock(&self->send_mu);
            if (hub_gone()) /* joined again */
                continue;
            return NULL;
        }
        char path[256];
        char *q = strchr(body, '?');
        if (q)
            *q++ = 0;
        snprintf(path, sizeof path, "%s%s", PP_DEFAULT_PREFIX, body);
        pprof_http_request req = {"GET", path, q, NULL, 0};
        if (pprof_http_handle(NULL, &req, agent_done, (void *)(uintptr_t)m.id, NULL) != 0)
            agent_done((void *)(uintptr_t)m.id, &(pprof_http_response){.status = 500});
        free(body);
    }
}

/* A connection to the hub named hub.name that has said hello, or -1; it
 * notes the hub's pid and this process's parent for a takeover. */
static int hub_connect(void)
{
    int fd = pp_fd_socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t n = strlen(hub.name);
    memcpy(a.sun_path + 1, hub.name, n);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) ||
        send_msg(fd, MSG_HELLO, 0, (int)getppid(), NULL, 0)) {
        if (fd >= 0)
            pp_fd_close(fd);
        return -1;
    }
    struct ucred cr;
    socklen_t cl = sizeof cr;
    hub_pid = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0 ? cr.pid : 0;
    if (!joined_ppid) /* an exec'd member: its parent now (a forked one's: at the fork) */
        joined_ppid = (int)getppid();
    return fd;
}

/* Joins the hub named hub.name and starts the agent; with `now`, the
 * connection is made here (to learn whether there is a hub), else by the
 * agent (a fork returns without waiting for it). 0 or -1. */
static int join(int now)
{
    int fd = now ? hub_connect() : -1;
    if (now && fd < 0)
        return -1;
    hub.members[0].fd = fd;
    if (pp_spawn_detached(agent_main, NULL) != 0) {
        if (fd >= 0)
            pp_fd_close(fd);
        hub.members[0].fd = -1;
        return -1;
    }
    return 0;
}

static void tree_fork_prepare(void)
{
    forking_pid = (int)getpid();
}

/* In a forked child of a tree's process: join the hub. */
static void tree_fork_child(void)
{
    hub.mu = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    hub.listen_fd = -1; /* its descriptors are closed already (base/fds.h) */
    for (int i = 0; i < MAX_MEMBERS; i++) {
        hub.members[i].fd = -1;
        hub.members[i].send_mu = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    }
    hub.pending = NULL; /* the parent's requests are not this process's (leaked) */
    hub.ngone = 0;
    hub.is_hub = 0;
    hub.thread_started = 0;
    hub.alias_fd = -1;
    joined_ppid = forking_pid; /* getppid() may already say 1 */
    if (hub.name[0])
        join(0);
}

/* The parent of pid, from /proc, or 0. */
static int parent_of(int pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    const char *close_paren = strrchr(buf, ')'); /* the name may hold spaces */
    int ppid = 0;
    if (close_paren)
        sscanf(close_paren + 1, " %*c %d", &ppid);
    return ppid;
}

int pp_tree_join_ancestor(void)
{
    const char *env = getenv("LIBPPROF_TREE");
    if (env && !strcmp(env, "0"))
        return -1;
    pthread_once(&tree_once, tree_init_once);
    for (int pid = getppid(), depth = 0; pid > 1 && depth < 16; pid = parent_of(pid), depth++) {
        pthread_mutex_lock(&hub.mu);
        snprintf(hub.name, sizeof hub.name, "libpprof-tree-%d", pid);
        int rc = join(1);
        if (rc)
            hub.name[0] = 0;
        pthread_mutex_unlock(&hub.mu);
        if (rc == 0)
            return 0;
    }
    return -1;
}

/* ------------------------------------------------------------ requests */

/* A shutdown hook: a member that exits during a window answers with what
 * the window holds so far, before its agent's connection closes. */
static void member_exit(void)
{
    member *self = &hub.members[0];
    pthread_mutex_lock(&hub.mu);
    int hub_here = hub.is_hub;
    pthread_mutex_unlock(&hub.mu);
    pthread_mutex_lock(&self->send_mu);
    int joined = !hub_here && self->fd >= 0;
    pthread_mutex_unlock(&self->send_mu);
    if (joined)
        pp_call_finish_all_now(2000000000LL);
}

static void tree_init_once(void)
{
    pp_shutdown_hook_add(member_exit);
    pp_index_row_add(write_index_row);
    for (int i = 0; i < MAX_MEMBERS; i++) {
        hub.members[i].fd = -1;
        pthread_mutex_init(&hub.members[i].send_mu, NULL);
    }
    pthread_atfork(tree_fork_prepare, NULL, tree_fork_child);
}

int pp_tree_start(void)
{
    pthread_once(&tree_once, tree_init_once);
    const char *env = getenv("LIBPPROF_TREE");
    if (env && !strcmp(env, "0"))
        return 0;
    pthread_mutex_lock(&hub.mu);
    if (hub.is_hub) {
        pthread_mutex_unlock(&hub.mu);
        return 0;
    }
    char name[64];
    snprintf(name, sizeof name, "libpprof-tree-%d", (int)getpid());
    int fd = listen_name(name);
    if (fd < 0) {
        pthread_mutex_unlock(&hub.mu);
        return pp_error_detail(PPROF_ESYS, "cannot listen for the process tree: %s", strerror(errno));
    }
    hub.listen_fd = fd;
    snprintf(hub.name, sizeof hub.name, "%s", name);
    hub.is_hub = 1;
    int rc = 0;
    if (!hub.thread_started) {
        rc = pp_spawn_detached(hub_main, NULL);
        hub.thread_started = rc == 0;
        if (rc)
            rc = pp_fail(rc);
    }
    pthread_mutex_unlock(&hub.mu);
    return rc;
}

/* The value of `key` in the raw query (into out), and the query without
 * it (into rest). Returns 1 when present. */
static int take_param(const char *query, const char *key, char *out, size_t outlen, char *rest, size_t restlen)
{
    int found = 0;
    size_t r = 0, klen = strlen(key);
    rest[0] = 0;
    out[0] = 0;
    for (const char *s = query ? query : ""; *s;) {
        size_t len = strcspn(s, "&");
        if (len > klen && !strncmp(s, key, klen) && s[klen] == '=') {
            snprintf(out, outlen, "%.*s", (int)(len - klen - 1), s + klen + 1);
            found = 1;
        } else if (len && r + len + 2 < restlen) {
            if (r)
                rest[r++] = '&';
            memcpy(rest + r, s, len);
            r += len;
            rest[r] = 0;
        }
        s += len;
        if (*s == '&')
            s++;
    }
    return found;
}

/* How many times key= appears in query. */
static int count_param(const char *query, const char *key)
{
    int n = 0;
    size_t klen = strlen(key);
    for (const char *s = query ? query : ""; *s;) {
        size_t len = strcspn(s, "&");
        n += len > klen && !strncmp(s, key, klen) && s[klen] == '=';
        s += len;
        if (*s == '&')
            s++;
    }
    return n;
}

typedef struct tree_call {
    treq *t;
    pprof_http_done done;
    void *ctx;
} tree_call;

static int header_is(const pprof_http_response *r, const char *name, const char *value)
{
    for (size_t i = 0; i < r->nheaders; i++)
        if (!strcasecmp(r->headers[i].name, name))
            return !strcmp(r->headers[i].value, value);
    return 0;
}

/* Members that did not answer by the deadline, for the index. */
static void count_late_locked(const treq *t)
{
    for (int i = 0; i < t->nasked; i++) {
        member *m = t->status[i] == 0 ? member_locked(t->pids[i]) : NULL;
        if (m)
            m->late++;
    }
}

/* Makes the merged profile in r the folded text the request asked for, or
 * the error saying why it cannot be. */
static void fold_reply(const treq *t, pprof_http_response *r)
{
    char error[256];
    pprof_folded_config fc = {t->fold_sample[0] ? t->fold_sample : NULL, t->fold_labels};
    pprof_buffer text = {0};
    int rc = pprof_fold(r->body.data, r->body.len, &fc, pprof_writer_buffer(&text));
    pprof_buffer_free(&r->body);
    r->nheaders = 1;
    r->headers[0].name = "Content-Type";
    r->headers[0].value = "text/plain; charset=utf-8";
    if (rc == 0) {
        r->body = text;
        return;
    }
    pprof_buffer_free(&text);
    r->status = rc == PPROF_ENOTFOUND ? 400 : 500;
    int n = snprintf(error, sizeof error, "%s%s\n", rc == PPROF_ENOTFOUND ? "invalid value for \"sample_index\" - " : "",
                     pprof_last_error());
    r->body = (pprof_buffer){0};
    pprof_writer wr = pprof_writer_buffer(&r->body);
    wr.write(wr.ctx, error, (size_t)(n < (int)sizeof error ? n : (int)sizeof error - 1));
}

/* The hub's own answer is ready: await the members, then answer. */
static void tree_done(void *ctx, const pprof_http_response *resp)
{
    tree_call *c = ctx;
    treq *t = c->t;
    pthread_mutex_lock(&hub.mu);
    while (t->nanswered < t->nasked) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        if (ts.tv_sec >= t->deadline_s)
            break;
        ts.tv_sec = t->deadline_s;
        ts.tv_nsec = 0;
        pthread_cond_timedwait(&t->cv, &hub.mu, &ts);
    }
    count_late_locked(t);
    if (t->only_pid) {
        int i = 0;
        while (i < t->nasked && t->pids[i] != t->only_pid)
            i++;
        pprof_http_response r = {.status = 504};
        char text[128];
        if (i < t->nasked && t->status[i] > 0) {
            r.status = t->status[i];
            r.body = t->body[i];
        } else {
            snprintf(text, sizeof text, "process %d did not answer in time\n", t->only_pid);
            r.body = (pprof_buffer){text, strlen(text), 0};
        }
        /* the member's answer is a gzipped profile or text: its bytes say which */
        const unsigned char *b = (const unsigned char *)r.body.data;
        int gz = (r.body.len >= 2 && b[0] == 0x1f && b[1] == 0x8b) || (t->raw_proto && r.status == 200);
        r.headers[0].name = "Content-Type";
        r.headers[0].value = gz ? "application/octet-stream" : "text/plain; charset=utf-8";
        r.nheaders = 1;
        pthread_mutex_unlock(&hub.mu);
        c->done(c->ctx, &r);
        pthread_mutex_lock(&hub.mu);
    } else if (resp->status != 200 || !header_is(resp, "Content-Type", "application/octet-stream")) {
        pthread_mutex_unlock(&hub.mu);
        c->done(c->ctx, resp);
        pthread_mutex_lock(&hub.mu);
    } else {
        pprof_merge_input in[MAX_MEMBERS + 1];
        pprof_label labels[MAX_MEMBERS + 1];
        pprof_num_label pids[MAX_MEMBERS + 1];
        char self_name[16];
        char comments[MAX_MEMBERS][96];
        size_t n = 0;
        comm_of((int)getpid(), self_name);
        pids[0] = (pprof_num_label){"pid", (int64_t)getpid(), NULL};
        labels[0] = (pprof_label){"process", self_name};
        in[n++] = (pprof_merge_input){resp->body.data, resp->body.len, &labels[0], 1, &pids[0], 1, NULL};
        for (int i = 0; i < t->nasked; i++) {
            pids[n] = (pprof_num_label){"pid", t->pids[i], NULL};
            labels[n] = (pprof_label){"process", t->names[i]};
            if (t->status[i] == 200 && t->body[i].len) {
                in[n] = (pprof_merge_input){t->body[i].data, t->body[i].len, &labels[n], 1, &pids[n], 1, NULL};
            } else {
                snprintf(comments[i], sizeof comments[i], "process %d (%s) %s", t->pids[i], t->names[i],
                         t->status[i] == -1  ? "ended before it answered"
                         : t->status[i] == 0 ? "did not answer in time"
                                             : "answered with an error");
                in[n] = (pprof_merge_input){NULL, 0, NULL, 0, NULL, 0, comments[i]};
            }
            n++;
        }
        pthread_mutex_unlock(&hub.mu);
        pprof_http_response r = *resp;
        r.body = (pprof_buffer){0};
        int rc = pprof_merge(in, n, pprof_writer_buffer(&r.body));
        if (rc == PPROF_EINVAL) { /* a member's profile does not hold together: leave it out, say so */
            pprof_buffer_free(&r.body);
            for (size_t i = 1; i < n; i++) {
                pprof_buffer one = {0};
                if (in[i].data && pprof_merge(&in[i], 1, pprof_writer_buffer(&one)) == PPROF_EINVAL) {
                    snprintf(comments[i - 1], sizeof comments[i - 1], "process %lld (%s) sent a profile that cannot be read",
                             (long long)pids[i].value, labels[i].value);
                    in[i] = (pprof_merge_input){NULL, 0, NULL, 0, NULL, 0, comments[i - 1]};
                }
                pprof_buffer_free(&one);
            }
            rc = pprof_merge(in, n, pprof_writer_buffer(&r.body));
        }
        if (rc == 0 && t->fold)
            fold_reply(t, &r);
        if (rc != 0) {
            pprof_buffer_free(&r.body);
            c->done(c->ctx, resp); /* the hub's own, rather than nothing */
        } else {
            c->done(c->ctx, &r);
            pprof_buffer_free(&r.body);
        }
        pthread_mutex_lock(&hub.mu);
    }
    treq_unref_locked(t);
    pthread_mutex_unlock(&hub.mu);
    free(c);
}

int pp_tree_handle(const pprof_server_config *cfg, const pprof_http_request *req, pprof_http_done done, void *ctx,
                   pprof_http_call **call, int (*local)(const pprof_server_config *, const pprof_http_request *,
                                                        pprof_http_done, void *, pprof_http_call **))
{
    const char *prefix = cfg && cfg->prefix ? cfg->prefix : PP_DEFAULT_PREFIX;
    size_t plen = strlen(prefix);
    int has_members = 0;
    pthread_mutex_lock(&hub.mu);
    for (int i = 0; hub.is_hub && i < MAX_MEMBERS && !has_members; i++)
        has_members = hub.members[i].fd >= 0;
    pthread_mutex_unlock(&hub.mu);
    char val[32], rest[1024], rest2[1024];
    const char *query = req->query;
    int pid = 0, tree = 1;
    if (take_param(query, "tree", val, sizeof val, rest, sizeof rest)) {
        tree = strcmp(val, "0") != 0;
        query = rest;
    }
    if (take_param(query, "pid", val, sizeof val, rest2, sizeof rest2)) {
        pid = atoi(val);
        query = rest2;
    }
    char dval[8], drest[1024];
    int text = take_param(query, "debug", dval, sizeof dval, drest, sizeof drest) && strcmp(dval, "0") != 0;
    char fval[16], frest[1024];
    int formatted = take_param(query, "format", fval, sizeof fval, frest, sizeof frest);
    pprof_http_request lreq = *req;
    lreq.query = query && *query ? query : NULL;
    int folding = formatted && !pid && !strcmp(fval, "folded");
    if (!has_members || strncmp(req->path, prefix, plen) || !pp_endpoint_merges(req->path + plen) || !tree ||
        pid == (int)getpid() || (text && !pid) || (formatted && !pid && !folding && strcmp(fval, "proto")))
        return local(cfg, &lreq, done, ctx, call); /* (a bad format value: its 400) */
    const char *why = NULL;
    char sval[64] = "", lval[8] = "", srest[1024], lrest[1024];
    if (formatted && !pid && !folding) /* the members' gzipped protobufs are merged as such */
        why = "format=proto is for one process: add pid=N (or tree=0 for this one)";
    if (folding) { /* the members answer protobufs, the merge is folded */
        const char *q = frest;
        if (take_param(q, "sample_index", sval, sizeof sval, srest, sizeof srest))
            q = srest;
        if (take_param(q, "labels", lval, sizeof lval, lrest, sizeof lrest))
            q = lrest;
        if (lval[0] && strcmp(lval, "0") && strcmp(lval, "1"))
            why = "invalid value for \"labels\" - must be 0 or 1";
        if (count_param(query, "format") > 1 || count_param(query, "sample_index") > 1 ||
            count_param(query, "labels") > 1)
            why = "a parameter is repeated";
        query = q;
        lreq.query = query && *query ? query : NULL;
    }
    if (why) {
        if (call)
            *call = NULL;
        pp_reply r;
        pp_reply_init(&r, 400);
        pp_reply_set_error(&r, 400, "%s", why);
        pp_reply_deliver(&r, done, ctx);
        return 0;
    }

    treq *t = calloc(1, sizeof *t);
    tree_call *c = malloc(sizeof *c);
    if (!t || !c) {
        free(t);
        free(c);
        return local(cfg, &lreq, done, ctx, call);
    }
    pthread_condattr_t ca; /* its deadline is on the monotonic clock */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->cv, &ca);
    pthread_condattr_destroy(&ca);
    t->only_pid = pid;
    t->raw_proto = formatted && !strcmp(fval, "proto");
    t->fold = folding;
    t->fold_labels = !strcmp(lval, "1");
    snprintf(t->fold_sample, sizeof t->fold_sample, "%s", sval);
    char sec[16], secrest[1024];
    int seconds = take_param(query, "seconds", sec, sizeof sec, secrest, sizeof secrest) ? atoi(sec) : 0;
    if (!strcmp(req->path + plen, "profile") && seconds <= 0)
        seconds = PP_DEFAULT_SECONDS;
    t->deadline_s = mono_s() + (seconds > 0 ? seconds : 0) + GRACE_S;
    char wire[1200];
    snprintf(wire, sizeof wire, "%s%s%s", req->path + plen, lreq.query ? "?" : "", lreq.query ? lreq.query : "");
    pthread_mutex_lock(&hub.mu);
    t->id = ++hub.next_id;
    t->refs = 1;
    t->next = hub.pending;
    hub.pending = t;
    for (int i = 0; i < MAX_MEMBERS; i++) {
        member *m = &hub.members[i];
        if (m->fd < 0 || (pid && m->pid != pid))
            continue;
        t->pids[t->nasked] = m->pid;
        memcpy(t->names[t->nasked], m->name, sizeof m->name);
        t->nasked++;
        m->asked++;
        pthread_mutex_lock(&m->send_mu);
        int bad = send_msg(m->fd, MSG_REQ, t->id, 0, wire, strlen(wire));
        pthread_mutex_unlock(&m->send_mu);
        if (bad)
            answered_locked(m->pid, t->id, -1, NULL, 0);
    }
    if (pid && !t->nasked) {
        treq_unref_locked(t);
        pthread_mutex_unlock(&hub.mu);
        free(c);
        pp_reply r;
        pp_reply_init(&r, 404);
        pp_reply_set_error(&r, 404, "no process %d in the tree", pid);
        pp_reply_deliver(&r, done, ctx);
        return 0;
    }
    *c = (tree_call){t, done, ctx};
    t->call = c;
    pthread_mutex_unlock(&hub.mu);
    return local(cfg, &lreq, tree_done, c, call);
}

/* The index's row about the tree (nothing when this process is no hub). */
static void write_index_row(pp_reply *r)
{
    pthread_mutex_lock(&hub.mu);
    if (hub.is_hub) {
        int64_t now = mono_s();
        char self[16];
        comm_of((int)getpid(), self);
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
            pp_reply_printf(r, "%s%d (%s, parent %d, left %lld s ago after %lld s, answered %d of %d requests, %d late)",
                            k ? ", " : "; left lately: ", g->pid, g->name, g->ppid, (long long)(now - g->left_s),
                            (long long)(g->left_s - g->joined_s), g->answered, g->asked, g->late);
        }
        pp_reply_printf(r, "</td></tr>\n");
    }
    pthread_mutex_unlock(&hub.mu);
}

/* ------------------------------------------------------------ the API */

int pprof_tree_start(void)
{
    pthread_once(&tree_once, tree_init_once);
    member *self = &hub.members[0];
    pthread_mutex_lock(&hub.mu);
    int member_here = !hub.is_hub && hub.name[0];
    pthread_mutex_unlock(&hub.mu);
    pthread_mutex_lock(&self->send_mu);
    member_here = member_here && self->fd >= 0;
    pthread_mutex_unlock(&self->send_mu);
    if (member_here) /* its connection is to its own hub */
        return pp_error_detail(PPROF_ESTATE, "this process is a member of %s's tree", hub.name);
    return pp_tree_start();
}

typedef struct collect_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, status;
    pprof_buffer body;
    int copied; /* the body could be kept */
} collect_wait;

static void collect_done(void *ctx, const pprof_http_response *resp)
{
    collect_wait *w = ctx;
    pthread_mutex_lock(&w->mu);
    w->status = resp->status;
    w->body.data = resp->body.len ? malloc(resp->body.len + 1) : NULL;
    w->copied = !resp->body.len || w->body.data;
    if (w->body.data) {
        memcpy(w->body.data, resp->body.data, resp->body.len);
        w->body.data[resp->body.len] = 0;
        w->body.len = resp->body.len;
        w->body.cap = resp->body.len + 1;
    }
    w->done = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

int pprof_tree_collect(const char *request, pprof_writer out)
{
    if (!request || !out.write)
        return pp_error_detail(PPROF_EINVAL, "no request or no writer");
    char path[256];
    const char *q = strchr(request, '?');
    size_t n = q ? (size_t)(q - request) : strlen(request);
    if (n == 0 || n + sizeof PP_DEFAULT_PREFIX > sizeof path)
        return pp_error_detail(PPROF_EINVAL, "no profile named, or a name too long");
    snprintf(path, sizeof path, "%s%.*s", PP_DEFAULT_PREFIX, (int)n, request);
    collect_wait w = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    pprof_http_request req = {"GET", path, q && q[1] ? q + 1 : NULL, NULL, 0};
    int rc = pprof_http_handle(NULL, &req, collect_done, &w, NULL);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&w.mu);
    while (!w.done)
        pthread_cond_wait(&w.cv, &w.mu);
    pthread_mutex_unlock(&w.mu);
    if (!w.copied)
        rc = pp_fail(PPROF_ENOMEM);
    else if (w.status == 200)
        rc = w.body.len && out.write(out.ctx, w.body.data, w.body.len) != 0 ? pp_fail(PPROF_EIO) : 0;
    else
        rc = pp_error_detail(w.status == 400 ? PPROF_EINVAL : w.status == 404 ? PPROF_ENOTFOUND
                             : w.status == 503 ? PPROF_ELIMIT : PPROF_ESYS,
                             "%.*s", (int)strcspn(w.body.data ? w.body.data : "", "\n"),
                             w.body.data ? w.body.data : "");
    free(w.body.data);
    return rc;
}
