"""The admission server's serving certificate, made with the ``cryptography`` package.

Upstream's chart runs ``gen-admission-secret.sh`` (``openssl``) in an init job: a self-signed
CA and a serving certificate for the admission Service's DNS names (``<svc>``,
``<svc>.<namespace>``, ``<svc>.<namespace>.svc``), both with fresh 2048-bit RSA keys.
:func:`generate_admission_certificates` makes the same three PEM files for
``pyvolcano install --generate-admission-certs``. The keys come from the operating system's
randomness (the library's, never a seeded generator) and the validity starts at the ``now``
the caller passes in, so nothing here reads a clock. The serial numbers are random 159-bit
integers from the same source, as RFC 5280 recommends.
"""

from __future__ import annotations

import datetime as dt

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pyvolcano.deploy.bundle import ADMISSION_SERVICE, Certificates

__all__ = ["CA_COMMON_NAME", "generate_admission_certificates"]

CA_COMMON_NAME = "pyvolcano-admission-ca"


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _pem_key(key: rsa.RSAPrivateKey) -> str:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption()).decode()


def generate_admission_certificates(namespace: str, *, now: dt.datetime, days: int = 3650,
                                    service: str = ADMISSION_SERVICE) -> Certificates:
    """A new CA and a serving certificate for ``service`` in ``namespace``, valid ``days``
    from ``now`` (a timezone-aware instant)."""
    if now.tzinfo is None:
        raise ValueError("now: expected a timezone-aware datetime")
    not_after = now + dt.timedelta(days=days)
    ca_key, tls_key = _key(), _key()
    ca_name = _name(CA_COMMON_NAME)
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    dns = [service, f"{service}.{namespace}", f"{service}.{namespace}.svc"]
    tls = (
        x509.CertificateBuilder()
        .subject_name(_name(dns[-1]))
        .issuer_name(ca_name)
        .public_key(tls_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(not_after)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(d) for d in dns]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return Certificates(
        tls_crt=tls.public_bytes(serialization.Encoding.PEM).decode(),
        tls_key=_pem_key(tls_key),
        ca_crt=ca.public_bytes(serialization.Encoding.PEM).decode(),
    )
