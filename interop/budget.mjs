#!/usr/bin/env node
// Runs one of the memory-budget scenarios of issues 23 and 24 against a capnweb server with the
// real npm `capnweb` client, and prints one JSON line: {"scenario", "ok", ...details} or
// {"scenario", "ok": false, "error"}. Exit status 1 when the scenario failed.
//
// Usage: node budget.mjs --url ws://127.0.0.1:PORT/ --scenario NAME [--n N]
//
// Scenarios (the server offers the golden test API plus range(n) and double(x)):
//   long-lived  N chains api.authenticate("secret").getUser().greet("Hi"), 200 at a time,
//               awaiting only greet: the client never releases the intermediates; the session
//               must not be aborted (default N 40000: 80,000 exports, over the old limit 65,536)
//   map         api.range(N).map(x => api.double(x)), and with two calls per element (N 10000)
//   big-message api.echo(a string of N MiB) (default 20: the JS library allows 32 Mi units)
//   flood       N calls api.blob(200000) never awaited, then one awaited call: the server's budget
//               must end the session, and the awaited call fail with its abort message

import { WebSocket } from "ws";
import { newWebSocketRpcSession } from "capnweb";

if (typeof globalThis.WebSocket === "undefined") {
  globalThis.WebSocket = WebSocket;
}

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith("--")) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const url = args.url;
const scenario = args.scenario;
if (!url || !scenario) {
  process.stderr.write("usage: node budget.mjs --url URL --scenario long-lived|map|big-message|flood [--n N]\n");
  process.exit(2);
}
const n = args.n !== undefined ? Number(args.n) : undefined;

function report(result) {
  process.stdout.write(JSON.stringify({ scenario, ...result }) + "\n");
  process.exit(result.ok ? 0 : 1);
}

const scenarios = {
  async "long-lived"(api) {
    const chains = n ?? 40000;
    for (let done = 0; done < chains;) {
      const round = [];
      for (let i = 0; i < 200 && done + i < chains; i++) {
        round.push(api.authenticate("secret").getUser().greet("Hi"));
      }
      for (const got of await Promise.all(round)) {
        if (got !== "Hi, alice!") throw new Error(`chain ${done}: greet = ${JSON.stringify(got)}`);
      }
      done += round.length;
    }
    // Still served after all of them.
    const sum = await api.add(1, 2);
    if (sum !== 3) throw new Error(`add after the chains = ${sum}`);
    return { chains };
  },

  async map(api) {
    const len = n ?? 10000;
    const once = await api.range(len).map(x => api.double(x));
    const twice = await api.range(len).map(x => api.double(api.double(x)));
    if (once.length !== len || once[len - 1] !== 2 * (len - 1)) throw new Error(`one call per element: ${once.length} results, last ${once[len - 1]}`);
    if (twice.length !== len || twice[len - 1] !== 4 * (len - 1)) throw new Error(`two calls per element: ${twice.length} results, last ${twice[len - 1]}`);
    return { elements: len };
  },

  async "big-message"(api) {
    const size = (n ?? 20) << 20;
    const got = await api.echo("m".repeat(size));
    if (got.length !== size) throw new Error(`echo returned ${got.length} characters, want ${size}`);
    return { bytes: size };
  },

  async flood(api) {
    const calls = n ?? 200;
    for (let i = 0; i < calls; i++) api.blob(200000); // pipelined, never awaited: never pulled
    try {
      await api.add(1, 2);
    } catch (err) {
      return { ok: true, aborted: true, error: String(err && err.message || err) };
    }
    // The last call may be answered before the budget is reached: ask until the session ends.
    for (let i = 0; i < 100; i++) {
      for (let j = 0; j < calls; j++) api.blob(200000);
      try {
        await api.add(1, 2);
      } catch (err) {
        return { ok: true, aborted: true, error: String(err && err.message || err) };
      }
    }
    return { ok: false, error: "the session was never aborted" };
  },
};

const run = scenarios[scenario];
if (!run) {
  process.stderr.write(`budget.mjs: unknown scenario ${scenario}\n`);
  process.exit(2);
}
const api = newWebSocketRpcSession(url);
try {
  const res = await run(api);
  report({ ok: true, ...res });
} catch (err) {
  report({ ok: false, error: String(err && err.stack || err) });
}
