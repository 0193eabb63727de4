/* herowatch run page: the fleet raster. One row per GPU (grouped by host) or per host, time left to
   right, colour = the value (viridis, readable on light and dark). Data comes as JSON from
   /api/runs/{id}/fleet; nothing here builds HTML (text goes in with textContent).
   The canvas says what it drew in data-* attributes (rows, row height, plot box) for tests and tools. */
(function () {
  "use strict";
  var box = document.getElementById("fleet");
  if (!box || !window.fetch) return;
  var frame = box.querySelector(".fleet-frame");
  var canvas = box.querySelector("canvas.fleet-raster");
  var tip = box.querySelector(".fleet-tip");
  var status = box.querySelector(".fleet-status");
  var scale = box.querySelector("canvas.fleet-scale");
  var dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  var NONE = dark ? [42, 46, 54] : [228, 228, 231];
  var LEFT = 84, TOP = 4, BOTTOM = 22, RIGHT = 8;
  var V = [[68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142],
           [31, 158, 137], [53, 183, 121], [109, 205, 89], [180, 222, 44], [253, 231, 37]];
  var LUT = [];
  for (var k = 0; k < 256; k++) {
    var f = k / 255 * (V.length - 1), a = Math.floor(f), b = Math.min(V.length - 1, a + 1), w = f - a;
    LUT.push([0, 1, 2].map(function (c) { return Math.round(V[a][c] * (1 - w) + V[b][c] * w); }));
  }
  var state = { data: null, metric: null, layout: null };

  function si(v, unit) {
    var a = Math.abs(v), p = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
    for (var i = 0; i < p.length; i++) if (a >= p[i][0]) return (v / p[i][0]).toPrecision(3) + " " + p[i][1] + unit;
    return (v === 0 ? "0" : v.toPrecision(3)) + " " + unit;
  }
  function fmt(v, unit) {
    if (v == null) return "no value";
    if (unit === "ratio" || unit === "fraction") return v.toFixed(2);
    if (unit === "celsius") return Math.round(v) + " °C";
    if (unit === "bytes_per_second") return si(v, "B/s");
    if (unit === "watts") return Math.round(v) + " W";
    if (unit === "megahertz") return Math.round(v) + " MHz";
    return Math.abs(v) >= 1e3 ? si(v, "") : v.toPrecision(4);
  }
  function clock(t, withDate, withSeconds) {
    var s = new Date(t * 1000).toISOString();
    return (withDate ? s.slice(5, 10) + " " : "") + s.slice(11, withSeconds ? 19 : 16);
  }
  function colourOf(v, lo, hi) {
    if (v == null) return NONE;
    var f = hi > lo ? (v - lo) / (hi - lo) : 0.5;
    return LUT[Math.max(0, Math.min(255, Math.round(f * 255)))];
  }

  function layout(d) {
    var rows = d.members.length;
    var rowPx = Math.max(1, Math.min(12, Math.floor(720 / Math.max(1, rows))));
    var cssW = Math.max(320, Math.floor(frame.clientWidth));
    return { rows: rows, rowPx: rowPx, cssW: cssW, plotW: cssW - LEFT - RIGHT, cssH: TOP + rows * rowPx + BOTTOM };
  }

  function columnAt(d, t) {
    var lo = 0, hi = d.starts.length - 1;
    while (lo < hi) { var mid = (lo + hi + 1) >> 1; if (d.starts[mid] <= t) lo = mid; else hi = mid - 1; }
    return d.starts[lo] <= t && t < d.ends[lo] ? lo : -1;
  }

  function draw() {
    var d = state.data;
    if (!d || !d.members.length || !d.starts.length) {
      status.textContent = "No fleet data in this span yet.";
      return;
    }
    var L = state.layout = layout(d), dpr = window.devicePixelRatio || 1;
    var ink = window.getComputedStyle(box).color;
    canvas.width = Math.round(L.cssW * dpr);
    canvas.height = Math.round(L.cssH * dpr);
    canvas.style.width = L.cssW + "px";
    canvas.style.height = L.cssH + "px";
    var ctx = canvas.getContext("2d");
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    var x0 = Math.round(LEFT * dpr), y0 = Math.round(TOP * dpr);
    var w = Math.round(L.plotW * dpr), h = Math.round(L.rows * L.rowPx * dpr);
    var t0 = d.starts[0], t1 = d.ends[d.ends.length - 1], span = Math.max(1e-9, t1 - t0);
    var colOf = new Int32Array(w);
    for (var px = 0; px < w; px++) colOf[px] = columnAt(d, t0 + (px + 0.5) / w * span);
    var lo = d.scale ? d.scale[0] : 0, hi = d.scale ? d.scale[1] : 1;
    var img = ctx.createImageData(w, h), pix = img.data, rowDev = L.rowPx * dpr;
    for (var py = 0; py < h; py++) {
      var row = d.mean[Math.min(L.rows - 1, Math.floor(py / rowDev))];
      for (px = 0; px < w; px++) {
        var j = colOf[px], rgb = colourOf(j < 0 ? null : row[j], lo, hi), o = (py * w + px) * 4;
        pix[o] = rgb[0]; pix[o + 1] = rgb[1]; pix[o + 2] = rgb[2]; pix[o + 3] = 255;
      }
    }
    ctx.putImageData(img, x0, y0);

    // hosts on the left: a tick at each host's first row, its name where there is room
    ctx.save();
    ctx.scale(dpr, dpr);
    ctx.fillStyle = ink;
    ctx.strokeStyle = ink;
    ctx.font = "10px system-ui, sans-serif";
    ctx.textBaseline = "top";
    ctx.textAlign = "right";
    var lastLabel = -1e9, hosts = 0;
    d.members.forEach(function (m, i) {
      if (i > 0 && d.members[i - 1].host === m.host) return;
      hosts++;
      var y = TOP + i * L.rowPx;
      ctx.globalAlpha = 0.5;
      ctx.fillRect(LEFT - 4, y, 3, 1);
      ctx.globalAlpha = 1;
      if (y - lastLabel >= 12) {
        ctx.fillText(m.host.length > 13 ? m.host.slice(0, 12) + "…" : m.host, LEFT - 6, y);
        lastLabel = y;
      }
    });
    // time below
    ctx.textAlign = "center";
    var withDate = span > 86400, ticks = Math.max(2, Math.floor(L.plotW / 110));
    for (var k = 0; k <= ticks; k++) {
      var t = t0 + span * k / ticks, x = LEFT + L.plotW * k / ticks;
      ctx.textAlign = k === 0 ? "left" : k === ticks ? "right" : "center";
      ctx.fillText(clock(t, withDate), x, TOP + L.rows * L.rowPx + 6);
    }
    ctx.restore();

    canvas.dataset.rows = String(L.rows);
    canvas.dataset.rowPx = String(L.rowPx);
    canvas.dataset.top = String(TOP);
    canvas.dataset.left = String(LEFT);
    canvas.dataset.plotWidth = String(L.plotW);
    canvas.dataset.metric = d.metric;
    canvas.setAttribute("aria-label", "fleet raster of " + d.label + ": " + L.rows + " rows on " + hosts +
      " hosts, " + clock(t0, true) + " to " + clock(t1, true) + " UTC");
    legend(d, lo, hi);
    status.textContent = L.rows + " " + (d.device_word ? d.device_word + "s" : "hosts") + " on " + hosts + " hosts · " +
      d.starts.length + " columns · " + d.label + ", " + clock(t0, true) + " to " + clock(t1, true) + " UTC";
  }

  function legend(d, lo, hi) {
    var ctx = scale.getContext("2d");
    for (var x = 0; x < scale.width; x++) {
      var rgb = LUT[Math.round(x / (scale.width - 1) * 255)];
      ctx.fillStyle = "rgb(" + rgb[0] + "," + rgb[1] + "," + rgb[2] + ")";
      ctx.fillRect(x, 0, 1, scale.height);
    }
    box.querySelector(".fleet-lo").textContent = fmt(lo, d.unit);
    box.querySelector(".fleet-hi").textContent = fmt(hi, d.unit);
    box.querySelector(".fleet-unit").textContent = d.label + (d.unit_label ? " (" + d.unit_label + ")" : "");
  }

  function hover(e) {
    var d = state.data, L = state.layout;
    if (!d || !L) return;
    var r = canvas.getBoundingClientRect(), x = e.clientX - r.left, y = e.clientY - r.top;
    var i = Math.floor((y - TOP) / L.rowPx);
    if (x < LEFT || x >= LEFT + L.plotW || i < 0 || i >= L.rows) { tip.hidden = true; return; }
    var t0 = d.starts[0], span = d.ends[d.ends.length - 1] - t0;
    var t = t0 + (x - LEFT) / L.plotW * span, j = columnAt(d, t), m = d.members[i];
    var fine = j >= 0 && d.ends[j] - d.starts[j] < 120;
    var when = j < 0 ? clock(t, true) : clock(d.starts[j], true, fine) + "–" + clock(d.ends[j], false, fine);
    tip.textContent = m.name + " · " + when + " UTC · " + d.label + " " + fmt(j < 0 ? null : d.mean[i][j], d.unit);
    tip.hidden = false;
    var left = Math.min(x + 14, r.width - tip.offsetWidth - 4);
    tip.style.left = Math.max(0, left) + "px";
    tip.style.top = Math.max(0, y - tip.offsetHeight - 8) + "px";
  }

  function load(metric) {
    state.metric = metric;
    var cols = Math.max(60, Math.min(400, Math.floor((frame.clientWidth - LEFT) / 3)));  // a column >= 3 px
    var url = box.dataset.src + "?metric=" + encodeURIComponent(metric) + "&columns=" + cols + "&stats=mean";
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) {
        return r.json().then(function (body) {
          if (!r.ok) throw new Error(body && body.error ? body.error : "HTTP " + r.status);
          return body;
        });
      })
      .then(function (d) { if (d.metric === state.metric) { state.data = d; draw(); } })
      .catch(function (err) { status.textContent = "Fleet data unavailable: " + err.message; });
  }

  var buttons = box.querySelectorAll("button.fleet-metric");
  Array.prototype.forEach.call(buttons, function (btn) {
    btn.addEventListener("click", function () {
      Array.prototype.forEach.call(buttons, function (b) { b.setAttribute("aria-pressed", b === btn ? "true" : "false"); });
      load(btn.dataset.metric);
    });
  });
  canvas.addEventListener("mousemove", hover);
  canvas.addEventListener("mouseleave", function () { tip.hidden = true; });
  var pending = null;
  window.addEventListener("resize", function () {
    clearTimeout(pending);
    pending = setTimeout(draw, 150);
  });
  var on = box.querySelector('button.fleet-metric[aria-pressed="true"]') || buttons[0];
  if (on) load(on.dataset.metric);
  setInterval(function () { if (state.metric && !document.hidden) load(state.metric); }, 60000);
})();
