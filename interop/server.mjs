#!/usr/bin/env node
// Reference capnweb server (real npm `capnweb`) exposing the golden test API.
//
// One HTTP server on 127.0.0.1 serves both:
//   - WebSocket upgrades  -> newWebSocketRpcSession(ws, new Api())
//   - HTTP batch requests -> newHttpBatchRpcResponse(request, new Api())
//     (non-POST without upgrade -> 405, produced by capnweb itself)
//
// Usage: node server.mjs [--port N] [--trace]
//   --port N   port to bind (default 0 = ephemeral)
//   --trace    log every frame / batch body to stderr (C->S / S->C lines)
//
// Prints exactly one line "LISTENING <port>" to stdout once listening.
// Exits on SIGTERM / SIGINT, or when stdin (if it is a pipe or socket) is closed.

import http from "node:http";
import fs from "node:fs";
import { WebSocketServer, WebSocket } from "ws";
import { RpcTarget, newWebSocketRpcSession, newHttpBatchRpcResponse } from "capnweb";

// capnweb's WebSocket transport references the global `WebSocket` (for its readyState constants).
// Node 20 has no global WebSocket, so provide the `ws` implementation.
if (typeof globalThis.WebSocket === "undefined") {
  globalThis.WebSocket = WebSocket;
}

// ---------------------------------------------------------------------------------------------
// Command line

function parseArgs(argv) {
  const opts = { port: 0, trace: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--port") {
      opts.port = Number(argv[++i]);
    } else if (a.startsWith("--port=")) {
      opts.port = Number(a.slice("--port=".length));
    } else if (a === "--trace") {
      opts.trace = true;
    } else if (a === "--help" || a === "-h") {
      process.stderr.write("usage: node server.mjs [--port N] [--trace]\n");
      process.exit(0);
    } else {
      process.stderr.write(`server.mjs: unknown argument ${a}\n`);
      process.exit(2);
    }
  }
  if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) {
    process.stderr.write("server.mjs: --port must be an integer in [0, 65535]\n");
    process.exit(2);
  }
  return opts;
}

const opts = parseArgs(process.argv.slice(2));

function trace(line) {
  if (opts.trace) process.stderr.write(line + "\n");
}

// ---------------------------------------------------------------------------------------------
// The golden test API

class User extends RpcTarget {
  #name;
  constructor(name) {
    super();
    this.#name = name;
  }
  greet(greeting) {
    return `${greeting}, ${this.#name}!`;
  }
}

class AuthedApi extends RpcTarget {
  getUser() {
    return new User("alice");
  }
}

class Counter extends RpcTarget {
  #value;
  constructor(n) {
    super();
    this.#value = n;
  }
  increment(by) {
    this.#value += by;
    return this.#value;
  }
  get value() {
    return this.#value;
  }
}

// Disposal counts per token, process-wide, so that a later session can ask whether the session
// that held a Disposable disposed it.
const disposals = new Map();

class Disposable extends RpcTarget {
  #token;
  constructor(token) {
    super();
    this.#token = token;
  }
  ping() {
    return `pong ${this.#token}`;
  }
  [Symbol.dispose]() {
    disposals.set(this.#token, (disposals.get(this.#token) ?? 0) + 1);
  }
}

// Box keeps a value and gives it back.
class Box extends RpcTarget {
  #value;
  constructor(value) {
    super();
    this.#value = value;
  }
  get() {
    return this.#value;
  }
}

class Api extends RpcTarget {
  add(a, b) {
    return a + b;
  }

  authenticate(token) {
    if (token !== "secret") throw new Error("bad token");
    return new AuthedApi();
  }

  getProfile() {
    return { name: "bob", tags: ["x", "y"] };
  }

  greetName(name) {
    return `Hello, ${name}`;
  }

  async callMeBack(cb, n) {
    return (await cb(n)) + 1;
  }

  async notifyTarget(t, msg) {
    return `client said: ${await t.notify(msg)}`;
  }

  subscribe(cb) {
    // The parameter stub is released when this call returns, so keep our own reference.
    const sub = cb.dup();
    // Only start calling back after the call has returned (and its result was sent).
    setTimeout(async () => {
      try {
        await sub("event-1");
        await sub("event-2");
      } catch (err) {
        trace(`subscribe: callback failed: ${err}`);
      } finally {
        sub[Symbol.dispose]();
      }
    }, 0);
    return "subscribed";
  }

  makeCounter(n) {
    return new Counter(n);
  }

  incrementCounter(counter, by) {
    return counter.increment(by);
  }

  listIds() {
    return [1, 2, 3];
  }

  getUserName(id) {
    return `user${id}`;
  }

  listUsers() {
    return [{ name: "ann" }, { name: "ben" }];
  }

  maybeNull() {
    return null;
  }

  fail() {
    const err = new RangeError("something broke");
    err.code = "E_BROKE";
    throw err;
  }

  echo(v) {
    return v;
  }

  async sumStream(readable) {
    let sum = 0;
    const reader = readable.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      sum += value;
    }
    return sum;
  }

  async writeTo(writable) {
    const writer = writable.getWriter();
    await writer.write("chunk-a");
    await writer.write("chunk-b");
    await writer.close();
    return "wrote";
  }

  makeStream() {
    const chunks = ["s0", "s1", "s2"];
    return new ReadableStream({
      start(controller) {
        for (const c of chunks) controller.enqueue(c);
        controller.close();
      },
    });
  }

  pokeCallback(cb) {
    // Fire and forget: call cb("poke") and pull its result, but don't wait for it (in an HTTP
    // batch it never arrives). We hold our own reference to cb until that result settles, so the
    // callback is not released before then -- this matches the golden batch-callback body, which
    // contains no ["release",-1,1].
    const held = cb.dup();
    held("poke").catch(() => {}).finally(() => held[Symbol.dispose]());
    return "poked";
  }

  // Extras (not in the goldens).
  makeDisposable(token) {
    return new Disposable(token);
  }

  disposeCount(token) {
    return disposals.get(token) ?? 0;
  }

  makeBox(value) {
    return new Box(value);
  }

  // For payload / timing tests.
  sumBytes(bytes) {
    return bytes.byteLength;
  }

  delay(ms) {
    return new Promise(resolve => setTimeout(resolve, ms));
  }
}

// ---------------------------------------------------------------------------------------------
// HTTP batch

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on("data", c => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

let nextConnId = 1;

async function handleHttp(req, res) {
  const id = nextConnId++;
  try {
    const url = `http://${req.headers.host || "127.0.0.1"}${req.url}`;
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) {
      if (Array.isArray(v)) for (const x of v) headers.append(k, x);
      else if (v !== undefined) headers.set(k, v);
    }
    const hasBody = req.method !== "GET" && req.method !== "HEAD";
    const body = hasBody ? await readBody(req) : null;
    trace(`[http ${id}] ${req.method} ${req.url} content-type=${req.headers["content-type"] ?? "(none)"}`);
    if (body !== null) {
      const text = body.toString("utf8");
      trace(`[http ${id}] C->S ${JSON.stringify(text)}`);
    }

    const request = new Request(url, { method: req.method, headers, body });
    const response = await newHttpBatchRpcResponse(request, new Api());
    const out = Buffer.from(await response.arrayBuffer());
    const outHeaders = {};
    response.headers.forEach((v, k) => { outHeaders[k] = v; });
    outHeaders["content-length"] = String(out.length);
    trace(`[http ${id}] status=${response.status} S->C ${JSON.stringify(out.toString("utf8"))}`);
    res.writeHead(response.status, outHeaders);
    res.end(out);
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    trace(`[http ${id}] batch failed: ${msg}`);
    if (!res.headersSent) res.writeHead(500);
    res.end(msg);
  }
}

// ---------------------------------------------------------------------------------------------
// WebSocket

const wss = new WebSocketServer({ noServer: true });
const sockets = new Set();

function handleWebSocket(ws) {
  const id = nextConnId++;
  sockets.add(ws);
  if (opts.trace) {
    trace(`[ws ${id}] open`);
    ws.on("message", (data, isBinary) => {
      trace(`[ws ${id}] C->S ${isBinary ? "<binary> " : ""}${Buffer.from(data).toString("utf8")}`);
    });
    const origSend = ws.send.bind(ws);
    ws.send = (data, ...rest) => {
      trace(`[ws ${id}] S->C ${typeof data === "string" ? data : "<binary>"}`);
      return origSend(data, ...rest);
    };
    const origClose = ws.close.bind(ws);
    ws.close = (code, reason) => {
      trace(`[ws ${id}] server-close-call code=${code} reason=${JSON.stringify(reason)}`);
      return origClose(code, reason);
    };
  }
  ws.on("close", (code, reason) => {
    sockets.delete(ws);
    trace(`[ws ${id}] closed code=${code} reason=${JSON.stringify(reason.toString())}`);
  });
  ws.on("error", err => trace(`[ws ${id}] error: ${err.message}`));
  newWebSocketRpcSession(ws, new Api());
}

// ---------------------------------------------------------------------------------------------
// Server

const server = http.createServer((req, res) => {
  handleHttp(req, res);
});

server.on("upgrade", (req, socket, head) => {
  if ((req.headers.upgrade || "").toLowerCase() !== "websocket") {
    socket.destroy();
    return;
  }
  wss.handleUpgrade(req, socket, head, handleWebSocket);
});

server.on("clientError", (err, socket) => {
  if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\r\n\r\n");
  else socket.destroy();
});

let shuttingDown = false;
function shutdown(why) {
  if (shuttingDown) return;
  shuttingDown = true;
  trace(`shutting down (${why})`);
  for (const ws of sockets) ws.terminate();
  server.close(() => process.exit(0));
  server.closeAllConnections?.();
  setTimeout(() => process.exit(0), 1000).unref();
}

process.on("SIGTERM", () => shutdown("SIGTERM"));
process.on("SIGINT", () => shutdown("SIGINT"));

// Only treat stdin EOF as a shutdown request when stdin is a pipe/socket (i.e. a parent process
// is holding it open on purpose). A background job in a shell gets /dev/null, which would
// otherwise make the server exit immediately.
try {
  const st = fs.fstatSync(0);
  if (st.isFIFO() || st.isSocket()) {
    process.stdin.on("end", () => shutdown("stdin closed"));
    process.stdin.on("close", () => shutdown("stdin closed"));
    process.stdin.on("error", () => shutdown("stdin error"));
    process.stdin.resume();
  }
} catch {
  // no stdin at all
}

server.listen(opts.port, "127.0.0.1", () => {
  process.stdout.write(`LISTENING ${server.address().port}\n`);
});
