// Routing statistics, load imbalance, queueing, collectives and the MoE dispatch schemes.
// Expected values are derived by hand (formula in the comment) or are the seeds' own
// numbers, reproduced from their inputs, with the exact model's value beside them.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>
#include <vector>

#include "cost/comm.hpp"
#include "cost/dispatch.hpp"
#include "cost/fit.hpp"
#include "cost/queueing.hpp"
#include "cost/routing.hpp"
#include "model/op_graph.hpp"
#include "paraplan/config.hpp"
#include "paraplan/estimate.hpp"
#include "paraplan/validate.hpp"

using namespace paraplan;
using namespace paraplan::cost;

namespace {

constexpr double kMiB = 1048576.0;

// Seeded uniform top-k routing: k distinct experts of E per token (partial Fisher-Yates).
struct Simulated {
  double ranks_per_token = 0, nodes_per_token = 0, p_rank0 = 0;
};
// Routes tokens at random: `max_nodes` of `groups` equal expert groups (0: one per node), then
// top-k uniformly among their experts.
Simulated simulate(int E, int k, int ranks, int rpn, int max_nodes, int tokens, unsigned seed, int groups = 0) {
  std::mt19937 rng(seed);
  std::vector<int> experts(static_cast<std::size_t>(E));
  const int nodes = ranks / rpn, e_rank = E / ranks, e_node = E / nodes;
  const int G = groups > 0 ? groups : nodes, e_group = E / G;
  Simulated s;
  for (int t = 0; t < tokens; ++t) {
    std::vector<int> pool;
    if (max_nodes > 0 && max_nodes < G) {
      std::vector<int> ns(static_cast<std::size_t>(G));
      std::iota(ns.begin(), ns.end(), 0);
      std::shuffle(ns.begin(), ns.end(), rng);
      for (int i = 0; i < max_nodes; ++i) {
        for (int e = 0; e < e_group; ++e) pool.push_back(ns[static_cast<std::size_t>(i)] * e_group + e);
      }
    } else {
      pool.resize(static_cast<std::size_t>(E));
      std::iota(pool.begin(), pool.end(), 0);
    }
    std::vector<bool> rank_hit(static_cast<std::size_t>(ranks)), node_hit(static_cast<std::size_t>(nodes));
    for (int i = 0; i < k; ++i) {
      std::uniform_int_distribution<std::size_t> pick(static_cast<std::size_t>(i), pool.size() - 1);
      std::swap(pool[static_cast<std::size_t>(i)], pool[pick(rng)]);
      int e = pool[static_cast<std::size_t>(i)];
      rank_hit[static_cast<std::size_t>(e / e_rank)] = true;
      node_hit[static_cast<std::size_t>(e / e_node)] = true;
    }
    s.ranks_per_token += std::count(rank_hit.begin(), rank_hit.end(), true);
    s.nodes_per_token += std::count(node_hit.begin(), node_hit.end(), true);
    s.p_rank0 += rank_hit[0];
  }
  s.ranks_per_token /= tokens;
  s.nodes_per_token /= tokens;
  s.p_rank0 /= tokens;
  return s;
}


// One MLP block's GEMMs with made-up times in ms (time, time in the overlap's chunks): fc1
// 1.0 (1.1), fc2 0.8 (0.85); backward fc2.dgrad 0.8 (0.85), fc1.dgrad 1.0, wgrads 0.8 and 1.0.
OpEstimate block_gemm(const char* name, const char* phase, double t, double split) {
  OpEstimate op;
  op.name = name;
  op.phase = phase;
  op.kind = "gemm";
  op.block = "mlp";
  op.time_s = t * 1e-3;
  op.split_s = split * 1e-3;
  return op;
}
LayerEstimate mlp_block() {
  LayerEstimate layer;
  layer.ops = {block_gemm("fc1", "forward", 1.0, 1.1), block_gemm("fc2", "forward", 0.8, 0.85),
               block_gemm("fc2.dgrad", "input_grad", 0.8, 0.85), block_gemm("fc2.wgrad", "weight_grad", 0.8, 0),
               block_gemm("fc1.dgrad", "input_grad", 1.0, 0), block_gemm("fc1.wgrad", "weight_grad", 1.0, 0)};
  return layer;
}
// A TP exchange of the block taking t ms.
CommOpEstimate tp_op(const char* name, const char* phase, double t) {
  return CommOpEstimate{name, phase, "tp", "ring", t * 1e-3, 0, 0, 1, {}};
}
// Its exchanges: the all-gathers take 0.5 ms, the reduce-scatters 0.6.
std::vector<CommOpEstimate> mlp_block_exchanges() {
  return {tp_op("mlp.tp_all_gather", "forward", 0.5), tp_op("mlp.tp_reduce_scatter", "forward", 0.6),
          tp_op("mlp.tp_all_gather", "backward", 0.5), tp_op("mlp.tp_reduce_scatter", "backward", 0.6)};
}

}  // namespace

TEST_SUITE("cost.routing") {
  TEST_CASE("hit probability is hypergeometric: 1 - C(E - e, k) / C(E, k)") {
    // One card of 8 holding 32 of 256 experts, top-8 (SEED_DIGEST.md sec. 5.2). The seeds
    // approximate with replacement: 1 - (7/8)^8 = 0.6564. Exact: 1 - prod_{i<8} (224 - i) /
    // (256 - i) = 0.66183.
    CHECK(hit_probability(256, 32, 8) == doctest::Approx(0.6618315).epsilon(1e-6));
    CHECK(1 - std::pow(7.0 / 8, 8) == doctest::Approx(0.6563911).epsilon(1e-6));
    // Two nodes of 128 experts: seeds 1 - (1/2)^8 = 0.99609; exact 0.99651.
    CHECK(hit_probability(256, 128, 8) == doctest::Approx(0.9965101).epsilon(1e-6));
    // A 4-card group (64 experts) of EP32: seeds 1 - (12/16)^8 = 0.8999; exact 0.90355.
    CHECK(hit_probability(256, 64, 8) == doctest::Approx(0.9035536).epsilon(1e-6));
    // Edge cases: a group of every expert is always hit; an empty one never.
    CHECK(hit_probability(256, 256, 8) == 1.0);
    CHECK(hit_probability(256, 0, 8) == 0.0);
  }

  TEST_CASE("the seeds' measured per-card token counts match the exact expectation") {
    // SEED_DIGEST.md sec. 5.2: [2, 4096, 7168] tokens, 256 experts, top-8, 8 groups of 32:
    // measured tokens per group 5381 5357 5385 5372 5565 5433 5363 5402, mean 5407.25.
    const double measured = (5381 + 5357 + 5385 + 5372 + 5565 + 5433 + 5363 + 5402) / 8.0;
    const double exact = 8192 * hit_probability(256, 32, 8);   // 5421.7
    const double seeds = 8192 * (1 - std::pow(7.0 / 8, 8));    // 5377.2
    CHECK(exact == doctest::Approx(5421.72).epsilon(1e-5));
    // The exact expectation is 0.27% above the measured mean, the seeds' 0.56% below.
    CHECK(std::fabs(exact / measured - 1) < 0.003);
    CHECK(std::fabs(exact / measured - 1) < std::fabs(seeds / measured - 1));
  }

  TEST_CASE("expected destinations match a seeded Monte-Carlo routing simulation") {
    struct Case {
      int E, k, ranks, rpn, max_nodes, groups;
    };
    const Case cases[] = {{256, 8, 16, 16, 0, 0},  // EP16 over the dies of one node
                          {256, 8, 32, 16, 0, 0},  // EP32 over two nodes
                          {256, 8, 64, 16, 0, 0},  // EP64 over four nodes
                          {256, 8, 64, 8, 4, 0},   // EP64 over 8 nodes, node-limited M = 4
                          {8, 2, 8, 8, 0, 0},      // Mixtral EP8
                          {32, 8, 8, 8, 4, 8},     // 4 of 8 groups, a group per rank (one node)
                          {256, 8, 32, 8, 4, 8}};  // 4 of 8 groups over 4 nodes: 2 groups per node
    unsigned seed = 11;
    for (const Case& c : cases) {
      CAPTURE(c.ranks);
      CAPTURE(c.max_nodes);
      CAPTURE(c.groups);
      RoutingStats r = routing_stats(c.E, c.k, c.ranks, c.rpn, c.max_nodes, c.groups);
      Simulated sim = simulate(c.E, c.k, c.ranks, c.rpn, c.max_nodes, 40000, seed++, c.groups);
      // 40000 tokens: standard errors ~ 0.01 on these counts
      CHECK(sim.ranks_per_token == doctest::Approx(r.ranks_per_token).epsilon(0.01));
      CHECK(sim.nodes_per_token == doctest::Approx(r.nodes_per_token).epsilon(0.01));
      CHECK(sim.p_rank0 == doctest::Approx(r.p_rank).epsilon(0.03));
    }
  }

  TEST_CASE("node-limited routing lowers the nodes a token needs and raises its ranks per node") {
    // EP64 over 8 nodes (8 ranks each): uniform top-8 vs at most 4 nodes (DeepSeek-V3, M = 4)
    RoutingStats uniform = routing_stats(256, 8, 64, 8, 0);
    RoutingStats limited = routing_stats(256, 8, 64, 8, 4);
    CHECK(limited.nodes_per_token < uniform.nodes_per_token);
    CHECK(limited.nodes_per_token <= 4.0);
    // Given the token's 4 nodes, each holds 32 of their 128 experts: 1 - C(96,8)/C(128,8)
    CHECK(limited.p_node == doctest::Approx(0.5 * hit_probability(128, 32, 8)));
  }

  TEST_CASE("round-robin routing: the ranks and nodes a block of k consecutive experts spans, by hand") {
    // DeepSeek-V3 under NeMo AutoModel's fake gate at EP64 over 8 nodes: token t takes experts
    // 8t .. 8t + 7 (mod 256), aligned to 8; 4 experts per rank, 32 per node: 2 ranks, 1 node.
    RoutingStats d = round_robin_stats(256, 8, 64, 8);
    CHECK(d.ranks_per_token == doctest::Approx(2.0));
    CHECK(d.nodes_per_token == doctest::Approx(1.0));
    CHECK(d.p_rank == doctest::Approx(2.0 / 64));
    CHECK(d.p_node == doctest::Approx(1.0 / 8));
    CHECK(d.remote_nodes == doctest::Approx(7.0 / 8));
    CHECK(d.remote_ranks_same_node == doctest::Approx(7 * 2.0 / 64));
    // Qwen3-30B-A3B at EP8 in one node: 8 of 128 experts, 16 per rank: one rank.
    CHECK(round_robin_stats(128, 8, 8, 8).ranks_per_token == doctest::Approx(1.0));
    // 12 experts, k = 2, 4 ranks of 3 (0-2, 3-5, 6-8, 9-11): the starts 0, 2, .., 10 give
    // {0,1} 1 rank, {2,3} 2, {4,5} 1, {6,7} 1, {8,9} 2, {10,11} 1: 8 / 6 ranks per token.
    CHECK(round_robin_stats(12, 2, 4, 4).ranks_per_token == doctest::Approx(8.0 / 6));
    // A block that wraps: 8 experts, k = 3, 4 ranks of 2: every start spans 2 ranks ({6,7,0}:
    // ranks 3 and 0).
    CHECK(round_robin_stats(8, 3, 4, 4).ranks_per_token == doctest::Approx(2.0));
  }

  TEST_CASE("a MoE block recomputed whole re-runs its EP exchange in the backward") {
    // Forward dispatch + combine 1 ms, backward 1 ms: run again, the backward holds 2 ms of
    // transfers and the layer 3 ms.
    const HardwareSpec hw = load_hardware("h800-ib");
    std::vector<CommOpEstimate> ops(2);
    ops[0].group = ops[1].group = "ep";
    ops[0].phase = "forward";
    ops[1].phase = "backward";
    ops[0].time_s = ops[1].time_s = 1e-3;
    const cost::EpTransfers once = cost::ep_transfers(hw, ops, false), twice = cost::ep_transfers(hw, ops, true);
    CHECK(once.time_s == doctest::Approx(2e-3));
    CHECK(twice.time_s == doctest::Approx(3e-3));
    CHECK(twice.forward_s == doctest::Approx(1e-3));
    CHECK(twice.backward_s == doctest::Approx(2e-3));
    // Which layers: a recomputed permutation (full recompute), not torchtitan's op policy.
    Plan p = load_plan("deepseek-v3-h800");
    p.strategy.training.recompute.mode = RecomputeMode::Full;
    bool seen = false;
    for (const LayerEstimate& l : estimate_compute(p).layers) {
      if (l.kind != "moe") continue;
      seen = true;
      CHECK(cost::ep_again(p.strategy, l));
      Strategy op = p.strategy;
      op.training.recompute.mode = RecomputeMode::Op;
      CHECK_FALSE(cost::ep_again(op, l));
    }
    CHECK(seen);
    p.strategy.training.recompute.mode = RecomputeMode::None;
    for (const LayerEstimate& l : estimate_compute(p).layers) CHECK_FALSE(cost::ep_again(p.strategy, l));
  }

  TEST_CASE("group-limited routing with the model's own groups, by hand") {
    // Megatron-Core's DeepSeek proxy layer (moe_perf test_cases.py: 32 experts, top-8, 8 groups,
    // group top-k 4) on EP8 in one node: a group per rank. A rank is needed only if its group
    // is picked (4/8), then hit among the 16 experts of the 4 groups: 1 - C(12,8)/C(16,8).
    RoutingStats g = routing_stats(32, 8, 8, 8, 4, 8);
    const double p = 0.5 * (1 - 495.0 / 12870.0);
    CHECK(g.p_rank == doctest::Approx(p));
    CHECK(g.ranks_per_token == doctest::Approx(8 * p));  // 3.85, against 5.64 unlimited
    CHECK(routing_stats(32, 8, 8, 8, 0, 8).ranks_per_token == doctest::Approx(8 * (1 - 3108105.0 / 10518300.0)));
    // 256 experts in 8 groups of 32, 4 groups per token, over 4 nodes of 2 groups each: the
    // node holds j of the token's groups with probability C(2,j) C(6,4-j) / C(8,4) (j = 1:
    // 2 x 20 / 70, j = 2: 15 / 70), then is hit among the 128 experts of the 4 groups.
    RoutingStats n = routing_stats(256, 8, 32, 8, 4, 8);
    CHECK(n.p_node == doctest::Approx(40.0 / 70 * hit_probability(128, 32, 8) + 15.0 / 70 * hit_probability(128, 64, 8)));
    // Without groups, node-limited routing is the same with a group per node (the DeepSeek-V3
    // case): routing_stats(.., 4, 0) over 8 nodes equals routing_stats(.., 4, 8).
    CHECK(routing_stats(256, 8, 64, 8, 4, 0).p_rank == doctest::Approx(routing_stats(256, 8, 64, 8, 4, 8).p_rank));
  }

  TEST_CASE("expected maximum of binomial loads, exactly") {
    // n = 1: the mean
    CHECK(expected_max_binomial(100, 0.3, 1) == doctest::Approx(30.0));
    // max of two Bernoulli(1/2): 1 - P(both 0) = 0.75
    CHECK(expected_max_binomial(1, 0.5, 2) == doctest::Approx(0.75));
    // max of two Binomial(2, 1/2): F(0) = 1/4, F(1) = 3/4: (1 - 1/16) + (1 - 9/16) = 1.375
    CHECK(expected_max_binomial(2, 0.5, 2) == doctest::Approx(1.375));
  }

  TEST_CASE("load factors match a seeded simulation of the busiest expert") {
    // EP16 row 1: 16 ranks x 4096 tokens = 65536 tokens over 256 experts, top-8
    LoadFactors lf = load_factors(65536, 256, 8, 16);
    std::mt19937 rng(5);
    double mean_max = 0;
    const int trials = 40;
    for (int t = 0; t < trials; ++t) {
      std::vector<int> load(256);
      std::vector<int> pool(256);
      for (int i = 0; i < 65536; ++i) {
        std::iota(pool.begin(), pool.end(), 0);
        for (int j = 0; j < 8; ++j) {
          std::uniform_int_distribution<int> pick(j, 255);
          std::swap(pool[static_cast<std::size_t>(j)], pool[static_cast<std::size_t>(pick(rng))]);
          ++load[static_cast<std::size_t>(pool[static_cast<std::size_t>(j)])];
        }
      }
      mean_max += *std::max_element(load.begin(), load.end());
    }
    mean_max /= trials;
    // mean load 65536 x 8 / 256 = 2048; the busiest of 256 sits about 2.8 sd higher
    CHECK(mean_max / 2048 == doctest::Approx(lf.expert).epsilon(0.005));
    CHECK(lf.expert > 1.04);
    CHECK(lf.rank > 1.0);
    CHECK(lf.rank < lf.expert);  // a rank sums 16 experts: relatively less spread
  }
}

TEST_SUITE("cost.queueing") {
  TEST_CASE("Kingman: exact M/M/1 wait, no variance no wait, growth towards rho = 1") {
    // M/M/1: W = rho / (1 - rho) x tau
    CHECK(kingman_wait(0.5, 1, 1, 2e-3) == doctest::Approx(2e-3));
    CHECK(kingman_wait(0.8, 1, 1, 1e-3) == doctest::Approx(4e-3));
    CHECK(kingman_wait(0.9, 0, 0, 1e-3) == 0.0);
    double last = 0;
    for (double rho : {0.1, 0.5, 0.8, 0.9, 0.95, 0.99}) {
      double w = kingman_wait(rho, 0.5, 0.2, 1e-3);
      CHECK(w > last);
      last = w;
    }
  }
}

TEST_SUITE("cost.comm") {
  TEST_CASE("placement: groups on BR166 tiers, ranks as dies or devices") {
    HardwareSpec hw = load_hardware("br166-ubbv2");
    // EP32 over dies, stride 1: die 2, vnode 8 dies, node 16 dies, cluster 32
    GroupSpan g = place(hw, 32, 1, true);
    CHECK(g.members == std::vector<int>{2, 8, 16, 32});
    CHECK(g.outer() == 3);
    // DP8 over devices with stride 1 inside a node: vnode 4, node 8, cluster 8
    GroupSpan dp = place(hw, 8, 1, false);
    CHECK(dp.members == std::vector<int>{4, 8, 8});
    CHECK(dp.outer() == 1);  // the node tier
    // a PP pair 8 devices apart: different nodes
    GroupSpan pp = place(hw, 2, 8, false);
    CHECK(pp.members == std::vector<int>{1, 1, 2});
  }

  TEST_CASE("a measured bus bandwidth sets the time: nccl-tests convention") {
    HardwareSpec hw = load_hardware("h100-sxm-ib");
    const auto& ar = hw.tiers[0].collective(Collective::AllReduce);
    REQUIRE(ar.has_value());
    GroupSpan node = place(hw, 8, 1, false);
    const double S = 1073741824.0;  // 1 GiB
    CollectiveCost c = collective(hw, Collective::AllReduce, S, node);
    CHECK(c.measured);
    // busbw = algbw x 2(n-1)/n  ->  time = 2 (n-1)/n x S / (busbw x size efficiency) + latency
    const double busbw = ar->bus_bw_bytes_per_s * tier_bandwidth(hw.tiers[0], S) / hw.tiers[0].bw_bytes_per_s;
    CHECK(c.time_s == doctest::Approx(2.0 * 7 / 8 * S / busbw + hw.tiers[0].latency_s));
    // nccl_tests_allreduce_dgx_h100_single_node: 1 GiB all-reduce in 4029.4 us
    CHECK(c.time_s == doctest::Approx(4029.4e-6).epsilon(0.01));
  }

  TEST_CASE("b200-sxm-ib: the node's all-gather and all-to-all as measured on SimuMax's B200") {
    // MooreThreads/SimuMax@4dcaae5 configs/system/b200_bf16_ceperm.json, high_intra_node:
    // all_gather efficient_factor 0.6735 of 900 GiB/s, 9.1828 us per ring step and 23.1049 us
    // per call; time = 7/8 S / (0.6735 x 900 x 2^30 B/s) + 7 x 9.1828 + 23.1049 us. Llama 3
    // 70B's TP8 all-gather (4096 tokens x 8192 x 2 B = 64 MiB): 90.23 + 87.38 = 177.6 us, and
    // the tier adds its one-hop latency (3.33 us) to a measured figure. all_to_all: 0.5968,
    // 7.3039 us per step, none per call at 8 ranks: 64 MiB in 102.3 + 51.1 = 153.4 us.
    HardwareSpec hw = load_hardware("b200-sxm-ib");
    GroupSpan node = place(hw, 8, 1, false);
    const double S = 64.0 * 1024 * 1024;
    const double gib = 1024.0 * 1024 * 1024;
    const CollectiveCost ag = collective(hw, Collective::AllGather, S, node);
    CHECK(ag.measured);
    CHECK(ag.time_s == doctest::Approx(7.0 / 8 * S / (0.6735 * 900 * gib) + (7 * 9.1828 + 23.1049 + 3.33) * 1e-6).epsilon(0.01));
    const CollectiveCost a2a = collective(hw, Collective::AllToAll, S, node);
    CHECK(a2a.time_s == doctest::Approx(7.0 / 8 * S / (0.5968 * 900 * gib) + (7 * 7.3039 + 3.33) * 1e-6).epsilon(0.01));
  }

  TEST_CASE("ring all-reduce across nodes, one GPU per node: alpha-beta on the NIC") {
    HardwareSpec hw = load_hardware("a100-sxm-ib");
    // DP group of 8 ranks, one per node (stride 8): only the cluster tier is crossed.
    GroupSpan g = place(hw, 8, 8, false);
    CHECK(g.members == std::vector<int>{1, 8});
    const TierSpec& ib = hw.tiers[1];
    const double S = 512e6;
    Algorithm ring = Algorithm::Ring;
    CollectiveCost c = collective(hw, Collective::AllReduce, S, g, &ring);
    // 2 (n - 1)/n x S / B + 2 (n - 1) alpha, alpha = 2.8 us: 8 nodes sit under one 20-node
    // leaf switch (hardware/a100-sxm-ib.yaml levels; ISCA'25 same-leaf latency)
    CHECK(c.time_s == doctest::Approx(2.0 * 7 / 8 * S / tier_bandwidth(ib, 2.0 * 7 / 8 * S) + 14 * 2.8e-6));
    // for large messages the best algorithm is no slower than the ring
    CHECK(collective(hw, Collective::AllReduce, S, g).time_s <= c.time_s);
  }

  TEST_CASE("hierarchical all-gather over 2 full nodes: NVLink and NIC volumes") {
    HardwareSpec hw = load_hardware("a100-sxm-ib");
    GroupSpan g = place(hw, 16, 1, false);
    CHECK(g.members == std::vector<int>{8, 16});
    Algorithm hier = Algorithm::Hierarchical;
    const double S = 1e9;
    CollectiveCost c = collective(hw, Collective::AllGather, S, g, &hier);
    REQUIRE(c.tiers.size() == 2);
    // node tier: (8 - 1)/8 x S; cluster tier: (2 - 1)/2 x S / 8 per rank
    CHECK(c.tiers[0].bytes == doctest::Approx(7.0 / 8 * S));
    CHECK(c.tiers[1].bytes == doctest::Approx(S / 16));
  }

  TEST_CASE("more bandwidth is never slower") {
    HardwareSpec hw = load_hardware("br166-ubbv2");
    HardwareSpec fast = hw;
    for (TierSpec& t : fast.tiers) {
      t.bw_bytes_per_s *= 2;
      for (auto& o : t.collectives) {
        if (o) o->bus_bw_bytes_per_s *= 2;
      }
    }
    for (Collective op : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter,
                          Collective::AllToAll}) {
      for (int size : {2, 8, 16, 32, 64}) {
        for (double S : {1e5, 1e7, 1e9}) {
          GroupSpan g = place(hw, size, 1, true);
          CHECK(collective(fast, op, S, g).time_s <= collective(hw, op, S, g).time_s);
        }
      }
    }
  }
}

TEST_SUITE("cost.dispatch") {
  // The seeds' hand calculations (SEED_DIGEST.md sec. 5.4-5.9) reproduced from their
  // inputs, each beside what the exact model gives and why it differs.
  TEST_CASE("single-node EP16 allgather dispatch: 896 MB at 128.6 GB/s") {
    const Plan plan = load_plan("br166-ep16-mb2");
    const auto tok = model::tokens_of(plan.model, plan.strategy, plan.hardware, 1.0);
    EpLayout ep = ep_layout(plan.hardware, plan.model, plan.strategy, tok.per_rank_moe);
    CHECK(ep.ranks_per_node == 16);
    CHECK(ep.nodes == 1);
    ExchangeCost d = exchange(plan.hardware, ep, Dispatch::AllGather, false);
    // Gathered per rank: 16 dies x 4096 tokens x 7168 x 2 B = 896 MiB (the seeds' "112 MB x 8").
    const double gathered = 16.0 * 4096 * 7168 * 2;
    CHECK(gathered == 896 * kMiB);
    // The seeds: 896 / 128.6 = 6.8 ms, MB over GB/s with GB = 1024 MB (sec. 0.3). In SI the
    // same bytes at 128.6e9 B/s take 7.306 ms: the 7% is the unit convention only.
    CHECK(896.0 / 1024 / 128.6 * 1e3 == doctest::Approx(6.8).epsilon(0.01));
    CHECK(d.time_s == doctest::Approx(gathered / 128.6e9 + plan.hardware.tiers[2].latency_s));
    // Combine: the same buffer reduce-scattered at 169 GB/s: 5.56 ms (seeds: 896/169 = 5.3).
    ExchangeCost c = exchange(plan.hardware, ep, Dispatch::AllGather, true);
    CHECK(c.time_s == doctest::Approx(gathered / 169e9 + plan.hardware.tiers[2].latency_s));
  }

  TEST_CASE("GB200 NVL72: EP64 on 16 trays stays on NVLink; EP128 on 32 trays crosses racks") {
    // validation/bridge2604-gb200-gpt-oss-120b: 64 GPUs, EP64. The dispatch model's "node" is
    // everything below the cluster tier: one rack's NVLink domain of 72, so the 64 ranks are
    // one domain and nothing goes over InfiniBand.
    const std::vector<ValidationCase> cases = load_cases(
        (std::filesystem::path(PARAPLAN_SOURCE_DIR) / "validation/bridge2604-gb200-gpt-oss-120b.yaml").string());
    REQUIRE(cases.size() == 1);
    Plan plan = cases.front().plan;
    const auto tok = model::tokens_of(plan.model, plan.strategy, plan.hardware, 1.0);
    EpLayout ep = ep_layout(plan.hardware, plan.model, plan.strategy, tok.per_rank_moe);
    CHECK(ep.ranks_per_node == 64);
    CHECK(ep.nodes == 1);
    ExchangeCost d = exchange(plan.hardware, ep, Dispatch::AllToAll, false);
    double ib = 0;
    for (const Stage& st : d.stages) {
      if (st.link == "cluster") ib += st.bytes;
    }
    CHECK(ib == 0);
    // 128 GPUs: 72 fit a rack, so 128 ranks are two domains of 64 (the EP group divides
    // evenly over the racks it spans) and the tokens for the other rack cross IB.
    plan.strategy.nodes = 32;
    plan.strategy.parallel.dp = 128;
    plan.strategy.parallel.ep = 128;
    plan.strategy.training.global_batch = 2560;
    EpLayout two = ep_layout(plan.hardware, plan.model, plan.strategy, tok.per_rank_moe);
    CHECK(two.ranks_per_node == 64);
    CHECK(two.nodes == 2);
  }

  TEST_CASE("a measured figure's rank curve: linear between its rows, flat beyond them") {
    CollectiveOverride o;
    o.bus_bw_bytes_per_s = 750.3e9;
    CHECK(ranks_fraction(o, 64) == 1.0);  // no rows: the same at every group size
    o.ranks_efficiency = {{8, 1.0}, {16, 0.9143}, {36, 0.8185}};
    CHECK(ranks_fraction(o, 4) == 1.0);                                   // below the first row
    CHECK(ranks_fraction(o, 12) == doctest::Approx(1.0 - 0.5 * 0.0857));  // half way 8 -> 16
    CHECK(ranks_fraction(o, 26) == doctest::Approx(0.9143 - 0.5 * 0.0958));
    CHECK(ranks_fraction(o, 64) == doctest::Approx(0.8185));  // beyond the last row
  }

  TEST_CASE("GB200 NVL72 and B200: HybridEP at NVIDIA's measured kernel rates, by rank count") {
    // deepseek-ai/DeepEP@94a9f8f (hybrid-ep) docs/README_Hybrid-EP.md, "Kernel Only", BF16,
    // 32 SMs on GB200: dispatch / combine 764.03 / 737.13 GB/s at 8 ranks, 706.95 / 666.26 at
    // 16, 632.31 / 596.99 at 36; 16 SMs on B200 at 8 ranks: 734.95 / 673.84. One rate moves
    // both ways: the harmonic mean. Its convention is algbw: the received tokens' bytes, a
    // rank's own copies included, so an exchange moving B bytes to the other g - 1 ranks
    // times B x g / (g - 1) at that rate (above the 304 MiB the README's 8 ranks moved).
    auto harmonic = [](double a, double b) { return 2.0 / (1.0 / a + 1.0 / b) * 1e9; };
    auto intra_time = [](const Plan& plan) {
      const auto tok = model::tokens_of(plan.model, plan.strategy, plan.hardware, 1.0);
      const EpLayout ep = ep_layout(plan.hardware, plan.model, plan.strategy, tok.per_rank_moe);
      const ExchangeCost d = exchange(plan.hardware, ep, Dispatch::DeepEp, false);
      for (const Stage& st : d.stages) {
        if (st.bytes > 0 && st.link != "cluster") return std::make_tuple(st.bytes, st.time_s, ep.ranks_per_node);
      }
      return std::make_tuple(0.0, 0.0, 0);
    };
    auto plan_of = [](const char* name) {
      const std::vector<ValidationCase> cases =
          load_cases((std::filesystem::path(PARAPLAN_SOURCE_DIR) / "validation" / name).string());
      REQUIRE(cases.size() == 1);
      return cases.front().plan;
    };
    // GPT-OSS 120B at EP64 in one rack: beyond the README's 36 ranks, their rate.
    const Plan ep64 = plan_of("bridge2606-gb200-gpt-oss-120b.yaml");
    const double latency = ep64.hardware.tiers[1].latency_s;
    const auto [b64, t64, g64] = intra_time(ep64);
    REQUIRE(g64 == 64);
    REQUIRE(b64 * 64 / 63 > 304.0 * 1024 * 1024);
    CHECK(t64 == doctest::Approx(b64 * 64 / 63 / harmonic(632.31, 596.99) + latency).epsilon(2e-3));
    // at EP16 (GB300 takes GB200's NVLink figures): the README's 16-rank row
    const Plan ep16 = plan_of("bridge2608-gb300-gpt-oss-120b.yaml");
    const auto [b16, t16, g16] = intra_time(ep16);
    REQUIRE(g16 == 16);
    CHECK(t16 == doctest::Approx(b16 * 16 / 15 / harmonic(706.95, 666.26) + latency).epsilon(2e-3));
    // B200 at EP8 inside its node: the B200 row
    const Plan b200 = plan_of("bridge260201-b200-qwen3-30b-a3b.yaml");
    const auto [b8, t8, g8] = intra_time(b200);
    REQUIRE(g8 == 8);
    REQUIRE(b8 * 8 / 7 > 304.0 * 1024 * 1024);
    CHECK(t8 == doctest::Approx(b8 * 8 / 7 / harmonic(734.95, 673.84) + b200.hardware.tiers[0].latency_s).epsilon(2e-3));
  }

  TEST_CASE("single-node all2allv: one row per routed expert, not per distinct rank") {
    const Plan plan = load_plan("br166-ep16-mb2");
    const auto tok = model::tokens_of(plan.model, plan.strategy, plan.hardware, 1.0);
    EpLayout ep = ep_layout(plan.hardware, plan.model, plan.strategy, tok.per_rank_moe);
    // Seeds: 112 MB x 3.5 = 392 MB per card at 54.8 GB/s = 7.15 ms, with 3.5 = (0 + 7)/2 the
    // "expected other cards" of 8. Exactly, a token needs 7 x 0.6618 = 4.63 other cards.
    CHECK(7 * hit_probability(256, 32, 8) == doctest::Approx(4.633).epsilon(1e-3));
    // Per die (16 ranks of 16 experts): 15 x 0.40770 = 6.116 other dies per token.
    CHECK(ep.routing.remote_ranks_same_node == doctest::Approx(15 * 0.4077050).epsilon(1e-6));
    // That count is what DeepEP sends (one copy per rank that needs the token). An all2allv
    // sends one row per (token, expert) pair: the seeds' "2 x 4096 x 7168 x 2 B x (8 - 1)",
    // copies for one rank not merged (sec. 5.1), as Megatron-Core's alltoall dispatcher does
    // (tokens x top_k rows split by rank). Per die: 8 rows, 15 of the 16 dies' experts
    // elsewhere: 8 x 15/16 = 7.5 rows per token, 4096 x 14336 B x 7.5 = 440 MB.
    ExchangeCost a2a = exchange(plan.hardware, ep, Dispatch::AllToAll, false);
    REQUIRE(a2a.stages.size() == 2);
    CHECK(a2a.stages[1].bytes == doctest::Approx(4096.0 * 14336 * 8 * 15 / 16).epsilon(1e-9));
    CHECK(a2a.stages[0].bytes == 0.0);  // no other node
    // Over two nodes (EP32 over dies, 16 per node): 8 x 16/32 rows to the other node's dies
    // and 8 x 15/32 to this node's others.
    Plan two = plan;
    two.strategy.parallel.ep = 32;
    two.strategy.nodes = 2;
    EpLayout ep2 = ep_layout(two.hardware, two.model, two.strategy, tok.per_rank_moe);
    REQUIRE(ep2.nodes == 2);
    ExchangeCost a2a2 = exchange(two.hardware, ep2, Dispatch::AllToAll, false);
    CHECK(a2a2.stages[0].bytes == doctest::Approx(4096.0 * 14336 * 8 * 16 / 32).epsilon(1e-9));
    CHECK(a2a2.stages[1].bytes == doctest::Approx(4096.0 * 14336 * 8 * 15 / 32).epsilon(1e-9));
  }

  TEST_CASE("NCCL's all-to-all and DeepEP move inter-node bytes at their own rates") {
    // deepseek-v3-h800 (EP64 over 8 nodes): DeepEP's measured RDMA figure (h800-ib `deepep`,
    // 50 GB/s, deepep_v1_normal_kernels_h800) and NVLink figure (153 GB/s) time its stages.
    Plan plan = load_plan("deepseek-v3-h800");
    auto tok = model::tokens_of(plan.model, plan.strategy, plan.hardware, 1.0);
    EpLayout ep = ep_layout(plan.hardware, plan.model, plan.strategy, tok.per_rank_moe);
    REQUIRE(ep.nodes > 2);
    ExchangeCost deepep = exchange(plan.hardware, ep, Dispatch::DeepEp, false);
    REQUIRE(deepep.stages.size() == 2);
    const TierSpec& node = plan.hardware.tiers[0];
    CHECK(deepep.stages[0].bw == doctest::Approx(50e9));
    CHECK(deepep.stages[1].time_s == doctest::Approx(deepep.stages[1].bytes / 153e9 + node.latency_s));
    // The seeds' send/recv + DeepEP-style scheme forwards inside the node with DeepEP too; its
    // send/recv stage is a send/recv (no such figure on h800-ib: the NIC's 50 GB/s, on DMA).
    ExchangeCost sr = exchange(plan.hardware, ep, Dispatch::SendRecvDeepEp, false);
    REQUIRE(sr.stages.size() == 2);
    CHECK(sr.stages[0].bw == doctest::Approx(50e9));
    CHECK(sr.stages[0].engine == Engine::Dma);
    CHECK(sr.stages[1].time_s == doctest::Approx(sr.stages[1].bytes / 153e9 + node.latency_s));
    // The same layout on h100-sxm-ib, which has NCCL's all-to-all on its cluster tier (37 GB/s
    // per GPU from three nodes up, NVIDIA/nccl#1316) and no DeepEP figure: the alltoall
    // dispatcher's inter-node bytes go at NCCL's rate, DeepEP's at the NIC's 50 GB/s.
    plan.hardware = load_hardware("h100-sxm-ib");
    ep = ep_layout(plan.hardware, plan.model, plan.strategy, tok.per_rank_moe);
    CHECK(exchange(plan.hardware, ep, Dispatch::AllToAll, false).stages[0].bw == doctest::Approx(37e9));
    CHECK(exchange(plan.hardware, ep, Dispatch::DeepEp, false).stages[0].bw == doctest::Approx(50e9));
  }

  TEST_CASE("two-node EP32 send/recv + allgather (scheme A): volumes per card and the 2-stage rule") {
    const Plan plan = load_plan("br166-ep32-32n-mb2");  // TP1 DP16 PP16 EP32 mb2
    const auto tok = model::tokens_of(plan.model, plan.strategy, plan.hardware, 1.0);
    EpLayout ep = ep_layout(plan.hardware, plan.model, plan.strategy, tok.per_rank_moe);
    CHECK(ep.nodes == 2);
    ExchangeCost d = exchange(plan.hardware, ep, Dispatch::SendRecvAllGather, false);
    REQUIRE(d.stages.size() == 3);
    // send/recv: each die sends its 4096 tokens (56 MiB); per card 112 MiB, the seeds' figure.
    CHECK(2 * d.stages[0].bytes == doctest::Approx(112 * kMiB));
    // Seeds: 112 MB / 12 GB/s = 9.11 ms (GB = 1024 MB). Their own send/recv table (sec. 1.4)
    // gives 8.07 GB/s at 64 MiB and 7.55 at 128 MiB; the hardware file scales that curve to
    // its 12 GB/s (0.662 and 0.619 of it: 7.94 and 7.43 GB/s), so the exact model reads
    // ~7.5 GB/s per card at 112 MiB, 15.6 ms: slower than the seeds' 12 GB/s assumption.
    CHECK(112.0 / 1024 / 12 * 1e3 == doctest::Approx(9.11).epsilon(0.001));
    const double card_bw = tier_bandwidth(plan.hardware.tiers[3], 112 * kMiB);
    CHECK(card_bw < 0.662 * 12e9);
    CHECK(card_bw > 0.619 * 12e9);
    CHECK(d.stages[0].time_s == doctest::Approx(112 * kMiB / card_bw + plan.hardware.tiers[3].latency_s));
    // intra-node all-gather: 32 dies x 56 MiB = 1.75 GiB (seeds: 1.75 GB at 128.6 -> 13.6 ms)
    const double gathered = 32.0 * 4096 * 14336;
    CHECK(gathered == doctest::Approx(1.75 * 1073741824.0));
    // inter-die reorder of the gathered buffer at 200 GB/s (seeds: 1.75 / 200 = 8.8 ms)
    CHECK(d.stages[2].time_s == doctest::Approx(gathered / 200e9));
    // Two-stage pipelining (sec. 5.8): the send/recv runs beside the local half of the
    // intra-node work; the received half follows.
    const double rest = d.stages[1].time_s + d.stages[2].time_s;
    CHECK(d.time_s == doctest::Approx(std::max(d.stages[0].time_s, rest / 2) + rest / 2));
  }

  TEST_CASE("moe.chunks: the send/recv in C chunks, the intra-node stage on each as it arrives") {
    Plan plan = load_plan("br166-ep32-32n-mb2");  // scheme A, 112 MiB per card
    const auto tok = model::tokens_of(plan.model, plan.strategy, plan.hardware, 1.0);
    EpLayout ep = ep_layout(plan.hardware, plan.model, plan.strategy, tok.per_rank_moe);
    const ExchangeCost one = exchange(plan.hardware, ep, Dispatch::SendRecvAllGather, false);
    ep.chunks = 2;
    const ExchangeCost two = exchange(plan.hardware, ep, Dispatch::SendRecvAllGather, false);
    REQUIRE(two.chunk_stages.size() == 3);
    // One chunk: half the bytes (56 MiB per card), at that size's bandwidth and its own latency.
    const TierSpec& cluster = plan.hardware.tiers[3];
    CHECK(two.chunk_stages[0].bytes == doctest::Approx(one.stages[0].bytes / 2));
    CHECK(two.chunk_stages[0].time_s ==
          doctest::Approx(56 * kMiB / tier_bandwidth(cluster, 56 * kMiB) + cluster.latency_s));
    // The reorder is linear: half the gathered 1.75 GiB at 200 GB/s.
    CHECK(two.chunk_stages[2].time_s == doctest::Approx(32.0 * 4096 * 14336 / 2 / 200e9));
    // f0 = the local half of the intra-node work; f_i = max(f_(i-1), i t_c) + the received
    // half of one chunk's intra-node work.
    const double rest = one.stages[1].time_s + one.stages[2].time_s;
    const double t_c = two.chunk_stages[0].time_s;
    const double rest_c = two.chunk_stages[1].time_s + two.chunk_stages[2].time_s;
    const double f1 = std::max(rest / 2, t_c) + rest_c / 2;
    CHECK(two.time_s == doctest::Approx(std::max(f1, 2 * t_c) + rest_c / 2));
    // The seeds' measured send/recv curve (sec. 1.4) falls at smaller messages: 56 MiB runs
    // at 0.66 x 12 GB/s at best, so two chunks of it take longer than one 112 MiB transfer.
    CHECK(2 * t_c > one.stages[0].time_s);

    // On a link at one bandwidth and no latency, chunks only help: with a = the send/recv and
    // r = the intra-node work, C = 2 gives max(max(r/2, a/2) + r/4, a) + r/4 <= max(a, r/2) + r/2.
    HardwareSpec flat = plan.hardware;
    flat.tiers[3].size_efficiency.clear();
    flat.tiers[3].latency_s = 0;
    for (TierSpec& t : flat.tiers) t.latency_s = 0;
    ep.chunks = 1;
    const ExchangeCost f_one = exchange(flat, ep, Dispatch::SendRecvAllGather, false);
    ep.chunks = 2;
    const ExchangeCost f_two = exchange(flat, ep, Dispatch::SendRecvAllGather, false);
    const double a = f_one.stages[0].time_s, r = f_one.stages[1].time_s + f_one.stages[2].time_s;
    CHECK(f_two.chunk_stages[0].time_s == doctest::Approx(a / 2));
    CHECK(f_two.time_s == doctest::Approx(std::max(std::max(r / 2, a / 2) + r / 4, a) + r / 4).epsilon(1e-3));
    CHECK(f_two.time_s <= f_one.time_s);
  }

  TEST_CASE("moe.chunks: only the two-stage schemes take it; the staging buffer holds two chunks") {
    Plan plan = load_plan("br166-ep32-32n-mb2");
    plan.strategy.moe.chunks = 2;
    plan.strategy.moe.dispatch = Dispatch::DeepEp;
    bool broken = false;
    for (const RuleViolation& v : check_rules(plan.strategy, plan.hardware, plan.model)) {
      broken = broken || v.rule == std::string("chunks_dispatch");
    }
    CHECK(broken);
    plan.strategy.moe.dispatch = Dispatch::SendRecvAllGather;
    CHECK(check_rules(plan.strategy, plan.hardware, plan.model).empty());
    // Staging: T_r x h x 2 B x dies for one transfer (and two chunks); half of it for 4 chunks.
    auto staging = [&](int chunks) {
      plan.strategy.moe.chunks = chunks;
      const MemoryEstimate m = estimate_memory(plan);
      for (const MemoryPart& part : m.stages[1].buffer_parts) {
        if (part.name == "ep_dispatch") return part.bytes;
      }
      return 0.0;
    };
    // 4096 tokens per die (mb2 x 4096 over the card's two dies), 2 B per value, 2 dies.
    const double full = 4096.0 * 7168 * 2 * 2;
    CHECK(staging(1) == doctest::Approx(staging(2)));
    CHECK(staging(1) - staging(4) == doctest::Approx(full / 2));
  }

  TEST_CASE("the seeds' two-stage pipeline figures: 14.2 ms and 7.14 ms") {
    // Scheme 1 (sec. 5.8): send/recv 5 ms beside the local 5.6 ms allgather, then the
    // received 5.6 ms, with the first 3 ms permute half hidden under step 2: 5.6 + 5.6 + 3.
    auto two_stage = [](double first, double rest, double local) {
      return std::max(first, local * rest) + (1 - local) * rest;
    };
    CHECK(two_stage(5.0, 11.2, 0.5) + 3.0 == doctest::Approx(14.2));
    // Scheme 2: 4.9 ms (local DeepEP during the 5 ms send/recv) + 2.24 ms = 7.14 ms; the
    // seeds count the local step at its own 4.9 ms, longer than the send/recv it hides.
    CHECK(std::max(5.0, 4.9) + 2.24 == doctest::Approx(7.24));
    CHECK(4.9 + 2.24 == doctest::Approx(7.14));
  }

  TEST_CASE("four-node EP64 DeepEP: inter-node volume 3 x 3/4 (seeds) vs exact") {
    const Plan plan = load_plan("br166-ep64-64n-mb1");
    const auto tok = model::tokens_of(plan.model, plan.strategy, plan.hardware, 1.0);
    EpLayout ep = ep_layout(plan.hardware, plan.model, plan.strategy, tok.per_rank_moe);
    CHECK(ep.nodes == 4);
    ExchangeCost d = exchange(plan.hardware, ep, Dispatch::DeepEp, false);
    // Seeds: "224 MB x 3/4 x 3" other nodes at mb4 per card, i.e. 2.25 node copies per token.
    // Exactly, a token needs another given node with p = 1 - C(192,8)/C(256,8) = 0.90355, so
    // 2.7107 other nodes per token: 20% more inter-node volume than the seeds' estimate.
    CHECK(ep.routing.remote_nodes == doctest::Approx(3 * 0.9035536).epsilon(1e-6));
    CHECK(d.stages[0].bytes == doctest::Approx(2048.0 * 14336 * 3 * 0.9035536).epsilon(1e-6));
  }

  TEST_CASE("Port-10 adds its bandwidth to the inter-node stage of a node pair") {
    Plan plan = load_plan("br166-ep32-32n-mb2");
    const auto tok = model::tokens_of(plan.model, plan.strategy, plan.hardware, 1.0);
    EpLayout ep = ep_layout(plan.hardware, plan.model, plan.strategy, tok.per_rank_moe);
    ExchangeCost plain = exchange(plan.hardware, ep, Dispatch::SendRecvDeepEp, false);
    HardwareSpec p10 = load_hardware("br166-ubbv2-port10");
    ExchangeCost with = exchange(p10, ep, Dispatch::SendRecvDeepEp, false);
    const double card_bytes = 2 * plain.stages[0].bytes;
    CHECK(with.stages[0].link == "cluster+port10");
    CHECK(with.stages[0].bw * 2 == doctest::Approx(tier_bandwidth(p10.tiers[3], card_bytes) + 25e9));
    CHECK(with.time_s < plain.time_s);
  }

  TEST_CASE("FP8 dispatch carries 1 byte per element plus a 4-byte scale per 128; combine BF16") {
    Plan plan = load_plan("deepseek-v3-h800");  // FP8 GEMMs, FP8 dispatch
    plan.strategy.moe.fp8_dispatch = false;
    EpLayout bf16 = ep_layout(plan.hardware, plan.model, plan.strategy, 4096);
    CHECK(bf16.dispatch_bytes == 2 * 7168);  // FP8 GEMMs, but a BF16 dispatch
    plan.strategy.moe.fp8_dispatch = true;
    EpLayout ep = ep_layout(plan.hardware, plan.model, plan.strategy, 4096);
    CHECK(ep.dispatch_bytes == 7168 + 4 * 56);
    CHECK(ep.combine_bytes == 2 * 7168);
    // BR166 has no FP8 format: an FP8 dispatch setting has no effect there
    Plan br = load_plan("br166-ep16-mb2");
    br.strategy.training.precision = Precision::Fp8;
    br.strategy.moe.fp8_dispatch = true;
    CHECK(ep_layout(br.hardware, br.model, br.strategy, 4096).dispatch_bytes == 2 * 7168);
  }

  TEST_CASE("H800 internode DeepEP: the RDMA stage runs at the NIC's 50 GB/s (DeepEP: 43-58 GB/s)") {
    // deepep_v1_normal_kernels_h800: 4096 tokens, hidden 7168, top-8, FP8 dispatch; the
    // reported bottleneck bandwidth is RDMA bytes / time: EP16 43, EP32 58, EP64 51 GB/s.
    for (int ep_size : {16, 32, 64}) {
      Plan plan;
      plan.hardware = load_hardware("h800-ib");
      plan.model = load_model("deepseek-v3");
      plan.strategy.nodes = ep_size / 8;
      plan.strategy.parallel.dp = ep_size;
      plan.strategy.parallel.ep = ep_size;
      plan.strategy.training.precision = Precision::Fp8;
      plan.strategy.moe.fp8_dispatch = true;
      EpLayout ep = ep_layout(plan.hardware, plan.model, plan.strategy, 4096);
      ExchangeCost d = exchange(plan.hardware, ep, Dispatch::DeepEp, false);
      // 2-8 nodes sit under one 32-node leaf: 2.8 us (h800-ib.yaml levels, ISCA'25)
      const double rdma_bw = d.stages[0].bytes / (d.stages[0].time_s - 2.8e-6);
      CAPTURE(ep_size);
      CHECK(rdma_bw == doctest::Approx(50e9));  // predicted; published 43 / 58 / 51
    }
  }
}

TEST_SUITE("cost.fit") {
  TEST_CASE("alpha-beta least squares recovers known alpha and beta") {
    // t = 20 us + bytes / 45 GB/s, exactly, at sizes 1 KiB .. 1 GiB
    std::vector<TimedTransfer> rows;
    for (double s = 1024; s <= 1073741824.0; s *= 4) rows.push_back({s, 20e-6 + s / 45e9});
    AlphaBeta f = fit_alpha_beta(rows);
    CHECK(f.alpha_s == doctest::Approx(20e-6).epsilon(1e-9));
    CHECK(f.beta_bytes_per_s == doctest::Approx(45e9).epsilon(1e-9));
    CHECK(f.r2 == doctest::Approx(1.0));
    CHECK(f.worst_relative < 1e-9);
  }

  TEST_CASE("the seed's BR166 send/recv table: a millisecond-scale alpha") {
    // SEED_DIGEST.md sec. 1.4, column A: 1 / 32 / 64 / 128 / 256 / 1024 MiB at 0.18 / 3.88 /
    // 8.07 / 7.55 / 11.04 / 12.19 GB/s. 1 MiB at 0.18 GB/s takes 5.8 ms: the fit must put
    // most of that in alpha, and the 1 GiB row near 12 GB/s into beta.
    const double mib[] = {1, 32, 64, 128, 256, 1024};
    const double gbps[] = {0.18, 3.88, 8.07, 7.55, 11.04, 12.19};
    std::vector<TimedTransfer> rows;
    for (int i = 0; i < 6; ++i) rows.push_back({mib[i] * 1048576.0, mib[i] * 1048576.0 / (gbps[i] * 1e9)});
    AlphaBeta f = fit_alpha_beta(rows);
    MESSAGE("BR166 inter-node send/recv fit: alpha " << f.alpha_s * 1e3 << " ms, beta "
            << f.beta_bytes_per_s / 1e9 << " GB/s, R^2 " << f.r2 << ", worst row "
            << f.worst_relative * 100 << "%");
    CHECK(f.alpha_s > 1e-3);
    CHECK(f.beta_bytes_per_s > 10e9);
    CHECK(f.beta_bytes_per_s < 16e9);
    CHECK(f.r2 > 0.95);
  }
}

TEST_SUITE("cost.comm") {
  TEST_CASE("a strategy can fix the collective algorithm; among models, auto is never slower") {
    const char* yaml =
        "hardware: a100-sxm-ib\nmodel: gpt3-175b\nnodes: 8\n"
        "parallel: {tp: 8, pp: 8, dp: 1}\n"
        "training: {micro_batch: 1, global_batch: 64}\n"
        "collective_algorithm: ring\n";
    Plan ring = parse_plan(yaml, "ring.yaml");
    CHECK(ring.strategy.collective_algorithm == CollectiveAlgorithm::Ring);
    // A measured figure (the A100 node's all-reduce busbw) wins over every model under
    // `auto`; without it, auto picks the fastest model.
    for (auto& o : ring.hardware.tiers[0].collectives) o.reset();
    CommBreakdown fixed = estimate_comm(ring);
    Plan best = ring;
    best.strategy.collective_algorithm = CollectiveAlgorithm::Auto;
    CommBreakdown any = estimate_comm(best);
    REQUIRE(!fixed.layers.empty());
    REQUIRE(!fixed.layers[0].ops.empty());
    CHECK(fixed.layers[0].ops[0].algorithm == "ring");
    CHECK(any.layers[0].forward_s <= fixed.layers[0].forward_s);
  }
}

TEST_SUITE("cost.comm") {
  TEST_CASE("a compute-engine figure inside a multi-tier collective charges compute for its stage only") {
    // BR166 EP32 over the dies of two nodes: the node's SPC all-gather (engine compute) is the
    // inner stage, the RDMA (DMA) the outer one.
    HardwareSpec hw = load_hardware("br166-ubbv2");
    GroupSpan g = place(hw, 32, 1, true);
    Algorithm hier = Algorithm::Hierarchical;
    CollectiveCost c = collective(hw, Collective::AllGather, 1e9, g, &hier);
    REQUIRE(c.tiers.size() == 2);  // the merged in-node stage and the cluster
    const double spc = c.tiers[0].time_s, rdma = c.tiers[1].time_s;
    CHECK(c.engine == Engine::Compute);
    CHECK(c.compute_share == doctest::Approx(spc / (spc + rdma)));
    // inside one node the whole collective is the SPC figure: all of it occupies compute
    CollectiveCost node = collective(hw, Collective::AllGather, 1e9, place(hw, 16, 1, true));
    CHECK(node.measured);
    CHECK(node.compute_share == 1.0);
  }
}

TEST_SUITE("cost.comm") {
  TEST_CASE("TP collectives: one pair per tensor-parallel block (attention, MLP or shared experts)") {
    // Korthikanti et al. 2022 sec. 4.2.2: without SP a transformer layer has two all-reduces
    // forward (after attention and after the MLP) and two backward; with SP each becomes an
    // all-gather before and a reduce-scatter after its block.
    // GPT-3 175B at TP8 on one DGX A100, s 2048, b 1: each collective moves the layer's
    // hidden states, 2048 x 12288 x 2 B.
    const char* yaml =
        "hardware: a100-sxm-ib\nmodel: gpt3-175b\nnodes: 1\n"
        "parallel: {tp: 8}\n"
        "training: {micro_batch: 1, global_batch: 1}\n";
    Plan plan = parse_plan(yaml, "tp.yaml");
    const double S = 2048.0 * 12288 * 2;
    HardwareSpec& hw = plan.hardware;
    CollectiveCost ar = collective(hw, Collective::AllReduce, S, place(hw, 8, 1, false));
    // a100-sxm-ib.yaml: node all_reduce busbw 235 GB/s -> 2 (7/8) S / busbw + latency
    CHECK(ar.time_s == doctest::Approx(2.0 * 7 / 8 * S / 235e9 + hw.tiers[0].latency_s));
    CommBreakdown c = estimate_comm(plan);
    REQUIRE(c.layers.size() == 1);
    int forward = 0, backward = 0;
    for (const CommOpEstimate& op : c.layers[0].ops) (op.phase == "forward" ? forward : backward)++;
    CHECK(forward == 2);
    CHECK(backward == 2);
    CHECK(c.layers[0].forward_s == doctest::Approx(2 * ar.time_s));
    CHECK(c.layers[0].backward_s == doctest::Approx(2 * ar.time_s));

    plan.strategy.parallel.sp = true;
    CommBreakdown sp = estimate_comm(plan);
    CollectiveCost ag = collective(hw, Collective::AllGather, S, place(hw, 8, 1, false));
    CollectiveCost rs = collective(hw, Collective::ReduceScatter, S, place(hw, 8, 1, false));
    CHECK(sp.layers[0].ops.size() == 8);
    CHECK(sp.layers[0].forward_s == doctest::Approx(2 * (ag.time_s + rs.time_s)));
    // An A100 has no FP8 peak: precision fp8 runs its GEMMs, and gathers their inputs, in BF16.
    plan.strategy.training.precision = Precision::Fp8;
    CHECK(estimate_comm(plan).layers[0].forward_s == doctest::Approx(2 * (ag.time_s + rs.time_s)));
    plan.strategy.training.precision = Precision::Bf16;
    // On H100, FP8 GEMMs gather their quantized inputs, 1 B per element (Transformer Engine's
    // input and grad-output quantizers before the all-gather); the reduce-scatters stay BF16.
    Plan h100 = parse_plan(
        "hardware: h100-sxm-ib\nmodel: gpt3-175b\nnodes: 1\n"
        "parallel: {tp: 8, sp: true}\n"
        "training: {micro_batch: 1, global_batch: 1, precision: fp8}\n",
        "tp8.yaml");
    const GroupSpan g8 = place(h100.hardware, 8, 1, false);
    CollectiveCost ag8 = collective(h100.hardware, Collective::AllGather, S / 2, g8);
    CollectiveCost ag16 = collective(h100.hardware, Collective::AllGather, S, g8);
    CollectiveCost rs16 = collective(h100.hardware, Collective::ReduceScatter, S, g8);
    CommBreakdown f8 = estimate_comm(h100);
    CHECK(f8.layers[0].forward_s == doctest::Approx(2 * (ag8.time_s + rs16.time_s)));
    CHECK(f8.layers[0].backward_s == doctest::Approx(2 * (ag8.time_s + rs16.time_s)));
    CHECK(ag8.time_s < ag16.time_s);
    // Each backward op is its forward op's gradient: the all-gather's is a reduce-scatter of
    // the BF16 input gradient (S bytes), the reduce-scatter's an all-gather of the FP8 output
    // gradient (S / 2), which is what tp_exposed reads them as (grad_in, grad_out).
    for (const CommOpEstimate& op : f8.layers[0].ops) {
      if (op.phase != "backward") continue;
      CAPTURE(op.name);
      const bool gather_grad = op.name.find("tp_all_gather") != std::string::npos;
      CHECK(op.time_s == doctest::Approx(gather_grad ? rs16.time_s : ag8.time_s));
    }

    // DeepSeek-V3 at TP2: a MoE layer has the attention pair and the shared expert's pair
    // (Megatron-Core SharedExpertMLP); routed experts use the EP exchange.
    Plan moe = load_plan("br166-ep32-32n-mb1");
    moe.strategy.parallel.tp = 2;
    moe.strategy.parallel.dp /= 2;
    CommBreakdown mc = estimate_comm(moe);
    for (const LayerComm& l : mc.layers) {
      int tp = 0;
      for (const CommOpEstimate& op : l.ops) tp += op.group == "tp";
      CAPTURE(l.kind);
      CHECK(tp == 8);  // dense layers: attention + MLP; MoE: attention + shared experts
    }
  }
}

TEST_SUITE("cost.comm") {
  TEST_CASE("auto picks only among the algorithms the library implements (NCCL: ring, tree)") {
    // DGX A100, 2 nodes x 8 GPUs, 1 GiB all-reduce. NCCL's ring crosses the nodes on all 8
    // NICs at once: bandwidth term 2 (G - 1) / G x S / (8 x 25 GB/s) = 2 x 15/16 x 2^30 /
    // 200e9 = 10.07 ms (NVIDIA measures busbw 192 GB/s: 10.49 ms, nccl issue #812). Left
    // free to choose, the model's hierarchical all-reduce (not an NCCL algorithm) is faster.
    HardwareSpec hw = load_hardware("a100-sxm-ib");
    const GroupSpan g = place(hw, 16, 1, false);
    const double S = 1024.0 * 1024 * 1024;
    const CollectiveCost nccl = collective(hw, Collective::AllReduce, S, g);
    CHECK(nccl.algorithm == Algorithm::Ring);
    const double bw_term = 2 * 15.0 / 16 * S / 200e9;
    CHECK(nccl.time_s >= bw_term);
    CHECK(nccl.time_s <= bw_term + 2 * 15 * 3.7e-6);
    hw.algorithms.clear();
    const CollectiveCost any = collective(hw, Collective::AllReduce, S, g);
    CHECK(any.algorithm == Algorithm::Hierarchical);
    CHECK(any.time_s < nccl.time_s);
  }
}

TEST_SUITE("cost.comm") {
  TEST_CASE("fabric levels: a group's node count picks the switch level's latency and oversubscription") {
    TierSpec t;
    t.latency_s = 9e-6;
    t.bw_bytes_per_s = 50e9;
    CHECK(level_view(t, 100).latency_s == 9e-6);  // no levels: the tier's own
    t.levels = {FabricLevel{"leaf", 32, 1.0, 2.8e-6}, FabricLevel{"spine", 512, 2.0, 3.7e-6}};
    CHECK(level_view(t, 32).latency_s == 2.8e-6);
    CHECK(level_view(t, 32).bw_factor == 1.0);
    CHECK(level_view(t, 33).latency_s == 3.7e-6);
    CHECK(level_view(t, 33).bw_factor == 0.5);   // 2:1 oversubscribed spine
    CHECK(level_view(t, 4096).latency_s == 3.7e-6);  // past the last level: the last one
    // DeepSeek-V3 on 2048 H800 (256 nodes): a DP all-gather over the 256 same-index GPUs
    // crosses the spine (h800-ib: 3.7 us) and 16,384 GPUs are a legal cluster.
    HardwareSpec hw = load_hardware("h800-ib");
    CHECK(hw.max_nodes() == 2048);
    const GroupSpan g = place(hw, 256, 8, false);
    const CollectiveCost c = collective(hw, Collective::AllGather, 1e9, g);
    Algorithm ring = Algorithm::Ring;
    const CollectiveCost r = collective(hw, Collective::AllGather, 1e9, g, &ring);
    CHECK(r.time_s == doctest::Approx(255.0 / 256 * 1e9 / tier_bandwidth(hw.tiers.back(), 255.0 / 256 * 1e9) + 255 * 3.7e-6));
    CHECK(c.time_s <= r.time_s);
  }
}

TEST_SUITE("cost.comm") {
  TEST_CASE("context parallel: the exchange of each cp_comm, and what the ring attention hides") {
    // Llama 3 70B (GQA, 64 heads, 8 kv heads of 128) on one H100 node, CP 8, s 65536: a
    // rank's chunk is 8192 tokens; its K/V are 8192 x 8 x (128 + 128) x 2 B = 33.55 MB, or
    // x 8 when repeat_kv widens them to the 64 query heads.
    const char* yaml =
        "hardware: h100-sxm-ib\nmodel: llama3-70b\nnodes: 1\n"
        "parallel: {tp: 1, cp: 8}\n"
        "training: {micro_batch: 1, global_batch: 1, seq_len: 65536}\n";
    Plan plan = parse_plan(yaml, "cp.yaml");
    CHECK(plan.strategy.training.cp_comm == CpComm::P2p);  // Megatron's default
    const double chunk = 8192.0 * 8 * 256 * 2;
    auto cp_ops = [](const CommBreakdown& c) {
      std::vector<CommOpEstimate> ops;
      for (const CommOpEstimate& op : c.layers.at(0).ops) {
        if (op.group == "cp") ops.push_back(op);
      }
      return ops;
    };
    auto bytes = [](const CommOpEstimate& op) {
      double b = 0;
      for (const CommStageEstimate& st : op.stages) b += st.bytes;
      return b;
    };
    // p2p (TE): 7 forward hops of one chunk; backward 7 of K/V and 8 of dK/dV (BF16).
    std::vector<CommOpEstimate> p2p = cp_ops(estimate_comm(plan));
    REQUIRE(p2p.size() == 3);
    CHECK(p2p[0].name == "cp_kv_ring");
    CHECK(p2p[0].steps == 7);
    CHECK(bytes(p2p[0]) == doctest::Approx(7 * chunk));
    CHECK(p2p[2].name == "cp_kv_grad_ring");
    CHECK(p2p[2].steps == 8);
    CHECK(bytes(p2p[2]) == doctest::Approx(8 * chunk));
    // torch with repeat_kv: all-gathers of 8 wide chunks, and 8 hops of the FP32 dK/dV of one.
    plan.strategy.training.cp_comm = CpComm::TorchAllGather;
    plan.strategy.training.repeat_kv = true;
    std::vector<CommOpEstimate> torch = cp_ops(estimate_comm(plan));
    REQUIRE(torch.size() == 3);
    CHECK(torch[0].name == "cp_kv_all_gather");
    CHECK(torch[2].name == "cp_kv_grad_ring");
    CHECK(torch[2].steps == 8);
    CHECK(bytes(torch[2]) == doctest::Approx(8 * 2 * (8 * chunk)));

    // Exposure, by hand, with made-up times. Attention 8 ms forward, 16 ms backward: a ring
    // step is 1 ms / 2 ms.
    cost::AttentionTimes attn{8e-3, 16e-3, false};
    std::vector<CommOpEstimate> ops(3);
    ops[0] = CommOpEstimate{"cp_kv_ring", "forward", "cp", "ring", 7 * 1.5e-3, 0, 0, 7, {}};
    ops[1] = CommOpEstimate{"cp_kv_ring", "backward", "cp", "ring", 7 * 1.5e-3, 0, 0, 7, {}};
    ops[2] = CommOpEstimate{"cp_kv_grad_ring", "backward", "cp", "ring", 8 * 1.0e-3, 0, 0, 8, {}};
    plan.strategy.training.cp_comm = CpComm::P2p;
    // forward: 7 x (1.5 - 1) = 3.5 ms; backward: 7 x (1.5 + 1 - 2) + the last 1 ms hop = 4.5 ms
    cost::CpExposed e = cost::cp_exposed(plan.strategy, ops, attn);
    CHECK(e.forward_s == doctest::Approx(3.5e-3));
    CHECK(e.backward_s == doctest::Approx(4.5e-3));
    // a recomputed forward exchanges again in backward
    attn.recomputed = true;
    e = cost::cp_exposed(plan.strategy, ops, attn);
    CHECK(e.backward_s == doctest::Approx(8.0e-3));
    attn.recomputed = false;
    // torch: a 5 ms gather waits 1 ms (forward) / 2 ms (backward) of the first step; 8 hops
    // of 3 ms gradients, 7 beside a 2 ms step and the last after it: 3 + 7 x 1 + 3 = 13 ms.
    plan.strategy.training.cp_comm = CpComm::TorchAllGather;
    ops[0] = CommOpEstimate{"cp_kv_all_gather", "forward", "cp", "ring", 5e-3, 0, 0, 1, {}};
    ops[1] = CommOpEstimate{"cp_kv_all_gather", "backward", "cp", "ring", 5e-3, 0, 0, 1, {}};
    ops[2] = CommOpEstimate{"cp_kv_grad_ring", "backward", "cp", "ring", 8 * 3e-3, 0, 0, 8, {}};
    e = cost::cp_exposed(plan.strategy, ops, attn);
    CHECK(e.forward_s == doctest::Approx(4e-3));
    CHECK(e.backward_s == doctest::Approx(13e-3));
    // ... and under torch.compile, where each collective is waited on where it is issued
    // (overlap.cp false): the 5 ms gather in each pass and all 24 ms of gradient hops show.
    plan.strategy.overlap.cp = false;
    e = cost::cp_exposed(plan.strategy, ops, attn);
    CHECK(e.forward_s == doctest::Approx(5e-3));
    CHECK(e.backward_s == doctest::Approx(5e-3 + 24e-3));
    attn.recomputed = true;  // the recomputed forward gathers again
    e = cost::cp_exposed(plan.strategy, ops, attn);
    CHECK(e.backward_s == doctest::Approx(5e-3 + 24e-3 + 5e-3));
    attn.recomputed = false;
    plan.strategy.overlap.cp = true;
    // Ulysses: the all-to-alls run before and after the attention, all of them show.
    plan.strategy.training.cp_comm = CpComm::A2a;
    std::vector<CommOpEstimate> a2a_ops = {
        CommOpEstimate{"cp_qkv_all_to_all", "forward", "cp", "direct", 3e-3, 0, 0, 1, {}},
        CommOpEstimate{"cp_out_all_to_all", "forward", "cp", "direct", 1e-3, 0, 0, 1, {}},
        CommOpEstimate{"cp_out_all_to_all", "backward", "cp", "direct", 1e-3, 0, 0, 1, {}},
        CommOpEstimate{"cp_qkv_all_to_all", "backward", "cp", "direct", 3e-3, 0, 0, 1, {}}};
    e = cost::cp_exposed(plan.strategy, a2a_ops, attn);
    CHECK(e.forward_s == doctest::Approx(4e-3));
    CHECK(e.backward_s == doctest::Approx(4e-3));
    // ... and they move Q + K/V and the output, each rank's (repeat_kv off: 8 kv heads):
    // Q 8192 x 64 x 128 x 2 B and the chunk; the output 8192 x 64 x 128 x 2 B.
    plan.strategy.training.repeat_kv = false;
    std::vector<CommOpEstimate> ulysses = cp_ops(estimate_comm(plan));
    REQUIRE(ulysses.size() == 4);
    CHECK(ulysses[0].name == "cp_qkv_all_to_all");
    CHECK(ulysses[1].name == "cp_out_all_to_all");
    // an all-to-all over 8 ranks in one node sends 7/8 of the buffer
    CHECK(bytes(ulysses[0]) == doctest::Approx((8192.0 * 64 * 128 * 2 + chunk) * 7 / 8));
    CHECK(bytes(ulysses[1]) == doctest::Approx(8192.0 * 64 * 128 * 2 * 7 / 8));
    // TE's all-gather is not overlapped: everything shows.
    plan.strategy.training.cp_comm = CpComm::AllGather;
    ops[2] = CommOpEstimate{"cp_kv_grad_reduce_scatter", "backward", "cp", "ring", 4e-3, 0, 0, 1, {}};
    e = cost::cp_exposed(plan.strategy, ops, attn);
    CHECK(e.forward_s == doctest::Approx(5e-3));
    CHECK(e.backward_s == doctest::Approx(9e-3));
  }
}

TEST_SUITE("cost.comm") {
  TEST_CASE("NCCL's all-gather, reduce-scatter and all-to-all in an H100 node take XLA's measured times") {
    // tensorflow/tensorflow@18c005b3ace1 third_party/xla/xla/service/gpu/model/
    // collective_interpolator_data.h, sm_90, a group of 8 (throughput = the nccl-tests size /
    // time): 128 MiB all-gathered (output) at 343,936,367,363 B/s -> 390.2 us; 128 MiB
    // reduce-scattered (input; the table's shape is the 16 MiB output) at 326,151,166,407 B/s
    // -> 411.5 us; a 128 MiB all-to-all buffer per rank at 325,265,917,022 B/s -> 412.6 us.
    // The model adds the tier's 3.33 us latency to the measured curve (which holds the
    // launch): within 2%.
    const HardwareSpec hw = load_hardware("h100-sxm-ib");
    const GroupSpan node = place(hw, 8, 1, false);
    const double S = 134217728;
    CHECK(collective(hw, Collective::AllGather, S, node).time_s == doctest::Approx(S / 343.936e9).epsilon(0.02));
    CHECK(collective(hw, Collective::ReduceScatter, S, node).time_s == doctest::Approx(S / 326.151e9).epsilon(0.02));
    CHECK(collective(hw, Collective::AllToAll, S, node).time_s == doctest::Approx(S / 325.266e9).epsilon(0.02));
    // Between the table's sizes the curve is log-linear: 96 MiB lies log2(1.5) = 0.585 of the
    // way from 64 MiB (0.782 of the 351.7 GB/s peak) to 128 MiB (0.856): 0.8253 -> 290.3 GB/s
    // busbw, 7/8 x 96 MiB in 347.0 us, plus the tier's 3.33 us.
    const double w = std::log2(1.5);
    const double ag96 = 7.0 / 8 * 96 * (1 << 20) / (351.7e9 * (0.782 + w * (0.856 - 0.782))) + 3.33e-6;
    CHECK(collective(hw, Collective::AllGather, 96.0 * (1 << 20), node).time_s == doctest::Approx(ag96));
    // All-reduce keeps the NVLS figure of nccl-tests (480 GB/s busbw at 8 GiB): the
    // all-to-all curve is this collective's own, not the tier's.
    const double ar = collective(hw, Collective::AllReduce, 8.0 * (1 << 30), node).time_s;
    CHECK(ar == doctest::Approx(2 * 7.0 / 8 * 8.0 * (1 << 30) / 480e9).epsilon(0.02));
  }

  TEST_CASE("a node's SM-driven collectives run at NCCL's per-link NVLink figure, not the line rate") {
    // NVIDIA/nccl@069a3d4 src/graph/topo.h: 20.0 / 20.6 / 40.1 GB/s per Ampere / Hopper /
    // Blackwell NVLink against 25 / 25 / 50 GB/s of line rate (the 128 B payload share).
    // A100 (12 links): the ring all-reduce's measured 235 GB/s busbw (below NCCL's 240), no
    // size curve on that tier: a 1 GiB all-gather over 8 moves 7/8 GiB at 235 GB/s, plus the
    // tier's 3.33 us; the line rate (300 GB/s) would give 3.13 ms, not 4.00.
    const double GiB = 1073741824.0;
    const HardwareSpec a100 = load_hardware("a100-sxm-ib");
    const GroupSpan a_node = place(a100, 8, 1, false);
    CHECK(collective(a100, Collective::AllGather, GiB, a_node).time_s ==
          doctest::Approx(7.0 / 8 * GiB / 235e9 + 3.33e-6));
    CHECK(collective(a100, Collective::AllToAll, GiB, a_node).time_s ==
          doctest::Approx(7.0 / 8 * GiB / 235e9 + 3.33e-6));
    // H100 send/recv inside a node: 360 GB/s (nccl-tests#326), times the tier's curve at
    // 1 GiB (0.971): 1 GiB in 3.072 ms plus 3.33 us (the link rate, 450 GB/s, gave 2.46 ms).
    const HardwareSpec h100 = load_hardware("h100-sxm-ib");
    CHECK(send_recv(h100, GiB, 1, false).time_s == doctest::Approx(GiB / (360e9 * 0.971) + 3.33e-6));
    // B200 (18 links): 18 x 40.1 = 721.8 GB/s for send/recv (its all-gather, reduce-scatter and
    // all-to-all are SimuMax's measurements, tested above), with the tier's curve at 1 GiB
    // (0.971): 1 GiB in 1.532 ms plus 3.33 us.
    const HardwareSpec b200 = load_hardware("b200-sxm-ib");
    CHECK(send_recv(b200, GiB, 1, false).time_s == doctest::Approx(GiB / (18 * 40.1e9 * 0.971) + 3.33e-6));
  }

  TEST_CASE("overlap.tp: each TP exchange hides under its own block's GEMMs, at TE's costs") {
    // By hand, made-up times in ms, one MLP block at TP4 on h100-sxm-ib (132 SMs; its
    // communication runs on SMs, comm_units 20; mlp_block above): fc1 1.0 (in the overlap's
    // chunks 1.1), fc2 0.8 (0.85); backward fc2.dgrad 0.8 (0.85), fc1.dgrad 1.0, wgrads 0.8 and
    // 1.0. The all-gathers take 0.5, the reduce-scatters 0.6. Transformer Engine's pipeline and
    // bulk kernels hold 16 of the 132 SMs: u = 16 / 132.
    const HardwareSpec hw = load_hardware("h100-sxm-ib");
    Strategy s;
    s.parallel.tp = 4;
    s.parallel.sp = true;
    s.overlap.tp = true;
    LayerEstimate layer = mlp_block();
    std::vector<CommOpEstimate> ops = mlp_block_exchanges();
    const double u = 16.0 / 132;
    // Forward. fc1 beside the ring-exchanged all-gather: max(1.1, 0.5 + 1.1 / 4) - 1.0 = 0.1.
    // fc2 (BF16) in the 4-chunk pipeline on 116 SMs: G = 0.85 / (1 - u); max(G + 0.6 / 4,
    // G / 4 + 0.6) - 0.8.
    const double G = 0.85 / (1 - u);
    const double fwd = 0.1 + (std::max(G + 0.15, G / 4 + 0.6) - 0.8);
    // Backward. fc2.dgrad beside the output gradient's all-gather (the forward reduce-scatter's
    // mirror, 0.6): max(0.85, 0.6 + 0.85 / 4) - 0.8 = 0.05. The input's second all-gather
    // (0.5) beside fc1.dgrad and the input gradient's reduce-scatter (0.5) beside fc1.wgrad:
    // each GEMM loses u of the SMs for 0.5 ms.
    const double bwd = 0.05 + 2 * u * 0.5;
    cost::TpExposed e = cost::tp_exposed(hw, s, ops, layer);
    CHECK(e.forward_s == doctest::Approx(fwd * 1e-3));
    CHECK(e.backward_s == doctest::Approx(bwd * 1e-3));
    // With FP8 GEMMs the reduce-scatter is a ring exchange too: max(0.85, 0.6 + 0.85 / 4) - 0.8.
    layer.ops[1].fp8 = true;
    e = cost::tp_exposed(hw, s, ops, layer);
    CHECK(e.forward_s == doctest::Approx((0.1 + 0.05) * 1e-3));
    layer.ops[1].fp8 = false;
    // An all-gather longer than its GEMM waits: the whole 2.0 ms transfer and the last of the
    // four chunks, 2.0 + 1.1 / 4 - 1.0 = 1.275 beside fc1 (and the backward bulk one shows
    // 2.0 - 1.0 beside fc1.dgrad).
    ops[0].time_s = 2.0e-3;
    e = cost::tp_exposed(hw, s, ops, layer);
    CHECK(e.forward_s == doctest::Approx((1.275 + (fwd - 0.1)) * 1e-3));
    CHECK(e.backward_s == doctest::Approx((0.05 + 1.0 + u * 0.5) * 1e-3));
    // Without overlap.tp each exchange adds whole; so does an all-reduce (no sequence
    // parallelism), which the overlap cannot split.
    s.overlap.tp = false;
    e = cost::tp_exposed(hw, s, ops, layer);
    CHECK(e.forward_s == doctest::Approx(2.6e-3));
    CHECK(e.backward_s == doctest::Approx(1.1e-3));
    s.overlap.tp = true;
    std::vector<CommOpEstimate> ar = {tp_op("mlp.tp_all_reduce", "forward", 0.7), tp_op("mlp.tp_all_reduce", "backward", 0.7)};
    e = cost::tp_exposed(hw, s, ar, layer);
    CHECK(e.forward_s == doctest::Approx(0.7e-3));
    CHECK(e.backward_s == doctest::Approx(0.7e-3));
    // Part of a block recomputed (its first GEMM alone, as MLA's up-projections are from the
    // gathered latents) exchanges nothing again.
    layer.ops.push_back(block_gemm("fc1", "recompute", 1.0, 0));
    e = cost::tp_exposed(hw, s, ops, layer);
    CHECK(e.backward_s == doctest::Approx((0.05 + 1.0 + u * 0.5) * 1e-3));
    // A block recomputed whole in the backward (full recompute: its GEMMs run again, phase
    // recompute) exchanges again there as its forward did: + 2.0 + 0.6 = 2.6 ms without the
    // overlap, + the forward's cost with it, + 0.7 for the all-reduce.
    layer.ops.push_back(block_gemm("fc2", "recompute", 0.8, 0));
    s.overlap.tp = false;
    e = cost::tp_exposed(hw, s, ops, layer);
    CHECK(e.backward_s == doctest::Approx((1.1 + 2.6) * 1e-3));
    s.overlap.tp = true;
    const double fwd_long = 1.275 + (fwd - 0.1);
    e = cost::tp_exposed(hw, s, ops, layer);
    CHECK(e.backward_s == doctest::Approx((0.05 + 1.0 + u * 0.5 + fwd_long) * 1e-3));
    e = cost::tp_exposed(hw, s, ar, layer);
    CHECK(e.backward_s == doctest::Approx(1.4e-3));
    // torchtitan's op policy recomputes matmuls but takes the all-reduce from its cache.
    s.training.recompute.mode = RecomputeMode::Op;
    e = cost::tp_exposed(hw, s, ar, layer);
    CHECK(e.backward_s == doctest::Approx(0.7e-3));
    // Its `_save_list` holds reduce_scatter_tensor but no all-gather (pytorch/torchtitan@820504e
    // parallelize_llama.py): the 2.0 ms all-gather runs once more, not the 0.6 ms
    // reduce-scatter. Without the overlap it adds whole: 1.1 + 2.0; with it, beside the
    // recomputed column GEMM fc1 (1.0 ms, no split time given): max(1.0, 2.0 + 1.0 / 4) - 1.0.
    e = cost::tp_exposed(hw, s, ops, layer);
    CHECK(e.backward_s == doctest::Approx((0.05 + 1.0 + u * 0.5 + 1.25) * 1e-3));
    s.overlap.tp = false;
    e = cost::tp_exposed(hw, s, ops, layer);
    CHECK(e.backward_s == doctest::Approx((1.1 + 2.0) * 1e-3));
    // A block with no recomputed op (a layer the policy leaves alone) gathers nothing again.
    layer.ops.resize(6);
    e = cost::tp_exposed(hw, s, ops, layer);
    CHECK(e.backward_s == doctest::Approx(1.1e-3));
  }

  TEST_CASE("overlap.tp async: torch's micro-pipelined AsyncTP rings, the input gradient's sum waited on") {
    // The block of the test above (made-up ms, TP4 + SP on h100-sxm-ib) under torch's AsyncTP
    // (torch.distributed._symmetric_memory: _pipelined_all_gather_and_consume and
    // _pipelined_produce_and_all2all, each tp chunks beside copy-engine pulls). Forward: fc1
    // beside the all-gather, max(1.1, 0.5 + 1.1 / 4) - 1.0 = 0.1, and fc2 beside the
    // reduce-scatter, a ring whatever the precision, max(0.85, 0.6 + 0.85 / 4) - 0.8 = 0.05.
    // Backward: fc2.dgrad beside the output gradient's all-gather, 0.05 again; the input
    // gradient's reduce-scatter sums separate matmuls (torchtitan's q / k / v, gate / up),
    // which Inductor's fuse_matmul_reduce_scatter does not take: its 0.5 ms whole. No second
    // gather of the input beside the dgrad (the weight gradients read the forward's).
    const HardwareSpec hw = load_hardware("h100-sxm-ib");
    Strategy s;
    s.parallel.tp = 4;
    s.parallel.sp = true;
    s.overlap.tp = true;
    s.overlap.tp_async = true;
    s.training.separate_linears = true;
    LayerEstimate layer = mlp_block();
    const std::vector<CommOpEstimate> ops = mlp_block_exchanges();
    cost::TpExposed e = cost::tp_exposed(hw, s, ops, layer);
    CHECK(e.forward_s == doctest::Approx(0.15e-3));
    CHECK(e.backward_s == doctest::Approx((0.05 + 0.5) * 1e-3));
    // A fused projection's dgrad is the one matmul feeding the reduce-scatter: fused, a ring
    // beside it, max(1.0, 0.5 + 1.0 / 4) - 1.0 = 0.
    s.training.separate_linears = false;
    CHECK(cost::tp_exposed(hw, s, ops, layer).backward_s == doctest::Approx(0.05e-3));
    s.training.separate_linears = true;
    // Recomputed whole (full recompute), the block's forward exchanges again as in forward.
    layer.ops.push_back(block_gemm("fc1", "recompute", 1.0, 1.1));
    layer.ops.push_back(block_gemm("fc2", "recompute", 0.8, 0.85));
    e = cost::tp_exposed(hw, s, ops, layer);
    CHECK(e.backward_s == doctest::Approx((0.05 + 0.5 + 0.15) * 1e-3));
  }

  TEST_CASE("overlap.tp async: the shard staged into the symmetric buffer, the partial chunks summed") {
    // Llama 3 70B's dense layer at TP8 + SP (T = 8192 tokens, h = 8192). Per TP block:
    // the rank's T / 8 rows of the gathered input copied into its symmetric buffer (read and
    // write, BF16: 2 x T / 8 x h x 2 B; FP8 when the GEMMs are, torchao casting before the
    // gather: 1 B), in backward the output gradient's shard likewise (BF16); after the
    // row-parallel matmul the 8 partial chunks are summed (read T x h, write T / 8 x h, BF16).
    Plan p{load_hardware("h100-sxm-ib"), load_model("llama3-70b"), Strategy{}};
    p.strategy.parallel.tp = 8;
    p.strategy.parallel.sp = true;
    p.strategy.overlap.tp = true;
    p.strategy.overlap.tp_async = true;
    const double T = 8192, h = 8192;
    for (const Precision precision : {Precision::Bf16, Precision::Fp8}) {
      p.strategy.training.precision = precision;
      const auto layers = model::build_layers(p.model, p.strategy, p.hardware, 1.0);
      int stages = 0, sums = 0;
      for (const model::Layer& l : layers) {
        if (l.kind != model::LayerKind::Dense) continue;
        for (const model::Op& o : l.ops) {
          if (o.name == "tp_async_stage" && o.phase == model::Phase::Forward) {
            ++stages;
            CHECK(o.bytes == doctest::Approx(2 * T / 8 * h * (precision == Precision::Fp8 ? 1 : 2)));
            CHECK(o.bwd_bytes == doctest::Approx(2 * T / 8 * h * 2));
          }
          if (o.name == "tp_async_reduce" && o.phase == model::Phase::Forward) {
            ++sums;
            CHECK(o.bytes == doctest::Approx((T + T / 8) * h * 2));
          }
        }
      }
      CHECK(stages == 2);  // attention and MLP
      CHECK(sums == 2);
    }
    p.strategy.overlap.tp_async = false;  // Transformer Engine's overlap has neither
    for (const model::Layer& l : model::build_layers(p.model, p.strategy, p.hardware, 1.0)) {
      for (const model::Op& o : l.ops) CHECK(o.name.rfind("tp_async", 0) == std::string::npos);
    }
  }

  TEST_CASE("overlap.tp splits a block's GEMMs: the whole GEMM's tiles, the weight read per chunk") {
    // Llama 3 70B's dense layer at TP4 + SP on h100-sxm-ib, BF16: the overlapped GEMMs carry
    // split_s, their time with the weight (k x n BF16) read once more per extra chunk; at these
    // shapes the GEMMs stay compute-bound, so the split costs nothing more (the tiles keep the
    // whole GEMM's wave quantization, the chunks' launches hide behind TE's other streams).
    Plan plan{load_hardware("h100-sxm-ib"), load_model("llama3-70b"), Strategy{}};
    plan.strategy.parallel.tp = 4;
    plan.strategy.parallel.sp = true;
    plan.strategy.overlap.tp = true;
    const ComputeBreakdown b = estimate_compute(plan);
    int split = 0;
    for (const LayerEstimate& l : b.layers) {
      for (const OpEstimate& op : l.ops) {
        if (op.name == "o_proj" || op.name == "down_proj" || op.name == "qkv_proj" || op.name == "gate_up_proj" ||
            op.name == "o_proj.dgrad" || op.name == "down_proj.dgrad") {
          CHECK(op.block == (op.name.rfind("o_proj", 0) == 0 || op.name.rfind("qkv", 0) == 0 ? "attention" : "mlp"));
          CHECK(op.split_s == doctest::Approx(op.time_s));
          ++split;
        }
        if (op.name == "gate_up_proj.wgrad" || op.name == "qkv_proj.dgrad") CHECK(op.split_s == 0);
      }
    }
    CHECK(split == 6);
    // MLA's down-projections run on the sequence-parallel rows before the latents are
    // gathered: outside the block, nothing hides under them; its up-projections are in it.
    Plan mla{load_hardware("h100-sxm-ib"), load_model("deepseek-v3"), Strategy{}};
    mla.strategy.parallel.tp = 2;
    mla.strategy.parallel.sp = true;
    mla.strategy.overlap.tp = true;
    int down = 0, up = 0;
    for (const LayerEstimate& l : estimate_compute(mla).layers) {
      for (const OpEstimate& op : l.ops) {
        if (op.name == "q_a_proj" || op.name == "kv_a_proj") {
          CHECK(op.block.empty());
          ++down;
        }
        if (op.name == "q_b_proj" || op.name == "kv_b_proj") {
          CHECK(op.block == "attention");
          ++up;
        }
      }
    }
    CHECK(down > 0);
    CHECK(up > 0);
  }

  TEST_CASE("a send/recv moves its whole message across the tier it crosses") {
    // Two H100s in different nodes (stride 8): 100 MB go over the RDMA tier once, whole. The
    // time is at least 100 MB at the tier's line rate (it was half of that before: the
    // hierarchical all-gather share (G - 1) / G of a two-rank group).
    HardwareSpec hw = load_hardware("h100-sxm-ib");
    const double S = 100e6;
    CollectiveCost c = send_recv(hw, S, 8, false);
    REQUIRE(c.tiers.size() == 1);
    CHECK(c.tiers[0].bytes == doctest::Approx(S));
    const TierSpec& cluster = hw.tiers.back();
    CHECK(c.time_s >= S / cluster.bw_bytes_per_s);
    // inside a node the same message crosses NVLink whole
    CollectiveCost in_node = send_recv(hw, S, 1, false);
    REQUIRE(in_node.tiers.size() == 1);
    CHECK(in_node.tiers[0].bytes == doctest::Approx(S));
  }
}
