// One chat turn through the Vercel AI SDK with its mock model and a tool, telemetry on, spans
// exported over OTLP/HTTP (JSON) to the server named by OTEL_EXPORTER_OTLP_ENDPOINT, with the
// key in OTEL_EXPORTER_OTLP_HEADERS. Driven by tests/activity/test_otlp_ai_sdk.py.
import { generateText, streamText, tool, stepCountIs } from 'ai';
import { MockLanguageModelV3, simulateReadableStream } from 'ai/test';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { z } from 'zod';

const usage = (input, output) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});

// First call: the model asks for the tool; second call: it answers with text.
const model = new MockLanguageModelV3({
  provider: 'mock-provider',
  modelId: 'mock-model-1',
  doStream: [
    {
      stream: simulateReadableStream({
        chunks: [
          { type: 'tool-call', toolCallId: 'call-1', toolName: 'lookupOrder', input: '{"order":1042}' },
          { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(50, 10) },
        ],
      }),
    },
    {
      stream: simulateReadableStream({
        chunks: [
          { type: 'text-start', id: 't1' },
          { type: 'text-delta', id: 't1', delta: 'Order 1042 ' },
          { type: 'text-delta', id: 't1', delta: 'has shipped.' },
          { type: 'text-end', id: 't1' },
          { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: usage(80, 7) },
        ],
      }),
    },
  ],
});

// Optional JSON of resource attributes (deployment.environment.name, service.version, ...) and
// of extra telemetry metadata (tier, tags, ...).
const resource = JSON.parse(process.env.RESOURCE_ATTRIBUTES || '{}');
const extraMetadata = JSON.parse(process.env.EXTRA_METADATA || '{}');

const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'ai-sdk-test', ...resource }),
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
});
provider.register();

const telemetry = {
  isEnabled: true,
  functionId: 'support-chat',
  metadata: { conversationId: process.env.CONVERSATION_ID, userId: 'customer-7', ...extraMetadata },
};
let text;
if (process.env.AI_CALL === 'generateText') {
  // generateText sends the SDK's user agent (`ai/<version>`) in its telemetry attributes.
  const generated = await generateText({
    model: new MockLanguageModelV3({
      provider: 'mock-provider',
      modelId: 'mock-model-1',
      doGenerate: {
        content: [{ type: 'text', text: 'Order 1042 has shipped.' }],
        finishReason: { unified: 'stop', raw: 'stop' },
        usage: usage(80, 7),
        warnings: [],
      },
    }),
    prompt: 'Where is order 1042?',
    experimental_telemetry: telemetry,
  });
  text = generated.text;
} else {
  const result = streamText({
    model,
    prompt: 'Where is order 1042?',
    tools: {
      lookupOrder: tool({
        description: 'Look an order up',
        inputSchema: z.object({ order: z.number() }),
        execute: async ({ order }) => ({ order, state: 'shipped' }),
      }),
    },
    stopWhen: stepCountIs(3),
    experimental_telemetry: telemetry,
  });
  text = await result.text;
}
await provider.forceFlush();
await provider.shutdown();
console.log(JSON.stringify({ text }));
