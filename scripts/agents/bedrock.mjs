// Drives the AWS SDK for JavaScript v3's Bedrock Runtime client against the
// gateway at process.env.GATEWAY_URL with the team key as a Bedrock API key
// (AWS_BEARER_TOKEN_BEDROCK), and prints one JSON line of what it saw.
// Run by TestJSBedrockRuntime (bedrock_test.go).
import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand } from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';

// The client's default handler speaks HTTP/2, which a plain-http local
// gateway does not (over TLS it is negotiated): HTTP/1.1 here.
const client = new BedrockRuntimeClient({ region: 'us-east-1', endpoint: process.env.GATEWAY_URL, maxAttempts: 1,
  requestHandler: new NodeHttpHandler() });
const modelId = process.env.MODEL_ID;
const messages = (text) => [{ role: 'user', content: [{ text }] }];
const out = {};

const c = await client.send(new ConverseCommand({ modelId, messages: messages('Say it. ZQX-PLAIN'), inferenceConfig: { maxTokens: 64 } }));
out.converse = { text: c.output.message.content[0].text, stopReason: c.stopReason, outputTokens: c.usage.outputTokens };

const s = await client.send(new ConverseStreamCommand({ modelId, messages: messages('Say it. ZQX-PLAIN') }));
out.converseStream = { events: [], text: '' };
for await (const ev of s.stream) {
  const name = Object.keys(ev)[0];
  out.converseStream.events.push(name);
  if (name === 'contentBlockDelta') out.converseStream.text += ev.contentBlockDelta.delta.text;
}

out.cut = { text: '', error: '' };
try {
  const cut = await client.send(new ConverseStreamCommand({ modelId, messages: messages('Tell a story. ZQX-CUT') }));
  for await (const ev of cut.stream) {
    if (ev.contentBlockDelta) out.cut.text += ev.contentBlockDelta.delta.text;
    if (ev.messageStop) out.cut.stop = ev.messageStop.stopReason;
  }
} catch (e) {
  out.cut.error = `${e.name}: ${e.message}`;
}

try {
  await client.send(new ConverseCommand({ modelId: 'no-such-route', messages: messages('hi') }));
} catch (e) {
  out.notFound = e.name;
}
console.log(JSON.stringify(out));
// The cut stream's response is abandoned when the SDK raises its exception,
// so its socket may still be open: close the client's sockets, or the
// process waits for the server to drop the idle connection.
client.destroy();
