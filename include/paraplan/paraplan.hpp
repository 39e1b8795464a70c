#pragma once
/// The whole public API of paraplan: `#include <paraplan/paraplan.hpp>`.

#include "paraplan/calibrate.hpp"
#include "paraplan/config.hpp"
#include "paraplan/errors.hpp"
#include "paraplan/estimate.hpp"
#include "paraplan/interop.hpp"
#include "paraplan/model.hpp"
#include "paraplan/planner.hpp"
#include "paraplan/report.hpp"
#include "paraplan/spec.hpp"
#include "paraplan/topology.hpp"
#include "paraplan/units.hpp"
#include "paraplan/validate.hpp"
#include "paraplan/version.hpp"
