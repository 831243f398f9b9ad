// The chat page: conversations, streamed replies, settings. It talks only to this server's
// OpenAI endpoints; replies are rendered through markdown.js (sanitized).
import { ApiError, listModels, streamChat } from './api.js';
import { StreamRenderer, handleCopyClick, highlightCode, renderMarkdown } from './markdown.js';
import { store } from './store.js';

const $ = (id) => document.getElementById(id);
const ui = {
  sidebar: $('sidebar'), list: $('conversations'), title: $('title'), model: $('model'),
  messages: $('messages'), error: $('error'), composer: $('composer'), input: $('input'),
  send: $('send'), stop: $('stop'), settings: $('settings'), settingsForm: $('settings-form'),
  system: $('system'), keyDialog: $('key-dialog'), keyInput: $('key-input'),
};
const NUMBER_SETTINGS = ['temperature', 'top_p', 'top_k', 'min_p', 'max_tokens', 'seed'];
const INTEGER_SETTINGS = new Set(['top_k', 'max_tokens', 'seed']);

let controller = null;  // the AbortController of the reply being streamed

function button(text, label, onClick, className = '') {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = text;
  b.setAttribute('aria-label', label);
  if (className) b.className = className;
  b.addEventListener('click', onClick);
  return b;
}

function showError(message) {
  ui.error.textContent = message;
  ui.error.hidden = !message;
}

// ---- the conversation list ----

function renderList() {
  ui.list.replaceChildren(...store.conversations.map((c) => {
    const li = document.createElement('li');
    if (c.id === store.currentId) li.className = 'current';
    li.append(
      button(c.title, `Open conversation ${c.title}`, () => openConversation(c.id), 'open'),
      button('\u270E', `Rename conversation ${c.title}`, () => renameConversation(c), 'small'),
      button('\u2715', `Delete conversation ${c.title}`, () => deleteConversation(c), 'small'));
    return li;
  }));
  ui.title.textContent = store.current()?.title || 'Kite';
}

function openConversation(id) {
  if (controller) return;
  store.currentId = id;
  store.save();
  ui.sidebar.classList.remove('open');
  showError('');
  renderAll();
}

function renameConversation(c) {
  const title = prompt('Conversation name', c.title);
  if (title === null || !title.trim()) return;
  c.title = title.trim();
  store.save();
  renderList();
}

function deleteConversation(c) {
  if (controller && c.id === store.currentId) return;
  if (!confirm(`Delete "${c.title}"?`)) return;
  store.remove(c.id);
  renderAll();
}

function exportConversations() {
  const blob = new Blob([JSON.stringify(store.conversations, null, 2)], { type: 'application/json' });
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = `kite-conversations-${new Date().toISOString().slice(0, 10)}.json`;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

async function importConversations(file) {
  try {
    store.import(JSON.parse(await file.text()));
    renderAll();
  } catch (e) {
    showError(`Import failed: ${e.message}`);
  }
}

// ---- messages ----

function messageStats(m) {
  const s = m.stats;
  if (!s) return '';
  const parts = [];
  if (s.tokens != null) parts.push(`${s.tokens} ${s.tokens === 1 ? 'token' : 'tokens'}`);
  if (s.tokensPerSecond != null) parts.push(`${s.tokensPerSecond.toFixed(1)} tokens/s`);
  if (s.ttft != null) parts.push(`first token ${Math.round(s.ttft)} ms`);
  if (s.finishReason) parts.push(`finish: ${s.finishReason}`);
  return parts.join(' \u00B7 ');
}

function messageView(m, index, conversation) {
  const view = document.createElement('article');
  view.className = `message ${m.role}`;
  view.setAttribute('aria-label', `${m.role} message`);
  const role = document.createElement('div');
  role.className = 'role';
  role.textContent = m.role === 'user' ? 'You' : 'Assistant';
  const body = document.createElement('div');
  body.className = 'body';
  if (m.role === 'user') body.textContent = m.content;
  else body.replaceChildren(renderMarkdown(m.content));
  view.append(role, body);
  if (m.error) {
    const err = document.createElement('div');
    err.className = 'message-error';
    err.setAttribute('role', 'alert');
    err.textContent = m.error;
    view.append(err);
  }
  const stats = document.createElement('div');
  stats.className = 'stats';
  stats.textContent = messageStats(m);
  view.append(stats);
  const actions = document.createElement('div');
  actions.className = 'actions';
  if (m.role === 'user') {
    actions.append(button('Edit', 'Edit this message and resend', () => editMessage(view, index)));
  } else if (index === conversation.messages.length - 1) {
    actions.append(button('Regenerate', 'Regenerate this reply', regenerate));
  }
  view.append(actions);
  return view;
}

function renderMessages() {
  const c = store.current();
  const views = (c?.messages || []).map((m, i) => messageView(m, i, c));
  ui.messages.replaceChildren(...views);
  for (const v of views) if (v.classList.contains('assistant')) highlightCode(v);
  ui.messages.scrollTop = ui.messages.scrollHeight;
}

function renderAll() {
  renderList();
  renderMessages();
}

function editMessage(view, index) {
  if (controller) return;
  const c = store.current();
  const body = view.querySelector('.body');
  const editor = document.createElement('textarea');
  editor.className = 'edit';
  editor.value = c.messages[index].content;
  editor.setAttribute('aria-label', 'Edited message');
  body.replaceChildren(editor);
  view.querySelector('.actions').replaceChildren(
    button('Save & send', 'Save the edit and resend from here', () => {
      c.messages.splice(index);
      c.messages.push({ role: 'user', content: editor.value });
      store.save();
      renderMessages();
      generate();
    }, 'primary'),
    button('Cancel', 'Cancel the edit', renderMessages));
  editor.focus();
}

function regenerate() {
  const c = store.current();
  if (controller || !c || c.messages.at(-1)?.role !== 'assistant') return;
  c.messages.pop();
  store.save();
  renderMessages();
  generate();
}

// ---- sending ----

function requestBody(conversation) {
  const s = store.settings;
  const messages = [];
  if (s.system?.trim()) messages.push({ role: 'system', content: s.system });
  for (const m of conversation.messages) {
    // A reply that failed or was stopped before its first token is not part of the chat.
    if (m.role === 'assistant' && !m.content) continue;
    messages.push({ role: m.role, content: m.content });
  }
  const body = {
    model: ui.model.value || undefined,
    messages,
    stream: true,
    stream_options: { include_usage: true },
  };
  for (const name of NUMBER_SETTINGS) if (s[name] != null) body[name] = s[name];
  // response_format (JSON output) joins here when the server has structured output.
  return body;
}

function setStreaming(on) {
  ui.send.hidden = on;
  ui.stop.hidden = !on;
}

async function send() {
  const text = ui.input.value;
  if (!text.trim() || controller) return;
  const c = store.current() || store.create();
  if (!c.messages.length) c.title = text.trim().slice(0, 40);
  c.messages.push({ role: 'user', content: text });
  store.save();
  ui.input.value = '';
  renderAll();
  await generate();
}

// Streams the assistant's reply to the current conversation. The reply's Markdown is rendered
// at most once per animation frame, however fast the tokens come.
async function generate() {
  const c = store.current();
  const request = requestBody(c);
  const reply = { role: 'assistant', content: '' };
  c.messages.push(reply);
  const view = messageView(reply, c.messages.length - 1, c);
  view.classList.add('streaming');
  ui.messages.append(view);
  const renderer = new StreamRenderer(view.querySelector('.body'));
  showError('');
  setStreaming(true);
  controller = new AbortController();
  const started = performance.now();
  let firstToken = null;
  let frame = 0;
  const paint = () => {
    frame = 0;
    const stick = ui.messages.scrollHeight - ui.messages.scrollTop - ui.messages.clientHeight < 40;
    renderer.update(reply.content);
    if (stick) ui.messages.scrollTop = ui.messages.scrollHeight;
  };
  try {
    const result = await streamChat(request, store.apiKey, controller.signal, (text) => {
      firstToken ??= performance.now();
      reply.content += text;
      frame ||= requestAnimationFrame(paint);
    });
    const end = performance.now();
    const tokens = result.usage?.completion_tokens;
    reply.stats = {
      tokens,
      ttft: firstToken != null ? firstToken - started : null,
      // The decode rate: the tokens after the first over the time after the first.
      tokensPerSecond: tokens > 1 && firstToken != null && end > firstToken
        ? (tokens - 1) / ((end - firstToken) / 1000) : null,
      finishReason: result.finishReason,
    };
  } catch (e) {
    if (e.name === 'AbortError') {
      reply.stats = { ttft: firstToken != null ? firstToken - started : null, finishReason: 'stopped' };
    } else if (e instanceof ApiError && e.status === 401) {
      c.messages.pop();
      view.remove();
      finishStreaming();
      if (await askForKey()) return generate();
      showError('The server needs an API key.');
      renderMessages();
      return;
    } else {
      reply.error = e.message;
    }
  }
  cancelAnimationFrame(frame);
  finishStreaming();
  if (!reply.content && !reply.error && reply.stats?.finishReason !== 'stopped') reply.error = 'The reply was empty.';
  store.save();
  renderMessages();
}

function finishStreaming() {
  controller = null;
  setStreaming(false);
}

function stop() {
  controller?.abort();
}

// ---- API key ----

function askForKey() {
  ui.keyInput.value = store.apiKey;
  ui.keyDialog.showModal();
  return new Promise((resolve) => {
    ui.keyDialog.addEventListener('close', () => {
      const save = ui.keyDialog.returnValue === 'save' && ui.keyInput.value.trim();
      if (save) store.apiKey = ui.keyInput.value.trim();
      resolve(Boolean(save));
    }, { once: true });
  });
}

async function loadModels() {
  try {
    const models = await listModels(store.apiKey);
    ui.model.replaceChildren(...models.map((id) => new Option(id, id)));
    if (store.settings.model && models.includes(store.settings.model)) ui.model.value = store.settings.model;
  } catch (e) {
    if (e instanceof ApiError && e.status === 401 && await askForKey()) return loadModels();
    showError(`Could not list the models: ${e.message}`);
  }
}

// ---- settings ----

function fillSettings() {
  const s = store.settings;
  ui.system.value = s.system || '';
  for (const name of NUMBER_SETTINGS) ui.settingsForm.elements[name].value = s[name] ?? '';
}

function readSettings() {
  const s = store.settings;
  s.system = ui.system.value;
  for (const name of NUMBER_SETTINGS) {
    const raw = ui.settingsForm.elements[name].value.trim();
    const value = INTEGER_SETTINGS.has(name) ? parseInt(raw, 10) : parseFloat(raw);
    if (raw === '' || Number.isNaN(value)) delete s[name];
    else s[name] = value;
  }
  store.saveSettings();
}

// ---- wiring ----

function wire() {
  ui.composer.addEventListener('submit', (e) => { e.preventDefault(); send(); });
  ui.input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    }
  });
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && controller) stop(); });
  ui.stop.addEventListener('click', stop);
  $('new-chat').addEventListener('click', () => {
    if (controller) return;
    store.create();
    renderAll();
    ui.sidebar.classList.remove('open');
    ui.input.focus();
  });
  $('toggle-sidebar').addEventListener('click', () => ui.sidebar.classList.toggle('open'));
  $('export').addEventListener('click', exportConversations);
  $('import').addEventListener('click', () => $('import-file').click());
  $('import-file').addEventListener('change', (e) => {
    if (e.target.files[0]) importConversations(e.target.files[0]);
    e.target.value = '';
  });
  $('open-settings').addEventListener('click', () => { fillSettings(); ui.settings.showModal(); });
  ui.settings.addEventListener('close', readSettings);
  ui.settingsForm.addEventListener('input', readSettings);
  $('clear-key').addEventListener('click', () => { store.apiKey = ''; });
  ui.model.addEventListener('change', () => {
    store.settings.model = ui.model.value;
    store.saveSettings();
  });
  ui.messages.addEventListener('click', handleCopyClick);
}

// For tests and the curious: the renderer that replies go through.
window.kite = { renderMarkdown, store };

wire();
renderAll();
loadModels();
ui.input.focus();
