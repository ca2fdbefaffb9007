"""HyperNode auto-discovery: the discovery ConfigMap and the ``label`` source.

Upstream (``pkg/controllers/hypernode/config``, ``api/types.go``, ``discovery/label``) reads the
key ``volcano-controller.conf`` of the ConfigMap ``<release>-controller-configmap`` (release
``volcano`` unless ``HELM_RELEASE_NAME`` says otherwise) in the controller's namespace
(``KUBE_POD_NAMESPACE``, else ``volcano-system``). Its YAML lists discovery sources::

    networkTopologyDiscovery:
      - source: label
        enabled: true
        config:
          networkTopologyTypes:
            topologyA3:                        # at most 20 characters
              - nodeLabel: volcano.sh/block    # tier 2
              - nodeLabel: volcano.sh/rack     # tier 1
              - nodeLabel: kubernetes.io/hostname

A source is used when its first entry has ``enabled: true``. Each topology type lists node
label keys from the highest tier down to the node itself; the last entry (the node's own
label) is dropped, the one before it is tier 1, and so on upwards. A type whose name is longer
than 20 characters or whose list repeats a key is ignored, as upstream.

:func:`discover_from_labels` builds the HyperNodes the ``label`` source wants: for every Node
(by name) and every type (by name), walking its tiers upwards while the Node has the tier's
label, one HyperNode per label key and value, with ``exactMatch`` members (Nodes at tier 1,
the HyperNodes of the tier below above it, sorted by name), ``spec.tierName`` = the label key,
and the labels ``volcano.sh/network-topology-source: label`` and ``<key>: <value>``. A label
key and value already mapped to a discovered HyperNode keep its name: the first (by name)
HyperNode that has both labels and whose name starts with ``hypernode-<type>-tier<N>``; a new
one is named ``hypernode-<type>-tier<N>-<5 random characters>`` (the type lower-cased, every
character other than letters, digits, ``.`` and ``-`` turned into ``-``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pyvolcano.api.names import NETWORK_TOPOLOGY_SOURCE_KEY, TOPOLOGY_API_VERSION
from pyvolcano.controllers._common import labels_of
from pyvolcano.util.safe_yaml import InputError, load

__all__ = [
    "CONFIG_KEY",
    "DEFAULT_NAMESPACE",
    "DEFAULT_RELEASE_NAME",
    "LABEL_SOURCE",
    "DiscoveryConfig",
    "DiscoveryError",
    "configmap_name",
    "discover_from_labels",
    "enabled_config",
    "label_tiers",
    "parse_discovery_config",
    "topology_label_keys",
]

logger = logging.getLogger(__name__)

CONFIG_KEY: Final = "volcano-controller.conf"
DEFAULT_NAMESPACE: Final = "volcano-system"
DEFAULT_RELEASE_NAME: Final = "volcano"
LABEL_SOURCE: Final = "label"

_MAX_TYPE_NAME: Final = 20
_NAME_ATTEMPTS: Final = 20
_SUFFIX_LENGTH: Final = 5


class DiscoveryError(Exception):
    """The discovery configuration cannot be read, or no unique HyperNode name was found."""


def configmap_name(release_name: str = DEFAULT_RELEASE_NAME) -> str:
    return f"{release_name}-controller-configmap"


@dataclass(frozen=True, slots=True)
class DiscoveryConfig:
    """One ``networkTopologyDiscovery`` entry (``interval`` and ``credentials`` are not used)."""

    source: str
    enabled: bool
    config: dict[str, Any] = field(default_factory=dict)


def parse_discovery_config(configmap: Mapping[str, Any] | None) -> list[DiscoveryConfig]:
    """The entries of the discovery ConfigMap; none when it does not exist.

    Raises :class:`DiscoveryError` when the key is missing or its text is not the expected YAML.
    """
    if configmap is None:
        return []
    data = configmap.get("data")
    text = data.get(CONFIG_KEY) if isinstance(data, Mapping) else None
    if not isinstance(text, str):
        raise DiscoveryError(f"config key not found in ConfigMap: {CONFIG_KEY}")
    try:
        doc = load(text, CONFIG_KEY)
    except InputError as e:
        raise DiscoveryError(f"failed to parse config: {e}") from None
    if doc is None:
        return []
    if not isinstance(doc, Mapping):
        raise DiscoveryError(f"failed to parse config: expected a mapping, got {type(doc).__name__}")
    entries = doc.get("networkTopologyDiscovery") or []
    if not isinstance(entries, list):
        raise DiscoveryError("failed to parse config: networkTopologyDiscovery: expected a list")
    out = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise DiscoveryError(f"failed to parse config: networkTopologyDiscovery[{i}]: expected a mapping")
        cfg = entry.get("config")
        out.append(DiscoveryConfig(str(entry.get("source") or ""), entry.get("enabled") is True,
                                   dict(cfg) if isinstance(cfg, Mapping) else {}))
    return out


def enabled_config(configs: list[DiscoveryConfig], source: str) -> DiscoveryConfig | None:
    """``GetDiscoveryConfig``: the first enabled entry of ``source``."""
    for c in configs:
        if c.source == source and c.enabled:
            return c
    return None


def label_tiers(config: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """``parseCfg``: each topology type's label keys from tier 1 upwards."""
    types = config.get("networkTopologyTypes")
    if not isinstance(types, Mapping):
        return {}
    out: dict[str, tuple[str, ...]] = {}
    for type_name, entries in types.items():
        name = str(type_name)
        if len(name) > _MAX_TYPE_NAME:
            logger.error("The length of topologyTypeName exceeds %d. topologyTypeName is %s", _MAX_TYPE_NAME, name)
            continue
        keys = [str(e.get("nodeLabel") or "") for e in entries or [] if isinstance(e, Mapping)]
        if len(set(keys)) != len(keys):
            logger.error("The configMap format is incorrect, labels are %s: there are duplicate labels", keys)
            continue
        out[name] = tuple(reversed(keys[:-1]))
    return out


def topology_label_keys(tiers: Mapping[str, tuple[str, ...]]) -> frozenset[str]:
    return frozenset(k for keys in tiers.values() for k in keys)


def _clean(type_name: str) -> str:
    return "".join(c.lower() if c.isascii() and c.isalpha() else c if c.isdigit() or c in ".-" else "-"
                   for c in type_name)


@dataclass(slots=True)
class _Info:
    tier: int
    tier_name: str
    labels: dict[str, str]
    members: set[str] = field(default_factory=set)


def discover_from_labels(
    tiers: Mapping[str, tuple[str, ...]],
    node_labels: Mapping[str, Mapping[str, str]],
    hypernodes: Mapping[str, Mapping[str, Any]],
    suffix: Callable[[int], str],
) -> dict[str, dict[str, Any]]:
    """The HyperNodes the ``label`` source wants, by name (see the module docstring).

    ``hypernodes`` are the existing HyperNodes by name; ``suffix(n)`` draws ``n`` random name
    characters. Raises :class:`DiscoveryError` when no unused name turns up.
    """
    infos: dict[str, _Info] = {}
    named: dict[tuple[str, str], str] = {}
    for node in sorted(node_labels):
        labels = node_labels[node]
        for type_name in sorted(tiers):
            member = node
            for i, key in enumerate(tiers[type_name]):
                value = labels.get(key)
                if value is None:
                    break
                tier = i + 1
                name = named.get((key, value))
                if name is None:
                    name = _hypernode_name(type_name, key, value, tier, hypernodes, infos, suffix)
                info = infos.get(name)
                if info is None:
                    info = infos[name] = _Info(tier, key, {key: value})
                info.members.add(member)
                named[(key, value)] = name
                member = name
    return {name: _manifest(name, info) for name, info in infos.items()}


def _hypernode_name(type_name: str, key: str, value: str, tier: int, hypernodes: Mapping[str, Mapping[str, Any]],
                    infos: Mapping[str, _Info], suffix: Callable[[int], str]) -> str:
    prefix = f"hypernode-{_clean(type_name)}-tier{tier}"
    for name in sorted(hypernodes):
        labels = labels_of(hypernodes[name])
        if labels.get(key) == value and labels.get(NETWORK_TOPOLOGY_SOURCE_KEY) == LABEL_SOURCE \
                and name.startswith(prefix):
            return name
    for _ in range(_NAME_ATTEMPTS):
        name = f"{prefix}-{suffix(_SUFFIX_LENGTH)}"
        if name not in hypernodes and name not in infos:
            return name
    raise DiscoveryError(f"unable to get unique hyperNodeName after {_NAME_ATTEMPTS} attempts")


def _manifest(name: str, info: _Info) -> dict[str, Any]:
    member_type = "Node" if info.tier == 1 else "HyperNode"
    return {
        "apiVersion": TOPOLOGY_API_VERSION,
        "kind": "HyperNode",
        "metadata": {"name": name, "labels": {NETWORK_TOPOLOGY_SOURCE_KEY: LABEL_SOURCE, **info.labels}},
        "spec": {
            "tier": info.tier,
            "tierName": info.tier_name,
            "members": [{"type": member_type, "selector": {"exactMatch": {"name": m}}} for m in sorted(info.members)],
        },
    }
