// Start-up (issue 15, item 4): kvfit maps no HTTP or TLS library unless it reads an hf: model. libcurl is
// dlopen'ed at the first request (src/sources/curl_api.cpp) and the server runs in the kvfit-serve helper, so
// `kvfit --version` and a local plan load only the C++ runtime and fmt. glibc's loader names every library it
// maps under LD_DEBUG=libs; bench/startup.py times the same commands against cat.
#include "support/run_cli.h"

#include <gtest/gtest.h>

#include <string>

using kvfit::test::run_kvfit;
using kvfit::test::run_kvfit_env;

namespace {

// LD_DEBUG=libs prints "find library=libcurl.so.4 [0]; searching" and "trying file=/lib/.../libcurl.so.4".
bool maps(const std::string & ld_debug, const std::string & lib) { return ld_debug.find(lib + ".so") != std::string::npos; }

void expect_no_http_stack(const std::string & args) {
    const auto r = run_kvfit_env("LD_DEBUG=libs", args);
    ASSERT_TRUE(r.status == 0 || r.status == 3) << args << "\n" << r.err.substr(0, 2000);
    for (const char * lib : {"libcurl", "libssl", "libcrypto", "libgnutls", "libcpp-httplib", "libbrotli", "libnghttp2"}) {
        EXPECT_FALSE(maps(r.err, lib)) << "kvfit " << args << " maps " << lib;
    }
}

} // namespace

TEST(Startup, VersionMapsNoHttpOrTlsLibrary) {
    const auto r = run_kvfit("--version");
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.out.substr(0, r.out.find('\n') + 1), "kvfit 0.1.0\n"); // then the llama.cpp releases modelled
    expect_no_http_stack("--version");
}

TEST(Startup, LocalPlanMapsNoHttpOrTlsLibrary) {
    expect_no_http_stack("Qwen3.5-9B --gpu 8GiB --json");
    expect_no_http_stack("fit-params -m Qwen3.5-9B -c 8192 --fit-print on --gpu 8GiB");
}

TEST(Startup, HfModelLoadsLibcurlOnFirstUse) {
    // --offline with an empty cache: the Hub client is made (libcurl loaded), then the cache has nothing
    const std::string cache = ::testing::TempDir() + "/kvfit-startup-cache";
    const auto r = run_kvfit_env("LD_DEBUG=libs KVFIT_CACHE=" + cache, "hf:org/name --offline");
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(maps(r.err, "libcurl")) << r.err.substr(0, 2000);
}
