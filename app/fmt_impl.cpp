// fmt's implementation, compiled once into the kvfit CLI (issue 28 item 3: `kvfit --version` within 1.2x of `cat`).
//
// The CLI links libstdc++ and libgcc statically (CMakeLists.txt); with fmt's implementation in this one translation
// unit it no longer needs libfmt.so either, so the dynamic loader maps only libc and libm and does not resolve
// thousands of shared-library symbols at every start (86 % of `kvfit --version`'s instructions before, bench/README.md).
// Debian ships fmt's implementation as a header (format-inl.h) but no static libfmt.a; fmt's own src/format.cc (fmt 9.1)
// is this include plus the explicit instantiations below, which the headers declare `extern template` (format.h)
// or which libfmt.so exports. Only this file includes format-inl.h: using fmt header-only in every translation unit
// (fmt::fmt-header-only) made CI's build 40 % slower (bench/README.md). The library, the Python module and the tests
// keep linking libfmt.so.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {
template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template FMT_API locale_ref::locale_ref(const std::locale & loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API void buffer<char>::append(const char *, const char *);
template FMT_API void vformat_to(buffer<char> &, string_view, basic_format_args<FMT_BUFFER_CONTEXT(char)>, locale_ref);
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;
template FMT_API void buffer<wchar_t>::append(const wchar_t *, const wchar_t *);
} // namespace detail
FMT_END_NAMESPACE
