#!/usr/bin/env bash
# The CMake package as a user meets it (cmake/install.cmake): `cmake --install` of this build tree into a temporary
# prefix, then a tiny consumer (tests/package/consumer) built three ways and run:
#   1. find_package(kvfit CONFIG) against the prefix (kvfitConfig.cmake, kvfitConfigVersion.cmake, kvfit::kvfit);
#   2. pkg-config (kvfit.pc), one c++ command;
#   3. add_subdirectory of the source tree with KVFIT_WITH_CURL and KVFIT_WITH_SERVER off (kvfit not top level):
#      configured and the consumer compiled; with KVFIT_PACKAGE_FULL=1 also the library, linked and run.
# Also checks that the installed headers are the library's API only (no fixture writer, no server, no CLI).
# Usage: run.sh SOURCE_DIR BUILD_DIR CMAKE
set -euo pipefail
src=$1 build=$2 cmake=${3:-cmake}
tmp=$(mktemp -d /tmp/kvfit-package.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
launcher=(); command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
expect='^kvfit [0-9.]+: llama.cpp fits=1 kv_per_token=[1-9][0-9]*$'

"$cmake" --install "$build" --prefix "$tmp/prefix" >/dev/null
inc="$tmp/prefix/include/kvfit"
for h in kvfit.h version.h plan.h runtime.h; do [[ -f "$inc/$h" ]] || { echo "FAIL: $h not installed"; exit 1; }; done
for h in gguf_writer.h safetensors_writer.h server.h cli_flags.h; do
  [[ ! -e "$inc/$h" ]] || { echo "FAIL: $h is installed (not the library's API)"; exit 1; }
done
libdir=$(dirname "$(find "$tmp/prefix" -name kvfitConfig.cmake)")
[[ -f "$libdir/kvfitConfigVersion.cmake" ]] || { echo "FAIL: no kvfitConfigVersion.cmake"; exit 1; }
[[ -x "$tmp/prefix/bin/kvfit" ]] || { echo "FAIL: kvfit not installed"; exit 1; }
"$tmp/prefix/bin/kvfit" --version | grep -Eq '^kvfit [0-9]+\.[0-9]+\.[0-9]+$'

echo "== find_package(kvfit CONFIG)"
"$cmake" -S "$src/tests/package/consumer" -B "$tmp/fp" "${gen[@]}" "${launcher[@]}" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
"$cmake" --build "$tmp/fp" >/dev/null
out=$("$tmp/fp/consumer" | head -1); echo "$out"; [[ $out =~ $expect ]]
"$tmp/fp/consumer" | grep -q '^error: -c 0: must be at least 1$'

echo "== pkg-config kvfit"
pc=$(dirname "$(find "$tmp/prefix" -name kvfit.pc)")
flags=$(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs kvfit)
${CXX:-c++} -std=c++20 "$src/tests/package/consumer/main.cpp" -o "$tmp/pc-consumer" $flags
out=$("$tmp/pc-consumer" | head -1); echo "$out"; [[ $out =~ $expect ]]

echo "== add_subdirectory(kvfit)"
"$cmake" -S "$src/tests/package/subdir" -B "$tmp/sub" "${gen[@]}" "${launcher[@]}" -DKVFIT_SOURCE="$src" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
if [[ ${KVFIT_PACKAGE_FULL:-0} == 1 ]]; then # the whole library again (minutes): outside the suite
  "$cmake" --build "$tmp/sub" --target consumer -j "${KVFIT_PACKAGE_JOBS:-$(nproc)}" >/dev/null
  out=$("$tmp/sub/consumer" | head -1); echo "$out"; [[ $out =~ $expect ]]
else # the consumer's object and kvfit's generated sources (embedded data): paths and usage requirements
  "$cmake" --build "$tmp/sub" --target consumer_objects >/dev/null
  [[ -s "$tmp/sub/kvfit/generated/embedded_data.cpp" ]] || { echo "FAIL: embedded data not generated under add_subdirectory"; exit 1; }
  echo "add_subdirectory: configured, consumer compiled (KVFIT_PACKAGE_FULL=1 links and runs it)"
fi
# kvfit under add_subdirectory adds no tests, install rules or Python module to the outer project
! grep -q "kvfit_tests\|kvfit_python" "$tmp/sub/build.ninja" 2>/dev/null || { echo "FAIL: kvfit's tests leak into the outer project"; exit 1; }
echo "package: ok"
