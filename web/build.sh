#!/usr/bin/env bash
# Rebuild the page of `kvfit serve` into web/dist with vite (npm registry; committed package-lock.json).
# web/dist is committed, so building kvfit itself needs neither npm nor the network; run this after editing
# web/src or web/index.html, then rebuild kvfit (cmake embeds web/dist). `--check` fails when the committed
# web/dist differs from a fresh build (tests/browser/run.sh uses it).
set -euo pipefail
cd "$(dirname "$0")"
[[ -d node_modules/uplot && -d node_modules/vite ]] || npm ci --no-audit --no-fund
npx vite build --logLevel warn
if [[ "${1:-}" == "--check" ]] && ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "web/build.sh --check: not a git checkout, cannot compare web/dist with the committed one (skipped)" >&2
elif [[ "${1:-}" == "--check" ]]; then
  git diff --exit-code --stat -- dist || { echo "web/dist is stale: run web/build.sh and commit web/dist" >&2; exit 1; }
  untracked=$(git ls-files --others --exclude-standard -- dist)
  [[ -z "$untracked" ]] || { echo "web/dist has new files: $untracked (run web/build.sh, commit web/dist)" >&2; exit 1; }
fi
