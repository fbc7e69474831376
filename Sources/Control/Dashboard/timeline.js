// gattemu timeline: events drawn as a sequence diagram (central ↔ gattemu), one lane per central; a rig's events
// (each with its `device`) get one lane per device on gattemu's side, each event drawn from its device's lane.
// Shared by the dashboard (served at /timeline.js) and `gattemu report` (inlined into its HTML file).
// Only ever writes text (textContent), never HTML: event fields carry what a phone wrote.
// Virtualised: only the rows in view (plus a margin) and the lanes that fit the width exist in the DOM, and
// adding events is linear in their number, so 100,000 events from as many centrals open in seconds.
"use strict";

const GattemuTimeline = (() => {
  const ROW = 24;            // px per event row
  const OVERSCAN = 12;       // rows rendered above and below the view
  const LANE_GATTEMU = "gattemu";
  const DEVICE_SPAN = 140;   // px between two devices' lanes
  // Which way an event goes: from the central to gattemu (→), back (←), or stays on gattemu's lane (•).
  const INBOUND = new Set(["connected", "disconnected", "mtu", "subscribed", "unsubscribed", "read", "write", "confirmed", "paired"]);
  const OUTBOUND = new Set(["answer", "notify", "indicate"]);
  // Which way an event goes between its central and gattemu: "in", "out", or null (it stays on gattemu's lane). An
  // L2CAP channel's events say it in their detail: a channel opened and an SDU received come in, an SDU sent goes out.
  function flow(event) {
    if (INBOUND.has(event.event)) return "in";
    if (OUTBOUND.has(event.event)) return "out";
    if (event.event === "channel" && typeof event.detail === "string") {
      if (event.detail.startsWith("sdu in ") || event.detail.startsWith("open ")) return "in";
      if (event.detail.startsWith("sdu out ")) return "out";
    }
    return null;
  }
  const KINDS = ["started", "stopped", "advertising", "advertising-stopped", "advertisement-changed", "connected", "disconnected",
    "mtu", "subscribed", "unsubscribed", "read", "write", "answer", "notify", "indicate", "confirmed", "rule", "fault", "note",
    "error", "bluetoothd-lost", "bluetoothd-back", "refused", "pairing", "paired", "unpaired", "relayed", "device-lost",
    "device-back", "firmware", "channel"];
  // The kind filter's groups (the dashboard's and the report's "kinds" select).
  const KIND_GROUPS = {
    gatt: ["read", "write", "answer", "notify", "indicate", "confirmed", "subscribed", "unsubscribed", "mtu"],
    faults: ["fault", "error", "refused", "bluetoothd-lost", "bluetoothd-back"],
    links: ["connected", "disconnected", "advertising", "advertising-stopped", "advertisement-changed", "started", "stopped",
      "bluetoothd-lost", "bluetoothd-back", "pairing", "paired", "unpaired", "device-lost", "device-back"],
    firmware: ["firmware"],
    channels: ["channel"],
  };

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  // "0a1b" → "0a 1b" (at most `max` bytes shown, then "…").
  function spacedHex(hex, max) {
    if (typeof hex !== "string") return "";
    const pairs = hex.match(/../g) || [];
    const shown = pairs.slice(0, max).join(" ");
    return pairs.length > max ? shown + " … (" + pairs.length + " bytes)" : shown;
  }

  function formatTime(ms) {
    if (typeof ms !== "number" || !isFinite(ms)) return "";
    if (ms < 1000) return ms.toFixed(1) + " ms";
    if (ms < 60000) return (ms / 1000).toFixed(3) + " s";
    const minutes = Math.floor(ms / 60000);
    return minutes + ":" + ((ms % 60000) / 1000).toFixed(3).padStart(6, "0");
  }

  // A label for an event's arrow or note.
  function label(event) {
    const parts = event.device ? ["[" + event.device + "]", event.event] : [event.event];
    if (event.characteristic) parts.push(event.characteristic);
    if (typeof event.value === "string") parts.push(event.value === "" ? "(empty)" : spacedHex(event.value, 24));
    if (event.detail) parts.push(event.detail);
    return parts.join(" ");
  }

  // Checks one parsed event: the fields the drawing relies on, of the right types (hostile input tolerated).
  function isEvent(event) {
    return event !== null && typeof event === "object" && Number.isInteger(event.seq) && typeof event.t === "number"
      && typeof event.event === "string"
      && ["central", "characteristic", "value", "detail", "device"].every((key) => event[key] === undefined || typeof event[key] === "string");
  }

  class Timeline {
    // container: an element to fill; options: {onSelect(event), limit: the most events kept (the oldest go first;
    // a tab open for days on a busy rig must not keep every event it ever streamed)}.
    constructor(container, options) {
      this.options = options || {};
      this.events = [];          // the events kept, in seq order
      this.dropped = 0;          // older events no longer kept (options.limit)
      this.visible = [];         // indices into events that pass the filter
      this.lanes = [];           // central addresses, in order of appearance
      this.laneIndex = new Map();  // central address → its index in lanes
      this.devices = [];         // a rig's device ids, in order of appearance (none: one lane, "gattemu")
      this.deviceIndex = new Map();  // device id → its index in devices
      this.filter = { kinds: null, text: "", central: "" };
      this.follow = true;
      this.container = container;
      container.classList.add("tl");
      this.header = el("div", "tl-header");
      this.header.style.overflow = "hidden";  // clipped like the rows: the lane names past the width never widen the page
      this.viewport = el("div", "tl-viewport");
      this.viewport.tabIndex = 0;
      this.spacer = el("div", "tl-spacer");
      this.rows = el("div", "tl-rows");
      this.viewport.append(this.spacer, this.rows);
      container.append(this.header, this.viewport);
      this.scheduled = false;
      this.viewport.addEventListener("scroll", () => {
        const bottom = this.viewport.scrollTop + this.viewport.clientHeight >= this.viewport.scrollHeight - ROW;
        this.follow = bottom;
        this.schedule();
      }, { passive: true });
      window.addEventListener("resize", () => this.schedule());
      this.renderHeader();
    }

    static get kinds() { return KINDS; }

    // Appends events (ignoring ones already shown and malformed ones); keeps seq order.
    add(list) {
      const last = this.events.length ? this.events[this.events.length - 1].seq : 0;
      let sorted = true;
      let lanesChanged = false;
      for (const event of list) {
        if (!isEvent(event)) continue;
        if (event.seq <= last && this.has(event.seq)) continue;
        if (this.events.length && event.seq < this.events[this.events.length - 1].seq) sorted = false;
        this.events.push(event);
        if (event.central && !this.laneIndex.has(event.central)) {
          this.laneIndex.set(event.central, this.lanes.length);
          this.lanes.push(event.central);
          lanesChanged = true;
        }
        if (event.device && !this.deviceIndex.has(event.device)) {
          this.deviceIndex.set(event.device, this.devices.length);
          this.devices.push(event.device);
          lanesChanged = true;
        }
      }
      if (!sorted) this.events.sort((a, b) => a.seq - b.seq);
      const limit = this.options.limit;
      if (limit && this.events.length > limit) {
        const excess = this.events.length - limit;
        this.events.splice(0, excess);
        this.dropped += excess;
      }
      if (lanesChanged) this.renderHeader();
      this.refilter();
    }

    has(seq) {
      // Binary search: events are in seq order.
      let low = 0, high = this.events.length - 1;
      while (low <= high) {
        const middle = (low + high) >> 1;
        const value = this.events[middle].seq;
        if (value === seq) return true;
        if (value < seq) low = middle + 1; else high = middle - 1;
      }
      return false;
    }

    clear() {
      this.events = [];
      this.dropped = 0;
      this.lanes = [];
      this.laneIndex = new Map();
      this.devices = [];
      this.deviceIndex = new Map();
      this.renderHeader();
      this.refilter();
    }

    get lastSeq() { return this.events.length ? this.events[this.events.length - 1].seq : 0; }

    // filter: {kinds: Set of kinds or null (all), text: substring, central: address or ""}.
    setFilter(filter) {
      this.filter = Object.assign({}, this.filter, filter);
      this.refilter();
    }

    matches(event) {
      const f = this.filter;
      if (f.kinds && !f.kinds.has(event.event)) return false;
      if (f.central && event.central && event.central !== f.central) return false;
      if (f.central && !event.central && INBOUND.has(event.event)) return false;
      if (f.text) {
        const haystack = label(event).toLowerCase() + " " + (event.central || "").toLowerCase();
        if (!haystack.includes(f.text.toLowerCase())) return false;
      }
      return true;
    }

    refilter() {
      this.visible = [];
      for (let i = 0; i < this.events.length; i++) if (this.matches(this.events[i])) this.visible.push(i);
      this.spacer.style.height = (this.visible.length * ROW) + "px";
      if (this.follow) this.viewport.scrollTop = this.viewport.scrollHeight;
      this.schedule();
    }

    // Counts per kind, per central, per device, and the faults: the report's summary.
    // centrals, devices: Maps from address or id to count, in order of appearance.
    summary() {
      const kinds = {}, centrals = new Map(), devices = new Map(), uploads = [];
      let faults = 0;
      for (const event of this.events) {
        kinds[event.event] = (kinds[event.event] || 0) + 1;
        if (event.central) centrals.set(event.central, (centrals.get(event.central) || 0) + 1);
        if (event.device) devices.set(event.device, (devices.get(event.device) || 0) + 1);
        if (event.event === "fault") faults++;
        if (isProgress(event.progress)) {
          // A firmware upload: one entry per image sent, from its first chunk to its last (a resumed upload goes on).
          const last = uploads.find((upload) => upload.device === event.device && upload.total === event.progress.total && upload.done <= event.progress.done && !upload.complete);
          const upload = last || { device: event.device, total: event.progress.total, first: event.t, done: 0, complete: false };
          if (!last) uploads.push(upload);
          upload.done = event.progress.done;
          upload.last = event.t;
          upload.complete = upload.done >= upload.total;
        }
      }
      return { total: this.events.length, kinds, centrals, devices, faults, uploads,
        first: this.events.length ? this.events[0].t : 0, last: this.events.length ? this.events[this.events.length - 1].t : 0 };
    }

    scrollToEnd() {
      this.follow = true;
      this.viewport.scrollTop = this.viewport.scrollHeight;
      this.schedule();
    }

    schedule() {
      if (this.scheduled) return;
      this.scheduled = true;
      requestAnimationFrame(() => { this.scheduled = false; this.render(); });
    }

    // A device's lane: gattemu's (the only one without devices) at 22 % of the drawing, a rig's next ones
    // DEVICE_SPAN apart.
    deviceX(index, width) {
      return Math.max(150, width * 0.22) + DEVICE_SPAN * Math.max(0, index);
    }

    // Where the centrals' lanes start: after the last device's.
    centralsLeft(width) {
      return this.deviceX(this.devices.length - 1, width);
    }

    laneX(index, width) {
      // The centrals' lanes spread over the rest of the drawing; -1: the first device's (gattemu's) lane.
      const left = this.centralsLeft(width);
      if (index < 0) return this.deviceX(0, width);
      const count = Math.max(1, this.lanes.length);
      const span = Math.max(120, (width - left - 40) / count);
      return left + span * (index + 0.5) + 20;
    }

    // How many lanes start within `width` (the viewport does not scroll sideways: the others are not drawn).
    lanesInView(width) {
      const left = this.centralsLeft(width);
      const span = Math.max(120, (width - left - 40) / Math.max(1, this.lanes.length));
      return Math.min(this.lanes.length, Math.max(0, Math.ceil((width - left - 20) / span + 0.5)));
    }

    // How many devices' lanes start within `width`.
    devicesInView(width) {
      let count = 0;
      while (count < this.devices.length && this.deviceX(count, width) < width) count++;
      return Math.max(1, count);
    }

    renderHeader() {
      this.header.replaceChildren();
      const width = this.viewport.clientWidth || this.container.clientWidth || 800;
      const time = el("span", "tl-lane-name tl-time-head", "time");
      this.header.append(time);
      for (let index = 0; index < this.devicesInView(width); index++) {
        const own = el("span", "tl-lane-name tl-gattemu", this.devices.length ? this.devices[index] : LANE_GATTEMU);
        own.style.left = (this.deviceX(index, width) - 40) + "px";
        this.header.append(own);
      }
      for (let index = 0; index < this.lanesInView(width); index++) {
        const name = el("span", "tl-lane-name", this.lanes[index]);
        name.style.left = (this.laneX(index, width) - 70) + "px";
        this.header.append(name);
      }
      this.renderedWidth = width;
    }

    render() {
      const width = this.viewport.clientWidth || 800;
      if (width !== this.renderedWidth) this.renderHeader();
      const top = this.viewport.scrollTop;
      const height = this.viewport.clientHeight || 400;
      const first = Math.max(0, Math.floor(top / ROW) - OVERSCAN);
      const last = Math.min(this.visible.length, Math.ceil((top + height) / ROW) + OVERSCAN);
      const fragment = document.createDocumentFragment();
      for (let row = first; row < last; row++) {
        const event = this.events[this.visible[row]];
        const device = event.device ? this.deviceIndex.get(event.device) : 0;
        fragment.append(this.renderRow(event, row, width, this.deviceX(device, width)));
      }
      this.rows.replaceChildren(fragment);
      // Lane lines behind the rows.
      const lines = document.createDocumentFragment();
      const xs = [];
      for (let index = 0; index < this.devicesInView(width); index++) xs.push(this.deviceX(index, width));
      for (let index = 0; index < this.lanesInView(width); index++) xs.push(this.laneX(index, width));
      for (const x of xs) {
        const line = el("div", "tl-lane-line");
        line.style.left = x + "px";
        line.style.top = (first * ROW) + "px";
        line.style.height = ((last - first) * ROW) + "px";
        lines.append(line);
      }
      this.rows.prepend(lines);
    }

    renderRow(event, row, width, gattemuX) {
      const node = el("div", "tl-row tl-" + event.event.replace(/[^a-z-]/g, ""));
      node.style.top = (row * ROW) + "px";
      node.dataset.seq = String(event.seq);
      node.append(el("span", "tl-time", formatTime(event.t)));
      const laneIndex = event.central ? this.laneIndex.get(event.central) : -1;
      const centralX = this.laneX(laneIndex, width);
      const text = label(event);
      const way = flow(event);
      if (laneIndex >= 0 && (way || event.event === "fault")) {
        const inbound = way === "in";
        const from = Math.min(gattemuX, centralX), to = Math.max(gattemuX, centralX);
        const arrow = el("div", "tl-arrow " + (event.event === "fault" ? "tl-arrow-fault" : inbound ? "tl-arrow-in" : "tl-arrow-out"));
        arrow.style.left = from + "px";
        arrow.style.width = Math.max(8, to - from) + "px";
        const caption = el("span", "tl-caption", text);
        caption.style.left = (from + 6) + "px";
        caption.style.maxWidth = Math.max(60, to - from - 12) + "px";
        node.append(arrow, caption);
      } else {
        const note = el("span", "tl-note", text);
        note.style.left = (gattemuX - 4) + "px";
        node.append(note);
      }
      node.title = "#" + event.seq + " " + formatTime(event.t) + " " + (event.central ? event.central + " " : "") + text;
      if (this.options.onSelect) node.addEventListener("click", () => this.options.onSelect(event));
      return node;
    }
  }

  function isProgress(progress) {
    return !!progress && Number.isSafeInteger(progress.done) && Number.isSafeInteger(progress.total) && progress.total > 0
      && progress.done >= 0;
  }

  // "4096 of 180240 bytes (2 %)".
  function formatProgress(done, total) {
    const percent = Math.floor((Math.min(done, total) * 100) / total);
    return done + " of " + total + " bytes (" + percent + " %)";
  }

  return { Timeline, label, spacedHex, formatTime, formatProgress, isEvent, KINDS, KIND_GROUPS };
})();
