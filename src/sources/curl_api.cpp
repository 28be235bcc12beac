// libcurl loaded on first use (src/sources/curl_api.h).
#include "sources/curl_api.h"

#include "kvfit/error.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <atomic>
#include <mutex>
#include <string>

namespace kvfit::detail {
namespace {

std::atomic<bool> g_loaded{false};

template <typename F> void resolve(void * lib, const char * name, F & out) {
    void * p = dlsym(lib, name);
    if (!p) throw error(fmt::format("hf: models need libcurl: {} is missing from the loaded libcurl", name));
    out = reinterpret_cast<F>(p);
}

curl_api load() {
    void * lib = nullptr;
    std::string why;
    // libcurl.so.4: Debian's libcurl4 (OpenSSL), whose headers kvfit is built with; libcurl-gnutls.so.4 has the
    // same ABI (libcurl3-gnutls). Never unloaded: libcurl keeps global state until exit.
    for (const char * name : {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl.so"}) {
        lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
        if (lib) break;
        if (why.empty()) why = dlerror();
    }
    if (!lib) throw error(fmt::format("hf: models need libcurl: cannot load libcurl.so.4 ({})", why));
    curl_api a{};
    resolve(lib, "curl_global_init", a.global_init);
    resolve(lib, "curl_easy_init", a.easy_init);
    resolve(lib, "curl_easy_cleanup", a.easy_cleanup);
    resolve(lib, "curl_easy_reset", a.easy_reset);
    resolve(lib, "curl_easy_setopt", a.easy_setopt);
    resolve(lib, "curl_easy_perform", a.easy_perform);
    resolve(lib, "curl_easy_getinfo", a.easy_getinfo);
    resolve(lib, "curl_easy_strerror", a.easy_strerror);
    resolve(lib, "curl_slist_append", a.slist_append);
    resolve(lib, "curl_slist_free_all", a.slist_free_all);
    resolve(lib, "curl_url", a.url);
    resolve(lib, "curl_url_cleanup", a.url_cleanup);
    resolve(lib, "curl_url_set", a.url_set);
    resolve(lib, "curl_url_get", a.url_get);
    resolve(lib, "curl_free", a.free);
    if (a.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw error("hf: models need libcurl: curl_global_init failed");
    return a;
}

} // namespace

const curl_api & curl_lib() {
    static std::once_flag once;
    static curl_api api{};
    std::call_once(once, [] {
        api = load(); // an exception leaves the flag unset: the next call tries again and throws the same message
        g_loaded = true;
    });
    return api;
}

bool curl_loaded() { return g_loaded; }

} // namespace kvfit::detail
