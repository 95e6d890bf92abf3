// Drives the AI SDK's default OpenAI provider (Responses API) and the
// OpenAI Agents SDK's default model against the gateway at
// process.env.GATEWAY_URL, and prints one JSON line of what each saw.
// Run by TestNodeSDKs (sdks_test.go).
import OpenAI from 'openai';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, streamText } from 'ai';
import { Agent, run, setDefaultOpenAIClient, setTracingDisabled } from '@openai/agents';

const baseURL = process.env.GATEWAY_URL + '/v1';
const out = {};

const llmgw = createOpenAI({ baseURL, apiKey: 'sk-llmgw-agent-test' });
const g = await generateText({ model: llmgw('sdk-chat'), prompt: 'Say it. ZQX-PLAIN' });
out.aiGenerate = { text: g.text, finish: g.finishReason, input: g.usage.inputTokens };
const s = streamText({ model: llmgw('sdk-chat'), prompt: 'Say it. ZQX-PLAIN' });
out.aiStream = { text: '' };
for await (const d of s.textStream) out.aiStream.text += d;
out.aiStream.finish = await s.finishReason;
const c = streamText({ model: llmgw('sdk-chat'), prompt: 'Tell a story. ZQX-CUT', onError: ({ error }) => { out.aiCut.error = String(error); } });
out.aiCut = { text: '' };
for await (const d of c.textStream) out.aiCut.text += d;
out.aiCut.finish = await c.finishReason;

setDefaultOpenAIClient(new OpenAI({ baseURL, apiKey: 'sk-llmgw-agent-test', maxRetries: 0 }));
setTracingDisabled(true);
const agent = new Agent({ name: 'assistant', model: 'sdk-chat', instructions: 'Be brief.' });
out.agentsRun = { final: (await run(agent, 'Say it. ZQX-PLAIN')).finalOutput };
const rs = await run(agent, 'Say it. ZQX-PLAIN', { stream: true });
let t = '';
for await (const d of rs.toTextStream()) t += d;
await rs.completed;
out.agentsStream = { text: t };
out.agentsCut = { text: '', error: '' };
try {
  const cut = await run(agent, 'Tell a story. ZQX-CUT', { stream: true });
  for await (const d of cut.toTextStream()) out.agentsCut.text += d;
  await cut.completed;
  if (cut.error) out.agentsCut.error = String(cut.error);
} catch (e) {
  out.agentsCut.error = String(e);
}
console.log(JSON.stringify(out));
