#pragma once
// Collectives over a rank group placed on the hardware's tier hierarchy.
//
// A group is `size` ranks at `stride` in the Megatron rank order (TP innermost, then CP,
// EP within DP x CP x TP, DP, PP outermost). Ranks are devices, or dies when the group is
// die-level (BR166 die-level EP). Placed on the tiers, the group has m_j members inside
// one unit of tier j, and fan-out D_j = m_j / m_{j-1} at tier j (D_j > 1: the collective
// crosses tier j).
//
//   BR166 node pair, ranks = dies:   die(2) -> vnode(4 cards) -> node(2 VNodes) -> cluster
//   EP32 over dies, stride 1:  m = [2, 8, 16, 32], D = [2, 4, 2, 2]
//
// Algorithms (S = nccl-tests "size": AG output, RS input, AR buffer, A2A send buffer):
//   ring           bw: V / min_j (B_j x m_{j-1}),  latency (G-1) x alpha_outer
//   hierarchical   bw: max_j (D_j-1)/D_j x S/m_{j-1} / B_j (tiers pipelined), latency sum_j (D_j-1) alpha_j
//   halving-doubling  bw: sum_j (same volumes, one tier after the other), latency sum_j ceil(log2 D_j) alpha_j
//   tree (all-reduce, broadcast)  bw: S / min_j B_j per direction, latency 2 log2(G) alpha_outer
// with V = (G-1)/G x S (AG, RS), 2 (G-1)/G x S (AR); all-reduce doubles the bandwidth
// terms of the others (RS + AG). B_j is the tier's per-rank bandwidth times its size
// efficiency at the bytes crossing it, times (D_j - 1) links on a full mesh.
// A measured collective of the group's outermost tier replaces the model:
// time = V / busbw (nccl-tests convention, busbw = algbw x (G-1)/G for AG/RS/A2A,
// x 2(G-1)/G for AR) + latency.

#include <string>
#include <vector>

#include "paraplan/estimate.hpp"
#include "paraplan/spec.hpp"

namespace paraplan::cost {

enum class Algorithm { Ring, Hierarchical, HalvingDoubling, Tree, Direct };

const char* name(Algorithm a);
const char* name(Collective c);

/// A rank group placed on the tiers.
struct GroupSpan {
  int size = 1;
  bool dies = false;             ///< ranks are dies
  std::vector<int> tier;         ///< tier indices the placement uses, innermost first
  std::vector<int> members;      ///< m_j: members inside one unit of tier[j]
  /// Fan-out D_j at position j.
  [[nodiscard]] int fanout(std::size_t j) const {
    return members[j] / (j == 0 ? 1 : members[j - 1]);
  }
  /// Position of the outermost tier the group crosses (-1 for a group of one).
  [[nodiscard]] int outer() const;
};

/// Places a group of `size` ranks at `stride` (in ranks). `dies` = ranks are dies (the
/// hardware's die tier is then the innermost level), otherwise devices.
GroupSpan place(const HardwareSpec& hw, int size, long long stride, bool dies);

/// Bytes one rank moves over one tier, and the time they take there.
struct TierTraffic {
  std::string tier;
  double bytes = 0;
  double time_s = 0;
};

/// Cost of one collective call.
struct CollectiveCost {
  Collective op = Collective::AllReduce;
  Algorithm algorithm = Algorithm::Ring;
  double bytes = 0;       ///< S, nccl-tests size
  double time_s = 0;
  Engine engine = Engine::Dma;
  double compute_share = 0;  ///< fraction of compute occupied while it runs
  bool measured = false;     ///< a measured override set the time
  std::vector<TierTraffic> tiers;  ///< per crossed tier
};

/// `op` of size `bytes` over `group` ranks at the measured figure `o` of tier `t`: bus volume
/// (or the size, for an algbw figure) over the figure on its size curve, times the tier's
/// calibration, plus `latency_s`.
CollectiveCost measured_collective(const HardwareSpec& hw, const TierSpec& t, const CollectiveOverride& o,
                                   Collective op, double bytes, int group, double bw_factor, double latency_s);

/// Time of `op` on `group` for size `bytes`, with the fastest algorithm (or `fixed`).
CollectiveCost collective(const HardwareSpec& hw, Collective op, double bytes, const GroupSpan& group,
                          const Algorithm* fixed = nullptr);

/// Point-to-point transfer of `bytes` between two ranks `stride` apart.
CollectiveCost send_recv(const HardwareSpec& hw, double bytes, long long stride, bool dies);

/// Fraction of the compute units a DMA-engine transfer still occupies: NVIDIA's NCCL and
/// DeepEP kernels run on SMs (device.comm_units of device.compute_units); a true copy engine
/// (comm_units 0, BR166 DMA) none.
double dma_compute_share(const HardwareSpec& hw);

/// A layer's EP transfers (`ops` of group "ep", either pass): their time, the part of it run
/// by compute units (stages holding all of them; on a device without comm_units, each op's
/// busy time), and the largest share of the units the other (DMA) stages' kernels hold.
/// `again`: the backward re-runs the forward's dispatch and combine (ep_again), counted in
/// its pass a second time.
struct EpTransfers {
  double time_s = 0, engine_s = 0, units = 0;
  double forward_s = 0, backward_s = 0;  ///< time_s by pass
};
EpTransfers ep_transfers(const HardwareSpec& hw, const std::vector<CommOpEstimate>& ops, bool again = false);

/// Whether a MoE layer's backward re-runs its forward's EP exchange: the MoE block's forward
/// is recomputed whole (its token permutation recomputed: full recompute, or the `moe`
/// module), as Megatron-Core's checkpointed MoE layer and a checkpoint wrapper around the
/// whole block do; not torchtitan's op policy, which keeps collective outputs.
bool ep_again(const Strategy& s, const LayerEstimate& layer);
/// Whether EP communication hides behind a paired micro-batch's compute (overlap.ep with
/// another micro-batch to pair with: in flight on the rank, pp > 1, or without a pipeline the
/// step's next micro-batch, whose forward Megatron-Core runs beside the previous one's
/// backward: NVIDIA/Megatron-LM@d98e8a64dd megatron/core/pipeline_parallel/combined_1f1b.py,
/// combined_1f1b_schedule_for_no_pipelining; the first forward and the last backward run
/// alone, taken as paired like a pipeline's warm-up).
bool ep_overlapped(const Strategy& s);

/// The EP time left exposed beside `compute_s` of the layer's compute (forward, backward and
/// weight gradient of a paired micro-batch) when the strategy overlaps it: the engine part
/// adds; the DMA part hides under the compute, which runs on the units the DMA kernels leave
/// (a window of compute / (1 - units)); of what could hide, min(dma, window), the share
/// `overlap_share` (calibration.ep_overlap) does. Not overlapped: all of it.
double ep_exposed(const EpTransfers& ep, double compute_s, bool overlapped, double overlap_share);

/// What a group spanning `nodes` nodes sees of a tier with switch levels: the smallest level
/// that holds them (past the last level, the last one): bandwidth factor 1 / oversubscription
/// and that level's latency. A tier without levels: factor 1 and its own latency.
struct LevelView {
  double bw_factor = 1;
  double latency_s = 0;
};
LevelView level_view(const TierSpec& t, int nodes);

/// Effective per-rank bandwidth of tier `t` at a message of `bytes` (size efficiency).
double tier_bandwidth(const TierSpec& t, double bytes);
/// Fraction of the peak a message of `bytes` reaches on a size curve (1 when it is empty;
/// log-linear between points, flat beyond the ends).
double size_fraction(const std::vector<SizePoint>& se, double bytes);
/// A measured collective's size curve: its own, or the tier's.
const std::vector<SizePoint>& size_curve(const CollectiveOverride& o, const TierSpec& t);
/// A measured collective's rate for a message of `bytes`: its figure on its size curve.
double override_bandwidth(const CollectiveOverride& o, const TierSpec& t, double bytes);
/// A measured figure's fraction for a group of `group` ranks (its `ranks_efficiency`, linear
/// between rows, flat beyond them; 1 without rows).
double ranks_fraction(const CollectiveOverride& o, int group);

/// A layer's attention kernel time on one rank, per pass (what hides a CP exchange).
struct AttentionTimes {
  double forward_s = 0, backward_s = 0;
  bool recomputed = false;  ///< the forward runs again in backward (its exchange too)
};
AttentionTimes attention_times(const LayerEstimate& layer);

/// The part of a layer's CP exchange (its `cp` ops from estimate_comm) the attention does not
/// hide, forward and backward. A ring step's transfer runs beside one step's attention,
/// 1/cp of it (the load-balanced causal split gives every step the same work); TE's
/// all-gather runs before the attention; torch's is awaited after the first step; the
/// last gradient hop waits for the last step. A recomputed forward exchanges again in
/// backward.
struct CpExposed {
  double forward_s = 0, backward_s = 0;
};
CpExposed cp_exposed(const Strategy& s, const std::vector<CommOpEstimate>& ops, const AttentionTimes& attn);

/// A layer's TP exchange (its `tp` ops from estimate_comm) as the strategy runs it, per pass:
/// what it adds to the layer's compute. Without overlap.tp, all of it. With it, as
/// Transformer Engine's userbuffers overlap each exchange with the GEMMs of its block
/// (OpEstimate::block; split_s, the GEMM in the overlap's chunks), with the methods of
/// Megatron-Bridge's tuned configurations: the all-gathers before the column-parallel GEMMs
/// and before the row-parallel dgrad are ring exchanges on the copy engine beside the chunked
/// GEMM (max(split, transfer + split / tp)); the reduce-scatter after the row-parallel GEMM is
/// one too with FP8 GEMMs, and with BF16 ones a pipeline of 4 chunks whose GEMM runs on the
/// units its kernels leave (max(G + r, G / 4 + 4 r), G = split / (1 - u), r = transfer / 4);
/// the input's second all-gather (for the weight gradient) and the input gradient's
/// reduce-scatter run beside the column-parallel dgrad and wgrad, which keep all the units
/// and lose the share the transfer's kernels hold while it runs (bulk: max(GEMM + u
/// transfer, transfer)). u: Transformer Engine's 16 SMs of the device's compute units
/// (0 on a device without comm_units, whose transfers' busy time adds). Stages on compute
/// units add in full. An all-reduce (no sequence parallelism) is not overlapped. A block
/// whose forward the backward runs again whole (its first and last GEMM recomputed, not
/// torchtitan's op policy) exchanges again there as its forward did, overlapped or not.
struct TpExposed {
  double forward_s = 0, backward_s = 0;
};
TpExposed tp_exposed(const HardwareSpec& hw, const Strategy& s, const std::vector<CommOpEstimate>& ops,
                     const LayerEstimate& layer);

}  // namespace paraplan::cost
