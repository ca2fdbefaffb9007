"""The structural-schema validator: what the API server would reject or prune."""

from __future__ import annotations

from pyvolcano.deploy.schema import validate

SCHEMA = {
    "type": "object",
    "properties": {
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True,
                         "pattern": "^[0-9]+[KMG]?$"},
                "ratio": {"type": "number"},
                "template": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "items": {"type": "array", "items": {"type": "integer", "minimum": 0}},
            },
        },
    },
}


def test_validator_accepts_int_or_string_as_either_and_checks_the_pattern_on_strings_only() -> None:
    assert validate({"spec": {"size": 3}}, SCHEMA) == []
    assert validate({"spec": {"size": "3G"}}, SCHEMA) == []
    assert validate({"spec": {"size": "3 G"}}, SCHEMA)[0][0] == "spec.size"


def test_validator_reports_missing_required_fields_and_paths_with_indexes() -> None:
    errors = validate({"spec": {"items": [1, -1, "x"]}}, SCHEMA)
    assert errors == [
        ("spec.size", "required field is missing"),
        ("spec.items[1]", "got -1; expected at least 0"),
        ("spec.items[2]", "got string 'x'; expected integer"),
    ]


def test_validator_keeps_preserved_subtrees_and_checks_additional_properties() -> None:
    doc = {"spec": {"size": 1, "template": {"anything": [1, {"deep": True}]}, "labels": {"a": "b", "c": 1}}}
    assert validate(doc, SCHEMA) == [("spec.labels.c", "got integer 1; expected string")]


def test_validator_treats_booleans_as_neither_integers_nor_numbers() -> None:
    assert validate({"spec": {"size": True}}, SCHEMA) == [("spec.size", "got boolean; expected an integer or a string")]
    assert validate({"spec": {"size": 1, "ratio": False}}, SCHEMA)[0][0] == "spec.ratio"
    assert validate({"spec": {"size": 1, "ratio": 2}}, SCHEMA) == []


def test_validator_leaves_object_metadata_to_the_api_server() -> None:
    assert validate({"metadata": {"name": "x", "labels": {"a": "b"}}, "spec": {"size": 1}}, SCHEMA) == []


def test_validator_reports_unknown_fields_outside_preserved_subtrees() -> None:
    assert validate({"spec": {"size": 1, "sise": 2}, "extra": {}}, SCHEMA) == [
        ("spec.sise", "unknown field (the API server would drop it)"),
        ("extra", "unknown field (the API server would drop it)"),
    ]
