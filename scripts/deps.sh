#!/usr/bin/env bash
# Installs kvfit's build dependencies from Debian packages when they are missing (needs root or sudo).
# Used by scripts/run.sh and scripts/test.sh; safe to run again.
set -euo pipefail
pkgs=(cmake ninja-build g++ nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev libbenchmark-dev)
pkgs+=(pkg-config libcpp-httplib-dev librsvg2-bin) # the tests' HTTP client (cpp-httplib); --chart FILE.png (rsvg-convert)
pkgs+=(libcurl4-openssl-dev) # hf: models (src/sources/http.cpp)
pkgs+=(libmicrohttpd-dev) # kvfit serve (src/server/server.cpp)
if [[ "${1:-}" == "--test" ]]; then
  pkgs+=(clang libclang-rt-14-dev)
  # the Python module's test (tests/python/run.sh): pybind11 and setuptools from Debian, a venv over them
  pkgs+=(python3-pybind11 pybind11-dev python3-setuptools python3-dev python3-venv)
  # chromium and chromium-driver (the browser test) are installed by tests/browser/run.sh itself, so that a
  # machine where they cannot be installed reports the test SKIPPED instead of failing every other test here.
  # node and npm run the conformance suite; the machine image may ship them outside Debian's npm package
  command -v npm >/dev/null 2>&1 || pkgs+=(nodejs npm)
  # the conformance suite's llama_probe takes its headers out of node-llama-cpp's llama/gitRelease.bundle
  command -v git >/dev/null 2>&1 || pkgs+=(git)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "kvfit: installing Debian packages: ${missing[*]}" >&2
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
