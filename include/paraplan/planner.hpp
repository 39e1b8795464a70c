#pragma once
/// The planner: evaluate one strategy in microseconds, search a space of them in parallel.
///
///   paraplan::Planner planner(plan.hardware, plan.model);
///   paraplan::Estimate e = planner.evaluate(plan.strategy);
///   paraplan::SearchResult r = planner.search(space, options);
///
/// A Planner caches per-layer costs (op times, communication, activations) keyed by what
/// changes them (tp, cp, ep, etp, ep_over_dies, micro-batch, recompute, precision,
/// dispatch, routing); pipeline depth, data parallelism, schedule, ZeRO and the optimizer
/// only recombine them. evaluate() and search() are const and thread-safe.

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "paraplan/export.hpp"
#include "paraplan/estimate.hpp"
#include "paraplan/spec.hpp"

namespace paraplan {

/// Where the step time goes, seconds per step on the bottleneck pipeline rank. The terms
/// add up to step_time_s: compute + tp_comm + ep_comm + pp_comm + dp_comm + pp_bubble +
/// optimizer + queueing + offload (exposed_comm = tp + ep + pp + dp).
struct TimeBreakdown {
  double compute = 0;       ///< micro-batches x (F + B + W) compute of the bottleneck rank
  double tp_comm = 0;       ///< exposed TP (and CP) communication
  double ep_comm = 0;       ///< exposed EP dispatch / combine
  double pp_comm = 0;       ///< exposed pipeline send/recv
  double dp_comm = 0;       ///< exposed gradient reduce-scatter / parameter all-gather
  double pp_bubble = 0;     ///< the schedule's bubble
  double optimizer = 0;     ///< optimizer step (on host when offloaded)
  double queueing = 0;      ///< Kingman waits of pipelined dispatch chunks
  double offload = 0;       ///< activation offload transfers compute could not hide
  double exposed_comm = 0;  ///< tp + ep + pp + dp
};

/// Peak memory of the worst pipeline rank, bytes per device.
struct MemoryBreakdown {
  double weights = 0, gradients = 0, optimizer_states = 0, activations = 0, buffers = 0,
         reserve = 0, total = 0, capacity = 0;
  int stage = 0;            ///< the worst pipeline rank
  double host_per_node = 0; ///< host memory for offloaded optimizer states, per node
};

/// The prediction for one strategy (DESIGN.md sec. 5 keys).
struct Estimate {
  Strategy strategy;
  bool valid = true;                         ///< false: broke a rule (see reasons)
  bool feasible = true;                      ///< fits in device (and host) memory
  std::vector<std::string> infeasible_reasons;
  double step_time_s = 0;
  double tokens_per_device_per_s = 0;        ///< TGS = global_batch x seq / (step x devices)
  double tokens_per_die_per_s = 0;
  double mfu = 0;   ///< model FLOP (6N + causal attention once) / (step x devices x BF16 peak)
  double hfu = 0;   ///< as mfu, adding recomputed forward FLOP
  TimeBreakdown time_s;
  MemoryBreakdown memory_bytes;
  int micro_batches = 0;                     ///< per step per DP rank
  int devices = 0;
  std::string bottleneck;                    ///< the largest time term, in words
  /// Per-micro-batch times of the bottleneck rank: forward, input-grad (+ recompute),
  /// weight-grad, including exposed TP/EP communication.
  double stage_f_s = 0, stage_b_s = 0, stage_w_s = 0;
  /// Whether step_time_s comes from the event simulation of the schedule (evaluate, and
  /// the re-timed top results of a search) rather than the closed-form bubble.
  bool simulated = false;
  /// Whether the event simulation was asked for and could not run this schedule (a grid
  /// that would run a task before its input arrives): step_time_s is then the closed form.
  /// False where no simulation was asked for (the search's fast estimate).
  bool simulation_failed = false;
  /// The closed-form step time (the search's fast estimate), for comparison.
  double closed_form_step_s = 0;
};

enum class Progress { Enumerating, Evaluating, Done };

/// One task of the simulated step on one pipeline rank, for timelines (seconds from the
/// step's start).
struct TimelineEvent {
  int stage = 0;          ///< pipeline rank
  std::string stream;     ///< compute | p2p | dp
  std::string kind;       ///< F | B | W (compute), send (p2p), sync (dp), optimizer
  int chunk = 0;          ///< the rank's chunk (virtual stage; DualPipe: 0 own direction, 1 the other)
  int micro = 0;          ///< micro-batch
  double start_s = 0, end_s = 0;
};

/// The simulated step of one strategy.
struct Timeline {
  Schedule schedule = Schedule::OneFOneB;
  int stages = 1;
  int micro_batches = 1;
  double step_time_s = 0;       ///< as Estimate::step_time_s
  double pipeline_s = 0;        ///< the pipeline part: first forward to last weight gradient
  bool ok = true;               ///< false: the schedule cannot run these micro-batches (error)
  std::string error;
  std::vector<TimelineEvent> events;  ///< by stage, then start time
};

/// Options of a search.
struct SearchOptions {
  int threads = 0;            ///< 0 = all cores
  int top = 20;               ///< results kept, best first
  Objective objective = Objective::Tgs;
  bool keep_all = false;      ///< also return every evaluated strategy (for CSV reports)
  /// Called now and then from the calling thread with (done, total); never concurrently.
  std::function<void(std::size_t done, std::size_t total)> progress;
  const std::atomic<bool>* cancel = nullptr;  ///< set to true to stop early
  /// The best this many (at least `top`) by the closed form are re-timed by the event
  /// simulation and ranked by it; 0 = rank by the closed form only.
  int resimulate = 64;
  /// Stop after about this many candidates (whole layouts, in enumeration order); 0 = all.
  std::size_t max_candidates = 0;
  /// Stop after about this many seconds of evaluation; 0 = no limit.
  double budget_seconds = 0;
  /// Return the events of the best plan's simulated step (SearchResult::best_timeline);
  /// false leaves them out (its other fields stay): a scheduler that needs only the ranking
  /// gets a repeated answer without copying thousands of events.
  bool timeline = true;
  /// Branch and bound: skip timing a candidate whose step-time lower bound can enter neither
  /// the results, nor its node count's best, nor the Pareto front. The results are the same
  /// either way (counted in SearchResult::pruned); off with keep_all and the memory objective.
  bool prune = true;
};

/// One rejection rule and how many candidates it rejected.
struct RuleCount {
  std::string rule;
  std::size_t count = 0;
};

/// What a search found.
struct SearchResult {
  std::vector<Estimate> best;        ///< feasible, best first by the objective, at most `top`
  std::vector<Estimate> pareto;      ///< feasible, not dominated in (TGS up, memory headroom up, nodes down)
  std::vector<Estimate> best_per_nodes;  ///< the best feasible strategy of each node count
  std::vector<Estimate> all;         ///< every evaluated strategy, when keep_all
  std::size_t candidates = 0;        ///< combinations enumerated
  std::size_t evaluated = 0;         ///< passed the rules and were evaluated
  std::size_t feasible = 0;          ///< of those, fit in memory
  /// Of those, not timed: their bound could not enter the results. With several threads the
  /// count depends on which worker met which candidate first; the results do not.
  std::size_t pruned = 0;
  std::vector<RuleCount> rejected;   ///< by rule (rules of docs/inputs.md, plus `memory`)
  double seconds = 0;                ///< whole search, wall clock
  double enumerate_seconds = 0;      ///< enumeration and rule checks
  double layer_seconds = 0;          ///< per-layer costs of the distinct keys (parallel)
  double evaluate_seconds = 0;       ///< step, memory and ranking of every candidate (parallel)
  std::size_t layer_keys = 0;        ///< distinct per-layer cost keys computed
  int threads = 1;                   ///< worker threads used
  bool cancelled = false;
  /// Candidates left unevaluated by max_candidates or budget_seconds (0: the whole space).
  std::size_t left_out = 0;
  bool from_cache = false;           ///< the planner answered the same question before
  Timeline best_timeline;            ///< the simulated step of best.front() (empty without one)
  /// When nothing fits: the (at most 20) strategies that came closest, least over capacity first.
  std::vector<Estimate> closest;
};

/// Everything known about one strategy: the estimate and the breakdowns behind it.
struct Evaluation {
  Plan plan;
  Estimate estimate;
  ComputeBreakdown compute;  ///< per layer kind, every op
  CommBreakdown comm;        ///< per layer kind, every transfer and its stages
  MemoryEstimate memory;     ///< per pipeline stage, by component and module
};

/// Evaluates and searches strategies of one model on one hardware.
class PARAPLAN_EXPORT Planner {
 public:
  Planner(HardwareSpec hardware, ModelSpec model);
  ~Planner();
  Planner(const Planner&) = delete;
  Planner& operator=(const Planner&) = delete;

  /// The full prediction for one strategy (its hardware/model fields are ignored).
  /// Loaded specs keep every result finite; a NaN or an infinity (specs built in code with
  /// absurd numbers, or a bug) throws paraplan::Error naming the field, here, in explain(),
  /// timeline() and search().
  [[nodiscard]] Estimate evaluate(const Strategy& s) const;

  /// The simulated step of `s` task by task (for Chrome traces and Gantt charts).
  [[nodiscard]] Timeline timeline(const Strategy& s) const;

  /// The estimate with every breakdown (slower than evaluate: builds the op lists).
  [[nodiscard]] Evaluation explain(const Strategy& s) const;

  /// Every valid strategy of `space` (its hardware/model fields are ignored), evaluated in
  /// parallel and ranked. Results do not depend on the number of threads. The planner keeps
  /// each answer: the same space and options again return it at once (`from_cache`).
  [[nodiscard]] SearchResult search(const SearchSpace& space, const SearchOptions& options) const;

  [[nodiscard]] const HardwareSpec& hardware() const;
  [[nodiscard]] const ModelSpec& model() const;

 private:
  SearchResult search_uncached(const SearchSpace& space, const SearchOptions& options) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Ranks `a` before `b` under `objective` (ties broken by the strategy fields, so the
/// order is total and reproducible).
[[nodiscard]] PARAPLAN_EXPORT bool better(const Estimate& a, const Estimate& b, Objective objective);

}  // namespace paraplan
