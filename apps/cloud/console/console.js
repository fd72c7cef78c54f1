// The cloud console: plain ES module, no build step. Talks to /api with the token kept in
// sessionStorage; every value from the API is inserted with textContent (never as HTML).
const $ = (sel) => document.querySelector(sel);
const TOKEN_KEY = 'rgbx-cloud-token';
let selected = null;
/** The node the delete dialog is open for. */
let deleting = null;

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c ?? '')));
  return e;
}

async function api(method, path, body) {
  const res = await fetch(`/api${path}`, {
    method,
    headers: {
      authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY) ?? ''}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const data = res.status === 204 ? null : await res.json().catch(() => null);
  if (res.status === 401) {
    signOut('Your token was refused.');
    throw new Error('unauthorized');
  }
  if (!res.ok) throw new Error(data?.error?.message ?? `HTTP ${res.status}`);
  return data;
}

function signOut(message = '') {
  sessionStorage.removeItem(TOKEN_KEY);
  $('#app').hidden = true;
  $('#logout').hidden = true;
  $('#login').hidden = false;
  $('#login-error').textContent = message;
}

async function signIn(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
  let keys;
  try {
    keys = await api('GET', '/webhook-public-key');
  } catch (err) {
    if (err.message !== 'unauthorized') $('#login-error').textContent = err.message;
    return;
  }
  $('#login').hidden = true;
  $('#app').hidden = false;
  $('#logout').hidden = false;
  renderKeys(keys);
  await refresh();
}

// The public key that verifies the webhooks (PEM, SPKI), and any other published key during a rotation.
function renderKeys(k) {
  $('#key-id').textContent = k.keyId;
  $('#key-pem').textContent = k.data;
  const others = k.keys.filter((x) => x.keyId !== k.keyId);
  $('#other-keys').replaceChildren(
    ...others.map((x) =>
      el(
        'div',
        { class: 'key', 'data-key-id': x.keyId },
        el(
          'p',
          { class: 'muted' },
          `Also accept key `,
          el('code', {}, x.keyId),
          ` (${x.status}, rotation in progress):`,
        ),
        el('pre', { class: 'pem' }, x.pem),
      ),
    ),
  );
}

async function act(node, op) {
  $('#action-error').textContent = '';
  try {
    if (op === 'delete') await api('DELETE', `/nodes/${node.nodeId}`);
    else await api('POST', `/nodes/${node.nodeId}/${op}`);
  } catch (err) {
    $('#action-error').textContent = `${node.name}: ${err.message}`;
  }
  await refresh();
}

// Deleting a node deletes its wallets: only after the user types the node's name.
function confirmDelete(node) {
  deleting = node;
  $('#confirm-name').textContent = node.name;
  $('#confirm-input').value = '';
  $('#confirm-ok').disabled = true;
  $('#confirm-delete').showModal();
  $('#confirm-input').focus();
}
$('#confirm-input').addEventListener('input', () => {
  $('#confirm-ok').disabled = !deleting || $('#confirm-input').value !== deleting.name;
});
$('#confirm-cancel').addEventListener('click', () => $('#confirm-delete').close());
$('#confirm-delete').addEventListener('close', () => {
  deleting = null;
});
$('#confirm-ok').addEventListener('click', () => {
  const node = deleting;
  if (!node || $('#confirm-input').value !== node.name) return;
  $('#confirm-delete').close();
  void act(node, 'delete');
});

function webhookCell(n) {
  if (!n.settings.webhookUrl) return el('span', { class: 'muted' }, 'none');
  const status = n.webhook.failing
    ? 'failing'
    : n.webhook.pending > 0
      ? `${n.webhook.pending} pending`
      : 'ok';
  return el(
    'div',
    {},
    el('code', {}, n.settings.webhookUrl),
    el(
      'div',
      { class: `muted webhook-health ${n.webhook.failing ? 'error' : ''}` },
      `${n.webhook.delivered} delivered · ${status}`,
    ),
  );
}

function renderNodes(nodes) {
  const body = $('#nodes tbody');
  body.replaceChildren(
    ...nodes.map((n) => {
      const btn = (label, op, cls, handler) =>
        el(
          'button',
          {
            type: 'button',
            class: cls,
            'data-op': op,
            onclick: (e) => {
              e.stopPropagation();
              handler();
            },
          },
          label,
        );
      const actions = [];
      if (n.status === 'RUNNING' || n.status === 'STARTING' || n.status === 'FAILED')
        actions.push(btn('Pause', 'stop', '', () => act(n, 'stop')));
      if (n.status === 'PAUSED' || n.status === 'FAILED')
        actions.push(btn('Resume', 'start', 'primary', () => act(n, 'start')));
      actions.push(btn('Settings', 'show', '', () => select(n)));
      actions.push(btn('Delete', 'delete', 'danger', () => confirmDelete(n)));
      return el(
        'tr',
        {
          'data-node-id': n.nodeId,
          'data-name': n.name,
          class: selected?.nodeId === n.nodeId ? 'selected' : '',
        },
        el('td', {}, el('strong', {}, n.name), el('div', { class: 'muted' }, el('code', {}, n.nodeId))),
        el(
          'td',
          {},
          el('span', { class: `badge ${n.status}`, 'data-status': n.status }, n.status),
          n.lastError ? el('div', { class: 'muted' }, n.lastError) : '',
        ),
        el('td', {}, n.network),
        el('td', {}, webhookCell(n)),
        el('td', {}, n.apiUrl ? el('code', {}, n.apiUrl) : el('span', { class: 'muted' }, '—')),
        el('td', {}, el('div', { class: 'actions' }, ...actions)),
      );
    }),
  );
  $('#nodes-empty').hidden = nodes.length > 0;
  if (selected && !nodes.some((n) => n.nodeId === selected.nodeId)) {
    selected = null;
    $('#details').hidden = true;
  }
}

function select(n) {
  if (selected?.nodeId !== n.nodeId) {
    olderDeliveries = [];
    nextBefore = null;
    $('#deliveries-msg').textContent = '';
  }
  selected = n;
  $('#details').hidden = false;
  $('#details-name').textContent = n.name;
  $('#settings-webhook').value = n.settings.webhookUrl ?? '';
  $('#settings-error').textContent = '';
  $('#settings-saved').textContent = '';
  // The keys may have rotated since sign-in.
  api('GET', '/webhook-public-key').then(renderKeys, () => {});
  void refreshEvents();
}

// Webhook URL of the selected node: PATCH …/settings with the text as typed (an empty field is
// refused by the API with its message), or null to turn webhooks off.
async function saveWebhook(webhookUrl) {
  if (!selected) return;
  $('#settings-error').textContent = '';
  $('#settings-saved').textContent = '';
  try {
    const { data } = await api('PATCH', `/nodes/${selected.nodeId}/settings`, { webhookUrl });
    selected = data;
    $('#settings-webhook').value = data.settings.webhookUrl ?? '';
    $('#settings-saved').textContent = data.settings.webhookUrl
      ? `Saved: webhooks go to ${data.settings.webhookUrl}`
      : 'Saved: webhooks are off';
  } catch (err) {
    $('#settings-error').textContent = err.message;
  }
  await refresh();
}
$('#settings-form').addEventListener('submit', (e) => {
  e.preventDefault();
  void saveWebhook($('#settings-webhook').value.trim());
});
$('#settings-off').addEventListener('click', () => void saveWebhook(null));

async function redeliver(eventId) {
  try {
    await api('POST', `/nodes/${selected.nodeId}/webhooks/events/${eventId}/redeliver`);
  } catch (err) {
    $('#action-error').textContent = err.message;
  }
  await refreshEvents();
}

// ---------- deliveries (one row per attempt), charts ----------

const SVG = 'http://www.w3.org/2000/svg';
function svg(tag, attrs = {}, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = String(text);
  return e;
}
const W = 520;
const H = 170;
const PAD = { l: 84, r: 12, t: 12, b: 24 };
const STATUS_LEVELS = ['FAILED', 'PAUSED', 'IN_PROGRESS', 'STARTING', 'RUNNING'];
/** Older pages loaded with "Older deliveries" (the first page is refetched every second). */
let olderDeliveries = [];
let nextBefore = null;

const clock = (iso) => new Date(iso).toLocaleTimeString();
const failed = (o) => o !== 'success' && o !== 'in_flight';

function axes(chart, yLabels) {
  chart.append(
    svg('line', { class: 'axis', x1: PAD.l, y1: H - PAD.b, x2: W - PAD.r, y2: H - PAD.b }),
    svg('line', { class: 'axis', x1: PAD.l, y1: PAD.t, x2: PAD.l, y2: H - PAD.b }),
  );
  for (const [y, label] of yLabels)
    chart.append(svg('text', { x: PAD.l - 6, y: y + 3, 'text-anchor': 'end' }, label));
}
function timeLabels(chart, t0, t1) {
  chart.append(
    svg('text', { x: PAD.l, y: H - 8 }, clock(new Date(t0).toISOString())),
    svg('text', { x: W - PAD.r, y: H - 8, 'text-anchor': 'end' }, clock(new Date(t1).toISOString())),
  );
}

// Latency of every finished attempt, in time order; a red point is a failed attempt.
function drawLatency(deliveries) {
  const chart = $('#latency-chart');
  const pts = deliveries.filter((d) => d.durationMs !== null).reverse();
  chart.replaceChildren();
  chart.dataset.points = String(pts.length);
  const max = Math.max(1, ...pts.map((d) => d.durationMs));
  const yOf = (ms) => H - PAD.b - (ms / max) * (H - PAD.t - PAD.b);
  axes(chart, [
    [yOf(max), `${max} ms`],
    [yOf(0), '0'],
  ]);
  if (pts.length === 0) return;
  const t0 = Date.parse(pts[0].startedAt);
  const t1 = Math.max(t0 + 1, Date.parse(pts.at(-1).startedAt));
  const xOf = (iso) => PAD.l + ((Date.parse(iso) - t0) / (t1 - t0)) * (W - PAD.l - PAD.r);
  chart.append(
    svg('polyline', {
      class: 'line',
      points: pts.map((d) => `${xOf(d.startedAt).toFixed(1)},${yOf(d.durationMs).toFixed(1)}`).join(' '),
    }),
  );
  for (const d of pts) {
    const c = svg('circle', {
      class: `pt ${failed(d.outcome) ? 'fail' : 'ok'}`,
      cx: xOf(d.startedAt).toFixed(1),
      cy: yOf(d.durationMs).toFixed(1),
      r: 3.5,
      'data-delivery-id': d.deliveryId,
    });
    c.append(svg('title', {}, `${clock(d.startedAt)} · ${d.outcome} · ${d.durationMs} ms`));
    chart.append(c);
  }
  timeLabels(chart, t0, t1);
}

// The node's status as a step line, one point per change, up to now.
function drawStatus(changes) {
  const chart = $('#status-chart');
  chart.replaceChildren();
  chart.dataset.points = String(changes.length);
  const step = (H - PAD.t - PAD.b) / (STATUS_LEVELS.length - 1);
  const yOf = (status) => H - PAD.b - Math.max(0, STATUS_LEVELS.indexOf(status)) * step;
  axes(
    chart,
    STATUS_LEVELS.map((s) => [yOf(s), s]),
  );
  if (changes.length === 0) return;
  const t0 = Date.parse(changes[0].at);
  const t1 = Math.max(t0 + 1, Date.now());
  const xOf = (ms) => PAD.l + ((ms - t0) / (t1 - t0)) * (W - PAD.l - PAD.r);
  const path = [];
  changes.forEach((c, i) => {
    const x = xOf(Date.parse(c.at)).toFixed(1);
    if (i > 0) path.push(`${x},${yOf(changes[i - 1].status).toFixed(1)}`);
    path.push(`${x},${yOf(c.status).toFixed(1)}`);
  });
  path.push(`${xOf(t1).toFixed(1)},${yOf(changes.at(-1).status).toFixed(1)}`);
  chart.append(svg('polyline', { class: 'line', points: path.join(' ') }));
  for (const c of changes) {
    const p = svg('circle', {
      class: 'pt status',
      cx: xOf(Date.parse(c.at)).toFixed(1),
      cy: yOf(c.status).toFixed(1),
      r: 3.5,
      'data-status': c.status,
    });
    p.append(svg('title', {}, `${clock(c.at)} · ${c.status}`));
    chart.append(p);
  }
  timeLabels(chart, t0, t1);
}

async function redeliverAttempt(d) {
  $('#deliveries-msg').textContent = '';
  try {
    await api('POST', `/nodes/${selected.nodeId}/deliveries/${d.deliveryId}/redeliver`);
    $('#deliveries-msg').textContent =
      `Event #${d.sequence} (${d.eventStatus}) queued again with the same event id`;
  } catch (err) {
    $('#deliveries-msg').textContent = err.message;
  }
  await refreshEvents();
}

function renderDeliveries(rows) {
  $('#deliveries tbody').replaceChildren(
    ...rows.map((d) =>
      el(
        'tr',
        { 'data-delivery-id': d.deliveryId, 'data-event-id': d.eventId, 'data-outcome': d.outcome },
        el('td', {}, clock(d.startedAt)),
        el('td', {}, `#${d.sequence} `, el('span', { class: `badge ${d.eventStatus}` }, d.eventStatus)),
        el('td', {}, `#${d.attempt}`),
        el('td', {}, el('code', { title: d.keyId }, `${d.keyId.slice(0, 10)}…`)),
        el('td', {}, d.statusCode ?? '—'),
        el('td', {}, d.durationMs === null ? '—' : `${d.durationMs} ms`),
        el(
          'td',
          { class: `outcome ${d.outcome === 'success' ? 'success' : failed(d.outcome) ? 'fail' : ''}` },
          d.outcome,
          d.error ? el('div', { class: 'muted' }, d.error) : '',
        ),
        el(
          'td',
          {},
          el(
            'button',
            { type: 'button', 'data-op': 'redeliver', onclick: () => redeliverAttempt(d) },
            'Redeliver',
          ),
        ),
      ),
    ),
  );
  $('#deliveries-empty').hidden = rows.length > 0;
}

async function refreshDeliveries() {
  if (!selected) return;
  const id = selected.nodeId;
  const [page, history] = await Promise.all([
    api('GET', `/nodes/${id}/deliveries?limit=50`),
    api('GET', `/nodes/${id}/status-history?limit=200`),
  ]);
  if (selected?.nodeId !== id) return;
  const seen = new Set(page.data.map((d) => d.deliveryId));
  const rows = [...page.data, ...olderDeliveries.filter((d) => !seen.has(d.deliveryId))];
  if (olderDeliveries.length === 0) nextBefore = page.nextBefore;
  $('#deliveries-older').hidden = nextBefore === null;
  renderDeliveries(rows);
  drawLatency(rows);
  drawStatus(history.data);
}

$('#deliveries-older').addEventListener('click', async () => {
  if (!selected || nextBefore === null) return;
  try {
    const page = await api('GET', `/nodes/${selected.nodeId}/deliveries?limit=50&before=${nextBefore}`);
    olderDeliveries = [...olderDeliveries, ...page.data];
    nextBefore = page.nextBefore;
  } catch (err) {
    $('#deliveries-msg').textContent = err.message;
  }
  await refreshEvents();
});

async function refreshEvents() {
  if (!selected) return;
  try {
    await refreshDeliveries();
  } catch {
    // the node was just deleted; the next refresh closes the panel
  }
  let data;
  try {
    ({ data } = await api('GET', `/nodes/${selected.nodeId}/webhooks/events?limit=50`));
  } catch {
    return; // the node was just deleted; the next refresh closes the panel
  }
  $('#events tbody').replaceChildren(
    ...data.map((e) =>
      el(
        'tr',
        { 'data-event-id': e.eventId, 'data-sent-status': e.status },
        el('td', {}, e.sequence),
        el('td', {}, el('span', { class: `badge ${e.status}` }, e.status)),
        el(
          'td',
          {},
          el('span', { class: `state ${e.state}` }, e.state),
          e.lastError ? el('div', { class: 'muted' }, e.lastError) : '',
        ),
        el(
          'td',
          {},
          `${e.attempts}`,
          el(
            'ul',
            { class: 'attempts' },
            ...e.attemptLog.map((a) =>
              el(
                'li',
                {},
                `#${a.attempt} ${a.outcome}${a.statusCode ? ` ${a.statusCode}` : ''}${a.durationMs !== null ? ` · ${a.durationMs} ms` : ''}${a.error ? ` · ${a.error}` : ''}`,
              ),
            ),
          ),
        ),
        el('td', {}, new Date(e.createdAt).toLocaleTimeString()),
        el('td', {}, el('button', { type: 'button', onclick: () => redeliver(e.eventId) }, 'Redeliver')),
      ),
    ),
  );
}

async function refresh() {
  if ($('#app').hidden) return;
  try {
    const { data } = await api('GET', '/nodes');
    renderNodes(data);
    if (selected) await refreshEvents();
    $('#live').textContent = '● live';
  } catch (err) {
    if (err.message !== 'unauthorized') $('#live').textContent = '○ offline';
  }
}

$('#login-form').addEventListener('submit', (e) => {
  e.preventDefault();
  void signIn($('#token').value.trim());
});
$('#logout').addEventListener('click', () => signOut());
$('#create-form').addEventListener('input', () => {
  $('#create-error').textContent = '';
});
$('#create-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  $('#create-error').textContent = '';
  const webhookUrl = $('#create-webhook').value.trim();
  try {
    await api('POST', '/nodes', {
      name: $('#create-name').value.trim(),
      network: $('#create-network').value,
      ...(webhookUrl ? { settings: { webhookUrl } } : {}),
    });
    $('#create-form').reset();
  } catch (err) {
    $('#create-error').textContent = err.message;
  }
  await refresh();
});

setInterval(() => void refresh(), 1000);
if (sessionStorage.getItem(TOKEN_KEY)) void signIn(sessionStorage.getItem(TOKEN_KEY));
else signOut();
