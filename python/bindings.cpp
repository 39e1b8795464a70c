// The `paraplan` Python module's native part (`paraplan._paraplan`): the library's JSON
// writers and loaders, bound as functions of strings. python/paraplan/__init__.py turns the
// JSON into dicts; no logic lives here.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "paraplan/paraplan.hpp"

namespace py = pybind11;

namespace {

// Bad input reaches Python as ValueError with the located diagnostics, one per line.
template <class F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const paraplan::ConfigError& e) {
    std::string text;
    for (const paraplan::Diagnostic& d : e.diagnostics()) text += d.str() + "\n";
    throw py::value_error(text);
  }
}

std::string evaluate_json(const std::string& strategy, const std::vector<std::string>& sets) {
  return guarded([&] {
    const paraplan::Plan plan = paraplan::load_plan(strategy, sets);
    return paraplan::evaluation_json(paraplan::Planner(plan.hardware, plan.model).explain(plan.strategy));
  });
}

std::string evaluate_yaml_json(const std::string& yaml, const std::string& name) {
  return guarded([&] {
    const paraplan::Plan plan = paraplan::parse_plan(yaml, name);
    return paraplan::evaluation_json(paraplan::Planner(plan.hardware, plan.model).explain(plan.strategy));
  });
}

std::string search_json(const std::string& space, const std::vector<std::string>& sets, int top, int threads) {
  return guarded([&] {
    const paraplan::SpacePlan sp = paraplan::load_space(space, sets);
    paraplan::Planner planner(sp.hardware, sp.model);
    paraplan::SearchOptions o;
    o.top = top;
    o.threads = threads;
    py::gil_scoped_release unlocked;  // the search runs its own threads
    return paraplan::rank_json(sp, planner.search(sp.space, o));
  });
}

std::vector<std::pair<std::string, std::string>> preset_list() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const paraplan::Preset& p : paraplan::presets()) out.emplace_back(p.name, p.description);
  return out;
}

}  // namespace

PYBIND11_MODULE(_paraplan, m) {
  m.doc() = "paraplan's native library (use the `paraplan` package)";
  m.def("version", [] { return std::string(paraplan::version()); });
  m.def("evaluate_json", &evaluate_json, py::arg("strategy"), py::arg("sets") = std::vector<std::string>{});
  m.def("evaluate_yaml_json", &evaluate_yaml_json, py::arg("yaml"), py::arg("name") = "<string>");
  m.def("search_json", &search_json, py::arg("space"), py::arg("sets") = std::vector<std::string>{},
        py::arg("top") = 20, py::arg("threads") = 0);
  m.def("presets", &preset_list);
}
