// kubeslow report: turns the chart specs the Go renderer wrote (charts.go: data only) into Apache ECharts
// options and draws them. Each chart's element gets data-drawn: the number of values each of its series
// holds after ECharts took the option (read back with getOption), which the browser test checks; the body
// gets data-charts (charts drawn), data-errors and data-render-ms (from navigation start to the last chart
// drawn, also a performance mark "kubeslow-charts-drawn").
(function () {
  "use strict";
  var body = document.body;
  body.dataset.errors = "0";
  window.addEventListener("error", function () {
    body.dataset.errors = String(Number(body.dataset.errors) + 1);
  });
  var palette = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
  var font = '"DejaVu Sans", "Segoe UI", Helvetica, Arial, sans-serif';

  function sig(v, n) {
    if (v === 0) return "0";
    var a = Math.abs(v);
    if (a >= 1e4) return Math.round(v).toLocaleString("en");
    return String(Number(v.toPrecision(n || 3)));
  }
  // fmt formats a value in its unit, short, for axes and tooltips.
  function fmt(v, unit) {
    if (v === null || v === undefined || isNaN(v)) return "–";
    switch (unit) {
      case "seconds":
        var a = Math.abs(v);
        if (a === 0) return "0";
        if (a < 1e-3) return sig(v * 1e6) + " µs";
        if (a < 1) return sig(v * 1e3) + " ms";
        if (a < 120) return sig(v) + " s";
        if (a < 7200) return sig(v / 60) + " min";
        return sig(v / 3600) + " h";
      case "bytes":
        var u = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;
        while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
        return sig(v) + " " + u[i];
      case "ratio":
        return Number(v.toFixed(2)).toString();
      case "percent":
        return sig(v) + " %";
    }
    var s = Math.abs(v) >= 1e6 ? sig(v / 1e6) + "M" : Math.abs(v) >= 1e4 ? sig(v / 1e3) + "k" : sig(v);
    return s;
  }
  // fmtAxis is fmt for axis ticks: a tick of minutes that is not a whole minute reads 3m20s, not 3.33 min.
  function fmtAxis(v, unit) {
    if (unit === "seconds" && v >= 120 && v < 7200 && Math.round(v) % 60 !== 0) return Math.floor(v / 60) + "m" + Math.round(v % 60) + "s";
    return fmt(v, unit);
  }
  function unitSuffix(unit) {
    return unit === "seconds" || unit === "bytes" || unit === "ratio" || unit === "percent" ? "" : " " + unit.replace(/_/g, " ");
  }
  function colourOf() {
    var m = {};
    return function (n) {
      n = n.replace(/ \(before\)$/, "");
      if (!(n in m)) m[n] = palette[Object.keys(m).length % palette.length];
      return m[n];
    };
  }
  var base = {
    animation: false,
    textStyle: { fontFamily: font },
    tooltip: { confine: true, textStyle: { fontSize: 12 } }
  };
  function extend(o) {
    for (var k in base) if (!(k in o)) o[k] = base[k];
    return o;
  }
  // lineMark draws reference lines across the value axis, each labelled at its top end: the rightmost's
  // label runs to its right, the others' to their left, so that two close lines keep readable labels.
  function lineMark(lines, axis, unit, showLabels, colour, pos) {
    var right = Math.max.apply(null, lines.map(function (l) { return l.v; }));
    return {
      symbol: "none", silent: false,
      lineStyle: { type: "dashed", color: colour || "#c0392b", width: 1.5 },
      label: { show: showLabels, formatter: "{b}", fontSize: 11, color: "#7b241c", position: pos || "end" },
      emphasis: { label: { show: true } },
      data: lines.map(function (l) {
        var d = { name: l.label, label: { align: l.v === right && lines.length > 1 ? "left" : "right", padding: [0, 4, 0, 4] } };
        d[axis] = l.v;
        return d;
      })
    };
  }

  // bars: horizontal bars over the categories, a grid per panel (side by side, panel.cols per row).
  function barsOption(spec, width) {
    var n = spec.panels.length, cols = spec.panels[0].cols || n, rows = Math.ceil(n / cols);
    var longest = spec.cats.reduce(function (m, c) { return Math.max(m, c.length); }, 0);
    var labelW = Math.min(280, 20 + 6.6 * longest), gap = 56, right = 70;
    var plotW = (width - labelW - right - (cols - 1) * gap) / cols;
    var hasLines = spec.panels.some(function (p) { return p.lines && p.lines.length; });
    var top = hasLines ? 56 : 40, panelH = (spec.height - top - 20) / rows - 50;
    var colour = colourOf();
    var o = extend({ grid: [], xAxis: [], yAxis: [], series: [], legend: { top: 4, type: "scroll", data: [] } });
    o.tooltip = { trigger: "axis", axisPointer: { type: "shadow" }, confine: true, textStyle: { fontSize: 12 } };
    o.legend.show = spec.panels.reduce(function (n, p) { return n + p.series.length; }, 0) > 1;
    spec.panels.forEach(function (p, i) {
      var col = i % cols, row = Math.floor(i / cols);
      o.grid.push({ left: labelW + col * (plotW + gap), width: plotW, top: top + row * (panelH + 50), height: panelH });
      o.xAxis.push({ type: "value", gridIndex: i, name: p.title, nameLocation: "middle", nameGap: 24, nameTextStyle: { fontSize: 11 },
        axisLabel: { fontSize: 10, hideOverlap: true, formatter: function (v) { return fmtAxis(v, p.unit); } }, splitLine: { lineStyle: { color: "#eee" } } });
      o.yAxis.push({ type: "category", gridIndex: i, data: spec.cats, inverse: true, axisTick: { show: false },
        axisLabel: { show: col === 0, fontSize: 11, width: labelW - 10, overflow: "truncate" } });
      var k = p.series.length;
      p.series.forEach(function (s, j) {
        if (o.legend.data.indexOf(s.name) < 0) o.legend.data.push(s.name);
        var bar = {
          type: "bar", name: s.name, xAxisIndex: i, yAxisIndex: i, itemStyle: { color: colour(s.name), opacity: s.before ? 0.4 : 1 },
          barGap: "0%", barCategoryGap: "24%",
          data: s.values.map(function (v, c) {
            if (v === null) return "-";
            var est = s.whisker && s.lo && s.lo[c] !== null;
            return { value: v, lo: est ? s.lo[c] : null, hi: est ? s.hi[c] : null };
          }),
          // With whiskers, the value is written past the whisker's end (by the whisker series).
          label: { show: !p.stack && !s.lo && panelH / spec.cats.length / k >= 10, position: "right", fontSize: 10, color: "#444",
            formatter: function (d) { var e = d.data && d.data.lo !== null && d.data.lo !== undefined && /bucket/.test(s.whisker); return (e ? "≈" : "") + fmt(d.value, p.unit); } }
        };
        if (p.stack) bar.stack = (s.before ? "before" : "after") + i;
        if (j === 0 && p.lines) bar.markLine = lineMark(p.lines, "xAxis", p.unit, true, null, "start"); // the category axis runs downwards
        o.series.push(bar);
        if (s.lo && !p.stack) {
          o.series.push({
            type: "custom", name: s.name, xAxisIndex: i, yAxisIndex: i, z: 10, silent: true, tooltip: { show: false },
            data: s.lo.map(function (lo, c) { return lo === null ? null : [lo, s.hi[c], c, s.values[c]]; }).filter(function (d) { return d !== null; }),
            renderItem: function (params, api) {
              var a = api.coord([api.value(0), api.value(2)]), b = api.coord([api.value(1), api.value(2)]);
              var band = api.size([0, 1])[1], w = band * 0.76 / k, y = a[1] - band * 0.38 + w * (j + 0.5), h = Math.max(3, w * 0.5);
              var st = { stroke: "#222", lineWidth: 1.3 };
              var label = panelH / spec.cats.length / k >= 10 ? (/bucket/.test(s.whisker) ? "≈" : "") + fmt(api.value(3), p.unit) : "";
              return { type: "group", children: [
                { type: "text", style: { text: label, x: b[0] + 5, y: y, verticalAlign: "middle", fontSize: 10, fill: "#444", fontFamily: font } },
                { type: "line", shape: { x1: a[0], y1: y, x2: b[0], y2: y }, style: st },
                { type: "line", shape: { x1: a[0], y1: y - h / 2, x2: a[0], y2: y + h / 2 }, style: st },
                { type: "line", shape: { x1: b[0], y1: y - h / 2, x2: b[0], y2: y + h / 2 }, style: st }] };
            }
          });
        }
      });
    });
    o.tooltip.formatter = function (items) {
      var out = [items[0].name];
      items.forEach(function (it) {
        if (it.seriesType !== "bar" || it.value === "-" || it.value === undefined) return;
        var panel = spec.panels[o.series[it.seriesIndex].xAxisIndex], d = it.data;
        var s = panel.series.filter(function (x) { return x.name === it.seriesName; })[0];
        var line = it.marker + it.seriesName + ": <b>" + fmt(d.value, panel.unit) + unitSuffix(panel.unit) + "</b>";
        if (d.lo !== null && d.lo !== undefined && s) {
          line += /bucket/.test(s.whisker) ? " (estimate, within bucket [" + fmt(d.lo, panel.unit) + ", " + fmt(d.hi, panel.unit) + "])"
            : " (" + s.whisker + ": " + fmt(d.lo, panel.unit) + " – " + fmt(d.hi, panel.unit) + ")";
        }
        out.push(line);
      });
      return out.join("<br>");
    };
    return o;
  }

  // cdf: one step line per series, fraction ≤ x, on a log axis when spec.log.
  function cdfOption(spec) {
    var p = spec.panels[0], colour = colourOf();
    var o = extend({
      legend: { top: 4, type: "scroll" },
      grid: { left: 70, right: 40, top: 60, bottom: 50 },
      xAxis: { type: spec.log ? "log" : "value", max: function (v) { var m = Math.max.apply(null, [v.max].concat((p.lines || []).map(function (l) { return l.v * 1.08; }))); return spec.log ? m : Number(m.toPrecision(2)); }, name: p.title + (spec.log ? " (log scale)" : ""), nameLocation: "middle", nameGap: 28,
        axisLabel: { fontSize: 10, formatter: function (v) { return fmt(v, p.unit); } }, splitLine: { lineStyle: { color: "#eee" } } },
      yAxis: { type: "value", min: 0, max: 1, name: "fraction of pods ≤ x", nameLocation: "middle", nameGap: 44,
        axisLabel: { fontSize: 10 }, splitLine: { lineStyle: { color: "#eee" } } },
      tooltip: { trigger: "axis", confine: true, textStyle: { fontSize: 12 }, axisPointer: { type: "cross" },
        formatter: function (items) {
          return items.map(function (it) { return it.marker + it.seriesName + ": " + fmt(it.value[0], p.unit) + " at " + (it.value[1] * 100).toFixed(1) + " %"; }).join("<br>");
        } },
      series: p.series.map(function (s, j) {
        var ser = { type: "line", name: s.name, step: "end", showSymbol: false, data: s.points, itemStyle: { color: colour(s.name) },
          lineStyle: { width: s.bold ? 3 : 1.6, type: s.before ? "dashed" : "solid", opacity: s.before ? 0.7 : 1 } };
        if (j === 0) {
          ser.markLine = lineMark(p.lines || [], "xAxis", p.unit, true);
          ser.markLine.data = ser.markLine.data.concat((p.hlines || []).map(function (l) { return { name: l.label, yAxis: l.v, lineStyle: { color: "#888", type: "dotted" } }; }));
        }
        return ser;
      })
    });
    return o;
  }

  // time: panels stacked on one time axis; marks as dashed vertical lines, load spans shaded.
  // relStep is a round tick step (ms) for a relative time axis of span ms: at most 8 ticks.
  function relStep(span) {
    var steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400];
    for (var i = 0; i < steps.length; i++) if (span / (steps[i] * 1000) <= 8) return steps[i] * 1000;
    return 86400000;
  }
  function timeOption(spec) {
    relative = !!spec.relative;
    var legend = spec.panels.some(function (p) { return p.series.length > 1; });
    var n = spec.panels.length, top = legend ? 50 : 36, gap = 52, panelH = (spec.height - top - 40) / n - gap;
    var t0 = Infinity, t1 = -Infinity, colour = colourOf(), names = [];
    spec.panels.forEach(function (p) { p.series.forEach(function (s) {
      if (s.points.length) { t0 = Math.min(t0, s.points[0][0]); t1 = Math.max(t1, s.points[s.points.length - 1][0]); }
      if (names.indexOf(s.name) < 0) names.push(s.name);
    }); });
    (spec.spans || []).forEach(function (sp) { t0 = Math.min(t0, sp.start); t1 = Math.max(t1, sp.end); });
    var o = extend({ grid: [], xAxis: [], yAxis: [], series: [], title: [],
      legend: { top: 4, type: "scroll", data: names, show: legend },
      axisPointer: { link: [{ xAxisIndex: "all" }] },
      dataZoom: [{ type: "inside", xAxisIndex: spec.panels.map(function (_, i) { return i; }) }],
      tooltip: { trigger: "axis", confine: true, textStyle: { fontSize: 12 } } });
    spec.panels.forEach(function (p, i) {
      var y = top + i * (panelH + gap) + 18;
      o.grid.push({ left: 70, right: 30, top: y, height: panelH });
      o.title.push({ text: p.title, top: y - 32, left: 70, textStyle: { fontSize: 12, fontWeight: "bold", color: "#333" } });
      o.xAxis.push(spec.relative ? { type: "value", gridIndex: i, min: 0, max: t1, interval: relStep(t1), axisLabel: { fontSize: 10, hideOverlap: true, formatter: function (v) { return fmtAxis(v / 1000, "seconds"); } }, splitLine: { show: true, lineStyle: { color: "#f0f0f0" } } }
        : { type: "time", gridIndex: i, min: t0, max: t1, axisLabel: { fontSize: 10, hideOverlap: true }, splitLine: { show: true, lineStyle: { color: "#f0f0f0" } } });
      o.yAxis.push({ type: "value", gridIndex: i, scale: false, axisLabel: { fontSize: 10, formatter: function (v) { return fmt(v, p.unit); } }, splitLine: { lineStyle: { color: "#eee" } } });
      p.series.forEach(function (s, j) {
        var ser = { type: "line", name: s.name, xAxisIndex: i, yAxisIndex: i, data: s.points, showSymbol: s.points.length <= 60, symbolSize: 4,
          sampling: "lttb", lineStyle: { width: 1.5, type: s.before ? "dashed" : "solid", opacity: s.before ? 0.7 : 1 }, itemStyle: { color: colour(s.name) },
          tooltip: { valueFormatter: function (v) { return fmt(v, p.unit) + unitSuffix(p.unit); } } };
        if (j === 0) {
          if (p.lines && p.lines.length) {
            // Each mark is numbered on its line; the numbers are explained on the panel's title row.
            ser.markLine = lineMark(p.lines, "xAxis", p.unit, true, "#e15759");
            ser.markLine.label = { show: true, position: "end", formatter: function (d) { return String(d.dataIndex + 1); }, fontSize: 10, color: "#c0392b", fontWeight: "bold" };
            ser.markLine.data.forEach(function (d) { d.name = d.name + " (" + hhmmss(d.xAxis) + ")"; });
            var shown = p.lines.slice(0, 3).map(function (l, k) { return (k + 1) + ": " + l.label + " at " + hhmmss(l.v); }).join("    ");
            if (p.lines.length > 3) shown += "    +" + (p.lines.length - 3) + " more (hover the lines)";
            o.title.push({ text: shown, top: y - 31, right: 30, textStyle: { fontSize: 11, fontWeight: "normal", color: "#c0392b" } });
          }
          if (spec.spans && spec.spans.length) ser.markArea = { silent: true, itemStyle: { color: "rgba(242,142,43,0.13)" },
            label: { show: i === 0, position: "insideTopLeft", fontSize: 10, color: "#a0522d" },
            data: spec.spans.map(function (sp) { return [{ name: sp.name, xAxis: sp.start }, { xAxis: sp.end }]; }) };
        }
        o.series.push(ser);
      });
    });
    return o;
  }

  var relative = false;
  function hhmmss(t) { return relative ? "+" + fmt(t / 1000, "seconds") : new Date(t).toISOString().substring(11, 19); }

  // drawn counts the values each series (but the whiskers) holds in the chart's model, as ECharts took them
  // from the option (getModel: the instance's model, which getOption would deep-copy, data and all).
  function drawn(chart) {
    return chart.getModel().getSeries().filter(function (s) { return s.subType !== "custom"; }).map(function (s) {
      var d = s.getData(), n = 0;
      for (var i = 0; i < d.count(); i++) {
        var v = d.get(d.mapDimension(s.subType === "bar" ? "x" : "y"), i);
        if (v !== null && v !== undefined && !isNaN(v)) n++;
      }
      return n;
    });
  }

  var specs = JSON.parse(document.getElementById("kubeslow-charts").textContent || "[]");
  // "#plot=chart-3": that plot alone on the page (to share it, or take its picture).
  var solo = /^#plot=([\w-]+)$/.exec(location.hash);
  if (solo && document.getElementById(solo[1])) {
    var fig = document.getElementById(solo[1]).parentNode, holder = document.createElement("div");
    holder.className = "solo";
    holder.appendChild(fig);
    document.querySelectorAll("header, main").forEach(function (e) { e.remove(); });
    body.insertBefore(holder, body.firstChild);
    specs = specs.filter(function (s) { return s.id === solo[1]; });
  }
  var charts = [], count = 0;
  specs.forEach(function (spec) {
    var el = document.getElementById(spec.id);
    if (!el) { console.error("kubeslow: no element for chart " + spec.id); return; }
    try {
      var began = performance.now();
      el.style.height = spec.height + "px";
      var chart = echarts.init(el, null, { renderer: "canvas" });
      var o = spec.kind === "bars" ? barsOption(spec, el.clientWidth) : spec.kind === "cdf" ? cdfOption(spec) : timeOption(spec);
      chart.setOption(o);
      el.dataset.drawn = drawn(chart).join(" ");
      el.dataset.ms = String(Math.round(performance.now() - began));
      charts.push({ chart: chart, spec: spec, el: el });
      count++;
    } catch (e) {
      console.error("kubeslow: chart " + spec.id + " (" + spec.title + "): " + e);
      el.textContent = "this chart failed to draw: " + e;
    }
  });
  window.addEventListener("resize", function () {
    charts.forEach(function (c) {
      c.chart.resize();
      // A bars chart's grids are laid out in pixels of its width.
      if (c.spec.kind === "bars") c.chart.setOption(barsOption(c.spec, c.el.clientWidth), true);
    });
  });
  body.dataset.charts = String(count);
  // Where the first cause's fix ends on the page (the browser test checks it is on the first screen).
  var fix = document.querySelector(".cause .fix");
  if (fix) body.dataset.firstCauseBottom = String(Math.round(fix.getBoundingClientRect().bottom + window.scrollY));
  body.dataset.viewport = window.innerWidth + "x" + window.innerHeight;
  performance.mark("kubeslow-charts-drawn");
  body.dataset.renderMs = String(Math.round(performance.now()));
})();
