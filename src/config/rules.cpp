// Validity rules of a strategy on its hardware and model (docs/inputs.md, "Rules").
// Megatron-LM rank layout: TP innermost, then CP, EP within the DP x CP x TP ranks of a
// stage, DP, and PP outermost.

#include <algorithm>
#include <limits>
#include <string>

#include "config/pipeline_layout.hpp"
#include "paraplan/spec.hpp"
#include "schedule/layout.hpp"

namespace paraplan {

namespace {

// Index one past the tier named "node" when it sits below the last tier; else the last tier's
// index (every tier but the last is inside a node). The name is compared by hand: the search
// asks this for every candidate.
bool is_node(const std::string& n) {
  return n.size() == 4 && n[0] == 'n' && n[1] == 'o' && n[2] == 'd' && n[3] == 'e';
}

std::size_t node_end(const std::vector<TierSpec>& tiers) {
  const std::size_t last = tiers.size() - 1;
  if (last == 0 || is_node(tiers[last - 1].name)) return last;  // the usual place: below the cluster
  for (std::size_t i = 0; i + 1 < last; ++i) {
    if (is_node(tiers[i].name)) return i + 1;
  }
  return last;
}

int devices_below(const HardwareSpec& hw, std::size_t end) {
  long long product = 1;
  for (std::size_t i = 0; i < end; ++i) product *= hw.tiers[i].size;
  const std::string& first = hw.tiers.front().name;
  const bool die_tier = first.size() == 3 && first[0] == 'd' && first[1] == 'i' && first[2] == 'e';
  if (die_tier && hw.device.dies > 1) product /= hw.device.dies;
  return static_cast<int>(product);
}

}  // namespace

int HardwareSpec::devices_per_node() const {
  if (tiers.size() < 2) return 0;
  return devices_below(*this, node_end(tiers));
}

int HardwareSpec::devices_per_domain() const {
  if (tiers.size() < 2) return 0;
  return devices_below(*this, tiers.size() - 1);
}

int HardwareSpec::max_nodes() const {
  if (tiers.empty()) return 0;
  if (tiers.size() < 2) return tiers.back().size;
  long long product = 1;
  for (std::size_t i = node_end(tiers); i < tiers.size(); ++i) product *= tiers[i].size;
  return static_cast<int>(std::min<long long>(product, std::numeric_limits<int>::max()));
}

namespace {

// Checks every rule, calling `fail_with(rule, key, message)` for each broken one; `message`
// is a lambda that builds the words, called only by a caller that keeps them (the search
// only counts the first rule). The search checks a candidate once per layout and distinct
// Enumeration::rule_key (search/planner.cpp): of the fields a search varies inside a layout,
// a rule here may read only parallel.sp, training.micro_batch, training.global_batch and
// moe.chunks with moe.dispatch (and what a search does not vary: training.pipeline_runs); a
// rule reading another one must be added to that key.
template <typename FailWith>
void check(const Strategy& s, const HardwareSpec& hw, const ModelSpec& m, FailWith&& fail_with) {
#define fail(rule, key, ...) fail_with(rule, key, [&]() -> std::string { return __VA_ARGS__; })
  auto str = [](long long v) { return std::to_string(v); };
  const Parallel& p = s.parallel;
  const int dpn = hw.devices_per_node();
  const long long world = p.world();
  const long long devices = static_cast<long long>(s.nodes) * dpn;

  if (s.nodes > hw.max_nodes()) {
    fail("nodes_cluster", "nodes",
         "nodes " + str(s.nodes) + " exceed the cluster's " + str(hw.max_nodes()) + " (" +
             hw.name + ")");
  }
  if (world != devices) {
    fail("world", "parallel",
         "tp x cp x dp x pp = " + str(p.tp) + " x " + str(p.cp) + " x " + str(p.dp) + " x " +
             str(p.pp) + " = " + str(world) + " devices, but " + str(s.nodes) + " nodes x " +
             str(dpn) + " devices = " + str(devices));
  }
  const AttentionSpec& a = m.attention;
  if (a.heads % p.tp != 0) {
    fail("heads_tp", "parallel.tp",
         "attention heads " + str(a.heads) + " are not divisible by tp " + str(p.tp));
  }
  if (a.kind == AttentionKind::Gqa && a.kv_heads % p.tp != 0 && p.tp % a.kv_heads != 0) {
    fail("kv_heads_tp", "parallel.tp",
         "kv heads " + str(a.kv_heads) + " and tp " + str(p.tp) +
             " do not divide one another (each TP rank needs whole KV heads, or replicas)");
  }
  if (p.sp && p.tp == 1) fail("sp_tp", "parallel.sp", "sequence parallel needs tp > 1");
  if (p.cp > 1 && s.training.cp_comm == CpComm::A2a && a.heads % (static_cast<long long>(p.tp) * p.cp) != 0) {
    fail("cp_a2a_heads", "training.cp_comm",
         "cp_comm a2a splits the heads of a TP rank over CP: heads " + str(a.heads) + " are not divisible by tp x cp = " +
             str(p.tp) + " x " + str(p.cp));
  }
  if (!s.training.attention_kernel.empty()) {
    std::string names;
    bool found = false;
    for (const AttentionKernelSpec& k : hw.device.attention) {
      found = found || k.name == s.training.attention_kernel;
      names += (names.empty() ? "" : ", ") + k.name;
    }
    if (!found) {
      fail("attention_kernel", "training.attention",
           "attention kernel `" + s.training.attention_kernel + "` is not one of " + hw.name +
               "'s (" + (names.empty() ? std::string("none") : names) + "; or flash, unfused)");
    }
  }
  // An FP8 attention kernel runs under the FP8 recipe (Transformer Engine's
  // fp8_dot_product_attention needs fp8 autocast).
  if (const AttentionKernelSpec* k = hw.device.attention_kernel(s.training.attention_kernel);
      k != nullptr && k->fp8 && !s.training.unfused_attention && s.training.precision != Precision::Fp8) {
    fail("attention_kernel", "training.attention",
         "attention kernel `" + k->name + "` takes FP8 inputs (precision: fp8 in " + hw.name +
             "), and training.precision is not fp8");
  }
  if (p.vpp > 1 && s.schedule != Schedule::Interleaved) {
    fail("vpp_schedule", "parallel.vpp",
         "vpp " + str(p.vpp) + " needs `schedule: interleaved`");
  }
  if (s.schedule == Schedule::Interleaved && p.pp == 1) {
    fail("vpp_schedule", "schedule", "the interleaved schedule needs pp > 1");
  }
  if ((s.schedule == Schedule::DualPipe) && p.pp % 2 != 0) {
    fail("dualpipe_pp", "parallel.pp", "DualPipe needs an even pp, got " + str(p.pp));
  }
  if (!p.pipeline_layout.empty()) {
    // A spelled-out layout: its chunks, in the schedule's count, hold the model exactly.
    const std::vector<config::LayoutChunk>& chunks = config::layout_chunks(p.pipeline_layout);
    const long long want = config::model_chunks(s);
    int layers = 0, mtp = 0, embedding = 0, loss = 0;
    bool layer_after_mtp = false;
    for (const config::LayoutChunk& c : chunks) {
      layer_after_mtp = layer_after_mtp || (mtp > 0 && c.layers > 0);
      layers += c.layers;
      mtp += c.mtp;
      embedding += c.embedding;
      loss += c.loss;
    }
    const std::string what = "pipeline_model_parallel_layout \"" + p.pipeline_layout + "\" ";
    if (static_cast<long long>(chunks.size()) != want) {
      fail("pipeline_layout", "parallel.pipeline_model_parallel_layout",
           what + "has " + str(static_cast<long long>(chunks.size())) + " chunks; this schedule runs pp" +
               (s.schedule == Schedule::Interleaved ? " x vpp" : s.schedule == Schedule::DualPipeV ? " x 2" : "") +
               " = " + str(want));
    } else if (layers != m.layers || mtp != m.mtp_depth) {
      fail("pipeline_layout", "parallel.pipeline_model_parallel_layout",
           what + "places " + str(layers) + " layers and " + str(mtp) + " MTP layers; the model has " +
               str(m.layers) + " and " + str(m.mtp_depth));
    } else if (embedding != 1 || chunks.front().embedding != 1 || loss != 1 || chunks.back().loss != 1) {
      fail("pipeline_layout", "parallel.pipeline_model_parallel_layout",
           what + "must hold `E` once, in its first chunk, and `L` once, in its last");
    } else if (layer_after_mtp) {
      fail("pipeline_layout", "parallel.pipeline_model_parallel_layout",
           what + "places a transformer layer after an MTP layer");
    }
  } else {
    // Chunks that must hold transformer layers: all but the first and the last, which may
    // hold only the embedding and the head (Megatron's account-for-embedding/loss layouts).
    // Fixed first / last chunks take their layers out of the spread.
    const long long chunks = static_cast<long long>(p.pp) * p.vpp;
    const int fixed = p.first_stage_layers + p.last_stage_layers;
    const long long spread = chunks - (p.first_stage_layers > 0) - (p.last_stage_layers > 0);
    const long long need = std::max(0LL, spread - (p.first_stage_layers > 0 ? 0 : 1) - (p.last_stage_layers > 0 ? 0 : 1));
    if (fixed > m.layers || (chunks > 1 && m.layers - fixed < need) || (chunks == 1 && fixed > 0)) {
      fail("layers_pp", "parallel.pp",
           "pp x vpp = " + str(chunks) + " model chunks" +
               (fixed > 0 ? " with " + str(fixed) + " layers fixed on the first / last" : std::string()) +
               ", but the model's " + str(m.layers) + " layers cannot give every inner chunk a layer");
    }
  }
  // Megatron-Core's CPU offload of layers' activations (transformer_config.py: no pipeline,
  // fewer layers than the model's).
  if (s.training.offload_layers > 0 && p.pp > 1) {
    fail("offload_layers_pp", "training.offload_layers",
         "offload_layers " + str(s.training.offload_layers) + " needs pp 1 (Megatron-Core's CPU offloading has no "
         "pipeline support), pp is " + str(p.pp));
  }
  if (s.training.offload_layers >= m.layers) {
    fail("offload_layers", "training.offload_layers",
         "offload_layers " + str(s.training.offload_layers) + " must be below the model's " + str(m.layers) +
             " layers (one layer's activations at least stay on the device)");
  }
  // A partial recompute counts layers that recompute as training.recompute says. (The search
  // gives it only to candidates that recompute, so it never fires there.)
  if (s.training.recompute_layers > 0 && s.training.recompute.mode == RecomputeMode::None) {
    fail("recompute_layers", "training.recompute_layers",
         "recompute_layers " + str(s.training.recompute_layers) +
             " counts layers that recompute, but training.recompute is none (say which: full, selective, ...)");
  }
  // Megatron-Core runs the LM head in FP8 only under the MXFP8 recipe (transformer_config.py,
  // fp8_output_proj); Transformer Engine fuses the grouped MLP only with MXFP8 (or NVFP4)
  // weights (TransformerEngine@d0067d0 ops/fused/grouped_mlp.py, fuse_grouped_mlp_ops).
  const bool mxfp8 = s.training.precision == Precision::Fp8 && s.training.fp8_recipe == Fp8Recipe::Mxfp8;
  if (s.training.fp8_head && !mxfp8) {
    fail("fp8_head", "training.fp8_head",
         "fp8_head runs the output head under the MXFP8 recipe: it needs precision fp8 and fp8_recipe mxfp8");
  }
  if (s.moe.fused_mlp && (!m.moe || !mxfp8)) {
    fail("fused_mlp", "moe.fused_mlp",
         !m.moe ? std::string("fused_mlp fuses the routed experts' MLP, and the model has no MoE layers")
                : std::string("fused_mlp (Transformer Engine's fused grouped MLP) needs precision fp8 and "
                              "fp8_recipe mxfp8"));
  }
  // Hybrid sharding splits the dp ranks into equal replicas, each sharded (ZeRO >= 1).
  if (p.dp_replicate > 1 && (p.dp % p.dp_replicate != 0 || s.training.zero == 0)) {
    fail("dp_replicate", "parallel.dp_replicate",
         p.dp % p.dp_replicate != 0
             ? "dp_replicate " + str(p.dp_replicate) + " must divide dp " + str(p.dp) + " (equal replicas)"
             : "dp_replicate " + str(p.dp_replicate) + " shards each replica's states, which needs zero 1-3; zero is 0");
  }
  const long long per_step = static_cast<long long>(p.dp) * s.training.micro_batch;
  if (s.training.global_batch % per_step != 0) {
    fail("batch_dp", "training.global_batch",
         "global_batch " + str(s.training.global_batch) + " is not a multiple of dp x micro_batch = " +
             str(p.dp) + " x " + str(s.training.micro_batch) + " = " + str(per_step));
  }
  if (s.training.pipeline_runs > 1 && s.training.global_batch % (per_step * s.training.pipeline_runs) != 0) {
    fail("batch_runs", "training.pipeline_runs",
         "global_batch " + str(s.training.global_batch) +
             " is not a multiple of dp x micro_batch x pipeline_runs = " + str(per_step) + " x " +
             str(s.training.pipeline_runs) + ": every run of the schedule takes the same micro-batches");
  }
  // DualPipe feeds half of a run's micro-batches from each end and runs only with at least
  // two per rank, an even number; DualPipeV with at least two per rank
  // (deepseek-ai/DualPipe@030ce43 dualpipe/dualpipe.py and dualpipe/dualpipev.py, step():
  // `num_chunks % 2 == 0 and num_chunks >= num_ranks * 2`, `num_chunks >= num_ranks * 2`).
  if ((s.schedule == Schedule::DualPipe || s.schedule == Schedule::DualPipeV) && per_step > 0 &&
      s.training.global_batch % per_step == 0) {
    const int runs = schedule::pipeline_runs(s);
    const long long run = schedule::run_micro_batches(s);
    const bool dual = s.schedule == Schedule::DualPipe;
    if (run < 2LL * p.pp || (dual && run % 2 != 0)) {
      fail("dualpipe_micro_batches", "training.global_batch",
           std::string(dual ? "DualPipe" : "DualPipeV") + " runs " + (dual ? "an even number of " : "") +
               "at least 2 x pp = " + str(2LL * p.pp) + " micro-batches per run of the schedule; global_batch / (dp x micro_batch" +
               (runs > 1 ? " x pipeline_runs" : "") + ") gives " + str(run));
    }
  }
  const int seq = s.training.seq_len > 0 ? s.training.seq_len : m.seq_len;
  if (p.cp > 1 && seq % (2 * p.cp) != 0) {
    fail("seq_cp", "parallel.cp",
         "seq_len " + str(seq) + " is not divisible by 2 x cp = " + str(2 * p.cp) +
             " (causal load balancing splits each sequence into 2 cp chunks)");
  }
  if (s.ep_over_dies && hw.device.dies == 1) {
    fail("ep_over_dies", "ep_over_dies",
         "`ep_over_dies` needs a multi-die device; " + hw.device.name + " has 1 die");
  }
  if (!m.moe) {
    if (p.ep > 1 || p.etp > 1) {
      fail("moe_fields", "parallel.ep",
           "ep and etp apply to MoE models; " + m.name + " is dense");
    }
  } else {
    const MoeSpec& moe = *m.moe;
    if (moe.routed_experts % p.ep != 0) {
      fail("experts_ep", "parallel.ep",
           "routed experts " + str(moe.routed_experts) + " are not divisible by ep " + str(p.ep));
    }
    const long long ranks = static_cast<long long>(p.tp) * p.cp * p.dp *
                            (s.ep_over_dies ? hw.device.dies : 1);
    const long long ep_etp = static_cast<long long>(p.ep) * p.etp;
    if (ranks % ep_etp != 0) {
      fail("ep_world", "parallel.ep",
           "ep x etp = " + str(ep_etp) + " does not divide the " + str(ranks) +
               " expert ranks of a stage (tp x cp x dp" +
               (s.ep_over_dies ? " x " + str(hw.device.dies) + " dies" : std::string()) + ")");
    }
  }
  if (s.moe.chunks > 1 && s.moe.dispatch != Dispatch::SendRecvAllGather && s.moe.dispatch != Dispatch::SendRecvDeepEp) {
    fail("chunks_dispatch", "moe.chunks",
         "moe.chunks " + str(s.moe.chunks) +
             " applies to the two-stage schemes (sendrecv_allgather, sendrecv_deepep); the others are one transfer");
  }
}
#undef fail

}  // namespace

std::vector<RuleViolation> check_rules(const Strategy& s, const HardwareSpec& hw, const ModelSpec& m) {
  std::vector<RuleViolation> out;
  check(s, hw, m, [&](const char* rule, const char* key, auto&& message) {
    out.push_back(RuleViolation{rule, message(), key});
  });
  return out;
}

const char* first_broken_rule(const Strategy& s, const HardwareSpec& hw, const ModelSpec& m) {
  const char* first = nullptr;  // rule names are string literals
  check(s, hw, m, [&](const char* rule, const char*, auto&&) {
    if (first == nullptr) first = rule;
  });
  return first;
}

}  // namespace paraplan
