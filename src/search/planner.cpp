// Planner: one strategy from cached layer costs, and the parallel search over a space.

#include "paraplan/planner.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <optional>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <thread>
#include <unordered_map>
#include <tuple>
#include <type_traits>

#include "config/pipeline_layout.hpp"
#include "cost/comm.hpp"
#include "cost/memory.hpp"
#include "model/op_graph.hpp"
#include "model/params.hpp"
#include "paraplan/errors.hpp"
#include "paraplan/model.hpp"
#include "schedule/layout.hpp"
#include "schedule/simulate.hpp"
#include "search/layer_costs.hpp"
#include "search/step.hpp"

namespace paraplan {

namespace {
// Collective times of one search worker, keyed by (op, size, stride, dies, bytes): a
// handful of distinct values per search, looked up without locks.
struct CommKey {
  int op = 0, size = 0;
  long long stride = 0;
  bool dies = false;
  double bytes = 0;
  bool operator==(const CommKey& o) const {
    return op == o.op && size == o.size && stride == o.stride && dies == o.dies && bytes == o.bytes;
  }
};
// Collective times already computed, keyed by what they depend on. A search asks a handful
// of distinct keys many thousand times per thread: open addressing over a power-of-two
// table (no node per entry), the key's fields mixed as integers (the bytes by their bits).
class CommMemo {
 public:
  [[nodiscard]] const double* find(const CommKey& k) const {
    for (std::size_t i = hash(k) & mask();; i = (i + 1) & mask()) {
      const Slot& s = slots_[i];
      if (!s.used) return nullptr;
      if (s.key == k) return &s.value;
    }
  }
  void put(const CommKey& k, double v) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    insert(k, v);
  }

 private:
  struct Slot {
    CommKey key;
    double value = 0;
    bool used = false;
  };
  static std::size_t hash(const CommKey& k) {
    std::uint64_t h = 1469598103934665603ull;
    auto mix = [&](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix(static_cast<std::uint64_t>(k.op));
    mix(static_cast<std::uint64_t>(k.size));
    mix(static_cast<std::uint64_t>(k.stride));
    mix(k.dies ? 1u : 0u);
    std::uint64_t bits = 0;
    std::memcpy(&bits, &k.bytes, sizeof bits);
    mix(bits);
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
  [[nodiscard]] std::size_t mask() const { return slots_.size() - 1; }
  void insert(const CommKey& k, double v) {
    std::size_t i = hash(k) & mask();
    while (slots_[i].used && !(slots_[i].key == k)) i = (i + 1) & mask();
    if (!slots_[i].used) ++size_;
    slots_[i] = Slot{k, v, true};
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(2 * old.size(), Slot{});
    size_ = 0;
    for (const Slot& s : old) {
      if (s.used) insert(s.key, s.value);
    }
  }
  std::vector<Slot> slots_ = std::vector<Slot>(64);
  std::size_t size_ = 0;
};
}  // namespace

// ---- the last guard against non-finite results --------------------------------------------
// Input bounds (units::accepted_range, fractions >= 1e-6) keep every result finite, so a NaN
// or an infinity in an estimate is a bug. It is an error naming the field, never a number
// printed as `inf` or `nan`, nor one ranked (a NaN breaks the sort's order).
namespace {

// One named number of an estimate.
struct Field {
  const char* name = nullptr;  ///< "time_s.compute"; nullptr: none
  double value = 0;
};

// Every named number of an estimate, in one list: `f(name, value)` for each.
template <typename F>
void each_field(const Estimate& e, F&& f) {
  const TimeBreakdown& t = e.time_s;
  const MemoryBreakdown& m = e.memory_bytes;
  f("step_time_s", e.step_time_s);
  f("tokens_per_device_per_s", e.tokens_per_device_per_s);
  f("tokens_per_die_per_s", e.tokens_per_die_per_s);
  f("mfu", e.mfu);
  f("hfu", e.hfu);
  f("time_s.compute", t.compute);
  f("time_s.tp_comm", t.tp_comm);
  f("time_s.ep_comm", t.ep_comm);
  f("time_s.pp_comm", t.pp_comm);
  f("time_s.dp_comm", t.dp_comm);
  f("time_s.pp_bubble", t.pp_bubble);
  f("time_s.optimizer", t.optimizer);
  f("time_s.queueing", t.queueing);
  f("time_s.offload", t.offload);
  f("time_s.exposed_comm", t.exposed_comm);
  f("memory_bytes.weights", m.weights);
  f("memory_bytes.gradients", m.gradients);
  f("memory_bytes.optimizer_states", m.optimizer_states);
  f("memory_bytes.activations", m.activations);
  f("memory_bytes.buffers", m.buffers);
  f("memory_bytes.reserve", m.reserve);
  f("memory_bytes.total", m.total);
  f("memory_bytes.capacity", m.capacity);
  f("memory_bytes.host_per_node", m.host_per_node);
  f("stage_f_s", e.stage_f_s);
  f("stage_b_s", e.stage_b_s);
  f("stage_w_s", e.stage_w_s);
  f("closed_form_step_s", e.closed_form_step_s);
}

// The first non-finite field of `e`, or a Field without a name when every one is finite.
// Cheap enough for the search's inner loop: a NaN or an infinity makes the sum non-finite,
// one test for the usual case, the names only when it fails (the sum of finite fields may
// overflow; then the scan finds none).
Field non_finite_field(const Estimate& e) {
  double sum = 0;
  each_field(e, [&](const char*, double v) { sum += v; });
  if (std::isfinite(sum)) return {};
  Field first;
  each_field(e, [&](const char* name, double v) {
    if (first.name == nullptr && !std::isfinite(v)) first = {name, v};
  });
  return first;
}

std::string describe(const Strategy& s) {
  if (!s.name.empty()) return "`" + s.name + "`";
  const Parallel& p = s.parallel;
  return std::to_string(s.nodes) + " nodes TP" + std::to_string(p.tp) + " PP" + std::to_string(p.pp) + " DP" +
         std::to_string(p.dp) + " EP" + std::to_string(p.ep) + " mb" + std::to_string(s.training.micro_batch);
}

[[noreturn]] void non_finite(const Strategy& s, const std::string& field, double value) {
  throw Error("the estimate of " + describe(s) + " has a non-finite `" + field + "` (" +
              (std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf") +
              "); this is a bug, please report it with the input files");
}

void require_finite(const Estimate& e) {
  if (!e.valid) return;
  if (const Field f = non_finite_field(e); f.name != nullptr) non_finite(e.strategy, f.name, f.value);
}

// Every number of the breakdowns `paraplan evaluate` prints.
void require_finite(const Evaluation& ev) {
  require_finite(ev.estimate);
  const Strategy& s = ev.plan.strategy;
  auto check = [&](const std::string& field, double v) {
    if (!std::isfinite(v)) non_finite(s, field, v);
  };
  for (const LayerEstimate& l : ev.compute.layers) {
    const std::string at = "compute." + l.kind;
    check(at + ".forward_s", l.forward_s);
    check(at + ".backward_s", l.backward_s);
    check(at + ".recompute_s", l.recompute_s);
    check(at + ".weight_grad_s", l.weight_grad_s);
    for (const OpEstimate& o : l.ops) {
      const std::string op = at + "." + o.name + " (" + o.phase + ")";
      check(op + ".time_s", o.time_s);
      check(op + ".flops", o.flops);
      check(op + ".bytes", o.bytes);
      check(op + ".efficiency", o.efficiency);
      check(op + ".achieved", o.achieved);
    }
  }
  for (const LayerComm& l : ev.comm.layers) {
    const std::string at = "comm." + l.kind;
    check(at + ".forward_s", l.forward_s);
    check(at + ".backward_s", l.backward_s);
    check(at + ".queueing_s", l.queueing_s);
    for (const CommOpEstimate& o : l.ops) {
      const std::string op = at + "." + o.name + " (" + o.phase + ")";
      check(op + ".time_s", o.time_s);
      check(op + ".compute_s", o.compute_s);
      check(op + ".queueing_s", o.queueing_s);
      for (const CommStageEstimate& st : o.stages) {
        check(op + "." + st.name + ".bytes", st.bytes);
        check(op + "." + st.name + ".bandwidth", st.bandwidth);
        check(op + "." + st.name + ".time_s", st.time_s);
      }
    }
  }
  check("comm.pp_send.time_s", ev.comm.pp_send.time_s);
  for (const StageMemory& m : ev.memory.stages) {
    const std::string at = "memory.stage" + std::to_string(m.stage);
    check(at + ".weights", m.weights);
    check(at + ".gradients", m.gradients);
    check(at + ".optimizer_states", m.optimizer_states);
    check(at + ".activations", m.activations);
    check(at + ".buffers", m.buffers);
    check(at + ".total", m.total);
    check(at + ".host_bytes", m.host_bytes);
  }
}

void require_finite(const Timeline& tl, const Strategy& s) {
  auto check = [&](const std::string& field, double v) {
    if (!std::isfinite(v)) non_finite(s, field, v);
  };
  check("timeline.step_time_s", tl.step_time_s);
  check("timeline.pipeline_s", tl.pipeline_s);
  for (const TimelineEvent& e : tl.events) {
    check("timeline.stage" + std::to_string(e.stage) + "." + e.kind + ".start_s", e.start_s);
    check("timeline.stage" + std::to_string(e.stage) + "." + e.kind + ".end_s", e.end_s);
  }
}

}  // namespace

struct Planner::Impl {
  HardwareSpec hw;
  ModelSpec model;
  search::LayerCostCache cache;
  // Collective times that depend on the DP / PP layout, keyed by (op, size, stride, dies,
  // bytes): a handful of distinct values per search.
  // Results of earlier searches, keyed by the space and the options that shape the result.
  // The events of the best plan's timeline are kept apart: a caller that does not ask for
  // them gets the rest without copying them. At most kCachedResults answers are kept; the
  // oldest goes first.
  struct Cached {
    SearchResult result;  // best_timeline without its events
    std::vector<TimelineEvent> events;
  };
  static constexpr std::size_t kCachedResults = 64;
  mutable std::mutex result_mutex;
  mutable std::map<std::string, Cached> results;
  mutable std::deque<std::string> result_order;  // keys, oldest first
  mutable std::mutex comm_mutex;
  mutable CommMemo comm_cache;

  Impl(HardwareSpec h, ModelSpec m)
      : hw(std::move(h)), model(std::move(m)), cache(hw, model) {}

  double collective_time(Collective op, int size, long long stride, bool dies, double bytes,
                         CommMemo* memo) const {
    if (size <= 1 || bytes <= 0) return 0.0;
    const CommKey key{static_cast<int>(op), size, stride, dies, bytes};
    if (memo != nullptr) {
      if (const double* t = memo->find(key)) return *t;
      const double t = cost::collective(hw, op, bytes, cost::place(hw, size, stride, dies)).time_s;
      memo->put(key, t);
      return t;
    }
    {
      std::lock_guard lock(comm_mutex);
      if (const double* t = comm_cache.find(key)) return *t;
    }
    const double t = cost::collective(hw, op, bytes, cost::place(hw, size, stride, dies)).time_s;
    std::lock_guard lock(comm_mutex);
    comm_cache.put(key, t);
    return t;
  }

  // PP send and DP synchronisation of a strategy (the layer-independent communication).
  search::StrategyComm strategy_comm(const Strategy& s, const MemoryEstimate& mem, CommMemo* memo) const {
    search::StrategyComm c;
    const Parallel& p = s.parallel;
    const double h = model.hidden;
    const model::Tokens tok = model::tokens_of(model, s, hw, 1.0);
    if (p.pp > 1) {
      const bool sp = p.sp || (model.moe.has_value() && p.tp > 1);
      const double bytes = tok.per_device * h * 2 / (sp ? p.tp : 1);
      c.pp_send_s = collective_time(Collective::SendRecv, 2, static_cast<long long>(p.tp) * p.cp * p.dp,
                                    false, bytes, memo);
    }
    if (mem.stages.empty()) return c;
    // The rank with the most parameters finishes its DP synchronisation last.
    double dense = 0, expert = 0;
    for (const StageMemory& st : mem.stages) {
      if (st.dense_params + st.expert_params > dense + expert) {
        dense = st.dense_params;
        expert = st.expert_params;
      }
    }
    const int zero = s.training.zero;
    const bool dies = s.ep_over_dies && hw.device.dies > 1;
    const int edp = static_cast<int>(std::max<long long>(
        1, static_cast<long long>(p.tp) * p.cp * p.dp * (dies ? hw.device.dies : 1) / (static_cast<long long>(p.ep) * p.etp)));
    const long long expert_stride = static_cast<long long>(p.ep) * p.etp;
    const double grad = s.training.bf16_grads ? 2.0 : 4.0;
    // BF16 parameters are gathered, FP8 ones with FP8 parameters (the stage's BF16 embedding
    // or head, a few percent of its parameters, is counted at the same width).
    const double param = s.training.fp8_weights_only() ? 1.0 : 2.0;
    // FP32 (or BF16) main gradients reduced: all-reduced without ZeRO, else reduce-scattered
    // and the updated parameters gathered after the optimizer (a window of its own).
    auto reduce = [&](int group, long long stride, bool on_dies, double params) {
      if (group <= 1 || params <= 0) return 0.0;
      const bool all_reduce = zero == 0 || s.training.grad_all_reduce;
      return collective_time(all_reduce ? Collective::AllReduce : Collective::ReduceScatter, group, stride,
                             on_dies, grad * params, memo);
    };
    auto param_gather = [&](int group, long long stride, bool on_dies, double params) {
      if (zero == 0 || group <= 1 || params <= 0) return 0.0;
      return collective_time(Collective::AllGather, group, stride, on_dies, param * params, memo);
    };
    // ZeRO-3 gathers the weights again for every micro-batch's forward and backward.
    auto gather = [&](int group, long long stride, bool on_dies, double params) {
      return zero < 3 ? 0.0 : 2.0 * param_gather(group, stride, on_dies, params);
    };
    // Dense parameters are ZeRO-sharded over dp x cp ranks (stride tp), or with hybrid
    // sharding (parallel.dp_replicate R) inside each replica of dp x cp / R neighbouring ranks
    // (FSDP's HYBRID_SHARD keeps a replica in a node where it fits), whose gathers and
    // reduce-scatters stay there; the replicas then all-reduce their shards of the gradients
    // over R ranks a replica apart. Expert parameters keep their expert-data-parallel sharding.
    const int replicas = std::max(1, p.dp_replicate);
    const int shard_group = p.dense_shard_ranks();
    auto replica_sync = [&](double params) {
      if (replicas <= 1 || params <= 0) return 0.0;
      return collective_time(Collective::AllReduce, replicas, static_cast<long long>(p.tp) * shard_group, false,
                             grad * params / shard_group, memo);
    };
    c.dp_param_s = param_gather(shard_group, p.tp, false, dense) + param_gather(edp, expert_stride, dies, expert);
    c.dp_s = reduce(shard_group, p.tp, false, dense) + replica_sync(dense) + reduce(edp, expert_stride, dies, expert) +
             c.dp_param_s;
    c.dp_gather_s = gather(shard_group, p.tp, false, dense) + gather(edp, expert_stride, dies, expert);
    // Tied embeddings with a pipeline: the first stage's table and the last stage's output
    // head are one parameter, so after the backward their gradients are all-reduced between
    // the two ranks (Megatron-LM finalize_model_grads, _allreduce_word_embedding_grads, over
    // its embedding group; DeepSpeed's pipeline engine, ReduceTiedGrads before ReduceGrads),
    // the main gradients' width, vocab / tp x hidden. DualPipe's V places both on one rank.
    if (p.pp > 1 && model.tied_embeddings && s.schedule != Schedule::DualPipe && s.schedule != Schedule::DualPipeV) {
      const long long first_to_last = static_cast<long long>(p.tp) * p.cp * p.dp * (p.pp - 1);
      c.tied_s = collective_time(Collective::AllReduce, 2, first_to_last, false,
                                 grad * (static_cast<double>(model.vocab) / p.tp) * h, memo);
    }
    return c;
  }

  // `detail`: the words and per-module memory, and the pipeline timed by the simulation.
  Estimate evaluate(const Strategy& s, bool detail, CommMemo* memo = nullptr) const {
    return evaluate_with(s, *cache.get(s), detail, memo, detail);
  }

  Estimate evaluate_with(const Strategy& s, const search::LayerCosts& costs, bool detail,
                         CommMemo* memo, bool simulate) const {
    return evaluate_memory(s, costs, cost::combine_memory(costs.memory, hw, model, s, detail), detail, memo, simulate);
  }

  // The rest of evaluate_with once the memory (with the same `detail`) is known.
  // Without `detail` the estimate's strategy is left empty, as evaluate_step leaves it.
  Estimate evaluate_memory(const Strategy& s, const search::LayerCosts& costs, const MemoryEstimate& mem, bool detail,
                           CommMemo* memo, bool simulate) const {
    if (!detail && !mem.feasible) {
      // Pruned: a strategy that does not fit is not worth its step time.
      Estimate e;
      e.feasible = false;
      e.infeasible_reasons = mem.infeasible_reasons;
      e.memory_bytes = search::worst_memory(mem);  // in full: the CSV row shows why it does not fit
      return e;
    }
    return search::evaluate_step(hw, model, s, costs, mem, strategy_comm(s, mem, memo), detail, simulate);
  }

  Timeline timeline(const Strategy& s) const {
    const auto costs = cache.get(s);
    const MemoryEstimate mem = cost::combine_memory(costs->memory, hw, model, s, false);
    const search::StrategyComm comm = strategy_comm(s, mem, nullptr);
    const Estimate e = search::evaluate_step(hw, model, s, *costs, mem, comm, false, true);
    Timeline tl;
    tl.schedule = s.schedule;
    tl.stages = std::max(1, s.parallel.pp);
    tl.micro_batches = e.micro_batches;
    tl.step_time_s = e.step_time_s;
    const schedule::Pipeline pl = search::pipeline_of(model, s, *costs, comm);
    schedule::Simulation sim;
    if (s.parallel.pp > 1) {
      sim = schedule::simulate(s.schedule, pl, true);
    } else {
      // One stage: its micro-batches back to back, forward then backward.
      double t = 0;
      const schedule::ChunkTimes& c = pl.ranks.front().front();
      for (int i = 0; i < pl.micro_batches; ++i) {
        for (char k : {'F', 'B', 'W'}) {
          const double d = k == 'F' ? c.f : k == 'B' ? c.b : c.w;
          sim.events.push_back({0, k, 0, i, t, t + d});
          t += d;
        }
      }
      sim.makespan = t;
    }
    // A step of several runs of the schedule: the run again after each drain, its
    // micro-batches numbered on; under torch's pipelining each run ends with its own DP
    // synchronisation (schedule::dp_syncs), the next run after it.
    const int runs = schedule::pipeline_runs(s);
    const int syncs = schedule::dp_syncs(s);
    const double dp = e.time_s.dp_comm / syncs;
    const double period = sim.makespan + (syncs > 1 ? dp : 0.0);
    const std::size_t one_run = sim.events.size();
    for (int k = 1; k < runs; ++k) {
      for (std::size_t i = 0; i < one_run; ++i) {
        schedule::Event ev = sim.events[i];
        ev.micro += k * pl.micro_batches;
        ev.start += k * period;
        ev.end += k * period;
        sim.events.push_back(ev);
      }
    }
    sim.makespan = runs * sim.makespan + (syncs - 1) * dp;
    tl.ok = sim.ok;
    tl.error = sim.error;
    tl.pipeline_s = sim.makespan;
    // Each rank's last task of each synchronised run.
    std::vector<std::vector<double>> last(static_cast<std::size_t>(tl.stages),
                                          std::vector<double>(static_cast<std::size_t>(syncs), 0.0));
    for (const schedule::Event& ev : sim.events) {
      tl.events.push_back({ev.rank, "compute", std::string(1, ev.kind), ev.chunk, ev.micro, ev.start, ev.end});
      const std::size_t run = syncs > 1 ? static_cast<std::size_t>(ev.micro / std::max(1, pl.micro_batches)) : 0;
      double& l = last[static_cast<std::size_t>(ev.rank)][std::min(run, static_cast<std::size_t>(syncs - 1))];
      l = std::max(l, ev.end);
      // The activations (forward) or gradients (backward) on their way to the next rank.
      if (pl.p2p_s > 0 && ev.kind != 'W' && s.parallel.pp > 1) {
        tl.events.push_back({ev.rank, "p2p", "send", ev.chunk, ev.micro, ev.end, ev.end + pl.p2p_s});
      }
    }
    // After each rank's last weight gradient (of each synchronised run): its exposed DP
    // synchronisation, then the optimizer step, as the step time counts them.
    for (int r = 0; r < tl.stages; ++r) {
      double t0 = 0;
      for (int k = 0; k < syncs; ++k) {
        t0 = sim.ok ? last[static_cast<std::size_t>(r)][static_cast<std::size_t>(k)] : 0.0;
        if (dp > 0) tl.events.push_back({r, "dp", "sync", 0, 0, t0, t0 + dp});
      }
      if (e.time_s.optimizer > 0) tl.events.push_back({r, "compute", "optimizer", 0, 0, t0 + dp, t0 + dp + e.time_s.optimizer});
    }
    std::stable_sort(tl.events.begin(), tl.events.end(), [](const TimelineEvent& a, const TimelineEvent& b) {
      return a.stage != b.stage ? a.stage < b.stage : a.start_s < b.start_s;
    });
    return tl;
  }
};

Planner::Planner(HardwareSpec hardware, ModelSpec model)
    : impl_(std::make_unique<Impl>(std::move(hardware), std::move(model))) {}
Planner::~Planner() = default;

const HardwareSpec& Planner::hardware() const { return impl_->hw; }
const ModelSpec& Planner::model() const { return impl_->model; }

Estimate Planner::evaluate(const Strategy& s) const {
  std::vector<RuleViolation> broken = check_rules(s, impl_->hw, impl_->model);
  if (!broken.empty()) {
    Estimate e;
    e.strategy = s;
    e.valid = false;
    e.feasible = false;
    for (const RuleViolation& v : broken) e.infeasible_reasons.push_back("rule " + v.rule + ": " + v.message);
    return e;
  }
  Estimate e = impl_->evaluate(s, true);
  require_finite(e);
  return e;
}

Timeline Planner::timeline(const Strategy& s) const {
  Timeline tl;
  tl.schedule = s.schedule;
  std::vector<RuleViolation> broken = check_rules(s, impl_->hw, impl_->model);
  if (!broken.empty()) {
    tl.ok = false;
    tl.error = "rule " + broken.front().rule + ": " + broken.front().message;
    return tl;
  }
  Timeline simulated = impl_->timeline(s);
  require_finite(simulated, s);
  return simulated;
}

Evaluation Planner::explain(const Strategy& s) const {
  Evaluation ev;
  ev.plan = Plan{impl_->hw, impl_->model, s};
  ev.comm = estimate_comm(ev.plan);
  const double load = balanced_load(s.moe.routing) ? 1.0 : ev.comm.routing.rank_load;
  ev.compute = estimate_compute(ev.plan, load);
  ev.memory = estimate_memory(ev.plan, load);
  ev.estimate = evaluate(s);
  require_finite(ev);
  return ev;
}

namespace {

// Smaller is better.
double objective_value(Objective o, double step_s, double tgs, double mfu, double memory) {
  switch (o) {
    case Objective::Tgs: return -tgs;
    case Objective::StepTime: return step_s;
    case Objective::Mfu: return -mfu;
    case Objective::Memory: return memory;
  }
  return 0;
}

double objective_value(const Estimate& e, Objective o) {
  return objective_value(o, e.step_time_s, e.tokens_per_device_per_s, e.mfu, e.memory_bytes.total);
}

auto strategy_tuple(const Strategy& s) {
  const Parallel& p = s.parallel;
  int modules = 0;
  for (int i = 0; i < kRecomputeModuleCount; ++i) modules |= s.training.recompute.modules[static_cast<std::size_t>(i)] << i;
  return std::make_tuple(s.nodes, p.tp, p.pp, p.dp, p.ep, p.etp, p.vpp, p.cp, static_cast<int>(s.training.cp_comm), p.sp,
                         s.ep_over_dies,
                         s.training.micro_batch, static_cast<int>(s.training.recompute.mode), modules,
                         s.training.zero, static_cast<int>(s.training.optimizer),
                         s.training.optimizer_offload, s.training.activation_offload, s.training.unfused_attention,
                         static_cast<int>(s.training.precision), s.training.fp8_params, static_cast<int>(s.moe.dispatch),
                         s.moe.chunks, static_cast<int>(s.moe.routing), static_cast<int>(s.schedule));
}

}  // namespace

bool better(const Estimate& a, const Estimate& b, Objective objective) {
  const double va = objective_value(a, objective), vb = objective_value(b, objective);
  if (va != vb) return va < vb;
  return strategy_tuple(a.strategy) < strategy_tuple(b.strategy);
}

namespace {

// ---- enumeration ---------------------------------------------------------------------

std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int i = 1; i <= n; ++i) {
    if (n % i == 0) d.push_back(i);
  }
  return d;
}

template <typename T>
std::vector<T> pick(const Choice<T>& c, std::vector<T> automatic) {
  if (c.auto_values) return automatic;
  return c.values.empty() ? automatic : c.values;
}

// `auto` gives every value worth trying; absent gives the default.
template <typename T>
std::vector<T> pick(const Choice<T>& c, std::vector<T> automatic, std::vector<T> absent) {
  if (c.auto_values) return automatic;
  return c.values.empty() ? absent : c.values;
}

template <typename T>
std::vector<T> pick_or(const Choice<T>& c, T fallback) {
  return c.values.empty() || c.auto_values ? std::vector<T>{fallback} : c.values;
}

struct Counter {
  std::map<std::string, std::size_t> by_rule;
};

// The training settings, combined once in the order the loops nested them (micro-batch
// outermost, precision innermost): they do not depend on the parallel layout.
struct TrainingChoice {
  int micro_batch, global_batch;
  bool sp;
  Recompute recompute;
  int recompute_layers;  // training.recompute_layers (0 without recompute)
  int zero;
  Optimizer optimizer;
  bool optimizer_offload, activation_offload;
  Precision precision;
  bool fp8_params;
};

// One parallel layout and schedule: the outer part of a candidate.
struct Layout {
  int nodes, tp, cp, pp, dp;
  bool dies;
  int ep, etp;
  Schedule schedule;
  int vpp;
  CpComm cp_comm;  ///< how the CP group exchanges (one value when cp = 1)
  /// Layouts whose candidates have the same layer key for the same inner choice share a
  /// class (they agree on what the per-layer costs see of a layout).
  int layer_class = 0;
};

// A dispatch scheme with its chunk count (chunks > 1 only for the two-stage schemes).
struct DispatchChoice {
  Dispatch dispatch = Dispatch::AllToAll;
  int chunks = 1;
};

// A space as layouts x inner choices (training settings x dispatch x routing), never as a
// list of strategies: candidate `id` = layout x inner_size + inner, in the order the loops
// of a nested enumeration would meet them (nodes, tp, cp, pp, dies, ep, etp, schedule,
// vpp, then training, dispatch, routing). Memory is the layouts', not the candidates'.
struct Enumeration {
  Strategy base;
  std::vector<Layout> layouts;
  std::vector<TrainingChoice> training;
  std::vector<DispatchChoice> dispatches;
  std::vector<Routing> routings;
  std::size_t inner_size = 0;     // training x dispatches x routings
  std::size_t world_rejected = 0; // combinations the layout loops dropped (rule `world`)
  std::size_t candidates = 0;     // every combination, rejected ones included
  int layer_classes = 0;          // distinct Layout::layer_class values
  int model_layers = 0;
  bool even_chunks = true;        // the layers spread evenly over the chunks (no fixed first / last, no layout string)

  // Whether training choice `c` repeats another on layout `l`: recompute_layers at least the
  // largest chunk's layers recomputes every layer, as 0 does (known when the spread is even).
  bool repeats(const Layout& l, const TrainingChoice& c) const {
    if (c.recompute_layers <= 0 || !even_chunks) return false;
    const int chunks = config::model_chunks(l.pp, l.vpp, l.schedule);
    return c.recompute_layers >= (model_layers + chunks - 1) / chunks;
  }
  // Candidates of layout `l` (inner choices that exist for it).
  std::size_t count(const Layout& l) const {
    std::size_t n = 0;
    for (const TrainingChoice& c : training) n += (c.sp && l.tp == 1) || repeats(l, c) ? 0 : 1;
    return n * (l.ep == 1 ? 1 : dispatches.size()) * routings.size();
  }
  // Whether inner choice `j` exists for layout `l` (SP needs TP; dispatch schemes differ only
  // with an EP group; a partial recompute that covers every layer repeats the full one), and
  // the strategy of a candidate.
  bool exists(const Layout& l, std::size_t j) const {
    const std::size_t nr = routings.size(), nd = dispatches.size();
    const TrainingChoice& c = training[j / (nd * nr)];
    const std::size_t d = (j / nr) % nd;
    return !(c.sp && l.tp == 1) && !(l.ep == 1 && d != 0) && !repeats(l, c);
  }
  void fill(Strategy& s, std::uint64_t id) const {
    const Layout& l = layouts[id / inner_size];
    const std::size_t j = id % inner_size, nr = routings.size(), nd = dispatches.size();
    const TrainingChoice& c = training[j / (nd * nr)];
    s.nodes = l.nodes;
    s.parallel.tp = l.tp;
    s.parallel.cp = l.cp;
    s.parallel.pp = l.pp;
    s.parallel.dp = l.dp;
    s.parallel.ep = l.ep;
    s.parallel.etp = l.etp;
    s.parallel.vpp = l.vpp;
    s.training.cp_comm = l.cp_comm;
    s.parallel.sp = c.sp;
    s.ep_over_dies = l.dies;
    s.schedule = l.schedule;
    s.training.micro_batch = c.micro_batch;
    s.training.global_batch = c.global_batch;
    s.training.recompute = c.recompute;
    s.training.recompute_layers = c.recompute_layers;
    s.training.zero = c.zero;
    s.training.optimizer = c.optimizer;
    s.training.optimizer_offload = c.optimizer_offload;
    s.training.activation_offload = c.activation_offload;
    s.training.precision = c.precision;
    s.training.fp8_params = c.fp8_params;
    s.moe.dispatch = dispatches[(j / nr) % nd].dispatch;
    s.moe.chunks = dispatches[(j / nr) % nd].chunks;
    s.moe.routing = routings[j % nr];
  }
  // The training choice of inner choice `j`.
  std::size_t training_of(std::size_t j) const { return j / (dispatches.size() * routings.size()); }
  // What the rules read of inner choice `j` (config/rules.cpp reads the layout's fields, the
  // base strategy's, and of the inner choice only these): sequence parallel, micro-batch,
  // global batch, and whether moe.chunks > 1 meets a one-transfer dispatch. Candidates of a
  // layout with equal keys break the same first rule.
  std::uint64_t rule_key(std::size_t j) const {
    const std::size_t nr = routings.size(), nd = dispatches.size();
    const TrainingChoice& c = training[j / (nd * nr)];
    const DispatchChoice& d = dispatches[(j / nr) % nd];
    const bool chunks_bad =
        d.chunks > 1 && d.dispatch != Dispatch::SendRecvAllGather && d.dispatch != Dispatch::SendRecvDeepEp;
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(c.global_batch)) << 32) |
           (static_cast<std::uint64_t>(static_cast<std::uint32_t>(c.micro_batch) & 0x3fffffffu) << 2) |
           (static_cast<std::uint64_t>(c.sp) << 1) | static_cast<std::uint64_t>(chunks_bad);
  }
  Strategy strategy(std::uint64_t id) const {
    Strategy s = base;
    fill(s, id);
    return s;
  }
};

// `recompute: auto`: none, Megatron's selective, full, torchtitan's op, and by module (each
// module the model has alone, all of them, and the sets published for DeepSeek-V3: RMSNorm +
// MLA up-projection + SwiGLU (DeepSeek-V3 report sec. 3.2.3, 3.3.2), MLA up-projection + MLP
// (Megatron-Bridge's DeepSeek-V3 recipe)).
std::vector<Recompute> recompute_auto(const ModelSpec& m) {
  std::vector<Recompute> out(4);
  out[1].mode = RecomputeMode::Selective;
  out[2].mode = RecomputeMode::Full;
  out[3].mode = RecomputeMode::Op;
  const bool mla = m.attention.kind == AttentionKind::Mla, moe = m.moe.has_value();
  const bool dense_ffn = !moe || m.moe->dense_layers > 0;
  const bool shared = moe && m.moe->shared_experts > 0;
  std::vector<RecomputeModule> has = {RecomputeModule::CoreAttn, RecomputeModule::LayerNorm};
  if (mla) has.push_back(RecomputeModule::MlaUpProj);
  if (dense_ffn) has.push_back(RecomputeModule::Mlp);
  if (moe) {
    has.push_back(RecomputeModule::Moe);
    has.push_back(RecomputeModule::MoeAct);
  }
  if (shared) has.push_back(RecomputeModule::SharedExperts);
  auto modules = [&](std::initializer_list<RecomputeModule> list) {
    Recompute r;
    r.mode = RecomputeMode::Modules;
    for (RecomputeModule x : list) r.modules[static_cast<std::size_t>(x)] = true;
    if (std::find_if(out.begin(), out.end(), [&](const Recompute& o) { return o.mode == r.mode && o.modules == r.modules; }) ==
        out.end()) {
      out.push_back(r);
    }
  };
  for (RecomputeModule x : has) modules({x});
  Recompute all;
  all.mode = RecomputeMode::Modules;
  for (RecomputeModule x : has) all.modules[static_cast<std::size_t>(x)] = true;
  if (has.size() > 1) out.push_back(all);
  if (mla && moe) {
    modules({RecomputeModule::LayerNorm, RecomputeModule::MlaUpProj, RecomputeModule::MoeAct});
    if (dense_ffn) modules({RecomputeModule::MlaUpProj, RecomputeModule::Mlp});
  }
  return out;
}

Enumeration enumerate(const HardwareSpec& hw, const ModelSpec& m, const SearchSpace& sp) {
  Enumeration e;
  const int dpn = std::max(1, hw.devices_per_node());
  const bool multi_die = hw.device.dies > 1;
  const bool moe = m.moe.has_value();
  std::vector<int> nodes_auto;
  for (int n = 1; n <= hw.max_nodes(); n *= 2) nodes_auto.push_back(n);
  const auto nodes = pick(sp.nodes, nodes_auto);
  // tp, etp: powers of two within the scale-up domain (a node, or the NVLink domain that joins
  // several: GB200 NVL72's 72 GPUs); cp: 1 to 16 (the rules drop what the sequence or the
  // layout does not allow); cp and etp are 1 unless listed or `auto`.
  std::vector<int> tp_auto;
  for (int t = 1; t <= std::max(dpn, hw.devices_per_domain()); t *= 2) tp_auto.push_back(t);
  const auto tps = pick(sp.tp, tp_auto);
  const auto cps = pick(sp.cp, std::vector<int>{1, 2, 4, 8, 16}, std::vector<int>{1});
  // cp_comm: the listed schemes (auto: all four) where cp > 1; p2p when absent.
  const auto cp_comms = pick(sp.cp_comm, std::vector<CpComm>{CpComm::P2p, CpComm::AllGather, CpComm::TorchAllGather, CpComm::A2a},
                             std::vector<CpComm>{CpComm::P2p});
  const std::vector<CpComm> cp_comm_one{cp_comms.front()};  // cp = 1: the scheme does not matter
  const auto etps = pick(sp.etp, moe ? tp_auto : std::vector<int>{1}, std::vector<int>{1});
  // Die-level EP follows the device: a space that asks for it on a one-die device (or a
  // dense model) gets card-level EP instead of no strategy at all.
  auto dies_choices = pick(sp.ep_over_dies, multi_die && moe ? std::vector<bool>{false, true}
                                                             : std::vector<bool>{false});
  if (!multi_die || !moe) dies_choices = {false};
  const auto mbs = pick(sp.micro_batch, std::vector<int>{1, 2, 4, 8});
  const auto gbs = pick_or(sp.global_batch, 1);
  std::vector<Recompute> rc_absent(3);
  rc_absent[1].mode = RecomputeMode::Selective;
  rc_absent[2].mode = RecomputeMode::Full;
  const auto rcs = pick(sp.recompute, recompute_auto(m), rc_absent);
  // training.recompute_layers: the candidates that recompute take each value (auto: every
  // layer, and the first 1, 2, 4, ... of each chunk below the model's layers).
  std::vector<int> rl_auto{0};
  for (int n = 1; n < m.layers; n *= 2) rl_auto.push_back(n);
  const auto rls = pick(sp.recompute_layers, rl_auto, std::vector<int>{0});
  const auto zeros = pick(sp.zero, std::vector<int>{0, 1, 2, 3}, std::vector<int>{1});
  const auto opts = pick(sp.optimizer, std::vector<Optimizer>{Optimizer::Adam, Optimizer::AdamBf16, Optimizer::Adam8bit},
                         std::vector<Optimizer>{Optimizer::Adam});
  const auto offs = pick(sp.optimizer_offload, std::vector<bool>{false, true}, std::vector<bool>{false});
  const auto aoffs = pick(sp.activation_offload, std::vector<bool>{false, true}, std::vector<bool>{false});
  std::vector<Precision> prec_auto{Precision::Bf16};
  if (hw.device.peak(Dtype::Fp8) > 0) prec_auto.push_back(Precision::Fp8);
  const auto precs = pick(sp.precision, prec_auto, std::vector<Precision>{Precision::Bf16});
  // FP8 parameters only mean something with FP8 GEMMs: BF16 candidates take false alone.
  const auto fp8ps = pick(sp.fp8_params, std::vector<bool>{false, true}, std::vector<bool>{false});
  const auto schemes = moe ? pick(sp.dispatch, std::vector<Dispatch>{Dispatch::AllGather, Dispatch::AllToAll,
                                                                      Dispatch::DeepEp, Dispatch::SendRecvAllGather,
                                                                      Dispatch::SendRecvDeepEp})
                           : std::vector<Dispatch>{Dispatch::AllToAll};
  // moe.chunks: the two-stage schemes in each listed chunk count (auto: 1, 2, 4); the others
  // are one transfer.
  const auto chunk_counts = pick(sp.chunks, std::vector<int>{1, 2, 4}, std::vector<int>{1});
  for (Dispatch d : schemes) {
    if (d == Dispatch::SendRecvAllGather || d == Dispatch::SendRecvDeepEp) {
      for (int c : chunk_counts) e.dispatches.push_back({d, c});
    } else {
      e.dispatches.push_back({d, 1});
    }
  }
  e.routings = moe ? pick(sp.routing, std::vector<Routing>{Routing::Uniform}) : std::vector<Routing>{Routing::Uniform};
  const auto schedules = pick(sp.schedule, std::vector<Schedule>{Schedule::OneFOneB, Schedule::Interleaved,
                                                                 Schedule::ZeroBubble, Schedule::DualPipe,
                                                                 Schedule::DualPipeV});
  const auto sps = pick(sp.sp, std::vector<bool>{false, true});
  for (int mb : mbs)
    for (int gb : gbs)
      for (bool spar : sps)
        for (const Recompute& rc : rcs)
          for (int rl : rc.mode == RecomputeMode::None ? std::vector<int>{0} : rls)
          for (int zero : zeros)
            for (Optimizer opt : opts)
              for (bool off : offs)
                for (bool aoff : aoffs)
                  for (Precision prec : precs)
                    for (bool fp8p : fp8ps) {
                      if (fp8p && prec != Precision::Fp8) continue;
                      e.training.push_back({mb, gb, spar, rc, rl, zero, opt, off, aoff, prec, fp8p});
                    }
  e.inner_size = e.training.size() * e.dispatches.size() * e.routings.size();
  e.model_layers = m.layers;
  e.even_chunks = sp.first_stage_layers == 0 && sp.last_stage_layers == 0 && sp.pipeline_layout.empty() &&
                  !sp.embedding_in_split && !sp.loss_in_split;

  Strategy& base = e.base;
  base.hardware = sp.hardware;
  base.model = sp.model;
  base.training.seq_len = sp.seq_len;
  base.moe.imbalance = sp.imbalance;
  base.moe.fp8_dispatch = sp.fp8_dispatch;
  base.moe.gate_at_swiglu = sp.gate_at_swiglu;
  base.training.fp8_storage = sp.fp8_storage;
  base.training.bf16_grads = sp.bf16_grads;
  base.training.grad_sync_micro_batch = sp.grad_sync_micro_batch;
  base.training.fp32_grad_add = sp.fp32_grad_add;
  base.training.grad_all_reduce = sp.grad_all_reduce;
  base.training.cuda_graphs = sp.cuda_graphs;
  base.training.cuda_graphs_full = sp.cuda_graphs_full;
  base.training.fp8_head = sp.fp8_head;
  base.training.unfused_rope = sp.unfused_rope;
  base.moe.fused_mlp = sp.fused_mlp;
  base.training.offload_layers = sp.offload_layers;
  base.training.pipeline_runs = sp.pipeline_runs;
  base.training.repeat_kv = sp.repeat_kv;
  base.training.separate_linears = sp.separate_linears;
  base.training.fp8_recipe = sp.fp8_recipe;
  base.overlap = sp.overlap;
  base.collective_algorithm = sp.collective_algorithm;
  base.training.unfused_attention = sp.unfused_attention;
  base.training.attention_kernel = sp.attention_kernel;
  base.parallel.first_stage_layers = sp.first_stage_layers;
  base.parallel.dp_replicate = sp.dp_replicate;
  base.parallel.pipeline_layout = sp.pipeline_layout;
  base.parallel.last_stage_layers = sp.last_stage_layers;
  base.parallel.embedding_in_split = sp.embedding_in_split;
  base.parallel.loss_in_split = sp.loss_in_split;
  base.training.eager_elementwise = sp.eager_elementwise;
  base.training.eager_loss = sp.loss_eager();
  base.training.unfused_loss = sp.loss_unfused();

  for (int n : nodes) {
    const int devices = n * dpn;
    for (int tp : tps) {
      for (int cp : cps) {
        if (devices % (tp * cp) != 0) {
          ++e.world_rejected;
          continue;
        }
        const int rest = devices / (tp * cp);
        const auto pps = pick(sp.pp, divisors(rest));
        for (int pp : pps) {
          if (rest % pp != 0) {
            ++e.world_rejected;
            continue;
          }
          const int dp = rest / pp;
          if (!sp.dp.auto_values && !sp.dp.values.empty() &&
              std::find(sp.dp.values.begin(), sp.dp.values.end(), dp) == sp.dp.values.end()) {
            continue;  // not asked for
          }
          for (bool dies : dies_choices) {
            std::vector<int> ep_auto{1};
            if (moe) {
              ep_auto.clear();
              const int ranks = tp * cp * dp * (dies ? hw.device.dies : 1);
              for (int ep : divisors(m.moe->routed_experts)) {
                if (ranks % ep == 0) ep_auto.push_back(ep);
              }
            }
            for (int ep : pick(sp.ep, ep_auto)) {
              for (int etp : etps) {
                for (Schedule sched : schedules) {
                  std::vector<int> vpp_auto{1};
                  if (sched == Schedule::Interleaved) vpp_auto = {2, 3, 4, 6, 8};
                  const auto vpps = sched == Schedule::Interleaved ? pick(sp.vpp, vpp_auto) : std::vector<int>{1};
                  for (int vpp : vpps) {
                    for (CpComm how : cp > 1 ? cp_comms : cp_comm_one) {
                      e.layouts.push_back({n, tp, cp, pp, dp, dies, ep, etp, sched, vpp, how});
                      e.candidates += e.count(e.layouts.back());
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  e.candidates += e.world_rejected;
  // Every field of a layer key comes from the layout, the inner choice or the base alone, so
  // two layouts whose first inner choice has the same key agree on every inner choice.
  std::unordered_map<search::LayerKey, int, search::LayerKeyHash> classes;
  for (std::size_t i = 0; i < e.layouts.size() && e.inner_size > 0; ++i) {
    const search::LayerKey k = search::key_of(e.strategy(i * e.inner_size), m.seq_len);
    e.layouts[i].layer_class = classes.emplace(k, static_cast<int>(classes.size())).first->second;
  }
  e.layer_classes = static_cast<int>(classes.size());
  return e;
}

// ---- ranking -------------------------------------------------------------------------

// A feasible candidate as the Pareto front sees it.
struct Point {
  double tgs, headroom;
  int nodes;
  std::uint64_t index;  // the candidate's id (enumeration order)
};

// Candidates not dominated in (TGS up, memory headroom up, nodes down). Sort by TGS
// descending, then keep a point unless an earlier kept one is at least as good on the other
// two; ties in TGS are ordered by index (the enumeration order), so the front is
// deterministic. Returns positions in `pts`, in front order.
std::vector<std::size_t> pareto_front(const std::vector<Point>& pts) {
  std::vector<std::size_t> order(pts.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (pts[a].tgs != pts[b].tgs) return pts[a].tgs > pts[b].tgs;
    return pts[a].index < pts[b].index;
  });
  // A point is dominated when a kept point with at most its nodes has at least its headroom:
  // per node count the most headroom kept so far answers that (few node counts per space).
  std::vector<std::size_t> front;
  std::vector<std::pair<int, double>> most;  // (nodes, most headroom kept), by nodes
  for (std::size_t i : order) {
    const Point& p = pts[i];
    bool dominated = false;
    for (const auto& [nodes, headroom] : most) {
      if (nodes > p.nodes) break;
      if (headroom >= p.headroom) {
        dominated = true;
        break;
      }
    }
    if (dominated) continue;
    front.push_back(i);
    auto at = std::lower_bound(most.begin(), most.end(), p.nodes,
                               [](const std::pair<int, double>& e, int n) { return e.first < n; });
    if (at == most.end() || at->first != p.nodes) {
      most.insert(at, {p.nodes, p.headroom});
    } else {
      at->second = std::max(at->second, p.headroom);
    }
  }
  return front;
}

// A cut of the Pareto front, to ask whether a point is dominated: the points in TGS order
// and, per node count, the most headroom among the first i of them.
class Front {
 public:
  void assign(const std::vector<Point>& front) {
    tgs_.clear();
    nodes_.clear();
    for (const Point& p : front) {
      if (std::find(nodes_.begin(), nodes_.end(), p.nodes) == nodes_.end()) nodes_.push_back(p.nodes);
    }
    std::sort(nodes_.begin(), nodes_.end());
    most_.assign(nodes_.size() * front.size(), -std::numeric_limits<double>::infinity());
    // `front` is pareto_front's order (TGS descending).
    for (std::size_t i = 0; i < front.size(); ++i) {
      tgs_.push_back(front[i].tgs);
      for (std::size_t v = 0; v < nodes_.size(); ++v) {
        double& m = most_[v * front.size() + i];
        m = i > 0 ? most_[v * front.size() + i - 1] : m;
        if (front[i].nodes == nodes_[v]) m = std::max(m, front[i].headroom);
      }
    }
  }
  // A point with at least `tgs`, at least `headroom` and at most `nodes`.
  bool dominates(double tgs, double headroom, int nodes) const {
    // the points with TGS >= tgs are a prefix
    const std::size_t k = static_cast<std::size_t>(
        std::upper_bound(tgs_.begin(), tgs_.end(), tgs, [](double t, double x) { return t > x; }) - tgs_.begin());
    if (k == 0) return false;
    for (std::size_t v = 0; v < nodes_.size() && nodes_[v] <= nodes; ++v) {
      if (most_[v * tgs_.size() + k - 1] >= headroom) return true;
    }
    return false;
  }

 private:
  std::vector<double> tgs_;
  std::vector<int> nodes_;
  std::vector<double> most_;  // [node count][i]
};

}  // namespace

namespace {

// The key of a search: every field's bytes in a fixed order, strings and lists with their
// lengths first, so two different questions never share a key (and no number is rounded,
// as a decimal rendering would).
template <typename T>
void raw(std::string& key, const T& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  key.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void put(std::string& key, const std::string& text) {
  raw(key, text.size());
  key += text;
}

template <typename T>
void put(std::string& key, const Choice<T>& c) {
  raw(key, c.auto_values);
  raw(key, c.values.size());
  for (const T& v : c.values) {
    if constexpr (std::is_same_v<T, Recompute>) {
      raw(key, v.mode);
      for (bool b : v.modules) raw(key, b);
    } else {
      raw(key, v);
    }
  }
}

// Everything of a space and of the options that changes a search's result.
std::string search_key(const SearchSpace& sp, const SearchOptions& o) {
  std::string k;
  k.reserve(256);
  for (const Choice<int>* c : {&sp.nodes, &sp.tp, &sp.pp, &sp.dp, &sp.ep, &sp.etp, &sp.vpp, &sp.cp,
                               &sp.micro_batch, &sp.zero, &sp.global_batch, &sp.chunks}) {
    put(k, *c);
  }
  for (const Choice<bool>* c : {&sp.sp, &sp.ep_over_dies, &sp.optimizer_offload, &sp.activation_offload, &sp.fp8_params}) {
    put(k, *c);
  }
  put(k, sp.precision);
  put(k, sp.recompute);
  put(k, sp.recompute_layers);
  put(k, sp.optimizer);
  put(k, sp.dispatch);
  put(k, sp.cp_comm);
  put(k, sp.routing);
  put(k, sp.schedule);
  put(k, sp.attention_kernel);
  put(k, sp.pipeline_layout);
  for (int v : {sp.first_stage_layers, sp.last_stage_layers, sp.eager_loss, sp.seq_len, sp.pipeline_runs, sp.offload_layers, sp.dp_replicate,
                static_cast<int>(sp.collective_algorithm), static_cast<int>(sp.fp8_recipe), o.top, static_cast<int>(o.objective), o.resimulate}) {
    raw(k, v);
  }
  for (bool v : {sp.embedding_in_split, sp.loss_in_split, sp.unfused_attention, sp.eager_elementwise, sp.fp8_storage,
                 sp.bf16_grads, sp.grad_sync_micro_batch, sp.fp32_grad_add, sp.grad_all_reduce, sp.cuda_graphs, sp.cuda_graphs_full, sp.fp8_head, sp.unfused_rope, sp.fused_mlp, sp.repeat_kv, sp.separate_linears, sp.fp8_dispatch, sp.gate_at_swiglu, sp.overlap.ep, sp.overlap.dp, sp.overlap.tp,
                 sp.overlap.pp, sp.overlap.pp_lockstep, sp.overlap.tp_async, sp.overlap.cp, o.keep_all}) {
    raw(k, v);
  }
  raw(k, sp.imbalance);
  raw(k, sp.memory_headroom);
  raw(k, o.max_candidates);
  return k;
}

}  // namespace

SearchResult Planner::search(const SearchSpace& space, const SearchOptions& options) const {
  const auto start = std::chrono::steady_clock::now();
  // A repeated question gets the stored answer (schedulers ask the same thing often).
  const std::string key = search_key(space, options);
  {
    std::lock_guard lock(impl_->result_mutex);
    auto it = impl_->results.find(key);
    if (it != impl_->results.end()) {
      SearchResult r = it->second.result;
      if (options.timeline) r.best_timeline.events = it->second.events;
      r.from_cache = true;
      r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (options.progress) options.progress(r.evaluated, r.evaluated);
      return r;
    }
  }
  SearchResult fresh = search_uncached(space, options);
  // A search cut short by the clock is not an answer to the same question next time.
  if (!fresh.cancelled && !(options.budget_seconds > 0 && fresh.left_out > 0)) {
    Impl::Cached c{fresh, {}};
    std::swap(c.events, c.result.best_timeline.events);
    std::lock_guard lock(impl_->result_mutex);
    if (impl_->results.emplace(key, std::move(c)).second) {
      impl_->result_order.push_back(key);
      if (impl_->result_order.size() > Impl::kCachedResults) {
        impl_->results.erase(impl_->result_order.front());
        impl_->result_order.pop_front();
      }
    }
  }
  if (!options.timeline) fresh.best_timeline.events.clear();
  return fresh;
}

namespace {

constexpr std::size_t kClosest = 20;
constexpr std::size_t kFrontPrune = 1024;  // a thread's points are cut to their front beyond this

// Memory over capacity, as a fraction; ties by the strategy order.
bool over_less(const Estimate& a, const Estimate& b) {
  const double oa = a.memory_bytes.total / a.memory_bytes.capacity, ob = b.memory_bytes.total / b.memory_bytes.capacity;
  if (oa != ob) return oa < ob;
  return better(a, b, Objective::Tgs);
}

}  // namespace

SearchResult Planner::search_uncached(const SearchSpace& space, const SearchOptions& options) const {
  const auto start = std::chrono::steady_clock::now();
  auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  SearchResult result;
  const Enumeration en = enumerate(impl_->hw, impl_->model, space);
  result.candidates = en.candidates;
  result.enumerate_seconds = since(start);
  const std::size_t total = result.candidates;
  int threads = options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  threads = std::max(1, std::min<int>(threads, static_cast<int>(std::max<std::size_t>(1, en.layouts.size()))));
  result.threads = threads;
  const std::size_t layer_keys_before = impl_->cache.size();

  // Streaming: workers take layouts in turn and evaluate their candidates as they are made;
  // each keeps only its top-K (objective, order key, id), its best per node count, its Pareto
  // front (pruned as it grows) and its nearest misses. Memory does not grow with the space.
  using Key = decltype(strategy_tuple(std::declval<Strategy>()));
  struct Ranked {
    double value;
    Key key;
    std::uint64_t id;
  };
  auto ranked_better = [](const Ranked& a, const Ranked& b) {
    if (a.value != b.value) return a.value < b.value;
    return a.key < b.key;
  };
  struct Local {
    std::vector<std::pair<std::uint64_t, Estimate>> all;
    std::vector<Estimate> closest;
    std::vector<Ranked> best;
    std::map<int, Ranked> per_nodes;  // best of each node count
    std::vector<Point> points;
    std::size_t prune_at = kFrontPrune;
    Front front;                // the last cut of `points`, for the bound
    std::optional<double> cut;  // the worst of `best` after its last trim
    std::size_t pruned = 0;
    std::vector<std::pair<const char*, std::size_t>> rejected_by;  // rule name -> count
    std::size_t evaluated = 0, feasible = 0, infeasible = 0, infeasible_rules = 0;
    double layer_seconds = 0;
    std::optional<Estimate> non_finite;  // the first estimate with a NaN or infinity: a bug
  };
  std::vector<Local> locals(static_cast<std::size_t>(threads));
  const std::size_t shown = static_cast<std::size_t>(std::max(1, options.top));
  // The closed form keeps this many for the simulation to re-time.
  const std::size_t keep = std::max(shown, static_cast<std::size_t>(std::max(0, options.resimulate)));
  // Branch and bound where the objective is a step time's (every row is kept with keep_all).
  const bool bound = options.prune && !options.keep_all && options.objective != Objective::Memory;
  std::atomic<std::size_t> next{0}, done{en.world_rejected};
  // Caps: a layout is taken only while the candidates taken so far are under the cap and the
  // budget has time left (layouts are taken in order, so a capped search is a prefix).
  std::atomic<std::size_t> taken{en.world_rejected};
  std::atomic<bool> stopped{false};
  auto cancelled = [&] { return options.cancel != nullptr && options.cancel->load(); };
  const int seq = impl_->model.seq_len;
  std::atomic<int> running{threads};  // workers not yet done (a capped search ends early)
  auto worker = [&](int t) {
    struct Done {
      std::atomic<int>& n;
      ~Done() { --n; }
    } finished{running};
    Local& L = locals[static_cast<std::size_t>(t)];
    CommMemo memo;
    std::unordered_map<search::LayerKey, std::shared_ptr<const search::LayerCosts>, search::LayerKeyHash> costs;
    Strategy s = en.base;
    search::LayerKey last_key;
    const search::LayerCosts* last_key_costs = nullptr;  // last_key's, owned by `costs`
    // The candidate's per-layer costs by its key; neighbouring candidates mostly share it.
    auto costs_by_key = [&]() {
      search::LayerKey lk = search::key_of(s, seq);
      if (last_key_costs == nullptr || !(lk == last_key)) {
        auto it = costs.find(lk);
        if (it == costs.end()) {
          const auto t0 = std::chrono::steady_clock::now();
          it = costs.emplace(lk, impl_->cache.get(s)).first;
          L.layer_seconds += since(t0);
        }
        last_key_costs = it->second.get();
        last_key = std::move(lk);
      }
      return last_key_costs;
    };
    // The costs of (layer class, inner choice), once met: no key to build, compare or hash
    // for the next layout of the class. Kept while it stays small (2^22 entries, 32 MB).
    const bool by_choice = static_cast<std::size_t>(en.layer_classes) * en.inner_size <= (std::size_t{1} << 22);
    std::vector<std::vector<const search::LayerCosts*>> seen(by_choice ? static_cast<std::size_t>(en.layer_classes) : 0);
    MemoryEstimate mem;  // reused by every candidate
    // The layout's first broken rule by Enumeration::rule_key: a handful of checks per layout.
    std::vector<std::pair<std::uint64_t, const char*>> rules_by_key;
    // Within a layout, the PP and DP communication follows from the training choice (not the
    // dispatch or routing), and the bottleneck rank from the layer costs.
    search::StrategyComm comm;
    std::size_t comm_of = SIZE_MAX;  // the training choice `comm` is for
    std::vector<std::pair<const search::LayerCosts*, search::Bottleneck>> bottlenecks;
    for (std::size_t li; (li = next.fetch_add(1)) < en.layouts.size() && !cancelled() && !L.non_finite;) {
      const std::size_t size = en.count(en.layouts[li]);
      if ((options.max_candidates > 0 && taken.fetch_add(size) >= options.max_candidates) ||
          (options.budget_seconds > 0 && since(start) > options.budget_seconds)) {
        stopped = true;
        break;
      }
      std::size_t made = 0;
      rules_by_key.clear();
      bottlenecks.clear();
      comm_of = SIZE_MAX;
      for (std::size_t j = 0; j < en.inner_size; ++j) {
        if (!en.exists(en.layouts[li], j)) continue;
        ++made;
        const std::uint64_t id = static_cast<std::uint64_t>(li) * en.inner_size + j;
        const std::uint64_t rk = en.rule_key(j);
        auto known = std::find_if(rules_by_key.begin(), rules_by_key.end(), [&](const auto& e) { return e.first == rk; });
        bool filled = false;
        if (known == rules_by_key.end()) {
          en.fill(s, id);
          filled = true;
          known = rules_by_key.insert(rules_by_key.end(), {rk, first_broken_rule(s, impl_->hw, impl_->model)});
        }
        if (const char* rule = known->second) {
          // Counted by the name's address (a literal): no string per rejected candidate.
          auto r = std::find_if(L.rejected_by.begin(), L.rejected_by.end(), [&](const auto& e) { return e.first == rule; });
          if (r == L.rejected_by.end()) r = L.rejected_by.insert(L.rejected_by.end(), {rule, 0});
          ++r->second;
          ++L.infeasible_rules;
          continue;
        }
        if (!filled) en.fill(s, id);
        ++L.evaluated;
        const search::LayerCosts* last_costs = nullptr;
        if (by_choice) {
          auto& row = seen[static_cast<std::size_t>(en.layouts[li].layer_class)];
          if (row.empty()) row.assign(en.inner_size, nullptr);
          if (row[j] == nullptr) row[j] = costs_by_key();
          last_costs = row[j];
        } else {
          last_costs = costs_by_key();
        }
        cost::combine_memory(last_costs->memory, impl_->hw, impl_->model, s, false, mem);
        // The space's headroom: a strategy may use at most this fraction of device memory.
        const double worst = search::worst_memory(mem).total;
        const bool fits = mem.feasible && worst <= space.memory_headroom * mem.capacity;
        // Branch and bound: a candidate that fits, whose step-time bound can enter neither
        // the kept results, nor the best of its node count, nor the Pareto front (the
        // thread's last cut of it dominates the bound), is not timed. It fits in memory.
        if (bound && fits && L.cut.has_value()) {
          const double lb = search::step_lower_bound(impl_->model, s, *last_costs);
          const search::StepScale sc = search::step_scale(impl_->hw, impl_->model, s, *last_costs);
          const double value = objective_value(options.objective, lb, sc.tgs(lb), sc.mfu(lb), worst);
          auto pn = L.per_nodes.find(s.nodes);
          if (value > *L.cut && pn != L.per_nodes.end() && value > pn->second.value &&
              L.front.dominates(sc.tgs(lb), mem.capacity - worst, s.nodes)) {
            ++L.pruned;
            ++L.feasible;
            continue;
          }
        }
        // The estimate comes without its strategy: copied below only where it is kept.
        Estimate e = [&] {
          if (!mem.feasible) return impl_->evaluate_memory(s, *last_costs, mem, false, &memo, false);
          const std::size_t choice = en.training_of(j);
          if (choice != comm_of) {
            comm = impl_->strategy_comm(s, mem, &memo);
            comm_of = choice;
          }
          auto bn = std::find_if(bottlenecks.begin(), bottlenecks.end(),
                                 [&](const auto& b) { return b.first == last_costs; });
          if (bn == bottlenecks.end()) {
            bn = bottlenecks.insert(bottlenecks.end(), {last_costs, search::bottleneck(impl_->model, s, *last_costs)});
          }
          return search::evaluate_step(impl_->hw, impl_->model, s, *last_costs, mem, comm, false, false, &bn->second);
        }();
        if (e.valid && non_finite_field(e).name != nullptr) {
          e.strategy = s;
          L.non_finite = std::move(e);  // reported after the join, from the calling thread
          break;
        }
        if (e.feasible && !fits) {
          e.feasible = false;
          e.infeasible_reasons.push_back("memory headroom");
        }
        if (!e.feasible) {
          ++L.infeasible;
          // The nearest misses (memory over capacity, least first), for when nothing fits.
          if (e.memory_bytes.capacity > 0) {
            e.strategy = s;
            if (options.keep_all) L.closest.push_back(e);
            else L.closest.push_back(std::move(e));
            if (L.closest.size() > 2 * kClosest) {
              std::sort(L.closest.begin(), L.closest.end(), over_less);
              L.closest.resize(kClosest);
            }
          }
        } else {
          ++L.feasible;
          L.points.push_back({e.tokens_per_device_per_s, e.memory_bytes.capacity - e.memory_bytes.total, s.nodes, id});
          if (L.points.size() > L.prune_at) {
            std::vector<Point> front;
            for (std::size_t k : pareto_front(L.points)) front.push_back(L.points[k]);
            L.points = std::move(front);
            // A front that stays large is cut again only when it has doubled.
            L.prune_at = std::max(kFrontPrune, 2 * L.points.size());
            if (bound) L.front.assign(L.points);
          }
          // A candidate worse than the kept results' worst (or its node count's best) cannot
          // enter them: its key is built only where it might (ties are broken by the key).
          const double value = objective_value(e, options.objective);
          auto pn = L.per_nodes.find(s.nodes);
          const bool for_nodes = pn == L.per_nodes.end() || value <= pn->second.value;
          const bool for_best = !L.cut.has_value() || value <= *L.cut;
          if (for_nodes || for_best) {
            const Ranked me{value, strategy_tuple(s), id};
            if (for_nodes && (pn == L.per_nodes.end() || ranked_better(me, pn->second))) L.per_nodes[s.nodes] = me;
            if (for_best) L.best.push_back(me);
          }
          if (L.best.size() >= 4 * keep) {
            std::nth_element(L.best.begin(), L.best.begin() + static_cast<std::ptrdiff_t>(keep - 1), L.best.end(),
                             ranked_better);
            L.best.resize(keep);
            // The kept results' worst: a candidate must be better to enter them.
            L.cut = std::max_element(L.best.begin(), L.best.end(), ranked_better)->value;
          }
        }
        if (options.keep_all) {
          e.strategy = s;
          L.all.emplace_back(id, std::move(e));
        }
      }
      done.fetch_add(made, std::memory_order_relaxed);
    }
  };
  const auto loop_start = std::chrono::steady_clock::now();
  {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
    if (options.progress) {
      while (done.load() < total && running.load() > 0 && !cancelled()) {
        options.progress(done.load(), total);
        bool finished = true;
        for (int k = 0; k < 50 && done.load() < total && running.load() > 0; ++k) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          finished = false;
        }
        if (finished) break;
      }
    }
    for (auto& th : pool) th.join();
  }
  result.cancelled = cancelled();
  const double loop_seconds = since(loop_start);
  for (const Local& L : locals) {
    if (L.non_finite) require_finite(*L.non_finite);
  }
  if (stopped || result.cancelled) {
    std::size_t evaluated_or_rejected = en.world_rejected;
    for (const Local& L : locals) evaluated_or_rejected += L.evaluated + L.infeasible_rules;
    result.left_out = total - std::min(total, evaluated_or_rejected);
  }

  // Merge: a total order makes the result independent of the thread count.
  Counter rejected;
  if (en.world_rejected > 0) rejected.by_rule["world"] += en.world_rejected;
  std::vector<Ranked> ranked;
  std::vector<Point> points;
  std::map<int, Ranked> per_nodes;
  double layer_thread_seconds = 0;
  for (Local& L : locals) {
    for (auto& [n, e] : L.per_nodes) {
      auto it = per_nodes.find(n);
      if (it == per_nodes.end() || ranked_better(e, it->second)) per_nodes[n] = e;
    }
    points.insert(points.end(), L.points.begin(), L.points.end());
    result.evaluated += L.evaluated;
    result.feasible += L.feasible;
    result.pruned += L.pruned;
    for (const auto& [rule, count] : L.rejected_by) rejected.by_rule[rule] += count;
    rejected.by_rule["memory"] += L.infeasible;
    for (Estimate& e : L.closest) result.closest.push_back(std::move(e));
    ranked.insert(ranked.end(), L.best.begin(), L.best.end());
    layer_thread_seconds += L.layer_seconds;
  }
  if (options.keep_all) {
    std::vector<std::pair<std::uint64_t, Estimate>> all;
    for (Local& L : locals) {
      for (auto& p : L.all) all.push_back(std::move(p));
      L.all.clear();
    }
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    result.all.reserve(all.size());
    for (auto& p : all) result.all.push_back(std::move(p.second));
  }
  result.layer_keys = impl_->cache.size() - layer_keys_before;
  result.layer_seconds = layer_thread_seconds / threads;
  // The evaluation loop without the per-layer costs it computed on the way.
  result.evaluate_seconds = std::max(1e-9, loop_seconds - result.layer_seconds);
  std::sort(ranked.begin(), ranked.end(), ranked_better);
  // The closed form's front, re-timed (simulated), without what the new times dominate.
  {
    std::vector<Estimate> front;
    std::vector<Point> timed;
    for (std::size_t k : pareto_front(points)) {
      front.push_back(impl_->evaluate(en.strategy(points[k].index), true));
      const Estimate& e = front.back();
      timed.push_back({e.tokens_per_device_per_s, e.memory_bytes.capacity - e.memory_bytes.total, e.strategy.nodes,
                       front.size() - 1});
    }
    for (std::size_t k : pareto_front(timed)) result.pareto.push_back(std::move(front[timed[k].index]));
  }
  for (auto& [n, e] : per_nodes) result.best_per_nodes.push_back(impl_->evaluate(en.strategy(e.id), true));
  if (ranked.size() > keep) ranked.resize(keep);
  // The kept results get their detailed memory (reasons in words, per-module parts) and,
  // unless resimulate is 0, the simulated step; then they are ranked again by it.
  std::vector<Estimate> merged;
  merged.reserve(ranked.size());
  for (const Ranked& k : ranked) {
    const Strategy c = en.strategy(k.id);
    merged.push_back(options.resimulate > 0 ? impl_->evaluate(c, true)
                                            : impl_->evaluate_with(c, *impl_->cache.get(c), true, nullptr, false));
  }
  std::sort(merged.begin(), merged.end(),
            [&](const Estimate& a, const Estimate& b) { return better(a, b, options.objective); });
  if (merged.size() > shown) merged.resize(shown);
  result.best = std::move(merged);
  std::sort(result.closest.begin(), result.closest.end(), over_less);
  if (result.closest.size() > kClosest) result.closest.resize(kClosest);
  if (!result.best.empty()) {
    result.closest.clear();
  } else {
    for (Estimate& e : result.closest) e = impl_->evaluate(e.strategy, true);
  }
  // The re-timed results passed through the event simulation: checked again.
  for (const std::vector<Estimate>* list : {&result.best, &result.pareto, &result.best_per_nodes, &result.closest}) {
    for (const Estimate& e : *list) require_finite(e);
  }
  if (!result.best.empty()) {
    result.best_timeline = impl_->timeline(result.best.front().strategy);
    require_finite(result.best_timeline, result.best.front().strategy);
  }
  for (const auto& [rule, count] : rejected.by_rule) {
    if (count > 0) result.rejected.push_back({rule, count});
  }
  if (options.progress) options.progress(total, total);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace paraplan
