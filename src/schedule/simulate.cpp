#include "schedule/simulate.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>

namespace paraplan::schedule {
namespace {

constexpr double kUnknown = -1.0;

// A task: a direction's pipeline position, a micro-batch and a kind. Direction 1 exists only
// under DualPipe (micro-batches entering at the last rank).
struct Key {
  int dir = 0, pos = 0, micro = 0;
  char kind = 'F';
  auto tie() const { return std::tie(dir, pos, micro, kind); }
  bool operator<(const Key& o) const { return tie() < o.tie(); }
};

// The pipeline's layout: which rank and which of its chunks runs position `pos` of direction
// `dir`, and how many positions a direction has.
struct Layout {
  int positions = 1;
  std::vector<std::vector<std::pair<int, int>>> at;  // [dir][pos] -> (rank, chunk)
};

Layout layout_of(Schedule s, int pp, int vpp) {
  Layout l;
  switch (s) {
    case Schedule::OneFOneB:
    case Schedule::ZeroBubble:
      l.positions = pp;
      l.at.resize(1);
      for (int r = 0; r < pp; ++r) l.at[0].push_back({r, 0});
      break;
    case Schedule::Interleaved:
      l.positions = pp * vpp;
      l.at.resize(1);
      for (int c = 0; c < vpp; ++c) {
        for (int r = 0; r < pp; ++r) l.at[0].push_back({r, c});
      }
      break;
    case Schedule::DualPipe:
      // Direction 0 enters at rank 0 (chunk 0 = stage r), direction 1 at rank pp - 1 (chunk
      // 1 = stage pp - 1 - r, so position q sits on rank pp - 1 - q).
      l.positions = pp;
      l.at.resize(2);
      for (int q = 0; q < pp; ++q) {
        l.at[0].push_back({q, 0});
        l.at[1].push_back({pp - 1 - q, 1});
      }
      break;
    case Schedule::DualPipeV:
      // A V: positions 0..pp-1 down the ranks (chunk 0), pp..2pp-1 back up (chunk 1).
      l.positions = 2 * pp;
      l.at.resize(1);
      for (int q = 0; q < pp; ++q) l.at[0].push_back({q, 0});
      for (int q = 0; q < pp; ++q) l.at[0].push_back({pp - 1 - q, 1});
      break;
  }
  return l;
}

// One operation of a rank: one task, or up to three run back to back as one (a backward
// with its weight gradient; DualPipe's paired forward and backward chunks). Held inline: a
// step has tens of thousands of them.
struct Op {
  std::array<Key, 3> tasks{};
  int n = 0;
  Op() = default;
  Op(std::initializer_list<Key> ks) {
    for (const Key& k : ks) add(k);
  }
  void add(const Key& k) { tasks[static_cast<std::size_t>(n++)] = k; }
  [[nodiscard]] const Key* begin() const { return tasks.data(); }
  [[nodiscard]] const Key* end() const { return tasks.data() + n; }
  [[nodiscard]] std::size_t size() const { return static_cast<std::size_t>(n); }
};

struct Sim {
  const Pipeline& p;
  Layout layout;
  int micro = 1;
  std::vector<double> end_;   // finished tasks' ends, kUnknown before
  std::vector<double> sent_;  // when a finished task's output leaves (its op's end)
  Simulation out;
  bool record;
  bool slotted = false;  // running time steps (steps()): their transfers are timed apart

  Sim(const Pipeline& pipeline, Layout l, bool rec)
      : p(pipeline), layout(std::move(l)), micro(std::max(1, pipeline.micro_batches)), record(rec) {
    const std::size_t n = p.ranks.size();
    out.busy.assign(n, 0.0);
    out.peak_sets.assign(n, 0.0);
    const std::size_t tasks = layout.at.size() * static_cast<std::size_t>(layout.positions) * static_cast<std::size_t>(micro) * 3;
    end_.assign(tasks, kUnknown);
    sent_.assign(tasks, kUnknown);
  }

  std::size_t index(const Key& k) const {
    const int kind = k.kind == 'F' ? 0 : k.kind == 'B' ? 1 : 2;
    return ((static_cast<std::size_t>(k.dir) * static_cast<std::size_t>(layout.positions) + static_cast<std::size_t>(k.pos)) *
                static_cast<std::size_t>(micro) + static_cast<std::size_t>(k.micro)) * 3 + static_cast<std::size_t>(kind);
  }
  double end(const Key& k) const { return end_[index(k)]; }

  int rank_of(const Key& k) const { return layout.at[static_cast<std::size_t>(k.dir)][static_cast<std::size_t>(k.pos)].first; }
  int chunk_of(const Key& k) const { return layout.at[static_cast<std::size_t>(k.dir)][static_cast<std::size_t>(k.pos)].second; }

  double duration(const Key& k) const {
    const ChunkTimes& t = p.ranks[static_cast<std::size_t>(rank_of(k))][static_cast<std::size_t>(chunk_of(k))];
    double d = k.kind == 'F' ? t.f : k.kind == 'B' ? t.b : t.w;
    // A blocking send to another rank occupies this rank too (in time steps, the step's
    // exchange is timed apart).
    if (!slotted && !p.p2p_overlapped && k.kind != 'W' && crosses(k)) d += p.p2p_s;
    return d;
  }

  // Whether the task's output goes to another rank (its successor's rank differs).
  bool crosses(const Key& k) const {
    const int next = k.kind == 'F' ? k.pos + 1 : k.pos - 1;
    if (next < 0 || next >= layout.positions) return false;
    Key n = k;
    n.pos = next;
    return rank_of(n) != rank_of(k);
  }

  // When the task's inputs are there; kUnknown while a dependency has not run.
  double ready(const Key& k) const {
    double t = 0;
    auto need = [&](Key d, bool edge) {
      const std::size_t i = index(d);
      if (end_[i] == kUnknown) {
        t = kUnknown;
        return;
      }
      const double at = sent_[i] != kUnknown ? sent_[i] : end_[i];
      if (t != kUnknown) t = std::max(t, at + (edge ? p.p2p_s : 0.0));
    };
    if (k.kind == 'F') {
      if (k.pos > 0) {
        Key d{k.dir, k.pos - 1, k.micro, 'F'};
        need(d, rank_of(d) != rank_of(k));
      }
    } else if (k.kind == 'B') {
      need(Key{k.dir, k.pos, k.micro, 'F'}, false);
      if (t != kUnknown && k.pos + 1 < layout.positions) {
        Key d{k.dir, k.pos + 1, k.micro, 'B'};
        need(d, rank_of(d) != rank_of(k));
      }
    } else {
      need(Key{k.dir, k.pos, k.micro, 'B'}, false);
    }
    return t;
  }

  void run(int rank, const Key& k, double start, double& sets) {
    const double d = duration(k);
    end_[index(k)] = start + d;
    out.busy[static_cast<std::size_t>(rank)] += d;
    out.makespan = std::max(out.makespan, start + d);
    if (k.kind == 'F') {
      sets += 1;
      out.peak_sets[static_cast<std::size_t>(rank)] = std::max(out.peak_sets[static_cast<std::size_t>(rank)], sets);
    } else if (k.kind == 'W') {
      sets -= 1;
    }
    if (record) out.events.push_back(Event{rank, k.kind, chunk_of(k), k.micro, start, start + d});
  }

  // Runs fixed per-rank orders: each rank takes its next op once every input is there.
  void fixed(const std::vector<std::vector<Op>>& orders) {
    const std::size_t n = orders.size();
    std::vector<std::size_t> next(n, 0);
    std::vector<double> free_at(n, 0.0), sets(n, 0.0);
    std::size_t left = 0;
    for (const auto& o : orders) left += o.size();
    while (left > 0) {
      bool progress = false;
      for (std::size_t r = 0; r < n; ++r) {
        while (next[r] < orders[r].size()) {
          const Op& op = orders[r][next[r]];
          // Every input from outside the op must be there; a W after its own B in the same
          // op waits only for that B.
          bool ok = true;
          for (const Key& k : op) {
            const bool own = k.kind == 'W' && std::any_of(op.begin(), op.end(), [&](const Key& o) {
                               return o.kind == 'B' && o.dir == k.dir && o.pos == k.pos && o.micro == k.micro;
                             });
            if (!own && ready(k) == kUnknown) ok = false;
          }
          if (!ok) break;
          double start = free_at[r];
          for (const Key& k : op) {
            start = std::max(start, ready(k));
            run(static_cast<int>(r), k, start, sets[r]);
            start = end(k);
          }
          // An op's outputs leave when it ends: one autograd backward sends the input
          // gradient after the weight gradient; DualPipe's paired chunks send both after
          // the pair.
          if (op.size() > 1) {
            for (const Key& k : op) {
              if (k.kind != 'W') sent_[index(k)] = start;
            }
          }
          free_at[r] = start;
          ++next[r];
          --left;
          progress = true;
        }
      }
      if (!progress) {
        out.ok = false;
        out.error = "the schedule's order deadlocks";
        return;
      }
    }
  }

  // Runs per-rank grids of time steps (an empty step: std::nullopt) in lock-step: in each
  // step a rank runs its task, then posts the step's sends (its output to the neighbouring
  // stage's rank) and receives (what a neighbour's task of the same step sends it) and waits
  // for all of them; a transfer completes p2p_s after the later of the two ranks' tasks.
  // False (out.ok false, the caller says why) when a step runs a task before its input.
  bool steps(const std::vector<std::vector<std::optional<Key>>>& grid) {
    slotted = true;
    const std::size_t n = grid.size();
    std::size_t length = 0;
    for (const auto& g : grid) length = std::max(length, g.size());
    std::vector<double> at(n, 0.0), done(n, 0.0), wait(n, -1.0), sets(n, 0.0);
    auto task = [&](std::size_t r, std::size_t t) -> const std::optional<Key>& {
      static const std::optional<Key> none;
      return t < grid[r].size() ? grid[r][t] : none;
    };
    // The rank a task's output goes to, or -1 (the last forward, the first backward, or a
    // neighbouring stage on the same rank).
    auto target = [&](const Key& k) {
      const int next = k.kind == 'F' ? k.pos + 1 : k.pos - 1;
      if (next < 0 || next >= layout.positions) return -1;
      Key o = k;
      o.pos = next;
      const int r = rank_of(o);
      return r == rank_of(k) ? -1 : r;
    };
    for (std::size_t t = 0; t < length; ++t) {
      for (std::size_t r = 0; r < n; ++r) {
        done[r] = at[r];
        const std::optional<Key>& k = task(r, t);
        if (!k) continue;
        const double in = ready(*k);
        if (in == kUnknown) {
          out.ok = false;
          return false;
        }
        double start = std::max(at[r], in);
        run(static_cast<int>(r), *k, start, sets[r]);
        start = end(*k);
        if (k->kind == 'B') {  // torch's full backward: the weight gradient with it
          const Key w{k->dir, k->pos, k->micro, 'W'};
          run(static_cast<int>(r), w, start, sets[r]);
          start = end(w);
          sent_[index(*k)] = start;
        }
        done[r] = start;
      }
      // Each transfer ties its sender and its receiver: both wait for the later task.
      std::fill(wait.begin(), wait.end(), -1.0);
      for (std::size_t r = 0; r < n; ++r) {
        const std::optional<Key>& k = task(r, t);
        const int q = k ? target(*k) : -1;
        if (q < 0) continue;
        const double both = std::max(done[r], done[static_cast<std::size_t>(q)]);
        wait[r] = std::max(wait[r], both);
        wait[static_cast<std::size_t>(q)] = std::max(wait[static_cast<std::size_t>(q)], both);
      }
      for (std::size_t r = 0; r < n; ++r) at[r] = wait[r] < 0 ? done[r] : wait[r] + p.p2p_s;
    }
    return true;
  }
};

// B with its W, as 1F1B and the interleaved schedule run them.
Op bw(int dir, int pos, int micro) { return Op{Key{dir, pos, micro, 'B'}, Key{dir, pos, micro, 'W'}}; }
Op one(int dir, int pos, int micro, char kind) { return Op{Key{dir, pos, micro, kind}}; }

std::vector<std::vector<Op>> one_f_one_b(int pp, int m) {
  std::vector<std::vector<Op>> orders(static_cast<std::size_t>(pp));
  for (int r = 0; r < pp; ++r) {
    auto& o = orders[static_cast<std::size_t>(r)];
    const int warm = std::min(pp - r - 1, m);
    for (int i = 0; i < warm; ++i) o.push_back(one(0, r, i, 'F'));
    for (int i = warm; i < m; ++i) {
      o.push_back(one(0, r, i, 'F'));
      o.push_back(bw(0, r, i - warm));
    }
    for (int i = m - warm; i < m; ++i) o.push_back(bw(0, r, i));
  }
  return orders;
}

// ZB-H1 (Qi et al. 2023, sec. 2.1): 1F1B with W split from B; rank r defers r weight
// gradients so that every rank holds p micro-batches from F to W (the first rank, holding
// the most activations, no more than under 1F1B), and the deferred W fill the cool-down.
std::vector<std::vector<Op>> zb_h1(int pp, int m) {
  std::vector<std::vector<Op>> orders(static_cast<std::size_t>(pp));
  for (int r = 0; r < pp; ++r) {
    auto& o = orders[static_cast<std::size_t>(r)];
    const int warm = std::min(pp - r - 1, m);
    int w = 0;  // next weight gradient
    auto backward = [&](int i) {
      o.push_back(one(0, r, i, 'B'));
      if (i + 1 - w > r) o.push_back(one(0, r, w++, 'W'));
    };
    for (int i = 0; i < warm; ++i) o.push_back(one(0, r, i, 'F'));
    for (int i = warm; i < m; ++i) {
      o.push_back(one(0, r, i, 'F'));
      backward(i - warm);
    }
    for (int i = m - warm; i < m; ++i) backward(i);
    while (w < m) o.push_back(one(0, r, w++, 'W'));
  }
  return orders;
}

// Megatron-LM's interleaved 1F1B: virtual micro-batch k of a rank is chunk (k / pp) % v of
// micro-batch (k / (pp v)) pp + k % pp; backward takes the chunks in reverse.
std::vector<std::vector<Op>> interleaved(int pp, int v, int m) {
  std::vector<std::vector<Op>> orders(static_cast<std::size_t>(pp));
  auto list = [&](bool backward) {
    std::vector<std::pair<int, int>> seq;  // (chunk, micro)
    const int groups = (m + pp - 1) / pp;
    for (int g = 0; g < groups; ++g) {
      for (int c = 0; c < v; ++c) {
        for (int j = 0; j < pp; ++j) {
          const int micro = g * pp + j;
          if (micro < m) seq.push_back({backward ? v - 1 - c : c, micro});
        }
      }
    }
    return seq;
  };
  const auto fwd = list(false), bwd = list(true);
  const int total = static_cast<int>(fwd.size());
  for (int r = 0; r < pp; ++r) {
    auto& o = orders[static_cast<std::size_t>(r)];
    const int warm = std::min(2 * (pp - r - 1) + (v - 1) * pp, total);
    auto f = [&](int k) { o.push_back(one(0, fwd[static_cast<std::size_t>(k)].first * pp + r, fwd[static_cast<std::size_t>(k)].second, 'F')); };
    auto b = [&](int k) { o.push_back(bw(0, bwd[static_cast<std::size_t>(k)].first * pp + r, bwd[static_cast<std::size_t>(k)].second)); };
    for (int k = 0; k < warm; ++k) f(k);
    for (int k = warm; k < total; ++k) {
      f(k);
      b(k - warm);
    }
    for (int k = total - warm; k < total; ++k) b(k);
  }
  return orders;
}

// torch.distributed.pipelining's ScheduleInterleaved1F1B (pytorch/pytorch@1fd7abc
// torch/distributed/pipelining/schedules.py, _calculate_single_rank_operations and
// _get_1f1b_rank_ops): rank r's time steps are r empty ones, min((v - 1) k + 2 (p - 1 - r),
// m v) forwards (k = micro-batches per round, ceil(m / max(1, m / p))), empty steps until its
// first backward can arrive (v p + 2 (p - 1 - r) less the steps so far), then a forward and a
// whole backward at a time, and in the cool-down an empty step before each backward. Stage
// c p + r is chunk c of rank r, its micro-batches counted per stage.
std::vector<std::vector<std::optional<Key>>> torch_interleaved(int pp, int v, int m) {
  const int rounds = std::max(1, m / pp);
  const int per_round = (m + rounds - 1) / rounds;
  const int total = m * v;
  std::vector<std::vector<std::optional<Key>>> grid(static_cast<std::size_t>(pp));
  for (int r = 0; r < pp; ++r) {
    auto& g = grid[static_cast<std::size_t>(r)];
    const int warm = std::min((v - 1) * per_round + 2 * (pp - 1 - r), total);
    const int steady = total - warm;
    const int idle = std::max(0, v * pp + 2 * (pp - 1 - r) - (warm + r));  // until a backward can arrive
    std::vector<int> fwd_micro(static_cast<std::size_t>(pp * v), 0);
    std::vector<int> bwd_micro(fwd_micro.size(), 0);
    auto forward = [&](int op) {
      const int pos = ((op / per_round) % v) * pp + r;
      g.emplace_back(Key{0, pos, fwd_micro[static_cast<std::size_t>(pos)]++, 'F'});
    };
    auto backward = [&](int op) {
      const int pos = (v - 1 - ((op - warm) / per_round) % v) * pp + r;
      g.emplace_back(Key{0, pos, bwd_micro[static_cast<std::size_t>(pos)]++, 'B'});
    };
    g.resize(static_cast<std::size_t>(r));
    for (int op = 0; op < total + warm; ++op) {  // warm-up, steady pairs, cool-down
      if (op < warm) {
        forward(op);
        if (op == warm - 1) g.resize(g.size() + static_cast<std::size_t>(idle));
      } else if (op < warm + steady) {
        forward(op);
        backward(op);
      } else {
        g.emplace_back(std::nullopt);
        backward(op);
      }
    }
  }
  return grid;
}

// The eight steps of DualPipe.step / DualPipeV.step (deepseek-ai/DualPipe dualpipe.py,
// dualpipev.py) for one rank, in the step counts both share: `warm` = the rank's depth
// from the far end (steps 1, 3, 5, 7), `near` = its depth from its own end plus one (steps
// 2 and 6), `main` = the paired steps. `key(phase, kind)` names the next task of a phase
// (0 or 1); weight gradients of zero-bubble backwards wait in a queue for steps 3, 7, 8.
template <typename KeyOf>
std::vector<Op> dual_steps(int warm, int near, int main, KeyOf key) {
  std::vector<Op> o;
  std::deque<Key> wq;
  auto push = [&](const Op& op) { o.push_back(op); };
  auto f = [&](int phase) { return key(phase, 'F'); };
  auto b = [&](int phase, bool zb, Op& into) {
    const Key k = key(phase, 'B');
    into.add(k);
    Key w = k;
    w.kind = 'W';
    if (zb) {
      wq.push_back(w);
    } else {
      into.add(w);
    }
  };
  auto weight = [&]() {
    push(Op{wq.front()});
    wq.pop_front();
  };
  for (int i = 0; i < warm * 2; ++i) push(Op{f(0)});                     // step 1: nF0
  for (int i = 0; i < near; ++i) {                                     // step 2: nF0F1
    push(Op{f(0)});
    push(Op{f(1)});
  }
  for (int i = 0; i < warm; ++i) {                                     // step 3: nB1W1F1
    Op ks;
    b(1, true, ks);
    push(ks);
    weight();
    push(Op{f(1)});
  }
  for (int i = 0; i < main; ++i) {                                     // step 4: nF0B1F1B0
    Op a{f(0)};
    b(1, false, a);
    push(a);
    Op c{f(1)};
    b(0, false, c);
    push(c);
  }
  for (int i = 0; i < warm; ++i) {                                     // step 5: nB1F1B0
    Op a;
    b(1, false, a);
    push(a);
    Op c{f(1)};
    b(0, false, c);
    push(c);
  }
  const int q = near - 1;                                              // step 6: nB1B0,
  bool zb = false;                                                     // second half zero-bubble
  for (int i = 0; i < near; ++i) {
    if (i == near / 2 && q % 2 == 1) zb = true;
    Op a;
    b(1, zb, a);
    push(a);
    if (i == near / 2 && q % 2 == 0) zb = true;
    Op c;
    b(0, zb, c);
    push(c);
  }
  for (int i = 0; i < warm; ++i) {                                     // step 7: nWB0
    weight();
    Op c;
    b(0, true, c);
    push(c);
  }
  while (!wq.empty()) weight();                                        // step 8: nW
  return o;
}

// DualPipe: phase 0 is the rank's own direction for the first half of the ranks and the
// other one for the second half; each direction carries m / 2 micro-batches.
std::vector<std::vector<Op>> dualpipe(int pp, int m) {
  std::vector<std::vector<Op>> orders;
  const int H = pp / 2;
  for (int r = 0; r < pp; ++r) {
    const int hr = std::min(r, pp - 1 - r), second = r >= H ? 1 : 0;
    int next[2][2] = {{0, 0}, {0, 0}};  // [direction][F, B]
    auto key = [&](int phase, char kind) {
      const int d = phase ^ second;
      return Key{d, d == 0 ? r : pp - 1 - r, next[d][kind == 'F' ? 0 : 1]++, kind};
    };
    orders.push_back(dual_steps(H - hr - 1, hr + 1, m / 2 - pp + hr + 1, key));
  }
  return orders;
}

// DualPipeV: one V over 2 p stages, rank r holding stage r (phase 0, down) and stage
// 2 p - 1 - r (phase 1, up); every micro-batch runs both.
std::vector<std::vector<Op>> dualpipev(int pp, int m) {
  std::vector<std::vector<Op>> orders;
  for (int r = 0; r < pp; ++r) {
    int next[2][2] = {{0, 0}, {0, 0}};  // [phase][F, B]
    auto key = [&](int phase, char kind) {
      return Key{0, phase == 0 ? r : 2 * pp - 1 - r, next[phase][kind == 'F' ? 0 : 1]++, kind};
    };
    orders.push_back(dual_steps(pp - r - 1, r + 1, m - 2 * pp + r + 1, key));
  }
  return orders;
}

}  // namespace

Simulation simulate(Schedule schedule, const Pipeline& p, bool record) {
  const int pp = static_cast<int>(p.ranks.size());
  const int m = std::max(1, p.micro_batches);
  int vpp = 1;
  for (const auto& r : p.ranks) vpp = std::max(vpp, static_cast<int>(r.size()));
  // Bounded work and memory: beyond kMaxTasks tasks (three per micro-batch, chunk and rank)
  // the step is left to the closed form, which the caller keeps when the simulation is not ok.
  constexpr double kMaxTasks = 8e6;
  if (3.0 * m * vpp * std::max(1, pp) > kMaxTasks) {
    Simulation out;
    out.ok = false;
    out.error = "the schedule has more than 8 million tasks (" + std::to_string(m) + " micro-batches x " +
                std::to_string(vpp) + " chunks x " + std::to_string(pp) + " ranks); timed by the closed form";
    return out;
  }
  Sim sim(p, layout_of(schedule, pp, vpp), record);
  switch (schedule) {
    case Schedule::OneFOneB:
      sim.fixed(one_f_one_b(pp, m));
      break;
    case Schedule::Interleaved:
      if (p.lockstep) {
        // torch's grid holds together for whole rounds of pp micro-batches; otherwise its
        // time steps run a task before its input and the closed form times the step.
        if (!sim.steps(torch_interleaved(pp, vpp, m))) {
          sim.out.error = "torch's interleaved 1F1B time steps for " + std::to_string(m) + " micro-batches on " +
                          std::to_string(pp) + " ranks run a task before its input (its order is built for multiples of pp)";
        }
      } else {
        sim.fixed(interleaved(pp, vpp, m));
      }
      break;
    case Schedule::DualPipe:
      if (pp % 2 == 0 && m % 2 == 0 && m >= 2 * pp) {
        sim.fixed(dualpipe(pp, m));
      } else {
        sim.out.ok = false;
        sim.out.error = "DualPipe needs an even pp and an even number of micro-batches >= 2 pp";
      }
      break;
    case Schedule::ZeroBubble: {
      sim.fixed(zb_h1(pp, m));
      break;
    }
    case Schedule::DualPipeV: {
      if (m >= 2 * pp) {
        sim.fixed(dualpipev(pp, m));
      } else {
        sim.out.ok = false;
        sim.out.error = "DualPipeV needs at least 2 pp micro-batches";
      }
      break;
    }
  }
  if (record) {
    std::sort(sim.out.events.begin(), sim.out.events.end(),
              [](const Event& a, const Event& b) { return a.rank != b.rank ? a.rank < b.rank : a.start < b.start; });
  }
  return sim.out;
}

}  // namespace paraplan::schedule
