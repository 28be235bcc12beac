// The registry (include/kvfit/runtime.h: runtimes()). A new runtime is one folder under src/runtimes/ and one line
// here; the CLI, the HTTP API and the page list their runtimes and flags from this table.
#include "kvfit/llamacpp.h"
#include "kvfit/mlx.h"
#include "kvfit/ollama.h"
#include "kvfit/runtime.h"
#include "kvfit/sglang.h"
#include "kvfit/vllm.h"

namespace kvfit {

const std::vector<runtime_info> & runtimes() {
    static const std::vector<runtime_info> v = {
        llamacpp_runtime(), // first: the default
        vllm_runtime(),
        sglang_runtime(),
        ollama_runtime(),
        mlx_runtime(),
    };
    return v;
}

} // namespace kvfit
