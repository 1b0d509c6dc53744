/* libpprof-run.c: the launcher of the no-rebuild mode.
 *
 *   libpprof-run [OPTION]... [--] PROGRAM [ARG]...
 *
 * Sets the LIBPPROF_* environment variables from its options, puts
 * libpprof.so.0 first in LD_PRELOAD (keeping the entries already there)
 * and execs PROGRAM, whose preload constructor (server/preload.c) then
 * serves the /debug/pprof endpoints and prints where. Before the exec it
 * checks what would make the preload fail silently: a statically linked
 * program, one of another architecture, one the dynamic loader runs in
 * secure-execution mode (setuid, setgid, file capabilities); then, the
 * program found fit, what would make the preload's server refuse to start
 * (server/daemon.c, pprof_server_start), so that the program would run
 * unprofiled: a malformed address, a port in use, a token or TLS file it
 * cannot read, an address other than loopback with neither a token, a
 * client CA nor LIBPPROF_AUTH=none. Each is one line on stderr (never cut,
 * control characters shown escaped) and a non-zero exit.
 */
#define _GNU_SOURCE
#include "listen.h"
#include "pprof.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#define LIB_NAME "libpprof.so.0"
#define DEFAULT_ADDR "127.0.0.1:6060"

/* Exit statuses of the launcher itself (a program that runs exits with its own). */
enum { EXIT_CANNOT = 1, EXIT_USAGE = 2, EXIT_NOEXEC = 126, EXIT_NOTFOUND = 127 };

/* One line on stderr, then exit. The message is formatted whole (no
 * fixed buffer cuts it); a control character in it (a newline in a path
 * or an address) is written as \xNN, so it stays one line. */
__attribute__((noreturn, format(printf, 2, 3))) static void die(int status, const char *fmt, ...)
{
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    fputs("libpprof-run: ", stderr);
    if (msg) {
        for (const unsigned char *p = (const unsigned char *)msg; *p; p++) {
            if (*p < 0x20 || *p == 0x7f)
                fprintf(stderr, "\\x%02x", *p);
            else
                fputc(*p, stderr);
        }
    } else {
        vfprintf(stderr, fmt, again); /* out of memory: unescaped, but whole */
    }
    fputc('\n', stderr);
    va_end(again);
    va_end(ap);
    free(msg);
    exit(status);
}

/* An environment variable's value, or NULL when it is unset or empty (as
 * the library reads its settings). */
static const char *env_value(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static void usage(void)
{
    printf("usage: libpprof-run [OPTION]... [--] PROGRAM [ARG]...\n"
           "Runs PROGRAM with libpprof preloaded: it serves Go-compatible /debug/pprof\n"
           "endpoints, read by go tool pprof, and prints one line saying where.\n"
           "\n"
           "Each option sets the environment variable beside it (set directly, the\n"
           "variable works too); \"--opt value\" and \"--opt=value\" both work.\n"
           "  --addr HOST:PORT    LIBPPROF_ADDR            where to serve (default " DEFAULT_ADDR ");\n"
           "                                               port 0: any free port; off: nowhere;\n"
           "                                               other than loopback: needs LIBPPROF_TOKEN_FILE,\n"
           "                                               LIBPPROF_TLS_CLIENT_CA or LIBPPROF_AUTH=none\n"
           "  --cpu-hz N          LIBPPROF_CPU_HZ          CPU samples a second, up to %d; 0: off\n"
           "                                               (default %d)\n"
           "  --heap-rate N       LIBPPROF_HEAP_RATE       mean bytes between heap samples; 0: off\n"
           "                                               (default %d)\n"
           "  --mutex-fraction N  LIBPPROF_MUTEX_FRACTION  sample 1 in N contended locks; 0: off\n"
           "                                               (default 0)\n"
           "  --block-rate N      LIBPPROF_BLOCK_RATE      block profile rate in ns; 0: off\n"
           "                                               (default 0)\n"
           "  --signal N          LIBPPROF_SIGNAL          signal number the CPU timers deliver\n"
           "                                               (default %d, SIGPROF)\n"
           "  --symbolize MODE    LIBPPROF_SYMBOLIZE       full, functions or none (default full)\n"
           "  --no-tree           LIBPPROF_TREE=0          forked children do not join the\n"
           "                                               endpoint (default: they join)\n"
           "  --lib PATH          LIBPPROF_LIB             the " LIB_NAME " to preload (default: beside\n"
           "                                               this program, then in <its dir>/%s,\n"
           "                                               then in %s)\n"
           "  -h, --help          print this and exit\n"
           "  --version           print the version and exit\n"
           "\n"
           "Also sets LD_PRELOAD (the library first, entries already there kept after it)\n"
           "and LIBPPROF_PRINT_ADDR=1. Statically linked programs, programs of another\n"
           "architecture, and setuid, setgid or file-capability programs cannot be\n"
           "preloaded: they are refused with a line saying why (link libpprof.a instead).\n"
           "So is an address the library would not serve: malformed, in use, other than\n"
           "loopback without authentication, or with a token or TLS file it cannot read.\n"
           "\n"
           "Exit status: PROGRAM's own; 1 when it cannot be profiled (nothing runs),\n"
           "2 for a usage error, 126 when PROGRAM is not executable, 127 when not found.\n",
           PPROF_CPU_MAX_HZ, PPROF_CPU_DEFAULT_HZ, PPROF_HEAP_DEFAULT_RATE, SIGPROF, PPROF_REL_LIBDIR,
           PPROF_INSTALL_LIBDIR);
}

/* ------------------------------------------------------------- options */

/* The value of option `name` at argv[*i]: "--name=value" or "--name value"
 * (then *i advances). NULL when argv[*i] is another option. */
static const char *option_value(char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n) != 0)
        return NULL;
    if (a[n] == '=')
        return a + n + 1;
    if (a[n] != '\0')
        return NULL;
    if (!argv[*i + 1])
        die(EXIT_USAGE, "%s needs a value (see --help)", name);
    return argv[++*i];
}

/* Sets `var` to `text` after checking it is a decimal integer from min to max. */
static void set_number(const char *var, const char *opt, const char *text, long min, long max)
{
    long v = 0;
    size_t len = strlen(text);
    int ok = len > 0 && strspn(text, "0123456789") == len;
    for (size_t k = 0; ok && k < len; k++) {
        v = v * 10 + (text[k] - '0');
        ok = v <= max;
    }
    if (!ok || v < min)
        die(EXIT_USAGE, "%s %s: want a whole number from %ld to %ld", opt, text, min, max);
    char buf[32];
    snprintf(buf, sizeof buf, "%ld", v);
    setenv(var, buf, 1);
}

/* Reads the options into the environment; returns the index of PROGRAM. */
static int parse_options(int argc, char **argv, const char **lib)
{
    int i;
    for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "--")) {
            i++;
            break;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage();
            exit(0);
        } else if (!strcmp(a, "--version")) {
            printf("libpprof-run %s\n", PPROF_VERSION_STRING);
            exit(0);
        } else if (!strcmp(a, "--no-tree")) {
            setenv("LIBPPROF_TREE", "0", 1);
        } else if ((v = option_value(argv, &i, "--addr"))) {
            setenv("LIBPPROF_ADDR", v, 1);
        } else if ((v = option_value(argv, &i, "--cpu-hz"))) {
            set_number("LIBPPROF_CPU_HZ", "--cpu-hz", v, 0, PPROF_CPU_MAX_HZ);
        } else if ((v = option_value(argv, &i, "--heap-rate"))) {
            set_number("LIBPPROF_HEAP_RATE", "--heap-rate", v, 0, INT_MAX);
        } else if ((v = option_value(argv, &i, "--mutex-fraction"))) {
            set_number("LIBPPROF_MUTEX_FRACTION", "--mutex-fraction", v, 0, INT_MAX);
        } else if ((v = option_value(argv, &i, "--block-rate"))) {
            set_number("LIBPPROF_BLOCK_RATE", "--block-rate", v, 0, INT_MAX);
        } else if ((v = option_value(argv, &i, "--signal"))) {
            set_number("LIBPPROF_SIGNAL", "--signal", v, 1, SIGRTMAX);
        } else if ((v = option_value(argv, &i, "--symbolize"))) {
            if (strcmp(v, "full") && strcmp(v, "functions") && strcmp(v, "none"))
                die(EXIT_USAGE, "--symbolize %s: want full, functions or none", v);
            setenv("LIBPPROF_SYMBOLIZE", v, 1);
        } else if ((v = option_value(argv, &i, "--lib"))) {
            *lib = v;
        } else {
            die(EXIT_USAGE, "unknown option %s (see --help)", a);
        }
    }
    if (i >= argc)
        die(EXIT_USAGE, "no program to run (see --help)");
    return i;
}

/* ------------------------------------------------------------- address */

/* What the server reads before it listens (server/auth.c and server/tls.c):
 * the same limits, the same refusals. */
#define TOKEN_MAX 1024     /* auth.c's MAX_TOKEN: a token of 1 to 1023 bytes */
#define PEM_MAX (1 << 20)  /* tls.c's: a PEM file under 1 MiB */

/* Opens a file the server will read at start, or returns -1 with errno.
 * *readable is 0 for a FIFO or a socket: reading it here would take what
 * the program is to read, so only opening it is checked. It is opened
 * non-blocking: a device with nothing to read yet (a terminal) answers
 * EAGAIN, and is not judged either. */
static int open_setting(const char *path, int *readable)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    *readable = fd >= 0 && fstat(fd, &st) == 0 && !S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode);
    return fd;
}

/* The token file, read as the server reads it (auth.c, load_locked): up
 * to TOKEN_MAX + 1 bytes, trailing whitespace dropped, then 1 to
 * TOKEN_MAX - 1 bytes and no newline. */
static void check_token_file(const char *path)
{
    int readable;
    int fd = open_setting(path, &readable);
    if (fd < 0)
        die(EXIT_CANNOT,
            "cannot read the token file %s (LIBPPROF_TOKEN_FILE): %s; libpprof would not serve: "
            "point LIBPPROF_TOKEN_FILE at a file this user can read",
            path, strerror(errno));
    char buf[TOKEN_MAX + 1];
    size_t len = 0;
    ssize_t n;
    while (readable && len < sizeof buf && (n = read(fd, buf + len, sizeof buf - len)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            readable = 0;
        if (n < 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    if (!readable)
        return;
    while (len && strchr(" \t\r\n", buf[len - 1]))
        len--;
    if (len == 0 || len > TOKEN_MAX - 1 || memchr(buf, '\n', len))
        die(EXIT_CANNOT,
            "the token file %s (LIBPPROF_TOKEN_FILE) must hold one token of 1 to %d bytes, on one line; "
            "libpprof would not serve: write the token alone into it",
            path, TOKEN_MAX - 1);
}

/* A PEM file, read as the server reads it (tls.c, read_pem): not empty,
 * under PEM_MAX bytes. */
static void check_pem(const char *what, const char *var, const char *path)
{
    int readable;
    int fd = open_setting(path, &readable);
    if (fd < 0)
        die(EXIT_CANNOT, "cannot read the TLS %s %s (%s): %s; libpprof would not serve: point %s at a PEM file",
            what, path, var, strerror(errno), var);
    size_t len = 0;
    ssize_t n = 0;
    char buf[65536];
    while (readable && len < PEM_MAX) {
        size_t want = PEM_MAX - len < sizeof buf ? PEM_MAX - len : sizeof buf;
        n = read(fd, buf, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            readable = 0;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    int err = errno;
    close(fd);
    if (readable && (n < 0 || len == 0 || len == PEM_MAX))
        die(EXIT_CANNOT, "cannot read the TLS %s %s (%s): %s; libpprof would not serve: point %s at a PEM file",
            what, path, var, n < 0 ? strerror(err) : len == 0 ? "empty" : "over 1 MiB", var);
}

/* Checks `addr` with the server's own parser and binds it the way the
 * server does (server/listen.c), then what the server checks besides
 * (pprof_server_start: the token file, the TLS files, authentication for
 * an address other than loopback), so that what the server would refuse
 * is reported now rather than by the program, which would run unprofiled. */
static void check_addr(const char *addr)
{
    if (!strcmp(addr, "off"))
        return;
    char why[256]; /* listen.c's reasons: a fixed text, gai_strerror or strerror */
    pp_listen_error kind;
    int port, err, fd = pp_listen_open(addr, 1, &port, &kind, &err, why, sizeof why);
    if (fd < 0) {
        if (kind == PP_LISTEN_MALFORMED)
            die(EXIT_USAGE, "bad address '%s': %s", addr, why);
        if (kind == PP_LISTEN_RESOLVE)
            die(EXIT_USAGE, "cannot use address %s: %s", addr, why);
        if (err == EADDRINUSE)
            die(EXIT_CANNOT, "%s is in use: choose another with --addr (port 0: any free port)", addr);
        die(EXIT_CANNOT, "cannot serve on %s: %s", addr, why);
    }
    /* The address the server would bind, as it judges it (the bound socket). */
    int loopback = pp_listen_is_loopback(fd);
    close(fd);
    if (!strncmp(addr, "unix:", 5))
        unlink(addr + 5);

    const char *token = env_value("LIBPPROF_TOKEN_FILE");
    if (token)
        check_token_file(token);
    const char *cert = env_value("LIBPPROF_TLS_CERT"), *key = env_value("LIBPPROF_TLS_KEY");
    const char *ca = env_value("LIBPPROF_TLS_CLIENT_CA");
    if ((cert || key || ca) && !(cert && key))
        die(EXIT_CANNOT,
            "TLS needs both a certificate and a key%s: libpprof would not serve; "
            "set LIBPPROF_TLS_CERT and LIBPPROF_TLS_KEY%s",
            cert || key ? "" : " (a client CA alone is not enough)", cert || key ? "" : ", or unset LIBPPROF_TLS_CLIENT_CA");
    if (cert) {
        check_pem("certificate", "LIBPPROF_TLS_CERT", cert);
        check_pem("key", "LIBPPROF_TLS_KEY", key);
        if (ca)
            check_pem("client CA", "LIBPPROF_TLS_CLIENT_CA", ca);
    }
    const char *auth = getenv("LIBPPROF_AUTH");
    int auth_none = auth && !strcmp(auth, "none");
    if (!loopback && !token && !ca && !auth_none)
        die(EXIT_CANNOT,
            "%s is not a loopback address and no token or client CA is set%s%s%s: libpprof would not serve "
            "it; set LIBPPROF_TOKEN_FILE or LIBPPROF_TLS_CLIENT_CA, or LIBPPROF_AUTH=none to serve anyone "
            "who reaches it",
            addr, auth && *auth ? " (LIBPPROF_AUTH=" : "", auth && *auth ? auth : "",
            auth && *auth ? " is not understood: the one value is none)" : "");
}

/* ------------------------------------------------------------- program */

/* The file PROGRAM names: itself when it holds a '/', else the first
 * executable file of that name in PATH (as execvp searches). */
static const char *find_program(const char *name, char *buf, size_t size)
{
    struct stat st;
    if (strchr(name, '/')) {
        if (stat(name, &st) != 0)
            die(errno == ENOENT || errno == ENOTDIR ? EXIT_NOTFOUND : EXIT_NOEXEC, "%s: %s", name,
                strerror(errno));
        if (S_ISDIR(st.st_mode))
            die(EXIT_NOEXEC, "%s: %s", name, strerror(EISDIR));
        if (access(name, X_OK) != 0)
            die(EXIT_NOEXEC, "%s: not executable (%s)", name, strerror(errno));
        return name;
    }
    const char *path = getenv("PATH");
    if (!path)
        path = "/bin:/usr/bin";
    int denied = 0;
    for (;;) {
        size_t n = strcspn(path, ":");
        /* an empty entry is the current directory */
        if ((size_t)snprintf(buf, size, "%.*s%s%s", (int)n, path, n ? "/" : "", name) < size &&
            stat(buf, &st) == 0 && S_ISREG(st.st_mode)) {
            if (access(buf, X_OK) == 0)
                return buf;
            denied = 1;
        }
        if (!path[n])
            break;
        path += n + 1;
    }
    if (denied)
        die(EXIT_NOEXEC, "%s: found in PATH but not executable", name);
    die(EXIT_NOTFOUND, "%s: command not found", name);
}

/* Reads the ELF header of file `fd` into *eh; 0 when it is not an ELF
 * file or cannot be read (the exec then decides). */
static int read_ehdr(int fd, ElfW(Ehdr) *eh)
{
    return pread(fd, eh, sizeof *eh, 0) >= EI_NIDENT && !memcmp(eh->e_ident, ELFMAG, SELFMAG);
}

static const char *machine_name(const ElfW(Ehdr) *eh)
{
    static char buf[64];
    const char *m = eh->e_machine == EM_X86_64 ? "x86-64" : eh->e_machine == EM_386 ? "i386"
                  : eh->e_machine == EM_AARCH64 ? "aarch64" : eh->e_machine == EM_ARM ? "arm"
                  : eh->e_machine == EM_RISCV ? "riscv" : NULL;
    int bits = eh->e_ident[EI_CLASS] == ELFCLASS64 ? 64 : 32;
    if (m)
        snprintf(buf, sizeof buf, "%d-bit %s", bits, m);
    else
        snprintf(buf, sizeof buf, "%d-bit, ELF machine %d", bits, eh->e_machine);
    return buf;
}

/* Refuses a program the dynamic loader runs in secure-execution mode,
 * where it ignores LD_PRELOAD paths: setuid or setgid to someone else, or
 * gaining file capabilities (which do not make a root caller's exec secure). */
static void check_privileges(const char *path, int fd)
{
    struct stat st;
    struct statvfs vfs;
    if (fstat(fd, &st) != 0 || (fstatvfs(fd, &vfs) == 0 && (vfs.f_flag & ST_NOSUID)))
        return;
    if ((st.st_mode & S_ISUID) && st.st_uid != getuid())
        die(EXIT_CANNOT,
            "%s is setuid (owner uid %d): the dynamic loader ignores LD_PRELOAD paths for it "
            "(secure-execution mode); run it as its owner or link libpprof.a into it",
            path, (int)st.st_uid);
    if ((st.st_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) && st.st_gid != getgid())
        die(EXIT_CANNOT,
            "%s is setgid (group gid %d): the dynamic loader ignores LD_PRELOAD paths for it "
            "(secure-execution mode); run it in its group or link libpprof.a into it",
            path, (int)st.st_gid);
    if (getuid() != 0 && fgetxattr(fd, "security.capability", NULL, 0) > 0)
        die(EXIT_CANNOT,
            "%s has file capabilities: the dynamic loader ignores LD_PRELOAD paths for it "
            "(secure-execution mode); link libpprof.a into it instead",
            path);
}

/* Refuses what LD_PRELOAD cannot load libpprof into. A "#!" script is
 * fine: its interpreter, which gets the preload, is checked instead (then
 * `script` names the script). */
static void check_program(const char *path, const char *script)
{
    char *what = NULL; /* the program's name in messages */
    if ((script ? asprintf(&what, "%s (the interpreter of %s)", path, script) : asprintf(&what, "%s", path)) < 0)
        die(EXIT_CANNOT, "out of memory");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && script)
        die(errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC, "%s: %s", what, strerror(errno));
    if (fd < 0) {
        free(what);
        return; /* execute-only: the exec decides */
    }
    char line[256];
    ssize_t n = pread(fd, line, sizeof line - 1, 0);
    if (n >= 2 && line[0] == '#' && line[1] == '!') {
        close(fd);
        line[n] = '\0';
        char *interp = line + 2 + strspn(line + 2, " \t");
        interp[strcspn(interp, " \t\r\n")] = '\0';
        if (!script && *interp)
            check_program(interp, path);
        free(what);
        return;
    }
    ElfW(Ehdr) eh, self;
    int self_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    int self_ok = self_fd >= 0 && read_ehdr(self_fd, &self);
    if (self_fd >= 0)
        close(self_fd);
    if (!read_ehdr(fd, &eh) || !self_ok) {
        close(fd);
        free(what);
        return;
    }
    check_privileges(what, fd);
    if (eh.e_ident[EI_CLASS] != self.e_ident[EI_CLASS] || eh.e_ident[EI_DATA] != self.e_ident[EI_DATA] ||
        eh.e_machine != self.e_machine) {
        char mine[64];
        snprintf(mine, sizeof mine, "%s", machine_name(&self));
        die(EXIT_CANNOT, "%s is a %s program and libpprof is %s: LD_PRELOAD cannot load it there",
            what, machine_name(&eh), mine);
    }
    int dynamic = 0;
    for (int k = 0; k < eh.e_phnum && !dynamic; k++) {
        ElfW(Phdr) ph;
        if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (size_t)k * eh.e_phentsize)) != sizeof ph)
            break;
        dynamic = ph.p_type == PT_INTERP;
    }
    close(fd);
    if (!dynamic)
        die(EXIT_CANNOT,
            "%s is statically linked: LD_PRELOAD cannot load a library into it; "
            "link it with libpprof.a instead (see README, \"Three ways in\")",
            what);
    free(what);
}

/* ------------------------------------------------------------- library */

/* Why `path` cannot be preloaded from, or NULL when it is a readable file. */
static const char *file_problem(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || access(path, R_OK) != 0)
        return strerror(errno);
    return S_ISREG(st.st_mode) ? NULL : "not a regular file";
}

/* `path` made absolute in `out` (PATH_MAX): its directory resolved, its
 * own name kept (libpprof.so.0, not the file the symbolic link names). */
static int absolute_path(const char *path, char *out)
{
    char dir[PATH_MAX], real[PATH_MAX];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) + 1 : 1, slash ? path : ".");
    if (!realpath(dir, real))
        return 0;
    int n = snprintf(out, PATH_MAX, "%s/%s", strcmp(real, "/") ? real : "", slash ? slash + 1 : path);
    errno = ENAMETOOLONG;
    return n > 0 && n < PATH_MAX;
}

/* The absolute path of the libpprof.so.0 to preload, in `out` (PATH_MAX):
 * --lib, else LIBPPROF_LIB, else beside the launcher (a build tree), else
 * at the library directory relative to it, else the installed one. */
static void find_library(const char *lib, char *out)
{
    const char *how = "--lib", *why;
    if (!lib) {
        how = "LIBPPROF_LIB";
        lib = getenv("LIBPPROF_LIB");
    }
    if (lib && *lib) {
        if ((why = file_problem(lib)) || (!absolute_path(lib, out) && (why = strerror(errno))))
            die(EXIT_CANNOT, "%s %s: %s; point --lib PATH or LIBPPROF_LIB at %s", how, lib, why, LIB_NAME);
        return;
    }
    char dir[PATH_MAX], *cand[3];
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
    dir[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    if (asprintf(&cand[0], "%s/%s", dir, LIB_NAME) < 0 ||
        asprintf(&cand[1], "%s/%s/%s", dir, PPROF_REL_LIBDIR, LIB_NAME) < 0 ||
        asprintf(&cand[2], "%s/%s", PPROF_INSTALL_LIBDIR, LIB_NAME) < 0)
        die(EXIT_CANNOT, "out of memory");
    int found = 0;
    for (int k = 0; k < 3 && !found; k++)
        found = !file_problem(cand[k]) && absolute_path(cand[k], out);
    if (found) {
        for (int k = 0; k < 3; k++)
            free(cand[k]);
        return;
    }
    die(EXIT_CANNOT, "cannot find %s (looked for %s, %s and %s); point --lib PATH or LIBPPROF_LIB at it",
        LIB_NAME, cand[0], cand[1], cand[2]);
}

/* Whether an LD_PRELOAD entry is a libpprof: the same file, or one named so. */
static int is_libpprof(const char *entry, const char *lib)
{
    const char *base = strrchr(entry, '/');
    base = base ? base + 1 : entry;
    char real[PATH_MAX], real_lib[PATH_MAX];
    return !strncmp(base, "libpprof.so", 11) ||
           (realpath(entry, real) && realpath(lib, real_lib) && !strcmp(real, real_lib));
}

/* LD_PRELOAD = lib, then the entries it had (spaces or colons apart)
 * except those that are a libpprof. */
static void set_preload(const char *lib)
{
    const char *old = getenv("LD_PRELOAD");
    size_t size = strlen(lib) + (old ? strlen(old) : 0) + 2;
    char *list = malloc(size), entry[PATH_MAX];
    if (!list)
        die(EXIT_CANNOT, "out of memory");
    snprintf(list, size, "%s", lib);
    for (const char *p = old ? old : ""; *p;) {
        size_t n = strcspn(p, ": ");
        if (n && n < sizeof entry) {
            memcpy(entry, p, n);
            entry[n] = '\0';
            if (!is_libpprof(entry, lib))
                strcat(strcat(list, ":"), entry);
        }
        p += n;
        p += strspn(p, ": ");
    }
    setenv("LD_PRELOAD", list, 1);
    free(list);
}

int main(int argc, char **argv)
{
    const char *lib_opt = NULL;
    int prog = parse_options(argc, argv, &lib_opt);

    /* The program first: one the preload cannot reach is named as such,
     * whatever the address (a port in use, say) would have said. */
    char path_buf[PATH_MAX], lib[PATH_MAX];
    const char *path = find_program(argv[prog], path_buf, sizeof path_buf);
    check_program(path, NULL);
    const char *addr = getenv("LIBPPROF_ADDR");
    if (!addr || !*addr)
        setenv("LIBPPROF_ADDR", addr = DEFAULT_ADDR, 1);
    check_addr(addr);
    find_library(lib_opt, lib);
    set_preload(lib);
    setenv("LIBPPROF_PRINT_ADDR", "1", 1);

    execv(path, argv + prog);
    die(errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC, "cannot run %s: %s", path, strerror(errno));
}
