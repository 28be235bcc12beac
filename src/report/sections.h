#pragma once
// Private to src/report/: the text report's parts (text.cpp: the dispatch and the common report of a plan without
// sections; text_serving.cpp: the sections, framed or whole, and the planner's searches). Every runtime-specific
// line comes from runtime_plan::sections, built by the runtime in its own folder: nothing here names a runtime or
// reads a plan's detail.
#include "kvfit/gpus.h"
#include "kvfit/report.h"

#include <string>
#include <vector>

namespace kvfit::detail {

/// A plan's typed sections (runtime_plan::sections) as text: a titled section after a blank line, its title, then
/// its rows indented by two spaces; an untitled section's rows as they are (their own indent).
void render_sections(std::string & out, const std::vector<plan_section> & sections);

/// The text of a plan whose sections are framed by the report (runtime_plan::sections_complete false): the device and
/// model lines, the sections, the verdict, errors, warnings, assumptions, notes, the searches and the launch.
std::string render_serving_text(const plan_result & r);

/// The text of a plan whose sections are the whole report (sections_complete): the warnings, the sections (the
/// runtime's and, appended by the planner, its words for the searches: runtime_info::search_sections), the units.
std::string render_complete_text(const plan_result & r);

/// The planner's searches as text, for any runtime: the largest value of the context setting per cache type
/// (plan.max_context) and, when the plan does not fit, each alternative's flags (plan.alternatives). Flag names come
/// from the registry (runtime_info), so no runtime is named here. Nothing when the plan has neither.
void render_search(std::string & out, const plan_result & r);

/// The text of a plan without sections: verdict, devices, caches, refusals, notes, launch.
std::string render_generic_text(const plan_result & r);

} // namespace kvfit::detail
