// The hosted agents' index (docs/web.md, "Several agents"): what `serve -agents` shows at / and
// /web/. It reads the list at ../agents and each agent's card, and builds the page from DOM
// nodes and text only (never HTML). Every URL is relative to the page, so it stays on its own
// origin (the CSP allows no other) and works behind a path prefix.

const list = document.getElementById("agents");
const status = document.getElementById("status");

// el makes an element with text content and attributes.
function el(tag, text, attrs = {}) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

async function getJSON(url) {
  const res = await fetch(url, { headers: { Accept: "application/json" } });
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return res.json();
}

// card fills item with what the agent's card says: version, bindings, skills, sign-in.
async function card(item, base) {
  let c;
  try {
    c = await getJSON(base + ".well-known/agent-card.json");
  } catch (err) {
    item.append(el("p", `Its card could not be read (${err.message}).`, { class: "error" }));
    return;
  }
  const bindings = (c.supportedInterfaces ?? []).map((i) => i.protocolBinding).filter(Boolean);
  const meta = [c.version && `version ${c.version}`, bindings.length && `bindings: ${bindings.join(", ")}`,
    Object.keys(c.securitySchemes ?? {}).length ? `sign-in: ${Object.keys(c.securitySchemes).join(", ")}` : "no sign-in"];
  item.append(el("p", meta.filter(Boolean).join(" · "), { class: "meta" }));
  const skills = (c.skills ?? []).slice(0, 20);
  if (skills.length) {
    const ul = el("ul", undefined, { class: "skills", "aria-label": `skills of ${c.name ?? "the agent"}` });
    for (const s of skills) ul.append(el("li", s.description ? `${s.name}: ${s.description}` : String(s.name ?? s.id)));
    item.append(ul);
  }
}

async function main() {
  let agents;
  try {
    ({ agents } = await getJSON("../agents"));
  } catch (err) {
    status.textContent = `The list of agents could not be read (${err.message}).`;
    status.className = "error";
    document.body.dataset.state = "failed";
    return;
  }
  status.textContent = agents.length === 1 ? "1 agent" : `${agents.length} agents`;
  const cards = [];
  for (const a of agents) {
    const base = `../agents/${encodeURIComponent(a.name)}/`;
    const item = el("li", undefined, { class: "agent", "data-name": a.name });
    const h = el("h2");
    h.append(el("a", a.name, { href: base + "web/" }));
    item.append(h);
    if (a.description) item.append(el("p", a.description));
    const links = el("p", undefined, { class: "links" });
    links.append(el("a", "Chat", { href: base + "web/", "aria-label": `chat with ${a.name}` }),
      el("a", "Agent card", { href: base + ".well-known/agent-card.json", "aria-label": `agent card of ${a.name}` }));
    item.append(links);
    list.append(item);
    cards.push(card(item, base));
  }
  await Promise.all(cards);
  document.body.dataset.state = "ready";
}

main();
