// kvfit-graph-dims: a model's dimensions and layer signatures as format-2 graph templates name them
// (src/runtimes/llamacpp/graph_shape.cpp), for tools/graph_template/graph2.py.
//   kvfit-graph-dims MODEL   ->  {"arch", "key", "n_layer", "n_vocab", "dims": {...}, "rot_k", "rot_v",
//                                 "layers": [{"sig", "dims"}...]}
// Exit 2 with a one-line error when the model does not load.
#include "kvfit/error.h"
#include "kvfit/sources.h"
#include "runtimes/llamacpp/compute.h"
#include "runtimes/llamacpp/graph_replay.h"

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

int main(int argc, char ** argv) {
    using namespace kvfit;
    if (argc != 2) {
        std::fprintf(stderr, "usage: kvfit-graph-dims MODEL\n");
        return 2;
    }
    try {
        warnings warn;
        const model_desc m = load_model(argv[1], warn);
        nlohmann::json j{{"arch", m.gguf_architecture}, {"key", detail::llamacpp_graph_key(m)}, {"n_layer", m.n_layer},
                         {"n_layer_mtp", m.n_layer_mtp}, {"n_vocab", m.n_vocab}};
        nlohmann::json dims = nlohmann::json::object();
        for (const auto & [k, v] : detail::graph_dims(m)) dims[k] = v;
        j["dims"] = dims;
        // whether a quantized K / V cache is Hadamard-rotated (compute_graph::rot_k / rot_v): a graph of its own
        llamacpp_settings q;
        q.type_k = q.type_v = ggml_type::q8_0;
        q.n_ctx = 4096;
        const detail::compute_graph g = detail::compute_graph_of(m, q, llamacpp_context_size(m, q));
        j["rot_k"] = g.rot_k;
        j["rot_v"] = g.rot_v;
        j["layers"] = nlohmann::json::array();
        for (uint32_t il = 0; il < m.n_layer + m.n_layer_mtp; ++il) {
            nlohmann::json ld = nlohmann::json::object();
            for (const auto & [k, v] : detail::graph_layer_dims(m, il)) ld[k] = v;
            j["layers"].push_back({{"sig", detail::graph_layer_sig(m, il)}, {"dims", ld}});
        }
        std::cout << j.dump() << "\n";
    } catch (const std::exception & e) {
        std::fprintf(stderr, "kvfit-graph-dims: %s\n", e.what());
        return 2;
    }
    return 0;
}
