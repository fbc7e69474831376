"""Verdict parity of the fault grammar (docs/control.md, "Faults"): one generated corpus of faults (every kind of
the fault catalog on every operation, each value at and past its bounds and of the wrong type, every scope key,
extra and missing keys) in profiles and in control API bodies. Each profile goes through `gattemu validate` and
through profiles/schema.json with a JSON Schema validator (Python jsonschema, 2020-12); each body through the
control API (gattemu-control-fixture: the real server and its decoder) and through the OpenAPI document's
FaultsRequest schema. Each pair must agree, except the cases listed in EXCEPTIONS with the reason a schema cannot
say it (a reference into the profile or another of its sections); their count is printed. Also: schema.json's
fault definition is the one made from the catalog, and schema.json accepts every profile in profiles/ and
Tests/ that `gattemu validate` accepts.

Environment: GATTEMU_BIN, GATTEMU_FIXTURE (default: `swift build --show-bin-path`)."""
from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from fault_catalog import DASHBOARD, DOCS, PROFILE_SCHEMA, expected_dashboard, expected_docs, expected_text, json_schema, openapi  # noqa: E402

DOCUMENT = openapi()
CATALOG = DOCUMENT["x-fault-catalog"]
KINDS = {kind["name"]: kind for kind in CATALOG}
OPERATIONS = ["read", "write", "notify", "indicate", "connect", "pair", "start", "channel", "sdu", "send"]

# A profile every fault can name: characteristics with every flag, one with read only, a variant, security.
BASE = {
    "format": 1,
    "device": {"name": "Parity"},
    "security": {"io": "NoInputNoOutput"},
    "advertisements": [{"type": "peripheral", "localName": "Parity", "variants": {"touched": {"localName": "Touched"}}}],
    "services": [{
        "id": "battery", "uuid": "180f",
        "characteristics": [
            {"id": "tx", "uuid": "2a19", "flags": ["read", "write", "notify", "indicate"]},
            {"id": "config", "uuid": "2a1a", "flags": ["read", "write", "notify", "indicate"]},
            {"id": "ro", "uuid": "2a1b", "flags": ["read"]},
        ],
    }, {
        "id": "smpService", "uuid": "8D53DC1D-1DB7-4CD3-868B-8A527460AA84",
        "characteristics": [{"id": "smp", "uuid": "DA2E7828-FBCE-4E01-AE9E-261174997C48",
                             "flags": ["write-without-response", "notify"]}],
    }],
    "firmware": {"characteristic": "smp", "version": "1.0.0"},
    "channels": [{"id": "data", "psm": "any"}],
}

# Cases the schemas cannot judge, with why. Each must be refused by gattemu and accepted by the schema.
EXCEPTIONS = {
    "characteristic-unknown": ("names a characteristic the profile does not have (a reference)",
                               {"on": "write", "characteristic": "nope", "error": "failed"}),
    "characteristic-without-flag": ("the characteristic has no write flag (a property of the referenced characteristic)",
                                    {"on": "write", "characteristic": "ro", "error": "failed"}),
    "variant-unknown": ("names an advertisement variant the profile does not have (a reference)",
                        {"on": "start", "advertise": "nope"}),
    "rewrite-match-over-512-bytes": ("514 bytes of UTF-8 in 257 characters (a byte count no JSON Schema can take)",
                                     {"on": "notify", "rewrite": {"match": {"utf8": "\u00e9" * 257}, "replace": ""}}),
    "rewrite-replace-over-512-bytes": ("513 bytes as hex with separators (a byte count no JSON Schema can take)",
                                       {"on": "write", "rewrite": {"match": "01", "replace": "ab " * 513}}),
    "rewrite-base64-over-512-bytes": ("684 base64 characters are 513 bytes (the text limit is the control API's Value's)",
                                      {"on": "read", "rewrite": {"match": {"base64": "A" * 684}, "replace": ""}}),
    "pair-without-security": ("a pairing fault in a profile that does not pair (depends on another section)",
                              {"on": "pair", "refuse": True}),
    "firmware-without-firmware-section": ("an update fault in a profile with no firmware target (depends on another "
                                          "section)", {"on": "reset", "losePending": True}),
    "channel-unknown": ("names an L2CAP channel the profile does not have (a reference)",
                        {"on": "send", "channel": "nope", "closeChannel": True}),
    "channel-without-channels": ("a channel fault in a profile with no channels (depends on another section)",
                                 {"on": "sdu", "drop": True}),
}


def forms(schema):
    return [f for s in schema.get("oneOf", [schema]) for f in forms(s)] if "oneOf" in schema else [schema]


def boundary_values(schema):
    """Values at and past each bound of a parameter schema, and of the wrong types."""
    values = [None, True, False, "text", 1.5, [], {}, -1]
    for form in forms(schema):
        if form.get("type") == "integer":
            low, high = form.get("minimum", 0), form.get("maximum", 2**31 - 1)
            values += [low, high, low - 1, high + 1, float(low), str(low)]
        elif form.get("type") == "string":
            values += list(form.get("enum", []))[:2] + [v.upper() for v in form.get("enum", [])[:1]] + [""]
            if "maxLength" in form:
                values += ["ff" * (form["maxLength"] // 2), "ff " * (form["maxLength"] // 3 + 1)]
    return values


EXTRA_VALUES = {
    "delay": [0, 100000000, 100000001, "250ms", "1.5s", "1.2345s", "100001s", "5 s", "1e3", {"min": 1, "max": 2},
              {"min": "2s", "max": "1s"}, {"min": 1}, {"min": 1, "max": 2, "x": 3}, {"min": "x", "max": 1}],
    "error": ["not-authorized", "NOT-AUTHORIZED", "0x80", "0x9F", "0x9f", "0XA0", "0x7F", "0x+80", 128, 159, 127, 160,
              "128", "unlikely"],
    "corrupt": [{"flipBits": 1}, {"flipBits": 4096}, {"flipBits": 0}, {"flipBits": 4097}, {"flipBits": "1"},
                {"hex": "ff"}, {"hex": "0x01"}, {"hex": "0x"}, {"hex": ""}, {"hex": "f"}, {"hex": "zz"},
                {"hex": "ff" * 2048}, {"hex": "ff " * 1366}, {"hex": "0x0x01"}, {"hex": " 0x01"},
                {"at": 512, "hex": "ff"}, {"at": 513, "hex": "ff"}, {"at": -1, "xor": "80"}, {"at": 0, "xor": "80"},
                {"xor": "0X80 01"}, {"xor": "80:01-02\t03"}, {"hex": "ff", "xor": "ff"}, {"flipBits": 1, "at": 0},
                {"at": 1}, {"hex": 255}],
    "truncate": [0, 512, 513, "3"],
    "rewrite": [{"match": "51 60", "replace": ""}, {"match": "0x51", "replace": "0x"}, {"match": "", "replace": "01"},
                {"match": "0x", "replace": "01"}, {"match": "f", "replace": "01"}, {"match": "01", "replace": "zz"},
                {"match": {"hex": "ff"}, "replace": {"hex": ""}}, {"match": {"hex": ""}, "replace": "01"},
                {"match": {"utf8": "ok"}, "replace": {"utf8": ""}}, {"match": {"utf8": ""}, "replace": "01"},
                {"match": {"utf8": "x" * 512}, "replace": {"utf8": "y" * 512}}, {"match": {"utf8": "x" * 513}, "replace": ""},
                {"match": {"base64": "UWA="}, "replace": {"base64": ""}}, {"match": {"base64": " \n"}, "replace": "01"},
                {"match": {"base64": "U"}, "replace": "01"}, {"match": {"base64": "UWA"}, "replace": "01"},
                {"match": {"base64": "A" * 680}, "replace": ""}, {"match": {"base64": "A" * 688}, "replace": ""},
                {"match": "ff" * 512, "replace": "ff" * 512}, {"match": "ff" * 2049, "replace": ""}, {"match": {"hex": "01", "utf8": "a"}, "replace": "01"},
                {"match": {"ascii": "a"}, "replace": "01"}, {"match": {}, "replace": "01"}, {"match": 1, "replace": "01"},
                {"match": "01"}, {"replace": "01"}, {"match": "01", "replace": "02", "all": False},
                {"match": "01", "replace": "02", "all": True}, {"match": "01", "replace": "02", "all": 1},
                {"match": "01", "replace": "02", "all": None}, {"match": "01", "replace": "02", "every": True}],
    "duplicate": [1, 100, 0, 101],
    "silence": [0, "10s", 100000000, 100000001, "1.5ms", "-1s"],
    "advertise": [None, "touched", "", 5],
    "powerCycle": ["2s", 0, 100000001],
}

SCOPE_CASES = [
    {"nth": n} for n in (0, 1, 2147483647, 2147483648, "1", 1.0)
] + [
    {"count": n} for n in (0, 1, 2147483647, 2147483648, -1)
] + [
    {"probability": p} for p in (-0.1, 0, 0.5, 1, 1.1, "0.5")
] + [
    {"seed": s} for s in (-1, 0, 18446744073709551615, 18446744073709551616, 1.5, "7")
] + [
    {"central": c} for c in ("AA:BB:CC:DD:EE:FF", "aa:bb:cc:dd:ee:0f", "AA:BB:CC:DD:EE", "AABBCCDDEEFF", 5)
] + [
    {"id": i} for i in ("ok_1-x", "", "a b", "x" * 64, "x" * 65, 7)
] + [
    {"description": "text"}, {"description": 1}, {"$comment": "text"}, {"$comment": None},
    {"characteristic": "tx"}, {"characteristic": ""}, {"characteristic": 5},
    {"bogus": 1}, {"drop": True}, {"on": "bogus"}, {"on": None}, {"after": "5s"},
]


def case_id(spec) -> str:
    return json.dumps(spec, sort_keys=True)[:120]


def fault_corpus():
    """(name, fault) pairs: generated from the catalog, then the scope keys, then whole-fault shapes."""
    cases = []
    for name, kind in KINDS.items():
        example = json.loads(kind["example"])
        value = example[name]
        cases.append((f"{name} example", example))
        for operation in OPERATIONS:
            cases.append((f"{name} on {operation}", {"on": operation, name: value}))
            if operation in ("read", "write", "notify", "indicate"):
                cases.append((f"{name} on {operation} tx", {"on": operation, "characteristic": "tx", name: value}))
            if operation in ("channel", "sdu", "send"):
                cases.append((f"{name} on {operation} data", {"on": operation, "channel": "data", name: value}))
        cases.append((f"{name} without on", {name: value}))
        on = kind["suggestedOn"] or kind["implicitOn"] or kind["operations"][0]
        for candidate in boundary_values(kind["schema"]) + EXTRA_VALUES.get(name, []):
            if name == "advertise" and candidate not in ("", "touched") and isinstance(candidate, str):
                continue  # a variant the profile lacks: EXCEPTIONS["variant-unknown"]
            cases.append((f"{name} = {json.dumps(candidate)[:40]}", {"on": on, name: candidate}))
        if "start" in kind["operations"]:
            cases.append((f"{name} after", {"on": "start", "after": "1s", name: value}))
            cases.append((f"{name} after 0", {"after": 0, name: value}))
            cases.append((f"{name} after too long", {"after": 100000001, name: value}))
    for extra in SCOPE_CASES:
        cases.append((f"scope {case_id(extra)}", {"on": "write", "error": "not-authorized", **extra}))
    cases += [
        ("two actions", {"on": "write", "error": "failed", "drop": True}),
        ("no action", {"on": "write"}),
        ("after on write", {"on": "write", "after": "1s", "drop": True}),
        ("characteristic on connect", {"on": "connect", "characteristic": "tx", "disconnect": True}),
        ("characteristic on start", {"characteristic": "tx", "silence": "1s"}),
        ("channel on write", {"on": "write", "channel": "data", "drop": True}),
        ("characteristic on send", {"on": "send", "characteristic": "tx", "drop": True}),
        ("channel not a name", {"on": "send", "channel": "a b", "drop": True}),
        ("not an object: number", 5), ("not an object: string", "drop"), ("not an object: array", [{"drop": True}]),
        ("not an object: null", None),
    ]
    return cases


CORPUS = fault_corpus()


def profile_with(faults, security=True, firmware=True, channels=True):
    profile = copy.deepcopy(BASE)
    if not channels:
        del profile["channels"]
    if not security:
        del profile["security"]
    if not firmware:
        del profile["firmware"]
        del profile["services"][1]
    profile["faults"] = faults
    return profile


def profile_corpus():
    cases = [(name, profile_with([fault])) for name, fault in CORPUS]
    cases += [
        ("no faults", profile_with([])),
        ("faults as a scenario object", profile_with({"faults": [{"on": "write", "drop": True}]})),
        ("faults as a scenario object with a comment", profile_with({"faults": [], "$comment": "x"})),
        ("faults as an object without faults", profile_with({"fault": []})),
        ("faults: a string", profile_with("drop")),
        ("two faults", profile_with([{"on": "write", "error": "failed"}, {"on": "notify", "drop": True}])),
        ("one bad of two", profile_with([{"on": "write", "error": "failed"}, {"on": "notify", "drop": 1}])),
    ]
    cases += [(f"exception {key}", profile_with([fault], security=key != "pair-without-security",
                                                firmware=key != "firmware-without-firmware-section",
                                                channels=key != "channel-without-channels"))
              for key, (_, fault) in EXCEPTIONS.items()]
    return cases


def bin_path() -> Path:
    return Path(subprocess.run(["swift", "build", "--show-bin-path"], cwd=ROOT, check=True,
                               capture_output=True, text=True).stdout.strip())


@pytest.fixture(scope="module")
def binaries():
    gattemu, fixture = os.environ.get("GATTEMU_BIN"), os.environ.get("GATTEMU_FIXTURE")
    if not gattemu or not fixture:
        path = bin_path()
        gattemu, fixture = gattemu or str(path / "gattemu"), fixture or str(path / "gattemu-control-fixture")
    for p in (gattemu, fixture):
        assert Path(p).exists(), f"{p} missing: run swift build --build-tests first"
    return {"gattemu": gattemu, "fixture": fixture}


def validate(gattemu: str, paths: list[Path]) -> set[Path]:
    """The profiles `gattemu validate` accepts (it prints `PATH: ok` for each)."""
    result = subprocess.run([gattemu, "validate", *map(str, paths)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode in (0, 2), f"gattemu validate crashed ({result.returncode}): {result.stderr[-2000:]}"
    return {Path(line[: -len(": ok")]) for line in result.stdout.splitlines() if line.endswith(": ok")}


def schema_accepts(validator, instance) -> bool:
    return validator.is_valid(instance)


def profile_validator():
    schema = json.loads(PROFILE_SCHEMA.read_text())
    return jsonschema.Draft202012Validator(schema, format_checker=None)


def test_schema_json_and_docs_are_the_catalogs():
    assert PROFILE_SCHEMA.read_text() == expected_text(), "profiles/schema.json's fault definition is stale: run scripts/fault-catalog"
    assert DOCS.read_text() == expected_docs(), "docs/control.md's table of fault kinds is stale: run scripts/fault-catalog"
    assert DASHBOARD.read_text() == expected_dashboard(), "the dashboard's fault catalog is stale: run scripts/fault-catalog"


def test_profiles_verdict_parity(binaries, tmp_path):
    cases = profile_corpus()
    assert len(cases) >= 200, len(cases)
    paths = []
    for index, (_, profile) in enumerate(cases):
        path = tmp_path / f"case{index:04}.json"
        path.write_text(json.dumps(profile))
        paths.append(path)
    accepted = validate(binaries["gattemu"], paths)
    validator = profile_validator()
    mismatches, exceptions, valid = [], [], 0
    for (name, profile), path in zip(cases, paths):
        ours, theirs = path in accepted, schema_accepts(validator, profile)
        valid += ours
        if name.startswith("exception "):
            reason = EXCEPTIONS[name.removeprefix("exception ")][0]
            assert not ours and theirs, f"{name}: expected gattemu to refuse and the schema to accept ({reason})"
            exceptions.append((name, reason))
        elif ours != theirs:
            mismatches.append(f"{name}: gattemu {'accepts' if ours else 'refuses'}, schema.json {'accepts' if theirs else 'refuses'}")
    print(f"\nprofiles: {len(cases)} cases, {valid} valid, {len(cases) - valid} invalid; {len(exceptions)} exceptions:")
    for name, reason in exceptions:
        print(f"  {name}: {reason}")
    assert not mismatches, "\n".join(mismatches)
    assert 50 <= valid <= len(cases) - 50, "the corpus has both verdicts in number"


class Fixture:
    """gattemu-control-fixture serving a profile on a free port until stop()."""

    def __init__(self, binary: str, profile: Path):
        self.process = subprocess.Popen([binary, "--profile", str(profile)], cwd=ROOT, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL)
        line = self.process.stdout.readline().decode()
        match = re.match(r"listening (http://\S+)", line)
        assert match, f"the fixture server did not start: {line!r}"
        self.url = match.group(1)

    def request(self, method: str, path: str, body: bytes | None = None) -> int:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        request = urllib.request.Request(self.url + path, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return answer.status
        except urllib.error.HTTPError as error:
            return error.code

    def stop(self):
        self.process.terminate()
        self.process.wait(5)


def test_control_bodies_verdict_parity(binaries, tmp_path):
    profile = tmp_path / "parity.json"
    profile.write_text(json.dumps(BASE))
    bodies = [(name, fault) for name, fault in CORPUS]
    valid_one = {"on": "write", "error": "failed"}
    bodies += [
        ("array of two", [valid_one, {"on": "notify", "drop": True}]),
        ("array with a bad one", [valid_one, {"on": "notify", "drop": 1}]),
        ("scenario object", {"faults": [valid_one]}),
        ("scenario object with extra", {"faults": [valid_one], "x": 1}),
        ("empty array", []),
        ("64 faults", [valid_one] * 64),
        ("65 faults", [valid_one] * 65),
    ]
    bodies += [(f"exception {key}", fault) for key, (_, fault) in EXCEPTIONS.items()
               if key not in ("pair-without-security", "firmware-without-firmware-section", "channel-without-channels")]
    components = {name: json_schema(schema) for name, schema in DOCUMENT["components"]["schemas"].items()}
    validator = jsonschema.Draft202012Validator({"$defs": components, "$ref": "#/$defs/FaultsRequest"})
    server = Fixture(binaries["fixture"], profile)
    mismatches, exceptions, valid = [], [], 0
    try:
        for name, body in bodies:
            status = server.request("POST", "/v1/faults", json.dumps(body).encode())
            assert status in (201, 400, 404, 409), f"{name}: status {status}"
            if status == 201:
                assert server.request("DELETE", "/v1/faults") == 200
            ours, theirs = status == 201, validator.is_valid(body)
            valid += ours
            if name.startswith("exception "):
                reason = EXCEPTIONS[name.removeprefix("exception ")][0]
                assert status in (404, 409) and theirs, f"{name}: expected 404/409 and the schema to accept ({reason}), got {status}"
                exceptions.append((name, reason))
            elif ours != theirs:
                mismatches.append(f"{name}: the API answers {status}, the OpenAPI schema {'accepts' if theirs else 'refuses'}")
    finally:
        server.stop()
    print(f"\ncontrol bodies: {len(bodies)} cases, {valid} valid; {len(exceptions)} exceptions:")
    for name, reason in exceptions:
        print(f"  {name}: {reason}")
    assert len(bodies) >= 200
    assert not mismatches, "\n".join(mismatches)


def test_schema_json_accepts_every_profile_gattemu_accepts(binaries):
    """Every profile of profiles/ and Tests/ that gattemu accepts, except those that extend another: schema.json
    judges one file, and such a file's items may be completed by its base (a service's uuid, say)."""
    paths = sorted(p for folder in ("profiles", "Tests") for p in (ROOT / folder).rglob("*.json")
                   if p.name != "schema.json" and "/out/" not in str(p))
    accepted = validate(binaries["gattemu"], paths)
    assert accepted, "no profile validated"
    validator = profile_validator()
    refused, extending = [], []
    for path in sorted(accepted):
        if "extends" in json.loads(path.read_text()):
            extending.append(path)
            continue
        errors = list(validator.iter_errors(json.loads(path.read_text())))
        if errors:
            refused.append(f"{path.relative_to(ROOT)}: {errors[0].message[:200]} at {list(errors[0].absolute_path)}")
    print(f"\nschema.json: {len(accepted) - len(extending)} profiles gattemu accepts checked; "
          f"{len(extending)} extending another not checked alone")
    assert len(accepted) - len(extending) >= 4
    assert not refused, "\n".join(refused)


# The `gattemu ctl fault add` options of each kind; a kind added to the catalog fails here until ctl has one.
CTL_OPTIONS = {
    "delay": ["--delay", "100ms-300ms"], "drop": ["--drop"], "error": ["--error", "0x80"], "corrupt": ["--flip-bits", "2"],
    "truncate": ["--truncate", "3"], "rewrite": ["--rewrite", "5160=5161"], "duplicate": ["--duplicate"], "reorder": ["--reorder"], "disconnect": ["--disconnect"],
    "silence": ["--silence", "1s"], "advertise": ["--advertise", "touched"], "powerCycle": ["--power-cycle", "2s"],
    "refuse": ["--refuse-pairing"], "wrongPasskey": ["--wrong-passkey"], "forgetBonds": ["--forget-bonds"],
    "smpError": ["--smp-error", "12", "--percent", "60"], "wrongHash": ["--wrong-hash"], "losePending": ["--lose-pending"],
    "closeChannel": ["--close-channel", "--channel", "data"],
}


def test_ctl_installs_every_kind(binaries, tmp_path):
    """Every kind of the catalog can be installed with `gattemu ctl fault add` and its defaults (`on` left out)."""
    assert set(CTL_OPTIONS) == set(KINDS), "a kind of the catalog has no `gattemu ctl fault add` option"
    profile = tmp_path / "parity.json"
    profile.write_text(json.dumps(BASE))
    server = Fixture(binaries["fixture"], profile)
    try:
        for name, options in CTL_OPTIONS.items():
            result = subprocess.run([binaries["gattemu"], "ctl", "fault", "add", "--control", server.url, "--json", "--id", f"ctl-{name}",
                                     *options], capture_output=True, text=True, timeout=30, env={**os.environ, "GATTEMU_CONTROL_TOKEN": ""})
            assert result.returncode == 0, f"{name}: {result.stderr}"
            added = json.loads(result.stdout)
            assert added["action"] == name and added["on"] == (KINDS[name]["suggestedOn"] or KINDS[name]["implicitOn"]), added
        # A channel refused with a result by name: `on` is channel without --on.
        result = subprocess.run([binaries["gattemu"], "ctl", "fault", "add", "--control", server.url, "--json", "--channel", "data",
                                 "--refuse-channel", "psm-not-supported"], capture_output=True, text=True, timeout=30,
                                env={**os.environ, "GATTEMU_CONTROL_TOKEN": ""})
        assert result.returncode == 0, result.stderr
        added = json.loads(result.stdout)
        assert (added["on"], added["action"], added.get("channel")) == ("channel", "refuse", "data"), added
        assert "psm-not-supported" in result.stdout, added
        help_text = subprocess.run([binaries["gattemu"], "ctl", "fault", "add", "--help"], capture_output=True, text=True).stdout
        assert all(f"  {name}: " in help_text for name in KINDS), "ctl's help lists every kind"
    finally:
        server.stop()
