"""The scheduler configuration (``volcano-scheduler.conf``) as immutable values.

Mirrors ``pkg/scheduler/conf/scheduler_conf.go`` of volcano-sh/volcano: a configuration is an
ordered list of action names, an ordered list of *tiers* of plugin options, per-action
``configurations`` and a free-form ``metrics`` map.

Design and invariants
---------------------
* Every value is a frozen, slotted dataclass; every mapping field is a read-only
  ``MappingProxyType`` (the *contents* of argument values are kept exactly as YAML decoded them and
  are not deep-frozen: nested lists/maps inside ``arguments`` are the caller's to leave alone).
* A :class:`PluginOption` always carries **all** 25 enable flags of :data:`ENABLE_FLAGS` as real
  booleans. Upstream keeps them as ``*bool`` and defaults the missing ones when a file is loaded;
  here that defaulting happens once, in the loader (or :meth:`PluginOption.create`), so that code
  asking ``option.enabled("enableJobOrder")`` never has to think about "unset".
* Flag names keep upstream's spelling, including the inconsistent ``enable…``/``enabled…``
  prefixes, because they are the file format.
* This module does no I/O and no YAML parsing; see :mod:`pyvolcano.conf.loader`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

__all__ = [
    "ENABLE_FLAGS",
    "FLAG_DEFAULTS",
    "ActionConfiguration",
    "PluginOption",
    "SchedulerConfiguration",
    "Tier",
    "apply_flag_defaults",
]

#: The 25 per-plugin option keys, in the order of upstream's ``PluginOption`` struct.
ENABLE_FLAGS: Final[tuple[str, ...]] = (
    "enableJobOrder",
    "enableHierarchy",
    "enableJobReady",
    "enableJobPipelined",
    "enableTaskOrder",
    "enablePreemptable",
    "enableReclaimable",
    "enablePreemptive",
    "enableQueueOrder",
    "enabledClusterOrder",
    "enablePredicate",
    "enableBestNode",
    "enableNodeOrder",
    "enableTargetJob",
    "enableReservedNodes",
    "enableJobEnqueued",
    "enabledVictim",
    "enableJobStarving",
    "enabledOverused",
    "enabledAllocatable",
    "enabledHyperNodeOrder",
    "enabledSubJobReady",
    "enabledSubJobPipelined",
    "enabledSubJobOrder",
    "enabledHyperNodeGradient",
)

# Upstream ``ApplyPluginConfDefaults`` (pkg/scheduler/plugins/defaults.go, read at commit ed72c7c8)
# sets every nil flag to true *except* two that it never touches:
#   * ``enableHierarchy`` (EnabledHierarchy): not in the list, so a missing value stays nil = false;
#   * ``enabledClusterOrder`` (EnabledClusterOrder): likewise not in the list, so it is effectively
#     off unless written out as ``true``.
# No other flag is exempt.
_NOT_DEFAULTED: Final[frozenset[str]] = frozenset({"enableHierarchy", "enabledClusterOrder"})

#: The value a flag takes when a configuration file leaves it out (or writes ``null``).
FLAG_DEFAULTS: Final[Mapping[str, bool]] = MappingProxyType(
    {flag: flag not in _NOT_DEFAULTED for flag in ENABLE_FLAGS}
)

_EMPTY: Final[Mapping[str, Any]] = MappingProxyType({})


def apply_flag_defaults(given: Mapping[str, bool | None]) -> dict[str, bool]:
    """Return all of :data:`ENABLE_FLAGS` with upstream's file defaulting applied.

    A flag that is absent from ``given`` or maps to ``None`` takes :data:`FLAG_DEFAULTS`.
    Raises ``ValueError`` for a key that is not a known flag or a value that is not a bool.
    """
    unknown = sorted(set(given) - set(ENABLE_FLAGS))
    if unknown:
        raise ValueError(f"unknown plugin option flag(s) {unknown}; expected names from ENABLE_FLAGS")
    out: dict[str, bool] = {}
    for flag in ENABLE_FLAGS:
        value = given.get(flag)
        if value is None:
            out[flag] = FLAG_DEFAULTS[flag]
        elif isinstance(value, bool):
            out[flag] = value
        else:
            raise ValueError(f"flag {flag}: got {value!r} ({type(value).__name__}); expected a bool")
    return out


@dataclass(frozen=True, slots=True)
class PluginOption:
    """One plugin entry of a tier: its name, its 25 enable flags and its raw arguments.

    Construct through the loader, or :meth:`create` when building tiers by hand. The direct
    constructor insists on a complete ``flags`` map (all of :data:`ENABLE_FLAGS`, all bools), so
    that a hand-built option can never silently mean "unset".
    """

    name: str
    flags: Mapping[str, bool]
    arguments: Mapping[str, Any]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"plugin name: got {self.name!r}; expected a non-empty string")
        missing = [f for f in ENABLE_FLAGS if f not in self.flags]
        extra = sorted(set(self.flags) - set(ENABLE_FLAGS))
        if missing or extra:
            raise ValueError(
                f"plugin {self.name}: flags must hold exactly ENABLE_FLAGS "
                f"(missing {missing}, unknown {extra}); use PluginOption.create() for defaulting"
            )
        bad = [f for f in ENABLE_FLAGS if not isinstance(self.flags[f], bool)]
        if bad:
            raise ValueError(f"plugin {self.name}: flags {bad} are not bools; expected true or false")
        object.__setattr__(self, "flags", MappingProxyType({f: self.flags[f] for f in ENABLE_FLAGS}))
        object.__setattr__(self, "arguments", MappingProxyType(dict(self.arguments)))

    @classmethod
    def create(
        cls, name: str, *, arguments: Mapping[str, Any] | None = None, **flags: bool | None
    ) -> PluginOption:
        """Build an option the way a config file would: unset flags take :data:`FLAG_DEFAULTS`.

        ``PluginOption.create("gang", enablePreemptable=False)`` equals loading
        ``{name: gang, enablePreemptable: false}``.
        """
        return cls(name=name, flags=apply_flag_defaults(flags), arguments=arguments or {})

    def __repr__(self) -> str:
        # Only the flags that differ from the file defaults, to keep logs and test diffs readable.
        changed = {f: v for f, v in self.flags.items() if v != FLAG_DEFAULTS[f]}
        arguments = dict(self.arguments)
        return f"PluginOption(name={self.name!r}, non_default_flags={changed!r}, arguments={arguments!r})"

    def enabled(self, flag: str) -> bool:
        """Whether ``flag`` (upstream spelling, e.g. ``"enableJobOrder"``) is on for this plugin.

        An unknown flag name is a programming error and raises ``ValueError``.
        """
        try:
            return self.flags[flag]
        except KeyError:
            raise ValueError(f"unknown plugin option flag {flag!r}; expected one of ENABLE_FLAGS") from None


@dataclass(frozen=True, slots=True)
class Tier:
    """An ordered group of plugins; tiers are consulted in order by the session dispatchers."""

    plugins: tuple[PluginOption, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "plugins", tuple(self.plugins))


@dataclass(frozen=True, slots=True)
class ActionConfiguration:
    """An entry of ``configurations:``: the arguments of one action."""

    name: str
    arguments: Mapping[str, Any]

    def __post_init__(self) -> None:
        object.__setattr__(self, "arguments", MappingProxyType(dict(self.arguments)))


@dataclass(frozen=True, slots=True)
class SchedulerConfiguration:
    """A whole scheduler configuration.

    ``actions`` are run in order each session; ``tiers`` are in priority order; ``metrics`` is
    kept as decoded (upstream treats it as an opaque string map). ``warnings`` are the checked
    loader's one-line warnings about arguments accepted without effect; they take no part in
    equality.
    """

    actions: tuple[str, ...]
    tiers: tuple[Tier, ...]
    configurations: tuple[ActionConfiguration, ...] = ()
    metrics: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "actions", tuple(self.actions))
        object.__setattr__(self, "tiers", tuple(self.tiers))
        object.__setattr__(self, "configurations", tuple(self.configurations))
        object.__setattr__(self, "metrics", MappingProxyType(dict(self.metrics)))
        object.__setattr__(self, "warnings", tuple(self.warnings))

    def action_arguments(self, action: str) -> Mapping[str, Any]:
        """The ``arguments`` configured for ``action``, or an empty mapping.

        Like upstream ``GetArgOfActionFromConf``, the first matching entry wins (the loader
        rejects duplicates, so this only matters for hand-built configurations).
        """
        for conf in self.configurations:
            if conf.name == action:
                return conf.arguments
        return _EMPTY

    def plugin_names(self) -> tuple[str, ...]:
        """Names of the configured plugins in tier order, each name once (first occurrence)."""
        seen: dict[str, None] = {}
        for tier in self.tiers:
            for option in tier.plugins:
                seen.setdefault(option.name, None)
        return tuple(seen)
