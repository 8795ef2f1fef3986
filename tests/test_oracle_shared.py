"""shared_packets' counts, hosts and filters against a brute force over the packets the per-host
captures were generated from (docs/filters.md, "Captures that hold the same packets"): captures
of fewer than 1,024 packets that all run from one anchor, so that each sample is every packet of
its capture from the anchor on, and `shared` is the number of distinct fingerprints in both."""

from __future__ import annotations

import itertools
from fractions import Fraction

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import burstcore
from tests import oracles
from tests.test_shared_packets import tcp_frame

BASE = 1_700_000_000_000_000_000
HOSTS = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
GATEWAY = "10.0.0.9"


def fingerprint(src: str, dst: str, seq: int, ident: int, payload: int) -> tuple[object, ...]:
    """What docs/filters.md fingerprints of a TCP packet: addresses, protocol, IPv4
    identification and length, ports and sequence number (not the acknowledgement number)."""
    return (src, dst, 6, ident, 40 + payload, 40000, 29500, seq)


@st.composite
def per_host_traffic(draw):
    """Per host k, its capture's packets [(t, frame, fingerprint, src)]: every exchange cycles
    over the three pairs (so no second address is in 90 % of any stretch of a capture), each
    packet sent at t and received a delay later; IP identifications and sequence numbers from
    small sets, so that packets alike in every fingerprinted byte occur."""
    n = draw(st.integers(30, 60))
    captures: list[list[tuple[int, bytes, tuple[object, ...], str]]] = [[] for _ in HOSTS]
    t = BASE + 1_000
    for i in range(n):
        a, b = [(0, 1), (1, 2), (2, 0)][i % 3]
        s, d = (a, b) if draw(st.booleans()) else (b, a)
        t += draw(st.integers(1, 50_000))
        seq = draw(st.integers(0, 40))
        ident = draw(st.integers(0, 40))
        payload = draw(st.sampled_from([0, 100, 1448]))
        frame = tcp_frame(HOSTS[s], HOSTS[d], seq, draw(st.integers(0, 3)), ident, payload)
        fp = fingerprint(HOSTS[s], HOSTS[d], seq, ident, payload)
        captures[s].append((t, frame, fp, HOSTS[s]))
        captures[d].append((t + draw(st.integers(1, 40_000)), frame, fp, HOSTS[s]))
    gateway = draw(st.booleans())
    if gateway:
        # A sender that is no capture's host, seen by host 0 only.
        frame = tcp_frame(GATEWAY, HOSTS[0], 7, 0, 7, 100)
        captures[0].append((t + 1, frame, fingerprint(GATEWAY, HOSTS[0], 7, 7, 100), GATEWAY))
    for k, c in enumerate(captures):
        # Every capture starts at BASE, so one anchor, BASE, samples each from its first packet.
        frame = tcp_frame(HOSTS[k], "224.0.0.22", 0, 0, 1000 + k, 0)
        c.append((BASE, frame, fingerprint(HOSTS[k], "224.0.0.22", 0, 1000 + k, 0), HOSTS[k]))
        c.sort(key=lambda p: p[0])
    return captures, gateway


def write(c: list[tuple[int, bytes, tuple[object, ...], str]]) -> bytes:
    return oracles.capture([t for t, *_ in c], [len(f) for _, f, *_ in c], frames=[f for _, f, *_ in c])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(per_host_traffic())
def test_shared_counts_hosts_and_filters_equal_brute_force(traffic):
    captures, gateway = traffic
    assert all(len(c) < 1024 for c in captures)
    found = burstcore.shared_packets([write(c) for c in captures])
    samples = [{fp for _, _, fp, _ in c} for c in captures]
    want = []
    for a, b in itertools.combinations(range(len(captures)), 2):
        shared = len(samples[a] & samples[b])
        if shared == 0:
            continue
        smaller = min(len(samples[a]), len(samples[b]))
        # Told: at least 1 % of the smaller sample and at least 8 packets, or half the smaller
        # sample if that is less.
        told = 100 * shared >= smaller and shared >= min(8, Fraction(smaller, 2))
        want.append((a, b, BASE, shared, len(samples[a]), len(samples[b]), told))
    assert found.pairs.select("a", "b", "from_ns", "shared", "sampled_a", "sampled_b", "told").rows() == want
    assert found.spans == [(c[0][0], c[-1][0]) for c in captures]
    assert found.stretch == (BASE, min(c[-1][0] for c in captures) + 1)
    assert found.hosts == HOSTS
    assert found.uncaptured == ([GATEWAY] if gateway else [])
    assert found.filters == (None if gateway else [f"src host {h}" for h in HOSTS])
