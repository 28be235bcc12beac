// llama_probe: drives the llama.cpp C API of the libllama that node-llama-cpp ships (CPU build), for what the
// node-llama-cpp addon does not expose: MTP draft contexts (llama_context_params.ctx_type), recurrent-state
// snapshots (n_rs_seq), n_outputs_max (what llama-server reserves its graph with), a draft context that follows
// a target context (ctx_other), separate n_batch / n_ubatch, LoRA adapters with their buffer, and the size of a
// context checkpoint (llama_state_seq_get_size_ext with LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY, what llama-server's
// create_checkpoint stores) after real tokens were decoded.
//
// Built by build_probe.sh against the llama.h / llama-ext.h of the release's own source tree and linked to the
// release's shipped libllama / libggml (same build, so the structs match). No weights are needed: models are
// sparse GGUFs written by kvfit-gguf-write (zeros), which is enough to size every buffer and to decode tokens.
//
// usage: llama_probe MODEL.gguf [model options] {--ctx [context options]}...
//   model options:   no_alloc=0|1 load_mtp=0|1 mmap=0|1 lora=PATH (repeatable) lora_alloc_only=1
//                    ngl=N sm=layer|none|row mg=N ts=A,B,.. n_cpu_moe=N ot=REGEX=BUFT[;REGEX=BUFT..] (GPU placement)
//   context options: id=S n_ctx=N n_batch=N n_ubatch=N n_seq=N n_rs_seq=N n_outputs_max=N n_outputs_max_per_seq=N
//                    fa=on|off|auto type_k=f16|q8_0|... type_v=... ctx_type=default|mtp kv_unified=0|1
//                    swa_full=0|1 other=prev (ctx_other = the previous context that was kept) keep=0|1 (keep it
//                    alive for the next contexts, as llama-server keeps target + draft) decode=N (decode N tokens
//                    in sequence 0, then report the state sizes) lora_apply=0|1 threads=N kqv_offload=0|1
//                    op_offload=0|1
// Output: one JSON line per model / context / adapter on stdout, with every llama.cpp log line in "log".
#include "llama.h"
#include "llama-ext.h"
#include "ggml.h"
#include "ggml-backend.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

static std::vector<std::string> g_log;
static std::string g_partial;

static void log_cb(ggml_log_level, const char * text, void *) {
    g_partial += text;
    size_t p;
    while ((p = g_partial.find('\n')) != std::string::npos) {
        g_log.push_back(g_partial.substr(0, p));
        g_partial.erase(0, p + 1);
    }
}

static std::string jstr(const std::string & s) {
    std::string o = "\"";
    for (unsigned char c : s) {
        switch (c) {
            case '"': o += "\\\""; break;
            case '\\': o += "\\\\"; break;
            case '\n': o += "\\n"; break;
            case '\t': o += "\\t"; break;
            case '\r': o += "\\r"; break;
            default:
                if (c < 0x20) { char b[8]; snprintf(b, sizeof b, "\\u%04x", c); o += b; }
                else o += (char) c;
        }
    }
    return o + "\"";
}

static std::string take_log() {
    if (!g_partial.empty()) { g_log.push_back(g_partial); g_partial.clear(); }
    std::string o = "[";
    for (size_t i = 0; i < g_log.size(); ++i) o += (i ? "," : "") + jstr(g_log[i]);
    g_log.clear();
    return o + "]";
}

static ggml_type type_named(const std::string & n) {
    for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
        const char * nm = ggml_type_name((ggml_type) t);
        if (nm && n == nm) return (ggml_type) t;
    }
    fprintf(stderr, "llama_probe: unknown ggml type '%s'\n", n.c_str());
    exit(2);
}

using kv = std::map<std::string, std::string>;

static std::vector<std::string> split(const std::string & s, char sep) {
    std::vector<std::string> out;
    size_t p = 0;
    while (!s.empty() && p <= s.size()) {
        const size_t e = s.find(sep, p);
        out.push_back(s.substr(p, e == std::string::npos ? std::string::npos : e - p));
        if (e == std::string::npos) break;
        p = e + 1;
    }
    return out;
}

static long num(const kv & o, const char * k, long d) {
    auto it = o.find(k);
    return it == o.end() ? d : strtol(it->second.c_str(), nullptr, 10);
}
static std::string str(const kv & o, const char * k, const char * d) {
    auto it = o.find(k);
    return it == o.end() ? d : it->second;
}

static std::string breakdown_json(const llama_context * ctx) {
    std::string o = "[";
    bool first = true;
    for (const auto & [buft, mb] : llama_get_memory_breakdown(ctx)) {
        char b[512];
        snprintf(b, sizeof b, "%s{\"buft\":%s,\"host\":%s,\"model\":%zu,\"context\":%zu,\"compute\":%zu}", first ? "" : ",",
                 jstr(ggml_backend_buft_name(buft)).c_str(), ggml_backend_buft_is_host(buft) ? "true" : "false",
                 mb.model, mb.context, mb.compute);
        o += b;
        first = false;
    }
    return o + "]";
}

int main(int argc, char ** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: llama_probe MODEL.gguf [model options] {--ctx [context options]}...\n");
        return 2;
    }
    // split the arguments into the model's and one list per context
    kv mopt;
    std::vector<std::string> loras;
    std::vector<kv> copts;
    for (int i = 2; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--ctx") { copts.emplace_back(); continue; }
        const size_t eq = a.find('=');
        if (eq == std::string::npos) { fprintf(stderr, "llama_probe: bad option '%s'\n", a.c_str()); return 2; }
        const std::string k = a.substr(0, eq), v = a.substr(eq + 1);
        if (copts.empty()) {
            if (k == "lora") loras.push_back(v); else mopt[k] = v;
        } else {
            copts.back()[k] = v;
        }
    }

    llama_log_set(log_cb, nullptr);
    // the CPU backend is one of the libggml-cpu-<variant>.so files beside the shipped libggml (ggml scores the CPU)
    const char * bdir = getenv("LLAMA_PROBE_BACKEND_DIR");
#ifdef PROBE_BACKEND_DIR
    if (!bdir) bdir = PROBE_BACKEND_DIR;
#endif
    if (bdir) ggml_backend_load_all_from_path(bdir); else ggml_backend_load_all();
    llama_backend_init();

    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.no_alloc = num(mopt, "no_alloc", 0) != 0;
    mp.load_mtp = num(mopt, "load_mtp", 0) != 0;
    mp.load_mode = num(mopt, "mmap", 1) ? LLAMA_LOAD_MODE_MMAP : LLAMA_LOAD_MODE_NONE;
    mp.check_tensors = false;
    // GPU placement (a simulated CUDA device: tools/simcuda, loaded through GGML_BACKEND_PATH): ngl=N (-ngl; the
    // default 0 keeps everything on the CPU), sm=layer|none|row (-sm), mg=N (-mg), ts=A,B,... (-ts),
    // n_cpu_moe=N (--n-cpu-moe: common/common.h llm_add_n_cpu_ffn_overrides with LLM_FFN_EXPS_REGEX), ot=REGEX=BUFT
    // (-ot, several separated by ';'; BUFT "CPU" or a buffer type name such as CUDA0)
    mp.n_gpu_layers = (int32_t) num(mopt, "ngl", 0);
    {
        const std::string sm = str(mopt, "sm", "layer");
        mp.split_mode = sm == "none" ? LLAMA_SPLIT_MODE_NONE : sm == "row" ? LLAMA_SPLIT_MODE_ROW : LLAMA_SPLIT_MODE_LAYER;
    }
    mp.main_gpu = (int32_t) num(mopt, "mg", 0);
    static std::vector<float> ts;
    for (const std::string & part : split(str(mopt, "ts", ""), ',')) ts.push_back(strtof(part.c_str(), nullptr));
    if (!ts.empty()) { ts.resize(128, 0.0f); mp.tensor_split = ts.data(); }
    static std::vector<std::string> ot_patterns;
    static std::vector<llama_model_tensor_buft_override> ot;
    for (long i = 0; i < num(mopt, "n_cpu_moe", 0); ++i) {
        ot_patterns.push_back("blk\\." + std::to_string(i) + "\\.ffn_(up|down|gate|gate_up)_(ch|)exps");
    }
    std::vector<std::string> ot_bufts(ot_patterns.size(), "CPU");
    for (const std::string & item : split(str(mopt, "ot", ""), ';')) {
        const size_t eq = item.rfind('=');
        if (eq == std::string::npos) { fprintf(stderr, "llama_probe: ot '%s': expected REGEX=BUFT\n", item.c_str()); return 2; }
        ot_patterns.push_back(item.substr(0, eq));
        ot_bufts.push_back(item.substr(eq + 1));
    }
    for (size_t i = 0; i < ot_patterns.size(); ++i) {
        ggml_backend_buffer_type_t buft = nullptr;
        if (ot_bufts[i] == "CPU") buft = ggml_backend_cpu_buffer_type();
        for (size_t d = 0; buft == nullptr && d < ggml_backend_dev_count(); ++d) {
            ggml_backend_buffer_type_t b = ggml_backend_dev_buffer_type(ggml_backend_dev_get(d));
            if (b && ot_bufts[i] == ggml_backend_buft_name(b)) buft = b;
        }
        if (!buft) { fprintf(stderr, "llama_probe: no buffer type '%s'\n", ot_bufts[i].c_str()); return 2; }
        ot.push_back({ot_patterns[i].c_str(), buft});
    }
    if (!ot.empty()) { ot.push_back({nullptr, nullptr}); mp.tensor_buft_overrides = ot.data(); }

    llama_model * model = llama_model_load_from_file(argv[1], mp);
    {
        size_t model_bytes = 0;
        if (model) {
            // the model's buffers: a context-free breakdown is not in the API, use a throwaway-free figure instead
            model_bytes = llama_model_size(model);
        }
        printf("{\"kind\":\"model\",\"ok\":%s,\"path\":%s,\"no_alloc\":%s,\"load_mtp\":%s,\"n_layer\":%d,\"n_layer_nextn\":%d,"
               "\"llama_model_size\":%zu,\"log\":%s}\n",
               model ? "true" : "false", jstr(argv[1]).c_str(), mp.no_alloc ? "true" : "false", mp.load_mtp ? "true" : "false",
               model ? llama_model_n_layer(model) : -1, model ? (int) llama_model_n_layer_nextn(model) : -1,
               model_bytes, take_log().c_str());
        fflush(stdout);
    }
    if (!model) return 3;

    std::vector<llama_adapter_lora *> adapters;
    for (const auto & path : loras) {
        llama_adapter_lora * a = llama_adapter_lora_init(model, path.c_str());
        printf("{\"kind\":\"lora\",\"ok\":%s,\"path\":%s,\"log\":%s}\n", a ? "true" : "false", jstr(path).c_str(), take_log().c_str());
        fflush(stdout);
        if (a) adapters.push_back(a);
    }

    std::vector<llama_context *> kept;
    llama_context * prev = nullptr;
    for (const kv & o : copts) {
        llama_context_params cp = llama_context_default_params();
        cp.n_ctx = (uint32_t) num(o, "n_ctx", 4096);
        cp.n_batch = (uint32_t) num(o, "n_batch", 2048);
        cp.n_ubatch = (uint32_t) num(o, "n_ubatch", 512);
        cp.n_seq_max = (uint32_t) num(o, "n_seq", 1);
        cp.n_rs_seq = (uint32_t) num(o, "n_rs_seq", 0);
        cp.n_outputs_max = (uint32_t) num(o, "n_outputs_max", 0);
        cp.n_outputs_max_per_seq = (uint32_t) num(o, "n_outputs_max_per_seq", 0);
        cp.n_threads = cp.n_threads_batch = (int32_t) num(o, "threads", 1);
        const std::string fa = str(o, "fa", "on");
        cp.flash_attn_type = fa == "on" ? LLAMA_FLASH_ATTN_TYPE_ENABLED : fa == "off" ? LLAMA_FLASH_ATTN_TYPE_DISABLED : LLAMA_FLASH_ATTN_TYPE_AUTO;
        cp.type_k = type_named(str(o, "type_k", "f16"));
        cp.type_v = type_named(str(o, "type_v", "f16"));
        cp.ctx_type = str(o, "ctx_type", "default") == "mtp" ? LLAMA_CONTEXT_TYPE_MTP : LLAMA_CONTEXT_TYPE_DEFAULT;
        cp.kv_unified = num(o, "kv_unified", 0) != 0;
        cp.swa_full = num(o, "swa_full", 0) != 0;
        cp.no_perf = true;
        cp.offload_kqv = num(o, "kqv_offload", 1) != 0;   // --no-kv-offload: 0
        cp.op_offload = num(o, "op_offload", 1) != 0;     // --no-op-offload: 0
        if (str(o, "other", "") == "prev") cp.ctx_other = prev;

        llama_context * ctx = llama_init_from_model(model, cp);
        std::string extra;
        if (ctx) {
            extra += ",\"n_ctx\":" + std::to_string(llama_n_ctx(ctx)) + ",\"n_ctx_seq\":" + std::to_string(llama_n_ctx_seq(ctx)) +
                     ",\"n_rs_seq_actual\":" + std::to_string(llama_n_rs_seq(ctx)) + ",\"breakdown\":" + breakdown_json(ctx);
            if (num(o, "lora_apply", 0) && !adapters.empty()) {
                std::vector<float> scales(adapters.size(), 1.0f);
                const int r = llama_set_adapters_lora(ctx, adapters.data(), adapters.size(), scales.data());
                extra += ",\"lora_apply_rc\":" + std::to_string(r);
            }
            const long n_dec = num(o, "decode", 0);
            if (n_dec > 0 && !mp.no_alloc) {
                const llama_vocab * vocab = llama_model_get_vocab(model);
                const int n_vocab = llama_vocab_n_tokens(vocab);
                llama_batch batch = llama_batch_init((int32_t) n_dec, 0, 1);
                for (long i = 0; i < n_dec; ++i) {
                    batch.token[i] = (llama_token) (3 + (i % (n_vocab - 3)));
                    batch.pos[i] = (llama_pos) i;
                    batch.n_seq_id[i] = 1;
                    batch.seq_id[i][0] = 0;
                    batch.logits[i] = i == n_dec - 1;
                }
                batch.n_tokens = (int32_t) n_dec;
                const int rc = llama_decode(ctx, batch);
                llama_batch_free(batch);
                extra += ",\"decode_rc\":" + std::to_string(rc) + ",\"decoded\":" + std::to_string(n_dec);
                extra += ",\"state_seq_partial\":" + std::to_string(llama_state_seq_get_size_ext(ctx, 0, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY));
                extra += ",\"state_seq_full\":" + std::to_string(llama_state_seq_get_size_ext(ctx, 0, 0));
                extra += ",\"state_full\":" + std::to_string(llama_state_get_size(ctx));
                llama_memory_t mem = llama_get_memory(ctx);
 extra += ",\"breakdown_after\":" + breakdown_json(ctx);
                extra += ",\"pos_min\":" + std::to_string(llama_memory_seq_pos_min(mem, 0)) + ",\"pos_max\":" + std::to_string(llama_memory_seq_pos_max(mem, 0));
            }
        }
        const std::string log = take_log();
        std::string opts = "{";
        bool first = true;
        for (const auto & [k, v] : o) { opts += (first ? "" : ",") + jstr(k) + ":" + jstr(v); first = false; }
        opts += "}";
        printf("{\"kind\":\"context\",\"ok\":%s,\"opts\":%s%s,\"log\":%s}\n", ctx ? "true" : "false", opts.c_str(), extra.c_str(), log.c_str());
        fflush(stdout);
        if (ctx && num(o, "keep", 0)) { kept.push_back(ctx); prev = ctx; }
        else if (ctx) { llama_free(ctx); printf("{\"kind\":\"dispose\",\"log\":%s}\n", take_log().c_str()); fflush(stdout); }
    }
    for (auto it = kept.rbegin(); it != kept.rend(); ++it) llama_free(*it);
    if (!kept.empty()) { printf("{\"kind\":\"dispose\",\"log\":%s}\n", take_log().c_str()); fflush(stdout); }
    for (auto * a : adapters) llama_adapter_lora_free(a);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
