"""Plotly figures of the dashboard, built server-side from selector data (dicts and lists).

Pure: no database access, no request. Each function returns a ``plotly.graph_objects.Figure``
with a title, axis titles with units, and a legend; ``to_div`` renders one for a template (the
page loads ``plotly.min.js`` from our own static files, so ``include_plotlyjs=False``).

Colours mean the same on every page: the stock arm is always ``STOCK``, the greedy control
always ``CONTROL``, other arms take the palette in a stable order by name, degenerate is
``DEGENERATE`` and healthy ``HEALTHY``.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from datetime import datetime, timedelta
from collections.abc import Iterable

import plotly.graph_objects as go

STOCK = "#1f77b4"        # blue: the production setting
CONTROL = "#7f7f7f"      # grey: the temperature-0 control
DEGENERATE = "#d62728"   # red
HEALTHY = "#2ca02c"      # green
NOISE = "#bcbd22"        # olive: the noise floor
NEUTRAL = "#6b7280"      # slate: counts that are no arm (flags)
# other arms, models and profiles: stable by name, none of the colours above (red never means an arm)
PALETTE = ("#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#8c6d31")
FONT = dict(family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif", size=13)


def arm_color(name: str, role: str | None = None) -> str:
    """The colour of an arm: by role for stock and control, else stable by name (the same arm
    name gets the same colour on every page and in the report)."""
    if role == "stock" or name == "stock":
        return STOCK
    if role == "control" or name.startswith("greedy"):
        return CONTROL
    return PALETTE[int(hashlib.sha1(name.encode()).hexdigest(), 16) % len(PALETTE)]


def _layout(fig: go.Figure, title: str, x: str, y: str, *, height: int = 360) -> go.Figure:
    fig.update_layout(title=dict(text=title, x=0.01, xanchor="left"), xaxis_title=x, yaxis_title=y,
                      height=height, autosize=True, margin=dict(l=60, r=20, t=80, b=50), font=FONT,
                      template="plotly_white", showlegend=True,
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0.0))
    return fig


def to_div(fig: go.Figure, div_id: str) -> str:
    """An HTML ``<div>`` plus the script that draws it (plotly.js is loaded by the page)."""
    return fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                       config={"displaylogo": False, "responsive": True})


# --- experiment ----------------------------------------------------------------------------


def rate_per_arm(arms: list[dict]) -> go.Figure:
    """Degenerate rate per arm with its Wilson 95 % interval (bars with error bars)."""
    fig = go.Figure()
    for a in arms:
        rate = ((a.get("stats") or {}).get("rate") or {})
        if rate.get("rate") is None:
            continue
        r, lo, hi = rate["rate"], rate.get("ci_low") or 0.0, rate.get("ci_high") or 0.0
        fig.add_trace(go.Bar(
            name=a["name"], x=[a["name"]], y=[100 * r], marker_color=arm_color(a["name"], a.get("role")),
            error_y=dict(type="data", symmetric=False, array=[100 * (hi - r)], arrayminus=[100 * (r - lo)]),
            hovertemplate=(f"{a['name']}: %{{y:.1f}}% degenerate ({rate.get('k')}/{rate.get('n')}), "
                           f"95% CI {100 * lo:.1f}–{100 * hi:.1f}%<extra></extra>")))
    fig.update_yaxes(range=[0, 100])
    return _layout(fig, "Degenerate samples per arm (Wilson 95% interval)", "arm", "degenerate samples (%)")


METRIC_LABELS = {"seq_rep_4": ("seq_rep_4", "repeated 4-grams (share)"),
                 "severity": ("severity", "severity (0–1)"),
                 "completion_tokens": ("length", "completion tokens")}


def distribution(samples: list[dict], arms: list[dict], metric: str) -> go.Figure:
    """One box per arm of a per-sample metric, every point shown when there are few."""
    title, axis = METRIC_LABELS.get(metric, (metric, metric))
    by_arm: dict[str, list[float]] = defaultdict(list)
    for s in samples:
        value = s.get(metric) if metric in ("severity", "completion_tokens") else (s.get("metrics") or {}).get(metric)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            by_arm[s["arm"]].append(float(value))
    fig = go.Figure()
    for a in arms:
        values = by_arm.get(a["name"], [])
        if not values:
            continue
        fig.add_trace(go.Box(y=values, name=a["name"], marker_color=arm_color(a["name"], a.get("role")),
                             boxpoints="all" if len(values) <= 64 else "outliers", jitter=0.4, pointpos=0,
                             hovertemplate=f"{a['name']}: %{{y}}<extra></extra>"))
    fig.update_yaxes(rangemode="tozero")
    return _layout(fig, f"{title} per sample, by arm", "arm", axis)


def kl_positions(divergences: list[dict], arms: list[dict]) -> go.Figure:
    """KL(stock ‖ arm) per response token for each kernel setting (teacher-forced on the original
    response), the token on hover, the first position over the threshold marked, and the noise
    floor (stock against itself) drawn."""
    roles = {a["name"]: a.get("role") for a in arms}
    fig = go.Figure()
    threshold = None
    for d in divergences:
        if d.get("kind") not in ("kernel", "noise_floor") or not d.get("positions"):
            continue
        pos = d["positions"]
        xs = [p.get("position", i) for i, p in enumerate(pos)]
        ys = [p.get("kl") for p in pos]
        tokens = [repr(p.get("token", ""))[1:-1][:40] for p in pos]
        noise = d["kind"] == "noise_floor"
        name = "noise floor (stock vs stock)" if noise else f"{d['arm']} vs stock"
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="lines", name=name, customdata=tokens,
            line=dict(color=NOISE if noise else arm_color(d["arm"], roles.get(d["arm"])), dash="dot" if noise else "solid"),
            hovertemplate="position %{x}: KL %{y:.4f} nats, token “%{customdata}”<extra>" + name + "</extra>"))
        threshold = d.get("threshold") or threshold
        first = (d.get("summary") or {}).get("first_over_threshold")
        if not noise and first is not None and first < len(pos):
            fig.add_trace(go.Scatter(
                x=[xs[first]], y=[ys[first]], mode="markers", name=f"{d['arm']}: first over threshold",
                marker=dict(symbol="x", size=12, color=arm_color(d["arm"], roles.get(d["arm"]))),
                hovertemplate=f"first position over the threshold: %{{x}}, token “{tokens[first]}”<extra></extra>"))
    if threshold:
        fig.add_hline(y=threshold, line_dash="dash", line_color="#999",
                      annotation_text=f"threshold {threshold:g} nats", annotation_position="top left")
    return _layout(fig, "KL divergence from stock per response token (teacher-forced)", "response token position",
                   "KL (nats)")


def case_rates(cases: list[dict], arms: list[dict]) -> go.Figure:
    """A dot per arm and case: the degenerate rate of each flagged conversation (suites)."""
    fig = go.Figure()
    labels = [c.get("request_id") or f"case {c['id']}" for c in cases]
    for a in arms:
        xs, lo, hi = [], [], []
        for c in cases:
            r = ((c.get("stats") or {}).get("arms") or {}).get(str(a["id"])) or {}
            rate = r.get("rate")
            xs.append(None if rate is None else 100 * rate)
            lo.append(0 if rate is None else 100 * (rate - (r.get("ci_low") or 0)))
            hi.append(0 if rate is None else 100 * ((r.get("ci_high") or 0) - rate))
        fig.add_trace(go.Scatter(x=xs, y=labels, mode="markers", name=a["name"],
                                 marker=dict(size=11, color=arm_color(a["name"], a.get("role"))),
                                 error_x=dict(type="data", symmetric=False, array=hi, arrayminus=lo, thickness=1),
                                 hovertemplate=f"{a['name']}: %{{x:.1f}}%% on %{{y}}<extra></extra>"))
    fig.update_xaxes(range=[0, 100])
    return _layout(fig, "Degenerate rate per conversation and arm", "degenerate samples (%)", "conversation",
                   height=max(260, 80 + 36 * len(cases)))


# --- overview ------------------------------------------------------------------------------


def rate_over_time(rows: Iterable[dict], *, group_label: str, bucket_label: str) -> go.Figure:
    """Degenerate rate per time bucket, one line per group (model or kernel profile); the count
    of transcripts is on hover. ``rows``: {"bucket", "group", "n", "degenerate"}."""
    series: dict[str, list[tuple]] = defaultdict(list)
    for r in rows:
        series[r["group"] or "(none)"].append((r["bucket"], r["n"], r["degenerate"]))
    fig = go.Figure()
    for group, points in sorted(series.items()):
        points.sort()
        fig.add_trace(go.Scatter(
            x=[p[0] for p in points], y=[100 * p[2] / p[1] if p[1] else None for p in points],
            customdata=[[p[1], p[2], group] for p in points], mode="lines+markers", name=group,
            line=dict(color=arm_color(group)),  # (the stock profile is blue here too)
            hovertemplate="%{x}: %{y:.1f}% degenerate (%{customdata[1]} of %{customdata[0]})<extra>%{customdata[2]}</extra>"))
    fig.update_yaxes(rangemode="tozero")
    buckets = {p[0] for points in series.values() for p in points}
    if len(buckets) == 1 and isinstance(next(iter(buckets)), datetime):  # (alone, plotly zooms to ±1 ms around it)
        only, width = next(iter(buckets)), timedelta(hours=1) if bucket_label == "hour" else timedelta(days=1)
        fig.update_xaxes(range=[only - width, only + width])
    return _layout(fig, f"Degenerate rate per {bucket_label}, by {group_label}", f"time ({bucket_label})",
                   "degenerate transcripts (%)")


def counts_bar(counts: list[tuple[str, int]], *, title: str, x: str, y: str = "transcripts",
               color: str = DEGENERATE) -> go.Figure:
    """A horizontal bar per label (reasons, flag statuses)."""
    labels = [c[0] for c in counts][::-1]
    values = [c[1] for c in counts][::-1]
    fig = go.Figure(go.Bar(x=values, y=labels, orientation="h", marker_color=color, name=y,
                           hovertemplate="%{y}: %{x}<extra></extra>"))
    _layout(fig, title, y, x, height=max(220, 70 + 28 * len(counts)))
    fig.update_layout(showlegend=False, margin=dict(t=50))  # (one series: the axis says what it is)
    # Counts are whole numbers from zero: no 0.2-steps for small ones, no -1..1 axis when all are 0.
    fig.update_xaxes(rangemode="tozero", dtick=1 if max(values, default=0) <= 8 else None,
                     range=None if any(values) else [0, 1])
    return fig
