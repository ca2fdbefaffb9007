"""Safe YAML input: the one place where a user's YAML text becomes Python values.

Every YAML file pyvolcano reads (cluster snapshots, workloads, trace node files, scheduler
configurations, ``validate``'s files) goes through :func:`load_all` or :func:`load`. They keep
libyaml's C parser when it is installed (the pure-Python parser is about ten times slower) and
bound what a file can make the rest of the program do:

* **Timestamps stay strings**, as Kubernetes reads them: the YAML 1.1 timestamp resolver is
  removed, so ``2024-02-30`` is the string it looks like and an RFC 3339 field such as
  ``metadata.creationTimestamp`` is parsed (and reported) by the field that reads it.
* **Text size**: more than :data:`MAX_TEXT_CHARS` characters is refused before parsing.
* **Alias expansion**: a document whose values, counted with every alias expanded, number more
  than :data:`MAX_NODES` is refused. An alias "bomb" of a few hundred bytes can stand for 10^9
  values; the parser shares them, but every later copy or walk of the object expands them.
* **Nesting depth**: more than :data:`MAX_DEPTH` levels is refused (the constructor and every
  later walk of a value recurse; Kubernetes objects nest about 15 levels).
* **Duplicate keys**: a mapping with the same key twice is refused, as Kubernetes' decoder
  refuses it (PyYAML would silently keep the last value).
* **Integer literals** longer than :data:`MAX_INT_CHARS` characters are refused: no field takes
  such a number, and converting (or later printing) one costs time or fails. The range of a
  value that passes is the business of the field that reads it.

Every refusal is an :class:`InputError` whose message is one line with the source, the line and
column, the problem and what was expected. The checks walk each document's node graph once,
before any Python value is built, and stop at the first bound crossed, so a hostile file fails
in well under a second. (A document that the plain walk below builds is measured by that walk
instead, which stops past :data:`MAX_DEPTH`; the separate check runs when the walk met an
alias or counted more than :data:`MAX_NODES` values, so exactly the same documents are refused
with the same message.)

Speed (a 50,000-pod snapshot is two million YAML values): libyaml composes each document's
node graph in C but calls back into Python for every node. The loader has no path resolvers,
so those callbacks reduce to a tag that depends on the scalar's text alone, which is memoised
per loader, and to no-ops, which are bound to C callables. Values are then built by one plain
recursive walk (:meth:`SafeLoader.construct_plain`) for documents made only of maps, lists,
strings, numbers, booleans and nulls with no key repeated; any other document (merge keys,
other tags such as ``!!binary`` or ``!!set``, a duplicate, a refused value) is built again by
PyYAML's own constructor, so its values and its refusal are exactly PyYAML's.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Iterator
from itertools import chain
from typing import Any, ClassVar, Final

import yaml
from yaml.nodes import MappingNode, ScalarNode

__all__ = [
    "MAX_DEPTH",
    "MAX_INT_CHARS",
    "MAX_NODES",
    "MAX_TEXT_CHARS",
    "InputError",
    "SafeLoader",
    "load",
    "load_all",
    "read_text",
]

MAX_TEXT_CHARS: Final = 64 * 1024 * 1024
MAX_NODES: Final = 1_000_000
MAX_DEPTH: Final = 100
MAX_INT_CHARS: Final = 100

_TIMESTAMP_TAG: Final = "tag:yaml.org,2002:timestamp"
_STR_TAG: Final = "tag:yaml.org,2002:str"
_MAP_TAG: Final = "tag:yaml.org,2002:map"
_SEQ_TAG: Final = "tag:yaml.org,2002:seq"
# Scalar tags whose values the plain walk builds through the loader's own constructors.
_PLAIN_SCALAR_TAGS: Final = frozenset({"tag:yaml.org,2002:null", "tag:yaml.org,2002:bool",
                                       "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"})
_BaseLoader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class InputError(ValueError):
    """Text that may not be loaded; ``str(err)`` is ``"{source}: {where}: {problem}; expected {expected}"``.

    ``syntax`` is true when the text is not YAML at all (rather than YAML past a bound).
    """

    def __init__(self, source: str, where: str, problem: str, expected: str, *, syntax: bool = False) -> None:
        self.syntax = syntax
        self.source = source
        self.where = where
        self.problem = problem
        self.expected = expected
        head = f"{source}: {where}" if where else source
        super().__init__(f"{head}: {problem}; expected {expected}")


class _Refused(yaml.MarkedYAMLError):
    """A bound crossed inside the parser; turned into :class:`InputError` with the source name."""

    def __init__(self, mark: Any, problem: str, expected: str) -> None:
        super().__init__(problem=problem, problem_mark=mark)
        self.expected = expected


class _NotPlain(Exception):
    """A document the plain walk does not build; PyYAML's constructor builds it instead."""


class _PlainWalk:
    """What :meth:`SafeLoader.construct_plain` built and counted in one document."""

    __slots__ = ("built", "shared", "values")

    def __init__(self) -> None:
        self.built: dict[yaml.Node, Any] = {}
        self.shared = False  # an alias was met: the expanded count is larger than ``values``
        self.values = 1  # the root, then every key, value and item


class SafeLoader(_BaseLoader):
    """libyaml's safe loader without the timestamp resolver, refusing duplicate keys and documents past the bounds."""

    yaml_implicit_resolvers: ClassVar[dict[Any, list[tuple[str, Any]]]] = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
        for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
    }

    # Without path resolvers (``yaml_path_resolvers`` is empty: none is ever added) descending
    # into and ascending from a node change nothing; the composer calls both for every node.
    descend_resolver = staticmethod(operator.is_)  # (parent, index) -> ignored
    ascend_resolver = staticmethod(tuple)  # () -> ignored
    # False builds every document with PyYAML's constructor (the reference of the plain walk).
    build_plain: ClassVar[bool] = True

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._plain_tags: dict[str, str] = {}

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        # BaseResolver.resolve without path resolvers: a plain scalar's tag depends on its
        # text only; a quoted scalar is a string; a collection has its kind's default tag.
        if kind is ScalarNode:
            if not implicit[0]:
                return _STR_TAG
            tag = self._plain_tags.get(value)
            if tag is None:
                tag = self._plain_tags[value] = super().resolve(kind, value, implicit)
            return tag
        return _MAP_TAG if kind is MappingNode else _SEQ_TAG

    def construct_document(self, node: yaml.Node) -> Any:
        if self.build_plain:
            walk = _PlainWalk()
            try:
                value = self.construct_plain(node, walk, 1)
            except (_NotPlain, yaml.YAMLError, ValueError, OverflowError):
                pass
            else:
                if walk.shared or walk.values > MAX_NODES:
                    _check_bounds(node)  # an alias counts once per use; the walk built it once
                return value
        _check_bounds(node)
        return super().construct_document(node)

    def construct_plain(self, node: yaml.Node, walk: _PlainWalk, depth: int) -> Any:
        """The value of a plain ``node`` at ``depth`` (the root is 1), or :class:`_NotPlain`.

        ``walk`` holds the collections built so far, so that aliases share one value as with
        PyYAML's constructor, and counts the values. Past :data:`MAX_DEPTH` the walk stops
        (the bounds check then words the refusal).
        """
        if type(node) is ScalarNode:
            tag = node.tag
            if tag == _STR_TAG:
                return node.value
            if tag in _PLAIN_SCALAR_TAGS:
                return self.yaml_constructors[tag](self, node)
            raise _NotPlain
        built = walk.built
        value = built.get(node)
        if value is not None:
            walk.shared = True
            return value
        if depth >= MAX_DEPTH:
            raise _NotPlain  # its values are one level deeper still
        depth += 1
        if type(node) is MappingNode:
            if node.tag != _MAP_TAG:
                raise _NotPlain
            mapping: dict[Any, Any] = {}
            built[node] = mapping
            pairs = node.value
            walk.values += 2 * len(pairs)
            for key_node, value_node in pairs:
                if type(key_node) is not ScalarNode:
                    raise _NotPlain
                key_tag = key_node.tag
                if key_tag == _STR_TAG:
                    key = key_node.value
                elif key_tag in _PLAIN_SCALAR_TAGS:
                    key = self.yaml_constructors[key_tag](self, key_node)
                else:
                    raise _NotPlain
                mapping[key] = self.construct_plain(value_node, walk, depth)
            if len(mapping) != len(pairs):
                raise _NotPlain  # a repeated key: PyYAML's constructor names it
            return mapping
        if node.tag != _SEQ_TAG:
            raise _NotPlain
        items: list[Any] = []
        built[node] = items
        walk.values += len(node.value)
        items.extend([self.construct_plain(child, walk, depth) for child in node.value])
        return items

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        pairs = node.value
        count = len(pairs)
        result: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        # Fewer keys than pairs means a repeated key, or a ``<<`` merge key, which the base class
        # deletes from ``pairs`` in place. Keys merged in may be overridden; explicit keys not.
        if len(result) < count or len(pairs) != count:
            seen: set[Any] = set()
            for key_node, _ in pairs:
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    raise yaml.constructor.ConstructorError(None, None, f"found duplicate key {key!r}",
                                                            key_node.start_mark)
                seen.add(key)
        return result

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        text = node.value
        if isinstance(text, str) and len(text) > MAX_INT_CHARS:
            raise _Refused(node.start_mark, f"an integer of {len(text)} characters",
                           f"at most {MAX_INT_CHARS} (no field takes a larger number)")
        value: int = super().construct_yaml_int(node)
        return value


SafeLoader.add_constructor("tag:yaml.org,2002:int", SafeLoader.construct_yaml_int)


def _check_bounds(root: yaml.Node) -> None:
    # Breadth-first and iterative on purpose: the point is to refuse depths the recursive
    # constructor cannot take. Shared (aliased) nodes are counted once per reference, so the
    # count is the expanded size; it is checked while a level is built, so a bomb stops early.
    level: list[yaml.Node] = [root]
    depth = 0
    count = 0
    while level:
        depth += 1
        if depth > MAX_DEPTH:
            raise _Refused(level[0].start_mark, f"values nested more than {MAX_DEPTH} levels deep",
                           f"at most {MAX_DEPTH} levels")
        count += len(level)
        below: list[Any] = []
        for node in level:
            value = node.value
            if type(value) is list:
                if isinstance(node, yaml.MappingNode):
                    below.extend(chain.from_iterable(value))
                else:
                    below.extend(value)
                if count + len(below) > MAX_NODES:
                    raise _Refused(node.start_mark, f"the document expands to more than {MAX_NODES:,} values"
                                   " (YAML aliases count once per use)", "a smaller document")
        level = below


def _input_error(err: yaml.YAMLError, source: str) -> InputError:
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    if isinstance(err, _Refused):
        return InputError(source, where, err.problem or "refused", err.expected)
    parts = [getattr(err, "context", None), getattr(err, "problem", None)]
    problem = ", ".join(p for p in parts if p) or (str(err).splitlines() or ["invalid YAML"])[0]
    return InputError(source, where, problem, "valid YAML", syntax=True)


def _check_size(text: str, source: str) -> None:
    if len(text) > MAX_TEXT_CHARS:
        raise InputError(source, "", f"{len(text):,} characters of YAML",
                         f"at most {MAX_TEXT_CHARS:,} per file")


def load_all(text: str, source: str, *, loader: type[SafeLoader] = SafeLoader) -> Iterator[tuple[int, Any]]:
    """``(index, value)`` for each document of ``text``; raises :class:`InputError` on the first refusal."""
    _check_size(text, source)
    ld = loader(text)
    index = 0
    try:
        while ld.check_data():
            yield index, ld.get_data()
            index += 1
    except yaml.YAMLError as e:
        raise _input_error(e, source) from None
    except (ValueError, OverflowError) as e:
        # libyaml-independent constructor failures (e.g. a float literal out of range).
        raise InputError(source, f"document {index}", f"cannot read a value ({e})", "valid YAML") from None
    finally:
        ld.dispose()


def load(text: str, source: str, *, loader: type[SafeLoader] = SafeLoader) -> Any:
    """The single document of ``text`` (``None`` for empty text); raises :class:`InputError`."""
    _check_size(text, source)
    ld = loader(text)
    try:
        return ld.get_single_data()
    except yaml.YAMLError as e:
        raise _input_error(e, source) from None
    except (ValueError, OverflowError) as e:
        raise InputError(source, "", f"cannot read a value ({e})", "valid YAML") from None
    finally:
        ld.dispose()


def read_text(path: str | os.PathLike[str]) -> str:
    """A file's UTF-8 text, refusing one over :data:`MAX_TEXT_CHARS` without reading it whole.

    ``OSError`` and ``UnicodeDecodeError`` pass through for the caller to word in its own terms.
    """
    with open(path, encoding="utf-8") as f:
        text = f.read(MAX_TEXT_CHARS + 1)
    _check_size(text, os.fspath(path))
    return text
