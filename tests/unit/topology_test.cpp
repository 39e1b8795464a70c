// The device graph (`paraplan topology`): the UBBv2 neighbour table of the seeds
// (SEED_DIGEST.md sec. 1.5), their hop counts with and without Port-10, an NVSwitch node, and
// the partner keys' checks. Expected values are the seeds' table and hop counts read off it.

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "paraplan/config.hpp"
#include "paraplan/errors.hpp"
#include "paraplan/topology.hpp"

using namespace paraplan;

namespace {

std::vector<int> neighbours(const DeviceGraph& g, int device, const std::string& kind) {
  std::vector<int> out;
  for (const DeviceLink& l : g.links[static_cast<std::size_t>(device)]) {
    if (g.kinds[static_cast<std::size_t>(l.kind)].name == kind) out.push_back(l.to);
  }
  return out;
}

int longest_from_node0(const DeviceGraph& g) {
  int longest = 0;
  for (int from = 0; from < g.devices_per_node; ++from) {
    for (const DevicePath& p : device_paths(g, from)) longest = std::max(longest, p.hops);
  }
  return longest;
}

}  // namespace

TEST_SUITE("topology") {
  TEST_CASE("UBBv2 node pair: every card's neighbours are the seeds' table (SEED_DIGEST sec. 1.5)") {
    // GR | peer1 peer2 peer3 | mate1 (BLink) | mate2 (RDMA) | mate3 (Port-10), copied row by row.
    const int table[16][6] = {
        {1, 2, 3, 5, 8, 12},     {0, 2, 3, 4, 9, 13},     {0, 1, 3, 7, 10, 14},    {0, 1, 2, 6, 11, 15},
        {5, 6, 7, 1, 12, 8},     {4, 6, 7, 0, 13, 9},     {4, 5, 7, 3, 14, 10},    {4, 5, 6, 2, 15, 11},
        {9, 10, 11, 13, 0, 4},   {8, 10, 11, 12, 1, 5},   {8, 9, 11, 15, 2, 6},    {8, 9, 10, 14, 3, 7},
        {13, 14, 15, 9, 4, 0},   {12, 14, 15, 8, 5, 1},   {12, 13, 15, 11, 6, 2},  {12, 13, 14, 10, 7, 3}};
    const DeviceGraph g = device_graph(load_hardware("br166-ubbv2-port10"), 2);
    REQUIRE(g.devices() == 16);
    for (int gr = 0; gr < 16; ++gr) {
      CAPTURE(gr);
      CHECK(neighbours(g, gr, "vnode") == std::vector<int>{table[gr][0], table[gr][1], table[gr][2]});
      CHECK(neighbours(g, gr, "node") == std::vector<int>{table[gr][3]});
      CHECK(neighbours(g, gr, "cluster") == std::vector<int>{table[gr][4]});
      CHECK(neighbours(g, gr, "port10") == std::vector<int>{table[gr][5]});
    }
  }

  TEST_CASE("UBBv2 hops: the farthest card is 2 forwards + RDMA away; Port-10 makes it 2") {
    // SEED_DIGEST sec. 1.5: "farthest path overall: 2 x P2P + RDMA (two forwards)". From GR0 the
    // stranger GR12 (mate3) is such a card: GR0 -> peer -> BLink mate -> RDMA mate. With
    // Port-10, GR12 is a direct neighbour, and every card is within 2 hops: GR0's neighbours
    // 1 2 3 5 8 12 cover, through one more link, all 16 cards of the table.
    const HardwareSpec hw = load_hardware("br166-ubbv2-port10");
    const DeviceGraph with = device_graph(hw, 2, true);
    const DeviceGraph without = device_graph(hw, 2, false);
    const DevicePath far = device_paths(without, 0)[12];
    CHECK(far.hops == 3);
    REQUIRE(far.kinds.size() == 3);
    CHECK(without.kinds[static_cast<std::size_t>(far.kinds[2])].name == "cluster");
    CHECK(far.bottleneck_bw == doctest::Approx(12e9));  // the RDMA tier, 12 GB/s
    const DevicePath direct = device_paths(with, 0)[12];
    CHECK(direct.hops == 1);
    CHECK(direct.bottleneck_bw == doctest::Approx(25e9));  // Port-10, 25 GB/s (SEED_DIGEST sec. 1.2)
    CHECK(longest_from_node0(without) == 3);
    CHECK(longest_from_node0(with) == 2);
    // Within a node: a card of the other VNode that is not the BLink mate is a peer hop and a
    // BLink hop away (GR0 -> GR4: via GR1, whose mate1 is GR4).
    const DevicePath intra = device_paths(without, 0)[4];
    CHECK(intra.hops == 2);
    CHECK(intra.devices == std::vector<int>{0, 1, 4});
  }

  TEST_CASE("an NVSwitch node and a non-railed switch fabric: every GPU one hop from every other") {
    const DeviceGraph g = device_graph(load_hardware("h100-sxm-ib"), 2);
    CHECK(g.devices() == 16);
    CHECK(longest_from_node0(g) == 1);
  }

  TEST_CASE("GB200 NVL72: nodes of 4 on one NVLink domain of 18 nodes; the cluster tier only between racks") {
    // hardware/gb200-nvl72.yaml: node (4 GPUs of a tray) -> nvl72 (18 trays) -> cluster.
    const HardwareSpec hw = load_hardware("gb200-nvl72");
    CHECK(hw.devices_per_node() == 4);
    CHECK(hw.devices_per_domain() == 72);
    CHECK(hw.max_nodes() == 18 * 128);
    // Two trays: every GPU reaches the other tray's four over NVLink, none over IB.
    const DeviceGraph two = device_graph(hw, 2);
    CHECK(neighbours(two, 0, "node") == std::vector<int>{1, 2, 3});
    CHECK(neighbours(two, 0, "nvl72") == std::vector<int>{4, 5, 6, 7});
    CHECK(neighbours(two, 0, "cluster").empty());
    CHECK(longest_from_node0(two) == 1);
    // Nineteen trays: the 19th is the next rack's first (devices 72-75), joined to the first
    // rack by IB only, rails not set: every GPU of every tray of the other rack.
    const DeviceGraph nineteen = device_graph(hw, 19);
    const std::vector<int> ib = neighbours(nineteen, 0, "cluster");
    CHECK(ib == std::vector<int>{72, 73, 74, 75});
    CHECK(neighbours(nineteen, 0, "nvl72").size() == 68);  // the other 17 trays of the rack
    CHECK(neighbours(nineteen, 72, "nvl72").empty());
    // The presets with no tier joining nodes keep node = domain.
    const HardwareSpec h100 = load_hardware("h100-sxm-ib");
    CHECK(h100.devices_per_node() == 8);
    CHECK(h100.devices_per_domain() == 8);
    CHECK(h100.max_nodes() == h100.tiers.back().size);
    const HardwareSpec br = load_hardware("br166-ubbv2");
    CHECK(br.devices_per_node() == 8);  // 2 x 4 x 2 dies / 2 dies per card
    CHECK(br.devices_per_domain() == 8);
  }

  TEST_CASE("a pairs tier without partner_xor joins the same position of the other half") {
    HardwareSpec hw = load_hardware("br166-ubbv2");
    hw.tiers[2].partner_xor = 0;  // the node tier: VNode pairs
    const DeviceGraph g = device_graph(hw, 1);
    CHECK(neighbours(g, 0, "node") == std::vector<int>{4});
    CHECK(neighbours(g, 6, "node") == std::vector<int>{2});
  }

  TEST_CASE("Port-10's price per server: 6k (SEED_DIGEST sec. 1.10)") {
    // Copper cables 8 per two machines at 1k each and UBBv2 ports 2k per server: a pair of
    // servers pays 8 x 1k + 2 x 2k = 12k for its 8 links, 6k per server, 4 links per server.
    double links = 0;
    CHECK(extra_link_cost_per_node(load_hardware("br166-ubbv2-port10"), 32, &links) == doctest::Approx(6000));
    CHECK(links == doctest::Approx(4));
    CHECK(extra_link_cost_per_node(load_hardware("br166-ubbv2"), 32) == 0);
    // An odd node out has no pair: 3 nodes hold one pair's 8 links, 12k over 3 nodes.
    CHECK(extra_link_cost_per_node(load_hardware("br166-ubbv2-port10"), 3) == doctest::Approx(4000));
  }

  TEST_CASE("refused: a node count outside the cluster, a mask on the wrong tier or to the same half") {
    const HardwareSpec hw = load_hardware("br166-ubbv2");
    CHECK_THROWS_AS((void)device_graph(hw, 0), ConfigError);
    CHECK_THROWS_AS((void)device_graph(hw, kTopologyMaxNodes + 1), ConfigError);
    // Tiers merge by name (tests/data/good/custom-hw.yaml).
    const std::string base = "extends: br166-ubbv2\nnetwork:\n  tiers:\n";
    CHECK_THROWS_WITH_AS((void)parse_hardware(base + "    - {name: vnode, partner_xor: 1}\n", "x.yaml"),
                         doctest::Contains("only applies with `topology: pairs`"), ConfigError);
    // 0 ^ 3 = 3 stays in the VNode of cards 0-3: not a partner in the paired VNode.
    CHECK_THROWS_WITH_AS((void)parse_hardware(base + "    - {name: node, partner_xor: 3}\n", "x.yaml"),
                         doctest::Contains("not in another sub-unit"), ConfigError);
    CHECK_THROWS_WITH_AS(
        (void)parse_hardware("extends: br166-ubbv2\nnetwork:\n  extra_links:\n"
                             "    - {name: x, between: node_pairs, bandwidth: 1 GB/s, latency: 1 us, partner_xor: 8}\n",
                             "x.yaml"),
        doctest::Contains("beyond the node's 8 devices"), ConfigError);
  }
}
