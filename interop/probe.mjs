#!/usr/bin/env node
// Raw Cap'n Web wire probes against a WebSocket server, using `ws` directly (no capnweb client).
//
// Usage: node probe.mjs --url ws://127.0.0.1:PORT/ [--only a,b] [--timeout MS] [--trace] [--list]
//
// Two kinds of probes:
//   * violations: the server must reply with one ["abort",["error",TYPE,MESSAGE,...]] frame and
//     then close the WebSocket with code 3000 and a reason of at most 123 UTF-8 bytes;
//   * well-behaved exchanges copied from GOLDEN.md: the server's answers must match the golden
//     ones (JSON compared semantically: object key order is ignored; where noted only an
//     error's type is checked, not its message).
// After every probe a fresh connection checks that ["push",["pipeline",0,["add"],[1,2]]] still
// resolves to 3 (the server survived).
//
// Output: one JSON line per probe, then "N passed, M failed"; exit status 1 on any failure.

import { WebSocket } from "ws";

// ---------------------------------------------------------------------------------------------
// Command line

function usage(msg) {
  if (msg) process.stderr.write(`probe.mjs: ${msg}\n`);
  process.stderr.write("usage: node probe.mjs --url ws://HOST:PORT/ [--only a,b] [--timeout MS] [--trace] [--list]\n");
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { url: undefined, only: undefined, timeout: 5000, trace: false, list: false };
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
      case "--only": opts.only = val().split(",").map(s => s.trim()).filter(Boolean); break;
      case "--timeout": opts.timeout = Number(val()); break;
      case "--trace": opts.trace = true; break;
      case "--list": opts.list = true; break;
      case "--help": case "-h": usage();
      default: usage(`unknown argument ${a}`);
    }
  }
  if (!opts.url && !opts.list) usage("--url is required");
  if (!(opts.timeout > 0)) usage("--timeout must be a positive number");
  if (opts.url) {
    const u = new URL(opts.url);
    if (u.protocol === "http:") u.protocol = "ws:";
    if (u.protocol === "https:") u.protocol = "wss:";
    opts.url = u.toString();
  }
  return opts;
}

const opts = parseArgs(process.argv.slice(2));

// ---------------------------------------------------------------------------------------------
// Matching

class ProbeFailure extends Error {}

const show = v => {
  const s = typeof v === "string" ? v : JSON.stringify(v, (k, x) => typeof x === "function" ? `<${x.label ?? "matcher"}>` : x);
  return s.length > 400 ? s.slice(0, 400) + "…" : s;
};

// `expected` is plain JSON, optionally containing matcher functions (value => boolean).
function matches(actual, expected) {
  if (typeof expected === "function") return expected(actual);
  if (Array.isArray(expected)) {
    return Array.isArray(actual) && actual.length === expected.length &&
        expected.every((e, i) => matches(actual[i], e));
  }
  if (expected !== null && typeof expected === "object") {
    if (actual === null || typeof actual !== "object" || Array.isArray(actual)) return false;
    const ka = Object.keys(actual).sort();
    const ke = Object.keys(expected).sort();
    return ka.length === ke.length && ka.every((k, i) => k === ke[i]) &&
        ke.every(k => matches(actual[k], expected[k]));
  }
  return Object.is(actual, expected);
}

function matcher(label, fn) {
  fn.label = label;
  return fn;
}

// An ["error", TYPE, <any message>] expression: for errors whose text may differ (e.g. a missing
// method), only the type is checked.
const errorOfType = type => matcher(`error ${type} with any message`,
    v => Array.isArray(v) && v.length === 3 && v[0] === "error" && v[1] === type &&
         typeof v[2] === "string");

// ---------------------------------------------------------------------------------------------
// Connection helper

const sleep = ms => new Promise(r => setTimeout(r, ms));

class Conn {
  constructor(label) {
    this.label = label;
    this.log = [];
    this.queue = [];
    this.wake = null;
    this.closeInfo = null;
    this.error = null;
    this.ws = new WebSocket(opts.url);
    this.opened = new Promise((resolve, reject) => {
      this.ws.once("open", resolve);
      this.ws.once("error", reject);
    });
    this.ws.on("message", (data, isBinary) => {
      const text = Buffer.from(data).toString("utf8");
      this.record(`S->C ${isBinary ? "<binary> " : ""}${text}`);
      this.queue.push({ text, isBinary });
      this.notify();
    });
    this.ws.on("close", (code, reason) => {
      this.closeInfo = { code, reason: reason.toString("utf8"), reasonBytes: reason.length };
      this.record(`closed code=${code} reason=${JSON.stringify(this.closeInfo.reason)}`);
      this.notify();
    });
    this.ws.on("error", err => {
      this.error = err;
      this.record(`error ${err.message}`);
      this.notify();
    });
  }

  record(line) {
    this.log.push(line);
    if (opts.trace) process.stderr.write(`  [${this.label}] ${line}\n`);
  }

  notify() {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  async open() {
    await this.opened;
    return this;
  }

  send(msg) {
    const text = typeof msg === "string" ? msg : JSON.stringify(msg);
    this.record(`C->S ${text.length > 300 ? text.slice(0, 300) + `… (${text.length} chars)` : text}`);
    this.ws.send(text);
  }

  sendBinary(text) {
    this.record(`C->S <binary> ${text}`);
    this.ws.send(Buffer.from(text, "utf8"), { binary: true });
  }

  // Next raw frame from the server; throws if the connection closes first or on timeout.
  async nextFrame(what, ms = 3000) {
    const deadline = Date.now() + ms;
    for (;;) {
      if (this.queue.length > 0) return this.queue.shift();
      if (this.closeInfo) {
        throw new ProbeFailure(`${what}: connection closed (code ${this.closeInfo.code} ` +
            `${JSON.stringify(this.closeInfo.reason)}) while waiting for a message`);
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new ProbeFailure(`${what}: timed out waiting for a message`);
      await new Promise(resolve => {
        this.wake = resolve;
        setTimeout(resolve, left);
      });
    }
  }

  async next(what, ms) {
    const frame = await this.nextFrame(what, ms);
    if (frame.isBinary) throw new ProbeFailure(`${what}: server sent a binary frame`);
    try {
      return JSON.parse(frame.text);
    } catch {
      throw new ProbeFailure(`${what}: server sent invalid JSON: ${show(frame.text)}`);
    }
  }

  // Next message must match `expected`.
  async expect(expected, what = "expected message") {
    const msg = await this.next(`${what} ${show(expected)}`);
    if (!matches(msg, expected)) {
      throw new ProbeFailure(`${what}: expected ${show(expected)}, got ${show(msg)}`);
    }
    return msg;
  }

  // The next expected.length messages must match `expected` in some order.
  async expectUnordered(expected, what = "expected messages", onMessage) {
    const pending = [...expected];
    while (pending.length > 0) {
      const msg = await this.next(`${what} (still waiting for ${show(pending)})`);
      const i = pending.findIndex(e => matches(msg, e));
      if (i < 0) {
        throw new ProbeFailure(`${what}: unexpected ${show(msg)}, still waiting for ${show(pending)}`);
      }
      pending.splice(i, 1);
      onMessage?.(msg);
    }
  }

  async waitClosed(ms) {
    const deadline = Date.now() + ms;
    while (!this.closeInfo && Date.now() < deadline) {
      await new Promise(resolve => {
        this.wake = resolve;
        setTimeout(resolve, Math.max(1, deadline - Date.now()));
      });
    }
    return this.closeInfo;
  }

  // The server must send ["abort",["error",TYPE,MSG,...]] and close with 3000 (reason ≤ 123 bytes).
  async expectAbortAndClose(what = "abort") {
    const msg = await this.next(`${what}: waiting for ["abort",...]`);
    const ok = Array.isArray(msg) && msg.length === 2 && msg[0] === "abort" &&
        Array.isArray(msg[1]) && msg[1][0] === "error" && typeof msg[1][1] === "string" &&
        typeof msg[1][2] === "string";
    if (!ok) throw new ProbeFailure(`${what}: expected ["abort",["error",...]], got ${show(msg)}`);
    const info = await this.waitClosed(3000);
    if (!info) throw new ProbeFailure(`${what}: server sent abort but did not close within 3 s`);
    if (info.code !== 3000) {
      throw new ProbeFailure(`${what}: expected close code 3000, got ${info.code}` +
          (this.error ? ` (client error: ${this.error.message})` : ""));
    }
    if (info.reasonBytes > 123) {
      throw new ProbeFailure(`${what}: close reason is ${info.reasonBytes} bytes (max 123)`);
    }
    const extra = this.queue.filter(f => !f.isBinary).map(f => f.text);
    if (extra.length) throw new ProbeFailure(`${what}: messages after abort: ${show(extra)}`);
    return { abort: msg[1], close: info };
  }

  // Polite end of a well-behaved probe; also verifies the server did not abort meanwhile.
  async finish() {
    await sleep(30);
    for (const f of this.queue) {
      if (!f.isBinary && f.text.startsWith('["abort"')) {
        throw new ProbeFailure(`unexpected abort from server: ${show(f.text)}`);
      }
    }
    if (this.closeInfo) {
      throw new ProbeFailure(`server closed the connection unexpectedly (code ${this.closeInfo.code} ` +
          `${JSON.stringify(this.closeInfo.reason)})`);
    }
    this.ws.close(1000, "probe done");
    await this.waitClosed(1000);
  }

  destroy() {
    if (this.ws.readyState !== WebSocket.CLOSED) this.ws.terminate();
  }
}

// ---------------------------------------------------------------------------------------------
// Probes

const ADD_1_2 = ["push", ["pipeline", 0, ["add"], [1, 2]]];

// Builds a violation probe: run `setup` (may exchange well-behaved messages), then expect abort.
const violation = setup => async conn => {
  await setup(conn);
  return await conn.expectAbortAndClose();
};

const violations = {
  "bad-array": violation(async c => {
    // [1,2] is not a valid expression: literal arrays must be escaped as [[1,2]].
    c.send(["push", ["pipeline", 0, ["echo"], [[1, 2]]]]);
    c.send(["pull", 1]);
  }),
  "bad-message": violation(async c => {
    c.send(["frobnicate", 1]);
  }),
  "binary-frame": violation(async c => {
    c.sendBinary(JSON.stringify(ADD_1_2));
  }),
  "pull-unknown": violation(async c => {
    c.send(["pull", 42]);
  }),
  "release-unknown": violation(async c => {
    c.send(["release", 99, 1]);
  }),
  "release-overcount": violation(async c => {
    c.send(ADD_1_2);
    c.send(["pull", 1]);
    await c.expect(["resolve", 1, 3]);
    c.send(["release", 1, 2]);
  }),
  "use-after-release": violation(async c => {
    c.send(["push", ["pipeline", 0, ["makeCounter"], [1]]]);
    c.send(["pull", 1]);
    await c.expect(["resolve", 1, ["export", -1]]);
    c.send(["release", 1, 1]);
    c.send(["push", ["pipeline", -1, ["increment"], [5]]]);
    c.send(["pull", 2]);
    await c.expect(["resolve", 2, 6]);
    c.send(["release", 2, 1]);
    c.send(["release", -1, 1]);
    c.send(["push", ["pipeline", -1, ["increment"], [5]]]);
    c.send(["pull", 3]);
  }),
  "invalid-json": violation(async c => {
    c.send("{not json");
  }),
  "truncated-json": violation(async c => {
    c.send('["push",');
  }),
  "empty-text": violation(async c => {
    c.send("");
  }),
  "non-array-message": violation(async c => {
    c.send('{"push":1}');
  }),
  "scalar-message": violation(async c => {
    c.send("42");
  }),
  "empty-message": violation(async c => {
    c.send("[]");
  }),
  "push-missing-expression": violation(async c => {
    c.send('["push"]');
  }),
  "push-not-expression": violation(async c => {
    // An array whose first element is not a known expression type.
    c.send(["push", ["bogus", 1]]);
    c.send(["pull", 1]);
  }),
  "push-empty-array": violation(async c => {
    c.send(["push", []]);
    c.send(["pull", 1]);
  }),
  "push-malformed-pipeline": violation(async c => {
    // The property path must be an array.
    c.send(["push", ["pipeline", 0, "add", [1, 2]]]);
    c.send(["pull", 1]);
  }),
  "pipeline-unknown-import": violation(async c => {
    c.send(["push", ["pipeline", 7, ["add"], [1, 2]]]);
    c.send(["pull", 1]);
  }),
  "pull-non-integer": violation(async c => {
    c.send(["pull", "1"]);
  }),
  "nested-100000": violation(async c => {
    const n = 100000;
    c.send('["push",' + "[".repeat(n) + "]".repeat(n) + "]");
  }),
  "nested-object-100000": violation(async c => {
    const n = 100000;
    c.send('["push",["pipeline",0,["echo"],[' + '{"a":'.repeat(n) + "1" + "}".repeat(n) + "]]]");
  }),
  "long-reason": violation(async c => {
    // The abort text exceeds a close frame's 123-byte reason limit: it must be truncated.
    c.send(["frobnicate", "x".repeat(500)]);
  }),
  "long-reason-utf8": violation(async c => {
    // Truncation must not split a UTF-8 sequence (the client rejects invalid UTF-8 reasons).
    c.send(["frobnicate", "é€😀".repeat(100)]);
  }),
};

const wellBehaved = {
  async simple(c) {
    c.send(ADD_1_2);
    c.send(["pull", 1]);
    await c.expect(["resolve", 1, 3]);
    await c.finish();
  },

  async "import-call"(c) {
    c.send(["push", ["import", 0, ["add"], [2, 3]]]);
    c.send(["pull", 1]);
    await c.expect(["resolve", 1, 5]);
    await c.finish();
  },

  async "get-method"(c) {
    c.send(["push", ["pipeline", 0, ["add"]]]);
    c.send(["pull", 1]);
    await c.expect(["resolve", 1, ["export", -1]]);
    await c.finish();
  },

  async "get-prop"(c) {
    c.send(["push", ["pipeline", 0, ["getProfile"], []]]);
    c.send(["push", ["pipeline", 1, ["tags", 1]]]);
    c.send(["pull", 2]);
    await c.expect(["resolve", 2, "y"]);
    await c.finish();
  },

  async "get-proto"(c) {
    c.send(["push", ["pipeline", 0, ["constructor"], []]]);
    c.send(["pull", 1]);
    c.send(["push", ["pipeline", 0, ["__proto__"]]]);
    c.send(["pull", 2]);
    await c.expectUnordered([
      ["reject", 1, errorOfType("TypeError")],
      ["resolve", 2, ["undefined"]],
    ]);
    await c.finish();
  },

  async "push-data"(c) {
    c.send(["push", { a: [[1, 2, 3]] }]);
    c.send(["push", ["pipeline", 0, ["echo"], [["pipeline", 1, ["a"]]]]]);
    c.send(["pull", 2]);
    await c.expect(["resolve", 2, [[1, 2, 3]]]);
    await c.finish();
  },

  async remap(c) {
    c.send(["push", ["pipeline", 0, ["listIds"], []]]);
    c.send(["push", ["remap", 1, [], [["import", 0]],
                     [["pipeline", -1, ["getUserName"], [["pipeline", 0]]], ["pipeline", 1]]]]);
    c.send(["pull", 2]);
    // The JS server answers with promises that it resolves next; a server may equally await
    // them and answer with the values (the Go server does). Both mean the same to a client.
    const first = await c.next("remap result");
    if (matches(first, ["resolve", 2, [["user1", "user2", "user3"]]])) {
      await c.finish();
      return;
    }
    if (!matches(first, ["resolve", 2, [[["promise", -1], ["promise", -2], ["promise", -3]]]])) {
      throw new ProbeFailure(`remap result: got ${show(first)}`);
    }
    await c.expectUnordered(
        [["resolve", -1, "user1"], ["resolve", -2, "user2"], ["resolve", -3, "user3"]],
        "promise resolutions",
        msg => c.send(["release", msg[1], 1]));
    await c.finish();
  },

  async values(c) {
    // Sent verbatim (includes a "__proto__" key and other prototype-ish keys the server drops).
    c.send('["push",["pipeline",0,["echo"],[{"arr":[[1,[[2]],[[]]]],"d":["date",0],"dn":["date",null],' +
           '"b":["bigint","-42"],"u":["undefined"],"inf":["inf"],"bytes":["bytes","AQID"],' +
           '"ab":["bytes","AQID","ArrayBuffer"],"url":["url","https://x.test/p"],' +
           '"e":["error","Bogus","m","stack-here",{"code":7}],"__proto__":{"polluted":true},' +
           '"toString":"evil","constructor":1,"toJSON":2,"ok":"yes"}]]]');
    c.send(["pull", 1]);
    await c.expect(JSON.parse(
        '["resolve",1,{"arr":[[1,[[2]],[[]]]],"d":["date",0],"dn":["date",null],"b":["bigint","-42"],' +
        '"u":["undefined"],"inf":["inf"],"bytes":["bytes","AQID"],"ab":["bytes","AQID","ArrayBuffer"],' +
        '"url":["url","https://x.test/p"],"e":["error","Error","m",null,{"code":7}],"ok":"yes"}]'));
    await c.finish();
  },

  async callback(c) {
    c.send(["push", ["pipeline", 0, ["callMeBack"], [["export", -1], 4]]]);
    c.send(["pull", 1]);
    await c.expect(["push", ["pipeline", -1, [], [4]]]);
    const pull = await c.expect(["pull", matcher("import id", v => Number.isInteger(v) && v > 0)]);
    const id = pull[1];
    c.send(["resolve", id, 40]);
    await c.expectUnordered([["release", id, 1], ["release", -1, 1], ["resolve", 1, 41]]);
    c.send(["release", 1, 1]);
    await c.finish();
  },

  async "callback-reject"(c) {
    c.send(["push", ["pipeline", 0, ["callMeBack"], [["export", -1], 4]]]);
    c.send(["pull", 1]);
    await c.expect(["push", ["pipeline", -1, [], [4]]]);
    const pull = await c.expect(["pull", matcher("import id", v => Number.isInteger(v) && v > 0)]);
    const id = pull[1];
    c.send(["reject", id, ["error", "TypeError", "client refused"]]);
    await c.expectUnordered([
      ["release", id, 1],
      ["release", -1, 1],
      ["reject", 1, ["error", "TypeError", "client refused"]],
    ]);
    c.send(["release", 1, 1]);
    await c.finish();
  },

  async "client-abort"(c) {
    c.send(["abort", ["error", "Error", "client going away"]]);
    const info = await c.waitClosed(3000);
    if (!info) throw new ProbeFailure("server did not close after the client's abort");
    if (info.code !== 3000) throw new ProbeFailure(`expected close code 3000, got ${info.code}`);
    if (info.reasonBytes > 123) throw new ProbeFailure(`close reason is ${info.reasonBytes} bytes`);
    const extra = c.queue.map(f => f.text);
    if (extra.length) throw new ProbeFailure(`server sent messages after the client's abort: ${show(extra)}`);
  },
};

// ---------------------------------------------------------------------------------------------
// Runner

async function healthCheck() {
  const c = new Conn("health");
  try {
    await c.open();
    c.send(ADD_1_2);
    c.send(["pull", 1]);
    await c.expect(["resolve", 1, 3], "health check add(1,2)");
    c.ws.close(1000, "probe done");
    await c.waitClosed(1000);
  } finally {
    c.destroy();
  }
}

function withTimeout(p, ms, what) {
  let timer;
  return Promise.race([
    p,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new ProbeFailure(`${what}: timed out after ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

async function runProbe(name, kind, fn) {
  const line = { probe: name, kind, ok: true };
  const conn = new Conn(name);
  try {
    await withTimeout((async () => {
      try {
        await conn.open();
      } catch (err) {
        throw new ProbeFailure(`could not connect: ${err.message}`);
      }
      const result = await fn(conn);
      if (result?.abort) {
        const [, type, message, ...rest] = result.abort;
        const short = typeof message === "string" && message.length > 160
            ? message.slice(0, 160) + "…" : message;
        line.abort = ["error", type, short, ...rest];
        line.close = { code: result.close.code, reasonBytes: result.close.reasonBytes };
      }
    })(), opts.timeout, "probe");
  } catch (err) {
    line.ok = false;
    line.error = err instanceof ProbeFailure ? err.message : `${err?.name}: ${err?.message}`;
  } finally {
    conn.destroy();
  }
  try {
    await withTimeout(healthCheck(), opts.timeout, "health check");
  } catch (err) {
    line.ok = false;
    const msg = `server unhealthy after probe: ${err.message}`;
    line.error = line.error ? `${line.error}; ${msg}` : msg;
  }
  process.stdout.write(JSON.stringify(line) + "\n");
  if (!line.ok) {
    process.stderr.write(`--- frames for ${name}:\n`);
    for (const l of conn.log.slice(-60)) process.stderr.write(`    ${l.length > 400 ? l.slice(0, 400) + "…" : l}\n`);
  }
  return line.ok;
}

async function main() {
  const all = [
    ...Object.entries(violations).map(([n, f]) => [n, "violation", f]),
    ...Object.entries(wellBehaved).map(([n, f]) => [n, "golden", f]),
  ];
  if (opts.list) {
    for (const [n, k] of all) console.log(`${k} ${n}`);
    return 0;
  }
  if (opts.only) {
    const known = new Set(all.map(([n]) => n));
    const unknown = opts.only.filter(n => !known.has(n));
    if (unknown.length) usage(`unknown probe(s): ${unknown.join(", ")}`);
  }
  let passed = 0;
  let failed = 0;
  for (const [name, kind, fn] of all) {
    if (opts.only && !opts.only.includes(name)) continue;
    if (await runProbe(name, kind, fn)) passed++;
    else failed++;
  }
  process.stdout.write(`${passed} passed, ${failed} failed\n`);
  return failed === 0 && passed > 0 ? 0 : 1;
}

main().then(code => {
  process.exitCode = code;
  setTimeout(() => process.exit(code), 100).unref();
}, err => {
  process.stderr.write(`probe.mjs: ${err?.stack ?? err}\n`);
  process.exit(1);
});
