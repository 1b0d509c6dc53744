/* query.h: the one parser of raw query strings (query.c).
 *
 * Every part of the server reads queries through here: routing (the
 * parameters of the profile endpoints), the flame-graph page (its own
 * parameters) and the process tree (pid=, tree= and what it must know of
 * a request before it fans it out). Keys and values are percent-decoded
 * ('+' as a space) the same way for all of them. Nothing here calls
 * another file of server/.
 */
#ifndef PP_QUERY_H
#define PP_QUERY_H

#include <stddef.h>

#include "pprof.h"

/* How a profile is written: ?format=proto|folded, and for folded
 * &sample_index= (a sample type's name or index) and &labels=1. */
typedef struct pp_output {
    int format;             /* 0: the endpoint's own (gzipped protobuf or text) */
    int labels;
    char sample_index[64];  /* "": the profile's default */
} pp_output;
#define PP_OUT_PROTO 1
#define PP_OUT_FOLDED 2

/* The parameters of the profile endpoints; everything else in a query is
 * ignored. */
typedef struct pp_query {
    int has_seconds, seconds; /* validated: 1..max_seconds */
    pp_output out;
    int has_debug, debug;
    int has_gc, gc;
    pprof_symbolize symbolize; /* symbolize=full|functions|none; DEFAULT when absent */
    int hub_names;             /* hub_names=1: a tree's hub asks, and names what its files hold */
    int window_ms;             /* window_ms=N: a tree's hub asks a member that joined during a
                                  window for the rest of it (N ms instead of `seconds`); 0 when absent */
    int has_past;              /* last=, from= or until= given: a profile of the past, from the history */
    int last;                  /* last=N: the last N seconds; 0 when absent */
    int64_t from, until;       /* from=T, until=T: Unix seconds; 0 when absent */
    int min_span_ms;           /* min_span_ms=N: only slow spans' samples (with the above); 0 when absent */
} pp_query;

/* Parses a raw query (NULL: none) into *out (zeroed first). Returns 0, or
 * -1 with the reason for a 400 answer in why. */
int pp_query_parse(const char *query, int max_seconds, pp_query *out, char *why, size_t why_size);

/* One parameter of a raw query: the text between two '&'. */
typedef struct pp_param {
    const char *at;    /* where it stands in the query */
    size_t len;        /* 0: an empty one ("a&&b") */
    char key[32];      /* its key, decoded; NUL-terminated when key_len < sizeof key */
    long key_len;      /* the decoded key's whole length, or -1: a malformed %-escape */
    const char *value; /* what follows its '=', as it stands; NULL without '=' */
    size_t value_len;
} pp_param;

/* Steps *s (the query, or NULL) past its next parameter and fills p.
 * Returns 0 when there is none left. */
int pp_query_next(const char **s, pp_param *p);
/* Whether p's key is `key`. */
int pp_param_is(const pp_param *p, const char *key);
/* p's value decoded into out (at most cap bytes, no NUL): its whole
 * length, 0 without '=', or -1 on a malformed %-escape. */
long pp_param_value(const pp_param *p, char *out, size_t cap);

/* How many parameters of query have the key `key` and a value; the last
 * one's value decoded into out, NUL-terminated and cut to cap - 1 bytes
 * ("" when there is none or it is malformed). */
int pp_query_find(const char *query, const char *key, char *out, size_t cap);
/* The query without the parameters with a value whose key is one of
 * keys[0..nkeys), nor empty ones: a malloc'd string (maybe ""), or NULL
 * when there is nothing to take out (or no memory: the query stands). */
char *pp_query_without(const char *query, const char *const *keys, size_t nkeys);

/* A decimal integer within +-INT32_MAX filling s[0..n): 0 and *v, or -1. */
int pp_parse_int(const char *s, size_t n, long long *v);

#endif /* PP_QUERY_H */
