#pragma once
// JSON pieces shared by the report writers: each adds keys to an open object.

#include "paraplan/estimate.hpp"
#include "paraplan/planner.hpp"
#include "report/json.hpp"

namespace paraplan::report {

/// "TP1 PP16 DP8 EP16 VPP2 SP die-EP": the parallel layout in the tables' words.
std::string layout_label(const Strategy& s);

/// The resolved strategy object (every field).
void write_strategy_object(JsonWriter& w, const Plan& plan);

/// One layer kind's forward / backward time for one micro-batch as executed: its compute,
/// with its TP communication as the strategy runs it (cost::tp_exposed), and its EP
/// communication as the step runs it (cost::ep_exposed over both passes' compute, shared as
/// the passes' transfers are).
struct LayerTimes {
  double forward_s = 0, backward_s = 0;
};
LayerTimes executed_layer(const Plan& plan, const LayerEstimate& l, const LayerComm* comm);

/// `model`, `tokens`, `layers` (compute ops, and comm ops when `comm`), `routing`, `pp_send`.
void write_breakdown_fields(JsonWriter& w, const Plan& plan, const ComputeBreakdown& b,
                            const CommBreakdown* comm);

/// The headline keys of an estimate (DESIGN.md sec. 5): feasible, infeasible_reasons,
/// step_time_s, tokens_per_device_per_s, tokens_per_die_per_s, mfu, hfu, bottleneck,
/// micro_batches, devices, time_s {...}, memory_bytes {...}.
void write_estimate_fields(JsonWriter& w, const Estimate& e);

}  // namespace paraplan::report
