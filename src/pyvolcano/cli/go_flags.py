"""Upstream's command lines, read the way Go's pflag reads them, for the three live components.

Upstream's ``vc-scheduler``, ``vc-controller-manager`` and ``vc-webhook-manager`` parse their
arguments with pflag, klog's flags and component-base's added (``cliflag.InitFlags``), and
upstream's Helm chart passes them arguments in that dialect (``--logtostderr``, ``-v=4``,
``--enable-healthz=true``, even ``2>&1``, which only a shell would read). So that upstream's
manifests run pyvolcano's image unchanged, a :class:`GoFlagsCommand` rewrites its arguments
before the command line library sees them:

* ``--name=value`` and ``--name value``; a boolean flag is ``--name`` or ``--name=<bool>``
  (Go's ``strconv.ParseBool``: ``1 t T TRUE true True 0 f F FALSE false False``), never
  ``--name false`` (pflag reads that ``false`` as a positional argument);
* a one-letter flag (``-v``) also as ``-v=4``, ``-v 4`` and ``-v4``;
* ``_`` and ``-`` are the same in a flag's name (component-base's ``WordSepNormalizeFunc``:
  ``--log_dir`` is ``--log-dir``);
* a string-slice flag (``--node-selector``, ``--controllers``) splits its value at commas and
  may be repeated;
* positional arguments are collected and never read, as upstream's ``main`` never reads them;
  ``--`` ends the flags.

Every upstream flag a command has no option for is declared in its table (:data:`SCHEDULER`,
:data:`CONTROLLER_MANAGER`, :data:`WEBHOOK_MANAGER`, built from :data:`KLOG` and
:data:`COMPONENT_BASE`) with its Go type (the value is checked) and what pyvolcano does with it:
**honoured** (it has no effect upstream either, or pyvolcano already does what it asks:
``--logtostderr``), **ignored** (accepted; it and the positional arguments are named in one
``warning:`` line on stderr), or **refused** unless its value asks for nothing pyvolcano lacks
(``--scheduler-sharding-mode`` other than ``none``): one ``error:`` line, exit 2. A flag neither
an option nor in the table is an unknown option, as upstream's ``unknown flag``.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import typer
from typer.core import TyperCommand

__all__ = [
    "COMPONENT_BASE",
    "CONTROLLER_MANAGER",
    "KLOG",
    "SCHEDULER",
    "WEBHOOK_MANAGER",
    "Effect",
    "GoFlag",
    "GoFlagsCommand",
    "Kind",
    "Translation",
    "UsageError",
    "check_value",
    "go_command",
    "klog_severity",
    "translate",
]

class UsageError(typer.BadParameter):
    """A flag pflag would refuse, or one pyvolcano refuses: one ``error:`` line, exit code 2."""

    def format_message(self) -> str:
        return self.message


_TRUE: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE: Final = frozenset({"0", "f", "F", "FALSE", "false", "False"})
_INT_RE: Final = re.compile(r"[+-]?\d+")
_FLOAT_RE: Final = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_SEVERITIES: Final = ("INFO", "WARNING", "ERROR", "FATAL")


class Kind(enum.Enum):
    """A flag's Go type, which decides how its value is taken and checked."""

    BOOL = "bool"
    INT = "int"
    UINT = "uint"
    FLOAT = "float"
    DURATION = "duration"
    STRING = "string"
    STRINGS = "strings"
    MAP = "mapStringBool"


class Effect(enum.Enum):
    HONOURED = "honoured"
    IGNORED = "ignored"
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class GoFlag:
    """An upstream flag a command has no option for. ``accepts``: the values that ask for
    nothing pyvolcano lacks (taken silently even when the flag is ignored or refused)."""

    name: str
    kind: Kind
    effect: Effect
    reason: str = ""
    accepts: Callable[[str], bool] | None = None
    remedy: str = ""

    def takes(self, value: str) -> bool:
        return self.effect is Effect.HONOURED or (self.accepts is not None and self.accepts(value))


def _honoured(name: str, kind: Kind, reason: str = "") -> GoFlag:
    return GoFlag(name, kind, Effect.HONOURED, reason)


def _ignored(name: str, kind: Kind, reason: str, accepts: Callable[[str], bool] | None = None) -> GoFlag:
    return GoFlag(name, kind, Effect.IGNORED, reason, accepts)


def _is_true(value: str) -> bool:
    return value in _TRUE


def _is_false(value: str) -> bool:
    return value in _FALSE


_LOGS_TO_STDERR: Final = "pyvolcano logs to stderr only"

KLOG: Final[tuple[GoFlag, ...]] = (
    _ignored("logtostderr", Kind.BOOL, _LOGS_TO_STDERR, accepts=_is_true),
    _honoured("alsologtostderr", Kind.BOOL, "logs go to stderr in any case"),
    _honoured("alsologtostderrthreshold", Kind.STRING, "logs go to stderr only, where klog ignores it too"),
    _ignored("log-dir", Kind.STRING, _LOGS_TO_STDERR),
    _ignored("log-file", Kind.STRING, _LOGS_TO_STDERR),
    _ignored("log-file-max-size", Kind.UINT, _LOGS_TO_STDERR),
    _ignored("vmodule", Kind.STRING, "verbosity is per process"),
    _ignored("skip-headers", Kind.BOOL, "the log line format is fixed", accepts=_is_false),
    _ignored("skip-log-headers", Kind.BOOL, "the log line format is fixed", accepts=_is_false),
    _ignored("add-dir-header", Kind.BOOL, "the log line format is fixed", accepts=_is_false),
    _ignored("one-output", Kind.BOOL, _LOGS_TO_STDERR, accepts=_is_false),
    _ignored("log-backtrace-at", Kind.STRING, "no stack traces are logged"),
    _ignored("legacy-stderr-threshold-behavior", Kind.BOOL, "--stderrthreshold always applies", accepts=_is_false),
    _honoured("log-flush-frequency", Kind.DURATION, "every log line is written at once"),
)
"""klog's flags (``klog.InitFlags``) and the ``--log-flush-frequency`` every upstream ``main``
adds; ``-v`` and ``--stderrthreshold`` are options of the commands."""

COMPONENT_BASE: Final[tuple[GoFlag, ...]] = (
    _ignored("feature-gates", Kind.MAP, "pyvolcano has no feature gates; it behaves as upstream's defaults"),
)
"""component-base's feature gates (``utilfeature.DefaultMutableFeatureGate.AddFlag``)."""

_LEADER_LOCK: Final = GoFlag("leader-elect-resource-lock", Kind.STRING, Effect.REFUSED,
                             "pyvolcano's leader election takes only a Lease", lambda v: v == "leases",
                             "leases (the default)")
_NO_TLS: Final = "the component serves no TLS of its own"
_THREADS: Final = "work is done by a fixed number of workers; the decisions are the same"

SCHEDULER: Final[tuple[GoFlag, ...]] = (
    *KLOG, *COMPONENT_BASE, _LEADER_LOCK,
    _ignored("ca-cert-file", Kind.STRING, _NO_TLS),
    _ignored("tls-cert-file", Kind.STRING, _NO_TLS),
    _ignored("tls-private-key-file", Kind.STRING, _NO_TLS),
    _ignored("resync-period", Kind.DURATION, "informers do not resync; every change is watched"),
    _honoured("priority-class", Kind.BOOL, "upstream's scheduler reads it nowhere either"),
    _ignored("plugins-dir", Kind.STRING, "Go plugins cannot be loaded; a configuration naming one is refused"),
    _ignored("csi-storage", Kind.BOOL, "CSIDrivers and CSIStorageCapacities are always watched", accepts=_is_true),
    _ignored("enable-pprof", Kind.BOOL, "there is no pprof endpoint", accepts=_is_false),
    _ignored("cache-dumper", Kind.BOOL, "there is no cache dumper (pyvolcano snapshot reads the cluster)"),
    _ignored("cache-dump-dir", Kind.STRING, "there is no cache dumper (pyvolcano snapshot reads the cluster)"),
    _ignored("node-worker-threads", Kind.UINT, _THREADS),
    _ignored("gate-removal-worker-num", Kind.INT, _THREADS),
    _ignored("resource-sync-timeout", Kind.DURATION, "the scheduler waits up to 60s for its informers"),
    GoFlag("scheduler-sharding-mode", Kind.STRING, Effect.REFUSED, "node sharding is not implemented in pyvolcano yet",
           lambda v: v == "none", "none (the default)"),
    _honoured("scheduler-sharding-name", Kind.STRING, "it names a shard only with a sharding mode"),
)
"""``vc-scheduler``'s flags without a ``pyvolcano scheduler`` option (``cmd/scheduler``)."""

_SHARDING: Final = "the sharding controller is not implemented"
CONTROLLER_MANAGER: Final[tuple[GoFlag, ...]] = (
    *KLOG, *COMPONENT_BASE, _LEADER_LOCK,
    _ignored("ca-cert-file", Kind.STRING, _NO_TLS),
    _ignored("tls-cert-file", Kind.STRING, _NO_TLS),
    _ignored("tls-private-key-file", Kind.STRING, _NO_TLS),
    _ignored("worker-threads", Kind.UINT, _THREADS),
    _ignored("worker-threads-for-cronjob", Kind.UINT, _THREADS),
    _ignored("worker-threads-for-podgroup", Kind.UINT, _THREADS),
    _ignored("worker-threads-for-gc", Kind.UINT, _THREADS),
    _ignored("worker-threads-for-queue", Kind.UINT, _THREADS),
    _ignored("max-requeue-num", Kind.INT, "a failed sync is retried with back-off, without a limit"),
    _ignored("scheduler-configs", Kind.STRINGS, _SHARDING),
    _ignored("shard-sync-period", Kind.DURATION, _SHARDING),
    _ignored("enable-node-event-trigger", Kind.BOOL, _SHARDING),
    _ignored("sharding-configmap", Kind.STRING, _SHARDING),
    _ignored("sharding-configmap-namespace", Kind.STRING, _SHARDING),
)
"""``vc-controller-manager``'s flags without a ``pyvolcano controller-manager`` option."""

WEBHOOK_MANAGER: Final[tuple[GoFlag, ...]] = (*KLOG, *COMPONENT_BASE)
"""``vc-webhook-manager``'s flags without a ``pyvolcano admission`` option."""


@dataclass(slots=True)
class Translation:
    """Arguments rewritten for the command line library, and what the rewrite found."""

    args: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    positional: list[str] = field(default_factory=list)

    def warning(self) -> str | None:
        """The one warning line: flags accepted without effect, then positional arguments."""
        parts = []
        if self.ignored:
            parts.append("accepted without effect (docs/kubernetes.md says why): "
                         + ", ".join(f"--{n}" for n in dict.fromkeys(self.ignored)))
        if self.positional:
            parts.append("ignored arguments (upstream reads none either): "
                         + " ".join(repr(a) for a in self.positional))
        return "; ".join(parts) if parts else None


def _parse_bool(flag: str, value: str) -> bool:
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise UsageError(f"--{flag}: got {value!r}; expected true or false")


def check_value(flag: str, kind: Kind, value: str) -> None:
    """Refuse a value pflag would refuse for a flag of Go type ``kind`` (one ``error:`` line)."""
    from pyvolcano.api.duration import DurationError, parse_duration_strict

    problem: str | None = None
    if kind is Kind.BOOL:
        _parse_bool(flag, value)
    elif kind in (Kind.INT, Kind.UINT):
        ok = bool(_INT_RE.fullmatch(value)) and (kind is Kind.INT or not value.startswith("-"))
        problem = None if ok else ("an integer" if kind is Kind.INT else "a non-negative integer")
    elif kind is Kind.FLOAT:
        problem = None if _FLOAT_RE.fullmatch(value) else "a number"
    elif kind is Kind.DURATION:
        try:
            parse_duration_strict(value)
        except DurationError:
            problem = "a duration such as 30s or 5m"
    elif kind is Kind.MAP:
        for item in filter(None, (p.strip() for p in value.split(","))):
            key, eq, v = item.partition("=")
            if not eq or not key or v.strip() not in _TRUE | _FALSE:
                problem = "comma-separated Name=true|false pairs"
                break
    if problem is not None:
        raise UsageError(f"--{flag}: got {value!r}; expected {problem}")


@dataclass(frozen=True, slots=True)
class _Options:
    """What the rewrite needs to know of a command's own options."""

    bools: frozenset[str]                   # long names of on/off switches ("leader-elect")
    values: frozenset[str]                  # long names of options taking a value
    negations: frozenset[str]               # "no-leader-elect"
    short: Mapping[str, str]                # "v" -> "v" (the long name of a one-letter flag)
    slices: Mapping[str, bool]              # string-slice options: True = repeated option, False = one joined

    @classmethod
    def of(cls, command: Any, slices: Mapping[str, bool]) -> _Options:
        bools: set[str] = set()
        values: set[str] = set()
        negations: set[str] = set()
        short: dict[str, str] = {}
        for param in command.params:
            if getattr(param, "param_type_name", "") != "option":
                continue
            longs = [o[2:] for o in param.opts if o.startswith("--")]
            (bools if param.is_flag else values).update(longs)
            negations.update(o[2:] for o in param.secondary_opts if o.startswith("--"))
            for o in param.opts:
                if len(o) == 2 and o[0] == "-" and longs:
                    short[o[1]] = longs[0]
        return cls(frozenset(bools), frozenset(values), frozenset(negations), short, slices)


def translate(argv: Sequence[str], command: Any, table: Iterable[GoFlag],
              slices: Mapping[str, bool] | None = None) -> Translation:
    """Rewrite pflag-style ``argv`` for ``command`` (see the module docstring); a refused flag
    or a value of the wrong Go type raises :class:`UsageError`."""
    opts = _Options.of(command, slices or {})
    flags = {f.name: f for f in table}
    out = Translation()
    joined: dict[str, list[str]] = {}
    args = list(argv)
    i = 0

    def take_value(name: str, inline: str | None) -> str:
        nonlocal i
        if inline is not None:
            return inline
        if i < len(args):
            i += 1
            return args[i - 1]
        raise UsageError(f"--{name}: flag needs an argument")

    while i < len(args):
        token = args[i]
        i += 1
        if token == "--":
            out.positional += args[i:]
            break
        if token.startswith("--") and len(token) > 2:
            raw, eq, rest = token[2:].partition("=")
            inline = rest if eq else None
        elif token.startswith("-") and len(token) > 1 and token[1] in opts.short:
            raw, rest = opts.short[token[1]], token[2:]
            inline = rest[1:] if rest.startswith("=") else (rest or None)
        elif token.startswith("-") and len(token) > 1:
            out.args.append(token)  # an unknown one-letter flag: the library names it
            continue
        else:
            out.positional.append(token)
            continue
        name = raw.replace("_", "-")
        if name in opts.negations and inline is None:
            out.args.append(f"--{name}")
        elif name in opts.bools:
            if inline is None or _parse_bool(name, inline):
                out.args.append(f"--{name}")
            elif f"no-{name}" in opts.negations:
                out.args.append(f"--no-{name}")
        elif name in opts.values:
            value = take_value(name, inline)
            if name not in opts.slices:
                out.args += [f"--{name}", value]
            elif opts.slices[name]:
                out.args += [x for part in value.split(",") if part for x in (f"--{name}", part)]
            else:
                joined.setdefault(name, []).append(value)
        elif name in flags:
            flag = flags[name]
            value = ("true" if inline is None else inline) if flag.kind is Kind.BOOL else take_value(name, inline)
            check_value(name, flag.kind, value)
            if flag.takes(value):
                continue
            if flag.effect is Effect.REFUSED:
                raise UsageError(f"--{name}={value}: {flag.reason}; expected {flag.remedy}")
            out.ignored.append(name)
        else:
            out.args.append(f"--{name}" if inline is None else f"--{name}={inline}")
    for name, values in joined.items():
        out.args += [f"--{name}", ",".join(values)]
    return out


class GoFlagsCommand(TyperCommand):
    """A command whose arguments are read the way upstream's pflag reads them."""

    go_flags: tuple[GoFlag, ...] = ()
    go_slices: Mapping[str, bool] = {}

    def go_translate(self, argv: Sequence[str]) -> list[str]:
        """The rewritten arguments; the one warning line goes to stderr (not for ``--help``)."""
        result = translate(argv, self, self.go_flags, self.go_slices)
        warning = result.warning()
        if warning and "--help" not in result.args:
            typer.echo(f"warning: {warning}", err=True)
        return result.args


def go_command(table: tuple[GoFlag, ...], slices: Mapping[str, bool] | None = None) -> type[GoFlagsCommand]:
    """A :class:`GoFlagsCommand` class for a component with upstream flags ``table``;
    ``slices`` names its string-slice options (True: one option per item, False: one joined)."""
    return type("GoFlagsCommand", (GoFlagsCommand,), {"go_flags": table, "go_slices": dict(slices or {})})


def klog_severity(value: str) -> int:
    """``--stderrthreshold``'s value (a klog severity name or number) as a ``logging`` level."""
    import logging

    levels = (logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL)
    text = value.strip().upper()
    if text in _SEVERITIES:
        return levels[_SEVERITIES.index(text)]
    if text.isdigit() and int(text) < len(levels):
        return levels[int(text)]
    raise UsageError(f"--stderrthreshold: got {value!r}; expected one of {', '.join(_SEVERITIES)} or 0 to 3")
