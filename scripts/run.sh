#!/usr/bin/env bash
# The main job: set everything up on a fresh machine, then generate text with the default
# model. With arguments, they are passed to `kite` instead (e.g. scripts/run.sh info).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/install-model.sh
bash scripts/build.sh release
if [ $# -gt 0 ]; then
  exec build/bin/kite "$@"
fi
exec build/bin/kite run --chat -p "Explain in three sentences why the sky is blue." -n 160
