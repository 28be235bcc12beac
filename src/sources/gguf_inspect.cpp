// `kvfit --inspect model.gguf`: the metadata (long arrays summarised), a tensor summary and the layer layout.
#include "kvfit/gguf.h"
#include "kvfit/printable.h"

#include <fmt/format.h>
#include <map>

namespace kvfit {
namespace {

constexpr uint64_t k_array_shown = 8; // arrays longer than this print their first 3 elements

std::string quoted(std::string_view s) {
    std::string out = "\"";
    for (char c : s.substr(0, 120)) {
        if (c == '"' || c == '\\') out += '\\';
        if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\x{:02x}", uint8_t(c));
        else out += c;
    }
    return out + (s.size() > 120 ? "...\"" : "\"");
}

std::string scalar(const gguf_value & v) {
    if (v.type == gguf_type::string) return quoted(v.raw);
    if (v.type == gguf_type::boolean) return v.to_uint().value_or(0) ? "true" : "false";
    if (v.type == gguf_type::f32 || v.type == gguf_type::f64) return fmt::format("{}", v.to_float().value_or(0));
    if (v.type == gguf_type::u64) return fmt::format("{}", v.to_uint().value_or(0));
    return fmt::format("{}", v.to_int().value_or(0));
}

std::string render(const gguf_value & v, std::string_view where) {
    if (!v.is_array()) return scalar(v);
    const uint64_t shown = v.n > k_array_shown ? 3 : v.n;
    std::string out = fmt::format("[{} x {}: ", v.n, gguf_type_name(v.elem_type));
    for (uint64_t i = 0; i < shown; ++i) out += (i ? ", " : "") + render(v.at(i, where), where);
    return out + (shown < v.n ? ", ...]" : "]");
}

std::string layer_line(const model_desc & m, uint32_t il) {
    const layer_kind k = m.kind_of(il);
    if (k == layer_kind::recurrent) return fmt::format("recurrent ({})", recurrent_kind_name(m.rec_kind));
    if (!m.has_kv(il)) return layer_kind_name(k);
    return fmt::format("{} {} kv heads x {}/{}", layer_kind_name(k), m.n_head_kv[il], m.head_dim_k[il], m.head_dim_v[il]);
}

} // namespace

std::string gguf_inspect_metadata(const gguf_file & f) {
    std::string out = fmt::format("{}: GGUF v{}, alignment {}, {} keys, {} tensors\n", f.path(), f.version(),
                                  f.alignment(), f.kvs().size(), f.tensors().size());
    out += fmt::format("header {} bytes, data {} bytes at offset {}{}\n", f.header_bytes(), f.data_bytes(),
                       f.data_offset(), f.header_only() ? " (header-only file: no tensor data)" : "");
    size_t width = 0;
    for (const auto & kv : f.kvs()) width = std::max(width, kv.key.size());
    for (const auto & kv : f.kvs()) {
        out += fmt::format("  {:<{}}  {:<4} {}\n", printable(kv.key, false), width, gguf_type_name(kv.value.type), render(kv.value, f.path()));
    }
    std::map<std::string_view, std::pair<uint64_t, uint64_t>> by_type; // name -> tensors, bytes
    uint64_t params = 0;
    for (const auto & t : f.tensors()) {
        auto & e = by_type[ggml_traits(t.type).name];
        e.first += 1;
        e.second += t.bytes;
        params += t.n_elements;
    }
    out += fmt::format("tensors: {} parameters\n", params);
    for (const auto & [name, e] : by_type) out += fmt::format("  {:<8} {:>6} tensors {:>16} bytes\n", name, e.first, e.second);
    return out;
}

std::string gguf_inspect(const std::vector<gguf_file> & shards, warnings & warn) {
    std::string out;
    for (const auto & f : shards) out += gguf_inspect_metadata(f);
    const model_desc m = model_from_gguf(shards, warn);
    out += fmt::format("layers: {} counted ({} MTP/NextN not counted), n_embd {}, n_vocab {}, n_ctx_train {}",
                       m.n_layer, m.n_layer_mtp, m.n_embd, m.n_vocab, m.n_ctx_train);
    if (m.n_swa) out += fmt::format(", n_swa {}", m.n_swa);
    if (m.n_chunk) out += fmt::format(", n_chunk {}", m.n_chunk);
    out += "\n";
    for (uint32_t il = 0; il < m.n_layer;) {
        uint32_t end = il + 1;
        const std::string line = layer_line(m, il);
        while (end < m.n_layer && layer_line(m, end) == line) ++end;
        const std::string range = end - il == 1 ? fmt::format("il {}", il) : fmt::format("il {}-{}", il, end - 1);
        out += fmt::format("  {:<12} {}\n", range, line);
        il = end;
    }
    out += fmt::format("weights: {} parameters, {} bytes (token_embd {}, output {}{}, other {}, MTP blocks not loaded {})\n", m.n_params(),
                       m.weights.total_bytes(), m.weights.token_embd.bytes, m.weights.output.bytes,
                       m.tied_embeddings ? " tied" : "", m.weights.other.bytes, m.weights.mtp.bytes);
    return out;
}

} // namespace kvfit
