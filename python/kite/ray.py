"""Kite on Ray Serve: N replicas of `kite serve` behind one OpenAI-compatible endpoint,
routed with prefix affinity.

    python -m kite.ray --model M --replicas N [--threads T] [--port 8000]

POST /v1/chat/completions and /v1/completions (streaming or not), GET /v1/models, POST
/v1/embeddings (an embedding model), and every other `kite serve` route answer as `kite serve`
does: each replica runs one `kite serve` process pinned to its own CPUs and the ingress
forwards to it. A request goes to the replica that last served its prefix (the first
--prefix-chars characters of its prompt or messages), where the prefix is cached; a new prefix
goes to the least loaded replica. Answers carry `x-kite-replica` (which replica) and
`x-kite-replica-url` (its kite serve, whose /metrics count that replica's prefix-cache hits).
Needs ``pip install "ray[serve]==2.60.0"`` (not a dependency of kite) and a `kite` executable
on every node (--kite-bin, $KITE_BIN, PATH, or this repository's build/bin/kite).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from typing import Any, Dict, List, Optional

# Ray's optional machinery this app does not use: usage reports, the dashboard.
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def build_app(model: Optional[str] = None, replicas: int = 2, threads: int = 1,
              max_seqs: int = 16, prefix_chars: int = 256, kite_bin: Optional[str] = None,
              autoscaling_config: Optional[Dict[str, Any]] = None,
              serve_args: Optional[List[str]] = None, retry_timeout_s: float = 60.0) -> Any:
    """The Ray Serve application (serve.run it). `autoscaling_config` (Ray's own settings)
    replaces the fixed `replicas`; `serve_args` are more `kite serve` flags for every replica."""
    from ray import serve
    from ray.serve.config import RequestRouterConfig

    from kite._ray_app import KiteReplica
    from kite._ray_ingress import KiteIngress
    from kite._serve_process import find_kite_binary

    args = list(serve_args or [])
    if model:
        args = ["-m", model, *args]
    args += ["--max-seqs", str(max_seqs)]
    scaling = ({"autoscaling_config": autoscaling_config} if autoscaling_config
               else {"num_replicas": replicas})
    # No access-log line per request and call: on a busy node that is work taken from engines.
    quiet = {"log_level": "WARNING", "enable_access_log": False}
    replica = serve.deployment(
        KiteReplica,
        name="KiteReplica",
        # A replica reserves the CPUs its engine's threads use; queued requests wait in kite
        # serve (which batches max_seqs at once), not in Ray.
        ray_actor_options={"num_cpus": threads},
        max_ongoing_requests=max(4 * max_seqs, 64),
        health_check_period_s=2.0,
        health_check_timeout_s=30.0,
        graceful_shutdown_timeout_s=30.0,
        logging_config=quiet,
        request_router_config=RequestRouterConfig(
            request_router_class="kite._ray_router:PrefixAffinityRouter",
            request_router_kwargs={"prefix_chars": prefix_chars},
        ),
        **scaling,
    )
    # The ingress only forwards: it reserves no CPU (else it would take one from an engine).
    ingress = serve.deployment(KiteIngress, name="KiteIngress", num_replicas=1,
                               max_ongoing_requests=4096, ray_actor_options={"num_cpus": 0},
                               logging_config=quiet)
    # Under autoscaling, requests go through Ray's handles so that Ray sees each replica's
    # load; with a fixed number the ingress reaches each kite serve over HTTP (one hop less).
    through_ray = bool(autoscaling_config)
    return ingress.bind(replica.bind(find_kite_binary(kite_bin), threads, args, "KiteIngress"),
                        prefix_chars, retry_timeout_s, through_ray)


def check_placement(replicas: int, threads: int) -> Optional[str]:
    """Why the connected cluster cannot hold `replicas` x `threads` CPUs, or None."""
    import ray

    cpus = ray.cluster_resources().get("CPU", 0)
    need = replicas * threads
    if need <= cpus:
        return None
    return (f"{replicas} replicas x {threads} threads need {need} CPUs; the Ray cluster has "
            f"{cpus:g} (add nodes, or lower --replicas or --threads)")


def wait_running(app_name: str, timeout_s: float) -> Optional[str]:
    """None once the application runs, else why not (after timeout_s at most)."""
    from ray import serve

    deadline = time.monotonic() + timeout_s
    status = "not deployed"
    while time.monotonic() < deadline:
        app = serve.status().applications.get(app_name)
        if app is not None:
            status = f"{app.status}: {app.message}".strip()
            if app.status == "RUNNING":
                return None
            if app.status == "DEPLOY_FAILED":
                return status
            pending = [f"{name} {d.status} {d.message}".strip()
                       for name, d in app.deployments.items() if d.status != "HEALTHY"]
            if pending:
                status = "; ".join(pending)
        time.sleep(0.5)
    return f"not running after {timeout_s:.0f} s ({status})"


def start(a: argparse.Namespace) -> None:
    """Connects to (or starts) Ray, deploys the app and waits until it runs; exits 1 with one
    line when it cannot."""
    import ray
    from ray import serve

    if a.address:
        ray.init(address=a.address, include_dashboard=False, logging_level="WARNING")
    else:
        ray.init(num_cpus=a.num_cpus, include_dashboard=False, logging_level="WARNING")
    scaling = json.loads(a.autoscaling_config) if a.autoscaling_config else None
    first = (scaling or {}).get("initial_replicas") or (scaling or {}).get("min_replicas")
    why = check_placement(a.replicas if scaling is None else max(1, first or 1), a.threads)
    if why:
        fail(why)
    # One HTTP proxy (on the head node), no access log per request: Ray stays out of the way.
    serve.start(proxy_location="HeadOnly",
                http_options={"host": a.host, "port": a.port},
                logging_config={"log_level": "WARNING", "enable_access_log": False})
    app = build_app(a.model, a.replicas, a.threads, a.max_seqs, a.prefix_chars, a.kite_bin,
                    scaling, a.serve_arg, a.retry_timeout)
    deploy = threading.Thread(target=serve.run, args=(app,),
                              kwargs={"name": "kite", "route_prefix": "/"}, daemon=True)
    deploy.start()
    why = wait_running("kite", a.start_timeout)
    if why:
        serve.shutdown()
        fail(f"the Ray Serve application did not start: {why}")


def fail(message: str) -> None:
    print(f"kite.ray: {message}", file=sys.stderr)
    sys.exit(1)


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m kite.ray",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--model", "-m", default=None, help="path or installed name, as kite -m")
    ap.add_argument("--replicas", "-r", type=int, default=2)
    ap.add_argument("--threads", "-t", type=int, default=1,
                    help="engine threads per replica (= CPUs it reserves)")
    ap.add_argument("--max-seqs", type=int, default=16, help="sequences per replica at once")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--prefix-chars", type=int, default=256,
                    help="characters of the prompt or messages that choose the replica")
    ap.add_argument("--kite-bin", default=None, help="the kite executable (on every node)")
    ap.add_argument("--serve-arg", action="append", default=[], metavar="ARG",
                    help="one more kite serve argument per use, e.g. --serve-arg=--ctx=4096")
    ap.add_argument("--autoscaling-config", default=None, metavar="JSON",
                    help="Ray Serve's autoscaling_config (min_replicas, max_replicas, "
                         "target_ongoing_requests, ...); replaces --replicas")
    ap.add_argument("--address", default=None,
                    help="a running Ray cluster ('auto' for this node's); default: start one")
    ap.add_argument("--num-cpus", type=int, default=None,
                    help="CPUs of the Ray instance started here (default: all)")
    ap.add_argument("--retry-timeout", type=float, default=60.0,
                    help="seconds a request may spend trying replicas before a 503")
    ap.add_argument("--start-timeout", type=float, default=300.0,
                    help="seconds to wait for every replica to load its model")
    a = ap.parse_args(argv)
    if a.replicas < 1:
        ap.error(f"--replicas must be at least 1, not {a.replicas}")
    if a.threads < 1:
        ap.error(f"--threads must be at least 1, not {a.threads}")
    if a.autoscaling_config:
        try:
            if not isinstance(json.loads(a.autoscaling_config), dict):
                raise ValueError("not a JSON object")
        except ValueError as e:
            ap.error(f"--autoscaling-config: {e}")
    return a


def main(argv: Optional[List[str]] = None) -> None:
    a = parse_args(argv)
    # SIGTERM stops as Ctrl-C does; so does SIGINT where the shell that started this in the
    # background set it to be ignored.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    start(a)
    print(f"kite.ray: serving on http://{a.host}:{a.port}/v1 (Ctrl-C stops)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        stop(a)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def stop(a: argparse.Namespace) -> None:
    """Ends the application: on a cluster of its own, the whole Ray instance (its replicas'
    kite serve processes die with them); on a shared cluster, only this application."""
    import ray
    from ray import serve

    if a.address:
        serve.delete("kite")
    ray.shutdown()


if __name__ == "__main__":
    main()
