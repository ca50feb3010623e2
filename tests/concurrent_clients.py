"""Running test clients in threads, with every error a thread raises collected (so that it fails the test)."""

import threading


def run_clients(count: int, client) -> list[str]:
    """Runs `client(index)` in `count` threads (60 s at most); the errors they raised."""
    errors = []

    def guarded(index):
        try:
            client(index)
        except Exception as error:  # collected: a failing thread must fail the test
            errors.append(f"client {index}: {error!r}")

    threads = [threading.Thread(target=guarded, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "clients still running after 60 s"
    return errors
