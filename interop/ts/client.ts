// A TypeScript client of the capnweb binding, written against web/a2awebcap.d.ts (the types
// `a2awebcap serve` serves at /web/a2awebcap.d.ts) and the stock npm capnweb client.
// TestTypeScriptClient (cmd/a2awebcap) type-checks it with tsc (strict), compiles it, and runs
// it against a started server:
//
//   node out/client.js <base URL>
//
// The server runs the runtime assistant with a fake model: "echo …" is answered by a rule,
// "slow …" by a model that streams a first token and then waits until canceled, anything
// else by a model that streams its answer. Prints one JSON line per step ({"step","ok"}), then
// "N passed, N failed"; exits 1 on failure.

import { randomUUID } from "node:crypto";
import { WebSocket } from "ws";
import { newHttpBatchRpcSession, newWebSocketRpcSession, type RpcPromise } from "capnweb";
import type {
  A2AError,
  A2AService,
  AgentCard,
  MessageInput,
  StreamResponse,
  Task,
  TaskState,
} from "a2awebcap";

// capnweb's WebSocket transport uses the global WebSocket; Node 20 has none.
(globalThis as { WebSocket?: unknown }).WebSocket ??= WebSocket;

const baseUrl = process.argv[2];
if (!baseUrl) {
  console.error("usage: node out/client.js <base URL>");
  process.exit(2);
}
const httpUrl = `${baseUrl}/a2a/capnweb`;
const wsUrl = httpUrl.replace(/^http/, "ws");

let passed = 0;
let failed = 0;

async function step(name: string, fn: () => Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("timed out after 30 s")), 30_000);
    });
    const detail = await Promise.race([fn(), timeout]);
    passed++;
    console.log(JSON.stringify({ step: name, ok: true, detail }));
  } catch (err) {
    failed++;
    console.log(JSON.stringify({ step: name, ok: false, error: String((err as Error)?.stack ?? err) }));
  } finally {
    clearTimeout(timer);
  }
}

function check(cond: boolean, what: string): asserts cond {
  if (!cond) throw new Error(`check failed: ${what}`);
}

function message(text: string, extra: Partial<MessageInput> = {}): MessageInput {
  return { messageId: randomUUID(), role: "ROLE_USER", parts: [{ text }], ...extra };
}

// The text of a task's last status message.
function statusText(task: Task): string {
  return (task.status.message?.parts ?? []).map((p) => ("text" in p ? p.text : "")).join("");
}

// The task of a result that should be one (a SendMessageResponse, or a streaming call's with an
// observer).
function taskOf(r: object): Task {
  check("task" in r, `a task, got ${JSON.stringify(Object.keys(r))}`);
  return (r as { task: Task }).task;
}

const agent = newWebSocketRpcSession<A2AService>(wsUrl);

await step("card", async () => {
  const card: AgentCard = await agent.getAgentCard();
  const capnweb = card.supportedInterfaces.find((i) => i.protocolBinding === "urn:a2awebcap:capnweb:v1");
  check(capnweb !== undefined, "the card lists the capnweb binding");
  return { name: card.name, skills: card.skills.map((s) => s.id) };
});

let contextId = "";
await step("send", async () => {
  const res = await agent.sendMessage({ message: message("echo hello from TypeScript") });
  const task = taskOf(res);
  const state: TaskState = task.status.state;
  check(state === "TASK_STATE_COMPLETED", `state ${state}`);
  check(statusText(task).includes("hello from TypeScript"), `answer ${statusText(task)}`);
  contextId = task.contextId;
  return { id: task.id, state };
});

await step("stream-observer", async () => {
  const events: StreamResponse[] = [];
  const res = await agent.sendStreamingMessage({ message: message("why is the sky blue?", { contextId }) }, (ev) => {
    events.push(ev);
  });
  const task = taskOf(res);
  check(task.status.state === "TASK_STATE_COMPLETED", `state ${task.status.state}`);
  check(events.length >= 3 && "task" in events[0]!, `events ${JSON.stringify(events.map((e) => Object.keys(e)[0]))}`);
  const streamed = events
    .flatMap((e) => ("artifactUpdate" in e ? e.artifactUpdate.artifact.parts : []))
    .map((p) => ("text" in p ? p.text : ""))
    .join("");
  check(streamed.includes("Rayleigh"), `streamed tokens ${JSON.stringify(streamed)}`);
  const last = events[events.length - 1]!;
  check("statusUpdate" in last && last.statusUpdate.status.state === "TASK_STATE_COMPLETED", "the stream ends completed");
  return { events: events.length };
});

await step("stream-readable", async () => {
  const res = await agent.sendStreamingMessage({ message: message("echo streamed", { contextId }) });
  check("stream" in res, "a ReadableStream without an observer");
  const kinds: string[] = [];
  const reader = res.stream.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    kinds.push(Object.keys(value)[0]!);
  }
  const id = await res.handle.id;
  const task = await res.handle.get();
  check(task.id === id && task.status.state === "TASK_STATE_COMPLETED", `handle ${id}: ${task.status.state}`);
  return { kinds };
});

await step("get-cancel", async () => {
  const sent = await agent.sendMessage({
    message: message("slow: tell me everything", { contextId }),
    configuration: { returnImmediately: true },
  });
  const id = taskOf(sent).id;
  const got = await agent.getTask({ id });
  check(got.id === id, "getTask finds the task");
  // Pipelined: task(id) costs no round trip of its own.
  const canceled = await agent.task(id).cancel();
  check(canceled.status.state === "TASK_STATE_CANCELED", `after cancel: ${canceled.status.state}`);
  const again = await agent.getTask({ id, historyLength: 1 });
  check(again.status.state === "TASK_STATE_CANCELED", `getTask after cancel: ${again.status.state}`);
  return { id };
});

await step("push", async () => {
  // Push through a callback: the server calls it with each of the task's events.
  const sent = await agent.sendMessage({ message: message("slow: and push it"), configuration: { returnImmediately: true } });
  const id = taskOf(sent).id;
  const states: string[] = [];
  let canceled!: () => void;
  const ended = new Promise<void>((resolve) => (canceled = resolve));
  using sub = await agent.subscribeToPushNotifications(id, (event) => {
    if ("task" in event) {
      states.push(event.task.status.state);
      // Canceled before the server followed the task: its final state comes as the task.
      if (event.task.status.state === "TASK_STATE_CANCELED") canceled();
    }
    if ("statusUpdate" in event) {
      states.push(event.statusUpdate.status.state);
      if (event.statusUpdate.status.state === "TASK_STATE_CANCELED") canceled();
    }
  });
  await agent.task(id).cancel();
  await ended;
  await sub.cancel();
  check(states.at(-1) === "TASK_STATE_CANCELED", `pushed ${states}`);
  return { states };
});

await step("attenuate", async () => {
  // A read-only capability of the same principal, saved and restored by its token.
  using readOnly = agent.attenuate({ readOnly: true, expiresIn: 600 });
  const token: string = await readOnly.save();
  using restored = agent.restore(token);
  const list = await restored.listTasks({ pageSize: 1 });
  check(list.tasks.length === 1, "a restored session reads the principal's tasks");
  try {
    await restored.sendMessage({ message: message("echo no") });
  } catch (e) {
    const err = e as A2AError;
    check(err.reason === "UNAUTHORIZED", `a read-only send: ${err.reason}`);
    await agent.revoke(readOnly);
    try {
      await restored.getTask({ id: list.tasks[0]!.id });
    } catch (e2) {
      check((e2 as A2AError).reason === "UNAUTHORIZED", `after revoke: ${(e2 as A2AError).reason}`);
      return { token: token.length };
    }
    throw new Error("a revoked session still reads");
  }
  throw new Error("a read-only session sent a message");
});

await step("errors", async () => {
  try {
    await agent.getTask({ id: "no-such-task" });
  } catch (e) {
    const err = e as A2AError;
    check(err.code === -32001 && err.reason === "TASK_NOT_FOUND", `error ${err.code} ${err.reason}`);
    return { code: err.code, reason: err.reason };
  }
  throw new Error("getTask of an unknown task resolved");
});

await step("session", async () => {
  const list = await agent.listSessions({ pageSize: 10 });
  check(list.sessions.some((s) => s.id === contextId), `listSessions has ${contextId}`);
  using session = agent.session(contextId);
  const [metrics, history] = await Promise.all([session.metrics(), session.history({ limit: 10 })]);
  check(metrics.id === contextId && metrics.turn >= 3, `metrics ${JSON.stringify(metrics)}`);
  check(history.turns.length >= 3 && history.turns[0]!.user.content.includes("hello from TypeScript"), "history");
  // Shapes the types promise: durations as ProtoJSON strings, counts by turn status.
  check(typeof metrics.latencyMean === "string" && typeof history.turns[0]!.latency === "string", "durations are strings");
  check(typeof metrics.turns.completed === "number" && typeof metrics.used.tokensIn === "number", "metrics' counts");
  const id: string = await session.id;
  return { id, state: metrics.state, turns: metrics.turn, used: metrics.used };
});

await step("memory", async () => {
  await agent.sendMessage({ message: message("remember my city is Lisbon") });
  const view = await agent.memory().get();
  const belief = view.beliefs.find((b) => b.value.includes("Lisbon"));
  check(belief !== undefined, `beliefs ${JSON.stringify(view.beliefs)}`);
  check(typeof belief.confidence === "number" && belief.status === "active" && Array.isArray(belief.provenance.observations) &&
    typeof belief.provenance.rule === "string" && typeof view.observations === "number", `belief ${JSON.stringify(belief)}`);
  return { subject: belief.subject, source: belief.provenance.source.kind };
});

await step("capabilities", async () => {
  using caps = agent.capabilities();
  const [offered, held] = await Promise.all([caps.available(), caps.installed()]);
  const self = offered.find((o) => o.manifest.name === "self");
  check(self !== undefined && typeof self.installed === "boolean" && typeof self.default.kind === "string", `available ${JSON.stringify(offered)}`);
  check(Array.isArray(held), "installed");
  const audit = await caps.audit({ limit: 5 });
  check(Array.isArray(audit), "audit");
  return { offered: offered.map((o) => o.manifest.name), held: held.map((h) => h.name) };
});

await step("batch", async () => {
  // HTTP batch: send → getTask pipelined in one request. A SendMessageResponse is a task or a
  // message; to pipeline into the one it will be, say which (docs/web.md, "TypeScript types").
  const batch = newHttpBatchRpcSession<A2AService>(httpUrl);
  const sent = batch.sendMessage({ message: message("echo batched") }) as unknown as RpcPromise<{ task: Task }>;
  const task = await batch.getTask({ id: sent.task.id });
  check(task.status.state === "TASK_STATE_COMPLETED", `batched: ${task.status.state}`);
  return { id: task.id };
});

agent[Symbol.dispose]();
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
