/* Evaluate one strategy and run a small search with the C API. */
#include <paraplan/paraplan.h>

#include <stdio.h>

int main(void) {
  paraplan_planner* planner = NULL;
  char* error = NULL;
  char* json = NULL;
  if (paraplan_planner_load("h800-ib", "deepseek-v3", &planner, &error) != PARAPLAN_OK) {
    fprintf(stderr, "%s\n", error);
    paraplan_free(error);
    return 2;
  }
  const char* strategy =
      "nodes: 256\n"
      "parallel: {pp: 16, dp: 128, ep: 64}\n"
      "training: {micro_batch: 1, global_batch: 15360, precision: fp8, recompute: full}\n"
      "moe: {dispatch: deepep}\n"
      "schedule: dualpipe\n";
  if (paraplan_evaluate(planner, strategy, &json, &error) != PARAPLAN_OK) {
    fprintf(stderr, "%s\n", error);
    paraplan_free(error);
    paraplan_planner_free(planner);
    return 2;
  }
  printf("evaluate: %.200s...\n", json);
  paraplan_free(json);

  const char* space =
      "nodes: [256]\n"
      "parallel: {tp: 1, pp: [8, 16], ep: [32, 64]}\n"
      "training: {micro_batch: [1, 2], global_batch: 15360, recompute: [full], precision: fp8}\n"
      "moe: {dispatch: [alltoall, deepep]}\n";
  paraplan_status status = paraplan_search(planner, space, 3, 0, &json, &error);
  if (status == PARAPLAN_OK || status == PARAPLAN_INFEASIBLE) {
    printf("search (status %d): %.200s...\n", (int)status, json);
    paraplan_free(json);
  } else {
    fprintf(stderr, "%s\n", error);
    paraplan_free(error);
  }
  paraplan_planner_free(planner);
  return status == PARAPLAN_OK ? 0 : 3;
}
