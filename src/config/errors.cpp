#include "paraplan/errors.hpp"

#include <string>

#include "paraplan/version.hpp"

namespace paraplan {

std::string Diagnostic::str() const {
  // Appends one piece at a time: `":" + std::to_string(n)` trips GCC 12's -Wrestrict.
  std::string out = file;
  if (line > 0) {
    out.push_back(':');
    out.append(std::to_string(line));
    if (col > 0) {
      out.push_back(':');
      out.append(std::to_string(col));
    }
  }
  out.append(": error: ");
  out.append(message);
  return out;
}

namespace {
std::string join_all(const std::vector<Diagnostic>& diags) {
  std::string out;
  for (const Diagnostic& d : diags) {
    if (!out.empty()) out += '\n';
    out += d.str();
  }
  return out;
}
}  // namespace

ConfigError::ConfigError(std::vector<Diagnostic> diagnostics)
    : Error(join_all(diagnostics)), diags_(std::move(diagnostics)) {
  if (diags_.empty()) diags_.push_back(Diagnostic{"<input>", 0, 0, "invalid input"});
}

const char* version() noexcept { return PARAPLAN_VERSION; }

}  // namespace paraplan
