// A2A interop with several agents on one server: the official JavaScript SDK (npm
// @a2a-js/sdk@1.3.0) calls each agent by its own URL (a2awebcap serve -agents).
//
//   node a2a_agents.mjs <JSONRPC|HTTP+JSON> <agent URL> <message> <reply> [<agent URL> <message> <reply>]...
//
// For each agent: the client is made from the agent's URL (its card at
// URL/.well-known/agent-card.json), the card must name the agent (the URL's last segment), the
// message must complete with the reply as the task's status message, streaming must end
// completed, and the task must not be found through the next agent's client.
// Prints one JSON line per step, then "N passed, N failed"; exits 1 on failure.

import { randomUUID } from 'node:crypto';
import { ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';
import { Role, TaskState } from '@a2a-js/sdk';
import { TaskNotFoundError } from '@a2a-js/sdk/errors';

const [binding, ...rest] = process.argv.slice(2);
if (!['JSONRPC', 'HTTP+JSON'].includes(binding) || rest.length < 3 || rest.length % 3 !== 0) {
  console.error('usage: node a2a_agents.mjs <JSONRPC|HTTP+JSON> (<agent URL> <message> <reply>)...');
  process.exit(2);
}
const agents = [];
for (let i = 0; i < rest.length; i += 3) agents.push({ url: rest[i], text: rest[i + 1], reply: rest[i + 2] });

let passed = 0;
let failed = 0;
async function step(name, fn) {
  try {
    const detail = await fn();
    passed++;
    console.log(JSON.stringify({ binding, step: name, ok: true, detail }));
  } catch (err) {
    failed++;
    console.log(JSON.stringify({ binding, step: name, ok: false, error: String(err?.stack ?? err) }));
  }
}
function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}
function request(text) {
  return {
    tenant: '',
    message: {
      messageId: randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
      metadata: undefined, extensions: [], referenceTaskIds: [],
    },
    configuration: undefined,
    metadata: undefined,
  };
}
const stateName = (s) => TaskState[s] ?? String(s);
const statusText = (task) => (task.status?.message?.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');

const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { preferredTransports: [binding] }));
for (const a of agents) {
  const name = a.url.split('/').filter(Boolean).at(-1);
  await step(`card ${name}`, async () => {
    a.client = await factory.createFromUrl(a.url);
    const card = await a.client.getAgentCard();
    check(card.name === name, `card name ${card.name}, want ${name}`);
    check(a.client.transport.protocolName === binding, `transport ${a.client.transport.protocolName}`);
    return { name: card.name, transport: a.client.transport.protocolName };
  });
  await step(`send ${name}`, async () => {
    const res = await a.client.sendMessage(request(a.text));
    check(res.status?.state === TaskState.TASK_STATE_COMPLETED, `state ${stateName(res.status?.state)}`);
    check(statusText(res) === a.reply, `reply ${JSON.stringify(statusText(res))}, want ${JSON.stringify(a.reply)}`);
    a.task = res.id;
    return { id: res.id, reply: statusText(res) };
  });
  await step(`stream ${name}`, async () => {
    let last;
    for await (const ev of a.client.sendMessageStream(request(a.text))) last = ev;
    check(last?.payload?.$case === 'statusUpdate', `last event ${JSON.stringify(last)}`);
    check(last.payload.value.status.state === TaskState.TASK_STATE_COMPLETED, `last state ${stateName(last.payload.value.status.state)}`);
    return 'completed';
  });
}
for (let i = 0; i < agents.length; i++) {
  const a = agents[i];
  const other = agents[(i + 1) % agents.length];
  if (other === a) break;
  await step(`isolation ${a.url.split('/').filter(Boolean).at(-1)}`, async () => {
    const got = await a.client.getTask({ tenant: '', id: a.task });
    check(got.id === a.task, 'own task');
    try {
      await other.client.getTask({ tenant: '', id: a.task });
    } catch (err) {
      if (err instanceof TaskNotFoundError) return 'not found through the other agent';
      throw err;
    }
    throw new Error('the other agent found the task');
  });
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
