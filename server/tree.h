/* tree.h: the process tree, as the rest of the server starts it.
 *
 * The process that serves is the hub of its tree; its forked children,
 * and exec'd ones with the preload, are its members and answer through
 * it (docs/process-trees.md). The built-in daemon starts the hub and
 * registers how a member that takes the hub's place serves; preload.c
 * joins an ancestor's tree instead of serving.
 */
#ifndef PP_TREE_H
#define PP_TREE_H

/* Makes this process the hub of its tree (unless LIBPPROF_TREE=0): a Unix
 * socket its forked children join. Returns 0 or PPROF_ESYS. */
int pp_tree_start(void);
/* Sets what a member that takes the hub's place calls to serve the
 * endpoint where the old hub served (daemon.c); 0 or a PPROF_E* code. */
void pp_tree_set_takeover(int (*serve)(void));
/* A process started by exec with the preload inherited: joins the hub
 * among its ancestors (up to 16 up), if there is one. 0 when it joined
 * (it then serves nothing itself), -1 when not. */
int pp_tree_join_ancestor(void);
/* The pid of the hub this process is a member of, while it is connected;
 * 0 otherwise. Thread-safe. */
int pp_member_hub_pid(void);

#endif /* PP_TREE_H */
