// The example of docs/web.md ("TypeScript types"), type-checked by TestTypeScriptClient (not run).

import { newWebSocketRpcSession, type RpcPromise } from "capnweb";
import type { A2AError, A2AService, MessageInput, StreamResponse, Task } from "a2awebcap";

export async function example(key: string): Promise<void> {
  const agent = newWebSocketRpcSession<A2AService>("wss://agent.example/a2a/capnweb");
  const session = agent.authenticate({ "X-API-Key": key });
  const say = (text: string): MessageInput => ({ messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }] });

  // With an observer: the final SendMessageResponse. Without: {stream, handle}.
  const final = await session.sendStreamingMessage({ message: say("hello") }, (event: StreamResponse) => console.log(event));
  if ("task" in final) console.log(final.task.status.state);
  const streamed = await session.sendStreamingMessage({ message: say("hello again") });
  if ("stream" in streamed) for await (const event of streamed.stream) console.log(event);

  // Pipelining into a result that is a task or a message: say which it will be.
  const sent = session.sendMessage({ message: say("hi") }) as unknown as RpcPromise<{ task: Task }>;
  const task = await session.getTask({ id: sent.task.id }); // one round trip
  console.log(task.status.state);

  try {
    await session.task("nope").cancel();
  } catch (e) {
    console.log((e as A2AError).reason); // "TASK_NOT_FOUND"
  }
}
