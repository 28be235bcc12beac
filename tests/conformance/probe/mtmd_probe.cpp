// mtmd_probe: loads a vision/audio projector (mmproj GGUF) with the clip.cpp of the release (compiled from its
// tools/mtmd sources by build_probe.sh --mtmd, linked to the release's shipped libggml), in clip.cpp's no_alloc mode
// (what llama-server's mtmd_get_memory_usage uses for --fit), runs its warmup reserve (clip.cpp warmup():
// get_dummy_batch of warmup_image_size x warmup_image_size) and prints the weight bytes and the compute buffer per
// device as one JSON line, with every clip log line.
//   mtmd_probe MMPROJ.gguf [fa=on|off|auto] [min_tokens=N] [max_tokens=N] [no_alloc=0|1]
#include "clip.h"
#include "clip-impl.h"
#include "ggml-backend.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

static std::vector<std::string> g_log;
static std::string g_partial;
static void log_cb(ggml_log_level, const char * text, void *) {
    g_partial += text;
    size_t p;
    while ((p = g_partial.find('\n')) != std::string::npos) { g_log.push_back(g_partial.substr(0, p)); g_partial.erase(0, p + 1); }
}
static std::string jstr(const std::string & s) {
    std::string o = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') { o += '\\'; o += (char) c; }
        else if (c == '\n') o += "\\n";
        else if (c < 0x20) { char b[8]; snprintf(b, sizeof b, "\\u%04x", c); o += b; }
        else o += (char) c;
    }
    return o + "\"";
}

int main(int argc, char ** argv) {
    if (argc < 2) { fprintf(stderr, "usage: mtmd_probe MMPROJ.gguf [fa=on|off|auto] [min_tokens=N] [max_tokens=N]\n"); return 2; }
    std::map<std::string, std::string> o;
    for (int i = 2; i < argc; ++i) { std::string a = argv[i]; auto e = a.find('='); if (e != std::string::npos) o[a.substr(0, e)] = a.substr(e + 1); }
    g_logger_state.log_callback = log_cb;
    ggml_log_set(log_cb, nullptr);
    const char * bdir = getenv("LLAMA_PROBE_BACKEND_DIR");
#ifdef PROBE_BACKEND_DIR
    if (!bdir) bdir = PROBE_BACKEND_DIR;
#endif
    if (bdir) ggml_backend_load_all_from_path(bdir); else ggml_backend_load_all();

    const std::string fa = o.count("fa") ? o["fa"] : "auto";
    clip_context_params p {};
    p.use_gpu = false;
    p.device = nullptr;
    p.flash_attn_type = fa == "on" ? CLIP_FLASH_ATTN_TYPE_ENABLED : fa == "off" ? CLIP_FLASH_ATTN_TYPE_DISABLED : CLIP_FLASH_ATTN_TYPE_AUTO;
    p.image_min_tokens = o.count("min_tokens") ? atoi(o["min_tokens"].c_str()) : -1;
    p.image_max_tokens = o.count("max_tokens") ? atoi(o["max_tokens"].c_str()) : -1;
    p.warmup = true;
    p.no_alloc = o.count("no_alloc") ? atoi(o["no_alloc"].c_str()) != 0 : true;
    auto res = clip_init(argv[1], p);
    std::string out = "{\"kind\":\"mmproj\",\"path\":" + jstr(argv[1]) + ",\"fa\":" + jstr(fa) + ",\"ok\":" + ((res.ctx_v || res.ctx_a) ? "true" : "false");
    auto dump = [&](const char * name, clip_ctx * c) {
        if (!c) return;
        out += std::string(",\"") + name + "\":[";
        bool first = true;
        for (auto & [dev, size] : clip_get_mem_usage(c)) {
            out += (first ? "" : ",") + std::string("{\"dev\":") + jstr(dev ? ggml_backend_dev_name(dev) : "null") + ",\"bytes\":" + std::to_string(size) + "}";
            first = false;
        }
        out += "]";
    };
    dump("mem_v", res.ctx_v);
    dump("mem_a", res.ctx_a);
    if (!g_partial.empty()) g_log.push_back(g_partial);
    out += ",\"log\":[";
    for (size_t i = 0; i < g_log.size(); ++i) out += (i ? "," : "") + jstr(g_log[i]);
    out += "]}";
    printf("%s\n", out.c_str());
    if (res.ctx_v) clip_free(res.ctx_v);
    if (res.ctx_a) clip_free(res.ctx_a);
    return 0;
}
