#pragma once
// One input through each of the outside-input readers that fuzz_*.cpp drive: config.json, the llama.cpp log reader,
// the request bodies of the HTTP API (what kvfit reads once libmicrohttpd has parsed the request), and the Hub's file
// listing. Each input must end normally or in kvfit::error;
// any other exception, a crash or a sanitizer report is a finding. tests/test_fuzz_replay.cpp runs the same
// functions over the finds kept in tests/data/fuzz_crashes/<target>/.
#include "kvfit/error.h"
#include "kvfit/launch.h"
#include "kvfit/plan.h"
#include "kvfit/remote.h"
#include "kvfit/llamacpp.h"
#include "kvfit/runtime.h"
#include "kvfit/server.h"
#include "kvfit/serving_log.h"
#include "kvfit/sources.h"
#include "sources/hub_listing.h"

#include <nlohmann/json.hpp>
#include <string_view>

namespace kvfit::fuzz {

/// config.json text -> model_desc, then one plan at 4096 tokens (the layer loops, the cache list).
inline void read_hf_config(std::string_view bytes) {
    try {
        warnings warn;
        const model_desc m = model_from_hf_config(bytes, "fuzz/config.json", warn);
        llamacpp_settings s;
        s.n_ctx = 4096;
        (void)plan_llamacpp(m, s, placement_settings{}, {}, 0);
    } catch (const error &) {
    }
}

/// A llama.cpp log -> its lines, the settings it implies for a small hybrid model (4 layers of Qwen3.5's layout:
/// the planning stays cheap, the log reader is what is fuzzed), the explanation and its text.
inline void read_llamacpp_log(std::string_view bytes) {
    static const model_desc model = [] {
        warnings warn;
        return model_from_hf_config(R"({"architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5_text",
            "full_attention_interval": 4, "head_dim": 64, "hidden_size": 256, "intermediate_size": 512,
            "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
            "linear_conv_kernel_dim": 4, "linear_key_head_dim": 32, "linear_num_key_heads": 4, "linear_num_value_heads": 8,
            "linear_value_head_dim": 32, "max_position_embeddings": 8192, "num_attention_heads": 4,
            "num_hidden_layers": 4, "num_key_value_heads": 2, "vocab_size": 512})", "fuzz/qwen35-tiny.json", warn);
    }();
    try {
        const llamacpp_log log = parse_llamacpp_log(bytes);
        (void)settings_from_log(log, model);
        (void)render_explanation(model, explain_log(log, model));
    } catch (const error &) {
    }
}

/// A vLLM, SGLang, Ollama or mlx-lm log -> its lines and arguments (serving_log.cpp), the explanation against a small dense
/// model (the arguments the log gives become the runtime's flags: their errors are kvfit::error) and its text.
inline void read_serving_log(std::string_view bytes) {
    static const model_desc model = [] {
        warnings warn;
        model_desc m = model_from_hf_config(R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
            "head_dim": 64, "hidden_size": 256, "intermediate_size": 512, "max_position_embeddings": 8192,
            "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2, "vocab_size": 512,
            "torch_dtype": "bfloat16"})", "fuzz/llama-tiny.json", warn);
        apply_weight_size(m, 4u << 20);
        return m;
    }();
    try {
        const serving_log log = parse_serving_log(bytes);
        serving_inputs in;
        (void)render_serving_explanation(log, model, explain_serving_log(log, model, in));
    } catch (const error &) {
    }
}

/// An HTTP request as a client sends it -> what kvfit reads of it. The request line, the header section and the
/// framing (Content-Length, chunked, 100-continue) are libmicrohttpd's (src/server/server.cpp), fuzzed upstream;
/// kvfit's part is the Content-Type check and the body as POST /v1/plan reads it (JSON, the plan_request fields,
/// the runtime's flag checks; the planning is not run). The input is split at the first blank line; the headers
/// before it only give the Content-Type (the seeds in fuzz/seeds/http_request are whole requests).
inline void read_http_request(std::string_view bytes) {
    size_t end = bytes.find("\r\n\r\n");
    const size_t skip = end == std::string_view::npos ? 0 : 4;
    if (end == std::string_view::npos) end = bytes.size();
    const std::string_view head = bytes.substr(0, end);
    const std::string_view body = bytes.substr(std::min(bytes.size(), end + skip));
    std::string_view content_type;
    for (size_t at = 0; at < head.size();) {
        size_t eol = head.find("\r\n", at);
        if (eol == std::string_view::npos) eol = head.size();
        const std::string_view line = head.substr(at, eol - at);
        if (line.size() > 13 && (line.substr(0, 13) == "Content-Type:" || line.substr(0, 13) == "content-type:")) {
            content_type = line.substr(13);
            while (!content_type.empty() && content_type.front() == ' ') content_type.remove_prefix(1);
        }
        at = eol + 2;
    }
    if (check_content_type(content_type, body)) return; // 415
    try {
        nlohmann::json j;
        try { // as POST /v1/plan reads it (src/server/api.cpp, parse_body): a JSON error is a 400
            j = nlohmann::json::parse(body);
        } catch (const nlohmann::json::exception &) {
            return;
        }
        const plan_request q = plan_request_from_json(j, {"config", "gguf_base64", "upload_name"});
        const runtime_info & rt = find_runtime(q.runtime);
        if (rt.check_flags) rt.check_flags(q.flags);
    } catch (const error &) {
    }
}

/// The Hub's file listing (GET /api/models/<repo>/tree/<rev>), and a Hub spelling when the input starts "hf:".
inline void read_hub_listing(std::string_view bytes) {
    try {
        (void)detail::parse_hub_listing(bytes, "hf:fuzz/listing");
    } catch (const error &) {
    }
    if (bytes.starts_with("hf:")) {
        try {
            (void)parse_hf_spec(bytes.substr(0, 512));
        } catch (const error &) {
        }
    }
}

} // namespace kvfit::fuzz
