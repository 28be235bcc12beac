#pragma once
// libcurl, loaded with dlopen at the first hf: request (src/sources/http.cpp is its only user), so that kvfit's
// start-up and every local plan map neither libcurl nor its TLS stack (issue 15: `kvfit --version` took 14 ms
// with 39 shared libraries). Only curl's headers are needed at build time (Debian libcurl4-openssl-dev); the
// library is found at run time by its soname. Not part of the public API.
#include <curl/curl.h>

namespace kvfit::detail {

/// The libcurl functions kvfit calls, resolved from the loaded library.
struct curl_api {
    CURLcode (*global_init)(long flags);
    CURL * (*easy_init)();
    void (*easy_cleanup)(CURL *);
    void (*easy_reset)(CURL *);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_perform)(CURL *);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    const char * (*easy_strerror)(CURLcode);
    curl_slist * (*slist_append)(curl_slist *, const char *);
    void (*slist_free_all)(curl_slist *);
    CURLU * (*url)();
    void (*url_cleanup)(CURLU *);
    CURLUcode (*url_set)(CURLU *, CURLUPart, const char *, unsigned int);
    CURLUcode (*url_get)(const CURLU *, CURLUPart, char **, unsigned int);
    void (*free)(void *);
};

/// libcurl, loaded (libcurl.so.4, then libcurl-gnutls.so.4) and initialised (curl_global_init) on the first call,
/// once per process. Throws kvfit::error "hf: models need libcurl: cannot load libcurl.so.4 (...)" when it cannot be
/// loaded or lacks a function.
const curl_api & curl_lib();

/// True once curl_lib() has loaded libcurl (tests: a local plan must not).
bool curl_loaded();

} // namespace kvfit::detail
