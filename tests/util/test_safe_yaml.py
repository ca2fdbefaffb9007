"""The bounded YAML loader every input file goes through."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from pyvolcano.util import safe_yaml
from pyvolcano.util.safe_yaml import MAX_DEPTH, InputError, load, load_all


def docs(text: str) -> list[object]:
    return [d for _, d in load_all(text, "f.yaml")]


def alias_bomb(levels: int = 9) -> str:
    """About 600 bytes whose aliases expand to 10^(levels+1) strings."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def test_timestamps_stay_strings_as_kubernetes_reads_them() -> None:
    assert docs("a: 2024-02-30\nb: 2024-01-01T00:00:00Z\nc: 2024-01-01 25:61:61\n") == [
        {"a": "2024-02-30", "b": "2024-01-01T00:00:00Z", "c": "2024-01-01 25:61:61"}]


def test_other_implicit_types_are_unchanged() -> None:
    assert docs("i: 0x10\nj: 1_000\nf: 1.5\nb: true\nn: null\ns: '2024-01-01'\n") == [
        {"i": 16, "j": 1000, "f": 1.5, "b": True, "n": None, "s": "2024-01-01"}]


def test_the_c_parser_is_kept_when_installed() -> None:
    if hasattr(yaml, "CSafeLoader"):
        assert issubclass(safe_yaml.SafeLoader, yaml.CSafeLoader)


def test_alias_bomb_fails_fast_with_a_clear_message() -> None:
    text = alias_bomb()
    assert len(text) < 700
    with pytest.raises(InputError, match=r"^bomb.yaml: line \d+, column \d+: the document expands to more than "
                                         r"1,000,000 values \(YAML aliases count once per use\)"):
        list(load_all(text, "bomb.yaml"))


def test_a_few_aliases_are_fine() -> None:
    assert docs("base: &b {cpu: '1'}\nreq: *b\nmerged: {<<: *b, memory: 1Gi}\n") == [
        {"base": {"cpu": "1"}, "req": {"cpu": "1"}, "merged": {"cpu": "1", "memory": "1Gi"}}]


@pytest.mark.parametrize("text", [
    "x: " + "{a: " * (MAX_DEPTH + 5) + "1" + "}" * (MAX_DEPTH + 5),
    "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5),
    "&a [*a]",
])
def test_nesting_deeper_than_the_bound_is_refused(text: str) -> None:
    with pytest.raises(InputError, match=f"nested more than {MAX_DEPTH} levels deep; expected at most"):
        docs(text)


def test_nesting_up_to_the_bound_loads() -> None:
    depth = MAX_DEPTH - 1
    assert docs("[" * depth + "]" * depth)


@pytest.mark.parametrize("literal", ["9" * 5000, "0x" + "f" * 5000, "-" + "1" * 200])
def test_huge_integer_literals_are_refused_with_their_position(literal: str) -> None:
    with pytest.raises(InputError, match=r"^f.yaml: line 2, column 8: an integer of \d+ characters; expected at most"):
        docs(f"a: 1\nvalue: {literal}\n")


def test_duplicate_keys_are_refused_but_merge_keys_may_be_overridden() -> None:
    with pytest.raises(InputError, match=r"line 3, column 1: found duplicate key 'kind'; expected valid YAML"):
        docs("kind: Pod\nmetadata: {name: p}\nkind: Node\n")
    assert docs("b: &b {x: 1, y: 2}\nc: {<<: *b, x: 3}\n") == [{"b": {"x": 1, "y": 2}, "c": {"x": 3, "y": 2}}]


def test_text_over_the_size_limit_is_refused_before_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(safe_yaml, "MAX_TEXT_CHARS", 100)
    with pytest.raises(InputError, match=r"^big.yaml: 101 characters of YAML; expected at most 100 per file$"):
        load("a" * 101, "big.yaml")


def test_syntax_errors_are_marked_as_such() -> None:
    with pytest.raises(InputError) as e:
        docs("key: [unclosed\n")
    assert e.value.syntax and e.value.where.startswith("line ")


def test_messages_are_one_line() -> None:
    for text in (alias_bomb(), "a: " + "9" * 300, "a: [\n\n"):
        with pytest.raises(InputError) as e:
            docs(text)
        assert "\n" not in str(e.value)


class _PyYAMLOnly(safe_yaml.SafeLoader):
    """The same loader with PyYAML's resolver callbacks and constructor for every document."""

    resolve = yaml.resolver.BaseResolver.resolve
    descend_resolver = yaml.resolver.BaseResolver.descend_resolver
    ascend_resolver = yaml.resolver.BaseResolver.ascend_resolver
    build_plain = False


def _both(text: str) -> tuple[str, str]:
    """``repr`` of what the loader and the PyYAML-only loader make of ``text`` (value or error)."""
    out = []
    for loader in (safe_yaml.SafeLoader, _PyYAMLOnly):
        try:
            out.append(repr([d for _, d in load_all(text, "f.yaml", loader=loader)]))
        except InputError as e:
            out.append(f"error: {e}")
    return out[0], out[1]


_PLAIN_TOKENS = ["yes", "No", "on", "OFF", "y", "n", "true", "False", "null", "Null", "~", "", "0x1f", "0o17", "017",
                 "0b101", "1_000", "-12", "+3", "1:20", "1.5", "1e3", "6.8523015e+5", ".inf", "-.Inf", ".NaN",
                 "2024-01-01", "2024-01-01T00:00:00Z", "1Gi", "500m", "=", "<<", "a b", "volcano", "9" * 99]


@pytest.mark.parametrize("token", _PLAIN_TOKENS)
def test_plain_scalars_resolve_as_pyyaml_resolves_them(token: str) -> None:
    text = f"a: {token}\nb: [{token}, '{token}']\n{token or 'k'}: {token}\n"
    fast, reference = _both(text)
    assert fast == reference


@pytest.mark.parametrize("text", [
    "base: &b {cpu: '1'}\nreq: *b\nmerged: {<<: *b, memory: 1Gi}\n",
    "a: !!str 1\nb: !!int '7'\nc: !!float 1\n",
    "a: !!binary aGVsbG8=\n",
    "a: !!set {x, y}\nb: !!omap [{k: 1}]\n",
    "a: !!timestamp 2024-01-01\n",
    "a: !custom x\n",
    "? [1, 2]\n: v\n",
    "? {a: 1}\n: v\n",
    "1: a\nTrue: b\n",
    "1: a\n'1': b\n",
    "a: 1\na: 2\n",
    "a: {=: 1}\n",
    "l: &l [1, 2]\nm: *l\n",
    "a: " + "9" * 101 + "\n",
    "--- 1\n--- [a]\n--- {a: b}\n---\n",
])
def test_documents_build_as_with_pyyamls_constructor(text: str) -> None:
    fast, reference = _both(text)
    assert fast == reference


def test_aliases_share_one_value_as_with_pyyamls_constructor() -> None:
    (doc,) = docs("a: &x {k: [1]}\nb: *x\nc: &y [1]\nd: *y\n")
    assert doc["a"] is doc["b"] and doc["c"] is doc["d"]


_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                     st.text(max_size=8), st.sampled_from(_PLAIN_TOKENS))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.one_of(st.text(max_size=6), st.integers(), st.booleans()), inner, max_size=4)),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(value=_values, flow=st.booleans())
def test_any_dumped_value_builds_as_with_pyyamls_constructor(value: object, flow: bool) -> None:
    text = yaml.safe_dump_all([value, {"doc": value}], default_flow_style=flow)
    fast, reference = _both(text)
    assert fast == reference


def test_plain_documents_are_built_without_pyyamls_constructor() -> None:
    calls: list[object] = []

    class Spy(safe_yaml.SafeLoader):
        def construct_object(self, node: yaml.Node, deep: bool = False) -> object:
            calls.append(node)
            return super().construct_object(node, deep=deep)

    text = "kind: Pod\nmetadata: {name: p, labels: {a: b}}\nspec: {containers: [{name: c, ports: [{hostPort: 80}]}]}\n"
    assert next(d for _, d in load_all(text, "f.yaml", loader=Spy))["spec"]["containers"][0]["ports"] == [
        {"hostPort": 80}]
    assert calls == []
    list(load_all("a: &b {x: 1}\nc: {<<: *b}\n", "f.yaml", loader=Spy))
    assert calls


@pytest.mark.parametrize("size", [20, 23, 24, 25, 26, 40])
@pytest.mark.parametrize("shape", ["map", "list", "alias"])
def test_the_value_bound_refuses_the_same_documents_as_pyyamls_path(monkeypatch: pytest.MonkeyPatch, size: int,
                                                                      shape: str) -> None:
    monkeypatch.setattr(safe_yaml, "MAX_NODES", 50)
    if shape == "map":
        text = "{" + ", ".join(f"k{i}: v" for i in range(size)) + "}\n"
    elif shape == "list":
        text = "[" + ", ".join(["[x]"] * size) + "]\n"
    else:
        text = "a: &a [x, y, z]\nb: [" + ", ".join(["*a"] * (size // 3)) + "]\n"
    fast, reference = _both(text)
    assert fast == reference


@pytest.mark.parametrize("depth", [MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1])
@pytest.mark.parametrize("inner", ["", "x", "{}", "{a: 1}"])
def test_the_depth_bound_refuses_the_same_documents_as_pyyamls_path(depth: int, inner: str) -> None:
    fast, reference = _both("[" * depth + inner + "]" * depth)
    assert fast == reference
    fast, reference = _both("a: &x " + "[" * (depth - 2) + "]" * (depth - 2) + "\nb: [*x]\n")
    assert fast == reference
