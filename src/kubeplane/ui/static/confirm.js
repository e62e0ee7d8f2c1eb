// A modal confirmation (<dialog>, so focus is trapped in it and Escape cancels, as the platform does): resolves
// true only when the user chose the destructive button. Used before every delete.
import { el } from "./api.js";

export function confirmDialog(question, action = "Delete") {
  return new Promise((resolve) => {
    const yes = el("button", { type: "button", class: "danger", id: "confirm-yes" }, action);
    const no = el("button", { type: "button", id: "confirm-no" }, "Cancel");
    const dialog = el("dialog", { class: "confirm", id: "confirm", "aria-labelledby": "confirm-question" },
      el("p", { id: "confirm-question" }, question),
      el("div", { class: "actions" }, no, yes));
    const done = (answer) => { dialog.close(); dialog.remove(); resolve(answer); };
    yes.addEventListener("click", () => done(true));
    no.addEventListener("click", () => done(false));
    dialog.addEventListener("cancel", (e) => { e.preventDefault(); done(false); });
    document.body.append(dialog);
    dialog.showModal();
    no.focus(); // the safe choice has the focus: Enter does not delete by accident
  });
}

// kubectl delete's line for a deleted object: `kind[.group] "name" deleted` (kubectl/pkg/cmd/delete PrintObj).
export function deletedLine(apiVersion, kind, name) {
  const group = (apiVersion || "v1").includes("/") ? apiVersion.split("/")[0] : "";
  return `${kind.toLowerCase()}${group ? "." + group : ""} "${name}" deleted`;
}
