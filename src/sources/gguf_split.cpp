// Split GGUF models: name-00001-of-00003.gguf ... written by llama-gguf-split. Shard names follow
// llama_split_path() ("%s-%05d-of-%05d.gguf", llama.cpp src/llama.cpp); each shard carries split.no (u16,
// 0-based), split.count (u16) and split.tensors.count (i32, all shards together) (LLM_KV_SPLIT_* in
// src/llama-arch.cpp). Metadata lives in the first shard; tensors are spread over all of them.
#include "kvfit/gguf.h"
#include "kvfit/error.h"
#include "sources/text.h"

#include <cctype>
#include <filesystem>
#include <fmt/format.h>

namespace kvfit {
namespace {

struct split_name {
    std::string prefix;  // path before "-00001-of-00003.gguf"
    std::string of = "-of-", ext = ".gguf"; // as spelled in the given name ("-OF-", ".GGUF"): the shards are spelled alike
    uint32_t no = 0;     // 1-based, as in the name
    uint32_t count = 0;
};

bool digits(std::string_view s) {
    for (char c : s) if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    return !s.empty();
}

// "-NNNNN-of-MMMMM.gguf" at the end of the path, or nullopt.
std::optional<split_name> parse_split_name(const std::string & path) {
    constexpr std::string_view tail = ".gguf";
    constexpr size_t n_suffix = 1 + 5 + 4 + 5 + 5; // -00001-of-00003.gguf
    if (path.size() <= n_suffix || !detail::iends_with(path, tail)) return std::nullopt;
    const std::string_view s = std::string_view(path).substr(path.size() - n_suffix);
    if (s[0] != '-' || !detail::iequals(s.substr(6, 4), "-of-") || !digits(s.substr(1, 5)) || !digits(s.substr(10, 5))) {
        return std::nullopt;
    }
    split_name n;
    n.of = std::string(s.substr(6, 4));
    n.ext = std::string(s.substr(15));
    n.prefix = path.substr(0, path.size() - n_suffix);
    n.no = uint32_t(std::stoul(std::string(s.substr(1, 5))));
    n.count = uint32_t(std::stoul(std::string(s.substr(10, 5))));
    if (n.no == 0 || n.count == 0 || n.no > n.count) return std::nullopt;
    return n;
}

std::optional<uint64_t> key_uint(const gguf_file & f, std::string_view key) {
    const gguf_value * v = f.find(key);
    if (!v) return std::nullopt;
    const auto n = v->to_uint();
    if (!n) throw error::at_offset(f.path(), v->offset, fmt::format("key '{}': expected an unsigned integer", key));
    return n;
}

} // namespace

std::vector<gguf_file> gguf_open_shards(const std::string & path) {
    gguf_file given = gguf_file::open(path);
    const auto name = parse_split_name(path);
    const uint64_t key_count = key_uint(given, "split.count").value_or(1);
    if (!name) {
        if (key_count > 1) {
            throw error::at(path, fmt::format("split.count is {} but the name does not end in -00001-of-{:05}.gguf",
                                              key_count, key_count));
        }
        return {std::move(given)};
    }
    if (key_count != name->count && given.find("split.count")) {
        throw error::at(path, fmt::format("split.count is {} but the name says {} shards", key_count, name->count));
    }
    std::vector<gguf_file> shards;
    shards.reserve(name->count);
    uint64_t n_tensors = 0;
    for (uint32_t no = 1; no <= name->count; ++no) {
        const std::string shard_path = fmt::format("{}-{:05}{}{:05}{}", name->prefix, no, name->of, name->count, name->ext);
        if (no == name->no) {
            shards.push_back(std::move(given));
        } else {
            if (!std::filesystem::exists(shard_path)) {
                throw error::at(path, fmt::format("missing shard {} of {} ({})", no, name->count, shard_path));
            }
            shards.push_back(gguf_file::open(shard_path));
        }
        const gguf_file & f = shards.back();
        const auto key_no = key_uint(f, "split.no");
        if (name->count > 1 && key_no && *key_no != no - 1) {
            throw error::at(f.path(), fmt::format("split.no is {} but the name says shard {} (split.no {})", *key_no,
                                                  no, no - 1));
        }
        if (key_uint(f, "split.count").value_or(name->count) != name->count) {
            throw error::at(f.path(), fmt::format("split.count is {} but the name says {} shards",
                                                  *key_uint(f, "split.count"), name->count));
        }
        n_tensors += f.tensors().size();
    }
    if (const auto total = key_uint(shards[0], "split.tensors.count"); total && *total != n_tensors) {
        throw error::at(shards[0].path(), fmt::format("split.tensors.count is {} but the {} shards hold {} tensors",
                                                      *total, name->count, n_tensors));
    }
    return shards;
}

} // namespace kvfit
