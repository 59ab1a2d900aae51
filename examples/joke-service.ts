/**
 * The seed's joke service, written with the package's toolkit. Against a running broker:
 *
 *   PULSAR_WS_URL=ws://127.0.0.1:8080 npx tsx examples/joke-service.ts
 *
 * It listens on non-persistent://tg/request/joke (subscription "joke-service-request", Shared)
 * and answers on non-persistent://tg/response/joke, so the seed's joke-service descriptor and
 * tell-joke tool (examples/descriptors/) reach it through POST /tools/tell-joke/invoke.
 */
import { runToolService } from '../src/toolkit/tool-service.js';

const JOKES: Record<string, string> = {
  programming: 'Why do programmers prefer dark mode? Because light attracts bugs!',
  animals: 'What do you call a sleeping dinosaur? A dino-snore.',
  food: 'I used to be a banker, but I lost interest in bread.',
};

const url = process.env['PULSAR_WS_URL'] ?? 'ws://127.0.0.1:8080';
const service = runToolService({
  url,
  id: 'joke-service',
  topic: 'joke',
  handler: (user, config, args) => {
    const style = typeof config['style'] === 'string' ? config['style'] : 'pun';
    const topic = typeof args['topic'] === 'string' ? args['topic'] : '';
    const joke = JOKES[topic.toLowerCase()] ?? "I'd tell you a UDP joke, but you might not get it.";
    return `Hey ${user || 'there'}! Here's a ${style} for you:\n\n${joke}`;
  },
  onError: (err) => console.error('joke-service:', err),
});

service.ready.then(
  () => console.log(`joke-service listening on non-persistent://tg/request/joke via ${url}`),
  (err: unknown) => {
    console.error(`joke-service cannot start: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void service.close().then(() => process.exit(0));
  });
}
