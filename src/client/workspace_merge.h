/* Internals shared by the merge files of the workspace module
 * (workspace_merge.c: plan, apply, submit, abort; workspace_merge_state.c:
 * the merge state file, resolve, status).  Never included outside
 * src/client.
 *
 * DIR/.cairn/merge/state is the merge in progress; it is only ever
 * replaced whole (temporary file, fsync, rename, directory fsync), and it
 * names the plan before the first workspace file changes, so a merge
 * killed at any point is finished by --continue or undone by --abort.
 * DIR/.cairn/merge/{ours,theirs,base}/PATH hold the sides of conflicts. */
#ifndef CN_CLIENT_WORKSPACE_MERGE_H
#define CN_CLIENT_WORKSPACE_MERGE_H

#include "workspace_int.h"

/* Reads DIR/.cairn/merge/state into *out (malloc'd; NULL when no merge is
 * in progress).  0, -errno, or CN_E_CORRUPT for a damaged file. */
cn_err_t cn__ws_merge_load(const char *dir, cn_ws_merge_t **out, cn_ws_error_t *err);
/* Writes m as DIR/.cairn/merge/state atomically; m->unresolved is
 * recounted. */
cn_err_t cn__ws_merge_save(const char *dir, cn_ws_merge_t *m, cn_ws_error_t *err);
/* Removes DIR/.cairn/merge and everything under it (the merge is over). */
cn_err_t cn__ws_merge_remove(const char *dir, cn_ws_error_t *err);
/* Appends a path (copied) to m; NULL when out of memory. */
cn_ws_merge_path_t *cn__ws_merge_add(cn_ws_merge_t *m, const char *path);
/* Finds path in m->paths (sorted); NULL when absent. */
cn_ws_merge_path_t *cn__ws_merge_find(cn_ws_merge_t *m, const char *path);
/* DIR/.cairn/merge/SIDE/PATH into out (cap bytes). */
void cn__ws_merge_side_path(const char *dir, const char *side, const char *path, char *out,
                            size_t cap);
/* Copies file src to dst durably (parents created; a temporary file beside
 * dst, fsync, rename): dst never holds a partial copy.  0 or a local
 * error. */
cn_err_t cn__ws_copy_file(const char *src, const char *dst, cn_ws_error_t *err);
/* Writes p[0..n) to dst as cn__ws_copy_file does (mode: 0644 or 0755). */
cn_err_t cn__ws_write_file(const char *dst, const void *p, size_t n, unsigned mode,
                           cn_ws_error_t *err);

/* Applies m's plan to workspace s (workspace_merge_apply.c): ours of
 * conflicts copied aside, the source's one-sided changes written, theirs and
 * base of conflicts fetched aside, small texts merged by lines; then m is
 * saved with phase "stopped".  Safe to run again after an interruption. */
cn_err_t cn__ws_merge_apply(cn_scribe_client_t *cl, cn__ws_state_t *s, cn_ws_merge_t *m,
                            const cn_ws_opts_t *o, cn_ws_error_t *err);

/* Renames (workspace_merge_moves.c).  Lines up the files a side moved
 * since the base with their base files, from og[0..m->n) (MergeRead 4 of
 * m's paths on the source) and the target's own recorded moves: sets
 * `from`, the sides and forced conflicts of the paths involved, adds the
 * paths ours moved files to (m stays sorted).  Before decide. */
cn_err_t cn__ws_merge_line_up(cn_scribe_client_t *cl, const cn__ws_state_t *s, cn_ws_merge_t *m,
                              const cn_scribe_client_origin_t *og, cn_ws_error_t *err);
/* Moves ours' file of every move theirs made (a path with `from` that s
 * tracks, to a path s does not) in the workspace and records the move in
 * s (saved), so the merge submits a move entry.  Runs again safely. */
cn_err_t cn__ws_merge_move_files(cn__ws_state_t *s, const cn_ws_merge_t *m, cn_ws_error_t *err);

#endif
