#pragma once
// MoE dispatch and combine as sequences of stages (SEED_DIGEST.md sec. 5): each stage
// moves an expected volume over a tier, an extra link or local memory, on an engine, and
// the scheme says how its stages overlap.
//
//   allgather            EP all-gather of every token (+ local permute); combine: reduce-scatter
//   alltoall             all-to-all(v), one copy per distinct destination rank (deduplicated)
//   deepep               one RDMA copy per destination node to the same-index rank, then
//                        intra-node forwarding; the two stages pipelined (DeepEP normal kernels)
//   sendrecv_allgather   inter-node send/recv of all tokens to the same-index card of every
//                        other node, intra-node all-gather, inter-die reorder; 2-stage pipeline
//   sendrecv_deepep      inter-node send/recv, then intra-node DeepEP forwarding; 2-stage pipeline
// Port-10 (`extra_links` between node pairs) adds its bandwidth to the inter-node stages of
// a pair of nodes.

#include <string>
#include <vector>

#include "cost/comm.hpp"
#include "cost/routing.hpp"
#include "paraplan/spec.hpp"

namespace paraplan::cost {

/// One stage of a dispatch or combine.
struct Stage {
  std::string name;
  std::string link;     ///< tier or extra-link name, or "local"
  double bytes = 0;     ///< per rank
  double bw = 0;        ///< bytes/s used
  double time_s = 0;
  Engine engine = Engine::Dma;
  double compute_share = 0;  ///< fraction of compute occupied while it runs
  Collective op = Collective::AllToAll;  ///< the collective its transfer is (for calibration and reports)
};

/// How the stages of a scheme combine in time.
enum class StageOverlap {
  Sequential,  ///< one after the other
  Pipelined,   ///< chunked: the slowest stage sets the time (DeepEP inter/intra)
  TwoStage,    ///< inter-node first stage beside the local part of the second (seeds sec. 5.8)
};

/// Dispatch or combine of one MoE layer, one micro-batch, one rank.
struct ExchangeCost {
  std::string name;      ///< "dispatch" / "combine"
  std::vector<Stage> stages;
  StageOverlap overlap = StageOverlap::Sequential;
  double time_s = 0;     ///< after the scheme's own overlap
  double compute_s = 0;  ///< of which compute units are busy (engine compute x share)
  double queueing_s = 0; ///< Kingman wait of pipelined chunks (its own term)
  int chunks = 1;        ///< two-stage schemes: the inter-node transfer's chunks
  std::vector<Stage> chunk_stages;  ///< the stages at one chunk's volume (chunks > 1)
};

/// What the EP exchange of a strategy looks like.
struct EpLayout {
  int ep = 1;               ///< EP ranks
  bool dies = false;        ///< ranks are dies
  int ranks_per_node = 1;   ///< EP ranks inside one node
  int nodes = 1;            ///< nodes the EP group spans
  double tokens = 0;        ///< tokens a rank routes per micro-batch (mean)
  int top_k = 1;            ///< routed experts per token
  double load = 1;          ///< busiest rank's received copies / mean (routing x imbalance)
  double dispatch_bytes = 0;  ///< bytes per token copy, dispatch (FP8 with scales, or BF16)
  double combine_bytes = 0;   ///< bytes per token copy, combine (BF16)
  int chunks = 1;             ///< moe.chunks: two-stage schemes' inter-node chunks
  RoutingStats routing;
};

/// The EP layout of a strategy (group placement, routing statistics, token sizes).
EpLayout ep_layout(const HardwareSpec& hw, const ModelSpec& m, const Strategy& s, double tokens_per_rank);

/// Dispatch (`combine` = false) or combine of one MoE layer forward. The backward pass
/// moves the same volumes in the other direction (dispatch_bwd = combine_fwd).
ExchangeCost exchange(const HardwareSpec& hw, const EpLayout& ep, Dispatch scheme, bool combine);

}  // namespace paraplan::cost
