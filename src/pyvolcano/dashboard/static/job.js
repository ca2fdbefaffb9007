// The Job page: job why's diagnosis (stage, reason, message, hint, per-resource figures, the
// claims and their PVs of a volume diagnosis, the ResourceClaims and their devices of a DRA
// diagnosis, the nodes' predicate failures, preemption), the pods and their nodes, the PodGroup's conditions
// and recent Events; with --allow-actions on a live cluster, the vcctl job actions.

import { h, s, amount, table, section, route } from "./dom.js";
import { actionButtons } from "./actions.js";

function keyValues(pairs) {
  return h("dl", { class: "kv" }, pairs.filter(([, v]) => v !== null && v !== undefined && v !== "")
    .map(([k, v]) => [h("dt", {}, k), h("dd", { "data-field": k }, v)]));
}

function histogram(failures) {
  const entries = Object.entries(failures);
  const top = Math.max(...entries.map(([, n]) => n), 1);
  const rowHeight = 22;
  const width = 240;
  return h("div", { class: "histogram" }, entries.map(([reason, n]) => h("div", { class: "hrow" },
    s("svg", { width, height: rowHeight - 6, viewBox: `0 0 ${width} ${rowHeight - 6}` },
      s("rect", { class: "hbar", x: 0, y: 0, width: (n / top) * width, height: rowHeight - 6 })),
    h("span", { class: "num" }, String(n)), h("span", { class: "hreason" }, reason))));
}

function diagnosis(d) {
  if (!d) return section("Diagnosis", h("p", { class: "muted", id: "not-pending" },
    "not pending: every pod the job needs is placed or running"));
  const t = d.tasks;
  const parts = [keyValues([
    ["stage", d.stage], ["reason", d.reason], ["message", d.message], ["hint", d.hint],
    ["pods", t ? `${t.total} total, minAvailable ${t.min_available}, ${t.placed} placed, ${t.unplaced} unplaced, ` +
             `${t.gated} gated` : null],
    ["pod", d.task ? `${d.task} (figures per ${d.scope})` : null],
  ])];
  if (d.resources && d.resources.length) {
    parts.push(table(["resource", "requested", "free in queue", "free in cluster", "free on best node", "best node",
                      "shortfall"],
      d.resources.map((r) => h("tr", { "data-resource": r.name }, h("td", {}, r.name),
        [r.requested, r.free_in_queue, r.free_in_cluster, r.free_on_best_node].map((v) =>
          h("td", { class: "num" }, amount(r.name, v))),
        h("td", {}, r.best_node || "-"),
        h("td", { class: r.shortfall > 0 ? "num short" : "num" }, amount(r.name, r.shortfall)))),
      { class: "figures" }));
  }
  if (d.volumes && d.volumes.length) {
    parts.push(h("h3", {}, "Claims"), table(["claim / PV", "class", "binding", "requested", "status or nodes",
                                              "state"],
      d.volumes.flatMap((v) => [
        h("tr", { "data-claim": v.claim }, h("td", {}, v.claim), h("td", {}, v.class || "-"),
          h("td", {}, v.binding_mode || "no such class"), h("td", { class: "num" }, amount("memory", v.requested)),
          h("td", {}, v.status), h("td", {}, v.volume || "")),
        ...v.pvs.map((p) => h("tr", { "data-pv": p.name }, h("td", {}, `  ${p.name}`), h("td", {}), h("td", {}),
          h("td", {}), h("td", {}, p.nodes ? `on ${p.nodes}` : "any node"), h("td", {}, p.state))),
      ]), { class: "figures", id: "claims" }));
  }
  if (d.devices && d.devices.length) {
    parts.push(h("h3", {}, "ResourceClaims"), table(["claim / request", "status or class", "wants", "matching",
                                                     "free", "most free on"],
      d.devices.flatMap((c) => [
        h("tr", { "data-device-claim": c.claim }, h("td", {}, c.claim), h("td", {}, c.status), h("td", {}),
          h("td", {}), h("td", {}), h("td", {})),
        ...c.requests.map((r) => h("tr", { "data-request": r.request }, h("td", {}, `  ${r.request}`),
          h("td", {}, r.note || r.class), h("td", { class: "num" }, r.wants),
          h("td", { class: "num" }, String(r.matching)), h("td", { class: "num" }, String(r.free)),
          h("td", {}, r.best_node ? `${r.best_node} (${r.free_on_best_node})` : "-"))),
      ]), { class: "figures", id: "device-claims" }));
  }
  if (d.node_failures && Object.keys(d.node_failures).length) {
    parts.push(h("h3", {}, `Nodes: ${d.nodes.failed}/${d.nodes.total} failed`), histogram(d.node_failures));
  }
  const p = d.preemption;
  if (p && p.why_not) {
    parts.push(h("h3", {}, "Preemption"), h("p", { id: "preemption" },
      `${p.could_help ? `${p.action} could help` : "would not help"}: ${p.why_not}`));
    if (p.victims.length) parts.push(h("p", {}, "victims: ", p.victims.join(", ")));
  }
  return section("Diagnosis", parts);
}

// The reservation hook: a job page may carry `reservation`, {nodes: [names], start: RFC 3339 or
// null, reason: text or null}, when the scheduler holds nodes for the job; absent otherwise.
function reservation(r) {
  if (!r) return null;
  return section("Reservation", h("div", { id: "reservation" }, keyValues([
    ["nodes", (r.nodes || []).join(", ")], ["expected start", r.start], ["reason", r.reason]])));
}

export async function renderJob(app, [namespace, name]) {
  const page = await app.fetchJSON("/api/job", { key: `${namespace}/${name}`, ...(app.t !== null ? { t: app.t } : {}) });
  const row = page.row;
  const title = h("h1", {}, `${namespace}/`, h("span", { class: "job-name" }, name));
  const actions = app.meta.kind === "live" && app.meta.actions && row.job
    ? actionButtons(app, "job", { namespace, name: row.job }, ["suspend", "resume", "delete"]) : null;
  return h("div", { id: "job-view" },
    h("p", {}, h("a", { href: route("jobs") }, "← jobs")), title,
    keyValues([["queue", page.queue], ["phase", page.phase], ["minMember", String(page.min_member)],
               ["job", row.job], ["position", row.position === null ? null : String(row.position)],
               ["estimated start", row.start || row.start_message]]),
    actions,
    reservation(page.reservation),
    diagnosis(page.diagnosis),
    section("Pods", table(["pod", "status", "node", "requests"], page.pods.map((p) => h("tr", {},
      h("td", {}, p.name), h("td", {}, p.status), h("td", {}, p.node || "-"),
      h("td", {}, Object.entries(p.requests).map(([n, v]) => `${n} ${amount(n, v)}`).join(", ")))))),
    section("Nodes", h("p", { id: "job-nodes" }, page.nodes.length ? page.nodes.join(", ") : "none")),
    section("Conditions", table(["type", "status", "reason", "message", "time"], page.conditions.map((c) =>
      h("tr", {}, h("td", {}, c.type), h("td", {}, c.status), h("td", {}, c.reason), h("td", {}, c.message),
        h("td", {}, c.time || ""))))),
    section("Events", page.events.length ? table(["time", "type", "reason", "object", "message", "count"],
      page.events.map((e) => h("tr", { class: e.type === "Warning" ? "warning" : "" }, h("td", {}, e.time || ""),
        h("td", {}, e.type), h("td", {}, e.reason), h("td", {}, e.object), h("td", { class: "message" }, e.message),
        h("td", { class: "num" }, e.count)))) : h("p", { class: "muted" }, "none")));
}
