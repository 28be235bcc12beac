// The runtime interface's shared pieces (include/kvfit/runtime.h): device totals, flag names and values.
#include "kvfit/runtime.h"

#include "kvfit/error.h"
#include "kvfit/units.h"

#include <charconv>
#include <algorithm>
#include <cctype>
#include <fmt/format.h>

namespace kvfit {

uint64_t device_plan::used_bytes() const {
    uint64_t n = 0;
    for (const auto & b : buffers) n += b.bytes;
    return n;
}

uint64_t device_plan::bytes_of(std::string_view name) const {
    uint64_t n = 0;
    for (const auto & b : buffers) n += b.name == name ? b.bytes : 0;
    return n;
}

int64_t device_plan::free_bytes() const {
    return is_host ? 0 : int64_t(capacity_bytes) - int64_t(reserved_bytes) - int64_t(used_bytes());
}

bool device_plan::fits() const { return is_host || used_bytes() + reserved_bytes <= capacity_bytes; }

std::string flag_spec::json_name() const {
    std::string out(name.substr(name.starts_with("--") ? 2 : 0));
    for (char & c : out) c = c == '-' ? '_' : c;
    return out;
}

std::vector<std::string_view> flag_spec::spellings() const {
    std::vector<std::string_view> out;
    if (!alias.empty()) out.push_back(alias);
    out.push_back(name);
    out.insert(out.end(), alternates.begin(), alternates.end());
    return out;
}

bool flag_spec::spelled(std::string_view word) const {
    return !word.empty() && (word == name || word == alias ||
                             std::find(alternates.begin(), alternates.end(), word) != alternates.end());
}

std::string_view flag_spec::value_name() const {
    if (!metavar.empty()) return metavar;
    switch (type) {
    case flag_type::boolean: return "";
    case flag_type::count: return "INT";
    case flag_type::size: return "SIZE";
    case flag_type::fraction: return "FLOAT";
    case flag_type::list: return "VALUE[,VALUE...]";
    case flag_type::text: break;
    }
    return "VALUE";
}

std::string_view flag_setting_name(flag_setting s) {
    switch (s) {
    case flag_setting::none: break;
    case flag_setting::context: return "context";
    case flag_setting::concurrency: return "concurrency";
    case flag_setting::cache_type_k: return "cache_type_k";
    case flag_setting::cache_type_v: return "cache_type_v";
    case flag_setting::cache_type: return "cache_type";
    case flag_setting::flash_attn: return "flash_attn";
    case flag_setting::memory_margin: return "memory_margin";
    }
    return "none";
}

const flag_spec * find_flag_spelled(const std::vector<flag_spec> & flags, std::string_view word) {
    for (const auto & f : flags) {
        if (f.spelled(word)) return &f;
    }
    return nullptr;
}

const flag_spec * flag_for_setting(const runtime_info & rt, flag_setting s) {
    if (s == flag_setting::none || !rt.flags) return nullptr;
    const bool cache = s == flag_setting::cache_type_k || s == flag_setting::cache_type_v;
    for (const auto & f : rt.flags()) {
        if (f.setting == s || (cache && f.setting == flag_setting::cache_type)) return &f;
    }
    return nullptr;
}

void flag_values::set(std::string_view name, std::string value) {
    values_[std::string(name)] = {std::move(value)};
}

void flag_values::add(std::string_view name, std::string value) {
    values_[std::string(name)].push_back(std::move(value));
}

void flag_values::erase(std::string_view name) {
    if (const auto it = values_.find(name); it != values_.end()) values_.erase(it);
}

bool flag_values::has(std::string_view name) const { return values_.find(name) != values_.end(); }

std::string flag_values::text(std::string_view name, std::string_view fallback) const {
    const auto it = values_.find(name);
    return it == values_.end() || it->second.empty() ? std::string(fallback) : it->second.back();
}

std::vector<std::string> flag_values::list(std::string_view name) const {
    const auto it = values_.find(name);
    return it == values_.end() ? std::vector<std::string>{} : it->second;
}

bool flag_values::boolean(std::string_view name) const { return has(name) && text(name) != "false"; }

uint64_t parse_flag_count(std::string_view flag, std::string_view text, uint64_t min, uint64_t max) {
    uint64_t v = 0;
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    // 99999999999999999999: all digits, past what uint64_t holds (from_chars: result_out_of_range) - too large, as
    // a number above `max` is, not "expected a positive integer"
    if (!text.empty() && ec == std::errc::result_out_of_range && p == text.data() + text.size()) {
        throw error(fmt::format("{} {}: too large (at most {})", flag, text, max));
    }
    if (text.empty() || ec != std::errc() || p != text.data() + text.size()) {
        throw error(fmt::format("{} '{}': expected a {} integer", flag, text, min > 0 ? "positive" : "non-negative"));
    }
    if (v < min) throw error(fmt::format("{} {}: must be at least {}", flag, v, min));
    if (v > max) throw error(fmt::format("{} {}: too large (at most {})", flag, v, max));
    return v;
}

std::string flag_spelling(const runtime_info & rt, std::string_view json_name) {
    for (const auto & s : rt.flags()) {
        if (s.json_name() == json_name) return std::string(s.alias.empty() ? s.name : s.alias);
    }
    return std::string(json_name);
}

flag_values with_cache_type(const runtime_info & rt, flag_values f, std::string_view type) {
    for (const std::string_view flag : {rt.cache_type_k, rt.cache_type_v}) {
        if (flag.empty()) continue;
        if (!rt.cache_type_unset.empty() && type == rt.cache_type_unset) f.erase(flag);
        else f.set(flag, std::string(type));
    }
    return f;
}

std::string requested_cache_type(const runtime_info & rt, const flag_values & f) {
    if (rt.cache_types.empty()) return "";
    return f.text(rt.cache_type_k, rt.cache_types[0]);
}

const runtime_info & find_runtime(std::string_view name) {
    std::string names;
    const auto same = [](std::string_view a, std::string_view b) { // "vLLM" finds vllm, as --runtime reads it
        return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
                   return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
               });
    };
    for (const auto & r : runtimes()) {
        if (same(r.name, name)) return r;
        names += fmt::format("{}{}", names.empty() ? "" : ", ", r.name);
    }
    throw error(fmt::format("--runtime '{}': expected one of {}", name, names));
}

std::string gpu_memory_text(const device_spec & d) {
    const std::string marketed = d.marketed_gb ? fmt::format("marketed {} GB", d.marketed_gb) : "";
    if (d.vendor == "Apple" && d.reported_bytes) {
        const std::string ram = fmt::format("{} unified memory", human_bytes(d.reported_bytes));
        if (d.memory_is_working_set) return fmt::format("{} Metal working set ({}; {})", human_bytes(d.memory_bytes), ram, marketed);
        return fmt::format("{} ({})", ram, marketed);
    }
    if (d.memory_is_working_set) return fmt::format("{} Metal working set", human_bytes(d.memory_bytes));
    if (!d.marketed_gb) return human_bytes(d.memory_bytes);
    const bool amd = d.vendor == "AMD";
    return fmt::format("{} as {} reports it ({}{} {} MiB; {})", human_bytes(d.memory_bytes), amd ? "HIP" : "CUDA",
                       d.memory_estimate ? "estimate; " : "", amd ? "rocm-smi" : "nvidia-smi",
                       with_commas(d.reported_bytes >> 20), marketed);
}

} // namespace kvfit
