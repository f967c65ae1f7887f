// Subscribes, with @a2a-js/sdk's REST transport, to a task that does not
// exist, and prints one JSON line: what the client made of the answer.
//
//   node a2a_stream_error.mjs <HTTP+JSON base URL>
//
// {"error": "<error class>"} when the client raised an error,
// {"events": [...]} when the stream ended without one.

import { RestTransportFactory } from '@a2a-js/sdk/client';

const [url] = process.argv.slice(2);
const transport = await new RestTransportFactory().create(url, {});
try {
  const events = [];
  for await (const ev of transport.resubscribeTask({ tenant: '', id: 'no-such-task' })) events.push(ev);
  console.log(JSON.stringify({ events }));
} catch (err) {
  console.log(JSON.stringify({ error: err.constructor.name }));
}
