// The Timeline view (simulation runs): GPU allocation, pending jobs and queue shares over the
// run, from the run's own series, as inline SVG line charts. A click on a chart moves the time
// slider, and with it the other views, to that instant.

import { h, s, duration, section } from "./dom.js";

const W = 760;
const H = 160;
const PAD = 36;

function chart(app, series, xs, t0, t1, lines, yMax, yLabel) {
  const x = (t) => PAD + ((t - t0) / Math.max(t1 - t0, 1e-9)) * (W - PAD - 8);
  const y = (v) => H - 18 - (v / Math.max(yMax, 1e-9)) * (H - 30);
  const paths = lines.map((line, i) => {
    // A sample holds until the next one: draw steps, not slopes.
    let d = "";
    let last = null;
    xs.forEach((t, k) => {
      const v = line.values[k];
      if (v === null || v === undefined) return;
      const px = x(t).toFixed(1);
      const py = y(v).toFixed(1);
      d += d ? `H${px}V${py}` : `M${px},${py}`;
      last = py;
    });
    if (last !== null) d += `H${x(t1).toFixed(1)}`;
    return s("path", { class: `series s${i % 12}`, d }, s("title", {}, line.label));
  });
  const marker = app.t !== null ? s("line", { class: "now", x1: x(app.t), x2: x(app.t), y1: 6, y2: H - 18 }) : null;
  const svg = s("svg", { class: "chart", width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img",
                         "aria-label": yLabel },
    s("line", { class: "axis", x1: PAD, x2: W - 8, y1: H - 18, y2: H - 18 }),
    s("text", { class: "tick", x: 2, y: 14 }, yLabel),
    s("text", { class: "tick", x: PAD, y: H - 4 }, "0s"),
    s("text", { class: "tick end", x: W - 8, y: H - 4 }, duration(t1 - t0)),
    paths, marker);
  svg.addEventListener("click", (e) => {
    const box = svg.getBoundingClientRect();
    const t = t0 + ((e.clientX - box.left) * (W / box.width) - PAD) / (W - PAD - 8) * (t1 - t0);
    app.setTime(Math.round(Math.max(t0, Math.min(t1, t))));
  });
  const legend = lines.length > 1 ? h("div", { class: "chart-legend" }, lines.map((l, i) =>
    h("span", { class: `key s${i % 12}` }, l.label))) : null;
  return h("div", { class: "chart-box" }, svg, legend);
}

export async function renderTimeline(app) {
  if (app.meta.kind !== "report") return h("p", { class: "muted" }, "the timeline needs a simulation run (--report DIR)");
  const data = await app.fetchJSON("/api/timeline", {});
  const xs = data.t;
  const t0 = app.meta.start;
  const t1 = app.meta.end;
  const gpuTop = Math.max(...data.gpu_capacity, 1);
  const queues = Object.entries(data.queue_share);
  return h("div", { id: "timeline-view" },
    section("GPU allocation", chart(app, data, xs, t0, t1, [
      { label: "allocated GPUs", values: data.gpu_allocated },
      { label: "fragmented GPUs", values: data.gpu_fragmentation }], gpuTop, `GPUs (of ${gpuTop})`)),
    section("Jobs", chart(app, data, xs, t0, t1, [
      { label: "pending", values: data.pending_jobs }, { label: "running", values: data.running_jobs }],
      Math.max(...data.pending_jobs, ...data.running_jobs, 1), "jobs")),
    section("Queue shares of the GPUs", chart(app, data, xs, t0, t1,
      queues.map(([q, values]) => ({ label: q, values })),
      Math.max(...queues.flatMap(([, v]) => v.filter((x) => x !== null)), 0.01), "share")),
    h("p", { class: "muted", id: "timeline-at" }, app.t === null ? "" :
      `the other views show the run at ${duration(app.t - t0)} of ${duration(t1 - t0)}; click a chart to move there`));
}
