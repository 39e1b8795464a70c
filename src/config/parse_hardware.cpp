#include <optional>
#include <set>
#include <string>

#include "config/parse.hpp"
#include "config/reader.hpp"

namespace paraplan::config {

const EnumNames<Collective> kCollectiveNames{{"all_reduce", Collective::AllReduce},
                                             {"all_gather", Collective::AllGather},
                                             {"reduce_scatter", Collective::ReduceScatter},
                                             {"all_to_all", Collective::AllToAll},
                                             {"send_recv", Collective::SendRecv},
                                             {"broadcast", Collective::Broadcast}};

namespace {

using units::Quantity;

const EnumNames<Topology> kTopologyNames{{"switch", Topology::Switch},
                                         {"full_mesh", Topology::FullMesh},
                                         {"ring", Topology::Ring},
                                         {"pairs", Topology::Pairs}};
const EnumNames<Engine> kEngineNames{{"dma", Engine::Dma}, {"compute", Engine::Compute}};
const EnumNames<bool> kConventionNames{{"busbw", false}, {"algbw", true}};
const EnumNames<LinkPairing> kPairingNames{{"node_pairs", LinkPairing::NodePairs},
                                           {"vnode_pairs", LinkPairing::VnodePairs}};
const EnumNames<Dtype> kDtypeNames{{"bf16", Dtype::Bf16},
                                   {"fp16", Dtype::Fp16},
                                   {"fp8", Dtype::Fp8},
                                   {"fp32", Dtype::Fp32},
                                   {"tf32", Dtype::Tf32}};
const EnumNames<GemmKind> kGemmNames{{"bf16", GemmKind::Bf16},
                                     {"fp8", GemmKind::Fp8},
                                     {"grouped_bf16", GemmKind::GroupedBf16},
                                     {"grouped_fp8", GemmKind::GroupedFp8}};


// A list of fixed-length rows: [[a, b, ...], ...]. Calls `row` for every well-formed row.
template <typename F>
void read_rows(const Node* list, std::string_view what, std::size_t width, std::string_view shape,
               Diags& diags, F row) {
  if (list == nullptr) return;
  if (!list->is_seq()) {
    diags.error(list->loc, "`" + std::string(what) + "` must be a list of " + std::string(shape));
    return;
  }
  for (const Node& item : list->items) {
    if (!item.is_seq() || item.items.size() != width) {
      diags.error(item.loc, "each entry of `" + std::string(what) + "` must be " +
                                std::string(shape));
      continue;
    }
    row(item);
  }
}

GemmTable read_gemm_table(const Node& node, const std::string& path, Diags& diags) {
  GemmTable t;
  MapReader r(&node, diags, path);
  if (auto d = r.fraction("default")) t.default_efficiency = *d;
  ScalarReader s(diags);
  read_rows(r.get("points"), r.dotted("points"), 4, "[m, n, k, efficiency]", diags,
            [&](const Node& row) {
              auto m = s.integer(row.items[0], r.dotted("points") + " m", 1, 1LL << 40);
              auto n = s.integer(row.items[1], r.dotted("points") + " n", 1, 1LL << 40);
              auto k = s.integer(row.items[2], r.dotted("points") + " k", 1, 1LL << 40);
              auto e = s.fraction(row.items[3], r.dotted("points") + " efficiency");
              if (m && n && k && e) {
                t.points.push_back(GemmPoint{static_cast<double>(*m), static_cast<double>(*n),
                                             static_cast<double>(*k), *e});
              }
            });
  r.finish();
  return t;
}

const EnumNames<MemClass> kMemClassNames{{"elementwise", MemClass::Elementwise},
                                          {"norm", MemClass::Norm},
                                          {"cast", MemClass::Cast},
                                          {"permute", MemClass::Permute},
                                          {"softmax", MemClass::Softmax},
                                          {"reduction", MemClass::Reduction},
                                          {"copy", MemClass::Copy}};
const EnumNames<bool> kGroupedNames{{"persistent", false}, {"loop", true}};

GemmKernelSpec read_gemm_kernel(const Node& node, Diags& diags) {
  GemmKernelSpec g;
  MapReader r(&node, diags, "device.gemm_kernel");
  {
    const Node* f = r.get("peak_fraction", Need::Required);
    MapReader p(f, diags, "device.gemm_kernel.peak_fraction", r.loc());
    for (const auto& [spelling, dtype] : kDtypeNames) {
      Need need = (dtype == Dtype::Bf16 && f != nullptr) ? Need::Required : Need::Optional;
      if (auto v = p.fraction(spelling, need)) g.peak_fraction[static_cast<int>(dtype)] = *v;
    }
    p.finish();
  }
  ScalarReader s(diags);
  read_rows(r.get("tiles", Need::Required), r.dotted("tiles"), 3, "[m, n, relative efficiency]", diags,
            [&](const Node& row) {
              auto m = s.integer(row.items[0], r.dotted("tiles") + " m", 1, 4096);
              auto n = s.integer(row.items[1], r.dotted("tiles") + " n", 1, 4096);
              auto e = s.fraction(row.items[2], r.dotted("tiles") + " efficiency");
              if (m && n && e) g.tiles.push_back(GemmTile{static_cast<int>(*m), static_cast<int>(*n), *e});
            });
  if (auto v = r.number("k_overhead", 0, 1e6)) g.k_overhead = *v;
  if (auto v = r.count("max_split_k", Need::Optional, 1, 64)) g.max_split_k = *v;
  if (auto v = r.fraction("dgrad")) g.dgrad = *v;
  // wgrad: one fraction, or {bf16: x, fp8: y} where the FP8 weight-gradient kernel differs
  if (const Node* w = r.get("wgrad"); w != nullptr && w->is_map()) {
    MapReader p(w, diags, "device.gemm_kernel.wgrad");
    if (auto v = p.fraction("bf16", Need::Required)) g.wgrad = *v;
    if (auto v = p.fraction("fp8")) g.wgrad_fp8 = *v;
    p.finish();
  } else if (auto v = r.fraction("wgrad")) {
    g.wgrad = *v;
  }
  if (auto v = r.enumeration("grouped", kGroupedNames)) g.grouped_loop = *v;
  r.finish();
  return g;
}

std::vector<AttentionKernelSpec> read_attention(const Node& list, Diags& diags) {
  std::vector<AttentionKernelSpec> out;
  if (!list.is_seq()) {
    diags.error(list.loc, "`device.attention` must be a list of kernels ({name, forward, backward, ...})");
    return out;
  }
  for (const Node& item : list.items) {
    const std::string path = "device.attention[" + std::to_string(out.size()) + "]";
    MapReader r(&item, diags, path);
    AttentionKernelSpec k;
    if (auto v = r.text("name", Need::Required)) k.name = *v;
    if (auto v = r.fraction("forward", Need::Required)) k.forward = *v;
    if (auto v = r.fraction("backward", Need::Required)) k.backward = *v;
    if (auto v = r.number("block", 1, 4096)) k.block = *v;
    if (auto v = r.number("forward_overhead", 0, 1e6)) k.forward_overhead = *v;
    if (auto v = r.number("backward_overhead", 0, 1e6)) k.backward_overhead = *v;
    if (auto v = r.number("head_dim", 1, 4096)) k.head_dim = *v;
    if (auto v = r.number("forward_softmax", 0, 4096)) k.forward_softmax = *v;
    if (auto v = r.number("backward_softmax", 0, 4096)) k.backward_softmax = *v;
    if (auto v = r.number("forward_wide_head", 0, 4)) k.forward_wide_head = *v;
    if (auto v = r.number("backward_wide_head", 0, 4)) k.backward_wide_head = *v;
    if (auto v = r.enumeration("precision", EnumNames<bool>{{"bf16", false}, {"fp8", true}})) k.fp8 = *v;
    if (auto v = r.boolean("backward_window")) k.backward_window = *v;
    r.finish();
    for (const AttentionKernelSpec& other : out) {
      if (other.name == k.name && !k.name.empty()) {
        diags.error(item.loc, "`device.attention` names kernel `" + k.name + "` twice");
      }
    }
    out.push_back(std::move(k));
  }
  return out;
}

DeviceSpec read_device(MapReader& root, Diags& diags) {
  DeviceSpec d;
  const Node* node = root.get("device", Need::Required);
  MapReader r(node, diags, "device", root.loc());
  if (node == nullptr) return d;
  if (auto v = r.text("name")) d.name = *v;
  if (auto v = r.count("dies", Need::Optional, 1, 64)) d.dies = *v;
  if (auto v = r.quantity("memory", Quantity::Size, Need::Required)) d.memory_bytes = *v;
  if (auto v = r.quantity("memory_bandwidth", Quantity::Rate, Need::Required)) {
    d.memory_bw_bytes_per_s = *v;
  }
  {
    const Node* peaks = r.get("peak_flops", Need::Required);
    MapReader p(peaks, diags, "device.peak_flops", r.loc());
    for (const auto& [spelling, dtype] : kDtypeNames) {
      Need need = (dtype == Dtype::Bf16 && peaks != nullptr) ? Need::Required : Need::Optional;
      if (auto v = p.quantity(spelling, Quantity::Compute, need)) {
        d.peak_flop_per_s[static_cast<int>(dtype)] = *v;
      }
    }
    p.finish();
  }
  if (const Node* tables = r.get("gemm_efficiency")) {
    MapReader g(tables, diags, "device.gemm_efficiency");
    for (const auto& [spelling, kind] : kGemmNames) {
      if (const Node* t = g.get(spelling)) {
        d.gemm[static_cast<int>(kind)] = read_gemm_table(*t, g.dotted(spelling), diags);
      }
    }
    g.finish();
  }
  if (auto v = r.fraction("memory_bound_efficiency", Need::Required)) d.memory_bound_efficiency = *v;
  if (const Node* classes = r.get("memory_bound")) {
    MapReader c(classes, diags, "device.memory_bound");
    for (const auto& [spelling, cls] : kMemClassNames) {
      if (auto v = c.fraction(spelling)) d.memory_bound[static_cast<int>(cls)] = *v;
    }
    c.finish();
  }
  if (auto v = r.fraction("attention_efficiency")) d.attention_efficiency = *v;
  if (const Node* a = r.get("attention")) d.attention = read_attention(*a, diags);
  if (d.attention.empty() && d.attention_efficiency > 0) {
    // The legacy single figure: one kernel at that fraction in both passes.
    d.attention.push_back(AttentionKernelSpec{"flash", d.attention_efficiency, d.attention_efficiency, 128, 0, 0});
  }
  if (auto v = r.count("compute_units", Need::Optional, 1, 1 << 20)) d.compute_units = *v;
  if (const Node* g = r.get("gemm_kernel")) {
    d.gemm_kernel = read_gemm_kernel(*g, diags);
    if (d.compute_units == 0) {
      diags.error(g->loc, "`device.gemm_kernel` needs `device.compute_units` (SMs or SPCs per device) for its waves");
    }
  }
  if (auto v = r.quantity("kernel_overhead", Quantity::Time, Need::Required, true)) {
    d.kernel_overhead_s = *v;
  }
  if (auto v = r.quantity("host_sync", Quantity::Time, Need::Optional, true)) d.host_sync_s = *v;
  if (auto v = r.quantity("host_issue", Quantity::Time, Need::Optional, true)) d.host_issue_s = *v;
  if (auto v = r.number("launches_per_kernel", 0.01, 100.0)) d.launches_per_kernel = *v;
  if (auto v = r.count("comm_units", Need::Optional, 0, 1 << 20)) d.comm_units = *v;
  if (auto v = r.quantity("memory_reserve", Quantity::Size, Need::Optional, true)) {
    d.memory_reserve_bytes = *v;
  }
  if (d.memory_bytes > 0 && d.memory_reserve_bytes >= d.memory_bytes) {
    diags.error(r.get("memory_reserve")->loc,
                "`device.memory_reserve` leaves no memory: it must be below `device.memory` (" +
                    units::format_size(d.memory_bytes) + ")");
  }
  r.finish();
  return d;
}

// `key`: [x, fraction] rows with x increasing, x read by `read_x` (`what` / `plural` name it
// in messages: size / sizes, ranks / ranks).
template <typename ReadX>
void read_curve(MapReader& r, Diags& diags, const char* key, const std::string& what, const char* plural,
                ReadX read_x, std::vector<SizePoint>& out) {
  ScalarReader s(diags);
  const std::string dotted = r.dotted(key);
  read_rows(r.get(key), dotted, 2, "[" + what + ", fraction]", diags, [&](const Node& row) {
    std::optional<double> x = read_x(s, row.items[0], dotted + " " + what);
    auto eff = s.fraction(row.items[1], dotted + " fraction");
    if (!x || !eff) return;
    if (!out.empty() && *x <= out.back().bytes) {
      diags.error(row.items[0].loc, "`" + dotted + "` " + plural + " must increase from row to row");
      return;
    }
    out.push_back(SizePoint{*x, *eff});
  });
}

// `size_efficiency`: [size, fraction] rows with sizes that increase.
void read_size_curve(MapReader& r, Diags& diags, std::vector<SizePoint>& out) {
  read_curve(r, diags, "size_efficiency", "size", "sizes", [](const ScalarReader& s, const Node& n, const std::string& what) {
    return s.quantity(n, what, Quantity::Size, false);
  }, out);
}

// `ranks_efficiency`: [ranks, fraction] rows, the ranks (groups of 2 or more) increasing.
void read_ranks_curve(MapReader& r, Diags& diags, std::vector<SizePoint>& out) {
  read_curve(r, diags, "ranks_efficiency", "ranks", "ranks", [](const ScalarReader& s, const Node& n, const std::string& what) {
    const std::optional<long long> v = s.integer(n, what, 2, 1 << 20);
    return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
  }, out);
}

CollectiveOverride read_override(const Node& node, const std::string& path, Diags& diags) {
  CollectiveOverride o;
  MapReader r(&node, diags, path);
  read_size_curve(r, diags, o.size_efficiency);
  read_ranks_curve(r, diags, o.ranks_efficiency);
  if (auto v = r.quantity("bandwidth", Quantity::Rate, Need::Required)) o.bus_bw_bytes_per_s = *v;
  if (auto v = r.enumeration("engine", kEngineNames)) o.engine = *v;
  if (auto v = r.enumeration("convention", kConventionNames)) o.algbw = *v;
  if (auto v = r.fraction("compute_share")) {
    o.compute_share = *v;
    const Node* share = r.get("compute_share");
    const Node* engine = r.get("engine");
    // An overlay that switches an inherited compute-engine figure to `engine: dma` changes
    // the engine, and the share it inherited no longer applies; a share written beside a
    // non-compute engine in one file is a mistake.
    const bool inherited = engine != nullptr && share->loc.source != engine->loc.source;
    if (o.engine != Engine::Compute && !inherited) {
      diags.error(share->loc, "`" + r.dotted("compute_share") + "` only applies with `engine: compute`");
    }
    if (o.engine != Engine::Compute) o.compute_share = 1.0;
  }
  r.finish();
  return o;
}

TierSpec read_tier(const Node& node, const std::string& path, Diags& diags) {
  TierSpec t;
  MapReader r(&node, diags, path);
  if (auto v = r.text("name", Need::Required)) t.name = *v;
  if (auto v = r.count("size", Need::Required, 1, 1 << 20)) t.size = *v;
  r.known("devices");  // checked against the sizes by the caller
  if (auto v = r.enumeration("topology", kTopologyNames)) t.topology = *v;
  if (auto v = r.quantity("bandwidth", Quantity::Rate, Need::Required)) t.bw_bytes_per_s = *v;
  if (auto v = r.quantity("latency", Quantity::Time, Need::Required, true)) t.latency_s = *v;
  if (auto v = r.enumeration("engine", kEngineNames)) t.engine = *v;
  if (auto v = r.number("service_cv", 0.0, 100.0)) t.service_cv = *v;
  if (auto v = r.count("partner_xor", Need::Optional, 1, 1 << 20)) {
    t.partner_xor = *v;
    if (t.topology != Topology::Pairs) {
      diags.error(r.get("partner_xor")->loc, "`" + r.dotted("partner_xor") + "` only applies with `topology: pairs`");
    }
  }
  if (auto v = r.boolean("rails")) t.rails = *v;
  read_size_curve(r, diags, t.size_efficiency);
  if (const Node* d = r.get("deepep")) t.deepep = read_override(*d, r.dotted("deepep"), diags);
  if (const Node* levels = r.get("levels")) {
    if (!levels->is_seq() || levels->items.empty()) {
      diags.error(levels->loc, "`" + r.dotted("levels") + "` must be a list of switch levels {name, nodes, latency, oversubscription}");
    } else {
      for (std::size_t i = 0; i < levels->items.size(); ++i) {
        MapReader l(&levels->items[i], diags, r.dotted("levels") + "[" + std::to_string(i) + "]");
        FabricLevel f;
        if (auto v = l.text("name", Need::Required)) f.name = *v;
        if (auto v = l.count("nodes", Need::Required, 1, 1 << 24)) f.nodes = *v;
        if (auto v = l.quantity("latency", Quantity::Time, Need::Required, true)) f.latency_s = *v;
        if (auto v = l.number("oversubscription", 1.0, 1e3)) f.oversubscription = *v;
        l.finish();
        if (!t.levels.empty() && f.nodes <= t.levels.back().nodes) {
          diags.error(levels->items[i].loc, "`" + r.dotted("levels") + "` must hold more nodes from level to level");
        }
        t.levels.push_back(std::move(f));
      }
    }
  }
  if (const Node* coll = r.get("collectives")) {
    MapReader c(coll, diags, r.dotted("collectives"));
    for (const auto& [spelling, op] : kCollectiveNames) {
      if (const Node* o = c.get(spelling)) {
        t.collectives[static_cast<int>(op)] = read_override(*o, c.dotted(spelling), diags);
      }
    }
    c.finish();
  }
  r.finish();
  return t;
}

// A pairs tier's partner mask must send every device of a unit to a device of the other
// sub-unit of the same unit (the device graph of `paraplan topology` follows it).
void check_partners(const Node& tiers, const HardwareSpec& hw, Diags& diags) {
  const std::size_t first = (!hw.tiers.empty() && hw.tiers.front().name == "die") ? 1 : 0;
  long long sub = 1;  // devices per unit of the tier below
  for (std::size_t i = first; i + 1 < hw.tiers.size() && i < tiers.items.size(); ++i) {
    const TierSpec& t = hw.tiers[i];
    const long long unit = std::min<long long>(sub * t.size, 1 << 20);
    if (t.partner_xor > 0) {
      for (long long j = 0; j < unit; ++j) {
        const long long p = j ^ t.partner_xor;
        if (p >= unit || p / sub == j / sub) {
          const Node* at = tiers.items[i].find("partner_xor");
          diags.error(at != nullptr ? at->loc : tiers.items[i].loc,
                      "`network.tiers[" + std::to_string(i) + "].partner_xor` " + std::to_string(t.partner_xor) +
                          " sends device " + std::to_string(j) + " of a " + std::to_string(unit) +
                          "-device unit to " + std::to_string(p) +
                          ", which is not in another sub-unit of that unit");
          break;
        }
      }
    }
    sub = unit;
  }
}

void read_network(MapReader& root, HardwareSpec& hw, Diags& diags) {
  const Node* net = root.get("network", Need::Required);
  MapReader r(net, diags, "network", root.loc());
  const Node* tiers = r.get("tiers", net != nullptr ? Need::Required : Need::Optional);
  if (tiers != nullptr && !tiers->is_seq()) {
    diags.error(tiers->loc, "`network.tiers` must be a list of tiers, innermost first");
    tiers = nullptr;
  }
  std::set<std::string> names;
  long long product = 1;  // units of the innermost tier's ranks under the current tier
  const int dies = hw.device.dies;
  if (tiers != nullptr) {
    for (std::size_t i = 0; i < tiers->items.size(); ++i) {
      const Node& tn = tiers->items[i];
      std::string path = "network.tiers[" + std::to_string(i) + "]";
      TierSpec t = read_tier(tn, path, diags);
      if (!t.name.empty() && !names.insert(t.name).second) {
        diags.error(tn.loc, "tier name `" + t.name + "` is used twice");
      }
      const bool is_die = (t.name == "die");
      if (is_die && i != 0) diags.error(tn.loc, "the `die` tier must come first (innermost)");
      if (is_die && dies == 1) {
        diags.error(tn.loc, "a `die` tier needs `device.dies` > 1 (the device has 1 die)");
      }
      if (is_die && dies > 1 && t.size != dies) {
        const Node* size = tn.find("size");
        diags.error(size != nullptr ? size->loc : tn.loc, "tier `die` has size " + std::to_string(t.size) +
                                " but `device.dies` is " + std::to_string(dies));
      }
      product = std::min<long long>(product * t.size, 1LL << 40);
      if (tn.is_map()) {
        if (const Node* dn = tn.find("devices")) {
          ScalarReader s(diags);
          auto devices = s.integer(*dn, path + ".devices", 1, 1 << 30);
          // Sizes count dies below the die tier's top: divide by the die tier's size (not by
          // device.dies, so that a wrong die size is reported once, above, not per tier).
          long long per_device = is_die ? t.size
                                 : (!hw.tiers.empty() && hw.tiers.front().name == "die")
                                     ? hw.tiers.front().size
                                     : 1;
          if (devices && product != *devices * per_device) {
            std::string how = per_device > 1 ? " / " + std::to_string(per_device) + " dies" : "";
            diags.error(dn->loc, "tier `" + t.name + "` says devices " +
                                     std::to_string(*devices) + " but the tier sizes give " +
                                     std::to_string(product / per_device) + " (product of sizes " +
                                     std::to_string(product) + how + ")");
          }
        }
      }
      hw.tiers.push_back(std::move(t));
    }
    if (dies > 1 && (hw.tiers.empty() || hw.tiers.front().name != "die")) {
      diags.error(tiers->loc, "the device has " + std::to_string(dies) +
                                  " dies: the first tier must be `die` with size " +
                                  std::to_string(dies));
    }
    std::size_t non_die = hw.tiers.size() - ((!hw.tiers.empty() && hw.tiers[0].name == "die") ? 1 : 0);
    if (non_die < 2 && !tiers->items.empty()) {
      diags.error(tiers->loc,
                  "`network.tiers` needs a node tier and a cluster tier after it (the last tier's "
                  "size is the largest node count; a single node writes `size: 1`)");
    }
    if (tiers->items.empty()) diags.error(tiers->loc, "`network.tiers` is empty");
    check_partners(*tiers, hw, diags);
  }
  if (const Node* algos = r.get("algorithms")) {
    if (!algos->is_seq() || algos->items.empty()) {
      diags.error(algos->loc, "`network.algorithms` must be a list (ring, hierarchical, halving_doubling, tree)");
    } else {
      ScalarReader s(diags);
      for (const Node& a : algos->items) {
        auto v = s.enumeration(a, "network.algorithms", kCollectiveAlgorithmNames);
        if (v && *v == CollectiveAlgorithm::Auto) {
          diags.error(a.loc, "`network.algorithms` lists algorithms; `auto` chooses among them");
        } else if (v) {
          hw.algorithms.push_back(*v);
        }
      }
    }
  }
  if (const Node* links = r.get("extra_links")) {
    if (!links->is_seq()) {
      diags.error(links->loc, "`network.extra_links` must be a list");
    } else {
      for (std::size_t i = 0; i < links->items.size(); ++i) {
        MapReader l(&links->items[i], diags, "network.extra_links[" + std::to_string(i) + "]");
        ExtraLinkSpec e;
        if (auto v = l.text("name", Need::Required)) e.name = *v;
        if (auto v = l.enumeration("between", kPairingNames, Need::Required)) e.between = *v;
        if (auto v = l.quantity("bandwidth", Quantity::Rate, Need::Required)) e.bw_bytes_per_s = *v;
        if (auto v = l.quantity("latency", Quantity::Time, Need::Required, true)) e.latency_s = *v;
        if (auto v = l.count("partner_xor", Need::Optional, 0, 1 << 20)) {
          e.partner_xor = *v;
          const int dpn = hw.devices_per_node();
          for (int j = 0; j < dpn; ++j) {
            if ((j ^ e.partner_xor) >= dpn) {
              diags.error(l.get("partner_xor")->loc, "`" + l.dotted("partner_xor") + "` " + std::to_string(*v) +
                                                         " sends device " + std::to_string(j) + " to " +
                                                         std::to_string(j ^ e.partner_xor) + ", beyond the node's " +
                                                         std::to_string(dpn) + " devices");
              break;
            }
          }
        }
        if (auto v = l.number("cost_per_link", 0.0, 1e12)) e.cost_per_link = *v;
        l.finish();
        hw.extra_links.push_back(std::move(e));
      }
    }
  }
  r.finish();
}

}  // namespace

// `calibration:` as `paraplan calibrate profile` writes it: time multipliers by op class and
// pass, and by tier.
void read_calibration(const Node* node, HardwareSpec& hw, Diags& diags) {
  MapReader c(node, diags, "calibration");
  if (auto v = c.text("source")) hw.calibration.source = *v;
  if (auto v = c.number("fp8_gemm", 0.01, 100)) hw.calibration.fp8_gemm = *v;
  if (auto v = c.number("sustained", 0.01, 100)) hw.calibration.sustained = *v;
  if (auto v = c.number("allocator", 0.25, 4)) hw.calibration.allocator = *v;
  if (auto v = c.number("ep_overlap", 0.05, 1)) hw.calibration.ep_overlap = *v;
  if (const Node* compute = c.get("compute")) {
    MapReader m(compute, diags, "calibration.compute");
    for (int cls = 0; cls < kOpClassCount; ++cls) {
      const char* name = kOpClassNames[cls];
      if (const Node* k = m.get(name)) {
        MapReader f(k, diags, m.dotted(name));
        auto& slot = hw.calibration.compute[static_cast<std::size_t>(cls)];
        if (auto v = f.number("forward", 0.01, 100)) slot[0] = *v;
        if (auto v = f.number("backward", 0.01, 100)) slot[1] = slot[2] = *v;
        if (auto v = f.number("weight_grad", 0.01, 100)) slot[2] = *v;
        f.finish();
      }
    }
    m.finish();
  }
  if (const Node* comm = c.get("communication")) {
    if (!comm->is_map()) {
      diags.error(comm->loc, "`calibration.communication` maps tier names to time multipliers");
    } else {
      MapReader m(comm, diags, "calibration.communication");
      for (TierSpec& t : hw.tiers) {
        const Node* v = m.get(t.name);
        if (v == nullptr) continue;
        if (v->is_map()) {
          // by collective
          MapReader byop(v, diags, m.dotted(t.name));
          for (const auto& [spelling, op] : kCollectiveNames) {
            if (auto x = byop.number(spelling, 0.01, 100)) t.calibration[static_cast<std::size_t>(op)] = *x;
          }
          byop.finish();
        } else if (auto x = m.number(t.name, 0.01, 100)) {
          t.calibration.fill(*x);
        }
      }
      m.finish();
    }
  }
  c.finish();
}

HardwareSpec read_hardware(const Node& root, Diags& diags) {
  HardwareSpec hw;
  MapReader r(&root, diags, "");
  if (r.node() == nullptr) return hw;
  if (auto v = r.text("name", Need::Required)) hw.name = *v;
  if (auto v = r.text("description")) hw.description = *v;
  hw.sources = r.text_list("sources");
  hw.device = read_device(r, diags);
  read_network(r, hw, diags);
  if (const Node* host = r.get("host")) {
    MapReader h(host, diags, "host");
    if (auto v = h.quantity("memory", Quantity::Size)) hw.host.memory_bytes = *v;
    if (auto v = h.quantity("offload_bandwidth", Quantity::Rate)) hw.host.offload_bw_bytes_per_s = *v;
    h.finish();
  }
  if (const Node* cal = r.get("calibration")) read_calibration(cal, hw, diags);
  r.finish();
  return hw;
}

}  // namespace paraplan::config
