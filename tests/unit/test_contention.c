/* test_contention.c: mutex and block profiles against measured truth.
 * test-labels: plain-only timing
 *
 * Mutex: 4 labeled threads take one mutex 1,000 times each, hold it
 * for a 100 us sleep and sleep 30 us outside it; each times its own pthread_mutex_lock
 * calls, which is the truth for the delay. At fraction 5 (each event kept
 * with probability 1/5; the run must have more than 225 x 5 contended
 * acquisitions, which it checks) the scaled delay of the function that
 * locks must be within 20% of the measured total, or four standard
 * deviations of the estimate where that is wider (sqrt(4 x the sum of the
 * squared waits): a loaded machine preempts holders, and a few long waits
 * then weigh most), and carry the labels.
 * Block: 600 condition-variable waits of about 2 ms, signalled by another
 * thread, at a rate of 4 ms (each kept with probability about 1/2 and then
 * counted as 4 ms): the scaled delay within 20% of the measured waits;
 * the expected number kept (~300) makes 20% more than 3.9 standard
 * deviations. Semaphore waits, a contended rwlock and joins show up by
 * name (each waiter is seen blocked before its 20 ms begin, so a loaded
 * machine does not shorten them); a mutex that is never contended adds nothing; error-checking,
 * recursive and robust mutexes answer as they would without the hooks
 * (EDEADLK, recursion, EOWNERDEAD); rates compose as documented. (Fork
 * while the profiles record: test_fork_locks.)
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "check.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int64_t measured_lock_ns, measured_wait_ns;
static _Atomic int64_t measured_lock_sq_us2; /* the sum of the squared lock waits, in us^2 */

static int64_t now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void pause_ns(long ns)
{
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}

__attribute__((noinline)) static void fight(void)
{
    for (int i = 0; i < 1000; i++) {
        int64_t t0 = now();
        pthread_mutex_lock(&mu);
        int64_t d = now() - t0;
        measured_lock_ns += d;
        measured_lock_sq_us2 += (d / 1000) * (d / 1000);
        pause_ns(100000);
        pthread_mutex_unlock(&mu);
        pause_ns(30000); /* outside the lock: the others get their turn */
    }
}

static void fight_labeled(void *arg)
{
    (void)arg;
    fight();
}

static void *fighter(void *arg)
{
    pprof_do(arg, fight_labeled, NULL);
    return NULL;
}

static pthread_mutex_t cmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ticket, done_waiting;

__attribute__((noinline)) static void wait_for_ticket(int want)
{
    pthread_mutex_lock(&cmu);
    while (ticket < want) {
        int64_t t0 = now();
        pthread_cond_wait(&cv, &cmu);
        measured_wait_ns += now() - t0;
    }
    pthread_mutex_unlock(&cmu);
}

static void *waiter(void *arg)
{
    (void)arg;
    for (int i = 1; i <= 600; i++)
        wait_for_ticket(i);
    done_waiting = 1;
    return NULL;
}

static void *signaller(void *arg)
{
    (void)arg;
    for (int i = 1; i <= 600; i++) {
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&cmu);
        ticket = i;
        pthread_cond_signal(&cv);
        pthread_mutex_unlock(&cmu);
    }
    return NULL;
}

static pthread_mutex_t robust;

static void *lock_and_die(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&robust);
    return NULL; /* exits holding it */
}

/* Waits (up to 10 s) until thread tid sleeps (state S in /proc): blocked
 * in the wait it was about to enter. */
static void wait_until_blocked(int tid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    for (int i = 0; i < 10000; i++) {
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = 0;
        const char *e = strrchr(buf, ')');
        if (e && e[1] == ' ' && e[2] == 'S')
            return;
        pause_ns(1000000);
    }
}

static _Atomic int reader_tid, main_tid;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;

__attribute__((noinline)) static void read_locked(void)
{
    pthread_rwlock_rdlock(&rw);
    pthread_rwlock_unlock(&rw);
    __asm__ volatile("" ::: "memory");
}

static void *read_it(void *arg)
{
    (void)arg;
    atomic_store(&reader_tid, gettid());
    read_locked();
    return NULL;
}

static sem_t sem;

__attribute__((noinline)) static void wait_on_semaphore(void)
{
    sem_wait(&sem);
    __asm__ volatile("" ::: "memory"); /* no tail call: keep this frame */
}

static void *poster(void *arg)
{
    (void)arg;
    wait_until_blocked(atomic_load(&main_tid));
    struct timespec ts = {0, 20000000};
    nanosleep(&ts, NULL);
    sem_post(&sem);
    return NULL;
}

/* delay and labels of samples whose leaf function is fn */
static int64_t delay_of(const pprof_profile *p, const char *fn, int64_t *count, int *labeled)
{
    size_t n;
    const pprof_sample *s = pprof_profile_samples(p, &n);
    int64_t d = 0;
    *count = 0;
    for (size_t i = 0; i < n; i++) {
        const pprof_location *l = s[i].nlocations ? s[i].locations[0] : NULL;
        if (!l || !l->nlines || strcmp(l->lines[0].function, fn))
            continue;
        d += s[i].values[1];
        *count += s[i].values[0];
        if (labeled && s[i].nlabels == 1 && !strcmp(s[i].labels[0].value, "fighters"))
            *labeled = 1;
    }
    return d;
}

int main(void)
{
    /* both off by default; recorders turn them on */
    CHECK(pprof_mutex_fraction() == 0 && pprof_block_rate() == 0);
    pprof_recorder *m, *b, *bad;
    /* a block rate above 2^31 ns is reported whole */
    CHECK(pprof_block_recorder_new(&(pprof_contention_config){.rate = 3000000000ll}, &bad) == 0);
    CHECK(pprof_recorder_start(bad) == 0 && pprof_recorder_rate(bad) == 3000000000ll);
    pprof_recorder_free(bad);
    CHECK(pprof_block_rate() == 0);
    CHECK(pprof_mutex_recorder_new(&(pprof_contention_config){.rate = 5}, &m) == 0);
    CHECK(pprof_block_recorder_new(&(pprof_contention_config){.rate = 4000000}, &b) == 0);
    CHECK(pprof_recorder_start(m) == 0 && pprof_recorder_start(b) == 0);
    CHECK(pprof_mutex_fraction() == 5 && pprof_block_rate() == 4000000);
    CHECK(pprof_mutex_recorder_new(&(pprof_contention_config){.rate = 7}, &bad) == 0);
    CHECK(pprof_recorder_start(bad) == PPROF_ERATE);
    CHECK(strstr(pprof_last_error(), "1 in 5") != NULL);
    pprof_recorder_free(bad);

    /* a lock nobody contends: nothing recorded */
    pthread_mutex_t quiet = PTHREAD_MUTEX_INITIALIZER;
    for (int i = 0; i < 100000; i++) {
        pthread_mutex_lock(&quiet);
        pthread_mutex_unlock(&quiet);
    }

    pprof_label pair = {"team", "fighters"};
    pprof_labels *set;
    CHECK(pprof_labels_new(&pair, 1, &set) == 0);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, fighter, set);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    pthread_t w, s;
    pthread_create(&w, NULL, waiter, NULL);
    pthread_create(&s, NULL, signaller, NULL);
    pthread_join(w, NULL);
    pthread_join(s, NULL);
    sem_init(&sem, 0, 0);
    atomic_store(&main_tid, gettid());
    pthread_t po;
    pthread_create(&po, NULL, poster, NULL);
    wait_on_semaphore();
    pthread_join(po, NULL);

    /* results that are not contentions pass through untouched */
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_t ec;
    pthread_mutex_init(&ec, &a);
    CHECK(pthread_mutex_lock(&ec) == 0);
    CHECK(pthread_mutex_lock(&ec) == EDEADLK);
    CHECK(pthread_mutex_unlock(&ec) == 0);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_t rec;
    pthread_mutex_init(&rec, &a);
    CHECK(pthread_mutex_lock(&rec) == 0 && pthread_mutex_lock(&rec) == 0);
    CHECK(pthread_mutex_unlock(&rec) == 0 && pthread_mutex_unlock(&rec) == 0);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_NORMAL);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&robust, &a);
    pthread_t dies;
    pthread_create(&dies, NULL, lock_and_die, NULL);
    pthread_join(dies, NULL);
    CHECK(pthread_mutex_lock(&robust) == EOWNERDEAD);
    CHECK(pthread_mutex_consistent(&robust) == 0 && pthread_mutex_unlock(&robust) == 0);
    /* a contended rwlock */
    pthread_t wr;
    pthread_rwlock_wrlock(&rw);
    pthread_create(&wr, NULL, read_it, NULL);
    while (!atomic_load(&reader_tid))
        pause_ns(100000);
    wait_until_blocked(atomic_load(&reader_tid));
    pause_ns(20000000);
    pthread_rwlock_unlock(&rw);
    pthread_join(wr, NULL);

    pprof_profile *pm, *pb;
    CHECK(pprof_recorder_stop(m, &pm) == 0);
    CHECK(pprof_recorder_stop(b, &pb) == 0);
    CHECK(pprof_mutex_fraction() == 0 && pprof_block_rate() == 0); /* back off */

    int64_t count;
    int labeled = 0;
    int64_t est = delay_of(pm, "fight", &count, &labeled), truth = measured_lock_ns;
    double err = (double)(est - truth) / (double)truth;
    double sd = sqrt(4.0 * (double)measured_lock_sq_us2) * 1000 / (double)truth; /* (f - 1) = 4 */
    double bound = 4 * sd > 0.20 ? 4 * sd : 0.20;
    printf("mutex: measured %.1f ms of waiting, profile %.1f ms (%+.1f%%; one standard deviation %.1f%%), "
           "%lld contentions\n", truth / 1e6, est / 1e6, 100 * err, 100 * sd, (long long)count);
    CHECKF(fabs(err) <= bound, "mutex delay off by %.1f%% (bound %.1f%%)", 100 * err, 100 * bound);
    CHECK(labeled);
    CHECKF(count > 225 * 5 && count <= 4000 + 400, "%lld contentions", (long long)count);
    int64_t qc;
    CHECK(delay_of(pm, "main", &qc, NULL) == 0 && qc == 0);
    size_t nt;
    const pprof_value_type *ty = pprof_profile_sample_types(pm, &nt);
    CHECK(nt == 2 && !strcmp(ty[0].type, "contentions") && !strcmp(ty[1].type, "delay") &&
          !strcmp(ty[1].unit, "nanoseconds"));

    est = delay_of(pb, "wait_for_ticket", &count, NULL);
    truth = measured_wait_ns;
    err = (double)(est - truth) / (double)truth;
    printf("block: measured %.1f ms of waiting, profile %.1f ms (%+.1f%%), %lld events\n", truth / 1e6,
           est / 1e6, 100 * err, (long long)count);
    CHECKF(fabs(err) <= 0.20, "block delay off by %.1f%%", 100 * err);
    CHECK(delay_of(pb, "wait_on_semaphore", &count, NULL) >= 15000000); /* ~20 ms >= rate: kept as is */
    CHECK(delay_of(pb, "main", &count, NULL) > 0);                       /* the joins */
    int64_t mc;
    CHECK(delay_of(pb, "fight", &mc, NULL) > 0); /* contended locks are blocking too */
    CHECK(delay_of(pb, "read_locked", &mc, NULL) >= 15000000); /* the 20 ms rwlock wait */


    pprof_buffer buf = {0};
    CHECK(pprof_profile_write(pm, PPROF_FORMAT_TEXT, pprof_writer_buffer(&buf)) == 0);
    CHECK(buf.len && !strncmp(buf.data, "--- mutex:\ncycles/second=1000000000\nsampling period=5\n", 53));
    pprof_buffer_free(&buf);
    CHECK(pprof_profile_write(pb, PPROF_FORMAT_TEXT, pprof_writer_buffer(&buf)) == 0);
    CHECK(buf.len && !strncmp(buf.data, "--- contention:\ncycles/second=1000000000\n", 41));
    pprof_buffer_free(&buf);
    pprof_profile_free(pm);
    pprof_profile_free(pb);
    pprof_recorder_free(m);
    pprof_recorder_free(b);
    pprof_labels_unref(set);
    return check_summary("test_contention");
}
