"""CPU sets in the Linux list format (``k8s.io/utils/cpuset``): ``"0-3,8,10-11"``.

A CPU set is a ``frozenset[int]``; :func:`parse_cpuset` reads the list format as
``cpuset.Parse`` does (comma-separated single ids or inclusive ``a-b`` ranges, blanks around
the whole text ignored, the empty string is the empty set) and :func:`format_cpuset` writes
it back with runs collapsed, as ``CPUSet.String`` does.
"""

from __future__ import annotations

__all__ = ["CpuSetError", "format_cpuset", "parse_cpuset"]


class CpuSetError(ValueError):
    """Text that is not a CPU list."""


def parse_cpuset(text: str) -> frozenset[int]:
    """The CPUs of ``text`` (``"0-3,8"``); raises :class:`CpuSetError` naming the bad part."""
    text = text.strip()
    if not text:
        return frozenset()
    out: set[int] = set()
    for part in text.split(","):
        lo, sep, hi = part.partition("-")
        try:
            if not sep:
                out.add(_cpu_id(lo))
                continue
            start, end = _cpu_id(lo), _cpu_id(hi)
        except ValueError:
            raise CpuSetError(f"{part!r} is not a cpu id or a range a-b") from None
        if start > end:
            raise CpuSetError(f"invalid range {part!r} ({start} > {end})")
        out.update(range(start, end + 1))
    return frozenset(out)


def _cpu_id(text: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise ValueError(text)
    return int(text)


def format_cpuset(cpus: frozenset[int] | set[int]) -> str:
    """``cpus`` in the list format, runs of consecutive ids as ``a-b`` (``""`` for none)."""
    parts: list[str] = []
    run: list[int] = []
    for c in sorted(cpus):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            parts.append(_run(run))
        run = [c]
    if run:
        parts.append(_run(run))
    return ",".join(parts)


def _run(run: list[int]) -> str:
    return str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}"
