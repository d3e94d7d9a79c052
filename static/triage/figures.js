// Plotly figures fill their grid cell: resize them once the page (or an htmx swap) has laid out.
(function () {
  function fit() {
    if (!window.Plotly) return;
    document.querySelectorAll(".js-plotly-plot").forEach(function (p) { window.Plotly.Plots.resize(p); });
  }
  window.addEventListener("load", fit);
  document.addEventListener("htmx:afterSettle", fit);
})();
