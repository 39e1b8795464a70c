/* paraplan C ABI: opaque handles, JSON text out, explicit free functions.
 *
 *   paraplan_planner* p = NULL;
 *   char* err = NULL;
 *   if (paraplan_planner_load("br166-ubbv2", "deepseek-v3", &p, &err) != PARAPLAN_OK) { ...; paraplan_free(err); }
 *   char* json = NULL;
 *   paraplan_evaluate(p, "nodes: 16\nparallel: {pp: 16, dp: 8, ep: 16}\n...", &json, &err);
 *   ... paraplan_free(json); paraplan_planner_free(p);
 *
 * Every function returns a status; on failure *error (if error is not NULL) receives a
 * message (file:line:col diagnostics for bad input) to release with paraplan_free. JSON
 * keys follow DESIGN.md sec. 5. Functions on one planner may run concurrently.
 *
 * YAML strings (paraplan_planner_from_strings, paraplan_evaluate, paraplan_search) are not
 * trusted: their `extends:` and a strategy's `hardware:` / `model:` may name built-in
 * presets, and files only under the planner's include directory (none by default; see
 * paraplan_planner_from_strings_in and paraplan_planner_set_include_dir). No other file is
 * opened, so no error message shows anything of one.
 *
 * Handles are checked: a planner handle is looked up in a registry of live planners before
 * use, so a freed (or doubly freed), NULL or garbage handle gives PARAPLAN_BAD_INPUT, never
 * a crash, and handle values are never reused. A planner freed while another thread is in
 * a call on it lives until that call returns. */
#ifndef PARAPLAN_H
#define PARAPLAN_H

#include "paraplan/export.hpp"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum paraplan_status {
  PARAPLAN_OK = 0,
  PARAPLAN_INTERNAL_ERROR = 1,
  PARAPLAN_BAD_INPUT = 2,    /* a file or YAML text with problems, or a NULL argument */
  PARAPLAN_INFEASIBLE = 3    /* search: no strategy fits */
} paraplan_status;

typedef struct paraplan_planner paraplan_planner;

/* The library version, "MAJOR.MINOR.PATCH" (static storage, do not free). */
PARAPLAN_EXPORT const char* paraplan_version(void);

/* A planner for a hardware and a model given as built-in names or file paths. */
PARAPLAN_EXPORT paraplan_status paraplan_planner_load(const char* hardware, const char* model,
                                                      paraplan_planner** out, char** error);

/* A planner for a hardware and a model given as YAML text; their references may name
 * built-in presets only. */
PARAPLAN_EXPORT paraplan_status paraplan_planner_from_strings(const char* hardware_yaml,
                                                              const char* model_yaml,
                                                              paraplan_planner** out, char** error);

/* The same, the strings' references (and those of later paraplan_evaluate / paraplan_search
 * strings on this planner) also reaching regular files under include_dir (symlinks and `..`
 * resolved first; relative paths resolve against it). include_dir NULL or "": presets only.
 * An include_dir that is not a directory is PARAPLAN_BAD_INPUT. */
PARAPLAN_EXPORT paraplan_status paraplan_planner_from_strings_in(const char* hardware_yaml,
                                                                 const char* model_yaml,
                                                                 const char* include_dir,
                                                                 paraplan_planner** out,
                                                                 char** error);

/* Sets the folder whose files later paraplan_evaluate / paraplan_search strings on `planner`
 * may reference (NULL or "": built-in presets only, the default). */
PARAPLAN_EXPORT paraplan_status paraplan_planner_set_include_dir(paraplan_planner* planner,
                                                                 const char* include_dir,
                                                                 char** error);

/* One strategy (YAML strategy keys; hardware/model keys ignored): *json receives the full
 * estimate (paraplan evaluate --format json). */
PARAPLAN_EXPORT paraplan_status paraplan_evaluate(const paraplan_planner* planner,
                                                  const char* strategy_yaml, char** json,
                                                  char** error);

/* A search space (YAML space keys): *json receives {"results": [...], "pareto": [...],
 * "evaluated": N, "feasible": N, "seconds": S, ...}. top <= 0: the space's; threads <= 0: all
 * cores. Returns PARAPLAN_INFEASIBLE (with the JSON) when nothing fits. */
PARAPLAN_EXPORT paraplan_status paraplan_search(const paraplan_planner* planner, const char* space_yaml,
                                                int top, int threads, char** json, char** error);

/* Releases a string returned by this library (NULL is fine). */
PARAPLAN_EXPORT void paraplan_free(char* text);

/* Releases a planner (NULL, or a handle that is not a live planner, is ignored). */
PARAPLAN_EXPORT void paraplan_planner_free(paraplan_planner* planner);

#ifdef __cplusplus
}
#endif

#endif /* PARAPLAN_H */
