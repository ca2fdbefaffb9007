"""The live controllers' entropy: upstream's RSA key from the OS's randomness, never repeated."""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from pyvolcano.controllers.entropy import NAME_SUFFIX_ALPHABET
from pyvolcano.controllers.system_entropy import SystemEntropy


def test_ssh_key_pair_is_upstreams_2048_bit_rsa_in_pkcs1_pem_with_its_authorized_keys_line() -> None:
    pair = SystemEntropy().ssh_key_pair()
    assert pair.private_key.startswith(b"-----BEGIN RSA PRIVATE KEY-----\n")
    key = serialization.load_pem_private_key(pair.private_key, password=None)
    assert isinstance(key, rsa.RSAPrivateKey)
    assert key.key_size == 2048
    assert key.private_numbers().public_numbers.e == 65537
    assert pair.public_key.startswith(b"ssh-rsa ") and pair.public_key.endswith(b"\n")
    assert pair.public_key.count(b" ") == 1  # no comment, as ssh.MarshalAuthorizedKey writes it
    loaded = serialization.load_ssh_public_key(pair.public_key.strip())
    assert isinstance(loaded, rsa.RSAPublicKey)
    assert loaded.public_numbers() == key.public_key().public_numbers()


def test_two_system_entropies_never_give_the_same_key_or_name() -> None:
    a, b = SystemEntropy(), SystemEntropy()
    assert a.ssh_key_pair() != b.ssh_key_pair()
    names = {e.name_suffix() for e in (a, b, a, b)}
    assert len(names) == 4
    assert all(len(n) == 12 and set(n) <= set(NAME_SUFFIX_ALPHABET) for n in names)
