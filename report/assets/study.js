// Draws a tuning study's charts with uPlot: trials as points, the best
// so far and the Pareto front as lines. Sets #render-status like the run
// report so tests can tell a drawn page from a blank one.
(function () {
  "use strict";
  var HEIGHT = 320;
  var status = document.getElementById("render-status");

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
    return {
      width: width, height: HEIGHT, series: series,
      axes: [{ label: spec.xLabel }, { label: spec.yLabel, size: 60 }],
      scales: { x: spec.xLog ? { time: false, distr: 3 } : { time: false }, y: { range: function (u, lo, hi) { return [0, hi > 0 ? hi * 1.05 : 1]; } } },
      hooks: { draw: [onDraw] },
      legend: { live: true }
    };
  }

  try {
    var grid = document.querySelector("#section-study .grid");
    var drawn = 0;
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
      new uPlot(options(spec, width, function () { if (!once) { once = true; drawn++; } }), data, box);
    });
    setTimeout(function () {
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
