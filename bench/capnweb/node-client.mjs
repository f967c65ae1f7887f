#!/usr/bin/env node
// Second-opinion load client: the real npm capnweb client (from interop/node_modules) measures
// sequential add latency and add throughput with N calls in flight on one WebSocket.
//
// Usage: node bench/capnweb/node-client.mjs --url ws://127.0.0.1:PORT/
//          [--warm-ms 500] [--ms 2000] [--max 2000000] [--inflight 16]
// Prints one JSON line with the results (or {"error": ...} and exit status 1).

import { createRequire } from "node:module";

// capnweb and ws are installed for the interop harness; resolve them from there.
const require = createRequire(new URL("../../interop/package.json", import.meta.url));
const { WebSocket } = require("ws");
const { newWebSocketRpcSession } = await import(
  new URL("../../interop/node_modules/capnweb/dist/index.js", import.meta.url));

// capnweb's WebSocket transport uses the global WebSocket; Node 20 has none.
if (typeof globalThis.WebSocket === "undefined") globalThis.WebSocket = WebSocket;

function parseArgs(argv) {
  const o = { url: "", warmMs: 500, ms: 2000, max: 2_000_000, inflight: 16 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i], v = () => argv[++i];
    switch (a) {
      case "--url": o.url = v(); break;
      case "--warm-ms": o.warmMs = Number(v()); break;
      case "--ms": o.ms = Number(v()); break;
      case "--max": o.max = Number(v()); break;
      case "--inflight": o.inflight = Number(v()); break;
      default: throw new Error(`unknown argument ${a}`);
    }
  }
  if (!o.url) throw new Error("--url is required");
  return o;
}

const now = () => process.hrtime.bigint();
const us = ns => Number(ns) / 1000;

function pct(sorted, p) {
  return sorted.length ? sorted[Math.floor(p * (sorted.length - 1))] : 0;
}

// loop runs `workers` callers of add(1,2) for ms milliseconds or max calls; latencies in µs.
async function loop(api, workers, ms, max) {
  let started = 0;
  const lat = [];
  const t0 = now();
  const deadline = t0 + BigInt(Math.round(ms * 1e6));
  async function worker() {
    while (started < max) {
      started++;
      const s = now();
      const p = api.add(1, 2);
      const v = await p;
      const e = now();
      if (v !== 3) throw new Error(`add returned ${v}`);
      lat.push(us(e - s));
      if (e > deadline) break;
    }
  }
  await Promise.all(Array.from({ length: workers }, worker));
  const elapsed = Number(now() - t0) / 1e9;
  lat.sort((a, b) => a - b);
  return { calls: lat.length, seconds: elapsed, lat };
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const api = newWebSocketRpcSession(o.url);
  try {
    await loop(api, 1, o.warmMs, o.max);
    const seq = await loop(api, 1, o.ms, o.max);
    await loop(api, o.inflight, o.warmMs, o.max);
    const thr = await loop(api, o.inflight, o.ms, o.max);
    console.log(JSON.stringify({
      seq_calls: seq.calls, seq_seconds: seq.seconds,
      seq_p50_us: pct(seq.lat, 0.5), seq_p99_us: pct(seq.lat, 0.99),
      thr_calls: thr.calls, thr_seconds: thr.seconds,
      thr_calls_per_sec: thr.calls / thr.seconds,
      thr_p50_us: pct(thr.lat, 0.5), thr_p99_us: pct(thr.lat, 0.99),
      inflight: o.inflight,
    }));
  } finally {
    api[Symbol.dispose]();
  }
}

// A watchdog: never run for more than a minute past the planned time.
let plan = 0;
try { const o = parseArgs(process.argv.slice(2)); plan = 2 * (o.warmMs + o.ms); } catch {}
setTimeout(() => {
  console.log(JSON.stringify({ error: "node-client: timed out" }));
  process.exit(1);
}, plan + 60_000).unref();

main().then(() => process.exit(0), err => {
  console.log(JSON.stringify({ error: String(err && err.stack || err) }));
  process.exit(1);
});
