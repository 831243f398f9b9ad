// Conversations and settings, kept in localStorage.

const CONVERSATIONS = 'kite.conversations';
const SETTINGS = 'kite.settings';
const API_KEY = 'kite.apiKey';
const CURRENT = 'kite.current';

// Not crypto.randomUUID: it exists only in secure contexts, and the page may be served over
// plain http on a LAN address.
const newId = () => Date.now().toString(36) + Math.random().toString(36).slice(2, 10);

function read(key, fallback) {
  try {
    const value = JSON.parse(localStorage.getItem(key));
    return value ?? fallback;
  } catch {
    return fallback;
  }
}

// The numbers of an imported reply's stats line, only where they are numbers.
function importStats(stats) {
  if (!stats || typeof stats !== 'object') return undefined;
  const out = {};
  for (const key of ['tokens', 'tokensPerSecond', 'ttft']) {
    if (Number.isFinite(stats[key])) out[key] = stats[key];
  }
  if (typeof stats.finishReason === 'string') out.finishReason = stats.finishReason;
  return out;
}

export const store = {
  conversations: read(CONVERSATIONS, []),
  settings: read(SETTINGS, { system: '' }),
  currentId: localStorage.getItem(CURRENT),

  save() {
    localStorage.setItem(CONVERSATIONS, JSON.stringify(this.conversations));
    if (this.currentId) localStorage.setItem(CURRENT, this.currentId);
  },
  saveSettings() { localStorage.setItem(SETTINGS, JSON.stringify(this.settings)); },

  current() { return this.conversations.find((c) => c.id === this.currentId) || null; },
  create() {
    const c = { id: newId(), title: 'New chat', created: Date.now(), messages: [] };
    this.conversations.unshift(c);
    this.currentId = c.id;
    this.save();
    return c;
  },
  remove(id) {
    this.conversations = this.conversations.filter((c) => c.id !== id);
    if (this.currentId === id) this.currentId = this.conversations[0]?.id || null;
    if (!this.currentId) localStorage.removeItem(CURRENT);
    this.save();
  },
  // Adds the conversations of an exported file (new ids for those already here).
  import(list) {
    if (!Array.isArray(list)) throw new Error('the file does not hold a list of conversations');
    for (const c of list) {
      if (!c || !Array.isArray(c.messages)) throw new Error('a conversation has no messages list');
      const messages = c.messages
        .filter((m) => ['system', 'user', 'assistant'].includes(m.role) && typeof m.content === 'string')
        .map((m) => ({ role: m.role, content: m.content, stats: importStats(m.stats) }));
      const id = this.conversations.some((x) => x.id === c.id) || typeof c.id !== 'string'
        ? newId() : c.id;
      this.conversations.push({ id, title: String(c.title || 'Imported'), created: Number(c.created) || Date.now(), messages });
    }
    this.save();
  },

  get apiKey() { return localStorage.getItem(API_KEY) || ''; },
  set apiKey(key) {
    if (key) localStorage.setItem(API_KEY, key);
    else localStorage.removeItem(API_KEY);
  },
};
