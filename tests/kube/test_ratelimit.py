"""Client-side rate limiting: client-go's token bucket with a fake clock."""

from __future__ import annotations

import threading

import pytest

from pyvolcano.kube.ratelimit import (
    CONTROLLER_MANAGER_BURST,
    CONTROLLER_MANAGER_QPS,
    SCHEDULER_BURST,
    SCHEDULER_QPS,
    RateLimitExceeded,
    TokenBucket,
    rate_limiter_for,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []
        self.lock = threading.Lock()

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        with self.lock:
            self.slept.append(seconds)


def bucket(qps: float, burst: int) -> tuple[TokenBucket, FakeClock]:
    clock = FakeClock()
    return TokenBucket(qps, burst, clock=clock, sleep=clock.sleep), clock


def test_bucket_starts_full_and_serves_a_burst_without_waiting():
    tb, clock = bucket(10, 5)
    assert [tb.accept() for _ in range(5)] == [0.0] * 5
    assert clock.slept == []


def test_after_the_burst_requests_are_spaced_at_exactly_one_over_qps():
    tb, clock = bucket(10, 2)
    tb.accept()
    tb.accept()
    waits = [tb.accept() for _ in range(3)]  # reserved at the same instant: queued behind each other
    assert waits == pytest.approx([0.1, 0.2, 0.3])
    assert clock.slept == pytest.approx([0.1, 0.2, 0.3])


def test_tokens_refill_at_qps_up_to_burst():
    tb, clock = bucket(4, 3)
    for _ in range(3):
        tb.accept()
    clock.now = 0.5
    assert tb.tokens() == pytest.approx(2.0)
    clock.now = 100.0
    assert tb.tokens() == pytest.approx(3.0)  # never above burst


def test_try_accept_takes_only_a_free_token():
    tb, clock = bucket(1, 1)
    assert tb.try_accept()
    assert not tb.try_accept()
    assert tb.tokens() == pytest.approx(0.0)  # the refused request took nothing
    clock.now = 1.0
    assert tb.try_accept()


def test_a_token_due_after_the_deadline_is_refused_and_not_taken():
    tb, _clock = bucket(2, 1)
    tb.accept()
    with pytest.raises(RateLimitExceeded, match="would exceed the deadline"):
        tb.accept(max_wait=0.4)
    assert tb.accept(max_wait=0.5) == pytest.approx(0.5)


def test_clock_going_backwards_adds_no_tokens():
    tb, clock = bucket(10, 1)
    clock.now = 5.0
    tb.accept()
    clock.now = 4.0
    assert tb.tokens() == pytest.approx(0.0)


def test_concurrent_callers_get_distinct_reservations_at_the_configured_rate():
    tb, _clock = bucket(100, 10)
    waits: list[float] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(25):
            w = tb.accept()
            with lock:
                waits.append(w)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    waits.sort()
    assert waits[:10] == [0.0] * 10
    # 90 queued requests at 100/s: the i-th waits i/100 s, each slot given to exactly one caller
    assert waits[10:] == pytest.approx([i / 100 for i in range(1, 91)])


def test_rate_limiter_for_follows_client_go_rest_config_rules():
    assert rate_limiter_for(-1, 0) is None
    default = rate_limiter_for(0, 0)
    assert default is not None and (default.qps, default.burst) == (5.0, 10)
    tb = rate_limiter_for(SCHEDULER_QPS, SCHEDULER_BURST)
    assert tb is not None and (tb.qps, tb.burst) == (2000.0, 2000)
    assert (CONTROLLER_MANAGER_QPS, CONTROLLER_MANAGER_BURST) == (50.0, 100)
    with pytest.raises(ValueError, match="--kube-api-burst: got -3"):
        rate_limiter_for(10, -3)


def test_invalid_bucket_parameters_are_rejected():
    with pytest.raises(ValueError, match="qps must be greater than 0"):
        TokenBucket(0, 1)
    with pytest.raises(ValueError, match="burst is required"):
        TokenBucket(1, 0)
