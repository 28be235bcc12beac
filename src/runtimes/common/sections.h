#pragma once
// Small builders of typed plan sections (runtime.h: plan_section, plan_row, plan_figure), shared by the serving
// runtimes (src/runtimes/vllm, sglang, ollama) that build their report sections from their own plans. Not public API.
#include "kvfit/runtime.h"
#include "core/util.h"

#include <cstdint>
#include <fmt/format.h>
#include <string>
#include <utility>
#include <vector>

namespace kvfit::detail {

/// A size figure: `bytes` bytes, from `source`, a kvfit estimate or not.
inline plan_figure size_figure(std::string label, uint64_t bytes, std::string source, bool estimate = false) {
    plan_figure f;
    f.label = std::move(label);
    f.bytes = bytes;
    f.source = std::move(source);
    f.estimate = estimate;
    return f;
}

/// A number figure: `value` in `unit` (tokens, blocks, requests, layers, fraction), from `source`.
inline plan_figure count_figure(std::string label, double value, std::string unit, std::string source,
                                bool estimate = false) {
    plan_figure f;
    f.label = std::move(label);
    f.value = value;
    f.unit = std::move(unit);
    f.source = std::move(source);
    f.estimate = estimate;
    return f;
}

/// A word figure ("fp8", "auto"), from `source` (usually "flag": the setting as given or defaulted).
inline plan_figure word_figure(std::string label, std::string text, std::string source) {
    plan_figure f;
    f.label = std::move(label);
    f.text = std::move(text);
    f.source = std::move(source);
    return f;
}

/// Appends a row (its text and figures) to `s`.
inline void add_row(plan_section & s, std::string text, std::vector<plan_figure> figures = {}) {
    s.rows.push_back({std::move(text), std::move(figures)});
}

} // namespace kvfit::detail
