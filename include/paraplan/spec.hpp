#pragma once
/// Plain spec structs: what the input files say, in SI base units, after `extends:` and
/// defaults. They can be built in code without YAML. Schemas: docs/inputs.md.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "paraplan/export.hpp"

namespace paraplan {

// ---------------------------------------------------------------------------------------
// Hardware
// ---------------------------------------------------------------------------------------

/// Number formats a GEMM or a peak can be quoted for.
enum class Dtype { Bf16, Fp16, Fp8, Fp32, Tf32 };
inline constexpr int kDtypeCount = 5;

/// One measured GEMM: achieved / peak throughput at shape (m, n, k).
struct GemmPoint {
  double m = 0, n = 0, k = 0;  ///< GEMM dims: C[m, n] = A[m, k] x B[k, n]
  double efficiency = 0;       ///< fraction of the dtype's peak, in (0, 1]
};

/// Efficiency of GEMMs of one dtype, sampled at measured shapes.
struct GemmTable {
  double default_efficiency = 0.6;  ///< used when `points` is empty
  std::vector<GemmPoint> points;    ///< measured shapes (any order)
};

/// Named GEMM efficiency tables of a device.
enum class GemmKind { Bf16, Fp8, GroupedBf16, GroupedFp8 };
inline constexpr int kGemmKindCount = 4;

/// One candidate output tile of the device's GEMM kernels (the shapes cuBLAS / CUTLASS
/// choose among): m x n outputs per compute unit, and its speed per FLOP relative to the
/// best tile (small tiles reuse less data).
struct GemmTile {
  int m = 128, n = 128;
  double efficiency = 1.0;
};

/// Kernel-level GEMM model (docs/cost-model.md, "GEMM kernels"). A GEMM of (m, n, k) runs
/// ceil(m / tm) x ceil(n / tn) output tiles, split s ways along k when the tiles alone do
/// not fill the compute units, in ceil(tiles x s / units) waves; one tile costs
/// (k / s + k_overhead) of work at peak x peak_fraction x tile efficiency. The fastest tile
/// and split are used, as the libraries' heuristics pick them. The shape's own roofline
/// (A, B and C through HBM) bounds it from below.
struct GemmKernelSpec {
  std::array<double, kDtypeCount> peak_fraction{};  ///< per Dtype: large GEMMs reach peak x this; 0 = bf16's
  std::vector<GemmTile> tiles;            ///< candidates; empty = no kernel model
  double k_overhead = 0;                  ///< per-tile prologue / epilogue, in elements of k
  int max_split_k = 1;                    ///< most k splits for grids smaller than the units
  double dgrad = 1.0;                     ///< input-gradient GEMMs, relative to forward
  double wgrad = 1.0;                     ///< weight-gradient GEMMs, relative to forward
  double wgrad_fp8 = 0;                   ///< the same for FP8 GEMMs where it differs; 0 = wgrad
  bool grouped_loop = false;              ///< grouped GEMM = one kernel per expert, not one persistent kernel
  [[nodiscard]] bool present() const { return !tiles.empty(); }
};

/// A flash-attention kernel (docs/cost-model.md, "Attention kernels"): the fraction of the
/// BF16 peak it reaches on long causal sequences, per pass (FLOP: causal half counted), its
/// tile height and a fixed cost per tile; tiles = batch x heads x ceil(s / block), run over
/// the compute units.
struct AttentionKernelSpec {
  std::string name;           ///< e.g. "cudnn", "fa2", "fa3"
  double forward = 0;         ///< fraction of the BF16 peak, forward
  double backward = 0;        ///< fraction of the BF16 peak, backward (2.5 x forward FLOP)
  double block = 128;         ///< query (forward) / key (backward) rows per tile
  double forward_overhead = 0;   ///< fixed cost per forward tile, in keys processed
  double backward_overhead = 0;  ///< fixed cost per backward tile, in queries processed
  /// Head-dim dependence: each score costs the kernel's non-matmul work (exponent, max, sum,
  /// scaling) besides its matmul work, which grows with the head dim d. With that work worth
  /// `softmax` head dims, efficiency(d) = e x [d / (d + softmax)] / [head_dim / (head_dim +
  /// softmax)]: e holds at the reference `head_dim`, smaller heads run slower. 0 = no term.
  /// Wider heads than the reference run at (head_dim / d)^wide_head of e: their tiles shrink
  /// (shared memory and registers hold d-wide rows). 0 = as the reference.
  double head_dim = 128;
  double forward_softmax = 0, backward_softmax = 0;
  double forward_wide_head = 0, backward_wide_head = 0;
  /// FP8 inputs (Transformer Engine's fp8_dot_product_attention on cuDNN's FP8 / MXFP8 SDPA):
  /// forward / backward are fractions of the FP8 peak, and the queries, keys and values (and in
  /// the backward the output and its gradient) are quantized before the kernel. `precision: fp8`.
  bool fp8 = false;
  /// Whether the backward visits only the key tiles inside a sliding window (false: every
  /// causal tile, the window masked inside them). `backward_window: false`.
  bool backward_window = true;
};

/// Memory-bound op classes; each reaches its own fraction of the HBM bandwidth.
enum class MemClass { Elementwise, Norm, Cast, Permute, Softmax, Reduction, Copy };
inline constexpr int kMemClassCount = 7;

/// One compute device (card). Multi-die cards sum their dies' rates here.
struct DeviceSpec {
  std::string name;                       ///< e.g. "BR166", "H100 SXM"
  int dies = 1;                           ///< compute dies per device (BR166: 2)
  double memory_bytes = 0;                ///< HBM capacity per device
  double memory_bw_bytes_per_s = 0;       ///< HBM bandwidth per device, summed over dies
  std::array<double, kDtypeCount> peak_flop_per_s{};  ///< dense peak per Dtype; 0 = absent
  std::array<std::optional<GemmTable>, kGemmKindCount> gemm;  ///< per GemmKind
  double memory_bound_efficiency = 0.7;   ///< fraction of memory bandwidth memory-bound ops reach
  std::array<double, kMemClassCount> memory_bound{};  ///< per MemClass; 0 = memory_bound_efficiency
  double attention_efficiency = 0;        ///< legacy: one flash-attention fraction for both passes
  std::vector<AttentionKernelSpec> attention;  ///< flash-attention kernels; the first is the default
  int compute_units = 0;                  ///< SMs / SPCs per device (all dies); 0 = unknown
  GemmKernelSpec gemm_kernel;             ///< kernel-level GEMM model (absent: tables only)
  double kernel_overhead_s = 0;           ///< fixed cost per launched kernel (launch + tail)
  double host_sync_s = 0;                 ///< one host synchronisation (MoE token counts to the host)
  /// Host time to issue one kernel from an eager framework (Python, dispatcher, launch); a
  /// layer pass that starts from a host synchronisation takes at least its launches x this.
  /// 0 = the host is never the bound.
  double host_issue_s = 0;
  /// Kernels the training framework launches per kernel the op graph counts (small casts,
  /// copies, fills and index kernels the graph folds into its ops, and the communication
  /// kernels): the launches that kernel_overhead and host_issue are paid for. 1 = the graph's.
  double launches_per_kernel = 1;
  int comm_units = 0;                     ///< compute units a communication kernel occupies (NCCL, DeepEP)
  double memory_reserve_bytes = 0;        ///< runtime and fragmentation, unavailable to the model

  [[nodiscard]] double peak(Dtype d) const { return peak_flop_per_s[static_cast<int>(d)]; }
  /// The flash-attention kernel `name` runs (training.attention; empty: the first listed, the
  /// default); nullptr when the device lists none of that name.
  [[nodiscard]] const AttentionKernelSpec* attention_kernel(const std::string& name) const {
    for (const AttentionKernelSpec& a : attention) {
      if (name.empty() || a.name == name) return &a;
    }
    return nullptr;
  }
  [[nodiscard]] const std::optional<GemmTable>& table(GemmKind k) const {
    return gemm[static_cast<int>(k)];
  }
  /// Fraction of the memory bandwidth ops of class `c` reach.
  [[nodiscard]] double memory_fraction(MemClass c) const {
    const double f = memory_bound[static_cast<int>(c)];
    return f > 0 ? f : memory_bound_efficiency;
  }
};

/// How the ranks of one tier are wired.
enum class Topology { Switch, FullMesh, Ring, Pairs };

/// Which engine moves the bytes: DMA runs beside compute (overlap = max), compute
/// occupies the compute units (overlap = sum, or a compute share).
enum class Engine { Dma, Compute };

/// Collective operations the communication model knows.
enum class Collective { AllReduce, AllGather, ReduceScatter, AllToAll, SendRecv, Broadcast };
inline constexpr int kCollectiveCount = 6;

/// Message size -> fraction of the tier bandwidth reached (measured curve).
struct SizePoint {
  double bytes = 0;
  double efficiency = 0;  ///< in (0, 1]
};

/// A measured bus bandwidth for one collective on one tier (nccl-tests busbw convention).
struct CollectiveOverride {
  double bus_bw_bytes_per_s = 0;  ///< busbw per rank (or algbw when `algbw` is set)
  bool algbw = false;             ///< the figure is algbw = size / time (the seeds' convention)
  Engine engine = Engine::Dma;    ///< engine the measured implementation runs on
  double compute_share = 1.0;     ///< fraction of compute it occupies (engine compute only)
  /// This collective's own message-size curve (fractions of `bus_bw_bytes_per_s`); empty:
  /// the tier's `size_efficiency`.
  std::vector<SizePoint> size_efficiency;
  /// Fractions of `bus_bw_bytes_per_s` by the number of ranks in the group (`bytes` holds the
  /// rank count), linear between rows and flat beyond them; empty: the same at every size.
  std::vector<SizePoint> ranks_efficiency;
};

/// One switch level of the cluster fabric: groups of up to `nodes` nodes meet under one
/// switch of this level (a leaf, a spine, a core), at its latency and with its
/// oversubscription (bandwidth per rank = the tier's / oversubscription).
struct FabricLevel {
  std::string name;             ///< "leaf", "spine", "core"
  int nodes = 0;                ///< nodes under one switch unit of this level
  double oversubscription = 1;  ///< >= 1; uplink bandwidth share
  double latency_s = 0;         ///< end-to-end latency of a message through this level
};

/// One level of the network hierarchy, innermost first (die, vnode, node, cluster).
struct TierSpec {
  std::string name;                    ///< "die", "vnode", "node", "cluster", ...
  int size = 1;                        ///< units of the next-inner tier per unit of this one
  Topology topology = Topology::Switch;
  double bw_bytes_per_s = 0;           ///< per rank, per direction
  double latency_s = 0;                ///< per message (alpha)
  Engine engine = Engine::Dma;         ///< engine of plain transfers on this tier
  double service_cv = 0;               ///< coefficient of variation of link service time
  std::vector<SizePoint> size_efficiency;  ///< increasing sizes; empty = always 1
  std::array<std::optional<CollectiveOverride>, kCollectiveCount> collectives;  ///< per Collective
  /// DeepEP's measured rate on this tier (bytes a rank moves / time; `dispatch: deepep`).
  /// Apart from `collectives.all_to_all`, the collective library's (NCCL's) all-to-all, which
  /// the `alltoall` dispatcher runs: the two are different kernels at different rates.
  std::optional<CollectiveOverride> deepep;
  std::vector<FabricLevel> levels;  ///< the cluster tier's switch levels, increasing `nodes`; empty = flat
  /// `topology: pairs`: a device's direct partner in the paired sub-unit is its index within
  /// this tier's unit XOR this mask (UBBv2's BLink mate1 = g ^ 5); 0 = the same position in
  /// the other sub-unit. Read by the device graph (`paraplan topology`).
  int partner_xor = 0;
  /// The cluster tier: each device's NIC reaches only the same-index device of the other
  /// nodes directly (rails); a transfer to another index is forwarded inside a node first.
  bool rails = false;
  /// Time multipliers of its transfers by collective, fitted by `calibrate profile` (1 = none).
  std::array<double, kCollectiveCount> calibration = [] {
    std::array<double, kCollectiveCount> a{};
    a.fill(1.0);
    return a;
  }();

  [[nodiscard]] const std::optional<CollectiveOverride>& collective(Collective c) const {
    return collectives[static_cast<int>(c)];
  }
};

/// Which devices a direct extra link joins.
enum class LinkPairing { NodePairs, VnodePairs };

/// An optional direct link outside the tier tree (BR166 Port-10, "mate3").
struct ExtraLinkSpec {
  std::string name;
  LinkPairing between = LinkPairing::NodePairs;
  double bw_bytes_per_s = 0;  ///< per device, per direction
  double latency_s = 0;
  /// The partner device: the same index in the paired node / vnode XOR this mask (UBBv2's
  /// Port-10 mate3 = g ^ 12: the paired node's card c ^ 4); 0 = the same index.
  int partner_xor = 0;
  /// Price of one link (one cable and its share of the ports), in the user's currency;
  /// 0 = not given. `compare` adds the links' cost per node.
  double cost_per_link = 0;
};

/// Op classes that `paraplan calibrate profile` fits a time multiplier to, per pass: GEMM,
/// grouped GEMM, attention, then the memory-bound classes in MemClass order.
inline constexpr int kOpClassCount = 3 + kMemClassCount;
/// The classes' names as the hardware file spells them (`calibration.compute`).
inline constexpr const char* kOpClassNames[kOpClassCount] = {
    "gemm", "grouped_gemm", "attention", "elementwise", "norm", "cast", "permute", "softmax", "reduction", "copy"};

/// Passes a compute multiplier is fitted per: the forward kernels (recompute included), the
/// input-gradient kernels and the weight-gradient kernels (`calibration.compute.CLASS` keys
/// forward, backward, weight_grad; weight_grad defaults to backward).
inline constexpr int kCalibrationPasses = 3;

/// What `paraplan calibrate profile` fitted to a measured profile: time multipliers by op
/// class and pass (forward, backward, weight_grad), 1 = the model as derived. The
/// communication multipliers sit on the tiers (TierSpec::calibration).
struct CalibrationSpec {
  std::string source;  ///< the command and the profile it came from
  std::array<std::array<double, kCalibrationPasses>, kOpClassCount> compute = ones();
  /// Time multiplier of FP8 GEMM and grouped-GEMM kernels on top of `compute` (the achieved
  /// FP8 GEMM fraction, fitted by `calibrate runs --knobs fp8_gemm`); 1 = none.
  double fp8_gemm = 1;
  /// Time multiplier of BF16 / FP16 GEMM and grouped-GEMM kernels in a sustained training
  /// step, against the short-burst measurements the kernel model is anchored on (MAMF): the
  /// device's clock at its power limit in steady state. FP8 GEMMs take none: `fp8_gemm` holds
  /// their rate in training.
  /// Fitted by `calibrate runs --knobs sustained`; not applied to a validation case that
  /// times a kernel or layer in isolation (`isolated: true`). 1 = none.
  double sustained = 1;
  /// Memory multiplier of what a step allocates and frees (activations, the recompute working
  /// set, gathered weights, logits and other buffers): the framework's caching allocator
  /// reserves more than the peak of live tensors (block rounding, segments split by earlier
  /// requests). Weights, gradients and optimizer states, allocated once, take none. Fitted by
  /// `calibrate runs --knobs allocator` to measured peak memory (PyTorch max reserved); the
  /// excess is reported as part of `reserve`. 1 = none.
  double allocator = 1;
  /// Share of the EP transfer time a paired micro-batch's compute could hide that it does
  /// hide (the 1F1B all-to-all overlap, DualPipe's F&B chunks); the rest waits as if not
  /// overlapped (the kernels' scheduling beside busy compute, the streams' waits). Fitted by
  /// `calibrate runs --knobs ep_overlap` to runs with `overlap.ep`. 1 = all of it (the
  /// schedule's ideal).
  double ep_overlap = 1;
  static std::array<std::array<double, kCalibrationPasses>, kOpClassCount> ones() {
    std::array<std::array<double, kCalibrationPasses>, kOpClassCount> a{};
    for (auto& c : a) c = {1, 1, 1};
    return a;
  }
  [[nodiscard]] bool empty() const {
    if (fp8_gemm != 1 || sustained != 1 || allocator != 1 || ep_overlap != 1) return false;
    for (const auto& c : compute) {
      for (double v : c) {
        if (v != 1) return false;
      }
    }
    return true;
  }
};

/// The host side of a node.
struct HostSpec {
  double memory_bytes = 0;              ///< host memory per node; 0 = unknown
  double offload_bw_bytes_per_s = 0;    ///< device <-> host, per device, per direction
};

/// How a context-parallel group moves keys and values (`training.cp_comm`). P2p: Transformer
/// Engine's ring (`--cp-comm-type p2p`, Megatron's default): each ring step sends one K/V chunk
/// to the next rank while the step's attention runs; backward passes K/V and dK/dV the same
/// way. AllGather: TE's `all_gather` (`--cp-comm-type allgather`): K/V gathered before the
/// attention, not overlapped, dK/dV reduce-scattered after it. TorchAllGather: PyTorch's
/// experimental context_parallel with its default rotate method (torchtitan): K/V gathered
/// once per pass and awaited after the first ring step, dK/dV passed around the ring in FP32.
/// A2a: DeepSpeed-Ulysses (`--cp-comm-type a2a`): all-to-alls trade the sequence split for a
/// head split before the attention (Q, K, V) and back after it (the output), not overlapped;
/// each rank then runs the whole sequence for heads / cp heads.
enum class CpComm { P2p, AllGather, TorchAllGather, A2a };

/// How FP8 GEMM operands get their scales (`training.fp8_recipe`, Megatron-LM --fp8-recipe
/// spellings). Delayed: one scale per tensor from an amax history, the amax of this pass
/// taken inside the cast kernel (Transformer Engine DelayedScaling). Tensorwise: one scale per
/// tensor from this pass's own amax, a reduction over the tensor before the cast can start
/// (TE Float8CurrentScaling, torchao Float8Linear's dynamic scaling). Blockwise and MXFP8:
/// a scale per 1x128 / 128x128 or 32-element block, computed inside the cast kernel.
enum class Fp8Recipe { Delayed, Tensorwise, Blockwise, Mxfp8 };

/// Collective algorithm for TP / CP / DP collectives; Auto picks the fastest.
enum class CollectiveAlgorithm { Auto, Ring, Hierarchical, HalvingDoubling, Tree };

/// A cluster: devices, network tiers, hosts.
struct HardwareSpec {
  std::string name;
  std::string description;
  std::vector<std::string> sources;
  DeviceSpec device;
  std::vector<TierSpec> tiers;  ///< innermost first; the last is the cluster (size = max nodes)
  std::vector<ExtraLinkSpec> extra_links;
  /// Algorithms the collective library implements, among which `auto` picks the fastest
  /// (NCCL: ring and tree); empty = every one the model knows.
  std::vector<CollectiveAlgorithm> algorithms;
  HostSpec host;
  CalibrationSpec calibration;

  /// Devices (cards) per node: product of tier sizes up to the tier named `node` (up to the
  /// tier before the last where no tier below the last has that name), divided by dies when
  /// the innermost tier is the die tier. A tier between `node` and the last joins several
  /// nodes into one scale-up domain (GB200 NVL72: 18 nodes of 4 GPUs on one NVLink switch).
  [[nodiscard]] PARAPLAN_EXPORT int devices_per_node() const;
  /// Devices of one scale-up domain: every tier but the last (the node's devices where no
  /// tier joins nodes).
  [[nodiscard]] PARAPLAN_EXPORT int devices_per_domain() const;
  /// Largest node count: the product of the sizes of the tiers above the node.
  [[nodiscard]] PARAPLAN_EXPORT int max_nodes() const;
};

// ---------------------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------------------

enum class AttentionKind { Mha, Gqa, Mla };
enum class FfnKind { Swiglu, Gelu };
enum class NormKind { RmsNorm, LayerNorm };
enum class PositionEmbedding { Rope, Learned, Alibi, None };

/// Attention block dimensions.
struct AttentionSpec {
  AttentionKind kind = AttentionKind::Mha;
  int heads = 0;
  int kv_heads = 0;          ///< GQA groups; = heads for MHA and MLA
  int head_dim = 0;          ///< MHA/GQA per-head dim
  int q_lora_rank = 0;       ///< MLA query compression rank; 0 = none
  int kv_lora_rank = 0;      ///< MLA KV compression rank
  int qk_nope_head_dim = 0;  ///< MLA
  int qk_rope_head_dim = 0;  ///< MLA decoupled RoPE dim
  int v_head_dim = 0;        ///< MLA
  /// Sliding-window attention (Mistral, Gemma 2/3, GPT-OSS, Qwen2's use_sliding_window): a
  /// query attends to at most this many keys, itself included; 0 = the whole causal context.
  int window = 0;
  /// How many of the layers use the window (the rest attend to the whole context): Gemma 2
  /// and GPT-OSS alternate, Gemma 3 has five local layers to one global. Costed as the
  /// model's mix on every layer; equals `layers` when `window` is set alone.
  int window_layers = 0;
  /// A norm over each head's query and key before RoPE (Qwen3, OLMo 2, Gemma 3): two
  /// head_dim-wide weights per layer (the model's norm kind), MHA and GQA only.
  bool qk_norm = false;
};

/// Dense feed-forward block.
struct FfnSpec {
  FfnKind kind = FfnKind::Swiglu;
  int intermediate = 0;
  /// GPT-OSS's clamped GLU: the gate is clamped to at most `clamp` and the linear half to
  /// [-clamp, clamp] before the activation; 0 = no clamp.
  double clamp = 0;
};

/// Mixture-of-Experts settings; present only for MoE models.
struct MoeSpec {
  int dense_layers = 0;              ///< first k layers use the dense FFN
  int routed_experts = 0;
  int shared_experts = 0;
  int top_k = 0;
  int expert_intermediate = 0;
  int shared_expert_intermediate = 0;  ///< defaults to expert_intermediate
  int max_nodes_per_token = 0;       ///< node-limited routing; 0 = unlimited (groups per token
                                     ///< when expert_groups is set)
  int expert_groups = 0;             ///< the router's expert groups (0: one per EP node)
};

/// A transformer model.
struct ModelSpec {
  std::string name;
  std::string description;
  std::vector<std::string> sources;
  int layers = 0;
  int hidden = 0;
  int vocab = 0;
  int seq_len = 0;
  bool tied_embeddings = false;
  NormKind norm = NormKind::RmsNorm;
  bool bias = false;  ///< linear layers carry biases (GPT-2/3)
  PositionEmbedding position_embedding = PositionEmbedding::Rope;
  AttentionSpec attention;
  FfnSpec ffn;
  std::optional<MoeSpec> moe;
  int mtp_depth = 0;
  /// Dropout probabilities (Megatron-LM --attention-dropout / --hidden-dropout). Only
  /// whether they are non-zero matters to cost: on the attention probabilities (unfused
  /// attention: a pass over the s x s matrix and a 1-byte mask) and on the attention and
  /// MLP outputs (a 1-byte mask in the fused bias-dropout-add). Default 0 (modern LLMs).
  double attention_dropout = 0;
  double hidden_dropout = 0;
};

// ---------------------------------------------------------------------------------------
// Strategy
// ---------------------------------------------------------------------------------------

enum class Precision { Bf16, Fp8 };
/// Selective: Megatron-LM's (the attention core; Korthikanti et al. 2022). Op: torchtitan's
/// selective op policy (`selective_ac_option = "op"`): matmul, attention and collective
/// outputs are saved except every second matmul of a block; all other ops run again.
enum class RecomputeMode { None, Selective, Full, Modules, Op };
/// Adam: FP32 master weights and moments; Adam8bit: 8-bit blockwise moments; AdamBf16: BF16
/// moments beside FP32 master weights (DeepSeek-V3 sec. 3.3.3).
enum class Optimizer { Adam, Adam8bit, AdamBf16 };
enum class Dispatch { AllGather, AllToAll, DeepEp, SendRecvAllGather, SendRecvDeepEp };
/// Uniform: random top-k (statistical load imbalance); NodeLimited: at most
/// max_nodes_per_token nodes; Balanced: forced-balanced routing, every expert gets exactly
/// its mean share (benchmarks that force it, the seeds' 60-63 GB runs); RoundRobin: the
/// deterministic benchmark gate that gives token t the k consecutive experts from t k (mod E)
/// (NeMo AutoModel's fake_balanced_gate): balanced, and each token's experts sit on as few
/// ranks and nodes as a block of k consecutive experts spans.
enum class Routing { Uniform, NodeLimited, Balanced, RoundRobin };
/// Routings whose every expert gets exactly its mean share of the tokens.
inline bool balanced_load(Routing r) { return r == Routing::Balanced || r == Routing::RoundRobin; }
enum class Schedule { OneFOneB, Interleaved, ZeroBubble, DualPipe, DualPipeV };
enum class Objective { Tgs, StepTime, Mfu, Memory };
/// Modules that can be recomputed one by one (Megatron-LM `--recompute-modules` names).
enum class RecomputeModule { CoreAttn, LayerNorm, MlaUpProj, Mlp, Moe, MoeAct, SharedExperts };
inline constexpr int kRecomputeModuleCount = 7;

/// What is recomputed in the backward pass.
struct Recompute {
  RecomputeMode mode = RecomputeMode::None;
  std::array<bool, kRecomputeModuleCount> modules{};  ///< per RecomputeModule, mode Modules
  [[nodiscard]] bool has(RecomputeModule m) const { return modules[static_cast<int>(m)]; }
};

/// Parallel degrees. World = tp x cp x dp x pp devices.
struct Parallel {
  int tp = 1, pp = 1, dp = 1, ep = 1, etp = 1, vpp = 1, cp = 1;
  /// Hybrid sharding: the dp ranks form this many replicas, each ZeRO-sharding the dense
  /// parameters' states over dp / dp_replicate of them (x cp), its gradients reduce-scattered
  /// inside the replica and the shards all-reduced across replicas (torch FSDP HYBRID_SHARD /
  /// torchtitan data_parallel_replicate_degree; Megatron-Core
  /// --num-distributed-optimizer-instances). 1 = shard over every dp rank.
  int dp_replicate = 1;
  bool sp = false;  ///< sequence parallel (needs tp > 1)
  /// Uneven pipelines (Megatron-LM --decoder-first/last-pipeline-num-layers): transformer
  /// layers of the first / last model chunk (the first / last stage; with vpp > 1 its first
  /// / last virtual stage); 0 = spread evenly.
  int first_stage_layers = 0, last_stage_layers = 0;
  /// Megatron-LM --account-for-embedding-in-pipeline-split / ...-loss-...: the embedding
  /// (the LM head and loss) count as one layer when the layers are spread.
  bool embedding_in_split = false, loss_in_split = false;
  /// Megatron-Core --pipeline-model-parallel-layout ("Et|(tt|)*30mL"): every model chunk's
  /// embedding, transformer layers, MTP layers and loss, spelled out; empty = derived from the
  /// settings above. Overrides them when set.
  std::string pipeline_layout;
  /// Ranks ZeRO shards the dense states over: dp x cp, or one replica of them.
  [[nodiscard]] int dense_shard_ranks() const {
    const int replicas = dp_replicate > 1 ? dp_replicate : 1;
    const int ranks = dp * cp / replicas;
    return ranks > 1 ? ranks : 1;
  }
  /// Ranks, one device each: tp x cp x dp x pp (the `world` rule: nodes x devices per node).
  [[nodiscard]] long long world() const { return static_cast<long long>(tp) * cp * dp * pp; }
};

/// Training settings.
struct Training {
  int micro_batch = 1;            ///< sequences per micro-batch
  int global_batch = 1;           ///< sequences per step
  int seq_len = 0;                ///< 0 = the model's
  Precision precision = Precision::Bf16;
  Recompute recompute;
  /// Of each model chunk's transformer layers (a pipeline rank's stage, or each of its virtual
  /// stages), this many recompute as `recompute` says, the first ones; the others keep every
  /// activation. Megatron-LM --recompute-method block --recompute-num-layers N; torchtitan's
  /// integer selective_ac_option k and fms-fsdp's selective_checkpointing p checkpoint every
  /// k-th / a share p of the blocks, the same count. `training.recompute_layers: N`; 0 = every layer.
  int recompute_layers = 0;
  /// Whether some layers recompute and others do not (recompute_layers with a recompute mode).
  [[nodiscard]] bool partial_recompute() const {
    return recompute_layers > 0 && recompute.mode != RecomputeMode::None;
  }
  int zero = 1;                   ///< ZeRO stage 0..3
  Optimizer optimizer = Optimizer::Adam;
  bool optimizer_offload = false;
  bool activation_offload = false;
  /// Activations of this many of a rank's transformer layers go to host memory during the
  /// forward and come back for the backward, overlapped with compute (Megatron-Core's
  /// cpu_offloading_num_layers on Transformer Engine's CPU-offload context; Megatron-Core
  /// allows it without a pipeline and without recompute). `training.offload_layers: N`; 0 = none.
  int offload_layers = 0;
  /// Attention kernel: flash (fused, no s x s tensors) or unfused (QK^T and PV as batched
  /// GEMMs with a softmax over the s x s scores in between, as Megatron-LM before FlashAttention).
  bool unfused_attention = false;
  /// Which of the hardware's flash-attention kernels runs (`training.attention: fa2`); empty =
  /// the hardware's default (its first).
  std::string attention_kernel;
  /// Elementwise ops as PyTorch eager runs them, one kernel per operator with FP32
  /// upcasts (RMSNorm, SwiGLU, complex RoPE, cross-entropy), rather than the fused kernels
  /// of Megatron-Core / Transformer Engine / Apex or torch.compile. `training.elementwise: eager`.
  bool eager_elementwise = false;
  /// The loss as PyTorch eager runs it: logits.float(), log_softmax, nll (torchtitan, whose
  /// torch.compile covers the transformer blocks only), rather than a fused or vocab-parallel
  /// cross-entropy. `training.loss: eager`; default: as `training.elementwise`.
  bool eager_loss = false;
  /// Megatron-Core's vocab-parallel cross-entropy without --cross-entropy-loss-fusion:
  /// logits.float(), max, in-place subtract, exp, sum, divide (forward), multiply and the
  /// cast back (backward), each a pass over the logits shard (NVIDIA/Megatron-LM@1e057005
  /// megatron/core/tensor_parallel/cross_entropy.py). `training.loss: unfused`.
  bool unfused_loss = false;
  /// RoPE as Megatron-Core's unfused path runs it (`_apply_rotary_pos_emb_bshd`: multiply by
  /// cos, rotate half by negate and concatenate, multiply by sin, add, concatenate with the
  /// pass-through part, each a kernel), the path it takes when a model's YaRN attention factor
  /// (mscale) is not 1, which Transformer Engine's fused RoPE cannot apply (NVIDIA/Megatron-LM
  /// #2038, 987395813b; GPT-OSS), or without --apply-rope-fusion. `training.rope: unfused`.
  bool unfused_rope = false;
  /// Low-precision storage (DeepSeek-V3 sec. 3.3.3; Megatron-LM --fp8-param-gather): with FP8
  /// GEMMs, linear-layer weights are held in FP8 only (the FP32 master stays with the
  /// optimizer), the attention output is cached once in FP8 (E5M6; it serves the flash
  /// backward and o_proj's weight gradient) and the SwiGLU inputs of the experts in FP8.
  /// `training.fp8_storage: true`. Implies `fp8_params`.
  bool fp8_storage = false;
  /// FP8 parameters (Megatron-LM --fp8-param-gather, NeMo / Megatron-Bridge fp8_param_gather,
  /// Transformer Engine's fp8_model_init): with FP8 GEMMs the linear-layer weights are held in
  /// FP8 only, not in BF16 beside an FP8 copy (the distributed optimizer keeps the FP32 master),
  /// and the DP parameter all-gathers move FP8. `training.fp8_params: true`.
  bool fp8_params = false;
  /// Whether the linear-layer weights are FP8 only: FP8 GEMMs with `fp8_params` or `fp8_storage`.
  [[nodiscard]] bool fp8_weights_only() const { return precision == Precision::Fp8 && (fp8_params || fp8_storage); }
  /// Main gradients (accumulated over micro-batches and reduced over DP) in BF16 rather than
  /// FP32 (Megatron-LM --accumulate-allreduce-grads-in-fp32 off, NeMo grad_reduce_in_fp32
  /// false). `training.grad_precision: bf16`.
  bool bf16_grads = false;
  /// Gradients reduced after every micro-batch rather than accumulated to the end of the
  /// step (or of a run of the pipeline schedule): FSDP without no_sync, its default
  /// (torch FSDP2 requires_gradient_sync and reshard_after_backward, left on when torch's
  /// pipelining stage module is not itself an FSDP module). Each micro-batch's backward
  /// reduce-scatters (all-reduces without ZeRO) its gradients and reshards the parameters, so
  /// the next micro-batch gathers them again: once with ZeRO 1-2 (the forward keeps them for
  /// the backward, FSDP2 reshard_after_forward=False), twice with ZeRO-3.
  /// `training.grad_sync: micro_batch` (default `run`).
  bool grad_sync_micro_batch = false;
  /// How each micro-batch's weight gradients reach the FP32 main gradients. Default `fused`:
  /// the weight-gradient GEMM accumulates into them (Megatron-LM's gradient accumulation
  /// fusion), nothing more. `fp32_add`: the backward leaves BF16 gradients, and after every
  /// micro-batch's backward each parameter's gradient is cast to FP32 and added to its FP32
  /// buffer, two kernels per parameter tensor (DeepSpeed's BF16 optimizer, update_hp_grads,
  /// called by the pipeline engine after each backward pass). `training.grad_accumulation:
  /// fp32_add`.
  bool fp32_grad_add = false;
  /// With ZeRO 1-2, the main gradients all-reduced over DP (then each rank updates its shard
  /// and the parameters are all-gathered) rather than reduce-scattered: DeepSpeed's BF16
  /// optimizer, whose pipeline engine all-reduces the FP32 gradients
  /// (buffered_allreduce_fallback). `training.grad_reduce: all_reduce` (default
  /// `reduce_scatter`; ZeRO-0 always all-reduces).
  bool grad_all_reduce = false;
  /// Per-layer CUDA graphs (Megatron-Core / Transformer Engine cuda_graph_impl): each
  /// transformer layer's kernels up to a host synchronisation are captured and replayed as
  /// one graph launch per pass (a dropless MoE layer: attention, router and dispatch
  /// preprocessing, Megatron's cuda_graph_scope attn, moe_router, moe_preprocess); the host
  /// no longer issues them one by one. `training.cuda_graphs: true`.
  bool cuda_graphs = false;
  /// The whole iteration's forward and backward captured in one CUDA graph (Megatron-Core
  /// cuda_graph_impl full_iteration; the optimizer stays outside): every kernel of every
  /// layer, the embedding and the head is replayed from the graph, and a dropless MoE layer
  /// no longer waits for its token counts (static expert buffers sized by
  /// moe_expert_rank_capacity_factor; NVIDIA/Megatron-LM@d98e8a64dd
  /// docs/user-guide/features/paged_stash.md). `training.cuda_graphs: full`; implies cuda_graphs.
  bool cuda_graphs_full = false;
  /// The output head's GEMMs in FP8 (Megatron-Core fp8_output_proj: the LM head under the
  /// MXFP8 autocast, its input and the logits' gradient quantized); default BF16 (DeepSeek-V3
  /// sec. 3.3.1). `training.fp8_head: true`.
  bool fp8_head = false;
  /// The model code expands GQA keys and values to the query heads before the attention
  /// kernel (torchtitan's and Hugging Face's `repeat_kv`): a copy per layer, K/V saved and
  /// exchanged at the query heads' width. `training.repeat_kv: true`.
  bool repeat_kv = false;
  /// The model code runs the query, key and value projections, and SwiGLU's gate and up
  /// projections, as separate linear layers on the same input (torchtitan's Llama: wq, wk,
  /// wv, w1, w3; Hugging Face's q_proj, k_proj, v_proj, gate_proj, up_proj), not one fused
  /// GEMM each (Megatron-Core's linear_qkv and linear_fc1): one GEMM per projection, and
  /// their input gradients summed (docs/cost-model.md, "Separate linear layers").
  /// `training.linears: separate`.
  bool separate_linears = false;
  /// Context-parallel exchange (`training.cp_comm`), used when parallel.cp > 1.
  CpComm cp_comm = CpComm::P2p;
  /// FP8 scaling recipe (`training.fp8_recipe`); takes effect with FP8 GEMMs only.
  Fp8Recipe fp8_recipe = Fp8Recipe::Delayed;
  /// How many times a step runs the pipeline schedule, each run over micro-batches / runs of
  /// the step's micro-batches with its own fill and drain: frameworks that loop gradient
  /// accumulation around the schedule (torchtitan, NeMo AutoModel: one schedule step per local
  /// batch) rather than feeding every micro-batch to one schedule (Megatron). The gradient
  /// sync and the optimizer still run once per step. `training.pipeline_runs`.
  int pipeline_runs = 1;
};

/// MoE execution settings.
struct MoeExec {
  Dispatch dispatch = Dispatch::AllToAll;
  Routing routing = Routing::Uniform;
  double imbalance = 1.0;  ///< max/mean expert load beyond random routing
  /// Tokens cross the EP group in FP8 (1 B per element + an FP32 scale per 128; quantized
  /// once before the dispatch, DeepSeek-V3 sec. 3.3.2) rather than BF16; the combine stays
  /// BF16. Takes effect with FP8 GEMMs only. `moe.dispatch_precision: fp8`.
  bool fp8_dispatch = false;
  /// Where the routing weights multiply the expert output: at the combine (Megatron-Core:
  /// the expert outputs are kept for the weights' gradient) or on the SwiGLU output before the
  /// down-projection (DeepSeek's swiglu_forward_with_weight kernels: the down-projection's
  /// input gradient gives the weights' gradient, no expert output is kept).
  /// `moe.gate_at: combine | swiglu`.
  bool gate_at_swiglu = false;
  /// The routed experts' MLP as Transformer Engine's fused grouped MLP (the op fuser with
  /// NVTE_CUTEDSL_FUSED_GROUPED_MLP, cuDNN's CuTe-DSL kernels, MXFP8 on Blackwell): FC1's
  /// grouped GEMM applies the GLU and the routing weights and quantizes FC2's input in its
  /// epilogue, and FC2's input-gradient GEMM applies the GLU's backward and quantizes FC1's
  /// output gradient in its own; every expert GEMM is one persistent grouped kernel
  /// (TransformerEngine@d0067d0 transformer_engine/pytorch/ops/fused/grouped_mlp.py).
  /// `moe.fused_mlp: true`.
  bool fused_mlp = false;
  /// The two-stage schemes (sendrecv_*): the inter-node send/recv moves its tokens in this
  /// many chunks, and the intra-node stage starts on each chunk as it arrives (the seeds'
  /// two-stage pipelining, SEED_DIGEST sec. 5.8; 1 = one transfer, the seeds' halves).
  /// Each chunk pays its own latency and runs at its own size's bandwidth. `moe.chunks`.
  int chunks = 1;
};

/// Which communication overlaps with compute.
struct Overlap {
  bool ep = true, dp = true, tp = false, pp = true;
  /// TP: the overlap is torch's micro-pipelined AsyncTP (`overlap.tp: async`; implies tp):
  /// symmetric-memory copies on copy engines instead of Transformer Engine's userbuffers. An
  /// all-gather feeding matmuls and a matmul feeding a reduce-scatter run as tp chunks beside
  /// the transfers (torch.distributed._symmetric_memory, _pipelined_all_gather_and_consume and
  /// _pipelined_produce_and_all2all); the local shard is staged into the symmetric buffer
  /// first and the reduce-scatter's tp partial chunks are summed after, both on the compute
  /// units; a reduce-scatter whose input is not one matmul's output (the input gradient of
  /// separate q / k / v or gate / up projections, `training.linears: separate`) stays a
  /// plain, waited-on collective (torch/_inductor/fx_passes/micro_pipeline_tp.py,
  /// fuse_matmul_reduce_scatter).
  bool tp_async = false;
  /// PP: the transfers of each time step of the schedule are posted together after the
  /// step's compute and waited on before the next (`overlap.pp: lockstep`; implies pp false):
  /// neighbouring ranks finish every time step together. torch.distributed.pipelining's
  /// multi-stage schedules up to torch 2.9 (PipelineScheduleMulti._step_microbatches,
  /// `_wait_batch_p2p(_batch_p2p(ops))`), which torchtitan and NeMo AutoModel run.
  bool pp_lockstep = false;
  /// Whether PP transfers run beside compute (pp, unless the time steps wait for them).
  [[nodiscard]] bool pp_overlapped() const { return pp && !pp_lockstep; }
  /// CP: the ring's exchanges run beside the attention steps (false: each is waited on
  /// where it is issued, as torch's ring attention under torch.compile runs them).
  bool cp = true;
};

/// One training configuration. `hardware` and `model` are what the file said (a built-in
/// name or a path); the loaded specs travel beside it in a Plan.
struct Strategy {
  std::string name;         ///< file stem or given name
  std::string description;
  std::string hardware;     ///< reference as written
  std::string model;        ///< reference as written
  int nodes = 1;
  Parallel parallel;
  bool ep_over_dies = false;
  Training training;
  MoeExec moe;
  Schedule schedule = Schedule::OneFOneB;
  Overlap overlap;
  CollectiveAlgorithm collective_algorithm = CollectiveAlgorithm::Auto;
};

/// A strategy with its hardware and model loaded.
struct Plan {
  HardwareSpec hardware;
  ModelSpec model;
  Strategy strategy;
};

/// A broken rule of a strategy: `rule` is a stable identifier (docs/inputs.md).
struct RuleViolation {
  std::string rule;     ///< e.g. "heads_tp"
  std::string message;  ///< e.g. "attention heads 128 are not divisible by tp 3"
  std::string key;      ///< the strategy key most to blame, dotted: "parallel.tp"
};

/// Checks a strategy against its hardware and model; empty when valid.
/// Rules: world, heads_tp, kv_heads_tp, experts_ep, ep_world, layers_pp, batch_dp, batch_runs,
/// vpp_schedule, dualpipe_pp, nodes_cluster, seq_cp, moe_fields, ep_over_dies, sp_tp,
/// attention_kernel, pipeline_layout, offload_layers_pp, offload_layers, recompute_layers,
/// fp8_head, fused_mlp, dp_replicate.
[[nodiscard]] PARAPLAN_EXPORT std::vector<RuleViolation> check_rules(const Strategy& s, const HardwareSpec& hw,
                                                     const ModelSpec& m);
/// The first rule `s` breaks, in check_rules' order, without building its message (the
/// search counts rejections by rule), a string with static storage; nullptr when it breaks none.
[[nodiscard]] PARAPLAN_EXPORT const char* first_broken_rule(const Strategy& s, const HardwareSpec& hw,
                                                            const ModelSpec& m);

// ---------------------------------------------------------------------------------------
// Search space
// ---------------------------------------------------------------------------------------

/// Candidate values of one dimension; `auto_values` = every valid value.
template <typename T>
struct Choice {
  std::vector<T> values;    ///< explicit candidates (when not auto)
  bool auto_values = false;
};

/// A set of strategies: strategy keys with lists or `auto`, plus search settings.
struct SearchSpace {
  std::string name;
  std::string description;
  std::string hardware;
  std::string model;
  Choice<int> nodes, tp, pp, dp, ep, etp, vpp, cp, micro_batch, zero;
  Choice<bool> sp, ep_over_dies, optimizer_offload, activation_offload;
  int first_stage_layers = 0, last_stage_layers = 0;  ///< parallel.decoder_first/last_pipeline_num_layers
  bool embedding_in_split = false, loss_in_split = false;  ///< parallel.account_for_*_in_pipeline_split
  std::string pipeline_layout;  ///< parallel.pipeline_model_parallel_layout
  bool unfused_attention = false;  ///< training.attention: unfused
  std::string attention_kernel;    ///< training.attention: a named flash kernel (empty = default)
  bool eager_elementwise = false;  ///< training.elementwise: eager
  int eager_loss = -1;             ///< training.loss: 0 fused, 1 eager, 2 unfused, -1 as elementwise
  /// Whether the loss runs eagerly: `training.loss` if given, else as `training.elementwise`.
  [[nodiscard]] bool loss_eager() const { return eager_loss < 0 ? eager_elementwise : eager_loss == 1; }
  [[nodiscard]] bool loss_unfused() const { return eager_loss == 2; }
  bool fp8_storage = false;        ///< training.fp8_storage
  Choice<bool> fp8_params;         ///< training.fp8_params (false when absent; auto: false and, with fp8, true)
  bool bf16_grads = false;         ///< training.grad_precision: bf16
  bool grad_sync_micro_batch = false;  ///< training.grad_sync: micro_batch
  bool fp32_grad_add = false;      ///< training.grad_accumulation: fp32_add
  bool grad_all_reduce = false;    ///< training.grad_reduce: all_reduce
  bool cuda_graphs = false;        ///< training.cuda_graphs
  bool cuda_graphs_full = false;   ///< training.cuda_graphs: full
  bool fp8_head = false;           ///< training.fp8_head
  bool unfused_rope = false;       ///< training.rope: unfused
  bool fused_mlp = false;          ///< moe.fused_mlp
  int offload_layers = 0;          ///< training.offload_layers
  /// training.recompute_layers, for the candidates that recompute (auto: 0 and the powers of
  /// two below the model's layers; a value at least a chunk's layers is the same as 0).
  Choice<int> recompute_layers;
  int dp_replicate = 1;            ///< parallel.dp_replicate
  bool repeat_kv = false;          ///< training.repeat_kv
  bool separate_linears = false;   ///< training.linears: separate
  Fp8Recipe fp8_recipe = Fp8Recipe::Delayed;  ///< training.fp8_recipe
  int pipeline_runs = 1;           ///< training.pipeline_runs
  Choice<CpComm> cp_comm;          ///< training.cp_comm (p2p when absent; explored where cp > 1)
  Choice<int> global_batch;
  int seq_len = 0;
  Choice<Precision> precision;
  Choice<Recompute> recompute;
  Choice<Optimizer> optimizer;
  Choice<Dispatch> dispatch;
  Choice<int> chunks;  ///< moe.chunks (two-stage schemes)
  Choice<Routing> routing;
  double imbalance = 1.0;
  bool fp8_dispatch = false;  ///< moe.dispatch_precision: fp8
  bool gate_at_swiglu = false;  ///< moe.gate_at: swiglu
  Choice<Schedule> schedule;
  Overlap overlap;
  CollectiveAlgorithm collective_algorithm = CollectiveAlgorithm::Auto;
  Objective objective = Objective::Tgs;
  int top = 20;
  double memory_headroom = 0.95;  ///< fraction of device memory a strategy may use
};

/// A search space with its hardware and model loaded.
struct SpacePlan {
  HardwareSpec hardware;
  ModelSpec model;
  SearchSpace space;
};

}  // namespace paraplan
