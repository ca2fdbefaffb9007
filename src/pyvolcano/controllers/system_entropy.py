"""The live controllers' entropy: the operating system's CSPRNG (``secrets``) for names and
the ``cryptography`` package for SSH keys.

The key is upstream's (``pkg/controllers/job/plugins/ssh/ssh.go`` ``generateRsaKey``): a
2048-bit RSA key with public exponent 65537; ``id_rsa`` is its PKCS#1 PEM block
(``-----BEGIN RSA PRIVATE KEY-----``) and ``id_rsa.pub`` / ``authorized_keys`` the
``ssh-rsa`` line that ``ssh.MarshalAuthorizedKey`` writes (no comment, one trailing newline).
Nothing here is seeded, so two clusters, or two runs, never share a key or a name.
"""

from __future__ import annotations

import secrets

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from pyvolcano.controllers.entropy import NAME_SUFFIX_ALPHABET, NAME_SUFFIX_LENGTH, SSHKeyPair

__all__ = ["RSA_KEY_BITS", "SystemEntropy"]

RSA_KEY_BITS = 2048


class SystemEntropy:
    """:class:`pyvolcano.controllers.entropy.Entropy` from the operating system's randomness."""

    def name_suffix(self, length: int = NAME_SUFFIX_LENGTH) -> str:
        return "".join(secrets.choice(NAME_SUFFIX_ALPHABET) for _ in range(length))

    def ssh_key_pair(self) -> SSHKeyPair:
        key = rsa.generate_private_key(public_exponent=65537, key_size=RSA_KEY_BITS)
        private = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
        public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        return SSHKeyPair(private, public + b"\n")
