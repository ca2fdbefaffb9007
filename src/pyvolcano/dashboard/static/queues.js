// The Queues view: the hierarchy as an indented tree; per resource one bar showing allocated
// (filled) against deserved (a mark), guarantee (a mark) and capability (the track).

import { h, s, amount, table } from "./dom.js";
import { actionButtons } from "./actions.js";

const WIDTH = 220;

/** One resource's bar as inline SVG, scaled to the largest known figure. */
export function resourceBar(r) {
  const known = [r.allocated, r.deserved, r.guarantee, r.capability].filter((v) => v !== null && v !== undefined);
  const top = Math.max(...known, 1e-9);
  const x = (v) => Math.max(0, Math.min(WIDTH, (v / top) * WIDTH));
  const parts = [s("rect", { class: "track", x: 0, y: 4, width: r.capability !== null ? x(r.capability) : WIDTH,
                             height: 12 })];
  parts.push(s("rect", { class: r.deserved !== null && r.allocated > r.deserved + 1e-9 ? "alloc over" : "alloc",
                         x: 0, y: 4, width: x(r.allocated || 0), height: 12 }));
  if (r.guarantee !== null) parts.push(s("line", { class: "guarantee", x1: x(r.guarantee), x2: x(r.guarantee), y1: 1,
                                                   y2: 19 }));
  if (r.deserved !== null) parts.push(s("line", { class: "deserved", x1: x(r.deserved), x2: x(r.deserved), y1: 0,
                                                  y2: 20 }));
  const title = `${r.name}: allocated ${amount(r.name, r.allocated)}, deserved ${amount(r.name, r.deserved)}, ` +
    `guarantee ${amount(r.name, r.guarantee)}, capability ${amount(r.name, r.capability)}`;
  return s("svg", { class: "bar", width: WIDTH, height: 20, viewBox: `0 0 ${WIDTH} 20`, role: "img",
                    "aria-label": title }, s("title", {}, title), parts);
}

function resourceCell(r) {
  return h("div", { class: "resource", "data-resource": r.name },
    h("span", { class: "rname" }, r.name), resourceBar(r),
    h("span", { class: "figures" },
      h("span", { class: "allocated" }, amount(r.name, r.allocated)), " / ",
      h("span", { class: "deserved" }, amount(r.name, r.deserved)),
      r.capability !== null ? [" of ", h("span", { class: "capability" }, amount(r.name, r.capability))] : null));
}

export async function renderQueues(app) {
  const data = await app.fetchJSON("/api/queues");
  const live = app.meta.kind === "live" && app.meta.actions;
  const rows = data.queues.map((q) => {
    const name = h("td", { class: "qname" }, q.children.length ? "▾ " : "", q.name);
    name.style.paddingLeft = `${0.5 + q.depth * 1.4}em`;
    return h("tr", { "data-queue": q.name },
      name,
      h("td", { class: `state ${q.state.toLowerCase()}` }, q.state),
      h("td", { class: "num" }, q.weight),
      h("td", { class: "num running" }, q.running),
      h("td", { class: "num pending" }, q.pending),
      h("td", {}, q.reclaimable ? "yes" : "no"),
      h("td", {}, q.resources.map(resourceCell)),
      live ? h("td", {}, actionButtons(app, "queue", { name: q.name }, ["open", "close"])) : null);
  });
  const headers = ["queue", "state", "weight", "running", "pending", "reclaimable",
                   `allocated / deserved${data.plugin ? ` (${data.plugin})` : ""}`];
  if (live) headers.push("actions");
  return h("div", { id: "queues-view" },
    h("p", { class: "legend" }, "bar: allocated (filled) against deserved (dark mark), guarantee (green mark) and ",
      "capability (track)"),
    table(headers, rows, { class: "queues" }));
}
