/* process_ctx.c: the OTEP 4719 process context, the OTEL_CTX mapping.
 *
 * A one-page mapping (a memfd named OTEL_CTX, else anonymous memory; named
 * OTEL_CTX with PR_SET_VMA_ANON_NAME where the kernel can) holds a 32-byte
 * header: "OTEL_CTX", version 2, the payload's size, the CLOCK_BOOTTIME
 * time it was published (0 while it is being changed), and the payload's
 * address. The payload, a protobuf ProcessContext (payload.c, written by hand),
 * lives in a mapping of its own. Publishing writes every field but the
 * time, fences, then writes the time; an update zeroes the time, swaps the
 * payload, and writes a time later than any before, so a reader that reads
 * the time, the header and the payload and then the time again knows
 * whether it read one whole version. Both mappings are MADV_DONTFORK: a
 * forked child does not inherit them and publishes its own (its pid
 * differs).
 *
 * Resource attributes: OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME as
 * OpenTelemetry SDKs read them, the process (pid, executable), libpprof as
 * the telemetry SDK, and whatever the program sets with
 * pprof_otel_set_resource. One writer at a time: the key lock.
 */
#define _GNU_SOURCE
#include "otel_private.h"
#include "base/base.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif
#ifndef MFD_ALLOW_SEALING
#define MFD_ALLOW_SEALING 0x0002U
#endif
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif
#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

#define MAX_RESOURCE 64
#define MAX_PAYLOAD 65536 /* what the OpenTelemetry eBPF profiler reads at most */
#define SCHEMA "tlsdesc_v1_dev"

struct header {
    char signature[8];
    uint32_t version;
    uint32_t payload_size;
    _Atomic uint64_t published_ns;
    uint64_t payload;
};
_Static_assert(sizeof(struct header) == 32, "OTEP 4719 header");

int pp_otel_enabled;
static struct header *hdr;
static size_t page;
static pid_t publisher;
static uint8_t *payload;
static size_t payload_map;
static uint64_t last_ns;
static pp_otel_attr resource[MAX_RESOURCE];
static size_t nresource;
static _Atomic uint64_t updates, failures;

/* Sets a string attribute of the resource, replacing one of the same key
 * (key lock held, or start-up). 0 or PPROF_ENOMEM / PPROF_ELIMIT. */
static int set_attr(const char *key, const char *value)
{
    size_t i = 0;
    while (i < nresource && strcmp(resource[i].key, key))
        i++;
    if (i == MAX_RESOURCE)
        return pp_error_detail(PPROF_ELIMIT, "at most %d resource attributes", MAX_RESOURCE);
    int fresh = i == nresource;
    pp_own_heap_enter(); /* the profiler's, though a program's thread may ask */
    char *v = strdup(value), *k = fresh ? strdup(key) : (char *)resource[i].key;
    pp_own_heap_leave();
    if (!v || !k) {
        free(v);
        if (fresh)
            free(k);
        return pp_fail(PPROF_ENOMEM);
    }
    if (!fresh)
        free((char *)resource[i].value);
    resource[i] = (pp_otel_attr){.key = k, .value = v};
    if (fresh)
        nresource++;
    return 0;
}

/* Copies s[0..n) into out without surrounding blanks, decoding %XX. */
static void decode(const char *s, size_t n, char *out, size_t cap)
{
    while (n && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    long o = pp_pct_decode(s, n, out, cap - 1, PP_PCT_LENIENT);
    out[o < (long)cap - 1 ? o : (long)cap - 1] = 0;
}

/* OTEL_RESOURCE_ATTRIBUTES: key=value pairs separated by commas, values
 * percent-encoded; a malformed entry is skipped (reported once). */
static void read_resource_env(void)
{
    const char *s = getenv("OTEL_RESOURCE_ATTRIBUTES");
    while (s && *s) {
        const char *end = strchr(s, ',');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        const char *eq = memchr(s, '=', n);
        char key[256], value[1024];
        if (eq) {
            decode(s, (size_t)(eq - s), key, sizeof key);
            decode(eq + 1, n - (size_t)(eq - s) - 1, value, sizeof value);
        }
        if (!eq || !key[0])
            pp_say("libpprof: ignoring an entry of OTEL_RESOURCE_ATTRIBUTES: want key=value, not %.*s\n", (int)n,
                   s);
        else
            set_attr(key, value);
        s = end ? end + 1 : NULL;
    }
}

static void read_resource(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    const char *base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
    if (exe[0]) {
        set_attr("process.executable.path", exe);
        set_attr("process.executable.name", base);
    }
    set_attr("telemetry.sdk.name", "libpprof");
    set_attr("telemetry.sdk.language", "cpp");
    set_attr("telemetry.sdk.version", PPROF_VERSION_STRING);
    read_resource_env();
    const char *svc = getenv("OTEL_SERVICE_NAME");
    if (svc && *svc) {
        set_attr("service.name", svc);
    } else {
        size_t i = 0;
        while (i < nresource && strcmp(resource[i].key, "service.name"))
            i++;
        if (i == nresource) {
            char name[PATH_MAX + 32];
            snprintf(name, sizeof name, "unknown_service:%s", base);
            set_attr("service.name", name);
        }
    }
}

static uint64_t boottime_ns(void)
{
    return (uint64_t)pp_now_ns(CLOCK_BOOTTIME);
}

/* Maps the header (a memfd named OTEL_CTX, else anonymous memory); 0 or -1.
 * Never executable: readers skip executable mappings. */
static int map_header(void)
{
    int fd = (int)syscall(SYS_memfd_create, "OTEL_CTX", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
    if (fd < 0)
        fd = (int)syscall(SYS_memfd_create, "OTEL_CTX", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    void *m = MAP_FAILED;
    if (fd >= 0) {
        if (ftruncate(fd, (off_t)page) == 0)
            m = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        close(fd);
    }
    if (m == MAP_FAILED && !(m = pp_map(page, PROT_READ | PROT_WRITE, 0, "OpenTelemetry context")))
        return -1;
    if (madvise(m, page, MADV_DONTFORK)) {
        pp_unmap(m, page);
        return -1;
    }
    hdr = m;
    publisher = getpid();
    last_ns = 0;
    return 0;
}

void pp_otel_republish_locked(void)
{
    if (!pp_otel_on())
        return;
    if (!page)
        page = (size_t)sysconf(_SC_PAGESIZE);
    pp_otel_attr res[MAX_RESOURCE + 1];
    memcpy(res, resource, nresource * sizeof *res);
    res[nresource] = (pp_otel_attr){.key = "process.pid", .int_value = getpid(), .is_int = 1};
    pp_otel_payload p = {.resource = res, .nresource = nresource + 1, .schema = SCHEMA};
    p.keys = pp_otel_keys_locked(&p.nkeys);
    size_t size = pp_otel_payload_pack(&p, NULL, 0);
    size_t len = (size + page - 1) / page * page;
    uint8_t *buf = size <= MAX_PAYLOAD ? pp_map(len, PROT_READ | PROT_WRITE, 0, "OpenTelemetry context") : NULL;
    if (!buf) {
        atomic_fetch_add(&failures, 1);
        return;
    }
    madvise(buf, len, MADV_DONTFORK);
    pp_otel_payload_pack(&p, buf, size);
    int fresh = !hdr || publisher != getpid();
    if (fresh && map_header()) {
        pp_unmap(buf, len);
        atomic_fetch_add(&failures, 1);
        return;
    }
    uint64_t now = boottime_ns();
    if (now <= last_ns)
        now = last_ns + 1;
    if (fresh) {
        memcpy(hdr->signature, "OTEL_CTX", 8);
        hdr->version = 2;
    } else {
        atomic_store(&hdr->published_ns, 0);
    }
    atomic_thread_fence(memory_order_seq_cst);
    hdr->payload_size = (uint32_t)size;
    hdr->payload = (uint64_t)(uintptr_t)buf;
    atomic_thread_fence(memory_order_seq_cst);
    atomic_store(&hdr->published_ns, now);
    /* Names the mapping where the kernel can; readers that watch prctl
     * also learn of the update from it, so it is called every time. */
    prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)hdr, page, (unsigned long)"OTEL_CTX");
    if (!fresh && payload)
        pp_unmap(payload, payload_map);
    payload = buf;
    payload_map = len;
    last_ns = now;
    atomic_fetch_add(&updates, 1);
}

void pp_otel_init(void)
{
    int on = pp_env_int("LIBPPROF_OTEL_CONTEXT", 1, 0, 1);
    if (!on)
        return;
    read_resource();
    __atomic_store_n(&pp_otel_enabled, 1, __ATOMIC_RELEASE);
    pp_otel_keys_lock();
    pp_otel_republish_locked();
    pp_otel_keys_unlock();
}

void pp_otel_fork_child(void)
{
    pp_otel_keys_fork_child();
    /* The parent's mappings are not in the child (MADV_DONTFORK). */
    hdr = NULL;
    payload = NULL;
    pp_otel_republish_locked();
}

int pprof_otel_set_resource(const pprof_label *attrs, size_t n)
{
    if (n && !attrs)
        return pp_fail(PPROF_EINVAL);
    for (size_t i = 0; i < n; i++)
        if (!attrs[i].key || !attrs[i].key[0] || !attrs[i].value)
            return pp_error_detail(PPROF_EINVAL, "attribute %zu: keys must be non-empty, values non-NULL", i);
    if (!pp_otel_on())
        return pp_error_detail(PPROF_ENOTSUP, "OpenTelemetry contexts are off (LIBPPROF_OTEL_CONTEXT=0)");
    pp_otel_keys_lock();
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++)
        rc = set_attr(attrs[i].key, attrs[i].value);
    pp_otel_republish_locked();
    pp_otel_keys_unlock();
    return rc;
}

void pprof_otel_stats_get(pprof_otel_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    out->published = pp_otel_on() && __atomic_load_n(&hdr, __ATOMIC_ACQUIRE) != NULL;
    out->updates = atomic_load(&updates);
    out->failures = atomic_load(&failures);
    pp_otel_thread_stats(&out->keys, &out->keys_refused, &out->attrs_dropped);
}
