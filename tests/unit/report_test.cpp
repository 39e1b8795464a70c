// The HTML report: one self-contained page whose five plots are drawn from the search.

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "paraplan/paraplan.hpp"

namespace fs = std::filesystem;
using namespace paraplan;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_SUITE("report.html") {
  TEST_CASE("rank_html: five plots, self-contained, finite, the best plan first") {
    SpacePlan space = load_space("default");
    space.space.nodes.values = {16, 32};
    Planner planner(space.hardware, space.model);
    SearchOptions o;
    o.keep_all = true;
    o.top = 10;
    const SearchResult r = planner.search(space.space, o);
    REQUIRE_FALSE(r.best.empty());
    const Evaluation best = planner.explain(r.best.front().strategy);
    const std::string html = rank_html(space, r, best.memory);
    CHECK(count(html, "<svg") == 5);
    CHECK(count(html, "</svg>") == 5);
    // Self-contained: no script, no external resource.
    CHECK(html.find("<script") == std::string::npos);
    CHECK(html.find("http://") == html.find("http://www.w3.org/2000/svg"));  // only the SVG namespace
    CHECK(html.find("https://") == std::string::npos);
    // Every coordinate is a finite number.
    CHECK_FALSE(std::regex_search(html, std::regex("[\"'=](-?nan|-?inf)", std::regex::icase)));
    // The memory plot has one bar per pipeline stage and kind; the capacity line names it.
    CHECK(count(html, "<title>stage ") == best.memory.stages.size() * 6);
    CHECK(html.find("capacity ") != std::string::npos);
    // The timeline draws every simulated event.
    CHECK(count(html, "<rect x=") >= r.best_timeline.events.size());
    // The table starts with the best plan's TGS.
    char tgs[32];
    std::snprintf(tgs, sizeof tgs, "<td>%.0f</td>", r.best.front().tokens_per_device_per_s);
    CHECK(html.find(tgs) != std::string::npos);
  }

  TEST_CASE("rank -o writes NAME.html beside the other reports") {
    const fs::path dir = fs::temp_directory_path() / "paraplan_html_test";
    fs::remove_all(dir);
    const std::string cmd = std::string(PARAPLAN_CLI) + " rank --nodes 16 -o " + (dir / "r").string() + " > /dev/null 2>&1";
    REQUIRE(std::system(cmd.c_str()) == 0);
    std::ifstream in(dir / "r.html");
    std::stringstream ss;
    ss << in.rdbuf();
    CHECK(count(ss.str(), "<svg") == 5);
    fs::remove_all(dir);
  }
}

TEST_SUITE("report.text") {
  TEST_CASE("evaluate's routing line names the scale-up domain where it joins several nodes") {
    // hardware/gb200-nvl72.yaml: 4-GPU trays (node) on one 72-GPU NVLink domain (tier nvl72).
    // DeepSeek-V3 (256 experts, top-8) at EP64 on 16 trays: one domain, every token's 8 experts
    // inside it, so p(domain) = 1; p(rank) = 1 - C(252, 8) / C(256, 8) = 0.1199 (4 experts per
    // rank: 1 - prod_{i<8} (252 - i) / (256 - i)).
    const ModelSpec dsv3 = load_model("deepseek-v3");
    // evaluate's text of DeepSeek-V3 at EP = DP = `ep` with no pipeline on `nodes` of `hw`
    auto text_of = [&](const char* hw, int nodes, int ep) {
      const HardwareSpec h = load_hardware(hw);
      const std::string yaml = "nodes: " + std::to_string(nodes) + "\nparallel: {tp: 1, pp: 1, dp: " +
                               std::to_string(ep) + ", ep: " + std::to_string(ep) +
                               "}\ntraining: {micro_batch: 1, global_batch: " + std::to_string(ep) +
                               ", recompute: full}\n";
      return evaluation_text(Planner(h, dsv3).explain(parse_strategy(yaml, "ep.yaml", h, dsv3)), false);
    };
    const std::string text = text_of("gb200-nvl72", 16, 64);
    CHECK(text.find("64 EP ranks per nvl72 domain, 1 nvl72 domain;") != std::string::npos);
    CHECK(text.find("given rank with p = 0.1199, a given nvl72 domain with p = 1.0000") != std::string::npos);
    // A preset whose node is its scale-up domain keeps the word node.
    CHECK(text_of("h100-sxm-ib", 2, 16).find("8 EP ranks per node, 2 nodes;") != std::string::npos);
  }
}
