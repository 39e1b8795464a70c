#pragma once
/// Library version (semantic versioning).

#include "paraplan/export.hpp"

namespace paraplan {

/// "MAJOR.MINOR.PATCH" of the library this program is linked against.
[[nodiscard]] PARAPLAN_EXPORT const char* version() noexcept;

}  // namespace paraplan
