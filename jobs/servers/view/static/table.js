// symbolkg view: the problem table. One renderer, two sources of rows:
//   "api"   (the server): each change asks /api/... for one page (DuckDB does the filtering);
//   "local" (the static bundle): the rows are embedded (rows.js) and filtered here the same way.
// The filter state lives in the URL's #fragment, so a filtered view is a link to share, and it
// works the same over http:// and from disk (file://).
(function () {
  "use strict";
  var cfgEl = document.getElementById("table-config");
  if (!cfgEl) return;
  var cfg = JSON.parse(cfgEl.textContent);
  var form = document.getElementById("filters");
  var table = document.getElementById("problems");
  var status = document.getElementById("table-status");
  var pager = document.getElementById("pager");
  var state = {};

  function readHash() {
    var params = new URLSearchParams(location.hash.replace(/^#/, ""));
    state = {};
    params.forEach(function (v, k) { state[k] = v; });
    Array.prototype.forEach.call(form.elements, function (el) {
      if (el.name) el.value = state[el.name] || (el.tagName === "SELECT" && el.name === "sort" ? el.options[0].value : "");
    });
  }

  function writeHash() {
    var params = new URLSearchParams();
    Object.keys(state).forEach(function (k) { if (state[k] !== "" && state[k] != null) params.set(k, state[k]); });
    var h = params.toString();
    history.replaceState(null, "", h ? "#" + h : location.pathname + location.search);
  }

  function fmt(col, v) {
    if (v === null || v === undefined || v === "") return "–";
    if (col.fmt === "secs") return Number(v).toFixed(3);
    if (col.fmt === "int") return Number(v).toLocaleString("en-US");
    if (col.fmt === "bool") return v ? "yes" : "no";
    return String(v);
  }

  function render(result) {
    var head = "<thead><tr>" + cfg.columns.map(function (c) {
      return "<th" + (c.num ? ' class="num"' : "") + ">" + c.label + "</th>";
    }).join("") + "</tr></thead>";
    var body = result.rows.map(function (r) {
      return "<tr data-id=\"" + esc(r.problem_id) + "\">" + cfg.columns.map(function (c) {
        var v = fmt(c, r[c.key]);
        var inner = esc(v);
        if (c.badge && r[c.key] != null) inner = '<span class="badge ' + esc(String(r[c.key]).replace(/\s+/g, "-")) + '">' + inner + "</span>";
        if (c.link && r.href) inner = '<a href="' + esc(r.href) + '">' + inner + "</a>";
        return "<td" + (c.num ? ' class="num"' : "") + ">" + inner + "</td>";
      }).join("") + "</tr>";
    }).join("");
    table.innerHTML = head + "<tbody>" + body + "</tbody>";
    status.textContent = result.matched.toLocaleString("en-US") + " of " + result.total.toLocaleString("en-US") +
      " problems match" + (result.pages > 1 ? " (page " + result.page + " of " + result.pages + ")" : "");
    pager.innerHTML = "";
    if (result.pages > 1) {
      [["« first", 1], ["‹ prev", result.page - 1], ["next ›", result.page + 1], ["last »", result.pages]].forEach(function (b) {
        var btn = document.createElement("button");
        btn.type = "button"; btn.textContent = b[0];
        btn.disabled = b[1] < 1 || b[1] > result.pages || b[1] === result.page;
        btn.addEventListener("click", function () { state.page = String(b[1]); writeHash(); query(); });
        pager.appendChild(btn);
      });
    }
    table.setAttribute("data-state", "ready");
    table.setAttribute("data-matched", String(result.matched));
  }

  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (ch) {
      return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[ch];
    });
  }

  function localQuery() {
    var rows = window[cfg.data] || [];
    // the server's search: each word must begin a word of the id, question or program (queries.search_clause)
    var tokens = [], subs = [];
    (state.q || "").toLowerCase().split(/\s+/).filter(Boolean).forEach(function (w) {
      var t = w.match(/[a-z0-9_]+/g);
      if (t) tokens = tokens.concat(t); else subs.push(w);
    });
    var out = rows.filter(function (r) {
      for (var name in cfg.filters) {
        var want = state[name];
        if (want && String(r[cfg.filters[name]]) !== want) return false;
      }
      if (tokens.length && !r.words) r.words = r.text.match(/[a-z0-9_]+/g) || [];
      for (var i = 0; i < tokens.length; i++) {
        var tok = tokens[i];
        if (!r.words.some(function (w) { return w.lastIndexOf(tok, 0) === 0; })) return false;
      }
      for (var j = 0; j < subs.length; j++) if (r.text.indexOf(subs[j]) < 0) return false;
      return true;
    });
    var sort = state.sort || "id", desc = sort.charAt(0) === "-", key = cfg.sorts[sort.replace(/^-/, "")] || "rownum";
    out.sort(function (a, b) {
      var x = a[key], y = b[key];
      if (x === y || (x == null && y == null)) return a.rownum - b.rownum;
      if (x == null) return 1; if (y == null) return -1;
      return (x < y ? -1 : 1) * (desc ? -1 : 1);
    });
    var size = Math.min(Math.max(parseInt(state.page_size || "50", 10) || 50, 1), 500);
    var pages = Math.max(1, Math.ceil(out.length / size));
    var page = Math.min(Math.max(parseInt(state.page || "1", 10) || 1, 1), pages);
    return {total: rows.length, matched: out.length, page: page, pages: pages, page_size: size,
            rows: out.slice((page - 1) * size, page * size)};
  }

  var seq = 0;
  function query() {
    table.setAttribute("data-state", "loading");
    if (cfg.mode === "local") { render(localQuery()); return; }
    var mine = ++seq;
    var params = new URLSearchParams(cfg.api.split("?")[1] || "");
    Object.keys(state).forEach(function (k) { if (state[k]) params.set(k, state[k]); });
    fetch(cfg.api.split("?")[0] + "?" + params.toString(), {credentials: "same-origin"})
      .then(function (r) { return r.json().then(function (j) { if (!r.ok) throw new Error(j.error || r.status); return j; }); })
      .then(function (j) { if (mine === seq) render(j); })
      .catch(function (e) { status.textContent = "error: " + e.message; table.setAttribute("data-state", "error"); });
  }

  var timer = null;
  form.addEventListener("input", function (ev) {
    var el = ev.target;
    if (!el.name) return;
    state[el.name] = el.value;
    if (el.name !== "page") state.page = "";
    writeHash();
    clearTimeout(timer);
    timer = setTimeout(query, el.tagName === "INPUT" ? 200 : 0);
  });
  form.addEventListener("submit", function (ev) { ev.preventDefault(); query(); });
  window.addEventListener("hashchange", function () { readHash(); query(); });
  readHash();
  query();
})();
