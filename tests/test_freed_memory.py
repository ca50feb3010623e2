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


def test_bursts_of_bodies_under_1_mib_give_their_memory_back(demo_model_dir, monkeypatch):
    """Bodies of 0.9 MiB, 8 at once on a loopback server: their decoding's memory goes back after each burst, so the
    server's resident memory does not keep it (before, only a body of 1 MiB or more gave memory back, and bodies
    just under it left ~120 MiB free but resident in glibc's arenas)."""
    given_back = threading.Semaphore(0)

    def give_back_counted():
        give_back_freed_memory()
        given_back.release()

    monkeypatch.setattr(rest_service, "give_back_freed_memory", give_back_counted)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    texts = [f"text {row} " + "word " * 360 for row in range(512)]  # 0.9 MiB of text: under --max_request_text_bytes
    body = json.dumps({"instances": texts}).encode()
    assert 0.8 * 2**20 < len(body) < rest_service.GIVE_BACK_AFTER_BODY_BYTES

    with ModelServer("demo", demo_model_dir, poll_wait_s=0) as server:
        url = f"http://127.0.0.1:{server.rest_port}/v1/models/demo:predict"

        def burst(data: bytes) -> list[int]:
            answers = []
            clients = [threading.Thread(target=lambda: answers.append(opener.open(
                urllib.request.Request(url, data=data), timeout=120).status)) for _ in range(8)]
            for client in clients:
                client.start()
            for client in clients:
                client.join()
            return answers

        assert burst(json.dumps({"instances": ["small"]}).encode()) == [200] * 8  # the workers' threads made
        before = resident_mib()
        for _ in range(3):
            assert burst(body) == [200] * 8
            assert given_back.acquire(timeout=30)  # once the burst's last body is answered
        after = resident_mib()
        give_back_freed_memory()
        assert after - resident_mib() < 24, after  # the server kept little that could be given back
        assert after - before < 64, (before, after)
