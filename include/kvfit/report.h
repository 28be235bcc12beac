#pragma once
/// @file report.h
/// Reports: one file per format (src/report/), each rendering a plan_result (plan.h): the runtime_plan and the model
/// it was made for. Renderers compute nothing new: every figure is the runtime's or the planner's. The runtime-specific
/// text is the typed sections each runtime builds in its own folder (runtime.h runtime_plan::sections), rendered
/// without naming a runtime; a plan without sections gets the common lines (verdict, devices, caches, refusals,
/// notes, launch).

#include "kvfit/model_set.h"
#include "kvfit/plan.h"
#include "kvfit/speed.h"
#include "kvfit/units.h"

#include <string>
#include <string_view>

namespace kvfit {

/// Version of the --json document, the same for every runtime: bumped when a key changes meaning or disappears.
/// docs/json.md describes every field and the migration from the two version-1 documents.
inline constexpr int json_schema_version = 2;

/// The human report, chosen by what the plan carries, never by the runtime's name: sections that are the whole
/// report (runtime_plan::sections_complete; llama.cpp: layer layout, per-token bytes, the seeds' table, weights, and
/// with GPUs the fit, the largest n_ctx per cache type, what would fit instead, the launch) after the warnings;
/// other sections (vLLM, SGLang, Ollama: their specs, budget and pool) between the device and model lines and the
/// verdict with the runtime's own messages, notes, searches and launch lines; no sections, the common lines. Binary
/// units (GiB = 2^30 B, MiB = 2^20 B) are labelled.
std::string render_text(const plan_result & r);

/// `--check`: a verdict on the user's own flags. For each GPU over its budget (capacity - reserved), names the first
/// buffer in the runtime's allocation order that crosses it and by how much, then the runtime's refusals and what
/// would fit instead (the largest context per cache type when runtime_plan::words asks for it, else the planner's
/// alternatives), in the runtime's words (runtime_plan::words). Requires GPUs (r.target.gpus).
std::string render_check(const plan_result & r);

/// The --json document, schema_version json_schema_version (docs/json.md): runtime, rules, model{...}, gpus,
/// context_tokens, sequences, fits, starts, refusals, warnings, notes, kv_bytes_per_token, state_bytes_per_sequence,
/// totals{...}, devices[...], caches[...], max_context[...], alternatives[...], launch, detail{...}. Pretty-printed
/// with 2 spaces.
std::string render_json(const plan_result & r);

/// The `--speed` section of a plan, as the speed model of its runtime writes it (speed.h find_speed_model; llama.cpp: the spill cliff
/// of its settings at its context on its GPUs, or the CPU-only estimate without GPUs). Throws kvfit::error "--speed: X
/// has no speed model" for a runtime without one, or what the runtime's planner throws.
std::string render_speed_section(const plan_result & r, const speed_settings & ss);

/// How reports name a buffer of the fixed vocabulary (runtime.h: buffer): "kv" -> "KV cache", "state" -> "recurrent
/// state", "compute" -> "compute buffer", "kv_pool" -> "KV cache pool"; an unknown name is shown as it is.
std::string_view buffer_label(std::string_view name);

/// The set as text: how the runtime co-locates, each model's summary, each GPU's sum against its capacity, the
/// verdict, refusals, warnings and the joint alternatives.
std::string render_set_text(const set_result & s);

/// The set as one JSON document (docs/json.md "Sets"): {"schema_version", "set": true, "runtime", "colocation",
/// "fits", "refusals", "warnings", "models", "fits_alone", "devices", "alternatives", "plans": [render_json of each
/// plan]}.
std::string render_set_json(const set_result & s);

} // namespace kvfit
