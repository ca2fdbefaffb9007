// DOM helpers. Every string that may come from a cluster object is inserted as a text node or
// through setAttribute: nothing here parses markup from a string.

const SVG_NS = "http://www.w3.org/2000/svg";

function fill(el, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.setAttribute("class", value);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** An HTML element: h("td", {class: "num"}, "3"). Text children become text nodes. */
export function h(tag, attrs, ...children) {
  return fill(document.createElement(tag), attrs, children);
}

/** An SVG element. */
export function s(tag, attrs, ...children) {
  return fill(document.createElementNS(SVG_NS, tag), attrs, children);
}

const BINARY = [["Ei", 2 ** 60], ["Pi", 2 ** 50], ["Ti", 2 ** 40], ["Gi", 2 ** 30], ["Mi", 2 ** 20], ["Ki", 2 ** 10]];

/** An amount in the resource's unit as people write it (memory in binary units). */
export function amount(name, value) {
  if (value === null || value === undefined) return "-";
  if (name === "memory") {
    for (const [unit, size] of BINARY) if (Math.abs(value) >= size) return `${round(value / size)}${unit}`;
    return `${round(value)}`;
  }
  return `${round(value)}`;
}

export function round(v) {
  return Number.isInteger(v) ? String(v) : String(Math.round(v * 100) / 100);
}

/** Seconds as 1d2h, 3h4m, 5m6s, 7s. */
export function duration(seconds) {
  if (seconds === null || seconds === undefined) return "-";
  let s = Math.round(seconds);
  const parts = [];
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["m", 60]]) {
    if (s >= size) { parts.push(`${Math.floor(s / size)}${unit}`); s %= size; }
    if (parts.length === 2) break;
  }
  if (parts.length < 2 && (s || !parts.length)) parts.push(`${s}s`);
  return parts.join("");
}

export function percent(ratio) {
  return ratio === null || ratio === undefined ? "-" : `${Math.round(ratio * 1000) / 10}%`;
}

/** A link to a route of the app: #/job/NS/NAME with every part encoded. */
export function route(...parts) {
  return "#/" + parts.map(encodeURIComponent).join("/");
}

/** A table: header texts and rows of cells (a cell is a node, a text or [text, attrs]). */
export function table(headers, rows, attrs) {
  return h("table", attrs,
    h("thead", {}, h("tr", {}, headers.map((x) => (x instanceof Node ? x : h("th", {}, x))))),
    h("tbody", {}, rows));
}

export function section(title, ...children) {
  return h("section", {}, h("h2", {}, title), ...children);
}
