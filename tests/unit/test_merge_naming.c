/* test_merge_naming.c: pprof_recorder_leave_shared and pprof_merge_naming,
 * a tree's member leaving the names in its hub's files to the hub.
 * test-labels: quick
 *
 * A forked child writes a custom profile whose stack runs through
 * add_from_here, a function of this program:
 *   - leaving to its parent (the parent's maps: the same program), the
 *     child's profile has the program's locations with their mapping and
 *     no names (add_from_here is not in it), and a comment says so;
 *   - pprof_merge_naming in the parent names them: add_from_here, with
 *     this file and a line, its mapping marked as having functions;
 *     pprof_merge leaves them as they came, and NONE names nothing;
 *   - leaving to a process that does not map this program (a sleep's
 *     maps), the child names the program's code itself, and leaves only
 *     what the sleep maps too (libc); with empty maps, it names all.
 * Bad arguments are refused with PPROF_EINVAL.
 */
#include "pprof.h"
#include "pprof_server.h"
#include "proto/profile.pb-c.h"
#include "check.h"
#include "pb_decode.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <zlib.h>

static pprof_custom *things;
static int thing;

__attribute__((noinline)) static void add_from_here(void)
{
    CHECK(pprof_custom_add(things, &thing) == 0);
    __asm__ volatile("" ::: "memory");
}

/* The text of /proc/<pid>/maps (0: this process), malloc'd. */
static char *maps_of(int pid)
{
    char path[64], *text = NULL;
    snprintf(path, sizeof path, pid ? "/proc/%d/maps" : "/proc/self/maps", pid);
    FILE *f = fopen(path, "r");
    size_t len = 0;
    if (f) {
        FILE *m = open_memstream(&text, &len);
        char line[4096];
        while (fgets(line, sizeof line, f))
            fputs(line, m);
        fclose(m);
        fclose(f);
    }
    return text;
}

/* The custom profile as a forked child writes it leaving to the process
 * whose maps are `maps`. */
static pprof_buffer child_profile(const char *maps)
{
    int p[2];
    pprof_buffer b = {0};
    if (pipe(p) != 0)
        return b;
    pid_t c = fork();
    if (c == 0) {
        close(p[0]);
        pprof_custom_remove(things, &thing);
        add_from_here();
        pprof_recorder *r;
        pprof_profile *prof = NULL;
        pprof_buffer out = {0};
        int ok = pprof_custom_recorder_new(things, &r) == 0 && pprof_recorder_leave_shared(r, maps) == 0 &&
                 pprof_recorder_write_to(r, &prof) == 0 &&
                 pprof_profile_write(prof, PPROF_FORMAT_PROTO_GZIP, pprof_writer_buffer(&out)) == 0;
        for (size_t at = 0; ok && at < out.len;) {
            ssize_t n = write(p[1], out.data + at, out.len - at);
            ok = n > 0;
            at += n > 0 ? (size_t)n : 0;
        }
        _exit(ok ? 0 : 1);
    }
    close(p[1]);
    char chunk[65536];
    for (ssize_t n; (n = read(p[0], chunk, sizeof chunk)) > 0;)
        pprof_writer_buffer(&b).write(&b, chunk, (size_t)n);
    close(p[0]);
    int st = 0;
    waitpid(c, &st, 0);
    CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
    return b;
}

/* What profile gz says of add_from_here: 0 not named; 1 named; 2 named
 * with this file and a line, in a mapping that has functions. *said: a
 * comment says addresses were left to name. */
static int named_here(const pprof_buffer *gz, size_t *unnamed, int *said)
{
    Perftools__Profiles__Profile *p = decode_gz(gz);
    CHECK(p != NULL);
    if (!p)
        return -1;
    int found = 0;
    *unnamed = 0;
    *said = 0;
    for (size_t i = 0; i < p->n_comment; i++)
        *said |= strstr(p->string_table[p->comment[i]], "left to it to name") != NULL;
    for (size_t i = 0; i < p->n_location; i++) {
        const Perftools__Profiles__Location *l = p->location[i];
        *unnamed += l->n_line == 0;
        for (size_t k = 0; k < l->n_line; k++)
            for (size_t f = 0; f < p->n_function; f++) {
                const Perftools__Profiles__Function *fn = p->function[f];
                if (fn->id != l->line[k]->function_id || strcmp(p->string_table[fn->name], "add_from_here"))
                    continue;
                int whole = strstr(p->string_table[fn->filename], "test_merge_naming.c") && l->line[k]->line > 0;
                for (size_t m = 0; m < p->n_mapping; m++)
                    whole &= p->mapping[m]->id != l->mapping_id || p->mapping[m]->has_functions;
                found = found > 1 + whole ? found : 1 + whole;
            }
    }
    perftools__profiles__profile__free_unpacked(p, NULL);
    return found;
}

int main(void)
{
    CHECK(pprof_custom_new("naming_things", &things) == 0);
    size_t unnamed = 0, unnamed_after = 0;
    int said = 0;

    char *mine = maps_of(0);
    pprof_buffer left = child_profile(mine);
    CHECKF(named_here(&left, &unnamed, &said) == 0 && unnamed > 0 && said,
           "left to the parent: add_from_here named, %zu unnamed, said %d", unnamed, said);
    pprof_merge_input in[] = {{left.data, left.len, NULL, 0, NULL, 0, NULL}};
    pprof_buffer merged = {0}, plain = {0}, none = {0};
    CHECK(pprof_merge_naming(in, 1, PPROF_SYMBOLIZE_FULL, pprof_writer_buffer(&merged)) == 0);
    int got = named_here(&merged, &unnamed_after, &said);
    CHECKF(got == 2 && unnamed_after < unnamed, "merged naming: %d (2: with file, line, has_functions), %zu -> %zu unnamed",
           got, unnamed, unnamed_after);
    CHECK(pprof_merge(in, 1, pprof_writer_buffer(&plain)) == 0);
    CHECK(named_here(&plain, &unnamed_after, &said) == 0 && unnamed_after == unnamed);
    CHECK(pprof_merge_naming(in, 1, PPROF_SYMBOLIZE_NONE, pprof_writer_buffer(&none)) == 0);
    CHECK(named_here(&none, &unnamed_after, &said) == 0 && unnamed_after == unnamed);

    /* the maps of a process that maps libc but not this program, and none */
    pid_t sleeper = fork();
    if (sleeper == 0) {
        execl("/bin/sleep", "sleep", "30", (char *)NULL);
        _exit(127);
    }
    usleep(200000); /* until it has exec'd */
    char *its = maps_of(sleeper);
    kill(sleeper, SIGKILL);
    waitpid(sleeper, NULL, 0);
    CHECK(its && strstr(its, "/sleep") != NULL);
    pprof_buffer other = child_profile(its), nobody = child_profile("");
    CHECKF(named_here(&other, &unnamed, &said) == 2 && said, "left to a sleep: add_from_here named by the child, libc left");
    CHECKF(named_here(&nobody, &unnamed, &said) == 2 && !said && unnamed == 0,
           "left to no process: everything named by the child (%zu unnamed)", unnamed);
    free(mine);
    free(its);

    pprof_recorder *r;
    CHECK(pprof_custom_recorder_new(things, &r) == 0);
    CHECK(pprof_recorder_leave_shared(NULL, "") == PPROF_EINVAL);
    CHECK(pprof_recorder_leave_shared(r, "") == 0 && pprof_recorder_leave_shared(r, NULL) == 0);
    CHECK(pprof_merge_naming(in, 1, (pprof_symbolize)9, pprof_writer_buffer(&none)) == PPROF_EINVAL);
    pprof_recorder_free(r);
    pprof_buffer_free(&left);
    pprof_buffer_free(&merged);
    pprof_buffer_free(&plain);
    pprof_buffer_free(&none);
    pprof_buffer_free(&other);
    pprof_buffer_free(&nobody);
    return check_summary("test_merge_naming");
}
