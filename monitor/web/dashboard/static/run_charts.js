/* herowatch run page: draws the panels the packs in force declare for the run's kind (monitor/rules/panels)
   with uPlot, against time (the default) or step. Data comes from the page's
   <script type="application/json" id="chart-data"> (JSON, never HTML): per panel, its series (each with
   min/max/mean per bucket, on the left or right axis) and its reference lines (a rule's baseline, a
   length cap). Per series the shaded band spans min..max (a one-step spike stays visible, or the band
   the panel declares: ± a standard deviation, shortest..longest) and the line is the mean. Against
   time, a stall or downtime is a gap in the line under a shaded, labelled band (from the run's goodput
   incidents); alert and restart markers are vertical lines. Steps a rewind redid keep their first
   attempt's points, drawn as a grey dashed line with dots ("before the rewind") beside the redone ones.
   Drawn on the canvas; the only DOM writes are uPlot's own and textContent. */
(function () {
  "use strict";
  var holder = document.getElementById("chart-data");
  if (!holder || typeof window.uPlot === "undefined") return;
  var data = JSON.parse(holder.textContent);
  var dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  var ink = dark ? "#d4d4d8" : "#27272a";
  var grid = dark ? "rgba(255,255,255,0.08)" : "rgba(0,0,0,0.07)";
  var MARK = { alert: "#dc2626", restart: "#7c3aed" };
  var LINE = dark ? ["#93c5fd", "#fdba74", "#86efac", "#f9a8d4"] : ["#1d4ed8", "#c2410c", "#15803d", "#be185d"];
  var EDGE = ["rgba(37,99,235,0.45)", "rgba(234,88,12,0.45)", "rgba(22,163,74,0.45)", "rgba(219,39,119,0.45)"];
  var FILL = ["rgba(37,99,235,0.28)", "rgba(234,88,12,0.22)", "rgba(22,163,74,0.22)", "rgba(219,39,119,0.22)"];
  var REF = dark ? "#e4e4e7" : "#3f3f46";
  var EARLIER = dark ? "rgba(212,212,216,0.55)" : "rgba(82,82,91,0.55)";  // an earlier attempt's points
  var BAND = { stall: "rgba(220,38,38,0.13)", restart: "rgba(124,58,237,0.13)", down: "rgba(127,29,29,0.16)",
               startup: "rgba(107,114,128,0.13)" };
  var STEP_INCRS = [];  // whole steps only: 1, 2, 5, 10, 20, 50, ...
  for (var p = 1; p <= 1e9; p *= 10) STEP_INCRS.push(p, 2 * p, 5 * p);
  var query = new URLSearchParams(window.location.search);
  var axis = query.get("axis") === "step" ? "step" : "time";
  var SPANS = { "1h": 3600, "6h": 6 * 3600, "24h": 86400, "7d": 7 * 86400 };  // the range picker's choices
  var span = axis === "time" ? SPANS[query.get("range")] || 0 : 0;

  // ---- numbers: the same decimals for every tick of an axis, the same suffix (k, M, G) ------------
  function decimalsFor(step) {
    for (var d = 0; d < 7; d++) {
      var scaled = step * Math.pow(10, d);
      if (Math.abs(Math.round(scaled) - scaled) < 1e-6 * Math.max(1, scaled)) return d;
    }
    return 6;
  }
  function scaleOf(big) {
    return big >= 1e9 ? [1e9, "G"] : big >= 1e6 ? [1e6, "M"] : big >= 1e3 ? [1e3, "k"] : [1, ""];
  }
  function tickValues(u, vals, axisIdx, space, incr) {
    var big = 0;
    vals.forEach(function (v) { if (v != null) big = Math.max(big, Math.abs(v)); });
    if (big > 0 && big < 1e-3) {  // a learning rate: 2.0e-6, with one exponent digit per axis
      return vals.map(function (v) { return v == null ? "" : v === 0 ? "0" : v.toExponential(1); });
    }
    var sc = scaleOf(big), d = decimalsFor((incr || 1) / sc[0]);
    return vals.map(function (v) { return v == null ? "" : v === 0 ? "0" : (v / sc[0]).toFixed(d) + sc[1]; });
  }
  function num(v) {
    if (v == null || !isFinite(v)) return "—";
    var sc = scaleOf(Math.abs(v));
    return Number((v / sc[0]).toPrecision(4)).toString() + sc[1];
  }
  function utc(t) { return new Date(t * 1000).toISOString().slice(0, 19).replace("T", " ") + " UTC"; }
  function timeTicks(u, vals, axisIdx, space, incr) {  // UTC, 24 h: 14:05, 05-28 14:05 over days, 05-28
    var span = u.scales.x.max - u.scales.x.min;
    return vals.map(function (t) {
      var iso = new Date(t * 1000).toISOString();
      if (incr >= 86400) return iso.slice(5, 10);  // whole days: the date alone
      var hm = incr < 60 ? iso.slice(11, 19) : iso.slice(11, 16);
      return span > 36 * 3600 ? iso.slice(5, 10) + " " + hm : hm;
    });
  }
  function timeSpace(u, axisIdx, min, max) {  // pixels between ticks: room for the widest label and a gap
    return max - min > 36 * 3600 ? 110 : 70;
  }
  function timeRange(u, min, max) {  // up to now, so a stall still going on shows as one
    var lo = min, hi = Math.max(max, data.now || max);
    data.bands.forEach(function (b) { lo = Math.min(lo, b.from); });
    if (span) lo = Math.max(lo, hi - span);  // the picked range: the last hour, day, ... up to now
    return [lo, hi > lo ? hi : lo + 60];
  }

  // ---- the series against the chosen axis: sorted x, and a null wherever the run went quiet ---------
  function columns(c) {  // one series: [x, max, min, mean]
    var rows = [];
    for (var i = 0; i < c.x.length; i++) {
      var x = axis === "time" ? c.t[i] : (c.xaxis === "time" ? null : c.x[i]);
      if (x != null) rows.push([x, c.max[i], c.min[i], c.mean[i]]);
    }
    rows.sort(function (a, b) { return a[0] - b[0]; });
    if (axis === "time" && rows.length) {  // the line breaks across a stall, restart or downtime
      var out = [rows[0]];
      for (var k = 1; k < rows.length; k++) {
        var a = rows[k - 1][0], b = rows[k][0];
        var cut = data.bands.some(function (band) {
          var to = band.to == null ? data.now : band.to;
          return band.kind !== "startup" && band.from < b && to > a;
        });
        if (cut) out.push([(a + b) / 2, null, null, null]);
        out.push(rows[k]);
      }
      var last = rows[rows.length - 1][0];
      var open = data.bands.some(function (band) { return band.to == null && band.from >= last - 1; });
      if (open && data.now > last) out.push([(last + data.now) / 2, null, null, null]);  // still down
      rows = out;
    }
    return [0, 1, 2, 3].map(function (col) { return rows.map(function (r) { return r[col]; }); });
  }

  function earlierColumns(s) {  // a series' earlier attempt: [x, mean], one value per x (the newest)
    var e = s.earlier, byX = {};
    for (var i = 0; i < e.x.length; i++) {
      var x = axis === "time" ? e.t[i] : (s.xaxis === "time" ? null : e.x[i]);
      if (x != null) byX[x] = e.mean[i];
    }
    var xs = Object.keys(byX).map(Number).sort(function (a, b) { return a - b; });
    return [xs, xs.map(function (x) { return byX[x]; })];
  }

  // ---- drawn on the canvas: incident bands (time axis) and marker lines ---------------------------
  function overlay(bands, markers, lines) {
    return { hooks: { draw: [function (u) {
      var ctx = u.ctx, top = u.bbox.top, height = u.bbox.height;
      var left = u.bbox.left, right = u.bbox.left + u.bbox.width;
      var dpr = window.devicePixelRatio || 1;
      ctx.save();
      ctx.font = (11 * dpr) + "px system-ui, sans-serif";
      ctx.textAlign = "left";  // uPlot leaves its last axis' alignment on the context
      ctx.textBaseline = "alphabetic";
      var boxes = [];  // every label drawn: [x0, y0, x1, y1] in canvas pixels (the browser tests read them)
      function clear(b) {
        return !boxes.some(function (o) { return b[0] < o[2] && o[0] < b[2] && b[1] < o[3] && o[1] < b[3]; });
      }
      function label(text, x, y) {  // the text's box, baseline at y; drawn only where no other label is
        var b = [x, y - 11 * dpr, x + ctx.measureText(text).width, y + 3 * dpr];
        if (!clear(b)) return false;
        ctx.fillText(text, x, y);
        boxes.push(b);
        return true;
      }
      var said = {};
      lines.forEach(function (l) {  // reference lines: dashed, labelled at their left end (markers crowd the right)
        var key = l.label + "|" + l.value + "|" + l.axis;
        if (said[key]) return;  // the same line declared twice is drawn and labelled once
        said[key] = true;
        var y = u.valToPos(l.value, l.axis === "right" ? "y2" : "y", true);
        if (!isFinite(y) || y < top || y > top + height) return;
        ctx.strokeStyle = REF;
        ctx.lineWidth = 1.25 * dpr;
        ctx.setLineDash([6 * dpr, 4 * dpr]);
        ctx.beginPath();
        ctx.moveTo(left, y);
        ctx.lineTo(right, y);
        ctx.stroke();
        ctx.setLineDash([]);
        ctx.fillStyle = REF;
        var text = l.label + " " + num(l.value), x = left + 4 * dpr;
        // a line close to another: its label moves right along the line, else below it
        while (!label(text, x, y - 4 * dpr) && x < right - 40 * dpr) x += 60 * dpr;
      });
      bands.forEach(function (b) {
        var x0 = Math.max(left, u.valToPos(b.from, "x", true));
        var x1 = Math.min(right, u.valToPos(b.to == null ? data.now : b.to, "x", true));
        if (!(x1 > x0)) return;
        ctx.fillStyle = BAND[b.kind] || BAND.startup;
        ctx.fillRect(x0, top, x1 - x0, height);
        ctx.fillStyle = ink;
        if (x1 - x0 > ctx.measureText(b.label).width + 6 * dpr) label(b.label, x0 + 3 * dpr, top + height - 6 * dpr);
      });
      // markers: every line is drawn; markers too close for their own label share one: "loss_jump +2"
      var placed = markers.map(function (m) { return { m: m, x: u.valToPos(axis === "time" ? m.t : m.step, "x", true) }; })
        .filter(function (p) { return isFinite(p.x) && p.x >= left && p.x <= right; })
        .sort(function (a, b) { return a.x - b.x; });
      var groups = [];
      placed.forEach(function (p) {
        var m = p.m, color = MARK[m.kind] || ink;
        ctx.strokeStyle = color;
        ctx.lineWidth = 1.5 * dpr;
        ctx.setLineDash(m.kind === "restart" ? [5 * dpr, 4 * dpr] : []);
        ctx.beginPath();
        ctx.moveTo(p.x, top);
        ctx.lineTo(p.x, top + height);
        ctx.stroke();
        var last = groups[groups.length - 1];
        if (last && p.x < last.right + 6 * dpr) last.members.push(p);
        else groups.push({ members: [p], right: p.x + 4 * dpr + ctx.measureText(String(m.label)).width });
        var g = groups[groups.length - 1];
        g.right = Math.max(g.right, g.members[0].x + 4 * dpr + ctx.measureText(groupText(g)).width);
      });
      ctx.setLineDash([]);
      function groupText(g) {
        var names = [];
        g.members.forEach(function (p) { if (names.indexOf(String(p.m.label)) < 0) names.push(String(p.m.label)); });
        return names[0] + (g.members.length > 1 ? " +" + (g.members.length - 1) : "");
      }
      groups.forEach(function (g) {
        var first = g.members[0], text = groupText(g), w = ctx.measureText(text).width;
        ctx.fillStyle = MARK[first.m.kind] || ink;
        var lx = first.x + 4 * dpr + w > right ? first.x - 4 * dpr - w : first.x + 4 * dpr;
        for (var r = 0; r < 3; r++) if (label(text, lx, top + (12 + 13 * r) * dpr)) break;
      });
      u.labelBoxes = boxes;
      u.markerGroups = groups.map(function (g) { return { text: groupText(g), count: g.members.length }; });
      ctx.restore();
    }] } };
  }

  // ---- the legend: the newest values when the pointer is elsewhere, the pointed bucket's on hover ----
  function latest(u, s) {
    var col = u.data[s];
    for (var i = col.length - 1; i >= 0; i--) if (col[i] != null) return i;
    return null;
  }
  function legendX(u, v) {
    var idx = v == null ? latest(u, 3) : null, x = v == null ? (idx == null ? null : u.data[0][idx]) : v;
    if (x == null) return "—";
    var text = axis === "time" ? utc(x) : Math.round(x).toLocaleString("en-US");
    return v == null ? text + " (latest)" : text;
  }
  function legendValue(base, band) {  // base: the series' max column (max, min, mean follow)
    return function (u, v, si, idx) {
      var i = idx == null ? latest(u, base + 2) : idx;
      if (i == null) return "—";
      if (band) return num(u.data[base + 1][i]) + " – " + num(u.data[base][i]);
      return num(u.data[base + 2][i]);
    };
  }
  function yRange(lines, side, log) {  // the data's range, stretched to hold the panel's reference lines
    return function (u, min, max) {
      lines.forEach(function (l) {
        if ((l.axis === "right") !== side) return;
        min = min == null ? l.value : Math.min(min, l.value);
        max = max == null ? l.value : Math.max(max, l.value);
      });
      if (min == null || max == null) return [0, 1];
      return log ? window.uPlot.rangeLog(min, max, 10, true) : window.uPlot.rangeNum(min, max, 0.1, true);
    };
  }

  var plots = [];
  var markers = data.markers.filter(function (m) { return (axis === "time" ? m.t : m.step) != null; });
  data.charts.forEach(function (c) {
    var host = document.getElementById(c.id);
    if (!host) return;
    var unit = c.unit ? " (" + c.unit + ")" : "";
    var right = c.series.some(function (s) { return s.axis === "right"; });
    var single = c.series.length === 1;
    var series = [{ label: axis === "time" ? "time" : "step", value: legendX }], bands = [];
    c.series.forEach(function (s, k) {
      var base = 1 + 3 * k, scale = s.axis === "right" ? "y2" : "y", name = single ? "" : s.label + " ";
      series.push(
        { label: name + (s.band === "std" ? "± std" : "min – max"), scale: scale, stroke: EDGE[k % 4], width: 1,
          value: legendValue(base, true) },
        { label: name + "min", scale: scale, stroke: EDGE[k % 4], width: 1, value: legendValue(base, true) },
        { label: single ? "mean" : s.label, scale: scale, stroke: LINE[k % 4], width: 1.5,
          value: legendValue(base, false) }
      );
      bands.push({ series: [base, base + 1], fill: FILL[k % 4] });
    });
    var earlier = c.series.filter(function (s) { return s.earlier && s.earlier.x.length; });
    earlier.forEach(function (s) {
      series.push({ label: (single ? "" : s.label + " ") + "before the rewind", scale: s.axis === "right" ? "y2" : "y",
                    stroke: EARLIER, width: 1, dash: [4, 3], spanGaps: true,
                    points: { show: true, size: 4, stroke: EARLIER, fill: EARLIER },
                    value: function (u, v, si, idx) {  // idle: its newest point
                      var i = idx == null ? latest(u, si) : idx;
                      return i == null ? "—" : num(u.data[si][i]);
                    } });
    });
    var scales = {
      x: axis === "time" ? { time: true, range: timeRange } : { time: false },
      y: { distr: c.log ? 3 : 1, range: yRange(c.lines, false, c.log) }
    };
    var axes = [
      axis === "time"
        ? { stroke: ink, grid: { stroke: grid }, label: "time (UTC)", labelSize: 18, values: timeTicks,
            space: timeSpace }
        : { stroke: ink, grid: { stroke: grid }, incrs: STEP_INCRS, label: "step", labelSize: 18,
            values: function (u, vals) { return vals.map(function (v) { return Math.round(v).toLocaleString("en-US"); }); } },
      { stroke: ink, grid: { stroke: grid }, size: 64, label: c.title + unit, labelSize: 18, values: tickValues }
    ];
    if (right) {
      scales.y2 = { range: yRange(c.lines, true, false) };
      axes.push({ scale: "y2", side: 1, stroke: ink, grid: { show: false }, size: 64, label: c.right_unit,
                  labelSize: 18, values: tickValues });
    }
    var tables = c.series.map(columns).concat(earlier.map(earlierColumns));
    var opts = {
      width: Math.max(280, host.clientWidth),
      height: window.innerWidth < 600 ? 200 : 240,
      scales: scales,
      tzDate: function (ts) { return window.uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"); },
      legend: { live: true },
      cursor: { drag: { x: true, y: false } },
      series: series,
      bands: bands,
      axes: axes,
      plugins: [overlay(axis === "time" ? data.bands : [], markers, c.lines || [])]
    };
    var u = new window.uPlot(opts, tables.length === 1 ? tables[0] : window.uPlot.join(tables), host);
    host.setAttribute("data-axis", axis);
    host.uplot = u;  // for the browser tests: the drawn ticks and scales
    plots.push([u, host]);
  });

  var pending = null;
  window.addEventListener("resize", function () {
    clearTimeout(pending);
    pending = setTimeout(function () {
      plots.forEach(function (p) { p[0].setSize({ width: Math.max(280, p[1].clientWidth), height: p[0].height }); });
    }, 150);
  });
})();
