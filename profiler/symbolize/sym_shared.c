/* sym_shared.c: the files this process shares with another, and names for
 * another process's addresses in them.
 *
 * A process tree's members are mostly forks of its hub: they map the same
 * executable and libraries, and each building the symbol tables of those
 * files for its own profile (a postgres backend at every disconnect during
 * a profile) repeats the hub's work. So a member answering the hub leaves
 * the addresses in files the hub maps too unnamed (pp_sym_shared_with),
 * and the hub names them when it merges (pp_sym_lookup_file), in its own
 * symbolizer, through the file offset: the same file may be mapped at
 * other addresses in the two processes (an exec'd member, ASLR).
 *
 * A file is shared when the other process maps the same device and inode
 * executable; a file replaced on disk since one of them mapped it has
 * another inode, so a package upgrade between the hub's start and a
 * member's exec never lets the hub name a member's code from the wrong
 * file. The hub matches a member's mapping by build ID and the range of
 * file offsets its own mapping covers; by path alone when the member has
 * no build ID for the file (it could not read it; the path named the same
 * device and inode in both).
 */
#define _GNU_SOURCE
#include "sym_internal.h"

struct shared_args {
    struct pp_sym_session *s;
    unsigned char *marks;
    size_t n;
};

/* One line of the other process's maps: marks this process's mappings of
 * the same file. */
static void mark_line(const char *line, size_t len, void *arg)
{
    struct shared_args *a = arg;
    maps_line m;
    if (!pp_sym_parse_maps_line(line, len, &m) || !m.exec || m.deleted || !m.inode || m.pathlen == 0 ||
        m.path[0] != '/')
        return;
    for (size_t i = 0; i < a->s->nmaps; i++) {
        const pp_sym_mapping *x = &a->s->maps[i];
        if (!a->marks[i] && x->inode == m.inode && x->dev == m.dev) {
            a->marks[i] = 1;
            a->n++;
        }
    }
}

size_t pp_sym_shared_with(pp_sym_session *s, const char *maps, unsigned char *marks)
{
    if (!s || !maps)
        return 0;
    memset(marks, 0, s->nmaps);
    sbuf text = {(char *)maps, strlen(maps), 0};
    struct shared_args a = {s, marks, 0};
    pp_sym_each_line(&text, mark_line, &a);
    return a.n;
}

void pp_sym_lookup_file(pp_sym_session *s, const char *path, const char *build_id, uint64_t file_offset,
                        int functions_only, pp_sym_result *res)
{
    res->mapping = -1;
    res->nframes = 0;
    if (!s || !path || !path[0])
        return;
    int by_id = build_id && build_id[0];
    for (size_t i = 0; i < s->nmaps; i++) {
        const pp_sym_mapping *m = &s->maps[i];
        if (file_offset < m->offset || file_offset - m->offset >= m->limit - m->start)
            continue;
        /* (a file the other process could not read has no build ID there) */
        if (by_id ? strcmp(m->build_id, build_id) != 0 : strcmp(m->path, path) != 0)
            continue;
        pp_sym_lookup_how(s, m->start + (file_offset - m->offset), functions_only, res);
        return;
    }
}
