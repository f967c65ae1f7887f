// The web app (docs/web.md): a chat with the agent over the capnweb binding. State lives in
// this module; conn.js owns the connection, markdown.js renders the agent's text. Nothing the
// agent or the network sends is ever assigned as HTML: every node is built here, text goes
// through textContent (or text nodes), Markdown through markdown.js.

import { Conn, ConnectionLost, headersFor } from "./conn.js";
import { link, render } from "./markdown.js";

const $ = (sel) => document.querySelector(sel);
const SEQ = "a2awebcap.seq";
const LOG = "a2awebcap.agent/log";
const APPROVAL = "a2awebcap.agent/approval";
const MEMORY_EXT = "urn:a2awebcap:memory:v1";
const SESSIONS_EXT = "urn:a2awebcap:sessions:v1";
const OPERATOR_EXT = "urn:a2awebcap:operator:v1";
const FINAL = new Set(["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"]);
const INTERRUPTED = new Set(["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"]);
const TAGS = {
  TASK_STATE_FAILED: "failed",
  TASK_STATE_CANCELED: "canceled",
  TASK_STATE_REJECTED: "rejected",
  TASK_STATE_INPUT_REQUIRED: "needs your answer",
  TASK_STATE_AUTH_REQUIRED: "needs authorization",
};

// el builds an element: el("p", {className: "x", dataset: {k: v}}, "text", child…). Strings
// become text nodes.
function el(tag, props, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props ?? {})) {
    if (k === "dataset") Object.assign(e.dataset, v);
    else if (k.startsWith("aria-") || k === "role" || k === "for") e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

const stateName = (s) => String(s ?? "").replace(/^TASK_STATE_/, "").toLowerCase().replace(/_/g, "-");
const seqOf = (obj) => Number(obj?.metadata?.[SEQ] ?? 0);
const textOf = (m) =>
  (m?.parts ?? [])
    .map((p) => p.text)
    .filter((t) => typeof t === "string")
    .join("\n");
const when = (ts) => {
  if (!ts) return "";
  const d = new Date(ts);
  return isNaN(d) ? "" : d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" });
};
// seconds shows a ProtoJSON duration ("0.969223056s") to the hundredth of a second.
const seconds = (d) => (/^\d+(\.\d+)?s$/.test(d ?? "") ? `${Number(d.slice(0, -1)).toFixed(2)} s` : "-");
const errorText = (err) => (err?.reason ? `${err.reason}: ${err.message}` : String(err?.message ?? err));

// --- app state ---------------------------------------------------------------------------

const app = {
  conn: null,
  contextId: null, // the open conversation; null for a new one
  turns: new Map(), // task ID → Turn of the open conversation
  waiting: null, // the Turn waiting for the user's answer (input-required), if any
  artifacts: new Map(), // artifact ID → {taskId, artifact} of the open conversation
  // loaded settles once what the page is loading into the transcript (the conversation named
  // by the URL at start, or one being opened) is there. A message typed meanwhile is sent only
  // then: sent earlier, it went to no conversation (or the one being left), and the load,
  // clearing the transcript, wiped its bubble or rebuilt it as a second Turn of the same task.
  loaded: Promise.resolve(),
};

// loading makes app.loaded wait for p too, and returns p.
function loading(p) {
  app.loaded = Promise.all([app.loaded, p]).then(
    () => {},
    () => {},
  );
  return p;
}

// loaded resolves once app.loaded has, and every load begun meanwhile too (the page's start
// begins when reading the card ends).
async function loaded() {
  for (let p = null; p !== app.loaded; ) {
    p = app.loaded;
    await p;
  }
}

function announce(text) {
  const a = $("#announce");
  a.textContent = "";
  a.textContent = text;
}

function setStatus(text) {
  $("#status").textContent = text;
}

// --- parts -------------------------------------------------------------------------------

function b64ToBytes(b64) {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

// partNode renders one non-text part: a file as a download chip, data as collapsible JSON.
function partNode(p) {
  if (p.data !== undefined) {
    return el("details", { className: "data" }, el("summary", null, "data"), el("pre", { className: "json" }, JSON.stringify(p.data, null, 2)));
  }
  const name = p.filename || "file";
  if (typeof p.raw === "string") {
    const a = el("a", { className: "chip file", download: name }, `⬇ ${name}`);
    try {
      a.href = URL.createObjectURL(new Blob([b64ToBytes(p.raw)], { type: "application/octet-stream" }));
    } catch {
      a.removeAttribute("download");
    }
    return a;
  }
  if (typeof p.url === "string") {
    const n = link(`⬇ ${name}`, p.url);
    if (n.classList) n.classList.add("chip", "file");
    return n;
  }
  return null;
}

// partsNode renders parts: text as Markdown, others as partNode.
function partsNode(parts) {
  const f = document.createDocumentFragment();
  for (const p of parts ?? []) {
    if (typeof p.text === "string") f.append(render(p.text));
    else {
      const n = partNode(p);
      if (n) f.append(n);
    }
  }
  return f;
}

// --- turns -------------------------------------------------------------------------------

function userBubble(parts) {
  const b = el("article", { className: "bubble user", "aria-label": "you" }, partsNode(parts));
  $("#transcript").append(b);
  return b;
}

// Turn is one task of the conversation as the transcript shows it: the agent's bubble (which
// grows as the answer streams), its state tag, its steps, its artifacts' chips.
// turnOf finds the Turn that owns a bubble element.
const turnOf = new WeakMap();

class Turn {
  constructor() {
    this.id = null;
    this.contextId = null;
    this.seq = 0;
    this.state = "";
    this.answer = ""; // the streamed "answer" artifact's text
    this.shown = ""; // the text the bubble shows
    this.started = null;
    this.updated = null;
    this.ended = false;
    this.answered = false; // its question was answered: a new Turn shows the rest of the task
    this.gone = false; // its conversation left the transcript
    this.body = el("div", { className: "body" });
    this.tag = el("span", { className: "tag", hidden: true });
    this.stepList = el("ol");
    this.stepCount = el("span", null, "0 steps");
    this.steps = el("details", { className: "steps", hidden: true }, el("summary", null, this.stepCount), this.stepList);
    this.chips = el("div", { className: "chips" });
    this.extra = el("div", { className: "extra" });
    this.cancelButton = el("button", { type: "button", className: "cancel", hidden: true }, "Cancel");
    this.cancelButton.addEventListener("click", () => cancel(this));
    this.el = el("article", { className: "bubble agent", "aria-label": "agent", dataset: { state: "" } }, this.body, this.extra, this.chips, el("div", { className: "meta" }, this.tag, this.steps, this.cancelButton));
    turnOf.set(this.el, this);
    $("#transcript").append(this.el);
  }

  setText(text) {
    if (text === this.shown) return;
    this.shown = text;
    this.body.replaceChildren(render(text));
  }

  step(text) {
    if (!text) return;
    this.stepList.append(el("li", null, text));
    const n = this.stepList.children.length;
    this.stepCount.textContent = `${n} step${n === 1 ? "" : "s"}`;
    this.steps.hidden = false;
  }

  setState(state, ts) {
    this.state = state;
    this.el.dataset.state = stateName(state);
    if (ts) {
      this.updated = ts;
      this.started ??= ts;
    }
    const tag = TAGS[state] ?? (FINAL.has(state) || state === "" ? "" : stateName(state));
    this.tag.textContent = tag;
    this.tag.hidden = tag === "";
    const running = !FINAL.has(state) && !INTERRUPTED.has(state) && this.id !== null;
    this.cancelButton.hidden = !running;
    if (running) this.el.setAttribute("aria-busy", "true");
    else this.el.removeAttribute("aria-busy");
    if (!$("#all-tasks").checked) taskRow(this);
  }

  named(task) {
    if (this.id === null && task.id) {
      this.id = task.id;
      this.el.dataset.task = task.id;
      app.turns.set(task.id, this);
    }
    this.contextId ??= task.contextId;
    if (task.contextId && app.contextId !== task.contextId) {
      const fresh = app.contextId === null;
      openedContext(task.contextId);
      if (fresh) refreshConversations(); // a new conversation: list it at once
    }
  }

  // stale says that what this Turn's stream still says must not be shown: its question was
  // answered (a new Turn shows the rest), or its conversation left the transcript.
  get stale() {
    return this.answered || this.gone;
  }

  // event takes one StreamResponse; events already seen (by sequence number) are skipped.
  event(ev) {
    if (this.stale) return;
    const inner = ev.task ?? ev.statusUpdate ?? ev.artifactUpdate ?? ev.message;
    const seq = seqOf(inner);
    if (seq > 0 && seq <= this.seq) return;
    if (seq > 0) this.seq = seq;
    if (ev.task) this.fromTask(ev.task, true);
    else if (ev.artifactUpdate) this.artifact(ev.artifactUpdate);
    else if (ev.statusUpdate) this.status(ev.statusUpdate.status, ev.statusUpdate.metadata);
    else if (ev.message) {
      if (this.id === null && this.shown === "") {
        this.named({ contextId: ev.message.contextId });
        this.body.replaceChildren(partsNode(ev.message.parts));
        this.shown = textOf(ev.message);
        this.end("");
      } else {
        const b = el("article", { className: "bubble agent" }, partsNode(ev.message.parts));
        this.el.after(b);
      }
    }
  }

  // fromTask shows a task snapshot (the stream's first event, or a listed task).
  fromTask(task, live) {
    if (this.stale) return;
    this.named(task);
    for (const a of task.artifacts ?? []) this.artifact({ artifact: a, append: false });
    if (!live || task.status?.message) this.status(task.status ?? {}, null);
    else this.setState(task.status?.state ?? "", task.status?.timestamp);
    if (live && task.status?.state === "TASK_STATE_SUBMITTED") setStatus("Submitted.");
  }

  artifact(update) {
    const a = update.artifact ?? {};
    const text = textOf(a);
    if (a.name === "answer") {
      this.answer = update.append ? this.answer + text : text;
      this.setText(this.answer);
      return;
    }
    if (/ result$/.test(a.name ?? "")) {
      this.step(text || a.name);
      return;
    }
    const known = app.artifacts.get(a.artifactId);
    if (known && update.append) known.artifact.parts = [...(known.artifact.parts ?? []), ...(a.parts ?? [])];
    else app.artifacts.set(a.artifactId, { taskId: this.id, artifact: structuredClone(a) });
    if (!known) {
      const chip = el("button", { type: "button", className: "chip", dataset: { artifact: a.artifactId } }, a.name || "artifact");
      chip.addEventListener("click", () => showArtifact(a.artifactId));
      this.chips.append(chip);
    }
    renderArtifacts();
  }

  status(s, meta) {
    const state = s.state ?? "";
    const text = textOf(s.message);
    if (!FINAL.has(state) && !INTERRUPTED.has(state)) {
      const log = meta?.[LOG];
      const line = text || (log ? [log.rule, log.action].filter(Boolean).join(": ") : "");
      if (line) {
        setStatus(line);
        this.step(line);
      }
      this.setState(state, s.timestamp);
      return;
    }
    if (text && text.trim() !== this.answer.trim()) this.setText(text);
    else if (!text && this.shown === "" && state !== "TASK_STATE_COMPLETED") this.setText(stateName(state));
    this.setState(state, s.timestamp);
    const approval = s.message?.metadata?.[APPROVAL];
    if (state === "TASK_STATE_INPUT_REQUIRED" && approval) this.approvalCard(approval);
    this.end(state);
  }

  // fill shows, in a bubble the task ended without a word in, its first artifact.
  fill() {
    if (this.shown !== "" || this.body.childNodes.length > 0) return;
    const first = [...app.artifacts.values()].find((x) => x.taskId === this.id);
    if (first) this.body.replaceChildren(partsNode(first.artifact.parts));
  }

  end(state) {
    if (this.stale) return;
    setStatus("");
    this.fill();
    this.ended = FINAL.has(state) || state === "";
    if (INTERRUPTED.has(state)) {
      app.waiting = this;
      $("#text").placeholder = "Answer the agent…";
      $("#composer").dataset.answering = this.id;
    } else if (app.waiting === this) {
      stopWaiting();
    }
    announce(this.body.textContent.trim());
    refreshConversations();
    if ($("#all-tasks").checked) refreshTasks();
  }

  // approvalCard shows a pending capability approval with Approve and Refuse, each answering
  // the same task as any binding would ("yes", "no: reason").
  approvalCard(a) {
    const reason = el("input", { type: "text", placeholder: "reason (optional)", "aria-label": "reason for refusing" });
    const approve = el("button", { type: "button", className: "approve" }, "Approve");
    const refuse = el("button", { type: "button", className: "refuse" }, "Refuse");
    const rows = [
      ["wants", a.kind === "call" ? `to call ${a.capability}.${a.method}` : `${a.kind ?? ""} ${a.capability ?? ""}`.trim()],
      ["arguments", a.args === undefined ? "" : JSON.stringify(a.args, null, 2)],
      ["contract", a.contract === undefined ? "" : JSON.stringify(a.contract, null, 2)],
    ].filter(([, v]) => v);
    const card = el(
      "div",
      { className: "approval", role: "group", "aria-label": "capability approval" },
      el("dl", null, ...rows.flatMap(([k, v]) => [el("dt", null, k), el("dd", null, el("pre", null, v))])),
      reason,
      approve,
      refuse,
    );
    const answer = (text) => {
      card.querySelectorAll("button,input").forEach((b) => (b.disabled = true));
      send([{ text }], this);
    };
    approve.addEventListener("click", () => answer("yes"));
    refuse.addEventListener("click", () => answer(reason.value.trim() ? `no: ${reason.value.trim()}` : "no"));
    this.extra.replaceChildren(card);
  }

  // failed shows why the agent did not take the message: an A2A error's message (the agent
  // refused it: "refused"), or what went wrong ("error").
  failed(err) {
    if (this.stale) return;
    this.setText(err?.code !== undefined ? String(err.message) : `Error: ${errorText(err)}`);
    this.tag.textContent = err?.code !== undefined ? "refused" : "error";
    this.tag.hidden = false;
    this.cancelButton.hidden = true;
    this.el.dataset.state = "error";
    this.el.removeAttribute("aria-busy");
    setStatus("");
  }
}

function stopWaiting() {
  app.waiting = null;
  $("#text").placeholder = "Message…";
  delete $("#composer").dataset.answering;
}

// --- streams -----------------------------------------------------------------------------

// follow runs a stream into turn: start(session, observer) starts it; when the connection
// breaks, it resubscribes to the task with Last-Event-ID on the next connection.
async function follow(turn, start) {
  app.conn.following++;
  try {
    for (;;) {
      try {
        const final = await app.conn.call((s) => start(s, (ev) => turn.event(ev)));
        if (final?.task) {
          turn.fromTask(final.task, false);
          if (!turn.ended && !INTERRUPTED.has(turn.state)) turn.end(turn.state);
        } else if (final?.message && turn.shown === "") turn.event({ message: final.message });
        return;
      } catch (err) {
        if (!(err instanceof ConnectionLost) || turn.id === null) throw err;
        if (turn.ended || turn.gone || INTERRUPTED.has(turn.state)) return; // its last event came, or no one shows it: nothing to resume
        const params = turn.seq > 0 ? { "Last-Event-ID": String(turn.seq) } : undefined;
        start = (s, obs) => s.subscribeToTask({ id: turn.id }, obs, params);
      }
    }
  } catch (err) {
    turn.failed(err);
  } finally {
    app.conn.following--;
  }
}

// send sends parts: to the waiting task (its answer), or as a new task of the conversation.
function send(parts, answering) {
  const target = answering ?? app.waiting;
  const message = { messageId: crypto.randomUUID(), role: "ROLE_USER", parts };
  if (app.contextId) message.contextId = app.contextId;
  if (target?.id) {
    message.taskId = target.id;
    message.contextId = target.contextId ?? app.contextId;
    stopWaiting();
  }
  const bubble = userBubble(parts);
  let turn = target;
  if (turn) {
    // The same task goes on: its answer is a new bubble after the user's, in the same turn.
    // The question is answered: it no longer asks — in every bubble of the task that asks.
    const asking = [...document.querySelectorAll("#transcript .bubble.agent")].filter((b) => b.dataset.task === target.id || b === target.el);
    for (const b of asking) {
      const t = turnOf.get(b);
      if (t) t.answered = true;
      b.removeAttribute("data-task");
      b.dataset.state = "answered";
      b.querySelector(".tag")?.setAttribute("hidden", "");
      b.querySelectorAll(".extra button, .extra input").forEach((x) => (x.disabled = true));
    }
    turn.answered = true;
    turn.el.removeAttribute("data-task");
    turn.el.dataset.state = "answered";
    turn.tag.hidden = true;
    turn.extra.querySelectorAll("button, input").forEach((b) => (b.disabled = true));
    turn = Object.assign(new Turn(), { id: target.id, contextId: target.contextId, seq: target.seq });
    turn.el.dataset.task = target.id;
    app.turns.set(target.id, turn);
  } else turn = new Turn();
  bubble.after(turn.el);
  turn.setState("TASK_STATE_SUBMITTED");
  setStatus("Sending…");
  return follow(turn, (s, obs) => s.sendStreamingMessage({ message }, obs));
}

async function cancel(task) {
  if (!task.id) return;
  try {
    await app.conn.call((s) => s.cancelTask({ id: task.id }));
  } catch (err) {
    setStatus(`Cancel: ${errorText(err)}`);
  }
  if ($("#all-tasks").checked) refreshTasks();
}

// --- conversations -----------------------------------------------------------------------

function openedContext(contextId) {
  app.contextId = contextId;
  if (location.hash !== `#c=${encodeURIComponent(contextId)}`) history.replaceState(null, "", `#c=${encodeURIComponent(contextId)}`);
  for (const li of document.querySelectorAll("#conversations li")) li.toggleAttribute("aria-current", li.dataset.context === contextId);
}

function clearConversation() {
  // The Turns leaving the transcript stop painting: their streams may still run.
  for (const b of document.querySelectorAll("#transcript .bubble.agent")) {
    const t = turnOf.get(b);
    if (t) t.gone = true;
  }
  app.turns.clear();
  app.artifacts.clear();
  stopWaiting();
  $("#transcript").replaceChildren();
  $("#task-list").replaceChildren();
  renderArtifacts();
  setStatus("");
}

function newChat() {
  clearConversation();
  app.contextId = null;
  history.replaceState(null, "", location.pathname);
  for (const li of document.querySelectorAll("#conversations li")) li.removeAttribute("aria-current");
  refreshSide();
  $("#text").focus();
}

// openConversation loads contextId's transcript: each task's history as bubbles (the user's
// messages, each followed by the agent's last message before the next), its artifacts as
// chips, a running task followed.
function openConversation(contextId) {
  return loading(loadConversation(contextId));
}

async function loadConversation(contextId) {
  clearConversation();
  openedContext(contextId);
  let tasks;
  try {
    const res = await app.conn.call((s) => s.listTasks({ contextId, includeArtifacts: true, pageSize: 100 }));
    tasks = (res.tasks ?? []).sort((a, b) => (a.id < b.id ? -1 : 1));
  } catch (err) {
    setStatus(`Could not load the conversation: ${errorText(err)}`);
    return;
  }
  if (app.contextId !== contextId) return; // another was opened meanwhile
  for (const task of tasks) {
    const segments = [];
    for (const m of task.history ?? []) {
      if (m.role === "ROLE_USER") segments.push({ user: m, agent: null });
      else if (segments.length) segments[segments.length - 1].agent = m;
    }
    if (segments.length === 0) segments.push({ user: null, agent: null });
    segments.forEach((seg, i) => {
      if (seg.user) userBubble(seg.user.parts);
      if (i < segments.length - 1) {
        if (seg.agent) $("#transcript").append(el("article", { className: "bubble agent" }, partsNode(seg.agent.parts)));
        return;
      }
      const turn = new Turn();
      turn.fromTask(task, false);
      if (!task.status?.message && seg.agent && turn.shown === "") turn.setText(textOf(seg.agent));
      if (INTERRUPTED.has(task.status?.state)) turn.end(task.status.state);
      // A running task is followed from the start of its event log ("Last-Event-ID": "0"):
      // the bubble is rebuilt from its events, then grows with the live ones, and a task that
      // ends before the subscription reaches the server still shows its end.
      else if (!FINAL.has(task.status?.state)) follow(turn, (s, obs) => s.subscribeToTask({ id: task.id }, obs, { "Last-Event-ID": "0" }));
      else {
        turn.ended = true;
        turn.fill();
      }
    });
  }
  refreshSide();
}

// refreshConversations lists the caller's contexts, most recently used first, each titled by
// its first message.
async function refreshConversations() {
  let res;
  try {
    res = await app.conn.call((s) => s.listTasks({ pageSize: 100 }));
  } catch {
    return;
  }
  const byContext = new Map();
  for (const t of res.tasks ?? []) {
    const c = byContext.get(t.contextId) ?? { id: t.contextId, first: t, last: t };
    if (t.id < c.first.id) c.first = t;
    byContext.set(t.contextId, c);
  }
  // With the sessions extension, a conversation's own state (collapsed, waiting…) is known.
  const sessionState = new Map();
  if ((app.conn.card.capabilities?.extensions ?? []).some((x) => x.uri === SESSIONS_EXT)) {
    try {
      const r = await app.conn.call((s) => s.listSessions({ pageSize: 100 }));
      for (const m of r.sessions ?? []) sessionState.set(m.id, m.state);
    } catch {
      // the list stands without
    }
  }
  const list = $("#conversations");
  list.replaceChildren();
  for (const c of byContext.values()) {
    const first = (c.first.history ?? []).find((m) => m.role === "ROLE_USER");
    const title = (textOf(first) || "(no text)").slice(0, 60);
    const state = sessionState.get(c.id) === "collapsed" ? "collapsed" : stateName(c.last.status?.state);
    const b = el("button", { type: "button" }, el("span", { className: "title" }, title), el("span", { className: "sub" }, `${state} · ${when(c.last.status?.timestamp)}`));
    b.addEventListener("click", () => {
      document.body.classList.remove("nav-open");
      openConversation(c.id);
    });
    const li = el("li", { dataset: { context: c.id } }, b);
    if (c.id === app.contextId) li.setAttribute("aria-current", "true");
    list.append(li);
  }
}

// --- side panel --------------------------------------------------------------------------

// startedAt is when a task was created, read from its ID (a UUIDv7 starts with its creation
// time in milliseconds), or "" for an ID of another kind.
function startedAt(id) {
  const hex = String(id ?? "").replace(/-/g, "");
  if (hex.length !== 32 || hex[12] !== "7") return "";
  return new Date(parseInt(hex.slice(0, 12), 16)).toISOString();
}

// taskRow shows (or updates) the Tasks tab's row of one task: {id, contextId, state,
// updated}; a running one can be canceled from there.
function taskRow(t) {
  if (!t.id) return;
  let row = document.querySelector(`#task-list tr[data-task="${CSS.escape(t.id)}"]`);
  if (!row) {
    const cancelB = el("button", { type: "button", className: "cancel", "aria-label": `cancel task ${t.id.slice(-8)}` }, "Cancel");
    cancelB.addEventListener("click", () => cancel(t));
    const id = el("td", { className: "id" }, t.id.slice(-8));
    if (t.contextId && t.contextId !== app.contextId) {
      const open = el("a", { href: `#c=${encodeURIComponent(t.contextId)}` }, t.id.slice(-8));
      id.replaceChildren(open);
    }
    row = el("tr", { dataset: { task: t.id } }, id, el("td", { className: "state" }), el("td", { className: "started" }, when(startedAt(t.id))), el("td", { className: "updated" }), el("td", null, cancelB));
    $("#task-list").append(row);
  }
  row.querySelector(".state").textContent = stateName(t.state);
  row.querySelector(".updated").textContent = when(t.updated);
  row.querySelector(".cancel").hidden = FINAL.has(t.state) || INTERRUPTED.has(t.state);
}

// refreshTasks lists, with "all conversations" checked, the caller's tasks of every
// conversation, most recently changed first; else the open conversation's, as its turns show.
async function refreshTasks() {
  $("#task-list").replaceChildren();
  if (!$("#all-tasks").checked) {
    for (const turn of new Set(app.turns.values())) taskRow(turn);
    return;
  }
  try {
    const res = await app.conn.call((s) => s.listTasks({ pageSize: 100, historyLength: 0 }));
    $("#task-list").replaceChildren();
    for (const t of res.tasks ?? []) taskRow({ id: t.id, contextId: t.contextId, state: t.status?.state, updated: t.status?.timestamp });
  } catch (err) {
    setStatus(`Tasks: ${errorText(err)}`);
  }
}

function renderArtifacts() {
  const list = $("#artifact-list");
  list.replaceChildren();
  for (const [id, { taskId, artifact }] of [...app.artifacts].reverse()) {
    list.append(el("li", { dataset: { artifact: id } }, el("h3", null, artifact.name || "artifact"), el("p", { className: "sub" }, `task …${String(taskId ?? "").slice(-8)}`), partsNode(artifact.parts)));
  }
}

function showArtifact(id) {
  selectTab("artifacts");
  document.body.classList.add("side-open");
  document.querySelector(`#artifact-list li[data-artifact="${CSS.escape(id)}"]`)?.scrollIntoView();
}

function selectTab(name) {
  for (const t of document.querySelectorAll("[role=tab]")) {
    const on = t.dataset.tab === name;
    t.setAttribute("aria-selected", String(on));
    t.tabIndex = on ? 0 : -1;
    $(`#tab-${t.dataset.tab}`).hidden = !on;
  }
  refreshSide();
}

function currentTab() {
  return document.querySelector("[role=tab][aria-selected=true]")?.dataset.tab ?? "tasks";
}

function refreshSide() {
  switch (currentTab()) {
    case "tasks":
      return $("#all-tasks").checked ? refreshTasks() : undefined;
    case "memory":
      return refreshMemory();
    case "session":
      return refreshSession();
    case "capabilities":
      return refreshCapabilities();
    case "operator":
      return refreshOperator();
  }
}

// Memory: what the agent remembers about the signed-in user, with provenance, and forget.
async function refreshMemory() {
  const box = $("#memory");
  let mem;
  try {
    mem = await app.conn.call((s) => s.memory().get());
  } catch (err) {
    box.replaceChildren(el("p", { className: "error" }, errorText(err)));
    return;
  }
  const list = el("ul", { className: "beliefs" });
  for (const b of mem.beliefs ?? []) list.append(beliefItem(b));
  const parts = [list];
  if (!(mem.beliefs ?? []).length) parts.unshift(el("p", null, "The agent remembers nothing about you."));
  if ((mem.working ?? []).length) {
    parts.push(el("h3", null, "Working notes"), el("ul", { className: "working" }, ...mem.working.map((n) => el("li", null, `${n.subject}: ${n.value}`))));
  }
  box.replaceChildren(...parts);
}

function beliefItem(b) {
  const pv = b.provenance ?? {};
  const conf = Math.round(Number(b.confidence ?? 0) * 100);
  const from = pv.source ? [pv.source.kind === "user" ? "you" : pv.source.kind, pv.source.name].filter(Boolean).join(" ") : "";
  const ctx = pv.context ?? {};
  const li = el(
    "li",
    { dataset: { belief: b.id, status: b.status ?? "" } },
    el("div", { className: "fact" }, el("strong", null, b.subject ?? ""), " ", el("span", null, String(b.value ?? ""))),
    el("div", { className: "confidence" }, el("meter", { min: 0, max: 1, value: Number(b.confidence ?? 0), "aria-label": "confidence" }), ` ${conf} %`, b.status && b.status !== "active" ? el("span", { className: "tag" }, b.status) : null),
    el("div", { className: "provenance" }, [from && `from ${from}`, pv.rule && `rule ${pv.rule}`, pv.reason && `“${pv.reason}”`, when(b.created)].filter(Boolean).join(" · ")),
  );
  if (ctx.session) {
    const a = el("a", { href: `#c=${encodeURIComponent(ctx.session)}` }, ctx.turn ? `learned in turn ${ctx.turn} of a conversation` : "learned in a conversation");
    a.addEventListener("click", (e) => {
      e.preventDefault();
      openConversation(ctx.session);
    });
    li.append(el("div", { className: "where" }, a));
  }
  if (b.status === "active" || b.status === "disputed") {
    const forget = el("button", { type: "button", className: "forget" }, "Forget");
    forget.addEventListener("click", () => {
      const reason = el("input", { type: "text", placeholder: "why (optional)", "aria-label": `why forget ${b.subject}` });
      const yes = el("button", { type: "button", className: "confirm" }, `Forget “${b.subject}”`);
      const no = el("button", { type: "button" }, "Keep");
      const confirm = el("div", { className: "confirm-box", role: "group", "aria-label": "confirm forgetting" }, reason, yes, no);
      no.addEventListener("click", () => {
        confirm.remove();
        forget.hidden = false;
      });
      yes.addEventListener("click", async () => {
        yes.disabled = true;
        try {
          const res = await app.conn.call((s) => s.memory().forget({ belief: b.id, reason: reason.value.trim() }));
          await refreshMemory();
          const said = el("p", { className: "said", role: "status" }, `${res.reply ?? ""} (${res.belief?.status ?? ""})`);
          $("#memory").prepend(said);
        } catch (err) {
          confirm.append(el("p", { className: "error" }, errorText(err)));
          yes.disabled = false;
        }
      });
      forget.hidden = true;
      li.append(confirm);
      reason.focus();
    });
    li.append(forget);
  }
  return li;
}

// Session: the conversation's metrics and budgets (sessions extension).
async function refreshSession() {
  const box = $("#session");
  if (!app.contextId) {
    box.replaceChildren(el("p", null, "Start or open a conversation to see its metrics."));
    return;
  }
  let m;
  try {
    m = await app.conn.call((s) => s.session(app.contextId).metrics());
  } catch (err) {
    box.replaceChildren(el("p", { className: "error" }, errorText(err)));
    return;
  }
  const used = m.used ?? {};
  const rows = [
    ["state", m.state],
    ["turns", m.turn],
    ["tokens in / out", `${used.tokensIn ?? 0} / ${used.tokensOut ?? 0}${used.estimated ? " (estimated)" : ""}`],
    ["cost", used.costUnknown ? "unknown (a model without a price)" : `${((used.costMicros ?? 0) / 1e6).toFixed(4)}`],
    ["latency mean / max", `${seconds(m.latencyMean)} / ${seconds(m.latencyMax)}`],
    ["context", `${m.context ?? 0} of ${m.window ?? 0} tokens`],
    ["strategy", m.strategy],
  ].filter(([, v]) => v !== undefined && v !== "");
  const dl = el("dl", null, ...rows.flatMap(([k, v]) => [el("dt", null, k), el("dd", null, String(v))]));
  const budgets = (m.budgets ?? []).map((b) =>
    el("div", { className: "budget" }, el("label", null, `${b.budget}: ${b.used} of ${b.limit} (${b.left} left)`, el("meter", { min: 0, max: b.limit, value: b.used, low: b.limit * 0.5, high: b.limit * 0.8, optimum: 0 }))),
  );
  const warnings = (m.warnings ?? []).map((w) => el("p", { className: "warning" }, w.text || `${w.budget}: ${w.used} of ${w.limit}`));
  const out = [dl, ...budgets, ...warnings];
  if (m.collapse) {
    out.push(el("p", { className: "warning" }, `Ended: ${m.collapse.reason ?? ""} ${m.collapse.detail ?? ""}`));
    const fork = el("button", { type: "button", className: "fork" }, "Fork");
    fork.addEventListener("click", async () => {
      try {
        const n = await app.conn.call((s) => s.session(app.contextId).fork());
        openConversation(n.id);
      } catch (err) {
        box.append(el("p", { className: "error" }, errorText(err)));
      }
    });
    out.push(fork);
  }
  box.replaceChildren(...out);
}

// contractText says a capability contract in words: "reads file:*; writes file:notes/*".
const contractText = (c) =>
  Object.entries(c ?? {})
    .filter(([, v]) => Array.isArray(v) && v.length)
    .map(([k, v]) => `${k} ${v.join(", ")}`)
    .join("; ") || "nothing";

// Capabilities: what the agent holds for the user (with its strategy and contract), the
// approvals waiting for the user (decided here with capabilities().decide), and the last
// audit records, newest first.
async function refreshCapabilities() {
  const box = $("#capabilities");
  let installed, pending, audit;
  try {
    [installed, pending, audit] = await app.conn.call((s) => {
      const c = s.capabilities();
      return Promise.all([c.installed(), c.pending(), c.audit({ limit: 20 })]);
    });
  } catch (err) {
    box.replaceChildren(el("p", { className: "error" }, errorText(err)));
    return;
  }
  const held = el("ul", { className: "held" });
  for (const c of installed ?? []) {
    held.append(
      el(
        "li",
        { dataset: { capability: c.name } },
        el("strong", null, c.name),
        ` · ${c.strategy?.kind ?? ""}${c.approved ? "" : " · not approved"}`,
        el("div", { className: "sub" }, `may: ${contractText(c.contract)}`),
      ),
    );
  }
  const waiting = el("ul", { className: "pending" });
  for (const p of pending ?? []) {
    const reason = el("input", { type: "text", placeholder: "reason (optional)", "aria-label": `reason for refusing ${p.id}` });
    const approve = el("button", { type: "button", className: "approve" }, "Approve");
    const refuse = el("button", { type: "button", className: "refuse" }, "Refuse");
    const what = p.kind === "call" ? `${p.capability}.${p.method}(${p.args ? JSON.stringify(p.args) : ""})` : `${p.kind} ${p.capability}`;
    const li = el("li", { dataset: { pending: p.id } }, el("div", null, what), el("div", { className: "sub" }, `contract: ${contractText(p.contract)}`), reason, approve, refuse);
    const decide = async (yes) => {
      try {
        await app.conn.call((s) => s.capabilities().decide(p.id, yes, reason.value.trim()));
        refreshCapabilities();
      } catch (err) {
        li.append(el("p", { className: "error" }, errorText(err)));
      }
    };
    approve.addEventListener("click", () => decide(true));
    refuse.addEventListener("click", () => decide(false));
    waiting.append(li);
  }
  const records = el("ol", { className: "audit" });
  for (const r of [...(audit ?? [])].reverse()) {
    const what = [r.capability, r.method].filter(Boolean).join(".");
    const why = [r.by && `by ${r.by}`, r.reason, r.error].filter(Boolean).join(" · ");
    records.append(el("li", { dataset: { outcome: r.outcome ?? "" } }, `${when(r.time)} ${what} ${r.outcome ?? ""}${why ? ` (${why})` : ""}`));
  }
  box.replaceChildren(
    el("h3", null, "Held"),
    (installed ?? []).length ? held : el("p", null, "None."),
    el("h3", null, "Waiting for you"),
    (pending ?? []).length ? waiting : el("p", null, "Nothing."),
    el("h3", null, "Audit"),
    records,
  );
}

// Operator: the principals with an instance, and for one its policy — the version in force,
// the versions, the reviews — with Approve, Reject (reason required) and Roll back (operator
// extension, docs/sessions.md "The operator").
async function refreshOperator() {
  const box = $("#operator");
  let res;
  try {
    res = await app.conn.call((s) => s.operator().listInstances());
  } catch (err) {
    box.replaceChildren(el("p", { className: "error" }, errorText(err)));
    return;
  }
  const list = el("ul", { className: "instances" });
  for (const inst of res.instances ?? []) {
    const who = (inst.name || "(anonymous)") + (inst.tenant ? ` · ${inst.tenant}` : "");
    const open = el("button", { type: "button" }, who);
    const li = el("li", { dataset: { principal: inst.name ?? "" } }, open);
    open.addEventListener("click", () => showPolicy(li, { tenant: inst.tenant || undefined, name: inst.name ?? "" }));
    list.append(li);
  }
  box.replaceChildren(list);
}

async function showPolicy(li, who) {
  li.querySelector(".policy")?.remove();
  const box = el("div", { className: "policy" });
  li.append(box);
  let p;
  try {
    p = await app.conn.call((s) => s.operator().getPolicy(who));
  } catch (err) {
    box.append(el("p", { className: "error" }, errorText(err)));
    return;
  }
  const said = el("p", { role: "status" });
  const act = async (method, request) => {
    try {
      const r = await app.conn.call((s) => s.operator()[method]({ ...who, ...request }));
      await showPolicy(li, who);
      li.querySelector(".policy [role=status]").textContent = r?.version !== undefined ? `Version ${r.version} in force.` : `Review ${r?.review?.id ?? ""} ${r?.review?.status ?? "done"}.`;
    } catch (err) {
      said.textContent = errorText(err);
    }
  };
  const versions = el("ol", { className: "versions" }, ...(p.versions ?? []).map((v) => el("li", null, `version ${v.version} · ${(v.rules ?? []).length} rules · ${when(v.applied)}${v.approver ? ` · approved by ${v.approver}` : ""}`)));
  const reviews = el("ul", { className: "reviews" });
  for (const r of p.reviews ?? []) {
    const pr = r.proposal ?? {};
    const item = el("li", { dataset: { review: r.id, status: r.status } }, el("div", null, el("strong", null, `${pr.Op ?? ""} ${pr.Rule?.name ?? ""}`), ` · ${r.status}`), el("p", null, pr.Justification ?? ""), el("details", null, el("summary", null, "rule"), el("pre", null, JSON.stringify(pr.Rule ?? {}, null, 2))));
    if (r.reason) item.append(el("p", null, `reason: ${r.reason}`));
    if (r.status === "pending") {
      const reason = el("input", { type: "text", placeholder: "reason (required to reject)", "aria-label": `reason to reject ${r.id}` });
      const approve = el("button", { type: "button", className: "approve" }, "Approve");
      const reject = el("button", { type: "button", className: "reject" }, "Reject");
      approve.addEventListener("click", () => act("approveProposal", { review: r.id }));
      reject.addEventListener("click", () => {
        if (!reason.value.trim()) {
          said.textContent = "A rejection needs a reason.";
          reason.focus();
          return;
        }
        act("rejectProposal", { review: r.id, reason: reason.value.trim() });
      });
      item.append(reason, approve, reject);
    }
    reviews.append(item);
  }
  const rollback = el("button", { type: "button", className: "rollback" }, "Roll back");
  rollback.addEventListener("click", () => act("rollbackPolicy", {}));
  box.append(el("p", null, `Version in force: ${p.current ?? "-"}`), rollback, said, el("h3", null, "Reviews"), reviews, el("h3", null, "Versions"), versions);
}

// --- sign in -----------------------------------------------------------------------------

function signInDialog() {
  const dlg = $("#signin");
  const choices = $("#schemes");
  choices.replaceChildren();
  const schemes = app.conn.schemes.filter((s) => s.kind !== "mtls");
  schemes.forEach((s, i) => {
    const id = `scheme-${i}`;
    const radio = el("input", { type: "radio", id, value: String(i), checked: i === 0 });
    radio.setAttribute("name", "scheme-choice"); // a radio group needs one; the form never submits
    radio.addEventListener("change", () => showFields(schemes[i]));
    choices.append(el("div", null, radio, el("label", { for: id }, s.label)));
  });
  const showFields = (s) => {
    $("#f-key").hidden = s.kind !== "apikey";
    $("#f-token").hidden = s.kind !== "bearer";
    $("#f-basic").hidden = s.kind !== "basic";
    dlg.querySelector("fieldset:not([hidden]) input")?.focus();
  };
  showFields(schemes[0]);
  $("#signin-error").textContent = "";
  document.body.dataset.state = "signin";
  if (!dlg.open) dlg.showModal();
  dlg.querySelector("fieldset:not([hidden]) input")?.focus();
}

async function submitSignIn(e) {
  e.preventDefault();
  const schemes = app.conn.schemes.filter((s) => s.kind !== "mtls");
  const i = Number(document.querySelector("#schemes input:checked")?.value ?? 0);
  const s = schemes[i];
  const given = { key: $("#key").value, token: $("#token").value, user: $("#user").value, password: $("#password").value };
  const headers = headersFor(s, given);
  const who = s.kind === "basic" ? `${given.user} (password)` : s.kind === "apikey" ? "API key" : s.label;
  $("#signin-error").textContent = "Signing in…";
  try {
    await app.conn.signIn(who, headers);
  } catch (err) {
    const wait = (err.details ?? []).map((d) => d?.retryAfterSeconds ?? d?.metadata?.retryAfterSeconds).find(Boolean) ?? err.retryAfterSeconds;
    $("#signin-error").textContent =
      err.reason === "UNAUTHENTICATED" ? "The agent refused these credentials." : err.reason === "LOGIN_THROTTLED" ? `Too many attempts: try again in ${wait ?? "a few"} seconds.` : errorText(err);
    return;
  }
  for (const f of ["#key", "#token", "#user", "#password"]) $(f).value = "";
  $("#signin").close();
  signedIn();
}

function signedIn() {
  $("#who").textContent = app.conn.who;
  $("#signout").hidden = !app.conn.who;
  start();
}

// --- header, tabs, composer --------------------------------------------------------------

function connState(state, detail) {
  document.body.dataset.state = state;
  const text = { connecting: "connecting…", ready: "connected", offline: "offline", reconnecting: `reconnecting… (${detail ?? 0} s)` }[state] ?? state;
  $("#conn").textContent = text;
  $("#conn").dataset.state = state;
}

function readFiles(files) {
  return Promise.all(
    [...files].map(
      (f) =>
        new Promise((resolve, reject) => {
          const r = new FileReader();
          r.onload = () => resolve({ raw: String(r.result).replace(/^data:[^,]*,/, ""), filename: f.name, mediaType: f.type || "application/octet-stream" });
          r.onerror = () => reject(r.error);
          r.readAsDataURL(f);
        }),
    ),
  );
}

async function submitMessage(e) {
  e.preventDefault();
  const text = $("#text").value.trim();
  const files = $("#files").files;
  if (!text && !files.length) return;
  const parts = [];
  if (text) parts.push({ text });
  if (files.length) parts.push(...(await readFiles(files)));
  $("#text").value = "";
  $("#files").value = "";
  $("#text").focus();
  await loaded();
  await send(parts);
}

function wire() {
  $("#composer").addEventListener("submit", submitMessage);
  $("#text").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $("#composer").requestSubmit();
    }
  });
  $("#new").addEventListener("click", newChat);
  $("#all-tasks").addEventListener("change", refreshTasks);
  $("#signin-form").addEventListener("submit", submitSignIn);
  $("#signin").addEventListener("cancel", (e) => e.preventDefault()); // signing in is required
  $("#signout").addEventListener("click", () => {
    app.conn.signOut();
    // The open conversation is the signed-out user's: the next one to sign in starts afresh.
    history.replaceState(null, "", location.pathname);
    location.reload();
  });
  $("#menu").addEventListener("click", () => {
    const open = document.body.classList.toggle("nav-open");
    $("#menu").setAttribute("aria-expanded", String(open));
  });
  $("#side-toggle").addEventListener("click", () => {
    const open = document.body.classList.toggle("side-open");
    $("#side-toggle").setAttribute("aria-expanded", String(open));
  });
  for (const t of document.querySelectorAll("[role=tab]")) t.addEventListener("click", () => selectTab(t.dataset.tab));
  document.addEventListener("keydown", (e) => {
    if (e.key === "k" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      ($("#conversations button") ?? $("#new")).focus();
    } else if (e.key === "Escape") {
      document.body.classList.remove("nav-open", "side-open");
      $("#menu").setAttribute("aria-expanded", "false");
      $("#side-toggle").setAttribute("aria-expanded", "false");
    }
  });
  window.addEventListener("hashchange", () => {
    const c = contextFromURL();
    if (c && c !== app.contextId) openConversation(c);
  });
}

function contextFromURL() {
  const h = new URLSearchParams(location.hash.slice(1)).get("c");
  return h || new URLSearchParams(location.search).get("c");
}

// showTabs shows the tabs the agent serves: Memory and Session by their extensions on the
// card, Capabilities and Operator when their first call answers.
async function showTabs() {
  const exts = new Set((app.conn.card.capabilities?.extensions ?? []).map((x) => x.uri));
  const show = (name, on) => {
    document.querySelector(`[role=tab][data-tab=${name}]`).hidden = !on;
  };
  show("memory", exts.has(MEMORY_EXT));
  show("session", exts.has(SESSIONS_EXT));
  try {
    await app.conn.call((s) => s.capabilities().installed());
    show("capabilities", true);
  } catch {
    show("capabilities", false);
  }
  if (exts.has(OPERATOR_EXT)) {
    try {
      await app.conn.call((s) => s.operator().listInstances());
      show("operator", true);
    } catch {
      show("operator", false);
    }
  }
  document.body.dataset.tabs = "shown";
}

// start loads the conversation list and the URL's conversation; a message typed meanwhile
// waits for them (app.loaded).
async function start() {
  document.body.dataset.state = app.conn.state || "connecting";
  const c = contextFromURL();
  await loading(
    (async () => {
      await app.conn.ready();
      await refreshConversations();
      if (c) await openConversation(c);
    })(),
  );
  showTabs();
}

async function main() {
  wire();
  let started;
  loading(new Promise((resolve) => (started = resolve))); // until the card is read and start() began
  try {
    await boot();
  } finally {
    started();
  }
}

async function boot() {
  app.conn = new Conn(connState);
  app.conn.onUnauthenticated = () => {
    signInDialog();
    $("#signin-error").textContent = "Your sign-in no longer works: sign in again.";
    $("#who").textContent = "";
    $("#signout").hidden = true;
  };
  let card;
  try {
    card = await app.conn.open();
  } catch (err) {
    $("#conn").textContent = `cannot reach the agent: ${err.message}`;
    document.body.dataset.state = "error";
    return;
  }
  $("#agent").textContent = card.name ?? "agent";
  document.title = card.name ?? "agent";
  if (app.conn.needsSignIn) signInDialog();
  else signedIn();
}

main();
