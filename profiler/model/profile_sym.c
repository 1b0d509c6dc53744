/* profile_sym.c: naming a profile's addresses, the second pass of
 * pp_profile_finish (profile.c).
 *
 * Every distinct address is symbolized once into its location, and the
 * process's executable mappings become the profile's. A mapping's
 * has_functions is set only when every location in it got a function,
 * has_filenames / has_line_numbers when its object has line tables,
 * has_inline_frames when those were also searched for inlined calls
 * (full symbolization), so pprof knows when to look elsewhere.
 *
 * Debug files being fetched from debuginfod (symbolize/sym_fetch.c): when
 * an object of the profile has none on the machine, the symbolizer asks
 * for its file and names what it can without. The profile then waits for
 * the files at most LIBPPROF_DEBUGINFOD_WAIT_MS, counted from its first
 * pass, and is named again once when a fetch ended (a file arrived, or
 * the notes change); a file still on its way
 * is named in a comment, and a later profile has its names. Nothing here
 * runs in a signal handler.
 */
#include "model.h"
#include "base/base.h"
#include "labels/labels.h"
#include "symbolize/symbolize.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* Fills location `loc` for `addr` as `how` says (FULL, FUNCTIONS or
 * NONE); returns the mapping index or -1. */
static int symbolize_location(pprof_profile *p, pp_sym_session *ss, uint64_t addr, pprof_location *loc,
                              pprof_symbolize how)
{
    loc->address = addr;
    if (pp_pc_is_pseudo(addr)) {
        pprof_line *l = pp_arena_alloc(p->arena, sizeof *l);
        if (!l)
            return pp_fail(PPROF_ENOMEM);
        l->function = l->system_name = pp_profile_intern(p, pp_frame_name(addr));
        l->filename = pp_profile_intern(p, "");
        if (!l->function || !l->filename)
            return pp_fail(PPROF_ENOMEM);
        loc->address = 0;
        loc->lines = l;
        loc->nlines = 1;
        return -1;
    }
    if (how == PPROF_SYMBOLIZE_NONE)
        return pp_sym_mapping_of(ss, addr);
    pp_sym_result r;
    pp_sym_lookup_how(ss, addr, how == PPROF_SYMBOLIZE_FUNCTIONS, &r);
    if (r.nframes > 0) {
        pprof_line *l = pp_arena_alloc(p->arena, r.nframes * sizeof *l);
        if (!l)
            return pp_fail(PPROF_ENOMEM);
        for (int i = 0; i < r.nframes; i++) {
            const pp_sym_frame *f = &r.frames[i];
            l[i].function = pp_profile_intern(p, f->function ? f->function : f->system_name);
            l[i].system_name = pp_profile_intern(p, f->system_name ? f->system_name : f->function);
            l[i].filename = pp_profile_intern(p, f->filename);
            l[i].line = f->line;
            if (!l[i].function || !l[i].system_name || !l[i].filename)
                return pp_fail(PPROF_ENOMEM);
        }
        loc->lines = l;
        loc->nlines = (size_t)r.nframes;
        loc->symbol_start = r.frames[r.nframes - 1].entry;
    }
    return r.mapping;
}

static int build_mappings(pprof_profile *p, pp_sym_session *ss)
{
    const pp_sym_mapping *m;
    size_t n = pp_sym_mappings(ss, &m);
    p->mappings = pp_arena_alloc(p->arena, n * sizeof *p->mappings + 1);
    if (!p->mappings)
        return pp_fail(PPROF_ENOMEM);
    for (size_t i = 0; i < n; i++) {
        pprof_mapping *d = &p->mappings[i];
        d->id = i + 1;
        d->start = m[i].start;
        d->limit = m[i].limit;
        d->offset = m[i].offset;
        d->path = pp_profile_intern(p, m[i].path);
        d->build_id = pp_profile_intern(p, m[i].build_id);
        d->has_functions = 1;
        if (!d->path || !d->build_id)
            return pp_fail(PPROF_ENOMEM);
    }
    p->nmappings = n;
    return 0;
}

/* A mapping has functions when every one of its locations got one; it has
 * file names and line numbers when any did: the object carries line
 * tables, and the locations without (assembly such as _start) have none
 * anywhere. pprof looks elsewhere for what a mapping lacks. */
static void note_mapping_flags(pprof_profile *p, const pprof_location *loc, unsigned char *seen)
{
    if (!loc->mapping_id)
        return;
    pprof_mapping *m = &p->mappings[loc->mapping_id - 1];
    if (loc->nlines == 0)
        m->has_functions = 0;
    for (size_t i = 0; i < loc->nlines; i++) {
        if (!loc->lines[i].function[0])
            m->has_functions = 0;
        if (loc->lines[i].filename[0])
            seen[loc->mapping_id - 1] |= 1;
        if (loc->lines[i].line > 0)
            seen[loc->mapping_id - 1] |= 2;
    }
}


/* What one pass met. */
typedef struct pass_out {
    bool pending;     /* a debug file the profile needs is on its way */
} pass_out;

/* The comments a pass adds about the objects whose addresses the profile
 * holds (used[i]) and that have no debug file on the machine. */
static int fetch_notes(pprof_profile *p, pp_sym_session *ss, const unsigned char *used, pass_out *out)
{
    const pp_sym_mapping *m;
    size_t n = pp_sym_mappings(ss, &m);
    size_t unnamed = 0;
    for (size_t i = 0; i < n && i < p->nmappings; i++) {
        if (!used[i])
            continue;
        char note[600];
        int st = pp_sym_fetch_note_of(ss, (int)i, note, sizeof note);
        out->pending |= st == 1;
        if (st && pp_profile_add_comment(p, note) != 0)
            return PPROF_ENOMEM;
        unnamed += !p->mappings[i].has_functions && m[i].build_id[0] && m[i].path[0] == '/';
    }
    if (unnamed && pp_sym_fetch_mode() == PPROF_DEBUGINFOD_OFF_STANDARD) {
        char note[300];
        snprintf(note, sizeof note,
                 "%zu objects have addresses without names; DEBUGINFOD_URLS is set, but libpprof fetches "
                 "debug files only with LIBPPROF_DEBUGINFOD=1 (or LIBPPROF_DEBUGINFOD_URLS)",
                 unnamed);
        if (pp_profile_add_comment(p, note) != 0)
            return PPROF_ENOMEM;
    }
    return 0;
}

/* One pass over every distinct address, in a session of its own. */
static int name_pass(pprof_profile *p, const pp_table *am, uint32_t nloc, pprof_symbolize how,
                     const char *leave_maps, pass_out *out)
{
    /* Symbolizing is the profiler's own work, whoever's thread does it. */
    pprof_labels *caller_set = pp_own_begin();
    pp_sym_session *ss = pp_sym_begin();
    int rc = PPROF_ENOMEM;
    if (!ss)
        goto out;
    p->locations = pp_arena_alloc(p->arena, nloc * sizeof *p->locations + 1);
    unsigned char *seen = NULL; /* per mapping: 1 a file name, 2 a line, 4 an address met */
    unsigned char *left = NULL; /* per mapping: its file is in leave_maps */
    if (!p->locations || build_mappings(p, ss) || !(seen = pp_arena_alloc(p->arena, p->nmappings + 1)) ||
        !(left = pp_arena_alloc(p->arena, p->nmappings + 1)))
        goto out;
    memset(seen, 0, p->nmappings);
    memset(left, 0, p->nmappings);
    if (leave_maps && how != PPROF_SYMBOLIZE_NONE)
        pp_sym_shared_with(ss, leave_maps, left);
    size_t left_addrs = 0, left_files = 0;
    /* Each distinct address once (but those left to the process of
     * leave_maps: their mapping only). */
    for (uint32_t j = 0; j < nloc; j++) {
        pprof_location *loc = &p->locations[j];
        loc->id = j + 1;
        uint64_t addr = *(uint64_t *)pp_table_at(am, j);
        int lm = !pp_pc_is_pseudo(addr) ? pp_sym_mapping_of(ss, addr) : -1;
        int leave = lm >= 0 && (size_t)lm < p->nmappings && left[lm];
        if (leave) {
            left_addrs++;
            left_files += left[lm] == 1;
            left[lm] = 2;
        }
        int mi = symbolize_location(p, ss, addr, loc, leave ? PPROF_SYMBOLIZE_NONE : how);
        if (mi == PPROF_ENOMEM)
            goto out;
        loc->mapping_id = mi >= 0 && (size_t)mi < p->nmappings ? (uint64_t)mi + 1 : 0;
        if (loc->mapping_id && !leave)
            seen[mi] |= 4;
        note_mapping_flags(p, loc, seen);
    }
    if (left_addrs) { /* say so: the names come from elsewhere */
        char note[160];
        snprintf(note, sizeof note, "%zu addresses in %zu files that the merging process maps too were left to it to name",
                 left_addrs, left_files);
        pp_profile_add_comment(p, note);
    }
    const char *notes[8];
    for (size_t i = 0, n = pp_sym_notes(ss, notes, 8); i < n && how == PPROF_SYMBOLIZE_FULL; i++)
        pp_profile_add_comment(p, notes[i]);
    for (size_t i = 0; i < p->nmappings; i++) {
        p->mappings[i].has_filenames = seen[i] & 1;
        p->mappings[i].has_line_numbers = (seen[i] & 2) >> 1;
        /* The DWARF that gave the lines was searched for inlined calls. */
        p->mappings[i].has_inline_frames = how == PPROF_SYMBOLIZE_FULL && (seen[i] & 2);
        seen[i] = (seen[i] & 4) != 0;
    }
    if (how != PPROF_SYMBOLIZE_NONE && fetch_notes(p, ss, seen, out) != 0)
        goto out;
    rc = 0;
out:
    pp_sym_end(ss);
    pp_own_end(caller_set);
    return rc ? pp_fail(rc) : 0;
}

int pp_profile_name_addresses(pprof_profile *p, const pp_table *am, uint32_t nloc, pprof_symbolize how,
                              const char *leave_maps)
{
    int64_t t0 = pp_now_ns(CLOCK_MONOTONIC);
    size_t ncomments = p->ncomments;
    for (int pass = 0;; pass++) {
        pass_out out = {0};
        p->ncomments = ncomments; /* the first pass's notes go */
        unsigned gen = pp_sym_fetch_generation();
        int rc = name_pass(p, am, nloc, how, leave_maps, &out);
        if (rc != 0 || pass == 1)
            return rc;
        /* Named again once, when a file arrived in time (or a fetch
         * failed: the notes say so). */
        bool arrived = pp_sym_fetch_generation() != gen;
        if (!arrived && !(out.pending && pp_sym_fetch_wait(t0)))
            return rc;
    }
}
