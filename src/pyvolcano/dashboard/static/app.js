// The dashboard's shell: routing (#/queues, #/jobs, #/job/NS/NAME, #/nodes, #/workflows, #/timeline),
// fetching the JSON view models, the time slider of a simulation run and live updates from
// the server's event stream (a change re-renders the current view; the page never reloads).
//
// A simulation run's instant is part of the URL, as the query parameter t (seconds into the
// run: /?t=5400#/nodes), so that a view can be shared and a reload keeps it. Without one the
// page opens at the run's busiest moment (meta.busiest, computed by the server) and writes it
// there; every move of the slider or click on a chart replaces it (history.replaceState: the
// back button does not step through the slider's positions).

import { h, duration } from "./dom.js";
import { renderQueues } from "./queues.js";
import { renderJobs } from "./jobs.js";
import { renderJob } from "./job.js";
import { renderNodes } from "./nodes.js";
import { renderTimeline } from "./timeline.js";
import { renderWorkflows } from "./workflows.js";

const main = document.getElementById("main");
const app = { meta: null, t: null, rendering: 0, fetchJSON, setTime, post, refresh: () => render() };

async function fetchJSON(path, params = {}) {
  const query = new URLSearchParams(params);
  if (app.t !== null && !("t" in params)) query.set("t", String(app.t));
  const text = query.toString();
  const response = await fetch(text ? `${path}?${text}` : path, { headers: { Accept: "application/json" } });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || body.message || `HTTP ${response.status}`);
  return body;
}

// The per-process action token the server put in the page (only with --allow-actions); the
// server refuses an action without it, so a request from another page cannot act.
const actionToken = document.querySelector('meta[name="pyvolcano-action-token"]')?.content || "";

async function post(body) {
  const response = await fetch("/api/action", {
    method: "POST", headers: { "Content-Type": "application/json", "X-PyVolcano-Token": actionToken },
    body: JSON.stringify(body),
  });
  let answer;
  try { answer = await response.json(); } catch { answer = { message: `HTTP ${response.status}` }; }
  return { status: response.status, ...answer };
}

function parseRoute() {
  const parts = (location.hash.replace(/^#\/?/, "") || "queues").split("/").map(decodeURIComponent);
  return { view: parts[0], args: parts.slice(1) };
}

async function render() {
  const ticket = ++app.rendering;
  const { view, args } = parseRoute();
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.id === `nav-${view}`);
  const renderers = { queues: renderQueues, jobs: renderJobs, job: renderJob, nodes: renderNodes,
                      workflows: renderWorkflows, timeline: renderTimeline };
  const renderer = renderers[view] || renderQueues;
  let content;
  try {
    content = await renderer(app, args);
  } catch (err) {
    content = h("p", { class: "error" }, String(err.message || err));
  }
  if (ticket !== app.rendering) return; // a newer render started meanwhile
  main.replaceChildren(content);
  document.body.dataset.view = view;
  document.body.dataset.rendered = String(ticket);
}

/** The t of the URL's query (seconds into the run), or null when absent or not a number. */
export function timeFromURL(search = location.search) {
  const text = new URLSearchParams(search).get("t");
  if (text === null || text.trim() === "") return null;
  const t = Number(text);
  return Number.isFinite(t) ? t : null;
}

function writeTimeToURL(t) {
  const url = new URL(location.href);
  url.searchParams.set("t", String(t));
  history.replaceState(history.state, "", url);
}

function showTime(t) {
  const slider = document.getElementById("time");
  slider.value = String(t);
  document.getElementById("time-label").textContent = duration(t - Number(slider.min));
}

function setTime(t) {
  app.t = t;
  showTime(t);
  writeTimeToURL(t);
  render();
}

function setupSlider(meta) {
  const slider = document.getElementById("time");
  document.getElementById("slider").hidden = false;
  document.getElementById("nav-timeline").hidden = false;
  slider.min = String(meta.start);
  slider.max = String(meta.end);
  slider.step = String(Math.max(1, Math.round((meta.end - meta.start) / 1000)));
  const asked = timeFromURL();
  const busiest = meta.busiest ? meta.busiest.t : meta.end;
  app.t = asked === null ? busiest : Math.min(Math.max(asked, meta.start), meta.end);
  showTime(app.t);
  writeTimeToURL(app.t);
  slider.addEventListener("input", () => {
    document.getElementById("time-label").textContent = duration(Number(slider.value) - meta.start);
  });
  slider.addEventListener("change", () => setTime(Number(slider.value)));
  document.getElementById("busiest").addEventListener("click", () => setTime(busiest));
}

function listen() {
  const events = new EventSource("/api/events");
  const badge = document.getElementById("live");
  events.addEventListener("hello", (e) => { document.body.dataset.revision = JSON.parse(e.data).revision; });
  events.addEventListener("change", (e) => {
    document.body.dataset.revision = JSON.parse(e.data).revision;
    render();
  });
  events.addEventListener("open", () => badge.classList.remove("lost"));
  events.addEventListener("error", () => badge.classList.add("lost"));
}

async function start() {
  const meta = await fetchJSON("/api/meta");
  app.meta = meta;
  document.getElementById("source").textContent = `${meta.kind}: ${meta.name}`;
  document.getElementById("notes").replaceChildren(...(meta.notes || []).map((n) => h("p", {}, n)));
  if (meta.kind === "report") setupSlider(meta);
  if (meta.kind === "live") {
    document.getElementById("live").hidden = false;
    listen();
  }
  window.addEventListener("hashchange", () => render());
  await render();
}

start().catch((err) => main.replaceChildren(h("p", { class: "error" }, String(err.message || err))));
