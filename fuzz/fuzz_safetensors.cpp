// libFuzzer target: any bytes through the safetensors header reader and the weight mapping.
// Input layout: 8 bytes (little-endian) giving the size of the data section beyond the input, modulo 2^40, then
// the first bytes of a file. So the fuzzer can reach both a header cut short (a download's prefix) and size
// checks against a file far larger than the input, without multi-gigabyte inputs.
// Every input must either parse or end in kvfit::error; anything else is a finding. Run with fuzz/run.sh.
#include "kvfit/error.h"
#include "kvfit/safetensors.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    if (size < 8) return 0;
    uint64_t extra = 0;
    for (int i = 7; i >= 0; --i) extra = (extra << 8) | data[i];
    extra &= (uint64_t(1) << 40) - 1;
    const std::string_view prefix(reinterpret_cast<const char *>(data) + 8, size - 8);
    try {
        const kvfit::safetensors_file f = kvfit::safetensors_file::parse(prefix, prefix.size() + extra, "fuzz.safetensors");
        kvfit::model_desc m;
        m.n_layer = 2;
        kvfit::resize_layers(m);
        kvfit::warnings warn;
        const char * configs[] = {"{}", R"({"quantization_config": {"quant_method": "gptq", "bits": 3}})",
                                  R"({"quantization_config": {"quant_method": "mxfp4"}})"};
        for (const char * c : configs) kvfit::apply_safetensors_weights(m, {f}, c, "fuzz", warn);
        (void)m.weights.total_bytes();
    } catch (const kvfit::error &) {
    }
    try {
        (void)kvfit::safetensors_index_shards(prefix, "fuzz.index.json");
    } catch (const kvfit::error &) {
    }
    return 0;
}
