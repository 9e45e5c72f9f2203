// report.html's script: the charts from the JSON data block (Chart.js), the table's sorting and
// filtering. After drawing it marks every canvas with the pixels it holds (data-pixels) and the
// root element with data-ready="1", which tests/browser.rs reads from the dumped DOM.
(function () {
  "use strict";
  var root = document.documentElement;
  var data = JSON.parse(document.getElementById("report-data").textContent);

  // 1.5e12 → "1.5 T", for axes in G units per second.
  function si(gops) {
    var v = gops * 1e9, p = [[1e18, "E"], [1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
    for (var i = 0; i < p.length; i++) {
      if (Math.abs(v) >= p[i][0]) return +(v / p[i][0]).toPrecision(3) + " " + p[i][1];
    }
    return +v.toPrecision(3) + " ";
  }
  // Ticks on a log axis: only the decades.
  function decadeTicks(unit) {
    return function (value) {
      var l = Math.log10(value);
      return Math.abs(l - Math.round(l)) < 1e-9 ? si(value) + unit : "";
    };
  }
  function tooltip(lines) {
    return {
      callbacks: {
        title: function () { return ""; },
        label: function (ctx) { return lines(ctx) || ""; }
      }
    };
  }
  var common = { animation: false, responsive: true, maintainAspectRatio: false };
  var GREY = "#999999";

  // cuBLAS's rate as a dashed vertical line over a horizontal bar chart.
  var vendorLine = {
    id: "vendorLine",
    afterDatasetsDraw: function (chart, args, opts) {
      if (opts.value == null) return;
      var x = chart.scales.x.getPixelForValue(opts.value), a = chart.chartArea, c = chart.ctx;
      c.save();
      c.strokeStyle = "#222"; c.lineWidth = 1.5; c.setLineDash([5, 4]);
      c.beginPath(); c.moveTo(x, a.top); c.lineTo(x, a.bottom); c.stroke();
      c.restore();
    }
  };

  // A long label as lines of at most 30 characters, broken at spaces.
  function lines(label) {
    if (label.length <= 30) return label;
    var out = [], line = "";
    label.split(" ").forEach(function (w) {
      if (line && (line + " " + w).length > 30) { out.push(line); line = w; } else { line = line ? line + " " + w : w; }
    });
    if (line) out.push(line);
    return out;
  }
  // Whole decades around the values.
  function decades(values) {
    var v = values.filter(function (x) { return x > 0; });
    if (!v.length) return {};
    var lo = Math.floor(Math.log10(Math.min.apply(null, v))), hi = Math.ceil(Math.log10(Math.max.apply(null, v)));
    return { min: Math.pow(10, lo), max: Math.pow(10, Math.max(hi, lo + 1)) };
  }

  function ladderChart(canvas, l) {
    var range = decades(l.bars.map(function (b) { return b.rate; }).concat(l.vendor_rate ? [l.vendor_rate] : []));
    return new Chart(canvas, {
      type: "bar",
      data: {
        labels: l.bars.map(function (b) { return lines(b.label); }),
        datasets: [{
          label: l.dtype,
          data: l.bars.map(function (b) { return b.rate; }),
          backgroundColor: l.bars.map(function (b) { return b.vendor ? GREY : l.color; }),
          barPercentage: 0.8
        }]
      },
      options: Object.assign({}, common, {
        indexAxis: "y",
        scales: {
          x: { type: "logarithmic", min: range.min, max: range.max, title: { display: true, text: l.unit + "/s" },
               ticks: { callback: decadeTicks(l.unit + "/s"), maxRotation: 0 } },
          y: { ticks: { autoSkip: false } }
        },
        plugins: {
          legend: { display: false },
          vendorLine: { value: l.vendor_rate },
          tooltip: tooltip(function (ctx) { return l.bars[ctx.dataIndex].tip; })
        }
      }),
      plugins: [vendorLine]
    });
  }

  function rooflineChart(canvas, r) {
    var sets = r.roofs.map(function (roof) {
      return {
        type: "line", label: roof.label,
        data: roof.points.map(function (p) { return { x: p[0], y: p[1] }; }),
        borderColor: roof.color, backgroundColor: roof.color, borderWidth: 2,
        borderDash: roof.dashed ? [6, 4] : [], pointRadius: 0, pointHitRadius: 0, order: 2
      };
    });
    r.series.forEach(function (s) {
      sets.push({
        type: "scatter", label: s.label + " (kernels)",
        data: s.points,
        pointStyle: s.style, pointRadius: 7, pointHoverRadius: 9, borderWidth: 2,
        borderColor: s.color,
        backgroundColor: s.points.map(function (p) { return p.hollow ? "rgba(255,255,255,0.9)" : s.color; }),
        order: 1
      });
    });
    return new Chart(canvas, {
      type: "scatter",
      data: { datasets: sets },
      options: Object.assign({}, common, {
        parsing: false,
        scales: {
          x: { type: "logarithmic", min: r.x_min, max: r.x_max, title: { display: true, text: "intensity, FLOP (OP) per byte" },
               ticks: { maxRotation: 0, callback: function (v) { var l = Math.log10(v); return Math.abs(l - Math.round(l)) < 1e-9 ? String(v) : ""; } } },
          y: { type: "logarithmic", min: r.y_min, max: r.y_max, title: { display: true, text: "rate, FLOP/s (OP/s for int32)" }, ticks: { callback: decadeTicks("") } }
        },
        plugins: {
          legend: { position: "right" },
          tooltip: tooltip(function (ctx) { return ctx.raw && ctx.raw.tip; })
        }
      })
    });
  }

  function shapesChart(canvas, s) {
    var palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
    var k = 0;
    return new Chart(canvas, {
      type: "bar",
      data: {
        labels: s.cases,
        datasets: s.series.map(function (series) {
          var color = series.vendor ? GREY : (k === 0 ? s.color : palette[k % palette.length]);
          if (!series.vendor) k++;
          return { label: series.label, data: series.rates, backgroundColor: color, tips: series.tips };
        })
      },
      options: Object.assign({}, common, {
        scales: {
          y: { type: "logarithmic", title: { display: true, text: s.unit + "/s" }, ticks: { callback: decadeTicks(s.unit + "/s") } },
          x: { ticks: { autoSkip: true, maxRotation: 70, minRotation: 50 } }
        },
        plugins: {
          tooltip: tooltip(function (ctx) { return ctx.dataset.tips[ctx.dataIndex]; })
        }
      })
    });
  }

  // Two runs compared: A/B per case, 1 (parity) as a dashed line.
  function compareChart(canvas, bars) {
    // A range a little wider than the ratios and 1 (ratios mostly sit near 1).
    var rs = bars.map(function (b) { return b.ratio; }).concat([1]);
    var range = { min: Math.min.apply(null, rs) / 1.15, max: Math.max.apply(null, rs) * 1.15 };
    return new Chart(canvas, {
      type: "bar",
      data: {
        labels: bars.map(function (b) { return b.label; }),
        datasets: [{
          label: "A/B",
          data: bars.map(function (b) { return b.ratio; }),
          backgroundColor: bars.map(function (b) { return b.ratio >= 1 ? "#2ca02c" : "#d62728"; })
        }]
      },
      options: Object.assign({}, common, {
        indexAxis: "y",
        scales: {
          x: { type: "logarithmic", min: range.min, max: range.max, title: { display: true, text: "B's median time / A's" } },
          y: { ticks: { autoSkip: false, font: { size: 10 } } }
        },
        plugins: {
          legend: { display: false },
          vendorLine: { value: 1 },
          tooltip: tooltip(function (ctx) { return bars[ctx.dataIndex].tip; })
        }
      }),
      plugins: [vendorLine]
    });
  }

  // Non-transparent pixels of a canvas (0 for a blank one).
  function pixels(canvas) {
    var c = canvas.getContext("2d"), w = canvas.width, h = canvas.height;
    if (!w || !h) return 0;
    var d = c.getImageData(0, 0, w, h).data, n = 0;
    for (var i = 3; i < d.length; i += 4) if (d[i] !== 0) n++;
    return n;
  }

  var charts = [];
  var canvases = document.querySelectorAll("canvas.chart-canvas");
  for (var i = 0; i < canvases.length; i++) {
    var canvas = canvases[i], kind = canvas.getAttribute("data-chart"), at = +canvas.getAttribute("data-index");
    try {
      if (kind === "ladder") charts.push(ladderChart(canvas, data.ladders[at]));
      else if (kind === "roofline") charts.push(rooflineChart(canvas, data.roofline));
      else if (kind === "shapes") charts.push(shapesChart(canvas, data.shapes[at]));
      else if (kind === "compare") charts.push(compareChart(canvas, data.compare));
      else throw new Error("unknown chart " + kind);
    } catch (e) {
      window.__noteError && window.__noteError("chart " + kind + " " + at + ": " + e);
    }
  }

  // The table: sort by a header's column, filter by text, dtype and status.
  var table = document.getElementById("results-table");
  if (table) {
    var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
    var text = document.getElementById("filter"), dtype = document.getElementById("filter-dtype"),
        status = document.getElementById("filter-status"), count = document.getElementById("row-count");
    var filter = function () {
      var q = text.value.toLowerCase(), d = dtype.value, s = status.value, shown = 0;
      rows.forEach(function (r) {
        var show = (!d || r.getAttribute("data-dtype") === d) && (!s || r.getAttribute("data-status") === s) &&
          (!q || r.textContent.toLowerCase().indexOf(q) >= 0);
        r.hidden = !show;
        if (show) shown++;
      });
      count.textContent = shown + " of " + rows.length + " rows";
      table.setAttribute("data-shown", String(shown));
    };
    [text, dtype, status].forEach(function (el) { el.addEventListener("input", filter); el.addEventListener("change", filter); });
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      var sort = function () {
        var asc = !th.classList.contains("asc"), num = th.getAttribute("data-type") === "num";
        Array.prototype.forEach.call(heads, function (h) { h.classList.remove("asc", "desc"); });
        th.classList.add(asc ? "asc" : "desc");
        var key = function (r) {
          var c = r.cells[col];
          if (!num) return c.textContent;
          var v = c.getAttribute("data-v");
          return v === "" || v === null ? null : +v;
        };
        rows.sort(function (a, b) {
          var x = key(a), y = key(b);
          if (x === null || y === null) return x === y ? 0 : (x === null ? 1 : -1); // blanks last
          var o = num ? x - y : String(x).localeCompare(String(y), undefined, { numeric: true });
          return asc ? o : -o;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      };
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (e) { if (e.key === "Enter") sort(); });
    });
    filter();
  }

  // What a headless browser checks: every canvas drawn on, and done.
  for (var j = 0; j < canvases.length; j++) {
    var n = pixels(canvases[j]);
    canvases[j].setAttribute("data-pixels", String(n));
  }
  window.__charts = charts; // for tests/browser.rs's hover check
  root.setAttribute("data-charts", String(charts.length));
  root.setAttribute("data-ready", "1");
})();
