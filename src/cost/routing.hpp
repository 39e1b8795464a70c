#pragma once
// Exact routing statistics of top-k MoE routing (no Monte Carlo): probabilities that a
// token needs a rank or a node, expected distinct destinations, and the expected load of
// the busiest expert and rank.
//
// Uniform routing: each token picks k distinct experts of E uniformly at random (the
// load-balanced limit that DeepSeek's auxiliary-loss-free balancing aims at). A group of
// e experts is hit with probability 1 - C(E - e, k) / C(E, k) (hypergeometric: the chance
// that none of the k picks falls in the group is the chance that all k fall outside it).
//
// Node-limited routing (DeepSeek-V3 sec. 2.1.2, at most M nodes per token): the token
// picks M of the N nodes, then k experts among the M E / N experts of those nodes.

namespace paraplan::cost {

/// C(E - e, k) / C(E, k): the probability that k distinct picks of E miss a set of e.
double miss_probability(int E, int e, int k);

/// 1 - miss_probability: probability that a set of e experts is hit by a token.
double hit_probability(int E, int e, int k);

/// Where a token's copies go, for a given EP layout.
struct RoutingStats {
  double p_rank = 0;          ///< probability a given rank (E / ep experts) is needed
  double p_node = 0;          ///< probability a given node is needed
  double ranks_per_token = 0; ///< expected distinct destination ranks (incl. the own rank)
  double nodes_per_token = 0; ///< expected distinct destination nodes (incl. the own node)
  double remote_ranks_same_node = 0;  ///< expected distinct other ranks in the own node
  double remote_nodes = 0;            ///< expected distinct other nodes
  double remote_ranks_other_nodes = 0;  ///< expected distinct ranks in other nodes
};

/// Statistics for E experts, top-k, spread over `ranks` EP ranks of which `ranks_per_node`
/// share a node (the EP group spans ranks / ranks_per_node nodes); `max_groups` > 0 applies
/// group-limited routing: the experts form `groups` equal groups (0: one per node, DeepSeek-
/// V3's node-limited routing), a token picks `max_groups` of them, then k experts among theirs.
RoutingStats routing_stats(int E, int k, int ranks, int ranks_per_node, int max_groups, int groups = 0);

/// The same statistics when token t takes the k consecutive experts from t k (mod E), the
/// experts laid out in order over the ranks (E / ranks each) and the nodes: the mean over
/// the cycle of starts of the ranks and nodes a block spans; a given unit is needed with
/// p = (units per token) / units, by symmetry, for a token on any rank.
RoutingStats round_robin_stats(int E, int k, int ranks, int ranks_per_node);

/// Expected maximum of n independent Binomial(trials, p) loads, exactly:
/// E[max] = sum over x >= 0 of 1 - F(x)^n (Boost.Math binomial CDF).
double expected_max_binomial(double trials, double p, int n);

/// Expected maximum of n independent normal loads (mean, sd), by the same sum over x with
/// a continuity-corrected normal CDF; used for sums of many small integer loads.
double expected_max_normal(double mean, double sd, int n);

/// Load factors (expected maximum / mean) under uniform routing of `tokens` tokens of one
/// EP group over E experts, top-k, with `ranks` ranks.
struct LoadFactors {
  double expert = 1.0;  ///< busiest expert / mean expert
  double rank = 1.0;    ///< busiest rank (sum of its experts' copies) / mean rank
};
LoadFactors load_factors(double tokens, int E, int k, int ranks);

}  // namespace paraplan::cost
