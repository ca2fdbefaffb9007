"""``pyvolcano install``: print the install bundle for ``kubectl apply -f -``.

stdout carries the multi-document YAML and nothing else. A bad option or an unreadable
certificate file is one line on stderr and exit code 2. ``--generate-admission-certs`` makes
a new CA and serving certificate (:mod:`pyvolcano.deploy.certs`) from the operating system's
randomness, so that output differs on every run, as upstream's ``gen-admission-secret.sh`` does.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated

import typer

__all__ = ["install", "run_install"]

CERT_FILES = ("tls.crt", "tls.key", "ca.crt")


def install(
    namespace: Annotated[str, typer.Option("--namespace", "-n", help="Namespace of the components")]
    = "volcano-system",
    image: Annotated[str | None, typer.Option("--image", help="Container image (default: pyvolcano:VERSION)")]
    = None,
    admission_certs: Annotated[Path | None, typer.Option(
        "--admission-certs", help="Directory with tls.crt, tls.key and ca.crt: adds the admission TLS Secret")]
    = None,
    generate_admission_certs: Annotated[bool, typer.Option(
        "--generate-admission-certs", help="Add the admission TLS Secret with a new CA and serving certificate "
        "(fresh keys each run)")] = False,
    fake_nodes: Annotated[bool, typer.Option(
        "--fake-nodes", help="Add the volcano-fake-nodes ServiceAccount and its RBAC")] = False,
    crds_only: Annotated[bool, typer.Option("--crds-only", help="Print only the CustomResourceDefinitions")]
    = False,
    skip_crds: Annotated[bool, typer.Option("--skip-crds", help="Print everything but the CRDs")] = False,
    queues: Annotated[bool, typer.Option("--queues", help="Add the root and default Queues (for a second apply: "
                                         "the controller-manager creates them at start)")] = False,
) -> None:
    """Print the YAML bundle (CRDs, RBAC, Deployments, queues) for kubectl apply -f -."""
    raise typer.Exit(run_install(namespace, image, admission_certs=admission_certs,
                                 generate_admission_certs=generate_admission_certs, fake_nodes=fake_nodes,
                                 crds_only=crds_only, skip_crds=skip_crds, queues=queues))


def run_install(namespace: str, image: str | None, *, admission_certs: Path | None = None,
                generate_admission_certs: bool = False, fake_nodes: bool = False, crds_only: bool = False,
                skip_crds: bool = False, queues: bool = False) -> int:
    from pyvolcano.deploy.bundle import DEFAULT_IMAGE, BundleError, Certificates, build_bundle, dump_documents

    if crds_only and skip_crds:
        typer.echo("error: --crds-only and --skip-crds: expected at most one of them", err=True)
        return 2
    if admission_certs is not None and generate_admission_certs:
        typer.echo("error: --admission-certs and --generate-admission-certs: expected at most one of them", err=True)
        return 2
    certificates = None
    if admission_certs is not None:
        texts: list[str] = []
        for name in CERT_FILES:
            path = admission_certs / name
            try:
                texts.append(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError) as e:
                reason = getattr(e, "strerror", None) or "not a UTF-8 PEM file"
                typer.echo(f"error: --admission-certs: {path}: cannot read: {reason}", err=True)
                return 2
        certificates = Certificates(tls_crt=texts[0], tls_key=texts[1], ca_crt=texts[2])
    try:
        if generate_admission_certs:
            from pyvolcano.deploy.bundle import check_namespace
            from pyvolcano.deploy.certs import generate_admission_certificates

            check_namespace(namespace)
            certificates = generate_admission_certificates(namespace, now=dt.datetime.now(dt.UTC))
        docs = build_bundle(namespace, image or DEFAULT_IMAGE, fake_nodes=fake_nodes, certificates=certificates,
                            crds=not skip_crds, components=not crds_only, queues=queues)
    except BundleError as e:
        typer.echo(f"error: {e}", err=True)
        return 2
    typer.echo(dump_documents(docs), nl=False)
    return 0
