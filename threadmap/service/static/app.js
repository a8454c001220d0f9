// threadmap Layout Explorer: the page of `threadmap serve`.
//
// Plain JS, no build step, no dependencies.  SECURITY: every piece of text that comes from a
// spec, a report or the server goes into the page through textContent / DOM APIs (the `el`
// helper below); nothing is ever assigned to innerHTML.  The stage pictures (SVG from the
// server) are parsed as XML with DOMParser, reduced to an allow-list of SVG elements and
// attributes, and only then imported into the page.
"use strict";

(() => {
  const CHECKS = ["coverage", "grid_coverage", "predicates", "coalescing", "bank_conflicts", "vectorize", "dataflow"];
  const LAYOUT_PRESETS = ["complement((2,2):(1,6), 24)", "logical_divide((4,8):(8,1), (2,4))",
    "(8,(2,2)):(2,(1,16))", "Sw<3,0,3> o (8,8):(8,1)"];
  const ROUTINE = new Set(["vectorize", "predicates"]);  // the CLI hides these rows when they pass
  const LINE_RE = /(?:^|\n)[^\n:]*?:(\d+):(\d+):/g;     // FILE:LINE:COL: in an error message
  const $ = (id) => document.getElementById(id);

  // ------------------------------------------------------------------ DOM helpers (no innerHTML)
  function el(tag, attrs, ...kids) {
    const node = document.createElement(tag);
    if (attrs) {
      for (const [k, v] of Object.entries(attrs)) {
        if (v === undefined || v === null || v === false) continue;
        if (k === "class") node.className = v;
        else if (k === "text") node.textContent = v;
        else if (k === "dataset") Object.assign(node.dataset, v);
        else if (k.startsWith("on") && typeof v === "function") node.addEventListener(k.slice(2), v);
        else node.setAttribute(k, v === true ? "" : String(v));
      }
    }
    for (const kid of kids.flat()) {
      if (kid === undefined || kid === null || kid === false) continue;
      node.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return node;
  }
  const clear = (node) => { while (node.firstChild) node.removeChild(node.firstChild); return node; };

  // ------------------------------------------------------------------ state
  const state = {
    job: null,          // the last job view (GET /v1/jobs/{id})
    pollTimer: null,
    pollToken: 0,
    stageLines: {},     // stage index -> spec line, from the report
    svgCache: new Map(),
    svgWanted: null,
  };

  // ------------------------------------------------------------------ HTTP
  function authHeaders() {
    const t = $("token").value.trim();
    return t ? { Authorization: "Bearer " + t } : {};
  }

  async function api(path, opts = {}) {
    const res = await fetch(path, { ...opts, headers: { ...authHeaders(), ...(opts.headers || {}) } });
    const ctype = res.headers.get("content-type") || "";
    let body;
    if (ctype.includes("json")) {
      try { body = await res.json(); } catch { body = null; }
    } else {
      body = await res.text();
    }
    if (!res.ok) {
      let detail = body && typeof body === "object" ? body.detail : body;
      if (Array.isArray(detail)) detail = detail.map((d) => (d.loc ? d.loc.join(".") + ": " : "") + d.msg).join("\n");
      if (!detail) detail = res.statusText || "request failed";
      const err = new Error(String(detail));
      err.status = res.status;
      throw err;
    }
    return body;
  }

  // ------------------------------------------------------------------ editor with line numbers
  const editor = {
    ta: null, gutter: null, layer: null, lineH: 18, padTop: 8, count: 0, lines: [],

    init() {
      this.ta = $("spec"); this.gutter = $("gutter"); this.layer = $("hl-layer");
      const cs = getComputedStyle(this.ta);
      this.lineH = parseFloat(cs.lineHeight) || 18;
      this.padTop = parseFloat(cs.paddingTop) || 8;
      this.ta.addEventListener("input", () => { this.clearHighlight(); this.refresh(); saveDraft(); });
      this.ta.addEventListener("scroll", () => this.sync());
      this.ta.addEventListener("keydown", (e) => {
        if (e.key === "Tab" && !e.shiftKey && !e.ctrlKey && !e.metaKey && !e.altKey) {
          e.preventDefault();   // two spaces, as YAML wants
          const { selectionStart: s, selectionEnd: t, value } = this.ta;
          this.ta.value = value.slice(0, s) + "  " + value.slice(t);
          this.ta.selectionStart = this.ta.selectionEnd = s + 2;
          this.ta.dispatchEvent(new Event("input"));
        }
      });
      this.refresh();
    },

    setText(text) {
      this.ta.value = text;
      this.ta.scrollTop = 0;
      this.clearHighlight();
      this.refresh();
    },

    refresh() {
      const n = this.ta.value.split("\n").length;
      if (n !== this.count) {
        const frag = document.createDocumentFragment();
        for (let i = 1; i <= n; i++) frag.append(el("div", { class: "ln", dataset: { line: String(i) }, text: String(i) }));
        clear(this.gutter).append(frag, el("div", { class: "ln-pad" }));
        this.count = n;
        for (const l of this.lines) this.markGutter(l, true);
      }
      detectFormatLabel();
      this.sync();
    },

    sync() {
      this.gutter.scrollTop = this.ta.scrollTop;
      this.layer.style.transform = `translateY(${-this.ta.scrollTop}px)`;
    },

    markGutter(line, on) {
      const d = this.gutter.children[line - 1];
      if (d && d.classList.contains("ln")) d.classList.toggle("hl", on);
    },

    clearHighlight() {
      for (const l of this.lines) this.markGutter(l, false);
      this.lines = [];
      clear(this.layer);
      $("editor").dataset.highlight = "";
    },

    // Highlight spec lines (1-based); the first is scrolled into view.
    highlight(lines, kind = "finding") {
      this.clearHighlight();
      lines = [...new Set(lines.filter((l) => Number.isInteger(l) && l >= 1 && l <= this.count))];
      if (!lines.length) return;
      this.lines = lines;
      for (const l of lines) {
        this.markGutter(l, true);
        this.layer.append(el("div", { class: "hl-line hl-" + kind, style: `top:${this.padTop + (l - 1) * this.lineH}px;height:${this.lineH}px` }));
      }
      $("editor").dataset.highlight = lines.join(",");
      const target = this.padTop + (lines[0] - 1) * this.lineH - this.ta.clientHeight / 3;
      this.ta.scrollTop = Math.max(0, target);
      this.sync();
      const first = this.layer.firstChild;
      if (first) { first.classList.remove("flash"); void first.offsetWidth; first.classList.add("flash"); }
    },

    lineText(line) { return this.ta.value.split("\n")[line - 1] ?? ""; },
  };

  // ------------------------------------------------------------------ format
  function detectFormat(text) {
    const t = text.replace(/^\uFEFF/, "").trimStart();
    if (t.startsWith("{")) return "json";
    const body = t.split("\n").filter((l) => l.trim() && !l.trim().startsWith("#"));
    if (body.length && /^[A-Za-z_][\w-]*\s*=/.test(body[0].trim())) return "toml";
    if (body.some((l) => /^\[\[?[\w.-]+\]\]?\s*$/.test(l.trim()))) return "toml";
    return "yaml";
  }
  function currentFormat() {
    const f = $("format").value;
    return f === "auto" ? detectFormat($("spec").value) : f;
  }
  function detectFormatLabel() {
    const auto = $("format").querySelector("option[value=auto]");
    auto.textContent = $("spec").value.trim() ? `auto (${detectFormat($("spec").value)})` : "auto";
  }

  // ------------------------------------------------------------------ drafts (localStorage)
  function saveDraft() {
    try { localStorage.setItem("threadmap.draft", $("spec").value); } catch { /* private mode */ }
  }
  function loadDraft() {
    try { return localStorage.getItem("threadmap.draft"); } catch { return null; }
  }

  // ------------------------------------------------------------------ options
  function buildChecks() {
    const box = $("checks");
    for (const c of CHECKS) {
      box.append(el("label", { class: "chip" }, el("input", { type: "checkbox", value: c, name: "check" }), c.replace("_", " ")));
    }
  }
  function readOptions() {
    const q = new URLSearchParams();
    const checks = [...document.querySelectorAll("#checks input:checked")].map((i) => i.value);
    if (checks.length) q.set("checks", checks.join(","));
    const engine = $("engine").value;
    if (engine !== "verify") q.set("engine", engine);
    const sizes = $("sizes").value.replace(/\s+/g, "");
    if (sizes) q.set("sizes", sizes);
    if ($("exhaustive").checked) q.set("exhaustive", "true");
    return q;
  }
  function applyOptions(o) {
    if (!o) return;
    const checks = new Set(o.checks || []);
    for (const i of document.querySelectorAll("#checks input")) i.checked = checks.has(i.value);
    $("engine").value = o.engine === "prove" ? "prove" : "verify";
    $("sizes").value = Object.entries(o.sizes || {}).map(([k, v]) => `${k}=${v}`).join(",");
    $("exhaustive").checked = !!o.exhaustive;
  }

  // ------------------------------------------------------------------ job bar, errors
  function setState(s, text) {
    const p = $("state");
    p.className = "pill state-" + s;
    p.textContent = text || s;
  }
  function setProgress(progress) {
    const box = $("progress");
    if (!progress || !progress.total) { box.hidden = true; return; }
    box.hidden = false;
    const pct = Math.min(100, Math.round((100 * progress.done) / progress.total));
    $("progress-bar").style.width = pct + "%";
    box.title = `${progress.done} / ${progress.total} chunks`;
  }
  function setJobLinks(job) {
    const links = $("job-links");
    if (!job) { links.hidden = true; $("job-info").textContent = ""; return; }
    links.hidden = false;
    const page = (job.links && job.links.page) || "/?job=" + encodeURIComponent(job.id);
    $("permalink").href = page;
    $("dl-json").href = "/v1/jobs/" + encodeURIComponent(job.id);
    $("dl-sarif").href = "/v1/jobs/" + encodeURIComponent(job.id) + "/sarif";
    $("dl-junit").href = "/v1/jobs/" + encodeURIComponent(job.id) + "/junit";
    const done = job.state === "done";
    $("dl-sarif").hidden = $("dl-junit").hidden = !done;
    let info = "job " + job.id.slice(0, 10);
    if (job.started && job.finished) info += ` · ${(job.finished - job.started).toFixed(2)} s`;
    if (job.cached) info += " · from the store";
    $("job-info").textContent = info;
  }

  // Errors: each line of a message "FILE:LINE:COL: path: text" is shown, and its line highlighted.
  function errorLines(msg) {
    const lines = [];
    for (const m of String(msg).matchAll(LINE_RE)) lines.push(parseInt(m[1], 10));
    return lines;
  }
  function showError(title, msg) {
    const box = clear($("error"));
    if (!title && !msg) { box.hidden = true; return; }
    box.hidden = false;
    box.append(el("div", { class: "error-title", text: title }));
    const list = el("ul", { class: "error-list" });
    for (const line of String(msg || "").split("\n").filter(Boolean)) {
      const m = /^([^\n:]*?):(\d+):(\d+):\s?(.*)$/.exec(line);
      if (m) {
        const n = parseInt(m[2], 10);
        list.append(el("li", {},
          el("button", { type: "button", class: "linkish", title: "show this line in the editor",
            onclick: () => editor.highlight([n], "error") }, `line ${n}:${m[3]}`),
          " ", el("span", { text: m[4] })));
      } else {
        list.append(el("li", { text: line }));
      }
    }
    box.append(list);
    const lines = errorLines(msg);
    if (lines.length) editor.highlight(lines, "error");
  }

  // ------------------------------------------------------------------ run / poll
  async function runJob(ev) {
    if (ev) ev.preventDefault();
    const text = $("spec").value;
    if (!text.trim()) { showError("Nothing to run", "The spec is empty: load an example or paste a spec."); return; }
    stopPolling();
    showError(null);
    editor.clearHighlight();
    const fmt = currentFormat();
    const q = readOptions();
    setState("submitting", "submitting…");
    state.job = null;
    setJobLinks(null);
    clear($("report")).append(el("div", { class: "empty muted", text: "Waiting for the job…" }));
    setProgress(null);
    $("run").disabled = true;
    try {
      const view = await api("/v1/jobs" + (q.toString() ? "?" + q : ""), {
        method: "POST", headers: { "Content-Type": "application/" + fmt }, body: text,
      });
      const job = view.jobs ? view.jobs[0] : view;
      history.pushState({ job: job.id }, "", "/?job=" + encodeURIComponent(job.id));
      state.job = job;
      setJobLinks(job);
      await follow(job.id, !!job.cached);
    } catch (e) {
      setState("error", e.status ? `error ${e.status}` : "error");
      const title = e.status === 422 ? "The spec (or an option) is invalid"
        : e.status === 401 ? "The server wants a token (⚙ in the top right)"
          : e.status === 503 ? "The server's queue is full; try again in a moment"
            : "The job could not be submitted";
      showError(title, e.message);
      clear($("report")).append(el("div", { class: "empty muted", text: "No report: the server did not accept the job (see the message above)." }));
    } finally {
      $("run").disabled = false;
    }
  }

  function stopPolling() {
    state.pollToken++;
    if (state.pollTimer) clearTimeout(state.pollTimer);
    state.pollTimer = null;
  }

  // Poll a job until it is done or failed, then show it.
  function follow(id, cached = false) {
    stopPolling();
    const token = state.pollToken;
    let delay = 250;
    return new Promise((resolve) => {
      const tick = async () => {
        if (token !== state.pollToken) return resolve();
        let job;
        try {
          job = await api("/v1/jobs/" + encodeURIComponent(id));
        } catch (e) {
          setState("error", e.status === 404 ? "not found" : "error");
          showError(e.status === 404 ? "No such job" : "Could not read the job", e.message);
          return resolve();
        }
        if (token !== state.pollToken) return resolve();
        job.cached = cached;
        state.job = job;
        setJobLinks(job);
        if (job.state === "queued" || job.state === "running") {
          setState(job.state, job.state === "running" ? "running…" : "queued…");
          setProgress(job.progress);
          delay = Math.min(1500, delay * 1.4);
          state.pollTimer = setTimeout(tick, delay);
          return;
        }
        setProgress(null);
        if (job.state === "failed") {
          setState("failed", "failed");
          showError("The job failed", job.error || "no reason given");
          renderReport(null, job);
        } else {
          renderReport(job.report, job);
        }
        resolve();
      };
      tick();
    });
  }

  // Load /?job=ID: the job, its spec and its options.
  async function openPermalink(id) {
    setState("loading", "loading…");
    try {
      const [job, spec] = await Promise.all([
        api("/v1/jobs/" + encodeURIComponent(id)),
        api("/v1/jobs/" + encodeURIComponent(id) + "/spec"),
      ]);
      editor.setText(typeof spec === "string" ? spec : JSON.stringify(spec, null, 2));
      const fmt = /\.(json|toml|ya?ml)$/i.exec(job.name || "");
      $("format").value = fmt ? (fmt[1].toLowerCase().startsWith("y") ? "yaml" : fmt[1].toLowerCase()) : "auto";
      detectFormatLabel();
      applyOptions(job.options);
      state.job = job;
      setJobLinks(job);
      await follow(id, false);
    } catch (e) {
      setState("error", e.status === 404 ? "not found" : "error");
      showError(e.status === 404 ? "No such job" : "Could not load the job", e.message);
    }
  }

  // ------------------------------------------------------------------ report rendering
  const num = (x) => (typeof x === "number" ? (Number.isInteger(x) ? x.toLocaleString("en-US").replace(/,/g, "\u2009") : String(Number(x.toPrecision(3)))) : String(x));
  const g3 = (x) => (typeof x === "number" ? String(Number(x.toPrecision(3))) : String(x));

  // The few numbers that matter for each check (threadmap/report/formats.py: headline).
  function headline(r) {
    const s = r.summary || {};
    switch (s.check) {
      case "coverage":
        return `${num(s.accesses)} accesses / ${num(s.elements)} elements, missing ${s.missing}, duplicates ${s.duplicates}, outside tile ${s.out_of_tile}, out of bounds ${s.out_of_bounds}` + (s.masked ? `, masked (predicate false) ${num(s.masked)}` : "");
      case "grid_coverage":
        return `covered ${num(s.covered)}/${num(s.elements)}, duplicates ${s.duplicates}, out of bounds ${s.out_of_bounds}` + (s.aliased ? `, aliased ${s.aliased}` : "");
      case "predicates":
        return `out of bounds ${s.out_of_bounds}, lost ${s.lost}, straddling vectors ${s.straddling}` + ((s.precondition || []).length ? `; needs ${s.precondition.join(" and ")}` : "");
      case "coalescing":
        return `${g3(s.sectors_per_request)} sectors/request (ideal ${g3(s.ideal_sectors_per_request)}), ${num(s.requests)} requests, ${num(s.sectors)} sectors, ${s.access_bits}-bit, misaligned ${s.misaligned}`;
      case "bank_conflicts":
        return `${num(s.wavefronts)} wavefronts / ideal ${num(s.ideal_wavefronts)} over ${num(s.instructions)} instructions (worst ${s.max_wavefronts}), ${s.access_bits}-bit`;
      case "vectorize":
        return `declared ${s.declared_bits}-bit, widest legal ${s.max_legal_bits}-bit`;
      case "dataflow":
        return `${s.transform || "no transform"}: moved ${num(s.moved)}, wrong ${s.wrong_values}` + (s.missing === null || s.missing === undefined ? "" : `, missing ${num(s.missing)}`) + `, races ${s.races}, stale ${s.stale_reads}, uninitialised ${s.uninitialised_reads}, write-after-read ${s.writes_after_reads}`;
      case "skip":
        return s.reason || "skipped";
      default:
        return "";
    }
  }

  const fmtVal = (v) => (Array.isArray(v) ? "(" + v.map(fmtVal).join(", ") + ")" : v === null ? "—" : typeof v === "object" ? witnessText(v) : String(v));
  const WITNESS_KEYS = ["block", "thread", "step", "value", "element", "warp_lane", "coordinate", "address"];

  // A witness as words (formats.py: witness_text), then the other scalar fields.
  function witnessText(w) {
    if (!w || typeof w !== "object") return "";
    const parts = [];
    const seen = new Set();
    for (const k of WITNESS_KEYS) {
      if (k in w && w[k] !== null) { parts.push(`${k.replace("_", " ")} ${fmtVal(w[k])}`); seen.add(k); }
    }
    for (const [k, v] of Object.entries(w)) {
      if (seen.has(k) || v === null || k === "first" || k === "second") continue;
      if (Array.isArray(v) && v.length && typeof v[0] === "object" && !Array.isArray(v[0])) continue; // tables
      if (Array.isArray(v) && v.length > 8) continue;
      if (typeof v === "object" && !Array.isArray(v)) continue;
      parts.push(`${k.replace(/_/g, " ")} ${fmtVal(v)}`);
    }
    for (const pair of ["first", "second"]) {
      if (w[pair] && typeof w[pair] === "object") parts.push(`${pair} access (${witnessText(w[pair])})`);
    }
    return parts.join(", ");
  }

  // Lists of records in a witness (e.g. the lanes of a bank conflict) as small tables.
  function witnessTables(w) {
    const out = [];
    if (!w || typeof w !== "object") return out;
    for (const [k, v] of Object.entries(w)) {
      let rows = null;
      if (Array.isArray(v) && v.length && v[0] && typeof v[0] === "object" && !Array.isArray(v[0])) rows = v;
      else if (k === "lane_addresses" && Array.isArray(v)) rows = v.map(([lane, address]) => ({ lane, address }));
      if (!rows) continue;
      const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
      const table = el("table", { class: "mini" },
        el("caption", { text: k.replace(/_/g, " ") }),
        el("thead", {}, el("tr", {}, cols.map((c) => el("th", { text: c.replace(/_/g, " ") })))),
        el("tbody", {}, rows.slice(0, 64).map((r) => el("tr", {}, cols.map((c) => el("td", { text: r[c] === undefined ? "" : fmtVal(r[c]) }))))));
      out.push(table);
    }
    return out;
  }

  const where = (r) => (r.stage === null || r.stage === undefined ? "—" : String(r.stage) + (r.side ? "." + r.side : ""));
  const badge = (status) => el("span", { class: "status st-" + String(status).toLowerCase(), text: status });

  function lineOf(result, finding) {
    if (result && Number.isInteger(result.line)) return result.line;
    const st = finding && Number.isInteger(finding.stage) ? finding.stage : result && result.stage;
    return Number.isInteger(st) ? state.stageLines[st] : undefined;
  }

  function focusFinding(node, line, stage) {
    for (const n of document.querySelectorAll(".finding.selected, tr.selected")) n.classList.remove("selected");
    node.classList.add("selected");
    if (line) editor.highlight([line]);
    if (Number.isInteger(stage) && [...$("stage").options].some((o) => o.value === String(stage))) {
      $("stage").value = String(stage);
      if (activeTab() === "pictures") loadPicture();
    }
  }

  function findingNode(f, result) {
    const line = lineOf(result, f);
    const stage = Number.isInteger(f.stage) ? f.stage : result && result.stage;
    const node = el("div", {
      class: "finding sev-" + (f.severity || "error"), tabindex: "0", role: "button",
      dataset: { line: line ? String(line) : "", check: f.check || "" },
      title: line ? `click: show spec line ${line}` : "",
    });
    const head = el("div", { class: "finding-head" },
      el("span", { class: "sev", text: f.severity || "error" }),
      el("span", { class: "check-name", text: f.check }),
      el("span", { class: "where", text: "stage " + where({ stage, side: f.side }) }),
      line ? el("span", { class: "lineref", text: "line " + line }) : null);
    node.append(head, el("div", { class: "message", text: f.message }));
    const wt = witnessText(f.witness);
    if (wt) node.append(el("div", { class: "witness" }, el("span", { class: "label", text: "witness " }), el("span", { text: wt })));
    const tables = witnessTables(f.witness);
    if (tables.length) node.append(el("details", { class: "witness-details" }, el("summary", { text: "witness details" }), tables));
    const act = (e) => {
      if (e.target.closest("details")) return;
      focusFinding(node, line, stage);
    };
    node.addEventListener("click", act);
    node.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); act(e); } });
    return node;
  }

  function renderReport(report, job) {
    const box = clear($("report"));
    state.stageLines = {};
    state.svgCache.clear();
    const stages = new Set();
    if (!report) {
      box.append(el("div", { class: "empty muted", text: "No report." }));
      fillStages(stages);
      return;
    }
    const runs = report.runs || [];
    const errors = report.errors || [];
    const prove = runs.some((r) => Array.isArray(r.properties));
    for (const run of runs) for (const r of run.results || []) {
      if (Number.isInteger(r.stage)) { stages.add(r.stage); if (Number.isInteger(r.line)) state.stageLines[r.stage] = r.line; }
    }

    if (errors.length) {
      setState("invalid", "invalid spec");
      showError(errors.length === 1 ? "The spec could not be verified" : `${errors.length} specs could not be verified`,
        errors.map((e) => e.message).join("\n"));
    } else if (prove) {
      const all = runs.every((r) => r.properties.every((p) => p.status === "PROVED"));
      setState(all ? "pass" : "fail", all ? "PROVED" : "NOT PROVED");
    } else {
      const fail = runs.some((r) => r.verdict === "fail");
      const expected = runs.every((r) => r.as_expected);
      setState(fail ? "fail" : "pass", (fail ? "FAIL" : "PASS") + (runs.length && expected ? " · as expected" : ""));
    }

    for (const run of runs) box.append(prove ? proveRunNode(run) : runNode(run));
    if (!runs.length && !errors.length) box.append(el("div", { class: "empty muted", text: "The report has no runs." }));
    fillStages(stages, runs);
  }

  function runNode(run) {
    const sec = el("section", { class: "run" });
    const verdict = String(run.verdict || "").toUpperCase();
    const sizes = Object.entries(run.sizes || {}).map(([k, v]) => `${k}=${v}`).join(", ");
    sec.append(el("div", { class: "run-head" },
      el("span", { class: "verdict v-" + run.verdict, text: verdict }),
      el("h2", { class: "spec-name", text: run.spec }),
      el("span", { class: run.as_expected ? "expect ok" : "expect bad",
        text: run.as_expected ? "as expected" : `expected ${String(run.expected).toUpperCase()}` })));
    const how = run.totals === "enumerated" ? `every block simulated (${num(run.blocks)})`
      : `${run.blocks_simulated} of ${num(run.blocks)} blocks simulated, ` + (run.totals === "tiling" ? "whole-grid totals by tiling" : "counts partial");
    const meta = [sizes ? "sizes " + sizes : null, run.grid ? "grid " + run.grid.join("×") : null, how,
      typeof run.seconds === "number" ? run.seconds.toFixed(2) + " s" : null].filter(Boolean).join(" · ");
    sec.append(el("div", { class: "run-meta muted", text: meta }));
    if ((run.failing || []).length) {
      sec.append(el("div", { class: "run-failing" }, "failing: ", run.failing.map((c) => el("code", { text: c }))));
    }
    for (const n of run.notes || []) sec.append(el("div", { class: "note", text: n }));

    const results = run.results || [];
    let findingsNode = null;
    const withFindings = results.filter((r) => (r.findings || []).length);
    if (withFindings.length) {
      const list = el("div", { class: "findings" });
      list.append(el("h3", { text: `Findings (${withFindings.length} failing check${withFindings.length === 1 ? "" : "s"})` }, el("span", { class: "muted small", text: " — click one to see its stage in the spec" })));
      for (const r of withFindings) {
        const group = el("div", { class: "finding-group" });
        r.findings.forEach((f, i) => {
          const n = findingNode(f, r);
          if (i === 0) n.dataset.rid = r.check + "@" + where(r);
          group.append(n);
        });
        const more = (r.total_findings || 0) - r.findings.length;
        if (more > 0) group.append(el("div", { class: "more muted small", text: `… and ${num(more)} more ${r.check} finding${more === 1 ? "" : "s"} at stage ${where(r)} not listed` }));
        list.append(group);
      }
      findingsNode = list;
    }
    const hidden = results.filter((r) => r.status === "PASS" && ROUTINE.has(r.check)).length;
    const table = el("table", { class: "results" },
      el("thead", {}, el("tr", {}, ["check", "stage", "status", "summary"].map((h) => el("th", { text: h })))));
    const tbody = el("tbody");
    for (const r of results) {
      const tr = el("tr", {
        class: "st-row-" + String(r.status).toLowerCase() + (r.status === "PASS" && ROUTINE.has(r.check) ? " routine" : ""),
        dataset: { check: r.check, stage: r.stage === null ? "" : String(r.stage), line: r.line ? String(r.line) : "" },
        title: r.line ? `click: show spec line ${r.line}` : "",
      },
      el("td", { class: "c-check", text: r.check }),
      el("td", { class: "c-stage", text: where(r) }),
      el("td", { class: "c-status" }, badge(r.status)),
      el("td", { class: "c-summary" }, headline(r),
        r.total_findings ? el("span", { class: "nfind", text: ` · ${num(r.total_findings)} finding${r.total_findings === 1 ? "" : "s"}` }) : null));
      tr.addEventListener("click", () => {
        const f = sec.querySelector(`.finding[data-rid="${CSS.escape(r.check + "@" + where(r))}"]`);
        if (f) { f.scrollIntoView({ block: "nearest", behavior: "smooth" }); focusFinding(f, lineOf(r, null), r.stage); }
        else focusFinding(tr, lineOf(r, null), r.stage);
      });
      tbody.append(tr);
    }
    table.append(tbody);
    const wrap = el("div", { class: "table-wrap" }, table);
    if (findingsNode) sec.append(findingsNode);
    const head = el("div", { class: "table-head" }, el("h3", { text: "Checks by stage" }));
    if (hidden) {
      const t = el("label", { class: "check-inline small muted" }, el("input", { type: "checkbox", class: "show-routine" }),
        ` show ${hidden} passing vectorize/predicates row${hidden === 1 ? "" : "s"}`);
      t.querySelector("input").addEventListener("change", (e) => wrap.classList.toggle("show-routine", e.target.checked));
      head.append(t);
    }
    sec.append(head);
    sec.append(wrap);

    return sec;
  }

  function proveRunNode(run) {
    const sec = el("section", { class: "run" });
    const ok = run.properties.every((p) => p.status === "PROVED");
    sec.append(el("div", { class: "run-head" },
      el("span", { class: "verdict v-" + (ok ? "pass" : "fail"), text: ok ? "PROVED" : "NOT PROVED" }),
      el("h2", { class: "spec-name", text: run.spec })));
    const ranges = Object.entries(run.ranges || {}).map(([k, v]) => `${k} ∈ ${v}`).join(", ");
    sec.append(el("div", { class: "run-meta muted", text: [ranges && "for " + ranges, (run.assume || []).length ? "assuming " + run.assume.join(", ") : null,
      `${run.bits}-bit`, typeof run.seconds === "number" ? run.seconds.toFixed(2) + " s" : null].filter(Boolean).join(" · ") }));
    const tbody = el("tbody");
    for (const p of run.properties) {
      const cex = p.sizes ? "counterexample " + Object.entries(p.sizes).map(([k, v]) => `${k}=${v}`).join(", ") : "";
      tbody.append(el("tr", { class: "st-row-" + p.status.toLowerCase() },
        el("td", { class: "c-check", text: p.property }),
        el("td", { class: "c-status" }, badge(p.status)),
        el("td", { class: "c-stage", text: p.method }),
        el("td", { class: "c-summary", text: [p.reason, cex, (p.precondition || []).length ? "needs " + p.precondition.join(" and ") : ""].filter(Boolean).join("; ") })));
    }
    sec.append(el("div", { class: "table-wrap" }, el("table", { class: "results" },
      el("thead", {}, el("tr", {}, ["property", "status", "method", "result"].map((h) => el("th", { text: h })))), tbody)));
    const withF = run.properties.filter((p) => (p.findings || []).length);
    if (withF.length) {
      const list = el("div", { class: "findings" }, el("h3", { text: "Findings at the counterexample sizes" }));
      for (const p of withF) for (const f of p.findings) list.append(findingNode(f, null));
      sec.append(list);
    }
    return sec;
  }

  // ------------------------------------------------------------------ pictures (SVG)
  function fillStages(stages, runs) {
    const sel = clear($("stage"));
    const sorted = [...stages].sort((a, b) => a - b);
    for (const s of sorted) {
      const kinds = new Set();
      for (const run of runs || []) for (const r of run.results || []) if (r.stage === s && r.status === "FAIL") kinds.add(r.check);
      sel.append(el("option", { value: String(s), text: `stage ${s}` + (state.stageLines[s] ? ` (line ${state.stageLines[s]})` : "") + (kinds.size ? " — FAIL " + [...kinds].join(", ") : "") }));
    }
    sel.append(el("option", { value: "all", text: "all copy stages" }));
    // default: the first stage with a failure, else the first stage
    let pick = sorted[0];
    for (const run of runs || []) for (const r of run.results || []) {
      if (r.status === "FAIL" && Number.isInteger(r.stage)) { pick = r.stage; break; }
    }
    if (pick !== undefined) sel.value = String(pick);
    clear($("svgbox")).append(el("div", { class: "empty muted", text: state.job ? "Open this tab to draw the chosen stage." : "Run a spec first." }));
    setInspector(null);
    if (activeTab() === "pictures") loadPicture();
  }

  const SVG_NS = "http://www.w3.org/2000/svg";
  const SVG_TAGS = new Set(["svg", "g", "rect", "text", "tspan", "title", "desc", "line", "polyline", "polygon", "path", "circle", "ellipse", "defs", "lineargradient", "stop", "clippath"]);
  const SVG_ATTRS = new Set(["x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "rx", "ry", "width", "height", "viewbox", "fill", "stroke",
    "stroke-width", "stroke-dasharray", "opacity", "fill-opacity", "stroke-opacity", "transform", "font-family", "font-size", "font-weight",
    "text-anchor", "dominant-baseline", "class", "points", "d", "offset", "stop-color", "id", "preserveaspectratio", "xmlns", "clip-path"]);

  // Parse the server's SVG as XML and keep only plain drawing elements and attributes: no
  // script, no foreignObject, no event handlers, no links, no url() references.
  function sanitizeSvg(text) {
    const doc = new DOMParser().parseFromString(text, "image/svg+xml");
    const root = doc.documentElement;
    if (!root || root.namespaceURI !== SVG_NS || root.localName !== "svg" || doc.getElementsByTagName("parsererror").length) {
      throw new Error("the server sent a picture that is not valid SVG");
    }
    const walk = (node) => {
      for (const child of [...node.childNodes]) {
        if (child.nodeType === Node.ELEMENT_NODE) {
          if (child.namespaceURI !== SVG_NS || !SVG_TAGS.has(child.localName.toLowerCase())) { child.remove(); continue; }
          for (const a of [...child.attributes]) {
            const name = a.name.toLowerCase();
            if (!SVG_ATTRS.has(name) || /url\s*\(|javascript:/i.test(a.value)) child.removeAttribute(a.name);
          }
          walk(child);
        } else if (child.nodeType !== Node.TEXT_NODE) {
          child.remove();  // comments, processing instructions, CDATA
        }
      }
    };
    for (const a of [...root.attributes]) {
      if (!SVG_ATTRS.has(a.name.toLowerCase()) || /url\s*\(|javascript:/i.test(a.value)) root.removeAttribute(a.name);
    }
    walk(root);
    return document.importNode(root, true);
  }

  async function loadPicture() {
    const job = state.job;
    const box = $("svgbox");
    if (!job || job.state !== "done") return;
    const stage = $("stage").value;
    const block = Math.max(0, parseInt($("block").value, 10) || 0);
    const key = `${job.id}|${stage}|${block}`;
    if (state.svgWanted === key && box.querySelector("svg")) return;
    state.svgWanted = key;
    setInspector(null);
    let svg = state.svgCache.get(key);
    if (!svg) {
      $("pic-status").textContent = "drawing…";
      try {
        const q = new URLSearchParams();
        if (stage !== "all") q.set("stage", stage);
        q.set("block", String(block));
        const text = await api(`/v1/jobs/${encodeURIComponent(job.id)}/svg?${q}`);
        svg = sanitizeSvg(typeof text === "string" ? text : "");
        state.svgCache.set(key, svg);
      } catch (e) {
        if (state.svgWanted !== key) return;
        $("pic-status").textContent = "";
        clear(box).append(el("div", { class: "error-box", text: "Could not draw this stage: " + e.message }));
        return;
      }
    }
    if (state.svgWanted !== key) return;
    const rects = svg.querySelectorAll("rect").length;
    $("pic-status").textContent = `${rects.toLocaleString("en-US")} cells · hover one for details`;
    clear(box).append(svg);
  }

  function setInspector(text) {
    const box = clear($("inspector"));
    if (!text) { box.append(el("span", { class: "muted", text: "Hover a cell: its thread, value, lane, bank or sector appear here." })); return; }
    box.append(el("span", { class: "tip-text", text }));
  }

  function initPictures() {
    const box = $("svgbox");
    let current = null;
    box.addEventListener("mouseover", (e) => {
      const cell = e.target.closest && e.target.closest("rect");
      if (!cell || cell === current) return;
      if (current) current.classList.remove("hover");
      current = cell;
      cell.classList.add("hover");
      const t = cell.querySelector("title");
      setInspector(t ? t.textContent : null);
    });
    box.addEventListener("mouseleave", () => { if (current) current.classList.remove("hover"); current = null; });
    $("stage").addEventListener("change", loadPicture);
    $("block").addEventListener("change", loadPicture);
    $("fit").addEventListener("change", (e) => box.classList.toggle("fit", e.target.checked));
  }

  // ------------------------------------------------------------------ tabs
  function activeTab() { const t = document.querySelector(".tab.active"); return t ? t.dataset.tab : "report"; }
  function showTab(name) {
    for (const t of document.querySelectorAll(".tab")) { const on = t.dataset.tab === name; t.classList.toggle("active", on); t.setAttribute("aria-selected", on ? "true" : "false"); }
    for (const p of document.querySelectorAll(".tabpane")) p.classList.toggle("active", p.id === "tab-" + name);
    if (name === "pictures") loadPicture();
  }

  // ------------------------------------------------------------------ layout calculator
  function splitOps(text) {
    const out = []; let depth = 0; let cur = "";
    for (const ch of text.trim()) {
      if (ch === "(" || ch === "<") depth++;
      if (ch === ")" || ch === ">") depth = Math.max(0, depth - 1);
      if (/\s/.test(ch) && depth === 0) { if (cur) out.push(cur); cur = ""; } else cur += ch;
    }
    if (cur) out.push(cur);
    return out;
  }

  const PALETTE = [[175, 175, 255], [175, 255, 175], [255, 255, 175], [255, 175, 175], [210, 210, 255], [210, 255, 210], [255, 255, 210], [255, 210, 210]];

  async function computeLayout(ev) {
    if (ev) ev.preventDefault();
    const expr = $("layout-expr").value.trim();
    const errBox = $("layout-error");
    const out = clear($("layout-result"));
    errBox.hidden = true;
    if (!expr) return;
    try {
      const r = await api("/v1/layout", { method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ expr, ops: splitOps($("layout-ops").value) }) });
      const dl = el("dl", { class: "layout-facts" });
      const fact = (k, v) => { if (v !== undefined && v !== null) dl.append(el("dt", { text: k }), el("dd", {}, el("code", { text: String(v) }))); };
      if (r.input !== undefined && r.input !== r.result) fact("input", r.input);
      fact("result", r.result);
      fact("size", r.size);
      fact("cosize", r.cosize);
      out.append(dl);
      if (Array.isArray(r.grid) && r.grid.length) {
        const cols = r.grid[0].length;
        const table = el("table", { class: "grid", id: "layout-grid" },
          el("thead", {}, el("tr", {}, el("th", { class: "corner", text: "" }), Array.from({ length: cols }, (_, j) => el("th", { text: String(j) })))),
          el("tbody", {}, r.grid.map((row, i) => el("tr", {}, el("th", { text: String(i) }),
            row.map((v, j) => {
              const c = PALETTE[((Number(v) % 8) + 8) % 8];
              return el("td", { text: fmtVal(v), title: `(${i},${j}) → ${fmtVal(v)}`, style: `background:rgb(${c.join(",")})` });
            })))));
        out.append(el("div", { class: "grid-wrap" }, table),
          el("p", { class: "muted small", text: "Row i, column j holds the layout's value at coordinate (i, j), as CuTe's print_layout shows it; colours cycle over values mod 8." }));
      } else if (r.size !== undefined) {
        out.append(el("p", { class: "muted small", text: "No grid: the calculator draws rank-2 layouts of at most 4096 entries." }));
      }
    } catch (e) {
      errBox.hidden = false;
      clear(errBox).append(el("div", { class: "error-title", text: e.status === 422 ? "Not a layout the calculator understands" : `Error ${e.status || ""}`.trim() }),
        el("pre", { class: "error-pre", text: e.message }));
    }
  }

  function initLayout() {
    const box = $("layout-presets");
    box.append(el("span", { class: "muted small", text: "try: " }));
    for (const p of LAYOUT_PRESETS) {
      box.append(el("button", { type: "button", class: "chip-btn", text: p, onclick: () => { $("layout-expr").value = p; $("layout-ops").value = ""; computeLayout(); } }));
    }
    $("layout-form").addEventListener("submit", computeLayout);
  }

  // ------------------------------------------------------------------ start
  function initExamples() {
    const sel = $("examples");
    const examples = window.THREADMAP_EXAMPLES || [];
    for (const ex of examples) sel.append(el("option", { value: ex.id, text: ex.label }));
    sel.addEventListener("change", () => {
      const ex = examples.find((x) => x.id === sel.value);
      if (!ex) return;
      editor.setText(ex.text);
      $("format").value = "auto";
      detectFormatLabel();
      saveDraft();
      sel.value = "";
      sel.blur();
    });
  }

  async function health() {
    try {
      const h = await api("/healthz");
      $("health").textContent = `● v${h.threadmap} · ${h.backend}`;
      $("health").className = "health ok";
    } catch {
      $("health").textContent = "● offline";
      $("health").className = "health bad";
    }
  }

  function start() {
    editor.init();
    buildChecks();
    initExamples();
    initPictures();
    initLayout();
    for (const t of document.querySelectorAll(".tab")) t.addEventListener("click", () => showTab(t.dataset.tab));
    $("run-form").addEventListener("submit", runJob);
    document.addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) runJob(e); });
    $("format").addEventListener("change", detectFormatLabel);
    $("settings-form").addEventListener("submit", (e) => e.preventDefault());
    $("copy-link").addEventListener("click", async () => {
      const url = new URL($("permalink").getAttribute("href"), location.href).href;
      try { await navigator.clipboard.writeText(url); $("copy-link").textContent = "copied"; } catch { $("copy-link").textContent = "copy failed"; }
      setTimeout(() => { $("copy-link").textContent = "copy"; }, 1500);
    });
    try { $("token").value = sessionStorage.getItem("threadmap.token") || ""; } catch { /* ignore */ }
    $("token").addEventListener("change", () => { try { sessionStorage.setItem("threadmap.token", $("token").value); } catch { /* ignore */ } });
    window.addEventListener("popstate", () => route());
    window.addEventListener("hashchange", () => route());
    health();
    route();
  }

  // `/#spec=<base64url of the spec's UTF-8 text>`: a spec handed over in the link itself (the
  // sweep's HTML report links so); a fragment never reaches the server.  null: no such
  // fragment; undefined: one that does not decode.
  function specFromFragment() {
    const m = /^#spec=(.*)$/s.exec(location.hash);
    if (!m) return null;
    if (!/^[A-Za-z0-9_-]*$/.test(m[1])) return undefined;
    try {
      const b64 = m[1].replace(/-/g, "+").replace(/_/g, "/");
      const bin = atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4));
      return new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
    } catch {
      return undefined;
    }
  }

  function route() {
    const id = new URLSearchParams(location.search).get("job");
    if (id) { openPermalink(id); return; }
    const linked = specFromFragment();
    if (linked === undefined) {
      showError("The link's spec could not be read", "the #spec= part of the address is not base64url of UTF-8 text");
    } else if (linked !== null) {
      showError("", "");
      editor.setText(linked);   // a textarea's value: text, never markup
      $("format").value = "auto";
      detectFormatLabel();
      return;
    }
    const draft = loadDraft();
    const ex = (window.THREADMAP_EXAMPLES || [])[0];
    if (!$("spec").value) editor.setText(draft && draft.trim() ? draft : ex ? ex.text : "");
  }

  // for tests and the console
  window.threadmapExplorer = { editor, state, sanitizeSvg, detectFormat, headline, witnessText, specFromFragment };

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
