// gattemu dashboard: status, GATT table, centrals, a live timeline and controls, over the control API of
// the server that serves this page (same origin). Text only: nothing from the API is ever parsed as HTML.
// The bearer token (when the API has one) comes in the address's fragment (`/#token=…`, as `gattemu run` prints
// it; a fragment is never sent to a server) or is asked for once; it is kept in sessionStorage (this tab only),
// removed from the address bar, and sent as `Authorization: Bearer`; the event stream is read with fetch() so
// that it carries the header too.
"use strict";

(() => {
  // The most events the page keeps (the server keeps at most 100,000 itself: --event-memory); the oldest go first.
  const EVENTS_KEPT = 100000;
  const TOKEN_KEY = "gattemu-token";
  const $ = (id) => document.getElementById(id);
  const state = { status: null, streamAbort: null, reconnectDelay: 500, refreshTimer: null, refreshTicket: 0, renderedTicket: 0, lastSeq: 0, bluetoothdLost: false, device: null, firmwareTimer: null };
  let timeline;

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function button(text, onClick, className) {
    const node = el("button", className, text);
    node.type = "button";
    node.addEventListener("click", onClick);
    return node;
  }

  function show(message, ok) {
    const box = $("message");
    box.textContent = message;
    box.className = "message" + (ok ? " ok" : "");
    box.hidden = false;
    clearTimeout(show.timer);
    show.timer = setTimeout(() => { box.hidden = true; }, ok ? 2500 : 8000);
  }

  // MARK: API

  class APIError extends Error {
    constructor(status, body) {
      super((body && typeof body.error === "string") ? body.error : "HTTP " + status);
      this.status = status;
    }
  }

  function headers(json) {
    const result = {};
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) result["Authorization"] = "Bearer " + token;
    if (json) result["Content-Type"] = "application/json";
    return result;
  }

  // A rig's device (`GET /v1/devices` lists more than one): the routes about a device go under
  // /v1/devices/{device}/, the device list stays where it is.
  function scoped(path) {
    if (!state.device || !path.startsWith("/v1/") || path === "/v1/devices") return path;
    return "/v1/devices/" + segment(state.device) + path.slice(3);
  }

  async function api(method, path, body) {
    const response = await fetch(scoped(path), {
      method, headers: headers(body !== undefined), body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store", credentials: "omit",
    });
    let json = null;
    try { json = await response.json(); } catch (_) { json = null; }
    if (response.status === 401) askForToken();
    if (!response.ok) throw new APIError(response.status, json);
    return json;
  }

  async function act(description, method, path, body) {
    try {
      const answer = await api(method, path, body);
      show(description, true);
      scheduleRefresh(100);
      return answer;
    } catch (error) {
      show(description + " failed: " + error.message);
      return null;
    }
  }

  const segment = (text) => encodeURIComponent(text);

  function askForToken() {
    $("token-form").hidden = false;
    $("token-input").focus();
  }

  // MARK: Status

  // Refreshes overlap (events, the interval): a slower, older answer must not overwrite a newer one.
  async function refresh() {
    const ticket = ++state.refreshTicket;
    try {
      const status = await api("GET", "/v1/status");
      if (ticket < state.renderedTicket) return;
      state.renderedTicket = ticket;
      state.status = status;
      renderStatus(state.status);
      await refreshPairing();
      if (status.firmware) await refreshFirmware();
      else $("card-firmware").hidden = true;
      await refreshChannels();
    } catch (error) {
      if (error.status !== 401) show("status: " + error.message);
    }
  }

  // MARK: Firmware

  // The firmware card: shown when the device is a firmware-update target (the status says so; GET /v1/firmware).
  async function refreshFirmware() {
    if (!state.status || !state.status.firmware) return;
    const device = state.device;
    let firmware;
    try {
      firmware = await api("GET", "/v1/firmware");
    } catch (error) {
      if (error.status !== 401) show("firmware: " + error.message);
      return;
    }
    if (device === state.device) renderFirmware(firmware);
  }

  // While an upload runs its chunks' events come many a second: the card is read again at most every 300 ms.
  function scheduleFirmware() {
    if (!state.status || !state.status.firmware || state.firmwareTimer) return;
    state.firmwareTimer = setTimeout(() => { state.firmwareTimer = null; refreshFirmware(); }, 300);
  }

  function renderFirmware(firmware) {
    $("card-firmware").hidden = false;
    $("firmware-state").textContent = firmware.rebooting ? "rebooting" : "";
    const upload = firmware.upload;
    $("firmware-upload").hidden = !upload;
    if (upload) {
      $("firmware-progress").max = upload.length;
      $("firmware-progress").value = Math.min(upload.offset, upload.length);
      $("firmware-upload-text").textContent = "upload " + GattemuTimeline.formatProgress(upload.offset, upload.length)
        + (upload.central ? " from " + upload.central : " (its central left; it can resume)");
    }
    const body = $("firmware-slots");
    body.replaceChildren();
    for (const slot of firmware.slots) {
      const flags = ["active", "pending", "confirmed", "permanent"].filter((flag) => slot[flag]);
      if (!slot.bootable) flags.push("not bootable");
      const row = el("tr");
      row.append(el("td", null, slot.slot), el("td", "mono", slot.version), el("td", "mono", String(slot.hash).slice(0, 16) + "…"),
        el("td", null, flags.join(", ") || "—"));
      row.children[2].title = slot.hash;
      body.append(row);
    }
  }

  // MARK: Channels

  // The channels card: the profile's L2CAP channels (GET /v1/channels), shown when it has any.
  async function refreshChannels() {
    const device = state.device;
    const list = await api("GET", "/v1/channels");
    if (device !== state.device) return;
    const channels = Array.isArray(list.channels) ? list.channels : [];
    $("card-channels").hidden = channels.length === 0;
    const body = $("channels");
    body.replaceChildren();
    for (const channel of channels) {
      const open = Array.isArray(channel.open) ? channel.open : [];
      const psm = Number.isSafeInteger(channel.psm) ? "0x" + channel.psm.toString(16).toUpperCase().padStart(4, "0") : "—";
      const row = el("tr");
      row.append(el("td", "mono", channel.id), el("td", "mono", psm), el("td", null, channel.mtu), el("td", null, channel.security),
        el("td", null, open.length + " of " + channel.maximumOpen
          + (typeof channel.refusing === "string" ? "; refusing every request: " + channel.refusing + " (a fault)" : "")),
        el("td", "mono", open.map((o) => "#" + o.number + " " + o.central + (o.centralMTU ? " (" + o.centralMTU + ")" : "")).join(", ") || "—"));
      body.append(row);
    }
  }

  // MARK: Pairing

  // The pairing card: shown when the profile pairs (gattemu's agent is registered).
  async function refreshPairing() {
    const pairing = await api("GET", "/v1/pairing");
    $("card-pairing").hidden = !pairing.agent;
    if (!pairing.agent) return;
    $("pairing-mode").textContent = pairing.io + ", " + pairing.pairing + (pairing.confirm === "api" ? ", confirmed here" : "");
    const shown = $("pairing-displayed");
    shown.hidden = !pairing.displayed;
    if (pairing.displayed) {
      shown.textContent = pairing.displayed.device
        ? "The real device " + pairing.displayed.central + " asks for passkey " + pairing.displayed.passkey + ": type it on the device"
        : "Passkey shown: " + pairing.displayed.passkey + " (for " + pairing.displayed.central + ")";
    }
    renderPrompt(pairing.prompt);
    let bonds = [];
    try { bonds = (await api("GET", "/v1/bonds")).bonds; } catch (_) { bonds = []; }
    const rows = $("bonds");
    rows.replaceChildren();
    if (!bonds.length) {
      const row = el("tr");
      row.append(el("td", "muted", "no paired centrals"));
      rows.append(row);
    }
    for (const bond of bonds) {
      const row = el("tr");
      const forget = el("button", null, "Forget");
      forget.type = "button";
      forget.title = "Forget its keys without telling it, as a factory reset does";
      forget.addEventListener("click", () => act("forget " + bond.central, "DELETE", "/v1/bonds/" + segment(bond.central)));
      const cell = el("td");
      cell.append(forget);
      row.append(el("td", "mono", bond.central), el("td", null, (bond.bonded ? "bonded" : "paired") + (bond.connected ? ", connected" : "")), cell);
      rows.append(row);
    }
  }

  function renderPrompt(prompt) {
    const box = $("pairing-prompt");
    const key = prompt ? JSON.stringify(prompt) : "";
    if (box.dataset.prompt === key) return;  // keep what the user is typing
    box.dataset.prompt = key;
    box.replaceChildren();
    if (!prompt) return;
    // The answer names the prompt shown: if another central's question replaced it meanwhile, the server refuses it.
    const answer = (body, what) => act(what + " (" + prompt.central + ")", "POST", "/v1/pairing", Object.assign({ prompt: prompt.id }, body));
    const button = (text, body) => {
      const b = el("button", null, text);
      b.type = "button";
      b.addEventListener("click", () => answer(body, text));
      return b;
    };
    const row = el("div", "row");
    // `device`: the relay pairs with the real device (its address), not a phone with gattemu.
    const who = prompt.device ? "The real device " + prompt.central : prompt.central;
    if (prompt.kind === "passkey-entry") {
      box.append(el("p", null, who + " shows a passkey: type it"));
      const input = el("input");
      input.id = "pairing-passkey";
      input.inputMode = "numeric";
      input.maxLength = 6;
      input.setAttribute("aria-label", "passkey");
      const type = el("button", null, "Type");
      type.type = "button";
      type.addEventListener("click", () => answer({ passkey: input.value.trim() }, "type passkey"));
      row.append(input, type, button("Refuse", { accept: false }));
    } else {
      box.append(el("p", null, prompt.kind === "numeric-comparison"
        ? "Does " + who + " show " + prompt.passkey + "?" : who + " wants to pair (just works)"));
      row.append(button("Accept", { accept: true }), button("Refuse", { accept: false }));
    }
    box.append(row);
  }

  function scheduleRefresh(delay) {
    clearTimeout(state.refreshTimer);
    state.refreshTimer = setTimeout(refresh, delay);
  }

  function renderStatus(status) {
    $("device-name").textContent = status.deviceName || (status.adapter && status.adapter.alias) || "gattemu";
    const adapter = status.adapter;
    $("device-address").textContent = !adapter ? "(no adapter)"
      : adapter.privateAddresses ? adapter.name + " " + adapter.address + " (showing resolvable private addresses)"
      : adapter.name + " " + adapter.address;
    $("profile-name").textContent = status.profile;
    const badge = $("advertising-badge");
    badge.textContent = "advertising " + (status.advertising.advertised ? "on" : "off") + (status.advertising.variant ? " (" + status.advertising.variant + ")" : "");
    badge.className = "badge " + (status.advertising.advertised ? "on" : "off");
    renderAdvertising(status.advertising);
    renderCentrals(status.centrals);
    renderTriggers(status);
    renderVariables(status.values);
    renderGatt(status.services);
    renderFaults(status.faults, status.faultPresets);
    renderCentralFilter(status.centrals);
  }

  function renderAdvertising(advertising) {
    const select = $("variant-select");
    const current = advertising.variant || "";
    if (select.dataset.variants !== JSON.stringify(advertising.variants)) {
      select.replaceChildren(new Option("(base)", ""));
      for (const name of advertising.variants) select.append(new Option(name, name));
      select.dataset.variants = JSON.stringify(advertising.variants);
    }
    if (document.activeElement !== select) select.value = current;
    const box = $("advertisements");
    box.replaceChildren();
    advertising.data.forEach((ad, index) => {
      const part = el("div", "ad");
      const kind = ad.secondaryChannel ? " — extended, " + ad.secondaryChannel + " secondary PHY" : " — legacy";
      part.append(el("div", "muted", "advertisement " + index + kind + (advertising.wanted ? "" : " (stopped by the profile)")));
      const fields = el("table");
      const add = (name, value) => {
        const row = el("tr");
        row.append(el("th", null, name), el("td", "mono", value));
        fields.append(row);
      };
      if (ad.localName !== undefined) add("local name", ad.localName);
      if (ad.serviceUUIDs.length) add("services", ad.serviceUUIDs.join(", "));
      if (ad.solicitUUIDs.length) add("solicit", ad.solicitUUIDs.join(", "));
      for (const m of ad.manufacturerData) add("manufacturer 0x" + m.company.toString(16).padStart(4, "0"), GattemuTimeline.spacedHex(m.hex, 64));
      for (const s of ad.serviceData) add("service data " + s.uuid, GattemuTimeline.spacedHex(s.hex, 64));
      if (ad.appearance !== undefined) add("appearance", String(ad.appearance));
      if (ad.txPower !== undefined) add("tx power", ad.txPower + " dBm");
      for (const f of ad.otherStructures || []) add(f.name, GattemuTimeline.spacedHex(f.hex, 64));
      part.append(fields);
      for (const [title, payload] of [["advertising data", ad.advertisingData], ["scan response", ad.scanResponse]]) {
        if (title === "scan response" && ad.secondaryChannel && ad.type === "peripheral") {
          part.append(el("div", "muted", "scan response: none (a connectable extended set carries its name in the advertising data)"));
          continue;
        }
        part.append(el("div", null, title + ": " + payload.length + " / " + payload.limit + " bytes" + (payload.fits ? "" : " — does not fit")));
        const bar = el("div", "budget" + (payload.fits ? "" : " over"));
        const fill = el("div");
        fill.style.width = Math.min(100, payload.length / payload.limit * 100) + "%";
        bar.append(fill);
        part.append(bar, el("div", "hex", GattemuTimeline.spacedHex(payload.hex, 256)));
        const list = el("table");
        for (const s of payload.structures) {
          const row = el("tr");
          row.append(el("td", "mono", "0x" + s.type.toString(16).padStart(2, "0")), el("td", null, s.name), el("td", "hex", GattemuTimeline.spacedHex(s.hex, 64)));
          list.append(row);
        }
        part.append(list);
      }
      box.append(part);
    });
    if (!advertising.data.length) box.append(el("p", "muted", "no advertisement"));
  }

  function renderCentrals(centrals) {
    const body = $("centrals");
    body.replaceChildren();
    for (const central of centrals) {
      const row = el("tr");
      const disconnect = button("Disconnect", () => act("disconnect " + central.address, "POST", "/v1/centrals/" + segment(central.address) + "/disconnect"), "danger");
      row.append(el("td", "mono", central.address), el("td", null, central.mtu === undefined ? "–" : central.mtu),
        el("td", null, central.subscriptions.join(", ") || "–"), el("td"));
      row.lastChild.append(disconnect);
      body.append(row);
    }
    if (!centrals.length) {
      const row = el("tr");
      const cell = el("td", "muted", "none connected");
      cell.colSpan = 4;
      row.append(cell);
      body.append(row);
    }
  }

  function renderTriggers(status) {
    const box = $("triggers");
    // The triggers never change while gattemu runs: keep the buttons (a click must not land on a replaced one).
    const key = JSON.stringify([status.triggers, status.triggerDescriptions]);
    if (box.dataset.key === key) return;
    box.dataset.key = key;
    box.replaceChildren();
    for (const name of status.triggers) {
      const trigger = button(name, () => act("fired " + name, "POST", "/v1/triggers/" + segment(name)));
      trigger.dataset.trigger = name;
      if (status.triggerDescriptions[name]) trigger.title = status.triggerDescriptions[name];
      box.append(trigger);
    }
    if (!status.triggers.length) box.append(el("span", "muted", "the profile has no triggers"));
  }

  function renderVariables(values) {
    const body = $("variables");
    if (body.contains(document.activeElement)) return;  // do not disturb typing
    body.replaceChildren();
    for (const value of values) {
      const row = el("tr");
      const input = el("input");
      input.value = value.type === "bytes" ? value.value : value.value;
      input.setAttribute("aria-label", value.name);
      input.dataset.variable = value.name;
      const set = button("Set", () => {
        let sent;
        if (value.type === "number") sent = Number.parseInt(input.value, 10);
        else if (value.type === "bool") sent = input.value.trim() === "true";
        else if (value.type === "bytes") sent = { hex: input.value };
        else sent = input.value;
        if (value.type === "number" && !Number.isInteger(sent)) { show(value.name + ": expected a whole number"); return; }
        act("set " + value.name, "PUT", "/v1/variables/" + segment(value.name), { value: sent });
      });
      const cell = el("td");
      cell.append(input, set);
      row.append(el("th", null, value.name + (value.kind === "state" ? " (state)" : "")), el("td", "muted", value.type), cell);
      body.append(row);
    }
  }

  // "6869" → {hex, utf8 (when printable), integer (little-endian, up to 6 bytes)}.
  function valueViews(hex) {
    const bytes = (hex.match(/../g) || []).map((pair) => parseInt(pair, 16));
    let utf8 = null;
    try {
      const text = new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array(bytes));
      if (!/[\u0000-\u0008\u000e-\u001f\u007f]/.test(text)) utf8 = text;
    } catch (_) { utf8 = null; }
    let integer = null;
    if (bytes.length > 0 && bytes.length <= 6) integer = bytes.reduceRight((sum, byte) => sum * 256 + byte, 0);
    return { hex: GattemuTimeline.spacedHex(hex, 64) || "(empty)", utf8, integer, length: bytes.length };
  }

  function renderGatt(services) {
    const box = $("gatt");
    if (box.contains(document.activeElement)) return;
    box.replaceChildren();
    const characteristics = [];
    for (const service of services) {
      const part = el("div", "service");
      part.append(el("div", "title", service.id + " — " + (service.name || service.uuid) + (service.handle ? " (handle " + service.handle + ")" : "")));
      const table = el("table", "chars");
      const head = el("tr");
      for (const title of ["id", "uuid", "handle", "flags", "value", ""]) head.append(el("th", null, title));
      table.append(head);
      for (const c of service.characteristics) {
        characteristics.push(c);
        const row = el("tr");
        row.dataset.characteristic = c.id;
        const views = valueViews(c.value);
        const valueCell = el("td");
        const grid = el("div", "value-views");
        grid.append(el("span", null, "hex"), el("span", "hex", views.hex));
        if (views.utf8 !== null && views.length) grid.append(el("span", null, "utf-8"), el("span", null, JSON.stringify(views.utf8)));
        if (views.integer !== null) grid.append(el("span", null, "int"), el("span", null, String(views.integer) + " (LE)"));
        grid.append(el("span", null, "bytes"), el("span", null, views.length + " / " + c.maxLength));
        valueCell.append(grid);
        const controls = el("td");
        const form = el("div", "set-value");
        const input = el("input");
        input.placeholder = "hex, e.g. 51 60";
        input.setAttribute("aria-label", "value for " + c.id);
        input.dataset.valueFor = c.id;
        const kind = el("select");
        kind.append(new Option("hex", "hex"), new Option("utf8", "utf8"), new Option("base64", "base64"));
        kind.setAttribute("aria-label", "value form for " + c.id);
        const body = () => ({ [kind.value]: input.value });
        form.append(kind, input, button("Set", () => act("set " + c.id, "PUT", "/v1/characteristics/" + segment(c.id) + "/value", body())));
        if (c.flags.includes("notify")) form.append(button("Notify", () => act("notified " + c.id, "POST", "/v1/characteristics/" + segment(c.id) + "/notify", body())));
        if (c.flags.includes("indicate")) form.append(button("Indicate", () => act("indicated " + c.id, "POST", "/v1/characteristics/" + segment(c.id) + "/indicate", body())));
        controls.append(form);
        row.append(el("td", "mono", c.id), el("td", "mono", c.name ? c.name + " " + c.uuid : c.uuid), el("td", null, c.handle || "–"),
          el("td", null, c.flags.join(", ")), valueCell, controls);
        table.append(row);
        for (const d of c.descriptors) {
          const descriptor = el("tr");
          descriptor.append(el("td", "muted", "  " + (d.id || "")), el("td", "mono muted", d.name ? d.name + " " + d.uuid : d.uuid), el("td"),
            el("td", "muted", d.flags.join(", ")), el("td", "hex", GattemuTimeline.spacedHex(d.value, 32)), el("td"));
          table.append(descriptor);
        }
      }
      part.append(table);
      box.append(part);
    }
    // Rebuilt only when the characteristics change: a refresh must not take the select away from the user.
    const select = document.querySelector("#fault-form select[name=characteristic]");
    const ids = [""].concat(characteristics.map((c) => c.id));
    if (ids.join("\n") !== Array.from(select.options, (option) => option.value).join("\n")) {
      const chosen = select.value;
      select.replaceChildren(new Option("(any)", ""));
      for (const c of characteristics) select.append(new Option(c.id, c.id));
      select.value = chosen;
    }
  }

  function renderFaults(faults, presets) {
    const body = $("faults");
    body.replaceChildren();
    for (const fault of faults) {
      const row = el("tr");
      row.dataset.fault = fault.id;
      let text = "on " + fault.on + (fault.characteristic ? " " + fault.characteristic : "") + (fault.central ? " from " + fault.central : "") + " → " + fault.summary;
      if (fault.nth > 1) text += " from #" + fault.nth;
      if (fault.count !== undefined) text += " ×" + fault.count;
      if (fault.probability < 1) text += " p=" + fault.probability;
      if (fault.exhausted) text += " (done)";
      const remove = button("Remove", () => act("removed " + fault.id, "DELETE", "/v1/faults/" + segment(fault.id)), "danger");
      row.append(el("td", "mono", fault.id), el("td", null, text), el("td", null, fault.matched), el("td", null, fault.fired), el("td"));
      row.lastChild.append(remove);
      body.append(row);
    }
    if (!faults.length) {
      const row = el("tr");
      const cell = el("td", "muted", "no faults installed");
      cell.colSpan = 5;
      row.append(cell);
      body.append(row);
    }
    const box = $("presets");
    box.replaceChildren();
    presets.forEach((preset, index) => {
      const name = preset.id || preset.description || "preset " + (index + 1);
      const install = button(name, () => {
        const copy = Object.assign({}, preset);
        if (copy.id && faults.some((fault) => fault.id === copy.id)) delete copy.id;  // installed already: a new id
        act("installed " + name, "POST", "/v1/faults", copy);
      });
      install.title = JSON.stringify(preset);
      box.append(install);
    });
    if (!presets.length) box.append(el("span", "muted", "the profile declares no faults"));
  }

  function renderCentralFilter(centrals) {
    const select = $("filter-central");
    const known = new Set(Array.from(select.options).map((option) => option.value));
    for (const address of centrals.map((c) => c.address).concat(timeline ? timeline.lanes : [])) {
      if (!known.has(address)) { select.append(new Option(address, address)); known.add(address); }
    }
  }

  // MARK: Fault form

  // The "New fault" form is built from the fault catalog this page carries as script data (#fault-catalog, made from
  // the server's FaultCatalog by scripts/fault-catalog): the action select lists every kind, `on` only the kind's
  // operations, and the value's fields follow the kind's JSON Schema (a flag, a bounded number, text with a pattern
  // or names, null, an object's members, alternatives), so a new kind needs no change here. Field names are the
  // value's path ("value", "value.min"; an alternatives select is "PATH:form").

  // The operations on a characteristic (FaultOperation.isAboutCharacteristic); the server refuses a characteristic
  // on the others, so a stale list here shows an error, never installs a wrong fault.
  const CHARACTERISTIC_OPERATIONS = ["read", "write", "notify", "indicate"];
  const CHANNEL_OPERATIONS = ["channel", "sdu", "send"];
  const faultForm = { kinds: [], value: null };

  function readCatalog() {
    try {
      const kinds = JSON.parse($("fault-catalog").textContent);
      return Array.isArray(kinds) ? kinds.filter((kind) => kind && typeof kind.name === "string" && Array.isArray(kind.operations)) : [];
    } catch (_) {
      return [];
    }
  }

  // The schemas a value may match: nested oneOf flattened.
  function alternatives(schema) {
    if (!schema || typeof schema !== "object") return [];
    return Array.isArray(schema.oneOf) ? schema.oneOf.flatMap(alternatives) : [schema];
  }

  const isFlag = (schema) => schema.type === "boolean" && Array.isArray(schema.enum) && schema.enum.length === 1 && schema.enum[0] === true;
  const isObject = (schema) => schema.type === "object" && schema.properties && typeof schema.properties === "object";
  const required = (schema) => (Array.isArray(schema.required) ? schema.required : []);

  // The forms a value can take, as the choices of its alternatives select: true, one text field for every scalar
  // alternative together ("value"), and each object.
  function choices(schema) {
    const leaves = alternatives(schema);
    const result = [];
    if (leaves.some(isFlag)) result.push({ key: "true", label: "true", flag: true });
    const scalars = leaves.filter((leaf) => !isFlag(leaf) && !isObject(leaf));
    if (scalars.length) result.push({ key: "value", label: "value", hint: scalarHint(scalars), scalars });
    for (const leaf of leaves.filter(isObject)) {
      const names = Object.keys(leaf.properties);
      const label = "{" + names.map((name) => name + (required(leaf).includes(name) ? "" : "?")).join(", ") + "}";
      result.push({ key: (required(leaf).length ? required(leaf) : names).join("+"), label, object: leaf });
    }
    return result;
  }

  // Words for a text field's accepted forms ("0–512", "a name, text", "empty for null").
  function scalarHint(scalars) {
    const words = [];
    for (const s of scalars) {
      const types = Array.isArray(s.type) ? s.type : [s.type];
      if (types.includes("integer") || types.includes("number")) {
        words.push((s.minimum ?? "") + "–" + (s.maximum ?? "") + (s.description ? " " + s.description : ""));
      } else if (Array.isArray(s.enum)) {
        words.push("a name");
      } else if (types.includes("string")) {
        words.push("text");
      } else if (types.includes("boolean")) {
        words.push("true or false");
      }
      if (s.nullable || types.includes("null")) words.push("empty for null");
    }
    return Array.from(new Set(words)).join(", ") || "value";
  }

  // The choice an example value takes.
  function choiceFor(list, value) {
    if (value === true && list.some((choice) => choice.flag)) return list.find((choice) => choice.flag);
    if (value && typeof value === "object" && !Array.isArray(value)) {
      const keys = Object.keys(value);
      const object = list.find((choice) => choice.object && required(choice.object).every((name) => keys.includes(name))
        && keys.every((name) => name in choice.object.properties));
      if (object) return object;
    }
    return list.find((choice) => choice.scalars) || list[0];
  }

  // A scalar typed in a text field, as JSON: a whole number or a number where the schema takes one, true/false
  // where it takes a boolean, null for empty (or "null") where it takes null, else the text.
  function scalarValue(text, scalars, optional) {
    const types = new Set(scalars.flatMap((s) => (Array.isArray(s.type) ? s.type : [s.type])));
    const nullable = types.has("null") || scalars.some((s) => s.nullable === true);
    if (text === "" && optional) return undefined;
    if ((text === "" || text === "null") && nullable) return null;
    if (types.has("integer") && /^-?[0-9]{1,15}$/.test(text)) return Number.parseInt(text, 10);
    if (types.has("number") && text !== "" && Number.isFinite(Number(text))) return Number(text);
    if (types.has("boolean") && (text === "true" || text === "false")) return text === "true";
    return text;
  }

  // An editor for a value of `schema` at `path`: its element and read(); filled from `example`.
  function valueEditor(schema, path, example, optional) {
    const list = choices(schema);
    const box = el("span", "fault-field");
    let current = null;
    const show = (choice, value) => {
      current = choice;
      box.replaceChildren();
      if (!choice) return;
      if (choice.flag) {
        box.append(el("span", "mono", "true"));
      } else if (choice.scalars) {
        const input = el("input");
        input.name = path;
        input.autocomplete = "off";
        input.title = choice.hint;
        input.placeholder = choice.hint;
        const names = choice.scalars.flatMap((s) => (Array.isArray(s.enum) ? s.enum.filter((n) => typeof n === "string") : []));
        if (names.length) {
          const datalist = el("datalist");
          datalist.id = "fault-names-" + path.replace(/[^A-Za-z0-9]/g, "-");
          for (const name of names) datalist.append(new Option(name, name));
          input.setAttribute("list", datalist.id);
          box.append(datalist);
        }
        if (value !== undefined && value !== null && typeof value !== "object") input.value = String(value);
        box.append(input);
      } else if (choice.object) {
        choice.editors = [];
        for (const [name, member] of Object.entries(choice.object.properties)) {
          const optionalMember = !required(choice.object).includes(name);
          const editor = valueEditor(member, path + "." + name, value && typeof value === "object" ? value[name] : undefined, optionalMember);
          const label = el("label", null, name + (optionalMember ? " (optional)" : ""));
          label.append(editor.node);
          box.append(label);
          choice.editors.push({ name, editor });
        }
      }
    };
    const node = el("span", "fault-value-part");
    if (list.length > 1) {
      const select = el("select");
      select.name = path + ":form";
      select.setAttribute("aria-label", path + " form");
      for (const choice of list) select.append(new Option(choice.label, choice.key));
      const chosen = choiceFor(list, example);
      select.value = chosen.key;
      select.addEventListener("change", () => show(list.find((choice) => choice.key === select.value), undefined));
      node.append(select);
    }
    node.append(box);
    show(choiceFor(list, example), example);
    const read = () => {
      if (!current) return undefined;
      if (current.flag) return true;
      if (current.scalars) return scalarValue(String(box.querySelector("input").value).trim(), current.scalars, optional);
      const object = {};
      for (const { name, editor } of current.editors) {
        const member = editor.read();
        if (member !== undefined) object[name] = member;
      }
      return object;
    };
    return { node, read };
  }

  function selectedKind() {
    const action = document.querySelector("#fault-form select[name=action]").value;
    return faultForm.kinds.find((kind) => kind.name === action) || null;
  }

  // The example spec of a kind, or {} when it is not JSON.
  function exampleOf(kind) {
    try {
      const spec = JSON.parse(kind.example);
      return spec && typeof spec === "object" ? spec : {};
    } catch (_) {
      return {};
    }
  }

  // Rebuilds `on` and the value's fields for the chosen kind; the value starts as the kind's example.
  function renderFaultKind() {
    const form = $("fault-form");
    const kind = selectedKind();
    const on = form.querySelector("select[name=on]");
    on.replaceChildren();
    const box = $("fault-value");
    box.replaceChildren(el("legend", null, kind ? kind.name : "value"));
    faultForm.value = null;
    $("fault-help").textContent = "";
    if (!kind) return;
    if (kind.implicitOn) on.append(new Option("(" + kind.implicitOn + ")", ""));
    for (const operation of kind.operations) on.append(new Option(operation, operation));
    if (!kind.implicitOn) on.value = kind.suggestedOn && kind.operations.includes(kind.suggestedOn) ? kind.suggestedOn : kind.operations[0];
    faultForm.value = valueEditor(kind.schema, "value", exampleOf(kind)[kind.name], false);
    box.append(faultForm.value.node);
    $("fault-help").textContent = kind.summary + " Value: " + kind.value + ". Example: " + kind.example;
    renderFaultScope();
  }

  // Characteristic only for an operation on one, channel only for one on an L2CAP channel, after only on start.
  function renderFaultScope() {
    const form = $("fault-form");
    const kind = selectedKind();
    const on = form.querySelector("select[name=on]").value || (kind && kind.implicitOn) || "";
    form.querySelector("[data-scope=characteristic]").hidden = !CHARACTERISTIC_OPERATIONS.includes(on);
    form.querySelector("[data-scope=after]").hidden = on !== "start";
    form.querySelector("[data-scope=percent]").hidden = on !== "upload";
    form.querySelector("[data-scope=channel]").hidden = !CHANNEL_OPERATIONS.includes(on);
  }

  function setUpFaultForm() {
    faultForm.kinds = readCatalog();
    const action = document.querySelector("#fault-form select[name=action]");
    for (const kind of faultForm.kinds) action.append(new Option(kind.name, kind.name));
    action.addEventListener("change", renderFaultKind);
    document.querySelector("#fault-form select[name=on]").addEventListener("change", renderFaultScope);
    renderFaultKind();
  }

  // The spec the form describes; the server judges it (its error is shown in the form).
  function faultFromForm(form) {
    const data = new FormData(form);
    const kind = selectedKind();
    const spec = {};
    const text = (name) => String(data.get(name) || "").trim();
    const number = (value) => (/^-?[0-9]{1,15}$/.test(value) ? Number.parseInt(value, 10) : value);
    if (text("on")) spec.on = text("on");
    if (!form.querySelector("[data-scope=characteristic]").hidden && text("characteristic")) spec.characteristic = text("characteristic");
    if (text("central")) spec.central = text("central");
    if (kind && faultForm.value) spec[kind.name] = faultForm.value.read();
    for (const key of ["nth", "count", "seed"]) if (text(key)) spec[key] = number(text(key));
    if (text("probability")) spec.probability = Number.isFinite(Number(text("probability"))) ? Number(text("probability")) : text("probability");
    if (!form.querySelector("[data-scope=after]").hidden && text("after")) spec.after = number(text("after"));
    if (!form.querySelector("[data-scope=percent]").hidden && text("percent")) spec.percent = number(text("percent"));
    if (!form.querySelector("[data-scope=channel]").hidden && text("channel")) spec.channel = text("channel");
    if (text("id")) spec.id = text("id");
    return spec;
  }

  async function installFault(form) {
    const problem = $("fault-error");
    try {
      await api("POST", "/v1/faults", faultFromForm(form));
      problem.hidden = true;
      problem.textContent = "";
      show("fault installed", true);
      scheduleRefresh(100);
    } catch (error) {
      problem.textContent = error.message;
      problem.hidden = false;
      show("fault not installed: " + error.message);
    }
  }

  // MARK: Events

  async function loadEvents() {
    try {
      const page = await api("GET", "/v1/events?since=0&limit=10000");
      timeline.add(page.events);
      noteBluetoothd(page.events);
      updateCount();
    } catch (error) {
      if (error.status !== 401) show("events: " + error.message);
    }
  }

  // Follows bluetoothd-lost / bluetoothd-back in `events` (the stream's badge shows the loss until it is over,
  // across reconnections); true when one was there.
  function noteBluetoothd(events) {
    let seen = false;
    for (const event of events) {
      if (event.event !== "bluetoothd-lost" && event.event !== "bluetoothd-back") continue;
      state.bluetoothdLost = event.event === "bluetoothd-lost";
      seen = true;
    }
    return seen;
  }

  function setStream(text, good) {
    const badge = $("stream-badge");
    badge.textContent = "stream: " + text;
    badge.className = "badge " + (good ? "on" : "bad");
  }

  // Reads /v1/events/stream with fetch() (so the token header goes with it); reconnects after errors or
  // when the server ends the stream, resuming after the last event seen.
  async function stream() {
    const abort = new AbortController();
    state.streamAbort = abort;
    try {
      const response = await fetch(scoped("/v1/events/stream?since=" + timeline.lastSeq), { headers: headers(false), signal: abort.signal, cache: "no-store" });
      if (response.status === 401) { askForToken(); setStream("needs token", false); return; }
      if (!response.ok || !response.body) throw new Error("HTTP " + response.status);
      setStream(state.bluetoothdLost ? "live — bluetoothd lost" : "live", !state.bluetoothdLost);
      state.reconnectDelay = 500;
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      let batch = [];
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        if (buffer.length > 4 << 20) throw new Error("event stream message too large");
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const message = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = message.split("\n").filter((line) => line.startsWith("data: ")).map((line) => line.slice(6)).join("\n");
          if (!data) continue;
          try { batch.push(JSON.parse(data)); } catch (_) { /* not an event */ }
        }
        // Each chunk read is one batch (a burst arrives as few large chunks); the timeline draws at the next
        // frame on its own, so the events are in it at once.
        if (batch.length) {
          const events = batch;
          batch = [];
          receive(events);
        }
      }
      setStream("reconnecting", false);
    } catch (error) {
      if (abort.signal.aborted) return;
      setStream("lost (" + error.message + "), retrying", false);
    }
    setTimeout(stream, state.reconnectDelay);
    state.reconnectDelay = Math.min(5000, state.reconnectDelay * 2);
  }

  function receive(events) {
    if (!events.length) return;
    // A restarted gattemu starts again from seq 1: start the timeline over.
    if (events[0].seq <= 1 && timeline.lastSeq > 1 && !timeline.has(events[0].seq)) { timeline.clear(); state.bluetoothdLost = false; }
    timeline.add(events);
    updateCount();
    if (events.some((event) => event.event === "firmware")) scheduleFirmware();
    if (events.some((event) => event.event !== "read" && event.event !== "answer" && event.event !== "note" && event.event !== "firmware")) scheduleRefresh(250);
    if (noteBluetoothd(events)) setStream(state.bluetoothdLost ? "live — bluetoothd lost" : "live", !state.bluetoothdLost);
    renderCentralFilter(state.status ? state.status.centrals : []);
  }

  function updateCount() {
    $("timeline-count").textContent = timeline.visible.length + " of " + timeline.events.length + " events"
      + (timeline.dropped ? " (" + timeline.dropped + " older ones no longer kept here; the events file has them)" : "");
  }

  const KIND_GROUPS = GattemuTimeline.KIND_GROUPS;

  function applyFilter() {
    const group = $("filter-kinds").value;
    timeline.setFilter({ text: $("filter-text").value, central: $("filter-central").value, kinds: group ? new Set(KIND_GROUPS[group]) : null });
    updateCount();
  }

  async function download() {
    try {
      const page = await api("GET", "/v1/events?since=0&limit=10000");
      const text = page.events.map((event) => JSON.stringify(event)).join("\n") + "\n";
      const link = el("a");
      link.href = URL.createObjectURL(new Blob([text], { type: "application/x-ndjson" }));
      link.download = "gattemu-events.jsonl";
      document.body.append(link);
      link.click();
      setTimeout(() => { URL.revokeObjectURL(link.href); link.remove(); }, 1000);
    } catch (error) {
      show("download: " + error.message);
    }
  }

  // MARK: Devices

  // The device switcher, shown when gattemu runs several devices: the page shows one at a time (its status,
  // actions and events); `#device=ID` in the address picks one.
  async function loadDevices() {
    let devices = [];
    try { devices = (await api("GET", "/v1/devices")).devices || []; } catch (_) { devices = []; }
    const select = $("device-select");
    select.hidden = devices.length < 2;
    if (devices.length < 2) return;
    select.replaceChildren(...devices.map((device) => {
      const option = new Option(device.id + (device.state === "running" ? "" : " (" + device.state + ")"), device.id);
      option.title = [device.profile, device.adapterName || device.adapter, device.reason].filter(Boolean).join(" — ");
      return option;
    }));
    const asked = /(?:^#|&)device=([^&]*)/.exec(location.hash);
    const wanted = asked ? decodeURIComponent(asked[1]) : state.device;
    state.device = devices.some((device) => device.id === wanted) ? wanted : devices[0].id;
    select.value = state.device;
  }

  function switchDevice(id) {
    state.device = id;
    $("card-firmware").hidden = true;
    $("card-channels").hidden = true;
    if (state.streamAbort) state.streamAbort.abort();
    timeline.clear();
    state.bluetoothdLost = false;
    state.status = null;
    refresh();
    loadEvents().then(stream);
  }

  // MARK: Start

  // `#token=…` in the address (`gattemu run` prints the dashboard's address so): into sessionStorage, out of the
  // address bar and the history.
  function takeTokenFromAddress() {
    const match = /(?:^#|&)token=([^&]*)/.exec(location.hash);
    if (!match) return;
    const token = decodeURIComponent(match[1]).trim();
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    history.replaceState(null, "", location.pathname + location.search);
  }

  function start() {
    takeTokenFromAddress();
    timeline = new GattemuTimeline.Timeline($("timeline"), {
      onSelect: (event) => { $("event-detail").textContent = JSON.stringify(event, null, 1); },
      limit: EVENTS_KEPT,
    });
    window.gattemuTimeline = timeline;  // for tests and the console
    $("token-form").addEventListener("submit", (submit) => {
      submit.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, $("token-input").value.trim());
      $("token-input").value = "";
      $("token-form").hidden = true;
      loadDevices().then(() => {
        refresh();
        loadEvents();
        if (state.streamAbort) state.streamAbort.abort();
        stream();
      });
    });
    $("variant-apply").addEventListener("click", () => {
      const variant = $("variant-select").value || null;
      act("advertising " + (variant || "(base)"), "PUT", "/v1/advertisement", { variant });
    });
    $("reset").addEventListener("click", () => act("reset", "POST", "/v1/reset"));
    $("faults-clear").addEventListener("click", () => act("faults cleared", "DELETE", "/v1/faults"));
    setUpFaultForm();
    $("fault-form").addEventListener("submit", (submit) => {
      submit.preventDefault();
      installFault(submit.target);
    });
    $("filter-text").addEventListener("input", applyFilter);
    $("filter-central").addEventListener("change", applyFilter);
    $("filter-kinds").addEventListener("change", applyFilter);
    $("follow").addEventListener("click", () => timeline.scrollToEnd());
    $("download").addEventListener("click", download);
    $("device-select").addEventListener("change", (change) => switchDevice(change.target.value));
    loadDevices().then(() => {
      refresh();
      loadEvents().then(stream);
    });
    setInterval(refresh, 5000);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
