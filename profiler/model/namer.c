/* namer.c: names for code in files another process mapped (model.h's
 * pp_model_namer), through this process's symbolizer: a tree's hub naming
 * the addresses its members left unnamed in files it maps too
 * (symbolize/sym_shared.c). */
#include "model.h"
#include "base/base.h"
#include "labels/labels.h"
#include "symbolize/symbolize.h"

#include <stdlib.h>

struct pp_model_namer {
    pp_sym_session *ss;
    pprof_labels *caller_set;
    int functions_only;
};

pp_model_namer *pp_model_namer_begin(pprof_symbolize how)
{
    if (how == PPROF_SYMBOLIZE_DEFAULT)
        how = (pprof_symbolize)pp_env_symbolize();
    if (how == PPROF_SYMBOLIZE_NONE)
        return NULL;
    pp_model_namer *n = malloc(sizeof *n);
    if (!n)
        return NULL;
    n->functions_only = how == PPROF_SYMBOLIZE_FUNCTIONS;
    n->caller_set = pp_own_begin(); /* symbolizing is the profiler's own work */
    n->ss = pp_sym_begin();
    if (!n->ss) {
        pp_own_end(n->caller_set);
        free(n);
        return NULL;
    }
    return n;
}

int pp_model_namer_lookup(pp_model_namer *n, const char *path, const char *build_id, uint64_t file_offset,
                          pp_model_frame *out, int max)
{
    pp_sym_result r;
    pp_sym_lookup_file(n->ss, path, build_id, file_offset, n->functions_only, &r);
    int k = 0;
    for (; k < r.nframes && k < max; k++) {
        const pp_sym_frame *f = &r.frames[k];
        out[k].name = f->function ? f->function : f->system_name;
        out[k].system_name = f->system_name ? f->system_name : f->function;
        out[k].filename = f->filename ? f->filename : "";
        out[k].line = f->line;
        if (!out[k].name)
            out[k].name = out[k].system_name = "";
    }
    return k;
}

void pp_model_namer_end(pp_model_namer *n)
{
    if (!n)
        return;
    pp_sym_end(n->ss);
    pp_own_end(n->caller_set);
    free(n);
}
