/// The page `watch --metrics-addr` serves at `/`: plain HTML and a few lines of script that poll
/// `/status` every two seconds and show each folder in a section of its own. No framework and
/// nothing fetched from elsewhere.
enum StatusPage {
    static let html = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>docsync</title>
<style>
  body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; padding: 0 1rem; color: #1d232a; }
  h1 { font-size: 1.3rem; margin: 0 0 .2rem; }
  h2 { font-size: 1.1rem; margin: 0 0 .1rem; } h3 { font-size: .95rem; margin: 1.2rem 0 .3rem; }
  section { border-top: 1px solid #d5dae0; padding: 1.2rem 0; }
  .path { color: #56606b; font-family: ui-monospace, monospace; }
  .state { display: inline-block; padding: .25rem .7rem; border-radius: 1rem; font-weight: 600; margin: .8rem 0; }
  .ok { background: #dff3e4; color: #14532d; } .busy { background: #fdf2d0; color: #713f12; } .bad { background: #fde2e1; color: #7f1d1d; }
  table { border-collapse: collapse; width: 100%; } table.counts { width: auto; } table.counts td { padding-left: 2rem; } td, th { text-align: left; padding: .25rem .6rem .25rem 0; vertical-align: top; }
  th { font-weight: 600; color: #56606b; } td.n { font-variant-numeric: tabular-nums; }
  code { font-family: ui-monospace, monospace; font-size: .92em; } .muted { color: #56606b; }
</style>
</head>
<body>
<h1>docsync</h1>
<div id="overall" class="busy state">loading</div>
<div id="folders"></div>
<p class="muted" id="updated"></p>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
function el(tag, content, cls) { const e = document.createElement(tag); if (content !== undefined) e.textContent = content; if (cls) e.className = cls; return e; }
function rows(box, list, empty, cells) {
  if (!list.length) { box.append(el("div", empty, "muted")); return; }
  const table = el("table");
  for (const item of list) { const tr = el("tr"); for (const c of cells(item)) tr.append(el("td", c)); table.append(tr); }
  box.append(table);
}
function state(s) {
  if (s.in_sync && !s.nonconforming) return ["in sync", "ok"];
  if (s.nonconforming || s.invalid || s.rejected || s.not_allowed || s.paused || s.conflicts.length || s.pull_failures || s.held_deletions || s.held_local_deletions) return ["needs attention", "bad"];
  return [s.offline_since ? "offline: changes wait" : "syncing", "busy"];
}
function folder(s) {
  const box = el("section");
  box.append(el("h2", s.name), el("div", s.folder, "path"));
  const [label, cls] = state(s);
  box.append(el("div", label, "state " + cls));
  const counts = el("table"); counts.className = "counts";
  for (const [name, key] of [["synced", "synced"], ["pending", "pending"], ["invalid", "invalid"], ["rejected", "rejected"], ["documents", "live"], ["deleted", "tombstones"]]) {
    const tr = el("tr"); tr.append(el("th", name), el("td", String(s[key]), "n")); counts.append(tr);
  }
  box.append(counts);
  const failing = [];
  if (s.offline_since) failing.push(["endpoint", "unreachable since " + s.offline_since + (s.last_error ? ": " + s.last_error : "")]);
  if (s.paused) failing.push(["pushing paused", s.paused]);
  for (const f of s.invalid_files) failing.push([f.path, "invalid: " + f.reason]);
  for (const n of (s.nonconforming_documents || [])) failing.push([n.path, "does not conform to the schema of " + n.docType + ": " + n.errors.map((e) => (e.instance || "/") + ": " + e.message).join("; ")]);
  for (const r of s.rejected_documents) failing.push([r.path || r.id, "rejected by the endpoint: " + r.reason]);
  for (const n of (s.not_allowed_documents || [])) failing.push([n.path, n.reason + " (kept in the file)"]);
  for (const u of s.uploads) if (u.error) failing.push([u.document + " " + u.property, u.state + ": " + u.error]);
  for (const d of (s.downloads || [])) if (d.error) failing.push([d.document + " " + d.property, d.state + ": " + d.error]);
  box.append(el("h3", "Failing")); rows(box, failing, "nothing", (f) => f);
  box.append(el("h3", "Conflicts to resolve"));
  rows(box, s.conflicts, "none", (c) => [c.copy, "of " + c.document + " — docsync resolve " + c.copy + " --keep mine|theirs"]);
  const clock = s.clock;
  box.append(el("h3", "Clock"), el("div", clock.calibrated ? "server minus this machine: " + clock.offset_ms.toFixed(1) + " ms ± " + clock.bound_ms.toFixed(1) + " ms (" + clock.source + ")" : "not calibrated: changes carry this machine's time", "muted"));
  if (s.git) box.append(el("h3", "Git"), el("div", "commits onto " + (s.git.mode || "nothing now") + ": " + (s.git.last_commit ? "last commit " + s.git.last_commit.slice(0, 12) : "no commit yet") + (s.git.waiting ? ", " + s.git.waiting + " pulled changes waiting" : "") + (s.git.held ? "; held back: " + s.git.held : ""), "muted"));
  box.append(el("h3", "Last changes")); rows(box, s.recent, "none", (r) => [r.path, r.time]);
  return box;
}
function render(all) {
  const overall = $("overall");
  const attention = all.folders.some((s) => state(s)[1] === "bad");
  overall.textContent = all.in_sync ? "all " + all.folders.length + " in sync" : attention ? "needs attention" : "syncing";
  overall.className = "state " + (all.in_sync ? "ok" : attention ? "bad" : "busy");
  $("folders").replaceChildren(...all.folders.map(folder));
  $("updated").textContent = "updated " + new Date().toLocaleTimeString();
}
async function poll() {
  try { const r = await fetch("status", { cache: "no-store" }); if (r.ok) render(await r.json()); else $("overall").textContent = "status: " + r.status; }
  catch (e) { const st = $("overall"); st.textContent = "agent not answering"; st.className = "state bad"; }
  setTimeout(poll, 2000);
}
poll();
</script>
</body>
</html>
"""#
}
