// The overview's sparklines, drawn from compact data (monitor/web/dashboard/charts.py): an element
// with data-spark="<upper edge><lower edge>" (one character a column each, 64 levels) becomes an SVG
// of 120 x 28: the min..max band and its upper edge as a line, so a one-step spike shows as a peak.
(function () {
  "use strict";
  var LEVELS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  var NS = "http://www.w3.org/2000/svg";
  var W = 120, H = 28;

  function y(ch) {
    return (H - 1 - (LEVELS.indexOf(ch) / (LEVELS.length - 1)) * (H - 2)).toFixed(1);
  }

  function path(cls, d) {
    var p = document.createElementNS(NS, "path");
    p.setAttribute("class", cls);
    p.setAttribute("d", d);
    return p;
  }

  function draw(box) {
    var data = box.getAttribute("data-spark") || "";
    var n = data.length / 2;
    if (n < 2 || box.querySelector("svg")) return;
    var dx = W / (n - 1), top = [], bottom = [];
    for (var i = 0; i < n; i++) {
      top.push((i * dx).toFixed(1) + "," + y(data.charAt(i)));
      bottom.unshift((i * dx).toFixed(1) + "," + y(data.charAt(n + i)));
    }
    var line = "M" + top.join(" L");
    var svg = document.createElementNS(NS, "svg");
    svg.setAttribute("class", "spark");
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("preserveAspectRatio", "none");
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", (box.getAttribute("data-label") || "") + " sparkline");
    svg.appendChild(path("band", line + " L" + bottom.join(" L") + " Z"));
    svg.appendChild(path("line", line));
    box.appendChild(svg);
  }

  function drawAll(root) {
    var boxes = (root || document).querySelectorAll("[data-spark]");
    for (var i = 0; i < boxes.length; i++) draw(boxes[i]);
  }

  document.addEventListener("DOMContentLoaded", function () { drawAll(document); });
  document.addEventListener("htmx:load", function (e) { drawAll(e.target); });  // after an htmx swap
  document.addEventListener("herowatch:load", function (e) { drawAll(e.target); });  // overview_refresh.js
})();
