// A plan as the launch settings of the frameworks that run it: Megatron-LM's
// pretrain_gpt.py arguments (megatron/training/arguments.py names) and a torchtitan job
// TOML (torchtitan/config/job_config.py sections). What the target has no setting for is
// written as a comment `# not expressible: ...`, with the nearest setting where there is one.

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "config/parse.hpp"
#include "config/pipeline_layout.hpp"
#include "paraplan/interop.hpp"
#include "schedule/layout.hpp"
#include "util/strings.hpp"

namespace paraplan {
namespace {

using config::spelling;

std::string str(long long v) { return std::to_string(v); }

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Megatron-LM's --recompute-modules names, which the strategy files use too, in
// RecomputeModule order.
constexpr const char* kModuleNames[kRecomputeModuleCount] = {
    "core_attn", "layernorm", "mla_up_proj", "mlp", "moe", "moe_act", "shared_experts"};

std::vector<std::string> recompute_modules(const Recompute& r) {
  std::vector<std::string> out;
  for (int i = 0; i < kRecomputeModuleCount; ++i) {
    if (r.modules[static_cast<std::size_t>(i)]) out.emplace_back(kModuleNames[i]);
  }
  return out;
}

int seq_len(const Plan& plan) {
  return plan.strategy.training.seq_len > 0 ? plan.strategy.training.seq_len : plan.model.seq_len;
}

// Transformer layers of each model chunk, in model order, as paraplan places them.
std::vector<int> chunk_layers(const Plan& plan) {
  const Strategy& s = plan.strategy;
  const Parallel& p = s.parallel;
  return schedule::chunk_layer_counts(plan.model.layers, config::model_chunks(s), p.first_stage_layers,
                                      p.last_stage_layers, p.embedding_in_split, p.loss_in_split);
}

std::string join_counts(const std::vector<int>& counts) {
  std::vector<std::string> parts;
  for (int c : counts) parts.push_back(str(c));
  return util::join(parts, " ");
}

bool all_equal(const std::vector<int>& v, std::size_t from, std::size_t to) {
  for (std::size_t i = from; i < to; ++i) {
    if (v[i] != v[from]) return false;
  }
  return true;
}

// The nearest uneven split Megatron-LM can express for `layers` over `chunks` chunks: equal
// middle chunks of m layers, the first and last holding the rest (the first the larger half).
bool megatron_split(int layers, int chunks, int& first, int& middle, int& last) {
  if (chunks < 3) return false;
  for (int m = layers / (chunks - 2); m >= 1; --m) {
    const int rest = layers - m * (chunks - 2);
    if (rest >= 2 && rest <= 2 * m) {
      middle = m;
      first = (rest + 1) / 2;
      last = rest - first;
      return true;
    }
  }
  return false;
}

/// Lines of one output, with the settings a target cannot express collected apart.
struct Lines {
  std::string text;
  void add(const std::string& line) { text += line + "\n"; }
};

// ---------------------------------------------------------------------------------------
// Megatron-LM
// ---------------------------------------------------------------------------------------

std::string megatron(const Plan& plan) {
  const Strategy& s = plan.strategy;
  const ModelSpec& m = plan.model;
  const Parallel& p = s.parallel;
  const Training& t = s.training;
  const int dpn = plan.hardware.devices_per_node();
  const long long world = static_cast<long long>(s.nodes) * dpn;
  const bool moe = m.moe.has_value();
  const int seq = seq_len(plan);
  std::vector<std::string> lost;  // "not expressible" lines

  Lines o;
  o.add("# Megatron-LM arguments for " + s.name + ": " + m.name + " on " + plan.hardware.name +
        " (paraplan export --to megatron)");
  o.add("# " + str(s.nodes) + " nodes x " + str(dpn) + " GPUs = " + str(world) +
        " ranks; data parallel " + str(p.dp) + " = ranks / (TP " + str(p.tp) + " x PP " +
        str(p.pp) + " x CP " + str(p.cp) + "), which Megatron-LM derives");
  o.add("# torchrun --nnodes " + str(s.nodes) + " --nproc-per-node " + str(dpn) +
        " pretrain_gpt.py \"${MEGATRON_ARGS[@]}\" plus data, tokenizer and optimizer arguments");
  o.add("MEGATRON_ARGS=(");
  auto arg = [&](const std::string& a) { o.add("  " + a); };

  // ---- model ----
  arg("# model " + m.name);
  arg("--num-layers " + str(m.layers));
  arg("--hidden-size " + str(m.hidden));
  arg("--ffn-hidden-size " + str(m.ffn.intermediate));
  arg("--num-attention-heads " + str(m.attention.heads));
  if (m.attention.kind == AttentionKind::Mla) {
    arg("--multi-latent-attention");
    if (m.attention.q_lora_rank > 0) arg("--q-lora-rank " + str(m.attention.q_lora_rank));
    arg("--kv-lora-rank " + str(m.attention.kv_lora_rank));
    arg("--qk-head-dim " + str(m.attention.qk_nope_head_dim));
    arg("--qk-pos-emb-head-dim " + str(m.attention.qk_rope_head_dim));
    arg("--v-head-dim " + str(m.attention.v_head_dim));
  } else {
    if (m.attention.kind == AttentionKind::Gqa) {
      arg("--group-query-attention");
      arg("--num-query-groups " + str(m.attention.kv_heads));
    }
    arg("--kv-channels " + str(m.attention.head_dim));
  }
  arg("--max-position-embeddings " + str(std::max(m.seq_len, seq)));
  switch (m.position_embedding) {
    case PositionEmbedding::Rope:
      arg("--position-embedding-type rope");
      break;
    case PositionEmbedding::Learned:
      arg("--position-embedding-type learned_absolute");
      break;
    case PositionEmbedding::None:
      arg("--position-embedding-type none");
      break;
    case PositionEmbedding::Alibi:
      lost.push_back("position_embedding alibi (Megatron-LM has learned_absolute, rope and none)");
      break;
  }
  arg(std::string("--normalization ") + (m.norm == NormKind::RmsNorm ? "RMSNorm" : "LayerNorm"));
  if (m.ffn.kind == FfnKind::Swiglu) arg("--swiglu");
  if (!m.bias) arg("--disable-bias-linear");
  if (!m.tied_embeddings) arg("--untie-embeddings-and-output-weights");
  arg("--attention-dropout " + num(m.attention_dropout));
  arg("--hidden-dropout " + num(m.hidden_dropout));
  arg("# vocabulary " + str(m.vocab) + ": from the tokenizer (or --vocab-size " + str(m.vocab) +
      " with --tokenizer-type NullTokenizer)");
  if (moe) {
    const MoeSpec& e = *m.moe;
    arg("--num-experts " + str(e.routed_experts));
    arg("--moe-router-topk " + str(e.top_k));
    arg("--moe-ffn-hidden-size " + str(e.expert_intermediate));
    if (e.shared_experts > 0) {
      arg("--moe-shared-expert-intermediate-size " +
          str(static_cast<long long>(e.shared_experts) * e.shared_expert_intermediate));
    }
    if (e.dense_layers > 0) {
      arg("--moe-layer-freq \"([0]*" + str(e.dense_layers) + "+[1]*" +
          str(m.layers - e.dense_layers) + ")\"");
    }
    arg("--moe-grouped-gemm");
    // Transformer Engine's fused grouped MLP: the op fuser, and TE's switch for the CuTe-DSL
    // kernels (an environment variable, NVTE_CUTEDSL_FUSED_GROUPED_MLP=1)
    if (s.moe.fused_mlp) {
      arg("--use-transformer-engine-op-fuser");
      arg("# with NVTE_CUTEDSL_FUSED_GROUPED_MLP=1 in the environment");
    }
  }
  if (m.mtp_depth > 0) arg("--mtp-num-layers " + str(m.mtp_depth));

  // ---- parallelism ----
  arg("# parallelism");
  arg("--tensor-model-parallel-size " + str(p.tp));
  if (p.sp) arg("--sequence-parallel");
  arg("--pipeline-model-parallel-size " + str(p.pp));
  const bool explicit_split = p.first_stage_layers > 0 || p.last_stage_layers > 0;
  const bool accounted = p.embedding_in_split || p.loss_in_split;
  const std::vector<int> counts = chunk_layers(plan);
  const int chunks = static_cast<int>(counts.size());
  const bool even = all_equal(counts, 0, counts.size());
  if (p.vpp > 1 && s.schedule == Schedule::Interleaved && p.pipeline_layout.empty()) {
    if (even && !explicit_split && !accounted) {
      arg("--num-layers-per-virtual-pipeline-stage " + str(counts.front()));
    } else {
      arg("--num-virtual-stages-per-pipeline-rank " + str(p.vpp));
    }
  }
  if (!p.pipeline_layout.empty()) {
    // Megatron-Core's own layout string, as the strategy spells it (it sets the chunk count).
    arg("--pipeline-model-parallel-layout \"" + p.pipeline_layout + "\"");
  } else if (explicit_split || accounted) {
    // Megatron-LM's own options, which paraplan reproduces: pass them on as they are.
    if (p.first_stage_layers > 0)
      arg("--decoder-first-pipeline-num-layers " + str(p.first_stage_layers));
    if (p.last_stage_layers > 0)
      arg("--decoder-last-pipeline-num-layers " + str(p.last_stage_layers));
    if (p.embedding_in_split) arg("--account-for-embedding-in-pipeline-split");
    if (p.loss_in_split) arg("--account-for-loss-in-pipeline-split");
  } else if (!even && chunks >= 3 && all_equal(counts, 1, counts.size() - 1)) {
    // Equal middle chunks, uneven ends: exactly Megatron-LM's first / last stage options.
    if (counts.front() != counts[1])
      arg("--decoder-first-pipeline-num-layers " + str(counts.front()));
    if (counts.back() != counts[1]) arg("--decoder-last-pipeline-num-layers " + str(counts.back()));
  } else if (!even) {
    std::string line = "layers per pipeline chunk " + join_counts(counts) +
                       " (paraplan's spread of " + str(m.layers) +
                       " layers; Megatron-LM evens the middle chunks)";
    int first = 0, middle = 0, last = 0;
    if (megatron_split(m.layers, chunks, first, middle, last)) {
      line += "; nearest: --decoder-first-pipeline-num-layers " + str(first) +
              " --decoder-last-pipeline-num-layers " + str(last) + " (" + str(middle) +
              " in each other chunk; evaluate it with --set "
              "parallel.decoder_first_pipeline_num_layers=" +
              str(first) + " --set parallel.decoder_last_pipeline_num_layers=" + str(last) + ")";
    }
    lost.push_back(line);
  }
  arg("--context-parallel-size " + str(p.cp));
  if (p.cp > 1) {
    if (s.training.cp_comm == CpComm::TorchAllGather) {
      lost.push_back("cp_comm torch_allgather (torch's experimental ring attention; nearest: --cp-comm-type allgather)");
    } else {
      arg(std::string("--cp-comm-type ") + (s.training.cp_comm == CpComm::P2p         ? "p2p"
                                            : s.training.cp_comm == CpComm::AllGather ? "allgather"
                                                                                      : "a2a"));
    }
  }
  if (moe) {
    arg("--expert-model-parallel-size " + str(p.ep));
    arg("--expert-tensor-parallel-size " + str(p.etp));
  }
  if (s.ep_over_dies) {
    lost.push_back("ep_over_dies (EP " + str(p.ep) + " over the " + str(plan.hardware.device.dies) +
                   " dies of each " + plan.hardware.device.name +
                   "; Megatron-LM's ranks are whole devices)");
  }
  switch (s.schedule) {
    case Schedule::OneFOneB:
    case Schedule::Interleaved:
      break;
    case Schedule::ZeroBubble:
      lost.push_back(
          "schedule zero_bubble (ZB-H1; Megatron-LM runs 1F1B, or interleaved 1F1B with virtual "
          "stages)");
      break;
    case Schedule::DualPipe:
    case Schedule::DualPipeV:
      lost.push_back("schedule " + std::string(spelling(config::kScheduleNames, s.schedule)) +
                     " (DeepSeek's; Megatron-LM runs 1F1B or interleaved 1F1B, and "
                     "--overlap-moe-expert-parallel-comm hides the EP all-to-all within them)");
      break;
  }

  // ---- batch ----
  arg("# batch");
  arg("--micro-batch-size " + str(t.micro_batch));
  arg("--global-batch-size " + str(t.global_batch));
  arg("--seq-length " + str(seq));
  if (t.pipeline_runs > 1 && p.pp > 1) {
    lost.push_back("training.pipeline_runs " + str(t.pipeline_runs) +
                   " (Megatron-LM feeds all of a step's micro-batches to one run of the schedule)");
  }

  // ---- precision ----
  arg("# precision");
  arg("--bf16");
  if (t.precision == Precision::Fp8) {
    arg("--fp8-format hybrid");
    arg("--fp8-recipe " + std::string(spelling(config::kFp8RecipeNames, t.fp8_recipe)));
    if (t.fp8_weights_only()) arg("--fp8-param-gather");
    if (t.fp8_head) arg("--fp8-output-proj");
  }
  if (t.bf16_grads) arg("--grad-reduce-in-bf16");
  if (t.grad_sync_micro_batch) {
    lost.push_back("training.grad_sync micro_batch (Megatron-LM accumulates the main gradients over a "
                   "step's micro-batches and reduces them once)");
  }
  if (t.fp32_grad_add) {
    lost.push_back("training.grad_accumulation fp32_add (Megatron-LM's weight-gradient GEMMs accumulate "
                   "into the FP32 main gradients; DeepSpeed's BF16 optimizer adds them after each backward)");
  }
  if (t.grad_all_reduce && t.zero > 0) {
    lost.push_back("training.grad_reduce all_reduce (Megatron-LM's distributed optimizer reduce-scatters "
                   "the gradients)");
  }
  // Per-layer graphs: a dense layer whole (no module list), a dropless MoE layer up to its
  // host sync (NVIDIA/Megatron-LM@d98e8a64dd megatron/core/transformer/enums.py,
  // CudaGraphModule).
  // A full-iteration graph (cuda_graph_impl full_iteration, which requires the NaN check off;
  // megatron/training/arguments.py) with static expert buffers for a dropless MoE.
  if (t.cuda_graphs_full) {
    arg("# CUDA graphs");
    arg("--cuda-graph-impl full_iteration");
    arg("--no-check-for-nan-in-loss-and-grad");
    if (plan.model.moe) arg("# static expert buffers: set --moe-expert-rank-capacity-factor (e.g. 1.5)");
  } else if (t.cuda_graphs) {
    arg("# CUDA graphs");
    arg("--cuda-graph-impl transformer_engine");
    if (plan.model.moe) arg("--cuda-graph-modules attn moe_router moe_preprocess");
  }

  // ---- memory ----
  arg("# memory");
  switch (t.recompute.mode) {
    case RecomputeMode::None:
      break;
    case RecomputeMode::Full:
      arg("--recompute-granularity full");
      if (t.recompute_layers > 0) {
        // The first N layers of each model chunk (megatron/core/recompute.py, method block).
        arg("--recompute-method block");
        arg("--recompute-num-layers " + str(t.recompute_layers));
      } else {
        arg("--recompute-method uniform");
        arg("--recompute-num-layers 1");
      }
      break;
    case RecomputeMode::Selective:
      arg("--recompute-granularity selective");
      break;
    case RecomputeMode::Op:
      // Megatron-LM has no every-second-matmul policy; its selective mode is the nearest.
      arg("--recompute-granularity selective");
      lost.push_back("training.recompute op (torchtitan's selective op policy; written as Megatron's selective)");
      break;
    case RecomputeMode::Modules:
      arg("--recompute-granularity selective");
      arg("--recompute-modules " + util::join(recompute_modules(t.recompute), " "));
      break;
  }
  if (t.partial_recompute() && t.recompute.mode != RecomputeMode::Full)
    lost.push_back("training.recompute_layers " + str(t.recompute_layers) +
                   " with recompute " + config::recompute_spelling(t.recompute) +
                   " (Megatron-LM counts layers only for full recompute; written for every layer)");
  if (t.zero >= 1) arg("--use-distributed-optimizer");
  if (t.zero >= 1 && p.dp_replicate > 1) arg("--num-distributed-optimizer-instances " + str(p.dp_replicate));
  if (t.zero == 2) {
    lost.push_back(
        "training.zero 2 (gradient sharding; the distributed optimizer shards the optimizer states "
        "and reduce-scatters the gradients, keeping a full gradient buffer)");
  }
  if (t.zero == 3) {
    lost.push_back(
        "training.zero 3 (parameter sharding: Megatron-Core's own FSDP in recent versions; nearest "
        "here: --use-distributed-optimizer)");
  }
  switch (t.optimizer) {
    case Optimizer::Adam:
      break;
    case Optimizer::AdamBf16:
      arg("--use-precision-aware-optimizer");
      arg("--exp-avg-dtype bf16");
      arg("--exp-avg-sq-dtype bf16");
      break;
    case Optimizer::Adam8bit:
      lost.push_back(
          "optimizer adam8bit (Megatron-LM's Adam keeps FP32 or, with "
          "--use-precision-aware-optimizer, "
          "BF16 moments)");
      break;
  }
  if (t.optimizer_offload) {
    arg("--optimizer-cpu-offload");
    arg("--optimizer-offload-fraction 1.0");
  }
  if (t.activation_offload) {
    lost.push_back(
        "training.activation_offload (activations to host memory; Transformer Engine's CPU offload "
        "is not a pretrain_gpt.py argument)");
  }
  // Megatron-LM's arguments.py turns cpu_offloading on when the layer count is set.
  if (t.offload_layers > 0) arg("--cpu-offloading-num-layers " + std::to_string(t.offload_layers));
  if (t.unfused_attention) {
    arg("--attention-backend unfused");
  } else if (t.attention_kernel == "cudnn") {
    arg("--attention-backend fused");
  } else if (t.attention_kernel == "fa2" || t.attention_kernel == "fa3") {
    arg("--attention-backend flash");
  } else if (!t.attention_kernel.empty()) {
    lost.push_back("training.attention " + t.attention_kernel +
                   " (Megatron-LM picks flash, fused (cuDNN), "
                   "unfused or local with --attention-backend)");
  }
  if (t.eager_elementwise) {
    lost.push_back(
        "training.elementwise eager (Megatron-LM runs fused norm, SwiGLU, RoPE and cross-entropy "
        "kernels)");
  }

  // ---- MoE execution ----
  if (moe) {
    arg("# MoE");
    switch (s.moe.dispatch) {
      case Dispatch::AllGather:
        arg("--moe-token-dispatcher-type allgather");
        break;
      case Dispatch::AllToAll:
        arg("--moe-token-dispatcher-type alltoall");
        break;
      case Dispatch::DeepEp:
        arg("--moe-token-dispatcher-type flex");
        arg("--moe-flex-dispatcher-backend deepep   # before Megatron-Core 0.16: "
            "--moe-enable-deepep");
        break;
      case Dispatch::SendRecvAllGather:
      case Dispatch::SendRecvDeepEp:
        arg(std::string("--moe-token-dispatcher-type ") +
            (s.moe.dispatch == Dispatch::SendRecvDeepEp ? "flex" : "allgather"));
        if (s.moe.dispatch == Dispatch::SendRecvDeepEp) arg("--moe-flex-dispatcher-backend deepep");
        lost.push_back(
            "moe.dispatch " + std::string(spelling(config::kDispatchNames, s.moe.dispatch)) +
            " (the seeds' send/recv relay between node pairs; nearest: the dispatcher above)");
        break;
    }
    if (m.moe->expert_groups > 0 && m.moe->max_nodes_per_token > 0) {
      // the model's own expert groups
      arg("--moe-router-num-groups " + str(m.moe->expert_groups));
      arg("--moe-router-group-topk " + str(m.moe->max_nodes_per_token));
    } else if (s.moe.routing == Routing::NodeLimited && m.moe->max_nodes_per_token > 0) {
      // Megatron-LM's group-limited routing with one group per node of the EP group.
      const int ep_nodes = dpn > 0 && p.ep % dpn == 0 ? p.ep / dpn : 0;
      if (ep_nodes > m.moe->max_nodes_per_token && m.moe->routed_experts % ep_nodes == 0) {
        arg("--moe-router-num-groups " + str(ep_nodes));
        arg("--moe-router-group-topk " + str(m.moe->max_nodes_per_token));
      } else if (ep_nodes == 0) {
        lost.push_back("moe.routing node_limited (EP " + str(p.ep) + " is not whole nodes of " +
                       str(dpn) +
                       " GPUs, so --moe-router-num-groups cannot be one group per node)");
      }
    }
    if (balanced_load(s.moe.routing)) {
      // The nearest flag draws random router logits per token: loads balanced on average,
      // each expert's binomial around it (what `moe.routing: uniform` prices), not exact.
      arg("--moe-router-force-load-balancing");
      lost.push_back("moe.routing " + std::string(config::spelling(config::kRoutingNames, s.moe.routing)) +
                     " (exact: --moe-router-force-load-balancing draws random router logits, so each expert's load "
                     "is binomial around the mean, as moe.routing uniform prices it; every expert at its mean takes "
                     "--moe-expert-capacity-factor 1 --moe-pad-expert-input-to-capacity, which drops tokens)");
    }
    if (s.moe.fp8_dispatch && t.precision == Precision::Fp8) {
      lost.push_back(
          "moe.dispatch_precision fp8 (tokens dispatched in FP8; Megatron-LM dispatches BF16)");
    }
    if (s.moe.imbalance > 1.0) {
      arg("# moe.imbalance " + num(s.moe.imbalance) +
          " is an assumption about the routing, not a setting");
    }
  }

  // ---- overlap ----
  arg("# overlap");
  if (s.overlap.dp && p.dp > 1) {
    arg("--overlap-grad-reduce");
    if (t.zero >= 1) arg("--overlap-param-gather");
  }
  if (s.overlap.tp && p.tp > 1) arg("--tp-comm-overlap");
  if (moe && s.overlap.ep && p.ep > 1 &&
      (s.schedule == Schedule::OneFOneB || s.schedule == Schedule::Interleaved)) {
    arg("--overlap-moe-expert-parallel-comm");
  }
  switch (s.collective_algorithm) {
    case CollectiveAlgorithm::Auto:
      break;
    case CollectiveAlgorithm::Ring:
      arg("# environment: NCCL_ALGO=Ring (collective_algorithm ring)");
      break;
    case CollectiveAlgorithm::Tree:
      arg("# environment: NCCL_ALGO=Tree (collective_algorithm tree)");
      break;
    case CollectiveAlgorithm::Hierarchical:
    case CollectiveAlgorithm::HalvingDoubling:
      lost.push_back(
          "collective_algorithm " +
          std::string(spelling(config::kCollectiveAlgorithmNames, s.collective_algorithm)) +
          " (NCCL implements ring and tree)");
      break;
  }
  for (const std::string& l : lost) arg("# not expressible: " + l);
  o.add(")");
  return o.text;
}

// ---------------------------------------------------------------------------------------
// torchtitan
// ---------------------------------------------------------------------------------------

std::string quote(const std::string& s) { return "\"" + s + "\""; }

// torchtitan's module names of a decoder LLM (torchtitan/distributed/pipeline_parallel.py,
// generate_llm_fqn_per_model_part): one list per model chunk.
std::string module_fqns(const std::vector<int>& counts) {
  std::string out = "module_fqns_per_model_part = [\n";
  int layer = 0;
  for (std::size_t c = 0; c < counts.size(); ++c) {
    std::vector<std::string> names;
    if (c == 0) names.push_back(quote("tok_embeddings"));
    for (int i = 0; i < counts[c]; ++i) names.push_back(quote("layers." + str(layer++)));
    if (c + 1 == counts.size()) {
      names.push_back(quote("norm"));
      names.push_back(quote("output"));
    }
    out += "  [" + util::join(names, ", ") + "],\n";
  }
  return out + "]";
}

std::string torchtitan(const Plan& plan) {
  const Strategy& s = plan.strategy;
  const ModelSpec& m = plan.model;
  const Parallel& p = s.parallel;
  const Training& t = s.training;
  const int dpn = plan.hardware.devices_per_node();
  const long long world = static_cast<long long>(s.nodes) * dpn;
  const bool moe = m.moe.has_value();

  Lines o;
  o.add("# torchtitan job settings for " + s.name + ": " + m.name + " on " + plan.hardware.name +
        " (paraplan export --to torchtitan; the TOML job file of torchtitan v0.2)");
  o.add("# " + str(s.nodes) + " nodes x " + str(dpn) + " GPUs = " + str(world) +
        " ranks: torchrun --nnodes " + str(s.nodes) + " --nproc-per-node " + str(dpn) +
        " -m torchtitan.train --job.config_file JOB.toml");
  o.add("# Merge into a job file whose [model] names torchtitan's definition of " + m.name +
        " (name, flavor); these sections set the plan.");
  if (t.precision == Precision::Fp8) {
    o.add(std::string("# precision fp8: in [model], converters = [\"quantize.linear.float8\"") +
          (moe ? ", \"quantize.grouped_mm.float8\"" : "") + "] (torchao Float8)");
  }
  o.add("");

  // ---- [parallelism] ----
  std::vector<std::string> lost;
  o.add("[parallelism]");
  if (t.zero == 0) {
    o.add("data_parallel_replicate_degree = " + str(p.dp));
    o.add("data_parallel_shard_degree = 1");
  } else {
    o.add("data_parallel_replicate_degree = " + str(p.dp_replicate));
    o.add("data_parallel_shard_degree = " + str(p.dp / std::max(1, p.dp_replicate)));
    if (t.zero < 3) {
      // FSDP2 keeping the gathered parameters from forward to backward: ZeRO-2's traffic.
      o.add("fsdp_reshard_after_forward = \"never\"");
      if (t.zero == 1) {
        lost.push_back(
            "training.zero 1 (optimizer states only; torchtitan shards with FSDP2, and "
            "fsdp_reshard_after_forward = \"never\" is its ZeRO-2-like mode)");
      }
    }
  }
  o.add("tensor_parallel_degree = " + str(p.tp));
  if (p.tp > 1 && !p.sp) {
    lost.push_back(
        "parallel.sp false (torchtitan's tensor parallel plan always shards the norms over the "
        "sequence)");
  }
  if (s.overlap.tp && p.tp > 1)
    o.add("enable_async_tensor_parallel = true   # with [compile] enable = true");
  o.add("pipeline_parallel_degree = " + str(p.pp));
  if (p.pp > 1) {
    std::string sched;
    // Chunks as torchtitan builds them: one per stage, vpp per rank interleaved, two per rank
    // for the V schedules.
    std::vector<int> counts = chunk_layers(plan);
    switch (s.schedule) {
      case Schedule::OneFOneB:
        sched = "1F1B";
        break;
      case Schedule::Interleaved:
        sched = "Interleaved1F1B";
        break;
      case Schedule::ZeroBubble:
        sched = "1F1B";
        lost.push_back(
            "schedule zero_bubble (ZB-H1, one stage per rank; torchtitan's zero-bubble schedules "
            "InterleavedZeroBubble and ZBVZeroBubble run two or more stages per rank)");
        break;
      case Schedule::DualPipeV:
        sched = "DualPipeV";
        break;
      case Schedule::DualPipe:
        sched = "DualPipeV";
        counts = schedule::chunk_layer_counts(m.layers, 2 * p.pp, 0, 0, p.embedding_in_split,
                                              p.loss_in_split);
        lost.push_back(
            "schedule dualpipe (two copies of the model; nearest: DualPipeV, its one-copy variant, "
            "set here)");
        break;
    }
    o.add("pipeline_parallel_schedule = " + quote(sched));
    if (all_equal(counts, 0, counts.size())) {
      // Every chunk the same: torchtitan's own split with no discount for the embedding / head.
      o.add("pipeline_parallel_first_stage_less_layers = 0");
      o.add("pipeline_parallel_last_stage_less_layers = 0");
      o.add("pipeline_parallel_layers_per_stage = " + str(counts.front()));
    } else {
      o.add("# layers per chunk " + join_counts(counts) + ", as paraplan spreads them");
      o.add(module_fqns(counts));
    }
    o.add("pipeline_parallel_microbatch_size = " + str(t.micro_batch));
  }
  o.add("context_parallel_degree = " + str(p.cp));
  if (p.cp > 1) {
    if (s.training.cp_comm == CpComm::TorchAllGather) {
      o.add("context_parallel_rotate_method = \"allgather\"");
    } else {
      o.add("context_parallel_rotate_method = \"alltoall\"");
      lost.push_back("cp_comm " + std::string(config::spelling(config::kCpCommNames, s.training.cp_comm)) +
                     " (Transformer Engine's; torch's ring attention passes K/V by all-to-all, the nearest)");
    }
  }
  if (moe) {
    o.add("expert_parallel_degree = " + str(p.ep));
    o.add("expert_tensor_parallel_degree = " + str(p.etp));
    // torchtitan takes the EP ranks from the sharded DP x CP ranks, and the TP ranks too when
    // the experts are not tensor-parallel; expert TP is 1 or TP.
    const long long pool =
        static_cast<long long>(t.zero == 0 ? 1 : p.dp) * p.cp * (p.etp == 1 ? p.tp : 1);
    if (p.ep > 1 && pool % p.ep != 0) {
      lost.push_back(
          "EP " + str(p.ep) + " (torchtitan forms EP from data_parallel_shard x context_parallel" +
          std::string(p.etp == 1 ? " x tensor_parallel" : "") + " = " + str(pool) + " ranks)");
    }
    if (p.etp != 1 && p.etp != p.tp) {
      lost.push_back("etp " + str(p.etp) +
                     " (torchtitan's expert tensor parallel degree is 1 or the TP degree)");
    }
    const bool deepep =
        s.moe.dispatch == Dispatch::DeepEp || s.moe.dispatch == Dispatch::SendRecvDeepEp;
    o.add(std::string("expert_parallel_comm_backend = ") +
          (deepep ? "\"deepep\"" : "\"standard\""));
    if (s.moe.dispatch != Dispatch::AllToAll && s.moe.dispatch != Dispatch::DeepEp) {
      lost.push_back("moe.dispatch " +
                     std::string(spelling(config::kDispatchNames, s.moe.dispatch)) +
                     " (torchtitan dispatches with all-to-all, or DeepEP)");
    }
    if (s.moe.routing == Routing::NodeLimited && m.moe->max_nodes_per_token > 0) {
      lost.push_back("moe.routing node_limited (at most " + str(m.moe->max_nodes_per_token) +
                     " nodes per token: a property of torchtitan's model definition, not a "
                     "parallelism setting)");
    }
    if (s.moe.fp8_dispatch && t.precision == Precision::Fp8) {
      lost.push_back("moe.dispatch_precision fp8 (tokens dispatched in FP8)");
    }
  }
  if (s.ep_over_dies) {
    lost.push_back("ep_over_dies (EP over the dies of each " + plan.hardware.device.name +
                   "; torchtitan's ranks are whole devices)");
  }
  for (const std::string& l : lost) o.add("# not expressible: " + l);
  lost.clear();
  o.add("");

  // ---- [training] ----
  o.add("[training]");
  // local_batch_size is per DP rank: with a pipeline one run of the schedule takes it in
  // micro-batches of pipeline_parallel_microbatch_size (training.pipeline_runs runs a step:
  // torchtitan accumulates gradients over global_batch_size / (local_batch_size x DP) of
  // them); without one, it accumulates over that many micro-batches.
  const int local = p.pp > 1 && p.dp > 0 ? t.global_batch / (p.dp * schedule::pipeline_runs(s)) : t.micro_batch;
  o.add("local_batch_size = " + str(local));
  o.add("global_batch_size = " + str(t.global_batch));
  o.add("seq_len = " + str(seq_len(plan)));
  o.add("mixed_precision_param = \"bfloat16\"");
  o.add("mixed_precision_reduce = \"float32\"");
  if (t.bf16_grads)
    lost.push_back("training.grad_precision bf16 (torchtitan reduces gradients in FP32)");
  if (t.grad_sync_micro_batch && p.pp > 1)
    lost.push_back("training.grad_sync micro_batch (torchtitan's pipeline stages are FSDP modules, "
                   "so torch's pipelining reduces their gradients once per run of the schedule)");
  if (t.fp32_grad_add)
    lost.push_back("training.grad_accumulation fp32_add (FSDP accumulates the gradients itself)");
  if (t.grad_all_reduce && t.zero > 0)
    lost.push_back("training.grad_reduce all_reduce (FSDP reduce-scatters the gradients)");
  if (t.precision == Precision::Fp8 && t.fp8_recipe != Fp8Recipe::Tensorwise)
    lost.push_back("training.fp8_recipe " + std::string(spelling(config::kFp8RecipeNames, t.fp8_recipe)) +
                   " (torchao's Float8 linear scales each tensor from its own amax: tensorwise)");
  if (t.fp8_weights_only())
    lost.push_back("training.fp8_params (torchtitan keeps BF16 / FP32 parameter shards; torchao's "
                   "enable_fsdp_float8_all_gather gathers them in FP8 but does not store them so)");
  if (t.optimizer_offload) o.add("enable_cpu_offload = true");
  if (t.activation_offload)
    lost.push_back("training.activation_offload (activations to host memory)");
  if (t.offload_layers > 0)
    lost.push_back("training.offload_layers " + std::to_string(t.offload_layers) +
                   " (layers' activations to host memory: Megatron-Core's CPU offloading)");
  if (t.unfused_attention || !t.attention_kernel.empty()) {
    lost.push_back("training.attention " +
                   std::string(t.unfused_attention ? "unfused" : t.attention_kernel) +
                   " (torchtitan's model definition picks its attention)");
  }
  if (t.eager_elementwise) o.add("# training.elementwise eager: leave [compile] off");
  if (t.cuda_graphs) lost.push_back("training.cuda_graphs (torchtitan has no per-layer CUDA graphs)");
  if (t.fp8_head) lost.push_back("training.fp8_head (torchtitan's Float8 conversion leaves the output head out)");
  if (s.moe.fused_mlp) lost.push_back("moe.fused_mlp (Transformer Engine's fused grouped MLP)");
  for (const std::string& l : lost) o.add("# not expressible: " + l);
  lost.clear();
  o.add("");

  o.add("[optimizer]");
  o.add("name = \"AdamW\"");
  if (t.optimizer != Optimizer::Adam) {
    o.add("# not expressible: optimizer " +
          std::string(spelling(config::kOptimizerNames, t.optimizer)) +
          " (torchtitan's AdamW keeps FP32 moments)");
  }
  o.add("");

  // ---- [activation_checkpoint] ----
  o.add("[activation_checkpoint]");
  switch (t.recompute.mode) {
    case RecomputeMode::None:
      o.add("mode = \"none\"");
      break;
    case RecomputeMode::Full: {
      // Some layers of each chunk: torchtitan's integer option checkpoints every k-th block of
      // the rank (pytorch/torchtitan@8a6c9fe6e torchtitan/distributed/activation_checkpoint.py,
      // use_layer_sac; removed by pytorch/torchtitan@114151ad4), N of each chunk where k =
      // the chunk's layers / N.
      const std::vector<int> counts = chunk_layers(plan);
      const int n = counts.empty() ? 0 : counts.front();
      const int k = t.recompute_layers > 0 && t.recompute_layers < n ? n / t.recompute_layers : 0;
      if (k > 0 && n % t.recompute_layers == 0 && all_equal(counts, 0, counts.size())) {
        o.add("mode = \"selective\"");
        o.add("selective_ac_option = \"" + str(k) + "\"   # every " + str(k) + "th block: " +
              str(t.recompute_layers) + " of each chunk's " + str(n) + " (torchtitan before 114151ad4)");
      } else {
        o.add("mode = \"full\"");
        if (t.recompute_layers > 0 && t.recompute_layers < n)
          o.add("# not expressible: recompute_layers " + str(t.recompute_layers) + " of chunks of " +
                join_counts(counts) + " layers (torchtitan checkpoints every k-th block)");
      }
      break;
    }
    case RecomputeMode::Selective:
      o.add("mode = \"selective\"");
      o.add("selective_ac_option = \"op\"");
      o.add("# approximate: recompute selective (Megatron's, the attention core); torchtitan's op policy "
            "saves attention and every other matmul (paraplan: recompute op)");
      break;
    case RecomputeMode::Op:
      o.add("mode = \"selective\"");
      o.add("selective_ac_option = \"op\"");
      break;
    case RecomputeMode::Modules:
      o.add("mode = \"selective\"");
      o.add("selective_ac_option = \"op\"");
      o.add("# not expressible: recompute [" + util::join(recompute_modules(t.recompute), ", ") +
            "] (torchtitan's selective checkpointing picks ops by its own policy)");
      break;
  }
  if (t.partial_recompute() && t.recompute.mode != RecomputeMode::Full)
    o.add("# not expressible: recompute_layers " + str(t.recompute_layers) + " with recompute " +
          config::recompute_spelling(t.recompute) + " (torchtitan's per-block option checkpoints whole blocks)");
  if (moe && balanced_load(s.moe.routing)) {
    o.add("");
    o.add("[debug]");
    o.add("moe_force_load_balance = true   # balanced routing (torchtitan: for debugging)");
  }
  return o.text;
}

}  // namespace

std::string launch_settings(const Plan& plan, LaunchTarget target) {
  return target == LaunchTarget::Megatron ? megatron(plan) : torchtitan(plan);
}

}  // namespace paraplan
