/* otel_reader.c: an outside reader of a running process's OpenTelemetry
 * contexts, written from the reading protocols of OTEP 4719 (process
 * context) and OTEP 4947 (thread context) alone; it shares no code with
 * libpprof and links nothing of it.
 *
 *   otel_reader process PID [READS]
 *       Finds the OTEL_CTX mapping in /proc/PID/maps and reads the header
 *       and payload READS times (default 1) with the published-time check
 *       (read the time, the header, the payload, the time again). Prints
 *       the last whole read's attributes ("resource KEY=VALUE", "extra
 *       KEY=VALUE", "key N=NAME"), and "reads R whole W torn T retries X"
 *       where torn counts whole reads whose attributes "check.a" and
 *       "check.b" differ (a writer updates both in one call).
 *   otel_reader threads PID READS [TRUTH_ADDR]
 *       Finds otel_thread_ctx_v1 in the .dynsym of the objects PID maps,
 *       works out its module's TLS access from the relocations against it
 *       (TLS descriptor, initial-exec, general dynamic through the DTV, or
 *       local-exec in the executable), and READS times stops one of PID's
 *       threads (round robin) with ptrace, reads its thread pointer and its
 *       record through process_vm_readv, and lets it go. Prints one line per
 *       read. With TRUTH_ADDR (an array of 16 {int32 tid, int32 pad, int64
 *       k} in the target, k > 0 while the thread is inside request k), it
 *       also checks the record against it: span ID = k, trace ID = (k, ~k),
 *       big-endian, and the attribute request=k; it prints "reads R in_span
 *       S matched M".
 *
 * Machines: x86-64 (TLS variant II: the thread pointer is fs_base, static
 * TLS below it, the DTV at tp + 8) and arm64 (variant I: tpidr_el0, read
 * with NT_ARM_TLS; static TLS above the 16-byte TCB, the DTV at tp + 0).
 * The arm64 side is built by scripts/test-arm64.sh but not run there: the
 * emulator does not trace other processes.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef __aarch64__
#define R_TLSDESC R_AARCH64_TLSDESC
#define R_TPOFF R_AARCH64_TLS_TPREL
#define R_DTPMOD R_AARCH64_TLS_DTPMOD
#define DTV_AT 0   /* tcbhead_t: dtv first */
#define TCB_SIZE 16
#else
#define R_TLSDESC R_X86_64_TLSDESC
#define R_TPOFF R_X86_64_TPOFF64
#define R_DTPMOD R_X86_64_DTPMOD64
#define DTV_AT 8   /* tcbhead_t: tcb, then dtv */
#endif

static pid_t pid;

static int readmem(uint64_t addr, void *buf, size_t len)
{
    struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
    return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

/* ------------------------------------------------------- process context */

static uint64_t find_ctx_mapping(void)
{
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "r");
    uint64_t found = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[8];
        int name_at = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms, &name_at) < 3 || !name_at)
            continue;
        const char *name = line + name_at;
        if (perms[2] == 'x')
            continue;
        if (!strncmp(name, "/memfd:OTEL_CTX", 15) || !strncmp(name, "[anon_shmem:OTEL_CTX]", 21) ||
            !strncmp(name, "[anon:OTEL_CTX]", 15)) {
            found = lo;
            break;
        }
    }
    if (f)
        fclose(f);
    return found;
}

/* A protobuf reader over [p, end). */
typedef struct {
    const uint8_t *p, *end;
} pb;

static int varint(pb *b, uint64_t *v)
{
    *v = 0;
    for (int s = 0; s < 64 && b->p < b->end; s += 7) {
        uint8_t c = *b->p++;
        *v |= (uint64_t)(c & 127) << s;
        if (!(c & 128))
            return 0;
    }
    return -1;
}

/* The next field: its number, wire type, and for LEN fields the bytes. */
static int field(pb *b, uint32_t *num, uint32_t *wt, pb *sub, uint64_t *v)
{
    uint64_t tag;
    if (b->p >= b->end || varint(b, &tag))
        return -1;
    *num = (uint32_t)(tag >> 3);
    *wt = tag & 7;
    if (*wt == 0)
        return varint(b, v);
    if (*wt == 2) {
        uint64_t n;
        if (varint(b, &n) || n > (uint64_t)(b->end - b->p))
            return -1;
        sub->p = b->p;
        sub->end = b->p + n;
        b->p += n;
        return 0;
    }
    if (*wt == 1 || *wt == 5) {
        size_t n = *wt == 1 ? 8 : 4;
        if ((size_t)(b->end - b->p) < n)
            return -1;
        b->p += n;
        return 0;
    }
    return -1;
}

#define MAX_ATTRS 400
static struct attr {
    int extra;
    char key[128];
    char value[1024];
} attrs[MAX_ATTRS];
static int nattrs;
static char keymap[256][128];
static int nkeys;

static void copy_str(char *out, size_t cap, pb s)
{
    size_t n = (size_t)(s.end - s.p) < cap - 1 ? (size_t)(s.end - s.p) : cap - 1;
    memcpy(out, s.p, n);
    out[n] = 0;
}

/* Decodes an AnyValue into text; an array of strings becomes the key map
 * when `is_keymap`. */
static int any_value(pb v, char *out, size_t cap, int is_keymap)
{
    uint32_t num, wt;
    pb sub;
    uint64_t x;
    out[0] = 0;
    while (v.p < v.end) {
        if (field(&v, &num, &wt, &sub, &x))
            return -1;
        if (num == 1 && wt == 2)
            copy_str(out, cap, sub);
        else if (num == 3 && wt == 0)
            snprintf(out, cap, "%" PRId64, (int64_t)x);
        else if (num == 2 && wt == 0)
            snprintf(out, cap, "%s", x ? "true" : "false");
        else if (num == 5 && wt == 2) {
            size_t o = 0;
            while (sub.p < sub.end) {
                pb item, s2;
                uint32_t n2, w2;
                if (field(&sub, &n2, &w2, &item, &x) || n2 != 1 || w2 != 2)
                    return -1;
                char text[128];
                if (any_value(item, text, sizeof text, 0))
                    return -1;
                if (is_keymap && nkeys < 256)
                    snprintf(keymap[nkeys++], sizeof keymap[0], "%s", text);
                o += (size_t)snprintf(out + o, o < cap ? cap - o : 0, "%s%s", o ? "," : "[", text);
                (void)s2;
            }
            if (o < cap)
                snprintf(out + o, cap - o, "]");
        }
    }
    return 0;
}

static int key_value(pb kv, int extra)
{
    uint32_t num, wt;
    pb sub, value = {0, 0};
    uint64_t x;
    if (nattrs == MAX_ATTRS)
        return -1;
    struct attr *a = &attrs[nattrs];
    a->extra = extra;
    a->key[0] = 0;
    while (kv.p < kv.end) {
        if (field(&kv, &num, &wt, &sub, &x))
            return -1;
        if (num == 1 && wt == 2)
            copy_str(a->key, sizeof a->key, sub);
        else if (num == 2 && wt == 2)
            value = sub;
    }
    int keymap_attr = extra && !strcmp(a->key, "threadlocal.attribute_key_map");
    if (value.p && any_value(value, a->value, sizeof a->value, keymap_attr))
        return -1;
    nattrs++;
    return 0;
}

static int decode_payload(const uint8_t *buf, size_t len)
{
    pb b = {buf, buf + len}, sub, sub2;
    uint32_t num, wt, n2, w2;
    uint64_t x;
    nattrs = 0;
    nkeys = 0;
    while (b.p < b.end) {
        if (field(&b, &num, &wt, &sub, &x))
            return -1;
        if (num == 1 && wt == 2) { /* Resource */
            while (sub.p < sub.end) {
                if (field(&sub, &n2, &w2, &sub2, &x))
                    return -1;
                if (n2 == 1 && w2 == 2 && key_value(sub2, 0))
                    return -1;
            }
        } else if (num == 2 && wt == 2) {
            if (key_value(sub, 1))
                return -1;
        }
    }
    return 0;
}

static const char *attr_of(const char *key)
{
    for (int i = 0; i < nattrs; i++)
        if (!strcmp(attrs[i].key, key))
            return attrs[i].value;
    return NULL;
}

/* One read with the published-time check; 0 when whole, 1 when an update
 * got in the way (retry), -1 when there is no context. */
static int read_ctx_once(uint64_t at)
{
    struct {
        char sig[8];
        uint32_t version, size;
        uint64_t published, payload;
    } h;
    uint64_t t0, t1;
    if (readmem(at + 16, &t0, 8))
        return -1;
    if (t0 == 0)
        return 1;
    if (readmem(at, &h, sizeof h) || memcmp(h.sig, "OTEL_CTX", 8) || h.version != 2)
        return -1;
    if (h.size == 0 || h.size > 65536)
        return -1;
    static uint8_t buf[65536];
    if (readmem(h.payload, buf, h.size))
        return 1; /* the payload went away under us: an update */
    if (readmem(at + 16, &t1, 8))
        return -1;
    if (t1 != t0 || h.published != t0)
        return 1;
    return decode_payload(buf, h.size) ? -1 : 0;
}

static int cmd_process(int reads)
{
    uint64_t at = find_ctx_mapping();
    if (!at) {
        printf("no OTEL_CTX mapping\n");
        return 1;
    }
    int whole = 0, torn = 0, retries = 0;
    for (int i = 0; i < reads; i++) {
        int rc;
        int tries = 0;
        while ((rc = read_ctx_once(at)) == 1 && tries++ < 100)
            retries++;
        if (rc)
            continue;
        whole++;
        const char *a = attr_of("check.a"), *b = attr_of("check.b");
        if (a && b && strcmp(a, b))
            torn++;
    }
    for (int i = 0; i < nattrs; i++)
        printf("%s %s=%s\n", attrs[i].extra ? "extra" : "resource", attrs[i].key, attrs[i].value);
    for (int i = 0; i < nkeys; i++)
        printf("key %d=%s\n", i, keymap[i]);
    printf("reads %d whole %d torn %d retries %d\n", reads, whole, torn, retries);
    return whole ? 0 : 1;
}

/* -------------------------------------------------------- thread context */

enum access { NONE, TLSDESC, INITIAL_EXEC, DYNAMIC, LOCAL_EXEC };
static const char *access_names[] = {"none", "tlsdesc", "initial-exec", "general-dynamic", "local-exec"};
static struct {
    enum access how;
    uint64_t got;       /* the relocated GOT slot(s) in the target */
    int64_t tp_offset;  /* local-exec */
    char path[4096];
} tls;

/* Looks for otel_thread_ctx_v1 in one object mapped at `base` (the address
 * of its first page); fills tls on success. */
static int find_symbol_in(const char *path, uint64_t base)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    off_t size = lseek(fd, 0, SEEK_END);
    uint8_t *img = size > 0 ? malloc((size_t)size) : NULL;
    int ok = img && pread(fd, img, (size_t)size, 0) == size;
    close(fd);
    int found = -1;
    Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
    if (!ok || size < (off_t)sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > (uint64_t)size)
        goto out;
    Elf64_Shdr *sh = (Elf64_Shdr *)(img + eh->e_shoff);
    Elf64_Phdr *ph = (Elf64_Phdr *)(img + eh->e_phoff);
    uint64_t first_vaddr = UINT64_MAX, tls_memsz = 0, tls_align = 1;
    for (int i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < first_vaddr)
            first_vaddr = ph[i].p_vaddr & ~4095ull;
        if (ph[i].p_type == PT_TLS) {
            tls_memsz = ph[i].p_memsz;
            tls_align = ph[i].p_align ? ph[i].p_align : 1;
        }
    }
    uint64_t bias = base - first_vaddr;
    long symidx = -1;
    Elf64_Sym sym;
    for (int i = 0; i < eh->e_shnum && symidx < 0; i++) {
        if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
            continue;
        Elf64_Sym *syms = (Elf64_Sym *)(img + sh[i].sh_offset);
        const char *str = (const char *)(img + sh[sh[i].sh_link].sh_offset);
        size_t n = sh[i].sh_size / sizeof(Elf64_Sym);
        for (size_t k = 0; k < n; k++)
            if (ELF64_ST_TYPE(syms[k].st_info) == STT_TLS && syms[k].st_shndx != SHN_UNDEF &&
                !strcmp(str + syms[k].st_name, "otel_thread_ctx_v1")) {
                symidx = (long)k;
                sym = syms[k];
                break;
            }
    }
    if (symidx < 0)
        goto out;
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_RELA)
            continue;
        Elf64_Rela *r = (Elf64_Rela *)(img + sh[i].sh_offset);
        size_t n = sh[i].sh_size / sizeof(Elf64_Rela);
        for (size_t k = 0; k < n; k++) {
            if ((long)ELF64_R_SYM(r[k].r_info) != symidx)
                continue;
            uint32_t type = ELF64_R_TYPE(r[k].r_info);
            enum access how = type == R_TLSDESC ? TLSDESC : type == R_TPOFF ? INITIAL_EXEC
                              : type == R_DTPMOD ? DYNAMIC : NONE;
            if (how != NONE && (tls.how == NONE || how == TLSDESC)) {
                tls.how = how;
                tls.got = bias + r[k].r_offset;
            }
        }
    }
    if (tls.how == NONE && eh->e_type == ET_EXEC) {
        tls.how = LOCAL_EXEC;
#ifdef __aarch64__
        (void)tls_memsz;
        tls.tp_offset = (int64_t)sym.st_value + (int64_t)((TCB_SIZE + tls_align - 1) / tls_align * tls_align);
#else
        tls.tp_offset = (int64_t)sym.st_value - (int64_t)((tls_memsz + tls_align - 1) / tls_align * tls_align);
#endif
    }
    if (tls.how != NONE) {
        snprintf(tls.path, sizeof tls.path, "%s", path);
        found = 0;
    }
out:
    free(img);
    return found;
}

static int find_symbol(void)
{
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi, off;
        int name_at = 0;
        if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &lo, &hi, &off, &name_at) < 3 || !name_at)
            continue;
        char *name = line + name_at;
        name[strcspn(name, "\n")] = 0;
        if (off != 0 || name[0] != '/')
            continue;
        if (find_symbol_in(name, lo) == 0)
            break;
    }
    if (f)
        fclose(f);
    return tls.how == NONE ? -1 : 0;
}

/* The address of the stopped thread's otel_thread_ctx_v1. */
static int tls_address(uint64_t tp, uint64_t *out)
{
    uint64_t w[2];
    switch (tls.how) {
    case TLSDESC:
        if (readmem(tls.got, w, 16))
            return -1;
#ifdef __aarch64__
        if (w[1] < (1ull << 32)) { /* static TLS: the offset itself, above tp */
#else
        if ((int64_t)w[1] < 0 && (int64_t)w[1] > -(1ll << 32)) { /* static TLS: the offset itself */
#endif
            *out = tp + w[1];
            return 0;
        }
        /* dynamic TLS: the argument points at {module id, offset} */
        if (readmem(w[1], w, 16))
            return -1;
        goto dtv;
    case INITIAL_EXEC:
        if (readmem(tls.got, w, 8))
            return -1;
        *out = tp + w[0];
        return 0;
    case DYNAMIC:
        if (readmem(tls.got, w, 16))
            return -1;
    dtv : {
        uint64_t dtv, block;
        if (readmem(tp + DTV_AT, &dtv, 8) || readmem(dtv + 16 * w[0], &block, 8) || block == 0 || block == UINT64_MAX)
            return -1;
        *out = block + w[1];
        return 0;
    }
    case LOCAL_EXEC:
        *out = tp + (uint64_t)tls.tp_offset;
        return 0;
    default:
        return -1;
    }
}

struct record {
    uint8_t trace_id[16], span_id[8];
    uint8_t valid, flags;
    uint16_t attrs_size;
    uint8_t attrs[612];
};

static void hex(char *out, const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
}

static int list_tasks(pid_t *tids, int cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) && n < cap)
        if (e->d_name[0] != '.')
            tids[n++] = atoi(e->d_name);
    if (d)
        closedir(d);
    return n;
}

static uint64_t be64(const uint8_t *b)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | b[i];
    return v;
}

static int cmd_threads(int reads, uint64_t truth_addr)
{
    if (find_symbol()) {
        printf("otel_thread_ctx_v1 not found in any object's .dynsym\n");
        return 1;
    }
    uint64_t ctx_at = find_ctx_mapping();
    if (ctx_at)
        for (int t = 0; t < 100 && read_ctx_once(ctx_at); t++)
            ;
    printf("symbol in %s, access %s\n", tls.path, access_names[tls.how]);
    int in_span = 0, matched = 0, done = 0, failed = 0, shown = 0;
    pid_t tids[256];
    for (int i = 0; done < reads && failed < reads; i++) {
        int n = list_tasks(tids, 256);
        if (!n)
            break;
        pid_t tid = tids[i % n];
        if (ptrace(PTRACE_SEIZE, tid, 0, 0)) {
            failed++;
            continue;
        }
        int st;
        if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) || waitpid(tid, &st, __WALL) != tid) {
            ptrace(PTRACE_DETACH, tid, 0, 0);
            failed++;
            continue;
        }
        struct record rec;
        uint64_t at = 0, ptr = 0, tp = 0;
#ifdef __aarch64__
        struct iovec iov = {&tp, sizeof tp};
        int got_tp = !ptrace(PTRACE_GETREGSET, tid, (void *)NT_ARM_TLS, &iov);
#else
        struct user_regs_struct regs;
        int got_tp = !ptrace(PTRACE_GETREGS, tid, 0, &regs);
        tp = regs.fs_base;
#endif
        int have = got_tp && !tls_address(tp, &at) && !readmem(at, &ptr, 8);
        int valid = 0;
        if (have && ptr && !readmem(ptr, &rec, 28) && rec.valid == 1 &&
            (rec.attrs_size == 0 || (rec.attrs_size <= sizeof rec.attrs && !readmem(ptr + 28, rec.attrs, rec.attrs_size))))
            valid = 1;
        struct {
            int32_t tid, pad;
            int64_t k;
        } truth[16];
        int have_truth = truth_addr && !readmem(truth_addr, truth, sizeof truth);
        ptrace(PTRACE_DETACH, tid, 0, 0);
        if (!have) {
            failed++;
            continue;
        }
        done++;
        char trace[33] = "", span[17] = "", text[1024] = "", request[64] = "";
        size_t o = 0;
        if (valid) {
            hex(trace, rec.trace_id, 16);
            hex(span, rec.span_id, 8);
            for (size_t p = 0; p + 2 <= rec.attrs_size;) {
                int k = rec.attrs[p], len = rec.attrs[p + 1];
                if (p + 2 + (size_t)len > rec.attrs_size)
                    break;
                if (k >= nkeys && ctx_at)
                    for (int t = 0; t < 100 && read_ctx_once(ctx_at); t++)
                        ;
                const char *key = k < nkeys ? keymap[k] : "?";
                o += (size_t)snprintf(text + o, o < sizeof text ? sizeof text - o : 0, "%s%s=%.*s", o ? ";" : "",
                                      key, len, (const char *)rec.attrs + p + 2);
                if (!strcmp(key, "request"))
                    snprintf(request, sizeof request, "%.*s", len, (const char *)rec.attrs + p + 2);
                p += 2 + (size_t)len;
            }
        }
        int64_t k = 0;
        for (int t = 0; have_truth && t < 16; t++)
            if (truth[t].tid == tid)
                k = truth[t].k;
        if (k > 0) {
            in_span++;
            char want[32];
            snprintf(want, sizeof want, "%" PRId64, k);
            int ok = valid && be64(rec.span_id) == (uint64_t)k && be64(rec.trace_id) == (uint64_t)k &&
                     be64(rec.trace_id + 8) == ~(uint64_t)k && !strcmp(request, want);
            matched += ok;
            if (!ok && shown++ < 5)
                printf("mismatch tid %d: program in request %s, record %s trace %s span %s attrs %s\n", (int)tid,
                       want, valid ? "valid" : "not valid", trace, span, text);
        }
        if (!truth_addr || i < 20)
            printf("read tid %d %s trace %s span %s flags %d attrs %s\n", (int)tid, valid ? "valid" : "none",
                   trace, span, valid ? rec.flags : 0, text);
    }
    printf("reads %d in_span %d matched %d failed %d\n", done, in_span, matched, failed);
    return done ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: otel_reader process PID [READS] | threads PID READS [TRUTH_ADDR]\n");
        return 2;
    }
    pid = (pid_t)atoi(argv[2]);
    int reads = argc > 3 ? atoi(argv[3]) : 1;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(argv[1], "process"))
        return cmd_process(reads);
    if (!strcmp(argv[1], "threads"))
        return cmd_threads(reads, argc > 4 ? strtoull(argv[4], NULL, 0) : 0);
    fprintf(stderr, "otel_reader: unknown command %s\n", argv[1]);
    return 2;
}
