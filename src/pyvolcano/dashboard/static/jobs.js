// The Jobs view: one row per PodGroup, sortable by any column (click its header) and filtered
// by a text (any column) and a phase. The sort and the filter survive live updates.

import { h, duration, route, table } from "./dom.js";

const COLUMNS = [
  ["position", "pos", (j) => j.position],
  ["namespace", "namespace", (j) => j.namespace],
  ["name", "name", (j) => j.name],
  ["queue", "queue", (j) => j.queue],
  ["phase", "phase", (j) => j.phase],
  ["age", "age", (j) => j.age_seconds],
  ["reason", "reason", (j) => j.reason],
  ["start", "estimated start", (j) => j.start_in_seconds],
];
const state = { sort: "position", descending: false, text: "", phase: "" };

function compare(a, b) {
  if (a === b) return 0;
  if (a === null || a === undefined) return 1; // empty cells last
  if (b === null || b === undefined) return -1;
  return a < b ? -1 : 1;
}

function startText(j) {
  if (j.start === null) return j.start_message || "";
  return j.start_in_seconds < 1e-9 ? "now" : `in ${duration(j.start_in_seconds)}`;
}

export async function renderJobs(app) {
  const data = await app.fetchJSON("/api/jobs");
  const body = h("tbody", {});
  const phases = [...new Set(data.jobs.map((j) => j.phase))].sort();
  const count = h("span", { class: "count" });

  function fillRows() {
    const needle = state.text.toLowerCase();
    const get = COLUMNS.find((c) => c[0] === state.sort)[2];
    const rows = data.jobs
      .filter((j) => (!state.phase || j.phase === state.phase) &&
        (!needle || [j.namespace, j.name, j.queue, j.phase, j.reason || ""].some((v) => v.toLowerCase().includes(needle))))
      .sort((a, b) => compare(get(a), get(b)) * (state.descending ? -1 : 1) || compare(a.key, b.key));
    body.replaceChildren(...rows.map((j) => h("tr", { "data-key": j.key },
      h("td", { class: "num" }, j.position ?? ""),
      h("td", {}, j.namespace),
      h("td", {}, h("a", { href: route("job", j.namespace, j.name) }, j.name)),
      h("td", {}, j.queue),
      h("td", { class: `phase ${j.phase.toLowerCase()}` }, j.phase),
      h("td", { class: "num" }, duration(j.age_seconds)),
      h("td", { class: "reason", title: j.hint || "" }, j.reason || ""),
      h("td", { title: j.start || "" }, startText(j)))));
    count.textContent = `${rows.length} of ${data.jobs.length} jobs`;
  }

  const headers = COLUMNS.map(([key, label]) => h("th", {
    class: `sortable${state.sort === key ? (state.descending ? " desc" : " asc") : ""}`, "data-sort": key,
    onclick: (e) => {
      state.descending = state.sort === key ? !state.descending : false;
      state.sort = key;
      for (const th of e.currentTarget.parentNode.children) th.className = "sortable";
      e.currentTarget.className = `sortable ${state.descending ? "desc" : "asc"}`;
      fillRows();
    },
  }, label));
  const filter = h("input", { type: "search", id: "job-filter", placeholder: "filter", value: state.text,
                              oninput: (e) => { state.text = e.target.value; fillRows(); } });
  const phase = h("select", { id: "phase-filter", onchange: (e) => { state.phase = e.target.value; fillRows(); } },
    h("option", { value: "" }, "every phase"), phases.map((p) => h("option", { value: p }, p)));
  phase.value = state.phase;
  fillRows();
  const t = table(headers, [], { class: "jobs" });
  t.replaceChild(body, t.tBodies[0]);
  return h("div", { id: "jobs-view" }, h("div", { class: "toolbar" }, filter, phase, count),
    h("p", { class: "muted" }, app.meta.kind === "report"
      ? `the run at ${data.now}: positions in order of submission, starts as they happened in the run`
      : `positions and estimates as queue top computes them at ${data.now}`), t);
}
