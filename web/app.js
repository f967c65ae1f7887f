// A browser client for the A2A capnweb binding (docs/capnweb-binding.md), with nothing but the
// stock capnweb ES module: it finds the binding on the agent card, opens one WebSocket, and
// renders the events of each streamed message into the page.
//
// Query parameters, for links and tests: ?token=T authenticates with "Authorization: Bearer T";
// each ?send=TEXT is sent in turn on load, ?pause=MS apart. When they are all done,
// <body data-done="true">.
//
// The server closes a WebSocket that stays quiet too long (docs/security.md, "Connections and
// timeouts"); the page then opens a new one for its next message.

import { newWebSocketRpcSession } from "capnweb";

const CAPNWEB = "urn:a2awebcap:capnweb:v1";
const $ = (sel) => document.querySelector(sel);
const params = new URLSearchParams(location.search);

// endpoint returns the WebSocket URL of the card's capnweb interface (or the default path).
async function endpoint() {
  let url = new URL("/a2a/capnweb", location.href);
  try {
    const card = await (await fetch("/.well-known/agent-card.json")).json();
    $("#agent").textContent = card.name;
    const iface = (card.supportedInterfaces ?? []).find((i) => i.protocolBinding === CAPNWEB);
    if (iface) url = new URL(iface.url, location.href);
  } catch (err) {
    status(`agent card: ${err.message}`, "error");
  }
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  return url.href;
}

function status(text, state) {
  const p = $("#status");
  p.textContent = text;
  p.dataset.state = state ?? "";
}

const textOf = (m) => (m?.parts ?? []).map((p) => p.text ?? (p.data ? JSON.stringify(p.data) : "")).join(" ");

// render appends one StreamResponse (or an error) to the event list.
function render(ev) {
  const li = document.createElement("li");
  if (ev instanceof Error) {
    li.className = "error";
    li.dataset.kind = "error";
    li.dataset.reason = ev.reason ?? "";
    li.textContent = `error ${ev.code ?? ""} ${ev.reason ?? ""}: ${ev.message}`;
  } else if (ev.task) {
    li.dataset.kind = "task";
    li.dataset.state = ev.task.status.state;
    li.textContent = `task ${ev.task.id}: ${ev.task.status.state}`;
  } else if (ev.statusUpdate) {
    const s = ev.statusUpdate.status;
    li.dataset.kind = "statusUpdate";
    li.dataset.state = s.state;
    li.textContent = `status ${s.state}${s.message ? ": " + textOf(s.message) : ""}`;
  } else if (ev.artifactUpdate) {
    li.dataset.kind = "artifactUpdate";
    li.textContent = `artifact ${ev.artifactUpdate.artifact.name ?? ""}: ${textOf(ev.artifactUpdate.artifact)}`;
  } else if (ev.message) {
    li.dataset.kind = "message";
    li.textContent = `message: ${textOf(ev.message)}`;
  }
  $("#events").append(li);
}

const url = await endpoint();
let api = null; // the connection's main object; null once the connection broke
let session = null;
let token = "";

// connect opens the WebSocket (again, after the server closed it) and authenticates on it.
function connect() {
  const conn = newWebSocketRpcSession(url);
  conn.onRpcBroken(() => {
    if (api === conn) api = null;
  });
  api = conn;
  session = token ? api.authenticate({ Authorization: `Bearer ${token}` }) : api;
}

// useToken makes session the AgentSession of the token's principal (no token: the connection's
// own, anonymous one), disposing the one it replaces; it reconnects when the connection broke.
function useToken(t) {
  if (api === null) {
    token = t;
    connect();
    return;
  }
  if (t === token) return;
  if (session !== api) session[Symbol.dispose]();
  token = t;
  session = token ? api.authenticate({ Authorization: `Bearer ${token}` }) : api;
}

// send streams one message; the server calls render for each event, awaiting it.
async function send(text) {
  useToken($("#token").value);
  const message = { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }] };
  status(`sending “${text}”…`, "sending");
  try {
    const final = await session.sendStreamingMessage({ message }, render);
    const state = final?.task?.status.state ?? "message";
    status(`done: ${state}`, state);
  } catch (err) {
    render(err);
    status(`failed: ${err.reason ?? err.message}`, "error");
  }
}

$("#token").value = params.get("token") ?? "";
$("#send").addEventListener("submit", (e) => {
  e.preventDefault();
  send($("#text").value);
});
status("ready", "ready");
const pause = Number(params.get("pause") ?? 0);
for (const [i, text] of params.getAll("send").entries()) {
  if (i > 0 && pause > 0) await new Promise((r) => setTimeout(r, pause));
  await send(text);
}
document.body.dataset.done = "true";
