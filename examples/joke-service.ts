/**
 * The seed's joke service, written with the package's toolkit. Against a running broker:
 *
 *   PULSAR_WS_URL=ws://127.0.0.1:8080 npx tsx examples/joke-service.ts
 *
 * It listens on non-persistent://tg/request/joke (subscription "joke-service-request", Shared)
 * and answers on non-persistent://tg/response/joke, so the seed's joke-service descriptor and
 * tell-joke tool (examples/descriptors/) reach it through POST /tools/tell-joke/invoke.
 *
 * It logs its state as JSON lines on stderr (pipe them through pino-pretty to read them) and
 * reconnects by itself when the broker goes away. With MAX_RETRIES=n it gives up after n failed
 * attempts in a row and the process ends with status 1, for a supervisor to restart it.
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
  ...(process.env['MAX_RETRIES'] !== undefined && { maxRetries: Number(process.env['MAX_RETRIES']) }),
});

// Closed, the service holds nothing open: the process ends with status 0.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void service.close());
