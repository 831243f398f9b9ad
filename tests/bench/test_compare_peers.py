"""bench/compare-llamacpp's peers and tools/ikllamacpp/build.sh, without building or running
an engine: the argument checks, the output parsers on the tools' real output, the table, and
the ik_llama.cpp build script's errors and cache."""

import importlib.machinery
import importlib.util
import os
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "compare-llamacpp"
BUILD = ROOT / "tools" / "ikllamacpp" / "build.sh"
COMMIT = "8337e4cd3861406fc04e0854b1409cd1b027fbc9"

# ik_llama.cpp's llama-batched-bench at that commit prints its results only as this table, on
# stderr (S_TG is the 8th column); this is its run on default-q4_0.gguf, 2 threads, -rtr.
IK_BATCHED_STDERR = """\
main: n_kv_max = 8448, n_batch = 2048, n_ubatch = 512, flash_attn = 1, is_pp_shared = 0, n_gpu_layers = -1, n_threads = 2, n_threads_batch = 2

|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |
|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|
|   128 |    128 |   32 |   8192 |   16.253 |   252.01 |   33.937 |   120.69 |   50.190 |   163.22 |
"""


def load_script():
    loader = importlib.machinery.SourceFileLoader("compare_llamacpp", str(SCRIPT))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def run(cmd, env_extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KITE_IK_LLAMA")}
    return subprocess.run(cmd, cwd=ROOT, env=dict(env, **(env_extra or {})), text=True,
                          capture_output=True, timeout=60)


def test_batched_bench_outputs_parse():
    m = load_script()
    assert m.table_speeds(IK_BATCHED_STDERR, 32) == [120.69]
    assert m.table_speeds(IK_BATCHED_STDERR, 16) == []
    # llama.cpp's (tools/llamacpp/build.sh) with -npp 8 -ntg 8 -npl 2 on a busy machine.
    line = ('{"n_kv_max": 512, "n_batch": 2048, "n_ubatch": 512, "flash_attn": -1, '
            '"is_pp_shared": 0, "n_gpu_layers": -1, "n_threads": 2, "n_threads_batch": 2, '
            '"pp": 8, "tg": 8, "pl": 2, "n_kv": 32, "t_pp": 28.372017, "speed_pp": 0.563936, '
            '"t_tg": 186.856003, "speed_tg": 0.085627, "t": 215.228027, "speed": 0.148680}')
    assert m.jsonl_speeds("main: n_kv_max = 512\n" + line + "\n", 2) == [0.085627]


def test_one_peer_keeps_the_old_table_and_two_add_columns():
    m = load_script()
    row = ("llama 135M Q4_0", "pp512", 100.0, 1.0, [(50.0, 1.0, 2.0, 2.1, 10.0)], 1343.1,
           "compute-bound", 20.0)
    one = m.results_table([m.PEERS["llamacpp"]], [row])
    assert one[0] == ("| model | test | Kite t/s | llama.cpp t/s | Kite/llama.cpp | of medians "
                      "| AI (FLOP/B) | bound | Kite % roofline | llama.cpp % roofline |")
    assert one[2] == ("| llama 135M Q4_0 | pp512 | 100.00 ± 1.00 | 50.00 ± 1.00 | 2.00 | 2.10 "
                      "| 1343.1 | compute-bound | 20.0 | 10.0 |")
    two_row = row[:4] + ([*row[4], (80.0, 2.0, 1.25, 1.3, 16.0)],) + row[5:]
    two = m.results_table([m.PEERS["llamacpp"], m.PEERS["ik_llama"]], [two_row])
    assert "| ik_llama.cpp t/s | Kite/ik | of medians |" in two[0]
    assert two[0].endswith("| llama.cpp % roofline | ik_llama.cpp % roofline |")
    assert two[2].endswith("| 80.00 ± 2.00 | 1.25 | 1.30 | 1343.1 | compute-bound | 20.0 | 10.0 | 16.0 |")
    assert all(line.count("|") == two[0].count("|") for line in two)


def test_bad_peers_are_one_line_errors(tmp_path):
    for peers, message in (("llamacpp,foo", "unknown peer 'foo'"),
                           ("ik_llama", "must start with llamacpp"),
                           ("llamacpp,llamacpp", "name each peer once")):
        r = run([str(SCRIPT), "--peers", peers], {"KITE_CACHE": str(tmp_path)})
        assert r.returncode == 1 and message in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_ik_llama_is_a_default_peer_only_when_available(tmp_path, monkeypatch):
    m = load_script()
    monkeypatch.delenv("KITE_IK_LLAMA_SRC", raising=False)
    monkeypatch.setattr(m, "CACHE_ROOT", tmp_path)
    assert m.default_peers("native") == "llamacpp"
    stamp = tmp_path / f"ik_llama.cpp-{COMMIT}" / "bin" / ".kite-build-complete"
    stamp.parent.mkdir(parents=True)
    stamp.write_text(f"ik_llama.cpp commit {COMMIT}\nbuilt now on x86_64 for native: "
                     "-DGGML_NATIVE=ON\n")
    assert m.default_peers("native") == "llamacpp,ik_llama"
    assert m.default_peers("avx2") == "llamacpp"
    assert m.build_stamp(stamp.parent) == ("native: -DGGML_NATIVE=ON", COMMIT[:7])


def fake_source(tmp_path):
    src = tmp_path / "ik_llama.cpp"
    (src / "ggml").mkdir(parents=True)
    (src / "examples" / "llama-bench").mkdir(parents=True)
    (src / "CMakeLists.txt").write_text("")
    (src / "examples" / "llama-bench" / "llama-bench.cpp").write_text("")
    return src


def test_build_without_source_or_commit_fails_in_one_line(tmp_path):
    cache = {"KITE_CACHE": str(tmp_path / "cache")}
    src = fake_source(tmp_path)
    for args, env, message in (
            ([], {}, "no ik_llama.cpp source: set KITE_IK_LLAMA_SRC"),
            ([str(tmp_path)], {}, "is not an ik_llama.cpp source tree"),
            ([], {"KITE_IK_LLAMA_SRC": str(src)}, "cannot tell the commit of"),
            ([str(src)], {"KITE_IK_LLAMA_COMMIT": "main"}, "cannot tell the commit of")):
        r = run(["bash", str(BUILD), *args], dict(cache, **env))
        assert r.returncode == 1, r.stderr
        assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert message in r.stderr, r.stderr
    assert not (tmp_path / "cache").exists()


def test_build_prints_the_cached_bin_dir(tmp_path):
    src = fake_source(tmp_path)
    (src / ".kite-commit").write_text(COMMIT + "\n")
    bin_dir = tmp_path / "cache" / f"ik_llama.cpp-{COMMIT}" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in ("llama-bench", "llama-batched-bench"):
        (bin_dir / tool).write_text("")
        (bin_dir / tool).chmod(0o755)
    (bin_dir / ".kite-build-complete").write_text(f"ik_llama.cpp commit {COMMIT}\n")
    r = run(["bash", str(BUILD)], {"KITE_CACHE": str(tmp_path / "cache"),
                                   "KITE_IK_LLAMA_SRC": str(src)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == str(bin_dir)
