/* tree_member.c: this process as a member of a process tree (see
 * tree_internal.h).
 *
 * A child the hub forks, and its children, keep the tree's name: a fork
 * handler starts an agent thread in each child (every signal blocked, the
 * profiler's own work) that connects, says hello and answers the hub's
 * requests with pprof_http_handle in its own process. A child that execs
 * with the preload inherited finds the hub among its ancestors (the
 * socket is named after the hub's pid) and joins it instead of serving.
 * A member that exits (exit, or main returning) during a window finishes
 * its calls at once and sends what they hold (a shutdown hook).
 *
 * When the connection to the hub ends, or cannot be made, while this
 * process lives on, the agent decides what follows in one place, hub_gone
 * below: join again, or take the hub's place (daemons: the process that
 * served exits, its forked daemon lives on).
 */
#define _GNU_SOURCE
#include "base/base.h"
#include "endpoints.h"
#include "request.h"
#include "sched.h"
#include "tree_internal.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* This process's connection to its hub. */
static struct {
    pthread_mutex_t send_mu; /* fd, and a message being sent on it */
    int fd;                  /* -1: none */
    int leaving;             /* sandboxed: a connection made now is ended at once */
    int agent_started;       /* this process has an agent (join) */
    int pid;                 /* this process, when it joined */
} self = {PTHREAD_MUTEX_INITIALIZER, -1, 0, 0, 0};
static int hub_pid, joined_ppid; /* this member's hub, and its parent when it joined */
static int forking_pid;          /* the process that forks, in its prepare handler */
static int (*takeover_serve)(void); /* the server's: serve where the old hub served */

/* The process that was offered the takeover having never served (a member
 * started by exec): it leaves the place to a forked member for 400 ms
 * more (the program that served, or the daemon it forked). Its forks do
 * not wait. */
static int offered_pid;

void pp_tree_offer_takeover(int (*serve)(void))
{
    takeover_serve = serve;
    offered_pid = (int)getpid();
}

void pp_tree_set_takeover(int (*serve)(void))
{
    takeover_serve = serve;
    offered_pid = 0;
}

/* A connection to the tree's hub that has said hello, or -1; it notes
 * the hub's pid and this process's parent for a takeover. */
/* In secure-execution mode (started set-user-ID or by a process whose
 * user ids differ, with a set-user-ID copy of libpprof), this process
 * answers only a hub that has its privileges already: effective or saved
 * user root, or its own effective user (squid's master, root for real user
 * proxy), never one its invoker started. */
static int hub_privileged(int pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = pp_fd_fopen(path);
    unsigned r, e = 1, su = 1;
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f))
        found = sscanf(line, "Uid: %u %u %u", &r, &e, &su) == 3;
    if (f)
        pp_fd_fclose(f);
    return found && (e == 0 || su == 0 || e == (unsigned)geteuid());
}

static int hub_connect(void)
{
    char name[PP_TREE_NAME_MAX];
    pp_hub_name(name);
    int fd = pp_tree_connect(name);
    if (fd < 0)
        return -1;
    struct ucred cr;
    socklen_t cl = sizeof cr;
    int have_cr = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0;
    if (getauxval(AT_SECURE) && !(have_cr && hub_privileged(cr.pid))) {
        pp_fd_close(fd);
        return -1;
    }
    if (pp_tree_send(fd, PP_TREE_HELLO, 0, (int)getppid(), NULL, 0)) {
        pp_fd_close(fd);
        return -1;
    }
    hub_pid = have_cr ? cr.pid : 0;
    if (!joined_ppid) /* an exec'd member: its parent now (a forked one's: at the fork) */
        joined_ppid = (int)getppid();
    return fd;
}

/* A member that entered a sandbox tells the hub why it leaves and ends
 * its connection, which ends the agent (its read returns, and hub_gone
 * finds the process shutting down): no thread of libpprof's is left to
 * keep a process alive whose own threads end one by one (seccomp strict
 * mode allows no exit_group). */
static void leave_locked(void)
{
    const char *why = pp_sandboxed();
    self.leaving = 1;
    if (self.fd < 0)
        return;
    if (why)
        pp_tree_send(self.fd, PP_TREE_BYE, 0, 0, why, strlen(why));
    shutdown(self.fd, SHUT_RDWR);
}

/* Why the program this process is about to exec will not be profiled
 * (member_exec), sent on every connection until the hub acknowledges it. */
static char exec_note[448];
static _Atomic int exec_note_acked;
static int exec_profiled; /* about to exec a program that joins again (send_mu) */

static void set_connection(int fd)
{
    pthread_mutex_lock(&self.send_mu);
    self.fd = fd;
    if (fd >= 0 && exec_note[0])
        pp_tree_send(fd, PP_TREE_NOTE, 0, 0, exec_note, strlen(exec_note));
    if (fd >= 0 && exec_profiled)
        pp_tree_send(fd, PP_TREE_NOTE, 0, 1, NULL, 0);
    if (self.leaving)
        leave_locked();
    pthread_mutex_unlock(&self.send_mu);
}

/* ------------------------------------------------------- the hub is gone
 *
 * The one place where a member learns that its hub has gone: the agent's
 * connection ended, or could not be made, while this process lives on.
 * It tries to join again under the tree's name. The hub's own pid serving
 * again (an exec) is waited for up to 3 s; once the hub has ended, a
 * member whose parent ended too (the daemon a double fork left) takes the
 * hub's place after 100 ms, any other after 1 s (leaving the place to its
 * parent): the first to bind the tree's name is the new hub, which also
 * listens under its own pid's name and serves where the old hub served
 * (the server's takeover hook); the others join it.
 *
 * Returns 1 when joined again (the connection in self.fd), 0 when the
 * agent ends (this process is the hub now, or no hub came within 15 s).
 */
static int hub_gone(void)
{
    char name[PP_TREE_NAME_MAX];
    pp_hub_name(name);
    if (pp_shutting_down() || !name[0])
        return 0;
    int64_t t0 = pp_now_ns(CLOCK_MONOTONIC);
    for (;;) {
        int fd = hub_connect();
        if (fd >= 0) {
            set_connection(fd);
            return 1;
        }
        int64_t waited_ms = (pp_now_ns(CLOCK_MONOTONIC) - t0) / 1000000;
        int orphan = joined_ppid && (int)getppid() != joined_ppid;
        int64_t wait_ms = (!pp_tree_ended(hub_pid) ? 3000 : orphan ? 100 : 1000) +
                          (offered_pid == (int)getpid() ? 400 : 0);
        /* Only a process that can serve where the hub served (it forked
         * from a server and kept its configuration) takes the hub's place;
         * one that exec'd joins whoever does. */
        if (takeover_serve && waited_ms >= wait_ms && pp_hub_take_over() == 0) {
            pp_hub_note_left(hub_pid, 0);
            pp_hub_note_left(joined_ppid, 1);
            takeover_serve();
            return 0;
        }
        if (waited_ms > 15000 || pp_shutting_down())
            return 0;
        nanosleep(&(struct timespec){0, 50000000}, NULL);
    }
}

/* ------------------------------------------------------------ the agent */

static void agent_done(void *ctx, const pprof_http_response *resp)
{
    uintptr_t v = (uintptr_t)ctx;
    pthread_mutex_lock(&self.send_mu);
    if (self.fd >= 0)
        pp_tree_send(self.fd, PP_TREE_RES, (uint32_t)v, resp->status, resp->body.data, resp->body.len);
    pthread_mutex_unlock(&self.send_mu);
}

/* The hub's executable maps, as its latest request with hub_names=1 sent
 * them (pp_member_hub_maps). */
static pthread_mutex_t maps_mu = PTHREAD_MUTEX_INITIALIZER;
static char *hub_maps;

char *pp_member_hub_maps(void)
{
    pthread_mutex_lock(&maps_mu);
    char *copy = hub_maps ? strdup(hub_maps) : NULL;
    pthread_mutex_unlock(&maps_mu);
    return copy;
}

/* Answers one request of the hub ("name?query", and maybe a NUL and the
 * hub's maps) of len bytes in this process. */
static void answer(uint32_t id, char *body, size_t len)
{
    size_t rlen = strlen(body);
    if (rlen + 1 < len) { /* body[len] is a NUL too */
        char *maps = strdup(body + rlen + 1);
        pthread_mutex_lock(&maps_mu);
        free(hub_maps);
        hub_maps = maps;
        pthread_mutex_unlock(&maps_mu);
    }
    char path[256];
    char *q = strchr(body, '?');
    if (q)
        *q++ = 0;
    snprintf(path, sizeof path, "%s%s", PP_DEFAULT_PREFIX, body);
    pprof_http_request req = {"GET", path, q, NULL, 0};
    if (pprof_http_handle(NULL, &req, agent_done, (void *)(uintptr_t)id, NULL) != 0)
        agent_done((void *)(uintptr_t)id, &(pprof_http_response){.status = 500});
}

/* A forked child's first connection: made by its agent (not in fork's
 * path), or earlier by the process itself when it is about to narrow what
 * it may do (member_narrow); whichever comes first. 1 when connected. */
static pthread_mutex_t first_mu = PTHREAD_MUTEX_INITIALIZER;
static int first_tried;

static int connect_first(void)
{
    pthread_mutex_lock(&first_mu);
    if (!first_tried) {
        first_tried = 1;
        pthread_mutex_lock(&self.send_mu);
        int have = self.fd >= 0;
        pthread_mutex_unlock(&self.send_mu);
        if (!have)
            set_connection(hub_connect());
    }
    pthread_mutex_unlock(&first_mu);
    pthread_mutex_lock(&self.send_mu);
    int joined = self.fd >= 0;
    pthread_mutex_unlock(&self.send_mu);
    return joined;
}

/* A narrow hook: the process is about to lower its descriptor limit or
 * enter a sandbox; a member that has not connected yet does it now, while
 * it can open a socket. */
static void member_narrow(void)
{
    char name[PP_TREE_NAME_MAX];
    pp_hub_name(name);
    if (name[0] && !pp_hub_here() && self.agent_started)
        connect_first();
}

/* An exec hook (interpose/exec_hooks.c): this process is about to exec
 * a program that will run without libpprof (why), or that exec failed
 * (NULL). A member tells its hub (NOTE), connecting first if its agent
 * has not yet, and waits for the hub's acknowledgement: a hub that exits
 * first (the process that daemonized, while a daemon it left takes its
 * place) may never have read it, and the next hub is told as the agent
 * connects to it (set_connection). 1.5 s at most: only an exec that goes
 * without the profiler waits. A vfork child (another pid, the parent's
 * connection) says nothing. */
static void member_exec(const char *why)
{
    char name[PP_TREE_NAME_MAX];
    pp_hub_name(name);
    if (!name[0] || pp_hub_here() || (int)getpid() != self.pid)
        return;
    if (why && !*why) { /* profiled after the exec: its new image joins again, under this pid */
        pthread_mutex_lock(&self.send_mu);
        exec_profiled = 1; /* also for a connection the agent makes before the exec */
        if (self.fd >= 0)
            pp_tree_send(self.fd, PP_TREE_NOTE, 0, 1, NULL, 0);
        pthread_mutex_unlock(&self.send_mu);
        return;
    }
    pthread_mutex_lock(&self.send_mu);
    exec_profiled = 0;
    snprintf(exec_note, sizeof exec_note, "%s", why ? why : "");
    atomic_store(&exec_note_acked, 0);
    if (self.fd >= 0)
        pp_tree_send(self.fd, PP_TREE_NOTE, 0, 0, exec_note, strlen(exec_note));
    pthread_mutex_unlock(&self.send_mu);
    if (!why || !self.agent_started)
        return;
    connect_first();
    for (int i = 0; i < 300 && !atomic_load(&exec_note_acked); i++)
        nanosleep(&(struct timespec){0, 5000000}, NULL);
}

/* The hub's HELLO has come: it follows the requests the hub sends a
 * member as it joins, and the agent reads in order, so those have been
 * started by then (greet_mu). */
static pthread_mutex_t greet_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t greet_cv;
static int hub_greeted;

static void greet_init(void)
{
    pp_cond_init_monotonic(&greet_cv);
}

static void *agent_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "pprof-member");
    pprof_labels_unref(pp_own_labels_begin());
    if (!connect_first() && !hub_gone())
        return NULL;
    for (;;) {
        pp_tree_msg m;
        char *body = NULL;
        int rc = pp_tree_recv(self.fd, &m, &body);
        if (rc == 0 && m.type == PP_TREE_HELLO) { /* the hub has registered this process */
            free(body);
            pthread_mutex_lock(&greet_mu);
            hub_greeted = 1;
            pthread_cond_broadcast(&greet_cv);
            pthread_mutex_unlock(&greet_mu);
            continue;
        }
        if (rc == 0 && m.type == PP_TREE_NOTE) { /* an acknowledgement, or a note of an exiting hub's */
            if (m.status == 0)
                atomic_store(&exec_note_acked, 1);
            else
                pp_hub_keep_note(m.status, body ? body : "");
            free(body);
            continue;
        }
        if (rc || m.type != PP_TREE_REQ) {
            free(body);
            pthread_mutex_lock(&self.send_mu);
            pp_fd_close(self.fd);
            self.fd = -1;
            pthread_mutex_unlock(&self.send_mu);
            if (hub_gone()) /* joined again */
                continue;
            return NULL;
        }
        answer(m.id, body, (size_t)m.len);
        free(body);
    }
}

/* Joins the tree's hub and starts the agent; with `now`, the connection
 * is made here (to learn whether there is a hub), else by the agent (a
 * fork returns without waiting for it). 0 or -1. */
static int join(int now)
{
    int fd = now ? hub_connect() : -1;
    if (now && fd < 0)
        return -1;
    self.fd = fd;
    self.pid = (int)getpid();
    first_tried = now;
    if (pp_spawn_detached(agent_main, NULL, NULL) != 0) {
        if (fd >= 0)
            pp_fd_close(fd);
        self.fd = -1;
        return -1;
    }
    self.agent_started = 1;
    return 0;
}

int pp_member_join_named(int hub, int now)
{
    char name[PP_TREE_NAME_MAX];
    pp_tree_name_of(hub, name);
    pp_hub_set_name(name);
    if (join(now) == 0)
        return 0;
    pp_hub_set_name("");
    return -1;
}

int pp_member_join_ancestor(void)
{
    static pthread_mutex_t joining = PTHREAD_MUTEX_INITIALIZER;
    for (int pid = getppid(), depth = 0; pid > 1 && depth < 16; pid = pp_tree_parent_of(pid), depth++) {
        char name[PP_TREE_NAME_MAX];
        pp_tree_name_of(pid, name);
        pthread_mutex_lock(&joining);
        pp_hub_set_name(name);
        int rc = join(1);
        if (rc)
            pp_hub_set_name("");
        pthread_mutex_unlock(&joining);
        if (rc == 0)
            return 0;
    }
    return -1;
}

int pp_member_joined(void)
{
    char name[PP_TREE_NAME_MAX];
    pp_hub_name(name);
    if (pp_hub_here() || !name[0])
        return 0;
    pthread_mutex_lock(&self.send_mu);
    int joined = self.fd >= 0;
    pthread_mutex_unlock(&self.send_mu);
    return joined;
}

/* ------------------------------------------------------ exit and fork */

/* A shutdown hook: a member that exits during a window answers with what
 * the window holds so far, before its agent's connection closes. One that
 * lives on in a sandbox (pp_sandboxed) then tells the hub why it leaves
 * and ends the connection, which ends its agent. */
static void member_exit(void)
{
    int hub_here = pp_hub_here();
    pthread_mutex_lock(&self.send_mu);
    int joined = !hub_here && self.fd >= 0;
    pthread_mutex_unlock(&self.send_mu);
    /* A request the hub sends as this process joins (the rest of a
     * window) may not be read yet: the hub's HELLO follows it, waited for
     * 100 ms at most, so a process that ends within milliseconds of its
     * start answers too. */
    if (joined) {
        int64_t end = pp_now_ns(CLOCK_MONOTONIC) + 100000000;
        pthread_mutex_lock(&greet_mu);
        while (!hub_greeted && pp_cond_wait_until(&greet_cv, &greet_mu, end) == 0)
            ;
        pthread_mutex_unlock(&greet_mu);
    }
    if (joined)
        pp_call_finish_all_now(2000000000LL);
    if (!pp_sandboxed() || hub_here)
        return;
    pp_call_release_thread();
    pthread_mutex_lock(&self.send_mu);
    leave_locked();
    pthread_mutex_unlock(&self.send_mu);
}

static void fork_prepare(void)
{
    forking_pid = (int)getpid();
}

/* In a forked child of a tree's process: the hub's state starts over, and
 * the child joins the tree. */
static void fork_child(void)
{
    int forking_hub = pp_hub_after_fork();
    self.send_mu = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    self.fd = -1; /* its descriptors are closed already (base/fds.h) */
    self.leaving = 0;
    self.agent_started = 0;
    exec_note[0] = 0;
    exec_profiled = 0;
    greet_mu = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    greet_init();
    hub_greeted = 0;
    first_mu = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    first_tried = 0;
    maps_mu = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER; /* hub_maps: the same hub's */
    joined_ppid = forking_pid; /* getppid() may already say 1 */
    if (forking_hub)
        hub_pid = forking_pid; /* before it connects (a hub entering a sandbox refuses it) */
    char name[PP_TREE_NAME_MAX];
    pp_hub_name(name);
    if (name[0] && pp_tree_off())
        pp_hub_set_name(""); /* a child in namespaces of its own: out of the tree */
    else if (name[0])
        join(0);
}

void pp_member_init(void)
{
    greet_init();
    pp_serve_hub_maps_provider(pp_member_hub_maps);
    pp_shutdown_hook_add(member_exit);
    pp_narrow_hook_add(member_narrow);
    pp_no_threads_hook_add(pp_call_keep_thread); /* profiles with seconds= wait on the scheduler */
    pp_exec_hook_set(member_exec);
    pp_hub_init();
    pp_atfork(fork_prepare, NULL, fork_child);
}
