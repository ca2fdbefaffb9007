"""The structured allocator (``k8s.io/dynamic-resource-allocation/structured``, ``allocator.go``).

:class:`Allocator` finds, for one node, devices for every request of a pod's unallocated
claims, as kube-scheduler's DynamicResources Filter asks it to. It is built once per pod
(claims, classes, the devices already allocated) and asked node by node.

The search is upstream's: claims in order, requests in order, devices one at a time; each
candidate device must not be in use (allocated to another claim, or picked for this pod
already; an ``adminAccess`` request only avoids its own claim's picks), must pass its class's
selectors and the request's (CEL, :mod:`pyvolcano.api.dra.cel`), must not carry a
``NoSchedule`` / ``NoExecute`` taint the request does not tolerate, and must keep every
``matchAttribute`` constraint of its claim satisfied; a dead end backtracks to the previous
pick. The first complete solution wins (no scoring). A request is ``exactly`` (``ExactCount``
with ``count``, or ``All`` matching devices of the node, which needs every pool complete) or a
``firstAvailable`` list of sub-requests tried in order. A claim may hold at most 32 devices.

Devices come from the node's pools (:func:`gather_pools`): the slices published for the node
(``spec.nodeName``), for all nodes, or for nodes matching ``spec.nodeSelector``, grouped by
driver and pool; only the newest generation of a pool counts; a pool missing slices is
*incomplete* (its devices are not used, and an ``All`` request fails), one with two devices of
the same name is *invalid*.

Errors: :class:`AllocationError` means the claims themselves are wrong (a selector that does
not compile or fails on a device, a missing class): the scheduler gives up on the pod rather
than trying other nodes. ``allocate`` returns None when the claims do not fit on the node.

Determinism: pools are visited in (driver, pool) order and slices by name, where upstream
visits Go maps in random order (docs/differences.md).

Left out (docs/differences.md): partitionable devices (devices that consume counters), consumable
capacity, binding conditions and per-device node selection (such devices are never picked).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pyvolcano.api.dra.cel import CelError, SelectorCache
from pyvolcano.api.dra.types import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    ALLOCATION_RESULTS_MAX_SIZE,
    AllocationResult,
    Device,
    DeviceAttribute,
    DeviceClass,
    DeviceRequestResult,
    DeviceSubRequest,
    ResourceClaim,
    ResourceSlice,
)
from pyvolcano.api.matching import SelectorError, compile_node_selector_term
from pyvolcano.api.matching.taints import toleration_tolerates_taint

__all__ = ["AllocationError", "Allocator", "DeviceID", "Pool", "gather_pools", "node_selector_matches_node"]

DeviceID = tuple[str, str, str]
"""(driver, pool, device)."""

_TAINT_EFFECTS: Final = ("NoSchedule", "NoExecute")


class AllocationError(Exception):
    """Claims that cannot be allocated anywhere as written (upstream: Allocate's fatal error)."""


class NodeAllocationError(AllocationError):
    """A failure of this node only (``ErrFailedAllocationOnNode``): invalid pools were met."""


# ----------------------------------------------------------------------------- pools


def node_selector_matches_node(selector: Mapping[str, Any] | None, node_name: str,
                               node_labels: Mapping[str, str]) -> bool:
    """A ``v1.NodeSelector`` (terms ORed); an unparsable one raises AllocationError."""
    if selector is None:
        return False
    terms = selector.get("nodeSelectorTerms") or []
    for i, term in enumerate(terms):
        try:
            compiled = compile_node_selector_term(term, f"nodeSelectorTerms[{i}]")
        except SelectorError as e:
            raise AllocationError(f"failed to parse node selector: {e}") from None
        if compiled is not None and compiled.matches(node_name, node_labels):
            return True
    return False


@dataclass(slots=True)
class Pool:
    driver: str
    pool: str
    slices: list[ResourceSlice] = field(default_factory=list)
    incomplete: bool = False
    invalid: bool = False

    @property
    def pool_id(self) -> str:
        return f"{self.driver}/{self.pool}"


def gather_pools(slices: Iterable[ResourceSlice], node_name: str, node_labels: Mapping[str, str]) -> list[Pool]:
    """``GatherPools``: the pools of the slices that reach ``node_name``, in (driver, pool) order."""
    pools: dict[tuple[str, str], Pool] = {}
    for s in slices:
        if s.per_device_node_selection:
            continue  # per-device node selection belongs to partitionable devices (left out)
        if s.node_name:
            if s.node_name != node_name:
                continue
        elif not s.all_nodes and not node_selector_matches_node(s.node_selector, node_name, node_labels):
            continue
        key = (s.driver, s.pool)
        pool = pools.get(key)
        if pool is None:
            pools[key] = Pool(s.driver, s.pool, [s])
            continue
        generation = pool.slices[0].pool_generation
        if s.pool_generation < generation:
            continue  # out of date
        if s.pool_generation > generation:
            pool.slices = []
        pool.slices.append(s)
    out = []
    for key in sorted(pools):
        pool = pools[key]
        pool.slices.sort(key=lambda s: s.name)
        pool.incomplete = len(pool.slices) != pool.slices[0].resource_slice_count
        names: set[str] = set()
        for s in pool.slices:
            for d in s.devices:
                if d.name in names:
                    pool.invalid = True
                names.add(d.name)
        out.append(pool)
    return out


# ----------------------------------------------------------------------------- the search


@dataclass(slots=True)
class _RequestData:
    request: DeviceSubRequest
    parent: str  # the name of the request holding this sub-request, "" for an exact request
    device_class: DeviceClass
    num_devices: int = 0
    all_devices: list[tuple[DeviceID, Device, ResourceSlice]] = field(default_factory=list)
    selected_sub_request: int = 0

    @property
    def name(self) -> str:
        return f"{self.parent}/{self.request.name}" if self.parent else self.request.name


@dataclass(slots=True)
class _Picked:
    request: str  # the request's or sub-request's name
    parent: str
    device_id: DeviceID
    device: Device
    slice: ResourceSlice
    admin_access: bool | None
    tolerations: tuple[Mapping[str, Any], ...]

    @property
    def request_name(self) -> str:
        return f"{self.parent}/{self.request}" if self.parent else self.request


class _MaxSizeExceeded(Exception):
    """Too many devices for one claim on this path (upstream ``errAllocationResultMaxSizeExceeded``)."""


class _MatchAttribute:
    __slots__ = ("attribute", "name", "num_devices", "requests")

    def __init__(self, requests: Sequence[str], name: str):
        self.requests = frozenset(requests)
        self.name = name
        self.attribute: DeviceAttribute | None = None
        self.num_devices = 0

    def _applies(self, request: str, sub_request: str) -> bool:
        if not self.requests:
            return True
        if not sub_request:
            return request in self.requests
        return request in self.requests or f"{request}/{sub_request}" in self.requests

    def add(self, request: str, sub_request: str, device: Device, device_id: DeviceID) -> bool:
        if not self._applies(request, sub_request):
            return True
        attribute = _lookup_attribute(device, device_id, self.name)
        if attribute is None:
            return False
        if self.num_devices == 0:
            self.attribute = attribute
            self.num_devices = 1
            return True
        assert self.attribute is not None
        # Semantic versions are in their minimal form: equal strings are equal versions.
        if attribute.kind != self.attribute.kind or attribute.value != self.attribute.value or (
                type(attribute.value) is not type(self.attribute.value)):
            return False
        self.num_devices += 1
        return True

    def remove(self, request: str, sub_request: str) -> None:
        if self._applies(request, sub_request):
            self.num_devices -= 1


def _lookup_attribute(device: Device, device_id: DeviceID, name: str) -> DeviceAttribute | None:
    attr = device.attributes.get(name)
    if attr is not None:
        return attr
    domain, sep, ident = name.partition("/")
    if not sep or domain != device_id[0]:
        return None
    return device.attributes.get(ident)


def _taint_prevents(device: Device, tolerations: Sequence[Mapping[str, Any]]) -> bool:
    for taint in device.taints:
        if taint.effect in _TAINT_EFFECTS and not any(
                toleration_tolerates_taint(t, taint.as_mapping()) for t in tolerations):
            return True
    return False


MatchMemo = dict[tuple[str, int], bool]
"""Selector verdicts by (expression, ``id`` of the device), valid while the slices holding the
devices are unchanged (the cache's DRA state owns one and clears it)."""


class Allocator:
    """Allocation of one pod's unallocated claims, node by node (see the module docstring)."""

    def __init__(self, claims: Sequence[ResourceClaim], classes: Mapping[str, DeviceClass],
                 allocated: Callable[[DeviceID], bool], selectors: SelectorCache, memo: MatchMemo | None = None):
        self.claims = list(claims)
        self.classes = classes
        self.allocated = allocated
        self.selectors = selectors
        self.memo: MatchMemo = memo if memo is not None else {}
        self.num_allocate_one = 0

    # ------------------------------------------------------------------ entry point
    def allocate(self, pools: list[Pool]) -> list[AllocationResult] | None:
        """One allocation result per claim, in order; None when they do not fit these pools.

        Raises :class:`AllocationError` for claims that are wrong whatever the node, and
        :class:`NodeAllocationError` when they do not fit and an invalid pool was met.
        """
        self._pools = pools
        self._request_data: dict[tuple[int, int, int], _RequestData] = {}
        self._constraints: list[list[_MatchAttribute]] = []
        self._picking: dict[DeviceID, set[int]] = {}
        self._results: list[list[_Picked]] = [[] for _ in self.claims]
        self._matches: dict[tuple[DeviceID, tuple[int, int, int]], bool] = {}
        for ci, claim in enumerate(self.claims):
            min_devices = 0
            for ri, request in enumerate(claim.requests):
                if request.first_available:
                    fewest = None
                    for si, sub in enumerate(request.first_available):
                        data = self._validate(ci, (ci, ri, si), sub, request.name)
                        self._request_data[(ci, ri, si)] = data
                        fewest = data.num_devices if fewest is None else min(fewest, data.num_devices)
                    min_devices += fewest or 0
                else:
                    assert request.exactly is not None
                    data = self._validate(ci, (ci, ri, 0), request.exactly, "")
                    self._request_data[(ci, ri, 0)] = data
                    min_devices += data.num_devices
            if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(f"claim {claim.key}: number of requested devices {min_devices} exceeds the "
                                      f"claim limit of {ALLOCATION_RESULTS_MAX_SIZE}")
            constraints = []
            for i, c in enumerate(claim.constraints):
                if not c.match_attribute:
                    raise AllocationError(f"claim {claim.key}, constraint #{i}: empty constraint "
                                          "(unsupported constraint type?)")
                constraints.append(_MatchAttribute(c.requests, c.match_attribute))
            self._constraints.append(constraints)
        try:
            done = self._allocate_one(0, 0, 0, 0, False)
        except _MaxSizeExceeded:
            done = False
        if not done:
            if any(p.invalid for p in pools):
                raise NodeAllocationError("invalid resource pools were encountered")
            return None
        return [self._result(ci, claim) for ci, claim in enumerate(self.claims)]

    # ------------------------------------------------------------------ requests
    def _validate(self, ci: int, key: tuple[int, int, int], request: DeviceSubRequest, parent: str) -> _RequestData:
        claim = self.claims[ci]
        full = f"{parent}/{request.name}" if parent else request.name
        if not request.device_class_name:
            raise AllocationError(f"claim {claim.key}, request {full}: missing device class name "
                                  "(unsupported request type?)")
        cls = self.classes.get(request.device_class_name)
        if cls is None:
            raise AllocationError(f"claim {claim.key}, request {full}: could not retrieve device class "
                                  f"{request.device_class_name}")
        data = _RequestData(request, parent, cls)
        if request.allocation_mode == ALLOCATION_MODE_EXACT_COUNT:
            data.num_devices = request.count
        elif request.allocation_mode == ALLOCATION_MODE_ALL:
            for pool in self._pools:
                if pool.incomplete:
                    raise AllocationError(
                        f"claim {claim.key}, request {full}: asks for all devices, but resource pool "
                        f"{pool.pool_id} is currently being updated")
                if pool.invalid:
                    raise AllocationError(
                        f"claim {claim.key}, request {full}: asks for all devices, but resource pool "
                        f"{pool.pool_id} is currently invalid")
                for s in pool.slices:
                    for device in s.devices:
                        device_id = (s.driver, s.pool, device.name)
                        if self._selectable(key, data, device_id, device):
                            data.all_devices.append((device_id, device, s))
            data.num_devices = len(data.all_devices)
        else:
            raise AllocationError(f"claim {claim.key}, request {full}: unsupported count mode "
                                  f"{request.allocation_mode}")
        return data

    # ------------------------------------------------------------------ the recursion
    def _allocate_one(self, ci: int, ri: int, si: int, di: int, in_sub_request: bool) -> bool:
        self.num_allocate_one += 1
        if ci >= len(self.claims):
            return True
        claim = self.claims[ci]
        if ri >= len(claim.requests):
            try:
                return self._allocate_one(ci + 1, 0, 0, 0, False)
            except _MaxSizeExceeded:
                return False
        data = self._request_data[(ci, ri, si)]
        if not in_sub_request and data.parent:
            all_exceeded = True
            sub = 0
            while (ci, ri, sub) in self._request_data:
                try:
                    ok = self._allocate_one(ci, ri, sub, di, True)
                except _MaxSizeExceeded:
                    sub += 1
                    continue
                all_exceeded = False
                if ok:
                    self._request_data[(ci, ri, 0)].selected_sub_request = sub
                    return True
                sub += 1
            if all_exceeded:
                raise _MaxSizeExceeded
            return False
        request = data.request
        every = request.allocation_mode == ALLOCATION_MODE_ALL
        if every and not data.all_devices:
            return False
        if di >= data.num_devices:
            return self._allocate_one(ci, ri + 1, 0, 0, False)
        if len(self._results[ci]) + data.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE:
            raise _MaxSizeExceeded
        key = (ci, ri, si)
        if every:
            device_id, device, s = data.all_devices[di]
            undo = self._pick(ci, data, device_id, device, s, must=True)
            if undo is None:
                return False
            try:
                done = self._allocate_one(ci, ri, si, di + 1, in_sub_request)
            except BaseException:
                undo()
                raise
            if not done:
                undo()
            return done
        admin = bool(request.admin_access)
        for pool in self._pools:
            if pool.incomplete or pool.invalid:
                continue
            for s in pool.slices:
                for device in s.devices:
                    device_id = (pool.driver, pool.pool, device.name)
                    if admin:
                        if ci in self._picking.get(device_id, ()):
                            continue
                    elif self._in_use(device_id):
                        continue
                    if not self._selectable(key, data, device_id, device):
                        continue
                    undo = self._pick(ci, data, device_id, device, s, must=False)
                    if undo is None:
                        continue
                    try:
                        done = self._allocate_one(ci, ri, si, di + 1, in_sub_request)
                    except BaseException:
                        undo()
                        raise
                    if done:
                        return True
                    undo()
        return False

    def _in_use(self, device_id: DeviceID) -> bool:
        return self.allocated(device_id) or bool(self._picking.get(device_id))

    def _selectable(self, key: tuple[int, int, int], data: _RequestData, device_id: DeviceID,
                    device: Device) -> bool:
        if device.consumes_counters or device.binding_conditions:
            return False  # partitionable devices and binding conditions are left out
        mk = (device_id, key)
        got = self._matches.get(mk)
        if got is not None:
            return got
        ok = (self._selectors_match(device_id, device, data.device_class.selectors, data.device_class.name, None)
              and self._selectors_match(device_id, device, data.request.selectors, "", self.claims[key[0]]))
        self._matches[mk] = ok
        return ok

    def _selectors_match(self, device_id: DeviceID, device: Device, selectors: Sequence[str], class_name: str,
                         claim: ResourceClaim | None) -> bool:
        owner = f"class {class_name}" if claim is None else f"claim {claim.key}"
        for i, expression in enumerate(selectors):
            mk = (expression, id(device))
            got = self.memo.get(mk)
            if got is None:
                try:
                    selector = self.selectors.get(expression)
                except CelError as e:
                    raise AllocationError(f"{owner}: selector #{i}: CEL compile error: {e}") from None
                try:
                    got = selector.matches(device_id[0], device)
                except CelError as e:
                    raise AllocationError(f"{owner}: selector #{i} on device {'/'.join(device_id)}: "
                                          f"CEL runtime error: {e}") from None
                self.memo[mk] = got
            if not got:
                return False
        return True

    def _pick(self, ci: int, data: _RequestData, device_id: DeviceID, device: Device, s: ResourceSlice,
              *, must: bool) -> Callable[[], None] | None:
        """``allocateDevice``: the undo of a pick, or None when the device cannot be picked."""
        request = data.request
        claim = self.claims[ci]
        if request.admin_access:
            if ci in self._picking.get(device_id, ()):
                return None
        elif self._in_use(device_id):
            return None
        if device.consumes_counters:
            return None
        base, sub = (data.parent, request.name) if data.parent else (request.name, "")
        if _taint_prevents(device, request.tolerations):
            return None
        constraints = self._constraints[ci]
        for i, c in enumerate(constraints):
            if not c.add(base, sub, device, device_id):
                if must:
                    raise AllocationError(f"claim {claim.key}, request {request.name}: cannot add device "
                                          f"{'/'.join(device_id)} because a claim constraint would not be satisfied")
                for e in range(i):
                    constraints[e].remove(base, sub)
                return None
        self._picking.setdefault(device_id, set()).add(ci)
        results = self._results[ci]
        results.append(_Picked(request.name, data.parent, device_id, device, s,
                               True if request.admin_access else None, request.tolerations))
        size = len(results) - 1

        def undo() -> None:
            for c in constraints:
                c.remove(base, sub)
            self._picking[device_id].discard(ci)
            del results[size:]

        return undo

    # ------------------------------------------------------------------ results
    def _result(self, ci: int, claim: ResourceClaim) -> AllocationResult:
        picked = self._results[ci]
        results = tuple(DeviceRequestResult(p.request_name, p.device_id[0], p.device_id[1], p.device_id[2],
                                            p.admin_access, p.tolerations) for p in picked)
        config: list[dict[str, Any]] = []
        class_ranges: dict[str, tuple[int, int]] = {}
        for ri in range(len(claim.requests)):
            data = self._request_data[(ci, ri, 0)]
            if data.parent:
                data = self._request_data[(ci, ri, data.selected_sub_request)]
            cls = data.device_class
            if cls.name in class_ranges:
                start, end = class_ranges[cls.name]
                for i in range(start, end):
                    config[i]["requests"].append(data.name)
                continue
            start = len(config)
            for entry in cls.config:
                config.append({"source": "FromClass", "requests": [data.name], **_configuration(entry)})
            class_ranges[cls.name] = (start, len(config))
        for entry in claim.config:
            wanted = list(entry.get("requests") or [])
            if not wanted:
                config.append({"source": "FromClaim", **_configuration(entry)})
                continue
            for ri, request in enumerate(claim.requests):
                if request.name in wanted:
                    config.append({"source": "FromClaim", "requests": wanted, **_configuration(entry)})
                    continue
                data = self._request_data[(ci, ri, 0)]
                if not data.parent:
                    continue
                chosen = request.first_available[data.selected_sub_request]
                if f"{request.name}/{chosen.name}" in wanted:
                    config.append({"source": "FromClaim", "requests": wanted, **_configuration(entry)})
        for entry in config:
            if len(entry.get("requests") or ()) == len(claim.requests):
                entry.pop("requests", None)
        return AllocationResult(results, tuple(config), _node_selector(picked))


def _configuration(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The DeviceConfiguration part of a config entry (``opaque``), without its ``requests``."""
    return {k: v for k, v in entry.items() if k != "requests"}


def _node_selector(picked: Sequence[_Picked]) -> dict[str, Any] | None:
    """``createNodeSelector``: where the allocated devices are reachable (None: every node)."""
    fields: list[dict[str, Any]] = []
    expressions: list[dict[str, Any]] = []
    for p in picked:
        s = p.slice
        if s.node_name:
            return {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [s.node_name]}]}]}
        terms = (s.node_selector or {}).get("nodeSelectorTerms") or []
        if len(terms) == 1:
            for req in terms[0].get("matchFields") or []:
                if not any(_same_requirement(req, have) for have in fields):
                    fields.append(dict(req))
            for req in terms[0].get("matchExpressions") or []:
                if not any(_same_requirement(req, have) for have in expressions):
                    expressions.append(dict(req))
    if not fields and not expressions:
        return None
    term: dict[str, Any] = {}
    if expressions:
        term["matchExpressions"] = expressions
    if fields:
        term["matchFields"] = fields
    return {"nodeSelectorTerms": [term]}


def _same_requirement(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return (a.get("key") == b.get("key") and a.get("operator") == b.get("operator")
            and set(a.get("values") or ()) == set(b.get("values") or ()))
