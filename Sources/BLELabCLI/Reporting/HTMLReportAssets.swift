/// The inline style sheet and script of `HTMLReport`'s page. The script reads the embedded JSON
/// (`#report-data`) and draws, for each scenario opened, its failure, links, steps and one page
/// of its message sequence chart as SVG. Nothing is fetched: the page works from a CI artifact.
enum HTMLReportAssets {
    static let css = #"""
:root { --fg: #1f2328; --muted: #656d76; --line: #d0d7de; --bg: #f6f8fa; --pass: #1a7f37; --fail: #cf222e; --skip: #9a6700;
  --req: #0969da; --rsp: #1a7f37; --cmd: #8250df; --ntf: #bc4c00; --err: #cf222e; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--fg); background: #fff; }
header { display: flex; align-items: baseline; gap: 12px; padding: 12px 20px; background: #24292f; color: #fff; }
header h1 { margin: 0; font-size: 18px; }
header .tool { color: #afb8c1; font-size: 13px; }
.summary { display: flex; flex-wrap: wrap; align-items: center; gap: 24px; padding: 14px 20px; border-bottom: 1px solid var(--line); }
.summary.red { background: #ffebe9; } .summary.green { background: #dafbe1; }
.counts { display: flex; gap: 18px; font-size: 16px; }
.count b { font-size: 22px; margin-right: 3px; }
.count.passed b { color: var(--pass); } .count.failed b { color: var(--fail); } .count.skipped b { color: var(--skip); }
.times { color: var(--muted); }
table.tiers { border-collapse: collapse; font-size: 12px; background: #fff; }
table.tiers th, table.tiers td { border: 1px solid var(--line); padding: 2px 8px; text-align: right; }
table.tiers th:first-child, table.tiers td:first-child { text-align: left; }
nav.tools { position: sticky; top: 0; z-index: 2; display: flex; flex-wrap: wrap; align-items: center; gap: 10px; padding: 8px 20px; background: var(--bg); border-bottom: 1px solid var(--line); }
#filter { flex: 0 1 380px; padding: 5px 8px; border: 1px solid var(--line); border-radius: 6px; font: inherit; }
nav button, .pager button { font: inherit; font-size: 12px; padding: 3px 10px; border: 1px solid var(--line); border-radius: 6px; background: #fff; cursor: pointer; }
nav button:hover, .pager button:hover:not(:disabled) { background: #eaeef2; }
#shown { color: var(--muted); font-size: 12px; }
main { padding: 10px 20px 30px; }
details.scenario { border: 1px solid var(--line); border-radius: 6px; margin: 6px 0; background: #fff; }
details.scenario.failed { border-left: 4px solid var(--fail); }
details.scenario.passed { border-left: 4px solid var(--pass); }
details.scenario.skipped { border-left: 4px solid var(--skip); }
details.scenario > summary { cursor: pointer; padding: 6px 10px; list-style-position: inside; }
details.scenario[open] > summary { border-bottom: 1px solid var(--line); background: var(--bg); }
.badge { display: inline-block; min-width: 58px; text-align: center; font-size: 11px; font-weight: 700; border-radius: 10px; padding: 1px 6px; color: #fff; }
.badge.passed { background: var(--pass); } .badge.failed { background: var(--fail); } .badge.skipped { background: var(--skip); }
.name { font-weight: 600; }
.file, .time { color: var(--muted); font-size: 12px; margin-left: 6px; }
.body { padding: 10px 12px; }
.failure { border: 1px solid #ff8182; background: #fff5f5; border-radius: 6px; padding: 8px 12px; margin-bottom: 10px; }
.failure h3 { margin: 0 0 4px; font-size: 14px; color: var(--fail); }
.failure dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 0; }
.failure dt { color: var(--muted); } .failure dd { margin: 0; font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; white-space: pre-wrap; word-break: break-word; }
.failure pre, .reproduce code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; }
.failure pre { margin: 6px 0 0; max-height: 160px; overflow: auto; background: #fff; border: 1px solid var(--line); padding: 6px; }
.info { color: var(--muted); font-size: 12px; margin: 0 0 8px; }
.note-box { background: #fff8c5; border: 1px solid #d4a72c; border-radius: 6px; padding: 6px 10px; margin-bottom: 10px; }
.meta { display: flex; flex-wrap: wrap; gap: 6px 18px; align-items: center; font-size: 12px; margin-bottom: 10px; }
.reproduce code { background: var(--bg); border: 1px solid var(--line); border-radius: 4px; padding: 2px 6px; user-select: all; }
.captures a { margin-right: 10px; }
.panes { display: flex; gap: 14px; align-items: flex-start; }
.chart-pane { flex: 1 1 auto; min-width: 0; }
.steps-pane { flex: 0 0 360px; max-height: 640px; overflow: auto; border: 1px solid var(--line); border-radius: 6px; }
.steps-pane h4, .chart-pane h4 { margin: 0; padding: 4px 8px; font-size: 12px; background: var(--bg); border-bottom: 1px solid var(--line); }
ol.steps { list-style: none; margin: 0; padding: 0; font-size: 12px; }
ol.steps li { padding: 4px 8px; border-bottom: 1px solid #eaeef2; cursor: pointer; }
ol.steps li:hover { background: #f3f4f6; }
ol.steps li.failed { background: #ffebe9; }
ol.steps li.not-run { color: var(--muted); }
ol.steps .verdict { display: inline-block; width: 16px; font-weight: 700; }
ol.steps li.passed .verdict { color: var(--pass); } ol.steps li.failed .verdict { color: var(--fail); }
ol.steps .text { font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
ol.steps .stepnote { display: block; color: var(--muted); margin-left: 16px; word-break: break-word; }
.pager { display: flex; flex-wrap: wrap; align-items: center; gap: 8px; font-size: 12px; padding: 4px 0 6px; color: var(--muted); }
.pager button:disabled { opacity: .4; cursor: default; }
.chart-scroll { overflow: auto; max-height: 560px; border: 1px solid var(--line); border-radius: 6px; }
.chart-head { position: sticky; top: 0; z-index: 1; background: #fff; border-bottom: 1px solid #eaeef2; }
svg.msc { display: block; font: 11px system-ui, "DejaVu Sans", sans-serif; }
svg.msc .lane-head rect { fill: #24292f; } svg.msc .lane-head text { fill: #fff; font-weight: 600; }
svg.msc .lifeline { stroke: #afb8c1; stroke-dasharray: 2 3; }
svg.msc .t { fill: var(--muted); font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 10px; }
svg.msc .row:hover .hit { fill: #f3f4f6; }
svg.msc .hit { fill: transparent; }
svg.msc .lbl { fill: var(--fg); }
svg.msc .step-band { fill: #ddf4ff; } svg.msc .security-band { fill: #fbefff; } svg.msc .fail-band { fill: #ffebe9; stroke: var(--fail); }
svg.msc .step-text { fill: #0550ae; font-weight: 600; } svg.msc .security-text { fill: #8250df; font-weight: 600; } svg.msc .fail-text { fill: var(--fail); font-weight: 700; }
footer { color: var(--muted); font-size: 12px; padding: 10px 20px 20px; }
.hidden { display: none !important; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 14px; font-size: 11px; color: var(--muted); margin: 6px 0 0; }
.legend svg { vertical-align: middle; }
"""#

    static let js = #"""
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('report-data').textContent);
  var PAGE = data.page_size;
  var NS = 'http://www.w3.org/2000/svg';
  var STYLE = {
    'request': { color: '#0969da' }, 'response': { color: '#1a7f37' },
    'write-request': { color: '#0969da', width: 2 }, 'write-command': { color: '#8250df', dash: '7 4', width: 2 },
    'notification': { color: '#bc4c00' }, 'indication': { color: '#bc4c00', width: 2 }, 'confirmation': { color: '#bc4c00', dash: '2 3' },
    'error': { color: '#cf222e', width: 2 }, 'advertising': { color: '#8c959f', dash: '1 4', width: 2 },
    'connect': { color: '#1a7f37', width: 3, both: true }, 'disconnect': { color: '#cf222e', dash: '6 3', width: 2, both: true },
    'security': { color: '#8250df', width: 2, dash: '1 3', both: true }, 'fault': { color: '#d4a72c', icon: '\u26a1' }, 'violation': { color: '#8250df', icon: '\u26a0' },
    'note': { color: '#57606a', icon: '\u2022' }, 'security-step': { color: '#8250df' }, 'step': { color: '#0550ae' },
    'failure': { color: '#cf222e' }
  };
  var TAG = { 'write-request': 'WRITE REQ', 'write-command': 'WRITE CMD' };

  function h(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function s(tag, attrs, text) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function ms(ns) {
    var v = ns / 1e6;
    return v >= 1000 ? (v / 1000).toFixed(3) + ' s' : v.toFixed(3) + ' ms';
  }
  function clip(text, chars) { return text.length > chars ? text.slice(0, Math.max(1, chars - 1)) + '\u2026' : text; }

  function marker(defs, id, color) {
    var m = s('marker', { id: id, viewBox: '0 0 10 10', refX: '9', refY: '5', markerWidth: '7', markerHeight: '7', orient: 'auto-start-reverse' });
    m.appendChild(s('path', { d: 'M0,0 L10,5 L0,10 z', fill: color }));
    defs.appendChild(m);
  }

  // One page of the chart: rows [from, to) of the scenario's messages.
  function drawChart(sc, key, page, holder) {
    var lanes = sc.lanes, msgs = sc.messages;
    var from = page * PAGE, to = Math.min(msgs.length, from + PAGE);
    var TIME = 92, ROW = 24, HEAD = 34;
    // Lanes as wide as the pane allows (labels are clipped to their arrow), within bounds.
    var room = (holder.clientWidth || 960) - TIME - 50;
    var LANE = Math.max(180, Math.min(420, room / Math.max(1, lanes.length)));
    var width = TIME + LANE * lanes.length + 40, height = (to - from) * ROW + 12;
    var x = function (i) { return TIME + LANE * i + LANE / 2; };
    // The lanes' names in a header of their own that stays put while the rows scroll.
    var head = s('svg', { 'class': 'msc', width: width, height: HEAD, viewBox: '0 0 ' + width + ' ' + HEAD });
    var svg = s('svg', { 'class': 'msc', width: width, height: height, viewBox: '0 0 ' + width + ' ' + height, role: 'img' });
    svg.appendChild(s('title', {}, 'Message sequence chart of ' + sc.name + ', rows ' + (from + 1) + '\u2013' + to + ' of ' + msgs.length));
    var defs = s('defs', {});
    for (var kind in STYLE) marker(defs, 'a-' + key + '-' + kind, STYLE[kind].color);
    svg.appendChild(defs);
    lanes.forEach(function (name, i) {
      svg.appendChild(s('line', { 'class': 'lifeline', x1: x(i), y1: 0, x2: x(i), y2: height }));
      var g = s('g', { 'class': 'lane-head' });
      g.appendChild(s('rect', { x: x(i) - LANE / 2 + 12, y: 5, width: LANE - 24, height: 24, rx: 5 }));
      g.appendChild(s('text', { x: x(i), y: 21, 'text-anchor': 'middle' }, clip(name, Math.floor((LANE - 30) / 7))));
      head.appendChild(g);
    });
    for (var r = from; r < to; r++) {
      var m = msgs[r], y = (r - from) * ROW, mid = y + ROW / 2 + 4;
      var t = m[0], a = m[1], b = m[2], kind = m[3], label = m[4], detail = m[6];
      var g = s('g', { 'class': 'row k-' + kind, 'data-row': r });
      g.appendChild(s('title', {}, ms(t) + '  ' + label + (detail ? '\n' + detail : '')));
      g.appendChild(s('rect', { 'class': 'hit', x: 0, y: y, width: width, height: ROW }));
      g.appendChild(s('text', { 'class': 't', x: 4, y: mid }, ms(t)));
      if (kind === 'step' || kind === 'security-step' || kind === 'failure') {
        var band = kind === 'step' ? 'step' : kind === 'security-step' ? 'security' : 'fail';
        g.appendChild(s('rect', { 'class': band + '-band', x: TIME - 4, y: y + 2, width: width - TIME - 4, height: ROW - 4, rx: 4 }));
        var text = (kind === 'failure' ? '\u2717 ' : kind === 'security-step' ? '\u25c6 ' : '\u25b8 ') + label;
        g.appendChild(s('text', { 'class': band + '-text', x: TIME + 4, y: mid }, clip(text, Math.floor((width - TIME - 16) / 6.2))));
      } else if (a !== b) {
        var st = STYLE[kind] || STYLE.note, x1 = x(a), x2 = x(b), ly = y + ROW - 7;
        var attrs = { x1: x1 + (x2 > x1 ? 3 : -3), y1: ly, x2: x2 + (x2 > x1 ? -3 : 3), y2: ly, stroke: st.color, 'stroke-width': st.width || 1.5,
                      'marker-end': 'url(#a-' + key + '-' + kind + ')' };
        if (st.dash) attrs['stroke-dasharray'] = st.dash;
        if (st.both) attrs['marker-start'] = 'url(#a-' + key + '-' + kind + ')';
        g.appendChild(s('line', attrs));
        var span = Math.abs(x2 - x1), tag = TAG[kind] ? TAG[kind] + ' \u00b7 ' : '';
        g.appendChild(s('text', { 'class': 'lbl', x: (x1 + x2) / 2, y: ly - 4, 'text-anchor': 'middle', fill: st.color },
                        clip(tag + label, Math.floor(span / 6.4))));
      } else {
        // A mark on one lane; its text runs toward the wider side (left of the last lane).
        var st2 = STYLE[kind] || STYLE.note, cx = x(a), left = lanes.length > 1 && a === lanes.length - 1;
        g.appendChild(s('circle', { cx: cx, cy: y + ROW / 2, r: 4, fill: st2.color }));
        g.appendChild(s('text', { 'class': 'lbl', x: left ? cx - 10 : cx + 10, y: mid, fill: st2.color, 'text-anchor': left ? 'end' : 'start' },
                        clip((st2.icon ? st2.icon + ' ' : '') + label, Math.floor((left ? cx - TIME - 14 : width - cx - 14) / 6))));
      }
      svg.appendChild(g);
    }
    holder.textContent = '';
    var top = h('div', 'chart-head');
    top.appendChild(head);
    holder.appendChild(top);
    holder.appendChild(svg);
  }

  function legend() {
    var box = h('div', 'legend');
    [['request', 'request'], ['response', 'response'], ['write-request', 'write request'], ['write-command', 'write command (dashed)'],
     ['notification', 'notification'], ['error', 'error'], ['connect', 'connection'], ['disconnect', 'disconnection'], ['security', 'pairing, encryption'], ['advertising', 'advertising seen']]
      .forEach(function (k) {
        var st = STYLE[k[0]], item = h('span');
        var svg = s('svg', { width: 28, height: 8 });
        var attrs = { x1: 0, y1: 4, x2: 28, y2: 4, stroke: st.color, 'stroke-width': st.width || 1.5 };
        if (st.dash) attrs['stroke-dasharray'] = st.dash;
        svg.appendChild(s('line', attrs));
        item.appendChild(svg);
        item.appendChild(document.createTextNode(' ' + k[1]));
        box.appendChild(item);
      });
    return box;
  }

  function build(details) {
    var body = details.querySelector('.body');
    if (body.getAttribute('data-drawn')) return;
    body.setAttribute('data-drawn', '1');
    var key = details.getAttribute('data-index');
    var sc = data.scenarios[+key];
    var f = sc.failure;
    if (sc.outcome === 'failed' && f) {
      var box = h('div', 'failure');
      box.appendChild(h('h3', null, 'Failed (' + f.kind + ') at ' + f.time + ' virtual'));
      var dl = h('dl');
      [['where', f.where], ['expected', f.expected], ['seen', f.seen]].forEach(function (p) {
        dl.appendChild(h('dt', null, p[0]));
        dl.appendChild(h('dd', null, p[1]));
      });
      box.appendChild(dl);
      if (f.recent_packets.length) {
        var det = h('details');
        det.appendChild(h('summary', null, 'last ' + f.recent_packets.length + ' packets on the central\u2019s HCI'));
        det.appendChild(h('pre', null, f.recent_packets.join('\n')));
        box.appendChild(det);
      }
      body.appendChild(box);
    } else if (f && f.reason) {
      body.appendChild(h('div', 'note-box', 'Skipped: ' + f.reason));
    } else if (f && f.as_expected) {
      body.appendChild(h('div', 'note-box', 'Failed as expected: ' + f.as_expected));
    }
    var meta = h('div', 'meta');
    meta.appendChild(h('span', null, 'seed ' + sc.seed + ' \u00b7 tier ' + sc.tier + (sc.tags.length ? ' \u00b7 tags: ' + sc.tags.join(', ') : '')));
    if (sc.reproduce) {
      var rep = h('span', 'reproduce', 'reproduce: ');
      rep.appendChild(h('code', null, sc.reproduce));
      meta.appendChild(rep);
    }
    if (sc.captures.length) {
      var caps = h('span', 'captures', 'captures: ');
      sc.captures.forEach(function (c) {
        var link = h('a', null, c.device + '.btsnoop');
        link.href = c.path;
        link.title = c.path;
        caps.appendChild(link);
      });
      meta.appendChild(caps);
    }
    body.appendChild(meta);
    if (!sc.messages.length && !sc.steps.length) {
      body.appendChild(h('p', 'info', 'No timeline: the scenario did not run on this tier.'));
      return;
    }
    var panes = h('div', 'panes');
    var chartPane = h('div', 'chart-pane');
    var pager = h('div', 'pager');
    var holder = h('div', 'chart-scroll');
    var pages = Math.max(1, Math.ceil(sc.messages.length / PAGE));
    var page = sc.failure_page !== null ? sc.failure_page : 0;
    var prev = h('button', null, '\u25c0 previous'), next = h('button', null, 'next \u25b6'), where = h('span');
    prev.type = next.type = 'button';
    // Page p, scrolled to row `focus` (an index into all the rows) when it is on it.
    function show(p, focus) {
      page = Math.max(0, Math.min(pages - 1, p));
      var a = page * PAGE, b = Math.min(sc.messages.length, a + PAGE);
      prev.disabled = page === 0;
      next.disabled = page >= pages - 1;
      where.textContent = sc.messages.length
        ? 'rows ' + (a + 1) + '\u2013' + b + ' of ' + sc.messages.length + ' \u00b7 page ' + (page + 1) + ' of ' + pages + ' \u00b7 ' + ms(sc.messages[a][0]) + ' \u2013 ' + ms(sc.messages[b - 1][0])
        : 'no events recorded';
      drawChart(sc, key, page, holder);
      var row = focus === undefined ? null : holder.querySelector('g.row[data-row="' + focus + '"]');
      holder.scrollTop = row ? Math.max(0, (focus - a) * 24 - holder.clientHeight / 2) : 0;
    }
    prev.onclick = function () { show(page - 1); };
    next.onclick = function () { show(page + 1); };
    pager.appendChild(prev);
    pager.appendChild(next);
    pager.appendChild(where);
    if (sc.failure_page !== null) {
      var jump = h('button', null, '\u2717 failure');
      jump.type = 'button';
      jump.onclick = function () { show(sc.failure_page, sc.failure_row); };
      pager.appendChild(jump);
    }
    chartPane.appendChild(h('h4', null, 'Message sequence chart (virtual time)'));
    chartPane.appendChild(pager);
    chartPane.appendChild(holder);
    chartPane.appendChild(legend());
    var stepsPane = h('div', 'steps-pane');
    stepsPane.appendChild(h('h4', null, 'Steps (' + sc.steps.length + ')'));
    var list = h('ol', 'steps');
    sc.steps.forEach(function (st) {
      var li = h('li', st.outcome);
      li.appendChild(h('span', 'verdict', st.outcome === 'passed' ? '\u2713' : st.outcome === 'failed' ? '\u2717' : '\u2013'));
      li.appendChild(h('span', 'text', st.index + '. ' + st.text));
      li.title = 'line ' + st.line + ', started at ' + st.start + ' (' + st.outcome + ')';
      if (st.note) li.appendChild(h('span', 'stepnote', st.note));
      if (st.page !== null) li.onclick = function () { show(st.page, st.row); };
      list.appendChild(li);
    });
    stepsPane.appendChild(list);
    panes.appendChild(chartPane);
    panes.appendChild(stepsPane);
    body.appendChild(panes);
    show(page, sc.failure_row === null ? undefined : sc.failure_row);
  }

  var all = Array.prototype.slice.call(document.querySelectorAll('details.scenario'));
  all.forEach(function (d) {
    d.addEventListener('toggle', function () { if (d.open) build(d); });
    if (d.open) build(d);
  });
  var filter = document.getElementById('filter'), onlyFailed = document.getElementById('only-failed'), shown = document.getElementById('shown');
  function apply() {
    var q = filter.value.trim().toLowerCase(), n = 0;
    all.forEach(function (d) {
      var hide = (q && d.getAttribute('data-search').indexOf(q) < 0) || (onlyFailed.checked && !d.classList.contains('failed'));
      d.classList.toggle('hidden', !!hide);
      if (!hide) n++;
    });
    shown.textContent = n + ' of ' + all.length + ' shown';
  }
  // A link can carry a filter: report.html#filter=heart
  var asked = /^#filter=(.*)$/.exec(location.hash);
  if (asked) filter.value = decodeURIComponent(asked[1]);
  filter.addEventListener('input', apply);
  onlyFailed.addEventListener('change', apply);
  document.getElementById('expand-failed').onclick = function () {
    all.forEach(function (d) { if (d.classList.contains('failed') && !d.classList.contains('hidden')) d.open = true; });
  };
  document.getElementById('collapse-all').onclick = function () { all.forEach(function (d) { d.open = false; }); };
  apply();
  document.body.setAttribute('data-ready', '1');
})();
"""#
}
