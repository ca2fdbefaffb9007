"""The simulator's entropy: every value drawn from one seeded ``random.Random``.

A simulation must come out the same for the same seed, keys and generated names included,
so :class:`SeededEntropy` draws the name suffixes with ``rng.choice`` and makes the ``ssh``
plugin's key an Ed25519 key derived from 256 bits of the same generator
(:mod:`pyvolcano.simulator._ed25519`). Such keys are predictable by design: only the
simulator and its forecasts build controllers with this class, the live controller-manager
uses :class:`pyvolcano.controllers.system_entropy.SystemEntropy` and imports nothing of this
module (``tests/runtime/test_controller_manager_entropy.py``). Upstream's key is RSA; the
Secret keeps upstream's key names either way (docs/differences.md).
"""

from __future__ import annotations

import random

from pyvolcano.controllers.entropy import NAME_SUFFIX_ALPHABET, NAME_SUFFIX_LENGTH, SSHKeyPair
from pyvolcano.simulator._ed25519 import generate_openssh_ed25519

__all__ = ["SeededEntropy"]


class SeededEntropy:
    """:class:`pyvolcano.controllers.entropy.Entropy` from a seeded generator (simulation only)."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def name_suffix(self, length: int = NAME_SUFFIX_LENGTH) -> str:
        return "".join(self.rng.choice(NAME_SUFFIX_ALPHABET) for _ in range(length))

    def ssh_key_pair(self) -> SSHKeyPair:
        private, public = generate_openssh_ed25519(self.rng)
        return SSHKeyPair(private, public)
