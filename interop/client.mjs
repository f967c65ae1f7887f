#!/usr/bin/env node
// Runs the golden interop scenarios against a capnweb server using the real npm `capnweb` client.
//
// Usage:
//   node client.mjs --url ws://127.0.0.1:PORT/   --transport ws
//   node client.mjs --url http://127.0.0.1:PORT/ --transport batch
//   node client.mjs --url ws://127.0.0.1:PORT/   --transport both   (batch URL derived: ws->http)
// Options:
//   --only a,b,c     run only these scenarios (names as printed)
//   --timeout MS     per-scenario timeout (default 5000)
//   --trace          print every WebSocket frame of every scenario to stderr
//   --list           list scenario names and exit
//
// Output: one JSON line per scenario {"scenario","transport","ok","error"?}, then
// "N passed, M failed". Exit status 1 if anything failed (or no scenario ran), 2 on usage error.
// On failure the WebSocket frames seen by the client for that scenario are dumped to stderr.

import { WebSocket } from "ws";
import { RpcStub, RpcTarget, newWebSocketRpcSession, newHttpBatchRpcSession } from "capnweb";

// capnweb's WebSocket transport references the global `WebSocket`; Node 20 has none.
if (typeof globalThis.WebSocket === "undefined") {
  globalThis.WebSocket = WebSocket;
}

// ---------------------------------------------------------------------------------------------
// Command line

function usage(msg) {
  if (msg) process.stderr.write(`client.mjs: ${msg}\n`);
  process.stderr.write(
      "usage: node client.mjs --url URL [--transport ws|batch|both] [--only a,b] " +
      "[--timeout MS] [--trace] [--list]\n");
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { url: undefined, transport: "ws", only: undefined, timeout: 5000, trace: false,
                 list: false };
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i];
    let v;
    const eq = a.indexOf("=");
    if (a.startsWith("--") && eq > 0) {
      v = a.slice(eq + 1);
      a = a.slice(0, eq);
    }
    const val = () => {
      if (v !== undefined) return v;
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    switch (a) {
      case "--url": opts.url = val(); break;
      case "--transport": opts.transport = val(); break;
      case "--only": opts.only = val().split(",").map(s => s.trim()).filter(Boolean); break;
      case "--timeout": opts.timeout = Number(val()); break;
      case "--trace": opts.trace = true; break;
      case "--list": opts.list = true; break;
      case "--help": case "-h": usage();
      default: usage(`unknown argument ${a}`);
    }
  }
  if (!["ws", "batch", "both"].includes(opts.transport)) usage("--transport must be ws, batch or both");
  if (!(opts.timeout > 0)) usage("--timeout must be a positive number");
  if (!opts.url && !opts.list) usage("--url is required");
  return opts;
}

const opts = parseArgs(process.argv.slice(2));

function urlFor(transport) {
  const u = new URL(opts.url);
  if (transport === "ws") {
    if (u.protocol === "http:") u.protocol = "ws:";
    if (u.protocol === "https:") u.protocol = "wss:";
  } else {
    if (u.protocol === "ws:") u.protocol = "http:";
    if (u.protocol === "wss:") u.protocol = "https:";
  }
  return u.toString();
}

// capnweb can leave rejected promises nobody listens to when a session breaks (e.g. against a
// misbehaving server). They must not crash the runner; the scenario fails on its own.
process.on("unhandledRejection", err => {
  if (opts.trace) process.stderr.write(`(unhandled rejection: ${err?.stack ?? err})\n`);
});

// ---------------------------------------------------------------------------------------------
// Assertions

class AssertionError extends Error {}

function fmt(v, depth = 0) {
  if (depth > 6) return "…";
  if (v === undefined) return "undefined";
  if (typeof v === "bigint") return `${v}n`;
  if (typeof v === "number") return Object.is(v, -0) ? "-0" : String(v);
  if (typeof v === "string") return JSON.stringify(v);
  if (typeof v === "function") return "[function]";
  if (v === null || typeof v !== "object") return String(v);
  if (v instanceof Date) return `Date(${v.getTime()})`;
  if (v instanceof Error) {
    const extra = Object.keys(v).filter(k => k !== "stack")
        .map(k => `${k}: ${fmt(v[k], depth + 1)}`).join(", ");
    return `${v.constructor?.name ?? v.name}(${JSON.stringify(v.message)}${extra ? ", {" + extra + "}" : ""})`;
  }
  if (v instanceof URL) return `URL(${v.href})`;
  if (v instanceof Headers) return `Headers(${JSON.stringify([...v])})`;
  if (v instanceof ArrayBuffer) return `ArrayBuffer[${[...new Uint8Array(v)]}]`;
  if (ArrayBuffer.isView(v)) return `${viewKind(v)}[${Array.from(v)}]`;
  if (Array.isArray(v)) return `[${v.map(x => fmt(x, depth + 1)).join(", ")}]`;
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return `[${v.constructor?.name ?? "object"}]`;
  return `{${Object.keys(v).map(k => `${k}: ${fmt(v[k], depth + 1)}`).join(", ")}}`;
}

function viewKind(v) {
  return typeof Buffer !== "undefined" && Buffer.isBuffer(v) ? "Uint8Array" : v.constructor.name;
}

// Deep structural equality covering every type capnweb can pass by value.
function deepEqual(a, b) {
  if (Object.is(a, b)) return true;
  if (typeof a !== typeof b) return false;
  if (a === null || b === null || typeof a !== "object") return false;
  if (ArrayBuffer.isView(a) || ArrayBuffer.isView(b)) {
    // capnweb decodes plain bytes as a Node Buffer (a Uint8Array subclass): treat them as equal.
    if (!ArrayBuffer.isView(a) || !ArrayBuffer.isView(b) || viewKind(a) !== viewKind(b)) return false;
    const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    return x.length === y.length && x.every((v, i) => v === y[i]);
  }
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  if (a instanceof Date) return Object.is(a.getTime(), b.getTime());
  if (a instanceof URL) return a.href === b.href;
  if (a instanceof Headers) return deepEqual([...a], [...b]);
  if (a instanceof ArrayBuffer) return deepEqual(new Uint8Array(a), new Uint8Array(b));
  if (a instanceof Error) {
    if (a.name !== b.name || a.message !== b.message) return false;
    const ka = Object.keys(a).filter(k => k !== "stack").sort();
    const kb = Object.keys(b).filter(k => k !== "stack").sort();
    return deepEqual(ka, kb) && ka.every(k => deepEqual(a[k], b[k]));
  }
  if (Array.isArray(a)) {
    return a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  }
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  return deepEqual(ka, kb) && ka.every(k => deepEqual(a[k], b[k]));
}

function eq(actual, expected, what) {
  if (!deepEqual(actual, expected)) {
    throw new AssertionError(`${what}: expected ${fmt(expected)}, got ${fmt(actual)}`);
  }
}

function check(cond, what) {
  if (!cond) throw new AssertionError(what);
}

// Awaits `p` and returns its rejection reason; fails if it resolves.
async function rejection(p, what) {
  let value;
  try {
    value = await p;
  } catch (err) {
    return err;
  }
  throw new AssertionError(`${what}: expected a rejection, got ${fmt(value)}`);
}

function checkError(err, ctor, message, what) {
  check(err instanceof ctor,
      `${what}: expected ${ctor.name}, got ${fmt(err)} (${err?.constructor?.name})`);
  if (message !== undefined) eq(err.message, message, `${what}: message`);
}

function withTimeout(p, ms, what) {
  let timer;
  return Promise.race([
    p,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new AssertionError(`${what}: timed out after ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

const sleep = ms => new Promise(r => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// Session helpers

// Opens a WebSocket session; records frames; registers cleanup on the scenario context.
function openWs(ctx) {
  const ws = new WebSocket(urlFor("ws"));
  const frames = ctx.frames;
  const waiters = [];
  ws.on("message", (data, isBinary) => {
    const text = Buffer.from(data).toString("utf8");
    frames.push(`S->C ${isBinary ? "<binary> " : ""}${text}`);
    if (opts.trace) process.stderr.write(`  [${ctx.name}] S->C ${text}\n`);
    let msg;
    try { msg = JSON.parse(text); } catch { return; }
    for (const w of [...waiters]) {
      if (w.pred(msg)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(msg);
      }
    }
  });
  const origSend = ws.send.bind(ws);
  ws.send = (data, ...rest) => {
    frames.push(`C->S ${data}`);
    if (opts.trace) process.stderr.write(`  [${ctx.name}] C->S ${data}\n`);
    return origSend(data, ...rest);
  };
  ws.on("error", err => frames.push(`error ${err.message}`));
  const closed = new Promise(resolve => {
    ws.on("close", (code, reason) => {
      frames.push(`closed code=${code} reason=${JSON.stringify(reason.toString())}`);
      resolve({ code, reason: reason.toString() });
    });
  });
  const api = newWebSocketRpcSession(ws);
  let disposed = false;
  const session = {
    api,
    ws,
    closed,
    // Resolves with the first *future* server message matching pred.
    waitForServerMessage(pred) {
      return new Promise(resolve => waiters.push({ pred, resolve }));
    },
    dispose() {
      if (!disposed) {
        disposed = true;
        api[Symbol.dispose]();
      }
    },
  };
  ctx.cleanups.push(async () => {
    session.dispose();
    if (ws.readyState !== WebSocket.CLOSED) {
      await Promise.race([closed, sleep(1000)]);
      ws.terminate();
    }
  });
  return session;
}

// Polls the server until the Disposable named token has been disposed (releases are handled
// in order, but the disposal of a session's targets follows its end).
async function waitDisposed(api, token) {
  for (let i = 0; i < 100; i++) {
    if (await api.disposeCount(token) > 0) return;
    await sleep(20);
  }
  throw new AssertionError(`${token} was not disposed within 2 s`);
}

function openBatch() {
  return newHttpBatchRpcSession(urlFor("batch"));
}

async function readAll(stream) {
  const reader = stream.getReader();
  const out = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return out;
    out.push(value);
  }
}

// ---------------------------------------------------------------------------------------------
// WebSocket scenarios (one fresh session each; the main stub is disposed at the end)

class Notifier extends RpcTarget {
  notify(m) {
    return `ack(${m})`;
  }
}

const wsScenarios = {
  async simple(ctx) {
    const { api } = openWs(ctx);
    eq(await api.add(1, 2), 3, "add(1,2)");
  },

  async pipeline(ctx) {
    const { api } = openWs(ctx);
    eq(await api.authenticate("secret").getUser().greet("Hi"), "Hi, alice!",
       "authenticate().getUser().greet()");
  },

  async "pipeline-arg"(ctx) {
    const { api } = openWs(ctx);
    const profile = api.getProfile();
    eq(await api.greetName(profile.name), "Hello, bob", "greetName(getProfile().name)");
    profile[Symbol.dispose]();
  },

  async callback(ctx) {
    const { api } = openWs(ctx);
    const seen = [];
    eq(await api.callMeBack(n => { seen.push(n); return n * 10; }, 4), 41, "callMeBack(cb, 4)");
    eq(seen, [4], "callback arguments");
  },

  async "target-arg"(ctx) {
    const { api } = openWs(ctx);
    eq(await api.notifyTarget(new Notifier(), "yo"), "client said: ack(yo)", "notifyTarget");
  },

  async subscribe(ctx) {
    const s = openWs(ctx);
    const events = [];
    let gotBoth;
    const both = new Promise(r => { gotBoth = r; });
    // The server must release its dup of the callback (our export -1) after event-2.
    const released = s.waitForServerMessage(
        m => Array.isArray(m) && m[0] === "release" && m[1] === -1);
    const cb = e => {
      events.push(e);
      if (events.length >= 2) gotBoth();
    };
    eq(await s.api.subscribe(cb), "subscribed", "subscribe(cb)");
    await withTimeout(both, 3000, `waiting for 2 events (got ${JSON.stringify(events)})`);
    eq(events, ["event-1", "event-2"], "events");
    await withTimeout(released, 2000, "waiting for the server to release the callback");
  },

  async "returned-target"(ctx) {
    const { api } = openWs(ctx);
    const counter = await api.makeCounter(5);
    eq(await counter.increment(2), 7, "counter.increment(2)");
    eq(await counter.value, 7, "counter.value");
    counter[Symbol.dispose]();
    // Pass a not-yet-resolved counter back (promise pipelining on an argument).
    const c2 = api.makeCounter(100);
    eq(await api.incrementCounter(c2, 1), 101, "incrementCounter(makeCounter(100), 1)");
    c2[Symbol.dispose]();
  },

  async misc(ctx) {
    const { api } = openWs(ctx);
    const counter = await api.makeCounter(1);
    // A stub the server exported, passed back to it (["import",-1]).
    eq(await api.incrementCounter(counter, 1), 2, "incrementCounter(counter, 1)");
    // Property path with a *string* "1" on an array: capnweb yields undefined.
    eq(await api.getProfile().tags["1"], undefined, 'getProfile().tags["1"]');
    eq(await api.getProfile().name, "bob", "getProfile().name");
    counter[Symbol.dispose]();
  },

  async map(ctx) {
    const { api } = openWs(ctx);
    eq(await api.listIds().map(id => api.getUserName(id)), ["user1", "user2", "user3"],
       "listIds().map(getUserName)");
    eq(await api.listUsers().map(u => ({ n: u.name, greeting: api.greetName(u.name) })),
       [{ n: "ann", greeting: "Hello, ann" }, { n: "ben", greeting: "Hello, ben" }],
       "listUsers().map(...)");
    eq(await api.maybeNull().map(id => api.getUserName(id)), null, "maybeNull().map(...)");
  },

  // A mapper that calls a client callback: the server sends the map's result at once, each
  // element a reference to the callback's own result, and pulls none of them (it would wait on
  // a callback that never answers, one round trip per element).
  async "map-callback"(ctx) {
    const s = openWs(ctx);
    const { api } = s;
    let open;
    const gate = new Promise(r => { open = r; });
    const cb = new RpcStub(async id => {
      if (id === 2) await gate; // the second element's answer waits
      return `cb${id}`;
    });
    const resolved = s.waitForServerMessage(
        m => Array.isArray(m) && m[0] === "resolve" && JSON.stringify(m).includes('"pipeline"'));
    const mapped = api.listIds().map(id => cb(id));
    const result = mapped.then(v => v);
    await withTimeout(resolved, 2000, "the map's resolve, sent before every callback answered");
    const pulls = ctx.frames.filter(f => f.startsWith("S->C [\"pull\""));
    eq(pulls, [], "pulls the server sent");
    open();
    eq(await result, ["cb1", "cb2", "cb3"], "listIds().map(id => cb(id))");
    cb[Symbol.dispose]();
  },

  async error(ctx) {
    const { api } = openWs(ctx);
    const e1 = await rejection(api.fail(), "fail()");
    checkError(e1, RangeError, "something broke", "fail()");
    eq(e1.code, "E_BROKE", "fail() error .code");
    const e2 = await rejection(api.noSuchMethod(), "noSuchMethod()");
    checkError(e2, TypeError, undefined, "noSuchMethod()");
    const e3 = await rejection(api.authenticate("wrong").getUser(), "authenticate(wrong).getUser()");
    checkError(e3, Error, "bad token", "authenticate(wrong).getUser()");
  },

  async types(ctx) {
    const { api } = openWs(ctx);
    const errWithProps = new RangeError("with props");
    errWithProps.code = "E_X";
    errWithProps.detail = { n: 1 };
    const value = {
      s: "str",
      n: 1.5,
      t: true,
      f: false,
      zero: 0,
      neg: -7,
      big2: -42n,
      nul: null,
      und: undefined,
      inf: Infinity,
      ninf: -Infinity,
      nan: NaN,
      big: 12345678901234567890n,
      date: new Date(1700000000000),
      baddate: new Date(NaN),
      bytes: new Uint8Array([1, 2, 3, 255]),
      i16: new Int16Array([1, -2]),
      ab: new Uint8Array([1, 2, 3]).buffer,
      arr: [1, [2, "three"], []],
      err: new TypeError("inner"),
      errp: errWithProps,
      url: new URL("https://example.com/a?b=1"),
      headers: new Headers([["x-a", "1"]]),
      nested: { deep: { list: [{ k: "v" }, [NaN, undefined, null]] } },
      unicode: "héllo \u2603 \ud83d\ude00",
      // Lone surrogates, in a value and in a key, come back as they went.
      lone: "a\ud800b\udfff",
      "lone\udc00key": "\ud83d",
    };
    eq(await api.echo(value), value, "echo(all types)");
    // Key order: an object keeps it through an echo, a target that kept it, a pipelined read
    // and a mapper's result (deepEqual above compares keys as sets).
    const ordered = { b: 1, a: 2, "2": 3, "1": 4, nested: { z: 1, y: 2 } };
    const keysOf = o => JSON.stringify([Object.keys(o), Object.keys(o.nested)]);
    eq(keysOf(await api.echo(ordered)), keysOf(ordered), "Object.keys(echo(o))");
    eq(keysOf(await api.makeBox(ordered).get()), keysOf(ordered), "Object.keys(makeBox(o).get())");
    eq(Object.keys(await api.echo({ wrap: ordered }).wrap.nested), ["z", "y"],
       "Object.keys(echo({wrap: o}).wrap.nested)");
    const mapped = await api.listUsers().map(u => ({ n: u.name, greeting: api.greetName(u.name), a: 1 }));
    eq(Object.keys(mapped[0]), ["n", "greeting", "a"], "Object.keys of a mapper's result");
    // Top-level (non-object) values too.
    eq(await api.echo(undefined), undefined, "echo(undefined)");
    eq(await api.echo([[1, 2]]), [[1, 2]], "echo([[1,2]])");
    eq(await api.echo(-Infinity), -Infinity, "echo(-Infinity)");
  },

  async streams(ctx) {
    const { api } = openWs(ctx);
    const rs = new ReadableStream({
      start(c) {
        c.enqueue(1);
        c.enqueue(2);
        c.enqueue(3);
        c.close();
      },
    });
    eq(await api.sumStream(rs), 6, "sumStream([1,2,3])");

    const chunks = [];
    let closed = false;
    const sink = new WritableStream({
      write(c) { chunks.push(c); },
      close() { closed = true; },
    });
    eq(await api.writeTo(sink), "wrote", "writeTo(writable)");
    eq(chunks, ["chunk-a", "chunk-b"], "chunks written by the server");
    check(closed, "server did not close the writable stream");

    const stream = await api.makeStream();
    check(stream instanceof ReadableStream, `makeStream() returned ${fmt(stream)}`);
    eq(await readAll(stream), ["s0", "s1", "s2"], "makeStream() contents");
    // Let the stream's write/close acknowledgements and the server's release of the pipe go out
    // before the session is torn down (as in the golden transcript).
    await sleep(100);
  },

  async unawaited(ctx) {
    const { api } = openWs(ctx);
    // Fire a call and drop it without ever awaiting (disposing releases it right away).
    api.add(5, 5)[Symbol.dispose]();
    eq(await api.add(1, 1), 2, "add(1,1) after an unawaited call");
  },

  // A target a call returned is disposed by the server once the client releases the call's
  // promise, even if the client only ever pipelined on it or never touched it; and when the
  // session ends, if the client never released it. Each exactly once.
  async disposal(ctx) {
    const { api } = openWs(ctx);
    const tok = `t${Math.random().toString(36).slice(2)}`;
    const pipelined = api.makeDisposable(`${tok}/pipelined`);
    eq(await pipelined.ping(), `pong ${tok}/pipelined`, "makeDisposable().ping()");
    const untouched = api.makeDisposable(`${tok}/untouched`);
    const pulled = api.makeDisposable(`${tok}/pulled`);
    const stub = await pulled;
    eq(await stub.ping(), `pong ${tok}/pulled`, "(await makeDisposable()).ping()");
    await sleep(20);
    for (const n of ["pipelined", "untouched", "pulled"]) {
      eq(await api.disposeCount(`${tok}/${n}`), 0, `${n}: disposed while held`);
    }
    pipelined[Symbol.dispose]();
    untouched[Symbol.dispose]();
    stub[Symbol.dispose]();
    pulled[Symbol.dispose]();
    await waitDisposed(api, `${tok}/pipelined`);
    await waitDisposed(api, `${tok}/untouched`);
    await waitDisposed(api, `${tok}/pulled`);

    // Held when the session ends: only pipelined on, and never released (as the npm client
    // does with the intermediates of a chain).
    const other = openWs(ctx);
    eq(await other.api.makeDisposable(`${tok}/at-end`).ping(), `pong ${tok}/at-end`,
       "makeDisposable().ping() on a second session");
    await sleep(20);
    eq(await api.disposeCount(`${tok}/at-end`), 0, "at-end: disposed while its session lives");
    other.dispose();
    await withTimeout(other.closed, 3000, "second session closing");
    await waitDisposed(api, `${tok}/at-end`);
    await sleep(20);
    for (const n of ["pipelined", "untouched", "pulled", "at-end"]) {
      eq(await api.disposeCount(`${tok}/${n}`), 1, `${n}: dispose count`);
    }
  },

  async dispose(ctx) {
    const s = openWs(ctx);
    eq(await s.api.add(1, 2), 3, "add(1,2)");
    s.dispose();
    const { code } = await withTimeout(s.closed, 3000, "WebSocket close after disposing main stub");
    check(code === 3000 || code === 1000 || code === 1005,
          `unexpected close code after dispose: ${code}`);
    // Calls on a disposed session must fail (locally), not hang.
    await rejection(Promise.resolve().then(() => s.api.add(1, 1)), "call after dispose");
  },
};

// ---------------------------------------------------------------------------------------------
// HTTP batch scenarios (one HTTP request each)

const batchScenarios = {
  async simple() {
    const api = openBatch();
    eq(await api.add(1, 2), 3, "add(1,2)");
  },

  async pipeline() {
    const api = openBatch();
    const greeting = api.authenticate("secret").getUser().greet("Hi");
    const hello = api.greetName(api.getProfile().name);
    eq(await Promise.all([greeting, hello]), ["Hi, alice!", "Hello, bob"], "pipelined results");
  },

  async counter() {
    const api = openBatch();
    const counter = api.makeCounter(2);
    const a = counter.increment(3);
    const b = api.incrementCounter(counter, 4);
    eq(await Promise.all([a, b]), [5, 9], "[counter.increment(3), incrementCounter(counter, 4)]");
  },

  async map() {
    const api = openBatch();
    eq(await api.listIds().map(id => api.getUserName(id)), ["user1", "user2", "user3"],
       "listIds().map(getUserName)");
  },

  async error() {
    const api = openBatch();
    const [r1, r2] = await Promise.allSettled([api.fail(), api.add(2, 2)]);
    check(r1.status === "rejected", `fail() should reject, got ${fmt(r1.value)}`);
    checkError(r1.reason, RangeError, "something broke", "fail()");
    eq(r1.reason.code, "E_BROKE", "fail() error .code");
    check(r2.status === "fulfilled", `add(2,2) rejected: ${fmt(r2.reason)}`);
    eq(r2.value, 4, "add(2,2) in the same batch");
  },

  async callback() {
    const api = openBatch();
    const seen = [];
    eq(await api.pokeCallback(s => { seen.push(s); }), "poked", "pokeCallback(cb)");
    // The server's call to our callback arrives in the same response body, ahead of the result.
    await sleep(50);
    eq(seen, ["poke"], "callback invocations delivered in the batch response");
  },

  async "after-end"() {
    const api = openBatch();
    eq(await api.add(1, 1), 2, "add(1,1)");
    // The batch is over: further calls must reject (without a new HTTP request), not hang.
    const err = await rejection(api.add(2, 2), "call after the batch ended");
    check(err instanceof Error, `expected an Error, got ${fmt(err)}`);
  },
};

// ---------------------------------------------------------------------------------------------
// Runner

async function runOne(name, transport, fn) {
  const ctx = { name: `${transport}-${name}`, frames: [], cleanups: [] };
  let error;
  let timer;
  try {
    await Promise.race([
      fn(ctx),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timeout after ${opts.timeout} ms`)), opts.timeout);
      }),
    ]);
  } catch (err) {
    error = err instanceof AssertionError ? err.message
          : err instanceof Error ? `${err.constructor.name}: ${err.message}` : fmt(err);
  } finally {
    clearTimeout(timer);
  }
  for (const c of ctx.cleanups) {
    try { await c(); } catch { /* ignore */ }
  }
  const line = { scenario: name, transport, ok: error === undefined };
  if (error !== undefined) line.error = error;
  process.stdout.write(JSON.stringify(line) + "\n");
  if (error !== undefined && ctx.frames.length > 0) {
    process.stderr.write(`--- frames for ${ctx.name}:\n`);
    for (const f of ctx.frames.slice(-100)) process.stderr.write(`    ${f}\n`);
  }
  return error === undefined;
}

async function main() {
  const suites = [];
  if (opts.transport === "ws" || opts.transport === "both") suites.push(["ws", wsScenarios]);
  if (opts.transport === "batch" || opts.transport === "both") suites.push(["batch", batchScenarios]);

  if (opts.list) {
    for (const [t, s] of suites) for (const n of Object.keys(s)) console.log(`${t} ${n}`);
    return 0;
  }

  if (opts.only) {
    const known = new Set(suites.flatMap(([, s]) => Object.keys(s)));
    const unknown = opts.only.filter(n => !known.has(n));
    if (unknown.length) usage(`unknown scenario(s) for this transport: ${unknown.join(", ")}`);
  }

  let passed = 0;
  let failed = 0;
  for (const [transport, scenarios] of suites) {
    for (const [name, fn] of Object.entries(scenarios)) {
      if (opts.only && !opts.only.includes(name)) continue;
      if (await runOne(name, transport, fn)) passed++;
      else failed++;
    }
  }
  process.stdout.write(`${passed} passed, ${failed} failed\n`);
  return failed === 0 && passed > 0 ? 0 : 1;
}

main().then(code => {
  // Don't wait for lingering sockets / timers of broken sessions.
  process.exitCode = code;
  setTimeout(() => process.exit(code), 100).unref();
}, err => {
  process.stderr.write(`client.mjs: ${err?.stack ?? err}\n`);
  process.exit(1);
});
