fetch("/openapi.json").then(r => r.json()).then(s => {
  document.getElementById("desc").textContent = s.info.description;
  const esc = (t) => String(t).replace(/[&<>]/g, c => ({"&":"&amp;","<":"&lt;",">":"&gt;"}[c]));
  let h = "";
  for (const [path, ops] of Object.entries(s.paths)) for (const [m, op] of Object.entries(ops)) {
    h += `<div class="op"><span class="m ${m}">${m.toUpperCase()}</span><code>${esc(path)}</code> — ${esc(op.summary)}`;
    if (op.parameters) h += "<table><tr><th>parameter</th><th>in</th><th>required</th><th>description</th></tr>" +
      op.parameters.map(p => `<tr><td><code>${esc(p.name)}</code></td><td>${p.in}</td><td>${p.required ? "yes" : ""}</td><td>${esc(p.description || "")}</td></tr>`).join("") + "</table>";
    h += `<div class="muted">responses: ${Object.keys(op.responses).join(", ")}</div></div>`;
  }
  document.getElementById("ops").innerHTML = h;
});
