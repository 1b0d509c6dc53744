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
/* The same for a process that has not served (a member started by exec):
 * it takes the place 400 ms after a forked member would. */
void pp_tree_offer_takeover(int (*serve)(void));
/* A process that does not serve but may take its hub's place (a member
 * started by exec with the preload): should the hub end before it, it
 * serves as cfg says (daemon.c). Thread-safe. */
struct pprof_server_config;
void pp_server_offer_takeover(const struct pprof_server_config *cfg);
/* A process started by exec with the preload inherited: joins the hub
 * among its ancestors (up to 16 up), if there is one. 0 when it joined
 * (it then serves nothing itself), -1 when not. */
int pp_tree_join_ancestor(void);
/* Joins the tree that process hub_pid started (its name, which a hub that
 * took over keeps). With `now`, only if a process serves it now (-1 if
 * not); else from the agent thread as soon as one does (its hub exited
 * and a daemon it left is taking its place). 0, or -1 (also with no tree:
 * LIBPPROF_TREE=0). */
int pp_tree_join_named(int hub_pid, int now);
/* A malloc'd copy of the hub's executable files (maps lines without
 * addresses), as its latest request sent them, or NULL: what this
 * process, a member, leaves to the hub to name
 * (pprof_recorder_leave_shared). Thread-safe. */
char *pp_member_hub_maps(void);

#endif /* PP_TREE_H */
