// The Nodes view: a GPU map. Every node is a card with one cell per GPU, filled by the share
// of it in use (memory-shared GPUs show their fraction), grouped by HyperNode when the cluster
// has them, under the fragmentation figures the simulator reports.

import { h, s, amount, round, route, section } from "./dom.js";

const CELL = 16;

function gpuCells(node) {
  if (!node.gpu_count) return h("span", { class: "muted" }, "no GPUs");
  const perRow = Math.min(node.gpu_count, 8);
  const rows = Math.ceil(node.gpu_count / perRow);
  const cells = node.gpus.map((g, i) => {
    const x = (i % perRow) * (CELL + 3);
    const y = Math.floor(i / perRow) * (CELL + 3);
    const used = Math.min(g.used, 1000) / 1000;
    const title = `GPU ${g.index}: ${Math.round(used * 100)}% used by ${g.holders} pod(s)` +
      (node.gpu_memory ? `, ${g.memory_used} of ${node.gpu_memory} memory` : "") + (g.healthy ? "" : ", unhealthy");
    return s("g", { class: `gpu${g.healthy ? "" : " unhealthy"}`, "data-used": g.used },
      s("title", {}, title),
      s("rect", { class: "gpu-free", x, y, width: CELL, height: CELL, rx: 2 }),
      used > 0 ? s("rect", { class: used < 1 ? "gpu-used part" : "gpu-used", x, y: y + CELL * (1 - used), width: CELL,
                             height: CELL * used, rx: 2 }) : null);
  });
  const width = perRow * (CELL + 3);
  const height = rows * (CELL + 3);
  return s("svg", { class: "gpus", width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
                    "aria-label": `${node.gpu_allocated} of ${node.gpu_count} GPUs allocated` }, cells);
}

// Reservations (the hook for a scheduler that keeps them): the nodes view model may carry
// `reservations`, a list of {job: "NS/NAME", nodes: [names], start: RFC 3339 or null}, the nodes
// a blocked gang has reserved and when it is expected to start. Each reserved node's card is
// marked (class "reserved", data-reserved-for the job) and the list is shown above the map.
// A source without reservations leaves the field out and nothing is drawn.
function reservedBy(data) {
  const out = new Map();
  for (const r of data.reservations || []) for (const n of r.nodes || []) out.set(n, r);
  return out;
}

function reservationList(data) {
  if (!data.reservations || !data.reservations.length) return null;
  return h("ul", { id: "reservations", class: "reservations" }, data.reservations.map((r) =>
    h("li", { "data-job": r.job }, h("a", { href: route("job", ...r.job.split("/")) }, r.job),
      ` reserves ${(r.nodes || []).length} node(s)`, r.start ? ` from ${r.start}` : "")));
}

function card(node, reservation) {
  return h("div", { class: `node${node.unschedulable ? " cordoned" : ""}${reservation ? " reserved" : ""}`,
                    "data-node": node.name, "data-reserved-for": reservation ? reservation.job : null,
                    title: reservation ? `reserved for ${reservation.job}` : null },
    h("div", { class: "node-name" }, node.name, node.gpu_model ? h("span", { class: "muted" }, ` ${node.gpu_model}`) : null),
    gpuCells(node),
    h("div", { class: "node-figures" },
      node.gpu_count ? h("span", { class: "gpu-figure" }, `${round(node.gpu_allocated)}/${node.gpu_count} GPU`) : null,
      node.shared ? h("span", { class: "shared" }, " shared") : null,
      h("span", { class: "muted" }, ` cpu ${round(node.cpu.used)}/${round(node.cpu.allocatable)}`,
        node.memory.allocatable !== null
          ? ` mem ${amount("memory", node.memory.used)}/${amount("memory", node.memory.allocatable)}` : null)));
}

export async function renderNodes(app) {
  const data = await app.fetchJSON("/api/nodes");
  const f = data.fragmentation;
  const figures = h("dl", { class: "kv frag" },
    h("dt", {}, "GPUs allocated"), h("dd", { id: "gpu-allocated" }, `${round(f.gpu_allocated)} of ${round(f.gpu_capacity)}`),
    h("dt", {}, "idle GPUs"), h("dd", { id: "gpu-idle" }, round(f.gpu_idle)),
    h("dt", {}, "fragmented GPUs"), h("dd", { id: "gpu-fragmentation", title: "idle GPUs a typical pending pod cannot use" },
      round(f.gpu_fragmentation)),
    f.topology_fragmentation !== null ? [
      h("dt", {}, "stranded in HyperNodes"),
      h("dd", { id: "topology-fragmentation" }, `${round(f.topology_fragmentation)} GPUs in ${f.fragmented_domains} domain(s)`),
    ] : null);
  const byName = new Map(data.nodes.map((n) => [n.name, n]));
  const reserved = reservedBy(data);
  const groups = data.groups.length ? data.groups : [{ name: null, path: [], nodes: data.nodes.map((n) => n.name) }];
  return h("div", { id: "nodes-view" }, figures, reservationList(data),
    groups.map((g) => h("section", { class: "group", "data-group": g.name || "" },
      data.groups.length ? h("h2", {}, g.name === null ? "in no HyperNode" : g.path.join(" ‹ "),
        g.tier !== null && g.tier !== undefined ? h("span", { class: "muted" }, ` tier ${g.tier}`) : null) : null,
      h("div", { class: "cards" }, g.nodes.map((n) => card(byName.get(n), reserved.get(n)))))));
}
