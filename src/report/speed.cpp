// The --speed section (include/kvfit/report.h): the speed model of the plan's runtime writes it (speed.h
// find_speed_model); a runtime without one is refused, naming the runtimes that have one.
#include "kvfit/report.h"

#include "kvfit/error.h"
#include "kvfit/plan.h"
#include "kvfit/speed.h"

#include <fmt/format.h>

namespace kvfit {

std::string render_speed_section(const plan_result & r, const speed_settings & ss) {
    const runtime_info & rt = find_runtime(r.plan.runtime);
    if (const speed_model * sm = find_speed_model(rt)) return sm->speed_section(r, ss);
    std::string with;
    for (const auto & other : runtimes()) {
        if (find_speed_model(other)) with += (with.empty() ? "" : ", ") + std::string(other.display);
    }
    throw error(fmt::format("--speed: {} has no speed model (kvfit models the speed of {})", rt.display, with));
}

} // namespace kvfit
