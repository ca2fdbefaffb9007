"""Manifest inputs as ``kubectl -f`` takes them.

A path is a file, ``-`` (standard input, read once, shown as ``<stdin>``), or a directory,
which stands for its ``*.yaml``, ``*.yml`` and ``*.json`` files in name order (not recursive,
as ``kubectl -f DIR`` without ``-R``). :func:`read_inputs` yields each source's text or the
one-line :class:`ManifestError` saying why it could not be read; nothing is skipped silently.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from pyvolcano.api.manifest import ManifestError, read_manifest_text
from pyvolcano.util import safe_yaml

__all__ = ["MANIFEST_SUFFIXES", "STDIN", "expand_paths", "read_inputs"]

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"


def expand_paths(paths: Sequence[str | os.PathLike[str]]) -> list[str]:
    """Files in the order given, each directory replaced by its manifest files in name order."""
    out: list[str] = []
    for path in paths:
        source = os.fspath(path)
        if source != STDIN and os.path.isdir(source):
            names = sorted(n for n in os.listdir(source) if n.endswith(MANIFEST_SUFFIXES)
                           and os.path.isfile(os.path.join(source, n)))
            out.extend(os.path.join(source, n) for n in names)
        else:
            out.append(source)
    return out


def read_inputs(paths: Sequence[str | os.PathLike[str]]) -> Iterator[tuple[str, str | ManifestError]]:
    """``(source, text)`` per input file, or ``(source, error)`` for one that cannot be read."""
    stdin_read = False
    for source in expand_paths(paths):
        if source == STDIN:
            if stdin_read:
                yield "<stdin>", ManifestError("<stdin>: '-' given twice; standard input can be read once")
                continue
            stdin_read = True
            try:
                text = sys.stdin.read(safe_yaml.MAX_TEXT_CHARS + 1)
            except UnicodeDecodeError as e:
                yield "<stdin>", ManifestError(f"<stdin>: not UTF-8 text (byte {e.start}: {e.reason})")
                continue
            if len(text) > safe_yaml.MAX_TEXT_CHARS:
                yield "<stdin>", ManifestError(f"<stdin>: more than {safe_yaml.MAX_TEXT_CHARS} characters of text")
                continue
            yield "<stdin>", text
            continue
        if Path(source).is_dir():
            yield source, ManifestError(f"{source}: is a directory")
            continue
        try:  # the size limit and UTF-8 check of every manifest read
            yield source, read_manifest_text(source)
        except ManifestError as e:
            yield source, e
