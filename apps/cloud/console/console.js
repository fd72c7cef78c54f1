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

async function refreshEvents() {
  if (!selected) return;
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
