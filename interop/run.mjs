#!/usr/bin/env node
// Starts a server, runs client.mjs (ws + batch) and probe.mjs against it, stops the server.
//
// Usage:
//   node run.mjs                          # against the JS reference server (node server.mjs)
//   node run.mjs -- CMD [ARGS...]         # against any server command that binds 127.0.0.1,
//                                         # takes "--port 0" (appended) and prints "LISTENING <port>"
//   node run.mjs --no-port-arg -- CMD...  # don't append "--port 0" to CMD
//
// Exit status is non-zero if any suite failed.

import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import path from "node:path";
import readline from "node:readline";

const here = path.dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
let appendPort = true;
let cmd = [process.execPath, path.join(here, "server.mjs")];
const sep = argv.indexOf("--");
const flags = sep >= 0 ? argv.slice(0, sep) : argv;
for (const f of flags) {
  if (f === "--no-port-arg") appendPort = false;
  else {
    process.stderr.write(`run.mjs: unknown argument ${f}\n`);
    process.exit(2);
  }
}
if (sep >= 0) {
  cmd = argv.slice(sep + 1);
  if (cmd.length === 0) {
    process.stderr.write("run.mjs: missing server command after --\n");
    process.exit(2);
  }
}
if (appendPort) cmd = [...cmd, "--port", "0"];

function startServer() {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd[0], cmd.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
    const timer = setTimeout(() => reject(new Error("server did not print LISTENING within 60 s")), 60000);
    child.on("error", err => { clearTimeout(timer); reject(err); });
    child.on("exit", code => { clearTimeout(timer); reject(new Error(`server exited early (${code})`)); });
    const rl = readline.createInterface({ input: child.stdout });
    rl.on("line", line => {
      const m = /^LISTENING (\d+)$/.exec(line.trim());
      if (m) {
        clearTimeout(timer);
        resolve({ child, port: Number(m[1]) });
      } else {
        process.stderr.write(`[server stdout] ${line}\n`);
      }
    });
  });
}

function runNode(script, args) {
  return new Promise(resolve => {
    const child = spawn(process.execPath, [path.join(here, script), ...args], { stdio: "inherit" });
    child.on("exit", code => resolve(code ?? 1));
  });
}

let child, port;
try {
  ({ child, port } = await startServer());
} catch (err) {
  process.stderr.write(`run.mjs: ${err.message}\n`);
  process.exit(1);
}
process.stderr.write(`server "${cmd.join(" ")}" listening on ${port}\n`);
const results = [];
try {
  results.push(["client ws", await runNode("client.mjs", ["--url", `ws://127.0.0.1:${port}/`, "--transport", "ws"])]);
  results.push(["client batch", await runNode("client.mjs", ["--url", `http://127.0.0.1:${port}/`, "--transport", "batch"])]);
  results.push(["probe", await runNode("probe.mjs", ["--url", `ws://127.0.0.1:${port}/`])]);
} finally {
  child.removeAllListeners("exit");
  child.stdin.end();
  child.kill("SIGTERM");
}
let failed = false;
for (const [name, code] of results) {
  process.stderr.write(`${name}: ${code === 0 ? "ok" : `FAILED (exit ${code})`}\n`);
  if (code !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
