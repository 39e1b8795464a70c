#include "cost/routing.hpp"

#include <boost/math/distributions/binomial.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <vector>
#include <unordered_map>

namespace paraplan::cost {

double miss_probability(int E, int e, int k) {
  if (e <= 0) return 1.0;
  if (E - e < k) return 0.0;
  double p = 1.0;
  for (int i = 0; i < k; ++i) p *= static_cast<double>(E - e - i) / (E - i);
  return p;
}

double hit_probability(int E, int e, int k) { return 1.0 - miss_probability(E, e, k); }

namespace {

// ln C(n, r) for 0 <= r <= n (in logs, so no group count overflows a double).
double log_choose(int n, int r) {
  return std::lgamma(n + 1.0) - std::lgamma(r + 1.0) - std::lgamma(n - r + 1.0);
}

// Probability that a token needs a given unit of E / units experts (a rank or a node) when it
// picks M of G equal groups and then k experts among the M E / G experts of those groups. A
// unit inside one group is needed only if its group is picked (M / G); a unit of g = G /
// units whole groups, if j of them are picked (hypergeometric), is hit among their j E / G
// experts. Groups that neither nest in the units nor hold them whole are not modelled (the
// caller falls back to unlimited routing).
double unit_hit(int E, int k, int units, int G, int M) {
  const int e_unit = E / units;
  const int pool = M * (E / G);
  if (units >= G) return static_cast<double>(M) / G * hit_probability(pool, e_unit, k);
  const int g = G / units;
  double p = 0;
  for (int j = std::max(1, M - (G - g)); j <= std::min(g, M); ++j) {
    const double picked = std::exp(log_choose(g, j) + log_choose(G - g, M - j) - log_choose(G, M));
    p += picked * hit_probability(pool, j * (E / G), k);
  }
  return p;
}

bool nests(int a, int b) { return a > 0 && b > 0 && (a % b == 0 || b % a == 0); }

// The expected counts from the chance a token needs a given rank and node (linear in them).
RoutingStats with_counts(double p_rank, double p_node, int ranks, int rpn, int nodes) {
  RoutingStats s;
  s.p_rank = p_rank;
  s.p_node = p_node;
  s.ranks_per_token = ranks * p_rank;
  s.nodes_per_token = nodes * p_node;
  s.remote_ranks_same_node = (rpn - 1) * p_rank;
  s.remote_nodes = (nodes - 1) * p_node;
  s.remote_ranks_other_nodes = (ranks - rpn) * p_rank;
  return s;
}

}  // namespace

RoutingStats routing_stats(int E, int k, int ranks, int ranks_per_node, int max_groups, int groups) {
  ranks = std::max(1, ranks);
  const int rpn = std::clamp(ranks_per_node, 1, ranks);
  const int nodes = (ranks + rpn - 1) / rpn;
  const int G = groups > 0 ? groups : nodes;
  const bool limited = max_groups > 0 && max_groups < G && E % G == 0 && max_groups * (E / G) >= k &&
                       nests(G, ranks) && nests(G, nodes) && E % ranks == 0 && E % nodes == 0;
  if (limited) {
    return with_counts(unit_hit(E, k, ranks, G, max_groups), unit_hit(E, k, nodes, G, max_groups), ranks, rpn, nodes);
  }
  return with_counts(hit_probability(E, E / ranks, k), hit_probability(E, E / nodes, k), ranks, rpn, nodes);
}

RoutingStats round_robin_stats(int E, int k, int ranks, int ranks_per_node) {
  ranks = std::max(1, ranks);
  const int rpn = std::clamp(ranks_per_node, 1, ranks);
  const int nodes = (ranks + rpn - 1) / rpn;
  E = std::max(1, E);
  k = std::clamp(k, 1, E);
  // The starts t k mod E cycle through the multiples of gcd(k, E); expert x sits on rank
  // floor(x / (E / ranks)) and node floor(x / (E / nodes)).
  auto spanned = [&](int units) {
    const double per = static_cast<double>(E) / units;
    const int step = std::gcd(k, E);
    double sum = 0;
    int starts = 0;
    for (int start = 0; start < E; start += step, ++starts) {
      std::vector<char> hit(static_cast<std::size_t>(units), 0);
      for (int j = 0; j < k; ++j) hit[static_cast<std::size_t>(std::floor(((start + j) % E) / per))] = 1;
      sum += static_cast<double>(std::count(hit.begin(), hit.end(), 1));
    }
    return sum / starts;
  };
  return with_counts(spanned(ranks) / ranks, spanned(nodes) / nodes, ranks, rpn, nodes);
}

namespace {

// sum over x >= 0 of 1 - F(x)^n, for a CDF F of a load with the given mean and sd.
template <typename Cdf>
double expected_max(double mean, double sd, int n, Cdf cdf) {
  if (n <= 1 || sd <= 0) return mean;
  // Below x0 the term is 1 to double precision; above x1 it is 0.
  const double x0 = std::max(0.0, std::floor(mean - 12 * sd));
  const double x1 = mean + 12 * sd + 8 * std::sqrt(std::log(static_cast<double>(n)) + 1) * sd;
  double sum = x0;
  for (double x = x0; x <= x1; x += 1.0) {
    double f = cdf(x);
    sum += 1.0 - std::exp(n * std::log(std::max(f, 1e-300)));
  }
  return sum;
}

}  // namespace

double expected_max_binomial(double trials, double p, int n) {
  if (trials <= 0 || p <= 0) return 0.0;
  if (p >= 1) return trials;
  const double mean = trials * p, sd = std::sqrt(trials * p * (1 - p));
  if (n <= 1) return mean;
  // sum over x of 1 - F(x)^n. F at the first x from Boost.Math, then the pmf recurrence
  // pmf(x + 1) = pmf(x) (N - x) / (x + 1) p / (1 - p): exact, and O(1) per term.
  boost::math::binomial_distribution<double> dist(trials, p);
  const double x0 = std::max(0.0, std::floor(mean - 12 * sd));
  const double x1 = std::min(trials, mean + 12 * sd + 8 * std::sqrt(std::log(static_cast<double>(n)) + 1) * sd);
  double cdf = boost::math::cdf(dist, x0);
  double pmf = boost::math::pdf(dist, x0);
  const double odds = p / (1 - p);
  double sum = x0;
  for (double x = x0; x < x1; x += 1.0) {
    sum += 1.0 - std::exp(n * std::log(std::min(1.0, std::max(cdf, 1e-300))));
    pmf *= (trials - x) / (x + 1) * odds;
    cdf += pmf;
  }
  return sum;
}

double expected_max_normal(double mean, double sd, int n) {
  if (sd <= 0 || n <= 1) return mean;
  // Continuity-corrected normal CDF, Phi(z) = erfc(-z / sqrt 2) / 2.
  return expected_max(mean, sd, n, [&](double x) {
    return 0.5 * std::erfc(-(x + 0.5 - mean) / (sd * std::sqrt(2.0)));
  });
}

namespace {

LoadFactors compute_load_factors(double tokens, int E, int k, int ranks) {
  LoadFactors f;
  if (tokens <= 0 || E <= 0 || k <= 0) return f;
  const double p = static_cast<double>(k) / E;
  const double mean_expert = tokens * p;
  f.expert = expected_max_binomial(tokens, p, E) / mean_expert;
  if (ranks > 1) {
    // Copies a token sends to one rank of e experts: hypergeometric(E, e, k); the rank's
    // load is the sum over tokens, normal to excellent accuracy at thousands of tokens.
    // Ranks are treated as independent (their sum is fixed, so this slightly overstates).
    const double q = 1.0 / ranks;  // e / E
    const double var_token = k * q * (1 - q) * (E - k) / static_cast<double>(E - 1);
    const double mean_rank = tokens * k * q;
    f.rank = expected_max_normal(mean_rank, std::sqrt(tokens * var_token), ranks) / mean_rank;
  }
  return f;
}

}  // namespace

LoadFactors load_factors(double tokens, int E, int k, int ranks) {
  // A search asks for the same few (tokens, E, k, ranks) from hundreds of layer keys, and each
  // answer sums thousands of terms: remembered per thread (no lock), at most kMax answers.
  struct Key {
    double tokens;
    int E, k, ranks;
    bool operator==(const Key&) const = default;
  };
  struct Hash {
    std::size_t operator()(const Key& q) const {
      std::size_t h = std::hash<double>{}(q.tokens);
      for (int v : {q.E, q.k, q.ranks}) h = h * 1000003u ^ std::hash<int>{}(v);
      return h;
    }
  };
  constexpr std::size_t kMax = 4096;
  thread_local std::unordered_map<Key, LoadFactors, Hash> memo;
  const Key key{tokens, E, k, ranks};
  if (auto it = memo.find(key); it != memo.end()) return it->second;
  if (memo.size() >= kMax) memo.clear();
  const LoadFactors f = compute_load_factors(tokens, E, k, ranks);
  memo.emplace(key, f);
  return f;
}

}  // namespace paraplan::cost
