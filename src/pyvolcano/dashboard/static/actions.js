// Action buttons (only with --allow-actions on a live cluster): each asks for confirmation,
// posts the action and shows the API server's answer, refusals (403 Forbidden) included.

import { h } from "./dom.js";

export function actionButtons(app, target, ids, verbs) {
  const answer = h("span", { class: "answer", role: "status" });
  const buttons = verbs.map((verb) => h("button", {
    type: "button", class: `action ${verb}`, "data-verb": verb,
    onclick: async () => {
      const what = target === "job" ? `job ${ids.namespace}/${ids.name}` : `queue ${ids.name}`;
      if (!window.confirm(`${verb} ${what}?`)) return;
      const result = await app.post({ target, verb, ...ids });
      answer.textContent = result.status === 200 ? result.message : `${result.status}: ${result.message}`;
      answer.className = result.status === 200 ? "answer ok" : "answer refused";
    },
  }, verb));
  return h("span", { class: "actions" }, buttons, answer);
}
