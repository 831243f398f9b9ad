// Markdown to safe DOM. Model output is untrusted: marked turns it into HTML, raw HTML in it is
// shown as text, and DOMPurify keeps only formatting tags, no attributes that run code, and links
// to http, https and mailto only. The page's Content-Security-Policy is the second wall.

const ALLOWED_TAGS = ['p', 'br', 'hr', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'ul', 'ol', 'li',
  'blockquote', 'pre', 'code', 'em', 'strong', 'del', 's', 'a', 'table', 'thead', 'tbody', 'tr',
  'th', 'td', 'span'];
const PURIFY_CONFIG = {
  ALLOWED_TAGS,
  ALLOWED_ATTR: ['href', 'title', 'class', 'align', 'start'],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
  FORBID_TAGS: ['script', 'iframe', 'img', 'style', 'object', 'embed', 'form', 'svg', 'math'],
  FORBID_ATTR: ['style', 'src', 'srcset', 'action', 'formaction'],
  ALLOW_DATA_ATTR: false,
  RETURN_DOM_FRAGMENT: true,
};

const escapeHtml = (s) => s.replace(/[&<>"']/g,
  (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

let configured = false;
function configure() {
  if (configured) return;
  configured = true;
  window.marked.use({
    gfm: true,
    renderer: {
      html: (html) => escapeHtml(typeof html === 'string' ? html : html.text),
      // No images: the page loads nothing a reply names; the alt text stands in.
      image: (href, title, text) => escapeHtml(text || ''),
    },
  });
  window.DOMPurify.addHook('afterSanitizeAttributes', (node) => {
    for (const attr of [...node.attributes]) {
      if (/^on/i.test(attr.name)) node.removeAttribute(attr.name);
    }
    if (node.tagName === 'A') {
      if (!node.hasAttribute('href')) return;
      node.setAttribute('target', '_blank');
      node.setAttribute('rel', 'noopener noreferrer nofollow');
    }
  });
}

// Wraps each code block in a frame with its language and a copy button.
function frameCodeBlocks(fragment) {
  for (const pre of fragment.querySelectorAll('pre')) {
    const code = pre.querySelector('code');
    const lang = (code?.className.match(/language-([\w+#.-]+)/) || [])[1] || '';
    const frame = document.createElement('div');
    frame.className = 'codeblock';
    const bar = document.createElement('div');
    bar.className = 'codebar';
    const label = document.createElement('span');
    label.className = 'lang';
    label.textContent = lang || 'text';
    const copy = document.createElement('button');
    copy.type = 'button';
    copy.className = 'copy';
    copy.textContent = 'Copy';
    copy.setAttribute('aria-label', `Copy ${lang || 'code'}`);
    bar.append(label, copy);
    pre.replaceWith(frame);
    frame.append(bar, pre);
  }
}

// The sanitized DOM fragment for a Markdown text.
export function renderMarkdown(text) {
  configure();
  const fragment = window.DOMPurify.sanitize(window.marked.parse(text), PURIFY_CONFIG);
  frameCodeBlocks(fragment);
  return fragment;
}

let hljsLoading = null;
function loadHighlighter() {
  hljsLoading ??= new Promise((resolve) => {
    const script = document.createElement('script');
    script.src = '/assets/vendor/highlight.min.js';
    script.onload = () => resolve(window.hljs);
    script.onerror = () => resolve(null);
    document.head.append(script);
  });
  return hljsLoading;
}

// Colors the code blocks of a finished reply (highlight.js escapes what it returns).
export async function highlightCode(root) {
  const blocks = [...root.querySelectorAll('.codeblock code')];
  const known = blocks.filter((c) => /language-/.test(c.className));
  if (!known.length) return;
  const hljs = await loadHighlighter();
  if (!hljs) return;
  for (const code of known) {
    const lang = code.className.match(/language-([\w+#.-]+)/)[1];
    if (!hljs.getLanguage(lang)) continue;
    code.innerHTML = hljs.highlight(lang, code.textContent, true).value;
  }
}

// Copy buttons work through one listener on the message list.
export function handleCopyClick(event) {
  const button = event.target.closest('.codeblock .copy');
  if (!button) return;
  const text = button.closest('.codeblock').querySelector('code').textContent;
  navigator.clipboard?.writeText(text).then(() => {
    button.textContent = 'Copied';
    setTimeout(() => { button.textContent = 'Copy'; }, 1200);
  }, () => { button.textContent = 'Copy failed'; });
}

// Renders a reply as it streams without parsing it all again for each update: the blocks
// that a later block has closed are rendered once and kept; only the open last block is
// rendered again. (A few constructs that a later block changes, such as a list that
// continues after a blank line, may look split until the reply ends and is rendered whole.)
export class StreamRenderer {
  constructor(root) {
    this.done = 0;  // characters of the text already rendered into this.closed
    this.closed = document.createElement('div');
    this.open = document.createElement('div');
    this.closed.className = 'md-part';
    this.open.className = 'md-part';
    root.replaceChildren(this.closed, this.open);
  }

  update(text) {
    configure();
    const tail = text.slice(this.done);
    const tokens = window.marked.lexer(tail);
    let last = tokens.length - 1;
    while (last >= 0 && tokens[last].type === 'space') last--;
    const closedRaw = tokens.slice(0, Math.max(0, last)).map((t) => t.raw).join('');
    // The lexer turns \r\n into \n; then the raw lengths do not count the text: keep it open.
    if (closedRaw && tail.startsWith(closedRaw)) {
      this.closed.append(renderMarkdown(closedRaw));
      this.done += closedRaw.length;
    }
    this.open.replaceChildren(renderMarkdown(text.slice(this.done)));
  }
}
