// The page's connection to the agent (docs/web.md, "Open", "Sign in", "Reconnect"): the agent
// card, one capnweb WebSocket at a time, authentication with the credentials the user gave, and
// reconnection with backoff. Everything else in the page calls the agent through
// Conn.call(fn), which runs fn(session) on the current connection's AgentSession, waiting for a
// connection when there is none, and tells a broken connection apart from an A2A error.
//
// The page is single-threaded: Conn's state changes only in event callbacks and in the
// continuations of its own promises.

import { newWebSocketRpcSession } from "./vendor/capnweb.js";

export const CAPNWEB = "urn:a2awebcap:capnweb:v1";
const CREDENTIALS = "a2awebcap.credentials"; // sessionStorage key: {label, headers}

// ConnectionLost is the error of a call whose connection broke: the caller may retry it (a
// stream resubscribes with Last-Event-ID).
export class ConnectionLost extends Error {}

// schemesOf returns what the card asks for each scheme it declares, in the order of its
// securityRequirements: [{name, kind: "apikey"|"bearer"|"basic"|"mtls", header, cookie, label}].
// API keys the card places in a query string are left out: the page puts no credential in a URL.
export function schemesOf(card) {
  const schemes = card.securitySchemes ?? {};
  const order = [];
  for (const req of card.securityRequirements ?? []) {
    for (const name of Object.keys(req.schemes ?? req)) if (!order.includes(name)) order.push(name);
  }
  for (const name of Object.keys(schemes)) if (!order.includes(name)) order.push(name);
  const out = [];
  for (const name of order) {
    const s = schemes[name];
    if (!s) continue;
    if (s.apiKeySecurityScheme) {
      const { location, name: param } = s.apiKeySecurityScheme;
      if (location === "header") out.push({ name, kind: "apikey", header: param, label: `API key (${param})` });
      else if (location === "cookie") out.push({ name, kind: "apikey", cookie: param, label: `API key (cookie ${param})` });
    } else if (s.httpAuthSecurityScheme) {
      const scheme = String(s.httpAuthSecurityScheme.scheme ?? "").toLowerCase();
      if (scheme === "basic") out.push({ name, kind: "basic", label: "user name and password" });
      else if (scheme === "bearer") out.push({ name, kind: "bearer", label: "bearer token" });
    } else if (s.oauth2SecurityScheme || s.openIdConnectSecurityScheme) {
      out.push({ name, kind: "bearer", label: s.oauth2SecurityScheme ? "OAuth2 access token" : "OpenID Connect token" });
    } else if (s.mtlsSecurityScheme) {
      out.push({ name, kind: "mtls", label: "client certificate" });
    }
  }
  return out;
}

// headersFor returns the headers authenticate() takes for scheme, from what the user typed.
export function headersFor(scheme, { key, token, user, password }) {
  switch (scheme.kind) {
    case "apikey":
      return scheme.header ? { [scheme.header]: key } : { Cookie: `${scheme.cookie}=${key}` };
    case "bearer":
      return { Authorization: `Bearer ${token}` };
    case "basic": {
      const bytes = new TextEncoder().encode(`${user}:${password}`);
      return { Authorization: `Basic ${btoa(String.fromCharCode(...bytes))}` };
    }
  }
  return null;
}

export class Conn {
  // onState(state, detail) is told each change: "connecting", "ready", "reconnecting" (detail:
  // seconds to the next attempt), "offline" (broken, nothing to follow: reconnects on the next
  // call).
  constructor(onState) {
    this.onState = onState;
    this.card = null;
    this.url = null;
    this.api = null; // the current connection's main object; null when there is none
    this.session = null; // its AgentSession: api itself, or what authenticate returned
    this.gen = 0; // incremented with each connection
    this.following = 0; // streams that must be resumed after a drop
    this.waiters = []; // resolvers of calls waiting for a connection
    this.backoff = 500;
    this.timer = null;
    this.state = "";
    this.creds = null;
    try {
      this.creds = JSON.parse(sessionStorage.getItem(CREDENTIALS) ?? "null");
    } catch {
      this.creds = null;
    }
    const wake = () => {
      if (this.api === null && this.state === "reconnecting") this.attempt();
    };
    document.addEventListener("visibilitychange", () => document.visibilityState === "visible" && wake());
    window.addEventListener("online", wake);
  }

  // open fetches the agent card (relative to the page, so any path prefix works) and finds the
  // capnweb interface.
  async open() {
    this.setState("connecting");
    const res = await fetch(new URL("../.well-known/agent-card.json", location.href));
    if (!res.ok) throw new Error(`agent card: HTTP ${res.status}`);
    this.card = await res.json();
    const iface = (this.card.supportedInterfaces ?? []).find((i) => i.protocolBinding === CAPNWEB);
    if (!iface) throw new Error("the agent card lists no capnweb interface");
    const url = new URL(iface.url, location.href);
    if (url.origin !== location.origin) {
      // The page's CSP connects nowhere but its own origin; so does the page.
      url.protocol = location.protocol;
      url.host = location.host;
    }
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    this.url = url.href;
    return this.card;
  }

  get schemes() {
    return schemesOf(this.card ?? {});
  }

  // needsSignIn says whether the card declares schemes and the page holds no credentials.
  get needsSignIn() {
    return this.creds === null && this.schemes.some((s) => s.kind !== "mtls");
  }

  get who() {
    return this.creds?.label ?? "";
  }

  // signIn authenticates with headers on a fresh connection; it keeps them in sessionStorage
  // only once the server accepted them.
  async signIn(label, headers) {
    const api = newWebSocketRpcSession(this.url);
    try {
      const session = api.authenticate(headers);
      await session.listTasks({ pageSize: 1 }); // proves the credentials
      this.drop();
      this.creds = { label, headers };
      sessionStorage.setItem(CREDENTIALS, JSON.stringify(this.creds));
      this.adopt(api, session);
    } catch (err) {
      api[Symbol.dispose]?.();
      throw err;
    }
  }

  signOut() {
    sessionStorage.removeItem(CREDENTIALS);
    this.creds = null;
    this.drop();
  }

  setState(state, detail) {
    this.state = state;
    this.onState(state, detail);
  }

  // drop closes the current connection, if any, without reconnecting.
  drop() {
    const api = this.api;
    this.api = null;
    this.session = null;
    if (api) {
      this.gen++;
      try {
        api[Symbol.dispose]();
      } catch {
        // already broken
      }
    }
  }

  adopt(api, session) {
    this.api = api;
    this.session = session;
    const gen = ++this.gen;
    api.onRpcBroken(() => this.broken(gen));
    this.backoff = 500;
    this.setState("ready");
    for (const w of this.waiters.splice(0)) w();
  }

  // broken takes note that connection gen broke (once; a later connection is not touched):
  // it reconnects when something needs the connection, else says the page is offline.
  broken(gen) {
    if (this.gen !== gen) return;
    this.api = null;
    this.session = null;
    this.gen++;
    if (this.following > 0 || this.waiters.length > 0) this.retry();
    else this.setState("offline");
  }

  // retry schedules the next attempt after the backoff, telling the seconds left each second.
  retry() {
    if (this.timer !== null) return;
    const wait = this.backoff;
    this.backoff = Math.min(this.backoff * 2, 10000);
    const at = Date.now() + wait;
    const tell = () => this.setState("reconnecting", Math.max(0, Math.ceil((at - Date.now()) / 1000)));
    tell();
    const tick = setInterval(tell, 1000);
    this.timer = setTimeout(() => {
      clearInterval(tick);
      this.attempt();
    }, wait);
    this.stopTick = () => clearInterval(tick);
  }

  // attempt tries one connection now: the first call on it (the card) tells whether it works.
  async attempt() {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.stopTick?.();
    if (this.api !== null) return;
    if (this.state === "reconnecting" && this.following === 0 && this.waiters.length === 0) {
      this.setState("offline"); // what needed the connection is over: wait for the user
      return;
    }
    const api = newWebSocketRpcSession(this.url);
    try {
      await api.getAgentCard();
    } catch {
      try {
        api[Symbol.dispose]();
      } catch {
        // broken already
      }
      this.retry();
      return;
    }
    const session = this.creds ? api.authenticate(this.creds.headers) : api;
    this.adopt(api, session);
  }

  // ready resolves once there is a connection, opening one when the page is offline.
  ready() {
    if (this.session !== null) return Promise.resolve();
    const p = new Promise((resolve) => this.waiters.push(resolve));
    if (this.state === "offline" || this.state === "connecting" || this.state === "") {
      this.attempt();
    }
    return p;
  }

  // call runs fn(session) on a connection; it rejects with ConnectionLost when the connection
  // broke meanwhile, else with fn's own error.
  async call(fn) {
    await this.ready();
    const gen = this.gen;
    try {
      return await fn(this.session);
    } catch (err) {
      if (err?.code === undefined && gen === this.gen && this.api !== null) {
        // Not an A2A error: perhaps the connection is breaking, and capnweb says so
        // (onRpcBroken) only after it rejects the calls in flight. Ask the connection: a call
        // on a broken one fails at once.
        const api = this.api;
        try {
          await api.getAgentCard();
        } catch {
          this.broken(gen);
        }
      }
      if (gen !== this.gen || this.session === null) throw new ConnectionLost(err?.message ?? String(err));
      if (err?.reason === "UNAUTHENTICATED" && this.creds !== null) {
        // The kept credentials no longer work (expired, revoked, the server changed): forget
        // them, and let the page ask again.
        this.signOut();
        this.onUnauthenticated?.();
      }
      throw err;
    }
  }
}
