#pragma once
/// Report writers: text tables for people, JSON for programs (keys per DESIGN.md sec. 5).

#include <string>

#include "paraplan/estimate.hpp"
#include "paraplan/export.hpp"
#include "paraplan/spec.hpp"

namespace paraplan {

/// The resolved strategy as a JSON object (every field, defaults filled in).
[[nodiscard]] PARAPLAN_EXPORT std::string strategy_json(const Plan& plan);

/// `{"strategy": ..., "model": {...}, "layers": [...]}` for a compute breakdown; with
/// `comm`, each layer also lists its communication ops (kind "comm", with stages) and a
/// "routing" object is added.
[[nodiscard]] PARAPLAN_EXPORT std::string compute_json(const Plan& plan, const ComputeBreakdown& b,
                                                       const CommBreakdown* comm = nullptr);

/// A readable report of the communication of a strategy: per layer kind every op with its
/// stages, links, volumes and times, the routing statistics and the pipeline send.
[[nodiscard]] PARAPLAN_EXPORT std::string comm_text(const Plan& plan, const CommBreakdown& c);

/// A readable report of a compute breakdown: counts, per-layer forward/backward times and
/// every op with its shape, efficiency and time. `all_ops` = false lists forward ops only.
[[nodiscard]] PARAPLAN_EXPORT std::string compute_text(const Plan& plan, const ComputeBreakdown& b,
                                                       bool all_ops);

/// Memory of a strategy as a JSON object: the pinned `memory_bytes` keys (DESIGN.md sec. 5:
/// weights, gradients, optimizer_states, activations, buffers, reserve, total, capacity) for
/// the worst stage, `feasible`, `infeasible_reasons`, `worst_stage`, `micro_batches`,
/// `host` {bytes_per_node, capacity} and `stages` [...] with each stage's components,
/// activations by module and buffers by kind. Bytes per device.
[[nodiscard]] PARAPLAN_EXPORT std::string memory_json(const Plan& plan, const MemoryEstimate& m);

/// A readable memory report: one row per pipeline stage (layers, in-flight sets, each
/// component, total), the worst stage's activations by module and buffers, host memory
/// and the feasibility verdict with its reasons.
[[nodiscard]] PARAPLAN_EXPORT std::string memory_text(const Plan& plan, const MemoryEstimate& m);

}  // namespace paraplan
