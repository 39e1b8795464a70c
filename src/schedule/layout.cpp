#include "schedule/layout.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "config/pipeline_layout.hpp"
#include "model/params.hpp"

namespace paraplan::schedule {

std::vector<int> chunk_layer_counts(int layers, int chunks, int first, int last, bool embedding, bool loss) {
  chunks = std::max(1, chunks);
  std::vector<int> counts(static_cast<std::size_t>(chunks), 0);
  int lo = 0, hi = chunks - 1, rest = layers;
  if (first > 0) {
    counts[0] = first;
    rest -= first;
    lo = 1;
  }
  if (last > 0 && hi >= lo) {
    counts[static_cast<std::size_t>(hi)] = last;
    rest -= last;
    --hi;
  }
  if (hi < lo) return counts;
  // The rest over chunks lo..hi, the embedding / head counted as a layer where asked.
  const int front = embedding && lo == 0 ? 1 : 0, back = loss && hi == chunks - 1 ? 1 : 0;
  const int n = hi - lo + 1, units = std::max(0, rest) + front + back;
  const int base = units / n, rem = units % n;
  for (int c = lo; c <= hi; ++c) counts[static_cast<std::size_t>(c)] = base + 1;
  int shorter = rem == 0 ? n : n - rem;
  // Outermost first: lo, hi, lo + 1, hi - 1, ...
  for (int i = 0, a = lo, b = hi; i < shorter; ++i) {
    const int c = (i % 2 == 0) ? a++ : b--;
    counts[static_cast<std::size_t>(c)] = base;
  }
  if (front) counts[static_cast<std::size_t>(lo)] = std::max(0, counts[static_cast<std::size_t>(lo)] - 1);
  if (back) counts[static_cast<std::size_t>(hi)] = std::max(0, counts[static_cast<std::size_t>(hi)] - 1);
  return counts;
}

namespace {

std::vector<std::vector<Chunk>> build_rank_chunks(const ModelSpec& m, const Strategy& s) {
  const int pp = std::max(1, s.parallel.pp);
  const int chunks = config::model_chunks(s);
  const Parallel& p = s.parallel;
  std::vector<Chunk> all;
  std::vector<config::LayoutChunk> spelled;
  if (!p.pipeline_layout.empty()) {
    spelled = config::layout_chunks(p.pipeline_layout);
    if (static_cast<int>(spelled.size()) != chunks) spelled.clear();  // not checked by the rules: spread
  }
  const std::vector<int> counts = chunk_layer_counts(m.layers, chunks, p.first_stage_layers, p.last_stage_layers,
                                                     p.embedding_in_split, p.loss_in_split);
  int first = 0;
  for (int c = 0; c < chunks; ++c) {
    Chunk ch;
    ch.first_layer = first;
    if (!spelled.empty()) {
      const config::LayoutChunk& l = spelled[static_cast<std::size_t>(c)];
      ch.layers = l.layers;
      ch.embedding = l.embedding > 0;
      ch.head = l.loss > 0;
      ch.mtp = l.mtp > 0;
    } else {
      ch.layers = counts[static_cast<std::size_t>(c)];
      ch.embedding = c == 0;
      ch.head = ch.mtp = c == chunks - 1;
    }
    first += ch.layers;
    all.push_back(ch);
  }
  std::vector<std::vector<Chunk>> ranks(static_cast<std::size_t>(pp));
  for (int r = 0; r < pp; ++r) {
    auto& mine = ranks[static_cast<std::size_t>(r)];
    switch (s.schedule) {
      case Schedule::Interleaved:
        for (int c = r; c < chunks; c += pp) mine.push_back(all[static_cast<std::size_t>(c)]);
        break;
      case Schedule::DualPipe:
        mine.push_back(all[static_cast<std::size_t>(r)]);
        if (pp > 1) mine.push_back(all[static_cast<std::size_t>(pp - 1 - r)]);
        break;
      case Schedule::DualPipeV:
        mine.push_back(all[static_cast<std::size_t>(r)]);
        mine.push_back(all[static_cast<std::size_t>(2 * pp - 1 - r)]);
        break;
      case Schedule::OneFOneB:
      case Schedule::ZeroBubble:
        mine.push_back(all[static_cast<std::size_t>(r)]);
        break;
    }
  }
  return ranks;
}

}  // namespace

std::shared_ptr<const std::vector<std::vector<Chunk>>> rank_chunks(const ModelSpec& m, const Strategy& s) {
  const Parallel& p = s.parallel;
  const int vpp = s.schedule == Schedule::Interleaved ? p.vpp : 1;
  // The layout string itself is part of the key (a hash of it could collide).
  struct Key {
    std::array<long long, 8> shape;
    std::string layout;
    bool operator==(const Key& o) const { return shape == o.shape && layout == o.layout; }
  };
  const Key key{{m.layers, p.pp, vpp, static_cast<long long>(s.schedule), p.first_stage_layers, p.last_stage_layers,
                 p.embedding_in_split ? 1 : 0, p.loss_in_split ? 1 : 0},
                p.pipeline_layout};
  struct Hash {
    std::size_t operator()(const Key& k) const noexcept {
      std::size_t h = 1469598103934665603ull;
      for (long long v : k.shape) h = (h ^ static_cast<std::size_t>(v)) * 1099511628211ull;
      return k.layout.empty() ? h : (h ^ std::hash<std::string>{}(k.layout)) * 1099511628211ull;
    }
  };
  using Layout = std::shared_ptr<const std::vector<std::vector<Chunk>>>;
  thread_local std::unordered_map<Key, Layout, Hash> memo;
  // Neighbouring candidates of a search share their layout: the last answer first.
  thread_local Key last_key;
  thread_local Layout last;
  if (last && key.shape == last_key.shape && key.layout == last_key.layout) return last;
  auto it = memo.find(key);
  if (it == memo.end()) {
    if (memo.size() >= 64) memo.clear();  // bounded: a long-lived thread meets many models
    it = memo.emplace(key, std::make_shared<const std::vector<std::vector<Chunk>>>(build_rank_chunks(m, s))).first;
  }
  last_key = key;
  last = it->second;
  return it->second;
}

RankRuns::Held rank_held(const std::vector<Chunk>& chunks, int dense_layers) {
  RankRuns::Held h;
  h.chunks = chunks.size();
  bool holds_embedding = false;
  for (const Chunk& c : chunks) holds_embedding = holds_embedding || c.embedding;
  for (const Chunk& c : chunks) {
    const int nd = c.dense_layers(dense_layers);
    h.dense += nd;
    h.moe += c.layers - nd;
    h.embedding += c.embedding ? 1 : 0;
    h.head += c.head ? 1 : 0;
    h.mtp += c.mtp ? 1 : 0;
    if (!holds_embedding) {
      h.head_apart += c.head && !c.mtp ? 1 : 0;
      h.mtp_apart += c.mtp && !c.head ? 1 : 0;
      h.both_apart += c.head && c.mtp ? 1 : 0;
    }
  }
  return h;
}

std::shared_ptr<const RankRuns> rank_runs(const ModelSpec& m, const Strategy& s, int dense_layers) {
  auto ranks = rank_chunks(m, s);
  // Keyed by the layout's address: the entry holds the layout, so no other layout can take
  // that address while the entry lives.
  using Key = std::pair<const void*, int>;
  struct Hash {
    std::size_t operator()(const Key& k) const noexcept {
      return std::hash<const void*>{}(k.first) * 1099511628211ull ^ static_cast<std::size_t>(k.second);
    }
  };
  thread_local std::unordered_map<Key, std::shared_ptr<const RankRuns>, Hash> memo;
  thread_local int last_dense = 0;
  const Key key{ranks.get(), dense_layers};
  thread_local std::shared_ptr<const RankRuns> last;
  if (last && last->ranks == ranks && last_dense == dense_layers) return last;
  if (auto it = memo.find(key); it != memo.end()) {
    last = it->second;
    last_dense = dense_layers;
    return last;
  }
  if (memo.size() >= 64) memo.clear();
  auto runs = std::make_shared<RankRuns>();
  auto same = [&](const Chunk& a, const Chunk& b) {
    return a.dense_layers(dense_layers) == b.dense_layers(dense_layers) && a.layers == b.layers &&
           a.embedding == b.embedding && a.head == b.head && a.mtp == b.mtp;
  };
  const auto& all = *ranks;
  for (std::size_t r = 0; r < all.size(); ++r) {
    const bool joins = r > 0 && all[r].size() == all[r - 1].size() &&
                       std::equal(all[r].begin(), all[r].end(), all[r - 1].begin(), same);
    if (joins) continue;
    runs->starts.push_back(static_cast<int>(r));
    runs->held.push_back(rank_held(all[r], dense_layers));
  }
  runs->ranks = std::move(ranks);
  last = memo.emplace(key, std::move(runs)).first->second;
  last_dense = dense_layers;
  return last;
}

int micro_batches(const Strategy& s) {
  const int per_step = std::max(1, s.parallel.dp * s.training.micro_batch);
  return std::max(1, s.training.global_batch / per_step);
}

int run_micro_batches(const Strategy& s) { return std::max(1, micro_batches(s) / pipeline_runs(s)); }

double in_flight_sets(const Strategy& s, int rank, int m) {
  const int pp = std::max(1, s.parallel.pp);
  const int vpp = std::max(1, s.parallel.vpp);
  switch (s.schedule) {
    case Schedule::Interleaved:
      if (vpp > 1) {
        // Megatron's interleaved 1F1B: warm-up (pp - r - 1) x 2 + (vpp - 1) x pp forward
        // chunks, then one more before the first backward frees one.
        return std::min(2 * (pp - rank - 1) + (vpp - 1) * pp + 1, m * vpp);
      }
      [[fallthrough]];
    case Schedule::OneFOneB:
    case Schedule::ZeroBubble:  // ZB-H1 keeps 1F1B's peak (Qi et al. 2023)
      return std::min(pp - rank, m);
    case Schedule::DualPipe:  // DeepSeek-V3 sec. 3.2.1 / DualPipe README: PP + 1
      return std::min(pp + 1, m);
    case Schedule::DualPipeV:  // PP' + 1 with PP' = 2 pp chunks on pp devices
      return std::min(2 * pp + 1, 2 * m);
  }
  return std::min(pp - rank, m);
}

std::pair<int, int> recomputed_layers(const ModelSpec& m, const Strategy& s) {
  const int nd_model = model::dense_layers(m);
  const int n = s.training.recompute_layers;
  if (n <= 0) return {nd_model, model::moe_layers(m)};
  std::pair<int, int> out{0, 0};
  for (const auto& chunks : *rank_chunks(m, s)) {
    for (const Chunk& ch : chunks) {
      const int rd = ch.recomputed_dense(n, nd_model);
      out.first += rd;
      out.second += ch.recomputed(n) - rd;
    }
  }
  // DualPipe's ranks hold every chunk twice (stages r and pp - 1 - r).
  if (s.schedule == Schedule::DualPipe && s.parallel.pp > 1) out = {out.first / 2, out.second / 2};
  return out;
}

}  // namespace paraplan::schedule
