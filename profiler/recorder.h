/* recorder.h: the recorder object shared by recorder.c and collector.c. */
#ifndef PP_RECORDER_H
#define PP_RECORDER_H
#include "pprof.h"
#include <stdint.h>

typedef enum pp_kind { PP_KIND_CPU = 1 } pp_kind;

struct pprof_recorder {
    pp_kind kind;
    int cfg_hz, cfg_frames;     /* as configured (0: join / default) */
    int hz;                     /* in effect while running */
    int64_t period_ns;
    int running;
    pprof_profile *window;      /* the open window (collector lock) */
    int64_t window_mono_ns;
};
#endif
