// The C ABI: untrusted YAML strings reach built-in presets and files under an include
// directory only, and never show anything of a file they did not accept; planner handles
// are checked, so a freed or garbage one is PARAPLAN_BAD_INPUT, not a crash (#21).

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "paraplan/paraplan.h"

namespace fs = std::filesystem;

namespace {

/// A scratch folder with a file outside it (`outside/secret.yaml`) and one inside
/// (`include/hw.yaml`), and a symlink inside that points outside.
struct Dirs {
  fs::path root = fs::temp_directory_path() / ("paraplan-capi-" + std::to_string(getpid()));
  fs::path include = root / "include";
  fs::path secret = root / "outside" / "secret.yaml";
  Dirs() {
    fs::remove_all(root);
    fs::create_directories(include);
    fs::create_directories(secret.parent_path());
    // A map whose keys an error would quote ("unknown key `password`") if it were read.
    std::ofstream(secret) << "password: hunter2\napi_token: s3cr3t\n";
    std::ofstream(include / "hw.yaml") << "extends: h100-sxm-ib\nname: included-h100\n";
    fs::create_symlink(secret, include / "link.yaml");
  }
  ~Dirs() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

/// The status of a call and its message (freed here).
struct Result {
  paraplan_status status = PARAPLAN_OK;
  std::string error;
};

Result from_strings(const std::string& hw, const char* include_dir, paraplan_planner** out) {
  char* error = nullptr;
  Result r;
  r.status = paraplan_planner_from_strings_in(hw.c_str(), "extends: deepseek-v3\n", include_dir, out, &error);
  if (error != nullptr) r.error = error;
  paraplan_free(error);
  return r;
}

Result evaluate(const paraplan_planner* p, const std::string& strategy) {
  char* json = nullptr;
  char* error = nullptr;
  Result r;
  r.status = paraplan_evaluate(p, strategy.c_str(), &json, &error);
  if (error != nullptr) r.error = error;
  paraplan_free(json);
  paraplan_free(error);
  return r;
}

bool leaks(const std::string& message) {
  return message.find("password") != std::string::npos || message.find("hunter2") != std::string::npos ||
         message.find("api_token") != std::string::npos;
}

const char* kStrategy =
    "nodes: 256\nparallel: {pp: 16, dp: 128, ep: 64}\n"
    "training: {micro_batch: 1, global_batch: 15360, precision: fp8, recompute: full}\n"
    "moe: {dispatch: deepep}\nschedule: dualpipe\n";

}  // namespace

TEST_SUITE("capi") {
  TEST_CASE("strings extend built-in presets; files only under an include directory given explicitly") {
    Dirs d;
    paraplan_planner* p = nullptr;
    // Presets: always.
    Result ok = from_strings("extends: h800-ib\nname: mine\n", nullptr, &p);
    CHECK(ok.status == PARAPLAN_OK);
    CHECK(evaluate(p, kStrategy).status == PARAPLAN_OK);
    // A file by absolute path, with no include directory: refused unread.
    Result abs = evaluate(p, "extends: " + d.secret.string() + "\n");
    CHECK(abs.status == PARAPLAN_BAD_INPUT);
    CHECK(abs.error.find("may name only built-in presets here (no include directory was given)") != std::string::npos);
    CHECK_FALSE(leaks(abs.error));
    Result passwd = evaluate(p, "extends: /etc/passwd\n");
    CHECK(passwd.status == PARAPLAN_BAD_INPUT);
    CHECK(passwd.error.find("root:") == std::string::npos);
    paraplan_planner_free(p);

    // The hardware string itself, likewise.
    p = nullptr;
    Result hw = from_strings("extends: " + d.secret.string() + "\nname: x\n", nullptr, &p);
    CHECK(hw.status == PARAPLAN_BAD_INPUT);
    CHECK(p == nullptr);
    CHECK_FALSE(leaks(hw.error));

    // With an include directory: files under it, by relative or absolute path.
    const std::string inc = d.include.string();
    Result rel = from_strings("extends: hw.yaml\n", inc.c_str(), &p);
    CHECK(rel.status == PARAPLAN_OK);
    paraplan_planner_free(p);
    Result inside = from_strings("extends: " + (d.include / "hw.yaml").string() + "\n", inc.c_str(), &p);
    CHECK(inside.status == PARAPLAN_OK);
    // Outside it: `..`, an absolute path, a symlink that leads out. Refused unread.
    for (const std::string& ref : {std::string("../outside/secret.yaml"), d.secret.string(), std::string("link.yaml")}) {
      CAPTURE(ref);
      Result out = evaluate(p, "extends: " + ref + "\n");
      CHECK(out.status == PARAPLAN_BAD_INPUT);
      CHECK(out.error.find("is outside the include directory") != std::string::npos);
      CHECK_FALSE(leaks(out.error));
    }
    paraplan_planner_free(p);
  }

  TEST_CASE("the include directory can be set on a loaded planner; a missing one is refused") {
    Dirs d;
    std::ofstream(d.include / "mine.yaml") << "extends: deepseek-v3-h800\n";
    paraplan_planner* p = nullptr;
    char* error = nullptr;
    REQUIRE(paraplan_planner_load("h800-ib", "deepseek-v3", &p, &error) == PARAPLAN_OK);
    CHECK(evaluate(p, "extends: mine.yaml\n").status == PARAPLAN_BAD_INPUT);  // presets only by default
    CHECK(paraplan_planner_set_include_dir(p, d.include.string().c_str(), &error) == PARAPLAN_OK);
    CHECK(evaluate(p, "extends: mine.yaml\n").status == PARAPLAN_OK);
    CHECK(paraplan_planner_set_include_dir(p, (d.root / "nope").string().c_str(), &error) == PARAPLAN_BAD_INPUT);
    REQUIRE(error != nullptr);
    CHECK(std::string(error).find("is not a directory") != std::string::npos);
    paraplan_free(error);
    error = nullptr;
    CHECK(paraplan_planner_set_include_dir(p, nullptr, &error) == PARAPLAN_OK);
    CHECK(evaluate(p, "extends: mine.yaml\n").status == PARAPLAN_BAD_INPUT);
    paraplan_planner_free(p);
  }

  TEST_CASE("a freed, doubly freed or garbage planner handle is PARAPLAN_BAD_INPUT, never a crash") {
    paraplan_planner* p = nullptr;
    char* error = nullptr;
    REQUIRE(paraplan_planner_load("h800-ib", "deepseek-v3", &p, &error) == PARAPLAN_OK);
    CHECK(evaluate(p, kStrategy).status == PARAPLAN_OK);
    paraplan_planner_free(p);
    Result freed = evaluate(p, kStrategy);
    CHECK(freed.status == PARAPLAN_BAD_INPUT);
    CHECK(freed.error.find("not a live planner") != std::string::npos);
    paraplan_planner_free(p);  // a second free is ignored
    // A new planner never takes the old handle's value.
    paraplan_planner* q = nullptr;
    REQUIRE(paraplan_planner_load("h800-ib", "deepseek-v3", &q, &error) == PARAPLAN_OK);
    CHECK(q != p);
    CHECK(evaluate(p, kStrategy).status == PARAPLAN_BAD_INPUT);
    CHECK(evaluate(q, kStrategy).status == PARAPLAN_OK);
    paraplan_planner_free(q);
    // Garbage: a pointer to something else, and a made-up value.
    int not_a_planner = 42;
    auto* garbage = reinterpret_cast<paraplan_planner*>(&not_a_planner);
    CHECK(evaluate(garbage, kStrategy).status == PARAPLAN_BAD_INPUT);
    char* json = nullptr;
    CHECK(paraplan_search(reinterpret_cast<paraplan_planner*>(0x1234), "nodes: [16]\n", 1, 1, &json, &error) ==
          PARAPLAN_BAD_INPUT);
    CHECK(json == nullptr);
    paraplan_free(error);
    error = nullptr;
    CHECK(paraplan_planner_set_include_dir(garbage, nullptr, &error) == PARAPLAN_BAD_INPUT);
    paraplan_free(error);
    paraplan_planner_free(garbage);  // ignored
  }
}
