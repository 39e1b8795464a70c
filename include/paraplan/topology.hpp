#pragma once
/// The device graph a hardware file describes: which devices (cards) have a direct link,
/// of which kind, and the fewest-hop path between any two (`paraplan topology`).

#include <string>
#include <vector>

#include "paraplan/spec.hpp"
#include "paraplan/export.hpp"

namespace paraplan {

/// A kind of direct link: a network tier (vnode, node, cluster, ...) or an extra link.
struct LinkKind {
  std::string name;
  double bw_bytes_per_s = 0;  ///< per device, per direction
  double latency_s = 0;
  bool extra = false;         ///< an `extra_links` entry (Port-10), not a tier
};

/// One direct link from a device.
struct DeviceLink {
  int to = 0;    ///< device index: node * devices_per_node + index in the node
  int kind = 0;  ///< index into DeviceGraph::kinds
};

/// Devices (cards) of `nodes` nodes and their direct links. Dies of one card share it: the
/// die tier is inside a vertex, not an edge.
struct DeviceGraph {
  int nodes = 0;
  int devices_per_node = 0;
  std::vector<LinkKind> kinds;
  std::vector<std::vector<DeviceLink>> links;  ///< per device, ordered by (kind, to)
  [[nodiscard]] int devices() const { return nodes * devices_per_node; }
};

/// The fewest-hop path between two devices; among those, the one with the widest bottleneck,
/// then the lowest latency.
struct DevicePath {
  int hops = -1;                  ///< -1: unreachable; 0: the device itself
  std::vector<int> devices;       ///< from .. to
  std::vector<int> kinds;         ///< the link kind of each hop
  double bottleneck_bw = 0;       ///< bytes/s of the narrowest hop
  double latency_s = 0;           ///< sum over the hops
};

/// Largest node count the device graph is built for (the hop structure repeats beyond a few
/// node pairs; a switch tier joins every pair of its devices).
inline constexpr int kTopologyMaxNodes = 64;

/// The graph of `nodes` nodes of `hw`, with or without its extra links. Throws ConfigError
/// when `nodes` is outside 1 .. min(the cluster tier's size, kTopologyMaxNodes).
[[nodiscard]] PARAPLAN_EXPORT DeviceGraph device_graph(const HardwareSpec& hw, int nodes,
                                                       bool with_extra_links = true);

/// Paths from `from` to every device (breadth-first search), indexed by the target.
[[nodiscard]] PARAPLAN_EXPORT std::vector<DevicePath> device_paths(const DeviceGraph& g, int from);

/// Price of the hardware's extra links per node over `nodes` nodes: each device of a paired
/// node (node_pairs) or vnode (vnode_pairs) has one link, shared by its two ends, at its
/// `cost_per_link`. 0 when no extra link carries a cost. `links` (if given) gets the link count.
[[nodiscard]] PARAPLAN_EXPORT double extra_link_cost_per_node(const HardwareSpec& hw, int nodes, double* links = nullptr);

/// The `paraplan topology` report: link kinds, each device's neighbours, the hop matrix (up to
/// 32 devices), the paths from device 0, and the path lengths from node 0's devices; with
/// extra links, the same without them beside.
[[nodiscard]] PARAPLAN_EXPORT std::string topology_text(const HardwareSpec& hw, int nodes);
/// The same as JSON: {"hardware", "nodes", "devices_per_node", "kinds", "neighbours",
/// "paths_from_0", "hop_counts", and "without_extra_links": {...} when it has extra links}.
[[nodiscard]] PARAPLAN_EXPORT std::string topology_json(const HardwareSpec& hw, int nodes);

}  // namespace paraplan
