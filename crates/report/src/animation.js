// memscope vadd player (seed 000, "Loading b"): decodes the columnar timeline embedded by
// animation.rs, draws a static background once, then per frame copies it and paints only what
// is in flight. Time advances with requestAnimationFrame (with a timer fallback, so a headless
// browser without frames still plays). URL hash #autoplay plays at once, fast, and writes the
// frame count into the DOM for the browser test.
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('tl').textContent);
  function dec(s, T) {
    var bin = atob(s), u8 = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) u8[i] = bin.charCodeAt(i);
    return new T(u8.buffer);
  }
  var NB = D.nb;
  // Request columns: all of them, and the current selection (the op filter).
  var ALL = {
    t0: dec(D.t0, Float32Array), t1: dec(D.t1, Float32Array), t2: dec(D.t2, Float32Array),
    t3: dec(D.t3, Float32Array), t4: dec(D.t4, Float32Array), t5: dec(D.t5, Float32Array),
    sm: dec(D.sm, Uint16Array), l1: dec(D.l1, Uint16Array), sl: dec(D.sl, Uint16Array),
    l2: dec(D.l2, Uint16Array), mc: dec(D.mc, Uint16Array), bk: dec(D.bk, Uint16Array),
    by: dec(D.by, Uint16Array), op: dec(D.op, Uint8Array), sv: dec(D.sv, Uint8Array)
  };
  var N, t0, t1, t2, t3, t4, t5, SM, L1, SL, L2, MC, BK, BY, SV;
  function select(op) {
    var idx = [];
    for (var i = 0; i < D.n; i++) if (op === 'all' || ALL.op[i] === +op) idx.push(i);
    function pick(a) { var o = new a.constructor(idx.length); for (var j = 0; j < idx.length; j++) o[j] = a[idx[j]]; return o; }
    N = idx.length;
    t0 = pick(ALL.t0); t1 = pick(ALL.t1); t2 = pick(ALL.t2); t3 = pick(ALL.t3); t4 = pick(ALL.t4); t5 = pick(ALL.t5);
    SM = pick(ALL.sm); L1 = pick(ALL.l1); SL = pick(ALL.sl); L2 = pick(ALL.l2); MC = pick(ALL.mc);
    BK = pick(ALL.bk); BY = pick(ALL.by); SV = pick(ALL.sv);
  }
  var opSel = document.getElementById('ops');
  if (Array.prototype.indexOf.call(ALL.op, 1) >= 0) opSel.value = '1'; // seed 000's panel: loading b
  select(opSel.value);
  var bBank = dec(D.bBank, Uint16Array), bState = dec(D.bState, Uint8Array);
  var bT0 = dec(D.bT0, Float32Array), bT1 = dec(D.bT1, Float32Array);
  var END = Math.max(D.endNs, 1);
  for (var e = 0; e < D.n; e++) END = Math.max(END, ALL.t5[e]);
  for (e = 0; e < NB; e++) END = Math.max(END, bT1[e]);

  // ---- layout (device pixels; one set = S x S) ----
  var S = 2, W = 1320, PAD = 10;
  function pow2ceil(x) { var p = 1; while (p < x) p *= 2; return p; }
  var b1w = pow2ceil(Math.ceil(Math.sqrt(D.l1Sets))), b1h = Math.ceil(D.l1Sets / b1w);
  var b2w = pow2ceil(Math.ceil(Math.sqrt(D.l2Sets))), b2h = Math.ceil(D.l2Sets / b2w);
  var smW = b1w * S, smH = b1h * S, smGap = 6;
  var maxPer = Math.max(1, Math.floor((W - 2 * PAD + smGap) / (smW + smGap)));
  var smRows = Math.ceil(D.sms / maxPer), smPer = Math.ceil(D.sms / smRows);
  var y = 22, smY0 = y, smX = [], smYs = [];
  for (var s = 0; s < D.sms; s++) {
    smX.push(PAD + (s % smPer) * (smW + smGap));
    smYs.push(smY0 + Math.floor(s / smPer) * (smH + smGap));
  }
  y = smY0 + smRows * (smH + smGap) + 4;
  var xbY0 = y + 16, xbY1 = xbY0 + 70;
  y = xbY1 + 22;
  var spc = Math.max(1, Math.ceil(D.slices / D.mcs));
  var slW = b2w * S, slH = b2h * S, slGap = 3, grpGap = 14;
  var grpW = spc * slW + (spc - 1) * slGap;
  var grpPer = Math.max(1, Math.floor((W - 2 * PAD + grpGap) / (grpW + grpGap)));
  var grpRows = Math.ceil(D.mcs / grpPer);
  grpPer = Math.ceil(D.mcs / grpRows);
  var l2Y0 = y, slX = [], slY = [];
  for (var q = 0; q < D.slices; q++) {
    var g = Math.floor(q / spc), k = q % spc;
    slX.push(PAD + (g % grpPer) * (grpW + grpGap) + k * (slW + slGap));
    slY.push(l2Y0 + Math.floor(g / grpPer) * (slH + 20));
  }
  y = l2Y0 + grpRows * (slH + 20) + 18;
  var colW = (W - 2 * PAD) / D.mcs, mcY0 = y, mcH = 48;
  y = mcY0 + mcH + 40;
  var bCols = Math.min(D.banksPerMc, 8), bRows = Math.ceil(D.banksPerMc / bCols);
  var cell = Math.max(3, Math.min(10, Math.floor((colW - 10) / bCols)));
  var dramY0 = y, H = dramY0 + bRows * cell + 14;

  var SCALE_ROOM = 400; // px kept at the right of the controllers' title for the bars' scale
  var cv = document.getElementById('cv');
  cv.width = W; cv.height = H;
  var ctx = cv.getContext('2d');

  // ---- static background ----
  // Every panel (and so every line and dot drawn inside one: crossbar paths, bar grid lines) is
  // a box in `panels`; every label a box in `labels`. A label goes where its box meets no panel
  // and no other label; one that does not fit its room is shortened ("MC 10" to "10") or left out.
  // The clashes that remain are written to data-label-clashes for the browser test.
  var panels = [], labels = [];
  function panel(x, yy, w, h, col) { ctx.fillStyle = col; ctx.fillRect(x, yy, w, h); panels.push([x, yy, x + w, yy + h]); }
  function clash(b, boxes) {
    for (var i = 0; i < boxes.length; i++) {
      var o = boxes[i];
      if (b[0] < o[2] && b[2] > o[0] && b[1] < o[3] && b[3] > o[1]) return true;
    }
    return false;
  }
  function label(texts, x, yy, col, align, room) { // the first of `texts` that fits `room` px
    for (var i = 0; i < texts.length; i++) {
      var w = ctx.measureText(texts[i]).width, x0 = align === 'right' ? x - w : x;
      var b = [x0, yy - 10, x0 + w, yy + 3];
      if (room !== undefined && w > room) continue;
      ctx.fillStyle = col; ctx.textAlign = align || 'left'; ctx.fillText(texts[i], x, yy); ctx.textAlign = 'left';
      labels.push({ t: texts[i], b: b });
      return;
    }
  }
  ctx.fillStyle = '#000'; ctx.fillRect(0, 0, W, H);
  ctx.font = '12px system-ui,sans-serif';
  label(['SMs (' + D.sms + '), one pixel per L1 set'], PAD, 14, '#9ab');
  for (s = 0; s < D.sms; s++) panel(smX[s], smYs[s], smW, smH, '#1b2229');
  label(['crossbar'], PAD, xbY0 - 4, '#9ab');
  panel(PAD, xbY0, W - 2 * PAD, xbY1 - xbY0, '#0b0f13');
  label(['L2 (' + D.slices + ' slices, ' + spc + ' per controller), one pixel per set'], PAD, l2Y0 - 6, '#9ab');
  for (q = 0; q < D.slices; q++) panel(slX[q], slY[q], slW, slH, '#1b2229');
  for (g = 0; g < D.mcs; g++) {
    var gx = PAD + (g % grpPer) * (grpW + grpGap), gy = l2Y0 + Math.floor(g / grpPer) * (slH + 20) + slH + 12;
    label(['MC ' + g, '' + g], gx, gy, '#789', 'left', grpW + grpGap - 4);
  }
  label(['memory controllers (level is instantaneous throughput; scale at the right)', 'memory controllers'], PAD, mcY0 - 6, '#9ab', 'left', W - 2 * PAD - SCALE_ROOM);
  for (g = 0; g < D.mcs; g++) {
    panel(PAD + g * colW + 4, mcY0, colW - 8, mcH, '#1b2229');
    label(['MC ' + g, '' + g], PAD + g * colW + 6, mcY0 + mcH + 13, '#789', 'left', colW - 4);
  }
  label(['DRAM, ' + D.mcs + ' controllers, ' + D.banksPerMc + ' banks each'], PAD, dramY0 - 6, '#9ab');
  var bankX = new Float32Array(D.mcs * D.banksPerMc), bankY = new Float32Array(D.mcs * D.banksPerMc);
  for (g = 0; g < D.mcs; g++) for (k = 0; k < D.banksPerMc; k++) {
    var bi = g * D.banksPerMc + k;
    bankX[bi] = PAD + g * colW + 4 + (k % bCols) * cell;
    bankY[bi] = dramY0 + Math.floor(k / bCols) * cell;
    panel(bankX[bi], bankY[bi], cell - 1, cell - 1, '#1b2229');
  }
  // (the bars' scale, drawn each frame at the right of the controllers' title, has its room)
  labels.push({ t: 'full bar = ...', b: [W - PAD - SCALE_ROOM + 8, mcY0 - 16, W - PAD, mcY0 - 3] });
  var clashes = [];
  for (var li = 0; li < labels.length; li++) {
    var lb = labels[li].b;
    if (clash(lb, panels)) clashes.push('"' + labels[li].t + '" crosses a panel');
    if (clash(lb, labels.slice(li + 1).map(function (o) { return o.b; }))) clashes.push('"' + labels[li].t + '" overlaps a label');
    if (lb[0] < 0 || lb[2] > W || lb[1] < 0 || lb[3] > H) clashes.push('"' + labels[li].t + '" passes the edge');
  }
  document.body.dataset.labelClashes = JSON.stringify(clashes.slice(0, 10));
  var bgImg = ctx.getImageData(0, 0, W, H);
  var bg32 = new Uint32Array(bgImg.data.buffer.slice(0));
  var frame = ctx.createImageData(W, H);
  var px = new Uint32Array(frame.data.buffer);

  function rgb(r, g2, b) { return (255 << 24) | (b << 16) | (g2 << 8) | r; } // little-endian RGBA
  var C_MISS = [255, 159, 28], C_RET = [46, 196, 182], C_BG = [27, 34, 41];
  var BANK_C = [rgb(231, 29, 54), rgb(58, 134, 255), rgb(131, 56, 236), rgb(255, 190, 11)];
  function blend(c, h) {
    return rgb((C_BG[0] + (c[0] - C_BG[0]) * h) | 0, (C_BG[1] + (c[1] - C_BG[1]) * h) | 0, (C_BG[2] + (c[2] - C_BG[2]) * h) | 0);
  }
  function dot(x, yy, size, col) {
    x = x | 0; yy = yy | 0;
    for (var a = 0; a < size; a++) { var o = (yy + a) * W + x; for (var b = 0; b < size; b++) px[o + b] = col; }
  }
  function rect(x, yy, w, h, col) {
    x = x | 0; yy = yy | 0;
    for (var a = 0; a < h; a++) { var o = (yy + a) * W + x; for (var b = 0; b < w; b++) px[o + b] = col; }
  }

  // ---- derived series: per-controller DRAM bytes and retired bytes per bin ----
  var NBIN = 400, BIN = END / NBIN;
  var mcBytes = new Float32Array(D.mcs * NBIN), retBytes = new Float32Array(NBIN), mcPeak = 1e-9, t5s;
  function derive() {
    mcBytes.fill(0); retBytes.fill(0); mcPeak = 1e-9;
    for (var i = 0; i < N; i++) {
      if (BK[i] !== 65535) { var bb = Math.min(NBIN - 1, Math.floor(t4[i] / BIN)); mcBytes[MC[i] * NBIN + bb] += BY[i]; }
      retBytes[Math.min(NBIN - 1, Math.floor(t5[i] / BIN))] += BY[i];
    }
    for (i = 0; i < mcBytes.length; i++) mcPeak = Math.max(mcPeak, mcBytes[i]);
    mcScaleGbs = mcPeak / BIN;
    document.body.dataset.mcScaleGbs = mcScaleGbs.toFixed(2);
    t5s = Float32Array.from(t5).sort();
  }
  var mcScaleGbs = 0;
  // The busiest moment: the bin where DRAM traffic and data returning to the SMs are both high
  // (the larger of the two shares' minimum), so the SM, crossbar, L2 and DRAM panels all show
  // traffic and the counters are not zero; the page opens there (restart goes back to t = 0).
  // A replay where nothing returns takes the bin of the most DRAM bytes.
  function busiestNs() {
    var dram = new Float32Array(NBIN), maxD = 1e-9, maxR = 1e-9;
    for (var bb = 0; bb < NBIN; bb++) {
      for (var cc = 0; cc < D.mcs; cc++) dram[bb] += mcBytes[cc * NBIN + bb];
      maxD = Math.max(maxD, dram[bb]);
      maxR = Math.max(maxR, retBytes[bb]);
    }
    var best = -1, at = 0;
    for (bb = 0; bb < NBIN; bb++) {
      var score = maxR > 1e-9 ? Math.min(dram[bb] / maxD, retBytes[bb] / maxR) : dram[bb] / maxD;
      if (score > best) { best = score; at = bb; }
    }
    return (at + 0.5) * BIN;
  }
  derive();

  // ---- state ----
  var heat1 = new Float32Array(D.sms * D.l1Sets), col1 = new Uint8Array(D.sms * D.l1Sets);
  var heat2 = new Float32Array(D.slices * D.l2Sets), col2 = new Uint8Array(D.slices * D.l2Sets);
  var active = new Int32Array(D.n), nActive = 0, rp = 0;
  var bankCur = new Int32Array(D.mcs * D.banksPerMc).fill(-1), bp = 0, nAct = 0, nRef = 0;
  var T = 0, lastT = -1, playing = false, frames = 0, lastWall = 0;
  var auto = location.hash === '#autoplay';
  var speedSel = document.getElementById('speed');
  function rate() { return auto ? END / 1.5 : END / 12 * parseFloat(speedSel.value); } // sim ns per wall s

  function reset() { nActive = 0; rp = 0; bp = 0; nAct = 0; nRef = 0; bankCur.fill(-1); heat1.fill(0); heat2.fill(0); }
  function advanceTo(t) {
    if (t < lastT) reset();
    while (rp < N && t0[rp] <= t) active[nActive++] = rp++;
    var m = 0;
    for (var a = 0; a < nActive; a++) { var r = active[a]; if (t5[r] > t) active[m++] = r; }
    nActive = m;
    while (bp < NB && bT0[bp] <= t) {
      bankCur[bBank[bp]] = bp;
      if (bState[bp] === 0) nAct++; else if (bState[bp] === 3) nRef++;
      bp++;
    }
    lastT = t;
  }
  function upper(arr, v) { var lo = 0, hi = arr.length; while (lo < hi) { var mid = (lo + hi) >> 1; if (arr[mid] <= v) lo = mid + 1; else hi = mid; } return lo; }
  function fmtNs(ns) { return ns < 1000 ? ns.toFixed(0) + ' ns' : (ns / 1000).toFixed(2) + ' µs'; }

  var drawMsSum = 0;
  function draw(dtWall) {
    var started = performance.now();
    advanceTo(T);
    var decay = Math.exp(-dtWall / 0.25);
    px.set(bg32);
    for (var a = 0; a < nActive; a++) {
      var r = active[a];
      if (SV[r] === 0) { var jh = SM[r] * D.l1Sets + L1[r]; heat1[jh] = 1; col1[jh] = 1; continue; } // L1 hit
      if (T < t1[r]) { var j = SM[r] * D.l1Sets + L1[r]; heat1[j] = 1; col1[j] = 0; }
      else if (T < t2[r]) {
        var f = (T - t1[r]) / Math.max(1e-6, t2[r] - t1[r]);
        var x0 = smX[SM[r]] + smW / 2, x1 = slX[SL[r]] + slW / 2;
        dot(x0 + (x1 - x0) * f, xbY0 + 2 + (xbY1 - xbY0 - 6) * f, 2, rgb(C_MISS[0], C_MISS[1], C_MISS[2]));
      } else if (T < t3[r]) { var j2 = SL[r] * D.l2Sets + L2[r]; heat2[j2] = 1; col2[j2] = 0; }
      else if (T >= t4[r]) {
        var fr = (T - t4[r]) / Math.max(1e-6, t5[r] - t4[r]);
        if (fr < 0.15) { var j3 = SL[r] * D.l2Sets + L2[r]; heat2[j3] = 1; col2[j3] = 1; }
        else if (fr < 0.85) {
          var g2 = (fr - 0.15) / 0.7, xa = slX[SL[r]] + slW / 2, xb = smX[SM[r]] + smW / 2;
          dot(xa + (xb - xa) * g2, xbY1 - 4 - (xbY1 - xbY0 - 6) * g2, 2, rgb(C_RET[0], C_RET[1], C_RET[2]));
        } else { var j4 = SM[r] * D.l1Sets + L1[r]; heat1[j4] = 1; col1[j4] = 1; }
      }
    }
    var n1 = heat1.length;
    for (var i1 = 0; i1 < n1; i1++) {
      var h = heat1[i1];
      if (h > 0.03) {
        var sm = (i1 / D.l1Sets) | 0, st = i1 - sm * D.l1Sets;
        dot(smX[sm] + (st % b1w) * S, smYs[sm] + ((st / b1w) | 0) * S, S, blend(col1[i1] ? C_RET : C_MISS, h));
        heat1[i1] = h * decay;
      } else heat1[i1] = 0;
    }
    var n2 = heat2.length;
    for (var i2 = 0; i2 < n2; i2++) {
      var h2 = heat2[i2];
      if (h2 > 0.03) {
        var sl = (i2 / D.l2Sets) | 0, st2 = i2 - sl * D.l2Sets;
        dot(slX[sl] + (st2 % b2w) * S, slY[sl] + ((st2 / b2w) | 0) * S, S, blend(col2[i2] ? C_RET : C_MISS, h2));
        heat2[i2] = h2 * decay;
      } else heat2[i2] = 0;
    }
    var bin = Math.min(NBIN - 1, Math.max(0, Math.floor(T / BIN)));
    for (var c = 0; c < D.mcs; c++) { // grid lines at a quarter, half and three quarters of the scale
      for (var qg = 1; qg < 4; qg++) rect(PAD + c * colW + 4, mcY0 + mcH - 1 - Math.round(qg / 4 * (mcH - 2)), colW - 8, 1, rgb(48, 58, 68));
    }
    for (var c = 0; c < D.mcs; c++) {
      var lvl = mcBytes[c * NBIN + bin] / mcPeak, hh = Math.round(lvl * (mcH - 2));
      if (hh > 0) rect(PAD + c * colW + 5, mcY0 + mcH - 1 - hh, colW - 10, hh, rgb(58, 134, 255));
    }
    for (var b = 0; b < bankCur.length; b++) {
      var sp = bankCur[b];
      if (sp >= 0 && bT1[sp] > T) rect(bankX[b], bankY[b], cell - 1, cell - 1, BANK_C[bState[sp]]);
    }
    ctx.putImageData(frame, 0, 0);
    // The bars' scale: a full bar is the busiest controller's peak in this replay (bytes per bin
    // over the bin's ns = GB/s).
    var scaleText = 'full bar = ' + mcScaleGbs.toFixed(1) + ' GB/s per controller, grid every quarter';
    if (ctx.measureText(scaleText).width > SCALE_ROOM - 8) scaleText = 'full bar = ' + mcScaleGbs.toFixed(1) + ' GB/s';
    ctx.fillStyle = '#9ab'; ctx.textAlign = 'right';
    ctx.fillText(scaleText, W - PAD, mcY0 - 6);
    ctx.textAlign = 'left';
    frames++;
    var retired = upper(t5s, T);
    var gbs = retBytes[bin] / BIN; // bytes per ns = GB/s
    document.getElementById('c-flight').textContent = nActive;
    document.getElementById('c-retired').textContent = retired;
    document.getElementById('c-act').textContent = nAct;
    document.getElementById('c-ref').textContent = nRef;
    document.getElementById('c-gbs').textContent = gbs.toFixed(1);
    document.getElementById('clock').textContent = fmtNs(T) + ' / ' + fmtNs(END);
    document.getElementById('scrub').value = Math.round(T / END * 1000);
    var body = document.body.dataset;
    body.frames = frames; body.simNs = T.toFixed(1); body.retired = retired; body.flight = nActive; body.playing = playing ? '1' : '0';
    drawMsSum += performance.now() - started;
    body.drawMs = (drawMsSum / frames).toFixed(2); // mean cost of one frame, for checking smoothness
  }

  // ---- loop: rAF, with a timer fallback when frames are not delivered ----
  var gen = 0;
  function schedule() {
    var my = ++gen;
    var run = function () { if (my !== gen || !playing) return; gen++; tick(); };
    requestAnimationFrame(run);
    setTimeout(run, 50);
  }
  function tick() {
    var now = performance.now(), dt = Math.min(0.1, Math.max(0, (now - lastWall) / 1000));
    lastWall = now;
    T = Math.min(END, T + dt * rate());
    draw(dt);
    if (T >= END) { setPlaying(false); document.title = document.title.replace(/ \(done\)$/, '') + ' (done)'; return; }
    if (playing) schedule();
  }
  var playBtn = document.getElementById('play');
  function setPlaying(p) {
    playing = p; playBtn.textContent = p ? 'pause' : 'play';
    if (p) { if (T >= END) T = 0; lastWall = performance.now(); schedule(); }
    document.body.dataset.playing = p ? '1' : '0';
  }
  playBtn.onclick = function () { setPlaying(!playing); };
  document.getElementById('step').onclick = function () { setPlaying(false); T = Math.min(END, T + rate() / 60); draw(1 / 60); };
  document.getElementById('restart').onclick = function () { T = 0; reset(); lastT = -1; draw(1); };
  document.getElementById('ops').onchange = function (e) { select(e.target.value); derive(); reset(); lastT = -1; draw(1); };
  document.getElementById('scrub').oninput = function (e) { T = e.target.value / 1000 * END; draw(1); };
  draw(0);
  var seek = /#t=([0-9.]+)/.exec(location.hash); // #t=0.4: show the state at 40 % (screenshots)
  // Without #t= or #autoplay the page opens at the busiest moment rather than at an empty t = 0.
  var start = seek ? Math.min(1, parseFloat(seek[1])) * END : (auto ? 0 : busiestNs());
  if (start > 0) {
    for (var st = 1; st <= 90; st++) { T = start * st / 90; draw(1 / 60); }
  }
  if (!seek && !auto) {
    var note = document.createElement('span');
    note.id = 'start-note';
    note.textContent = ' opened at the busiest moment (' + fmtNs(start) + ': DRAM traffic and data returning to the SMs); restart goes to 0 ns';
    document.getElementById('clock').insertAdjacentElement('afterend', note);
  }
  document.body.dataset.startNs = start.toFixed(1);
  document.body.dataset.ready = '1';
  if (auto) setPlaying(true);
})();
