/* mhd_lib.h: libmicrohttpd, and the two gnutls calls of the client
 * certificate check, loaded when first needed (mhd_lib.c).
 *
 * Most processes that load libpprof never serve: a tree's members (every
 * program a service or a shell execs), a program preloaded without
 * LIBPPROF_ADDR. Loading libmicrohttpd and the gnutls it brings with
 * libpprof cost each of them about a millisecond (their relocations and
 * constructors; bench/exec_cost). So libpprof.so does not link them: the
 * server's files that call them include this header after <microhttpd.h>,
 * which makes each call one through the table pp_mhd_load fills with
 * dlopen and dlsym, before anything serves (pprof_server_start; a
 * program's own daemon, pprof_mhd_handle, has the library loaded already
 * and dlopen finds it).
 */
#ifndef PP_MHD_LIB_H
#define PP_MHD_LIB_H

#include <gnutls/gnutls.h>
#include <microhttpd.h>

#define PP_MHD_FUNCTIONS(X)                                                                             \
    X(MHD_start_daemon) X(MHD_stop_daemon) X(MHD_add_connection) X(MHD_add_response_header)            \
    X(MHD_destroy_response) X(MHD_get_connection_info) X(MHD_create_response_from_buffer)              \
    X(MHD_queue_response) X(MHD_resume_connection) X(MHD_suspend_connection)                           \
    X(MHD_lookup_connection_value) X(MHD_is_feature_supported) X(MHD_get_connection_values_n)           \
    X(MHD_get_daemon_info)
#define PP_GNUTLS_FUNCTIONS(X) X(gnutls_certificate_get_peers) X(gnutls_certificate_verify_peers2)

typedef struct pp_mhd_api {
#define PP_MHD_FIELD(f) __typeof__(&f) f;
    PP_MHD_FUNCTIONS(PP_MHD_FIELD)
    PP_GNUTLS_FUNCTIONS(PP_MHD_FIELD)
#undef PP_MHD_FIELD
} pp_mhd_api;
extern pp_mhd_api pp_mhd;

/* Loads both libraries and their functions, once. Returns 0, or
 * PPROF_ESYS with the loader's reason (pprof_last_error). Thread-safe;
 * not for signal handlers. */
int pp_mhd_load(void);

#ifndef PP_MHD_LIB_C
#define MHD_start_daemon (*pp_mhd.MHD_start_daemon)
#define MHD_stop_daemon (*pp_mhd.MHD_stop_daemon)
#define MHD_add_connection (*pp_mhd.MHD_add_connection)
#define MHD_add_response_header (*pp_mhd.MHD_add_response_header)
#define MHD_destroy_response (*pp_mhd.MHD_destroy_response)
#define MHD_get_connection_info (*pp_mhd.MHD_get_connection_info)
#define MHD_create_response_from_buffer (*pp_mhd.MHD_create_response_from_buffer)
#define MHD_queue_response (*pp_mhd.MHD_queue_response)
#define MHD_resume_connection (*pp_mhd.MHD_resume_connection)
#define MHD_suspend_connection (*pp_mhd.MHD_suspend_connection)
#define MHD_lookup_connection_value (*pp_mhd.MHD_lookup_connection_value)
#define MHD_is_feature_supported (*pp_mhd.MHD_is_feature_supported)
#define MHD_get_connection_values_n (*pp_mhd.MHD_get_connection_values_n)
#define MHD_get_daemon_info (*pp_mhd.MHD_get_daemon_info)
#define gnutls_certificate_get_peers (*pp_mhd.gnutls_certificate_get_peers)
#define gnutls_certificate_verify_peers2 (*pp_mhd.gnutls_certificate_verify_peers2)
#endif

#endif /* PP_MHD_LIB_H */
