// A2A interop client: drives an A2A 1.0 server with the official JavaScript
// SDK (npm @a2a-js/sdk@1.3.0, installed in interop/node_modules by `npm ci`).
//
//   node a2a_client.mjs <base URL> <JSONRPC|HTTP+JSON>
//
// The card is fetched from <base URL>/.well-known/agent-card.json and the
// client is made to use the named binding. The server must run an agent that
// behaves like the Go test's echo agent:
//   "hello"          -> task: submitted, working, artifact "echo: hello", completed
//   "sleep:DURATION" -> the same after DURATION
//   "wait:KEY"       -> a task that stays working until canceled
// Prints one JSON line per step, then "N passed, N failed"; exits 1 on failure.

import { randomUUID } from 'node:crypto';
import { ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';
import { Role, TaskState } from '@a2a-js/sdk';
import { TaskNotFoundError, VersionNotSupportedError } from '@a2a-js/sdk/errors';

const [baseUrl, binding] = process.argv.slice(2);
if (!baseUrl || !['JSONRPC', 'HTTP+JSON'].includes(binding)) {
  console.error('usage: node a2a_client.mjs <base URL> <JSONRPC|HTTP+JSON>');
  process.exit(2);
}

let passed = 0;
let failed = 0;

async function step(name, fn) {
  const started = Date.now();
  try {
    const detail = await fn();
    passed++;
    console.log(JSON.stringify({ binding, step: name, ok: true, ms: Date.now() - started, detail }));
  } catch (err) {
    failed++;
    console.log(JSON.stringify({ binding, step: name, ok: false, ms: Date.now() - started, error: String(err?.stack ?? err) }));
  }
}

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}

function message(text, contextId = '') {
  return {
    messageId: randomUUID(),
    contextId,
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function request(text, { contextId = '', returnImmediately = false } = {}) {
  return {
    tenant: '',
    message: message(text, contextId),
    configuration: returnImmediately ? { acceptedOutputModes: [], returnImmediately: true } : undefined,
    metadata: undefined,
  };
}

const isTask = (r) => r && typeof r === 'object' && 'status' in r && 'id' in r;
const stateName = (s) => TaskState[s] ?? String(s);

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

function textOfArtifacts(task) {
  return (task.artifacts ?? []).flatMap((a) => a.parts).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
}

async function expectError(promiseOrIter, cls, what) {
  try {
    const v = await promiseOrIter();
    throw new Error(`${what}: no error, got ${JSON.stringify(v)}`);
  } catch (err) {
    if (err instanceof cls) return err.constructor.name;
    // The SDK's JSON-RPC transport reports an error event inside an SSE
    // stream as a plain Error whose cause is the typed error.
    if (err?.cause instanceof cls) return `Error(cause: ${err.cause.constructor.name})`;
    throw new Error(`${what}: want ${cls.name}, got ${err?.constructor?.name}: ${err?.message}`);
  }
}

const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  preferredTransports: [binding],
}));
let client;

await step('card', async () => {
  client = await factory.createFromUrl(baseUrl);
  check(client.transport.protocolName === binding, `transport ${client.transport.protocolName}, want ${binding}`);
  check(client.protocolVersion === '1.0', `protocol version ${client.protocolVersion}`);
  return { transport: client.transport.protocolName, version: client.protocolVersion };
});
if (!client) {
  console.log(`${passed} passed, ${failed + 1} failed`);
  process.exit(1);
}

let sentTask;
await step('send', async () => {
  const res = await client.sendMessage(request('hello'));
  check(isTask(res), `result is not a task: ${JSON.stringify(res)}`);
  check(res.status.state === TaskState.TASK_STATE_COMPLETED, `state ${stateName(res.status.state)}`);
  check(textOfArtifacts(res) === 'echo: hello', `artifacts ${JSON.stringify(res.artifacts)}`);
  sentTask = res;
  return { id: res.id, state: stateName(res.status.state) };
});

await step('stream', async () => {
  const kinds = [];
  for await (const ev of client.sendMessageStream(request('stream me'))) kinds.push(kind(ev));
  const want = ['task(TASK_STATE_SUBMITTED)', 'status(TASK_STATE_WORKING)', 'artifact', 'status(TASK_STATE_COMPLETED)'];
  check(JSON.stringify(kinds) === JSON.stringify(want), `events ${JSON.stringify(kinds)}`);
  return kinds;
});

await step('get', async () => {
  check(sentTask, 'no task from send');
  const full = await client.getTask({ tenant: '', id: sentTask.id });
  const one = await client.getTask({ tenant: '', id: sentTask.id, historyLength: 1 });
  check(full.history.length >= 2, `full history ${full.history.length}`);
  check(one.history.length === 1, `historyLength=1 gave ${one.history.length}`);
  check(one.history[0].messageId === full.history.at(-1).messageId, 'historyLength=1 is not the latest message');
  const missing = await expectError(() => client.getTask({ tenant: '', id: 'no-such-task' }), TaskNotFoundError, 'get unknown task');
  return { history: full.history.length, unknown: missing };
});

await step('list', async () => {
  const contextId = randomUUID();
  const ids = [];
  for (const text of ['one', 'two']) {
    const res = await client.sendMessage(request(text, { contextId }));
    ids.push(res.id);
  }
  const list = await client.listTasks({
    tenant: '', contextId, status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 10, pageToken: '',
    historyLength: undefined, statusTimestampAfter: undefined, includeArtifacts: false,
  });
  const got = list.tasks.map((t) => t.id).sort();
  check(JSON.stringify(got) === JSON.stringify([...ids].sort()), `listed ${JSON.stringify(got)}, want ${JSON.stringify(ids)}`);
  return { tasks: got.length };
});

await step('cancel', async () => {
  const res = await client.sendMessage(request(`wait:${randomUUID()}`, { returnImmediately: true }));
  check(isTask(res) && res.status.state !== TaskState.TASK_STATE_COMPLETED, `not a running task: ${JSON.stringify(res)}`);
  let task;
  for (let i = 0; i < 200; i++) { // wait until the agent reports working
    task = await client.getTask({ tenant: '', id: res.id });
    if (task.status.state === TaskState.TASK_STATE_WORKING) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  const canceled = await client.cancelTask({ tenant: '', id: res.id });
  check(canceled.status.state === TaskState.TASK_STATE_CANCELED, `state after cancel ${stateName(canceled.status.state)}`);
  return { state: stateName(canceled.status.state) };
});

await step('subscribe', async () => {
  const res = await client.sendMessage(request('sleep:1s', { returnImmediately: true }));
  check(isTask(res), 'not a task');
  const kinds = [];
  for await (const ev of client.resubscribeTask({ tenant: '', id: res.id })) kinds.push(kind(ev));
  check(kinds.length >= 2, `events ${JSON.stringify(kinds)}`);
  check(kinds[0].startsWith('task('), `first event ${kinds[0]}, want the task`);
  check(kinds.at(-1) === 'status(TASK_STATE_COMPLETED)', `last event ${kinds.at(-1)}`);
  const missing = await expectError(async () => {
    const out = [];
    for await (const ev of client.resubscribeTask({ tenant: '', id: 'no-such-task' })) out.push(kind(ev));
    return out;
  }, TaskNotFoundError, 'subscribe to unknown task');
  return { events: kinds, unknown: missing };
});

await step('version', async () => {
  const err = await expectError(
    () => client.transport.getTask({ tenant: '', id: 'x' }, { serviceParameters: { 'A2A-Version': '9.9' } }),
    VersionNotSupportedError, 'A2A-Version 9.9');
  return { error: err };
});

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
