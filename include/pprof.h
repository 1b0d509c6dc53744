/* pprof.h: the public API of libpprof (with the two parts it includes).
 *
 * libpprof profiles a C or C++ program on Linux from inside and serves
 * Go-compatible profiles over HTTP (net/http/pprof's endpoints): CPU and
 * wall time, heap and allocations, mutex and block contention, threads'
 * stacks and custom counts, with the threads' labels and tracing spans.
 * Recorders give profiles in memory (pprof protobuf, Go's text, folded
 * stacks); the endpoints are served by libpprof's own server, the
 * program's HTTP server (pprof_http_handle, pprof_mhd.h) or a process
 * tree's hub. Loaded with LD_PRELOAD, it serves an unmodified program.
 *
 * Sections, in order: version, errors, writers, profiles, merging, labels,
 * trace context, OpenTelemetry, recorders, then one per kind (CPU, wall
 * clock, heap, threads, contention, custom profiles), symbols; then, in the
 * two headers this one includes at its end, statistics (pprof_stats.h),
 * and the server, process trees and HTTP handling (pprof_server.h).
 *
 * Conventions:
 *  - Functions that can fail return int: 0 on success, a negative PPROF_E*
 *    code otherwise; pprof_strerror() turns a code into its fixed text,
 *    pprof_err_name() into its name, and pprof_last_error() tells what the
 *    calling thread's last failure was, with its detail.
 *  - Rates, periods and fractions are int64_t everywhere.
 *  - Ownership: what a function returns through an `out` pointer belongs to
 *    the caller, who frees it with the matching *_free or *_unref; strings
 *    and arrays returned directly belong to the object they were read from
 *    and live as long as it does (profiles, label sets) or, for names of
 *    process-lifetime objects (custom profiles), as long as the process.
 *  - Version 0.x: the API may still change between minor versions; the
 *    CHANGELOG.md lists what did.
 *  - Configuration structs are zero-initialisable: a zero field means "the
 *    default", so `(pprof_cpu_config){0}` is a valid configuration.
 *  - Every function states its thread safety. "Thread-safe": any thread
 *    may call it at any time, while other threads call it or any other
 *    function, within the limits its comment names ("one thread at a time
 *    per recorder": calls on one recorder must not overlap; "not while
 *    another thread reads the profile"). Calls that act on "the calling
 *    thread's" labels or trace context change that thread's alone. Only
 *    functions that say "async-signal-safe" may be called from a signal
 *    handler.
 */
#ifndef PPROF_H
#define PPROF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define PPROF_API __attribute__((visibility("default")))
#else
#define PPROF_API
#endif

/* --------------------------------------------------------------- version */

/* The version of the header (CMake's project version is read from these
 * lines). PPROF_VERSION is MAJOR * 10000 + MINOR * 100 + PATCH, for #if. */
#define PPROF_VERSION_MAJOR 0
#define PPROF_VERSION_MINOR 2
#define PPROF_VERSION_PATCH 0
#define PPROF_VERSION_STRING "0.2.0"
#define PPROF_VERSION (PPROF_VERSION_MAJOR * 10000 + PPROF_VERSION_MINOR * 100 + PPROF_VERSION_PATCH)

/* The version of the library in use ("0.2.0"), which can differ from the
 * header's when a program runs against another build. A static string.
 * Thread-safe; async-signal-safe. */
PPROF_API const char *pprof_version(void);

/* ---------------------------------------------------------------- errors */

enum {
    PPROF_OK = 0,
    PPROF_EINVAL = -1,   /* an argument is invalid */
    PPROF_ENOMEM = -2,   /* out of memory */
    PPROF_EBUSY = -3,    /* already running (a second server, a started recorder) */
    PPROF_ERATE = -4,    /* a sampling rate differs from the rate in force */
    PPROF_ESTATE = -5,   /* the call does not fit the object's state (stop before start) */
    PPROF_ESYS = -6,     /* a system call failed; errno says which */
    PPROF_EIO = -7,      /* a writer failed */
    PPROF_ENOTSUP = -8,  /* not supported on this system or for this kind */
    PPROF_EADDR = -9,    /* the server address is malformed or cannot be bound */
    PPROF_ELIMIT = -10,  /* a configured limit was reached */
    PPROF_ENOTFOUND = -11, /* what the call names does not exist (a key, a symbol) */
};

/* The fixed one-line text of `code` ("invalid argument"), the same on
 * every call. A static string. Thread-safe; async-signal-safe. */
PPROF_API const char *pprof_strerror(int code);
/* The name of `code` as in this header ("PPROF_EINVAL"; "PPROF_OK" for 0),
 * for logs and tests; "PPROF_E?" for a code it does not define. A static
 * string. Thread-safe; async-signal-safe. */
PPROF_API const char *pprof_err_name(int code);
/* The calling thread's last failure: its code's text and, where the call
 * said more, one line of detail ("sampling rate differs from the rate in
 * force: CPU profiling runs at 100 Hz; ask for that or 0"). Every failing
 * call replaces it, with or without detail, so it never shows an earlier
 * failure's detail; successful calls leave it alone (test the return code
 * first, as with errno). "" before any failure. The string belongs to the
 * thread and stays valid until its next failing call. Thread-safe. */
PPROF_API const char *pprof_last_error(void);

/* --------------------------------------------------------------- writers */

/* Where serialized output goes. `write` returns 0 on success, or a negative
 * value to abort the output (the caller then gets PPROF_EIO). */
typedef struct pprof_writer {
    int (*write)(void *ctx, const void *data, size_t len);
    void *ctx;
} pprof_writer;

/* A growable memory buffer. Zero-initialise it; free with pprof_buffer_free. */
typedef struct pprof_buffer {
    char *data;
    size_t len;
    size_t cap;
} pprof_buffer;

/* A writer that writes everything to `fd` (retrying short writes and EINTR).
 * Thread-safe; writes through it from several threads at once may
 * interleave, as write(2)'s on the descriptor would. */
PPROF_API pprof_writer pprof_writer_fd(int fd);
/* A writer that appends to `buf`. Thread-safe; writes to one buffer: one
 * thread at a time. */
PPROF_API pprof_writer pprof_writer_buffer(pprof_buffer *buf);
/* Frees the buffer's memory and zeroes it. Safe on a zeroed buffer.
 * Thread-safe; not while a writer of the buffer is in use on another
 * thread. */
PPROF_API void pprof_buffer_free(pprof_buffer *buf);

/* -------------------------------------------------------------- profiles */

/* An in-memory profile: samples with values, stacks of symbolized
 * locations, labels, and the mappings they fall in. It is immutable once a
 * recorder returns it; every accessor is thread-safe on it. */
typedef struct pprof_profile pprof_profile;

typedef struct pprof_value_type {
    const char *type; /* "samples", "cpu", ... */
    const char *unit; /* "count", "nanoseconds", ... */
} pprof_value_type;

/* One source line of a location. A location with inlined calls has several,
 * innermost first. Strings are "" where unknown. */
typedef struct pprof_line {
    const char *function;    /* demangled when the symbol is C++ */
    const char *system_name; /* the symbol as in the binary */
    const char *filename;
    int64_t line;            /* 0 where unknown */
} pprof_line;

typedef struct pprof_mapping {
    uint64_t id;             /* 1..N */
    uint64_t start, limit, offset;
    const char *path;
    const char *build_id;    /* GNU build ID in lowercase hex, or "" */
    int has_functions, has_filenames, has_line_numbers;
    /* Inlined calls were looked for (the object's DWARF was read); a
     * location with several lines also sets it when encoded. */
    int has_inline_frames;
} pprof_mapping;

typedef struct pprof_location {
    uint64_t id;             /* 1..N */
    uint64_t address;        /* a call site: return address - 1, but for the leaf PC */
    uint64_t mapping_id;     /* 0 when in no mapping */
    size_t nlines;
    const pprof_line *lines;
    uint64_t symbol_start;   /* start of the function's symbol (for "+0x" offsets), 0 when unknown */
} pprof_location;

typedef struct pprof_label {
    const char *key;
    const char *value;
} pprof_label;

/* A numeric label, such as heap profiles' "bytes" (the object size). */
typedef struct pprof_num_label {
    const char *key;
    int64_t value;
    const char *unit;                       /* "" when none */
} pprof_num_label;

typedef struct pprof_sample {
    size_t nvalues;                         /* = number of sample types */
    const int64_t *values;
    size_t nlocations;                      /* leaf first */
    const pprof_location *const *locations;
    size_t nlabels;
    const pprof_label *labels;
    size_t nnum_labels;
    const pprof_num_label *num_labels;
} pprof_sample;

/* Accessors: thread-safe (a profile is read only); what they return
 * belongs to the profile and lives until pprof_profile_free. */
/* The profile's sample types; *n receives their number. Thread-safe. */
PPROF_API const pprof_value_type *pprof_profile_sample_types(const pprof_profile *p, size_t *n);
/* The profile's samples; *n receives their number. Thread-safe. */
PPROF_API const pprof_sample *pprof_profile_samples(const pprof_profile *p, size_t *n);
/* The profile's mappings, in address order; *n receives their number.
 * Thread-safe. */
PPROF_API const pprof_mapping *pprof_profile_mappings(const pprof_profile *p, size_t *n);
/* Period type, period, start time (ns since the epoch) and duration (ns).
 * Thread-safe. */
PPROF_API pprof_value_type pprof_profile_period_type(const pprof_profile *p);
PPROF_API int64_t pprof_profile_period(const pprof_profile *p);
PPROF_API int64_t pprof_profile_time_nanos(const pprof_profile *p);
PPROF_API int64_t pprof_profile_duration_nanos(const pprof_profile *p);

typedef enum pprof_format {
    PPROF_FORMAT_PROTO_GZIP = 0, /* pprof protobuf, gzipped: what /debug/pprof serves */
    PPROF_FORMAT_PROTO = 1,      /* pprof protobuf, uncompressed */
    PPROF_FORMAT_FOLDED = 2,     /* "root;caller;leaf value" per distinct stack (see below) */
    PPROF_FORMAT_TEXT = 3,       /* Go's debug=1 text (heap, mutex, block, goroutine, threadcreate, custom) */
    PPROF_FORMAT_TEXT_DUMP = 4,  /* Go's debug=2 text: a per_thread thread profile */
} pprof_format;

/* Serializes `p` to `w`. PPROF_FORMAT_FOLDED is pprof_profile_write_folded
 * with the defaults. Thread-safe (the profile is read only). */
PPROF_API int pprof_profile_write(const pprof_profile *p, pprof_format fmt, pprof_writer w);

/* Folded stacks, as flamegraph.pl, speedscope and inferno read them: one
 * line per distinct stack, "root;caller;leaf value", every frame a
 * function (inlined calls included, an unnamed one as its address), the
 * lines of samples with the same frames merged, lines whose value is 0
 * and samples with no frame (nor label frame) left out, sorted. */
typedef struct pprof_folded_config {
    const char *sample_type; /* the value written: a sample type's name ("cpu", "inuse_space",
                                "delay", ...) or its index in decimal; NULL or "": the profile's
                                default type, else its last one (as go tool pprof chooses) */
    int labels;              /* 1: each sample's string labels first, as one frame
                                "[key=value key=value]" (none: no such frame) */
} pprof_folded_config;
/* Writes `p` as folded stacks (cfg may be NULL). Returns 0, PPROF_ENOTFOUND
 * when no sample type has that name or index (pprof_last_error lists
 * them), PPROF_EINVAL, PPROF_ENOMEM or PPROF_EIO. Thread-safe. */
PPROF_API int pprof_profile_write_folded(const pprof_profile *p, const pprof_folded_config *cfg, pprof_writer w);
/* The same for a serialized profile: a pprof protobuf, gzipped or not (what
 * every endpoint serves, a saved file, pprof_merge's output). Numeric
 * labels are left out of the label frame. PPROF_EINVAL when the bytes are
 * not a profile (pprof_last_error says what is wrong). Thread-safe. */
PPROF_API int pprof_fold(const void *data, size_t len, const pprof_folded_config *cfg, pprof_writer w);
/* Frees a profile and everything its accessors returned. NULL is allowed.
 * Thread-safe; not while another thread reads the profile. */
PPROF_API void pprof_profile_free(pprof_profile *p);

/* --------------------------------------------------------------- merging
 *
 * Several pprof protobufs (gzipped or not), such as the profiles of the
 * processes of a tree, into one: samples, locations, functions and
 * mappings of each input stay its own (mappings of different processes
 * are not merged), every sample of input i gains the labels in[i].labels,
 * and the string tables become one. The sample types must be the same
 * (else PPROF_EINVAL, with the input named in pprof_last_error()); period
 * and period type are the first input's, the time the earliest, the
 * duration the longest, and the comments are all of them, each once.
 * Fields profile.proto does not define are left out. */
typedef struct pprof_merge_input {
    const void *data;          /* NULL with len 0: no profile, only the comment */
    size_t len;
    const pprof_label *labels; /* added to each of its samples */
    size_t nlabels;
    const pprof_num_label *num_labels; /* added to each of its samples (pid: numeric, so that
                                          go tool pprof's -tagfocus=pid=N matches) */
    size_t nnum_labels;
    const char *comment;       /* added to the comments, or NULL */
} pprof_merge_input;

/* Writes the merge of n >= 1 inputs to w as a gzipped protobuf. Returns
 * 0, PPROF_EINVAL (a bad or mismatched input), PPROF_ENOMEM or PPROF_EIO.
 * Thread-safe. */
PPROF_API int pprof_merge(const pprof_merge_input *in, size_t n, pprof_writer w);

/* ---------------------------------------------------------------- labels */

/* A label set: an immutable, reference-counted set of string key/value
 * pairs, like Go's pprof.Labels. Every sample taken while a set is the
 * thread's current set carries its pairs, so a profile can be split by
 * request, tenant or job (`go tool pprof -tags`, `-tagfocus`). */
typedef struct pprof_labels pprof_labels;

/* Builds a set from n pairs; a later pair with the same key overrides an
 * earlier one. Keys must be non-empty, keys and values non-NULL.
 * *out receives a set with one reference. Thread-safe. */
PPROF_API int pprof_labels_new(const pprof_label *pairs, size_t n, pprof_labels **out);
/* Builds base (may be NULL) plus n pairs, which override base's values;
 * *out receives a set with one reference. Thread-safe. */
PPROF_API int pprof_labels_with(const pprof_labels *base, const pprof_label *pairs, size_t n,
                                pprof_labels **out);
/* Takes a reference (returns set) / drops one (frees on the last). NULL is
 * allowed. Thread-safe. */
PPROF_API pprof_labels *pprof_labels_ref(pprof_labels *set);
PPROF_API void pprof_labels_unref(pprof_labels *set);
/* The set's pairs, sorted by key; *n receives their number. They belong
 * to the set and live as long as a reference to it. Thread-safe. */
PPROF_API const pprof_label *pprof_labels_pairs(const pprof_labels *set, size_t *n);

/* Runs fn(arg) with the calling thread's current set merged with `add`
 * (add's values override), then restores the previous set, as Go's
 * pprof.Do. Nests freely. With the history on (LIBPPROF_HISTORY), the
 * outermost call on a thread is also a unit of work, timed for the
 * history's slow-requests filter (pprof_history_config.min_span_ns); its
 * samples carry no label for it. Returns 0, or a code if the merge failed
 * (then fn is not run). Thread-safe: it changes the calling thread's set
 * alone, and fn runs on the calling thread. */
PPROF_API int pprof_do(const pprof_labels *add, void (*fn)(void *arg), void *arg);

/* The calling thread's current set, with a new reference (NULL for none):
 * capture it where work is submitted and run the work under it elsewhere
 * with pprof_labels_enter. New threads start with their creator's set.
 * Thread-safe (the calling thread's set). */
PPROF_API pprof_labels *pprof_labels_current(void);
/* Low-level set/restore for code that cannot use a callback (event loops,
 * coroutines): makes `set` (NULL: none) the thread's current set, replacing
 * (not merging with) what was there, and returns the previous set, which
 * the caller passes to pprof_labels_leave to restore it. enter takes a
 * reference of its own to `set` and hands the caller the previous set's;
 * leave takes that one back. Thread-safe: both act on the calling
 * thread's set alone, so a leave belongs on the thread of its enter. */
PPROF_API pprof_labels *pprof_labels_enter(pprof_labels *set);
PPROF_API void pprof_labels_leave(pprof_labels *previous);

/* Cumulative profiles (heap, allocations, mutex, block) keep their records
 * for the life of the process, so the distinct label sets they keep are
 * capped: past the cap, a record keeps its stack and counts and carries the
 * single label "pprof.labels" = "dropped". Windowed profiles (CPU, delta
 * windows) keep every set. Sets the cap from the next record on; 0 means
 * the default, 1024. Thread-safe. */
#define PPROF_LABELS_DEFAULT_CAP 1024
PPROF_API int pprof_labels_set_cap(size_t cap);

/* --------------------------------------------------------- trace context */

/* A tracing span's identity, as W3C Trace Context and OpenTelemetry carry
 * it. CPU samples taken while a context is the thread's current one carry
 * the labels "span_id" (16 lowercase hex digits) and, when span_name is
 * set, "span_name" (its first 63 bytes): the span-profile convention of
 * the Go and Java OpenTelemetry integrations, so a backend can show the
 * CPU time of one span. With pprof_cpu_config.trace_id_label they carry
 * "trace_id" (32 hex digits) too. A span's labels override a label set's
 * pairs of the same key. Heap, allocation and contention records, kept for
 * the life of the process, do not carry span labels (one per request would
 * fill the label cap at once). */
typedef struct pprof_trace_context {
    uint8_t trace_id[16];  /* all zero: no trace (the context is ignored) */
    uint8_t span_id[8];
    uint8_t trace_flags;   /* W3C trace flags; bit 0: sampled */
    const char *span_name; /* NULL, or a string that outlives the entered scope */
} pprof_trace_context;

/* Makes *ctx (NULL: none) the calling thread's trace context and returns
 * the previous one, which the caller passes to pprof_trace_leave when the
 * span ends. The context is used in place, not copied, so entering and
 * leaving cost a few stores: keep *ctx unchanged and alive until the
 * matching leave (a local of the scope does). Threads created meanwhile
 * start with a copy of it. Scopes nest like label scopes; each thread has
 * its own. Thread-safe (the calling thread's context); async-signal-safe;
 * never allocates. */
PPROF_API const pprof_trace_context *pprof_trace_enter(const pprof_trace_context *ctx);
PPROF_API void pprof_trace_leave(const pprof_trace_context *previous);
/* The calling thread's current trace context, or NULL. Valid until the
 * thread leaves it. Thread-safe; async-signal-safe. */
PPROF_API const pprof_trace_context *pprof_trace_current(void);

/* --------------------------------------------------------- OpenTelemetry */

/* Out-of-process profilers (the OpenTelemetry eBPF profiler and others)
 * read a process's context from its memory: libpprof publishes the process
 * context of OTEP 4719 (a mapping named OTEL_CTX holding the resource
 * attributes) and keeps each thread's OTEP 4947 record current (the
 * exported TLS pointer otel_thread_ctx_v1: the thread's trace context and
 * its labels as attributes). On unless LIBPPROF_OTEL_CONTEXT=0. The
 * resource starts with OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, the
 * process's pid and executable, and libpprof as the telemetry SDK. */

/* Sets resource attributes (string values), replacing those of the same
 * key, and republishes. At most 64 attributes (PPROF_ELIMIT); PPROF_ENOTSUP
 * when publication is off. Thread-safe. */
PPROF_API int pprof_otel_set_resource(const pprof_label *attrs, size_t n);

/* ------------------------------------------------------------- recorders */

/* A recorder is configured once, then started, snapshotted and stopped.
 * Several recorders of one kind may run at once; they share one sampler. */
typedef struct pprof_recorder pprof_recorder;

/* Begins a window: from now on the recorder collects samples. Fails with
 * PPROF_EBUSY if it is running, PPROF_ERATE if its rate differs from the
 * rate in force of a kind whose recorders share one rate (all but CPU and
 * wall-clock).
 * Thread-safe; one thread at a time per recorder. */
PPROF_API int pprof_recorder_start(pprof_recorder *r);
/* Ends the window and returns its profile in *out (symbolized), or discards
 * it when out is NULL. A stop that fails (PPROF_ENOMEM) still ends the
 * window and the recorder's sampling; only the profile is lost. Thread-safe;
 * one thread at a time per recorder. */
PPROF_API int pprof_recorder_stop(pprof_recorder *r, pprof_profile **out);
/* Returns the profile of the window so far and begins the next window with
 * no gap: every sample lands in exactly one window. Thread-safe; one thread
 * at a time per recorder. */
PPROF_API int pprof_recorder_snapshot(pprof_recorder *r, pprof_profile **out);
/* Instant kinds (heap, threads, threadcreate, custom; mutex and block give
 * their totals): the profile of the state now, in *out. Windowed-only
 * kinds (CPU, allocations) fail with PPROF_ENOTSUP. Thread-safe; one
 * thread at a time per recorder. */
PPROF_API int pprof_recorder_write_to(pprof_recorder *r, pprof_profile **out);
/* The rate the recorder samples at: Hz for CPU (once started), bytes for
 * heap kinds, the fraction for mutex and ns for block; 0 for kinds that do
 * not sample, or NULL. Thread-safe; on a CPU recorder, not while another
 * thread starts or stops it. */
PPROF_API int64_t pprof_recorder_rate(const pprof_recorder *r);

/* How a recorder's profiles are symbolized. FULL: function names, files,
 * lines and inlined frames (libdw reads the objects' DWARF); FUNCTIONS:
 * function names only, from the symbol tables (no DWARF is read: far
 * less memory and time in big programs); NONE: addresses, mappings and
 * build IDs only, for go tool pprof with the binaries at hand, or a
 * continuous profiler that symbolizes on its server. DEFAULT: the
 * environment's LIBPPROF_SYMBOLIZE (full, functions or none; full when
 * unset). */
typedef enum pprof_symbolize {
    PPROF_SYMBOLIZE_DEFAULT = 0,
    PPROF_SYMBOLIZE_FULL,
    PPROF_SYMBOLIZE_FUNCTIONS,
    PPROF_SYMBOLIZE_NONE,
} pprof_symbolize;

/* Sets how the recorder's next profiles are symbolized. Returns 0 or
 * PPROF_EINVAL. Thread-safe; one thread at a time per recorder. */
PPROF_API int pprof_recorder_set_symbolize(pprof_recorder *r, pprof_symbolize how);

/* Stops the recorder if running and frees it. NULL is allowed.
 * Thread-safe; not while another thread uses the recorder. */
PPROF_API void pprof_recorder_free(pprof_recorder *r);

/* ------------------------------------------------------------------- CPU */

#define PPROF_CPU_DEFAULT_HZ 100
#define PPROF_CPU_MAX_HZ 10000
#define PPROF_DEFAULT_MAX_FRAMES 64
#define PPROF_MAX_FRAMES 256

typedef struct pprof_cpu_config {
    /* Samples per second of CPU time per thread; 0: LIBPPROF_CPU_HZ or
     * 100. CPU recorders with different rates run side by side: the
     * sampler runs at the highest, so a recorder gets its samples at its
     * rate or more (its cpu/nanoseconds are exact either way, and its
     * profile's comments say when the rate was higher). */
    int64_t hz;
    /* Deepest stack kept (1..PPROF_MAX_FRAMES); 0: 64. Deeper stacks end in
     * a frame named "[truncated]"; stacks the walk could not follow to the
     * thread's outermost frame, in one named "[unwinding stopped: ...]"
     * (docs/cpu.md). Shared like the rate. */
    int max_frames;
    /* 1: samples taken under a trace context also carry the label
     * "trace_id"; -1: they do not; 0: LIBPPROF_TRACE_ID_LABEL (1 or 0),
     * else not (a label per trace makes every sample its own). */
    int trace_id_label;
} pprof_cpu_config;

/* Creates a stopped CPU recorder. `cfg` may be NULL for the defaults.
 * Thread-safe. */
PPROF_API int pprof_cpu_recorder_new(const pprof_cpu_config *cfg, pprof_recorder **out);

/* Chooses the signal libpprof's timers and requests deliver: SIGSTKFLT
 * by default (no program is known to use it; SIGPROF stays the host's),
 * or LIBPPROF_SIGNAL (a number) at start-up; an override for hosts that
 * use SIGSTKFLT themselves (a host handler on the profiling signal stands
 * behind libpprof's and is still called for signals that are not
 * libpprof's). Only before CPU profiling first
 * starts: later, a different signal fails with PPROF_EBUSY. Signals the
 * system keeps (SIGKILL, SIGSTOP, SIGSEGV, ...) fail with PPROF_EINVAL.
 * Thread-safe. */
PPROF_API int pprof_cpu_set_signal(int signo);

/* --------------------------------------------------------------- history
 *
 * With LIBPPROF_HISTORY=SECONDS, libpprof keeps the last SECONDS of CPU
 * samples (at LIBPPROF_HISTORY_HZ, 19), allocation samples (with heap
 * sampling on) and mutex and block samples (empty while those are off)
 * from the start of the process, in 5-second slices of at most
 * LIBPPROF_HISTORY_MB (16) MiB in all (the oldest go first), so that a
 * profile of the past answers at once (profile?last=60, allocs?last=60).
 * See docs/history.md. */

/* Which samples a history recorder gives. */
typedef enum pprof_history_kind {
    PPROF_HISTORY_CPU = 0,    /* CPU samples (always kept with the history) */
    PPROF_HISTORY_WALL = 1,   /* wall-clock samples (LIBPPROF_HISTORY_WALL=1) */
    PPROF_HISTORY_ALLOCS = 2, /* allocations (when heap sampling is on): alloc_* the span's, inuse_* the live heap
                               * at its end */
    PPROF_HISTORY_MUTEX = 3,  /* mutex contention (hook builds) */
    PPROF_HISTORY_BLOCK = 4   /* block contention (hook builds) */
} pprof_history_kind;

typedef struct pprof_history_config {
    /* The span wanted, in nanoseconds since the Unix epoch: the slices
     * that overlap [from, until] are given. from 0: as far back as kept;
     * until 0: now (the open slice is read as it stands, so the profile
     * reaches now). */
    int64_t from_unix_ns, until_unix_ns;
    /* When not 0: only the samples taken inside spans (pprof_trace_enter)
     * or units of work (pprof_do calls) that lasted min_span_ns or more,
     * decided from each one's end: where the time of the slow requests
     * went. At least LIBPPROF_HISTORY_SPAN_MS (100 ms; shorter ones are
     * not timed), else PPROF_EINVAL. */
    int64_t min_span_ns;
    /* Which samples (min_span: CPU and wall only). */
    pprof_history_kind kind;
} pprof_history_config;

/* A recorder whose pprof_recorder_write_to gives the kept history of
 * cfg's kind over cfg's span: a profile of that kind whose time_nanos and
 * duration_nanos say exactly what its slices cover, with a comment saying
 * so (and when the history does not reach back as far as asked). It has
 * no window. Fails with PPROF_ENOTSUP when no history is kept
 * (LIBPPROF_HISTORY unset or 0) or none of that kind (LIBPPROF_HISTORY_WALL
 * unset, heap sampling off, a build without hooks; the text says which),
 * PPROF_EINVAL when from > until, the kind is unknown or min_span is set
 * for a kind without spans. Thread-safe. */
PPROF_API int pprof_history_recorder_new(const pprof_history_config *cfg, pprof_recorder **out);

/* Asks for a dump of the history: every kind kept, symbolized, written as
 * gzipped pprof to LIBPPROF_HISTORY_DUMP_DIR/libpprof-PID-N-cpu.pb.gz (and
 * -wall, -allocs, -mutex, -block.pb.gz for the kinds kept) by the
 * history's own thread within a second; the last
 * LIBPPROF_HISTORY_DUMPS (10) are kept. Never waits: calls a second apart
 * or less make one dump. 0, or PPROF_ENOTSUP when no history or no dump
 * directory is set (no pprof_last_error text). async-signal-safe. */
PPROF_API int pprof_history_dump(void);

/* ------------------------------------------------------------ wall clock
 *
 * A wall-clock profile counts every live thread (of those the library
 * knows: the main thread and threads started through pthread_create) `hz`
 * times a second, whatever it does: running, ready to run, blocked in the
 * kernel, waiting for a lock. Sample types samples/count and
 * wall/nanoseconds (period type wall/nanoseconds), or with `fgprof` set
 * samples/count and time/nanoseconds (period type wallclock/nanoseconds),
 * as fgprof writes them. Each sample carries the thread's labels (a
 * running thread's span too) and the label thread_state: "running" (on a
 * CPU), "runnable" (waiting for one), or the system call it waits in
 * ("epoll_wait", "futex", "read", "clock_nanosleep", ..., "syscall_<n>").
 * A thread that waits is walked from /proc with no signal, one that has
 * not run since it was last looked at is counted where it was, with no
 * system call of its own: only threads that run get the profiling signal.
 * One sampler serves every wall recorder, which share its rate. */

#define PPROF_WALL_DEFAULT_HZ 99
#define PPROF_WALL_MAX_HZ 1000

/* Which samples a wall recorder keeps. */
typedef enum pprof_wall_state {
    PPROF_WALL_ALL = 0,     /* every thread, whatever it does */
    PPROF_WALL_OFF_CPU = 1, /* threads waiting in a system call (off-CPU) */
    PPROF_WALL_ON_CPU = 2,  /* threads running or ready to run */
} pprof_wall_state;

typedef struct pprof_wall_config {
    /* Samples per second of wall time per thread (1..PPROF_WALL_MAX_HZ).
     * 0: the rate in force if wall recorders are running, else 99 (as
     * fgprof). Recorders at different rates share one sampler at the
     * highest rate running: a recorder's samples then come faster than
     * it asked, each with its exact share of wall time, and its profile
     * says so in a comment. */
    int64_t hz;
    pprof_wall_state state;
    /* 1: sample and period types as fgprof writes them (above). */
    int fgprof;
} pprof_wall_config;

/* Creates a stopped wall recorder (start/snapshot/stop; snapshots leave
 * no gap). `cfg` may be NULL for the defaults. Thread-safe. */
PPROF_API int pprof_wall_recorder_new(const pprof_wall_config *cfg, pprof_recorder **out);

/* ------------------------------------------------------------------ heap
 *
 * Heap profiling samples allocations from the moment the library is
 * loaded: malloc, calloc, realloc, the aligned variants and every C++
 * operator new are interposed (forwarding to the allocator that comes next,
 * glibc's or jemalloc's or tcmalloc's) and sampled as a Poisson process
 * with a mean of `rate` bytes between samples, as Go's MemProfileRate. A
 * sampled object records its caller's stack, the thread's labels and its
 * size. Profiles have Go's four sample types, alloc_objects/count,
 * alloc_space/bytes, inuse_objects/count, inuse_space/bytes, unsampled as
 * Go does, with the numeric label "bytes" = object size. */

#define PPROF_HEAP_DEFAULT_RATE 524288
#define PPROF_HEAP_OFF (-1)

/* Sets the heap sampling rate: mean bytes between samples (1 samples
 * every allocation), 0 for the default, PPROF_HEAP_OFF to stop sampling.
 * The rate is LIBPPROF_HEAP_RATE (or 512 KiB) from start-up and can change
 * only until the first sample is taken (samples taken at different rates
 * cannot be unsampled together): later, a different rate fails with
 * PPROF_ERATE, naming the rate in force. A new rate reaches each thread at
 * its next sample. Thread-safe. */
PPROF_API int pprof_heap_set_rate(int64_t rate);
/* The heap sampling rate in force; 0 when off. Thread-safe. */
PPROF_API int64_t pprof_heap_rate(void);

typedef struct pprof_heap_config {
    /* Must be 0 (the rate in force) or equal to it, else PPROF_ERATE. */
    int64_t rate;
    /* Allocation recorders: also report the live heap's change over the
     * window, as inuse_change_objects/count and inuse_change_space/bytes
     * (negative where it shrank), for hunting leaks. */
    int inuse_change;
    /* Report the sampled counts as they are, not unsampled (Go's debug=1). */
    int raw;
    /* Allocation recorders: the first window begins at process start, so
     * the first profile holds every allocation so far. */
    int from_start;
    /* "alloc_space" or "inuse_space": the type pprof shows by default;
     * NULL: alloc_space for allocation recorders, inuse_space for heap. */
    const char *default_type;
    /* The live heap at its highest instead of at the end, as
     * inuse_objects/inuse_space only, with the peak's time and estimate
     * in a comment: since start-up (heap recorders) or within each window
     * (allocation recorders; at most 3 windows at once, else PPROF_EBUSY). */
    int peak;
    /* Heap recorders: only the live objects sampled at least min_age and
     * at most max_age seconds ago (0: no bound), as inuse_objects and
     * inuse_space, each sample labelled age=<1m, 1m-10m, 10m-1h, 1h-1d or
     * >1d (its objects' age then). */
    int min_age, max_age;
    /* Allocation recorders: in-use values count only the objects
     * allocated during the window that are still live at its end. */
    int window_live;
} pprof_heap_config;

/* A windowed allocation recorder: a window's profile has the allocations
 * made during the window (alloc_*) and the live heap at its end (inuse_*:
 * absolute, not a difference). start/snapshot/stop as for CPU. `cfg` may
 * be NULL. Thread-safe. */
PPROF_API int pprof_alloc_recorder_new(const pprof_heap_config *cfg, pprof_recorder **out);
/* An instant heap recorder: pprof_recorder_write_to gives the live heap
 * now, with every allocation since start-up as alloc_*. Thread-safe. */
PPROF_API int pprof_heap_recorder_new(const pprof_heap_config *cfg, pprof_recorder **out);

/* ---------------------------------------------------------------- memory
 *
 * The memory profile accounts for the whole resident set: its samples
 * (resident_space/bytes) add up to the Rss of every mapping in
 * /proc/self/smaps, under one root frame per holder: live heap objects
 * (under their allocation stacks), memory the allocator holds free,
 * anonymous mappings the program made with mmap (under the stacks that
 * made them), thread stacks, mapped files, shared memory, libpprof itself,
 * and what none of them claims. Each sample has the label memory=<holder>
 * (heap, allocator_free, mmap, stack, file, shared, libpprof,
 * unattributed). See docs/memory.md. */

/* A memory recorder. pprof_recorder_write_to gives the resident set now;
 * a window (start/snapshot/stop) gives the resident set at its end and
 * its change over the window (resident_change_space/bytes, the default
 * type; negative where memory was given back). Allocates nothing in the
 * program's heap. Thread-safe. */
PPROF_API int pprof_memory_recorder_new(pprof_recorder **out);

/* --------------------------------------------------------------- threads
 *
 * Go's goroutine profile, for threads: the stacks of all live threads,
 * goroutine/count per distinct (stack, labels). Taking it does not break
 * the threads' system calls: a thread waiting in the kernel (poll,
 * epoll_wait, nanosleep, futex, ...) is walked from the stack pointer and pc
 * that /proc shows for it, with no signal; only threads that are running
 * get the profiling signal (and answer within ~100 ms; one that blocks it
 * is shown with a frame saying so; ~1 s in all). write_to gives the state
 * now; a window (start/snapshot/stop) the difference of the counts. */
typedef struct pprof_threads_config {
    /* Keep every thread apart, labelled thread.id, thread.name and
     * thread.state (a letter as in /proc, and the call it waits in): the
     * debug=2 dump. Such a recorder has no window. */
    int per_thread;
} pprof_threads_config;

/* A thread recorder; cfg may be NULL. Thread-safe. */
PPROF_API int pprof_threads_recorder_new(const pprof_threads_config *cfg, pprof_recorder **out);
/* A threadcreate recorder: for each live thread the stack of the
 * pthread_create call that made it (threadcreate/count); threads made
 * otherwise show "[not created through pthread_create]". Thread-safe. */
PPROF_API int pprof_threadcreate_recorder_new(pprof_recorder **out);

/* ------------------------------------------------------------ contention
 *
 * Mutex profile: contended acquisitions of pthread mutexes and rwlocks,
 * one in `fraction` kept (Go's SetMutexProfileFraction), counting
 * `fraction` events and `fraction` x the wait. Block profile: time spent
 * waiting for mutexes, rwlocks, condition variables, semaphores and
 * joins; a wait of d ns is kept when d >= rate, else with probability
 * d/rate, counting rate/d events and rate ns (Go's SetBlockProfileRate).
 * Sample types contentions/count and delay/nanoseconds. Both charge the
 * delay to the waiting stack (Go charges mutex delay to the unlocking
 * one), with the waiter's labels. Both are off unless configured:
 * LIBPPROF_MUTEX_FRACTION, LIBPPROF_BLOCK_RATE, the calls below, or a
 * recorder that asks for a rate. */

/* Sets the configured mutex fraction (0: off) / block rate in ns (0:
 * off). While recorders that asked for another rate run, it fails with
 * PPROF_ERATE (and takes effect when they stop). Thread-safe. */
PPROF_API int pprof_mutex_set_fraction(int64_t fraction);
PPROF_API int pprof_block_set_rate(int64_t ns);
/* The fraction / rate in force; 0 when off. Thread-safe. */
PPROF_API int64_t pprof_mutex_fraction(void);
PPROF_API int64_t pprof_block_rate(void);

typedef struct pprof_contention_config {
    /* Mutex: the fraction; block: the rate in ns. 0 joins the rate in
     * force; a rate while the profile is off turns it on until the last
     * recorder that asked for it stops; another rate: PPROF_ERATE. */
    int64_t rate;
    /* The first window begins at process start (its profile holds every
     * event so far), as godeltaprof's first delta. */
    int from_start;
} pprof_contention_config;

/* Mutex and block recorders: windows (start/snapshot/stop) give the
 * events of the window; write_to gives the totals since start-up. cfg may
 * be NULL. Thread-safe. */
PPROF_API int pprof_mutex_recorder_new(const pprof_contention_config *cfg, pprof_recorder **out);
PPROF_API int pprof_block_recorder_new(const pprof_contention_config *cfg, pprof_recorder **out);

/* ------------------------------------------------------- custom profiles
 *
 * Like Go's pprof.NewProfile: a program counts things of its own by the
 * stack that made them (open connections, file handles, cache entries).
 * Each entry is keyed by a pointer; adding it records the caller's stack
 * and the thread's labels. Served at <prefix><name> and listed on the
 * index with its count; a recorder gives <name>/count per (stack, labels),
 * now (write_to) or as the difference over a window. */
typedef struct pprof_custom pprof_custom;

/* Registers a profile. The name is 1-63 of [A-Za-z0-9._-] and must not be
 * an endpoint's (heap, profile, symbol, ui, ...: PPROF_EINVAL) nor registered already
 * (PPROF_EBUSY). Profiles live as long as the process. Thread-safe. */
PPROF_API int pprof_custom_new(const char *name, pprof_custom **out);
/* The registered profile named `name`, or NULL. Thread-safe. */
PPROF_API pprof_custom *pprof_custom_find(const char *name);
/* Copies up to max registered profiles to out; returns how many.
 * Thread-safe. */
PPROF_API size_t pprof_custom_list(pprof_custom **out, size_t max);
/* The profile's name, which lives as long as the process. Thread-safe. */
PPROF_API const char *pprof_custom_name(const pprof_custom *c);
/* Adds an entry for `key` with the caller's stack; PPROF_EBUSY if the key
 * is in the profile already. Thread-safe. */
PPROF_API int pprof_custom_add(pprof_custom *c, const void *key);
/* Removes the entry for `key`; PPROF_ENOTFOUND if it is not there.
 * Thread-safe. */
PPROF_API int pprof_custom_remove(pprof_custom *c, const void *key);
/* Entries in the profile now. Thread-safe. */
PPROF_API size_t pprof_custom_count(pprof_custom *c);
/* A recorder of the profile (write_to, or start/snapshot/stop for the
 * difference of the counts). Thread-safe. */
PPROF_API int pprof_custom_recorder_new(pprof_custom *c, pprof_recorder **out);

/* --------------------------------------------------------------- symbols */

/* Writes the name of the function containing `addr` (demangled) into buf,
 * NUL-terminated and truncated to len. Returns 0, or PPROF_ENOTFOUND when
 * no symbol covers addr (PPROF_EINVAL for a NULL or empty buf). Thread-safe. */
PPROF_API int pprof_symbol_name(uint64_t addr, char *buf, size_t len);


#ifdef __cplusplus
}

namespace pprof {
/* Runs a scope under a label set: the current set merged with `add`, as
 * pprof_do does, restored when the scope ends.
 *   { pprof::LabelScope scope(request_labels); handle(request); } */
class LabelScope {
public:
    explicit LabelScope(const pprof_labels *add) {
        pprof_labels *merged = nullptr;
        pprof_labels *cur = pprof_labels_current();
        size_t n = 0;
        const pprof_label *pairs = pprof_labels_pairs(add, &n);
        if (pprof_labels_with(cur, pairs, n, &merged) == 0) {
            prev_ = pprof_labels_enter(merged);
            entered_ = true;
            pprof_labels_unref(merged);
        }
        pprof_labels_unref(cur);
    }
    ~LabelScope() {
        if (entered_)
            pprof_labels_leave(prev_);
    }
    LabelScope(const LabelScope &) = delete;
    LabelScope &operator=(const LabelScope &) = delete;

private:
    pprof_labels *prev_ = nullptr;
    bool entered_ = false;
};
} // namespace pprof
#endif
#include "pprof_stats.h"  /* statistics */
#include "pprof_server.h" /* serving the endpoints */
#endif /* PPROF_H */
