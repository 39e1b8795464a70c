#include "search/step.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <utility>
#include <vector>
#include <string>

#include "config/pipeline_layout.hpp"
#include "cost/comm.hpp"
#include "cost/memory.hpp"
#include "model/params.hpp"
#include "schedule/layout.hpp"
#include "schedule/simulate.hpp"

namespace paraplan::search {
namespace {

/// Per-micro-batch times of one layer kind after the strategy's overlap rules.
struct Exposed {
  double f = 0, b = 0, w = 0;        ///< incl. exposed communication
  double compute = 0;                ///< f + b + w compute only
  double tp = 0, ep = 0, queueing = 0;
};

// EP: with overlap (DualPipe's F&B pairing, 1F1B all-to-all overlap; needs another
// micro-batch to pair with: ep_overlapped) DMA-engine communication hides under the layer's
// compute of the paired micro-batch; compute-engine communication always adds (the seeds'
// DMA = max, SPC = sum rule). A DMA-tier transfer whose kernels hold a share s of the
// compute units (DeepEP's 20 SMs, NCCL's channels: `comm_units`) holds them for the whole
// compute window it hides under: its kernels are launched with the pair and poll until the
// last peer's data is in, and the peers run the same window. The paired compute runs on
// (1 - s) of the units: window = compute / (1 - s), exposed = (window - compute) +
// max(0, dma - window). (deepseek-ai/profile-data train.json: DeepEP kernels are resident
// 113.4 ms of the chunk pair's 130.6 ms of compute kernels.) Of what could hide,
// min(dma, window), the hardware's calibration.ep_overlap share does; the rest adds.
// Without overlap everything adds. TP and CP: what their own overlap leaves and costs
// (cost::tp_exposed, cost::cp_exposed, precomputed per layer); CP is reported with TP.
Exposed expose(const KindCost& k, bool ep_overlap, double ep_share) {
  Exposed e;
  e.compute = k.f + k.b + k.w;
  double ep_f = k.ep_f, ep_b = k.ep_b;
  if (ep_overlap && k.ep_f + k.ep_b > 0) {
    const double exposed = cost::ep_exposed({k.ep_f + k.ep_b, k.ep_engine, k.ep_units}, e.compute, true, ep_share);
    const double scale = exposed / (k.ep_f + k.ep_b);
    ep_f *= scale;
    ep_b *= scale;
  }
  e.f = k.f + k.tp_f + ep_f + k.cp_f;
  e.b = k.b + k.tp_b + ep_b + k.cp_b;
  e.w = k.w;
  e.tp = k.tp_f + k.tp_b + k.cp_f + k.cp_b;
  e.ep = ep_f + ep_b;
  e.queueing = k.queueing;
  return e;
}

struct RankTime : MicroBatchTimes {
  void add(const Exposed& e, double n) {
    f += n * e.f;
    b += n * e.b;
    w += n * e.w;
    compute += n * e.compute;
    tp += n * e.tp;
    ep += n * e.ep;
    queueing += n * e.queueing;
  }
  void add(const RankTime& o) {
    f += o.f;
    b += o.b;
    w += o.w;
    compute += o.compute;
    tp += o.tp;
    ep += o.ep;
    queueing += o.queueing;
  }
  void scale(double x) {
    f *= x;
    b *= x;
    w *= x;
    compute *= x;
    tp *= x;
    ep *= x;
    queueing *= x;
  }
  double total() const { return f + b + w; }
};

// Bubble of each schedule (DESIGN.md sec. 4) in this model's F (forward), B (input
// gradient) and W (weight gradient) of one micro-batch through one chunk of the bottleneck
// rank. The DualPipe README tabulates them with its B the whole backward (our B + W) and
// F&B a forward and a whole backward chunk overlapped (F + B + W when the pair's
// communication hides behind compute): 1F1B (PP-1)(F+B), ZB1P (PP-1)(F+B-2W), DualPipe
// (PP/2-1)(F&B+B-3W), DualPipeV the same over its 2 pp stages.
double bubble(const Strategy& s, const RankTime& chunk) {
  const int pp = s.parallel.pp;
  if (pp <= 1) return 0.0;
  const double F = chunk.f, B = chunk.b, W = chunk.w;
  switch (s.schedule) {
    case Schedule::OneFOneB: return (pp - 1) * (F + B + W);
    case Schedule::Interleaved: return (pp - 1) * (F + B + W) / std::max(1, s.parallel.vpp);
    // ZB-H1 (Qi et al. 2023, sec. 2.1), the zero-bubble schedule with 1F1B's memory.
    case Schedule::ZeroBubble: return std::max(0.0, (pp - 1) * (F + B - W));
    case Schedule::DualPipe: return std::max(0.0, (pp / 2.0 - 1) * (F + 2 * B - W));
    case Schedule::DualPipeV: return std::max(0.0, (pp - 1) * (F + 2 * B - W));
  }
  return 0.0;
}

// Per-micro-batch times of every chunk of every rank (exposed communication included).
struct Ranks {
  std::vector<std::vector<RankTime>> chunks;  ///< [rank][chunk]
  void add(int rank, const RankTime& t) {
    if (static_cast<std::size_t>(rank) == chunks.size()) chunks.emplace_back();
    chunks.back().push_back(t);
  }
};

// Per-micro-batch times of every chunk of every rank (exposed communication included):
// `on_chunk(rank, times)` for each chunk of a rank in order, then `on_rank(rank, total)` with
// one micro-batch's share of all the rank's chunks. `every_rank` = false visits only the first
// rank of each run of ranks that hold the same (schedule::rank_runs): the others repeat it.
template <typename OnChunk, typename OnRank>
void each_rank(const ModelSpec& m, const Strategy& s, const LayerCosts& c, OnChunk&& on_chunk, OnRank&& on_rank,
               bool every_rank = true) {
  const bool ep_overlap = cost::ep_overlapped(s);
  const Exposed dense = expose(c.dense, ep_overlap, c.ep_overlap);
  const Exposed moe = expose(c.moe, ep_overlap, c.ep_overlap);
  const Exposed mtp = expose(c.mtp, ep_overlap, c.ep_overlap);
  const Exposed emb = expose(c.embedding, false, c.ep_overlap);
  const Exposed head = expose(c.head, false, c.ep_overlap);
  // training.recompute_layers: of each chunk's layers the first that many recompute, the
  // others run as without recompute.
  const int rc_layers = s.training.partial_recompute() ? s.training.recompute_layers : 0;
  const Exposed dense_kept = rc_layers > 0 ? expose(c.dense_kept, ep_overlap, c.ep_overlap) : dense;
  const Exposed moe_kept = rc_layers > 0 ? expose(c.moe_kept, ep_overlap, c.ep_overlap) : moe;
  const int nd_model = model::dense_layers(m);
  const auto runs = every_rank ? nullptr : schedule::rank_runs(m, s, nd_model);
  const auto layout = every_rank ? schedule::rank_chunks(m, s) : runs->ranks;
  const std::size_t visits = every_rank ? layout->size() : runs->starts.size();
  std::array<int, 5> last = {-1, -1, -1, -1, -1};
  RankTime t;
  for (std::size_t i = 0; i < visits; ++i) {
    const int rank = every_rank ? static_cast<int>(i) : runs->starts[i];
    const auto& chunks = (*layout)[static_cast<std::size_t>(rank)];
    RankTime r;
    for (const schedule::Chunk& ch : chunks) {
      const int nd = ch.dense_layers(nd_model);
      // A chunk that holds what the one before held takes its times (most of a pipeline).
      const std::array<int, 5> held = {nd, ch.layers - nd, ch.embedding, ch.head, ch.mtp};
      if (held != last) {
        last = held;
        t = RankTime{};
        const int rd = ch.recomputed_dense(rc_layers, nd_model), rm = ch.recomputed(rc_layers) - rd;
        t.add(dense, rd);
        t.add(dense_kept, nd - rd);
        t.add(moe, rm);
        t.add(moe_kept, ch.layers - nd - rm);
        if (ch.embedding) t.add(emb, 1);
        if (ch.head) t.add(head, 1);
        if (ch.mtp) t.add(mtp, m.mtp_depth);
      }
      on_chunk(rank, t);
      r.add(t);
    }
    // One micro-batch runs one of DualPipe's two chunks (half the micro-batches come from
    // each end) and both of DualPipeV's (down and up the V).
    if (s.schedule == Schedule::DualPipe && chunks.size() == 2) r.scale(0.5);
    on_rank(rank, r);
  }
}

Ranks rank_times(const ModelSpec& m, const Strategy& s, const LayerCosts& c) {
  Ranks out;
  each_rank(
      m, s, c,
      [&](int rank, const RankTime& t) { out.add(rank, t); }, [](int, const RankTime&) {});
  return out;
}

// One run of the schedule (training.pipeline_runs: a step runs it that many times).
schedule::Pipeline pipeline_from(const Ranks& ranks, const Strategy& s, const StrategyComm& comm) {
  schedule::Pipeline pl;
  pl.micro_batches = schedule::run_micro_batches(s);
  pl.p2p_s = comm.pp_send_s;
  pl.p2p_overlapped = s.overlap.pp_overlapped();
  pl.lockstep = s.overlap.pp_lockstep;
  for (const auto& chunks : ranks.chunks) {
    std::vector<schedule::ChunkTimes> t;
    for (const RankTime& c : chunks) t.push_back({c.f, c.b, c.w});
    pl.ranks.push_back(std::move(t));
  }
  return pl;
}

}  // namespace

schedule::Pipeline pipeline_of(const ModelSpec& m, const Strategy& s, const LayerCosts& c, const StrategyComm& comm) {
  return pipeline_from(rank_times(m, s, c), s, comm);
}

StepScale step_scale(const HardwareSpec& hw, const ModelSpec& m, const Strategy& s, const LayerCosts& c) {
  StepScale sc;
  const double seq = s.training.seq_len > 0 ? s.training.seq_len : m.seq_len;
  sc.tokens = static_cast<double>(s.training.global_batch) * seq;
  sc.devices = static_cast<double>(s.parallel.world());
  sc.peak = hw.device.peak(Dtype::Bf16) * sc.devices;
  // FLOP per token at the strategy's sequence length (attention grows with it).
  sc.model_flops = c.model_flops_per_token * sc.tokens;
  return sc;
}

double step_lower_bound(const ModelSpec& m, const Strategy& s, const LayerCosts& c) {
  const bool ep_overlap = cost::ep_overlapped(s);
  auto total = [&](const KindCost& k) {
    const Exposed e = expose(k, ep_overlap, c.ep_overlap);
    return e.f + e.b + e.w;
  };
  // Layers that do not recompute cost at most what those that do cost.
  const double layers = model::dense_layers(m) * total(c.dense_kept) + model::moe_layers(m) * total(c.moe_kept);
  // (1 - 1e-9): the bound is summed in another order than the step; rounding must not lift
  // it above a step it equals.
  return schedule::micro_batches(s) * layers / std::max(1, s.parallel.pp) * (1 - 1e-9);
}

MemoryBreakdown worst_memory(const MemoryEstimate& memory) {
  MemoryBreakdown mb;
  if (memory.stages.empty()) return mb;
  const StageMemory& st = memory.stages[static_cast<std::size_t>(memory.worst_stage)];
  mb.weights = st.weights;
  mb.gradients = st.gradients;
  mb.optimizer_states = st.optimizer_states;
  mb.activations = st.activations;
  mb.buffers = st.buffers;
  mb.reserve = st.reserve;
  mb.total = st.total;
  mb.capacity = memory.capacity;
  mb.stage = st.stage;
  mb.host_per_node = memory.host_bytes_per_node;
  return mb;
}

namespace {

// The bottleneck rank; with `ranks`, the chunks of every rank too (for the simulation).
void find_bottleneck(const ModelSpec& m, const Strategy& s, const LayerCosts& c, Ranks* ranks, RankTime& worst,
                     double& worst_chunks) {
  worst = RankTime{};
  worst_chunks = 1;
  each_rank(
      m, s, c,
      [&](int rank, const RankTime& t) {
        if (ranks != nullptr) ranks->add(rank, t);
      },
      [&](int, const RankTime& r) {
        if (r.total() > worst.total()) {
          worst = r;
          // DualPipeV's bubble is in units of one of its two chunks; the interleaved bubble
          // (pp - 1)(F + B + W) / vpp is in whole-rank times (Narayanan et al. 2021).
          worst_chunks = s.schedule == Schedule::DualPipeV ? 2.0 : 1.0;
        }
      },
      ranks != nullptr);
}

// DP synchronisation of one micro-batch when every micro-batch reduces its gradients
// (training.grad_sync: micro_batch; FSDP without no_sync): the gradients' reduce-scatter (an
// all-reduce without ZeRO) and the parameters gathered again, once when the forward keeps
// them for the backward (ZeRO 1-2; FSDP2 reshard_after_forward=False), twice with ZeRO-3.
// FSDP gathers and reduces layer by layer on streams of its own (overlap.dp), beside the
// micro-batch's compute; what waits is each chunk's first layer gathered before its forward
// and its last layer reduced before its backward returns (the root's post-backward callback
// makes the compute stream wait for the reduce-scatter), one layer's share per chunk the rank
// runs separately, and whatever the compute cannot cover. What runs beside compute takes the
// collective kernels' SMs from it.
double dp_per_micro_batch(const Strategy& s, const StrategyComm& comm, const MemoryEstimate& memory,
                          const RankTime& worst, const HardwareSpec& hw) {
  const double reduce = comm.dp_s - comm.dp_param_s;
  const double traffic = reduce + (s.training.zero >= 3 ? comm.dp_gather_s : comm.dp_param_s);
  if (!s.overlap.dp || traffic <= 0) return traffic;
  // Chunks a rank runs: its share of the model's chunks; DualPipe's two model copies, one each.
  const int chunks = s.schedule == Schedule::DualPipe ? 2 : config::model_chunks(s) / std::max(1, s.parallel.pp);
  const int layers = memory.stages.empty()
                         ? 1
                         : std::max(1, memory.stages[static_cast<std::size_t>(memory.worst_stage)].layers);
  const double waited = std::max(traffic * std::min(1.0, static_cast<double>(chunks) / layers),
                                 traffic - worst.total());
  return waited + (traffic - waited) * cost::dma_compute_share(hw);
}

}  // namespace

Bottleneck bottleneck(const ModelSpec& m, const Strategy& s, const LayerCosts& c) {
  RankTime w;
  Bottleneck out;
  find_bottleneck(m, s, c, nullptr, w, out.chunks);
  out.times = w;
  return out;
}

Estimate evaluate_step(const HardwareSpec& hw, const ModelSpec& m, const Strategy& s, const LayerCosts& c, const MemoryEstimate& memory,
                       const StrategyComm& comm, bool detail, bool simulate, const Bottleneck* known) {
  Estimate e;
  if (detail) e.strategy = s;
  const Parallel& p = s.parallel;
  const int micro = schedule::micro_batches(s);
  e.micro_batches = micro;
  e.devices = static_cast<int>(p.world());

  // The bottleneck rank; the chunks of every rank only where the simulation needs them.
  const bool simulated = simulate && p.pp > 1;
  Ranks ranks;
  RankTime worst;
  double worst_chunks = 1;
  if (known != nullptr && !simulated) {
    static_cast<MicroBatchTimes&>(worst) = known->times;
    worst_chunks = known->chunks;
  } else {
    find_bottleneck(m, s, c, simulated ? &ranks : nullptr, worst, worst_chunks);
  }
  RankTime chunk = worst;
  chunk.scale(1.0 / worst_chunks);
  e.stage_f_s = worst.f;
  e.stage_b_s = worst.b;
  e.stage_w_s = worst.w;

  TimeBreakdown& t = e.time_s;
  t.compute = micro * worst.compute;
  t.tp_comm = micro * worst.tp;
  t.ep_comm = micro * worst.ep;
  t.queueing = micro * worst.queueing;
  // A step that runs the schedule `runs` times (gradient accumulation around it) fills and
  // drains the pipeline in each run.
  const int runs = schedule::pipeline_runs(s);
  t.pp_bubble = runs * bubble(s, chunk);
  // PP: with overlap only the fill and drain chains wait for transfers (forward and
  // backward), across every chunk boundary; otherwise every micro-batch does.
  if (p.pp > 1) {
    const double chain = (s.schedule == Schedule::Interleaved ? p.pp * p.vpp : p.pp) - 1.0;
    t.pp_comm = 2 * (s.overlap.pp_overlapped() ? runs * chain : runs * chain + micro) * comm.pp_send_s;
  }
  // DP: the bucketed gradient reduce-scatter (or all-reduce) overlapped with the last
  // micro-batch's backward, whose gradients it waits for, and the parameter all-gather with
  // the next step's first forward, which waits for it (Megatron's overlap_grad_reduce and
  // overlap_param_gather); the last bucket of each is always exposed.
  // Each run of the schedule synchronises (schedule::dp_syncs): FSDP reshards after it, so
  // the next run gathers the parameters again.
  const double syncs = schedule::dp_syncs(s);
  if (s.training.grad_sync_micro_batch) {
    t.dp_comm = micro * dp_per_micro_batch(s, comm, memory, worst, hw);
  } else if (s.overlap.dp) {
    const double params = memory.stages.empty() ? 1.0
        : std::max(1.0, memory.stages[static_cast<std::size_t>(memory.worst_stage)].dense_params +
                            memory.stages[static_cast<std::size_t>(memory.worst_stage)].expert_params);
    const double bucket = std::min(1.0, 40e6 / params);  // Megatron's default bucket: 40M elements
    // ZeRO-3 (FSDP): each micro-batch's layer-by-layer parameter gathers prefetch under that
    // micro-batch's compute; the first bucket of each waits.
    const double reduce = comm.dp_s - comm.dp_param_s;
    const double sync = syncs * (std::max(reduce * bucket, reduce - (worst.b + worst.w)) +
                                 std::max(comm.dp_param_s * bucket, comm.dp_param_s - worst.f));
    const double gather = micro * std::max(comm.dp_gather_s * bucket, comm.dp_gather_s - worst.total());
    // What runs beside compute still takes the collective kernels' SMs from it.
    const double hidden = syncs * comm.dp_s - sync + micro * comm.dp_gather_s - gather;
    t.dp_comm = sync + gather + hidden * cost::dma_compute_share(hw);
  } else {
    t.dp_comm = syncs * comm.dp_s + micro * comm.dp_gather_s;
  }
  // The tied embedding's gradient all-reduce runs after the backward, waited on.
  t.dp_comm += syncs * comm.tied_s;

  // Optimizer: a memory-bound pass over the rank's states: read the FP32 gradient, read and
  // write master weights and both moments, write the BF16 weight (Adam 4 + 8 + 8 + 8 + 2 =
  // 30 B per parameter; BF16 moments 4 + 8 + 4 + 4 + 2 = 22 B; 8-bit Adam 4 + 8 + 2 + 2 + 2 =
  // 18 B). Offloaded: gradients down and
  // weights up over the host link (4 + 2 B per parameter); the host-side update is not costed.
  if (!memory.stages.empty()) {
    const StageMemory& st = memory.stages[static_cast<std::size_t>(memory.worst_stage)];
    const int zero = s.training.zero;
    const double dies = s.ep_over_dies ? std::max(1, hw.device.dies) : 1;
    const double edp = std::max(1.0, static_cast<double>(p.tp) * p.cp * p.dp * dies /
                                         (static_cast<double>(p.ep) * p.etp));
    const double shard = st.dense_params / (zero >= 1 ? p.dense_shard_ranks() : 1.0) +
                         st.expert_params / (zero >= 1 ? edp : 1.0);
    if (s.training.optimizer_offload) {
      t.optimizer = hw.host.offload_bw_bytes_per_s > 0 ? shard * 6.0 / hw.host.offload_bw_bytes_per_s : 0;
    } else {
      const double bytes = s.training.optimizer == Optimizer::Adam       ? 30.0
                           : s.training.optimizer == Optimizer::AdamBf16 ? 22.0
                                                                          : 18.0;
      t.optimizer = shard * bytes / (hw.device.memory_bw_bytes_per_s * hw.device.memory_bound_efficiency);
    }
    // Activation offload: each in-flight set goes to the host and comes back once per
    // micro-batch, beside compute; what compute cannot hide is exposed.
    if (s.training.activation_offload && hw.host.offload_bw_bytes_per_s > 0 && st.in_flight > 1) {
      const double set = st.activations;  // one set stays on the device: the per-set size
      const double per_micro = 2 * set / hw.host.offload_bw_bytes_per_s;
      t.offload = micro * std::max(0.0, per_micro - worst.total());
    }
    // Layer offload: each micro-batch copies its offloaded layers' activations out during its
    // forward and back during its backward, on the host link's two directions, each beside
    // that pass's compute (Transformer Engine's offload context prefetches the next layer's);
    // what a pass cannot hide is exposed.
    if (st.offloaded_activations > 0 && hw.host.offload_bw_bytes_per_s > 0) {
      const double copy = st.offloaded_activations / hw.host.offload_bw_bytes_per_s;
      t.offload += micro * (std::max(0.0, copy - worst.f) + std::max(0.0, copy - (worst.b + worst.w)));
    }
  }
  t.exposed_comm = t.tp_comm + t.ep_comm + t.pp_comm + t.dp_comm;
  e.step_time_s = t.compute + t.exposed_comm + t.pp_bubble + t.optimizer + t.queueing + t.offload;
  e.closed_form_step_s = e.step_time_s;
  if (simulated) {
    // The event simulation times the pipeline part (docs/cost-model.md, "Schedule
    // simulation"): what the bottleneck rank does not spend on its own micro-batches is
    // bubble and send/recv waits; the send/recv share is at most the closed form's.
    const schedule::Simulation sim = schedule::simulate(s.schedule, pipeline_from(ranks, s, comm));
    if (sim.ok) {
      const double busy = micro * worst.total();
      const double idle = std::max(0.0, runs * sim.makespan - busy);
      t.pp_comm = std::min(t.pp_comm, idle);
      t.pp_bubble = idle - t.pp_comm;
      t.exposed_comm = t.tp_comm + t.ep_comm + t.pp_comm + t.dp_comm;
      e.step_time_s = t.compute + t.exposed_comm + t.pp_bubble + t.optimizer + t.queueing + t.offload;
      e.simulated = true;
    } else {
      e.simulation_failed = true;
    }
  }

  // Metrics: TGS over devices (and dies), MFU over the BF16 dense peak with the model FLOP
  // convention of count_model (MTP FLOP included: it is trained), HFU adds the recomputed
  // forward FLOP.
  const StepScale sc = step_scale(hw, m, s, c);
  e.tokens_per_device_per_s = sc.tgs(e.step_time_s);
  e.tokens_per_die_per_s = e.tokens_per_device_per_s / std::max(1, hw.device.dies);
  e.mfu = sc.mfu(e.step_time_s);
  const double per_stage_devices = static_cast<double>(p.tp) * p.cp * p.dp;
  const auto [rc_dense, rc_moe] = schedule::recomputed_layers(m, s);
  const double rc = micro * per_stage_devices *
                    (rc_dense * c.dense.recompute_flops + rc_moe * c.moe.recompute_flops +
                     m.mtp_depth * c.mtp.recompute_flops);
  e.hfu = (sc.model_flops + rc) / (e.step_time_s * sc.peak);

  // Memory.
  e.feasible = memory.feasible;
  e.infeasible_reasons = memory.infeasible_reasons;
  e.memory_bytes = worst_memory(memory);

  if (!detail) return e;
  // The bottleneck in words: the largest term.
  struct Term {
    const char* name;
    double v;
  };
  const Term terms[] = {{"compute", t.compute},
                        {"EP dispatch/combine", t.ep_comm},
                        {"TP/CP communication", t.tp_comm},
                        {"pipeline bubble", t.pp_bubble},
                        {"pipeline send/recv", t.pp_comm},
                        {"DP gradient sync", t.dp_comm},
                        {"optimizer step", t.optimizer},
                        {"activation offload", t.offload},
                        {"queueing", t.queueing}};
  const auto by_value = [](const Term& a, const Term& b) { return a.v < b.v; };
  const Term* top = std::max_element(std::begin(terms), std::end(terms), by_value);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s %.0f%%", top->name, 100 * top->v / e.step_time_s);
  e.bottleneck = buf;
  if (top == &terms[0]) {
    // Name the next one too: that is what a change of strategy can attack.
    const Term* second = std::max_element(std::begin(terms) + 1, std::end(terms), by_value);
    if (second->v > 0.05 * e.step_time_s) {
      std::snprintf(buf, sizeof buf, "compute %.0f%%, then %s %.0f%%", 100 * top->v / e.step_time_s,
                    second->name, 100 * second->v / e.step_time_s);
      e.bottleneck = buf;
    }
  }
  return e;
}

}  // namespace paraplan::search
