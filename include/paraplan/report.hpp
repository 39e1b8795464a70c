#pragma once
/// Report writers: text tables for people, JSON for programs (keys per DESIGN.md sec. 5).

#include <string>

#include "paraplan/estimate.hpp"
#include "paraplan/export.hpp"
#include "paraplan/planner.hpp"
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

/// A readable report of a compute breakdown: counts, per-layer forward/backward times (with
/// the layer's TP / EP communication as executed when `comm` is given) and every op with its
/// shape, efficiency, kernels, achieved rate, what bounds it and its time. `all_ops` = false
/// lists forward ops only.
[[nodiscard]] PARAPLAN_EXPORT std::string compute_text(const Plan& plan, const ComputeBreakdown& b,
                                                       bool all_ops, const CommBreakdown* comm = nullptr);

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

/// The full estimate of one strategy as JSON: DESIGN.md sec. 5's pinned keys (strategy,
/// feasible, infeasible_reasons, step_time_s, tokens_per_device_per_s, tokens_per_die_per_s,
/// mfu, time_s, memory_bytes, model, layers) plus stages, routing and stage times.
[[nodiscard]] PARAPLAN_EXPORT std::string estimate_json(const Plan& plan, const Estimate& e,
                                                        const ComputeBreakdown& b,
                                                        const CommBreakdown& comm,
                                                        const MemoryEstimate& mem);

/// evaluate's JSON for a full evaluation (estimate_json of its parts).
[[nodiscard]] PARAPLAN_EXPORT std::string evaluation_json(const Evaluation& ev);

/// evaluate's text: ops, transfers, memory per stage, the step and its bottleneck.
[[nodiscard]] PARAPLAN_EXPORT std::string evaluation_text(const Evaluation& ev, bool all_ops);

/// Where the step time goes, throughput, memory verdict and bottleneck, for people.
[[nodiscard]] PARAPLAN_EXPORT std::string estimate_text(const Plan& plan, const Estimate& e);

/// Aligned table of the top `rows` strategies and a line on why the runners-up lose.
[[nodiscard]] PARAPLAN_EXPORT std::string rank_table(const SearchResult& r, std::size_t rows);

/// One line: combinations, evaluated, feasible, seconds, rejections by rule.
[[nodiscard]] PARAPLAN_EXPORT std::string rank_summary(const SearchResult& r);

/// One CSV row per estimate: strategy fields, headline metrics, time and memory components.
[[nodiscard]] PARAPLAN_EXPORT std::string rank_csv(const std::vector<Estimate>& all);

/// `{"results": [estimate, ...], "pareto": [...], "evaluated": N, "feasible": N, "seconds": S, ...}`.
[[nodiscard]] PARAPLAN_EXPORT std::string rank_json(const SpacePlan& space, const SearchResult& r);

/// Markdown report: ranked table, why the runners-up lose, Pareto front, rejections by rule,
/// `best_detail` (the best strategy's breakdown as text) and a Mermaid gantt of its pipeline.
[[nodiscard]] PARAPLAN_EXPORT std::string rank_markdown(const SpacePlan& space, const SearchResult& r,
                                                        const std::string& best_detail);

/// One self-contained HTML page (inline SVG, no scripts or network): the ranked table, TGS
/// against node count per layout, the best plan's memory per stage against capacity, the
/// best plans' time by component, TGS against memory with the Pareto front, and the best
/// plan's simulated pipeline. `best_memory` is the best plan's per-stage memory.
[[nodiscard]] PARAPLAN_EXPORT std::string rank_html(const SpacePlan& space, const SearchResult& r,
                                                    const MemoryEstimate& best_memory);

/// A Mermaid `gantt` block of the simulated step (Planner::timeline): one section per
/// stage, compute tasks of the first `micro` micro-batches, titled with the schedule; ms.
[[nodiscard]] PARAPLAN_EXPORT std::string gantt(const Timeline& tl, int micro);

/// Chrome trace JSON of the simulated step (Perfetto, chrome://tracing): one process per
/// pipeline stage, one thread per stream (compute, p2p, dp), complete events in microseconds.
[[nodiscard]] PARAPLAN_EXPORT std::string chrome_trace(const Timeline& tl, const std::string& title);

}  // namespace paraplan
