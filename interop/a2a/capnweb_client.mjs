// A2A over Cap'n Web interop client: drives the capnweb binding (docs/capnweb-binding.md) with
// nothing but the stock npm capnweb@0.12.0 (and ws, since Node 20 has no global WebSocket).
//
//   node capnweb_client.mjs <base URL>
//
// The server (capnweb_interop_test.go) runs the built-in agent ("echo", "wait N", "ask") with a
// fast tick, push notifications off and an extended card; it maps the bearer tokens
// "alice-token" and "bob-token" to the principals alice and bob, and serves
// GET <base URL>/test/stats?probe=NAME: {imports, exports, done} of the server's capnweb session
// that was opened with ?probe=NAME.
//
// Prints one JSON line per step ({"step","ok","error"?}), {"wire",...} lines with the frames of a
// few recorded exchanges, then "N passed, N failed"; exits 1 on failure.

import { randomUUID } from 'node:crypto';
import { WebSocket } from 'ws';
import { RpcSession, WebSocketTransport, newHttpBatchRpcSession, newWebSocketRpcSession } from 'capnweb';

// capnweb's WebSocket transport references the global WebSocket; Node 20 has none.
globalThis.WebSocket ??= WebSocket;

const [baseUrl] = process.argv.slice(2);
if (!baseUrl) {
  console.error('usage: node capnweb_client.mjs <base URL>');
  process.exit(2);
}
const httpUrl = `${baseUrl}/a2a/capnweb`;
const wsUrl = httpUrl.replace(/^http/, 'ws');
const ALICE = { Authorization: 'Bearer alice-token' };
const BOB = { Authorization: 'Bearer bob-token' };
const S = (name) => `TASK_STATE_${name}`;

// A dropped session can leave rejected promises nobody awaits; the step fails on its own.
process.on('unhandledRejection', () => {});

let passed = 0;
let failed = 0;
const cleanups = [];

async function step(name, fn) {
  const started = Date.now();
  let timer;
  try {
    const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('timed out after 15 s')), 15000); });
    const detail = await Promise.race([fn(), timeout]);
    passed++;
    console.log(JSON.stringify({ step: name, ok: true, ms: Date.now() - started, detail }));
  } catch (err) {
    failed++;
    console.log(JSON.stringify({ step: name, ok: false, ms: Date.now() - started, error: String(err?.stack ?? err) }));
  } finally {
    clearTimeout(timer);
  }
}

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// msg builds a SendMessageRequest with a text message; to continues a task ({taskId, contextId}).
function msg(text, { to = {}, returnImmediately = false, contextId } = {}) {
  const req = { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...to } };
  if (contextId) req.message.contextId = contextId;
  if (returnImmediately) req.configuration = { returnImmediately: true };
  return req;
}

// kind names a StreamResponse: "task(SUBMITTED)", "status(WORKING)", "artifact", "message".
function kind(ev) {
  if (ev.task) return `task(${ev.task.status.state.replace('TASK_STATE_', '')})`;
  if (ev.statusUpdate) return `status(${ev.statusUpdate.status.state.replace('TASK_STATE_', '')})`;
  if (ev.artifactUpdate) return 'artifact';
  if (ev.message) return 'message';
  return `unknown(${JSON.stringify(ev)})`;
}

const textOf = (m) => (m?.parts ?? []).map((p) => p.text ?? '').join('');

// expectError awaits fn() and returns the error's {code, reason}, checking them when given.
async function expectError(fn, code, reason) {
  let v;
  try {
    v = await fn();
  } catch (err) {
    check(err instanceof Error, `rejection is no Error: ${err}`);
    check(typeof err.message === 'string' && err.message !== '', 'error has no message');
    if (code !== undefined) check(err.code === code, `error code ${err.code} (${err.reason}: ${err.message}), want ${code}`);
    if (reason !== undefined) check(err.reason === reason, `error reason ${err.reason}, want ${reason}`);
    return { code: err.code, reason: err.reason };
  }
  throw new Error(`no error, got ${JSON.stringify(v)}`);
}

// openWs opens a WebSocket session. It records the frames each way; probe names the session
// for /test/stats; headers go on the upgrade request.
function openWs({ probe, headers } = {}) {
  const url = probe ? `${wsUrl}?probe=${probe}` : wsUrl;
  const ws = new WebSocket(url, { headers });
  const frames = []; // {dir: 'C->S' | 'S->C', frame}
  ws.on('message', (data) => frames.push({ dir: 'S->C', frame: Buffer.from(data).toString('utf8') }));
  const send = ws.send.bind(ws);
  ws.send = (data, ...rest) => {
    frames.push({ dir: 'C->S', frame: String(data) });
    return send(data, ...rest);
  };
  const closed = new Promise((resolve) => ws.on('close', (code) => resolve(code)));
  const session = new RpcSession(new WebSocketTransport(ws));
  const api = session.getRemoteMain();
  let disposed = false;
  const s = {
    api, session, ws, frames, closed,
    dispose() {
      if (!disposed) {
        disposed = true;
        api[Symbol.dispose]();
      }
    },
  };
  cleanups.push(async () => {
    s.dispose();
    await Promise.race([closed, sleep(1000)]);
    ws.terminate();
  });
  return s;
}

// wire prints recorded frames for the docs' "Wire examples" (the Go test logs them with -v).
function wire(name, frames) {
  for (const f of frames) console.log(JSON.stringify({ wire: name, dir: f.dir, frame: f.frame }));
}

async function stats(probe) {
  const res = await fetch(`${baseUrl}/test/stats?probe=${probe}`);
  check(res.ok, `/test/stats?probe=${probe}: HTTP ${res.status}`);
  return res.json();
}

// awaitStats polls the server's session stats until pred holds (releases travel
// asynchronously), and returns the last ones seen.
async function awaitStats(probe, pred) {
  let st;
  for (let i = 0; i < 100; i++) {
    st = await stats(probe);
    if (pred(st)) break;
    await sleep(20);
  }
  return st;
}

// The main connection: anonymous (no credentials on the upgrade), used by most steps.
const main = openWs({ probe: 'main' });
const api = main.api;
let alice;

await step('card', async () => {
  const card = await api.getAgentCard();
  check(card.name === 'a2awebcap', `card name ${card.name}`);
  const first = card.supportedInterfaces[0];
  check(first.protocolBinding === 'urn:a2awebcap:capnweb:v1', `first interface ${JSON.stringify(first)}`);
  check(first.url === httpUrl, `capnweb URL ${first.url}, want ${httpUrl}`);
  return { name: card.name, interfaces: card.supportedInterfaces.map((i) => i.protocolBinding) };
});

await step('authenticate', async () => {
  const wrong = await expectError(() => api.authenticate({ Authorization: 'Bearer wrong' }), -31401, 'UNAUTHENTICATED');
  alice = await api.authenticate(ALICE);
  const sent = await alice.sendMessage(msg('echo hi alice'));
  check(textOf(sent.message) === 'hi alice', `reply ${JSON.stringify(sent)}`);
  return { wrong };
});

await step('pipeline', async () => {
  // A fresh connection, so the frames are this exchange's alone.
  const s = openWs();
  let firstReceived = -1;
  s.ws.once('message', () => { firstReceived = s.frames.length - 1; });
  const session = s.api.authenticate(ALICE);
  const sent = session.sendMessage(msg('ask'));
  const task = await session.getTask({ id: sent.task.id });
  wire('pipeline', s.frames);
  check(task.status.state === S('INPUT_REQUIRED'), `state ${task.status.state}`);
  check(task.history.length >= 1 && textOf(task.history[0]) === 'ask', `history ${JSON.stringify(task.history)}`);
  // One round trip: the three calls and the pull of the last one all went out before the first
  // reply came back. (The client sends only releases afterwards.)
  const requests = s.frames.filter((f) => f.dir === 'C->S' && !f.frame.startsWith('["release"'));
  const sentBefore = s.frames.slice(0, firstReceived).filter((f) => f.dir === 'C->S').length;
  check(firstReceived > 0, 'no reply recorded');
  check(requests.length === 4, `${requests.length} request frames, want 4 (3 pushes, 1 pull)`);
  check(sentBefore === requests.length, `${requests.length} request frames, ${sentBefore} of them before the first reply`);
  sent[Symbol.dispose]();
  session[Symbol.dispose]();
  s.dispose();
  return { requestFrames: requests.length, beforeFirstReply: sentBefore };
});

let aliceTask; // a completed task of alice's
await step('send', async () => {
  const echo = await alice.sendMessage(msg('echo hello capnweb'));
  check(echo.message && !echo.task, `echo result ${JSON.stringify(echo)}`);
  check(echo.message.role === 'ROLE_AGENT' && textOf(echo.message) === 'hello capnweb', `echo reply ${JSON.stringify(echo.message)}`);
  const waited = await alice.sendMessage(msg('wait 1'));
  check(waited.task, `wait result ${JSON.stringify(waited)}`);
  check(waited.task.status.state === S('COMPLETED'), `state ${waited.task.status.state}`);
  check(textOf(waited.task.artifacts?.[0]).startsWith('Waited 1 second'), `artifacts ${JSON.stringify(waited.task.artifacts)}`);
  aliceTask = waited.task;
  return { message: textOf(echo.message), task: waited.task.status.state };
});

await step('get', async () => {
  const task = await alice.getTask({ id: aliceTask.id });
  check(task.id === aliceTask.id && task.status.state === S('COMPLETED'), `task ${JSON.stringify(task)}`);
  const one = await alice.getTask({ id: aliceTask.id, historyLength: 1 });
  check(one.history.length === 1, `historyLength 1 gave ${one.history.length}`);
  return { history: task.history.length };
});

await step('list', async () => {
  const contextId = randomUUID();
  const ids = [];
  for (let i = 0; i < 5; i++) ids.push((await alice.sendMessage(msg('ask', { contextId }))).task.id);
  const seen = [];
  const pages = [];
  let pageToken;
  do {
    const page = await alice.listTasks({ contextId, pageSize: 2, pageToken });
    check(page.totalSize === 5, `totalSize ${page.totalSize}`);
    check(page.pageSize === 2, `pageSize ${page.pageSize}`);
    pages.push(page.tasks.length);
    seen.push(...page.tasks.map((t) => t.id));
    pageToken = page.nextPageToken;
    check(pages.length <= 3, 'more than 3 pages');
  } while (pageToken);
  check(JSON.stringify(pages) === '[2,2,1]', `page sizes ${JSON.stringify(pages)}`);
  check(JSON.stringify([...seen].sort()) === JSON.stringify([...ids].sort()), `listed ${seen}, want ${ids}`);
  const input = await alice.listTasks({ contextId, status: S('INPUT_REQUIRED') });
  check(input.tasks.length === 5, `by status: ${input.tasks.length}`);
  return { pages };
});

await step('cancel', async () => {
  const sent = await alice.sendMessage(msg('wait 60', { returnImmediately: true }));
  check(!['COMPLETED', 'CANCELED'].includes(sent.task.status.state), `state ${sent.task.status.state}`);
  const canceled = await alice.cancelTask({ id: sent.task.id });
  check(canceled.status.state === S('CANCELED'), `state after cancel ${canceled.status.state}`);
  const again = await expectError(() => alice.cancelTask({ id: sent.task.id }), -32002, 'TASK_NOT_CANCELABLE');
  return { state: canceled.status.state, again };
});

await step('task-handle', async () => {
  const sent = await alice.sendMessage(msg('wait 60', { returnImmediately: true }));
  const h = alice.task(sent.task.id);
  check(await h.id === sent.task.id, 'handle id');
  const got = await h.get();
  check(got.id === sent.task.id && ['SUBMITTED', 'WORKING'].map(S).includes(got.status.state), `get ${JSON.stringify(got.status)}`);
  const canceled = await h.cancel();
  check(canceled.status.state === S('CANCELED'), `cancel ${canceled.status.state}`);
  h[Symbol.dispose]();
  // Pipelined: send, then cancel through a handle on the not yet known task, in one round trip.
  const sent2 = alice.sendMessage(msg('wait 60', { returnImmediately: true }));
  const canceled2 = await alice.task(sent2.task.id).cancel();
  check(canceled2.status.state === S('CANCELED'), `pipelined cancel ${canceled2.status.state}`);
  sent2[Symbol.dispose]();
  return { id: got.id };
});

await step('stream-observer', async () => {
  const s = openWs();
  const events = [];
  const final = await s.api.sendStreamingMessage(msg('wait 2'), (ev) => { events.push(ev); });
  const kinds = events.map(kind);
  const want = ['task(SUBMITTED)', 'status(WORKING)', 'status(WORKING)', 'status(WORKING)', 'artifact', 'status(COMPLETED)'];
  check(JSON.stringify(kinds) === JSON.stringify(want), `events ${JSON.stringify(kinds)}`);
  const seqs = events.map((ev) => Object.values(ev)[0].metadata?.['a2awebcap.seq']);
  check(seqs.every((n, i) => typeof n === 'number' && (i === 0 || n > seqs[i - 1])), `sequence numbers ${seqs}`);
  check(final.task?.status.state === S('COMPLETED'), `final ${JSON.stringify(final)}`);
  check(textOf(final.task.artifacts[0]).startsWith('Waited 2 seconds'), 'final artifact');
  wire('stream-observer', s.frames);
  s.dispose();
  return { events: kinds, seqs };
});

await step('stream-readable', async () => {
  const res = await alice.sendStreamingMessage(msg('wait 1'));
  const kinds = [];
  let id;
  for await (const ev of res.stream) {
    kinds.push(kind(ev));
    id ??= ev.task?.id;
  }
  const want = ['task(SUBMITTED)', 'status(WORKING)', 'status(WORKING)', 'artifact', 'status(COMPLETED)'];
  check(JSON.stringify(kinds) === JSON.stringify(want), `events ${JSON.stringify(kinds)}`);
  check(await res.handle.id === id, 'the handle names the streamed task');
  const task = await res.handle.get();
  check(task.status.state === S('COMPLETED'), `handle.get ${task.status.state}`);
  res[Symbol.dispose]();
  // A stream of a single message.
  const echo = await alice.sendStreamingMessage(msg('echo streamed'));
  const evs = [];
  for await (const ev of echo.stream) evs.push(ev);
  check(evs.length === 1 && textOf(evs[0].message) === 'streamed', `echo stream ${JSON.stringify(evs)}`);
  echo[Symbol.dispose]();
  return { events: kinds };
});

await step('subscribe', async () => {
  const sent = await alice.sendMessage(msg('wait 3', { returnImmediately: true }));
  const events = [];
  const final = await alice.subscribeToTask({ id: sent.task.id }, (ev) => { events.push(kind(ev)); });
  check(events[0]?.startsWith('task('), `first event ${events[0]}`);
  check(events.at(-1) === 'status(COMPLETED)', `last event ${events.at(-1)}`);
  check(final.task?.status.state === S('COMPLETED'), `final ${JSON.stringify(final)}`);
  // Through a handle, as a ReadableStream.
  const sent2 = await alice.sendMessage(msg('wait 2', { returnImmediately: true }));
  const h = alice.task(sent2.task.id);
  const sub = await h.subscribe();
  const kinds = [];
  for await (const ev of sub.stream) kinds.push(kind(ev));
  check(kinds[0]?.startsWith('task(') && kinds.at(-1) === 'status(COMPLETED)', `handle events ${kinds}`);
  sub[Symbol.dispose]();
  h[Symbol.dispose]();
  const missing = await expectError(() => alice.subscribeToTask({ id: 'no-such-task' }, () => {}), -32001, 'TASK_NOT_FOUND');
  return { observer: events, readable: kinds, missing };
});

await step('input-required', async () => {
  const first = await alice.sendMessage(msg('ask'));
  const t = first.task;
  check(t.status.state === S('INPUT_REQUIRED'), `state ${t.status.state}`);
  check(textOf(t.status.message).startsWith('What should I call you?'), `question ${JSON.stringify(t.status.message)}`);
  const second = await alice.sendMessage(msg('Ada', { to: { taskId: t.id, contextId: t.contextId } }));
  check(second.task?.id === t.id, 'the follow-up continues the task');
  check(second.task.status.state === S('COMPLETED'), `state ${second.task.status.state}`);
  check(textOf(second.task.status.message) === 'Nice to meet you, Ada!', `answer ${JSON.stringify(second.task.status.message)}`);
  return { answer: textOf(second.task.status.message) };
});

await step('input-required-stream', async () => {
  // A2A's stream shape across an input-required task: a Task first, then only updates. A
  // subscriber on the interrupted task sees it resume; the streamed answer opens with the task
  // working again, so a reader that stops at an interrupted state reads on to the answer.
  const asked = await alice.sendMessage(msg('ask'));
  const t = asked.task;
  const subscribed = [];
  let first;
  const isSubscribed = new Promise((r) => { first = r; });
  const subscription = alice.subscribeToTask({ id: t.id }, (ev) => { subscribed.push(kind(ev)); first(); });
  await isSubscribed;
  const res = await alice.sendStreamingMessage(msg('Ada', { to: { taskId: t.id, contextId: t.contextId } }));
  const streamed = [];
  for await (const ev of res.stream) {
    streamed.push(kind(ev));
    const st = (ev.task ?? ev.statusUpdate)?.status?.state;
    if (['COMPLETED', 'FAILED', 'CANCELED', 'REJECTED', 'INPUT_REQUIRED', 'AUTH_REQUIRED'].map(S).includes(st)) break;
  }
  res[Symbol.dispose]();
  const final = await subscription;
  check(JSON.stringify(streamed) === JSON.stringify(['task(WORKING)', 'status(COMPLETED)']), `streamed answer ${JSON.stringify(streamed)}`);
  check(JSON.stringify(subscribed) === JSON.stringify(['task(INPUT_REQUIRED)', 'status(WORKING)', 'status(COMPLETED)']), `subscriber ${JSON.stringify(subscribed)}`);
  check(final.task?.status.state === S('COMPLETED'), `subscription result ${JSON.stringify(final)}`);
  return { streamed, subscribed };
});

await step('push-config', async () => {
  const taskId = aliceTask.id;
  const want = [-32003, 'PUSH_NOTIFICATION_NOT_SUPPORTED'];
  const errs = {
    create: await expectError(() => alice.createTaskPushNotificationConfig({ taskId, url: 'https://receiver.example/hook' }), ...want),
    get: await expectError(() => alice.getTaskPushNotificationConfig({ taskId, id: 'cfg' }), ...want),
    list: await expectError(() => alice.listTaskPushNotificationConfigs({ taskId }), ...want),
    delete: await expectError(() => alice.deleteTaskPushNotificationConfig({ taskId, id: 'cfg' }), ...want),
  };
  return errs;
});

await step('extended-card', async () => {
  const card = await alice.getExtendedAgentCard();
  check(card.name === 'a2awebcap (extended)', `extended card ${card.name}`);
  // The server's extended card lists no interfaces: the binding gives it the public card's.
  const capnweb = (card.supportedInterfaces ?? []).find((i) => i.protocolBinding === 'urn:a2awebcap:capnweb:v1');
  check(capnweb?.url === httpUrl, `extended card's capnweb interface ${JSON.stringify(card.supportedInterfaces)}`);
  const anon = await expectError(() => api.getExtendedAgentCard(), -31401, 'UNAUTHENTICATED');
  return { name: card.name, anonymous: anon };
});

await step('errors', async () => {
  const s = openWs();
  const notFound = await expectError(() => s.api.getTask({ id: 'no-such-task' }), -32001, 'TASK_NOT_FOUND');
  wire('error', s.frames);
  s.dispose();
  const invalid = await expectError(() => alice.sendMessage({}), -32602, 'INVALID_PARAMS');
  const version = await expectError(() => alice.getTask({ id: aliceTask.id }, { 'A2A-Version': '0.3' }), -32009, 'VERSION_NOT_SUPPORTED');
  // The card's input modes are text/plain: a data part (application/json, as it declares no
  // type) is refused, though the agent itself would skip it.
  const data = msg('echo hi');
  data.message.parts.push({ data: { a: 1 } });
  const contentType = await expectError(() => alice.sendMessage(data), -32005, 'CONTENT_TYPE_NOT_SUPPORTED');
  const streamed = await expectError(() => alice.sendStreamingMessage(data, () => {}), -32005, 'CONTENT_TYPE_NOT_SUPPORTED');
  return { notFound, invalid, version, contentType, streamed };
});

await step('scoping', async () => {
  const id = aliceTask.id;
  const bob = await api.authenticate(BOB);
  const byBob = await expectError(() => bob.getTask({ id }), -32001, 'TASK_NOT_FOUND');
  await expectError(() => bob.task(id).cancel(), -32001, 'TASK_NOT_FOUND');
  const bobs = await bob.listTasks({});
  check(!bobs.tasks.some((t) => t.id === id), "bob lists alice's task");
  const anon = await expectError(() => api.getTask({ id }), -32001, 'TASK_NOT_FOUND');
  // Credentials on the upgrade request make the main object that principal's session.
  const asBob = openWs({ headers: BOB });
  await expectError(() => asBob.api.getTask({ id }), -32001, 'TASK_NOT_FOUND');
  const mine = await asBob.api.sendMessage(msg('ask'));
  check((await bob.getTask({ id: mine.task.id })).id === mine.task.id, 'bob sees the task he sent on his own connection');
  const asAlice = openWs({ headers: ALICE });
  check((await asAlice.api.getTask({ id })).id === id, 'alice sees her task on a connection with her token');
  asBob.dispose();
  asAlice.dispose();
  bob[Symbol.dispose]();
  return { bob: byBob, anonymous: anon };
});

await step('push-callback', async () => {
  const s = openWs();
  const session = s.api.authenticate(ALICE);
  const asked = await session.sendMessage(msg('ask'));
  const t = asked.task;
  const pushed = [];
  let resolveDone;
  const done = new Promise((r) => { resolveDone = r; });
  const sub = await session.subscribeToPushNotifications(t.id, (ev) => {
    pushed.push(kind(ev));
    if (ev.statusUpdate?.status.state === S('COMPLETED')) resolveDone();
  });
  // The callback follows the task across its input-required state to the end.
  await session.sendMessage(msg('Grace', { to: { taskId: t.id, contextId: t.contextId } }));
  await done;
  check(pushed[0] === 'task(INPUT_REQUIRED)', `first push ${pushed[0]}`);
  check(pushed.at(-1) === 'status(COMPLETED)', `last push ${pushed.at(-1)}`);
  wire('push-callback', s.frames);
  sub[Symbol.dispose]();
  const missing = await expectError(() => session.subscribeToPushNotifications('no-such-task', () => {}), -32001, 'TASK_NOT_FOUND');
  session[Symbol.dispose]();
  s.dispose();
  return { pushed, missing };
});

await step('disposal', async () => {
  // Every kind of capability, then everything disposed: the server's session must be back to
  // the two main objects (its own export 0 and its import 0 of ours), and so must ours.
  const probe = `disposal-${randomUUID()}`;
  const s = openWs({ probe });
  const idle = (st) => st.imports === 1 && st.exports === 1;
  await s.api.getAgentCard();
  const before = await awaitStats(probe, idle);
  check(idle(before), `server session before: ${JSON.stringify(before)}`);

  const session = s.api.authenticate(ALICE); // a promise, pipelined on
  const sent = session.sendMessage(msg('ask'));
  const got = await session.getTask({ id: sent.task.id });
  const handle = session.task(got.id);
  await handle.get();
  const observed = await session.sendStreamingMessage(msg('wait 1'), () => {});
  const readable = await session.sendStreamingMessage(msg('wait 1'));
  for await (const _ of readable.stream) { /* drain */ }
  await readable.handle.get();
  // A stream canceled midway, its task canceled through the stream's handle.
  const long = await session.sendStreamingMessage(msg('wait 60'));
  const reader = long.stream.getReader();
  await reader.read();
  await reader.cancel();
  await long.handle.cancel();
  // A push subscription that ends with its task, and one canceled before.
  let ended;
  const endedP = new Promise((r) => { ended = r; });
  const sub1 = await session.subscribeToPushNotifications(got.id, (ev) => {
    if (ev.statusUpdate?.status.state === S('COMPLETED')) ended();
  });
  await session.sendMessage(msg('Lin', { to: { taskId: got.id, contextId: got.contextId } }));
  await endedP;
  const waiting = await session.sendMessage(msg('wait 60', { returnImmediately: true }));
  const sub2 = await session.subscribeToPushNotifications(waiting.task.id, () => {});
  await sub2.cancel();
  await session.cancelTask({ id: waiting.task.id });
  await expectError(() => session.getTask({ id: 'no-such-task' }), -32001);

  const during = await stats(probe);
  for (const d of [sent, session, handle, observed, readable, long, sub1, sub2]) d[Symbol.dispose]();
  const after = await awaitStats(probe, idle);
  check(idle(after), `server session after disposing everything: ${JSON.stringify(after)} (while in use: ${JSON.stringify(during)})`);
  const client = s.session.getStats();
  check(client.imports === 1 && client.exports === 1, `client session after disposing everything: ${JSON.stringify(client)}`);

  // Disposing the main stub ends the session on both sides.
  s.dispose();
  const code = await Promise.race([s.closed, sleep(3000).then(() => 'still open')]);
  const closed = await awaitStats(probe, (st) => st.done);
  check(closed.done, `server session not done after the client disposed its main stub (close ${code})`);
  return { during, after, client, close: code };
});

// ---- HTTP batch: each batch is one POST, pipelining included ----

// Count the batch POSTs; with batchFrames set, record their bodies' lines too.
let fetches = 0;
let batchFrames;
const realFetch = globalThis.fetch;
globalThis.fetch = async (...args) => {
  if (!String(args[0]?.url ?? args[0]).startsWith(httpUrl)) return realFetch(...args);
  fetches++;
  const res = await realFetch(...args);
  if (batchFrames) {
    for (const line of String(args[1]?.body ?? '').split('\n')) batchFrames.push({ dir: 'C->S', frame: line });
    for (const line of (await res.clone().text()).split('\n')) batchFrames.push({ dir: 'S->C', frame: line });
  }
  return res;
};

await step('batch', async () => {
  fetches = 0;
  const b = newHttpBatchRpcSession(httpUrl);
  const card = b.getAgentCard();
  const session = b.authenticate(ALICE);
  const sent = session.sendMessage(msg('ask'));
  const got = session.getTask({ id: sent.task.id });
  const viaHandle = session.task(sent.task.id).get();
  const listed = session.listTasks({ pageSize: 1 });
  const extended = session.getExtendedAgentCard();
  const echo = session.sendMessage(msg('echo batched'));
  const missing = b.getTask({ id: 'no-such-task' });
  const push = session.createTaskPushNotificationConfig({ taskId: sent.task.id, url: 'https://receiver.example/hook' });
  // Everything is awaited before the batch goes out: a promise first awaited later is not in it.
  const settled = await Promise.allSettled([card, got, viaHandle, listed, extended, echo, missing, push]);
  const [c, g, h, l, x, e] = settled.slice(0, 6).map((r) => {
    if (r.status === 'rejected') throw r.reason;
    return r.value;
  });
  const errs = settled.slice(6);
  check(c.name === 'a2awebcap', `card ${c.name}`);
  check(g.status.state === S('INPUT_REQUIRED'), `getTask ${g.status.state}`);
  check(h.id === g.id, 'task handle');
  check(l.tasks.length === 1 && l.nextPageToken, `listTasks ${JSON.stringify(l)}`);
  check(x.name === 'a2awebcap (extended)', `extended card ${x.name}`);
  check(textOf(e.message) === 'batched', `echo ${JSON.stringify(e)}`);
  check(errs[0].status === 'rejected' && errs[0].reason.reason === 'TASK_NOT_FOUND' && errs[0].reason.code === -32001, `getTask unknown: ${errs[0].reason?.reason}`);
  check(errs[1].status === 'rejected' && errs[1].reason.code === -32003, `push config: ${errs[1].reason?.reason}`);
  check(fetches === 1, `${fetches} HTTP requests, want 1`);
  return { requests: fetches };
});

await step('batch-cancel', async () => {
  fetches = 0;
  batchFrames = [];
  const b = newHttpBatchRpcSession(httpUrl);
  const session = b.authenticate(ALICE);
  const sent = session.sendMessage(msg('wait 60', { returnImmediately: true }));
  const canceled = await session.cancelTask({ id: sent.task.id });
  wire('batch-cancel', batchFrames);
  batchFrames = undefined;
  check(canceled.status.state === S('CANCELED'), `state ${canceled.status.state}`);
  check(fetches === 1, `${fetches} HTTP requests, want 1`);
  // The canceled task is alice's: a new batch with her credentials reads it back.
  const again = await newHttpBatchRpcSession(httpUrl).authenticate(ALICE).getTask({ id: canceled.id });
  check(again.status.state === S('CANCELED'), `read back ${again.status.state}`);
  check(fetches === 2, `${fetches} HTTP requests, want 2`);
  return { requests: fetches };
});

await step('version-refused', async () => {
  // A version the connection declares that the server does not speak: the stock client still
  // connects (a refused WebSocket or batch would show only "WebSocket connection failed" or
  // "RPC request failed: 400"), and every A2A call fails with the A2A error and its details.
  const supported = (err) => (err.details ?? []).find((d) => d.reason === 'VERSION_NOT_SUPPORTED')?.metadata?.supportedVersions;
  const ws = newWebSocketRpcSession(`${wsUrl}?A2A-Version=9.9`);
  cleanups.push(() => ws[Symbol.dispose]());
  const card = await ws.getAgentCard();
  check(card.name === 'a2awebcap', `getAgentCard ${card.name}`);
  let wsErr;
  const overWs = await expectError(() => ws.getTask({ id: 'x' }).catch((e) => { wsErr = e; throw e; }), -32009, 'VERSION_NOT_SUPPORTED');
  check(supported(wsErr) === '1.0', `details ${JSON.stringify(wsErr.details)}`);
  // A call may declare what it speaks itself.
  const declared = await expectError(() => ws.getTask({ id: 'x' }, { 'A2A-Version': '1.0' }), -32001, 'TASK_NOT_FOUND');
  let batchErr;
  const overBatch = await expectError(() => newHttpBatchRpcSession(`${httpUrl}?A2A-Version=9.9`).getTask({ id: 'x' }).catch((e) => { batchErr = e; throw e; }), -32009, 'VERSION_NOT_SUPPORTED');
  check(supported(batchErr) === '1.0', `batch details ${JSON.stringify(batchErr.details)}`);
  return { overWs, declared, overBatch };
});

await step('last-event-id-query', async () => {
  // Last-Event-ID in the URL (a browser cannot set WebSocket headers) resumes subscriptions.
  const done = await alice.sendMessage(msg('wait 1'));
  const id = done.task.id;
  const seqOf = (ev) => Object.values(ev)[0].metadata?.['a2awebcap.seq'];
  const ws = newWebSocketRpcSession(`${wsUrl}?Last-Event-ID=2`);
  cleanups.push(() => ws[Symbol.dispose]());
  const events = [];
  await ws.authenticate(ALICE).subscribeToTask({ id }, (ev) => { events.push(ev); });
  check(events.length > 0 && seqOf(events[0]) === 3 && !events[0].task, `resumed over a WebSocket: ${JSON.stringify(events.map(kind))} from seq ${seqOf(events[0])}`);
  check(kind(events.at(-1)) === 'status(COMPLETED)', `last ${kind(events.at(-1))}`);
  const batch = await newHttpBatchRpcSession(`${httpUrl}?Last-Event-ID=2`).authenticate(ALICE).subscribeToTask({ id });
  check(batch.done === true && seqOf(batch.events[0]) === 3 && batch.events.length === events.length, `resumed over batch: ${JSON.stringify(batch.events.map(kind))}`);
  return { websocket: events.map(kind), batch: batch.events.map(kind) };
});

await step('batch-push', async () => {
  // A batch is answered before a task's events come: a push callback cannot be called back.
  const sent = await alice.sendMessage(msg('wait 60', { returnImmediately: true }));
  const refused = await expectError(() => newHttpBatchRpcSession(httpUrl).authenticate(ALICE).subscribeToPushNotifications(sent.task.id, () => {}), -32004, 'UNSUPPORTED_OPERATION');
  await alice.cancelTask({ id: sent.task.id });
  return { refused };
});

await step('per-call-credentials', async () => {
  // A call runs as its session's principal: credentials among its parameters are refused, not
  // ignored.
  const refused = await expectError(() => alice.listTasks({}, { Authorization: 'Bearer bob-token' }), -32602, 'INVALID_PARAMS');
  const bobs = await api.authenticate(BOB).listTasks({});
  return { refused, bobTasks: bobs.tasks.length };
});

alice?.[Symbol.dispose]();
for (const c of cleanups) await c();
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
