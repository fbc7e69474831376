// gattemu report: the timeline of a recorded run (`gattemu report EVENTS.jsonl`), from the events embedded
// in this file. Uses timeline.js, the dashboard's drawing code. Text only, never HTML.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const el = (tag, className, text) => {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = String(text);
    return node;
  };
  const data = JSON.parse($("events").textContent);
  const timeline = new GattemuTimeline.Timeline($("timeline"), {
    onSelect: (event) => { $("event-detail").textContent = JSON.stringify(event, null, 1); },
  });
  window.gattemuTimeline = timeline;
  timeline.follow = false;
  timeline.add(data.events);
  timeline.viewport.scrollTop = 0;

  const summary = timeline.summary();
  const box = $("summary");
  const duration = GattemuTimeline.formatTime(summary.last - summary.first);
  box.append(el("div", null, summary.total + " events over " + duration), el("div", null, summary.faults + " fault" + (summary.faults === 1 ? "" : "s") + " fired"));
  const counts = el("div", "summary");
  for (const kind of GattemuTimeline.KINDS) {
    if (summary.kinds[kind]) counts.append(el("span", kind === "fault" || kind === "error" ? "bad" : null, kind + ": " + summary.kinds[kind]));
  }
  box.append(counts);
  // The first SHOWN centrals (in order of appearance) in the summary and the central filter, then how many more:
  // a run with 100,000 centrals stays readable and opens quickly (the text filter finds any central).
  const SHOWN = 100;
  const centrals = el("div", "summary");
  for (const [address, count] of summary.centrals) {
    if (centrals.childElementCount === SHOWN) break;
    centrals.append(el("span", "mono", address + ": " + count + " events"));
  }
  if (summary.centrals.size > SHOWN) centrals.append(el("span", null, "and " + (summary.centrals.size - SHOWN) + " more"));
  if (summary.centrals.size) box.append(el("h3", null, "Centrals"), centrals);
  // A rig's devices (each event names its own): one lane each in the timeline, their counts here.
  if (summary.devices.size) {
    const devices = el("div", "summary");
    for (const [id, count] of summary.devices) {
      if (devices.childElementCount === SHOWN) break;
      devices.append(el("span", "mono", id + ": " + count + " events"));
    }
    if (summary.devices.size > SHOWN) devices.append(el("span", null, "and " + (summary.devices.size - SHOWN) + " more"));
    box.append(el("h3", null, "Devices"), devices);
  }
  // A firmware-update target's uploads (each chunk's event says how far it got) and its milestones: upload complete,
  // marked for test, confirmed, reset, booted.
  if (summary.uploads.length || summary.kinds.firmware) {
    const firmware = el("div", "firmware");
    for (const upload of summary.uploads.slice(0, SHOWN)) {
      const line = el("div", "upload");
      const bar = document.createElement("progress");
      bar.max = upload.total;
      bar.value = Math.min(upload.done, upload.total);
      line.append(bar, el("span", "mono", (upload.device ? "[" + upload.device + "] " : "") + "upload " + GattemuTimeline.formatProgress(upload.done, upload.total)
        + (upload.complete ? ", complete" : ", stopped there") + " in " + GattemuTimeline.formatTime(upload.last - upload.first)));
      firmware.append(line);
    }
    if (summary.uploads.length > SHOWN) firmware.append(el("div", null, "and " + (summary.uploads.length - SHOWN) + " more uploads"));
    const milestones = timeline.events.filter((event) => event.event === "firmware" && typeof event.detail === "string" && event.detail.startsWith("firmware: "));
    for (const event of milestones.slice(0, SHOWN)) {
      firmware.append(el("div", "mono", GattemuTimeline.formatTime(event.t) + " " + (event.device ? "[" + event.device + "] " : "") + event.detail.slice("firmware: ".length)));
    }
    box.append(el("h3", null, "Firmware update"), firmware);
  }
  if (data.notes.length) box.append(el("p", "message", data.notes.join(" ")));

  const select = $("filter-central");
  for (const address of timeline.lanes.slice(0, SHOWN)) select.append(new Option(address, address));
  if (timeline.lanes.length > SHOWN) {
    const more = new Option("and " + (timeline.lanes.length - SHOWN) + " more (type an address in the text filter)", "");
    more.disabled = true;
    select.append(more);
  }
  const groups = GattemuTimeline.KIND_GROUPS;
  const apply = () => {
    const group = $("filter-kinds").value;
    timeline.setFilter({ text: $("filter-text").value, central: select.value, kinds: group ? new Set(groups[group]) : null });
    $("timeline-count").textContent = timeline.visible.length + " of " + timeline.events.length + " events";
  };
  $("filter-text").addEventListener("input", apply);
  select.addEventListener("change", apply);
  $("filter-kinds").addEventListener("change", apply);
  apply();
})();
