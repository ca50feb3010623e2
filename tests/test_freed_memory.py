"""The REST front end gives the memory a large body freed back to the system (serving/server/freed_memory.py): glibc
keeps freed pages in its arenas, so a server's resident memory stayed at its high-water mark after bursts."""

import json
import re
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from serving.server import rest_service
from serving.server.freed_memory import give_back_freed_memory
from serving.server.model_server import ModelServer



def resident_mib() -> float:
    return int(re.search(r"VmRSS:\s+(\d+)", Path("/proc/self/status").read_text())[1]) / 1024


def fragment(kept: list) -> None:
    """In a thread of its own (its own glibc arena, as a REST worker's): 120 MiB in 2 KiB blocks, every 16th kept, so
    that the freed ones leave holes that free() cannot hand back."""
    blocks = [bytearray(2048) for _ in range(60_000)]
    kept.extend(blocks[::16])


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads resident memory from /proc")
def test_freed_pages_go_back_to_the_system():
    kept = []
    thread = threading.Thread(target=fragment, args=(kept,))
    thread.start()
    thread.join()
    before = resident_mib()
    assert give_back_freed_memory()
    after = resident_mib()
    assert before - after > 60, (before, after)  # of the ~112 MiB freed in holes
    assert len(kept) == 3750


def test_rest_gives_memory_back_after_a_large_body(demo_model_dir, monkeypatch):
    calls = threading.Semaphore(0)
    monkeypatch.setattr(rest_service, "give_back_freed_memory", calls.release)
    with ModelServer("demo", demo_model_dir, poll_wait_s=0) as server:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        for texts, status in ((["small"], 200), (["word " * 50] * 5000, 400)):  # 1.3 MiB: over the 1 MiB of text
            body = json.dumps({"instances": texts}).encode()
            request = urllib.request.Request(f"http://127.0.0.1:{server.rest_port}/v1/models/demo:predict", data=body)
            try:
                answered = opener.open(request, timeout=60).status
            except urllib.error.HTTPError as error:
                answered = error.code
            assert answered == status
            large = len(body) >= rest_service.GIVE_BACK_AFTER_BODY_BYTES
            assert calls.acquire(timeout=5 if large else 0.5) == large, len(body)  # after the answer is sent
