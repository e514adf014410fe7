"""The client-side rate limiter of HTTP backends (:mod:`gemrag.models.openai.limits`), on a fake clock."""

from __future__ import annotations

import threading

import pytest

from fakes import FakeClock
from gemrag.errors import ConfigError
from gemrag.models.openai.limits import RateLimiter


def limiter(clock: FakeClock, rpm: int | None = None, tpm: int | None = None, **kw: float) -> RateLimiter:
    return RateLimiter(rpm, tpm, clock=clock, sleep=clock.sleep, **kw)


def test_no_limits_never_wait() -> None:
    clock = FakeClock(start=1000.0)
    lim = limiter(clock)
    assert not lim.active
    assert all(lim.acquire(10**6) == 0.0 for _ in range(100))
    assert clock.sleeps == []


def test_requests_per_minute_spaces_requests() -> None:
    """60/min = one per second, burst 1: 5 requests take 4 s of sleep, one second apart."""
    clock = FakeClock(start=1000.0)
    lim = limiter(clock, rpm=60)
    waits = [lim.acquire(1) for _ in range(5)]
    assert waits == pytest.approx([0.0, 1.0, 1.0, 1.0, 1.0])
    assert sum(clock.sleeps) == pytest.approx(4.0) and lim.waited == pytest.approx(4.0)


def test_requests_per_minute_burst_of_one_second() -> None:
    """120/min: a burst of 2, then one every 0.5 s; 6 requests sleep (6 - 2) * 0.5 = 2 s."""
    clock = FakeClock(start=1000.0)
    lim = limiter(clock, rpm=120)
    waits = [lim.acquire(1) for _ in range(6)]
    assert waits == pytest.approx([0.0, 0.0, 0.5, 0.5, 0.5, 0.5])
    assert sum(clock.sleeps) == pytest.approx(2.0)


def test_idle_time_refills_up_to_the_burst_only() -> None:
    clock = FakeClock(start=1000.0)
    lim = limiter(clock, rpm=60)
    lim.acquire(1)
    clock.now += 3600  # an hour idle: still only one request may go at once
    assert lim.acquire(1) == 0.0
    assert lim.acquire(1) == pytest.approx(1.0)


def test_tokens_per_minute() -> None:
    """6000 tokens/min = 100/s, bucket 100 tokens; requests of 300 tokens: the first goes at once (the bucket is
    full; larger requests are allowed and leave a debt), each next one waits for the debt plus its own share."""
    clock = FakeClock(start=1000.0)
    lim = limiter(clock, tpm=6000)
    waits = [lim.acquire(300) for _ in range(4)]
    assert waits == pytest.approx([0.0, 3.0, 3.0, 3.0])
    # each request after the first waits until its predecessor's 300 tokens are paid back at 100 tokens/s
    assert sum(clock.sleeps) == pytest.approx(9.0)


def test_small_token_requests_within_the_bucket() -> None:
    clock = FakeClock(start=1000.0)
    lim = limiter(clock, tpm=6000)  # 100 tokens per second, bucket 100
    assert [lim.acquire(50) for _ in range(4)] == pytest.approx([0.0, 0.0, 0.5, 0.5])


def test_both_limits_the_stricter_wins() -> None:
    clock = FakeClock(start=1000.0)
    lim = limiter(clock, rpm=60, tpm=60_000)  # requests bind: 1/s; tokens: 1000/s
    assert [lim.acquire(10) for _ in range(3)] == pytest.approx([0.0, 1.0, 1.0])
    clock2 = FakeClock(start=1000.0)
    lim2 = limiter(clock2, rpm=6000, tpm=600)  # tokens bind: 10 tokens/s, bucket 10
    assert [lim2.acquire(10) for _ in range(3)] == pytest.approx([0.0, 1.0, 1.0])


def test_threads_get_distinct_slots() -> None:
    """Concurrent callers on a frozen clock reserve consecutive slots: waits 0, 1, 2, ... (each once)."""
    clock = FakeClock(start=1000.0)
    lim = RateLimiter(60, None, clock=clock, sleep=lambda s: None)
    waits: list[float] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def worker() -> None:
        start.wait()
        w = lim.acquire(1)
        with lock:
            waits.append(w)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=5)
    assert sorted(waits) == pytest.approx([float(i) for i in range(8)])


def test_real_clock_waits() -> None:
    """With the real clock: 600/min and a 0.1 s burst = one request every 0.1 s, so four take at least 0.3 s
    (however slow the machine), and the waits told add up to at most 0.3 s (less when a caller comes late). The
    elapsed time's upper bound only guards against a hang: load stretches it."""
    import time

    lim = RateLimiter(600, None, burst_seconds=0.1)
    t0 = time.monotonic()
    for _ in range(4):
        lim.acquire(1)
    assert 0.28 <= time.monotonic() - t0 < 5.0
    assert lim.waited <= 0.3 + 1e-9


@pytest.mark.parametrize("kw", [{"requests_per_minute": 0}, {"tokens_per_minute": -5}, {"burst_seconds": 0.0}])
def test_invalid_limits(kw: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        RateLimiter(**kw)  # type: ignore[arg-type]
