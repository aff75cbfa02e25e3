// Draws the charts of a servebench HTML report from REPORT (see
// report/html.go) with the embedded uPlot, then checks that every canvas
// really holds pixels of its series' colours and says so in
// #render-status, which tests read back from headless Chromium.
(function () {
  "use strict";
  var HEIGHT = 300;
  var PCT_SPLITS = [0, Math.log10(2), 1, 2, 3];

  function pctLabel(x, digits) {
    var q = 100 * (1 - Math.pow(10, -x));
    if (digits === undefined) digits = q >= 99 ? 1 : 0;
    return q.toFixed(digits) + "%";
  }

  // Keep only the percentile ticks that have room for their labels, so
  // "0%" and "50%" do not collide on a narrow chart.
  function pctSplits(u) {
    var kept = [], lastPx = -Infinity;
    var plotWidth = Math.max(1, u.width - 90);
    PCT_SPLITS.forEach(function (x, i) {
      var px = x / 3 * plotWidth;
      var last = i === PCT_SPLITS.length - 1;
      if (px - lastPx >= 44 || kept.length === 0) { kept.push(x); lastPx = px; }
      else if (last) { kept[kept.length - 1] = x; lastPx = px; }
    });
    return kept;
  }

  // Size a y axis to its longest tick label, so "100,000" never runs into
  // the axis title (uPlot's default is a fixed 50 px).
  function axisSize(u, values, axisIdx, cycleNum) {
    var axis = u.axes[axisIdx];
    if (cycleNum > 1) return axis._size;
    var size = axis.ticks.size + axis.gap;
    var longest = (values || []).reduce(function (a, v) { return String(v).length > a.length ? String(v) : a; }, "");
    if (longest !== "") {
      u.ctx.font = axis.font[0];
      size += u.ctx.measureText(longest).width / devicePixelRatio;
    }
    return Math.ceil(size) + 2;
  }

  // overlaps lists the axes whose tick labels collide with each other or,
  // on y axes, spill into the axis title's room.
  function overlaps(u) {
    var found = [];
    var ctx = u.ctx;
    u.axes.forEach(function (axis, i) {
      if (!axis.show || !axis._values || !axis._splits) return;
      ctx.font = axis.font[0];
      var widths = axis._values.map(function (v) { return ctx.measureText(String(v)).width / devicePixelRatio; });
      var horizontal = axis.side === 0 || axis.side === 2;
      if (!horizontal) {
        var room = axis._size - axis.ticks.size - axis.gap;
        if (Math.max.apply(null, widths.concat([0])) > room + 0.5) found.push("y" + i + " labels wider than the axis");
        return;
      }
      var pos = axis._splits.map(function (x) { return u.valToPos(x, axis.scale || "x"); });
      for (var k = 1; k < pos.length; k++) {
        if (pos[k] - pos[k - 1] < (widths[k] + widths[k - 1]) / 2 + 2) found.push("x labels " + axis._values[k - 1] + "/" + axis._values[k]);
      }
    });
    return found;
  }

  function fromZero(u, min, max) {
    if (max == null || !isFinite(max)) return [0, 1];
    return [0, max > 0 ? max * 1.08 : 1];
  }

  function hexToRgb(hex) {
    var n = parseInt(hex.slice(1), 16);
    return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
  }

  function countColourPixels(canvas, colours) {
    var data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
    var targets = colours.map(hexToRgb);
    var count = 0;
    for (var i = 0; i < data.length; i += 4) {
      if (data[i + 3] < 128) continue;
      for (var t = 0; t < targets.length; t++) {
        var d = Math.abs(data[i] - targets[t][0]) + Math.abs(data[i + 1] - targets[t][1]) + Math.abs(data[i + 2] - targets[t][2]);
        if (d < 40) { count++; break; }
      }
    }
    return count;
  }

  function drawGantt(u, spec) {
    var g = spec.gantt, ctx = u.ctx, bb = u.bbox;
    var ranks = spec.series[0].values;
    var n = spec.x.length;
    ctx.save();
    ctx.beginPath();
    ctx.rect(bb.left, bb.top, bb.width, bb.height);
    ctx.clip();
    ctx.lineWidth = Math.max(1, Math.min(4, bb.height / Math.max(n, 1) * 0.8));
    var segments = [[g.prefillColor, function (i) { return [spec.x[i], g.firstToken[i]]; }],
                    [g.decodeColor, function (i) { return [g.firstToken[i], g.end[i]]; }]];
    segments.forEach(function (seg) {
      ctx.strokeStyle = seg[0];
      ctx.beginPath();
      for (var i = 0; i < n; i++) {
        var span = seg[1](i);
        if (span[0] == null || span[1] == null) continue;
        var y = u.valToPos(ranks[i], "y", true);
        var x0 = u.valToPos(span[0], "x", true);
        var x1 = Math.max(u.valToPos(span[1], "x", true), x0 + 1);
        ctx.moveTo(x0, y);
        ctx.lineTo(x1, y);
      }
      ctx.stroke();
    });
    ctx.restore();
  }

  function options(spec, width, onDraw) {
    var pct = spec.xKind === "pctlog";
    var series = [{
      label: spec.xLabel,
      value: function (u, v) { return v == null ? "" : pct ? pctLabel(v, 2) : +v.toPrecision(6); }
    }];
    spec.series.forEach(function (s) {
      series.push({
        label: s.label,
        stroke: s.color,
        width: 2,
        dash: s.dash || undefined,
        scale: s.axis === 1 ? "y2" : "y",
        spanGaps: true,
        points: { show: spec.kind !== "gantt" && spec.x.length <= 60, size: 6, fill: s.color },
        paths: spec.kind === "gantt" ? function () { return null; } : undefined,
        value: function (u, v) { return v == null ? "" : +v.toPrecision(5); }
      });
    });
    var axes = [{ label: spec.xLabel }, { label: spec.yLabel, scale: "y", size: axisSize }];
    if (pct) {
      axes[0].splits = pctSplits;
      axes[0].values = function (u, splits) { return splits.map(function (x) { return pctLabel(x); }); };
    }
    var scales = { x: { time: false }, y: { range: fromZero } };
    if (spec.y2Label) {
      axes.push({ label: spec.y2Label, scale: "y2", side: 1, grid: { show: false }, size: axisSize });
      scales.y2 = { range: function () { return [0, 100]; } };
    }
    if (spec.kind === "gantt") {
      var maxEnd = 0;
      spec.gantt.end.forEach(function (v) { if (v != null && v > maxEnd) maxEnd = v; });
      scales.x.range = function () { return [0, maxEnd > 0 ? maxEnd * 1.02 : 1]; };
      var maxRank = spec.series[0].values[spec.series[0].values.length - 1] || 1;
      scales.y = { dir: -1, range: function () { return [-1, maxRank + 1]; } };
    }
    if (pct) {
      scales.x.range = function () { return [0, 3]; };
    }
    var drawHooks = [];
    if (spec.kind === "gantt") drawHooks.push(function (u) { drawGantt(u, spec); });
    drawHooks.push(onDraw);
    return { width: width, height: HEIGHT, series: series, axes: axes, scales: scales, hooks: { draw: drawHooks }, legend: { show: spec.kind !== "gantt", live: true } };
  }

  function build(spec, index, state) {
    var section = document.getElementById("section-" + spec.section);
    section.hidden = false;
    var grid = section.querySelector(".grid");
    var box = document.createElement("div");
    box.className = "chart";
    box.id = spec.id;
    var title = document.createElement("h3");
    title.textContent = spec.title;
    box.appendChild(title);
    grid.appendChild(box);
    var width = Math.max(320, box.clientWidth || 600);
    var data = [spec.x].concat(spec.series.map(function (s) { return s.values; }));
    var plot = new uPlot(options(spec, width, function () { state.drawn[index] = true; }), data, box);
    state.plots.push({ plot: plot, box: box, spec: spec });
  }

  function colours(spec) {
    if (spec.kind === "gantt") return [spec.gantt.prefillColor, spec.gantt.decodeColor];
    return spec.series.map(function (s) { return s.color; });
  }

  function verify(state, status) {
    var failed = [];
    state.plots.forEach(function (p, i) {
      var pixels = state.drawn[i] ? countColourPixels(p.plot.ctx.canvas, colours(p.spec)) : 0;
      p.box.dataset.pixels = String(pixels);
      if (pixels < 10) failed.push(p.spec.id);
    });
    var total = REPORT.charts.length;
    var drawn = total - failed.length;
    var collisions = [];
    state.plots.forEach(function (p) {
      overlaps(p.plot).forEach(function (o) { collisions.push(p.spec.id + ": " + o); });
    });
    var wide = [];
    Array.prototype.forEach.call(document.querySelectorAll(".table-wrap"), function (w, i) {
      if (w.scrollWidth > w.clientWidth + 1) wide.push("table " + (i + 1) + " (" + w.scrollWidth + " > " + w.clientWidth + " px)");
    });
    if (document.documentElement.scrollWidth > document.documentElement.clientWidth + 1) wide.push("page");
    status.dataset.charts = String(total);
    status.dataset.drawn = String(drawn);
    status.dataset.status = failed.length === 0 ? "ok" : "incomplete";
    status.textContent = "charts drawn: " + drawn + "/" + total + (failed.length ? " (blank: " + failed.join(", ") + ")" : "");
    // Read back by tests: label collisions and tables wider than the page.
    status.dataset.overlaps = collisions.join("; ");
    status.dataset.scrolls = wide.join("; ");
  }

  var status = document.getElementById("render-status");
  try {
    var state = { plots: [], drawn: [] };
    (REPORT.charts || []).forEach(function (spec, i) { build(spec, i, state); });
    window.addEventListener("resize", function () {
      state.plots.forEach(function (p) { p.plot.setSize({ width: Math.max(320, p.box.clientWidth), height: HEIGHT }); });
    });
    // uPlot draws in a microtask; check once it has.
    setTimeout(function () { verify(state, status); }, 0);
  } catch (err) {
    status.dataset.status = "error";
    status.textContent = "chart error: " + err;
  }
})();
