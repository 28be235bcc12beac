// kvfit-sched-check: replays the graphs of a GGML_SCHED_DUMP file (tools/simcuda/sched_dump.inc, a tracing build of
// the release's ggml-backend.cpp) through kvfit's scheduler and allocator (src/runtimes/llamacpp/sched.cpp) and
// compares them with what the real scheduler did.
//   kvfit-sched-check DUMP.jsonl [GRAPH]
// For each graph (or only GRAPH): the graph copy kvfit's split builds against the dumped one (tensor names and
// backends, node by node), and the buffer sizes of both copies through kvfit's allocator; the backends answer as the
// real ones did (the dump's supports_op / offload_op / supports_buft / get_alloc_size bits and allocation
// dependencies). One line per graph: "graph N: split OK|DIFF at K, sizes CUDA0=... CUDA_Host=...". Exit 1 on a
// difference, 2 on bad input.
#include "runtimes/llamacpp/backend_cuda.h"
#include "runtimes/llamacpp/sched.h"

#include "kvfit/error.h"

#include <cstdio>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

using nlohmann::json;
using namespace kvfit;
using namespace kvfit::detail;

namespace {

struct dumped_graph {
    json sched;
    std::map<int, json> t;
    json order, copy;
    std::vector<std::pair<int, int>> deps;
};

/// A backend answering from the dump: the bits llama.cpp's scheduler got from the real device.
class recorded_backend : public sched_backend {
public:
    recorded_backend(const dumped_graph & d, int index, const std::vector<int32_t> & to_dump, std::string name, gbuft buft,
                     uint64_t align)
        : d_(d), b_(index), to_dump_(to_dump), name_(std::move(name)), buft_(buft), align_(align) {}
    std::string name() const override { return name_; }
    gbuft compute_buft() const override { return buft_; }
    uint64_t alignment() const override { return align_; }
    bool supports_op(const ggraph &, int32_t t) const override { return bit(t, "sup"); }
    bool offload_op(const ggraph &, int32_t t) const override { return bit(t, "off"); }
    bool supports_buft(const gbuft & b) const override {
        if (buft_.k == gbuft::kind::gpu) return b == buft_;
        return b.is_host();
    }
    uint64_t alloc_size(const ggraph & g, int32_t t) const override {
        const json * r = rec(t);
        if (r) return (*r)["size"][size_t(b_)].get<uint64_t>();
        // a copy made by kvfit's split: the size of the tensor it copies in this buffer type (same shape and type)
        const gtensor & x = g.t[size_t(t)];
        if (x.copy_of >= 0 && g.t[size_t(x.copy_of)].op != gop::flash_attn_ext) return alloc_size(g, x.copy_of);
        return gtensor_nbytes(x);
    }
    void graph_optimize(const ggraph & g, std::vector<int32_t> & nodes,
                        const std::function<void(int32_t, int32_t)> & add) const override {
        // the dependencies the real backend added, for the `until` nodes of this split; a kept tensor may be a split
        // input's copy (the split graph's sources are redirected to them): found by its name among kvfit's copies
        if (buft_.k != gbuft::kind::gpu) return; // the CPU backend has no graph_optimize (ggml-cpu.cpp:209)
        std::map<int32_t, bool> in;
        for (const int32_t n : nodes) in[n] = true;
        for (const auto & [tensor, until] : d_.deps) {
            const int32_t u = from_dump(g, until), t = from_dump(g, tensor);
            if (u >= 0 && t >= 0 && in.count(u)) add(t, u);
        }
    }

private:
    const json * rec(int32_t t) const {
        if (t < 0 || size_t(t) >= to_dump_.size()) return nullptr;
        const auto it = d_.t.find(to_dump_[size_t(t)]);
        return it == d_.t.end() ? nullptr : &it->second;
    }
    bool bit(int32_t t, const char * key) const {
        const json * r = rec(t);
        if (!r) throw error(fmt::format("sched_check: {} asked about a tensor the dump does not have", key));
        return (*r)[key][size_t(b_)].get<int>() == 1;
    }
    int32_t from_dump(const ggraph & g, int id) const {
        for (size_t i = 0; i < to_dump_.size(); ++i) {
            if (to_dump_[i] == id) return int32_t(i);
        }
        const auto it = d_.t.find(id);
        if (it == d_.t.end()) return -1;
        const std::string name = it->second["name"].get<std::string>();
        for (size_t i = to_dump_.size(); i < g.t.size(); ++i) {
            if (g.t[i].copy_of >= 0 && g.t[i].name == name) return int32_t(i);
        }
        return -1;
    }
    const dumped_graph & d_;
    int b_;
    const std::vector<int32_t> & to_dump_;
    std::string name_;
    gbuft buft_;
    uint64_t align_;
};

gbuft buft_named(const std::string & n) {
    if (n.rfind("CUDA", 0) == 0 && n != "CUDA_Host") return {gbuft::kind::gpu, std::stoi(n.substr(4))};
    if (n == "CUDA_Host") return {gbuft::kind::gpu_host, 0};
    return {gbuft::kind::cpu, 0};
}

} // namespace

int main(int argc, char ** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: kvfit-sched-check DUMP.jsonl [GRAPH]\n");
        return 2;
    }
    std::ifstream in(argv[1]);
    if (!in) {
        std::fprintf(stderr, "kvfit-sched-check: cannot read %s\n", argv[1]);
        return 2;
    }
    std::vector<dumped_graph> graphs;
    std::string line;
    while (std::getline(in, line)) {
        json j = json::parse(line);
        const std::string k = j["k"];
        if (k == "sched") graphs.push_back({j, {}, {}, {}, {}});
        else if (graphs.empty()) continue;
        else if (k == "t") graphs.back().t[j["id"].get<int>()] = j;
        else if (k == "order") graphs.back().order = j;
        else if (k == "dep") graphs.back().deps.emplace_back(j["tensor"].get<int>(), j["until"].get<int>());
        else if (k == "copy") graphs.back().copy = j;
    }
    const int only = argc > 2 ? std::atoi(argv[2]) : -1;
    // KVFIT_SCHED_RELEASE=5b4ebc5: that release's split (sched_options::split_inputs_capped)
    const char * rel = std::getenv("KVFIT_SCHED_RELEASE");
    const bool capped = rel && std::string(rel) == "5b4ebc5";
    int rc = 0;
    for (size_t gi = 0; gi < graphs.size(); ++gi) {
        if (only >= 0 && int(gi) != only) continue;
        const dumped_graph & d = graphs[gi];
        // the graph: every dumped tensor of the scheduler's view (leaf 0/1/2), in id order; buffers by type name
        ggraph g;
        std::map<int, int32_t> idx;
        std::vector<int32_t> to_dump;
        std::map<std::pair<std::string, bool>, int32_t> buffers;
        for (const auto & [id, j] : d.t) {
            if (j.value("leaf", 0) == 3) continue;
            idx[id] = int32_t(g.t.size());
            to_dump.push_back(id);
            g.t.emplace_back();
        }
        for (const auto & [id, j] : d.t) {
            if (!idx.count(id)) continue;
            gtensor & t = g.t[size_t(idx[id])];
            t.op = gop_from_name(j["op"].get<std::string>());
            t.type = ggml_type_from_name(j["type"].get<std::string>());
            for (size_t i = 0; i < 4; ++i) t.ne[i] = j["ne"][i].get<int64_t>(), t.nb[i] = j["nb"][i].get<uint64_t>();
            t.flags = uint8_t(j["flags"].get<int>());
            t.view_src = j["view_src"].get<int>() >= 0 ? idx.at(j["view_src"].get<int>()) : -1;
            t.view_offs = j["view_offs"].get<uint64_t>();
            for (const auto & s : j["src"]) t.src.push_back(s.get<int>() >= 0 ? idx.at(s.get<int>()) : -1);
            for (size_t i = 0; i < 16; ++i) t.params[i] = j["params"][i].get<int32_t>();
            t.name = j["name"].get<std::string>();
            t.preset = int16_t(j["preset"].get<int>());
            if (!j["buf"].is_null() && t.view_src < 0) {
                const auto key = std::make_pair(j["buf"].get<std::string>(), j["usage"].get<int>() == 1);
                if (!buffers.count(key)) {
                    buffers[key] = int32_t(g.buffers.size());
                    g.buffers.push_back({buft_named(key.first), key.second});
                }
                t.buffer = buffers[key];
            }
        }
        for (const auto & l : d.order["leafs"]) g.leafs.push_back(idx.at(l.get<int>()));
        for (const auto & n : d.order["nodes"]) g.nodes.push_back(idx.at(n.get<int>()));
        std::vector<std::unique_ptr<recorded_backend>> own;
        std::vector<const sched_backend *> backends;
        const json & bs = d.sched["backends"];
        for (size_t b = 0; b < bs.size(); ++b) {
            own.push_back(std::make_unique<recorded_backend>(d, int(b), to_dump, bs[b]["name"].get<std::string>(),
                                                             buft_named(bs[b]["buft"].get<std::string>()), bs[b].value("align", uint64_t(bs[b]["buft"].get<std::string>() == "CUDA0" ? 128 : 32))));
            backends.push_back(own.back().get());
        }
        sched_options o;
        o.n_copies = d.sched.value("n_copies", 1);
        o.op_offload = d.sched.value("op_offload", 1) != 0;
        o.split_inputs_capped = capped;
        // KVFIT_SCHED_DEVICES=kvfit: kvfit's own device models (backend_cuda.cpp) answer instead of the dump; every
        // answer of theirs that differs from the real device's is printed (first 20)
        const char * devs = std::getenv("KVFIT_SCHED_DEVICES");
        std::vector<std::unique_ptr<sched_backend>> models;
        std::vector<const sched_backend *> mine;
        // KVFIT_SCHED_DEVICES=kvfit-only: kvfit's device models alone, no comparison (a graph kvfit exported itself,
        // KVFIT_SCHED_EXPORT, has no recorded answers)
        const bool only_mine = devs && std::string(devs) == "kvfit-only";
        if (devs && (std::string(devs) == "kvfit" || only_mine)) {
            for (size_t b = 0; b + 1 < bs.size(); ++b) {
                cuda_device cd;
                cd.index = int(b);
                cd.cc = 890;
                cd.release = capped ? cuda_release::r5b4ebc5 : cuda_release::v0_5_0;
                models.push_back(std::make_unique<cuda_backend>(cd));
            }
            models.push_back(std::make_unique<cpu_backend>(bs.size() > 1));
            for (auto & m : models) mine.push_back(m.get());
            // the answers, tensor by tensor (the graph as built; split-time answers on redirected sources are the
            // same for every source kvfit's copies keep in the same buffer type)
            ggraph gu = g;
            gu.use_count.assign(gu.t.size(), 0);
            for (const int32_t n : gu.nodes) for (const int32_t x : gu.t[size_t(n)].src) if (x >= 0) gu.use_count[size_t(x)] += 1;
            int shown = 0;
            for (size_t i = 0; i < g.t.size() && !only_mine; ++i) {
                for (size_t b = 0; b < bs.size(); ++b) {
                    const bool sup = mine[b]->supports_op(gu, int32_t(i)), want_sup = backends[b]->supports_op(gu, int32_t(i));
                    const bool off = mine[b]->offload_op(gu, int32_t(i)), want_off = backends[b]->offload_op(gu, int32_t(i));
                    const uint64_t sz = mine[b]->alloc_size(gu, int32_t(i)), want_sz = backends[b]->alloc_size(gu, int32_t(i));
                    if ((sup != want_sup || off != want_off || sz != want_sz) && shown++ < 20) {
                        std::cout << "  answer differs: " << g.t[i].name << " (" << gop_name(g.t[i].op) << " "
                                  << ggml_traits(g.t[i].type).name << ") on " << bs[b]["name"].get<std::string>() << ": supports "
                                  << sup << "/" << want_sup << ", offload " << off << "/" << want_off << ", size " << sz << "/"
                                  << want_sz << "\n";
                        rc = 1;
                    }
                }
            }
        }
        const sched_result r = sched_reserve(g, mine.empty() ? backends : mine, o);
        // the dumped copy: names and backends, node by node
        std::vector<std::pair<std::string, int>> want, got;
        for (const auto & n : d.copy["nodes"]) {
            if (n[0].is_string()) want.emplace_back(n[0].get<std::string>(), n[1].get<int>()); // a kvfit export: names
            else want.emplace_back(d.t.at(n[0].get<int>())["name"].get<std::string>(), n[1].get<int>());
        }
        for (const auto & [i, b] : r.copy_nodes) got.emplace_back(r.copy.t[size_t(i)].name, b);
        size_t diff = 0;
        while (diff < want.size() && diff < got.size() && want[diff] == got[diff]) ++diff;
        std::ostringstream out;
        out << "graph " << gi << ": " << r.n_splits << " splits, " << got.size() << " copy nodes";
        if (diff == want.size() && diff == got.size()) out << ", split OK";
        else {
            out << ", split DIFF at " << diff << " (kvfit " << (diff < got.size() ? got[diff].first : "end") << " / "
                << (diff < got.size() ? got[diff].second : -1) << ", llama.cpp " << (diff < want.size() ? want[diff].first : "end")
                << " / " << (diff < want.size() ? want[diff].second : -1) << ")";
            rc = 1;
        }
        out << ", sizes";
        for (size_t b = 0; b < bs.size(); ++b) out << " " << bs[b]["buft"].get<std::string>() << "=" << r.buffer_bytes[b];
        std::cout << out.str() << "\n";
    }
    return rc;
}
