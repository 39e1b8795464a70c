// Every file in tests/data/bad/ fails `check_file` with exactly the diagnostics its
// `# expect:` comment lines list, in order. `{file}` stands for the file's path and
// `{dir}` for its folder. The messages are the contract users see: change them on purpose.

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "paraplan/config.hpp"
#include "paraplan/errors.hpp"

namespace fs = std::filesystem;

namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) {
    s.replace(pos, from.size(), to);
  }
  return s;
}

std::vector<std::string> expected_of(const fs::path& file) {
  std::vector<std::string> out;
  std::ifstream in(file);
  std::string line;
  const std::string dir = file.parent_path().string();
  while (std::getline(in, line)) {
    const std::string tag = "# expect: ";
    if (line.rfind(tag, 0) != 0) continue;
    std::string msg = line.substr(tag.size());
    msg = replace_all(msg, "{file}", file.string());
    msg = replace_all(msg, "{dir}", dir);
    out.push_back(msg);
  }
  return out;
}

}  // namespace

TEST_SUITE("config.bad_inputs") {
  TEST_CASE("each bad file reports exactly its expected file:line:col diagnostics") {
    const fs::path dir = fs::canonical(fs::path(PARAPLAN_TEST_DATA) / "bad");
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() == ".yaml") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    REQUIRE(files.size() >= 15);
    for (const fs::path& file : files) {
      CAPTURE(file.string());
      std::vector<std::string> expected = expected_of(file);
      REQUIRE_MESSAGE(!expected.empty(), "a bad file needs at least one `# expect:` line");
      std::vector<std::string> got;
      try {
        (void)paraplan::check_file(file.string());
      } catch (const paraplan::ConfigError& e) {
        for (const auto& d : e.diagnostics()) got.push_back(d.str());
      }
      std::string shown;
      for (const std::string& g : got) shown += "\n  " + g;
      CHECK_MESSAGE(got == expected, "got:" << shown);
    }
  }
}
