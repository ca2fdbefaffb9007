"""The simulator's entropy: reproducible for a seed, and genuine OpenSSH Ed25519 keys."""

from __future__ import annotations

import base64
import random

from pyvolcano.controllers.entropy import NAME_SUFFIX_ALPHABET
from pyvolcano.simulator._ed25519 import generate_openssh_ed25519, public_key_from_seed
from pyvolcano.simulator.seeded_entropy import SeededEntropy


def test_ed25519_public_key_matches_rfc8032_test_vector_1() -> None:
    seed = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
    assert public_key_from_seed(seed).hex() == "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"


def test_ed25519_private_key_file_embeds_the_public_blob() -> None:
    pem, pub = generate_openssh_ed25519(random.Random(3))
    lines = pem.decode().splitlines()
    assert (lines[0], lines[-1]) == ("-----BEGIN OPENSSH PRIVATE KEY-----", "-----END OPENSSH PRIVATE KEY-----")
    body = base64.b64decode("".join(lines[1:-1]))
    assert body.startswith(b"openssh-key-v1\x00")
    assert pub.startswith(b"ssh-ed25519 ") and pub.endswith(b"\n")
    assert base64.b64decode(pub.split()[1]) in body


def test_ed25519_key_loads_in_a_maintained_library_and_its_public_half_matches() -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    pair = SeededEntropy(random.Random(11)).ssh_key_pair()
    key = serialization.load_ssh_private_key(pair.private_key, password=None)
    assert isinstance(key, ed25519.Ed25519PrivateKey)
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    assert public + b"\n" == pair.public_key


def test_seeded_entropy_gives_the_same_keys_and_names_for_the_same_seed() -> None:
    def draws(seed: int) -> tuple[object, ...]:
        e = SeededEntropy(random.Random(seed))
        return (e.name_suffix(), e.ssh_key_pair(), e.name_suffix(5))

    assert draws(4) == draws(4)
    assert draws(4) != draws(5)
    suffix = SeededEntropy(random.Random(0)).name_suffix()
    assert len(suffix) == 12 and set(suffix) <= set(NAME_SUFFIX_ALPHABET)


def _simulated_ssh_keys(seed: int) -> list[str]:
    from tests.simulator.test_runtime import job, node

    from pyvolcano.conf import default_configuration
    from pyvolcano.runtime.registry import default_registry
    from pyvolcano.simulator.runtime import Simulation
    from pyvolcano.simulator.workload import Submission

    jobs = [job(f"mpi{i}", duration=None) for i in range(2)]
    for j in jobs:
        j["spec"]["plugins"] = {"ssh": [], "svc": []}
    sim = Simulation(config=default_configuration(), registry=default_registry(), seed=seed)
    sim.submit([Submission(0.0, i, "test", o) for i, o in enumerate([node("n1"), *jobs])])
    sim.run(until=30.0)
    return [sim.store.get("Secret", "default", f"mpi{i}-ssh")["data"]["id_rsa"] for i in range(2)]


def test_a_simulation_gives_every_job_the_same_key_for_the_same_seed() -> None:
    first = _simulated_ssh_keys(0)
    assert first == _simulated_ssh_keys(0)
    assert first[0] != first[1]
    assert first != _simulated_ssh_keys(1)
