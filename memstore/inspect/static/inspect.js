// memstore inspect: the "as known at" slider and the fact detail panels.
// Reads only data-* attributes the server rendered; writes no HTML strings.
"use strict";

function knownAt(bar, t) {
  const recorded = Number(bar.dataset.recorded);
  const superseded = bar.dataset.superseded === "" ? null : Number(bar.dataset.superseded);
  return recorded <= t && (superseded === null || t < superseded);
}

function applyKnownAt(slider) {
  const steps = slider.dataset.steps ? slider.dataset.steps.split(",").map(Number) : [];
  const index = Number(slider.value);
  const label = document.getElementById("known-at-label");
  // The last position is "now": every row as currently believed.
  const now = index >= steps.length;
  const t = now ? Infinity : steps[index];
  label.textContent = now ? "now" : new Date(t).toISOString().replace("T", " ").slice(0, 19) + " UTC";
  for (const bar of document.querySelectorAll("g.bar")) {
    bar.classList.toggle("unknown", !knownAt(bar, t));
  }
  for (const row of document.querySelectorAll("tr.change")) {
    row.classList.toggle("future", Number(row.dataset.at) > t);
  }
}

function showDetail(bar) {
  for (const panel of document.querySelectorAll("section.fact-detail")) {
    panel.hidden = panel.id !== bar.dataset.detail;
  }
  for (const other of document.querySelectorAll("g.bar.selected")) {
    other.classList.remove("selected");
  }
  bar.classList.add("selected");
}

document.addEventListener("DOMContentLoaded", () => {
  const slider = document.getElementById("known-at");
  if (slider) {
    slider.addEventListener("input", () => applyKnownAt(slider));
    applyKnownAt(slider);
  }
  for (const bar of document.querySelectorAll("g.bar")) {
    bar.addEventListener("click", () => showDetail(bar));
    bar.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") showDetail(bar);
    });
  }
});
