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
/* A malloc'd copy of the hub's executable files (maps lines without
 * addresses), as its latest request sent them, or NULL: what this
 * process, a member, leaves to the hub to name
 * (pprof_recorder_leave_shared). Thread-safe. */
char *pp_member_hub_maps(void);

#endif /* PP_TREE_H */
