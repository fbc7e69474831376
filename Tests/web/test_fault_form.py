"""The dashboard's "New fault" form, built from the fault catalog the page carries (#fault-catalog), in headless
Chromium against the no-Bluetooth control server (see conftest.py)."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from conftest import ROOT, console_errors, screenshot, wait_for

COMMON = ("central", "nth", "count", "probability", "seed", "after", "percent", "channel")


def get(server, path: str):
    with urllib.request.urlopen(server.url + path, timeout=10) as answer:
        return json.load(answer)


def post_error(server, path: str, body) -> str:
    """The error message the API answers `body` with (it must refuse it as bad input)."""
    request = urllib.request.Request(server.url + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(request, timeout=10)
    except urllib.error.HTTPError as error:
        assert 400 <= error.code < 500, error.code
        return json.load(error)["error"]
    raise AssertionError(f"the API accepted {body}")


def page_catalog(browser) -> list[dict]:
    return json.loads(browser.execute_script("return document.getElementById('fault-catalog').textContent"))


def open_dashboard(server_factory, browser, profile: str = "profiles/leaf-reader.json"):
    server = server_factory("--profile", str(profile))
    browser.get(server.url + "/")
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#gatt tr[data-characteristic]"), what="the GATT table")
    return server, browser.find_element(By.ID, "fault-form")


def fill_value(form, path: str, value) -> None:
    """Types `value` into the value's fields at `path` as a user would: the alternative that fits it, then each
    member or the text (empty for null); a flag has no field."""
    chooser = form.find_elements(By.NAME, path + ":form")
    if chooser:
        select = Select(chooser[0])
        keys = [option.get_attribute("value") for option in select.options]
        if value is True and "true" in keys:
            select.select_by_value("true")
            return
        if isinstance(value, dict):
            fitting = [key for key in keys if key not in ("true", "value") and set(key.split("+")) <= set(value)]
            assert fitting, f"no form of {path} takes {value}: {keys}"
            select.select_by_value(fitting[0])
        else:
            select.select_by_value("value")
    if isinstance(value, dict):
        for name, member in value.items():
            fill_value(form, f"{path}.{name}", member)
        return
    fields = form.find_elements(By.NAME, path)
    if value is True and not fields:
        return
    assert fields, f"no field for {path}"
    fields[0].clear()
    fields[0].send_keys("" if value is None else str(value))


def fill_common(form, example: dict, characteristics: set[str]) -> None:
    Select(form.find_element(By.NAME, "on")).select_by_value(example.get("on", ""))
    characteristic = form.find_element(By.NAME, "characteristic")
    if "characteristic" in example:
        assert characteristic.is_displayed(), f"characteristic is hidden for {example}"
    if characteristic.is_displayed():  # the last kind's stays chosen: the example's, or any (another device's)
        Select(characteristic).select_by_value(example["characteristic"] if example.get("characteristic") in characteristics else "")
    for name in COMMON:
        field = form.find_element(By.NAME, name)
        if name in example:
            assert field.is_displayed(), f"{name} is hidden for {example}"
        if field.is_displayed():  # a hidden field (after, but for start) is not sent
            field.clear()
        if name in example:
            field.send_keys(str(example[name]))


def test_the_page_carries_the_servers_catalog(server_factory, browser):
    server, form = open_dashboard(server_factory, browser)
    catalog = page_catalog(browser)
    assert catalog == get(server, "/v1/openapi.json")["x-fault-catalog"], "the page's catalog is not the server's FaultCatalog"
    actions = [option.get_attribute("value") for option in Select(form.find_element(By.NAME, "action")).options]
    assert actions == [kind["name"] for kind in catalog]
    for kind in catalog:
        Select(form.find_element(By.NAME, "action")).select_by_value(kind["name"])
        offered = [option.get_attribute("value") for option in Select(form.find_element(By.NAME, "on")).options]
        assert offered == ([""] if kind["implicitOn"] else []) + kind["operations"], kind["name"]
    assert console_errors(browser) == []


def test_every_kind_installs_from_its_example(server_factory, browser, tmp_path):
    # The Noke lock (its tx is the examples' characteristic) as a device that pairs, so the pairing faults apply, that
    # takes firmware updates (the SMP service and a firmware section), so the update faults apply, and that has an
    # L2CAP channel (the examples' "data"), so the channel faults apply.
    profile = json.loads((ROOT / "profiles" / "noke-lock.json").read_text())
    profile["security"] = {"io": "NoInputNoOutput"}
    profile["services"].append({"id": "smpService", "uuid": "8D53DC1D-1DB7-4CD3-868B-8A527460AA84", "characteristics": [
        {"id": "smp", "uuid": "DA2E7828-FBCE-4E01-AE9E-261174997C48", "flags": ["write-without-response", "notify"]}]})
    profile["firmware"] = {"characteristic": "smp", "version": "1.0.0"}
    profile["channels"] = [{"id": "data", "psm": "any"}]
    (tmp_path / "pairing-noke.json").write_text(json.dumps(profile))
    server, form = open_dashboard(server_factory, browser, tmp_path / "pairing-noke.json")
    characteristics = {option.get_attribute("value") for option in Select(form.find_element(By.NAME, "characteristic")).options}
    catalog = page_catalog(browser)
    assert len(catalog) >= 14
    for kind in catalog:
        example = json.loads(kind["example"])
        Select(form.find_element(By.NAME, "action")).select_by_value(kind["name"])
        fill_common(form, example, characteristics)
        fill_value(form, "value", example[kind["name"]])
        identifier = form.find_element(By.NAME, "id")
        identifier.clear()
        identifier.send_keys("form-" + kind["name"])
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        problem = browser.find_element(By.ID, "fault-error")
        installed = wait_for(lambda: next((f for f in get(server, "/v1/faults")["faults"] if f["id"] == "form-" + kind["name"]), None)
                             or (problem.is_displayed() and problem.text), what=f"the {kind['name']} fault installed")
        assert isinstance(installed, dict), f"{kind['name']} refused: {installed}"
        wait_for(lambda: not problem.is_displayed(), what="no error shown")
        assert installed["action"] == kind["name"]
        assert installed["on"] == example.get("on", kind["implicitOn"])
        for name in ("central", "nth", "count", "probability", "seed", "channel"):
            if name in example:
                assert installed[name] == example[name], (kind["name"], name, installed)
        if example.get("characteristic") in characteristics:
            assert installed["characteristic"] == example["characteristic"]
    listed = {f["action"] for f in get(server, "/v1/faults")["faults"]}
    assert listed == {kind["name"] for kind in catalog}
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#faults tr[data-fault=form-forgetBonds]"), what="the faults listed")
    assert console_errors(browser) == []


def test_a_refused_value_shows_the_servers_message(server_factory, browser):
    server, form = open_dashboard(server_factory, browser)
    Select(form.find_element(By.NAME, "action")).select_by_value("truncate")
    fill_value(form, "value", 600)
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    problem = browser.find_element(By.ID, "fault-error")
    wait_for(problem.is_displayed, what="the form's error")
    expected = post_error(server, "/v1/faults", {"on": "notify", "truncate": 600})
    assert problem.text == expected
    assert "600" in expected or "512" in expected, expected

    # Markup in a value and in the server's message stays text.
    Select(form.find_element(By.NAME, "action")).select_by_value("advertise")
    hostile = '<img src=x onerror="document.title=1">'
    fill_value(form, "value", hostile)
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_for(lambda: problem.text != expected, what="the second error")
    assert problem.text == post_error(server, "/v1/faults", {"advertise": hostile})
    assert not browser.find_elements(By.CSS_SELECTOR, "#fault-form img, #message img")
    assert get(server, "/v1/faults")["faults"] == []
    screenshot(browser, "fault-form-error")

    # The page still works: a valid value installs.
    Select(form.find_element(By.NAME, "action")).select_by_value("delay")
    fill_value(form, "value", {"min": "50ms", "max": "400ms"})
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_for(lambda: get(server, "/v1/faults")["faults"], what="the delay fault")
    wait_for(lambda: not problem.is_displayed(), what="the error cleared")
    browser.execute_script("document.getElementById('card-faults').scrollIntoView()")
    screenshot(browser, "fault-form")
    # Chromium logs the two refused requests themselves; nothing else (no script error).
    errors = console_errors(browser)
    assert len(errors) == 2 and all("/v1/faults - Failed to load resource" in error for error in errors), errors
