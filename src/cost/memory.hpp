#pragma once
// The memory model's building blocks, exposed for tests: the parameters per device and the
// activations of one layer for one micro-batch by module (where the layers sit and how many
// activation sets a schedule keeps: schedule/layout.hpp). Formulas and sources: docs/cost-model.md, "Memory".

#include <string>
#include <vector>

#include "paraplan/estimate.hpp"
#include "paraplan/spec.hpp"
#include "schedule/layout.hpp"

namespace paraplan::cost {

/// Bytes per element / parameter.
inline constexpr double kBf16Bytes = 2.0;
inline constexpr double kFp32Bytes = 4.0;
/// 8-bit Adam block size: one FP32 absmax per 2048 values of each moment
/// (Dettmers et al. 2022, "8-bit Optimizers via Block-wise Quantization").
inline constexpr double kAdam8bitBlock = 2048.0;
/// GEMM workspace per device: 32 MiB, the cuBLAS recommendation for Hopper that PyTorch
/// adopted (pytorch/pytorch#120925); assumed for every device.
inline constexpr double kGemmWorkspaceBytes = 32.0 * 1024 * 1024;

/// How activation storage is counted.
struct ActivationOptions {
  /// Flash attention (Dao et al. 2022): no s x s score matrix is stored, only the output
  /// and the FP32 log-sum-exp per query and head. false = Korthikanti et al. 2022's
  /// 5 a s^2 b bytes (softmax output 2, dropout mask 1, dropout output 2).
  bool flash_attention = true;
  /// Dropout on the attention probabilities (without flash attention: a 1-byte mask and
  /// the dropped output per score) and after attention and MLP (1-byte masks), as in
  /// Korthikanti et al. 2022's model; modern LLM pre-training (DeepSeek-V3, Llama 3) uses
  /// none. The model's attention_dropout / hidden_dropout set them.
  bool attention_dropout = false;
  bool hidden_dropout = false;
};

/// One micro-batch through one transformer layer on one device (card), bytes by module,
/// after the strategy's recompute setting (`apply_recompute` = false: as if none).
std::vector<MemoryPart> layer_activations(const Plan& plan, bool moe_layer, double expert_load,
                                          const ActivationOptions& opt = {},
                                          bool apply_recompute = true);

/// Sum of the parts.
double sum(const std::vector<MemoryPart>& parts);

/// Optimizer bytes per parameter: Adam 12 (FP32 master, m, v); 8-bit Adam 6 + 8 / 2048
/// (FP32 master, 8-bit m and v, an FP32 scale per 2048-value block of each).
double optimizer_bytes_per_param(Optimizer o);

/// Parameters per device: dense (everything but routed experts, after TP) and routed experts
/// (E / ep per rank, split by etp; x dies with ep_over_dies).
struct ParamCount {
  double dense = 0;
  double expert = 0;
  /// Of `dense`: the vocabulary embedding, learned positions, output head and final norm,
  /// which never run in an FP8 GEMM and so carry no FP8 weight copy.
  double bf16_only = 0;
};

/// Parameters of one chunk on one device. `embedding_copy`: the rank holds the head but not
/// the embedding and needs its own copy (tied embeddings or MTP, pp > 1; Megatron).
ParamCount chunk_params(const Plan& plan, const schedule::Chunk& c, bool embedding_copy);

/// Everything of the memory model that depends only on the per-layer key (tp, cp, ep, etp,
/// ep_over_dies, micro-batch, recompute, precision, dispatch): computed once, then combined
/// with the pipeline layout, ZeRO, the optimizer and offload per strategy.
struct MemoryInputs {
  std::vector<MemoryPart> dense_act, moe_act, head_act;  ///< one micro-batch, one layer / head
  double dense_act_sum = 0, moe_act_sum = 0, head_act_sum = 0;
  double dense_extra = 0, moe_extra = 0;  ///< recompute working set of one layer
  double cp_work = 0;                     ///< ring attention's buffers while a layer's backward runs
  double dispatch_buffer = 0;             ///< EP dispatch buffers per device
  double T = 0, Tr = 0;                   ///< tokens per device; with SP per TP rank
  double dense_layer = 0;                 ///< params per device of a dense layer
  double moe_layer_dense = 0;             ///< of a MoE layer without routed experts
  double moe_layer_expert = 0;            ///< routed experts of a MoE layer per device
  double vocab_shard_params = 0;          ///< vocab / tp x hidden
  double positions = 0;                   ///< learned positions (not split)
  double final_norm = 0;
  double mtp_own = 0;                     ///< MTP norms + eh_proj per depth, per device
};

/// The per-key inputs of the memory model.
MemoryInputs memory_inputs(const Plan& plan, double expert_load);

/// What a chunk (or, added up, a rank's chunks) holds, counted: the memory of a rank is
/// these counts times the per-key inputs, one multiply per term however many chunks it has.
struct ChunkCounts {
  int dense = 0, moe = 0;   ///< transformer layers of each kind
  int embedding = 0;        ///< chunks holding the input embedding
  int head = 0;             ///< chunks holding final norm, LM head and loss
  int embedding_copy = 0;   ///< chunks needing their own copy of a tied / MTP embedding
  int mtp = 0;              ///< chunks holding the MTP blocks (model with mtp_depth > 0)
  /// Of `dense` / `moe`, the layers that keep every activation (training.recompute_layers
  /// leaves them out of the recompute).
  int kept_dense = 0, kept_moe = 0;
  bool operator==(const ChunkCounts& o) const;
};
/// What chunk `c` holds; `nd_model` = model::dense_layers(m).
ChunkCounts count_chunk(const ModelSpec& m, int nd_model, const schedule::Chunk& c, bool embedding_copy);

/// Parameters of what `n` counts, from precomputed inputs.
ParamCount counted_params(const MemoryInputs& in, const ModelSpec& m, const ChunkCounts& n);

/// Parameters of one chunk from precomputed inputs (what chunk_params computes).
ParamCount chunk_params(const MemoryInputs& in, const ModelSpec& m, const schedule::Chunk& c,
                        bool embedding_copy);

/// Combines per-key inputs with a strategy's layout, ZeRO, optimizer and offload. With
/// `detail` = false only the totals are filled (no per-module parts, no reason strings
/// beyond a short one): the search's fast path. There `stages` keeps one stage per run of
/// consecutive ranks that hold the same layers: the one that holds the most in-flight sets
/// (the first on a tie), so the worst stage, its index `worst_stage` into `stages` and the
/// stage with the most parameters are those of the full list; the host memory per node is
/// summed over every rank all the same.
/// estimate_memory() = combine with detail.
MemoryEstimate combine_memory(const MemoryInputs& in, const HardwareSpec& hw, const ModelSpec& m,
                              const Strategy& s, bool detail);
/// The same into `out`, whose lists keep their storage (no allocation per candidate).
void combine_memory(const MemoryInputs& in, const HardwareSpec& hw, const ModelSpec& m, const Strategy& s,
                    bool detail, MemoryEstimate& out);

/// Expert data-parallel degree: ranks holding the same expert shard,
/// tp x cp x dp (x dies with ep_over_dies) / (ep x etp).
double expert_dp(const Plan& plan);

}  // namespace paraplan::cost
