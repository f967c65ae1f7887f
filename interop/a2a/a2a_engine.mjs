// A2A interop client for the engine: drives this project's own server (engine and bindings,
// a2a_interop_test.go's TestInteropA2AJSEngine) with the official JavaScript SDK (npm
// @a2a-js/sdk@1.3.0) over one binding, and checks what a2a-go's default handler does not have:
// the stream shape around an input-required task.
//
//   node a2a_engine.mjs <base URL> <JSONRPC|HTTP+JSON>
//
// The server runs internal/a2atest's agent:
//   "ask"            -> a task: working, then input-required ("what is your name?"); a follow-up
//                       message to the task: working, artifact "hello, NAME", completed
// Prints one JSON line per step, then "N passed, N failed"; exits 1 on failure.

import { randomUUID } from 'node:crypto';
import { ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';
import { Role, TaskState } from '@a2a-js/sdk';
import { ContentTypeNotSupportedError } from '@a2a-js/sdk/errors';

const [baseUrl, binding] = process.argv.slice(2);
if (!baseUrl || !['JSONRPC', 'HTTP+JSON'].includes(binding)) {
  console.error('usage: node a2a_engine.mjs <base URL> <JSONRPC|HTTP+JSON>');
  process.exit(2);
}

let passed = 0;
let failed = 0;

async function step(name, fn) {
  const started = Date.now();
  let timer;
  try {
    const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('timed out after 15 s')), 15000); });
    const detail = await Promise.race([fn(), timeout]);
    passed++;
    console.log(JSON.stringify({ binding, step: name, ok: true, ms: Date.now() - started, detail }));
  } catch (err) {
    failed++;
    console.log(JSON.stringify({ binding, step: name, ok: false, ms: Date.now() - started, error: String(err?.stack ?? err) }));
  } finally {
    clearTimeout(timer);
  }
}

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}

function textPart(text) {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' };
}

function request(parts, { taskId = '', contextId = '' } = {}) {
  return {
    tenant: '',
    message: { messageId: randomUUID(), contextId, taskId, role: Role.ROLE_USER, parts, metadata: undefined, extensions: [], referenceTaskIds: [] },
    configuration: undefined,
    metadata: undefined,
  };
}

const stateName = (s) => (TaskState[s] ?? String(s)).replace('TASK_STATE_', '');

function stateOf(ev) {
  const p = ev.payload;
  if (p?.$case === 'task') return p.value.status?.state;
  if (p?.$case === 'statusUpdate') return p.value.status?.state;
  return undefined;
}

function kind(ev) {
  const p = ev.payload;
  switch (p?.$case) {
    case 'task': return `task(${stateName(p.value.status?.state)})`;
    case 'statusUpdate': return `status(${stateName(p.value.status?.state)})`;
    case 'artifactUpdate': return 'artifact';
    case 'message': return 'message';
    default: return `unknown(${JSON.stringify(ev)})`;
  }
}

const settled = (s) => [TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED, TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED].includes(s);

// untilSettled reads a stream as A2A lets a client: up to the first terminal or interrupted state.
async function untilSettled(stream) {
  const kinds = [];
  let first;
  for await (const ev of stream) {
    first ??= ev;
    kinds.push(kind(ev));
    if (settled(stateOf(ev))) break;
  }
  return { kinds, first };
}

const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  preferredTransports: [binding],
}));
let client;

await step('card', async () => {
  client = await factory.createFromUrl(baseUrl);
  check(client.transport.protocolName === binding, `transport ${client.transport.protocolName}, want ${binding}`);
  return { transport: client.transport.protocolName };
});
if (!client) {
  console.log(`${passed} passed, ${failed + 1} failed`);
  process.exit(1);
}

// askTask streams "ask" and returns the input-required task.
async function askTask() {
  const { kinds, first } = await untilSettled(client.sendMessageStream(request([textPart('ask')])));
  check(JSON.stringify(kinds) === JSON.stringify(['task(SUBMITTED)', 'status(WORKING)', 'status(INPUT_REQUIRED)']), `ask stream ${JSON.stringify(kinds)}`);
  return first.payload.value;
}

await step('followup-stream', async () => {
  const task = await askTask();
  // The answer, streamed, read by a client that stops at the first interrupted or terminal
  // state: the stream opens with the task resumed, so the client reads on to the answer.
  const follow = request([textPart('Ada')], { taskId: task.id, contextId: task.contextId });
  const { kinds, first } = await untilSettled(client.sendMessageStream(follow));
  const want = ['task(WORKING)', 'status(WORKING)', 'artifact', 'status(COMPLETED)'];
  check(JSON.stringify(kinds) === JSON.stringify(want), `follow-up stream ${JSON.stringify(kinds)}, want ${JSON.stringify(want)}`);
  const history = first.payload.value.history ?? [];
  check(history.at(-1)?.messageId === follow.message.messageId, 'the first event carries the follow-up in its history');
  return { events: kinds };
});

await step('subscribe-resume', async () => {
  const task = await askTask();
  // A subscriber on the interrupted task: the task as it is, then only updates.
  const kinds = [];
  let subscribed;
  const isSubscribed = new Promise((r) => { subscribed = r; });
  const reading = (async () => {
    for await (const ev of client.resubscribeTask({ tenant: '', id: task.id })) {
      kinds.push(kind(ev));
      subscribed();
    }
  })();
  await isSubscribed;
  const res = await client.sendMessage(request([textPart('Bo')], { taskId: task.id, contextId: task.contextId }));
  check(res.status?.state === TaskState.TASK_STATE_COMPLETED, `follow-up ${JSON.stringify(res.status)}`);
  await reading;
  const want = ['task(INPUT_REQUIRED)', 'status(WORKING)', 'status(WORKING)', 'artifact', 'status(COMPLETED)'];
  check(JSON.stringify(kinds) === JSON.stringify(want), `subscription ${JSON.stringify(kinds)}, want ${JSON.stringify(want)}`);
  return { events: kinds };
});

await step('push-config', async () => {
  // (The SDK does not look for a result in a JSON-RPC response to a delete; the wire shape,
  // result {}, is checked by binding's TestJSONRPCDeleteHasResult.)
  const res = await client.sendMessage(request([textPart('hello')]));
  const taskId = res.id;
  const cfg = { tenant: '', id: 'cfg-1', taskId, url: 'https://receiver.example/hook', token: 'tok', authentication: undefined };
  const created = await client.createTaskPushNotificationConfig(cfg);
  check(created.id === 'cfg-1' && created.url === cfg.url, `created ${JSON.stringify(created)}`);
  const got = await client.getTaskPushNotificationConfig({ tenant: '', taskId, id: 'cfg-1' });
  check(got.token === 'tok', `got ${JSON.stringify(got)}`);
  const deleted = await client.deleteTaskPushNotificationConfig({ tenant: '', taskId, id: 'cfg-1' });
  const again = await client.deleteTaskPushNotificationConfig({ tenant: '', taskId, id: 'cfg-1' });
  const list = await client.listTaskPushNotificationConfig({ tenant: '', taskId, pageSize: 0, pageToken: '' });
  check((list.configs ?? []).length === 0, `after delete: ${JSON.stringify(list)}`);
  return { deleted: deleted ?? null, again: again ?? null };
});

async function expectError(fn, cls, what) {
  try {
    const v = await fn();
    throw new Error(`${what}: no error, got ${JSON.stringify(v)}`);
  } catch (err) {
    if (err instanceof cls) return err.constructor.name;
    // The SDK's JSON-RPC transport reports an error event inside an SSE stream as a plain
    // Error whose cause is the typed error.
    if (err?.cause instanceof cls) return `Error(cause: ${err.cause.constructor.name})`;
    throw new Error(`${what}: want ${cls.name}, got ${err?.constructor?.name}: ${err?.message}`);
  }
}

await step('content-type', async () => {
  // The card's input modes are text/plain: a PDF is refused, as a send and as a stream.
  const pdf = { content: { $case: 'url', value: 'https://example.com/f.pdf' }, metadata: undefined, filename: 'f.pdf', mediaType: 'application/pdf' };
  const send = await expectError(() => client.sendMessage(request([textPart('hello'), pdf])), ContentTypeNotSupportedError, 'send a PDF');
  const streamed = await expectError(async () => {
    const out = [];
    for await (const ev of client.sendMessageStream(request([pdf]))) out.push(kind(ev));
    return out;
  }, ContentTypeNotSupportedError, 'stream a PDF');
  const text = { ...textPart('hello'), mediaType: 'text/plain' };
  const ok = await client.sendMessage(request([text]));
  check(ok.status?.state === TaskState.TASK_STATE_COMPLETED, `text/plain ${JSON.stringify(ok.status)}`);
  return { send, streamed };
});

await step('extended-card', async () => {
  // The engine's extended card lists no interfaces: the binding gives it the public card's.
  const auth = { serviceParameters: { Authorization: 'Bearer alice-token' } };
  const card = await client.transport.getExtendedAgentCard({ tenant: '' }, auth);
  check(card.name === 'a2atest (extended)', `extended card ${card.name}`);
  const ifaces = card.supportedInterfaces ?? [];
  const mine = ifaces.find((i) => i.protocolBinding === binding);
  const want = binding === 'JSONRPC' ? `${baseUrl}/a2a/jsonrpc` : `${baseUrl}/a2a/rest`;
  check(mine?.url === want, `the extended card's ${binding} interface ${JSON.stringify(mine)}, want ${want}`);
  let anonymous;
  try {
    await client.transport.getExtendedAgentCard({ tenant: '' });
  } catch (err) {
    anonymous = err?.constructor?.name;
  }
  check(anonymous, 'an anonymous caller got the extended card');
  return { name: card.name, interfaces: ifaces.map((i) => i.protocolBinding), anonymous };
});

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
