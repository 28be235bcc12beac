// JSON read within a memory budget (src/core/json_bounded.cpp): nlohmann's SAX parser builds only the members a
// reader keeps, so a document's cost is what kvfit keeps, not what it was sent. Not part of the public API.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kvfit::detail {

/// What one JSON document may hold once parsed. Values, strings and nesting that a key filter drops cost nothing
/// and are not counted: the limits bound what is kept.
struct json_limits {
    uint32_t max_depth = 32;             ///< nesting of kept objects and arrays (real config.json files: under 6)
    uint64_t max_values = 1ull << 18;    ///< kept values (each object, array, string, number, null): 262,144
    uint64_t max_string_bytes = 1 << 16; ///< one kept string or member name, bytes: 65,536
    uint64_t max_total_string_bytes = 1 << 22; ///< all kept strings and member names together, bytes: 4 MiB
    /// A member name given twice in the root object is refused ("member 'gpu' given twice") instead of the last
    /// one winning (nlohmann's and Python's json.loads rule, kept for config.json files): a request's fields are
    /// its options, and the CLI refuses an option given twice. So is one given twice in an object that is an element
    /// of a root member's array, a set's model with its own fields ("member 'ctx_size' given twice in 'models'
    /// item 2", counted from 1), as the CLI refuses MODEL@-c=8192,-c=4096. Deeper objects (an uploaded "config"
    /// object, a config.json) keep the last one, as the CLI reads a config.json file.
    bool unique_root_keys = false;
};

/// Limits of a `kvfit serve` request body (src/server/api.cpp, list_api.cpp): its fields are few, but one string may
/// hold a whole upload (a 16 MiB config.json text or GGUF header in base64 within the 24 MiB body limit).
inline constexpr json_limits request_json_limits{32, 1ull << 18, 32ull << 20, 32ull << 20, true};

/// Whether the member `key` of the object at `path` is kept. `path` holds the member names from the root down to
/// that object, "" for each array level: the config.json filter keeps {"text_config", "quantization_config"}'s
/// "quant_method" at path {"text_config", "quantization_config"}. A member not kept is skipped with all it holds.
using json_key_filter = std::function<bool(const std::vector<std::string> & path, std::string_view key)>;

/// Parse `text` as one JSON document, keeping the members `keep` accepts (all when empty), within `limits`.
/// Memory: the kept values (at most max_values, their strings at most max_total_string_bytes together), plus
/// nlohmann's lexer buffer for the token being read; dropped members are read past and never stored.
/// Throws kvfit::error "<where>: not valid JSON: parse error at line 1, column 3: ..." for bad JSON (and a number
/// such as 5e353 that overflows a double), "<where>: JSON nested deeper than 32 levels at 'a.b'",
/// "<where>: more than 262144 JSON values in the keys kvfit reads", "<where>: a string of 70000 bytes at
/// 'model_type' exceeds the limit of 65536 bytes", "<where>: more than 4194304 bytes of strings in the keys kvfit reads",
/// and with unique_root_keys "<where>: member 'gpu' given twice", "<where>: member 'ctx_size' given twice in 'models' item 2".
nlohmann::json parse_json_bounded(std::string_view text, std::string_view where, const json_limits & limits,
                                  const json_key_filter & keep = {});

} // namespace kvfit::detail
