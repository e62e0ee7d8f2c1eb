// In place of every view that needs the Kubernetes API when the UI has none (`kubeplane ui --runs DIR` without
// --kubeconfig; /ui/whoami says api: false): says so, and points at what is served. OFFLINE matches the routes
// that need no API (the simulation runs).
export const OFFLINE = /^#\/runs(?:[/?]|$)/;

export function mount(container) {
  const section = document.createElement("section");
  section.className = "noapi";
  section.setAttribute("aria-labelledby", "noapi-title");
  const title = document.createElement("h1");
  title.id = "noapi-title";
  title.textContent = "No cluster";
  const text = document.createElement("p");
  text.id = "noapi-message";
  text.textContent =
    "This UI was started without a Kubernetes API (kubeplane ui --runs DIR, no --kubeconfig): " +
    "only the simulation runs are served.";
  const link = document.createElement("a");
  link.href = "#/runs";
  link.id = "noapi-runs";
  link.textContent = "Simulation runs";
  const p = document.createElement("p");
  p.append(link);
  section.append(title, text, p);
  container.append(section);
  return null;
}
