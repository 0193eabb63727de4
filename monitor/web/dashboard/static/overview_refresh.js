// The overview's refresh: every few seconds (data-every) it asks what changed since the version of
// the list it shows (data-version) and applies only that (monitor/web/dashboard/overview_changes.py):
//   304                  nothing changed: the page stays as it is
//   200 application/json the changed and added rows, the removed ids, the head if it changed, the
//                        order if rows moved: each changed row is replaced in place, the rest stays
//   200 text/html        the whole list (the server does not know our version): the section is replaced
// One request at a time; the next one is scheduled when the last one has ended.
(function () {
  "use strict";

  function section() { return document.getElementById("overview"); }

  function parse(html) {
    var t = document.createElement("template");
    t.innerHTML = html;
    return t.content.firstElementChild;
  }

  function loaded(el) {  // sparks.js draws the sparklines of what was put in
    el.dispatchEvent(new CustomEvent("herowatch:load", { bubbles: true }));
  }

  function rowsById(lists) {
    var byId = {};
    lists.forEach(function (ol) {
      for (var li = ol.firstElementChild; li; li = li.nextElementSibling) byId[li.getAttribute("data-run")] = li;
    });
    return byId;
  }

  // a row goes in the live list, or in the collapsed Finished one when it says so (data-section)
  function home(sec, li) {
    var done = li.getAttribute("data-section") === "finished";
    return sec.querySelector(done ? "ol.finished-runs" : "ol.runs.live");
  }

  function countFinished(sec) {
    var ol = sec.querySelector("ol.finished-runs"), box = sec.querySelector("details.finished");
    if (!ol || !box) return;
    box.hidden = ol.children.length === 0;
    box.querySelector("summary .n").textContent = String(ol.children.length);
  }

  // true when the list is now the one the server described (else the next refresh asks for all of it)
  function apply(sec, d) {
    var live = sec.querySelector("ol.runs.live"), done = sec.querySelector("ol.finished-runs");
    if (!live || !done) return false;
    var byId = rowsById([live, done]), put = [];
    if (d.head !== null) {
      var head = parse(d.head);
      sec.querySelector(".overview-head").replaceWith(head);
      put.push(head);
    }
    d.removed.forEach(function (id) {
      if (byId[id]) { byId[id].remove(); delete byId[id]; }
    });
    d.rows.forEach(function (r) {
      var li = parse(r.html), ol = home(sec, li);
      if (byId[r.id] && byId[r.id].parentElement === ol) byId[r.id].replaceWith(li);
      else {  // new, or moved between the live and the finished list
        if (byId[r.id]) byId[r.id].remove();
        ol.appendChild(li);
      }
      byId[r.id] = li;
      put.push(li);
    });
    if (d.order) d.order.forEach(function (id) { if (byId[id]) home(sec, byId[id]).appendChild(byId[id]); });
    put.forEach(loaded);
    countFinished(sec);
    if (live.children.length + done.children.length !== d.n) return false;
    sec.setAttribute("data-version", d.version);
    return true;
  }

  function replace(sec, html) {
    var fresh = parse(html);
    if (!fresh || fresh.id !== "overview") return;
    var was = sec.querySelector("details.finished"), now = fresh.querySelector("details.finished");
    if (was && now) now.open = was.open;  // the Finished list stays open or closed as the reader left it
    sec.replaceWith(fresh);
    loaded(fresh);
  }

  function refresh() {
    var sec = section();
    if (!sec) return;
    var url = sec.getAttribute("data-changes"), version = sec.getAttribute("data-version") || "";
    if (version) url += (url.indexOf("?") < 0 ? "?" : "&") + "since=" + encodeURIComponent(version);
    else url = url.replace("/changes", "");  // the list went astray: ask for all of it
    fetch(url, {
      cache: "no-store",
      credentials: "same-origin",
      headers: { "If-None-Match": 'W/"' + version + '"' },
    }).then(function (res) {
      if (res.status !== 200) return null;  // 304: nothing changed; 4xx/5xx: try again next time
      var type = res.headers.get("Content-Type") || "";
      return res.text().then(function (text) {
        if (type.indexOf("application/json") === 0) {
          if (!apply(sec, JSON.parse(text))) sec.removeAttribute("data-version");
        } else if (type.indexOf("text/html") === 0) {
          replace(sec, text);
        }
      });
    }).catch(function () { /* offline or the server restarting: try again next time */ })
      .then(schedule, schedule);
  }

  function schedule() {
    var sec = section();
    var every = sec ? parseFloat(sec.getAttribute("data-every")) || 5 : 5;
    window.setTimeout(refresh, every * 1000);
  }

  document.addEventListener("DOMContentLoaded", schedule);
})();
