// libFuzzer target: kvfit::fuzz::read_serving_log (fuzz/fuzz_targets.h), the vLLM / SGLang / Ollama / mlx-lm log readers of
// `kvfit explain`. Run with fuzz/run.sh.
#include "fuzz_targets.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    kvfit::fuzz::read_serving_log(std::string_view(reinterpret_cast<const char *>(data), size));
    return 0;
}
