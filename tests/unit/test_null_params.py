"""Absent and null: for every optional field of every params class (and the attrs classes they hold),
`null` means the same as leaving the field out, except the `MaybeId` fields, where `null` means "no
entry". A value of the wrong type is -32602 naming the field. The table is generated from the
classes, so a new method or field is covered as soon as it is declared."""

from __future__ import annotations

import typing
from typing import Any, Literal

import attrs
import pytest

from sessiontree import protocol as p
from sessiontree.errors import InvalidParams

_PARAMS = {name: types.params for name, types in p.METHODS.items()}


def _attrs_in(kind: Any) -> list[type]:
    """The attrs classes a field's type names (`CompactionSettings | None` -> [CompactionSettings])."""
    return [arg for arg in (typing.get_args(kind) or (kind,)) if isinstance(arg, type) and attrs.has(arg)]


def _sample(kind: Any) -> Any:
    """A valid value for a required field of this type."""
    if typing.get_origin(kind) is Literal:
        return typing.get_args(kind)[0]
    if kind in (str, str | None):
        return "x"
    if type(None) in typing.get_args(kind):
        return None  # a required field that takes null (`replacement` of session/editContext)
    raise AssertionError(f"no sample value for a required field of type {kind}: add one")


def _required(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {p.to_camel(f.name): _sample(hints[f.name]) for f in attrs.fields(cls) if f.default is attrs.NOTHING}


def _optional_fields() -> list[tuple[str, type, str, Any]]:
    """(where, class, wire name, type) of every optional, non-MaybeId field, nested classes included."""
    found, pending, seen = [], [(method, cls) for method, cls in _PARAMS.items()], set()
    while pending:
        where, cls = pending.pop()
        if cls in seen:
            continue
        seen.add(cls)
        hints = typing.get_type_hints(cls)
        for field in attrs.fields(cls):
            kind = hints[field.name]
            pending += [(f"{where} {field.name}", nested) for nested in _attrs_in(kind)]
            if field.default is not attrs.NOTHING and kind is not p.MaybeId:
                found.append((where, cls, p.to_camel(field.name), kind))
    return sorted(found, key=lambda item: (item[0], item[2]))


FIELDS = _optional_fields()


def test_the_table_covers_the_fields_the_issue_named() -> None:
    named = {(cls.__name__, name) for _, cls, name, _ in FIELDS}
    assert {("TreeViewParams", "offset"), ("TreeViewParams", "limit"), ("ExportParams", "scope")} <= named
    assert ("CompactionSettings", "reserveTokens") in named and len(FIELDS) > 60
    assert {name for _, name, _ in MAYBE_ID} == {"leafId", "parentId", "expectedLeafId", "since", "fromId"}


@pytest.mark.parametrize(("where", "cls", "name", "kind"), FIELDS, ids=[f"{c.__name__}.{n}" for _, c, n, _ in FIELDS])
def test_null_means_absent(where: str, cls: type, name: str, kind: Any) -> None:
    params = _required(cls)
    absent = p.converter.structure(params, cls)
    assert p.converter.structure({**params, name: None}, cls) == absent


def _wrong(kind: Any) -> Any | None:
    """A value of the wrong type for a field, or None when any value is right (`Any`)."""
    if kind is Any:
        return None
    accepts_object = p.JsonObject in typing.get_args(kind) or kind == p.JsonObject or _attrs_in(kind)
    return 5 if accepts_object else {"wrong": True}


WRONG = [(cls, name, kind) for _, cls, name, kind in FIELDS if _wrong(kind) is not None]


def _holder(cls: type) -> tuple[str, dict[str, Any], str]:
    """A method whose params hold `cls`, the params around it, and the path to it (`settings.`)."""
    for method, params in _PARAMS.items():
        if params is cls:
            return method, _required(cls), ""
    for method, params in _PARAMS.items():
        hints = typing.get_type_hints(params)
        for field in attrs.fields(params):
            if cls in _attrs_in(hints[field.name]):
                return method, _required(params), p.to_camel(field.name)
    raise AssertionError(f"no method takes {cls.__name__}")


@pytest.mark.parametrize(("cls", "name", "kind"), WRONG, ids=[f"{c.__name__}.{n}" for c, n, _ in WRONG])
def test_a_wrong_type_is_invalid_params_naming_the_field(cls: type, name: str, kind: Any) -> None:
    method, params, path = _holder(cls)
    value = {**_required(cls), name: _wrong(kind)}
    with pytest.raises(InvalidParams) as raised:
        p.parse_params(method, {**params, path: value} if path else value)
    assert raised.value.data["field"] == (f"{path}.{name}" if path else name)


MAYBE_ID = [(method, p.to_camel(field.name), field.name) for method, cls in _PARAMS.items()
            for field in attrs.fields(cls) if typing.get_type_hints(cls)[field.name] is p.MaybeId]


@pytest.mark.parametrize(("method", "name", "attribute"), MAYBE_ID, ids=[f"{m} {n}" for m, n, _ in MAYBE_ID])
def test_maybe_id_fields_keep_null_as_no_entry(method: str, name: str, attribute: str) -> None:
    cls = _PARAMS[method]
    assert getattr(p.parse_params(method, {**_required(cls), name: None}), attribute) is None
    assert getattr(p.parse_params(method, _required(cls)), attribute) is p.UNSET
