#include "cost/comm.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "schedule/layout.hpp"

namespace paraplan::cost {

double dma_compute_share(const HardwareSpec& hw) {
  const DeviceSpec& d = hw.device;
  return d.comm_units > 0 && d.compute_units > 0 ? std::min(1.0, static_cast<double>(d.comm_units) / d.compute_units)
                                                 : 0.0;
}

bool ep_overlapped(const Strategy& s) {
  return s.overlap.ep && (s.parallel.pp > 1 || schedule::micro_batches(s) > 1);
}

bool ep_again(const Strategy& s, const LayerEstimate& layer) {
  if (s.training.recompute.mode == RecomputeMode::Op) return false;
  for (const OpEstimate& op : layer.ops) {
    // the MoE block's permutation (`mtp.permute` in the MTP module's block)
    if (op.phase == "recompute" && (op.name == "permute" || op.name.ends_with(".permute"))) return true;
  }
  return false;
}

EpTransfers ep_transfers(const HardwareSpec& hw, const std::vector<CommOpEstimate>& ops, bool again) {
  EpTransfers ep;
  const bool units = dma_compute_share(hw) > 0;
  for (const CommOpEstimate& op : ops) {
    if (op.group != "ep") continue;
    const bool fwd = op.phase == "forward";
    // A forward exchange run again in the backward counts twice, the second in the backward.
    const double times = fwd && again ? 2.0 : 1.0;
    (fwd ? ep.forward_s : ep.backward_s) += op.time_s;
    if (fwd && again) ep.backward_s += op.time_s;
    // On a device whose communication kernels hold a few of its compute units (`comm_units`:
    // DeepEP's SMs, NCCL's channels), a stage that holds a share of them hides under compute
    // that runs on the rest, and one that holds them all adds. On others (no comm_units:
    // BR166) a stage's share is the part of its time the compute units are busy with it, and
    // that adds.
    if (units) {
      double engine = 0;
      for (const CommStageEstimate& st : op.stages) {
        if (st.compute_share >= 1) {
          engine += st.time_s;
        } else if (st.compute_share > 0) {
          ep.units = std::max(ep.units, st.compute_share);
        }
      }
      ep.engine_s += times * std::min(engine, op.time_s);
    } else {
      ep.engine_s += times * std::min(op.compute_s, op.time_s);
    }
  }
  ep.time_s = ep.forward_s + ep.backward_s;
  return ep;
}

double ep_exposed(const EpTransfers& ep, double compute_s, bool overlapped, double overlap_share) {
  if (!overlapped || ep.time_s <= 0) return ep.time_s;
  const double dma = ep.time_s - ep.engine_s;
  // (a share is below 1 by construction; 0.9 keeps a mistyped comm_units from stretching
  // the window without bound)
  const double window = dma > 0 ? compute_s / (1.0 - std::min(ep.units, 0.9)) : compute_s;
  const double hideable = std::min(std::max(dma, 0.0), window);
  return ep.engine_s + (window - compute_s) + std::max(0.0, dma - window) + (1.0 - overlap_share) * hideable;
}


const char* name(Algorithm a) {
  switch (a) {
    case Algorithm::Ring: return "ring";
    case Algorithm::Hierarchical: return "hierarchical";
    case Algorithm::HalvingDoubling: return "halving_doubling";
    case Algorithm::Tree: return "tree";
    case Algorithm::Direct: return "direct";
  }
  return "?";
}

const char* name(Collective c) {
  switch (c) {
    case Collective::AllReduce: return "all_reduce";
    case Collective::AllGather: return "all_gather";
    case Collective::ReduceScatter: return "reduce_scatter";
    case Collective::AllToAll: return "all_to_all";
    case Collective::SendRecv: return "send_recv";
    case Collective::Broadcast: return "broadcast";
  }
  return "?";
}

int GroupSpan::outer() const {
  for (int j = static_cast<int>(members.size()) - 1; j >= 0; --j) {
    if (fanout(static_cast<std::size_t>(j)) > 1) return j;
  }
  return -1;
}

GroupSpan place(const HardwareSpec& hw, int size, long long stride, bool dies) {
  GroupSpan g;
  g.size = std::max(1, size);
  g.dies = dies && hw.device.dies > 1;
  stride = std::max(1LL, stride);
  long long capacity = 1;
  int prev = 1;
  for (std::size_t i = 0; i < hw.tiers.size(); ++i) {
    const TierSpec& t = hw.tiers[i];
    if (t.name == "die" && !g.dies) continue;
    capacity *= t.size;
    long long m = stride >= capacity ? 1 : std::min<long long>(g.size, capacity / stride);
    // The group splits evenly over the units of this tier it spans: the most members a unit
    // can hold that divide the group and are whole units of the tier below (a 128-rank group
    // on NVL72's 72-GPU domains is two domains of 64, not 72 and 56).
    const bool cluster = i + 1 == hw.tiers.size();  // the cluster holds every rank
    if (!cluster && m < g.size) {  // spans several units (a group that fits is one)
      int k = static_cast<int>(m);
      while (k > prev && (g.size % k != 0 || k % prev != 0)) --k;
      m = k;
    }
    const int members = cluster ? g.size : static_cast<int>(std::max<long long>(prev, m));
    g.tier.push_back(static_cast<int>(i));
    g.members.push_back(members);
    prev = members;
  }
  return g;
}

LevelView level_view(const TierSpec& t, int nodes) {
  if (t.levels.empty()) return {1.0, t.latency_s};
  for (const FabricLevel& l : t.levels) {
    if (nodes <= l.nodes) return {1.0 / l.oversubscription, l.latency_s};
  }
  return {1.0 / t.levels.back().oversubscription, t.levels.back().latency_s};
}

namespace {

// A curve's value at x: its end values beyond its ends, between two rows linear in x, or in
// log2(x) when `log_scale` (message sizes).
double curve_at(const std::vector<SizePoint>& curve, double x, bool log_scale) {
  if (x <= curve.front().bytes) return curve.front().efficiency;
  if (x >= curve.back().bytes) return curve.back().efficiency;
  std::size_t hi = 1;
  while (curve[hi].bytes < x) ++hi;
  const SizePoint& a = curve[hi - 1];
  const SizePoint& b = curve[hi];
  const double w = log_scale ? std::log2(x / a.bytes) / std::log2(b.bytes / a.bytes) : (x - a.bytes) / (b.bytes - a.bytes);
  return a.efficiency + w * (b.efficiency - a.efficiency);
}

}  // namespace

double size_fraction(const std::vector<SizePoint>& se, double bytes) {
  if (se.empty() || bytes <= 0) return 1.0;
  return curve_at(se, bytes, true);
}

double tier_bandwidth(const TierSpec& t, double bytes) {
  return t.bw_bytes_per_s * size_fraction(t.size_efficiency, bytes);
}

const std::vector<SizePoint>& size_curve(const CollectiveOverride& o, const TierSpec& t) {
  return o.size_efficiency.empty() ? t.size_efficiency : o.size_efficiency;
}

double override_bandwidth(const CollectiveOverride& o, const TierSpec& t, double bytes) {
  return o.bus_bw_bytes_per_s * size_fraction(size_curve(o, t), bytes);
}

double ranks_fraction(const CollectiveOverride& o, int group) {
  if (o.ranks_efficiency.empty() || group <= 0) return 1.0;
  return curve_at(o.ranks_efficiency, group, false);
}

namespace {

// Ratio of bus volume to size: (G-1)/G for AG, RS, A2A; 2(G-1)/G for AR; 1 for the rest.
double bus_factor(Collective op, int g) {
  double f = (g - 1) / static_cast<double>(g);
  switch (op) {
    case Collective::AllReduce: return 2 * f;
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll: return f;
    case Collective::SendRecv:
    case Collective::Broadcast: return 1.0;
  }
  return 1.0;
}

struct Crossing {
  int pos;          // position in the span
  const TierSpec* tier;
  int fanout;       // D_j
  int inner;        // m_{j-1}
  int sharers;      // ranks sharing one rank's link: the dies of a device above the die tier
  double fixed_bw = 0;  // a measured busbw for the whole collective up to this tier (0 = model)
  double busy = 0;      // fraction of compute its transfers occupy (compute-engine tiers/figures)
  double bw_factor = 1;  // the fabric level's share of the tier bandwidth (oversubscription)
  double latency = 0;    // the tier's, or the fabric level's the group reaches
  const std::vector<SizePoint>* fixed_curve = nullptr;  // fixed_bw's size curve
};

// The tiers a group crosses. When an inner tier has a measured figure for `op`, the
// crossings up to it become one stage at that figure: the measurement covers the whole
// collective inside that tier's unit (e.g. the BR166 node's 16-die all-gather), and the
// outer tiers are modelled around it.
std::vector<Crossing> crossings(const HardwareSpec& hw, const GroupSpan& g, Collective op) {
  std::vector<Crossing> out;
  for (std::size_t j = 0; j < g.members.size(); ++j) {
    int d = g.fanout(j);
    if (d > 1) {
      const TierSpec& t = hw.tiers[static_cast<std::size_t>(g.tier[j])];
      int sharers = (g.dies && t.name != "die") ? std::max(1, hw.device.dies) : 1;
      out.push_back({static_cast<int>(j), &t, d, j == 0 ? 1 : g.members[j - 1], sharers, 0.0,
                     t.engine == Engine::Compute ? 1.0 : dma_compute_share(hw)});
    }
  }
  // A cluster tier with switch levels: the group's nodes (its fan-out there) pick the level.
  for (Crossing& x : out) {
    const LevelView v = level_view(*x.tier, x.fanout);
    x.bw_factor = v.bw_factor;
    x.latency = v.latency_s;
  }
  for (std::size_t i = out.size(); i-- > 1;) {
    const auto& o = out[i - 1].tier->collective(op);
    if (!o) continue;
    const int m = g.members[static_cast<std::size_t>(out[i - 1].pos)];
    Crossing merged = out[i - 1];
    merged.fanout = m;
    merged.inner = 1;
    merged.sharers = 1;
    merged.fixed_bw = o->algbw ? o->bus_bw_bytes_per_s * bus_factor(op, m) : o->bus_bw_bytes_per_s;
    merged.fixed_curve = &size_curve(*o, *merged.tier);
    merged.busy = o->engine == Engine::Compute ? o->compute_share : dma_compute_share(hw);
    std::vector<Crossing> rest(out.begin() + static_cast<std::ptrdiff_t>(i), out.end());
    out = {merged};
    out.insert(out.end(), rest.begin(), rest.end());
    break;
  }
  return out;
}

// Per-rank bandwidth of a crossing for a message of `bytes`: full meshes drive D - 1 links;
// the dies of a device share its links to the tiers above the die tier (the size
// efficiency is that of the device's combined message).
double crossing_bw(const Crossing& c, double bytes) {
  if (c.fixed_bw > 0) return c.fixed_bw * size_fraction(*c.fixed_curve, bytes);
  double bw = c.bw_factor * tier_bandwidth(*c.tier, bytes * c.sharers) / c.sharers;
  return c.tier->topology == Topology::FullMesh ? bw * (c.fanout - 1) : bw;
}

CollectiveCost model_time(const std::vector<Crossing>& xs, Collective op, double S, int G,
                          Algorithm algo) {
  CollectiveCost c;
  c.op = op;
  c.algorithm = algo;
  c.bytes = S;
  const double passes = op == Collective::AllReduce ? 2.0 : 1.0;  // RS + AG
  const Crossing& outer = xs.back();
  double bw_term = 0, latency = 0;
  // A calibrated tier (`calibrate profile`) moves this collective's data `calibration` times
  // slower.
  auto slower = [&](std::size_t i) { return xs[i].tier->calibration[static_cast<std::size_t>(op)]; };
  for (const Crossing& x : xs) {
    // Bytes one rank moves across this tier in the hierarchical decomposition; a message
    // between two ranks crosses whole.
    double vol = op == Collective::AllToAll   ? S * (x.inner * (x.fanout - 1)) / G
                 : op == Collective::SendRecv ? S
                                              : passes * (x.fanout - 1) / static_cast<double>(x.fanout) * S / x.inner;
    c.tiers.push_back({x.tier->name, vol, 0.0});
  }
  switch (algo) {
    case Algorithm::Ring: {
      double v = bus_factor(op, G) * S;
      double worst = 0;
      for (std::size_t i = 0; i < xs.size(); ++i) {
        double t = v / (crossing_bw(xs[i], v) * xs[i].inner) * slower(i);
        c.tiers[i].time_s = t;
        worst = std::max(worst, t);
      }
      bw_term = worst;
      latency = passes * (G - 1) * outer.latency;
      break;
    }
    case Algorithm::Hierarchical:
    case Algorithm::HalvingDoubling:
    case Algorithm::Direct: {
      double sum = 0, worst = 0;
      for (std::size_t i = 0; i < xs.size(); ++i) {
        double t = c.tiers[i].bytes / crossing_bw(xs[i], c.tiers[i].bytes) * slower(i);
        c.tiers[i].time_s = t;
        sum += t;
        worst = std::max(worst, t);
        double steps = algo == Algorithm::HalvingDoubling ? std::ceil(std::log2(xs[i].fanout))
                       : algo == Algorithm::Direct        ? 1.0
                                                           : xs[i].fanout - 1.0;
        latency += passes * steps * xs[i].latency;
      }
      bw_term = algo == Algorithm::HalvingDoubling ? sum : worst;
      break;
    }
    case Algorithm::Tree: {
      double worst = 0;
      for (std::size_t i = 0; i < xs.size(); ++i) {
        double t = passes * S / crossing_bw(xs[i], S) * slower(i);
        c.tiers[i].time_s = t;
        worst = std::max(worst, t);
      }
      bw_term = worst;
      latency = passes * std::ceil(std::log2(G)) * outer.latency;
      break;
    }
  }
  c.time_s = bw_term + latency;
  // Compute-engine stages (an SPC collective, a compute-engine tier) occupy the compute
  // units for their share of the time; the rest runs beside compute (the seeds' SPC = sum,
  // DMA = max rule, applied per stage).
  double busy = 0, staged = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    busy += c.tiers[i].time_s * xs[i].busy;
    staged += c.tiers[i].time_s;
  }
  c.compute_share = staged > 0 ? std::min(1.0, busy / staged) : 0.0;
  bool compute_engine = false;
  for (const Crossing& x : xs) compute_engine = compute_engine || x.tier->engine == Engine::Compute || x.busy >= 1.0;
  c.engine = compute_engine ? Engine::Compute : outer.tier->engine;
  return c;
}

std::vector<Algorithm> candidates(Collective op) {
  switch (op) {
    case Collective::AllReduce:
      return {Algorithm::Ring, Algorithm::Hierarchical, Algorithm::HalvingDoubling, Algorithm::Tree};
    case Collective::AllGather:
    case Collective::ReduceScatter:
      return {Algorithm::Ring, Algorithm::Hierarchical, Algorithm::HalvingDoubling};
    case Collective::Broadcast: return {Algorithm::Ring, Algorithm::Tree};
    case Collective::AllToAll:
    case Collective::SendRecv: return {Algorithm::Direct};
  }
  return {Algorithm::Ring};
}

}  // namespace

CollectiveCost measured_collective(const HardwareSpec& hw, const TierSpec& t, const CollectiveOverride& o,
                                   Collective op, double bytes, int group, double bw_factor, double latency_s) {
  CollectiveCost c;
  c.op = op;
  c.bytes = bytes;
  c.algorithm = Algorithm::Direct;
  const double bw = bw_factor * override_bandwidth(o, t, bytes) * ranks_fraction(o, group);
  const double volume = o.algbw ? bytes : bus_factor(op, group) * bytes;
  c.time_s = volume / bw * t.calibration[static_cast<std::size_t>(op)] + latency_s;
  c.engine = o.engine;
  c.compute_share = o.engine == Engine::Compute ? o.compute_share : dma_compute_share(hw);
  c.measured = true;
  c.tiers.push_back({t.name, bus_factor(op, group) * bytes, c.time_s});
  return c;
}

CollectiveCost collective(const HardwareSpec& hw, Collective op, double bytes, const GroupSpan& group,
                          const Algorithm* fixed) {
  CollectiveCost best;
  best.op = op;
  best.bytes = bytes;
  const int G = group.size;
  if (G <= 1 || bytes <= 0) return best;
  std::vector<Crossing> xs = crossings(hw, group, op);
  if (xs.empty()) return best;
  // A measured figure for this op on the group's outermost tier replaces the model.
  const TierSpec& outer = *xs.back().tier;
  if (const auto& o = outer.collective(op); o && fixed == nullptr) {
    return measured_collective(hw, outer, *o, op, bytes, G, xs.back().bw_factor, xs.back().latency);
  }
  // `auto` chooses among the algorithms the hardware's library implements (all when it
  // lists none, or when none of its list applies to this op).
  auto offered = [&](Algorithm a) {
    if (fixed != nullptr || hw.algorithms.empty() || a == Algorithm::Direct) return true;
    for (CollectiveAlgorithm c : hw.algorithms) {
      if ((c == CollectiveAlgorithm::Ring && a == Algorithm::Ring) ||
          (c == CollectiveAlgorithm::Hierarchical && a == Algorithm::Hierarchical) ||
          (c == CollectiveAlgorithm::HalvingDoubling && a == Algorithm::HalvingDoubling) ||
          (c == CollectiveAlgorithm::Tree && a == Algorithm::Tree)) {
        return true;
      }
    }
    return false;
  };
  std::vector<Algorithm> choices;
  for (Algorithm a : candidates(op)) {
    if (offered(a)) choices.push_back(a);
  }
  if (choices.empty()) choices = candidates(op);
  bool first = true;
  for (Algorithm a : choices) {
    if (fixed != nullptr && a != *fixed) continue;
    CollectiveCost c = model_time(xs, op, bytes, G, a);
    if (first || c.time_s < best.time_s) best = c;
    first = false;
  }
  if (first) best = model_time(xs, op, bytes, G, *fixed);  // a fixed algorithm the op does not list

  return best;
}

CollectiveCost send_recv(const HardwareSpec& hw, double bytes, long long stride, bool dies) {
  GroupSpan pair = place(hw, 2, stride, dies);
  return collective(hw, Collective::SendRecv, bytes, pair);
}

}  // namespace paraplan::cost
