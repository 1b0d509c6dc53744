/* test_symbolize.c: the symbolizer against this very program.
 * test-labels: concurrency timing
 *
 * Checks that a static (non-exported) function is named from .symtab with
 * its file and line; that an address inside always-inline code yields the
 * inlined function and its caller as separate frames; that libc addresses
 * resolve and sit in a libc mapping; that the mapping list is ordered and
 * carries the executable's GNU build ID (compared with the note the loader
 * mapped); that pprof_symbol_name() works and rejects what it should; and
 * that libraries loaded or deleted later, JIT-style anonymous code and a
 * forked child are handled; that a PLT stub is named "<function>@plt" and
 * its mapping keeps has_functions. Ends with a timing of 10k distinct
 * addresses.
 * Needs -O2 -g (the default RelWithDebInfo build).
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "symbolize.h"
#include "check.h"

#include <dlfcn.h>
#include <elf.h>
#include <gelf.h>
#include <libelf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Ends a case and its session (if it began one). */
static void end_case(pp_sym_session *s, const char *name)
{
    if (s)
        pp_sym_end(s);
    check_case_end(name);
}

/* Prints r when the case has failed so far. */
static void dump(const char *what, const pp_sym_result *r)
{
    if (check_case_ok())
        return;
    fprintf(stderr, "  %s: mapping %d, %d frames\n", what, r->mapping, r->nframes);
    for (int i = 0; i < r->nframes; i++)
        fprintf(stderr, "    #%d %s [%s] %s:%d\n", i,
                r->frames[i].function ? r->frames[i].function : "?",
                r->frames[i].system_name ? r->frames[i].system_name : "?",
                r->frames[i].filename ? r->frames[i].filename : "?", r->frames[i].line);
}

/* ------------------------------------------------- code to be looked up */

#ifdef __clang__
#define NOCLONE /* clang makes no clones to keep apart */
#else
#define NOCLONE __attribute__((noclone))
#endif

static volatile uintptr_t g_pc;
static volatile int g_sink;

/* Records its return address: minus one, a call site inside its caller. */
static NOCLONE __attribute__((noinline)) void record_pc(void)
{
    g_pc = (uintptr_t)__builtin_return_address(0);
    __asm__ volatile("" ::: "memory");
}

static const int static_fn_line = __LINE__ + 2;
static NOCLONE __attribute__((noinline, used)) int
symbolize_static_target(int x)
{
    g_sink += x;
    return g_sink * 3;
}

static const int inlined_call_line = __LINE__ + 4;
static inline __attribute__((always_inline)) int symbolize_inlined_leaf(int x)
{
    g_sink += x;
    record_pc();
    return g_sink + 7;
}

static const int caller_call_line = __LINE__ + 4;
static NOCLONE __attribute__((noinline)) int symbolize_inline_caller(int x)
{
    int r = 2 * x;
    r += symbolize_inlined_leaf(r);
    return r + g_sink;
}

/* ---------------------------------------------------------------- tests */

static void test_static_function(void)
{
    check_case_begin();
    int (*volatile fp)(int) = symbolize_static_target;
    fp(1);
    uint64_t addr = (uint64_t)(uintptr_t)fp;
    pp_sym_session *s = pp_sym_begin();
    CHECKF(s != NULL, "pp_sym_begin returned NULL");
    if (s) {
        pp_sym_result r;
        pp_sym_lookup(s, addr, &r);
        CHECKF(r.mapping >= 0, "no mapping for %#llx", (unsigned long long)addr);
        CHECKF(r.nframes == 1, "nframes %d", r.nframes);
        if (r.nframes >= 1) {
            const pp_sym_frame *f = &r.frames[r.nframes - 1];
            CHECKF(f->function && strcmp(f->function, "symbolize_static_target") == 0,
                  "function %s", f->function ? f->function : "(null)");
            CHECKF(f->system_name && strcmp(f->system_name, "symbolize_static_target") == 0,
                  "system_name %s", f->system_name ? f->system_name : "(null)");
            CHECKF(f->filename && ends_with(f->filename, "test_symbolize.c"), "filename %s",
                  f->filename ? f->filename : "(null)");
            CHECKF(f->line >= static_fn_line && f->line <= static_fn_line + 3,
                  "line %d, function starts at %d", f->line, static_fn_line);
        }
        /* A second lookup comes from the cache: same strings. */
        pp_sym_result r2;
        pp_sym_lookup(s, addr, &r2);
        CHECKF(r2.nframes == r.nframes && r2.mapping == r.mapping &&
                  (r.nframes == 0 || r2.frames[0].function == r.frames[0].function),
              "cached result differs");
        dump("static function", &r);
        pp_sym_end(s);
    }
    check_case_end("static function");
}

static void test_inlined(void)
{
    check_case_begin();
    g_pc = 0;
    symbolize_inline_caller(5);
    CHECKF(g_pc != 0, "record_pc did not run");
    uint64_t addr = (uint64_t)g_pc - 1;
    pp_sym_session *s = pp_sym_begin();
    CHECKF(s != NULL, "pp_sym_begin returned NULL");
    if (s && g_pc) {
        pp_sym_result r;
        pp_sym_lookup(s, addr, &r);
        CHECKF(r.nframes >= 2, "nframes %d", r.nframes);
        if (r.nframes >= 2) {
            const pp_sym_frame *in = &r.frames[0], *out = &r.frames[r.nframes - 1];
            CHECKF(in->function && strcmp(in->function, "symbolize_inlined_leaf") == 0,
                  "innermost %s", in->function ? in->function : "(null)");
            CHECKF(in->line == inlined_call_line, "innermost line %d, want %d", in->line,
                  inlined_call_line);
            CHECKF(in->filename && ends_with(in->filename, "test_symbolize.c"), "file %s",
                  in->filename ? in->filename : "(null)");
            CHECKF(out->function && strcmp(out->function, "symbolize_inline_caller") == 0,
                  "outer %s", out->function ? out->function : "(null)");
            CHECKF(r.frames[1].line == caller_call_line, "caller line %d, want %d",
                  r.frames[1].line, caller_call_line);
            CHECKF(r.frames[1].filename && ends_with(r.frames[1].filename, "test_symbolize.c"),
                  "caller file %s", r.frames[1].filename ? r.frames[1].filename : "(null)");
        }
        dump("inlined", &r);
    }
    end_case(s, "inlined frames");
}

static void test_libc(void)
{
    check_case_begin();
    void *fn = dlsym(RTLD_DEFAULT, "getpid");
    CHECKF(fn != NULL, "dlsym(getpid) failed");
    pp_sym_session *s = pp_sym_begin();
    CHECKF(s != NULL, "pp_sym_begin returned NULL");
    if (s && fn) {
        pp_sym_result r;
        pp_sym_lookup(s, (uint64_t)(uintptr_t)fn, &r);
        const pp_sym_mapping *maps;
        size_t n = pp_sym_mappings(s, &maps);
        CHECKF(r.mapping >= 0 && (size_t)r.mapping < n, "mapping %d of %zu", r.mapping, n);
        if (r.mapping >= 0 && (size_t)r.mapping < n)
            CHECKF(strstr(maps[r.mapping].path, "libc") != NULL, "mapping path %s",
                  maps[r.mapping].path);
        CHECKF(r.nframes >= 1, "nframes %d", r.nframes);
        if (r.nframes >= 1) {
            const char *name = r.frames[r.nframes - 1].function;
            CHECKF(name && strstr(name, "getpid"), "function %s", name ? name : "(null)");
        }
        dump("getpid", &r);
    }
    end_case(s, "libc symbol");
}

/* The GNU build ID of the main program, from the note the loader mapped. */
static int main_build_id_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    char *out = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
        const char *e = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= e) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            const char *name = p + sizeof *nh;
            const unsigned char *desc =
                (const unsigned char *)name + ((nh->n_namesz + 3) & ~3u);
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                memcmp(name, "GNU", 4) == 0 && nh->n_descsz <= 64) {
                for (unsigned j = 0; j < nh->n_descsz; j++)
                    sprintf(out + 2 * j, "%02x", desc[j]);
                return 1;
            }
            p = (const char *)desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
    return 1; /* the first entry is the main program */
}

static void test_mappings(void)
{
    check_case_begin();
    char want_id[129] = "";
    dl_iterate_phdr(main_build_id_cb, want_id);
    char exe[4096];
    ssize_t elen = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[elen > 0 ? elen : 0] = '\0';

    pp_sym_session *s = pp_sym_begin();
    CHECKF(s != NULL, "pp_sym_begin returned NULL");
    if (s) {
        const pp_sym_mapping *maps;
        size_t n = pp_sym_mappings(s, &maps);
        CHECKF(n >= 2, "only %zu mappings", n);
        int vdso = 0;
        for (size_t i = 0; i < n; i++) {
            CHECKF(maps[i].start < maps[i].limit, "mapping %zu empty", i);
            if (i > 0)
                CHECKF(maps[i - 1].limit <= maps[i].start, "mappings %zu and %zu overlap or are unsorted",
                      i - 1, i);
            CHECKF(maps[i].path && maps[i].build_id, "mapping %zu has NULL strings", i);
            CHECKF(!strstr(maps[i].path, "(deleted)") && strcmp(maps[i].path, "[vsyscall]") != 0,
                  "path %s", maps[i].path);
            vdso += strcmp(maps[i].path, "[vdso]") == 0;
        }
        /* No vDSO under valgrind, for one. */
        CHECKF(vdso == (getauxval(AT_SYSINFO_EHDR) != 0), "%d [vdso] mappings", vdso);
        uint64_t main_addr = (uint64_t)(uintptr_t)&test_mappings;
        pp_sym_result r;
        pp_sym_lookup(s, main_addr, &r);
        CHECKF(r.mapping >= 0, "no mapping holds this program's code");
        if (r.mapping >= 0) {
            const pp_sym_mapping *m = &maps[r.mapping];
            size_t len = strlen(m->build_id);
            CHECKF(len == 40, "build id '%s' has length %zu", m->build_id, len);
            CHECKF(strspn(m->build_id, "0123456789abcdef") == len, "build id '%s' not lowercase hex",
                  m->build_id);
            CHECKF(want_id[0] == '\0' || strcmp(m->build_id, want_id) == 0,
                  "build id %s, loader's note says %s", m->build_id, want_id);
            CHECKF(strcmp(m->path, exe) == 0, "path %s, /proc/self/exe %s", m->path, exe);
        }
        /* Batches that see the same layout share one snapshot. */
        pp_sym_mapping first[64];
        size_t ncopy = n < 64 ? n : 64;
        memcpy(first, maps, ncopy * sizeof *first);
        pp_sym_end(s);
        s = pp_sym_begin();
        const pp_sym_mapping *maps2;
        size_t n2 = pp_sym_mappings(s, &maps2);
        int same_layout = n2 == n && n <= 64;
        for (size_t i = 0; same_layout && i < n; i++)
            same_layout = maps2[i].start == first[i].start && maps2[i].limit == first[i].limit;
        CHECKF(!same_layout || maps2 == maps, "snapshot rebuilt without a layout change");
        pp_sym_end(s);
    }
    check_case_end("mappings and build ID");
}

static void test_symbol_name(void)
{
    check_case_begin();
    char buf[256];
    int rc = pprof_symbol_name((uint64_t)(uintptr_t)symbolize_static_target + 1, buf, sizeof buf);
    CHECKF(rc == 0 && strcmp(buf, "symbolize_static_target") == 0, "rc %d name '%s'", rc, buf);
    /* For inlined code the name is the out-of-line function. */
    rc = pprof_symbol_name((uint64_t)g_pc - 1, buf, sizeof buf);
    CHECKF(rc == 0 && strcmp(buf, "symbolize_inline_caller") == 0, "rc %d name '%s'", rc, buf);
    rc = pprof_symbol_name(16, buf, sizeof buf);
    CHECKF(rc == PPROF_ENOTFOUND, "address 16 gave %d '%s'", rc, buf);
    rc = pprof_symbol_name((uint64_t)(uintptr_t)symbolize_static_target, NULL, 10);
    CHECKF(rc == PPROF_EINVAL, "NULL buffer gave %d", rc);
    rc = pprof_symbol_name((uint64_t)(uintptr_t)symbolize_static_target, buf, 0);
    CHECKF(rc == PPROF_EINVAL, "zero length gave %d", rc);
    char small[6];
    rc = pprof_symbol_name((uint64_t)(uintptr_t)symbolize_static_target, small, sizeof small);
    CHECKF(rc == 0 && strcmp(small, "symbo") == 0, "truncated: rc %d '%s'", rc, small);
    /* The vDSO's functions by their symbol table's preferred alias (x86-64:
     * the global __vdso_clock_gettime, not the weak clock_gettime that the
     * loader would give and that reads as libc's caller recursing). */
    void *vdso = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
    void *fn = vdso ? dlsym(vdso, "__vdso_clock_gettime") : NULL;
    if (fn) {
        rc = pprof_symbol_name((uint64_t)(uintptr_t)fn + 1, buf, sizeof buf);
        CHECKF(rc == 0 && strcmp(buf, "__vdso_clock_gettime") == 0, "vDSO: rc %d name '%s'", rc, buf);
    }
    if (vdso)
        dlclose(vdso);
    check_case_end("pprof_symbol_name");
}

/* Calls getpid through the executable's PLT. */
__attribute__((noinline)) int symbolize_plt_caller(void)
{
    return (int)getpid() + 1;
}

/* The stub a call in symbolize_plt_caller goes to: "getpid@plt". */
static void test_plt(void)
{
    check_case_begin();
    /* the calls in its first bytes (sanitizers add calls of their own) */
    const unsigned char *code = (const unsigned char *)(uintptr_t)symbolize_plt_caller;
    char buf[256] = "", names[512] = "";
    int found = 0;
#ifdef __aarch64__
    for (int i = 0; i < 64 && !found; i += 4) {
        uint32_t in; /* bl: imm26 words from the instruction */
        memcpy(&in, code + i, sizeof in);
        if ((in & 0xfc000000u) != 0x94000000u)
            continue;
        int64_t words = (int64_t)(in & 0x3ffffff);
        if (words & (1 << 25))
            words -= 1 << 26;
        uint64_t stub = (uint64_t)(uintptr_t)(code + i) + (uint64_t)(words * 4);
#else
    for (int i = 0; i < 64 && !found; i++) {
        if (code[i] != 0xe8)
            continue;
        int32_t rel;
        memcpy(&rel, code + i + 1, sizeof rel);
        uint64_t stub = (uint64_t)(uintptr_t)(code + i + 5) + (uint64_t)(int64_t)rel;
#endif
        if (pprof_symbol_name(stub + 4, buf, sizeof buf) == 0) {
            found = !strcmp(buf, "getpid@plt");
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s ", buf);
        }
    }
    CHECKF(found, "no call to getpid@plt among the calls of symbolize_plt_caller (%s)", names);
    CHECK(symbolize_plt_caller() > 1);
    check_case_end("PLT stubs are named <function>@plt");
}

/* libc's base address and file name. */
static int find_libc(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    if (!strstr(info->dlpi_name, "/libc.so"))
        return 0;
    struct dl_phdr_info *out = data;
    *out = *info;
    return 1;
}

/* Every stub of libc's own .plt has a name, its calls to its ifuncs
 * (strnlen, memchr... through irelative slots) as well. */
static void test_plt_libc(void)
{
    check_case_begin();
    struct dl_phdr_info libc = {0};
    dl_iterate_phdr(find_libc, &libc);
    int fd = libc.dlpi_name ? open(libc.dlpi_name, O_RDONLY | O_CLOEXEC) : -1;
    Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
    size_t shstrndx = 0, stubs = 0, named = 0;
    char buf[256], unnamed[256] = "";
    if (elf && elf_getshdrstrndx(elf, &shstrndx) == 0) {
        for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
            GElf_Shdr sh;
            const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
            if (!name || strcmp(name, ".plt") != 0)
                continue;
#ifdef __aarch64__
            uint64_t first = 32; /* arm64's resolver entry takes two */
#else
            uint64_t first = 16;
#endif
            for (uint64_t off = first; off + 16 <= sh.sh_size; off += 16) { /* after the resolver's entry */
                stubs++;
                if (pprof_symbol_name(libc.dlpi_addr + sh.sh_addr + off + 4, buf, sizeof buf) == 0 &&
                    ends_with(buf, "@plt") && strncmp(buf, "*ABS*", 5) != 0)
                    named++;
                else if (!unnamed[0])
                    snprintf(unnamed, sizeof unnamed, "%#llx", (unsigned long long)(sh.sh_addr + off));
            }
        }
    }
    if (elf)
        elf_end(elf);
    if (fd >= 0)
        close(fd);
    CHECKF(stubs > 0 && named == stubs, "libc .plt: %zu of %zu stubs named (first unnamed %s)", named, stubs,
           unnamed);
    check_case_end("libc's PLT stubs, ifuncs' too, are named");
}

/* Concurrent callers each get a consistent answer. */
static void *name_thread(void *arg)
{
    (void)arg;
    char buf[128];
    for (int i = 0; i < 2000; i++) {
        if (pprof_symbol_name((uint64_t)(uintptr_t)symbolize_static_target + (i % 16), buf,
                              sizeof buf) != 0 ||
            strcmp(buf, "symbolize_static_target") != 0)
            return (void *)1;
    }
    return NULL;
}

static void test_threads(void)
{
    check_case_begin();
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        CHECKF(pthread_create(&t[i], NULL, name_thread, NULL) == 0, "pthread_create");
    for (int i = 0; i < 4; i++) {
        void *ret = (void *)1;
        pthread_join(t[i], &ret);
        CHECKF(ret == NULL, "thread %d got a wrong name", i);
    }
    check_case_end("concurrent pprof_symbol_name");
}

/* A library loaded after the first batch is seen by the next one. */
static void test_dlopen(void)
{
    check_case_begin();
    void *h = dlopen("libcrypt.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("test_symbolize: dlopen(libcrypt.so.1) failed, refresh check skipped\n");
        check_case_end("refresh after dlopen");
        return;
    }
    void *fn = dlsym(h, "crypt");
    CHECKF(fn != NULL, "dlsym(crypt)");
    pp_sym_session *s = pp_sym_begin();
    if (s && fn) {
        pp_sym_result r;
        pp_sym_lookup(s, (uint64_t)(uintptr_t)fn, &r);
        const pp_sym_mapping *maps;
        size_t n = pp_sym_mappings(s, &maps);
        CHECKF(r.mapping >= 0 && (size_t)r.mapping < n && strstr(maps[r.mapping].path, "libcrypt"),
              "mapping %d", r.mapping);
        CHECKF(r.nframes >= 1 && r.frames[r.nframes - 1].function &&
                  strstr(r.frames[r.nframes - 1].function, "crypt"),
              "nframes %d", r.nframes);
        dump("crypt", &r);
    }
    end_case(s, "refresh after dlopen");
}

/* Anonymous executable memory (JIT code) is a mapping with no path and no
 * build ID, known only while it exists. */
static void test_anonymous_exec(void)
{
    check_case_begin();
    size_t len = (size_t)sysconf(_SC_PAGESIZE);
    void *p = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECKF(p != MAP_FAILED, "mmap failed");
    if (p == MAP_FAILED) {
        check_case_end("anonymous executable mapping");
        return;
    }
    uint64_t addr = (uint64_t)(uintptr_t)p + 16;
    pp_sym_session *s = pp_sym_begin();
    CHECKF(s != NULL, "pp_sym_begin returned NULL");
    if (s) {
        const pp_sym_mapping *maps;
        size_t n = pp_sym_mappings(s, &maps);
        pp_sym_result r;
        pp_sym_lookup(s, addr, &r);
        CHECKF(r.mapping >= 0 && (size_t)r.mapping < n, "no mapping for the JIT page");
        if (r.mapping >= 0 && (size_t)r.mapping < n)
            CHECKF(maps[r.mapping].path[0] == '\0' && maps[r.mapping].build_id[0] == '\0',
                  "path '%s' build id '%s'", maps[r.mapping].path, maps[r.mapping].build_id);
        CHECKF(r.nframes == 0, "nframes %d", r.nframes);
        pp_sym_end(s);
    }
    munmap(p, len);
    s = pp_sym_begin();
    if (s) {
        pp_sym_result r;
        pp_sym_lookup(s, addr, &r);
        CHECKF(r.mapping == -1, "unmapped page still in mapping %d", r.mapping);
        pp_sym_end(s);
    }
    check_case_end("anonymous executable mapping");
}

/* A library deleted after loading (as when a package is upgraded under a
 * running service) keeps its build ID and names, and its path loses the
 * kernel's " (deleted)" suffix. */
static void test_deleted_library(void)
{
    check_case_begin();
    const char *src = NULL;
#ifdef __aarch64__
#define TRIPLET "aarch64-linux-gnu"
#else
#define TRIPLET "x86_64-linux-gnu"
#endif
    static const char *const candidates[] = {"/usr/lib/" TRIPLET "/libcrypt.so.1", "/lib/" TRIPLET "/libcrypt.so.1",
                                             "/usr/lib64/libcrypt.so.1", "/usr/lib/libcrypt.so.1"};
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0] && !src; i++)
        if (access(candidates[i], R_OK) == 0)
            src = candidates[i];
    char dir[] = "/tmp/test_symbolize.XXXXXX";
    if (!src || !mkdtemp(dir)) {
        printf("test_symbolize: no libcrypt.so.1 to copy, deleted-library check skipped\n");
        check_case_end("deleted library");
        return;
    }
    char path[128];
    snprintf(path, sizeof path, "%s/libcopy.so", dir);
    int in = open(src, O_RDONLY), out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    CHECKF(in >= 0 && out >= 0, "cannot copy %s", src);
    char buf[65536];
    ssize_t n;
    while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
        CHECKF(write(out, buf, (size_t)n) == n, "short write");
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    void *h = check_case_ok() ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    CHECKF(h != NULL, "dlopen(%s): %s", path, dlerror());
    void *fn = h ? dlsym(h, "crypt") : NULL;
    unlink(path);
    rmdir(dir);
    pp_sym_session *s = fn ? pp_sym_begin() : NULL;
    if (s) {
        pp_sym_result r;
        pp_sym_lookup(s, (uint64_t)(uintptr_t)fn, &r);
        const pp_sym_mapping *maps;
        size_t nm = pp_sym_mappings(s, &maps);
        CHECKF(r.mapping >= 0 && (size_t)r.mapping < nm, "mapping %d", r.mapping);
        if (r.mapping >= 0 && (size_t)r.mapping < nm) {
            CHECKF(strcmp(maps[r.mapping].path, path) == 0, "path '%s'", maps[r.mapping].path);
            CHECKF(strlen(maps[r.mapping].build_id) == 40, "build id '%s'",
                  maps[r.mapping].build_id);
        }
        CHECKF(r.nframes >= 1 && r.frames[r.nframes - 1].function &&
                  strcmp(r.frames[r.nframes - 1].function, "crypt") == 0,
              "nframes %d", r.nframes);
        dump("deleted crypt", &r);
        pp_sym_end(s);
    }
    check_case_end("deleted library");
}

/* A forked child symbolizes on its own (the lock is not inherited held,
 * and the pid change rebuilds the symbolizer). */
static void test_fork(void)
{
    check_case_begin();
    pid_t pid = fork();
    CHECKF(pid >= 0, "fork failed");
    if (pid == 0) {
        char buf[128];
        int rc = pprof_symbol_name((uint64_t)(uintptr_t)symbolize_static_target, buf, sizeof buf);
        pp_sym_session *s = pp_sym_begin();
        int good = rc == 0 && strcmp(buf, "symbolize_static_target") == 0 && s != NULL;
        if (s)
            pp_sym_end(s);
        _exit(good ? 0 : 1);
    }
    int status = 0;
    if (pid > 0) {
        CHECKF(waitpid(pid, &status, 0) == pid, "waitpid");
        CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
    }
    check_case_end("fork");
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* 10k distinct addresses across the mappings, twice: first lookups must be
 * reasonable and cached ones fast. The bounds are loose on purpose. */
static void test_bulk(void)
{
    check_case_begin();
    pp_sym_session *s = pp_sym_begin();
    CHECKF(s != NULL, "pp_sym_begin returned NULL");
    if (!s) {
        check_case_end("bulk lookups");
        return;
    }
    const pp_sym_mapping *maps;
    size_t n = pp_sym_mappings(s, &maps);
    enum { N = 10000 };
    static uint64_t addrs[N];
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const pp_sym_mapping *m = &maps[x % n];
        addrs[i] = m->start + (x >> 20) % (m->limit - m->start);
    }
    double t0 = now_ms();
    int named = 0;
    for (int i = 0; i < N; i++) {
        pp_sym_result r;
        pp_sym_lookup(s, addrs[i], &r);
        CHECKF(r.mapping >= 0, "address %#llx lost its mapping", (unsigned long long)addrs[i]);
        named += r.nframes > 0;
    }
    double t1 = now_ms();
    for (int i = 0; i < N; i++) {
        pp_sym_result r;
        pp_sym_lookup(s, addrs[i], &r);
    }
    double t2 = now_ms();
    pp_sym_end(s);
    printf("test_symbolize: %d addresses in %zu mappings: first pass %.1f ms (%d named), "
           "cached pass %.2f ms\n",
           N, n, t1 - t0, named, t2 - t1);
    CHECKF(t1 - t0 < 20000, "first pass took %.0f ms", t1 - t0);
    CHECKF(t2 - t1 < 200, "cached pass took %.0f ms", t2 - t1);
    check_case_end("bulk lookups");
}

/* The answers' cache stays within LIBPPROF_SYMBOLIZER_CACHE_MB (1 here,
 * set in main): past it, the next batch starts from an empty cache. */
static void test_cache_budget(void)
{
    check_case_begin();
    pprof_symbolizer_stats before, full, after;
    pprof_symbolizer_stats_get(&before);
    CHECKF(before.cache_budget == 1u << 20, "budget %llu", (unsigned long long)before.cache_budget);
    pp_sym_session *s = pp_sym_begin();
    const pp_sym_mapping *maps;
    size_t n = pp_sym_mappings(s, &maps);
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < 40000 && n > 0; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const pp_sym_mapping *m = &maps[x % n];
        pp_sym_result r;
        pp_sym_lookup(s, m->start + (x >> 20) % (m->limit - m->start), &r);
    }
    pp_sym_end(s);
    pprof_symbolizer_stats_get(&full);
    s = pp_sym_begin();
    pp_sym_result r;
    pp_sym_lookup(s, (uint64_t)(uintptr_t)&test_cache_budget, &r);
    pp_sym_end(s);
    pprof_symbolizer_stats_get(&after);
    printf("test_symbolize: cache %llu entries, %llu bytes after 40000 lookups; %llu entries, %llu bytes "
           "after the next batch; evictions %llu -> %llu\n",
           (unsigned long long)full.cache_entries, (unsigned long long)full.cache_bytes,
           (unsigned long long)after.cache_entries, (unsigned long long)after.cache_bytes,
           (unsigned long long)before.cache_evictions, (unsigned long long)after.cache_evictions);
    CHECKF(full.cache_bytes > full.cache_budget, "40000 lookups took only %llu bytes",
           (unsigned long long)full.cache_bytes);
    CHECK(after.cache_evictions > full.cache_evictions);
    CHECKF(after.cache_entries == 1 && after.cache_bytes < after.cache_budget, "%llu entries, %llu bytes",
           (unsigned long long)after.cache_entries, (unsigned long long)after.cache_bytes);
    CHECK(after.sessions == full.sessions + 1 && after.loaded);
    check_case_end("cache budget");
}

int main(void)
{
    setenv("LIBPPROF_SYMBOLIZER_CACHE_MB", "1", 1);
    test_static_function();
    test_inlined();
    test_libc();
    test_mappings();
    test_symbol_name();
    test_plt();
    test_plt_libc();
    test_threads();
    test_dlopen();
    test_anonymous_exec();
    test_deleted_library();
    test_fork();
    test_bulk();
    test_cache_budget();
    return check_summary("test_symbolize");
}
