// Draws a tuning study's charts with uPlot: trials as points, the best
// so far and the Pareto front as lines. Sets #render-status like the run
// report so tests can tell a drawn page from a blank one.
(function () {
  "use strict";
  var HEIGHT = 320;
  var status = document.getElementById("render-status");

  // dataRange is the smallest and largest x a chart holds.
  function dataRange(spec) {
    var lo = Infinity, hi = -Infinity;
    spec.x.forEach(function (x) { if (x != null && isFinite(x)) { lo = Math.min(lo, x); hi = Math.max(hi, x); } });
    return [lo, hi];
  }

  // xScale fits the x axis to the data: a log axis spans the trials'
  // values with a margin, not whole decades either side (300 to 2,500 ms
  // on 100 to 10,000 leaves the points in a corner); a linear axis of
  // whole numbers (trial numbers) pads by half a step.
  function xScale(spec) {
    var r = dataRange(spec);
    if (!isFinite(r[0])) return { time: false };
    if (spec.xLog) {
      var pad = Math.min(1.25, Math.pow(Math.max(r[1] / r[0], 1.5), 0.06));
      return { time: false, distr: 3, range: function () { return [r[0] / pad, r[1] * pad]; } };
    }
    if (!wholeNumbers(spec)) return { time: false };
    return { time: false, range: function () { return [r[0] - 0.5, r[1] + 0.5]; } };
  }

  function wholeNumbers(spec) {
    return spec.x.every(function (x) { return x == null || Math.round(x) === x; });
  }

  // Log ticks at 1, 2, 3 and 5 per decade.
  function logSplits(u, axisIdx, min, max) {
    var out = [];
    for (var e = Math.floor(Math.log10(min)); Math.pow(10, e) <= max; e++) {
      [1, 2, 3, 5].forEach(function (m) {
        var v = m * Math.pow(10, e);
        if (v >= min && v <= max) out.push(+v.toPrecision(6));
      });
    }
    return out.length >= 2 ? out : [+min.toPrecision(3), +max.toPrecision(3)];
  }

  function options(spec, width, onDraw) {
    var series = [{ label: spec.xLabel, value: function (u, v) { return v == null ? "" : +v.toPrecision(6); } }];
    spec.series.forEach(function (s) {
      series.push({
        label: s.label,
        stroke: s.color,
        width: s.line ? 2 : 0,
        spanGaps: true,
        points: { show: s.points, size: 7, fill: s.color, stroke: s.color },
        paths: s.line ? (s.step ? uPlot.paths.stepped({ align: 1 }) : undefined) : function () { return null; },
        value: function (u, v) { return v == null ? "" : +v.toPrecision(5); }
      });
    });
    var xAxis = { label: spec.xLabel };
    if (spec.xLog) {
      xAxis.splits = logSplits;
      // uPlot labels only whole decades of a log axis by default; a
      // fitted axis may hold none, so every tick is labelled.
      xAxis.filter = function (u, splits) { return splits; };
      xAxis.values = function (u, splits) { return splits.map(function (v) { return v == null ? "" : v.toLocaleString("en-US"); }); };
    } else if (wholeNumbers(spec)) {
      // Trial numbers: never a tick at 2.5.
      xAxis.incrs = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000];
    }
    return {
      width: width, height: HEIGHT, series: series,
      axes: [xAxis, { label: spec.yLabel, size: 60 }],
      scales: { x: xScale(spec), y: { range: function (u, lo, hi) { return [0, hi > 0 ? hi * 1.05 : 1]; } } },
      hooks: { draw: [onDraw] },
      legend: { live: true }
    };
  }

  try {
    var grid = document.querySelector("#section-study .grid");
    var drawn = 0, plots = [];
    var charts = STUDY.charts || [];
    charts.forEach(function (spec) {
      var box = document.createElement("div");
      box.className = "chart";
      box.id = spec.id;
      var title = document.createElement("h3");
      title.textContent = spec.title;
      box.appendChild(title);
      grid.appendChild(box);
      var width = Math.max(320, box.clientWidth || 600);
      var once = false;
      var data = [spec.x].concat(spec.series.map(function (s) { return s.values; }));
      plots.push({ spec: spec, box: box, plot: new uPlot(options(spec, width, function () { if (!once) { once = true; drawn++; } }), data, box) });
    });
    setTimeout(function () {
      // What a reader sees on each x axis, for tests: its ticks and how
      // far the axis reaches past the data.
      plots.forEach(function (p) {
        var r = dataRange(p.spec), ax = p.plot.axes[0];
        p.box.dataset.xticks = (ax._splits || []).join(" ");
        p.box.dataset.xlabels = (ax._values || []).filter(function (v) { return v != null && v !== ""; }).join("|");
        p.box.dataset.xrange = p.plot.scales.x.min + " " + p.plot.scales.x.max;
        p.box.dataset.xdata = r[0] + " " + r[1];
      });
      status.dataset.charts = String(charts.length);
      status.dataset.drawn = String(drawn);
      status.dataset.status = drawn === charts.length ? "ok" : "incomplete";
      status.textContent = "charts drawn: " + drawn + "/" + charts.length;
    }, 0);
  } catch (err) {
    status.dataset.status = "error";
    status.textContent = "chart error: " + err;
  }
})();
