#include "paraplan/topology.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <queue>
#include <string>
#include <vector>

#include "paraplan/errors.hpp"
#include "paraplan/units.hpp"
#include "report/json.hpp"

namespace paraplan {
namespace {

// The tiers that join devices (cards): every tier but the die tier (inside a card) and the
// last one (the cluster, between nodes).
std::size_t first_card_tier(const HardwareSpec& hw) {
  return (!hw.tiers.empty() && hw.tiers.front().name == "die" && hw.device.dies > 1) ? 1 : 0;
}

void add_link(DeviceGraph& g, int a, int b, int kind) {
  if (a == b) return;
  g.links[static_cast<std::size_t>(a)].push_back(DeviceLink{b, kind});
  g.links[static_cast<std::size_t>(b)].push_back(DeviceLink{a, kind});
}

std::string hops_word(int hops) { return std::to_string(hops) + (hops == 1 ? " hop" : " hops"); }

std::string kind_path(const DeviceGraph& g, const DevicePath& p) {
  if (p.hops <= 0) return p.hops == 0 ? "-" : "unreachable";
  std::string out;
  for (std::size_t i = 0; i < p.kinds.size(); ++i) {
    if (i > 0) out += " > ";
    out += g.kinds[static_cast<std::size_t>(p.kinds[i])].name;
  }
  if (p.devices.size() > 2) {
    out += " (via";
    for (std::size_t i = 1; i + 1 < p.devices.size(); ++i) out += " " + std::to_string(p.devices[i]);
    out += ")";
  }
  return out;
}

// Path lengths from every device of node 0: count of (from, to) pairs per hop count.
std::map<int, long long> hop_counts(const DeviceGraph& g) {
  std::map<int, long long> counts;
  for (int from = 0; from < g.devices_per_node; ++from) {
    for (const DevicePath& p : device_paths(g, from)) {
      if (p.hops != 0) ++counts[p.hops];
    }
  }
  return counts;
}

std::string pad(std::string s, std::size_t w) {
  if (s.size() < w) s.append(w - s.size(), ' ');
  return s;
}

std::string counts_text(const std::map<int, long long>& c) {
  std::string out;
  for (const auto& [hops, n] : c) {
    if (!out.empty()) out += ", ";
    out += (hops < 0 ? std::string("unreachable") : hops_word(hops)) + ": " + std::to_string(n);
  }
  return out;
}

int longest(const std::map<int, long long>& c) { return c.empty() ? 0 : c.rbegin()->first; }

}  // namespace

DeviceGraph device_graph(const HardwareSpec& hw, int nodes, bool with_extra_links) {
  const int max_nodes = std::min(hw.max_nodes(), kTopologyMaxNodes);
  if (nodes < 1 || nodes > max_nodes) {
    throw ConfigError({Diagnostic{"--nodes", 0, 0,
                                  "the device graph takes 1 to " + std::to_string(max_nodes) + " nodes of " +
                                      hw.name + " (got " + std::to_string(nodes) + ")" +
                                      (hw.max_nodes() > kTopologyMaxNodes
                                           ? "; its paths repeat from node pair to node pair"
                                           : "; the cluster tier's size")}});
  }
  DeviceGraph g;
  g.nodes = nodes;
  g.devices_per_node = std::max(1, hw.devices_per_node());
  g.links.resize(static_cast<std::size_t>(g.devices()));
  const int dpn = g.devices_per_node;
  const int total = g.devices();
  const int domain = std::max(dpn, hw.devices_per_domain());
  const std::size_t first = first_card_tier(hw);
  int sub = 1;  // devices per unit of the tier below
  for (std::size_t i = first; i < hw.tiers.size(); ++i) {
    const TierSpec& t = hw.tiers[i];
    const int kind = static_cast<int>(g.kinds.size());
    g.kinds.push_back(LinkKind{t.name, t.bw_bytes_per_s, t.latency_s, false});
    const bool cluster = i + 1 == hw.tiers.size();
    if (!cluster) {
      // Within a scale-up domain: units of `unit` devices made of `t.size` sub-units of `sub`
      // devices. Devices are numbered node by node, so a tier that joins nodes (GB200's NVL72
      // switch over 18 nodes) takes units of several nodes' devices.
      const int unit = sub * t.size;
      for (int a = 0; a < total; ++a) {
        const int base = a / unit * unit;
        const int pos = a - base;
        if (t.topology == Topology::Pairs) {
          const int mask = t.partner_xor > 0 ? t.partner_xor : sub;
          const int p = pos ^ mask;
          if (p < unit && p > pos && base + p < total) add_link(g, a, base + p, kind);
        } else if (t.topology == Topology::Ring) {
          const int next = (pos / sub + 1) % t.size * sub + pos % sub;
          if (t.size > 1 && next != pos && (t.size > 2 || next > pos) && base + next < total) {
            add_link(g, a, base + next, kind);
          }
        } else {  // switch, full mesh: every device of another sub-unit
          for (int p = pos + 1; p < unit && base + p < total; ++p) {
            if (p / sub != pos / sub) add_link(g, a, base + p, kind);
          }
        }
      }
      sub = unit;
      continue;
    }
    // Between scale-up domains (between nodes, where no tier joins them).
    for (int n = 0; n < nodes; ++n) {
      for (int m = n + 1; m < nodes; ++m) {
        if (n * dpn / domain == m * dpn / domain) continue;
        const bool joined = t.topology == Topology::Pairs   ? (n ^ 1) == m
                            : t.topology == Topology::Ring ? (m == n + 1 || (n == 0 && m == nodes - 1 && nodes > 2))
                                                           : true;
        if (!joined) continue;
        for (int j = 0; j < dpn; ++j) {
          if (t.rails || t.topology == Topology::Pairs || t.topology == Topology::Ring) {
            add_link(g, n * dpn + j, m * dpn + j, kind);
          } else {
            for (int k = 0; k < dpn; ++k) add_link(g, n * dpn + j, m * dpn + k, kind);
          }
        }
      }
    }
  }
  if (with_extra_links) {
    for (const ExtraLinkSpec& l : hw.extra_links) {
      const int kind = static_cast<int>(g.kinds.size());
      g.kinds.push_back(LinkKind{l.name, l.bw_bytes_per_s, l.latency_s, true});
      for (int n = 0; n < nodes; ++n) {
        for (int j = 0; j < dpn; ++j) {
          const int p = j ^ l.partner_xor;
          if (p >= dpn) continue;
          if (l.between == LinkPairing::NodePairs) {
            const int m = n ^ 1;
            if (m > n && m < nodes) add_link(g, n * dpn + j, m * dpn + p, kind);
          } else {
            // vnode_pairs: the units of the first tier inside a card's node, paired u <-> u ^ 1.
            const int vsize = first < hw.tiers.size() ? std::max(1, hw.tiers[first].size) : dpn;
            const int u = j / vsize;
            const int q = (u ^ 1) * vsize + (j % vsize ^ l.partner_xor % vsize);
            if ((u ^ 1) * vsize < dpn && q < dpn && q > j) add_link(g, n * dpn + j, n * dpn + q, kind);
          }
        }
      }
    }
  }
  for (auto& v : g.links) {
    std::sort(v.begin(), v.end(), [](const DeviceLink& x, const DeviceLink& y) {
      return x.kind != y.kind ? x.kind < y.kind : x.to < y.to;
    });
  }
  return g;
}

std::vector<DevicePath> device_paths(const DeviceGraph& g, int from) {
  const auto n = static_cast<std::size_t>(g.devices());
  std::vector<int> dist(n, -1);
  std::vector<double> width(n, 0), latency(n, 0);
  std::vector<int> prev(n, -1), prev_kind(n, -1);
  std::vector<int> order;
  order.reserve(n);
  dist[static_cast<std::size_t>(from)] = 0;
  width[static_cast<std::size_t>(from)] = 1e300;
  std::queue<int> q;
  q.push(from);
  while (!q.empty()) {
    const int a = q.front();
    q.pop();
    order.push_back(a);
    const auto ua = static_cast<std::size_t>(a);
    for (const DeviceLink& l : g.links[ua]) {
      const auto ub = static_cast<std::size_t>(l.to);
      const LinkKind& k = g.kinds[static_cast<std::size_t>(l.kind)];
      const double w = std::min(width[ua], k.bw_bytes_per_s);
      const double lat = latency[ua] + k.latency_s;
      if (dist[ub] < 0) {
        dist[ub] = dist[ua] + 1;
        q.push(l.to);
      } else if (dist[ub] != dist[ua] + 1) {
        continue;
      } else if (w < width[ub] || (w == width[ub] && lat >= latency[ub])) {
        continue;
      }
      width[ub] = w;
      latency[ub] = lat;
      prev[ub] = a;
      prev_kind[ub] = l.kind;
    }
  }
  std::vector<DevicePath> paths(n);
  for (std::size_t t = 0; t < n; ++t) {
    DevicePath& p = paths[t];
    p.hops = dist[t];
    if (p.hops < 0) continue;
    p.bottleneck_bw = p.hops == 0 ? 0 : width[t];
    p.latency_s = latency[t];
    for (int v = static_cast<int>(t); v >= 0; v = prev[static_cast<std::size_t>(v)]) {
      p.devices.push_back(v);
      if (prev[static_cast<std::size_t>(v)] >= 0) p.kinds.push_back(prev_kind[static_cast<std::size_t>(v)]);
    }
    std::reverse(p.devices.begin(), p.devices.end());
    std::reverse(p.kinds.begin(), p.kinds.end());
  }
  return paths;
}

double extra_link_cost_per_node(const HardwareSpec& hw, int nodes, double* links) {
  const int dpn = std::max(1, hw.devices_per_node());
  double cost = 0, count = 0;
  for (const ExtraLinkSpec& l : hw.extra_links) {
    // node_pairs: nodes / 2 pairs of dpn links; vnode_pairs: dpn / 2 links in every node.
    const double n = l.between == LinkPairing::NodePairs ? static_cast<double>(nodes / 2) * dpn
                                                         : static_cast<double>(nodes) * (dpn / 2);
    count += n;
    cost += n * l.cost_per_link;
  }
  if (links != nullptr) *links = nodes > 0 ? count / nodes : 0;
  return nodes > 0 ? cost / nodes : 0;
}

std::string topology_text(const HardwareSpec& hw, int nodes) {
  const DeviceGraph g = device_graph(hw, nodes, true);
  const bool has_extra = !hw.extra_links.empty();
  const DeviceGraph bare = has_extra ? device_graph(hw, nodes, false) : DeviceGraph{};
  const int dpn = g.devices_per_node;
  std::string out;
  out += "topology  " + hw.name + ": " + std::to_string(nodes) + (nodes == 1 ? " node" : " nodes") + " x " +
         std::to_string(dpn) + " devices";
  if (hw.device.dies > 1) {
    out += " (" + std::to_string(hw.device.dies) + " dies per device, joined inside it";
    if (first_card_tier(hw) == 1) out += " by the die tier at " + units::format_rate(hw.tiers.front().bw_bytes_per_s);
    out += ")";
  }
  out += "\n\nlink kinds (per device, per direction):\n";
  const std::size_t first = first_card_tier(hw);
  int sub = 1;
  for (std::size_t i = first; i < hw.tiers.size(); ++i) {
    const TierSpec& t = hw.tiers[i];
    const bool cluster = i + 1 == hw.tiers.size();
    std::string what;
    if (!cluster) {
      const int unit = sub * t.size;
      if (t.topology == Topology::Pairs) {
        what = "units of " + std::to_string(unit) + " devices: each device to device (index ^ " +
               std::to_string(t.partner_xor > 0 ? t.partner_xor : sub) + ") of the paired sub-unit";
      } else if (t.topology == Topology::Ring) {
        what = "units of " + std::to_string(unit) + " devices: the same position in the neighbouring sub-units";
      } else {
        what = "units of " + std::to_string(unit) + " devices: every device of another sub-unit";
      }
      sub = unit;
    } else if (t.topology == Topology::Pairs) {
      what = "between paired nodes (n ^ 1): the same index";
    } else if (t.topology == Topology::Ring) {
      what = "between neighbouring nodes: the same index";
    } else {
      what = t.rails ? "between nodes: the same index only (rails; another index is forwarded inside a node)"
                     : "between nodes: every device of every other node";
    }
    if (cluster && sub > dpn) {
      what += " of another " + std::to_string(sub / dpn) + "-node domain (" + std::to_string(sub) +
              " devices; inside it, the tiers above)";
    }
    out += "  " + pad(t.name, 10) + pad(units::format_rate(t.bw_bytes_per_s), 12) +
           pad(units::format_time(t.latency_s), 9) + what + "\n";
  }
  for (const ExtraLinkSpec& l : hw.extra_links) {
    std::string what = l.between == LinkPairing::NodePairs ? "extra link between paired nodes (n ^ 1): device index ^ "
                                                           : "extra link between paired vnodes: position ^ ";
    what += std::to_string(l.partner_xor);
    if (l.cost_per_link > 0) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "; %.0f per link", l.cost_per_link);
      what += buf;
    }
    out += "  " + pad(l.name, 10) + pad(units::format_rate(l.bw_bytes_per_s), 12) +
           pad(units::format_time(l.latency_s), 9) + what + "\n";
  }

  // Neighbours by kind, one row per device (a long list is counted, not listed).
  out += "\nneighbours (direct links) of each device:\n  " + pad("device", 8);
  for (const LinkKind& k : g.kinds) out += pad(k.name, 14);
  out += "\n";
  const int shown = std::min(g.devices(), 32);
  for (int a = 0; a < shown; ++a) {
    out += "  " + pad(std::to_string(a), 8);
    for (std::size_t k = 0; k < g.kinds.size(); ++k) {
      std::vector<int> to;
      for (const DeviceLink& l : g.links[static_cast<std::size_t>(a)]) {
        if (l.kind == static_cast<int>(k)) to.push_back(l.to);
      }
      std::string cell;
      if (to.size() > 4) {
        cell = std::to_string(to.size()) + " devices";
      } else {
        for (int t : to) cell += (cell.empty() ? "" : " ") + std::to_string(t);
      }
      out += pad(cell.empty() ? "-" : cell, 14);
    }
    out += "\n";
  }
  if (shown < g.devices()) out += "  (the first " + std::to_string(shown) + " of " + std::to_string(g.devices()) + ")\n";

  if (g.devices() <= 32) {
    out += "\nhops between devices (row: from, column: to)" +
           std::string(has_extra ? ", with the extra links; without them in parentheses where longer" : "") + ":\n     ";
    for (int b = 0; b < g.devices(); ++b) out += pad(std::to_string(b), has_extra ? 5 : 3);
    out += "\n";
    for (int a = 0; a < g.devices(); ++a) {
      const auto with = device_paths(g, a);
      const auto without = has_extra ? device_paths(bare, a) : with;
      out += "  " + pad(std::to_string(a), 3);
      for (int b = 0; b < g.devices(); ++b) {
        const DevicePath& p = with[static_cast<std::size_t>(b)];
        const DevicePath& q = without[static_cast<std::size_t>(b)];
        std::string cell = a == b ? "-" : p.hops < 0 ? "x" : std::to_string(p.hops);
        if (has_extra && q.hops != p.hops && a != b) cell += "(" + (q.hops < 0 ? std::string("x") : std::to_string(q.hops)) + ")";
        out += pad(cell, has_extra ? 5 : 3);
      }
      out += "\n";
    }
  }

  out += "\npaths from device 0 (fewest hops, then the widest, then the lowest latency):\n  " + pad("to", 5) +
         pad("hops", 6) + pad("links on the path", 36) + pad("bottleneck", 12) + pad("latency", 9);
  if (has_extra) out += "without extra links";
  out += "\n";
  const auto from0 = device_paths(g, 0);
  const auto from0_bare = has_extra ? device_paths(bare, 0) : from0;
  const int listed = std::min(g.devices(), 2 * dpn);
  for (int b = 1; b < listed; ++b) {
    const DevicePath& p = from0[static_cast<std::size_t>(b)];
    out += "  " + pad(std::to_string(b), 5) + pad(p.hops < 0 ? "x" : std::to_string(p.hops), 6) +
           pad(kind_path(g, p), 36) + pad(p.hops > 0 ? units::format_rate(p.bottleneck_bw) : "-", 12) +
           pad(p.hops > 0 ? units::format_time(p.latency_s) : "-", 9);
    if (has_extra) {
      const DevicePath& q = from0_bare[static_cast<std::size_t>(b)];
      out += q.hops == p.hops && q.kinds == p.kinds
                 ? std::string("same")
                 : (q.hops < 0 ? std::string("unreachable")
                               : hops_word(q.hops) + ": " + kind_path(bare, q) + ", " + units::format_rate(q.bottleneck_bw));
    }
    out += "\n";
  }
  if (listed < g.devices()) out += "  (the first two nodes' devices; the others repeat them)\n";

  const auto counts = hop_counts(g);
  out += "\npaths from node 0's " + std::to_string(dpn) + " devices to every other device:\n";
  if (has_extra) {
    const auto bare_counts = hop_counts(bare);
    out += "  with the extra links     " + counts_text(counts) + "; longest " + hops_word(longest(counts)) + "\n";
    out += "  without them             " + counts_text(bare_counts) + "; longest " + hops_word(longest(bare_counts)) + "\n";
  } else {
    out += "  " + counts_text(counts) + "; longest " + hops_word(longest(counts)) + "\n";
  }
  return out;
}

std::string topology_json(const HardwareSpec& hw, int nodes) {
  report::JsonWriter w;
  auto graph_fields = [&](const DeviceGraph& g) {
    w.key("kinds").begin_array();
    for (const LinkKind& k : g.kinds) {
      w.begin_object().field("name", k.name).field("bandwidth_bytes_per_s", k.bw_bytes_per_s)
          .field("latency_s", k.latency_s).field("extra", k.extra).end_object();
    }
    w.end_array();
    w.key("neighbours").begin_array();
    for (int a = 0; a < g.devices(); ++a) {
      w.begin_object();
      for (std::size_t k = 0; k < g.kinds.size(); ++k) {
        w.key(g.kinds[k].name).begin_array();
        for (const DeviceLink& l : g.links[static_cast<std::size_t>(a)]) {
          if (l.kind == static_cast<int>(k)) w.value(l.to);
        }
        w.end_array();
      }
      w.end_object();
    }
    w.end_array();
    w.key("paths_from_0").begin_array();
    for (const DevicePath& p : device_paths(g, 0)) {
      w.begin_object().field("hops", p.hops);
      w.key("devices").begin_array();
      for (int d : p.devices) w.value(d);
      w.end_array();
      w.key("links").begin_array();
      for (int k : p.kinds) w.value(g.kinds[static_cast<std::size_t>(k)].name);
      w.end_array();
      w.field("bottleneck_bytes_per_s", p.bottleneck_bw).field("latency_s", p.latency_s).end_object();
    }
    w.end_array();
    w.key("hop_counts").begin_object();
    for (const auto& [hops, n] : hop_counts(g)) w.field(std::to_string(hops), n);
    w.end_object();
  };
  const DeviceGraph g = device_graph(hw, nodes, true);
  w.begin_object().field("hardware", hw.name).field("nodes", nodes).field("devices_per_node", g.devices_per_node);
  graph_fields(g);
  if (!hw.extra_links.empty()) {
    w.key("without_extra_links").begin_object();
    graph_fields(device_graph(hw, nodes, false));
    w.end_object();
  }
  w.end_object();
  return w.str() + "\n";
}

}  // namespace paraplan
