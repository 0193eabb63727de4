/* herowatch run page: draws loss, tokens/s and MFU against step with uPlot.
   Data comes from the page's <script type="application/json" id="chart-data"> (JSON, never HTML);
   per bucket the shaded band spans min..max (a one-step spike stays visible) and the line is the mean.
   Alert and restart markers are vertical lines drawn on the canvas. No HTML is built here. */
(function () {
  "use strict";
  var holder = document.getElementById("chart-data");
  if (!holder || typeof window.uPlot === "undefined") return;
  var data = JSON.parse(holder.textContent);
  var dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  var ink = dark ? "#d4d4d8" : "#27272a";
  var grid = dark ? "rgba(255,255,255,0.08)" : "rgba(0,0,0,0.07)";
  var MARK = { alert: "#dc2626", restart: "#7c3aed" };
  var STEP_INCRS = [];  // whole steps only: 1, 2, 5, 10, 20, 50, ...
  for (var p = 1; p <= 1e9; p *= 10) STEP_INCRS.push(p, 2 * p, 5 * p);

  function markers(list) {
    return {
      hooks: {
        draw: [function (u) {
          var ctx = u.ctx, top = u.bbox.top, height = u.bbox.height;
          var left = u.bbox.left, right = u.bbox.left + u.bbox.width;
          var dpr = window.devicePixelRatio || 1;
          var rows = [-Infinity, -Infinity, -Infinity]; // right edge of the last label in each row
          var placed = list.map(function (m) { return { m: m, x: u.valToPos(m.step, "x", true) }; })
            .filter(function (p) { return isFinite(p.x) && p.x >= left && p.x <= right; })
            .sort(function (a, b) { return a.x - b.x; });
          ctx.save();
          ctx.lineWidth = 1.5 * dpr;
          ctx.font = (11 * dpr) + "px system-ui, sans-serif";
          ctx.textAlign = "left";  // uPlot leaves its last axis' alignment on the context
          ctx.textBaseline = "alphabetic";
          placed.forEach(function (p) {
            var m = p.m, x = p.x, color = MARK[m.kind] || ink;
            ctx.strokeStyle = color;
            ctx.fillStyle = color;
            ctx.setLineDash(m.kind === "restart" ? [5 * dpr, 4 * dpr] : []);
            ctx.beginPath();
            ctx.moveTo(x, top);
            ctx.lineTo(x, top + height);
            ctx.stroke();
            var label = String(m.label), w = ctx.measureText(label).width;
            var lx = x + 4 * dpr + w > right ? x - 4 * dpr - w : x + 4 * dpr;
            for (var r = 0; r < rows.length; r++) {  // a free row, else no label (the line stays)
              if (lx > rows[r] + 4 * dpr) {
                ctx.fillText(label, lx, top + (12 + 13 * r) * dpr);
                rows[r] = lx + w;
                break;
              }
            }
          });
          ctx.restore();
        }]
      }
    };
  }

  function fmt(v) {
    if (v == null) return "—";
    var a = Math.abs(v);
    if (a >= 1e9) return (v / 1e9).toPrecision(3) + "G";
    if (a >= 1e6) return (v / 1e6).toPrecision(3) + "M";
    if (a >= 1e3) return (v / 1e3).toPrecision(3) + "k";
    return v.toPrecision(4);
  }

  var plots = [];
  data.charts.forEach(function (c) {
    var host = document.getElementById(c.id);
    if (!host) return;
    var byTime = c.axis === "time";
    var opts = {
      width: Math.max(280, host.clientWidth),
      height: window.innerWidth < 600 ? 180 : 220,
      scales: { x: { time: byTime } },
      legend: { live: true },
      cursor: { drag: { x: true, y: false } },
      series: [
        { label: byTime ? "time" : "step", value: function (u, v) { return v == null ? "—" : (byTime ? new Date(v * 1000).toISOString() : Math.round(v).toLocaleString()); } },
        { label: "max", stroke: "rgba(37,99,235,0.55)", width: 1, value: function (u, v) { return fmt(v); } },
        { label: "min", stroke: "rgba(37,99,235,0.55)", width: 1, value: function (u, v) { return fmt(v); } },
        { label: "mean", stroke: dark ? "#93c5fd" : "#1d4ed8", width: 1.5, value: function (u, v) { return fmt(v); } }
      ],
      bands: [{ series: [1, 2], fill: "rgba(37,99,235,0.18)" }],
      axes: [
        byTime ? { stroke: ink, grid: { stroke: grid } } : {
          stroke: ink, grid: { stroke: grid }, incrs: STEP_INCRS,
          values: function (u, vals) { return vals.map(function (v) { return Math.round(v).toLocaleString(); }); }
        },
        { stroke: ink, grid: { stroke: grid }, size: 56, values: function (u, vals) { return vals.map(fmt); } }
      ],
      plugins: byTime ? [] : [markers(data.markers)]
    };
    var u = new window.uPlot(opts, [c.x, c.max, c.min, c.mean], host);
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
