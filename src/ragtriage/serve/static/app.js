/* ragtriage serve: keyboard navigation and the annotation screen.
   No framework, no inline script (the Content-Security-Policy forbids it), and no
   innerHTML with data: every string from a trace is set with textContent. */
(function () {
  "use strict";
  var meta = document.querySelector('meta[name="csrf-token"]');
  var csrf = meta ? meta.getAttribute("content") : "";
  var page = document.body.getAttribute("data-page");

  function typing(e) {
    var t = e.target;
    return !!t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable);
  }
  function follow(id) {
    var a = document.getElementById(id);
    if (a && a.getAttribute("href")) { window.location.href = a.getAttribute("href"); return true; }
    return false;
  }
  function plainKey(e) { return !(e.ctrlKey || e.metaKey || e.altKey); }

  // ------------------------------------------------------------------ run page
  if (page === "run") {
    var form = document.getElementById("filter-form");
    if (form) {
      Array.prototype.forEach.call(form.querySelectorAll("select"), function (sel) {
        sel.addEventListener("change", function () { form.submit(); });
      });
    }
    var vsForm = document.getElementById("vs-form");
    var vsSel = document.getElementById("f-vs");
    if (vsForm && vsSel) { vsSel.addEventListener("change", function () { vsForm.submit(); }); }
    var rows = document.querySelectorAll("tr.trace-row");
    var sel = -1;
    function select(i) {
      if (!rows.length) { return; }
      if (sel >= 0) { rows[sel].classList.remove("sel"); }
      sel = Math.max(0, Math.min(rows.length - 1, i));
      rows[sel].classList.add("sel");
      rows[sel].scrollIntoView({ block: "nearest" });
    }
    document.addEventListener("keydown", function (e) {
      if (typing(e)) { if (e.key === "Escape") { e.target.blur(); } return; }
      if (!plainKey(e)) { return; }
      if (e.key === "/") { e.preventDefault(); var q = document.getElementById("f-q"); if (q) { q.focus(); } }
      else if (e.key === "j" || e.key === "ArrowDown") { e.preventDefault(); select(sel + 1); }
      else if (e.key === "k" || e.key === "ArrowUp") { e.preventDefault(); select(sel - 1); }
      else if (e.key === "Enter" && sel >= 0) {
        var link = rows[sel].querySelector("a.trace-link");
        if (link) { window.location.href = link.getAttribute("href"); }
      }
      else if (e.key === "ArrowRight") { follow("page-next"); }
      else if (e.key === "ArrowLeft") { follow("page-prev"); }
    });
  }

  // ------------------------------------------------------------ agreement page
  if (page === "agreement") {
    var tf = document.getElementById("taxonomy-form");
    var ts = document.getElementById("a-taxonomy");
    if (tf && ts) { ts.addEventListener("change", function () { tf.submit(); }); }
  }

  // ---------------------------------------------------------------- trace page
  if (page === "trace") {
    document.addEventListener("keydown", function (e) {
      if (typing(e) || !plainKey(e)) { return; }
      if (e.key === "j" || e.key === "ArrowRight") { follow("next"); }
      else if (e.key === "k" || e.key === "ArrowLeft") { follow("prev"); }
      else if (e.key === "u") { follow("up"); }
      else if (e.key === "a") { follow("annotate-link"); }
    });
  }

  // ------------------------------------------------------------ annotate page
  if (page === "annotate") { annotate(); }

  function annotate() {
    var root = document.getElementById("annot");
    if (!root) { return; }
    var key = root.getAttribute("data-key");
    var blind = root.getAttribute("data-blind") === "1";
    var state = {
      answer_label: null, stage: null, types: [],
      revealed: root.getAttribute("data-shown") === "1", saved: false, busy: false
    };
    var status = document.getElementById("status");
    var typeInput = document.getElementById("type-input");
    var chosen = document.getElementById("type-chosen");
    var note = document.getElementById("note");
    var qtype = document.getElementById("qtype");
    var help = document.getElementById("keyhelp");

    function say(text, kind) {
      status.textContent = text;
      status.className = "status" + (kind ? " " + kind : "");
    }
    function buttons(field) { return document.querySelectorAll('.choice[data-field="' + field + '"]'); }
    function setChoice(field, value) {
      state[field] = value;
      Array.prototype.forEach.call(buttons(field), function (b) {
        b.classList.toggle("on", b.getAttribute("data-value") === (value === null ? "" : value) && (value !== null || field === "stage"));
      });
      state.saved = false;
    }
    // initial state from the page (a label saved before)
    ["answer_label", "stage"].forEach(function (field) {
      var on = document.querySelector('.choice.on[data-field="' + field + '"]');
      if (on) { state[field] = on.getAttribute("data-value") || null; }
    });
    Array.prototype.forEach.call(chosen.querySelectorAll("[data-type]"), function (p) {
      state.types.push(p.getAttribute("data-type"));
    });
    Array.prototype.forEach.call(document.querySelectorAll(".choice"), function (b) {
      b.addEventListener("click", function () {
        var v = b.getAttribute("data-value");
        setChoice(b.getAttribute("data-field"), v === "" ? null : v);
      });
    });

    function renderTypes() {
      while (chosen.firstChild) { chosen.removeChild(chosen.firstChild); }
      state.types.forEach(function (code) {
        var span = document.createElement("span");
        span.className = "pill";
        span.setAttribute("data-type", code);
        span.textContent = code;
        chosen.appendChild(span);
      });
      Array.prototype.forEach.call(document.querySelectorAll("#typelist [data-type]"), function (d) {
        d.classList.toggle("on", state.types.indexOf(d.getAttribute("data-type")) >= 0);
      });
    }
    function resolveType(text) {
      var v = text.trim();
      if (!v) { return null; }
      var items = document.querySelectorAll("#typelist [data-type]");
      var i, d;
      for (i = 0; i < items.length; i++) {
        d = items[i];
        if (/^\d+$/.test(v) && d.getAttribute("data-n") === v) { return d.getAttribute("data-type"); }
        if (d.getAttribute("data-type").toLowerCase() === v.toLowerCase()) { return d.getAttribute("data-type"); }
      }
      return null;
    }
    function toggleType(code) {
      var at = state.types.indexOf(code);
      if (at >= 0) { state.types.splice(at, 1); } else { state.types.push(code); }
      state.saved = false;
      renderTypes();
    }
    typeInput.addEventListener("keydown", function (e) {
      if (e.key === "Enter") {
        e.preventDefault();
        e.stopPropagation();
        var code = resolveType(typeInput.value);
        if (code) { toggleType(code); typeInput.value = ""; say(""); }
        else if (typeInput.value.trim()) { say("unknown type: " + typeInput.value, "err"); }
        else { typeInput.blur(); }
      } else if (e.key === "Escape") { typeInput.blur(); e.stopPropagation(); }
    });
    Array.prototype.forEach.call(document.querySelectorAll("#typelist [data-type]"), function (d) {
      d.addEventListener("click", function () { toggleType(d.getAttribute("data-type")); });
    });

    function showVerdict(v) {
      var box = document.getElementById("verdict-live");
      var noteEl = document.getElementById("blind-note");
      if (!box) { return; }
      if (noteEl) { noteEl.textContent = "You saved; the tool's verdict:"; }
      while (box.firstChild) { box.removeChild(box.firstChild); }
      if (!v) { var none = document.createElement("div"); none.textContent = "no diagnosis for this trace"; box.appendChild(none); return; }
      [["answer label", v.answer_label || "undetermined"], ["reason", v.answer_reason || ""],
       ["stage", v.stage || "—"], ["types", (v.types || []).join(", ") || "—"],
       ["confidence", v.confidence === null || v.confidence === undefined ? "n/a" : v.confidence.toFixed(2)]
      ].forEach(function (kv) {
        var k = document.createElement("div"); k.className = "k"; k.textContent = kv[0];
        var val = document.createElement("div"); val.className = "text"; val.textContent = kv[1];
        box.appendChild(k); box.appendChild(val);
      });
    }
    function showProgress(j) {
      // the progress line counts this save at once, not on the next page
      var done = document.getElementById("n-done");
      var mark = document.getElementById("this-labelled");
      if (done && typeof j.n_labelled === "number" && typeof j.n_traces === "number") {
        done.textContent = j.n_labelled + " of " + j.n_traces + " labelled by " + root.getAttribute("data-annotator");
      }
      if (mark && !mark.firstChild) {
        mark.appendChild(document.createTextNode(" · "));
        var b = document.createElement("b"); b.textContent = "this one is labelled";
        mark.appendChild(b);
      }
    }
    function refreshKappa() {
      var annotator = root.getAttribute("data-annotator");
      var tax = root.getAttribute("data-taxonomy");
      fetch("/api/runs/" + encodeURIComponent(key) + "/agreement?taxonomy=" + encodeURIComponent(tax),
            { credentials: "same-origin", headers: { "Accept": "application/json" } })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (panel) {
          if (!panel || !panel.vs_judge || !panel.vs_judge[annotator]) { return; }
          var rep = panel.vs_judge[annotator];
          var box = document.getElementById("kappa-box");
          var table = document.getElementById("kappa");
          if (!table) {
            var gone = document.getElementById("kappa-none");
            if (gone) { gone.parentNode.removeChild(gone); }
            table = document.createElement("table");
            table.id = "kappa"; table.className = "kappa";
            box.insertBefore(table, box.querySelector("p.small"));
          }
          while (table.firstChild) { table.removeChild(table.firstChild); }
          [["answer κ", rep.answer_kappa], ["failing κ", rep.failing_kappa], ["stage κ", rep.stage_kappa], ["type κ", rep.type_kappa]]
            .forEach(function (row) {
              var tr = document.createElement("tr");
              var a = document.createElement("td"); a.textContent = row[0];
              var b = document.createElement("td"); b.className = "n"; b.setAttribute("data-kappa", row[0]);
              b.textContent = row[1] && row[1].value !== null ? row[1].value.toFixed(3) : "undefined";
              var c = document.createElement("td"); c.className = "muted small"; c.textContent = "n=" + (row[1] ? row[1].n : 0);
              tr.appendChild(a); tr.appendChild(b); tr.appendChild(c); table.appendChild(tr);
            });
        })
        .catch(function () { /* the panel is informative; a failed refresh changes nothing */ });
    }

    function save() {
      if (state.busy) { return; }
      if (!state.answer_label) { say("press 1–" + buttons("answer_label").length + " for the answer label first", "err"); return; }
      state.busy = true;
      say("saving…");
      var body = {
        trace_id: root.getAttribute("data-trace"),
        annotator: root.getAttribute("data-annotator"),
        taxonomy: root.getAttribute("data-taxonomy"),
        answer_label: state.answer_label,
        stage: state.stage,
        types: state.types,
        question_type: qtype.value || null,
        note: note.value
      };
      fetch("/runs/" + encodeURIComponent(key) + "/annotations", {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf, "Accept": "application/json" },
        body: JSON.stringify(body)
      }).then(function (r) {
        return r.json().catch(function () { return { error: "HTTP " + r.status }; }).then(function (j) { return [r.ok, j]; });
      }).then(function (res) {
        state.busy = false;
        if (!res[0]) { say("not saved: " + (res[1].error || "error"), "err"); return; }
        state.saved = true;
        showProgress(res[1]);
        var next = root.getAttribute("data-next");
        if (blind && !state.revealed) {
          state.revealed = true;
          showVerdict(res[1].verdict);
          refreshKappa();
          say("saved ✓ — the verdict is shown; Enter for the next trace", "ok");
          return;
        }
        if (next) { say("saved ✓", "ok"); window.location.href = next; }
        else { refreshKappa(); say("saved ✓ (last trace of this order)", "ok"); }
      }).catch(function (err) { state.busy = false; say("not saved: " + err, "err"); });
    }
    function onEnter() {
      var next = root.getAttribute("data-next");
      if (state.saved && blind && state.revealed && next) { window.location.href = next; return; }
      save();
    }
    document.getElementById("save").addEventListener("click", save);

    document.addEventListener("keydown", function (e) {
      if (typing(e)) {
        if (e.key === "Escape") { e.target.blur(); }
        else if (e.key === "Enter" && (e.ctrlKey || e.metaKey) && e.target === note) { e.preventDefault(); note.blur(); save(); }
        return;
      }
      if (!plainKey(e)) { return; }
      var k = e.key;
      var hot = document.querySelector('.choice[data-hotkey="' + (k.length === 1 ? k.toLowerCase() : "") + '"]');
      if (hot && k.length === 1) {
        e.preventDefault();
        var v = hot.getAttribute("data-value");
        setChoice(hot.getAttribute("data-field"), v === "" ? null : v);
        return;
      }
      if (k === "t") { e.preventDefault(); typeInput.focus(); }
      else if (k === "y") { e.preventDefault(); qtype.focus(); }
      else if (k === "n") { e.preventDefault(); note.focus(); }
      else if (k === "Enter" || k === "s") { e.preventDefault(); onEnter(); }
      else if (k === "j" || k === "ArrowRight") { follow("next"); }
      else if (k === "k" || k === "ArrowLeft") { follow("prev"); }
      else if (k === "?") { help.classList.toggle("hidden"); }
      else if (k === "Escape" && !help.classList.contains("hidden")) { help.classList.add("hidden"); }
    });
    qtype.addEventListener("change", function () { state.saved = false; });
    note.addEventListener("input", function () { state.saved = false; });
  }
})();
