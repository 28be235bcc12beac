// A model given as GGUF metadata in JSON ({"general.architecture": "qwen4exp", "qwen4exp.block_count": 49, ...}):
// the keys become an in-memory GGUF header (no tensors) read by model_from_gguf, so such a model goes through the
// GGUF source's mapping and the architecture table exactly as a file would. Used by the catalog for models that
// have a llama.cpp architecture but no published config.json (data/catalog/README.md).
#include "kvfit/error.h"
#include "kvfit/gguf.h"
#include "kvfit/gguf_writer.h"
#include "kvfit/sources.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <limits>

namespace kvfit {
namespace {

using json = nlohmann::json;

// JSON value -> GGUF value: strings str, booleans bool, non-negative integers u32 (u64 above 2^32), negative
// integers i32, other numbers f32; arrays of one of those kinds (integers as u32 / i32 / f32 by their values).
gguf_wvalue value_of(const json & v, const std::string & key, std::string_view where) {
    auto bad = [&](std::string_view what) { return error::bad_key(where, key, what); };
    if (v.is_string()) return gguf_wvalue::string(v.get<std::string>());
    if (v.is_boolean()) return gguf_wvalue::boolean(v.get<bool>());
    if (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)) {
        const auto n = v.get<uint64_t>();
        return n > std::numeric_limits<uint32_t>::max() ? gguf_wvalue::u64(n) : gguf_wvalue::u32(uint32_t(n));
    }
    if (v.is_number_integer()) return gguf_wvalue::i32(int32_t(v.get<int64_t>()));
    if (v.is_number_float()) return gguf_wvalue::f32(v.get<float>());
    if (!v.is_array()) throw bad(std::string("expected a string, number, boolean or array, got ") + v.type_name());
    bool all_uint = true, all_int = true, all_bool = true, all_str = true;
    for (const auto & e : v) {
        all_uint &= e.is_number_unsigned() || (e.is_number_integer() && e.get<int64_t>() >= 0);
        all_int &= e.is_number_integer();
        all_bool &= e.is_boolean();
        all_str &= e.is_string();
    }
    std::vector<gguf_wvalue> elems;
    gguf_type type = gguf_type::f32;
    for (const auto & e : v) {
        if (all_bool) elems.push_back(gguf_wvalue::boolean(e.get<bool>())), type = gguf_type::boolean;
        else if (all_str) elems.push_back(gguf_wvalue::string(e.get<std::string>())), type = gguf_type::string;
        else if (all_uint) elems.push_back(gguf_wvalue::u32(uint32_t(e.get<uint64_t>()))), type = gguf_type::u32;
        else if (all_int) elems.push_back(gguf_wvalue::i32(int32_t(e.get<int64_t>()))), type = gguf_type::i32;
        else if (e.is_number()) elems.push_back(gguf_wvalue::f32(e.get<float>()));
        else throw bad("an array mixes value types");
    }
    return gguf_wvalue::array(type, elems);
}

} // namespace

model_desc model_from_gguf_keys(std::string_view json_text, std::string_view where, warnings & warn) {
    const json j = json::parse(json_text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw error::at(where, "expected a JSON object of GGUF keys");
    gguf_writer w;
    for (const auto & [key, value] : j.items()) {
        if (key.starts_with("_")) continue; // "_comment", "_source": notes for people, not metadata
        w.add(key, value_of(value, key, where));
    }
    const std::string header = w.header();
    model_desc m = model_from_gguf(std::vector<gguf_file>{gguf_file::parse(header, std::string(where))}, warn);
    // no tensor list: the weights are unknown, not zero
    m.weights = model_weights{};
    m.weights.layers.assign(m.n_layer, weight_group{});
    warn.push_back(fmt::format("{}: GGUF metadata without tensors: parameters and weight bytes unknown "
                               "(give --weights-size)", where));
    if (m.n_vocab == 0) warn.push_back(fmt::format("{}: vocabulary size not given: the output buffer is sized as 0", where));
    return m;
}

model_desc model_from_catalog(const catalog_entry & e, warnings & warn) {
    const std::string where = fmt::format("catalog:{}", e.name);
    model_desc m = e.gguf_keys ? model_from_gguf_keys(e.config_json, where, warn)
                               : model_from_hf_config(e.config_json, where, warn);
    m.name = std::string(e.name);
    m.source = "catalog";
    return m;
}

} // namespace kvfit
