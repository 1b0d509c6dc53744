/* embedded.c: way 1 of README.md's "Three ways in": a program linked with
 * libpprof starts the built-in server and labels its work.
 *
 *   cc -O2 -g examples/embedded.c $(pkg-config --cflags --libs libpprof) -o embedded
 *   LIBPPROF_ADDR=127.0.0.1:6060 ./embedded [SECONDS]
 *   go tool pprof -top 'http://127.0.0.1:6060/debug/pprof/profile?seconds=5'
 *   go tool pprof -tags 'http://127.0.0.1:6060/debug/pprof/profile?seconds=5'
 *
 * Runs until SIGINT or SIGTERM, or for SECONDS when given.
 */
#include <pprof.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stop;
static volatile double sink;

static void on_signal(int sig) { (void)sig; stop = 1; }

/* CPU work; noinline keeps it a frame of its own in profiles. */
__attribute__((noinline)) void burn_cpu(void)
{
    double x = 1.0;
    for (int i = 0; i < 1000000; i++)
        x = x * 1.0000001 + 0.5 / (x + i);
    sink = x;
}

/* Short-lived allocations, for the heap and allocs profiles. */
__attribute__((noinline)) void allocate_buffers(void)
{
    for (int i = 0; i < 64; i++) {
        char *p = malloc(4096 + 64 * i);
        if (p == NULL) {
            perror("malloc");
            exit(1);
        }
        memset(p, i, 4096);
        sink += p[i];
        free(p);
    }
}

/* One request; run under pprof_do, so its samples carry the labels. */
static void handle_request(void *req)
{
    (void)req;
    burn_cpu();
    allocate_buffers();
}

int main(int argc, char **argv)
{
    char *rest = "";
    long seconds = argc > 1 ? strtol(argv[1], &rest, 10) : 0;   /* 0: until a signal */
    if (argc > 2 || *rest != '\0' || seconds < 0) {
        fprintf(stderr, "usage: %s [SECONDS]\n", argv[0]);
        return 2;
    }
    time_t end = time(NULL) + seconds;
    struct sigaction sa = {.sa_handler = on_signal};
    if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0) {
        perror("sigaction");
        return 1;
    }

    int port;                                  /* LIBPPROF_ADDR, else 127.0.0.1:6060 */
    if (pprof_server_start(NULL) != 0 || (port = pprof_server_port()) < 0) {
        fprintf(stderr, "pprof: %s\n", pprof_last_error());
        return 1;                              /* a real service might run on unprofiled */
    }
    printf("serving /debug/pprof/ on port %d\n", port);
    fflush(stdout);

    pprof_label pairs[] = {{"endpoint", "/checkout"}, {"tenant", "acme"}};
    pprof_labels *set = NULL;
    int rc = pprof_labels_new(pairs, 2, &set);   /* build once, share */
    while (rc == 0 && !stop && (seconds == 0 || time(NULL) < end))
        rc = pprof_do(set, handle_request, NULL);   /* merged with the current set, restored after */
    if (rc != 0)
        fprintf(stderr, "pprof labels: %s\n", pprof_last_error());
    pprof_labels_unref(set);                     /* NULL is allowed */

    if (pprof_server_stop() != 0) {
        fprintf(stderr, "pprof: %s\n", pprof_last_error());
        return 1;
    }
    return rc != 0;
}
