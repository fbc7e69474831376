"""The client cannot drift from the control API: its operation table and methods are compared with the OpenAPI
document generated from the server's operations (`Sources/Control/openapi.json`; `scripts/embed-assets --openapi`
regenerates it). Every operation has a method with its method, path, parameters and body; no method without one."""
from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from gattemu import Client
from gattemu.operations import OPERATIONS, of_device

DOCUMENT = Path(__file__).resolve().parents[3] / "Sources" / "Control" / "openapi.json"


def document_operations() -> dict[str, dict]:
    document = json.loads(DOCUMENT.read_text())
    found = {}
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            found[operation["operationId"]] = {"method": method.upper(), "path": path, **operation}
    return found


def client_methods() -> dict[str, list]:
    """Operation id -> the public methods of `Client` marked with it."""
    found: dict[str, list] = {}
    for name, member in inspect.getmembers(Client, callable):
        if not name.startswith("_") and hasattr(member, "operation"):
            found.setdefault(member.operation.id, []).append(member)
    return found


def test_the_document_is_the_servers():
    assert DOCUMENT.exists(), f"{DOCUMENT} missing"
    assert len(document_operations()) >= 20


def test_every_operation_of_the_document_is_in_the_table_and_nothing_else():
    assert sorted(OPERATIONS) == sorted(document_operations())


@pytest.mark.parametrize("operation_id", sorted(document_operations()))
def test_the_table_row_matches_the_document(operation_id):
    documented = document_operations()[operation_id]
    row = OPERATIONS[operation_id]
    assert (row.method, row.path) == (documented["method"], documented["path"])
    parameters = {(p["name"], p["in"], bool(p.get("required", False))) for p in documented.get("parameters", [])}
    assert {(p.name, p.location, p.required) for p in row.parameters} == parameters
    body = documented.get("requestBody")
    assert row.body == (None if body is None else bool(body.get("required", False)))


def test_each_devices_operations_are_the_process_ones_under_its_path():
    """A rig's device's operations (`…OfDevice`) are sent by the same methods, on a client made `for_device`: each
    is its own-path twin under /v1/devices/{device}, as the server derives it."""
    twins = [i for i in document_operations() if i.endswith("OfDevice")]
    assert twins, "the document has each device's operations"
    for twin in twins:
        assert OPERATIONS[twin] == of_device(OPERATIONS[twin.removesuffix("OfDevice")])


@pytest.mark.parametrize("operation_id", sorted(i for i in document_operations() if not i.endswith("OfDevice")))
def test_every_operation_has_a_method_taking_its_parameters(operation_id):
    methods = client_methods().get(operation_id, [])
    assert methods, f"Client has no method for {operation_id}"
    # At most one blocking method, and an async twin only for the event stream.
    assert len([m for m in methods if not inspect.isasyncgenfunction(m)]) == 1
    for method in methods:
        signature = inspect.signature(method)
        for parameter in OPERATIONS[operation_id].parameters:
            assert parameter.python in signature.parameters, f"{method.__name__} lacks {parameter.python}"
            if parameter.required:
                assert signature.parameters[parameter.python].default is inspect.Parameter.empty
        takes = [n for n in signature.parameters if n != "self"]
        path_query_header = {p.python for p in OPERATIONS[operation_id].parameters}
        if OPERATIONS[operation_id].body is None and operation_id != "streamEvents":
            assert set(takes) <= path_query_header, f"{method.__name__} takes {takes} but {operation_id} has no body"
        if OPERATIONS[operation_id].body:
            assert set(takes) - path_query_header, f"{method.__name__} takes nothing to send as {operation_id}'s body"


def test_no_public_method_without_an_operation():
    for name, member in inspect.getmembers(Client, callable):
        if name.startswith("_"):
            continue
        assert hasattr(member, "operation") or getattr(member, "helper", False), \
            f"Client.{name} is neither an operation of the document nor a helper"

