/// The page `watch --metrics-addr` serves at `/`: plain HTML and a few lines of script that poll
/// `/status` every two seconds. No framework and nothing fetched from elsewhere.
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
  h2 { font-size: 1rem; margin: 1.6rem 0 .4rem; }
  #folder { color: #56606b; font-family: ui-monospace, monospace; }
  #state { display: inline-block; padding: .25rem .7rem; border-radius: 1rem; font-weight: 600; margin: .8rem 0; }
  .ok { background: #dff3e4; color: #14532d; } .busy { background: #fdf2d0; color: #713f12; } .bad { background: #fde2e1; color: #7f1d1d; }
  table { border-collapse: collapse; width: 100%; } #counts { width: auto; } #counts td { padding-left: 2rem; } td, th { text-align: left; padding: .25rem .6rem .25rem 0; vertical-align: top; }
  th { font-weight: 600; color: #56606b; } td.n { font-variant-numeric: tabular-nums; }
  code { font-family: ui-monospace, monospace; font-size: .92em; } .muted { color: #56606b; }
</style>
</head>
<body>
<h1>docsync</h1>
<div id="folder">…</div>
<div id="state" class="busy">loading</div>
<table id="counts"></table>
<h2>Failing</h2><div id="failing" class="muted">nothing</div>
<h2>Conflicts to resolve</h2><div id="conflicts" class="muted">none</div>
<h2>Clock</h2><div id="clock" class="muted">…</div>
<h2>Last changes</h2><div id="recent" class="muted">none</div>
<p class="muted" id="updated"></p>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
function text(tag, content, cls) { const e = document.createElement(tag); e.textContent = content; if (cls) e.className = cls; return e; }
function rows(target, list, cells) {
  const box = $(target); box.replaceChildren();
  if (!list.length) { box.className = "muted"; box.textContent = target === "conflicts" ? "none" : "nothing"; return; }
  box.className = ""; const table = document.createElement("table");
  for (const item of list) { const tr = document.createElement("tr"); for (const c of cells(item)) tr.append(text("td", c)); table.append(tr); }
  box.append(table);
}
function render(s) {
  $("folder").textContent = s.folder;
  const state = $("state");
  if (s.in_sync) { state.textContent = "in sync"; state.className = "ok"; }
  else if (s.invalid || s.rejected || s.paused || s.conflicts.length) { state.textContent = "needs attention"; state.className = "bad"; }
  else { state.textContent = s.offline_since ? "offline: changes wait" : "syncing"; state.className = "busy"; }
  const counts = $("counts"); counts.replaceChildren();
  for (const [label, key] of [["synced", "synced"], ["pending", "pending"], ["invalid", "invalid"], ["rejected", "rejected"], ["documents", "live"], ["deleted", "tombstones"]]) {
    const tr = document.createElement("tr"); tr.append(text("th", label), text("td", String(s[key]), "n")); counts.append(tr);
  }
  const failing = [];
  if (s.offline_since) failing.push(["endpoint", "unreachable since " + s.offline_since + (s.last_error ? ": " + s.last_error : "")]);
  if (s.paused) failing.push(["pushing paused", s.paused]);
  for (const f of s.invalid_files) failing.push([f.path, "invalid: " + f.reason]);
  for (const r of s.rejected_documents) failing.push([r.path || r.id, "rejected by the endpoint: " + r.reason]);
  for (const u of s.uploads) if (u.error) failing.push([u.document + " " + u.property, u.state + ": " + u.error]);
  rows("failing", failing, (f) => f);
  rows("conflicts", s.conflicts, (c) => [c.copy, "of " + c.document + " — docsync resolve " + c.copy + " --keep mine|theirs"]);
  const clock = s.clock;
  $("clock").textContent = clock.calibrated ? "server minus this machine: " + clock.offset_ms.toFixed(1) + " ms ± " + clock.bound_ms.toFixed(1) + " ms (" + clock.source + ")" : "not calibrated: changes carry this machine's time";
  rows("recent", s.recent, (r) => [r.path, r.time]);
  $("updated").textContent = "updated " + new Date().toLocaleTimeString();
}
async function poll() {
  try { const r = await fetch("status", { cache: "no-store" }); if (r.ok) render(await r.json()); else $("state").textContent = "status: " + r.status; }
  catch (e) { const st = $("state"); st.textContent = "agent not answering"; st.className = "bad"; }
  setTimeout(poll, 2000);
}
poll();
</script>
</body>
</html>
"""#
}
