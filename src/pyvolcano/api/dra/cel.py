"""CEL device selectors of dynamic resource allocation (``k8s.io/dynamic-resource-allocation/cel``).

A DeviceClass or a request selects devices with CEL expressions over one variable,
``device``: ``device.driver`` (string), ``device.attributes["<domain>"].<name>`` (the
attribute's int, bool, string or version value) and ``device.capacity["<domain>"].<name>`` (a
quantity). An attribute name without a domain belongs to the driver's domain. Expressions are
compiled and evaluated by CEL's reference C++ runtime (the ``cel-expr-python`` package), with
type checking, as kube-scheduler's cel-go does; this module only declares the environment:

* the ``device`` variable, a ``map(string, dyn)``;
* Kubernetes' quantity library (``quantity``, ``isQuantity``, ``sign``, ``isGreaterThan``,
  ``isLessThan``, ``compareTo``, ``add``, ``sub``, ``asInteger``, ``asApproximateFloat``,
  ``isInteger``) and semver library (``semver``, ``isSemver``, ``major``, ``minor``,
  ``patch``, ``isGreaterThan``, ``isLessThan``, ``compareTo``), as functions over two
  message types, ``kubernetes.Quantity`` and ``kubernetes.Semver``, declared at run time in a
  private protobuf descriptor pool (the type names are upstream's);
* CEL's ``strings`` and ``bindings`` (``cel.bind``) extensions.

An attribute of type version is a ``kubernetes.Semver``; a capacity is a ``kubernetes.Quantity``
whose value is kept exact (a fraction), so that ``==`` between two quantities is equality of
amounts, as upstream's ``Quantity.Equal``.

Upstream looks up an unknown domain of ``device.attributes`` / ``device.capacity`` as an empty
map (so ``has(device.attributes["x"].model)`` is false rather than an error). A map passed to
the C++ runtime cannot have a default, so each device's maps also hold an empty map for every
string literal of the expression (:func:`_string_literals`); a domain computed at run time
(``device.attributes[device.driver + "x"]``) that no device has is an error here, not an empty
map (docs/differences.md).

:class:`SelectorCache` compiles each distinct expression once. A compile error is a
:class:`CelError` with upstream's wording, never an exception escaping to the scheduler; so is
an evaluation that fails or does not give a bool.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from typing import Any, Final

from pyvolcano.api.dra.types import Device, DeviceAttribute
from pyvolcano.api.quantity import QuantityError, parse_quantity

__all__ = ["CelError", "CompiledSelector", "SelectorCache", "parse_semver", "qualified_name_parts"]

_MAX_INT64: Final = 2**63 - 1


class CelError(Exception):
    """A selector that does not compile, or whose evaluation failed (the message says which)."""


def qualified_name_parts(name: str, default_domain: str) -> tuple[str, str]:
    """``parseQualifiedName``: ``(domain, id)``, the driver's domain when the name has none."""
    domain, sep, ident = name.partition("/")
    if not sep:
        return default_domain, name
    return domain, ident


# ----------------------------------------------------------------------------- semantic versions

_SEMVER_RE: Final = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$", re.ASCII)


def parse_semver(text: str, normalize: bool = False) -> tuple[int, int, int, str]:
    """``(major, minor, patch, prerelease)`` of a semantic version 2.0.0 string.

    ``normalize`` (upstream's ``semver(s, true)``): a leading ``v``, missing minor or patch
    parts and leading zeros are accepted. Raises ValueError.
    """
    if normalize:
        text = text[1:] if text.startswith("v") else text
        core, plus, build = text.partition("+")
        core, dash, pre = core.partition("-")
        parts = core.split(".")
        if len(parts) > 3 or not all(p.isdigit() for p in parts):
            raise ValueError(f"invalid semantic version {text!r}")
        parts += ["0"] * (3 - len(parts))
        text = ".".join(str(int(p)) for p in parts) + (dash + pre) + (plus + build)
    m = _SEMVER_RE.match(text)
    if m is None:
        raise ValueError(f"invalid semantic version {text!r}")
    major, minor, patch = (int(m.group(i)) for i in (1, 2, 3))
    if max(major, minor, patch) > _MAX_INT64:
        raise ValueError(f"invalid semantic version {text!r}")
    return major, minor, patch, m.group(4) or ""


def _compare_pre(a: str, b: str) -> int:
    if a == b:
        return 0
    if not a:
        return 1  # a release is greater than any of its prereleases
    if not b:
        return -1
    for x, y in zip(a.split("."), b.split(".")):
        if x == y:
            continue
        xn, yn = x.isdigit(), y.isdigit()
        if xn and yn:
            return -1 if int(x) < int(y) else 1
        if xn != yn:
            return -1 if xn else 1  # numeric identifiers sort before alphanumeric ones
        return -1 if x < y else 1
    na, nb = len(a.split(".")), len(b.split("."))
    return (na > nb) - (na < nb)


def _compare_semver(a: Any, b: Any) -> int:
    for x, y in ((a.major, b.major), (a.minor, b.minor), (a.patch, b.patch)):
        if x != y:
            return -1 if x < y else 1
    return _compare_pre(a.pre, b.pre)


# ----------------------------------------------------------------------------- the environment


def _string_literals(expression: str) -> set[str]:
    """The string literals of a CEL expression (their text, escapes left as written)."""
    out: set[str] = set()
    for m in _LITERAL_RE.finditer(expression):
        body = next((g for g in m.groups() if g is not None), None)
        if body is not None and "\\" not in body:
            out.add(body)
    return out


_LITERAL_RE: Final = re.compile(
    r'[rR]?(?:"""(?P<t1>.*?)"""|\'\'\'(?P<t2>.*?)\'\'\'|"(?P<body>(?:[^"\\\n]|\\.)*)"|\'(?P<b2>(?:[^\'\\\n]|\\.)*)\')',
    re.DOTALL)


class _Environment:
    """The compiled CEL environment and the two message classes (built once per cache)."""

    def __init__(self) -> None:
        from cel_expr_python import cel
        from cel_expr_python.ext import ext_bindings, ext_strings
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

        fdp = descriptor_pb2.FileDescriptorProto(name="pyvolcano/dra_cel.proto", package="kubernetes",
                                                 syntax="proto3")
        field_proto = descriptor_pb2.FieldDescriptorProto
        string_t, int64_t = field_proto.TYPE_STRING, field_proto.TYPE_INT64
        optional = field_proto.LABEL_OPTIONAL
        quantity = fdp.message_type.add(name="Quantity")
        quantity.field.add(name="amount", number=1, type=string_t, label=optional)
        semver = fdp.message_type.add(name="Semver")
        for i, name in enumerate(("major", "minor", "patch"), start=1):
            semver.field.add(name=name, number=i, type=int64_t, label=optional)
        semver.field.add(name="pre", number=4, type=string_t, label=optional)
        pool = descriptor_pool.DescriptorPool()
        pool.Add(fdp)
        self.quantity_class: Callable[..., Any] = message_factory.GetMessageClass(
            pool.FindMessageTypeByName("kubernetes.Quantity"))
        self.semver_class: Callable[..., Any] = message_factory.GetMessageClass(
            pool.FindMessageTypeByName("kubernetes.Semver"))
        self.cel = cel
        t = cel.Type
        q, s = t("kubernetes.Quantity"), t("kubernetes.Semver")
        self.bool_type, self.dyn_type, self.error_type = t.BOOL, t.DYN, t.ERROR

        def fn(name: str, *overloads: tuple[str, Any, list[Any], bool, Callable[..., Any] | None]) -> Any:
            return cel.FunctionDecl(name, [
                cel.Overload(oid, ret, params, is_member=member, impl=impl) if impl is not None
                else cel.Overload(oid, ret, params, is_member=member)
                for oid, ret, params, member, impl in overloads])

        functions = [
            fn("quantity", ("string_to_quantity", q, [t.STRING], False, self._quantity)),
            fn("isQuantity", ("is_quantity_string", t.BOOL, [t.STRING], False, _is_quantity)),
            fn("sign", ("quantity_sign", t.INT, [q], True, lambda a: _sign(self._amount(a)))),
            fn("isInteger", ("quantity_is_integer", t.BOOL, [q], True,
                             lambda a: self._amount(a).denominator == 1)),
            fn("asInteger", ("quantity_as_integer", t.INT, [q], True, self._as_integer)),
            fn("asApproximateFloat", ("quantity_as_float", t.DOUBLE, [q], True,
                                      lambda a: float(self._amount(a)))),
            fn("add", ("quantity_add", q, [q, q], True, lambda a, b: self._q(self._amount(a) + self._amount(b))),
               ("quantity_add_int", q, [q, t.INT], True, lambda a, b: self._q(self._amount(a) + b))),
            fn("sub", ("quantity_sub", q, [q, q], True, lambda a, b: self._q(self._amount(a) - self._amount(b))),
               ("quantity_sub_int", q, [q, t.INT], True, lambda a, b: self._q(self._amount(a) - b))),
            fn("semver", ("string_to_semver", s, [t.STRING], False, lambda text: self._semver(text, False)),
               ("string_bool_to_semver", s, [t.STRING, t.BOOL], False, self._semver)),
            fn("isSemver", ("is_semver_string", t.BOOL, [t.STRING], False, lambda text: _is_semver(text, False)),
               ("is_semver_string_bool", t.BOOL, [t.STRING, t.BOOL], False, _is_semver)),
            fn("major", ("semver_major", t.INT, [s], True, lambda v: v.major)),
            fn("minor", ("semver_minor", t.INT, [s], True, lambda v: v.minor)),
            fn("patch", ("semver_patch", t.INT, [s], True, lambda v: v.patch)),
            # The C++ runtime registers an implementation per kind of argument, and both types
            # are messages: each of these names has one implementation, which dispatches.
            fn("isGreaterThan",
               ("quantity_is_greater_than", t.BOOL, [q, q], True, lambda a, b: self._compare(a, b) > 0),
               ("semver_is_greater_than", t.BOOL, [s, s], True, None)),
            fn("isLessThan",
               ("quantity_is_less_than", t.BOOL, [q, q], True, lambda a, b: self._compare(a, b) < 0),
               ("semver_is_less_than", t.BOOL, [s, s], True, None)),
            fn("compareTo", ("quantity_compare_to", t.INT, [q, q], True, self._compare),
               ("semver_compare_to", t.INT, [s, s], True, None)),
        ]
        self.env = cel.NewEnv(descriptor_pool=pool, variables={"device": t.Map(t.STRING, t.DYN)},
                              functions=functions,
                              extensions=[ext_strings.ExtStrings(), ext_bindings.ExtBindings()])

    # quantities are kept exact: the amount as a Fraction's text
    def _q(self, amount: Fraction) -> Any:
        return self.quantity_class(amount=str(amount))

    def _compare(self, a: Any, b: Any) -> int:
        if a.DESCRIPTOR.name == "Semver":
            return _compare_semver(a, b)
        return _sign(self._amount(a) - self._amount(b))

    @staticmethod
    def _amount(q: Any) -> Fraction:
        return Fraction(q.amount)

    def _quantity(self, text: str) -> Any:
        try:
            return self._q(parse_quantity(text))
        except QuantityError as e:
            raise ValueError(f"quantity({text!r}): {e}") from None

    def _as_integer(self, q: Any) -> int:
        amount = self._amount(q)
        if amount.denominator != 1 or not -(2**63) <= amount.numerator <= _MAX_INT64:
            raise ValueError("cannot convert value to integer")
        return amount.numerator

    def _semver(self, text: str, normalize: bool) -> Any:
        major, minor, patch, pre = parse_semver(text, normalize)
        return self.semver_class(major=major, minor=minor, patch=patch, pre=pre)

    def value_of(self, attr: DeviceAttribute) -> Any:
        if attr.kind == "version":
            return self._semver(str(attr.value), False)
        return attr.value


def _sign(x: Fraction | int) -> int:
    return (x > 0) - (x < 0)


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def _is_semver(text: str, normalize: bool) -> bool:
    try:
        parse_semver(text, normalize)
    except ValueError:
        return False
    return True


_STATUS_PREFIX: Final = re.compile(r"^[A-Z_]+: ")


def _error_text(value: Any) -> str:
    text = str(value.value())
    return _STATUS_PREFIX.sub("", text, count=1)


class CompiledSelector:
    """One compiled expression; :meth:`matches` evaluates it on a device."""

    __slots__ = ("_env", "_literals", "_program", "expression")

    def __init__(self, env: _Environment, expression: str, program: Any):
        self._env = env
        self._program = program
        self._literals = tuple(sorted(_string_literals(expression)))
        self.expression = expression

    def matches(self, driver: str, device: Device) -> bool:
        """Whether the selector accepts ``device`` of ``driver``; raises :class:`CelError` when
        the evaluation fails or does not give a bool."""
        env = self._env
        attributes: dict[str, dict[str, Any]] = {lit: {} for lit in self._literals}
        for name, attr in device.attributes.items():
            domain, ident = qualified_name_parts(name, driver)
            try:
                attributes.setdefault(domain, {})[ident] = env.value_of(attr)
            except ValueError as e:
                raise CelError(f"attribute {name}: {e}") from None
        capacity: dict[str, dict[str, Any]] = {lit: {} for lit in self._literals}
        for name, amount in device.capacity.items():
            domain, ident = qualified_name_parts(name, driver)
            capacity.setdefault(domain, {})[ident] = env._q(amount)
        data = {"device": {"driver": driver, "attributes": attributes, "capacity": capacity}}
        result = self._program.eval(data=data)
        kind = result.type()
        if kind == env.bool_type:
            return bool(result.value())
        if kind == env.error_type:
            raise CelError(_error_text(result))
        raise CelError(f"CEL result of type {kind} could not be converted to bool")


class SelectorCache:
    """Compiled selectors by expression text (each compiled once; a failed compile is kept too)."""

    def __init__(self, limit: int = 4096):
        self._env: _Environment | None = None
        self._compiled: dict[str, CompiledSelector | CelError] = {}
        self._limit = limit

    def _environment(self) -> _Environment:
        if self._env is None:
            self._env = _Environment()
        return self._env

    def get(self, expression: str) -> CompiledSelector:
        """The compiled selector; raises :class:`CelError` ("compilation failed: ...")."""
        got = self._compiled.get(expression)
        if got is None:
            got = self._compile(expression)
            if len(self._compiled) >= self._limit:
                self._compiled.clear()
            self._compiled[expression] = got
        if isinstance(got, CelError):
            raise got
        return got

    def _compile(self, expression: str) -> CompiledSelector | CelError:
        env = self._environment()
        try:
            program = env.env.compile(expression)
        except RuntimeError as e:
            text = _STATUS_PREFIX.sub("", str(e), count=1).removesuffix("[INVALID_ARGUMENT]").strip()
            return CelError("compilation failed: " + " ".join(text.split()))
        rtype = program.return_type()
        if rtype != env.bool_type and rtype != env.dyn_type:
            # cel-go names types in lower case ("not int"); the C++ runtime's names are upper case.
            return CelError(f"must evaluate to bool or the unknown type, not {str(rtype).lower()}")
        return CompiledSelector(env, expression, program)

    def check(self, expressions: Iterable[str]) -> list[str]:
        """The compile errors of ``expressions`` (an empty list when all compile)."""
        out = []
        for expr in expressions:
            try:
                self.get(expr)
            except CelError as e:
                out.append(str(e))
        return out


def attribute_values(device: Device, driver: str) -> Mapping[str, Mapping[str, Any]]:
    """The device's attributes grouped by domain, as plain values (for messages and tests)."""
    out: dict[str, dict[str, Any]] = {}
    for name, attr in device.attributes.items():
        domain, ident = qualified_name_parts(name, driver)
        out.setdefault(domain, {})[ident] = attr.value
    return out
