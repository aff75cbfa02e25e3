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
    var size = axis.ticks.size + axis.gap;
    var longest = (values || []).reduce(function (a, v) { return String(v).length > a.length ? String(v) : a; }, "");
    if (longest !== "") {
      u.ctx.font = axis.font[0];
      size += u.ctx.measureText(longest).width / devicePixelRatio;
    }
    // Labels change as the axis settles; it only ever grows, so the
    // layout converges and the widest labels seen still fit.
    return Math.max(Math.ceil(size) + 2, cycleNum > 1 ? axis._size || 0 : 0);
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

  // A TTFT of 10 ms on a 150 s axis is a tenth of a pixel: the first
  // segment is drawn at least this wide (CSS px), or a third of a bar too
  // short for that, and the decode segment starts where it ends, so every
  // request shows its first token without hiding its decode.
  var MIN_PREFILL_PX = 3;

  // drawGantt draws each request's bar, start → first token → end, on
  // whole pixels, one request at a time so a later bar never hides an
  // earlier one's first segment. It keeps where each first segment went,
  // for verify.
  function drawGantt(u, spec, bars) {
    var g = spec.gantt, ctx = u.ctx, bb = u.bbox;
    var ranks = spec.series[0].values;
    var n = spec.x.length;
    var px = Math.max(1, Math.round(devicePixelRatio));
    bars.length = 0;
    ctx.save();
    ctx.beginPath();
    ctx.rect(bb.left, bb.top, bb.width, bb.height);
    ctx.clip();
    // Whole-pixel lines on pixel centres, so no bar is blurred into a
    // lighter colour across two rows.
    ctx.lineWidth = Math.max(1, Math.min(4, Math.round(bb.height / Math.max(n, 1) * 0.8)));
    var centre = ctx.lineWidth % 2 === 1 ? 0.5 : 0;
    function segment(colour, from, to, y) {
      ctx.strokeStyle = colour;
      ctx.beginPath();
      ctx.moveTo(from, y);
      ctx.lineTo(to, y);
      ctx.stroke();
    }
    for (var i = 0; i < n; i++) {
      if (spec.x[i] == null || g.end[i] == null) continue;
      var y = Math.round(u.valToPos(ranks[i], "y", true)) + centre;
      var x0 = Math.round(u.valToPos(spec.x[i], "x", true));
      var end = Math.max(Math.round(u.valToPos(g.end[i], "x", true)), x0 + 2 * px);
      var decodeFrom = x0;
      if (g.firstToken[i] != null) {
        var least = Math.max(px, Math.min(MIN_PREFILL_PX * px, Math.floor((end - x0) / 3)));
        var first = Math.min(Math.max(Math.round(u.valToPos(g.firstToken[i], "x", true)), x0 + least), end);
        segment(g.prefillColor, x0, first, y);
        bars.push([x0, y]);
        decodeFrom = first;
      }
      if (end > decodeFrom) segment(g.decodeColor, decodeFrom, end, y);
    }
    ctx.restore();
  }

  // visibleFirstTokens counts the bars whose first segment a person can
  // see: the pixel just inside its start has the first-token colour.
  function visibleFirstTokens(canvas, bars, colour) {
    var w = canvas.width, h = canvas.height;
    var data = canvas.getContext("2d").getImageData(0, 0, w, h).data;
    var rgb = hexToRgb(colour), seen = 0;
    bars.forEach(function (b) {
      var x = Math.min(w - 1, Math.max(0, b[0])), y = Math.min(h - 1, Math.max(0, Math.floor(b[1])));
      var k = (y * w + x) * 4;
      if (Math.abs(data[k] - rgb[0]) + Math.abs(data[k + 1] - rgb[1]) + Math.abs(data[k + 2] - rgb[2]) < 60) seen++;
    });
    return seen;
  }

  var SVG = "http://www.w3.org/2000/svg";

  // swatch is a short line in a series' colour and dash, as drawn.
  function swatch(colour, dash, width) {
    var svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("width", String(width));
    svg.setAttribute("height", "10");
    svg.setAttribute("class", "swatch-line");
    var line = document.createElementNS(SVG, "line");
    line.setAttribute("x1", "0");
    line.setAttribute("y1", "5");
    line.setAttribute("x2", String(width));
    line.setAttribute("y2", "5");
    line.setAttribute("stroke", colour);
    line.setAttribute("stroke-width", "2");
    if (dash && dash.length) line.setAttribute("stroke-dasharray", dash.join(" "));
    svg.appendChild(line);
    return svg;
  }

  function dashText(dash) { return dash && dash.length ? dash.join(" ") : "solid"; }

  // dashLegend replaces uPlot's square legend markers, which show colour
  // only, with each line's own dash, so the legend says which style is
  // mean, median or P99.
  function dashLegend(box, spec) {
    var rows = box.querySelectorAll(".u-legend .u-series");
    for (var i = 1; i < rows.length; i++) {
      var s = spec.series[i - 1], marker = rows[i].querySelector(".u-marker");
      if (!s || !marker) continue;
      marker.style.border = "none";
      marker.style.background = "none";
      marker.style.width = "30px";
      marker.textContent = "";
      marker.appendChild(swatch(s.color, s.dash, 30));
      marker.dataset.dash = dashText(s.dash);
    }
  }

  // legendCells places each series in a table of setups by line styles,
  // or returns null when the chart's lines do not form one (each cell one
  // line, more than one row or column).
  function legendCells(spec) {
    if (!spec.styles || spec.styles.length === 0) return null;
    var rows = [], cells = {};
    for (var i = 0; i < spec.series.length; i++) {
      var s = spec.series[i], row = rows.indexOf(s.setup || "");
      if (row < 0) { row = rows.length; rows.push(s.setup || ""); }
      var key = row + "/" + s.style;
      if (cells[key] !== undefined || !spec.styles[s.style]) return null;
      cells[key] = i;
    }
    if (rows.length * spec.styles.length < 2) return null;
    return { rows: rows, cells: cells };
  }

  // matrixLegend is the legend as a table: a row per setup, a column per
  // line style (headed by its dash and what it stands for: mean, median,
  // P99, or a load), each cell the line's own swatch and its value under
  // the cursor.
  function matrixLegend(spec, layout) {
    var table = document.createElement("table");
    table.className = "legend-matrix";
    var head = table.createTHead().insertRow();
    var corner = document.createElement("th");
    corner.className = "x-value";
    head.appendChild(corner);
    spec.styles.forEach(function (st) {
      var th = document.createElement("th");
      th.appendChild(swatch("#555555", st.dash, 30));
      th.appendChild(document.createTextNode(" " + st.label));
      th.dataset.dash = dashText(st.dash);
      head.appendChild(th);
    });
    var body = table.createTBody(), values = [];
    layout.rows.forEach(function (name, r) {
      var tr = body.insertRow();
      var th = document.createElement("th");
      th.textContent = name;
      tr.appendChild(th);
      spec.styles.forEach(function (st, c) {
        var td = tr.insertCell();
        var i = layout.cells[r + "/" + c];
        if (i === undefined) return;
        var s = spec.series[i];
        td.appendChild(swatch(s.color, s.dash, 30));
        td.dataset.dash = dashText(s.dash);
        td.title = s.label;
        var v = document.createElement("span");
        v.className = "value";
        td.appendChild(v);
        values[i + 1] = v;
      });
    });
    var wrap = document.createElement("div");
    wrap.className = "legend-wrap";
    wrap.appendChild(table);
    return { el: wrap, corner: corner, values: values };
  }

  function showCursorValues(u, legend, spec) {
    var idx = u.cursor.idx;
    var x = idx == null ? null : u.data[0][idx];
    legend.corner.textContent = x == null ? spec.xLabel : spec.xLabel + ": " + u.series[0].value(u, x, 0, idx);
    for (var k = 1; k < u.data.length; k++) {
      if (!legend.values[k]) continue;
      var v = idx == null ? null : u.data[k][idx];
      legend.values[k].textContent = v == null ? "" : String(u.series[k].value(u, v, k, idx));
    }
  }

  // styleKey says what the dashes of a chart stand for, above the plot.
  function styleKey(spec) {
    var key = document.createElement("p");
    key.className = "style-key";
    key.appendChild(document.createTextNode("line style: "));
    spec.styles.forEach(function (st) {
      var item = document.createElement("span");
      item.appendChild(swatch("#555555", st.dash, 30));
      item.appendChild(document.createTextNode(" " + st.label));
      key.appendChild(item);
    });
    return key;
  }

  // loadSplits puts the x ticks of a load chart on the loads that were
  // run, when they are few and far enough apart to label.
  function loadSplits(spec) {
    var xs = [];
    spec.x.forEach(function (x) { if (x != null && xs.indexOf(x) < 0) xs.push(x); });
    return function (u, axisIdx, min, max, incr, space) {
      if (xs.length <= 12) {
        var ok = true;
        for (var i = 1; i < xs.length; i++) {
          if (u.valToPos(xs[i], "x") - u.valToPos(xs[i - 1], "x") < 44) ok = false;
        }
        if (ok) return xs;
      }
      var out = [];
      for (var v = Math.ceil(min / incr) * incr; v <= max + incr * 1e-9; v += incr) out.push(+v.toPrecision(12));
      return out;
    };
  }

  function options(spec, width, onDraw, bars, matrix) {
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
    if (spec.section === "load") axes[0].splits = loadSplits(spec);
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
    if (spec.kind === "gantt") drawHooks.push(function (u) { drawGantt(u, spec, bars); });
    drawHooks.push(onDraw);
    var hooks = { draw: drawHooks };
    if (matrix) hooks.setCursor = [function (u) { showCursorValues(u, matrix, spec); }];
    return { width: width, height: HEIGHT, series: series, axes: axes, scales: scales, hooks: hooks, legend: { show: spec.kind !== "gantt" && !matrix, live: true } };
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
    var cells = spec.kind === "gantt" ? null : legendCells(spec);
    if (!cells && spec.styles && spec.styles.length > 1) box.appendChild(styleKey(spec));
    grid.appendChild(box);
    var width = Math.max(320, box.clientWidth || 600);
    var data = [spec.x].concat(spec.series.map(function (s) { return s.values; }));
    var bars = [], matrix = cells ? matrixLegend(spec, cells) : null;
    var plot = new uPlot(options(spec, width, function () { state.drawn[index] = true; }, bars, matrix), data, box);
    if (matrix) {
      box.appendChild(matrix.el);
      showCursorValues(plot, matrix, spec);
    } else if (spec.kind !== "gantt") {
      dashLegend(box, spec);
    }
    state.plots.push({ plot: plot, box: box, spec: spec, bars: bars, matrix: matrix });
  }

  // legendFollowsCursor puts the cursor on a point and checks the legend
  // shows each series' value there, as a person hovering would see it.
  function legendFollowsCursor(p) {
    var u = p.plot, idx = -1;
    for (var i = u.data[0].length - 1; i >= 0 && idx < 0; i--) {
      for (var s = 1; s < u.data.length; s++) if (u.data[s][i] != null) { idx = i; break; }
    }
    if (idx < 0) return "no point";
    u.setCursor({ left: u.valToPos(u.data[0][idx], "x"), top: 1 });
    var got = u.cursor.idx, rows = p.box.querySelectorAll(".u-legend .u-series"), bad = [];
    for (var k = 1; k < u.data.length; k++) {
      var v = u.data[k][got];
      var want = v == null ? "" : String(u.series[k].value(u, v, k, got));
      var shown = p.matrix ? (p.matrix.values[k] ? p.matrix.values[k].textContent : "(no cell)")
        : rows[k] ? rows[k].querySelector(".u-value").textContent : "(no row)";
      if (v != null && shown !== want) bad.push(u.series[k].label + ": " + shown + " != " + want);
    }
    // #cursor keeps it there, to see the legend's values in a screenshot.
    if (location.hash !== "#cursor") u.setCursor({ left: -10, top: -10 });
    return got === idx && bad.length === 0 ? "ok" : "cursor at " + got + " not " + idx + "; " + bad.join(", ");
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
      // What the chart holds, read back from uPlot rather than the spec.
      var points = 0;
      for (var s = 1; s < p.plot.data.length; s++) p.plot.data[s].forEach(function (v) { if (v != null) points++; });
      p.box.dataset.series = String(p.plot.series.length - 1);
      p.box.dataset.points = String(points);
      if (p.spec.kind === "gantt") {
        p.box.dataset.bars = String(p.bars.length);
        p.box.dataset.firstTokens = String(visibleFirstTokens(p.plot.ctx.canvas, p.bars, p.spec.gantt.prefillColor));
      } else {
        var marks = p.matrix ? ".legend-matrix td" : ".u-legend .u-marker";
        p.box.dataset.dashes = Array.prototype.map.call(p.box.querySelectorAll(marks), function (m) { return m.dataset.dash || ""; }).filter(function (d) { return d !== ""; }).join("|");
        p.box.dataset.legendKind = p.matrix ? "table" : "list";
        if (p.matrix) p.box.dataset.styles = Array.prototype.map.call(p.box.querySelectorAll(".legend-matrix thead th[data-dash]"), function (th) { return th.dataset.dash + "=" + th.textContent.trim(); }).join("|");
        p.box.dataset.legend = legendFollowsCursor(p);
      }
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
    // Many timelines share the grid two by two; one or two get the width.
    var timelines = (REPORT.charts || []).filter(function (c) { return c.section === "timeline"; }).length;
    if (timelines > 2) document.querySelector("#section-timeline .grid").classList.remove("wide");
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
