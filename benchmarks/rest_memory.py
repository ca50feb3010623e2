"""REST memory over time: a `bert-tf serve` process's resident memory after each burst of concurrent large bodies.

    python -m benchmarks.rest_memory --bursts 32                 # 8 clients at once, 0.9 MiB text bodies
    python -m benchmarks.rest_memory --bursts 8 --body ids       # 1.2 MiB bodies of token ids (slow to decode)

Serves the demo model (`serving/export/demo_model.py`) with `bert-tf serve` in a process of its own, on 127.0.0.1,
sends `--bursts` bursts of `--clients` concurrent REST bodies (each client sends one and waits for its answer), and
prints the server's resident memory (VmRSS) before the first burst (after one burst of small requests, which starts
the REST workers' threads) and a second after each burst. Linux only (it reads /proc).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

WORDS = "the of and a to in is you that it he was for on are as with his they at be this have from".split()


def resident_mib(pid: int) -> float:
    return int(re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{pid}/status").read_text())[1]) / 1024


def bodies(kind: str, count: int, seed: int = 0) -> list[bytes]:
    """`count` bodies: 512 texts of 1,800 bytes (0.9 MiB, under the server's 1 MiB of text per request) or 160 rows
    of 2,048 token ids of the demo model's `serve_ids` (1.2 MiB)."""
    rng = random.Random(seed)
    if kind == "text":
        return [json.dumps({"instances": [" ".join(rng.choices(WORDS, k=600))[:1800] for _ in range(512)]}).encode()
                for _ in range(count)]
    return [json.dumps({"signature_name": "serve_ids",
                        "instances": [[rng.randrange(50) for _ in range(2048)] for _ in range(160)]}).encode()
            for _ in range(count)]


def burst(url: str, data: list[bytes]) -> list[int]:
    """Sends each body from a client thread of its own, all at once; the HTTP statuses."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    statuses: list[int] = []

    def send(body: bytes) -> None:
        with opener.open(urllib.request.Request(url, data=body), timeout=600) as answer:
            answer.read()
            statuses.append(answer.status)

    clients = [threading.Thread(target=send, args=(body,)) for body in data]
    for client in clients:
        client.start()
    for client in clients:
        client.join()
    return statuses


def start_server(base_path: Path) -> tuple[subprocess.Popen, int]:
    """`bert-tf serve` on the demo model: the process and its REST port, once it serves."""
    server = subprocess.Popen(
        [sys.executable, "-m", "bert_tf_cli", "serve", "--model_name", "demo", "--model_base_path", str(base_path),
         "--port", "0", "--rest_api_port", "0"], stdout=subprocess.PIPE, text=True)
    for line in server.stdout:
        match = re.search(r"REST [^ ]+:(\d+)", line)
        if match:
            return server, int(match[1])
    raise RuntimeError(f"bert-tf serve ended before serving (exit status {server.wait()})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bursts", type=int, default=32, help="bursts of concurrent bodies (default 32)")
    parser.add_argument("--clients", type=int, default=8, help="bodies sent at once in a burst (default 8)")
    parser.add_argument("--body", choices=("text", "ids"), default="text", help="what the bodies hold (default text)")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from serving.export.demo_model import save_demo_model

    with tempfile.TemporaryDirectory() as folder:
        base_path = Path(folder) / "demo"
        base_path.mkdir()
        save_demo_model(base_path, version=1)
        server, port = start_server(base_path)
        try:
            url = f"http://127.0.0.1:{port}/v1/models/demo:predict"
            burst(url, [json.dumps({"instances": ["small"]}).encode()] * args.clients)
            before = resident_mib(server.pid)
            data = bodies(args.body, args.clients)
            print(f"{args.clients} clients at once, {len(data[0]) / 2**20:.2f} MiB {args.body} bodies; "
                  f"resident memory before: {before:,.0f} MiB", flush=True)
            after = []
            for number in range(1, args.bursts + 1):
                started = time.monotonic()
                statuses = burst(url, data)
                time.sleep(1.0)
                after.append(resident_mib(server.pid))
                print(f"burst {number}: {after[-1]:,.0f} MiB ({after[-1] - before:+,.0f}), answers "
                      f"{sorted(set(statuses))}, {time.monotonic() - started:.1f} s", flush=True)
            print(f"after {args.bursts} bursts: {after[-1]:,.0f} MiB ({after[-1] - before:+,.0f}), highest "
                  f"{max(after):,.0f} MiB", flush=True)
        finally:
            server.terminate()
            server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
