// The C ABI over the C++ library: exceptions become status codes and messages.
//
// Handles are checked, not trusted: a paraplan_planner* is a key into a registry of live
// planners, never dereferenced until found there, so a freed, doubly freed or garbage handle
// is PARAPLAN_BAD_INPUT instead of a crash. Keys count up from a magic base and are never
// reused, so a stale handle cannot reach a planner created after it was freed.

#include "paraplan/paraplan.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "paraplan/paraplan.hpp"

namespace {

/// What a handle stands for.
struct PlannerState {
  std::unique_ptr<paraplan::Planner> planner;
  paraplan::IncludeScope scope;  ///< what the strings given to this planner may open
  std::mutex scope_mutex;        ///< guards `scope` (set_include_dir vs. evaluate/search)

  paraplan::IncludeScope current_scope() {
    std::lock_guard lock(scope_mutex);
    return scope;
  }
};

/// Live planners by handle value. A call holds a shared_ptr for its duration, so freeing a
/// planner while another thread uses it only ends it after that call returns.
class Registry {
 public:
  paraplan_planner* add(std::shared_ptr<PlannerState> state) {
    std::lock_guard lock(mutex_);
    const std::uintptr_t key = kMagic + 16 * next_++;
    live_.emplace(key, std::move(state));
    return reinterpret_cast<paraplan_planner*>(key);  // never dereferenced: only a key
  }
  std::shared_ptr<PlannerState> find(const paraplan_planner* handle) {
    std::lock_guard lock(mutex_);
    auto it = live_.find(reinterpret_cast<std::uintptr_t>(handle));
    return it == live_.end() ? nullptr : it->second;
  }
  bool remove(const paraplan_planner* handle) {
    std::lock_guard lock(mutex_);
    return live_.erase(reinterpret_cast<std::uintptr_t>(handle)) > 0;
  }

 private:
  // Handle values: 0x9A4A9000'0000'0000 + 16 n on 64-bit targets (far from NULL and small
  // integers a caller might pass by mistake), 0x9A400000 + 16 n on 32-bit ones.
  static constexpr std::uintptr_t kMagic =
      sizeof(std::uintptr_t) >= 8 ? static_cast<std::uintptr_t>(0x9A4A900000000000ull) : 0x9A400000u;
  std::mutex mutex_;
  std::uintptr_t next_ = 1;
  std::unordered_map<std::uintptr_t, std::shared_ptr<PlannerState>> live_;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: handles may be freed from atexit code
  return *r;
}

char* copy(const std::string& s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out != nullptr) std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

void set(char** where, const std::string& s) {
  if (where != nullptr) *where = copy(s);
}

template <typename F>
paraplan_status guarded(char** error, F body) {
  try {
    return body();
  } catch (const paraplan::ConfigError& e) {
    set(error, e.what());
    return PARAPLAN_BAD_INPUT;
  } catch (const std::exception& e) {
    set(error, std::string("internal error: ") + e.what());
    return PARAPLAN_INTERNAL_ERROR;
  } catch (...) {
    set(error, "internal error");
    return PARAPLAN_INTERNAL_ERROR;
  }
}

paraplan_status null_argument(char** error, const char* what) {
  set(error, std::string(what) + " is NULL");
  return PARAPLAN_BAD_INPUT;
}

paraplan_status not_a_planner(char** error) {
  set(error, "the planner handle is not a live planner (freed already, or never returned by "
             "paraplan_planner_load / paraplan_planner_from_strings)");
  return PARAPLAN_BAD_INPUT;
}

paraplan_status create(paraplan::HardwareSpec hw, paraplan::ModelSpec model, paraplan::IncludeScope scope,
                       paraplan_planner** out) {
  auto state = std::make_shared<PlannerState>();
  state->planner = std::make_unique<paraplan::Planner>(std::move(hw), std::move(model));
  state->scope = std::move(scope);
  *out = registry().add(std::move(state));
  return PARAPLAN_OK;
}

}  // namespace

extern "C" {

const char* paraplan_version(void) { return paraplan::version(); }

paraplan_status paraplan_planner_load(const char* hardware, const char* model, paraplan_planner** out,
                                      char** error) {
  if (hardware == nullptr || model == nullptr || out == nullptr) return null_argument(error, "an argument");
  return guarded(error, [&] {
    return create(paraplan::load_hardware(hardware), paraplan::load_model(model), {}, out);
  });
}

paraplan_status paraplan_planner_from_strings(const char* hardware_yaml, const char* model_yaml,
                                              paraplan_planner** out, char** error) {
  return paraplan_planner_from_strings_in(hardware_yaml, model_yaml, nullptr, out, error);
}

paraplan_status paraplan_planner_from_strings_in(const char* hardware_yaml, const char* model_yaml,
                                                 const char* include_dir, paraplan_planner** out,
                                                 char** error) {
  if (hardware_yaml == nullptr || model_yaml == nullptr || out == nullptr) return null_argument(error, "an argument");
  return guarded(error, [&] {
    const paraplan::IncludeScope scope{include_dir != nullptr ? include_dir : ""};
    return create(paraplan::parse_hardware(hardware_yaml, "hardware.yaml", scope),
                  paraplan::parse_model(model_yaml, "model.yaml", scope), scope, out);
  });
}

paraplan_status paraplan_planner_set_include_dir(paraplan_planner* planner, const char* include_dir,
                                                 char** error) {
  if (planner == nullptr) return null_argument(error, "the planner");
  std::shared_ptr<PlannerState> state = registry().find(planner);
  if (!state) return not_a_planner(error);
  paraplan::IncludeScope scope{include_dir != nullptr ? include_dir : ""};
  std::error_code ec;
  if (!scope.include_dir.empty() && !std::filesystem::is_directory(scope.include_dir, ec)) {
    // Said now, not at the next call that reads a file.
    set(error, "include directory `" + scope.include_dir + "` is not a directory");
    return PARAPLAN_BAD_INPUT;
  }
  std::lock_guard lock(state->scope_mutex);
  state->scope = std::move(scope);
  return PARAPLAN_OK;
}

paraplan_status paraplan_evaluate(const paraplan_planner* planner, const char* strategy_yaml, char** json,
                                  char** error) {
  if (planner == nullptr || strategy_yaml == nullptr || json == nullptr) return null_argument(error, "an argument");
  std::shared_ptr<PlannerState> state = registry().find(planner);
  if (!state) return not_a_planner(error);
  return guarded(error, [&] {
    const paraplan::Planner& p = *state->planner;
    paraplan::Strategy s =
        paraplan::parse_strategy(strategy_yaml, "strategy.yaml", p.hardware(), p.model(), state->current_scope());
    *json = copy(paraplan::evaluation_json(p.explain(s)));
    return PARAPLAN_OK;
  });
}

paraplan_status paraplan_search(const paraplan_planner* planner, const char* space_yaml, int top, int threads,
                                char** json, char** error) {
  if (planner == nullptr || space_yaml == nullptr || json == nullptr) return null_argument(error, "an argument");
  std::shared_ptr<PlannerState> state = registry().find(planner);
  if (!state) return not_a_planner(error);
  return guarded(error, [&] {
    const paraplan::Planner& p = *state->planner;
    paraplan::SpacePlan sp{p.hardware(), p.model(),
                           paraplan::parse_search_space(space_yaml, "space.yaml", state->current_scope())};
    paraplan::SearchOptions opt;
    opt.top = top > 0 ? top : sp.space.top;
    opt.threads = threads;
    opt.objective = sp.space.objective;
    paraplan::SearchResult r = p.search(sp.space, opt);
    *json = copy(paraplan::rank_json(sp, r));
    return r.best.empty() ? PARAPLAN_INFEASIBLE : PARAPLAN_OK;
  });
}

void paraplan_free(char* text) { std::free(text); }

void paraplan_planner_free(paraplan_planner* planner) {
  if (planner != nullptr) (void)registry().remove(planner);
}

}  // extern "C"
