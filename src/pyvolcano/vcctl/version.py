"""``vcctl version``: upstream's lines (``API Version``, ``Version``, ...), for pyvolcano."""

from __future__ import annotations

import platform
import sys

import typer

__all__ = ["version_lines"]

API_VERSION = "v1alpha1"


def version_lines() -> list[str]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        number = version("pyvolcano")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        from pyvolcano import __version__ as number
    return [
        f"API Version: {API_VERSION}",
        f"Version: {number}",
        "Git SHA: Not provided.",
        "Built At: Not provided.",
        f"Python Version: {platform.python_version()}",
        f"Python OS/Arch: {sys.platform}/{platform.machine() or 'unknown'}",
    ]


def version() -> None:
    """Print the version information."""
    for line in version_lines():
        typer.echo(line)
