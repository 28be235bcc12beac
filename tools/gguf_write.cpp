// kvfit-gguf-write SPEC.json OUT.gguf [--data sparse|zeros|header_only]
//
// Writes a GGUF file from a JSON spec with kvfit's writer (src/kvfit/gguf_writer.h). Spec:
//   {
//     "version": 3,                                  // optional, 2 or 3 (default 3)
//     "data": "sparse",                              // optional: sparse (default), zeros, header_only
//     "metadata": {                                  // written in this order
//       "general.architecture": "llama",             // shorthand: string -> str, bool -> bool,
//       "llama.block_count": 32,                     //   integer -> u32 (i32 if negative, u64/i64 if large),
//       "llama.rope.freq_base": 500000.0,            //   float -> f32, array -> array of the same rule
//       "llama.attention.head_count_kv": {"type": "array", "elem": "u32", "value": [0, 8]},
//       "x": {"type": "u16", "value": 7},            // explicit: u8 i8 u16 i16 u32 i32 f32 bool str u64 i64 f64 array
//       "nested": {"type": "array", "elem": "array", "value": [{"elem": "str", "value": ["a"]}]}
//     },
//     "vocab": {"spm": 512},                         // optional: minimal SentencePiece vocabulary of n tokens
//     "tensors": [{"name": "token_embd.weight", "type": "q4_k", "shape": [4096, 512]}]
//   }
// Exit status 0 on success, 2 with "kvfit-gguf-write: <message>" on bad input.
#include "kvfit/error.h"
#include "kvfit/gguf_writer.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

namespace {

using json = nlohmann::ordered_json;
using kvfit::gguf_type;
using kvfit::gguf_wvalue;

gguf_type type_named(const std::string & name) {
    static const std::pair<const char *, gguf_type> names[] = {
        {"u8", gguf_type::u8}, {"i8", gguf_type::i8}, {"u16", gguf_type::u16}, {"i16", gguf_type::i16},
        {"u32", gguf_type::u32}, {"i32", gguf_type::i32}, {"f32", gguf_type::f32}, {"bool", gguf_type::boolean},
        {"str", gguf_type::string}, {"string", gguf_type::string}, {"array", gguf_type::array},
        {"u64", gguf_type::u64}, {"i64", gguf_type::i64}, {"f64", gguf_type::f64},
    };
    for (const auto & [n, t] : names) if (name == n) return t;
    throw kvfit::error("spec: unknown value type '" + name + "'");
}

gguf_wvalue typed(gguf_type t, const json & v);

gguf_wvalue array_of(gguf_type elem, const json & values) {
    if (!values.is_array()) throw kvfit::error("spec: array value must be a JSON array");
    std::vector<gguf_wvalue> out;
    for (const auto & e : values) {
        out.push_back(elem == gguf_type::array ? typed(gguf_type::array, e) : typed(elem, e));
    }
    return gguf_wvalue::array(elem, out);
}

gguf_wvalue typed(gguf_type t, const json & v) {
    switch (t) {
    case gguf_type::u8: return gguf_wvalue::u8(v.get<uint8_t>());
    case gguf_type::i8: return gguf_wvalue::i8(v.get<int8_t>());
    case gguf_type::u16: return gguf_wvalue::u16(v.get<uint16_t>());
    case gguf_type::i16: return gguf_wvalue::i16(v.get<int16_t>());
    case gguf_type::u32: return gguf_wvalue::u32(v.get<uint32_t>());
    case gguf_type::i32: return gguf_wvalue::i32(v.get<int32_t>());
    case gguf_type::f32: return gguf_wvalue::f32(v.get<float>());
    case gguf_type::boolean: return gguf_wvalue::boolean(v.get<bool>());
    case gguf_type::string: return gguf_wvalue::string(v.get<std::string>());
    case gguf_type::u64: return gguf_wvalue::u64(v.get<uint64_t>());
    case gguf_type::i64: return gguf_wvalue::i64(v.get<int64_t>());
    case gguf_type::f64: return gguf_wvalue::f64(v.get<double>());
    case gguf_type::array: // {"elem": T, "value": [...]}
        return array_of(type_named(v.at("elem").get<std::string>()), v.at("value"));
    }
    throw kvfit::error("spec: bad value");
}

gguf_type inferred(const json & v) {
    if (v.is_string()) return gguf_type::string;
    if (v.is_boolean()) return gguf_type::boolean;
    if (v.is_number_float()) return gguf_type::f32;
    if (v.is_number_unsigned()) return v.get<uint64_t>() <= UINT32_MAX ? gguf_type::u32 : gguf_type::u64;
    if (v.is_number_integer()) return v.get<int64_t>() >= INT32_MIN ? gguf_type::i32 : gguf_type::i64;
    if (v.is_array()) return gguf_type::array;
    throw kvfit::error("spec: cannot infer a GGUF type for " + v.dump());
}

gguf_wvalue value_of(const json & v) {
    if (v.is_object()) {
        const gguf_type t = type_named(v.at("type").get<std::string>());
        return t == gguf_type::array ? typed(t, v) : typed(t, v.at("value"));
    }
    if (!v.is_array()) return typed(inferred(v), v);
    gguf_type elem = gguf_type::u32;
    for (const auto & e : v) { // widest element type wins: f32 over i32 over u32
        const gguf_type t = inferred(e);
        if (t == gguf_type::string || t == gguf_type::boolean || t == gguf_type::array) { elem = t; break; }
        if (t == gguf_type::f32 || (t == gguf_type::i32 && elem == gguf_type::u32)) elem = t;
    }
    return array_of(elem, v);
}

int run(int argc, char ** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: kvfit-gguf-write SPEC.json OUT.gguf [--data sparse|zeros|header_only]\n");
        return 2;
    }
    std::ifstream in(argv[1]);
    if (!in) throw kvfit::error(std::string(argv[1]) + ": cannot open");
    const json spec = json::parse(in);
    kvfit::gguf_writer w(spec.value("version", 3u));
    if (spec.contains("metadata")) {
        for (const auto & [key, v] : spec.at("metadata").items()) w.add(key, value_of(v));
    }
    if (spec.contains("vocab")) w.add_spm_vocab(spec.at("vocab").at("spm").get<uint32_t>());
    if (spec.contains("tensors")) {
        for (const auto & t : spec.at("tensors")) {
            w.add_tensor(t.at("name").get<std::string>(), kvfit::ggml_type_from_name(t.at("type").get<std::string>()),
                         t.at("shape").get<std::vector<uint64_t>>());
        }
    }
    std::string data = spec.value("data", std::string("sparse"));
    if (argc >= 5 && std::string(argv[3]) == "--data") data = argv[4];
    const auto mode = data == "zeros" ? kvfit::gguf_data::zeros
                    : data == "header_only" ? kvfit::gguf_data::header_only
                    : data == "sparse" ? kvfit::gguf_data::sparse
                    : throw kvfit::error("spec: data must be sparse, zeros or header_only, got '" + data + "'");
    w.write(argv[2], mode);
    return 0;
}

} // namespace

int main(int argc, char ** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception & e) { // kvfit::error and nlohmann::json errors alike
        std::fprintf(stderr, "kvfit-gguf-write: %s\n", e.what());
        return 2;
    }
}
