// Numbered callouts for the README's "Reading a report" screenshot (scripts/report-screenshot.sh):
// a red numbered disc at the top left of each part of the page that the README explains. Only
// for the screenshot; the report itself never loads this.
window.addEventListener('load', function () {
  var parts = [
    ['h1', 1],
    ['svg.diagram', 2],
    ['#plot-0-latency', 3],
    ['#plot-1-bw', 4],
    ['[data-series="cpu"] svg', 5],
    ['[data-series="coalesce"] svg', 6],
    ['#plot-roofline', 7],
  ];
  parts.forEach(function (p) {
    var el = document.querySelector(p[0]);
    if (!el) return;
    var r = el.getBoundingClientRect();
    var d = document.createElement('div');
    d.textContent = p[1];
    d.style.cssText = 'position:absolute;z-index:9;width:26px;height:26px;border-radius:13px;background:#d62728;' +
      'color:#fff;font:bold 15px/26px system-ui,sans-serif;text-align:center;box-shadow:0 0 0 2px #fff';
    d.style.left = Math.max(0, r.left + window.scrollX - 14) + 'px';
    d.style.top = Math.max(0, r.top + window.scrollY - 14) + 'px';
    document.body.appendChild(d);
  });
});
