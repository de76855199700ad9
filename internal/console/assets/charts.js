// waitroom operator console: the numbers and charts of the room view. The
// stats of the last hour come whole from GET …/stats, then bucket by bucket
// from the live stream; the headline numbers (now, per minute, the waits and
// how good the estimates were) and one chart a series are drawn from them.
// Loaded before app.js, which starts it with the helpers of core.js; it
// reads the open room view from room.js.
//
// Stable element ids for browser tests:
//   #stat-waiting #stat-active #stat-admissions #stat-joins #stat-abandons
//   #stat-eta #stat-p50 #stat-p90 #stat-p99 #stat-esterr
//   svg[data-series=waiting|active|admissions|joins|abandons] (#chart-NAME)
"use strict";

window.waitroomCharts = (c) => {
  const { $, setText, fmt, fmtRate, fmtSecs, timeOf, num } = c;
  const { view } = c.room;
  const HOUR = 3600 * 1000;
  const SERIES = ["waiting", "active", "admissions", "joins", "abandons"];
  const RATES = { admissions: true, joins: true, abandons: true };

  // ---------- stats ----------

  function applyStats(a, full) {
    const rv = view();
    if (!a) return;
    if (full) rv.series = new Map();
    for (const p of a.series || []) {
      const t = timeOf(p.t);
      if (!Number.isNaN(t)) rv.series.set(t, p);
    }
    const at = timeOf(a.at);
    rv.at = Number.isNaN(at) ? Date.now() : at;
    rv.step = (a.step_seconds || 10) * 1000;
    for (const t of rv.series.keys()) if (t < rv.at - HOUR) rv.series.delete(t);
    if (a.waits) rv.waits = a.waits;
    if (a.estimate) rv.estimate = a.estimate;
    renderStats();
    drawCharts();
  }

  // perMinute sums a counter over the buckets of the last minute.
  function perMinute(key) {
    const rv = view();
    let sum = 0;
    for (const [t, p] of rv.series) if (t > rv.at - 60000 && typeof p[key] === "number") sum += p[key];
    return sum;
  }

  // latest returns the newest bucket's gauge, or the room's count.
  function latest(key) {
    const rv = view();
    let best = -Infinity;
    let v = null;
    for (const [t, p] of rv.series) {
      if (t > best && typeof p[key] === "number") {
        best = t;
        v = p[key];
      }
    }
    if (v == null && rv.room) v = num(rv.room[key]);
    return v;
  }

  function renderStats() {
    const rv = view();
    const cap = rv.room ? rv.room.capacity : null;
    setText($("stat-waiting"), fmt(latest("waiting")));
    setText($("stat-active"), fmt(latest("active")) + (cap != null ? " of " + fmt(cap) : ""));
    setText($("stat-admissions"), fmt(perMinute("admissions")));
    setText($("stat-joins"), fmt(perMinute("joins")));
    setText($("stat-abandons"), fmt(perMinute("abandons")));
    const est = rv.estimate || {};
    setText($("stat-eta"), est.last_eta_seconds == null ? "none yet" : fmtSecs(est.last_eta_seconds));
    const w = rv.waits || {};
    const ms = (v) => (w.count > 0 && typeof v === "number" ? fmtSecs(v / 1000) : "—");
    setText($("stat-p50"), ms(w.p50_ms));
    setText($("stat-p90"), ms(w.p90_ms));
    setText($("stat-p99"), ms(w.p99_ms));
    if (est.count > 0 && typeof est.mean_abs_error_seconds === "number") {
      const bias = est.mean_error_seconds || 0;
      const rel = typeof est.mean_rel_error_pct === "number" ? Math.round(est.mean_rel_error_pct) + "% of the wait, " : "";
      setText($("stat-esterr"), "± " + fmtSecs(est.mean_abs_error_seconds) + " (" + rel +
        (bias > 0 ? "late by " : bias < 0 ? "early by " : "bias ") + fmtSecs(Math.abs(bias)) +
        ", " + fmt(est.count) + " admissions)");
    } else {
      setText($("stat-esterr"), "no admissions to compare yet");
    }
  }

  // ---------- charts ----------

  const SVG = "http://www.w3.org/2000/svg";

  function svgEl(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    return e;
  }

  function drawCharts() {
    const rv = view();
    if (!rv) return;
    const to = rv.at || Date.now();
    const step = rv.step || 10000;
    const times = [...rv.series.keys()].sort((a, b) => a - b);
    for (const key of SERIES) {
      const scale = RATES[key] ? 60000 / step : 1;
      const pts = times.map((t) => {
        const v = rv.series.get(t)[key];
        return { t, v: typeof v === "number" ? v * scale : null };
      });
      const svg = document.querySelector('svg[data-series="' + key + '"]');
      drawChart(svg, $("range-" + key), pts, to - HOUR, to, step);
    }
  }

  // drawChart draws one series as a line over [from, to], a gap where the
  // series has none, the newest value as a dot, and a dashed line at the
  // highest; the numbers go in range (text in a stretched SVG would be
  // stretched too).
  function drawChart(svg, range, pts, from, to, step) {
    const W = 320, H = 110, L = 2, R = 6, T = 8, B = 4;
    const vals = pts.filter((p) => p.v != null && p.t >= from);
    const most = Math.max(0, ...vals.map((p) => p.v));
    const top = Math.max(1, most);
    const x = (t) => L + ((t - from) / (to - from)) * (W - L - R);
    const y = (v) => H - B - (v / top) * (H - T - B);
    const kids = [
      svgEl("line", { x1: L, y1: y(0), x2: W - R, y2: y(0), class: "axis" }),
      svgEl("line", { x1: L, y1: y(top), x2: W - R, y2: y(top), class: "grid" }),
    ];
    let d = "";
    let prev = null;
    for (const p of pts) {
      if (p.v == null || p.t < from) { prev = null; continue; }
      const cmd = prev && p.t - prev.t <= 2 * step ? "L" : "M";
      d += cmd + x(p.t).toFixed(1) + " " + y(p.v).toFixed(1);
      prev = p;
    }
    if (d) kids.push(svgEl("path", { d, class: "line" }));
    const last = vals.length ? vals[vals.length - 1] : null;
    if (last) kids.push(svgEl("circle", { cx: x(last.t), cy: y(last.v), r: 2.5, class: "dot" }));
    svg.replaceChildren(...kids);
    setText(range, last ? "now " + fmtRate(last.v) + " · max " + fmtRate(most) : "no data yet");
  }

  return { applyStats, renderStats, drawCharts };
};
