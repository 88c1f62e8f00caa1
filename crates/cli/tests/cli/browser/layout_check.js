// Layout rules, measured in the browser after the page's own script ran; the result
// goes into <pre id="layout-check"> as JSON for the Rust test (crates/cli/tests/cli/browser.rs) to read.
// wide: elements whose right edge passes the viewport (outside scrolling boxes);
// overlaps: pairs of text boxes inside one plot that intersect;
// crossed: text boxes inside a plot that a knee or level line passes through;
// overflow: texts of the hierarchy diagram that pass the edge of the box they sit in;
// clipped: text boxes that pass their plot's edge (a title or label cut off);
// axes: plots lacking an x or y axis title with a unit in brackets ("latency [ns]");
// broken: words in table cells split over two lines (a word broken mid-word, "confiden/ce"); breaks
// at spaces, hyphens, slashes and the <wbr> after a key's dots and underscores are allowed;
// diagram_scale: the hierarchy diagram's drawn width over its own (1 = full size, not shrunk).
window.addEventListener('load', function () {
  var vw = document.documentElement.clientWidth;
  var wide = [];
  var all = document.querySelectorAll('body *');
  function scrolls(el) {
    for (var p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      var o = getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll' || o === 'hidden') return true;
    }
    return false;
  }
  function name(el) {
    return el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
      (el.getAttribute('class') ? '.' + el.getAttribute('class').split(' ').join('.') : '');
  }
  for (var i = 0; i < all.length; i++) {
    var el = all[i];
    if (el.id === 'layout-check') continue;
    var r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if (r.right > vw + 0.5 && !scrolls(el)) wide.push(name(el) + ' right=' + Math.round(r.right));
  }
  var overlaps = [];
  var crossed = [];
  var clipped = [];
  var axes = [];
  var plots = document.querySelectorAll('svg.plot');
  for (var p = 0; p < plots.length; p++) {
    var svg = plots[p];
    var texts = Array.prototype.slice.call(svg.querySelectorAll('text'));
    var boxes = texts.map(function (t) { return t.getBoundingClientRect(); });
    var frame = svg.getBoundingClientRect();
    for (var c = 0; c < texts.length; c++) {
      var T = boxes[c];
      if (T.width > 0 && (T.left < frame.left - 0.5 || T.right > frame.right + 0.5 || T.top < frame.top - 0.5 || T.bottom > frame.bottom + 0.5)) {
        clipped.push(svg.id + ': "' + texts[c].textContent + '"');
      }
    }
    for (var a = 0; a < texts.length; a++) {
      for (var b = a + 1; b < texts.length; b++) {
        var A = boxes[a], B = boxes[b];
        var w = Math.min(A.right, B.right) - Math.max(A.left, B.left);
        var h = Math.min(A.bottom, B.bottom) - Math.max(A.top, B.top);
        if (w > 1 && h > 1 && A.width > 0 && B.width > 0) {
          overlaps.push(svg.id + ': "' + texts[a].textContent + '" x "' + texts[b].textContent + '"');
        }
      }
    }
    var marks = svg.querySelectorAll('line.vmark, line.hmark');
    for (var mi = 0; mi < marks.length; mi++) {
      var L = marks[mi].getBoundingClientRect(), vertical = L.height > L.width;
      for (var ti = 0; ti < texts.length; ti++) {
        var X = boxes[ti];
        if (X.width === 0) continue;
        var hit = vertical
          ? (L.left + L.right) / 2 > X.left + 0.5 && (L.left + L.right) / 2 < X.right - 0.5 && L.top < X.bottom - 0.5 && L.bottom > X.top + 0.5
          : (L.top + L.bottom) / 2 > X.top + 0.5 && (L.top + L.bottom) / 2 < X.bottom - 0.5 && L.left < X.right - 0.5 && L.right > X.left + 0.5;
        if (hit) crossed.push(svg.id + ': "' + texts[ti].textContent + '" crossed by a ' + marks[mi].getAttribute('class') + ' line');
      }
    }
    var unit = /\[[^\]]+\]/;
    var xl = svg.querySelector('text.xl'), yl = svg.querySelector('text.yl');
    if (!xl || !unit.test(xl.textContent)) axes.push(svg.id + ': x axis title "' + (xl ? xl.textContent : '') + '"');
    if (!yl || !unit.test(yl.textContent)) axes.push(svg.id + ': y axis title "' + (yl ? yl.textContent : '') + '"');
  }
  var broken = [];
  var cells = document.querySelectorAll('td, th');
  for (var ci = 0; ci < cells.length && broken.length < 20; ci++) {
    // (file paths and target ids are not words: the provenance table and the target column)
    if (cells[ci].closest('.prov') || cells[ci].classList.contains('id')) continue;
    var walker = document.createTreeWalker(cells[ci], NodeFilter.SHOW_TEXT);
    for (var node = walker.nextNode(); node; node = walker.nextNode()) {
      var re = /[^\s\-\u2013\/,;=]+/g, m;
      while ((m = re.exec(node.data)) !== null) {
        var range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        var rects = range.getClientRects();
        if (rects.length > 1 && Math.abs(rects[0].top - rects[rects.length - 1].top) > 2) {
          broken.push(name(cells[ci]) + ': "' + m[0] + '"');
        }
      }
    }
  }
  var diagram = document.getElementById('hierarchy');
  var overflow = [];
  if (diagram) {
    var rects = Array.prototype.map.call(diagram.querySelectorAll('rect'), function (r) { return r.getBoundingClientRect(); });
    var dtexts = diagram.querySelectorAll('text');
    for (var di = 0; di < dtexts.length; di++) {
      var D = dtexts[di].getBoundingClientRect(), cx = (D.left + D.right) / 2, cy = (D.top + D.bottom) / 2;
      for (var ri = 0; ri < rects.length; ri++) {
        var R = rects[ri];
        if (cx < R.left || cx > R.right || cy < R.top || cy > R.bottom) continue;
        if (D.left < R.left - 0.5 || D.right > R.right + 0.5 || D.top < R.top - 0.5 || D.bottom > R.bottom + 0.5) {
          overflow.push('"' + dtexts[di].textContent + '" is wider or taller than its box');
        }
      }
    }
  }
  var scale = diagram ? diagram.getBoundingClientRect().width / parseFloat(diagram.getAttribute('width')) : null;
  var pre = document.createElement('pre');
  pre.id = 'layout-check';
  pre.textContent = JSON.stringify({ viewport: vw, plots: plots.length, wide: wide, overlaps: overlaps, crossed: crossed, overflow: overflow, clipped: clipped, axes: axes, broken: broken, diagram_scale: scale });
  document.body.appendChild(pre);
  // In the phone-width frame of the browser test, the result goes to the page around it too (the
  // one whose DOM Chromium dumps).
  if (window.frameElement) {
    var copy = parent.document.createElement('pre');
    copy.id = 'layout-check';
    copy.textContent = pre.textContent;
    parent.document.body.appendChild(copy);
  }
});
