// A program that uses kvfit as an outside project would: the umbrella header and the kvfit::kvfit target
// (tests/package/run.sh builds it with find_package, pkg-config and add_subdirectory).
#include <kvfit/kvfit.h>

#include <cstdio>
#include <string>

int main() {
    kvfit::plan_request q;
    q.model = "Qwen3.5-9B";
    q.gpu = "24GiB";
    q.flags.set("ctx_size", "32768");
    try {
        const kvfit::plan_result r = kvfit::make_plan(q, [&](kvfit::warnings & w) { return kvfit::load_model(q.model, w); });
        std::printf("kvfit %s: %s fits=%d kv_per_token=%llu\n", kvfit::version, r.plan.runtime.c_str(), int(r.plan.fits),
                    static_cast<unsigned long long>(r.plan.kv_bytes_per_token.value_or(0)));
        kvfit::plan_request bad = q;
        bad.flags.set("ctx_size", "0");
        kvfit::make_plan(bad, [&](kvfit::warnings & w) { return kvfit::load_model(bad.model, w); });
    } catch (const kvfit::error & e) {
        std::printf("error: %s\n", e.what());
        return 0;
    }
    return 1; // -c 0 must be refused
}
