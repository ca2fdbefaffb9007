"""Where the job controller's unpredictable values come from: SSH keys and generated names.

The job controller draws two kinds of values that nobody may guess on a real cluster: the
``ssh`` plugin's key pair (whose private half sits in the job's Secret and opens every pod
of the job) and the random suffixes of generated volume and PersistentVolumeClaim names
(``jobhelpers.GenRandomStr``; a name known in advance lets anyone with create rights in the
namespace plant a claim the job would then mount). Controllers therefore never draw them
from a seeded generator themselves: they are handed an :class:`Entropy` by the runtime that
builds them, and the runtime alone chooses it — no flag does:

* the live controller-manager (:mod:`pyvolcano.runtime.controller_manager`) uses
  :class:`pyvolcano.controllers.system_entropy.SystemEntropy`: the operating system's
  CSPRNG, and upstream's 2048-bit RSA key made by the ``cryptography`` package;
* the simulator uses :class:`pyvolcano.simulator.seeded_entropy.SeededEntropy`, reproducible
  for a seed (a simulated cluster protects nothing), which the live path never imports.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Final, Protocol

__all__ = ["NAME_SUFFIX_ALPHABET", "NAME_SUFFIX_LENGTH", "Entropy", "SSHKeyPair"]

NAME_SUFFIX_ALPHABET: Final = string.digits + string.ascii_lowercase
"""``jobhelpers.GenRandomStr``'s characters (valid in every Kubernetes name)."""

NAME_SUFFIX_LENGTH: Final = 12
"""Upstream's suffix length for generated volume and claim names."""


@dataclass(frozen=True, slots=True)
class SSHKeyPair:
    """An SSH key pair as the ``ssh`` plugin stores it: the private key file's text (PEM) and
    the public key's ``authorized_keys`` line, newline-terminated."""

    private_key: bytes
    public_key: bytes


class Entropy(Protocol):
    """The unpredictable values a controller may need (see the module docstring)."""

    def name_suffix(self, length: int = NAME_SUFFIX_LENGTH) -> str:
        """``length`` characters of :data:`NAME_SUFFIX_ALPHABET`."""
        ...

    def ssh_key_pair(self) -> SSHKeyPair:
        """A fresh key pair for one job."""
        ...
