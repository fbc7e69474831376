"""The control API's operations as the client sends them: one row per operation of the OpenAPI document
(`Sources/Control/openapi.json`, generated from `ControlContract.operations`). `tests/test_operations.py` compares
this table and the client's methods with the document, so the client cannot drift from the server."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Parameter:
    """A path, query or header parameter: `name` as the API spells it, `python` as the method's argument."""

    name: str
    location: str  # "path", "query" or "header"
    required: bool = False

    @property
    def python(self) -> str:
        return self.name.lower().replace("-", "_")


@dataclass(frozen=True)
class Operation:
    """One operation: its OpenAPI `operationId`, method, path template, parameters and whether it takes a body
    (`None`: no body; `True`: required; `False`: optional)."""

    id: str
    method: str
    path: str
    parameters: tuple[Parameter, ...] = ()
    body: bool | None = None

    def url_path(self, values: dict[str, str]) -> str:
        from urllib.parse import quote

        path = self.path
        for parameter in self.parameters:
            if parameter.location == "path":
                path = path.replace("{" + parameter.name + "}", quote(str(values[parameter.python]), safe=""))
        return path


def _path(name: str) -> Parameter:
    return Parameter(name, "path", True)


_SINCE = Parameter("since", "query")

OPERATIONS: dict[str, Operation] = {
    operation.id: operation
    for operation in (
        Operation("getStatus", "GET", "/v1/status"),
        Operation("getEvents", "GET", "/v1/events", (_SINCE, Parameter("limit", "query"))),
        Operation("streamEvents", "GET", "/v1/events/stream", (_SINCE, Parameter("Last-Event-ID", "header"))),
        Operation("notify", "POST", "/v1/characteristics/{id}/notify", (_path("id"),), body=True),
        Operation("indicate", "POST", "/v1/characteristics/{id}/indicate", (_path("id"),), body=True),
        Operation("setValue", "PUT", "/v1/characteristics/{id}/value", (_path("id"),), body=True),
        Operation("fireTrigger", "POST", "/v1/triggers/{name}", (_path("name"),), body=False),
        Operation("setVariable", "PUT", "/v1/variables/{name}", (_path("name"),), body=True),
        Operation("listFaults", "GET", "/v1/faults"),
        Operation("addFaults", "POST", "/v1/faults", body=True),
        Operation("clearFaults", "DELETE", "/v1/faults"),
        Operation("removeFault", "DELETE", "/v1/faults/{id}", (_path("id"),)),
        Operation("disconnectCentral", "POST", "/v1/centrals/{address}/disconnect", (_path("address"),)),
        Operation("setService", "PUT", "/v1/services/{id}", (_path("id"),), body=True),
        Operation("getPairing", "GET", "/v1/pairing"),
        Operation("answerPairing", "POST", "/v1/pairing", body=True),
        Operation("listBonds", "GET", "/v1/bonds"),
        Operation("forgetBond", "DELETE", "/v1/bonds/{address}", (_path("address"),)),
        Operation("changeAddress", "PUT", "/v1/adapter/address", body=True),
        Operation("setAdvertisement", "PUT", "/v1/advertisement", body=True),
        Operation("reset", "POST", "/v1/reset"),
        Operation("getFirmware", "GET", "/v1/firmware"),
        Operation("listChannels", "GET", "/v1/channels"),
        Operation("sendSDU", "POST", "/v1/channels/{id}/send", (_path("id"),), body=True),
        Operation("relaySnapshot", "POST", "/v1/relay/snapshot"),
        Operation("openapi", "GET", "/v1/openapi.json"),
        Operation("dashboard", "GET", "/"),
        Operation("dashboardStyle", "GET", "/dashboard.css"),
        Operation("dashboardScript", "GET", "/dashboard.js"),
        Operation("timelineScript", "GET", "/timeline.js"),
        Operation("listDevices", "GET", "/v1/devices"),
    )
}

# Not about one device: the process's (the document, the dashboard, the device list).
PROCESS_WIDE = {"openapi", "dashboard", "dashboardStyle", "dashboardScript", "timelineScript", "listDevices"}
DEVICE = _path("device")


def of_device(operation: Operation) -> Operation:
    """The operation on one device of a rig, as the server derives it: `/v1/x` at `/v1/devices/{device}/x`, id
    `xOfDevice`, the device first among the parameters."""
    return Operation(operation.id + "OfDevice", operation.method, "/v1/devices/{device}" + operation.path[len("/v1"):],
                     (DEVICE, *operation.parameters), operation.body)


OPERATIONS.update({o.id: o for o in (of_device(op) for op in list(OPERATIONS.values()) if op.id not in PROCESS_WIDE)})
