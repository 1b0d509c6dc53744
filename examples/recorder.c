/* recorder.c: way 2 of README.md's "Three ways in", the library only: no
 * server; a CPU recorder profiles a second of the program's own work and
 * writes the profile to a file.
 *
 *   cc -O2 -g examples/recorder.c $(pkg-config --cflags --libs libpprof) -o recorder
 *   ./recorder cpu.pb.gz
 *   go tool pprof -top cpu.pb.gz
 */
#include <pprof.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;

/* The work to profile: `seconds` of CPU time; noinline keeps it a frame
 * of its own in the profile. */
__attribute__((noinline)) void compute_report(double seconds)
{
    clock_t end = clock() + (clock_t)(seconds * CLOCKS_PER_SEC);
    double x = 1.0;
    while (clock() < end) {
        for (int i = 0; i < 100000; i++)
            x = x * 1.0000001 + 0.5 / (x + i);
        sink = x;
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTPUT.pb.gz\n", argv[0]);
        return 2;
    }
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "recorder: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }

    pprof_recorder *r = NULL;
    pprof_profile *p = NULL;
    const char *call = "pprof_cpu_recorder_new";
    int rc = pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = 100}, &r);
    if (rc != 0)
        goto out;
    call = "pprof_recorder_start";
    if ((rc = pprof_recorder_start(r)) != 0)
        goto out;

    compute_report(1.0);

    call = "pprof_recorder_snapshot";    /* the window so far; the next begins with no gap */
    if ((rc = pprof_recorder_snapshot(r, &p)) != 0)
        goto out;
    call = "pprof_profile_write";
    if ((rc = pprof_profile_write(p, PPROF_FORMAT_PROTO_GZIP, pprof_writer_fd(fd))) != 0)
        goto out;
    call = "pprof_recorder_stop";
    rc = pprof_recorder_stop(r, NULL);   /* NULL: discard the last window */

out:
    /* pprof_strerror(rc) is the code's fixed text; pprof_last_error()
     * is that and the failed call's detail, when it gave one. */
    if (rc != 0)
        fprintf(stderr, "recorder: %s: %s\n", call, pprof_last_error());
    pprof_profile_free(p);               /* both allow NULL */
    pprof_recorder_free(r);
    if (close(fd) != 0 && rc == 0) {
        fprintf(stderr, "recorder: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    return rc != 0;
}
