// Draws sim against published figures with uPlot on log-log axes: one
// series of points per GPU class, y = x and a ±15% band as lines, and a
// tooltip naming the run behind the hovered point. Sets #render-status
// like the run report so tests can tell a drawn page from a blank one.
(function () {
  "use strict";
  var HEIGHT = 380;
  var status = document.getElementById("render-status");

  function fmt(v) { return v == null ? "" : String(+v.toPrecision(5)); }

  function options(spec, width, tip, onDraw) {
    var series = [{ label: "published", value: function (u, v) { return fmt(v); } }];
    spec.series.forEach(function (s) {
      series.push({
        label: s.label, stroke: s.color, width: 0,
        points: { show: true, size: 8, fill: s.color, stroke: s.color },
        paths: function () { return null; },
        value: function (u, v) { return fmt(v); }
      });
    });
    [["y = x", 1, null], ["+15%", 1.15, [6, 4]], ["−15%", 0.85, [6, 4]]].forEach(function (l) {
      series.push({ label: l[0], stroke: "#555", width: 1, dash: l[2] || undefined, points: { show: false }, spanGaps: true,
        value: function (u, v) { return fmt(v); } });
    });
    return {
      width: width, height: HEIGHT, series: series,
      axes: [{ label: "published (" + spec.unit + ")" }, { label: "sim (" + spec.unit + ")", size: 70 }],
      scales: {
        x: { time: false, distr: 3, range: function () { return [spec.x[0], spec.x[spec.x.length - 1]]; } },
        y: { distr: 3, range: function () { return [spec.x[0], spec.x[spec.x.length - 1]]; } }
      },
      hooks: {
        draw: [onDraw],
        setCursor: [function (u) {
          var i = u.cursor.idx;
          if (i == null || u.cursor.left < 0) { tip.style.display = "none"; return; }
          var m = spec.meta[i], sim = null;
          if (!m || !m.run) { tip.style.display = "none"; return; }
          spec.series.forEach(function (s) { if (s.values[i] != null) { sim = s.values[i]; } });
          if (sim == null) { tip.style.display = "none"; return; }
          var err = (sim / spec.x[i] - 1) * 100;
          tip.textContent = m.run + " · " + m.metric + " (" + m.split + "): published " + fmt(spec.x[i]) +
            ", sim " + fmt(sim) + " (" + (err >= 0 ? "+" : "") + err.toFixed(1) + "%)";
          tip.style.display = "block";
          tip.style.left = Math.min(u.cursor.left + 70, width - 40) + "px";
          tip.style.top = (u.valToPos(sim, "y") + 30) + "px";
        }]
      },
      legend: { live: false }
    };
  }

  try {
    var grid = document.querySelector("#section-fidelity .grid");
    var drawn = 0;
    FIDELITY.forEach(function (spec) {
      var box = document.createElement("div");
      box.className = "chart";
      box.id = spec.id;
      var title = document.createElement("h3");
      title.textContent = spec.title;
      box.appendChild(title);
      var tip = document.createElement("div");
      tip.className = "tip";
      box.appendChild(tip);
      grid.appendChild(box);
      var width = Math.max(320, box.clientWidth || 600);
      var lines = [1, 1.15, 0.85].map(function (k) { return spec.x.map(function (x) { return x * k; }); });
      var data = [spec.x].concat(spec.series.map(function (s) { return s.values; }), lines);
      var once = false;
      new uPlot(options(spec, width, tip, function () { if (!once) { once = true; drawn++; } }), data, box);
    });
    setTimeout(function () {
      status.dataset.charts = String(FIDELITY.length);
      status.dataset.drawn = String(drawn);
      status.dataset.status = drawn === FIDELITY.length ? "ok" : "incomplete";
      status.textContent = "charts drawn: " + drawn + "/" + FIDELITY.length;
    }, 0);
  } catch (err) {
    status.dataset.status = "error";
    status.textContent = "chart error: " + err;
  }
})();
