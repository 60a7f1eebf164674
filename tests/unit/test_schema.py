"""The generated JSON Schema: committed copy up to date, and true of what the daemon really says.

Every recorded request's params and every recorded result in tests/transcripts is checked
against the schema of its method, results strictly (no property the schema does not list), so a
field the schema forgets, misnames or mistypes fails here and not in a client.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest

from sessiontree import protocol, schema
from support.replay import load_transcript

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "clients" / "node" / "src" / "protocol.schema.json"
TRANSCRIPTS = sorted((ROOT / "tests" / "transcripts").glob("*.jsonl"))


def test_committed_schema_is_fresh() -> None:
    assert COMMITTED.read_bytes() == schema.render(), (
        "clients/node/src/protocol.schema.json is stale: run "
        "`python -m sessiontree.schema > clients/node/src/protocol.schema.json`, "
        "then `node clients/node/scripts/generate-types.mjs` for the TypeScript types"
    )


def test_schema_lists_every_method_and_field() -> None:
    built = schema.build()
    assert set(built["methods"]) == set(protocol.METHODS)
    assert set(built["notifications"]) == set(protocol.NOTIFICATIONS)
    for name, method in protocol.METHODS.items():
        params = resolve(built, built["methods"][name]["params"])
        assert set(params["properties"]) == {protocol.to_camel(f.name) for f in attrs.fields(method.params)}
        required = {protocol.to_camel(f.name) for f in attrs.fields(method.params) if f.default is attrs.NOTHING}
        assert set(params["required"]) == required, name


# --------------------------------------------------------------------------- a validator for the subset used


def resolve(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = root["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return node


def problems(root: dict[str, Any], node: dict[str, Any], value: Any, path: str, strict: bool) -> list[str]:
    node = resolve(root, node)
    if "anyOf" in node:
        options = [problems(root, option, value, path, strict) for option in node["anyOf"]]
        return [] if any(not found for found in options) else [f"{path}: none of anyOf matches: {options}"]
    if "enum" in node:
        return [] if value in node["enum"] else [f"{path}: {value!r} not in {node['enum']}"]
    kind = node.get("type")
    checks = {
        "null": lambda v: v is None,
        "string": lambda v: isinstance(v, str),
        "boolean": lambda v: isinstance(v, bool),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "array": lambda v: isinstance(v, list),
        "object": lambda v: isinstance(v, dict),
    }
    if kind is None:
        return []
    if not checks[kind](value):
        return [f"{path}: expected {kind}, got {value!r}"]
    found: list[str] = []
    if kind == "array":
        for i, item in enumerate(value):
            found += problems(root, node["items"], item, f"{path}[{i}]", strict)
    if kind == "object" and "properties" in node:
        found += [f"{path}.{k}: missing" for k in node["required"] if k not in value]
        for key, item in value.items():
            if key in node["properties"]:
                found += problems(root, node["properties"][key], item, f"{path}.{key}", strict)
            elif strict:
                found.append(f"{path}.{key}: not in the schema")
    if kind == "object" and "additionalProperties" in node:
        for key, item in value.items():
            found += problems(root, node["additionalProperties"], item, f"{path}.{key}", strict)
    return found


def recorded_exchanges() -> list[tuple[str, str, Any, Any]]:
    """(transcript, method, params, result) of every successful session/* request recorded."""
    exchanges = []
    for path in TRANSCRIPTS:
        requests: dict[Any, dict[str, Any]] = {}
        for line in load_transcript(path):
            msg = line["msg"]
            if not isinstance(msg, dict):
                continue
            if line["dir"] == "in" and msg.get("method") in protocol.METHODS and "id" in msg:
                requests[orjson.dumps(msg["id"])] = msg
            elif line["dir"] == "out" and "result" in msg:
                request = requests.pop(orjson.dumps(msg.get("id")), None)
                if request is not None:
                    exchanges.append((path.name, request["method"], request.get("params"), msg["result"]))
    return exchanges


def test_transcripts_hold_exchanges_to_check() -> None:
    assert {method for _, method, _, _ in recorded_exchanges()} >= {"session/create", "session/tree", "session/context"}


@pytest.mark.parametrize("transcript,method,params,result", recorded_exchanges())
def test_recorded_exchange_fits_the_schema(transcript: str, method: str, params: Any, result: Any) -> None:
    built = schema.build()
    entry = built["methods"][method]
    assert problems(built, entry["params"], params, "params", strict=False) == []
    assert problems(built, entry["result"], result, "result", strict=True) == []


def test_validator_rejects_a_wrong_result() -> None:
    built = schema.build()
    tree = built["methods"]["session/tree"]["result"]
    good = {"leafId": None, "nodes": [], "warnings": []}
    assert problems(built, tree, good, "r", strict=True) == []
    assert problems(built, tree, {**good, "leafId": 5}, "r", strict=True)
    assert problems(built, tree, {"nodes": [], "warnings": []}, "r", strict=True)
    assert problems(built, tree, {**good, "extra": 1}, "r", strict=True)
    node = {"id": "a", "parentId": None, "type": "message", "timestamp": "t", "depth": 0, "childCount": 0}
    assert problems(built, tree, {**good, "nodes": [node]}, "r", strict=True) == []
    assert problems(built, tree, {**good, "nodes": [{**node, "label": None}]}, "r", strict=True)


def test_schema_names_every_error_code() -> None:
    from sessiontree.errors import ALL_ERRORS

    codes = schema.build()["errors"]
    assert {cls.name: cls.code for cls in ALL_ERRORS}.items() <= codes.items()
    assert codes["RequestCancelled"] == -32800 and codes["ServerNotInitialized"] == -32002
    assert len(set(codes.values())) == len(codes)
