// The sagas console: a few views over the gateway's HTTP/JSON API (/v1),
// no framework, no build step. Every value from the API goes into the page
// as text (textContent, or an attribute set with setAttribute/dataset),
// never as HTML. Views (hash routing):
//   #/sagas?state=...&attention=1&overdue=1&customer=...&after=...&before=...
//   #/saga/ID
//   #/activity
// Elements tests find: table#sagas tr[data-saga-id][data-state], #counts
// li[data-state], #timeline li[data-version], #retry, #retry-result,
// #cancel-reason, #cancel, #cancel-result, table#activity; body[data-busy]
// while a view loads.
'use strict';

const STATES = ['RESERVING', 'CHARGING', 'SHIPPING', 'REFUNDING', 'RELEASING', 'COMPLETED',
  'CANCELLED'];
const FINISHED = new Set(['COMPLETED', 'CANCELLED']);
const PAGE_SIZE = 50;
// counts by state: one request (with_counts); COMPLETED and CANCELLED are
// counted up to 10000, more shows "10000+" (docs/operations.md, "Counts by
// state")

// ---- helpers ----

// el('tr', {id: 'x', dataset: {sagaId: id}, className: 'c'}, child, 'text'...)
function el(tag, props, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === 'dataset') Object.assign(e.dataset, v);
    else if (k === 'className') e.className = v;
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// an API error: the gateway's {"code","reason","message"} and the HTTP status
class ApiError extends Error {
  constructor(status, body) {
    const code = (body && body.code) || 'HTTP_' + status;
    const reason = (body && body.reason) || '';
    const message = (body && body.message) || '';
    super([code, reason, message].filter(Boolean).join(' '));
    this.status = status;
    this.code = code;
  }
}

async function api(method, path, body) {
  const init = {method, headers: {Accept: 'application/json'}};
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, {code: 'UNAVAILABLE', message: 'the gateway did not answer: ' + e.message});
  }
  let data = null;
  try {
    data = await res.json();
  } catch (e) {
    if (res.ok) throw new ApiError(res.status, {code: 'BAD_REPLY', message: 'not JSON'});
  }
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

// states by name, without the SAGA_STATE_ prefix (proto3 JSON omits the
// default, UNSPECIFIED)
function stateName(s) {
  return s ? String(s).replace(/^SAGA_STATE_/, '') : '';
}

// a saga's state as its definition names it (stateName, any saga type),
// or its SagaState from an orchestrator older than saga types
function sagaState(s) {
  return s.stateName || stateName(s.state);
}

// a history entry's from (from true) or to state, as sagaState
function histState(h, from) {
  return (from ? h.fromStateName : h.toStateName) || stateName(from ? h.fromState : h.toState);
}

// ms since the epoch (a string in proto3 JSON) as ISO UTC; '' when unset
function isoTime(ms) {
  const n = Number(ms || 0);
  return n > 0 ? new Date(n).toISOString() : '';
}

function duration(ms) {
  if (ms < 1000) return ms + ' ms';
  return (ms / 1000).toFixed(ms < 10000 ? 3 : 1) + ' s';
}

function setStatus(text) {
  document.getElementById('status').textContent = text || '';
}

function errorBox(err) {
  return el('p', {className: 'error', id: 'error'}, 'error: ' + err.message);
}

function view() {
  const v = document.getElementById('view');
  v.replaceChildren();
  return v;
}

// ---- routing ----

function parseHash() {
  const h = location.hash.replace(/^#/, '') || '/sagas';
  const q = h.indexOf('?');
  const path = q < 0 ? h : h.slice(0, q);
  const params = new URLSearchParams(q < 0 ? '' : h.slice(q + 1));
  return {path, params};
}

// the Previous stack of the list: the page tokens of the pages before this
// one, for the same filters
let pageStack = [];
let pageFilters = '';
let renderSeq = 0; // a late reply of an older view is dropped

// body[data-busy] while a view loads (tests wait for it to go)
function route() {
  const {path, params} = parseHash();
  const seq = ++renderSeq;
  const m = path.match(/^\/saga\/([^/]+)$/);
  document.body.dataset.busy = '1';
  let done;
  if (m) done = renderSaga(decodeURIComponent(m[1]), seq);
  else if (path === '/activity') done = renderActivity(seq);
  else done = renderList(params, seq);
  done.catch((e) => view().append(errorBox(e))).finally(() => {
    if (seq === renderSeq) delete document.body.dataset.busy;
  });
}

// ---- the sagas list ----

// the list's filters (the hash's parameters) as the API's query
function listQuery(params, token, limit) {
  const q = new URLSearchParams();
  if (params.get('state')) q.set('state', 'SAGA_STATE_' + params.get('state'));
  if (params.get('attention') === '1') q.set('attentionOnly', 'true');
  if (params.get('overdue') === '1') q.set('overdue', 'true');
  if (params.get('customer')) q.set('customer', params.get('customer'));
  for (const [p, a] of [['after', 'createdAfterUnixMs'], ['before', 'createdBeforeUnixMs']]) {
    if (params.get(p)) q.set(a, String(utcMs(params.get(p))));
  }
  q.set('limit', String(limit));
  if (token) q.set('pageToken', token);
  return q;
}

// a time typed in the filters, as UTC when it names no zone
// ("2026-12-03T14:00" or "2026-12-03 14:00:00"; a date alone is midnight UTC)
function utcMs(text) {
  let t = text.trim().replace(' ', 'T');
  if (/T\d\d:\d\d(:\d\d(\.\d+)?)?$/.test(t)) t += 'Z';
  const ms = Date.parse(t);
  if (Number.isNaN(ms) || ms <= 0) throw new Error('not a time: ' + text + ' (e.g. 2026-12-03T14:00:00Z)');
  return ms;
}

function filterForm(params) {
  const state = el('select', {name: 'state', id: 'f-state'}, el('option', {value: ''}, 'any state'));
  for (const s of STATES) {
    const o = el('option', {value: s}, s);
    if (params.get('state') === s) o.selected = true;
    state.append(o);
  }
  const check = (name, label) => {
    const c = el('input', {type: 'checkbox', name, id: 'f-' + name});
    c.checked = params.get(name) === '1';
    return el('label', {className: 'check'}, c, label);
  };
  const text = (name, label, placeholder) => {
    const i = el('input', {type: 'text', name, id: 'f-' + name, placeholder});
    i.value = params.get(name) || '';
    return el('label', {}, label, i);
  };
  const form = el('form', {id: 'filters'},
    el('label', {}, 'state', state),
    check('attention', 'needs attention'),
    check('overdue', 'overdue'),
    text('customer', 'customer', 'exact name'),
    text('after', 'created at or after (UTC)', '2026-01-01T00:00:00Z'),
    text('before', 'created before (UTC)', '2026-12-31T00:00:00Z'),
    el('button', {type: 'submit', id: 'apply'}, 'Apply'),
    el('button', {type: 'reset', id: 'clear'}, 'Clear'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const f = new FormData(form);
    const q = new URLSearchParams();
    if (f.get('state')) q.set('state', f.get('state'));
    if (f.get('attention')) q.set('attention', '1');
    if (f.get('overdue')) q.set('overdue', '1');
    for (const n of ['customer', 'after', 'before']) {
      const v = String(f.get(n) || '').trim();
      if (v) q.set(n, v);
    }
    location.hash = '#/sagas' + (q.toString() ? '?' + q : '');
  });
  form.addEventListener('reset', (ev) => {
    ev.preventDefault();
    location.hash = '#/sagas';
  });
  return form;
}

// counts by state, over every saga (not the other filters), in one request
// answered from the indexes: exact for the unfinished states, "10000+" past
// 10000 for the finished ones; "?" for each when the request fails (e.g. 429,
// too many listings at once)
async function renderCounts(box, seq) {
  let results;
  try {
    const r = await api('GET', '/v1/sagas?limit=1&with_counts=true');
    const byState = new Map((r.counts || []).map((c) =>
      [String(c.state).replace('SAGA_STATE_', ''), String(c.count || 0) + (c.more ? '+' : '')]));
    results = STATES.map((s) => [s, byState.get(s) || '0']);
  } catch (e) {
    results = STATES.map((s) => [s, '?']);
  }
  if (seq !== renderSeq) return;
  box.replaceChildren();
  box.dataset.done = '1';
  for (const [s, n] of results) {
    box.append(el('li', {dataset: {state: s}},
      el('a', {href: '#/sagas?state=' + s}, s), el('span', {className: 'n'}, n)));
  }
}

async function renderList(params, seq) {
  const v = view();
  const filters = new URLSearchParams(params);
  filters.delete('page');
  const token = params.get('page') || '';
  if (filters.toString() !== pageFilters) {
    pageFilters = filters.toString();
    pageStack = [];
  }
  const overdue = params.get('overdue') === '1';
  const counts = el('ul', {id: 'counts', title: 'sagas by state (all sagas; "10000+": more than 10000)'});
  v.append(el('h2', {}, 'Sagas'), counts, filterForm(params));
  renderCounts(counts, seq);

  setStatus('loading…');
  let r;
  try {
    r = await api('GET', '/v1/sagas?' + listQuery(params, token, PAGE_SIZE));
    // (listQuery throws on a time it cannot read: shown as the API's errors)
  } catch (e) {
    if (seq !== renderSeq) return;
    setStatus('');
    v.append(errorBox(e));
    return;
  }
  if (seq !== renderSeq) return;
  setStatus('');

  const cols = ['id', 'state', 'reason', 'customer', 'sku', 'qty', 'amount', 'attempts',
    'attention', 'created', 'updated'];
  if (overdue) cols.push('why');
  const head = el('tr', {});
  for (const c of cols) head.append(el('th', {}, c));
  const body = el('tbody', {});
  for (const s of r.sagas || []) {
    const st = sagaState(s);
    const o = s.order || {};
    const tr = el('tr', {dataset: {sagaId: s.sagaId, state: st}});
    tr.append(
      el('td', {}, el('a', {href: '#/saga/' + encodeURIComponent(s.sagaId), className: 'saga-link'},
        s.sagaId)),
      el('td', {className: 'state state-' + st, dataset: {col: 'state'}}, st),
      el('td', {dataset: {col: 'reason'}}, s.reason || ''),
      el('td', {dataset: {col: 'customer'}}, o.customer || ''),
      el('td', {dataset: {col: 'sku'}}, o.sku || ''),
      el('td', {className: 'num', dataset: {col: 'qty'}}, o.qty || 0),
      el('td', {className: 'num', dataset: {col: 'amount'}}, o.amount || '0'),
      el('td', {className: 'num', dataset: {col: 'attempts'}}, s.attempts || 0),
      el('td', {className: s.attention ? 'attention' : '', dataset: {col: 'attention'}},
        s.attention ? 'yes' : ''),
      el('td', {dataset: {col: 'created'}}, isoTime(s.createdUnixMs)),
      el('td', {dataset: {col: 'updated'}}, isoTime(s.updatedUnixMs)));
    if (overdue) tr.append(el('td', {dataset: {col: 'why'}}, (s.overdue || []).join(',')));
    body.append(tr);
  }
  const n = (r.sagas || []).length;
  v.append(el('table', {id: 'sagas'}, el('thead', {}, head), body));
  if (n === 0) v.append(el('p', {id: 'empty'}, 'No saga matches.'));

  // paging: Next carries nextPageToken; Previous pops the stack
  const prev = el('button', {type: 'button', id: 'prev'}, 'Previous');
  prev.disabled = !token;
  prev.addEventListener('click', () => {
    const q = new URLSearchParams(filters);
    const back = pageStack.pop();
    if (back) q.set('page', back);
    location.hash = '#/sagas' + (q.toString() ? '?' + q : '');
  });
  const next = el('button', {type: 'button', id: 'next'}, 'Next');
  next.disabled = !r.nextPageToken;
  next.addEventListener('click', () => {
    pageStack.push(token);
    const q = new URLSearchParams(filters);
    q.set('page', r.nextPageToken);
    location.hash = '#/sagas?' + q;
  });
  v.append(el('div', {className: 'pager'}, prev, next,
    el('span', {id: 'page-info'}, n + ' on this page' + (r.truncated ? ' (truncated to fit a reply)' : ''))));
}

// ---- a saga's page ----

function fieldList(s) {
  const o = s.order || {};
  // a saga type's own input (not an Order): its customer and its JSON
  const own = s.inputType && s.inputType !== 'sagas.v1.Order';
  const input = own
    ? [['customer', o.customer || ''], ['input', s.inputType + ' ' + (s.inputJson || '')]]
    : [['customer', o.customer || ''], ['sku', o.sku || ''], ['qty', o.qty || 0],
        ['amount', o.amount || '0']];
  const rows = [
    ['sagaId', s.sagaId], ['type', s.type || 'order'], ['state', sagaState(s)], ['reason', s.reason || ''],
    ...input, ['version', s.version || '0'], ['attempts', s.attempts || 0],
    ['attention', s.attention ? 'yes' : 'no'], ['created', isoTime(s.createdUnixMs)],
    ['updated', isoTime(s.updatedUnixMs)], ['stepDeadline', isoTime(s.stepDeadlineUnixMs)],
    ['nextAttempt', isoTime(s.nextAttemptUnixMs)], ['epoch', s.epoch || '0'],
    ['leaseOwner', s.leaseOwner || ''],
  ];
  const dl = el('dl', {id: 'fields'});
  for (const [k, val] of rows) dl.append(el('dt', {}, k), el('dd', {dataset: {field: k}}, val));
  return dl;
}

function timeline(entries) {
  const ol = el('ol', {id: 'timeline'});
  let prevMs = null;
  for (const h of entries) {
    const at = Number(h.atUnixMs || 0);
    const from = histState(h, true) || '(start)';
    const to = histState(h, false);
    const li = el('li', {dataset: {version: h.version || '0', from, to, event: h.event || '',
      reason: h.reason || '', atUnixMs: h.atUnixMs || '0'}},
      el('span', {className: 'at'}, isoTime(h.atUnixMs)), ' ',
      el('span', {className: 'transition'}, from + ' \u2192 ' + to), ' ',
      el('span', {className: 'event'}, h.event || ''),
      h.reason ? el('span', {className: 'reason'}, ' (' + h.reason + ')') : null,
      // an operator's action: who, and their words
      h.actor ? el('span', {className: 'actor'},
        ' by ' + h.actor + (h.note ? ': \u201c' + h.note + '\u201d' : '')) : null,
      el('span', {className: 'version'}, ' v' + (h.version || '0')), ' ',
      el('span', {className: 'gap'}, prevMs === null ? '' : '+' + duration(at - prevMs)));
    prevMs = at;
    ol.append(li);
  }
  return ol;
}

async function renderSaga(id, seq) {
  const v = view();
  v.append(el('p', {}, el('a', {href: '#/sagas'}, '\u2190 all sagas')));
  setStatus('loading…');
  const path = '/v1/sagas/' + encodeURIComponent(id);
  let saga, hist;
  try {
    [saga, hist] = await Promise.all([api('GET', path), api('GET', path + '/history')]);
  } catch (e) {
    if (seq !== renderSeq) return;
    setStatus('');
    v.append(el('h2', {}, 'Saga ', el('code', {}, id)), errorBox(e));
    return;
  }
  if (seq !== renderSeq) return;
  setStatus('');
  const s = saga.saga || {};
  const st = sagaState(s);
  v.append(el('h2', {id: 'saga-title', dataset: {sagaId: s.sagaId || id, state: st}},
    'Saga ', el('code', {}, s.sagaId || id), ' ', el('span', {className: 'state state-' + st}, st)));

  const actions = el('p', {id: 'actions'});
  // finished: any saga type's end (Saga.finished), or the order saga's
  // states from an orchestrator older than saga types
  const finished = s.finished || FINISHED.has(st);
  if (!finished || s.attention) {
    const btn = el('button', {type: 'button', id: 'retry'}, 'Retry');
    const result = el('span', {id: 'retry-result', role: 'status'});
    btn.addEventListener('click', () => retry(id, btn, result));
    actions.append(btn, result);
  } else {
    actions.append(el('span', {id: 'no-retry'}, 'Finished: nothing to retry.'));
  }
  if (!finished) {
    // cancel before the pivot (rule 11): refused once it has succeeded;
    // one idempotency key per page, so a second click is answered as the
    // first
    const key = uuid4();
    const reason = el('input', {type: 'text', id: 'cancel-reason', maxlength: '255',
      placeholder: 'why cancel (required)', 'aria-label': 'why cancel'});
    const cbtn = el('button', {type: 'button', id: 'cancel'}, 'Cancel saga');
    const cres = el('span', {id: 'cancel-result', role: 'status'});
    cbtn.addEventListener('click', () => cancelSaga(id, key, reason, cbtn, cres));
    actions.append(' ', reason, cbtn, cres);
  }
  v.append(actions, el('h3', {}, 'Fields'), fieldList(s), el('h3', {}, 'History'),
    timeline(hist.entries || []));
}

// POST the retry; the result (or the refusal) as text. On success the page
// shows the saga as re-armed.
async function retry(id, btn, result) {
  btn.disabled = true;
  result.className = '';
  result.textContent = 'retrying…';
  try {
    const r = await api('POST', '/v1/sagas/' + encodeURIComponent(id) + '/retry', {});
    const s = r.saga || {};
    const note = 'retried: ' + sagaState(s) + ', version ' + (s.version || '0');
    const seq = ++renderSeq;
    await renderSaga(id, seq);
    const box = document.getElementById('retry-result');
    if (box && seq === renderSeq) {
      box.className = 'ok';
      box.textContent = note;
    } else if (seq === renderSeq) {
      // finished meanwhile: no Retry button on the new page
      document.getElementById('actions').append(el('span', {id: 'retry-result', className: 'ok'}, note));
    }
  } catch (e) {
    result.className = 'refused';
    result.textContent = 'refused: ' + e.message;
    btn.disabled = false;
  }
}

// a random (version 4) UUID; crypto.getRandomValues works outside secure
// contexts too (randomUUID does not)
function uuid4() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return h.slice(0, 8) + '-' + h.slice(8, 12) + '-' + h.slice(12, 16) + '-' +
    h.slice(16, 20) + '-' + h.slice(20);
}

// POST the cancel with its reason and key; the result (or the refusal,
// past_pivot once the charge succeeded) as text. On success the page shows
// the saga compensating.
async function cancelSaga(id, key, reasonInput, btn, result) {
  const reason = reasonInput.value.trim();
  result.className = '';
  if (!reason) {
    result.className = 'refused';
    result.textContent = 'say why first: the reason is kept in the audit trail';
    return;
  }
  btn.disabled = true;
  result.textContent = 'cancelling…';
  try {
    const r = await api('POST', '/v1/sagas/' + encodeURIComponent(id) + '/cancel',
      {reason, requestId: key});
    const s = r.saga || {};
    const note = (r.replayed ? 'cancelled before: ' : 'cancelled: ') + sagaState(s) +
      ', version ' + (s.version || '0');
    const seq = ++renderSeq;
    await renderSaga(id, seq);
    if (seq !== renderSeq) return;
    const box = document.getElementById('cancel-result');
    if (box) {
      box.className = 'ok';
      box.textContent = note;
    } else {
      document.getElementById('actions').append(el('span', {id: 'cancel-result', className: 'ok'}, note));
    }
  } catch (e) {
    result.className = 'refused';
    result.textContent = 'refused: ' + e.message;
    btn.disabled = false;
  }
}

// ---- activity: the transitions of every saga, live ----

const ACTIVITY_KEEP = 200; // rows shown, newest first
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// GET /v1/history from now on (the view is ready then), then again every
// second from the cursor (at once while the reply says more), until the
// view changes
async function renderActivity(seq) {
  const v = view();
  const body = el('tbody', {});
  const head = el('tr', {});
  for (const c of ['at', 'saga', 'transition', 'event', 'reason', 'version']) head.append(el('th', {}, c));
  const note = el('p', {id: 'activity-status'},
    'Transitions from the moment this page opened, newest first (' + ACTIVITY_KEEP + ' at most).');
  v.append(el('h2', {}, 'Activity'), note,
    el('table', {id: 'activity'}, el('thead', {}, head), body));
  const feed = {seq, body, note, text: note.textContent, cursor: ''};
  let more = await activityFetch(feed);
  (async () => {
    while (feed.seq === renderSeq) {
      if (!more) await sleep(1000);
      if (feed.seq !== renderSeq) return;
      more = await activityFetch(feed);
    }
  })();
}

// one GET /v1/history: from now on until a reply has given a cursor (an
// empty after would be the first row ever stored), then from that cursor;
// its entries prepended; returns the reply's more
async function activityFetch(feed) {
  const query = feed.cursor ? 'after=' + encodeURIComponent(feed.cursor) + '&limit=500'
    : 'fromNow=true&limit=1000';
  let r;
  try {
    r = await api('GET', '/v1/history?' + query);
  } catch (e) {
    if (feed.seq === renderSeq) feed.note.replaceChildren(errorBox(e));
    await sleep(1000);
    return false;
  }
  if (feed.seq !== renderSeq) return false;
  feed.note.textContent = feed.text; // an error of an earlier try is over
  feed.cursor = r.cursor || feed.cursor;
  for (const f of r.entries || []) {
    const h = f.entry || {};
    const from = histState(h, true) || '(start)';
    const to = histState(h, false);
    feed.body.prepend(el('tr', {dataset: {sagaId: f.sagaId, version: h.version || '0', to}},
      el('td', {}, isoTime(h.atUnixMs)),
      el('td', {}, el('a', {href: '#/saga/' + encodeURIComponent(f.sagaId)}, f.sagaId)),
      el('td', {}, from + ' \u2192 ' + to), el('td', {}, h.event || ''),
      el('td', {}, h.reason || ''), el('td', {className: 'num'}, h.version || '0')));
  }
  while (feed.body.childElementCount > ACTIVITY_KEEP) feed.body.lastElementChild.remove();
  return !!r.more;
}

window.addEventListener('hashchange', route);
window.addEventListener('DOMContentLoaded', route);
