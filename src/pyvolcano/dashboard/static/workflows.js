// The Workflows view: each JobFlow as a small DAG (its steps in columns by depth, an arrow from
// every target to the step that waits for it, each box coloured by its job's phase), each
// CronJob with its schedule, next run and the jobs it created.

import { h, s, route, table, section } from "./dom.js";

const BOX_W = 132;
const BOX_H = 40;
const GAP_X = 48;
const GAP_Y = 14;

function phaseClass(phase) {
  return `step ${(phase || "waiting").toLowerCase()}`;
}

function dag(flow) {
  const ns = flow.name.split("/")[0];
  const columns = new Map();
  for (const step of flow.steps) {
    if (!columns.has(step.layer)) columns.set(step.layer, []);
    columns.get(step.layer).push(step);
  }
  const where = new Map();
  let rows = 0;
  for (const [layer, steps] of columns) {
    steps.forEach((step, i) => where.set(step.name, { x: layer * (BOX_W + GAP_X), y: i * (BOX_H + GAP_Y) }));
    rows = Math.max(rows, steps.length);
  }
  const width = Math.max(1, columns.size) * (BOX_W + GAP_X) - GAP_X;
  const height = Math.max(1, rows) * (BOX_H + GAP_Y) - GAP_Y;
  const edges = flow.steps.flatMap((step) => step.targets.filter((t) => where.has(t)).map((t) => {
    const a = where.get(t);
    const b = where.get(step.name);
    return s("line", { class: "edge", x1: a.x + BOX_W, y1: a.y + BOX_H / 2, x2: b.x - 4, y2: b.y + BOX_H / 2,
                       "marker-end": "url(#arrow)" });
  }));
  const boxes = flow.steps.map((step) => {
    const p = where.get(step.name);
    const when = step.phase ? step.phase
      : step.created ? `comes ${step.created.replace("T", " ").replace("Z", "")}` : "waiting";
    const box = s("g", { class: phaseClass(step.phase), "data-step": step.name, "data-phase": step.phase || "" },
      s("title", {}, `${step.job}: ${step.phase || "not created yet"}` +
        (step.targets.length ? `; after ${step.targets.join(", ")}` : "") +
        (step.start ? `; estimated start ${step.start}` : "")),
      s("rect", { x: p.x, y: p.y, width: BOX_W, height: BOX_H, rx: 4 }),
      s("text", { class: "step-name", x: p.x + 8, y: p.y + 16 }, step.name),
      s("text", { class: "step-phase", x: p.x + 8, y: p.y + 32 }, when));
    return step.phase ? s("a", { href: route("job", ns, step.job) }, box) : box;
  });
  return s("svg", { class: "dag", width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
                    "aria-label": `JobFlow ${flow.name}` },
    s("defs", {}, s("marker", { id: "arrow", viewBox: "0 0 8 8", refX: 8, refY: 4, markerWidth: 8, markerHeight: 8,
                                orient: "auto" }, s("path", { d: "M0,0 L8,4 L0,8 z", class: "arrowhead" }))),
    edges, boxes);
}

function jobflow(flow) {
  return h("section", { class: "workflow jobflow", "data-workflow": flow.name },
    h("h2", {}, `JobFlow ${flow.name} `, h("span", { class: `phase ${flow.phase.toLowerCase()}` }, flow.phase)),
    dag(flow));
}

function cronjob(cron) {
  const ns = cron.name.split("/")[0];
  const runs = cron.steps.slice().reverse().map((step) => h("tr", {},
    h("td", {}, h("a", { href: route("job", ns, step.job) }, step.job)),
    h("td", { class: `phase ${step.phase.toLowerCase()}` }, step.phase)));
  const coming = (cron.upcoming || []).map((u) => h("tr", { class: "coming" },
    h("td", {}, u.job), h("td", { class: "muted" }, `comes ${u.created}` + (u.start ? `, starts ${u.start}` : ""))));
  return h("section", { class: "workflow cronjob", "data-workflow": cron.name },
    h("h2", {}, `CronJob ${cron.name} `, h("span", { class: "muted" }, cron.phase)),
    h("dl", { class: "kv" },
      h("dt", {}, "schedule"), h("dd", {}, cron.schedule),
      h("dt", {}, "next run"), h("dd", { class: "next-run" }, cron.next_run || "-"),
      h("dt", {}, "last scheduled"), h("dd", {}, cron.last_schedule || "-")),
    runs.length || coming.length ? table(["job", "phase"], [...coming, ...runs]) : h("p", { class: "muted" }, "no runs yet"));
}

export async function renderWorkflows(app) {
  const data = await app.fetchJSON("/api/workflows");
  if (!data.workflows.length) {
    return h("div", { id: "workflows-view" }, h("p", { class: "muted" }, "no JobFlows or CronJobs"));
  }
  return h("div", { id: "workflows-view" },
    data.workflows.map((w) => (w.kind === "JobFlow" ? jobflow(w) : cronjob(w))));
}
