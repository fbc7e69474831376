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
  const centrals = el("div", "summary");
  for (const [address, count] of Object.entries(summary.centrals)) centrals.append(el("span", "mono", address + ": " + count + " events"));
  if (Object.keys(summary.centrals).length) box.append(el("h3", null, "Centrals"), centrals);
  if (data.notes.length) box.append(el("p", "message", data.notes.join(" ")));

  const select = $("filter-central");
  for (const address of timeline.lanes) select.append(new Option(address, address));
  const groups = {
    gatt: ["read", "write", "answer", "notify", "indicate", "confirmed", "subscribed", "unsubscribed", "mtu"],
    faults: ["fault", "error", "refused", "bluetoothd-lost", "bluetoothd-back"],
    links: ["connected", "disconnected", "advertising", "advertising-stopped", "advertisement-changed", "started", "stopped", "pairing", "paired", "unpaired"],
  };
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
