// The C ABI over the C++ library: exceptions become status codes and messages.

#include "paraplan/paraplan.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "paraplan/paraplan.hpp"

struct paraplan_planner {
  std::unique_ptr<paraplan::Planner> planner;
};

namespace {

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

}  // namespace

extern "C" {

const char* paraplan_version(void) { return paraplan::version(); }

paraplan_status paraplan_planner_load(const char* hardware, const char* model, paraplan_planner** out,
                                      char** error) {
  if (hardware == nullptr || model == nullptr || out == nullptr) return null_argument(error, "an argument");
  return guarded(error, [&] {
    auto p = std::make_unique<paraplan_planner>();
    p->planner = std::make_unique<paraplan::Planner>(paraplan::load_hardware(hardware), paraplan::load_model(model));
    *out = p.release();
    return PARAPLAN_OK;
  });
}

paraplan_status paraplan_planner_from_strings(const char* hardware_yaml, const char* model_yaml,
                                              paraplan_planner** out, char** error) {
  if (hardware_yaml == nullptr || model_yaml == nullptr || out == nullptr) return null_argument(error, "an argument");
  return guarded(error, [&] {
    auto p = std::make_unique<paraplan_planner>();
    p->planner = std::make_unique<paraplan::Planner>(paraplan::parse_hardware(hardware_yaml, "hardware.yaml"),
                                                     paraplan::parse_model(model_yaml, "model.yaml"));
    *out = p.release();
    return PARAPLAN_OK;
  });
}

paraplan_status paraplan_evaluate(const paraplan_planner* planner, const char* strategy_yaml, char** json,
                                  char** error) {
  if (planner == nullptr || strategy_yaml == nullptr || json == nullptr) return null_argument(error, "an argument");
  return guarded(error, [&] {
    const paraplan::Planner& p = *planner->planner;
    paraplan::Strategy s = paraplan::parse_strategy(strategy_yaml, "strategy.yaml", p.hardware(), p.model());
    *json = copy(paraplan::evaluation_json(p.explain(s)));
    return PARAPLAN_OK;
  });
}

paraplan_status paraplan_search(const paraplan_planner* planner, const char* space_yaml, int top, int threads,
                                char** json, char** error) {
  if (planner == nullptr || space_yaml == nullptr || json == nullptr) return null_argument(error, "an argument");
  return guarded(error, [&] {
    const paraplan::Planner& p = *planner->planner;
    paraplan::SpacePlan sp{p.hardware(), p.model(), paraplan::parse_search_space(space_yaml, "space.yaml")};
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

void paraplan_planner_free(paraplan_planner* planner) { delete planner; }

}  // extern "C"
