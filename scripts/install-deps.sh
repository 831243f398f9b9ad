#!/usr/bin/env bash
# Installs the Debian packages Kite builds and tests with (only those that are missing).
set -euo pipefail

packages=(
  cmake ninja-build g++ clang libclang-rt-14-dev pkg-config python3 python3-pip python3-venv
  python3-dev
  libcli11-dev libpcre2-dev libicu-dev nlohmann-json3-dev libfmt-dev libxxhash-dev
  libgtest-dev libbenchmark-dev clang-format
  libjs-marked node-dompurify libjs-highlight.js chromium chromium-driver
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "[deps] all Debian packages present"
  exit 0
fi

echo "[deps] installing: ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
