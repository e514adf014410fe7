"""A client-side rate limit for HTTP model backends: requests per minute and tokens per minute.

Hosted APIs (OpenAI and others) limit each key to so many requests and so many tokens per minute and answer
HTTP 429 beyond that. The ``openai`` SDK retries a 429 (honouring ``Retry-After``), but a build that sends
hundreds of requests from several threads is better off not exceeding the limit in the first place:
:class:`RateLimiter` makes each request wait (sleep) until it fits under both limits.

Why own code and not a library: the algorithm is two token buckets (a few dozen lines), it must be shared by
the threads of one backend, take a weighted cost (tokens) and an injectable clock for tests; the PyPI rate
limiters are either asyncio-only, decorator-shaped, or count calls only.

The algorithm, per limit (a "bucket" of capacity C that refills at ``per_minute / 60`` units per second and
starts full): a request costing c units may start when the bucket holds ``min(c, C)``; it then takes c (the
level may go below zero: a request larger than the bucket is allowed, and the debt delays the next ones). So
over any long run at most ``per_minute`` units go out per minute, and a burst is at most ``C``. C is one
``burst_seconds``' worth of the rate (default one second, at least one request), because providers enforce
limits on short windows ("60 requests per minute" may mean one per second).

Waits are reserved in call order under a lock, then slept outside it: concurrent callers are served first come
first served, none spins, and a fake clock makes the waits exact in tests.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from gemrag.errors import ConfigError

__all__ = ["RateLimiter", "TokenBucket"]


@dataclass
class TokenBucket:
    """One limit: ``rate`` units per second, bursts of at most ``capacity`` units (not thread-safe alone).

    Attributes:
        rate: refill rate (units per second, > 0).
        capacity: the most units the bucket holds (> 0).
        level: units available at time :attr:`stamp` (may be negative: a debt).
        stamp: the clock time (seconds) :attr:`level` refers to; None until the first reservation (full then).
    """

    rate: float
    capacity: float
    level: float = 0.0
    stamp: float | None = None

    def earliest(self, now: float, cost: float) -> float:
        """The earliest clock time (seconds, >= ``now`` and >= the last reservation) ``cost`` units may start."""
        start, level = self._level_at(now)
        need = min(cost, self.capacity)
        if level >= need:
            return start
        return start + (need - level) / self.rate

    def take(self, at: float, cost: float) -> None:
        """Reserve ``cost`` units at clock time ``at`` (a time :meth:`earliest` allowed, or later)."""
        start, level = self._level_at(at)
        self.level = level - cost
        self.stamp = start

    def _level_at(self, t: float) -> tuple[float, float]:
        """``(max(t, stamp), level then)``: the level never refers to a time before the last reservation."""
        if self.stamp is None:
            return t, self.capacity
        start = max(t, self.stamp)
        return start, min(self.capacity, self.level + (start - self.stamp) * self.rate)


class RateLimiter:
    """Requests-per-minute and tokens-per-minute limits shared by every thread of one backend instance.

    Attributes:
        requests_per_minute: the request limit (None: unlimited).
        tokens_per_minute: the token limit (None: unlimited); a request's tokens are what the caller estimates
            (for :class:`~gemrag.models.openai.backend.OpenAILLM`: the prompt's estimate plus ``max_tokens``).
        waited: total seconds callers were told to wait so far (float).
    """

    def __init__(
        self,
        requests_per_minute: int | None = None,
        tokens_per_minute: int | None = None,
        *,
        burst_seconds: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        """Create the limiter (both limits may be None: then :meth:`acquire` never waits).

        Args:
            requests_per_minute: requests allowed per minute (>= 1) or None.
            tokens_per_minute: tokens allowed per minute (>= 1) or None.
            burst_seconds: the bucket capacity in seconds of rate (> 0): how much may go out at once after an
                idle spell (at least one request, at least one token).
            clock: monotonic time in seconds (injectable for tests).
            sleep: sleeps the given seconds (injectable for tests); None: the real sleep, which a ``cancel``
                event given to :meth:`acquire` cuts short.

        Raises:
            ConfigError: a limit is below 1 or ``burst_seconds`` is not positive.
        """
        for name, value in (("requests_per_minute", requests_per_minute), ("tokens_per_minute", tokens_per_minute)):
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be >= 1 or unset, got {value}")
        if burst_seconds <= 0:
            raise ConfigError(f"burst_seconds must be positive, got {burst_seconds}")
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute
        self.waited: float = 0.0
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._buckets: list[tuple[TokenBucket, bool]] = []  # (bucket, counts tokens rather than requests)
        for per_minute, counts_tokens in ((requests_per_minute, False), (tokens_per_minute, True)):
            if per_minute is not None:
                rate = per_minute / 60.0
                self._buckets.append((TokenBucket(rate=rate, capacity=max(1.0, rate * burst_seconds)), counts_tokens))

    @property
    def active(self) -> bool:
        """True when at least one limit is set."""
        return bool(self._buckets)

    def reserve(self, tokens: int) -> float:
        """Reserve one request of ``tokens`` tokens without sleeping.

        Args:
            tokens: the request's token cost (estimated; >= 0).

        Returns:
            Seconds the caller must wait before sending (0.0 when it may send now).
        """
        if not self._buckets:
            return 0.0
        with self._lock:
            now = self._clock()
            costs = [(bucket, float(tokens) if counts_tokens else 1.0) for bucket, counts_tokens in self._buckets]
            start = max(bucket.earliest(now, cost) for bucket, cost in costs)
            for bucket, cost in costs:
                bucket.take(start, cost)
            wait = max(0.0, start - now)
            self.waited += wait
            return wait

    def acquire(self, tokens: int, cancel: threading.Event | None = None) -> float:
        """Block until one request of ``tokens`` tokens fits under both limits, then count it.

        Args:
            tokens: the request's token cost (estimated; >= 0).
            cancel: when set during the wait, the (real) sleep ends early; the request stays counted, so the
                caller should then not send it.

        Returns:
            The seconds the request had to wait (0.0 when none).
        """
        wait = self.reserve(tokens)
        if wait > 0:
            if self._sleep is not None:
                self._sleep(wait)
            elif cancel is not None:
                cancel.wait(wait)
            else:
                time.sleep(wait)
        return wait
