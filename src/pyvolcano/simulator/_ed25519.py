"""Deterministic OpenSSH Ed25519 key pairs in pure Python, for simulated ``ssh`` job plugins.

Upstream generates a fresh 2048-bit RSA key with the operating system's randomness, and so
does the live controller-manager (:mod:`pyvolcano.controllers.system_entropy`). A simulator
must be reproducible, so its key is an Ed25519 key whose 32-byte seed comes from the
simulation's seeded ``random.Random`` (:mod:`pyvolcano.simulator.seeded_entropy`): the same
seed and the same sequence of jobs give the same keys on any machine. The public key is
derived with the RFC 8032 arithmetic, so the pair is a genuine, usable key in OpenSSH's
formats (``openssh-key-v1`` private key, ``ssh-ed25519`` public key line) — but it is
simulation-grade: its seed is predictable and it must not protect anything real.
"""

from __future__ import annotations

import base64
import hashlib
import random
import struct

__all__ = ["generate_openssh_ed25519", "public_key_from_seed"]

_P = 2**255 - 19
_D = -121665 * pow(121666, _P - 2, _P) % _P
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)

Point = tuple[int, int, int, int]


def _recover_x(y: int, sign: int) -> int:
    x2 = (y * y - 1) * pow(_D * y * y + 1, _P - 2, _P) % _P
    x = pow(x2, (_P + 3) // 8, _P)
    if (x * x - x2) % _P != 0:
        x = x * _SQRT_M1 % _P
    if (x & 1) != sign:
        x = _P - x
    return x


_GY = 4 * pow(5, _P - 2, _P) % _P
_GX = _recover_x(_GY, 0)
_G: Point = (_GX, _GY, 1, _GX * _GY % _P)


def _add(p: Point, q: Point) -> Point:
    a = (p[1] - p[0]) * (q[1] - q[0]) % _P
    b = (p[1] + p[0]) * (q[1] + q[0]) % _P
    c = 2 * p[3] * q[3] * _D % _P
    d = 2 * p[2] * q[2] % _P
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % _P, g * h % _P, f * g % _P, e * h % _P)


def _mul(s: int, p: Point) -> Point:
    q: Point = (0, 1, 1, 0)
    while s > 0:
        if s & 1:
            q = _add(q, p)
        p = _add(p, p)
        s >>= 1
    return q


def public_key_from_seed(seed: bytes) -> bytes:
    """The 32-byte Ed25519 public key of a 32-byte private seed (RFC 8032 §5.1.5)."""
    if len(seed) != 32:
        raise ValueError("an Ed25519 seed has 32 bytes")
    h = hashlib.sha512(seed).digest()
    a = int.from_bytes(h[:32], "little")
    a &= (1 << 254) - 8
    a |= 1 << 254
    x, y, z, _ = _mul(a, _G)
    zinv = pow(z, _P - 2, _P)
    xa, ya = x * zinv % _P, y * zinv % _P
    return int.to_bytes(ya | ((xa & 1) << 255), 32, "little")


def _string(b: bytes) -> bytes:
    return struct.pack(">I", len(b)) + b


def generate_openssh_ed25519(rng: random.Random, comment: str = "") -> tuple[bytes, bytes]:
    """Return ``(private key PEM, public key line)`` in OpenSSH formats, drawn from ``rng``."""
    seed = rng.getrandbits(256).to_bytes(32, "big")
    check = rng.getrandbits(32)
    pub = public_key_from_seed(seed)
    key_type = b"ssh-ed25519"
    pub_blob = _string(key_type) + _string(pub)
    private = (
        struct.pack(">II", check, check)
        + _string(key_type)
        + _string(pub)
        + _string(seed + pub)
        + _string(comment.encode())
    )
    pad = 1
    while len(private) % 8:
        private += bytes([pad])
        pad += 1
    body = (
        b"openssh-key-v1\x00"
        + _string(b"none")
        + _string(b"none")
        + _string(b"")
        + struct.pack(">I", 1)
        + _string(pub_blob)
        + _string(private)
    )
    b64 = base64.b64encode(body).decode()
    lines = [b64[i : i + 70] for i in range(0, len(b64), 70)]
    pem = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END OPENSSH PRIVATE KEY-----\n"
    public_line = b"ssh-ed25519 " + base64.b64encode(pub_blob) + (b" " + comment.encode() if comment else b"") + b"\n"
    return pem.encode(), public_line
