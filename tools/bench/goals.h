// goals.h: the speed goals of the issues, checked against a run's own
// figures (each a ratio to a baseline of the same run, or an absolute time).
#pragma once

#include <vector>

#include "report.h"

namespace hixl_bench {

// Goals whose figures the report holds; a goal without them is left out.
std::vector<Goal> EvaluateGoals(const Report &r);

}  // namespace hixl_bench
