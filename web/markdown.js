// A small Markdown renderer that builds DOM nodes and never HTML (docs/web.md, "Rendering
// untrusted content"). It knows a fixed subset — paragraphs, line breaks, headings, emphasis,
// inline code, fenced code blocks (with a copy button), block quotes, lists, tables,
// horizontal rules and links — and renders everything else, raw HTML included, as text. Every
// string it is given reaches the page through text nodes only.

const SAFE_LINK = /^(https?:|mailto:)/i;

// safeURL returns url when it is an http:, https: or mailto: URL, else null.
export function safeURL(url) {
  try {
    const u = new URL(url, "http://relative.invalid/");
    if (u.origin === "http://relative.invalid") return null; // relative: not ours to resolve
    return SAFE_LINK.test(u.protocol) ? u.href : null;
  } catch {
    return null;
  }
}

// link returns an anchor to url opening in a new tab, or the text alone when url is unsafe.
export function link(text, url) {
  const href = safeURL(url);
  if (!href) return document.createTextNode(text);
  const a = document.createElement("a");
  a.href = href;
  a.target = "_blank";
  a.rel = "noopener noreferrer";
  a.textContent = text;
  return a;
}

function el(tag, ...children) {
  const e = document.createElement(tag);
  for (const c of children) e.append(c);
  return e;
}

// inline renders the inline Markdown of text (code spans, links, images as links, strong,
// emphasis, strikethrough, hard line breaks) into parent.
function inline(parent, text) {
  const re = /(`+)([\s\S]*?[^`])\1(?!`)|!?\[([^\]\n]*)\]\(((?:[^()\s]|\([^()\s]*\))*)(?:\s+"[^"]*")?\)|\*\*([\s\S]+?)\*\*|__([\s\S]+?)__|(?<![\p{L}\p{N}*])\*(?=[\p{L}\p{N}`(["'])([^*\n]*?[^*\s])\*(?![\p{L}\p{N}])|(?<![\p{L}\p{N}_])_(?=[\p{L}\p{N}`(["'])([^_\n]*?[^_\s])_(?![\p{L}\p{N}])|~~([\s\S]+?)~~|( {2,}|\\)\n|<(https?:\/\/[^>\s]+)>/gu;
  let last = 0;
  for (let m; (m = re.exec(text)); ) {
    if (m.index > last) parent.append(text.slice(last, m.index));
    last = re.lastIndex;
    if (m[1] !== undefined) parent.append(el("code", m[2].replace(/^ (.+) $/, "$1")));
    else if (m[4] !== undefined) {
      const label = m[3] || m[4];
      parent.append(link(m[0].startsWith("!") ? `image: ${label}` : label, m[4]));
    } else if (m[5] !== undefined || m[6] !== undefined) inline(parent.appendChild(el("strong")), m[5] ?? m[6]);
    else if (m[7] !== undefined || m[8] !== undefined) inline(parent.appendChild(el("em")), m[7] ?? m[8]);
    else if (m[9] !== undefined) inline(parent.appendChild(el("del")), m[9]);
    else if (m[10] !== undefined) parent.append(el("br"));
    else if (m[11] !== undefined) parent.append(link(m[11], m[11]));
  }
  if (last < text.length) parent.append(text.slice(last));
}

function codeBlock(code, lang) {
  const pre = el("pre");
  const c = el("code", code);
  if (lang) c.dataset.lang = lang;
  pre.append(c);
  const copy = el("button", "Copy");
  copy.type = "button";
  copy.className = "copy";
  copy.setAttribute("aria-label", "copy the code");
  copy.addEventListener("click", () => navigator.clipboard?.writeText(code));
  const wrap = el("div", pre, copy);
  wrap.className = "code";
  return wrap;
}

const cells = (row) => row.trim().replace(/^\||\|$/g, "").split("|").map((c) => c.trim());

// render returns a DocumentFragment of the Markdown text.
export function render(text) {
  const out = document.createDocumentFragment();
  blocks(out, String(text ?? "").replace(/\r\n?/g, "\n").split("\n"), 0);
  return out;
}

// blocks renders lines into parent; depth bounds nesting (quotes, lists).
function blocks(parent, lines, depth) {
  let i = 0;
  let para = [];
  const flush = () => {
    if (para.length) inline(parent.appendChild(el("p")), para.join("\n"));
    para = [];
  };
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (/^\s*$/.test(line)) {
      flush();
      i++;
    } else if ((m = /^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)/.exec(line))) {
      flush();
      const fence = m[1];
      const body = [];
      for (i++; i < lines.length && !lines[i].trimStart().startsWith(fence); i++) body.push(lines[i]);
      i++;
      parent.append(codeBlock(body.join("\n"), m[2]));
    } else if ((m = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line))) {
      flush();
      // Headings inside a message are shown one level below the page's own (h3 to h6).
      inline(parent.appendChild(el(`h${Math.min(6, m[1].length + 2)}`)), m[2]);
      i++;
    } else if (/^ {0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      parent.append(el("hr"));
      i++;
    } else if (/^ {0,3}>/.test(line)) {
      flush();
      const body = [];
      for (; i < lines.length && /^ {0,3}>/.test(lines[i]); i++) body.push(lines[i].replace(/^ {0,3}> ?/, ""));
      const q = parent.appendChild(el("blockquote"));
      if (depth < 8) blocks(q, body, depth + 1);
      else q.append(body.join("\n"));
    } else if ((m = /^( {0,3})([-*+]|\d{1,9}[.)])\s+/.exec(line))) {
      flush();
      const ordered = /\d/.test(m[2]);
      const list = parent.appendChild(el(ordered ? "ol" : "ul"));
      if (ordered && parseInt(m[2], 10) !== 1) list.start = parseInt(m[2], 10);
      const item = ordered ? /^ {0,3}\d{1,9}[.)]\s+/ : /^ {0,3}[-*+]\s+/;
      while (i < lines.length && item.test(lines[i])) {
        const body = [lines[i].replace(item, "")];
        for (i++; i < lines.length && /^ {2,}\S/.test(lines[i]) && !item.test(lines[i]); i++) body.push(lines[i].replace(/^ {2,4}/, ""));
        const li = list.appendChild(el("li"));
        if (depth < 8 && body.length > 1) blocks(li, body, depth + 1);
        else inline(li, body.join("\n"));
      }
    } else if (line.includes("|") && i + 1 < lines.length && /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/.test(lines[i + 1])) {
      flush();
      const table = parent.appendChild(el("table"));
      const head = table.appendChild(el("thead")).appendChild(el("tr"));
      for (const c of cells(line)) inline(head.appendChild(el("th")), c);
      const body = table.appendChild(el("tbody"));
      for (i += 2; i < lines.length && lines[i].includes("|") && lines[i].trim() !== ""; i++) {
        const tr = body.appendChild(el("tr"));
        for (const c of cells(lines[i])) inline(tr.appendChild(el("td")), c);
      }
    } else {
      para.push(line);
      i++;
    }
  }
  flush();
}
