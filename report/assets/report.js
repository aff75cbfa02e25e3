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
    var axes = [{ label: spec.xLabel }, { label: spec.yLabel, scale: "y" }];
    if (pct) {
      axes[0].splits = function () { return PCT_SPLITS; };
      axes[0].values = function (u, splits) { return splits.map(function (x) { return pctLabel(x); }); };
    }
    var scales = { x: { time: false }, y: { range: fromZero } };
    if (spec.y2Label) {
      axes.push({ label: spec.y2Label, scale: "y2", side: 1, grid: { show: false } });
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
    status.dataset.charts = String(total);
    status.dataset.drawn = String(drawn);
    status.dataset.status = failed.length === 0 ? "ok" : "incomplete";
    status.textContent = "charts drawn: " + drawn + "/" + total + (failed.length ? " (blank: " + failed.join(", ") + ")" : "");
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
