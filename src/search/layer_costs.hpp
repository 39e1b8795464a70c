#pragma once
// Per-layer costs of a strategy, cached by what changes them. Everything expensive (the op
// graph, GEMM efficiency lookups, routing statistics, collective placement, activation
// bytes) happens here, once per key; the step-time evaluation only recombines the numbers.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "cost/memory.hpp"
#include "paraplan/spec.hpp"

namespace paraplan::search {

/// What the per-layer costs depend on. Pipeline depth, DP, schedule, ZeRO, optimizer and
/// offload do not change them (PP and DP communication is costed per strategy).
struct LayerKey {
  int tp = 1, cp = 1, ep = 1, etp = 1, micro_batch = 1, seq = 0;
  bool sp = false, dies = false;
  RecomputeMode recompute = RecomputeMode::None;
  std::uint8_t modules = 0;  // recompute module bits
  bool partial_recompute = false;  // training.recompute_layers: some layers keep their activations
  Precision precision = Precision::Bf16;
  Dispatch dispatch = Dispatch::AllToAll;
  int chunks = 1;
  Routing routing = Routing::Uniform;
  double imbalance = 1.0;
  bool fp8_dispatch = false;
  bool gate_at_swiglu = false, fp8_storage = false;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto;
  bool overlap_tp = false;
  bool overlap_tp_async = false;
  bool overlap_cp = true;
  bool unfused_attention = false;
  std::string attention_kernel;
  bool eager_elementwise = false;
  bool eager_loss = false;
  bool unfused_loss = false;
  bool repeat_kv = false;
  bool cuda_graphs = false;
  bool cuda_graphs_full = false;
  bool fp8_head = false;
  bool unfused_rope = false;
  bool fused_mlp = false;
  bool separate_linears = false;
  bool fp32_grad_add = false;
  CpComm cp_comm = CpComm::P2p;
  Fp8Recipe fp8_recipe = Fp8Recipe::Delayed;

  bool operator==(const LayerKey&) const = default;
};

struct LayerKeyHash {
  std::size_t operator()(const LayerKey& k) const noexcept;
};

LayerKey key_of(const Strategy& s, int model_seq);

/// One micro-batch through one layer of one kind on one device.
struct KindCost {
  double f = 0, b = 0, w = 0;  ///< compute: forward, input grad + recompute, weight grad
  double recompute_flops = 0;  ///< FLOP re-executed in the backward
  double tp_f = 0, tp_b = 0;   ///< TP collectives as run: exposed + overlap cost (cost::tp_exposed)
  double cp_f = 0, cp_b = 0;   ///< CP exchange left exposed by its own overlap (cost::cp_exposed)
  double ep_f = 0, ep_b = 0;   ///< EP dispatch + combine, forward / backward
  double ep_engine = 0;         ///< of ep_f + ep_b: transfers run by compute units (engine: compute)
  double ep_units = 0;          ///< share of the compute units the other (DMA) transfers' kernels hold
  double queueing = 0;         ///< Kingman waits, forward + backward
};

/// The cached costs of one key.
struct LayerCosts {
  KindCost dense, moe, mtp, embedding, head;
  /// A dense / MoE layer that does not recompute (training.recompute_layers leaves it out);
  /// as `dense` / `moe` when every layer recomputes, or none does.
  KindCost dense_kept, moe_kept;
  double rank_load = 1.0;     ///< busiest EP rank / mean (routing)
  double ep_overlap = 1;      ///< of the EP time that could hide, the share that does (calibration.ep_overlap)
  double model_flops_per_token = 0;  ///< MFU convention at the key's sequence length, MTP included
  cost::MemoryInputs memory;  ///< the memory model's per-key inputs
};

/// Computes the costs of a key (slow: builds the op graph and the comm model).
LayerCosts compute_layer_costs(const HardwareSpec& hw, const ModelSpec& m, const Strategy& s);

/// A thread-safe cache of layer costs.
class LayerCostCache {
 public:
  LayerCostCache(const HardwareSpec& hw, const ModelSpec& m) : hw_(hw), model_(m) {}
  /// The costs for `s`, computed on first use.
  std::shared_ptr<const LayerCosts> get(const Strategy& s) const;
  /// Keys computed so far.
  std::size_t size() const;

 private:
  const HardwareSpec& hw_;
  const ModelSpec& model_;
  mutable std::shared_mutex mutex_;
  mutable std::unordered_map<LayerKey, std::shared_ptr<const LayerCosts>, LayerKeyHash> map_;
};

}  // namespace paraplan::search
